/*
 * server.c
 *	  The infer-worker request loop and dispatch (see server.h).
 *
 * server_run() polls the ROUTER socket with a timeout (poll_ms, or less
 * when a queued group becomes ready sooner) so that a stop flag set by a
 * signal handler is seen promptly, drains every message that is ready,
 * answers the quick ones through server_handle() and queues run-fragment
 * requests, with their ZeroMQ parts, in the batcher; then it runs at most
 * one ready group (server_run_group) and goes back to the socket.  Payload
 * frames are read in place (no copy), also while queued; reply buffers are
 * given to ZeroMQ with zmq_msg_init_data(), which frees them once sent.
 *
 * Threading: single-threaded (see server.h).
 */
#include "worker/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/protocol.h"
#include "worker/batcher.h"
#include "worker/fragment.h"
#include "worker/log.h"
#include "worker/model_cache.h"

struct server
{
	void	   *ctx;			/* ZeroMQ context, or NULL without a socket */
	void	   *sock;			/* ROUTER */
	char	   *endpoint;		/* as bound (port resolved) */
	char	   *model_dir;
	model_cache *cache;
	int64_t		max_pixels;
	char		worker_id[128];
	uint64_t	requests_served;	/* MSG_RUN_FRAGMENT requests answered */
	uint64_t	batches_run;	/* fragment runs (groups of requests) */
	uint64_t	rows_run;		/* rows in them */
	uint64_t	merged_batches; /* runs that merged several requests */
	uint64_t	model_runs;		/* model calls of PREDICT/CLASSIFY */
	double		ms_per_row[8];	/* recent compute ms per row, by fragment kind */
	int			max_batch;
	batcher    *queue;			/* queued run-fragment requests */
	volatile sig_atomic_t *stop;	/* server_run's stop flag, or NULL */
};

/* A queued run-fragment request: its ZeroMQ parts and unpacked header. */
typedef struct queued_request
{
	zmq_msg_t  *parts;			/* [routing id][header][rows...] */
	int			n_parts;
	Pginfer__Header *header;
} queued_request;

/* Frees a queued_request (the batcher's free_data). */
static void
queued_request_free(void *data)
{
	queued_request *q = data;

	if (q == NULL)
		return;
	for (int i = 0; i < q->n_parts; i++)
		zmq_msg_close(&q->parts[i]);
	free(q->parts);
	if (q->header != NULL)
		pginfer__header__free_unpacked(q->header, NULL);
	free(q);
}

/* Name of a message kind, for messages and logs. */
const char *
server_kind_name(Pginfer__MsgKind kind)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&pginfer__msg_kind__descriptor, kind);

	return v != NULL ? v->name : "MSG_(unknown kind)";
}

/* New server with the default frame limit; see server.h. */
server *
server_new(const server_opts *opts, char *err, size_t errlen)
{
	return server_new_limited(opts, 0, err, errlen);
}

/* New server; see server.h. */
server *
server_new_limited(const server_opts *opts, int64_t max_message_bytes,
				   char *err, size_t errlen)
{
	server	   *s = NULL;
	char		host[64] = "localhost";
	char		last[256];
	size_t		last_len = sizeof(last);
	int			linger = 200;	/* ms */
	int64_t		max_msg;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->max_pixels = opts->max_pixels > 0 ? opts->max_pixels : PGINFER_DEFAULT_MAX_PIXELS;
	s->max_batch = opts->max_batch > 0 ? opts->max_batch : SERVER_DEFAULT_MAX_BATCH;
	s->queue = batcher_new(s->max_batch, opts->max_queue_delay_us >= 0 ?
						   opts->max_queue_delay_us : SERVER_DEFAULT_QUEUE_DELAY_US);
	if (s->queue == NULL)
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
	max_msg = max_message_bytes > 0 ? max_message_bytes :
		SERVER_DEFAULT_MAX_MESSAGE_BYTES;
	if (zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &max_msg, sizeof(max_msg)) != 0)
	{
		snprintf(err, errlen, "could not set ZMQ_MAXMSGSIZE: %s", zmq_strerror(errno));
		goto fail;
	}
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
	return s;

fail:
	server_destroy(&s);
	return NULL;
}

/* Closes the socket and context, frees the cache; sets *sp to NULL. */
void
server_destroy(server **sp)
{
	server	   *s;

	if (sp == NULL || *sp == NULL)
		return;
	s = *sp;
	/* Queued requests hold ZeroMQ messages: close them before the context. */
	batcher_destroy(&s->queue);
	if (s->sock != NULL)
		zmq_close(s->sock);
	if (s->ctx != NULL)
		zmq_ctx_term(s->ctx);
	batcher_destroy(&s->queue);
	model_cache_destroy(&s->cache);
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

/* Checks version, kind and frame count of a request header; see server.h. */
int
server_check_header(const Pginfer__Header *h, int n_payload,
					const char **sqlstate, char *err, size_t errlen)
{
	int			want = 0;

	*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	if (h->version != PGINFER_PROTOCOL_VERSION)
	{
		snprintf(err, errlen,
				 "protocol version mismatch: the request uses version %u, this worker speaks version %d",
				 h->version, PGINFER_PROTOCOL_VERSION);
		return -1;
	}
	switch (h->kind)
	{
		case PGINFER__MSG_KIND__MSG_PING:
		case PGINFER__MSG_KIND__MSG_CANCEL:
			break;
		case PGINFER__MSG_KIND__MSG_RUN_FRAGMENT:
			if (h->run == NULL || h->run->fragment == NULL)
			{
				snprintf(err, errlen, "%s request without a fragment",
						 server_kind_name(h->kind));
				return -1;
			}
			if (h->run->n_row_ids > SERVER_MAX_ROWS)
			{
				*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
				snprintf(err, errlen, "%s request with %zu rows, more than the %d one request may carry",
						 server_kind_name(h->kind), h->run->n_row_ids, SERVER_MAX_ROWS);
				return -1;
			}
			want = (int) h->run->n_row_ids;
			break;
		case PGINFER__MSG_KIND__MSG_LOAD_MODEL:
		case PGINFER__MSG_KIND__MSG_UNLOAD_MODEL:
			if (h->model == NULL || h->model->model == NULL)
			{
				snprintf(err, errlen, "%s request without a model",
						 server_kind_name(h->kind));
				return -1;
			}
			break;
		default:
			snprintf(err, errlen, "a worker does not accept %s messages",
					 server_kind_name(h->kind));
			return -1;
	}
	if (n_payload != want)
	{
		snprintf(err, errlen, "%s request has %d payload frames, expected %d",
				 server_kind_name(h->kind), n_payload, want);
		return -1;
	}
	return 0;
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

/* MSG_ERROR reply; logs the error at WARN. */
static server_reply *
error_reply(uint64_t request_id, const char *sqlstate, const char *message,
			const char *hint)
{
	size_t		len = 0;
	uint8_t    *buf;

	log_warn("request %llu: error %s: %s", (unsigned long long) request_id,
			 sqlstate, message);
	buf = server_pack_error(request_id, sqlstate, message, NULL, hint, &len);
	return reply_with_header(buf, len);
}

/* Slot of ms_per_row for a fragment kind. */
static int
kind_slot(Pginfer__FragmentKind kind)
{
	return kind >= 0 && kind < 8 ? (int) kind : 0;
}

/*
 * Estimated milliseconds of queued work: each queued request's rows times
 * the recent compute time per row of its fragment kind (0 for a kind not
 * run yet).
 */
static double
backlog_ms(const server *s)
{
	double		ms = 0;

	for (int i = 0; i < batcher_length(s->queue); i++)
	{
		const batch_item *it = batcher_item(s->queue, i);
		const queued_request *q = it->data;

		ms += it->n_rows * s->ms_per_row[kind_slot(q->header->run->fragment->kind)];
	}
	return ms;
}

/* MSG_PONG reply carrying the worker's state. */
static server_reply *
pong_reply(server *s, uint64_t request_id)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__WorkerState st = PGINFER__WORKER_STATE__INIT;
	int			n = model_cache_count(s->cache);
	char	  **names = calloc(n > 0 ? (size_t) n : 1, sizeof(char *));
	uint8_t    *buf;
	size_t		len = 0;

	if (names == NULL)
		return NULL;
	for (int i = 0; i < n; i++)
		names[i] = (char *) model_cache_file(s->cache, i);
	st.worker_id = s->worker_id;
	st.queue_length = (uint32_t) batcher_length(s->queue);
	st.backlog_ms = backlog_ms(s);
	st.n_resident_models = (size_t) n;
	st.resident_models = names;
	st.host_memory_used = rss_bytes();
	st.device = "cpu";
	st.requests_served = s->requests_served;
	st.batches_run = s->batches_run;
	st.rows_run = s->rows_run;
	st.merged_batches = s->merged_batches;
	st.model_runs = s->model_runs;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PONG;
	h.request_id = request_id;
	h.state = &st;
	buf = pack_header(&h, &len);
	free(names);
	return reply_with_header(buf, len);
}

/* Hint for a request-level error, by SQLSTATE. */
static const char *
hint_for(const server *s, const char *sqlstate, char *buf, size_t buflen)
{
	if (strcmp(sqlstate, PGINFER_SQLSTATE_NO_MODEL) == 0)
	{
		snprintf(buf, buflen,
				 "Copy the file into the worker's model directory (%s), or fix the model's file name.",
				 s->model_dir);
		return buf;
	}
	if (strcmp(sqlstate, FRAGMENT_SQLSTATE_SHUTDOWN) == 0)
		return "Run the query again once the worker is back, or register another worker with infer.add_worker().";
	return NULL;
}

/*
 * MSG_RESULT for one request: rows [off, off + n) of each of fr's
 * fragments (fr holds fr->n_fragments blocks of total rows), with their
 * value arrays handed over (taken out of fr) as the reply's frames.  NULL
 * when memory runs out.
 */
static server_reply *
result_reply(const Pginfer__Header *req, fragment_result *fr, int total,
			 int off, int n)
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
 * The group key of a run-fragment request; see server.h.  With
 * more_fragments, each of them follows, packed, with its length before
 * it (so that no two lists of fragments give the same bytes).
 */
uint8_t *
server_group_key(const Pginfer__RunFragment *run, size_t *len)
{
	size_t		n = run->fragment != NULL ?
		pginfer__fragment__get_packed_size(run->fragment) : 0;
	size_t		total = n + sizeof(int64_t);
	uint8_t    *key;
	int64_t		mp = run->max_pixels;

	for (size_t f = 0; f < run->n_more_fragments; f++)
		if (run->more_fragments[f] != NULL)
			total += sizeof(uint64_t) +
				pginfer__fragment__get_packed_size(run->more_fragments[f]);
	key = malloc(total);
	if (key == NULL)
		return NULL;
	if (run->fragment != NULL)
		n = pginfer__fragment__pack(run->fragment, key);
	memcpy(key + n, &mp, sizeof(mp));
	n += sizeof(mp);
	for (size_t f = 0; f < run->n_more_fragments; f++)
	{
		uint64_t	flen;

		if (run->more_fragments[f] == NULL)
			continue;
		flen = pginfer__fragment__get_packed_size(run->more_fragments[f]);
		memcpy(key + n, &flen, sizeof(flen));
		n += sizeof(flen);
		n += pginfer__fragment__pack(run->more_fragments[f], key + n);
	}
	*len = n;
	return key;
}

/* Runs n requests as one fragment run and splits the result; see server.h. */
int
server_run_group(server *s, const Pginfer__Header *const *reqs,
				 const void *const *const *frames,
				 const size_t *const *frame_len, int n,
				 server_reply **replies)
{
	Pginfer__RunFragment merged;
	fragment_result *fr = NULL;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[1024],
				hint[512];
	uint64_t   *ids = NULL;
	const void **rows = NULL;
	size_t	   *lens = NULL;
	int			total = 0,
				off = 0,
				rc = 0;

	for (int k = 0; k < n; k++)
	{
		replies[k] = NULL;
		total += (int) reqs[k]->run->n_row_ids;
	}
	ids = calloc(total > 0 ? (size_t) total : 1, sizeof(*ids));
	rows = calloc(total > 0 ? (size_t) total : 1, sizeof(*rows));
	lens = calloc(total > 0 ? (size_t) total : 1, sizeof(*lens));
	if (ids == NULL || rows == NULL || lens == NULL)
	{
		sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, sizeof(err), "out of memory for a batch of %d rows", total);
		goto request_error;
	}
	for (int k = 0; k < n; k++)
	{
		const Pginfer__RunFragment *run = reqs[k]->run;

		for (size_t i = 0; i < run->n_row_ids; i++, off++)
		{
			ids[off] = run->row_ids[i];
			rows[off] = frames[k][i];
			lens[off] = frame_len[k][i];
		}
	}
	/* The members share fragment and pixel limit: the first one speaks for all. */
	merged = *reqs[0]->run;
	merged.n_row_ids = (size_t) total;
	merged.row_ids = ids;
	if (fragment_run(s->cache, &merged, rows, lens, total, s->max_pixels,
					 s->max_batch, s->stop, &fr, &sqlstate, err, sizeof(err)) != 0)
		goto request_error;

	s->batches_run++;
	s->rows_run += (uint64_t) total;
	if (total > 0)
	{
		/* Moving average of the cost of a row, for the backlog estimate. */
		double	   *avg = &s->ms_per_row[kind_slot(reqs[0]->run->fragment->kind)];
		double		per = fr->compute_ms / total;

		*avg = *avg > 0 ? 0.8 * *avg + 0.2 * per : per;
	}
	s->model_runs += (uint64_t) fr->model_runs;
	if (n > 1)
	{
		s->merged_batches++;
		log_info("merged %d requests (%d rows) into one %s run of %.1f ms (%d model calls)",
				 n, total, fragment_kind_name(reqs[0]->run->fragment->kind),
				 fr->compute_ms, fr->model_runs);
	}
	off = 0;
	for (int k = 0; k < n; k++)
	{
		int			nk = (int) reqs[k]->run->n_row_ids;
		int			n_ok = 0;

		for (int i = 0; i < nk; i++)
			n_ok += fr->rows[off + i].ok ? 1 : 0;
		replies[k] = result_reply(reqs[k], fr, total, off, nk);
		if (replies[k] == NULL)
			rc = -1;
		else
			s->requests_served++;
		log_info("request %llu: %s over %d rows (%d ok, %d failed) in %.1f ms",
				 (unsigned long long) reqs[k]->request_id,
				 fragment_kind_name(reqs[k]->run->fragment->kind), nk, n_ok,
				 nk - n_ok, fr->compute_ms);
		off += nk;
	}
	goto done;

request_error:
	for (int k = 0; k < n; k++)
	{
		replies[k] = error_reply(reqs[k]->request_id, sqlstate, err,
								 hint_for(s, sqlstate, hint, sizeof(hint)));
		if (replies[k] == NULL)
			rc = -1;
	}

done:
	fragment_result_destroy(&fr);
	free(ids);
	free(rows);
	free(lens);
	return rc;
}

/* MSG_RUN_FRAGMENT without queueing: a group of one. */
static server_reply *
run_reply(server *s, const Pginfer__Header *req, const void *const *frames,
		  const size_t *frame_len)
{
	server_reply *r = NULL;

	server_run_group(s, &req, &frames, &frame_len, 1, &r);
	return r;
}

/* MSG_LOAD_MODEL / MSG_UNLOAD_MODEL: PONG on success, ERROR otherwise. */
static server_reply *
model_reply(server *s, const Pginfer__Header *req)
{
	const Pginfer__ModelSpec *spec = req->model->model;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[1024],
				hint[512];

	if (req->kind == PGINFER__MSG_KIND__MSG_UNLOAD_MODEL)
	{
		if (model_cache_unload(s->cache, spec->file) == 0)
			log_info("request %llu: unload of \"%s\", which is not loaded",
					 (unsigned long long) req->request_id, spec->file);
		return pong_reply(s, req->request_id);
	}
	if (model_cache_get(s->cache, spec, &sqlstate, err, sizeof(err)) == NULL)
		return error_reply(req->request_id, sqlstate, err,
						   hint_for(s, sqlstate, hint, sizeof(hint)));
	if (spec->labels_file[0] != '\0')
	{
		const char *const *dict;
		int			dict_len;

		if (model_cache_get_dict(s->cache, spec->labels_file, &dict, &dict_len,
								 &sqlstate, err, sizeof(err)) != 0)
			return error_reply(req->request_id, sqlstate, err,
							   hint_for(s, sqlstate, hint, sizeof(hint)));
	}
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
	char		err[512];
	server_reply *r = NULL;

	*out = NULL;
	req = pginfer__header__unpack(NULL, header_len, header);
	if (req == NULL)
	{
		snprintf(err, sizeof(err),
				 "malformed request: the header frame (%zu bytes) is not a pginfer.Header",
				 header_len);
		r = error_reply(0, PGINFER_SQLSTATE_PROTOCOL, err, NULL);
		goto done;
	}
	log_debug("request %llu: %s, %d payload frames",
			  (unsigned long long) req->request_id, server_kind_name(req->kind),
			  n_frames);
	if (server_check_header(req, n_frames, &sqlstate, err, sizeof(err)) != 0)
	{
		r = error_reply(req->request_id, sqlstate, err,
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
			r = run_reply(s, req, frames, frame_len);
			break;
		case PGINFER__MSG_KIND__MSG_LOAD_MODEL:
		case PGINFER__MSG_KIND__MSG_UNLOAD_MODEL:
			r = model_reply(s, req);
			break;
		case PGINFER__MSG_KIND__MSG_CANCEL:
			/* Without a socket nothing is queued: the one named is done or unknown. */
			log_info("request %llu: cancel ignored (no request of that id is queued)",
					 (unsigned long long) req->request_id);
			pginfer__header__free_unpacked(req, NULL);
			return 0;
		default:
			/* server_check_header() let only the kinds above through. */
			snprintf(err, sizeof(err), "unexpected %s", server_kind_name(req->kind));
			r = error_reply(req->request_id, PGINFER_SQLSTATE_INTERNAL, err, NULL);
			break;
	}

done:
	/* A reply that could not be built still gets an answer if possible. */
	if (r == NULL)
		r = error_reply(req != NULL ? req->request_id : 0,
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

/* zmq_msg_init_data's deallocator for malloc'd buffers. */
static void
free_buffer(void *data, void *hint)
{
	(void) hint;
	free(data);
}

/*
 * Sends one message part that takes over buf (malloc'd, len bytes; NULL
 * for an empty frame).  *buf is set to NULL once ZeroMQ owns it.
 */
static int
send_owned(void *sock, void **buf, size_t len, int more)
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
		if (zmq_msg_init_data(&m, *buf, len, free_buffer, NULL) != 0)
			return -1;
		*buf = NULL;
	}
	if (zmq_msg_send(&m, sock, more ? ZMQ_SNDMORE : 0) < 0)
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

	zmq_msg_init(&idcopy);
	zmq_msg_copy(&idcopy, id);
	if (zmq_msg_send(&idcopy, s->sock, ZMQ_SNDMORE) < 0)
	{
		zmq_msg_close(&idcopy);
		return -1;
	}
	r->header = NULL;
	if (send_owned(s->sock, &hdr, r->header_len, r->n_frames > 0) != 0)
	{
		free(hdr);
		return -1;
	}
	for (int i = 0; i < r->n_frames; i++)
	{
		if (send_owned(s->sock, &r->frames[i], r->frame_len[i],
					   i + 1 < r->n_frames) != 0)
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
		if (zmq_msg_recv(&m, s->sock, 0) < 0 && zmq_errno() != EINTR)
		{
			zmq_msg_close(&m);
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
	uint64_t	id = 0;
	char		msg[256];
	server_reply *r;

	req = pginfer__header__unpack(NULL, zmq_msg_size(&parts[1]), zmq_msg_data(&parts[1]));
	if (req != NULL)
	{
		id = req->request_id;
		pginfer__header__free_unpacked(req, NULL);
	}
	snprintf(msg, sizeof(msg),
			 "request has %lld payload frames, more than the %d rows one request may carry",
			 (long long) n_payload, SERVER_MAX_ROWS);
	r = error_reply(id, PGINFER_SQLSTATE_TOO_LARGE, msg,
					"Send the rows in several requests.");
	if (r != NULL && send_reply(s, &parts[0], r) != 0)
		log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
	server_reply_destroy(&r);
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
		req = pginfer__header__unpack(NULL, zmq_msg_size(&parts[1]), zmq_msg_data(&parts[1]));
	if (req == NULL || server_check_header(req, n - 2, &sqlstate, err, sizeof(err)) != 0)
		goto serve_now;
	if (req->kind == PGINFER__MSG_KIND__MSG_CANCEL)
	{
		int			removed = batcher_cancel(s->queue, zmq_msg_data(&parts[0]),
											 zmq_msg_size(&parts[0]), req->request_id);

		log_info("request %llu: cancel %s", (unsigned long long) req->request_id,
				 removed > 0 ? "dropped the queued request" :
				 "ignored (no request of that id is queued)");
		pginfer__header__free_unpacked(req, NULL);
		return;
	}
	if (req->kind != PGINFER__MSG_KIND__MSG_RUN_FRAGMENT)
		goto serve_now;

	key = server_group_key(req->run, &key_len);
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
	it = batch_item_new(key, key_len, (int) req->run->n_row_ids, batcher_now_us(),
						zmq_msg_data(&q->parts[0]), zmq_msg_size(&q->parts[0]),
						req->request_id, q, queued_request_free);
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
	log_debug("request %llu: queued %zu rows (%d requests, %d rows waiting)",
			  (unsigned long long) req->request_id, req->run->n_row_ids,
			  batcher_length(s->queue), batcher_rows(s->queue));
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
 * Runs one group of queued requests (items[0..n), taken from the queue)
 * and sends each its reply; frees the items.  With shutdown set, every
 * request is answered with MSG_ERROR 57P01 instead.
 */
static void
run_queued(server *s, batch_item **items, int n, int shutdown)
{
	const Pginfer__Header **reqs = calloc((size_t) n, sizeof(*reqs));
	const void *const **frames = calloc((size_t) n, sizeof(*frames));
	const size_t **lens = calloc((size_t) n, sizeof(*lens));
	server_reply **replies = calloc((size_t) n, sizeof(*replies));
	const void **data = NULL;
	size_t	   *len = NULL;
	int			total = 0;

	if (reqs == NULL || frames == NULL || lens == NULL || replies == NULL)
	{
		log_error("out of memory running %d requests: dropped them", n);
		goto done;
	}
	for (int k = 0; k < n; k++)
		total += ((queued_request *) items[k]->data)->n_parts - 2;
	data = calloc(total > 0 ? (size_t) total : 1, sizeof(*data));
	len = calloc(total > 0 ? (size_t) total : 1, sizeof(*len));
	if (data == NULL || len == NULL)
	{
		log_error("out of memory running %d requests: dropped them", n);
		goto done;
	}
	total = 0;
	for (int k = 0; k < n; k++)
	{
		queued_request *q = items[k]->data;

		reqs[k] = q->header;
		frames[k] = &data[total];
		lens[k] = &len[total];
		for (int i = 2; i < q->n_parts; i++, total++)
		{
			data[total] = zmq_msg_data(&q->parts[i]);
			len[total] = zmq_msg_size(&q->parts[i]);
		}
	}
	if (shutdown)
	{
		for (int k = 0; k < n; k++)
			replies[k] = error_reply(reqs[k]->request_id, FRAGMENT_SQLSTATE_SHUTDOWN,
									 "the worker is shutting down; the request was not run",
									 hint_for(s, FRAGMENT_SQLSTATE_SHUTDOWN,
											  NULL, 0));
	}
	else
	{
		if (n > 1)
			log_debug("running %d queued requests as one batch", n);
		if (server_run_group(s, reqs, frames, lens, n, replies) != 0)
			log_error("out of memory building a reply");
	}
	for (int k = 0; k < n; k++)
	{
		queued_request *q = items[k]->data;

		if (replies[k] != NULL && send_reply(s, &q->parts[0], replies[k]) != 0)
			log_warn("could not send a reply: %s", zmq_strerror(zmq_errno()));
		server_reply_destroy(&replies[k]);
	}

done:
	for (int k = 0; k < n; k++)
		batch_item_destroy(&items[k]);
	free(items);
	free(reqs);
	free(frames);
	free(lens);
	free(replies);
	free(data);
	free(len);
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
		else if (dropped > 0)
			refuse_too_many(s, *parts, (int64_t) n - 2 + dropped);
		else
			dispatch_message(s, *parts, n);
		for (int i = 0; i < n; i++)
			zmq_msg_close(&(*parts)[i]);
	}
	return 0;
}

/* Messages read from the socket between two group runs, at most. */
#define DRAIN_MAX 1024

/* Serves until *stop is set; see server.h. */
int
server_run(server *s, volatile sig_atomic_t *stop, int poll_ms,
		   char *err, size_t errlen)
{
	int			cap = 16;
	zmq_msg_t  *parts = malloc((size_t) cap * sizeof(zmq_msg_t));
	batch_item **items;
	int			n_items;
	int			rc = -1;

	if (parts == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->stop = stop;
	while (!*stop)
	{
		zmq_pollitem_t item = {s->sock, 0, ZMQ_POLLIN, 0};
		int64_t		wait_us = batcher_wait_us(s->queue, batcher_now_us());
		int			timeout = poll_ms;
		int			n;

		/* Wake up when the oldest queued group has waited long enough. */
		if (wait_us >= 0 && wait_us < (int64_t) poll_ms * 1000)
			timeout = (int) ((wait_us + 999) / 1000);
		n = zmq_poll(&item, 1, timeout);
		if (n < 0)
		{
			if (zmq_errno() == EINTR)
				continue;
			snprintf(err, errlen, "zmq_poll failed: %s", zmq_strerror(zmq_errno()));
			goto fail;
		}
		if (n > 0 && (item.revents & ZMQ_POLLIN) &&
			drain_socket(s, &parts, &cap, DRAIN_MAX, err, errlen) != 0)
			goto fail;
		if (*stop)
			break;
		/* One group at a time, so the socket is read between groups. */
		n = batcher_next(s->queue, batcher_now_us(), 0, &items, &n_items);
		if (n > 0)
			run_queued(s, items, n_items, 0);
		else if (n < 0)
			log_error("out of memory taking a group from the queue");
	}
	rc = 0;

fail:
	/* What is still queued will not run: say so to each peer. */
	while (batcher_next(s->queue, batcher_now_us(), 1, &items, &n_items) > 0)
		run_queued(s, items, n_items, 1);
	s->stop = NULL;
	free(parts);
	return rc;
}
