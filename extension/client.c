/*-------------------------------------------------------------------------
 *
 * client.c
 *	  The ZeroMQ client: sends a request to an infer-worker and waits for
 *	  its reply without blocking interrupts.
 *
 * Each backend has its own ZeroMQ context, created at its first request
 * (never in the postmaster, so no ZeroMQ state crosses fork()), and one
 * DEALER socket per worker endpoint, kept open for the backend's life.
 * The same holds for each parallel worker of a parallel query: a process
 * of its own, started from the postmaster, that creates its own context
 * at its first request and closes it when it exits.
 * ZeroMQ starts its I/O threads when the first socket is created; all
 * signals are blocked in that window so that PostgreSQL's signals keep
 * going to the main thread only.  The I/O threads never call PostgreSQL
 * code; everything in this file runs in the main thread.
 *
 * Waiting uses a WaitEventSet per socket (the process latch, postmaster
 * death, the socket's ZMQ_FD and its monitor's).  A ZMQ_FD is
 * edge-triggered: it only says "ZMQ_EVENTS may have changed", so every
 * wait re-reads ZMQ_EVENTS first and sleeps only when the wanted event is
 * absent.  Query cancel, statement_timeout and
 * infer.timeout end a wait; a request already sent is then cancelled with
 * MSG_CANCEL, and its late reply is dropped by request_id when it comes.
 *
 * Sockets set ZMQ_IMMEDIATE: a request is queued only on a live
 * connection, so an unreachable worker is an error after infer.timeout
 * (SQLSTATE 08006) and never leaves stale requests queued behind it.  A
 * connected worker that does not answer in time is SQLSTATE 57014, the
 * code statement_timeout uses.  Each socket has a ZeroMQ monitor (an
 * inproc PAIR socket) whose connect/disconnect events the wait watches
 * too, so a worker that goes away while it holds a request is an error
 * at once (08006), not after infer.timeout.  That includes a worker that
 * drops the connection because a frame of the request was larger than its
 * --max-message-bytes (ZMQ_MAXMSGSIZE): the request fails with 08006.
 * (A row is not sent larger than that once the pool has the worker's
 * state: placement passes over such a worker and InferRowWithinLimit
 * refuses a row no worker reads; a header can still be larger.)  A
 * worker that was up when the request was sent and that the pool then
 * finds down (no heartbeat for infer.worker_timeout: hung, though still
 * connected) is 08006 too, "stopped answering", once the pool says so.
 * InferClientWaitOrLost hands these losses, and a worker's MSG_ERROR 57P01
 * (shutting down: the request was not run), back to the caller, who sends
 * the rows to another worker (inferbatch.c for batches, functions.c for
 * per-row calls).
 *
 * A MSG_ERROR whose request_id is 0 (the worker could not parse the
 * header, so it cannot know the id) answers the oldest request pending on
 * that socket; see client_dispatch().
 *
 * Several requests may be in flight on one socket (InferBatch keeps up to
 * infer.max_inflight batches out, and a cursor may leave some there
 * between FETCHes while other statements send their own).  Every request
 * sent is an InferRequest, kept in client_pending until its reply arrives
 * or it is forgotten; whoever reads a socket hands each reply to its
 * request, so no reply is lost to another waiter.  A request lives in the
 * memory context that was current when it was sent (its owner) and its
 * reply is received into a child context of the owner; a reset callback
 * on the owner unlinks the request and sends MSG_CANCEL when it is still
 * unanswered, so an error, a rescan or the end of a batch can never leave
 * a dangling request behind.  Replies nobody waits for are dropped.  A
 * portal that fails in a subtransaction (a cursor FETCHed inside a
 * SAVEPOINT, then ROLLBACK TO it) keeps its memory until the transaction
 * ends, so a request also remembers the resource owner that was current
 * when it was sent (the portal's, in a FETCH) and is cancelled when that
 * owner is released on abort (client_resowner_release): the worker stops
 * its work and the pool stops counting it at the rollback, not at COMMIT.
 *
 * The input cache (docs/placement.md): a MSG_RUN_FRAGMENT names each row
 * of at least infer.input_cache_min_bytes bytes by its SHA-256
 * (RunFragment.input_sha256; -1 turns this off) and its scope, the
 * cluster, database and role (input_scope; the worker keeps each row under
 * SHA-256(scope || digest), so one scope never finds another's rows),
 * and leaves out the bytes of the rows that its worker's Bloom filter,
 * in the pool's slot, holds the keys of (cached_rows, an empty frame each).  A worker that does not
 * hold some answers MSG_NEED_INPUT naming them; InferClientWait then sends
 * the request again at once, under the same id: first with the named rows'
 * bytes (the other rows left out are still held, or were cached when the
 * first send delivered them), and, should the worker ask again, with every
 * row's bytes; a third request is a protocol violation.  So the caller's
 * payloads must stay valid until the reply is returned or the request is
 * forgotten.  InferClientStageInputs lets placement see the digests of the
 * rows it places (InferClientUncachedBytes) and the send that follows
 * reuse them: the send takes them only when it is the very next request
 * of the backend and carries the same payload arrays, and drops them
 * after (a stale digest must never name another row's bytes).
 *
 * A request to a worker with a pool slot (worker->pool_slot, set by
 * placement.c) adds its rows and estimate to the slot's in-flight work at
 * send (taking over the reservation placement made with its choice,
 * InferPoolSent); the reply's arrival, the cancel and the exit above take them back
 * (InferPoolRemoveInflight), so an ERROR or a cancelled query leaves
 * nothing counted.
 *
 * infer.stats (stats.c): a MSG_RUN_FRAGMENT request carries its model
 * label and the call it was sent in (InferStatsCurrentCall); each send
 * counts its bytes (InferStatsSent), and its end counts once
 * (client_stats_done): the final reply when client_dispatch hands it over
 * (a MSG_NEED_INPUT is not final), or the failure raised here (no
 * connection, no answer in time, the worker lost).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include <signal.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "lib/ilist.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "curve.h"

/* One DEALER socket, connected to one worker endpoint. */
typedef struct InferSocket
{
	struct InferSocket *next;
	char	   *endpoint;		/* in TopMemoryContext */
	void	   *sock;
	void	   *monitor;		/* PAIR socket receiving sock's events */
	uint64		disconnects;	/* ZMQ_EVENT_DISCONNECTED events seen */
	bool		connected;		/* the last event seen was CONNECTED */
	TimestampTz dropped_at;		/* when a DISCONNECTED event was read that
								 * no CONNECTED followed; 0: none */
	TimestampTz answered_at;	/* when a reply last came to one of this
								 * backend's pending requests; 0: none */
	uint64		handshake_failures; /* ZMQ_EVENT_HANDSHAKE_FAILED_* seen, and
									 * connections closed before their
									 * handshake succeeded */
	uint64		failures_at_wait;	/* handshake_failures when the current
									 * wait for a connection began */
	bool		handshaking;	/* connected, handshake not yet succeeded */
	bool		refused;		/* the worker refused the CURVE key, and no
								 * handshake succeeded since (ZeroMQ does
								 * not connect again after a refusal; the
								 * next send does, client_connect_again) */
	uint16		handshake_event;	/* the last failure's event */
	WaitEventSet *waitset;		/* latch, postmaster death, both ZMQ_FDs */
} InferSocket;

/* A request sent and not yet forgotten (see the banner). */
struct InferRequest
{
	dlist_node	node;			/* in client_pending while linked */
	bool		linked;			/* unanswered and not cancelled */
	bool		unsent;			/* the connection closed as it was sent:
								 * nothing went out (InferClientWait raises
								 * the loss) */
	InferSocket *socket;
	InferWorker worker;			/* copied into the owner's context */
	uint64		request_id;
	uint64		disconnects_at_send;	/* socket's count when sent */
	TimestampTz handed_at;		/* when it last went to the socket */
	int			watch_slot;		/* pool slot of a worker up at send, or 0 */
	TimestampTz deadline;
	int			timeout_ms;
	MemoryContext owner;		/* the reply's context is a child of it */
	ResourceOwner resowner;		/* current at send; released on abort, it
								 * cancels the request */
	InferReply *reply;			/* NULL until it arrives */
	MemoryContextCallback forget;	/* on the owner's reset or deletion */
	InferPoolInflight inflight; /* its share of the pool's in-flight work */
	/* the input cache (see the banner) */
	uint8	   *packed;			/* the header last sent, when rows were left
								 * out (to send it again); else NULL */
	size_t		packed_len;
	int			npayloads;
	const void *const *payloads;	/* the caller's, valid until answered */
	const size_t *payload_lens;
	int			resends;		/* MSG_NEED_INPUT answered */
	int64		rows_cached;	/* rows left out of the last send */
	int64		bytes_sent;		/* payload bytes sent, over all sends */
	int64		bytes_total;	/* payload bytes of one whole send */
	/* infer.stats (stats.c) */
	char	   *stats_model;	/* its model label; NULL: not counted */
	uint64		stats_call;		/* the call it was sent in */
	bool		stats_done;		/* its end was counted */
	TimestampTz sent_at;
};

/* The rows InferClientStageInputs hashed (see the banner). */
/*
 * RunFragment.input_scope: the cluster's system identifier, the database
 * and the role (8 + 4 + 4 bytes), so that a worker shared by roles,
 * databases or clusters answers a row from its input cache only to the
 * scope that sent it (docs/security.md).
 */
#define CLIENT_SCOPE_LEN	16

typedef struct ClientStaged
{
	MemoryContext cxt;			/* holds digests, keys, hashed and row_lens */
	int			nrows;			/* 0: nothing staged */
	uint64		counter;		/* client_request_counter at staging */
	const void *const *payloads;	/* the caller's arrays, compared only: */
	const size_t *lens;			/* they may be gone by the next call */
	size_t	   *row_lens;		/* nrows: a copy of lens */
	size_t		total;			/* bytes of the rows */
	uint8	   *digests;		/* nrows * PGINFER_SHA256_LEN */
	uint8	   *keys;			/* nrows * PGINFER_SHA256_LEN: cache keys */
	uint8		scope[CLIENT_SCOPE_LEN];	/* the keys' scope */
	bool	   *hashed;			/* nrows: long enough to be named */
} ClientStaged;

/* The outcome of client_wait(). */
typedef enum ClientWait
{
	CLIENT_READY,				/* the wanted event is there */
	CLIENT_TIMEOUT,				/* the deadline passed */
	CLIENT_DISCONNECTED			/* the worker went away */
} ClientWait;

static void *client_context = NULL;
static InferSocket *client_sockets = NULL;
static uint64 client_request_counter = 0;
static int	client_monitor_counter = 0;
static dlist_head client_pending = DLIST_STATIC_INIT(client_pending);

static void client_dispatch(InferSocket *s, const InferWorker *worker);
static void client_cancel(InferRequest *req);
static void client_stats_done(InferRequest *req, const InferReply *reply);
static ClientStaged client_staged;

/*
 * Resource release callback: on abort (isCommit false), cancels the
 * requests sent while the owner being released (CurrentResourceOwner
 * during the callback: resowner.c, ResourceOwnerReleaseInternal) was
 * current.  See the banner.  Never raises an error.
 */
static void
client_resowner_release(ResourceReleasePhase phase, bool isCommit,
						bool isTopLevel, void *arg)
{
	dlist_mutable_iter iter;

	if (isCommit || phase != RESOURCE_RELEASE_BEFORE_LOCKS ||
		CurrentResourceOwner == NULL)
		return;
	dlist_foreach_modify(iter, &client_pending)
	{
		InferRequest *req = dlist_container(InferRequest, node, iter.cur);

		if (req->resowner == CurrentResourceOwner)
			client_cancel(req);
	}
}

/*
 * Load-time set-up: the linked libzmq must be 4.x or later (ZMQ_IMMEDIATE,
 * zmq_msg_more); the resource release callback that cancels the requests
 * of an aborted owner.  Creates no socket.
 */
void
InferClientInit(void)
{
	int			major,
				minor,
				patch;

	zmq_version(&major, &minor, &patch);
	if (major < 4)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pg_infer needs libzmq 4 or later, found %d.%d.%d",
						major, minor, patch)));
	RegisterResourceReleaseCallback(client_resowner_release, NULL);
}

/*
 * Returns a request id unique in this backend's life: the pid in the high
 * half (handy in worker logs), a counter in the low half.
 */
uint64
InferClientNextRequestId(void)
{
	return ((uint64) MyProcPid << 32) | (uint32) ++client_request_counter;
}

/*
 * How long, at exit, a socket may still flush the MSG_CANCELs just queued
 * (a parallel worker stopped by its leader, a backend terminated while it
 * waited).  Only messages on a live connection are queued (ZMQ_IMMEDIATE),
 * so an exit waits this long only when a worker is slow to read them, or
 * the machine so busy that ZeroMQ's I/O thread waits for a core (100 ms
 * was too short on a loaded 2-core machine: a parallel worker's cancels
 * were lost, regress batch_cancel).
 */
#define CLIENT_EXIT_LINGER_MS 500

/*
 * on_proc_exit callback: closes every socket, letting queued cancels go
 * out for at most CLIENT_EXIT_LINGER_MS, and ends the context, so the I/O
 * threads stop before the process exits.
 */
static void
client_shutdown(int code, Datum arg)
{
	int			linger = CLIENT_EXIT_LINGER_MS;

	/* requests still pending are dropped with their sockets, unsent */
	while (!dlist_is_empty(&client_pending))
	{
		InferRequest *req = dlist_container(InferRequest, node,
											dlist_pop_head_node(&client_pending));

		req->linked = false;
		InferPoolRemoveInflight(&req->inflight);
	}
	while (client_sockets != NULL)
	{
		InferSocket *s = client_sockets;

		client_sockets = s->next;
		(void) zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof(linger));
		zmq_close(s->sock);
		zmq_close(s->monitor);
	}
	if (client_context != NULL)
		zmq_ctx_term(client_context);
	client_context = NULL;
}

/*
 * Returns the cached socket for worker's endpoint, creating the context
 * (first time) and the socket on demand (CURVE when the worker has a
 * server key, see curve.h).  Bad endpoint: ERROR 22023; CURVE keys
 * missing or unusable: ERROR 28000.
 */
static InferSocket *
client_socket(const InferWorker *worker)
{
	InferSocket *s;
	const InferCurveKeys *curve;
	void	   *sock;
	void	   *monitor = NULL;
	WaitEventSet *volatile waitset = NULL;
	char		monitor_addr[64];
	int			zero = 0;
	int			one = 1;
	int			fd;
	int			monitor_fd;
	size_t		fdlen = sizeof(fd);
	int			err = 0;

	for (s = client_sockets; s != NULL; s = s->next)
		if (strcmp(s->endpoint, worker->endpoint) == 0)
			return s;

	/* CURVE keys (curve.c): may ERROR 28000, so before any socket exists */
	curve = InferCurveClientKeys(worker->endpoint, worker->name);

	if (client_context == NULL)
	{
		sigset_t	all,
					old;

		/*
		 * The context and first socket start ZeroMQ's threads, which inherit
		 * this signal mask: block everything so they never take a signal
		 * meant for the backend.  No ereport until the mask is restored.
		 */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		client_context = zmq_ctx_new();
		if (client_context != NULL)
		{
			zmq_ctx_set(client_context, ZMQ_BLOCKY, 0);
			sock = zmq_socket(client_context, ZMQ_DEALER);
			if (sock == NULL)
				err = zmq_errno();
		}
		else
		{
			err = zmq_errno();
			sock = NULL;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);

		if (client_context == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not create ZeroMQ context: %s",
							zmq_strerror(err))));
		on_proc_exit(client_shutdown, (Datum) 0);
	}
	else
	{
		sock = zmq_socket(client_context, ZMQ_DEALER);
		if (sock == NULL)
			err = zmq_errno();
	}
	if (sock == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not create ZeroMQ socket for inference worker \"%s\": %s",
						worker->name, zmq_strerror(err))));

	/*
	 * The monitor goes first, so that it sees the first connection too.
	 * Events to a monitor without a peer are lost, hence its PAIR peer is
	 * connected before the DEALER connects.
	 */
	snprintf(monitor_addr, sizeof(monitor_addr), "inproc://pg_infer-monitor-%d",
			 ++client_monitor_counter);
	if (zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof(zero)) != 0 ||
		zmq_setsockopt(sock, ZMQ_IMMEDIATE, &one, sizeof(one)) != 0 ||
		(curve != NULL && InferCurveApply(sock, curve) != 0) ||
		zmq_getsockopt(sock, ZMQ_FD, &fd, &fdlen) != 0 ||
		zmq_socket_monitor(sock, monitor_addr,
						   ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
						   ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
						   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
						   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
						   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0 ||
		(monitor = zmq_socket(client_context, ZMQ_PAIR)) == NULL ||
		zmq_setsockopt(monitor, ZMQ_LINGER, &zero, sizeof(zero)) != 0 ||
		zmq_connect(monitor, monitor_addr) != 0 ||
		zmq_getsockopt(monitor, ZMQ_FD, &monitor_fd, &fdlen) != 0)
	{
		err = zmq_errno();
		if (monitor != NULL)
			zmq_close(monitor);
		zmq_close(sock);
		/* EMFILE and ENOMEM can happen: a user-visible, coded error. */
		ereport(ERROR,
				(errcode(err == EMFILE || err == ENFILE ?
						 ERRCODE_CONFIGURATION_LIMIT_EXCEEDED :
						 err == ENOMEM ? ERRCODE_OUT_OF_MEMORY :
						 ERRCODE_CONNECTION_EXCEPTION),
				 errmsg("could not set up a ZeroMQ socket for inference worker \"%s\": %s",
						worker->name, zmq_strerror(err))));
	}
	if (zmq_connect(sock, worker->endpoint) != 0)
	{
		err = zmq_errno();
		zmq_close(monitor);
		zmq_close(sock);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid endpoint \"%s\" for inference worker \"%s\": %s",
						worker->endpoint, worker->name, zmq_strerror(err)),
				 errhint("Drop the worker with infer.drop_worker() and add it again with an endpoint like tcp://host:port.")));
	}

	/* the wait set can fail (no file descriptor left): close both sockets */
	PG_TRY();
	{
		waitset = CreateWaitEventSet(TopMemoryContext, 4);
		AddWaitEventToSet(waitset, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(waitset, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET,
						  NULL, NULL);
		AddWaitEventToSet(waitset, WL_SOCKET_READABLE, fd, NULL, NULL);
		AddWaitEventToSet(waitset, WL_SOCKET_READABLE, monitor_fd, NULL, NULL);
	}
	PG_CATCH();
	{
		if (waitset != NULL)
			FreeWaitEventSet(waitset);
		zmq_close(monitor);
		zmq_close(sock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	s = MemoryContextAllocZero(TopMemoryContext, sizeof(InferSocket));
	s->endpoint = MemoryContextStrdup(TopMemoryContext, worker->endpoint);
	s->sock = sock;
	s->monitor = monitor;
	s->waitset = waitset;
	s->next = client_sockets;
	client_sockets = s;
	return s;
}

/*
 * Reads the next event waiting on pair, the PAIR peer of a
 * zmq_socket_monitor(): true with *event (a ZMQ_EVENT_*; 0 for a first
 * frame too short to hold one) when one was read, false when none waits.
 * An event is two frames: 6 bytes (uint16 event, uint32 value) and the
 * endpoint.  Never raises an error.
 */
bool
InferZmqNextEvent(void *pair, uint16 *event)
{
	zmq_msg_t	msg;

	*event = 0;
	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, pair, ZMQ_DONTWAIT) < 0)
	{
		zmq_msg_close(&msg);
		return false;
	}
	if (zmq_msg_size(&msg) >= sizeof(*event))
		memcpy(event, zmq_msg_data(&msg), sizeof(*event));
	/* the rest of the event (a multipart message arrives whole) */
	while (zmq_msg_more(&msg))
	{
		zmq_msg_close(&msg);
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, pair, ZMQ_DONTWAIT) < 0)
			break;
	}
	zmq_msg_close(&msg);
	return true;
}

/*
 * Reads the socket's pending monitor events: counts disconnections and
 * notes whether the socket is connected now (and since when it is not).
 */
static void
client_read_monitor(InferSocket *s)
{
	uint16		event;

	while (InferZmqNextEvent(s->monitor, &event))
	{
		if (event == ZMQ_EVENT_DISCONNECTED)
		{
			/* closed before its handshake: a failed one too */
			if (s->handshaking)
			{
				s->handshake_failures++;
				s->handshake_event = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
			}
			s->handshaking = false;
			s->disconnects++;
			s->connected = false;
			s->dropped_at = GetCurrentTimestamp();
		}
		else if (event == ZMQ_EVENT_CONNECTED)
		{
			s->connected = true;
			s->handshaking = true;
			s->dropped_at = 0;
		}
		else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
		{
			s->handshaking = false;
			s->refused = false;
		}
		else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ||
				 event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
				 event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
		{
			/* its DISCONNECTED follows: counted here, not there */
			s->handshaking = false;
			s->handshake_failures++;
			s->handshake_event = event;
			if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
				s->refused = true;
		}
	}
}

/*
 * Tells the worker to drop request_id.  Best effort and never raises an
 * error: it runs while an error is being thrown.
 */
static void
client_send_cancel(InferSocket *s, uint64 request_id)
{
	Pginfer__Header hdr = PGINFER__HEADER__INIT;
	uint8_t		buf[64];

	hdr.version = PGINFER_PROTOCOL_VERSION;
	hdr.kind = PGINFER__MSG_KIND__MSG_CANCEL;
	hdr.request_id = request_id;
	if (pginfer__header__get_packed_size(&hdr) <= sizeof(buf))
		(void) zmq_send(s->sock, buf, pginfer__header__pack(&hdr, buf),
						ZMQ_DONTWAIT);
}

/*
 * Forgets req: unlinks it and, as it is still unanswered, tells its worker
 * to drop it.  Never raises an error.  Idempotent.
 */
static void
client_cancel(InferRequest *req)
{
	if (!req->linked)
		return;
	client_send_cancel(req->socket, req->request_id);
	dlist_delete(&req->node);
	req->linked = false;
	InferPoolRemoveInflight(&req->inflight);
}

/*
 * Whether req went unsent: the connection closed as it was sent, and its
 * worker never saw it (InferClientWait raises that as a loss).
 */
bool
InferClientUnsent(const InferRequest *req)
{
	return req->unsent;
}

/*
 * Whether req went out, still waits for its answer (none read yet, not
 * forgotten) and is lost now, as its own wait (InferClientWaitOrLost)
 * would find it: no reply waits on its socket, and its connection dropped
 * after it was sent or the pool finds its worker silent
 * (InferPoolIsSilent).  A request sent over the connection made again to
 * a worker restarted on the endpoint is not lost with the requests of the
 * run before.  Reads the replies and events waiting on the socket.
 * Errors: 08P01 for a reply that cannot be read (client_dispatch).
 */
bool
InferClientLostNow(InferRequest *req)
{
	if (!req->linked || req->unsent || req->reply != NULL)
		return false;
	/* a reply already received wins over a disconnection (client_wait) */
	client_dispatch(req->socket, &req->worker);
	if (req->reply != NULL || !req->linked)
		return false;
	client_read_monitor(req->socket);
	return req->socket->disconnects != req->disconnects_at_send ||
		(req->watch_slot != 0 && InferPoolIsSilent(req->watch_slot));
}

/*
 * Forgets req (unanswered: its worker is told to drop it, and a late
 * reply is dropped).  Never raises an error.  Idempotent.
 */
void
InferClientForget(InferRequest *req)
{
	client_cancel(req);
}

/*
 * Forgets req, which its worker lost (InferClientLostNow), counting it in
 * infer.stats as a failed request, as its own wait would have.  Never
 * raises an error.
 */
void
InferClientForgetLost(InferRequest *req)
{
	client_stats_done(req, NULL);
	client_cancel(req);
}

/* Memory context reset callback of a request's owner: see client_cancel. */
static void
client_forget(void *arg)
{
	client_cancel((InferRequest *) arg);
}

/*
 * Processes pending interrupts; when one throws (cancel, statement
 * timeout, termination) and req (may be NULL) is in flight, first tells
 * the worker to drop it.
 */
static void
client_check_interrupts(InferRequest *req)
{
	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		if (req != NULL)
			client_cancel(req);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * Returns whether the socket's ZMQ_EVENTS has `want` now.
 */
static bool
client_has_event(InferSocket *s, int want)
{
	int			events;
	size_t		len = sizeof(events);

	/*
	 * ZMQ_EVENTS processes the socket's pending commands and may be
	 * interrupted by a signal (EINTR, under a parallel query's signals for
	 * one): ask again.  Otherwise it fails only on a closed socket or a
	 * terminated context, which can't happen here.
	 */
	while (zmq_getsockopt(s->sock, ZMQ_EVENTS, &events, &len) != 0)
	{
		if (zmq_errno() != EINTR)
			elog(ERROR, "could not read ZMQ_EVENTS: %s", zmq_strerror(zmq_errno()));
		len = sizeof(events);
	}
	return (events & want) != 0;
}

/* How often a connect wait looks at the pool's status of its worker. */
#define CLIENT_WATCH_MS 100

/*
 * How long a connection that dropped may take to come back (ZeroMQ tries
 * again every ZMQ_RECONNECT_IVL, 100 ms by default, plus up to as much
 * again at random, and a refused try costs another) before a send waiting
 * for it marks the worker down in the pool (client_wait).
 */
#define CLIENT_RECONNECT_GRACE_MS 500

/*
 * Waits until the socket's ZMQ_EVENTS has `want` (ZMQ_POLLIN/POLLOUT) or
 * the deadline passes; with req != NULL (a request in flight), also ends
 * when the worker disconnects after req was sent; with watch_slot != 0,
 * also when the pool finds that slot's worker down (with req, silent:
 * InferPoolIsSilent) (CLIENT_DISCONNECTED both).  With give_up, a wait
 * for a connection (POLLOUT, no req) on a socket whose connection dropped
 * and has not come back within CLIENT_RECONNECT_GRACE_MS, while the pool
 * has heard nothing from the worker since, marks the worker down in the
 * pool (InferPoolMarkDown, as a drop while it held a request does), so
 * that this send and every backend's placement go elsewhere at once
 * rather than after infer.worker_timeout without a heartbeat: the worker
 * exited or was killed.  (The caller sets give_up only while another
 * worker is up: a lone worker restarting is waited for, as before.)  Lets
 * interrupts through (see client_check_interrupts).
 */
static ClientWait
client_wait(InferSocket *s, int want, TimestampTz deadline, InferRequest *req,
			int watch_slot, bool give_up)
{
	for (;;)
	{
		long		remaining;
		WaitEvent	event;

		if (client_has_event(s, want))
			return CLIENT_READY;

		/* a reply already received wins over a disconnection */
		client_read_monitor(s);
		if (req != NULL && s->disconnects != req->disconnects_at_send)
			return CLIENT_DISCONNECTED;

		/* a connection that dropped and does not come back */
		if (give_up && watch_slot != 0 && req == NULL && want == ZMQ_POLLOUT &&
			!s->connected && s->dropped_at != 0 &&
			TimestampDifferenceExceeds(s->dropped_at, GetCurrentTimestamp(),
									   CLIENT_RECONNECT_GRACE_MS) &&
			!InferPoolHeardSince(watch_slot, s->dropped_at))
			InferPoolMarkDown(watch_slot, 0, false, true, s->dropped_at);

		/*
		 * the pool found the worker down meanwhile; with a request in
		 * flight, for want of a heartbeat (a drop marked by a backend
		 * concerns the requests sent before it, which the socket's own
		 * count catches)
		 */
		if (watch_slot != 0 &&
			(req != NULL ? InferPoolIsSilent(watch_slot) :
			 InferPoolIsDown(watch_slot)))
			return CLIENT_DISCONNECTED;

		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
													deadline);
		if (remaining <= 0)
			return CLIENT_TIMEOUT;
		if (watch_slot != 0)
			remaining = Min(remaining, CLIENT_WATCH_MS);
		if (WaitEventSetWait(s->waitset, remaining, &event, 1,
							 PG_WAIT_EXTENSION) == 1 &&
			(event.events & WL_LATCH_SET))
		{
			ResetLatch(MyLatch);
			client_check_interrupts(req);
		}
	}
}

/* protobuf-c allocator over palloc in the context given as its data. */
static void *
client_pb_alloc(void *data, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) data, Max(size, 1),
									  MCXT_ALLOC_NO_OOM);
}

static void
client_pb_free(void *data, void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}

/*
 * Receives one whole multipart message without waiting and copies its
 * frames into the current memory context.  Returns NULL when none is
 * ready.  The message is always read to its last frame, even when copying
 * fails, so the socket never holds half a message; errors are raised only
 * after that.
 */
static InferReply *
client_recv(InferSocket *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	  **frames = NULL;
	size_t	   *lens = NULL;
	int			nframes = 0;
	int			capacity = 0;
	bool		oom = false;
	bool		more = true;
	InferReply *reply;
	ProtobufCAllocator allocator;

	while (more)
	{
		zmq_msg_t	msg;
		size_t		size;

		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, s->sock, ZMQ_DONTWAIT) < 0)
		{
			int			err = zmq_errno();

			zmq_msg_close(&msg);
			if (err == EAGAIN && nframes == 0)
				return NULL;
			if (err == EINTR)
				continue;
			ereport(ERROR,
					(errcode(err == ENOMEM ? ERRCODE_OUT_OF_MEMORY :
							 ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not receive from inference worker at %s: %s",
							s->endpoint, zmq_strerror(err))));
		}
		more = zmq_msg_more(&msg);
		size = zmq_msg_size(&msg);

		if (!oom && nframes == capacity)
		{
			int			newcap = Max(4, capacity * 2);
			char	  **nf = MemoryContextAllocExtended(cxt, sizeof(char *) * newcap,
														MCXT_ALLOC_NO_OOM);
			size_t	   *nl = MemoryContextAllocExtended(cxt, sizeof(size_t) * newcap,
														MCXT_ALLOC_NO_OOM);

			if (nf == NULL || nl == NULL)
				oom = true;
			else
			{
				if (nframes > 0)
				{
					memcpy(nf, frames, sizeof(char *) * nframes);
					memcpy(nl, lens, sizeof(size_t) * nframes);
				}
				frames = nf;
				lens = nl;
				capacity = newcap;
			}
		}
		if (!oom)
		{
			/* Copy before zmq_msg_close releases ZeroMQ's buffer. */
			frames[nframes] = MemoryContextAllocExtended(cxt, Max(size, 1),
														 MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
			if (frames[nframes] == NULL)
				oom = true;
			else
			{
				memcpy(frames[nframes], zmq_msg_data(&msg), size);
				lens[nframes] = size;
				nframes++;
			}
		}
		zmq_msg_close(&msg);
	}
	if (oom)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while receiving an inference reply")));

	reply = palloc0(sizeof(InferReply));
	allocator.alloc = client_pb_alloc;
	allocator.free = client_pb_free;
	allocator.allocator_data = cxt;
	reply->header = pginfer__header__unpack(&allocator, lens[0],
											(const uint8_t *) frames[0]);
	reply->nframes = nframes - 1;
	reply->frames = frames + 1;
	reply->frame_lens = lens + 1;
	for (int i = 0; i < nframes; i++)
		reply->bytes += (int64) lens[i];
	return reply;
}

/*
 * Counts the end of req in infer.stats (stats.c), once: reply is its final
 * reply, or NULL when it failed in the backend (no connection, no answer
 * in time, the worker lost).  Never raises an error.
 */
static void
client_stats_done(InferRequest *req, const InferReply *reply)
{
	if (req->stats_model == NULL || req->stats_done)
		return;
	req->stats_done = true;
	InferStatsDone(req->stats_model, req->worker.name, req->npayloads,
				   reply != NULL ? reply->header : NULL,
				   reply != NULL ? reply->bytes : 0,
				   (double) (GetCurrentTimestamp() - req->sent_at) / 1000.0);
}

/*
 * Reads every whole message waiting on s and hands each reply to its
 * pending request (its context becomes a child of the request's owner);
 * replies to requests nobody waits for any more are dropped.  A reply that
 * cannot be parsed or has another protocol version raises 08P01, naming
 * worker (the one whose request the caller waits for).
 */
static void
client_dispatch(InferSocket *s, const InferWorker *worker)
{
	while (client_has_event(s, ZMQ_POLLIN))
	{
		MemoryContext cxt;
		MemoryContext oldcxt;
		InferReply *reply;
		dlist_iter	iter;
		InferRequest *req = NULL;

		cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_infer reply",
									ALLOCSET_SMALL_SIZES);
		oldcxt = MemoryContextSwitchTo(cxt);
		reply = client_recv(s);
		MemoryContextSwitchTo(oldcxt);
		if (reply == NULL)
		{
			MemoryContextDelete(cxt);
			return;
		}
		if (reply->header == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("could not parse the reply of inference worker \"%s\" at %s",
							worker->name, worker->endpoint)));
		if (reply->header->version != PGINFER_PROTOCOL_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("inference worker \"%s\" at %s speaks protocol version %u, this extension version %d",
							worker->name, worker->endpoint,
							reply->header->version, PGINFER_PROTOCOL_VERSION),
					 errhint("Install infer-worker and pg_infer from the same release.")));

		/*
		 * A MSG_ERROR with request_id 0 comes from a worker that could not
		 * parse the request's header, so it cannot name the request.  It is
		 * taken as the answer to the oldest request pending on this socket
		 * (client_pending is in send order, and a worker answers such an
		 * error at once, before anything it queued): that request fails
		 * with the worker's error instead of waiting for infer.timeout.
		 * Later requests on the socket keep waiting for their own replies.
		 */
		dlist_foreach(iter, &client_pending)
		{
			InferRequest *r = dlist_container(InferRequest, node, iter.cur);

			if (r->socket == s &&
				(r->request_id == reply->header->request_id ||
				 (reply->header->request_id == 0 &&
				  reply->header->kind == PGINFER__MSG_KIND__MSG_ERROR)))
			{
				req = r;
				break;
			}
		}
		if (req == NULL)
		{
			/* the late answer to a request cancelled earlier */
			elog(DEBUG1, "pg_infer: dropping reply to request " UINT64_FORMAT " from %s",
				 reply->header->request_id, s->endpoint);
			MemoryContextDelete(cxt);
			continue;
		}
		MemoryContextSetParent(cxt, req->owner);
		s->answered_at = GetCurrentTimestamp();
		req->reply = reply;
		dlist_delete(&req->node);
		req->linked = false;
		InferPoolAnswered(&req->inflight, reply->header->result != NULL ?
						  reply->header->result->served : 0);
		if (reply->header->kind == PGINFER__MSG_KIND__MSG_RESULT)
			InferResultCheckEncoding(reply->header->result, cxt);
		if (reply->header->kind != PGINFER__MSG_KIND__MSG_NEED_INPUT)
			client_stats_done(req, reply);
	}
}

/*
 * SHA-256 of data[0..len) into digest (PGINFER_SHA256_LEN bytes), with
 * PostgreSQL's cryptohash (OpenSSL when the server is built with it).
 */
static void
client_sha256(const void *data, size_t len, uint8 *digest)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (ctx == NULL ||
		pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) data, len) < 0 ||
		pg_cryptohash_final(ctx, digest, PG_SHA256_DIGEST_LENGTH) < 0)
	{
		const char *why = ctx ? pg_cryptohash_error(ctx) : "out of memory";

		pg_cryptohash_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute the SHA-256 of an inference input: %s",
						why)));
	}
	pg_cryptohash_free(ctx);
}

/*
 * The input-cache scope of this backend's requests now (CLIENT_SCOPE_LEN
 * bytes into scope): the cluster (pg_control's system identifier), the
 * database and the current role (GetUserId: a SECURITY DEFINER
 * function's owner inside it).
 */
static void
client_input_scope(uint8 *scope)
{
	uint64		sysid = GetSystemIdentifier();
	Oid			db = MyDatabaseId;
	Oid			role = GetUserId();

	StaticAssertStmt(sizeof(sysid) + sizeof(db) + sizeof(role) == CLIENT_SCOPE_LEN &&
					 CLIENT_SCOPE_LEN <= PGINFER_INPUT_SCOPE_MAX,
					 "input scope layout");
	memcpy(scope, &sysid, sizeof(sysid));
	memcpy(scope + sizeof(sysid), &db, sizeof(db));
	memcpy(scope + sizeof(sysid) + sizeof(db), &role, sizeof(role));
}

/*
 * Who sends a request, for the worker's log (Header.client): "db=<database>
 * user=<session user> pid=<pid>", as pg_stat_activity's datname, usename
 * and pid (a parallel worker's own pid), then " role=<role>" when the
 * current role differs (SET ROLE; the owner inside a SECURITY DEFINER
 * function such as infer.load_model).  At most PGINFER_CLIENT_MAX bytes;
 * palloc'd; a name that cannot be read (dropped meanwhile) reads "?".
 */
static char *
client_identity(void)
{
	char	   *db = get_database_name(MyDatabaseId);
	char	   *user = GetUserNameFromId(GetSessionUserId(), true);
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "db=%s user=%s pid=%d", db ? db : "?", user ? user : "?",
					 MyProcPid);
	if (GetUserId() != GetSessionUserId())
	{
		char	   *role = GetUserNameFromId(GetUserId(), true);

		appendStringInfo(&s, " role=%s", role ? role : "?");
	}
	if (s.len > PGINFER_CLIENT_MAX)
		s.data[pg_mbcliplen(s.data, s.len, PGINFER_CLIENT_MAX)] = '\0';
	return s.data;
}

/*
 * Hashes the rows of at least infer.input_cache_min_bytes bytes into
 * digests (nrows * PGINFER_SHA256_LEN: RunFragment.input_sha256) and keys
 * (the same size: SHA-256(scope || digest), what the worker caches them
 * under and its Bloom filter holds; common/protocol.h), and marks them in
 * hashed (nrows).  scope is client_input_scope's.
 */
static void
client_hash_rows(int nrows, const void *const *payloads, const size_t *lens,
				 const uint8 *scope, uint8 *digests, uint8 *keys, bool *hashed)
{
	uint8		buf[CLIENT_SCOPE_LEN + PGINFER_SHA256_LEN];

	memcpy(buf, scope, CLIENT_SCOPE_LEN);
	for (int i = 0; i < nrows; i++)
	{
		uint8	   *digest = digests + i * PGINFER_SHA256_LEN;

		hashed[i] = infer_input_cache_min_bytes >= 0 &&
			lens[i] >= (size_t) infer_input_cache_min_bytes;
		if (!hashed[i])
			continue;
		client_sha256(payloads[i], lens[i], digest);
		memcpy(buf + CLIENT_SCOPE_LEN, digest, PGINFER_SHA256_LEN);
		client_sha256(buf, sizeof(buf), keys + i * PGINFER_SHA256_LEN);
	}
}

/*
 * Transaction callbacks: an error between the staging and the send (no
 * worker registered, a cancel) leaves the staged digests behind, naming
 * arrays that are gone; a later request whose arrays happen to sit at the
 * same addresses must not take them for its own rows (an omitted row
 * would be answered from another row's cached bytes).  They are dropped
 * at any abort, a subtransaction's (a PL/pgSQL EXCEPTION block) included.
 */
static void
client_staged_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		client_staged.nrows = 0;
}

static void
client_staged_subxact(SubXactEvent event, SubTransactionId sub,
					  SubTransactionId parent, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		client_staged.nrows = 0;
}

/*
 * Hashes the rows of the request about to be placed and sent (payloads[i]
 * of payload_lens[i] bytes, the arrays the send will be given), so that
 * placement's transfer term sees which rows each worker holds
 * (InferClientUncachedBytes) and the send reuses the digests.  Does
 * nothing with infer.input_cache_min_bytes = -1.  See the banner.
 */
void
InferClientStageInputs(int nrows, const void *const *payloads,
					   const size_t *payload_lens)
{
	ClientStaged *st = &client_staged;

	st->nrows = 0;
	if (infer_input_cache_min_bytes < 0 || nrows <= 0)
		return;
	if (st->cxt == NULL)
	{
		st->cxt = AllocSetContextCreate(TopMemoryContext, "pg_infer staged inputs",
										ALLOCSET_SMALL_SIZES);
		RegisterXactCallback(client_staged_xact, NULL);
		RegisterSubXactCallback(client_staged_subxact, NULL);
	}
	MemoryContextReset(st->cxt);
	st->digests = MemoryContextAlloc(st->cxt, (Size) nrows * PGINFER_SHA256_LEN);
	st->keys = MemoryContextAlloc(st->cxt, (Size) nrows * PGINFER_SHA256_LEN);
	st->hashed = MemoryContextAlloc(st->cxt, sizeof(bool) * nrows);
	st->row_lens = MemoryContextAlloc(st->cxt, sizeof(size_t) * nrows);
	memcpy(st->row_lens, payload_lens, sizeof(size_t) * nrows);
	client_input_scope(st->scope);
	client_hash_rows(nrows, payloads, payload_lens, st->scope, st->digests,
					 st->keys, st->hashed);
	st->total = 0;
	for (int i = 0; i < nrows; i++)
		st->total += payload_lens[i];
	st->payloads = payloads;
	st->lens = payload_lens;
	st->counter = client_request_counter;
	st->nrows = nrows;
}

/*
 * The input bytes of the staged request (bytes in all) that worker w
 * would have to be sent: those of the rows its input cache's Bloom filter
 * does not claim.  bytes when nothing of that size is staged or w has no
 * filter.  An estimate (a false positive costs a MSG_NEED_INPUT round
 * trip); placement's transfer term.
 */
size_t
InferClientUncachedBytes(const struct InferPoolWorker *w, size_t bytes)
{
	const ClientStaged *st = &client_staged;
	size_t		left = bytes;

	if (w == NULL || w->bloom_hashes == 0 || st->nrows == 0 || st->total != bytes)
		return bytes;
	for (int i = 0; i < st->nrows; i++)
		if (st->hashed[i] &&
			pginfer_bloom_probe(w->input_bloom, PGINFER_BLOOM_BYTES, w->bloom_hashes,
								st->keys + i * PGINFER_SHA256_LEN))
			left -= st->row_lens[i];
	return left;
}

/*
 * The input-cache counters of req: rows its worker took from its cache
 * (left out of the send it answered), payload bytes not sent (negative
 * when resends sent more than one whole request would) and MSG_NEED_INPUT
 * round trips.
 */
void
InferClientInputStats(const InferRequest *req, int64 *rows_cached,
					  int64 *bytes_saved, int64 *resends)
{
	*rows_cached = req->rows_cached;
	*bytes_saved = req->bytes_total - req->bytes_sent;
	*resends = req->resends;
}

/*
 * Sets run's input_sha256 (in the current memory context) for the rows of
 * a request of npayloads rows to worker, and cached_rows for those the
 * worker's filter claims; returns the rows left out (palloc'd flags), or
 * NULL when none are.  Uses the staged digests when they are this
 * request's (see the banner), and drops them.
 */
static bool *
client_prepare_inputs(const InferWorker *worker, Pginfer__RunFragment *run,
					  int npayloads, const void *const *payloads,
					  const size_t *payload_lens)
{
	ClientStaged *st = &client_staged;
	uint8	   *digests = palloc(Max((Size) npayloads * PGINFER_SHA256_LEN, 1));
	uint8	   *keys = palloc(Max((Size) npayloads * PGINFER_SHA256_LEN, 1));
	uint8	   *scope = palloc(CLIENT_SCOPE_LEN);
	bool	   *hashed = palloc(sizeof(bool) * Max(npayloads, 1));
	bool	   *omit = NULL;
	int			ncached = 0;

	client_input_scope(scope);
	if (st->nrows == npayloads && st->payloads == payloads &&
		st->lens == payload_lens && st->counter + 1 == client_request_counter &&
		memcmp(st->scope, scope, CLIENT_SCOPE_LEN) == 0)
	{
		memcpy(digests, st->digests, (Size) npayloads * PGINFER_SHA256_LEN);
		memcpy(keys, st->keys, (Size) npayloads * PGINFER_SHA256_LEN);
		memcpy(hashed, st->hashed, sizeof(bool) * npayloads);
	}
	else
		client_hash_rows(npayloads, payloads, payload_lens, scope, digests,
						 keys, hashed);
	st->nrows = 0;

	run->input_scope.data = scope;
	run->input_scope.len = CLIENT_SCOPE_LEN;

	run->n_input_sha256 = npayloads;
	run->input_sha256 = palloc(sizeof(ProtobufCBinaryData) * npayloads);
	for (int i = 0; i < npayloads; i++)
	{
		run->input_sha256[i].data = hashed[i] ? digests + i * PGINFER_SHA256_LEN : NULL;
		run->input_sha256[i].len = hashed[i] ? PGINFER_SHA256_LEN : 0;
	}

	/* the worker's filter, as its last state had it */
	if (worker->pool_slot != 0 && InferPoolEnabled())
	{
		const InferPoolWorker *w;

		omit = palloc0(sizeof(bool) * npayloads);
		InferPoolLock(false);
		w = InferPoolSlot(worker->pool_slot);
		for (int i = 0; w->used && w->bloom_hashes > 0 && i < npayloads; i++)
			if (hashed[i] &&
				pginfer_bloom_probe(w->input_bloom, PGINFER_BLOOM_BYTES,
									w->bloom_hashes,
									keys + i * PGINFER_SHA256_LEN))
			{
				omit[i] = true;
				ncached++;
			}
		InferPoolUnlock();
	}
	run->n_cached_rows = 0;
	if (ncached == 0)
		return NULL;
	run->cached_rows = palloc(sizeof(uint32_t) * ncached);
	for (int i = 0; i < npayloads; i++)
		if (omit[i])
			run->cached_rows[run->n_cached_rows++] = i;
	return omit;
}

/*
 * Sends the packed header buf (len bytes) and the payload frames (empty
 * for the rows omit marks; omit may be NULL) on s without waiting; adds
 * the bytes sent to req.  Returns false when ZeroMQ refuses a frame;
 * *first (may be NULL) then says whether it was the first one (nothing
 * was sent).
 */
static bool
client_send_frames(InferSocket *s, InferRequest *req, const uint8 *buf,
				   size_t len, int npayloads, const void *const *payloads,
				   const size_t *payload_lens, const bool *omit, bool *first)
{
	int64		sent = (int64) len;

	if (first != NULL)
		*first = true;

	/*
	 * zmq_send copies: the payload lives in memory that an error may free
	 * before ZeroMQ's I/O thread gets to it.  Once the first frame is
	 * accepted, ZeroMQ accepts the rest of the message.
	 */
	if (zmq_send(s->sock, buf, len,
				 (npayloads > 0 ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0)
		return false;
	if (first != NULL)
		*first = false;
	for (int i = 0; i < npayloads; i++)
	{
		bool		out = omit != NULL && omit[i];

		if (zmq_send(s->sock, out ? "" : payloads[i], out ? 0 : payload_lens[i],
					 (i + 1 < npayloads ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0)
			return false;
		req->bytes_sent += out ? 0 : payload_lens[i];
		sent += out ? 0 : (int64) payload_lens[i];
	}
	if (req->stats_model != NULL)
		InferStatsSent(req->stats_model, req->worker.name, req->stats_call,
					   sent);
	return true;
}

/*
 * Answers a MSG_NEED_INPUT for req (see the banner): sends the request
 * again under the same id, with the rows it names, or (the second time)
 * with every row, and puts it back among the pending requests.  Errors:
 * 08P01 when the worker asks for rows that were not left out, or asks a
 * third time; 08006 when the send fails.
 */
static void
client_resend(InferRequest *req, const Pginfer__NeedInput *need)
{
	InferSocket *s = req->socket;
	MemoryContext oldcxt = MemoryContextSwitchTo(req->owner);
	ProtobufCAllocator allocator;
	Pginfer__Header *h;
	Pginfer__RunFragment *run;
	bool	   *omit;
	size_t		k = 0;

	if (req->packed == NULL || need == NULL || req->resends >= 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s asked again for input rows of a request that sent them",
						req->worker.name, req->worker.endpoint)));
	allocator.alloc = client_pb_alloc;
	allocator.free = client_pb_free;
	allocator.allocator_data = req->owner;
	h = pginfer__header__unpack(&allocator, req->packed_len, req->packed);
	if (h == NULL || h->run == NULL)
		elog(ERROR, "pg_infer: could not unpack a request this backend packed");
	run = h->run;
	for (size_t n = 0; n < need->n_rows; n++)
	{
		bool		listed = false;

		for (size_t c = 0; c < run->n_cached_rows && !listed; c++)
			listed = run->cached_rows[c] == need->rows[n];
		if (!listed)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("inference worker \"%s\" at %s asked for input row %u, which was sent",
							req->worker.name, req->worker.endpoint, need->rows[n])));
	}
	/* first time: the named rows; second time: every row */
	for (size_t c = 0; req->resends == 0 && c < run->n_cached_rows; c++)
	{
		bool		named = false;

		for (size_t n = 0; n < need->n_rows && !named; n++)
			named = need->rows[n] == run->cached_rows[c];
		if (!named)
			run->cached_rows[k++] = run->cached_rows[c];
	}
	run->n_cached_rows = k;
	req->resends++;
	omit = palloc0(sizeof(bool) * Max(req->npayloads, 1));
	for (size_t c = 0; c < run->n_cached_rows; c++)
		omit[run->cached_rows[c]] = true;
	req->rows_cached = (int64) run->n_cached_rows;
	req->packed_len = pginfer__header__get_packed_size(h);
	req->packed = palloc(Max(req->packed_len, 1));
	pginfer__header__pack(h, req->packed);
	elog(DEBUG1, "pg_infer: inference worker \"%s\" does not hold %zu input rows of request " UINT64_FORMAT "; sending it again",
		 req->worker.name, need->n_rows, req->request_id);

	client_read_monitor(s);
	req->disconnects_at_send = s->disconnects;
	req->handed_at = GetCurrentTimestamp();
	if (!client_send_frames(s, req, req->packed, req->packed_len, req->npayloads,
							req->payloads, req->payload_lens, omit, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not send request to inference worker \"%s\" at %s: %s",
						req->worker.name, req->worker.endpoint,
						zmq_strerror(zmq_errno()))));
	dlist_push_tail(&client_pending, &req->node);
	req->linked = true;
	InferPoolAddInflight(&req->worker, req->npayloads, &req->inflight);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Connects s anew to worker's endpoint after the worker refused s's CURVE
 * key: ZeroMQ ends a connection whose handshake the peer refused and does
 * not try it again (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH), so without this a
 * worker whose --curve-allowed-clients file was fixed, and which was
 * started again, would stay out of reach for the rest of the session.  A
 * worker that still refuses the key refuses this connection too, and the
 * wait for it ends as before.  Errors: 22023 as in client_socket (the
 * endpoint connected before, so not expected).
 */
static void
client_connect_again(InferSocket *s, const InferWorker *worker)
{
	/* the refused connection may be gone already: ENOENT is fine */
	(void) zmq_disconnect(s->sock, s->endpoint);
	if (zmq_connect(s->sock, s->endpoint) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid endpoint \"%s\" for inference worker \"%s\": %s",
						s->endpoint, worker->name, zmq_strerror(zmq_errno()))));
	s->refused = false;
	s->handshaking = false;
	s->connected = false;
}

/*
 * For an ipc:// endpoint, what its socket file says about a connection
 * that was not made, appended to detail (a new string in the current
 * memory context): it is missing (the worker does not listen there, or
 * listens in its own /tmp: systemd's PrivateTmp=yes), it is not a socket,
 * or this server's operating-system user may not open it (connect(2) needs
 * write permission on the file, and ZeroMQ creates it with the worker's
 * umask).  detail itself otherwise, and for other endpoints.  Used by
 * backends' 08006 errors and the pool monitor's "is down" log line.
 */
const char *
InferClientIpcDetail(const char *endpoint, const char *detail)
{
	const char *path;
	struct stat st;

	if (strncmp(endpoint, "ipc://", 6) != 0)
		return detail;
	path = endpoint + 6;
	if (stat(path, &st) != 0)
		return psprintf("%s The socket file %s cannot be found by this server (%s): the worker is not listening there, or it runs with a /tmp of its own (systemd's PrivateTmp=yes).",
						detail, path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return psprintf("%s %s is not a socket.", detail, path);
	if (access(path, R_OK | W_OK) != 0)
		return psprintf("%s The socket file %s exists, but this server's operating-system user (user id %u) may not open it (%s): ZeroMQ creates it with the worker's umask; give that user write access to it (a group shared with the worker and a umask of 0007 for the worker), or use a tcp:// endpoint on 127.0.0.1.",
						detail, path, (unsigned) geteuid(), strerror(errno));
	return detail;
}

/*
 * Raises 08006 for worker (its socket s): no connection could be made,
 * detail says why, and what s's ZeroMQ handshakes showed if they failed
 * (or, for an ipc:// endpoint, what its socket file showed:
 * InferClientIpcDetail).
 */
static void client_raise_no_connection(InferSocket *s, const InferWorker *worker,
									   const char *detail) pg_attribute_noreturn();

static void
client_raise_no_connection(InferSocket *s, const InferWorker *worker, const char *detail)
{
	uint64		failed;

	/*
	 * TCP connections made during this wait whose ZeroMQ handshake failed:
	 * the worker refused the CURVE key, or something else listens there
	 * (the worker's state or metrics port, another server), or the worker
	 * is hung
	 */
	client_read_monitor(s);
	failed = s->handshake_failures - s->failures_at_wait;
	if (s->refused)
		detail = psprintf("%s The worker refused this backend's CURVE key: its --curve-allowed-clients file lacks the key of infer.curve_public_key_file (once the worker has it and has been started again, the next call connects anew).",
						  detail);
	else if (failed > 0)
		detail = psprintf("%s Connections were made, but what listens there did not complete the worker's ZeroMQ handshake (failed handshakes: %llu): check that this is the worker's --listen address, not its --state-listen or --metrics-listen port nor another server's, and that the worker is not hung.",
						  detail, (unsigned long long) failed);
	else
		detail = InferClientIpcDetail(worker->endpoint, detail);
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("could not connect to inference worker \"%s\" at %s",
					worker->name, worker->endpoint),
			 errdetail_internal("%s", detail),
			 errhint("Check that infer-worker is running and listening on %s (infer.workers shows each worker's status), or remove it with infer.drop_worker().",
					 worker->endpoint)));
}

/*
 * Sends request (its version and request_id already set) to worker with
 * npayloads payload frames and returns the pending request, allocated in
 * the current memory context (its owner; see the banner); the reply
 * (InferClientWait) is due within timeout_ms of now.  A MSG_RUN_FRAGMENT
 * gets its input digests and leaves out the rows the worker holds (see the
 * banner): payloads and payload_lens must stay valid until the reply is
 * returned or the request is forgotten.  Errors: 08006 when no connection
 * could be made in time (infer.worker_timeout for a worker the pool holds
 * down).  When the connection closes between the wait for
 * it and the send, nothing is sent and the request is returned all the
 * same: InferClientWait raises the loss (08006).
 */
InferRequest *
InferClientSend(const InferWorker *worker, Pginfer__Header *request,
				int npayloads, const void *const *payloads,
				const size_t *payload_lens, int timeout_ms)
{
	InferSocket *s = client_socket(worker);
	InferRequest *req;
	size_t		len;
	uint8_t    *buf;
	int			watch;
	InferPoolStatus status;
	ClientWait	waited;
	bool		down;
	bool		first;
	bool	   *omit = NULL;

	if (request->client == NULL || request->client[0] == '\0')
		request->client = client_identity();
	req = palloc0(sizeof(InferRequest));
	req->socket = s;
	req->worker.name = pstrdup(worker->name);
	req->worker.endpoint = pstrdup(worker->endpoint);
	req->worker.pool_slot = worker->pool_slot;
	req->worker.est_ms = worker->est_ms;
	req->worker.nruns = worker->nruns;
	req->worker.runs = palloc(sizeof(char *) * Max(worker->nruns, 1));
	for (int i = 0; i < worker->nruns; i++)
		req->worker.runs[i] = pstrdup(worker->runs[i]);
	req->npayloads = npayloads;
	req->payloads = payloads;
	req->payload_lens = payload_lens;
	for (int i = 0; i < npayloads; i++)
		req->bytes_total += payload_lens[i];
	/* the input cache: digests, and the rows the worker holds left out */
	if (request->kind == PGINFER__MSG_KIND__MSG_RUN_FRAGMENT &&
		request->run != NULL && npayloads > 0 && infer_input_cache_min_bytes >= 0)
		omit = client_prepare_inputs(worker, request->run, npayloads, payloads,
									 payload_lens);
	if (request->kind == PGINFER__MSG_KIND__MSG_RUN_FRAGMENT &&
		request->run != NULL)
	{
		req->stats_model = palloc(INFER_STATS_MODEL_LEN);
		InferStatsRequestLabel(request->run, req->stats_model,
							   INFER_STATS_MODEL_LEN);
		req->stats_call = InferStatsCurrentCall();
	}
	req->sent_at = GetCurrentTimestamp();
	req->request_id = request->request_id;
	req->timeout_ms = timeout_ms;
	req->owner = CurrentMemoryContext;
	req->resowner = CurrentResourceOwner;
	req->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												timeout_ms);

	len = pginfer__header__get_packed_size(request);
	buf = palloc(Max(len, 1));
	pginfer__header__pack(request, buf);

	/*
	 * With ZMQ_IMMEDIATE, POLLOUT means a live connection to the worker.  A
	 * worker that is up or stale when the wait begins and goes down during
	 * it (pool.c: no state within infer.worker_timeout) ends the wait then,
	 * so placement can go elsewhere; so does one not heard from yet (just
	 * taken into the pool, as every worker is after a server restart)
	 * while placement saw another worker not down.  The only worker, not
	 * heard from yet, is waited for infer.timeout (a worker still
	 * starting), as without a pool monitor.
	 */
	status = InferPoolSlotStatus(worker->pool_slot);
	watch = status == INFER_POOL_UP || status == INFER_POOL_STALE ||
		(status == INFER_POOL_UNKNOWN && worker->others_up) ?
		worker->pool_slot : 0;
	/*
	 * A worker the pool holds down (placement chose it as every worker is,
	 * or round_robin did) gets infer.worker_timeout to connect, not the
	 * whole infer.timeout: a worker coming back is heard from and connects
	 * well within that.
	 */
	down = status == INFER_POOL_DOWN && infer_worker_timeout_ms < timeout_ms;
	client_read_monitor(s);
	if (s->refused)
		client_connect_again(s, worker);
	s->failures_at_wait = s->handshake_failures;
	waited = client_wait(s, ZMQ_POLLOUT,
						 down ? TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															infer_worker_timeout_ms) :
						 req->deadline, NULL, watch, worker->others_up);
	if (waited != CLIENT_READY)
		client_stats_done(req, NULL);
	if (waited == CLIENT_TIMEOUT && down)
		client_raise_no_connection(s, worker,
								   psprintf("The pool holds the worker down (no heartbeat for infer.worker_timeout), and no connection was made within that time (%d ms).",
											infer_worker_timeout_ms));
	if (waited == CLIENT_DISCONNECTED && status == INFER_POOL_UNKNOWN)
		client_raise_no_connection(s, worker,
								   psprintf("The pool has not heard from the worker within infer.worker_timeout (%d ms) of taking it in, and no connection was made meanwhile.",
											infer_worker_timeout_ms));
	if (waited == CLIENT_DISCONNECTED)
		client_raise_no_connection(s, worker,
								   pstrdup("The worker went down while the request waited for a connection (its connection dropped and did not come back, or no heartbeat came for infer.worker_timeout)."));
	if (waited != CLIENT_READY)
		client_raise_no_connection(s, worker,
								   psprintf("No connection was made within %d ms (infer.timeout): the worker is unreachable.",
											timeout_ms));

	/* Disconnections before this point concern earlier requests. */
	client_read_monitor(s);
	req->disconnects_at_send = s->disconnects;
	req->handed_at = GetCurrentTimestamp();
	/*
	 * in flight, only a worker heard from is watched: one the monitor
	 * cannot reach (while this backend can) would have its requests lost
	 */
	req->watch_slot = status == INFER_POOL_UP || status == INFER_POOL_STALE ?
		worker->pool_slot : 0;
	if (!client_send_frames(s, req, buf, len, npayloads, payloads, payload_lens,
							omit, &first))
	{
		/*
		 * EAGAIN on the first frame after POLLOUT: the connection closed
		 * in between (a worker stopping), and ZMQ_IMMEDIATE queues nothing
		 * without one.  Nothing went out; the loss is raised when the
		 * reply is waited for, so that InferClientWaitOrLost sends the
		 * rows to another worker.  A refusal after the first frame is the
		 * statement's error, as before.
		 */
		if (zmq_errno() != EAGAIN || !first)
			goto send_failed;
		req->unsent = true;
		InferPlacementRelease(worker);
		return req;
	}
	if (omit != NULL)
	{
		/* kept to send again on MSG_NEED_INPUT */
		req->packed = buf;
		req->packed_len = len;
		req->rows_cached = (int64) request->run->n_cached_rows;
	}
	else
		pfree(buf);

	dlist_push_tail(&client_pending, &req->node);
	req->linked = true;
	req->forget.func = client_forget;
	req->forget.arg = req;
	MemoryContextRegisterResetCallback(req->owner, &req->forget);
	/*
	 * the pool's in-flight estimate (placement's reservation, dated now),
	 * taken back with the request
	 */
	InferPoolSent(worker, npayloads, &req->inflight);
	return req;

send_failed:
	client_stats_done(req, NULL);
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("could not send request to inference worker \"%s\" at %s: %s",
					worker->name, worker->endpoint,
					zmq_strerror(zmq_errno()))));
	return NULL;				/* keep the compiler quiet */
}

/*
 * When req's reply is a MSG_NEED_INPUT (it may have been read while
 * another request waited), drops it and sends the rows again
 * (client_resend); returns whether it did, i.e. req waits again.
 */
static bool
client_take_need_input(InferRequest *req)
{
	InferReply *need = req->reply;

	if (need == NULL || need->header->kind != PGINFER__MSG_KIND__MSG_NEED_INPUT)
		return false;
	req->reply = NULL;
	client_resend(req, need->header->need_input);
	MemoryContextDelete(GetMemoryChunkContext(need));
	return true;
}

/*
 * The time req's wait ends: infer.timeout (req->timeout_ms) after its send
 * or after the last reply its worker sent to one of this backend's
 * requests, whichever is later.  So a request queued on the worker behind
 * this backend's other batches (infer.max_inflight of them) waits while
 * the worker answers those, and infer.timeout bounds how long the worker
 * may leave the backend without any answer, not the queue's length.
 */
static TimestampTz
client_deadline(const InferRequest *req)
{
	if (req->socket->answered_at == 0)
		return req->deadline;
	return Max(req->deadline,
			   TimestampTzPlusMilliseconds(req->socket->answered_at,
										   req->timeout_ms));
}

/*
 * Waits for req's reply (until client_deadline) and returns it;
 * it lives in a child context of req's owner.  Replies to other requests
 * read meanwhile go to those.  Errors: 57014 when the worker did not
 * answer in time (the request is then cancelled), 08006 when it went
 * away while it held the request or as it was sent, or, up at send, was
 * found down by the pool (then cancelled), 08P01 on a reply that cannot be
 * parsed or has another protocol version.
 */
InferReply *
InferClientWait(InferRequest *req)
{
	if (req->unsent)
	{
		client_stats_done(req, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("lost the connection to inference worker \"%s\" at %s as the request was sent",
						req->worker.name, req->worker.endpoint),
				 errdetail("The connection closed between the wait for it and the send: nothing reached the worker."),
				 errhint("Check the worker's log; the statement can be run again once it is back.")));
	}
	while (client_take_need_input(req) || req->reply == NULL)
	{
		/* Can't happen: callers never wait on a request they cancelled. */
		if (!req->linked)
			elog(ERROR, "pg_infer: waiting for a cancelled request");
		switch (client_wait(req->socket, ZMQ_POLLIN, client_deadline(req), req,
							req->watch_slot, false))
		{
			case CLIENT_READY:
				break;
			case CLIENT_TIMEOUT:
				client_cancel(req);
				client_stats_done(req, NULL);
				ereport(ERROR,
						(errcode(ERRCODE_QUERY_CANCELED),
						 errmsg("inference worker \"%s\" at %s did not answer within %d ms",
								req->worker.name, req->worker.endpoint,
								req->timeout_ms),
						 errdetail("The worker answered none of this session's requests for infer.timeout (%d ms): the request takes longer than that, the worker is busy with other work, or it is stuck; the request was cancelled.",
								   req->timeout_ms),
						 errhint("Raise infer.timeout, add workers with infer.add_worker(), or check the worker's log.")));
				break;
			case CLIENT_DISCONNECTED:
				client_stats_done(req, NULL);
				/* still connected: the pool found it down (hung) */
				if (req->socket->disconnects == req->disconnects_at_send)
				{
					client_cancel(req);
					ereport(ERROR,
							(errcode(ERRCODE_CONNECTION_FAILURE),
							 errmsg("inference worker \"%s\" at %s stopped answering while it held the request",
									req->worker.name, req->worker.endpoint),
							 errdetail("No heartbeat came from the worker for infer.worker_timeout (%d ms): it is hung or unreachable.",
									   infer_worker_timeout_ms),
							 errhint("Check the worker's process and log; the statement can be run again once it is back.")));
				}
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("lost the connection to inference worker \"%s\" at %s while it held the request",
								req->worker.name, req->worker.endpoint),
						 errdetail("The worker closed the connection or exited before it answered."),
						 errhint("Check the worker's log; the statement can be run again once it is back.")));
				break;
		}
		client_dispatch(req->socket, &req->worker);
	}
	return req->reply;
}

/*
 * Whether reply is a worker's MSG_ERROR 57P01 (admin_shutdown): it is
 * shutting down and returned no result for the request, which it did not
 * run or stopped between rows (worker/server.c job_complete).
 */
static bool
client_not_run(const InferReply *reply)
{
	const Pginfer__Error *e = reply->header->error;

	return reply->header->kind == PGINFER__MSG_KIND__MSG_ERROR && e != NULL &&
		e->sqlstate != NULL && strcmp(e->sqlstate, "57P01") == 0;
}

/*
 * Raises 57P01 for req, whose worker answered reply (client_not_run),
 * with the worker's message in the detail when it is plain ASCII.
 */
static void
client_raise_not_run(InferRequest *req, const InferReply *reply)
{
	const char *m = reply->header->error->message;
	bool		ascii = m != NULL && m[0] != '\0';

	for (const char *c = m; ascii && *c != '\0'; c++)
		ascii = (unsigned char) *c < 0x80;
	ereport(ERROR,
			(errcode(ERRCODE_ADMIN_SHUTDOWN),
			 errmsg("inference worker \"%s\" at %s is shutting down and did not run the request",
					req->worker.name, req->worker.endpoint),
			 ascii ? errdetail_internal("The worker answered: %s.", m) : 0,
			 errhint("Run the query again once the worker is back, or register another worker with infer.add_worker().")));
}

/*
 * Waits for req's reply as InferClientWait does, but returns NULL, with
 * *lost a copy of the error in the current memory context, when req's
 * worker did not run it to the end, so that the caller may send the rows
 * to another worker (docs/placement.md "A worker lost mid-query"): the
 * worker went away or stopped answering while it held req (08006), or
 * answered that it is shutting down (MSG_ERROR 57P01, raised here as
 * client_raise_not_run says: no result came back, and an inference call
 * has no side effects, so sending it again is safe).  req is then
 * forgotten (a late reply is dropped) and its worker marked down in the
 * pool (InferPoolMarkDown, draining for 57P01; not when the pool already
 * holds a run of the worker that started after req went out, as a worker
 * restarted on its endpoint), so placement leaves it out.  Without the pool nothing says which worker is up: the
 * loss is raised and a 57P01 reply returned.  Other errors are raised;
 * other replies are returned.
 */
InferReply *
InferClientWaitOrLost(InferRequest *req, ErrorData **lost)
{
	MemoryContext cxt = CurrentMemoryContext;
	InferReply *volatile reply = NULL;
	volatile bool not_run = false;
	ErrorData  *edata = NULL;

	*lost = NULL;
	PG_TRY();
	{
		reply = InferClientWait(req);
		if (InferPoolEnabled() && client_not_run(reply))
		{
			not_run = true;
			client_raise_not_run(req, reply);
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (!not_run && (edata->sqlerrcode != ERRCODE_CONNECTION_FAILURE ||
						 !InferPoolEnabled()))
		{
			FreeErrorData(edata);
			PG_RE_THROW();
		}
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata == NULL)
		return reply;
	/* a drop read now, for an error that did not come from client_wait */
	client_read_monitor(req->socket);
	InferPoolMarkDown(req->worker.pool_slot, 0, not_run,
					  req->unsent ||
					  req->socket->disconnects != req->disconnects_at_send,
					  req->handed_at);
	InferClientForget(req);
	*lost = edata;
	return NULL;
}

/*
 * Raises lost, the error that lost a request of nrows rows its worker
 * (InferClientWaitOrLost), as the statement's error, its context kept:
 * after sends sends (infer.retries used up) its detail says so; with
 * sends = 0, that no other worker is up to take the rows.
 */
void
InferClientRaiseLost(ErrorData *lost, int nrows, int sends)
{
	char	   *more;

	if (sends > 0)
		more = psprintf(ngettext("The request was sent %d time (infer.retries = %d).",
								 "The request was sent %d times (infer.retries = %d).",
								 sends),
						sends, infer_retries);
	else
		more = psprintf(ngettext("No other inference worker is up to take the request (%d row).",
								 "No other inference worker is up to take the request (%d rows).",
								 nrows),
						nrows);
	lost->detail = psprintf("%s%s%s", lost->detail ? lost->detail : "",
							lost->detail ? " " : "", more);
	ReThrowError(lost);
}

/*
 * Sends hdr, a model request (MSG_LOAD_MODEL, MSG_UNLOAD_MODEL or
 * MSG_PUT_MODEL, with npayloads payload frames), to worker, waits up to
 * infer.timeout for its answer and returns it: a MSG_PONG, whose state
 * the caller may fold into the pool.  failed says what failed, as in
 * "could not load model \"m\"", and request names the request, as in
 * "model load", in the errors.  Errors: the worker's MSG_ERROR with its
 * SQLSTATE (XX000 when it sent none), message and hint, as "inference
 * worker "W" FAILED: MESSAGE"; 08P01 for another kind of answer; those of
 * InferClientSend and InferClientWait.
 */
InferReply *
InferClientModelRequest(const InferWorker *worker, Pginfer__Header *hdr,
						int npayloads, const void *const *payloads,
						const size_t *lens, const char *failed,
						const char *request)
{
	InferReply *reply;

	hdr->version = PGINFER_PROTOCOL_VERSION;
	hdr->request_id = InferClientNextRequestId();
	reply = InferClientWait(InferClientSend(worker, hdr, npayloads, payloads,
											lens, infer_timeout_ms));
	if (reply->header->kind == PGINFER__MSG_KIND__MSG_ERROR)
	{
		const Pginfer__Error *e = reply->header->error;
		const char *st = e && e->sqlstate && strlen(e->sqlstate) == 5 ?
			e->sqlstate : "XX000";

		ereport(ERROR,
				(errcode(MAKE_SQLSTATE(st[0], st[1], st[2], st[3], st[4])),
				 errmsg("inference worker \"%s\" at %s %s: %s", worker->name,
						worker->endpoint, failed,
						e && e->message ? e->message : "no message"),
				 e && e->detail && e->detail[0] ?
				 errdetail_internal("%s", e->detail) : 0,
				 e && e->hint && e->hint[0] ? errhint("%s", e->hint) : 0));
	}
	if (reply->header->kind != PGINFER__MSG_KIND__MSG_PONG)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("inference worker \"%s\" at %s answered a %s with message kind %d",
						worker->name, worker->endpoint, request,
						reply->header->kind)));
	return reply;
}
