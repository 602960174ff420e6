/*
 * kernels.cu
 *	  The engine's CUDA kernels (kernels.h).  Each is a plain grid-stride
 *	  loop or a one-block-per-row reduction: small and easy to check, not
 *	  tuned.  The per-element formulas and index math are shared with the
 *	  host emulation of tests/gpu/emu/ (kernels_math.h).  Arithmetic is in
 *	  float with the CUDA math library (expf, erff, ...), so results differ
 *	  from the CPU's by rounding only.
 *
 * Launch configuration: 256 threads per block; grid-stride loops use at
 * most 65535 * 16 blocks.  Row reductions use one block of 256 threads per
 * row and a shared-memory tree.
 */
#include <math.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "worker/engine/cuda/kernels.h"
#include "worker/engine/cuda/kernels_math.h"

#define THREADS 256

/* Blocks for a grid-stride loop over n items. */
static unsigned int
blocks_for(int64_t n)
{
	int64_t		b = (n + THREADS - 1) / THREADS;

	if (b < 1)
		b = 1;
	if (b > 65535 * 16)
		b = 65535 * 16;
	return (unsigned int) b;
}

/* The launch status of the kernel just queued. */
static cudaError_t
launched(void)
{
	return cudaGetLastError();
}

/* ---- element-wise ---- */

__global__ static void
k_binary(int op, const float *a, const float *b, float *y, cu_bcast bc, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		oa,
					ob;

		ie_k_bcast_offsets(&bc, i, &oa, &ob);
		y[i] = ie_k_binop(op, a[oa], b[ob]);
	}
}

extern "C" cudaError_t
cu_k_binary(int op, const float *a, const float *b, float *y, cu_bcast bc, int64_t n,
			cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	k_binary<<<blocks_for(n), THREADS, 0, s>>>(op, a, b, y, bc, n);
	return launched();
}

__global__ static void
k_unary(int op, const float *x, float *y, int64_t n, float p0, float p1)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = ie_k_unop(op, x[i], p0, p1);
}

extern "C" cudaError_t
cu_k_unary(int op, const float *x, float *y, int64_t n, float p0, float p1, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	k_unary<<<blocks_for(n), THREADS, 0, s>>>(op, x, y, n, p0, p1);
	return launched();
}

__global__ static void
k_batchnorm(const float *x, float *y, int64_t n, int64_t C, int64_t inner,
			const float *scale, const float *bias, const float *mean, const float *var,
			float eps)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		c = (i / inner) % C;

		y[i] = ie_k_batchnorm(x[i], scale[c], bias[c], mean[c], var[c], eps);
	}
}

extern "C" cudaError_t
cu_k_batchnorm(const float *x, float *y, int64_t outer, int64_t C, int64_t inner,
			   const float *scale, const float *bias, const float *mean,
			   const float *var, float eps, cudaStream_t s)
{
	int64_t		n = outer * C * inner;

	if (n <= 0)
		return cudaSuccess;
	k_batchnorm<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, C, inner, scale, bias, mean,
												  var, eps);
	return launched();
}

__global__ static void
k_bias(float *y, int64_t n, int64_t C, int64_t inner, const float *bias)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] += bias[(i / inner) % C];
}

extern "C" cudaError_t
cu_k_bias(float *y, int64_t outer, int64_t C, int64_t inner, const float *bias,
		  cudaStream_t s)
{
	int64_t		n = outer * C * inner;

	if (n <= 0)
		return cudaSuccess;
	k_bias<<<blocks_for(n), THREADS, 0, s>>>(y, n, C, inner, bias);
	return launched();
}

/* ---- reductions ---- */

/* Combines the THREADS values of sh with op (sum, max, min); sh[0] gets it. */
__device__ static void
block_reduce(float *sh, int op)
{
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w /= 2)
	{
		if (threadIdx.x < w)
		{
			float		a = sh[threadIdx.x],
						b = sh[threadIdx.x + w];

			sh[threadIdx.x] = op == CU_RMAX ? ie_k_max(a, b) : op == CU_RMIN ? ie_k_min(a, b) : a + b;
		}
		__syncthreads();
	}
}

__device__ static float
reduce_init(int op)
{
	return op == CU_RMAX ? -INFINITY : op == CU_RMIN ? INFINITY : 0.0f;
}

/* inner == 1: one block per output, its threads striding over r. */
__global__ static void
k_reduce_rows(int op, const float *x, float *y, int64_t r)
{
	__shared__ float sh[THREADS];
	const float *row = x + blockIdx.x * r;
	float		acc = reduce_init(op);

	for (int64_t k = threadIdx.x; k < r; k += THREADS)
		acc = op == CU_RMAX ? ie_k_max(acc, row[k]) : op == CU_RMIN ? ie_k_min(acc, row[k]) : acc + row[k];
	sh[threadIdx.x] = acc;
	block_reduce(sh, op);
	if (threadIdx.x == 0)
		y[blockIdx.x] = op == CU_RMEAN ? sh[0] / (float) r : sh[0];
}

/* inner > 1: one thread per output, looping over r. */
__global__ static void
k_reduce_cols(int op, const float *x, float *y, int64_t outer, int64_t r, int64_t inner)
{
	int64_t		n = outer * inner;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		o = i / inner,
					in = i % inner;
		const float *p = x + o * r * inner + in;
		float		acc = reduce_init(op);

		for (int64_t k = 0; k < r; k++)
			acc = op == CU_RMAX ? ie_k_max(acc, p[k * inner]) :
				op == CU_RMIN ? ie_k_min(acc, p[k * inner]) : acc + p[k * inner];
		y[i] = op == CU_RMEAN ? acc / (float) r : acc;
	}
}

extern "C" cudaError_t
cu_k_reduce(int op, const float *x, float *y, int64_t outer, int64_t r, int64_t inner,
			cudaStream_t s)
{
	if (outer * inner <= 0)
		return cudaSuccess;
	if (inner == 1 && outer <= 0x7fffffff)
		k_reduce_rows<<<(unsigned int) outer, THREADS, 0, s>>>(op, x, y, r);
	else
		k_reduce_cols<<<blocks_for(outer * inner), THREADS, 0, s>>>(op, x, y, outer, r, inner);
	return launched();
}

/* Softmax of contiguous rows of n (inner == 1): one block per row. */
__global__ static void
k_softmax_rows(const float *x, float *y, int64_t n, int log)
{
	__shared__ float sh[THREADS];
	const float *row = x + blockIdx.x * n;
	float	   *out = y + blockIdx.x * n;
	float		mx = -INFINITY,
				sum = 0.0f;

	for (int64_t k = threadIdx.x; k < n; k += THREADS)
		mx = ie_k_max(mx, row[k]);
	sh[threadIdx.x] = mx;
	block_reduce(sh, CU_RMAX);
	mx = sh[0];
	__syncthreads();			/* everyone has read sh[0] before it is reused */
	for (int64_t k = threadIdx.x; k < n; k += THREADS)
		sum += expf(row[k] - mx);
	sh[threadIdx.x] = sum;
	block_reduce(sh, CU_RSUM);
	sum = sh[0];
	for (int64_t k = threadIdx.x; k < n; k += THREADS)
		out[k] = log ? row[k] - mx - logf(sum) : expf(row[k] - mx) / sum;
}

/* Softmax along a strided axis (inner > 1): one thread per (outer, inner). */
__global__ static void
k_softmax_cols(const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int log)
{
	int64_t		total = outer * inner;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < total;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		o = i / inner,
					in = i % inner;
		const float *p = x + o * n * inner + in;
		float	   *q = y + o * n * inner + in;
		float		mx = -INFINITY,
					sum = 0.0f;

		for (int64_t k = 0; k < n; k++)
			mx = ie_k_max(mx, p[k * inner]);
		for (int64_t k = 0; k < n; k++)
			sum += expf(p[k * inner] - mx);
		for (int64_t k = 0; k < n; k++)
			q[k * inner] = log ? p[k * inner] - mx - logf(sum) : expf(p[k * inner] - mx) / sum;
	}
}

extern "C" cudaError_t
cu_k_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int log,
			 cudaStream_t s)
{
	if (outer * n * inner <= 0)
		return cudaSuccess;
	if (inner == 1 && outer <= 0x7fffffff)
		k_softmax_rows<<<(unsigned int) outer, THREADS, 0, s>>>(x, y, n, log);
	else
		k_softmax_cols<<<blocks_for(outer * inner), THREADS, 0, s>>>(x, y, outer, n, inner, log);
	return launched();
}

/*
 * Attention's scores to probabilities, one block per row: scores with
 * softcap and bias (ie_k_attn_score) written back, the largest score and
 * the largest bias reduced, then the softmax; a row whose bias is -inf
 * throughout becomes zeros.
 */
__global__ static void
k_attn_softmax(float *s, cu_attn p)
{
	__shared__ float sh[THREADS];
	float	   *row = s + blockIdx.x * p.T;
	float		mx = -INFINITY,
				bmx = -INFINITY,
				sum = 0.0f;

	for (int64_t k = threadIdx.x; k < p.T; k += THREADS)
	{
		float		bias;

		row[k] = ie_k_attn_score(&p, blockIdx.x, k, row[k], &bias);
		mx = ie_k_max(mx, row[k]);
		bmx = ie_k_max(bmx, bias);
	}
	sh[threadIdx.x] = bmx;
	block_reduce(sh, CU_RMAX);
	bmx = sh[0];
	__syncthreads();
	if (bmx == -INFINITY)
	{
		for (int64_t k = threadIdx.x; k < p.T; k += THREADS)
			row[k] = 0.0f;
		return;
	}
	sh[threadIdx.x] = mx;
	block_reduce(sh, CU_RMAX);
	mx = sh[0];
	__syncthreads();
	for (int64_t k = threadIdx.x; k < p.T; k += THREADS)
		sum += expf(row[k] - mx);
	sh[threadIdx.x] = sum;
	block_reduce(sh, CU_RSUM);
	sum = sh[0];
	for (int64_t k = threadIdx.x; k < p.T; k += THREADS)
		row[k] = expf(row[k] - mx) / sum;
}

extern "C" cudaError_t
cu_k_attn_softmax(float *s, int64_t rows, cu_attn p, cudaStream_t st)
{
	if (rows <= 0 || p.T <= 0)
		return cudaSuccess;
	k_attn_softmax<<<(unsigned int) rows, THREADS, 0, st>>>(s, p);
	return launched();
}

/* LayerNormalization: one block per row, mean then variance (two passes). */
__global__ static void
k_layernorm(const float *x, float *y, int64_t n, const float *scale, const float *bias,
			float eps)
{
	__shared__ float sh[THREADS];
	const float *row = x + blockIdx.x * n;
	float	   *out = y + blockIdx.x * n;
	float		acc = 0.0f,
				mean,
				rstd;

	for (int64_t k = threadIdx.x; k < n; k += THREADS)
		acc += row[k];
	sh[threadIdx.x] = acc;
	block_reduce(sh, CU_RSUM);
	mean = sh[0] / (float) n;
	__syncthreads();
	acc = 0.0f;
	for (int64_t k = threadIdx.x; k < n; k += THREADS)
	{
		float		d = row[k] - mean;

		acc += d * d;
	}
	sh[threadIdx.x] = acc;
	block_reduce(sh, CU_RSUM);
	rstd = 1.0f / sqrtf(sh[0] / (float) n + eps);
	for (int64_t k = threadIdx.x; k < n; k += THREADS)
		out[k] = (row[k] - mean) * rstd * scale[k] + (bias != NULL ? bias[k] : 0.0f);
}

extern "C" cudaError_t
cu_k_layernorm(const float *x, float *y, int64_t rows, int64_t n, const float *scale,
			   const float *bias, float eps, cudaStream_t s)
{
	if (rows <= 0 || n <= 0)
		return cudaSuccess;
	if (rows > 0x7fffffff)
		return cudaErrorInvalidValue;
	k_layernorm<<<(unsigned int) rows, THREADS, 0, s>>>(x, y, n, scale, bias, eps);
	return launched();
}

/* ---- data movement ---- */

template <typename T>
__global__ static void
k_strided(const T *x, T *y, cu_strided sp, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = x[ie_k_strided_offset(&sp, i)];
}

extern "C" cudaError_t
cu_k_strided(size_t esize, const void *x, void *y, cu_strided sp, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	switch (esize)
	{
		case 1:
			k_strided<<<blocks_for(n), THREADS, 0, s>>>((const uint8_t *) x, (uint8_t *) y, sp, n);
			break;
		case 2:
			k_strided<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *) x, (uint16_t *) y, sp, n);
			break;
		case 4:
			k_strided<<<blocks_for(n), THREADS, 0, s>>>((const uint32_t *) x, (uint32_t *) y, sp, n);
			break;
		case 8:
			k_strided<<<blocks_for(n), THREADS, 0, s>>>((const uint64_t *) x, (uint64_t *) y, sp, n);
			break;
		default:
			return cudaErrorInvalidValue;
	}
	return launched();
}

template <typename T>
__global__ static void
k_gather(const T *x, T *y, const int64_t *idx, int64_t outer, int64_t nidx, int64_t an,
		 int64_t inner)
{
	int64_t		n = outer * nidx * inner;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int64_t		in = i % inner,
					j = (i / inner) % nidx,
					o = i / (inner * nidx);

		y[i] = x[(o * an + idx[j]) * inner + in];
	}
}

extern "C" cudaError_t
cu_k_gather(size_t esize, const void *x, void *y, const int64_t *idx, int64_t outer,
			int64_t nidx, int64_t an, int64_t inner, cudaStream_t s)
{
	int64_t		n = outer * nidx * inner;

	if (n <= 0)
		return cudaSuccess;
	switch (esize)
	{
		case 1:
			k_gather<<<blocks_for(n), THREADS, 0, s>>>((const uint8_t *) x, (uint8_t *) y, idx, outer, nidx, an, inner);
			break;
		case 2:
			k_gather<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *) x, (uint16_t *) y, idx, outer, nidx, an, inner);
			break;
		case 4:
			k_gather<<<blocks_for(n), THREADS, 0, s>>>((const uint32_t *) x, (uint32_t *) y, idx, outer, nidx, an, inner);
			break;
		case 8:
			k_gather<<<blocks_for(n), THREADS, 0, s>>>((const uint64_t *) x, (uint64_t *) y, idx, outer, nidx, an, inner);
			break;
		default:
			return cudaErrorInvalidValue;
	}
	return launched();
}

template <typename A, typename B>
__global__ static void
k_cast(const A *x, B *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = (B) x[i];
}

/* ONNX type codes: 1 float, 6 int32, 7 int64. */
extern "C" cudaError_t
cu_k_cast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t s)
{
	unsigned int b = blocks_for(n);

	if (n <= 0)
		return cudaSuccess;
	if (from == 1 && to == 6)
		k_cast<<<b, THREADS, 0, s>>>((const float *) x, (int32_t *) y, n);
	else if (from == 1 && to == 7)
		k_cast<<<b, THREADS, 0, s>>>((const float *) x, (int64_t *) y, n);
	else if (from == 6 && to == 1)
		k_cast<<<b, THREADS, 0, s>>>((const int32_t *) x, (float *) y, n);
	else if (from == 7 && to == 1)
		k_cast<<<b, THREADS, 0, s>>>((const int64_t *) x, (float *) y, n);
	else if (from == 6 && to == 7)
		k_cast<<<b, THREADS, 0, s>>>((const int32_t *) x, (int64_t *) y, n);
	else if (from == 7 && to == 6)
		k_cast<<<b, THREADS, 0, s>>>((const int64_t *) x, (int32_t *) y, n);
	else
		return cudaErrorInvalidValue;
	return launched();
}

__global__ static void
k_resize_nearest(const float *x, float *y, int64_t nc, int64_t h, int64_t w, int64_t oh,
				 int64_t ow, float sh, float sw)
{
	int64_t		n = nc * oh * ow;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = x[ie_k_resize_nearest_src(i, h, w, oh, ow, sh, sw)];
}

extern "C" cudaError_t
cu_k_resize_nearest(const float *x, float *y, int64_t nc, int64_t h, int64_t w,
					int64_t oh, int64_t ow, float sh, float sw, cudaStream_t s)
{
	int64_t		n = nc * oh * ow;

	if (n <= 0)
		return cudaSuccess;
	k_resize_nearest<<<blocks_for(n), THREADS, 0, s>>>(x, y, nc, h, w, oh, ow, sh, sw);
	return launched();
}

__global__ static void
k_pool2d(int kind, const float *x, float *y, cu_window win, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = ie_k_pool2d_value(kind, x, &win, i);
}

cudaError_t
cu_k_pool2d(int kind, const float *x, float *y, cu_window win, cudaStream_t s)
{
	int64_t		n = win.n * win.c * win.oh * win.ow;

	if (n <= 0)
		return cudaSuccess;
	k_pool2d<<<blocks_for(n), THREADS, 0, s>>>(kind, x, y, win, n);
	return launched();
}

__global__ static void
k_depthwise(const float *x, const float *w, const float *bias, float *y, cu_window win,
			int mult, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = ie_k_depthwise_value(x, w, bias, &win, mult, i);
}

cudaError_t
cu_k_depthwise(const float *x, const float *w, const float *bias, float *y, cu_window win,
			   int mult, cudaStream_t s)
{
	int64_t		n = win.n * win.c * win.oh * win.ow;

	if (n <= 0)
		return cudaSuccess;
	k_depthwise<<<blocks_for(n), THREADS, 0, s>>>(x, w, bias, y, win, mult, n);
	return launched();
}

__global__ static void
k_prep_images(const cu_prep_image *imgs, int out_h, int out_w, cu_prep_norm norm, float *y,
			  int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		int			x = (int) (i % out_w);
		int			yy = (int) ((i / out_w) % out_h);
		int			c = (int) ((i / ((int64_t) out_w * out_h)) % 3);
		int64_t		k = i / ((int64_t) out_w * out_h * 3);

		y[i] = ie_k_prep_value(&imgs[k], &norm, out_w, c, yy, x);
	}
}

cudaError_t
cu_k_prep_images(const cu_prep_image *imgs, int n, int out_h, int out_w, cu_prep_norm norm,
				 float *y, cudaStream_t s)
{
	int64_t		total = (int64_t) n * 3 * out_h * out_w;

	if (total <= 0)
		return cudaSuccess;
	k_prep_images<<<blocks_for(total), THREADS, 0, s>>>(imgs, out_h, out_w, norm, y, total);
	return launched();
}

__global__ static void
k_warp_cubic(const uint8_t *src, int sw, int sh, cu_mat3 mi, uint8_t *dst, int ow, int oh,
			 int rot90, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		ie_k_warp_px(src, sw, sh, &mi, ow, oh, rot90, i, dst + i * 3);
}

cudaError_t
cu_k_warp_cubic(const uint8_t *src, int sw, int sh, cu_mat3 mi, uint8_t *dst, int ow, int oh,
				int rot90, cudaStream_t s)
{
	int64_t		n = (int64_t) ow * oh;

	if (n <= 0)
		return cudaSuccess;
	k_warp_cubic<<<blocks_for(n), THREADS, 0, s>>>(src, sw, sh, mi, dst, ow, oh, rot90, n);
	return launched();
}

__global__ static void
k_rotate180(uint8_t *img, int64_t npix)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < npix / 2;
		 i += (int64_t) gridDim.x * blockDim.x)
		for (int c = 0; c < 3; c++)
		{
			uint8_t		t = img[i * 3 + c];

			img[i * 3 + c] = img[(npix - 1 - i) * 3 + c];
			img[(npix - 1 - i) * 3 + c] = t;
		}
}

cudaError_t
cu_k_rotate180(uint8_t *img, int64_t npix, cudaStream_t s)
{
	if (npix < 2)
		return cudaSuccess;
	k_rotate180<<<blocks_for(npix / 2), THREADS, 0, s>>>(img, npix);
	return launched();
}

__global__ static void
k_to_16(int bf16, const float *x, unsigned short *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
		if (bf16)
			y[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
		else
			y[i] = __half_as_ushort(__float2half_rn(x[i]));
	}
}

__global__ static void
k_from_16(int bf16, const unsigned short *x, float *y, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
		y[i] = bf16 ? __bfloat162float(__ushort_as_bfloat16(x[i])) :
			__half2float(__ushort_as_half(x[i]));
}

extern "C" cudaError_t
cu_k_to_16(int bf16, const float *x, void *y, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	k_to_16<<<blocks_for(n), THREADS, 0, s>>>(bf16, x, (unsigned short *) y, n);
	return launched();
}

extern "C" cudaError_t
cu_k_from_16(int bf16, const void *x, float *y, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	k_from_16<<<blocks_for(n), THREADS, 0, s>>>(bf16, (const unsigned short *) x, y, n);
	return launched();
}
