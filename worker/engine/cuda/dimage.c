/*
 * dimage.c
 *	  Device images for the CUDA backend (engine.h, "Device images"): their
 *	  upload through the thread's pinned buffer, the perspective warp and
 *	  the turns (kernels.cu: cu_k_warp_cubic, cu_k_rotate180), the download.
 *
 * An image's buffer comes from the pool of the thread that made it and is
 * used on that thread's stream, which orders every kernel after the ones
 * before; only the upload and the download wait (the pinned buffer is
 * reused).  Destroyed on another thread, the buffer is freed with
 * cudaFree instead of going back to a pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/cuda/cuda_int.h"
#include "worker/engine/cuda/kernels.h"

/* A new image of width x height on c's device, contents undefined; NULL + err. */
static ie_dimage *
dimage_new(cu_ctx *c, int width, int height, char *err, size_t errlen)
{
	ie_dimage  *img = calloc(1, sizeof(*img));

	if (img == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	img->ptr = cu_pool_get(c, (size_t) width * (size_t) height * 3, &img->cap, err, errlen);
	if (img->ptr == NULL)
	{
		free(img);
		return NULL;
	}
	img->device = c->device;
	img->width = width;
	img->height = height;
	img->owner = c;
	return img;
}

/* The calling thread's context for img's device, which must be img's owner. */
static cu_ctx *
owner_ctx(const ie_dimage *img, char *err, size_t errlen)
{
	cu_ctx	   *c = cu_ctx_get(img->device, err, errlen);

	if (c != NULL && c != img->owner)
	{
		snprintf(err, errlen, "a device image is used on a thread other than the one that made it");
		return NULL;
	}
	return c;
}

ie_dimage *
iecu_dimage_upload(int device, const uint8_t *pixels, int width, int height, char *err,
				   size_t errlen)
{
	size_t		n = (size_t) width * (size_t) height * 3;
	cu_ctx	   *c = cu_ctx_get(device, err, errlen);
	ie_dimage  *img;
	void	   *stage;
	cudaError_t e;

	if (c == NULL || (img = dimage_new(c, width, height, err, errlen)) == NULL)
		return NULL;
	if ((stage = cu_pinned(c, n, err, errlen)) == NULL)
	{
		iecu_dimage_destroy(img);
		return NULL;
	}
	memcpy(stage, pixels, n);
	e = cudaMemcpyAsync(img->ptr, stage, n, cudaMemcpyHostToDevice, c->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);	/* the pinned buffer is reused */
	if (e != cudaSuccess)
	{
		cu_err(err, errlen, "uploading an image", e);
		iecu_dimage_destroy(img);
		return NULL;
	}
	return img;
}

ie_dimage *
iecu_dimage_warp(const ie_dimage *src, const double minv[9], int out_w, int out_h,
				 int rot90_ccw, char *err, size_t errlen)
{
	cu_ctx	   *c = owner_ctx(src, err, errlen);
	ie_dimage  *img;
	cu_mat3		mi;
	cudaError_t e;

	if (c == NULL)
		return NULL;
	img = rot90_ccw ? dimage_new(c, out_h, out_w, err, errlen) :
		dimage_new(c, out_w, out_h, err, errlen);
	if (img == NULL)
		return NULL;
	memcpy(mi.m, minv, sizeof(mi.m));
	e = cu_k_warp_cubic(src->ptr, src->width, src->height, mi, img->ptr, out_w, out_h,
						rot90_ccw, c->stream);
	if (e != cudaSuccess)
	{
		cu_err(err, errlen, "the warp kernel", e);
		iecu_dimage_destroy(img);
		return NULL;
	}
	return img;
}

int
iecu_dimage_rotate180(ie_dimage *img, char *err, size_t errlen)
{
	cu_ctx	   *c = owner_ctx(img, err, errlen);
	cudaError_t e;

	if (c == NULL)
		return -1;
	e = cu_k_rotate180(img->ptr, (int64_t) img->width * img->height, c->stream);
	return e == cudaSuccess ? 0 : cu_err(err, errlen, "the rotation kernel", e);
}

int
iecu_dimage_download(const ie_dimage *img, uint8_t *out, char *err, size_t errlen)
{
	size_t		n = (size_t) img->width * (size_t) img->height * 3;
	cu_ctx	   *c = owner_ctx(img, err, errlen);
	void	   *stage;
	cudaError_t e;

	if (c == NULL || (stage = cu_pinned(c, n, err, errlen)) == NULL)
		return -1;
	e = cudaMemcpyAsync(stage, img->ptr, n, cudaMemcpyDeviceToHost, c->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess)
		return cu_err(err, errlen, "downloading an image", e);
	memcpy(out, stage, n);
	return 0;
}

void
iecu_dimage_destroy(ie_dimage *img)
{
	char		err[256];
	cu_ctx	   *c;

	if (img == NULL)
		return;
	c = cu_ctx_get(img->device, err, sizeof(err));
	if (c != NULL && c == img->owner)
		cu_pool_put(c, img->ptr, img->cap);
	else
		cudaFree(img->ptr);
	free(img);
}
