/*
 * model_store.h
 *	  Files under --model-dir: resolving a request's file name to a path
 *	  that stays inside the directory, and the store of model bytes
 *	  uploaded from the database (MSG_PUT_MODEL), kept by content hash.
 *
 * Resolution (model_store_resolve): the name must pass model_path_check()
 * (relative, no ".." component); then the real path of "dir/name"
 * (realpath(3): every symbolic link followed) must lie inside the real
 * path of dir.  A symbolic link inside the directory that leads to a file
 * inside it is fine; one that leads outside it (to a file, or a directory
 * link on the way) is refused with PGINFER_SQLSTATE_BAD_PARAM, as a ".."
 * is.  The caller opens the resolved path with O_NOFOLLOW, so a link
 * swapped in for the last component after the check is not followed, and
 * (model_cache.c) checks that the file opened is still at that path.
 *
 * Uploaded models (docs/security.md "Uploaded models"): the bytes of a
 * model file uploaded with infer.upload_model() reach a worker as a
 * MSG_PUT_MODEL (ModelSpec.file and .sha256 in the header, the bytes as
 * the one payload frame).  model_store_put() checks the name, recomputes
 * the SHA-256, refuses a mismatch (PGINFER_SQLSTATE_DATA_CORRUPTED) and
 * writes the bytes atomically (a temporary file in the same directory,
 * fsync, rename) to MODEL_STORE_DIR/<sha256 hex>.onnx under dir.  A
 * request whose ModelSpec carries a sha256 takes the model from there
 * when it is stored (model_cache.c), and checks its digest again on every
 * load from disk.
 *
 * Threading: no state; every function may be called from any thread.
 */
#ifndef INFER_MODEL_STORE_H
#define INFER_MODEL_STORE_H

#include <stddef.h>
#include <stdint.h>

/* The store's folder, relative to --model-dir. */
#define MODEL_STORE_DIR ".uploaded"

/* Room for MODEL_STORE_DIR "/" + 64 hex digits + ".onnx" + NUL. */
#define MODEL_STORE_NAME_LEN 96

/*
 * Resolves rel (a name relative to dir, as ModelSpec.file) to the real
 * path of the file, which must lie inside dir's real path.  what ("model
 * file", "labels file") and model (the model's name, may be NULL or "")
 * go into the messages.  Returns a malloc'd absolute path; or NULL with
 * *sqlstate: PGINFER_SQLSTATE_BAD_PARAM for an unsafe name or one that
 * resolves outside dir, PGINFER_SQLSTATE_NO_MODEL when the file (or a
 * folder on its way) does not exist or the worker's user may not read it
 * (model_store_unreachable), _OUT_OF_MEMORY; and a message in err that
 * names the file, the model and dir.
 */
char	   *model_store_resolve(const char *dir, const char *rel, const char *what,
								const char *model, const char **sqlstate,
								char *err, size_t errlen);

/*
 * Formats into err the failure, with errno eno, to reach what ("model
 * file", "labels file") rel of model (may be NULL or "") in the model
 * directory dir, and returns its SQLSTATE: PGINFER_SQLSTATE_NO_MODEL when
 * this worker cannot have the file, as it is not there (ENOENT, ENOTDIR)
 * or its user may not read it or a folder on its way (EACCES, EPERM):
 * another worker may have it (the backend sends the rows there);
 * _OUT_OF_MEMORY for ENOMEM; _INTERNAL otherwise.
 */
const char *model_store_unreachable(const char *dir, const char *what,
									const char *rel, const char *model,
									int eno, char *err, size_t errlen);

/*
 * Checks that path (dir joined with a checked relative name, as the text
 * models' model.json and vocabulary beside their ONNX file) does not
 * resolve outside dir.  A path that does not exist passes (the caller
 * reports it missing).  Returns 0, or -1 with a message in err naming
 * what (e.g. "model.json"), the model file and dir
 * (PGINFER_SQLSTATE_BAD_PARAM).
 */
int			model_store_check_inside(const char *dir, const char *path,
									 const char *what, const char *model_file,
									 char *err, size_t errlen);

/*
 * The name, relative to the model directory, under which the bytes of
 * SHA-256 digest are stored: MODEL_STORE_DIR "/<64 hex>.onnx" into out
 * (MODEL_STORE_NAME_LEN bytes).
 */
void		model_store_name(const uint8_t digest[32], char *out);

/*
 * Stores the len bytes of data, uploaded as model file `file` with
 * SHA-256 sha256[0..sha256_len), under dir (see the banner).  Returns 0;
 * or -1 with *sqlstate (_BAD_PARAM for an unsafe file name or a digest
 * that is not 32 bytes, _DATA_CORRUPTED when the bytes' SHA-256 differs,
 * _TOO_LARGE over MODEL_MAX_FILE_BYTES, _INTERNAL when the store cannot be
 * written) and a message in err.
 */
int			model_store_put(const char *dir, const char *file,
							const uint8_t *sha256, size_t sha256_len,
							const void *data, size_t len,
							const char **sqlstate, char *err, size_t errlen);

/*
 * model_store_put() with a cap: when max_total > 0 and the files already
 * in the store (a copy of the same digest, which this one replaces, left
 * out) plus len would exceed it, refuses with PGINFER_SQLSTATE_TOO_LARGE
 * and a message naming both figures and --max-upload-bytes, before
 * anything is written.  The store folder is mode 0700, its files 0600.
 */
int			model_store_put_limited(const char *dir, const char *file,
									const uint8_t *sha256, size_t sha256_len,
									const void *data, size_t len,
									uint64_t max_total, const char **sqlstate,
									char *err, size_t errlen);

#endif							/* INFER_MODEL_STORE_H */
