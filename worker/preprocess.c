/*
 * preprocess.c
 *	  Resize, rotate and normalise decoded RGB images into model tensors.
 *
 * pre_resize() reproduces cv::resize(INTER_LINEAR) on 8-bit images as
 * opencv-python 5.0 computes it (checked to the byte on random images,
 * upscaling and downscaling; see tests/unit/test_ocr.c): source coordinate
 * (d + 0.5) * scale - 0.5 in float, weights rounded to 11 bits
 * (INTER_RESIZE_COEF_BITS); along x the coordinate is clamped to the edge
 * pixels (weight 0 beyond), along y the fractional weights are kept and
 * the row indices clamped; the horizontal pass keeps 22-bit sums and the
 * vertical pass combines two rows as OpenCV's vector kernel does
 * ((sum >> 4) * beta >> 16 per row, then + 2 >> 2, saturated).
 *
 * Threading: pure functions, no state.
 */
#include "worker/preprocess.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/resize_linear.h"


/*
 * Source index and the two 11-bit weights for each of n_dst destination
 * positions along one axis of n_src source pixels (ie_resize_linear_coef,
 * shared with the CUDA backend's resize); clamp: pin positions outside the
 * source to its edge pixels with weight 0 (OpenCV's x axis).
 */
static void
linear_tab(int n_src, int n_dst, int clamp, int *ofs, int16_t (*alpha)[2])
{
	for (int d = 0; d < n_dst; d++)
	{
		int			a0,
					a1;

		ie_resize_linear_coef(d, n_src, n_dst, clamp, &ofs[d], &a0, &a1);
		alpha[d][0] = (int16_t) a0;
		alpha[d][1] = (int16_t) a1;
	}
}

/* One horizontal pass of source row sy into buf (dw * 3 ints). */
static void
hresize_row(const image_rgb *src, int sy, const int *xofs,
			const int16_t (*xa)[2], int dw, int *buf)
{
	const uint8_t *row = src->pixels + (size_t) sy * (size_t) src->width * 3;

	for (int dx = 0; dx < dw; dx++)
	{
		size_t		s0 = (size_t) xofs[dx] * 3;
		size_t		s1 = (size_t) (xofs[dx] + 1 < src->width ? xofs[dx] + 1 : xofs[dx]) * 3;

		for (int c = 0; c < 3; c++)
			buf[(size_t) dx * 3 + c] = row[s0 + c] * xa[dx][0] + row[s1 + c] * xa[dx][1];
	}
}

/* i pinned to [0, n - 1]. */
static int
clamp_index(int i, int n)
{
	return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

static uint8_t
sat_u8(int v)
{
	return (uint8_t) (v < 0 ? 0 : (v > 255 ? 255 : v));
}

/* Bilinear resize, bit-exact with cv::resize (see the file comment). */
image_rgb *
pre_resize(const image_rgb *src, int width, int height)
{
	image_rgb  *dst = NULL;
	int		   *xofs = NULL,
			   *yofs = NULL,
			   *b0 = NULL,
			   *b1 = NULL;
	int16_t		(*xa)[2] = NULL;
	int16_t		(*ya)[2] = NULL;
	size_t		n;
	int			cached0 = -1,
				cached1 = -1;

	/* image_new checks width * height * 3 against SIZE_MAX; a row must index as int */
	if (width < 1 || height < 1 || src->width < 1 || src->height < 1 ||
		width > INT_MAX / 3)
		return NULL;
	n = (size_t) width * 3;
	dst = image_new(width, height);
	if (dst == NULL)
		return NULL;
	if (width == src->width && height == src->height)
	{
		memcpy(dst->pixels, src->pixels, (size_t) width * (size_t) height * 3);
		return dst;
	}
	xofs = malloc(sizeof(int) * (size_t) width);
	yofs = malloc(sizeof(int) * (size_t) height);
	xa = malloc(sizeof(*xa) * (size_t) width);
	ya = malloc(sizeof(*ya) * (size_t) height);
	b0 = malloc(sizeof(int) * n);
	b1 = malloc(sizeof(int) * n);
	if (!xofs || !yofs || !xa || !ya || !b0 || !b1)
		goto fail;
	linear_tab(src->width, width, 1, xofs, xa);
	linear_tab(src->height, height, 0, yofs, ya);

	for (int dy = 0; dy < height; dy++)
	{
		int			sy0 = clamp_index(yofs[dy], src->height);
		int			sy1 = clamp_index(yofs[dy] + 1, src->height);
		int			w0 = ya[dy][0],
					w1 = ya[dy][1];
		uint8_t    *out = dst->pixels + (size_t) dy * n;

		/* keep the two source rows of the previous output row when reusable */
		if (cached0 != sy0)
		{
			if (cached1 == sy0)
			{
				int		   *t = b0;

				b0 = b1;
				b1 = t;
			}
			else
				hresize_row(src, sy0, xofs, xa, width, b0);
			cached0 = sy0;
			cached1 = -1;
		}
		if (cached1 != sy1)
		{
			hresize_row(src, sy1, xofs, xa, width, b1);
			cached1 = sy1;
		}
		for (size_t x = 0; x < n; x++)
		{
			int			v = (((b0[x] >> 4) * w0) >> 16) + (((b1[x] >> 4) * w1) >> 16);

			out[x] = sat_u8((v + 2) >> 2);
		}
	}
	free(xofs);
	free(yofs);
	free(xa);
	free(ya);
	free(b0);
	free(b1);
	return dst;

fail:
	free(xofs);
	free(yofs);
	free(xa);
	free(ya);
	free(b0);
	free(b1);
	image_destroy(&dst);
	return NULL;
}

/* Pixel i goes to n - 1 - i (cv::rotate ROTATE_180). */
image_rgb *
pre_rotate180(const image_rgb *src)
{
	image_rgb  *dst = image_new(src->width, src->height);
	size_t		np = (size_t) src->width * src->height;

	if (dst == NULL)
		return NULL;
	for (size_t i = 0; i < np; i++)
		memcpy(dst->pixels + i * 3, src->pixels + (np - 1 - i) * 3, 3);
	return dst;
}

/* Interleaved 8-bit pixels to padded planar float (see preprocess.h). */
void
pre_normalize_chw(const image_rgb *img, const float mean[3],
				  const float std[3], int bgr, float *out, int out_h,
				  int out_w, float pad)
{
	size_t		plane = (size_t) out_h * (size_t) out_w;

	for (int c = 0; c < 3; c++)
	{
		int			src_c = bgr ? 2 - c : c;
		float	   *p = out + (size_t) c * plane;

		for (int y = 0; y < out_h; y++)
		{
			float	   *row = p + (size_t) y * (size_t) out_w;
			int			x = 0;

			if (y < img->height)
			{
				const uint8_t *s = img->pixels + (size_t) y * (size_t) img->width * 3 + src_c;
				int			w = img->width < out_w ? img->width : out_w;

				for (; x < w; x++)
					row[x] = ((float) s[(size_t) x * 3] / 255.f - mean[c]) / std[c];
			}
			for (; x < out_w; x++)
				row[x] = pad;
		}
	}
}
