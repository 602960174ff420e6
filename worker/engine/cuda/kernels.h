/*
 * kernels.h
 *	  The CUDA kernels of the engine (kernels.cu) behind C launchers, for
 *	  ops.c.  Each launcher queues its kernel on stream s and returns the
 *	  launch status (cudaSuccess, or the error cudaGetLastError reports);
 *	  errors inside a kernel surface at the next synchronisation.
 *
 * Tensors are row-major; an operator's tensor is viewed as [outer, n, inner]
 * around its axis where that is all a kernel needs.  float is the only
 * arithmetic type (half and bfloat16 are only converted to and from); the
 * copy kernels work on any element size (1, 2, 4, 8).
 */
#ifndef IE_CUDA_KERNELS_H
#define IE_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C"
{
#endif

#define CU_KMAXD 8

/* Binary operators (ONNX Add, Sub, Mul, Div, Pow, Max, Min). */
enum
{
	CU_ADD, CU_SUB, CU_MUL, CU_DIV, CU_POW, CU_MAX, CU_MIN
};

/*
 * Output dims (nd of them) and, per output dim, the element stride of a
 * and of b (0 where that input is broadcast along it).
 */
typedef struct cu_bcast
{
	int			nd;
	int64_t		dims[CU_KMAXD];
	int64_t		sa[CU_KMAXD];
	int64_t		sb[CU_KMAXD];
} cu_bcast;

/* y[i] = a[..] op b[..] for the n = prod(bc->dims) outputs. */
cudaError_t cu_k_binary(int op, const float *a, const float *b, float *y,
						cu_bcast bc, int64_t n, cudaStream_t s);

/*
 * Unary operators; p0, p1: alpha/beta (HardSigmoid), min/max (Clip), alpha
 * (LeakyRelu).  CU_GELU and CU_GELU_TANH: Gelu-20's two forms.
 */
enum
{
	CU_RELU, CU_SIGMOID, CU_TANH, CU_SQRT, CU_ERF, CU_EXP, CU_LOG, CU_NEG, CU_ABS,
	CU_HARDSIGMOID, CU_CLIP, CU_HARDSWISH, CU_LEAKYRELU, CU_RECIPROCAL, CU_FLOOR,
	CU_CEIL, CU_GELU, CU_GELU_TANH
};

/* y[i] = op(x[i]), n elements (y may be x). */
cudaError_t cu_k_unary(int op, const float *x, float *y, int64_t n, float p0, float p1,
					   cudaStream_t s);

/* Inference BatchNormalization on [outer, C, inner]. */
cudaError_t cu_k_batchnorm(const float *x, float *y, int64_t outer, int64_t C, int64_t inner,
						   const float *scale, const float *bias, const float *mean,
						   const float *var, float eps, cudaStream_t s);

/* y[o, c, i] += bias[c] on [outer, C, inner]. */
cudaError_t cu_k_bias(float *y, int64_t outer, int64_t C, int64_t inner,
					  const float *bias, cudaStream_t s);

/* Reductions of [outer, r, inner] into [outer, inner]. */
enum
{
	CU_RSUM, CU_RMEAN, CU_RMAX, CU_RMIN
};
cudaError_t cu_k_reduce(int op, const float *x, float *y, int64_t outer, int64_t r,
						int64_t inner, cudaStream_t s);

/* Softmax (or LogSoftmax when log) over n of [outer, n, inner]. */
cudaError_t cu_k_softmax(const float *x, float *y, int64_t outer, int64_t n, int64_t inner,
						 int log, cudaStream_t s);

/*
 * Attention's scores between its two products (ONNX Attention, opsets 23
 * to 25; ops_attention.c is the CPU version): s holds [B, Hq, Sq, T]
 * scaled products Q K^T; each row (b, h, i) gets softcap (when > 0), the
 * bias (mask: bool, 0 or -inf, or float, added, with element strides mst
 * for batch, head and query row and its last axis contiguous and T long;
 * -inf where is_causal forbids key k > i or outside the window
 * left/right, -1 unbounded) and is replaced by its softmax, or by zeros
 * where the bias is -inf throughout.
 */
typedef struct cu_attn
{
	int64_t		Hq,
				Sq,
				T;
	const void *mask;			/* NULL: none */
	int			mask_bool;
	int64_t		mst[3];
	int			causal;
	int64_t		left,
				right;
	float		softcap;
} cu_attn;

cudaError_t cu_k_attn_softmax(float *s, int64_t rows, cu_attn p, cudaStream_t st);

/*
 * LayerNormalization of rows of n: (x - mean) / sqrt(var + eps) * scale + bias
 * (bias may be NULL), mean and var over the row.
 */
cudaError_t cu_k_layernorm(const float *x, float *y, int64_t rows, int64_t n,
						   const float *scale, const float *bias, float eps,
						   cudaStream_t s);

/*
 * A strided copy: for output index i with digits idx[d] over dims (row-
 * major), y[i] = x[base + sum_d idx[d] * st[d]].  Transpose, Slice and
 * broadcasting copies (Expand) are all this.
 */
typedef struct cu_strided
{
	int			nd;
	int64_t		dims[CU_KMAXD];
	int64_t		st[CU_KMAXD];
	int64_t		base;
} cu_strided;
cudaError_t cu_k_strided(size_t esize, const void *x, void *y, cu_strided sp, int64_t n,
						 cudaStream_t s);

/* Gather: y[o, j, i] = x[o, idx[j], i]; idx already checked and non-negative. */
cudaError_t cu_k_gather(size_t esize, const void *x, void *y, const int64_t *idx,
						int64_t outer, int64_t nidx, int64_t an, int64_t inner,
						cudaStream_t s);

/* Cast between float, int32, int64 (ONNX type codes); -1 for another pair. */
cudaError_t cu_k_cast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t s);

/*
 * Resize of [NC, H, W] to [NC, OH, OW], nearest neighbour, asymmetric
 * coordinates, floor: y = x[min(floor(oy / sh), H - 1), ...].
 */
cudaError_t cu_k_resize_nearest(const float *x, float *y, int64_t nc, int64_t h, int64_t w,
								int64_t oh, int64_t ow, float sh, float sw, cudaStream_t s);

/*
 * 16-bit conversions for the FP16/BF16 matrix products (docs/gpu.md
 * "Precision"): y[i] = x[i] rounded to IEEE half (bf16 == 0) or bfloat16
 * (bf16 != 0), round to nearest even (overflow to half gives +-inf), and
 * back, exactly, to float.  y holds n 2-byte elements.
 */
cudaError_t cu_k_to_16(int bf16, const float *x, void *y, int64_t n, cudaStream_t s);
cudaError_t cu_k_from_16(int bf16, const void *x, float *y, int64_t n, cudaStream_t s);

/*
 * A 2-D window over [N, C, H, W] (NCHW): pooling and depthwise convolution.
 * Output [N, C, oh, ow]; output (oy, ox) reads input rows oy * sy - py +
 * ky * dy, columns ox * sx - px + kx * dx, for ky < kh, kx < kw.
 */
typedef struct cu_window
{
	int64_t		n,
				c,
				h,
				w,
				oh,
				ow;
	int			kh,
				kw,
				sy,
				sx,
				py,
				px,
				dy,
				dx;
} cu_window;

/* Pooling kinds: max (NaN propagates), average over the window's positions
 * inside the input, average over the whole window (count_include_pad). */
enum
{
	CU_POOL_MAX, CU_POOL_AVG, CU_POOL_AVG_PAD
};

/* MaxPool / AveragePool (ONNX), 2-D. */
cudaError_t cu_k_pool2d(int kind, const float *x, float *y, cu_window win, cudaStream_t s);

/*
 * Depthwise convolution (Conv with group == C, one input channel per
 * group, multiplier m = output channels / C): y[n, co] = sum over the
 * window of x[n, co / m] * w[co, 0, ky, kx] (+ bias[co] when bias is not
 * NULL); win.c is the output channel count, win.h, win.w the input's.
 */
cudaError_t cu_k_depthwise(const float *x, const float *w, const float *bias, float *y,
						   cu_window win, int mult, cudaStream_t s);

/*
 * Image preprocessing (ie_model_run_images, engine.h).  One image of a
 * batch: its 8-bit RGB pixels, interleaved, in device memory at src,
 * width x height, resized to resize_w x resize_h.
 */
typedef struct cu_prep_image
{
	const uint8_t *src;
	int			width;
	int			height;
	int			resize_w;
	int			resize_h;
} cu_prep_image;

/* The normalisation: (v / 255 - mean[c]) / std[c], c in the output's order. */
typedef struct cu_prep_norm
{
	float		mean[3];
	float		std[3];
	int			bgr;			/* output channel c reads source channel 2 - c */
	float		pad;			/* outside the resized image */
} cu_prep_norm;

/*
 * y: [n, 3, out_h, out_w] float; image k resized (cv::resize INTER_LINEAR
 * on 8-bit pixels, bit for bit as worker/preprocess.c's pre_resize),
 * normalised and placed top-left, the rest pad (pre_normalize_chw).
 * imgs: n descriptors in device memory.
 */
cudaError_t cu_k_prep_images(const cu_prep_image *imgs, int n, int out_h, int out_w,
							 cu_prep_norm norm, float *y, cudaStream_t s);

/* A 3x3 matrix, row-major, passed by value to a kernel. */
typedef struct cu_mat3
{
	double		m[9];
} cu_mat3;

/*
 * dst = src (sw x sh, 8-bit RGB) warped by the perspective map whose
 * inverse is mi, ow x oh (warp_cubic.h, ie_warp_cubic_px), then turned 90
 * degrees counter-clockwise when rot90 (dst is then oh wide, ow high).
 */
cudaError_t cu_k_warp_cubic(const uint8_t *src, int sw, int sh, cu_mat3 mi, uint8_t *dst,
							int ow, int oh, int rot90, cudaStream_t s);

/* img (npix 8-bit RGB pixels) turned by 180 degrees in place. */
cudaError_t cu_k_rotate180(uint8_t *img, int64_t npix, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif							/* IE_CUDA_KERNELS_H */
