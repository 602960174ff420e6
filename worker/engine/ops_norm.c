/*
 * ops_norm.c
 *	  ONNX normalisation operators: BatchNormalization, Softmax and
 *	  LogSoftmax (float32), LayerNormalization (float32, float64).
 *
 * Sums run in double: cheap here, and it keeps the results within
 * onnxruntime's rounding.
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"

/*
 * The row loops are built with GCC's full vectoriser, as in
 * ops_elementwise.c; sums over a row use NORM_LANES partial sums, combined
 * in a fixed order, which the vectoriser maps onto vector registers.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define NORM_VECTORISE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define NORM_VECTORISE
#endif
#define NORM_LANES 8

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
	if (ie_attr_int(ctx, "spatial", 1) != 1)
		return ie_op_error(ctx, "unsupported spatial=0");
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
	if (training != 0 && training != 1)
		return ie_op_error(ctx, "unsupported training_mode %lld", (long long) training);
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
	if (ctx->n_outputs > 3)
		return ie_op_error(ctx, "unsupported outputs saved_mean/saved_var (opset < 9 training)");

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
 * exp of float four lanes at a time through glibc's vector math library
 * (libmvec, x86-64, glibc 2.22+, at most 4 ulp), the tail padded to a full
 * vector so each element's result does not depend on its position; the C
 * library's expf elsewhere.  As in ops_elementwise.c.
 */
#if defined(__x86_64__) && defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22))
#define NORM_LIBMVEC 1
#include <emmintrin.h>
extern __m128 _ZGVbN4v_expf(__m128);
#endif

/* y[i] = exp(y[i]) for n floats, in place. */
static void
exp_inplace(float *y, int64_t n)
{
#ifdef NORM_LIBMVEC
	int64_t		i = 0;

	for (; i + 4 <= n; i += 4)
		_mm_storeu_ps(y + i, _ZGVbN4v_expf(_mm_loadu_ps(y + i)));
	if (i < n)
	{
		float		buf[4] = {0, 0, 0, 0};

		memcpy(buf, y + i, (size_t) (n - i) * sizeof(float));
		_mm_storeu_ps(buf, _ZGVbN4v_expf(_mm_loadu_ps(buf)));
		memcpy(y + i, buf, (size_t) (n - i) * sizeof(float));
	}
#else
	for (int64_t i = 0; i < n; i++)
		y[i] = expf(y[i]);
#endif
}

/*
 * Softmax / LogSoftmax over blocks: the input is [outer, len, inner] and
 * each (outer, inner) fibre of len values is normalised; log selects
 * LogSoftmax.  Max-subtracted, sums in double.
 */
NORM_VECTORISE static void
softmax_blocks(const float *x, float *y, int64_t outer, int64_t len,
			   int64_t inner, int log_out)
{
	if (inner == 1)
	{
		/* the usual last-axis case: contiguous rows, vector exp */
		for (int64_t o = 0; o < outer; o++)
		{
			const float *xs = x + o * len;
			float	   *ys = y + o * len;
			float		mx = -INFINITY,
						mpart[NORM_LANES];
			double		sum = 0,
						part[NORM_LANES] = {0};
			int64_t		k;

			for (int l = 0; l < NORM_LANES; l++)
				mpart[l] = -INFINITY;
			for (k = 0; k + NORM_LANES <= len; k += NORM_LANES)
				for (int l = 0; l < NORM_LANES; l++)
					mpart[l] = xs[k + l] > mpart[l] ? xs[k + l] : mpart[l];
			for (; k < len; k++)
				mx = xs[k] > mx ? xs[k] : mx;
			for (int l = 0; l < NORM_LANES; l++)
				mx = mpart[l] > mx ? mpart[l] : mx;
			/*
			 * Masked scores (-inf, -FLT_MAX) would send the vector exp
			 * down its slow scalar path for out-of-range inputs: clamp
			 * them to -87 and give them exactly 0 afterwards (their
			 * exponential is below 1.7e-38, next to a sum of at least 1).
			 */
			for (k = 0; k < len; k++)
			{
				float		d = xs[k] - mx;

				ys[k] = d < -87.0f ? -87.0f : d;
			}
			exp_inplace(ys, len);
			for (k = 0; k < len; k++)
				ys[k] = xs[k] - mx < -87.0f ? 0.0f : ys[k];
			for (k = 0; k + NORM_LANES <= len; k += NORM_LANES)
				for (int l = 0; l < NORM_LANES; l++)
					part[l] += ys[k + l];
			for (; k < len; k++)
				sum += ys[k];
			for (int l = 0; l < NORM_LANES; l++)
				sum += part[l];
			if (log_out)
			{
				float		ls = (float) log(sum);

				for (int64_t k = 0; k < len; k++)
					ys[k] = xs[k] - mx - ls;
			}
			else
			{
				float		inv = (float) (1.0 / sum);

				for (int64_t k = 0; k < len; k++)
					ys[k] *= inv;
			}
		}
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
 * Softmax and LogSoftmax.  Opsets before 13 coerce the input to 2-D at
 * axis (default 1): [prod(dims[:axis]), prod(dims[axis:])], normalising
 * each row; opset 13 normalises along the one axis (default -1).
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
	if (X->dtype != IE_FLOAT)
		return ie_op_error(ctx, "unsupported input type %s (only float)",
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
	Y = ie_tensor_new(IE_FLOAT, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (len > 0)
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
 * LayerNormalization's rows: each of the `outer` rows of D values of x
 * (type T) is normalised with its own mean and population variance,
 * both accumulated in double (mean first, then the squared deviations, so
 * no cancellation; NORM_LANES interleaved partial sums in a fixed order,
 * so the loops vectorise), and scaled by sc[] plus bi[] (NULL: no bias).  mean_o
 * and inv_o (float, may be NULL) receive the statistics.
 */
#define LN_ROWS(NAME, T) \
NORM_VECTORISE static void \
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
	int64_t		axis = ie_attr_int(ctx, "axis", -1);
	float		eps = ie_attr_float(ctx, "epsilon", 1e-5f);
	int64_t		stash = ie_attr_int(ctx, "stash_type", 1);
	int64_t		outer = 1,
				D = 1,
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
	if (stash != 1)
		return ie_op_error(ctx, "unsupported stash_type %lld (only 1, float)",
						   (long long) stash);
	if (axis < 0)
		axis += X->ndim;
	if (axis < 0 || axis >= X->ndim)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ie_attr_int(ctx, "axis", -1), X->ndim);
	for (int i = 0; i < X->ndim; i++)
	{
		if (i < axis)
			outer *= X->dims[i];
		else
			D *= X->dims[i];
		sdims[i] = i < axis ? X->dims[i] : 1;
	}
	Y = ie_tensor_new(X->dtype, X->ndim, X->dims);
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
	sc = malloc(sizeof(double) * D);
	bi = B != NULL ? malloc(sizeof(double) * D) : NULL;
	if (sc == NULL || (B != NULL && bi == NULL))
	{
		free(sc);
		free(bi);
		return ie_op_error(ctx, "out of memory");
	}
	if (ln_param(ctx, S, "Scale", X->ndim - (int) axis, X->dims + axis, D, sc) != 0 ||
		(B != NULL && ln_param(ctx, B, "B", X->ndim - (int) axis, X->dims + axis, D, bi) != 0))
		goto fail;
	if (X->dtype == IE_FLOAT)
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

const ie_op_def ie_ops_norm[] = {
	{"BatchNormalization", op_batchnorm},
	{"Softmax", op_softmax},
	{"LogSoftmax", op_log_softmax},
	{"LayerNormalization", op_layernorm},
	{NULL, NULL}
};
