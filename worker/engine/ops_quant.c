/*
 * ops_quant.c
 *	  ONNX linear quantization: QuantizeLinear and DequantizeLinear (opsets
 *	  10, 13, 19, 21, 23..: per-tensor, per-axis and blocked scales),
 *	  DynamicQuantizeLinear (11), and the integer products MatMulInteger
 *	  (10), ConvInteger (10), QLinearMatMul (10, 21) and QLinearConv (10).
 *
 * The float types are float32 and float16 (scales, QuantizeLinear's
 * input, DequantizeLinear's output): a float16 value is widened to float
 * exactly and a float16 result is the float result rounded to half, as
 * numpy computes float16 in ONNX's reference; the quantized types are
 * int8, uint8, int16, uint16 (and int32 as DequantizeLinear's input).
 * bfloat16, float8, float4, int4 and int2 are refused as not supported:
 * the engine holds no tensors of them.
 *
 * Rounding is to nearest, ties to even (rint under the default rounding
 * mode), and results saturate to the quantized type's range, as the ONNX
 * specification (onnx/docs/Operators.md) and its reference implementation
 * (onnx/reference/ops/op_quantize_linear.py and the others) do.  The
 * integer products accumulate exactly and keep the low 32 bits (int32
 * accumulation, as the specification states); the QLinear operators then
 * scale the accumulator by a_scale * b_scale / y_scale (float), add
 * y_zero_point, round and saturate.  MatMulInteger and QLinearMatMul
 * compute their sums on OpenBLAS sgemm (qmm_product): the centred operands
 * are integers of magnitude at most 255, so over a slice of kc terms with
 * kc * max|a| * max|b| < 2^24 every product and partial sum is an integer
 * float holds exactly, in any order of summation, and the slices add up in
 * uint32 (the low 32 bits).  ConvInteger and QLinearConv take the same
 * slices (qconv_run): the centred input lowered by Conv's im2col
 * (spatial.c) times the centred weights, or, for a depthwise convolution
 * whose taps stay exact, Conv's direct depthwise loop (ops_conv.c).
 *
 * A MatMulInteger may carry a fused epilogue (fusion.h: the Cast of its
 * sums to float, the Mul by the scale, the bias Add and what follows,
 * ONNX Runtime's MatMulIntegerToFloat): it then writes float, each block
 * of int32 sums converted in place as soon as the product finishes it
 * (qmm_fused).
 *
 * Threading: no state outside the call; the matrix products and the
 * convolutions run on the engine's pool (pool.h) with OpenBLAS serial,
 * the rest on the calling thread.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/fusion.h"
#include "worker/engine/pool.h"
#include "worker/engine/qgemm_vnni.h"
#include "worker/engine/spatial.h"
#include "worker/engine/vectorise.h"

/* Rows of one integer matrix-product task (OpenBLAS packs B once per task). */
#define QMM_ROWS 256
/* Fewest multiply-adds worth a thread of their own, as MatMul's. */
#define QMM_THREAD_WORK 262144
/* Upper bound on the floats of a ConvInteger im2col band, as Conv's. */
#define QCONV_COL_BUDGET (512 * 1024)

/*
 * The range [*lo, *hi] of quantized type t (int8, uint8, int16, uint16,
 * int32); false for any other type.
 */
static bool
quant_range(int t, int64_t *lo, int64_t *hi)
{
	switch (t)
	{
		case IE_INT8:
			*lo = -128;
			*hi = 127;
			return true;
		case IE_UINT8:
			*lo = 0;
			*hi = 255;
			return true;
		case IE_INT16:
			*lo = -32768;
			*hi = 32767;
			return true;
		case IE_UINT16:
			*lo = 0;
			*hi = 65535;
			return true;
		case IE_INT32:
			*lo = INT32_MIN;
			*hi = INT32_MAX;
			return true;
		default:
			return false;
	}
}

/* Element i of integer data of type t (one quant_range accepts). */
static int64_t
quant_get(const void *data, ie_dtype t, int64_t i)
{
	switch (t)
	{
		case IE_INT8:
			return ((const int8_t *) data)[i];
		case IE_UINT8:
			return ((const uint8_t *) data)[i];
		case IE_INT16:
			return ((const int16_t *) data)[i];
		case IE_UINT16:
			return ((const uint16_t *) data)[i];
		default:
			return ((const int32_t *) data)[i];
	}
}

/* Stores v, already within t's range, as element i of data of type t. */
static void
quant_put(void *data, ie_dtype t, int64_t i, int64_t v)
{
	switch (t)
	{
		case IE_INT8:
			((int8_t *) data)[i] = (int8_t) v;
			break;
		case IE_UINT8:
			((uint8_t *) data)[i] = (uint8_t) v;
			break;
		case IE_INT16:
			((int16_t *) data)[i] = (int16_t) v;
			break;
		case IE_UINT16:
			((uint16_t *) data)[i] = (uint16_t) v;
			break;
		default:
			((int32_t *) data)[i] = (int32_t) v;
			break;
	}
}

/*
 * quant_round_sat(q, zp, 0, 255) for a float q and zp in [0, 255], without
 * double or a libm call (DynamicQuantizeLinear's loop): q is first clamped
 * to [-512, 512], which changes no saturated result, then rounded half to
 * even by adding and subtracting 1.5 * 2^23 (float's spacing is 1 there;
 * exact for |q| < 2^22 under the default rounding mode).  A NaN gives zp.
 * Written as selects, no branch, so that a loop of it vectorises.
 */
static inline IE_VECTORISE_SELECTS int32_t
dql_round_sat(float q, float zp)
{
	float		r;

	q = q != q ? 0.0f : q;
	q = q < -512.0f ? -512.0f : q;
	q = q > 512.0f ? 512.0f : q;
	r = (q + 12582912.0f) - 12582912.0f + zp;
	r = r < 0.0f ? 0.0f : r;
	r = r > 255.0f ? 255.0f : r;
	return (int32_t) r;
}

/*
 * q (the scaled value, before rounding) rounded half to even, plus zp,
 * saturated to [lo, hi].  A NaN gives zp (saturated): the specification
 * leaves it undefined.
 */
static int64_t
quant_round_sat(double q, int64_t zp, int64_t lo, int64_t hi)
{
	double		r;

	if (isnan(q))
		r = (double) zp;
	else
		r = rint(q) + (double) zp;
	if (r < (double) lo)
		return lo;
	if (r > (double) hi)
		return hi;
	return (int64_t) r;
}

/*
 * Refuses a scale (what names it) of another type than float or float16:
 * bfloat16 and float8e8m0 scales are not supported.
 */
static int
quant_check_scale(ie_node_ctx *ctx, const ie_tensor *t, const char *what)
{
	if (t->dtype != IE_FLOAT && t->dtype != IE_FLOAT16)
		return ie_op_error(ctx, "%s of type %s is not supported (float, float16)", what,
						   ie_type_name(t->dtype));
	return 0;
}

/* Element i of float (t IE_FLOAT) or float16 data, as float. */
static float
qf_get(const void *data, ie_dtype t, int64_t i)
{
	if (t == IE_FLOAT16)
		return ie_half_to_float(((const uint16_t *) data)[i]);
	return ((const float *) data)[i];
}

/* f rounded to float16 and back (a float16 operation's result). */
static float
qf_half(float f)
{
	return ie_half_to_float(ie_float_to_half(f));
}

/*
 * The requantization multiplier a_scale * b_scale / y_scale of the QLinear
 * operators, in float, or in float16 (each step rounded to half) when the
 * scales are float16 (half), as the reference's numpy arithmetic does.
 */
static float
qmult(float sa, float sb, float sy, bool half)
{
	if (half)
		return qf_half(qf_half(sa * sb) / sy);
	return sa * sb / sy;
}

/*
 * How a scale (and its zero point) map onto x: element (o, a, i) of x
 * viewed as [outer, len, inner] around the quantization axis takes scale
 * element o * so + (a / block) * sa + i * si.  Per-tensor: every stride 0;
 * per-axis: sa 1; blocked: the scale is [outer, ceil(len / block), inner].
 */
typedef struct quant_map
{
	int64_t		outer,
				len,
				inner,
				block,
				so,
				sa,
				si;
} quant_map;

/*
 * Reads the granularity of scale (and zero point zp, or NULL) over x into
 * m, for QuantizeLinear and DequantizeLinear (Operators.md, "quantization
 * granularity"): a scalar (or one-element 1-D tensor) is per-tensor; a 1-D
 * tensor of x's dim at axis is per-axis (opset 13 and later); with
 * block_size (opset 21 and later, > 0) the scale has x's rank and shape
 * except at axis, where it has ceil(D / block_size).  zp must have the
 * scale's shape (a one-element zp goes with a one-element scale).  Errors:
 * axis out of range, a misshapen scale or zp, a negative block_size.  x
 * may be empty: only its dims are compared here.
 */
static int
quant_map_read(ie_node_ctx *ctx, const ie_tensor *x, const ie_tensor *scale,
			   const ie_tensor *zp, quant_map *m)
{
	int64_t		axis = ie_attr_int(ctx, "axis", 1),
				block = ie_attr_int(ctx, "block_size", 0),
				sn = ie_tensor_numel(scale);
	int			r = x->ndim;
	char		b1[128],
				b2[128];

	memset(m, 0, sizeof(*m));
	m->block = 1;
	if (block < 0)
		return ie_op_error(ctx, "block_size %lld must not be negative", (long long) block);
	if (zp != NULL &&
		!(zp->ndim == scale->ndim &&
		  memcmp(zp->dims, scale->dims, sizeof(int64_t) * scale->ndim) == 0) &&
		!(sn == 1 && ie_tensor_numel(zp) == 1 && zp->ndim <= 1 && scale->ndim <= 1))
		return ie_op_error(ctx, "zero point of shape %s differs from the scale's %s",
						   ie_shape_str(b1, sizeof(b1), zp->ndim, zp->dims),
						   ie_shape_str(b2, sizeof(b2), scale->ndim, scale->dims));
	if (block == 0 && scale->ndim <= 1 && sn == 1)
		return 0;				/* per-tensor */
	if (axis < -r || axis >= r)
		return ie_op_error(ctx, "axis %lld is out of range for an input of rank %d",
						   (long long) axis, r);
	if (axis < 0)
		axis += r;
	if (block == 0)
	{
		if (scale->ndim != 1 || ctx->opset < 13)
			return ie_op_error(ctx, "scale of shape %s must be a scalar%s",
							   ie_shape_str(b1, sizeof(b1), scale->ndim, scale->dims),
							   ctx->opset < 13 ? " (per-axis scales need opset 13)" :
							   ctx->opset < 21 ? " or a 1-D tensor of the axis's length" :
							   " or a 1-D tensor of the axis's length (or block_size be set)");
		if (scale->dims[0] != x->dims[axis])
			return ie_op_error(ctx, "scale of shape %s must have x's dim %lld at axis %lld",
							   ie_shape_str(b1, sizeof(b1), scale->ndim, scale->dims),
							   (long long) x->dims[axis], (long long) axis);
		m->sa = 1;
	}
	else
	{
		int64_t		want[IE_MAX_DIMS];
		char		b3[128];

		for (int d = 0; d < r; d++)
			want[d] = d != axis ? x->dims[d] :
				x->dims[d] / block + (x->dims[d] % block != 0);
		if (scale->ndim != r ||
			memcmp(scale->dims, want, sizeof(int64_t) * r) != 0)
			return ie_op_error(ctx, "blocked scale of shape %s must have shape %s (x's %s "
							   "with ceil(%lld / %lld) blocks at axis %lld)",
							   ie_shape_str(b1, sizeof(b1), scale->ndim, scale->dims),
							   ie_shape_str(b2, sizeof(b2), r, want),
							   ie_shape_str(b3, sizeof(b3), r, x->dims),
							   (long long) x->dims[axis], (long long) block,
							   (long long) axis);
		m->block = block;
	}
	/* an empty x is left at outer 0: its other dims may be huge */
	if (ie_tensor_numel(x) == 0)
		return 0;
	m->outer = 1;
	m->inner = 1;
	for (int d = 0; d < axis; d++)
		m->outer *= x->dims[d];
	for (int d = (int) axis + 1; d < r; d++)
		m->inner *= x->dims[d];
	m->len = x->dims[axis];
	if (block > 0)
	{
		m->si = 1;
		m->sa = m->inner;
		m->so = scale->dims[axis] * m->inner;
	}
	return 0;
}

/*
 * The scale/zero-point index of each element of x in order: calls
 * fn(arg, element, scale index) for all outer * len * inner elements
 * (a per-tensor map has outer 0: one call per element, index 0).
 */
typedef void (*quant_elem_fn) (void *arg, int64_t e, int64_t s);

static void
quant_map_each(const quant_map *m, int64_t n, quant_elem_fn fn, void *arg)
{
	int64_t		e = 0;

	if (m->outer == 0)
	{
		for (int64_t i = 0; i < n; i++)
			fn(arg, i, 0);
		return;
	}
	for (int64_t o = 0; o < m->outer; o++)
		for (int64_t a = 0; a < m->len; a++)
		{
			int64_t		base = o * m->so + (a / m->block) * m->sa;

			for (int64_t i = 0; i < m->inner; i++)
				fn(arg, e++, base + i * m->si);
		}
}

/* One QuantizeLinear or DequantizeLinear over its elements. */
typedef struct quant_job
{
	const void *x;
	ie_dtype	xt;
	const void *scale;
	ie_dtype	st;				/* the scale's type: float, float16 or
								 * (QuantizeLinear) int32 */
	const void *zp;				/* NULL: zero */
	ie_dtype	zt;
	void	   *y;
	ie_dtype	yt;
	int64_t		lo,
				hi;
	int			prec;			/* QuantizeLinear's division: IE_FLOAT,
								 * IE_FLOAT16, or IE_DOUBLE (an int32 x or
								 * scale) */
} quant_job;

/*
 * QuantizeLinear's element e with scale index s: x and the scale (float,
 * float16 or int32, each exact in double) divided in double, or in float
 * or float16 (each operand rounded to it first, as numpy's astype).
 */
static void
quantize_elem(void *arg, int64_t e, int64_t s)
{
	quant_job  *j = arg;
	int64_t		zp = j->zp ? quant_get(j->zp, j->zt, s) : 0;
	double		q,
				xv = j->xt == IE_INT32 ? (double) ((const int32_t *) j->x)[e] :
		(double) qf_get(j->x, j->xt, e),
				sv = j->st == IE_INT32 ? (double) ((const int32_t *) j->scale)[s] :
		(double) qf_get(j->scale, j->st, s);

	if (j->prec == IE_DOUBLE)
		q = xv / sv;
	else if (j->prec == IE_FLOAT16)
		q = qf_half(qf_half((float) xv) / qf_half((float) sv));
	else
		q = (float) xv / (float) sv;	/* float division */
	quant_put(j->y, j->yt, e, quant_round_sat(q, zp, j->lo, j->hi));
}

/* DequantizeLinear's element e with scale index s. */
static void
dequantize_elem(void *arg, int64_t e, int64_t s)
{
	quant_job  *j = arg;
	int64_t		zp = j->zp ? quant_get(j->zp, j->zt, s) : 0;
	float		v = (float) ((double) (quant_get(j->x, j->xt, e) - zp) *
							 (double) qf_get(j->scale, j->st, s));

	if (j->yt == IE_FLOAT16)
		((uint16_t *) j->y)[e] = ie_float_to_half(v);
	else
		((float *) j->y)[e] = v;
}

/*
 * The output type of QuantizeLinear into *yt: y_zero_point's type, else
 * output_dtype (opset 21 and later), else uint8; they must agree when both
 * are given.  Types other than int8, uint8, int16 and uint16 are refused
 * as not supported.  zt is y_zero_point's type or IE_UNDEFINED.
 */
static int
quantize_out_type(ie_node_ctx *ctx, int zt, int *yt)
{
	int64_t		od = ie_attr_int(ctx, "output_dtype", 0);
	int64_t		lo,
				hi;

	if (od != 0 && zt != IE_UNDEFINED && od != zt)
		return ie_op_error(ctx, "output_dtype %s differs from y_zero_point's type %s",
						   ie_type_name((int) od), ie_type_name(zt));
	*yt = zt != IE_UNDEFINED ? zt : od != 0 ? (int) od : IE_UINT8;
	if (*yt == IE_INT32 || !quant_range(*yt, &lo, &hi))
		return ie_op_error(ctx, "quantizing to %s is not supported (int8, uint8, int16, uint16)",
						   ie_type_name(*yt));
	return 0;
}

/*
 * The attributes QuantizeLinear and DequantizeLinear share a check of, at
 * load and run: block_size >= 0; precision (QuantizeLinear 23+), when
 * set, float or float16; DequantizeLinear's output_dtype (23+), when set,
 * float or float16.
 */
static int
quant_check_common(ie_node_ctx *ctx, bool quantize)
{
	int64_t		block = ie_attr_int(ctx, "block_size", 0);
	int64_t		prec = ie_attr_int(ctx, "precision", 0);

	if (block < 0)
		return ie_op_error(ctx, "block_size %lld must not be negative", (long long) block);
	if (prec != 0 && prec != IE_FLOAT && prec != IE_FLOAT16)
		return ie_op_error(ctx, "precision %s is not supported (float, float16)",
						   ie_type_name((int) prec));
	if (!quantize)
	{
		int64_t		od = ie_attr_int(ctx, "output_dtype", 0);

		if (od != 0 && od != IE_FLOAT && od != IE_FLOAT16)
			return ie_op_error(ctx, "output_dtype %s is not supported (float, float16)",
							   ie_type_name((int) od));
	}
	return 0;
}

/* QuantizeLinear's load-time check: output_dtype and the shared attributes. */
static int
quantize_check_attrs(ie_node_ctx *ctx)
{
	int			yt;

	if (quant_check_common(ctx, true) != 0)
		return -1;
	if (ie_attr_int(ctx, "output_dtype", 0) != 0)
		return quantize_out_type(ctx, IE_UNDEFINED, &yt);
	return 0;
}

/* DequantizeLinear's load-time check. */
static int
dequantize_check_attrs(ie_node_ctx *ctx)
{
	return quant_check_common(ctx, false);
}

/*
 * QuantizeLinear (10, 13, 19, 21, 23, 24, 25): y = saturate(rint(x /
 * y_scale) + y_zero_point), x float, float16 or int32, y_scale float,
 * float16 or (opset 19 and later) int32, y of y_zero_point's type (or output_dtype, else uint8: int8,
 * uint8, int16, uint16), x's shape.  Granularity by quant_map_read.  The
 * division is in the precision attribute's type (23+), else numpy's
 * promotion of x's and y_scale's types as the reference computes it:
 * float16 when both are float16, double for an int32 x or scale, else
 * float.
 * saturate only concerns float8, which is refused.
 */
static int
op_quantize_linear(ie_node_ctx *ctx)
{
	const ie_tensor *x,
			   *scale,
			   *zp;
	quant_map	m;
	quant_job	j;
	int			yt;
	ie_tensor  *y;

	if (quant_check_common(ctx, true) != 0)
		return -1;
	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs x and y_scale");
	x = ctx->inputs[0];
	scale = ctx->inputs[1];
	zp = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	if (x->dtype != IE_FLOAT && x->dtype != IE_FLOAT16 && x->dtype != IE_INT32)
		return ie_op_error(ctx, "input of type %s is not supported (float, float16, int32)",
						   ie_type_name(x->dtype));
	/* int32 scales from opset 19 (T1 with an int32 x; 23: T2 int32) */
	if ((scale->dtype != IE_INT32 || ctx->opset < 19) &&
		quant_check_scale(ctx, scale, "y_scale") != 0)
		return -1;
	if (quantize_out_type(ctx, zp ? (int) zp->dtype : IE_UNDEFINED, &yt) != 0 ||
		quant_map_read(ctx, x, scale, zp, &m) != 0)
		return -1;
	y = ie_tensor_new_uninit((ie_dtype) yt, x->ndim, x->dims);
	if (y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	if (ie_tensor_numel(x) == 0)
		return 0;
	j = (quant_job)
	{
		.x = x->data, .xt = x->dtype, .scale = scale->data, .st = scale->dtype,
			.zp = zp ? zp->data : NULL, .zt = zp ? zp->dtype : IE_UNDEFINED,
			.y = y->data, .yt = (ie_dtype) yt,
			.prec = (int) ie_attr_int(ctx, "precision", 0)
	};
	if (j.prec == 0)
		j.prec = x->dtype == IE_INT32 || scale->dtype == IE_INT32 ? IE_DOUBLE :
			x->dtype == IE_FLOAT16 && scale->dtype == IE_FLOAT16 ? IE_FLOAT16 : IE_FLOAT;
	quant_range(yt, &j.lo, &j.hi);
	quant_map_each(&m, ie_tensor_numel(x), quantize_elem, &j);
	return 0;
}

/*
 * DequantizeLinear (10, 13, 19, 21, 23, 24, 25): y = (x - x_zero_point) *
 * x_scale, x int8, uint8, int16, uint16 or int32, x_zero_point of x's type
 * (zero when omitted), x_scale float or float16; y of output_dtype (23+),
 * else of x_scale's type, x's shape: the product in float, rounded to half
 * for a float16 y (as the reference's float32 product cast to float16).
 * Granularity by quant_map_read.
 */
static int
op_dequantize_linear(ie_node_ctx *ctx)
{
	const ie_tensor *x,
			   *scale,
			   *zp;
	quant_map	m;
	quant_job	j;
	ie_tensor  *y;
	ie_dtype	yt;
	int64_t		lo,
				hi;

	if (quant_check_common(ctx, false) != 0)
		return -1;
	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs x and x_scale");
	x = ctx->inputs[0];
	scale = ctx->inputs[1];
	zp = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	if (!quant_range(x->dtype, &lo, &hi))
		return ie_op_error(ctx, "input of type %s is not supported (int8, uint8, int16, "
						   "uint16, int32)", ie_type_name(x->dtype));
	if (zp != NULL && zp->dtype != x->dtype)
		return ie_op_error(ctx, "x_zero_point of type %s differs from x's type %s",
						   ie_type_name(zp->dtype), ie_type_name(x->dtype));
	if (quant_check_scale(ctx, scale, "x_scale") != 0 ||
		quant_map_read(ctx, x, scale, zp, &m) != 0)
		return -1;
	yt = (ie_dtype) ie_attr_int(ctx, "output_dtype", 0);
	if (yt == IE_UNDEFINED)
		yt = scale->dtype;
	y = ie_tensor_new_uninit(yt, x->ndim, x->dims);
	if (y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	if (ie_tensor_numel(x) == 0)
		return 0;
	j = (quant_job)
	{
		.x = x->data, .xt = x->dtype, .scale = scale->data, .st = scale->dtype,
			.zp = zp ? zp->data : NULL, .zt = zp ? zp->dtype : IE_UNDEFINED,
			.y = y->data, .yt = yt
	};
	quant_map_each(&m, ie_tensor_numel(x), dequantize_elem, &j);
	return 0;
}

/* Elements of one DynamicQuantizeLinear task (both passes), and of the
 * blocks its quantization runs in. */
#define DQL_CHUNK 65536
#define DQL_BLOCK 256
/* Partial maxima and minima of its range loop (one AVX2 vector of floats). */
#define DQL_LANES 8

/* DynamicQuantizeLinear over the pool: x's n elements in DQL_CHUNK tasks. */
typedef struct dql_job
{
	const float *x;
	uint8_t    *y;
	int64_t		n;
	float		scale,
				zp;
	float	   *mx,				/* per task: max(0, max of its chunk) */
			   *mn;				/* min(0, min of its chunk) */
	int		   *bad;			/* whether its chunk holds a NaN or -inf */
} dql_job;

/*
 * Task t's range: max and min of its chunk, with 0 (the range always
 * holds 0), and whether a NaN or -inf is there, branch-free: max and min
 * as comparisons in DQL_LANES partial results, which vectorise (a NaN
 * never wins them, and bad catches it; a -0 never replaces the lanes'
 * starting +0, so the result is the serial loop's).
 */
static IE_VECTORISE_SELECTS IE_CLONES void
dql_range_task(void *arg, int64_t t, int worker)
{
	dql_job    *j = arg;
	int64_t		i0 = t * DQL_CHUNK,
				i1 = i0 + DQL_CHUNK < j->n ? i0 + DQL_CHUNK : j->n;
	const float *x = j->x;
	float		mx[DQL_LANES] = {0},
				mn[DQL_LANES] = {0};
	int			bad[DQL_LANES] = {0};
	int64_t		i = i0;

	(void) worker;
	for (; i + DQL_LANES <= i1; i += DQL_LANES)
		for (int l = 0; l < DQL_LANES; l++)
		{
			float		v = x[i + l];

			bad[l] |= (v != v) | (v == -INFINITY);
			mx[l] = v > mx[l] ? v : mx[l];
			mn[l] = v < mn[l] ? v : mn[l];
		}
	for (; i < i1; i++)
	{
		float		v = x[i];

		bad[0] |= (v != v) | (v == -INFINITY);
		mx[0] = v > mx[0] ? v : mx[0];
		mn[0] = v < mn[0] ? v : mn[0];
	}
	for (int l = 1; l < DQL_LANES; l++)
	{
		mx[0] = mx[l] > mx[0] ? mx[l] : mx[0];
		mn[0] = mn[l] < mn[0] ? mn[l] : mn[0];
		bad[0] |= bad[l];
	}
	j->mx[t] = mx[0];
	j->mn[t] = mn[0];
	j->bad[t] = bad[0];
}

/*
 * Task t's quantization: dql_round_sat(x / scale, zp) of its chunk (a NaN
 * quotient, from +inf / +inf, gives zp).
 */
static IE_VECTORISE_SELECTS IE_CLONES void
dql_quant_task(void *arg, int64_t t, int worker)
{
	dql_job    *j = arg;
	int64_t		i0 = t * DQL_CHUNK,
				i1 = i0 + DQL_CHUNK < j->n ? i0 + DQL_CHUNK : j->n;
	const float *x = j->x;
	uint8_t    *y = j->y;
	float		scale = j->scale,
				zp = j->zp;

	(void) worker;
	/* in blocks through an int32 buffer: GCC vectorises float to int32
	 * and int32 to uint8, not float to uint8 in one loop */
	for (int64_t b0 = i0; b0 < i1; b0 += DQL_BLOCK)
	{
		int32_t		q[DQL_BLOCK];
		int			nb = (int) (i1 - b0 < DQL_BLOCK ? i1 - b0 : DQL_BLOCK);

		for (int i = 0; i < nb; i++)
			q[i] = dql_round_sat(x[b0 + i] / scale, zp);
		for (int i = 0; i < nb; i++)
			y[b0 + i] = (uint8_t) q[i];
	}
}

/*
 * DynamicQuantizeLinear (11): x float to y uint8 with y_scale = (max(0,
 * max x) - min(0, min x)) / 255 (1 / 255 when that range is 0, as the
 * reference does) and y_zero_point = rint(saturate(0 - min(0, min x) /
 * y_scale)); y = saturate(rint(x / y_scale) + y_zero_point).  Outputs y
 * (x's shape), y_scale and y_zero_point (scalars; as many as the node
 * names).  An empty x has range
 * 0.  A NaN in x is refused: the range it gives is undefined; so is -inf,
 * whose zero point is a NaN.
 */
static int
op_dynamic_quantize_linear(ie_node_ctx *ctx)
{
	const ie_tensor *x;
	const float *xd;
	float		mx = 0.0f,
				mn = 0.0f,
				scale,
				zpf;
	int64_t		n,
				ntasks,
				zp;
	ie_tensor  *y,
			   *ys,
			   *yz;
	int			bad = 0;
	int			nt = ctx->n_threads;
	dql_job		job;
	float	   *part;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input x");
	x = ctx->inputs[0];
	if (x->dtype != IE_FLOAT)
		return ie_op_error(ctx, "input of type %s is not supported (only float)",
						   ie_type_name(x->dtype));
	n = ie_tensor_numel(x);
	xd = x->data;
	/* the range per task, then over the tasks; the slow loop below only to
	 * name a bad value */
	ntasks = (n + DQL_CHUNK - 1) / DQL_CHUNK;
	if (nt > ntasks)
		nt = ntasks > 0 ? (int) ntasks : 1;
	part = malloc(sizeof(float) * 2 * (ntasks > 0 ? ntasks : 1) +
				  sizeof(int) * (ntasks > 0 ? ntasks : 1));
	if (part == NULL)
		return ie_op_error(ctx, "out of memory for the range");
	job = (dql_job) {.x = xd, .n = n, .mx = part, .mn = part + ntasks,
	.bad = (int *) (part + 2 * ntasks)};
	ie_parallel_for(nt, ntasks, dql_range_task, &job);
	for (int64_t t = 0; t < ntasks; t++)
	{
		mx = job.mx[t] > mx ? job.mx[t] : mx;
		mn = job.mn[t] < mn ? job.mn[t] : mn;
		bad |= job.bad[t];
	}
	free(part);
	for (int64_t i = 0; bad && i < n; i++)
	{
		if (isnan(xd[i]))
			return ie_op_error(ctx, "x holds a NaN at element %lld: its range is undefined",
							   (long long) i);
		/*
		 * -inf makes the scale inf and the zero point 0 - (-inf / inf), a
		 * NaN, whose conversion to an integer C leaves undefined (+inf
		 * alone gives scale inf and zero point 0, as ONNX Runtime).
		 */
		if (isinf(xd[i]) && xd[i] < 0.0f)
			return ie_op_error(ctx, "x holds -inf at element %lld: its zero point is undefined",
							   (long long) i);
	}
	scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
	zpf = 0.0f - mn / scale;
	zpf = zpf < 0.0f ? 0.0f : zpf > 255.0f ? 255.0f : zpf;
	zp = (int64_t) rintf(zpf);
	y = ie_tensor_new_uninit(IE_UINT8, x->ndim, x->dims);
	if (y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	if (ctx->n_outputs > 1)
	{
		ys = ie_tensor_new(IE_FLOAT, 0, NULL);
		if (ys == NULL)
			return ie_op_error(ctx, "out of memory for the output");
		ctx->outputs[1] = ys;
		*(float *) ys->data = scale;
	}
	if (ctx->n_outputs > 2)
	{
		yz = ie_tensor_new(IE_UINT8, 0, NULL);
		if (yz == NULL)
			return ie_op_error(ctx, "out of memory for the output");
		ctx->outputs[2] = yz;
		*(uint8_t *) yz->data = (uint8_t) zp;
	}
	job.y = y->data;
	job.scale = scale;
	job.zp = (float) zp;
	ie_parallel_for(nt, ntasks, dql_quant_task, &job);
	return 0;
}

/*
 * The shape of a scale or zero point t of an integer product or QLinear
 * operator: one value (a scalar or [1]), or, where allow_per, a 1-D tensor
 * of n values (one per row of A, column of B or output channel; what
 * names the input, dim what n counts).  Sets *per to whether it has n.
 */
static int
qper_shape(ie_node_ctx *ctx, const ie_tensor *t, int64_t n, const char *what,
		   const char *dim, bool allow_per, bool *per)
{
	char		b1[128];

	*per = false;
	if (ie_tensor_numel(t) == 1 && t->ndim <= 1)
		return 0;
	if (!allow_per || t->ndim != 1 || t->dims[0] != n)
		return ie_op_error(ctx, "%s of shape %s must be a scalar%s%s (%lld)", what,
						   ie_shape_str(b1, sizeof(b1), t->ndim, t->dims),
						   allow_per ? " or a 1-D tensor of one value per " : "",
						   allow_per ? dim : "", (long long) n);
	*per = true;
	return 0;
}

/*
 * A zero point of an integer product: absent (zero), one value, or a 1-D
 * tensor of n values (per row of A, per column of B, per output channel
 * of W; what names the input, dim what n counts).  Its type must be the
 * data's (t).  Sets *zp to its data or NULL, *per to whether it has n
 * values.
 */
static int
qzp_read(ie_node_ctx *ctx, const ie_tensor *z, ie_dtype t, int64_t n,
		 const char *what, const char *dim, bool allow_per, const void **zp,
		 bool *per)
{
	*zp = NULL;
	*per = false;
	if (z == NULL)
		return 0;
	if (z->dtype != t)
		return ie_op_error(ctx, "%s of type %s differs from its input's type %s", what,
						   ie_type_name(z->dtype), ie_type_name(t));
	if (qper_shape(ctx, z, n, what, dim, allow_per, per) != 0)
		return -1;
	*zp = z->data;
	return 0;
}

/* Refuses an integer product's input of a type other than int8 and uint8. */
static int
qint8_check(ie_node_ctx *ctx, const ie_tensor *t, const char *what)
{
	if (t->dtype != IE_INT8 && t->dtype != IE_UINT8)
		return ie_op_error(ctx, "%s of type %s is not supported (int8, uint8)", what,
						   ie_type_name(t->dtype));
	return 0;
}

/*
 * Values [e, e + cols) of int8 or uint8 tensor t less z into dst (float,
 * exact); returns the larger of m and their largest magnitude.
 */
static int32_t
qint_row_float(const ie_tensor *t, int64_t e, int64_t cols, int32_t z,
			   float *dst, int32_t m)
{
	if (t->dtype == IE_UINT8)
	{
		const uint8_t *src = (const uint8_t *) t->data + e;

		for (int64_t c = 0; c < cols; c++)
		{
			int32_t		v = (int32_t) src[c] - z;

			dst[c] = (float) v;
			m = abs(v) > m ? abs(v) : m;
		}
	}
	else
	{
		const int8_t *src = (const int8_t *) t->data + e;

		for (int64_t c = 0; c < cols; c++)
		{
			int32_t		v = (int32_t) src[c] - z;

			dst[c] = (float) v;
			m = abs(v) > m ? abs(v) : m;
		}
	}
	return m;
}

/*
 * qint_centered without N-D zero points: t's values (int8 or uint8, numel
 * n = groups * rows * cols) less zp (per_row: zp[r], per_col: zp[c], else
 * zp[0]; NULL: zero) into out (int32), or outf (float, exact: at most 255
 * in magnitude) when out is NULL, matrix by matrix and row by row (no
 * division per element); *amax gets the largest magnitude.
 */
static void
qint_centered_plain(const ie_tensor *t, int64_t rows, int64_t cols,
					const void *zp, bool per_row, bool per_col, int32_t *out,
					float *outf, int32_t *amax)
{
	int64_t		n = ie_tensor_numel(t),
				e = 0;
	int32_t		m = 0;

	for (int64_t g = 0; g < n / (rows * cols); g++)
		for (int64_t r = 0; r < rows; r++)
		{
			int32_t		z0 = zp == NULL ? 0 :
				(int32_t) quant_get(zp, t->dtype, per_row ? r : 0);

			if (out == NULL && !per_col)
			{
				/* the common case, in a loop the compiler vectorizes */
				m = qint_row_float(t, e, cols, z0, outf + e, m);
				e += cols;
				continue;
			}
			for (int64_t c = 0; c < cols; c++, e++)
			{
				int32_t		z = zp != NULL && per_col ?
					(int32_t) quant_get(zp, t->dtype, c) : z0;
				int32_t		v = (t->dtype == IE_UINT8 ?
								 ((const uint8_t *) t->data)[e] :
								 ((const int8_t *) t->data)[e]) - z;

				if (out != NULL)
					out[e] = v;
				else
					outf[e] = (float) v;
				if (abs(v) > m)
					m = abs(v);
			}
		}
	*amax = m;
}

/*
 * t's values less their zero point, as int32, into a new scratch buffer
 * [rows, cols] (t's numel = groups * rows * cols): the zero point is per
 * row (per_row), per column (per_col) or one value (zp[0]), or zero (zp
 * NULL); or, znd not NULL, a tensor of t's rank whose dims are t's or 1
 * (MatMulInteger's N-D zero points, qzp_nd_fits), broadcast over t.
 * *amax gets the largest magnitude of a centred value (at most 255 for
 * int8 and uint8).  NULL when out of memory.
 */
static int32_t *
qint_centered(const ie_tensor *t, int64_t rows, int64_t cols, const void *zp,
			  bool per_row, bool per_col, const ie_tensor *znd, int32_t *amax)
{
	int64_t		n = ie_tensor_numel(t);
	int32_t    *out = ie_scratch_new(IE_INT32, 1, &n);
	int64_t		zstride[IE_MAX_DIMS];

	*amax = 0;
	if (out == NULL)
		return NULL;
	if (znd == NULL)
	{
		qint_centered_plain(t, rows, cols, zp, per_row, per_col, out, NULL, amax);
		return out;
	}
	{
		int64_t		st = 1;

		for (int d = znd->ndim - 1; d >= 0; d--)
		{
			zstride[d] = znd->dims[d] == 1 ? 0 : st;
			st *= znd->dims[d];
		}
	}
	for (int64_t e = 0; e < n; e++)
	{
		int64_t		r = (e / cols) % rows,
					c = e % cols,
					z;

		if (znd != NULL)
		{
			int64_t		rest = e,
						zi = 0;

			for (int d = t->ndim - 1; d >= 0; d--)
			{
				zi += (rest % t->dims[d]) * zstride[d];
				rest /= t->dims[d];
			}
			z = quant_get(znd->data, t->dtype, zi);
		}
		else
			z = zp == NULL ? 0 : quant_get(zp, t->dtype, per_row ? r : per_col ? c : 0);
		out[e] = (int32_t) (quant_get(t->data, t->dtype, e) - z);
		if (abs(out[e]) > *amax)
			*amax = abs(out[e]);
	}
	return out;
}

/*
 * qint_centered's values as float (each an integer of at most 255 in
 * magnitude, so exact) in a new scratch buffer: written directly without
 * N-D zero points, else converted from qint_centered's int32.  *amax gets
 * the largest magnitude.  NULL when out of memory.
 */
static float *
qmm_centered(const ie_tensor *t, int64_t rows, int64_t cols, const void *zp,
			 bool per_row, bool per_col, const ie_tensor *znd, int32_t *amax)
{
	int64_t		n = ie_tensor_numel(t);
	float	   *out;
	int32_t    *c = NULL;

	*amax = 0;
	if (znd != NULL &&
		(c = qint_centered(t, rows, cols, zp, per_row, per_col, znd, amax)) == NULL)
		return NULL;
	out = ie_scratch_new(IE_FLOAT, 1, &n);
	if (out != NULL && c == NULL)
		qint_centered_plain(t, rows, cols, zp, per_row, per_col, NULL, out, amax);
	else if (out != NULL)
		for (int64_t e = 0; e < n; e++)
			out[e] = (float) c[e];
	free(c);
	return out;
}

/* An integer product as MatMulInteger and QLinearMatMul share it. */
typedef struct qmm
{
	ie_mm_shape sh;
	float	   *a,				/* A - a_zero_point, [..., M, K] */
			   *b;				/* B - b_zero_point, [..., K, N] */
	int32_t		amax,
				bmax;			/* largest |a|, |b| (at most 255) */
	int64_t		an;				/* values of A (0: an empty product) */
	int64_t    *offs;			/* ie_matmul_batch_offsets */
	bool		vnni;			/* on qmm_vnni: a and b not built */
	const ie_tensor *A,
			   *B;				/* the operands, for qmm_vnni */
	const void *zpa,
			   *zpb;			/* their zero points (qzp_read) or NULL */
	bool		pa,
				pb;				/* per row of A, per column of B */
} qmm;

/*
 * Whether zero point z is MatMulInteger's N-D form for operand t (rank 2 or
 * more, Operators.md: "If the input is N-D tensor with shape [D1, D2, M, K]
 * then zero point tensor may have shape [D1, D2, M, 1]", and [D1, D2, 1, N]
 * for B): t's rank, t's last-but-one dim and 1 last (rows, A) or 1 and t's
 * last dim (B), and each batch dim t's or 1 (broadcast, as the reference's
 * numpy subtraction).  A 2-D A takes [M, 1], a 2-D B [1, N].
 */
static bool
qzp_nd_fits(const ie_tensor *z, const ie_tensor *t, bool rows)
{
	int			r = t->ndim;

	if (z == NULL || r < 2 || z->ndim != r)
		return false;
	if (rows ? (z->dims[r - 2] != t->dims[r - 2] || z->dims[r - 1] != 1) :
		(z->dims[r - 2] != 1 || z->dims[r - 1] != t->dims[r - 1]))
		return false;
	for (int d = 0; d < r - 2; d++)
		if (z->dims[d] != 1 && z->dims[d] != t->dims[d])
			return false;
	return true;
}

/*
 * Reads A (input 0), B (input ia_b) and their zero points (inputs iza, izb,
 * or -1) into q: both int8 or uint8, shapes by ie_matmul_shape, a zero
 * point one value or per row of A (M) / per column of B (N), or with nd
 * (MatMulInteger) also of A's shape with a last dim of 1 / of B's shape
 * with a last-but-one dim of 1 (qzp_nd_fits); A and B centred into float
 * buffers (qmm_centered) in their own layouts, or, where qmm_vnni takes
 * the product (q->vnni: ie_qv_enabled, no N-D zero points, K and N at most
 * INT_MAX, B one matrix or as many as A), kept as they are.  An empty
 * product leaves q->an 0 and q's buffers NULL.  Free with qmm_free.
 */
static int
qmm_read(ie_node_ctx *ctx, int ib, int iza, int izb, bool nd, qmm *q)
{
	const ie_tensor *A = ctx->inputs[0],
			   *B = ctx->inputs[ib],
			   *za = iza >= 0 && iza < ctx->n_inputs ? ctx->inputs[iza] : NULL,
			   *zb = izb >= 0 && izb < ctx->n_inputs ? ctx->inputs[izb] : NULL,
			   *nda = NULL,
			   *ndb = NULL;
	const void *zpa = NULL,
			   *zpb = NULL;
	bool		pa = false,
				pb = false;

	memset(q, 0, sizeof(*q));
	if (qint8_check(ctx, A, "A") != 0 || qint8_check(ctx, B, "B") != 0 ||
		ie_matmul_shape(ctx, A, B, &q->sh) != 0)
		return -1;
	if (nd && za != NULL && za->ndim >= 2 && qzp_nd_fits(za, A, true))
		nda = za;
	if (nd && zb != NULL && zb->ndim >= 2 && qzp_nd_fits(zb, B, false))
		ndb = zb;
	if (nda != NULL && nda->dtype != A->dtype)
		return ie_op_error(ctx, "a_zero_point of type %s differs from its input's type %s",
						   ie_type_name(nda->dtype), ie_type_name(A->dtype));
	if (ndb != NULL && ndb->dtype != B->dtype)
		return ie_op_error(ctx, "b_zero_point of type %s differs from its input's type %s",
						   ie_type_name(ndb->dtype), ie_type_name(B->dtype));
	if ((nda == NULL &&
		 qzp_read(ctx, za, A->dtype, q->sh.M, "a_zero_point",
				  "row of A", true, &zpa, &pa) != 0) ||
		(ndb == NULL &&
		 qzp_read(ctx, zb, B->dtype, q->sh.N, "b_zero_point",
				  "column of B", true, &zpb, &pb) != 0))
		return -1;
	if (ie_tensor_numel(A) == 0 || ie_tensor_numel(B) == 0)
		return 0;
	q->an = ie_tensor_numel(A);
	/* qmm_vnni's case: the zero points qzp_read's, B one matrix or A's */
	q->vnni = nda == NULL && ndb == NULL && ie_qv_enabled() &&
		q->sh.K <= INT_MAX && q->sh.N <= INT_MAX &&
		(q->sh.nbatch == 1 ||
		 (q->sh.bbatch == 1 && q->sh.nbatch * q->sh.M * q->sh.K == q->an));
	if (q->vnni)
	{
		q->A = A;
		q->B = B;
		q->zpa = zpa;
		q->zpb = zpb;
		q->pa = pa;
		q->pb = pb;
		return 0;
	}
	q->a = qmm_centered(A, q->sh.M, q->sh.K, zpa, pa, false, nda, &q->amax);
	q->b = qmm_centered(B, q->sh.K, q->sh.N, zpb, false, pb, ndb, &q->bmax);
	q->offs = ie_scratch_new(IE_INT64, 2, (int64_t[]) {2, q->sh.nbatch});
	if (q->a == NULL || q->b == NULL || q->offs == NULL)
		return ie_op_error(ctx, "out of memory for the centred inputs");
	ie_matmul_batch_offsets(&q->sh, q->offs);
	return 0;
}

static void
qmm_free(qmm *q)
{
	free(q->a);
	free(q->b);
	free(q->offs);
}

/*
 * Element (bi, i, j) of q's product by a plain loop: the exact sum over k
 * of a * b (integers held exactly in float) in int64, its low 32 bits
 * (int32 accumulation).  Used only where OpenBLAS cannot take the product
 * (K or N past INT_MAX).
 */
static int32_t
qmm_dot(const qmm *q, int64_t bi, int64_t i, int64_t j)
{
	const float *a = q->a + (q->offs[bi] * q->sh.M + i) * q->sh.K,
			   *b = q->b + q->offs[q->sh.nbatch + bi] * q->sh.K * q->sh.N + j;
	int64_t		acc = 0;

	for (int64_t k = 0; k < q->sh.K; k++)
		acc += (int64_t) a[k] * (int64_t) b[k * q->sh.N];
	return (int32_t) (uint32_t) acc;
}

/*
 * A MatMulInteger's fused epilogue (fusion.h) as the product applies it:
 * the epilogue and its run-time scale's values (one, or one per column
 * with per_col; NULL without a run-time scale).
 */
typedef struct qmm_ep
{
	const ie_epilogue *ep;
	const float *scale;
	bool		per_col;
} qmm_ep;

/*
 * Runs e's epilogue over rows [r0, r0 + nr) of y (row stride ldy),
 * columns [c0, c0 + nc): their int32 sums become the epilogue's floats.
 */
static void
qmm_ep_rows(const qmm_ep *e, int32_t *y, int64_t ldy, int64_t r0, int64_t nr,
			int64_t c0, int64_t nc)
{
	for (int64_t r = r0; r < r0 + nr; r++)
		ie_epilogue_apply_row_i32(e->ep, y + r * ldy + c0, c0, nc, e->scale, e->per_col);
}

/* A batch of integer products on OpenBLAS sgemm, as tasks of QMM_ROWS rows. */
typedef struct qmm_job
{
	const float *a,
			   *b;				/* centred operands (qmm) */
	int32_t    *y;				/* [nbatch, M, N] */
	const int64_t *aoff,
			   *boff;			/* per product: matrix index into a and b */
	const qmm_ep *ep;			/* fused epilogue, or NULL */
	int64_t		M,
				K,
				N,
				kc,				/* terms per exact sgemm (qmm_product) */
				row_blocks;
	atomic_bool failed;			/* a task found no scratch memory */
} qmm_job;

/*
 * Task t: rows [r0, r0 + QMM_ROWS) of product t / row_blocks.  The sum
 * over K is taken in slices of kc terms, each one sgemm into the thread's
 * scratch (float [rows, N]) whose every value is an exact integer below
 * 2^24 (qmm_product); the slices add up in uint32, which keeps the low 32
 * bits of the exact sum, the plain loop's int32 accumulation.  A fused
 * epilogue runs on each row as its last slice is added.
 */
static void
qmm_task(void *arg, int64_t t, int worker)
{
	qmm_job    *j = arg;
	int64_t		bi = t / j->row_blocks,
				r0 = t % j->row_blocks * QMM_ROWS,
				rows = j->M - r0 < QMM_ROWS ? j->M - r0 : QMM_ROWS,
				n = rows * j->N;
	int32_t    *y = j->y + (bi * j->M + r0) * j->N;
	float	   *c = ie_thread_scratch((size_t) n * sizeof(float));
	const float *a = j->a + (j->aoff[bi] * j->M + r0) * j->K,
			   *b = j->b + j->boff[bi] * j->K * j->N;

	(void) worker;
	if (c == NULL)
	{
		atomic_store(&j->failed, true);
		return;
	}
	for (int64_t k0 = 0; k0 < j->K; k0 += j->kc)
	{
		int64_t		kk = j->K - k0 < j->kc ? j->K - k0 : j->kc;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
					(int) rows, (int) j->N, (int) kk, 1.0f,
					a + k0, (int) j->K, b + k0 * j->N, (int) j->N, 0.0f, c, (int) j->N);
		if (k0 + kk < j->K || j->ep == NULL)
		{
			if (k0 == 0)
				for (int64_t e = 0; e < n; e++)
					y[e] = (int32_t) c[e];
			else
				for (int64_t e = 0; e < n; e++)
					y[e] = (int32_t) ((uint32_t) y[e] + (uint32_t) (int32_t) c[e]);
			continue;
		}
		/* the last slice, row by row, each row's epilogue while it is hot */
		for (int64_t r = 0; r < rows; r++)
		{
			int32_t    *yr = y + r * j->N;
			const float *cr = c + r * j->N;

			if (k0 == 0)
				for (int64_t e = 0; e < j->N; e++)
					yr[e] = (int32_t) cr[e];
			else
				for (int64_t e = 0; e < j->N; e++)
					yr[e] = (int32_t) ((uint32_t) yr[e] + (uint32_t) (int32_t) cr[e]);
			qmm_ep_rows(j->ep, yr, j->N, 0, 1, 0, j->N);
		}
	}
}

/* Rows of one task of qmm_vnni. */
#define QMM_VNNI_ROWS 96

/* A product on the VNNI kernel (qgemm_vnni.h), as tasks of rows. */
typedef struct qmm_vjob
{
	const uint8_t *a;			/* A [rows, K], in place */
	bool		a_signed;		/* int8 A */
	const uint8_t *bp;			/* B packed (ie_qv_pack_b) */
	const int32_t *colsum,		/* its column sums */
			   *za,				/* za' per row */
			   *zb;				/* zb' per column */
	int32_t    *y;				/* [rows, N] */
	const qmm_ep *ep;			/* fused epilogue, or NULL */
	int64_t		rows,
				K,
				N;
} qmm_vjob;

/* The rows of one qmm_vtask, for its blocks' epilogue (qmm_vblock). */
typedef struct qmm_vrows
{
	const qmm_ep *ep;
	int32_t    *y;				/* the task's first row */
	int64_t		N;
} qmm_vrows;

/* ie_qv_block_fn: the fused epilogue on a block the kernel finished. */
static void
qmm_vblock(void *arg, int64_t r0, int64_t nr, int64_t c0, int64_t nc)
{
	const qmm_vrows *v = arg;

	qmm_ep_rows(v->ep, v->y, v->N, r0, nr, c0, nc);
}

/* Task t: rows [t * QMM_VNNI_ROWS, + QMM_VNNI_ROWS) of the product. */
static void
qmm_vtask(void *arg, int64_t t, int worker)
{
	const qmm_vjob *j = arg;
	int64_t		r0 = t * QMM_VNNI_ROWS,
				rows = j->rows - r0 < QMM_VNNI_ROWS ? j->rows - r0 : QMM_VNNI_ROWS;
	qmm_vrows	v = {j->ep, j->y + r0 * j->N, j->N};

	(void) worker;
	ie_qv_gemm(j->a + r0 * j->K, j->a_signed, j->K, rows, j->K, j->bp, j->colsum,
			   j->N, j->za + r0, j->zb, j->y + r0 * j->N, j->N,
			   j->ep != NULL ? qmm_vblock : NULL, &v);
}

/*
 * q's product (q->vnni: see qmm_read) into y (int32 [nbatch, M, N]) on
 * the VNNI kernel: the same low 32 bits of the exact sums as qmm_product's
 * float path.  B (one matrix) is packed once for the call; a batch of A
 * over that one B is folded into nbatch * M rows, row r's zero point
 * a_zero_point[r % M] where per row.  The zero points go into the
 * kernel's form (ie_qv_gemm: za' = za + 128 for int8 A, zb' = zb - 128
 * for uint8 B).  Tasks of QMM_VNNI_ROWS rows on up to n_threads threads;
 * a fused epilogue (ep, or NULL) runs on each block the kernel finishes.
 * Errors: out of memory for the packed B or the zero points.
 */
static int
qmm_vnni(ie_node_ctx *ctx, const qmm *q, int32_t *y, const qmm_ep *ep)
{
	const ie_mm_shape *sh = &q->sh;
	bool		as = q->A->dtype == IE_INT8,
				bu = q->B->dtype == IE_UINT8;
	int64_t		rows = sh->nbatch * sh->M,
				K = sh->K,
				N = sh->N,
				nbp = ie_qv_packed_b_size(K, N),
				ncs = ie_qv_colsum_size(N),
				work = rows * N * K;
	uint8_t    *bp = ie_scratch_new(IE_UINT8, 1, &nbp);
	int32_t    *colsum = ie_scratch_new(IE_INT32, 1, &ncs),
			   *za = ie_scratch_new(IE_INT32, 1, &rows),
			   *zb = ie_scratch_new(IE_INT32, 1, &N);
	int			nt = ctx->n_threads;
	qmm_vjob	j = {.a = q->A->data, .a_signed = as, .bp = bp, .colsum = colsum,
	.za = za, .zb = zb, .y = y, .ep = ep, .rows = rows, .K = K, .N = N};

	if (bp == NULL || colsum == NULL || za == NULL || zb == NULL)
	{
		free(bp);
		free(colsum);
		free(za);
		free(zb);
		return ie_op_error(ctx, "out of memory for the product");
	}
	for (int64_t r = 0; r < rows; r++)
		za[r] = (q->zpa == NULL ? 0 :
				 (int32_t) quant_get(q->zpa, q->A->dtype, q->pa ? r % sh->M : 0)) +
			(as ? 128 : 0);
	for (int64_t c = 0; c < N; c++)
		zb[c] = (q->zpb == NULL ? 0 :
				 (int32_t) quant_get(q->zpb, q->B->dtype, q->pb ? c : 0)) -
			(bu ? 128 : 0);
	ie_qv_pack_b(q->B->data, bu, K, N, bp, colsum);
	if (work < (int64_t) QMM_THREAD_WORK * nt)
		nt = (int) (work / QMM_THREAD_WORK > 1 ? work / QMM_THREAD_WORK : 1);
	ie_parallel_for(nt, (rows + QMM_VNNI_ROWS - 1) / QMM_VNNI_ROWS, qmm_vtask, &j);
	free(bp);
	free(colsum);
	free(za);
	free(zb);
	return 0;
}

/*
 * q's product into y (int32 [nbatch, M, N], row-major): for each batch
 * entry the sum over k of a[i, k] * b[k, j], its low 32 bits.
 *
 * Exactness: a and b are integers of magnitude at most amax, bmax <= 255,
 * so each product is an integer of at most 65025.  The sum is cut into
 * slices of kc terms with kc * amax * bmax < 2^24 (kc >= 258 whatever the
 * values): every partial sum of a slice, in whatever order OpenBLAS adds
 * them, is then an integer below 2^24, which float holds exactly, so each
 * slice's sgemm result is its exact integer sum.  Adding the slices in
 * uint32 gives the exact total modulo 2^32: the low 32 bits the plain
 * loop kept.  (A double dgemm would be exact over the whole K too, but
 * runs at half sgemm's rate.)  K or N past INT_MAX (OpenBLAS takes int)
 * falls back to that loop.  Where qmm_read chose the VNNI kernel
 * (q->vnni), qmm_vnni takes the product instead, to the same bits.
 *
 * A batch whose B is one matrix and whose A holds every entry is folded
 * into one product of nbatch * M rows, as MatMul does.  The tasks run on
 * up to n_threads threads, fewer for a small product.  With ep (a fused
 * epilogue, or NULL) every row of y ends as the epilogue's floats, each
 * block converted as soon as its sums are final.  Errors: out of memory
 * for the tasks' scratch (checked at its largest before the parallel
 * region).
 */
static int
qmm_product(ie_node_ctx *ctx, const qmm *q, int32_t *y, const qmm_ep *ep)
{
	const ie_mm_shape *sh = &q->sh;
	qmm_job		j = {.a = q->a, .b = q->b, .y = y, .aoff = q->offs,
	.boff = q->offs + sh->nbatch, .ep = ep, .M = sh->M, .K = sh->K, .N = sh->N};
	int64_t		nbatch = sh->nbatch,
				zero[2] = {0, 0},
				work,
				prod = (int64_t) q->amax * q->bmax;
	int			nt = ctx->n_threads;

	if (q->vnni)
		return qmm_vnni(ctx, q, y, ep);
	if (sh->K > INT_MAX || sh->N > INT_MAX)
	{
		int64_t		e = 0;

		for (int64_t bi = 0; bi < nbatch; bi++)
			for (int64_t i = 0; i < sh->M; i++)
			{
				for (int64_t jj = 0; jj < sh->N; jj++)
					y[e++] = qmm_dot(q, bi, i, jj);
				if (ep != NULL)
					qmm_ep_rows(ep, y + e - sh->N, sh->N, 0, 1, 0, sh->N);
			}
		return 0;
	}
	/* the most terms whose sum stays below 2^24 (all of K if it does) */
	j.kc = prod == 0 ? sh->K : (16777216 - 1) / prod;
	if (j.kc > sh->K)
		j.kc = sh->K;
	if (sh->bbatch == 1 && nbatch * sh->M * sh->K == q->an)
	{
		j.M = nbatch * sh->M;
		j.aoff = j.boff = zero;
		nbatch = 1;
	}
	if (!ie_scratch_fits(IE_FLOAT, 2, (int64_t[]) {j.M < QMM_ROWS ? j.M : QMM_ROWS, j.N}))
		return ie_op_error(ctx, "out of memory for the product");
	j.row_blocks = (j.M + QMM_ROWS - 1) / QMM_ROWS;
	atomic_init(&j.failed, false);
	work = nbatch * j.M * j.N * j.K;
	if (work < (int64_t) QMM_THREAD_WORK * nt)
		nt = (int) (work / QMM_THREAD_WORK > 1 ? work / QMM_THREAD_WORK : 1);
	ie_parallel_for(nt, nbatch * j.row_blocks, qmm_task, &j);
	if (atomic_load(&j.failed))
		return ie_op_error(ctx, "out of memory for the product");
	return 0;
}

/*
 * Whether a fused MatMulInteger's run-time scale s multiplies its product
 * (q's shape; b_matrix: B has rank 2 or more, so the output's last axis
 * has the N columns) element by element as the epilogue does, widening
 * nothing: rank at most the product's and one value, or one per column
 * along the last axis with every other dim 1 (sets *per_col).
 */
static bool
qmm_scale_fits(const qmm *q, bool b_matrix, const ie_tensor *s, bool *per_col)
{
	*per_col = false;
	if (s->ndim > q->sh.ond)
		return false;
	if (ie_tensor_numel(s) == 1)
		return true;
	if (!b_matrix || s->ndim < 1 || s->dims[s->ndim - 1] != q->sh.N)
		return false;
	for (int d = 0; d < s->ndim - 1; d++)
		if (s->dims[d] != 1)
			return false;
	*per_col = true;
	return true;
}

/*
 * A fused MatMulInteger whose run-time scale s does not fit
 * (qmm_scale_fits): the nodes' own way, the whole int32 product, its
 * conversion to float (Cast's), the Mul operator on it and s (its
 * broadcasting, its errors), then the epilogue's steps after the Mul on
 * each row of the result.  Errors: out of memory, and the Mul's.
 */
static int
qmm_fused_apart(ie_node_ctx *ctx, const qmm *q, const ie_tensor *s)
{
	ie_tensor  *P = q->an > 0 ? ie_tensor_new_uninit(IE_INT32, q->sh.ond, q->sh.odims) :
		ie_tensor_new(IE_INT32, q->sh.ond, q->sh.odims);
	ie_tensor  *C = NULL,
			   *Y;
	const ie_tensor *ins[2];
	ie_tensor  *outs[1] = {NULL};
	ie_node_ctx mc;
	int64_t		n,
				len;
	int			rc;

	if (P == NULL)
		return ie_op_error(ctx, "out of memory for the product");
	n = ie_tensor_numel(P);
	if (q->an > 0 && n > 0 && qmm_product(ctx, q, P->data, NULL) != 0)
	{
		ie_tensor_destroy(&P);
		return -1;
	}
	C = ie_tensor_new_uninit(IE_FLOAT, P->ndim, P->dims);
	if (C == NULL)
	{
		ie_tensor_destroy(&P);
		return ie_op_error(ctx, "out of memory for the product");
	}
	for (int64_t e = 0; e < n; e++)
		((float *) C->data)[e] = (float) ((const int32_t *) P->data)[e];
	ie_tensor_destroy(&P);
	/* the Mul node that was fused, run as the operator */
	mc = *ctx;
	mc.op_type = "Mul";
	mc.n_inputs = 2;
	ins[0] = C;
	ins[1] = s;
	mc.inputs = ins;
	mc.n_outputs = 1;
	mc.outputs = outs;
	mc.n_attrs = 0;
	mc.attrs = NULL;
	mc.epilogue = NULL;
	mc.donor = NULL;
	rc = ie_op_lookup("Mul") (&mc);
	ctx->err_kind = mc.err_kind;
	ie_tensor_destroy(&C);
	if (rc != 0)
	{
		ie_tensor_destroy(&outs[0]);
		return -1;
	}
	Y = outs[0];
	ctx->outputs[0] = Y;
	/* its rows are N columns, or with N 1 only scalar constants follow */
	len = Y->ndim > 0 ? Y->dims[Y->ndim - 1] : 1;
	for (int64_t r = 0; len > 0 && r < ie_tensor_numel(Y) / len; r++)
		ie_epilogue_apply_row_scaled(ctx->epilogue, (float *) Y->data + r * len, 0, len);
	return 0;
}

/*
 * A MatMulInteger with a fused epilogue (fusion.h): output 0 is float, the
 * Cast of the sums, the Mul by the scale and what follows, each block
 * converted in place by the product as soon as its sums are final.  The
 * scale computed at run time (input ie_epilogue_runtime_input, float by
 * the node's type check) must fit (qmm_scale_fits), else qmm_fused_apart.
 */
static int
qmm_fused(ie_node_ctx *ctx, const qmm *q)
{
	int			ri = ie_epilogue_runtime_input(ctx->epilogue);
	const ie_tensor *s = ri >= 0 && ri < ctx->n_inputs ? ctx->inputs[ri] : NULL;
	qmm_ep		e = {.ep = ctx->epilogue};
	ie_tensor  *Y;
	int64_t		n;

	if (ri >= 0 && (s == NULL || s->dtype != IE_FLOAT))
		return ie_op_error(ctx, "the fused scale is not a float tensor");
	if (s != NULL && !qmm_scale_fits(q, ctx->inputs[1]->ndim >= 2, s, &e.per_col))
		return qmm_fused_apart(ctx, q, s);
	e.scale = s != NULL ? s->data : NULL;
	/* an empty sum (K == 0) is zeros, whose bits are float 0 too */
	Y = q->an > 0 ? ie_tensor_new_uninit(IE_FLOAT, q->sh.ond, q->sh.odims) :
		ie_tensor_new(IE_FLOAT, q->sh.ond, q->sh.odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	/* a 0-D product whose fused chain broadcasts it with a 1-D constant */
	ie_epilogue_widen_output(ctx->epilogue, Y);
	ctx->outputs[0] = Y;
	n = ie_tensor_numel(Y);
	if (n == 0)
		return 0;
	if (q->an > 0)
		return qmm_product(ctx, q, Y->data, &e);
	qmm_ep_rows(&e, Y->data, q->sh.N, 0, n / q->sh.N, 0, q->sh.N);
	return 0;
}

/*
 * MatMulInteger (10): A[..., M, K] x B[..., K, N] -> int32 [..., M, N] with
 * MatMul's shape rules, A and B int8 or uint8, less a_zero_point (one
 * value, one per row of A, or N-D: A's shape with a last dim of 1) and
 * b_zero_point (one value, one per column of B, or N-D: B's shape with a
 * last-but-one dim of 1), qzp_nd_fits.  With a fused epilogue, float
 * (qmm_fused).
 */
static int
op_matmul_integer(ie_node_ctx *ctx)
{
	qmm			q;
	ie_tensor  *Y;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs A and B");
	if (qmm_read(ctx, 1, 2, 3, true, &q) != 0)
	{
		qmm_free(&q);
		return -1;
	}
	if (ctx->epilogue != NULL)
	{
		int			rc = qmm_fused(ctx, &q);

		qmm_free(&q);
		return rc;
	}
	/* an empty sum (K == 0) gives zeros; else qmm_product writes all */
	Y = q.an > 0 ? ie_tensor_new_uninit(IE_INT32, q.sh.ond, q.sh.odims) :
		ie_tensor_new(IE_INT32, q.sh.ond, q.sh.odims);
	if (Y == NULL)
	{
		qmm_free(&q);
		return ie_op_error(ctx, "out of memory for the output");
	}
	ctx->outputs[0] = Y;
	if (q.an > 0 && ie_tensor_numel(Y) > 0 && qmm_product(ctx, &q, Y->data, NULL) != 0)
	{
		qmm_free(&q);
		return -1;
	}
	qmm_free(&q);
	return 0;
}

/*
 * A QLinear operator's scale: one value, or (per) a 1-D tensor of n
 * values; float or float16.  Sets *per.
 */
static int
qscale_read(ie_node_ctx *ctx, const ie_tensor *s, int64_t n, const char *what,
			const char *dim, bool allow_per, bool *per)
{
	*per = false;
	if (quant_check_scale(ctx, s, what) != 0)
		return -1;
	return qper_shape(ctx, s, n, what, dim, allow_per, per);
}

/*
 * The output type and zero point of a QLinear operator: y_zero_point's
 * type (int8 or uint8; it must be given, and one value), its value into
 * *zp and the range into lo, hi.
 */
static int
qout_read(ie_node_ctx *ctx, const ie_tensor *z, ie_dtype *yt, int64_t *zp,
		  int64_t *lo, int64_t *hi)
{
	const void *d;
	bool		per;

	if (z == NULL)
		return ie_op_error(ctx, "needs input y_zero_point");
	if (qint8_check(ctx, z, "y_zero_point") != 0 ||
		qzp_read(ctx, z, z->dtype, 1, "y_zero_point", "", false, &d, &per) != 0)
		return -1;
	*yt = z->dtype;
	*zp = quant_get(d, z->dtype, 0);
	quant_range(*yt, lo, hi);
	return 0;
}

/*
 * QLinearMatMul (10, 21): inputs a, a_scale, a_zero_point, b, b_scale,
 * b_zero_point, y_scale, y_zero_point.  The int32 product of (a -
 * a_zero_point) and (b - b_zero_point) as MatMulInteger computes it, times
 * a_scale * b_scale / y_scale (qmult: float, or float16 for float16
 * scales, opset 21; a's scale and zero point one value
 * or per row of a, b's per column of b), plus y_zero_point, rounded half
 * to even and saturated to y_zero_point's type (int8 or uint8).
 */
static int
op_qlinear_matmul(ie_node_ctx *ctx)
{
	qmm			q;
	ie_tensor  *Y;
	ie_dtype	yt;
	int64_t		yzp,
				lo,
				hi,
				e = 0;
	int32_t    *acc = NULL;
	bool		psa,
				psb,
				psy;
	const ie_tensor *sa,
			   *sb,
			   *sy;
	bool		half;

	if (ctx->n_inputs < 8)
		return ie_op_error(ctx, "needs 8 inputs (a, a_scale, a_zero_point, b, b_scale, "
						   "b_zero_point, y_scale, y_zero_point)");
	for (int i = 0; i < 8; i++)
		if (ctx->inputs[i] == NULL && i != 2 && i != 5 && i != 7)
			return ie_op_error(ctx, "input %d must be given", i);
	if (qmm_read(ctx, 3, 2, 5, false, &q) != 0 ||
		qscale_read(ctx, ctx->inputs[1], q.sh.M, "a_scale", "row of a", true, &psa) != 0 ||
		qscale_read(ctx, ctx->inputs[4], q.sh.N, "b_scale", "column of b", true, &psb) != 0 ||
		qscale_read(ctx, ctx->inputs[6], 1, "y_scale", "", false, &psy) != 0 ||
		qout_read(ctx, ctx->inputs[7], &yt, &yzp, &lo, &hi) != 0)
	{
		qmm_free(&q);
		return -1;
	}
	Y = ie_tensor_new(yt, q.sh.ond, q.sh.odims);
	if (Y == NULL)
	{
		qmm_free(&q);
		return ie_op_error(ctx, "out of memory for the output");
	}
	ctx->outputs[0] = Y;
	sa = ctx->inputs[1];
	sb = ctx->inputs[4];
	sy = ctx->inputs[6];
	half = sa->dtype == IE_FLOAT16 && sb->dtype == IE_FLOAT16 && sy->dtype == IE_FLOAT16;
	if (q.an > 0 && ie_tensor_numel(Y) > 0)
	{
		/* the int32 accumulators [nbatch, M, N] */
		int64_t		n = ie_tensor_numel(Y);

		acc = ie_scratch_new(IE_INT32, 1, &n);
		if (acc == NULL)
		{
			qmm_free(&q);
			return ie_op_error(ctx, "out of memory for the accumulators");
		}
		if (qmm_product(ctx, &q, acc, NULL) != 0)
		{
			free(acc);
			qmm_free(&q);
			return -1;
		}
	}
	if (ie_tensor_numel(Y) > 0)
		for (int64_t bi = 0; bi < q.sh.nbatch; bi++)
			for (int64_t i = 0; i < q.sh.M; i++)
				for (int64_t j = 0; j < q.sh.N; j++, e++)
				{
					float		mult = qmult(qf_get(sa->data, sa->dtype, psa ? i : 0),
											 qf_get(sb->data, sb->dtype, psb ? j : 0),
											 qf_get(sy->data, sy->dtype, 0), half);
					int32_t		a = acc != NULL ? acc[e] : 0;

					quant_put(Y->data, yt, e,
							  quant_round_sat((double) a * mult, yzp, lo, hi));
				}
	free(acc);
	qmm_free(&q);
	return 0;
}

/* An integer convolution's geometry and centred operands. */
typedef struct qconv
{
	int64_t		n,
				c,
				m,
				group,
				cg,				/* input channels per group */
				mg,				/* output channels per group */
				K;				/* cg * kernel taps: terms of each sum */
	ie_spatial	sp;
	float	   *x,				/* x - x_zero_point, [n, c, in...] */
			   *w;				/* w - w_zero_point, [m, K] */
	int32_t		xmax,
				wmax;			/* largest |x|, |w| (at most 255) */
} qconv;

/*
 * Reads ConvInteger's or QLinearConv's x and w (inputs ix, iw: int8 or
 * uint8, rank 3 to 5, w [m, c / group, k...]), their zero points (izx,
 * izw, or -1: x's one value, w's one value or one per output channel), the
 * attributes (spatial.c: kernel_shape, strides, dilations, pads, auto_pad;
 * group) and the output extents into q, then centres x and w into float
 * (qmm_centered: integers of at most 255 in magnitude, exact).  An empty x
 * or w leaves q's buffers NULL.  Free with qconv_free.
 */
static int
qconv_read(ie_node_ctx *ctx, int ix, int izx, int iw, int izw, qconv *q)
{
	const ie_tensor *X = ctx->inputs[ix],
			   *W = ctx->inputs[iw],
			   *zx = izx >= 0 && izx < ctx->n_inputs ? ctx->inputs[izx] : NULL,
			   *zw = izw >= 0 && izw < ctx->n_inputs ? ctx->inputs[izw] : NULL;
	const void *zpx,
			   *zpw;
	bool		px,
				pw;

	memset(q, 0, sizeof(*q));
	if (qint8_check(ctx, X, "x") != 0 || qint8_check(ctx, W, "w") != 0)
		return -1;
	if (X->ndim < 3 || X->ndim > 5)
		return ie_op_error(ctx, "unsupported input rank %d (1 to 3 spatial axes)", X->ndim);
	if (W->ndim != X->ndim)
		return ie_op_error(ctx, "weight rank %d differs from input rank %d", W->ndim, X->ndim);
	q->n = X->dims[0];
	q->c = X->dims[1];
	q->m = W->dims[0];
	q->group = ie_attr_int(ctx, "group", 1);
	if (q->group < 1 || q->c % q->group != 0 || q->m % q->group != 0)
		return ie_op_error(ctx, "group %lld does not divide channels %lld and %lld",
						   (long long) q->group, (long long) q->c, (long long) q->m);
	if (W->dims[1] != q->c / q->group)
		return ie_op_error(ctx, "weight has %lld input channels, expected %lld",
						   (long long) W->dims[1], (long long) (q->c / q->group));
	if (qzp_read(ctx, zx, X->dtype, 1, "x_zero_point", "", false, &zpx, &px) != 0 ||
		qzp_read(ctx, zw, W->dtype, q->m, "w_zero_point", "output channel", true,
				 &zpw, &pw) != 0)
		return -1;
	ie_spatial_init(&q->sp, X->ndim - 2);
	if (ie_spatial_read_kernel(ctx, &q->sp, W->dims + 2) != 0 ||
		ie_spatial_read_attrs(ctx, &q->sp) != 0 ||
		ie_spatial_output(ctx, &q->sp, X->dims + 2,
						  ie_attr_string(ctx, "auto_pad", "NOTSET"), 0) != 0)
		return -1;
	q->cg = q->c / q->group;
	q->mg = q->m / q->group;
	q->K = q->cg * q->sp.k[0] * q->sp.k[1] * q->sp.k[2];
	if (ie_tensor_numel(X) == 0 || ie_tensor_numel(W) == 0)
		return 0;
	q->x = qmm_centered(X, 1, ie_tensor_numel(X), zpx, false, false, NULL, &q->xmax);
	q->w = qmm_centered(W, q->m, q->K, zpw, pw, false, NULL, &q->wmax);
	if (q->x == NULL || q->w == NULL)
		return ie_op_error(ctx, "out of memory for the centred inputs");
	return 0;
}

static void
qconv_free(qconv *q)
{
	free(q->x);
	free(q->w);
}

/*
 * The sum of output (b, oc, oz, oy, ox) of q's convolution by a plain
 * loop over the channel group's inputs and the kernel taps inside the
 * input (padding reads as zero, i.e. as the zero point): exact in int64,
 * its low 32 bits.  Used only where OpenBLAS cannot take the product (a
 * sum, output-channel group or output row past INT_MAX; qconv_run).
 */
static int32_t
qconv_acc(const qconv *q, int64_t b, int64_t oc, int64_t oz, int64_t oy,
		  int64_t ox)
{
	const ie_spatial *s = &q->sp;
	int64_t		g = oc / q->mg,
				ipix = s->in[0] * s->in[1] * s->in[2],
				taps = s->k[0] * s->k[1] * s->k[2],
				acc = 0;

	for (int64_t ci = 0; ci < q->cg; ci++)
	{
		const float *xp = q->x + (b * q->c + g * q->cg + ci) * ipix;
		const float *wp = q->w + (oc * q->cg + ci) * taps;

		for (int64_t kz = 0; kz < s->k[0]; kz++)
		{
			int64_t		iz = oz * s->stride[0] - s->pad_begin[0] + kz * s->dil[0];

			if (iz < 0 || iz >= s->in[0])
				continue;
			for (int64_t ky = 0; ky < s->k[1]; ky++)
			{
				int64_t		iy = oy * s->stride[1] - s->pad_begin[1] + ky * s->dil[1];

				if (iy < 0 || iy >= s->in[1])
					continue;
				for (int64_t kx = 0; kx < s->k[2]; kx++)
				{
					int64_t		ix = ox * s->stride[2] - s->pad_begin[2] + kx * s->dil[2];

					if (ix < 0 || ix >= s->in[2])
						continue;
					acc += (int64_t) xp[(iz * s->in[1] + iy) * s->in[2] + ix] *
						(int64_t) wp[(kz * s->k[1] + ky) * s->k[2] + kx];
				}
			}
		}
	}
	return (int32_t) (uint32_t) acc;
}

/*
 * One integer convolution, as tasks (image, group, chunk) on the engine's
 * pool: a chunk is a block of output columns (pointwise: a 1x1, stride-1,
 * unpadded kernel multiplies the weights by x directly) or a band of
 * output rows (through an im2col band), as Conv's (ops_conv.c).  The sums
 * go to ConvInteger's int32 output, or (y set) QLinearConv's requantized.
 */
typedef struct qconv_job
{
	const qconv *q;
	int32_t    *acc;			/* ConvInteger: int32 [n, m, opix], or NULL */
	void	   *y;				/* QLinearConv: yt [n, m, opix], or NULL */
	ie_dtype	yt;
	const int32_t *bias;		/* QLinearConv's B [m], or NULL */
	const float *mult;			/* QLinearConv's multiplier per output channel */
	float	   *dw;				/* depthwise: the float sums [n, m, opix] */
	int64_t		yzp,
				lo,
				hi,
				ipix,
				opix,
				kc,				/* terms per exact sgemm (qconv_run) */
				chunk,			/* columns or rows per chunk */
				n_chunks;
	bool		pointwise;
	atomic_bool failed;			/* a task found no scratch memory */
} qconv_job;

/*
 * Stores the sums acc [rows, nc] (row stride nc; or, acc NULL, the float
 * sums fsum, exact integers below 2^24) of image b, output channels [oc0,
 * oc0 + rows) and output columns [c0, c0 + nc): ConvInteger's as they are;
 * QLinearConv's plus B (in uint32: the low 32 bits of the exact total, as
 * the plain loop kept), times the channel's multiplier (as double),
 * rounded half to even, plus y_zero_point and saturated (quant_round_sat),
 * as the loop did.
 */
static void
qconv_store(const qconv_job *j, const int32_t *acc, const float *fsum, int64_t b,
			int64_t oc0, int64_t rows, int64_t c0, int64_t nc)
{
	for (int64_t r = 0; r < rows; r++)
	{
		int64_t		oc = oc0 + r,
					e = (b * j->q->m + oc) * j->opix + c0;
		const int32_t *a = acc != NULL ? acc + r * nc : NULL;
		const float *f = fsum != NULL ? fsum + r * nc : NULL;
		uint32_t	bias;
		double		mult;

		if (j->y == NULL)
		{
			if (a != NULL)
				memcpy(j->acc + e, a, (size_t) nc * sizeof(int32_t));
			else
				for (int64_t i = 0; i < nc; i++)
					j->acc[e + i] = (int32_t) f[i];
			continue;
		}
		bias = j->bias != NULL ? (uint32_t) j->bias[oc] : 0;
		mult = j->mult[oc];
		for (int64_t i = 0; i < nc; i++)
		{
			int32_t		s = a != NULL ? a[i] : (int32_t) f[i],
						v = (int32_t) (bias + (uint32_t) s);

			quant_put(j->y, j->yt, e + i,
					  quant_round_sat((double) v * mult, j->yzp, j->lo, j->hi));
		}
	}
}

/*
 * Task t of a qconv_job.  The weights [mg, K] times the chunk's columns of
 * x (pointwise) or of its im2col band [K, nc], built in this thread's
 * scratch, are summed over K in slices of kc terms, each one sgemm into
 * the scratch (float [mg, nc]) whose values are exact integers below 2^24
 * (qconv_run); the slices add up in uint32 (the low 32 bits of the exact
 * sum, int32 accumulation), then qconv_store writes them.
 */
static void
qconv_task(void *arg, int64_t t, int worker)
{
	qconv_job  *j = arg;
	const qconv *q = j->q;
	int64_t		chunk = t % j->n_chunks,
				gi = t / j->n_chunks % q->group,
				b = t / j->n_chunks / q->group,
				ow = q->sp.out[2],
				r0 = chunk * j->chunk,
				c0,
				nc,
				ncol,
				ldb;
	const float *x = q->x + (b * q->c + gi * q->cg) * j->ipix,
			   *w = q->w + gi * q->mg * q->K,
			   *bmat;
	float	   *col,
			   *c;
	int32_t    *acc;

	(void) worker;
	if (j->pointwise)
	{
		c0 = r0;
		nc = j->opix - c0 < j->chunk ? j->opix - c0 : j->chunk;
		ncol = 0;
	}
	else
	{
		int64_t		rows = q->sp.out[0] * q->sp.out[1],
					r1 = r0 + j->chunk < rows ? r0 + j->chunk : rows;

		c0 = r0 * ow;
		nc = (r1 - r0) * ow;
		ncol = q->K * nc;
	}
	/* im2col band, then the slice's float sums, then the int32 sums */
	col = ie_thread_scratch((size_t) (ncol + 2 * q->mg * nc) * sizeof(float));
	if (col == NULL)
	{
		atomic_store(&j->failed, true);
		return;
	}
	c = col + ncol;
	acc = (int32_t *) (c + q->mg * nc);
	if (j->pointwise)
	{
		bmat = x + c0;
		ldb = j->ipix;
	}
	else
	{
		ie_spatial_im2col(&q->sp, x, q->cg, r0, r0 + nc / ow, col, nc);
		bmat = col;
		ldb = nc;
	}
	for (int64_t k0 = 0; k0 < q->K; k0 += j->kc)
	{
		int64_t		kk = q->K - k0 < j->kc ? q->K - k0 : j->kc,
					n = q->mg * nc;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
					(int) q->mg, (int) nc, (int) kk, 1.0f, w + k0, (int) q->K,
					bmat + k0 * ldb, (int) ldb, 0.0f, c, (int) nc);
		if (k0 == 0)
			for (int64_t e = 0; e < n; e++)
				acc[e] = (int32_t) c[e];
		else
			for (int64_t e = 0; e < n; e++)
				acc[e] = (int32_t) ((uint32_t) acc[e] + (uint32_t) (int32_t) c[e]);
	}
	qconv_store(j, acc, NULL, b, gi * q->mg, q->mg, c0, nc);
}

/*
 * Task p of a depthwise qconv_job (one input channel per group, every sum
 * exact in float: qconv_run): plane p of n * group by Conv's direct loop
 * (ie_conv_depthwise_plane) into j->dw, then qconv_store.
 */
static void
qconv_dw_task(void *arg, int64_t p, int worker)
{
	qconv_job  *j = arg;
	const qconv *q = j->q;
	int64_t		b = p / q->group,
				gi = p % q->group;
	float	   *f = j->dw + (b * q->m + gi * q->mg) * j->opix;

	(void) worker;
	if (ie_conv_depthwise_plane(&q->sp, q->x + (b * q->c + gi) * j->ipix,
								q->w + gi * q->mg * q->K, NULL, q->mg, f) != 0)
	{
		atomic_store(&j->failed, true);
		return;
	}
	qconv_store(j, NULL, f, b, gi * q->mg, q->mg, 0, j->opix);
}

/*
 * Whether depthwise convolution q (one input channel per group) may take
 * Conv's direct loop (qconv_run): the scratch each plane's task takes
 * (ie_conv_depthwise_scratch: a zero-bordered plane, or one column phase
 * per column stride, however far past the input's width the stride goes)
 * fits the tensor limit and is no larger than the input plane and its
 * im2col together.  A stride or padding far past the input fails that
 * (im2col takes only the columns the taps read, a band at a time); the
 * refusal ie_scratch_fits may note is cleared by im2col's own check.
 */
static bool
qconv_dw_fits(const qconv *q, int64_t ipix, int64_t opix)
{
	int64_t		sd[3];
	int			snd = ie_conv_depthwise_scratch(&q->sp, sd);
	double		size = 1;

	if (snd == 0)
		return true;
	if (!ie_scratch_fits(IE_FLOAT, snd, sd))
		return false;
	for (int i = 0; i < snd; i++)
		size *= (double) sd[i];
	return size <= (double) ipix + (double) q->K * (double) opix;
}

/*
 * A depthwise convolution (qconv_run, its scratch checked by
 * qconv_dw_fits) by Conv's direct loop, one task per (image, group) plane,
 * its float sums in a buffer of the output's size.  Errors: out of memory
 * for the sums or a task's scratch.
 */
static int
qconv_depthwise(ie_node_ctx *ctx, qconv_job *j)
{
	const qconv *q = j->q;
	int64_t		total = q->n * q->m * j->opix,
				planes = q->n * q->group;
	int			nt = ctx->n_threads;

	j->dw = ie_scratch_new(IE_FLOAT, 1, &total);
	if (j->dw == NULL)
		return ie_op_error(ctx, "out of memory for the depthwise sums");
	/* below ~32K outputs per thread, as Conv, the hand-off is not worth it */
	if ((int64_t) nt * 32768 > total)
		nt = (int) (total / 32768 > 1 ? total / 32768 : 1);
	atomic_init(&j->failed, false);
	ie_parallel_for(nt, planes, qconv_dw_task, j);
	free(j->dw);
	j->dw = NULL;
	if (atomic_load(&j->failed))
		return ie_op_error(ctx, "out of memory for the depthwise taps");
	return 0;
}

/*
 * Every output of j's convolution by the plain loop (qconv_acc; sums of
 * zero when x or w is empty), stored a pixel at a time by qconv_store.
 */
static void
qconv_loop(const qconv_job *j)
{
	const qconv *q = j->q;
	const ie_spatial *s = &q->sp;

	for (int64_t b = 0; b < q->n; b++)
		for (int64_t oc = 0; oc < q->m; oc++)
		{
			int64_t		p = 0;

			for (int64_t oz = 0; oz < s->out[0]; oz++)
				for (int64_t oy = 0; oy < s->out[1]; oy++)
					for (int64_t ox = 0; ox < s->out[2]; ox++, p++)
					{
						int32_t		acc = q->x != NULL ?
							qconv_acc(q, b, oc, oz, oy, ox) : 0;

						qconv_store(j, &acc, NULL, b, oc, 1, p, 1);
					}
		}
}

/*
 * j's convolution (j->q read; the output and, for QLinearConv, y's fields
 * set) into its output [n, m, out...]: on OpenBLAS sgemm in qconv_task's
 * chunks, output-row bands whose im2col fits QCONV_COL_BUDGET floats (or
 * the tensor limit when smaller) or, pointwise, blocks of output columns
 * sized as Conv's; on up to n_threads threads, fewer for a small layer.
 *
 * Exactness, as qmm_product's: the centred x and w are integers of
 * magnitude at most xmax, wmax <= 255, so over a slice of kc terms with
 * kc * xmax * wmax < 2^24 (kc >= 258) every partial sum, in whatever order
 * OpenBLAS adds, is an integer float holds exactly; the slices add up in
 * uint32 to the exact sum modulo 2^32, which the plain loop kept.
 *
 * A depthwise convolution (one input channel per group) whose sums of K
 * taps stay exact in float (K <= kc: always for K <= 258) takes Conv's
 * direct loop instead (qconv_depthwise) when that loop's scratch is
 * bounded by the plane's (qconv_dw_fits; not for a stride or padding far
 * past the input): any order of adding exact integers below 2^24 gives
 * the exact sum, so either path gives the same result.  An empty x or w
 * gives sums of zero; a sum (K), a group's output channels or an output
 * row past INT_MAX (OpenBLAS takes int) falls back to the plain loop
 * (qconv_loop).
 * Errors: out of memory for a task's scratch (checked at its largest
 * before the parallel region).
 */
static int
qconv_run(ie_node_ctx *ctx, qconv_job *j)
{
	const qconv *q = j->q;
	const ie_spatial *s = &q->sp;
	int64_t		ow = s->out[2],
				rows = s->out[0] * s->out[1],
				prod = (int64_t) q->xmax * q->wmax,
				units,
				sd[2];
	double		work;
	int			nt = ctx->n_threads;

	j->ipix = s->in[0] * s->in[1] * s->in[2];
	j->opix = rows * ow;
	if (q->x == NULL || q->K > INT_MAX || q->mg > INT_MAX || ow > INT_MAX)
	{
		qconv_loop(j);
		return 0;
	}
	/* the most terms whose sum stays below 2^24 (all of K if it does) */
	j->kc = prod == 0 ? q->K : (16777216 - 1) / prod;
	if (j->kc > q->K)
		j->kc = q->K;
	/*
	 * one input channel per group, the whole sum exact in float and the
	 * direct loop's scratch bounded by the plane's (qconv_dw_fits)
	 */
	if (q->cg == 1 && q->group > 1 && q->K <= j->kc &&
		qconv_dw_fits(q, j->ipix, j->opix))
		return qconv_depthwise(ctx, j);
	j->pointwise = s->k[0] * s->k[1] * s->k[2] == 1 &&
		s->stride[0] == 1 && s->stride[1] == 1 && s->stride[2] == 1 &&
		s->pad_begin[0] + s->pad_begin[1] + s->pad_begin[2] +
		s->pad_end[0] + s->pad_end[1] + s->pad_end[2] == 0 && j->ipix <= INT_MAX;
	if (j->pointwise)
	{
		/* Conv's column blocks: ~256 KiB of output, at least 512 columns */
		j->chunk = (65536 / q->mg + 63) / 64 * 64;
		if (j->chunk < 512)
			j->chunk = 512;
		units = j->opix;
	}
	else
	{
		j->chunk = (int64_t) (ie_scratch_budget(QCONV_COL_BUDGET * sizeof(float)) /
							  sizeof(float)) / ((q->K + 2 * q->mg) * ow);
		if (j->chunk < 1)
			j->chunk = 1;
		units = rows;
	}
	if (j->chunk > units)
		j->chunk = units;
	j->n_chunks = (units + j->chunk - 1) / j->chunk;
	/* a task's scratch: the im2col band, the float and the int32 sums */
	sd[0] = (j->pointwise ? 0 : q->K) + 2 * q->mg;
	sd[1] = j->pointwise ? j->chunk : j->chunk * ow;
	if (!ie_scratch_fits(IE_FLOAT, 2, sd))
		return ie_op_error(ctx, "out of memory for the im2col buffer");
	/* below ~64K multiply-adds a thread, as Conv, the hand-off costs more */
	work = (double) q->n * (double) q->m * (double) j->opix * (double) q->K;
	if (work < 65536.0 * nt)
		nt = work / 65536.0 > 1.0 ? (int) (work / 65536.0) : 1;
	atomic_init(&j->failed, false);
	ie_parallel_for(nt, q->n * q->group * j->n_chunks, qconv_task, j);
	if (atomic_load(&j->failed))
		return ie_op_error(ctx, "out of memory for the im2col buffer");
	return 0;
}

/*
 * ConvInteger (10): x [n, c, in...] and w [m, c / group, k...] int8 or
 * uint8 less x_zero_point (one value) and w_zero_point (one value or one
 * per output channel) convolved as Conv does (spatial.c's geometry) into
 * int32 [n, m, out...]: the exact sums' low 32 bits (qconv_run).
 */
static int
op_conv_integer(ie_node_ctx *ctx)
{
	qconv		q;
	int64_t		odims[IE_MAX_DIMS];
	ie_tensor  *Y;
	int			rc = 0;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs x and w");
	if (qconv_read(ctx, 0, 2, 1, 3, &q) != 0)
	{
		qconv_free(&q);
		return -1;
	}
	ie_spatial_out_dims(&q.sp, q.n, q.m, odims);
	/* qconv_run writes every element */
	Y = ie_tensor_new_uninit(IE_INT32, q.sp.nsp + 2, odims);
	if (Y == NULL)
	{
		qconv_free(&q);
		return ie_op_error(ctx, "out of memory for the output");
	}
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) > 0)
	{
		qconv_job	j = {.q = &q, .acc = Y->data};

		rc = qconv_run(ctx, &j);
	}
	qconv_free(&q);
	return rc;
}

/*
 * QLinearConv (10): inputs x, x_scale, x_zero_point, w, w_scale,
 * w_zero_point, y_scale, y_zero_point, B (optional int32 bias [m]).  The
 * int32 convolution of ConvInteger plus B, times x_scale * w_scale /
 * y_scale (qmult: float, or float16 for float16 scales; w_scale one value
 * or one per output channel), plus y_zero_point, rounded half to even and
 * saturated to y_zero_point's type (int8 or uint8).
 */
static int
op_qlinear_conv(ie_node_ctx *ctx)
{
	qconv		q;
	int64_t		odims[IE_MAX_DIMS];
	ie_tensor  *Y;
	bool		psx,
				psw,
				psy,
				half;
	const ie_tensor *B,
			   *sx,
			   *sw,
			   *sy;
	qconv_job	j = {.q = &q};
	float	   *mult;
	int			rc;

	if (ctx->n_inputs < 8)
		return ie_op_error(ctx, "needs 8 or 9 inputs (x, x_scale, x_zero_point, w, w_scale, "
						   "w_zero_point, y_scale, y_zero_point, B)");
	for (int i = 0; i < 8; i++)
		if (ctx->inputs[i] == NULL && i != 2 && i != 5 && i != 7)
			return ie_op_error(ctx, "input %d must be given", i);
	B = ctx->n_inputs > 8 ? ctx->inputs[8] : NULL;
	if (qconv_read(ctx, 0, 2, 3, 5, &q) != 0 ||
		qscale_read(ctx, ctx->inputs[1], 1, "x_scale", "", false, &psx) != 0 ||
		qscale_read(ctx, ctx->inputs[4], q.m, "w_scale", "output channel", true, &psw) != 0 ||
		qscale_read(ctx, ctx->inputs[6], 1, "y_scale", "", false, &psy) != 0 ||
		qout_read(ctx, ctx->inputs[7], &j.yt, &j.yzp, &j.lo, &j.hi) != 0)
	{
		qconv_free(&q);
		return -1;
	}
	if (B != NULL && (B->dtype != IE_INT32 || B->ndim != 1 || B->dims[0] != q.m))
	{
		qconv_free(&q);
		return ie_op_error(ctx, "bias B must be int32 of shape [%lld]", (long long) q.m);
	}
	ie_spatial_out_dims(&q.sp, q.n, q.m, odims);
	/* qconv_run writes every element */
	Y = ie_tensor_new_uninit(j.yt, q.sp.nsp + 2, odims);
	if (Y == NULL)
	{
		qconv_free(&q);
		return ie_op_error(ctx, "out of memory for the output");
	}
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) == 0)
	{
		qconv_free(&q);
		return 0;
	}
	/* one multiplier per output channel (m: w's first dim, as w_scale's) */
	mult = ie_scratch_new(IE_FLOAT, 1, &q.m);
	if (mult == NULL)
	{
		qconv_free(&q);
		return ie_op_error(ctx, "out of memory for the multipliers");
	}
	sx = ctx->inputs[1];
	sw = ctx->inputs[4];
	sy = ctx->inputs[6];
	half = sx->dtype == IE_FLOAT16 && sw->dtype == IE_FLOAT16 && sy->dtype == IE_FLOAT16;
	for (int64_t oc = 0; oc < q.m; oc++)
		mult[oc] = qmult(qf_get(sx->data, sx->dtype, 0),
						 qf_get(sw->data, sw->dtype, psw ? oc : 0),
						 qf_get(sy->data, sy->dtype, 0), half);
	j.y = Y->data;
	j.bias = B != NULL ? B->data : NULL;
	j.mult = mult;
	rc = qconv_run(ctx, &j);
	free(mult);
	qconv_free(&q);
	return rc;
}

/* ConvInteger's and QLinearConv's auto_pad: run by the loader on every node. */
static int
qconv_check_attrs(ie_node_ctx *ctx)
{
	return ie_spatial_check_auto_pad(ctx, ie_attr_string(ctx, "auto_pad", "NOTSET"));
}

const ie_op_def ie_ops_quant[] = {
	{"QuantizeLinear", op_quantize_linear},
	{"DequantizeLinear", op_dequantize_linear},
	{"DynamicQuantizeLinear", op_dynamic_quantize_linear},
	{"MatMulInteger", op_matmul_integer},
	{"QLinearMatMul", op_qlinear_matmul},
	{"ConvInteger", op_conv_integer},
	{"QLinearConv", op_qlinear_conv},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_quant[] = {
	{"QuantizeLinear", quantize_check_attrs},
	{"DequantizeLinear", dequantize_check_attrs},
	{"ConvInteger", qconv_check_attrs},
	{"QLinearConv", qconv_check_attrs},
	{NULL, NULL}
};
