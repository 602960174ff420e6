/*
 * server.c
 *	  The infer-worker request loop and dispatch (see server.h).
 *
 * server_run() polls the ROUTER socket with a timeout (poll_ms, or less
 * when a queued group becomes ready or a state message is due sooner) so
 * that a stop flag set by a signal handler is seen promptly, drains every
 * message that is ready, answers the quick ones through server_handle()
 * and queues run-fragment requests, with their ZeroMQ parts, in the
 * batcher.  Work that takes time (a group of requests, a model load) goes
 * to the compute thread, one job at a time, over an inproc PAIR pipe
 * that carries job pointers; the loop keeps reading the socket, queueing,
 * answering PINGs and publishing state meanwhile, and sends the replies
 * when the job comes back.  Payload frames are read in place (no copy),
 * also while queued; reply buffers are given to ZeroMQ with
 * zmq_msg_init_data(), which frees them once sent.
 *
 * Pins: every queued request pins the model files of its fragments in
 * the model cache (queued_request_pin) until its item is freed (after its
 * reply, a cancel, or a shutdown), so that eviction never takes a model
 * that queued or running work needs.  A group whose models could only be
 * loaded by evicting such a model stays queued (group_may_run, the
 * queue's gate) while younger groups run, until the pins drop.
 *
 * Input cache: requests resolve their rows at intake (resolve_inputs):
 * rows left out come from the cache, pinned until the request's item is
 * freed; rows with a hash are checked and cached.  A request whose left-out
 * rows are not all there gets MSG_NEED_INPUT and is not queued.  Each
 * request's row bytes (its frames, or pinned cache entries) are in its
 * queued_request's rows, which the compute thread reads.
 *
 * Metrics (worker/metrics.h, --metrics-listen): the loop hands every
 * state message it publishes to metrics_set_state, and reports each
 * answered run-fragment request, each group run and its model calls
 * (group_metrics) before the replies leave; the metrics module copies
 * what it needs under its own mutex, nothing of the server is shared.
 *
 * Threading: the loop thread owns the ROUTER and PUB sockets, the
 * batcher, the counters and the timings; the compute thread owns its end
 * of the pipe and, while it holds a job, the job.  Both use the model
 * cache, which locks itself.  Without a socket (server_handle) everything
 * runs on the caller's thread.
 */
#include "worker/server.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/protocol.h"
#include "worker/batcher.h"
#include "worker/clients.h"
#include "worker/curve.h"
#include "worker/fragment.h"
#include "worker/input_cache.h"
#include "worker/log.h"
#include "worker/metrics.h"
#include "worker/model_cache.h"
#include "worker/model_store.h"
#include "worker/preflight.h"
#include "worker/request.h"
#include "worker/simulate.h"
#include "worker/state.h"

/* Timing samples one job may report. */
#define JOB_MAX_SAMPLES 256

/*
 * What watch_begin() notes as work begins on the loop thread, so that
 * watch_across_stop() can tell whether the work ran across a stop of the
 * process.
 */
typedef struct stop_watch
{
	sig_atomic_t resumes;		/* server_resumes */
	uint64_t	loads0;			/* the model cache's loads */
	int			began;			/* watch_begin() done */
} stop_watch;

/*
 * Work for the compute thread: a group of requests, a model load, or the
 * store of an uploaded model (hashing, writing and fsync of up to
 * --max-message-bytes would hold the socket loop's pings otherwise).
 */
typedef enum job_kind
{
	JOB_GROUP,
	JOB_LOAD,
	JOB_PUT
} job_kind;

typedef struct job
{
	job_kind	kind;
	/* JOB_GROUP */
	batch_item **items;
	int			n_items;
	const Pginfer__Header **reqs;
	const void *const **frames;
	const size_t **lens;
	const char **bad;			/* per item: rows whose hash did not match
								 * (or NULL for none) */
	const void **data;
	size_t	   *len;
	fragment_result *fr;
	int		   *cancelled;		/* per item: cancelled while running */
	volatile sig_atomic_t abort;	/* set by the loop: stop between rows */
	volatile sig_atomic_t *stop;	/* what group_compute watches */
	/* JOB_LOAD, JOB_PUT: the peer and the request */
	zmq_msg_t	peer;
	Pginfer__Header *req;
	zmq_msg_t	payload;		/* JOB_PUT: the model's bytes */
	/* outcome */
	int			rc;
	const char *sqlstate;
	char		err[1024];
	preflight_error probe;		/* JOB_LOAD: a failed test row's detail
								 * and hint (sqlstate points here then) */
	double		load_ms;		/* model loads inside the job */
	double		est_ms;			/* expected compute, for the backlog */
	int64_t		started_us;
	stop_watch	watch;			/* as it began (not for a job answered at
								 * shutdown unrun) */
	state_sample samples[JOB_MAX_SAMPLES];
	int			n_samples;
	struct job *next;			/* pending loads */
} job;

struct server
{
	void	   *ctx;			/* ZeroMQ context, or NULL without a socket */
	void	   *sock;			/* ROUTER */
	char	   *endpoint;		/* as bound (port resolved) */
	char	   *model_dir;
	model_cache *cache;
	input_cache *inputs;		/* the input cache (capacity 0: off) */
	sim_profile *sim;			/* --simulate, or NULL */
	int64_t		max_pixels;
	int64_t		max_message_bytes;	/* the largest frame payload its
									 * socket reads (ZMQ_MAXMSGSIZE, less
									 * CURVE's overhead) */
	int			no_uploads;		/* --no-uploads */
	uint64_t	max_upload_bytes;	/* --max-upload-bytes */
	int			batch_hold;		/* --batch-hold percent; 0: none */
	client_table *clients;		/* what each client connection holds */
	int64_t		max_client_bytes;	/* --max-client-bytes */
	uint64_t	client_refused; /* requests refused over it (53400) */
	uint64_t	client_dropped; /* and dropped unanswered, past the
								 * refusals' allowance */
	int64_t		last_busy_us;	/* when a job last ran or waited */
	bool		idle_trimmed;	/* release_idle_memory ran since then */
	int64_t		over_warned_us; /* warn_over's last line */
	uint64_t	over_unwarned;	/* and the clients it left out since */
	int			stopping;		/* shutdown_drain under way */
	sig_atomic_t hangups_seen;	/* server_hangups logged */
	uint64_t	stopping_answers;	/* requests it refused (57P01) */
	int64_t		gate_now_us;	/* the queue scan's clock (group_may_run) */
	int64_t		gate_held_us;	/* arrival of the oldest group the scan
								 * held back for memory, or 0 */
	char		worker_id[128];
	uint64_t	requests_served;	/* MSG_RUN_FRAGMENT requests answered */
	uint64_t	batches_run;	/* fragment runs (groups of requests) */
	uint64_t	rows_run;		/* rows in them */
	uint64_t	merged_batches; /* runs that merged several requests */
	uint64_t	model_runs;		/* model calls of PREDICT/CLASSIFY */
	_Atomic uint64_t request_bytes; /* frames of the queued and running
									 * requests (queued_request.bytes) */
	uint64_t	heap_bytes;		/* state_heap_bytes() at heap_at_us */
	int64_t		heap_at_us;
	double		ms_per_row[8];	/* recent compute ms per row, by fragment kind */
	int			max_batch;
	batcher    *queue;			/* queued run-fragment requests */
	volatile sig_atomic_t *stop;	/* server_run's stop flag, or NULL */
	/* state */
	state_pub  *pub;			/* PUB socket, or NULL without a socket */
	state_timings *timings;
	int64_t		started_us;
	uint64_t	seq;			/* state messages so far */
	/* the compute thread */
	void	   *pipe_loop;		/* PAIR, the loop's end */
	void	   *pipe_exec;		/* PAIR, the compute thread's end */
	pthread_t	thread;
	int			thread_started;
	job		   *running;		/* the job the compute thread holds */
	job		   *loads;			/* pending model loads, in arrival order */
};

/*
 * The bytes of a request's rows once resolved against the input cache
 * (resolve_inputs): a row's own payload frame, or a pinned cache entry, or
 * nothing for a row whose bytes did not match its hash.
 */
typedef struct row_inputs
{
	int			n;
	const void **data;			/* n: the row's bytes */
	size_t	   *len;
	input_entry **pins;			/* n: the entry pinned for it, or NULL */
	char	   *bad;			/* n: 1 when its hash did not match */
	int			n_bad;
	int			n_cached;		/* rows taken from the cache */
	input_cache *cache;			/* whose pins it holds, or NULL */
} row_inputs;

/* A queued run-fragment request: its ZeroMQ parts and unpacked header. */
typedef struct queued_request
{
	zmq_msg_t  *parts;			/* [routing id][header][rows...] */
	int			n_parts;
	Pginfer__Header *header;
	model_cache *pinned;		/* cache whose pins it holds, or NULL */
	row_inputs	rows;			/* its rows' bytes */
	_Atomic uint64_t *held;		/* server.request_bytes, holding bytes */
	uint64_t	bytes;			/* its frames but the routing id */
	client_entry *client;		/* its client, holding client_counted */
	int64_t		client_counted;
} queued_request;

volatile sig_atomic_t server_resumes = 0;
_Atomic int64_t server_resumed_us[SERVER_RESUMES_KEPT];
volatile sig_atomic_t server_hangups = 0;

/* Monotonic clock in microseconds. */
static int64_t
now_us(void)
{
	return batcher_now_us();
}

/*
 * Adds delta to the pins of every model file of run: each fragment, its
 * chained stages and more_fragments.
 */
static void
pin_run(model_cache *mc, const Pginfer__RunFragment *run, int delta)
{
	for (size_t f = 0; f <= run->n_more_fragments; f++)
	{
		const Pginfer__Fragment *fr = request_fragment_at(run, f);

		for (; fr != NULL; fr = fr->next)
			for (size_t m = 0; m < fr->n_models; m++)
				if (fr->models[m] != NULL)
					model_cache_pin(mc, fr->models[m]->file, delta);
	}
}

/* Releases the cache pins of ri and frees its arrays; idempotent. */
static void
row_inputs_free(row_inputs *ri)
{
	for (int i = 0; ri->pins != NULL && i < ri->n; i++)
		if (ri->pins[i] != NULL)
			input_cache_release(ri->cache, ri->pins[i]);
	free(ri->data);
	free(ri->len);
	free(ri->pins);
	free(ri->bad);
	memset(ri, 0, sizeof(*ri));
}

/* Frees a queued_request (the batcher's free_data), releasing its pins. */
static void
queued_request_free(void *data)
{
	queued_request *q = data;

	if (q == NULL)
		return;
	if (q->pinned != NULL && q->header != NULL && q->header->run != NULL)
		pin_run(q->pinned, q->header->run, -1);
	if (q->held != NULL)
		atomic_fetch_sub(q->held, q->bytes);
	client_release(q->client, q->client_counted);
	row_inputs_free(&q->rows);
	for (int i = 0; i < q->n_parts; i++)
		zmq_msg_close(&q->parts[i]);
	free(q->parts);
	if (q->header != NULL)
		pginfer__header__free_unpacked(q->header, NULL);
	free(q);
}

/* New server with the default frame limit; see server.h. */
server *
server_new(const server_opts *opts, char *err, size_t errlen)
{
	return server_new_ext(opts, NULL, err, errlen);
}

/* New server with a frame limit; see server.h. */
server *
server_new_limited(const server_opts *opts, int64_t max_message_bytes,
				   char *err, size_t errlen)
{
	server_ext_opts ext;

	memset(&ext, 0, sizeof(ext));
	ext.max_message_bytes = max_message_bytes;
	return server_new_ext(opts, &ext, err, errlen);
}

/* New server; see server.h. */
server *
server_new_ext(const server_opts *opts, const server_ext_opts *ext,
			   char *err, size_t errlen)
{
	server	   *s = NULL;
	server_ext_opts none;
	char		host[64] = "localhost";
	char		last[256];
	char		state_ep[512];
	size_t		last_len = sizeof(last);
	int			linger = 200;	/* ms */
	int			zero_hwm = 0;	/* no limit */
	int64_t		max_msg;

	if (ext == NULL)
	{
		memset(&none, 0, sizeof(none));
		ext = &none;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->started_us = now_us();
	s->max_pixels = opts->max_pixels > 0 ? opts->max_pixels : PGINFER_DEFAULT_MAX_PIXELS;
	s->max_batch = opts->max_batch > 0 ? opts->max_batch : SERVER_DEFAULT_MAX_BATCH;
	s->queue = batcher_new(s->max_batch, opts->max_queue_delay_us >= 0 ?
						   opts->max_queue_delay_us : SERVER_DEFAULT_QUEUE_DELAY_US);
	s->timings = state_timings_new();
	s->max_client_bytes = ext->max_client_bytes > 0 ? ext->max_client_bytes :
		CLIENT_DEFAULT_MAX_BYTES;
	s->clients = client_table_new(s->max_client_bytes);
	if (s->queue == NULL || s->timings == NULL || s->clients == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->model_dir = strdup(opts->model_dir != NULL ? opts->model_dir : "");
	if (s->model_dir == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->cache = model_cache_new(opts->model_dir, err, errlen);
	if (s->cache == NULL)
		goto fail;
	model_cache_set_capacity(s->cache, ext->gpu_memory);
	s->no_uploads = ext->no_uploads;
	s->batch_hold = ext->batch_hold == 0 ? SERVER_DEFAULT_BATCH_HOLD :
		ext->batch_hold > 0 ? ext->batch_hold : 0;
	s->max_upload_bytes = (uint64_t) (ext->max_upload_bytes > 0 ?
									  ext->max_upload_bytes :
									  SERVER_DEFAULT_MAX_UPLOAD_BYTES);
	s->inputs = input_cache_new(ext->input_cache < 0 ? 0 :
								ext->input_cache > 0 ? (uint64_t) ext->input_cache :
								(uint64_t) INPUT_CACHE_DEFAULT_MB << 20);
	if (s->inputs == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (ext->simulate != NULL)
	{
		s->sim = sim_profile_load(ext->simulate, err, errlen);
		if (s->sim == NULL)
			goto fail;
		sim_attach(s->sim, s->cache);
	}
	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(s->worker_id, sizeof(s->worker_id), "%s:%ld", host, (long) getpid());

	if (opts->endpoint == NULL)
		return s;

	s->ctx = zmq_ctx_new();
	if (s->ctx == NULL)
	{
		snprintf(err, errlen, "could not create a ZeroMQ context: %s",
				 zmq_strerror(errno));
		goto fail;
	}
	s->sock = zmq_socket(s->ctx, ZMQ_ROUTER);
	if (s->sock == NULL)
	{
		snprintf(err, errlen, "could not create a ROUTER socket: %s",
				 zmq_strerror(errno));
		goto fail;
	}
	/* A last reply gets a moment to leave; more must not hold up a stop. */
	zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof(linger));
	/* A larger frame makes libzmq drop that peer's connection unread. */
	max_msg = ext->max_message_bytes > 0 ? ext->max_message_bytes :
		SERVER_DEFAULT_MAX_MESSAGE_BYTES;
	if (zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &max_msg, sizeof(max_msg)) != 0)
	{
		snprintf(err, errlen, "could not set ZMQ_MAXMSGSIZE: %s", zmq_strerror(errno));
		goto fail;
	}
	/* the largest payload it reads: under CURVE a frame grows on the wire */
	s->max_message_bytes = max_msg -
		(curve_enabled() ? PGINFER_CURVE_FRAME_OVERHEAD : 0);
	/*
	 * No send high-water mark: at the default (1000 messages per peer) a
	 * ROUTER drops a reply silently once a backend has that many unread;
	 * the replies waiting for a backend are bounded by what it keeps in
	 * flight (infer.max_inflight requests a scan), not by this socket.
	 */
	if (zmq_setsockopt(s->sock, ZMQ_SNDHWM, &zero_hwm, sizeof(zero_hwm)) != 0)
	{
		snprintf(err, errlen, "could not set ZMQ_SNDHWM: %s", zmq_strerror(errno));
		goto fail;
	}
	/* CURVE (worker/curve.h): the ZAP handler first, then a CURVE server. */
	if (curve_zap_start(s->ctx, err, errlen) != 0 ||
		curve_apply_server(s->sock, err, errlen) != 0)
		goto fail;
	if (zmq_bind(s->sock, opts->endpoint) != 0)
	{
		snprintf(err, errlen, "could not bind to \"%s\": %s", opts->endpoint,
				 zmq_strerror(errno));
		goto fail;
	}
	if (zmq_getsockopt(s->sock, ZMQ_LAST_ENDPOINT, last, &last_len) != 0)
		snprintf(last, sizeof(last), "%s", opts->endpoint);
	s->endpoint = strdup(last);
	if (s->endpoint == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}

	/* The state socket: as asked, or an ephemeral port of the same host. */
	if (ext->state_endpoint != NULL)
		snprintf(state_ep, sizeof(state_ep), "%s", ext->state_endpoint);
	else if (state_default_endpoint(opts->endpoint, state_ep, sizeof(state_ep)) != 0)
	{
		snprintf(err, errlen, "endpoint \"%s\" is too long", opts->endpoint);
		goto fail;
	}
	s->pub = state_pub_new(s->ctx, state_ep, err, errlen);
	if (s->pub == NULL)
		goto fail;

	/* The pipe to the compute thread (its thread starts in server_run). */
	{
		char		pipe_ep[64];

		snprintf(pipe_ep, sizeof(pipe_ep), "inproc://infer-compute-%p", (void *) s);
		s->pipe_loop = zmq_socket(s->ctx, ZMQ_PAIR);
		s->pipe_exec = zmq_socket(s->ctx, ZMQ_PAIR);
		if (s->pipe_loop == NULL || s->pipe_exec == NULL ||
			zmq_bind(s->pipe_loop, pipe_ep) != 0 ||
			zmq_connect(s->pipe_exec, pipe_ep) != 0)
		{
			snprintf(err, errlen, "could not create the compute pipe: %s",
					 zmq_strerror(errno));
			goto fail;
		}
	}
	return s;

fail:
	server_destroy(&s);
	return NULL;
}

/* Frees a job and what it still holds (items, peer, request). */
static void
job_free(job *j)
{
	if (j == NULL)
		return;
	for (int k = 0; j->items != NULL && k < j->n_items; k++)
		batch_item_destroy(&j->items[k]);
	free(j->items);
	free(j->cancelled);
	free(j->reqs);
	free(j->frames);
	free(j->lens);
	free(j->bad);
	free(j->data);
	free(j->len);
	fragment_result_destroy(&j->fr);
	if (j->kind != JOB_GROUP)
		zmq_msg_close(&j->peer);
	if (j->kind == JOB_PUT)
		zmq_msg_close(&j->payload);
	if (j->req != NULL)
		pginfer__header__free_unpacked(j->req, NULL);
	free(j);
}

/* Closes the sockets and context, frees the cache; sets *sp to NULL. */
void
server_destroy(server **sp)
{
	server	   *s;

	if (sp == NULL || *sp == NULL)
		return;
	s = *sp;
	/* Queued requests hold ZeroMQ messages: close them before the context. */
	batcher_destroy(&s->queue);
	job_free(s->running);
	while (s->loads != NULL)
	{
		job		   *j = s->loads;

		s->loads = j->next;
		if (j->kind == JOB_LOAD && j->req != NULL && j->req->model != NULL &&
			j->req->model->model != NULL)
			model_cache_pin(s->cache, j->req->model->model->file, -1);
		job_free(j);
	}
	state_pub_destroy(&s->pub);
	if (s->pipe_loop != NULL)
		zmq_close(s->pipe_loop);
	if (s->pipe_exec != NULL)
		zmq_close(s->pipe_exec);
	if (s->sock != NULL)
		zmq_close(s->sock);
	if (s->ctx != NULL)
		while (zmq_ctx_term(s->ctx) != 0 && zmq_errno() == EINTR)
			;
	/* after the context: ZeroMQ's last free callbacks touch the table */
	client_table_destroy(&s->clients);
	model_cache_destroy(&s->cache);
	input_cache_destroy(&s->inputs);
	sim_profile_destroy(&s->sim);
	state_timings_destroy(&s->timings);
	free(s->endpoint);
	free(s->model_dir);
	free(s);
	*sp = NULL;
}

/* The bound endpoint, or NULL without a socket. */
const char *
server_endpoint(const server *s)
{
	return s->endpoint;
}

/* The state socket's bound endpoint, or NULL without a socket. */
const char *
server_state_endpoint(const server *s)
{
	return s->pub != NULL ? state_pub_endpoint(s->pub) : NULL;
}

/* Packs h into a new buffer; NULL when memory runs out. */
static uint8_t *
pack_header(const Pginfer__Header *h, size_t *len)
{
	size_t		n = pginfer__header__get_packed_size(h);
	uint8_t    *buf = malloc(n > 0 ? n : 1);

	if (buf == NULL)
		return NULL;
	*len = pginfer__header__pack(h, buf);
	return buf;
}

/* A packed MSG_ERROR header; see server.h. */
uint8_t *
server_pack_error(uint64_t request_id, const char *sqlstate,
				  const char *message, const char *detail, const char *hint,
				  size_t *len)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__Error e = PGINFER__ERROR__INIT;

	e.sqlstate = (char *) sqlstate;
	e.message = (char *) message;
	if (detail != NULL)
		e.detail = (char *) detail;
	if (hint != NULL)
		e.hint = (char *) hint;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_ERROR;
	h.request_id = request_id;
	h.error = &e;
	return pack_header(&h, len);
}

/* Resident set size of this process in bytes (0 when unknown). */
static uint64_t
rss_bytes(void)
{
	FILE	   *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0,
				resident = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* A new reply holding just a header (no payload frames). */
static server_reply *
reply_with_header(uint8_t *header, size_t len)
{
	server_reply *r;

	if (header == NULL)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
	{
		free(header);
		return NULL;
	}
	r->header = header;
	r->header_len = len;
	return r;
}

/*
 * A log line about a request, "request <id>: ...", ends with who sent it
 * when its client said so (Header.client, made safe by request_unpack):
 * "...; from db=shop user=app pid=4711".  FROM_FMT ends the format,
 * FROM_ARGS(client) the arguments (client may be NULL; it is read three
 * times).  At the end, so that what reads "request <id>: " still finds it.
 */
#define FROM_FMT "%s%s"
#define FROM_ARGS(client) \
	(client) != NULL && (client)[0] != '\0' ? "; from " : "", (client) != NULL ? (client) : ""

/*
 * MSG_ERROR reply to request_id, from client (Header.client, or NULL);
 * logs the error at WARN, or with quiet at DEBUG (answers that come by the
 * thousand, such as a flooding client's refusals, are logged once an
 * episode elsewhere).
 */
static server_reply *
error_reply_logged(uint64_t request_id, const char *client, const char *sqlstate,
				   const char *message, const char *hint, bool quiet)
{
	size_t		len = 0;
	uint8_t    *buf;

	if (quiet)
		log_debug("request %llu: error %s: %s" FROM_FMT, (unsigned long long) request_id,
				  sqlstate, message, FROM_ARGS(client));
	else
		log_warn("request %llu: error %s: %s" FROM_FMT, (unsigned long long) request_id,
				 sqlstate, message, FROM_ARGS(client));
	buf = server_pack_error(request_id, sqlstate, message, NULL, hint, &len);
	return reply_with_header(buf, len);
}

/* MSG_ERROR reply; logs the error at WARN (see error_reply_logged). */
static server_reply *
error_reply(uint64_t request_id, const char *client, const char *sqlstate,
			const char *message, const char *hint)
{
	return error_reply_logged(request_id, client, sqlstate, message, hint, false);
}

/*
 * MSG_NEED_INPUT for request_id (from client, as error_reply_logged)
 * naming rows[0..n) (indexes into its row_ids); NULL when memory runs out.
 */
static server_reply *
need_input_reply(uint64_t request_id, const char *client, uint32_t *rows, size_t n)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__NeedInput ni = PGINFER__NEED_INPUT__INIT;
	size_t		len = 0;
	uint8_t    *buf;

	ni.n_rows = n;
	ni.rows = rows;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_NEED_INPUT;
	h.request_id = request_id;
	h.need_input = &ni;
	log_info("request %llu: %zu of its rows left out for the input cache are not cached; asked for them" FROM_FMT,
			 (unsigned long long) request_id, n, FROM_ARGS(client));
	buf = pack_header(&h, &len);
	return reply_with_header(buf, len);
}

/*
 * Resolves the rows of run (payload frames frames[i] of lens[i] bytes)
 * against the input cache into *ri, each row under its key in the
 * request's input_scope (input_cache_key): the rows in cached_rows are taken
 * from the cache and pinned (before anything is inserted, so that no
 * insert of this request evicts them); every other row with a digest is
 * checked against its bytes (a mismatch marks it bad: no bytes, never
 * cached) and cached.  A cache that is off (capacity 0) checks and caches
 * nothing.  Returns 0; 1 when some cached rows are not held: *missing
 * gets their indexes (malloc'd, *n_missing of them) and ri holds nothing;
 * -1 with *sqlstate and err for a cached row whose frame is not empty or
 * when memory runs out.  The request's fields were checked at intake
 * (request_check_header: the scope's length among them).
 */
static int
resolve_inputs(server *s, const Pginfer__RunFragment *run,
			   const void *const *frames, const size_t *lens, row_inputs *ri,
			   uint32_t **missing, size_t *n_missing,
			   const char **sqlstate, char *err, size_t errlen)
{
	int			n = (int) run->n_row_ids;
	size_t		nm = 0;
	size_t		k = 0;
	input_cache_stats info;
	uint8_t		key[PGINFER_SHA256_LEN];

	memset(ri, 0, sizeof(*ri));
	*missing = NULL;
	*n_missing = 0;
	ri->n = n;
	ri->cache = s->inputs;
	ri->data = calloc(n > 0 ? (size_t) n : 1, sizeof(*ri->data));
	ri->len = calloc(n > 0 ? (size_t) n : 1, sizeof(*ri->len));
	ri->pins = calloc(n > 0 ? (size_t) n : 1, sizeof(*ri->pins));
	ri->bad = calloc(n > 0 ? (size_t) n : 1, sizeof(*ri->bad));
	if (ri->data == NULL || ri->len == NULL || ri->pins == NULL || ri->bad == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for a request of %d rows", n);
		goto fail;
	}
	for (int i = 0; i < n; i++)
	{
		ri->data[i] = frames[i];
		ri->len[i] = lens[i];
	}

	/* Rows left out: from the cache under their key, pinned. */
	for (size_t c = 0; c < run->n_cached_rows; c++)
	{
		uint32_t	r = run->cached_rows[c];

		if (lens[r] != 0)
		{
			*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
			snprintf(err, errlen, "MSG_RUN_FRAGMENT request: row %u is listed in cached_rows but its payload frame has %zu bytes",
					 r, lens[r]);
			goto fail;
		}
		(void) input_cache_key(run->input_scope.data, run->input_scope.len,
							   run->input_sha256[r].data, key);
		ri->pins[r] = input_cache_get(s->inputs, key, &ri->data[r], &ri->len[r]);
		if (ri->pins[r] == NULL)
			nm++;
		else
			ri->n_cached++;
	}

	/* Rows with bytes and a digest: checked, then cached. */
	input_cache_info(s->inputs, &info);
	for (int i = 0; info.capacity > 0 && i < (int) run->n_input_sha256 && i < n; i++)
	{
		uint8_t		digest[PGINFER_SHA256_LEN];

		while (k < run->n_cached_rows && run->cached_rows[k] < (uint32_t) i)
			k++;
		if (run->input_sha256[i].len != PGINFER_SHA256_LEN ||
			(k < run->n_cached_rows && run->cached_rows[k] == (uint32_t) i))
			continue;
		input_cache_sha256(frames[i], lens[i], digest);
		if (memcmp(digest, run->input_sha256[i].data, PGINFER_SHA256_LEN) != 0)
		{
			ri->bad[i] = 1;
			ri->n_bad++;
			ri->data[i] = "";
			ri->len[i] = 0;
			continue;
		}
		(void) input_cache_key(run->input_scope.data, run->input_scope.len,
							   digest, key);
		if (input_cache_put(s->inputs, key, frames[i], lens[i]) < 0)
			log_warn("out of memory caching an input of %zu bytes", lens[i]);
	}

	if (nm > 0)
	{
		size_t		m = 0;

		*missing = malloc(nm * sizeof(**missing));
		if (*missing == NULL)
		{
			*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
			snprintf(err, errlen, "out of memory for a request of %d rows", n);
			goto fail;
		}
		for (size_t c = 0; c < run->n_cached_rows; c++)
			if (ri->pins[run->cached_rows[c]] == NULL)
				(*missing)[m++] = run->cached_rows[c];
		*n_missing = nm;
		row_inputs_free(ri);
		return 1;
	}
	if (ri->n_bad > 0)
		log_warn("%d rows of a request do not match their input digests", ri->n_bad);
	return 0;

fail:
	row_inputs_free(ri);
	return -1;
}

/*
 * Marks the rows of one request that ri found bad (their bytes do not
 * match their digest) failed in every fragment block of fr: rows
 * [off, off + n) of each block of total rows.
 */
static void
fail_bad_rows(fragment_result *fr, const char *bad, int total, int off, int n)
{
	int			nf = fr->n_fragments > 0 ? fr->n_fragments : 1;

	for (int i = 0; bad != NULL && i < n; i++)
	{
		if (!bad[i])
			continue;
		for (int f = 0; f < nf; f++)
		{
			int			k = f * total + off + i;

			fragment_row_error(fr, k, PGINFER_SQLSTATE_DATA_CORRUPTED,
							   "the row's bytes do not match the SHA-256 its request names",
							   "RunFragment.input_sha256 differs from the SHA-256 of the payload frame; the row was neither run nor cached.",
							   "Send the row again; if it persists, the client hashes its inputs wrongly.");
			free(fr->values[k]);
			fr->values[k] = NULL;
			fr->n_values[k] = 0;
			fr->rows[k].n_values = 0;
		}
	}
}

/* Slot of ms_per_row for a fragment kind. */
static int
kind_slot(Pginfer__FragmentKind kind)
{
	return kind >= 0 && kind < 8 ? (int) kind : 0;
}

/*
 * Expected compute milliseconds of run over rows: for each stage of each
 * fragment, the sum of its models' measured times at that batch size
 * (state_timings_estimate); a stage none of whose models has a timing yet
 * counts rows times the recent ms per row of its fragment kind.
 */
static double
run_estimate(const server *s, const Pginfer__RunFragment *run, int rows)
{
	double		ms = 0;

	for (size_t f = 0; f <= run->n_more_fragments; f++)
	{
		const Pginfer__Fragment *fr = request_fragment_at(run, f);

		for (; fr != NULL; fr = fr->next)
		{
			double		stage = 0;
			int			known = 0;

			for (size_t m = 0; m < fr->n_models; m++)
			{
				double		t;

				if (fr->models[m] == NULL || fr->models[m]->file[0] == '\0')
					continue;
				t = state_timings_estimate(s->timings, fr->models[m]->file, rows);
				if (t >= 0)
				{
					stage += t;
					known = 1;
				}
			}
			ms += known ? stage : rows * s->ms_per_row[kind_slot(fr->kind)];
		}
	}
	return ms;
}

/*
 * How long the group a request of rows rows leads may wait for more
 * requests of its fragment while they keep coming (batch_item.hold_us,
 * batcher.h): --batch-hold percent of the request's expected run
 * (run_estimate), at most SERVER_MAX_BATCH_HOLD_US.  Starting a run at
 * once makes a request that arrives a moment later wait for that whole
 * run and then run again on its own; waiting a small part of the run
 * lets a burst run as one group (bench/placement measures it,
 * docs/placement.md).
 */
static int64_t
batch_hold_us(const server *s, const Pginfer__RunFragment *run, int rows)
{
	double		us;

	if (s->batch_hold == 0)
		return 0;
	us = run_estimate(s, run, rows) * 10.0 * s->batch_hold;
	return us < SERVER_MAX_BATCH_HOLD_US ? (int64_t) us : SERVER_MAX_BATCH_HOLD_US;
}

/*
 * Estimated milliseconds of the work the worker holds: each queued
 * request's expected compute (run_estimate), what is left of the running
 * group's, and the expected load time of every model that this work needs
 * and that is not resident (models[0..n_models), from the cache).
 */
static double
backlog_ms(const server *s, const model_info *models, int n_models)
{
	double		ms = 0;

	for (int i = 0; i < batcher_length(s->queue); i++)
	{
		const batch_item *it = batcher_item(s->queue, i);
		const queued_request *q = it->data;

		ms += run_estimate(s, q->header->run, it->n_rows);
	}
	if (s->running != NULL && s->running->kind == JOB_GROUP)
	{
		double		left = s->running->est_ms -
			(now_us() - s->running->started_us) / 1000.0;

		ms += left > 0 ? left : 0;
	}
	for (int i = 0; i < n_models; i++)
		if (!models[i].resident && models[i].pins > 0)
			ms += models[i].load_ms;
	return ms;
}

/* Requests the worker holds: queued, and in the running group. */
static int
requests_held(const server *s)
{
	int			n = batcher_length(s->queue);

	if (s->running != NULL && s->running->kind == JOB_GROUP)
		n += s->running->n_items;
	return n;
}

/*
 * A packed Header of kind (MSG_STATE or MSG_PONG) carrying the worker's
 * state (common/pg_infer.proto, WorkerState); takes the next sequence
 * number.  NULL when memory runs out.
 */
static uint8_t *
pack_state(server *s, Pginfer__MsgKind kind, uint64_t request_id, size_t *len)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__WorkerState st = PGINFER__WORKER_STATE__INIT;
	model_info *models;
	int			n_models = 0,
				n_res = 0;
	char	  **names = NULL;
	Pginfer__ModelState *ms = NULL;
	Pginfer__ModelState **msp = NULL;
	Pginfer__ModelTiming **timings = NULL;
	size_t		n_timings = 0;
	input_cache_stats ic;
	uint8_t		bloom[PGINFER_BLOOM_BYTES];
	uint64_t	cap = model_cache_capacity(s->cache),
				used = model_cache_used(s->cache);
	uint8_t    *buf = NULL;

	models = model_cache_snapshot(s->cache, &n_models);
	names = calloc(n_models > 0 ? (size_t) n_models : 1, sizeof(char *));
	ms = calloc(n_models > 0 ? (size_t) n_models : 1, sizeof(*ms));
	msp = calloc(n_models > 0 ? (size_t) n_models : 1, sizeof(*msp));
	if (names == NULL || ms == NULL || msp == NULL ||
		state_timings_list(s->timings, &timings, &n_timings) != 0)
		goto done;
	for (int i = 0; i < n_models; i++)
	{
		Pginfer__ModelState init = PGINFER__MODEL_STATE__INIT;

		ms[i] = init;
		ms[i].file = models[i].file;
		ms[i].resident = models[i].resident != 0;
		ms[i].bytes = models[i].bytes;
		ms[i].load_ms = models[i].load_ms;
		ms[i].queued = (uint32_t) models[i].pins;
		ms[i].idle_ms = models[i].idle_ms;
		msp[i] = &ms[i];
		if (models[i].resident)
			names[n_res++] = models[i].file;
	}
	st.worker_id = s->worker_id;
	st.queue_length = (uint32_t) requests_held(s);
	st.backlog_ms = backlog_ms(s, models, n_models);
	st.n_resident_models = (size_t) n_res;
	st.resident_models = names;
	st.host_memory_used = rss_bytes();
	st.request_bytes = atomic_load(&s->request_bytes);
	/* published states take it at most every 100 ms; a ping's is fresh */
	if (kind == PGINFER__MSG_KIND__MSG_PONG || s->heap_at_us == 0 ||
		now_us() - s->heap_at_us >= 100000)
	{
		s->heap_bytes = state_heap_bytes();
		s->heap_at_us = now_us();
	}
	st.heap_bytes = s->heap_bytes;
	state_host_memory(&st.host_memory_total, &st.host_memory_free);
	/* On a CPU "GPU memory" is the models' weight memory: the cap, or the host's. */
	st.gpu_memory_cap = cap > 0 ? cap : st.host_memory_total;
	st.gpu_memory_total = st.gpu_memory_cap;
	st.gpu_memory_free = st.gpu_memory_cap > used ? st.gpu_memory_cap - used : 0;
	st.n_models = (size_t) n_models;
	st.models = msp;
	st.n_timings = n_timings;
	st.timings = timings;
	st.device = "cpu";
	/*
	 * on a CUDA device: its name and cudaMemGetInfo() figures, and without
	 * --gpu-memory the device's total as the cap (not the host's, which
	 * may be smaller: 128 GiB beside a 141 GB H200)
	 */
	if (cap == 0)
		st.gpu_memory_cap = 0;
	state_device_memory(&st);
	if (st.gpu_memory_cap == 0)
		st.gpu_memory_cap = st.host_memory_total;
	st.requests_served = s->requests_served;
	st.batches_run = s->batches_run;
	st.rows_run = s->rows_run;
	st.merged_batches = s->merged_batches;
	st.model_runs = s->model_runs;
	state_model_counters(&st, s->cache);
	st.seq = ++s->seq;
	st.uptime_s = (now_us() - s->started_us) / 1e6;
	st.state_endpoint = s->pub != NULL ? (char *) state_pub_endpoint(s->pub) : "";
	st.busy_threads = s->running != NULL ? 1 : 0;
	input_cache_info(s->inputs, &ic);
	st.input_cache_hits = ic.hits;
	st.input_cache_misses = ic.misses;
	st.input_cache_bytes = ic.bytes;
	st.input_cache_entries = ic.entries;
	st.input_cache_capacity = ic.capacity;
	st.max_message_bytes = (uint64_t) s->max_message_bytes;
	st.unread_answer_bytes = (uint64_t) client_table_unread(s->clients);
	st.client_limit_refusals = s->client_refused;
	st.client_limit_drops = s->client_dropped;
	if (ic.capacity > 0 &&
		input_cache_bloom(s->inputs, bloom, sizeof(bloom), PGINFER_BLOOM_HASHES) == 0)
	{
		st.input_bloom.data = bloom;
		st.input_bloom.len = sizeof(bloom);
		st.bloom_hashes = PGINFER_BLOOM_HASHES;
	}
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = kind;
	h.request_id = request_id;
	h.state = &st;
	buf = pack_header(&h, len);

done:
	state_timings_free_list(timings);
	free(models);
	free(names);
	free(ms);
	free(msp);
	return buf;
}

/* MSG_PONG reply carrying the worker's state. */
static server_reply *
pong_reply(server *s, uint64_t request_id)
{
	size_t		len = 0;
	uint8_t    *buf = pack_state(s, PGINFER__MSG_KIND__MSG_PONG, request_id, &len);

	return reply_with_header(buf, len);
}

/* Publishes a MSG_STATE now (the loop calls it when one is due). */
static void
publish_state(server *s)
{
	size_t		len = 0;
	uint8_t    *buf;

	if (s->pub == NULL)
		return;
	buf = pack_state(s, PGINFER__MSG_KIND__MSG_STATE, 0, &len);
	if (buf != NULL)
	{
		state_pub_send(s->pub, buf, len, now_us());
		metrics_set_state(buf, len);	/* the --metrics-listen gauges */
	}
	free(buf);
}

/* Notes a change of state: a message goes out soon. */
static void
state_changed(server *s)
{
	if (s->pub != NULL)
		state_pub_changed(s->pub);
}

/* Hint for a request-level error, by SQLSTATE. */
static const char *
hint_for(const server *s, const char *sqlstate, char *buf, size_t buflen)
{
	if (strcmp(sqlstate, PGINFER_SQLSTATE_NO_MODEL) == 0)
	{
		snprintf(buf, buflen,
				 "Copy the file into the worker's model directory (%s), readable by the worker's user (a text model: its whole folder, model.onnx with model.json and vocab.txt), or fix the file's name in the model's registration (infer.models); for an uploaded model (an image model's one file), send it to this worker with infer.push_models().",
				 s->model_dir);
		return buf;
	}
	if (strcmp(sqlstate, FRAGMENT_SQLSTATE_SHUTDOWN) == 0)
		return "Run the query again once the worker is back, or register another worker with infer.add_worker().";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_OUT_OF_MEMORY) == 0)
	{
		uint64_t	cap = model_cache_capacity(s->cache);

		if (cap > 0)
			snprintf(buf, buflen,
					 "Start the worker with a larger --gpu-memory (now %llu bytes), or send this model's work to another worker.",
					 (unsigned long long) cap);
		else
			snprintf(buf, buflen, "Free memory on the worker's host, or send this model's work to another worker.");
		return buf;
	}
	if (strcmp(sqlstate, PGINFER_SQLSTATE_IN_USE) == 0)
		return "Unload it once its queued requests are done.";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0)
		return "The message names the limit: send smaller input, or, for a tensor of a model (a weight, or one of its run), start the worker with a larger --max-tensor-bytes.";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
		return "Export the model without it (ONNX opsets 1 to 28 of the default domain, weights inside the file); docs/sql.md, \"Models\", says what a model needs.";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED) == 0)
		return "Check the file with onnx.checker.check_model(model, full_check=True), which names what is wrong: export the model again if it is not valid ONNX, or copy it into the model directory again if it was damaged (a file replaced under the same name is read at the next call); upload an uploaded model again with infer.upload_model().";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_INTERNAL) == 0)
		return "The worker's log names the request; check the model's registration (infer.models: task, input size, mean and std, labels) against its files.";
	return NULL;
}

/*
 * MSG_RESULT for one request: rows [off, off + n) of each of fr's
 * fragments (fr holds fr->n_fragments blocks of total rows), with their
 * value arrays handed over (taken out of fr) as the reply's frames, and
 * queue_ms, the request's wait before its run started, and served, the
 * worker's count of requests answered with a result, this one included
 * (Result.served).  NULL when memory runs out.
 */
static server_reply *
result_reply(const Pginfer__Header *req, fragment_result *fr, int total,
			 int off, int n, double queue_ms, uint64_t served)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__Result res = PGINFER__RESULT__INIT;
	server_reply *r = NULL;
	Pginfer__RowResult **ptrs = NULL;
	int			nf = fr->n_fragments > 0 ? fr->n_fragments : 1;
	int			m = n * nf;

	ptrs = calloc(m > 0 ? (size_t) m : 1, sizeof(*ptrs));
	if (ptrs == NULL)
		goto fail;
	for (int f = 0; f < nf; f++)
		for (int i = 0; i < n; i++)
			ptrs[f * n + i] = fr->row_ptrs[f * total + off + i];
	res.n_rows = (size_t) m;
	res.rows = ptrs;
	res.compute_ms = fr->compute_ms;
	res.queue_ms = queue_ms;
	res.served = served;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_RESULT;
	h.request_id = req->request_id;
	h.result = &res;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		goto fail;
	r->n_frames = m;
	r->frames = calloc(m > 0 ? (size_t) m : 1, sizeof(void *));
	r->frame_len = calloc(m > 0 ? (size_t) m : 1, sizeof(size_t));
	r->header = pack_header(&h, &r->header_len);
	if (r->frames == NULL || r->frame_len == NULL || r->header == NULL)
		goto fail;
	for (int f = 0; f < nf; f++)
		for (int i = 0; i < n; i++)
		{
			int			k = f * total + off + i;

			/* Hand the values over: the reply frees them (or ZeroMQ does). */
			r->frames[f * n + i] = fr->values[k];
			r->frame_len[f * n + i] = fr->n_values[k] * sizeof(float);
			fr->values[k] = NULL;
		}
	free(ptrs);
	return r;

fail:
	free(ptrs);
	server_reply_destroy(&r);
	return NULL;
}


/*
 * When the requests of group job j name their models differently (one
 * group key: the same files, kinds, labels and preprocessing), points
 * *merged's fragment and more_fragments at unnamed copies
 * (request_fragment_unnamed), *more the array of the latter, so that the
 * run's messages name model files, not one request's models.  0, or -1
 * when memory runs out (with the copies made so far in place: the caller
 * calls unnamed_run_free either way, which undoes it).
 */
static int
unnamed_run(const job *j, Pginfer__RunFragment *merged, Pginfer__Fragment ***more)
{
	const Pginfer__RunFragment *lead = j->reqs[0]->run;
	int			same = 1;

	*more = NULL;
	for (int k = 1; k < j->n_items && same; k++)
	{
		const Pginfer__RunFragment *run = j->reqs[k]->run;

		same = request_same_names(lead->fragment, run->fragment) &&
			run->n_more_fragments == lead->n_more_fragments;
		for (size_t f = 0; same && f < lead->n_more_fragments; f++)
			same = request_same_names(lead->more_fragments[f], run->more_fragments[f]);
	}
	if (lead->fragment == NULL || same)
		return 0;
	merged->fragment = request_fragment_unnamed(lead->fragment);
	if (lead->n_more_fragments > 0)
		*more = calloc(lead->n_more_fragments, sizeof(**more));
	merged->more_fragments = *more;
	if (merged->fragment == NULL || (lead->n_more_fragments > 0 && *more == NULL))
		return -1;
	for (size_t f = 0; f < lead->n_more_fragments; f++)
		if (lead->more_fragments[f] != NULL &&
			((*more)[f] = request_fragment_unnamed(lead->more_fragments[f])) == NULL)
			return -1;
	return 0;
}

/* Frees what unnamed_run put in *merged (lead: the run it copied). */
static void
unnamed_run_free(Pginfer__RunFragment *merged, Pginfer__Fragment **more,
				 const Pginfer__RunFragment *lead)
{
	if (merged->fragment != lead->fragment)
		request_fragment_unnamed_free(merged->fragment);
	for (size_t f = 0; more != NULL && f < lead->n_more_fragments; f++)
		request_fragment_unnamed_free(more[f]);
	free(more);
	merged->fragment = lead->fragment;
	merged->more_fragments = lead->more_fragments;
}


/*
 * The compute part of a group run: runs reqs[0..n) (their rows in order)
 * as one fragment run, on the device or the simulated one.  Writes only
 * *j's outcome (fr, rc, sqlstate, err, samples, load_ms), so that the
 * compute thread may call it while the loop reads the server.
 */
static void
group_compute(server *s, job *j)
{
	Pginfer__RunFragment merged = *j->reqs[0]->run;
	Pginfer__Fragment **more = NULL;
	const Pginfer__RunFragment **row_runs = NULL;
	uint64_t   *ids = NULL;
	const void **rows = NULL;
	size_t	   *lens = NULL;
	int			total = 0,
				off = 0;
	double		load0 = model_cache_load_ms_total(s->cache);

	j->rc = -1;
	j->sqlstate = PGINFER_SQLSTATE_INTERNAL;
	j->n_samples = 0;
	for (int k = 0; k < j->n_items; k++)
		total += (int) j->reqs[k]->run->n_row_ids;
	ids = calloc(total > 0 ? (size_t) total : 1, sizeof(*ids));
	rows = calloc(total > 0 ? (size_t) total : 1, sizeof(*rows));
	lens = calloc(total > 0 ? (size_t) total : 1, sizeof(*lens));
	row_runs = calloc(total > 0 ? (size_t) total : 1, sizeof(*row_runs));
	if (ids == NULL || rows == NULL || lens == NULL || row_runs == NULL)
		goto oom;
	for (int k = 0; k < j->n_items; k++)
	{
		const Pginfer__RunFragment *run = j->reqs[k]->run;

		for (size_t i = 0; i < run->n_row_ids; i++, off++)
		{
			ids[off] = run->row_ids[i];
			rows[off] = j->frames[k][i];
			lens[off] = j->lens[k][i];
			row_runs[off] = run;
		}
	}
	/*
	 * The members share fragment and pixel limit: the first one speaks for
	 * all, unnamed when their models' names differ (unnamed_run); the
	 * simulator names each row's answer after its own request (row_runs).
	 */
	merged.n_row_ids = (size_t) total;
	merged.row_ids = ids;
	if (unnamed_run(j, &merged, &more) != 0)
		goto oom;
	if (s->sim != NULL)
		j->rc = sim_run(s->sim, s->cache, &merged, row_runs, rows, lens, total,
						s->max_batch, j->stop, j->samples, JOB_MAX_SAMPLES,
						&j->n_samples, &j->fr, &j->sqlstate, j->err, sizeof(j->err));
	else
		j->rc = fragment_run(s->cache, &merged, rows, lens, total, s->max_pixels,
							 s->max_batch, j->stop, &j->fr, &j->sqlstate,
							 j->err, sizeof(j->err));
	j->load_ms = model_cache_load_ms_total(s->cache) - load0;
	goto done;

oom:
	j->sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	snprintf(j->err, sizeof(j->err), "out of memory for a batch of %d rows", total);

done:
	unnamed_run_free(&merged, more, j->reqs[0]->run);
	free(row_runs);
	free(ids);
	free(rows);
	free(lens);
}

/*
 * Milliseconds request k of group job j waited between its arrival and
 * the start of the job's run; 0 without a queue (server_run_group).
 */
static double
group_queue_ms(const job *j, int k)
{
	double		ms;

	if (j->items == NULL || j->items[k] == NULL)
		return 0.0;
	ms = (double) (j->started_us - j->items[k]->arrival_us) / 1000.0;
	return ms > 0 ? ms : 0.0;
}

/*
 * The model calls of a finished group run, in call order: the simulated
 * run's in j, then a real run's in fr.  run_calls() counts them;
 * run_call(j, fr, k) is the k-th (0 <= k < run_calls).
 */
static int
run_calls(const job *j, const fragment_result *fr)
{
	return j->n_samples + fr->n_samples;
}

static const state_sample *
run_call(const job *j, const fragment_result *fr, int k)
{
	return k < j->n_samples ? &j->samples[k] : &fr->samples[k - j->n_samples];
}

/*
 * Logs (at debug) one line per finished group run naming its model calls
 * in call order, "file rows ms" each: the simulated run's in j, a real
 * run's in fr.  A timeline of a worker's runs (which model, how many rows,
 * when) is read from these lines; the line is cut at 900 bytes.
 */
static void
log_model_calls(const job *j, const fragment_result *fr)
{
	char		buf[1024];
	size_t		used = 0;

	if (log_get_level() > LOG_LEVEL_DEBUG)
		return;
	buf[0] = '\0';
	for (int k = 0; k < run_calls(j, fr) && used < 900; k++)
	{
		const state_sample *c = run_call(j, fr, k);
		int			w = snprintf(buf + used, sizeof(buf) - used, "%s%s %d %.1f",
								 used > 0 ? ", " : "", c->file, c->rows, c->ms);

		if (w < 0)
			break;
		used += (size_t) w < sizeof(buf) - used ? (size_t) w : sizeof(buf) - used - 1;
	}
	log_debug("run of %d requests in %.1f ms: model calls %s", j->n_items,
			  fr->compute_ms, used > 0 ? buf : "none");
}

/*
 * Whether every request of group job j was cancelled while it ran (the
 * loop then stops it between rows, as for a shutdown: cancel_running).
 */
static int
group_all_cancelled(const job *j)
{
	if (j->cancelled == NULL || j->n_items == 0)
		return 0;
	for (int k = 0; k < j->n_items; k++)
		if (!j->cancelled[k])
			return 0;
	return 1;
}

/*
 * Notes in *w, as work begins (on the loop thread), the process's resume
 * count (server_resumes) and the model cache's loads, for
 * watch_across_stop().
 */
static void
watch_begin(server *s, stop_watch *w)
{
	w->resumes = server_resumes;
	w->loads0 = model_cache_get_counts(s->cache).loads;
	w->began = 1;
}

/*
 * Whether the work watched by w, done, ran across a stop of the process
 * (SIGSTOP, then SIGCONT: the resume count moved since watch_begin); if
 * so, the models it loaded keep the load time they had
 * (model_cache_untime_loads), as the load's wall time included the stop.
 * Only on the loop thread: the SIGCONT handler runs there, so the resume
 * is counted before the loop can see the work done; a compute thread may
 * see its load end first.  0 for work never begun.
 */
static int
watch_across_stop(server *s, const stop_watch *w)
{
	if (!w->began || w->resumes == server_resumes)
		return 0;
	{
		int64_t		resumed[SERVER_RESUMES_KEPT];

		for (int k = 0; k < SERVER_RESUMES_KEPT; k++)
			resumed[k] = atomic_load(&server_resumed_us[k]);
		model_cache_untime_loads(s->cache, w->loads0, resumed, SERVER_RESUMES_KEPT);
	}
	return 1;
}

/* Most failed rows of one request that log_failed_rows names. */
#define LOG_FAILED_ROWS_MAX 10

/*
 * At the debug level, the errors of request req's failed rows (rows off ..
 * off + n - 1 of fr): "request N: row 3 of 25 (row id 7): 54000 <message>"
 * for the first LOG_FAILED_ROWS_MAX, then how many more failed.  Only
 * counts reach the info line; these say why.
 */
static void
log_failed_rows(const Pginfer__Header *req, const fragment_result *fr, int off, int n)
{
	int			shown = 0,
				more = 0;

	for (int i = 0; i < n; i++)
	{
		const Pginfer__RowResult *row = &fr->rows[off + i];

		if (row->ok)
			continue;
		if (shown == LOG_FAILED_ROWS_MAX)
		{
			more++;
			continue;
		}
		shown++;
		log_debug("request %llu: row %d of %d (row id %llu): %s %s%s%s",
				  (unsigned long long) req->request_id, i + 1, n,
				  (unsigned long long) row->row_id,
				  row->sqlstate != NULL ? row->sqlstate : "?",
				  row->message != NULL ? row->message : "",
				  row->detail != NULL && row->detail[0] != '\0' ? ": " : "",
				  row->detail != NULL ? row->detail : "");
	}
	if (more > 0)
		log_debug("request %llu: %d more rows failed", (unsigned long long) req->request_id, more);
}

/*
 * The bookkeeping part of a group run, on the loop's thread: counters,
 * timings, and replies[k] for each request (its MSG_RESULT, or MSG_ERROR
 * when the run failed as a whole).  Returns 0, or -1 when memory runs out
 * for a reply (that replies[k] is NULL).
 */
static int
group_finish(server *s, job *j, server_reply **replies)
{
	const Pginfer__Header *const *reqs = j->reqs;
	int			n = j->n_items;
	fragment_result *fr = j->fr;
	char		hint[1024];
	int			total = 0,
				off = 0,
				rc = 0;
	int			across = watch_across_stop(s, &j->watch);

	for (int k = 0; k < n; k++)
	{
		replies[k] = NULL;
		total += (int) reqs[k]->run->n_row_ids;
	}
	if (j->rc != 0)
	{
		/*
		 * A run stopped for a shutdown (57P01) returns no row to any of its
		 * requests: to each, as if it had not run, and the extension sends
		 * it again elsewhere (the message says so, not the group's count).
		 */
		const char *msg = j->err;

		if (strcmp(j->sqlstate, FRAGMENT_SQLSTATE_SHUTDOWN) == 0 &&
			group_all_cancelled(j))
		{
			/* stopped as every request of it was cancelled: no one to answer */
			log_info("%s, as its %d requests were cancelled", j->err, n);
			return rc;
		}
		if (strcmp(j->sqlstate, FRAGMENT_SQLSTATE_SHUTDOWN) == 0)
		{
			log_info("the worker is shutting down; %s: answering its %d requests with 57P01",
					 j->err, n);
			msg = "the worker is shutting down; the request was stopped before it "
				  "finished and returned no result";
		}
		for (int k = 0; k < n; k++)
		{
			replies[k] = error_reply(reqs[k]->request_id, reqs[k]->client, j->sqlstate, msg,
									 hint_for(s, j->sqlstate, hint, sizeof(hint)));
			if (replies[k] == NULL)
				rc = -1;
		}
		return rc;
	}

	s->batches_run++;
	s->rows_run += (uint64_t) total;
	if (total > 0 && across)
		log_info("a run of %d rows took %.1f ms across a stop of the process (SIGSTOP, SIGCONT): its times are not kept",
				 total, fr->compute_ms);
	else if (total > 0)
	{
		/* Moving average of the cost of a row, for the backlog estimate. */
		double	   *avg = &s->ms_per_row[kind_slot(reqs[0]->run->fragment->kind)];
		double		per = (fr->compute_ms - j->load_ms) / total;

		if (per < 0)
			per = 0;
		*avg = *avg > 0 ? 0.8 * *avg + 0.2 * per : per;
		for (int k = 0; k < run_calls(j, fr); k++)
		{
			const state_sample *c = run_call(j, fr, k);

			state_timings_record(s->timings, c->file, c->rows, c->ms);
		}
	}
	s->model_runs += (uint64_t) fr->model_runs;
	if (n > 1)
	{
		s->merged_batches++;
		/* model calls: counted for predict and classify runs only */
		if (fr->model_runs > 0)
			log_info("merged %d requests (%d rows) into one %s run of %.1f ms (%d model calls)",
					 n, total, fragment_kind_name(reqs[0]->run->fragment->kind),
					 fr->compute_ms, fr->model_runs);
		else
			log_info("merged %d requests (%d rows) into one %s run of %.1f ms",
					 n, total, fragment_kind_name(reqs[0]->run->fragment->kind),
					 fr->compute_ms);
	}
	log_model_calls(j, fr);
	for (int k = 0; k < n; k++)
	{
		int			nk = (int) reqs[k]->run->n_row_ids;
		int			n_ok = 0;

		if (j->bad != NULL)
			fail_bad_rows(fr, j->bad[k], total, off, nk);
		for (int i = 0; i < nk; i++)
			n_ok += fr->rows[off + i].ok ? 1 : 0;
		if (n_ok < nk && log_get_level() <= LOG_LEVEL_DEBUG)
			log_failed_rows(reqs[k], fr, off, nk);
		replies[k] = result_reply(reqs[k], fr, total, off, nk,
								  group_queue_ms(j, k),
								  s->requests_served + 1);
		if (replies[k] == NULL)
			rc = -1;
		else
			s->requests_served++;
		log_info("request %llu: %s over %d rows (%d ok, %d failed) in %.1f ms" FROM_FMT,
				 (unsigned long long) reqs[k]->request_id,
				 fragment_kind_name(reqs[k]->run->fragment->kind), nk, n_ok,
				 nk - n_ok, fr->compute_ms, FROM_ARGS(reqs[k]->client));
		off += nk;
	}
	return rc;
}

/*
 * server_run_group with bad[k] (may be NULL, as may bad itself) naming the
 * rows of request k whose bytes did not match their digest.
 */
static int
run_group(server *s, const Pginfer__Header *const *reqs,
		  const void *const *const *frames, const size_t *const *frame_len,
		  const char *const *bad, int n, server_reply **replies)
{
	job		   *j = calloc(1, sizeof(*j));
	int			rc;

	if (j == NULL)
	{
		for (int k = 0; k < n; k++)
			replies[k] = error_reply(reqs[k]->request_id, reqs[k]->client, PGINFER_SQLSTATE_OUT_OF_MEMORY,
									 "out of memory for a batch", NULL);
		return -1;
	}
	j->kind = JOB_GROUP;
	watch_begin(s, &j->watch);
	j->n_items = n;
	j->reqs = (const Pginfer__Header **) reqs;
	j->frames = (const void *const **) frames;
	j->lens = (const size_t **) frame_len;
	j->bad = (const char **) bad;
	j->stop = s->stop;
	/* Pinned while they run, so that loading one model never evicts another. */
	for (int k = 0; k < n; k++)
		pin_run(s->cache, reqs[k]->run, +1);
	group_compute(s, j);
	for (int k = 0; k < n; k++)
		pin_run(s->cache, reqs[k]->run, -1);
	rc = group_finish(s, j, replies);
	/* The arrays are the caller's: do not let job_free take them. */
	j->reqs = NULL;
	j->frames = NULL;
	j->lens = NULL;
	j->bad = NULL;
	job_free(j);
	return rc;
}

/* Runs n requests as one fragment run and splits the result; see server.h. */
int
server_run_group(server *s, const Pginfer__Header *const *reqs,
				 const void *const *const *frames,
				 const size_t *const *frame_len, int n,
				 server_reply **replies)
{
	return run_group(s, reqs, frames, frame_len, NULL, n, replies);
}

/*
 * MSG_RUN_FRAGMENT without queueing: its rows resolved against the input
 * cache (MSG_NEED_INPUT when some are not there), then a group of one.
 */
static server_reply *
run_reply(server *s, const Pginfer__Header *req, const void *const *frames,
		  const size_t *frame_len)
{
	server_reply *r = NULL;
	row_inputs	ri;
	uint32_t   *missing = NULL;
	size_t		n_missing = 0;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[512];
	int			rc;

	rc = resolve_inputs(s, req->run, frames, frame_len, &ri, &missing,
						&n_missing, &sqlstate, err, sizeof(err));
	if (rc < 0)
		return error_reply(req->request_id, req->client, sqlstate, err, NULL);
	if (rc > 0)
	{
		r = need_input_reply(req->request_id, req->client, missing, n_missing);
		free(missing);
		return r;
	}
	{
		const void *const *data = ri.data;
		const size_t *len = ri.len;
		const char *bad = ri.bad;

		run_group(s, &req, &data, &len, &bad, 1, &r);
	}
	row_inputs_free(&ri);
	return r;
}

/*
 * MSG_LOAD_MODEL's work: makes the model resident (timed), loads its
 * dictionary, and then (not on a simulated device) runs it once on a
 * test row of its task (worker/preflight.h), so that the load fails as
 * the first real row would.  Returns 0, or -1 with *sqlstate and err;
 * when the test row failed, *probe holds its detail and hint too and
 * *sqlstate points into it.  The test row counts no request, batch or
 * timing.
 */
static int
load_model(server *s, const Pginfer__ModelSpec *spec, double *ms,
		   const char **sqlstate, char *err, size_t errlen,
		   preflight_error *probe)
{
	memset(probe, 0, sizeof(*probe));
	if (model_cache_acquire(s->cache, spec, ms, sqlstate, err, errlen) != 0)
		return -1;
	if (s->sim != NULL)
		return 0;
	if (spec->labels_file[0] != '\0')
	{
		const char *const *dict;
		int			dict_len;

		if (model_cache_get_dict(s->cache, spec->labels_file, &dict, &dict_len,
								 sqlstate, err, errlen) != 0)
			return -1;
	}
	if (preflight_run(s->cache, spec, s->max_pixels, s->stop, probe) != 0)
	{
		*sqlstate = probe->sqlstate;
		snprintf(err, errlen, "%s", probe->message);
		log_info("model \"%s\" (task %s) failed its test row at load: %s: %s",
				 spec->file, spec->task, probe->sqlstate, probe->message);
		return -1;
	}
	return 0;
}

/*
 * MSG_ERROR for a failed load: the test row's detail and hint when it
 * failed (probe), else the hint of the SQLSTATE.
 */
static server_reply *
load_error_reply(server *s, const Pginfer__Header *req, const char *sqlstate,
				 const char *err, const preflight_error *probe)
{
	char		hint[1024];
	size_t		len = 0;
	uint8_t    *buf;

	if (probe->sqlstate[0] == '\0')
		return error_reply(req->request_id, req->client, sqlstate, err,
						   hint_for(s, sqlstate, hint, sizeof(hint)));
	log_warn("request %llu: error %s: %s" FROM_FMT, (unsigned long long) req->request_id,
			 sqlstate, err, FROM_ARGS(req->client));
	buf = server_pack_error(req->request_id, sqlstate, err,
							probe->detail[0] != '\0' ? probe->detail : NULL,
							probe->hint[0] != '\0' ? probe->hint :
							hint_for(s, sqlstate, hint, sizeof(hint)), &len);
	return reply_with_header(buf, len);
}

/*
 * MSG_LOAD_MODEL / MSG_UNLOAD_MODEL: PONG on success, ERROR otherwise.
 * Unloading a model that queued or running requests need is refused
 * (55006); unloading one that is not loaded is fine.
 */
static server_reply *
model_reply(server *s, const Pginfer__Header *req)
{
	const Pginfer__ModelSpec *spec = req->model->model;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[1024],
				hint[1024];
	preflight_error probe;
	double		ms = 0;
	int			rc;
	stop_watch	watch = {0};

	if (req->kind == PGINFER__MSG_KIND__MSG_UNLOAD_MODEL)
	{
		rc = model_cache_evict(s->cache, spec->file);
		if (rc < 0)
		{
			snprintf(err, sizeof(err),
					 "model \"%s\" is in use by queued or running requests and cannot be unloaded",
					 spec->file);
			return error_reply(req->request_id, req->client, PGINFER_SQLSTATE_IN_USE, err,
							   hint_for(s, PGINFER_SQLSTATE_IN_USE, hint, sizeof(hint)));
		}
		if (rc == 0)
			log_info("request %llu: unload of \"%s\", which is not loaded" FROM_FMT,
					 (unsigned long long) req->request_id, spec->file, FROM_ARGS(req->client));
		state_changed(s);
		return pong_reply(s, req->request_id);
	}
	model_cache_pin(s->cache, spec->file, +1);
	watch_begin(s, &watch);
	rc = load_model(s, spec, &ms, &sqlstate, err, sizeof(err), &probe);
	(void) watch_across_stop(s, &watch);
	model_cache_pin(s->cache, spec->file, -1);
	if (rc != 0)
		return load_error_reply(s, req, sqlstate, err, &probe);
	return pong_reply(s, req->request_id);
}

/*
 * MSG_PUT_MODEL's work: stores the uploaded bytes of a model file (the
 * one payload frame) by content hash (model_store_put, which checks the
 * name and the SHA-256).  Returns 0, or -1 with *sqlstate and err.  On
 * the compute thread (JOB_PUT) when there is one.
 */
static int
store_model(server *s, const Pginfer__Header *req, const void *data,
			size_t len, const char **sqlstate, char *err, size_t errlen)
{
	const Pginfer__ModelSpec *spec = req->model->model;

	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	if (s->no_uploads)
	{
		*sqlstate = PGINFER_SQLSTATE_NOT_SUPPORTED;
		snprintf(err, errlen, "this worker takes no uploaded models (--no-uploads); model file \"%s\" was not stored",
				 spec->file);
	}
	else if (model_store_put_limited(s->model_dir, spec->file, spec->sha256.data,
									 spec->sha256.len, data, len,
									 s->max_upload_bytes, sqlstate, err,
									 errlen) == 0)
		return 0;
	log_warn("request %llu: refused uploaded model file: %s" FROM_FMT,
			 (unsigned long long) req->request_id, err, FROM_ARGS(req->client));
	return -1;
}

/* The hint of a refused MSG_PUT_MODEL, or NULL. */
static const char *
put_hint(const char *sqlstate)
{
	if (strcmp(sqlstate, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
		return "Copy the file into the worker's --model-dir instead, or start the worker without --no-uploads.";
	if (strcmp(sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0)
		return "Remove unused files from the worker's .uploaded folder, or raise its --max-upload-bytes.";
	return strcmp(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED) == 0 ?
		"The bytes changed on their way: upload the model again." : NULL;
}

/* MSG_PUT_MODEL answered on the caller's thread (no compute thread). */
static server_reply *
put_model_reply(server *s, const Pginfer__Header *req, const void *data,
				size_t len)
{
	const char *sqlstate;
	char		err[1024];

	if (store_model(s, req, data, len, &sqlstate, err, sizeof(err)) != 0)
		return error_reply(req->request_id, req->client, sqlstate, err, put_hint(sqlstate));
	return pong_reply(s, req->request_id);
}

/* Handles one request; see server.h. */
int
server_handle(server *s, const void *header, size_t header_len,
			  const void *const *frames, const size_t *frame_len,
			  int n_frames, server_reply **out)
{
	Pginfer__Header *req = NULL;
	const char *sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	request_refusal why;
	char		err[512];
	server_reply *r = NULL;

	*out = NULL;
	req = request_unpack(header, header_len, &why);
	if (req == NULL && why.limit)
	{
		snprintf(err, sizeof(err),
				 "request refused unread: the header frame (%zu bytes) was refused: %s",
				 header_len, why.reason);
		r = error_reply(why.request_id, NULL, PGINFER_SQLSTATE_TOO_LARGE, err,
						"Send fewer fragments or models in one request (common/protocol.h).");
		goto done;
	}
	if (req == NULL)
	{
		snprintf(err, sizeof(err),
				 "malformed request: the header frame (%zu bytes) was refused: %s",
				 header_len, why.reason);
		r = error_reply(0, NULL, PGINFER_SQLSTATE_PROTOCOL, err, NULL);
		goto done;
	}
	log_debug("request %llu: %s, %d payload frames" FROM_FMT,
			  (unsigned long long) req->request_id, request_kind_name(req->kind),
			  n_frames, FROM_ARGS(req->client));
	if (request_check_header(req, n_frames, &sqlstate, err, sizeof(err)) != 0)
	{
		r = error_reply(req->request_id, req->client, sqlstate, err,
						req->version != PGINFER_PROTOCOL_VERSION ?
						"Run the same pg_infer version in the database and on the workers." :
						NULL);
		goto done;
	}
	switch (req->kind)
	{
		case PGINFER__MSG_KIND__MSG_PING:
			r = pong_reply(s, req->request_id);
			break;
		case PGINFER__MSG_KIND__MSG_RUN_FRAGMENT:
			/* With a compute thread only it may run fragments (queueing failed). */
			if (s->pipe_loop != NULL)
				r = error_reply(req->request_id, req->client, PGINFER_SQLSTATE_OUT_OF_MEMORY,
								"out of memory queueing the request", NULL);
			else
				r = run_reply(s, req, frames, frame_len);
			break;
		case PGINFER__MSG_KIND__MSG_LOAD_MODEL:
		case PGINFER__MSG_KIND__MSG_UNLOAD_MODEL:
			r = model_reply(s, req);
			break;
		case PGINFER__MSG_KIND__MSG_PUT_MODEL:
			r = put_model_reply(s, req, frames[0], frame_len[0]);
			break;
		case PGINFER__MSG_KIND__MSG_CANCEL:
			/* Without a socket nothing is queued: the one named is done or unknown. */
			log_debug("request %llu: cancel ignored (no request of that id is queued)" FROM_FMT,
					  (unsigned long long) req->request_id, FROM_ARGS(req->client));
			pginfer__header__free_unpacked(req, NULL);
			return 0;
		default:
			/* request_check_header() let only the kinds above through. */
			snprintf(err, sizeof(err), "unexpected %s", request_kind_name(req->kind));
			r = error_reply(req->request_id, req->client, PGINFER_SQLSTATE_INTERNAL, err, NULL);
			break;
	}

done:
	/* A reply that could not be built still gets an answer if possible. */
	if (r == NULL)
		r = error_reply(req != NULL ? req->request_id : 0, req != NULL ? req->client : NULL,
						PGINFER_SQLSTATE_OUT_OF_MEMORY,
						"out of memory building the reply", NULL);
	if (req != NULL)
		pginfer__header__free_unpacked(req, NULL);
	*out = r;
	return r != NULL ? 0 : -1;
}

/* Frees *rp and the buffers it still owns; sets *rp to NULL. */
void
server_reply_destroy(server_reply **rp)
{
	server_reply *r;

	if (rp == NULL || *rp == NULL)
		return;
	r = *rp;
	for (int i = 0; r->frames != NULL && i < r->n_frames; i++)
		free(r->frames[i]);
	free(r->frames);
	free(r->frame_len);
	free(r->header);
	free(r);
	*rp = NULL;
}

/*
 * zmq_msg_send(), sent again when a signal interrupts it (EINTR: the
 * SIGCONT handler runs on this thread after a stop, as may the stop
 * signals' handlers): ZeroMQ has not taken the part then, and a part
 * left unsent within a message would leave the ROUTER mid-message, the
 * next reply's parts appended to it.  Returns zmq_msg_send()'s result.
 */
static int
msg_send(zmq_msg_t *m, void *sock, int flags)
{
	int			rc;

	while ((rc = zmq_msg_send(m, sock, flags)) < 0 && zmq_errno() == EINTR)
		;
	return rc;
}

/*
 * Sends one message part that takes over buf (malloc'd, len bytes; NULL
 * for an empty frame), counted as unread for client (may be NULL) until
 * ZeroMQ lets go of it.  *buf is set to NULL once ZeroMQ owns it.
 */
static int
send_owned(void *sock, void **buf, size_t len, int more, client_entry *client)
{
	zmq_msg_t	m;

	if (*buf == NULL || len == 0)
	{
		zmq_msg_init(&m);
		free(*buf);
		*buf = NULL;
	}
	else
	{
		if (client_msg_init(&m, *buf, len, client) != 0)
			return -1;
		*buf = NULL;
	}
	if (msg_send(&m, sock, more ? ZMQ_SNDMORE : 0) < 0)
	{
		zmq_msg_close(&m);
		return -1;
	}
	return 0;
}

/* Sends reply r to the peer whose routing id is in id. */
static int
send_reply(server *s, zmq_msg_t *id, server_reply *r)
{
	zmq_msg_t	idcopy;
	void	   *hdr = r->header;
	client_entry *client = client_table_get(s->clients, zmq_msg_data(id),
											zmq_msg_size(id));

	zmq_msg_init(&idcopy);
	zmq_msg_copy(&idcopy, id);
	if (msg_send(&idcopy, s->sock, ZMQ_SNDMORE) < 0)
	{
		zmq_msg_close(&idcopy);
		return -1;
	}
	r->header = NULL;
	if (send_owned(s->sock, &hdr, r->header_len, r->n_frames > 0, client) != 0)
	{
		free(hdr);
		return -1;
	}
	for (int i = 0; i < r->n_frames; i++)
	{
		if (send_owned(s->sock, &r->frames[i], r->frame_len[i],
					   i + 1 < r->n_frames, client) != 0)
			return -1;
	}
	return 0;
}

/*
 * Most parts of one message kept in memory: routing id, header and
 * SERVER_MAX_ROWS + 1 payload frames (one more than allowed, so that the
 * frame count check still sees too many).
 */
#define RECV_MAX_PARTS (SERVER_MAX_ROWS + 3)

/*
 * Reads the rest of a multipart message whose first part (the routing id)
 * is in parts[0], growing *parts as needed; *n gets the number of parts
 * held (at most RECV_MAX_PARTS) and *dropped the number read past that
 * and closed at once.  Returns 0, or -1 when a part could not be kept (the
 * rest of the message is then read and dropped, so the next read starts a
 * message).
 */
static int
recv_parts(server *s, zmq_msg_t **parts, int *cap, int *n, int64_t *dropped)
{
	int			more = zmq_msg_more(&(*parts)[0]);

	*n = 1;
	*dropped = 0;
	while (more && *n < RECV_MAX_PARTS)
	{
		if (*n == *cap)
		{
			int			ncap = *cap * 2 < RECV_MAX_PARTS ? *cap * 2 : RECV_MAX_PARTS;
			zmq_msg_t  *p = realloc(*parts, (size_t) ncap * sizeof(zmq_msg_t));

			if (p == NULL)
				goto drain;
			*parts = p;
			*cap = ncap;
		}
		zmq_msg_init(&(*parts)[*n]);
		while (zmq_msg_recv(&(*parts)[*n], s->sock, 0) < 0)
		{
			if (zmq_errno() != EINTR)
			{
				zmq_msg_close(&(*parts)[*n]);
				return -1;
			}
		}
		more = zmq_msg_more(&(*parts)[*n]);
		(*n)++;
	}
	/* Past the limit: read to the end of the message, keep nothing. */
	while (more)
	{
		zmq_msg_t	m;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, s->sock, 0) < 0)
		{
			zmq_msg_close(&m);
			if (zmq_errno() == EINTR)
				continue;
			return -1;
		}
		more = zmq_msg_more(&m);
		zmq_msg_close(&m);
		(*dropped)++;
	}
	return 0;

drain:
	while (more)
	{
		zmq_msg_t	m;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, s->sock, 0) < 0)
		{
			int			e = zmq_errno();

			zmq_msg_close(&m);
			if (e == EINTR)
				continue;		/* the rest of the message is still to read */
			break;
		}
		more = zmq_msg_more(&m);
		zmq_msg_close(&m);
	}
	return -1;
}

/*
 * Answers a message whose payload frames went past RECV_MAX_PARTS
 * (parts[0] the routing id, parts[1] the header, n_payload frames in all)
 * with MSG_ERROR 54000, under the request's id when its header unpacks.
 */
static void
refuse_too_many(server *s, zmq_msg_t *parts, int64_t n_payload)
{
	Pginfer__Header *req;
	request_refusal why;
	uint64_t	id = 0;
	char		msg[256];
	char		who[PGINFER_CLIENT_MAX + 1] = "";
	server_reply *r;

	req = request_unpack(zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), &why);
	if (req != NULL)
	{
		id = req->request_id;
		snprintf(who, sizeof(who), "%s", req->client != NULL ? req->client : "");
		pginfer__header__free_unpacked(req, NULL);
	}
	else if (why.limit)
		id = why.request_id;
	snprintf(msg, sizeof(msg),
			 "request has %lld payload frames, more than the %d rows one request may carry",
			 (long long) n_payload, SERVER_MAX_ROWS);
	r = error_reply(id, who, PGINFER_SQLSTATE_TOO_LARGE, msg,
					"Send the rows in several requests.");
	if (r != NULL && send_reply(s, &parts[0], r) != 0)
		log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
	server_reply_destroy(&r);
}

/*
 * The client of a received message (parts[0] its routing id, parts[1] the
 * header when n >= 2) for logs: its address when ZeroMQ knows it, and its
 * routing id in hex.
 */
static void
client_name(zmq_msg_t *parts, int n, char *buf, size_t buflen)
{
	const unsigned char *id = zmq_msg_data(&parts[0]);
	size_t		len = zmq_msg_size(&parts[0]);
	const char *addr = n >= 2 ? zmq_msg_gets(&parts[1], "Peer-Address") : NULL;
	size_t		at;

	at = (size_t) snprintf(buf, buflen, "%s (routing id ", addr != NULL ? addr : "?");
	for (size_t i = 0; i < len && i < 16 && at + 3 < buflen; i++)
		at += (size_t) snprintf(buf + at, buflen - at, "%02x", id[i]);
	if (at + 2 < buflen)
		snprintf(buf + at, buflen - at, ")");
}

/*
 * Notes that client c is over --max-client-bytes and logs it at WARN once
 * an episode: at most one line a second over all clients (a client that
 * connects again and again is a new one each time), the lines left out
 * counted in the next; an episode left out is logged at its next refusal
 * once the second has passed.  Only an episode logged here gets its "under
 * again" line (client_set_over).
 */
static void
warn_over(server *s, client_entry *c, zmq_msg_t *parts, int n, int64_t held,
		  const char *when)
{
	int64_t		now = now_us();
	char		who[128];
	client_over was = client_set_over(c, CLIENT_OVER);

	if (was == CLIENT_OVER_LOGGED)
	{
		client_set_over(c, was);	/* the same episode, logged */
		return;
	}
	if (s->over_warned_us != 0 && now - s->over_warned_us < 1000000)
	{
		if (was == CLIENT_UNDER)
			s->over_unwarned++;
		return;
	}
	client_set_over(c, CLIENT_OVER_LOGGED);
	client_name(parts, n, who, sizeof(who));
	log_warn("client %s holds %lld bytes (requests queued and answers it has not read), over --max-client-bytes %lld: its requests are refused%s until it reads its answers (%llu more clients went over since the last such line)",
			 who, (long long) held, (long long) s->max_client_bytes, when,
			 (unsigned long long) s->over_unwarned);
	s->over_warned_us = now;
	s->over_unwarned = 0;
}

/*
 * Whether client c's unread answers keep its requests from running: over
 * twice --max-client-bytes, or over it for CLIENT_STALL_US
 * (client_stalled).  An answer just sent counts until ZeroMQ has written it
 * out, so a client that reads as answers come is over the limit only for
 * that moment, and only a single answer larger than twice the limit blocks
 * it.
 */
static bool
answers_blocked(server *s, client_entry *c)
{
	return client_unread(c) > 2 * s->max_client_bytes || client_stalled(c);
}

/*
 * Answers request_id (from who, Header.client or NULL) of the client whose
 * routing id is peer (c its entry, holding held bytes) with MSG_ERROR 53400
 * instead of running it, or,
 * with may_drop (the caller found that its answers block it,
 * answers_blocked) when its unread answers pass --max-client-bytes by
 * CLIENT_REFUSAL_ALLOWANCE, drops it unanswered (the client reads none of
 * them).  Counts it either way.
 */
static void
refuse_for_client(server *s, zmq_msg_t *peer, client_entry *c,
				  uint64_t request_id, const char *who, int64_t held, bool may_drop)
{
	char		msg[512];
	server_reply *r;

	if (may_drop && client_unread(c) > s->max_client_bytes + CLIENT_REFUSAL_ALLOWANCE)
	{
		s->client_dropped++;
		return;
	}
	s->client_refused++;
	snprintf(msg, sizeof(msg),
			 "the worker holds %lld bytes for this connection (requests queued and answers not read yet), over its limit of %lld bytes; the request was not run",
			 (long long) held, (long long) s->max_client_bytes);
	/* quiet: one WARN an episode (warn_over), not one a request */
	r = error_reply_logged(request_id, who, PGINFER_SQLSTATE_CLIENT_LIMIT, msg,
						   "Read the answers of the requests sent before sending more, or start the worker with a larger --max-client-bytes.",
						   true);
	if (r != NULL && send_reply(s, peer, r) != 0)
		log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
	server_reply_destroy(&r);
}

/*
 * Whether the client of a received message (parts[0..n)) is over
 * --max-client-bytes (worker/clients.h): its queued and running requests
 * alone pass it, or its unread answers block it (answers_blocked).  Such
 * a client's request is not run (refuse_for_client).  A
 * cancel is never refused (it only takes work away).  Logs when a client
 * goes over (warn_over) and when it is back under.
 */
static int
client_over_limit(server *s, zmq_msg_t *parts, int n)
{
	client_entry *c = client_table_get(s->clients, zmq_msg_data(&parts[0]),
									   zmq_msg_size(&parts[0]));
	int64_t		held = client_held(c);
	Pginfer__Header *req = NULL;
	request_refusal why;
	uint64_t	id = 0;
	char		who[128];
	bool		blocked = answers_blocked(s, c);

	if (held - client_unread(c) <= s->max_client_bytes && !blocked)
	{
		if (client_set_over(c, CLIENT_UNDER) == CLIENT_OVER_LOGGED)
		{
			client_name(parts, n, who, sizeof(who));
			log_info("client %s holds %lld bytes, under --max-client-bytes %lld again: its requests are served (requests not run since the worker started: %llu refused, %llu dropped, all clients)",
					 who, (long long) held, (long long) s->max_client_bytes,
					 (unsigned long long) s->client_refused,
					 (unsigned long long) s->client_dropped);
		}
		return 0;
	}
	if (n >= 2)
	{
		req = request_unpack(zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), &why);
		if (req != NULL)
			id = req->request_id;
		else if (why.limit)
			id = why.request_id;
	}
	if (req != NULL && req->kind == PGINFER__MSG_KIND__MSG_CANCEL)
	{
		pginfer__header__free_unpacked(req, NULL);
		return 0;
	}
	if (req != NULL)
		pginfer__header__free_unpacked(req, NULL);
	warn_over(s, c, parts, n, held, "");
	refuse_for_client(s, &parts[0], c, id, NULL, held, blocked);
	return 1;
}

/*
 * Takes out of items[0..*n) (a group about to run) the requests whose
 * client's unread answers block it (answers_blocked), and refuses them
 * with 53400, never dropping one (refuse_for_client): a request admitted while
 * its client was under the limit would otherwise still run, and a small
 * request can have a large answer (a row of text, 1.5 kB of embedding),
 * so that a client that queued many and read none grew the worker 61
 * times past the limit.  A client that reads its answers is over only for
 * the moment an answer takes to go out, so its requests run.  *n gets the
 * count left.
 */
static void
refuse_unread_clients(server *s, batch_item **items, int *n)
{
	int			kept = 0;

	for (int k = 0; k < *n; k++)
	{
		queued_request *q = items[k]->data;
		int64_t		held;

		if (q == NULL || !answers_blocked(s, q->client))
		{
			items[kept++] = items[k];
			continue;
		}
		held = client_held(q->client);
		warn_over(s, q->client, q->parts, q->n_parts, held,
				  ", even those queued,");
		refuse_for_client(s, &q->parts[0], q->client, items[k]->request_id,
						  q->header != NULL ? q->header->client : NULL, held, false);
		batch_item_destroy(&items[k]);
	}
	*n = kept;
}

/* Answers one received message (parts[0] is the routing id). */
static void
serve_message(server *s, zmq_msg_t *parts, int n)
{
	server_reply *r = NULL;
	const void **data = NULL;
	size_t	   *len = NULL;
	int			n_payload = n > 2 ? n - 2 : 0;

	if (n < 2)
	{
		size_t		hlen = 0;
		uint8_t    *h = server_pack_error(0, PGINFER_SQLSTATE_PROTOCOL,
										  "malformed request: no header frame",
										  NULL, NULL, &hlen);

		log_warn("request without a header frame");
		r = reply_with_header(h, hlen);
	}
	else
	{
		data = calloc(n_payload > 0 ? (size_t) n_payload : 1, sizeof(*data));
		len = calloc(n_payload > 0 ? (size_t) n_payload : 1, sizeof(*len));
		if (data == NULL || len == NULL)
		{
			log_error("out of memory for a request of %d frames", n);
			goto done;
		}
		for (int i = 0; i < n_payload; i++)
		{
			data[i] = zmq_msg_data(&parts[i + 2]);
			len[i] = zmq_msg_size(&parts[i + 2]);
		}
		if (server_handle(s, zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]),
						  data, len, n_payload, &r) != 0)
			log_error("out of memory building a reply");
	}
	if (r != NULL && send_reply(s, &parts[0], r) != 0)
		log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));

done:
	server_reply_destroy(&r);
	free(data);
	free(len);
}

/*
 * Marks the requests of peer with request_id in the running group
 * cancelled (they get no reply); when every request of the group is
 * cancelled, the group is abandoned between rows.  Returns how many were
 * marked.
 */
static int
cancel_running(server *s, const void *peer, size_t peer_len, uint64_t request_id)
{
	job		   *j = s->running;
	int			marked = 0,
				left = 0;

	if (j == NULL || j->kind != JOB_GROUP || j->cancelled == NULL)
		return 0;
	for (int k = 0; k < j->n_items; k++)
	{
		const batch_item *it = j->items[k];

		if (!j->cancelled[k] && it->request_id == request_id &&
			it->peer_len == peer_len &&
			(peer_len == 0 || memcmp(it->peer, peer, peer_len) == 0))
		{
			j->cancelled[k] = 1;
			marked++;
		}
		left += j->cancelled[k] ? 0 : 1;
	}
	if (marked > 0 && left == 0)
		j->abort = 1;
	return marked;
}

/*
 * Resolves the rows of q (its parts moved in, its header set) against the
 * input cache into q->rows.  Returns 0; or -1 after answering the peer
 * (MSG_NEED_INPUT, or MSG_ERROR) and freeing q.
 */
static int
queue_inputs(server *s, queued_request *q)
{
	int			n = q->n_parts - 2;
	const void **data = calloc(n > 0 ? (size_t) n : 1, sizeof(*data));
	size_t	   *len = calloc(n > 0 ? (size_t) n : 1, sizeof(*len));
	uint32_t   *missing = NULL;
	size_t		n_missing = 0;
	const char *sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	char		err[512] = "out of memory queueing the request";
	server_reply *r = NULL;
	int			rc = -1;

	if (data != NULL && len != NULL)
	{
		for (int i = 0; i < n; i++)
		{
			data[i] = zmq_msg_data(&q->parts[i + 2]);
			len[i] = zmq_msg_size(&q->parts[i + 2]);
		}
		rc = resolve_inputs(s, q->header->run, data, len, &q->rows, &missing,
							&n_missing, &sqlstate, err, sizeof(err));
	}
	free(data);
	free(len);
	if (rc == 0)
		return 0;
	r = rc > 0 ? need_input_reply(q->header->request_id, q->header->client, missing, n_missing) :
		error_reply(q->header->request_id, q->header->client, sqlstate, err, NULL);
	if (rc < 0)
		metrics_request_done(-1, n, 0, 1);
	if (r != NULL && send_reply(s, &q->parts[0], r) != 0)
		log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
	server_reply_destroy(&r);
	free(missing);
	queued_request_free(q);
	state_changed(s);
	return -1;
}

/*
 * Looks at a received message (parts[0] is the routing id): a run-fragment
 * request with a good header is moved into the queue (*parts[0..n) are
 * then closed and empty), a cancel drops the queued request it names, and
 * everything else is answered at once by serve_message().
 */
static void
dispatch_message(server *s, zmq_msg_t *parts, int n)
{
	Pginfer__Header *req = NULL;
	queued_request *q = NULL;
	batch_item *it = NULL;
	uint8_t    *key = NULL;
	size_t		key_len = 0;
	const char *sqlstate;
	char		err[512];

	if (n >= 2)
		req = request_unpack(zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), NULL);
	if (req == NULL || request_check_header(req, n - 2, &sqlstate, err, sizeof(err)) != 0)
		goto serve_now;
	if (req->kind == PGINFER__MSG_KIND__MSG_CANCEL)
	{
		int			removed = batcher_cancel(s->queue, zmq_msg_data(&parts[0]),
											 zmq_msg_size(&parts[0]), req->request_id);
		int			running = removed > 0 ? 0 :
			cancel_running(s, zmq_msg_data(&parts[0]), zmq_msg_size(&parts[0]),
						   req->request_id);

		if (removed > 0)
			state_changed(s);
		/* a cancel that finds nothing is common (the answer crossed it)
		 * and costs a client nothing to send: not logged at info */
		if (removed > 0 || running > 0)
			log_info("request %llu: cancel %s" FROM_FMT, (unsigned long long) req->request_id,
					 removed > 0 ? "dropped the queued request" :
					 "dropped the running request (it gets no reply)", FROM_ARGS(req->client));
		else
			log_debug("request %llu: cancel ignored (no request of that id is queued or running)" FROM_FMT,
					  (unsigned long long) req->request_id, FROM_ARGS(req->client));
		pginfer__header__free_unpacked(req, NULL);
		return;
	}
	if (s->stopping)
	{
		/*
		 * Stopping (shutdown_drain): nothing new is served, not even a
		 * ping, whose answer (a state) would count as a heartbeat in the
		 * pool; a run's inputs are not resolved (no MSG_NEED_INPUT).
		 */
		/* a ping is the pool monitor's, every 100 ms: not a WARN each */
		server_reply *r = error_reply_logged(req->request_id, req->client, FRAGMENT_SQLSTATE_SHUTDOWN,
											 "the worker is shutting down; the request was not run",
											 hint_for(s, FRAGMENT_SQLSTATE_SHUTDOWN, NULL, 0),
											 req->kind == PGINFER__MSG_KIND__MSG_PING);

		if (r != NULL && send_reply(s, &parts[0], r) != 0)
			log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
		server_reply_destroy(&r);
		/* a ping's answer is read at once: it needs no grace */
		if (req->kind != PGINFER__MSG_KIND__MSG_PING)
			s->stopping_answers++;
		pginfer__header__free_unpacked(req, NULL);
		return;
	}
	if (req->kind == PGINFER__MSG_KIND__MSG_LOAD_MODEL && s->pipe_loop != NULL)
	{
		/* A load takes time: the compute thread does it, in turn. */
		job		   *j = calloc(1, sizeof(*j));
		job		  **tail = &s->loads;

		if (j == NULL)
			goto serve_now;
		j->kind = JOB_LOAD;
		zmq_msg_init(&j->peer);
		zmq_msg_copy(&j->peer, &parts[0]);
		j->req = req;
		model_cache_pin(s->cache, req->model->model->file, +1);
		while (*tail != NULL)
			tail = &(*tail)->next;
		*tail = j;
		state_changed(s);
		return;
	}
	if (req->kind == PGINFER__MSG_KIND__MSG_PUT_MODEL && s->pipe_loop != NULL &&
		n == 3)
	{
		/* Storing takes time too: the compute thread does it, in turn. */
		job		   *j = calloc(1, sizeof(*j));
		job		  **tail = &s->loads;

		if (j == NULL)
			goto serve_now;
		j->kind = JOB_PUT;
		zmq_msg_init(&j->peer);
		zmq_msg_copy(&j->peer, &parts[0]);
		zmq_msg_init(&j->payload);
		zmq_msg_move(&j->payload, &parts[2]);
		j->req = req;
		while (*tail != NULL)
			tail = &(*tail)->next;
		*tail = j;
		return;
	}
	if (req->kind != PGINFER__MSG_KIND__MSG_RUN_FRAGMENT)
		goto serve_now;

	key = request_group_key(req->run, &key_len);
	q = calloc(1, sizeof(*q));
	if (q != NULL)
		q->parts = malloc((size_t) n * sizeof(zmq_msg_t));
	if (key == NULL || q == NULL || q->parts == NULL)
		goto serve_now;
	for (int i = 0; i < n; i++)
	{
		zmq_msg_init(&q->parts[i]);
		zmq_msg_move(&q->parts[i], &parts[i]);
	}
	q->n_parts = n;
	q->header = req;
	for (int i = 1; i < n; i++)
		q->bytes += zmq_msg_size(&q->parts[i]);
	q->held = &s->request_bytes;
	atomic_fetch_add(q->held, q->bytes);
	q->client = client_table_get(s->clients, zmq_msg_data(&q->parts[0]),
								 zmq_msg_size(&q->parts[0]));
	q->client_counted = client_hold(q->client, (int64_t) q->bytes +
									(int64_t) (n - 2) * CLIENT_FRAME_OVERHEAD);
	/* The rows' bytes, now that the frames have moved (a small one moves). */
	if (queue_inputs(s, q) != 0)
	{
		free(key);
		return;
	}
	q->pinned = s->cache;
	pin_run(s->cache, req->run, +1);
	it = batch_item_new(key, key_len, (int) req->run->n_row_ids, batcher_now_us(),
						zmq_msg_data(&q->parts[0]), zmq_msg_size(&q->parts[0]),
						req->request_id, q, queued_request_free);
	if (it != NULL)
		it->hold_us = batch_hold_us(s, req->run, it->n_rows);
	if (it == NULL || batcher_add(s->queue, it) != 0)
	{
		/* Out of memory queueing: the peer gets no reply (as for a lost message). */
		if (it != NULL)
			batch_item_destroy(&it);	/* frees q and req with it */
		else
			queued_request_free(q);
		log_error("out of memory queueing a request: dropped it");
		free(key);
		return;
	}
	state_changed(s);
	log_debug("request %llu: queued %zu rows (%d requests, %d rows waiting)" FROM_FMT,
			  (unsigned long long) req->request_id, req->run->n_row_ids,
			  batcher_length(s->queue), batcher_rows(s->queue), FROM_ARGS(req->client));
	free(key);
	return;

serve_now:
	if (q != NULL)
	{
		free(q->parts);
		free(q);
	}
	free(key);
	if (req != NULL)
		pginfer__header__free_unpacked(req, NULL);
	serve_message(s, parts, n);
}

/*
 * A JOB_GROUP over items[0..n) taken from the queue (taken over: the job
 * frees them), with the request and frame arrays group_compute reads.
 * NULL when memory runs out (the items are then freed, unanswered).
 */
static job *
group_job_new(batch_item **items, int n)
{
	job		   *j = calloc(1, sizeof(*j));
	int			total = 0;

	if (j == NULL)
		goto fail;
	j->kind = JOB_GROUP;
	j->items = items;
	j->n_items = n;
	j->stop = &j->abort;
	items = NULL;
	j->cancelled = calloc((size_t) n, sizeof(*j->cancelled));
	j->reqs = calloc((size_t) n, sizeof(*j->reqs));
	j->frames = calloc((size_t) n, sizeof(*j->frames));
	j->lens = calloc((size_t) n, sizeof(*j->lens));
	j->bad = calloc((size_t) n, sizeof(*j->bad));
	for (int k = 0; k < n; k++)
		total += ((queued_request *) j->items[k]->data)->n_parts - 2;
	j->data = calloc(total > 0 ? (size_t) total : 1, sizeof(*j->data));
	j->len = calloc(total > 0 ? (size_t) total : 1, sizeof(*j->len));
	if (j->reqs == NULL || j->frames == NULL || j->lens == NULL ||
		j->data == NULL || j->len == NULL || j->cancelled == NULL ||
		j->bad == NULL)
		goto fail;
	total = 0;
	for (int k = 0; k < n; k++)
	{
		queued_request *q = j->items[k]->data;

		j->reqs[k] = q->header;
		j->frames[k] = &j->data[total];
		j->lens[k] = &j->len[total];
		j->bad[k] = q->rows.n_bad > 0 ? q->rows.bad : NULL;
		/* the bytes resolve_inputs found: frames or pinned cache entries */
		for (int i = 2; i < q->n_parts; i++, total++)
		{
			j->data[total] = q->rows.data != NULL ? q->rows.data[i - 2] :
				zmq_msg_data(&q->parts[i]);
			j->len[total] = q->rows.data != NULL ? q->rows.len[i - 2] :
				zmq_msg_size(&q->parts[i]);
		}
	}
	return j;

fail:
	log_error("out of memory running %d requests: dropped them", n);
	for (int k = 0; items != NULL && k < n; k++)
		batch_item_destroy(&items[k]);
	free(items);
	job_free(j);
	return NULL;
}

/* Runs job j (on the compute thread, or the caller's without one). */
static void
job_run(server *s, job *j)
{
	if (j->kind == JOB_GROUP)
		group_compute(s, j);
	else if (j->kind == JOB_PUT)
		j->rc = store_model(s, j->req, zmq_msg_data(&j->payload),
							zmq_msg_size(&j->payload), &j->sqlstate,
							j->err, sizeof(j->err));
	else
	{
		j->sqlstate = PGINFER_SQLSTATE_INTERNAL;
		j->rc = load_model(s, j->req->model->model, &j->load_ms, &j->sqlstate,
						   j->err, sizeof(j->err), &j->probe);
	}
}

/*
 * Reports a finished group to the metrics endpoint (metrics.h) before its
 * replies leave: the run and its model calls when it ran, and each request
 * not cancelled (queue time, rows, rows that succeeded, or a failure).
 */
static void
group_metrics(const job *j, int ran)
{
	int			failed = !ran || j->rc != 0 || j->fr == NULL;
	int			total = 0,
				off = 0;

	for (int k = 0; k < j->n_items; k++)
		total += (int) j->reqs[k]->run->n_row_ids;
	if (ran)
		metrics_execution_done((double) (now_us() - j->started_us) / 1e6, total);
	for (int k = 0; !failed && k < run_calls(j, j->fr); k++)
	{
		const state_sample *c = run_call(j, j->fr, k);

		metrics_model_call(c->file, c->rows, c->ms);
	}
	for (int k = 0; k < j->n_items; k++)
	{
		int			nk = (int) j->reqs[k]->run->n_row_ids;
		int			n_ok = 0;

		for (int i = 0; !failed && i < nk; i++)
			n_ok += j->fr->rows[off + i].ok ? 1 : 0;
		if (j->cancelled == NULL || !j->cancelled[k])
			metrics_request_done(ran ? group_queue_ms(j, k) / 1000.0 : -1, nk, n_ok,
								 failed);
		off += nk;
	}
}

/*
 * Answers a finished job (on the loop's thread): each request of a group
 * gets its reply (MSG_ERROR 57P01 for all with shutdown set and a group
 * not run), a load its PONG or MSG_ERROR; then frees j, which releases
 * its pins.
 */
static void
job_complete(server *s, job *j, int shutdown)
{
	char		hint[1024];

	if (j->kind != JOB_GROUP)
	{
		server_reply *r;

		if (shutdown)
		{
			j->rc = -1;
			j->sqlstate = FRAGMENT_SQLSTATE_SHUTDOWN;
			snprintf(j->err, sizeof(j->err), "the worker is shutting down; the model was not %s",
					 j->kind == JOB_PUT ? "stored" : "loaded");
			j->probe.sqlstate[0] = '\0';
		}
		if (j->kind == JOB_LOAD)
		{
			model_cache_pin(s->cache, j->req->model->model->file, -1);
			(void) watch_across_stop(s, &j->watch);
		}
		r = j->rc == 0 ? pong_reply(s, j->req->request_id) :
			j->kind == JOB_LOAD ?
			load_error_reply(s, j->req, j->sqlstate, j->err, &j->probe) :
			error_reply(j->req->request_id, j->req->client, j->sqlstate, j->err,
						j->kind == JOB_PUT ? put_hint(j->sqlstate) :
						hint_for(s, j->sqlstate, hint, sizeof(hint)));
		if (r != NULL && send_reply(s, &j->peer, r) != 0)
			log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
		server_reply_destroy(&r);
	}
	else
	{
		server_reply **replies = calloc((size_t) j->n_items, sizeof(*replies));

		if (replies == NULL)
			log_error("out of memory answering %d requests: dropped them", j->n_items);
		else
		{
			if (shutdown)
				for (int k = 0; k < j->n_items; k++)
					replies[k] = error_reply(j->reqs[k]->request_id, j->reqs[k]->client, FRAGMENT_SQLSTATE_SHUTDOWN,
											 "the worker is shutting down; the request was not run",
											 hint_for(s, FRAGMENT_SQLSTATE_SHUTDOWN, NULL, 0));
			else if (group_finish(s, j, replies) != 0)
				log_error("out of memory building a reply");
			group_metrics(j, !shutdown);
			for (int k = 0; k < j->n_items; k++)
			{
				queued_request *q = j->items[k]->data;

				/* A request cancelled while it ran gets no reply. */
				if (j->cancelled != NULL && j->cancelled[k])
				{
					log_info("request %llu: its result is dropped, as it was cancelled while it ran" FROM_FMT,
							 (unsigned long long) j->reqs[k]->request_id,
							 FROM_ARGS(j->reqs[k]->client));
					server_reply_destroy(&replies[k]);
					continue;
				}
				if (replies[k] != NULL && send_reply(s, &q->parts[0], replies[k]) != 0)
					log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
				server_reply_destroy(&replies[k]);
			}
			free(replies);
		}
	}
	job_free(j);
	state_changed(s);
}

/* The compute thread: runs the jobs that come over its pipe until a NULL one. */
static void *
compute_main(void *arg)
{
	server	   *s = arg;

	for (;;)
	{
		job		   *j = NULL;

		if (zmq_recv(s->pipe_exec, &j, sizeof(j), 0) != (int) sizeof(j))
		{
			if (zmq_errno() == EINTR)
				continue;
			log_error("compute thread: pipe failed: %s", zmq_strerror(zmq_errno()));
			break;
		}
		if (j == NULL)
			break;
		job_run(s, j);
		while (zmq_send(s->pipe_exec, &j, sizeof(j), 0) < 0 && zmq_errno() == EINTR)
			;
	}
	return NULL;
}

/* Most model specs group_may_run looks at; a request with more just runs. */
#define GATE_MAX_SPECS 64

/*
 * How long a group may wait for memory before younger groups stop
 * starting (group_may_run): a steady stream of requests for a resident
 * model would otherwise keep it pinned, and the waiting group would never
 * run.  Once they stop, the pins drain, and the oldest group runs
 * (start_next_job).  Microseconds.
 */
#define GATE_AGING_US 2000000

/*
 * The model specs of the queued request of it (every fragment, its
 * chained stages and more_fragments, as pin_run) into specs[0..*n).
 * Returns 0, or -1 when there are more than GATE_MAX_SPECS or none to
 * look at.
 */
static int
item_specs(const batch_item *it, const Pginfer__ModelSpec **specs, int *n)
{
	const queued_request *q = it->data;
	const Pginfer__RunFragment *run;

	*n = 0;
	if (q == NULL || q->header == NULL || (run = q->header->run) == NULL)
		return -1;
	for (size_t f = 0; f <= run->n_more_fragments; f++)
	{
		const Pginfer__Fragment *fr = request_fragment_at(run, f);

		for (; fr != NULL; fr = fr->next)
			for (size_t m = 0; m < fr->n_models; m++)
			{
				if (*n == GATE_MAX_SPECS)
					return -1;
				specs[(*n)++] = fr->models[m];
			}
	}
	return 0;
}

/*
 * The queue's gate (batcher_gate): whether the group led by lead may run
 * now as far as memory goes, ie unless its models fit the cap but only
 * once resident models that other queued or running work pins are
 * released (model_cache_can_load 0).  A group that never fits runs, and
 * fails with 53200.
 */
static int
group_may_run(void *ctx, const batch_item *lead)
{
	server	   *s = ctx;
	const Pginfer__ModelSpec *specs[GATE_MAX_SPECS];
	int			n;

	if (model_cache_capacity(s->cache) == 0 || item_specs(lead, specs, &n) != 0)
		return 1;
	if (model_cache_can_load(s->cache, specs, n) == 0)
	{
		/* the scan goes oldest first: remember the oldest held back */
		if (s->gate_held_us == 0 || lead->arrival_us < s->gate_held_us)
			s->gate_held_us = lead->arrival_us;
		return 0;
	}
	/* an older group has waited too long: let the pins drain for it */
	return !(s->gate_held_us != 0 && lead->arrival_us > s->gate_held_us &&
			 s->gate_now_us - s->gate_held_us > GATE_AGING_US);
}

/* Starts a scan of the queue through group_may_run at now. */
static void
gate_scan_begin(server *s, int64_t now)
{
	s->gate_now_us = now;
	s->gate_held_us = 0;
}

/*
 * Before the compute thread takes the group led by lead: evicts now what
 * its loads will need room for (model_cache_reserve), as requests queued
 * while it runs (between its stages, say) could pin that room away.  With
 * idle (every queued group waits, nothing runs), models that only queued
 * work pins may go too (model_cache_reserve_idle).
 */
static void
reserve_room(server *s, const batch_item *lead, int idle)
{
	const Pginfer__ModelSpec *specs[GATE_MAX_SPECS];
	int			n;

	if (model_cache_capacity(s->cache) == 0 || item_specs(lead, specs, &n) != 0)
		return;
	if (idle)
		(void) model_cache_reserve_idle(s->cache, specs, n);
	else
		(void) model_cache_reserve(s->cache, specs, n);
}

/*
 * Microseconds until the next group the compute thread should take is
 * ready (batcher_wait_us, skipping groups that wait for memory); -1 when
 * none.  When every queued group waits for memory and no job runs or
 * waits, the pins are queued work's only: the oldest group's wait counts
 * then (it runs, see start_next_job).
 */
static int64_t
queue_wait_us(server *s, int64_t now)
{
	int64_t		w;

	gate_scan_begin(s, now);
	w = batcher_wait_gated(s->queue, now, group_may_run, s);
	if (w < 0 && s->running == NULL && s->loads == NULL)
		w = batcher_wait_us(s->queue, now);
	return w;
}

/*
 * Hands the next job to the compute thread when it is idle: a pending
 * load first, else the next ready group from the queue (force: any).  A
 * group whose models would need room that queued or running work holds
 * waits (group_may_run), and the oldest group that may run goes first; a
 * waiting group is looked at again each time a job finishes.  When every
 * queued group waits and nothing runs, only queued work pins the room:
 * the oldest ready group runs, evicting models that only queued work
 * needs (they are loaded again in their turn), so that two groups that
 * each wait for a model the other pins do not fail; a group that never
 * fits still fails with 53200.
 */
static void
start_next_job(server *s, int force)
{
	job		   *j = NULL;
	batch_item **items;
	int			n_items;
	int			idle = 0;
	int			sent;

	if (s->running != NULL)
		return;
	if (s->loads != NULL)
	{
		j = s->loads;
		s->loads = j->next;
		j->next = NULL;
	}
	else
	{
		int64_t		now = now_us();
		int			n;

		gate_scan_begin(s, now);
		n = batcher_next_gated(s->queue, now, force, group_may_run, s,
							   &items, &n_items);
		if (n == 0 && batcher_length(s->queue) > 0 &&
			(gate_scan_begin(s, now),
			 batcher_wait_gated(s->queue, now, group_may_run, s) < 0))
		{
			n = batcher_next(s->queue, now, force, &items, &n_items);
			idle = 1;
			if (n > 0)
				log_info("every queued request waits for memory that only queued work holds: running the oldest");
		}
		if (n < 0)
			log_error("out of memory taking a group from the queue");
		if (n <= 0)
			return;
		refuse_unread_clients(s, items, &n_items);
		if (n_items == 0)
		{
			free(items);
			state_changed(s);
			return;
		}
		if (n_items > 1)
			log_debug("running %d queued requests as one batch", n_items);
		reserve_room(s, items[0], idle);
		j = group_job_new(items, n_items);
		if (j == NULL)
			return;
		for (int k = 0; k < n_items; k++)
			j->est_ms += run_estimate(s, j->reqs[k]->run, j->items[k]->n_rows);
	}
	j->started_us = now_us();
	watch_begin(s, &j->watch);
	s->running = j;
	while ((sent = zmq_send(s->pipe_loop, &j, sizeof(j), 0)) < 0 &&
		   zmq_errno() == EINTR)
		;
	if (sent != (int) sizeof(j))
	{
		/* Cannot happen with an inproc PAIR short of memory: run it here. */
		log_warn("compute pipe: %s; running the job on the loop", zmq_strerror(zmq_errno()));
		job_run(s, j);
		s->running = NULL;
		job_complete(s, j, 0);
		return;
	}
	state_changed(s);
}

/* Takes a finished job back from the compute thread and answers it. */
static void
collect_job(server *s)
{
	job		   *j = NULL;

	while (zmq_recv(s->pipe_loop, &j, sizeof(j), 0) < 0)
		if (zmq_errno() != EINTR)
		{
			log_error("compute pipe: %s", zmq_strerror(zmq_errno()));
			return;
		}
	s->running = NULL;
	if (j != NULL)
		job_complete(s, j, 0);
}

/*
 * Reads every message ready on the socket (at most max of them) and
 * dispatches each.  Returns 0, or -1 with err when the socket fails.
 */
static int
drain_socket(server *s, zmq_msg_t **parts, int *cap, int max,
			 char *err, size_t errlen)
{
	for (int m = 0; m < max; m++)
	{
		int			n = 0;
		int64_t		dropped = 0;

		zmq_msg_init(&(*parts)[0]);
		if (zmq_msg_recv(&(*parts)[0], s->sock, ZMQ_DONTWAIT) < 0)
		{
			zmq_msg_close(&(*parts)[0]);
			if (zmq_errno() == EAGAIN || zmq_errno() == EINTR)
				return 0;
			snprintf(err, errlen, "zmq_msg_recv failed: %s", zmq_strerror(zmq_errno()));
			return -1;
		}
		if (recv_parts(s, parts, cap, &n, &dropped) != 0)
			log_warn("dropped a request of %d or more frames: %s", n,
					 zmq_strerror(zmq_errno()));
		else if (client_over_limit(s, *parts, n))
			;
		else if (dropped > 0)
			refuse_too_many(s, *parts, (int64_t) n - 2 + dropped);
		else
			dispatch_message(s, *parts, n);
		for (int i = 0; i < n; i++)
			zmq_msg_close(&(*parts)[i]);
	}
	return 0;
}

/* Messages read from the socket between two loop turns, at most. */
#define DRAIN_MAX 1024

/* Starts the compute thread with every signal blocked in it. */
static int
start_compute_thread(server *s, char *err, size_t errlen)
{
	sigset_t	all,
				old;
	int			rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&s->thread, NULL, compute_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		snprintf(err, errlen, "could not start the compute thread: %s", strerror(rc));
		return -1;
	}
	s->thread_started = 1;
	return 0;
}

/* Stops the compute thread (after its job, which the caller collects). */
static void
stop_compute_thread(server *s)
{
	job		   *none = NULL;

	if (!s->thread_started)
		return;
	while (zmq_send(s->pipe_loop, &none, sizeof(none), 0) < 0 && zmq_errno() == EINTR)
		;
	pthread_join(s->thread, NULL);
	s->thread_started = 0;
}

/*
 * Answers every queued request and model load with 57P01 (the worker is
 * stopping: they will not run).  Returns how many jobs were answered.
 */
static int
answer_unrun(server *s)
{
	batch_item **items;
	int			n_items;
	int			n = 0;

	while (s->loads != NULL)
	{
		job		   *j = s->loads;

		s->loads = j->next;
		j->next = NULL;
		job_complete(s, j, 1);
		n++;
	}
	while (batcher_next(s->queue, now_us(), 1, &items, &n_items) > 0)
	{
		job		   *j = group_job_new(items, n_items);

		if (j != NULL)
			job_complete(s, j, 1);
		n++;
	}
	return n;
}

/*
 * How long a stopping worker keeps its connections after its last answer,
 * in ms, and how long at most in all.  A backend's socket (ZMQ_IMMEDIATE)
 * drops the messages it has not read when the connection closes: without
 * a moment, the backend waiting for one of the 57P01 answers would mostly
 * see the connection lost instead, and read none of the others it holds
 * (docs/placement.md, "A worker lost mid-query").  Requests that come
 * meanwhile (sent before the backend knew, or there but not read yet, as
 * when the worker was stopped, SIGSTOP, with them on their way) are
 * answered 57P01 too, not lost with the connection.
 */
#define SERVER_SHUTDOWN_GRACE_MS 100
#define SERVER_SHUTDOWN_MAX_MS 1000

/*
 * A stopping worker's last moments: answers what is queued with 57P01,
 * then reads the socket and answers each request that comes the same way
 * (a ping too: dispatch_message, s->stopping; a cancel is still obeyed),
 * until SERVER_SHUTDOWN_GRACE_MS have passed since the last answer to a
 * request (or since the start).  It reads for SERVER_SHUTDOWN_MAX_MS at
 * most, then only waits out the last answer's grace.
 */
static void
shutdown_drain(server *s, zmq_msg_t **parts, int *cap)
{
	int64_t		start = now_us();
	int64_t		last = start;
	uint64_t	refused = s->stopping_answers;

	s->stopping = 1;
	log_info("stopping: the requests queued, and those that come meanwhile, are answered 57P01 (not run)");
	for (;;)
	{
		zmq_pollitem_t item = {s->sock, 0, ZMQ_POLLIN, 0};
		int64_t		now;
		int64_t		until;
		int			reading;
		int			n;
		char		derr[256];

		if (answer_unrun(s) > 0 || s->stopping_answers != refused)
			last = now_us();
		refused = s->stopping_answers;
		now = now_us();
		until = last + SERVER_SHUTDOWN_GRACE_MS * 1000;
		if (now >= until)
			break;
		reading = now < start + SERVER_SHUTDOWN_MAX_MS * 1000;
		if (reading && until > start + SERVER_SHUTDOWN_MAX_MS * 1000)
			until = start + SERVER_SHUTDOWN_MAX_MS * 1000;
		/* no item: zmq_poll only waits */
		n = zmq_poll(&item, reading ? 1 : 0, (long) ((until - now + 999) / 1000));
		if (n < 0 && zmq_errno() != EINTR)
			break;
		if (n > 0 && drain_socket(s, parts, cap, DRAIN_MAX, derr, sizeof(derr)) != 0)
		{
			log_warn("reading the last requests: %s", derr);
			break;
		}
	}
	answer_unrun(s);
}

/* How long the worker is idle before release_idle_memory frees memory. */
#define SERVER_IDLE_RELEASE_US ((int64_t) 2 * 1000 * 1000)

/*
 * Once nothing has run or waited for SERVER_IDLE_RELEASE_US, frees the
 * engine's cached tensor buffers (up to 512 MiB that runs keep for the
 * next, ie_tensor_cache_clear) and gives the heap's free memory back to the
 * system (malloc_trim(3)), once an idle spell: an idle worker holds its
 * models, its input cache and little else.  The next request allocates
 * its buffers again.
 */
static void
release_idle_memory(server *s, int64_t now)
{
	size_t		held;

	if (s->running != NULL || batcher_length(s->queue) > 0)
	{
		s->last_busy_us = now;
		s->idle_trimmed = false;
		return;
	}
	if (s->idle_trimmed || now - s->last_busy_us < SERVER_IDLE_RELEASE_US)
		return;
	s->idle_trimmed = true;
	held = ie_tensor_cache_bytes();
	ie_tensor_cache_clear();
	malloc_trim(0);
	if (held > 0)
		log_debug("idle for %lld ms: freed %zu bytes of the engine's cached tensor buffers and trimmed the heap",
				  (long long) (SERVER_IDLE_RELEASE_US / 1000), held);
}

/* Serves until *stop is set; see server.h. */
int
server_run(server *s, volatile sig_atomic_t *stop, int poll_ms,
		   char *err, size_t errlen)
{
	int			cap = 16;
	zmq_msg_t  *parts = malloc((size_t) cap * sizeof(zmq_msg_t));
	int			rc = -1;

	if (parts == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->stop = stop;
	if (start_compute_thread(s, err, errlen) != 0)
	{
		free(parts);
		s->stop = NULL;
		return -1;
	}
	while (!*stop)
	{
		zmq_pollitem_t items_poll[2] = {
			{s->sock, 0, ZMQ_POLLIN, 0},
			{s->pipe_loop, 0, ZMQ_POLLIN, 0}
		};
		int64_t		now = now_us();
		int64_t		wait_us = s->running == NULL ? queue_wait_us(s, now) : -1;
		int			timeout = poll_ms;
		int			state_ms = state_pub_wait_ms(s->pub, now);
		int			n;

		/* Wake up when the oldest queued group has waited long enough. */
		if (wait_us >= 0 && wait_us < (int64_t) timeout * 1000)
			timeout = (int) ((wait_us + 999) / 1000);
		/* ... or when a state message is due. */
		if (state_ms < timeout)
			timeout = state_ms;
		n = zmq_poll(items_poll, 2, timeout);
		if (s->hangups_seen != server_hangups)
		{
			s->hangups_seen = server_hangups;
			log_info("SIGHUP ignored: the worker reads its settings (--config and its flags) at start only; restart it to change them");
		}
		if (n < 0)
		{
			if (zmq_errno() == EINTR)
				continue;
			snprintf(err, errlen, "zmq_poll failed: %s", zmq_strerror(zmq_errno()));
			goto fail;
		}
		if (n > 0 && (items_poll[0].revents & ZMQ_POLLIN) &&
			drain_socket(s, &parts, &cap, DRAIN_MAX, err, errlen) != 0)
			goto fail;
		if (n > 0 && (items_poll[1].revents & ZMQ_POLLIN))
			collect_job(s);
		if (*stop)
			break;
		/* One job at a time; the socket is read while it runs. */
		start_next_job(s, 0);
		release_idle_memory(s, now_us());
		if (state_pub_due(s->pub, now_us()))
			publish_state(s);
	}
	rc = 0;

fail:
	/* The running job stops between rows; answer it. */
	if (s->running != NULL)
	{
		s->running->abort = 1;
		collect_job(s);
	}
	/* What is still queued will not run: say so to each peer. */
	if (rc == 0)
		shutdown_drain(s, &parts, &cap);
	else
		answer_unrun(s);
	stop_compute_thread(s);
	s->stop = NULL;
	free(parts);
	return rc;
}
