/*-------------------------------------------------------------------------
 *
 * placement.c
 *	  Which worker gets a request: the infer.placement policies over the
 *	  registered workers and the pool's live state (pool.c), and
 *	  infer.load_model and infer.unload_model, which make a model
 *	  resident on a worker or evict it.
 *
 * For a request over n rows of B input bytes whose fragments use models
 * M1..Mk, each worker W that is not down gets (DESIGN.md "Placement"):
 *
 *	 wait(W)	 = max(backlog - heartbeat age - answered since, 0) + in
 *				   flight since that state, or the backends' whole in-flight
 *				   estimate if larger (answered since: the estimates of the
 *				   requests in that state's backlog that backends have had
 *				   answers for since: a state folded just before a reply
 *				   still counts that request)
 *	 load(W)	 = sum over Mi not resident on W of its load time: W's
 *				   reported load_ms, else bytes over infer.bandwidth, else
 *				   the largest load_ms any worker reported for Mi, else
 *				   PLACEMENT_DEFAULT_LOAD_MS
 *	 transfer(W) = the bytes of the rows W's input cache is not believed
 *				   to hold (its Bloom filter; InferClientUncachedBytes,
 *				   client.c) over infer.bandwidth: 0 for inputs W has
 *				   cached, B for a worker without a filter
 *	 compute(W)  = sum over Mi of W's timing of Mi at the nearest batch
 *				   size b, times n / b; without one, the mean of the other
 *				   workers' such estimates; else, for a model nobody timed
 *				   yet, n times the pool's mean time per row of the models it
 *				   has timed (prior_row_ms; PLACEMENT_DEFAULT_ROW_MS without any)
 *
 * Under cost, for a worker that merges the waiting requests of one
 * fragment into one run and holds models in a capped memory (the
 * refinements bench/placement measured; docs/placement.md): wait is the
 * queue as it will run, each queued model merged into one run
 * (merged_wait_ms); a model queued work needs costs no load; compute of
 * a queued model is the growth of its merged run (marginal_ms), and as
 * that growth delays every request queued for the run, it is counted
 * once more per such request (external: the request's delay to others,
 * so that the choice minimises the growth of the sum of completion times
 * rather than the request's own finish alone); queued there means the
 * state's requests less those answered since, plus those backends sent
 * since (queued_runs); a worker
 * whose held models plus the request's would not fit is left out while
 * another has room, and a load that evicts adds the evicted bytes' reload
 * time (memory_terms).
 *
 * cost = argmin of wait + load + evict + transfer + compute + external
 * (load per distinct model file; compute per model run, so a file two of
 * the request's fragments use counts twice);
 * least_loaded =
 * argmin of wait; locality = the most of M1..Mk resident, then least wait;
 * round_robin = in turn over the registered workers, per backend, as
 * before there was a pool (the baseline: it ignores the live state but
 * for passing over down workers, round_robin_pick).  Candidates within
 * PLACEMENT_TIE_MS (or 1%) of the best are tied, and ties go in turn over
 * a counter all backends share, so equal workers share the load.  Under
 * every policy down workers get nothing while any other is up (when all
 * are down, all are candidates, so the caller gets the connection error).
 * Without the pool's shared memory every policy is round robin.  The chosen worker's
 * est_ms (load + transfer + compute) is what client.c puts in flight.
 *
 * Several fragments over the same input (InferBatch's calls of one
 * argument) go in one request, which carries the input once and runs them
 * one after another on one worker, unless under cost one request per
 * fragment, each placed on its own, finishes sooner by the same estimates
 * (InferPlacementSplits): DESIGN.md's "kept together unless moving is
 * cheaper".
 *
 * Runs in a backend's main thread; reads the pool under its shared lock,
 * except InferPlacementPick, which chooses and reserves the request under
 * one exclusive hold (a copy of the slots and the arithmetic over them).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include <float.h>
#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#define PLACEMENT_DEFAULT_LOAD_MS 200.0 /* a model nobody reported */
#define PLACEMENT_DEFAULT_ROW_MS 10.0	/* a model nobody timed, per row */
#define PLACEMENT_TIE_MS 0.5
#define PLACEMENT_MAX_FILES 16
#define PLACEMENT_PRIOR_FILES 64	/* model files prior_row_ms averages */

PG_FUNCTION_INFO_V1(infer_load_model);
PG_FUNCTION_INFO_V1(infer_unload_model);

/* The per-backend round-robin position. */
static uint32 placement_rr_next = 0;

/* One candidate's estimate. */
typedef struct Estimate
{
	int			slot;
	bool		down;
	bool		no_room;		/* cost: its models cannot fit beside the
								 * ones queued work holds (53200 there) */
	int			resident;		/* of the request's models */
	double		wait;
	double		load;
	double		transfer;		/* its share of the input bytes, in ms */
	double		compute;
	double		evict;			/* cost: reload time of what a load evicts */
	bool		evicts;			/* cost: its load needs an eviction */
	double		external;		/* cost: delay added to queued requests */
	bool		too_small;		/* the request's largest row is over its
								 * --max-message-bytes */
	bool		no_memory;		/* its models together are more than its
								 * model memory (lacks_memory) */
	bool		avoided;		/* it lost the request's rows before */
} Estimate;


static double compute_ms(const InferPoolWorker *w, const char *file, int nrows,
						 InferPoolWorker *const *all, int nall);

/*
 * The model files of frags (every stage of each), at most
 * PLACEMENT_MAX_FILES, into files; returns their number.  distinct: each
 * file once (what is loaded); else each stage's once per fragment (what
 * runs: a model two fragments use runs twice).
 */
static int
request_files(InferFragment **frags, int nfrags, bool distinct,
			  const char **files)
{
	int			n = 0;

	for (int f = 0; f < nfrags; f++)
		for (const InferFragment *s = frags[f]; s != NULL; s = s->prev)
			for (int m = 0; m < s->nmodels; m++)
			{
				const char *file = s->models[m] ? s->models[m]->file : NULL;
				bool		seen = false;

				if (file == NULL || file[0] == '\0')
					continue;
				for (int k = 0; k < n && distinct && !seen; k++)
					seen = strcmp(files[k], file) == 0;
				if (!seen && n < PLACEMENT_MAX_FILES)
					files[n++] = file;
			}
	return n;
}

/* w's model entry for file, or NULL. */
static const InferPoolModel *
find_model(const InferPoolWorker *w, const char *file)
{
	for (int i = 0; i < w->nmodels; i++)
		if (strcmp(w->models[i].file, file) == 0)
			return &w->models[i];
	return NULL;
}

/*
 * The bytes file holds when resident, as w reports it, or, when w has not
 * reported it, the least that any of the other workers (all, nall)
 * reports (a figure depends on the device and the precision: the least
 * does not keep w from a model it could hold, which it would then never
 * load and never report); 0 when none has.
 */
static uint64
model_bytes(const InferPoolWorker *w, const char *file,
			InferPoolWorker *const *all, int nall)
{
	const InferPoolModel *m = find_model(w, file);
	uint64		bytes = 0;

	if (m != NULL && m->bytes > 0)
		return m->bytes;
	for (int i = 0; i < nall; i++)
	{
		const InferPoolModel *o = all[i] ? find_model(all[i], file) : NULL;

		if (o != NULL && o->bytes > 0 && (bytes == 0 || o->bytes < bytes))
			bytes = o->bytes;
	}
	return bytes;
}

/*
 * Whether w (NULL: not known) cannot hold the request's models (files,
 * nfiles) at all: their bytes together (model_bytes) are more than its
 * model memory (WorkerState.gpu_memory_cap: --gpu-memory, or the device's
 * or host's memory), so that a load among them fails there with 53200
 * whatever it evicts.  Every policy passes such a worker over while
 * another can take the request: round_robin and least_loaded sent it
 * every turn's batch, and each statement failed.
 */
static bool
lacks_memory(const InferPoolWorker *w, const char **files, int nfiles,
			 InferPoolWorker *const *all, int nall)
{
	uint64		total = 0;

	if (w == NULL || w->gpu_memory_cap == 0)
		return false;
	for (int f = 0; f < nfiles; f++)
		total += model_bytes(w, files[f], all, nall);
	return total > w->gpu_memory_cap;
}

/*
 * w's estimate of file over nrows rows from its timings (nearest batch
 * size, scaled linearly), or -1 when it has none.
 */
static double
timed_ms(const InferPoolWorker *w, const char *file, int nrows)
{
	const InferPoolTiming *best = NULL;

	for (int i = 0; i < w->ntimings; i++)
	{
		const InferPoolTiming *t = &w->timings[i];

		if (t->batch_size == 0 || strcmp(t->file, file) != 0)
			continue;
		if (best == NULL ||
			abs((int) t->batch_size - nrows) < abs((int) best->batch_size - nrows))
			best = t;
	}
	return best ? best->ms * nrows / best->batch_size : -1;
}

/* Load estimate of file on w (see the banner); slots has nslots workers. */
static double
load_ms(const InferPoolWorker *w, const char *file,
		InferPoolWorker *const *all, int nall)
{
	const InferPoolModel *m = find_model(w, file);
	double		bandwidth = infer_bandwidth_mb * 1000.0;	/* bytes per ms */
	double		reported = 0;
	uint64		bytes = 0;

	if (m != NULL && m->resident)
		return 0;
	if (m != NULL && m->load_ms > 0)
		return m->load_ms;
	for (int i = 0; i < nall; i++)
	{
		const InferPoolModel *o = all[i] ? find_model(all[i], file) : NULL;

		if (o == NULL)
			continue;
		reported = Max(reported, o->load_ms);
		bytes = Max(bytes, o->bytes);
	}
	if (m != NULL && m->bytes > 0)
		return m->bytes / bandwidth;
	if (reported > 0)
		return reported;
	if (bytes > 0)
		return bytes / bandwidth;
	return PLACEMENT_DEFAULT_LOAD_MS;
}

/*
 * w's estimate of file over nrows rows by linear interpolation between
 * its measured batch sizes (below the smallest: that one's time; above the
 * largest: its time scaled by rows), as the worker estimates
 * (worker/state.h); -1 when it has no timing of file.
 */
static double
interpolated_ms(const InferPoolWorker *w, const char *file, int nrows)
{
	const InferPoolTiming *lo = NULL,
			   *hi = NULL;

	for (int i = 0; i < w->ntimings; i++)
	{
		const InferPoolTiming *t = &w->timings[i];

		if (t->batch_size == 0 || strcmp(t->file, file) != 0)
			continue;
		if ((int) t->batch_size <= nrows && (lo == NULL || t->batch_size > lo->batch_size))
			lo = t;
		if ((int) t->batch_size >= nrows && (hi == NULL || t->batch_size < hi->batch_size))
			hi = t;
	}
	if (lo != NULL && hi != NULL)
		return lo->batch_size == hi->batch_size ? lo->ms :
			lo->ms + (hi->ms - lo->ms) * (nrows - (int) lo->batch_size) /
			(double) (hi->batch_size - lo->batch_size);
	if (hi != NULL)
		return hi->ms;
	if (lo != NULL)
		return lo->ms * nrows / lo->batch_size;
	return -1;
}

/*
 * The requests waiting for m on w as the cost policy counts them: the
 * state's count less m's share of the requests answered since the state
 * was made, which it still counts: those answered after the state was
 * folded, sent before it (done_requests), or, when more, the answers the
 * worker counted after the state by the last reply seen (served_seen,
 * from any backend, less the state's requests_served).  Which models the
 * answered requests used is not known, so each model's count shrinks in
 * proportion: queued * (all queued less answered) / all queued, rounded
 * up.  An estimate: served_seen also counts answers to requests that
 * came after the state (a quick model's served before a slow one's
 * older requests), which shrinks the count too far.
 */
static int
waiting_for(const InferPoolWorker *w, const InferPoolModel *m)
{
	int64		all = 0;
	int64		done = w->done_requests;
	int64		left;

	if (m == NULL || m->queued == 0)
		return 0;
	for (int i = 0; i < w->nmodels; i++)
		all += Min(w->models[i].queued, 1024);
	if (w->served_seen > w->requests_served)
		done = Max(done, (int64) (w->served_seen - w->requests_served));
	left = Max(all - done, 0);
	return (int) ((Min(m->queued, 1024) * left + all - 1) / all);
}

/*
 * The runs of file that requests backends sent w after its last folded
 * state was made hold (InferPoolAddInflight, InferPoolFold): not in that
 * state's queued counts.
 */
static int
unseen_runs(const InferPoolWorker *w, const char *file)
{
	for (int k = 0; k < w->nunseen; k++)
		if (strcmp(w->unseen_files[k], file) == 0)
			return (int) Min(w->unseen_runs[k], 1024);
	return 0;
}

/*
 * The cost policy's count of the runs of file (m: w's entry for it, may
 * be NULL) queued on w now: those of its last state that are not
 * answered yet (waiting_for) and those sent since (unseen_runs).  Without
 * the second, a burst of requests decided between two states all saw the
 * queue of the first, and all joined the one merged run it made cheapest
 * (bench/placement: 14 translations' branches in one run of 4.7 s while
 * four workers were idle).
 */
static int
queued_runs(const InferPoolWorker *w, const InferPoolModel *m, const char *file)
{
	return waiting_for(w, m) + unseen_runs(w, file);
}

/*
 * The cost policy's compute of file over nrows rows on w when m (w's entry
 * for file, may be NULL) says queued requests there need it: the worker
 * merges waiting requests of one fragment into one run (worker/batcher.c),
 * so the request adds the growth of that run from the queued rows (taken
 * as nrows per queued request) to those plus its own, by w's timings at
 * those batch sizes; at most alone, compute_ms's figure, which it is when
 * nothing is queued or w has no timing.
 */
static double
marginal_ms(const InferPoolWorker *w, const InferPoolModel *m, const char *file,
			int nrows, double alone)
{
	double		with,
				without;
	int			q = queued_runs(w, m, file) * nrows;

	if (q == 0)
		return alone;
	with = interpolated_ms(w, file, q + nrows);
	without = interpolated_ms(w, file, q);
	if (with < 0 || without < 0 || with < without)
		return alone;
	return Min(with - without, alone);
}

/*
 * The cost policy's wait for w: its queued work as the worker will run it,
 * each model's waiting requests (waiting_for: those answered since the
 * state left out) merged into one run (the sum over its models with such
 * requests of its time at their rows, nrows a request, plus the loads of
 * those not resident), less the age of that state, plus the estimates of
 * the requests backends sent it since (unseen_ms).  The worker's own
 * backlog_ms counts each waiting request alone, which overstates a queue
 * of one model by up to its batch size; done_ms, the send-time estimates
 * of the requests answered since, can be far below what they took.
 */
static double
merged_wait_ms(const InferPoolWorker *w, int nrows, double age,
			   InferPoolWorker *const *all, int nall)
{
	double		ms = 0;

	for (int i = 0; i < w->nmodels; i++)
	{
		const InferPoolModel *m = &w->models[i];
		int			rows = waiting_for(w, m) * nrows;
		double		t;

		if (rows == 0)
			continue;
		t = interpolated_ms(w, m->file, rows);
		ms += t >= 0 ? t : compute_ms(w, m->file, rows, all, nall);
		if (!m->resident)
			ms += load_ms(w, m->file, all, nall);
	}
	return Max(ms - age, 0.0) + w->unseen_ms;
}

/*
 * The cost policy's memory terms for w: sets e->no_room when the models
 * queued work holds (resident or to be loaded) and the request's models
 * add up to more than w's memory (the worker would fail a load among them
 * with 53200: a held model is never evicted), or when the request's
 * models that are neither resident nor held need evictions while
 * requests sent since w's last state are unknown (they may hold what
 * would be evicted); and e->evict to the time to load again the bytes
 * their load would evict (what the free memory lacks), at the load speed
 * of the request's models.
 */
static void
memory_terms(const InferPoolWorker *w, const char **files, int nfiles,
			 InferPoolWorker *const *all, int nall, Estimate *e)
{
	uint64		cap = w->gpu_memory_cap;
	uint64		held = 0,		/* resident or pending, needed by queued work */
				pending = 0,	/* queued work needs it, not resident yet */
				need = 0,
				free;
	double		need_ms = 0;

	if (cap == 0)
		return;
	for (int i = 0; i < w->nmodels; i++)
	{
		const InferPoolModel *m = &w->models[i];

		if (m->queued > 0)
			held += m->bytes;
		if (m->queued > 0 && !m->resident)
			pending += m->bytes;
	}
	for (int f = 0; f < nfiles; f++)
	{
		const InferPoolModel *m = find_model(w, files[f]);
		uint64		bytes;

		if (m != NULL && m->queued > 0)
			continue;			/* held already */
		bytes = model_bytes(w, files[f], all, nall);
		/* the request holds it from now on, resident or not */
		held += bytes;
		if (m == NULL || !m->resident)
		{
			need += bytes;
			need_ms += load_ms(w, files[f], all, nall);
		}
	}
	if (held > cap)
	{
		e->no_room = true;
		return;
	}
	if (need == 0)
		return;
	free = w->gpu_memory_free > pending ? w->gpu_memory_free - pending : 0;
	if (need <= free)
		return;
	/* requests sent since its last state may need what the load would evict */
	if (w->unseen_ms > 0)
		e->no_room = true;
	e->evicts = true;
	e->evict = need_ms * (double) (need - free) / (double) need;
}

/*
 * The time per row assumed for a model no worker has timed yet: the mean,
 * over the model files the pool has timings of (all, nall workers), of
 * each one's time per row at the smallest batch size measured (any
 * worker's); PLACEMENT_DEFAULT_ROW_MS when the pool has no timing at all.
 * A fixed guess was far off for large models: bench/placement's mt5 runs
 * 800 ms a row, and taken at 10 ms, eleven translations of a cold burst
 * joined one worker's merged run (4 s long) while others were idle.
 */
static double
prior_row_ms(InferPoolWorker *const *all, int nall)
{
	const char *files[PLACEMENT_PRIOR_FILES];
	uint32		batch[PLACEMENT_PRIOR_FILES];
	double		row_ms[PLACEMENT_PRIOR_FILES];
	int			nfiles = 0;
	double		sum = 0;

	for (int i = 0; i < nall; i++)
		for (int k = 0; all[i] != NULL && k < all[i]->ntimings; k++)
		{
			const InferPoolTiming *t = &all[i]->timings[k];
			int			f = 0;

			if (t->batch_size == 0)
				continue;
			while (f < nfiles && strcmp(files[f], t->file) != 0)
				f++;
			if (f == nfiles)
			{
				if (nfiles == PLACEMENT_PRIOR_FILES)
					continue;
				files[nfiles++] = t->file;
			}
			else if (t->batch_size >= batch[f])
				continue;
			batch[f] = t->batch_size;
			row_ms[f] = t->ms / t->batch_size;
		}
	for (int f = 0; f < nfiles; f++)
		sum += row_ms[f];
	return nfiles > 0 ? sum / nfiles : PLACEMENT_DEFAULT_ROW_MS;
}

/* Compute estimate of file over nrows rows on w (see the banner). */
static double
compute_ms(const InferPoolWorker *w, const char *file, int nrows,
		   InferPoolWorker *const *all, int nall)
{
	double		ms = timed_ms(w, file, nrows);
	double		sum = 0;
	int			n = 0;

	if (ms >= 0)
		return ms;
	for (int i = 0; i < nall; i++)
	{
		double		o = all[i] && all[i] != w ? timed_ms(all[i], file, nrows) : -1;

		if (o >= 0)
		{
			sum += o;
			n++;
		}
	}
	return n > 0 ? sum / n : prior_row_ms(all, nall) * nrows;
}

/* The key a policy minimises for e (locality is compared apart). */
static double
policy_key(const Estimate *e)
{
	if (infer_placement == INFER_PLACEMENT_LEAST_LOADED ||
		infer_placement == INFER_PLACEMENT_LOCALITY)
		return e->wait;
	return e->wait + e->load + e->evict + e->transfer + e->compute +
		e->external;
}

/*
 * Whether e is passed over before its cost is looked at: down (while any
 * is up); reading no row as large as the request's largest (while any
 * not passed over so far reads it: a larger frame would make it drop the
 * connection); holding less model memory than the request's models take
 * (while any not passed over so far holds them: a load would fail); one
 * that lost the request's rows before (while any other not passed over so
 * far is there).  choose() finds the any_ flags in that order, each among
 * the workers the earlier ones leave.
 */
static bool
passed_over(const Estimate *e, bool any_up, bool any_reads, bool any_holds,
			bool any_other)
{
	return (e->down && any_up) || (e->too_small && any_reads) ||
		(e->no_memory && any_holds) || (e->avoided && any_other);
}

/*
 * Whether e is left out: passed over (above); under cost, without room
 * (while any has room), or needing an eviction while a worker with room
 * holds every model of the request already (holder).
 */
static bool
excluded(const Estimate *e, bool any_up, bool any_reads, bool any_holds,
		 bool any_other, bool any_room, bool holder)
{
	return passed_over(e, any_up, any_reads, any_holds, any_other) ||
		(e->no_room && any_room) || (e->evicts && holder);
}

/*
 * The registered workers with a copy of each one's pool slot (NULL when it
 * has none), taken under the pool's shared lock and kept for one choice.
 */
typedef struct PoolView
{
	InferWorker *workers;
	int			nworkers;
	int		   *slots;
	InferPoolWorker **snap;
	TimestampTz now;
} PoolView;

/*
 * Fills v from the catalog and the pool.  hold: the pool's lock is taken
 * exclusive and left held, for a choice and its reservation
 * (InferPlacementPick); else it is held shared for the copy only.
 * Errors: as InferPlacementPick.
 */
static void
view_take(PoolView *v, bool hold)
{
	v->workers = InferCatalogGetWorkers(&v->nworkers);
	v->slots = palloc(sizeof(int) * v->nworkers);
	v->snap = palloc0(sizeof(InferPoolWorker *) * v->nworkers);
	for (int i = 0; i < v->nworkers; i++)
		v->slots[i] = InferPoolRegister(v->workers[i].name,
										v->workers[i].endpoint);

	/* copy the slots out, so the lock is held only for the copy */
	for (int i = 0; i < v->nworkers; i++)
		if (v->slots[i] != 0)
			v->snap[i] = palloc(sizeof(InferPoolWorker));
	InferPoolLock(hold);
	for (int i = 0; i < v->nworkers; i++)
		if (v->slots[i] != 0)
			memcpy(v->snap[i], InferPoolSlot(v->slots[i]),
				   sizeof(InferPoolWorker));
	if (!hold)
		InferPoolUnlock();
	v->now = GetCurrentTimestamp();
}

/*
 * e, worker i of v's estimate (see the banner) for a request of nrows rows
 * and bytes input bytes (the largest row largest bytes) whose distinct
 * model files are files (each loaded once) and whose model runs are runs
 * (each computed once: a file two fragments use runs twice).
 */
static void
estimate(const PoolView *v, int i, const char **files, int nfiles,
		 const char **runs, int nruns, int nrows, size_t bytes,
		 size_t largest, Estimate *e)
{
	const InferPoolWorker *w = v->snap[i];
	bool		cost = infer_placement == INFER_PLACEMENT_COST;
	double		bandwidth = infer_bandwidth_mb * 1000.0;	/* bytes per ms */

	memset(e, 0, sizeof(Estimate));
	e->slot = v->slots[i];
	if (w == NULL)
	{
		/* no slot: nothing known, nothing resident */
		e->load = PLACEMENT_DEFAULT_LOAD_MS * nfiles;
		e->transfer = bytes / bandwidth;
		e->compute = PLACEMENT_DEFAULT_ROW_MS * nrows * nruns;
		return;
	}
	e->down = InferPoolStatusOf(w, v->now) == INFER_POOL_DOWN;
	e->too_small = w->max_message_bytes > 0 && largest > w->max_message_bytes;
	e->no_memory = lacks_memory(w, files, nfiles, v->snap, v->nworkers);
	if (w->heartbeat != 0)
	{
		double		age = TimestampDifferenceMilliseconds(w->heartbeat, v->now);

		e->wait = Max(w->backlog_ms - age - w->done_ms, 0.0) + w->unseen_ms;
		if (cost)
			e->wait = merged_wait_ms(w, nrows, age, v->snap, v->nworkers);
	}
	if (!cost || w->heartbeat == 0)
		e->wait = Max(e->wait, w->inflight_ms);
	e->transfer = InferClientUncachedBytes(w, bytes) / bandwidth;
	for (int f = 0; f < nfiles; f++)
	{
		const InferPoolModel *m = find_model(w, files[f]);
		double		l = load_ms(w, files[f], v->snap, v->nworkers);

		e->resident += l == 0;
		/* cost: a load queued work waits for already is in W's wait */
		if (cost && ((m != NULL && m->queued > 0) || unseen_runs(w, files[f]) > 0))
			l = 0;
		e->load += l;
	}
	for (int r = 0; r < nruns; r++)
	{
		const InferPoolModel *m = find_model(w, runs[r]);
		double		c = compute_ms(w, runs[r], nrows, v->snap, v->nworkers);

		if (cost)
		{
			c = marginal_ms(w, m, runs[r], nrows, c);
			/* each queued request of that merged run waits c longer */
			e->external += c * queued_runs(w, m, runs[r]);
		}
		e->compute += c;
	}
	if (cost)
		memory_terms(w, files, nfiles, v->snap, v->nworkers, e);
}

/*
 * The index of the worker infer.placement chooses among est (n entries),
 * and its key in *key.  Ties go in turn over the counter all backends
 * share when turn is set, else to the first (an estimate only).
 */
static int
choose(const Estimate *est, int n, bool turn, double *key)
{
	double		best = DBL_MAX;
	int			best_resident = -1;
	int			ntied = 0;
	int		   *tied = palloc(sizeof(int) * n);
	int			pick;
	bool		any_up = false;
	bool		any_reads = false;
	bool		any_holds = false;
	bool		any_other = false;
	bool		any_room = false;
	bool		holder = false;
	bool		locality = infer_placement == INFER_PLACEMENT_LOCALITY;

	for (int i = 0; i < n; i++)
		any_up |= !est[i].down;
	for (int i = 0; i < n; i++)
		any_reads |= !est[i].too_small &&
			!passed_over(&est[i], any_up, false, false, false);
	for (int i = 0; i < n; i++)
		any_holds |= !est[i].no_memory &&
			!passed_over(&est[i], any_up, any_reads, false, false);
	for (int i = 0; i < n; i++)
		any_other |= !est[i].avoided &&
			!passed_over(&est[i], any_up, any_reads, any_holds, false);
	for (int i = 0; i < n; i++)
		any_room |= !est[i].no_room &&
			!passed_over(&est[i], any_up, any_reads, any_holds, any_other);
	/* a model is loaded over another only where no worker holds it yet */
	for (int i = 0; i < n; i++)
		holder |= infer_placement == INFER_PLACEMENT_COST &&
			est[i].load == 0 && !est[i].no_room &&
			!passed_over(&est[i], any_up, any_reads, any_holds, any_other);

	/* the best key (locality: among the most resident) */
	for (int i = 0; i < n; i++)
	{
		if (excluded(&est[i], any_up, any_reads, any_holds, any_other, any_room, holder))
			continue;
		if (locality && est[i].resident != best_resident)
		{
			if (est[i].resident < best_resident)
				continue;
			best_resident = est[i].resident;
			best = DBL_MAX;
		}
		best = Min(best, policy_key(&est[i]));
	}
	for (int i = 0; i < n; i++)
	{
		double		k;

		if (excluded(&est[i], any_up, any_reads, any_holds, any_other, any_room, holder) ||
			(locality && est[i].resident != best_resident))
			continue;
		k = policy_key(&est[i]);
		if (k <= best + Max(PLACEMENT_TIE_MS, fabs(best) * 0.01))
			tied[ntied++] = i;
	}
	Assert(ntied > 0);
	pick = tied[ntied > 1 && turn ? InferPoolNextTurn() % ntied : 0];
	pfree(tied);
	*key = best;
	return pick;
}

/*
 * round_robin's pick at turn rr among workers (n, ordered by name): the
 * next in turn that the pool does not hold down (the turn moves past the
 * down ones, so that the others keep sharing the load evenly), that reads
 * a row of largest bytes (its --max-message-bytes), that can hold the
 * request's models (no_memory[k] false for workers[k]; NULL: all can) and
 * that is not among avoid (navoid names); failing that the next not down
 * that reads it and holds them, then one that reads it (a larger frame
 * drops the connection; a load that does not fit only fails), then the
 * next not down; or rr's own when
 * every worker is down, so that the statement gets the usual connection
 * error; its pool slot in *slot.  Without the pool nothing is down and no
 * limit is known.  Errors: none but out of memory (InferPoolRegister).
 */
static int
round_robin_pick(const InferWorker *workers, int n, uint32 rr, size_t largest,
				 const bool *no_memory, const char *const *avoid, int navoid,
				 int *slot)
{
	for (int pass = 0; pass < 4; pass++)
	{
		for (int k = 0; k < n; k++)
		{
			const InferWorker *w = &workers[(rr + k) % n];
			uint64		limit;

			*slot = InferPoolRegister(w->name, w->endpoint);
			limit = InferPoolRowLimit(*slot);
			if (InferPoolIsDown(*slot) ||
				(pass < 3 && limit != 0 && largest > limit) ||
				(pass < 2 && no_memory != NULL && no_memory[(rr + k) % n]) ||
				(pass < 1 && InferPlacementAvoided(w->name, avoid, navoid)))
				continue;
			placement_rr_next += k;
			return (rr + k) % n;
		}
	}
	*slot = InferPoolRegister(workers[rr % n].name, workers[rr % n].endpoint);
	return rr % n;
}

/* Whether name is among avoid (navoid names).  Never raises an error. */
bool
InferPlacementAvoided(const char *name, const char *const *avoid, int navoid)
{
	for (int i = 0; i < navoid; i++)
		if (strcmp(name, avoid[i]) == 0)
			return true;
	return false;
}

/* Memory context callback: takes back a reservation never sent. */
static void
reserve_forget(void *arg)
{
	InferPoolRemoveInflight((InferPoolInflight *) arg);
}

/*
 * Gives worker an empty reservation (worker->reserved) that the current
 * memory context takes back when it goes, should the request never be
 * sent (an error between the choice and the send).
 */
static void
reserve_prepare(InferWorker *worker)
{
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

	worker->reserved = palloc0(sizeof(InferPoolInflight));
	cb->func = reserve_forget;
	cb->arg = worker->reserved;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
}

/*
 * Chooses the worker for a request of nrows rows and bytes input bytes
 * (its largest row largest bytes) that runs frags (nfrags fragments over
 * the same rows, each with its chained stages) by infer.placement, and
 * returns it in the current memory context with pool_slot, est_ms,
 * max_row_bytes and others_up set.  Among the workers that are not down (all, when
 * every one is), one that reads the largest row (by its
 * --max-message-bytes) is preferred, then one not named in avoid (navoid
 * names: the workers that lost these rows before); the policy chooses
 * among those.  With the pool, the request is reserved in the chosen
 * worker's in-flight work in the same hold of the pool's lock as the
 * choice (worker->reserved): the send
 * takes the reservation over (InferPoolSent); a request not sent gives it
 * back (InferPlacementRelease, InferPlacementFree, or the end of the
 * memory context).  Errors: no worker registered (55000, see
 * InferCatalogGetWorkers).
 */
InferWorker *
InferPlacementPick(InferFragment **frags, int nfrags, int nrows, size_t bytes,
				   size_t largest, const char *const *avoid, int navoid)
{
	PoolView	v;
	InferWorker *chosen;
	const char *files[PLACEMENT_MAX_FILES];
	const char *runs[PLACEMENT_MAX_FILES];
	int			nfiles;
	int			nruns;
	Estimate   *est;
	double		key;
	int			pick;
	uint32		rr;

	/* every pick moves the turn, as InferCatalogPickWorker's did */
	rr = placement_rr_next++;
	nfiles = request_files(frags, nfrags, true, files);
	if (!InferPoolEnabled() || infer_placement == INFER_PLACEMENT_ROUND_ROBIN)
	{
		int			nworkers;
		InferWorker *workers;
		bool	   *no_memory = NULL;
		int			slot;
		int			pick;

		if (InferPoolEnabled())
		{
			/* the pool's view: which workers cannot hold the models */
			view_take(&v, false);
			workers = v.workers;
			nworkers = v.nworkers;
			no_memory = palloc0(sizeof(bool) * Max(nworkers, 1));
			for (int i = 0; i < nworkers; i++)
				no_memory[i] = lacks_memory(v.snap[i], files, nfiles, v.snap, nworkers);
		}
		else
			workers = InferCatalogGetWorkers(&nworkers);
		pick = round_robin_pick(workers, nworkers, rr, largest, no_memory,
								avoid, navoid, &slot);

		chosen = palloc(sizeof(InferWorker));
		*chosen = workers[pick];
		chosen->others_up = false;
		for (int i = 0; i < nworkers && slot != 0; i++)
			chosen->others_up |= i != pick &&
				!InferPoolIsDown(InferPoolRegister(workers[i].name,
												   workers[i].endpoint));
		chosen->pool_slot = slot;
		chosen->max_row_bytes = InferPoolRowLimit(slot);
		chosen->est_ms = PLACEMENT_DEFAULT_ROW_MS * nrows;
		chosen->nruns = 0;
		chosen->runs = NULL;
		chosen->reserved = NULL;
		/* reserved at the choice, as below: a send may wait to connect */
		if (slot != 0)
		{
			reserve_prepare(chosen);
			InferPoolLock(true);
			InferPoolReserveLocked(chosen, nrows, chosen->reserved);
			InferPoolUnlock();
		}
		return chosen;
	}

	nruns = request_files(frags, nfrags, false, runs);
	chosen = palloc(sizeof(InferWorker));
	chosen->runs = palloc(sizeof(char *) * Max(nruns, 1));
	for (int r = 0; r < nruns; r++)
		chosen->runs[r] = pstrdup(runs[r]);
	reserve_prepare(chosen);

	/*
	 * Chosen and reserved under one exclusive hold of the pool's lock: the
	 * backend that chooses next sees this request (InferPoolReserveLocked)
	 */
	view_take(&v, true);
	est = palloc(sizeof(Estimate) * v.nworkers);
	for (int i = 0; i < v.nworkers; i++)
	{
		estimate(&v, i, files, nfiles, runs, nruns, nrows, bytes, largest,
				 &est[i]);
		est[i].avoided = InferPlacementAvoided(v.workers[i].name, avoid, navoid);
	}
	pick = choose(est, v.nworkers, true, &key);
	chosen->name = v.workers[pick].name;
	chosen->endpoint = v.workers[pick].endpoint;
	chosen->pool_slot = est[pick].slot;
	chosen->max_row_bytes = v.snap[pick] != NULL ?
		v.snap[pick]->max_message_bytes : 0;
	chosen->others_up = false;
	for (int i = 0; i < v.nworkers; i++)
		chosen->others_up |= i != pick && !est[i].down;
	chosen->est_ms = est[pick].load + est[pick].transfer + est[pick].compute;
	chosen->nruns = nruns;
	InferPoolReserveLocked(chosen, nrows, chosen->reserved);
	InferPoolUnlock();

	elog(DEBUG1, "pg_infer placement: %d rows of %s%s to \"%s\" (wait %.1f ms, load %.1f ms, transfer %.1f ms, compute %.1f ms, evict %.1f ms, delay to queued %.1f ms)",
		 nrows, nfiles > 0 ? files[0] : "no model", nfiles > 1 ? " and more" : "",
		 chosen->name, est[pick].wait, est[pick].load,
		 est[pick].transfer, est[pick].compute, est[pick].evict,
		 est[pick].external);
	return chosen;
}

/*
 * The largest input row, in bytes, that a registered inference worker the
 * pool does not hold down reads (its WorkerState.max_message_bytes, from
 * --max-message-bytes: a larger frame makes it drop the sender's
 * connection unread), with that worker's name in *worker (palloc'd in the
 * current memory context); 0 when no limit is known: without the pool,
 * with every worker down, or when one that is not down has not said its
 * limit (no state yet, an older worker).  Errors: those of
 * InferCatalogGetWorkers.
 */
uint64
InferPlacementRowLimit(const char **worker)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext tmp;
	PoolView	v;
	uint64		limit = 0;
	int			best = -1;

	*worker = NULL;
	if (!InferPoolEnabled())
		return 0;
	tmp = AllocSetContextCreate(cxt, "pg_infer row limit",
								ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(tmp);
	view_take(&v, false);
	for (int i = 0; i < v.nworkers; i++)
	{
		const InferPoolWorker *w = v.snap[i];

		if (w != NULL && InferPoolStatusOf(w, v.now) == INFER_POOL_DOWN)
			continue;
		if (w == NULL || w->max_message_bytes == 0)
		{
			best = -1;			/* one up says nothing: no limit known */
			break;
		}
		if (best < 0 || w->max_message_bytes > limit)
		{
			limit = w->max_message_bytes;
			best = i;
		}
	}
	MemoryContextSwitchTo(cxt);
	if (best >= 0)
		*worker = pstrdup(v.workers[best].name);
	else
		limit = 0;
	MemoryContextDelete(tmp);
	return limit;
}

/*
 * Takes back the pool's reservation of the request worker was chosen for
 * (InferPlacementPick), when it is not sent: the send failed, or another
 * worker takes it.  No-op once the send has taken the reservation over
 * (InferPoolSent) or without one.  Never raises an error.
 */
void
InferPlacementRelease(const InferWorker *worker)
{
	if (worker != NULL && worker->reserved != NULL)
		InferPoolRemoveInflight(worker->reserved);
}

/*
 * Frees a worker InferPlacementPick returned, with its copied run names,
 * and takes back its reservation; for a choice not used
 * (InferFragmentPickUp passing over a down worker).
 */
void
InferPlacementFree(InferWorker *worker)
{
	InferPlacementRelease(worker);
	for (int r = 0; r < worker->nruns; r++)
		pfree(unconstify(char *, worker->runs[r]));
	if (worker->runs != NULL)
		pfree(worker->runs);
	pfree(worker);
}

/*
 * Under cost, whether frags (nfrags > 1 fragments over the same nrows rows
 * of bytes input bytes, the largest largest bytes, which one request
 * would carry with the input once
 * and run one after another on one worker) had better go apart, one
 * request per fragment, each placed on its own: DESIGN.md "Placement"
 * keeps them together unless moving is cheaper.  Together: the cost key
 * of the best worker for them all (its finish plus the delay to requests
 * queued there).  Apart: each fragment in turn on its best worker, the
 * earlier ones' load, transfer and compute added to that worker's wait;
 * the latest of their finishes plus the sum of their delays to others.
 * Apart wins when it is lower by more than the tie margin.  False under
 * the other policies and without the pool.  Errors: as InferPlacementPick.
 */
bool
InferPlacementSplits(InferFragment **frags, int nfrags, int nrows,
					 size_t bytes, size_t largest)
{
	PoolView	v;
	const char *files[PLACEMENT_MAX_FILES];
	const char *runs[PLACEMENT_MAX_FILES];
	int			nfiles;
	int			nruns;
	Estimate   *est;
	double	   *extra;
	double		together;
	double		finish = 0;
	double		external = 0;
	double		key;
	bool		split;
	int			pick;
	StringInfoData where;

	if (nfrags < 2 || !InferPoolEnabled() ||
		infer_placement != INFER_PLACEMENT_COST)
		return false;
	view_take(&v, false);
	est = palloc(sizeof(Estimate) * v.nworkers);
	extra = palloc0(sizeof(double) * v.nworkers);

	nfiles = request_files(frags, nfrags, true, files);
	nruns = request_files(frags, nfrags, false, runs);
	for (int i = 0; i < v.nworkers; i++)
		estimate(&v, i, files, nfiles, runs, nruns, nrows, bytes, largest,
				 &est[i]);
	pick = choose(est, v.nworkers, false, &together);
	initStringInfo(&where);
	appendStringInfo(&where, "together on \"%s\" %.1f ms; apart on",
					 v.workers[pick].name, together);

	for (int f = 0; f < nfrags; f++)
	{
		nfiles = request_files(&frags[f], 1, true, files);
		nruns = request_files(&frags[f], 1, false, runs);
		for (int i = 0; i < v.nworkers; i++)
		{
			estimate(&v, i, files, nfiles, runs, nruns, nrows, bytes, largest,
					 &est[i]);
			est[i].wait += extra[i];
		}
		pick = choose(est, v.nworkers, false, &key);
		appendStringInfo(&where, "%s \"%s\" %.1f ms", f > 0 ? "," : "",
						 v.workers[pick].name, key - est[pick].external);
		finish = Max(finish, key - est[pick].external);
		external += est[pick].external;
		extra[pick] += est[pick].load + est[pick].transfer + est[pick].compute;
	}
	split = finish + external <
		together - Max(PLACEMENT_TIE_MS, fabs(together) * 0.01);
	elog(DEBUG1, "pg_infer placement: %d fragments over %d rows %s (%s, delay to queued %.1f ms)",
		 nfrags, nrows, split ? "go apart" : "stay together", where.data,
		 external);
	return split;
}

/*
 * Sends MSG_LOAD_MODEL (load) or MSG_UNLOAD_MODEL for the registered
 * model to the registered worker, waits for its answer and folds the
 * state it answers with into the pool at once.  Errors: unknown worker or
 * model (42704), the worker's own error (55006 for an unload that queued
 * or running work needs), those of the client.
 */
static void
model_request(const char *model, const char *name, bool load)
{
	int			nworkers;
	InferWorker *workers = InferCatalogGetWorkers(&nworkers);
	InferWorker *worker = NULL;
	Pginfer__ModelSpec **spec;
	Pginfer__Header hdr = PGINFER__HEADER__INIT;
	Pginfer__ModelRequest mreq = PGINFER__MODEL_REQUEST__INIT;
	InferReply *reply;
	const char *verb = load ? "load" : "unload";

	for (int i = 0; i < nworkers && worker == NULL; i++)
		if (strcmp(workers[i].name, name) == 0)
			worker = &workers[i];
	if (worker == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("inference worker \"%s\" does not exist", name),
				 errhint("See infer.workers.")));
	/*
	 * a worker the pool holds down gets infer.worker_timeout to connect,
	 * not the whole infer.timeout (InferClientSend); one up is sent to
	 * without the pool, so that a long load is never taken for a hang
	 */
	if (InferPoolIsDown(InferPoolRegister(worker->name, worker->endpoint)))
		worker->pool_slot = InferPoolRegister(worker->name, worker->endpoint);
	spec = InferCatalogGetModels(&model, NULL, 1);
	mreq.model = spec[0];
	hdr.kind = load ? PGINFER__MSG_KIND__MSG_LOAD_MODEL :
		PGINFER__MSG_KIND__MSG_UNLOAD_MODEL;
	hdr.model = &mreq;
	reply = InferClientModelRequest(worker, &hdr, 0, NULL, NULL,
									psprintf("could not %s model \"%s\"",
											 verb, model),
									psprintf("model %s", verb));
	InferPoolFold(InferPoolRegister(worker->name, worker->endpoint), 0,
				  reply->header->state, false);
}

/*
 * infer.load_model(model text, worker text): makes the registered model
 * resident on the worker (MSG_LOAD_MODEL) and waits until it is, so that
 * a burst of work does not pay the load; see model_request.
 */
Datum
infer_load_model(PG_FUNCTION_ARGS)
{
	model_request(text_to_cstring(PG_GETARG_TEXT_PP(0)),
				  text_to_cstring(PG_GETARG_TEXT_PP(1)), true);
	PG_RETURN_VOID();
}

/*
 * infer.unload_model(model text, worker text): evicts the model from the
 * worker's memory (MSG_UNLOAD_MODEL); one that is not resident is no
 * error, one that queued or running requests need is (55006, the
 * worker's).  See model_request.
 */
Datum
infer_unload_model(PG_FUNCTION_ARGS)
{
	model_request(text_to_cstring(PG_GETARG_TEXT_PP(0)),
				  text_to_cstring(PG_GETARG_TEXT_PP(1)), false);
	PG_RETURN_VOID();
}
