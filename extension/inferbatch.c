/*-------------------------------------------------------------------------
 *
 * inferbatch.c
 *	  The InferBatch custom scan: runs the ML calls of its child's rows in
 *	  batches, several batches in flight, and returns the rows in input
 *	  order with the calls' results as extra columns.
 *
 * The plan comes from planner/planner.c (see its banner and pg_infer.h
 * for custom_private, custom_exprs and custom_scan_tlist).  The scan tuple
 * is the child's columns followed by one column per batched call; the
 * node's own quals and target list (ExecScan) run over it.
 *
 * Execution: a ring of infer.max_inflight batch slots, each with its own
 * memory context, reset when its rows have all been returned (which also
 * forgets its requests, see client.c).  A slot is filled with rows from
 * the child (copied as minimal tuples, with each call's image argument
 * copied out) until infer.batch_size rows or infer.batch_bytes bytes.  So
 * that a LIMIT above pays for few rows, the batches of a scan hold 1, 2,
 * 4, ... rows, the rows read ahead never outnumber the rows already
 * returned, and a LIMIT right above (its count and offset are in
 * custom_exprs) caps the rows read.  Each call of the slot is one
 * MSG_RUN_FRAGMENT request, to the next worker in round-robin order.  The
 * oldest slot is waited for (latch + socket, so cancel and
 * statement_timeout work, and a cancel goes to the worker) and its rows
 * are returned in order; a row the worker rejected raises its ERROR, or
 * with infer.on_error = null a WARNING and NULL, when that row is
 * returned, so the rows before it come out as they would one by one.
 *
 * Everything runs in the backend's main thread.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* One batched ML call of the node. */
typedef struct BatchCall
{
	InferFunction fn;
	ExprState  *img;			/* the image argument, over the child's row */
	ExprState  *model_expr;		/* predict/classify: a Const or Param */
	bool		all_null;		/* the model name is NULL: every result is */
	char	   *model;			/* predict/classify: the model's name */
	bool		ready;			/* frag set up */
	InferFragment frag;			/* set up at the first row sent, in scan_cxt */
} BatchCall;

/* One call's request within a batch. */
typedef struct BatchPart
{
	int			nsent;			/* rows sent (non-NULL images) */
	int		   *row_of;			/* batch row of each row sent */
	uint64	   *row_ids;
	const void **payloads;
	size_t	   *lens;
	InferWorker *worker;		/* where it went */
	InferRequest *req;			/* NULL when nothing was sent */
	InferRow   *rows;			/* answers, once received */
	Datum	   *values;			/* per batch row */
	bool	   *isnull;
	InferRow  **failed;			/* per batch row: the rejected row, or NULL */
} BatchPart;

/* One batch: a slot of the ring. */
typedef struct BatchSlot
{
	MemoryContext cxt;			/* everything of the batch */
	int			nrows;
	int			next;			/* next row to return */
	bool		received;		/* answers collected */
	MinimalTuple *tuples;		/* the child's rows */
	const void ***imgs;			/* [call][row] image bytes, NULL for NULL */
	size_t	  **img_lens;
	BatchPart  *parts;			/* per call */
} BatchSlot;

typedef struct InferBatchState
{
	CustomScanState css;
	int			nchild;			/* child columns in the scan tuple */
	int			ncalls;
	BatchCall  *calls;
	ExprState  *limit_count;	/* LIMIT right above, or NULL */
	ExprState  *limit_offset;
	MemoryContext scan_cxt;		/* per scan; parent of the slots' */
	ExprContext *arg_econtext;	/* evaluates image arguments */
	TupleTableSlot *child_copy; /* a stored child row, deformed */

	bool		prepared;		/* fragments and ring set up */
	bool		started;		/* this (re)scan's state set up */
	BatchSlot  *ring;
	int			ring_size;
	int			head;			/* oldest batch in flight */
	int			ninflight;
	int			next_size;		/* rows of the next batch (ramp-up) */
	int64		bound;			/* most rows to read from the child; -1 */
	int64		pulled;			/* rows read from the child */
	int64		consumed;		/* rows handed to ExecScan */
	bool		child_done;

	/* EXPLAIN ANALYZE */
	int64		nbatches;
	int64		nrows_sent;
	int64		bytes_sent;
	double		wait_ms;
} InferBatchState;

static Node *infer_batch_create(CustomScan *cscan);
static void infer_batch_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *infer_batch_exec(CustomScanState *node);
static void infer_batch_end(CustomScanState *node);
static void infer_batch_rescan(CustomScanState *node);
static void infer_batch_explain(CustomScanState *node, List *ancestors,
								ExplainState *es);

static const CustomScanMethods scan_methods = {
	.CustomName = "InferBatch",
	.CreateCustomScanState = infer_batch_create,
};

static const CustomExecMethods exec_methods = {
	.CustomName = "InferBatch",
	.BeginCustomScan = infer_batch_begin,
	.ExecCustomScan = infer_batch_exec,
	.EndCustomScan = infer_batch_end,
	.ReScanCustomScan = infer_batch_rescan,
	.ExplainCustomScan = infer_batch_explain,
};

/* The plan methods, for the planner's CustomScan nodes. */
const CustomScanMethods *
InferBatchMethods(void)
{
	return &scan_methods;
}

/*
 * Registers the custom scan by name, so that plans read back with
 * stringToNode find their methods.  Called once from _PG_init.
 */
void
InferBatchInit(void)
{
	RegisterCustomScanMethods(&scan_methods);
}

/* CreateCustomScanState: the node's state, filled in by Begin. */
static Node *
infer_batch_create(CustomScan *cscan)
{
	InferBatchState *st = palloc0(sizeof(InferBatchState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &exec_methods;
	return (Node *) st;
}

/*
 * BeginCustomScan: starts the child (the plan's lefttree) and prepares
 * the calls' argument expressions.  Nothing is sent before the first row
 * is asked for, so EXPLAIN without ANALYZE talks to no worker.
 */
static void
infer_batch_begin(CustomScanState *node, EState *estate, int eflags)
{
	InferBatchState *st = (InferBatchState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *exprs = cscan->custom_exprs;

	outerPlanState(st) = ExecInitNode(outerPlan(cscan), estate, eflags);

	st->nchild = intVal(list_nth(cscan->custom_private,
								 INFERBATCH_PRIVATE_NCHILD));
	st->ncalls = intVal(list_nth(cscan->custom_private,
								 INFERBATCH_PRIVATE_NCALLS));
	if (list_length(exprs) != st->ncalls + 2)
		elog(ERROR, "pg_infer: InferBatch has %d expressions for %d calls",
			 list_length(exprs), st->ncalls);
	st->calls = palloc0(sizeof(BatchCall) * Max(st->ncalls, 1));
	for (int i = 0; i < st->ncalls; i++)
	{
		FuncExpr   *call = list_nth_node(FuncExpr, exprs, i);
		BatchCall  *bc = &st->calls[i];

		bc->fn = InferPlannerFunction(call->funcid);
		switch (bc->fn)
		{
			case INFER_FN_OCR:
			case INFER_FN_DETECT_TEXT:
				bc->img = ExecInitExpr(linitial(call->args), &node->ss.ps);
				break;
			case INFER_FN_PREDICT:
			case INFER_FN_CLASSIFY:
				bc->model_expr = ExecInitExpr(linitial(call->args), &node->ss.ps);
				bc->img = ExecInitExpr(lsecond(call->args), &node->ss.ps);
				break;
			case INFER_FN_NONE:
				elog(ERROR, "pg_infer: function %u of an InferBatch node is no ML function",
					 call->funcid);
		}
	}
	st->limit_count = ExecInitExpr(list_nth(exprs, st->ncalls), &node->ss.ps);
	st->limit_offset = ExecInitExpr(list_nth(exprs, st->ncalls + 1),
									&node->ss.ps);

	st->scan_cxt = AllocSetContextCreate(CurrentMemoryContext, "InferBatch scan",
										 ALLOCSET_DEFAULT_SIZES);
	st->arg_econtext = CreateExprContext(estate);
	st->child_copy = ExecInitExtraTupleSlot(estate,
											ExecGetResultType(outerPlanState(st)),
											&TTSOpsMinimalTuple);
}

/*
 * Evaluates expr (a Const, a Param or NULL) as an int8 LIMIT value;
 * returns -1 for NULL.
 */
static int64
eval_limit(InferBatchState *st, ExprState *expr)
{
	bool		isnull;
	Datum		d;

	if (expr == NULL)
		return -1;
	d = ExecEvalExprSwitchContext(expr, st->css.ss.ps.ps_ExprContext, &isnull);
	if (isnull)
		return -1;
	return Max(DatumGetInt64(d), 0);
}

/*
 * Evaluates the calls' model names and sets up the ring (once per
 * execution); then this scan's state: ramp-up from 1 row, the row bound
 * of a LIMIT right above.  The models are read from the registry when
 * the first row is sent (see fill_and_send), so that, as one row at a
 * time, an unknown model is no error for a scan without rows.
 */
static void
start_scan(InferBatchState *st)
{
	if (!st->prepared)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(st->scan_cxt);

		for (int i = 0; i < st->ncalls; i++)
		{
			BatchCall  *bc = &st->calls[i];

			if (bc->model_expr != NULL)
			{
				bool		isnull;
				Datum		d = ExecEvalExprSwitchContext(bc->model_expr,
														  st->css.ss.ps.ps_ExprContext,
														  &isnull);

				if (isnull)
				{
					/* the functions are STRICT */
					bc->all_null = true;
					continue;
				}
				bc->model = TextDatumGetCString(d);
			}
		}
		st->ring_size = infer_max_inflight;
		st->ring = palloc0(sizeof(BatchSlot) * st->ring_size);
		for (int i = 0; i < st->ring_size; i++)
			st->ring[i].cxt = AllocSetContextCreate(st->scan_cxt,
													"InferBatch batch",
													ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(oldcxt);
		st->prepared = true;
	}

	st->head = 0;
	st->ninflight = 0;
	st->next_size = 1;
	st->pulled = 0;
	st->consumed = 0;
	st->child_done = false;
	st->bound = eval_limit(st, st->limit_count);
	if (st->bound >= 0)
	{
		int64		offset = eval_limit(st, st->limit_offset);

		if (offset > 0)
			st->bound += offset;
	}
	st->started = true;
}

/* Empties a slot: its memory and its requests (see client.c) go. */
static void
slot_clear(BatchSlot *slot)
{
	MemoryContextReset(slot->cxt);
	slot->nrows = 0;
	slot->next = 0;
	slot->received = false;
	slot->tuples = NULL;
	slot->imgs = NULL;
	slot->img_lens = NULL;
	slot->parts = NULL;
}

/*
 * Fills the next free slot with rows of the child and sends one request
 * per call.  Returns false (and sets child_done) when the child had no
 * more rows (or the bound was reached) before the first row.
 */
static bool
fill_and_send(InferBatchState *st)
{
	BatchSlot  *slot = &st->ring[(st->head + st->ninflight) % st->ring_size];
	PlanState  *child = outerPlanState(st);
	ExprContext *econtext = st->arg_econtext;
	MemoryContext oldcxt;
	int			target = Min(st->next_size, infer_batch_size);
	size_t		bytes = 0;

	st->next_size = Min(st->next_size * 2, infer_batch_size);
	slot_clear(slot);
	oldcxt = MemoryContextSwitchTo(slot->cxt);
	slot->tuples = palloc(sizeof(MinimalTuple) * target);
	slot->imgs = palloc(sizeof(void **) * Max(st->ncalls, 1));
	slot->img_lens = palloc(sizeof(size_t *) * Max(st->ncalls, 1));
	for (int c = 0; c < st->ncalls; c++)
	{
		slot->imgs[c] = palloc0(sizeof(void *) * target);
		slot->img_lens[c] = palloc0(sizeof(size_t) * target);
	}

	while (slot->nrows < target && bytes < (size_t) infer_batch_bytes)
	{
		TupleTableSlot *row;
		int			r = slot->nrows;

		if (st->bound >= 0 && st->pulled >= st->bound)
		{
			st->child_done = true;
			break;
		}
		MemoryContextSwitchTo(oldcxt);
		row = ExecProcNode(child);
		MemoryContextSwitchTo(slot->cxt);
		if (TupIsNull(row))
		{
			st->child_done = true;
			break;
		}
		st->pulled++;
		slot->tuples[r] = ExecCopySlotMinimalTuple(row);

		econtext->ecxt_outertuple = row;
		for (int c = 0; c < st->ncalls; c++)
		{
			BatchCall  *bc = &st->calls[c];
			bool		isnull;
			Datum		d;
			bytea	   *img;
			size_t		len;
			char	   *copy;

			if (bc->all_null)
				continue;
			d = ExecEvalExprSwitchContext(bc->img, econtext, &isnull);
			if (isnull)
				continue;
			/* detoast in per-row memory: only the bytes are kept */
			MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			img = DatumGetByteaPP(d);
			MemoryContextSwitchTo(slot->cxt);
			len = VARSIZE_ANY_EXHDR(img);
			copy = palloc(Max(len, 1));
			memcpy(copy, VARDATA_ANY(img), len);
			slot->imgs[c][r] = copy;
			slot->img_lens[c][r] = len;
			bytes += len;
		}
		ResetExprContext(econtext);
		slot->nrows++;
	}

	if (slot->nrows == 0)
	{
		MemoryContextSwitchTo(oldcxt);
		slot_clear(slot);
		return false;
	}

	slot->parts = palloc0(sizeof(BatchPart) * Max(st->ncalls, 1));
	for (int c = 0; c < st->ncalls; c++)
	{
		BatchCall  *bc = &st->calls[c];
		BatchPart  *part = &slot->parts[c];
		size_t		sent = 0;

		part->values = palloc0(sizeof(Datum) * slot->nrows);
		part->isnull = palloc(sizeof(bool) * slot->nrows);
		part->failed = palloc0(sizeof(InferRow *) * slot->nrows);
		part->row_of = palloc(sizeof(int) * slot->nrows);
		part->row_ids = palloc(sizeof(uint64) * slot->nrows);
		part->payloads = palloc(sizeof(void *) * slot->nrows);
		part->lens = palloc(sizeof(size_t) * slot->nrows);
		for (int r = 0; r < slot->nrows; r++)
		{
			part->isnull[r] = true;
			if (slot->imgs[c][r] == NULL)
				continue;
			part->row_of[part->nsent] = r;
			part->row_ids[part->nsent] = r + 1;
			part->payloads[part->nsent] = slot->imgs[c][r];
			part->lens[part->nsent] = slot->img_lens[c][r];
			part->nsent++;
		}
		if (part->nsent == 0)
			continue;
		if (!bc->ready)
		{
			MemoryContext cxt = MemoryContextSwitchTo(st->scan_cxt);

			InferFragmentInit(&bc->frag, bc->fn, bc->model);
			bc->ready = true;
			MemoryContextSwitchTo(cxt);
		}
		InferFragmentPickWorker(&bc->frag);
		InferFragmentPushContext(&bc->frag);
		part->req = InferFragmentSend(&bc->frag, part->nsent, part->row_ids,
									  part->payloads, part->lens, &sent);
		InferFragmentPopContext(&bc->frag);
		part->worker = bc->frag.worker;
		st->bytes_sent += sent;
	}
	MemoryContextSwitchTo(oldcxt);

	st->nbatches++;
	st->nrows_sent += slot->nrows;
	st->ninflight++;
	return true;
}

/*
 * Waits for the answers of slot's requests and turns each row's answer
 * into its value (in the slot's context); rejected rows are kept for
 * emit_row.  Whole-request and transport errors are raised here.
 */
static void
receive(InferBatchState *st, BatchSlot *slot)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(slot->cxt);

	for (int c = 0; c < st->ncalls; c++)
	{
		BatchCall  *bc = &st->calls[c];
		BatchPart  *part = &slot->parts[c];
		InferReply *reply;
		instr_time	start;
		instr_time	waited;

		if (part->req == NULL)
			continue;
		bc->frag.worker = part->worker;
		InferFragmentPushContext(&bc->frag);
		INSTR_TIME_SET_CURRENT(start);
		reply = InferClientWait(part->req);
		INSTR_TIME_SET_CURRENT(waited);
		INSTR_TIME_SUBTRACT(waited, start);
		st->wait_ms += INSTR_TIME_GET_MILLISEC(waited);

		part->rows = palloc(sizeof(InferRow) * part->nsent);
		InferFragmentCollect(&bc->frag, reply, part->nsent, part->row_ids,
							 part->rows);
		for (int i = 0; i < part->nsent; i++)
		{
			int			r = part->row_of[i];

			if (part->rows[i].result->ok)
			{
				part->values[r] = InferRowDatum(&bc->frag, &part->rows[i]);
				part->isnull[r] = false;
			}
			else
				part->failed[r] = &part->rows[i];
		}
		InferFragmentPopContext(&bc->frag);
	}
	MemoryContextSwitchTo(oldcxt);
	slot->received = true;
}

/*
 * Stores row r of slot, with its calls' values, in the scan tuple slot and
 * returns it; a rejected row raises its error now (ERROR, or a WARNING and
 * NULL with infer.on_error = null).
 */
static TupleTableSlot *
emit_row(InferBatchState *st, BatchSlot *slot, int r)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;

	for (int c = 0; c < st->ncalls; c++)
	{
		BatchPart  *part = &slot->parts[c];
		BatchCall  *bc = &st->calls[c];

		if (part->failed[r] == NULL)
			continue;
		bc->frag.worker = part->worker;
		InferFragmentPushContext(&bc->frag);
		InferRowReportError(part->failed[r],
							infer_on_error == INFER_ON_ERROR_NULL ?
							WARNING : ERROR);
		InferFragmentPopContext(&bc->frag);
	}

	ExecClearTuple(scan);
	ExecStoreMinimalTuple(slot->tuples[r], st->child_copy, false);
	slot_getallattrs(st->child_copy);
	memcpy(scan->tts_values, st->child_copy->tts_values,
		   sizeof(Datum) * st->nchild);
	memcpy(scan->tts_isnull, st->child_copy->tts_isnull,
		   sizeof(bool) * st->nchild);
	for (int c = 0; c < st->ncalls; c++)
	{
		scan->tts_values[st->nchild + c] = slot->parts[c].values[r];
		scan->tts_isnull[st->nchild + c] = slot->parts[c].isnull[r];
	}
	return ExecStoreVirtualTuple(scan);
}

/*
 * ExecScan access method: the next row in input order, or an empty slot
 * at the end.  Keeps up to ring_size batches in flight.
 */
static TupleTableSlot *
infer_batch_next(ScanState *ss)
{
	InferBatchState *st = (InferBatchState *) ss;

	if (!st->started)
		start_scan(st);
	for (;;)
	{
		if (st->ninflight > 0 && st->ring[st->head].received)
		{
			BatchSlot  *head = &st->ring[st->head];

			if (head->next < head->nrows)
			{
				st->consumed++;
				return emit_row(st, head, head->next++);
			}
			slot_clear(head);
			st->head = (st->head + 1) % st->ring_size;
			st->ninflight--;
			continue;
		}
		/*
		 * Read ahead at most as many rows as were consumed: a LIMIT above
		 * a filter then does at most about twice the rows it needs.
		 */
		while (st->ninflight < st->ring_size && !st->child_done &&
			   st->pulled - st->consumed < Max(st->consumed, 1))
			if (!fill_and_send(st))
				break;
		if (st->ninflight == 0)
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		receive(st, &st->ring[st->head]);
	}
}

/* ExecScan recheck method: InferBatch is never under EvalPlanQual. */
static bool
infer_batch_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/* ExecCustomScan: rows through the node's quals and projection. */
static TupleTableSlot *
infer_batch_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, infer_batch_next, infer_batch_recheck);
}

/* Forgets every batch in flight (their requests are cancelled). */
static void
forget_batches(InferBatchState *st)
{
	if (st->ring != NULL)
		for (int i = 0; i < st->ring_size; i++)
			slot_clear(&st->ring[i]);
	st->ninflight = 0;
	st->head = 0;
	st->started = false;
}

/* EndCustomScan: cancels what is in flight, ends the child. */
static void
infer_batch_end(CustomScanState *node)
{
	InferBatchState *st = (InferBatchState *) node;

	forget_batches(st);
	MemoryContextDelete(st->scan_cxt);
	st->scan_cxt = NULL;
	st->ring = NULL;
	ExecEndNode(outerPlanState(st));
}

/*
 * ReScanCustomScan: cancels what is in flight and starts over (ramp-up
 * and LIMIT bound included); the child is rescanned unless a changed
 * parameter will make ExecProcNode do it.
 */
static void
infer_batch_rescan(CustomScanState *node)
{
	InferBatchState *st = (InferBatchState *) node;

	forget_batches(st);
	if (outerPlanState(st)->chgParam == NULL)
		ExecReScan(outerPlanState(st));
}

/*
 * Appends "infer.classify(ppocr_cls)" for call c to buf: the function and
 * its model (a parameter as $n; infer.ocr and infer.detect_text name the
 * models of the infer.ocr_* settings).
 */
static void
describe_call(InferBatchState *st, FuncExpr *call, StringInfo buf)
{
	InferFunction fn = InferPlannerFunction(call->funcid);

	appendStringInfo(buf, "%s(", InferFunctionName(fn));
	switch (fn)
	{
		case INFER_FN_OCR:
			appendStringInfo(buf, "%s, %s%s%s", infer_ocr_detector,
							 infer_ocr_classifier,
							 infer_ocr_classifier[0] ? ", " : "",
							 infer_ocr_recognizer);
			break;
		case INFER_FN_DETECT_TEXT:
			appendStringInfoString(buf, infer_ocr_detector);
			break;
		case INFER_FN_PREDICT:
		case INFER_FN_CLASSIFY:
			{
				Node	   *model = linitial(call->args);

				if (IsA(model, Const) && !((Const *) model)->constisnull)
					appendStringInfoString(buf,
										   TextDatumGetCString(((Const *) model)->constvalue));
				else if (IsA(model, Param))
					appendStringInfo(buf, "$%d", ((Param *) model)->paramid);
				else
					appendStringInfoString(buf, "NULL");
				break;
			}
		case INFER_FN_NONE:
			break;
	}
	appendStringInfoChar(buf, ')');
}

/*
 * ExplainCustomScan: the fragments, batch size and in-flight limit; with
 * ANALYZE, the batches sent, their rows and mean size, the time spent
 * waiting for replies and the bytes sent.
 */
static void
infer_batch_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	InferBatchState *st = (InferBatchState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < st->ncalls; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		describe_call(st, list_nth_node(FuncExpr, cscan->custom_exprs, i),
					  &buf);
	}
	ExplainPropertyText("Fragments", buf.data, es);
	ExplainPropertyInteger("Batch Size", NULL, infer_batch_size, es);
	ExplainPropertyInteger("Max In Flight", NULL, infer_max_inflight, es);
	if (st->limit_count != NULL)
		ExplainPropertyText("Row Bound", "LIMIT", es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Batches", NULL, st->nbatches, es);
		ExplainPropertyInteger("Rows Sent", NULL, st->nrows_sent, es);
		ExplainPropertyFloat("Mean Batch Size", NULL,
							 st->nbatches > 0 ?
							 (double) st->nrows_sent / st->nbatches : 0.0,
							 1, es);
		ExplainPropertyFloat("Reply Wait", "ms", st->wait_ms, 3, es);
		ExplainPropertyInteger("Bytes Sent", "bytes", st->bytes_sent, es);
	}
	pfree(buf.data);
}
