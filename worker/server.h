/*
 * server.h
 *	  The infer-worker request loop: a ZeroMQ ROUTER socket, the header
 *	  checks, and the dispatch of each message kind (common/protocol.h).
 *
 * A request arrives as [routing id][header][payload frames...].  The header
 * is unpacked with protobuf-c and checked (version, the parts its kind
 * needs, the number of payload frames) before anything else is read; a
 * request that fails a check, or that fails as a whole, is answered with
 * MSG_ERROR, and the loop goes on:
 *
 *	  MSG_PING				  -> MSG_PONG with the WorkerState
 *	  MSG_RUN_FRAGMENT		  -> MSG_RESULT (+ one frame per row) or MSG_ERROR,
 *								 or MSG_NEED_INPUT when rows it was to take
 *								 from its input cache are not there
 *	  MSG_LOAD_MODEL		  -> MSG_PONG once resident and a test row of its
 *								 task ran (worker/preflight.h; not under
 *								 --simulate), or MSG_ERROR naming the file
 *								 (53200 when it cannot be made to fit) or the
 *								 test row's error
 *	  MSG_UNLOAD_MODEL		  -> MSG_PONG (unloading what is not loaded is
 *								 fine), MSG_ERROR 55006 when queued or running
 *								 requests need the model
 *	  MSG_CANCEL			  -> no reply; a queued request of that peer and
 *								 id is dropped and gets no result, a running
 *								 one gets no result (its group is abandoned
 *								 between rows once all its requests are
 *								 cancelled)
 *	  anything else			  -> MSG_ERROR (PGINFER_SQLSTATE_PROTOCOL)
 *
 * Limits on what a request may make the worker hold (server_run): a frame
 * larger than max_message_bytes makes libzmq drop the peer's connection
 * (ZMQ_MAXMSGSIZE; the peer gets no reply, and a DEALER reconnects); a
 * request with more than SERVER_MAX_ROWS payload frames, or a header
 * naming more rows, is answered with MSG_ERROR 54000, and its frames past
 * SERVER_MAX_ROWS + 1 are read and dropped without being kept.
 *
 * Dynamic batching (server_run): the loop drains every message that is
 * ready, answers PING, CANCEL, LOAD/UNLOAD and bad requests at once, and
 * queues RUN_FRAGMENT requests in the batcher (worker/batcher.h), keyed by
 * their packed Fragment (kind, every model spec) and pixel limit.  Requests
 * of one key, from any peers, are merged into one fragment run of up to
 * max_batch rows once the group is full or its oldest request has waited
 * max_queue_delay_us; each request then gets its own MSG_RESULT with its
 * own rows in order, sent to its own peer.  One job runs at a time on the
 * compute thread (a group, or a model load; pending loads go first) while
 * the loop keeps reading the socket, so a PING is answered at once, also
 * during a long group.  On a stop, the running group is abandoned between
 * rows and it and the queued requests are answered with MSG_ERROR 57P01.
 *
 * Input cache (worker/input_cache.h, docs/placement.md): at intake, rows
 * listed in RunFragment.cached_rows are taken (and pinned until the
 * request is answered or dropped) from the cache by their input_sha256;
 * rows that came with bytes and a hash are checked against it (a
 * mismatch fails that row with XX001 and is not cached) and cached.
 * When a listed row is not held, the request is answered at once with
 * MSG_NEED_INPUT naming those rows, and dropped.
 *
 * State (DESIGN.md "Placement"): the WorkerState of every PONG, and of
 * the MSG_STATE messages the PUB socket publishes at least every
 * PGINFER_STATE_PERIOD_MS and within PGINFER_STATE_COALESCE_MS of a change,
 * holds the requests held (queue_length, waiting or running), their
 * estimated work (backlog_ms, from the measured per-model timings, see
 * worker/state.h), memory, the models the cache knows (resident or not,
 * with their sizes, load times and the requests that need them), the
 * timings, the counters (batches_run, rows_run, merged_batches,
 * model_runs), and the input cache's Bloom filter and counters.  docs/operations.md lists every field.
 *
 * server_handle() is the dispatch of one message without a socket and
 * without queueing (the unit tests call it directly); server_run_group()
 * is the merged run of several requests; server_run() wraps both around
 * the ROUTER socket.
 *
 * Threading: one thread creates, runs and destroys a server; server_run
 * starts a compute thread for its duration (see server.c), and the engine
 * may use more threads inside a model run.  server_handle and
 * server_run_group run on the caller's thread.
 */
#ifndef INFER_SERVER_H
#define INFER_SERVER_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/request.h"

typedef struct server_opts
{
	const char *endpoint;		/* ZeroMQ endpoint to bind; NULL: no socket */
	const char *model_dir;		/* --model-dir */
	int64_t		max_pixels;		/* --max-pixels; <= 0: the default */
	int			max_batch;		/* --max-batch rows; <= 0: the default (64) */
	int64_t		max_queue_delay_us; /* --max-queue-delay-us; < 0: 2000 */
} server_opts;

#define SERVER_DEFAULT_MAX_BATCH 64
#define SERVER_DEFAULT_QUEUE_DELAY_US 2000
#define SERVER_DEFAULT_MAX_MESSAGE_BYTES ((int64_t) 256 << 20)	/* 256 MiB */
/* Most rows (payload frames) one MSG_RUN_FRAGMENT request may carry. */
#define SERVER_MAX_ROWS REQUEST_MAX_ROWS

typedef struct server server;

/* A reply to send: a packed header and its payload frames. */
typedef struct server_reply
{
	uint8_t    *header;			/* packed Pginfer__Header, malloc'd */
	size_t		header_len;
	int			n_frames;
	void	  **frames;			/* n_frames buffers, malloc'd or NULL (empty) */
	size_t	   *frame_len;
} server_reply;

/*
 * New server: opens the model cache and, when opts->endpoint is set, a
 * ZeroMQ context and a ROUTER socket bound to it.  NULL with err on
 * failure (bad model directory, endpoint that cannot be bound).
 */
server	   *server_new(const server_opts *opts, char *err, size_t errlen);

/*
 * server_new() with the socket's largest frame set to max_message_bytes
 * (--max-message-bytes, ZMQ_MAXMSGSIZE; <= 0: the default).  A separate
 * entry point rather than a server_opts field so that existing positional
 * initializers of server_opts stay complete.
 */
server	   *server_new_limited(const server_opts *opts, int64_t max_message_bytes,
							   char *err, size_t errlen);

/*
 * Settings added after server_opts (so that positional initializers of
 * server_opts stay complete); zero for every default.
 */
typedef struct server_ext_opts
{
	int64_t		max_message_bytes;	/* --max-message-bytes; <= 0: default */
	const char *state_endpoint; /* --state-listen; NULL: tcp://HOST:* of the
								 * request endpoint's host */
	uint64_t	gpu_memory;		/* --gpu-memory bytes; 0: no cap */
	const char *simulate;		/* --simulate profile path, or NULL */
	int64_t		input_cache;	/* --input-cache bytes; 0: the default
								 * (INPUT_CACHE_DEFAULT_MB MiB); < 0: off */
	int			no_uploads;		/* --no-uploads: refuse MSG_PUT_MODEL */
	int64_t		max_upload_bytes;	/* --max-upload-bytes: most bytes the
									 * uploaded models may hold on disk;
									 * 0: SERVER_DEFAULT_MAX_UPLOAD_BYTES */
	int			batch_hold;		/* --batch-hold: percent of a request's
								 * expected run its group may wait for
								 * more of its fragment (batcher.h); 0:
								 * SERVER_DEFAULT_BATCH_HOLD; < 0: none */
	int64_t		max_client_bytes;	/* --max-client-bytes: most bytes one
									 * client connection may hold in the
									 * worker (requests and unread answers,
									 * worker/clients.h); 0:
									 * CLIENT_DEFAULT_MAX_BYTES */
} server_ext_opts;

/* Default --batch-hold, in percent of the expected run. */
#define SERVER_DEFAULT_BATCH_HOLD 10
/* Longest hold, in microseconds, whatever the run. */
#define SERVER_MAX_BATCH_HOLD_US 200000

/* Default --max-upload-bytes: 1 GiB of uploaded models on disk. */
#define SERVER_DEFAULT_MAX_UPLOAD_BYTES ((int64_t) 1 << 30)

/*
 * server_new() with the settings of ext (may be NULL): the state socket's
 * endpoint, the model memory cap and the simulated device.  NULL with err
 * on failure (also an unreadable or malformed profile, or a state endpoint
 * that cannot be bound).
 */
server	   *server_new_ext(const server_opts *opts, const server_ext_opts *ext,
						   char *err, size_t errlen);

/* Closes the socket and context and frees everything; sets *s to NULL. */
void		server_destroy(server **s);

/* The endpoint the socket is bound to (port resolved), or NULL. */
const char *server_endpoint(const server *s);

/* The endpoint the state (PUB) socket is bound to, or NULL. */
const char *server_state_endpoint(const server *s);

/*
 * How many times the process was resumed after a stop (SIGCONT), counted by
 * the program's SIGCONT handler (infer-worker's main.c) on the thread that
 * runs server_serve (the loop); a run or model load during which it moved
 * was stopped for a while, so its wall times are not the model's: they are
 * kept out of the timings, the backlog estimate and the models' load
 * times.  Read on the loop only.
 */
extern volatile sig_atomic_t server_resumes;

/*
 * When the last SERVER_RESUMES_KEPT resumes came (ie_now_ns() / 1000,
 * monotonic microseconds; resume k at [k % SERVER_RESUMES_KEPT]), set by
 * the same handler before it counts server_resumes: a model load counts as
 * stopped only when it began before one and ended after it
 * (model_cache_untime_loads).  0: none.  Lock-free, so a handler may set
 * them.
 */
#define SERVER_RESUMES_KEPT 8
extern _Atomic int64_t server_resumed_us[SERVER_RESUMES_KEPT];

/*
 * How many times the process got SIGHUP, counted by the program's handler;
 * the loop logs that it ignores it (the worker reads its settings at start
 * only).
 */
extern volatile sig_atomic_t server_hangups;

/*
 * Serves requests until *stop becomes non-zero (checked at least every
 * poll_ms milliseconds, whenever a signal interrupts the wait, and
 * between the rows of a request, which is then answered with MSG_ERROR
 * 57P01 so that a stop never waits for a long batch).
 * Returns 0 on a stop, -1 with err when the socket fails.
 */
int			server_run(server *s, volatile sig_atomic_t *stop, int poll_ms,
					   char *err, size_t errlen);

/*
 * Handles one request given as its header frame and payload frames
 * (borrowed).  Sets *out to the reply (NULL when the request takes none,
 * i.e. MSG_CANCEL).  Returns 0, or -1 only when memory runs out for the
 * reply itself.
 */
int			server_handle(server *s, const void *header, size_t header_len,
						  const void *const *frames, const size_t *frame_len,
						  int n_frames, server_reply **out);

/*
 * Runs n MSG_RUN_FRAGMENT requests (headers that passed
 * request_check_header, all with the same fragment and pixel limit) as one
 * fragment run over their rows in order; request k's payload frames are
 * frames[k][0..reqs[k]->run->n_row_ids).  Sets replies[k] to request k's
 * MSG_RESULT (its own rows, in order) or, when the run fails as a whole,
 * to a MSG_ERROR for each.  Returns 0, or -1 when memory runs out for a
 * reply (that replies[k] is NULL).
 */
int			server_run_group(server *s, const Pginfer__Header *const *reqs,
							 const void *const *const *frames,
							 const size_t *const *frame_len, int n,
							 server_reply **replies);


/* Frees *r and the buffers it still owns; sets *r to NULL. */
void		server_reply_destroy(server_reply **r);

/*
 * A packed MSG_ERROR header (malloc'd, *len bytes) for request_id, or NULL
 * when memory runs out.  detail and hint may be NULL.
 */
uint8_t    *server_pack_error(uint64_t request_id, const char *sqlstate,
							  const char *message, const char *detail,
							  const char *hint, size_t *len);

#endif							/* INFER_SERVER_H */
