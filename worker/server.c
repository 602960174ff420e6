/*
 * server.c
 *	  The infer-worker request loop and dispatch (see server.h).
 *
 * server_run() polls the ROUTER socket with a timeout so that a stop flag
 * set by a signal handler is seen promptly, reads one multipart message,
 * hands its header and payload frames to server_handle(), and sends the
 * reply back to the same routing id.  Payload frames are read in place
 * (no copy); reply buffers are given to ZeroMQ with zmq_msg_init_data(),
 * which frees them once sent.
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
	volatile sig_atomic_t *stop;	/* server_run's stop flag, or NULL */
};

/* Name of a message kind, for messages and logs. */
const char *
server_kind_name(Pginfer__MsgKind kind)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&pginfer__msg_kind__descriptor, kind);

	return v != NULL ? v->name : "MSG_(unknown kind)";
}

/* New server; see server.h. */
server *
server_new(const server_opts *opts, char *err, size_t errlen)
{
	server	   *s = NULL;
	char		host[64] = "localhost";
	char		last[256];
	size_t		last_len = sizeof(last);
	int			linger = 200;	/* ms */

	s = calloc(1, sizeof(*s));
	if (s == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->max_pixels = opts->max_pixels > 0 ? opts->max_pixels : PGINFER_DEFAULT_MAX_PIXELS;
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
	if (s->sock != NULL)
		zmq_close(s->sock);
	if (s->ctx != NULL)
		zmq_ctx_term(s->ctx);
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
			if (h->run->n_row_ids > (size_t) 1 << 24)
			{
				snprintf(err, errlen, "%s request with %zu rows, more than one request may carry",
						 server_kind_name(h->kind), h->run->n_row_ids);
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
	st.queue_length = 0;
	st.backlog_ms = 0;
	st.n_resident_models = (size_t) n;
	st.resident_models = names;
	st.host_memory_used = rss_bytes();
	st.device = "cpu";
	st.requests_served = s->requests_served;
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
	return NULL;
}

/*
 * Runs a MSG_RUN_FRAGMENT request and builds MSG_RESULT: the header, then
 * one frame per row (the row's float32 values, handed over without a copy;
 * empty for rows without values).
 */
static server_reply *
run_reply(server *s, const Pginfer__Header *req, const void *const *frames,
		  const size_t *frame_len, int n_frames)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__Result res = PGINFER__RESULT__INIT;
	fragment_result *fr = NULL;
	server_reply *r = NULL;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[1024],
				hint[512];
	int			n_ok = 0;

	if (fragment_run(s->cache, req->run, frames, frame_len, n_frames,
					 s->max_pixels, s->stop, &fr, &sqlstate, err, sizeof(err)) != 0)
		return error_reply(req->request_id, sqlstate, err,
						   hint_for(s, sqlstate, hint, sizeof(hint)));

	res.n_rows = (size_t) fr->n_rows;
	res.rows = fr->row_ptrs;
	res.compute_ms = fr->compute_ms;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_RESULT;
	h.request_id = req->request_id;
	h.result = &res;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		goto fail;
	r->n_frames = fr->n_rows;
	r->frames = calloc(fr->n_rows > 0 ? (size_t) fr->n_rows : 1, sizeof(void *));
	r->frame_len = calloc(fr->n_rows > 0 ? (size_t) fr->n_rows : 1, sizeof(size_t));
	r->header = pack_header(&h, &r->header_len);
	if (r->frames == NULL || r->frame_len == NULL || r->header == NULL)
		goto fail;
	for (int i = 0; i < fr->n_rows; i++)
	{
		/* Hand the values over: the reply frees them (or ZeroMQ does). */
		r->frames[i] = fr->values[i];
		r->frame_len[i] = fr->n_values[i] * sizeof(float);
		fr->values[i] = NULL;
		n_ok += fr->rows[i].ok ? 1 : 0;
	}
	s->requests_served++;
	log_info("request %llu: %s over %d rows (%d ok, %d failed) in %.1f ms",
			 (unsigned long long) req->request_id,
			 fragment_kind_name(req->run->fragment->kind), fr->n_rows, n_ok,
			 fr->n_rows - n_ok, fr->compute_ms);
	fragment_result_destroy(&fr);
	return r;

fail:
	fragment_result_destroy(&fr);
	server_reply_destroy(&r);
	return NULL;
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
			r = run_reply(s, req, frames, frame_len, n_frames);
			break;
		case PGINFER__MSG_KIND__MSG_LOAD_MODEL:
		case PGINFER__MSG_KIND__MSG_UNLOAD_MODEL:
			r = model_reply(s, req);
			break;
		case PGINFER__MSG_KIND__MSG_CANCEL:
			/* Requests run one at a time: the one named is done or unknown. */
			log_info("request %llu: cancel ignored (no request of that id is running)",
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
 * Reads the rest of a multipart message whose first part (the routing id)
 * is in parts[0], growing *parts as needed; *n gets the number of parts
 * held.  Returns 0, or -1 when a part could not be kept (the rest of the
 * message is then read and dropped, so the next read starts a message).
 */
static int
recv_parts(server *s, zmq_msg_t **parts, int *cap, int *n)
{
	int			more = zmq_msg_more(&(*parts)[0]);

	*n = 1;
	while (more)
	{
		if (*n == *cap)
		{
			zmq_msg_t  *p = realloc(*parts, (size_t) *cap * 2 * sizeof(zmq_msg_t));

			if (p == NULL)
				goto drain;
			*parts = p;
			*cap *= 2;
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
	while (!*stop)
	{
		zmq_pollitem_t item = {s->sock, 0, ZMQ_POLLIN, 0};
		int			n;

		n = zmq_poll(&item, 1, poll_ms);
		if (n < 0)
		{
			if (zmq_errno() == EINTR)
				continue;
			snprintf(err, errlen, "zmq_poll failed: %s", zmq_strerror(zmq_errno()));
			goto fail;
		}
		if (n == 0 || !(item.revents & ZMQ_POLLIN))
			continue;

		zmq_msg_init(&parts[0]);
		if (zmq_msg_recv(&parts[0], s->sock, ZMQ_DONTWAIT) < 0)
		{
			zmq_msg_close(&parts[0]);
			if (zmq_errno() == EAGAIN || zmq_errno() == EINTR)
				continue;
			snprintf(err, errlen, "zmq_msg_recv failed: %s", zmq_strerror(zmq_errno()));
			goto fail;
		}
		if (recv_parts(s, &parts, &cap, &n) != 0)
			log_warn("dropped a request of %d or more frames: %s", n,
					 zmq_strerror(zmq_errno()));
		else
			serve_message(s, parts, n);
		for (int i = 0; i < n; i++)
			zmq_msg_close(&parts[i]);
	}
	rc = 0;

fail:
	s->stop = NULL;
	free(parts);
	return rc;
}
