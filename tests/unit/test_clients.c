/*
 * test_clients.c
 *	  Unit tests of what the worker counts for each client connection
 *	  (worker/clients.c): one entry a routing id, holds and releases with
 *	  the per-message overhead (held requests are no unread answers),
 *	  a client stalled once its unread answers stay over the limit for
 *	  CLIENT_STALL_US, answer frames counted until ZeroMQ lets go
 *	  of them (sent over a real inproc pair and read, or closed unsent),
 *	  and idle entries pruned while held ones are kept.
 *
 * Prints "test_clients: N passed, M failed"; exits 1 on any failure.
 * Threading: the test's thread and ZeroMQ's I/O threads (the free
 * callbacks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/clients.h"
#include "tests/unit/testutil.h"

/* Entries by routing id; holds and releases; the over flag. */
static void
test_entries(void)
{
	client_table *t = client_table_new(1 << 20);
	client_entry *a = client_table_get(t, "\x00\x01\x02\x03\x04", 5);
	client_entry *b = client_table_get(t, "\x00\x01\x02\x03\x05", 5);
	int64_t		ca,
				cb;

	CHECK(a != NULL && b != NULL && a != b, "two routing ids, two entries");
	ca = client_hold(a, 5000);
	CHECK(client_table_get(t, "\x00\x01\x02\x03\x04", 5) == a,
		  "the same routing id finds the same entry");
	CHECK(ca == 5000 + CLIENT_MESSAGE_OVERHEAD && client_held(a) == ca,
		  "a hold counts its bytes and the overhead: %lld", (long long) client_held(a));
	cb = client_hold(b, 0);
	CHECK(client_held(b) == CLIENT_MESSAGE_OVERHEAD, "an empty request counts the overhead");
	CHECK(client_table_unread(t) == 0 && client_unread(a) == 0,
		  "held requests are not unread answers");
	CHECK(client_set_over(a, CLIENT_OVER) == CLIENT_UNDER &&
		  client_set_over(a, CLIENT_OVER_LOGGED) == CLIENT_OVER &&
		  client_set_over(a, CLIENT_UNDER) == CLIENT_OVER_LOGGED &&
		  client_set_over(a, CLIENT_UNDER) == CLIENT_UNDER,
		  "client_set_over returns the state before");
	client_release(a, ca);
	client_release(b, cb);
	CHECK(client_held(a) == 0 && client_held(b) == 0, "releases bring both back to 0");
	CHECK(client_table_get(t, NULL, 256) == NULL, "a routing id over 255 bytes is refused");
	client_table_destroy(&t);
	CHECK(t == NULL, "destroy clears the pointer");
}

/*
 * The entry a lookup finds survives the sweep that lookup makes, idle or
 * not: its flag (an episode logged over, whose "under again" line is still
 * to come) stays with it.
 */
static void
test_sweep_keeps_the_entry_looked_up(void)
{
	client_table *t = client_table_new(1 << 20);
	client_entry *me = client_table_get(t, "me", 2);
	int			lost = 0;

	client_set_over(me, CLIENT_OVER_LOGGED);
	for (int i = 0; i < 2 * CLIENT_SWEEP_EVERY; i++)
	{
		client_entry *e = client_table_get(t, "me", 2);

		if (client_set_over(e, CLIENT_OVER_LOGGED) != CLIENT_OVER_LOGGED)
			lost++;
	}
	CHECK(lost == 0, "an idle entry looked up keeps its flag through the sweeps (lost %d times)",
		  lost);
	client_table_destroy(&t);
}

/*
 * Idle entries are pruned (a fresh entry comes back with its over flag
 * clear); an entry with a hold survives every sweep.
 */
static void
test_pruning(void)
{
	client_table *t = client_table_new(1 << 20);
	client_entry *idle = client_table_get(t, "idle", 4);
	client_entry *kept = client_table_get(t, "kept", 4);
	int64_t		c = client_hold(kept, 10);
	char		id[32];

	client_set_over(idle, CLIENT_OVER);
	client_set_over(kept, CLIENT_OVER);
	for (int i = 0; i < 10000; i++)
	{
		int			n = snprintf(id, sizeof(id), "peer %d", i);

		client_table_get(t, id, (size_t) n);
	}
	idle = client_table_get(t, "idle", 4);
	CHECK(client_set_over(idle, CLIENT_UNDER) == CLIENT_UNDER,
		  "an idle entry was pruned (its flag is new)");
	CHECK(client_table_get(t, "kept", 4) == kept &&
		  client_set_over(kept, CLIENT_OVER) == CLIENT_OVER &&
		  client_held(kept) == c, "a held entry survives the sweeps");
	client_release(kept, c);
	client_table_destroy(&t);
}

/*
 * An answer frame is counted from client_msg_init until ZeroMQ frees it:
 * sent over an inproc PAIR and read on the other end, and closed unsent.
 */
static void
test_frames(void)
{
	void	   *ctx = zmq_ctx_new();
	void	   *tx = zmq_socket(ctx, ZMQ_PAIR);
	void	   *rx = zmq_socket(ctx, ZMQ_PAIR);
	client_table *t = client_table_new(1000);
	client_entry *c = client_table_get(t, "peer", 4);
	zmq_msg_t	m,
				got;
	char	   *buf = malloc(3000);
	int64_t		one = 3000 + CLIENT_MESSAGE_OVERHEAD;

	memset(buf, 'x', 3000);
	zmq_bind(rx, "inproc://test_clients");
	zmq_connect(tx, "inproc://test_clients");
	CHECK(client_msg_init(&m, buf, 3000, c) == 0, "a counted frame is made");
	CHECK(client_held(c) == one && client_table_unread(t) == one && client_unread(c) == one,
		  "it counts as unread for its client and in all: %lld, %lld",
		  (long long) client_held(c), (long long) client_table_unread(t));
	CHECK(zmq_msg_send(&m, tx, 0) == 3000, "it is sent");
	CHECK(client_held(c) == one, "a frame sent and not yet read still counts");
	CHECK(!client_stalled(c), "over the limit (1000) for a moment: not stalled");
	usleep(CLIENT_STALL_US + 50000);
	CHECK(client_stalled(c), "over it for CLIENT_STALL_US: stalled");
	zmq_msg_init(&got);
	CHECK(zmq_msg_recv(&got, rx, 0) == 3000 &&
		  memcmp(zmq_msg_data(&got), buf, 3000) == 0,
		  "the other end reads the same bytes (inproc passes the buffer)");
	zmq_msg_close(&got);
	CHECK(client_held(c) == 0 && client_table_unread(t) == 0 && client_unread(c) == 0,
		  "once ZeroMQ lets go of it, nothing counts: %lld",
		  (long long) client_held(c));
	CHECK(!client_stalled(c), "read: not stalled any more");

	buf = malloc(10);
	CHECK(client_msg_init(&m, buf, 10, c) == 0 &&
		  client_held(c) == 10 + CLIENT_MESSAGE_OVERHEAD, "a second frame counts");
	zmq_msg_close(&m);
	CHECK(client_held(c) == 0 && client_table_unread(t) == 0,
		  "a frame closed unsent counts no more");

	buf = malloc(10);
	CHECK(client_msg_init(&m, buf, 10, NULL) == 0, "a frame for no client is made");
	zmq_msg_close(&m);
	CHECK(client_table_unread(t) == 0, "and counts nowhere");

	zmq_close(tx);
	zmq_close(rx);
	zmq_ctx_term(ctx);
	client_table_destroy(&t);
}

int
main(void)
{
	test_entries();
	test_pruning();
	test_sweep_keeps_the_entry_looked_up();
	test_frames();
	return tu_report("test_clients");
}
