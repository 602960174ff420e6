/*
 * model_cache.h
 *	  The models an infer-worker holds in memory, by file name.
 *
 * A model is named by ModelSpec.file, a path relative to --model-dir.  The
 * first request that names a file loads it (ie_model_load_bytes over the
 * file's bytes, whose SHA-256 is kept); later requests get the same loaded
 * model until it is unloaded.  OCR dictionaries (ModelSpec.labels_file)
 * are kept the same way, loaded with ocr_dict_load().  Paths that are
 * absolute or contain a ".." component are refused before any file is
 * opened, and so is a name whose real path (symbolic links followed) lies
 * outside the model directory (model_store_resolve), so a request can
 * never read outside --model-dir.  A spec with a sha256 is loaded from
 * the uploaded copy of those bytes when this worker holds one
 * (model_store.h), else from its file; either way the bytes read must
 * have that SHA-256 (PGINFER_SQLSTATE_DATA_CORRUPTED otherwise), and a
 * resident model registered anew with another digest is loaded again, and
 * so is one read from an uploaded copy when a spec without a digest (the
 * file on disk, as another database sharing this worker may register it)
 * asks for it.
 * The cache is
 * keyed by the path in normal form ("." components and repeated slashes
 * dropped), so "./x.onnx", ".//x.onnx" and "x.onnx" share one entry and
 * unloading any spelling drops it.  Only regular files are opened (a FIFO
 * or device is refused with PGINFER_SQLSTATE_NO_MODEL before open), and a
 * model file over MODEL_MAX_FILE_BYTES is refused (PGINFER_SQLSTATE_TOO_LARGE)
 * before it is read.
 *
 * A caller may attach data of its own to a loaded model (the text
 * fragment keeps a model's tokenizer and settings there): it is freed
 * with the model, so unloading a model drops whatever was read beside it.
 *
 * Residency (DESIGN.md "Placement"): the loaded models' weight bytes
 * (ie_model_weight_bytes, or a loader's size) may add up to at most the
 * capacity (--gpu-memory; 0: no cap).  Loading a model that does not fit
 * first evicts resident models that no queued or running request needs
 * (pins, model_cache_pin), least recently used first; a pinned model is
 * never evicted, and when the model still does not fit the load fails
 * with PGINFER_SQLSTATE_OUT_OF_MEMORY (model_cache_can_load tells
 * beforehand whether such a load would fit once pins drop, so that the
 * server holds the request back instead).  Each load is timed (load_ms).
 * Besides resident models the cache knows models that were evicted or
 * are pinned before their first load; model_cache_snapshot() lists both.
 *
 * A loader (model_cache_set_loader) replaces reading the file and the
 * engine: the simulated device (worker/simulate.h) sizes and "loads" a
 * model itself; such entries hold no ie_model, so model_cache_get() is
 * then refused and callers use model_cache_acquire().
 *
 * Threading: the cache is locked inside.  Loads, gets, dictionaries and
 * aux data come from one thread at a time (the compute thread); pins,
 * snapshots, counts and unloads may come from another (the server loop).
 * A model handed out stays valid while it is pinned (or, unpinned, until
 * the next load or unload).
 */
#ifndef INFER_MODEL_CACHE_H
#define INFER_MODEL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/engine/engine.h"

typedef struct model_cache model_cache;

/* Most bytes a model file may have: the engine's limit (protobuf's 2 GiB). */
#define MODEL_MAX_FILE_BYTES ((uint64_t) 2 << 30)

/*
 * New empty cache over model_dir (which must be a readable directory).
 * Returns NULL with a message in err otherwise.
 */
model_cache *model_cache_new(const char *model_dir, char *err, size_t errlen);

/* Frees every loaded model and dictionary, then *mc; sets *mc to NULL. */
void		model_cache_destroy(model_cache **mc);

/*
 * Checks that rel is a safe path below the model directory: not empty, not
 * absolute, no ".." component.  Returns 0, or -1 with a message in err
 * that names the path.
 */
int			model_path_check(const char *rel, char *err, size_t errlen);

/*
 * The loaded model for spec->file, loading it on first use.  When
 * spec->sha256 is set (32 bytes) the file's SHA-256 must match it.  On
 * failure returns NULL, sets *sqlstate (PGINFER_SQLSTATE_NO_MODEL for a
 * missing file or one that is not a regular file, _TOO_LARGE for one over
 * MODEL_MAX_FILE_BYTES, _BAD_PARAM for an unsafe path (one resolving
 * outside the model directory included), _DATA_CORRUPTED for bytes whose
 * SHA-256 is not spec->sha256, _INTERNAL for a file the engine cannot
 * load, _OUT_OF_MEMORY when it
 * cannot be made to fit the capacity) and puts a message naming the file
 * in err.
 */
const ie_model *model_cache_get(model_cache *mc, const Pginfer__ModelSpec *spec,
								const char **sqlstate, char *err, size_t errlen);

/*
 * Starts a run (one stage of a request, worker/fragment.c): the models
 * model_cache_get() hands out from now on are held by it.  A held model
 * is never freed by a reload: a later get or acquire in the same run that
 * names its file as another version (another SHA-256, the file on disk
 * while the uploaded copy is resident, another precision) fails with
 * PGINFER_SQLSTATE_BAD_PARAM instead.  model_cache_acquire() (an
 * explicit load, between runs) may reload it.  Compute thread only.
 */
void		model_cache_begin_run(model_cache *mc);

/*
 * Checks the n specs of one request (NULL or an empty file is skipped):
 * two that name the same file (any spelling) must ask for the same
 * version of it, the same sha256 (or both none) and the same precision.
 * Returns 0, or -1 with PGINFER_SQLSTATE_BAD_PARAM and a message naming
 * both models and the file.  Looks nothing up; call it before the gets.
 */
int			model_cache_check_specs(const Pginfer__ModelSpec *const *specs, int n,
									const char **sqlstate, char *err,
									size_t errlen);

/*
 * The OCR dictionary in labels_file (relative to the model directory),
 * loading it on first use.  Sets *dict and *dict_len (owned by the cache).
 * Returns 0, or -1 with *sqlstate and a message in err.
 */
int			model_cache_get_dict(model_cache *mc, const char *labels_file,
								 const char *const **dict, int *dict_len,
								 const char **sqlstate, char *err, size_t errlen);

/*
 * The class labels of a classifier spec (infer.classify's kinds), in the
 * order of its scores: spec->labels when it has some, else the lines of
 * spec->labels_file (relative to the model directory; one label a line,
 * "\n" or "\r\n" ended, blank lines at the end left out, read with the
 * OCR dictionary's loader and kept in the cache as it is).  Sets *labels (owned by spec or the cache) and
 * *n_labels.  Returns 0, or -1 with *sqlstate and err: 22023 when the
 * spec has neither, 58P01 when the file is not in the model directory,
 * XX000 when it cannot be read or is empty.
 */
/*
 * Formats into err the message of a classifier spec (what: "classify
 * model", "text classifier") whose scores (their count) are not one per
 * label (n_labels, model_cache_get_labels's), naming its labels_file
 * when the labels came from it.
 */
void		model_cache_labels_mismatch(const char *what,
										const Pginfer__ModelSpec *spec,
										size_t scores, size_t n_labels,
										char *err, size_t errlen);

int			model_cache_get_labels(model_cache *mc,
								   const Pginfer__ModelSpec *spec,
								   const char *const **labels,
								   size_t *n_labels, const char **sqlstate,
								   char *err, size_t errlen);

/*
 * Drops the model loaded from file (and the dictionary of that name, if
 * any), pinned or not (callers that respect pins use model_cache_evict).
 * Returns 1 when something was dropped, 0 when nothing of that name was
 * loaded.
 */
int			model_cache_unload(model_cache *mc, const char *file);

/*
 * A verdict of the caller's on the loaded model of file, kept until the
 * model is unloaded or loaded again: get returns it, 0 when none is kept
 * or no such model is loaded; set returns 0, or -1 when no such model is
 * loaded.  Apart from the aux data, which text models hold.  An image
 * model's (fragment.c) says whether its first output keeps a batch's rows
 * first (MODEL_LAYOUT_ROWS_FIRST) or not (MODEL_LAYOUT_NOT_ROWS: rows run
 * one at a time); a text model's (text.c) says whether its rows may share
 * a batch (MODEL_LAYOUT_ROWS_FIRST: a probe of its first batch found each
 * row's answer the one it gives alone) or run one at a time
 * (MODEL_LAYOUT_NOT_ROWS: the probe found otherwise, or a batch failed
 * where its rows alone ran).
 */
#define MODEL_LAYOUT_ROWS_FIRST 1
#define MODEL_LAYOUT_NOT_ROWS 2

int			model_cache_get_layout(model_cache *mc, const char *file);
int			model_cache_set_layout(model_cache *mc, const char *file, int layout);

/*
 * model_cache_set_layout, and when the verdict is kept, one LOG line
 * "<what> \"<file>\": <why>; rows run in batches" (or "... one at a
 * time" for MODEL_LAYOUT_NOT_ROWS): the verdict is found once a load, so
 * the line comes once a load.
 */
void		model_cache_keep_layout(model_cache *mc, const char *file, int layout,
									const char *what, const char *why);

/*
 * The data attached to the loaded model of file (any spelling of the
 * path), or NULL when none is attached or no such model is loaded.
 */
void	   *model_cache_get_aux(model_cache *mc, const char *file);

/*
 * Attaches aux to the loaded model of file; it is freed with aux_free
 * (may be NULL) when the model is unloaded or the cache destroyed, and
 * data attached before is freed now.  Returns 0, or -1 when no such
 * model is loaded (aux is then not taken).
 */
int			model_cache_set_aux(model_cache *mc, const char *file, void *aux,
								void (*aux_free) (void *aux));

/*
 * A replacement for reading model files (the simulated device): size()
 * gives the bytes file will hold once loaded (-1 with err when the file is
 * unknown to it, as for a missing file), load() makes it resident (sleeps)
 * and returns 0, or -1 with err.  ctx is passed to both.
 */
typedef struct model_loader
{
	int			(*size) (void *ctx, const char *file, uint64_t *bytes,
						 char *err, size_t errlen);
	int			(*load) (void *ctx, const char *file, char *err, size_t errlen);
	void	   *ctx;
} model_loader;

/* Uses loader (copied) instead of the files and the engine. */
void		model_cache_set_loader(model_cache *mc, const model_loader *loader);

/* Sets the capacity in bytes (0: no cap); evicts nothing by itself. */
void		model_cache_set_capacity(model_cache *mc, uint64_t bytes);
uint64_t	model_cache_capacity(model_cache *mc);

/* Bytes held by resident models now. */
uint64_t	model_cache_used(model_cache *mc);

/* Milliseconds spent loading models since the cache was made. */
double		model_cache_load_ms_total(model_cache *mc);

/*
 * Counters since the cache was made (WorkerState.model_loads ...): loads
 * that succeeded; resident models evicted to make room (unloads asked
 * for are not counted); and model uses, each model_cache_acquire() (or
 * model_cache_get()) of a model: hits found it resident, misses had to
 * load it (a load that failed included).  A run acquires each model of
 * each stage once, so a use is one model of one stage in one run of a
 * group of requests (a request whose two calls name one file counts two
 * uses); an explicit load (MSG_LOAD_MODEL) counts as a use too.
 */
typedef struct model_cache_counts
{
	uint64_t	loads;
	uint64_t	evictions;
	uint64_t	hits;
	uint64_t	misses;
} model_cache_counts;

model_cache_counts model_cache_get_counts(model_cache *mc);

/*
 * Makes spec->file resident (loading it, after making room) and marks it
 * used now.  Returns 0, or -1 with *sqlstate and err as model_cache_get()
 * (53200 when it cannot be made to fit).  *loaded_ms (may be NULL) gets
 * the load's milliseconds, 0 when it was resident already.
 */
int			model_cache_acquire(model_cache *mc, const Pginfer__ModelSpec *spec,
								double *loaded_ms, const char **sqlstate,
								char *err, size_t errlen);

/*
 * Takes back the load time (load_ms) of each model whose last load came
 * after the first `since` loads (model_cache_get_counts().loads read
 * before) and spanned one of resumed[0..n) (monotonic microseconds of
 * recent SIGCONTs, 0 for none: it began before one and ended after it,
 * less MODEL_CACHE_RESUME_SLACK_US; none known: every such load), as its wall
 * time included a stop of the process (SIGSTOP, then SIGCONT) and
 * placement estimates loads from it: the model keeps the load time it had
 * before (measured earlier, declared by the loader, or 0: none).  A load
 * of the same job that ended before the stop keeps its time.  Logs each.
 * Returns how many were taken back.  The server calls it on the thread
 * that counts resumes (server_resumes) once a job that loaded models is
 * done, as only there a resume is known to have been counted.
 */
/* A thread may take a load's end time just before the SIGCONT handler runs. */
#define MODEL_CACHE_RESUME_SLACK_US 50000

int			model_cache_untime_loads(model_cache *mc, uint64_t since,
									 const int64_t *resumed, int n);

/*
 * Declares a model a loader knows (bytes, expected load_ms) so that the
 * state lists it before its first load.  Returns 0, or -1 out of memory.
 */
int			model_cache_declare(model_cache *mc, const char *file, uint64_t bytes,
								double load_ms);

/*
 * Adds delta (+1 or -1) to the pins of file (any spelling; "" is
 * ignored): the queued or running requests that need it.  A pinned model
 * is never evicted or unloaded.
 */
void		model_cache_pin(model_cache *mc, const char *file, int delta);

/*
 * Whether the models of specs[0..n) (one group of requests; NULL specs
 * and empty files skipped, one file named twice counted once) can be made
 * resident now, under the cap: 1 when they are resident or fit once
 * unpinned models are evicted (also without a cap, or when a model's size
 * is not known before its first load), 0 when they fit the cap but only
 * once resident models that other queued or running work pins (or a
 * load under way) are released (the group should wait), -1 when a model
 * alone or the models together exceed the cap (they never fit: loading
 * fails with PGINFER_SQLSTATE_OUT_OF_MEMORY).  Looks only; loads nothing.
 */
int			model_cache_can_load(model_cache *mc,
								 const Pginfer__ModelSpec *const *specs, int n);

/*
 * As model_cache_can_load, and when that is 1 also evicts now the
 * unpinned models (least recently used first, counted and logged as the
 * load would) that loading the missing ones will need room for, so that
 * requests queued meanwhile cannot pin that room away before the loads.
 * Call it from the thread that pins, while no load is under way.
 */
int			model_cache_reserve(model_cache *mc,
								const Pginfer__ModelSpec *const *specs, int n);

/*
 * For a group of requests that waits (model_cache_can_load 0) while every
 * other queued group waits too and no run or load is under way: the pins
 * then only mark queued work, which reloads what it needs when its turn
 * comes.  Evicts resident models the group does not need, pinned or not
 * (never one being loaded; unpinned ones first, each kind least
 * recently used first), until its missing
 * models fit; logs and counts each eviction.  Returns 1, or -1 (evicting
 * nothing) when a model alone or the models together exceed the cap.
 * Call it from the thread that pins, only while no run or load is under
 * way (no model may be in use).
 */
int			model_cache_reserve_idle(model_cache *mc,
									 const Pginfer__ModelSpec *const *specs,
									 int n);

/*
 * Drops the resident model file unless it is pinned.  Returns 1 when it
 * was dropped, 0 when it was not resident, -1 when it is pinned (in use).
 */
int			model_cache_evict(model_cache *mc, const char *file);

/* One model the cache knows, as model_cache_snapshot() reports it. */
typedef struct model_info
{
	char		file[256];
	int			resident;
	uint64_t	bytes;
	double		load_ms;
	int			pins;
	double		idle_ms;		/* since its last use; 0 never used */
} model_info;

/*
 * The models the cache knows (resident first, most recently loaded first),
 * as a malloc'd array of *n (free() it); NULL with *n = 0 when there are
 * none or memory runs out.
 */
model_info *model_cache_snapshot(model_cache *mc, int *n);

/* The model directory the cache reads from. */
const char *model_cache_dir(const model_cache *mc);

/*
 * Number of resident models, and the file name of the i-th (0-based, most
 * recently loaded first; the string stays valid until it is unloaded).
 */
int			model_cache_count(const model_cache *mc);
const char *model_cache_file(const model_cache *mc, int i);

/* Bytes of weights held by the loaded models. */
size_t		model_cache_weight_bytes(const model_cache *mc);

/*
 * SHA-256 (FIPS 180-4) of data[0..len) into digest[32].  Exposed for the
 * unit tests and for callers that want to fill ModelSpec.sha256.
 */
void		model_sha256(const void *data, size_t len, uint8_t digest[32]);

#endif							/* INFER_MODEL_CACHE_H */
