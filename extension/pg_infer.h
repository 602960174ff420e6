/*-------------------------------------------------------------------------
 *
 * pg_infer.h
 *	  Private declarations of the pg_infer extension, by the file that
 *	  defines them.
 *
 * The extension runs one backend's ML calls on infer-worker processes over
 * ZeroMQ (see DESIGN.md).  Everything here runs in a PostgreSQL backend's
 * main thread; only the ZeroMQ library's own I/O threads run beside it,
 * and they never call PostgreSQL code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INFER_H
#define PG_INFER_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/extensible.h"

#include "common/protocol.h"

/* ----------
 * guc.c: the infer.* settings
 * ----------
 */

/* infer.on_error values */
typedef enum InferOnError
{
	INFER_ON_ERROR_ERROR,		/* a row's error aborts the statement */
	INFER_ON_ERROR_NULL			/* a row's error gives NULL and a WARNING */
} InferOnError;

extern bool infer_enable_batching;
extern int	infer_batch_size;
extern int	infer_batch_bytes;
extern int	infer_max_inflight;
extern int	infer_timeout_ms;
extern int	infer_retries;
extern int	infer_on_error;
extern int	infer_max_pixels;
extern int	infer_max_text_bytes;
extern char *infer_ocr_detector;
extern char *infer_ocr_classifier;
extern char *infer_ocr_recognizer;
extern bool infer_text_truncate;

extern void InferGucInit(void);

/* pg_infer.c: a message raised once per statement (InferFirstInStatement) */
typedef struct InferOncePerStatement
{
	LocalTransactionId lxid;
	TimestampTz stmt_start;
} InferOncePerStatement;

extern bool InferFirstInStatement(InferOncePerStatement *once);

/* pg_infer.c: the EXECUTE privilege of an ML call run by InferBatch */
extern void InferCheckExecute(Oid funcid);

/* ----------
 * catalog.c: workers and models from the extension's tables (via SPI)
 * ----------
 */

/* A worker as infer.worker_registry holds it. */
typedef struct InferWorker
{
	char	   *name;
	char	   *endpoint;
	int			pool_slot;		/* 1 + its pool.c slot; 0: not tracked */
	double		est_ms;			/* placement's estimate of the request
								 * it was picked for (load + compute) */
	int			nruns;			/* its model runs (a file per fragment
								 * stage that uses it), for the pool's
								 * unseen counts (InferPoolAddInflight) */
	const char **runs;
	struct InferPoolInflight *reserved; /* placement's reservation of the
										 * request in the pool (pool.c
										 * InferPoolReserveLocked), handed
										 * to the send; NULL: none */
	uint64		max_row_bytes;	/* the largest row it reads (its
								 * --max-message-bytes); 0: not known */
	bool		others_up;		/* placement saw another worker that is
								 * not down (client.c: a send that finds
								 * the connection gone may give up early) */
} InferWorker;

extern Pginfer__ModelSpec **InferCatalogGetModels(const char *const *names,
												  const char *const *gucs,
												  int nmodels);
extern InferWorker *InferCatalogPickWorker(void);
extern InferWorker *InferCatalogGetWorkers(int *nworkers);
extern InferWorker *InferCatalogListWorkers(int *nworkers, bool missing_ok);

/* ----------
 * client.c: the ZeroMQ client (one context per backend, a DEALER socket
 * per worker endpoint)
 * ----------
 */

/*
 * A reply from a worker, copied out of ZeroMQ's buffers into the memory
 * context that was current at the call.
 */
typedef struct InferReply
{
	Pginfer__Header *header;	/* unpacked header (frame 0) */
	int			nframes;		/* payload frames after the header */
	char	  **frames;			/* frame i's bytes */
	size_t	   *frame_lens;
	int64		bytes;			/* of every frame, the header's too */
} InferReply;

/* A request in flight; its memory and reply belong to the context current
 * at InferClientSend (see client.c). */
typedef struct InferRequest InferRequest;

extern void InferClientInit(void);
extern uint64 InferClientNextRequestId(void);
extern InferRequest *InferClientSend(const InferWorker *worker,
									 Pginfer__Header *request,
									 int npayloads,
									 const void *const *payloads,
									 const size_t *payload_lens,
									 int timeout_ms);
extern InferReply *InferClientWait(InferRequest *req);
extern InferReply *InferClientModelRequest(const InferWorker *worker,
											Pginfer__Header *hdr,
											int npayloads,
											const void *const *payloads,
											const size_t *lens,
											const char *failed,
											const char *request);
extern void InferClientForget(InferRequest *req);
extern void InferClientForgetLost(InferRequest *req);
extern bool InferClientUnsent(const InferRequest *req);
extern const char *InferClientIpcDetail(const char *endpoint, const char *detail);
extern bool InferClientLostNow(InferRequest *req);
extern InferReply *InferClientWaitOrLost(InferRequest *req, ErrorData **lost);
extern void InferClientRaiseLost(ErrorData *lost, int nrows, int sends);

/* the input cache (client.c banner, docs/placement.md) */
extern int	infer_input_cache_min_bytes;
struct InferPoolWorker;
extern void InferClientStageInputs(int nrows, const void *const *payloads,
								   const size_t *payload_lens);
extern size_t InferClientUncachedBytes(const struct InferPoolWorker *w,
									   size_t bytes);
extern void InferClientInputStats(const InferRequest *req, int64 *rows_cached,
								  int64 *bytes_saved, int64 *resends);

/* ----------
 * pool.c: the worker pool's live state in shared memory and the
 * pool-monitor background worker that keeps it (needs pg_infer in
 * shared_preload_libraries; without it InferPoolEnabled() is false)
 * ----------
 */

#define INFER_POOL_ENDPOINT_LEN 256
#define INFER_POOL_MODEL_LEN 128
#define INFER_POOL_MODELS 16	/* models kept per worker */
#define INFER_POOL_DATABASES 8	/* databases tracked per worker */
#define INFER_POOL_TIMINGS 32	/* (model, batch size) timings per worker */
#define INFER_POOL_UNSEEN 128	/* sends kept per worker until a state holds
								 * them */

/* A worker's status, derived from its heartbeat age (InferPoolStatus). */
typedef enum InferPoolStatus
{
	INFER_POOL_UNKNOWN,			/* registered, not heard from yet */
	INFER_POOL_UP,				/* heartbeat within infer.worker_timeout / 2 */
	INFER_POOL_STALE,			/* heartbeat older than that, not down yet */
	INFER_POOL_DOWN				/* no heartbeat for infer.worker_timeout */
} InferPoolStatus;

/* A model a worker reported (ModelState, or resident_models). */
typedef struct InferPoolModel
{
	char		file[INFER_POOL_MODEL_LEN];
	bool		resident;
	uint32		queued;
	uint64		bytes;
	double		load_ms;
} InferPoolModel;

/* A measured compute time (ModelTiming). */
typedef struct InferPoolTiming
{
	char		file[INFER_POOL_MODEL_LEN];
	uint32		batch_size;
	double		ms;
} InferPoolTiming;

/*
 * A request a backend sent a worker that, as far as the pool can tell, no
 * state folded since holds: sent after the last state was made
 * (InferPoolFold).  Its estimate and model runs are in the slot's
 * unseen_ms and unseen_runs until then, or until it is answered.
 */
typedef struct InferPoolSend
{
	uint64		id;				/* the slot's sent_requests at the send; 0:
								 * taken out */
	TimestampTz sent;			/* just after it was sent */
	double		ms;				/* its estimate (InferWorker.est_ms) */
	int			nruns;			/* the unseen_runs entries it adds to */
	int8		runs[INFER_POOL_MODELS];
} InferPoolSend;

/* One worker endpoint's slot in shared memory (under the pool's LWLock). */
typedef struct InferPoolWorker
{
	bool		used;
	uint32		generation;		/* +1 each time the slot is (re)used */
	/*
	 * the databases whose registry holds the endpoint, as their backends
	 * met it (InferPoolRegister); infer.drop_worker frees the slot when
	 * the last of them drops it.  dbs_overflow: more met it than fit.
	 */
	int			ndbs;
	Oid			dbs[INFER_POOL_DATABASES];
	bool		dbs_overflow;
	/* when a backend last looked the slot up (InferPoolRegister) */
	pg_atomic_uint64 touched;
	char		name[NAMEDATALEN];	/* its name in the first database */
	char		endpoint[INFER_POOL_ENDPOINT_LEN];
	char		state_endpoint[INFER_POOL_ENDPOINT_LEN];	/* "" unknown */
	char		server_key[41];	/* CURVE server public key (Z85), "" plain */
	TimestampTz registered;
	TimestampTz heartbeat;		/* last state received; 0 never */
	uint64		folds;			/* states folded in */
	bool		published;		/* the last came over its PUB socket (not
								 * as a PONG) */
	/* the worker's last WorkerState */
	uint64		seq;
	char		worker_id[64];	/* its WorkerState.worker_id (HOST:PID) */
	TimestampTz started;		/* its run's start in the pool's clock: the
								 * least (fold time - uptime) over the run's
								 * states (InferPoolFold) */
	double		uptime_s;		/* the last state's uptime */
	uint32		queue_length;
	uint32		busy_threads;
	double		backlog_ms;
	uint64		host_memory_used;
	uint64		host_memory_total;
	uint64		host_memory_free;
	uint64		gpu_memory_total;
	uint64		gpu_memory_free;
	uint64		gpu_memory_cap;
	uint64		max_message_bytes;	/* the largest frame it reads; 0: not
									 * said */
	uint64		requests_served;
	uint64		served_seen;	/* the highest Result.served of its run's
								 * replies (InferPoolAnswered) */
	char		device[64];
	int			nmodels;
	InferPoolModel models[INFER_POOL_MODELS];
	int			ntimings;
	InferPoolTiming timings[INFER_POOL_TIMINGS];
	/* its input cache's Bloom filter (common/protocol.h); 0 hashes: none */
	uint32		bloom_hashes;
	uint8		input_bloom[PGINFER_BLOOM_BYTES];
	/* the backends' work in flight to it */
	int64		inflight_requests;
	int64		inflight_rows;
	double		inflight_ms;
	double		unseen_ms;		/* in flight, sent after the last state
								 * was made (unseen) */
	/* of those, how many runs of each model file they hold (placement.c) */
	int			nunseen;
	uint32		unseen_runs[INFER_POOL_MODELS];
	char		unseen_files[INFER_POOL_MODELS][INFER_POOL_MODEL_LEN];
	/* the sends themselves: ids unseen_head..sent_requests, by id modulo */
	uint64		unseen_head;
	InferPoolSend unseen[INFER_POOL_UNSEEN];
	double		done_ms;		/* answered since the last fold, sent
								 * before it: in its backlog, but done */
	int			done_requests;	/* how many of them */
	uint64		sent_requests;	/* since the slot was taken (the last
								 * send's id; a reservation takes one) */
	uint64		requests_sent;	/* sent since the slot was taken (a
								 * reservation counts at its send) */
	bool		draining;		/* the run whose state it holds said it is
								 * shutting down (57P01): its states are
								 * no heartbeat (a new run's are) */
	TimestampTz marked_at;		/* when a backend marked it down as its
								 * connection dropped or it answered 57P01
								 * (InferPoolMarkDown); 0 once a state is
								 * folded after that (a draining run's
								 * states are not) */
} InferPoolWorker;

/* What InferPoolAddInflight added, to take back (InferPoolRemoveInflight). */
typedef struct InferPoolInflight
{
	int			slot;			/* 1-based; 0: nothing to take back */
	uint32		generation;
	uint64		send_id;		/* its InferPoolSend.id */
	int			rows;
	double		ms;
	bool		unsent;			/* reserved at the pick, not sent yet */
} InferPoolInflight;

extern int	infer_pool_max_workers;
extern int	infer_worker_timeout_ms;

extern void InferPoolInit(void);
extern bool InferPoolEnabled(void);
extern int	InferPoolRegister(const char *name, const char *endpoint);
extern void InferPoolLock(bool exclusive);
extern void InferPoolUnlock(void);
extern InferPoolWorker *InferPoolSlot(int slot);
extern InferPoolStatus InferPoolStatusOf(const InferPoolWorker *w,
										 TimestampTz now);
extern uint32 InferPoolNextTurn(void);
extern void InferPoolAddInflight(const InferWorker *worker, int rows,
								 InferPoolInflight *out);
extern void InferPoolReserveLocked(const InferWorker *worker, int rows,
								   InferPoolInflight *out);
extern void InferPoolSent(const InferWorker *worker, int rows,
						  InferPoolInflight *out);
extern void InferPoolRemoveInflight(InferPoolInflight *in);
extern void InferPoolAnswered(InferPoolInflight *in, uint64 served);
extern void InferPoolMarkDown(int slot, uint32 generation, bool draining,
							  bool dropped, TimestampTz sent_at);
extern bool InferPoolIsSilent(int slot);
extern bool InferPoolIsDown(int slot);
extern bool InferPoolHeardSince(int slot, TimestampTz since);
extern uint64 InferPoolRowLimit(int slot);
extern InferPoolStatus InferPoolSlotStatus(int slot);
extern void InferPoolFold(int slot, uint32 generation,
						  const Pginfer__WorkerState *state, bool published);
extern PGDLLEXPORT void InferPoolMonitorMain(Datum arg);

/* client.c: one event of a ZeroMQ socket monitor (pool.c reads them too) */
extern bool InferZmqNextEvent(void *pair, uint16 *event);

/* registry_loader.c: the pool monitor reads every registry at its start */
extern bool InferRegistryLoadStep(void);
extern PGDLLEXPORT void InferRegistryLoaderMain(Datum arg);

/* ----------
 * stats.c: infer.stats (counters per model and worker), infer.progress
 * (running InferBatch scans) and the per-model pool state of infer.models
 * (need pg_infer in shared_preload_libraries; otherwise nothing is kept)
 * ----------
 */

#define INFER_STATS_MODEL_LEN 256	/* a model label, cut to fit */

/* One InferBatch scan's share of its backend's progress slot. */
typedef struct InferProgressScan
{
	bool		active;
	bool		callback_set;
	int64		rows_done;
	int64		rows_sent;
	int64		batches;
	double		rows_estimate;
	MemoryContextCallback forget;	/* on the scan's memory: stops it */
} InferProgressScan;

extern int	infer_max_stats_entries;

extern void InferStatsInit(void);
extern void InferStatsRequestLabel(const Pginfer__RunFragment *run, char *buf,
								   size_t len);
struct InferFragment;
extern void InferStatsFragmentsLabel(struct InferFragment *const *frags, int n,
									 char *buf, size_t len);
extern uint64 InferStatsNewCall(void);
extern void InferStatsSetCall(uint64 call);
extern uint64 InferStatsCurrentCall(void);
extern void InferStatsSent(const char *model, const char *worker, uint64 call,
						   int64 bytes);
extern void InferStatsDone(const char *model, const char *worker, int nrows,
						   const Pginfer__Header *reply, int64 bytes_received,
						   double wall_ms);
extern void InferProgressStart(InferProgressScan *p, MemoryContext cxt,
							   double rows_estimate);
extern void InferProgressAdd(InferProgressScan *p, int64 rows_done,
							 int64 rows_sent, int64 batches);
extern void InferProgressModels(InferProgressScan *p, const char *label);
extern void InferProgressStop(InferProgressScan *p);

/* ----------
 * placement.c: which worker gets a request (infer.placement)
 * ----------
 */

/* infer.placement values */
typedef enum InferPlacement
{
	INFER_PLACEMENT_COST,		/* least estimated finish time */
	INFER_PLACEMENT_ROUND_ROBIN,	/* in turn, per backend */
	INFER_PLACEMENT_LEAST_LOADED,	/* least wait */
	INFER_PLACEMENT_LOCALITY	/* most of its models resident, then least
								 * wait */
} InferPlacement;

extern int	infer_placement;
extern int	infer_bandwidth_mb;

struct InferFragment;
extern InferWorker *InferPlacementPick(struct InferFragment **frags,
									   int nfrags, int nrows, size_t bytes,
									   size_t largest,
									   const char *const *avoid,
									   int navoid);
extern bool InferPlacementSplits(struct InferFragment **frags, int nfrags,
								 int nrows, size_t bytes, size_t largest);
extern uint64 InferPlacementRowLimit(const char **worker);
extern bool InferPlacementAvoided(const char *name, const char *const *avoid,
								  int navoid);
extern void InferPlacementRelease(const InferWorker *worker);
extern void InferPlacementFree(InferWorker *worker);

/* ----------
 * functions.c: the SQL-callable functions (infer.ocr, infer.predict, ...)
 * and the request/reply code they share with InferBatch: one fragment
 * over any number of rows
 * ----------
 */

/* The ML functions, as the planner recognises them. */
typedef enum InferFunction
{
	INFER_FN_NONE = 0,
	INFER_FN_OCR,				/* infer.ocr(bytea) */
	INFER_FN_DETECT_TEXT,		/* infer.detect_text(bytea) */
	INFER_FN_PREDICT,			/* infer.predict(text, bytea) */
	INFER_FN_CLASSIFY,			/* infer.classify(text, bytea) */
	INFER_FN_EMBED,				/* infer.embed(text, text) */
	INFER_FN_CLASSIFY_TEXT		/* infer.classify(text, text) */
} InferFunction;

/* The last InferFunction, for tables indexed by it. */
#define INFER_FN_LAST INFER_FN_CLASSIFY_TEXT

/*
 * One fragment to run: the function, its models, the worker of the
 * request being made (for messages).  A chained fragment (prev set) takes
 * each row's result of prev as its input instead of the row's payload:
 * infer.embed('minilm', infer.ocr(img)) is the embed fragment with the
 * ocr fragment as prev, sent as one Fragment with a next stage.
 */
typedef struct InferFragment
{
	struct InferFragment *prev; /* the stage before, or NULL */
	InferFunction fn;
	const char *funcname;		/* "infer.ocr", ... */
	Pginfer__FragmentKind kind;
	Pginfer__ModelSpec **models;
	int			nmodels;		/* models with an empty file are skipped */
	InferWorker *worker;		/* NULL until a request is sent */
	int64		row;			/* the input row (the scan's row number,
								 * from 1) whose error is being raised;
								 * 0: none */
	struct InferFragment **with;	/* the other calls' fragments in the
									 * request being waited for (calls over
									 * one input), for the error context */
	int			nwith;
	ErrorContextCallback errcallback;	/* see InferFragmentPushContext */
} InferFragment;

/* The answer to one row: the worker's RowResult and its payload frame. */
typedef struct InferRow
{
	Pginfer__RowResult *result;
	const char *payload;
	size_t		payload_len;
} InferRow;

extern const char *InferFunctionName(InferFunction fn);
extern void InferFragmentInit(InferFragment *frag, InferFunction fn,
							  const char *model);
extern void InferFragmentPushContext(InferFragment *frag);
extern void InferReplyRaiseError(const InferReply *reply);
extern bool InferReplyWorkerLacks(const InferReply *reply);
extern void InferFragmentPopContext(InferFragment *frag);
extern char *InferFragmentDescribe(const InferFragment *frag);
extern void InferFragmentPickWorker(InferFragment *frag,
									const void *const *payload,
									const size_t *len);
extern InferWorker *InferFragmentPickUp(InferFragment **frags, int nfrags,
										int nrows, size_t bytes,
										size_t largest,
										const char *const *avoid,
										int navoid);
extern bool InferRowWithinLimit(size_t len, uint64 limit, const char *worker,
								InferFunction fn, const char *model,
								int64 row);
extern bool InferWorkerReads(const InferWorker *worker, size_t len);
extern void InferRaiseRowTooLarge(const InferWorker *worker, size_t len,
								  InferFunction fn, const char *model,
								  int64 row, bool lost, int elevel);
extern InferFragment *InferFragmentChain(InferFragment *frag,
										 InferFunction fn,
										 const char *model);
extern InferRequest *InferFragmentSend(InferFragment *frag, int nrows,
									   const uint64 *row_ids,
									   const void *const *payloads,
									   const size_t *payload_lens,
									   size_t *bytes_sent);
extern InferRequest *InferFragmentSendMany(InferFragment **frags, int nfrags,
										   int nrows, const uint64 *row_ids,
										   const void *const *payloads,
										   const size_t *payload_lens,
										   size_t *bytes_sent);
extern void InferFragmentCollect(InferFragment *frag, InferReply *reply,
								 int nrows, const uint64 *row_ids,
								 InferRow *rows);
extern void InferFragmentCollectOf(InferFragment *frag, InferReply *reply,
								   int fragment, int nrows,
								   const uint64 *row_ids, InferRow *rows);
extern void InferRowReportError(const InferRow *row, int elevel);
extern void InferResultCheckEncoding(Pginfer__Result *result, MemoryContext cxt);
extern Datum InferRowDatum(const InferFragment *frag, const InferRow *row);
extern const char *InferTextPayload(text *input, size_t *len,
									InferFunction fn, const char *model,
									int64 row);
extern bool InferTextWithinLimit(Datum input, InferFunction fn,
								 const char *model, int64 row);

/* ----------
 * ../planner/planner.c: the planner hook that puts InferBatch nodes in
 * plans
 * ----------
 */

extern void InferPlannerInit(void);
extern InferFunction InferPlannerFunction(Oid funcid);
extern bool InferArgIsStatementValue(const Node *node);
extern bool InferExprIsVolatile(const Node *node);

/* ----------
 * inferbatch.c: the InferBatch custom scan (batched, pipelined ML calls)
 * ----------
 */

/* custom_private of an InferBatch CustomScan, a List indexed by these */
typedef enum InferBatchPrivate
{
	INFERBATCH_PRIVATE_NCHILD = 0,	/* Integer: child columns passed on */
	INFERBATCH_PRIVATE_NCALLS,	/* Integer: ML calls (head of custom_exprs) */
	INFERBATCH_PRIVATE_COUNT
} InferBatchPrivate;

/*
 * custom_exprs of an InferBatch: the NCALLS ML calls (FuncExprs whose
 * arguments are Vars of the child's output, OUTER_VAR; a chained call,
 * infer.embed('minilm', infer.ocr(img)), has the inner call as its input
 * argument and runs as one fragment with a following stage), then the count
 * and offset of the LIMIT right above, or NULL (no row bound).
 * custom_scan_tlist: the child's columns (OUTER_VAR Vars) then the calls.
 */
extern const CustomScanMethods *InferBatchMethods(void);
extern void InferBatchInit(void);

#endif							/* PG_INFER_H */
