/*
 * batcher.h
 *	  The dynamic batcher: a queue of run-fragment requests that merges
 *	  requests of the same fragment, from any number of peers, into groups
 *	  of up to max_batch rows (DESIGN.md, "Query flow", step 4).
 *
 * A request is queued as a batch_item: its group key (bytes that are equal
 * exactly when two requests may run as one, e.g. the packed Fragment and
 * pixel limit), its row count, its arrival time, the peer and request id
 * that a cancel names, and an opaque payload the caller owns.  The queue
 * knows nothing of ZeroMQ or protobuf, so it is tested on its own
 * (tests/unit/test_batcher.c).
 *
 * batcher_next() hands out one group: the requests of one key in arrival
 * order whose rows add up to at most max_batch (a single request with more
 * rows than that forms a group alone).  A group is ready when it is full
 * (the next request of its key would not fit, or it holds max_batch rows),
 * when it holds a request of every peer that sent a request of its key in
 * the last BATCHER_ACTIVE_US or 4 * max_delay_us, whichever is longer
 * (nobody else is likely to join: a lone backend does not wait, but for
 * the quiet gap of a hold, below), when its oldest request has waited max_delay_us,
 * or when the caller forces it (shutting down).  A group whose oldest
 * request has a hold_us (the caller's: a fraction of the run it would
 * start) is ready by those two rules only once no request of its key has
 * come for a quarter of that hold (a quiet gap), or when its oldest
 * request has waited the whole hold: a burst of requests that arrive a
 * few milliseconds apart runs as one group rather than as a first run of
 * one request and then the rest.  A peer's own further requests count as
 * arrivals too: a backend that sends several at once may wait up to the
 * hold, and they run as one group.  Among ready groups the
 * one whose oldest request arrived first goes first, so no key starves
 * another.
 *
 * Threading: a batcher belongs to one thread (the server loop).
 */
#ifndef INFER_BATCHER_H
#define INFER_BATCHER_H

#include <stddef.h>
#include <stdint.h>

typedef struct batch_item
{
	uint8_t    *key;			/* group key, malloc'd, owned by the item */
	size_t		key_len;
	int			n_rows;
	int64_t		arrival_us;		/* monotonic microseconds */
	int64_t		hold_us;		/* 0, or how long its group may wait while
								 * requests of its key keep coming (below;
								 * at most BATCHER_MAX_HOLD_US) */
	uint8_t    *peer;			/* routing id, malloc'd, owned; may be NULL */
	size_t		peer_len;
	uint64_t	request_id;
	void	   *data;			/* the caller's, freed with free_data */
	void		(*free_data) (void *data);
} batch_item;

typedef struct batcher batcher;

/* The longest hold_us taken into account (a larger one counts as this). */
#define BATCHER_MAX_HOLD_US 60000000

/* How long a peer counts as active for a key after its last request (at least). */
#define BATCHER_ACTIVE_US 1000000

/*
 * New empty queue.  max_batch >= 1 rows per group; max_delay_us >= 0 is
 * how long the oldest request of a group that is not full may wait for
 * more.  NULL when memory runs out.
 */
batcher    *batcher_new(int max_batch, int64_t max_delay_us);

/* Frees every queued item (and its data) and *b; sets *b to NULL. */
void		batcher_destroy(batcher **b);

/*
 * New item holding copies of key and peer (either may be empty); data is
 * taken over (freed with free_data by batch_item_destroy).  NULL when
 * memory runs out (data is then not taken).
 */
batch_item *batch_item_new(const void *key, size_t key_len, int n_rows,
						   int64_t arrival_us, const void *peer,
						   size_t peer_len, uint64_t request_id, void *data,
						   void (*free_data) (void *data));

/* Frees *it, its copies and its data; sets *it to NULL. */
void		batch_item_destroy(batch_item **it);

/* Queues it (taken over).  Returns 0, or -1 when memory runs out (it is kept by the caller). */
int			batcher_add(batcher *b, batch_item *it);

/* Number of queued requests, and their rows. */
int			batcher_length(const batcher *b);
int			batcher_rows(const batcher *b);

/* The i-th queued request (0 <= i < batcher_length), in arrival order; borrowed. */
const batch_item *batcher_item(const batcher *b, int i);

/*
 * Removes the queued requests of peer with request_id (a cancel) and
 * frees them.  Returns how many were removed (0: none was queued).
 */
int			batcher_cancel(batcher *b, const void *peer, size_t peer_len,
						   uint64_t request_id);

/*
 * Takes the next ready group out of the queue (see above): sets *items to
 * a malloc'd array of *n items in arrival order, owned by the caller, and
 * returns 1; returns 0 when no group is ready at now_us (force != 0: any
 * group is ready), -1 when memory runs out.
 */
int			batcher_next(batcher *b, int64_t now_us, int force,
						 batch_item ***items, int *n);

/*
 * Microseconds from now_us until the next group becomes ready by its
 * delay (0 when one is ready now); -1 when the queue is empty.
 */
int64_t		batcher_wait_us(const batcher *b, int64_t now_us);

/*
 * Says whether the group led by lead (the oldest queued request of its
 * key; every request of a key needs the same things) may run now: 1, or 0
 * to leave it queued for now.  ctx is the caller's.
 */
typedef int (*batcher_gate) (void *ctx, const batch_item *lead);

/*
 * As batcher_next and batcher_wait_us, skipping the groups gate (NULL:
 * none) holds back: the oldest ready group that gate lets run goes first,
 * and a group held back keeps its place (it goes first once gate lets it,
 * when it is still the oldest).  batcher_wait_gated returns -1 when the
 * queue holds no group that gate lets run.
 */
int			batcher_next_gated(batcher *b, int64_t now_us, int force,
							   batcher_gate gate, void *ctx,
							   batch_item ***items, int *n);
int64_t		batcher_wait_gated(const batcher *b, int64_t now_us,
							   batcher_gate gate, void *ctx);

/* Monotonic clock in microseconds. */
int64_t		batcher_now_us(void);

#endif							/* INFER_BATCHER_H */
