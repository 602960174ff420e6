/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  The worker pool's live state: one slot per worker endpoint in shared
 *	  memory, kept by the pool-monitor background worker from the workers'
 *	  state messages, and the work the backends have in flight to each.
 *
 * Needs pg_infer in shared_preload_libraries: _PG_init then asks for the
 * shared memory (infer.max_workers slots) and one LWLock from the
 * "pg_infer" tranche, and registers the monitor.  Loaded any other way,
 * InferPoolEnabled() is false and placement falls back to round robin.
 *
 * Endpoints: backends put every worker they read from
 * infer.worker_registry (infer.add_worker, each placement, the
 * infer.workers view) into a slot, so the monitor needs no database
 * connection and serves every database; the slot notes each database
 * that did, and infer.drop_worker frees it when the last database still
 * there (of those it notes) drops the worker.
 *
 * The monitor (one process, no database) keeps a DEALER socket per slot
 * and sends MSG_PING on it: every 100 ms while it has no state stream
 * from the worker, every second otherwise.  MSG_PONG carries the worker's
 * WorkerState; when that names a state_endpoint (the worker's PUB socket)
 * the monitor SUBscribes to it and folds every MSG_STATE too.  A worker
 * that publishes nothing is thus still tracked, by PING.  Every state
 * folded is a heartbeat; status is derived from the heartbeat's age when
 * read (InferPoolStatusOf).  The ZeroMQ context is made while the
 * process's signals are still blocked (DESIGN.md "Rules that keep a
 * backend healthy"); the loop waits on the latch, postmaster death and
 * every socket's ZMQ_FD, and reads every socket on each wake-up, as a
 * ZMQ_FD is edge-triggered.  An error ends the monitor; the postmaster
 * starts it again after a second (bgw_restart_time).
 *
 * In-flight work: placement.c reserves a request's rows and estimated ms
 * in its worker's slot as it chooses the worker (InferPoolReserveLocked),
 * client.c dates the reservation at send (InferPoolSent) and takes it
 * back when the reply arrives or the request is forgotten (cancel, error,
 * end of the owner's memory context, process exit); see
 * InferPoolAddInflight.
 *
 * Locking: one LWLock guards every slot; it is held to copy a few fields,
 * or exclusive across one placement choice (a copy of the slots and the
 * arithmetic over them, no I/O), never across a ZeroMQ call.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"
#include "curve.h"

#include <signal.h>
#include <pthread.h>
#include <zmq.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/procsignal.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* The shared part. */
typedef struct PoolShared
{
	LWLock	   *lock;
	int			max_workers;
	Latch	   *monitor_latch;	/* NULL while no monitor runs */
	pg_atomic_uint32 turn;		/* tie-breaking rotation */
	InferPoolWorker workers[FLEXIBLE_ARRAY_MEMBER];
} PoolShared;

#define POOL_TRANCHE "pg_infer"
#define POOL_FAST_PING_MS 100	/* no state stream: PING this often */
#define POOL_SLOW_PING_MS 1000	/* with a state stream */
#define POOL_WAIT_MS 50			/* longest sleep of the monitor */

static PoolShared *pool = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(infer_pool_register);
PG_FUNCTION_INFO_V1(infer_pool_forget);
PG_FUNCTION_INFO_V1(infer_worker_state);

/* Bytes of the shared part for infer.max_workers slots. */
static Size
pool_size(void)
{
	return add_size(offsetof(PoolShared, workers),
					mul_size(sizeof(InferPoolWorker), infer_pool_max_workers));
}

/* shmem_request_hook: the shared part and its lock. */
static void
pool_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(pool_size());
	RequestNamedLWLockTranche(POOL_TRANCHE, 1);
}

/* shmem_startup_hook: finds or creates and zeroes the shared part. */
static void
pool_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pool = ShmemInitStruct("pg_infer worker pool", pool_size(), &found);
	if (!found)
	{
		memset(pool, 0, pool_size());
		pool->lock = &(GetNamedLWLockTranche(POOL_TRANCHE))->lock;
		pool->max_workers = infer_pool_max_workers;
		pg_atomic_init_u32(&pool->turn, 0);
		for (int i = 0; i < pool->max_workers; i++)
			pg_atomic_init_u64(&pool->workers[i].touched, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Called by _PG_init after the settings are defined: when loaded from
 * shared_preload_libraries, asks for the shared memory and registers the
 * pool monitor; otherwise does nothing.
 */
void
InferPoolInit(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pool_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pool_shmem_startup;

	memset(&bgw, 0, sizeof(bgw));
	/*
	 * A connection to no database (shared catalogs only, as the logical
	 * replication launcher): it makes the monitor a backend that
	 * pg_stat_activity lists, and pg_terminate_backend() can stop.
	 */
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/*
	 * A hot standby's read-only queries place their calls too: the monitor
	 * starts once recovery is consistent, and runs on through a promotion
	 * (it writes nothing)
	 */
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = 1;
	strlcpy(bgw.bgw_library_name, "pg_infer", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "InferPoolMonitorMain", BGW_MAXLEN);
	strlcpy(bgw.bgw_name, "pg_infer pool monitor", BGW_MAXLEN);
	strlcpy(bgw.bgw_type, "pg_infer pool monitor", BGW_MAXLEN);
	RegisterBackgroundWorker(&bgw);
}

/* Whether the live state exists (pg_infer in shared_preload_libraries). */
bool
InferPoolEnabled(void)
{
	return pool != NULL;
}

/* Takes the pool's lock, shared or exclusive.  Needs InferPoolEnabled(). */
void
InferPoolLock(bool exclusive)
{
	LWLockAcquire(pool->lock, exclusive ? LW_EXCLUSIVE : LW_SHARED);
}

void
InferPoolUnlock(void)
{
	LWLockRelease(pool->lock);
}

/* The slot numbered slot (1-based); read it under the lock. */
InferPoolWorker *
InferPoolSlot(int slot)
{
	Assert(pool != NULL && slot >= 1 && slot <= pool->max_workers);
	return &pool->workers[slot - 1];
}

/* A number that grows by one per call, shared by every backend. */
uint32
InferPoolNextTurn(void)
{
	return pool ? pg_atomic_fetch_add_u32(&pool->turn, 1) : 0;
}

/*
 * Whether w is the slot of the worker at endpoint with CURVE server key
 * key ('' plain; NULL: any).  A slot is a worker as one registry sees it:
 * two databases that register one endpoint with different keys get a
 * slot each, each watched with its own key, so that the one whose key is
 * wrong sees its worker down and the other's stays up.
 */
static bool
pool_slot_is(const InferPoolWorker *w, const char *endpoint, const char *key)
{
	return w->used && strcmp(w->endpoint, endpoint) == 0 &&
		(key == NULL || strcmp(w->server_key, key) == 0);
}

/* Whether w notes the current database (see InferPoolWorker.dbs). */
static bool
pool_has_db(const InferPoolWorker *w)
{
	for (int i = 0; i < w->ndbs; i++)
		if (w->dbs[i] == MyDatabaseId)
			return true;
	return false;
}

/* Notes the current database in w, with the lock held exclusive. */
static void
pool_add_db(InferPoolWorker *w)
{
	if (pool_has_db(w))
		return;
	if (w->ndbs < INFER_POOL_DATABASES)
		w->dbs[w->ndbs++] = MyDatabaseId;
	else
		w->dbs_overflow = true;
}

/*
 * With every slot taken, the slot (0-based) to give a new endpoint: the
 * one no backend has looked up for the longest, at least
 * POOL_RECLAIM_IDLE_S seconds, with no work in flight (a worker dropped
 * in every database whose note stayed: DROP EXTENSION, a rolled-back
 * infer.add_worker, more databases than a slot notes); -1 when none.  A
 * database that still registers it gets a slot again at its next use,
 * its state from the next heartbeat.  With the lock held exclusive.
 */
#define POOL_RECLAIM_IDLE_S 60
static int
pool_reclaimable(TimestampTz now)
{
	int			best = -1;
	uint64		oldest = 0;

	for (int i = 0; i < pool->max_workers; i++)
	{
		InferPoolWorker *w = &pool->workers[i];
		uint64		t = pg_atomic_read_u64(&w->touched);

		if (!w->used || w->inflight_requests > 0 ||
			!TimestampDifferenceExceeds((TimestampTz) t, now,
										POOL_RECLAIM_IDLE_S * 1000))
			continue;
		if (best < 0 || t < oldest)
		{
			best = i;
			oldest = t;
		}
	}
	return best;
}

/*
 * The slot (1-based) of the worker at endpoint, taking a free one when it
 * has none (and waking the monitor), with the current database noted in
 * it; with none free, one idle for long (pool_reclaimable).  0 without
 * shared memory, when every slot is taken and busy (a WARNING says so,
 * once per statement) or the endpoint is too long.
 */
int
InferPoolRegister(const char *name, const char *endpoint)
{
	static InferOncePerStatement slots_warned;
	int			slot = 0;
	int			free_slot = 0;
	bool		noted = false;
	TimestampTz now;
	char	   *reclaimed = NULL;

	/* the CURVE key this backend read for it (infer.worker_registry) */
	const char *key = InferCurveKnownServerKey(endpoint);

	if (pool == NULL || strlen(endpoint) >= INFER_POOL_ENDPOINT_LEN)
		return 0;
	now = GetCurrentTimestamp();
	LWLockAcquire(pool->lock, LW_SHARED);
	for (int i = 0; i < pool->max_workers && slot == 0; i++)
		if (pool_slot_is(&pool->workers[i], endpoint, key))
		{
			slot = i + 1;
			noted = pool_has_db(&pool->workers[i]) ||
				pool->workers[i].dbs_overflow;
			pg_atomic_write_u64(&pool->workers[i].touched, (uint64) now);
		}
	LWLockRelease(pool->lock);
	if (slot != 0 && noted)
		return slot;

	slot = 0;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	for (int i = 0; i < pool->max_workers && slot == 0; i++)
	{
		if (pool_slot_is(&pool->workers[i], endpoint, key))
		{
			slot = i + 1;
			pool_add_db(&pool->workers[i]);
			pg_atomic_write_u64(&pool->workers[i].touched, (uint64) now);
		}
		else if (!pool->workers[i].used && free_slot == 0)
			free_slot = i + 1;
	}
	if (slot == 0 && free_slot == 0)
	{
		int			idle = pool_reclaimable(now);

		if (idle >= 0)
		{
			/* logged once the lock is released */
			reclaimed = psprintf("\"%s\" at %s", pool->workers[idle].name,
								 pool->workers[idle].endpoint);
			free_slot = idle + 1;
		}
	}
	if (slot == 0 && free_slot != 0)
	{
		InferPoolWorker *w = &pool->workers[free_slot - 1];
		uint32		generation = w->generation + 1;

		memset(w, 0, sizeof(*w));
		w->used = true;
		w->generation = generation;
		strlcpy(w->name, name, NAMEDATALEN);
		strlcpy(w->endpoint, endpoint, INFER_POOL_ENDPOINT_LEN);
		strlcpy(w->server_key, key != NULL ? key : "", sizeof(w->server_key));
		w->registered = now;
		pg_atomic_init_u64(&w->touched, (uint64) now);
		pool_add_db(w);
		slot = free_slot;
	}
	LWLockRelease(pool->lock);
	if (reclaimed != NULL)
		ereport(LOG,
				(errmsg("pg_infer: the pool's slot of inference worker %s, unused for over %d s, goes to \"%s\" at %s",
						reclaimed, POOL_RECLAIM_IDLE_S, name, endpoint)));
	if (slot == 0 && InferFirstInStatement(&slots_warned))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no live state for inference worker \"%s\": all %d slots of infer.max_workers are taken",
						name, pool->max_workers),
				 errhint("Raise infer.max_workers (needs a restart).")));
	else if (slot == free_slot && pool->monitor_latch != NULL)
		SetLatch(pool->monitor_latch);
	return slot;
}

/*
 * Status of w at now, from its heartbeat's age and infer.worker_timeout
 * (see InferPoolStatus); UNKNOWN while no monitor runs.
 */
InferPoolStatus
InferPoolStatusOf(const InferPoolWorker *w, TimestampTz now)
{
	long		age;

	if (pool == NULL || pool->monitor_latch == NULL)
		return INFER_POOL_UNKNOWN;
	if (w->heartbeat == 0)
		return TimestampDifferenceExceeds(w->registered, now,
										  infer_worker_timeout_ms) ?
			INFER_POOL_DOWN : INFER_POOL_UNKNOWN;
	age = TimestampDifferenceMilliseconds(w->heartbeat, now);
	if (age > infer_worker_timeout_ms)
		return INFER_POOL_DOWN;
	if (age > infer_worker_timeout_ms / 2)
		return INFER_POOL_STALE;
	return INFER_POOL_UP;
}

/*
 * Counts the model runs of worker's request in w's unseen_runs (a file two
 * of the request's fragments use runs twice, as the worker's
 * ModelState.queued counts it), and which entries in send e.  Files
 * beyond INFER_POOL_MODELS distinct ones, and names of
 * INFER_POOL_MODEL_LEN bytes or more, are not counted.  Under the pool's
 * exclusive lock.
 */
static void
add_unseen_runs(InferPoolWorker *w, const InferWorker *worker,
				InferPoolSend *e)
{
	for (int r = 0; r < worker->nruns && e->nruns < INFER_POOL_MODELS; r++)
	{
		int			k = 0;

		/* a name the pool cannot hold whole is never matched: not counted */
		if (strlen(worker->runs[r]) >= INFER_POOL_MODEL_LEN)
			continue;
		while (k < w->nunseen &&
			   strncmp(w->unseen_files[k], worker->runs[r], INFER_POOL_MODEL_LEN) != 0)
			k++;
		if (k == w->nunseen)
		{
			/* an entry no unseen send counts any more is free */
			for (k = 0; k < w->nunseen && w->unseen_runs[k] > 0; k++)
				;
			if (k == INFER_POOL_MODELS)
				continue;
			strlcpy(w->unseen_files[k], worker->runs[r], INFER_POOL_MODEL_LEN);
			w->unseen_runs[k] = 0;
			w->nunseen = Max(w->nunseen, k + 1);
		}
		w->unseen_runs[k]++;
		e->runs[e->nruns++] = (int8) k;
	}
}

/* w's send id while it is unseen (in w's ring), else NULL. */
static InferPoolSend *
unseen_send(InferPoolWorker *w, uint64 id)
{
	InferPoolSend *e = &w->unseen[id % INFER_POOL_UNSEEN];

	return id != 0 && e->id == id ? e : NULL;
}

/* Takes send e out of w's unseen work: its estimate and model runs. */
static void
unseen_take(InferPoolWorker *w, InferPoolSend *e)
{
	w->unseen_ms = Max(w->unseen_ms - e->ms, 0.0);
	for (int k = 0; k < e->nruns; k++)
		if (w->unseen_runs[e->runs[k]] > 0)
			w->unseen_runs[e->runs[k]]--;
	e->id = 0;
}

/*
 * Moves w's unseen_head past the sends taken out; when none is left, the
 * unseen counts start afresh (no rounding residue, the file table free).
 */
static void
unseen_trim(InferPoolWorker *w)
{
	uint64		oldest = w->sent_requests >= INFER_POOL_UNSEEN ?
		w->sent_requests - INFER_POOL_UNSEEN + 1 : 0;

	w->unseen_head = Max(w->unseen_head, oldest);
	while (w->unseen_head <= w->sent_requests &&
		   unseen_send(w, w->unseen_head) == NULL)
		w->unseen_head++;
	if (w->unseen_head > w->sent_requests)
	{
		w->unseen_ms = 0;
		w->nunseen = 0;
	}
}

/*
 * Takes out of w's unseen work every send made at or before made (the
 * pool's clock): the worker had them when it made the state just folded,
 * so that state's queue holds them.  A send just before made may still
 * have been on its way (a state made before the worker received it): it
 * is not counted until the next state.
 */
static void
unseen_fold(InferPoolWorker *w, TimestampTz made)
{
	for (uint64 id = w->unseen_head; id <= w->sent_requests; id++)
	{
		InferPoolSend *e = unseen_send(w, id);

		if (e != NULL && e->sent <= made)
			unseen_take(w, e);
	}
	unseen_trim(w);
}

/*
 * Adds a request of rows rows to worker's pool slot, under the pool's
 * exclusive lock: worker->est_ms to its in-flight and unseen work, and
 * its model runs (worker->runs) to the slot's unseen counts, until a state
 * made after sent is folded (InferPoolFold) or it is answered; *out
 * records it for InferPoolRemoveInflight.  sent is DT_NOEND for a request
 * not sent yet (InferPoolReserveLocked): no state takes it out until
 * InferPoolSent dates it.  The slot keeps the last INFER_POOL_UNSEEN
 * sends: an older one still unseen is taken as seen.  Sets out->slot = 0
 * for slot 0 or a slot not in use.
 */
static void
inflight_add(const InferWorker *worker, int rows, TimestampTz sent,
			 InferPoolInflight *out)
{
	int			slot = worker->pool_slot;
	InferPoolWorker *w;

	memset(out, 0, sizeof(*out));
	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return;
	w = &pool->workers[slot - 1];
	if (w->used)
	{
		uint64		id = ++w->sent_requests;
		InferPoolSend *e = &w->unseen[id % INFER_POOL_UNSEEN];

		if (e->id != 0)
			unseen_take(w, e);	/* the oldest, INFER_POOL_UNSEEN sends ago */
		e->id = id;
		e->sent = sent;
		e->ms = worker->est_ms;
		e->nruns = 0;
		add_unseen_runs(w, worker, e);
		unseen_trim(w);
		w->unseen_ms += worker->est_ms;
		w->inflight_requests++;
		w->inflight_rows += rows;
		w->inflight_ms += worker->est_ms;
		out->slot = slot;
		out->generation = w->generation;
		out->send_id = id;
		out->rows = rows;
		out->ms = worker->est_ms;
		out->unsent = sent == DT_NOEND;
		if (!out->unsent)
			w->requests_sent++;
	}
}

/*
 * Adds a request of rows rows, sent just now, to the in-flight work of
 * worker's pool slot (inflight_add).  The time is taken after the send: a
 * state made just before it may already hold it, counted twice until the
 * next state, rather than none.  No-op (out->slot = 0) for slot 0 or
 * without shared memory.
 */
void
InferPoolAddInflight(const InferWorker *worker, int rows, InferPoolInflight *out)
{
	TimestampTz sent = GetCurrentTimestamp();

	memset(out, 0, sizeof(*out));
	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	inflight_add(worker, rows, sent, out);
	LWLockRelease(pool->lock);
}

/*
 * Reserves the request of rows rows that placement has just chosen worker
 * for, under the pool's exclusive lock, which the caller holds and under
 * which it made the choice (placement.c): the next backend's choice sees
 * it, where one made between this choice and its send (the request's
 * packing, a connection, 3 MB of image rows) would not.  It counts as
 * InferPoolAddInflight's entry does, but no state takes it out of the
 * unseen work until InferPoolSent dates the send; InferPoolRemoveInflight
 * takes it back when the request is not sent.
 */
void
InferPoolReserveLocked(const InferWorker *worker, int rows,
					   InferPoolInflight *out)
{
	Assert(pool == NULL || LWLockHeldByMeInMode(pool->lock, LW_EXCLUSIVE));
	inflight_add(worker, rows, DT_NOEND, out);
}

/*
 * Counts the request sent just now to worker (rows rows) in the pool, in
 * *out: placement's reservation (worker->reserved), dated now and handed
 * over (the reservation then holds nothing; its rows, those placement was
 * given, stand: every caller sends those), or else a new entry
 * (InferPoolAddInflight: no pool at the choice, a reservation taken back
 * or already handed to an earlier send).  Never raises an error.
 */
void
InferPoolSent(const InferWorker *worker, int rows, InferPoolInflight *out)
{
	InferPoolInflight *r = worker->reserved;
	TimestampTz now;
	InferPoolWorker *w;

	if (pool == NULL || r == NULL || r->slot == 0)
	{
		InferPoolAddInflight(worker, rows, out);
		return;
	}
	now = GetCurrentTimestamp();
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	w = &pool->workers[r->slot - 1];
	if (w->used && w->generation == r->generation)
	{
		InferPoolSend *e = unseen_send(w, r->send_id);

		if (e != NULL)
			e->sent = now;
		w->requests_sent++;
	}
	LWLockRelease(pool->lock);
	*out = *r;
	out->unsent = false;
	r->slot = 0;
}

/*
 * Takes back what InferPoolAddInflight recorded in *in (once: in->slot
 * becomes 0).  Never raises an error: it runs while errors unwind.
 */
void
InferPoolRemoveInflight(InferPoolInflight *in)
{
	InferPoolAnswered(in, 0);
}

/*
 * InferPoolRemoveInflight for a request answered with a result whose
 * Result.served is served (0: none): the highest such count of the
 * worker's run is kept (served_seen), so that placement knows how many
 * requests the last state counts as queued were answered after it was
 * made (placement.c waiting_for), whichever backend they came from.
 * Never raises an error.
 */
void
InferPoolAnswered(InferPoolInflight *in, uint64 served)
{
	InferPoolWorker *w;

	if (pool == NULL || in->slot == 0)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	w = &pool->workers[in->slot - 1];
	if (w->used && w->generation == in->generation)
	{
		InferPoolSend *e = unseen_send(w, in->send_id);

		w->served_seen = Max(w->served_seen, served);
		w->inflight_requests = Max(w->inflight_requests - 1, 0);
		w->inflight_rows = Max(w->inflight_rows - in->rows, 0);
		w->inflight_ms = Max(w->inflight_ms - in->ms, 0.0);
		/* not yet in a state the worker sent: not in its backlog either */
		if (e != NULL)
		{
			unseen_take(w, e);
			unseen_trim(w);
		}
		/* in the last state's backlog, but done now (placement.c) */
		else if (!in->unsent)
		{
			w->done_ms += in->ms;
			w->done_requests++;
		}
		/* no rounding residue once nothing is in flight */
		if (w->inflight_requests == 0)
		{
			w->inflight_ms = 0;
			for (int k = 0; k < INFER_POOL_UNSEEN; k++)
				w->unseen[k].id = 0;
			unseen_trim(w);
		}
	}
	LWLockRelease(pool->lock);
	in->slot = 0;
}

/*
 * Marks slot down now (when it still holds the worker of generation; 0:
 * whichever it holds), as a backend lost a request there that went out at
 * sent_at (or the pool monitor's ping sent then was answered 57P01): the connection to the worker dropped (dropped), the worker
 * stopped answering (no heartbeat for infer.worker_timeout: neither
 * flag), or (draining) it answered that it is shutting down (57P01).  Its
 * heartbeat is forgotten and its registration dated back, so it is down
 * until the monitor hears from it again; when draining, the states its
 * present run may still send are no heartbeat (InferPoolFold), so it gets
 * no new work, and a new run of a worker at that endpoint (a restart) is
 * up again at its first state.
 *
 * A drop or a drain is dated (marked_at, see InferPoolIsSilent) when the
 * worker was not down already, and only by the first backend to see it:
 * the requests of other backends sent before it see it themselves (their
 * connection drops, or the worker answers them 57P01 too once it has
 * stopped the one it runs), and a later date would put off their finding
 * a worker that never comes back.  A hang is not dated: it concerns every
 * request the worker holds.
 *
 * No-op when the slot holds a run of the worker that started after
 * sent_at (its state folded: a worker restarted on the endpoint): that
 * run never had the request, and marking it would take a healthy worker
 * down, for good when draining, as the new run's states would then count
 * for nothing.  A backend reads a reply or a drop late when it waits for
 * another part of its query first.  No-op for slot 0.
 */
void
InferPoolMarkDown(int slot, uint32 generation, bool draining, bool dropped,
				  TimestampTz sent_at)
{
	InferPoolWorker *w;

	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	w = &pool->workers[slot - 1];
	if (w->used && (generation == 0 || w->generation == generation) &&
		!(w->folds > 0 && w->started > sent_at))
	{
		TimestampTz now = GetCurrentTimestamp();

		if (draining && w->folds > 0)
			w->draining = true;
		if (!dropped && !draining)
			w->marked_at = 0;
		else if (w->marked_at == 0 &&
				 InferPoolStatusOf(w, now) != INFER_POOL_DOWN)
			w->marked_at = now;
		w->heartbeat = 0;
		w->registered = 0;
	}
	LWLockRelease(pool->lock);
}

/*
 * Whether slot's worker is down for want of a heartbeat (hung or
 * unreachable), not only because a backend marked it down within
 * infer.worker_timeout when its connection dropped or it answered that it
 * is shutting down (InferPoolMarkDown): a request that went out over a
 * connection made after the drop (to a worker restarted on the endpoint)
 * is then still awaited, as each backend's own socket sees a drop that
 * concerns its requests (client.c), and so is one that a shutting-down
 * worker runs, as it answers that too (57P01) once it has stopped it
 * between rows: lost for want of a heartbeat, it would be counted a loss
 * on the worker and spend one of infer.retries.  A worker still silent
 * infer.worker_timeout after the mark is lost.  False for slot 0.
 */
bool
InferPoolIsSilent(int slot)
{
	InferPoolWorker *w;
	bool		silent = false;

	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return false;
	LWLockAcquire(pool->lock, LW_SHARED);
	w = &pool->workers[slot - 1];
	if (w->used)
	{
		TimestampTz now = GetCurrentTimestamp();

		silent = InferPoolStatusOf(w, now) == INFER_POOL_DOWN &&
			(w->marked_at == 0 ||
			 TimestampDifferenceExceeds(w->marked_at, now,
										infer_worker_timeout_ms));
	}
	LWLockRelease(pool->lock);
	return silent;
}

/*
 * Whether the pool folded a state of slot's worker after since (a
 * heartbeat: it is alive, or a new run of it is); false for slot 0.
 */
bool
InferPoolHeardSince(int slot, TimestampTz since)
{
	bool		heard = false;

	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return false;
	LWLockAcquire(pool->lock, LW_SHARED);
	heard = pool->workers[slot - 1].used &&
		pool->workers[slot - 1].heartbeat > since;
	LWLockRelease(pool->lock);
	return heard;
}

/*
 * The largest frame slot's worker said it reads (WorkerState.
 * max_message_bytes, its --max-message-bytes), in bytes; 0 when it has
 * said none (no state yet, an older worker) and for slot 0.
 */
uint64
InferPoolRowLimit(int slot)
{
	uint64		limit = 0;

	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return 0;
	LWLockAcquire(pool->lock, LW_SHARED);
	if (pool->workers[slot - 1].used)
		limit = pool->workers[slot - 1].max_message_bytes;
	LWLockRelease(pool->lock);
	return limit;
}

/* Status of slot's worker now (UNKNOWN for slot 0 or a free slot). */
InferPoolStatus
InferPoolSlotStatus(int slot)
{
	InferPoolStatus status = INFER_POOL_UNKNOWN;

	if (pool == NULL || slot < 1 || slot > pool->max_workers)
		return status;
	LWLockAcquire(pool->lock, LW_SHARED);
	if (pool->workers[slot - 1].used)
		status = InferPoolStatusOf(&pool->workers[slot - 1],
								   GetCurrentTimestamp());
	LWLockRelease(pool->lock);
	return status;
}

/* Whether slot's worker is down now (false for slot 0). */
bool
InferPoolIsDown(int slot)
{
	return InferPoolSlotStatus(slot) == INFER_POOL_DOWN;
}

/*
 * How fast a run's start (InferPoolWorker.started) may move forward, in
 * seconds per second of the pool's clock: up to 0.1% of drift between the
 * worker's clock and the pool's, and a step back of the pool's clock
 * undone at that pace.
 */
#define POOL_START_CREEP 1e-3

/*
 * Whether st comes from the run of the worker whose state w holds
 * (started: now less st's uptime): the same worker_id (HOST:PID), and
 * either a later state (seq and uptime grown) or an earlier one (seq and
 * uptime not grown) whose start, however late it came, is before the
 * held state was made: a worker restarted under the same id (a
 * container's PID 1) starts its seq and uptime again, and after that.
 * (A PONG a backend folded, or the monitor read first, overtakes PUB
 * states.)
 */
static bool
same_run(const InferPoolWorker *w, const Pginfer__WorkerState *st,
		 TimestampTz started)
{
	if (w->folds == 0 ||
		strncmp(w->worker_id, st->worker_id ? st->worker_id : "",
				sizeof(w->worker_id) - 1) != 0)
		return false;
	if (st->seq > w->seq)
		return st->uptime_s >= w->uptime_s;
	return st->uptime_s <= w->uptime_s &&
		started < w->started + (TimestampTz) (w->uptime_s * 1000000.0);
}

/*
 * Folds a worker's state into slot (when it still holds the same worker,
 * generation; 0: whichever it holds) and counts it as a heartbeat;
 * published: it came over the worker's PUB socket (else in a PONG).
 */
void
InferPoolFold(int slot, uint32 generation, const Pginfer__WorkerState *st,
			  bool published)
{
	InferPoolWorker *w;
	TimestampTz now,
				started;
	bool		new_run;

	if (pool == NULL || slot < 1 || slot > pool->max_workers || st == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	w = &pool->workers[slot - 1];
	if (!w->used || (generation != 0 && w->generation != generation))
	{
		LWLockRelease(pool->lock);
		return;
	}
	now = GetCurrentTimestamp();
	started = now - (TimestampTz) (st->uptime_s * 1000000.0);
	new_run = !same_run(w, st, started);
	/* a run that said it is shutting down stays down (InferPoolMarkDown) */
	if (w->draining && !new_run)
	{
		LWLockRelease(pool->lock);
		return;
	}
	w->draining = false;
	w->marked_at = 0;
	/* the run's start: creeps forward by POOL_START_CREEP, see below */
	if (!new_run && w->heartbeat != 0 && now > w->heartbeat)
		w->started += (TimestampTz) ((now - w->heartbeat) * POOL_START_CREEP);
	w->heartbeat = now;

	/*
	 * An older state than the one held (a PUB message that left before the
	 * PONG a backend folded, say) is a heartbeat but no news.
	 */
	if (!new_run && st->seq < w->seq)
	{
		LWLockRelease(pool->lock);
		return;
	}

	/*
	 * When the state was made, in the pool's clock: now less the uptime is
	 * the run's start plus this state's delay on its way and in the
	 * monitor's queue; the least of that over the run's states is the
	 * start plus the least delay seen (no clock of the worker's is
	 * compared with the pool's, only the uptime's seconds).  It creeps
	 * forward, so that a worker clock slower than the pool's (another
	 * host's) or a step of the pool's clock does not leave it behind.
	 */
	if (new_run)
	{
		w->started = started;
		w->served_seen = 0;		/* a new run counts its answers from 0 */
		strlcpy(w->worker_id, st->worker_id ? st->worker_id : "",
				sizeof(w->worker_id));
	}
	w->started = Min(w->started, started);
	w->uptime_s = st->uptime_s;
	unseen_fold(w, w->started + (TimestampTz) (st->uptime_s * 1000000.0));
	w->published = published;
	w->folds++;
	w->done_ms = 0;
	w->done_requests = 0;
	w->seq = st->seq;
	w->queue_length = st->queue_length;
	w->busy_threads = st->busy_threads;
	w->backlog_ms = st->backlog_ms;
	w->host_memory_used = st->host_memory_used;
	w->host_memory_total = st->host_memory_total;
	w->host_memory_free = st->host_memory_free;
	w->gpu_memory_total = st->gpu_memory_total;
	w->gpu_memory_free = st->gpu_memory_free;
	w->gpu_memory_cap = st->gpu_memory_cap;
	w->max_message_bytes = st->max_message_bytes;
	w->requests_served = st->requests_served;
	strlcpy(w->device, st->device ? st->device : "", sizeof(w->device));
	strlcpy(w->state_endpoint, st->state_endpoint ? st->state_endpoint : "",
			INFER_POOL_ENDPOINT_LEN);
	w->nmodels = 0;
	if (st->n_models > 0)
	{
		for (size_t i = 0; i < st->n_models && w->nmodels < INFER_POOL_MODELS; i++)
		{
			const Pginfer__ModelState *m = st->models[i];
			InferPoolModel *pm = &w->models[w->nmodels++];

			strlcpy(pm->file, m->file ? m->file : "", INFER_POOL_MODEL_LEN);
			pm->resident = m->resident;
			pm->queued = m->queued;
			pm->bytes = m->bytes;
			pm->load_ms = m->load_ms;
		}
	}
	else
	{
		/* a worker without ModelState: its resident files only */
		for (size_t i = 0; i < st->n_resident_models && w->nmodels < INFER_POOL_MODELS; i++)
		{
			InferPoolModel *pm = &w->models[w->nmodels++];

			memset(pm, 0, sizeof(*pm));
			strlcpy(pm->file, st->resident_models[i], INFER_POOL_MODEL_LEN);
			pm->resident = true;
		}
	}
	w->ntimings = 0;
	for (size_t i = 0; i < st->n_timings && w->ntimings < INFER_POOL_TIMINGS; i++)
	{
		const Pginfer__ModelTiming *t = st->timings[i];
		InferPoolTiming *pt = &w->timings[w->ntimings++];

		strlcpy(pt->file, t->file ? t->file : "", INFER_POOL_MODEL_LEN);
		pt->batch_size = t->batch_size;
		pt->ms = t->ms;
	}
	/* the input cache's filter: kept only in the size both sides use */
	if (st->input_bloom.len == PGINFER_BLOOM_BYTES && st->bloom_hashes > 0 &&
		st->bloom_hashes <= 64)
	{
		memcpy(w->input_bloom, st->input_bloom.data, PGINFER_BLOOM_BYTES);
		w->bloom_hashes = st->bloom_hashes;
	}
	else
		w->bloom_hashes = 0;
	LWLockRelease(pool->lock);
}

/* ----------
 * The pool monitor
 * ----------
 */

/* The monitor's own view of one slot: its sockets. */
/* Pings a monitor slot remembers the send time of (monitor_ping). */
#define MON_PINGS 16

typedef struct MonSlot
{
	uint32		generation;		/* of the slot these sockets serve; 0 none */
	void	   *dealer;			/* PINGs to the request endpoint */
	void	   *events;			/* PAIR receiving the dealer's handshake
								 * events (monitor_handshakes), or NULL */
	void	   *sub;			/* the worker's state stream, or NULL */
	char		endpoint[INFER_POOL_ENDPOINT_LEN];
	char		sub_endpoint[INFER_POOL_ENDPOINT_LEN];
	char		server_key[41];	/* the slot's CURVE key the sockets use */
	bool		curve;			/* keys hold this monitor's client keys */
	InferCurveKeys keys;
	TimestampTz last_ping;
	TimestampTz last_sub_state; /* last MSG_STATE over sub */
	InferPoolStatus logged;		/* the status monitor_log_status logged */
	bool		rebuild;		/* monitor_sync makes the sockets anew */
	bool		handshaking;	/* the dealer connected, no handshake yet */
	int			retry_ms;		/* the wait after the last failed handshake
								 * (0: none failed since one succeeded) */
	TimestampTz retry_at;		/* monitor_sync makes the sockets anew then;
								 * 0: not waiting */
	/* the last pings sent, by request id modulo MON_PINGS (id 0: none) */
	uint64		ping_ids[MON_PINGS];
	TimestampTz ping_sent[MON_PINGS];
} MonSlot;

static void *mon_context = NULL;
static MonSlot *mon_slots = NULL;
static uint64 mon_request_id = 0;
static int	mon_events_counter = 0;	/* names the events' inproc endpoints */

/*
 * The first and the longest wait before trying a failed handshake again;
 * a connection closed (or timed out) before its handshake ended, which a
 * TCP proxy in front of a worker that is down does too, waits at most
 * MON_RETRY_CLOSED_MS, so that such a worker is found within that once
 * it is back.
 */
#define MON_RETRY_FIRST_MS 1000
#define MON_RETRY_MAX_MS 10000
#define MON_RETRY_CLOSED_MS 2000

/* before_shmem_exit: no monitor any more. */
static void
monitor_detach(int code, Datum arg)
{
	if (pool != NULL)
	{
		LWLockAcquire(pool->lock, LW_EXCLUSIVE);
		pool->monitor_latch = NULL;
		LWLockRelease(pool->lock);
	}
}

/* Closes s's sockets, keeping which worker the slot serves. */
static void
monitor_close_sockets(MonSlot *s)
{
	if (s->dealer)
		zmq_close(s->dealer);
	if (s->events)
		zmq_close(s->events);
	if (s->sub)
		zmq_close(s->sub);
	s->dealer = s->events = s->sub = NULL;
	s->sub_endpoint[0] = '\0';
	s->handshaking = false;
}

/* Closes s's sockets and forgets the worker it served. */
static void
monitor_close(MonSlot *s)
{
	monitor_close_sockets(s);
	s->retry_at = 0;
	s->generation = 0;
	s->logged = INFER_POOL_UNKNOWN;
	s->server_key[0] = '\0';
	s->curve = false;
	explicit_bzero(&s->keys, sizeof(s->keys));
}

/*
 * A socket of type with linger 0 (and IPv6 on) for s's worker, a CURVE
 * client when s has keys; NULL when it cannot be made.
 */
static void *
monitor_socket(MonSlot *s, int type)
{
	void	   *sock = zmq_socket(mon_context, type);
	int			zero = 0;
	int			one = 1;

	if (sock == NULL)
		return NULL;
	if (s->curve && InferCurveApply(sock, &s->keys) != 0)
	{
		elog(LOG, "pg_infer pool monitor: cannot set the CURVE keys for %s: %s",
			 s->endpoint, zmq_strerror(zmq_errno()));
		zmq_close(sock);
		return NULL;
	}
	(void) zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof(zero));
	(void) zmq_setsockopt(sock, ZMQ_IPV6, &one, sizeof(one));
	if (type == ZMQ_DEALER)
		(void) zmq_setsockopt(sock, ZMQ_IMMEDIATE, &one, sizeof(one));
	if (type == ZMQ_SUB)
		(void) zmq_setsockopt(sock, ZMQ_SUBSCRIBE, "", 0);
	return sock;
}

/*
 * Fills s->keys for a CURVE worker: its server key (s->server_key) and
 * this process's key pair (infer.curve_secret_key_file and
 * infer.curve_public_key_file, as backends use them).  A missing or bad key
 * pair is logged, not raised, so that the monitor keeps serving the other
 * workers; the worker is then never heard from and goes down.
 */
static bool
monitor_curve_keys(MonSlot *s, const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = false;

	PG_TRY();
	{
		const InferCurveKeys *k;

		InferCurveNoteServerKey(s->endpoint, s->server_key);
		k = InferCurveClientKeys(s->endpoint, name);
		if (k != NULL)
		{
			s->keys = *k;
			ok = true;
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		elog(LOG, "pg_infer pool monitor: cannot watch CURVE worker \"%s\" at %s: %s",
			 name, s->endpoint, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return ok;
}

/* The key pair settings the monitor's CURVE sockets were made with. */
static char *mon_secret_path = NULL;
static char *mon_public_path = NULL;

/*
 * Whether the key pair settings (infer.curve_secret_key_file and
 * infer.curve_public_key_file) differ from what the monitor last noted;
 * notes them.
 */
static bool
monitor_curve_paths_changed(void)
{
	const char *secret = infer_curve_secret_key_file ? infer_curve_secret_key_file : "";
	const char *public = infer_curve_public_key_file ? infer_curve_public_key_file : "";
	bool		changed = mon_secret_path == NULL ||
		strcmp(mon_secret_path, secret) != 0 || strcmp(mon_public_path, public) != 0;

	if (changed)
	{
		if (mon_secret_path != NULL)
			pfree(mon_secret_path);
		if (mon_public_path != NULL)
			pfree(mon_public_path);
		mon_secret_path = MemoryContextStrdup(TopMemoryContext, secret);
		mon_public_path = MemoryContextStrdup(TopMemoryContext, public);
	}
	return changed;
}

/*
 * After a configuration reload: the CURVE workers the monitor could not
 * watch (its key pair was not set, or not usable) are tried again, and all
 * CURVE workers when the key pair settings changed: monitor_sync makes
 * their sockets anew.  Without it, such a worker stayed down until the
 * server restarted, however the keys were fixed.
 */
static void
monitor_curve_reload(void)
{
	bool		changed = monitor_curve_paths_changed();

	for (int i = 0; i < pool->max_workers; i++)
	{
		MonSlot    *s = &mon_slots[i];

		if (s->generation != 0 && s->server_key[0] != '\0' && (changed || !s->curve))
			s->rebuild = true;
	}
}

/*
 * Watches s->dealer's handshakes (monitor_handshakes) through a new PAIR
 * socket, s->events; call it before the dealer connects, as events sent
 * before the PAIR is connected are lost.  Returns false (logged, the
 * dealer's monitor stopped) when it cannot: the caller then tries the
 * slot's sockets again later, as after a failed handshake.
 */
static bool
monitor_watch_handshakes(MonSlot *s)
{
	char		addr[64];
	int			zero = 0;

	snprintf(addr, sizeof(addr), "inproc://pg_infer-pool-events-%d",
			 ++mon_events_counter);
	if (zmq_socket_monitor(s->dealer, addr,
						   ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
						   ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
						   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
						   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
						   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0 ||
		(s->events = zmq_socket(mon_context, ZMQ_PAIR)) == NULL ||
		zmq_setsockopt(s->events, ZMQ_LINGER, &zero, sizeof(zero)) != 0 ||
		zmq_connect(s->events, addr) != 0)
	{
		elog(LOG, "pg_infer pool monitor: cannot watch the handshakes with %s: %s",
			 s->endpoint, zmq_strerror(zmq_errno()));
		(void) zmq_socket_monitor(s->dealer, NULL, 0);
		if (s->events != NULL)
			zmq_close(s->events);
		s->events = NULL;
		return false;
	}
	return true;
}

/*
 * Logs slot i's first failed handshake since one succeeded (or since it
 * was registered): event is the ZMQ_EVENT_HANDSHAKE_FAILED_* seen, or
 * ZMQ_EVENT_DISCONNECTED for a connection closed before its handshake.
 */
static void
monitor_log_handshake(int i, MonSlot *s, uint16_t event)
{
	char		name[NAMEDATALEN];

	LWLockAcquire(pool->lock, LW_SHARED);
	strlcpy(name, pool->workers[i].name, sizeof(name));
	LWLockRelease(pool->lock);
	ereport(LOG,
			(errmsg("pg_infer pool monitor: inference worker \"%s\" at %s did not complete the ZeroMQ handshake",
					name, s->endpoint),
			 event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ?
			 errdetail("The worker refused this server's CURVE key: its --curve-allowed-clients file lacks the key of infer.curve_public_key_file.") :
			 event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ?
			 errdetail("A connection was made, but what listens there does not speak the worker's protocol: another server, or the worker's --state-listen or --metrics-listen port rather than its --listen one.") :
			 errdetail("A connection was made, but it was closed or timed out before the handshake ended: another server listens there (the worker's --state-listen or --metrics-listen port rather than its --listen one), a proxy whose worker is down, or the worker is hung (stopped)."),
			 errhint("The monitor connects again after %d s, then at most every %d s, until a handshake succeeds.",
					 MON_RETRY_FIRST_MS / 1000,
					 (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
					  event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ?
					  MON_RETRY_MAX_MS : MON_RETRY_CLOSED_MS) / 1000)));
}

/*
 * Reads the handshake events of slot i's dealer (s->events).  After a
 * failed handshake (refused, not the protocol, or a connection closed
 * or timed out before it ended) the slot's sockets are closed and made
 * anew by monitor_sync after a wait that doubles from MON_RETRY_FIRST_MS
 * up to MON_RETRY_MAX_MS (MON_RETRY_CLOSED_MS for a connection closed)
 * and starts again at a handshake that succeeds: ZeroMQ
 * connects again every ZMQ_RECONNECT_IVL (100 ms) after a connection that
 * was made, so an endpoint where another server listens would get ten
 * connections a second (PostgreSQL's own port logs each), and it never
 * connects again after a worker refused the CURVE key, so such a worker,
 * started again with the key allowed, would stay down.  Returns whether
 * the sockets were closed.
 */
static bool
monitor_handshakes(int i, MonSlot *s, TimestampTz now)
{
	uint16_t	failed = 0;
	uint16		event;

	while (s->events != NULL && InferZmqNextEvent(s->events, &event))
	{
		if (event == ZMQ_EVENT_CONNECTED)
			s->handshaking = true;
		else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
		{
			/* a failure before it in this batch is over */
			s->handshaking = false;
			s->retry_ms = 0;
			failed = 0;
		}
		else if (event == ZMQ_EVENT_DISCONNECTED && s->handshaking)
			failed = failed ? failed : event;
		else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ||
				 event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
				 event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
			failed = event;
		if (event == ZMQ_EVENT_DISCONNECTED)
			s->handshaking = false;
	}
	if (failed == 0)
		return false;

	if (s->retry_ms == 0)
		monitor_log_handshake(i, s, failed);
	s->retry_ms = s->retry_ms == 0 ? MON_RETRY_FIRST_MS :
		Min(s->retry_ms * 2,
			failed == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
			failed == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ?
			MON_RETRY_MAX_MS : MON_RETRY_CLOSED_MS);
	s->retry_at = TimestampTzPlusMilliseconds(now, s->retry_ms);
	monitor_close_sockets(s);
	return true;
}

/*
 * Brings the monitor's sockets in line with the slots: new workers get a
 * DEALER, dropped ones lose theirs.  Returns whether any socket changed.
 */
static bool
monitor_sync(void)
{
	bool		changed = false;
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < pool->max_workers; i++)
	{
		MonSlot    *s = &mon_slots[i];
		uint32		generation;
		char		endpoint[INFER_POOL_ENDPOINT_LEN];
		char		key[41];
		InferPoolStatus logged;
		int			retry_ms;

		LWLockAcquire(pool->lock, LW_SHARED);
		generation = pool->workers[i].used ? pool->workers[i].generation : 0;
		strlcpy(endpoint, pool->workers[i].endpoint, sizeof(endpoint));
		strlcpy(key, pool->workers[i].server_key, sizeof(key));
		LWLockRelease(pool->lock);

		if (generation == s->generation && strcmp(key, s->server_key) == 0 &&
			!s->rebuild && (s->retry_at == 0 || now < s->retry_at))
			continue;
		changed = true;
		/*
		 * the same worker's sockets made anew: what was logged, and the
		 * back-off of failed handshakes, stand
		 */
		logged = generation == s->generation ? s->logged : INFER_POOL_UNKNOWN;
		retry_ms = generation == s->generation ? s->retry_ms : 0;
		monitor_close(s);
		s->rebuild = false;
		s->logged = logged;
		s->retry_ms = retry_ms;
		if (generation == 0)
			continue;
		s->generation = generation;
		strlcpy(s->endpoint, endpoint, sizeof(s->endpoint));
		strlcpy(s->server_key, key, sizeof(s->server_key));
		s->curve = key[0] != '\0' && monitor_curve_keys(s, pool->workers[i].name);
		if (key[0] != '\0' && !s->curve)
			continue;			/* no keys: never heard from, so it goes down */
		s->last_ping = 0;
		s->last_sub_state = 0;
		s->dealer = monitor_socket(s, ZMQ_DEALER);
		if (s->dealer != NULL && !monitor_watch_handshakes(s))
		{
			/* tried again as after a failed handshake */
			monitor_close_sockets(s);
			s->retry_ms = MON_RETRY_MAX_MS;
			s->retry_at = TimestampTzPlusMilliseconds(now, s->retry_ms);
		}
		if (s->dealer != NULL && zmq_connect(s->dealer, endpoint) != 0)
		{
			/* a bad endpoint: never heard from, so it goes down */
			elog(LOG, "pg_infer pool monitor: cannot connect to %s: %s",
				 endpoint, zmq_strerror(zmq_errno()));
			monitor_close_sockets(s);
		}
	}
	return changed;
}

/*
 * Whether pool slots a and b have a database in common (the caller holds
 * the pool's lock).
 */
static bool
slots_share_database(const InferPoolWorker *a, const InferPoolWorker *b)
{
	for (int k = 0; k < a->ndbs; k++)
		for (int l = 0; l < b->ndbs; l++)
			if (a->dbs[k] == b->dbs[l])
				return true;
	return false;
}

/*
 * Logs, as slot i's worker (name at endpoint, whose state names it
 * worker_id, HOST:PID) comes up, each other slot of a database in common
 * that is up and whose state names the same process and the same state
 * endpoint under another request endpoint (the same worker registered
 * twice, "tcp://localhost:5555" beside "tcp://127.0.0.1:5555"): placement
 * would count it as two workers.  (Two workers in containers sharing the
 * host's name, both PID 1, differ in their state endpoints.)
 */
static void
monitor_log_twice(int i, const char *name, const char *endpoint, const char *worker_id)
{
	if (worker_id[0] == '\0')
		return;
	for (int j = 0; j < pool->max_workers; j++)
	{
		InferPoolWorker *o = &pool->workers[j];
		char		other[NAMEDATALEN];
		char		other_endpoint[INFER_POOL_ENDPOINT_LEN];
		bool		same;

		if (j == i)
			continue;
		LWLockAcquire(pool->lock, LW_SHARED);
		same = o->used && pool->workers[i].used &&
			InferPoolStatusOf(o, GetCurrentTimestamp()) == INFER_POOL_UP &&
			strcmp(o->worker_id, worker_id) == 0 &&
			o->state_endpoint[0] != '\0' &&
			strcmp(o->state_endpoint, pool->workers[i].state_endpoint) == 0 &&
			strcmp(o->endpoint, endpoint) != 0 &&
			slots_share_database(o, &pool->workers[i]);
		strlcpy(other, o->name, sizeof(other));
		strlcpy(other_endpoint, o->endpoint, sizeof(other_endpoint));
		LWLockRelease(pool->lock);
		if (same)
			ereport(LOG,
					(errmsg("pg_infer pool monitor: inference workers \"%s\" at %s and \"%s\" at %s are one process, %s",
							name, endpoint, other, other_endpoint, worker_id),
					 errdetail("Placement counts it as two workers: it gets twice its share of the work, and its load is split between them."),
					 errhint("Keep one of them: infer.drop_worker('%s') or infer.drop_worker('%s').",
							 name, other)));
	}
}

/*
 * Logs (LOG: the server's log, not a client's) slot i's worker coming up
 * and going down, each once a change, so that a DBA finds a worker lost,
 * hung or never reached (a wrong endpoint) in the log, not only in
 * infer.workers.  Stale, the half-way status, is not logged.  The name is
 * the slot's (the first database's that registered the endpoint).
 */
static void
monitor_log_status(int i, MonSlot *s, TimestampTz now)
{
	InferPoolWorker *w = &pool->workers[i];
	InferPoolStatus st;
	char		name[NAMEDATALEN];
	char		endpoint[INFER_POOL_ENDPOINT_LEN];
	char		worker_id[64];
	uint64		folds;
	TimestampTz heartbeat;
	TimestampTz registered;

	LWLockAcquire(pool->lock, LW_SHARED);
	st = w->used ? InferPoolStatusOf(w, now) : INFER_POOL_UNKNOWN;
	strlcpy(name, w->name, sizeof(name));
	strlcpy(endpoint, w->endpoint, sizeof(endpoint));
	strlcpy(worker_id, w->worker_id, sizeof(worker_id));
	folds = w->folds;
	heartbeat = w->heartbeat;
	registered = w->registered;
	LWLockRelease(pool->lock);

	if (st == s->logged || st == INFER_POOL_STALE || st == INFER_POOL_UNKNOWN)
		return;
	if (st == INFER_POOL_UP)
	{
		ereport(LOG,
				(errmsg("pg_infer pool monitor: inference worker \"%s\" at %s is up",
						name, endpoint),
				 errdetail("Its state names it %s.", worker_id)));
		monitor_log_twice(i, name, endpoint, worker_id);
	}
	else
	{
		/* why it is down: never heard from, lost by a backend, or silent */
		const char *hint = folds == 0 ?
			"Check that a worker listens at that endpoint, and its CURVE key." : NULL;
		char	   *why;

		if (folds == 0 && registered == 0)
			why = pstrdup("A backend lost its connection to it before it had answered the pool.");
		else if (folds == 0)
			why = (char *) InferClientIpcDetail(endpoint,
												psprintf("It has not answered since the pool took it in, %ld ms ago.",
														 (long) TimestampDifferenceMilliseconds(registered, now)));
		else if (heartbeat == 0)
			why = pstrdup("A backend lost its connection to it, or it answered that it is shutting down.");
		else
			why = psprintf("Its last state came %ld ms ago, more than infer.worker_timeout (%d ms).",
						   (long) TimestampDifferenceMilliseconds(heartbeat, now),
						   infer_worker_timeout_ms);
		ereport(LOG,
				(errmsg("pg_infer pool monitor: inference worker \"%s\" at %s is down",
						name, endpoint),
				 errdetail_internal("%s", why),
				 hint != NULL ? errhint("%s", hint) : 0));
		pfree(why);
	}
	s->logged = st;
}

/*
 * The state endpoint a worker published, usable from here: a wildcard
 * host (a star or 0.0.0.0 as the host) gets the host of its request
 * endpoint.  Writes into out.
 */
static void
monitor_state_endpoint(const char *published, const char *request,
					   char *out, size_t outlen)
{
	const char *port = strrchr(published, ':');
	const char *host = strstr(request, "://");
	const char *host_end = strrchr(request, ':');

	if ((strncmp(published, "tcp://*:", 8) == 0 ||
		 strncmp(published, "tcp://0.0.0.0:", 14) == 0) &&
		port != NULL && host != NULL && host_end != NULL && host_end > host)
		snprintf(out, outlen, "%.*s%s", (int) (host_end - request), request,
				 port);
	else
		strlcpy(out, published, outlen);
}

/*
 * Reads one whole message from sock without waiting and returns its
 * unpacked header (the first frame that parses as one, malloc'd; free
 * with pginfer__header__free_unpacked), NULL when none is ready or none
 * parses.  *got says whether a message was read.
 */
static Pginfer__Header *
monitor_recv(void *sock, bool *got)
{
	Pginfer__Header *h = NULL;
	bool		more = true;

	*got = false;
	while (more)
	{
		zmq_msg_t	msg;

		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, sock, ZMQ_DONTWAIT) < 0)
		{
			zmq_msg_close(&msg);
			if (!*got || zmq_errno() != EINTR)
				break;
			continue;
		}
		*got = true;
		more = zmq_msg_more(&msg);
		if (h == NULL)
			h = pginfer__header__unpack(NULL, zmq_msg_size(&msg),
										zmq_msg_data(&msg));
		zmq_msg_close(&msg);
	}
	return h;
}

/* Folds every state waiting on s's sockets into slot i. */
static bool
monitor_drain(int i, MonSlot *s, TimestampTz now)
{
	bool		changed = false;
	bool		got;

	for (int which = 0; which < 2; which++)
	{
		void	   *sock = which == 0 ? s->dealer : s->sub;

		while (sock != NULL)
		{
			Pginfer__Header *h = monitor_recv(sock, &got);

			if (!got)
				break;
			if (h == NULL)
				continue;

			/*
			 * a ping answered 57P01: the worker is stopping (it answers
			 * every request so until it closes), and gets no new work
			 * from now on, as when a backend's request is answered so;
			 * dated by the ping's send, so that an answer read after a
			 * restart marks nothing (InferPoolMarkDown)
			 */
			if (which == 0 && h->version == PGINFER_PROTOCOL_VERSION &&
				h->kind == PGINFER__MSG_KIND__MSG_ERROR && h->error != NULL &&
				h->error->sqlstate != NULL &&
				strcmp(h->error->sqlstate, "57P01") == 0 &&
				h->request_id != 0 &&
				s->ping_ids[h->request_id % MON_PINGS] == h->request_id)
				InferPoolMarkDown(i + 1, s->generation, true, false,
								  s->ping_sent[h->request_id % MON_PINGS]);
			if (h->version == PGINFER_PROTOCOL_VERSION && h->state != NULL &&
				(h->kind == PGINFER__MSG_KIND__MSG_PONG ||
				 h->kind == PGINFER__MSG_KIND__MSG_STATE))
			{
				InferPoolFold(i + 1, s->generation, h->state, which == 1);
				if (which == 1)
					s->last_sub_state = now;
				if (h->state->state_endpoint && h->state->state_endpoint[0])
				{
					char		ep[INFER_POOL_ENDPOINT_LEN];

					monitor_state_endpoint(h->state->state_endpoint,
										   s->endpoint, ep, sizeof(ep));
					if (strcmp(ep, s->sub_endpoint) != 0)
					{
						if (s->sub)
							zmq_close(s->sub);
						s->sub = monitor_socket(s, ZMQ_SUB);
						if (s->sub != NULL && zmq_connect(s->sub, ep) != 0)
						{
							zmq_close(s->sub);
							s->sub = NULL;
						}
						strlcpy(s->sub_endpoint, ep, sizeof(s->sub_endpoint));
						changed = true;
						/* the old socket is gone: stop reading it */
						pginfer__header__free_unpacked(h, NULL);
						break;
					}
				}
			}
			pginfer__header__free_unpacked(h, NULL);
		}
	}
	return changed;
}

/* Sends a MSG_PING on s when one is due. */
static void
monitor_ping(MonSlot *s, TimestampTz now)
{
	Pginfer__Header hdr = PGINFER__HEADER__INIT;
	uint8_t		buf[64];
	bool		streaming;

	if (s->dealer == NULL)
		return;
	streaming = s->last_sub_state != 0 &&
		!TimestampDifferenceExceeds(s->last_sub_state, now,
									Min(infer_worker_timeout_ms / 4, 500));
	if (s->last_ping != 0 &&
		!TimestampDifferenceExceeds(s->last_ping, now,
									streaming ? POOL_SLOW_PING_MS :
									POOL_FAST_PING_MS))
		return;
	hdr.version = PGINFER_PROTOCOL_VERSION;
	hdr.kind = PGINFER__MSG_KIND__MSG_PING;
	hdr.request_id = ++mon_request_id;
	/* no live connection: EAGAIN (ZMQ_IMMEDIATE), tried again next time */
	(void) zmq_send(s->dealer, buf, pginfer__header__pack(&hdr, buf),
					ZMQ_DONTWAIT);
	s->last_ping = now;
	s->ping_ids[hdr.request_id % MON_PINGS] = hdr.request_id;
	s->ping_sent[hdr.request_id % MON_PINGS] = now;
}

/* A wait event set over the latch, postmaster death and every socket. */
static WaitEventSet *
monitor_waitset(void)
{
	int			nsocks = 0;
	WaitEventSet *ws;

	for (int i = 0; i < pool->max_workers; i++)
		nsocks += (mon_slots[i].dealer != NULL) + (mon_slots[i].sub != NULL);
	ws = CreateWaitEventSet(TopMemoryContext, 2 + nsocks);
	AddWaitEventToSet(ws, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(ws, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (int i = 0; i < pool->max_workers; i++)
	{
		void	   *socks[2] = {mon_slots[i].dealer, mon_slots[i].sub};

		for (int k = 0; k < 2; k++)
		{
			int			fd;
			size_t		len = sizeof(fd);

			if (socks[k] != NULL &&
				zmq_getsockopt(socks[k], ZMQ_FD, &fd, &len) == 0)
				AddWaitEventToSet(ws, WL_SOCKET_READABLE, fd, NULL, NULL);
		}
	}
	return ws;
}

/*
 * Entry point of the pool monitor (bgw_function_name): keeps the slots'
 * state until SIGTERM.  See the banner.
 */
void
InferPoolMonitorMain(Datum arg)
{
	WaitEventSet *ws = NULL;
	void	   *first;
	bool		loaded = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);

	if (pool == NULL)
		elog(ERROR, "pg_infer pool monitor started without shared memory");

	/*
	 * Signals are still blocked (a background worker starts so): ZeroMQ's
	 * threads, started with the first socket, inherit that mask.
	 */
	mon_context = zmq_ctx_new();
	first = mon_context ? zmq_socket(mon_context, ZMQ_DEALER) : NULL;
	if (first == NULL)
		elog(ERROR, "pg_infer pool monitor: could not start ZeroMQ: %s",
			 zmq_strerror(zmq_errno()));
	zmq_close(first);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("pg_infer pool monitor");

	mon_slots = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(MonSlot) * pool->max_workers);
	before_shmem_exit(monitor_detach, (Datum) 0);
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	pool->monitor_latch = MyLatch;
	LWLockRelease(pool->lock);
	elog(LOG, "pg_infer pool monitor started (%d slots)", pool->max_workers);
	(void) monitor_curve_paths_changed();

	while (!ShutdownRequestPending)
	{
		TimestampTz now;
		bool		changed;
		WaitEvent	event;

		/* every database's registry into the pool (registry_loader.c) */
		if (!loaded)
			loaded = InferRegistryLoadStep();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			monitor_curve_reload();
		}
		/* a backend with a PGPROC: DROP DATABASE waits on this barrier */
		if (ProcSignalBarrierPending)
			ProcessProcSignalBarrier();
		changed = monitor_sync();
		now = GetCurrentTimestamp();
		for (int i = 0; i < pool->max_workers; i++)
		{
			if (mon_slots[i].generation == 0)
				continue;
			changed |= monitor_handshakes(i, &mon_slots[i], now);
			changed |= monitor_drain(i, &mon_slots[i], now);
			monitor_ping(&mon_slots[i], now);
			monitor_log_status(i, &mon_slots[i], now);
		}
		if (changed || ws == NULL)
		{
			if (ws != NULL)
				FreeWaitEventSet(ws);
			ws = monitor_waitset();
		}
		if (WaitEventSetWait(ws, POOL_WAIT_MS, &event, 1,
							 PG_WAIT_EXTENSION) == 1 &&
			(event.events & WL_LATCH_SET))
			ResetLatch(MyLatch);
	}
	for (int i = 0; i < pool->max_workers; i++)
		monitor_close(&mon_slots[i]);
	zmq_ctx_term(mon_context);

	/*
	 * Exit code 1, not 0: the postmaster starts a background worker that
	 * exits with 1 again after bgw_restart_time (unless the server is
	 * shutting down), so a monitor stopped by pg_terminate_backend() comes
	 * back; with 0 it would be gone until the next restart.
	 */
	elog(LOG, "pg_infer pool monitor stopping; it starts again in %d s unless the server shuts down",
		 1);
	proc_exit(1);
}

/* ----------
 * SQL functions
 * ----------
 */

/* infer._pool_register(name, endpoint, server_public_key): see InferPoolRegister. */
Datum
infer_pool_register(PG_FUNCTION_ARGS)
{
	char	   *endpoint = text_to_cstring(PG_GETARG_TEXT_PP(1));

	/* the worker's CURVE key ('' plain): part of its slot's identity */
	InferCurveNoteServerKey(endpoint, text_to_cstring(PG_GETARG_TEXT_PP(2)));
	(void) InferPoolRegister(text_to_cstring(PG_GETARG_TEXT_PP(0)), endpoint);
	PG_RETURN_VOID();
}

/*
 * The databases w notes (InferPoolWorker.dbs) that no longer exist, into
 * gone[]; returns how many.  Reads the catalog: call it without the lock.
 */
static int
pool_gone_dbs(const InferPoolWorker *w, Oid *gone)
{
	int			n = 0;

	for (int d = 0; d < w->ndbs; d++)
		if (w->dbs[d] != MyDatabaseId &&
			!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(w->dbs[d])))
			gone[n++] = w->dbs[d];
	return n;
}

/*
 * infer._pool_forget(endpoint): this database drops the worker at
 * endpoint.  Its slot is freed when no other database that still exists
 * has met it (InferPoolWorker.dbs); otherwise the slot, its live state and
 * the other databases' work in flight stay.
 */
Datum
infer_pool_forget(PG_FUNCTION_ARGS)
{
	char	   *endpoint = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InferPoolWorker *copy;
	Oid			gone[INFER_POOL_DATABASES];
	int			ngone = 0;

	if (pool == NULL)
		PG_RETURN_VOID();
	copy = palloc0(sizeof(InferPoolWorker));
	LWLockAcquire(pool->lock, LW_SHARED);
	for (int i = 0; i < pool->max_workers; i++)
		if (pool->workers[i].used &&
			strcmp(pool->workers[i].endpoint, endpoint) == 0)
			memcpy(copy, &pool->workers[i], sizeof(InferPoolWorker));
	LWLockRelease(pool->lock);
	ngone = pool_gone_dbs(copy, gone);

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	for (int i = 0; i < pool->max_workers; i++)
	{
		InferPoolWorker *w = &pool->workers[i];
		int			n = 0;

		if (!w->used || strcmp(w->endpoint, endpoint) != 0)
			continue;
		for (int d = 0; d < w->ndbs; d++)
		{
			bool		drop = w->dbs[d] == MyDatabaseId;

			for (int g = 0; g < ngone && !drop; g++)
				drop = w->dbs[d] == gone[g];
			if (!drop)
				w->dbs[n++] = w->dbs[d];
		}
		w->ndbs = n;
		if (n == 0 && !w->dbs_overflow)
		{
			w->used = false;
			w->generation++;
		}
	}
	LWLockRelease(pool->lock);
	if (pool->monitor_latch != NULL)
		SetLatch(pool->monitor_latch);
	PG_RETURN_VOID();
}

/* Number of columns of infer._worker_state. */
#define WORKER_STATE_COLS 15

/*
 * Whether (name, endpoint) is a row of infer.worker_registry, read as the
 * caller (which also records the worker's CURVE key, part of its slot's
 * identity: InferPoolRegister).
 * infer._worker_state is granted to infer_user for the infer.workers
 * view: without this check a caller could fill the pool's slots with
 * endpoints of its own or change a worker's key in them.
 */
static bool
worker_registered(const char *name, const char *endpoint)
{
	int			n = 0;
	InferWorker *workers = InferCatalogGetWorkers(&n);

	for (int i = 0; i < n; i++)
		if (strcmp(workers[i].name, name) == 0 &&
			strcmp(workers[i].endpoint, endpoint) == 0)
			return true;
	return false;
}

/*
 * infer._worker_state(name, endpoint): the live state of the worker at
 * endpoint (registering it), one record of WORKER_STATE_COLS columns;
 * all NULL without shared memory, with a NOTICE once per backend.
 */
Datum
infer_worker_state(PG_FUNCTION_ARGS)
{
	static bool noticed = false;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *endpoint = text_to_cstring(PG_GETARG_TEXT_PP(1));
	TupleDesc	desc;
	Datum		values[WORKER_STATE_COLS];
	bool		nulls[WORKER_STATE_COLS];
	int			slot;
	InferPoolWorker w;
	TimestampTz now = GetCurrentTimestamp();
	static const char *const status_names[] = {"unknown", "up", "stale", "down"};
	Datum	   *models;
	int			nres = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	memset(nulls, true, sizeof(nulls));
	slot = pool != NULL && worker_registered(name, endpoint) ?
		InferPoolRegister(name, endpoint) : 0;
	if (slot == 0)
	{
		if (pool == NULL && !noticed)
		{
			noticed = true;
			ereport(NOTICE,
					(errmsg("live inference worker state is not available"),
					 errdetail("pg_infer is not in shared_preload_libraries, so no pool monitor runs; work goes round robin."),
					 errhint("Add pg_infer to shared_preload_libraries and restart the server.")));
		}
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	}
	LWLockAcquire(pool->lock, LW_SHARED);
	memcpy(&w, InferPoolSlot(slot), sizeof(w));
	LWLockRelease(pool->lock);

	memset(nulls, false, sizeof(nulls));
	values[0] = CStringGetTextDatum(status_names[InferPoolStatusOf(&w, now)]);
	/* a state folded after now was taken is no older than 0 */
	if (w.heartbeat != 0)
		values[1] = IntervalPGetDatum(DatumGetIntervalP(
														DirectFunctionCall2(timestamp_mi,
																			TimestampTzGetDatum(Max(now, w.heartbeat)),
																			TimestampTzGetDatum(w.heartbeat))));
	else
		nulls[1] = true;
	values[2] = Int32GetDatum((int32) w.queue_length);
	values[3] = Float8GetDatum(w.backlog_ms);
	values[4] = Int64GetDatum(w.inflight_requests);
	values[5] = Int64GetDatum(w.inflight_rows);
	values[6] = Float8GetDatum(w.inflight_ms);
	values[7] = Int64GetDatum((int64) w.host_memory_used);
	values[8] = Int64GetDatum((int64) w.gpu_memory_free);
	values[9] = Int64GetDatum((int64) w.gpu_memory_total);
	values[10] = CStringGetTextDatum(w.device);
	models = palloc(sizeof(Datum) * Max(w.nmodels, 1));
	for (int i = 0; i < w.nmodels; i++)
		if (w.models[i].resident)
			models[nres++] = CStringGetTextDatum(w.models[i].file);
	values[11] = PointerGetDatum(construct_array(models, nres, TEXTOID, -1,
												 false, TYPALIGN_INT));
	values[12] = Int64GetDatum((int64) w.seq);
	values[13] = Int64GetDatum((int64) w.requests_sent);
	values[14] = CStringGetTextDatum(w.published ? "publish" : "ping");
	if (w.heartbeat == 0)
		for (int i = 2; i < WORKER_STATE_COLS; i++)
			if (i != 4 && i != 5 && i != 6 && i != 13)
				nulls[i] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
