/*
 * pool.c
 *	  Persistent worker threads for the operators; see pool.h.
 *
 * A region is published under pool_lock: the task function, the task
 * count, a shared next-task counter and a generation number.  Pool threads
 * watch the generation (spinning for about IE_SPIN_NS, then sleeping on
 * wake_cv), join the region while it is open (counting themselves in),
 * claim tasks from the counter until none are left, and count themselves
 * out.  The caller runs tasks too; once all are claimed it closes the
 * region and waits only for the threads that joined, so on a busy machine
 * a pool thread that did not get a CPU in time costs nothing.
 *
 * Threading: region_lock makes regions one at a time (a second caller that
 * finds it taken runs its tasks itself); pool_lock guards the published
 * region and the thread list.  Pool threads never exit.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "worker/engine/pool.h"

/* How long an idle pool thread spins before sleeping. */
#define IE_SPIN_NS 200000

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static int	n_started;			/* pool threads started (slots 1..n_started) */
static atomic_uint generation;	/* bumped for every region */
static int	n_sleeping;			/* under pool_lock */
static unsigned start_gen[IE_POOL_MAX_THREADS];	/* generation when slot started */

/* The region being run (written under pool_lock before generation moves). */
static ie_task_fn job_fn;
static void *job_arg;
static int64_t job_tasks;
static int	job_threads;		/* pool slots taking part: 1..job_threads-1 */
static atomic_llong job_next;
static atomic_int job_active;	/* pool threads that joined and are still in it */
static bool job_open;			/* threads may still join (under pool_lock) */

/* Nanoseconds on the monotonic clock. */
static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Claims and runs tasks of the current region until none are left. */
static void
run_tasks(ie_task_fn fn, void *arg, int64_t n, int slot)
{
	for (;;)
	{
		int64_t		t = atomic_fetch_add(&job_next, 1);

		if (t >= n)
			break;
		fn(arg, t, slot);
	}
}

/* Pool thread body: slot is its worker index (1..). */
static void *
pool_main(void *p)
{
	int			slot = (int) (intptr_t) p;
	/* the generation before the region that started this thread: that
	 * region may be published before this line runs */
	unsigned	seen = start_gen[slot];

	for (;;)
	{
		int64_t		t0 = now_ns();
		unsigned	g;
		ie_task_fn	fn;
		void	   *arg;
		int64_t		n;
		int			take;

		/* wait for a new region: spin, then sleep */
		while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen)
		{
			if (now_ns() - t0 > IE_SPIN_NS)
			{
				pthread_mutex_lock(&pool_lock);
				n_sleeping++;
				while ((g = atomic_load(&generation)) == seen)
					pthread_cond_wait(&wake_cv, &pool_lock);
				n_sleeping--;
				pthread_mutex_unlock(&pool_lock);
				break;
			}
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		}
		(void) g;
		pthread_mutex_lock(&pool_lock);
		/* the region now published: a later one if this thread was slow */
		seen = atomic_load(&generation);
		fn = job_fn;
		arg = job_arg;
		n = job_tasks;
		/* join only while the caller still has tasks to hand out: a thread
		 * the scheduler kept off the CPU is then never waited for */
		take = job_open && slot < job_threads;
		if (take)
			atomic_fetch_add(&job_active, 1);
		pthread_mutex_unlock(&pool_lock);
		if (!take)
			continue;
		run_tasks(fn, arg, n, slot);
		if (atomic_fetch_sub(&job_active, 1) == 1)
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
	while (n_started < want - 1)
	{
		pthread_t	tid;
		pthread_attr_t attr;
		int			rc;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		start_gen[n_started + 1] = atomic_load(&generation);
		rc = pthread_create(&tid, &attr, pool_main, (void *) (intptr_t) (n_started + 1));
		pthread_attr_destroy(&attr);
		if (rc != 0)
			break;
		n_started++;
	}
	return n_started + 1;
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
	pthread_mutex_lock(&pool_lock);
	nt = grow_pool(nt) < nt ? n_started + 1 : nt;
	job_fn = fn;
	job_arg = arg;
	job_tasks = n_tasks;
	job_threads = nt;
	atomic_store(&job_next, 0);
	atomic_store(&job_active, 0);
	job_open = true;
	atomic_fetch_add_explicit(&generation, 1, memory_order_release);
	if (n_sleeping > 0)
		pthread_cond_broadcast(&wake_cv);
	pthread_mutex_unlock(&pool_lock);

	run_tasks(fn, arg, n_tasks, 0);
	/* every task is claimed: close the region to late joiners */
	pthread_mutex_lock(&pool_lock);
	job_open = false;
	pthread_mutex_unlock(&pool_lock);

	/* wait for the pool threads: spin a little, then sleep */
	{
		int64_t		t0 = now_ns();

		while (atomic_load(&job_active) > 0 && now_ns() - t0 < IE_SPIN_NS)
		{
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		}
		if (atomic_load(&job_active) > 0)
		{
			pthread_mutex_lock(&pool_lock);
			while (atomic_load(&job_active) > 0)
				pthread_cond_wait(&done_cv, &pool_lock);
			pthread_mutex_unlock(&pool_lock);
		}
	}
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
