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
 * the child (copied as minimal tuples, with each group's input argument
 * copied out) until infer.batch_size rows or infer.batch_bytes bytes.  So
 * that a LIMIT above pays for few rows, the batches of a scan hold 1, 2,
 * 4, ... rows, the rows read ahead never outnumber the rows already
 * returned, and a LIMIT right above (its count and offset are in
 * custom_exprs) caps the rows read.  A slow model's batches stay small
 * (batch_rows_cap): the ring's batches, as the last answer measured
 * them, fit in a quarter of infer.timeout, so that a worker that runs
 * them, even merged into one run, answers well within it.  The calls
 * whose input expressions are equal() form a group (see BatchCall), and each group of the slot is
 * one MSG_RUN_FRAGMENT request that carries the input once and a fragment
 * per call (a chained call's fragment has its stages), to the worker
 * that infer.placement chooses for it (placement.c).  The
 * oldest slot is waited for (latch + socket, so cancel and
 * statement_timeout work, and a cancel goes to the worker) and its rows
 * are returned in order; a row the worker rejected raises its ERROR, or
 * with infer.on_error = null a WARNING and NULL, when that row is
 * returned, so the rows before it come out as they would one by one.
 * A request whose worker is lost (08006: it went away, or hangs and the
 * pool finds it down) is sent again, whole, to another worker that is not
 * down (send_part, wait_part), so its rows still come back once; with no
 * such worker the loss is the statement's error.  Re-sends are bounded
 * (infer.retries), and a request lost by two workers (a poison row that
 * makes every worker exit or drop it) is its rows' error, naming them.
 *
 * Parallel query: under a Gather, each process that runs the partial plan
 * (the parallel workers, and the leader when it participates) has its own
 * InferBatch state and batches the rows its child gives it.  The planner
 * marks such a node parallel aware (planner.c) only so that it gets
 * dynamic shared memory: one BatchStats per parallel worker, which the
 * worker's counters point into.  The leader copies them out when the
 * segment is detached (after the workers have finished) and EXPLAIN
 * ANALYZE shows the sums, and the batches of each process.  A memory
 * context callback cancels the copy when the node's memory goes first.
 *
 * infer.stats and infer.progress (stats.c): each (re)scan is one call in
 * infer.stats (InferStatsNewCall, made current before each send); the
 * scan reports its rows and batches to its backend's infer.progress slot
 * (InferProgressAdd) from start_scan until forget_batches, or until the
 * scan's memory goes (an ERROR), whichever comes first.
 *
 * Everything runs in the backend's main thread.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "storage/dsm.h"
#include "storage/shm_toc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* Distinct workers a request may lose before its rows are the error. */
#define INFERBATCH_MAX_LOST_WORKERS 2
/* most workers a call's requests avoid for lacking a file or memory (58P01, 53200) */
#define INFERBATCH_MAX_LACKING 8
/*
 * How long a call's requests avoid a worker that answered 53200: its
 * memory may have been taken by other work only for a while (a worker
 * whose --gpu-memory cap is below the model answers so again, and is
 * avoided again).  58P01, a missing file, is avoided for the whole scan.
 */
#define INFERBATCH_LACKING_MEMORY_MS 2000

/* Inference workers with their own counters in BatchStats; more share one. */
#define INFERBATCH_STATS_WORKERS 8

/* Requests sent to one inference worker (EXPLAIN ANALYZE). */
typedef struct BatchWorkerCount
{
	char		name[NAMEDATALEN];	/* worker name, cut to fit; "" for others */
	int64		requests;
	int64		rows;
} BatchWorkerCount;

/*
 * One process's EXPLAIN ANALYZE counters, fixed-size so that it can live
 * in dynamic shared memory (see the banner).
 */
typedef struct BatchStats
{
	int64		nbatches;		/* batches filled and sent */
	int64		nrows;			/* rows in them */
	int64		bytes;			/* image bytes sent */
	int64		rows_cached;	/* rows the workers took from their input
								 * cache (not sent) */
	int64		input_resends;	/* MSG_NEED_INPUT round trips */
	double		wait_ms;		/* waiting for replies */
	double		compute_ms;		/* the workers' compute, as they report it */
	int			nworkers;		/* entries of workers[] in use */
	BatchWorkerCount workers[INFERBATCH_STATS_WORKERS + 1]; /* last: others */
} BatchStats;

/* The shared memory of a parallel-aware node: one BatchStats per worker. */
typedef struct BatchShared
{
	int			nworkers;
	BatchStats	stats[FLEXIBLE_ARRAY_MEMBER];
} BatchShared;

/* Most stages of one chained call (see BatchCall). */
#define INFERBATCH_MAX_STAGES 4

/*
 * One batched ML call of the node.  A chained call (the planner's nested
 * calls, infer.embed('minilm', infer.ocr(img))) has several stages, the
 * outermost first: stage 0 is the call itself, stage k + 1 the call that
 * is stage k's input argument; the innermost stage's argument is the
 * input sent.  The calls whose input expressions are equal() form a
 * group whose first member (the leader) sends one request for all of
 * them, carrying the input once.
 */
typedef struct BatchCall
{
	InferFunction fn;			/* stage 0's function */
	int			nstages;
	InferFunction stage_fn[INFERBATCH_MAX_STAGES];
	ExprState  *stage_model_expr[INFERBATCH_MAX_STAGES];	/* Const or Param,
															 * or NULL */
	char	   *stage_model[INFERBATCH_MAX_STAGES];
	Node	   *input;			/* the innermost argument (plan expression) */
	ExprState  *img;			/* it, over the child's row: an image; text
								 * when the innermost stage takes text */
	bool		text_input;		/* the innermost stage is infer.embed or
								 * infer.classify(text, text) */
	bool		all_null;		/* a model name is NULL: every result is */
	int			leader;			/* the call whose request carries this one,
								 * unless the group is split */
	int			nmembers;		/* leader: calls in the group (itself too) */
	int		   *members;		/* leader: their indexes, in fragment order */
	bool		ready;			/* frag set up */
	bool		progress_noted; /* its models are in infer.progress */
	InferFragment frag;			/* set up at the first row sent, in scan_cxt */
	/* sender: workers that answered 58P01 or 53200 (a file of its models
	 * missing there, or the memory for them), avoided by its requests until
	 * lacking_until (0: for the rest of the scan); names in scan_cxt */
	int			nlacking;
	const char *lacking_on[INFERBATCH_MAX_LACKING];
	TimestampTz lacking_until[INFERBATCH_MAX_LACKING];
} BatchCall;

/*
 * One call's part of a batch.  The request fields (rows sent, the calls
 * the request carries and the request) are its sender's: the group
 * leader's, which the members read, or, when placement split the group
 * (InferPlacementSplits), each member's own, over the leader's rows.
 */
typedef struct BatchPart
{
	int			ncarried;		/* sender: calls its request carries */
	int		   *carried;		/* sender: their indexes, the sender first,
								 * each its fragment in that order */
	int			nsent;			/* rows sent (non-NULL images) */
	int64		first_row;		/* the child's row number of batch row 0 */
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
	int			nlost;			/* distinct workers lost while they held it */
	int			early;			/* sends made when another request found
								 * its worker lost (resend_held) */
	const char *lost_on[INFERBATCH_MAX_LOST_WORKERS];	/* their names */
	bool		to_lacking;		/* it went to a worker its sender avoided
								 * (lacking_avoided): no other was up */
} BatchPart;

/* One batch: a slot of the ring. */
typedef struct BatchSlot
{
	MemoryContext cxt;			/* everything of the batch */
	int			nrows;
	int64		first_row;		/* the child's row number (from 1) of row 0 */
	int			next;			/* next row to return */
	bool		received;		/* answers collected */
	MinimalTuple *tuples;		/* the child's rows */
	const void ***imgs;			/* [call][row] input bytes (group leaders
								 * only), NULL for NULL */
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
	double		row_ms;			/* the workers' compute a row, as the last
								 * answer showed (0: none yet) */
	int64		bound;			/* most rows to read from the child; -1 */
	int64		pulled;			/* rows read from the child */
	int64		consumed;		/* rows handed to ExecScan */
	bool		child_done;

	/* infer.stats and infer.progress (stats.c) */
	uint64		stats_call;		/* this (re)scan, one call in infer.stats */
	InferProgressScan progress;

	/* EXPLAIN ANALYZE */
	BatchStats	local;			/* this process's counters, unless shared */
	BatchStats *stats;			/* &local, or a parallel worker's slot */
	dsm_segment *seg;			/* leader: the segment of shared, attached */
	BatchShared *shared;		/* leader: the workers' counters, or NULL */
	BatchStats *worker_stats;	/* leader: copied from shared at detach */
	int			nworker_stats;
	MemoryContextCallback forget_shared;	/* see the banner */
} InferBatchState;

static Node *infer_batch_create(CustomScan *cscan);
static void infer_batch_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *infer_batch_exec(CustomScanState *node);
static void infer_batch_end(CustomScanState *node);
static void infer_batch_rescan(CustomScanState *node);
static void infer_batch_explain(CustomScanState *node, List *ancestors,
								ExplainState *es);
static Size infer_batch_estimate_dsm(CustomScanState *node,
									 ParallelContext *pcxt);
static void infer_batch_init_dsm(CustomScanState *node, ParallelContext *pcxt,
								 void *coordinate);
static void infer_batch_reinit_dsm(CustomScanState *node,
								   ParallelContext *pcxt, void *coordinate);
static void infer_batch_init_worker(CustomScanState *node, shm_toc *toc,
									void *coordinate);
static void stats_add(BatchStats *a, const BatchStats *b);

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
	.EstimateDSMCustomScan = infer_batch_estimate_dsm,
	.InitializeDSMCustomScan = infer_batch_init_dsm,
	.ReInitializeDSMCustomScan = infer_batch_reinit_dsm,
	.InitializeWorkerCustomScan = infer_batch_init_worker,
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
	st->stats = &st->local;
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
		for (;;)
		{
			InferFunction fn = InferPlannerFunction(call->funcid);
			Node	   *arg;
			int			k = bc->nstages;

			if (k >= INFERBATCH_MAX_STAGES)
				elog(ERROR, "pg_infer: InferBatch call %d has more than %d stages",
					 i, INFERBATCH_MAX_STAGES);
			bc->stage_fn[k] = fn;
			bc->nstages++;
			InferCheckExecute(call->funcid);
			switch (fn)
			{
				case INFER_FN_OCR:
				case INFER_FN_DETECT_TEXT:
					arg = linitial(call->args);
					break;
				case INFER_FN_PREDICT:
				case INFER_FN_CLASSIFY:
				case INFER_FN_EMBED:
				case INFER_FN_CLASSIFY_TEXT:
					bc->stage_model_expr[k] = ExecInitExpr(linitial(call->args),
														   &node->ss.ps);
					arg = lsecond(call->args);
					break;
				default:
					elog(ERROR, "pg_infer: function %u of an InferBatch node is no ML function",
						 call->funcid);
			}
			/* an ML call as the argument is the stage before (a chain) */
			if (IsA(arg, FuncExpr) &&
				InferPlannerFunction(((FuncExpr *) arg)->funcid) != INFER_FN_NONE)
			{
				call = (FuncExpr *) arg;
				continue;
			}
			bc->input = arg;
			bc->text_input = fn == INFER_FN_EMBED || fn == INFER_FN_CLASSIFY_TEXT;
			bc->img = ExecInitExpr((Expr *) arg, &node->ss.ps);
			break;
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
 * Whether calls a and b send the same input (see BatchCall): equal()
 * input expressions that are not volatile (InferExprIsVolatile: each
 * occurrence of random() is its own value).
 */
static bool
same_input(const BatchCall *a, const BatchCall *b)
{
	return a->text_input == b->text_input && equal(a->input, b->input) &&
		!InferExprIsVolatile((Node *) a->input);
}

/*
 * Groups the calls that send something (model names not NULL) by their
 * input expression (equal()): each group's first call is its leader,
 * which sends one request carrying the input once and a fragment per
 * member (see BatchCall).  A group holds at most
 * PGINFER_MAX_REQUEST_FRAGMENTS calls (what a worker accepts in one
 * request: common/protocol.h); a call past that leads a group of its own.
 */
static void
group_calls(InferBatchState *st)
{
	for (int i = 0; i < st->ncalls; i++)
	{
		BatchCall  *bc = &st->calls[i];

		bc->leader = i;
		bc->nmembers = 0;
		bc->members = palloc(sizeof(int) * st->ncalls);
		if (bc->all_null)
			continue;
		for (int j = 0; j < i; j++)
		{
			BatchCall  *lc = &st->calls[j];

			if (lc->all_null || lc->leader != j || !same_input(lc, bc) ||
				lc->nmembers >= PGINFER_MAX_REQUEST_FRAGMENTS)
				continue;
			bc->leader = j;
			break;
		}
		st->calls[bc->leader].members[st->calls[bc->leader].nmembers++] = i;
	}
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

			for (int k = 0; k < bc->nstages; k++)
			{
				bool		isnull;
				Datum		d;

				if (bc->stage_model_expr[k] == NULL)
					continue;
				d = ExecEvalExprSwitchContext(bc->stage_model_expr[k],
											  st->css.ss.ps.ps_ExprContext,
											  &isnull);
				if (isnull)
				{
					/* the functions are STRICT */
					bc->all_null = true;
					continue;
				}
				bc->stage_model[k] = TextDatumGetCString(d);
			}
		}
		group_calls(st);
		st->ring_size = infer_max_inflight;
		st->ring = palloc0(sizeof(BatchSlot) * st->ring_size);
		for (int i = 0; i < st->ring_size; i++)
			st->ring[i].cxt = AllocSetContextCreate(st->scan_cxt,
													"InferBatch batch",
													ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(oldcxt);
		st->prepared = true;
	}

	st->stats_call = InferStatsNewCall();
	for (int i = 0; i < st->ncalls; i++)
		st->calls[i].progress_noted = false;
	InferProgressStart(&st->progress, st->scan_cxt,
					   st->css.ss.ps.plan->plan_rows);
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
 * Counts a request of nrows rows and bytes image bytes sent to worker in
 * stats (see BatchStats): per worker name, the workers after the first
 * INFERBATCH_STATS_WORKERS together.
 */
static void
count_request(BatchStats *stats, const InferWorker *worker, int nrows,
			  size_t bytes)
{
	BatchWorkerCount *wc = NULL;

	stats->bytes += bytes;
	for (int i = 0; i < stats->nworkers && wc == NULL; i++)
		if (strncmp(stats->workers[i].name, worker->name, NAMEDATALEN - 1) == 0)
			wc = &stats->workers[i];
	if (wc == NULL && stats->nworkers < INFERBATCH_STATS_WORKERS)
	{
		wc = &stats->workers[stats->nworkers++];
		strlcpy(wc->name, worker->name, NAMEDATALEN);
	}
	if (wc == NULL)
		wc = &stats->workers[INFERBATCH_STATS_WORKERS];
	wc->requests++;
	wc->rows += nrows;
}

/*
 * Sets up bc's fragment, and for a chained call the stages before it,
 * from the registry in the scan's memory (see InferFragmentInit).
 */
static void
setup_fragment(InferBatchState *st, BatchCall *bc)
{
	MemoryContext cxt = MemoryContextSwitchTo(st->scan_cxt);
	InferFragment *f = &bc->frag;

	InferFragmentInit(f, bc->stage_fn[0], bc->stage_model[0]);
	for (int k = 1; k < bc->nstages; k++)
		f = InferFragmentChain(f, bc->stage_fn[k], bc->stage_model[k]);
	bc->ready = true;
	MemoryContextSwitchTo(cxt);
}

/*
 * The fragments of the calls part's request carries (see BatchPart), set
 * up first if need be, in the current memory context.
 */
static InferFragment **
carried_frags(InferBatchState *st, const BatchPart *part)
{
	InferFragment **frags = palloc(sizeof(InferFragment *) * part->ncarried);

	for (int m = 0; m < part->ncarried; m++)
	{
		BatchCall  *mc = &st->calls[part->carried[m]];

		if (!mc->ready)
			setup_fragment(st, mc);
		frags[m] = &mc->frag;
	}
	return frags;
}

/*
 * The size of part's largest row, in bytes; its row number (the child's,
 * from 1) in *row when row is not NULL (0 for a part without rows).
 */
static size_t
part_largest(const BatchPart *part, int64 *row)
{
	size_t		largest = 0;

	if (row != NULL)
		*row = 0;
	for (int i = 0; i < part->nsent; i++)
	{
		if (i > 0 && part->lens[i] <= largest)
			continue;
		largest = part->lens[i];
		if (row != NULL)
			*row = part->first_row + part->row_of[i];
	}
	return largest;
}

/* The index of worker name in the sender bc's lacking_on, or nlacking. */
static int
lacking_index(const BatchCall *bc, const char *name)
{
	int			i = 0;

	while (i < bc->nlacking && strcmp(bc->lacking_on[i], name) != 0)
		i++;
	return i;
}

/*
 * Whether the sender bc's requests avoid its worker lacking_on[i] at now
 * (see BatchCall).
 */
static bool
lacking_avoided(const BatchCall *bc, int i, TimestampTz now)
{
	return bc->lacking_until[i] == 0 || now < bc->lacking_until[i];
}

/*
 * The worker placement chooses for part's request (over its nfrags
 * fragments frags; bytes in all, the largest row largest bytes), not one
 * that lost its rows before (part->lost_on) or lacks a file of the
 * sender bc's models or the memory for them (bc->lacking_on) while another
 * is there.  A re-send (the worker that held the rows was lost, or lacked
 * a file or memory) never goes
 * to a worker that is down (InferFragmentPickUp); NULL then when there is
 * none.
 */
static InferWorker *
pick_worker(const BatchCall *bc, InferFragment **frags, int nfrags,
			BatchPart *part, size_t bytes, size_t largest, bool resend)
{
	const char *avoid[INFERBATCH_MAX_LOST_WORKERS + INFERBATCH_MAX_LACKING];
	int			navoid = 0;
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < part->nlost; i++)
		avoid[navoid++] = part->lost_on[i];
	for (int i = 0; i < bc->nlacking; i++)
		if (lacking_avoided(bc, i, now))
			avoid[navoid++] = bc->lacking_on[i];
	if (resend)
		return InferFragmentPickUp(frags, nfrags, part->nsent, bytes, largest,
								   avoid, navoid);
	return InferPlacementPick(frags, nfrags, part->nsent, bytes, largest,
							  avoid, navoid);
}

/*
 * Sends the rows of part (its sender's request, see BatchPart) to the
 * worker that placement chooses for them, in the current memory context (the slot's),
 * and counts the request.  A worker that goes down while the send waits
 * for a connection (08006, see InferClientSend) is left for another one,
 * up to infer.retries times.  resend: the rows' worker was lost
 * (wait_part); then only a worker that is not down is chosen, and false
 * comes back, with nothing sent, when there is none.  After a
 * worker found down while connecting, likewise, but its error is raised
 * when there is none.  staged: the caller has just staged part's rows
 * (InferClientStageInputs) and sent nothing since.  Errors: those of
 * InferFragmentSendMany.
 */
static bool
send_part(InferBatchState *st, BatchPart *part, bool resend, bool staged)
{
	BatchCall  *bc = &st->calls[part->carried[0]];
	InferFragment **frags = carried_frags(st, part);
	size_t		bytes = 0;
	int64		largest_row;
	size_t		largest = part_largest(part, &largest_row);
	bool		held = resend;	/* a lost worker held the rows */
	size_t		sent = 0;
	ErrorData  *volatile lost = NULL;	/* the last worker's failure */

	for (int i = 0; i < part->nsent; i++)
		bytes += part->lens[i];
	/* digests for placement's transfer term and the send (client.c) */
	if (!staged)
		InferClientStageInputs(part->nsent, part->payloads, part->lens);
	for (int attempt = 0;; attempt++)
	{
		MemoryContext cxt = CurrentMemoryContext;
		volatile bool sent_ok = false;
		InferWorker *worker = pick_worker(bc, frags, part->ncarried, part,
										  bytes, largest, resend);

		if (worker == NULL && lost != NULL)
			InferClientRaiseLost(lost, part->nsent, 0);
		if (worker == NULL)
		{
			pfree(frags);
			return false;
		}
		/*
		 * the workers that read its largest row went down since the fill
		 * (or while they held it): the statement's error, as when no
		 * worker is up
		 */
		if (!InferWorkerReads(worker, largest))
			InferRaiseRowTooLarge(worker, largest, bc->stage_fn[bc->nstages - 1],
								  bc->stage_model[bc->nstages - 1], largest_row,
								  held, ERROR);
		/* frags[0] is bc->frag: the request goes where placement says */
		bc->frag.worker = worker;
		InferStatsSetCall(st->stats_call);
		PG_TRY();
		{
			InferFragmentPushContext(&bc->frag);
			part->req = InferFragmentSendMany(frags, part->ncarried, part->nsent,
											  part->row_ids, part->payloads,
											  part->lens, &sent);
			InferFragmentPopContext(&bc->frag);
			sent_ok = true;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			InferPlacementRelease(worker);
			/*
			 * a worker that went down while we connected: another one that
			 * is not down, or this error when there is none
			 */
			if (edata->sqlerrcode != ERRCODE_CONNECTION_FAILURE ||
				attempt >= infer_retries ||
				!InferPoolIsDown(bc->frag.worker->pool_slot))
			{
				FreeErrorData(edata);
				PG_RE_THROW();
			}
			FlushErrorState();
			/* a statement that succeeds after this leaves a trace */
			ereport(LOG,
					(errmsg_plural("pg_infer: inference worker \"%s\" at %s went down before the request was sent (%s); sending its %d row to another worker",
								   "pg_infer: inference worker \"%s\" at %s went down before the request was sent (%s); sending its %d rows to another worker",
								   part->nsent, worker->name, worker->endpoint,
								   edata->detail ? edata->detail : edata->message,
								   part->nsent)));
			if (lost != NULL)
				FreeErrorData(lost);
			lost = edata;
			resend = true;
		}
		PG_END_TRY();
		if (sent_ok)
			break;
	}
	if (lost != NULL)
		FreeErrorData(lost);
	part->worker = bc->frag.worker;
	{
		int			i = lacking_index(bc, part->worker->name);

		part->to_lacking = i < bc->nlacking &&
			lacking_avoided(bc, i, GetCurrentTimestamp());
	}
	count_request(st->stats, part->worker, part->nsent, sent);
	if (!bc->progress_noted)
	{
		char		label[INFER_STATS_MODEL_LEN];

		InferStatsFragmentsLabel(frags, part->ncarried, label, sizeof(label));
		InferProgressModels(&st->progress, label);
		bc->progress_noted = true;
	}
	pfree(frags);
	return true;
}

/*
 * Raises the error of part's rows (the first is the child's row first_row
 * + row_of[0]) after their request lost its worker on every try (see
 * wait_part): 08006, naming the rows and the workers tried, the last
 * loss (edata) in the detail.  A poison row (an input that makes every
 * worker exit or drop the connection) ends here instead of being sent on
 * for ever.
 */
static void
raise_poison(BatchPart *part, int64 first_row, int sends, ErrorData *edata)
{
	StringInfoData rows;
	StringInfoData workers;

	initStringInfo(&rows);
	initStringInfo(&workers);
	if (part->nsent == 1)
		appendStringInfo(&rows, "row " INT64_FORMAT,
						 first_row + part->row_of[0]);
	else
		appendStringInfo(&rows, "rows " INT64_FORMAT " to " INT64_FORMAT " (%d rows sent)",
						 first_row + part->row_of[0],
						 first_row + part->row_of[part->nsent - 1], part->nsent);
	for (int i = 0; i < part->nlost; i++)
		appendStringInfo(&workers, "%s\"%s\"", i > 0 ? ", " : "",
						 part->lost_on[i]);
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("inference of %s failed on inference worker%s %s",
					rows.data, part->nlost > 1 ? "s" : "", workers.data),
			 errdetail_plural("The request was sent %d time (infer.retries = %d) and each worker lost it: %s",
							  "The request was sent %d times (infer.retries = %d) and each worker lost it: %s",
							  sends, sends, infer_retries, edata->message),
			 errhint("An input that makes every worker fail is not sent again; look for it in the workers' logs (infer.batch_size = 1 singles out the row).")));
}

/*
 * Counts the worker name (palloc'd by the caller, kept) among those that
 * lost part's rows, once each, up to INFERBATCH_MAX_LOST_WORKERS; true
 * when it was not counted yet (it is the last one then).
 */
static bool
note_lost_on(BatchPart *part, const char *name)
{
	for (int i = 0; i < part->nlost; i++)
		if (strcmp(part->lost_on[i], name) == 0)
			return false;
	if (part->nlost >= INFERBATCH_MAX_LOST_WORKERS)
		return false;
	part->lost_on[part->nlost++] = name;
	return true;
}

/*
 * After a worker (pool slot pool_slot) was lost while it held part done's
 * request (08006: the connection dropped, or it stopped answering), sends
 * again at once the scan's other requests that worker holds, in the
 * batches in flight that its own wait would find lost now
 * (InferClientLostNow: one sent over a connection made after the drop, to
 * the worker restarted on its endpoint, is not): each would otherwise
 * wait, counted in flight on the lost worker, until the scan came to it in
 * input order (behind the re-sent requests it waits for first).  Each
 * counts the worker among those that lost its rows, as its own wait would
 * have, and the send among its infer.retries.  A request already
 * answered, never sent, forgotten or not lost, one whose rows have been
 * lost as many times as the next loss would make poison, or one with no
 * re-send left is left for its own wait (wait_part), which sees to it; so
 * are all that remain when no worker is up (each wait raises the loss),
 * unless the worker chosen for one goes down while its send waits to
 * connect and none other is up: that loss is raised at once (the
 * statement fails either way).  Runs with no fragment's error context
 * pushed.  Errors: those of send_part.
 */
static void
resend_held(InferBatchState *st, int pool_slot, const BatchPart *done)
{
	MemoryContext oldcxt = CurrentMemoryContext;

	if (pool_slot == 0)
		return;
	for (int k = 0; k < st->ninflight; k++)
	{
		BatchSlot  *slot = &st->ring[(st->head + k) % st->ring_size];

		if (slot->received)
			continue;
		for (int c = 0; c < st->ncalls; c++)
		{
			BatchPart  *part = &slot->parts[c];
			InferRequest *held = part->req;
			const char *name;
			bool		noted;

			/*
			 * answered, never sent, forgotten or not lost (sent to a new
			 * run of the worker): its own wait sees to it
			 */
			if (part == done || held == NULL || part->worker == NULL ||
				part->worker->pool_slot != pool_slot ||
				!InferClientLostNow(held) ||
				part->nlost + 1 >= INFERBATCH_MAX_LOST_WORKERS ||
				part->early + 1 > infer_retries)
				continue;
			MemoryContextSwitchTo(slot->cxt);
			name = pstrdup(part->worker->name);
			/*
			 * noted first, so that the re-send goes to another while one is
			 * up; taken back when nothing is sent (its wait counts it, or
			 * not, as it finds the loss)
			 */
			noted = note_lost_on(part, name);
			if (!send_part(st, part, true, false))
			{
				if (noted)
					part->nlost--;
				MemoryContextSwitchTo(oldcxt);
				return;			/* no worker up: each wait raises it */
			}
			InferClientForgetLost(held);
			part->early++;
			ereport(LOG,
					(errmsg_plural("pg_infer: inference worker \"%s\" was lost; sending the %d row it also held to \"%s\"",
								   "pg_infer: inference worker \"%s\" was lost; sending the %d rows it also held to \"%s\"",
								   part->nsent, name, part->nsent, part->worker->name)));
		}
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Notes, in bc (the sender), that worker name lacks a file of its models
 * or (memory, 53200) the memory for them, which part's request found:
 * avoided for the rest of the scan, or for INFERBATCH_LACKING_MEMORY_MS
 * for memory.  Returns whether part's rows are to go to another worker:
 * not when placement sent them there knowing it (no other worker was up:
 * the error is the statement's), nor when the list is full of workers
 * still avoided.
 */
static bool
note_lacking(InferBatchState *st, BatchCall *bc, const BatchPart *part,
			 const char *name, bool memory)
{
	TimestampTz until = memory ?
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
									INFERBATCH_LACKING_MEMORY_MS) : 0;
	int			i;

	if (part->to_lacking)
		return false;
	i = lacking_index(bc, name);
	if (i == bc->nlacking)
	{
		/* a full list takes the place of a worker no longer avoided */
		if (bc->nlacking >= INFERBATCH_MAX_LACKING)
		{
			TimestampTz now = GetCurrentTimestamp();

			for (i = 0; i < bc->nlacking; i++)
				if (!lacking_avoided(bc, i, now))
					break;
			if (i == bc->nlacking)
				return false;
			pfree((char *) bc->lacking_on[i]);
		}
		else
			bc->nlacking++;
		bc->lacking_on[i] = MemoryContextStrdup(st->scan_cxt, name);
	}
	else if (bc->lacking_until[i] == 0)
		return true;			/* a missing file stands */
	bc->lacking_until[i] = until;
	return true;
}

/*
 * Waits for the reply to part's request (its sender's, see BatchPart; its
 * first row is the child's row first_row).  When its worker is lost while it
 * holds the request (08006: the connection dropped, SIGKILL or exit; or
 * the pool found it down, no heartbeat for infer.worker_timeout, so hung,
 * SIGSTOP), or it answers that it is shutting down (57P01, SIGTERM: it
 * returned no result), it is marked down in the pool and the request
 * forgotten (a late reply is dropped; InferClientWaitOrLost), and the same
 * rows go again to a worker that is not down, up to infer.retries times,
 * so that the statement still returns every row once.  Once the request
 * has been lost by INFERBATCH_MAX_LOST_WORKERS distinct workers (57P01,
 * or a request that never went out, does not count: the rows are not to
 * blame), or infer.retries is used up, its rows are the error
 * (raise_poison; that loss itself when it did not count); with no other
 * worker up the loss is raised, saying so.  A worker that answers 58P01
 * or 53200 (it lacks a file of the models or the memory for them) has the
 * rows sent to another worker (note_lacking), which is no retry.  Other errors (cancel, timeout, the
 * worker's own) are raised.  Runs in the slot's memory context.
 */
static InferReply *
wait_part(InferBatchState *st, BatchPart *part, int64 first_row)
{
	BatchCall  *bc = &st->calls[part->carried[0]];

	/* attempt: the re-sends of a lost request (infer.retries) */
	for (int attempt = 0;;)
	{
		ErrorData  *lost;
		InferReply *reply = InferClientWaitOrLost(part->req, &lost);
		bool		not_run;
		int			lost_slot;

		/*
		 * a worker without a file of the models (a model directory set up
		 * apart from the others) or the memory for them (a smaller
		 * --gpu-memory, or memory taken by other work for a while): the
		 * rows go to another one, and this call's requests avoid it from
		 * now on (for memory, INFERBATCH_LACKING_MEMORY_MS); the error
		 * stands when placement sent them there avoiding it (no other
		 * worker was up)
		 */
		if (reply != NULL && InferReplyWorkerLacks(reply) &&
			note_lacking(st, bc, part, part->worker->name,
						 strcmp(reply->header->error->sqlstate,
								PGINFER_SQLSTATE_OUT_OF_MEMORY) == 0))
		{
			ereport(LOG,
					(errmsg_plural("pg_infer: inference worker \"%s\" at %s cannot run the request (%s: %s); sending its %d row to another worker",
								   "pg_infer: inference worker \"%s\" at %s cannot run the request (%s: %s); sending its %d rows to another worker",
								   part->nsent, part->worker->name, part->worker->endpoint,
								   reply->header->error->sqlstate,
								   reply->header->error->message, part->nsent)));
			InferFragmentPopContext(&bc->frag);
			if (!send_part(st, part, true, false))
			{
				InferFragmentPushContext(&bc->frag);
				return reply;
			}
			bc->frag.worker = part->worker;
			InferFragmentPushContext(&bc->frag);
			continue;
		}
		if (reply != NULL)
			return reply;
		/*
		 * 57P01: the worker stopped; or the request never reached it: the
		 * rows are not to blame
		 */
		not_run = lost->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
			InferClientUnsent(part->req);
		part->req = NULL;

		/* the workers that lost it, each once */
		if (!not_run)
			(void) note_lost_on(part, pstrdup(part->worker->name));
		if (part->nlost >= INFERBATCH_MAX_LOST_WORKERS ||
			part->early + attempt >= infer_retries)
		{
			if (not_run)
				InferClientRaiseLost(lost, part->nsent,
									 part->early + attempt + 1);
			raise_poison(part, first_row, part->early + attempt + 1, lost);
		}

		ereport(LOG,
				(errmsg_plural("pg_infer: inference worker \"%s\" at %s was lost (%s); sending its %d row to another worker",
							   "pg_infer: inference worker \"%s\" at %s was lost (%s); sending its %d rows to another worker",
							   part->nsent, part->worker->name, part->worker->endpoint,
							   lost->message, part->nsent)));
		InferFragmentPopContext(&bc->frag);
		lost_slot = part->worker->pool_slot;
		if (!send_part(st, part, true, false))
			InferClientRaiseLost(lost, part->nsent, 0);
		FreeErrorData(lost);
		/* the lost worker's other requests are lost too: sent again now */
		if (!not_run)
			resend_held(st, lost_slot, part);
		bc->frag.worker = part->worker;
		InferFragmentPushContext(&bc->frag);
		attempt++;
	}
}

/*
 * Sends the rows of part, leader bc's part of slot: one request that
 * carries them once with a fragment per call of the group, or, when
 * placement finds that cheaper (InferPlacementSplits) or the rows times
 * the calls pass PGINFER_MAX_RESULT_ROWS, one request per call, each
 * member's part pointing at the leader's rows.  Runs in the
 * slot's memory context.  Errors: those of send_part.
 */
static void
send_group(InferBatchState *st, BatchCall *bc, BatchSlot *slot,
		   BatchPart *part)
{
	size_t		bytes = 0;

	part->ncarried = bc->nmembers;
	part->carried = bc->members;
	if (bc->nmembers > 1)
	{
		InferFragment **frags = carried_frags(st, part);

		for (int i = 0; i < part->nsent; i++)
			bytes += part->lens[i];
		InferClientStageInputs(part->nsent, part->payloads, part->lens);
		/* apart also when one request would answer too many rows */
		if ((int64) part->nsent * bc->nmembers > PGINFER_MAX_RESULT_ROWS ||
			InferPlacementSplits(frags, bc->nmembers, part->nsent, bytes,
								 part_largest(part, NULL)))
		{
			for (int m = 0; m < bc->nmembers; m++)
			{
				BatchPart  *mp = &slot->parts[bc->members[m]];

				if (mp != part)
				{
					mp->nsent = part->nsent;
					mp->row_of = part->row_of;
					mp->row_ids = part->row_ids;
					mp->payloads = part->payloads;
					mp->lens = part->lens;
				}
				mp->ncarried = 1;
				mp->carried = &bc->members[m];
				/* the rows are staged until the first send */
				(void) send_part(st, mp, false, m == 0);
			}
			pfree(frags);
			return;
		}
		pfree(frags);
	}
	(void) send_part(st, part, false, bc->nmembers > 1);
}

/*
 * The most rows a batch may hold so that the ring's batches
 * (infer.max_inflight of them) take at most a quarter of infer.timeout at
 * the compute a row the last answer showed (st->row_ms: the run's time
 * over the request's rows that some call answered, which overstates it
 * for a run that merged requests, so the cap errs small; rows refused
 * at once are left out, and an answer of none of them leaves it as it
 * was).  With the defaults (30 s, 4 in
 * flight, batches of 64) it binds only from 29 ms a row; OCR at about a
 * second a page
 * runs a page or two a batch, which costs it nothing (its pages run one
 * after the other: docs/performance.md, ocr_speedup).  INT_MAX before the
 * first answer.
 */
static int
batch_rows_cap(const InferBatchState *st)
{
	double		rows;

	if (st->row_ms <= 0)
		return INT_MAX;
	rows = (double) infer_timeout_ms / (4.0 * st->ring_size * st->row_ms);
	return rows >= INT_MAX ? INT_MAX : Max(1, (int) rows);
}

/*
 * Whether the text d that leader bc's group shares has at most
 * infer.max_text_bytes bytes (InferTextWithinLimit, for the scan's
 * current row).  When it has more, each call of the group reports it, as
 * each would one row at a time: the first ERROR ends the statement, with
 * infer.on_error = null each call gives its WARNING (and NULL).
 */
static bool
text_within_limit(InferBatchState *st, const BatchCall *bc, Datum d)
{
	bool		ok = true;

	for (int m = 0; m < bc->nmembers; m++)
	{
		const BatchCall *mc = &st->calls[bc->members[m]];

		if (!InferTextWithinLimit(d, mc->stage_fn[mc->nstages - 1],
								  mc->stage_model[mc->nstages - 1], st->pulled))
			ok = false;
		if (ok)
			break;				/* the same text: all of the group pass */
	}
	return ok;
}

/*
 * The UTF-8 bytes of the text that leader bc's group shares
 * (InferTextPayload, for the scan's current row), or NULL when they are
 * not valid UTF-8 (an SQL_ASCII database): then each call of the group
 * reports it, as in text_within_limit.
 */
static const char *
text_payload(InferBatchState *st, const BatchCall *bc, text *t, size_t *len)
{
	const char *data = NULL;

	for (int m = 0; m < bc->nmembers; m++)
	{
		const BatchCall *mc = &st->calls[bc->members[m]];

		data = InferTextPayload(t, len, mc->stage_fn[mc->nstages - 1],
								mc->stage_model[mc->nstages - 1], st->pulled);
		if (data != NULL)
			break;				/* the same text: all of the group pass */
	}
	return data;
}

/*
 * Fills the next free slot with rows of the child and sends one request
 * per group of calls (one input, a fragment per call of the group).
 * Returns false (and sets child_done) when the child had no more rows (or
 * the bound was reached) before the first row.
 */
static bool
fill_and_send(InferBatchState *st)
{
	BatchSlot  *slot = &st->ring[(st->head + st->ninflight) % st->ring_size];
	PlanState  *child = outerPlanState(st);
	ExprContext *econtext = st->arg_econtext;
	MemoryContext oldcxt;
	int			target = Min(Min(st->next_size, infer_batch_size),
								 batch_rows_cap(st));
	size_t		bytes = 0;
	bool		limit_known = false;
	uint64		row_limit = 0;
	const char *limit_worker = NULL;

	st->next_size = Min(st->next_size * 2, infer_batch_size);
	slot_clear(slot);
	slot->first_row = st->pulled + 1;
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
			const char *data;
			size_t		len;
			char	   *copy;

			/* a group's input is evaluated and kept once, by its leader */
			if (bc->all_null || bc->leader != c)
				continue;
			d = ExecEvalExprSwitchContext(bc->img, econtext, &isnull);
			if (isnull)
				continue;
			/* a text over infer.max_text_bytes: an ERROR, or NULL */
			if (bc->text_input && !text_within_limit(st, bc, d))
				continue;
			/*
			 * detoast (and convert text to UTF-8) in per-row memory: only
			 * the bytes are kept
			 */
			MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			if (bc->text_input)
			{
				/* not UTF-8 in an SQL_ASCII database: an ERROR, or NULL */
				data = text_payload(st, bc, DatumGetTextPP(d), &len);
				if (data == NULL)
				{
					MemoryContextSwitchTo(slot->cxt);
					continue;
				}
			}
			else
			{
				bytea	   *img = DatumGetByteaPP(d);

				data = VARDATA_ANY(img);
				len = VARSIZE_ANY_EXHDR(img);
			}
			MemoryContextSwitchTo(slot->cxt);
			/* a row larger than any worker reads: an ERROR, or NULL */
			if (len > PGINFER_SMALL_ROW_BYTES && !limit_known)
			{
				row_limit = InferPlacementRowLimit(&limit_worker);
				limit_known = true;
			}
			if (!InferRowWithinLimit(len, row_limit, limit_worker,
									 bc->stage_fn[bc->nstages - 1],
									 bc->stage_model[bc->nstages - 1],
									 st->pulled))
				continue;
			copy = palloc(Max(len, 1));
			memcpy(copy, data, len);
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
		BatchPart  *part = &slot->parts[c];

		part->first_row = slot->first_row;
		part->values = palloc0(sizeof(Datum) * slot->nrows);
		part->isnull = palloc(sizeof(bool) * slot->nrows);
		part->failed = palloc0(sizeof(InferRow *) * slot->nrows);
		for (int r = 0; r < slot->nrows; r++)
			part->isnull[r] = true;
	}
	for (int c = 0; c < st->ncalls; c++)
	{
		BatchCall  *bc = &st->calls[c];
		BatchPart  *part = &slot->parts[c];

		if (bc->all_null || bc->leader != c)
			continue;
		part->row_of = palloc(sizeof(int) * slot->nrows);
		part->row_ids = palloc(sizeof(uint64) * slot->nrows);
		part->payloads = palloc(sizeof(void *) * slot->nrows);
		part->lens = palloc(sizeof(size_t) * slot->nrows);
		for (int r = 0; r < slot->nrows; r++)
		{
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
		send_group(st, bc, slot, part);
	}
	MemoryContextSwitchTo(oldcxt);

	st->stats->nbatches++;
	st->stats->nrows += slot->nrows;
	st->ninflight++;
	InferProgressAdd(&st->progress, 0, slot->nrows, 1);
	return true;
}

/*
 * Points frag->with at the fragments of the other calls part's request
 * carries (its first is frag's own call), for the error context of the
 * wait; the array lives in the scan's context.
 */
static void
carried_with(InferBatchState *st, const BatchPart *part, InferFragment *frag)
{
	frag->nwith = 0;
	if (part->ncarried < 2)
		return;
	if (frag->with == NULL)
		frag->with = MemoryContextAlloc(st->scan_cxt,
										sizeof(InferFragment *) * st->ncalls);
	for (int m = 1; m < part->ncarried; m++)
		frag->with[frag->nwith++] = &st->calls[part->carried[m]].frag;
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
	double		row_ms = 0;		/* the slowest part's compute a row */

	for (int c = 0; c < st->ncalls; c++)
	{
		BatchCall  *bc = &st->calls[c];
		BatchPart  *part = &slot->parts[c];
		InferReply *reply;
		instr_time	start;
		instr_time	waited;
		int			nok = 0;	/* rows some carried call answered */

		if (part->req == NULL)
			continue;
		bc->frag.worker = part->worker;
		carried_with(st, part, &bc->frag);
		InferFragmentPushContext(&bc->frag);
		INSTR_TIME_SET_CURRENT(start);
		reply = wait_part(st, part, slot->first_row);
		INSTR_TIME_SET_CURRENT(waited);
		INSTR_TIME_SUBTRACT(waited, start);
		st->stats->wait_ms += INSTR_TIME_GET_MILLISEC(waited);
		if (reply->header->result != NULL)
			st->stats->compute_ms += reply->header->result->compute_ms;
		{
			int64		cached,
						saved,
						resends;

			/* bytes counted at send less those the input cache saved */
			InferClientInputStats(part->req, &cached, &saved, &resends);
			st->stats->rows_cached += cached;
			st->stats->bytes -= saved;
			st->stats->input_resends += resends;
		}
		/* the worker's error for the request names every call it carried */
		InferReplyRaiseError(reply);
		InferFragmentPopContext(&bc->frag);
		bc->frag.nwith = 0;

		for (int m = 0; m < part->ncarried; m++)
		{
			BatchCall  *mc = &st->calls[part->carried[m]];
			BatchPart  *mp = &slot->parts[part->carried[m]];

			mp->worker = part->worker;
			mp->rows = palloc(sizeof(InferRow) * part->nsent);
			mc->frag.worker = part->worker;
			InferFragmentPushContext(&mc->frag);
			InferFragmentCollectOf(&mc->frag, reply, m, part->nsent,
								   part->row_ids, mp->rows);
			for (int i = 0; i < part->nsent; i++)
			{
				int			r = part->row_of[i];

				if (mp->rows[i].result->ok)
				{
					mp->values[r] = InferRowDatum(&mc->frag, &mp->rows[i]);
					mp->isnull[r] = false;
				}
				else
					mp->failed[r] = &mp->rows[i];
			}
			InferFragmentPopContext(&mc->frag);
		}
		for (int i = 0; i < part->nsent; i++)
		{
			bool		ok = false;

			for (int m = 0; m < part->ncarried && !ok; m++)
				ok = slot->parts[part->carried[m]].rows[i].result->ok;
			nok += ok;
		}

		/*
		 * The compute a row, over the rows answered: a row refused at once
		 * (not an image) costs nothing, and counting it would let the next
		 * batch grow past what infer.timeout allows (a backfill with
		 * infer.on_error = null failed on the batch after a bad row).
		 */
		if (reply->header->result != NULL && nok > 0)
			row_ms = Max(row_ms, reply->header->result->compute_ms / nok);
	}
	MemoryContextSwitchTo(oldcxt);
	/* batch_rows_cap sizes the batches by the slowest call of the node */
	if (row_ms > 0)
		st->row_ms = row_ms;
	slot->received = true;
	InferProgressAdd(&st->progress, slot->nrows, 0, -1);
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
		bc->frag.row = slot->first_row + r;
		InferFragmentPushContext(&bc->frag);
		InferRowReportError(part->failed[r],
							infer_on_error == INFER_ON_ERROR_NULL ?
							WARNING : ERROR);
		InferFragmentPopContext(&bc->frag);
		bc->frag.row = 0;
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
	InferProgressStop(&st->progress);
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
 * models of the infer.ocr_* settings); a chained call is shown as
 * "infer.embed(minilm) <- infer.ocr(...)", the stage that runs first last.
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
		case INFER_FN_EMBED:
		case INFER_FN_CLASSIFY_TEXT:
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

	/* a chained call: " <- " and the stage before, which runs first */
	if (list_length(call->args) == 2 && IsA(lsecond(call->args), FuncExpr) &&
		InferPlannerFunction(((FuncExpr *) lsecond(call->args))->funcid) != INFER_FN_NONE)
	{
		appendStringInfoString(buf, " <- ");
		describe_call(st, (FuncExpr *) lsecond(call->args), buf);
	}
}

/*
 * on_dsm_detach callback of the leader: adds the parallel workers'
 * counters to worker_stats (in the node's memory) before the segment goes
 * away; the workers are done by then.  A rescanned Gather may detach
 * several segments in turn.
 */
static void
shared_detach(dsm_segment *seg, Datum arg)
{
	InferBatchState *st = (InferBatchState *) DatumGetPointer(arg);
	int			n;

	if (st->shared == NULL)
		return;
	n = st->shared->nworkers;
	if (st->worker_stats == NULL)
		st->worker_stats = MemoryContextAllocZero(GetMemoryChunkContext(st),
												  sizeof(BatchStats) * Max(n, 1));
	else if (n > st->nworker_stats)
	{
		st->worker_stats = repalloc(st->worker_stats, sizeof(BatchStats) * n);
		memset(&st->worker_stats[st->nworker_stats], 0,
			   sizeof(BatchStats) * (n - st->nworker_stats));
	}
	st->nworker_stats = Max(st->nworker_stats, n);
	for (int w = 0; w < n; w++)
		stats_add(&st->worker_stats[w], &st->shared->stats[w]);
	st->shared = NULL;
	st->seg = NULL;
}

/*
 * Memory context callback: the node's memory goes before the segment (an
 * error, or the end of the node before the Gather's): no copy then.
 */
static void
shared_forget(void *arg)
{
	InferBatchState *st = (InferBatchState *) arg;

	if (st->seg != NULL)
		cancel_on_dsm_detach(st->seg, shared_detach, PointerGetDatum(st));
	st->seg = NULL;
	st->shared = NULL;
}

/* EstimateDSMCustomScan: one BatchStats per parallel worker. */
static Size
infer_batch_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return add_size(offsetof(BatchShared, stats),
					mul_size(sizeof(BatchStats), Max(pcxt->nworkers, 1)));
}

/*
 * InitializeDSMCustomScan (leader): zeroes the workers' counters and
 * arranges for their copy when the segment is detached.
 */
static void
infer_batch_init_dsm(CustomScanState *node, ParallelContext *pcxt,
					 void *coordinate)
{
	InferBatchState *st = (InferBatchState *) node;
	BatchShared *shared = (BatchShared *) coordinate;

	memset(shared, 0, infer_batch_estimate_dsm(node, pcxt));
	shared->nworkers = pcxt->nworkers;
	/* without a segment (no workers) there is nothing to copy */
	if (pcxt->seg == NULL || st->shared != NULL)
		return;
	st->shared = shared;
	st->seg = pcxt->seg;
	on_dsm_detach(pcxt->seg, shared_detach, PointerGetDatum(st));
	if (st->forget_shared.func == NULL)
	{
		st->forget_shared.func = shared_forget;
		st->forget_shared.arg = st;
		MemoryContextRegisterResetCallback(st->scan_cxt, &st->forget_shared);
	}
}

/*
 * ReInitializeDSMCustomScan (a rescan of the Gather): the counters keep
 * adding up, as the leader's own do over rescans.
 */
static void
infer_batch_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
					   void *coordinate)
{
}

/* InitializeWorkerCustomScan: this parallel worker counts in its slot. */
static void
infer_batch_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	InferBatchState *st = (InferBatchState *) node;
	BatchShared *shared = (BatchShared *) coordinate;

	if (ParallelWorkerNumber >= 0 && ParallelWorkerNumber < shared->nworkers)
		st->stats = &shared->stats[ParallelWorkerNumber];
}

/* Adds the counters of b to a. */
static void
stats_add(BatchStats *a, const BatchStats *b)
{
	a->nbatches += b->nbatches;
	a->nrows += b->nrows;
	a->bytes += b->bytes;
	a->rows_cached += b->rows_cached;
	a->input_resends += b->input_resends;
	a->wait_ms += b->wait_ms;
	a->compute_ms += b->compute_ms;
	for (int i = 0; i <= INFERBATCH_STATS_WORKERS; i++)
	{
		const BatchWorkerCount *wb = &b->workers[i];
		BatchWorkerCount *wa = NULL;

		if (wb->requests == 0)
			continue;
		if (i == INFERBATCH_STATS_WORKERS)
			wa = &a->workers[INFERBATCH_STATS_WORKERS];
		for (int j = 0; j < a->nworkers && wa == NULL; j++)
			if (strcmp(a->workers[j].name, wb->name) == 0)
				wa = &a->workers[j];
		if (wa == NULL && a->nworkers < INFERBATCH_STATS_WORKERS)
		{
			wa = &a->workers[a->nworkers++];
			strlcpy(wa->name, wb->name, NAMEDATALEN);
		}
		if (wa == NULL)
			wa = &a->workers[INFERBATCH_STATS_WORKERS];
		wa->requests += wb->requests;
		wa->rows += wb->rows;
	}
}

/*
 * EXPLAIN's "Shared Input" line, when calls share their input (see
 * BatchCall): for each group of more than one call, its functions joined
 * by " + ", the groups by "; ".  The groups are those of the plan: the
 * calls whose input expressions are equal() (a call whose model name
 * turns out NULL at run time sends nothing).
 */
static void
explain_shared_input(InferBatchState *st, CustomScan *cscan, ExplainState *es)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < st->ncalls; i++)
	{
		int			n = 0;

		/* i leads its group when no earlier call has the same input */
		for (int j = 0; j < i && n == 0; j++)
			if (same_input(&st->calls[j], &st->calls[i]))
				n = -1;
		if (n < 0)
			continue;
		for (int j = i; j < st->ncalls; j++)
			if (same_input(&st->calls[j], &st->calls[i]))
				n++;
		if (n < 2)
			continue;
		appendStringInfoString(&buf, buf.len > 0 ? "; " : "");
		n = 0;
		for (int j = i; j < st->ncalls; j++)
			if (same_input(&st->calls[j], &st->calls[i]))
				appendStringInfo(&buf, "%s%s", n++ > 0 ? " + " : "",
								 InferFunctionName(st->calls[j].fn));
	}
	if (buf.len > 0)
		ExplainPropertyText("Shared Input", buf.data, es);
	pfree(buf.data);
}

/*
 * ExplainCustomScan: the fragments, batch size and in-flight limit; with
 * ANALYZE, summed over the processes of a parallel query: the batches
 * sent, their rows and mean size, the requests and rows each inference
 * worker got, the time spent waiting for replies, the workers' compute
 * time and the bytes sent (less the rows the workers took from their
 * input caches, counted apart with the MSG_NEED_INPUT round trips); and,
 * in a parallel query, the batches of each process.
 */
static void
infer_batch_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	InferBatchState *st = (InferBatchState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	StringInfoData buf;
	BatchStats	total;

	initStringInfo(&buf);
	for (int i = 0; i < st->ncalls; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		describe_call(st, list_nth_node(FuncExpr, cscan->custom_exprs, i),
					  &buf);
	}
	ExplainPropertyText("Fragments", buf.data, es);
	explain_shared_input(st, cscan, es);
	ExplainPropertyInteger("Batch Size", NULL, infer_batch_size, es);
	ExplainPropertyInteger("Max In Flight", NULL, infer_max_inflight, es);
	if (st->limit_count != NULL)
		ExplainPropertyText("Row Bound", "LIMIT", es);
	if (!es->analyze)
	{
		pfree(buf.data);
		return;
	}

	/* the leader's own counters, plus its parallel workers' */
	total = st->local;
	for (int w = 0; w < st->nworker_stats; w++)
		stats_add(&total, &st->worker_stats[w]);

	ExplainPropertyInteger("Batches", NULL, total.nbatches, es);
	ExplainPropertyInteger("Rows Sent", NULL, total.nrows, es);
	ExplainPropertyFloat("Mean Batch Size", NULL,
						 total.nbatches > 0 ?
						 (double) total.nrows / total.nbatches : 0.0,
						 1, es);
	resetStringInfo(&buf);
	for (int i = 0; i <= INFERBATCH_STATS_WORKERS; i++)
	{
		BatchWorkerCount *wc = &total.workers[i];

		if (wc->requests == 0)
			continue;
		appendStringInfo(&buf, "%s%s: " INT64_FORMAT " requests, " INT64_FORMAT " rows",
						 buf.len > 0 ? "; " : "",
						 i < INFERBATCH_STATS_WORKERS ? wc->name : "others",
						 wc->requests, wc->rows);
	}
	ExplainPropertyText("Inference Workers", buf.len > 0 ? buf.data : "none",
						es);
	ExplainPropertyFloat("Reply Wait", "ms", total.wait_ms, 3, es);
	ExplainPropertyFloat("Worker Compute", "ms", total.compute_ms, 3, es);
	ExplainPropertyInteger("Bytes Sent", "bytes", total.bytes, es);
	/* the input cache's share, when it is on (infer.input_cache_min_bytes) */
	if (infer_input_cache_min_bytes >= 0)
	{
		ExplainPropertyInteger("Rows From Worker Cache", NULL, total.rows_cached, es);
		ExplainPropertyInteger("Input Resends", NULL, total.input_resends, es);
	}
	if (st->worker_stats != NULL)
	{
		resetStringInfo(&buf);
		appendStringInfo(&buf, "leader " INT64_FORMAT, st->local.nbatches);
		for (int w = 0; w < st->nworker_stats; w++)
			appendStringInfo(&buf, ", worker %d " INT64_FORMAT, w,
							 st->worker_stats[w].nbatches);
		ExplainPropertyText("Batches per Process", buf.data, es);
	}
	pfree(buf.data);
}
