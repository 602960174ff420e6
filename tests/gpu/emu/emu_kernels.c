/*
 * emu_kernels.c
 *	  Host versions of the CUDA kernels' launchers (worker/engine/cuda/
 *	  kernels.h) for the emulated backend of tests/gpu (see emu_cuda.c).
 *	  The element-wise formulas and index math are kernels.cu's own
 *	  (kernels_math.h); the reductions are written out here in kernels.cu's
 *	  order of operations: a row (inner == 1) as 256 strided partial
 *	  results combined by a halving tree, as one block of 256 threads does;
 *	  a strided axis (inner > 1) sequentially, as one thread does.
 */
#include <math.h>
#include <string.h>

#include "worker/engine/cuda/kernels.h"
#include "worker/engine/cuda/kernels_math.h"
#include "tests/gpu/emu/emu_half.h"

cudaError_t
cu_k_binary(int op, const float *a, const float *b, float *y, cu_bcast bc, int64_t n,
			cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		oa,
					ob;

		ie_k_bcast_offsets(&bc, i, &oa, &ob);
		y[i] = ie_k_binop(op, a[oa], b[ob]);
	}
	return cudaSuccess;
}

cudaError_t
cu_k_unary(int op, const float *x, float *y, int64_t n, float p0, float p1, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < n; i++)
		y[i] = ie_k_unop(op, x[i], p0, p1);
	return cudaSuccess;
}

cudaError_t
cu_k_batchnorm(const float *x, float *y, int64_t outer, int64_t C, int64_t inner,
			   const float *scale, const float *bias, const float *mean,
			   const float *var, float eps, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < outer * C * inner; i++)
	{
		int64_t		c = (i / inner) % C;

		y[i] = ie_k_batchnorm(x[i], scale[c], bias[c], mean[c], var[c], eps);
	}
	return cudaSuccess;
}

cudaError_t
cu_k_bias(float *y, int64_t outer, int64_t C, int64_t inner, const float *bias,
		  cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < outer * C * inner; i++)
		y[i] += bias[(i / inner) % C];
	return cudaSuccess;
}

#define THREADS 256

/*
 * Reduces n values f(k), k = 0..n-1, as a block of THREADS threads does in
 * kernels.cu: thread t folds k = t, t + THREADS, ... from init, then a
 * halving tree combines the partial results.  op: CU_RSUM (also for the
 * mean), CU_RMAX or CU_RMIN.
 */
static float
block_fold(int op, float init, int64_t n, float (*f) (const void *, int64_t), const void *arg)
{
	float		sh[THREADS];

	for (int t = 0; t < THREADS; t++)
	{
		float		acc = init;

		for (int64_t k = t; k < n; k += THREADS)
		{
			float		v = f(arg, k);

			acc = op == CU_RMAX ? ie_k_max(acc, v) : op == CU_RMIN ? ie_k_min(acc, v) : acc + v;
		}
		sh[t] = acc;
	}
	for (int w = THREADS / 2; w > 0; w /= 2)
		for (int t = 0; t < w; t++)
			sh[t] = op == CU_RMAX ? ie_k_max(sh[t], sh[t + w]) :
				op == CU_RMIN ? ie_k_min(sh[t], sh[t + w]) : sh[t] + sh[t + w];
	return sh[0];
}

/* Element k of a row. */
static float
row_at(const void *arg, int64_t k)
{
	return ((const float *) arg)[k];
}

/* exp(row[k] - max) of a softmax row. */
typedef struct exp_arg
{
	const float *row;
	float		mx;
} exp_arg;

static float
row_exp(const void *arg, int64_t k)
{
	const exp_arg *a = arg;

	return expf(a->row[k] - a->mx);
}

/* (row[k] - mean)^2 of a layer-norm row. */
typedef struct sq_arg
{
	const float *row;
	float		mean;
} sq_arg;

static float
row_sq(const void *arg, int64_t k)
{
	const sq_arg *a = arg;
	float		d = a->row[k] - a->mean;

	return d * d;
}

cudaError_t
cu_k_reduce(int op, const float *x, float *y, int64_t outer, int64_t r, int64_t inner,
			cudaStream_t s)
{
	(void) s;
	if (inner == 1)
	{
		for (int64_t o = 0; o < outer; o++)
		{
			float		acc = block_fold(op == CU_RMEAN ? CU_RSUM : op,
										 op == CU_RMAX ? -INFINITY : op == CU_RMIN ? INFINITY : 0.0f,
										 r, row_at, x + o * r);

			y[o] = op == CU_RMEAN ? acc / (float) r : acc;
		}
		return cudaSuccess;
	}
	for (int64_t i = 0; i < outer * inner; i++)
	{
		const float *p = x + (i / inner) * r * inner + i % inner;
		float		acc = op == CU_RMAX ? -INFINITY : op == CU_RMIN ? INFINITY : 0.0f;

		for (int64_t k = 0; k < r; k++)
			acc = op == CU_RMAX ? ie_k_max(acc, p[k * inner]) :
				op == CU_RMIN ? ie_k_min(acc, p[k * inner]) : acc + p[k * inner];
		y[i] = op == CU_RMEAN ? acc / (float) r : acc;
	}
	return cudaSuccess;
}

cudaError_t
cu_k_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int log,
			 cudaStream_t s)
{
	(void) s;
	if (inner == 1)
	{
		for (int64_t o = 0; o < outer; o++)
		{
			const float *row = x + o * n;
			float	   *out = y + o * n;
			exp_arg		ea;
			float		sum;

			ea.row = row;
			ea.mx = block_fold(CU_RMAX, -INFINITY, n, row_at, row);
			sum = block_fold(CU_RSUM, 0.0f, n, row_exp, &ea);
			for (int64_t k = 0; k < n; k++)
				out[k] = log ? row[k] - ea.mx - logf(sum) : expf(row[k] - ea.mx) / sum;
		}
		return cudaSuccess;
	}
	for (int64_t i = 0; i < outer * inner; i++)
	{
		const float *p = x + (i / inner) * n * inner + i % inner;
		float	   *q = y + (i / inner) * n * inner + i % inner;
		float		mx = -INFINITY,
					sum = 0.0f;

		for (int64_t k = 0; k < n; k++)
			mx = ie_k_max(mx, p[k * inner]);
		for (int64_t k = 0; k < n; k++)
			sum += expf(p[k * inner] - mx);
		for (int64_t k = 0; k < n; k++)
			q[k * inner] = log ? p[k * inner] - mx - logf(sum) : expf(p[k * inner] - mx) / sum;
	}
	return cudaSuccess;
}

cudaError_t
cu_k_attn_softmax(float *s, int64_t rows, cu_attn p, cudaStream_t st)
{
	(void) st;
	for (int64_t r = 0; r < rows; r++)
	{
		float	   *row = s + r * p.T;
		float		bmx = -INFINITY;
		exp_arg		ea;

		for (int64_t k = 0; k < p.T; k++)
		{
			float		bias;

			row[k] = ie_k_attn_score(&p, r, k, row[k], &bias);
			bmx = ie_k_max(bmx, bias);
		}
		if (bmx == -INFINITY)
		{
			memset(row, 0, (size_t) p.T * sizeof(float));
			continue;
		}
		ea.row = row;
		ea.mx = block_fold(CU_RMAX, -INFINITY, p.T, row_at, row);
		{
			float		sum = block_fold(CU_RSUM, 0.0f, p.T, row_exp, &ea);

			for (int64_t k = 0; k < p.T; k++)
				row[k] = expf(row[k] - ea.mx) / sum;
		}
	}
	return cudaSuccess;
}

cudaError_t
cu_k_layernorm(const float *x, float *y, int64_t rows, int64_t n, const float *scale,
			   const float *bias, float eps, cudaStream_t s)
{
	(void) s;
	for (int64_t r = 0; r < rows; r++)
	{
		const float *row = x + r * n;
		float	   *out = y + r * n;
		sq_arg		sa;
		float		rstd;

		sa.row = row;
		sa.mean = block_fold(CU_RSUM, 0.0f, n, row_at, row) / (float) n;
		rstd = 1.0f / sqrtf(block_fold(CU_RSUM, 0.0f, n, row_sq, &sa) / (float) n + eps);
		for (int64_t k = 0; k < n; k++)
			out[k] = (row[k] - sa.mean) * rstd * scale[k] + (bias != NULL ? bias[k] : 0.0f);
	}
	return cudaSuccess;
}

cudaError_t
cu_k_strided(size_t esize, const void *x, void *y, cu_strided sp, int64_t n, cudaStream_t s)
{
	(void) s;
	if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
		return cudaErrorInvalidValue;
	for (int64_t i = 0; i < n; i++)
		memcpy((char *) y + i * esize, (const char *) x + ie_k_strided_offset(&sp, i) * esize,
			   esize);
	return cudaSuccess;
}

cudaError_t
cu_k_gather(size_t esize, const void *x, void *y, const int64_t *idx, int64_t outer,
			int64_t nidx, int64_t an, int64_t inner, cudaStream_t s)
{
	(void) s;
	if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
		return cudaErrorInvalidValue;
	for (int64_t i = 0; i < outer * nidx * inner; i++)
	{
		int64_t		in = i % inner,
					j = (i / inner) % nidx,
					o = i / (inner * nidx);

		memcpy((char *) y + i * esize,
			   (const char *) x + ((o * an + idx[j]) * inner + in) * esize, esize);
	}
	return cudaSuccess;
}

cudaError_t
cu_k_cast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < n; i++)
	{
		double		v;

		if (from == 1)
			v = ((const float *) x)[i];
		else if (from == 6)
			v = ((const int32_t *) x)[i];
		else if (from == 7)
			v = (double) ((const int64_t *) x)[i];
		else
			return cudaErrorInvalidValue;
		if (to == 1)
			((float *) y)[i] = from == 7 ? (float) ((const int64_t *) x)[i] : (float) v;
		else if (to == 6)
			((int32_t *) y)[i] = from == 1 ? (int32_t) ((const float *) x)[i] : (int32_t) v;
		else if (to == 7)
			((int64_t *) y)[i] = from == 1 ? (int64_t) ((const float *) x)[i] :
				from == 6 ? (int64_t) ((const int32_t *) x)[i] : ((const int64_t *) x)[i];
		else
			return cudaErrorInvalidValue;
	}
	return cudaSuccess;
}

cudaError_t
cu_k_resize_nearest(const float *x, float *y, int64_t nc, int64_t h, int64_t w,
					int64_t oh, int64_t ow, float sh, float sw, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < nc * oh * ow; i++)
		y[i] = x[ie_k_resize_nearest_src(i, h, w, oh, ow, sh, sw)];
	return cudaSuccess;
}

cudaError_t
cu_k_pool2d(int kind, const float *x, float *y, cu_window win, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < win.n * win.c * win.oh * win.ow; i++)
		y[i] = ie_k_pool2d_value(kind, x, &win, i);
	return cudaSuccess;
}

cudaError_t
cu_k_depthwise(const float *x, const float *w, const float *bias, float *y, cu_window win,
			   int mult, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < win.n * win.c * win.oh * win.ow; i++)
		y[i] = ie_k_depthwise_value(x, w, bias, &win, mult, i);
	return cudaSuccess;
}

cudaError_t
cu_k_prep_images(const cu_prep_image *imgs, int n, int out_h, int out_w, cu_prep_norm norm,
				 float *y, cudaStream_t s)
{
	int64_t		i = 0;

	(void) s;
	for (int k = 0; k < n; k++)
		for (int c = 0; c < 3; c++)
			for (int yy = 0; yy < out_h; yy++)
				for (int x = 0; x < out_w; x++)
					y[i++] = ie_k_prep_value(&imgs[k], &norm, out_w, c, yy, x);
	return cudaSuccess;
}

cudaError_t
cu_k_warp_cubic(const uint8_t *src, int sw, int sh, cu_mat3 mi, uint8_t *dst, int ow, int oh,
				int rot90, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < (int64_t) ow * oh; i++)
		ie_k_warp_px(src, sw, sh, &mi, ow, oh, rot90, i, dst + i * 3);
	return cudaSuccess;
}

cudaError_t
cu_k_rotate180(uint8_t *img, int64_t npix, cudaStream_t s)
{
	(void) s;
	for (int64_t i = 0; i < npix / 2; i++)
		for (int c = 0; c < 3; c++)
		{
			uint8_t		t = img[i * 3 + c];

			img[i * 3 + c] = img[(npix - 1 - i) * 3 + c];
			img[(npix - 1 - i) * 3 + c] = t;
		}
	return cudaSuccess;
}

cudaError_t
cu_k_to_16(int bf16, const float *x, void *y, int64_t n, cudaStream_t s)
{
	uint16_t   *o = y;

	(void) s;
	for (int64_t i = 0; i < n; i++)
		o[i] = bf16 ? emu_f32_to_bf16(x[i]) : emu_f32_to_f16(x[i]);
	return cudaSuccess;
}

cudaError_t
cu_k_from_16(int bf16, const void *x, float *y, int64_t n, cudaStream_t s)
{
	const uint16_t *in = x;

	(void) s;
	for (int64_t i = 0; i < n; i++)
		y[i] = bf16 ? emu_bf16_to_f32(in[i]) : emu_f16_to_f32(in[i]);
	return cudaSuccess;
}
