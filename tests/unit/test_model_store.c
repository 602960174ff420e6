/*
 * test_model_store.c
 *	  Unit test of worker/model_store.c and its use by the model cache and
 *	  the server: symbolic links inside and out of --model-dir (models and
 *	  labels files), the store of uploaded model bytes (MSG_PUT_MODEL),
 *	  SHA-256 checks of what is loaded, a tampered stored copy.
 *
 * Uses the real PP-OCR direction classifier and detector (build/models,
 * or $PGINFER_MODEL_DIR) in a throwaway directory under /tmp, with real
 * symbolic links.  Prints "test_model_store: N passed, M failed".
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/log.h"
#include "worker/model_cache.h"
#include "worker/model_store.h"
#include "worker/server.h"

#include "tests/unit/testutil.h"

#define CHECK_STR(a, b) \
	CHECK_ERR((a) != NULL && strcmp((a), (b)) == 0, "\"%s\" != \"%s\"", \
			  (a) ? (a) : "(null)", (b))
#define CHECK_CONTAINS(s, sub) \
	CHECK_ERR(strstr((s), (sub)) != NULL, "\"%s\" lacks \"%s\"", (s), (sub))

static char root[64];			/* the throwaway directory */
static char models[128];		/* root/models: the --model-dir */
static char outside[128];		/* root/outside: a folder beside it */

/* Writes len bytes to dir/name; 0 or -1. */
static int
write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char		path[512];
	FILE	   *f;
	int			ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Makes the link dir/name pointing at target; 0 or -1. */
static int
link_at(const char *dir, const char *name, const char *target)
{
	char		path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return symlink(target, path);
}

/* Number of entries of dir other than "." and "..", -1 when unreadable. */
static int
count_entries(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	int			n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* Real symbolic links: inside to inside accepted, any way out refused. */
static void
test_symlinks(void)
{
	char		err[1024];
	const char *sqlstate = NULL;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	model_cache *mc = model_cache_new(models, err, sizeof(err));
	char		abs_target[512];
	char	   *p;

	CHECK_EXPR(mc != NULL);
	if (mc == NULL)
		return;
	spec.name = "cls";

	/* the model itself, and links to it from inside the directory */
	spec.file = "cls.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) != NULL);
	spec.file = "in_link.onnx";
	CHECK_ERR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) != NULL,
			  "in_link.onnx: %s", err);
	spec.file = "sub/in_abs.onnx";	/* an absolute link to a file inside */
	CHECK_ERR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) != NULL,
			  "sub/in_abs.onnx: %s", err);
	spec.file = "subdir_link/in_abs.onnx";	/* a folder link inside */
	CHECK_ERR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) != NULL,
			  "subdir_link/in_abs.onnx: %s", err);

	/* a link to the same real model outside: refused, naming file and model */
	spec.file = "out_link.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "model file \"out_link.onnx\" of model \"cls\" resolves outside the model directory");
	CHECK_CONTAINS(err, "(--model-dir)");
	CHECK_EXPR(strstr(err, outside) == NULL);	/* the target is not told */
	spec.file = "out_abs.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "resolves outside");
	/* a folder link out, and a link chain that ends outside */
	spec.file = "outdir/cls.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "\"outdir/cls.onnx\" of model \"cls\" resolves outside");
	spec.file = "chain.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	/* a dangling link is a missing file */
	spec.file = "dangling.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_NO_MODEL);
	CHECK_EXPR(model_cache_count(mc) == 4);

	/* labels files: the same rules */
	{
		const char *const *dict;
		int			dict_len = 0;

		CHECK_EXPR(model_cache_get_dict(mc, "keys_in.txt", &dict, &dict_len,
										&sqlstate, err, sizeof(err)) == 0);
		CHECK_EXPR(dict_len >= 3);
		CHECK_EXPR(model_cache_get_dict(mc, "keys_out.txt", &dict, &dict_len,
										&sqlstate, err, sizeof(err)) == -1);
		CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
		CHECK_CONTAINS(err, "labels file \"keys_out.txt\" resolves outside the model directory");
	}

	/* model_store_resolve itself */
	p = model_store_resolve(models, "in_link.onnx", "model file", NULL, &sqlstate,
							err, sizeof(err));
	snprintf(abs_target, sizeof(abs_target), "%s/cls.onnx", models);
	{
		char	   *real = realpath(abs_target, NULL);

		CHECK_EXPR(p != NULL && real != NULL && strcmp(p, real) == 0);
		free(real);
	}
	free(p);
	p = model_store_resolve(models, "/etc/passwd", "model file", "m", &sqlstate,
							err, sizeof(err));
	CHECK_EXPR(p == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "absolute path");
	model_cache_destroy(&mc);
}

/* model_store_put: name and digest checks, an atomic write by hash. */
static void
test_put(const uint8_t *cls, size_t cls_len, const uint8_t cls_sha[32])
{
	char		err[1024];
	const char *sqlstate = NULL;
	char		name[MODEL_STORE_NAME_LEN];
	char		path[512];
	uint8_t		bad[32];
	uint8_t    *back;
	size_t		back_len = 0;

	memcpy(bad, cls_sha, 32);
	bad[0] ^= 1;
	CHECK_EXPR(model_store_put(models, "up/cls.onnx", bad, 32, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
	CHECK_CONTAINS(err, "uploaded bytes of model file \"up/cls.onnx\" have SHA-256");
	CHECK_EXPR(model_store_put(models, "../cls.onnx", cls_sha, 32, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "\"..\"");
	CHECK_EXPR(model_store_put(models, "/tmp/cls.onnx", cls_sha, 32, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_EXPR(model_store_put(models, "cls.onnx", cls_sha, 31, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	snprintf(path, sizeof(path), "%s/%s", models, MODEL_STORE_DIR);
	CHECK_EXPR(access(path, F_OK) != 0);	/* nothing written so far */

	CHECK_ERR(model_store_put(models, "up/cls.onnx", cls_sha, 32, cls, cls_len,
							  &sqlstate, err, sizeof(err)) == 0, "%s", err);
	model_store_name(cls_sha, name);
	CHECK_EXPR(strncmp(name, ".uploaded/", 10) == 0 && strlen(name) == 10 + 64 + 5);
	snprintf(path, sizeof(path), "%s/%s", models, name);
	back = tu_read_file(path, &back_len);
	CHECK_EXPR(back != NULL && back_len == cls_len && memcmp(back, cls, cls_len) == 0);
	free(back);
	/* again (idempotent), and no temporary file stays */
	CHECK_EXPR(model_store_put(models, "up/cls.onnx", cls_sha, 32, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == 0);
	snprintf(path, sizeof(path), "%s/%s", models, MODEL_STORE_DIR);
	CHECK_EXPR(count_entries(path) == 1);
}

/*
 * The cache with digests: a spec naming a file that is not in the
 * directory loads the uploaded copy; a tampered copy or file is refused;
 * a model registered anew with other bytes is loaded again.
 */
static void
test_cache_digests(const uint8_t *cls, size_t cls_len, const uint8_t cls_sha[32],
				   const uint8_t *det, size_t det_len)
{
	char		err[1024];
	const char *sqlstate = NULL;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	model_cache *mc = model_cache_new(models, err, sizeof(err));
	uint8_t		det_sha[32],
				zero[32];
	char		name[MODEL_STORE_NAME_LEN];
	const ie_model *m1,
			   *m2;

	CHECK_EXPR(mc != NULL);
	if (mc == NULL)
		return;
	spec.name = "cls_up";
	spec.file = "up/cls.onnx";	/* only uploaded (test_put) */
	spec.sha256.data = (uint8_t *) cls_sha;
	spec.sha256.len = 32;
	m1 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_ERR(m1 != NULL, "uploaded copy: %s", err);

	/*
	 * the same name without a digest, the uploaded copy resident: that
	 * means the file on disk, which is not in the directory
	 */
	spec.sha256.len = 0;
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_NO_MODEL);

	/* a digest nobody uploaded, for a file that is not there */
	memset(zero, 0, sizeof(zero));
	spec.sha256.data = zero;
	spec.sha256.len = 32;
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_NO_MODEL);
	CHECK_CONTAINS(err, "nor uploaded to this worker");

	/* a file in the directory whose bytes are not the registered ones */
	spec.file = "cls.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
	CHECK_CONTAINS(err, "SHA-256 mismatch: model file \"cls.onnx\" has SHA-256 ");

	/* registered anew with other bytes (uploaded): loaded again */
	spec.sha256.data = (uint8_t *) cls_sha;
	m1 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_EXPR(m1 != NULL);
	model_sha256(det, det_len, det_sha);
	CHECK_EXPR(model_store_put(models, "cls.onnx", det_sha, 32, det, det_len,
							   &sqlstate, err, sizeof(err)) == 0);
	spec.sha256.data = det_sha;
	m2 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_ERR(m2 != NULL, "%s", err);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 3);
	CHECK_EXPR(model_cache_count(mc) == 1);
	/* the uploaded detector resident as cls.onnx; no digest: the file on disk */
	spec.sha256.len = 0;
	m2 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_ERR(m2 != NULL, "%s", err);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 4);
	CHECK_EXPR(m2 != NULL && ie_model_weight_bytes(m2) < det_len / 2);
	spec.sha256.len = 32;
	model_cache_destroy(&mc);

	/* a stored copy changed on disk: refused, naming the copy */
	model_store_name(cls_sha, name);
	{
		uint8_t    *t = malloc(cls_len);

		memcpy(t, cls, cls_len);
		t[cls_len / 2] ^= 0x5a;
		CHECK_EXPR(write_file(models, name, t, cls_len) == 0);
		free(t);
	}
	mc = model_cache_new(models, err, sizeof(err));
	spec.file = "up/cls.onnx";
	spec.sha256.data = (uint8_t *) cls_sha;
	CHECK_EXPR(mc != NULL && model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
	CHECK_CONTAINS(err, "SHA-256 mismatch: the uploaded copy \".uploaded/");
	CHECK_CONTAINS(err, "of model file \"up/cls.onnx\"");
	/* uploading again repairs it */
	CHECK_EXPR(model_store_put(models, "up/cls.onnx", cls_sha, 32, cls, cls_len,
							   &sqlstate, err, sizeof(err)) == 0);
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) != NULL);
	model_cache_destroy(&mc);
}

/*
 * Two versions of one file in one run (an OCR request whose detector and
 * classifier name one file with different digests or precisions): refused
 * before any lookup by model_cache_check_specs, and by the cache itself,
 * which never frees a model the run holds (it was a use-after-free).
 * Needs cls.onnx's upload with the detector's bytes (test_cache_digests).
 */
static void
test_held_versions(const uint8_t *det, size_t det_len)
{
	char		err[1024];
	const char *sqlstate = NULL;
	Pginfer__ModelSpec a = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec b = PGINFER__MODEL_SPEC__INIT;
	const Pginfer__ModelSpec *specs[2] = {&a, &b};
	model_cache *mc = model_cache_new(models, err, sizeof(err));
	uint8_t		det_sha[32];
	const ie_model *m1,
			   *m2;

	CHECK_EXPR(mc != NULL);
	if (mc == NULL)
		return;
	model_sha256(det, det_len, det_sha);
	a.name = "det";
	a.file = "cls.onnx";
	a.sha256.data = det_sha;
	a.sha256.len = 32;
	b.name = "cls";
	b.file = ".//cls.onnx";

	/* before any lookup: a digest and none, two digests, two precisions */
	CHECK_EXPR(model_cache_check_specs(specs, 2, &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "models \"det\" and \"cls\" name the same model file \".//cls.onnx\"");
	b.sha256 = a.sha256;
	CHECK_EXPR(model_cache_check_specs(specs, 2, &sqlstate, err, sizeof(err)) == 0);
	b.precision = "fp16";
	CHECK_EXPR(model_cache_check_specs(specs, 2, &sqlstate, err, sizeof(err)) == -1);
	a.precision = "fp16";
	CHECK_EXPR(model_cache_check_specs(specs, 2, &sqlstate, err, sizeof(err)) == 0);
	b.file = "other.onnx";
	b.sha256.len = 0;
	CHECK_EXPR(model_cache_check_specs(specs, 2, &sqlstate, err, sizeof(err)) == 0);
	a.precision = b.precision = "";
	b.file = "./cls.onnx";

	/* in the cache: the held model stays, the other version is refused */
	model_cache_begin_run(mc);
	m1 = model_cache_get(mc, &a, &sqlstate, err, sizeof(err));
	CHECK_ERR(m1 != NULL, "%s", err);
	m2 = model_cache_get(mc, &b, &sqlstate, err, sizeof(err));
	CHECK_EXPR(m2 == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "is in use by this request as another version");
	/* still the detector's weights (read after a free, ASan would say) */
	CHECK_EXPR(m1 != NULL && ie_model_weight_bytes(m1) > det_len / 2);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 1);
	/* an explicit load (MSG_LOAD_MODEL, between runs) may reload it */
	CHECK_ERR(model_cache_acquire(mc, &b, NULL, &sqlstate, err, sizeof(err)) == 0,
			  "%s", err);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 2);
	CHECK_ERR(model_cache_acquire(mc, &a, NULL, &sqlstate, err, sizeof(err)) == 0,
			  "%s", err);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 3);
	/* the next run may load the other version */
	model_cache_begin_run(mc);
	m2 = model_cache_get(mc, &b, &sqlstate, err, sizeof(err));
	CHECK_ERR(m2 != NULL, "%s", err);
	CHECK_EXPR(m2 != NULL && ie_model_weight_bytes(m2) < det_len / 2);
	CHECK_EXPR(model_cache_get_counts(mc).loads == 4);
	model_cache_destroy(&mc);
}

/*
 * model_store_put_limited: the store's bytes under a cap (a copy of the
 * same digest not counted twice), folder 0700 and files 0600.
 */
static void
test_put_limits(const uint8_t *cls, size_t cls_len, const uint8_t cls_sha[32],
				const uint8_t *det, size_t det_len)
{
	char		dir[256],
				path[512],
				err[1024];
	const char *sqlstate = NULL;
	char		name[MODEL_STORE_NAME_LEN];
	uint8_t		det_sha[32];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/limited", root);
	mkdir(dir, 0755);
	model_sha256(det, det_len, det_sha);
	CHECK_ERR(model_store_put_limited(dir, "c.onnx", cls_sha, 32, cls, cls_len,
									  cls_len + 10, &sqlstate, err, sizeof(err)) == 0,
			  "%s", err);
	/* the same bytes again replace the copy: still fits */
	CHECK_ERR(model_store_put_limited(dir, "c.onnx", cls_sha, 32, cls, cls_len,
									  cls_len + 10, &sqlstate, err, sizeof(err)) == 0,
			  "%s", err);
	CHECK_EXPR(model_store_put_limited(dir, "d.onnx", det_sha, 32, det, det_len,
									   cls_len + det_len - 1, &sqlstate, err,
									   sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_TOO_LARGE);
	CHECK_CONTAINS(err, "does not fit");
	CHECK_CONTAINS(err, "(--max-upload-bytes)");
	model_store_name(det_sha, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK_EXPR(access(path, F_OK) != 0);
	CHECK_ERR(model_store_put_limited(dir, "d.onnx", det_sha, 32, det, det_len,
									  cls_len + det_len, &sqlstate, err, sizeof(err)) == 0,
			  "%s", err);
	CHECK_EXPR(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	snprintf(path, sizeof(path), "%s/%s", dir, MODEL_STORE_DIR);
	CHECK_EXPR(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
}

/* Runs one request through server_handle; the reply's header unpacked. */
static Pginfer__Header *
handle(server *s, const Pginfer__Header *h, const void *frame, size_t frame_len,
	   int n_frames)
{
	size_t		len = pginfer__header__get_packed_size(h);
	uint8_t    *buf = malloc(len + 1);
	server_reply *r = NULL;
	Pginfer__Header *u = NULL;
	const void *frames[1] = {frame};
	size_t		lens[1] = {frame_len};

	pginfer__header__pack(h, buf);
	if (server_handle(s, buf, len, frames, lens, n_frames, &r) == 0 && r != NULL)
		u = pginfer__header__unpack(NULL, r->header_len, r->header);
	server_reply_destroy(&r);
	free(buf);
	return u;
}

/* MSG_PUT_MODEL through the server: PONG, or ERROR with the right code. */
static void
test_server_put(const uint8_t *cls, size_t cls_len, const uint8_t cls_sha[32])
{
	char		dir[256],
				err[512];
	server_opts opts = {NULL, dir, 0, 0, -1};
	server	   *s;
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__ModelRequest mr = PGINFER__MODEL_REQUEST__INIT;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__Header *u;
	uint8_t		bad[32];
	char		name[MODEL_STORE_NAME_LEN],
				path[512];

	snprintf(dir, sizeof(dir), "%s/server", root);
	mkdir(dir, 0755);
	s = server_new(&opts, err, sizeof(err));
	CHECK_EXPR(s != NULL);
	if (s == NULL)
		return;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PUT_MODEL;
	h.request_id = 21;
	h.model = &mr;
	mr.model = &spec;
	spec.file = "m.onnx";
	spec.sha256.data = (uint8_t *) cls_sha;
	spec.sha256.len = 32;

	u = handle(s, &h, cls, cls_len, 1);
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_PONG && u->request_id == 21);
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	model_store_name(cls_sha, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK_EXPR(access(path, R_OK) == 0);

	memcpy(bad, cls_sha, 32);
	bad[31] ^= 0x80;
	spec.sha256.data = bad;
	u = handle(s, &h, cls, cls_len, 1);
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error != NULL);
	if (u && u->error)
	{
		CHECK_STR(u->error->sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
		CHECK_CONTAINS(u->error->message, "have SHA-256");
		CHECK_CONTAINS(u->error->hint, "upload the model again");
	}
	if (u)
		pginfer__header__free_unpacked(u, NULL);

	spec.sha256.data = (uint8_t *) cls_sha;
	spec.file = "a/../../m.onnx";
	u = handle(s, &h, cls, cls_len, 1);
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error != NULL &&
			   strcmp(u->error->sqlstate, PGINFER_SQLSTATE_BAD_PARAM) == 0);
	if (u)
		pginfer__header__free_unpacked(u, NULL);

	/* no payload frame: a protocol violation */
	spec.file = "m.onnx";
	u = handle(s, &h, NULL, 0, 0);
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error != NULL &&
			   strcmp(u->error->sqlstate, PGINFER_SQLSTATE_PROTOCOL) == 0);
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	server_destroy(&s);

	/* a store folder that is a link (out of the directory) is refused */
	snprintf(dir, sizeof(dir), "%s/server2", root);
	mkdir(dir, 0755);
	CHECK_EXPR(link_at(dir, MODEL_STORE_DIR, outside) == 0);
	{
		const char *sqlstate = NULL;

		CHECK_EXPR(model_store_put(dir, "m.onnx", cls_sha, 32, cls, cls_len,
								   &sqlstate, err, sizeof(err)) == -1);
		CHECK_CONTAINS(err, "is not a directory (a symbolic link is refused)");
	}
}

int
main(void)
{
	const char *src = getenv("PGINFER_MODEL_DIR");
	char		path[512];
	uint8_t    *cls,
			   *det;
	size_t		cls_len = 0,
				det_len = 0;
	uint8_t		cls_sha[32];
	char		cmd[256];

	log_set_level(LOG_LEVEL_ERROR);
	if (src == NULL)
		src = "build/models";
	snprintf(path, sizeof(path), "%s/ch_ppocr_mobile_v2.0_cls_infer.onnx", src);
	cls = tu_read_file(path, &cls_len);
	snprintf(path, sizeof(path), "%s/ch_PP-OCRv4_det_infer.onnx", src);
	det = tu_read_file(path, &det_len);
	if (cls == NULL || det == NULL)
	{
		printf("test_model_store: the PP-OCR models are missing in %s (make models)\n", src);
		printf("test_model_store: 0 passed, 1 failed\n");
		return 1;
	}
	model_sha256(cls, cls_len, cls_sha);

	snprintf(root, sizeof(root), "/tmp/test_model_store.XXXXXX");
	if (mkdtemp(root) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	snprintf(models, sizeof(models), "%s/models", root);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	mkdir(models, 0755);
	mkdir(outside, 0755);
	snprintf(path, sizeof(path), "%s/sub", models);
	mkdir(path, 0755);
	CHECK_EXPR(write_file(models, "cls.onnx", cls, cls_len) == 0);
	CHECK_EXPR(write_file(outside, "cls.onnx", cls, cls_len) == 0);
	CHECK_EXPR(write_file(models, "keys.txt", "a\nb\nc\n", 6) == 0);
	CHECK_EXPR(write_file(outside, "keys.txt", "a\nb\nc\n", 6) == 0);
	CHECK_EXPR(link_at(models, "in_link.onnx", "cls.onnx") == 0);
	snprintf(path, sizeof(path), "%s/cls.onnx", models);
	CHECK_EXPR(link_at(models, "sub/in_abs.onnx", path) == 0);
	CHECK_EXPR(link_at(models, "subdir_link", "sub") == 0);
	CHECK_EXPR(link_at(models, "out_link.onnx", "../outside/cls.onnx") == 0);
	snprintf(path, sizeof(path), "%s/cls.onnx", outside);
	CHECK_EXPR(link_at(models, "out_abs.onnx", path) == 0);
	CHECK_EXPR(link_at(models, "outdir", "../outside") == 0);
	CHECK_EXPR(link_at(models, "chain.onnx", "in_chain.onnx") == 0);
	CHECK_EXPR(link_at(models, "in_chain.onnx", "outdir/cls.onnx") == 0);
	CHECK_EXPR(link_at(models, "dangling.onnx", "../outside/none.onnx") == 0);
	CHECK_EXPR(link_at(models, "keys_in.txt", "keys.txt") == 0);
	CHECK_EXPR(link_at(models, "keys_out.txt", "../outside/keys.txt") == 0);

	test_symlinks();
	test_put(cls, cls_len, cls_sha);
	test_cache_digests(cls, cls_len, cls_sha, det, det_len);
	test_held_versions(det, det_len);
	test_put_limits(cls, cls_len, cls_sha, det, det_len);
	test_server_put(cls, cls_len, cls_sha);

	free(cls);
	free(det);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	return tu_report("test_model_store");
}
