/*
 * input_cache.c
 *	  The worker's input cache: a bytes-capped LRU of row payloads keyed
 *	  by SHA-256 (see input_cache.h).
 *
 * Entries sit in a chained hash table (buckets indexed by the digest's
 * first 64 bits, which a SHA-256 makes uniform; the table doubles when it
 * holds more entries than buckets) and on a doubly linked LRU list, most
 * recently used at the head.  Making room walks the list from the tail and
 * evicts the unpinned entries it meets, so a put costs O(evicted + pinned
 * at the tail).  The Bloom filter is rebuilt from the entries when asked
 * after a change (every state message at most, PGINFER_STATE_PERIOD_MS)
 * and kept until the next change; it holds the PGINFER_BLOOM_MAX_ENTRIES
 * most recently used digests only (common/protocol.h says why).
 *
 * Threading: one mutex guards the table, the list, the counters and the
 * filter; a pinned entry's bytes never change or move, so readers holding
 * a pin read them without the lock.
 */
#include "worker/input_cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "worker/model_cache.h"

struct input_entry
{
	uint8_t		digest[PGINFER_SHA256_LEN];
	uint8_t    *data;			/* len bytes (malloc'd; NULL when len is 0) */
	size_t		len;
	int			pins;
	input_entry *next_hash;		/* bucket chain */
	input_entry *prev_lru;		/* towards the head (more recent) */
	input_entry *next_lru;		/* towards the tail (less recent) */
};

struct input_cache
{
	pthread_mutex_t lock;
	uint64_t	capacity;
	uint64_t	max_entries;	/* capacity / INPUT_CACHE_ENTRY_BUDGET, at least
								 * INPUT_CACHE_MIN_ENTRIES */
	input_entry **buckets;
	size_t		n_buckets;		/* a power of two */
	input_entry *head;			/* most recently used */
	input_entry *tail;			/* least recently used */
	input_cache_stats st;
	uint8_t    *bloom;			/* the last filter built, or NULL */
	size_t		bloom_bytes;
	uint32_t	bloom_k;
	int			bloom_dirty;	/* entries changed since it was built */
};

#define INPUT_CACHE_MIN_BUCKETS 256


/*
 * Each entry also costs its bookkeeping (about 100 bytes: the entry, its
 * allocation headers, its bucket), which the byte capacity does not count:
 * entries are capped at one per INPUT_CACHE_ENTRY_BUDGET bytes of capacity,
 * so that millions of tiny rows cannot grow the cache far past its cap (at
 * most about 1.4 times it).
 */
#define INPUT_CACHE_ENTRY_BUDGET 256
#define INPUT_CACHE_MIN_ENTRIES 1024

/* The bucket of digest in a table of n buckets (a power of two). */
static size_t
bucket_of(const uint8_t *digest, size_t n)
{
	uint64_t	h = 0;

	memcpy(&h, digest, sizeof(h));
	return (size_t) (h & (n - 1));
}

/* New cache; see input_cache.h. */
input_cache *
input_cache_new(uint64_t capacity)
{
	input_cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		goto fail;
	c->n_buckets = INPUT_CACHE_MIN_BUCKETS;
	c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
	if (c->buckets == NULL)
		goto fail;
	pthread_mutex_init(&c->lock, NULL);
	c->capacity = capacity;
	c->max_entries = capacity / INPUT_CACHE_ENTRY_BUDGET;
	if (c->max_entries < INPUT_CACHE_MIN_ENTRIES)
		c->max_entries = INPUT_CACHE_MIN_ENTRIES;
	c->st.capacity = capacity;
	c->bloom_dirty = 1;
	return c;

fail:
	if (c != NULL)
		free(c->buckets);
	free(c);
	return NULL;
}

/* Frees an entry's memory (already unlinked). */
static void
entry_free(input_entry *e)
{
	free(e->data);
	free(e);
}

/* Frees *cp and its entries; sets *cp to NULL. */
void
input_cache_destroy(input_cache **cp)
{
	input_cache *c;

	if (cp == NULL || *cp == NULL)
		return;
	c = *cp;
	while (c->head != NULL)
	{
		input_entry *e = c->head;

		c->head = e->next_lru;
		entry_free(e);
	}
	free(c->buckets);
	free(c->bloom);
	pthread_mutex_destroy(&c->lock);
	free(c);
	*cp = NULL;
}

/* The entry of digest, or NULL (lock held). */
static input_entry *
find(input_cache *c, const uint8_t *digest)
{
	input_entry *e = c->buckets[bucket_of(digest, c->n_buckets)];

	for (; e != NULL; e = e->next_hash)
		if (memcmp(e->digest, digest, PGINFER_SHA256_LEN) == 0)
			return e;
	return NULL;
}

/* Unlinks e from the LRU list (lock held). */
static void
lru_unlink(input_cache *c, input_entry *e)
{
	if (e->prev_lru != NULL)
		e->prev_lru->next_lru = e->next_lru;
	else
		c->head = e->next_lru;
	if (e->next_lru != NULL)
		e->next_lru->prev_lru = e->prev_lru;
	else
		c->tail = e->prev_lru;
	e->prev_lru = e->next_lru = NULL;
}

/* Puts e at the head of the LRU list (lock held; e unlinked). */
static void
lru_push_head(input_cache *c, input_entry *e)
{
	e->prev_lru = NULL;
	e->next_lru = c->head;
	if (c->head != NULL)
		c->head->prev_lru = e;
	c->head = e;
	if (c->tail == NULL)
		c->tail = e;
}

/* Removes e from the table and the list and frees it (lock held, e unpinned). */
static void
evict(input_cache *c, input_entry *e)
{
	input_entry **pp = &c->buckets[bucket_of(e->digest, c->n_buckets)];

	assert(e->pins == 0);
	while (*pp != e)
		pp = &(*pp)->next_hash;
	*pp = e->next_hash;
	lru_unlink(c, e);
	c->st.bytes -= e->len;
	c->st.entries--;
	c->st.evictions++;
	c->bloom_dirty = 1;
	entry_free(e);
}

/* Doubles the table when it holds more entries than buckets (lock held; best effort). */
static void
maybe_grow(input_cache *c)
{
	size_t		n = c->n_buckets * 2;
	input_entry **b;

	if (c->st.entries <= c->n_buckets)
		return;
	b = calloc(n, sizeof(*b));
	if (b == NULL)
		return;
	for (size_t i = 0; i < c->n_buckets; i++)
		while (c->buckets[i] != NULL)
		{
			input_entry *e = c->buckets[i];
			size_t		k = bucket_of(e->digest, n);

			c->buckets[i] = e->next_hash;
			e->next_hash = b[k];
			b[k] = e;
		}
	free(c->buckets);
	c->buckets = b;
	c->n_buckets = n;
}

/* Keeps a copy of the bytes under digest; see input_cache.h. */
int
input_cache_put(input_cache *c, const uint8_t *digest, const void *data,
				size_t len)
{
	input_entry *e;
	input_entry *v;
	int			rc = 1;

	pthread_mutex_lock(&c->lock);
	e = find(c, digest);
	if (e != NULL)
	{
		lru_unlink(c, e);
		lru_push_head(c, e);
		rc = 0;
		goto done;
	}
	if ((uint64_t) len > c->capacity || c->capacity == 0)
		goto done;
	/* Room first: the least recently used unpinned entries go. */
	v = c->tail;
	while (v != NULL && (c->st.bytes + len > c->capacity ||
						 c->st.entries >= c->max_entries))
	{
		input_entry *prev = v->prev_lru;

		if (v->pins == 0)
			evict(c, v);
		v = prev;
	}
	if (c->st.bytes + len > c->capacity || c->st.entries >= c->max_entries)
		goto done;				/* what is left is pinned */
	e = calloc(1, sizeof(*e));
	if (e == NULL || (len > 0 && (e->data = malloc(len)) == NULL))
	{
		free(e);
		rc = -1;
		goto done;
	}
	memcpy(e->digest, digest, PGINFER_SHA256_LEN);
	if (len > 0)
		memcpy(e->data, data, len);
	e->len = len;
	{
		size_t		k = bucket_of(digest, c->n_buckets);

		e->next_hash = c->buckets[k];
		c->buckets[k] = e;
	}
	lru_push_head(c, e);
	c->st.bytes += len;
	c->st.entries++;
	c->st.inserts++;
	c->bloom_dirty = 1;
	maybe_grow(c);
	rc = 0;

done:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Looks digest up and pins its entry; see input_cache.h. */
input_entry *
input_cache_get(input_cache *c, const uint8_t *digest, const void **data,
				size_t *len)
{
	input_entry *e;

	pthread_mutex_lock(&c->lock);
	e = find(c, digest);
	if (e == NULL)
		c->st.misses++;
	else
	{
		c->st.hits++;
		if (e->pins++ == 0)
			c->st.pinned++;
		lru_unlink(c, e);
		lru_push_head(c, e);
		*data = e->data != NULL ? e->data : (const void *) "";
		*len = e->len;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* Drops one pin of e; see input_cache.h. */
void
input_cache_release(input_cache *c, input_entry *e)
{
	if (e == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	assert(e->pins > 0);
	if (--e->pins == 0)
		c->st.pinned--;
	pthread_mutex_unlock(&c->lock);
}

/* Whether digest is held; see input_cache.h. */
int
input_cache_contains(input_cache *c, const uint8_t *digest)
{
	int			found;

	pthread_mutex_lock(&c->lock);
	found = find(c, digest) != NULL;
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* Size and counters; see input_cache.h. */
void
input_cache_info(input_cache *c, input_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Writes into bloom (nbytes) the filter of the PGINFER_BLOOM_MAX_ENTRIES
 * most recently used digests (lock held).
 */
static void
fill_bloom(input_cache *c, uint8_t *bloom, size_t nbytes, uint32_t k)
{
	int			n = 0;

	memset(bloom, 0, nbytes);
	for (input_entry *e = c->head; e != NULL && n < PGINFER_BLOOM_MAX_ENTRIES;
		 e = e->next_lru, n++)
		pginfer_bloom_add(bloom, nbytes, k, e->digest);
}

/* The Bloom filter of the digests held; see input_cache.h. */
int
input_cache_bloom(input_cache *c, uint8_t *bloom, size_t nbytes, uint32_t k)
{
	if (nbytes == 0 || (nbytes & (nbytes - 1)) != 0)
		return -1;
	pthread_mutex_lock(&c->lock);
	if (c->bloom_dirty || c->bloom == NULL || c->bloom_bytes != nbytes ||
		c->bloom_k != k)
	{
		uint8_t    *b = c->bloom_bytes == nbytes ? c->bloom : NULL;

		if (b == NULL)
		{
			free(c->bloom);
			c->bloom = b = malloc(nbytes);
			c->bloom_bytes = b != NULL ? nbytes : 0;
		}
		if (b != NULL)
		{
			fill_bloom(c, b, nbytes, k);
			c->bloom_k = k;
			c->bloom_dirty = 0;
		}
	}
	if (c->bloom != NULL)
		memcpy(bloom, c->bloom, nbytes);
	else
	{
		/* No memory for the copy: build it in place. */
		fill_bloom(c, bloom, nbytes, k);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* SHA-256 of the bytes; see input_cache.h. */
void
input_cache_sha256(const void *data, size_t len, uint8_t *digest)
{
	/* The project's FIPS 180-4 code (the model cache checks files with it). */
	model_sha256(data, len, digest);
}

/* The key of a digest under a scope; see input_cache.h. */
int
input_cache_key(const uint8_t *scope, size_t scope_len, const uint8_t *digest,
				uint8_t *key)
{
	uint8_t		buf[PGINFER_INPUT_SCOPE_MAX + PGINFER_SHA256_LEN];

	if (scope_len > PGINFER_INPUT_SCOPE_MAX)
		return -1;
	if (scope_len == 0)
	{
		memmove(key, digest, PGINFER_SHA256_LEN);
		return 0;
	}
	memcpy(buf, scope, scope_len);
	memcpy(buf + scope_len, digest, PGINFER_SHA256_LEN);
	model_sha256(buf, scope_len + PGINFER_SHA256_LEN, key);
	return 0;
}
