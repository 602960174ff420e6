/*
 * clients.h
 *	  What the worker holds for each client connection: the bytes of its
 *	  queued and running requests, and the bytes of the answers ZeroMQ keeps
 *	  for it because it has not read them yet.  The worker refuses a
 *	  client's new requests while that sum is over --max-client-bytes
 *	  (docs/security.md, "What a client may hold"), so that a client that
 *	  sends and never reads cannot grow the worker without bound; the
 *	  answers already made for it are never dropped.
 *
 * A client is one connection to the worker's ROUTER socket, named by the
 * routing id ZeroMQ gives it.  An answer frame sent with client_msg_init is
 * counted until ZeroMQ lets go of it: its free callback runs when the frame
 * has been written to the connection, or when the connection is gone (its
 * queue dropped).  That callback runs on one of ZeroMQ's I/O threads, so
 * the counts are atomic; the table itself (lookups, new entries, pruning)
 * belongs to the thread of the socket loop.
 *
 * Each message is counted with CLIENT_MESSAGE_OVERHEAD bytes on top of its
 * payload: what a queued message costs beside its bytes (ZeroMQ's message
 * and queue slot, the unpacked header, the batcher's item), so that many
 * tiny messages are bounded too.
 */
#ifndef INFER_CLIENTS_H
#define INFER_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

typedef struct client_table client_table;
typedef struct client_entry client_entry;

/*
 * Default --max-client-bytes: 1 GiB, so that a backend that keeps
 * infer.max_inflight (4) requests of rows as large as --max-message-bytes
 * (256 MiB) allows is not refused.
 */
#define CLIENT_DEFAULT_MAX_BYTES ((int64_t) 1024 * 1024 * 1024)

/*
 * Bytes a message is counted for beside its payload (measured: about 1 KiB
 * of heap per queued request of one small row; tests/integration/test_worker.sh),
 * and each further frame of a request (a row: its zmq_msg_t, its row id
 * unpacked, its entries in the request's row tables, about 140 bytes).
 */
#define CLIENT_MESSAGE_OVERHEAD 1024
#define CLIENT_FRAME_OVERHEAD 256

/*
 * Refusals (MSG_ERROR answers) a stalled client still gets, in bytes
 * counted: past the limit plus this, its requests are dropped unanswered,
 * since each answer would only be held too.
 */
#define CLIENT_REFUSAL_ALLOWANCE ((int64_t) 1024 * 1024)

/*
 * How long a client's unread answers must stay over the limit for it to
 * count as stalled (client_stalled), in microseconds: an answer just sent
 * counts as unread until ZeroMQ has written it out, so a client that reads
 * as answers come is over for a moment after each large one, and must not
 * be refused for it.
 */
#define CLIENT_STALL_US 1000000

/*
 * New, empty table for clients that may hold limit bytes (--max-client-bytes).
 * NULL when memory runs out.
 */
client_table *client_table_new(int64_t limit);

/*
 * Frees *t and its entries; sets *t to NULL.  Call only once no ZeroMQ
 * message sent with client_msg_init can still be freed (after
 * zmq_ctx_term) and every client_hold has been released.
 */
void		client_table_destroy(client_table **t);

/*
 * The entry of the client whose routing id is id[0..len), made when it has
 * none (len at most 255, ZeroMQ's limit).  Entries that hold nothing are
 * pruned as the table is used (one that was over its limit logs, at INFO,
 * that it holds nothing any more), so the pointer is valid only until the next
 * call on the table unless the caller holds it (client_hold).  NULL when
 * memory runs out.
 */
client_entry *client_table_get(client_table *t, const void *id, size_t len);

/* Bytes the client holds now: requests held plus answers unread, with overheads. */
int64_t		client_held(const client_entry *c);

/* Of those, the answers it has not read (client_msg_init), with overheads. */
int64_t		client_unread(const client_entry *c);

/*
 * Whether the client's unread answers have been over the table's limit
 * for CLIENT_STALL_US or more without a break (it is not reading, or far
 * slower than the answers come).  Thread of the socket loop.
 */
bool		client_stalled(client_entry *c);

/* Answer bytes all clients have not read yet, with overheads. */
int64_t		client_table_unread(const client_table *t);

/*
 * Counts bytes (plus CLIENT_MESSAGE_OVERHEAD) held for the client, as a
 * queued request does; the entry stays valid until the matching
 * client_release.  Returns what was counted, for client_release.
 */
int64_t		client_hold(client_entry *c, int64_t bytes);

/* Lookups between two sweeps of the whole table for idle entries. */
#define CLIENT_SWEEP_EVERY 4096

/* A client's standing against its limit (client_set_over). */
typedef enum client_over
{
	CLIENT_UNDER = 0,			/* under its limit */
	CLIENT_OVER,				/* over, its WARN line left out (rate limit) */
	CLIENT_OVER_LOGGED			/* over, and its WARN line written */
} client_over;

/*
 * Sets the client's standing (client_over); returns the one before, so
 * that an episode is logged once each way: its "back under" line is
 * written only when its "over" line was (CLIENT_OVER_LOGGED).  Thread of
 * the socket loop.
 */
client_over client_set_over(client_entry *c, client_over over);

/* Undoes client_hold(c, ...) that returned counted.  Any thread. */
void		client_release(client_entry *c, int64_t counted);

/*
 * zmq_msg_init_data() of an answer frame of len bytes at buf (malloc'd;
 * ZeroMQ owns it on success and frees it with free()), counted as unread
 * for client c until ZeroMQ lets go of it.  c NULL: not counted.  Returns
 * 0, or -1 (buf is then still the caller's) when memory runs out.
 */
int			client_msg_init(zmq_msg_t *m, void *buf, size_t len, client_entry *c);

#endif							/* INFER_CLIENTS_H */
