/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable inference functions, one row per call: infer.ocr,
 *	  infer.detect_text, infer.predict and infer.classify.
 *
 * Each call reads its models from the registry, picks a worker, sends one
 * MSG_RUN_FRAGMENT row and turns the reply into a datum.  Everything a
 * call allocates lives in a memory context of its own, deleted when the
 * call returns; only the result datum is built in the caller's context.
 * (An error frees the call's context with the executor's memory.)
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(infer_ocr);
PG_FUNCTION_INFO_V1(infer_detect_text);
PG_FUNCTION_INFO_V1(infer_predict);
PG_FUNCTION_INFO_V1(infer_classify);

/* The row id of the single row a call sends. */
#define INFER_ROW_ID 1

/* One call in progress: what its error context line names. */
typedef struct InferCall
{
	const char *funcname;		/* "infer.ocr", ... */
	Pginfer__ModelSpec **models;
	int			nmodels;		/* models with an empty file are skipped */
	InferWorker *worker;		/* NULL until picked */
	MemoryContext cxt;			/* the call's own context */
	MemoryContext oldcxt;		/* the caller's */
} InferCall;

/* The answer to one row: the worker's RowResult and its payload frame. */
typedef struct InferRow
{
	Pginfer__RowResult *result;
	const char *payload;
	size_t		payload_len;
} InferRow;

/*
 * Opens a call: creates its memory context (a child of the caller's) and
 * switches to it.
 */
static void
call_begin(InferCall *call, const char *funcname)
{
	memset(call, 0, sizeof(*call));
	call->funcname = funcname;
	call->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_infer call",
									  ALLOCSET_DEFAULT_SIZES);
	call->oldcxt = MemoryContextSwitchTo(call->cxt);
}

/* Closes a call: back to the caller's context, the call's memory freed. */
static void
call_end(InferCall *call)
{
	MemoryContextSwitchTo(call->oldcxt);
	MemoryContextDelete(call->cxt);
}

/*
 * Error context callback: names the function, its models and the worker,
 * so an error from the worker or the connection says where it came from.
 */
static void
call_error_context(void *arg)
{
	InferCall  *call = (InferCall *) arg;
	StringInfoData buf;
	StringInfoData names;
	int			n = 0;

	initStringInfo(&names);
	for (int i = 0; i < call->nmodels; i++)
	{
		if (call->models[i]->file[0] == '\0')
			continue;
		appendStringInfo(&names, "%s\"%s\"", n++ > 0 ? ", " : "",
						 call->models[i]->name);
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s: model%s %s", call->funcname,
					 n > 1 ? "s" : "", names.data);
	if (call->worker != NULL)
		appendStringInfo(&buf, " on inference worker \"%s\" at %s",
						 call->worker->name, call->worker->endpoint);
	errcontext("%s", buf.data);
	pfree(names.data);
	pfree(buf.data);
}

/*
 * Refuses a model whose registered task is not `task`, for the function's
 * stage `role` ("detector", ...).  ERROR 42809 (wrong_object_type).
 */
static void
check_task(const InferCall *call, const Pginfer__ModelSpec *model,
		   const char *task, const char *role)
{
	if (strcmp(model->task, task) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", but %s needs a %s with task \"%s\"",
						model->name, model->task, call->funcname, role, task),
				 errhint("Choose a model whose task is %s; see infer.models.",
						 task)));
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
 * Raises an error the worker reported (per row or for the whole request)
 * at elevel, keeping its SQLSTATE, message, detail and hint.
 */
static void
report_worker_error(int elevel, const char *sqlstate, const char *message,
					const char *detail, const char *hint)
{
	ereport(elevel,
			(errcode(sqlstate_from_worker(sqlstate)),
			 errmsg_internal("%s", message && message[0] ? message :
							 "inference failed without a message"),
			 detail && detail[0] ? errdetail_internal("%s", detail) : 0,
			 hint && hint[0] ? errhint("%s", hint) : 0));
}

/*
 * Runs the fragment `kind` over call->models on one image: picks a worker,
 * sends the row, waits for the reply.  Returns the row's answer, or false
 * when the worker rejected the row and infer.on_error = null (a WARNING
 * has then been raised).  Whole-request and transport errors always
 * raise an ERROR.
 */
static bool
call_run(InferCall *call, Pginfer__FragmentKind kind, bytea *img,
		 InferRow *row)
{
	Pginfer__Header request = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment fragment = PGINFER__FRAGMENT__INIT;
	uint64_t	row_id = INFER_ROW_ID;
	ErrorContextCallback errcallback;
	InferReply *reply;
	Pginfer__Result *result;
	bool		found = false;

	call->worker = InferCatalogPickWorker();

	fragment.kind = kind;
	fragment.n_models = call->nmodels;
	fragment.models = call->models;
	run.fragment = &fragment;
	run.n_row_ids = 1;
	run.row_ids = &row_id;
	run.max_pixels = infer_max_pixels;
	request.version = PGINFER_PROTOCOL_VERSION;
	request.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	request.request_id = InferClientNextRequestId();
	request.run = &run;

	errcallback.callback = call_error_context;
	errcallback.arg = call;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	reply = InferClientCall(call->worker, &request, VARDATA_ANY(img),
							VARSIZE_ANY_EXHDR(img), infer_timeout_ms);

	if (reply->header->kind == PGINFER__MSG_KIND__MSG_ERROR)
	{
		Pginfer__Error *e = reply->header->error;

		report_worker_error(ERROR, e ? e->sqlstate : NULL,
							e ? e->message : NULL,
							e ? e->detail : NULL, e ? e->hint : NULL);
	}
	if (reply->header->kind != PGINFER__MSG_KIND__MSG_RESULT ||
		reply->header->result == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s answered with message kind %d instead of a result",
						call->worker->name, call->worker->endpoint,
						(int) reply->header->kind)));

	result = reply->header->result;
	for (size_t i = 0; i < result->n_rows; i++)
	{
		if (result->rows[i]->row_id != INFER_ROW_ID)
			continue;
		row->result = result->rows[i];
		/* payload frames follow the result rows, one per row */
		if (i < (size_t) reply->nframes)
		{
			row->payload = reply->frames[i];
			row->payload_len = reply->frame_lens[i];
		}
		found = true;
		break;
	}
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s sent no result for the row",
						call->worker->name, call->worker->endpoint)));

	if (!row->result->ok)
		report_worker_error(infer_on_error == INFER_ON_ERROR_NULL ?
							WARNING : ERROR,
							row->result->sqlstate, row->result->message,
							row->result->detail, row->result->hint);

	error_context_stack = errcallback.previous;
	return row->result->ok;
}

/*
 * infer.ocr(img bytea) returns text: the text lines of an image, in
 * reading order, joined by newlines ('' when there is no text).  Models
 * from infer.ocr_detector, infer.ocr_classifier and infer.ocr_recognizer;
 * an empty infer.ocr_classifier skips direction classification (the
 * fragment then carries a model with an empty file in stage 1).
 */
Datum
infer_ocr(PG_FUNCTION_ARGS)
{
	bytea	   *img = PG_GETARG_BYTEA_PP(0);
	bool		use_cls = infer_ocr_classifier != NULL &&
		infer_ocr_classifier[0] != '\0';
	const char *names[3] = {infer_ocr_detector, infer_ocr_classifier,
	infer_ocr_recognizer};
	const char *gucs[3] = {"infer.ocr_detector", "infer.ocr_classifier",
	"infer.ocr_recognizer"};
	InferCall	call;
	InferRow	row = {0};
	text	   *out = NULL;

	call_begin(&call, "infer.ocr");
	if (use_cls)
		call.models = InferCatalogGetModels(names, gucs, 3);
	else
	{
		const char *dr_names[2] = {names[0], names[2]};
		const char *dr_gucs[2] = {gucs[0], gucs[2]};
		Pginfer__ModelSpec **dr = InferCatalogGetModels(dr_names, dr_gucs, 2);

		/* the fragment's stage 1 is then a model with an empty file */
		call.models = palloc(sizeof(Pginfer__ModelSpec *) * 3);
		call.models[0] = dr[0];
		call.models[1] = palloc(sizeof(Pginfer__ModelSpec));
		pginfer__model_spec__init(call.models[1]);
		call.models[2] = dr[1];
	}
	call.nmodels = 3;
	check_task(&call, call.models[0], "detect_text", "detector");
	if (use_cls)
		check_task(&call, call.models[1], "classify", "classifier");
	check_task(&call, call.models[2], "recognize_text", "recognizer");

	if (call_run(&call, PGINFER__FRAGMENT_KIND__FRAG_OCR, img, &row))
	{
		MemoryContextSwitchTo(call.oldcxt);
		out = cstring_to_text(row.result->text);
	}
	call_end(&call);

	if (out == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(out);
}

/*
 * infer.detect_text(img bytea) returns jsonb: the text boxes the worker
 * found with infer.ocr_detector, as the JSON array it sends.
 */
Datum
infer_detect_text(PG_FUNCTION_ARGS)
{
	bytea	   *img = PG_GETARG_BYTEA_PP(0);
	const char *names[1] = {infer_ocr_detector};
	const char *gucs[1] = {"infer.ocr_detector"};
	InferCall	call;
	InferRow	row = {0};
	Datum		out = (Datum) 0;
	bool		ok;

	call_begin(&call, "infer.detect_text");
	call.models = InferCatalogGetModels(names, gucs, 1);
	call.nmodels = 1;
	check_task(&call, call.models[0], "detect_text", "detector");

	ok = call_run(&call, PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT, img, &row);
	if (ok)
	{
		if (row.result->json == NULL || row.result->json[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("inference worker \"%s\" at %s sent no JSON for infer.detect_text",
							call.worker->name, call.worker->endpoint)));
		MemoryContextSwitchTo(call.oldcxt);
		out = DirectFunctionCall1(jsonb_in, CStringGetDatum(row.result->json));
	}
	call_end(&call);

	if (!ok)
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
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bytea	   *img = PG_GETARG_BYTEA_PP(1);
	const char *names[1] = {model};
	InferCall	call;
	InferRow	row = {0};
	ArrayType  *out = NULL;

	call_begin(&call, "infer.predict");
	call.models = InferCatalogGetModels(names, NULL, 1);
	call.nmodels = 1;

	if (call_run(&call, PGINFER__FRAGMENT_KIND__FRAG_PREDICT, img, &row))
	{
		uint32		n = row.result->n_values;
		Datum	   *elems;

		if (row.payload_len != (size_t) n * sizeof(float))
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("inference worker \"%s\" at %s sent %zu bytes for %u values",
							call.worker->name, call.worker->endpoint,
							row.payload_len, n)));
		elems = palloc(sizeof(Datum) * Max(n, 1));
		for (uint32 i = 0; i < n; i++)
		{
			float		v;

			/* frames carry no alignment promise */
			memcpy(&v, row.payload + i * sizeof(float), sizeof(float));
			elems[i] = Float4GetDatum(v);
		}
		MemoryContextSwitchTo(call.oldcxt);
		out = construct_array(elems, n, FLOAT4OID, sizeof(float4),
							  true, TYPALIGN_INT);
	}
	call_end(&call);

	if (out == NULL)
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(out);
}

/*
 * infer.classify(model text, img bytea) returns text: the label of the
 * classify model's top class for the image.
 */
Datum
infer_classify(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bytea	   *img = PG_GETARG_BYTEA_PP(1);
	const char *names[1] = {model};
	InferCall	call;
	InferRow	row = {0};
	text	   *out = NULL;

	call_begin(&call, "infer.classify");
	call.models = InferCatalogGetModels(names, NULL, 1);
	call.nmodels = 1;
	check_task(&call, call.models[0], "classify", "model");

	if (call_run(&call, PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY, img, &row))
	{
		MemoryContextSwitchTo(call.oldcxt);
		out = cstring_to_text(row.result->text);
	}
	call_end(&call);

	if (out == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(out);
}
