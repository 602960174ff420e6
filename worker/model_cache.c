/*
 * model_cache.c
 *	  Loading models and OCR dictionaries from --model-dir and keeping them.
 *
 * Two singly linked lists, one of models and one of dictionaries, each
 * keyed by the path relative to the model directory in normal form
 * (normalise_path: "." components and repeated slashes dropped), so that
 * "x.onnx", "./x.onnx" and ".//x.onnx" name one entry.  Only regular files
 * of at most MODEL_MAX_FILE_BYTES are read (a FIFO would block the
 * worker).  A model file is read whole into memory, hashed (SHA-256, kept
 * to check later requests that carry a digest) and handed to the engine
 * with ie_model_load_bytes().
 *
 * Threading: one thread owns a cache (see model_cache.h).
 */
#include "worker/model_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/log.h"
#include "worker/ocr.h"

typedef struct cache_entry
{
	char	   *file;			/* relative to the model directory */
	ie_model   *model;			/* models list only */
	uint8_t		sha256[32];		/* models list only */
	char	  **dict;			/* dictionaries list only */
	int			dict_len;
	void	   *aux;			/* models list only: the caller's data */
	void		(*aux_free) (void *aux);
	struct cache_entry *next;
} cache_entry;

struct model_cache
{
	char	   *dir;
	cache_entry *models;		/* most recently loaded first */
	cache_entry *dicts;
	int			n_models;
};

static void entry_free(cache_entry *e);

/* New empty cache over model_dir; NULL with err when it is not a directory. */
model_cache *
model_cache_new(const char *model_dir, char *err, size_t errlen)
{
	model_cache *mc = NULL;
	struct stat st;

	if (model_dir == NULL || model_dir[0] == '\0')
	{
		snprintf(err, errlen, "no model directory given");
		goto fail;
	}
	if (stat(model_dir, &st) != 0)
	{
		snprintf(err, errlen, "model directory \"%s\": %s", model_dir,
				 strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode))
	{
		snprintf(err, errlen, "model directory \"%s\" is not a directory",
				 model_dir);
		goto fail;
	}
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL || (mc->dir = strdup(model_dir)) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return mc;

fail:
	model_cache_destroy(&mc);
	return NULL;
}

/* Frees one list entry and whatever it holds. */
static void
entry_free(cache_entry *e)
{
	if (e == NULL)
		return;
	if (e->aux != NULL && e->aux_free != NULL)
		e->aux_free(e->aux);
	ie_model_destroy(&e->model);
	if (e->dict != NULL)
		ocr_dict_free(&e->dict, e->dict_len);
	free(e->file);
	free(e);
}

/* Frees every entry, then the cache; sets *mcp to NULL. */
void
model_cache_destroy(model_cache **mcp)
{
	model_cache *mc;
	cache_entry *e;

	if (mcp == NULL || *mcp == NULL)
		return;
	mc = *mcp;
	while ((e = mc->models) != NULL)
	{
		mc->models = e->next;
		entry_free(e);
	}
	while ((e = mc->dicts) != NULL)
	{
		mc->dicts = e->next;
		entry_free(e);
	}
	free(mc->dir);
	free(mc);
	*mcp = NULL;
}

/*
 * Refuses paths that could leave the model directory: empty, absolute, or
 * with a ".." component anywhere ("../x", "a/../../x", "a/..").
 */
int
model_path_check(const char *rel, char *err, size_t errlen)
{
	const char *p;

	if (rel == NULL || rel[0] == '\0')
	{
		snprintf(err, errlen, "empty model file name");
		return -1;
	}
	if (rel[0] == '/')
	{
		snprintf(err, errlen,
				 "model file \"%s\" is an absolute path; it must be relative to the model directory",
				 rel);
		return -1;
	}
	p = rel;
	while (*p != '\0')
	{
		size_t		n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
		{
			snprintf(err, errlen,
					 "model file \"%s\" contains a \"..\" component; it must stay inside the model directory",
					 rel);
			return -1;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return 0;
}

/*
 * The normal form of a relative path that passed model_path_check(): its
 * components other than "" and "." joined by single slashes ("./a//./b"
 * -> "a/b").  Returns a new string, or NULL with err (out of memory, or a
 * path such as "./" that names no file: *sqlstate _BAD_PARAM).
 */
static char *
normalise_path(const char *rel, const char **sqlstate, char *err, size_t errlen)
{
	char	   *out = malloc(strlen(rel) + 1);
	size_t		o = 0;
	const char *p = rel;

	if (out == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	while (*p != '\0')
	{
		size_t		n = strcspn(p, "/");

		if (n > 0 && !(n == 1 && p[0] == '.'))
		{
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	out[o] = '\0';
	if (o == 0)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "model file \"%s\" names no file inside the model directory",
				 rel);
		free(out);
		return NULL;
	}
	return out;
}

/* "dir/rel" into a new string, or NULL when memory runs out. */
static char *
join_path(const char *dir, const char *rel)
{
	size_t		n = strlen(dir) + 1 + strlen(rel) + 1;
	char	   *s = malloc(n);

	if (s != NULL)
		snprintf(s, n, "%s/%s", dir, rel);
	return s;
}

/*
 * Reads the regular file rel (already checked) whole.  Returns the bytes
 * (malloc'd) and *len, or NULL with *sqlstate and err.
 */
static uint8_t *
read_model_file(const model_cache *mc, const char *rel, size_t *len,
				const char **sqlstate, char *err, size_t errlen)
{
	char	   *path = NULL;
	uint8_t    *buf = NULL;
	int			fd = -1;
	struct stat st;
	size_t		got = 0;

	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	path = join_path(mc->dir, rel);
	if (path == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* stat first: opening a FIFO or a device could block or have effects. */
	if (stat(path, &st) != 0)
	{
		if (errno == ENOENT || errno == ENOTDIR)
			*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
		snprintf(err, errlen, "model file \"%s\" not found in model directory \"%s\": %s",
				 rel, mc->dir, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode))
		goto not_regular;
	/* O_NONBLOCK: should a FIFO replace the file after the stat, open returns. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
	{
		if (errno == ENOENT || errno == ENOTDIR)
			*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
		snprintf(err, errlen, "model file \"%s\" not found in model directory \"%s\": %s",
				 rel, mc->dir, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto not_regular;
	if ((uint64_t) st.st_size > MODEL_MAX_FILE_BYTES)
	{
		*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
		snprintf(err, errlen, "model file \"%s\" has %lld bytes, more than the %llu a model may have",
				 rel, (long long) st.st_size, (unsigned long long) MODEL_MAX_FILE_BYTES);
		goto fail;
	}
	buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
	if (buf == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory reading model file \"%s\" (%lld bytes)",
				 rel, (long long) st.st_size);
		goto fail;
	}
	while (got < (size_t) st.st_size)
	{
		ssize_t		r = read(fd, buf + got, (size_t) st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
		{
			snprintf(err, errlen, "could not read model file \"%s\": %s", rel,
					 r < 0 ? strerror(errno) : "unexpected end of file");
			goto fail;
		}
		got += (size_t) r;
	}
	close(fd);
	free(path);
	*len = got;
	return buf;

not_regular:
	*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
	snprintf(err, errlen, "model file \"%s\" in model directory \"%s\" is not a regular file",
			 rel, mc->dir);
fail:
	if (fd >= 0)
		close(fd);
	free(path);
	free(buf);
	return NULL;
}

/* Lowercase hex of a 32-byte digest into out[65]. */
static void
hex_digest(const uint8_t d[32], char out[65])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++)
	{
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

/* Checks a requested digest against the file's; -1 with err on mismatch. */
static int
check_digest(const Pginfer__ModelSpec *spec, const uint8_t have[32],
			 const char **sqlstate, char *err, size_t errlen)
{
	char		want_hex[65],
				have_hex[65];

	if (spec->sha256.len == 0)
		return 0;
	if (spec->sha256.len != 32)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "sha256 of model file \"%s\" has %zu bytes, expected 32",
				 spec->file, spec->sha256.len);
		return -1;
	}
	if (memcmp(spec->sha256.data, have, 32) == 0)
		return 0;
	hex_digest(spec->sha256.data, want_hex);
	hex_digest(have, have_hex);
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	snprintf(err, errlen, "model file \"%s\" has SHA-256 %s, the model's registration says %s",
			 spec->file, have_hex, want_hex);
	return -1;
}

/* The loaded model for spec->file, loading (and checking) it on first use. */
const ie_model *
model_cache_get(model_cache *mc, const Pginfer__ModelSpec *spec,
				const char **sqlstate, char *err, size_t errlen)
{
	cache_entry *e = NULL;
	uint8_t    *bytes = NULL;
	size_t		len = 0;
	char	   *key = NULL;
	char		lerr[512];

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (spec == NULL)
	{
		snprintf(err, errlen, "no model given");
		goto fail;
	}
	if (model_path_check(spec->file, err, errlen) != 0)
		goto fail;
	key = normalise_path(spec->file, sqlstate, err, errlen);
	if (key == NULL)
		goto fail;

	for (e = mc->models; e != NULL; e = e->next)
	{
		if (strcmp(e->file, key) == 0)
		{
			free(key);
			if (check_digest(spec, e->sha256, sqlstate, err, errlen) != 0)
				return NULL;
			return e->model;
		}
	}

	bytes = read_model_file(mc, key, &len, sqlstate, err, errlen);
	if (bytes == NULL)
		goto fail;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	e->file = key;
	key = NULL;
	model_sha256(bytes, len, e->sha256);
	if (check_digest(spec, e->sha256, sqlstate, err, errlen) != 0)
		goto fail;
	e->model = ie_model_load_bytes(bytes, len, lerr, sizeof(lerr));
	if (e->model == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "could not load model file \"%s\": %s",
				 spec->file, lerr);
		goto fail;
	}
	free(bytes);
	e->next = mc->models;
	mc->models = e;
	mc->n_models++;
	log_info("loaded model \"%s\" (%zu bytes, %zu bytes of weights)",
			 e->file, len, ie_model_weight_bytes(e->model));
	return e->model;

fail:
	free(key);
	free(bytes);
	entry_free(e);
	return NULL;
}

/* The dictionary in labels_file, loading it on first use. */
int
model_cache_get_dict(model_cache *mc, const char *labels_file,
					 const char *const **dict, int *dict_len,
					 const char **sqlstate, char *err, size_t errlen)
{
	cache_entry *e = NULL;
	char	   *path = NULL;
	char	   *key = NULL;
	char		lerr[512];
	struct stat st;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (model_path_check(labels_file, err, errlen) != 0)
		goto fail;
	key = normalise_path(labels_file, sqlstate, err, errlen);
	if (key == NULL)
		goto fail;
	for (e = mc->dicts; e != NULL; e = e->next)
	{
		if (strcmp(e->file, key) == 0)
		{
			free(key);
			*dict = (const char *const *) e->dict;
			*dict_len = e->dict_len;
			return 0;
		}
	}
	path = join_path(mc->dir, key);
	e = calloc(1, sizeof(*e));
	if (path == NULL || e == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	e->file = key;
	key = NULL;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
	{
		*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
		snprintf(err, errlen, "labels file \"%s\" not found in model directory \"%s\"",
				 labels_file, mc->dir);
		goto fail;
	}
	e->dict_len = ocr_dict_load(path, &e->dict, lerr, sizeof(lerr));
	if (e->dict_len < 0)
	{
		e->dict = NULL;
		e->dict_len = 0;
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "could not load labels file \"%s\": %s",
				 labels_file, lerr);
		goto fail;
	}
	free(path);
	e->next = mc->dicts;
	mc->dicts = e;
	log_info("loaded dictionary \"%s\" (%d classes)", e->file, e->dict_len);
	*dict = (const char *const *) e->dict;
	*dict_len = e->dict_len;
	return 0;

fail:
	free(key);
	free(path);
	entry_free(e);
	return -1;
}

/* Unlinks and frees the entry named file from *list; 1 when found. */
static int
list_remove(cache_entry **list, const char *file)
{
	for (cache_entry **pp = list; *pp != NULL; pp = &(*pp)->next)
	{
		if (strcmp((*pp)->file, file) == 0)
		{
			cache_entry *e = *pp;

			*pp = e->next;
			entry_free(e);
			return 1;
		}
	}
	return 0;
}

/*
 * Drops the model and dictionary named file (any spelling of the path
 * that normalises to the same key); 1 when something went.
 */
int
model_cache_unload(model_cache *mc, const char *file)
{
	int			found = 0;
	const char *sqlstate;
	char		err[256];
	char	   *key;

	if (file == NULL || model_path_check(file, err, sizeof(err)) != 0)
		return 0;
	key = normalise_path(file, &sqlstate, err, sizeof(err));
	if (key == NULL)
		return 0;
	if (list_remove(&mc->models, key))
	{
		mc->n_models--;
		found = 1;
	}
	if (list_remove(&mc->dicts, key))
		found = 1;
	if (found)
		log_info("unloaded \"%s\"", key);
	free(key);
	return found;
}

/* The models-list entry of file (any spelling), or NULL. */
static cache_entry *
find_model_entry(model_cache *mc, const char *file)
{
	const char *sqlstate;
	char		err[256];
	char	   *key;
	cache_entry *e;

	if (file == NULL || model_path_check(file, err, sizeof(err)) != 0)
		return NULL;
	key = normalise_path(file, &sqlstate, err, sizeof(err));
	if (key == NULL)
		return NULL;
	for (e = mc->models; e != NULL; e = e->next)
		if (strcmp(e->file, key) == 0)
			break;
	free(key);
	return e;
}

/* The caller's data attached to the loaded model of file, or NULL. */
void *
model_cache_get_aux(model_cache *mc, const char *file)
{
	cache_entry *e = find_model_entry(mc, file);

	return e != NULL ? e->aux : NULL;
}

/* Attaches aux to the loaded model of file; -1 when it is not loaded. */
int
model_cache_set_aux(model_cache *mc, const char *file, void *aux,
					void (*aux_free) (void *aux))
{
	cache_entry *e = find_model_entry(mc, file);

	if (e == NULL)
		return -1;
	if (e->aux != NULL && e->aux_free != NULL && e->aux != aux)
		e->aux_free(e->aux);
	e->aux = aux;
	e->aux_free = aux_free;
	return 0;
}

/* The model directory. */
const char *
model_cache_dir(const model_cache *mc)
{
	return mc->dir;
}

/* Number of loaded models. */
int
model_cache_count(const model_cache *mc)
{
	return mc->n_models;
}

/* File name of the i-th loaded model (most recent first), or NULL. */
const char *
model_cache_file(const model_cache *mc, int i)
{
	const cache_entry *e = mc->models;

	while (e != NULL && i-- > 0)
		e = e->next;
	return e != NULL ? e->file : NULL;
}

/* Bytes of weights over all loaded models. */
size_t
model_cache_weight_bytes(const model_cache *mc)
{
	size_t		n = 0;

	for (const cache_entry *e = mc->models; e != NULL; e = e->next)
		n += ie_model_weight_bytes(e->model);
	return n;
}

/*
 * SHA-256 as FIPS 180-4 section 6.2 defines it: 64-byte blocks, message
 * schedule of 64 words, the round constants of section 4.2.2 and the
 * initial hash of section 5.3.3.
 */
#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

/* One 64-byte block into the running hash h[8]. */
static void
sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t	w[64],
				a, b, c, d, e, f, g, hh;

	for (int t = 0; t < 16; t++)
		w[t] = ((uint32_t) p[4 * t] << 24) | ((uint32_t) p[4 * t + 1] << 16) |
			((uint32_t) p[4 * t + 2] << 8) | (uint32_t) p[4 * t + 3];
	for (int t = 16; t < 64; t++)
	{
		uint32_t	s0 = ROTR(w[t - 15], 7) ^ ROTR(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t	s1 = ROTR(w[t - 2], 17) ^ ROTR(w[t - 2], 19) ^ (w[t - 2] >> 10);

		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	f = h[5];
	g = h[6];
	hh = h[7];
	for (int t = 0; t < 64; t++)
	{
		uint32_t	t1 = hh + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) +
			((e & f) ^ (~e & g)) + sha256_k[t] + w[t];
		uint32_t	t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) +
			((a & b) ^ (a & c) ^ (b & c));

		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

/* SHA-256 of data[0..len) into digest[32] (big-endian words). */
void
model_sha256(const void *data, size_t len, uint8_t digest[32])
{
	uint32_t	h[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
	};
	const uint8_t *p = data;
	uint8_t		tail[128];
	size_t		full = len / 64 * 64,
				rest = len - full,
				tail_len;
	uint64_t	bits = (uint64_t) len * 8;

	for (size_t off = 0; off < full; off += 64)
		sha256_block(h, p + off);

	/* Padding: 0x80, zeros, then the length in bits, big-endian. */
	memset(tail, 0, sizeof(tail));
	if (rest > 0)
		memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tail_len = (rest + 1 + 8 <= 64) ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t) (bits >> (8 * i));
	sha256_block(h, tail);
	if (tail_len == 128)
		sha256_block(h, tail + 64);

	for (int i = 0; i < 8; i++)
	{
		digest[4 * i] = (uint8_t) (h[i] >> 24);
		digest[4 * i + 1] = (uint8_t) (h[i] >> 16);
		digest[4 * i + 2] = (uint8_t) (h[i] >> 8);
		digest[4 * i + 3] = (uint8_t) h[i];
	}
}
