/*
 * ops_conv.c
 *	  ONNX convolution operators: Conv and ConvTranspose (float32, 1 to 3
 *	  spatial dimensions).
 *
 * Conv lowers each group to one OpenBLAS sgemm: a 1x1, stride-1, unpadded
 * convolution multiplies the weights by the input directly; any other
 * kernel goes through an im2col buffer built for a band of output rows at a
 * time (so the buffer stays a few MiB even on 736x1088 detection inputs).
 * Each image of a batch gets its own sgemm calls, so a row's result does not
 * depend on the rows batched with it (packing several images' columns into
 * one product makes OpenBLAS choose other kernels, and results then drift
 * by ~1e-6 relative with the batch's composition).
 * Depthwise convolutions (one input channel per group) use a direct loop
 * instead.  ConvTranspose is sgemm (weights transposed times input) followed
 * by col2im.  Every problem is handled as 3-D, with missing leading spatial
 * dimensions of extent 1.
 *
 * Threading: no state outside the call; OpenBLAS uses its own threads, and
 * depthwise convolutions split their channels over ctx->n_threads threads
 * started for the call.  Scratch buffers are allocated per call and freed
 * before returning.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/spatial.h"

/* Most threads a depthwise convolution is split over. */
#define DW_MAX_THREADS 64

/* Upper bound on the floats of one im2col band (16 MiB). */
#define CONV_COL_BUDGET (4 * 1024 * 1024)

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
 * Allocates output 0, [n, m, out...] float, and sets ctx->outputs[0]; NULL
 * after ie_op_error when memory runs out.
 */
static ie_tensor *
conv_output(ie_node_ctx *ctx, const conv_geom *g)
{
	int64_t		odims[IE_MAX_DIMS];
	ie_tensor  *Y;

	ie_spatial_out_dims(&g->sp, g->n, g->m, odims);
	Y = ie_tensor_new(IE_FLOAT, g->sp.nsp + 2, odims);
	if (Y == NULL)
	{
		ie_op_error(ctx, "out of memory for the output");
		return NULL;
	}
	ctx->outputs[0] = Y;
	return Y;
}

/*
 * im2col for output rows [r0, r1) of one image's channel group: col is
 * [cg*K, (r1-r0)*ow] with row stride ld (>= (r1-r0)*ow, so several images
 * can sit side by side), row (c, kz, ky, kx), column (oz, oy, ox)
 * flattened with oz, oy merged into the row index r.  Padding reads as zero.
 */
static void
conv_im2col(const ie_spatial *g, const float *x, int64_t cg, int64_t r0,
			int64_t r1, float *col, int64_t ld)
{
	int64_t		ow = g->out[2];
	int64_t		ncols = ld;
	int64_t		plane = g->in[0] * g->in[1] * g->in[2];

	for (int64_t c = 0; c < cg; c++)
		for (int64_t kz = 0; kz < g->k[0]; kz++)
			for (int64_t ky = 0; ky < g->k[1]; ky++)
				for (int64_t kx = 0; kx < g->k[2]; kx++)
				{
					float	   *dst = col + (((c * g->k[0] + kz) * g->k[1] + ky) * g->k[2] + kx) * ncols;
					int64_t		xoff = kx * g->dil[2] - g->pad_begin[2];
					/* ox range whose input column is inside [0, in_w) */
					int64_t		lo = xoff >= 0 ? 0 : (-xoff + g->stride[2] - 1) / g->stride[2];
					int64_t		hi = g->in[2] - xoff <= 0 ? 0 :
						(g->in[2] - xoff + g->stride[2] - 1) / g->stride[2];

					if (hi > ow)
						hi = ow;
					if (lo > hi)
						lo = hi;
					for (int64_t r = r0; r < r1; r++, dst += ow)
					{
						int64_t		oz = r / g->out[1];
						int64_t		oy = r % g->out[1];
						int64_t		iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dil[0];
						int64_t		iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dil[1];
						const float *src;

						if (iz < 0 || iz >= g->in[0] || iy < 0 || iy >= g->in[1])
						{
							memset(dst, 0, ow * sizeof(float));
							continue;
						}
						src = x + c * plane + (iz * g->in[1] + iy) * g->in[2] + xoff;
						if (lo > 0)
							memset(dst, 0, lo * sizeof(float));
						if (g->stride[2] == 1)
							memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
						else
							for (int64_t ox = lo; ox < hi; ox++)
								dst[ox] = src[ox * g->stride[2]];
						if (hi < ow)
							memset(dst + hi, 0, (ow - hi) * sizeof(float));
					}
				}
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

/*
 * Depthwise convolution of one input plane x into the output planes of its
 * mult output channels (weights w [mult, 1, K], bias b or NULL): for each
 * output row, the kernel taps whose input row exists, then dw_row.  With a
 * column stride s > 1 the plane is first split into s column phases
 * (phase p holds columns p, p + s, ...) so the interior runs at stride 1.
 * Returns -1 when memory runs out.
 */
static int
conv_depthwise_plane(const ie_spatial *g, const float *x, const float *w,
					 const float *b, int64_t mult, float *y)
{
	int64_t		K = g->k[0] * g->k[1] * g->k[2];
	int64_t		ow = g->out[2];
	int64_t		oplane = g->out[0] * g->out[1] * ow;
	int64_t		sx = g->stride[2];
	int64_t		nrows = g->in[0] * g->in[1];
	int64_t		pw = (g->in[2] + sx - 1) / sx;
	const float **row = malloc(sizeof(float *) * K);
	const float **irow = malloc(sizeof(float *) * K);
	float	   *wt = malloc(sizeof(float) * K);
	int64_t    *xoff = malloc(sizeof(int64_t) * K);
	int64_t    *ixoff = malloc(sizeof(int64_t) * K);
	float	   *phase = NULL;
	int			avx2 = dw_have_avx2();
	int			rc = -1;

	if (row == NULL || irow == NULL || wt == NULL || xoff == NULL || ixoff == NULL)
		goto done;
	if (sx > 1)
	{
		phase = calloc((size_t) (sx * nrows * pw), sizeof(float));
		if (phase == NULL)
			goto done;
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
	free(phase);
	return rc;
}

/* One depthwise convolution split over threads by (image, channel). */
typedef struct dw_job
{
	const conv_geom *g;
	const float *x;
	const float *w;
	const float *b;
	float	   *y;
	int64_t		mult;			/* output channels per input channel */
	int64_t		K;
	int64_t		ipix;
	int64_t		opix;
	int64_t		begin;			/* this worker's planes: [begin, end) */
	int64_t		end;
	int			failed;
} dw_job;

/* Thread body: the planes [begin, end) of n * group. */
static void *
dw_worker(void *arg)
{
	dw_job	   *j = arg;
	const conv_geom *g = j->g;

	for (int64_t p = j->begin; p < j->end; p++)
	{
		int64_t		n = p / g->group;
		int64_t		gi = p % g->group;

		if (conv_depthwise_plane(&g->sp, j->x + (n * g->c + gi) * j->ipix,
								 j->w + gi * j->mult * j->K,
								 j->b ? j->b + gi * j->mult : NULL, j->mult,
								 j->y + (n * g->m + gi * j->mult) * j->opix) != 0)
		{
			j->failed = 1;
			break;
		}
	}
	return NULL;
}

/*
 * Runs a depthwise convolution on up to nthreads threads (the caller's
 * thread included), splitting the planes evenly; small problems stay on
 * one thread.  Returns -1 when a worker ran out of memory.
 */
static int
dw_run_parallel(dw_job *job, int nthreads)
{
	int64_t		planes = job->g->n * job->g->group;
	dw_job		jobs[DW_MAX_THREADS];
	pthread_t	tid[DW_MAX_THREADS];
	int			started[DW_MAX_THREADS] = {0};
	int			nt = nthreads;
	int			failed = 0;

	/* below ~64K outputs per thread, thread start-up is not worth it */
	if ((int64_t) nt * 65536 > planes * job->mult * job->opix)
		nt = (int) (planes * job->mult * job->opix / 65536);
	if (nt > DW_MAX_THREADS)
		nt = DW_MAX_THREADS;
	if (nt > planes)
		nt = (int) planes;
	if (nt < 1)
		nt = 1;
	for (int t = 0; t < nt; t++)
	{
		jobs[t] = *job;
		jobs[t].begin = planes * t / nt;
		jobs[t].end = planes * (t + 1) / nt;
	}
	for (int t = 1; t < nt; t++)
		started[t] = pthread_create(&tid[t], NULL, dw_worker, &jobs[t]) == 0;
	for (int t = 1; t < nt; t++)
		if (!started[t])
			dw_worker(&jobs[t]);	/* could not start: do it here */
	dw_worker(&jobs[0]);
	for (int t = 1; t < nt; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
	for (int t = 0; t < nt; t++)
		failed |= jobs[t].failed;
	return failed ? -1 : 0;
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
	float	   *col = NULL;
	ie_tensor  *Y = NULL;
	const float *xd,
			   *wd,
			   *bd;
	float	   *yd;
	float		beta;
	int			pointwise;

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

	Y = conv_output(ctx, &g);
	if (Y == NULL)
		return -1;
	if (ie_tensor_numel(Y) == 0)
		return 0;

	cg = g.c / g.group;
	mg = g.m / g.group;
	K = g.sp.k[0] * g.sp.k[1] * g.sp.k[2];
	opix = g.sp.out[0] * g.sp.out[1] * g.sp.out[2];
	ipix = g.sp.in[0] * g.sp.in[1] * g.sp.in[2];
	xd = X->data;
	wd = W->data;
	bd = B ? B->data : NULL;
	yd = Y->data;

	if (cg == 1 && g.group > 1)
	{
		/* depthwise: each input channel feeds mg output channels */
		dw_job		job = {
			.g = &g, .x = xd, .w = wd, .b = bd, .y = yd, .mult = mg, .K = K,
			.ipix = ipix, .opix = opix, .failed = 0
		};

		if (dw_run_parallel(&job, ctx->n_threads) != 0)
			return ie_op_error(ctx, "out of memory for the depthwise taps");
		return 0;
	}

	pointwise = K == 1 && g.sp.stride[0] == 1 && g.sp.stride[1] == 1 &&
		g.sp.stride[2] == 1 &&
		g.sp.pad_begin[0] + g.sp.pad_begin[1] + g.sp.pad_begin[2] +
		g.sp.pad_end[0] + g.sp.pad_end[1] + g.sp.pad_end[2] == 0;
	/* the bias goes in first; sgemm then accumulates onto it (beta 1) */
	if (bd != NULL)
		for (int64_t n = 0; n < g.n; n++)
			for (int64_t m = 0; m < g.m; m++)
			{
				float	   *p = yd + (n * g.m + m) * opix;
				float		bv = bd[m];

				for (int64_t i = 0; i < opix; i++)
					p[i] = bv;
			}
	beta = bd != NULL ? 1.0f : 0.0f;

	if (pointwise)
	{
		/* pointwise: Y_g = W_g [mg, cg] x X_g [cg, pix] */
		for (int64_t n = 0; n < g.n; n++)
			for (int64_t gi = 0; gi < g.group; gi++)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
							(int) mg, (int) opix, (int) cg, 1.0f,
							wd + gi * mg * cg, (int) cg,
							xd + (n * g.c + gi * cg) * ipix, (int) ipix, beta,
							yd + (n * g.m + gi * mg) * opix, (int) opix);
	}
	else
	{
		int64_t		rows = g.sp.out[0] * g.sp.out[1];
		int64_t		ow = g.sp.out[2];
		int64_t		band = CONV_COL_BUDGET / (cg * K * ow);

		if (band < 1)
			band = 1;
		if (band > rows)
			band = rows;
		col = malloc((size_t) (cg * K * band * ow) * sizeof(float));
		if (col == NULL)
			return ie_op_error(ctx, "out of memory for the im2col buffer");
		for (int64_t n = 0; n < g.n; n++)
			for (int64_t gi = 0; gi < g.group; gi++)
				for (int64_t r0 = 0; r0 < rows; r0 += band)
				{
					int64_t		r1 = r0 + band < rows ? r0 + band : rows;
					int64_t		nc = (r1 - r0) * ow;

					conv_im2col(&g.sp, xd + (n * g.c + gi * cg) * ipix, cg, r0, r1, col, nc);
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
								(int) mg, (int) nc, (int) (cg * K), 1.0f,
								wd + gi * mg * cg * K, (int) (cg * K),
								col, (int) nc, beta,
								yd + (n * g.m + gi * mg) * opix + r0 * ow, (int) opix);
				}
		free(col);
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

	Y = conv_output(ctx, &g);
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
	col = malloc((size_t) (mg * K * ipix) * sizeof(float));
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
	return 0;
}

const ie_op_def ie_ops_conv[] = {
	{"Conv", op_conv},
	{"ConvTranspose", op_conv_transpose},
	{NULL, NULL}
};
