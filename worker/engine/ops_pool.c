/*
 * ops_pool.c
 *	  ONNX pooling operators (float32; MaxPool also int8/uint8):
 *	  GlobalAveragePool, GlobalMaxPool, AveragePool, MaxPool and LpPool over
 *	  1 to 3 spatial axes.
 *
 * Windowed pools are computed as 3-D with missing leading spatial axes of
 * extent 1 (geometry and output extents in spatial.c, shared with Conv).
 * Averages are summed in double.  Global pools of 32K elements and more
 * run on the engine's pool (pool.h), image-major.
 *
 * Threading: no state outside the call.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "worker/engine/pool.h"
#include "worker/engine/spatial.h"

/*
 * Checks the input is float (or, with bytes_ok, int8/uint8) and its rank is
 * within [min_rank, max_rank].
 */
static int
pool_check_input(ie_node_ctx *ctx, int min_rank, int max_rank, int bytes_ok)
{
	const ie_tensor *X;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	X = ctx->inputs[0];
	if (X->dtype != IE_FLOAT &&
		!(bytes_ok && (X->dtype == IE_UINT8 || X->dtype == IE_INT8)))
		return ie_op_error(ctx, "unsupported input type %s (only float)",
						   ie_dtype_name(X->dtype));
	if (X->ndim < min_rank || X->ndim > max_rank)
		return ie_op_error(ctx, "unsupported input rank %d", X->ndim);
	return 0;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POOL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define POOL_VECTORISE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define POOL_CLONES
#define POOL_VECTORISE
#endif

/*
 * The sum of n floats in double: 16 interleaved partial sums, so the adds
 * vectorise and overlap (in double the order changes nothing a float mean
 * can show but, rarely, the last ulp), added pairwise at the end.
 */
POOL_CLONES POOL_VECTORISE static double
plane_sum(const float *x, int64_t n)
{
	double		s[16] = {0};
	int64_t		i = 0;

	for (; i + 16 <= n; i += 16)
		for (int j = 0; j < 16; j++)
			s[j] += x[i + j];
	for (int j = 0; i < n; i++, j++)
		s[j] += x[i];
	for (int w = 8; w >= 1; w /= 2)
		for (int j = 0; j < w; j++)
			s[j] += s[j + w];
	return s[0];
}

/*
 * A global pool's planes split into tasks: task t is image t / per_image,
 * its channels [block * (t % per_image), ...) (at most block of them), so
 * tasks go image-major, as the pool deals them out (pool.h).  From
 * GP_PARALLEL_MIN elements, tasks of about GP_TASK.
 */
#define GP_PARALLEL_MIN 32768
#define GP_TASK 8192

typedef struct gp_job
{
	const float *x;
	float	   *y;
	int64_t		plane;			/* elements per plane */
	int64_t		channels;
	int64_t		block;			/* channels per task */
	int			is_max;
} gp_job;

/* Pools planes [p0, p1) of j into their outputs. */
static void
gp_planes(const gp_job *j, int64_t p0, int64_t p1)
{
	for (int64_t p = p0; p < p1; p++)
	{
		const float *x = j->x + p * j->plane;

		if (j->is_max)
		{
			/* a NaN anywhere is the plane's maximum (np.max, ONNX Runtime) */
			float		m = -INFINITY;
			bool		nan = false;

			for (int64_t i = 0; i < j->plane; i++)
			{
				if (x[i] > m)
					m = x[i];
				nan |= isnan(x[i]);
			}
			j->y[p] = nan ? NAN : m;
		}
		else
			j->y[p] = j->plane > 0 ? (float) (plane_sum(x, j->plane) / j->plane) : NAN;
	}
}

/* Task t of a gp_job (see above). */
static void
gp_task(void *arg, int64_t t, int worker)
{
	const gp_job *j = arg;
	int64_t		per_image = (j->channels + j->block - 1) / j->block;
	int64_t		c0 = t % per_image * j->block;
	int64_t		c1 = c0 + j->block < j->channels ? c0 + j->block : j->channels;
	int64_t		base = t / per_image * j->channels;

	(void) worker;
	gp_planes(j, base + c0, base + c1);
}

/*
 * GlobalAveragePool / GlobalMaxPool: X[N, C, ...] -> [N, C, 1, ...], the
 * mean (in double) or maximum of each channel plane (NaN when the plane
 * holds one: a NaN propagates through both).
 */
static int
global_pool(ie_node_ctx *ctx, int is_max)
{
	const ie_tensor *X;
	int64_t		odims[IE_MAX_DIMS];
	int64_t		planes,
				plane = 1;
	ie_tensor  *Y;
	gp_job		job;

	if (pool_check_input(ctx, 2, IE_MAX_DIMS, 0) != 0)
		return -1;
	X = ctx->inputs[0];
	odims[0] = X->dims[0];
	odims[1] = X->dims[1];
	for (int i = 2; i < X->ndim; i++)
	{
		odims[i] = 1;
		plane *= X->dims[i];
	}
	Y = ie_tensor_new(IE_FLOAT, X->ndim, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	planes = X->dims[0] * X->dims[1];
	job = (gp_job) {X->data, Y->data, plane, X->dims[1], 1, is_max};
	if (ctx->n_threads > 1 && planes * plane >= GP_PARALLEL_MIN)
	{
		/* per image, blocks of channels of ~GP_TASK elements */
		int64_t		per_image = (X->dims[1] * plane + GP_TASK - 1) / GP_TASK;

		job.block = (X->dims[1] + per_image - 1) / per_image;
		per_image = (X->dims[1] + job.block - 1) / job.block;
		ie_parallel_for(ctx->n_threads, X->dims[0] * per_image, gp_task, &job);
	}
	else
		gp_planes(&job, 0, planes);
	return 0;
}

/* GlobalAveragePool (opset 1): mean over every spatial axis. */
static int
op_global_average_pool(ie_node_ctx *ctx)
{
	return global_pool(ctx, 0);
}

/* GlobalMaxPool (opset 1): maximum over every spatial axis. */
static int
op_global_max_pool(ie_node_ctx *ctx)
{
	return global_pool(ctx, 1);
}

/*
 * The attribute values AveragePool and MaxPool implement: ceil_mode,
 * storage_order and count_include_pad 0 or 1, auto_pad one of the spec's
 * four.  Run by the loader on every such node (ie_op_check_lookup) and by
 * the operators.
 */
static int
pool_check_attrs(ie_node_ctx *ctx)
{
	static const char *const flags[] = {"ceil_mode", "storage_order", "count_include_pad"};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
	{
		int64_t		v = ie_attr_int(ctx, flags[i], 0);

		if (v != 0 && v != 1)
			return ie_op_error(ctx, "unsupported %s %lld (0 or 1)", flags[i], (long long) v);
	}
	return ie_spatial_check_auto_pad(ctx, ie_attr_string(ctx, "auto_pad", "NOTSET"));
}

/*
 * Reads kernel_shape (required), strides, dilations, pads, auto_pad and
 * ceil_mode (checked by pool_check_attrs) and computes the output extents
 * of a windowed pool (spatial.c).
 */
static int
pool_geometry(ie_node_ctx *ctx, const ie_tensor *X, ie_spatial *g)
{
	const char *auto_pad = ie_attr_string(ctx, "auto_pad", "NOTSET");
	int64_t		ceil_mode = ie_attr_int(ctx, "ceil_mode", 0);

	ie_spatial_init(g, X->ndim - 2);
	if (ie_spatial_read_kernel(ctx, g, NULL) != 0 ||
		ie_spatial_read_attrs(ctx, g) != 0)
		return -1;
	return ie_spatial_output(ctx, g, X->dims + 2, auto_pad, (int) ceil_mode);
}

/*
 * The common 2x2, stride-2, unpadded 2-D MaxPool whose windows all lie
 * inside the input: out[y][x] = max of the 4 cells, taken in the order
 * max_pool_fast takes them (the first cell, then any larger one), in a
 * loop the compiler vectorises.  Returns false (nothing done) for any
 * other geometry.
 */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize")))
#endif
static bool
max_pool_2x2(const ie_spatial *g, const float *xd, float *yd, int64_t planes)
{
	int64_t		ih = g->in[1],
				iw = g->in[2],
				oh = g->out[1],
				ow = g->out[2];

	if (g->in[0] != 1 || g->k[0] != 1 || g->k[1] != 2 || g->k[2] != 2 ||
		g->stride[1] != 2 || g->stride[2] != 2 || g->dil[1] != 1 || g->dil[2] != 1 ||
		g->pad_begin[1] != 0 || g->pad_begin[2] != 0 || 2 * oh > ih || 2 * ow > iw)
		return false;
	for (int64_t p = 0; p < planes; p++)
		for (int64_t oy = 0; oy < oh; oy++)
		{
			const float *r0 = xd + (p * ih + 2 * oy) * iw;
			const float *r1 = r0 + iw;
			float	   *y = yd + (p * oh + oy) * ow;

			for (int64_t ox = 0; ox < ow; ox++)
			{
				float		m = r0[2 * ox];

				m = r0[2 * ox + 1] > m ? r0[2 * ox + 1] : m;
				m = r1[2 * ox] > m ? r1[2 * ox] : m;
				m = r1[2 * ox + 1] > m ? r1[2 * ox + 1] : m;
				y[ox] = m;
			}
		}
	return true;
}

/*
 * MaxPool without Indices: for each output, the maximum over the window
 * cells inside the input (the first such cell, then any larger one, as
 * pool_run does), the in-range input positions [lo, hi) of each axis found
 * once per output coordinate (span holds 2*(out[0]+out[1]+out[2])).
 */
static void
max_pool_fast(const ie_spatial *g, const float *xd, float *yd, int64_t planes,
			  int64_t *span)
{
	int64_t		ipix = g->in[0] * g->in[1] * g->in[2];
	int64_t		opix = g->out[0] * g->out[1] * g->out[2];
	int64_t    *sp[3];

	sp[0] = span;
	sp[1] = sp[0] + 2 * g->out[0];
	sp[2] = sp[1] + 2 * g->out[1];
	for (int a = 0; a < 3; a++)
		for (int64_t o = 0; o < g->out[a]; o++)
		{
			int64_t		st = o * g->stride[a] - g->pad_begin[a];
			int64_t		lo = st >= 0 ? 0 : (-st + g->dil[a] - 1) / g->dil[a];
			int64_t		hi = g->in[a] - st <= 0 ? 0 :
				(g->in[a] - st + g->dil[a] - 1) / g->dil[a];

			if (hi > g->k[a])
				hi = g->k[a];
			if (hi < lo)
				hi = lo;
			sp[a][2 * o] = st + lo * g->dil[a];
			sp[a][2 * o + 1] = st + hi * g->dil[a];
		}
	for (int64_t p = 0; p < planes; p++)
	{
		const float *x = xd + p * ipix;
		float	   *y = yd + p * opix;

		for (int64_t oz = 0; oz < g->out[0]; oz++)
			for (int64_t oy = 0; oy < g->out[1]; oy++)
				for (int64_t ox = 0; ox < g->out[2]; ox++)
				{
					float		mx = -INFINITY;
					int			first = 1;

					for (int64_t iz = sp[0][2 * oz]; iz < sp[0][2 * oz + 1]; iz += g->dil[0])
						for (int64_t iy = sp[1][2 * oy]; iy < sp[1][2 * oy + 1]; iy += g->dil[1])
						{
							const float *r = x + (iz * g->in[1] + iy) * g->in[2];

							for (int64_t ix = sp[2][2 * ox]; ix < sp[2][2 * ox + 1]; ix += g->dil[2])
								if (first || r[ix] > mx)
								{
									mx = r[ix];
									first = 0;
								}
						}
					*y++ = mx;
				}
	}
}

/*
 * The windowed pool itself over planes [N*C, in...]: max (with optional
 * flat indices, storage_order 0 row-major or 1 column-major), average
 * (count_include_pad counts padding cells inside the padded input, never
 * cells beyond it that ceil_mode adds), or with lp > 0 the Lp norm of the
 * window's cells inside the input, (sum |x|^lp)^(1 / lp) in double
 * (padding cells are zeros: they add nothing).
 */
static void
pool_run(const ie_spatial *g, const float *xd, float *yd, int64_t *idx,
		 int64_t planes, int is_max, int count_pad, int storage_order, double lp)
{
	int64_t		ipix = g->in[0] * g->in[1] * g->in[2];
	int64_t		opix = g->out[0] * g->out[1] * g->out[2];

	if (is_max && idx == NULL && max_pool_2x2(g, xd, yd, planes))
		return;
	if (is_max && idx == NULL)
	{
		int64_t    *span = ie_scratch_new(IE_INT64, 2,
										  (int64_t[]) {2, g->out[0] + g->out[1] + g->out[2]});

		if (span != NULL)
		{
			max_pool_fast(g, xd, yd, planes, span);
			free(span);
			return;
		}
		/* no memory for the spans, or over the tensor limit (a refusal
		 * that no error follows): the general loop below does it */
		ie_tensor_forget_refusal();
	}

	for (int64_t p = 0; p < planes; p++)
	{
		const float *x = xd + p * ipix;
		float	   *y = yd + p * opix;

		for (int64_t oz = 0; oz < g->out[0]; oz++)
			for (int64_t oy = 0; oy < g->out[1]; oy++)
				for (int64_t ox = 0; ox < g->out[2]; ox++)
				{
					int64_t		z0 = oz * g->stride[0] - g->pad_begin[0];
					int64_t		y0 = oy * g->stride[1] - g->pad_begin[1];
					int64_t		x0 = ox * g->stride[2] - g->pad_begin[2];
					float		mx = -INFINITY;
					int64_t		arg = -1;
					double		sum = 0;
					int64_t		cnt = 0,
								padcnt = 1;

					if (count_pad)
					{
						/* window cells inside the padded extent */
						for (int a = 0; a < 3; a++)
						{
							int64_t		o = a == 0 ? oz : (a == 1 ? oy : ox);
							int64_t		st = o * g->stride[a] - g->pad_begin[a];
							int64_t		c = 0;

							for (int64_t k = 0; k < g->k[a]; k++)
							{
								int64_t		pos = st + k * g->dil[a];

								if (pos >= -g->pad_begin[a] && pos < g->in[a] + g->pad_end[a])
									c++;
							}
							padcnt *= c;
						}
					}
					for (int64_t kz = 0; kz < g->k[0]; kz++)
					{
						int64_t		iz = z0 + kz * g->dil[0];

						if (iz < 0 || iz >= g->in[0])
							continue;
						for (int64_t ky = 0; ky < g->k[1]; ky++)
						{
							int64_t		iy = y0 + ky * g->dil[1];

							if (iy < 0 || iy >= g->in[1])
								continue;
							for (int64_t kx = 0; kx < g->k[2]; kx++)
							{
								int64_t		ix = x0 + kx * g->dil[2];
								int64_t		off;

								if (ix < 0 || ix >= g->in[2])
									continue;
								off = (iz * g->in[1] + iy) * g->in[2] + ix;
								if (is_max)
								{
									if (x[off] > mx || arg < 0)
									{
										mx = x[off];
										arg = off;
									}
								}
								else if (lp > 0)
								{
									double		v = fabs((double) x[off]);

									sum += lp == 1 ? v : lp == 2 ? v * v : pow(v, lp);
								}
								else
								{
									sum += x[off];
									cnt++;
								}
							}
						}
					}
					int64_t		o = (oz * g->out[1] + oy) * g->out[2] + ox;

					if (is_max)
					{
						y[o] = mx;
						if (idx != NULL)
						{
							int64_t		flat = arg;

							if (storage_order == 1 && arg >= 0)
							{
								int64_t		az = arg / (g->in[1] * g->in[2]);
								int64_t		ay = (arg / g->in[2]) % g->in[1];
								int64_t		ax = arg % g->in[2];

								flat = (ax * g->in[1] + ay) * g->in[0] + az;
							}
							idx[p * opix + o] = p * ipix + flat;
						}
					}
					else if (lp > 0)
						y[o] = (float) (lp == 1 ? sum : lp == 2 ? sqrt(sum) : pow(sum, 1.0 / lp));
					else
					{
						int64_t		div = count_pad ? padcnt : cnt;

						y[o] = div > 0 ? (float) (sum / div) : 0.0f;
					}
				}
	}
}

static int	window_pool(ie_node_ctx *ctx, int is_max, double lp);

/*
 * MaxPool of int8/uint8 input (opset 12): every value is exact in float, so
 * the input is widened, pooled as float and narrowed back.
 */
static int
byte_max_pool(ie_node_ctx *ctx)
{
	const ie_tensor *X = ctx->inputs[0];
	ie_tensor  *F = ie_tensor_new(IE_FLOAT, X->ndim, X->dims);
	ie_tensor  *Y;
	const ie_tensor *fin[1];
	ie_node_ctx fctx = *ctx;
	int64_t		n = ie_tensor_numel(X);
	int			rc;

	if (F == NULL)
		return ie_op_error(ctx, "out of memory");
	for (int64_t i = 0; i < n; i++)
		((float *) F->data)[i] = X->dtype == IE_UINT8 ?
			(float) ((const uint8_t *) X->data)[i] : (float) ((const int8_t *) X->data)[i];
	fin[0] = F;
	fctx.inputs = fin;
	fctx.n_inputs = 1;
	rc = window_pool(&fctx, 1, 0);
	ie_tensor_destroy(&F);
	if (rc != 0)
	{
		ctx->err_kind = fctx.err_kind;
		return -1;
	}
	/* narrow output 0 back to the input type (Indices stay int64) */
	F = ctx->outputs[0];
	Y = ie_tensor_new(X->dtype, F->ndim, F->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory");
	n = ie_tensor_numel(F);
	for (int64_t i = 0; i < n; i++)
	{
		float		v = ((const float *) F->data)[i];

		/*
		 * a window of padding only pools -inf: the type's lowest value,
		 * as converting an out-of-range float is undefined (C11 6.3.1.4)
		 */
		if (X->dtype == IE_UINT8)
			((uint8_t *) Y->data)[i] = (uint8_t) (v < 0 ? 0 : v > UINT8_MAX ? UINT8_MAX : v);
		else
			((int8_t *) Y->data)[i] = (int8_t) (v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v);
	}
	ie_tensor_destroy(&ctx->outputs[0]);
	ctx->outputs[0] = Y;
	return 0;
}

/*
 * AveragePool, MaxPool and LpPool (lp > 0, its p) share the set-up:
 * geometry, output, run.
 */
static int
window_pool(ie_node_ctx *ctx, int is_max, double lp)
{
	const ie_tensor *X;
	ie_spatial	g;
	int64_t		odims[IE_MAX_DIMS];
	int64_t		storage_order = ie_attr_int(ctx, "storage_order", 0);
	int64_t		count_pad = ie_attr_int(ctx, "count_include_pad", 0);
	ie_tensor  *Y,
			   *I = NULL;

	if (pool_check_input(ctx, 3, 5, is_max) != 0)
		return -1;
	X = ctx->inputs[0];
	if (X->dtype != IE_FLOAT)
		return byte_max_pool(ctx);
	if (pool_check_attrs(ctx) != 0)
		return -1;
	if (pool_geometry(ctx, X, &g) != 0)
		return -1;
	ie_spatial_out_dims(&g, X->dims[0], X->dims[1], odims);
	Y = ie_tensor_new(IE_FLOAT, X->ndim, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (is_max && ctx->n_outputs > 1)
	{
		I = ie_tensor_new(IE_INT64, X->ndim, odims);
		if (I == NULL)
			return ie_op_error(ctx, "out of memory for the indices");
		ctx->outputs[1] = I;
	}
	pool_run(&g, X->data, Y->data, I ? I->data : NULL, X->dims[0] * X->dims[1],
			 is_max, (int) count_pad, (int) storage_order, lp);
	return 0;
}

/*
 * AveragePool (opsets 1..19): kernel_shape, strides, pads, auto_pad,
 * ceil_mode, dilations, count_include_pad.
 */
static int
op_average_pool(ie_node_ctx *ctx)
{
	return window_pool(ctx, 0, 0);
}

/*
 * MaxPool (opsets 1..12): kernel_shape, strides, pads, auto_pad, ceil_mode,
 * dilations, storage_order; the optional Indices output holds flat indices
 * into X.  Float, int8 and uint8 input.
 */
static int
op_max_pool(ie_node_ctx *ctx)
{
	return window_pool(ctx, 1, 0);
}

/*
 * LpPool's p: a float attribute in LpPool-1, an int from LpPool-2, 2 by
 * default; it must be positive (the norm's exponent).  Into *p; run with
 * pool_check_attrs by the loader (lppool_check_attrs) and the operator.
 */
static int
lppool_p(ie_node_ctx *ctx, double *p)
{
	const ie_attr *a = ie_attr_find(ctx, "p");

	*p = a == NULL ? 2.0 : a->type == IE_ATTR_FLOAT ? (double) a->f :
		a->type == IE_ATTR_INT ? (double) a->i : NAN;
	if (!(*p > 0) || isinf(*p))
		return ie_op_error(ctx, "p must be a positive number (ONNX LpPool), got %g", *p);
	return 0;
}

static int
lppool_check_attrs(ie_node_ctx *ctx)
{
	double		p;

	if (pool_check_attrs(ctx) != 0)
		return -1;
	return lppool_p(ctx, &p);
}

/*
 * LpPool (opsets 1, 2, 11, 18, 22): over each window of X [N, C, D1...]
 * (1 to 3 spatial axes), Y = (sum of |x|^p)^(1 / p) over the window's
 * cells inside the input: kernel_shape, strides, pads, auto_pad, and from
 * opset 18 dilations and ceil_mode, as AveragePool reads them (the window
 * code is MaxPool's and AveragePool's).  Float input.  The Lp norm of the
 * cells is what the node tests' generator and ONNX Runtime compute; the
 * ONNX reference runtime (op_lp_pool.py) scales the average of |x|^p by
 * the kernel's size instead, which differs only for windows that overlap
 * the padding.  Errors: p not positive (also at load), a type other than
 * float, the pooling geometry errors.
 */
static int
op_lp_pool(ie_node_ctx *ctx)
{
	double		p;

	if (lppool_p(ctx, &p) != 0)
		return -1;
	return window_pool(ctx, 0, p);
}

const ie_op_def ie_ops_pool[] = {
	{"GlobalAveragePool", op_global_average_pool},
	{"GlobalMaxPool", op_global_max_pool},
	{"AveragePool", op_average_pool},
	{"MaxPool", op_max_pool},
	{"LpPool", op_lp_pool},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_pool[] = {
	{"AveragePool", pool_check_attrs},
	{"MaxPool", pool_check_attrs},
	{"LpPool", lppool_check_attrs},
	{NULL, NULL}
};
