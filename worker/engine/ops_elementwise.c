/*
 * ops_elementwise.c
 *	  Elementwise ONNX operators.  Binary with multidirectional broadcasting:
 *	  Add, Sub, Mul, Div, Pow; comparisons Equal, Less, LessOrEqual, Greater,
 *	  GreaterOrEqual (bool output); logical And, Or, Xor; BitwiseAnd,
 *	  BitwiseOr, BitwiseXor, BitShift.  Variadic with
 *	  broadcasting: Min, Max, Sum, Mean.  Ternary: Where.  Unary: Sqrt, Relu,
 *	  Sigmoid, HardSigmoid, Clip, Identity, Exp, Log, Tanh, Erf, Reciprocal,
 *	  Floor, Ceil, Neg, Abs, Not, BitwiseNot, IsNaN, IsInf, Sin, Cos, Tan, Asin, Acos,
 *	  Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Round, Sign, Shrink; the
 *	  activations (LeakyRelu, Elu, Celu, Selu, Softplus, Softsign,
 *	  HardSwish, Swish, Gelu, Mish, ThresholdedRelu, PRelu).
 *
 * Binary operators collapse the broadcast shapes into as few dimensions as
 * possible and call one typed row kernel per innermost row, so same-shape,
 * scalar and per-channel cases run as plain vectorisable loops without a
 * call per element.  Types: float and double everywhere; the integer types
 * where the ONNX operator allows them; bool for Equal, the logical
 * operators and Where's condition; float16 for Min, Max and the
 * comparisons (ordered on the bits, no conversion).  Anything else is an
 * error naming the type.  Large binary operations and float exp/erf/...
 * split into tasks (blocks of rows or of elements) on the engine's
 * pool; every element goes through the same kernel whatever the split.
 * Stateless: safe from any thread.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/pool.h"
#include "worker/engine/vectorise.h"
#include "worker/engine/vmath.h"

/*
 * exp, log, tanh and erf of float run four lanes at a time through glibc's
 * vector math library (libmvec, x86-64, glibc 2.35+; at most 4 ulp from the
 * correctly rounded result, documented in the glibc manual), reached
 * through libm's linker script.  The tail is padded to a full vector, so
 * every element takes the same code whatever its position in the tensor,
 * and a row's result never depends on the batch around it.  Elsewhere the
 * scalar C library functions are used.
 */
#if defined(__x86_64__) && defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define EW_LIBMVEC 1
#include <emmintrin.h>
extern __m128 _ZGVbN4v_expf(__m128);
extern __m128 _ZGVbN4v_logf(__m128);
extern __m128 _ZGVbN4v_tanhf(__m128);
extern __m128 _ZGVbN4v_erff(__m128);
#endif

/* The float functions with a vector path (see vmath_f32). */
enum vmath
{
	VM_EXP,
	VM_LOG,
	VM_TANH,
	VM_ERF,
	VM_SIGMOID,					/* 1 / (1 + exp(-x)) */
	VM_GELU,					/* x / 2 * (1 + erf(x / sqrt(2))) */
	VM_GELU_TANH				/* x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) */
};

/*
 * GELU's constants (Hendrycks and Gimpel, "Gaussian Error Linear Units
 * (GELUs)", arXiv 1606.08415, section 2; ONNX Gelu-20): 1 / sqrt(2), and
 * sqrt(2 / pi) and 0.044715 of the tanh approximation.
 */
#define GELU_RSQRT2 0.70710678118654752440
#define GELU_TANH_K 0.79788456080286535588
#define GELU_TANH_C 0.044715

static void vmath_f32(enum vmath f, const float *x, float *y, int64_t n);

/*
 * GELU of n floats (x == y allowed) through the vector erf or tanh: the
 * inner argument into a block on the stack, f of it there, then
 * x / 2 * (1 + f).
 */
static void
vmath_gelu_f32(bool tanh_form, const float *x, float *y, int64_t n)
{
	float		t[256];

	if (!tanh_form)
	{
		ie_vgeluf(x, y, n);		/* shared with the fused epilogue step */
		return;
	}

	for (int64_t c = 0; c < n; c += 256)
	{
		int64_t		m = n - c < 256 ? n - c : 256;

		for (int64_t k = 0; k < m; k++)
		{
			float		v = x[c + k];

			t[k] = tanh_form ? (float) GELU_TANH_K * (v + (float) GELU_TANH_C * v * v * v) :
				v * (float) GELU_RSQRT2;
		}
		vmath_f32(tanh_form ? VM_TANH : VM_ERF, t, t, m);
		for (int64_t k = 0; k < m; k++)
			y[c + k] = 0.5f * x[c + k] * (1.0f + t[k]);
	}
}

/* f of one double, through the C library. */
static double
vmath_f64(enum vmath f, double v)
{
	switch (f)
	{
		case VM_EXP: return exp(v);
		case VM_LOG: return log(v);
		case VM_TANH: return tanh(v);
		case VM_ERF: return erf(v);
		case VM_SIGMOID: return 1.0 / (1.0 + exp(-v));
		case VM_GELU: return 0.5 * v * (1.0 + erf(v * GELU_RSQRT2));
		case VM_GELU_TANH: return 0.5 * v * (1.0 + tanh(GELU_TANH_K * (v + GELU_TANH_C * v * v * v)));
	}
	return NAN;
}

#ifdef EW_LIBMVEC
/* Four lanes of function f. */
static inline __m128
vmath_lanes(enum vmath f, __m128 v)
{
	const __m128 one = _mm_set1_ps(1.0f);

	switch (f)
	{
		case VM_EXP: return _ZGVbN4v_expf(v);
		case VM_LOG: return _ZGVbN4v_logf(v);
		case VM_TANH: return _ZGVbN4v_tanhf(v);
		case VM_ERF: return _ZGVbN4v_erff(v);
		default:
			return _mm_div_ps(one, _mm_add_ps(one, _ZGVbN4v_expf(_mm_sub_ps(_mm_setzero_ps(), v))));
	}
}
#endif

/* y[i] = f(x[i]) for n floats (x == y allowed). */
static void
vmath_f32(enum vmath f, const float *x, float *y, int64_t n)
{
#ifdef EW_LIBMVEC
	int64_t		i = 0;
#endif

	if (f == VM_GELU || f == VM_GELU_TANH)
	{
		vmath_gelu_f32(f == VM_GELU_TANH, x, y, n);
		return;
	}
#ifdef EW_LIBMVEC

	if (f == VM_EXP)
	{
		ie_vexpf(x, y, n);
		return;
	}
	if (f == VM_ERF)
	{
		ie_verff(x, y, n);
		return;
	}
	if (f == VM_SIGMOID)
	{
		/* shared with the fused epilogue step and the recurrent gates */
		ie_vsigmoidf(x, y, n);
		return;
	}
	for (; i + 4 <= n; i += 4)
		_mm_storeu_ps(y + i, vmath_lanes(f, _mm_loadu_ps(x + i)));
	if (i < n)
	{
		float		buf[4] = {0, 0, 0, 0};

		memcpy(buf, x + i, (size_t) (n - i) * sizeof(float));
		_mm_storeu_ps(buf, vmath_lanes(f, _mm_loadu_ps(buf)));
		memcpy(y + i, buf, (size_t) (n - i) * sizeof(float));
	}
#else
	for (int64_t i = 0; i < n; i++)
	{
		float		v = x[i];

		y[i] = f == VM_EXP ? expf(v) : f == VM_LOG ? logf(v) : f == VM_TANH ? tanhf(v) :
			f == VM_ERF ? erff(v) : 1.0f / (1.0f + expf(-v));
	}
#endif
}

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

/*
 * Runs kernel fn over rows [r0, r1) of the plan (p->nd >= 1), one call per
 * innermost row; ea, eb and eo are the element sizes of a, b and the
 * output (comparisons write bool).
 */
static void
run_rows_range(const bcast_plan *p, const char *a, size_t ea, const char *b, size_t eb,
			   char *o, size_t eo, row_fn fn, int64_t r0, int64_t r1)
{
	int64_t		idx[IE_MAX_DIMS] = {0};
	int64_t		inner,
				offa = 0,
				offb = 0,
				rem = r0;
	int			nd = p->nd;

	inner = p->dims[nd - 1];
	for (int d = nd - 2; d >= 0; d--)
	{
		idx[d] = rem % p->dims[d];
		rem /= p->dims[d];
		offa += idx[d] * p->sa[d];
		offb += idx[d] * p->sb[d];
	}
	for (int64_t r = r0; r < r1; r++)
	{
		fn(a + offa * ea, p->sa[nd - 1], b + offb * eb, p->sb[nd - 1],
		   o + r * inner * eo, inner);
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
 * Elements of one parallel element-wise task (a multiple of 64), and the
 * fewest elements worth splitting.  Unary functions split from 1M
 * elements.  Binary operators split from EW_BINARY_MIN elements into at
 * least EW_BINARY_TASKS equal tasks of whole rows: the pool deals tasks
 * out in contiguous ranges (pool.h), so with images as the outer rows each
 * thread gets the images whose activations the convolutions before it
 * left in that thread's cache (cls's squeeze-excite Mul, 300K elements,
 * measured with the caller and the pool thread each given a core: 0.025
 * ms on one thread, 0.070 ms on two when one thread read what both had
 * written, 0.015 ms split).
 */
#define EW_TASK 16384
#define EW_PARALLEL_MIN (1 << 20)
#define EW_BINARY_MIN 32768
#define EW_BINARY_TASKS 16

/* A binary operator's work split into tasks: blocks of rows, or (one
 * row) blocks of chunk elements. */
typedef struct ew_job
{
	const bcast_plan *p;
	const char *a,
			   *b;
	char	   *o;
	size_t		ea,
				eb,
				eo;
	row_fn		fn;
	int64_t		outer,
				inner,
				rows_per_task,
				chunk;			/* elements per task when outer is 1 */
} ew_job;

/* Task t of an ew_job. */
static void
ew_task(void *arg, int64_t t, int worker)
{
	ew_job	   *j = arg;

	(void) worker;
	if (j->outer == 1)
	{
		int64_t		c0 = t * j->chunk;
		int64_t		n = j->inner - c0 < j->chunk ? j->inner - c0 : j->chunk;

		j->fn(j->a + c0 * j->p->sa[0] * j->ea, j->p->sa[0],
			  j->b + c0 * j->p->sb[0] * j->eb, j->p->sb[0], j->o + c0 * j->eo, n);
		return;
	}
	run_rows_range(j->p, j->a, j->ea, j->b, j->eb, j->o, j->eo, j->fn,
				   t * j->rows_per_task,
				   (t + 1) * j->rows_per_task < j->outer ? (t + 1) * j->rows_per_task : j->outer);
}

/*
 * Runs kernel fn over the whole plan, on up to n_threads threads when it
 * is large; every element is computed by the same kernel whatever the
 * split, so results do not depend on the thread count.
 */
static void
run_rows(const bcast_plan *p, const char *a, size_t ea, const char *b, size_t eb,
		 char *o, size_t eo, row_fn fn, int n_threads)
{
	int64_t		inner,
				outer = 1;
	ew_job		j;
	int64_t		tasks;

	if (p->nd == 0)
	{
		fn(a, 0, b, 0, o, 1);
		return;
	}
	inner = p->dims[p->nd - 1];
	for (int d = 0; d < p->nd - 1; d++)
		outer *= p->dims[d];
	if (inner == 0 || outer == 0)
		return;
	if (n_threads <= 1 || outer * inner < EW_BINARY_MIN)
	{
		run_rows_range(p, a, ea, b, eb, o, eo, fn, 0, outer);
		return;
	}
	j = (ew_job) {p, a, b, o, ea, eb, eo, fn, outer, inner, 1, EW_TASK};
	if (outer == 1)
	{
		/* EW_BINARY_TASKS blocks (a multiple of 64 elements), or blocks
		 * of EW_TASK when that makes more */
		j.chunk = (inner + EW_BINARY_TASKS - 1) / EW_BINARY_TASKS;
		j.chunk = (j.chunk + 63) / 64 * 64;
		if (j.chunk > EW_TASK)
			j.chunk = EW_TASK;
		tasks = (inner + j.chunk - 1) / j.chunk;
	}
	else
	{
		int64_t		most = inner >= EW_TASK ? 1 : EW_TASK / inner;

		j.rows_per_task = (outer + EW_BINARY_TASKS - 1) / EW_BINARY_TASKS;
		if (j.rows_per_task > most)
			j.rows_per_task = most;
		tasks = (outer + j.rows_per_task - 1) / j.rows_per_task;
	}
	ie_parallel_for(n_threads, tasks, ew_task, &j);
}

/*
 * Defines a row kernel NAME reading elements of type T and writing type TO,
 * computing EXPR from x and y; the four stride cases are separate loops so
 * each one vectorises.  ROW_KERNEL: output in the input type.
 */
#define ROW_KERNEL2(NAME, T, TO, EXPR) \
IE_VECTORISE static void \
NAME(const void *va, int64_t sa, const void *vb, int64_t sb, void *vo, int64_t n) \
{ \
	const T    *a = va; \
	const T    *b = vb; \
	TO		   *o = vo; \
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
		TO r = (EXPR); \
		for (int64_t i = 0; i < n; i++) o[i] = r; \
	} \
}
#define ROW_KERNEL(NAME, T, EXPR) ROW_KERNEL2(NAME, T, T, EXPR)

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
 * Integer division truncates and MIN / -1 wraps, never a trap; x / 0 gives
 * 0 here, but binary_apply refuses a zero divisor first, as ONNX Runtime
 * does.  SIGNED_KERNELS / UNSIGNED_KERNELS: all four kernels of one type.
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

/*
 * Mod (ONNX Operators.md, Mod-10/13/28): with fmod 0, the integer remainder
 * with the divisor's sign (Python's %: mod_*; floats below); with fmod 1, C's fmod and
 * %, the dividend's sign (fmod_*).  x mod 0 gives 0 here, as Div's x / 0
 * (binary_apply refuses a zero divisor first), and so does MIN mod -1 (a
 * trap otherwise).
 */
#define SIGNED_MOD_KERNELS(SUF, T) \
ROW_KERNEL(fmod_##SUF, T, (T) (y == 0 || y == -1 ? 0 : x % y)) \
ROW_KERNEL(mod_##SUF, T, (T) (y == 0 || y == -1 ? 0 : \
							  (x % y != 0 && ((x % y < 0) != (y < 0))) ? x % y + y : x % y))
#define UNSIGNED_MOD_KERNELS(SUF, T) \
ROW_KERNEL(fmod_##SUF, T, (T) (y == 0 ? 0 : x % y)) \
ROW_KERNEL(mod_##SUF, T, (T) (y == 0 ? 0 : x % y))

SIGNED_MOD_KERNELS(i8, int8_t)
UNSIGNED_MOD_KERNELS(u8, uint8_t)
SIGNED_MOD_KERNELS(i16, int16_t)
UNSIGNED_MOD_KERNELS(u16, uint16_t)
SIGNED_MOD_KERNELS(i32, int32_t)
UNSIGNED_MOD_KERNELS(u32, uint32_t)
SIGNED_MOD_KERNELS(i64, int64_t)
UNSIGNED_MOD_KERNELS(u64, uint64_t)
ROW_KERNEL(fmod_f32, float, fmodf(x, y))
ROW_KERNEL(fmod_f64, double, fmod(x, y))

/*
 * Mod-28's fmod 0 on floats: x - floor(x / y) * y, the divisor's sign, as
 * numpy.mod (the ONNX reference) computes it: C's fmod, moved by y when
 * it is nonzero with the other sign; a zero takes y's sign.  So x mod
 * +-inf is x or y by the signs, and a NaN, an infinite x or a zero y give
 * NaN (fmod's), the spec's special cases.
 */
static inline float
floor_mod_f32(float x, float y)
{
	float		r = fmodf(x, y);

	if (r != 0)
		return (r < 0) != (y < 0) ? r + y : r;
	return copysignf(0.0f, y);
}

static inline double
floor_mod_f64(double x, double y)
{
	double		r = fmod(x, y);

	if (r != 0)
		return (r < 0) != (y < 0) ? r + y : r;
	return copysign(0.0, y);
}

ROW_KERNEL(mod_f32, float, floor_mod_f32(x, y))
ROW_KERNEL(mod_f64, double, floor_mod_f64(x, y))

ROW_KERNEL(pow_f32, float, powf(x, y))
ROW_KERNEL(pow_f64, double, pow(x, y))
ROW_KERNEL(prelu_f32, float, x < 0 ? x * y : x)
ROW_KERNEL(prelu_f64, double, x < 0 ? x * y : x)

/*
 * Min and Max: a NaN operand gives NaN (as numpy's minimum/maximum and
 * onnxruntime); for integers the NaN tests fold away.
 */
#define MINMAX_KERNELS(SUF, T) \
ROW_KERNEL(min_##SUF, T, (x <= y || x != x) ? x : y) \
ROW_KERNEL(max_##SUF, T, (x >= y || x != x) ? x : y)

/* Comparisons write bool (one byte, 0 or 1); any comparison with NaN is false. */
#define CMP_KERNELS(SUF, T) \
ROW_KERNEL2(eq_##SUF, T, uint8_t, x == y) \
ROW_KERNEL2(lt_##SUF, T, uint8_t, x < y) \
ROW_KERNEL2(le_##SUF, T, uint8_t, x <= y) \
ROW_KERNEL2(gt_##SUF, T, uint8_t, x > y) \
ROW_KERNEL2(ge_##SUF, T, uint8_t, x >= y)

#define ORDER_KERNELS(SUF, T) MINMAX_KERNELS(SUF, T) CMP_KERNELS(SUF, T)

ORDER_KERNELS(f32, float)
ORDER_KERNELS(f64, double)
ORDER_KERNELS(i8, int8_t)
ORDER_KERNELS(u8, uint8_t)
ORDER_KERNELS(i16, int16_t)
ORDER_KERNELS(u16, uint16_t)
ORDER_KERNELS(i32, int32_t)
ORDER_KERNELS(u32, uint32_t)
ORDER_KERNELS(i64, int64_t)
ORDER_KERNELS(u64, uint64_t)

/*
 * float16 (IEEE binary16 bits) is ordered without converting: a NaN has
 * all exponent bits and a non-zero mantissa; otherwise the bits map to a
 * signed key (sign-magnitude to two's complement, so -0 == +0).
 */
static inline int
h16_nan(uint16_t h)
{
	return (h & 0x7fff) > 0x7c00;
}

static inline int32_t
h16_key(uint16_t h)
{
	return (h & 0x8000) ? -(int32_t) (h & 0x7fff) : (int32_t) h;
}

#define H16_CMP(OP) (!h16_nan(x) && !h16_nan(y) && h16_key(x) OP h16_key(y))
ROW_KERNEL(min_f16, uint16_t, h16_nan(x) || (!h16_nan(y) && h16_key(x) <= h16_key(y)) ? x : y)
ROW_KERNEL(max_f16, uint16_t, h16_nan(x) || (!h16_nan(y) && h16_key(x) >= h16_key(y)) ? x : y)
ROW_KERNEL2(eq_f16, uint16_t, uint8_t, H16_CMP(==))
ROW_KERNEL2(lt_f16, uint16_t, uint8_t, H16_CMP(<))
ROW_KERNEL2(le_f16, uint16_t, uint8_t, H16_CMP(<=))
ROW_KERNEL2(gt_f16, uint16_t, uint8_t, H16_CMP(>))
ROW_KERNEL2(ge_f16, uint16_t, uint8_t, H16_CMP(>=))
#undef H16_CMP

/*
 * BitwiseAnd, BitwiseOr, BitwiseXor (opset 18) on the integer types, and
 * BitShift (opsets 11, 28): x shifted by y bits.  A shift by y outside
 * [0, bits of the type) is defined by BitShift-28 (the reference,
 * onnx/reference/ops/op_bitshift.py): LEFT gives 0, RIGHT gives 0 or, for
 * a negative signed x, -1 (all sign bits); in range, a signed LEFT shifts
 * the two's complement bits (no overflow trap), a signed RIGHT is
 * arithmetic (GCC defines >> of a negative value so, C11 6.5.7 leaving it
 * to the implementation).
 */
#define BIT_KERNELS(SUF, T) \
ROW_KERNEL(band_##SUF, T, (T) (x & y)) \
ROW_KERNEL(bor_##SUF, T, (T) (x | y)) \
ROW_KERNEL(bxor_##SUF, T, (T) (x ^ y))
#define SIGNED_SHIFT_KERNELS(SUF, T, UT) \
BIT_KERNELS(SUF, T) \
ROW_KERNEL(shl_##SUF, T, (T) (y < 0 || y >= (T) (8 * sizeof(T)) ? 0 : (UT) ((UT) x << y))) \
ROW_KERNEL(shr_##SUF, T, (T) (y < 0 || y >= (T) (8 * sizeof(T)) ? (x < 0 ? -1 : 0) : x >> y))
#define UNSIGNED_SHIFT_KERNELS(SUF, T) \
BIT_KERNELS(SUF, T) \
ROW_KERNEL(shl_##SUF, T, (T) (y >= 8 * sizeof(T) ? 0 : (T) (x << y))) \
ROW_KERNEL(shr_##SUF, T, (T) (y >= 8 * sizeof(T) ? 0 : x >> y))

SIGNED_SHIFT_KERNELS(i8, int8_t, uint8_t)
UNSIGNED_SHIFT_KERNELS(u8, uint8_t)
SIGNED_SHIFT_KERNELS(i16, int16_t, uint16_t)
UNSIGNED_SHIFT_KERNELS(u16, uint16_t)
SIGNED_SHIFT_KERNELS(i32, int32_t, uint32_t)
UNSIGNED_SHIFT_KERNELS(u32, uint32_t)
SIGNED_SHIFT_KERNELS(i64, int64_t, uint64_t)
UNSIGNED_SHIFT_KERNELS(u64, uint64_t)

/* bool: Equal and the logical operators (any non-zero byte is true). */
ROW_KERNEL(eq_b, uint8_t, (x != 0) == (y != 0))
ROW_KERNEL(and_b, uint8_t, (x != 0) & (y != 0))
ROW_KERNEL(or_b, uint8_t, (x != 0) | (y != 0))
ROW_KERNEL(xor_b, uint8_t, (x != 0) ^ (y != 0))

enum binop
{
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_MIN,
	OP_MAX,
	OP_EQ,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_AND,
	OP_OR,
	OP_XOR,
	OP_MOD,
	OP_FMOD,
	OP_BAND,
	OP_BOR,
	OP_BXOR,
	OP_SHL,
	OP_SHR,
	N_BINOPS
};

/* The kernels of one operator for the ten numeric types. */
#define NUMERIC(PRE) \
	[IE_FLOAT] = PRE##_f32, [IE_DOUBLE] = PRE##_f64, \
	[IE_INT8] = PRE##_i8, [IE_UINT8] = PRE##_u8, \
	[IE_INT16] = PRE##_i16, [IE_UINT16] = PRE##_u16, \
	[IE_INT32] = PRE##_i32, [IE_UINT32] = PRE##_u32, \
	[IE_INT64] = PRE##_i64, [IE_UINT64] = PRE##_u64

/* The kernels of one operator for the eight integer types. */
#define INTEGER(PRE) \
	[IE_INT8] = PRE##_i8, [IE_UINT8] = PRE##_u8, \
	[IE_INT16] = PRE##_i16, [IE_UINT16] = PRE##_u16, \
	[IE_INT32] = PRE##_i32, [IE_UINT32] = PRE##_u32, \
	[IE_INT64] = PRE##_i64, [IE_UINT64] = PRE##_u64

/* kernels[op][dtype]: NULL where the engine does not implement the pair. */
static const row_fn kernels[N_BINOPS][IE_UINT64 + 1] = {
	[OP_ADD] = {NUMERIC(add)},
	[OP_SUB] = {NUMERIC(sub)},
	[OP_MUL] = {NUMERIC(mul)},
	[OP_DIV] = {NUMERIC(div)},
	[OP_MIN] = {NUMERIC(min), [IE_FLOAT16] = min_f16},
	[OP_MAX] = {NUMERIC(max), [IE_FLOAT16] = max_f16},
	[OP_EQ] = {NUMERIC(eq), [IE_FLOAT16] = eq_f16, [IE_BOOL] = eq_b},
	[OP_LT] = {NUMERIC(lt), [IE_FLOAT16] = lt_f16},
	[OP_LE] = {NUMERIC(le), [IE_FLOAT16] = le_f16},
	[OP_GT] = {NUMERIC(gt), [IE_FLOAT16] = gt_f16},
	[OP_GE] = {NUMERIC(ge), [IE_FLOAT16] = ge_f16},
	[OP_AND] = {[IE_BOOL] = and_b},
	[OP_OR] = {[IE_BOOL] = or_b},
	[OP_XOR] = {[IE_BOOL] = xor_b},
	[OP_MOD] = {INTEGER(mod), [IE_FLOAT] = mod_f32, [IE_DOUBLE] = mod_f64},
	[OP_FMOD] = {INTEGER(fmod), [IE_FLOAT] = fmod_f32, [IE_DOUBLE] = fmod_f64},
	[OP_BAND] = {INTEGER(band)},
	[OP_BOR] = {INTEGER(bor)},
	[OP_BXOR] = {INTEGER(bxor)},
	[OP_SHL] = {INTEGER(shl)},
	[OP_SHR] = {INTEGER(shr)},
};
#undef INTEGER
#undef NUMERIC

/* The kernel for op on dtype, or NULL when the type is not supported. */
static row_fn
binary_kernel(enum binop op, ie_dtype dt)
{
	if ((int) dt < 0 || (int) dt > IE_UINT64)
		return NULL;
	return kernels[op][dt];
}

/* Comparisons write bool; the other binary operators the inputs' type. */
static ie_dtype
binary_out_type(enum binop op, ie_dtype in)
{
	return (op >= OP_EQ && op <= OP_GE) ? IE_BOOL : in;
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
 * Plans out = a (op) b (see plan_broadcast) and allocates out of type dt;
 * errors name the two shapes when they do not broadcast.
 */
static int
broadcast_output(ie_node_ctx *ctx, const ie_tensor *a, const ie_tensor *b,
				 ie_dtype dt, bcast_plan *p, ie_tensor **out)
{
	int64_t		dims[IE_MAX_DIMS];
	int			nd;
	char		s1[128],
				s2[128];

	if (plan_broadcast(a, b, &nd, dims, p) != 0)
		return ie_op_error(ctx, "shapes %s and %s do not broadcast",
						   ie_shape_str(s1, sizeof(s1), a->ndim, a->dims),
						   ie_shape_str(s2, sizeof(s2), b->ndim, b->dims));
	/* every caller writes every element */
	*out = ie_tensor_new_uninit(dt, nd, dims);
	if (*out == NULL)
		return ie_op_error(ctx, "out of memory");
	return 0;
}

/*
 * The index of the first zero among the n elements of integer type dt at
 * data, or -1 when there is none.
 */
static int64_t
first_zero(ie_dtype dt, const void *data, int64_t n)
{
	size_t		es = ie_dtype_size(dt);
	static const uint8_t zero[8] = {0};

	for (int64_t i = 0; i < n; i++)
		if (memcmp((const uint8_t *) data + (size_t) i * es, zero, es) == 0)
			return i;
	return -1;
}

/*
 * *out = a (op) b with broadcasting, a new tensor; a and b of one type,
 * which op implements (else an error naming the type).  An integer Div or
 * Mod with a zero in b fails, naming the element, as ONNX Runtime fails
 * ("Integer division by zero"); ONNX leaves the result undefined.
 */
static int
binary_apply(ie_node_ctx *ctx, enum binop op, const ie_tensor *a,
			 const ie_tensor *b, ie_tensor **out)
{
	bcast_plan	p;
	row_fn		fn;
	ie_dtype	odt = binary_out_type(op, a->dtype);
	size_t		es = ie_dtype_size(a->dtype);

	*out = NULL;
	if (a->dtype != b->dtype)
		return ie_op_error(ctx, "input types differ (%s and %s)",
						   ie_dtype_name(a->dtype), ie_dtype_name(b->dtype));
	fn = binary_kernel(op, a->dtype);
	if (fn == NULL)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(a->dtype));
	if ((op == OP_DIV || op == OP_MOD || op == OP_FMOD) && a->dtype != IE_FLOAT &&
		a->dtype != IE_DOUBLE && ie_tensor_numel(a) > 0)
	{
		int64_t		z = first_zero(b->dtype, b->data, ie_tensor_numel(b));

		if (z >= 0)
			return ie_op_error(ctx, "integer %s by zero (element %lld of the divisor, %s)",
							   op == OP_DIV ? "division" : "modulo", (long long) z,
							   ie_dtype_name(b->dtype));
	}
	if (broadcast_output(ctx, a, b, odt, &p, out) != 0)
		return -1;
	run_rows(&p, a->data, es, b->data, es, (*out)->data, ie_dtype_size(odt), fn,
			 ctx->n_threads);
	return 0;
}

/* out = a (op) b for a two-input node (arithmetic, comparison, logic). */
static int
binary_op(ie_node_ctx *ctx, enum binop op)
{
	if (two_inputs(ctx) != 0)
		return -1;
	if (ctx->opset < 7 && ie_attr_int(ctx, "broadcast", 0) != 0)
		return ie_op_error(ctx, "legacy broadcasting (attribute 'broadcast', opset < 7) "
						   "is not supported");
	return binary_apply(ctx, op, ctx->inputs[0], ctx->inputs[1], &ctx->outputs[0]);
}

static int op_add(ie_node_ctx *ctx) { return binary_op(ctx, OP_ADD); }
static int op_sub(ie_node_ctx *ctx) { return binary_op(ctx, OP_SUB); }
static int op_mul(ie_node_ctx *ctx) { return binary_op(ctx, OP_MUL); }
static int op_div(ie_node_ctx *ctx) { return binary_op(ctx, OP_DIV); }
static int op_equal(ie_node_ctx *ctx) { return binary_op(ctx, OP_EQ); }
static int op_less(ie_node_ctx *ctx) { return binary_op(ctx, OP_LT); }
static int op_less_equal(ie_node_ctx *ctx) { return binary_op(ctx, OP_LE); }
static int op_greater(ie_node_ctx *ctx) { return binary_op(ctx, OP_GT); }
static int op_greater_equal(ie_node_ctx *ctx) { return binary_op(ctx, OP_GE); }
static int op_and(ie_node_ctx *ctx) { return binary_op(ctx, OP_AND); }
static int op_or(ie_node_ctx *ctx) { return binary_op(ctx, OP_OR); }
static int op_xor(ie_node_ctx *ctx) { return binary_op(ctx, OP_XOR); }

/*
 * BitwiseAnd, BitwiseOr, BitwiseXor (opset 18): x & y, x | y, x ^ y with
 * multidirectional broadcasting, the two inputs of one integer type (int8
 * to int64, uint8 to uint64); another type is refused.
 */
static int op_bitwise_and(ie_node_ctx *ctx) { return binary_op(ctx, OP_BAND); }
static int op_bitwise_or(ie_node_ctx *ctx) { return binary_op(ctx, OP_BOR); }
static int op_bitwise_xor(ie_node_ctx *ctx) { return binary_op(ctx, OP_BXOR); }

/* BitShift's direction, "LEFT" or "RIGHT" (required), into *left. */
static int
bitshift_direction(ie_node_ctx *ctx, bool *left)
{
	static const char *const dirs[] = {"LEFT", "RIGHT", NULL};
	int			d;

	if (ie_attr_find(ctx, "direction") == NULL)
		return ie_op_error(ctx, "attribute 'direction' is required (LEFT or RIGHT)");
	if (ie_attr_choice(ctx, "direction", "", dirs, &d) != 0)
		return -1;
	*left = d == 0;
	return 0;
}

/* BitShift's direction (bitshift_direction): run by the loader. */
static int
bitshift_check_attrs(ie_node_ctx *ctx)
{
	bool		left;

	return bitshift_direction(ctx, &left);
}

/*
 * BitShift (opsets 11, 28): X shifted LEFT or RIGHT (attribute direction)
 * by Y bits, with multidirectional broadcasting, the output in X's type.
 * The unsigned types (opset 11), and from opset 28 the signed ones too
 * (the loader checks a type against the version); shifts outside
 * [0, bits) as BitShift-28 defines them (see the kernels).  Another
 * direction than LEFT or RIGHT is refused, at load (bitshift_check_attrs).
 */
static int
op_bitshift(ie_node_ctx *ctx)
{
	bool		left;

	if (bitshift_direction(ctx, &left) != 0)
		return -1;
	return binary_op(ctx, left ? OP_SHL : OP_SHR);
}

/* Mod's fmod: 0 or 1 (run by the loader on every Mod node, and by Mod). */
static int
mod_check_attrs(ie_node_ctx *ctx)
{
	int64_t		fmod_attr = ie_attr_int(ctx, "fmod", 0);

	if (fmod_attr != 0 && fmod_attr != 1)
		return ie_op_error(ctx, "unsupported fmod %lld (0 or 1)", (long long) fmod_attr);
	return 0;
}

/*
 * Mod (opsets 10, 13, 28): the remainder of A / B with broadcasting; fmod
 * 0 takes the divisor's sign (A - floor(A / B) * B), fmod 1 the dividend's
 * (A - trunc(A / B) * B).  Integers, float and double; fmod 0 on float and
 * double only from opset 28, before which the spec requires fmod 1 for
 * them (Operators.md, Mod-28).  Float16 is not implemented.
 */
static int
op_mod(ie_node_ctx *ctx)
{
	bool		fmod_1;
	ie_dtype	dt;

	if (two_inputs(ctx) != 0 || mod_check_attrs(ctx) != 0)
		return -1;
	fmod_1 = ie_attr_int(ctx, "fmod", 0) == 1;
	dt = ctx->inputs[0]->dtype;
	if (!fmod_1 && (dt == IE_FLOAT || dt == IE_DOUBLE || dt == IE_FLOAT16) && ctx->opset < 28)
		return ie_op_error(ctx, "fmod must be 1 for %s inputs below opset 28 "
						   "(the model imports %d; ONNX Mod)",
						   ie_dtype_name(dt), ctx->opset);
	if (!fmod_1 && dt == IE_FLOAT16)
		return ie_op_error(ctx, "fmod 0 on float16 inputs is not supported");
	return binary_apply(ctx, fmod_1 ? OP_FMOD : OP_MOD, ctx->inputs[0], ctx->inputs[1],
						&ctx->outputs[0]);
}

/*
 * Min, Max, Sum and Mean over one or more inputs with multidirectional
 * broadcasting (opset 8+; earlier opsets required equal shapes, which
 * broadcast trivially): folds the inputs left to right.  Mean divides the
 * sum by the input count (float and double).
 */
static int
variadic_op(ie_node_ctx *ctx, enum binop op, bool mean)
{
	ie_tensor  *acc = NULL;
	int			n = ctx->n_inputs;

	if (n < 1 || ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects at least 1 input and 1 output");
	for (int i = 0; i < n; i++)
		if (ctx->inputs[i] == NULL)
			return ie_op_error(ctx, "input %d is missing", i);
	if (binary_kernel(op, ctx->inputs[0]->dtype) == NULL ||
		(mean && ctx->inputs[0]->dtype != IE_FLOAT && ctx->inputs[0]->dtype != IE_DOUBLE))
		return ie_op_error(ctx, "element type %s is not supported",
						   ie_dtype_name(ctx->inputs[0]->dtype));
	if (n == 1)
	{
		ctx->outputs[0] = ie_tensor_clone(ctx->inputs[0]);
		return ctx->outputs[0] ? 0 : ie_op_error(ctx, "out of memory");
	}
	for (int i = 1; i < n; i++)
	{
		ie_tensor  *next;

		if (binary_apply(ctx, op, acc ? acc : ctx->inputs[0], ctx->inputs[i], &next) != 0)
		{
			ie_tensor_destroy(&acc);
			return -1;
		}
		ie_tensor_destroy(&acc);
		acc = next;
	}
	if (mean)
	{
		int64_t		m = ie_tensor_numel(acc);

		if (acc->dtype == IE_FLOAT)
			for (int64_t i = 0; i < m; i++)
				((float *) acc->data)[i] /= (float) n;
		else
			for (int64_t i = 0; i < m; i++)
				((double *) acc->data)[i] /= (double) n;
	}
	ctx->outputs[0] = acc;
	return 0;
}

static int op_min(ie_node_ctx *ctx) { return variadic_op(ctx, OP_MIN, false); }
static int op_max(ie_node_ctx *ctx) { return variadic_op(ctx, OP_MAX, false); }
static int op_sum(ie_node_ctx *ctx) { return variadic_op(ctx, OP_ADD, false); }
static int op_mean(ie_node_ctx *ctx) { return variadic_op(ctx, OP_ADD, true); }

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

/*
 * v clamped to [lo, hi], NaN as 0: an integer result that overflows its
 * type saturates (converting an out-of-range double to an integer type is
 * undefined in C11 6.3.1.4).
 */
static double
saturate(double v, double lo, double hi)
{
	if (v != v)
		return 0;
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Stores v (already rounded as wanted) as element i of a numeric tensor;
 * integer types saturate.  2^63 and 2^64 are not representable, so the
 * 64-bit bounds are the largest doubles below them.
 */
static void
set_f64(ie_tensor *t, int64_t i, double v)
{
	switch (t->dtype)
	{
		case IE_FLOAT: ((float *) t->data)[i] = (float) v; break;
		case IE_DOUBLE: ((double *) t->data)[i] = v; break;
		case IE_INT8: ((int8_t *) t->data)[i] = (int8_t) saturate(v, INT8_MIN, INT8_MAX); break;
		case IE_UINT8: ((uint8_t *) t->data)[i] = (uint8_t) saturate(v, 0, UINT8_MAX); break;
		case IE_INT16: ((int16_t *) t->data)[i] = (int16_t) saturate(v, INT16_MIN, INT16_MAX); break;
		case IE_UINT16: ((uint16_t *) t->data)[i] = (uint16_t) saturate(v, 0, UINT16_MAX); break;
		case IE_INT32: ((int32_t *) t->data)[i] = (int32_t) saturate(v, INT32_MIN, INT32_MAX); break;
		case IE_UINT32: ((uint32_t *) t->data)[i] = (uint32_t) saturate(v, 0, UINT32_MAX); break;
		case IE_INT64: ((int64_t *) t->data)[i] = (int64_t) saturate(v, -9223372036854775808.0, 9223372036854774784.0); break;
		case IE_UINT64: ((uint64_t *) t->data)[i] = (uint64_t) saturate(v, 0, 18446744073709549568.0); break;
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
	if (broadcast_output(ctx, a, b, a->dtype, &p, &o) != 0)
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
		run_rows(&p, a->data, sizeof(float), b->data, sizeof(float), o->data,
				 sizeof(float), pow_f32, ctx->n_threads);
		return 0;
	}
	if (a->dtype == IE_DOUBLE && b->dtype == IE_DOUBLE)
	{
		run_rows(&p, a->data, sizeof(double), b->data, sizeof(double), o->data,
				 sizeof(double), pow_f64, ctx->n_threads);
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
		run_rows(&p, da->data, sizeof(double), db->data, sizeof(double), dout->data,
				 sizeof(double), pow_f64, ctx->n_threads);
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

/* vmath_f32 over a float array, split into tasks of EW_TASK elements. */
typedef struct vm_job
{
	enum vmath	f;
	const float *x;
	float	   *y;
	int64_t		n;
} vm_job;

/* Task t of a vm_job. */
static void
vm_task(void *arg, int64_t t, int worker)
{
	vm_job	   *j = arg;
	int64_t		c0 = t * EW_TASK;

	(void) worker;
	vmath_f32(j->f, j->x + c0, j->y + c0, j->n - c0 < EW_TASK ? j->n - c0 : EW_TASK);
}

/*
 * The float/double unary functions of enum vmath: float through
 * vmath_f32, double through the C library.
 */
static int
unary_math(ie_node_ctx *ctx, enum vmath f)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
	if (x->dtype != IE_FLOAT && x->dtype != IE_DOUBLE)
		return bad_type(ctx);
	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	if (x->dtype == IE_FLOAT && ctx->n_threads > 1 && n >= EW_PARALLEL_MIN)
	{
		vm_job		j = {f, x->data, o->data, n};

		ie_parallel_for(ctx->n_threads, (n + EW_TASK - 1) / EW_TASK, vm_task, &j);
	}
	else if (x->dtype == IE_FLOAT)
		vmath_f32(f, x->data, o->data, n);
	else
	{
		const double *xs = x->data;
		double	   *ys = o->data;

		for (int64_t i = 0; i < n; i++)
			ys[i] = vmath_f64(f, xs[i]);
	}
	return 0;
}

/* Sigmoid: y = 1 / (1 + exp(-x)). */
static int
op_sigmoid(ie_node_ctx *ctx)
{
	return unary_math(ctx, VM_SIGMOID);
}

/*
 * The activations of the ONNX operator list (onnx/docs/Operators.md), each
 * y = f(x) elementwise over float and double, attributes with the spec's
 * defaults.  A NaN stays NaN (x < 0 is false for it).
 */

/* LeakyRelu: x < 0 ? alpha * x : x; alpha 0.01. */
static int
op_leakyrelu(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 0.01f);

	UNARY_FLOAT(ctx, x < 0 ? alpha * x : x, x < 0 ? (double) alpha * x : x);
}

/* Elu: x < 0 ? alpha * (exp(x) - 1) : x; alpha 1. */
static int
op_elu(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 1.0f);

	UNARY_FLOAT(ctx, x < 0 ? alpha * expm1f(x) : x, x < 0 ? (double) alpha * expm1(x) : x);
}

/* Celu (opset 12): max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha 1. */
static int
op_celu(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 1.0f);

	if (alpha == 0.0f)
		return ie_op_error(ctx, "alpha must not be 0");
	UNARY_FLOAT(ctx, x < 0 ? alpha * expm1f(x / alpha) : x,
				x < 0 ? (double) alpha * expm1(x / (double) alpha) : x);
}

/*
 * Selu: gamma * (x <= 0 ? alpha * (exp(x) - 1) : x); the defaults are the
 * paper's constants (Klambauer et al., "Self-Normalizing Neural Networks",
 * NIPS 2017), as the ONNX spec gives them.
 */
static int
op_selu(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 1.67326319217681884765625f);
	float		gamma = ie_attr_float(ctx, "gamma", 1.05070102214813232421875f);

	UNARY_FLOAT(ctx, gamma * (x <= 0 ? alpha * expm1f(x) : x),
				(double) gamma * (x <= 0 ? (double) alpha * expm1(x) : x));
}

/* Softplus: log(exp(x) + 1), as max(x, 0) + log1p(exp(-|x|)) (no overflow). */
static int
op_softplus(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))),
				fmax(x, 0.0) + log1p(exp(-fabs(x))));
}

/* Softsign: x / (1 + |x|). */
static int
op_softsign(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, x / (1.0f + fabsf(x)), x / (1.0 + fabs(x)));
}

/* HardSwish (opset 14): x * max(0, min(1, x / 6 + 1 / 2)). */
static int
op_hardswish(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f)),
				x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5)));
}

/*
 * Swish (opset 24): y = x * sigmoid(alpha * x) = x / (1 + exp(-alpha * x)),
 * alpha 1 by default (ONNX Operators.md, Swish-24; the reference,
 * onnx/reference/ops/op_swish.py, computes in X's type as here).  Float
 * and double, any shape, the output X's shape; another type is refused
 * ("element type ... is not supported").  A NaN stays NaN; where
 * exp(-alpha * x) overflows the result is x * 0.
 */
static int
op_swish(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 1.0f);

	UNARY_FLOAT(ctx, x * (1.0f / (1.0f + expf(-alpha * x))),
				x * (1.0 / (1.0 + exp(-(double) alpha * x))));
}

/* Sin and Cos (opset 7). */
static int
op_sin(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, sinf(x), sin(x));
}

static int
op_cos(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, cosf(x), cos(x));
}

/*
 * The trigonometric and hyperbolic functions and their inverses (ONNX
 * Tan, Asin, Acos, Atan: opsets 7, 22; Sinh, Cosh, Asinh, Acosh, Atanh:
 * opsets 9, 22): y = f(x) through the C library (C11 7.12.4, 7.12.5),
 * float and double, any shape.  Outside the domain (asin/acos of |x| > 1,
 * acosh of x < 1, atanh of |x| > 1) the result is NaN, and atanh(+-1) is
 * +-inf, as IEEE and numpy (the reference) give them.
 */
static int op_tan(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, tanf(x), tan(x)); }
static int op_asin(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, asinf(x), asin(x)); }
static int op_acos(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, acosf(x), acos(x)); }
static int op_atan(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, atanf(x), atan(x)); }
static int op_sinh(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, sinhf(x), sinh(x)); }
static int op_cosh(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, coshf(x), cosh(x)); }
static int op_asinh(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, asinhf(x), asinh(x)); }
static int op_acosh(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, acoshf(x), acosh(x)); }
static int op_atanh(ie_node_ctx *ctx) { UNARY_FLOAT(ctx, atanhf(x), atanh(x)); }

/*
 * Round (opsets 11, 22): to the nearest integer, halves to the even one
 * (0.5 -> 0, 1.5 -> 2, -2.5 -> -2), as numpy.round; nearbyint in the
 * default rounding mode (round to nearest, ties to even; C11 7.12.9.3),
 * which raises no inexact exception.  NaN and +-inf stay as they are.
 * Float and double.
 */
IE_VECTORISE static int
op_round(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, nearbyintf(x), nearbyint(x));
}

/*
 * Mish (opsets 18, 22): y = x * tanh(softplus(x)), softplus as Softplus
 * computes it (max(x, 0) + log1p(exp(-|x|)), no overflow).  Float and
 * double.
 */
static int
op_mish(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, x * tanhf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)))),
				x * tanh(fmax(x, 0.0) + log1p(exp(-fabs(x)))));
}

/*
 * ThresholdedRelu (opsets 10, 22): y = x > alpha ? x : 0, alpha 1 by
 * default.  Float and double; a NaN gives 0 (x > alpha is false), as
 * the reference's np.where(X > alpha, X, 0).
 */
IE_VECTORISE static int
op_thresholded_relu(ie_node_ctx *ctx)
{
	float		alpha = ie_attr_float(ctx, "alpha", 1.0f);

	UNARY_FLOAT(ctx, x > alpha ? x : 0.0f, x > (double) alpha ? x : 0.0);
}

/* True for the eight integer types. */
static bool
is_int_type(ie_dtype t)
{
	return pow_type_ok(t) && t != IE_FLOAT && t != IE_DOUBLE;
}

/*
 * y = f(x, p) for an integer input, element by element through double
 * (get_f64, then set_f64 of trunc(f): integer results saturate).  Exact
 * for values below 2^53 in magnitude; int64 and uint64 values beyond that
 * are rounded to a double first.
 */
static int
unary_int_f64(ie_node_ctx *ctx, double (*f) (double, const float *), const float *p)
{
	const ie_tensor *x = ctx->inputs[0];
	ie_tensor  *o;
	int64_t		n;

	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	for (int64_t i = 0; i < n; i++)
		set_f64(o, i, trunc(f(get_f64(x, i), p)));
	return 0;
}

/* The sign of v: -1, 0 or 1. */
static double
sign_f64(double v, const float *p)
{
	(void) p;
	return (double) (v > 0) - (double) (v < 0);
}

/*
 * Sign (opsets 9, 13): -1, 0 or 1 by the sign of x, in x's type; NaN
 * stays NaN (numpy.sign, the reference), -0 gives 0.  Float, double and
 * the eight integer types.
 */
IE_VECTORISE static int
op_sign(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;

	if (x != NULL && is_int_type(x->dtype))
		return unary_int_f64(ctx, sign_f64, NULL);
	UNARY_FLOAT(ctx, x != x ? x : (float) ((x > 0) - (x < 0)),
				x != x ? x : (double) ((x > 0) - (x < 0)));
}

/* Shrink of v with p = {lambd, bias}. */
static double
shrink_f64(double v, const float *p)
{
	return v < -(double) p[0] ? v + p[1] : v > (double) p[0] ? v - p[1] : 0.0;
}

/*
 * Shrink (opset 9): y = x < -lambd ? x + bias : x > lambd ? x - bias : 0,
 * lambd 0.5 and bias 0 by default.  Float and double compute in their own
 * type (lambd and bias converted to it); the integer types through double
 * (unary_int_f64), the result truncated toward zero and saturated to the
 * type where it leaves it (the reference converts with numpy's astype,
 * which wraps instead).  A NaN gives 0.
 */
IE_VECTORISE static int
op_shrink(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	float		p[2] = {ie_attr_float(ctx, "lambd", 0.5f), ie_attr_float(ctx, "bias", 0.0f)};
	double		lambd = p[0],
				bias = p[1];

	if (x != NULL && is_int_type(x->dtype))
		return unary_int_f64(ctx, shrink_f64, p);
	UNARY_FLOAT(ctx, x < -p[0] ? x + p[1] : x > p[0] ? x - p[1] : 0.0f,
				x < -lambd ? x + bias : x > lambd ? x - bias : 0.0);
}

/*
 * BitwiseNot (opset 18): ~x on the integer types.  The complement of
 * every byte is the complement of every element whatever its width, so
 * one loop over the bytes serves all eight types.
 */
IE_VECTORISE static int
op_bitwise_not(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	const uint8_t *xs;
	uint8_t    *ys;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
	if (!is_int_type(x->dtype))
		return bad_type(ctx);
	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	xs = x->data;
	ys = o->data;
	for (size_t i = 0; i < o->nbytes; i++)
		ys[i] = (uint8_t) ~xs[i];
	return 0;
}

/*
 * PRelu: x < 0 ? slope * x : x, slope broadcast to x's shape (ONNX's
 * unidirectional broadcasting: the output has x's shape), float or double.
 */
static int
op_prelu(ie_node_ctx *ctx)
{
	const ie_tensor *x,
			   *s;
	bcast_plan	p;
	ie_tensor  *o;
	char		s1[128],
				s2[128];

	if (two_inputs(ctx) != 0)
		return -1;
	x = ctx->inputs[0];
	s = ctx->inputs[1];
	if ((x->dtype != IE_FLOAT && x->dtype != IE_DOUBLE) || s->dtype != x->dtype)
		return ie_op_error(ctx, "element types %s and %s are not supported",
						   ie_dtype_name(x->dtype), ie_dtype_name(s->dtype));
	if (broadcast_output(ctx, x, s, x->dtype, &p, &o) != 0)
		return -1;
	ctx->outputs[0] = o;
	if (o->ndim != x->ndim || memcmp(o->dims, x->dims, sizeof(int64_t) * x->ndim) != 0)
		return ie_op_error(ctx, "slope %s does not broadcast to the input's shape %s",
						   ie_shape_str(s1, sizeof(s1), s->ndim, s->dims),
						   ie_shape_str(s2, sizeof(s2), x->ndim, x->dims));
	if (x->dtype == IE_FLOAT)
		run_rows(&p, x->data, sizeof(float), s->data, sizeof(float), o->data,
				 sizeof(float), prelu_f32, ctx->n_threads);
	else
		run_rows(&p, x->data, sizeof(double), s->data, sizeof(double), o->data,
				 sizeof(double), prelu_f64, ctx->n_threads);
	return 0;
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

/*
 * Relu: y = max(0, x); float, double and the signed integer types.  NaN
 * stays NaN (the ONNX reference, np.clip(x, 0, inf), and ONNX Runtime),
 * not fmaxf's 0: written x < 0 ? 0 : x.
 */
IE_VECTORISE static int
op_relu(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
#define RELU_LOOP(T) \
	do { const T *xs = x->data; T *ys = o->data; \
		for (int64_t i = 0; i < n; i++) ys[i] = xs[i] < 0 ? 0 : xs[i]; } while (0)
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
IE_VECTORISE static int
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

/* Exp: y = e ** x. */
static int
op_exp(ie_node_ctx *ctx)
{
	return unary_math(ctx, VM_EXP);
}

/* Log: natural logarithm (-inf at 0, NaN below, as IEEE). */
static int
op_log(ie_node_ctx *ctx)
{
	return unary_math(ctx, VM_LOG);
}

/* Tanh: hyperbolic tangent. */
static int
op_tanh(ie_node_ctx *ctx)
{
	return unary_math(ctx, VM_TANH);
}

/* Gelu's approximate: "none" (the default) or "tanh"; -1 for another. */
static int
gelu_form(ie_node_ctx *ctx, bool *tanh_form)
{
	static const char *const forms[] = {"none", "tanh", NULL};
	int			form;

	if (ie_attr_choice(ctx, "approximate", "none", forms, &form) != 0)
		return -1;
	*tanh_form = form == 1;
	return 0;
}

/* Gelu's approximate (gelu_form): run by the loader on every Gelu node. */
static int
gelu_check_attrs(ie_node_ctx *ctx)
{
	bool		tanh_form;

	return gelu_form(ctx, &tanh_form);
}

/* Erf: the error function (C99 erf; GELU's building block). */
static int
op_erf(ie_node_ctx *ctx)
{
	return unary_math(ctx, VM_ERF);
}

/*
 * Gelu (opset 20): x / 2 * (1 + erf(x / sqrt(2))), or with approximate =
 * "tanh" x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (ONNX
 * Gelu-20; Hendrycks and Gimpel, arXiv 1606.08415).  float and double;
 * another approximate is refused at load (gelu_check_attrs).
 */
static int
op_gelu(ie_node_ctx *ctx)
{
	bool		tanh_form;

	if (gelu_form(ctx, &tanh_form) != 0)
		return -1;
	return unary_math(ctx, tanh_form ? VM_GELU_TANH : VM_GELU);
}

/* Reciprocal: y = 1 / x (inf at 0, as IEEE). */
IE_VECTORISE static int
op_reciprocal(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, 1.0f / x, 1.0 / x);
}

/* Floor: largest integer not above x. */
IE_VECTORISE static int
op_floor(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, floorf(x), floor(x));
}

/* Ceil: smallest integer not below x. */
IE_VECTORISE static int
op_ceil(ie_node_ctx *ctx)
{
	UNARY_FLOAT(ctx, ceilf(x), ceil(x));
}

/*
 * Neg (float, double, signed integers) and Abs (also unsigned, where it is
 * the identity).  Integer negation wraps (-INT_MIN == INT_MIN), as two's
 * complement hardware and onnxruntime do.
 */
IE_VECTORISE static int
sign_op(ie_node_ctx *ctx, bool abs_op)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
	switch (x->dtype)
	{
		case IE_FLOAT:
		case IE_DOUBLE:
		case IE_INT8:
		case IE_INT16:
		case IE_INT32:
		case IE_INT64:
			break;
		case IE_UINT8:
		case IE_UINT16:
		case IE_UINT32:
		case IE_UINT64:
			if (abs_op)
				break;
			/* FALLTHROUGH */
		default:
			return bad_type(ctx);
	}
	if ((o = unary_out(ctx, x->dtype)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	if (x->dtype == IE_UINT8 || x->dtype == IE_UINT16 || x->dtype == IE_UINT32 ||
		x->dtype == IE_UINT64)
	{
		/* Abs of an unsigned type (Neg refused them above) */
		if (x->nbytes > 0)
			memcpy(o->data, x->data, x->nbytes);
		return 0;
	}
#define NEG_LOOP(T, UT) \
	do { const T *xs = x->data; T *ys = o->data; \
		for (int64_t i = 0; i < n; i++) ys[i] = (T) (0 - (UT) xs[i]); } while (0)
#define ABS_LOOP(T, UT) \
	do { const T *xs = x->data; T *ys = o->data; \
		for (int64_t i = 0; i < n; i++) ys[i] = xs[i] < 0 ? (T) (0 - (UT) xs[i]) : xs[i]; } while (0)
	switch (x->dtype)
	{
		case IE_FLOAT:
			{
				const float *xs = x->data;
				float	   *ys = o->data;

				for (int64_t i = 0; i < n; i++)
					ys[i] = abs_op ? fabsf(xs[i]) : -xs[i];
				break;
			}
		case IE_DOUBLE:
			{
				const double *xs = x->data;
				double	   *ys = o->data;

				for (int64_t i = 0; i < n; i++)
					ys[i] = abs_op ? fabs(xs[i]) : -xs[i];
				break;
			}
		case IE_INT8: if (abs_op) ABS_LOOP(int8_t, uint8_t); else NEG_LOOP(int8_t, uint8_t); break;
		case IE_INT16: if (abs_op) ABS_LOOP(int16_t, uint16_t); else NEG_LOOP(int16_t, uint16_t); break;
		case IE_INT32: if (abs_op) ABS_LOOP(int32_t, uint32_t); else NEG_LOOP(int32_t, uint32_t); break;
		case IE_INT64: if (abs_op) ABS_LOOP(int64_t, uint64_t); else NEG_LOOP(int64_t, uint64_t); break;
		default: break;
	}
#undef NEG_LOOP
#undef ABS_LOOP
	return 0;
}

static int op_neg(ie_node_ctx *ctx) { return sign_op(ctx, false); }
static int op_abs(ie_node_ctx *ctx) { return sign_op(ctx, true); }

/* Not: logical negation of a bool tensor. */
IE_VECTORISE static int
op_not(ie_node_ctx *ctx)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	ie_tensor  *o;
	const uint8_t *xs;
	uint8_t    *ys;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
	if (x->dtype != IE_BOOL)
		return bad_type(ctx);
	if ((o = unary_out(ctx, IE_BOOL)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	xs = x->data;
	ys = o->data;
	for (int64_t i = 0; i < n; i++)
		ys[i] = xs[i] == 0;
	return 0;
}

/*
 * IsNaN (opsets 9, 13) and IsInf (opset 10; attributes detect_negative and
 * detect_positive, default 1): bool of the same shape; float and double.
 */
IE_VECTORISE static int
classify_op(ie_node_ctx *ctx, bool inf)
{
	const ie_tensor *x = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	bool		neg = ie_attr_int(ctx, "detect_negative", 1) != 0;
	bool		pos = ie_attr_int(ctx, "detect_positive", 1) != 0;
	ie_tensor  *o;
	uint8_t    *ys;
	int64_t		n;

	if (x == NULL)
		return ie_op_error(ctx, "expects 1 input");
	if (x->dtype != IE_FLOAT && x->dtype != IE_DOUBLE)
		return bad_type(ctx);
	if ((o = unary_out(ctx, IE_BOOL)) == NULL)
		return -1;
	n = ie_tensor_numel(o);
	ys = o->data;
	if (!inf && x->dtype == IE_FLOAT)
	{
		const float *xs = x->data;

		for (int64_t i = 0; i < n; i++)
			ys[i] = xs[i] != xs[i];
		return 0;
	}
	for (int64_t i = 0; i < n; i++)
	{
		double		v = x->dtype == IE_FLOAT ? ((const float *) x->data)[i] :
			((const double *) x->data)[i];

		ys[i] = inf ? (isinf(v) && (v > 0 ? pos : neg)) : isnan(v) != 0;
	}
	return 0;
}

static int op_isnan(ie_node_ctx *ctx) { return classify_op(ctx, false); }
static int op_isinf(ie_node_ctx *ctx) { return classify_op(ctx, true); }

/*
 * Where's inner row: o[i] = c[i*sc] ? x[i*sx] : y[i*sy] for elements of
 * type T, strides in {0, 1}.
 */
#define WHERE_ROW(NAME, T) \
IE_VECTORISE static void \
NAME(const uint8_t *c, int64_t sc, const void *vx, int64_t sx, const void *vy, \
	 int64_t sy, void *vo, int64_t n) \
{ \
	const T    *x = vx; \
	const T    *y = vy; \
	T		   *o = vo; \
	if (sc && sx && sy) \
		for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i]; \
	else \
		for (int64_t i = 0; i < n; i++) o[i] = c[i * sc] ? x[i * sx] : y[i * sy]; \
}

WHERE_ROW(where_1, uint8_t)
WHERE_ROW(where_2, uint16_t)
WHERE_ROW(where_4, uint32_t)
WHERE_ROW(where_8, uint64_t)

/*
 * Where (opset 9, 16): out = condition ? X : Y elementwise, the three
 * inputs broadcast together; condition is bool, X and Y of one type (any
 * type the engine holds).
 */
static int
op_where(ie_node_ctx *ctx)
{
	const ie_tensor *in[3];
	ie_tensor	xy = {0};
	int64_t		dims[IE_MAX_DIMS],
				st[3][IE_MAX_DIMS],
				pd[IE_MAX_DIMS],
				ps[3][IE_MAX_DIMS],
				idx[IE_MAX_DIMS] = {0},
				off[3] = {0, 0, 0};
	int			nd,
				pn = 0;
	size_t		es;
	ie_tensor  *o;
	char	   *dst;
	int64_t		inner,
				outer = 1;
	char		s1[128],
				s2[128],
				s3[128];

	if (ctx->n_inputs != 3 || ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects 3 inputs and 1 output");
	for (int i = 0; i < 3; i++)
		if ((in[i] = ctx->inputs[i]) == NULL)
			return ie_op_error(ctx, "input %d is missing", i);
	if (in[0]->dtype != IE_BOOL)
		return ie_op_error(ctx, "condition must be bool, got %s", ie_dtype_name(in[0]->dtype));
	if (in[1]->dtype != in[2]->dtype)
		return ie_op_error(ctx, "X and Y types differ (%s and %s)",
						   ie_dtype_name(in[1]->dtype), ie_dtype_name(in[2]->dtype));
	es = ie_dtype_size(in[1]->dtype);
	if (es != 1 && es != 2 && es != 4 && es != 8)
		return bad_type(ctx);
	xy.ndim = ie_broadcast_shape(in[1], in[2], xy.dims);
	nd = xy.ndim < 0 ? -1 : ie_broadcast_shape(in[0], &xy, dims);
	if (nd < 0)
		return ie_op_error(ctx, "shapes %s, %s and %s do not broadcast",
						   ie_shape_str(s1, sizeof(s1), in[0]->ndim, in[0]->dims),
						   ie_shape_str(s2, sizeof(s2), in[1]->ndim, in[1]->dims),
						   ie_shape_str(s3, sizeof(s3), in[2]->ndim, in[2]->dims));
	/* per-input strides over the output's dims, 0 where broadcast */
	for (int k = 0; k < 3; k++)
	{
		int64_t		acc = 1;

		for (int i = nd - 1; i >= 0; i--)
		{
			int			ii = i - (nd - in[k]->ndim);
			int64_t		d = ii >= 0 ? in[k]->dims[ii] : 1;

			st[k][i] = d == 1 ? 0 : acc;
			acc *= d;
		}
	}
	/* collapse dims where every input stays contiguous (see plan_broadcast) */
	for (int i = 0; i < nd; i++)
	{
		bool		merge = pn > 0;

		if (dims[i] == 1)
			continue;
		for (int k = 0; k < 3 && merge; k++)
			merge = ps[k][pn - 1] == st[k][i] * dims[i];
		if (merge)
		{
			pd[pn - 1] *= dims[i];
			for (int k = 0; k < 3; k++)
				ps[k][pn - 1] = st[k][i];
			continue;
		}
		pd[pn] = dims[i];
		for (int k = 0; k < 3; k++)
			ps[k][pn] = st[k][i];
		pn++;
	}
	if ((o = ie_tensor_new(in[1]->dtype, nd, dims)) == NULL)
		return ie_op_error(ctx, "out of memory");
	ctx->outputs[0] = o;
	if (ie_tensor_numel(o) == 0)
		return 0;
	if (pn == 0)
	{
		pd[0] = 1;
		for (int k = 0; k < 3; k++)
			ps[k][0] = 0;
		pn = 1;
	}
	inner = pd[pn - 1];
	for (int d = 0; d < pn - 1; d++)
		outer *= pd[d];
	dst = o->data;
	for (int64_t r = 0; r < outer; r++)
	{
		const uint8_t *c = (const uint8_t *) in[0]->data + off[0];
		const char *x = (const char *) in[1]->data + off[1] * es;
		const char *y = (const char *) in[2]->data + off[2] * es;

		switch (es)
		{
			case 1: where_1(c, ps[0][pn - 1], x, ps[1][pn - 1], y, ps[2][pn - 1], dst, inner); break;
			case 2: where_2(c, ps[0][pn - 1], x, ps[1][pn - 1], y, ps[2][pn - 1], dst, inner); break;
			case 4: where_4(c, ps[0][pn - 1], x, ps[1][pn - 1], y, ps[2][pn - 1], dst, inner); break;
			default: where_8(c, ps[0][pn - 1], x, ps[1][pn - 1], y, ps[2][pn - 1], dst, inner); break;
		}
		dst += inner * es;
		for (int d = pn - 2; d >= 0; d--)
		{
			idx[d]++;
			for (int k = 0; k < 3; k++)
				off[k] += ps[k][d];
			if (idx[d] < pd[d])
				break;
			for (int k = 0; k < 3; k++)
				off[k] -= ps[k][d] * pd[d];
			idx[d] = 0;
		}
	}
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
	{"LeakyRelu", op_leakyrelu},
	{"Elu", op_elu},
	{"Celu", op_celu},
	{"Selu", op_selu},
	{"Softplus", op_softplus},
	{"Softsign", op_softsign},
	{"HardSwish", op_hardswish},
	{"Swish", op_swish},
	{"Sin", op_sin},
	{"Cos", op_cos},
	{"Tan", op_tan},
	{"Asin", op_asin},
	{"Acos", op_acos},
	{"Atan", op_atan},
	{"Sinh", op_sinh},
	{"Cosh", op_cosh},
	{"Asinh", op_asinh},
	{"Acosh", op_acosh},
	{"Atanh", op_atanh},
	{"Round", op_round},
	{"Sign", op_sign},
	{"Mish", op_mish},
	{"ThresholdedRelu", op_thresholded_relu},
	{"Shrink", op_shrink},
	{"PRelu", op_prelu},
	{"Identity", op_identity},
	{"Clip", op_clip},
	{"Exp", op_exp},
	{"Log", op_log},
	{"Tanh", op_tanh},
	{"Erf", op_erf},
	{"Gelu", op_gelu},
	{"Reciprocal", op_reciprocal},
	{"Floor", op_floor},
	{"Ceil", op_ceil},
	{"Neg", op_neg},
	{"Abs", op_abs},
	{"Not", op_not},
	{"IsNaN", op_isnan},
	{"IsInf", op_isinf},
	{"Equal", op_equal},
	{"Less", op_less},
	{"LessOrEqual", op_less_equal},
	{"Greater", op_greater},
	{"GreaterOrEqual", op_greater_equal},
	{"And", op_and},
	{"Or", op_or},
	{"Xor", op_xor},
	{"Mod", op_mod},
	{"BitwiseAnd", op_bitwise_and},
	{"BitwiseOr", op_bitwise_or},
	{"BitwiseXor", op_bitwise_xor},
	{"BitwiseNot", op_bitwise_not},
	{"BitShift", op_bitshift},
	{"Min", op_min},
	{"Max", op_max},
	{"Sum", op_sum},
	{"Mean", op_mean},
	{"Where", op_where},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_elementwise[] = {
	{"Mod", mod_check_attrs},
	{"Gelu", gelu_check_attrs},
	{"BitShift", bitshift_check_attrs},
	{NULL, NULL}
};
