/*
 * input_cache.h
 *	  The worker's input cache: row payloads (image bytes, texts) kept by
 *	  the SHA-256 of their bytes within the request's scope (the "digest"
 *	  below is that key, input_cache_key), so that a backend need not ship
 *	  an input the worker already holds for its scope (DESIGN.md
 *	  "Placement": transfer is 0 for inputs W has cached by content hash;
 *	  common/protocol.h, docs/placement.md).
 *
 * A bytes-capped LRU: an entry holds a private copy of the bytes; inserting
 * past the capacity evicts the least recently used entries that no request
 * pins.  A request that takes a row from the cache (input_cache_get) pins
 * its entry until it is answered or dropped (input_cache_release), so the
 * bytes stay put while the request waits in the queue or runs.  The cache
 * summarises its digests in a Bloom filter (input_cache_bloom) that the
 * worker publishes in its state; the probe is common/protocol.h's.
 *
 * Capacity 0 makes a cache that holds nothing (every get misses, every put
 * is refused) and publishes an empty filter.
 *
 * Threading: every function locks the cache, so any thread may call them;
 * the bytes of a pinned entry are immutable and may be read without the
 * lock until the entry is released.
 */
#ifndef INFER_INPUT_CACHE_H
#define INFER_INPUT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/protocol.h"

typedef struct input_cache input_cache;
typedef struct input_entry input_entry;

/* Counters and size of a cache (input_cache_info). */
typedef struct input_cache_stats
{
	uint64_t	capacity;		/* bytes it may hold */
	uint64_t	bytes;			/* bytes held (payloads only) */
	uint32_t	entries;
	uint32_t	pinned;			/* entries with pins */
	uint64_t	hits;			/* input_cache_get that found the digest */
	uint64_t	misses;			/* input_cache_get that did not */
	uint64_t	inserts;		/* entries added */
	uint64_t	evictions;		/* entries evicted to make room */
} input_cache_stats;

/* The default --input-cache, in MiB. */
#define INPUT_CACHE_DEFAULT_MB 256

/*
 * New cache of at most capacity payload bytes (0: holds nothing).  NULL
 * when memory runs out.
 */
input_cache *input_cache_new(uint64_t capacity);

/* Frees *c and every entry (pinned ones too: call after the last request); sets *c to NULL. */
void		input_cache_destroy(input_cache **c);

/*
 * Keeps a copy of data[0..len) under digest (PGINFER_SHA256_LEN bytes; the
 * caller has checked that the bytes' SHA-256 is the one the key was made
 * from).  A digest already
 * held is only made the most recently used.  Returns 0 when held
 * afterwards, 1 when not kept (larger than the capacity, or the room is
 * pinned), -1 when memory runs out.
 */
int			input_cache_put(input_cache *c, const uint8_t *digest,
							const void *data, size_t len);

/*
 * Looks digest up: on a hit, pins the entry, makes it the most recently
 * used, sets *data and *len to its bytes (valid until the entry is
 * released) and returns it; on a miss returns NULL.  Counts a hit or a
 * miss.
 */
input_entry *input_cache_get(input_cache *c, const uint8_t *digest,
							 const void **data, size_t *len);

/* Drops one pin of e (from input_cache_get); NULL is ignored. */
void		input_cache_release(input_cache *c, input_entry *e);

/* Whether digest is held now (no pin, no counting, no LRU change). */
int			input_cache_contains(input_cache *c, const uint8_t *digest);

/* The cache's size and counters. */
void		input_cache_info(input_cache *c, input_cache_stats *out);

/*
 * Writes the Bloom filter of the digests held (the
 * PGINFER_BLOOM_MAX_ENTRIES most recently used of them) to bloom (nbytes
 * bytes, a power of two; k probes, see common/protocol.h).  Returns 0, or
 * -1 when nbytes is not a power of two.
 */
int			input_cache_bloom(input_cache *c, uint8_t *bloom, size_t nbytes,
							  uint32_t k);

/* SHA-256 (FIPS 180-4) of data[0..len) into digest[PGINFER_SHA256_LEN]. */
void		input_cache_sha256(const void *data, size_t len, uint8_t *digest);

/*
 * The cache key of a row of digest digest[PGINFER_SHA256_LEN] sent under
 * scope (scope_len bytes, at most PGINFER_INPUT_SCOPE_MAX; common/
 * protocol.h): SHA-256(scope || digest) into key[PGINFER_SHA256_LEN], or
 * the digest itself when scope_len is 0.  Returns 0, or -1 when the scope
 * is too long (key untouched).
 */
int			input_cache_key(const uint8_t *scope, size_t scope_len,
							const uint8_t *digest, uint8_t *key);

#endif							/* INFER_INPUT_CACHE_H */
