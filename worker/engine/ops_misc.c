/*
 * ops_misc.c
 *	  ONNX operators that select, order, mask or count elements: TopK,
 *	  CumSum, CumProd, Trilu, Hardmax, NonZero, Compress, ReverseSequence,
 *	  EyeLike, OneHot and Dropout (inference only).
 *
 * Semantics follow ONNX Operators.md for every version up to IE_OPSET_MAX
 * (and onnx.reference where the text leaves a detail open: TopK breaks ties
 * by the lower index and counts a NaN largest, Hardmax picks the first
 * NaN).  Operators that only move elements (Trilu, Compress,
 * ReverseSequence, NonZero, Dropout) take any type the engine holds and
 * copy bytes; those that compute (TopK, CumSum, CumProd, Hardmax) name the
 * types they take and refuse the others ("element type ... is not
 * supported").  An axis, k, length or index the spec does not allow is an
 * error naming it, never a read out of bounds.
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"

/* Input idx, or NULL with an error when the node lacks it. */
static const ie_tensor *
need_input(ie_node_ctx *ctx, int idx, const char *what)
{
	if (idx >= ctx->n_inputs || ctx->inputs[idx] == NULL)
	{
		ie_op_error(ctx, "missing input %d (%s)", idx, what);
		return NULL;
	}
	return ctx->inputs[idx];
}

/* Optional input idx, or NULL when the node leaves it out. */
static const ie_tensor *
opt_input(ie_node_ctx *ctx, int idx)
{
	return idx < ctx->n_inputs ? ctx->inputs[idx] : NULL;
}

/*
 * axis (from an attribute or an input) normalised against rank into *out;
 * -1 after an error when it is outside [-rank, rank - 1].
 */
static int
norm_axis(ie_node_ctx *ctx, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) axis, rank);
	*out = (int) (axis < 0 ? axis + rank : axis);
	return 0;
}

/*
 * The single integer of input t (int32 or int64, a scalar or a 1-element
 * tensor), named what in messages, into *out; -1 after an error.
 */
static int
read_scalar_int(ie_node_ctx *ctx, const ie_tensor *t, const char *what, int64_t *out)
{
	if (t->dtype != IE_INT64 && t->dtype != IE_INT32)
		return ie_op_error(ctx, "%s must be int64 or int32, got %s", what,
						   ie_dtype_name(t->dtype));
	if (ie_tensor_numel(t) != 1 || t->ndim > 1)
		return ie_op_error(ctx, "%s must hold a single value (a scalar or a 1-element 1-D tensor), got %lld values",
						   what, (long long) ie_tensor_numel(t));
	return ie_tensor_get_i64(t, 0, out);
}

/*
 * outer (product of dims before axis), dim, inner (after) of t at axis.
 * An empty t gives outer and inner 0 (nothing to loop over): its other
 * dims may be huge, and their product would overflow int64.
 */
static void
split_at(const ie_tensor *t, int axis, int64_t *outer, int64_t *dim, int64_t *inner)
{
	*dim = t->dims[axis];
	if (ie_tensor_numel(t) == 0)
	{
		*outer = 0;
		*inner = 0;
		return;
	}
	*outer = 1;
	*inner = 1;
	for (int d = 0; d < axis; d++)
		*outer *= t->dims[d];
	for (int d = axis + 1; d < t->ndim; d++)
		*inner *= t->dims[d];
	*dim = t->dims[axis];
}

/*
 * Writes the value 1 of dtype at p (bool true); -1 for a type that has no
 * such value here (float16 and the types the engine does not hold).
 */
static int
store_one(ie_dtype dt, void *p)
{
	switch (dt)
	{
		case IE_FLOAT: *(float *) p = 1.0f; break;
		case IE_DOUBLE: *(double *) p = 1.0; break;
		case IE_INT64: *(int64_t *) p = 1; break;
		case IE_UINT64: *(uint64_t *) p = 1; break;
		case IE_INT32: *(int32_t *) p = 1; break;
		case IE_UINT32: *(uint32_t *) p = 1; break;
		case IE_INT16: *(int16_t *) p = 1; break;
		case IE_UINT16: *(uint16_t *) p = 1; break;
		case IE_INT8: *(int8_t *) p = 1; break;
		case IE_UINT8:
		case IE_BOOL: *(uint8_t *) p = 1; break;
		case IE_FLOAT16: *(uint16_t *) p = 0x3c00; break;
		default:
			return -1;
	}
	return 0;
}

/* ---- TopK ---- */

/* A row of one TopK slice, gathered contiguous, and how to order it. */
typedef struct topk_row
{
	const void *vals;
	ie_dtype	dtype;
	bool		largest;
} topk_row;

/*
 * -1 when element a comes before b in TopK's order: larger first (smaller
 * with largest = 0), a NaN counted larger than any number (numpy's sort,
 * as the reference uses), ties by the lower index.
 */
#define TOPK_CMP(T, IS_NAN) \
	do { \
		T			va = ((const T *) r->vals)[a], \
					vb = ((const T *) r->vals)[b]; \
		bool		na = IS_NAN(va), \
					nb = IS_NAN(vb); \
		if (na != nb) \
			c = na ? 1 : -1; \
		else if (!na && va != vb) \
			c = va < vb ? -1 : 1; \
	} while (0)
#define NEVER_NAN(v) false

static int
topk_cmp(const void *pa, const void *pb, void *arg)
{
	const topk_row *r = arg;
	int64_t		a = *(const int64_t *) pa,
				b = *(const int64_t *) pb;
	int			c = 0;			/* ascending order of the values */

	switch (r->dtype)
	{
		case IE_FLOAT: TOPK_CMP(float, isnan); break;
		case IE_DOUBLE: TOPK_CMP(double, isnan); break;
		case IE_INT64: TOPK_CMP(int64_t, NEVER_NAN); break;
		case IE_UINT64: TOPK_CMP(uint64_t, NEVER_NAN); break;
		case IE_INT32: TOPK_CMP(int32_t, NEVER_NAN); break;
		case IE_UINT32: TOPK_CMP(uint32_t, NEVER_NAN); break;
		case IE_INT16: TOPK_CMP(int16_t, NEVER_NAN); break;
		case IE_UINT16: TOPK_CMP(uint16_t, NEVER_NAN); break;
		case IE_INT8: TOPK_CMP(int8_t, NEVER_NAN); break;
		default: TOPK_CMP(uint8_t, NEVER_NAN); break;
	}
	if (r->largest)
		c = -c;
	if (c == 0)
		c = a < b ? -1 : (a > b ? 1 : 0);
	return c;
}
#undef TOPK_CMP

/*
 * TopK (opsets 1, 10, 11; Operators.md "TopK"): X of rank >= 1; k from
 * attribute k (opset 1) or input K (a 1-element int64 tensor, opset 10+),
 * 0 <= k <= X.shape[axis] (axis default -1); largest (default 1) and
 * sorted (default 1) from opset 11.  Values (X's type) and Indices (int64)
 * have X's shape with k along axis: the k largest (smallest) elements of
 * each slice along axis, in order, ties to the lower index.  With sorted =
 * 0 the order is left to the implementation: this one sorts all the same.
 * float, double and the integer types; uint8 as well (the schema's).
 */
static int
op_topk(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "X");
	int64_t		k,
				outer,
				dim,
				inner,
				dims[IE_MAX_DIMS];
	int			axis = 0;
	size_t		es;
	topk_row	row;
	int64_t    *order = NULL;
	char	   *buf = NULL;
	ie_tensor  *vo,
			   *io;

	if (x == NULL)
		return -1;
	switch (x->dtype)
	{
		case IE_FLOAT: case IE_DOUBLE: case IE_INT64: case IE_UINT64:
		case IE_INT32: case IE_UINT32: case IE_INT16: case IE_UINT16:
		case IE_INT8: case IE_UINT8:
			break;
		default:
			return ie_op_error(ctx, "element type %s is not supported",
							   ie_dtype_name(x->dtype));
	}
	if (x->ndim == 0)
		return ie_op_error(ctx, "X must have rank 1 or more");
	if (norm_axis(ctx, ie_attr_int(ctx, "axis", -1), x->ndim, &axis) != 0)
		return -1;
	if (ctx->opset < 10)
	{
		if (ie_attr_find(ctx, "k") == NULL)
			return ie_op_error(ctx, "attribute k is required");
		k = ie_attr_int(ctx, "k", 0);
	}
	else
	{
		const ie_tensor *kt = need_input(ctx, 1, "K");

		if (kt == NULL)
			return -1;
		if (kt->dtype != IE_INT64)
			return ie_op_error(ctx, "K must be int64, got %s", ie_dtype_name(kt->dtype));
		if (kt->ndim != 1 || kt->dims[0] != 1)
			return ie_op_error(ctx, "K must be a 1-D tensor of one element");
		k = ((const int64_t *) kt->data)[0];
	}
	split_at(x, axis, &outer, &dim, &inner);
	if (k < 0)
		return ie_op_error(ctx, "k (%lld) must not be negative", (long long) k);
	if (k > dim)
		return ie_op_error(ctx, "k (%lld) is larger than axis %d's size (%lld)",
						   (long long) k, axis, (long long) dim);
	memcpy(dims, x->dims, sizeof(int64_t) * x->ndim);
	dims[axis] = k;
	if ((vo = ie_tensor_new(x->dtype, x->ndim, dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the values");
	ctx->outputs[0] = vo;
	if (ctx->n_outputs > 1)
	{
		if ((io = ie_tensor_new(IE_INT64, x->ndim, dims)) == NULL)
			return ie_op_error(ctx, "out of memory for the indices");
		ctx->outputs[1] = io;
	}
	else
		io = NULL;
	if (k == 0 || outer * inner == 0)
		return 0;
	es = ie_dtype_size(x->dtype);
	order = ie_scratch_new(IE_INT64, 1, &dim);
	buf = ie_scratch_new(x->dtype, 1, &dim);
	if (order == NULL || buf == NULL)
	{
		free(order);
		free(buf);
		return ie_op_error(ctx, "out of memory for a slice's order");
	}
	row.vals = buf;
	row.dtype = x->dtype;
	row.largest = ie_attr_int(ctx, "largest", 1) != 0;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++)
		{
			const char *src = (const char *) x->data + (size_t) (o * dim * inner + in) * es;
			int64_t		obase = o * k * inner + in;

			for (int64_t j = 0; j < dim; j++)
			{
				memcpy(buf + j * es, src + (size_t) (j * inner) * es, es);
				order[j] = j;
			}
			qsort_r(order, (size_t) dim, sizeof(int64_t), topk_cmp, &row);
			for (int64_t j = 0; j < k; j++)
			{
				memcpy((char *) vo->data + (size_t) (obase + j * inner) * es,
					   buf + order[j] * es, es);
				if (io != NULL)
					((int64_t *) io->data)[obase + j * inner] = order[j];
			}
		}
	free(order);
	free(buf);
	return 0;
}

/* ---- CumSum, CumProd ---- */

/*
 * The running sum (prod) along one slice of n elements spaced inner apart,
 * x into y, in T (through U, unsigned for the signed integer types, so that
 * an overflow wraps as in ONNX Runtime rather than being undefined):
 * exclusive leaves the element itself out, reverse runs from the end.
 */
#define CUM_LOOP(T, U) \
	do { \
		const T    *xs = (const T *) x->data; \
		T		   *ys = (T *) y->data; \
		for (int64_t o = 0; o < outer; o++) \
			for (int64_t in = 0; in < inner; in++) \
			{ \
				U			acc = prod ? (U) 1 : (U) 0; \
				int64_t		base = o * dim * inner + in; \
				for (int64_t s = 0; s < dim; s++) \
				{ \
					int64_t		j = reverse ? dim - 1 - s : s; \
					int64_t		at = base + j * inner; \
					U			v = (U) xs[at]; \
					if (exclusive) \
						ys[at] = (T) acc; \
					acc = prod ? (U) (acc * v) : (U) (acc + v); \
					if (!exclusive) \
						ys[at] = (T) acc; \
				} \
			} \
	} while (0)

/*
 * CumSum (opsets 11, 14) and CumProd (opset 26) (Operators.md "CumSum",
 * "CumProd"): y has x's shape and type; y[.., j, ..] is the sum (product)
 * of x[.., i, ..] along axis for i <= j (i < j with exclusive = 1; i >= j
 * or i > j with reverse = 1), accumulated in x's type in order.  axis is
 * input 1, an int32 or int64 scalar (or 1-element tensor) in [-r, r-1].
 * float, double, int32, int64, uint32, uint64 (the schema's but float16
 * and bfloat16).
 */
static int
cum_common(ie_node_ctx *ctx, bool prod)
{
	const ie_tensor *x = need_input(ctx, 0, "x");
	const ie_tensor *at = need_input(ctx, 1, "axis");
	bool		exclusive = ie_attr_int(ctx, "exclusive", 0) != 0;
	bool		reverse = ie_attr_int(ctx, "reverse", 0) != 0;
	int64_t		a,
				outer,
				dim,
				inner;
	int			axis = 0;
	ie_tensor  *y;

	if (x == NULL || at == NULL || read_scalar_int(ctx, at, "axis", &a) != 0)
		return -1;
	if (x->ndim == 0)
		return ie_op_error(ctx, "x must have rank 1 or more");
	if (norm_axis(ctx, a, x->ndim, &axis) != 0)
		return -1;
	switch (x->dtype)
	{
		case IE_FLOAT: case IE_DOUBLE: case IE_INT32: case IE_INT64:
		case IE_UINT32: case IE_UINT64:
			break;
		default:
			return ie_op_error(ctx, "element type %s is not supported",
							   ie_dtype_name(x->dtype));
	}
	split_at(x, axis, &outer, &dim, &inner);
	if ((y = ie_tensor_new_uninit(x->dtype, x->ndim, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	/* empty: a huge dim beside a zero one must not be looped over */
	if (ie_tensor_numel(x) == 0)
		return 0;
	switch (x->dtype)
	{
		case IE_FLOAT: CUM_LOOP(float, float); break;
		case IE_DOUBLE: CUM_LOOP(double, double); break;
		case IE_INT32: CUM_LOOP(int32_t, uint32_t); break;
		case IE_INT64: CUM_LOOP(int64_t, uint64_t); break;
		case IE_UINT32: CUM_LOOP(uint32_t, uint32_t); break;
		default: CUM_LOOP(uint64_t, uint64_t); break;
	}
	return 0;
}
#undef CUM_LOOP

static int
op_cumsum(ie_node_ctx *ctx)
{
	return cum_common(ctx, false);
}

static int
op_cumprod(ie_node_ctx *ctx)
{
	return cum_common(ctx, true);
}

/* ---- Trilu ---- */

/*
 * Trilu (opset 14; Operators.md "Trilu"): input of rank >= 2, seen as a
 * batch of [N, M] matrices (its last two dims); the output, of its shape
 * and type, keeps element (i, j) where j - i >= k (upper = 1, the default)
 * or j - i <= k (upper = 0) and is zero elsewhere.  k is the optional
 * input 1, an int64 scalar (a 1-element tensor accepted), default 0; any
 * value (past the matrix, everything or nothing is kept).  Any type.
 */
static int
op_trilu(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *kt = opt_input(ctx, 1);
	bool		upper = ie_attr_int(ctx, "upper", 1) != 0;
	int64_t		k = 0,
				rows,
				cols,
				batch;
	size_t		es;
	ie_tensor  *y;

	if (x == NULL)
		return -1;
	if (kt != NULL && read_scalar_int(ctx, kt, "k", &k) != 0)
		return -1;
	if (x->ndim < 2)
		return ie_op_error(ctx, "input must have rank 2 or more, got %d", x->ndim);
	if ((es = ie_dtype_size(x->dtype)) == 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	rows = x->dims[x->ndim - 2];
	cols = x->dims[x->ndim - 1];
	/* past rows + cols, k keeps all or nothing: clamped, i + k cannot overflow */
	if (k > rows + cols)
		k = rows + cols;
	if (k < -(rows + cols))
		k = -(rows + cols);
	batch = rows * cols > 0 ? ie_tensor_numel(x) / (rows * cols) : 0;
	if ((y = ie_tensor_new(x->dtype, x->ndim, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	for (int64_t b = 0; b < batch; b++)
		for (int64_t i = 0; i < rows; i++)
		{
			/* the kept columns of row i: [lo, hi) */
			int64_t		lo = upper ? i + k : 0,
						hi = upper ? cols : i + k + 1;
			size_t		off;

			if (lo < 0)
				lo = 0;
			if (hi > cols)
				hi = cols;
			if (lo >= hi)
				continue;
			off = (size_t) ((b * rows + i) * cols + lo) * es;
			memcpy((char *) y->data + off, (const char *) x->data + off,
				   (size_t) (hi - lo) * es);
		}
	return 0;
}

/* ---- Hardmax ---- */

/*
 * One-hot of the first maximum of n elements spaced inner apart, or of the
 * first NaN when there is one (numpy.argmax, as the reference uses).
 */
#define HARDMAX_LOOP(T) \
	do { \
		const T    *xs = (const T *) x->data; \
		T		   *ys = (T *) y->data; \
		for (int64_t o = 0; o < outer; o++) \
			for (int64_t in = 0; in < inner; in++) \
			{ \
				int64_t		base = o * dim * inner + in, \
							best = 0; \
				for (int64_t j = 0; j < dim; j++) \
				{ \
					T			v = xs[base + j * inner]; \
					if (isnan(v)) \
					{ \
						best = j; \
						break; \
					} \
					if (v > xs[base + best * inner]) \
						best = j; \
				} \
				ys[base + best * inner] = (T) 1; \
			} \
	} while (0)

/*
 * Hardmax (opsets 1, 11, 13; Operators.md "Hardmax"): y has x's shape and
 * type, 1 at the first maximum of each slice (its first NaN if it has one,
 * numpy.argmax's answer, which the reference uses) and 0 elsewhere.  Opsets 1
 * and 11 see x as a 2-D [N, D] matrix, the dims before axis (default 1)
 * making N and the rest D, and take the maximum over each row of D; opset
 * 13 takes it along axis alone (default -1).  float and double.
 */
static int
op_hardmax(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	bool		coerce = ctx->opset < 13;
	int64_t		outer = 1,
				dim = 1,
				inner = 1,
				a;
	int			axis = 0;
	ie_tensor  *y;

	if (x == NULL)
		return -1;
	if (x->dtype != IE_FLOAT && x->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	a = ie_attr_int(ctx, "axis", coerce ? 1 : -1);
	if (coerce)
	{
		/* axis may equal the rank there: D is then 1 */
		if (a < -x->ndim || a > x->ndim)
			return ie_op_error(ctx, "axis %lld is out of range for rank %d",
							   (long long) a, x->ndim);
		axis = (int) (a < 0 ? a + x->ndim : a);
		for (int d = 0; d < x->ndim && ie_tensor_numel(x) > 0; d++)
		{
			if (d < axis)
				outer *= x->dims[d];
			else
				dim *= x->dims[d];
		}
	}
	else
	{
		if (x->ndim == 0)
			return ie_op_error(ctx, "input must have rank 1 or more");
		if (norm_axis(ctx, a, x->ndim, &axis) != 0)
			return -1;
		split_at(x, axis, &outer, &dim, &inner);
	}
	if ((y = ie_tensor_new(x->dtype, x->ndim, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	if (dim == 0 || ie_tensor_numel(x) == 0)
		return 0;
	if (x->dtype == IE_FLOAT)
		HARDMAX_LOOP(float);
	else
		HARDMAX_LOOP(double);
	return 0;
}
#undef HARDMAX_LOOP

/* ---- NonZero ---- */

/* Whether element i of x (of es bytes) is not zero; -0.0 is zero. */
static bool
is_nonzero(const ie_tensor *x, int64_t i, size_t es)
{
	const unsigned char *p = (const unsigned char *) x->data + (size_t) i * es;

	if (x->dtype == IE_FLOAT)
		return ((const float *) x->data)[i] != 0.0f;
	if (x->dtype == IE_DOUBLE)
		return ((const double *) x->data)[i] != 0.0;
	if (x->dtype == IE_FLOAT16)
		return (((const uint16_t *) x->data)[i] & 0x7fff) != 0;
	for (size_t b = 0; b < es; b++)
		if (p[b] != 0)
			return true;
	return false;
}

/*
 * NonZero (opsets 9, 13; Operators.md "NonZero"): the indices of X's
 * non-zero elements, as numpy.nonzero gives them: an int64 tensor [r, n]
 * (r = X's rank, n the count), column c the coordinates of the c-th
 * non-zero element in row-major order.  A scalar X counts as [1] (output
 * [1, n], numpy's old behaviour and ONNX Runtime's).  Any type.
 */
static int
op_nonzero(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "X");
	int64_t		numel,
				n = 0,
				dims[2],
				pos[IE_MAX_DIMS] = {0};
	int			r;
	size_t		es;
	ie_tensor  *y;
	int64_t    *out;

	if (x == NULL)
		return -1;
	if ((es = ie_dtype_size(x->dtype)) == 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	numel = ie_tensor_numel(x);
	r = x->ndim > 0 ? x->ndim : 1;
	for (int64_t i = 0; i < numel; i++)
		n += is_nonzero(x, i, es);
	dims[0] = r;
	dims[1] = n;
	if ((y = ie_tensor_new(IE_INT64, 2, dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	out = y->data;
	for (int64_t i = 0, c = 0; i < numel; i++)
	{
		if (is_nonzero(x, i, es))
		{
			for (int d = 0; d < r; d++)
				out[d * n + c] = pos[d];
			c++;
		}
		for (int d = x->ndim - 1; d >= 0; d--)
		{
			if (++pos[d] < x->dims[d])
				break;
			pos[d] = 0;
		}
	}
	return 0;
}

/* ---- Compress ---- */

/*
 * Compress (opsets 9, 11; Operators.md "Compress"): the slices of input
 * along axis whose entry in condition (bool, 1-D) is true, in order; with
 * no axis attribute, the elements of input flattened (output 1-D).  A
 * condition shorter than the axis leaves the slices past it out (the
 * spec); a longer one is an error (numpy.compress and ONNX Runtime refuse
 * it too).  axis in [-r, r-1] (negative from opset 11, accepted at 9).
 * Any type.
 */
static int
op_compress(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *cond = need_input(ctx, 1, "condition");
	const ie_attr *aa = ie_attr_find(ctx, "axis");
	const uint8_t *c;
	int64_t		outer = 1,
				dim,
				inner = 1,
				len,
				kept = 0,
				dims[IE_MAX_DIMS];
	int			axis = 0,
				nd;
	size_t		es,
				block;
	ie_tensor  *y;
	char	   *dst;

	if (x == NULL || cond == NULL)
		return -1;
	if (cond->dtype != IE_BOOL)
		return ie_op_error(ctx, "condition must be bool, got %s", ie_dtype_name(cond->dtype));
	if (cond->ndim != 1)
		return ie_op_error(ctx, "condition must be 1-D, got rank %d", cond->ndim);
	if ((es = ie_dtype_size(x->dtype)) == 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	if (aa != NULL)
	{
		if (x->ndim == 0)
			return ie_op_error(ctx, "input must have rank 1 or more with an axis");
		if (norm_axis(ctx, aa->i, x->ndim, &axis) != 0)
			return -1;
		split_at(x, axis, &outer, &dim, &inner);
	}
	else
		dim = ie_tensor_numel(x);
	len = cond->dims[0];
	if (len > dim)
		return ie_op_error(ctx, "condition has %lld entries, more than the %lld %s",
						   (long long) len, (long long) dim,
						   aa != NULL ? "of the axis" : "elements of the input");
	c = cond->data;
	for (int64_t j = 0; j < len; j++)
		kept += c[j] != 0;
	if (aa != NULL)
	{
		nd = x->ndim;
		memcpy(dims, x->dims, sizeof(int64_t) * nd);
		dims[axis] = kept;
	}
	else
	{
		nd = 1;
		dims[0] = kept;
	}
	if ((y = ie_tensor_new_uninit(x->dtype, nd, dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	block = (size_t) inner * es;
	dst = y->data;
	/* an empty output (a huge outer beside an empty axis) copies nothing */
	if (block > 0 && ie_tensor_numel(y) > 0)
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < len; j++)
				if (c[j])
				{
					memcpy(dst, (const char *) x->data + (size_t) (o * dim + j) * block, block);
					dst += block;
				}
	return 0;
}

/* ---- ReverseSequence ---- */

/*
 * ReverseSequence (opset 10; Operators.md "ReverseSequence"): input of
 * rank >= 2 with a batch axis and a time axis (batch_axis default 1,
 * time_axis default 0, each 0 or 1, not equal); sequence_lens (int64,
 * [batch]) gives each batch entry's length L, 0 <= L <= the time axis's
 * size (ONNX Runtime's bound; the spec asks for it).  The output has
 * input's shape and type: for batch b, time steps t < L take step L-1-t,
 * the others are copied.  Any type.
 */
static int
op_reverse_sequence(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *sl = need_input(ctx, 1, "sequence_lens");
	int64_t		ba = ie_attr_int(ctx, "batch_axis", 1),
				ta = ie_attr_int(ctx, "time_axis", 0),
				n_batch,
				n_time,
				inner = 1,
				bstride,
				tstride;
	size_t		es,
				block;
	ie_tensor  *y;

	if (x == NULL || sl == NULL)
		return -1;
	if (x->ndim < 2)
		return ie_op_error(ctx, "input must have rank 2 or more, got %d", x->ndim);
	if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
		return ie_op_error(ctx, "batch_axis (%lld) and time_axis (%lld) must be 0 and 1 or 1 and 0",
						   (long long) ba, (long long) ta);
	if (sl->dtype != IE_INT64)
		return ie_op_error(ctx, "sequence_lens must be int64, got %s", ie_dtype_name(sl->dtype));
	if ((es = ie_dtype_size(x->dtype)) == 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	n_batch = x->dims[ba];
	n_time = x->dims[ta];
	if (sl->ndim != 1 || sl->dims[0] != n_batch)
		return ie_op_error(ctx, "sequence_lens must be 1-D with the batch size (%lld) entries",
						   (long long) n_batch);
	for (int64_t b = 0; b < n_batch; b++)
	{
		int64_t		L = ((const int64_t *) sl->data)[b];

		if (L < 0 || L > n_time)
			return ie_op_error(ctx, "sequence_lens[%lld] = %lld is out of range [0, %lld]",
							   (long long) b, (long long) L, (long long) n_time);
	}
	for (int d = 2; d < x->ndim && ie_tensor_numel(x) > 0; d++)
		inner *= x->dims[d];
	/* strides, in blocks of inner elements, of the batch and time axes */
	bstride = ba == 0 ? n_time : 1;
	tstride = ta == 0 ? n_batch : 1;
	if ((y = ie_tensor_new_uninit(x->dtype, x->ndim, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	block = (size_t) inner * es;
	if (block == 0)
		return 0;
	for (int64_t b = 0; b < n_batch; b++)
	{
		int64_t		L = ((const int64_t *) sl->data)[b];

		for (int64_t t = 0; t < n_time; t++)
		{
			int64_t		from = t < L ? L - 1 - t : t;

			memcpy((char *) y->data + (size_t) (b * bstride + t * tstride) * block,
				   (const char *) x->data + (size_t) (b * bstride + from * tstride) * block,
				   block);
		}
	}
	return 0;
}

/* ---- EyeLike ---- */

/*
 * EyeLike's output type into *dt: attribute dtype (an
 * onnx.TensorProto.DataType value) or, when unset, the input's (in_dt);
 * -1 after an error for a type store_one cannot write.
 */
static int
eyelike_dtype(ie_node_ctx *ctx, ie_dtype in_dt, ie_dtype *dt)
{
	const ie_attr *a = ie_attr_find(ctx, "dtype");
	char		one[8];

	*dt = a != NULL ? (ie_dtype) a->i : in_dt;
	if (a != NULL && (a->i <= 0 || a->i > IE_UINT64 || a->i == IE_STRING))
		return ie_op_error(ctx, "dtype %lld (%s) is not supported", (long long) a->i,
						   ie_type_name((int) a->i));
	if (store_one(*dt, one) != 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(*dt));
	return 0;
}

/* EyeLike's load-time check of attribute dtype. */
static int
eyelike_check_attrs(ie_node_ctx *ctx)
{
	ie_dtype	dt;

	if (ie_attr_find(ctx, "dtype") == NULL)
		return 0;
	return eyelike_dtype(ctx, IE_FLOAT, &dt);
}

/*
 * EyeLike (opset 9; Operators.md "EyeLike"): a 2-D tensor of input's shape
 * (input must be 2-D; only its shape is read), of type dtype (attribute,
 * default input's), 1 where column - row = k (default 0) and 0 elsewhere.
 * float, double, float16, the integer types and bool.
 */
static int
op_eyelike(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	int64_t		k = ie_attr_int(ctx, "k", 0);
	ie_dtype	dt;
	size_t		es;
	ie_tensor  *y;

	if (x == NULL || eyelike_dtype(ctx, x->dtype, &dt) != 0)
		return -1;
	if (x->ndim != 2)
		return ie_op_error(ctx, "input must be 2-D, got rank %d", x->ndim);
	/* past the matrix the diagonal is empty: clamped, i + k cannot overflow */
	if (k > x->dims[1])
		k = x->dims[1];
	if (k < -x->dims[0])
		k = -x->dims[0];
	if ((y = ie_tensor_new(dt, 2, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	es = ie_dtype_size(dt);
	/* no columns (or rows): no diagonal, and rows not looped over */
	if (ie_tensor_numel(y) == 0)
		return 0;
	for (int64_t i = 0; i < x->dims[0]; i++)
	{
		int64_t		j = i + k;

		if (j >= 0 && j < x->dims[1])
			store_one(dt, (char *) y->data + (size_t) (i * x->dims[1] + j) * es);
	}
	return 0;
}

/* ---- OneHot ---- */

/*
 * Element i of a numeric tensor as a double, into *out; -1 for a type
 * that is not numeric here.
 */
static int
load_number(const ie_tensor *t, int64_t i, double *out)
{
	switch (t->dtype)
	{
		case IE_FLOAT: *out = ((const float *) t->data)[i]; break;
		case IE_DOUBLE: *out = ((const double *) t->data)[i]; break;
		case IE_INT64: *out = (double) ((const int64_t *) t->data)[i]; break;
		case IE_UINT64: *out = (double) ((const uint64_t *) t->data)[i]; break;
		case IE_INT32: *out = ((const int32_t *) t->data)[i]; break;
		case IE_UINT32: *out = ((const uint32_t *) t->data)[i]; break;
		case IE_INT16: *out = ((const int16_t *) t->data)[i]; break;
		case IE_UINT16: *out = ((const uint16_t *) t->data)[i]; break;
		case IE_INT8: *out = ((const int8_t *) t->data)[i]; break;
		case IE_UINT8: *out = ((const uint8_t *) t->data)[i]; break;
		default:
			return -1;
	}
	return 0;
}

/*
 * Element i of an integer tensor as int64 (exact), or of a float one
 * truncated toward zero (ONNX Runtime casts so); -1 for another type or a
 * float value that is not finite.
 */
static int
load_index(const ie_tensor *t, int64_t i, int64_t *out)
{
	double		v;

	switch (t->dtype)
	{
		case IE_INT64: *out = ((const int64_t *) t->data)[i]; return 0;
		case IE_UINT64:
			{
				uint64_t	u = ((const uint64_t *) t->data)[i];

				*out = u > (uint64_t) INT64_MAX ? INT64_MAX : (int64_t) u;
				return 0;
			}
		default:
			break;
	}
	if (load_number(t, i, &v) != 0 || !isfinite(v))
		return -1;
	if (v >= 9.2e18)
		*out = INT64_MAX;
	else if (v <= -9.2e18)
		*out = INT64_MIN;
	else
		*out = (int64_t) v;
	return 0;
}

/*
 * OneHot (opsets 9, 11; Operators.md "OneHot"): indices (any numeric
 * type) of rank r, depth (a numeric scalar or 1-element tensor, > 0) and
 * values ([off_value, on_value], any type) give an output of values' type
 * and rank r + 1, depth inserted at axis (attribute, default -1, in
 * [-r-1, r]): on_value where the position along axis equals the index (a
 * negative index counts from depth), off_value elsewhere; an index outside
 * [-depth, depth-1] gives a row of off_value (the spec).  Float indices and
 * depth are truncated to integers, as ONNX Runtime does.
 */
static int
op_onehot(ie_node_ctx *ctx)
{
	const ie_tensor *ind = need_input(ctx, 0, "indices");
	const ie_tensor *dt = need_input(ctx, 1, "depth");
	const ie_tensor *vals = need_input(ctx, 2, "values");
	int64_t		a = ie_attr_int(ctx, "axis", -1),
				depth,
				outer = 1,
				inner = 1,
				dims[IE_MAX_DIMS];
	int			r,
				axis;
	size_t		es;
	const char *off,
			   *on;
	ie_tensor  *y;
	char	   *dst;

	if (ind == NULL || dt == NULL || vals == NULL)
		return -1;
	r = ind->ndim;
	if (a < -r - 1 || a > r)
		return ie_op_error(ctx, "axis %lld is out of range [%d, %d]", (long long) a, -r - 1, r);
	axis = (int) (a < 0 ? a + r + 1 : a);
	if (r + 1 > IE_MAX_DIMS)
		return ie_op_error(ctx, "output rank %d exceeds the engine's limit of %d",
						   r + 1, IE_MAX_DIMS);
	if (ie_tensor_numel(dt) != 1 || dt->ndim > 1)
		return ie_op_error(ctx, "depth must be a scalar or a 1-element tensor");
	if (load_index(dt, 0, &depth) != 0)
	{
		double		dv;

		/* a float depth that is NaN or infinite: a bad value, not a bad type */
		if (load_number(dt, 0, &dv) == 0)
			return ie_op_error(ctx, "depth must be a finite number, got %g", dv);
		return ie_op_error(ctx, "depth of type %s is not supported", ie_dtype_name(dt->dtype));
	}
	if (depth <= 0)
		return ie_op_error(ctx, "depth must be positive, got %lld", (long long) depth);
	if (vals->ndim != 1 || vals->dims[0] != 2)
		return ie_op_error(ctx, "values must be a 1-D tensor of 2 elements [off_value, on_value]");
	if ((es = ie_dtype_size(vals->dtype)) == 0)
		return ie_op_error(ctx, "values of type %s are not supported", ie_dtype_name(vals->dtype));
	for (int d = 0; d < r && ie_tensor_numel(ind) > 0; d++)
	{
		if (d < axis)
			outer *= ind->dims[d];
		else
			inner *= ind->dims[d];
	}
	for (int d = 0, n = 0; d <= r; d++)
		dims[d] = d == axis ? depth : ind->dims[n++];
	if ((y = ie_tensor_new_uninit(vals->dtype, r + 1, dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	/* no indices: nothing to write, however large depth is */
	if (ie_tensor_numel(y) == 0)
		return 0;
	off = vals->data;
	on = off + es;
	dst = y->data;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < depth; j++)
			for (int64_t in = 0; in < inner; in++)
			{
				int64_t		v;

				if (load_index(ind, o * inner + in, &v) != 0)
				{
					double		dv;

					if (load_number(ind, o * inner + in, &dv) == 0)
						return ie_op_error(ctx, "indices[%lld] must be finite, got %g",
										   (long long) (o * inner + in), dv);
					return ie_op_error(ctx, "indices of type %s are not supported",
									   ie_dtype_name(ind->dtype));
				}
				if (v < 0 && v >= -depth)
					v += depth;
				memcpy(dst, v == j ? on : off, es);
				dst += es;
			}
	return 0;
}

/* ---- Dropout ---- */

/*
 * Dropout's training-mode attributes: opsets 1 and 6 have is_test (default
 * 0, training); the engine runs inference only, so is_test = 0 is refused.
 * Run by the loader on every node.
 */
static int
dropout_check_attrs(ie_node_ctx *ctx)
{
	if (ctx->opset < 7 && ie_attr_int(ctx, "is_test", 0) == 0)
		return ie_op_error(ctx, "training mode (is_test = 0, the default before opset 7) is not supported: set is_test = 1");
	return 0;
}

/*
 * Dropout (opsets 1, 6, 7, 10, 12, 13, 22; Operators.md "Dropout") in
 * inference: output = data, and the optional mask all true (bool from
 * opset 10, data's type before, 1 there).  Training is not supported:
 * is_test = 0 (opsets 1, 6) or input training_mode true (opset 12+) is an
 * error.  ratio (attribute or input 1) does not matter in inference.  Any
 * type for the output; the mask of opsets before 10 needs a numeric type.
 */
static int
op_dropout(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *tm = opt_input(ctx, 2);
	ie_tensor  *y;

	if (x == NULL || dropout_check_attrs(ctx) != 0)
		return -1;
	if (ctx->opset >= 12 && tm != NULL)
	{
		if (tm->dtype != IE_BOOL || ie_tensor_numel(tm) != 1)
			return ie_op_error(ctx, "training_mode must be a bool scalar");
		if (((const uint8_t *) tm->data)[0] != 0)
			return ie_op_error(ctx, "training mode (training_mode true) is not supported");
	}
	if (ie_dtype_size(x->dtype) == 0)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(x->dtype));
	if (ctx->donor == x)
		y = ie_tensor_take(ctx->donor, x->ndim, x->dims);
	else
		y = NULL;
	if (y == NULL && (y = ie_tensor_clone(x)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = y;
	if (ctx->n_outputs > 1)
	{
		ie_dtype	mdt = ctx->opset >= 10 ? IE_BOOL : y->dtype;
		ie_tensor  *m = ie_tensor_new_uninit(mdt, y->ndim, y->dims);
		size_t		es = ie_dtype_size(mdt);
		int64_t		n = ie_tensor_numel(y);

		if (m == NULL)
			return ie_op_error(ctx, "out of memory for the mask");
		ctx->outputs[1] = m;
		for (int64_t i = 0; i < n; i++)
			if (store_one(mdt, (char *) m->data + (size_t) i * es) != 0)
				return ie_op_error(ctx, "a mask of element type %s is not supported",
								   ie_dtype_name(mdt));
	}
	return 0;
}

const ie_op_def ie_ops_misc[] = {
	{"TopK", op_topk},
	{"CumSum", op_cumsum},
	{"CumProd", op_cumprod},
	{"Trilu", op_trilu},
	{"Hardmax", op_hardmax},
	{"NonZero", op_nonzero},
	{"Compress", op_compress},
	{"ReverseSequence", op_reverse_sequence},
	{"EyeLike", op_eyelike},
	{"OneHot", op_onehot},
	{"Dropout", op_dropout},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_misc[] = {
	{"EyeLike", eyelike_check_attrs},
	{"Dropout", dropout_check_attrs},
	{NULL, NULL}
};
