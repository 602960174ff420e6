/*
 * kernels_math.h
 *	  The per-element arithmetic and index math of the CUDA kernels, as
 *	  inline functions that compile both for the device (kernels.cu, under
 *	  nvcc) and for the host (tests/gpu/emu/, the CUDA emulation that tests
 *	  the backend's host code on machines without a GPU), so both run the
 *	  same formulas.
 */
#ifndef IE_CUDA_KERNELS_MATH_H
#define IE_CUDA_KERNELS_MATH_H

#include <math.h>
#include <stdint.h>

#include "worker/engine/cuda/kernels.h"

#ifdef __CUDACC__
#define IE_HD __host__ __device__ static inline
#else
#define IE_HD static inline
#endif

/* a op b for the binary operators of kernels.h. */
IE_HD float
ie_k_binop(int op, float a, float b)
{
	switch (op)
	{
		case CU_ADD: return a + b;
		case CU_SUB: return a - b;
		case CU_MUL: return a * b;
		case CU_DIV: return a / b;
		case CU_POW: return powf(a, b);
		case CU_MAX: return fmaxf(a, b);
		case CU_MIN: return fminf(a, b);
	}
	return 0.0f;
}

/* op(x) for the unary operators of kernels.h (p0, p1: their parameters). */
IE_HD float
ie_k_unop(int op, float x, float p0, float p1)
{
	switch (op)
	{
		case CU_RELU: return x > 0.0f ? x : 0.0f;
		case CU_SIGMOID: return 1.0f / (1.0f + expf(-x));
		case CU_TANH: return tanhf(x);
		case CU_SQRT: return sqrtf(x);
		case CU_ERF: return erff(x);
		case CU_EXP: return expf(x);
		case CU_LOG: return logf(x);
		case CU_NEG: return -x;
		case CU_ABS: return fabsf(x);
		case CU_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, p0 * x + p1));
		case CU_CLIP: return fminf(fmaxf(x, p0), p1);
		case CU_HARDSWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
		case CU_LEAKYRELU: return x >= 0.0f ? x : p0 * x;
		case CU_RECIPROCAL: return 1.0f / x;
		case CU_FLOOR: return floorf(x);
		case CU_CEIL: return ceilf(x);
	}
	return 0.0f;
}

/* The element offsets in a and b of output element i (row-major over bc->dims). */
IE_HD void
ie_k_bcast_offsets(const cu_bcast *bc, int64_t i, int64_t *oa, int64_t *ob)
{
	int64_t		rem = i;

	*oa = 0;
	*ob = 0;
	for (int d = bc->nd - 1; d >= 0; d--)
	{
		int64_t		q = rem % bc->dims[d];

		rem /= bc->dims[d];
		*oa += q * bc->sa[d];
		*ob += q * bc->sb[d];
	}
}

/* The source offset of output element i of a strided copy. */
IE_HD int64_t
ie_k_strided_offset(const cu_strided *sp, int64_t i)
{
	int64_t		rem = i,
				off = sp->base;

	for (int d = sp->nd - 1; d >= 0; d--)
	{
		off += (rem % sp->dims[d]) * sp->st[d];
		rem /= sp->dims[d];
	}
	return off;
}

/* The source offset of output element i of the nearest (asymmetric, floor) resize. */
IE_HD int64_t
ie_k_resize_nearest_src(int64_t i, int64_t h, int64_t w, int64_t oh, int64_t ow,
						float sh, float sw)
{
	int64_t		ox = i % ow,
				oy = (i / ow) % oh,
				p = i / (ow * oh);
	int64_t		iy = (int64_t) floorf((float) oy / sh),
				ix = (int64_t) floorf((float) ox / sw);

	iy = iy < 0 ? 0 : iy >= h ? h - 1 : iy;
	ix = ix < 0 ? 0 : ix >= w ? w - 1 : ix;
	return (p * h + iy) * w + ix;
}

/* y value of BatchNormalization for x in channel c. */
IE_HD float
ie_k_batchnorm(float x, float scale, float bias, float mean, float var, float eps)
{
	return (x - mean) / sqrtf(var + eps) * scale + bias;
}

#endif							/* IE_CUDA_KERNELS_MATH_H */
