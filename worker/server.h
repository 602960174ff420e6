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
 *	  MSG_RUN_FRAGMENT		  -> MSG_RESULT (+ one frame per row) or MSG_ERROR
 *	  MSG_LOAD_MODEL		  -> MSG_PONG, or MSG_ERROR naming the file
 *	  MSG_UNLOAD_MODEL		  -> MSG_PONG (unloading what is not loaded is fine)
 *	  MSG_CANCEL			  -> no reply: requests run one at a time, so the
 *								 one named has finished or is unknown
 *	  anything else			  -> MSG_ERROR (PGINFER_SQLSTATE_PROTOCOL)
 *
 * server_handle() is the whole dispatch without a socket (the unit tests
 * call it directly); server_run() wraps it around the ROUTER socket.
 *
 * Threading: single-threaded.  One thread creates, runs and destroys a
 * server; the engine may use more threads inside a model run.
 */
#ifndef INFER_SERVER_H
#define INFER_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"

typedef struct server_opts
{
	const char *endpoint;		/* ZeroMQ endpoint to bind; NULL: no socket */
	const char *model_dir;		/* --model-dir */
	int64_t		max_pixels;		/* --max-pixels; <= 0: the default */
} server_opts;

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

/* Closes the socket and context and frees everything; sets *s to NULL. */
void		server_destroy(server **s);

/* The endpoint the socket is bound to (port resolved), or NULL. */
const char *server_endpoint(const server *s);

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

/* Frees *r and the buffers it still owns; sets *r to NULL. */
void		server_reply_destroy(server_reply **r);

/*
 * Checks an unpacked request header: protocol version, a part for its
 * kind (run, model), and n_payload payload frames as the kind needs
 * (run: one per row id; the others: none).  Returns 0, or -1 with
 * *sqlstate and a message in err.
 */
int			server_check_header(const Pginfer__Header *h, int n_payload,
								const char **sqlstate, char *err, size_t errlen);

/*
 * A packed MSG_ERROR header (malloc'd, *len bytes) for request_id, or NULL
 * when memory runs out.  detail and hint may be NULL.
 */
uint8_t    *server_pack_error(uint64_t request_id, const char *sqlstate,
							  const char *message, const char *detail,
							  const char *hint, size_t *len);

/* Name of a message kind ("MSG_PING", ...), for messages and logs. */
const char *server_kind_name(Pginfer__MsgKind kind);

#endif							/* INFER_SERVER_H */
