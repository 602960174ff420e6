/*
 * test_input_cache.c
 *	  Unit tests of the worker's input cache (worker/input_cache.c) and the
 *	  Bloom filter probe both sides share (common/protocol.h): SHA-256
 *	  against FIPS 180-4's examples, put/get, LRU eviction by bytes,
 *	  pinned entries never evicted, the filter holding every digest held,
 *	  its false-positive rate near (1 - e^(-kn/m))^k, and server_handle()'s
 *	  intake of rows left out (MSG_NEED_INPUT naming the missing rows) and
 *	  of malformed input-cache fields (MSG_ERROR 08P01).
 *
 * Prints "test_input_cache: N passed, M failed"; exits 1 on any failure.
 * Threading: single-threaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/input_cache.h"
#include "worker/server.h"
#include "tests/unit/testutil.h"

/* Digest of a small counter-made payload: 32 bytes of SHA-256("row N"). */
static void
digest_of(int n, uint8_t *d)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), "row %d", n);
	input_cache_sha256(buf, strlen(buf), d);
}

/* Lower-case hex of a digest into out (65 bytes). */
static void
hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < PGINFER_SHA256_LEN; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* SHA-256 of FIPS 180-4's examples ("abc", the empty string, 448 bits). */
static void
test_sha256(void)
{
	uint8_t		d[PGINFER_SHA256_LEN];
	char		h[65];

	input_cache_sha256("abc", 3, d);
	hex(d, h);
	CHECK(strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
		  "sha256(abc) = %s", h);
	input_cache_sha256("", 0, d);
	hex(d, h);
	CHECK(strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
		  "sha256('') = %s", h);
	input_cache_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	hex(d, h);
	CHECK(strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0,
		  "sha256(448 bits) = %s", h);
}

/*
 * input_cache_key: the digest itself without a scope; SHA-256(scope ||
 * digest) with one (values from Python's hashlib over the same bytes),
 * the longest scope allowed; one byte more is refused.
 */
static void
test_key(void)
{
	uint8_t		d[PGINFER_SHA256_LEN];
	uint8_t		k[PGINFER_SHA256_LEN];
	uint8_t		zeros[PGINFER_INPUT_SCOPE_MAX + 1] = {0};
	char		h[65];

	input_cache_sha256("abc", 3, d);
	CHECK_EXPR(input_cache_key(NULL, 0, d, k) == 0 && memcmp(k, d, sizeof(d)) == 0);
	CHECK_EXPR(input_cache_key((const uint8_t *) "tenant-a", 8, d, k) == 0);
	hex(k, h);
	CHECK(strcmp(h, "18d3c04861ed1fe7370411e6b6e82ca6d6ee1a88af84ea089b42813fdec1b43c") == 0,
		  "key(tenant-a, sha256(abc)) = %s", h);
	CHECK_EXPR(input_cache_key(zeros, PGINFER_INPUT_SCOPE_MAX, d, k) == 0);
	hex(k, h);
	CHECK(strcmp(h, "5c80e8f555d18ed244493fd6c96ce357212bb64063f988438b6d489f30fcc13a") == 0,
		  "key(64 zero bytes, sha256(abc)) = %s", h);
	memset(k, 0xAB, sizeof(k));
	CHECK_EXPR(input_cache_key(zeros, PGINFER_INPUT_SCOPE_MAX + 1, d, k) == -1 &&
			   k[0] == 0xAB && k[31] == 0xAB);
}

/* put/get: bytes come back equal, hits and misses counted, a copy is kept. */
static void
test_put_get(void)
{
	input_cache *c = input_cache_new(1000);
	uint8_t		d1[32],
				d2[32];
	char		payload[16] = "hello, cache";
	const void *data = NULL;
	size_t		len = 0;
	input_entry *e;
	input_cache_stats st;

	CHECK_EXPR(c != NULL);
	digest_of(1, d1);
	digest_of(2, d2);
	CHECK_EXPR(input_cache_get(c, d1, &data, &len) == NULL);
	CHECK_EXPR(input_cache_put(c, d1, payload, 12) == 0);
	memset(payload, 'x', sizeof(payload));	/* the cache holds a copy */
	e = input_cache_get(c, d1, &data, &len);
	CHECK_EXPR(e != NULL && len == 12 && memcmp(data, "hello, cache", 12) == 0);
	CHECK_EXPR(input_cache_contains(c, d1) && !input_cache_contains(c, d2));
	/* a digest already held: stays one entry */
	CHECK_EXPR(input_cache_put(c, d1, "hello, cache", 12) == 0);
	input_cache_info(c, &st);
	CHECK(st.entries == 1 && st.bytes == 12 && st.hits == 1 && st.misses == 1 &&
		  st.pinned == 1 && st.capacity == 1000,
		  "entries %u bytes %llu hits %llu misses %llu pinned %u", st.entries,
		  (unsigned long long) st.bytes, (unsigned long long) st.hits,
		  (unsigned long long) st.misses, st.pinned);
	input_cache_release(c, e);
	input_cache_info(c, &st);
	CHECK_EXPR(st.pinned == 0);
	/* an empty payload is an entry too */
	CHECK_EXPR(input_cache_put(c, d2, NULL, 0) == 0);
	e = input_cache_get(c, d2, &data, &len);
	CHECK_EXPR(e != NULL && len == 0 && data != NULL);
	input_cache_release(c, e);
	/* larger than the capacity: not kept */
	{
		char	   *big = calloc(1, 1001);
		uint8_t		d3[32];

		digest_of(3, d3);
		CHECK_EXPR(input_cache_put(c, d3, big, 1001) == 1);
		CHECK_EXPR(!input_cache_contains(c, d3));
		free(big);
	}
	input_cache_destroy(&c);
	CHECK_EXPR(c == NULL);

	/* capacity 0: holds nothing */
	c = input_cache_new(0);
	CHECK_EXPR(input_cache_put(c, d1, "x", 1) == 1 &&
			   input_cache_get(c, d1, &data, &len) == NULL);
	input_cache_destroy(&c);
}

/*
 * LRU by bytes: 10 entries of 100 bytes in a 1000-byte cache; touching
 * entry 0 and adding two more evicts 1 and 2 (the least recently used);
 * pinned entries are skipped, and when only pinned room is left nothing
 * is evicted and the put is refused.
 */
static void
test_lru_and_pins(void)
{
	input_cache *c = input_cache_new(1000);
	uint8_t		d[16][32];
	char		buf[100];
	const void *data;
	size_t		len;
	input_entry *pins[10];
	input_cache_stats st;

	for (int i = 0; i < 16; i++)
		digest_of(100 + i, d[i]);
	for (int i = 0; i < 10; i++)
	{
		memset(buf, 'a' + i, sizeof(buf));
		CHECK_EXPR(input_cache_put(c, d[i], buf, sizeof(buf)) == 0);
	}
	input_cache_info(c, &st);
	CHECK_EXPR(st.entries == 10 && st.bytes == 1000);
	/* touch 0: now the most recently used */
	input_cache_release(c, input_cache_get(c, d[0], &data, &len));
	CHECK_EXPR(input_cache_put(c, d[10], buf, sizeof(buf)) == 0);
	CHECK_EXPR(input_cache_put(c, d[11], buf, sizeof(buf)) == 0);
	CHECK_EXPR(input_cache_contains(c, d[0]));
	CHECK_EXPR(!input_cache_contains(c, d[1]) && !input_cache_contains(c, d[2]));
	CHECK_EXPR(input_cache_contains(c, d[3]) && input_cache_contains(c, d[11]));
	input_cache_info(c, &st);
	CHECK(st.entries == 10 && st.bytes == 1000 && st.evictions == 2,
		  "entries %u bytes %llu evictions %llu", st.entries,
		  (unsigned long long) st.bytes, (unsigned long long) st.evictions);

	/* pin 3 (the least recently used now): 4 goes instead */
	pins[0] = input_cache_get(c, d[3], &data, &len);
	CHECK_EXPR(pins[0] != NULL && ((const char *) data)[0] == 'a' + 3);
	input_cache_release(c, input_cache_get(c, d[0], &data, &len));
	/* LRU order now: 4 5 6 7 8 9 10 11 3(pinned) 0 */
	CHECK_EXPR(input_cache_put(c, d[12], buf, sizeof(buf)) == 0);
	CHECK_EXPR(!input_cache_contains(c, d[4]) && input_cache_contains(c, d[3]));
	input_cache_release(c, pins[0]);

	/* pin everything: a put finds no room and evicts nothing */
	{
		uint8_t    *held[10];
		int			n = 0;
		int			all = 1;

		for (int i = 0; i < 16; i++)
			if (input_cache_contains(c, d[i]) && n < 10)
			{
				held[n] = d[i];
				pins[n] = input_cache_get(c, d[i], &data, &len);
				n++;
			}
		CHECK_EXPR(n == 10);
		CHECK_EXPR(input_cache_put(c, d[13], buf, sizeof(buf)) == 1);
		for (int i = 0; i < n; i++)
			all &= input_cache_contains(c, held[i]);
		CHECK_EXPR(all);
		input_cache_info(c, &st);
		CHECK_EXPR(st.pinned == 10 && st.entries == 10);
		/* pinned bytes stay readable and intact */
		for (int i = 0; i < n; i++)
		{
			const void *p;
			size_t		l;
			input_entry *e = input_cache_get(c, held[i], &p, &l);

			CHECK_EXPR(e == pins[i] && l == 100);
			input_cache_release(c, e);
		}
		for (int i = 0; i < n; i++)
			input_cache_release(c, pins[i]);
		input_cache_info(c, &st);
		CHECK_EXPR(st.pinned == 0);
		CHECK_EXPR(input_cache_put(c, d[13], buf, sizeof(buf)) == 0);
	}
	input_cache_destroy(&c);
}

/*
 * The table grows past its first buckets and keeps every entry findable;
 * the filter of the cache holds every digest the cache holds.
 */
static void
test_many_and_bloom(void)
{
	input_cache *c = input_cache_new((uint64_t) 1 << 30);
	static uint8_t bloom[PGINFER_BLOOM_BYTES];
	int			n = 3000,
				put = 0,
				found = 0,
				in_bloom = 0;
	input_cache_stats st;

	for (int i = 0; i < n; i++)
	{
		uint8_t		d[32];

		digest_of(i, d);
		put += input_cache_put(c, d, &i, sizeof(i)) == 0;
	}
	CHECK(put == n, "%d of %d puts kept", put, n);
	CHECK_EXPR(input_cache_bloom(c, bloom, sizeof(bloom), PGINFER_BLOOM_HASHES) == 0);
	CHECK_EXPR(input_cache_bloom(c, bloom, 1000, PGINFER_BLOOM_HASHES) == -1);
	for (int i = 0; i < n; i++)
	{
		uint8_t		d[32];

		digest_of(i, d);
		found += input_cache_contains(c, d);
		in_bloom += pginfer_bloom_probe(bloom, sizeof(bloom), PGINFER_BLOOM_HASHES, d);
	}
	input_cache_info(c, &st);
	CHECK(found == n && in_bloom == n && (int) st.entries == n,
		  "found %d, in the filter %d, entries %u of %d", found, in_bloom, st.entries, n);

	/*
	 * past PGINFER_BLOOM_MAX_ENTRIES only the most recently used go in the
	 * filter: after 2000 more, the newest 4096 are all in it, and of the
	 * 904 oldest (still cached) few are (false positives, ~2 %)
	 */
	{
		int			extra = 2000,
					newest = 0,
					oldest = 0;

		for (int i = n; i < n + extra; i++)
		{
			uint8_t		d[32];

			digest_of(i, d);
			input_cache_put(c, d, &i, sizeof(i));
		}
		input_cache_bloom(c, bloom, sizeof(bloom), PGINFER_BLOOM_HASHES);
		for (int i = 0; i < n + extra; i++)
		{
			uint8_t		d[32];
			int			in;

			digest_of(i, d);
			in = pginfer_bloom_probe(bloom, sizeof(bloom), PGINFER_BLOOM_HASHES, d);
			if (i >= n + extra - PGINFER_BLOOM_MAX_ENTRIES)
				newest += in;
			else
				oldest += in;
		}
		CHECK(newest == PGINFER_BLOOM_MAX_ENTRIES && oldest < (n + extra - PGINFER_BLOOM_MAX_ENTRIES) / 10,
			  "newest %d of %d in the filter, oldest %d", newest,
			  PGINFER_BLOOM_MAX_ENTRIES, oldest);
	}

	/* an empty or absent filter holds nothing */
	{
		uint8_t		d[32];
		static uint8_t empty[PGINFER_BLOOM_BYTES];

		digest_of(0, d);
		CHECK_EXPR(!pginfer_bloom_probe(empty, sizeof(empty), PGINFER_BLOOM_HASHES, d));
		CHECK_EXPR(!pginfer_bloom_probe(bloom, 0, PGINFER_BLOOM_HASHES, d));
		CHECK_EXPR(!pginfer_bloom_probe(bloom, sizeof(bloom), 0, d));
	}
	input_cache_destroy(&c);
}

/*
 * False positives: with n digests in a filter of m bits and k probes, the
 * share of other digests the filter claims is close to the theory,
 * (1 - e^(-kn/m))^k (Bloom 1970; Kirsch and Mitzenmacher 2006 show double
 * hashing keeps it): within 25 % of it over 200000 probes.
 */
static void
test_false_positives(void)
{
	static uint8_t bloom[PGINFER_BLOOM_BYTES];
	const int	sizes[] = {1000, 3400, 6000};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		int			n = sizes[s];
		int			probes = 200000,
					fp = 0;
		double		k = PGINFER_BLOOM_HASHES,
					m = PGINFER_BLOOM_BITS;
		double		theory = pow(1 - exp(-k * n / m), k);
		double		rate;

		memset(bloom, 0, sizeof(bloom));
		for (int i = 0; i < n; i++)
		{
			uint8_t		d[32];

			digest_of(i, d);
			pginfer_bloom_add(bloom, sizeof(bloom), PGINFER_BLOOM_HASHES, d);
		}
		for (int i = 0; i < probes; i++)
		{
			uint8_t		d[32];

			digest_of(1000000 + i, d);
			fp += pginfer_bloom_probe(bloom, sizeof(bloom), PGINFER_BLOOM_HASHES, d);
		}
		rate = (double) fp / probes;
		printf("bloom: n=%d m=%d k=%d: false positives %.4f, theory %.4f\n",
			   n, PGINFER_BLOOM_BITS, PGINFER_BLOOM_HASHES, rate, theory);
		CHECK(fabs(rate - theory) <= 0.25 * theory, "n=%d: rate %.5f, theory %.5f",
			  n, rate, theory);
	}
}

/* Packs h into a malloc'd buffer. */
static uint8_t *
pack(const Pginfer__Header *h, size_t *len)
{
	uint8_t    *buf = malloc(pginfer__header__get_packed_size(h) + 1);

	*len = pginfer__header__pack(h, buf);
	return buf;
}

/*
 * server_handle() intake: rows left out that the worker does not hold get
 * MSG_NEED_INPUT naming them (no model is read: the request stops at
 * intake); malformed fields get MSG_ERROR 08P01; the state's filter and
 * counters follow the cache.
 */
static void
test_server_intake(void)
{
	char		dir[] = "/tmp/test_input_cache.XXXXXX";
	server_opts opts = {NULL, NULL, 0, 0, -1};
	char		err[512];
	server	   *s;
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specs[1] = {&spec};
	uint64_t	ids[3] = {100, 101, 102};
	uint8_t		d[3][32];
	ProtobufCBinaryData digests[3];
	uint32_t	cached[2] = {0, 2};
	const void *rows[3] = {"", "", ""};
	size_t		lens[3] = {0, 0, 0};
	server_reply *r = NULL;
	Pginfer__Header *u;
	uint8_t    *buf;
	size_t		len;

	CHECK_EXPR(mkdtemp(dir) != NULL);
	opts.model_dir = dir;
	s = server_new(&opts, err, sizeof(err));
	CHECK(s != NULL, "server_new: %s", err);
	if (s == NULL)
		return;
	for (int i = 0; i < 3; i++)
	{
		digest_of(i, d[i]);
		digests[i].data = d[i];
		digests[i].len = 32;
	}
	spec.file = "none.onnx";
	frag.kind = PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
	frag.n_models = 1;
	frag.models = specs;
	run.fragment = &frag;
	run.n_row_ids = 3;
	run.row_ids = ids;
	run.n_input_sha256 = 3;
	run.input_sha256 = digests;
	run.n_cached_rows = 2;
	run.cached_rows = cached;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	h.request_id = 21;
	h.run = &run;

	/* rows 0 and 2 left out, not held: MSG_NEED_INPUT [0, 2] */
	buf = pack(&h, &len);
	CHECK_EXPR(server_handle(s, buf, len, rows, lens, 3, &r) == 0 && r != NULL);
	free(buf);
	u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
	CHECK(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_NEED_INPUT &&
		  u->request_id == 21 && u->need_input != NULL &&
		  u->need_input->n_rows == 2 && u->need_input->rows[0] == 0 &&
		  u->need_input->rows[1] == 2 && r->n_frames == 0,
		  "kind %d", u ? (int) u->kind : -1);
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	server_reply_destroy(&r);

	/* malformed: a digest of 31 bytes; a cached row without a digest; out of order */
	{
		struct
		{
			size_t		dlen;
			uint32_t	c0,
						c1;
			size_t		n_digests;
		}			bad[] = {{31, 0, 2, 3}, {32, 2, 0, 3}, {32, 0, 3, 3}, {32, 0, 2, 0}, {32, 0, 2, 2}};

		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
		{
			digests[1].len = bad[b].dlen;
			cached[0] = bad[b].c0;
			cached[1] = bad[b].c1;
			run.n_input_sha256 = bad[b].n_digests;
			buf = pack(&h, &len);
			server_handle(s, buf, len, rows, lens, 3, &r);
			free(buf);
			u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
			CHECK(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR &&
				  strcmp(u->error->sqlstate, PGINFER_SQLSTATE_PROTOCOL) == 0,
				  "case %zu: kind %d", b, u ? (int) u->kind : -1);
			if (u)
				pginfer__header__free_unpacked(u, NULL);
			server_reply_destroy(&r);
		}
		digests[1].len = 32;
		cached[0] = 0;
		cached[1] = 2;
		run.n_input_sha256 = 3;
	}

	/* a cached row whose frame is not empty */
	{
		const void *rows2[3] = {"x", "", ""};
		size_t		lens2[3] = {1, 0, 0};

		buf = pack(&h, &len);
		server_handle(s, buf, len, rows2, lens2, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR &&
				   strcmp(u->error->sqlstate, PGINFER_SQLSTATE_PROTOCOL) == 0);
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
	}

	/* The state: misses counted (2 + the last request's 0), an empty filter, the capacity. */
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	h.run = NULL;
	buf = pack(&h, &len);
	server_handle(s, buf, len, NULL, NULL, 0, &r);
	free(buf);
	u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
	CHECK(u != NULL && u->state != NULL && u->state->input_cache_misses == 2 &&
		  u->state->input_cache_hits == 0 && u->state->input_cache_entries == 0 &&
		  u->state->input_cache_capacity == (uint64_t) INPUT_CACHE_DEFAULT_MB << 20 &&
		  u->state->input_bloom.len == PGINFER_BLOOM_BYTES &&
		  u->state->bloom_hashes == PGINFER_BLOOM_HASHES,
		  "state: misses %llu", u && u->state ?
		  (unsigned long long) u->state->input_cache_misses : 0ULL);
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	server_reply_destroy(&r);
	server_destroy(&s);
	rmdir(dir);
}

int
main(void)
{
	test_sha256();
	test_key();
	test_put_get();
	test_lru_and_pins();
	test_many_and_bloom();
	test_false_positives();
	test_server_intake();
	return tu_report("test_input_cache");
}
