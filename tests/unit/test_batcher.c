/*
 * test_batcher.c
 *	  Unit tests of the dynamic batcher's queue (worker/batcher.c): which
 *	  requests form a group, when a group is ready (full, every active
 *	  peer in it, waited its delay, forced, held while a burst comes),
 *	  fairness between keys, cancels by peer and request id, and
 *	  that every item's data is freed exactly once.
 *
 * Prints "test_batcher: N passed, M failed"; exits 1 on any failure.
 * Threading: single-threaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/batcher.h"
#include "tests/unit/testutil.h"

static int	n_freed = 0;

/* free_data of the test items: counts the calls. */
static void
count_free(void *data)
{
	n_freed++;
	free(data);
}

/* Queues a request of key (a string), rows, arrival time, peer and id. */
static void
add(batcher *b, const char *key, int rows, int64_t at, const char *peer, uint64_t id)
{
	int		   *tag = malloc(sizeof(int));
	batch_item *it;

	*tag = (int) id;
	it = batch_item_new(key, strlen(key), rows, at, peer, strlen(peer), id, tag, count_free);
	CHECK_EXPR(it != NULL);
	CHECK_EXPR(batcher_add(b, it) == 0);
}

/*
 * Takes the next group at now (force as given) and checks its request ids
 * against want[0..n_want) (n_want 0: no group is ready).  Frees it.
 */
static void
expect_group(batcher *b, int64_t now, int force, const uint64_t *want, int n_want)
{
	batch_item **items = NULL;
	int			n = -1;
	int			rc = batcher_next(b, now, force, &items, &n);

	if (n_want == 0)
	{
		CHECK_EXPR(rc == 0 && items == NULL && n == 0);
		return;
	}
	CHECK_EXPR(rc == 1 && n == n_want);
	for (int i = 0; rc == 1 && i < n && i < n_want; i++)
		CHECK_EXPR(items[i]->request_id == want[i]);
	for (int i = 0; rc == 1 && i < n; i++)
		batch_item_destroy(&items[i]);
	free(items);
}

/*
 * Groups: same key merges in arrival order up to max_batch rows; a group
 * waits for a peer that is active for its key but not in it, up to the
 * delay.
 */
static void
test_grouping(void)
{
	batcher    *b = batcher_new(4, 1000);

	CHECK_EXPR(b != NULL);
	CHECK_EXPR(batcher_length(b) == 0 && batcher_wait_us(b, 0) == -1);
	/* p3 is the only peer so far: its request goes at once. */
	add(b, "cls", 1, 0, "p3", 9);
	CHECK_EXPR(batcher_wait_us(b, 0) == 0);
	expect_group(b, 0, 0, (const uint64_t[]) {9}, 1);

	add(b, "cls", 1, 100, "p1", 1);
	add(b, "det", 1, 150, "p1", 2);
	add(b, "cls", 2, 200, "p2", 3);

	/* det goes (p1 is its only peer); cls waits: 3 rows < 4, p3 absent. */
	CHECK_EXPR(batcher_wait_us(b, 500) == 0);
	expect_group(b, 500, 0, (const uint64_t[]) {2}, 1);
	expect_group(b, 500, 0, NULL, 0);
	CHECK_EXPR(batcher_wait_us(b, 500) == 600);	/* cls's oldest: 100 + 1000 - 500 */
	CHECK_EXPR(batcher_length(b) == 2 && batcher_rows(b) == 3);
	CHECK_EXPR(batcher_item(b, 0) != NULL && batcher_item(b, 0)->request_id == 1 &&
		  batcher_item(b, 1)->request_id == 3 && batcher_item(b, 2) == NULL &&
		  batcher_item(b, -1) == NULL);

	/* p3's next request fills the group to 4 rows: ready at once. */
	add(b, "cls", 1, 300, "p3", 4);
	CHECK_EXPR(batcher_wait_us(b, 500) == 0);
	expect_group(b, 500, 0, (const uint64_t[]) {1, 3, 4}, 3);
	CHECK_EXPR(batcher_length(b) == 0);

	/* p1 alone again, p2 and p3 active: waits for the delay. */
	add(b, "cls", 1, 600, "p1", 5);
	expect_group(b, 1599, 0, NULL, 0);
	expect_group(b, 1600, 0, (const uint64_t[]) {5}, 1);
	batcher_destroy(&b);
	CHECK_EXPR(b == NULL);
}

/*
 * Active peers (no hold): a lone backend never waits; once every active peer of the
 * key has a request in the group it goes without waiting out the delay;
 * a peer silent for BATCHER_ACTIVE_US no longer counts.
 */
static void
test_active_peers(void)
{
	batcher    *b = batcher_new(64, 2000);

	for (int k = 0; k < 3; k++)
	{
		add(b, "k", 1, 10 * k, "solo", (uint64_t) k);
		expect_group(b, 10 * k, 0, (const uint64_t[]) {(uint64_t) k}, 1);
	}
	/* A second backend: its first request waits for solo, who is active. */
	add(b, "k", 1, 100, "other", 10);
	expect_group(b, 100, 0, NULL, 0);
	CHECK_EXPR(batcher_wait_us(b, 100) == 2000);
	add(b, "j", 1, 101, "solo", 11);	/* another key does not count */
	expect_group(b, 102, 0, (const uint64_t[]) {11}, 1);
	expect_group(b, 102, 0, NULL, 0);
	add(b, "k", 1, 150, "solo", 12);	/* now both are in: go */
	CHECK_EXPR(batcher_wait_us(b, 150) == 0);
	expect_group(b, 150, 0, (const uint64_t[]) {10, 12}, 2);

	/* solo silent for longer than BATCHER_ACTIVE_US: other goes alone at once. */
	add(b, "k", 1, 150 + BATCHER_ACTIVE_US + 1, "other", 13);
	expect_group(b, 150 + BATCHER_ACTIVE_US + 1, 0, (const uint64_t[]) {13}, 1);
	batcher_destroy(&b);
}

/* A request that does not fit ends its group; one bigger than max_batch goes alone. */
static void
test_full_and_oversize(void)
{
	batcher    *b = batcher_new(4, 1000);

	add(b, "k", 3, 0, "a", 1);
	add(b, "k", 2, 10, "b", 2);	/* 3 + 2 > 4: group 1 is full */
	add(b, "k", 1, 20, "c", 3);
	expect_group(b, 30, 0, (const uint64_t[]) {1}, 1);
	/* Now 2 + 1 = 3 rows, peer a absent: waits for request 2's delay. */
	expect_group(b, 30, 0, NULL, 0);
	expect_group(b, 1010, 0, (const uint64_t[]) {2, 3}, 2);

	add(b, "k", 9, 1020, "a", 4);	/* more than max_batch: alone, at once */
	add(b, "k", 1, 1020, "a", 5);
	expect_group(b, 1021, 0, (const uint64_t[]) {4}, 1);
	expect_group(b, 1021, 0, NULL, 0);	/* b and c are active */
	expect_group(b, 1021, 1, (const uint64_t[]) {5}, 1);	/* forced */
	batcher_destroy(&b);
}

/* Among ready groups, the one whose oldest request came first runs first. */
static void
test_fairness(void)
{
	batcher    *b = batcher_new(2, 100);

	add(b, "x", 1, 0, "z", 7);	/* makes z an active peer of x */
	expect_group(b, 0, 0, (const uint64_t[]) {7}, 1);
	add(b, "x", 1, 1, "a", 1);	/* waits for z */
	add(b, "y", 1, 5, "a", 2);
	add(b, "y", 1, 6, "b", 3);	/* y is full (2 rows), x is not ready */
	expect_group(b, 10, 0, (const uint64_t[]) {2, 3}, 2);
	add(b, "y", 2, 20, "c", 4);	/* full again, but x has waited its delay */
	expect_group(b, 101, 0, (const uint64_t[]) {1}, 1);
	expect_group(b, 101, 0, (const uint64_t[]) {4}, 1);
	/* A zero delay makes every group ready at once. */
	batcher_destroy(&b);
	b = batcher_new(64, 0);
	add(b, "x", 1, 50, "a", 6);
	add(b, "x", 1, 50, "b", 8);
	expect_group(b, 50, 0, (const uint64_t[]) {6, 8}, 2);
	batcher_destroy(&b);
}

/* Cancels name the peer and the request id; others stay. */
static void
test_cancel(void)
{
	batcher    *b = batcher_new(8, 1000);
	int			freed_before = n_freed;

	add(b, "k", 1, 0, "peer-a", 7);
	add(b, "k", 1, 0, "peer-b", 7);
	add(b, "k", 1, 0, "peer-a", 8);
	CHECK_EXPR(batcher_cancel(b, "peer-a", 6, 7) == 1);
	CHECK_EXPR(n_freed == freed_before + 1);
	CHECK_EXPR(batcher_cancel(b, "peer-a", 6, 7) == 0);
	CHECK_EXPR(batcher_cancel(b, "peer-c", 6, 8) == 0);
	CHECK_EXPR(batcher_cancel(b, "peer-", 5, 8) == 0);
	CHECK_EXPR(batcher_length(b) == 2);
	expect_group(b, 0, 1, (const uint64_t[]) {7, 8}, 2);
	CHECK_EXPR(batcher_length(b) == 0);

	/* Destroying a queue frees what is still in it. */
	freed_before = n_freed;
	add(b, "k", 1, 0, "p", 1);
	add(b, "j", 1, 0, "p", 2);
	batcher_destroy(&b);
	CHECK_EXPR(n_freed == freed_before + 2);
}

/* The gate of test_gate: holds back key "c" while *ctx is set. */
static int
gate_c(void *ctx, const batch_item *lead)
{
	return !(*(int *) ctx && lead->key_len == 1 && lead->key[0] == 'c');
}

/* Takes the next group gate_c lets run and checks its ids; frees it. */
static void
expect_gated(batcher *b, int *hold, const uint64_t *want, int n_want)
{
	batch_item **items = NULL;
	int			n = -1;
	int			rc = batcher_next_gated(b, 100, 0, gate_c, hold, &items, &n);

	CHECK_EXPR(rc == (n_want > 0) && n == n_want);
	for (int i = 0; rc == 1 && i < n && i < n_want; i++)
		CHECK_EXPR(items[i]->request_id == want[i]);
	for (int i = 0; rc == 1 && i < n; i++)
		batch_item_destroy(&items[i]);
	free(items);
}

/*
 * A gated group keeps its place: younger groups pass it while it is held
 * back, and it goes first once let through.
 */
static void
test_gate(void)
{
	batcher    *b = batcher_new(8, 1000);
	int			hold = 1;

	add(b, "c", 1, 0, "p", 1);
	add(b, "a", 1, 10, "p", 2);
	add(b, "b", 1, 20, "p", 3);
	add(b, "a", 1, 30, "p", 4);
	CHECK_EXPR(batcher_wait_gated(b, 100, gate_c, &hold) == 0);
	expect_gated(b, &hold, (const uint64_t[]) {2, 4}, 2);
	expect_gated(b, &hold, (const uint64_t[]) {3}, 1);
	/* only c is left, held back: no group, and nothing to wait for */
	CHECK_EXPR(batcher_wait_gated(b, 100, gate_c, &hold) == -1);
	CHECK_EXPR(batcher_wait_us(b, 100) == 0);
	expect_gated(b, &hold, NULL, 0);
	CHECK_EXPR(batcher_length(b) == 1);
	/* let through, it goes before a younger group */
	add(b, "a", 1, 40, "p", 5);
	hold = 0;
	expect_gated(b, &hold, (const uint64_t[]) {1}, 1);
	expect_gated(b, &hold, (const uint64_t[]) {5}, 1);
	CHECK_EXPR(batcher_length(b) == 0);
	batcher_destroy(&b);
}

/* Queues a request of one row as add() does, with a hold of hold_us. */
static void
add_held(batcher *b, const char *key, int64_t at, const char *peer,
		 uint64_t id, int64_t hold_us)
{
	int		   *tag = malloc(sizeof(int));
	batch_item *it;

	*tag = (int) id;
	it = batch_item_new(key, strlen(key), 1, at, peer, strlen(peer), id, tag, count_free);
	CHECK_EXPR(it != NULL);
	it->hold_us = hold_us;
	CHECK_EXPR(batcher_add(b, it) == 0);
}

/*
 * The hold: a group whose lead has a hold of 40 ms waits while requests of
 * its key keep coming, until 10 ms (a quarter) pass without one, and at
 * most the whole hold; a lone peer's request waits that gap too.  Full
 * groups go at once, and a max delay of 0 turns the hold off.
 */
static void
test_hold(void)
{
	batcher    *b = batcher_new(32, 2000);

	/* a lone peer: ready at the quiet gap's end, not at once */
	add_held(b, "opt", 0, "p1", 1, 40000);
	CHECK_EXPR(batcher_wait_us(b, 0) == 10000);
	expect_group(b, 5000, 0, NULL, 0);
	add_held(b, "opt", 5000, "p2", 2, 40000);
	add_held(b, "opt", 12000, "p3", 3, 40000);
	CHECK_EXPR(batcher_wait_us(b, 14000) == 8000);
	expect_group(b, 21999, 0, NULL, 0);
	expect_group(b, 22000, 0, (const uint64_t[]) {1, 2, 3}, 3);

	/* arrivals 9 ms apart never leave a 10 ms gap: the hold ends it */
	for (int k = 0; k < 5; k++)
		add_held(b, "opt", 100000 + 9000 * k, "p1", 10 + k, 40000);
	expect_group(b, 139999, 0, NULL, 0);
	CHECK_EXPR(batcher_wait_us(b, 139999) == 1);
	expect_group(b, 140000, 0, (const uint64_t[]) {10, 11, 12, 13, 14}, 5);
	batcher_destroy(&b);

	/* a full group goes at once, hold or not */
	b = batcher_new(2, 2000);
	add_held(b, "opt", 0, "p1", 20, 40000);
	add_held(b, "opt", 1, "p2", 21, 40000);
	expect_group(b, 1, 0, (const uint64_t[]) {20, 21}, 2);
	batcher_destroy(&b);

	/* max delay 0: no hold */
	b = batcher_new(32, 0);
	add_held(b, "opt", 0, "p1", 30, 40000);
	CHECK_EXPR(batcher_wait_us(b, 0) == 0);
	expect_group(b, 0, 0, (const uint64_t[]) {30}, 1);
	batcher_destroy(&b);

	/*
	 * A hold shorter than the max delay: a lone peer sending every 300 us
	 * is ready at the hold's end (1500), not at the max delay's (4000)
	 */
	b = batcher_new(32, 4000);
	for (int k = 0; k < 6; k++)
		add_held(b, "opt", 300 * k, "p1", 40 + k, 1500);
	CHECK_EXPR(batcher_wait_us(b, 1499) == 1);
	expect_group(b, 1499, 0, NULL, 0);
	expect_group(b, 1500, 0, (const uint64_t[]) {40, 41, 42, 43, 44, 45}, 6);

	/* a hold past BATCHER_MAX_HOLD_US counts as that, without overflow */
	add_held(b, "opt", 10000, "p1", 50, INT64_MAX);
	add_held(b, "opt", 10001, "p2", 51, INT64_MAX);
	CHECK_EXPR(batcher_wait_us(b, 10001) == BATCHER_MAX_HOLD_US / 4);
	expect_group(b, 10000 + BATCHER_MAX_HOLD_US / 4, 0, NULL, 0);
	expect_group(b, 10001 + BATCHER_MAX_HOLD_US / 4, 0, (const uint64_t[]) {50, 51}, 2);
	batcher_destroy(&b);
}

/* Runs every test. */
int
main(void)
{
	int			added;

	test_grouping();
	test_active_peers();
	test_full_and_oversize();
	test_fairness();
	test_cancel();
	test_gate();
	test_hold();
	/* Every item added was freed exactly once. */
	added = 6 + 7 + 5 + 7 + 5 + 5 + 19;
	CHECK_EXPR(n_freed == added);

	return tu_report("test_batcher");
}
