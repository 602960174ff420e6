/*
 * ops_elementwise.c
 *	  Elementwise ONNX operators: Add, Sub, Mul, Div, Pow (multidirectional
 *	  broadcasting) and Sqrt, Relu, Sigmoid, HardSigmoid, Clip, Identity.
 *
 * Binary operators collapse the broadcast shapes into as few dimensions as
 * possible and call one typed row kernel per innermost row, so same-shape,
 * scalar and per-channel cases run as plain vectorisable loops without a
 * call per element.  Types: float and double everywhere; the integer types
 * where the ONNX operator allows them.  Anything else is an error naming
 * the type.  Stateless: safe from any thread.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/engine/op.h"

/*
 * The elementwise loops are built with GCC's full vectoriser (-O2 alone
 * uses its "very cheap" cost model, which leaves these loops scalar); the
 * vector instructions compute the same IEEE results element by element.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define EW_VECTORISE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define EW_VECTORISE
#endif

/* A row kernel: o[i] = f(a[i*sa], b[i*sb]) for i < n, with sa, sb in {0, 1}. */
typedef void (*row_fn) (const void *a, int64_t sa, const void *b, int64_t sb,
						void *o, int64_t n);

/* Broadcast of out = f(a, b) reduced to nd dims with per-input strides. */
typedef struct bcast_plan
{
	int			nd;
	int64_t		dims[IE_MAX_DIMS];
	int64_t		sa[IE_MAX_DIMS];
	int64_t		sb[IE_MAX_DIMS];
} bcast_plan;

/*
 * Plans out = f(a, b): the output shape (into out_nd/out_dims) and the
 * collapsed iteration.  Returns -1 when the shapes do not broadcast.
 */
static int
plan_broadcast(const ie_tensor *a, const ie_tensor *b, int *out_nd,
			   int64_t out_dims[IE_MAX_DIMS], bcast_plan *p)
{
	int			nd = ie_broadcast_shape(a, b, out_dims);
	int64_t		sa[IE_MAX_DIMS],
				sb[IE_MAX_DIMS];
	int64_t		acc_a = 1,
				acc_b = 1;

	if (nd < 0)
		return -1;
	*out_nd = nd;
	for (int i = nd - 1; i >= 0; i--)
	{
		int			ia = i - (nd - a->ndim);
		int			ib = i - (nd - b->ndim);
		int64_t		da = ia >= 0 ? a->dims[ia] : 1;
		int64_t		db = ib >= 0 ? b->dims[ib] : 1;

		sa[i] = (da == 1) ? 0 : acc_a;
		sb[i] = (db == 1) ? 0 : acc_b;
		acc_a *= da;
		acc_b *= db;
	}
	p->nd = 0;
	for (int i = 0; i < nd; i++)
	{
		int			k = p->nd;

		if (out_dims[i] == 1)
			continue;
		if (k > 0 && p->sa[k - 1] == sa[i] * out_dims[i] &&
			p->sb[k - 1] == sb[i] * out_dims[i])
		{
			p->dims[k - 1] *= out_dims[i];
			p->sa[k - 1] = sa[i];
			p->sb[k - 1] = sb[i];
			continue;
		}
		p->dims[k] = out_dims[i];
		p->sa[k] = sa[i];
		p->sb[k] = sb[i];
		p->nd++;
	}
	return 0;
}

/* Runs kernel fn over the plan, one call per innermost row. */
static void
run_rows(const bcast_plan *p, const char *a, const char *b, char *o,
		 size_t esize, row_fn fn)
{
	int64_t		idx[IE_MAX_DIMS] = {0};
	int64_t		inner,
				outer = 1,
				offa = 0,
				offb = 0;
	int			nd = p->nd;

	if (nd == 0)
	{
		fn(a, 0, b, 0, o, 1);
		return;
	}
	inner = p->dims[nd - 1];
	for (int d = 0; d < nd - 1; d++)
		outer *= p->dims[d];
	if (inner == 0 || outer == 0)
		return;
	for (int64_t r = 0; r < outer; r++)
	{
		fn(a + offa * esize, p->sa[nd - 1], b + offb * esize, p->sb[nd - 1],
		   o + r * inner * esize, inner);
		for (int d = nd - 2; d >= 0; d--)
		{
			idx[d]++;
			offa += p->sa[d];
			offb += p->sb[d];
			if (idx[d] < p->dims[d])
				break;
			offa -= p->sa[d] * p->dims[d];
			offb -= p->sb[d] * p->dims[d];
			idx[d] = 0;
		}
	}
}

/*
 * Defines a row kernel NAME over element type T computing EXPR from x and
 * y; the four stride cases are separate loops so each one vectorises.
 */
#define ROW_KERNEL(NAME, T, EXPR) \
EW_VECTORISE static void \
NAME(const void *va, int64_t sa, const void *vb, int64_t sb, void *vo, int64_t n) \
{ \
	const T    *a = va; \
	const T    *b = vb; \
	T		   *o = vo; \
	if (sa && sb) \
		for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (EXPR); } \
	else if (sa) \
	{ \
		T y = b[0]; \
		for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); } \
	} \
	else if (sb) \
	{ \
		T x = a[0]; \
		for (int64_t i = 0; i < n; i++) { T y = b[i]; o[i] = (EXPR); } \
	} \
	else \
	{ \
		T x = a[0], y = b[0]; \
		T r = (EXPR); \
		for (int64_t i = 0; i < n; i++) o[i] = r; \
	} \
}

/* Float kernels, then integer kernels that wrap (unsigned arithmetic). */
#define FLOAT_KERNELS(SUF, T) \
ROW_KERNEL(add_##SUF, T, x + y) \
ROW_KERNEL(sub_##SUF, T, x - y) \
ROW_KERNEL(mul_##SUF, T, x * y) \
ROW_KERNEL(div_##SUF, T, x / y)

#define INT_KERNELS(SUF, T, UT) \
ROW_KERNEL(add_##SUF, T, (T) ((UT) x + (UT) y)) \
ROW_KERNEL(sub_##SUF, T, (T) ((UT) x - (UT) y)) \
ROW_KERNEL(mul_##SUF, T, (T) ((UT) x * (UT) y))

/*
 * Integer division truncates; x / 0 gives 0 and MIN / -1 wraps, never a
 * trap.  SIGNED_KERNELS / UNSIGNED_KERNELS: all four kernels of one type.
 */
#define SIGNED_KERNELS(SUF, T, UT) \
INT_KERNELS(SUF, T, UT) \
ROW_KERNEL(div_##SUF, T, (T) (y == 0 ? 0 : y == -1 ? (T) (0 - (UT) x) : x / y))
#define UNSIGNED_KERNELS(SUF, T) \
INT_KERNELS(SUF, T, T) \
ROW_KERNEL(div_##SUF, T, (T) (y == 0 ? 0 : x / y))

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
SIGNED_KERNELS(i8, int8_t, uint8_t)
UNSIGNED_KERNELS(u8, uint8_t)
SIGNED_KERNELS(i16, int16_t, uint16_t)
UNSIGNED_KERNELS(u16, uint16_t)
SIGNED_KERNELS(i32, int32_t, uint32_t)
UNSIGNED_KERNELS(u32, uint32_t)
SIGNED_KERNELS(i64, int64_t, uint64_t)
UNSIGNED_KERNELS(u64, uint64_t)

ROW_KERNEL(pow_f32, float, powf(x, y))
ROW_KERNEL(pow_f64, double, pow(x, y))

enum binop
{
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV
};

/* The kernel for op on dtype, or NULL when the type is not supported. */
static row_fn
binary_kernel(enum binop op, ie_dtype dt)
{
#define PICK(SUF) \
	return op == OP_ADD ? add_##SUF : op == OP_SUB ? sub_##SUF : \
		op == OP_MUL ? mul_##SUF : div_##SUF
	switch (dt)
	{
		case IE_FLOAT: PICK(f32);
		case IE_DOUBLE: PICK(f64);
		case IE_INT8: PICK(i8);
		case IE_UINT8: PICK(u8);
		case IE_INT16: PICK(i16);
		case IE_UINT16: PICK(u16);
		case IE_INT32: PICK(i32);
		case IE_UINT32: PICK(u32);
		case IE_INT64: PICK(i64);
		case IE_UINT64: PICK(u64);
		default: return NULL;
	}
#undef PICK
}

/* Checks the two inputs of a binary operator are present. */
static int
two_inputs(ie_node_ctx *ctx)
{
	if (ctx->n_inputs != 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "expects 2 inputs, got %d", ctx->n_inputs);
	if (ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects 1 output");
	return 0;
}

/*
 * Plans out = a (op) b (see plan_broadcast) and allocates out in a's type;
 * errors name the two shapes when they do not broadcast.
 */
static int
broadcast_output(ie_node_ctx *ctx, const ie_tensor *a, const ie_tensor *b,
				 bcast_plan *p, ie_tensor **out)
{
	int64_t		dims[IE_MAX_DIMS];
	int			nd;
	char		s1[128],
				s2[128];

	if (plan_broadcast(a, b, &nd, dims, p) != 0)
		return ie_op_error(ctx, "shapes %s and %s do not broadcast",
						   ie_shape_str(s1, sizeof(s1), a->ndim, a->dims),
						   ie_shape_str(s2, sizeof(s2), b->ndim, b->dims));
	*out = ie_tensor_new(a->dtype, nd, dims);
	if (*out == NULL)
		return ie_op_error(ctx, "out of memory");
	return 0;
}

/* out = a (op) b with broadcasting; a and b of one type. */
static int
binary_op(ie_node_ctx *ctx, enum binop op)
{
	const ie_tensor *a,
			   *b;
	bcast_plan	p;
	row_fn		fn;
	ie_tensor  *o;

	if (two_inputs(ctx) != 0)
		return -1;
	if (ctx->opset < 7 && ie_attr_int(ctx, "broadcast", 0) != 0)
		return ie_op_error(ctx, "legacy broadcasting (attribute 'broadcast', opset < 7) "
						   "is not supported");
	a = ctx->inputs[0];
	b = ctx->inputs[1];
	if (a->dtype != b->dtype)
		return ie_op_error(ctx, "input types differ (%s and %s)",
						   ie_dtype_name(a->dtype), ie_dtype_name(b->dtype));
	fn = binary_kernel(op, a->dtype);
	if (fn == NULL)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(a->dtype));
	if (broadcast_output(ctx, a, b, &p, &o) != 0)
		return -1;
	run_rows(&p, a->data, b->data, o->data, ie_dtype_size(a->dtype), fn);
	ctx->outputs[0] = o;
	return 0;
}

static int op_add(ie_node_ctx *ctx) { return binary_op(ctx, OP_ADD); }
static int op_sub(ie_node_ctx *ctx) { return binary_op(ctx, OP_SUB); }
static int op_mul(ie_node_ctx *ctx) { return binary_op(ctx, OP_MUL); }
static int op_div(ie_node_ctx *ctx) { return binary_op(ctx, OP_DIV); }

/* Element i of a numeric tensor as double; types checked by the caller. */
static double
get_f64(const ie_tensor *t, int64_t i)
{
	switch (t->dtype)
	{
		case IE_FLOAT: return ((const float *) t->data)[i];
		case IE_DOUBLE: return ((const double *) t->data)[i];
		case IE_INT8: return ((const int8_t *) t->data)[i];
		case IE_UINT8: return ((const uint8_t *) t->data)[i];
		case IE_INT16: return ((const int16_t *) t->data)[i];
		case IE_UINT16: return ((const uint16_t *) t->data)[i];
		case IE_INT32: return ((const int32_t *) t->data)[i];
		case IE_UINT32: return ((const uint32_t *) t->data)[i];
		case IE_INT64: return (double) ((const int64_t *) t->data)[i];
		case IE_UINT64: return (double) ((const uint64_t *) t->data)[i];
		default: return 0;
	}
}

/* Stores v (already rounded as wanted) as element i of a numeric tensor. */
static void
set_f64(ie_tensor *t, int64_t i, double v)
{
	switch (t->dtype)
	{
		case IE_FLOAT: ((float *) t->data)[i] = (float) v; break;
		case IE_DOUBLE: ((double *) t->data)[i] = v; break;
		case IE_INT8: ((int8_t *) t->data)[i] = (int8_t) v; break;
		case IE_UINT8: ((uint8_t *) t->data)[i] = (uint8_t) v; break;
		case IE_INT16: ((int16_t *) t->data)[i] = (int16_t) v; break;
		case IE_UINT16: ((uint16_t *) t->data)[i] = (uint16_t) v; break;
		case IE_INT32: ((int32_t *) t->data)[i] = (int32_t) v; break;
		case IE_UINT32: ((uint32_t *) t->data)[i] = (uint32_t) v; break;
		case IE_INT64: ((int64_t *) t->data)[i] = (int64_t) v; break;
		case IE_UINT64: ((uint64_t *) t->data)[i] = (uint64_t) v; break;
		default: break;
	}
}

/* True for the types Pow accepts (numeric, not float16). */
static bool
pow_type_ok(ie_dtype t)
{
	return t == IE_FLOAT || t == IE_DOUBLE || t == IE_INT8 || t == IE_UINT8 ||
		t == IE_INT16 || t == IE_UINT16 || t == IE_INT32 || t == IE_UINT32 ||
		t == IE_INT64 || t == IE_UINT64;
}

/*
 * Pow: base ** exponent, result in the base's type (ONNX Pow-12+ lets the
 * exponent's type differ).  Float/float with a scalar exponent of 2 or 1
 * takes a fast path; mixed types go through double.
 */
static int
op_pow(ie_node_ctx *ctx)
{
	const ie_tensor *a,
			   *b;
	bcast_plan	p;
	ie_tensor  *o;

	if (two_inputs(ctx) != 0)
		return -1;
	a = ctx->inputs[0];
	b = ctx->inputs[1];
	if (!pow_type_ok(a->dtype) || !pow_type_ok(b->dtype))
		return ie_op_error(ctx, "element types %s ** %s are not supported",
						   ie_dtype_name(a->dtype), ie_dtype_name(b->dtype));
	if (broadcast_output(ctx, a, b, &p, &o) != 0)
		return -1;
	ctx->outputs[0] = o;
	if (a->dtype == IE_FLOAT && b->dtype == IE_FLOAT)
	{
		int64_t		n = ie_tensor_numel(o);
		const float *x = a->data;
		float	   *y = o->data;

		if (ie_tensor_numel(b) == 1 && ie_tensor_numel(a) == n)
		{
			float		e = ((const float *) b->data)[0];

			if (e == 2.0f)
			{
				for (int64_t i = 0; i < n; i++)
					y[i] = x[i] * x[i];
				return 0;
			}
			if (e == 1.0f)
			{
				memcpy(y, x, n * sizeof(float));
				return 0;
			}
		}
		run_rows(&p, a->data, b->data, o->data, sizeof(float), pow_f32);
		return 0;
	}
	if (a->dtype == IE_DOUBLE && b->dtype == IE_DOUBLE)
	{
		run_rows(&p, a->data, b->data, o->data, sizeof(double), pow_f64);
		return 0;
	}
	else
	{
		/* mixed or integer types: element by element in double */
		ie_tensor  *da = ie_tensor_new(IE_DOUBLE, a->ndim, a->dims);
		ie_tensor  *db = ie_tensor_new(IE_DOUBLE, b->ndim, b->dims);
		ie_tensor  *dout = ie_tensor_new(IE_DOUBLE, o->ndim, o->dims);
		int64_t		n;
		bool		int_out = a->dtype != IE_FLOAT && a->dtype != IE_DOUBLE;

		if (da == NULL || db == NULL || dout == NULL)
		{
			ie_tensor_destroy(&da);
			ie_tensor_destroy(&db);
			ie_tensor_destroy(&dout);
			return ie_op_error(ctx, "out of memory");
		}
		for (int64_t i = 0; i < ie_tensor_numel(a); i++)
			((double *) da->data)[i] = get_f64(a, i);
		for (int64_t i = 0; i < ie_tensor_numel(b); i++)
			((double *) db->data)[i] = get_f64(b, i);
		run_rows(&p, da->data, db->data, dout->data, sizeof(double), pow_f64);
		n = ie_tensor_numel(o);
		for (int64_t i = 0; i < n; i++)
		{
			double		v = ((double *) dout->data)[i];

			set_f64(o, i, int_out ? trunc(v) : v);
		}
		ie_tensor_destroy(&da);
		ie_tensor_destroy(&db);
		ie_tensor_destroy(&dout);
		return 0;
	}
}

/* Checks one input present and allocates the same-shape output of type dt. */
static ie_tensor *
unary_out(ie_node_ctx *ctx, ie_dtype dt)
{
	const ie_tensor *x;
	ie_tensor  *o;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL || ctx->n_outputs < 1)
	{
		ie_op_error(ctx, "expects 1 input and 1 output");
		return NULL;
	}
	x = ctx->inputs[0];
	o = ie_tensor_new(dt, x->ndim, x->dims);
	if (o == NULL)
		ie_op_error(ctx, "out of memory");
	ctx->outputs[0] = o;
	return o;
}

/* Error for an input type an operator does not implement. */
static int
bad_type(ie_node_ctx *ctx)
{
	return ie_op_error(ctx, "element type %s is not supported",
					   ie_dtype_name(ctx->inputs[0]->dtype));
}

/* Applies EXPR (of x) elementwise for float and double inputs. */
#define UNARY_FLOAT(ctx, EXPRF, EXPRD) \
	do { \
		const ie_tensor *in_ = (ctx)->inputs[0]; \
		ie_tensor  *o_; \
		int64_t		n_; \
		if (in_ != NULL && in_->dtype != IE_FLOAT && in_->dtype != IE_DOUBLE) \
			return bad_type(ctx); \
		if ((o_ = unary_out((ctx), in_ ? in_->dtype : IE_FLOAT)) == NULL) \
			return -1; \
		n_ = ie_tensor_numel(o_); \
		if (in_->dtype == IE_FLOAT) \
		{ \
			const float *xs_ = in_->data; \
			float	   *ys_ = o_->data; \
			for (int64_t i_ = 0; i_ < n_; i_++) { float x = xs_[i_]; ys_[i_] = (EXPRF); } \
		} \
		else \
		{ \
			const double *xs_ = in_->data; \
			double	   *ys_ = o_->data; \
			for (int64_t i_ = 0; i_ < n_; i_++) { double x = xs_[i_]; ys_[i_] = (EXPRD); } \
		} \
		return 0; \
	} while (0)

/* Sqrt: y = sqrt(x) (NaN for x < 0, as IEEE). */
static int
op_sqrt(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, sqrtf(x), sqrt(x));
}

/* Sigmoid: y = 1 / (1 + exp(-x)). */
static int
op_sigmoid(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)));
}

/* HardSigmoid: y = max(0, min(1, alpha * x + beta)); alpha 0.2, beta 0.5. */
static int
op_hardsigmoid(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 0.2f);
	float		beta = ie_attr_float(ctx, "beta", 0.5f);

	UNARY_FLOAT(ctx, fmaxf(0.0f, fminf(1.0f, alpha * x + beta)),
				fmax(0.0, fmin(1.0, (double) alpha * x + (double) beta)));
}

/* Relu: y = max(0, x); float, double and the signed integer types. */
EW_VECTORISE static int
op_relu(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
#define RELU_LOOP(T) \
	do { const T *xs = x->data; T *ys = o->data; \
		for (int64_t i = 0; i < n; i++) ys[i] = xs[i] > 0 ? xs[i] : 0; } while (0)
	switch (x->dtype)
	{
		case IE_FLOAT:
		case IE_DOUBLE:
		case IE_INT8:
		case IE_INT16:
		case IE_INT32:
		case IE_INT64:
			break;
		default:
			return bad_type(ctx);
	}
	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	switch (x->dtype)
	{
		case IE_FLOAT: RELU_LOOP(float); break;
		case IE_DOUBLE: RELU_LOOP(double); break;
		case IE_INT8: RELU_LOOP(int8_t); break;
		case IE_INT16: RELU_LOOP(int16_t); break;
		case IE_INT32: RELU_LOOP(int32_t); break;
		case IE_INT64: RELU_LOOP(int64_t); break;
		default: break;
	}
#undef RELU_LOOP
	return 0;
}

/* Identity: a copy of the input, any tensor type. */
static int
op_identity(ie_node_ctx *ctx)
{
	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL || ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects 1 input and 1 output");
	ctx->outputs[0] = ie_tensor_clone(ctx->inputs[0]);
	if (ctx->outputs[0] == NULL)
		return ie_op_error(ctx, "out of memory");
	return 0;
}

/*
 * Reads Clip's optional bound input idx (opset 11+: a scalar of the input's
 * type) into *v as double; leaves *v alone when the input is omitted.
 */
static int
clip_bound(ie_node_ctx *ctx, int idx, double *v)
{
	const ie_tensor *t = idx < ctx->n_inputs ? ctx->inputs[idx] : NULL;

	if (t == NULL)
		return 0;
	if (t->dtype != ctx->inputs[0]->dtype)
		return ie_op_error(ctx, "bound input %d has type %s, input is %s", idx,
						   ie_dtype_name(t->dtype), ie_dtype_name(ctx->inputs[0]->dtype));
	if (ie_tensor_numel(t) != 1)
		return ie_op_error(ctx, "bound input %d must be a scalar", idx);
	*v = get_f64(t, 0);
	return 0;
}

/*
 * Clip: y = min(max(x, lo), hi).  Opset < 11: float attributes min and max;
 * opset 11+: optional scalar inputs 1 and 2.  Default bounds are the type's
 * limits.  float, double and the integer types.
 */
EW_VECTORISE static int
op_clip(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	double		lo = -INFINITY,
				hi = INFINITY;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects an input");
	if (!pow_type_ok(x->dtype))
		return bad_type(ctx);
	if (ctx->opset < 11)
	{
		lo = ie_attr_float(ctx, "min", -FLT_MAX);
		hi = ie_attr_float(ctx, "max", FLT_MAX);
	}
	else if (clip_bound(ctx, 1, &lo) != 0 || clip_bound(ctx, 2, &hi) != 0)
		return -1;
	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
#define CLIP_LOOP(T, LO, HI) \
	do { const T *xs = x->data; T *ys = o->data; T l_ = (LO), h_ = (HI); \
		for (int64_t i = 0; i < n; i++) { T v_ = xs[i] < l_ ? l_ : xs[i]; ys[i] = v_ > h_ ? h_ : v_; } \
	} while (0)
	/* integer bounds: clamp the double into the type's range before casting */
#define TO_INT(T, v, MIN, MAX) \
	((v) <= (double) (MIN) ? (T) (MIN) : (v) >= (double) (MAX) ? (T) (MAX) : (T) (v))
#define ICLIP(T, MIN, MAX) CLIP_LOOP(T, TO_INT(T, lo, MIN, MAX), TO_INT(T, hi, MIN, MAX))
	switch (x->dtype)
	{
		case IE_FLOAT: CLIP_LOOP(float, (float) lo, (float) hi); break;
		case IE_DOUBLE: CLIP_LOOP(double, lo, hi); break;
		case IE_INT8: ICLIP(int8_t, INT8_MIN, INT8_MAX); break;
		case IE_UINT8: ICLIP(uint8_t, 0, UINT8_MAX); break;
		case IE_INT16: ICLIP(int16_t, INT16_MIN, INT16_MAX); break;
		case IE_UINT16: ICLIP(uint16_t, 0, UINT16_MAX); break;
		case IE_INT32: ICLIP(int32_t, INT32_MIN, INT32_MAX); break;
		case IE_UINT32: ICLIP(uint32_t, 0, UINT32_MAX); break;
		case IE_INT64: ICLIP(int64_t, INT64_MIN, INT64_MAX); break;
		case IE_UINT64: ICLIP(uint64_t, 0, UINT64_MAX); break;
		default: break;
	}
#undef ICLIP
#undef TO_INT
#undef CLIP_LOOP
	return 0;
}

const ie_op_def ie_ops_elementwise[] = {
	{"Add", op_add},
	{"Sub", op_sub},
	{"Mul", op_mul},
	{"Div", op_div},
	{"Pow", op_pow},
	{"Sqrt", op_sqrt},
	{"Relu", op_relu},
	{"Sigmoid", op_sigmoid},
	{"HardSigmoid", op_hardsigmoid},
	{"Identity", op_identity},
	{"Clip", op_clip},
	{NULL, NULL}
};
