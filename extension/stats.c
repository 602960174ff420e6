/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  What a DBA reads about the inference work: infer.stats (counters per
 *	  model and worker), infer.progress (each backend's running InferBatch
 *	  scans) and the per-model pool state behind infer.models' resident_on
 *	  and timings columns.
 *
 * Needs pg_infer in shared_preload_libraries, as the pool does (pool.c):
 * _PG_init then asks for the shared memory of both and one LWLock of the
 * "pg_infer stats" tranche.  Loaded any other way, the counters are not
 * kept, and infer.stats and infer.progress raise 55000 with a hint.
 *
 * infer.stats: a shared hash table of at most infer.max_stats_entries
 * entries keyed by (database, model label, worker name); a database sees
 * its own rows only, as its registries name its models and workers
 * (infer.stats_reset empties every database's).  The model label is the
 * registered names of the models a request runs, each once, in the order
 * they run, joined by '+' ('minilm'; 'ppocr_det+ppocr_cls+ppocr_rec' for
 * infer.ocr).
 * client.c records each MSG_RUN_FRAGMENT request: at send (its bytes, and
 * a call: InferStatsNewCall), when its reply arrives (a result: its rows,
 * the worker's queue and compute times, the rows it rejected; an error:
 * one failed request) and when it fails in the backend (no connection,
 * no answer in time, the worker lost).  A request nobody waits for any
 * more (a cancelled query, a LIMIT met) counts at send only.  When the
 * table holds infer.max_stats_entries keys, a new key's counts are
 * dropped, and counted as dropped (infer.stats_info()).
 *
 * infer.progress: one slot per backend (MaxBackends, indexed by
 * MyBackendId, as PostgreSQL's own progress reporting), written only by
 * its backend, under a per-slot spinlock.  A slot sums the backend's
 * InferBatch scans that are running (nested or parallel plans run more
 * than one); each scan (InferProgressScan) keeps what it added, and takes
 * it back through a memory context callback on the scan's memory, so an
 * ERROR (whose abort frees the executor's memory) or the scan's end
 * clears it; a backend that exits clears its slot (before_shmem_exit).
 *
 * Locking: the hash table's structure is under the LWLock (shared to find
 * an entry, exclusive to add one or reset); an entry's counters are under
 * its spinlock, held for a few additions only, never across a call.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"
#include "curve.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define STATS_TRANCHE "pg_infer stats"

/* The hash key: a model label and a worker name, zero-padded. */
typedef struct StatsKey
{
	Oid			dbid;			/* the database: its registries name the
								 * models and workers */
	char		model[INFER_STATS_MODEL_LEN];
	char		worker[NAMEDATALEN];
} StatsKey;

/* The counters of one key (see the banner and docs/sql.md). */
typedef struct StatsCounters
{
	int64		calls;
	int64		rows;
	int64		batches;
	int64		errors;
	int64		bytes_sent;
	int64		bytes_received;
	double		queue_ms;
	double		compute_ms;
	double		wall_ms;
} StatsCounters;

typedef struct StatsEntry
{
	StatsKey	key;			/* must be first */
	slock_t		mutex;
	StatsCounters c;
} StatsEntry;

/* One backend's progress slot (see the banner). */
typedef struct ProgressSlot
{
	slock_t		mutex;
	int			pid;			/* 0: no InferBatch scan running */
	int			leader_pid;		/* of a parallel worker's leader, or 0 */
	int			scans;			/* InferBatch scans running */
	TimestampTz query_start;	/* the statement's start */
	TimestampTz scan_start;		/* the first running scan's start */
	int64		rows_done;
	int64		rows_sent;
	int64		batches_inflight;
	double		rows_estimate;
	char		models[INFER_STATS_MODEL_LEN];
} ProgressSlot;

typedef struct StatsShared
{
	LWLock	   *lock;
	TimestampTz reset;			/* when the counters started */
	pg_atomic_uint64 dropped;	/* counts with no room in the table */
	int			nslots;			/* progress slots (MaxBackends) */
	ProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} StatsShared;

int			infer_max_stats_entries = 1000;

static StatsShared *stats = NULL;
static HTAB *stats_hash = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The call requests are counted in (InferStatsNewCall), and the keys a call has counted. */
static uint64 stats_call = 0;
static uint64 stats_last_call = 0;
static HTAB *stats_calls_seen = NULL;

/* Local: (key) -> the last call counted for it. */
typedef struct CallSeen
{
	StatsKey	key;
	uint64		call;
} CallSeen;

static bool progress_exit_registered = false;

PG_FUNCTION_INFO_V1(infer_stats);
PG_FUNCTION_INFO_V1(infer_stats_reset);
PG_FUNCTION_INFO_V1(infer_stats_info);
PG_FUNCTION_INFO_V1(infer_progress);
PG_FUNCTION_INFO_V1(infer_model_state);

/* Bytes of the fixed part (with the progress slots). */
static Size
stats_shared_size(void)
{
	return add_size(offsetof(StatsShared, slots),
					mul_size(sizeof(ProgressSlot), MaxBackends));
}

/* shmem_request_hook: the fixed part, the hash table and the lock. */
static void
stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(stats_shared_size(),
									hash_estimate_size(infer_max_stats_entries,
													   sizeof(StatsEntry))));
	RequestNamedLWLockTranche(STATS_TRANCHE, 1);
}

/* shmem_startup_hook: finds or creates both parts. */
static void
stats_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats = ShmemInitStruct("pg_infer stats", stats_shared_size(), &found);
	if (!found)
	{
		memset(stats, 0, stats_shared_size());
		stats->lock = &(GetNamedLWLockTranche(STATS_TRANCHE))->lock;
		stats->reset = GetCurrentTimestamp();
		pg_atomic_init_u64(&stats->dropped, 0);
		stats->nslots = MaxBackends;
		for (int i = 0; i < stats->nslots; i++)
			SpinLockInit(&stats->slots[i].mutex);
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(StatsKey);
	info.entrysize = sizeof(StatsEntry);
	stats_hash = ShmemInitHash("pg_infer stats entries",
							   infer_max_stats_entries, infer_max_stats_entries,
							   &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Called by _PG_init: defines infer.max_stats_entries and, from
 * shared_preload_libraries, asks for the shared memory; otherwise does
 * nothing (the counters are then not kept).
 */
void
InferStatsInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("infer.max_stats_entries",
							"Most (model, worker) pairs infer.stats keeps.",
							"Sizes shared memory; a pair beyond it is not counted.",
							&infer_max_stats_entries,
							1000, 16, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
}

/* Raises 55000 unless the shared memory exists (see the banner). */
static void
stats_require(const char *what)
{
	if (stats == NULL || stats_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s is not available", what),
				 errdetail("pg_infer is not in shared_preload_libraries, so no shared memory holds it."),
				 errhint("Add pg_infer to shared_preload_libraries and restart the server.")));
}

/* ----------
 * Model labels
 * ----------
 */

/* Whether the '+'-separated label holds name. */
static bool
label_has(const char *label, const char *name)
{
	size_t		n = strlen(name);

	for (const char *p = label; *p != '\0';)
	{
		const char *end = strchr(p, '+');
		size_t		len = end != NULL ? (size_t) (end - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		if (end == NULL)
			break;
		p = end + 1;
	}
	return false;
}

/*
 * Appends the registered names of models[0..n) (those with a file, each
 * once) to buf, '+' between.
 */
static void
label_append(char *buf, size_t len, Pginfer__ModelSpec *const *models,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		const char *name = models[i]->name;

		if (models[i]->file == NULL || models[i]->file[0] == '\0' ||
			name == NULL || name[0] == '\0' || label_has(buf, name))
			continue;
		if (buf[0] != '\0')
			strlcat(buf, "+", len);
		strlcat(buf, name, len);
	}
}

/* label_append over a Fragment message and its next stages (run order). */
static void
label_fragment(char *buf, size_t len, const Pginfer__Fragment *f)
{
	for (; f != NULL; f = f->next)
		label_append(buf, len, f->models, f->n_models);
}

/*
 * The model label of a MSG_RUN_FRAGMENT (see the banner) into buf (len
 * bytes, cut to fit): every fragment's models, stages in run order.
 */
void
InferStatsRequestLabel(const Pginfer__RunFragment *run, char *buf, size_t len)
{
	buf[0] = '\0';
	if (run == NULL)
		return;
	label_fragment(buf, len, run->fragment);
	for (size_t i = 0; i < run->n_more_fragments; i++)
		label_fragment(buf, len, run->more_fragments[i]);
}

/* label_append over frag's stages, the first to run (the innermost) first. */
static void
label_chain(char *buf, size_t len, const InferFragment *frag)
{
	if (frag == NULL)
		return;
	label_chain(buf, len, frag->prev);
	label_append(buf, len, frag->models, frag->nmodels);
}

/* The label of the request frags[0..n) make (InferFragmentSendMany), into buf. */
void
InferStatsFragmentsLabel(InferFragment *const *frags, int n, char *buf,
						 size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		label_chain(buf, len, frags[i]);
}

/* ----------
 * Counting (client.c)
 * ----------
 */

/*
 * Starts a new call (a per-row function call, or an InferBatch scan) and
 * returns its number; requests sent until the next InferStatsNewCall or
 * InferStatsSetCall count in it.
 */
uint64
InferStatsNewCall(void)
{
	stats_call = ++stats_last_call;
	return stats_call;
}

/* Makes call (from InferStatsNewCall) the one requests count in. */
void
InferStatsSetCall(uint64 call)
{
	stats_call = call;
}

/* The call requests count in now (0: none was started). */
uint64
InferStatsCurrentCall(void)
{
	return stats_call;
}

/*
 * Whether call is the first of its number to reach key in this backend
 * (then it counts in calls).  Call 0 (no call started) never counts.
 */
static bool
stats_first_of_call(const StatsKey *key, uint64 call)
{
	CallSeen   *seen;
	bool		found;

	if (call == 0)
		return false;
	if (stats_calls_seen == NULL)
	{
		HASHCTL		info;

		memset(&info, 0, sizeof(info));
		info.keysize = sizeof(StatsKey);
		info.entrysize = sizeof(CallSeen);
		info.hcxt = TopMemoryContext;
		stats_calls_seen = hash_create("pg_infer calls seen", 64, &info,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	seen = hash_search(stats_calls_seen, key, HASH_ENTER, &found);
	if (found && seen->call == call)
		return false;
	seen->call = call;
	return true;
}

/*
 * Adds delta to the counters of (model, worker), creating the entry; a
 * key with no room left is counted as dropped.  Never raises an
 * error: it runs on error paths.
 */
static void
stats_add(const char *model, const char *worker, const StatsCounters *d)
{
	StatsKey	key;
	StatsEntry *e;

	if (stats_hash == NULL)
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	strlcpy(key.model, model, sizeof(key.model));
	strlcpy(key.worker, worker, sizeof(key.worker));

	LWLockAcquire(stats->lock, LW_SHARED);
	e = hash_search(stats_hash, &key, HASH_FIND, NULL);
	if (e == NULL)
	{
		bool		found;

		LWLockRelease(stats->lock);
		LWLockAcquire(stats->lock, LW_EXCLUSIVE);
		/* a shared hash table would grow into shared memory others need */
		e = hash_search(stats_hash, &key, HASH_FIND, &found);
		if (e == NULL &&
			hash_get_num_entries(stats_hash) < infer_max_stats_entries)
			e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			LWLockRelease(stats->lock);
			pg_atomic_fetch_add_u64(&stats->dropped, 1);
			return;
		}
		if (!found)
		{
			SpinLockInit(&e->mutex);
			memset(&e->c, 0, sizeof(e->c));
		}
	}
	SpinLockAcquire(&e->mutex);
	e->c.calls += d->calls;
	e->c.rows += d->rows;
	e->c.batches += d->batches;
	e->c.errors += d->errors;
	e->c.bytes_sent += d->bytes_sent;
	e->c.bytes_received += d->bytes_received;
	e->c.queue_ms += d->queue_ms;
	e->c.compute_ms += d->compute_ms;
	e->c.wall_ms += d->wall_ms;
	SpinLockRelease(&e->mutex);
	LWLockRelease(stats->lock);
}

/*
 * Counts a request sent (or sent again, for MSG_NEED_INPUT) to worker
 * under call: bytes (header and payload frames) and, for the call's first
 * request to (model, worker), one call.
 */
void
InferStatsSent(const char *model, const char *worker, uint64 call,
			   int64 bytes)
{
	StatsCounters d;
	StatsKey	key;

	if (stats_hash == NULL)
		return;
	memset(&d, 0, sizeof(d));
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	strlcpy(key.model, model, sizeof(key.model));
	strlcpy(key.worker, worker, sizeof(key.worker));
	d.calls = stats_first_of_call(&key, call) ? 1 : 0;
	d.bytes_sent = bytes;
	stats_add(model, worker, &d);
}

/*
 * Counts the end of a request of nrows rows: reply is its final reply
 * (MSG_RESULT: a batch of nrows rows, the rows the worker rejected as
 * errors, its queue and compute times; anything else: a failed request),
 * or NULL for a request that failed in the backend (one error).
 * bytes_received: the reply's frames; wall_ms: send to reply.
 */
void
InferStatsDone(const char *model, const char *worker, int nrows,
			   const Pginfer__Header *reply, int64 bytes_received,
			   double wall_ms)
{
	StatsCounters d;

	if (stats_hash == NULL)
		return;
	memset(&d, 0, sizeof(d));
	d.bytes_received = bytes_received;
	if (reply != NULL && reply->kind == PGINFER__MSG_KIND__MSG_RESULT &&
		reply->result != NULL)
	{
		d.batches = 1;
		d.rows = nrows;
		d.queue_ms = reply->result->queue_ms;
		d.compute_ms = reply->result->compute_ms;
		d.wall_ms = wall_ms;
		for (size_t i = 0; i < reply->result->n_rows; i++)
			if (!reply->result->rows[i]->ok)
				d.errors++;
	}
	else
		d.errors = 1;
	stats_add(model, worker, &d);
}

/* ----------
 * Progress (inferbatch.c)
 * ----------
 */

/* This backend's slot, or NULL without shared memory. */
static ProgressSlot *
progress_slot(void)
{
	if (stats == NULL || MyBackendId < 1 || MyBackendId > stats->nslots)
		return NULL;
	return &stats->slots[MyBackendId - 1];
}

/* before_shmem_exit: the exiting backend's slot is free. */
static void
progress_exit(int code, Datum arg)
{
	ProgressSlot *s = progress_slot();

	if (s == NULL)
		return;
	SpinLockAcquire(&s->mutex);
	s->pid = 0;
	s->scans = 0;
	SpinLockRelease(&s->mutex);
}

/* Memory context callback: scan p's memory goes, so does its share. */
static void
progress_forget(void *arg)
{
	InferProgressScan *p = (InferProgressScan *) arg;

	p->callback_set = false;	/* a callback runs once */
	InferProgressStop(p);
}

/*
 * Starts reporting scan p (zeroed by the caller, in memory that lives as
 * long as the scan: cxt) of a plan estimated at rows_estimate rows; the
 * end of cxt stops it (InferProgressStop).  Nothing without shared memory.
 */
void
InferProgressStart(InferProgressScan *p, MemoryContext cxt,
				   double rows_estimate)
{
	ProgressSlot *s = progress_slot();
	TimestampTz now = GetCurrentTimestamp();

	if (s == NULL || p->active)
		return;
	if (!progress_exit_registered)
	{
		before_shmem_exit(progress_exit, (Datum) 0);
		progress_exit_registered = true;
	}
	if (!p->callback_set)
	{
		p->forget.func = progress_forget;
		p->forget.arg = p;
		MemoryContextRegisterResetCallback(cxt, &p->forget);
		p->callback_set = true;
	}
	p->active = true;
	p->rows_estimate = rows_estimate;
	SpinLockAcquire(&s->mutex);
	if (s->scans <= 0 || s->pid != MyProcPid)
	{
		s->pid = MyProcPid;
		s->leader_pid = MyProc->lockGroupLeader != NULL &&
			MyProc->lockGroupLeader != MyProc ?
			MyProc->lockGroupLeader->pid : 0;
		s->scans = 0;
		s->query_start = GetCurrentStatementStartTimestamp();
		s->scan_start = now;
		s->rows_done = 0;
		s->rows_sent = 0;
		s->batches_inflight = 0;
		s->rows_estimate = 0;
		s->models[0] = '\0';
	}
	s->scans++;
	s->rows_estimate += rows_estimate;
	SpinLockRelease(&s->mutex);
}

/*
 * Adds to scan p's progress: rows answered, rows sent, and batches in
 * flight (negative when they come back or are forgotten).
 */
void
InferProgressAdd(InferProgressScan *p, int64 rows_done, int64 rows_sent,
				 int64 batches)
{
	ProgressSlot *s = progress_slot();

	if (s == NULL || !p->active)
		return;
	p->rows_done += rows_done;
	p->rows_sent += rows_sent;
	p->batches += batches;
	SpinLockAcquire(&s->mutex);
	s->rows_done += rows_done;
	s->rows_sent += rows_sent;
	s->batches_inflight += batches;
	SpinLockRelease(&s->mutex);
}

/* Whether the ", "-separated list holds label. */
static bool
models_has(const char *list, const char *label)
{
	size_t		n = strlen(label);

	for (const char *p = list; *p != '\0';)
	{
		const char *end = strstr(p, ", ");
		size_t		len = end != NULL ? (size_t) (end - p) : strlen(p);

		if (len == n && strncmp(p, label, n) == 0)
			return true;
		if (end == NULL)
			break;
		p = end + 2;
	}
	return false;
}

/*
 * Adds label (models a request of scan p runs, see the banner) to its
 * slot's models, unless they hold it already (a rescanned scan, or two
 * scans of the same models).
 */
void
InferProgressModels(InferProgressScan *p, const char *label)
{
	ProgressSlot *s = progress_slot();

	if (s == NULL || !p->active)
		return;
	SpinLockAcquire(&s->mutex);
	if (models_has(s->models, label))
	{
		SpinLockRelease(&s->mutex);
		return;
	}
	if (s->models[0] != '\0')
		strlcat(s->models, ", ", sizeof(s->models));
	strlcat(s->models, label, sizeof(s->models));
	SpinLockRelease(&s->mutex);
}

/*
 * Stops reporting scan p: takes back what it added; the slot is free once
 * no scan of the backend runs.  Never raises an error (runs while errors
 * unwind); a second call does nothing.
 */
void
InferProgressStop(InferProgressScan *p)
{
	ProgressSlot *s = progress_slot();

	if (s == NULL || !p->active)
		return;
	p->active = false;
	SpinLockAcquire(&s->mutex);
	s->rows_done -= p->rows_done;
	s->rows_sent -= p->rows_sent;
	s->batches_inflight -= p->batches;
	s->rows_estimate -= p->rows_estimate;
	if (--s->scans <= 0)
	{
		s->pid = 0;
		s->scans = 0;
		s->models[0] = '\0';
	}
	SpinLockRelease(&s->mutex);
	p->rows_done = p->rows_sent = p->batches = 0;
}

/* ----------
 * SQL functions
 * ----------
 */

#define STATS_COLS 14

/*
 * infer._stats(): one row per (model, worker) of the counters (see the
 * banner), with mean_batch_size = rows / batches and rows_per_second =
 * rows over the compute seconds the worker reported (NULL while either is
 * 0).  Errors: 55000 without shared memory.
 */
Datum
infer_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS seq;
	StatsEntry *e;
	TimestampTz reset;

	stats_require("infer.stats");
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(stats->lock, LW_SHARED);
	reset = stats->reset;
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[STATS_COLS];
		bool		nulls[STATS_COLS];
		StatsCounters c;

		/* names are the registries' of this database */
		if (e->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&e->mutex);
		c = e->c;
		SpinLockRelease(&e->mutex);
		memset(nulls, false, sizeof(nulls));
		values[0] = CStringGetTextDatum(e->key.model);
		values[1] = CStringGetTextDatum(e->key.worker);
		values[2] = Int64GetDatum(c.calls);
		values[3] = Int64GetDatum(c.rows);
		values[4] = Int64GetDatum(c.batches);
		values[5] = Float8GetDatum(c.batches > 0 ?
								   (double) c.rows / c.batches : 0);
		nulls[5] = c.batches == 0;
		values[6] = Float8GetDatum(c.compute_ms > 0 ?
								   c.rows / (c.compute_ms / 1000.0) : 0);
		nulls[6] = c.compute_ms <= 0 || c.rows == 0;
		values[7] = Float8GetDatum(c.queue_ms);
		values[8] = Float8GetDatum(c.compute_ms);
		values[9] = Float8GetDatum(c.wall_ms);
		values[10] = Int64GetDatum(c.bytes_sent);
		values[11] = Int64GetDatum(c.bytes_received);
		values[12] = Int64GetDatum(c.errors);
		values[13] = TimestampTzGetDatum(reset);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats->lock);
	return (Datum) 0;
}

/*
 * infer.stats_reset(): empties infer.stats and starts its stats_reset
 * time now.  Errors: 55000 without shared memory.
 */
Datum
infer_stats_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS seq;
	StatsEntry *e;

	stats_require("infer.stats");
	LWLockAcquire(stats->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(stats_hash, &e->key, HASH_REMOVE, NULL);
	stats->reset = GetCurrentTimestamp();
	pg_atomic_write_u64(&stats->dropped, 0);
	LWLockRelease(stats->lock);
	PG_RETURN_VOID();
}

/*
 * infer.stats_info(): the table's size, its entries in use, the counts
 * dropped for want of room, and the last reset.  Errors: 55000 without
 * shared memory.
 */
Datum
infer_stats_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	stats_require("infer.stats");
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	LWLockAcquire(stats->lock, LW_SHARED);
	values[0] = Int32GetDatum(infer_max_stats_entries);
	values[1] = Int64GetDatum((int64) hash_get_num_entries(stats_hash));
	values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&stats->dropped));
	values[3] = TimestampTzGetDatum(stats->reset);
	LWLockRelease(stats->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

#define PROGRESS_COLS 11

/*
 * infer._progress(): one row per backend running InferBatch scans: pid,
 * its parallel leader's pid (NULL for a leader), the statement's and the
 * first scan's start, scans running, rows answered, rows sent, batches in
 * flight, the planner's row estimate (summed over the scans), rows per
 * second since the scan started, and the models.  Errors: 55000 without
 * shared memory.
 */
Datum
infer_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();

	stats_require("infer.progress");
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < stats->nslots; i++)
	{
		ProgressSlot s;
		Datum		values[PROGRESS_COLS];
		bool		nulls[PROGRESS_COLS];
		double		secs;

		SpinLockAcquire(&stats->slots[i].mutex);
		s = stats->slots[i];
		SpinLockRelease(&stats->slots[i].mutex);
		if (s.pid == 0 || s.scans <= 0)
			continue;
		memset(nulls, false, sizeof(nulls));
		secs = (double) (now - s.scan_start) / USECS_PER_SEC;
		values[0] = Int32GetDatum(s.pid);
		values[1] = Int32GetDatum(s.leader_pid);
		nulls[1] = s.leader_pid == 0;
		values[2] = TimestampTzGetDatum(s.query_start);
		values[3] = TimestampTzGetDatum(s.scan_start);
		values[4] = Int32GetDatum(s.scans);
		values[5] = Int64GetDatum(s.rows_done);
		values[6] = Int64GetDatum(s.rows_sent);
		values[7] = Int64GetDatum(s.batches_inflight);
		values[8] = Float8GetDatum(s.rows_estimate);
		values[9] = Float8GetDatum(secs > 0 ? s.rows_done / secs : 0);
		values[10] = CStringGetTextDatum(s.models);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * The name this database's registry (workers, n of them) gives the
 * worker of slot w, or NULL when it holds none there or registers it with
 * another CURVE key (another database's slot, see InferPoolRegister).
 */
static const char *
local_name(const InferWorker *workers, int n, const InferPoolWorker *w)
{
	const char *key = InferCurveKnownServerKey(w->endpoint);

	if (key != NULL && strcmp(key, w->server_key) != 0)
		return NULL;
	for (int i = 0; i < n; i++)
		if (strcmp(workers[i].endpoint, w->endpoint) == 0)
			return workers[i].name;
	return NULL;
}

/*
 * infer._model_state(file): where the model file is resident, by the
 * pool's state (resident_on: worker names, in slot order; a worker down is
 * left out), and what the
 * workers measured for it (timings: a jsonb object by worker name of
 * {"load_ms": its load time, "batch_ms": {"<batch size>": ms, ...}},
 * workers that report nothing on it left out).  Names are this database's
 * (the pool serves every database); workers it does not register are
 * left out.  NULLs without shared memory.
 */
Datum
infer_model_state(PG_FUNCTION_ARGS)
{
	char	   *file = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {true, true};
	int			max_workers = infer_pool_max_workers;
	Datum	   *names;
	int			nres = 0;
	StringInfoData json;
	bool		any = false;
	InferPoolWorker *w;
	InferWorker *registered;
	int			nregistered;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	if (!InferPoolEnabled())
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));

	names = palloc(sizeof(Datum) * Max(max_workers, 1));
	w = palloc(sizeof(InferPoolWorker));
	registered = InferCatalogListWorkers(&nregistered, true);
	initStringInfo(&json);
	appendStringInfoChar(&json, '{');
	for (int slot = 1; slot <= max_workers; slot++)
	{
		bool		resident = false;
		bool		reported = false;
		double		load_ms = -1;
		StringInfoData batch;
		const char *name;

		InferPoolLock(false);
		memcpy(w, InferPoolSlot(slot), sizeof(InferPoolWorker));
		InferPoolUnlock();
		if (!w->used || w->heartbeat == 0 ||
			(name = local_name(registered, nregistered, w)) == NULL)
			continue;
		for (int i = 0; i < w->nmodels; i++)
			if (strcmp(w->models[i].file, file) == 0)
			{
				resident = w->models[i].resident;
				load_ms = w->models[i].load_ms;
				reported = true;
			}
		initStringInfo(&batch);
		for (int i = 0; i < w->ntimings; i++)
		{
			if (strcmp(w->timings[i].file, file) != 0)
				continue;
			appendStringInfo(&batch, "%s\"%u\": %.3f", batch.len > 0 ? ", " : "",
							 w->timings[i].batch_size, w->timings[i].ms);
			reported = true;
		}
		/* a worker down (killed idle, hung) holds nothing that can be used */
		if (resident && InferPoolStatusOf(w, GetCurrentTimestamp()) != INFER_POOL_DOWN)
			names[nres++] = CStringGetTextDatum(name);
		if (!reported)
			continue;
		if (any)
			appendStringInfoString(&json, ", ");
		escape_json(&json, name);
		appendStringInfoString(&json, ": {\"load_ms\": ");
		if (load_ms >= 0)
			appendStringInfo(&json, "%.3f", load_ms);
		else
			appendStringInfoString(&json, "null");
		appendStringInfo(&json, ", \"batch_ms\": {%s}}", batch.data);
		any = true;
	}
	appendStringInfoChar(&json, '}');
	values[0] = PointerGetDatum(construct_array(names, nres, TEXTOID, -1, false,
												TYPALIGN_INT));
	values[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
	nulls[0] = nulls[1] = false;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
