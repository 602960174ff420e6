/*
 * ops_reduce.c
 *	  ONNX reductions (float32 and float64; int32, int64, uint32 and uint64
 *	  but for ReduceLogSum and ReduceLogSumExp; int8 and uint8 for ReduceMax
 *	  and ReduceMin from opset 12, bool from opset 20): ReduceMean,
 *	  ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceSumSquare, ReduceL1,
 *	  ReduceL2, ReduceLogSum and ReduceLogSumExp; ArgMax and ArgMin.
 *
 * The axes come from the "axes" attribute or, where the opset moved them
 * there (ReduceSum from opset 13, the others from 18), from the optional
 * second input; keepdims and noop_with_empty_axes as the spec says.  Float
 * accumulation is in double; integers follow ONNX's reference
 * implementation (onnx.reference, numpy) bit for bit, see reduce_int.
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"

typedef enum reduce_kind
{
	RED_MEAN,
	RED_SUM,
	RED_MAX,
	RED_MIN,
	RED_PROD,
	RED_SUM_SQUARE,
	RED_L1,
	RED_L2,
	RED_LOG_SUM,
	RED_LOG_SUM_EXP
} reduce_kind;

/* Starting value of the accumulator for kind. */
static double
reduce_init(reduce_kind kind)
{
	switch (kind)
	{
		case RED_MAX:
			return -INFINITY;
		case RED_MIN:
			return INFINITY;
		case RED_PROD:
			return 1.0;
		default:
			return 0.0;
	}
}

/* Folds one value into the accumulator. */
static inline double
reduce_step(reduce_kind kind, double acc, double x)
{
	switch (kind)
	{
		case RED_MAX:
			return x > acc || isnan(x) ? x : acc;
		case RED_MIN:
			return x < acc || isnan(x) ? x : acc;
		case RED_PROD:
			return acc * x;
		case RED_SUM_SQUARE:
		case RED_L2:
			return acc + x * x;
		case RED_L1:
			return acc + fabs(x);
		case RED_LOG_SUM_EXP:
			return acc + exp(x);
		default:
			return acc + x;
	}
}

/* Final value from the accumulator over count elements. */
static double
reduce_final(reduce_kind kind, double acc, int64_t count)
{
	switch (kind)
	{
		case RED_MEAN:
			return acc / (double) count;
		case RED_L2:
			return sqrt(acc);
		case RED_LOG_SUM:
		case RED_LOG_SUM_EXP:
			return log(acc);
		default:
			return acc;
	}
}

/*
 * Element i of X (float, double or bool: 0 or 1) as a double.
 */
static inline double
reduce_load(const ie_tensor *X, int64_t i)
{
	switch (X->dtype)
	{
		case IE_DOUBLE:
			return ((const double *) X->data)[i];
		case IE_BOOL:
			return ((const uint8_t *) X->data)[i] != 0 ? 1.0 : 0.0;
		default:
			return ((const float *) X->data)[i];
	}
}

/*
 * Whether reduce_common takes X's element type for kind: float and double;
 * int32, int64, uint32 and uint64 but for ReduceLogSum and ReduceLogSumExp;
 * int8 and uint8 for ReduceMax and ReduceMin from opset 12; bool for
 * ReduceMax (any) and ReduceMin (all) from opset 20 (Operators.md,
 * ReduceMax-12, ReduceMax-20).  0, or -1 after an error.
 */
static int
reduce_check_type(ie_node_ctx *ctx, reduce_kind kind, ie_dtype dt)
{
	bool		extreme = kind == RED_MAX || kind == RED_MIN;

	if (dt == IE_FLOAT || dt == IE_DOUBLE)
		return 0;
	if (dt == IE_BOOL && extreme)
	{
		if (ctx->opset < 20)
			return ie_op_error(ctx, "input type bool needs opset 20 or later (the model imports %d)",
							   ctx->opset);
		return 0;
	}
	if ((dt == IE_INT8 || dt == IE_UINT8) && extreme)
	{
		if (ctx->opset < 12)
			return ie_op_error(ctx, "input type %s needs opset 12 or later (the model imports %d)",
							   ie_dtype_name(dt), ctx->opset);
		return 0;
	}

	/*
	 * Opsets 1 to 18 list integers for ReduceLogSum and ReduceLogSumExp, but
	 * Log and Exp are defined on floats alone: the reference refuses them and
	 * opset 28 dropped them from the schemas.  (ONNX Runtime computes them in
	 * the integer type and gives log(0) as INT_MIN.)
	 */
	if ((dt == IE_INT32 || dt == IE_INT64 || dt == IE_UINT32 || dt == IE_UINT64) &&
		(kind == RED_LOG_SUM || kind == RED_LOG_SUM_EXP))
		return ie_op_error(ctx, "unsupported input type %s: the log of an integer sum is not defined (ONNX's reference refuses it, and opset 28 dropped integers); cast the input to float",
						   ie_dtype_name(dt));
	if (dt == IE_INT32 || dt == IE_INT64 || dt == IE_UINT32 || dt == IE_UINT64)
		return 0;
	return ie_op_error(ctx, "unsupported input type %s (only float, double, int32, int64, uint32, uint64%s)",
					   ie_dtype_name(dt), extreme ? ", int8, uint8, bool" : "");
}

/*
 * Steps the odometer idx over axes [0, last] of X by one (the last axis
 * fastest) and returns the output offset ooff moved along by ostride.
 */
static inline int64_t
reduce_advance(const ie_tensor *X, int last, int64_t *idx,
			   const int64_t *ostride, int64_t ooff)
{
	for (int d = last; d >= 0; d--)
	{
		idx[d]++;
		ooff += ostride[d];
		if (idx[d] < X->dims[d])
			break;
		ooff -= ostride[d] * idx[d];
		idx[d] = 0;
	}
	return ooff;
}

/*
 * Integers.  Each value is held as a uint64_t: a signed one sign-extended,
 * so that sums and products wrap in two's complement without undefined
 * behaviour, and their low bits are those of the element type's wrapped
 * result.  The semantics are onnx.reference's (numpy's): ReduceSum,
 * ReduceProd, ReduceL1 and ReduceSumSquare wrap in the element type;
 * ReduceL2 squares in the element type, sums in 64 bits, takes the square
 * root in double and truncates; ReduceMean sums in the element type and
 * truncates the double quotient; an empty ReduceMax gives the type's
 * minimum, ReduceMin its maximum.  ONNX Runtime (1.31) differs on
 * overflow (it saturates ReduceSum and ReduceProd, and takes ReduceMean
 * and ReduceL2 without wrapping); there we follow the reference.  An empty
 * ReduceMean gives 0, as ONNX Runtime does: the reference's 0 / 0 cast to
 * an integer is numpy's undefined conversion of a NaN.
 */

/* Width in bits of integer type dt. */
static int
int_bits(ie_dtype dt)
{
	switch (dt)
	{
		case IE_INT8:
		case IE_UINT8:
			return 8;
		case IE_INT32:
		case IE_UINT32:
			return 32;
		default:
			return 64;
	}
}

/* Whether integer type dt is signed. */
static inline bool
int_signed(ie_dtype dt)
{
	return dt == IE_INT8 || dt == IE_INT32 || dt == IE_INT64;
}

/* u wrapped to dt: its low bits, sign-extended when dt is signed. */
static inline uint64_t
int_wrap(ie_dtype dt, uint64_t u)
{
	int			bits = int_bits(dt);
	uint64_t	mask;

	if (bits == 64)
		return u;
	mask = (UINT64_C(1) << bits) - 1;
	u &= mask;
	if (int_signed(dt) && (u >> (bits - 1)) != 0)
		u |= ~mask;
	return u;
}

/* Whether u, a signed value sign-extended, is negative. */
static inline bool
int_negative(ie_dtype dt, uint64_t u)
{
	return int_signed(dt) && (u >> 63) != 0;
}

/* u as a double: a signed value's (two's complement) or an unsigned one's. */
static double
int_to_double(ie_dtype dt, uint64_t u)
{
	if (int_negative(dt, u))
		return -(double) (~u) - 1.0;
	return (double) u;
}

/*
 * d truncated toward zero into dt.  A NaN or a value out of dt's range
 * (the root of a sum of squares that wrapped negative) gives a signed type's minimum, as numpy's cast gives on x86
 * and so the reference, and 0 for an unsigned type.
 */
static uint64_t
int_from_double(ie_dtype dt, double d)
{
	int			bits = int_bits(dt);

	if (int_signed(dt))
	{
		double		lim = ldexp(1.0, bits - 1);

		if (!(d >= -lim && d < lim))
			return ~UINT64_C(0) << (bits - 1);
		return (uint64_t) (int64_t) d;
	}
	if (!(d >= 0.0 && d < ldexp(1.0, bits)))
		return 0;
	return (uint64_t) d;
}

/* Element i of integer tensor X, sign-extended when signed. */
static inline uint64_t
int_load(const ie_tensor *X, int64_t i)
{
	switch (X->dtype)
	{
		case IE_INT8:
			return (uint64_t) (int64_t) ((const int8_t *) X->data)[i];
		case IE_UINT8:
			return ((const uint8_t *) X->data)[i];
		case IE_INT32:
			return (uint64_t) (int64_t) ((const int32_t *) X->data)[i];
		case IE_UINT32:
			return ((const uint32_t *) X->data)[i];
		default:
			/* int64 and uint64 alike */
			return ((const uint64_t *) X->data)[i];
	}
}

/* Stores u's low bits as element i of integer tensor Y. */
static inline void
int_store(ie_tensor *Y, int64_t i, uint64_t u)
{
	switch (int_bits(Y->dtype))
	{
		case 8:
			((uint8_t *) Y->data)[i] = (uint8_t) u;
			break;
		case 32:
			((uint32_t *) Y->data)[i] = (uint32_t) u;
			break;
		default:
			((uint64_t *) Y->data)[i] = u;
			break;
	}
}

/* Whether a is greater than b in dt's order. */
static inline bool
int_greater(ie_dtype dt, uint64_t a, uint64_t b)
{
	uint64_t	flip = int_signed(dt) ? UINT64_C(1) << 63 : 0;

	return (a ^ flip) > (b ^ flip);
}

/* Starting value of an integer accumulator for kind over dt. */
static uint64_t
int_init(reduce_kind kind, ie_dtype dt)
{
	int			bits = int_bits(dt);
	uint64_t	umax = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;

	switch (kind)
	{
		case RED_MAX:
			return int_signed(dt) ? ~UINT64_C(0) << (bits - 1) : 0;
		case RED_MIN:
			return int_signed(dt) ? umax >> 1 : umax;
		case RED_PROD:
			return 1;
		default:
			return 0;
	}
}

/*
 * Folds x into an integer accumulator.  ReduceL2's squares wrap in dt and
 * add in 64 bits (numpy's np.sum of an int32 array is int64).
 */
static inline uint64_t
int_step(reduce_kind kind, ie_dtype dt, uint64_t acc, uint64_t x)
{
	switch (kind)
	{
		case RED_MAX:
			return int_greater(dt, x, acc) ? x : acc;
		case RED_MIN:
			return int_greater(dt, acc, x) ? x : acc;
		case RED_PROD:
			return acc * x;
		case RED_SUM_SQUARE:
			return acc + x * x;
		case RED_L2:
			return acc + int_wrap(dt, x * x);
		case RED_L1:
			return acc + (int_negative(dt, x) ? -x : x);
		default:
			return acc + x;
	}
}

/* Final integer value from the accumulator over count elements. */
static uint64_t
int_final(reduce_kind kind, ie_dtype dt, uint64_t acc, int64_t count)
{
	switch (kind)
	{
		case RED_MEAN:
			/*
			 * an empty mean is 0, as ONNX Runtime gives it: the reference's
			 * 0 / 0 cast to an integer is numpy's undefined NaN conversion
			 */
			if (count == 0)
				return 0;
			return int_from_double(dt, int_to_double(dt, int_wrap(dt, acc)) /
								   (double) count);
		case RED_L2:
			/* the 64-bit sum, signed for a signed dt */
			return int_from_double(dt, sqrt(int_to_double(int_signed(dt) ? IE_INT64 : IE_UINT64,
														  acc)));
		default:
			return acc;
	}
}

/*
 * The integer reduction of X into Y (already shaped), walking X as
 * reduce_common does: ostride is each input axis's output stride (0 where
 * reduced), count the number of elements each output reduces.  0, or -1
 * after an error.
 */
static int
reduce_int(ie_node_ctx *ctx, reduce_kind kind, const ie_tensor *X, ie_tensor *Y,
		   const int64_t *ostride, int64_t count)
{
	int64_t		onumel = ie_tensor_numel(Y),
				inumel = ie_tensor_numel(X),
				idx[IE_MAX_DIMS] = {0},
				ooff = 0;
	uint64_t   *acc;

	acc = ie_scratch_new(IE_UINT64, 1, &onumel);
	if (acc == NULL)
		return ie_op_error(ctx, "out of memory for the accumulators");
	for (int64_t i = 0; i < onumel; i++)
		acc[i] = int_init(kind, X->dtype);
	for (int64_t i = 0; i < inumel; i++)
	{
		acc[ooff] = int_step(kind, X->dtype, acc[ooff], int_load(X, i));
		ooff = reduce_advance(X, X->ndim - 1, idx, ostride, ooff);
	}
	for (int64_t i = 0; i < onumel; i++)
		int_store(Y, i, int_final(kind, X->dtype, acc[i], count));
	free(acc);
	return 0;
}

/*
 * The shared reduction: X reduced over the chosen axes into Y.  Walks X
 * in order with an odometer, tracking the output offset, so any set of
 * axes costs one pass.  A bool X (max, min) is reduced as 0 and 1, and an
 * empty max gives false, an empty min true (from the -inf and inf
 * starting values), as the ONNX reference does.  Integers go to
 * reduce_int.
 */
static int
reduce_common(ie_node_ctx *ctx, reduce_kind kind, int axes_input_opset)
{
	const ie_tensor *X;
	int64_t		keepdims = ie_attr_int(ctx, "keepdims", 1);
	int64_t		noop = ie_attr_int(ctx, "noop_with_empty_axes", 0);
	int			reduced[IE_MAX_DIMS] = {0};
	int			naxes = 0;
	int64_t		odims[IE_MAX_DIMS],
				ostride[IE_MAX_DIMS],
				idx[IE_MAX_DIMS];
	int			ond = 0;
	int64_t		onumel,
				inumel,
				count = 1,
				ooff = 0;
	ie_tensor  *Y;
	double	   *acc;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input data");
	X = ctx->inputs[0];
	if (reduce_check_type(ctx, kind, X->dtype) != 0)
		return -1;

	/* the axes: input (newer opsets) or attribute */
	if (ctx->opset >= axes_input_opset && ctx->n_inputs > 1 && ctx->inputs[1] != NULL)
	{
		const ie_tensor *A = ctx->inputs[1];
		int64_t		na = ie_tensor_numel(A);

		for (int64_t i = 0; i < na; i++)
		{
			int64_t		a;

			if (ie_tensor_get_i64(A, i, &a) != 0)
				return ie_op_error(ctx, "axes must be int64");
			if (a < 0)
				a += X->ndim;
			if (a < 0 || a >= X->ndim)
				return ie_op_error(ctx, "axis out of range for rank %d", X->ndim);
			reduced[a] = 1;
			naxes++;
		}
	}
	else
	{
		const int64_t *v;
		int			n = ie_attr_ints(ctx, "axes", &v);

		for (int i = 0; i < n; i++)
		{
			int64_t		a = v[i] < 0 ? v[i] + X->ndim : v[i];

			if (a < 0 || a >= X->ndim)
				return ie_op_error(ctx, "axis %lld out of range for rank %d",
								   (long long) v[i], X->ndim);
			reduced[a] = 1;
			naxes++;
		}
	}
	/*
	 * No axes: reduce everything, or with noop_with_empty_axes nothing, which
	 * still applies the per-element part (square, abs, log, ...) as
	 * onnxruntime and the ONNX reference do.
	 */
	if (naxes == 0 && !noop)
		for (int i = 0; i < X->ndim; i++)
			reduced[i] = 1;

	for (int i = 0; i < X->ndim; i++)
	{
		if (reduced[i])
		{
			count *= X->dims[i];
			if (keepdims)
				odims[ond++] = 1;
		}
		else
			odims[ond++] = X->dims[i];
	}
	Y = ie_tensor_new(X->dtype, ond, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	onumel = ie_tensor_numel(Y);
	inumel = ie_tensor_numel(X);

	/* output stride of each input axis (0 where reduced) */
	{
		int64_t		s = 1;

		for (int i = X->ndim - 1; i >= 0; i--)
		{
			ostride[i] = reduced[i] ? 0 : s;
			if (!reduced[i])
				s *= X->dims[i];
			idx[i] = 0;
		}
	}
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE && X->dtype != IE_BOOL)
		return reduce_int(ctx, kind, X, Y, ostride, count);

	/* one double per output element: twice a float output's bytes */
	acc = ie_scratch_new(IE_DOUBLE, 1, &onumel);
	if (acc == NULL)
		return ie_op_error(ctx, "out of memory for the accumulators");
	for (int64_t i = 0; i < onumel; i++)
		acc[i] = reduce_init(kind);
	if (X->ndim > 0 && reduced[X->ndim - 1])
	{
		/* innermost axis reduced: run along rows */
		int64_t		len = X->dims[X->ndim - 1];

		for (int64_t i = 0; i < inumel; i += len)
		{
			double		a = acc[ooff];

			if (X->dtype == IE_FLOAT)
			{
				/* the common case, without reduce_load's type switch */
				const float *xs = (const float *) X->data + i;

				for (int64_t j = 0; j < len; j++)
					a = reduce_step(kind, a, xs[j]);
			}
			else
				for (int64_t j = 0; j < len; j++)
					a = reduce_step(kind, a, reduce_load(X, i + j));
			acc[ooff] = a;
			ooff = reduce_advance(X, X->ndim - 2, idx, ostride, ooff);
		}
	}
	else
	{
		for (int64_t i = 0; i < inumel; i++)
		{
			acc[ooff] = reduce_step(kind, acc[ooff], reduce_load(X, i));
			ooff = reduce_advance(X, X->ndim - 1, idx, ostride, ooff);
		}
	}
	for (int64_t i = 0; i < onumel; i++)
	{
		double		v = reduce_final(kind, acc[i], count);

		if (X->dtype == IE_DOUBLE)
			((double *) Y->data)[i] = v;
		else if (X->dtype == IE_BOOL)
			((uint8_t *) Y->data)[i] = v > 0;
		else
			((float *) Y->data)[i] = (float) v;
	}
	free(acc);
	return 0;
}

/*
 * One operator per kind: REDUCE_OP(fn, kind, axes_input_opset) defines
 * fn(ctx) as reduce_common with the kind and the opset that made axes an
 * input.
 */
#define REDUCE_OP(fn, kind, axes_input_opset) \
static int \
fn(ie_node_ctx *ctx) \
{ \
	return reduce_common(ctx, kind, axes_input_opset); \
}

REDUCE_OP(op_reduce_mean, RED_MEAN, 18)
REDUCE_OP(op_reduce_sum, RED_SUM, 13)
REDUCE_OP(op_reduce_max, RED_MAX, 18)
REDUCE_OP(op_reduce_min, RED_MIN, 18)
REDUCE_OP(op_reduce_prod, RED_PROD, 18)
REDUCE_OP(op_reduce_sum_square, RED_SUM_SQUARE, 18)
REDUCE_OP(op_reduce_l1, RED_L1, 18)
REDUCE_OP(op_reduce_l2, RED_L2, 18)
REDUCE_OP(op_reduce_log_sum, RED_LOG_SUM, 18)
REDUCE_OP(op_reduce_log_sum_exp, RED_LOG_SUM_EXP, 18)

/*
 * ArgMax / ArgMin (opsets 1, 11, 12, 13): the index (int64) along axis
 * (default 0) of the largest / smallest element; keepdims (default 1)
 * keeps the axis as 1; select_last_index (opset 12, default 0) takes the
 * last of equal ones.  A NaN wins, its first occurrence (numpy.argmax, the
 * ONNX reference).  Float, double, int32 and int64 inputs.
 */
#define ARG_SCAN(T, IS_NAN) \
	do { \
		const T    *x_ = (const T *) X->data; \
		for (int64_t o_ = 0; o_ < outer; o_++) \
			for (int64_t i_ = 0; i_ < inner; i_++) \
			{ \
				const T    *p_ = x_ + o_ * len * inner + i_; \
				int64_t		best_ = 0; \
				for (int64_t k_ = 1; k_ < len && !(IS_NAN(p_[best_ * inner])); k_++) \
				{ \
					T			v_ = p_[k_ * inner], b_ = p_[best_ * inner]; \
					if (IS_NAN(v_) || (is_max ? v_ > b_ : v_ < b_) || (last && v_ == b_)) \
						best_ = k_; \
				} \
				y[o_ * inner + i_] = best_; \
			} \
	} while (0)
#define NOT_NAN(v) false

static int
arg_extreme(ie_node_ctx *ctx, bool is_max)
{
	const ie_tensor *X = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	int64_t		axis = ie_attr_int(ctx, "axis", 0);
	bool		keepdims = ie_attr_int(ctx, "keepdims", 1) != 0;
	bool		last = ie_attr_int(ctx, "select_last_index", 0) != 0;
	int64_t		odims[IE_MAX_DIMS];
	int64_t		outer = 1,
				inner = 1,
				len;
	int			ond = 0;
	ie_tensor  *Y;
	int64_t    *y;

	if (X == NULL)
		return ie_op_error(ctx, "needs input data");
	if (axis < 0)
		axis += X->ndim;
	if (axis < 0 || axis >= X->ndim)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ie_attr_int(ctx, "axis", 0), X->ndim);
	len = X->dims[axis];
	if (len == 0)
		return ie_op_error(ctx, "axis %lld is empty", (long long) axis);
	for (int d = 0; d < X->ndim; d++)
	{
		if (d < axis)
			outer *= X->dims[d];
		else if (d > axis)
			inner *= X->dims[d];
		if (d != axis)
			odims[ond++] = X->dims[d];
		else if (keepdims)
			odims[ond++] = 1;
	}
	Y = ie_tensor_new(IE_INT64, ond, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	y = Y->data;
	switch (X->dtype)
	{
		case IE_FLOAT: ARG_SCAN(float, isnan); break;
		case IE_DOUBLE: ARG_SCAN(double, isnan); break;
		case IE_INT32: ARG_SCAN(int32_t, NOT_NAN); break;
		case IE_INT64: ARG_SCAN(int64_t, NOT_NAN); break;
		default:
			return ie_op_error(ctx, "unsupported input type %s (float, double, int32, int64)",
							   ie_dtype_name(X->dtype));
	}
	return 0;
}

static int
op_argmax(ie_node_ctx *ctx)
{
	return arg_extreme(ctx, true);
}

static int
op_argmin(ie_node_ctx *ctx)
{
	return arg_extreme(ctx, false);
}

const ie_op_def ie_ops_reduce[] = {
	{"ArgMax", op_argmax},
	{"ArgMin", op_argmin},
	{"ReduceMean", op_reduce_mean},
	{"ReduceSum", op_reduce_sum},
	{"ReduceMax", op_reduce_max},
	{"ReduceMin", op_reduce_min},
	{"ReduceProd", op_reduce_prod},
	{"ReduceSumSquare", op_reduce_sum_square},
	{"ReduceL1", op_reduce_l1},
	{"ReduceL2", op_reduce_l2},
	{"ReduceLogSum", op_reduce_log_sum},
	{"ReduceLogSumExp", op_reduce_log_sum_exp},
	{NULL, NULL}
};
