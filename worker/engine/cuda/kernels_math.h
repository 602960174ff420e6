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
#include "worker/engine/resize_linear.h"
#include "worker/engine/warp_cubic.h"

#ifdef __CUDACC__
#define IE_HD __host__ __device__ static inline
#else
#define IE_HD static inline
#endif

/*
 * max and min that keep a NaN of either operand (numpy's maximum and
 * minimum, ONNX Runtime, the CPU backend's Max, Min, ReduceMax and
 * GlobalMaxPool), where fmaxf and fminf drop it.
 */
IE_HD float
ie_k_max(float a, float b)
{
	return (a > b || a != a) ? a : b;
}

IE_HD float
ie_k_min(float a, float b)
{
	return (a < b || a != a) ? a : b;
}

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
		case CU_MAX: return ie_k_max(a, b);
		case CU_MIN: return ie_k_min(a, b);
	}
	return 0.0f;
}

/* op(x) for the unary operators of kernels.h (p0, p1: their parameters). */
IE_HD float
ie_k_unop(int op, float x, float p0, float p1)
{
	switch (op)
	{
		case CU_RELU: return x < 0.0f ? 0.0f : x;	/* NaN stays NaN */
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
		/* GELU (Hendrycks and Gimpel, arXiv 1606.08415; ONNX Gelu-20) */
		case CU_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
		case CU_GELU_TANH:
			return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
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

/*
 * The taps [*k0, *k1) of a window of k taps at output position o (stride
 * s, pad p, dilation d) that fall on input positions 0 .. n - 1: the
 * positions o s - p + t d rise with t, so those inside are one run.
 */
IE_HD void
ie_k_window_taps(int64_t o, int s, int p, int d, int k, int64_t n, int *k0, int *k1)
{
	int64_t		start = o * s - p;
	int			a = 0,
				b = k;

	while (a < b && start + (int64_t) a * d < 0)
		a++;
	while (b > a && start + (int64_t) (b - 1) * d >= n)
		b--;
	*k0 = a;
	*k1 = b;
}

/*
 * Where output element i's window lies in its input plane: the row and
 * column of its first tap (y0, x0; tap t of a row is at x0 + t dx) and the
 * taps [ky0, ky1) x [kx0, kx1) that fall inside the plane.
 */
typedef struct cu_window_at
{
	int64_t		y0,
				x0;
	int			ky0,
				ky1,
				kx0,
				kx1;
} cu_window_at;

IE_HD void
ie_k_window_at(const cu_window *win, int64_t i, cu_window_at *at)
{
	int64_t		ox = i % win->ow,
				oy = (i / win->ow) % win->oh;

	at->y0 = oy * win->sy - win->py;
	at->x0 = ox * win->sx - win->px;
	ie_k_window_taps(oy, win->sy, win->py, win->dy, win->kh, win->h, &at->ky0, &at->ky1);
	ie_k_window_taps(ox, win->sx, win->px, win->dx, win->kw, win->w, &at->kx0, &at->kx1);
}

/*
 * Output element i of a 2-D pooling over win (cu_k_pool2d): the window's
 * maximum (NaN if any is NaN) or average; the window holds at least one
 * input position (pads are smaller than the window).
 */
IE_HD float
ie_k_pool2d_value(int kind, const float *x, const cu_window *win, int64_t i)
{
	const float *p = x + i / (win->ow * win->oh) * win->h * win->w;
	float		acc = kind == CU_POOL_MAX ? -INFINITY : 0.0f;
	cu_window_at at;

	ie_k_window_at(win, i, &at);
	for (int ky = at.ky0; ky < at.ky1; ky++)
	{
		const float *row = p + (at.y0 + (int64_t) ky * win->dy) * win->w;

		for (int kx = at.kx0; kx < at.kx1; kx++)
		{
			float		v = row[at.x0 + (int64_t) kx * win->dx];

			if (kind == CU_POOL_MAX)
				acc = (v > acc || v != v) && acc == acc ? v : acc;
			else
				acc += v;
		}
	}
	if (kind == CU_POOL_AVG)
		return acc / (float) ((at.ky1 - at.ky0) * (at.kx1 - at.kx0));
	if (kind == CU_POOL_AVG_PAD)
		return acc / (float) (win->kh * win->kw);
	return acc;
}

/* Output element i of a depthwise convolution (cu_k_depthwise). */
IE_HD float
ie_k_depthwise_value(const float *x, const float *w, const float *bias, const cu_window *win,
					 int mult, int64_t i)
{
	int64_t		co = (i / (win->ow * win->oh)) % win->c,
				n = i / (win->ow * win->oh * win->c);
	const float *p = x + (n * (win->c / mult) + co / mult) * win->h * win->w;
	const float *k = w + co * win->kh * win->kw;
	float		acc = 0.0f;
	cu_window_at at;

	ie_k_window_at(win, i, &at);
	for (int ky = at.ky0; ky < at.ky1; ky++)
	{
		const float *row = p + (at.y0 + (int64_t) ky * win->dy) * win->w;

		for (int kx = at.kx0; kx < at.kx1; kx++)
			acc += row[at.x0 + (int64_t) kx * win->dx] * k[ky * win->kw + kx];
	}
	return bias != NULL ? acc + bias[co] : acc;
}

/*
 * Channel c of pixel (x, y) of an 8-bit RGB image (w x h, interleaved)
 * resized to rw x rh by cv::resize INTER_LINEAR: a horizontal pass with
 * 22-bit sums, then two rows combined as OpenCV's vector kernel does
 * ((sum >> 4) * beta >> 16 per row, + 2 >> 2, saturated), the arithmetic
 * of worker/preprocess.c's pre_resize.
 */
IE_HD int
ie_k_resize_px(const uint8_t *pix, int w, int h, int rw, int rh, int x, int y, int c)
{
	int			sx,
				ax0,
				ax1,
				sy,
				ay0,
				ay1,
				sx1,
				sy0,
				sy1,
				v;
	const uint8_t *r0,
			   *r1;
	int			b0,
				b1;

	ie_resize_linear_coef(x, w, rw, 1, &sx, &ax0, &ax1);
	ie_resize_linear_coef(y, h, rh, 0, &sy, &ay0, &ay1);
	sx1 = sx + 1 < w ? sx + 1 : sx;
	sy0 = sy < 0 ? 0 : (sy >= h ? h - 1 : sy);
	sy1 = sy + 1 < 0 ? 0 : (sy + 1 >= h ? h - 1 : sy + 1);
	r0 = pix + (size_t) sy0 * (size_t) w * 3;
	r1 = pix + (size_t) sy1 * (size_t) w * 3;
	b0 = r0[(size_t) sx * 3 + c] * ax0 + r0[(size_t) sx1 * 3 + c] * ax1;
	b1 = r1[(size_t) sx * 3 + c] * ax0 + r1[(size_t) sx1 * 3 + c] * ax1;
	v = (((b0 >> 4) * ay0) >> 16) + (((b1 >> 4) * ay1) >> 16);
	v = (v + 2) >> 2;
	return v < 0 ? 0 : (v > 255 ? 255 : v);
}

/*
 * Output element (k, c, y, x) of cu_k_prep_images: image k's resized pixel
 * normalised, or pad outside it (worker/preprocess.c, pre_normalize_chw).
 */
IE_HD float
ie_k_prep_value(const cu_prep_image *im, const cu_prep_norm *nm, int out_w, int c, int y, int x)
{
	int			src_c = nm->bgr ? 2 - c : c;
	int			v;

	(void) out_w;				/* x < out_w: the image is cut on the right */
	if (x >= im->resize_w || y >= im->resize_h)
		return nm->pad;
	v = ie_k_resize_px(im->src, im->width, im->height, im->resize_w,
					   im->resize_h, x, y, src_c);
	return ((float) v / 255.f - nm->mean[c]) / nm->std[c];
}

/*
 * Pixel i (row-major) of cu_k_warp_cubic's output: without rot90 the warp's
 * pixel (x, y) = (i % ow, i / ow); with it, np.rot90's out[r][c] =
 * warp[c][ow - 1 - r] over an output oh wide.
 */
IE_HD void
ie_k_warp_px(const uint8_t *src, int sw, int sh, const cu_mat3 *mi, int ow, int oh, int rot90,
			 int64_t i, uint8_t *out)
{
	int			x,
				y;

	if (rot90)
	{
		int			r = (int) (i / oh),
					c = (int) (i % oh);

		x = ow - 1 - r;
		y = c;
	}
	else
	{
		x = (int) (i % ow);
		y = (int) (i / ow);
	}
	ie_warp_cubic_px(src, sw, sh, mi->m, x, y, out);
}

/*
 * Attention's row `row` ([B, Hq, Sq] flattened), key k: the bias into
 * *bias (0, a float mask's value, or -inf) and the score after softcap
 * plus the bias, from the scaled product v (cu_attn, kernels.h).
 */
IE_HD float
ie_k_attn_score(const cu_attn *p, int64_t row, int64_t k, float v, float *bias)
{
	int64_t		i = row % p->Sq,
				bh = row / p->Sq,
				b = bh / p->Hq,
				h = bh % p->Hq;
	float		bv = 0.0f;

	if (p->mask != NULL)
	{
		int64_t		off = b * p->mst[0] + h * p->mst[1] + i * p->mst[2] + k;

		bv = p->mask_bool ? (((const unsigned char *) p->mask)[off] ? 0.0f : -INFINITY) :
			((const float *) p->mask)[off];
	}
	if ((p->causal && k > i) || (p->left >= 0 && i - k > p->left) ||
		(p->right >= 0 && k - i > p->right))
		bv = -INFINITY;
	if (p->softcap > 0.0f)
		v = p->softcap * tanhf(v / p->softcap);
	*bias = bv;
	return v + bv;
}

#endif							/* IE_CUDA_KERNELS_MATH_H */
