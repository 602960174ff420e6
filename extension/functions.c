/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable inference functions, one row per call: infer.ocr,
 *	  infer.detect_text, infer.predict, infer.classify (of an image, and
 *	  of a text) and infer.embed;
 *	  infer.similarity (cosine of two real[]); and the
 *	  request/reply code they share with InferBatch (inferbatch.c), which
 *	  sends the same fragments over many rows at once.
 *
 * A fragment (InferFragment) is set up once from the registry
 * (InferFragmentInit), sent to a worker with any number of rows
 * (InferFragmentSend), and its reply is checked and mapped back to the
 * rows (InferFragmentCollect); each row's answer becomes a datum
 * (InferRowDatum) or, when the worker rejected it, an ERROR or a WARNING
 * (InferRowReportError).  A per-row call keeps everything it allocates in
 * a memory context of its own, deleted when it returns; only the result
 * datum is built in the caller's context.  (An error frees the call's
 * context with the executor's memory.)
 *
 * Text for infer.embed and infer.classify(model, text) goes to the worker
 * in UTF-8 (InferTextPayload converts it from the database encoding).  A
 * text the worker truncated to the model's max_seq_length gives a NOTICE,
 * once per statement (note_truncated); with infer.text_truncate off the
 * worker refuses it instead (54000).  A text over infer.max_text_bytes is
 * refused before it is detoasted, converted or sent
 * (InferTextWithinLimit).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include <math.h>

#include "access/detoast.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(infer_ocr);
PG_FUNCTION_INFO_V1(infer_detect_text);
PG_FUNCTION_INFO_V1(infer_predict);
PG_FUNCTION_INFO_V1(infer_classify);
PG_FUNCTION_INFO_V1(infer_embed);
PG_FUNCTION_INFO_V1(infer_classify_text);
PG_FUNCTION_INFO_V1(infer_similarity);

/* The row id of the single row a per-row call sends. */
#define INFER_ROW_ID 1

/* SQL name of an ML function. */
const char *
InferFunctionName(InferFunction fn)
{
	switch (fn)
	{
		case INFER_FN_OCR:
			return "infer.ocr";
		case INFER_FN_DETECT_TEXT:
			return "infer.detect_text";
		case INFER_FN_PREDICT:
			return "infer.predict";
		case INFER_FN_CLASSIFY:
		case INFER_FN_CLASSIFY_TEXT:
			return "infer.classify";
		case INFER_FN_EMBED:
			return "infer.embed";
		case INFER_FN_NONE:
			break;
	}
	return "?";
}

/*
 * Returns "infer.ocr: models \"a\", \"b\"" for frag, in the current
 * memory context (models with an empty file are left out); a chained
 * fragment adds " over " and the stage before it.
 */
char *
InferFragmentDescribe(const InferFragment *frag)
{
	StringInfoData buf;
	StringInfoData names;
	int			n = 0;

	initStringInfo(&names);
	for (int i = 0; i < frag->nmodels; i++)
	{
		if (frag->models[i]->file[0] == '\0')
			continue;
		appendStringInfo(&names, "%s\"%s\"", n++ > 0 ? ", " : "",
						 frag->models[i]->name);
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s: model%s %s", frag->funcname,
					 n > 1 ? "s" : "", names.data);
	if (frag->prev != NULL)
	{
		char	   *prev = InferFragmentDescribe(frag->prev);

		appendStringInfo(&buf, " over %s", prev);
		pfree(prev);
	}
	pfree(names.data);
	return buf.data;
}

/*
 * Error context callback: names the function, its models and the worker,
 * so an error from the worker or the connection says where it came from,
 * and, for a row's own error in a batch, which input row it is (the
 * scan's row number, from 1, as InferBatch's other messages count them).
 * While a request that carries other calls' fragments too is waited for
 * (frag->with), they are named after it: an error of the request as a
 * whole may be theirs.
 */
static void
fragment_error_context(void *arg)
{
	InferFragment *frag = (InferFragment *) arg;
	char	   *what = InferFragmentDescribe(frag);

	if (frag->nwith > 0)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfoString(&buf, what);
		for (int i = 0; i < frag->nwith; i++)
		{
			char	   *other = InferFragmentDescribe(frag->with[i]);

			appendStringInfo(&buf, i == 0 ? " (in one request with %s" : ", %s", other);
			pfree(other);
		}
		appendStringInfoChar(&buf, ')');
		pfree(what);
		what = buf.data;
	}

	if (frag->worker != NULL && frag->row > 0)
		errcontext("%s on inference worker \"%s\" at %s, input row " INT64_FORMAT,
				   what, frag->worker->name, frag->worker->endpoint, frag->row);
	else if (frag->worker != NULL)
		errcontext("%s on inference worker \"%s\" at %s", what,
				   frag->worker->name, frag->worker->endpoint);
	else
		errcontext("%s", what);
	pfree(what);
}

/* Pushes frag's error context (see fragment_error_context). */
void
InferFragmentPushContext(InferFragment *frag)
{
	frag->errcallback.callback = fragment_error_context;
	frag->errcallback.arg = frag;
	frag->errcallback.previous = error_context_stack;
	error_context_stack = &frag->errcallback;
}

/* Pops frag's error context; it must be the innermost one. */
void
InferFragmentPopContext(InferFragment *frag)
{
	Assert(error_context_stack == &frag->errcallback);
	error_context_stack = frag->errcallback.previous;
}

/*
 * Refuses, for infer.predict, a model whose task needs a pipeline or an
 * input that is not one image tensor (detect_text, recognize_text,
 * embed_text): 42809 with a hint naming the function to use instead.
 */
static void
check_predict_task(const InferFragment *frag, const Pginfer__ModelSpec *model)
{
	static const char *const image_tasks[] = {"classify", "raw", "embed_image"};

	for (size_t i = 0; i < lengthof(image_tasks); i++)
		if (strcmp(model->task, image_tasks[i]) == 0)
			return;
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("model \"%s\" has task \"%s\", but %s needs an image model (task classify, raw or embed_image)",
					model->name, model->task, frag->funcname),
			 strcmp(model->task, "embed_text") == 0 ?
			 errhint("A text model takes text: use infer.embed(model, text).") :
			 strcmp(model->task, "classify_text") == 0 ?
			 errhint("A text model takes text: use infer.classify(model, text).") :
			 errhint("Use infer.ocr() or infer.detect_text() for the OCR models, or register the model with task raw.")));
}

/*
 * Refuses a model whose registered task is not `task`, for the function's
 * stage `role` ("detector", ...); guc, when not NULL, names the setting
 * the model came from (the detail says so).  ERROR 42809
 * (wrong_object_type).
 */
static void
check_task(const InferFragment *frag, const Pginfer__ModelSpec *model,
		   const char *task, const char *role, const char *guc)
{
	if (strcmp(model->task, task) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", but %s needs a %s with task \"%s\"",
						model->name, model->task, frag->funcname, role, task),
				 guc ? errdetail("Setting %s names it.", guc) : 0,
				 errhint("Choose a model whose task is %s; see infer.models.",
						 task)));
}

/*
 * Sets frag up for a one-model fragment of kind: reads model `name` from
 * the registry (guc, when not NULL, names the setting it came from, for
 * the 42704 detail) into the current memory context; returns it.
 */
static const Pginfer__ModelSpec *
init_one_model(InferFragment *frag, Pginfer__FragmentKind kind,
			   const char *name, const char *guc)
{
	const char *names[1] = {name};
	const char *gucs[1] = {guc};

	frag->kind = kind;
	frag->models = InferCatalogGetModels(names, gucs, 1);
	frag->nmodels = 1;
	return frag->models[0];
}

/*
 * Sets up frag for fn: reads its models from the registry (model names the
 * model of infer.predict and infer.classify; infer.ocr and
 * infer.detect_text take theirs from the infer.ocr_* settings) into the
 * current memory context and checks their tasks.  For OCR, an empty
 * infer.ocr_classifier skips direction classification: the fragment then
 * carries a model with an empty file in stage 1.  Errors: 42704 (unknown
 * model), 42809 (wrong task).
 */
void
InferFragmentInit(InferFragment *frag, InferFunction fn, const char *model)
{
	memset(frag, 0, sizeof(*frag));
	frag->fn = fn;
	frag->funcname = InferFunctionName(fn);

	switch (fn)
	{
		case INFER_FN_OCR:
			{
				bool		use_cls = infer_ocr_classifier != NULL &&
					infer_ocr_classifier[0] != '\0';
				const char *names[3] = {infer_ocr_detector,
				infer_ocr_classifier, infer_ocr_recognizer};
				const char *gucs[3] = {"infer.ocr_detector",
					"infer.ocr_classifier", "infer.ocr_recognizer"};

				frag->kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
				if (use_cls)
					frag->models = InferCatalogGetModels(names, gucs, 3);
				else
				{
					const char *dr_names[2] = {names[0], names[2]};
					const char *dr_gucs[2] = {gucs[0], gucs[2]};
					Pginfer__ModelSpec **dr = InferCatalogGetModels(dr_names,
																	dr_gucs, 2);

					frag->models = palloc(sizeof(Pginfer__ModelSpec *) * 3);
					frag->models[0] = dr[0];
					frag->models[1] = palloc(sizeof(Pginfer__ModelSpec));
					pginfer__model_spec__init(frag->models[1]);
					frag->models[2] = dr[1];
				}
				frag->nmodels = 3;
				check_task(frag, frag->models[0], "detect_text", "detector",
						   gucs[0]);
				if (use_cls)
					check_task(frag, frag->models[1], "classify", "classifier",
							   gucs[1]);
				check_task(frag, frag->models[2], "recognize_text", "recognizer",
						   gucs[2]);
				break;
			}
		case INFER_FN_DETECT_TEXT:
			check_task(frag, init_one_model(frag, PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT,
											infer_ocr_detector, "infer.ocr_detector"),
					   "detect_text", "detector", "infer.ocr_detector");
			break;
		case INFER_FN_PREDICT:
			check_predict_task(frag, init_one_model(frag, PGINFER__FRAGMENT_KIND__FRAG_PREDICT,
													model, NULL));
			break;
		case INFER_FN_CLASSIFY:
			check_task(frag, init_one_model(frag, PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY,
											model, NULL),
					   "classify", "model", NULL);
			break;
		case INFER_FN_EMBED:
			check_task(frag, init_one_model(frag, PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT,
											model, NULL),
					   "embed_text", "model", NULL);
			break;
		case INFER_FN_CLASSIFY_TEXT:
			check_task(frag, init_one_model(frag, PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT,
											model, NULL),
					   "classify_text", "text classifier", NULL);
			break;
		case INFER_FN_NONE:
			elog(ERROR, "pg_infer: no ML function");
	}
}

/*
 * Converts a worker's SQLSTATE string to PostgreSQL's encoding; anything
 * that is not five digits or capital letters, or is a success code,
 * becomes XX000 (internal_error).
 */
static int
sqlstate_from_worker(const char *s)
{
	if (s == NULL || strlen(s) != 5 || strncmp(s, "00", 2) == 0)
		return ERRCODE_INTERNAL_ERROR;
	for (int i = 0; i < 5; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z')))
			return ERRCODE_INTERNAL_ERROR;
	return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
}

/*
 * A string from a worker (UTF-8 by protocol) in the database's encoding,
 * palloc'd or s itself.  Text with bytes that are not valid UTF-8 raises
 * 22021 (character_not_in_repertoire) when strict, and is replaced by a
 * placeholder otherwise (for messages, which must not fail themselves).
 */
static char *
from_worker(const char *s, bool strict)
{
	int			len;

	if (s == NULL)
		return NULL;
	len = strlen(s);
	if (!strict && !pg_verify_mbstr(PG_UTF8, s, len, true))
		return pstrdup("(text from the worker is not valid UTF-8)");
	return pg_any_to_server(s, len, PG_UTF8);
}

/*
 * Raises an error the worker reported (per row or for the whole request)
 * at elevel, keeping its SQLSTATE, message, detail and hint.
 */
static void
report_worker_error(int elevel, const char *sqlstate, const char *message,
					const char *detail, const char *hint)
{
	ereport(elevel,
			(errcode(sqlstate_from_worker(sqlstate)),
			 errmsg_internal("%s", message && message[0] ?
							 from_worker(message, false) :
							 "inference failed without a message"),
			 detail && detail[0] ?
			 errdetail_internal("%s", from_worker(detail, false)) : 0,
			 hint && hint[0] ? errhint("%s", from_worker(hint, false)) : 0));
}

/*
 * Picks the worker of frag's next request, one row of len bytes at
 * *payload, by infer.placement (placement.c), in the current memory
 * context; call it before pushing frag's error context, as "no worker"
 * concerns no worker and no model.  The row is staged first
 * (InferClientStageInputs), so that placement's transfer term sees which
 * worker's input cache holds it, and the send that follows with the same
 * arrays reuses its digest.  Errors: those of InferPlacementPick.
 */
void
InferFragmentPickWorker(InferFragment *frag, const void *const *payload,
						const size_t *len)
{
	InferClientStageInputs(1, payload, len);
	frag->worker = InferPlacementPick(&frag, 1, 1, *len, *len, NULL, 0);
}

/*
 * The worker placement chooses for a request of nfrags fragments over
 * nrows rows (bytes in all, the largest largest bytes) that is not down,
 * in the current memory context, or NULL when there is none: for a
 * request whose worker was lost.  Among the workers that are not down,
 * placement prefers one that reads the largest row, then one not named in
 * avoid (navoid names: those that lost these rows before).  Placement is asked once per registered worker (every policy
 * names a down worker only when every worker is down).
 * Errors: those of InferPlacementPick.
 */
InferWorker *
InferFragmentPickUp(InferFragment **frags, int nfrags, int nrows,
					size_t bytes, size_t largest, const char *const *avoid,
					int navoid)
{
	int			nworkers;

	pfree(InferCatalogGetWorkers(&nworkers));
	for (int i = 0; i < nworkers; i++)
	{
		InferWorker *worker = InferPlacementPick(frags, nfrags, nrows, bytes,
												 largest, avoid, navoid);

		if (!InferPoolIsDown(worker->pool_slot))
			return worker;
		InferPlacementFree(worker);
	}
	return NULL;
}

/*
 * Sets up, in the current memory context, the stage that frag's input
 * comes from: fn with model (see InferFragmentInit), whose result for
 * each row frag takes instead of the row's payload.  Returns the new
 * stage (chain more stages from it).  Errors: those of InferFragmentInit.
 */
InferFragment *
InferFragmentChain(InferFragment *frag, InferFunction fn, const char *model)
{
	InferFragment *prev = palloc(sizeof(InferFragment));

	InferFragmentInit(prev, fn, model);
	frag->prev = prev;
	return prev;
}

/*
 * The Fragment message of frag, in the current memory context: for a
 * chain, the first stage's, with the later stages as its next.
 */
static Pginfer__Fragment *
fragment_message(const InferFragment *frag)
{
	Pginfer__Fragment *next = NULL;

	for (const InferFragment *f = frag; f != NULL; f = f->prev)
	{
		Pginfer__Fragment *m = palloc(sizeof(Pginfer__Fragment));

		pginfer__fragment__init(m);
		m->kind = f->kind;
		m->n_models = f->nmodels;
		m->models = f->models;
		/* only text fragments carry it, so image requests still merge */
		m->truncate_text = (f->kind == PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT ||
							f->kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT) &&
			infer_text_truncate;
		/*
		 * a stage after another takes that stage's text, which this
		 * backend never sees: the worker holds it to infer.max_text_bytes,
		 * as InferTextWithinLimit holds a text one row at a time
		 */
		if (f->prev != NULL && infer_max_text_bytes > 0)
			m->max_input_text_bytes = infer_max_text_bytes;
		m->next = next;
		next = m;
	}
	return next;
}

/*
 * Sends frag over nrows rows (payloads[i], payload_lens[i] bytes, with
 * row_ids[i]) to frag->worker (see InferFragmentPickWorker); the request
 * and, later, its reply belong to the current memory context.
 * *bytes_sent (may be NULL) gets the payload bytes sent.  Errors: those
 * of InferClientSend.
 */
InferRequest *
InferFragmentSend(InferFragment *frag, int nrows, const uint64 *row_ids,
				  const void *const *payloads, const size_t *payload_lens,
				  size_t *bytes_sent)
{
	return InferFragmentSendMany(&frag, 1, nrows, row_ids, payloads,
								 payload_lens, bytes_sent);
}

/*
 * Sends nfrags fragments over the same nrows rows in one request (the
 * rows travel once; the worker answers each fragment's rows, see
 * InferFragmentCollectOf) to frags[0]->worker.  As InferFragmentSend
 * otherwise.
 */
InferRequest *
InferFragmentSendMany(InferFragment **frags, int nfrags, int nrows,
					  const uint64 *row_ids, const void *const *payloads,
					  const size_t *payload_lens, size_t *bytes_sent)
{
	Pginfer__Header request = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	InferRequest *req;

	Assert(nfrags >= 1 && frags[0]->worker != NULL);
	run.fragment = fragment_message(frags[0]);
	if (nfrags > 1)
	{
		run.n_more_fragments = nfrags - 1;
		run.more_fragments = palloc(sizeof(Pginfer__Fragment *) * (nfrags - 1));
		for (int f = 1; f < nfrags; f++)
			run.more_fragments[f - 1] = fragment_message(frags[f]);
	}
	run.n_row_ids = nrows;
	run.row_ids = (uint64_t *) row_ids;
	run.max_pixels = infer_max_pixels;
	request.version = PGINFER_PROTOCOL_VERSION;
	request.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	request.request_id = InferClientNextRequestId();
	request.run = &run;

	req = InferClientSend(frags[0]->worker, &request, nrows, payloads,
						  payload_lens, infer_timeout_ms);
	if (bytes_sent != NULL)
	{
		*bytes_sent = 0;
		for (int i = 0; i < nrows; i++)
			*bytes_sent += payload_lens[i];
	}
	return req;
}

/*
 * The code point of the first character of UTF-8 string s (len bytes) that
 * the database's encoding cannot hold, or 0 when it holds them all (or s is
 * not valid UTF-8 or no conversion exists: from_worker raises those).
 * Through PostgreSQL's conversion (pg_do_encoding_conversion_buf, noError).
 */
static pg_wchar
untranslatable_char(const char *s)
{
	int			enc = GetDatabaseEncoding();
	int			len;
	int			done;
	Oid			proc;
	unsigned char *buf;

	if (s == NULL || s[0] == '\0' || enc == PG_UTF8 || enc == PG_SQL_ASCII)
		return 0;
	len = strlen(s);
	/* beyond what a buffer can hold: left to from_worker's conversion */
	if ((Size) len >= (MaxAllocSize - 1) / MAX_CONVERSION_GROWTH)
		return 0;
	proc = FindDefaultConversionProc(PG_UTF8, enc);
	if (!OidIsValid(proc) || !pg_verify_mbstr(PG_UTF8, s, len, true))
		return 0;
	buf = palloc((Size) len * MAX_CONVERSION_GROWTH + 1);
	done = pg_do_encoding_conversion_buf(proc, PG_UTF8, enc,
										 (unsigned char *) s, len, buf,
										 len * MAX_CONVERSION_GROWTH + 1, true);
	pfree(buf);
	return done < len ? utf8_to_unicode((const unsigned char *) s + done) : 0;
}

/*
 * Turns each row answer of result (a worker's MSG_RESULT) whose text (OCR,
 * a label, detect_text's JSON) the database's encoding cannot hold into a
 * row that failed with 22P05 (untranslatable_character), its strings
 * allocated in cxt (the reply's context): the worker answers in UTF-8,
 * and the OCR recognizer's alphabet has characters (CJK and full-width
 * punctuation) that LATIN1, for one, lacks.  A failed row raises its error
 * when its value is wanted, so infer.on_error = null turns it into a
 * WARNING and NULL, as for a row the worker rejected, where the
 * conversion's own error would fail the whole statement; infer.stats
 * counts it among the errors.  Called as the reply arrives (client.c),
 * in a transaction.  Raises only what a catalog lookup
 * (FindDefaultConversionProc) or palloc may.
 */
void
InferResultCheckEncoding(Pginfer__Result *result, MemoryContext cxt)
{
	int			enc = GetDatabaseEncoding();

	if (result == NULL || enc == PG_UTF8 || enc == PG_SQL_ASCII)
		return;
	for (size_t i = 0; i < result->n_rows; i++)
	{
		Pginfer__RowResult *res = result->rows[i];
		MemoryContext oldcxt;
		pg_wchar	c;

		if (!res->ok)
			continue;
		c = untranslatable_char(res->text);
		if (c == 0)
			c = untranslatable_char(res->json);
		if (c == 0)
			continue;
		oldcxt = MemoryContextSwitchTo(cxt);
		res->ok = false;
		res->sqlstate = pstrdup("22P05");
		res->message = psprintf("the answer has the character U+%04X, which has no equivalent in encoding \"%s\"",
								(unsigned int) c, GetDatabaseEncodingName());
		res->detail = pstrdup("The worker answers in UTF-8; the answer is converted to the database's encoding.");
		res->hint = pstrdup("Use a database created with ENCODING 'UTF8', or set infer.on_error = null to get NULL and a WARNING for such rows.");
		MemoryContextSwitchTo(oldcxt);
	}
}

/*
 * Checks reply, the answer to frag's request over nrows rows with
 * row_ids, and fills rows[i] with row i's answer (pointing into the
 * reply).  A whole-request error (MSG_ERROR) is raised with the worker's
 * SQLSTATE; a reply that is no result or lacks a row is 08P01.  Rows the
 * worker rejected are left with result->ok false (see
 * InferRowReportError).
 */
void
InferFragmentCollect(InferFragment *frag, InferReply *reply, int nrows,
					 const uint64 *row_ids, InferRow *rows)
{
	InferFragmentCollectOf(frag, reply, 0, nrows, row_ids, rows);
}

/*
 * Whether reply is a worker's whole-request error (MSG_ERROR) that says
 * what that worker lacks, so that another worker may run the same rows:
 * 58P01 (undefined_file), a file of the request's models (the model, its
 * labels file, a text model's vocabulary) is not in its model directory;
 * 53200 (out_of_memory), a model larger than its --gpu-memory cap, or its
 * memory ran out for the request.
 */
bool
InferReplyWorkerLacks(const InferReply *reply)
{
	const Pginfer__Error *e = reply->header->error;

	return reply->header->kind == PGINFER__MSG_KIND__MSG_ERROR && e != NULL &&
		e->sqlstate != NULL &&
		(strcmp(e->sqlstate, PGINFER_SQLSTATE_NO_MODEL) == 0 ||
		 strcmp(e->sqlstate, PGINFER_SQLSTATE_OUT_OF_MEMORY) == 0);
}

/*
 * Raises the worker's whole-request error (MSG_ERROR) that reply is, if
 * it is one, with the worker's SQLSTATE, message, detail and hint.
 */
void
InferReplyRaiseError(const InferReply *reply)
{
	Pginfer__Error *e;

	if (reply->header->kind != PGINFER__MSG_KIND__MSG_ERROR)
		return;
	e = reply->header->error;
	report_worker_error(ERROR, e ? e->sqlstate : NULL, e ? e->message : NULL,
						e ? e->detail : NULL, e ? e->hint : NULL);
}

/*
 * InferFragmentCollect for fragment number `fragment` of a request that
 * carried several (InferFragmentSendMany: 0 is the first): only the
 * reply's rows of that fragment count.  A row whose text the database's
 * encoding cannot hold arrives failed (InferResultCheckEncoding).
 */
void
InferFragmentCollectOf(InferFragment *frag, InferReply *reply, int fragment,
					   int nrows, const uint64 *row_ids, InferRow *rows)
{
	Pginfer__Result *result;
	size_t		next = 0;

	InferReplyRaiseError(reply);
	if (reply->header->kind != PGINFER__MSG_KIND__MSG_RESULT ||
		reply->header->result == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s answered with message kind %d instead of a result",
						frag->worker->name, frag->worker->endpoint,
						(int) reply->header->kind)));

	result = reply->header->result;
	for (int r = 0; r < nrows; r++)
	{
		bool		found = false;

		/* rows come back in order; search from where the last one was */
		for (size_t k = 0; k < result->n_rows && !found; k++)
		{
			size_t		i = (next + k) % result->n_rows;

			if (result->rows[i]->row_id != row_ids[r] ||
				result->rows[i]->fragment != (uint32) fragment)
				continue;
			memset(&rows[r], 0, sizeof(InferRow));
			rows[r].result = result->rows[i];
			/* payload frames follow the result rows, one per row */
			if (i < (size_t) reply->nframes)
			{
				rows[r].payload = reply->frames[i];
				rows[r].payload_len = reply->frame_lens[i];
			}
			next = i + 1;
			found = true;
		}
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("inference worker \"%s\" at %s sent no result for row " UINT64_FORMAT " of %d",
							frag->worker->name, frag->worker->endpoint,
							row_ids[r], nrows),
					 fragment > 0 ?
					 errdetail("The row of fragment %d of the request is missing.",
							   fragment) : 0));
	}
}

/*
 * Raises the error the worker reported for row (result->ok false) at
 * elevel (ERROR, or WARNING with infer.on_error = null).
 */
void
InferRowReportError(const InferRow *row, int elevel)
{
	report_worker_error(elevel, row->result->sqlstate, row->result->message,
						row->result->detail, row->result->hint);
}

/*
 * The float32 values of row's payload frame (result->n_values of them) as
 * a real[] in the current memory context; a frame of another size is
 * 08P01.
 */
static Datum
values_datum(const InferFragment *frag, const InferRow *row)
{
	uint32		n = row->result->n_values;
	Datum	   *elems;

	if (row->payload_len != (size_t) n * sizeof(float))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s sent %zu bytes for %u values",
						frag->worker->name, frag->worker->endpoint,
						row->payload_len, n)));
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (uint32 i = 0; i < n; i++)
	{
		float		v;

		/* frames carry no alignment promise */
		memcpy(&v, row->payload + i * sizeof(float), sizeof(float));
		elems[i] = Float4GetDatum(v);
	}
	return PointerGetDatum(construct_array(elems, n, FLOAT4OID, sizeof(float4),
										   true, TYPALIGN_INT));
}

/*
 * Raises a NOTICE that row's text was truncated (result->truncated), at
 * most once per statement (InferFirstInStatement).
 */
static void
note_truncated(const InferFragment *frag, const InferRow *row)
{
	static InferOncePerStatement noticed;

	if (!row->result->truncated || !InferFirstInStatement(&noticed))
		return;
	ereport(NOTICE,
			(errmsg("text truncated to the first %u tokens for model \"%s\"",
					row->result->n_tokens, frag->models[0]->name),
			 errdetail("The model takes at most %u tokens; later truncations in this statement give no notice.",
					   row->result->n_tokens),
			 errhint("Set infer.text_truncate to off to get an error instead.")));
}

/*
 * The real[] of an infer.embed row's answer (result->ok), in the current
 * memory context, with the truncation NOTICE (note_truncated).  An answer
 * without values is 08P01.
 */
static Datum
embed_datum(const InferFragment *frag, const InferRow *row)
{
	if (row->result->n_values == 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s sent no values for %s",
						frag->worker->name, frag->worker->endpoint,
						frag->funcname)));
	note_truncated(frag, row);
	return values_datum(frag, row);
}

/*
 * Builds the SQL value of row's answer (result->ok) for frag's function in
 * the current memory context: text (ocr, classify), jsonb (detect_text)
 * or real[] (predict, embed); a text classifier's label comes with the
 * truncation NOTICE (note_truncated).  A reply without the value is 08P01.
 */
Datum
InferRowDatum(const InferFragment *frag, const InferRow *row)
{
	switch (frag->fn)
	{
		case INFER_FN_OCR:
		case INFER_FN_CLASSIFY:
			return PointerGetDatum(cstring_to_text(from_worker(row->result->text,
															   true)));
		case INFER_FN_DETECT_TEXT:
			if (row->result->json == NULL || row->result->json[0] == '\0')
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("inference worker \"%s\" at %s sent no JSON for infer.detect_text",
								frag->worker->name, frag->worker->endpoint)));
			return DirectFunctionCall1(jsonb_in,
									   CStringGetDatum(from_worker(row->result->json,
																   true)));
		case INFER_FN_PREDICT:
			return values_datum(frag, row);
		case INFER_FN_EMBED:
			return embed_datum(frag, row);
		case INFER_FN_CLASSIFY_TEXT:
			note_truncated(frag, row);
			return PointerGetDatum(cstring_to_text(from_worker(row->result->text,
															   true)));
		case INFER_FN_NONE:
			break;
	}
	elog(ERROR, "pg_infer: no ML function");
	return (Datum) 0;
}

/* most workers a row-at-a-time call passes over for lacking a file or memory */
#define INFER_ROW_MAX_LACKING 8

/*
 * After frag->worker answered that it lacks a file of frag's models or the
 * memory for them (58P01, 53200; InferReplyWorkerLacks), the worker to
 * send the row (*payload, *len bytes) to instead, with frag->worker added
 * to avoid (*navoid names, room for one more), or NULL when the error
 * stands: that worker was passed over before (placement sent the row back
 * to it, no other being up), or no other worker that is not down reads the
 * row.  Errors: those of InferPlacementPick.
 */
static InferWorker *
pick_not_lacking(InferFragment *frag, const void *const *payload,
				 const size_t *len, const char **avoid, int *navoid,
				 int nlost)
{
	InferWorker *next;

	if (InferPlacementAvoided(frag->worker->name, avoid + nlost,
							  *navoid - nlost))
		return NULL;
	avoid[(*navoid)++] = frag->worker->name;
	InferClientStageInputs(1, payload, len);
	next = InferFragmentPickUp(&frag, 1, 1, *len, *len, avoid, *navoid);
	if (next != NULL &&
		(InferPlacementAvoided(next->name, avoid + nlost,
							   *navoid - nlost) ||
		 !InferWorkerReads(next, *len)))
	{
		InferPlacementFree(next);
		next = NULL;
	}
	return next;
}

/*
 * Sends frag's request over one row (row_id; *payload, *len bytes) to
 * frag->worker and returns its reply.  When the worker loses it
 * (InferClientWaitOrLost: gone or hung, 08006; shutting down, 57P01), or
 * goes down while the send waits to connect (08006, see InferClientSend),
 * it goes to another worker that is not down (InferFragmentPickUp; one
 * that has not lost it, while there is one), up to infer.retries times,
 * as InferBatch's requests do; after that, or with no such worker, the
 * loss is raised (InferClientRaiseLost).  A worker that answers 58P01 or 53200
 * (a file of frag's models missing there, or the memory for them) has the
 * row sent to another one that is not down, which is no retry
 * (pick_not_lacking; its reply is returned when there is none).  frag's error context must be the
 * innermost one; it names the worker of each send.
 */
static InferReply *
send_one(InferFragment *frag, const uint64 *row_id, const void *const *payload,
		 const size_t *len)
{
	int			retries = infer_retries;

	/*
	 * the workers not to send the row to again: the first nlost lost it,
	 * the others lack a file of frag's models
	 */
	const char **avoid = palloc(sizeof(char *) *
								(retries + 1 + INFER_ROW_MAX_LACKING));
	int			navoid = 0;
	int			nlost = 0;

	for (int attempt = 0;;)
	{
		MemoryContext cxt = CurrentMemoryContext;
		InferRequest *volatile req = NULL;
		ErrorData  *volatile lost = NULL;
		InferReply *reply = NULL;
		InferWorker *next;

		PG_TRY();
		{
			req = InferFragmentSend(frag, 1, row_id, payload, len, NULL);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* a worker that went down while the send waited to connect */
			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			InferPlacementRelease(frag->worker);
			if (edata->sqlerrcode != ERRCODE_CONNECTION_FAILURE ||
				!InferPoolIsDown(frag->worker->pool_slot))
			{
				FreeErrorData(edata);
				PG_RE_THROW();
			}
			FlushErrorState();
			lost = edata;
		}
		PG_END_TRY();
		if (req != NULL)
		{
			ErrorData  *waited;

			reply = InferClientWaitOrLost(req, &waited);
			lost = waited;
		}
		if (reply != NULL)
		{
			if (!InferReplyWorkerLacks(reply) ||
				navoid - nlost >= INFER_ROW_MAX_LACKING ||
				(next = pick_not_lacking(frag, payload, len, avoid, &navoid,
										 nlost)) == NULL)
				return reply;
			ereport(DEBUG1,
					(errmsg("pg_infer: inference worker \"%s\" at %s cannot run the request (%s: %s); sending the row to \"%s\"",
							frag->worker->name, frag->worker->endpoint,
							reply->header->error->sqlstate,
							reply->header->error->message, next->name)));
			frag->worker = next;
			continue;
		}
		if (attempt >= retries)
			InferClientRaiseLost(lost, 1, attempt + 1);
		InferClientStageInputs(1, payload, len);
		/* the lost ones first: keep the names after them */
		memmove(avoid + nlost + 1, avoid + nlost,
				sizeof(char *) * (navoid - nlost));
		avoid[nlost++] = frag->worker->name;
		navoid++;
		attempt++;
		next = InferFragmentPickUp(&frag, 1, 1, *len, *len, avoid, navoid);
		if (next == NULL)
			InferClientRaiseLost(lost, 1, 0);
		/* the workers that read the row went down: none up does */
		if (!InferWorkerReads(next, *len))
			InferRaiseRowTooLarge(next, *len, frag->fn, NULL, 0, req != NULL,
								  ERROR);
		ereport(DEBUG1,
				(errmsg("pg_infer: inference worker \"%s\" at %s was lost (%s); sending the row to \"%s\"",
						frag->worker->name, frag->worker->endpoint,
						lost->message, next->name)));
		FreeErrorData(lost);
		frag->worker = next;
	}
}

/*
 * infer.progress for the calls made one row at a time (outside InferBatch):
 * one scan per statement, this backend's, in the memory of the statement's
 * portal (in a parallel worker, with no portal, of its transaction), so
 * that it stops with the statement, finished or failed (stats.c takes its
 * counts back then).  Its rows_estimate is 0: no plan node estimates the
 * rows of such calls.
 */
static InferProgressScan *row_scan = NULL;
static MemoryContext row_scan_cxt = NULL;

/* Memory context callback: the statement's scan is gone with its memory. */
static void
row_scan_gone(void *arg)
{
	if (row_scan == arg)
	{
		row_scan = NULL;
		row_scan_cxt = NULL;
	}
}

/*
 * The current statement's row-at-a-time scan, started on its first call,
 * with frag's models among its models.  Nothing raised but out of memory.
 */
static InferProgressScan *
row_progress(InferFragment *frag)
{
	MemoryContext cxt = PortalContext != NULL ? PortalContext : TopTransactionContext;
	char		label[INFER_STATS_MODEL_LEN];

	if (row_scan == NULL || row_scan_cxt != cxt)
	{
		InferProgressScan *p = MemoryContextAllocZero(cxt, sizeof(*p));
		MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(*cb));

		cb->func = row_scan_gone;
		cb->arg = p;
		MemoryContextRegisterResetCallback(cxt, cb);
		InferProgressStart(p, cxt, 0);
		row_scan = p;
		row_scan_cxt = cxt;
	}
	InferStatsFragmentsLabel(&frag, 1, label, sizeof(label));
	InferProgressModels(row_scan, label);
	return row_scan;
}

/*
 * Runs fn (with model for predict/classify/embed) on one input (image
 * bytes; UTF-8 text for embed), one request per call, and returns its
 * value built in the caller's context; *isnull is set when the worker
 * rejected the input and infer.on_error = null (a WARNING has then been
 * raised).  Everything else is allocated in a
 * context of the call's own, deleted before returning.
 */
static Datum
run_one(InferFunction fn, const char *model, const void *payload,
		size_t payload_len, bool *isnull)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	InferFragment frag;
	InferRow	row;
	uint64		row_id = INFER_ROW_ID;
	Datum		out = (Datum) 0;
	InferProgressScan *progress;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_infer call",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);

	InferFragmentInit(&frag, fn, model);
	InferFragmentPickWorker(&frag, &payload, &payload_len);
	/* a row no worker reads: placement had none that does */
	if (!InferWorkerReads(frag.worker, payload_len))
	{
		InferRaiseRowTooLarge(frag.worker, payload_len, fn, model, 0, false,
							  infer_on_error == INFER_ON_ERROR_NULL ?
							  WARNING : ERROR);
		InferPlacementFree(frag.worker);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		*isnull = true;
		return (Datum) 0;
	}
	InferFragmentPushContext(&frag);

	(void) InferStatsNewCall(); /* each call counts in infer.stats */
	progress = row_progress(&frag);
	InferProgressAdd(progress, 0, 1, 1);
	InferFragmentCollect(&frag, send_one(&frag, &row_id, &payload, &payload_len),
						 1, &row_id, &row);
	InferProgressAdd(progress, 1, 0, -1);
	*isnull = !row.result->ok;
	if (*isnull)
		InferRowReportError(&row, infer_on_error == INFER_ON_ERROR_NULL ?
							WARNING : ERROR);
	else
	{
		MemoryContextSwitchTo(oldcxt);
		out = InferRowDatum(&frag, &row);
	}
	InferFragmentPopContext(&frag);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return out;
}

/* run_one on the bytes of an image. */
static Datum
run_image(InferFunction fn, const char *model, bytea *img, bool *isnull)
{
	return run_one(fn, model, VARDATA_ANY(img), VARSIZE_ANY_EXHDR(img),
				   isnull);
}

/*
 * infer.ocr(img bytea) returns text: the text lines of an image, in
 * reading order, joined by newlines ('' when there is no text).  Models
 * from infer.ocr_detector, infer.ocr_classifier and infer.ocr_recognizer.
 */
Datum
infer_ocr(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		out = run_image(INFER_FN_OCR, NULL, PG_GETARG_BYTEA_PP(0), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(out);
}

/*
 * infer.detect_text(img bytea) returns jsonb: the text boxes the worker
 * found with infer.ocr_detector, as the JSON array it sends.
 */
Datum
infer_detect_text(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		out = run_image(INFER_FN_DETECT_TEXT, NULL, PG_GETARG_BYTEA_PP(0),
							  &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(out);
}

/*
 * The body of the (model text, img bytea) functions: runs fn with the
 * model named by argument 0 on the image of argument 1.
 */
static Datum
run_model_call(InferFunction fn, FunctionCallInfo fcinfo)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		isnull;
	Datum		out = run_image(fn, model, PG_GETARG_BYTEA_PP(1), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(out);
}

/*
 * infer.predict(model text, img bytea) returns real[]: the model's first
 * output for the image, flattened, as float32 values.
 */
Datum
infer_predict(PG_FUNCTION_ARGS)
{
	return run_model_call(INFER_FN_PREDICT, fcinfo);
}

/*
 * infer.classify(model text, img bytea) returns text: the label of the
 * classify model's top class for the image.
 */
Datum
infer_classify(PG_FUNCTION_ARGS)
{
	return run_model_call(INFER_FN_CLASSIFY, fcinfo);
}

/*
 * The errdetail of a text refused before it was sent: for fn with model,
 * naming the scan's row number (from 1) when row > 0.
 */
static int
text_not_sent_detail(InferFunction fn, const char *model, int64 row)
{
	if (row > 0)
		return errdetail("The text of row " INT64_FORMAT " was for %s with model \"%s\"; it was not sent.",
						 row, InferFunctionName(fn), model);
	return errdetail("The text was for %s with model \"%s\"; it was not sent.",
					 InferFunctionName(fn), model);
}

/*
 * The bytes of input in UTF-8 (the wire's encoding for text), and their
 * number in *len: input's own bytes when the database encoding is UTF-8,
 * else a palloc'd conversion.  In an SQL_ASCII database, which stores any
 * bytes, a text that is not valid UTF-8 is the row's error (22021 naming
 * fn, model and, for row > 0, the scan's row number), as an ERROR, or as
 * a WARNING with infer.on_error = null, and NULL is returned (the call's
 * value is then NULL).  Every other server encoding converts to UTF-8.
 */
const char *
InferTextPayload(text *input, size_t *len, InferFunction fn,
				 const char *model, int64 row)
{
	const char *s = VARDATA_ANY(input);
	int			n = VARSIZE_ANY_EXHDR(input);
	char	   *u;

	if (GetDatabaseEncoding() == PG_SQL_ASCII &&
		!pg_verify_mbstr(PG_UTF8, s, n, true))
	{
		ereport(infer_on_error == INFER_ON_ERROR_NULL ? WARNING : ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("text is not valid UTF-8, the encoding the workers read"),
				 text_not_sent_detail(fn, model, row),
				 errhint("An SQL_ASCII database stores any bytes: convert the text to UTF-8 before the call, or use a database created with ENCODING 'UTF8'.")));
		return NULL;
	}
	u = pg_server_to_any(s, n, PG_UTF8);

	/* a converted string is NUL-terminated, and text holds no NUL */
	*len = u == s ? (size_t) n : strlen(u);
	return u;
}

/*
 * Whether the text Datum input (in the database encoding, possibly
 * toasted) has at most infer.max_text_bytes bytes (0: no limit here);
 * its size is read from its header, before it is detoasted, converted or
 * copied.  When it has more, raises 54000 naming fn, model and, for
 * row > 0, the scan's row number (from 1): as an ERROR, or as a WARNING
 * with infer.on_error = null, and returns false (the call's value is then
 * NULL).
 */
bool
InferTextWithinLimit(Datum input, InferFunction fn, const char *model,
					 int64 row)
{
	Size		len = toast_raw_datum_size(input) - VARHDRSZ;

	if (infer_max_text_bytes <= 0 || len <= (Size) infer_max_text_bytes)
		return true;
	ereport(infer_on_error == INFER_ON_ERROR_NULL ? WARNING : ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("text of %zu bytes is longer than infer.max_text_bytes (%d bytes)",
					(size_t) len, infer_max_text_bytes),
			 text_not_sent_detail(fn, model, row),
			 errhint("Split the text, or raise infer.max_text_bytes.")));
	return false;
}

/*
 * Raises 54000 at elevel for an input row of len bytes larger than limit,
 * the largest row an inference worker that is up reads (worker's
 * --max-message-bytes), naming fn, model (NULL: the OCR settings' models)
 * and, for row > 0, the scan's row number (from 1).  lost: the row had
 * gone to workers that read it, which went down while they held it, and
 * it is not sent again.
 */
static void
report_too_large(int elevel, size_t len, uint64 limit, const char *worker,
				 InferFunction fn, const char *model, int64 row, bool lost)
{
	StringInfoData what;

	initStringInfo(&what);
	if (row > 0)
		appendStringInfo(&what, "The input of row " INT64_FORMAT " was for %s",
						 row, InferFunctionName(fn));
	else
		appendStringInfo(&what, "The input was for %s", InferFunctionName(fn));
	if (model != NULL)
		appendStringInfo(&what, " with model \"%s\"", model);
	appendStringInfoString(&what, lost ?
						   "; the workers that read it went down while they held it, and it was not sent again." :
						   "; it was not sent.");
	ereport(elevel,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("input of %zu bytes is larger than any inference worker reads",
					len),
			 errdetail("%s  The largest an inference worker that is up reads is " UINT64_FORMAT " bytes (\"%s\", its --max-message-bytes).",
					   what.data, limit, worker),
			 lost ?
			 errhint("Start the workers that read it again, or one with a larger --max-message-bytes, and run the statement again.") :
			 errhint("Start the inference workers with a larger --max-message-bytes, or send a smaller input.")));
	pfree(what.data);
}

/*
 * Whether an input row of len bytes can be sent: limit is the largest row
 * an inference worker that is not down reads (InferPlacementRowLimit: its
 * --max-message-bytes, worker its name; 0: no limit known), and a larger
 * frame would make it drop the connection, the request lost (ZeroMQ's
 * ZMQ_MAXMSGSIZE).  When the row is larger, raises 54000 naming fn,
 * model (NULL: the OCR settings' models), for row > 0 the scan's row
 * number (from 1), the limit and the worker: as an ERROR, or as a WARNING
 * with infer.on_error = null, and returns false (the call's value is then
 * NULL); nothing is sent.
 */
bool
InferRowWithinLimit(size_t len, uint64 limit, const char *worker,
					InferFunction fn, const char *model, int64 row)
{
	if (limit == 0 || len <= limit)
		return true;
	report_too_large(infer_on_error == INFER_ON_ERROR_NULL ? WARNING : ERROR,
					 len, limit, worker, fn, model, row, false);
	return false;
}

/*
 * Whether worker (placement's choice) reads a row of len bytes: its
 * --max-message-bytes, as the pool last heard it, is not smaller (or not
 * known).  Placement chooses one that does not only when no worker that is
 * up does.
 */
bool
InferWorkerReads(const InferWorker *worker, size_t len)
{
	return worker->max_row_bytes == 0 || len <= worker->max_row_bytes;
}

/*
 * Raises 54000 for a request whose largest row (row, the scan's row
 * number from 1; 0: not known), of len bytes, worker does not read
 * (InferWorkerReads), as placement found no worker up that does: a row
 * checked before the workers that read it went down, a per-row call, or
 * (lost) a row that such workers held when they went down, at elevel
 * (a per-row call's first send: as InferRowWithinLimit, a WARNING with
 * infer.on_error = null, after which it returns; otherwise ERROR, as a
 * lost worker's is).  The limit named is the largest a worker up reads,
 * or worker's own should the pool say otherwise by now.  Takes worker's
 * reservation back first.
 */
void
InferRaiseRowTooLarge(const InferWorker *worker, size_t len, InferFunction fn,
					  const char *model, int64 row, bool lost, int elevel)
{

	const char *name;
	uint64		limit;

	InferPlacementRelease(worker);
	limit = InferPlacementRowLimit(&name);
	if (limit == 0 || len <= limit)
	{
		limit = worker->max_row_bytes;
		name = worker->name;
	}
	report_too_large(elevel, len, limit, name, fn, model, row, lost);
}

/*
 * infer.embed(model text, input text) returns real[]: the sentence
 * embedding of input by the registered embed_text model, one request per
 * call (run_one), or batched by InferBatch.  NULL with a WARNING
 * when the worker rejects the text and infer.on_error = null.
 */
Datum
infer_embed(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	size_t		len;
	const char *utf8;
	bool		isnull;
	Datum		out;

	if (!InferTextWithinLimit(PG_GETARG_DATUM(1), INFER_FN_EMBED, model, 0))
		PG_RETURN_NULL();
	utf8 = InferTextPayload(PG_GETARG_TEXT_PP(1), &len, INFER_FN_EMBED, model, 0);
	if (utf8 == NULL)
		PG_RETURN_NULL();
	out = run_one(INFER_FN_EMBED, model, utf8, len, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(out);
}

/*
 * Whether argument argno of the call is a value given once for the whole
 * statement, a constant or a parameter (InferArgIsStatementValue), rather
 * than a column or the value of another expression.
 */
static bool
arg_is_statement_value(FunctionCallInfo fcinfo, int argno)
{
	Node	   *expr = fcinfo->flinfo != NULL ? fcinfo->flinfo->fn_expr : NULL;
	List	   *args;

	if (expr == NULL || !IsA(expr, FuncExpr))
		return false;
	args = ((FuncExpr *) expr)->args;
	return list_length(args) > argno &&
		InferArgIsStatementValue(list_nth(args, argno));
}

/*
 * infer.classify(model text, input text) returns text: the label a
 * registered text classifier (task classify_text) gives input, one
 * request per call (run_one), or batched by InferBatch.  NULL with a
 * WARNING when the worker rejects the text and infer.on_error = null.
 *
 * An untyped string constant, such as '\x89504e47...', resolves to this
 * overload rather than to infer.classify(text, bytea); so that such calls
 * written for an image classifier keep their meaning, a constant or a
 * parameter given to an image classifier (task classify) is read as
 * bytea's input form and classified as an image (the planner leaves these
 * calls unbatched), under a custom plan and a generic one alike; every
 * other model gets the text, and 42809 unless its task is classify_text.
 */
Datum
infer_classify_text(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	const char *names[1] = {model};
	bool		isnull;
	Datum		out;
	const char *task = arg_is_statement_value(fcinfo, 1) ?
		InferCatalogGetModels(names, NULL, 1)[0]->task : NULL;

	/* a value for the statement: an image for an image classifier */
	if (task != NULL && strcmp(task, "classify") != 0 &&
		strcmp(task, "classify_text") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", but infer.classify needs an image classifier (task \"classify\") or a text classifier (task \"classify_text\")",
						model, task),
				 errhint("Choose a model whose task is classify or classify_text; see infer.models.")));
	if (task != NULL && strcmp(task, "classify") == 0)
	{
		char	   *lit = TextDatumGetCString(PG_GETARG_DATUM(1));
		Datum		img = DirectFunctionCall1(byteain, CStringGetDatum(lit));

		out = run_image(INFER_FN_CLASSIFY, model, DatumGetByteaPP(img), &isnull);
	}
	else
	{
		size_t		len;
		const char *utf8;

		if (!InferTextWithinLimit(PG_GETARG_DATUM(1), INFER_FN_CLASSIFY_TEXT,
								  model, 0))
			PG_RETURN_NULL();
		utf8 = InferTextPayload(PG_GETARG_TEXT_PP(1), &len,
								INFER_FN_CLASSIFY_TEXT, model, 0);
		if (utf8 == NULL)
			PG_RETURN_NULL();
		out = run_one(INFER_FN_CLASSIFY_TEXT, model, utf8, len, &isnull);
	}
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(out);
}

/*
 * The elements of a real[] argument of infer.similarity (argname "a" or
 * "b") and their number: a vector has one dimension (or none: empty) and
 * no NULL elements (22004); anything else is 22000.
 */
static const float4 *
vector_arg(ArrayType *v, const char *argname, int *n)
{
	if (ARR_NDIM(v) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("argument %s of infer.similarity has %d dimensions, a vector has one",
						argname, ARR_NDIM(v))));
	if (array_contains_nulls(v))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument %s of infer.similarity contains NULL elements",
						argname),
				 errhint("Compare complete embeddings, for example as infer.embed() returns them.")));
	*n = ArrayGetNItems(ARR_NDIM(v), ARR_DIMS(v));
	return (const float4 *) ARR_DATA_PTR(v);
}

/*
 * infer.similarity(a real[], b real[]) returns real: the cosine of the
 * angle between a and b, a.b / (|a| |b|), summed in double and kept in
 * [-1, 1].  Vectors of different lengths, empty or zero vectors and
 * vectors whose sums are not finite (NaN, infinity) raise 22000; NULL
 * elements raise 22004.
 */
Datum
infer_similarity(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			na,
				nb;
	const float4 *x = vector_arg(a, "a", &na);
	const float4 *y = vector_arg(b, "b", &nb);
	double		dot = 0,
				xx = 0,
				yy = 0,
				cosine;

	if (na != nb)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infer.similarity of vectors of different lengths %d and %d",
						na, nb),
				 errhint("Compare embeddings made by the same model.")));
	if (na == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infer.similarity of empty vectors")));
	for (int i = 0; i < na; i++)
	{
		dot += (double) x[i] * y[i];
		xx += (double) x[i] * x[i];
		yy += (double) y[i] * y[i];
	}
	if (!isfinite(dot) || !isfinite(xx) || !isfinite(yy))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infer.similarity of vectors with NaN or infinite elements")));
	if (xx == 0 || yy == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infer.similarity of a zero vector is undefined"),
				 errdetail("Vector %s has only zero elements.", xx == 0 ? "a" : "b")));
	cosine = dot / (sqrt(xx) * sqrt(yy));
	if (cosine > 1)
		cosine = 1;
	if (cosine < -1)
		cosine = -1;
	PG_FREE_IF_COPY(a, 0);
	PG_FREE_IF_COPY(b, 1);
	PG_RETURN_FLOAT4((float4) cosine);
}
