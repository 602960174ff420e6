/*
 * state.h
 *	  What an infer-worker tells the pool about itself (DESIGN.md
 *	  "Placement"): the PUB socket that publishes MSG_STATE, the measured
 *	  compute times per model and batch size, and the host's memory.
 *
 * state_pub: a ZeroMQ PUB socket with a small send high-water mark; a
 * message that would block is dropped (state is idempotent, the next one
 * replaces it).  The owner calls state_pub_changed() on every change and
 * state_pub_wait_ms() to know how long it may sleep; state_pub_due() says
 * a message should go now: PGINFER_STATE_PERIOD_MS after the last one, or
 * PGINFER_STATE_COALESCE_MS after it when something changed since (so a
 * burst of changes gives at most one message per coalescing interval).
 * The sequence number counts every state message of the worker, published
 * or carried by a PONG.
 *
 * state_timings: an exponentially weighted mean (weight STATE_EWMA_ALPHA
 * for the newest run) of the milliseconds one model takes for a batch of
 * n rows, kept per model file and exact batch size, at most
 * STATE_MAX_TIMINGS entries (the least recently updated goes first).  A
 * run longer than STATE_EWMA_MAX_STEP times the mean counts as that many
 * times it (a clipped mean): one stall that is not the model's (the
 * machine swapping, a paused virtual machine) raises the mean by 90% at
 * most, where it could make it many times the model's and keep cost
 * placement away from the worker, which then never runs the model again
 * to correct it; a lasting slowdown is followed within a few runs.  (A
 * run across a SIGSTOP of the worker is not folded at all: server.h,
 * server_resumes.)
 * state_timings_estimate() answers for any batch size by linear
 * interpolation between the measured sizes, and beyond the largest in
 * proportion to the rows.
 *
 * Threading: a state_pub and a state_timings belong to one thread (the
 * server loop).
 */
#ifndef INFER_STATE_H
#define INFER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/model_cache.h"

typedef struct state_pub state_pub;
typedef struct state_timings state_timings;

#define STATE_EWMA_ALPHA 0.3
#define STATE_EWMA_MAX_STEP 4.0
#define STATE_MAX_TIMINGS 256
/* Messages the PUB socket queues per subscriber before it drops. */
#define STATE_SNDHWM 8

/*
 * The default state endpoint for a request endpoint: tcp://HOST:* for
 * tcp://HOST:PORT (an ephemeral port on the same host), ENDPOINT.state for
 * ipc:// and inproc:// endpoints.  Writes it to buf; -1 when it does not fit.
 */
int			state_default_endpoint(const char *request_endpoint, char *buf,
								   size_t buflen);

/*
 * New publisher bound to endpoint on ctx.  NULL with err when the socket
 * cannot be made or bound.
 */
state_pub  *state_pub_new(void *ctx, const char *endpoint, char *err,
						  size_t errlen);

/* Closes the socket and frees *p; sets *p to NULL. */
void		state_pub_destroy(state_pub **p);

/* The bound endpoint (port resolved). */
const char *state_pub_endpoint(const state_pub *p);

/* Notes a change: a message goes out within PGINFER_STATE_COALESCE_MS. */
void		state_pub_changed(state_pub *p);

/* Milliseconds from now_us until the next message is due (0: due now). */
int			state_pub_wait_ms(const state_pub *p, int64_t now_us);

/* Whether a message is due at now_us. */
int			state_pub_due(const state_pub *p, int64_t now_us);

/*
 * Publishes buf (a packed Header of kind MSG_STATE, len bytes) as one
 * frame without blocking and notes the time; a message the socket cannot
 * take now is dropped.  Returns 0 when sent, -1 when dropped.
 */
int			state_pub_send(state_pub *p, const void *buf, size_t len,
						   int64_t now_us);

/* New empty timings table, or NULL when memory runs out. */
state_timings *state_timings_new(void);

/* Frees *t; sets *t to NULL. */
void		state_timings_destroy(state_timings **t);

/* One measured model run: file, rows in the call, milliseconds. */
typedef struct state_sample
{
	char		file[256];
	int			rows;
	double		ms;
} state_sample;

/* Folds one measured run (ms for a batch of rows) of model file into the table. */
void		state_timings_record(state_timings *t, const char *file, int rows,
								 double ms);

/*
 * Estimated ms for model file over a batch of rows (see above), or -1 when
 * the model has no timing yet.
 */
double		state_timings_estimate(const state_timings *t, const char *file,
								   int rows);

/*
 * The table as ModelTiming messages: *out gets a malloc'd array of *n
 * pointers into a malloc'd block (free both with state_timings_free_list);
 * the strings point into the table (valid until it changes).  Each model's
 * smallest and largest batch size come first, then the rest by batch
 * size, so that a reader keeping only the first entries has every model.
 */
int			state_timings_list(const state_timings *t, Pginfer__ModelTiming ***out,
							   size_t *n);
void		state_timings_free_list(Pginfer__ModelTiming **list);

/*
 * Copies mc's residency counters (model_cache_get_counts) into st's
 * model_loads, model_evictions, model_hits and model_misses.
 */
void		state_model_counters(Pginfer__WorkerState *st, model_cache *mc);

/*
 * When the worker runs models on a CUDA device (--device cuda:N): sets
 * st->device to "cuda:N" and gpu_memory_total / gpu_memory_free to the
 * device's memory (cudaMemGetInfo); caps gpu_memory_cap at the total.
 * On the CPU it leaves st alone.  Call it after the CPU values are set.
 */
void		state_device_memory(Pginfer__WorkerState *st);

/*
 * Host memory from /proc/meminfo: MemTotal and MemAvailable, in bytes.
 * Returns 0, or -1 (both 0) when it cannot be read.
 */
int			state_host_memory(uint64_t *total, uint64_t *available);

/*
 * Bytes this process's allocator has handed out and not had back: glibc's
 * mallinfo2() in-use bytes of every arena (uordblks) plus its mmap()ed
 * chunks (hblkhd).  Unlike the resident set it does not count freed memory
 * that the allocator keeps, so it goes back to its level once what a
 * request held is freed.  Walks the arenas' free lists (microseconds), so
 * the worker calls it for each ping but at most every 100 ms for its
 * published state.  0 when not known: under AddressSanitizer, whose
 * allocator glibc's counters do not see.
 */
uint64_t	state_heap_bytes(void);

#endif							/* INFER_STATE_H */
