/*
 * dimage.c
 *	  Device images (engine.h): 8-bit RGB images kept in a CUDA device's
 *	  memory between model runs, so that a pipeline (the OCR fragment)
 *	  uploads its input once and cuts, turns and feeds its pieces there.
 *
 * The work is the CUDA backend's (cuda/dimage.c, through the plugin
 * loader); here are the argument checks and the size.  In a build without
 * CUDA every call fails with the loader's "built without CUDA".
 */
#include <stdio.h>
#include <stdlib.h>

#include "worker/engine/cuda/backend.h"
#include "worker/engine/engine.h"

/* A device image from host pixels; see engine.h. */
ie_dimage *
ie_dimage_upload(int device, const uint8_t *pixels, int width, int height, char *err,
				 size_t errlen)
{
	if (device < 0 || pixels == NULL || width < 1 || height < 1)
	{
		snprintf(err, errlen, "device image: no device, no pixels or an empty size (%dx%d)",
				 width, height);
		return NULL;
	}
	return ie_cuda_dimage_upload(device, pixels, width, height, err, errlen);
}

/* A warped (and turned) copy; see engine.h. */
ie_dimage *
ie_dimage_warp(const ie_dimage *src, const double minv[9], int out_w, int out_h,
			   int rot90_ccw, char *err, size_t errlen)
{
	if (src == NULL || out_w < 1 || out_h < 1)
	{
		snprintf(err, errlen, "device image warp: no source or an empty size (%dx%d)",
				 out_w, out_h);
		return NULL;
	}
	return ie_cuda_dimage_warp(src, minv, out_w, out_h, rot90_ccw, err, errlen);
}

/* Turned by 180 degrees in place; see engine.h. */
int
ie_dimage_rotate180(ie_dimage *img, char *err, size_t errlen)
{
	return ie_cuda_dimage_rotate180(img, err, errlen);
}

/* Its size; see engine.h. */
void
ie_dimage_size(const ie_dimage *img, int *width, int *height)
{
	*width = img->width;
	*height = img->height;
}

/* Its pixels to the host; see engine.h. */
int
ie_dimage_download(const ie_dimage *img, uint8_t *out, char *err, size_t errlen)
{
	return ie_cuda_dimage_download(img, out, err, errlen);
}

/* Frees it; see engine.h. */
void
ie_dimage_destroy(ie_dimage **img)
{
	if (img == NULL || *img == NULL)
		return;
	ie_cuda_dimage_destroy(*img);
	*img = NULL;
}
