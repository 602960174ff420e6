/*
 * pool.c
 *	  Persistent worker threads for the operators; see pool.h.
 *
 * A region is published without locks: the caller fills in the task
 * function and the threads' task ranges (below), then stores the region's
 * generation number in job_open.  Pool threads watch job_open (spinning
 * for about IE_SPIN_NS, then sleeping on wake_cv), count themselves in
 * (job_active), and if the region is still open when they look again,
 * claim tasks until none are left and count themselves out.  The caller
 * runs tasks too; once all are claimed it closes the region (job_open = 0)
 * and waits only for the threads that counted themselves in while it was
 * open, so on a busy machine a pool thread that did not get a CPU in time
 * costs nothing.  The join and the close are both sequentially consistent,
 * so either the caller sees the thread counted in (and waits for it) or
 * the thread sees the region closed (and leaves it).  The mutex and
 * condition variables serve only the sleeping paths: while the pool
 * threads spin, a region costs a few cache-line transfers and no system
 * call (about 0.7 us on this machine).
 *
 * Threading: region_lock makes regions one at a time (a second caller that
 * finds it taken runs its tasks itself); the job fields and ranges are
 * written only while no region is open, and a pool thread reads them only
 * after counting itself in and finding a region open, which keeps them
 * until it counts itself out; pool_lock guards the sleeping paths and the
 * thread list.  Pool threads never exit.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "worker/engine/pool.h"

/* How long an idle pool thread (or a caller waiting for one) spins before
 * sleeping. */
#define IE_SPIN_NS 200000

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static int	n_started;			/* pool threads started (slots 1..n_started) */
static unsigned last_gen;		/* the last region's generation (callers, under
								 * region_lock) */
static atomic_int n_sleeping;	/* pool threads in (or going to) wake_cv */
static atomic_int caller_sleeping;	/* the caller is in (or going to) done_cv */

/*
 * The region being run: written by the caller before job_open moves to its
 * generation, read by pool threads only after they counted themselves in
 * and found it open.  Each group on its own cache line.
 */
static struct
{
	ie_task_fn	fn;
	void	   *arg;
	int			threads;		/* pool slots taking part: 1..threads-1 */
}			job __attribute__((aligned(64)));
static _Alignas(64) atomic_uint job_open;	/* the open region's generation; 0:
											 * none */
/*
 * The tasks are dealt out in contiguous ranges, one per thread taking part
 * (range k: tasks [k * n / threads, (k + 1) * n / threads)); a thread runs
 * its own range first, then helps with the others' from their fronts.
 * Operators number their tasks image-major, so with the same thread count
 * a thread gets the same images in layer after layer and finds their
 * activations in its own cache: on this machine's two vCPUs, reading
 * lines another core wrote costs two to six times a local read, which had
 * made some layers slower on two threads than on one.  A thread that is
 * late or missing only loses its range to the others.
 */
typedef struct task_range
{
	_Alignas(64) atomic_llong next;	/* next task of the range to claim */
	int64_t		end;			/* one past its last task */
} task_range;

static task_range job_range[IE_POOL_MAX_THREADS];
static _Alignas(64) atomic_int job_active;	/* pool threads counted in */

/* Nanoseconds on the monotonic clock; see engine.h. */
int64_t
ie_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * One round of a spin-wait: a pause, and every 16th round a sched_yield(),
 * so that a spinning thread hands its CPU to any other runnable thread
 * there (on a busy machine, possibly the thread it is waiting for); with
 * nothing else runnable the yield returns at once.
 */
static inline void
spin_round(int round)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#endif
	if ((round & 15) == 15)
		sched_yield();
}

/*
 * Claims and runs tasks of the current region (nt threads taking part)
 * until none are left: slot's own range first, then the others in turn.
 */
static void
run_tasks(ie_task_fn fn, void *arg, int nt, int slot)
{
	for (int i = 0; i < nt; i++)
	{
		task_range *r = &job_range[(slot + i) % nt];

		for (;;)
		{
			int64_t		t = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);

			if (t >= r->end)
				break;
			fn(arg, t, slot);
		}
	}
}

/*
 * Waits until a region other than seen is open (spinning, then sleeping on
 * wake_cv); returns its generation.
 */
static unsigned
wait_region(unsigned seen)
{
	int64_t		t0 = ie_now_ns();
	unsigned	g;
	int			spins = 0;

	for (;;)
	{
		g = atomic_load(&job_open);
		if (g != 0 && g != seen)
			return g;
		spin_round(++spins);
		/* read the clock every 64 rounds: it costs more than a pause */
		if ((spins & 63) == 0 && ie_now_ns() - t0 > IE_SPIN_NS)
			break;
	}
	pthread_mutex_lock(&pool_lock);
	atomic_fetch_add(&n_sleeping, 1);
	while ((g = atomic_load(&job_open)) == 0 || g == seen)
		pthread_cond_wait(&wake_cv, &pool_lock);
	atomic_fetch_sub(&n_sleeping, 1);
	pthread_mutex_unlock(&pool_lock);
	return g;
}

/* Pool thread body: slot is its worker index (1..). */
static void *
pool_main(void *p)
{
	int			slot = (int) (intptr_t) p;
	unsigned	seen = 0;

	for (;;)
	{
		unsigned	g = wait_region(seen);
		unsigned	open;

		atomic_fetch_add(&job_active, 1);
		/* still open (this region or, if this thread was slow, a later
		 * one): the caller now waits for this thread, and the job fields
		 * stay as they are until it counts itself out */
		open = atomic_load(&job_open);
		seen = open != 0 ? open : g;
		if (open != 0 && slot < job.threads)
			run_tasks(job.fn, job.arg, job.threads, slot);
		if (atomic_fetch_sub(&job_active, 1) == 1 && atomic_load(&caller_sleeping))
		{
			pthread_mutex_lock(&pool_lock);
			pthread_cond_broadcast(&done_cv);
			pthread_mutex_unlock(&pool_lock);
		}
	}
	return NULL;
}

/* Starts pool threads until slots 1..want-1 exist; returns how many do. */
static int
grow_pool(int want)
{
	pthread_mutex_lock(&pool_lock);
	while (n_started < want - 1)
	{
		pthread_t	tid;
		pthread_attr_t attr;
		int			rc;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&tid, &attr, pool_main, (void *) (intptr_t) (n_started + 1));
		pthread_attr_destroy(&attr);
		if (rc != 0)
			break;
		n_started++;
	}
	pthread_mutex_unlock(&pool_lock);
	return n_started + 1;
}

/* Waits until every pool thread counted into the closed region is out. */
static void
wait_joined(void)
{
	int64_t		t0 = ie_now_ns();
	int			spins = 0;

	while (atomic_load(&job_active) > 0)
	{
		spin_round(++spins);
		if ((spins & 63) == 0 && ie_now_ns() - t0 > IE_SPIN_NS)
		{
			pthread_mutex_lock(&pool_lock);
			atomic_store(&caller_sleeping, 1);
			while (atomic_load(&job_active) > 0)
				pthread_cond_wait(&done_cv, &pool_lock);
			atomic_store(&caller_sleeping, 0);
			pthread_mutex_unlock(&pool_lock);
			return;
		}
	}
}

/* Runs the tasks on the caller and the pool; see pool.h. */
void
ie_parallel_for(int n_threads, int64_t n_tasks, ie_task_fn fn, void *arg)
{
	int			nt = n_threads;

	if (nt > IE_POOL_MAX_THREADS)
		nt = IE_POOL_MAX_THREADS;
	if (nt > n_tasks)
		nt = (int) n_tasks;
	if (nt <= 1 || pthread_mutex_trylock(&region_lock) != 0)
	{
		for (int64_t t = 0; t < n_tasks; t++)
			fn(arg, t, 0);
		return;
	}
	if (grow_pool(nt) < nt)
		nt = n_started + 1;
	job.fn = fn;
	job.arg = arg;
	job.threads = nt;
	for (int k = 0; k < nt; k++)
	{
		atomic_store_explicit(&job_range[k].next, k * n_tasks / nt, memory_order_relaxed);
		job_range[k].end = (k + 1) * n_tasks / nt;
	}
	if (++last_gen == 0)
		last_gen = 1;
	atomic_store(&job_open, last_gen);
	if (atomic_load(&n_sleeping) > 0)
	{
		pthread_mutex_lock(&pool_lock);
		pthread_cond_broadcast(&wake_cv);
		pthread_mutex_unlock(&pool_lock);
	}

	run_tasks(fn, arg, nt, 0);
	/* every task is claimed: close the region to late joiners, then wait
	 * for the threads that joined */
	atomic_store(&job_open, 0);
	wait_joined();
	pthread_mutex_unlock(&region_lock);
}

static __thread void *scratch_buf;
static __thread size_t scratch_cap;

/*
 * scratch_key holds each thread's scratch buffer too, so that its
 * destructor (free) releases the buffer when a thread that is not a pool
 * thread exits (the worker's compute threads, a test's threads); found by
 * LeakSanitizer (make check-asan).
 */
static pthread_key_t scratch_key;
static pthread_once_t scratch_key_once = PTHREAD_ONCE_INIT;

/* scratch_key_init: creates scratch_key (pthread_once). */
static void
scratch_key_init(void)
{
	if (pthread_key_create(&scratch_key, free) != 0)
		abort();
}

/* The calling thread's scratch buffer, grown to bytes; see pool.h. */
void *
ie_thread_scratch(size_t bytes)
{
	if (bytes > scratch_cap)
	{
		size_t		cap = (bytes + 4095) / 4096 * 4096;

		pthread_once(&scratch_key_once, scratch_key_init);
		free(scratch_buf);
		scratch_buf = aligned_alloc(64, cap);
		scratch_cap = scratch_buf ? cap : 0;
		pthread_setspecific(scratch_key, scratch_buf);
	}
	return scratch_buf;
}
