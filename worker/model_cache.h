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
 * opened, so a request can never read outside --model-dir.  The cache is
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
 * This version keeps everything loaded until unloaded (a plain list;
 * eviction by LRU comes later).
 *
 * Threading: a model_cache belongs to one thread (the server loop).  The
 * models it hands out stay valid until they are unloaded or the cache is
 * destroyed.
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
 * MODEL_MAX_FILE_BYTES, _BAD_PARAM for an unsafe path or a wrong digest,
 * _INTERNAL for a file the engine cannot load) and puts a message naming
 * the file in err.
 */
const ie_model *model_cache_get(model_cache *mc, const Pginfer__ModelSpec *spec,
								const char **sqlstate, char *err, size_t errlen);

/*
 * The OCR dictionary in labels_file (relative to the model directory),
 * loading it on first use.  Sets *dict and *dict_len (owned by the cache).
 * Returns 0, or -1 with *sqlstate and a message in err.
 */
int			model_cache_get_dict(model_cache *mc, const char *labels_file,
								 const char *const **dict, int *dict_len,
								 const char **sqlstate, char *err, size_t errlen);

/*
 * Drops the model loaded from file (and the dictionary of that name, if
 * any).  Returns 1 when something was dropped, 0 when nothing of that
 * name was loaded.
 */
int			model_cache_unload(model_cache *mc, const char *file);

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

/* The model directory the cache reads from. */
const char *model_cache_dir(const model_cache *mc);

/* Number of loaded models, and the file name of the i-th (0-based). */
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
