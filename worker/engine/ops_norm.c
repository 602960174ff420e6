/*
 * ops_norm.c
 *	  ONNX normalisation operators: BatchNormalization (float32), Softmax
 *	  and LogSoftmax (float32, float64), LayerNormalization,
 *	  RMSNormalization, LpNormalization, InstanceNormalization,
 *	  GroupNormalization, LRN and MeanVarianceNormalization (float32,
 *	  float64).
 *
 * Sums run in double: cheap here, and it keeps the results within
 * onnxruntime's rounding.  Softmax's row sum keeps element k in partial
 * sum k % 16 (tail included) and adds the partials in a fixed order, so a
 * row padded with masked scores (exact zeros after the exponential) keeps
 * the bits of its real entries.  Large Softmax, LayerNormalization and
 * RMSNormalization inputs split into tasks of whole rows on the engine's
 * pool.
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/pool.h"
#include "worker/engine/vectorise.h"
#include "worker/engine/vmath.h"

/*
 * The row loops are built with GCC's full vectoriser (IE_VECTORISE,
 * vectorise.h); sums over a row use NORM_LANES partial sums, combined
 * in a fixed order, which the vectoriser maps onto vector registers.
 */
#define NORM_LANES 8
/* Partial sums of a Softmax row (one AVX-512 vector of floats). */
#define SM_LANES 16

/*
 * The BatchNormalization the engine implements: spatial 1 (opsets < 9),
 * training_mode 0 or 1, and no saved_mean/saved_var outputs (opsets < 9
 * training).  From version 14 training_mode also fixes the outputs, as
 * ONNX's shape inference has it (the checker and ONNX Runtime refuse the
 * model otherwise): Y alone at 0, Y, running_mean and running_var at 1.
 * Run by the loader on every such node (ie_op_check_lookup) and by the
 * operator.
 */
static int
batchnorm_check_attrs(ie_node_ctx *ctx)
{
	int64_t		training = ie_attr_int(ctx, "training_mode", 0);

	if (ie_attr_int(ctx, "spatial", 1) != 1)
		return ie_op_error(ctx, "unsupported spatial=0");
	if (training != 0 && training != 1)
		return ie_op_error(ctx, "unsupported training_mode %lld", (long long) training);
	if (ctx->n_outputs > 3)
		return ie_op_error(ctx, "unsupported outputs saved_mean/saved_var (opset < 9 training)");
	if (ctx->opset >= 14 && ctx->n_outputs != (training ? 3 : 1))
		return ie_op_error(ctx, "it has %d output%s, and with training_mode %lld it must have %s",
						   ctx->n_outputs, ctx->n_outputs == 1 ? "" : "s",
						   (long long) training,
						   training ? "3 (Y, running_mean, running_var)" : "1 (Y)");
	return 0;
}

/*
 * stash_type of LayerNormalization, RMSNormalization and
 * GroupNormalization-21: 1 (statistics in float; the engine sums in double,
 * ONNX Operators.md allows more precision) alone.
 */
static int
stash_type_check_attrs(ie_node_ctx *ctx)
{
	int64_t		stash = ie_attr_int(ctx, "stash_type", 1);

	if (stash != 1)
		return ie_op_error(ctx, "stash_type %lld is not supported (only 1, float)",
						   (long long) stash);
	return 0;
}

/*
 * BatchNormalization (opsets 1..15): X[N, C, ...] with per-channel scale,
 * B, mean, var [C]: Y = (X - mean) / sqrt(var + epsilon) * scale + B.
 * training_mode=1 (opset 14+) normalises with the batch's own mean and
 * population variance and also returns the updated running statistics
 * (mean * momentum + batch_mean * (1 - momentum), same for var).
 */
static int
op_batchnorm(ie_node_ctx *ctx)
{
	const ie_tensor *X;
	const float *scale,
			   *bias,
			   *mean,
			   *var;
	float		eps = ie_attr_float(ctx, "epsilon", 1e-5f);
	float		momentum = ie_attr_float(ctx, "momentum", 0.9f);
	int64_t		training = ie_attr_int(ctx, "training_mode", 0);
	int64_t		N,
				C,
				inner = 1;
	ie_tensor  *Y;
	const float *xd;
	float	   *yd,
			   *rmean,
			   *rvar;

	if (ctx->n_inputs < 5)
		return ie_op_error(ctx, "needs 5 inputs (X, scale, B, mean, var)");
	for (int i = 0; i < 5; i++)
		if (ctx->inputs[i] == NULL || ctx->inputs[i]->dtype != IE_FLOAT)
			return ie_op_error(ctx, "input %d missing or not float", i);
	if (batchnorm_check_attrs(ctx) != 0)
		return -1;
	X = ctx->inputs[0];
	if (X->ndim < 2)
		return ie_op_error(ctx, "input rank %d (at least 2)", X->ndim);
	N = X->dims[0];
	C = X->dims[1];
	for (int i = 2; i < X->ndim; i++)
		inner *= X->dims[i];
	for (int i = 1; i < 5; i++)
		if (ie_tensor_numel(ctx->inputs[i]) != C)
			return ie_op_error(ctx, "input %d must have %lld values", i, (long long) C);
	scale = ctx->inputs[1]->data;
	bias = ctx->inputs[2]->data;
	mean = ctx->inputs[3]->data;
	var = ctx->inputs[4]->data;
	xd = X->data;
	Y = ie_tensor_new(IE_FLOAT, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	yd = Y->data;
	/* running statistics, when the node asks for them */
	for (int o = 1; o < 3 && o < ctx->n_outputs; o++)
	{
		ctx->outputs[o] = ie_tensor_new(IE_FLOAT, 1, &C);
		if (ctx->outputs[o] == NULL)
			return ie_op_error(ctx, "out of memory for output %d", o);
	}
	rmean = ctx->n_outputs > 1 ? ctx->outputs[1]->data : NULL;
	rvar = ctx->n_outputs > 2 ? ctx->outputs[2]->data : NULL;

	for (int64_t c = 0; c < C; c++)
	{
		double		m = mean[c],
					v = var[c];
		float		a,
					b;

		if (training)
		{
			double		s = 0,
						ss = 0,
						cnt = (double) N * inner;

			for (int64_t n = 0; n < N; n++)
				for (int64_t i = 0; i < inner; i++)
					s += xd[(n * C + c) * inner + i];
			m = cnt > 0 ? s / cnt : 0;
			for (int64_t n = 0; n < N; n++)
				for (int64_t i = 0; i < inner; i++)
				{
					double		d = xd[(n * C + c) * inner + i] - m;

					ss += d * d;
				}
			v = cnt > 0 ? ss / cnt : 0;
		}
		if (rmean != NULL)
			rmean[c] = training ? (float) (mean[c] * momentum + m * (1.0 - momentum)) : mean[c];
		if (rvar != NULL)
			rvar[c] = training ? (float) (var[c] * momentum + v * (1.0 - momentum)) : var[c];
		/* y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a */
		a = (float) (scale[c] / sqrt(v + eps));
		b = (float) (bias[c] - m * (scale[c] / sqrt(v + eps)));
		for (int64_t n = 0; n < N; n++)
		{
			const float *x = xd + (n * C + c) * inner;
			float	   *y = yd + (n * C + c) * inner;

			for (int64_t i = 0; i < inner; i++)
				y[i] = x[i] * a + b;
		}
	}
	return 0;
}

/*
 * Softmax (or, with log_out, LogSoftmax) of one contiguous row of len
 * values, xs into ys.  Max-subtracted; the sum runs in SM_LANES double
 * partial sums, element k always in lane k % SM_LANES, tail included,
 * combined in lane order: appending values whose exponential is exactly 0
 * (masked scores, padding) leaves every bit of the other results as it was.
 */
IE_VECTORISE static void
softmax_row(const float *xs, float *ys, int64_t len, int log_out)
{
	float		mx = -INFINITY,
				mpart[SM_LANES];
	double		sum = 0,
				part[SM_LANES] = {0};
	int64_t		k;

	for (int l = 0; l < SM_LANES; l++)
		mpart[l] = -INFINITY;
	for (k = 0; k + SM_LANES <= len; k += SM_LANES)
		for (int l = 0; l < SM_LANES; l++)
			mpart[l] = xs[k + l] > mpart[l] ? xs[k + l] : mpart[l];
	for (; k < len; k++)
		mx = xs[k] > mx ? xs[k] : mx;
	for (int l = 0; l < SM_LANES; l++)
		mx = mpart[l] > mx ? mpart[l] : mx;
	/*
	 * Masked scores (-inf, -FLT_MAX) would send the vector exp down its
	 * slow scalar path for out-of-range inputs: clamp them to -87 and give
	 * them exactly 0 afterwards (their exponential is below 1.7e-38, next
	 * to a sum of at least 1).
	 */
	for (k = 0; k < len; k++)
	{
		float		d = xs[k] - mx;

		ys[k] = d < -87.0f ? -87.0f : d;
	}
	ie_vexpf(ys, ys, len);
	for (k = 0; k < len; k++)
		ys[k] = xs[k] - mx < -87.0f ? 0.0f : ys[k];
	for (k = 0; k + SM_LANES <= len; k += SM_LANES)
		for (int l = 0; l < SM_LANES; l++)
			part[l] += ys[k + l];
	for (int l = 0; k < len; k++, l++)
		part[l] += ys[k];
	for (int l = 0; l < SM_LANES; l++)
		sum += part[l];
	if (log_out)
	{
		float		ls = (float) log(sum);

		for (k = 0; k < len; k++)
			ys[k] = xs[k] - mx - ls;
	}
	else
	{
		float		inv = (float) (1.0 / sum);

		for (k = 0; k < len; k++)
			ys[k] *= inv;
	}
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define SM_AVX512 1
#include <immintrin.h>
extern __m512 _ZGVeN16v_expf(__m512);

/*
 * softmax_row with AVX-512 vectors: the same steps (max, clamp at -87,
 * libmvec's exp, exact zeros for clamped values, double partial sums with
 * element k in lane k % 16, lanes summed in order), two passes over the
 * row; the tail runs under a mask whose dead lanes add exactly +0.
 */
/* GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
 * _mm*_undefined_* placeholders (extract, reduce): not ours to fix */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) static void
softmax_row16(const float *xs, float *ys, int64_t len, int log_out)
{
	const __m512 lim = _mm512_set1_ps(-87.0f);
	__m512		vmx = _mm512_set1_ps(-INFINITY);
	__m512d		slo = _mm512_setzero_pd(),
				shi = _mm512_setzero_pd();
	double		part[SM_LANES],
				sum = 0;
	float		mx;
	int64_t		full = len / 16 * 16,
				k;
	__mmask16	mt = (__mmask16) ((1u << (len - full)) - 1);

	/* full vectors plain, the tail (if any) under mask mt: AMD's cores
	 * run masked stores far slower than plain ones */
	for (k = 0; k < full; k += 16)
		vmx = _mm512_max_ps(vmx, _mm512_loadu_ps(xs + k));
	if (mt)
		vmx = _mm512_max_ps(vmx, _mm512_mask_loadu_ps(vmx, mt, xs + k));
	mx = -INFINITY;
	{
		float		lanes[16];

		_mm512_storeu_ps(lanes, vmx);
		for (int l = 0; l < 16; l++)
			mx = lanes[l] > mx ? lanes[l] : mx;
	}
	vmx = _mm512_set1_ps(mx);
	for (k = 0; k < len; k += 16)
	{
		__mmask16	m = k < full ? 0xffff : mt;
		__m512		d = _mm512_sub_ps(k < full ? _mm512_loadu_ps(xs + k) :
									  _mm512_maskz_loadu_ps(m, xs + k), vmx);
		/* a NaN stays NaN (max returns its second operand for a NaN, and
		 * NLT_UQ holds for one), so the row's sum is NaN, as in numpy */
		__mmask16	live = _mm512_mask_cmp_ps_mask(m, d, lim, _CMP_NLT_UQ);
		__m512		e = _mm512_maskz_mov_ps(live, _ZGVeN16v_expf(_mm512_max_ps(lim, d)));

		if (!log_out)
		{
			if (k < full)
				_mm512_storeu_ps(ys + k, e);
			else
				_mm512_mask_storeu_ps(ys + k, m, e);
		}
		slo = _mm512_add_pd(slo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		shi = _mm512_add_pd(shi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
	}
	_mm512_storeu_pd(part, slo);
	_mm512_storeu_pd(part + 8, shi);
	for (int l = 0; l < SM_LANES; l++)
		sum += part[l];
	if (log_out)
	{
		__m512		off = _mm512_set1_ps(mx);
		__m512		ls = _mm512_set1_ps((float) log(sum));

		for (k = 0; k < full; k += 16)
			_mm512_storeu_ps(ys + k, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xs + k), off), ls));
		if (mt)
			_mm512_mask_storeu_ps(ys + k, mt,
								  _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mt, xs + k), off), ls));
	}
	else
	{
		__m512		inv = _mm512_set1_ps((float) (1.0 / sum));

		for (k = 0; k < full; k += 16)
			_mm512_storeu_ps(ys + k, _mm512_mul_ps(_mm512_loadu_ps(ys + k), inv));
		if (mt)
			_mm512_mask_storeu_ps(ys + k, mt, _mm512_mul_ps(_mm512_maskz_loadu_ps(mt, ys + k), inv));
	}
}
#pragma GCC diagnostic pop
#endif

/* Softmax of one row: the AVX-512 version where the CPU has it. */
static void
softmax_row_any(const float *xs, float *ys, int64_t len, int log_out)
{
#ifdef SM_AVX512
	static int	avx512 = -1;

	if (avx512 < 0)
		avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
	if (avx512)
	{
		softmax_row16(xs, ys, len, log_out);
		return;
	}
#endif
	softmax_row(xs, ys, len, log_out);
}

/* Rows of one Softmax task, and the job the tasks share. */
#define SM_TASK_ROWS 64
typedef struct sm_job
{
	const float *x;
	float	   *y;
	int64_t		outer,
				len;
	int			log_out;
} sm_job;

/* Task t: rows [t * SM_TASK_ROWS, ...) of the last-axis case. */
static void
sm_task(void *arg, int64_t t, int worker)
{
	sm_job	   *j = arg;
	int64_t		r1 = (t + 1) * SM_TASK_ROWS < j->outer ? (t + 1) * SM_TASK_ROWS : j->outer;

	(void) worker;
	for (int64_t r = t * SM_TASK_ROWS; r < r1; r++)
		softmax_row_any(j->x + r * j->len, j->y + r * j->len, j->len, j->log_out);
}

/*
 * Softmax / LogSoftmax over blocks: the input is [outer, len, inner] and
 * each (outer, inner) fibre of len values is normalised; log selects
 * LogSoftmax.  Max-subtracted, sums in double.
 */
IE_VECTORISE static void
softmax_blocks(const float *x, float *y, int64_t outer, int64_t len,
			   int64_t inner, int log_out)
{
	if (inner == 1)
	{
		/* the usual last-axis case: contiguous rows, vector exp */
		for (int64_t o = 0; o < outer; o++)
			softmax_row_any(x + o * len, y + o * len, len, log_out);
		return;
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
		{
			const float *xs = x + o * len * inner + i;
			float	   *ys = y + o * len * inner + i;
			float		mx = -INFINITY;
			double		sum = 0;

			for (int64_t k = 0; k < len; k++)
				if (xs[k * inner] > mx)
					mx = xs[k * inner];
			for (int64_t k = 0; k < len; k++)
			{
				float		e = expf(xs[k * inner] - mx);

				if (!log_out)
					ys[k * inner] = e;
				sum += e;
			}
			if (log_out)
			{
				float		ls = (float) log(sum);

				for (int64_t k = 0; k < len; k++)
					ys[k * inner] = xs[k * inner] - mx - ls;
			}
			else
			{
				float		inv = (float) (1.0 / sum);

				for (int64_t k = 0; k < len; k++)
					ys[k * inner] *= inv;
			}
		}
}

/*
 * softmax_blocks for double: each (outer, inner) fibre of len values of x
 * normalised into y (log_out: LogSoftmax), max-subtracted, in double with
 * exp and log; serial (double models are for precision, not speed).
 */
static void
softmax_blocks_f64(const double *x, double *y, int64_t outer, int64_t len,
				   int64_t inner, int log_out)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
		{
			const double *xs = x + o * len * inner + i;
			double	   *ys = y + o * len * inner + i;
			double		mx = -INFINITY,
						sum = 0;

			for (int64_t k = 0; k < len; k++)
				if (xs[k * inner] > mx)
					mx = xs[k * inner];
			for (int64_t k = 0; k < len; k++)
			{
				double		e = exp(xs[k * inner] - mx);

				if (!log_out)
					ys[k * inner] = e;
				sum += e;
			}
			if (log_out)
			{
				double		ls = log(sum);

				for (int64_t k = 0; k < len; k++)
					ys[k * inner] = xs[k * inner] - mx - ls;
			}
			else
				for (int64_t k = 0; k < len; k++)
					ys[k * inner] /= sum;
		}
}

/*
 * Softmax and LogSoftmax.  Opsets before 13 coerce the input to 2-D at
 * axis (default 1): [prod(dims[:axis]), prod(dims[axis:])], normalising
 * each row; opset 13 normalises along the one axis (default -1).  Float,
 * or double (softmax_blocks_f64).
 */
static int
softmax_common(ie_node_ctx *ctx, int log_out)
{
	const ie_tensor *X;
	int64_t		axis;
	int64_t		outer = 1,
				len = 1,
				inner = 1;
	ie_tensor  *Y;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	X = ctx->inputs[0];
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "unsupported input type %s (only float, double)",
						   ie_dtype_name(X->dtype));
	axis = ie_attr_int(ctx, "axis", ctx->opset >= 13 ? -1 : 1);
	if (axis < 0)
		axis += X->ndim;
	if (axis < 0 || axis > X->ndim || (ctx->opset >= 13 && axis >= X->ndim && X->ndim > 0))
		return ie_op_error(ctx, "axis out of range for rank %d", X->ndim);
	if (ctx->opset >= 13)
	{
		for (int i = 0; i < X->ndim; i++)
		{
			if (i < axis)
				outer *= X->dims[i];
			else if (i == axis)
				len = X->dims[i];
			else
				inner *= X->dims[i];
		}
	}
	else
	{
		for (int i = 0; i < X->ndim; i++)
		{
			if (i < axis)
				outer *= X->dims[i];
			else
				len *= X->dims[i];
		}
	}
	Y = ie_tensor_new_uninit(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (X->dtype == IE_DOUBLE)
	{
		if (len > 0)
			softmax_blocks_f64(X->data, Y->data, outer, len, inner, log_out);
		return 0;
	}
	if (len > 0 && inner == 1 && outer > SM_TASK_ROWS && outer * len >= (1 << 18) &&
		ctx->n_threads > 1)
	{
		sm_job		job = {X->data, Y->data, outer, len, log_out};

		ie_parallel_for(ctx->n_threads, (outer + SM_TASK_ROWS - 1) / SM_TASK_ROWS,
						sm_task, &job);
	}
	else if (len > 0)
		softmax_blocks(X->data, Y->data, outer, len, inner, log_out);
	return 0;
}

/* Softmax (opsets 1, 11, 13); see softmax_common. */
static int
op_softmax(ie_node_ctx *ctx)
{
	return softmax_common(ctx, 0);
}

/* LogSoftmax (opsets 1, 11, 13); see softmax_common. */
static int
op_log_softmax(ie_node_ctx *ctx)
{
	return softmax_common(ctx, 1);
}

/*
 * Expands LayerNormalization's Scale or B (p) to the D values of the
 * normalised block (the trailing nr dims ndims of X): p must be
 * unidirectionally broadcastable to them.  Writes doubles into out[D];
 * -1 after an error naming which.
 */
static int
ln_param(ie_node_ctx *ctx, const ie_tensor *p, const char *what, int nr,
		 const int64_t *ndims, int64_t D, double *out)
{
	int64_t		pst[IE_MAX_DIMS];
	int64_t		acc = 1;
	char		s1[128],
				s2[128];

	if (p->ndim > nr)
		goto bad;
	for (int i = nr - 1; i >= 0; i--)
	{
		int			pi = i - (nr - p->ndim);
		int64_t		d = pi >= 0 ? p->dims[pi] : 1;

		if (d != ndims[i] && d != 1)
			goto bad;
		pst[i] = d == 1 ? 0 : acc;
		acc *= d;
	}
	for (int64_t j = 0; j < D; j++)
	{
		int64_t		rem = j,
					off = 0;

		for (int i = nr - 1; i >= 0; i--)
		{
			off += (rem % ndims[i]) * pst[i];
			rem /= ndims[i];
		}
		out[j] = p->dtype == IE_FLOAT ? ((const float *) p->data)[off] :
			((const double *) p->data)[off];
	}
	return 0;
bad:
	return ie_op_error(ctx, "%s of shape %s does not broadcast to the normalised shape %s",
					   what, ie_shape_str(s1, sizeof(s1), p->ndim, p->dims),
					   ie_shape_str(s2, sizeof(s2), nr, ndims));
}

/*
 * The normalised block of LayerNormalization and RMSNormalization: X's
 * dims from attribute axis (default -1, negative from the end) on.  Sets
 * *axis (non-negative), *outer (the product of the dims before it) and *D
 * (of the dims from it); -1 after an error when axis is out of range.
 */
static int
norm_split(ie_node_ctx *ctx, const ie_tensor *X, int64_t *axis, int64_t *outer, int64_t *D)
{
	int64_t		a = ie_attr_int(ctx, "axis", -1);

	if (a < 0)
		a += X->ndim;
	if (a < 0 || a >= X->ndim)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ie_attr_int(ctx, "axis", -1), X->ndim);
	*outer = 1;
	*D = 1;
	for (int i = 0; i < X->ndim; i++)
	{
		if (i < a)
			*outer *= X->dims[i];
		else
			*D *= X->dims[i];
	}
	*axis = a;
	return 0;
}

/*
 * LayerNormalization's rows: each of the `outer` rows of D values of x
 * (type T) is normalised with its own mean and population variance,
 * both accumulated in double (mean first, then the squared deviations, so
 * no cancellation; NORM_LANES interleaved partial sums in a fixed order,
 * so the loops vectorise), and scaled by sc[] plus bi[] (NULL: no bias).  mean_o
 * and inv_o (float, may be NULL) receive the statistics.
 */
#define LN_ROWS(NAME, T) \
IE_CLONES IE_VECTORISE static void \
NAME(const T *x, T *y, int64_t outer, int64_t D, double eps, const double *sc, \
	 const double *bi, float *mean_o, float *inv_o) \
{ \
	for (int64_t r = 0; r < outer; r++) \
	{ \
		const T    *xr = x + r * D; \
		T		   *yr = y + r * D; \
		double		part[NORM_LANES] = {0}, \
					sum = 0, \
					ss = 0, \
					mean, \
					inv; \
		int64_t		j; \
		for (j = 0; j + NORM_LANES <= D; j += NORM_LANES) \
			for (int l = 0; l < NORM_LANES; l++) \
				part[l] += xr[j + l]; \
		for (; j < D; j++) \
			sum += xr[j]; \
		for (int l = 0; l < NORM_LANES; l++) \
		{ \
			sum += part[l]; \
			part[l] = 0; \
		} \
		mean = sum / (double) D; \
		for (j = 0; j + NORM_LANES <= D; j += NORM_LANES) \
			for (int l = 0; l < NORM_LANES; l++) \
			{ \
				double		d = xr[j + l] - mean; \
				part[l] += d * d; \
			} \
		for (; j < D; j++) \
			ss += (xr[j] - mean) * (xr[j] - mean); \
		for (int l = 0; l < NORM_LANES; l++) \
			ss += part[l]; \
		inv = 1.0 / sqrt(ss / (double) D + eps); \
		if (bi) \
			for (j = 0; j < D; j++) \
				yr[j] = (T) ((xr[j] - mean) * inv * sc[j] + bi[j]); \
		else \
			for (j = 0; j < D; j++) \
				yr[j] = (T) ((xr[j] - mean) * inv * sc[j]); \
		if (mean_o) \
			mean_o[r] = (float) mean; \
		if (inv_o) \
			inv_o[r] = (float) inv; \
	} \
}

LN_ROWS(ln_rows_f32, float)
LN_ROWS(ln_rows_f64, double)

/* Rows of one LayerNormalization task, and the job the tasks share. */
#define LN_TASK_ROWS 32
typedef struct ln_job
{
	const float *x;
	float	   *y;
	int64_t		outer,
				D;
	double		eps;
	const double *sc,
			   *bi;
	float	   *mean_o,
			   *inv_o;
} ln_job;

/* Task t: rows [t * LN_TASK_ROWS, ...) of a float LayerNormalization. */
static void
ln_task(void *arg, int64_t t, int worker)
{
	ln_job	   *j = arg;
	int64_t		r0 = t * LN_TASK_ROWS;
	int64_t		nr = j->outer - r0 < LN_TASK_ROWS ? j->outer - r0 : LN_TASK_ROWS;

	(void) worker;
	ln_rows_f32(j->x + r0 * j->D, j->y + r0 * j->D, nr, j->D, j->eps, j->sc, j->bi,
				j->mean_o ? j->mean_o + r0 : NULL, j->inv_o ? j->inv_o + r0 : NULL);
}

/*
 * LayerNormalization (opset 17): normalises X over its dims from axis
 * (default -1) on: Y = (X - mean) / sqrt(var + epsilon) * Scale + B, with
 * Scale and optional B broadcastable to X.shape[axis:].  Optional outputs
 * Mean and InvStdDev (float, stash_type 1) have X's shape with the
 * normalised dims set to 1.  X float or double; statistics in double.
 */
static int
op_layernorm(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *S,
			   *B;
	int64_t		axis;
	float		eps = ie_attr_float(ctx, "epsilon", 1e-5f);
	int64_t		outer,
				D,
				sdims[IE_MAX_DIMS];
	double	   *sc = NULL,
			   *bi = NULL;
	float	   *stat[2] = {NULL, NULL};
	ie_tensor  *Y;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs X and Scale");
	X = ctx->inputs[0];
	S = ctx->inputs[1];
	B = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "unsupported input type %s (only float, double)",
						   ie_dtype_name(X->dtype));
	if (S->dtype != X->dtype || (B != NULL && B->dtype != X->dtype))
		return ie_op_error(ctx, "Scale and B must have X's type %s", ie_dtype_name(X->dtype));
	if (stash_type_check_attrs(ctx) != 0 || norm_split(ctx, X, &axis, &outer, &D) != 0)
		return -1;
	for (int i = 0; i < X->ndim; i++)
		sdims[i] = i < axis ? X->dims[i] : 1;
	Y = D == 0 || outer == 0 ? ie_tensor_new(X->dtype, X->ndim, X->dims) :
		ie_tensor_new_uninit(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	for (int o = 1; o < 3 && o < ctx->n_outputs; o++)
	{
		ctx->outputs[o] = ie_tensor_new(IE_FLOAT, X->ndim, sdims);
		if (ctx->outputs[o] == NULL)
			return ie_op_error(ctx, "out of memory for output %d", o);
		stat[o - 1] = ctx->outputs[o]->data;
	}
	if (D == 0 || outer == 0)
		return 0;
	/* Scale and B as doubles over the normalized axes: D each */
	sc = ie_scratch_new(IE_DOUBLE, 1, &D);
	bi = B != NULL ? ie_scratch_new(IE_DOUBLE, 1, &D) : NULL;
	if (sc == NULL || (B != NULL && bi == NULL))
	{
		free(sc);
		free(bi);
		return ie_op_error(ctx, "out of memory for Scale and B as doubles");
	}
	if (ln_param(ctx, S, "Scale", X->ndim - (int) axis, X->dims + axis, D, sc) != 0 ||
		(B != NULL && ln_param(ctx, B, "B", X->ndim - (int) axis, X->dims + axis, D, bi) != 0))
		goto fail;
	if (X->dtype == IE_FLOAT && ctx->n_threads > 1 && outer > LN_TASK_ROWS &&
		outer * D >= (1 << 20))
	{
		ln_job		job = {X->data, Y->data, outer, D, eps, sc, bi, stat[0], stat[1]};

		ie_parallel_for(ctx->n_threads, (outer + LN_TASK_ROWS - 1) / LN_TASK_ROWS,
						ln_task, &job);
	}
	else if (X->dtype == IE_FLOAT)
		ln_rows_f32(X->data, Y->data, outer, D, eps, sc, bi, stat[0], stat[1]);
	else
		ln_rows_f64(X->data, Y->data, outer, D, eps, sc, bi, stat[0], stat[1]);
	free(sc);
	free(bi);
	return 0;
fail:
	free(sc);
	free(bi);
	return -1;
}

/*
 * RMSNormalization's rows: each of the `outer` rows of D values of x (type
 * T) is divided by its root mean square, sqrt(mean(x^2) + eps), the sum of
 * squares accumulated in double (NORM_LANES interleaved partial sums in a
 * fixed order, so the loop vectorises), and multiplied by sc[].
 */
#define RMS_ROWS(NAME, T) \
IE_CLONES IE_VECTORISE static void \
NAME(const T *x, T *y, int64_t outer, int64_t D, double eps, const double *sc) \
{ \
	for (int64_t r = 0; r < outer; r++) \
	{ \
		const T    *xr = x + r * D; \
		T		   *yr = y + r * D; \
		double		part[NORM_LANES] = {0}, \
					ss = 0, \
					inv; \
		int64_t		j; \
		for (j = 0; j + NORM_LANES <= D; j += NORM_LANES) \
			for (int l = 0; l < NORM_LANES; l++) \
				part[l] += (double) xr[j + l] * xr[j + l]; \
		for (; j < D; j++) \
			ss += (double) xr[j] * xr[j]; \
		for (int l = 0; l < NORM_LANES; l++) \
			ss += part[l]; \
		inv = 1.0 / sqrt(ss / (double) D + eps); \
		for (j = 0; j < D; j++) \
			yr[j] = (T) (xr[j] * inv * sc[j]); \
	} \
}

RMS_ROWS(rms_rows_f32, float)
RMS_ROWS(rms_rows_f64, double)

/*
 * Task t: rows [t * LN_TASK_ROWS, ...) of a float RMSNormalization, whose
 * job is LayerNormalization's without bias or statistics.
 */
static void
rms_task(void *arg, int64_t t, int worker)
{
	ln_job	   *j = arg;
	int64_t		r0 = t * LN_TASK_ROWS;
	int64_t		nr = j->outer - r0 < LN_TASK_ROWS ? j->outer - r0 : LN_TASK_ROWS;

	(void) worker;
	rms_rows_f32(j->x + r0 * j->D, j->y + r0 * j->D, nr, j->D, j->eps, j->sc);
}

/*
 * RMSNormalization (opset 23; ONNX Operators.md, RMSNormalization-23, and
 * its reference, onnx/reference/ops/op_rms_normalization.py): normalises X
 * over its dims from axis (default -1, range [-r, r)) on,
 * Y = X / sqrt(mean(X^2) + epsilon) * Scale, Y of X's shape and type.
 * Scale (type V, float or double, independent of X's) must broadcast
 * unidirectionally to X.shape[axis:] (ln_param).  X float or double; the
 * mean of squares accumulated in double.  Errors: a type other than float
 * or double, an axis out of range, a Scale that does not broadcast
 * (IE_ERR_INVALID), stash_type other than 1 (stash_type_check_attrs,
 * IE_ERR_NOT_SUPPORTED).
 */
static int
op_rmsnorm(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *S;
	int64_t		axis;
	float		eps = ie_attr_float(ctx, "epsilon", 1e-5f);
	int64_t		outer,
				D;
	double	   *sc;
	ie_tensor  *Y;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs X and scale");
	X = ctx->inputs[0];
	S = ctx->inputs[1];
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "input type %s is not supported (only float, double)",
						   ie_dtype_name(X->dtype));
	if (S->dtype != IE_FLOAT && S->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "scale type %s is not supported (only float, double)",
						   ie_dtype_name(S->dtype));
	if (stash_type_check_attrs(ctx) != 0 || norm_split(ctx, X, &axis, &outer, &D) != 0)
		return -1;
	/* Scale as doubles over the normalised axes (checked even when empty) */
	sc = ie_scratch_new(IE_DOUBLE, 1, &D);
	if (sc == NULL)
		return ie_op_error(ctx, "out of memory for scale as doubles");
	if (ln_param(ctx, S, "scale", X->ndim - (int) axis, X->dims + axis, D, sc) != 0)
	{
		free(sc);
		return -1;
	}
	Y = D == 0 || outer == 0 ? ie_tensor_new(X->dtype, X->ndim, X->dims) :
		ie_tensor_new_uninit(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
	{
		free(sc);
		return ie_op_error(ctx, "out of memory for the output");
	}
	ctx->outputs[0] = Y;
	if (X->dtype == IE_FLOAT && ctx->n_threads > 1 && outer > LN_TASK_ROWS &&
		outer * D >= (1 << 20))
	{
		ln_job		job = {X->data, Y->data, outer, D, eps, sc, NULL, NULL, NULL};

		ie_parallel_for(ctx->n_threads, (outer + LN_TASK_ROWS - 1) / LN_TASK_ROWS,
						rms_task, &job);
	}
	else if (X->dtype == IE_FLOAT)
		rms_rows_f32(X->data, Y->data, outer, D, eps, sc);
	else
		rms_rows_f64(X->data, Y->data, outer, D, eps, sc);
	free(sc);
	return 0;
}

/* LpNormalization's p: 1 or 2 (the spec allows no other); run by the loader. */
static int
lpnorm_check_attrs(ie_node_ctx *ctx)
{
	int64_t		p = ie_attr_int(ctx, "p", 2);

	if (p != 1 && p != 2)
		return ie_op_error(ctx, "p must be 1 or 2 (ONNX LpNormalization), got %lld",
						   (long long) p);
	return 0;
}

/*
 * LpNormalization (opsets 1, 22): y = x / ||x||_p along axis (default -1),
 * p 1 (sum of |x|) or 2 (square root of the sum of squares), each vector
 * of the axis normalised on its own: input [outer, D, inner] around the
 * axis, vectors of D elements inner apart.  The norm is summed in double;
 * a vector whose norm is 0 gives zeros, as the reference (0 / 0 taken as
 * 0).  Float and double, any rank >= 1.  Errors: p other than 1 or 2
 * (also at load), an axis out of range, another type.
 */
static int
op_lpnorm(ie_node_ctx *ctx)
{
	const ie_tensor *X = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
	int64_t		p = ie_attr_int(ctx, "p", 2);
	int64_t		axis = ie_attr_int(ctx, "axis", -1);
	int64_t		outer = 1,
				D,
				inner = 1;
	bool		f32;
	ie_tensor  *Y;

	if (X == NULL || ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects 1 input and 1 output");
	if (lpnorm_check_attrs(ctx) != 0)
		return -1;
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(X->dtype));
	if (axis < -X->ndim || axis >= X->ndim)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d", (long long) axis,
						   X->ndim);
	if (axis < 0)
		axis += X->ndim;
	D = X->dims[axis];
	if ((Y = ie_tensor_new_uninit(X->dtype, X->ndim, X->dims)) == NULL)
		return ie_op_error(ctx, "out of memory");
	ctx->outputs[0] = Y;
	/*
	 * empty: nothing to write, and the other dims (maybe huge: [10^15, 0]
	 * along axis 1) are neither looped over nor multiplied (overflow)
	 */
	if (ie_tensor_numel(X) == 0)
		return 0;
	for (int d = 0; d < X->ndim; d++)
		if (d < axis)
			outer *= X->dims[d];
		else if (d > axis)
			inner *= X->dims[d];
	f32 = X->dtype == IE_FLOAT;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
		{
			int64_t		base = o * D * inner + i;
			double		s = 0,
						norm;

			for (int64_t k = 0; k < D; k++)
			{
				double		v = f32 ? ((const float *) X->data)[base + k * inner] :
					((const double *) X->data)[base + k * inner];

				s += p == 1 ? fabs(v) : v * v;
			}
			norm = p == 1 ? s : sqrt(s);
			for (int64_t k = 0; k < D; k++)
			{
				int64_t		j = base + k * inner;

				if (f32)
					((float *) Y->data)[j] = norm == 0 ? 0.0f :
						(float) (((const float *) X->data)[j] / norm);
				else
					((double *) Y->data)[j] = norm == 0 ? 0.0 :
						((const double *) X->data)[j] / norm;
			}
		}
	return 0;
}

/*
 * The statistics of one group of `len` contiguous values of x (type T),
 * both in double: mean first, then the population variance from the
 * squared deviations (no cancellation).  Shared by InstanceNormalization
 * and GroupNormalization.
 */
#define GROUP_STATS(NAME, T) \
static void \
NAME(const T *x, int64_t len, double *mean, double *var) \
{ \
	double		s = 0, \
				ss = 0, \
				m; \
	for (int64_t i = 0; i < len; i++) \
		s += x[i]; \
	m = len > 0 ? s / (double) len : 0; \
	for (int64_t i = 0; i < len; i++) \
		ss += (x[i] - m) * (x[i] - m); \
	*mean = m; \
	*var = len > 0 ? ss / (double) len : 0; \
}

GROUP_STATS(group_stats_f32, float)
GROUP_STATS(group_stats_f64, double)

/*
 * Group normalisation of X [N, C, inner] (T float or double) into Y: each
 * of the N * G groups of C / G contiguous channels (C / G * inner values)
 * is normalised with its own mean and population variance (double), then
 * scaled and shifted: sc and bi hold one value per channel when
 * per_channel, else one per group.
 */
#define GROUP_NORM(NAME, T, STATS) \
static void \
NAME(const T *x, T *y, int64_t N, int64_t C, int64_t G, int64_t inner, \
	 double eps, const T *sc, const T *bi, int per_channel) \
{ \
	int64_t		cg = C / G; \
	for (int64_t n = 0; n < N; n++) \
		for (int64_t g = 0; g < G; g++) \
		{ \
			const T    *xg = x + (n * C + g * cg) * inner; \
			T		   *yg = y + (n * C + g * cg) * inner; \
			double		mean, \
						var, \
						inv; \
			STATS(xg, cg * inner, &mean, &var); \
			inv = 1.0 / sqrt(var + eps); \
			for (int64_t k = 0; k < cg; k++) \
			{ \
				int64_t		p = per_channel ? g * cg + k : g; \
				double		a = (double) sc[p] * inv, \
							b = (double) bi[p]; \
				for (int64_t i = 0; i < inner; i++) \
					yg[k * inner + i] = (T) ((xg[k * inner + i] - mean) * a + b); \
			} \
		} \
}

GROUP_NORM(group_norm_f32, float, group_stats_f32)
GROUP_NORM(group_norm_f64, double, group_stats_f64)

/*
 * Shared body of InstanceNormalization and GroupNormalization: X [N, C,
 * D1, ...] (rank 2 or more), G groups of C / G channels, scale and B of
 * X's type, [C] when per_channel, else [G].  -1 after an error: a type
 * other than float or double, G not dividing C, scale or B misshapen.
 */
static int
group_norm_common(ie_node_ctx *ctx, int64_t G, int per_channel)
{
	const ie_tensor *X = ctx->inputs[0],
			   *S = ctx->inputs[1],
			   *B = ctx->inputs[2];
	float		eps = ie_attr_float(ctx, "epsilon", 1e-5f);
	int64_t		N,
				C,
				inner = 1,
				n_param;
	ie_tensor  *Y;
	char		s1[128];

	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "input type %s is not supported (only float, double)",
						   ie_dtype_name(X->dtype));
	if (S->dtype != X->dtype || B->dtype != X->dtype)
		return ie_op_error(ctx, "scale and B must have X's type %s", ie_dtype_name(X->dtype));
	if (X->ndim < 2)
		return ie_op_error(ctx, "X of shape %s: it must have rank 2 or more [N, C, ...]",
						   ie_shape_str(s1, sizeof(s1), X->ndim, X->dims));
	N = X->dims[0];
	C = X->dims[1];
	for (int i = 2; i < X->ndim && ie_tensor_numel(X) > 0; i++)
		inner *= X->dims[i];
	if (G <= 0 || C % G != 0)
		return ie_op_error(ctx, "num_groups %lld must be positive and divide the %lld channels",
						   (long long) G, (long long) C);
	n_param = per_channel ? C : G;
	if (S->ndim != 1 || S->dims[0] != n_param || B->ndim != 1 || B->dims[0] != n_param)
		return ie_op_error(ctx, "scale and B must have shape [%lld] (one value per %s)",
						   (long long) n_param, per_channel ? "channel" : "group");
	Y = ie_tensor_new(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	/* empty: a huge N or num_groups beside zero channels is not looped over */
	if (ie_tensor_numel(X) == 0)
		return 0;
	if (X->dtype == IE_FLOAT)
		group_norm_f32(X->data, Y->data, N, C, G, inner, eps, S->data, B->data, per_channel);
	else
		group_norm_f64(X->data, Y->data, N, C, G, inner, eps, S->data, B->data, per_channel);
	return 0;
}

/*
 * InstanceNormalization (opsets 1, 6, 22; ONNX Operators.md,
 * InstanceNormalization): X [N, C, D1, ..., Dk], scale and B [C];
 * Y = scale * (X - mean) / sqrt(var + epsilon) + B, mean and population
 * variance per instance per channel (in double).  Float or double; errors:
 * another type, rank below 2, scale or B not [C].
 */
static int
op_instancenorm(ie_node_ctx *ctx)
{
	if (ctx->n_inputs < 3 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL ||
		ctx->inputs[2] == NULL)
		return ie_op_error(ctx, "needs inputs input, scale and B");
	if (ctx->inputs[0]->ndim < 2)
		return ie_op_error(ctx, "input must have rank 2 or more [N, C, ...]");
	/* one group per channel; no channels: one (empty) group, not num_groups 0 */
	return group_norm_common(ctx, ctx->inputs[0]->dims[1] > 0 ? ctx->inputs[0]->dims[1] : 1, 1);
}

/*
 * GroupNormalization (opsets 18, 21; ONNX Operators.md, GroupNormalization,
 * and onnx/backend/test/case/node/groupnormalization.py): X [N, C, D1, ...]
 * with C divisible by num_groups (G, required); the C / G consecutive
 * channels of each group, per instance, are normalised with their mean
 * and population variance (double), then scaled and shifted:
 * Y = scale * (X - mean) / sqrt(var + epsilon) + bias.  Opset 21's scale
 * and bias have one value per channel, [C]; opset 18's one per group, [G]
 * (the change that made 18 deprecated).  Float or double; errors: another
 * type, C not divisible by num_groups, scale or bias of the wrong shape
 * (IE_ERR_INVALID), stash_type other than 1 (IE_ERR_NOT_SUPPORTED).
 */
static int
op_groupnorm(ie_node_ctx *ctx)
{
	if (ctx->n_inputs < 3 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL ||
		ctx->inputs[2] == NULL)
		return ie_op_error(ctx, "needs inputs X, scale and bias");
	if (stash_type_check_attrs(ctx) != 0)
		return -1;
	if (ie_attr_find(ctx, "num_groups") == NULL)
		return ie_op_error(ctx, "needs attribute num_groups");
	return group_norm_common(ctx, ie_attr_int(ctx, "num_groups", 0), ctx->opset >= 21);
}

/*
 * LRN across channels, T float or double: X [N, C, inner] into Y, channel
 * c's window [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped
 * to [0, C), its sum of squares in double.
 */
#define LRN_ROWS(NAME, T) \
static void \
NAME(const T *x, T *y, int64_t N, int64_t C, int64_t inner, int64_t size, \
	 double alpha, double beta, double bias) \
{ \
	int64_t		lo = (size - 1) / 2, \
				hi = size / 2; \
	for (int64_t n = 0; n < N; n++) \
		for (int64_t c = 0; c < C; c++) \
		{ \
			int64_t		c0 = c - lo < 0 ? 0 : c - lo, \
						c1 = c + hi > C - 1 ? C - 1 : c + hi; \
			const T    *xn = x + n * C * inner; \
			for (int64_t i = 0; i < inner; i++) \
			{ \
				double		ss = 0; \
				for (int64_t k = c0; k <= c1; k++) \
					ss += (double) xn[k * inner + i] * xn[k * inner + i]; \
				y[(n * C + c) * inner + i] = (T) (xn[c * inner + i] / \
					pow(bias + alpha / (double) size * ss, beta)); \
			} \
		} \
}

LRN_ROWS(lrn_rows_f32, float)
LRN_ROWS(lrn_rows_f64, double)

/*
 * LRN (opsets 1, 13; ONNX Operators.md, LRN): X [N, C, D1, ..., Dk];
 * Y = X / (bias + alpha / size * square_sum) ^ beta, square_sum over the
 * channels max(0, c - floor((size - 1) / 2)) .. min(C - 1, c +
 * ceil((size - 1) / 2)).  size is required and must be positive.  Float
 * or double; errors: another type, rank below 2, size missing or not
 * positive.
 */
static int
op_lrn(ie_node_ctx *ctx)
{
	const ie_tensor *X;
	int64_t		size = ie_attr_int(ctx, "size", 0),
				inner = 1;
	double		alpha = ie_attr_float(ctx, "alpha", 1e-4f),
				beta = ie_attr_float(ctx, "beta", 0.75f),
				bias = ie_attr_float(ctx, "bias", 1.0f);
	ie_tensor  *Y;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	X = ctx->inputs[0];
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "input type %s is not supported (only float, double)",
						   ie_dtype_name(X->dtype));
	if (X->ndim < 2)
		return ie_op_error(ctx, "X must have rank 2 or more [N, C, ...], not %d", X->ndim);
	if (size <= 0)
		return ie_op_error(ctx, "size %lld must be given and positive", (long long) size);
	for (int i = 2; i < X->ndim && ie_tensor_numel(X) > 0; i++)
		inner *= X->dims[i];
	Y = ie_tensor_new(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(X) == 0)
		return 0;
	if (X->dtype == IE_FLOAT)
		lrn_rows_f32(X->data, Y->data, X->dims[0], X->dims[1], inner, size, alpha, beta, bias);
	else
		lrn_rows_f64(X->data, Y->data, X->dims[0], X->dims[1], inner, size, alpha, beta, bias);
	return 0;
}

/*
 * MeanVarianceNormalization's pass over X (T float or double): the key of
 * element i is its index over the kept (not reduced) dims; sum[key] and
 * sq[key] accumulate the values and squared deviations from mean[key]
 * (second pass), or, with out set, write (x - mean) / (std + 1e-9).
 */
#define MVN_PASS(NAME, T) \
static void \
NAME(const T *x, T *out, int ndim, const int64_t *dims, const bool *reduced, \
	 int pass, double *sum, double *sq, const double *mean, const double *den) \
{ \
	int64_t		idx[IE_MAX_DIMS] = {0}, \
				total = 1; \
	for (int d = 0; d < ndim; d++) \
		total *= dims[d]; \
	for (int64_t i = 0; i < total; i++) \
	{ \
		int64_t		key = 0; \
		for (int d = 0; d < ndim; d++) \
			if (!reduced[d]) \
				key = key * dims[d] + idx[d]; \
		if (pass == 0) \
			sum[key] += x[i]; \
		else if (pass == 1) \
			sq[key] += (x[i] - mean[key]) * (x[i] - mean[key]); \
		else \
			out[i] = (T) ((x[i] - mean[key]) / den[key]); \
		for (int d = ndim - 1; d >= 0; d--) \
		{ \
			if (++idx[d] < dims[d]) \
				break; \
			idx[d] = 0; \
		} \
	} \
}

MVN_PASS(mvn_pass_f32, float)
MVN_PASS(mvn_pass_f64, double)

/*
 * MeanVarianceNormalization (opsets 1, 9, 13; ONNX Operators.md and its
 * function body): Y = (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9), the
 * expectations over axes (default [0, 2, 3]; negative from the end).
 * Opset 1 takes across_channels (axes [0, 1, 2, 3] when 1) and
 * normalize_variance (0: Y = X - E[X]) instead.  The variance is the
 * mean squared deviation in double, where the function body's
 * E[X^2] - E[X]^2 may cancel below zero.  Float or double; errors: another
 * type, an axis out of range or repeated.
 */
static int
op_mvn(ie_node_ctx *ctx)
{
	static const int64_t dflt[] = {0, 2, 3},
				across[] = {0, 1, 2, 3};
	const ie_tensor *X;
	const int64_t *axes = dflt;
	int			n_axes = 3;
	bool		reduced[IE_MAX_DIMS] = {false};
	bool		norm_var = true;
	int64_t		n_keep = 1,
				n_red = 1;
	double	   *st;
	ie_tensor  *Y;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	X = ctx->inputs[0];
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "input type %s is not supported (only float, double)",
						   ie_dtype_name(X->dtype));
	if (ctx->opset < 9)
	{
		if (ie_attr_int(ctx, "across_channels", 0))
		{
			axes = across;
			n_axes = 4;
		}
		norm_var = ie_attr_int(ctx, "normalize_variance", 1) != 0;
	}
	else if (ie_attr_find(ctx, "axes") != NULL)
		n_axes = ie_attr_ints(ctx, "axes", &axes);
	for (int i = 0; i < n_axes; i++)
	{
		int64_t		a = axes[i] < 0 ? axes[i] + X->ndim : axes[i];

		if (a < 0 || a >= X->ndim || reduced[a])
			return ie_op_error(ctx, "axis %lld is out of range for rank %d or repeated",
							   (long long) axes[i], X->ndim);
		reduced[a] = true;
	}
	Y = ie_tensor_new(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(X) == 0)
		return 0;
	/* after the empty check: an empty X's other dims may multiply past int64 */
	for (int d = 0; d < X->ndim; d++)
	{
		if (reduced[d])
			n_red *= X->dims[d];
		else
			n_keep *= X->dims[d];
	}
	/* sum (then mean) and squared deviations (then denominator), per key */
	{
		int64_t		sdims[2] = {2, n_keep};

		st = ie_scratch_new(IE_DOUBLE, 2, sdims);
	}
	if (st == NULL)
		return ie_op_error(ctx, "out of memory for the statistics");
	memset(st, 0, sizeof(double) * 2 * n_keep);
	for (int pass = 0; pass < 3; pass++)
	{
		if (X->dtype == IE_FLOAT)
			mvn_pass_f32(X->data, Y->data, X->ndim, X->dims, reduced, pass,
						 st, st + n_keep, st, st + n_keep);
		else
			mvn_pass_f64(X->data, Y->data, X->ndim, X->dims, reduced, pass,
						 st, st + n_keep, st, st + n_keep);
		if (pass == 0)
			for (int64_t k = 0; k < n_keep; k++)
				st[k] /= (double) n_red;
		else if (pass == 1)
			for (int64_t k = 0; k < n_keep; k++)
				st[n_keep + k] = norm_var ? sqrt(st[n_keep + k] / (double) n_red) + 1e-9 : 1.0;
	}
	free(st);
	return 0;
}

const ie_op_def ie_ops_norm[] = {
	{"BatchNormalization", op_batchnorm},
	{"Softmax", op_softmax},
	{"LogSoftmax", op_log_softmax},
	{"LayerNormalization", op_layernorm},
	{"RMSNormalization", op_rmsnorm},
	{"LpNormalization", op_lpnorm},
	{"InstanceNormalization", op_instancenorm},
	{"GroupNormalization", op_groupnorm},
	{"LRN", op_lrn},
	{"MeanVarianceNormalization", op_mvn},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_norm[] = {
	{"BatchNormalization", batchnorm_check_attrs},
	{"LayerNormalization", stash_type_check_attrs},
	{"RMSNormalization", stash_type_check_attrs},
	{"LpNormalization", lpnorm_check_attrs},
	{"GroupNormalization", stash_type_check_attrs},
	{NULL, NULL}
};

/* Softmax of one contiguous float row (op.h): softmax_row_any. */
void
ie_softmax_row(const float *x, float *y, int64_t len)
{
	softmax_row_any(x, y, len, 0);
}

/* Softmax of one contiguous double row (op.h): softmax_blocks_f64. */
void
ie_softmax_row_f64(const double *x, double *y, int64_t len)
{
	softmax_blocks_f64(x, y, 1, len, 1, 0);
}
