/*
 * model_store.c
 *	  Resolving file names inside --model-dir (symbolic links included)
 *	  and the content-addressed store of uploaded model bytes.
 *
 * See model_store.h.  Resolution compares real paths (realpath(3)), so
 * every symbolic link on the way, in a folder or the file itself, counts.
 * The store writes each file under a unique temporary name in the store
 * folder, syncs it and renames it over <sha256>.onnx, so that a reader
 * sees the old bytes or the new, never part of them, and a crash leaves at
 * most a stray temporary file.
 */
#include "worker/model_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/log.h"
#include "worker/model_cache.h"

/* Distinguishes the temporary files of one process. */
static atomic_ulong store_seq;

/* Lowercase hex of a 32-byte digest into out[65]. */
static void
hex32(const uint8_t d[32], char out[65])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++)
	{
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

/* " of model \"NAME\"" into buf, or "" when model is unnamed. */
static const char *
of_model(const char *model, char *buf, size_t buflen)
{
	if (model == NULL || model[0] == '\0')
		return "";
	snprintf(buf, buflen, " of model \"%s\"", model);
	return buf;
}

/* Whether path lies inside (or is) the directory real_dir (both real paths). */
static int
path_inside(const char *real_dir, const char *path)
{
	size_t		n = strlen(real_dir);

	if (n == 1 && real_dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, real_dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Reports a file of dir that cannot be reached; see model_store.h. */
const char *
model_store_unreachable(const char *dir, const char *what, const char *rel,
						const char *model, int eno, char *err, size_t errlen)
{
	char		mbuf[300];

	if (eno == EACCES || eno == EPERM)
	{
		snprintf(err, errlen, "%s \"%s\"%s in model directory \"%s\" cannot be read by the worker (user id %d): %s",
				 what, rel, of_model(model, mbuf, sizeof(mbuf)), dir,
				 (int) geteuid(), strerror(eno));
		return PGINFER_SQLSTATE_NO_MODEL;
	}
	snprintf(err, errlen, "%s \"%s\"%s not found in model directory \"%s\": %s",
			 what, rel, of_model(model, mbuf, sizeof(mbuf)), dir, strerror(eno));
	if (eno == ENOENT || eno == ENOTDIR)
		return PGINFER_SQLSTATE_NO_MODEL;
	return eno == ENOMEM ? PGINFER_SQLSTATE_OUT_OF_MEMORY :
		PGINFER_SQLSTATE_INTERNAL;
}

/* Resolves rel inside dir; see model_store.h. */
char *
model_store_resolve(const char *dir, const char *rel, const char *what,
					const char *model, const char **sqlstate, char *err,
					size_t errlen)
{
	char	   *real_dir = NULL;
	char	   *joined = NULL;
	char	   *real = NULL;
	char		lerr[512];
	char		mbuf[300];
	size_t		n;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (model_path_check(rel, lerr, sizeof(lerr)) != 0)
	{
		snprintf(err, errlen, "%s%s: %s", what, of_model(model, mbuf, sizeof(mbuf)),
				 lerr);
		goto fail;
	}
	real_dir = realpath(dir, NULL);
	if (real_dir == NULL)
	{
		*sqlstate = model_store_unreachable(dir, what, rel, model, errno, err,
											errlen);
		goto fail;
	}
	n = strlen(dir) + strlen(rel) + 2;
	joined = malloc(n);
	if (joined == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(joined, n, "%s/%s", dir, rel);
	real = realpath(joined, NULL);
	if (real == NULL)
	{
		*sqlstate = model_store_unreachable(dir, what, rel, model, errno, err,
											errlen);
		goto fail;
	}
	if (!path_inside(real_dir, real))
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen,
				 "%s \"%s\"%s resolves outside the model directory \"%s\" (--model-dir): a symbolic link on its path leads out of it",
				 what, rel, of_model(model, mbuf, sizeof(mbuf)), dir);
		log_warn("refused %s \"%s\": it resolves to \"%s\", outside \"%s\"",
				 what, rel, real, real_dir);
		goto fail;
	}
	free(real_dir);
	free(joined);
	return real;

fail:
	free(real_dir);
	free(joined);
	free(real);
	return NULL;
}

/* Whether an existing path resolves inside dir; see model_store.h. */
int
model_store_check_inside(const char *dir, const char *path, const char *what,
						 const char *model_file, char *err, size_t errlen)
{
	char	   *real_dir = realpath(dir, NULL);
	char	   *real = realpath(path, NULL);
	int			rc = 0;

	if (real_dir != NULL && real != NULL && !path_inside(real_dir, real))
	{
		snprintf(err, errlen,
				 "%s of model file \"%s\" resolves outside the model directory \"%s\" (--model-dir): a symbolic link on its path leads out of it",
				 what, model_file, dir);
		log_warn("refused %s of model file \"%s\": it resolves to \"%s\", outside \"%s\"",
				 what, model_file, real, real_dir);
		rc = -1;
	}
	free(real_dir);
	free(real);
	return rc;
}

/* The stored name of a digest; see model_store.h. */
void
model_store_name(const uint8_t digest[32], char *out)
{
	char		hex[65];

	hex32(digest, hex);
	snprintf(out, MODEL_STORE_NAME_LEN, "%s/%s.onnx", MODEL_STORE_DIR, hex);
}

/*
 * Makes dir/MODEL_STORE_DIR (mode 0700: only the worker's user reads
 * uploaded models) when missing and checks that it is
 * a real directory inside dir, not a link.  Returns its path (malloc'd),
 * or NULL with *sqlstate and err.
 */
static char *
store_dir(const char *dir, const char **sqlstate, char *err, size_t errlen)
{
	size_t		n = strlen(dir) + sizeof(MODEL_STORE_DIR) + 2;
	char	   *path = malloc(n);
	struct stat st;

	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	if (path == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(path, n, "%s/%s", dir, MODEL_STORE_DIR);
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
	{
		snprintf(err, errlen, "could not create the uploaded-model folder \"%s\": %s",
				 path, strerror(errno));
		goto fail;
	}
	if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
	{
		snprintf(err, errlen, "\"%s\" is not a directory (a symbolic link is refused)",
				 path);
		goto fail;
	}
	return path;

fail:
	free(path);
	return NULL;
}

/* Writes len bytes of data to fd; 0, or -1 with errno. */
static int
write_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
		{
			if (w == 0)
				errno = EIO;
			return -1;
		}
		data += w;
		len -= (size_t) w;
	}
	return 0;
}

/* Stores uploaded model bytes; see model_store.h. */
int
model_store_put(const char *dir, const char *file, const uint8_t *sha256,
				size_t sha256_len, const void *data, size_t len,
				const char **sqlstate, char *err, size_t errlen)
{
	return model_store_put_limited(dir, file, sha256, sha256_len, data, len, 0,
								   sqlstate, err, errlen);
}

/*
 * Bytes of the files in the store folder dfd other than the one named
 * keep (the copy an upload of the same bytes replaces).
 */
static uint64_t
store_bytes(int dfd, const char *keep)
{
	uint64_t	total = 0;
	int			fd = dup(dfd);
	DIR		   *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (d == NULL)
	{
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
	{
		struct stat st;

		if (strcmp(de->d_name, keep) == 0 ||
			fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			!S_ISREG(st.st_mode))
			continue;
		total += (uint64_t) st.st_size;
	}
	closedir(d);
	return total;
}

/* model_store_put() under a cap on the store's bytes; see model_store.h. */
int
model_store_put_limited(const char *dir, const char *file, const uint8_t *sha256,
						size_t sha256_len, const void *data, size_t len,
						uint64_t max_total, const char **sqlstate, char *err,
						size_t errlen)
{
	char	   *sdir = NULL;
	char	   *tmp = NULL;
	char	   *final = NULL;
	char		lerr[512];
	char		want_hex[65],
				have_hex[65];
	uint8_t		have[32];
	int			fd = -1;
	int			dfd = -1;
	size_t		n;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (model_path_check(file, lerr, sizeof(lerr)) != 0)
	{
		snprintf(err, errlen, "uploaded %s", lerr);
		goto fail;
	}
	if (sha256 == NULL || sha256_len != 32)
	{
		snprintf(err, errlen, "uploaded model file \"%s\" comes with a SHA-256 of %zu bytes, expected 32",
				 file, sha256 != NULL ? sha256_len : (size_t) 0);
		goto fail;
	}
	if ((uint64_t) len > MODEL_MAX_FILE_BYTES)
	{
		*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
		snprintf(err, errlen, "uploaded model file \"%s\" has %zu bytes, more than the %llu a model may have",
				 file, len, (unsigned long long) MODEL_MAX_FILE_BYTES);
		goto fail;
	}
	model_sha256(data, len, have);
	hex32(sha256, want_hex);
	if (memcmp(have, sha256, 32) != 0)
	{
		hex32(have, have_hex);
		*sqlstate = PGINFER_SQLSTATE_DATA_CORRUPTED;
		snprintf(err, errlen, "uploaded bytes of model file \"%s\" have SHA-256 %s, the upload says %s",
				 file, have_hex, want_hex);
		goto fail;
	}
	sdir = store_dir(dir, sqlstate, err, errlen);
	if (sdir == NULL)
		goto fail;
	n = strlen(sdir) + 64 + 64;
	tmp = malloc(n);
	final = malloc(n);
	if (tmp == NULL || final == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(final, n, "%s/%s.onnx", sdir, want_hex);
	snprintf(tmp, n, "%s/.tmp-%.16s-%ld-%lu", sdir, want_hex, (long) getpid(),
			 (unsigned long) atomic_fetch_add(&store_seq, 1));
	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	/*
	 * Everything below goes through this descriptor of the store folder
	 * (O_NOFOLLOW): a link swapped in for it after store_dir() checked it
	 * is refused, not followed out of the model directory.
	 */
	dfd = open(sdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
	{
		snprintf(err, errlen, "could not open the uploaded-model folder \"%s\": %s",
				 sdir, strerror(errno));
		goto fail;
	}
	if (max_total > 0)
	{
		uint64_t	held = store_bytes(dfd, strrchr(final, '/') + 1);

		if (held + (uint64_t) len > max_total)
		{
			*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
			snprintf(err, errlen, "uploaded model file \"%s\" (%zu bytes) does not fit: the uploaded models hold %llu bytes of the %llu this worker keeps (--max-upload-bytes)",
					 file, len, (unsigned long long) held,
					 (unsigned long long) max_total);
			goto fail;
		}
	}
	fd = openat(dfd, strrchr(tmp, '/') + 1,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
	{
		snprintf(err, errlen, "could not create \"%s\" for uploaded model file \"%s\": %s",
				 tmp, file, strerror(errno));
		goto fail;
	}
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0)
	{
		snprintf(err, errlen, "could not write \"%s\" for uploaded model file \"%s\": %s",
				 tmp, file, strerror(errno));
		goto fail_unlink;
	}
	if (close(fd) != 0)
	{
		fd = -1;
		snprintf(err, errlen, "could not write \"%s\" for uploaded model file \"%s\": %s",
				 tmp, file, strerror(errno));
		goto fail_unlink;
	}
	fd = -1;
	if (renameat(dfd, strrchr(tmp, '/') + 1, dfd, strrchr(final, '/') + 1) != 0)
	{
		snprintf(err, errlen, "could not rename \"%s\" to \"%s\": %s", tmp, final,
				 strerror(errno));
		goto fail_unlink;
	}
	/* the rename itself survives a crash once the folder is synced */
	(void) fsync(dfd);
	close(dfd);
	log_info("stored uploaded model file \"%s\" (%zu bytes, SHA-256 %s) as \"%s\"",
			 file, len, want_hex, final);
	free(sdir);
	free(tmp);
	free(final);
	return 0;

fail_unlink:
	if (fd >= 0)
		close(fd);
	fd = -1;
	(void) unlinkat(dfd, strrchr(tmp, '/') + 1, 0);
fail:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	free(sdir);
	free(tmp);
	free(final);
	return -1;
}
