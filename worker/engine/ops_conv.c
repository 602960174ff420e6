/*
 * ops_conv.c
 *	  ONNX convolution operators: Conv and ConvTranspose (float32, 1 to 3
 *	  spatial dimensions).
 *
 * Conv lowers each group to OpenBLAS sgemm: a 1x1, stride-1, unpadded
 * convolution multiplies the weights by the input directly, in blocks of
 * output columns; any other kernel goes through an im2col buffer
 * (ie_spatial_im2col, spatial.c) built for a band of output rows at a time
 * (at most CONV_COL_BUDGET floats).  Each
 * image of a batch gets its own sgemm calls, and the blocks and bands
 * depend only on the layer's geometry, so a row's result does not depend
 * on the rows batched with it or on the thread count (packing several
 * images' columns into one product makes OpenBLAS choose other kernels,
 * and results then drift by ~1e-6 relative with the batch's composition).
 * Depthwise convolutions (one input channel per group) use a direct loop
 * instead (ie_conv_depthwise_plane, which ConvInteger and QLinearConv also
 * call, ops_quant.c).  A 1x1 convolution of one-pixel images (squeeze-excite) takes
 * the batch's images as the columns of one product, with the same
 * arithmetic per element.  Element-wise nodes fused into the Conv at load (fusion.h) run
 * on each block as soon as it is computed, while it is in cache.
 * ConvTranspose runs the element-wise nodes fused into it (fusion.h) over
 * its finished output, one task per plane.
 * ConvTranspose is sgemm (weights transposed times input) followed by
 * col2im.  Every problem is handled as 3-D, with missing leading spatial
 * dimensions of extent 1.
 *
 * Threading: no state outside the call.  The (image, group, block) tasks
 * and the depthwise planes run on the engine's pool (pool.h) over
 * ctx->n_threads threads, each calling OpenBLAS serially; scratch (im2col
 * bands, padded planes) is per thread (ie_thread_scratch).
 */
#include <cblas.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/fusion.h"
#include "worker/engine/gemm_direct.h"
#include "worker/engine/pool.h"
#include "worker/engine/spatial.h"

/* Upper bound on the floats of one im2col band (2 MiB: stays in L2/L3). */
#define CONV_COL_BUDGET (512 * 1024)

/* Geometry of one convolution: channels plus the shared window geometry. */
typedef struct conv_geom
{
	int64_t		n;				/* batch */
	int64_t		c;				/* input channels */
	int64_t		m;				/* output channels */
	int64_t		group;
	ie_spatial	sp;				/* spatial axes padded to 3 (depth, h, w) */
	int64_t		out_pad[3];		/* ConvTranspose output_padding */
} conv_geom;

/*
 * Reads kernel_shape, strides, dilations and pads into g for the node's
 * nsp spatial axes (the last nsp of the 3 slots), checking their lengths.
 * The kernel extents come from the weights (wdims, spatial part).
 */
static int
conv_read_attrs(ie_node_ctx *ctx, conv_geom *g, int nsp, const int64_t *wdims)
{
	ie_spatial_init(&g->sp, nsp);
	for (int i = 0; i < 3; i++)
		g->out_pad[i] = 0;
	if (ie_spatial_read_kernel(ctx, &g->sp, wdims) != 0)
		return -1;
	return ie_spatial_read_attrs(ctx, &g->sp);
}

/* Checks that input i is a float tensor; what names it in the error. */
static int
conv_check_float(ie_node_ctx *ctx, int i, const char *what)
{
	const ie_tensor *t = ctx->inputs[i];

	if (t->dtype != IE_FLOAT)
		return ie_op_error(ctx, "unsupported %s type %s (only float)", what,
						   ie_dtype_name(t->dtype));
	return 0;
}

/*
 * The inputs of Conv and ConvTranspose: X and W float of equal rank 3..5
 * (1 to 3 spatial axes), the optional bias B float or NULL.
 */
static int
conv_inputs(ie_node_ctx *ctx, const ie_tensor **X, const ie_tensor **W,
			const ie_tensor **B)
{
	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs X and W");
	*X = ctx->inputs[0];
	*W = ctx->inputs[1];
	*B = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	if (conv_check_float(ctx, 0, "input") || conv_check_float(ctx, 1, "weight") ||
		(*B != NULL && conv_check_float(ctx, 2, "bias")))
		return -1;
	if ((*X)->ndim < 3 || (*X)->ndim > 5)
		return ie_op_error(ctx, "unsupported input rank %d (1 to 3 spatial axes)",
						   (*X)->ndim);
	if ((*W)->ndim != (*X)->ndim)
		return ie_op_error(ctx, "weight rank %d differs from input rank %d",
						   (*W)->ndim, (*X)->ndim);
	return 0;
}

/*
 * Allocates output 0, [n, m, out...] float, zeroed when zero is set, and
 * sets ctx->outputs[0]; NULL after ie_op_error when memory runs out.
 */
static ie_tensor *
conv_output(ie_node_ctx *ctx, const conv_geom *g, int zero)
{
	int64_t		odims[IE_MAX_DIMS];
	ie_tensor  *Y;

	ie_spatial_out_dims(&g->sp, g->n, g->m, odims);
	Y = zero ? ie_tensor_new(IE_FLOAT, g->sp.nsp + 2, odims) :
		ie_tensor_new_uninit(IE_FLOAT, g->sp.nsp + 2, odims);
	if (Y == NULL)
	{
		ie_op_error(ctx, "out of memory for the output");
		return NULL;
	}
	ctx->outputs[0] = Y;
	return Y;
}

/*
 * The interior of a stride-1 depthwise row, where every tap is in range:
 * dst[ox] = bias + sum_t w[t] * row[t][ox + xoff[t]] for ox in [lo, hi),
 * VW outputs at a time in registers (GCC/clang vector extensions).  Two
 * builds: AVX2+FMA, chosen at run time when the CPU has it, and baseline
 * SSE2.  Returns the first ox it did not do (hi unless hi - lo < VW).
 */
typedef float v8sf __attribute__((vector_size(32)));
typedef float v4sf __attribute__((vector_size(16)));

#define DW_INTERIOR(name, attr, vtype, VW) \
attr static int64_t \
name(float *dst, const float *const *row, const float *w, \
	 const int64_t *xoff, int ntap, float bias, int64_t lo, int64_t hi) \
{ \
	int64_t		ox = lo; \
\
	for (; ox + 2 * VW <= hi; ox += 2 * VW) \
	{ \
		vtype		a0 = (vtype) {0} + bias, \
					a1 = a0; \
\
		for (int t = 0; t < ntap; t++) \
		{ \
			vtype		x0, \
						x1; \
			const float *p = row[t] + ox + xoff[t]; \
\
			memcpy(&x0, p, sizeof(x0)); \
			memcpy(&x1, p + VW, sizeof(x1)); \
			a0 += w[t] * x0; \
			a1 += w[t] * x1; \
		} \
		memcpy(dst + ox, &a0, sizeof(a0)); \
		memcpy(dst + ox + VW, &a1, sizeof(a1)); \
	} \
	/* the last < 2*VW: one vector, then one ending at hi (overlapping \
	 * outputs are recomputed by the same sums, so they do not change) */ \
	while (ox < hi && hi - lo >= VW) \
	{ \
		int64_t		at = ox + VW <= hi ? ox : hi - VW; \
		vtype		a0 = (vtype) {0} + bias; \
\
		for (int t = 0; t < ntap; t++) \
		{ \
			vtype		x0; \
\
			memcpy(&x0, row[t] + at + xoff[t], sizeof(x0)); \
			a0 += w[t] * x0; \
		} \
		memcpy(dst + at, &a0, sizeof(a0)); \
		ox = at + VW; \
	} \
	return ox; \
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
DW_INTERIOR(dw_interior_avx2, __attribute__((target("avx2,fma"))), v8sf, 8)
#endif
DW_INTERIOR(dw_interior_base, , v4sf, 4)

/* Whether the AVX2 build of the interior may run here (checked once). */
static int
dw_have_avx2(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
	return 0;
#endif
}

/*
 * One output row of a depthwise convolution: dst[ox] = bias + sum over the
 * ntap taps t of w[t] * row[t][ox * sx + xoff[t]], input columns outside
 * [0, in_w) reading as zero.  The interior, where every tap is in range,
 * goes to the vector kernel with irow/ixoff: the same taps expressed as
 * stride 1 (for sx > 1 they point into column-phase planes).
 */
static void
dw_row(float *dst, int64_t ow, const float *const *row, const float *w,
	   const int64_t *xoff, const float *const *irow, const int64_t *ixoff,
	   int ntap, int64_t sx, int64_t in_w, float bias, int avx2)
{
	int64_t		lo = 0,
				hi = ow,
				ox;

	for (int t = 0; t < ntap; t++)
	{
		int64_t		l,
					h;

		if (sx == 1)			/* no division on the common path */
		{
			l = xoff[t] >= 0 ? 0 : -xoff[t];
			h = in_w - xoff[t] <= 0 ? 0 : in_w - xoff[t];
		}
		else
		{
			l = xoff[t] >= 0 ? 0 : (-xoff[t] + sx - 1) / sx;
			h = in_w - xoff[t] <= 0 ? 0 : (in_w - xoff[t] + sx - 1) / sx;
		}
		if (l > lo)
			lo = l;
		if (h < hi)
			hi = h;
	}
	if (hi < lo)
		hi = lo;
	if (lo > ow)
		lo = hi = ow;
	for (ox = 0; ox < ow; ox++)
	{
		float		acc;

		if (ox == lo)
		{
			ox = hi;			/* the interior is done below */
			if (ox >= ow)
				break;
		}
		acc = bias;
		for (int t = 0; t < ntap; t++)
		{
			int64_t		ix = ox * sx + xoff[t];

			if (ix >= 0 && ix < in_w)
				acc += w[t] * row[t][ix];
		}
		dst[ox] = acc;
	}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (avx2)
		ox = dw_interior_avx2(dst, irow, w, ixoff, ntap, bias, lo, hi);
	else
#endif
		ox = dw_interior_base(dst, irow, w, ixoff, ntap, bias, lo, hi);
	for (; ox < hi; ox++)
	{
		float		acc = bias;

		for (int t = 0; t < ntap; t++)
			acc += w[t] * irow[t][ox + ixoff[t]];
		dst[ox] = acc;
	}
}

/* floor(a / b) for b > 0. */
static inline int64_t
floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define DW_AVX512 1

/*
 * One output row of the padded depthwise path with AVX-512: dst[ox] =
 * bias + sum_t w[t] * base[off[t] + ox] for ox in [0, ow), 32 outputs per
 * step in two vectors (fused multiply-adds, taps in order), the last ones
 * under a lane mask.  Every output is computed the same way wherever it
 * sits in the row.
 */
__attribute__((target("avx512f"))) static void
dw_row_avx512(float *dst, const float *base, const int64_t *off, const float *w,
			  int ntap, float bias, int64_t ow)
{
	for (int64_t ox = 0; ox < ow; ox += 32)
	{
		int64_t		left = ow - ox;
		__mmask16	m0 = left >= 16 ? 0xffff : (__mmask16) ((1u << left) - 1);
		__mmask16	m1 = left >= 32 ? 0xffff : left <= 16 ? 0 :
			(__mmask16) ((1u << (left - 16)) - 1);
		__m512		a0 = _mm512_set1_ps(bias),
					a1 = a0;

		if (left >= 32)
		{
			/* a full step: plain loads and stores (AMD's cores run
			 * masked stores far slower); same arithmetic */
			for (int t = 0; t < ntap; t++)
			{
				const float *p = base + off[t] + ox;
				__m512		wt = _mm512_set1_ps(w[t]);

				a0 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p), a0);
				a1 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p + 16), a1);
			}
			_mm512_storeu_ps(dst + ox, a0);
			_mm512_storeu_ps(dst + ox + 16, a1);
			continue;
		}
		for (int t = 0; t < ntap; t++)
		{
			const float *p = base + off[t] + ox;
			__m512		wt = _mm512_set1_ps(w[t]);

			a0 = _mm512_fmadd_ps(wt, _mm512_maskz_loadu_ps(m0, p), a0);
			a1 = _mm512_fmadd_ps(wt, _mm512_maskz_loadu_ps(m1, p + 16), a1);
		}
		_mm512_mask_storeu_ps(dst + ox, m0, a0);
		_mm512_mask_storeu_ps(dst + ox + 16, m1, a1);
	}
}

/* Whether the AVX-512 row kernel may run here (checked once). */
static bool
dw_have_avx512(void)
{
	static int	cached = -1;

	if (cached < 0)
		cached = __builtin_cpu_supports("avx512f") ? 1 : 0;
	return cached == 1;
}
#endif

/*
 * Whether a depthwise plane of geometry g takes dw_plane_padded: 2-D (one
 * input, kernel and output slice on the leading axis, unpadded there: a
 * 3-D layer of depth 1 padded in depth has other output slices, which
 * dw_plane_padded does not lay out), column stride 1 (any row stride), at
 * most 64 taps.
 */
static bool
dw_padded_applies(const ie_spatial *g)
{
	return g->k[0] == 1 && g->in[0] == 1 && g->out[0] == 1 &&
		g->pad_begin[0] == 0 && g->stride[2] == 1 && g->k[1] * g->k[2] <= 64;
}

/*
 * The shape of the scratch (this thread's, floats) ie_conv_depthwise_plane
 * takes for a plane of geometry g, into dims: [rows read, columns read] of
 * dw_plane_padded's zero-bordered plane, or [phases, rows, columns] of the
 * column phases of a column stride over 1.  Returns its rank; 0 when it
 * takes none.  op_conv checks it against the tensor limit before the
 * planes' tasks start.
 */
int
ie_conv_depthwise_scratch(const ie_spatial *g, int64_t dims[3])
{
	int64_t		sx = g->stride[2];

	if (dw_padded_applies(g))
	{
		dims[0] = (g->out[1] - 1) * g->stride[1] + (g->k[1] - 1) * g->dil[1] + 1;
		dims[1] = (g->out[2] - 1) + (g->k[2] - 1) * g->dil[2] + 1;
		return 2;
	}
	if (sx == 1)
		return 0;
	dims[0] = sx;
	dims[1] = g->in[0] * g->in[1];
	/* ceil(in_w / sx) as in ie_spatial_im2col: sx may be near INT64_MAX */
	dims[2] = g->in[2] == 0 ? 0 : 1 + (g->in[2] - 1) / sx;
	return 3;
}

/*
 * The common depthwise case (dw_padded_applies): the plane is copied into a
 * zero-bordered buffer (this thread's scratch) so that every tap of every
 * output is in range, and each output row is one pass of the vector kernel
 * with the same tap list.  Out-of-range taps add w * 0, so results equal
 * the general path's.  Returns -1 when memory runs out.
 */
static int
dw_plane_padded(const ie_spatial *g, const float *x, const float *w,
				const float *b, int64_t mult, float *y, int avx2)
{
	int64_t		kh = g->k[1],
				kw = g->k[2];
	int64_t		pt = g->pad_begin[1],
				pl = g->pad_begin[2];
	int64_t		ih = g->in[1],
				iw = g->in[2];
	int64_t		oh = g->out[1],
				ow = g->out[2];
	int64_t		sy = g->stride[1];
	int64_t		pd[3];
	int64_t		ph,
				pw;
	int			ntap = (int) (kh * kw);
	const float *row[64];
	int64_t		xoff[64];
	float	   *pad;

	(void) ie_conv_depthwise_scratch(g, pd);
	ph = pd[0];					/* rows read */
	pw = pd[1];					/* columns read */
	pad = ie_thread_scratch((size_t) (ph * pw) * sizeof(float));
	if (pad == NULL)
		return -1;
	for (int64_t r = 0; r < ph; r++)
	{
		int64_t		iy = r - pt;
		float	   *dst = pad + r * pw;
		int64_t		lo = pl,	/* dst columns [lo, hi) come from the input */
					hi = pl + iw < pw ? pl + iw : pw;

		if (iy < 0 || iy >= ih || hi <= lo)
		{
			memset(dst, 0, pw * sizeof(float));
			continue;
		}
		if (lo > 0)
			memset(dst, 0, lo * sizeof(float));
		memcpy(dst + lo, x + iy * iw, (hi - lo) * sizeof(float));
		if (hi < pw)
			memset(dst + hi, 0, (pw - hi) * sizeof(float));
	}
#ifdef DW_AVX512
	if (dw_have_avx512())
	{
		int			t = 0;

		for (int64_t ky = 0; ky < kh; ky++)
			for (int64_t kx = 0; kx < kw; kx++, t++)
				xoff[t] = ky * g->dil[1] * pw + kx * g->dil[2];
		for (int64_t mm = 0; mm < mult; mm++)
			for (int64_t oy = 0; oy < oh; oy++)
				dw_row_avx512(y + (mm * oh + oy) * ow, pad + oy * sy * pw, xoff,
							  w + mm * ntap, ntap, b ? b[mm] : 0.0f, ow);
		return 0;
	}
#endif
	for (int64_t mm = 0; mm < mult; mm++)
	{
		const float *wk = w + mm * ntap;
		float		bias = b ? b[mm] : 0.0f;

		for (int64_t oy = 0; oy < oh; oy++)
		{
			float	   *dst = y + (mm * oh + oy) * ow;
			int64_t		ox;
			int			t = 0;

			for (int64_t ky = 0; ky < kh; ky++)
				for (int64_t kx = 0; kx < kw; kx++, t++)
				{
					row[t] = pad + (oy * sy + ky * g->dil[1]) * pw;
					xoff[t] = kx * g->dil[2];
				}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
			if (avx2)
				ox = dw_interior_avx2(dst, row, wk, xoff, ntap, bias, 0, ow);
			else
#endif
				ox = dw_interior_base(dst, row, wk, xoff, ntap, bias, 0, ow);
			for (; ox < ow; ox++)
			{
				float		acc = bias;

				for (t = 0; t < ntap; t++)
					acc += wk[t] * row[t][ox + xoff[t]];
				dst[ox] = acc;
			}
		}
	}
	return 0;
}

/*
 * Depthwise convolution of one input plane x into the output planes of its
 * mult output channels (weights w [mult, 1, K], bias b or NULL): for each
 * output row, the kernel taps whose input row exists, then dw_row.  With a
 * column stride s > 1 the plane is first split into s column phases
 * (phase p holds columns p, p + s, ...) so the interior runs at stride 1.
 * Returns -1 when memory runs out.
 */
int
ie_conv_depthwise_plane(const ie_spatial *g, const float *x, const float *w,
						const float *b, int64_t mult, float *y)
{
	int64_t		K = g->k[0] * g->k[1] * g->k[2];
	int64_t		ow = g->out[2];
	int64_t		oplane = g->out[0] * g->out[1] * ow;
	int64_t		sx = g->stride[2];
	int64_t		pd[3] = {0, 0, 0};
	int64_t		nrows,
				pw;
	const float **row = NULL;
	const float **irow = NULL;
	float	   *wt = NULL;
	int64_t    *xoff = NULL;
	int64_t    *ixoff = NULL;
	float	   *phase = NULL;
	int			avx2 = dw_have_avx2();
	int			rc = -1;

	if (dw_padded_applies(g))
		return dw_plane_padded(g, x, w, b, mult, y, avx2);
	/* the phases' shape when sx > 1 (unused otherwise) */
	(void) ie_conv_depthwise_scratch(g, pd);
	nrows = pd[1];
	pw = pd[2];
	/* per-tap tables: K is the weight's taps (a tensor the limit bounds), not the input's size */
	row = malloc(sizeof(float *) * K);
	irow = malloc(sizeof(float *) * K);
	wt = malloc(sizeof(float) * K);
	xoff = malloc(sizeof(int64_t) * K);
	ixoff = malloc(sizeof(int64_t) * K);
	if (row == NULL || irow == NULL || wt == NULL || xoff == NULL || ixoff == NULL)
		goto done;
	if (sx > 1)
	{
		phase = ie_thread_scratch((size_t) (sx * nrows * pw) * sizeof(float));
		if (phase == NULL)
			goto done;
		memset(phase, 0, (size_t) (sx * nrows * pw) * sizeof(float));
		for (int64_t p = 0; p < sx; p++)
			for (int64_t r = 0; r < nrows; r++)
			{
				const float *src = x + r * g->in[2] + p;
				float	   *dst = phase + (p * nrows + r) * pw;
				int64_t		n = (g->in[2] - p + sx - 1) / sx;

				for (int64_t j = 0; j < n; j++)
					dst[j] = src[j * sx];
			}
	}
	for (int64_t mm = 0; mm < mult; mm++)
	{
		const float *wk = w + mm * K;
		float	   *yp = y + mm * oplane;
		float		bias = b ? b[mm] : 0.0f;

		for (int64_t oz = 0; oz < g->out[0]; oz++)
			for (int64_t oy = 0; oy < g->out[1]; oy++)
			{
				int			ntap = 0;

				for (int64_t kz = 0; kz < g->k[0]; kz++)
				{
					int64_t		iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dil[0];

					if (iz < 0 || iz >= g->in[0])
						continue;
					for (int64_t ky = 0; ky < g->k[1]; ky++)
					{
						int64_t		iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dil[1];
						int64_t		r = iz * g->in[1] + iy;

						if (iy < 0 || iy >= g->in[1])
							continue;
						for (int64_t kx = 0; kx < g->k[2]; kx++)
						{
							int64_t		xo = kx * g->dil[2] - g->pad_begin[2];

							row[ntap] = x + r * g->in[2];
							wt[ntap] = wk[(kz * g->k[1] + ky) * g->k[2] + kx];
							xoff[ntap] = xo;
							if (sx > 1)
							{
								/* column ox*sx + xo is phase xo mod sx, index ox + xo div sx */
								int64_t		q = floor_div(xo, sx);

								irow[ntap] = phase + ((xo - q * sx) * nrows + r) * pw;
								ixoff[ntap] = q;
							}
							else
							{
								irow[ntap] = row[ntap];
								ixoff[ntap] = xo;
							}
							ntap++;
						}
					}
				}
				dw_row(yp + (oz * g->out[1] + oy) * ow, ow, row, wt, xoff, irow, ixoff,
					   ntap, sx, g->in[2], bias, avx2);
			}
	}
	rc = 0;
done:
	free(row);
	free(irow);
	free(wt);
	free(xoff);
	free(ixoff);
	return rc;
}

/* One depthwise convolution, one task per (image, channel group) plane. */
typedef struct dw_job
{
	const conv_geom *g;
	const float *x;
	const float *w;
	const float *b;
	float	   *y;
	const ie_epilogue *ep;
	int64_t		mult;			/* output channels per input channel */
	int64_t		K;
	int64_t		ipix;
	int64_t		opix;
	atomic_int	failed;
} dw_job;

/* Task p of a dw_job: plane p of n * group, then its epilogue. */
static void
dw_task(void *arg, int64_t p, int worker)
{
	dw_job	   *j = arg;
	const conv_geom *g = j->g;
	int64_t		n = p / g->group;
	int64_t		gi = p % g->group;
	float	   *y = j->y + (n * g->m + gi * j->mult) * j->opix;

	(void) worker;
	if (ie_conv_depthwise_plane(&g->sp, j->x + (n * g->c + gi) * j->ipix,
							 j->w + gi * j->mult * j->K,
							 j->b ? j->b + gi * j->mult : NULL, j->mult, y) != 0)
	{
		atomic_store(&j->failed, 1);
		return;
	}
	if (j->ep != NULL)
		for (int64_t mm = 0; mm < j->mult; mm++)
			ie_epilogue_apply(j->ep, y + mm * j->opix, gi * j->mult + mm, j->opix, 0.0f);
}

/*
 * One sgemm-lowered convolution, split into tasks (image, group, chunk):
 * a chunk is a block of output columns (pointwise) or a band of output
 * rows (im2col).  Chunks depend only on the layer's geometry, never on the
 * batch or the thread count, so a row's result is the same in any batch.
 */
typedef struct gemm_job
{
	const conv_geom *g;
	const float *x;
	const float *w;
	const float *b;
	float	   *y;
	const ie_epilogue *ep;
	const float *ap;			/* packed weights for gemm_direct.h, or NULL */
	int64_t		ap_group;		/* floats of ap per group */
	int64_t		cg,
				mg,
				K,
				ipix,
				opix;
	int			pointwise;
	int64_t		chunk;			/* columns or rows per chunk */
	int64_t		n_chunks;
	atomic_int	failed;
} gemm_job;

/*
 * Task t of a gemm_job: fills the chunk's output with the bias, adds the
 * product of the weights and the input (or its im2col band, built in this
 * thread's scratch buffer), then runs the epilogue on it while it is hot.
 */
static void
gemm_task(void *arg, int64_t t, int worker)
{
	gemm_job   *j = arg;
	const conv_geom *g = j->g;
	int64_t		chunk = t % j->n_chunks;
	int64_t		gi = t / j->n_chunks % g->group;
	int64_t		n = t / j->n_chunks / g->group;
	const float *x = j->x + (n * g->c + gi * j->cg) * j->ipix;
	const float *w = j->w + gi * j->mg * j->cg * j->K;
	float	   *y = j->y + (n * g->m + gi * j->mg) * j->opix;
	int64_t		c0,
				nc;
	const float *bmat;
	int64_t		ldb;

	(void) worker;
	if (j->pointwise)
	{
		c0 = chunk * j->chunk;
		nc = j->opix - c0 < j->chunk ? j->opix - c0 : j->chunk;
		bmat = x + c0;
		ldb = j->ipix;
	}
	else
	{
		int64_t		ow = g->sp.out[2];
		int64_t		rows = g->sp.out[0] * g->sp.out[1];
		int64_t		r0 = chunk * j->chunk;
		int64_t		r1 = r0 + j->chunk < rows ? r0 + j->chunk : rows;
		float	   *col;

		c0 = r0 * ow;
		nc = (r1 - r0) * ow;
		col = ie_thread_scratch((size_t) (j->cg * j->K * nc) * sizeof(float));
		if (col == NULL)
		{
			atomic_store(&j->failed, 1);
			return;
		}
		ie_spatial_im2col(&g->sp, x, j->cg, r0, r1, col, nc);
		bmat = col;
		ldb = nc;
	}
	if (j->ap != NULL)
	{
		/* the direct kernel writes the product; the bias is added after */
		ie_gd_gemm(j->ap + gi * j->ap_group, j->mg, j->cg * j->K, bmat, ldb, nc,
				   y + c0, j->opix);
		for (int64_t m = 0; m < j->mg; m++)
		{
			float		bv = j->b != NULL ? j->b[gi * j->mg + m] : 0.0f;

			if (j->ep != NULL)
				ie_epilogue_apply(j->ep, y + m * j->opix + c0, gi * j->mg + m, nc, bv);
			else if (bv != 0.0f)
				for (int64_t i = 0; i < nc; i++)
					y[m * j->opix + c0 + i] += bv;
		}
		return;
	}
	/* without an epilogue the bias goes in first and sgemm adds onto it;
	 * with one, the epilogue adds it in its pass over the product */
	if (j->b != NULL && j->ep == NULL)
		for (int64_t m = 0; m < j->mg; m++)
		{
			float	   *p = y + m * j->opix + c0;
			float		bv = j->b[gi * j->mg + m];

			for (int64_t i = 0; i < nc; i++)
				p[i] = bv;
		}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				(int) j->mg, (int) nc, (int) (j->cg * j->K), 1.0f,
				w, (int) (j->cg * j->K), bmat, (int) ldb,
				j->b != NULL && j->ep == NULL ? 1.0f : 0.0f, y + c0, (int) j->opix);
	if (j->ep != NULL)
		for (int64_t m = 0; m < j->mg; m++)
			ie_epilogue_apply(j->ep, y + m * j->opix + c0, gi * j->mg + m, nc,
							  j->b != NULL ? j->b[gi * j->mg + m] : 0.0f);
}

/*
 * Threads worth using for job: all of n_threads unless the layer is too
 * small to pay for the hand-off (~64K multiply-adds per thread).
 */
static int
gemm_threads(int n_threads, const gemm_job *j)
{
	int64_t		work = j->g->n * j->g->m * j->opix * j->cg * j->K;

	if (work < (int64_t) 65536 * n_threads)
		return work / 65536 > 1 ? (int) (work / 65536) : 1;
	return n_threads;
}

/*
 * A 1x1 convolution (group 1) of images of one pixel each, as in a
 * squeeze-excite block: the images become the columns of one product,
 * Y^T [M, N] = W [M, C] x X^T [C, N], so the direct kernel's lanes hold
 * images instead of one lane each.  Every element is the same multiply-add
 * chain over the channels, then the same bias and epilogue steps, as on
 * the per-image path, so results do not change.  Runs on the calling
 * thread (a few thousand multiply-adds); -1 when the scratch ([C + M, N]
 * floats) is over the tensor limit (refusal noted) or memory runs out.
 */
static int
conv_pixel_images(const conv_geom *g, const float *x, const float *w,
				  const float *b, const ie_epilogue *ep, float *y)
{
	int64_t		n = g->n,
				c = g->c,
				m = g->m;
	float	   *xt = NULL;
	float	   *yt;

	if (ie_scratch_fits(IE_FLOAT, 2, (int64_t[]) {c + m, n}))
		xt = ie_thread_scratch((size_t) ((c + m) * n) * sizeof(float));
	if (xt == NULL)
		return -1;
	yt = xt + c * n;
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = 0; k < c; k++)
			xt[k * n + i] = x[i * c + k];
	ie_gd_gemm_rows(w, c, m, c, xt, n, n, yt, n);
	for (int64_t o = 0; o < m; o++)
	{
		float		bv = b != NULL ? b[o] : 0.0f;

		if (ep != NULL)
			ie_epilogue_apply(ep, yt + o * n, o, n, bv);
		else if (bv != 0.0f)
			for (int64_t i = 0; i < n; i++)
				yt[o * n + i] += bv;
		for (int64_t i = 0; i < n; i++)
			y[i * m + o] = yt[o * n + i];
	}
	return 0;
}

/*
 * Conv (opsets 1, 11): Y[N, M, out...] = W[M, C/group, k...] * X[N, C, in...]
 * + B[M].  auto_pad NOTSET/VALID/SAME_UPPER/SAME_LOWER, pads, strides,
 * dilations, group; output extent floor((in + pads - dil*(k-1) - 1)/stride) + 1
 * (spatial.c).
 */
static int
op_conv(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *W,
			   *B;
	conv_geom	g;
	int64_t		cg,
				mg,
				K,
				opix,
				ipix;
	ie_tensor  *Y = NULL;
	const float *xd,
			   *wd,
			   *bd;
	float	   *yd;
	int			pointwise;
	ie_tensor  *packed = NULL;

	if (conv_inputs(ctx, &X, &W, &B) != 0)
		return -1;
	g.n = X->dims[0];
	g.c = X->dims[1];
	g.m = W->dims[0];
	g.group = ie_attr_int(ctx, "group", 1);
	if (g.group < 1 || g.c % g.group != 0 || g.m % g.group != 0)
		return ie_op_error(ctx, "group %lld does not divide channels %lld and %lld",
						   (long long) g.group, (long long) g.c, (long long) g.m);
	if (W->dims[1] != g.c / g.group)
		return ie_op_error(ctx, "weight has %lld input channels, expected %lld",
						   (long long) W->dims[1], (long long) (g.c / g.group));
	if (B != NULL && (B->ndim != 1 || B->dims[0] != g.m))
		return ie_op_error(ctx, "bias must have shape [%lld]", (long long) g.m);
	if (conv_read_attrs(ctx, &g, X->ndim - 2, W->dims + 2) != 0)
		return -1;

	if (ie_spatial_output(ctx, &g.sp, X->dims + 2,
						  ie_attr_string(ctx, "auto_pad", "NOTSET"), 0) != 0)
		return -1;

	Y = conv_output(ctx, &g, 0);
	if (Y == NULL)
		return -1;
	if (ie_tensor_numel(Y) == 0)
		return 0;

	cg = g.c / g.group;
	mg = g.m / g.group;
	K = g.sp.k[0] * g.sp.k[1] * g.sp.k[2];
	opix = g.sp.out[0] * g.sp.out[1] * g.sp.out[2];
	ipix = g.sp.in[0] * g.sp.in[1] * g.sp.in[2];
	/* a non-empty output from no input channels or an empty kernel */
	if (cg == 0 || K == 0)
		return ie_op_error(ctx, "the input has %lld channels per group and the kernel %lld taps: "
						   "nothing to convolve", (long long) cg, (long long) K);
	xd = X->data;
	wd = W->data;
	bd = B ? B->data : NULL;
	yd = Y->data;

	if (cg == 1 && g.group > 1)
	{
		/* depthwise: each input channel feeds mg output channels */
		dw_job		job = {
			.g = &g, .x = xd, .w = wd, .b = bd, .y = yd, .ep = ctx->epilogue,
			.mult = mg, .K = K, .ipix = ipix, .opix = opix, .failed = 0
		};
		int64_t		planes = g.n * g.group;
		int			nt = ctx->n_threads;
		int64_t		sd[3];
		int			snd = ie_conv_depthwise_scratch(&g.sp, sd);

		/* each task's scratch plane, checked here: see ie_scratch_fits */
		if (snd > 0 && !ie_scratch_fits(IE_FLOAT, snd, sd))
			return ie_op_error(ctx, "out of memory for the depthwise input plane");
		/* below ~32K outputs per thread, the hand-off is not worth it */
		if ((int64_t) nt * 32768 > planes * mg * opix)
			nt = (int) (planes * mg * opix / 32768);
		ie_parallel_for(nt, planes, dw_task, &job);
		if (job.failed)
			return ie_op_error(ctx, "out of memory for the depthwise taps");
		return 0;
	}

	pointwise = K == 1 && g.sp.stride[0] == 1 && g.sp.stride[1] == 1 &&
		g.sp.stride[2] == 1 &&
		g.sp.pad_begin[0] + g.sp.pad_begin[1] + g.sp.pad_begin[2] +
		g.sp.pad_end[0] + g.sp.pad_end[1] + g.sp.pad_end[2] == 0;
	/* the product per group: [mg, cg * K] x [cg * K, opix columns] */
	if (ie_op_gemm_fits(ctx, mg, cg * K, opix) != 0)
		return -1;
	{
		gemm_job	job = {
			.g = &g, .x = xd, .w = wd, .b = bd, .y = yd, .ep = ctx->epilogue,
			.cg = cg, .mg = mg, .K = K, .ipix = ipix, .opix = opix,
			.pointwise = pointwise, .failed = 0
		};
		int64_t		units;

		if (pointwise)
		{
			/* column blocks of ~256 KiB of output, a multiple of 64 columns
			 * and at least 512 (measured: narrower blocks cost OpenBLAS
			 * more in packing than they gain in cache) */
			job.chunk = (65536 / (mg > 0 ? mg : 1) + 63) / 64 * 64;
			if (job.chunk < 512)
				job.chunk = 512;
			units = opix;
		}
		else
		{
			int64_t		ow = g.sp.out[2];

			/*
			 * bands of output rows whose im2col fits CONV_COL_BUDGET, or
			 * the tensor limit when that is smaller (ie_scratch_budget)
			 */
			job.chunk = (int64_t) (ie_scratch_budget(CONV_COL_BUDGET * sizeof(float)) /
								   sizeof(float)) / (cg * K * ow);
			if (job.chunk < 1)
				job.chunk = 1;
			units = g.sp.out[0] * g.sp.out[1];
		}
		if (job.chunk > units)
			job.chunk = units;
		job.n_chunks = (units + job.chunk - 1) / job.chunk;
		/* a band's im2col, checked here for the tasks (ie_scratch_fits):
		 * within the budget unless one output row's is more */
		if (!pointwise &&
			!ie_scratch_fits(IE_FLOAT, 2, (int64_t[]) {cg * K, job.chunk * g.sp.out[2]}))
			return ie_op_error(ctx, "out of memory for the im2col buffer");
		if (ie_gd_enabled() && pointwise && opix == 1 && g.group == 1)
		{
			if (conv_pixel_images(&g, xd, wd, bd, ctx->epilogue, yd) != 0)
				return ie_op_error(ctx, "out of memory for the transposed input");
			return 0;
		}
		if (ie_gd_enabled())
		{
			int64_t		pd[1];

			job.ap_group = ie_gd_packed_size(mg, cg * K);
			pd[0] = job.ap_group * g.group;
			packed = ie_tensor_new_uninit(IE_FLOAT, 1, pd);
			if (packed == NULL)
				return ie_op_error(ctx, "out of memory for the packed weights");
			for (int64_t gi = 0; gi < g.group; gi++)
				ie_gd_pack_a(wd + gi * mg * cg * K, cg * K, mg, cg * K,
							 (float *) packed->data + gi * job.ap_group);
			job.ap = packed->data;
		}
		ie_parallel_for(gemm_threads(ctx->n_threads, &job),
						g.n * g.group * job.n_chunks, gemm_task, &job);
		ie_tensor_destroy(&packed);
		if (job.failed)
			return ie_op_error(ctx, "out of memory for the im2col buffer");
	}
	return 0;
}

/*
 * col2im for ConvTranspose: scatters col [mg*K, ipix] (row (m, kz, ky, kx),
 * column an input pixel) into y [mg, out...], adding overlapping taps.
 */
static void
convt_col2im(const ie_spatial *g, const float *col, int64_t mg, float *y)
{
	int64_t		ipix = g->in[0] * g->in[1] * g->in[2];
	int64_t		opix = g->out[0] * g->out[1] * g->out[2];

	for (int64_t m = 0; m < mg; m++)
		for (int64_t kz = 0; kz < g->k[0]; kz++)
			for (int64_t ky = 0; ky < g->k[1]; ky++)
				for (int64_t kx = 0; kx < g->k[2]; kx++)
				{
					const float *src = col + (((m * g->k[0] + kz) * g->k[1] + ky) * g->k[2] + kx) * ipix;
					float	   *dst = y + m * opix;

					for (int64_t iz = 0; iz < g->in[0]; iz++)
					{
						int64_t		oz = iz * g->stride[0] - g->pad_begin[0] + kz * g->dil[0];

						if (oz < 0 || oz >= g->out[0])
							continue;
						for (int64_t iy = 0; iy < g->in[1]; iy++)
						{
							int64_t		oy = iy * g->stride[1] - g->pad_begin[1] + ky * g->dil[1];
							const float *s = src + (iz * g->in[1] + iy) * g->in[2];
							float	   *d;

							if (oy < 0 || oy >= g->out[1])
								continue;
							d = dst + (oz * g->out[1] + oy) * g->out[2];
							for (int64_t ix = 0; ix < g->in[2]; ix++)
							{
								int64_t		ox = ix * g->stride[2] - g->pad_begin[2] + kx * g->dil[2];

								if (ox >= 0 && ox < g->out[2])
									d[ox] += s[ix];
							}
						}
					}
				}
}

/*
 * ConvTranspose whose taps never overlap (2-D, stride equal to the kernel,
 * no padding or dilation, output exactly in * stride): each output pixel is
 * one tap of one input pixel, so per tap (ky, kx) the product
 * W_tap^T [mg, cg] x X [cg, pixels] lands on a strided grid of the output.
 * Tasks are (image, group, tap, band of input rows).
 */
typedef struct ct_job
{
	const conv_geom *g;
	const float *x;
	const float *w;
	const float *b;
	float	   *y;
	int64_t		cg,
				mg,
				rows,			/* input rows per band */
				n_bands;
	atomic_int	failed;
} ct_job;

/*
 * Floats of the scratch a ct_task takes for a band of nc input pixels: the
 * tap's weights A [mg, cg], packed (gemm_direct.h), then the product
 * [mg, nc].  op_conv_transpose checks the largest band's against the
 * tensor limit before the tasks start.
 */
static int64_t
ct_scratch_floats(const ct_job *j, int64_t nc)
{
	return j->mg * j->cg + ie_gd_packed_size(j->mg, j->cg) + j->mg * nc;
}

/* Task t of a ct_job. */
static void
ct_task(void *arg, int64_t t, int worker)
{
	ct_job	   *j = arg;
	const conv_geom *g = j->g;
	int64_t		kh = g->sp.k[1],
				kw = g->sp.k[2],
				K = kh * kw;
	int64_t		ih = g->sp.in[1],
				iw = g->sp.in[2],
				ow = g->sp.out[2];
	int64_t		band = t % j->n_bands;
	int64_t		tap = t / j->n_bands % K;
	int64_t		gi = t / j->n_bands / K % g->group;
	int64_t		n = t / j->n_bands / K / g->group;
	int64_t		r0 = band * j->rows;
	int64_t		r1 = r0 + j->rows < ih ? r0 + j->rows : ih;
	int64_t		nc = (r1 - r0) * iw;
	int64_t		ky = tap / kw,
				kx = tap % kw;
	int64_t		apn = ie_gd_packed_size(j->mg, j->cg);	/* see ct_scratch_floats */
	float	   *a,
			   *ap,
			   *tmp;
	const float *x = j->x + (n * g->c + gi * j->cg) * ih * iw + r0 * iw;

	(void) worker;
	a = ie_thread_scratch((size_t) ct_scratch_floats(j, nc) * sizeof(float));
	if (a == NULL)
	{
		atomic_store(&j->failed, 1);
		return;
	}
	ap = a + j->mg * j->cg;
	tmp = ap + apn;
	/* A_tap[m][c] = W[gi*cg + c][m][ky][kx] */
	for (int64_t m = 0; m < j->mg; m++)
		for (int64_t c = 0; c < j->cg; c++)
			a[m * j->cg + c] = j->w[((gi * j->cg + c) * j->mg + m) * K + tap];
	if (ie_gd_available())
	{
		ie_gd_pack_a(a, j->cg, j->mg, j->cg, ap);
		ie_gd_gemm(ap, j->mg, j->cg, x, ih * iw, nc, tmp, nc);
	}
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
					(int) j->mg, (int) nc, (int) j->cg, 1.0f, a, (int) j->cg,
					x, (int) (ih * iw), 0.0f, tmp, (int) nc);
	for (int64_t m = 0; m < j->mg; m++)
	{
		float		bv = j->b != NULL ? j->b[gi * j->mg + m] : 0.0f;
		float	   *yp = j->y + (n * g->m + gi * j->mg + m) * g->sp.out[1] * ow;

		for (int64_t iy = r0; iy < r1; iy++)
		{
			const float *src = tmp + m * nc + (iy - r0) * iw;
			float	   *dst = yp + (iy * kh + ky) * ow + kx;

			for (int64_t ix = 0; ix < iw; ix++)
				dst[ix * kw] = src[ix] + bv;
		}
	}
}

/* Whether ConvTranspose geometry g has non-overlapping taps (see ct_job). */
static bool
convt_disjoint(const conv_geom *g)
{
	const ie_spatial *sp = &g->sp;

	return sp->k[0] == 1 && sp->in[0] == 1 && sp->out[0] == 1 &&
		sp->stride[1] == sp->k[1] && sp->stride[2] == sp->k[2] &&
		sp->dil[1] == 1 && sp->dil[2] == 1 &&
		sp->pad_begin[1] == 0 && sp->pad_begin[2] == 0 &&
		sp->out[1] == sp->in[1] * sp->k[1] && sp->out[2] == sp->in[2] * sp->k[2] &&
		sp->k[1] * sp->k[2] <= 64;
}

/* The planes of a ConvTranspose output, for its fused epilogue. */
typedef struct cte_job
{
	const ie_epilogue *ep;
	float	   *y;
	int64_t		m,
				opix;
} cte_job;

/* Task p: the epilogue over output plane p (image p / m, channel p % m). */
static void
cte_task(void *arg, int64_t p, int worker)
{
	cte_job    *j = arg;

	(void) worker;
	ie_epilogue_apply(j->ep, j->y + p * j->opix, p % j->m, j->opix, 0.0f);
}

/*
 * Runs the element-wise nodes fused into a ConvTranspose (fusion.h) over
 * its finished output Y [N, m, out...] (bias included), one task per
 * plane; nothing without an epilogue.
 */
static void
convt_epilogue(ie_node_ctx *ctx, ie_tensor *Y, int64_t m)
{
	cte_job		job;

	if (ctx->epilogue == NULL || ie_tensor_numel(Y) == 0)
		return;
	job = (cte_job) {ctx->epilogue, Y->data, m, ie_tensor_numel(Y) / (Y->dims[0] * m)};
	ie_parallel_for(ctx->n_threads, Y->dims[0] * m, cte_task, &job);
}

/*
 * ConvTranspose (opsets 1, 11): X[N, C, in...], W[C, M/group, k...], B[M].
 * out = stride*(in-1) + output_padding + dil*(k-1) + 1 - pads, or the
 * output_shape attribute (padding then derived as the spec says, split by
 * auto_pad: SAME_UPPER puts the extra pad at the end).
 */
static int
op_conv_transpose(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *W,
			   *B;
	conv_geom	g;
	const char *auto_pad;
	const int64_t *v;
	int			n_oshape,
				n;
	const int64_t *oshape = NULL;
	int64_t		cg,
				mg,
				K,
				opix,
				ipix;
	float	   *col = NULL;
	ie_tensor  *Y = NULL;
	const float *xd,
			   *wd,
			   *bd;
	float	   *yd;

	if (conv_inputs(ctx, &X, &W, &B) != 0)
		return -1;
	g.n = X->dims[0];
	g.c = X->dims[1];
	g.group = ie_attr_int(ctx, "group", 1);
	if (g.group < 1 || g.c % g.group != 0)
		return ie_op_error(ctx, "group %lld does not divide channels %lld",
						   (long long) g.group, (long long) g.c);
	if (W->dims[0] != g.c)
		return ie_op_error(ctx, "weight has %lld input channels, expected %lld",
						   (long long) W->dims[0], (long long) g.c);
	g.m = W->dims[1] * g.group;
	if (B != NULL && (B->ndim != 1 || B->dims[0] != g.m))
		return ie_op_error(ctx, "bias must have shape [%lld]", (long long) g.m);
	if (conv_read_attrs(ctx, &g, X->ndim - 2, W->dims + 2) != 0)
		return -1;
	n = ie_attr_ints(ctx, "output_padding", &v);
	if (n >= 0)
	{
		if (n != g.sp.nsp)
			return ie_op_error(ctx, "output_padding has %d values for %d spatial axes",
							   n, g.sp.nsp);
		for (int i = 0; i < n; i++)
			g.out_pad[3 - g.sp.nsp + i] = v[i];
	}
	n_oshape = ie_attr_ints(ctx, "output_shape", &oshape);
	if (n_oshape >= 0)
	{
		/* output_shape may or may not include N and C */
		if (n_oshape == g.sp.nsp + 2)
			oshape += 2;
		else if (n_oshape != g.sp.nsp)
			return ie_op_error(ctx, "output_shape has %d values for %d spatial axes",
							   n_oshape, g.sp.nsp);
	}
	auto_pad = ie_attr_string(ctx, "auto_pad", "NOTSET");
	if (ie_spatial_check_auto_pad(ctx, auto_pad) != 0)
		return -1;

	for (int i = 3 - g.sp.nsp; i < 3; i++)
	{
		int			a = i - (3 - g.sp.nsp);
		int64_t		in = X->dims[2 + a];
		int64_t		ek = g.sp.dil[i] * (g.sp.k[i] - 1) + 1;
		int64_t		full = g.sp.stride[i] * (in - 1) + g.out_pad[i] + ek;

		g.sp.in[i] = in;
		if (strcmp(auto_pad, "VALID") == 0)
			g.sp.pad_begin[i] = g.sp.pad_end[i] = 0;
		if (oshape != NULL || auto_pad[0] == 'S')
		{
			int64_t		want = oshape != NULL ? oshape[a] : in * g.sp.stride[i];
			int64_t		total = full - want;

			if (total < 0)
				total = 0;	/* extra output beyond the taps stays zero + bias */
			ie_spatial_split_pad(total, strcmp(auto_pad, "SAME_UPPER") == 0,
								 &g.sp.pad_begin[i], &g.sp.pad_end[i]);
			g.sp.out[i] = want;
		}
		else
			g.sp.out[i] = full - g.sp.pad_begin[i] - g.sp.pad_end[i];
		if (g.sp.out[i] < 1)
			return ie_op_error(ctx, "output extent %lld is not positive", (long long) g.sp.out[i]);
	}

	/* the disjoint path's product per tap: [mg, cg] x [cg, input rows by ih * iw] */
	if (convt_disjoint(&g) && ie_tensor_numel(X) > 0 &&
		ie_op_gemm_fits(ctx, g.m / g.group, g.c / g.group, g.sp.in[1] * g.sp.in[2]) != 0)
		return -1;
	if (convt_disjoint(&g) && ie_tensor_numel(X) > 0)
	{
		ct_job		job = {
			.g = &g, .x = X->data, .w = W->data, .b = B ? B->data : NULL,
			.cg = g.c / g.group, .mg = g.m / g.group, .failed = 0
		};
		int64_t		taps = g.sp.k[1] * g.sp.k[2];
		int64_t		band_rows;

		Y = conv_output(ctx, &g, 0);
		if (Y == NULL)
			return -1;
		job.y = Y->data;
		/* bands of about 4096 input pixels */
		job.rows = (4096 + g.sp.in[2] - 1) / g.sp.in[2];
		job.n_bands = (g.sp.in[1] + job.rows - 1) / job.rows;
		/* the largest band's scratch, checked here for the tasks */
		band_rows = job.rows < g.sp.in[1] ? job.rows : g.sp.in[1];
		if (!ie_scratch_fits(IE_FLOAT, 1,
							 (int64_t[]) {ct_scratch_floats(&job, band_rows * g.sp.in[2])}))
			return ie_op_error(ctx, "out of memory for the transposed product");
		ie_parallel_for(ctx->n_threads, g.n * g.group * taps * job.n_bands, ct_task, &job);
		if (job.failed)
			return ie_op_error(ctx, "out of memory for the transposed product");
		convt_epilogue(ctx, Y, g.m);
		return 0;
	}
	Y = conv_output(ctx, &g, 1);
	if (Y == NULL)
		return -1;
	if (ie_tensor_numel(Y) == 0 || ie_tensor_numel(X) == 0)
		goto bias;

	cg = g.c / g.group;
	mg = g.m / g.group;
	K = g.sp.k[0] * g.sp.k[1] * g.sp.k[2];
	opix = g.sp.out[0] * g.sp.out[1] * g.sp.out[2];
	ipix = g.sp.in[0] * g.sp.in[1] * g.sp.in[2];
	xd = X->data;
	wd = W->data;
	yd = Y->data;
	col = ie_scratch_new(IE_FLOAT, 2, (int64_t[]) {mg * K, ipix});
	if (col == NULL)
		return ie_op_error(ctx, "out of memory for the col2im buffer");
	for (int64_t n = 0; n < g.n; n++)
		for (int64_t gi = 0; gi < g.group; gi++)
		{
			/* col [mg*K, ipix] = W_g^T ([cg, mg*K])^T x X_g [cg, ipix] */
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
						(int) (mg * K), (int) ipix, (int) cg, 1.0f,
						wd + gi * cg * mg * K, (int) (mg * K),
						xd + (n * g.c + gi * cg) * ipix, (int) ipix, 0.0f,
						col, (int) ipix);
			convt_col2im(&g.sp, col, mg, yd + (n * g.m + gi * mg) * opix);
		}
	free(col);
bias:
	bd = B ? B->data : NULL;
	if (bd != NULL)
	{
		opix = g.sp.out[0] * g.sp.out[1] * g.sp.out[2];
		yd = Y->data;
		for (int64_t n = 0; n < g.n; n++)
			for (int64_t m = 0; m < g.m; m++)
			{
				float	   *p = yd + (n * g.m + m) * opix;

				for (int64_t i = 0; i < opix; i++)
					p[i] += bd[m];
			}
	}
	convt_epilogue(ctx, Y, g.m);
	return 0;
}

const ie_op_def ie_ops_conv[] = {
	{"Conv", op_conv},
	{"ConvTranspose", op_conv_transpose},
	{NULL, NULL}
};

/* Conv's and ConvTranspose's auto_pad: run by the loader on every node. */
static int
conv_check_attrs(ie_node_ctx *ctx)
{
	return ie_spatial_check_auto_pad(ctx, ie_attr_string(ctx, "auto_pad", "NOTSET"));
}

const ie_op_def ie_op_checks_conv[] = {
	{"Conv", conv_check_attrs},
	{"ConvTranspose", conv_check_attrs},
	{NULL, NULL}
};
