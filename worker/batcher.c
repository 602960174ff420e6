/*
 * batcher.c
 *	  The dynamic batcher's queue and grouping (see batcher.h).
 *
 * The queue is an array of items in arrival order.  It holds what arrived
 * while one group ran, i.e. a few requests per backend, so finding groups
 * by scanning it is cheap and keeps the order obvious.  Beside it, a list
 * of (key, peer, last request time) says which peers are active for a
 * key; entries older than active_us are dropped as requests come.
 *
 * Threading: one thread (the server loop).
 */
#include "worker/batcher.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"

/* A peer that sent a request of a key, and when it last did. */
typedef struct peer_seen
{
	uint8_t    *key;
	size_t		key_len;
	uint8_t    *peer;
	size_t		peer_len;
	int64_t		last_us;
} peer_seen;

struct batcher
{
	int			max_batch;
	int64_t		max_delay_us;
	int64_t		active_us;		/* a peer is active this long after a request */
	batch_item **items;			/* arrival order */
	int			n;
	int			cap;
	peer_seen  *seen;			/* active peers per key */
	int			n_seen;
	int			cap_seen;
};

/* Monotonic clock in microseconds. */
int64_t
batcher_now_us(void)
{
	return ie_now_ns() / 1000;
}

/* New empty queue; see batcher.h. */
batcher *
batcher_new(int max_batch, int64_t max_delay_us)
{
	batcher    *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->max_batch = max_batch >= 1 ? max_batch : 1;
	b->max_delay_us = max_delay_us >= 0 ? max_delay_us : 0;
	b->active_us = BATCHER_ACTIVE_US;
	if (b->max_delay_us > b->active_us / 4)
		b->active_us = 4 * b->max_delay_us;
	return b;
}

/* Frees the queue and every item in it; sets *bp to NULL. */
void
batcher_destroy(batcher **bp)
{
	batcher    *b;

	if (bp == NULL || *bp == NULL)
		return;
	b = *bp;
	for (int i = 0; i < b->n; i++)
		batch_item_destroy(&b->items[i]);
	for (int i = 0; i < b->n_seen; i++)
	{
		free(b->seen[i].key);
		free(b->seen[i].peer);
	}
	free(b->seen);
	free(b->items);
	free(b);
	*bp = NULL;
}

/* malloc'd copy of len bytes (a 1-byte buffer for none); NULL when out of memory. */
static uint8_t *
copy_bytes(const void *p, size_t len)
{
	uint8_t    *c = malloc(len > 0 ? len : 1);

	if (c != NULL && len > 0)
		memcpy(c, p, len);
	return c;
}

/* New item; see batcher.h. */
batch_item *
batch_item_new(const void *key, size_t key_len, int n_rows, int64_t arrival_us,
			   const void *peer, size_t peer_len, uint64_t request_id,
			   void *data, void (*free_data) (void *data))
{
	batch_item *it = calloc(1, sizeof(*it));

	if (it == NULL)
		return NULL;
	it->key = copy_bytes(key, key_len);
	it->peer = copy_bytes(peer, peer_len);
	if (it->key == NULL || it->peer == NULL)
	{
		free(it->key);
		free(it->peer);
		free(it);
		return NULL;
	}
	it->key_len = key_len;
	it->peer_len = peer_len;
	it->n_rows = n_rows;
	it->arrival_us = arrival_us;
	it->request_id = request_id;
	it->data = data;
	it->free_data = free_data;
	return it;
}

/* Frees *itp with its copies and data; sets *itp to NULL. */
void
batch_item_destroy(batch_item **itp)
{
	batch_item *it;

	if (itp == NULL || *itp == NULL)
		return;
	it = *itp;
	if (it->free_data != NULL && it->data != NULL)
		it->free_data(it->data);
	free(it->key);
	free(it->peer);
	free(it);
	*itp = NULL;
}

/*
 * Records that its peer sent a request of its key at its arrival time,
 * and forgets peers not heard of for active_us.  Best effort: when
 * memory runs out the peer is just not recorded (its groups then wait for
 * the delay, as without this list).
 */
static void
note_peer(batcher *b, const batch_item *it)
{
	int			found = 0;

	for (int i = 0; i < b->n_seen;)
	{
		peer_seen  *e = &b->seen[i];

		if (e->key_len == it->key_len && e->peer_len == it->peer_len &&
			memcmp(e->key, it->key, it->key_len) == 0 &&
			memcmp(e->peer, it->peer, it->peer_len) == 0)
		{
			if (it->arrival_us > e->last_us)
				e->last_us = it->arrival_us;
			found = 1;
		}
		if (e->last_us < it->arrival_us - b->active_us)
		{
			free(e->key);
			free(e->peer);
			b->seen[i] = b->seen[--b->n_seen];
			continue;
		}
		i++;
	}
	if (found)
		return;
	if (b->n_seen == b->cap_seen)
	{
		int			cap = b->cap_seen > 0 ? b->cap_seen * 2 : 16;
		peer_seen  *p = realloc(b->seen, (size_t) cap * sizeof(*p));

		if (p == NULL)
			return;
		b->seen = p;
		b->cap_seen = cap;
	}
	{
		peer_seen  *e = &b->seen[b->n_seen];

		e->key = copy_bytes(it->key, it->key_len);
		e->peer = copy_bytes(it->peer, it->peer_len);
		if (e->key == NULL || e->peer == NULL)
		{
			free(e->key);
			free(e->peer);
			return;
		}
		e->key_len = it->key_len;
		e->peer_len = it->peer_len;
		e->last_us = it->arrival_us;
		b->n_seen++;
	}
}

/* Queues it at the end; -1 when the array cannot grow. */
int
batcher_add(batcher *b, batch_item *it)
{
	if (b->n == b->cap)
	{
		int			cap = b->cap > 0 ? b->cap * 2 : 16;
		batch_item **p = realloc(b->items, (size_t) cap * sizeof(*p));

		if (p == NULL)
			return -1;
		b->items = p;
		b->cap = cap;
	}
	b->items[b->n++] = it;
	note_peer(b, it);
	return 0;
}

/* Queued requests. */
int
batcher_length(const batcher *b)
{
	return b->n;
}

/* Rows of the queued requests. */
int
batcher_rows(const batcher *b)
{
	int			rows = 0;

	for (int i = 0; i < b->n; i++)
		rows += b->items[i]->n_rows;
	return rows;
}

/* The i-th queued request, or NULL when i is out of range. */
const batch_item *
batcher_item(const batcher *b, int i)
{
	return i >= 0 && i < b->n ? b->items[i] : NULL;
}

/* Removes b->items[i], keeping the order of the rest. */
static void
remove_at(batcher *b, int i)
{
	memmove(&b->items[i], &b->items[i + 1], (size_t) (b->n - i - 1) * sizeof(*b->items));
	b->n--;
}

/* Removes and frees the items of peer/request_id; returns how many. */
int
batcher_cancel(batcher *b, const void *peer, size_t peer_len, uint64_t request_id)
{
	int			removed = 0;

	for (int i = 0; i < b->n;)
	{
		batch_item *it = b->items[i];

		if (it->request_id == request_id && it->peer_len == peer_len &&
			(peer_len == 0 || memcmp(it->peer, peer, peer_len) == 0))
		{
			remove_at(b, i);
			batch_item_destroy(&it);
			removed++;
		}
		else
			i++;
	}
	return removed;
}

/* Whether items a and b have the same group key. */
static int
same_key(const batch_item *a, const batch_item *b)
{
	return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* Whether an item before index i has the same key as items[i]. */
static int
key_seen_before(const batcher *b, int i)
{
	for (int j = 0; j < i; j++)
		if (same_key(b->items[j], b->items[i]))
			return 1;
	return 0;
}

/*
 * The group led by items[first] (the oldest of its key): takes items of
 * that key in order while their rows fit in max_batch (the first always),
 * stopping at the first that does not.  Sets *n_items and *rows, and
 * *newest_us to the arrival of the newest queued item of the key (in the
 * group or not; may be NULL); returns whether the group is full.
 */
static int
group_of(const batcher *b, int first, int *n_items, int *rows,
		 int64_t *newest_us)
{
	int			total = b->items[first]->n_rows;
	int			count = 1;
	int			full = 0;

	if (newest_us != NULL)
		*newest_us = b->items[first]->arrival_us;
	for (int j = first + 1; j < b->n; j++)
	{
		if (!same_key(b->items[j], b->items[first]))
			continue;
		if (newest_us != NULL && b->items[j]->arrival_us > *newest_us)
			*newest_us = b->items[j]->arrival_us;
		if (full)
			continue;
		if (total + b->items[j]->n_rows > b->max_batch)
		{
			full = 1;
			continue;
		}
		total += b->items[j]->n_rows;
		count++;
	}
	*n_items = count;
	*rows = total;
	return full || total >= b->max_batch;
}

/*
 * Whether the group led by items[first] (n_items items of its key, in
 * order) holds a request of every peer active for its key at now_us.
 */
static int
has_every_peer(const batcher *b, int first, int n_items, int64_t now_us)
{
	const batch_item *lead = b->items[first];

	for (int s = 0; s < b->n_seen; s++)
	{
		const peer_seen *e = &b->seen[s];
		int			in_group = 0;

		if (e->last_us < now_us - b->active_us || e->key_len != lead->key_len ||
			memcmp(e->key, lead->key, lead->key_len) != 0)
			continue;
		for (int j = first, k = 0; j < b->n && k < n_items && !in_group; j++)
		{
			const batch_item *it = b->items[j];

			if (!same_key(it, lead))
				continue;
			k++;
			in_group = it->peer_len == e->peer_len &&
				memcmp(it->peer, e->peer, e->peer_len) == 0;
		}
		if (!in_group)
			return 0;
	}
	return 1;
}

/* lead's hold, within [0, BATCHER_MAX_HOLD_US] */
static int64_t
hold_of(const batch_item *lead)
{
	return lead->hold_us < 0 ? 0 :
		lead->hold_us > BATCHER_MAX_HOLD_US ? BATCHER_MAX_HOLD_US : lead->hold_us;
}

/*
 * The quiet gap of the group lead leads: a quarter of its hold, none when
 * the max delay is 0 (every group runs as soon as it is read).
 */
static int64_t
quiet_us(const batcher *b, const batch_item *lead)
{
	return b->max_delay_us > 0 ? hold_of(lead) / 4 : 0;
}

/*
 * When the group led by items[first] is ready by its delay (see batcher.h),
 * in monotonic microseconds, given the arrival of its key's newest item:
 * the hold's end, or the later of the max delay's end and the quiet gap's
 * end, whichever comes first.
 */
static int64_t
ready_at(const batcher *b, const batch_item *lead, int64_t newest_us)
{
	int64_t		hold = b->max_delay_us > 0 && hold_of(lead) > b->max_delay_us ?
		hold_of(lead) : b->max_delay_us;
	int64_t		by_delay = lead->arrival_us + b->max_delay_us;
	int64_t		by_quiet = newest_us + quiet_us(b, lead);
	int64_t		by_rules = by_delay > by_quiet ? by_delay : by_quiet;

	return lead->arrival_us + hold < by_rules ? lead->arrival_us + hold : by_rules;
}

/* Whether the group led by items[first] is ready at now_us (see batcher.h). */
static int
group_ready(const batcher *b, int first, int64_t now_us, int force)
{
	const batch_item *lead = b->items[first];
	int			count,
				rows;
	int64_t		newest;

	if (group_of(b, first, &count, &rows, &newest) || force ||
		now_us >= ready_at(b, lead, newest))
		return 1;
	/* every active peer is in: ready once the quiet gap or the hold has passed */
	return (now_us >= newest + quiet_us(b, lead) ||
			now_us - lead->arrival_us >= hold_of(lead)) &&
		has_every_peer(b, first, count, now_us);
}

/* Takes the next ready group out of the queue; see batcher.h. */
int
batcher_next(batcher *b, int64_t now_us, int force, batch_item ***items, int *n)
{
	return batcher_next_gated(b, now_us, force, NULL, NULL, items, n);
}

/* Takes the next ready group that gate lets run; see batcher.h. */
int
batcher_next_gated(batcher *b, int64_t now_us, int force, batcher_gate gate,
				   void *ctx, batch_item ***items, int *n)
{
	*items = NULL;
	*n = 0;
	for (int i = 0; i < b->n; i++)
	{
		int			count,
					rows,
					k = 0;
		batch_item **out;
		const batch_item *lead = b->items[i];

		if (key_seen_before(b, i))
			continue;
		if (!group_ready(b, i, now_us, force))
			continue;
		if (gate != NULL && !gate(ctx, lead))
			continue;
		group_of(b, i, &count, &rows, NULL);

		out = malloc((size_t) count * sizeof(*out));
		if (out == NULL)
			return -1;
		/* Take the group's items out, in order, by the same rule as group_of. */
		rows = 0;
		for (int j = i; j < b->n && k < count;)
		{
			if (!same_key(b->items[j], lead))
			{
				j++;
				continue;
			}
			if (k > 0 && rows + b->items[j]->n_rows > b->max_batch)
				break;
			rows += b->items[j]->n_rows;
			out[k++] = b->items[j];
			remove_at(b, j);
		}
		assert(k == count);
		*items = out;
		*n = k;
		return 1;
	}
	return 0;
}

/* Microseconds until a group is ready by its delay; -1 when empty. */
int64_t
batcher_wait_us(const batcher *b, int64_t now_us)
{
	return batcher_wait_gated(b, now_us, NULL, NULL);
}

/* Microseconds until a group gate lets run is ready; see batcher.h. */
int64_t
batcher_wait_gated(const batcher *b, int64_t now_us, batcher_gate gate,
				   void *ctx)
{
	int64_t		best = -1;

	for (int i = 0; i < b->n; i++)
	{
		int64_t		w,
					newest,
					peers_at;
		int			count,
					rows;

		if (key_seen_before(b, i))
			continue;
		if (gate != NULL && !gate(ctx, b->items[i]))
			continue;
		if (group_ready(b, i, now_us, 0))
			return 0;
		group_of(b, i, &count, &rows, &newest);
		w = ready_at(b, b->items[i], newest) - now_us;
		/* the peers' rule may make it ready at the quiet gap's or hold's end */
		peers_at = newest + quiet_us(b, b->items[i]);
		if (b->items[i]->arrival_us + hold_of(b->items[i]) < peers_at)
			peers_at = b->items[i]->arrival_us + hold_of(b->items[i]);
		if (peers_at > now_us && peers_at - now_us < w)
			w = peers_at - now_us;
		if (w < 0)
			w = 0;
		if (best < 0 || w < best)
			best = w;
	}
	return best;
}
