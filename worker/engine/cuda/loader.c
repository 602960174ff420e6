/*
 * loader.c
 *	  Loads the CUDA backend plugin (libinferengine_cuda.so; see backend.h)
 *	  on first use and forwards the engine's ie_cuda_* calls to it.
 *
 * The plugin is looked for, in order, at $IE_CUDA_BACKEND, next to the
 * running program (<its folder>/../lib/libinferengine_cuda.so: the build
 * tree's build/lib, an installed /usr/local/lib, or a gpu-pack), and where
 * the build put it (IE_CUDA_BACKEND_SO, an absolute path).  It resolves the
 * engine functions it calls against the program, which is linked with
 * -rdynamic (engine.mk).  Without IE_CUDA_BACKEND_SO (a build without
 * nvcc) every call fails with "built without CUDA".
 *
 * Threading: the plugin is loaded once under pthread_once and never
 * unloaded; after that the forwarding is stateless.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/engine/cuda/backend.h"
#include "worker/engine/model_int.h"

#define NO_CUDA "the engine was built without CUDA (nvcc was not found at build time)"

/* The plugin's entry points, once loaded. */
typedef struct backend
{
	int			(*check_device) (int, char *, size_t);
	int			(*mem_info) (int, uint64_t *, uint64_t *, char *, size_t);
	int			(*model_prepare) (struct ie_model *, char *, size_t);
	void		(*model_release) (struct ie_model *);
	int			(*model_run_images) (const struct ie_model *, const ie_image *, int,
									 const ie_image_norm *, ie_tensor **, char *, size_t);
	ie_dimage  *(*dimage_upload) (int, const uint8_t *, int, int, char *, size_t);
	ie_dimage  *(*dimage_warp) (const ie_dimage *, const double *, int, int, int, char *,
								size_t);
	int			(*dimage_rotate180) (ie_dimage *, char *, size_t);
	int			(*dimage_download) (const ie_dimage *, uint8_t *, char *, size_t);
	void		(*dimage_destroy) (ie_dimage *);
	int			(*model_run) (const struct ie_model *, const ie_tensor *const *,
							  ie_tensor **, char *, size_t);
} backend;

static backend be;
static bool be_loaded;
static char be_err[1536];
static pthread_once_t be_once = PTHREAD_ONCE_INIT;

#ifdef IE_CUDA_BACKEND_SO
/* dlopen()s path and finds the entry points; true when it worked (else be_err). */
static bool
try_load(const char *path)
{
	void	   *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
	{
		snprintf(be_err, sizeof(be_err), "cannot load the CUDA backend: %s", dlerror());
		return false;
	}
	*(void **) &be.check_device = dlsym(h, "iecu_check_device");
	*(void **) &be.mem_info = dlsym(h, "iecu_mem_info");
	*(void **) &be.model_prepare = dlsym(h, "iecu_model_prepare");
	*(void **) &be.model_release = dlsym(h, "iecu_model_release");
	*(void **) &be.model_run = dlsym(h, "iecu_model_run");
	*(void **) &be.model_run_images = dlsym(h, "iecu_model_run_images");
	*(void **) &be.dimage_upload = dlsym(h, "iecu_dimage_upload");
	*(void **) &be.dimage_warp = dlsym(h, "iecu_dimage_warp");
	*(void **) &be.dimage_rotate180 = dlsym(h, "iecu_dimage_rotate180");
	*(void **) &be.dimage_download = dlsym(h, "iecu_dimage_download");
	*(void **) &be.dimage_destroy = dlsym(h, "iecu_dimage_destroy");
	if (be.check_device == NULL || be.mem_info == NULL || be.model_prepare == NULL ||
		be.model_release == NULL || be.model_run == NULL || be.model_run_images == NULL ||
		be.dimage_upload == NULL || be.dimage_warp == NULL || be.dimage_rotate180 == NULL ||
		be.dimage_download == NULL || be.dimage_destroy == NULL)
	{
		snprintf(be_err, sizeof(be_err), "%s is not the engine's CUDA backend (entry points missing)",
				 path);
		return false;
	}
	return true;
}
#endif

/* Finds and loads the plugin (pthread_once). */
static void
load_backend(void)
{
#ifdef IE_CUDA_BACKEND_SO
	char		exe[PATH_MAX],
				near[PATH_MAX + 64];
	const char *cands[3];
	int			n = 0;
	ssize_t		len;

	if (getenv("IE_CUDA_BACKEND") != NULL && getenv("IE_CUDA_BACKEND")[0] != '\0')
		cands[n++] = getenv("IE_CUDA_BACKEND");
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0)
	{
		char	   *slash;

		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL)
		{
			*slash = '\0';
			snprintf(near, sizeof(near), "%s/../lib/libinferengine_cuda.so", exe);
			cands[n++] = near;
		}
	}
	cands[n++] = IE_CUDA_BACKEND_SO;
	for (int i = 0; i < n; i++)
	{
		/* an explicit $IE_CUDA_BACKEND is used even when it cannot be read: its error says why */
		if (i > 0 && access(cands[i], R_OK) != 0)
			continue;
		be_loaded = try_load(cands[i]);
		return;
	}
	snprintf(be_err, sizeof(be_err),
			 "the CUDA backend libinferengine_cuda.so was not found (next to the program in ../lib, nor at %s; IE_CUDA_BACKEND names another path)",
			 IE_CUDA_BACKEND_SO);
#else
	snprintf(be_err, sizeof(be_err), NO_CUDA);
#endif
}

/* The loaded plugin, or NULL with the reason in err. */
static const backend *
get_backend(char *err, size_t errlen)
{
	pthread_once(&be_once, load_backend);
	if (!be_loaded)
	{
		snprintf(err, errlen, "%s", be_err);
		return NULL;
	}
	return &be;
}

/* Whether this engine was built with the CUDA backend. */
bool
ie_cuda_built(void)
{
#ifdef IE_CUDA_BACKEND_SO
	return true;
#else
	return false;
#endif
}

/* Loads the plugin if needed, then checks the device. */
int
ie_cuda_check_device(int device, char *err, size_t errlen)
{
	char		e2[1536];
	const backend *b = get_backend(e2, sizeof(e2));

	if (b == NULL)
	{
		snprintf(err, errlen, "cannot use cuda:%d: %s", device, e2);
		return -1;
	}
	return b->check_device(device, err, errlen);
}

/* Device memory, through the plugin. */
int
ie_cuda_mem_info(int device, uint64_t *free_bytes, uint64_t *total_bytes,
				 char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	*free_bytes = 0;
	*total_bytes = 0;
	return b == NULL ? -1 : b->mem_info(device, free_bytes, total_bytes, err, errlen);
}

/* Uploads the model, through the plugin. */
int
ie_cuda_model_prepare(struct ie_model *m, char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? -IE_ERR_NOT_SUPPORTED : b->model_prepare(m, err, errlen);
}

/* Frees the model's device part; a model never prepared has none. */
void
ie_cuda_model_release(struct ie_model *m)
{
	if (m->cuda == NULL)
		return;
	/* m->cuda is only ever set by the plugin, so it is loaded */
	pthread_once(&be_once, load_backend);
	if (be_loaded)
		be.model_release(m);
}

/* Runs the model, through the plugin. */
int
ie_cuda_model_run(const struct ie_model *m, const ie_tensor *const *inputs,
				  ie_tensor **outputs, char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? -1 : b->model_run(m, inputs, outputs, err, errlen);
}

/* Runs the model on images, through the plugin. */
int
ie_cuda_model_run_images(const struct ie_model *m, const ie_image *images, int n,
						 const ie_image_norm *norm, ie_tensor **outputs, char *err,
						 size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? -1 : b->model_run_images(m, images, n, norm, outputs, err, errlen);
}

/* The device-image functions, through the plugin. */
ie_dimage *
ie_cuda_dimage_upload(int device, const uint8_t *pixels, int width, int height, char *err,
					  size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? NULL : b->dimage_upload(device, pixels, width, height, err, errlen);
}

ie_dimage *
ie_cuda_dimage_warp(const ie_dimage *src, const double minv[9], int out_w, int out_h,
					int rot90_ccw, char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? NULL : b->dimage_warp(src, minv, out_w, out_h, rot90_ccw, err, errlen);
}

int
ie_cuda_dimage_rotate180(ie_dimage *img, char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? -1 : b->dimage_rotate180(img, err, errlen);
}

int
ie_cuda_dimage_download(const ie_dimage *img, uint8_t *out, char *err, size_t errlen)
{
	const backend *b = get_backend(err, errlen);

	return b == NULL ? -1 : b->dimage_download(img, out, err, errlen);
}

void
ie_cuda_dimage_destroy(ie_dimage *img)
{
	char		err[1536];
	const backend *b = get_backend(err, sizeof(err));

	if (b != NULL)
		b->dimage_destroy(img);
}
