/*
 * warp_cubic.h
 *	  One output pixel of a perspective warp with cubic interpolation on
 *	  8-bit RGB images, shared by the host's warp (worker/ocr_geometry.c,
 *	  geo_warp_perspective) and the CUDA backend's (cuda/kernels.cu), so
 *	  both compute the same bytes.
 *
 * Source: warpPerspective as opencv-python 5.0 computes it for INTER_CUBIC
 * on 8-bit images (modules/imgproc/src/imgwarp.cpp; checked pixel for
 * pixel in tests/unit/test_ocr.c): the exact inverse-mapped source point
 * (no 1/32 sub-pixel quantisation), 4x4 Keys cubic weights (A = -0.75,
 * Keys 1981, "Cubic convolution interpolation for digital image
 * processing") in double, rounded to nearest and saturated; out-of-range
 * taps replicate the edge pixels (BORDER_REPLICATE).  Self-contained C;
 * under nvcc every double product and sum is rounded once (no fused
 * multiply-add), as the host computes them.
 */
#ifndef IE_WARP_CUBIC_H
#define IE_WARP_CUBIC_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define IE_WARP_HD __host__ __device__ static inline
#else
#define IE_WARP_HD static inline
#endif

#ifdef __CUDA_ARCH__
#define IE_WARP_MUL(a, b) __dmul_rn((a), (b))
#define IE_WARP_ADD(a, b) __dadd_rn((a), (b))
#define IE_WARP_SUB(a, b) __dsub_rn((a), (b))
#else
#define IE_WARP_MUL(a, b) ((a) * (b))
#define IE_WARP_ADD(a, b) ((a) + (b))
#define IE_WARP_SUB(a, b) ((a) - (b))
#endif

/* Keys cubic convolution weights (A = -0.75) for fraction x in [0, 1). */
IE_WARP_HD void
ie_warp_cubic_weights(double x, double c[4])
{
	const double A = -0.75;
	double		x1 = IE_WARP_ADD(x, 1.0),
				y = IE_WARP_SUB(1.0, x);

	/* ((A (x + 1) - 5 A) (x + 1) + 8 A) (x + 1) - 4 A */
	c[0] = IE_WARP_SUB(IE_WARP_MUL(IE_WARP_ADD(IE_WARP_MUL(IE_WARP_SUB(IE_WARP_MUL(A, x1),
																		 5 * A), x1), 8 * A),
								   x1), 4 * A);
	/* ((A + 2) x - (A + 3)) x x + 1 */
	c[1] = IE_WARP_ADD(IE_WARP_MUL(IE_WARP_MUL(IE_WARP_SUB(IE_WARP_MUL(A + 2, x), A + 3), x), x),
					   1.0);
	/* ((A + 2) (1 - x) - (A + 3)) (1 - x) (1 - x) + 1 */
	c[2] = IE_WARP_ADD(IE_WARP_MUL(IE_WARP_MUL(IE_WARP_SUB(IE_WARP_MUL(A + 2, y), A + 3), y), y),
					   1.0);
	c[3] = IE_WARP_SUB(IE_WARP_SUB(IE_WARP_SUB(1.0, c[0]), c[1]), c[2]);
}

/*
 * Output pixel (x, y) of warping src (sw x sh, RGB interleaved) by the
 * perspective transform whose inverse is mi (row-major 3x3, output to
 * source coordinates): its 3 bytes into out.
 */
IE_WARP_HD void
ie_warp_cubic_px(const uint8_t *src, int sw, int sh, const double mi[9], int x, int y,
				 uint8_t out[3])
{
	double		W = IE_WARP_ADD(IE_WARP_ADD(IE_WARP_MUL(mi[6], (double) x),
											IE_WARP_MUL(mi[7], (double) y)), mi[8]);
	double		sx,
				sy,
				wx[4],
				wy[4];
	int			ix,
				iy;
	int			xs[4],
				ys[4];

	W = W != 0 ? 1.0 / W : 0;
	sx = IE_WARP_MUL(IE_WARP_ADD(IE_WARP_ADD(IE_WARP_MUL(mi[0], (double) x),
											 IE_WARP_MUL(mi[1], (double) y)), mi[2]), W);
	sy = IE_WARP_MUL(IE_WARP_ADD(IE_WARP_ADD(IE_WARP_MUL(mi[3], (double) x),
											 IE_WARP_MUL(mi[4], (double) y)), mi[5]), W);
	if (!(fabs(sx) < 1e8 && fabs(sy) < 1e8))
		sx = sy = 0;
	ix = (int) floor(sx);
	iy = (int) floor(sy);
	ie_warp_cubic_weights(IE_WARP_SUB(sx, (double) ix), wx);
	ie_warp_cubic_weights(IE_WARP_SUB(sy, (double) iy), wy);
	for (int k = 0; k < 4; k++)
	{
		int			xv = ix - 1 + k,
					yv = iy - 1 + k;

		xs[k] = xv < 0 ? 0 : (xv > sw - 1 ? sw - 1 : xv);
		ys[k] = yv < 0 ? 0 : (yv > sh - 1 ? sh - 1 : yv);
	}
	for (int ch = 0; ch < 3; ch++)
	{
		double		sum = 0;

		for (int i = 0; i < 4; i++)
		{
			const uint8_t *row = src + (size_t) ys[i] * (size_t) sw * 3;
			double		rs = 0;

			for (int j = 0; j < 4; j++)
				rs = IE_WARP_ADD(rs, IE_WARP_MUL((double) row[xs[j] * 3 + ch], wx[j]));
			sum = IE_WARP_ADD(sum, IE_WARP_MUL(rs, wy[i]));
		}
		sum = rint(sum);
		out[ch] = (uint8_t) (sum < 0 ? 0 : (sum > 255 ? 255 : sum));
	}
}

#endif							/* IE_WARP_CUBIC_H */
