/*
 * model_cache.c
 *	  Loading models and OCR dictionaries from --model-dir, keeping them
 *	  resident under a memory cap, and evicting the least recently used.
 *
 * Two singly linked lists, one of models and one of dictionaries, each
 * keyed by the path relative to the model directory in normal form
 * (normalise_path: "." components and repeated slashes dropped), so that
 * "x.onnx", "./x.onnx" and ".//x.onnx" name one entry.  Only regular files
 * of at most MODEL_MAX_FILE_BYTES are read (a FIFO would block the
 * worker).  A model file is read whole into memory, hashed (SHA-256, kept
 * to check later requests that carry a digest) and handed to the engine
 * with ie_model_load_bytes_opts() at the ModelSpec's precision (engine.h;
 * on a GPU, a file asked for at another precision than its resident
 * model's is loaded again: one precision per file is resident at a time).
 *
 * The models list also holds models that are known but not resident: a
 * model that queued requests need (pins) before it is loaded, one that
 * was evicted (its size and load time are kept for the state message),
 * and the models a loader (the simulated device) declares.  Residency:
 * before a load, room is made for the file's size (the estimate), after
 * it for the weight bytes the engine reports; making room evicts resident
 * models with no pins, least recently used first, and fails with 53200
 * when that is not enough.
 *
 * Threading: one mutex guards both lists and every entry's fields.  A
 * load runs with the mutex released (the entry is marked busy so that no
 * one frees it meanwhile); loads come from one thread at a time.
 */
#include "worker/model_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/log.h"
#include "worker/model_store.h"
#include "worker/ocr.h"

/*
 * What tells a file apart from the one read before under its name: a copy
 * over it (another size or modification time), a rename over it (another
 * inode), a change of its status (ctime, which even a copy that keeps the
 * size and the mtime moves).
 */
/*
 * How long a model file must be left alone (its modification time that
 * far behind) before a change to it is read: a copy over it is written
 * over time, and the resident model serves meanwhile.
 */
#define MODEL_FILE_SETTLE_MS 1000

typedef struct file_stamp
{
	dev_t		dev;
	ino_t		ino;
	off_t		size;
	struct timespec mtime;
	struct timespec ctime;
	bool		recent;			/* modified within MODEL_FILE_SETTLE_MS */
} file_stamp;

typedef struct cache_entry
{
	char	   *file;			/* relative to the model directory */
	ie_model   *model;			/* models list only; NULL when not resident
								 * or simulated */
	uint8_t		sha256[32];		/* models list only */
	int			has_sha256;
	int			from_store;		/* read from the uploaded copy (model_store.h) */
	ie_precision precision;		/* models list: what the resident model was
								 * loaded with (ModelSpec.precision) */
	char	  **dict;			/* dictionaries list only */
	int			dict_len;
	void	   *aux;			/* models list only: the caller's data */
	void		(*aux_free) (void *aux);
	int			layout;			/* models list: the caller's verdict on the
								 * loaded model's output layout
								 * (model_cache_set_layout); 0: none */
	int			resident;		/* models list: holds memory now */
	int			busy;			/* a load of it is under way */
	int			known;			/* loaded once, or declared by the loader */
	int			pins;			/* queued or running requests needing it */
	uint64_t	bytes;			/* weight bytes (resident), else expected */
	double		load_ms;		/* last measured (or expected) load time */
	double		load_ms_before; /* load_ms before the last load */
	uint64_t	load_no;		/* counts.loads at the last load; 0: none */
	int64_t		load_start_us;	/* the last load's span (now_us) */
	int64_t		load_end_us;
	int64_t		last_used_us;	/* monotonic */
	file_stamp	disk;			/* models list: the file in the model
								 * directory as it was when the resident
								 * model was read from it (disk.size < 0:
								 * not read from there) */
	uint64_t	held_run;		/* the run (model_cache.run) model_cache_get()
								 * last handed its model out in */
	struct cache_entry *next;
} cache_entry;

struct model_cache
{
	char	   *dir;
	pthread_mutex_t lock;
	cache_entry *models;		/* most recently loaded first */
	cache_entry *dicts;
	int			n_models;		/* resident ones */
	uint64_t	capacity;		/* bytes; 0: no cap */
	uint64_t	used;			/* bytes of resident models */
	double		load_ms_total;	/* over every load so far */
	model_cache_counts counts;	/* loads, evictions, hits, misses */
	model_loader loader;		/* loader.load NULL: read the file */
	uint64_t	run;			/* model_cache_begin_run() count; 0: none yet */
};

static void entry_free(cache_entry *e);
static char *key_of(const char *file);

/*
 * New empty cache over model_dir; NULL with err when it is not a
 * directory or the worker's user may not open files in it (no search
 * permission: every model would fail).
 */
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
	if (access(model_dir, X_OK) != 0)
	{
		snprintf(err, errlen, "model directory \"%s\" cannot be read by the worker (user id %d): %s",
				 model_dir, (int) geteuid(), strerror(errno));
		goto fail;
	}
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	pthread_mutex_init(&mc->lock, NULL);
	if ((mc->dir = strdup(model_dir)) == NULL)
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
	pthread_mutex_destroy(&mc->lock);
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

/*
 * Whether the file open as fd is no longer at path, the real path it was
 * opened by (its path now goes into now[nowlen]): a folder on the way
 * swapped for a symbolic link after model_store_resolve() checked it
 * (O_NOFOLLOW guards the last component only).  Linux's /proc/self/fd
 * names the file opened; without it nothing more can be checked and 0 is
 * returned.
 */
static int
opened_elsewhere(int fd, const char *path, char *now, size_t nowlen)
{
	char		link[64];
	ssize_t		n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, now, nowlen - 1);
	if (n < 0)
		return 0;
	now[n] = '\0';
	return strcmp(now, path) != 0;
}

/*
 * Whether spec names its model: a run of requests whose models differ in
 * name only runs unnamed (request_fragment_unnamed), and its messages name
 * the file instead.
 */
static int
spec_named(const Pginfer__ModelSpec *spec)
{
	return spec->name != NULL && spec->name[0] != '\0';
}

/* The model's name for a message, or its file when unnamed. */
static const char *
spec_label(const Pginfer__ModelSpec *spec)
{
	return spec_named(spec) ? spec->name : spec->file;
}

/* st's stamp (file_stamp). */
static file_stamp
stamp_of(const struct stat *st)
{
	file_stamp	s;

	memset(&s, 0, sizeof(s));
	s.recent = false;
	s.dev = st->st_dev;
	s.ino = st->st_ino;
	s.size = st->st_size;
	s.mtime = st->st_mtim;
	s.ctime = st->st_ctim;
	return s;
}

/* Whether two stamps differ. */
static int
stamps_differ(const file_stamp *a, const file_stamp *b)
{
	return a->dev != b->dev || a->ino != b->ino || a->size != b->size ||
		a->mtime.tv_sec != b->mtime.tv_sec || a->mtime.tv_nsec != b->mtime.tv_nsec ||
		a->ctime.tv_sec != b->ctime.tv_sec || a->ctime.tv_nsec != b->ctime.tv_nsec;
}

/*
 * Reads the regular file rel (already checked) of model `model` (its name,
 * for messages) whole, after resolving it inside the model directory
 * (model_store_resolve: a symbolic link that leads outside is refused).
 * Returns the bytes (malloc'd), *len and, when stamp is not NULL, the
 * opened file's stamp; or NULL with *sqlstate and err.
 */
static uint8_t *
read_model_file(const model_cache *mc, const char *rel, const char *model,
				size_t *len, file_stamp *stamp, const char **sqlstate, char *err,
				size_t errlen)
{
	char	   *path = NULL;
	uint8_t    *buf = NULL;
	int			fd = -1;
	struct stat st;
	size_t		got = 0;
	char		opened[PATH_MAX];

	path = model_store_resolve(mc->dir, rel, "model file", model, sqlstate,
							   err, errlen);
	if (path == NULL)
		goto fail;
	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	/* stat first: opening a FIFO or a device could block or have effects. */
	if (stat(path, &st) != 0)
	{
		*sqlstate = model_store_unreachable(mc->dir, "model file", rel, model,
											errno, err, errlen);
		goto fail;
	}
	if (!S_ISREG(st.st_mode))
		goto not_regular;
	/* O_NONBLOCK: should a FIFO replace the file after the stat, open returns. */
	/* O_NOFOLLOW: a link swapped in after the resolution is not followed. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
	{
		*sqlstate = model_store_unreachable(mc->dir, "model file", rel, model,
											errno, err, errlen);
		goto fail;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto not_regular;
	if (opened_elsewhere(fd, path, opened, sizeof(opened)))
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "model file \"%s\" changed while it was opened: it is no longer at its resolved path inside the model directory \"%s\"",
				 rel, mc->dir);
		log_warn("refused model file \"%s\": resolved as \"%s\", opened as \"%s\"",
				 rel, path, opened);
		goto fail;
	}
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
	if (stamp != NULL)
		*stamp = stamp_of(&st);
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

/*
 * Checks a requested digest against the bytes' (have, read from `from`, a
 * name relative to the model directory, or NULL for bytes in memory);
 * -1 with err on mismatch (PGINFER_SQLSTATE_DATA_CORRUPTED: the bytes are
 * not those registered).
 */
static int
check_digest(const Pginfer__ModelSpec *spec, const uint8_t have[32],
			 const char *from, const char **sqlstate, char *err, size_t errlen)
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
	*sqlstate = PGINFER_SQLSTATE_DATA_CORRUPTED;
	if (from != NULL && strcmp(from, spec->file) != 0)
		snprintf(err, errlen, "SHA-256 mismatch: the uploaded copy \"%s\" of model file \"%s\" has SHA-256 %s, the model's registration says %s (the file was changed on disk)",
				 from, spec->file, have_hex, want_hex);
	else
		snprintf(err, errlen, "SHA-256 mismatch: model file \"%s\" has SHA-256 %s, the model's registration says %s (the file was changed on disk)",
				 spec->file, have_hex, want_hex);
	return -1;
}

/* Monotonic clock in microseconds. */
static int64_t
now_us(void)
{
	return ie_now_ns() / 1000;
}

/* The models-list entry of key (normal form), or NULL; lock held. */
static cache_entry *
find_key(model_cache *mc, const char *key)
{
	for (cache_entry *e = mc->models; e != NULL; e = e->next)
		if (strcmp(e->file, key) == 0)
			return e;
	return NULL;
}

/* The entry of key, added (not resident) when missing; NULL out of memory. */
static cache_entry *
find_or_add_key(model_cache *mc, const char *key)
{
	cache_entry *e = find_key(mc, key);

	if (e != NULL)
		return e;
	e = calloc(1, sizeof(*e));
	if (e == NULL || (e->file = strdup(key)) == NULL)
	{
		free(e);
		return NULL;
	}
	e->next = mc->models;
	mc->models = e;
	return e;
}

/* Drops what a resident entry holds (model, aux); lock held. */
static void
make_not_resident(model_cache *mc, cache_entry *e)
{
	if (!e->resident)
		return;
	if (e->aux != NULL && e->aux_free != NULL)
		e->aux_free(e->aux);
	e->aux = NULL;
	e->aux_free = NULL;
	e->layout = 0;
	ie_model_destroy(&e->model);
	e->resident = 0;
	mc->used -= e->bytes <= mc->used ? e->bytes : mc->used;
	mc->n_models--;
}

/* Removes e from the models list and frees it when nothing keeps it; lock held. */
static void
forget_if_unused(model_cache *mc, cache_entry *e)
{
	if (e->resident || e->busy || e->known || e->pins > 0)
		return;
	for (cache_entry **pp = &mc->models; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e)
		{
			*pp = e->next;
			entry_free(e);
			return;
		}
}

/*
 * Makes room for need bytes besides what is resident, evicting unpinned
 * resident models other than self, least recently used first.  Returns 0,
 * or -1 with 53200 and a message naming file, the sizes and the models in
 * use.  Lock held.
 */
static int
make_room(model_cache *mc, const cache_entry *self, const char *file,
		  uint64_t need, const char **sqlstate, char *err, size_t errlen)
{
	if (mc->capacity == 0)
		return 0;
	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	if (need > mc->capacity)
	{
		snprintf(err, errlen,
				 "model \"%s\" needs %llu bytes, more than the %llu bytes this worker may hold (--gpu-memory)",
				 file, (unsigned long long) need,
				 (unsigned long long) mc->capacity);
		return -1;
	}
	while (mc->used + need > mc->capacity)
	{
		cache_entry *lru = NULL;

		for (cache_entry *e = mc->models; e != NULL; e = e->next)
			if (e->resident && e != self && e->pins == 0 && !e->busy &&
				(lru == NULL || e->last_used_us < lru->last_used_us))
				lru = e;
		if (lru == NULL)
		{
			size_t		o;

			o = (size_t) snprintf(err, errlen,
								  "model \"%s\" needs %llu bytes, but only %llu of the %llu bytes this worker may hold (--gpu-memory) are free, and the resident models are in use:",
								  file, (unsigned long long) need,
								  (unsigned long long) (mc->capacity - mc->used),
								  (unsigned long long) mc->capacity);
			for (cache_entry *e = mc->models; e != NULL && o < errlen; e = e->next)
				if (e->resident && e != self)
					o += (size_t) snprintf(err + o, errlen - o, " \"%s\" (%llu bytes)",
										   e->file, (unsigned long long) e->bytes);
			return -1;
		}
		log_info("evicting model \"%s\" (%llu bytes, idle %.0f ms) to make room for \"%s\" (%llu bytes)",
				 lru->file, (unsigned long long) lru->bytes,
				 (now_us() - lru->last_used_us) / 1000.0, file,
				 (unsigned long long) need);
		make_not_resident(mc, lru);
		mc->counts.evictions++;
	}
	return 0;
}

/*
 * The bytes of e's model file: when spec carries a SHA-256, the uploaded
 * copy of those bytes (model_store.h) if this worker holds one, else the
 * file spec->file itself.  *from gets the name read (relative to the
 * model directory; a static buffer for the uploaded copy, as loads come
 * from one thread at a time), and *disk the stamp of the file in the
 * model directory read (size -1 when it was the uploaded copy).  NULL
 * with *sqlstate and err as read_model_file; a file missing both ways
 * names the digest.
 */
static uint8_t *
read_registered_bytes(const model_cache *mc, const cache_entry *e,
					  const Pginfer__ModelSpec *spec, size_t *len,
					  const char **from, file_stamp *disk, const char **sqlstate,
					  char *err, size_t errlen)
{
	static char stored[MODEL_STORE_NAME_LEN];
	uint8_t    *buf;

	memset(disk, 0, sizeof(*disk));
	disk->size = -1;

	if (spec->sha256.len == 32)
	{
		model_store_name(spec->sha256.data, stored);
		buf = read_model_file(mc, stored, spec->name, len, NULL, sqlstate, err, errlen);
		if (buf != NULL || strcmp(*sqlstate, PGINFER_SQLSTATE_NO_MODEL) != 0)
		{
			*from = stored;
			return buf;
		}
	}
	*from = e->file;
	buf = read_model_file(mc, e->file, spec->name, len, disk, sqlstate, err, errlen);
	if (buf == NULL && spec->sha256.len == 32 &&
		strcmp(*sqlstate, PGINFER_SQLSTATE_NO_MODEL) == 0)
		snprintf(err, errlen, "model file \"%s\"%s%s%s is neither in model directory \"%s\" nor uploaded to this worker (no \"%s\")",
				 spec->file, spec_named(spec) ? " of model \"" : "",
				 spec_named(spec) ? spec->name : "", spec_named(spec) ? "\"" : "",
				 mc->dir, stored);
	return buf;
}

/*
 * The SQLSTATE of the kind of an engine load error (engine.h): 0A000 for
 * what the engine lacks (an operator, an opset, a tensor type, an
 * attribute value), 53200 for memory, 54000 for a weight over the tensor
 * limit (--max-tensor-bytes), XX001 (data_corrupted) for a file that is no
 * complete, valid ONNX model.
 */
static const char *
load_error_sqlstate(ie_error_kind kind)
{
	switch (kind)
	{
		case IE_ERR_NOT_SUPPORTED:
			return PGINFER_SQLSTATE_NOT_SUPPORTED;
		case IE_ERR_NO_MEMORY:
			return PGINFER_SQLSTATE_OUT_OF_MEMORY;
		case IE_ERR_LIMIT:
			return PGINFER_SQLSTATE_TOO_LARGE;
		default:
			return PGINFER_SQLSTATE_DATA_CORRUPTED;
	}
}

/*
 * Loads key's entry e (marked busy, lock released by the caller around
 * this call): reads and checks the file and hands it to the engine, or
 * asks the loader.  Sets *model (NULL with a loader), *bytes and *disk
 * (read_registered_bytes).
 */
static int
load_entry(model_cache *mc, cache_entry *e, const Pginfer__ModelSpec *spec,
		   ie_precision precision, ie_model **model, uint64_t *bytes, uint8_t sha[32],
		   int *from_store, file_stamp *disk, const char **sqlstate, char *err,
		   size_t errlen)
{
	ie_error_kind kind = IE_ERR_NONE;
	ie_load_opts opts = {.precision = precision, .name = e->file, .error = &kind};
	uint8_t    *buf = NULL;
	size_t		len = 0;
	char		lerr[512];
	const char *sq;
	const char *from = NULL;
	uint64_t	est = 0;

	*model = NULL;
	*from_store = 0;
	memset(disk, 0, sizeof(*disk));
	disk->size = -1;
	if (mc->loader.load != NULL)
	{
		if (mc->loader.size(mc->loader.ctx, e->file, &est, err, errlen) != 0)
		{
			*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
			return -1;
		}
		pthread_mutex_lock(&mc->lock);
		sq = NULL;
		if (make_room(mc, e, e->file, est, &sq, err, errlen) != 0)
		{
			pthread_mutex_unlock(&mc->lock);
			*sqlstate = sq;
			return -1;
		}
		pthread_mutex_unlock(&mc->lock);
		if (mc->loader.load(mc->loader.ctx, e->file, err, errlen) != 0)
		{
			*sqlstate = PGINFER_SQLSTATE_INTERNAL;
			return -1;
		}
		*bytes = est;
		return 0;
	}
	buf = read_registered_bytes(mc, e, spec, &len, &from, disk, sqlstate, err, errlen);
	if (buf == NULL)
		return -1;
	model_sha256(buf, len, sha);
	if (check_digest(spec, sha, from, sqlstate, err, errlen) != 0)
		goto fail;
	/* Room for the file's size first: the weights take about as much. */
	pthread_mutex_lock(&mc->lock);
	sq = NULL;
	if (make_room(mc, e, e->file, (uint64_t) len, &sq, err, errlen) != 0)
	{
		pthread_mutex_unlock(&mc->lock);
		*sqlstate = sq;
		goto fail;
	}
	pthread_mutex_unlock(&mc->lock);
	*model = ie_model_load_bytes_opts(buf, len, &opts, lerr, sizeof(lerr));
	if (*model == NULL)
	{
		*sqlstate = load_error_sqlstate(kind);
		snprintf(err, errlen, "could not load model file \"%s\": %s",
				 spec->file, ie_message_body(lerr));
		goto fail;
	}
	*bytes = ie_model_weight_bytes(*model);
	*from_store = from != e->file;
	free(buf);
	return 0;

fail:
	free(buf);
	return -1;
}

/*
 * Whether the resident entry e cannot serve spec at precision: the
 * reloads of model_cache_acquire (another digest, the file on disk asked
 * for while the uploaded copy is resident, another precision).  Lock held.
 */
static int
reload_needed(const cache_entry *e, const Pginfer__ModelSpec *spec,
			  ie_precision precision)
{
	if (e->busy)
		return 0;
	if (e->has_sha256 && spec->sha256.len == 32 &&
		memcmp(e->sha256, spec->sha256.data, 32) != 0)
		return 1;
	if (e->from_store && spec->sha256.len != 32)
		return 1;
	return e->model != NULL && e->precision != precision;
}

/*
 * The stamp of the file key (normalised, relative) in the model directory
 * now, for disk_changed: a stat(2) a use, made without the cache's lock
 * (a slow file system must not hold up the worker's loop, which takes
 * it).  size -1 when there is nothing to compare: no such regular file
 * (removed: the resident model goes on serving) or a simulated device.
 * recent when it was modified less than MODEL_FILE_SETTLE_MS ago.
 */
static file_stamp
disk_stamp(const model_cache *mc, const char *key)
{
	char		path[PATH_MAX];
	struct stat st;
	struct timespec now;
	file_stamp	s;

	memset(&s, 0, sizeof(s));
	s.size = -1;
	if (mc->loader.load != NULL ||
		snprintf(path, sizeof(path), "%s/%s", mc->dir, key) >= (int) sizeof(path) ||
		stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
		clock_gettime(CLOCK_REALTIME, &now) != 0)
		return s;
	s = stamp_of(&st);
	s.recent = (now.tv_sec - st.st_mtim.tv_sec) * 1000 +
		(now.tv_nsec - st.st_mtim.tv_nsec) / 1000000 < MODEL_FILE_SETTLE_MS;
	return s;
}

/*
 * Whether e's model, read from the model directory, is no longer what its
 * file there holds: the file's stamp now (disk_stamp) differs from the one
 * it had when it was read (copied or renamed over, touched), once it has
 * been left alone for MODEL_FILE_SETTLE_MS: a copy onto it, or into a new
 * file under its name (rm and cp, install(1)), is written over time, and
 * the resident model serves meanwhile.  Not when the request names the
 * SHA-256 of the resident bytes: the registration pins those, whatever
 * the file holds now.  Lock held.
 */
static int
disk_changed(const cache_entry *e, const file_stamp *now,
			 const Pginfer__ModelSpec *spec)
{
	if (e->disk.size < 0 || now->size < 0)
		return 0;
	if (now->recent)
		return 0;
	if (e->has_sha256 && spec->sha256.len == 32 &&
		memcmp(e->sha256, spec->sha256.data, 32) == 0)
		return 0;
	return stamps_differ(now, &e->disk);
}

/*
 * Makes spec->file resident; see model_cache.h.  in_run: for
 * model_cache_get() in a run, which must not reload a model the run holds
 * (an explicit load comes between runs, when none is held).
 */
static int
acquire(model_cache *mc, const Pginfer__ModelSpec *spec, int in_run,
		double *loaded_ms, const char **sqlstate, char *err, size_t errlen)
{
	cache_entry *e = NULL;
	ie_model   *model = NULL;
	uint64_t	bytes = 0;
	uint8_t		sha[32];
	int			from_store = 0;
	char	   *key = NULL;
	int64_t		t0;
	double		ms;
	const char *sq = NULL;
	ie_precision precision;
	char		perr[128];
	file_stamp	disk,
				disk_now;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (loaded_ms != NULL)
		*loaded_ms = 0;
	if (spec == NULL)
	{
		snprintf(err, errlen, "no model given");
		return -1;
	}
	if (model_path_check(spec->file, err, errlen) != 0)
		return -1;
	/* "" (an older extension) is FP32; the engine ignores it on the CPU */
	if (ie_precision_parse(spec->precision, &precision, perr, sizeof(perr)) != 0)
	{
		snprintf(err, errlen, "model \"%s\": %s", spec_label(spec), perr);
		return -1;
	}
	key = normalise_path(spec->file, sqlstate, err, errlen);
	if (key == NULL)
		return -1;
	disk_now = disk_stamp(mc, key);

	pthread_mutex_lock(&mc->lock);
	e = find_or_add_key(mc, key);
	free(key);
	if (e == NULL)
	{
		pthread_mutex_unlock(&mc->lock);
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (in_run && e->resident && mc->run != 0 && e->held_run == mc->run &&
		reload_needed(e, spec, precision))
	{
		/*
		 * the run under way holds this model (model_cache_get): loading
		 * other bytes or another precision now would free it under the run
		 */
		pthread_mutex_unlock(&mc->lock);
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "model file \"%s\" is in use by this request as another version (another SHA-256 or precision) than model \"%s\" asks for",
				 spec->file, spec_label(spec));
		return -1;
	}
	if (e->resident && e->has_sha256 && spec->sha256.len == 32 && !e->busy &&
		memcmp(e->sha256, spec->sha256.data, 32) != 0)
	{
		/* registered anew with other bytes (infer.upload_model): load those */
		log_info("model file \"%s\" is registered with another SHA-256 now: loading it again",
				 e->file);
		make_not_resident(mc, e);
	}
	else if (e->resident && e->from_store && spec->sha256.len != 32 && !e->busy)
	{
		/*
		 * resident from an uploaded copy, asked for as the file on disk (a
		 * model registered without an upload, in another database sharing
		 * this worker): the two need not be the same bytes
		 */
		log_info("model file \"%s\" is asked for without a SHA-256: loading it from the model directory, not from its uploaded copy",
				 e->file);
		make_not_resident(mc, e);
	}
	else if (e->resident && !e->busy && e->model != NULL && e->precision != precision &&
			 ie_model_device(e->model) != IE_DEVICE_CPU)
	{
		/*
		 * one file, two registrations at two precisions: one resident at a
		 * time (on the CPU, which computes every precision in FP32, the
		 * resident model serves both)
		 */
		log_info("model file \"%s\" is asked for in %s, resident in %s: loading it again",
				 e->file, ie_precision_name(precision), ie_precision_name(e->precision));
		make_not_resident(mc, e);
	}
	else if (e->resident && !e->busy && !e->from_store &&
			 !(in_run && mc->run != 0 && e->held_run == mc->run) &&
			 disk_changed(e, &disk_now, spec))
	{
		/*
		 * the file was replaced in the model directory since it was read:
		 * serve what it holds now (a run that holds the model finishes
		 * with it; the next one loads the file again)
		 */
		log_info("model file \"%s\" changed in the model directory since it was loaded: loading it again",
				 e->file);
		make_not_resident(mc, e);
	}
	if (e->resident)
	{
		e->last_used_us = now_us();
		mc->counts.hits++;
		pthread_mutex_unlock(&mc->lock);
		return e->has_sha256 ? check_digest(spec, e->sha256, NULL, sqlstate, err, errlen) : 0;
	}
	e->busy = 1;
	mc->counts.misses++;
	pthread_mutex_unlock(&mc->lock);

	t0 = now_us();
	if (load_entry(mc, e, spec, precision, &model, &bytes, sha, &from_store, &disk, sqlstate,
				   err, errlen) != 0)
		goto fail;
	ms = (now_us() - t0) / 1000.0;

	pthread_mutex_lock(&mc->lock);
	/* The engine's figure may exceed the estimate: room for that too. */
	if (make_room(mc, e, e->file, bytes, &sq, err, errlen) != 0)
	{
		pthread_mutex_unlock(&mc->lock);
		*sqlstate = sq;
		ie_model_destroy(&model);
		goto fail;
	}
	e->model = model;
	e->resident = 1;
	e->known = 1;
	e->busy = 0;
	e->bytes = bytes;
	e->load_ms_before = e->load_ms;
	e->load_ms = ms;
	e->load_start_us = t0;
	e->load_end_us = t0 + (int64_t) (ms * 1000.0);
	e->last_used_us = now_us();
	e->from_store = from_store;
	e->disk = disk;
	e->precision = precision;
	if (mc->loader.load == NULL)
	{
		memcpy(e->sha256, sha, 32);
		e->has_sha256 = 1;
	}
	mc->used += bytes;
	mc->n_models++;
	mc->load_ms_total += ms;
	mc->counts.loads++;
	e->load_no = mc->counts.loads;
	pthread_mutex_unlock(&mc->lock);
	if (loaded_ms != NULL)
		*loaded_ms = ms;
	log_info("loaded model \"%s\" (%llu bytes of weights) in %.1f ms",
			 e->file, (unsigned long long) bytes, ms);
	return 0;

fail:
	pthread_mutex_lock(&mc->lock);
	e->busy = 0;
	forget_if_unused(mc, e);
	pthread_mutex_unlock(&mc->lock);
	return -1;
}

/* Makes spec->file resident; see model_cache.h. */
int
model_cache_acquire(model_cache *mc, const Pginfer__ModelSpec *spec,
					double *loaded_ms, const char **sqlstate, char *err,
					size_t errlen)
{
	return acquire(mc, spec, 0, loaded_ms, sqlstate, err, errlen);
}

/* The loaded model for spec->file, loading (and checking) it on first use. */
const ie_model *
model_cache_get(model_cache *mc, const Pginfer__ModelSpec *spec,
				const char **sqlstate, char *err, size_t errlen)
{
	const ie_model *m = NULL;
	char	   *key;

	if (mc->loader.load != NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "model \"%s\" is simulated and cannot run",
				 spec != NULL ? spec->file : "");
		return NULL;
	}
	if (acquire(mc, spec, 1, NULL, sqlstate, err, errlen) != 0)
		return NULL;
	key = normalise_path(spec->file, sqlstate, err, errlen);
	if (key == NULL)
		return NULL;
	pthread_mutex_lock(&mc->lock);
	{
		cache_entry *e = find_key(mc, key);

		if (e != NULL && e->resident)
		{
			m = e->model;
			e->held_run = mc->run;
		}
	}
	pthread_mutex_unlock(&mc->lock);
	free(key);
	if (m == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "model \"%s\" was evicted while loading", spec->file);
	}
	return m;
}

/* Starts a run: models handed out before may be reloaded again. */
void
model_cache_begin_run(model_cache *mc)
{
	pthread_mutex_lock(&mc->lock);
	mc->run++;
	pthread_mutex_unlock(&mc->lock);
}

/* Whether two specs of one file ask for different bytes or precisions. */
static int
specs_differ(const Pginfer__ModelSpec *a, const Pginfer__ModelSpec *b)
{
	ie_precision pa,
				pb;
	char		perr[128];

	if (a->sha256.len != b->sha256.len ||
		(a->sha256.len > 0 && memcmp(a->sha256.data, b->sha256.data, a->sha256.len) != 0))
		return 1;
	if (ie_precision_parse(a->precision, &pa, perr, sizeof(perr)) != 0 ||
		ie_precision_parse(b->precision, &pb, perr, sizeof(perr)) != 0)
		return strcmp(a->precision, b->precision) != 0;
	return pa != pb;
}

/* Refuses specs naming one file as two versions; see model_cache.h. */
int
model_cache_check_specs(const Pginfer__ModelSpec *const *specs, int n,
						const char **sqlstate, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
		{
			char	   *ki,
					   *kj;
			int			clash;

			if (specs[i] == NULL || specs[j] == NULL ||
				specs[i]->file[0] == '\0' || specs[j]->file[0] == '\0')
				continue;
			ki = key_of(specs[i]->file);
			kj = key_of(specs[j]->file);
			clash = ki != NULL && kj != NULL && strcmp(ki, kj) == 0 &&
				specs_differ(specs[i], specs[j]);
			free(ki);
			free(kj);
			if (clash)
			{
				*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
				snprintf(err, errlen, "models \"%s\" and \"%s\" name the same model file \"%s\" but different versions of it (another SHA-256, or one registered with an upload and one without, or another precision); one request cannot use two versions of one file",
						 spec_label(specs[i]), spec_label(specs[j]), specs[j]->file);
				return -1;
			}
		}
	return 0;
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
	path = model_store_resolve(mc->dir, key, "labels file", NULL, sqlstate,
							   err, errlen);
	if (path == NULL)
		goto fail;				/* missing or unreadable: its message */
	e = calloc(1, sizeof(*e));
	if (e == NULL)
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
	if (access(path, R_OK) != 0)
	{
		*sqlstate = model_store_unreachable(mc->dir, "labels file",
											labels_file, NULL, errno, err,
											errlen);
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
	log_info("loaded dictionary \"%s\" (%d lines)", e->file, e->dict_len - 2);
	*dict = (const char *const *) e->dict;
	*dict_len = e->dict_len;
	return 0;

fail:
	free(key);
	free(path);
	entry_free(e);
	return -1;
}

/* The labels of a classifier spec; see model_cache.h. */
int
model_cache_get_labels(model_cache *mc, const Pginfer__ModelSpec *spec,
					   const char *const **labels, size_t *n_labels,
					   const char **sqlstate, char *err, size_t errlen)
{
	const char *const *dict;
	int			dict_len;

	if (spec->n_labels > 0)
	{
		*labels = (const char *const *) spec->labels;
		*n_labels = spec->n_labels;
		return 0;
	}
	if (spec->labels_file == NULL || spec->labels_file[0] == '\0')
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "%s model \"%s\" (file \"%s\") has no labels: "
				 "register it with labels => ARRAY[...], or with labels_file => a file in the model directory holding one label a line",
				 spec->task != NULL && spec->task[0] != '\0' ? spec->task : "classify",
				 spec_label(spec), spec->file);
		return -1;
	}
	if (model_cache_get_dict(mc, spec->labels_file, &dict, &dict_len, sqlstate,
							 err, errlen) != 0)
		return -1;
	/*
	 * the dictionary is blank, the file's lines, space (ocr_dict_load);
	 * blank lines at the file's end are no labels
	 */
	*labels = dict + 1;
	*n_labels = (size_t) dict_len - 2;
	while (*n_labels > 0 && (*labels)[*n_labels - 1][0] == '\0')
		(*n_labels)--;
	return 0;
}

/* The message of scores not one per label; see model_cache.h. */
void
model_cache_labels_mismatch(const char *what, const Pginfer__ModelSpec *spec,
							size_t scores, size_t n_labels, char *err,
							size_t errlen)
{
	int			from_file = spec->n_labels == 0;

	snprintf(err, errlen, "%s \"%s\" gives %zu scores but has %zu labels%s%s%s; register it with one label per score",
			 what, spec->file, scores, n_labels,
			 from_file ? " (the lines of \"" : "",
			 from_file ? spec->labels_file : "",
			 from_file ? "\")" : "");
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

/* The normal form of file (malloc'd), or NULL when it is unsafe or empty. */
static char *
key_of(const char *file)
{
	const char *sqlstate;
	char		err[256];

	if (file == NULL || model_path_check(file, err, sizeof(err)) != 0)
		return NULL;
	return normalise_path(file, &sqlstate, err, sizeof(err));
}

/*
 * Drops the model (pinned or not; with respect_pins a pinned one stays and
 * -1 is returned) and, unless respect_pins, the dictionary named file.
 * 1 when something went, 0 when nothing of that name was resident.
 */
static int
drop(model_cache *mc, const char *file, int respect_pins)
{
	int			found = 0;
	char	   *key = key_of(file);
	cache_entry *e;

	if (key == NULL)
		return 0;
	pthread_mutex_lock(&mc->lock);
	e = find_key(mc, key);
	if (e != NULL && e->resident)
	{
		if (respect_pins && (e->pins > 0 || e->busy))
			found = -1;
		else
		{
			make_not_resident(mc, e);
			found = 1;
		}
	}
	if (!respect_pins && list_remove(&mc->dicts, key))
		found = 1;
	pthread_mutex_unlock(&mc->lock);
	if (found > 0)
		log_info("unloaded \"%s\"", key);
	free(key);
	return found;
}

/* Drops the model and dictionary named file; see model_cache.h. */
int
model_cache_unload(model_cache *mc, const char *file)
{
	return drop(mc, file, 0);
}

/* Drops the model file unless it is pinned; see model_cache.h. */
int
model_cache_evict(model_cache *mc, const char *file)
{
	return drop(mc, file, 1);
}

/* The resident models-list entry of file (any spelling), or NULL; lock held. */
static cache_entry *
find_model_entry(model_cache *mc, const char *file)
{
	char	   *key = key_of(file);
	cache_entry *e;

	if (key == NULL)
		return NULL;
	e = find_key(mc, key);
	free(key);
	return e != NULL && e->resident ? e : NULL;
}

/* The caller's data attached to the loaded model of file, or NULL. */
void *
model_cache_get_aux(model_cache *mc, const char *file)
{
	cache_entry *e;
	void	   *aux;

	pthread_mutex_lock(&mc->lock);
	e = find_model_entry(mc, file);
	aux = e != NULL ? e->aux : NULL;
	pthread_mutex_unlock(&mc->lock);
	return aux;
}

/* Attaches aux to the loaded model of file; -1 when it is not loaded. */
int
model_cache_set_aux(model_cache *mc, const char *file, void *aux,
					void (*aux_free) (void *aux))
{
	cache_entry *e;

	pthread_mutex_lock(&mc->lock);
	e = find_model_entry(mc, file);
	if (e == NULL)
	{
		pthread_mutex_unlock(&mc->lock);
		return -1;
	}
	if (e->aux != NULL && e->aux_free != NULL && e->aux != aux)
		e->aux_free(e->aux);
	e->aux = aux;
	e->aux_free = aux_free;
	pthread_mutex_unlock(&mc->lock);
	return 0;
}

/* The layout verdict of file's loaded model; see model_cache.h. */
int
model_cache_get_layout(model_cache *mc, const char *file)
{
	cache_entry *e;
	int			layout;

	pthread_mutex_lock(&mc->lock);
	e = find_model_entry(mc, file);
	layout = e != NULL && e->resident ? e->layout : 0;
	pthread_mutex_unlock(&mc->lock);
	return layout;
}

/* Keeps a layout verdict with file's loaded model; see model_cache.h. */
int
model_cache_set_layout(model_cache *mc, const char *file, int layout)
{
	cache_entry *e;

	pthread_mutex_lock(&mc->lock);
	e = find_model_entry(mc, file);
	if (e == NULL || !e->resident)
	{
		pthread_mutex_unlock(&mc->lock);
		return -1;
	}
	e->layout = layout;
	pthread_mutex_unlock(&mc->lock);
	return 0;
}

/* Keeps a layout verdict and logs it once; see model_cache.h. */
void
model_cache_keep_layout(model_cache *mc, const char *file, int layout,
						const char *what, const char *why)
{
	if (model_cache_set_layout(mc, file, layout) == 0)
		log_info("%s \"%s\": %s; %s", what, file, why,
				 layout == MODEL_LAYOUT_NOT_ROWS ? "rows run one at a time"
				 : "rows run in batches");
}

/* The model directory. */
const char *
model_cache_dir(const model_cache *mc)
{
	return mc->dir;
}

/* Number of resident models. */
int
model_cache_count(const model_cache *mc)
{
	model_cache *m = (model_cache *) mc;
	int			n;

	pthread_mutex_lock(&m->lock);
	n = m->n_models;
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* File name of the i-th resident model (most recently loaded first), or NULL. */
const char *
model_cache_file(const model_cache *mc, int i)
{
	model_cache *m = (model_cache *) mc;
	const cache_entry *e;

	pthread_mutex_lock(&m->lock);
	for (e = m->models; e != NULL; e = e->next)
		if (e->resident && i-- == 0)
			break;
	pthread_mutex_unlock(&m->lock);
	return e != NULL ? e->file : NULL;
}

/* Bytes of weights over all resident models. */
size_t
model_cache_weight_bytes(const model_cache *mc)
{
	return (size_t) model_cache_used((model_cache *) mc);
}

/* Uses loader instead of the files and the engine. */
void
model_cache_set_loader(model_cache *mc, const model_loader *loader)
{
	pthread_mutex_lock(&mc->lock);
	mc->loader = *loader;
	pthread_mutex_unlock(&mc->lock);
}

/* Sets the capacity (0: none). */
void
model_cache_set_capacity(model_cache *mc, uint64_t bytes)
{
	pthread_mutex_lock(&mc->lock);
	mc->capacity = bytes;
	pthread_mutex_unlock(&mc->lock);
}

/* The capacity in bytes (0: none). */
uint64_t
model_cache_capacity(model_cache *mc)
{
	uint64_t	v;

	pthread_mutex_lock(&mc->lock);
	v = mc->capacity;
	pthread_mutex_unlock(&mc->lock);
	return v;
}

/* Bytes held by resident models. */
uint64_t
model_cache_used(model_cache *mc)
{
	uint64_t	v;

	pthread_mutex_lock(&mc->lock);
	v = mc->used;
	pthread_mutex_unlock(&mc->lock);
	return v;
}

/* The use and residency counters; see model_cache.h. */
model_cache_counts
model_cache_get_counts(model_cache *mc)
{
	model_cache_counts c;

	pthread_mutex_lock(&mc->lock);
	c = mc->counts;
	pthread_mutex_unlock(&mc->lock);
	return c;
}

/* Milliseconds spent loading so far. */
double
model_cache_load_ms_total(model_cache *mc)
{
	double		v;

	pthread_mutex_lock(&mc->lock);
	v = mc->load_ms_total;
	pthread_mutex_unlock(&mc->lock);
	return v;
}

/* Takes back the load times of loads after `since`; see model_cache.h. */
int
model_cache_untime_loads(model_cache *mc, uint64_t since,
						 const int64_t *resumed, int n_resumed)
{
	int			n = 0;
	int			known = 0;

	for (int k = 0; k < n_resumed; k++)
		known |= resumed[k] > 0;
	pthread_mutex_lock(&mc->lock);
	for (cache_entry *e = mc->models; e != NULL; e = e->next)
	{
		int			spans = !known;

		if (e->load_no == 0 || e->load_no <= since)
			continue;
		/* a load that began before a resume and ended after it */
		for (int k = 0; k < n_resumed && !spans; k++)
			spans = resumed[k] > 0 && e->load_start_us < resumed[k] &&
				e->load_end_us >= resumed[k] - MODEL_CACHE_RESUME_SLACK_US;
		if (!spans)
			continue;
		log_info("model \"%s\": a load of %.1f ms across a stop of the process (SIGSTOP, SIGCONT): its load time stays %.1f ms (0: none)",
				 e->file, e->load_ms, e->load_ms_before);
		e->load_ms = e->load_ms_before;
		e->load_no = 0;
		n++;
	}
	pthread_mutex_unlock(&mc->lock);
	return n;
}

/* Declares a model a loader knows; see model_cache.h. */
int
model_cache_declare(model_cache *mc, const char *file, uint64_t bytes,
					double load_ms)
{
	char	   *key = key_of(file);
	cache_entry *e;

	if (key == NULL)
		return -1;
	pthread_mutex_lock(&mc->lock);
	e = find_or_add_key(mc, key);
	if (e != NULL && !e->resident)
	{
		e->known = 1;
		e->bytes = bytes;
		e->load_ms = load_ms;
	}
	pthread_mutex_unlock(&mc->lock);
	free(key);
	return e != NULL ? 0 : -1;
}

/* Adds delta to the pins of file; see model_cache.h. */
void
model_cache_pin(model_cache *mc, const char *file, int delta)
{
	char	   *key;
	cache_entry *e;

	if (file == NULL || file[0] == '\0' || (key = key_of(file)) == NULL)
		return;
	pthread_mutex_lock(&mc->lock);
	e = delta > 0 ? find_or_add_key(mc, key) : find_key(mc, key);
	if (e != NULL)
	{
		e->pins += delta;
		if (e->pins < 0)
			e->pins = 0;
		forget_if_unused(mc, e);
	}
	pthread_mutex_unlock(&mc->lock);
	free(key);
}

/* Whether e is the entry of one of keys[0..n) (NULLs skipped). */
static int
entry_in(const cache_entry *e, char *const *keys, int n)
{
	for (int i = 0; i < n; i++)
		if (keys[i] != NULL && strcmp(e->file, keys[i]) == 0)
			return 1;
	return 0;
}

/* Whether keys[i] is one of keys[0..i) (NULLs skipped). */
static int
key_repeated(char *const *keys, int i)
{
	for (int j = 0; j < i; j++)
		if (keys[j] != NULL && strcmp(keys[j], keys[i]) == 0)
			return 1;
	return 0;
}

/*
 * The bytes the model of key will hold once resident: its resident or
 * last known size, else the loader's figure, else, for a model file never
 * loaded, the size of the file key names in the model directory (an ONNX
 * file is its weights and a little more: MiniLM's 90,314,964 bytes of
 * file hold 90,265,716 of weights), so that its first load waits for room
 * as later ones do.  0 when unknown (no such regular file, a name that
 * leaves the directory, an uploaded copy); lock held.
 */
static uint64_t
expected_bytes(model_cache *mc, const char *key)
{
	const cache_entry *e = find_key(mc, key);
	uint64_t	bytes = 0;
	char		err[256];
	char		path[PATH_MAX];
	struct stat st;

	if (e != NULL && (e->resident || e->known) && e->bytes > 0)
		return e->bytes;
	if (mc->loader.size != NULL &&
		mc->loader.size(mc->loader.ctx, key, &bytes, err, sizeof(err)) == 0)
		return bytes;
	if (mc->loader.load == NULL && key[0] != '/' && strstr(key, "..") == NULL &&
		snprintf(path, sizeof(path), "%s/%s", mc->dir, key) < (int) sizeof(path) &&
		stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return (uint64_t) st.st_size;
	return 0;
}

/*
 * The expected bytes of the models of keys[0..n) (NULLs skipped, repeats
 * once) into *total, of those not resident into *missing, the first of
 * those into *first_missing; *unknown (may be NULL) set when one not
 * resident has no known size.  -1 when a model alone exceeds the cap,
 * else 1.  Lock held.
 */
static int
keys_bytes(model_cache *mc, char *const *keys, int n, uint64_t *total,
		   uint64_t *missing, const char **first_missing, int *unknown)
{
	for (int i = 0; i < n; i++)
	{
		const cache_entry *e;
		uint64_t	bytes;

		if (keys[i] == NULL || key_repeated(keys, i))
			continue;
		e = find_key(mc, keys[i]);
		bytes = expected_bytes(mc, keys[i]);
		if (unknown != NULL)
			*unknown |= bytes == 0 && (e == NULL || !e->resident);
		if (bytes > mc->capacity)
			return -1;
		*total += bytes;
		if (e == NULL || !e->resident)
		{
			*missing += bytes;
			if (*first_missing == NULL)
				*first_missing = keys[i];
		}
	}
	return 1;
}

/*
 * model_cache_can_load, and with evict the evictions of
 * model_cache_reserve when the answer is 1.
 */
static int
specs_fit(model_cache *mc, const Pginfer__ModelSpec *const *specs, int n,
		  int evict)
{
	char	  **keys = calloc(n > 0 ? (size_t) n : 1, sizeof(*keys));
	uint64_t	total = 0,
				missing = 0,
				held = 0;
	int			unknown = 0,
				rc = 1;
	const char *first_missing = NULL;

	if (keys == NULL)
		return 1;
	for (int i = 0; i < n; i++)
		if (specs[i] != NULL && specs[i]->file != NULL && specs[i]->file[0] != '\0')
			keys[i] = key_of(specs[i]->file);
	pthread_mutex_lock(&mc->lock);
	if (mc->capacity > 0)
		rc = keys_bytes(mc, keys, n, &total, &missing, &first_missing, &unknown);
	/* resident models this group does not need, that other work holds */
	for (cache_entry *e = mc->models; mc->capacity > 0 && e != NULL; e = e->next)
		if (e->resident && (e->pins > 0 || e->busy) && !entry_in(e, keys, n))
			held += e->bytes;
	if (mc->capacity == 0)
		rc = 1;
	else if (rc == -1 || total > mc->capacity)
		rc = -1;
	else if (unknown)
		rc = 1;
	else if (mc->used + missing > mc->capacity && held + total > mc->capacity)
		rc = 0;
	else if (evict && mc->used + missing > mc->capacity)
	{
		const char *sq;
		char		err[1024];

		if (make_room(mc, NULL, first_missing, missing, &sq, err, sizeof(err)) != 0)
			log_warn("could not reserve room: %s", err);
	}
	pthread_mutex_unlock(&mc->lock);
	for (int i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

/*
 * model_cache_reserve_idle: the bytes the models of keys[0..n) (NULLs
 * skipped, repeats once) still miss, and whether they fit the cap at all
 * (-1: a model alone or together they exceed it); then, when they fit,
 * evicts resident models not among keys, pinned or not (nothing runs),
 * unpinned ones first, each kind least recently used first, until the
 * missing ones fit.  Lock held.
 */
static int
evict_idle(model_cache *mc, char *const *keys, int n)
{
	uint64_t	total = 0,
				missing = 0;
	const char *first_missing = NULL;

	if (keys_bytes(mc, keys, n, &total, &missing, &first_missing, NULL) < 0 ||
		total > mc->capacity)
		return -1;
	while (mc->used + missing > mc->capacity)
	{
		cache_entry *lru = NULL;

		/* unpinned models first, then those queued work pins */
		for (cache_entry *e = mc->models; e != NULL; e = e->next)
			if (e->resident && !e->busy && !entry_in(e, keys, n) &&
				(lru == NULL || (e->pins == 0) > (lru->pins == 0) ||
				 ((e->pins == 0) == (lru->pins == 0) &&
				  e->last_used_us < lru->last_used_us)))
				lru = e;
		if (lru == NULL)
			break;
		log_info("evicting model \"%s\" (%llu bytes, needed by %d queued requests) to make room for \"%s\" (%llu bytes): every queued request waits for memory, and none runs",
				 lru->file, (unsigned long long) lru->bytes, lru->pins,
				 first_missing, (unsigned long long) missing);
		make_not_resident(mc, lru);
		mc->counts.evictions++;
	}
	return 1;
}

/* Makes room for specs, pins of queued work aside; see model_cache.h. */
int
model_cache_reserve_idle(model_cache *mc,
						 const Pginfer__ModelSpec *const *specs, int n)
{
	char	  **keys = calloc(n > 0 ? (size_t) n : 1, sizeof(*keys));
	int			rc = 1;

	if (keys == NULL)
		return 1;
	for (int i = 0; i < n; i++)
		if (specs[i] != NULL && specs[i]->file != NULL && specs[i]->file[0] != '\0')
			keys[i] = key_of(specs[i]->file);
	pthread_mutex_lock(&mc->lock);
	if (mc->capacity > 0)
		rc = evict_idle(mc, keys, n);
	pthread_mutex_unlock(&mc->lock);
	for (int i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

/* Whether the models of specs may be made resident now; see model_cache.h. */
int
model_cache_can_load(model_cache *mc, const Pginfer__ModelSpec *const *specs,
					 int n)
{
	return specs_fit(mc, specs, n, 0);
}

/* Makes room for the models of specs now; see model_cache.h. */
int
model_cache_reserve(model_cache *mc, const Pginfer__ModelSpec *const *specs,
					int n)
{
	return specs_fit(mc, specs, n, 1);
}

/* The models the cache knows; see model_cache.h. */
model_info *
model_cache_snapshot(model_cache *mc, int *n)
{
	model_info *out = NULL;
	int			k = 0,
				total = 0;
	int64_t		now = now_us();

	*n = 0;
	pthread_mutex_lock(&mc->lock);
	for (cache_entry *e = mc->models; e != NULL; e = e->next)
		total++;
	if (total > 0)
		out = calloc((size_t) total, sizeof(*out));
	/* Resident first (pass 1), then the others (pass 2). */
	for (int pass = 1; out != NULL && pass <= 2; pass++)
		for (cache_entry *e = mc->models; e != NULL; e = e->next)
		{
			model_info *m;

			if ((pass == 1) != (e->resident != 0))
				continue;
			m = &out[k++];
			snprintf(m->file, sizeof(m->file), "%s", e->file);
			m->resident = e->resident;
			m->bytes = e->bytes;
			m->load_ms = e->load_ms;
			m->pins = e->pins;
			m->idle_ms = e->last_used_us > 0 ? (now - e->last_used_us) / 1000.0 : 0;
		}
	pthread_mutex_unlock(&mc->lock);
	*n = k;
	return out;
}

/*
 * SHA-256 (FIPS 180-4) of data[0..len) into digest[32], by OpenSSL's
 * libcrypto (EVP_Digest).  A failure inside libcrypto cannot happen for an
 * in-memory digest; it aborts rather than return a wrong digest.
 */
void
model_sha256(const void *data, size_t len, uint8_t digest[32])
{
	unsigned int n = 0;

	if (EVP_Digest(data, len, digest, &n, EVP_sha256(), NULL) != 1 || n != 32)
		abort();
}
