/*
 * ops_norm.c
 *	  ONNX normalisation operators: BatchNormalization, Softmax and
 *	  LogSoftmax (float32).
 *
 * Sums run in double: cheap here, and it keeps the results within
 * onnxruntime's rounding.
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <string.h>

#include "worker/engine/op.h"

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
 * Softmax / LogSoftmax over blocks: the input is [outer, len, inner] and
 * each (outer, inner) fibre of len values is normalised; log selects
 * LogSoftmax.  Max-subtracted, sums in double.
 */
static void
softmax_blocks(const float *x, float *y, int64_t outer, int64_t len,
			   int64_t inner, int log_out)
{
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

const ie_op_def ie_ops_norm[] = {
	{"BatchNormalization", op_batchnorm},
	{"Softmax", op_softmax},
	{"LogSoftmax", op_log_softmax},
	{NULL, NULL}
};
