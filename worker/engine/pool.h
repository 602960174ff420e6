/*
 * pool.h
 *	  The engine's persistent worker threads (internal to the engine).
 *
 * Operators split their work into independent tasks and call
 * ie_parallel_for(); the tasks run on the calling thread plus up to
 * n_threads - 1 pool threads that are started once and then wait for work
 * (spinning briefly, then sleeping), so a parallel region costs
 * microseconds rather than a thread start.  Each thread starts on its own
 * contiguous range of the tasks (the first 1/n_threads to the caller, the
 * next to pool thread 1, ...) and then helps with the others' ranges, so
 * operators that number tasks image-major keep an image's activations on
 * one core from layer to layer.  Which thread runs which task is not
 * fixed, so a task's result must not depend on it.
 *
 * Threading: one parallel region at a time uses the pool; a call made while
 * another thread's region is running (two models run at once) runs its
 * tasks on the calling thread alone.
 */
#ifndef IE_POOL_H
#define IE_POOL_H

#include <stddef.h>
#include <stdint.h>

/* Most threads one region uses (the caller included). */
#define IE_POOL_MAX_THREADS 64

/* One task: fn(arg, task, worker); worker in [0, n_threads) is the slot
 * of the thread running it, for per-thread scratch. */
typedef void (*ie_task_fn) (void *arg, int64_t task, int worker);

/*
 * Runs fn for every task in [0, n_tasks) on up to n_threads threads and
 * returns when all have run.  n_threads <= 1 or n_tasks <= 1 runs them in
 * order on the caller.
 */
void		ie_parallel_for(int n_threads, int64_t n_tasks, ie_task_fn fn, void *arg);

/*
 * A scratch buffer of at least bytes bytes, 64-byte aligned, private to the
 * calling thread and kept for its next call (contents not kept); NULL when
 * memory runs out.  Valid until the same thread calls it again.  It does
 * not check the tensor limit: an operator whose tasks take one checks the
 * largest size before its parallel region, on its own thread
 * (ie_scratch_fits, op.h).
 */
void	   *ie_thread_scratch(size_t bytes);

#endif							/* IE_POOL_H */
