/*
 * resize_linear.h
 *	  The coefficients of cv::resize INTER_LINEAR on 8-bit images along one
 *	  axis, shared by the host's resize (worker/preprocess.c) and the CUDA
 *	  backend's (cuda/kernels_math.h), so both compute the same weights.
 *
 * Source: OpenCV modules/imgproc/src/resize.cpp (resize with INTER_LINEAR
 * on CV_8U): source coordinate (d + 0.5) * scale - 0.5 with scale = 1 /
 * (n_dst / n_src) in double, then float; 11-bit fixed-point weights
 * (INTER_RESIZE_COEF_BITS).  Self-contained C (no CUDA headers); under
 * nvcc the double product and sum are rounded once each (no fused
 * multiply-add), as the host computes them.
 */
#ifndef IE_RESIZE_LINEAR_H
#define IE_RESIZE_LINEAR_H

#include <math.h>

#define IE_RESIZE_COEF_BITS 11
#define IE_RESIZE_COEF_SCALE (1 << IE_RESIZE_COEF_BITS)

#ifdef __CUDACC__
#define IE_RESIZE_HD __host__ __device__ static inline
#else
#define IE_RESIZE_HD static inline
#endif

#ifdef __CUDA_ARCH__
#define IE_RESIZE_DMUL(a, b) __dmul_rn((a), (b))
#define IE_RESIZE_DADD(a, b) __dadd_rn((a), (b))
#define IE_RESIZE_LRINTF(x) __float2int_rn(x)
#else
#define IE_RESIZE_DMUL(a, b) ((a) * (b))
#define IE_RESIZE_DADD(a, b) ((a) + (b))
#define IE_RESIZE_LRINTF(x) ((int) lrintf(x))
#endif

/*
 * Destination position d of n_dst over n_src source pixels: the source
 * index *ofs and the two 11-bit weights *a0 (pixel *ofs) and *a1 (the next
 * one); clamp pins positions outside the source to its edge pixels with
 * weight 0, as OpenCV does along x (along y it keeps the weights and the
 * caller clamps the row indices).
 */
IE_RESIZE_HD void
ie_resize_linear_coef(int d, int n_src, int n_dst, int clamp, int *ofs, int *a0, int *a1)
{
	double		scale = 1.0 / ((double) n_dst / (double) n_src);
	float		f = (float) IE_RESIZE_DADD(IE_RESIZE_DMUL(d + 0.5, scale), -0.5);
	int			s = (int) floorf(f);

	f -= (float) s;
	if (clamp && s < 0)
	{
		f = 0;
		s = 0;
	}
	if (clamp && s >= n_src - 1)
	{
		f = 0;
		s = n_src - 1;
	}
	*ofs = s;
	*a0 = IE_RESIZE_LRINTF((1.f - f) * IE_RESIZE_COEF_SCALE);
	*a1 = IE_RESIZE_LRINTF(f * IE_RESIZE_COEF_SCALE);
}

#endif							/* IE_RESIZE_LINEAR_H */
