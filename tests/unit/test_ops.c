/*
 * test_ops.c
 *	  Unit tests of the compute operators (ops_conv.c, ops_matmul.c,
 *	  ops_norm.c, ops_pool.c, ops_resize.c, ops_reduce.c) and of the
 *	  operators BERT-class text models add (ops_gather.c, LayerNormalization,
 *	  Where, comparisons, Expand, Tile, Range, ConstantOfShape, ...),
 *	  Einsum (ops_einsum.c), and the operator changes of opsets 18 to 28
 *	  (Pad's axes and wrap, Split's num_outputs, ScatterND's max and min,
 *	  bool ReduceMax/ReduceMin, float Mod with fmod 0, double MatMul,
 *	  RMSNormalization, RotaryEmbedding (ops_rotary.c), Swish), the
 *	  unary math, bitwise, depth/space, LpNormalization and LpPool
 *	  operators, those of ops_misc.c (TopK, CumSum, CumProd, Trilu, OneHot,
 *	  NonZero, Dropout, Hardmax, EyeLike, Compress, ReverseSequence) with
 *	  ScatterElements, the normalisations of vision models
 *	  (InstanceNormalization, GroupNormalization, LRN,
 *	  MeanVarianceNormalization), ops_vision.c (NonMaxSuppression,
 *	  GridSample, AffineGrid, RoiAlign) and the recurrent operators of
 *	  ops_rnn.c (RNN, GRU, LSTM).
 *
 * Two kinds of checks: hand-built node contexts compared against naive
 * reference loops written here (depthwise, grouped, strided, dilated,
 * padded convolutions, banded im2col, MatMul broadcasting, Softmax opset
 * semantics, ...), and every ONNX backend node test of these operators
 * (/usr/include/onnx/backend/test/data/node, or $ONNX_NODE_TESTS) run
 * through the operator alone, outputs compared with the stored ones.
 * Node tests listed in expect_error[] must fail with an error message
 * (an unsupported type or attribute), never with a wrong answer.
 *
 * Prints "test_ops: N passed, M failed"; exits non-zero on any failure.
 */
#include <dirent.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "tests/unit/testutil.h"
#include "worker/engine/op.h"
#include "worker/engine/qgemm_vnni.h"

/* Node tests whose operator must refuse them with an error. */
static const char *const expect_error[] = {
	/* Dropout runs inference only: training_mode true is refused */
	"test_training_dropout", "test_training_dropout_default",
	"test_training_dropout_default_mask", "test_training_dropout_mask",
	"test_training_dropout_zero_ratio", "test_training_dropout_zero_ratio_mask",
	NULL
};

/* Deterministic pseudo-random floats in [-1, 1). */
static unsigned int rng_state = 12345;

static float
frand(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return ((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* A float tensor of the given shape filled with frand(). */
static ie_tensor *
rand_tensor(int ndim, const int64_t *dims)
{
	ie_tensor  *t = ie_tensor_new(IE_FLOAT, ndim, dims);
	float	   *d = t->data;

	for (int64_t i = 0; i < ie_tensor_numel(t); i++)
		d[i] = frand();
	return t;
}

/* Attribute constructors. */
static ie_attr
attr_int(const char *name, int64_t v)
{
	ie_attr		a = {.name = name, .type = IE_ATTR_INT, .i = v};

	return a;
}

static ie_attr
attr_ints(const char *name, int n, const int64_t *v)
{
	ie_attr		a = {.name = name, .type = IE_ATTR_INTS, .n_ints = n, .ints = v};

	return a;
}

static ie_attr
attr_str(const char *name, const char *s)
{
	ie_attr		a = {.name = name, .type = IE_ATTR_STRING, .s = s, .s_len = strlen(s)};

	return a;
}

/*
 * Runs op_type on inputs with attrs at opset with n_threads threads;
 * returns the operator's return code, outputs in outs (n_out of them),
 * message in err.
 */
static int
run_op_threads(const char *op_type, int opset, int n_in, const ie_tensor *const *in,
			   int n_attr, const ie_attr *attrs, int n_out, ie_tensor **outs,
			   char *err, size_t errlen, int n_threads)
{
	ie_op_fn	fn = ie_op_lookup(op_type);
	ie_node_ctx ctx = {
		.op_type = op_type, .node_name = "t", .opset = opset,
		.n_inputs = n_in, .inputs = in, .n_outputs = n_out, .outputs = outs,
		.n_attrs = n_attr, .attrs = attrs, .n_threads = n_threads,
		.err = err, .errlen = errlen,
	};

	err[0] = '\0';
	for (int i = 0; i < n_out; i++)
		outs[i] = NULL;
	if (fn == NULL)
	{
		snprintf(err, errlen, "no operator %s", op_type);
		return -1;
	}
	return fn(&ctx);
}

/* run_op_threads on one thread. */
static int
run_op(const char *op_type, int opset, int n_in, const ie_tensor *const *in,
	   int n_attr, const ie_attr *attrs, int n_out, ie_tensor **outs,
	   char *err, size_t errlen)
{
	return run_op_threads(op_type, opset, n_in, in, n_attr, attrs, n_out, outs,
						  err, errlen, 1);
}

/*
 * An empty tensor of shape dims (ndim) whose other dims ie_tensor_new
 * refuses (their bytes past what it counts; test_empty_span): made with 1
 * in place of each nonzero dim, then given dims.  So operators' own guards
 * against such shapes are still checked, should one reach them another way.
 */
static ie_tensor *
unchecked_empty(ie_dtype dtype, int ndim, const int64_t *dims)
{
	int64_t		ones[IE_MAX_DIMS];
	ie_tensor  *t;

	for (int d = 0; d < ndim; d++)
		ones[d] = dims[d] == 0 ? 0 : 1;
	t = ie_tensor_new(dtype, ndim, ones);
	if (t != NULL)
		memcpy(t->dims, dims, sizeof(int64_t) * ndim);
	return t;
}

/* Max |a-b| / (1e-5 + 1e-4 |b|) style check: returns 1 when all close. */
static int
close_to(const float *a, const float *b, int64_t n, double rtol, double atol,
		 double *worst)
{
	int			ok = 1;

	*worst = 0;
	for (int64_t i = 0; i < n; i++)
	{
		double		d = fabs((double) a[i] - b[i]);

		if (isnan(a[i]) && isnan(b[i]))
			continue;
		if (!(d <= atol + rtol * fabs(b[i])))
			ok = 0;
		if (d > *worst || isnan(d))
			*worst = d;
	}
	return ok;
}

/*
 * Naive direct convolution (2-D, NCHW) as the reference: every output is
 * a double sum over its window, zero outside the input.
 */
static void
ref_conv2d(const ie_tensor *X, const ie_tensor *W, const float *B, int64_t group,
		   const int64_t *stride, const int64_t *pads, const int64_t *dil,
		   ie_tensor *Y)
{
	int64_t		N = X->dims[0],
				C = X->dims[1],
				H = X->dims[2],
				Wd = X->dims[3];
	int64_t		M = W->dims[0],
				cg = W->dims[1],
				kh = W->dims[2],
				kw = W->dims[3];
	int64_t		OH = Y->dims[2],
				OW = Y->dims[3];
	const float *x = X->data,
			   *w = W->data;
	float	   *y = Y->data;
	int64_t		mg = M / group;

	for (int64_t n = 0; n < N; n++)
		for (int64_t m = 0; m < M; m++)
			for (int64_t oy = 0; oy < OH; oy++)
				for (int64_t ox = 0; ox < OW; ox++)
				{
					double		s = B ? B[m] : 0;
					int64_t		g = m / mg;

					for (int64_t c = 0; c < cg; c++)
						for (int64_t ky = 0; ky < kh; ky++)
							for (int64_t kx = 0; kx < kw; kx++)
							{
								int64_t		iy = oy * stride[0] - pads[0] + ky * dil[0];
								int64_t		ix = ox * stride[1] - pads[1] + kx * dil[1];

								if (iy < 0 || iy >= H || ix < 0 || ix >= Wd)
									continue;
								s += (double) x[((n * C + g * cg + c) * H + iy) * Wd + ix] *
									w[((m * cg + c) * kh + ky) * kw + kx];
							}
					y[((n * M + m) * OH + oy) * OW + ox] = (float) s;
				}
	(void) C;
}

/* One Conv case against the reference. */
static void
conv_case(const char *label, int64_t N, int64_t C, int64_t H, int64_t W,
		  int64_t M, int64_t kh, int64_t kw, int64_t group, int64_t sy,
		  int64_t sx, int64_t py, int64_t px, int64_t dy, int64_t dx, int bias)
{
	int64_t		xd[4] = {N, C, H, W};
	int64_t		wd[4] = {M, C / group, kh, kw};
	int64_t		bd[1] = {M};
	int64_t		strides[2] = {sy, sx};
	int64_t		pads[4] = {py, px, py, px};
	int64_t		dil[2] = {dy, dx};
	ie_tensor  *X = rand_tensor(4, xd);
	ie_tensor  *Wt = rand_tensor(4, wd);
	ie_tensor  *B = bias ? rand_tensor(1, bd) : NULL;
	const ie_tensor *in[3] = {X, Wt, B};
	ie_attr		attrs[4] = {
		attr_ints("strides", 2, strides), attr_ints("pads", 4, pads),
		attr_ints("dilations", 2, dil), attr_int("group", group)
	};
	ie_tensor  *out[1];
	char		err[256];
	int			rc = run_op("Conv", 11, bias ? 3 : 2, in, 4, attrs, 1, out, err, sizeof(err));

	CHECK(rc == 0, "conv %s: %s", label, err);
	if (rc == 0)
	{
		ie_tensor  *R = ie_tensor_new(IE_FLOAT, 4, out[0]->dims);
		double		worst;
		int64_t		oh = (H + 2 * py - dy * (kh - 1) - 1) / sy + 1;
		int64_t		ow = (W + 2 * px - dx * (kw - 1) - 1) / sx + 1;

		CHECK(out[0]->dims[1] == M && out[0]->dims[2] == oh && out[0]->dims[3] == ow,
			  "conv %s: output shape", label);
		ref_conv2d(X, Wt, B ? B->data : NULL, group, strides, pads, dil, R);
		CHECK(close_to(out[0]->data, R->data, ie_tensor_numel(R), 1e-4, 1e-4, &worst),
			  "conv %s: max abs diff %g", label, worst);
		ie_tensor_destroy(&R);
	}
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&Wt);
	ie_tensor_destroy(&B);
}

/*
 * Conv over a batch of N = 1..7 images (square stride s, pad p, bias):
 * each image's output inside the batch equals that image run alone within
 * 1e-5 relative, and the batch equals the naive reference.  Covers the
 * path that packs small images side by side into one sgemm as well as the
 * per-image ones.
 */
static void
conv_batch_case(const char *label, int64_t C, int64_t H, int64_t W, int64_t M,
				int64_t k, int64_t group, int64_t s, int64_t p)
{
	for (int64_t N = 1; N <= 7; N++)
	{
		int64_t		xd[4] = {N, C, H, W};
		int64_t		wd[4] = {M, C / group, k, k};
		int64_t		bd[1] = {M};
		int64_t		strides[2] = {s, s};
		int64_t		pads[4] = {p, p, p, p};
		int64_t		dil[2] = {1, 1};
		ie_tensor  *X = rand_tensor(4, xd);
		ie_tensor  *Wt = rand_tensor(4, wd);
		ie_tensor  *B = rand_tensor(1, bd);
		const ie_tensor *in[3] = {X, Wt, B};
		ie_attr		attrs[4] = {
			attr_ints("strides", 2, strides), attr_ints("pads", 4, pads),
			attr_ints("dilations", 2, dil), attr_int("group", group)
		};
		ie_tensor  *out[1];
		char		err[256];
		int			rc = run_op("Conv", 11, 3, in, 4, attrs, 1, out, err, sizeof(err));

		CHECK(rc == 0, "conv batch %s N=%lld: %s", label, (long long) N, err);
		if (rc == 0)
		{
			ie_tensor  *R = ie_tensor_new(IE_FLOAT, 4, out[0]->dims);
			int64_t		iimg = C * H * W;
			int64_t		oimg = ie_tensor_numel(out[0]) / N;
			double		worst;
			int			alone_ok = 1;
			double		alone_worst = 0;

			ref_conv2d(X, Wt, B->data, group, strides, pads, dil, R);
			CHECK(close_to(out[0]->data, R->data, ie_tensor_numel(R), 1e-4, 1e-4, &worst),
				  "conv batch %s N=%lld: against the reference, max abs diff %g",
				  label, (long long) N, worst);
			for (int64_t n = 0; n < N; n++)
			{
				int64_t		d1[4] = {1, C, H, W};
				ie_tensor  *X1 = ie_tensor_new(IE_FLOAT, 4, d1);
				const ie_tensor *in1[3] = {X1, Wt, B};
				ie_tensor  *o1[1];

				memcpy(X1->data, (float *) X->data + n * iimg, iimg * sizeof(float));
				if (run_op("Conv", 11, 3, in1, 4, attrs, 1, o1, err, sizeof(err)) != 0 ||
					!close_to((float *) out[0]->data + n * oimg, o1[0]->data, oimg,
							  1e-5, 1e-6, &worst))
					alone_ok = 0;
				if (worst > alone_worst)
					alone_worst = worst;
				ie_tensor_destroy(&o1[0]);
				ie_tensor_destroy(&X1);
			}
			CHECK(alone_ok, "conv batch %s N=%lld: each image equals it alone (max abs diff %g)",
				  label, (long long) N, alone_worst);
			ie_tensor_destroy(&R);
		}
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&Wt);
		ie_tensor_destroy(&B);
	}
}

/* Conv: every code path (pointwise, im2col banded, depthwise, grouped). */
static void
test_conv(void)
{
	conv_case("1x1", 2, 16, 9, 11, 24, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1);
	conv_case("3x3 pad", 1, 8, 13, 17, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
	conv_case("3x3 stride2", 2, 5, 15, 16, 7, 3, 3, 1, 2, 2, 1, 1, 1, 1, 0);
	conv_case("1x3 stride 2,1", 1, 6, 8, 20, 4, 1, 3, 1, 2, 1, 0, 1, 1, 1, 1);
	conv_case("5x5 dilated", 1, 3, 20, 21, 4, 5, 5, 1, 1, 2, 2, 2, 2, 3, 1);
	conv_case("1x1 stride2", 1, 8, 10, 10, 8, 1, 1, 1, 2, 2, 0, 0, 1, 1, 1);
	conv_case("depthwise 3x3", 2, 16, 12, 14, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1);
	conv_case("depthwise 5x5 s2", 1, 8, 17, 19, 8, 5, 5, 8, 2, 2, 2, 2, 1, 1, 1);
	conv_case("depthwise s3 dil2", 1, 4, 11, 23, 4, 3, 3, 4, 2, 3, 1, 2, 1, 2, 1);
	conv_case("depthwise 1-wide", 1, 3, 5, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1);
	conv_case("depthwise mult 2", 1, 4, 9, 9, 8, 3, 3, 4, 2, 1, 1, 1, 1, 2, 0);
	conv_case("grouped", 1, 12, 10, 11, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1);
	conv_case("grouped 1x1", 1, 12, 10, 11, 6, 1, 1, 3, 1, 1, 0, 0, 1, 1, 1);
	/* wide enough that im2col runs in several bands */
	conv_case("banded", 1, 64, 40, 300, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);

	/* batches: 1x1 spatial (SE blocks), small and large images */
	conv_batch_case("1x1 on 1x1", 24, 1, 1, 10, 1, 1, 1, 0);
	conv_batch_case("1x1 on 3x12", 16, 3, 12, 40, 1, 1, 1, 0);
	conv_batch_case("1x1 grouped on 2x5", 12, 2, 5, 6, 1, 3, 1, 0);
	conv_batch_case("3x3 on 5x7", 8, 5, 7, 12, 3, 1, 1, 1);
	conv_batch_case("3x3 s2 on 6x9", 6, 6, 9, 5, 3, 1, 2, 1);
	conv_batch_case("1x1 on 12x40", 8, 12, 40, 16, 1, 1, 1, 0);
	conv_batch_case("3x3 on 12x40", 4, 12, 40, 6, 3, 1, 1, 1);
	conv_batch_case("depthwise 5x5 on 3x23", 8, 3, 23, 8, 5, 8, 1, 2);
	conv_batch_case("depthwise 3x3 on 2x13", 5, 2, 13, 5, 3, 5, 1, 1);
	conv_batch_case("depthwise 5x5 on 4x96", 4, 4, 96, 4, 5, 4, 1, 2);

	/* errors name what is wrong */
	{
		int64_t		xd[4] = {1, 4, 5, 5},
					wd[4] = {2, 3, 3, 3};
		ie_tensor  *X = rand_tensor(4, xd),
				   *W = rand_tensor(4, wd);
		const ie_tensor *in[2] = {X, W};
		ie_attr		a[1] = {attr_str("auto_pad", "BOGUS")};
		ie_tensor  *out[1];
		char		err[256];
		int			rc;

		rc = run_op("Conv", 11, 2, in, 0, NULL, 1, out, err, sizeof(err));
		CHECK(rc == -1 && strstr(err, "input channels") != NULL, "channel mismatch: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&W);
		wd[1] = 4;
		W = rand_tensor(4, wd);
		in[1] = W;
		rc = run_op("Conv", 11, 2, in, 1, a, 1, out, err, sizeof(err));
		CHECK(rc == -1 && strstr(err, "auto_pad \"BOGUS\"") != NULL, "auto_pad: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&W);
	}
}

/* MatMul with batch broadcasting against a naive product. */
/*
 * ie_op_gemm_fits: a product's extents past INT_MAX (what OpenBLAS takes)
 * are refused with the product's shape; up to INT_MAX pass.  (A product
 * that large needs an 8 GiB operand, so the operators' calls are not run
 * here.)
 */
static void
test_gemm_fits(void)
{
	char		err[256] = "";
	ie_node_ctx ctx = {.op_type = "MatMul", .node_name = "t", .opset = 13,
	.err = err, .errlen = sizeof(err)};
	int64_t		big = (int64_t) INT_MAX + 1;

	CHECK(ie_op_gemm_fits(&ctx, INT_MAX, INT_MAX, INT_MAX) == 0 && err[0] == '\0',
		  "gemm fits: INT_MAX extents pass (%s)", err);
	CHECK(ie_op_gemm_fits(&ctx, 1, big, 1) == -1 &&
		  strcmp(err, "MatMul node 't': a matrix product of 1 x 2147483648 x 1 is over the "
				 "engine's limit (2147483647 rows or columns)") == 0 &&
		  ctx.err_kind == IE_ERR_NOT_SUPPORTED,
		  "gemm fits: K past INT_MAX refused: %s", err);
	CHECK(ie_op_gemm_fits(&ctx, big, 1, 1) == -1 && strncmp(err, "MatMul node 't': a matrix product of 2147483648 x 1 x 1 ", 54) == 0,
		  "gemm fits: M past INT_MAX refused: %s", err);
	CHECK(ie_op_gemm_fits(&ctx, 1, 1, big) == -1 && strstr(err, " x 2147483648 is over") != NULL,
		  "gemm fits: N past INT_MAX refused: %s", err);
}

static void
test_matmul(void)
{
	int64_t		ad[4] = {2, 1, 3, 5},
				bd[3] = {4, 5, 6};
	ie_tensor  *A = rand_tensor(4, ad),
			   *B = rand_tensor(3, bd);
	const ie_tensor *in[2] = {A, B};
	ie_tensor  *out[1];
	char		err[256];
	int			rc = run_op("MatMul", 13, 2, in, 0, NULL, 1, out, err, sizeof(err));
	int			bad = 0;

	CHECK(rc == 0, "matmul broadcast: %s", err);
	if (rc == 0)
	{
		const float *a = A->data,
				   *b = B->data,
				   *y = out[0]->data;

		CHECK(out[0]->ndim == 4 && out[0]->dims[0] == 2 && out[0]->dims[1] == 4 &&
			  out[0]->dims[2] == 3 && out[0]->dims[3] == 6, "matmul shape");
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 4; j++)
				for (int m = 0; m < 3; m++)
					for (int n = 0; n < 6; n++)
					{
						double		s = 0;

						for (int k = 0; k < 5; k++)
							s += a[(i * 3 + m) * 5 + k] * b[(j * 5 + k) * 6 + n];
						if (fabs(s - y[((i * 4 + j) * 3 + m) * 6 + n]) > 1e-5)
							bad++;
					}
		CHECK(bad == 0, "matmul broadcast: %d wrong values", bad);
	}
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);

	/* 1-D times 2-D drops the added axis */
	{
		int64_t		vd[1] = {3},
					md[2] = {3, 2};
		float		v[3] = {1, 2, 3},
					m[6] = {1, 2, 3, 4, 5, 6};
		ie_tensor  *V = tu_float_tensor(1, vd, v),
				   *Mt = tu_float_tensor(2, md, m);
		const ie_tensor *in2[2] = {V, Mt};

		rc = run_op("MatMul", 13, 2, in2, 0, NULL, 1, out, err, sizeof(err));
		CHECK(rc == 0 && out[0]->ndim == 1 && out[0]->dims[0] == 2 &&
			  ((float *) out[0]->data)[0] == 22.0f && ((float *) out[0]->data)[1] == 28.0f,
			  "matmul 1-D x 2-D: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&V);
		ie_tensor_destroy(&Mt);
	}
}

/* Softmax: opset 11 coerces to 2-D at axis, opset 13 uses one axis. */
static void
test_softmax(void)
{
	int64_t		d[3] = {1, 2, 2};
	float		v[4] = {0, 1, 2, 3};
	ie_tensor  *X = tu_float_tensor(3, d, v);
	const ie_tensor *in[1] = {X};
	ie_attr		a[1] = {attr_int("axis", 1)};
	ie_tensor  *out[1];
	char		err[256];
	float	   *y;
	double		e = exp(1.0),
				s4 = 1 + e + e * e + e * e * e;

	CHECK(run_op("Softmax", 11, 1, in, 1, a, 1, out, err, sizeof(err)) == 0, "%s", err);
	y = out[0]->data;
	CHECK(fabs(y[0] - 1 / s4) < 1e-6 && fabs(y[3] - e * e * e / s4) < 1e-6,
		  "softmax opset 11 over 4 values: %g %g", y[0], y[3]);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Softmax", 13, 1, in, 1, a, 1, out, err, sizeof(err)) == 0, "%s", err);
	y = out[0]->data;
	CHECK(fabs(y[0] - 1 / (1 + e * e)) < 1e-6 && fabs(y[1] - 1 / (1 + e * e)) < 1e-6,
		  "softmax opset 13 over axis 1: %g %g", y[0], y[1]);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
}

/* Resize as the detection model uses it: 2x, asymmetric, nearest floor. */
static void
test_resize_det(void)
{
	int64_t		d[4] = {1, 1, 2, 3},
				sd[1] = {4};
	float		v[6] = {1, 2, 3, 4, 5, 6},
				s[4] = {1, 1, 2, 2};
	ie_tensor  *X = tu_float_tensor(4, d, v),
			   *S = tu_float_tensor(1, sd, s);
	const ie_tensor *in[3] = {X, NULL, S};
	ie_attr		a[3] = {
		attr_str("coordinate_transformation_mode", "asymmetric"),
		attr_str("mode", "nearest"), attr_str("nearest_mode", "floor")
	};
	ie_tensor  *out[1];
	char		err[256];
	static const float want[24] = {
		1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6
	};

	CHECK(run_op("Resize", 11, 3, in, 3, a, 1, out, err, sizeof(err)) == 0, "%s", err);
	CHECK(out[0] && out[0]->dims[2] == 4 && out[0]->dims[3] == 6 &&
		  memcmp(out[0]->data, want, sizeof(want)) == 0, "resize 2x nearest floor");
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
}

/* Whether t holds the n values want, each within 1e-5 relative. */
static int
values_are(const ie_tensor *t, const float *want, int64_t n)
{
	double		worst;

	return t != NULL && ie_tensor_numel(t) == n &&
		close_to(t->data, want, n, 1e-5, 1e-6, &worst);
}

/*
 * Runs Resize-19 on the 1-D X (n values) to `size` values by sizes, with
 * the given attributes; returns the output (NULL when it fails, err says).
 */
static ie_tensor *
resize_1d(const float *x, int64_t n, int64_t size, int n_attr, const ie_attr *a,
		  char *err, size_t errlen)
{
	int64_t		one = 1;
	ie_tensor  *X = tu_float_tensor(1, &n, x),
			   *S = ie_tensor_new(IE_INT64, 1, &one);
	const ie_tensor *in[4] = {X, NULL, NULL, S};
	ie_tensor  *out[1];

	((int64_t *) S->data)[0] = size;
	if (run_op("Resize", 19, 4, in, n_attr, a, 1, out, err, errlen) != 0)
		ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
	return out[0];
}

/*
 * Resize-18's antialias: 8 -> 3 values (scale 3/8), linear and cubic, with
 * and without exclude_outside, the values of the ONNX reference
 * (onnx/reference/ops/op_resize.py) in float64; the linear one by hand:
 * x_original 0.8333, taps -1..3 (edge-replicated) weighted 1 - |3/8 (j -
 * 0.8333)|, i.e. 0.3125, 0.6875, 0.9375, 0.5625, 0.1875 over their sum.
 * Upsampling, antialias changes nothing; nearest ignores it; two axes at
 * once resize X[i][j] = a[i] + 10 a[j] to Y[i][j] = y[i] + 10 y[j].
 */
static void
test_resize_antialias(void)
{
	static const float x[8] = {0, 1, 4, 9, 16, 25, 36, 49};
	static const float want[4][3] = {
		{1.81395349f, 13.45238095f, 37.13953488f},	/* linear */
		{2.05263158f, 13.45238095f, 35.57894737f},	/* linear, exclude_outside */
		{0.65592627f, 12.05078644f, 38.62311052f},	/* cubic */
		{0.70230895f, 12.50459526f, 37.8893269f},	/* cubic, exclude_outside */
	};
	char		err[256];

	for (int c = 0; c < 4; c++)
	{
		ie_attr		a[3] = {
			attr_str("mode", c < 2 ? "linear" : "cubic"), attr_int("antialias", 1),
			attr_int("exclude_outside", c % 2)
		};
		ie_tensor  *y = resize_1d(x, 8, 3, 3, a, err, sizeof(err));

		CHECK(values_are(y, want[c], 3), "resize antialias %s%s 8 -> 3: %s %g %g %g",
			  c < 2 ? "linear" : "cubic", c % 2 ? " exclude_outside" : "", err,
			  y ? ((float *) y->data)[0] : -1, y ? ((float *) y->data)[1] : -1,
			  y ? ((float *) y->data)[2] : -1);
		ie_tensor_destroy(&y);
	}
	/* 8 -> 19 cubic and 8 -> 3 nearest: the same bits with and without */
	for (int c = 0; c < 2; c++)
	{
		ie_attr		a[2] = {attr_str("mode", c == 0 ? "cubic" : "nearest"),
		attr_int("antialias", 1)};
		ie_tensor  *y0 = resize_1d(x, 8, c == 0 ? 19 : 3, 1, a, err, sizeof(err)),
				   *y1 = resize_1d(x, 8, c == 0 ? 19 : 3, 2, a, err, sizeof(err));

		CHECK(y0 && y1 && ie_tensor_numel(y0) == ie_tensor_numel(y1) &&
			  memcmp(y0->data, y1->data, sizeof(float) * ie_tensor_numel(y0)) == 0,
			  "resize antialias changes nothing %s: %s",
			  c == 0 ? "upsampling" : "for nearest", err);
		ie_tensor_destroy(&y0);
		ie_tensor_destroy(&y1);
	}
	{
		int64_t		d[4] = {1, 1, 8, 8},
					sd[1] = {4};
		float		v[64],
					s[4] = {1, 1, 0.375f, 0.375f},
					w[9];
		ie_tensor  *X,
				   *S = tu_float_tensor(1, sd, s);
		ie_attr		a[2] = {attr_str("mode", "linear"), attr_int("antialias", 1)};
		ie_tensor  *out[1];

		for (int i = 0; i < 64; i++)
			v[i] = x[i / 8] + 10 * x[i % 8];
		for (int i = 0; i < 9; i++)
			w[i] = want[0][i / 3] + 10 * want[0][i % 3];
		X = tu_float_tensor(4, d, v);
		CHECK(run_op("Resize", 18, 3, (const ie_tensor *[]) {X, NULL, S}, 2, a, 1, out,
					 err, sizeof(err)) == 0 &&
			  out[0]->dims[2] == 3 && out[0]->dims[3] == 3 && values_are(out[0], w, 9),
			  "resize antialias of two axes: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&S);
	}
}

/*
 * Resize-19's half_pixel_symmetric: the offset in / 2 (1 - out / (in *
 * scale)) comes from the output's length over in * scale (the node tests'
 * [1, 2, 3, 4] by 0.6 and [0, 1, 4, 9, 16] by 1.7, the reference's values).
 */
static void
test_resize_half_pixel_symmetric(void)
{
	static const float x[5] = {0, 1, 4, 9, 16};
	static const float want_down[2] = {1.6666667f, 3.3333333f};
	static const float want_up[8] = {
		0.0f, 0.52941181f, 1.35294125f, 3.11764708f, 5.47058819f, 8.41176458f,
		12.29411736f, 16.0f
	};
	ie_attr		a[2] = {
		attr_str("mode", "linear"),
		attr_str("coordinate_transformation_mode", "half_pixel_symmetric")
	};
	char		err[256];

	for (int c = 0; c < 2; c++)
	{
		int64_t		n = c == 0 ? 4 : 5,
					sd[1] = {1};
		float		s[1] = {c == 0 ? 0.6f : 1.7f};
		float		xv[5] = {1, 2, 3, 4};
		ie_tensor  *X = tu_float_tensor(1, &n, c == 0 ? xv : x),
				   *S = tu_float_tensor(1, sd, s);
		ie_tensor  *out[1];

		CHECK(run_op("Resize", 19, 3, (const ie_tensor *[]) {X, NULL, S}, 2, a, 1, out,
					 err, sizeof(err)) == 0 &&
			  values_are(out[0], c == 0 ? want_down : want_up, c == 0 ? 2 : 8),
			  "resize half_pixel_symmetric by %g: %s %g", s[0], err,
			  out[0] && ie_tensor_numel(out[0]) > 1 ? ((float *) out[0]->data)[1] : -1);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&S);
	}
}

/*
 * keep_aspect_ratio_policy with align_corners: the reference divides by
 * in * the kept scale less 1, not by the rounded size less 1 (onnxruntime
 * does): X [9, 30] holding its row index, sizes [20, 11] "not_larger" keep
 * 11 / 30, so 3 rows of o * 8 / 2.3.
 */
static void
test_resize_keep_aspect_align_corners(void)
{
	int64_t		d[2] = {9, 30},
				sd[1] = {2},
				sz[2] = {20, 11};
	float		v[270];
	static const float want[3] = {0.0f, 3.47826087f, 6.95652174f};
	ie_tensor  *X,
			   *S = ie_tensor_new(IE_INT64, 1, sd);
	ie_attr		a[3] = {
		attr_str("mode", "linear"),
		attr_str("coordinate_transformation_mode", "align_corners"),
		attr_str("keep_aspect_ratio_policy", "not_larger")
	};
	ie_tensor  *out[1];
	char		err[256];

	for (int i = 0; i < 270; i++)
		v[i] = (float) (i / 30);
	X = tu_float_tensor(2, d, v);
	memcpy(S->data, sz, sizeof(sz));
	CHECK(run_op("Resize", 18, 4, (const ie_tensor *[]) {X, NULL, NULL, S}, 3, a, 1, out,
				 err, sizeof(err)) == 0 &&
		  out[0]->dims[0] == 3 && out[0]->dims[1] == 11 &&
		  fabsf(((float *) out[0]->data)[11] - want[1]) < 1e-5f &&
		  fabsf(((float *) out[0]->data)[32] - want[2]) < 1e-5f,
		  "resize not_larger align_corners: %s %g", err,
		  out[0] && ie_tensor_numel(out[0]) > 11 ? ((float *) out[0]->data)[11] : -1);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
}

/* Operators with the attribute values the recognition model uses. */
static void
test_rec_shapes(void)
{
	char		err[256];
	ie_tensor  *out[1];

	/* AveragePool 3x2 stride 3x2, count_include_pad=0 */
	{
		int64_t		d[4] = {1, 1, 3, 4};
		float		v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
		int64_t		k[2] = {3, 2},
					st[2] = {3, 2},
					pads[4] = {0, 0, 0, 0};
		ie_tensor  *X = tu_float_tensor(4, d, v);
		const ie_tensor *in[1] = {X};
		ie_attr		a[4] = {
			attr_ints("kernel_shape", 2, k), attr_ints("strides", 2, st),
			attr_ints("pads", 4, pads), attr_int("count_include_pad", 0)
		};
		float	   *y;

		CHECK(run_op("AveragePool", 9, 1, in, 4, a, 1, out, err, sizeof(err)) == 0, "%s", err);
		y = out[0] ? out[0]->data : NULL;
		CHECK(y && out[0]->dims[2] == 1 && out[0]->dims[3] == 2 &&
			  fabsf(y[0] - 5.5f) < 1e-6f && fabsf(y[1] - 7.5f) < 1e-6f,
			  "averagepool 3x2: %g %g", y ? y[0] : -1, y ? y[1] : -1);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
	}
	/* ReduceMean over axis -1, keepdims default */
	{
		int64_t		d[3] = {1, 2, 3};
		float		v[6] = {1, 2, 6, -1, 0, 4};
		int64_t		ax[1] = {-1};
		ie_tensor  *X = tu_float_tensor(3, d, v);
		const ie_tensor *in[1] = {X};
		ie_attr		a[1] = {attr_ints("axes", 1, ax)};
		float	   *y;

		CHECK(run_op("ReduceMean", 9, 1, in, 1, a, 1, out, err, sizeof(err)) == 0, "%s", err);
		y = out[0] ? out[0]->data : NULL;
		CHECK(y && out[0]->ndim == 3 && out[0]->dims[2] == 1 && y[0] == 3.0f && y[1] == 1.0f,
			  "reducemean axis -1");
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
	}
	/* Gemm with transB and a row bias */
	{
		int64_t		ad[2] = {2, 3},
					bd[2] = {2, 3},
					cd[1] = {2};
		float		av[6] = {1, 2, 3, 4, 5, 6},
					bv[6] = {1, 0, 0, 0, 1, 1},
					cv[2] = {10, 20};
		ie_tensor  *A = tu_float_tensor(2, ad, av),
				   *B = tu_float_tensor(2, bd, bv),
				   *C = tu_float_tensor(1, cd, cv);
		const ie_tensor *in[3] = {A, B, C};
		ie_attr		a[2] = {attr_int("transB", 1), {.name = "alpha", .type = IE_ATTR_FLOAT, .f = 2.0f}};
		float	   *y;

		CHECK(run_op("Gemm", 11, 3, in, 2, a, 1, out, err, sizeof(err)) == 0, "%s", err);
		y = out[0] ? out[0]->data : NULL;
		/* A x B^T = [[1, 5], [4, 11]], times 2, plus [10, 20] */
		CHECK(y && y[0] == 12.0f && y[1] == 30.0f && y[2] == 18.0f && y[3] == 42.0f,
			  "gemm transB alpha bias");
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
		ie_tensor_destroy(&C);
	}
}

/* Unsupported attribute values are errors that name them. */
static void
test_errors(void)
{
	char		err[256];
	ie_tensor  *out[2];
	int64_t		d[4] = {1, 1, 4, 4},
				sd[1] = {4};
	float		s[4] = {1, 1, 2, 2};
	ie_tensor  *X = rand_tensor(4, d),
			   *S = tu_float_tensor(1, sd, s);
	const ie_tensor *rin[3] = {X, NULL, S};
	const ie_tensor *pin[1] = {X};
	ie_attr		ma[1] = {attr_str("mode", "bicubic")};
	int64_t		k[2] = {2, 2};
	ie_attr		pa[2] = {attr_ints("kernel_shape", 2, k), attr_str("auto_pad", "SAME_MIDDLE")};
	ie_attr		ba[1] = {attr_int("training_mode", 2)};

	CHECK(run_op("Resize", 13, 3, rin, 1, ma, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "mode \"bicubic\"") != NULL, "resize mode: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("MaxPool", 11, 1, pin, 2, pa, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "SAME_MIDDLE") != NULL, "maxpool auto_pad: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("AveragePool", 11, 1, pin, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "kernel_shape") != NULL, "averagepool without kernel_shape: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		int64_t		cd[1] = {1};
		ie_tensor  *P = rand_tensor(1, cd);
		const ie_tensor *bin[5] = {X, P, P, P, P};

		CHECK(run_op("BatchNormalization", 15, 5, bin, 1, ba, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "training_mode 2") != NULL, "batchnorm training_mode: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&P);
	}
	{
		ie_tensor  *I = ie_tensor_new(IE_INT64, 4, d);
		const ie_tensor *iin[1] = {I};

		CHECK(run_op("Softmax", 13, 1, iin, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "int64") != NULL, "softmax int64: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&I);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
}

/* ---- BERT-class operators: edge cases the node tests miss ---- */

/* A tensor of dtype dt and shape dims[ndim] holding vals (raw bytes). */
static ie_tensor *
typed_tensor(ie_dtype dt, int ndim, const int64_t *dims, const void *vals)
{
	ie_tensor  *t = ie_tensor_new(dt, ndim, dims);

	if (t->nbytes > 0)
		memcpy(t->data, vals, t->nbytes);
	return t;
}

/* True when t has rank nd and dims d. */
static int
shape_is(const ie_tensor *t, int nd, const int64_t *d)
{
	return t != NULL && t->ndim == nd &&
		(nd == 0 || memcmp(t->dims, d, nd * sizeof(int64_t)) == 0);
}

/*
 * Where, comparisons and Sum over shapes that broadcast in every
 * direction, against loops over the output index written here.
 */
static void
test_broadcast_ops(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dc[3] = {2, 1, 3},
				dx[3] = {1, 4, 1},
				dy[1] = {1},
				dwant[3] = {2, 4, 3};
	uint8_t		cv[6] = {1, 0, 1, 0, 0, 1};
	float		xv[4] = {10, 20, 30, 40},
				yv[1] = {-1};
	ie_tensor  *C = typed_tensor(IE_BOOL, 3, dc, cv),
			   *X = tu_float_tensor(3, dx, xv),
			   *Y = tu_float_tensor(1, dy, yv);
	const ie_tensor *win[3] = {C, X, Y};
	int			ok;

	CHECK(run_op("Where", 16, 3, win, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  shape_is(out[0], 3, dwant), "where broadcast: %s", err);
	ok = out[0] != NULL;
	for (int i = 0; ok && i < 2; i++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 3; k++)
			{
				float		want = cv[i * 3 + k] ? xv[j] : yv[0];

				if (((float *) out[0]->data)[(i * 4 + j) * 3 + k] != want)
					ok = 0;
			}
	CHECK(ok, "where broadcast values");
	ie_tensor_destroy(&out[0]);

	/* X and Y bigger than the condition, int64 */
	{
		int64_t		d1[1] = {1},
					d23[2] = {2, 3},
					dcol[2] = {2, 1};
		uint8_t		c1[1] = {0};
		int64_t		a[6] = {1, 2, 3, 4, 5, 6},
					b[2] = {-7, -8};
		ie_tensor  *C1 = typed_tensor(IE_BOOL, 1, d1, c1),
				   *A = typed_tensor(IE_INT64, 2, d23, a),
				   *B = typed_tensor(IE_INT64, 2, dcol, b);
		const ie_tensor *in2[3] = {C1, A, B};
		const int64_t want[6] = {-7, -7, -7, -8, -8, -8};

		CHECK(run_op("Where", 16, 3, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d23) && out[0]->dtype == IE_INT64 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "where int64 scalar condition: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&C1);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
	}

	/* Less on [3,1] vs [4] int64 gives bool [3,4] */
	{
		int64_t		d31[2] = {3, 1},
					d4[1] = {4},
					d34[2] = {3, 4};
		int64_t		a[3] = {0, 2, 5},
					b[4] = {-1, 1, 2, 9};
		ie_tensor  *A = typed_tensor(IE_INT64, 2, d31, a),
				   *B = typed_tensor(IE_INT64, 1, d4, b);
		const ie_tensor *in2[2] = {A, B};

		CHECK(run_op("Less", 13, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d34) && out[0]->dtype == IE_BOOL,
			  "less broadcast: %s", err);
		ok = out[0] != NULL;
		for (int i = 0; ok && i < 3; i++)
			for (int j = 0; j < 4; j++)
				if (((uint8_t *) out[0]->data)[i * 4 + j] != (a[i] < b[j]))
					ok = 0;
		CHECK(ok, "less broadcast values");
		ie_tensor_destroy(&out[0]);
		/* mixed types are refused */
		{
			ie_tensor  *F = rand_tensor(1, d4);
			const ie_tensor *mix[2] = {A, F};

			CHECK(run_op("Equal", 13, 2, mix, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
				  strstr(err, "differ") != NULL, "equal mixed types: %s", err);
			ie_tensor_destroy(&out[0]);
			ie_tensor_destroy(&F);
		}
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
	}

	/* Sum of three inputs broadcasting to [2,3]; Mean divides by 3 */
	{
		int64_t		d23[2] = {2, 3},
					d3[1] = {3},
					d21[2] = {2, 1};
		float		a[6] = {1, 2, 3, 4, 5, 6},
					b[3] = {10, 20, 30},
					c[2] = {100, 200};
		ie_tensor  *A = tu_float_tensor(2, d23, a),
				   *B = tu_float_tensor(1, d3, b),
				   *Cc = tu_float_tensor(2, d21, c);
		const ie_tensor *in3[3] = {B, Cc, A};

		CHECK(run_op("Sum", 13, 3, in3, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d23), "sum broadcast: %s", err);
		ok = out[0] != NULL;
		for (int i = 0; ok && i < 2; i++)
			for (int j = 0; j < 3; j++)
				if (((float *) out[0]->data)[i * 3 + j] != a[i * 3 + j] + b[j] + c[i])
					ok = 0;
		CHECK(ok, "sum broadcast values");
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Mean", 13, 3, in3, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  fabsf(((float *) out[0]->data)[5] - (6 + 30 + 200) / 3.0f) < 1e-4f,
			  "mean broadcast: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
		ie_tensor_destroy(&Cc);
	}

	/* shapes that do not broadcast name both shapes */
	{
		int64_t		d2[1] = {2},
					d3[1] = {3};
		ie_tensor  *A = rand_tensor(1, d2),
				   *B = rand_tensor(1, d3);
		const ie_tensor *in2[2] = {A, B};

		CHECK(run_op("Greater", 13, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "[2] and [3]") != NULL, "greater bad shapes: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
	}
	ie_tensor_destroy(&C);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&Y);
}

/* Min/Max propagate NaN; Neg wraps INT_MIN; Abs of int8; Not; Xor. */
static void
test_unary_and_minmax(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d3[1] = {3};
	float		a[3] = {1, NAN, -2},
				b[3] = {0, 5, NAN};
	ie_tensor  *A = tu_float_tensor(1, d3, a),
			   *B = tu_float_tensor(1, d3, b);
	const ie_tensor *in2[2] = {A, B};

	CHECK(run_op("Max", 13, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((float *) out[0]->data)[0] == 1 && isnan(((float *) out[0]->data)[1]) &&
		  isnan(((float *) out[0]->data)[2]), "max nan: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Min", 13, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((float *) out[0]->data)[0] == 0 && isnan(((float *) out[0]->data)[1]),
		  "min nan: %s", err);
	ie_tensor_destroy(&out[0]);
	/* ArgMax and ArgMin: a NaN wins, at its first place (numpy.argmax) */
	CHECK(run_op("ArgMax", 13, 1, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_INT64 && ((int64_t *) out[0]->data)[0] == 1,
		  "argmax nan: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ArgMin", 13, 1, in2 + 1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((int64_t *) out[0]->data)[0] == 2, "argmin nan: %s", err);
	ie_tensor_destroy(&out[0]);
	/* LeakyRelu keeps a NaN too */
	CHECK(run_op("LeakyRelu", 6, 1, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((float *) out[0]->data)[0] == 1 && isnan(((float *) out[0]->data)[1]) &&
		  fabsf(((float *) out[0]->data)[2] + 0.02f) < 1e-7f, "leakyrelu nan: %s", err);
	ie_tensor_destroy(&out[0]);
	/* Relu keeps a NaN (ONNX's reference np.clip(x, 0, inf), ONNX Runtime) */
	CHECK(run_op("Relu", 14, 1, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((float *) out[0]->data)[0] == 1 && isnan(((float *) out[0]->data)[1]) &&
		  ((float *) out[0]->data)[2] == 0, "relu nan: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		/* GlobalMaxPool: a plane with a NaN anywhere gives NaN (np.max) */
		int64_t		d4[4] = {1, 3, 1, 2};
		float		v[6] = {NAN, NAN, 1, NAN, -3, 2};
		ie_tensor  *G = tu_float_tensor(4, d4, v);
		const ie_tensor *ing[1] = {G};

		CHECK(run_op("GlobalMaxPool", 1, 1, ing, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dims[1] == 3 && isnan(((float *) out[0]->data)[0]) &&
			  isnan(((float *) out[0]->data)[1]) && ((float *) out[0]->data)[2] == 2,
			  "global max pool nan: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&G);
	}
	{
		int32_t		v[3] = {INT32_MIN, -5, 7};
		int8_t		v8[3] = {-128, -3, 4};
		ie_tensor  *I = typed_tensor(IE_INT32, 1, d3, v),
				   *I8 = typed_tensor(IE_INT8, 1, d3, v8);
		const ie_tensor *in1[1] = {I};
		const ie_tensor *in8[1] = {I8};

		CHECK(run_op("Neg", 13, 1, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ((int32_t *) out[0]->data)[0] == INT32_MIN &&
			  ((int32_t *) out[0]->data)[1] == 5 && ((int32_t *) out[0]->data)[2] == -7,
			  "neg int32: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Abs", 13, 1, in8, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ((int8_t *) out[0]->data)[0] == -128 && ((int8_t *) out[0]->data)[1] == 3 &&
			  ((int8_t *) out[0]->data)[2] == 4, "abs int8: %s", err);
		ie_tensor_destroy(&out[0]);
		/* Exp of an integer tensor is refused with the type's name */
		CHECK(run_op("Exp", 13, 1, in1, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "int32") != NULL, "exp int32: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&I);
		ie_tensor_destroy(&I8);
	}
	{
		uint8_t		p[3] = {1, 0, 1},
					q[3] = {1, 1, 0};
		ie_tensor  *P = typed_tensor(IE_BOOL, 1, d3, p),
				   *Q = typed_tensor(IE_BOOL, 1, d3, q);
		const ie_tensor *pq[2] = {P, Q};
		const ie_tensor *fp[2] = {A, A};

		CHECK(run_op("Xor", 7, 2, pq, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ((uint8_t *) out[0]->data)[0] == 0 && ((uint8_t *) out[0]->data)[1] == 1 &&
			  ((uint8_t *) out[0]->data)[2] == 1, "xor: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Not", 1, 1, pq, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ((uint8_t *) out[0]->data)[0] == 0 && ((uint8_t *) out[0]->data)[1] == 1,
			  "not: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("And", 7, 2, fp, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "float") != NULL, "and of floats: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&P);
		ie_tensor_destroy(&Q);
	}
	{
		/*
		 * Gelu-20: float (the vector path, in blocks of 256, over 1000
		 * values) and double against the formulas in double; an unknown
		 * approximate is refused.
		 */
		int64_t		dn[1] = {1000};
		float		xf[1000];
		double		xd[1000];
		ie_tensor  *F,
				   *D;
		ie_attr		tanh_attr = attr_str("approximate", "tanh"),
					bad_attr = attr_str("approximate", "erf");

		for (int i = 0; i < 1000; i++)
			xd[i] = xf[i] = -8.0f + 16.0f * (float) i / 999.0f;
		F = tu_float_tensor(1, dn, xf);
		D = typed_tensor(IE_DOUBLE, 1, dn, xd);
		for (int form = 0; form < 2; form++)
		{
			const ie_tensor *inf[1] = {F},
					   *ind[1] = {D};
			double		worst_f = 0,
						worst_d = 0;

			CHECK(run_op("Gelu", 20, 1, inf, form, &tanh_attr, 1, out, err, sizeof(err)) == 0 &&
				  out[0]->dtype == IE_FLOAT && out[0]->dims[0] == 1000, "gelu float: %s", err);
			for (int i = 0; out[0] != NULL && i < 1000; i++)
			{
				double		x = xf[i],
							want = form ?
					0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) :
					0.5 * x * (1 + erf(x / sqrt(2)));

				/* as close as float allows: 1 + erf cancels in the left tail */
				worst_f = fmax(worst_f, fabs(((float *) out[0]->data)[i] - want) /
							   (1e-6 + 1e-5 * fabs(want)));
			}
			ie_tensor_destroy(&out[0]);
			CHECK(worst_f <= 1, "gelu float (%s): worst error %g of the tolerance",
				  form ? "tanh" : "none", worst_f);
			CHECK(run_op("Gelu", 20, 1, ind, form, &tanh_attr, 1, out, err, sizeof(err)) == 0 &&
				  out[0]->dtype == IE_DOUBLE, "gelu double: %s", err);
			for (int i = 0; out[0] != NULL && i < 1000; i++)
			{
				double		x = xd[i],
							want = form ?
					0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) :
					0.5 * x * (1 + erf(x / sqrt(2)));

				worst_d = fmax(worst_d, fabs(((double *) out[0]->data)[i] - want));
			}
			ie_tensor_destroy(&out[0]);
			CHECK(worst_d < 1e-15, "gelu double (%s): worst error %g", form ? "tanh" : "none",
				  worst_d);
		}
		{
			const ie_tensor *inf[1] = {F};

			CHECK(run_op("Gelu", 20, 1, inf, 1, &bad_attr, 1, out, err, sizeof(err)) == -1 &&
				  strstr(err, "approximate") != NULL && strstr(err, "erf") != NULL,
				  "gelu approximate=erf: %s", err);
			ie_tensor_destroy(&out[0]);
		}
		ie_tensor_destroy(&F);
		ie_tensor_destroy(&D);
	}
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
}

/* Gather and GatherElements: negative indices, bad indices, empty indices. */
static void
test_gather(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d32[2] = {3, 2},
				d2[1] = {2},
				d0[1] = {0},
				d02[2] = {0, 2},
				d22[2] = {2, 2};
	float		x[6] = {0, 1, 10, 11, 20, 21};
	ie_tensor  *X = tu_float_tensor(2, d32, x);
	int64_t		neg[2] = {-1, 0},
				bad[2] = {0, 3};
	int32_t		neg32[2] = {-2, 1};
	ie_tensor  *N = typed_tensor(IE_INT64, 1, d2, neg),
			   *N32 = typed_tensor(IE_INT32, 1, d2, neg32),
			   *Bd = typed_tensor(IE_INT64, 1, d2, bad),
			   *E = ie_tensor_new(IE_INT64, 1, d0);
	ie_attr		ax1[1] = {attr_int("axis", 1)};
	ie_attr		axbad[1] = {attr_int("axis", 2)};

	{
		const ie_tensor *in[2] = {X, N};
		const float want[4] = {20, 21, 0, 1};

		CHECK(run_op("Gather", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d22) && memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "gather negative indices: %s", err);
		ie_tensor_destroy(&out[0]);
	}
	{
		/* axis 1 with int32 indices -2 and 1: columns 0 and 1 */
		const ie_tensor *in[2] = {X, N32};

		CHECK(run_op("Gather", 13, 2, in, 1, ax1, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d32) && memcmp(out[0]->data, x, sizeof(x)) == 0,
			  "gather axis 1 int32: %s", err);
		ie_tensor_destroy(&out[0]);
	}
	{
		const ie_tensor *in[2] = {X, Bd};

		CHECK(run_op("Gather", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "index 3") != NULL && strstr(err, "out of range") != NULL,
			  "gather out-of-range index: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Gather", 13, 2, in, 1, axbad, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "axis 2") != NULL, "gather bad axis: %s", err);
		ie_tensor_destroy(&out[0]);
	}
	{
		const ie_tensor *in[2] = {X, E};

		CHECK(run_op("Gather", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d02), "gather empty indices: %s", err);
		ie_tensor_destroy(&out[0]);
	}
	{
		/* scalar index: rank drops by one */
		int64_t		one = 1;
		ie_tensor  *S = typed_tensor(IE_INT64, 0, NULL, &one);
		const ie_tensor *in[2] = {X, S};

		CHECK(run_op("Gather", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 1, d2) && ((float *) out[0]->data)[0] == 10 &&
			  ((float *) out[0]->data)[1] == 11, "gather scalar index: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&S);
	}
	{
		/* GatherElements along axis 1, a negative index and a bad one */
		int64_t		ge[6] = {1, -2, -1, 0, 0, 1},
					gbad[6] = {0, 0, 2, 0, 0, 0};
		ie_tensor  *G = typed_tensor(IE_INT64, 2, d32, ge),
				   *Gb = typed_tensor(IE_INT64, 2, d32, gbad);
		const ie_tensor *in[2] = {X, G};
		const ie_tensor *inb[2] = {X, Gb};
		const float want[6] = {1, 0, 11, 10, 20, 21};

		CHECK(run_op("GatherElements", 13, 2, in, 1, ax1, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d32) && memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "gather_elements axis 1: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GatherElements", 13, 2, inb, 1, ax1, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "index 2") != NULL, "gather_elements out of range: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&G);
		ie_tensor_destroy(&Gb);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&N);
	ie_tensor_destroy(&N32);
	ie_tensor_destroy(&Bd);
	ie_tensor_destroy(&E);
}

/* GatherND with batch_dims 1 and a negative index; IsInf's attributes. */
static void
test_gather_nd_isinf(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[3] = {2, 3, 2},
				di[3] = {2, 2, 1},
				dw[3] = {2, 2, 2};
	float		x[12] = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
	int64_t		iv[4] = {2, -3, 1, -1};
	ie_tensor  *X = tu_float_tensor(3, dx, x),
			   *I = typed_tensor(IE_INT64, 3, di, iv);
	const ie_tensor *in[2] = {X, I};
	ie_attr		b1[1] = {attr_int("batch_dims", 1)};
	/* batch 0 picks rows 2 and 0, batch 1 rows 1 and 2 */
	const float want[8] = {4, 5, 0, 1, 12, 13, 14, 15};

	CHECK(run_op("GatherND", 13, 2, in, 1, b1, 1, out, err, sizeof(err)) == 0 &&
		  shape_is(out[0], 3, dw) && memcmp(out[0]->data, want, sizeof(want)) == 0,
		  "gather_nd batch_dims 1: %s", err);
	ie_tensor_destroy(&out[0]);
	((int64_t *) I->data)[3] = 3;
	CHECK(run_op("GatherND", 13, 2, in, 1, b1, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "index 3") != NULL, "gather_nd out of range: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		int64_t		d4[1] = {4};
		float		v[4] = {INFINITY, -INFINITY, NAN, 1};
		ie_tensor  *V = tu_float_tensor(1, d4, v);
		const ie_tensor *vin[1] = {V};
		ie_attr		noneg[1] = {attr_int("detect_negative", 0)};
		const uint8_t want_inf[4] = {1, 0, 0, 0},
					want_nan[4] = {0, 0, 1, 0};

		CHECK(run_op("IsInf", 10, 1, vin, 1, noneg, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_BOOL && memcmp(out[0]->data, want_inf, 4) == 0,
			  "isinf detect_negative 0: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("IsNaN", 13, 1, vin, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  memcmp(out[0]->data, want_nan, 4) == 0, "isnan: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&V);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&I);
}

/* Range (negative delta, empty, delta 0), ConstantOfShape, Expand, Tile. */
static void
test_generators(void)
{
	char		err[256];
	ie_tensor  *out[1];

	{
		int64_t		v[3] = {10, 4, -3};
		ie_tensor  *T[3];
		const ie_tensor *in[3];
		int64_t		d2[1] = {2};

		for (int i = 0; i < 3; i++)
			in[i] = T[i] = typed_tensor(IE_INT64, 0, NULL, &v[i]);
		CHECK(run_op("Range", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 1, d2) && ((int64_t *) out[0]->data)[0] == 10 &&
			  ((int64_t *) out[0]->data)[1] == 7, "range int64 negative delta: %s", err);
		ie_tensor_destroy(&out[0]);
		/* limit on the wrong side of start: empty */
		((int64_t *) T[1]->data)[0] = 20;
		CHECK(run_op("Range", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->ndim == 1 && out[0]->dims[0] == 0, "range empty: %s", err);
		ie_tensor_destroy(&out[0]);
		((int64_t *) T[2]->data)[0] = 0;
		CHECK(run_op("Range", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "delta") != NULL, "range delta 0: %s", err);
		ie_tensor_destroy(&out[0]);
		for (int i = 0; i < 3; i++)
			ie_tensor_destroy(&T[i]);
	}
	{
		float		v[3] = {1, -1, -0.5f};
		ie_tensor  *T[3];
		const ie_tensor *in[3];
		const float want[4] = {1, 0.5f, 0, -0.5f};

		for (int i = 0; i < 3; i++)
			in[i] = T[i] = tu_float_tensor(0, NULL, &v[i]);
		CHECK(run_op("Range", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->ndim == 1 && out[0]->dims[0] == 4 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "range float negative delta: %s", err);
		ie_tensor_destroy(&out[0]);
		for (int i = 0; i < 3; i++)
			ie_tensor_destroy(&T[i]);
	}
	{
		/* ConstantOfShape: int64 value 7 into [2, 0] (empty) and [3] */
		int64_t		sv[2] = {2, 0},
					d2[1] = {2},
					seven = 7,
					d1[1] = {1};
		ie_tensor  *S = typed_tensor(IE_INT64, 1, d2, sv),
				   *V = typed_tensor(IE_INT64, 1, d1, &seven);
		ie_attr		va = {.name = "value", .type = IE_ATTR_TENSOR, .t = V};
		const ie_tensor *in[1] = {S};

		CHECK(run_op("ConstantOfShape", 9, 1, in, 1, &va, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, sv) && out[0]->dtype == IE_INT64,
			  "constant_of_shape empty: %s", err);
		ie_tensor_destroy(&out[0]);
		((int64_t *) S->data)[1] = 3;
		CHECK(run_op("ConstantOfShape", 9, 1, in, 1, &va, 1, out, err, sizeof(err)) == 0 &&
			  ie_tensor_numel(out[0]) == 6 && ((int64_t *) out[0]->data)[5] == 7,
			  "constant_of_shape fill: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&S);
		ie_tensor_destroy(&V);
	}
	{
		/* Expand [2,3,1] by shape [4]: [2,3,4]; by [1,1,1,1]: [1,2,3,1] */
		int64_t		dx[3] = {2, 3, 1},
					s1[1] = {1},
					s4[4] = {1, 1, 1, 1},
					d1[1] = {4},
					d4[1] = {4},
					w1[3] = {2, 3, 4},
					w4[4] = {1, 2, 3, 1};
		ie_tensor  *X = rand_tensor(3, dx),
				   *S1 = typed_tensor(IE_INT64, 1, s1, d1),
				   *S4 = typed_tensor(IE_INT64, 1, d4, s4);
		const ie_tensor *in1[2] = {X, S1};
		const ie_tensor *in4[2] = {X, S4};
		int			ok;

		CHECK(run_op("Expand", 13, 2, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 3, w1), "expand to [4]: %s", err);
		ok = out[0] != NULL;
		for (int i = 0; ok && i < 24; i++)
			if (((float *) out[0]->data)[i] != ((float *) X->data)[i / 4])
				ok = 0;
		CHECK(ok, "expand values");
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Expand", 13, 2, in4, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, w4) && memcmp(out[0]->data, X->data, X->nbytes) == 0,
			  "expand rank up: %s", err);
		ie_tensor_destroy(&out[0]);
		{
			/* [2,3,1] against [4,1]: 3 and 4 conflict */
			int64_t		d2[1] = {2},
						bad[2] = {4, 1};
			ie_tensor  *Sb = typed_tensor(IE_INT64, 1, d2, bad);
			const ie_tensor *inb[2] = {X, Sb};

			CHECK(run_op("Expand", 13, 2, inb, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
				  strstr(err, "does not broadcast") != NULL, "expand bad shape: %s", err);
			ie_tensor_destroy(&out[0]);
			ie_tensor_destroy(&Sb);
		}
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&S1);
		ie_tensor_destroy(&S4);
	}
	{
		/* Tile [2,1,3] by [2,3,1] against a loop; repeats 0 gives empty */
		int64_t		dx[3] = {2, 1, 3},
					d3[1] = {3},
					rep[3] = {2, 3, 1},
					w[3] = {4, 3, 3};
		ie_tensor  *X = rand_tensor(3, dx),
				   *R = typed_tensor(IE_INT64, 1, d3, rep);
		const ie_tensor *in[2] = {X, R};
		int			ok;

		CHECK(run_op("Tile", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 3, w), "tile: %s", err);
		ok = out[0] != NULL;
		for (int i = 0; ok && i < 4; i++)
			for (int j = 0; j < 3; j++)
				for (int k = 0; k < 3; k++)
					if (((float *) out[0]->data)[(i * 3 + j) * 3 + k] !=
						((float *) X->data)[(i % 2) * 3 + k])
						ok = 0;
		CHECK(ok, "tile values");
		ie_tensor_destroy(&out[0]);
		((int64_t *) R->data)[1] = 0;
		CHECK(run_op("Tile", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ie_tensor_numel(out[0]) == 0 && out[0]->dims[1] == 0, "tile by 0: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&R);
	}
	{
		/* Where with an empty dim gives an empty output */
		int64_t		d0[2] = {0, 3};
		ie_tensor  *C = ie_tensor_new(IE_BOOL, 2, d0),
				   *A = rand_tensor(2, d0);
		const ie_tensor *in[3] = {C, A, A};

		CHECK(run_op("Where", 16, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d0), "where empty: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&C);
		ie_tensor_destroy(&A);
	}
}

/*
 * LayerNormalization against a double reference, on rows with a large
 * common offset (1e4 + small noise), where a one-pass float variance
 * (E[x^2] - E[x]^2) would lose every digit; Scale broadcast from [1].
 */
static void
test_layernorm(void)
{
	char		err[256];
	ie_tensor  *out[3];
	int64_t		dx[3] = {2, 3, 64},
				dsc[1] = {64},
				dst[3] = {2, 3, 1},
				d1[1] = {1};
	ie_tensor  *X = rand_tensor(3, dx),
			   *S = rand_tensor(1, dsc),
			   *B = rand_tensor(1, dsc);
	float	   *x = X->data;
	double		worst = 0,
				worst_stat = 0;
	ie_attr		ep[1] = {{.name = "epsilon", .type = IE_ATTR_FLOAT, .f = 1e-3f}};
	const ie_tensor *in[3] = {X, S, B};

	for (int i = 0; i < 6 * 64; i++)
		x[i] = 1e4f + x[i] * 0.01f;
	CHECK(run_op("LayerNormalization", 17, 3, in, 1, ep, 3, out, err, sizeof(err)) == 0 &&
		  shape_is(out[0], 3, dx) && shape_is(out[1], 3, dst) && shape_is(out[2], 3, dst),
		  "layernorm: %s", err);
	for (int r = 0; out[0] != NULL && r < 6; r++)
	{
		double		m = 0,
					v = 0,
					inv;

		for (int j = 0; j < 64; j++)
			m += x[r * 64 + j];
		m /= 64;
		for (int j = 0; j < 64; j++)
			v += (x[r * 64 + j] - m) * (x[r * 64 + j] - m);
		inv = 1 / sqrt(v / 64 + (double) 1e-3f);
		for (int j = 0; j < 64; j++)
		{
			double		want = (x[r * 64 + j] - m) * inv * ((float *) S->data)[j] +
				((float *) B->data)[j];
			double		d = fabs(((float *) out[0]->data)[r * 64 + j] - want);

			worst = d > worst ? d : worst;
		}
		worst_stat = fmax(worst_stat, fabs(((float *) out[1]->data)[r] - m) / m);
		worst_stat = fmax(worst_stat, fabs(((float *) out[2]->data)[r] - inv) / inv);
	}
	CHECK(worst < 1e-5 && worst_stat < 1e-6, "layernorm values: max abs diff %g, stats %g",
		  worst, worst_stat);
	for (int i = 0; i < 3; i++)
		ie_tensor_destroy(&out[i]);
	{
		/* Scale [1] broadcast, no B, axis 1: normalise [3, 64] blocks */
		float		one = 2.0f;
		ie_tensor  *S1 = tu_float_tensor(1, d1, &one);
		const ie_tensor *in2[2] = {X, S1};
		ie_attr		a1[1] = {attr_int("axis", 1)};
		double		worst_m = 0,
					worst_v = 0;

		CHECK(run_op("LayerNormalization", 17, 2, in2, 1, a1, 1, out, err, sizeof(err)) == 0,
			  "layernorm scale [1]: %s", err);
		/*
		 * each [3, 64] block comes out with mean 0 and variance
		 * 4 v / (v + eps), v the block's variance, eps the default 1e-5
		 */
		for (int b = 0; out[0] != NULL && b < 2; b++)
		{
			const float *xb = x + b * 192,
					   *yb = (const float *) out[0]->data + b * 192;
			double		m = 0,
						v = 0,
						ym = 0,
						yv = 0;

			for (int j = 0; j < 192; j++)
			{
				m += xb[j];
				ym += yb[j];
			}
			m /= 192;
			ym /= 192;
			for (int j = 0; j < 192; j++)
			{
				v += (xb[j] - m) * (xb[j] - m);
				yv += (yb[j] - ym) * (yb[j] - ym);
			}
			v /= 192;
			yv /= 192;
			worst_m = fmax(worst_m, fabs(ym));
			worst_v = fmax(worst_v, fabs(yv - 4 * v / (v + (double) 1e-5f)));
		}
		CHECK(worst_m < 1e-4 && worst_v < 1e-3,
			  "layernorm scale [1]: |mean| %g, variance off by %g", worst_m, worst_v);
		ie_tensor_destroy(&out[0]);
		/* Scale of the wrong length is refused naming it */
		{
			int64_t		d5[1] = {5};
			ie_tensor  *S5 = rand_tensor(1, d5);
			const ie_tensor *in5[2] = {X, S5};

			CHECK(run_op("LayerNormalization", 17, 2, in5, 0, NULL, 1, out, err,
						 sizeof(err)) == -1 && strstr(err, "Scale") != NULL,
				  "layernorm bad scale: %s", err);
			ie_tensor_destroy(&out[0]);
			ie_tensor_destroy(&S5);
		}
		ie_tensor_destroy(&S1);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&B);
}

/*
 * The load-time check of op_type (ie_op_check_lookup) on attrs at opset:
 * accepted (msg NULL), or refused with msg in the message and error kind
 * kind.
 */
static void
check_attrs_load(const char *op_type, int opset, int n_attr, const ie_attr *attrs,
				 const char *msg, ie_error_kind kind)
{
	char		err[256] = "";
	ie_op_fn	check = ie_op_check_lookup(op_type);
	ie_node_ctx ctx = {
		.op_type = op_type, .node_name = "t", .opset = opset,
		.n_inputs = 1, .n_outputs = 1, .n_attrs = n_attr, .attrs = attrs,
		.n_threads = 1, .err = err, .errlen = sizeof(err),
		.err_kind = IE_ERR_NONE
	};
	int			rc = check != NULL ? check(&ctx) : -2;

	if (msg == NULL)
		CHECK(rc == 0, "%s load check: rc %d, %s", op_type, rc, err);
	else
		CHECK(rc == -1 && strstr(err, msg) != NULL && ctx.err_kind == kind,
			  "%s load check must fail with \"%s\" (kind %d): rc %d, kind %d, \"%s\"",
			  op_type, msg, (int) kind, rc, (int) ctx.err_kind, err);
}

/* Whether t is a tensor of dtype dt, shape dims[0..nd), values want (within tol). */
static int
values_near(const ie_tensor *t, ie_dtype dt, int nd, const int64_t *dims,
		   const double *want, double tol)
{
	if (!shape_is(t, nd, dims) || t->dtype != dt)
		return 0;
	for (int64_t i = 0; i < ie_tensor_numel(t); i++)
	{
		double		v = dt == IE_FLOAT ? ((const float *) t->data)[i] :
			((const double *) t->data)[i];

		if (!(fabs(v - want[i]) <= tol))
			return 0;
	}
	return 1;
}

/*
 * RMSNormalization-23 on a 2x3 input whose rows have mean squares 3 and
 * 15, epsilon 1: the root mean squares are 2 and 4, so every value is
 * exact.  Axis -1 (default) with Scale [3]; axis 0 (all six values, mean
 * square 9, epsilon 7: rms 4) with Scale [3] broadcast over [2, 3]; double
 * X with a float Scale (types T and V differ); a Scale that does not
 * broadcast, an axis out of range and stash_type 0 refused.
 */
static void
test_rmsnorm(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[2] = {2, 3},
				ds[1] = {3},
				d2[1] = {2};
	float		xv[6] = {1, 2, 2, 3, 0, 6},
				sv[3] = {1, 2, -1},
				bad[2] = {1, 1};
	double		xdv[6] = {1, 2, 2, 3, 0, 6};
	double		want_row[6] = {0.5, 2, -1, 0.75, 0, -1.5},
				want_all[6] = {0.25, 1, -0.5, 0.75, 0, -1.5};
	ie_tensor  *X = tu_float_tensor(2, dx, xv),
			   *XD = typed_tensor(IE_DOUBLE, 2, dx, xdv),
			   *S = tu_float_tensor(1, ds, sv),
			   *S2 = tu_float_tensor(1, d2, bad);
	const ie_tensor *in[2] = {X, S},
			   *ind[2] = {XD, S},
			   *inbad[2] = {X, S2};
	ie_attr		eps1 = {.name = "epsilon", .type = IE_ATTR_FLOAT, .f = 1.0f},
				all[2] = {attr_int("axis", 0),
						  {.name = "epsilon", .type = IE_ATTR_FLOAT, .f = 7.0f}},
				axis2 = attr_int("axis", 2),
				stash0 = attr_int("stash_type", 0);

	CHECK(run_op("RMSNormalization", 23, 2, in, 1, &eps1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, dx, want_row, 0),
		  "rmsnorm rows: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RMSNormalization", 23, 2, in, 2, all, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, dx, want_all, 0),
		  "rmsnorm axis 0: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RMSNormalization", 23, 2, ind, 1, &eps1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_DOUBLE, 2, dx, want_row, 1e-15),
		  "rmsnorm double X, float scale: %s", err);
	ie_tensor_destroy(&out[0]);
	/* refusals */
	CHECK(run_op("RMSNormalization", 23, 2, inbad, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "scale of shape [2] does not broadcast") != NULL,
		  "rmsnorm scale [2]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RMSNormalization", 23, 2, in, 1, &axis2, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 2 is out of range") != NULL, "rmsnorm axis 2: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RMSNormalization", 23, 2, in, 1, &stash0, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "stash_type 0 is not supported") != NULL, "rmsnorm stash_type 0: %s", err);
	ie_tensor_destroy(&out[0]);
	check_attrs_load("RMSNormalization", 23, 1, &stash0, "stash_type 0 is not supported",
					 IE_ERR_NOT_SUPPORTED);
	check_attrs_load("RMSNormalization", 23, 1, &eps1, NULL, IE_ERR_NONE);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&XD);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&S2);
}

/*
 * InstanceNormalization and GroupNormalization, epsilon 0, on values whose
 * statistics are exact: InstanceNormalization-22 on X [1, 2, 2] = [[1, 3],
 * [0, 4]] (means 2, 2; variances 1, 4) with scale [2, 1], B [1, 0] gives
 * [[-1, 3], [-1, 1]]; GroupNormalization on X [1, 4, 1] = [1, 3, 0, 4] in
 * two groups ([1, 3] and [0, 4], the same statistics): opset 21 with
 * per-channel scale [1, 2, 1, 1] and bias [0, 0, 0, 1] gives [-1, 2, -1,
 * 2], opset 18 with per-group scale [2, 1] and bias [0, 1] gives [-2, 2,
 * 0, 2].  Refusals: 3 channels in 2 groups, opset 18 given per-channel
 * scale, opset 21 given per-group scale, stash_type 0, int64 input.
 */
static void
test_instance_group_norm(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[3] = {1, 2, 2},
				d2[1] = {2},
				dg[3] = {1, 4, 1},
				d4[1] = {4},
				d3[3] = {1, 3, 1},
				d3p[1] = {3};
	float		xv[4] = {1, 3, 0, 4},
				sv[2] = {2, 1},
				bv[2] = {1, 0},
				s21[4] = {1, 2, 1, 1},
				b21[4] = {0, 0, 0, 1},
				s18[2] = {2, 1},
				b18[2] = {0, 1},
				x3[3] = {1, 2, 3},
				p3[3] = {1, 1, 1};
	double		want_in[4] = {-1, 3, -1, 1},
				want21[4] = {-1, 2, -1, 2},
				want18[4] = {-2, 2, 0, 2};
	int64_t		xi[4] = {1, 3, 0, 4};
	ie_tensor  *X = tu_float_tensor(3, dx, xv),
			   *S = tu_float_tensor(1, d2, sv),
			   *B = tu_float_tensor(1, d2, bv),
			   *XG = tu_float_tensor(3, dg, xv),
			   *S21 = tu_float_tensor(1, d4, s21),
			   *B21 = tu_float_tensor(1, d4, b21),
			   *S18 = tu_float_tensor(1, d2, s18),
			   *B18 = tu_float_tensor(1, d2, b18),
			   *X3 = tu_float_tensor(3, d3, x3),
			   *P3 = tu_float_tensor(1, d3p, p3),
			   *XI = typed_tensor(IE_INT64, 3, dx, xi);
	const ie_tensor *in[3] = {X, S, B},
			   *g21[3] = {XG, S21, B21},
			   *g18[3] = {XG, S18, B18},
			   *g3[3] = {X3, P3, P3},
			   *gi[3] = {XI, S, B};
	ie_attr		eps0 = {.name = "epsilon", .type = IE_ATTR_FLOAT, .f = 0.0f},
				ga[2] = {attr_int("num_groups", 2), {.name = "epsilon", .type = IE_ATTR_FLOAT, .f = 0.0f}},
				gs[2] = {attr_int("num_groups", 2), attr_int("stash_type", 0)};

	CHECK(run_op("InstanceNormalization", 22, 3, in, 1, &eps0, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 3, dx, want_in, 1e-6),
		  "instancenorm: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("InstanceNormalization", 6, 3, gi, 1, &eps0, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "int64 is not supported") != NULL, "instancenorm int64: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 21, 3, g21, 2, ga, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 3, dg, want21, 1e-6),
		  "groupnorm-21 per channel: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 18, 3, g18, 2, ga, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 3, dg, want18, 1e-6),
		  "groupnorm-18 per group: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 18, 3, g21, 2, ga, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "must have shape [2] (one value per group)") != NULL,
		  "groupnorm-18 per-channel scale: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 21, 3, g18, 2, ga, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "must have shape [4] (one value per channel)") != NULL,
		  "groupnorm-21 per-group scale: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 21, 3, g3, 2, ga, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "num_groups 2 must be positive and divide the 3 channels") != NULL,
		  "groupnorm 3 channels in 2 groups: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("GroupNormalization", 21, 3, g21, 2, gs, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "stash_type 0 is not supported") != NULL, "groupnorm stash_type 0: %s", err);
	ie_tensor_destroy(&out[0]);
	check_attrs_load("GroupNormalization", 21, 2, gs, "stash_type 0 is not supported",
					 IE_ERR_NOT_SUPPORTED);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&XG);
	ie_tensor_destroy(&S21);
	ie_tensor_destroy(&B21);
	ie_tensor_destroy(&S18);
	ie_tensor_destroy(&B18);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&P3);
	ie_tensor_destroy(&XI);
}

/*
 * Empty inputs of the normalisations: GroupNormalization-21 of X [1, 0, 3]
 * with num_groups 10^15 and LRN of X [10^15, 0, 1] looped 10^15 times over
 * nothing (a stuck worker); InstanceNormalization of X [2, 0] was refused
 * as "num_groups 0".  Each now gives its empty output at once.
 */
static void
test_norm_empty(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		huge = 1000000000000000LL;
	ie_tensor  *XG = ie_tensor_new(IE_FLOAT, 3, (int64_t[]) {1, 0, 3}),
			   *XL = ie_tensor_new(IE_FLOAT, 3, (int64_t[]) {huge, 0, 1}),
			   *XI = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {2, 0}),
			   *E = ie_tensor_new(IE_FLOAT, 1, (int64_t[]) {0});
	const ie_tensor *gin[3] = {XG, E, E},
			   *lin[1] = {XL},
			   *iin[3] = {XI, E, E};
	ie_attr		ng = attr_int("num_groups", huge),
				sz = attr_int("size", 3);

	CHECK(run_op("GroupNormalization", 21, 3, gin, 1, &ng, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 3 && out[0]->dims[1] == 0,
		  "GroupNormalization-21 of [1, 0, 3], num_groups 10^15: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("LRN", 13, 1, lin, 1, &sz, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 3 && out[0]->dims[0] == huge && out[0]->dims[1] == 0,
		  "LRN of [10^15, 0, 1]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("InstanceNormalization", 6, 3, iin, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 2 && out[0]->dims[0] == 2 && out[0]->dims[1] == 0,
		  "InstanceNormalization of [2, 0]: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&XG);
	ie_tensor_destroy(&XL);
	ie_tensor_destroy(&XI);
	ie_tensor_destroy(&E);
}

/*
 * LRN-13 on X [1, 3, 1] = [1, 2, 3], size 2 (window [c, c + 1]), alpha 3
 * (alpha / size 1.5), beta 1, bias 1: square sums 5, 13, 9 give
 * [1 / 8.5, 2 / 20.5, 3 / 14.5]; size 0 refused.  MeanVarianceNormalization
 * on X [1, 1, 1, 4] = [1, 2, 3, 6] over the default axes (mean 3, variance
 * 3.5) gives [-2, -1, 0, 3] / sqrt(3.5); over axes [1] of X [2, 2] = [[1,
 * 3], [5, 5]], [[-1, 1], [0, 0]] (a zero variance gives 0 / 1e-9); opset 1
 * with normalize_variance 0 subtracts the mean alone; axis 5 refused.
 */
static void
test_lrn_mvn(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dl[3] = {1, 3, 1},
				dm[4] = {1, 1, 1, 4},
				d22[2] = {2, 2};
	float		xl[3] = {1, 2, 3},
				xm[4] = {1, 2, 3, 6},
				x22[4] = {1, 3, 5, 5};
	double		want_l[3] = {1 / 8.5, 2 / 20.5, 3 / 14.5},
				want_m[4],
				want_nv[4] = {-2, -1, 0, 3},
				want22[4] = {-1, 1, 0, 0};
	ie_tensor  *XL = tu_float_tensor(3, dl, xl),
			   *XM = tu_float_tensor(4, dm, xm),
			   *X22 = tu_float_tensor(2, d22, x22);
	const ie_tensor *inl[1] = {XL},
			   *inm[1] = {XM},
			   *in22[1] = {X22};
	int64_t		ax1[1] = {1},
				ax5[1] = {5};
	ie_attr		la[3] = {attr_int("size", 2),
						 {.name = "alpha", .type = IE_ATTR_FLOAT, .f = 3.0f},
						 {.name = "beta", .type = IE_ATTR_FLOAT, .f = 1.0f}},
				size0 = attr_int("size", 0),
				axes1 = attr_ints("axes", 1, ax1),
				axes5 = attr_ints("axes", 1, ax5),
				nv0 = attr_int("normalize_variance", 0);

	for (int i = 0; i < 4; i++)
		want_m[i] = want_nv[i] / sqrt(3.5);
	CHECK(run_op("LRN", 13, 1, inl, 3, la, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 3, dl, want_l, 1e-7),
		  "lrn: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("LRN", 13, 1, inl, 1, &size0, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "size 0 must be given and positive") != NULL, "lrn size 0: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("MeanVarianceNormalization", 13, 1, inm, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dm, want_m, 1e-6),
		  "mvn default axes: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("MeanVarianceNormalization", 13, 1, in22, 1, &axes1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, d22, want22, 1e-6),
		  "mvn axes [1]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("MeanVarianceNormalization", 1, 1, inm, 1, &nv0, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dm, want_nv, 1e-6),
		  "mvn-1 normalize_variance 0: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("MeanVarianceNormalization", 13, 1, in22, 1, &axes5, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 5 is out of range") != NULL, "mvn axis 5: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&XL);
	ie_tensor_destroy(&XM);
	ie_tensor_destroy(&X22);
}

/* Whether t is an int64 tensor [n, 3] holding rows want[0..3n). */
static int
selected_are(const ie_tensor *t, int64_t n, const int64_t *want)
{
	if (t == NULL || t->dtype != IE_INT64 || t->ndim != 2 || t->dims[0] != n ||
		t->dims[1] != 3)
		return 0;
	return n == 0 || memcmp(t->data, want, sizeof(int64_t) * 3 * n) == 0;
}

/*
 * NonMaxSuppression-11 on three boxes [y1, x1, y2, x2]: box 0 the unit
 * square, box 1 the same shifted 0.1 along x (IoU 0.9 / 1.1 = 0.818 with
 * box 0), box 2 disjoint from both; scores 0.9, 0.8, 0.7.  IoU threshold
 * 0.5 keeps boxes 0 and 2; 0.9 keeps all three, in score order; score
 * threshold 0.75 leaves box 0 alone; max_output_boxes_per_class 0 (or
 * absent) none; equal scores select the lower index first; the same boxes
 * as centres and sizes (center_point_box 1) give the same answer.
 * Refusals: boxes [1, 3, 3], scores whose box count differs, iou_threshold
 * 1.5, center_point_box 2.
 */
static void
test_nms(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		db[3] = {1, 3, 4},
				ds[3] = {1, 1, 3},
				dbad[3] = {1, 3, 3},
				dsbad[3] = {1, 1, 2},
				d1[1] = {1};
	float		bv[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3},
				cv[12] = {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 2.5f, 0.5f, 1, 1},
				sv[3] = {0.9f, 0.8f, 0.7f},
				tie[3] = {0.5f, 0.1f, 0.5f},
				iou5 = 0.5f,
				iou9 = 0.9f,
				iou15 = 1.5f,
				st75 = 0.75f;
	int64_t		m3 = 3,
				m1 = 1,
				m0 = 0,
				want_02[6] = {0, 0, 0, 0, 0, 2},
				want_012[9] = {0, 0, 0, 0, 0, 1, 0, 0, 2},
				want_0[3] = {0, 0, 0};
	ie_tensor  *Bx = tu_float_tensor(3, db, bv),
			   *Bc = tu_float_tensor(3, db, cv),
			   *S = tu_float_tensor(3, ds, sv),
			   *St = tu_float_tensor(3, ds, tie),
			   *Bbad = tu_float_tensor(3, dbad, bv),
			   *Sbad = tu_float_tensor(3, dsbad, sv),
			   *M3 = typed_tensor(IE_INT64, 1, d1, &m3),
			   *M1 = typed_tensor(IE_INT64, 1, d1, &m1),
			   *M0 = typed_tensor(IE_INT64, 1, d1, &m0),
			   *I5 = tu_float_tensor(1, d1, &iou5),
			   *I9 = tu_float_tensor(1, d1, &iou9),
			   *I15 = tu_float_tensor(1, d1, &iou15),
			   *T75 = tu_float_tensor(1, d1, &st75);
	const ie_tensor *in5[4] = {Bx, S, M3, I5},
			   *in9[4] = {Bx, S, M3, I9},
			   *inst[5] = {Bx, S, M3, I5, T75},
			   *in0[4] = {Bx, S, M0, I5},
			   *in2[2] = {Bx, S},
			   *intie[4] = {Bx, St, M1, I5},
			   *inc[4] = {Bc, S, M3, I5},
			   *inbb[4] = {Bbad, S, M3, I5},
			   *inbs[4] = {Bx, Sbad, M3, I5},
			   *in15[4] = {Bx, S, M3, I15};
	ie_attr		cpb1 = attr_int("center_point_box", 1),
				cpb2 = attr_int("center_point_box", 2);

	CHECK(run_op("NonMaxSuppression", 11, 4, in5, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 2, want_02), "nms iou 0.5: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, in9, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 3, want_012), "nms iou 0.9: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 5, inst, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 1, want_0), "nms score threshold: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, in0, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 0, NULL), "nms max 0: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 10, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 0, NULL), "nms no max: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, intie, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 1, want_0), "nms equal scores: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, inc, 1, &cpb1, 1, out, err, sizeof(err)) == 0 &&
		  selected_are(out[0], 2, want_02), "nms center_point_box 1: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, inbb, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "boxes of shape [1, 3, 3]: it must be [num_batches, spatial_dimension, 4]") != NULL,
		  "nms boxes [1, 3, 3]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, inbs, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "scores of shape [1, 1, 2] do not match boxes") != NULL,
		  "nms scores [1, 1, 2]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, in15, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "iou_threshold 1.5 must be in [0, 1]") != NULL, "nms iou 1.5: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("NonMaxSuppression", 11, 4, in5, 1, &cpb2, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "center_point_box 2 must be 0 or 1") != NULL, "nms center_point_box 2: %s", err);
	ie_tensor_destroy(&out[0]);
	check_attrs_load("NonMaxSuppression", 11, 1, &cpb2, "center_point_box 2 must be 0 or 1",
					 IE_ERR_INVALID);
	{
		/*
		 * NaN scores on five disjoint boxes: taken after every number, in
		 * index order (0, 2, 4, then 1, 3).  The comparator used to call a
		 * NaN both before and after a number (not a consistent order, which
		 * qsort requires) and selected 0, 2, 1, 4, 3 here.
		 */
		int64_t		d5[3] = {1, 5, 4},
					ds5[3] = {1, 1, 5},
					m5 = 5,
					want_nan[15] = {0, 0, 0, 0, 0, 2, 0, 0, 4, 0, 0, 1, 0, 0, 3};
		float		b5[20],
					s5[5] = {0.9f, NAN, 0.8f, NAN, 0.3f};
		ie_tensor  *B5,
				   *S5,
				   *M5 = typed_tensor(IE_INT64, 1, d1, &m5);
		const ie_tensor *in5n[4];

		for (int i = 0; i < 5; i++)
		{
			b5[i * 4] = 0;
			b5[i * 4 + 1] = (float) (2 * i);
			b5[i * 4 + 2] = 1;
			b5[i * 4 + 3] = (float) (2 * i + 1);
		}
		B5 = tu_float_tensor(3, d5, b5);
		S5 = tu_float_tensor(3, ds5, s5);
		in5n[0] = B5;
		in5n[1] = S5;
		in5n[2] = M5;
		in5n[3] = I5;
		CHECK(run_op("NonMaxSuppression", 11, 4, in5n, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  selected_are(out[0], 5, want_nan), "nms NaN scores last: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&B5);
		ie_tensor_destroy(&S5);
		ie_tensor_destroy(&M5);
	}
	ie_tensor_destroy(&Bx);
	ie_tensor_destroy(&Bc);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&St);
	ie_tensor_destroy(&Bbad);
	ie_tensor_destroy(&Sbad);
	ie_tensor_destroy(&M3);
	ie_tensor_destroy(&M1);
	ie_tensor_destroy(&M0);
	ie_tensor_destroy(&I5);
	ie_tensor_destroy(&I9);
	ie_tensor_destroy(&I15);
	ie_tensor_destroy(&T75);
}

/*
 * GridSample on X [1, 1, 2, 2] = [[1, 2], [3, 4]], one grid point at a
 * time ((x, y) normalised): bilinear with align_corners 1 at the corners
 * and the centre gives 1, 4, 2.5 and, at (1, -1), the top right 2; with
 * align_corners 0 the corner (-1, -1) is the outer edge of pixel (0, 0),
 * a half pixel outside on both axes: zeros padding gives 1 / 4 (one of
 * four taps inside), border and reflection 1; (1.5, 0) reflected is
 * column 1, halfway down: 3.  nearest at (0, 0) with align_corners 0 sits
 * at 0.5 on both axes and rounds half to even, to pixel (0, 0): 1.
 * bicubic over a constant 5 with border padding is 5 (the weights sum to
 * one).  Outside: reflected twice at 6 (1.5); far outside (-1e30) a
 * zero, NaN the border, never a stray read.  Opset 20's 3-D (volumetric) linear: X [1, 1, 2, 1, 1] = [1, 3]
 * at the centre is 2.  Refusals: a 5-D X at opset 16, mode "bilinear" at
 * opset 20, a grid whose last dim is not the spatial rank, int64 X.
 */
static void
test_gridsample(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[4] = {1, 1, 2, 2},
				dg[4] = {1, 1, 1, 2},
				dy[4] = {1, 1, 1, 1},
				dg3[4] = {1, 1, 1, 3},
				dx5[5] = {1, 1, 2, 1, 1},
				dg5[5] = {1, 1, 1, 1, 3},
				dy5[5] = {1, 1, 1, 1, 1};
	float		xv[4] = {1, 2, 3, 4},
				five[4] = {5, 5, 5, 5},
				x5[2] = {1, 3},
				g5[3] = {0, 0, 0};
	int64_t		xi[4] = {1, 2, 3, 4};
	static const struct
	{
		float		gx,
					gy;
		const char *mode,
				   *pad;
		int			align;
		double		want;
	}			cases[] = {
		{-1, -1, "bilinear", "zeros", 1, 1},
		{1, 1, "bilinear", "zeros", 1, 4},
		{0, 0, "bilinear", "zeros", 1, 2.5},
		{1, -1, "bilinear", "zeros", 1, 2},
		{-1, -1, "bilinear", "zeros", 0, 0.25},
		{-1, -1, "bilinear", "border", 0, 1},
		{-1, -1, "bilinear", "reflection", 0, 1},
		{1.5f, 0, "bilinear", "reflection", 0, 3},
		{0, 0, "nearest", "zeros", 0, 1},
		/* outside: x 6 is 3.5 pixels with align_corners, reflected at 1,
		 * 0 and 1 (-1.5, 1.5, 0.5); far outside, a zero; NaN, the border */
		{6, -1, "bilinear", "reflection", 1, 1.5},
		{-1e30f, -1, "bicubic", "zeros", 0, 0},
		{NAN, -1, "nearest", "border", 1, 1},
	};
	ie_tensor  *X = tu_float_tensor(4, dx, xv),
			   *X5c = tu_float_tensor(4, dx, five),
			   *X3 = tu_float_tensor(5, dx5, x5),
			   *G5 = tu_float_tensor(5, dg5, g5),
			   *G3 = tu_float_tensor(4, dg3, g5),
			   *XI = typed_tensor(IE_INT64, 4, dx, xi);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		float		gv[2] = {cases[i].gx, cases[i].gy};
		ie_tensor  *G = tu_float_tensor(4, dg, gv);
		const ie_tensor *in[2] = {X, G};
		ie_attr		a[3] = {attr_str("mode", cases[i].mode),
							attr_str("padding_mode", cases[i].pad),
							attr_int("align_corners", cases[i].align)};

		CHECK(run_op("GridSample", 16, 2, in, 3, a, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 4, dy, &cases[i].want, 1e-6),
			  "gridsample %s %s align %d at (%g, %g): %s (got %g, want %g)",
			  cases[i].mode, cases[i].pad, cases[i].align, cases[i].gx, cases[i].gy, err,
			  out[0] ? ((float *) out[0]->data)[0] : NAN, cases[i].want);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&G);
	}
	{
		float		gv[2] = {0.3f, -0.7f};
		double		want5 = 5;
		ie_tensor  *G = tu_float_tensor(4, dg, gv);
		const ie_tensor *in[2] = {X5c, G},
				   *in3[2] = {X3, G5},
				   *in3g[2] = {X, G3},
				   *ini[2] = {XI, G};
		ie_attr		cubic[2] = {attr_str("mode", "cubic"), attr_str("padding_mode", "border")},
					bil = attr_str("mode", "bilinear");
		double		want2 = 2;

		CHECK(run_op("GridSample", 20, 2, in, 2, cubic, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 4, dy, &want5, 1e-5),
			  "gridsample cubic constant: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GridSample", 20, 2, in3, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 5, dy5, &want2, 1e-6),
			  "gridsample 3-D linear: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GridSample", 16, 2, in3, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "GridSample-16 takes 4-D input") != NULL, "gridsample-16 5-D: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GridSample", 20, 2, in, 1, &bil, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "mode \"bilinear\" is not supported") != NULL,
			  "gridsample-20 bilinear: %s", err);
		ie_tensor_destroy(&out[0]);
		check_attrs_load("GridSample", 20, 1, &bil, "mode \"bilinear\" is not supported",
						 IE_ERR_NOT_SUPPORTED);
		CHECK(run_op("GridSample", 20, 2, in3g, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "grid of shape [1, 1, 1, 3] does not match X") != NULL,
			  "gridsample grid [1, 1, 1, 3]: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GridSample", 20, 2, ini, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "X type int64 is not supported") != NULL, "gridsample int64: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&G);
	}
	{
		/*
		 * A double grid is denormalised in double: X [1, 1, 1, 2] = [0, 1]
		 * (double), grid x 0.1 with align_corners 1 sits at 0.55 and gives
		 * 0.55.  The coordinate went through float before, 0.5500000007
		 * (float's 0.1), an error of 7e-10 on a double result.
		 */
		int64_t		dxd[4] = {1, 1, 1, 2};
		ie_tensor  *XD = typed_tensor(IE_DOUBLE, 4, dxd, (double[]) {0, 1}),
				   *GD = typed_tensor(IE_DOUBLE, 4, dg, (double[]) {0.1, 0});
		const ie_tensor *ind[2] = {XD, GD};
		ie_attr		al = attr_int("align_corners", 1);
		double		w55 = 0.55;

		CHECK(run_op("GridSample", 16, 2, ind, 1, &al, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_DOUBLE, 4, dy, &w55, 1e-13),
			  "gridsample double grid in double: %s %.17g", err,
			  out[0] != NULL ? ((const double *) out[0]->data)[0] : -1.0);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&XD);
		ie_tensor_destroy(&GD);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&X5c);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&G5);
	ie_tensor_destroy(&G3);
	ie_tensor_destroy(&XI);
}

/*
 * RoiAlign on X [1, 1, 2, 2] = [[1, 2], [3, 4]]: opset 16 (half_pixel) roi
 * (0, 0, 2, 2) spans [-0.5, 1.5] on both axes: one bin, one sample (at
 * 0.5, 0.5) gives 2.5; 2 x 2 bins of one sample each land on the pixel
 * centres, [1, 2, 3, 4]; mode max over 2 x 2 samples (the pixel centres,
 * each one weighted corner) gives 4, avg 2.5.  Opset 10 (no half-pixel
 * shift) roi (0, 0, 1, 1), one sample at (0.5, 0.5): 2.5.  Refusals: a
 * batch index past N, rois [1, 3], mode "min", a NaN roi (its adaptive
 * sampling grid would have no bound).
 */
static void
test_roialign(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[4] = {1, 1, 2, 2},
				dr[2] = {1, 4},
				dr3[2] = {1, 3},
				d1[1] = {1},
				dy1[4] = {1, 1, 1, 1};
	float		xv[4] = {1, 2, 3, 4},
				roi[4] = {0, 0, 2, 2},
				roi1[4] = {0, 0, 1, 1};
	int64_t		b0 = 0,
				b1 = 1;
	double		w25 = 2.5,
				w4 = 4,
				w1234[4] = {1, 2, 3, 4};
	ie_tensor  *X = tu_float_tensor(4, dx, xv),
			   *R = tu_float_tensor(2, dr, roi),
			   *R1 = tu_float_tensor(2, dr, roi1),
			   *R3 = tu_float_tensor(2, dr3, roi),
			   *B0 = typed_tensor(IE_INT64, 1, d1, &b0),
			   *B1 = typed_tensor(IE_INT64, 1, d1, &b1);
	const ie_tensor *in[3] = {X, R, B0},
			   *in1[3] = {X, R1, B0},
			   *inb[3] = {X, R, B1},
			   *in3[3] = {X, R3, B0};
	ie_attr		sr1 = attr_int("sampling_ratio", 1),
				bins[3] = {attr_int("sampling_ratio", 1), attr_int("output_height", 2),
						   attr_int("output_width", 2)},
				mx[2] = {attr_int("sampling_ratio", 2), attr_str("mode", "max")},
				av[2] = {attr_int("sampling_ratio", 2), attr_str("mode", "avg")},
				mn = attr_str("mode", "min");

	CHECK(run_op("RoiAlign", 16, 3, in, 1, &sr1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy1, &w25, 1e-6), "roialign one sample: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, in, 3, bins, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, w1234, 1e-6), "roialign 2 x 2 bins: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, in, 2, mx, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy1, &w4, 1e-6), "roialign max: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, in, 2, av, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy1, &w25, 1e-6), "roialign avg: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 10, 3, in1, 1, &sr1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy1, &w25, 1e-6), "roialign-10: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, inb, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "batch_indices[0] = 1 is outside [0, 1)") != NULL,
		  "roialign batch index 1: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, in3, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "rois of shape [1, 3]: it must be [num_rois, 4]") != NULL,
		  "roialign rois [1, 3]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RoiAlign", 16, 3, in, 1, &mn, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "mode \"min\" is not supported") != NULL, "roialign mode min: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		float		nanroi[4] = {0, 0, NAN, 2};
		ie_tensor  *RN = tu_float_tensor(2, dr, nanroi);
		const ie_tensor *inn[3] = {X, RN, B0};

		CHECK(run_op("RoiAlign", 16, 3, inn, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "roi 0 is not finite") != NULL, "roialign NaN roi: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&RN);
	}
	{
		/*
		 * A NaN or infinite roi with a fixed sampling_ratio (no adaptive
		 * grid to refuse it), or at opset 10 (whose one-pixel minimum
		 * turned a NaN width into 1), reached (int64_t) NaN in the
		 * samples: undefined, an index far outside X.  Refused now; so is
		 * a sampling_ratio whose gh * gw would overflow.
		 */
		float		nanroi[4] = {NAN, 0, 2, 2},
					infroi[4] = {INFINITY, 0, INFINITY, 2},
					nan10[4] = {0, NAN, NAN, 1};
		ie_tensor  *RN = tu_float_tensor(2, dr, nanroi),
				   *RI = tu_float_tensor(2, dr, infroi),
				   *RN10 = tu_float_tensor(2, dr, nan10);
		const ie_tensor *inn[3] = {X, RN, B0},
				   *ini[3] = {X, RI, B0},
				   *inn10[3] = {X, RN10, B0};
		ie_attr		sr2 = attr_int("sampling_ratio", 2),
					srbig = attr_int("sampling_ratio", 4294967296LL);

		CHECK(run_op("RoiAlign", 16, 3, inn, 1, &sr2, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "roi 0 is not finite") != NULL, "roialign NaN roi, sampling_ratio 2: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("RoiAlign", 16, 3, ini, 1, &sr2, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "roi 0 is not finite") != NULL, "roialign infinite roi: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("RoiAlign", 10, 3, inn10, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "roi 0 is not finite") != NULL, "roialign-10 NaN roi: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("RoiAlign", 16, 3, in, 1, &srbig, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "sampling_ratio 4294967296 is past the engine's limit") != NULL,
			  "roialign sampling_ratio 2^32: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&RN);
		ie_tensor_destroy(&RI);
		ie_tensor_destroy(&RN10);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&R);
	ie_tensor_destroy(&R1);
	ie_tensor_destroy(&R3);
	ie_tensor_destroy(&B0);
	ie_tensor_destroy(&B1);
}

/*
 * AffineGrid-20: theta [[2, 0, 1], [0, 1, 0]] on size [1, 1, 2, 3] with
 * align_corners 0 (base x -2/3, 0, 2/3; base y -1/2, 1/2) gives
 * (2x + 1, y); with align_corners 1 (x -1, 0, 1; y -1, 1) likewise.  3-D:
 * the identity [1, 3, 4] on size [1, 1, 1, 1, 2], align_corners 1, gives
 * (-1, -1, -1) and (1, -1, -1) (a single pixel sits at -1).  Refusals:
 * size of 3 values, theta [1, 2, 3] for a 5-value size.
 */
static void
test_affinegrid(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dt[3] = {1, 2, 3},
				dt3[3] = {1, 3, 4},
				ds4[1] = {4},
				ds5[1] = {5},
				ds3[1] = {3},
				dy[4] = {1, 2, 3, 2},
				dy3[5] = {1, 1, 1, 2, 3};
	float		tv[6] = {2, 0, 1, 0, 1, 0},
				tv3[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
	int64_t		s4[4] = {1, 1, 2, 3},
				s5[5] = {1, 1, 1, 1, 2};
	double		want0[12],
				want1[12],
				want3[6] = {-1, -1, -1, 1, -1, -1};
	ie_tensor  *T = tu_float_tensor(3, dt, tv),
			   *T3 = tu_float_tensor(3, dt3, tv3),
			   *S4 = typed_tensor(IE_INT64, 1, ds4, s4),
			   *S5 = typed_tensor(IE_INT64, 1, ds5, s5),
			   *S3 = typed_tensor(IE_INT64, 1, ds3, s4);
	const ie_tensor *in[2] = {T, S4},
			   *in3[2] = {T3, S5},
			   *inbad[2] = {T, S3},
			   *inmis[2] = {T, S5};
	ie_attr		al1 = attr_int("align_corners", 1);

	for (int h = 0; h < 2; h++)
		for (int w = 0; w < 3; w++)
		{
			double		x0 = -1 + (2.0 * w + 1) / 3,
						y0 = -1 + (2.0 * h + 1) / 2,
						x1 = -1 + w,
						y1 = -1 + 2 * h;

			want0[(h * 3 + w) * 2] = 2 * x0 + 1;
			want0[(h * 3 + w) * 2 + 1] = y0;
			want1[(h * 3 + w) * 2] = 2 * x1 + 1;
			want1[(h * 3 + w) * 2 + 1] = y1;
		}
	CHECK(run_op("AffineGrid", 20, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy, want0, 1e-6), "affinegrid 2-D: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("AffineGrid", 20, 2, in, 1, &al1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dy, want1, 1e-6), "affinegrid 2-D aligned: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("AffineGrid", 20, 2, in3, 1, &al1, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 5, dy3, want3, 1e-6), "affinegrid 3-D: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("AffineGrid", 20, 2, inbad, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "size must hold 4 values") != NULL, "affinegrid size [3]: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("AffineGrid", 20, 2, inmis, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "theta of shape [1, 2, 3] must be [1, 3, 4]") != NULL,
		  "affinegrid theta for 3-D: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		/*
		 * Sizes whose point count passes int64: the product of size's
		 * dims was taken before anything refused it (signed overflow,
		 * which check-asan's UBSan stops on).  size [0, 1, 2^40, 2^40]
		 * with theta [0, 2, 3] asks for an empty grid whose other dims
		 * pass a byte count, refused as [1, 1, 2^40, 2^40] is, over the
		 * tensor limit.  GridSample of X [1, 1, 2, 2, 2] on a grid [1,
		 * 2^40, 2^40, 0, 3] (empty, its other dims huge; unchecked_empty)
		 * computes its empty Y's shape without overflow and is refused it.
		 */
		int64_t		big = 1099511627776LL,
					sz0[4] = {0, 1, big, big},
					sz1[4] = {1, 1, big, big};
		ie_tensor  *T0 = ie_tensor_new(IE_FLOAT, 3, (int64_t[]) {0, 2, 3}),
				   *SZ0 = typed_tensor(IE_INT64, 1, ds4, sz0),
				   *SZ1 = typed_tensor(IE_INT64, 1, ds4, sz1),
				   *X5 = ie_tensor_new(IE_FLOAT, 5, (int64_t[]) {1, 1, 2, 2, 2}),
				   *G5 = unchecked_empty(IE_FLOAT, 5, (int64_t[]) {1, big, big, 0, 3});
		const ie_tensor *in0[2] = {T0, SZ0},
				   *in1[2] = {T, SZ1},
				   *ing[2] = {X5, G5};

		CHECK(run_op("AffineGrid", 20, 2, in0, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "over the tensor limit for the output") != NULL &&
			  strstr(err, "an empty float tensor of shape [0, 1099511627776, 1099511627776, 2]") != NULL,
			  "affinegrid size [0, 1, 2^40, 2^40]: its empty output refused: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("AffineGrid", 20, 2, in1, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "over the tensor limit") != NULL,
			  "affinegrid size [1, 1, 2^40, 2^40] refused: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("GridSample", 22, 2, ing, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "an empty float tensor of shape [1, 1, 1099511627776, 1099511627776, 0]") != NULL,
			  "gridsample on an empty grid [1, 2^40, 2^40, 0, 3]: its empty Y refused: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&T0);
		ie_tensor_destroy(&SZ0);
		ie_tensor_destroy(&SZ1);
		ie_tensor_destroy(&X5);
		ie_tensor_destroy(&G5);
	}
	ie_tensor_destroy(&T);
	ie_tensor_destroy(&T3);
	ie_tensor_destroy(&S4);
	ie_tensor_destroy(&S5);
	ie_tensor_destroy(&S3);
}

/*
 * RotaryEmbedding-23 on X [1, 1, 2, 4] = [[1, 2, 3, 4], [5, 6, 7, 8]],
 * position_ids [[1, 0]]: position 0 is the identity (cos 1, sin 0),
 * position 1 turns the first pair by 90 degrees (cos 0, sin 1) and the
 * second by 180 (cos -1, sin 0), so every value is exact.  Halves: pairs
 * (x0, x2), (x1, x3) give [-3, -2, 1, -4]; interleaved: pairs (x0, x1),
 * (x2, x3) give [-2, 1, -3, -4]; the second token is unchanged.  Also
 * without position_ids (caches [1, 2, 2]), double, rotary_embedding_dim 2
 * (the rest copied), a 3-D X with num_heads 2, and the refusals.
 */
static void
test_rotary(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[4] = {1, 1, 2, 4},
				dc[2] = {2, 2},
				dc3[3] = {1, 2, 2},
				dc1[2] = {2, 1},
				dp[2] = {1, 2},
				dx3[3] = {1, 1, 4},
				dp3[2] = {1, 1};
	float		xv[8] = {1, 2, 3, 4, 5, 6, 7, 8},
				cv[4] = {1, 1, 0, -1},
				sv[4] = {0, 0, 1, 0},
				cv3[4] = {0, -1, 1, 1},	/* token 0 at position 1, token 1 at 0 */
				sv3[4] = {1, 0, 0, 0},
				cv1[2] = {1, 0},
				sv1[2] = {0, 1};
	double		xdv[8] = {1, 2, 3, 4, 5, 6, 7, 8},
				cdv[4] = {1, 1, 0, -1},
				sdv[4] = {0, 0, 1, 0};
	int64_t		pv[2] = {1, 0},
				pbad[2] = {2, 0},
				p3[1] = {1};
	double		want_halves[8] = {-3, -2, 1, -4, 5, 6, 7, 8},
				want_inter[8] = {-2, 1, -3, -4, 5, 6, 7, 8},
				want_dim2[8] = {-2, 1, 3, 4, 5, 6, 7, 8},
				want_3d[4] = {-2, 1, -4, 3};
	ie_tensor  *X = tu_float_tensor(4, dx, xv),
			   *C = tu_float_tensor(2, dc, cv),
			   *S = tu_float_tensor(2, dc, sv),
			   *C3 = tu_float_tensor(3, dc3, cv3),
			   *S3 = tu_float_tensor(3, dc3, sv3),
			   *C1 = tu_float_tensor(2, dc1, cv1),
			   *S1 = tu_float_tensor(2, dc1, sv1),
			   *XD = typed_tensor(IE_DOUBLE, 4, dx, xdv),
			   *CD = typed_tensor(IE_DOUBLE, 2, dc, cdv),
			   *SD = typed_tensor(IE_DOUBLE, 2, dc, sdv),
			   *P = typed_tensor(IE_INT64, 2, dp, pv),
			   *PB = typed_tensor(IE_INT64, 2, dp, pbad),
			   *X3 = tu_float_tensor(3, dx3, xv),
			   *P3 = typed_tensor(IE_INT64, 2, dp3, p3);
	const ie_tensor *in[4] = {X, C, S, P},
			   *in_nopos[3] = {X, C3, S3},
			   *in_dim2[4] = {X, C1, S1, P},
			   *in_d[4] = {XD, CD, SD, P},
			   *in_3d[4] = {X3, C1, S1, P3},
			   *in_badpos[4] = {X, C, S, PB};
	ie_attr		inter = attr_int("interleaved", 1),
				dim2 = attr_int("rotary_embedding_dim", 2),
				dim3 = attr_int("rotary_embedding_dim", 3),
				heads2 = attr_int("num_heads", 2);

	CHECK(run_op("RotaryEmbedding", 23, 4, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, want_halves, 0), "rotary halves: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in, 1, &inter, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, want_inter, 0), "rotary interleaved: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 3, in_nopos, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, want_halves, 0), "rotary no position_ids: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 3, in_nopos, 1, &inter, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, want_inter, 0),
		  "rotary no position_ids, interleaved: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in_dim2, 1, &dim2, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 4, dx, want_dim2, 0), "rotary dim 2: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in_d, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_DOUBLE, 4, dx, want_halves, 0), "rotary double: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in_3d, 1, &heads2, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 3, dx3, want_3d, 0), "rotary 3-D: %s", err);
	ie_tensor_destroy(&out[0]);
	/* refusals */
	CHECK(run_op("RotaryEmbedding", 23, 4, in_badpos, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "position id 2 is out of range [0, 2)") != NULL,
		  "rotary position id 2: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in_3d, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "num_heads") != NULL, "rotary 3-D without num_heads: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in, 1, &dim2, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "cos_cache [2, 2] must be [max_position, 1]") != NULL,
		  "rotary dim 2 with caches of 2 columns: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("RotaryEmbedding", 23, 4, in, 1, &dim3, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "rotary_embedding_dim 3 must be even") != NULL, "rotary dim 3: %s", err);
	ie_tensor_destroy(&out[0]);
	check_attrs_load("RotaryEmbedding", 23, 1, &dim3, "rotary_embedding_dim 3 must be even",
					 IE_ERR_INVALID);
	check_attrs_load("RotaryEmbedding", 23, 1, &dim2, NULL, IE_ERR_NONE);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&C);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&C3);
	ie_tensor_destroy(&S3);
	ie_tensor_destroy(&C1);
	ie_tensor_destroy(&S1);
	ie_tensor_destroy(&XD);
	ie_tensor_destroy(&CD);
	ie_tensor_destroy(&SD);
	ie_tensor_destroy(&P);
	ie_tensor_destroy(&PB);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&P3);
}

/*
 * Swish-24, y = x / (1 + exp(-alpha x)): alpha 2 and the default 1 on
 * [-1, 0, 2], float and double, against the formula in double; an int32
 * input refused.
 */
static void
test_swish(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d3[1] = {3};
	float		xv[3] = {-1, 0, 2};
	double		xdv[3] = {-1, 0, 2};
	int32_t		iv[3] = {-1, 0, 2};
	ie_tensor  *F = tu_float_tensor(1, d3, xv),
			   *D = typed_tensor(IE_DOUBLE, 1, d3, xdv),
			   *I = typed_tensor(IE_INT32, 1, d3, iv);
	const ie_tensor *inf[1] = {F},
			   *ind[1] = {D},
			   *ini[1] = {I};
	ie_attr		alpha2 = {.name = "alpha", .type = IE_ATTR_FLOAT, .f = 2.0f};
	double		want2[3] = {-1 / (1 + exp(2.0)), 0, 2 / (1 + exp(-4.0))},
				want1[3] = {-1 / (1 + exp(1.0)), 0, 2 / (1 + exp(-2.0))};

	CHECK(run_op("Swish", 24, 1, inf, 1, &alpha2, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 1, d3, want2, 1e-6), "swish alpha 2: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Swish", 24, 1, inf, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 1, d3, want1, 1e-6), "swish alpha 1: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Swish", 24, 1, ind, 1, &alpha2, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_DOUBLE, 1, d3, want2, 1e-15), "swish double: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Swish", 24, 1, ini, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "element type int32 is not supported") != NULL, "swish int32: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&F);
	ie_tensor_destroy(&D);
	ie_tensor_destroy(&I);
}

/* A one-input function of the C library, for test_unary_math. */
typedef struct unary_case
{
	const char *op;
	int			opset;
	double		(*f) (double);
	float		x[4];
} unary_case;

/*
 * The trigonometric and hyperbolic operators (float against the double C
 * library function, double exactly), out-of-domain values NaN; Round's
 * halves to even; Sign on float (NaN stays NaN), int32 and uint8; Mish,
 * ThresholdedRelu and Shrink against their formulas worked by hand; an
 * int32 input refused by a float-only operator.
 */
static void
test_unary_math(void)
{
	static const unary_case cases[] = {
		{"Tan", 7, tan, {-0.5f, 0, 0.25f, 1.2f}},
		{"Asin", 7, asin, {-0.5f, 0, 0.25f, 0.9f}},
		{"Acos", 22, acos, {-0.5f, 0, 0.25f, 0.9f}},
		{"Atan", 7, atan, {-3, 0, 0.25f, 10}},
		{"Sinh", 9, sinh, {-3, 0, 0.25f, 10}},
		{"Cosh", 9, cosh, {-3, 0, 0.25f, 10}},
		{"Asinh", 9, asinh, {-3, 0, 0.25f, 10}},
		{"Acosh", 22, acosh, {1, 1.5f, 2, 10}},
		{"Atanh", 9, atanh, {-0.5f, 0, 0.25f, 0.9f}},
	};
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d4[1] = {4},
				d8[1] = {8},
				d5[1] = {5},
				d3[1] = {3};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		double		want[4],
					xd[4];
		ie_tensor  *F = tu_float_tensor(1, d4, cases[c].x),
				   *D;
		const ie_tensor *in[1] = {F};

		for (int i = 0; i < 4; i++)
		{
			xd[i] = cases[c].x[i];
			want[i] = cases[c].f(xd[i]);
		}
		D = typed_tensor(IE_DOUBLE, 1, d4, xd);
		CHECK(run_op(cases[c].op, cases[c].opset, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d4, want, 1e-6 * (1 + fabs(want[3]))),
			  "%s float: %s", cases[c].op, err);
		ie_tensor_destroy(&out[0]);
		in[0] = D;
		CHECK(run_op(cases[c].op, cases[c].opset, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_DOUBLE, 1, d4, want, 0), "%s double: %s", cases[c].op, err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&F);
		ie_tensor_destroy(&D);
	}

	/* out of the domain: NaN */
	{
		float		xv[3] = {2, 0.5f, -2};
		ie_tensor  *X = tu_float_tensor(1, d3, xv);
		const ie_tensor *in[1] = {X};

		CHECK(run_op("Asin", 7, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  isnan(((float *) out[0]->data)[0]) && !isnan(((float *) out[0]->data)[1]),
			  "asin(2) is NaN: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Acosh", 9, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  !isnan(((float *) out[0]->data)[0]) && isnan(((float *) out[0]->data)[1]),
			  "acosh(0.5) is NaN: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
	}

	/* Round: halves to even */
	{
		float		xv[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, -2.6f};
		double		want[8] = {0, 2, 2, 0, -2, -2, 2, -3};
		ie_tensor  *X = tu_float_tensor(1, d8, xv);
		const ie_tensor *in[1] = {X};

		CHECK(run_op("Round", 11, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d8, want, 0), "round half to even: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
	}

	/* Sign: float (NaN stays NaN), int32, uint8 */
	{
		float		xv[4] = {-3, 0, 2.5f, NAN};
		int32_t		iv[4] = {-7, 0, 9, INT32_MIN},
					iwant[4] = {-1, 0, 1, -1};
		uint8_t		uv[4] = {0, 5, 255, 1},
					uwant[4] = {0, 1, 1, 1};
		ie_tensor  *X = tu_float_tensor(1, d4, xv),
				   *I = typed_tensor(IE_INT32, 1, d4, iv),
				   *U = typed_tensor(IE_UINT8, 1, d4, uv);
		const ie_tensor *in[1] = {X};
		const float *y;

		CHECK(run_op("Sign", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0, "sign: %s", err);
		y = out[0] ? out[0]->data : NULL;
		CHECK(y && y[0] == -1 && y[1] == 0 && y[2] == 1 && isnan(y[3]), "sign float values");
		ie_tensor_destroy(&out[0]);
		in[0] = I;
		CHECK(run_op("Sign", 9, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT32 && memcmp(out[0]->data, iwant, sizeof(iwant)) == 0,
			  "sign int32: %s", err);
		ie_tensor_destroy(&out[0]);
		in[0] = U;
		CHECK(run_op("Sign", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_UINT8 && memcmp(out[0]->data, uwant, sizeof(uwant)) == 0,
			  "sign uint8: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&I);
		ie_tensor_destroy(&U);
	}

	/* Mish, ThresholdedRelu, Shrink */
	{
		float		xv[5] = {-2, -1, 0, 1, 2};
		int8_t		iv[5] = {-3, -1, 0, 1, 3},
					iwant[5] = {-2, 0, 0, 0, 2};
		int32_t		i32v[5] = {1, 2, 3, 4, 5};
		double		mish[5],
					thr[5] = {0, 0, 0, 0, 0},
					shr[5] = {-1, 0, 0, 0, 1},
					thr1[5] = {0, 0, 0, 0, 2};
		ie_tensor  *X = tu_float_tensor(1, d5, xv),
				   *I = typed_tensor(IE_INT8, 1, d5, iv),
				   *J = typed_tensor(IE_INT32, 1, d5, i32v);
		const ie_tensor *in[1] = {X};
		ie_attr		alpha2 = {.name = "alpha", .type = IE_ATTR_FLOAT, .f = 2.0f};
		ie_attr		sh[2] = {{.name = "lambd", .type = IE_ATTR_FLOAT, .f = 1.5f},
		{.name = "bias", .type = IE_ATTR_FLOAT, .f = 1.0f}};

		for (int i = 0; i < 5; i++)
			mish[i] = xv[i] * tanh(log(1 + exp((double) xv[i])));
		CHECK(run_op("Mish", 18, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d5, mish, 1e-6), "mish: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ThresholdedRelu", 10, 1, in, 1, &alpha2, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d5, thr, 0), "thresholdedrelu alpha 2: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ThresholdedRelu", 22, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d5, thr1, 0), "thresholdedrelu alpha 1: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Shrink", 9, 1, in, 2, sh, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 1, d5, shr, 0), "shrink float: %s", err);
		ie_tensor_destroy(&out[0]);
		in[0] = I;
		CHECK(run_op("Shrink", 9, 1, in, 2, sh, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT8 && memcmp(out[0]->data, iwant, sizeof(iwant)) == 0,
			  "shrink int8: %s", err);
		ie_tensor_destroy(&out[0]);
		in[0] = J;
		CHECK(run_op("Tan", 7, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "element type int32 is not supported") != NULL, "tan int32: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Mish", 18, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "element type int32 is not supported") != NULL, "mish int32: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&I);
		ie_tensor_destroy(&J);
	}
}

/*
 * BitwiseAnd, BitwiseOr, BitwiseXor with broadcasting ([2, 2] with [2])
 * against the C operators in a loop here; BitwiseNot on int64 and uint8;
 * BitShift LEFT on uint8 (bits shifted out, a shift of 8 gives 0) and
 * RIGHT on int16 at opset 28 (arithmetic; shifts of 20 and -1 give the
 * sign fill); a direction other than LEFT or RIGHT, or none, refused;
 * float refused by BitwiseAnd.
 */
static void
test_bitwise(void)
{
	static const char *const ops[3] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d22[2] = {2, 2},
				d2[1] = {2},
				d3[1] = {3};
	int32_t		av[4] = {12, 10, -1, 7},
				bv[2] = {6, 3};
	ie_tensor  *A = typed_tensor(IE_INT32, 2, d22, av),
			   *B = typed_tensor(IE_INT32, 1, d2, bv);
	const ie_tensor *in[2] = {A, B};

	for (int k = 0; k < 3; k++)
	{
		int32_t		want[4];

		for (int i = 0; i < 4; i++)
			want[i] = k == 0 ? (av[i] & bv[i % 2]) : k == 1 ? (av[i] | bv[i % 2]) :
				(av[i] ^ bv[i % 2]);
		CHECK(run_op(ops[k], 18, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 2, d22) && out[0]->dtype == IE_INT32 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0, "%s int32: %s", ops[k], err);
		ie_tensor_destroy(&out[0]);
	}

	/* BitwiseNot */
	{
		int64_t		lv[3] = {0, -1, 5},
					lwant[3] = {-1, 0, -6};
		uint8_t		uv[3] = {0, 255, 0x0f},
					uwant[3] = {255, 0, 0xf0};
		ie_tensor  *L = typed_tensor(IE_INT64, 1, d3, lv),
				   *U = typed_tensor(IE_UINT8, 1, d3, uv);
		const ie_tensor *in1[1] = {L};

		CHECK(run_op("BitwiseNot", 18, 1, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT64 && memcmp(out[0]->data, lwant, sizeof(lwant)) == 0,
			  "bitwisenot int64: %s", err);
		ie_tensor_destroy(&out[0]);
		in1[0] = U;
		CHECK(run_op("BitwiseNot", 18, 1, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_UINT8 && memcmp(out[0]->data, uwant, sizeof(uwant)) == 0,
			  "bitwisenot uint8: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&L);
		ie_tensor_destroy(&U);
	}

	/* BitShift */
	{
		uint8_t		xv[3] = {1, 255, 3},
					sv[3] = {2, 1, 8},
					want_l[3] = {4, 254, 0};
		int16_t		x16[3] = {-16, 16, -1},
					s16[3] = {2, 20, -1},
					want_r[3] = {-4, 0, -1};
		ie_tensor  *X = typed_tensor(IE_UINT8, 1, d3, xv),
				   *S = typed_tensor(IE_UINT8, 1, d3, sv),
				   *X16 = typed_tensor(IE_INT16, 1, d3, x16),
				   *S16 = typed_tensor(IE_INT16, 1, d3, s16);
		const ie_tensor *inu[2] = {X, S},
				   *ins[2] = {X16, S16};
		ie_attr		left = attr_str("direction", "LEFT"),
					right = attr_str("direction", "RIGHT"),
					up = attr_str("direction", "UP");

		CHECK(run_op("BitShift", 11, 2, inu, 1, &left, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_UINT8 && memcmp(out[0]->data, want_l, sizeof(want_l)) == 0,
			  "bitshift left uint8: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("BitShift", 28, 2, ins, 1, &right, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT16 && memcmp(out[0]->data, want_r, sizeof(want_r)) == 0,
			  "bitshift right int16: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("BitShift", 11, 2, inu, 1, &up, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "direction \"UP\" is not supported") != NULL,
			  "bitshift direction UP: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("BitShift", 11, 2, inu, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "direction") != NULL, "bitshift without direction: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&S);
		ie_tensor_destroy(&X16);
		ie_tensor_destroy(&S16);
	}

	/* float refused */
	{
		float		fv[2] = {1, 2};
		ie_tensor  *F = tu_float_tensor(1, d2, fv);
		const ie_tensor *inf[2] = {F, F};

		CHECK(run_op("BitwiseAnd", 18, 2, inf, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "element type float is not supported") != NULL,
			  "bitwiseand float: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&F);
	}
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
}

/*
 * DepthToSpace and SpaceToDepth in both modes against the index formulas
 * of the spec written as loops here (DCR: channel (i * b + j) * C' + c;
 * CRD: (c * b + i) * b + j), one the inverse of the other; int8 as well
 * (any element type moves); channels not a multiple of blocksize^2,
 * spatial dims not multiples of blocksize, blocksize 0, a rank-3 input
 * and an unknown mode refused.
 */
static void
test_depth_space(void)
{
	char		err[256];
	ie_tensor  *out[1] = {NULL},
			   *back[1] = {NULL};
	int64_t		dd[4] = {2, 8, 2, 3},
				ds[4] = {2, 2, 4, 6},
				d6[4] = {1, 6, 2, 2},
				d3[3] = {8, 2, 3},
				dh[4] = {1, 1, 3, 4};
	float		xd[96],
				want[96];
	ie_tensor  *XD,
			   *XS,
			   *X6,
			   *X3,
			   *XH;
	const ie_tensor *in[1];
	ie_attr		a[2];

	for (int i = 0; i < 96; i++)
		xd[i] = (float) i;
	XD = tu_float_tensor(4, dd, xd);
	XS = tu_float_tensor(4, ds, xd);
	X6 = tu_float_tensor(4, d6, xd);
	X3 = tu_float_tensor(3, d3, xd);
	XH = tu_float_tensor(4, dh, xd);
	for (int crd = 0; crd <= 1; crd++)
	{
		const char *mode = crd ? "CRD" : "DCR";

		/* DepthToSpace [2, 8, 2, 3] -> [2, 2, 4, 6], b = 2, C' = 2 */
		for (int n = 0; n < 2; n++)
			for (int c = 0; c < 2; c++)
				for (int y = 0; y < 4; y++)
					for (int x = 0; x < 6; x++)
					{
						int			i = y % 2,
									j = x % 2;
						int			ch = crd ? (c * 2 + i) * 2 + j : (i * 2 + j) * 2 + c;

						want[((n * 2 + c) * 4 + y) * 6 + x] =
							xd[((n * 8 + ch) * 2 + y / 2) * 3 + x / 2];
					}
		a[0] = attr_int("blocksize", 2);
		a[1] = attr_str("mode", mode);
		in[0] = XD;
		CHECK(run_op("DepthToSpace", 13, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, ds) && memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "depthtospace %s: %s", mode, err);
		/* SpaceToDepth of it gives the input back */
		in[0] = out[0];
		CHECK(out[0] != NULL &&
			  run_op("SpaceToDepth", 28, 1, in, 2, a, 1, back, err, sizeof(err)) == 0 &&
			  shape_is(back[0], 4, dd) && memcmp(back[0]->data, xd, sizeof(xd)) == 0,
			  "spacetodepth %s inverts depthtospace: %s", mode, err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&back[0]);

		/* SpaceToDepth [2, 2, 4, 6] -> [2, 8, 2, 3] */
		for (int n = 0; n < 2; n++)
			for (int c = 0; c < 2; c++)
				for (int y = 0; y < 4; y++)
					for (int x = 0; x < 6; x++)
					{
						int			i = y % 2,
									j = x % 2;
						int			ch = crd ? (c * 2 + i) * 2 + j : (i * 2 + j) * 2 + c;

						want[((n * 8 + ch) * 2 + y / 2) * 3 + x / 2] =
							xd[((n * 2 + c) * 4 + y) * 6 + x];
					}
		in[0] = XS;
		CHECK(run_op("SpaceToDepth", 28, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, dd) && memcmp(out[0]->data, want, sizeof(want)) == 0,
			  "spacetodepth %s: %s", mode, err);
		ie_tensor_destroy(&out[0]);
	}

	/* int8, DCR by default (opset 1 has no mode) */
	{
		int64_t		di[4] = {1, 4, 1, 1},
					dio[4] = {1, 1, 2, 2};
		int8_t		iv[4] = {1, -2, 3, -4};
		ie_tensor  *I = typed_tensor(IE_INT8, 4, di, iv);

		in[0] = I;
		a[0] = attr_int("blocksize", 2);
		CHECK(run_op("DepthToSpace", 1, 1, in, 1, a, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, dio) && out[0]->dtype == IE_INT8 &&
			  memcmp(out[0]->data, iv, sizeof(iv)) == 0, "depthtospace int8: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&I);
	}

	/* errors */
	a[0] = attr_int("blocksize", 2);
	in[0] = X6;
	CHECK(run_op("DepthToSpace", 13, 1, in, 1, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "channels 6 are not a multiple of blocksize^2") != NULL,
		  "depthtospace 6 channels, blocksize 2: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = XH;
	CHECK(run_op("SpaceToDepth", 13, 1, in, 1, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "not multiples of blocksize 2") != NULL,
		  "spacetodepth height 3, blocksize 2: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = X3;
	CHECK(run_op("DepthToSpace", 13, 1, in, 1, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "rank 4") != NULL, "depthtospace rank 3: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = XD;
	a[0] = attr_int("blocksize", 0);
	CHECK(run_op("DepthToSpace", 13, 1, in, 1, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "blocksize must be positive") != NULL, "depthtospace blocksize 0: %s", err);
	ie_tensor_destroy(&out[0]);
	a[0] = attr_int("blocksize", 2);
	a[1] = attr_str("mode", "RDC");
	CHECK(run_op("DepthToSpace", 13, 1, in, 2, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "mode \"RDC\" is not supported") != NULL, "depthtospace mode RDC: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&XD);
	ie_tensor_destroy(&XS);
	ie_tensor_destroy(&X6);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&XH);
}

/*
 * LpNormalization: p 2 along axis -1 on rows of norm 5 and 0 (zeros stay
 * zeros), p 1 along axis 0 (sums of |x| of 4) in float and double, all
 * values exact; p 3, axis 2 of a rank-2 input and int32 refused.
 */
static void
test_lpnorm(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d[2] = {2, 3};
	float		xv[6] = {3, 4, 0, 0, 0, 0},
				yv[6] = {1, -2, 3, -3, 2, 1};
	double		ydv[6] = {1, -2, 3, -3, 2, 1},
				want2[6] = {0.6, 0.8, 0, 0, 0, 0},
				want1[6] = {0.25, -0.5, 0.75, -0.75, 0.5, 0.25};
	int32_t		iv[6] = {0};
	ie_tensor  *X = tu_float_tensor(2, d, xv),
			   *Y = tu_float_tensor(2, d, yv),
			   *YD = typed_tensor(IE_DOUBLE, 2, d, ydv),
			   *I = typed_tensor(IE_INT32, 2, d, iv);
	const ie_tensor *in[1] = {X};
	ie_attr		a[2];

	CHECK(run_op("LpNormalization", 1, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, d, want2, 1e-7), "lpnorm p 2: %s", err);
	ie_tensor_destroy(&out[0]);
	a[0] = attr_int("p", 1);
	a[1] = attr_int("axis", 0);
	in[0] = Y;
	CHECK(run_op("LpNormalization", 22, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, d, want1, 0), "lpnorm p 1 axis 0: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = YD;
	CHECK(run_op("LpNormalization", 1, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_DOUBLE, 2, d, want1, 0), "lpnorm double: %s", err);
	ie_tensor_destroy(&out[0]);
	a[0] = attr_int("p", 3);
	CHECK(run_op("LpNormalization", 22, 1, in, 1, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "p must be 1 or 2") != NULL, "lpnorm p 3: %s", err);
	ie_tensor_destroy(&out[0]);
	a[1] = attr_int("axis", 2);
	CHECK(run_op("LpNormalization", 22, 1, in, 1, a + 1, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 2 is out of range") != NULL, "lpnorm axis 2: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = I;
	CHECK(run_op("LpNormalization", 22, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "element type int32 is not supported") != NULL, "lpnorm int32: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&Y);
	ie_tensor_destroy(&YD);
	ie_tensor_destroy(&I);
}

/*
 * LpPool against a naive loop over the windows: 2-D [1, 2, 3, 4] with a
 * 2x2 kernel, stride 2 x 1, pads 1 on every side (windows over the
 * padding), p 2 and 3 (opset 18) and p 1.0 as LpPool-1's float; a
 * non-positive p refused.
 */
static void
test_lppool(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[4] = {1, 2, 3, 4},
				dy[4] = {1, 2, 2, 5},
				k[2] = {2, 2},
				st[2] = {2, 1},
				pads[4] = {1, 1, 1, 1};
	float		xv[24];
	double		want[20];
	ie_tensor  *X;
	const ie_tensor *in[1];
	ie_attr		a[4];

	for (int i = 0; i < 24; i++)
		xv[i] = (float) ((i * 7) % 11) - 5.0f;
	X = tu_float_tensor(4, dx, xv);
	in[0] = X;
	a[0] = attr_ints("kernel_shape", 2, k);
	a[1] = attr_ints("strides", 2, st);
	a[2] = attr_ints("pads", 4, pads);
	for (int pi = 1; pi <= 3; pi++)
	{
		for (int c = 0; c < 2; c++)
			for (int oy = 0; oy < 2; oy++)
				for (int ox = 0; ox < 5; ox++)
				{
					double		s = 0;

					for (int ky = 0; ky < 2; ky++)
						for (int kx = 0; kx < 2; kx++)
						{
							int			iy = oy * 2 - 1 + ky,
										ix = ox - 1 + kx;

							if (iy >= 0 && iy < 3 && ix >= 0 && ix < 4)
								s += pow(fabs(xv[(c * 3 + iy) * 4 + ix]), pi);
						}
					want[(c * 2 + oy) * 5 + ox] = pow(s, 1.0 / pi);
				}
		if (pi == 1)
			a[3] = (ie_attr) {.name = "p", .type = IE_ATTR_FLOAT, .f = 1.0f};
		else
			a[3] = attr_int("p", pi);
		CHECK(run_op("LpPool", pi == 1 ? 1 : 18, 1, in, 4, a, 1, out, err, sizeof(err)) == 0 &&
			  values_near(out[0], IE_FLOAT, 4, dy, want, 1e-5), "lppool p %d: %s", pi, err);
		ie_tensor_destroy(&out[0]);
	}
	a[3] = attr_int("p", 0);
	CHECK(run_op("LpPool", 18, 1, in, 4, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "p must be a positive number") != NULL, "lppool p 0: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
}

/*
 * Softmax over attention-style rows: masked scores (-inf, -FLT_MAX, a
 * score 90 below the maximum) come out exactly 0, the rest as a double
 * reference; a row of 7 (not a multiple of the vector width) too.
 */
static void
test_softmax_masked(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d[2] = {2, 7};
	float		v[14] = {1, 2, -INFINITY, 3, -FLT_MAX, 0.5f, -87.5f,
		0, 0, 0, 0, 0, 0, 0};
	ie_tensor  *X = tu_float_tensor(2, d, v);
	const ie_tensor *in[1] = {X};
	double		sum = 0,
				worst = 0;
	const float *y;

	CHECK(run_op("Softmax", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0,
		  "softmax masked: %s", err);
	if (out[0] == NULL)
		goto done;
	y = out[0]->data;
	CHECK(y[2] == 0 && y[4] == 0 && y[6] == 0, "softmax masked zeros: %g %g %g",
		  y[2], y[4], y[6]);
	for (int k = 0; k < 7; k++)
		if (k != 2 && k != 4 && k != 6)
			sum += exp(v[k] - 3.0);
	for (int k = 0; k < 7; k++)
		if (k != 2 && k != 4 && k != 6)
			worst = fmax(worst, fabs(y[k] - exp(v[k] - 3.0) / sum));
	for (int k = 7; k < 14; k++)
		worst = fmax(worst, fabs(y[k] - 1.0 / 7));
	CHECK(worst < 1e-7, "softmax masked values: max abs diff %g", worst);
	ie_tensor_destroy(&out[0]);
done:
	ie_tensor_destroy(&X);
}

/* Cast to and from bool: x != 0 gives 1, bool to float gives 0 or 1. */
static void
test_cast_bool(void)
{
	char		err[256];
	ie_tensor  *out[1],
			   *back[1];
	int64_t		d4[1] = {4};
	float		v[4] = {0, -0.0f, 0.5f, -3};
	ie_tensor  *X = tu_float_tensor(1, d4, v);
	const ie_tensor *in[1] = {X};
	ie_attr		tb[1] = {attr_int("to", IE_BOOL)};
	ie_attr		ti[1] = {attr_int("to", IE_INT64)};

	CHECK(run_op("Cast", 13, 1, in, 1, tb, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_BOOL && ((uint8_t *) out[0]->data)[0] == 0 &&
		  ((uint8_t *) out[0]->data)[1] == 0 && ((uint8_t *) out[0]->data)[2] == 1 &&
		  ((uint8_t *) out[0]->data)[3] == 1, "cast float to bool: %s", err);
	if (out[0] != NULL)
	{
		const ie_tensor *bin[1] = {out[0]};

		CHECK(run_op("Cast", 13, 1, bin, 1, ti, 1, back, err, sizeof(err)) == 0 &&
			  back[0]->dtype == IE_INT64 && ((int64_t *) back[0]->data)[0] == 0 &&
			  ((int64_t *) back[0]->data)[3] == 1, "cast bool to int64: %s", err);
		ie_tensor_destroy(&back[0]);
	}
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&X);
}

/*
 * Cast over more elements than one task takes (65536), on 1 and 3
 * threads, with a short last task: int32 to float (a quantized model's
 * rescale) and float to int8 (saturating, NaN to 0), every element against
 * the plain conversion.
 */
static void
test_cast_parallel(void)
{
	char		err[256];
	int64_t		n = 3 * 65536 + 7;
	int64_t		d[1] = {n};
	ie_tensor  *I = ie_tensor_new(IE_INT32, 1, d),
			   *F = ie_tensor_new(IE_FLOAT, 1, d);
	ie_attr		tf[1] = {attr_int("to", IE_FLOAT)};
	ie_attr		t8[1] = {attr_int("to", IE_INT8)};

	for (int64_t i = 0; i < n; i++)
	{
		((int32_t *) I->data)[i] = (int32_t) ((i * 2654435761u) ^ 0x5bd1e995u);
		((float *) F->data)[i] = i % 1001 == 0 ? NAN : (float) ((i % 613) - 306) * 0.75f;
	}
	for (int threads = 1; threads <= 3; threads += 2)
	{
		const ie_tensor *ii[1] = {I},
				   *fi[1] = {F};
		ie_tensor  *o[1];
		int64_t		bad = 0;

		CHECK(run_op_threads("Cast", 13, 1, ii, 1, tf, 1, o, err, sizeof(err), threads) == 0 &&
			  o[0]->dtype == IE_FLOAT && ie_tensor_numel(o[0]) == n,
			  "cast int32 to float, %d threads: %s", threads, err);
		for (int64_t i = 0; o[0] != NULL && i < n; i++)
			bad += ((float *) o[0]->data)[i] != (float) ((int32_t *) I->data)[i];
		CHECK(bad == 0, "cast int32 to float, %d threads: %lld values differ",
			  threads, (long long) bad);
		ie_tensor_destroy(&o[0]);
		bad = 0;
		CHECK(run_op_threads("Cast", 13, 1, fi, 1, t8, 1, o, err, sizeof(err), threads) == 0 &&
			  o[0]->dtype == IE_INT8, "cast float to int8, %d threads: %s", threads, err);
		for (int64_t i = 0; o[0] != NULL && i < n; i++)
		{
			float		v = ((float *) F->data)[i];
			int8_t		want = isnan(v) ? 0 : v <= -128 ? -128 : v >= 127 ? 127 : (int8_t) v;

			bad += ((int8_t *) o[0]->data)[i] != want;
		}
		CHECK(bad == 0, "cast float to int8, %d threads: %lld values differ",
			  threads, (long long) bad);
		ie_tensor_destroy(&o[0]);
	}
	ie_tensor_destroy(&I);
	ie_tensor_destroy(&F);
}

/*
 * Mod's and Div's edges the node tests leave out: INT64_MIN mod -1 gives 0
 * (no trap), fmod 0 takes the divisor's sign and fmod 1 the dividend's, a
 * float Mod without fmod 1 is refused as the spec requires, and an integer
 * divisor with a zero fails the node as in ONNX Runtime ("Integer division
 * by zero"), where a float one gives an infinity.
 */
static void
test_mod_edges(void)
{
	char		err[256];
	int64_t		d[1] = {4};
	ie_tensor  *A = ie_tensor_new(IE_INT64, 1, d),
			   *B = ie_tensor_new(IE_INT64, 1, d),
			   *F = tu_float_tensor(1, d, (float[]) {5.5f, -5.5f, 1, 2});
	const ie_tensor *in[2] = {A, B},
			   *fin[2] = {F, F};
	ie_tensor  *out[1];
	ie_attr		fmod1[1] = {attr_int("fmod", 1)};
	int64_t    *a = A->data,
			   *b = B->data,
				want_mod[4] = {0, 0, 2, -2},
				want_fmod[4] = {0, 0, -1, 1};

	a[0] = 7;
	b[0] = 1;
	a[1] = INT64_MIN;
	b[1] = -1;
	a[2] = -7;
	b[2] = 3;
	a[3] = 7;
	b[3] = -3;
	CHECK(run_op("Mod", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  memcmp(out[0]->data, want_mod, sizeof(want_mod)) == 0,
		  "Mod fmod 0: 7 mod 1, MIN mod -1, -7 mod 3, 7 mod -3 = 0, 0, 2, -2: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Mod", 13, 2, in, 1, fmod1, 1, out, err, sizeof(err)) == 0 &&
		  memcmp(out[0]->data, want_fmod, sizeof(want_fmod)) == 0,
		  "Mod fmod 1: 0, 0, -1, 1: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("Mod", 13, 2, fin, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "fmod must be 1 for float inputs") != NULL, "float Mod without fmod: %s", err);
	ie_tensor_destroy(&out[0]);

	/* a zero divisor, the third element */
	b[2] = 0;
	CHECK(run_op("Mod", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 && out[0] == NULL &&
		  strstr(err, "integer modulo by zero (element 2 of the divisor, int64)") != NULL,
		  "Mod by zero: %s", err);
	CHECK(run_op("Mod", 13, 2, in, 1, fmod1, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "integer modulo by zero (element 2") != NULL, "fmod by zero: %s", err);
	CHECK(run_op("Div", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "integer division by zero (element 2 of the divisor, int64)") != NULL,
		  "Div by zero: %s", err);
	b[2] = 3;
	CHECK(run_op("Div", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ((int64_t *) out[0]->data)[0] == 7 && ((int64_t *) out[0]->data)[1] == INT64_MIN &&
		  ((int64_t *) out[0]->data)[2] == -2 && ((int64_t *) out[0]->data)[3] == -2,
		  "Div: 7 / 1, MIN / -1 (wraps), -7 / 3, 7 / -3 = 7, MIN, -2, -2: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		ie_tensor  *Z = tu_float_tensor(1, d, (float[]) {0, 0, 0, 0});
		const ie_tensor *zin[2] = {F, Z};

		CHECK(run_op("Div", 14, 2, zin, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  isinf(((float *) out[0]->data)[0]) && ((float *) out[0]->data)[0] > 0 &&
			  isinf(((float *) out[0]->data)[1]) && ((float *) out[0]->data)[1] < 0,
			  "float Div by zero: +inf, -inf: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&Z);
	}
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&F);
}

/*
 * Einsum (ops_einsum.c): runs equation on inputs in[0..n) at opset 12;
 * the operator's return code, its output in *out, its message in err.
 */
static int
run_einsum(const char *equation, int n, const ie_tensor *const *in,
		   ie_tensor **out, char *err, size_t errlen)
{
	ie_attr		a[1] = {attr_str("equation", equation)};

	return run_op("Einsum", 12, n, in, 1, a, 1, out, err, errlen);
}

/* Whether float tensor t has shape dims[0..nd) and exactly the values want. */
static bool
float_tensor_is(const ie_tensor *t, int nd, const int64_t *dims, const float *want)
{
	if (t == NULL || t->dtype != IE_FLOAT || t->ndim != nd)
		return false;
	for (int i = 0; i < nd; i++)
		if (t->dims[i] != dims[i])
			return false;
	return memcmp(t->data, want, t->nbytes) == 0;
}

/* ---- operator changes of opsets 18 to 28: edges the node tests miss ---- */

/* A 1-D int64 tensor of n values. */
static ie_tensor *
i64_tensor(int n, const int64_t *vals)
{
	return typed_tensor(IE_INT64, 1, (int64_t[]) {n}, vals);
}

/*
 * Pad-18's axes input and Pad-19's wrap mode: pads for the named axes
 * only (int32 axes, negative ones), duplicate and out-of-range axes and a
 * pads count that does not match refused; wrap with pads larger than the
 * dimension (values from onnx.reference's Pad, numpy.pad), wrap after a
 * negative pad (what is left wraps, ONNX Runtime's result), wrap refused
 * below opset 19 and on a dimension cut to nothing.
 */
static void
test_pad_axes_wrap(void)
{
	char		err[256];
	ie_tensor  *out[1];
	ie_tensor  *X = tu_float_tensor(2, (int64_t[]) {2, 3}, (float[]) {1, 2, 3, 4, 5, 6});
	ie_tensor  *V = tu_float_tensor(0, NULL, (float[]) {9});
	ie_tensor  *P = i64_tensor(2, (int64_t[]) {1, 2});
	ie_tensor  *A32 = typed_tensor(IE_INT32, 1, (int64_t[]) {1}, (int32_t[]) {-1});
	ie_tensor  *Adup = i64_tensor(2, (int64_t[]) {0, -2});
	ie_tensor  *Abad = i64_tensor(1, (int64_t[]) {2});
	ie_tensor  *P4 = i64_tensor(4, (int64_t[]) {1, 1, 1, 1});
	ie_attr		wrap[1] = {attr_str("mode", "wrap")};
	float		want_axes[12] = {9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9};

	{
		const ie_tensor *in[4] = {X, P, V, A32};

		CHECK(run_op("Pad", 18, 4, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  float_tensor_is(out[0], 2, (int64_t[]) {2, 6}, want_axes),
			  "Pad-18 axes [-1] (int32), pads [1, 2], value 9: %s", err);
		ie_tensor_destroy(&out[0]);
	}
	{
		const ie_tensor *in[4] = {X, P4, NULL, Adup};

		CHECK(run_op("Pad", 18, 4, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  out[0] == NULL &&
			  strstr(err, "axis -2 appears twice in axes (as dimension 0)") != NULL,
			  "Pad axes [0, -2] refused: %s", err);
		in[1] = P;
		in[3] = Abad;
		CHECK(run_op("Pad", 18, 4, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "axis 2 is out of range for rank 2") != NULL,
			  "Pad axes [2] refused: %s", err);
		in[1] = P4;
		in[3] = A32;
		CHECK(run_op("Pad", 18, 4, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "pads has 4 values for 1 axes (2 x the axes are needed)") != NULL,
			  "Pad 4 pads for 1 axis refused: %s", err);
	}
	{
		ie_tensor  *X1 = tu_float_tensor(1, (int64_t[]) {3}, (float[]) {1, 2, 3});
		ie_tensor  *Pw = i64_tensor(2, (int64_t[]) {7, 5});
		const ie_tensor *in[2] = {X1, Pw};
		float		want[15] = {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2};

		CHECK(run_op("Pad", 19, 2, in, 1, wrap, 1, out, err, sizeof(err)) == 0 &&
			  float_tensor_is(out[0], 1, (int64_t[]) {15}, want),
			  "Pad wrap [1, 2, 3] by 7 and 5: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("Pad", 18, 2, in, 1, wrap, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "mode \"wrap\" needs opset 19 or later (the model imports 18)") != NULL,
			  "Pad wrap at opset 18 refused: %s", err);
		ie_tensor_destroy(&X1);
		ie_tensor_destroy(&Pw);
	}
	{
		ie_tensor  *X2 = tu_float_tensor(2, (int64_t[]) {2, 2}, (float[]) {1, 2, 3, 4});
		ie_tensor  *Pw = i64_tensor(2, (int64_t[]) {4, 2});
		ie_tensor  *Ax = i64_tensor(1, (int64_t[]) {-1});
		const ie_tensor *in[4] = {X2, Pw, NULL, Ax};
		float		want[16] = {1, 2, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4};

		CHECK(run_op("Pad", 19, 4, in, 1, wrap, 1, out, err, sizeof(err)) == 0 &&
			  float_tensor_is(out[0], 2, (int64_t[]) {2, 8}, want),
			  "Pad wrap axes [-1] by 4 and 2: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X2);
		ie_tensor_destroy(&Pw);
		ie_tensor_destroy(&Ax);
	}
	{
		ie_tensor  *X1 = tu_float_tensor(1, (int64_t[]) {4}, (float[]) {1, 2, 3, 4});
		ie_tensor  *Pw = i64_tensor(2, (int64_t[]) {-1, 2});
		ie_tensor  *Pcut = i64_tensor(2, (int64_t[]) {-4, 1});
		const ie_tensor *in[2] = {X1, Pw};
		float		want[5] = {2, 3, 4, 2, 3};

		CHECK(run_op("Pad", 19, 2, in, 1, wrap, 1, out, err, sizeof(err)) == 0 &&
			  float_tensor_is(out[0], 1, (int64_t[]) {5}, want),
			  "Pad wrap [1, 2, 3, 4] by -1 and 2 wraps [2, 3, 4]: %s", err);
		ie_tensor_destroy(&out[0]);
		in[1] = Pcut;
		CHECK(run_op("Pad", 19, 2, in, 1, wrap, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "mode wrap cannot pad the empty dimension 0") != NULL,
			  "Pad wrap of a dimension cut to nothing refused: %s", err);
		ie_tensor_destroy(&X1);
		ie_tensor_destroy(&Pw);
		ie_tensor_destroy(&Pcut);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&P);
	ie_tensor_destroy(&A32);
	ie_tensor_destroy(&Adup);
	ie_tensor_destroy(&Abad);
	ie_tensor_destroy(&P4);
}

/*
 * Split-18: uneven pieces (ceil, the last smaller) with num_outputs and
 * without it, more outputs than elements where the rule still gives
 * sizes >= 0 ([1, 1, 0], as ONNX's shape inference), and the refusals:
 * a last piece below zero, num_outputs not the node's output count, both
 * split and num_outputs, an uneven split below opset 18.
 */
static void
test_split_num_outputs(void)
{
	char		err[256];
	ie_tensor  *out[4];
	ie_tensor  *X7 = tu_float_tensor(1, (int64_t[]) {7}, (float[]) {1, 2, 3, 4, 5, 6, 7});
	ie_tensor  *X2 = tu_float_tensor(1, (int64_t[]) {2}, (float[]) {1, 2});
	ie_tensor  *X5 = tu_float_tensor(1, (int64_t[]) {5}, (float[]) {1, 2, 3, 4, 5});
	ie_tensor  *S = i64_tensor(2, (int64_t[]) {3, 4});
	ie_attr		n4[1] = {attr_int("num_outputs", 4)};
	ie_attr		n3[1] = {attr_int("num_outputs", 3)};
	ie_attr		n2[1] = {attr_int("num_outputs", 2)};
	const ie_tensor *in7[2] = {X7, S},
			   *in2[1] = {X2},
			   *in5[1] = {X5};

	CHECK(run_op("Split", 18, 1, in7, 1, n4, 4, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {2}, (float[]) {1, 2}) &&
		  float_tensor_is(out[2], 1, (int64_t[]) {2}, (float[]) {5, 6}) &&
		  float_tensor_is(out[3], 1, (int64_t[]) {1}, (float[]) {7}),
		  "Split-18 of 7 into num_outputs 4: 2, 2, 2, 1: %s", err);
	for (int i = 0; i < 4; i++)
		ie_tensor_destroy(&out[i]);
	CHECK(run_op("Split", 18, 1, in7, 0, NULL, 4, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[3], 1, (int64_t[]) {1}, (float[]) {7}),
		  "Split-18 of 7 into 4 outputs, no num_outputs: the same: %s", err);
	for (int i = 0; i < 4; i++)
		ie_tensor_destroy(&out[i]);
	CHECK(run_op("Split", 18, 1, in2, 1, n3, 3, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {1}, (float[]) {1}) &&
		  float_tensor_is(out[1], 1, (int64_t[]) {1}, (float[]) {2}) &&
		  out[2] != NULL && out[2]->ndim == 1 && out[2]->dims[0] == 0,
		  "Split-18 of 2 into num_outputs 3: 1, 1, 0: %s", err);
	for (int i = 0; i < 3; i++)
		ie_tensor_destroy(&out[i]);
	CHECK(run_op("Split", 18, 1, in5, 1, n4, 4, out, err, sizeof(err)) == -1 &&
		  strstr(err, "dimension 5 of axis 0 does not split into 4 parts: 3 parts of 2 "
				 "leave less than nothing for the last") != NULL,
		  "Split-18 of 5 into num_outputs 4 refused: %s", err);
	CHECK(run_op("Split", 18, 1, in2, 1, n2, 3, out, err, sizeof(err)) == -1 &&
		  strstr(err, "num_outputs is 2 but the node has 3 outputs") != NULL,
		  "Split-18 num_outputs 2 with 3 outputs refused: %s", err);
	CHECK(run_op("Split", 18, 2, in7, 1, n2, 2, out, err, sizeof(err)) == -1 &&
		  strstr(err, "has both input 'split' and attribute num_outputs") != NULL,
		  "Split-18 with split and num_outputs refused: %s", err);
	CHECK(run_op("Split", 13, 1, in7, 0, NULL, 4, out, err, sizeof(err)) == -1 &&
		  strstr(err, "dimension 7 of axis 0 does not split into 4 equal parts") != NULL,
		  "Split-13 of 7 into 4 refused: %s", err);
	for (int i = 0; i < 4; i++)
		ie_tensor_destroy(&out[i]);
	ie_tensor_destroy(&X7);
	ie_tensor_destroy(&X2);
	ie_tensor_destroy(&X5);
	ie_tensor_destroy(&S);
}

/*
 * ScatterND-18's max and min: a NaN on either side wins (numpy.maximum,
 * the reference), int64 too, a repeated index folds both updates; refused
 * below opset 18.
 */
static void
test_scatter_nd_max_min(void)
{
	char		err[256];
	ie_tensor  *out[1];
	ie_tensor  *D = tu_float_tensor(1, (int64_t[]) {4}, (float[]) {1, NAN, 3, 4});
	ie_tensor  *I = typed_tensor(IE_INT64, 2, (int64_t[]) {4, 1}, (int64_t[]) {0, 1, 2, 0});
	ie_tensor  *U = tu_float_tensor(1, (int64_t[]) {4}, (float[]) {5, 0, NAN, -2});
	ie_tensor  *Di = typed_tensor(IE_INT64, 1, (int64_t[]) {4}, (int64_t[]) {1, 2, 3, 4});
	ie_tensor  *Ui = typed_tensor(IE_INT64, 1, (int64_t[]) {4}, (int64_t[]) {5, -7, 9, 8});
	const ie_tensor *in[3] = {D, I, U},
			   *ini[3] = {Di, I, Ui};
	ie_attr		rmax[1] = {attr_str("reduction", "max")};
	ie_attr		rmin[1] = {attr_str("reduction", "min")};
	const float *o;
	const int64_t *oi;

	CHECK(run_op("ScatterND", 18, 3, in, 1, rmax, 1, out, err, sizeof(err)) == 0 &&
		  (o = out[0]->data) != NULL && o[0] == 5 && isnan(o[1]) && isnan(o[2]) && o[3] == 4,
		  "ScatterND max: 5, NaN, NaN, 4: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ScatterND", 18, 3, in, 1, rmin, 1, out, err, sizeof(err)) == 0 &&
		  (o = out[0]->data) != NULL && o[0] == -2 && isnan(o[1]) && isnan(o[2]) && o[3] == 4,
		  "ScatterND min: -2, NaN, NaN, 4: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ScatterND", 18, 3, ini, 1, rmax, 1, out, err, sizeof(err)) == 0 &&
		  (oi = out[0]->data) != NULL && oi[0] == 8 && oi[1] == 2 && oi[2] == 9 && oi[3] == 4,
		  "ScatterND max int64: 8, 2, 9, 4: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ScatterND", 18, 3, ini, 1, rmin, 1, out, err, sizeof(err)) == 0 &&
		  (oi = out[0]->data) != NULL && oi[0] == 1 && oi[1] == -7 && oi[2] == 3 && oi[3] == 4,
		  "ScatterND min int64: 1, -7, 3, 4: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ScatterND", 16, 3, in, 1, rmax, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "reduction \"max\" needs opset 18 or later (the model imports 16)") != NULL,
		  "ScatterND max at opset 16 refused: %s", err);
	ie_tensor_destroy(&D);
	ie_tensor_destroy(&I);
	ie_tensor_destroy(&U);
	ie_tensor_destroy(&Di);
	ie_tensor_destroy(&Ui);
}

/*
 * ReduceMax-20 / ReduceMin-20 on bool: any and all over an axis, keepdims
 * 0; over an empty axis max is false and min true (onnx.reference); bool
 * refused at opset 18, and by the other reductions.
 */
static void
test_reduce_bool(void)
{
	char		err[256];
	ie_tensor  *out[1];
	ie_tensor  *B = typed_tensor(IE_BOOL, 2, (int64_t[]) {3, 2}, (uint8_t[]) {1, 1, 1, 0, 0, 0});
	ie_tensor  *E = ie_tensor_new(IE_BOOL, 2, (int64_t[]) {2, 0});
	const ie_tensor *in[1] = {B},
			   *ine[1] = {E};
	ie_attr		a[2] = {attr_ints("axes", 1, (int64_t[]) {1}), attr_int("keepdims", 0)};
	const uint8_t *o;

	CHECK(run_op("ReduceMax", 13, 1, in, 2, a, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "input type bool needs opset 20 or later (the model imports 13)") != NULL,
		  "ReduceMax bool at opset 13 refused: %s", err);
	{
		ie_tensor  *Ax = i64_tensor(1, (int64_t[]) {1});
		const ie_tensor *in2[2] = {B, Ax};

		CHECK(run_op("ReduceMax", 18, 2, in2, 1, &a[1], 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "input type bool needs opset 20 or later (the model imports 18)") != NULL,
			  "ReduceMax bool at opset 18 refused: %s", err);
		CHECK(run_op("ReduceMax", 20, 2, in2, 1, &a[1], 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_BOOL && shape_is(out[0], 1, (int64_t[]) {3}) &&
			  (o = out[0]->data) != NULL && o[0] == 1 && o[1] == 1 && o[2] == 0,
			  "ReduceMax-20 bool over axis 1: 1, 1, 0: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ReduceMin", 20, 2, in2, 1, &a[1], 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_BOOL && (o = out[0]->data) != NULL &&
			  o[0] == 1 && o[1] == 0 && o[2] == 0,
			  "ReduceMin-20 bool over axis 1: 1, 0, 0: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ReduceSum", 20, 2, in2, 1, &a[1], 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "unsupported input type bool (only float, double, int32, int64, uint32, uint64)") != NULL,
			  "ReduceSum bool refused: %s", err);
		ie_tensor_destroy(&Ax);
	}
	CHECK(run_op("ReduceMax", 20, 1, ine, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_BOOL && shape_is(out[0], 2, (int64_t[]) {1, 1}) &&
		  ((uint8_t *) out[0]->data)[0] == 0,
		  "ReduceMax-20 of an empty bool tensor: false: %s", err);
	ie_tensor_destroy(&out[0]);
	CHECK(run_op("ReduceMin", 20, 1, ine, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_BOOL && ((uint8_t *) out[0]->data)[0] == 1,
		  "ReduceMin-20 of an empty bool tensor: true: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&E);
}

/*
 * Integer reductions: the inputs of test_reduce_int, as int64 values
 * converted (wrapped) to each case's type.
 */
typedef enum reduce_int_input
{
	RI_X,						/* [2, 3, 2], negative values */
	RI_W32,						/* [3, 2], int32's extremes: wraparound */
	RI_W64,						/* [3, 2], int64's extremes */
	RI_E,						/* [2, 0], empty */
	RI_V,						/* [3], squares past INT32_MAX */
	RI_V64						/* [3], 2^62 three times */
} reduce_int_input;

static const struct
{
	int			ndim;
	int64_t		dims[3];
	int64_t		vals[12];
}			reduce_int_inputs[] = {
	[RI_X] = {3, {2, 3, 2}, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	[RI_W32] = {2, {3, 2}, {INT32_MAX, 1, 65536, 65536, INT32_MIN, -1}},
	[RI_W64] = {2, {3, 2}, {INT64_MAX, 2, INT64_C(1) << 32, (INT64_C(1) << 32) + 1, INT64_MIN, -1}},
	[RI_E] = {2, {2, 0}, {0}},
	[RI_V] = {1, {3}, {50000, 50000, 0}},
	[RI_V64] = {1, {3}, {INT64_C(1) << 62, INT64_C(1) << 62, INT64_C(1) << 62}},
};

/*
 * The cases: op, opset, type, input, the number of axes (-1: none given,
 * so all; 0 with noop_with_empty_axes: none reduced) and the axes (an
 * input from opset 18, ReduceSum 13, else the attribute), keepdims, noop,
 * the output's rank, dims, element count and values (as int64, uint64
 * ones by their bits).  The values are ONNX's reference implementation's
 * (onnx.reference 1.23.2, numpy), its int64 ReduceSumSquare of int32
 * squares wrapped to int32 (the schema's output type).
 */
static const struct
{
	const char *op;
	int			opset;
	ie_dtype	dt;
	reduce_int_input in;
	int			naxes;
	int64_t		axes[3];
	int			keepdims;
	int			noop;
	int			ond;
	int64_t		odims[3];
	int64_t		n;
	int64_t		want[12];
}			reduce_int_cases[] = {
	{"ReduceSum", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {16}},
	{"ReduceSum", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-9, 14, 16, -5}},
	{"ReduceSum", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-6, 13, 9}},
	{"ReduceSum", 11, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-5, 7, 3, -1, 6, 6}},
	{"ReduceSum", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceSum", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceMax", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {9}},
	{"ReduceMax", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {3, 8, 9, 0}},
	{"ReduceMax", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {2, 6, 9}},
	{"ReduceMax", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {2, 4, 8, 1, 6, 9}},
	{"ReduceMax", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMax", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {-2147483648, -2147483648}},
	{"ReduceMin", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {-7}},
	{"ReduceMin", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-7, 2, 1, -3}},
	{"ReduceMin", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-7, 0, -5}},
	{"ReduceMin", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-7, 3, -5, -2, 0, -3}},
	{"ReduceMin", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMin", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {2147483647, 2147483647}},
	{"ReduceProd", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {0}},
	{"ReduceProd", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {105, 64, 54, 0}},
	{"ReduceProd", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {28, 0, 1080}},
	{"ReduceProd", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-14, 12, -40, -2, 0, -27}},
	{"ReduceProd", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceProd", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {1, 1}},
	{"ReduceMean", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {1}},
	{"ReduceMean", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-3, 4, 5, -1}},
	{"ReduceMean", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-1, 3, 2}},
	{"ReduceMean", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-2, 3, 1, 0, 3, 3}},
	{"ReduceMean", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMean", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceL1", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {50}},
	{"ReduceL1", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {15, 14, 16, 5}},
	{"ReduceL1", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {12, 13, 25}},
	{"ReduceL1", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {9, 7, 13, 3, 6, 12}},
	{"ReduceL1", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {7, 2, 3, 4, 5, 8, 1, 2, 6, 0, 9, 3}},
	{"ReduceL1", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceL2", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {17}},
	{"ReduceL2", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {9, 9, 10, 3}},
	{"ReduceL2", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {7, 7, 13}},
	{"ReduceL2", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {7, 5, 9, 2, 6, 9}},
	{"ReduceL2", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {7, 2, 3, 4, 5, 8, 1, 2, 6, 0, 9, 3}},
	{"ReduceL2", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceSumSquare", 18, IE_INT32, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {298}},
	{"ReduceSumSquare", 18, IE_INT32, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {83, 84, 118, 13}},
	{"ReduceSumSquare", 18, IE_INT32, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {58, 61, 179}},
	{"ReduceSumSquare", 13, IE_INT32, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {53, 25, 89, 5, 36, 90}},
	{"ReduceSumSquare", 18, IE_INT32, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {49, 4, 9, 16, 25, 64, 1, 4, 36, 0, 81, 9}},
	{"ReduceSumSquare", 18, IE_INT32, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceSum", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {65535, 65536}},
	{"ReduceMax", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {2147483647, 65536}},
	{"ReduceMin", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {-2147483648, -1}},
	{"ReduceProd", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {0, -65536}},
	{"ReduceMean", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {21845, 21845}},
	{"ReduceL1", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {65535, 65538}},
	{"ReduceL2", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {1, 1}},
	{"ReduceSumSquare", 18, IE_INT32, RI_W32, 1, {0}, 0, 0, 1, {2}, 2, {1, 2}},
	{"ReduceSum", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {16}},
	{"ReduceSum", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-9, 14, 16, -5}},
	{"ReduceSum", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-6, 13, 9}},
	{"ReduceSum", 11, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-5, 7, 3, -1, 6, 6}},
	{"ReduceSum", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceSum", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceMax", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {9}},
	{"ReduceMax", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {3, 8, 9, 0}},
	{"ReduceMax", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {2, 6, 9}},
	{"ReduceMax", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {2, 4, 8, 1, 6, 9}},
	{"ReduceMax", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMax", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {INT64_MIN, INT64_MIN}},
	{"ReduceMin", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {-7}},
	{"ReduceMin", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-7, 2, 1, -3}},
	{"ReduceMin", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-7, 0, -5}},
	{"ReduceMin", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-7, 3, -5, -2, 0, -3}},
	{"ReduceMin", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMin", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {9223372036854775807, 9223372036854775807}},
	{"ReduceProd", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {0}},
	{"ReduceProd", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {105, 64, 54, 0}},
	{"ReduceProd", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {28, 0, 1080}},
	{"ReduceProd", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-14, 12, -40, -2, 0, -27}},
	{"ReduceProd", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceProd", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {1, 1}},
	{"ReduceMean", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {1}},
	{"ReduceMean", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {-3, 4, 5, -1}},
	{"ReduceMean", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {-1, 3, 2}},
	{"ReduceMean", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {-2, 3, 1, 0, 3, 3}},
	{"ReduceMean", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {-7, 2, 3, 4, -5, 8, 1, -2, 6, 0, 9, -3}},
	{"ReduceMean", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceL1", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {50}},
	{"ReduceL1", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {15, 14, 16, 5}},
	{"ReduceL1", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {12, 13, 25}},
	{"ReduceL1", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {9, 7, 13, 3, 6, 12}},
	{"ReduceL1", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {7, 2, 3, 4, 5, 8, 1, 2, 6, 0, 9, 3}},
	{"ReduceL1", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceL2", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {17}},
	{"ReduceL2", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {9, 9, 10, 3}},
	{"ReduceL2", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {7, 7, 13}},
	{"ReduceL2", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {7, 5, 9, 2, 6, 9}},
	{"ReduceL2", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {7, 2, 3, 4, 5, 8, 1, 2, 6, 0, 9, 3}},
	{"ReduceL2", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceSumSquare", 18, IE_INT64, RI_X, -1, {0}, 0, 0, 0, {0}, 1, {298}},
	{"ReduceSumSquare", 18, IE_INT64, RI_X, 1, {1}, 1, 0, 3, {2, 1, 2}, 4, {83, 84, 118, 13}},
	{"ReduceSumSquare", 18, IE_INT64, RI_X, 2, {0, 2}, 0, 0, 1, {3}, 3, {58, 61, 179}},
	{"ReduceSumSquare", 13, IE_INT64, RI_X, 1, {-1}, 1, 0, 3, {2, 3, 1}, 6, {53, 25, 89, 5, 36, 90}},
	{"ReduceSumSquare", 18, IE_INT64, RI_X, 0, {0}, 1, 1, 3, {2, 3, 2}, 12, {49, 4, 9, 16, 25, 64, 1, 4, 36, 0, 81, 9}},
	{"ReduceSumSquare", 18, IE_INT64, RI_E, 1, {1}, 1, 0, 2, {2, 1}, 2, {0, 0}},
	{"ReduceSum", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {4294967295, 4294967298}},
	{"ReduceMax", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {9223372036854775807, 4294967297}},
	{"ReduceMin", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {INT64_MIN, -1}},
	{"ReduceProd", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {0, -8589934594}},
	{"ReduceMean", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {1431655765, 1431655766}},
	{"ReduceL1", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {4294967295, 4294967300}},
	{"ReduceL2", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {1, 92681}},
	{"ReduceSumSquare", 18, IE_INT64, RI_W64, 1, {0}, 0, 0, 1, {2}, 2, {1, 8589934598}},
	{"ReduceL2", 18, IE_INT32, RI_V, -1, {0}, 0, 0, 0, {0}, 1, {-2147483648}},
	{"ReduceMean", 18, IE_INT32, RI_V, -1, {0}, 0, 0, 0, {0}, 1, {33333}},
	{"ReduceSumSquare", 18, IE_INT32, RI_V, -1, {0}, 0, 0, 0, {0}, 1, {705032704}},
	{"ReduceMean", 18, IE_INT64, RI_V64, -1, {0}, 0, 0, 0, {0}, 1, {-1537228672809129216}},
	{"ReduceSum", 18, IE_INT64, RI_V64, -1, {0}, 0, 0, 0, {0}, 1, {-4611686018427387904}},
	{"ReduceSum", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {4294967287, 14, 16, 4294967291}},
	{"ReduceMax", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {4294967291, 8, 9, 4294967294}},
	{"ReduceMin", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {3, 2, 1, 0}},
	{"ReduceProd", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {105, 64, 54, 0}},
	{"ReduceMean", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {1431655762, 4, 5, 1431655763}},
	{"ReduceL1", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {4294967287, 14, 16, 4294967291}},
	{"ReduceL2", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {9, 9, 10, 3}},
	{"ReduceSumSquare", 18, IE_UINT32, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {83, 84, 118, 13}},
	{"ReduceMax", 18, IE_UINT32, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {0, 0}},
	{"ReduceMin", 18, IE_UINT32, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {4294967295, 4294967295}},
	{"ReduceSum", 18, IE_UINT32, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {0, 0}},
	{"ReduceProd", 18, IE_UINT32, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {1, 1}},
	{"ReduceSum", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {-9, 14, 16, -5}},
	{"ReduceMax", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {-5, 8, 9, -2}},
	{"ReduceMin", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {3, 2, 1, 0}},
	{"ReduceProd", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {105, 64, 54, 0}},
	{"ReduceMean", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {6148914691236516864, 4, 5, 6148914691236516864}},
	{"ReduceL1", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {-9, 14, 16, -5}},
	{"ReduceL2", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {9, 9, 10, 3}},
	{"ReduceSumSquare", 18, IE_UINT64, RI_X, 1, {1}, 0, 0, 2, {2, 2}, 4, {83, 84, 118, 13}},
	{"ReduceMax", 18, IE_UINT64, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {0, 0}},
	{"ReduceMin", 18, IE_UINT64, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {-1, -1}},
	{"ReduceSum", 18, IE_UINT64, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {0, 0}},
	{"ReduceProd", 18, IE_UINT64, RI_E, 1, {1}, 0, 0, 1, {2}, 2, {1, 1}},
	{"ReduceMax", 12, IE_INT8, RI_X, 2, {0, 1}, 0, 0, 1, {2}, 2, {9, 8}},
	{"ReduceMax", 18, IE_INT8, RI_E, -1, {0}, 1, 0, 2, {1, 1}, 1, {-128}},
	{"ReduceMin", 12, IE_INT8, RI_X, 2, {0, 1}, 0, 0, 1, {2}, 2, {-7, -3}},
	{"ReduceMin", 18, IE_INT8, RI_E, -1, {0}, 1, 0, 2, {1, 1}, 1, {127}},
	{"ReduceMax", 12, IE_UINT8, RI_X, 2, {0, 1}, 0, 0, 1, {2}, 2, {251, 254}},
	{"ReduceMax", 18, IE_UINT8, RI_E, -1, {0}, 1, 0, 2, {1, 1}, 1, {0}},
	{"ReduceMin", 12, IE_UINT8, RI_X, 2, {0, 1}, 0, 0, 1, {2}, 2, {1, 0}},
	{"ReduceMin", 18, IE_UINT8, RI_E, -1, {0}, 1, 0, 2, {1, 1}, 1, {255}},
};

/* An integer tensor of type dt holding input in, each value wrapped to dt. */
static ie_tensor *
reduce_int_tensor(ie_dtype dt, reduce_int_input in)
{
	ie_tensor  *t = ie_tensor_new(dt, reduce_int_inputs[in].ndim, reduce_int_inputs[in].dims);
	int64_t		n = ie_tensor_numel(t);

	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	u = (uint64_t) reduce_int_inputs[in].vals[i];

		if (dt == IE_INT8 || dt == IE_UINT8)
			((uint8_t *) t->data)[i] = (uint8_t) u;
		else if (dt == IE_INT32 || dt == IE_UINT32)
			((uint32_t *) t->data)[i] = (uint32_t) u;
		else
			((uint64_t *) t->data)[i] = u;
	}
	return t;
}

/* Element i of integer tensor t as int64 (a uint64 by its bits). */
static int64_t
reduce_int_get(const ie_tensor *t, int64_t i)
{
	switch (t->dtype)
	{
		case IE_INT8:
			return ((const int8_t *) t->data)[i];
		case IE_UINT8:
			return ((const uint8_t *) t->data)[i];
		case IE_INT32:
			return ((const int32_t *) t->data)[i];
		case IE_UINT32:
			return ((const uint32_t *) t->data)[i];
		default:
			return ((const int64_t *) t->data)[i];
	}
}

/*
 * ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceMean, ReduceL1,
 * ReduceL2 and ReduceSumSquare on int32, int64, uint32 and uint64 (Max
 * and Min on int8 and uint8 too) against reduce_int_cases; then a few by
 * hand: int32 wraparound, ReduceMean's truncation toward zero, and the
 * refusals (ReduceLogSum on int64, ReduceSum on int8, ReduceMax on int8
 * at opset 11).
 */
static void
test_reduce_int(void)
{
	char		err[512];
	ie_tensor  *out[1];

	for (size_t c = 0; c < sizeof(reduce_int_cases) / sizeof(reduce_int_cases[0]); c++)
	{
		ie_tensor  *X = reduce_int_tensor(reduce_int_cases[c].dt, reduce_int_cases[c].in);
		ie_tensor  *A = NULL;
		const char *op = reduce_int_cases[c].op;
		int			opset = reduce_int_cases[c].opset;
		int			naxes = reduce_int_cases[c].naxes;
		bool		axes_input = opset >= (strcmp(op, "ReduceSum") == 0 ? 13 : 18);
		ie_attr		attrs[3];
		int			n_attr = 0;
		const ie_tensor *in[2] = {X, NULL};
		bool		ok;

		attrs[n_attr++] = attr_int("keepdims", reduce_int_cases[c].keepdims);
		if (reduce_int_cases[c].noop)
			attrs[n_attr++] = attr_int("noop_with_empty_axes", 1);
		if (naxes >= 0 && axes_input)
			in[1] = A = ie_tensor_new(IE_INT64, 1, (int64_t[]) {naxes});
		if (A != NULL && naxes > 0)
			memcpy(A->data, reduce_int_cases[c].axes, naxes * sizeof(int64_t));
		if (naxes > 0 && !axes_input)
			attrs[n_attr++] = attr_ints("axes", naxes, reduce_int_cases[c].axes);
		ok = run_op(op, opset, A != NULL ? 2 : 1, in, n_attr, attrs, 1, out, err, sizeof(err)) == 0 &&
			out[0]->dtype == reduce_int_cases[c].dt &&
			shape_is(out[0], reduce_int_cases[c].ond, reduce_int_cases[c].odims) &&
			ie_tensor_numel(out[0]) == reduce_int_cases[c].n;
		for (int64_t i = 0; ok && i < reduce_int_cases[c].n; i++)
			ok = reduce_int_get(out[0], i) == reduce_int_cases[c].want[i];
		CHECK(ok, "%s-%d %s case %zu (input %d, %d axes, keepdims %d, noop %d): as onnx.reference%s%s",
			  op, opset, ie_dtype_name(reduce_int_cases[c].dt), c, (int) reduce_int_cases[c].in,
			  naxes, reduce_int_cases[c].keepdims, reduce_int_cases[c].noop,
			  err[0] != '\0' ? ": " : "", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&X);
	}

	{
		int32_t		x[4] = {INT32_MAX, 1, -7, 2};
		ie_tensor  *X = typed_tensor(IE_INT32, 2, (int64_t[]) {2, 2}, x);
		ie_tensor  *X8 = typed_tensor(IE_INT8, 1, (int64_t[]) {4}, (int8_t[]) {1, 2, 3, 4});
		ie_tensor  *X64 = reduce_int_tensor(IE_INT64, RI_X);
		const ie_tensor *in[1] = {X},
				   *in8[1] = {X8},
				   *in64[1] = {X64};
		ie_attr		a[2] = {attr_ints("axes", 1, (int64_t[]) {1}), attr_int("keepdims", 0)};
		const int32_t *o;

		CHECK(run_op("ReduceSum", 11, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
			  (o = out[0]->data) != NULL && o[0] == INT32_MIN && o[1] == -5,
			  "ReduceSum int32 INT32_MAX + 1 wraps to INT32_MIN; -7 + 2 = -5: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ReduceMean", 13, 1, in, 2, a, 1, out, err, sizeof(err)) == 0 &&
			  (o = out[0]->data) != NULL && o[0] == -1073741824 && o[1] == -2,
			  "ReduceMean int32: the wrapped sum halved, -5 / 2 truncated to -2: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_op("ReduceLogSum", 18, 1, in64, 1, &a[1], 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "unsupported input type int64: the log of an integer sum is not defined") != NULL,
			  "ReduceLogSum int64 refused: %s", err);
		CHECK(run_op("ReduceLogSumExp", 13, 1, in, 2, a, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "unsupported input type int32: the log") != NULL,
			  "ReduceLogSumExp int32 refused: %s", err);
		CHECK(run_op("ReduceSum", 13, 1, in8, 1, &a[1], 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "unsupported input type int8 (only float, double, int32, int64, uint32, uint64)") != NULL,
			  "ReduceSum int8 refused: %s", err);
		CHECK(run_op("ReduceMax", 11, 1, in8, 1, &a[1], 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "input type int8 needs opset 12 or later (the model imports 11)") != NULL,
			  "ReduceMax int8 at opset 11 refused: %s", err);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&X8);
		ie_tensor_destroy(&X64);
	}
}

/*
 * Mod-28's fmod 0 on float and double: numpy.mod's values (the ONNX
 * reference) with the spec's special cases: signed zeros take the
 * divisor's sign, an infinite dividend or a zero divisor give NaN, x mod
 * +-inf is x or the infinity by the signs, and 1e-30 mod -1 rounds to -1.
 * Refused at opset 17 (fmod must be 1 for floats there) and on float16.
 */
static void
test_mod_float_floor(void)
{
	char		err[256];
	ie_tensor  *out[1];
	float		a[12] = {5.5f, -5.5f, 5.5f, -5.5f, 0.0f, -0.0f, INFINITY, 3, -3, 2, NAN, 1e-30f},
				b[12] = {2, 2, -2, -2, -3, 3, 2, INFINITY, INFINITY, 0, 1, -1},
				want[12] = {1.5f, 0.5f, -0.5f, -1.5f, -0.0f, 0.0f, NAN, 3, INFINITY, NAN, NAN, -1};
	double		ad[12],
				bd[12];
	ie_tensor  *A = tu_float_tensor(1, (int64_t[]) {12}, a),
			   *B = tu_float_tensor(1, (int64_t[]) {12}, b),
			   *A64,
			   *B64;
	const ie_tensor *in[2] = {A, B};
	bool		ok;

	for (int i = 0; i < 12; i++)
	{
		ad[i] = a[i];
		bd[i] = b[i];
	}
	A64 = typed_tensor(IE_DOUBLE, 1, (int64_t[]) {12}, ad);
	B64 = typed_tensor(IE_DOUBLE, 1, (int64_t[]) {12}, bd);
	CHECK(run_op("Mod", 17, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "fmod must be 1 for float inputs below opset 28 (the model imports 17") != NULL,
		  "float Mod fmod 0 at opset 17 refused: %s", err);
	ok = run_op("Mod", 28, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 && out[0] != NULL;
	for (int i = 0; ok && i < 12; i++)
	{
		float		g = ((float *) out[0]->data)[i];

		ok = isnan(want[i]) ? isnan(g) : (g == want[i] && signbit(g) == signbit(want[i]));
	}
	CHECK(ok, "float Mod-28 fmod 0 against numpy.mod: %s", err);
	ie_tensor_destroy(&out[0]);
	in[0] = A64;
	in[1] = B64;
	ok = run_op("Mod", 28, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 && out[0] != NULL &&
		out[0]->dtype == IE_DOUBLE;
	for (int i = 0; ok && i < 12; i++)
	{
		double		g = ((double *) out[0]->data)[i];
		double		w = want[i];	/* -1 + 1e-30 rounds to -1 in double too */

		ok = isnan(w) ? isnan(g) : (g == w && signbit(g) == signbit(w));
	}
	CHECK(ok, "double Mod-28 fmod 0 against numpy.mod: %s", err);
	ie_tensor_destroy(&out[0]);
	{
		uint16_t	h[1] = {0x3c00};
		ie_tensor  *H = typed_tensor(IE_FLOAT16, 1, (int64_t[]) {1}, h);
		const ie_tensor *inh[2] = {H, H};

		CHECK(run_op("Mod", 28, 2, inh, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "fmod 0 on float16 inputs is not supported") != NULL,
			  "float16 Mod-28 fmod 0 refused: %s", err);
		ie_tensor_destroy(&H);
	}
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&A64);
	ie_tensor_destroy(&B64);
}

/*
 * MatMul and Softmax on double: a batch of two [2, 3] x one [3, 2]
 * (broadcast), small integers so every sum is exact; mixed float and
 * double refused; Softmax of [0, ln 3] is exactly [0.25, 0.75] in double.
 */
static void
test_double_matmul_softmax(void)
{
	char		err[256];
	ie_tensor  *out[1];
	double		a[12] = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, -2, 0},
				b[6] = {1, 0, 0, 1, 1, 1},
				want[8] = {4, 5, 10, 11, 0, 1, 2, -2};
	ie_tensor  *A = typed_tensor(IE_DOUBLE, 3, (int64_t[]) {2, 2, 3}, a),
			   *B = typed_tensor(IE_DOUBLE, 2, (int64_t[]) {3, 2}, b),
			   *F = tu_float_tensor(2, (int64_t[]) {3, 2}, (float[]) {1, 0, 0, 1, 1, 1});
	const ie_tensor *in[2] = {A, B};

	CHECK(run_op("MatMul", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_DOUBLE && shape_is(out[0], 3, (int64_t[]) {2, 2, 2}) &&
		  memcmp(out[0]->data, want, sizeof(want)) == 0,
		  "double MatMul [2, 2, 3] x [3, 2]: %s", err);
	ie_tensor_destroy(&out[0]);
	in[1] = F;
	CHECK(run_op("MatMul", 13, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "unsupported input types double, float (only float, double)") != NULL,
		  "MatMul double x float refused: %s", err);
	{
		double		x[2] = {0, log(3.0)};
		ie_tensor  *X = typed_tensor(IE_DOUBLE, 2, (int64_t[]) {1, 2}, x);
		const ie_tensor *ins[1] = {X};
		const double *o;

		CHECK(run_op("Softmax", 13, 1, ins, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_DOUBLE && (o = out[0]->data) != NULL &&
			  fabs(o[0] - 0.25) < 1e-15 && fabs(o[1] - 0.75) < 1e-15,
			  "double Softmax of [0, ln 3]: 0.25, 0.75: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
	}
	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&F);
}

/*
 * Checks that Einsum gives exactly want (shape dims[0..nd)) for equation
 * on the float inputs in[0..n) (small integers: every sum is exact).
 */
static void
check_einsum(const char *equation, int n, const ie_tensor *const *in, int nd,
			 const int64_t *dims, const float *want)
{
	char		err[256];
	ie_tensor  *out[1];
	int			rc = run_einsum(equation, n, in, out, err, sizeof(err));

	CHECK(rc == 0 && float_tensor_is(out[0], nd, dims, want),
		  "Einsum \"%s\": rc %d, %s", equation, rc, err);
	ie_tensor_destroy(&out[0]);
}

/* Checks that Einsum refuses equation on in[0..n) with a message holding msg. */
static void
check_einsum_fails(const char *equation, int n, const ie_tensor *const *in,
				   const char *msg)
{
	char		err[256];
	ie_tensor  *out[1];
	int			rc = run_einsum(equation, n, in, out, err, sizeof(err));

	CHECK(rc == -1 && strstr(err, msg) != NULL,
		  "Einsum \"%s\" must fail with \"%s\": rc %d, \"%s\"", equation, msg, rc, err);
	ie_tensor_destroy(&out[0]);
}

/*
 * Einsum's load-time check of equation for a node of n_inputs inputs:
 * refused (with msg in the message and the error kind) or accepted
 * (msg NULL).
 */
static void
check_einsum_load(const char *equation, int n_inputs, const char *msg,
				  ie_error_kind kind)
{
	char		err[256] = "";
	ie_attr		a[1] = {attr_str("equation", equation)};
	ie_op_fn	check = ie_op_check_lookup("Einsum");
	ie_node_ctx ctx = {
		.op_type = "Einsum", .node_name = "t", .opset = 12,
		.n_inputs = n_inputs, .n_outputs = 1, .n_attrs = 1, .attrs = a,
		.n_threads = 1, .err = err, .errlen = sizeof(err),
		.err_kind = IE_ERR_INVALID
	};
	int			rc = check != NULL ? check(&ctx) : -2;

	if (msg == NULL)
		CHECK(rc == 0, "Einsum load check of \"%s\": rc %d, %s", equation, rc, err);
	else
		CHECK(rc == -1 && strstr(err, msg) != NULL && ctx.err_kind == kind,
			  "Einsum load check of \"%s\" must fail with \"%s\" (kind %d): rc %d, kind %d, \"%s\"",
			  equation, msg, (int) kind, rc, (int) ctx.err_kind, err);
}

/*
 * Einsum on small integer-valued inputs, values exact: explicit and
 * implicit outputs (implicit: the letters that occur once, in ASCII
 * order), transposes, sums, diagonals and the trace, batch products,
 * "..." with broadcasting, three operands, spaces, a scalar output and
 * scalar inputs, int64 and int32 inputs.
 */
static void
test_einsum(void)
{
	int64_t		d23[2] = {2, 3},
				d32[2] = {3, 2},
				d22[2] = {2, 2},
				d33[2] = {3, 3},
				d3[1] = {3},
				d2[1] = {2},
				d223[3] = {2, 2, 3},
				d232[3] = {2, 3, 2},
				d222[3] = {2, 2, 2},
				d213[3] = {2, 1, 3};
	ie_tensor  *A = tu_float_tensor(2, d23, (float[]) {1, 2, 3, 4, 5, 6}),
			   *B = tu_float_tensor(2, d32, (float[]) {1, 0, 0, 1, 2, 3}),
			   *M = tu_float_tensor(2, d33, (float[]) {1, 2, 3, 4, 5, 6, 7, 8, 9}),
			   *V = tu_float_tensor(1, d3, (float[]) {1, 2, 3}),
			   *X = tu_float_tensor(3, d223, (float[]) {1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7}),
			   *Y = tu_float_tensor(3, d232, (float[]) {1, 0, 0, 1, 2, 3, 1, 0, 0, 1, 2, 3}),
			   *P = tu_float_tensor(3, d213, (float[]) {1, 2, 3, 4, 5, 6}),
			   *Q = tu_float_tensor(2, d23, (float[]) {1, 1, 1, 1, 0, 0}),
			   *S = tu_float_tensor(0, NULL, (float[]) {2}),
			   *E = tu_float_tensor(2, d22, (float[]) {0, 1, 1, 0});
	const ie_tensor *ab[2] = {A, B},
			   *a[1] = {A},
			   *m[1] = {M},
			   *xy[2] = {X, Y},
			   *pq[2] = {P, Q},
			   *vvv[3] = {V, V, V},
			   *abe[3] = {A, B, E},
			   *sv[2] = {S, V},
			   *s[1] = {S},
			   *aq[2] = {A, Q};
	const float ab_prod[4] = {7, 11, 16, 23},
				a_t[6] = {1, 4, 2, 5, 3, 6};

	check_einsum("ij,jk->ik", 2, ab, 2, d22, ab_prod);
	check_einsum("ij,jk", 2, ab, 2, d22, ab_prod);	/* implicit: i, k */
	check_einsum(" i j , j k -> i k ", 2, ab, 2, d22, ab_prod);
	check_einsum("ij,jk->ki", 2, ab, 2, d22, (float[]) {7, 16, 11, 23});
	check_einsum("ij->ji", 1, a, 2, d32, a_t);
	check_einsum("ji", 1, a, 2, d32, a_t);	/* implicit: alphabetical, i then j */
	check_einsum("ij", 1, a, 2, d23, (float[]) {1, 2, 3, 4, 5, 6});
	check_einsum("aB", 1, a, 2, d32, a_t);	/* implicit: 'B' before 'a' */
	check_einsum("ij->i", 1, a, 1, d2, (float[]) {6, 15});
	check_einsum("ij->j", 1, a, 1, d3, (float[]) {5, 7, 9});
	check_einsum("ij->", 1, a, 0, NULL, (float[]) {21});
	check_einsum("ii->i", 1, m, 1, d3, (float[]) {1, 5, 9});
	check_einsum("ii->", 1, m, 0, NULL, (float[]) {15});
	check_einsum("ii", 1, m, 0, NULL, (float[]) {15});
	check_einsum("ij,ij->", 2, aq, 0, NULL, (float[]) {10});
	check_einsum("ij,ij->ij", 2, aq, 2, d23, (float[]) {1, 2, 3, 4, 0, 0});
	check_einsum("bij,bjk->bik", 2, xy, 3, d222, (float[]) {7, 11, 16, 23, 10, 15, 19, 27});
	check_einsum("bij,bjk->kbi", 2, xy, 3, d222, (float[]) {7, 16, 10, 19, 11, 23, 15, 27});
	check_einsum("...ij,...jk->...ik", 2, xy, 3, d222,
				 (float[]) {7, 11, 16, 23, 10, 15, 19, 27});
	/* "..." broadcasts: P's [2, 1] with Q's [2] is [2, 2] */
	check_einsum("...i,...i->...", 2, pq, 2, d22, (float[]) {6, 1, 15, 4});
	check_einsum("...i,...i", 2, pq, 2, d22, (float[]) {6, 1, 15, 4});
	/* an output without "...": allowed where "..." stands for no axis */
	check_einsum("...ij,...jk->ik", 2, ab, 2, d22, ab_prod);
	check_einsum_fails("...ij,...jk->ik", 2, xy,
					   "leaves \"...\" out of its output, and here \"...\" stands for 1 axis");
	check_einsum("i,i,i->", 3, vvv, 0, NULL, (float[]) {36});
	check_einsum("i,i,i->i", 3, vvv, 1, d3, (float[]) {1, 8, 27});
	check_einsum("ij,jk,kl->il", 3, abe, 2, d22, (float[]) {11, 7, 23, 16});
	check_einsum(",i->i", 2, sv, 1, d3, (float[]) {2, 4, 6});
	check_einsum("->", 1, s, 0, NULL, (float[]) {2});
	check_einsum("", 1, s, 0, NULL, (float[]) {2});

	/* integers: exact, int64 and int32 */
	{
		char		err[256];
		ie_tensor  *IA = ie_tensor_new(IE_INT64, 2, d23),
				   *IB = ie_tensor_new(IE_INT64, 2, d32),
				   *IM = ie_tensor_new(IE_INT32, 2, d33),
				   *out[1];
		const ie_tensor *iab[2] = {IA, IB},
				   *im[1] = {IM},
				   *mixed[2] = {A, IB};
		const int64_t want64[4] = {7, 9000000002LL, 8, 18000000005LL};

		/* IA = [[1, 2, 3], [-4, 5, 6]], IB = [[1, 0], [0, 1], [2, 3e9]] */
		for (int i = 0; i < 6; i++)
		{
			((int64_t *) IA->data)[i] = (int64_t) ((float *) A->data)[i];
			((int64_t *) IB->data)[i] = (int64_t) ((float *) B->data)[i];
		}
		((int64_t *) IA->data)[3] = -4;
		((int64_t *) IB->data)[5] = 3000000000LL;
		for (int i = 0; i < 9; i++)
			((int32_t *) IM->data)[i] = i + 1;
		CHECK(run_einsum("ij,jk->ik", 2, iab, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT64 && out[0]->ndim == 2 &&
			  memcmp(out[0]->data, want64, sizeof(want64)) == 0,
			  "Einsum int64 ij,jk->ik: %s", err);
		ie_tensor_destroy(&out[0]);
		CHECK(run_einsum("ii->", 1, im, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT32 && out[0]->ndim == 0 &&
			  ((int32_t *) out[0]->data)[0] == 15,
			  "Einsum int32 trace: %s", err);
		ie_tensor_destroy(&out[0]);
		check_einsum_fails("ij,jk->ik", 2, mixed, "input 1 is int64, input 0 is float");
		ie_tensor_destroy(&IA);
		ie_tensor_destroy(&IB);
		ie_tensor_destroy(&IM);
	}

	/* refused at run: the inputs do not fit the equation */
	check_einsum_fails("ij,jk->ik", 1, a, "has 2 operands, the node has 1 input");
	check_einsum_fails("ij,jk->ik", 2, aq, "letter 'j' has size 3 in input 0 and 2 in input 1");
	check_einsum_fails("ij->k", 1, a, "output letter 'k', which is in no input");
	check_einsum_fails("ij->ii", 1, a, "output letter 'i' twice");
	check_einsum_fails("i1->i", 1, a, "has '1' at offset 1, which is not a letter");
	check_einsum_fails("ii->i", 1, a, "letter 'i' is repeated in input 0's term with sizes 2 and 3");
	check_einsum_fails("", 1, a, "input 0 has rank 2, its term has 0 letters");
	check_einsum_fails("->", 1, a, "input 0 has rank 2, its term has 0 letters");
	check_einsum_fails("ijk->i", 1, a, "input 0 has rank 2, its term has 3 letters");
	{
		int64_t		d7[8] = {1, 1, 1, 1, 1, 1, 1, 2};
		ie_tensor  *R = tu_float_tensor(8, d7, (float[]) {1, 2});
		const ie_tensor *rv[2] = {R, V};

		check_einsum_fails("...a,b->...ab", 2, rv, "an output of rank 9 is over the engine's limit of 8");
		ie_tensor_destroy(&R);
	}
	{
		ie_tensor  *H = ie_tensor_new(IE_FLOAT16, 1, d3);
		const ie_tensor *h[1] = {H};

		check_einsum_fails("i->", 1, h, "element type float16 is not supported");
		ie_tensor_destroy(&H);
	}

	/* refused at load: the equation alone, against the node's input count */
	check_einsum_load("ij,jk->ik", 2, NULL, IE_ERR_INVALID);
	check_einsum_load("...,...->...", 2, NULL, IE_ERR_INVALID);
	check_einsum_load("", 1, NULL, IE_ERR_INVALID);
	check_einsum_load("->", 1, NULL, IE_ERR_INVALID);
	check_einsum_load("ij,jk->ik", 3, "equation \"ij,jk->ik\" has 2 operands, the node has 3 inputs",
					  IE_ERR_INVALID);
	check_einsum_load("ij->k", 1, "output letter 'k', which is in no input", IE_ERR_INVALID);
	check_einsum_load("ij->jij", 1, "output letter 'j' twice", IE_ERR_INVALID);
	check_einsum_load("i->...i", 1, "\"...\" in the output and in no input", IE_ERR_INVALID);
	check_einsum_load("i.j->i", 1, "a '.' outside \"...\"", IE_ERR_INVALID);
	check_einsum_load("i..", 1, "a '.' outside \"...\"", IE_ERR_INVALID);
	check_einsum_load("......", 1, "\"...\" twice in one term", IE_ERR_INVALID);
	check_einsum_load("i-j", 1, "'-' not followed by '>'", IE_ERR_INVALID);
	check_einsum_load("i-", 1, "'-' not followed by '>'", IE_ERR_INVALID);
	check_einsum_load("i->i->i", 1, "\"->\" twice", IE_ERR_INVALID);
	check_einsum_load("i->i,j", 1, "a ',' after \"->\"", IE_ERR_INVALID);
	check_einsum_load("i\tj", 1, "byte 0x09 at offset 1", IE_ERR_INVALID);
	check_einsum_load("\xc3\xa9->", 1, "equation \"?\?->\" has byte 0xc3 at offset 0", IE_ERR_INVALID);
	check_einsum_load("ij;jk", 1, "has ';' at offset 2", IE_ERR_INVALID);
	check_einsum_load("abcdefghi->a", 1, "more than 8 letters, the engine's limit",
					  IE_ERR_NOT_SUPPORTED);
	check_einsum_load("abcde,fghij", 2, "an output of more than 8 letters, the engine's limit",
					  IE_ERR_NOT_SUPPORTED);
	{
		char		lng[4001];

		memset(lng, 'a', 4000);
		lng[4000] = '\0';
		check_einsum_load(lng, 1, "equation \"aaaaaaaa", IE_ERR_NOT_SUPPORTED);
		memset(lng, ',', 4000);
		check_einsum_load(lng, 4001, "more than 32 operands, the engine's limit",
						  IE_ERR_NOT_SUPPORTED);
		memset(lng, ' ', 4000);
		check_einsum_load(lng, 1, NULL, IE_ERR_INVALID);
		/* invalid and over a limit: invalid (XX001), not 0A000 */
		memset(lng, ',', 40);
		lng[40] = '\0';
		check_einsum_load(lng, 2, "has 41 operands, the node has 2 inputs", IE_ERR_INVALID);
	}
	check_einsum_load("abcdefghi,j->k", 2, "output letter 'k', which is in no input",
					  IE_ERR_INVALID);
	check_einsum_load("a->abcdefghi", 1, "output letter 'b', which is in no input",
					  IE_ERR_INVALID);
	/* spaces inside "->" and "..." too (ONNX: spaces anywhere; ORT takes them) */
	check_einsum_load("ij,jk - > ik", 2, NULL, IE_ERR_INVALID);
	check_einsum_load(". . .i->. . .i", 1, NULL, IE_ERR_INVALID);
	check_einsum_load(". .", 1, "a '.' outside \"...\"", IE_ERR_INVALID);
	check_einsum_load("i -", 1, "'-' not followed by '>'", IE_ERR_INVALID);
	check_einsum_load("i ->...", 1, "\"...\" in the output and in no input", IE_ERR_INVALID);

	/*
	 * From review: a size-1 axis broadcasting against a long one is not
	 * copied out ([65536, 1] and [1, 65536] was refused as a product over
	 * the engine's limit); integer pairs sum a letter only one side has
	 * first (i,j-> walked i x j); float sums in the strided loop are kept
	 * in double (2^24 + 8 ones summed to 2^24 in float).
	 */
	{
		int64_t		dc[2] = {65536, 1},
					dr[2] = {1, 65536},
					dn[1] = {(1 << 24) + 8},
					di[1] = {4096};
		ie_tensor  *C = ie_tensor_new(IE_FLOAT, 2, dc),
				   *R = ie_tensor_new(IE_FLOAT, 2, dr),
				   *N = ie_tensor_new(IE_FLOAT, 1, dn),
				   *I = ie_tensor_new(IE_INT64, 1, di),
				   *J = ie_tensor_new(IE_INT64, 1, di);
		const ie_tensor *cr[2] = {C, R},
				   *nn[1] = {N},
				   *ij[2] = {I, J};
		ie_tensor  *out[1] = {NULL};
		char		err[256];
		float		want;

		for (int64_t i = 0; i < 65536; i++)
		{
			((float *) C->data)[i] = (float) (i % 3);
			((float *) R->data)[i] = (float) (i % 5);
		}
		/* sum over a, b of C[a, 0] * R[0, b]: (21845 * 3) * (13107 * 10) */
		want = 65535.0f * 131070.0f;
		CHECK(run_einsum("ab,ab->", 2, cr, out, err, sizeof(err)) == 0 &&
			  out[0]->ndim == 0 && fabsf(((float *) out[0]->data)[0] - want) <= want * 1e-6f,
			  "ab,ab-> of [65536, 1] and [1, 65536]: %s", err);
		ie_tensor_destroy(&out[0]);
		for (int64_t i = 0; i < dn[0]; i++)
			((float *) N->data)[i] = 1.0f;
		CHECK(run_einsum("i->", 1, nn, out, err, sizeof(err)) == 0 &&
			  ((float *) out[0]->data)[0] == (float) dn[0],
			  "i-> over 2^24 + 8 ones: %.1f: %s",
			  out[0] ? ((float *) out[0]->data)[0] : -1.0f, err);
		ie_tensor_destroy(&out[0]);
		for (int64_t i = 0; i < di[0]; i++)
		{
			((int64_t *) I->data)[i] = i;
			((int64_t *) J->data)[i] = 2;
		}
		CHECK(run_einsum("i,j->", 2, ij, out, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_INT64 &&
			  ((int64_t *) out[0]->data)[0] == (int64_t) 4095 * 4096 / 2 * 2 * 4096,
			  "int64 i,j->: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&C);
		ie_tensor_destroy(&R);
		ie_tensor_destroy(&N);
		ie_tensor_destroy(&I);
		ie_tensor_destroy(&J);
	}
	{
		/* a NUL byte inside the attribute's bytes */
		char		err[256] = "";
		ie_attr		at[1] = {{.name = "equation", .type = IE_ATTR_STRING, .s = "i\0j", .s_len = 3}};
		ie_node_ctx ctx = {
			.op_type = "Einsum", .node_name = "t", .opset = 12, .n_inputs = 1,
			.n_outputs = 1, .n_attrs = 1, .attrs = at, .n_threads = 1,
			.err = err, .errlen = sizeof(err)
		};
		ie_op_fn	check = ie_op_check_lookup("Einsum");

		CHECK(check != NULL && check(&ctx) == -1 && strstr(err, "holds a NUL byte") != NULL,
			  "Einsum equation with a NUL byte: %s", err);
	}

	ie_tensor_destroy(&A);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&M);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&Y);
	ie_tensor_destroy(&P);
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&E);
}

/* ---- TopK, CumSum, Trilu, ScatterElements, OneHot, ... (ops_misc.c) ---- */

/* Whether t has type dt, shape dims[0..nd) and exactly the bytes of want. */
static bool
tensor_is(const ie_tensor *t, ie_dtype dt, int nd, const int64_t *dims, const void *want)
{
	if (t == NULL || t->dtype != dt || t->ndim != nd)
		return false;
	for (int i = 0; i < nd; i++)
		if (t->dims[i] != dims[i])
			return false;
	return t->nbytes == 0 || memcmp(t->data, want, t->nbytes) == 0;
}

/* Frees outs[0..n). */
static void
free_outs(ie_tensor **outs, int n)
{
	for (int i = 0; i < n; i++)
		ie_tensor_destroy(&outs[i]);
}

/*
 * TopK: the k largest and smallest along the last axis (ties to the lower
 * index), opset 1's attribute k along axis 0, a NaN counted largest, and
 * the refusals: k past the axis, k negative.
 */
static void
test_topk(void)
{
	ie_tensor  *X = tu_float_tensor(2, (int64_t[]) {2, 4}, (float[]) {1, 3, 3, 2, 5, 0, 7, 7});
	ie_tensor  *K2 = i64_tensor(1, (int64_t[]) {2});
	ie_tensor  *K5 = i64_tensor(1, (int64_t[]) {5});
	ie_tensor  *Kneg = i64_tensor(1, (int64_t[]) {-1});
	ie_tensor  *N = tu_float_tensor(1, (int64_t[]) {3}, (float[]) {1, NAN, 2});
	ie_tensor  *K1 = i64_tensor(1, (int64_t[]) {1});
	ie_tensor  *out[2];
	char		err[256];
	const ie_tensor *in[2] = {X, K2};
	ie_attr		smallest[1] = {attr_int("largest", 0)};
	ie_attr		k1axis0[2] = {attr_int("k", 1), attr_int("axis", 0)};

	CHECK(run_op("TopK", 11, 2, in, 0, NULL, 2, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 2}, (float[]) {3, 3, 7, 7}) &&
		  tensor_is(out[1], IE_INT64, 2, (int64_t[]) {2, 2}, (int64_t[]) {1, 2, 2, 3}),
		  "TopK k=2 largest, ties to the lower index: %s", err);
	free_outs(out, 2);
	CHECK(run_op("TopK", 11, 2, in, 1, smallest, 2, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 2}, (float[]) {1, 2, 0, 5}) &&
		  tensor_is(out[1], IE_INT64, 2, (int64_t[]) {2, 2}, (int64_t[]) {0, 3, 1, 0}),
		  "TopK k=2 smallest: %s", err);
	free_outs(out, 2);
	CHECK(run_op("TopK", 1, 1, in, 2, k1axis0, 2, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {1, 4}, (float[]) {5, 3, 7, 7}) &&
		  tensor_is(out[1], IE_INT64, 2, (int64_t[]) {1, 4}, (int64_t[]) {1, 0, 1, 1}),
		  "TopK-1 k=1 axis 0: %s", err);
	free_outs(out, 2);
	in[0] = N;
	in[1] = K1;
	CHECK(run_op("TopK", 11, 2, in, 0, NULL, 2, out, err, sizeof(err)) == 0 &&
		  out[0] != NULL && isnan(((float *) out[0]->data)[0]) &&
		  tensor_is(out[1], IE_INT64, 1, (int64_t[]) {1}, (int64_t[]) {1}),
		  "TopK takes a NaN as the largest: %s", err);
	free_outs(out, 2);
	in[0] = X;
	in[1] = K5;
	CHECK(run_op("TopK", 11, 2, in, 0, NULL, 2, out, err, sizeof(err)) == -1 &&
		  strstr(err, "k (5) is larger than axis 1's size (4)") != NULL,
		  "TopK k=5 on an axis of 4 refused: %s", err);
	free_outs(out, 2);
	in[1] = Kneg;
	CHECK(run_op("TopK", 11, 2, in, 0, NULL, 2, out, err, sizeof(err)) == -1 &&
		  strstr(err, "k (-1) must not be negative") != NULL,
		  "TopK k=-1 refused: %s", err);
	free_outs(out, 2);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&K2);
	ie_tensor_destroy(&K5);
	ie_tensor_destroy(&Kneg);
	ie_tensor_destroy(&N);
	ie_tensor_destroy(&K1);
}

/*
 * CumSum along an int32 scalar axis, exclusive and reverse along axis 0
 * (against a naive loop), CumProd-26, and the refusals: axis out of range,
 * an axis input of two values.
 */
static void
test_cumsum_cumprod(void)
{
	int64_t		xv[6] = {1, 2, 3, 4, 5, 6};
	ie_tensor  *X = typed_tensor(IE_INT64, 2, (int64_t[]) {2, 3}, xv);
	ie_tensor  *A1 = typed_tensor(IE_INT32, 0, NULL, (int32_t[]) {1});
	ie_tensor  *A0 = i64_tensor(1, (int64_t[]) {0});
	ie_tensor  *A2 = i64_tensor(1, (int64_t[]) {2});
	ie_tensor  *Aboth = i64_tensor(2, (int64_t[]) {0, 1});
	ie_tensor  *F = tu_float_tensor(1, (int64_t[]) {4}, (float[]) {1, 2, 3, 4});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[2] = {X, A1};
	ie_attr		exrev[2] = {attr_int("exclusive", 1), attr_int("reverse", 1)};
	int64_t		want[6];

	CHECK(run_op("CumSum", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {2, 3}, (int64_t[]) {1, 3, 6, 4, 9, 15}),
		  "CumSum along axis 1: %s", err);
	free_outs(out, 1);
	/* exclusive, reverse along axis 0: the sum of the rows after */
	for (int j = 0; j < 3; j++)
		for (int i = 0; i < 2; i++)
		{
			want[i * 3 + j] = 0;
			for (int r = i + 1; r < 2; r++)
				want[i * 3 + j] += xv[r * 3 + j];
		}
	in[1] = A0;
	CHECK(run_op("CumSum", 11, 2, in, 2, exrev, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {2, 3}, want),
		  "CumSum exclusive reverse along axis 0: %s", err);
	free_outs(out, 1);
	in[1] = A2;
	CHECK(run_op("CumSum", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 2 is out of range for rank 2") != NULL,
		  "CumSum axis 2 of a rank-2 x refused: %s", err);
	free_outs(out, 1);
	in[1] = Aboth;
	CHECK(run_op("CumSum", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis must hold a single value") != NULL,
		  "CumSum with two axes refused: %s", err);
	free_outs(out, 1);
	in[0] = F;
	in[1] = A0;
	CHECK(run_op("CumProd", 26, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {4}, (float[]) {1, 2, 6, 24}),
		  "CumProd of [1, 2, 3, 4]: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&A1);
	ie_tensor_destroy(&A0);
	ie_tensor_destroy(&A2);
	ie_tensor_destroy(&Aboth);
	ie_tensor_destroy(&F);
}

/* Trilu upper and lower with k, k past the matrix, a rank-1 input refused. */
static void
test_trilu(void)
{
	ie_tensor  *X = tu_float_tensor(2, (int64_t[]) {3, 3}, (float[]) {1, 2, 3, 4, 5, 6, 7, 8, 9});
	ie_tensor  *Km1 = typed_tensor(IE_INT64, 0, NULL, (int64_t[]) {-1});
	ie_tensor  *K5 = typed_tensor(IE_INT64, 0, NULL, (int64_t[]) {5});
	ie_tensor  *Kmax = typed_tensor(IE_INT64, 0, NULL, (int64_t[]) {INT64_MAX});
	ie_tensor  *V = tu_float_tensor(1, (int64_t[]) {3}, (float[]) {1, 2, 3});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[2] = {X, NULL};
	ie_attr		lower[1] = {attr_int("upper", 0)};

	CHECK(run_op("Trilu", 14, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, (float[]) {1, 2, 3, 0, 5, 6, 0, 0, 9}),
		  "Trilu upper: %s", err);
	free_outs(out, 1);
	in[1] = Km1;
	CHECK(run_op("Trilu", 14, 2, in, 1, lower, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, (float[]) {0, 0, 0, 4, 0, 0, 7, 8, 0}),
		  "Trilu lower k=-1: %s", err);
	free_outs(out, 1);
	in[1] = K5;
	CHECK(run_op("Trilu", 14, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, (float[]) {0, 0, 0, 0, 0, 0, 0, 0, 0}),
		  "Trilu upper k=5 keeps nothing: %s", err);
	free_outs(out, 1);
	in[1] = Kmax;
	CHECK(run_op("Trilu", 14, 2, in, 1, lower, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, (float[]) {1, 2, 3, 4, 5, 6, 7, 8, 9}),
		  "Trilu lower k=INT64_MAX keeps everything: %s", err);
	free_outs(out, 1);
	in[0] = V;
	CHECK(run_op("Trilu", 14, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "input must have rank 2 or more") != NULL,
		  "Trilu of a rank-1 input refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&Km1);
	ie_tensor_destroy(&K5);
	ie_tensor_destroy(&Kmax);
	ie_tensor_destroy(&V);
}

/*
 * ScatterElements: the spec's example along axis 0, add with a repeated
 * index (opset 16), Scatter-9 the same; refused: an index past the axis,
 * max below opset 18, updates of another shape (named before indices
 * longer than data off the axis, as before element_indices_shape).
 */
static void
test_scatter_elements(void)
{
	ie_tensor  *D = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {3, 3});
	ie_tensor  *I = typed_tensor(IE_INT64, 2, (int64_t[]) {2, 3}, (int64_t[]) {1, 0, 2, 0, 2, 1});
	ie_tensor  *U = tu_float_tensor(2, (int64_t[]) {2, 3}, (float[]) {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
	ie_tensor  *D2 = tu_float_tensor(2, (int64_t[]) {1, 5}, (float[]) {1, 2, 3, 4, 5});
	ie_tensor  *I2 = typed_tensor(IE_INT32, 2, (int64_t[]) {1, 2}, (int32_t[]) {1, -4});
	ie_tensor  *U2 = tu_float_tensor(2, (int64_t[]) {1, 2}, (float[]) {1.1f, 2.1f});
	ie_tensor  *Ibad = typed_tensor(IE_INT64, 2, (int64_t[]) {2, 3}, (int64_t[]) {1, 0, 3, 0, 2, 1});
	ie_tensor  *Iwide = typed_tensor(IE_INT64, 2, (int64_t[]) {1, 4}, (int64_t[]) {0, 0, 0, 0});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[3] = {D, I, U};
	ie_attr		add[2] = {attr_int("axis", 1), attr_str("reduction", "add")};
	ie_attr		max[1] = {attr_str("reduction", "max")};
	float		want[9] = {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f};
	float		want2[5] = {1, (2.0f + 1.1f) + 2.1f, 3, 4, 5};

	CHECK(run_op("ScatterElements", 18, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, want),
		  "ScatterElements, the spec's example: %s", err);
	free_outs(out, 1);
	CHECK(run_op("Scatter", 9, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {3, 3}, want),
		  "Scatter-9, the spec's example: %s", err);
	free_outs(out, 1);
	in[0] = D2;
	in[1] = I2;
	in[2] = U2;
	CHECK(run_op("ScatterElements", 16, 3, in, 2, add, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {1, 5}, want2),
		  "ScatterElements add with index 1 twice (once as -4): %s", err);
	free_outs(out, 1);
	in[0] = D;
	in[1] = Ibad;
	in[2] = U;
	CHECK(run_op("ScatterElements", 13, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "index 3 (at position 2) is out of range [-3, 2] for axis 0") != NULL,
		  "ScatterElements index 3 on an axis of 3 refused: %s", err);
	free_outs(out, 1);
	in[1] = I;
	CHECK(run_op("ScatterElements", 16, 3, in, 1, max, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "reduction \"max\" needs opset 18") != NULL,
		  "ScatterElements max at opset 16 refused: %s", err);
	free_outs(out, 1);
	in[2] = U2;
	CHECK(run_op("ScatterElements", 18, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "updates have shape [1, 2], indices [2, 3]") != NULL,
		  "ScatterElements with updates of another shape refused: %s", err);
	free_outs(out, 1);
	/* updates [1, 2] and indices [1, 4] past data [3, 3]: the updates first */
	in[1] = Iwide;
	CHECK(run_op("ScatterElements", 18, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "updates have shape [1, 2], indices [1, 4]") != NULL,
		  "ScatterElements names updates of another shape before indices past data: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&Iwide);
	ie_tensor_destroy(&D);
	ie_tensor_destroy(&I);
	ie_tensor_destroy(&U);
	ie_tensor_destroy(&D2);
	ie_tensor_destroy(&I2);
	ie_tensor_destroy(&U2);
	ie_tensor_destroy(&Ibad);
}

/*
 * OneHot along the last axis and axis 0 (a negative index from the end,
 * one out of range: all off), float depth; refused: depth 0, axis past
 * the rank.
 */
static void
test_onehot(void)
{
	ie_tensor  *I = i64_tensor(4, (int64_t[]) {0, 2, -1, 5});
	ie_tensor  *Dp = typed_tensor(IE_FLOAT, 0, NULL, (float[]) {3.0f});
	ie_tensor  *D0 = i64_tensor(1, (int64_t[]) {0});
	ie_tensor  *V = typed_tensor(IE_INT32, 1, (int64_t[]) {2}, (int32_t[]) {-1, 7});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[3] = {I, Dp, V};
	ie_attr		axis0[1] = {attr_int("axis", 0)};
	ie_attr		axis2[1] = {attr_int("axis", 2)};
	int32_t		want[12] = {7, -1, -1, -1, -1, 7, -1, -1, 7, -1, -1, -1};
	int32_t		want_t[12];

	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 3; j++)
			want_t[j * 4 + i] = want[i * 3 + j];
	CHECK(run_op("OneHot", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT32, 2, (int64_t[]) {4, 3}, want),
		  "OneHot of [0, 2, -1, 5], depth 3: %s", err);
	free_outs(out, 1);
	CHECK(run_op("OneHot", 11, 3, in, 1, axis0, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT32, 2, (int64_t[]) {3, 4}, want_t),
		  "OneHot along axis 0: %s", err);
	free_outs(out, 1);
	CHECK(run_op("OneHot", 11, 3, in, 1, axis2, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 2 is out of range [-2, 1]") != NULL,
		  "OneHot axis 2 of rank-1 indices refused: %s", err);
	free_outs(out, 1);
	in[1] = D0;
	CHECK(run_op("OneHot", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "depth must be positive, got 0") != NULL,
		  "OneHot depth 0 refused: %s", err);
	free_outs(out, 1);
	{
		/* a NaN depth was refused as "depth of type float is not supported" */
		ie_tensor  *Dn = typed_tensor(IE_FLOAT, 0, NULL, (float[]) {NAN});

		in[1] = Dn;
		CHECK(run_op("OneHot", 11, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "depth must be a finite number, got nan") != NULL,
			  "OneHot NaN depth refused as a bad value: %s", err);
		free_outs(out, 1);
		ie_tensor_destroy(&Dn);
	}
	{
		/* a NaN index was "indices of type float are not supported (or not finite)" */
		ie_tensor  *In = tu_float_tensor(1, (int64_t[]) {2}, (float[]) {1, NAN});
		const ie_tensor *inn[3] = {In, Dp, V};

		CHECK(run_op("OneHot", 11, 3, inn, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "indices[1] must be finite, got nan") != NULL,
			  "OneHot NaN index refused as a bad value: %s", err);
		free_outs(out, 1);
		ie_tensor_destroy(&In);
	}
	ie_tensor_destroy(&I);
	ie_tensor_destroy(&Dp);
	ie_tensor_destroy(&D0);
	ie_tensor_destroy(&V);
}

/*
 * Empty tensors beside a huge dim: OneHot of no indices with depth 10^15
 * along axis 0, CumSum along the empty axis of [10^15, 0], Compress of
 * [10^15, 0] along its empty axis and Hardmax of it.  Each ran its outer
 * loop 10^15 times over nothing (a worker stuck for days) before these
 * returned at once for an empty output.
 */
#define CANNOT_COUNT "has other dims whose bytes the engine cannot count"

/*
 * ie_tensor_new holds an empty shape to a tensor's bounds with its zero
 * dims counted as 1, and ie_tensor_take to the same: [2^40, 2^40, 0] is
 * refused without a limit (its other dims pass a byte count, "cannot
 * count"), [10^15, 0] (4 * 10^15 bytes of other dims) is allowed without
 * one and refused under 1 MiB, where [0, 262144] (exactly 1 MiB) is
 * allowed and [0, 262145] is not.
 */
static void
test_empty_span(void)
{
	int64_t		big = 1099511627776LL,
				huge = 1000000000000000LL;
	char		why[384];
	ie_tensor  *t,
			   *E = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {0, 4});

	t = ie_tensor_new(IE_FLOAT, 3, (int64_t[]) {big, big, 0});
	CHECK(t == NULL && ie_tensor_take_refusal(why, sizeof(why)) &&
		  strcmp(why, "an empty float tensor of shape [1099511627776, 1099511627776, 0] " CANNOT_COUNT) == 0,
		  "[2^40, 2^40, 0] refused: %s", t == NULL ? why : "made");
	ie_tensor_destroy(&t);
	t = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {huge, 0});
	CHECK(t != NULL && t->nbytes == 0 && t->dims[0] == huge, "[10^15, 0] made without a limit");
	ie_tensor_destroy(&t);
	CHECK(E != NULL && ie_tensor_take(E, 3, (int64_t[]) {0, big, big}) == NULL &&
		  E->ndim == 2 && E->dims[1] == 4,
		  "taking [0, 4]'s buffer as [0, 2^40, 2^40] refused, [0, 4] untouched");
	ie_set_max_tensor_bytes(1 << 20);
	t = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {huge, 0});
	CHECK(t == NULL && ie_tensor_take_refusal(why, sizeof(why)) &&
		  strcmp(why, "an empty float tensor of shape [1000000000000000, 0] has other dims of "
				 "4000000000000000 bytes, more than the 1048576 bytes a tensor may take") == 0,
		  "[10^15, 0] refused under 1 MiB: %s", t == NULL ? why : "made");
	ie_tensor_destroy(&t);
	t = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {0, 262144});
	CHECK(t != NULL && t->nbytes == 0, "[0, 262144] made under 1 MiB");
	ie_tensor_destroy(&t);
	t = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {0, 262145});
	CHECK(t == NULL && ie_tensor_take_refusal(why, sizeof(why)) &&
		  strstr(why, "has other dims of 1048580 bytes") != NULL,
		  "[0, 262145] refused under 1 MiB: %s", t == NULL ? why : "made");
	ie_tensor_destroy(&t);
	ie_set_max_tensor_bytes(0);
	ie_tensor_destroy(&E);
}

static void
test_empty_huge_dims(void)
{
	int64_t		huge = 1000000000000000LL;
	ie_tensor  *I = typed_tensor(IE_INT64, 1, (int64_t[]) {0}, NULL);
	ie_tensor  *Dh = i64_tensor(1, (int64_t[]) {huge});
	ie_tensor  *V = tu_float_tensor(1, (int64_t[]) {2}, (float[]) {0, 1});
	ie_tensor  *Z = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {huge, 0});
	ie_tensor  *A1 = i64_tensor(1, (int64_t[]) {1});
	ie_tensor  *C0 = typed_tensor(IE_BOOL, 1, (int64_t[]) {0}, NULL);
	ie_tensor  *out[2];
	char		err[256];
	ie_attr		axis0[1] = {attr_int("axis", 0)};
	ie_attr		axis1[1] = {attr_int("axis", 1)};
	const ie_tensor *oh[3] = {I, Dh, V},
			   *cs[2] = {Z, A1},
			   *cp[2] = {Z, C0},
			   *hm[1] = {Z};

	CHECK(run_op("OneHot", 11, 3, oh, 1, axis0, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 2 && out[0]->dims[0] == huge && out[0]->dims[1] == 0,
		  "OneHot of no indices, depth 10^15, axis 0: %s", err);
	free_outs(out, 1);
	CHECK(run_op("CumSum", 14, 2, cs, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dims[0] == huge && out[0]->dims[1] == 0,
		  "CumSum of [10^15, 0] along axis 1: %s", err);
	free_outs(out, 1);
	CHECK(run_op("Compress", 11, 2, cp, 1, axis1, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dims[0] == huge && out[0]->dims[1] == 0,
		  "Compress of [10^15, 0] along axis 1: %s", err);
	free_outs(out, 1);
	CHECK(run_op("Hardmax", 13, 1, hm, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  out[0]->dims[0] == huge && out[0]->dims[1] == 0,
		  "Hardmax of [10^15, 0]: %s", err);
	free_outs(out, 1);
	{
		/*
		 * Empty tensors whose other dims multiply past int64 ([2^40,
		 * 2^40, 0], [0, 1, 2^40, 2^40]): the operators took outer and inner
		 * products of them (signed overflow, which build-asan's UBSan
		 * stops on) before their empty checks.  Their outputs (of the
		 * same other dims) are now refused by ie_tensor_new, so each must
		 * reach that refusal without overflowing on the way.
		 */
		int64_t		big = 1099511627776LL;
		ie_tensor  *E3 = unchecked_empty(IE_FLOAT, 3, (int64_t[]) {big, big, 0}),
				   *E3b = unchecked_empty(IE_FLOAT, 4, (int64_t[]) {0, 1, big, big}),
				   *K0 = i64_tensor(1, (int64_t[]) {0}),
				   *Ax = i64_tensor(1, (int64_t[]) {2}),
				   *Ib = unchecked_empty(IE_INT64, 3, (int64_t[]) {big, big, 0}),
				   *D3 = i64_tensor(1, (int64_t[]) {3}),
				   *SL = ie_tensor_new(IE_INT64, 1, (int64_t[]) {0});
		const ie_tensor *tk[2] = {E3, K0},
				   *cs2[2] = {E3, Ax},
				   *hm2[1] = {E3},
				   *oh2[3] = {Ib, D3, V},
				   *rs[2] = {E3b, SL};
		ie_attr		ax1 = attr_int("axis", 1),
					ba = attr_int("batch_axis", 0),
					ta = attr_int("time_axis", 1);
		ie_attr		rsa[2] = {ba, ta};

		CHECK(run_op("TopK", 11, 2, tk, 0, NULL, 2, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "TopK of [2^40, 2^40, 0]: %s", err);
		free_outs(out, 2);
		CHECK(run_op("CumSum", 14, 2, cs2, 0, NULL, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "CumSum of [2^40, 2^40, 0]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("Hardmax", 11, 1, hm2, 1, &ax1, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "Hardmax-11 of [2^40, 2^40, 0]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("Hardmax", 13, 1, hm2, 0, NULL, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "Hardmax-13 of [2^40, 2^40, 0]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("OneHot", 11, 3, oh2, 0, NULL, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "OneHot of indices [2^40, 2^40, 0]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("ReverseSequence", 10, 2, rs, 2, rsa, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "ReverseSequence of [0, 1, 2^40, 2^40]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("LRN", 13, 1, (const ie_tensor *[]) {E3b}, 1,
					 (ie_attr[]) {attr_int("size", 3)}, 1, out, err, sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "LRN of [0, 1, 2^40, 2^40]: %s", err);
		free_outs(out, 1);
		/*
		 * LpNormalization of [10^15, 0] along axis 1 looped 10^15 times
		 * over nothing; MeanVarianceNormalization multiplied the dims of
		 * [2^40, 2^40, 0] before its empty check.
		 */
		/* EyeLike of [10^15, 0] looped over its 10^15 rows, storing nothing */
		CHECK(run_op("EyeLike", 9, 1, (const ie_tensor *[]) {Z}, 0, NULL, 1, out, err,
					 sizeof(err)) == 0 && out[0]->dims[0] == huge && out[0]->dims[1] == 0,
			  "EyeLike of [10^15, 0]: %s", err);
		free_outs(out, 1);
		CHECK(run_op("LpNormalization", 22, 1, (const ie_tensor *[]) {Z}, 1,
					 (ie_attr[]) {attr_int("axis", 1)}, 1, out, err, sizeof(err)) == 0 &&
			  out[0]->dims[0] == huge && out[0]->dims[1] == 0,
			  "LpNormalization of [10^15, 0] along axis 1: %s", err);
		free_outs(out, 1);
		CHECK(run_op("MeanVarianceNormalization", 13, 1, (const ie_tensor *[]) {E3}, 1,
					 (ie_attr[]) {attr_ints("axes", 1, (int64_t[]) {2})}, 1, out, err,
					 sizeof(err)) == -1 && strstr(err, CANNOT_COUNT) != NULL,
			  "MeanVarianceNormalization of [2^40, 2^40, 0]: %s", err);
		free_outs(out, 1);
		ie_tensor_destroy(&E3);
		ie_tensor_destroy(&E3b);
		ie_tensor_destroy(&K0);
		ie_tensor_destroy(&Ax);
		ie_tensor_destroy(&Ib);
		ie_tensor_destroy(&D3);
		ie_tensor_destroy(&SL);
	}
	ie_tensor_destroy(&I);
	ie_tensor_destroy(&Dh);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&Z);
	ie_tensor_destroy(&A1);
	ie_tensor_destroy(&C0);
}

/* NonZero of int32 and of float with -0.0 (zero); a missing input refused. */
static void
test_nonzero(void)
{
	ie_tensor  *X = typed_tensor(IE_INT32, 2, (int64_t[]) {2, 3}, (int32_t[]) {0, 1, 0, 2, 0, 3});
	ie_tensor  *F = tu_float_tensor(1, (int64_t[]) {4}, (float[]) {-0.0f, 1.5f, 0, -2});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[1] = {X};

	CHECK(run_op("NonZero", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {2, 3}, (int64_t[]) {0, 1, 1, 1, 0, 2}),
		  "NonZero of a [2, 3] int32: %s", err);
	free_outs(out, 1);
	in[0] = F;
	CHECK(run_op("NonZero", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {1, 2}, (int64_t[]) {1, 3}),
		  "NonZero counts -0.0 as zero: %s", err);
	free_outs(out, 1);
	in[0] = NULL;
	CHECK(run_op("NonZero", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "missing input 0 (X)") != NULL,
		  "NonZero without its input refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&F);
}

/*
 * Dropout in inference: output = input, mask all true (bool at 13, ones
 * of the input's type at 7); refused: training_mode true, opset 6 without
 * is_test (training by default).
 */
static void
test_dropout(void)
{
	ie_tensor  *X = tu_float_tensor(1, (int64_t[]) {3}, (float[]) {1, -2, 3});
	ie_tensor  *R = typed_tensor(IE_FLOAT, 0, NULL, (float[]) {0.5f});
	ie_tensor  *T = typed_tensor(IE_BOOL, 0, NULL, (uint8_t[]) {1});
	ie_tensor  *out[2];
	char		err[256];
	const ie_tensor *in[3] = {X, R, T};
	ie_attr		is_test[1] = {attr_int("is_test", 1)};

	CHECK(run_op("Dropout", 13, 2, in, 0, NULL, 2, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {3}, (float[]) {1, -2, 3}) &&
		  tensor_is(out[1], IE_BOOL, 1, (int64_t[]) {3}, (uint8_t[]) {1, 1, 1}),
		  "Dropout-13: the input and a true mask: %s", err);
	free_outs(out, 2);
	CHECK(run_op("Dropout", 7, 1, in, 0, NULL, 2, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[1], 1, (int64_t[]) {3}, (float[]) {1, 1, 1}),
		  "Dropout-7: a float mask of ones: %s", err);
	free_outs(out, 2);
	CHECK(run_op("Dropout", 6, 1, in, 1, is_test, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {3}, (float[]) {1, -2, 3}),
		  "Dropout-6 with is_test 1: %s", err);
	free_outs(out, 2);
	CHECK(run_op("Dropout", 13, 3, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "training mode (training_mode true) is not supported") != NULL,
		  "Dropout-13 with training_mode true refused: %s", err);
	free_outs(out, 1);
	CHECK(run_op("Dropout", 6, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "training mode (is_test = 0") != NULL,
		  "Dropout-6 without is_test refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&R);
	ie_tensor_destroy(&T);
}

/*
 * Hardmax-13 along the last axis and axis 0, Hardmax-11's 2-D coercion at
 * axis 0 (one row of everything); refused: int32 input, axis past the rank.
 */
static void
test_hardmax(void)
{
	ie_tensor  *X = tu_float_tensor(2, (int64_t[]) {2, 3}, (float[]) {1, 3, 3, -1, -2, -3});
	ie_tensor  *S = tu_float_tensor(2, (int64_t[]) {2, 2}, (float[]) {1, 2, 3, 0});
	ie_tensor  *Xi = typed_tensor(IE_INT32, 1, (int64_t[]) {2}, (int32_t[]) {1, 2});
	ie_tensor  *Xn = tu_float_tensor(1, (int64_t[]) {3}, (float[]) {1, NAN, 3});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[1] = {X};
	ie_attr		axis0[1] = {attr_int("axis", 0)};
	ie_attr		axis2[1] = {attr_int("axis", 2)};

	CHECK(run_op("Hardmax", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 3}, (float[]) {0, 1, 0, 1, 0, 0}),
		  "Hardmax-13, the first maximum of each row: %s", err);
	free_outs(out, 1);
	in[0] = S;
	CHECK(run_op("Hardmax", 13, 1, in, 1, axis0, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 2}, (float[]) {0, 1, 1, 0}),
		  "Hardmax-13 along axis 0: %s", err);
	free_outs(out, 1);
	in[0] = Xn;
	CHECK(run_op("Hardmax", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {3}, (float[]) {0, 1, 0}),
		  "Hardmax-13 picks the first NaN, as numpy.argmax: %s", err);
	free_outs(out, 1);
	in[0] = S;
	CHECK(run_op("Hardmax", 11, 1, in, 1, axis0, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 2}, (float[]) {0, 0, 1, 0}),
		  "Hardmax-11 at axis 0, one row of all four: %s", err);
	free_outs(out, 1);
	CHECK(run_op("Hardmax", 13, 1, in, 1, axis2, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "axis 2 is out of range for rank 2") != NULL,
		  "Hardmax-13 axis 2 of rank 2 refused: %s", err);
	free_outs(out, 1);
	in[0] = Xi;
	CHECK(run_op("Hardmax", 13, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "element type int32 is not supported") != NULL,
		  "Hardmax of int32 refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&S);
	ie_tensor_destroy(&Xi);
	ie_tensor_destroy(&Xn);
}

/* EyeLike with k = 1, with dtype int64; refused: rank 3, dtype string. */
static void
test_eyelike(void)
{
	ie_tensor  *X = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {2, 3});
	ie_tensor  *X3 = ie_tensor_new(IE_FLOAT, 3, (int64_t[]) {1, 2, 3});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[1] = {X};
	ie_attr		k1[1] = {attr_int("k", 1)};
	ie_attr		i64[1] = {attr_int("dtype", IE_INT64)};
	ie_attr		str[1] = {attr_int("dtype", IE_STRING)};

	CHECK(run_op("EyeLike", 9, 1, in, 1, k1, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 3}, (float[]) {0, 1, 0, 0, 0, 1}),
		  "EyeLike k=1: %s", err);
	free_outs(out, 1);
	CHECK(run_op("EyeLike", 9, 1, in, 1, i64, 1, out, err, sizeof(err)) == 0 &&
		  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {2, 3}, (int64_t[]) {1, 0, 0, 0, 1, 0}),
		  "EyeLike dtype int64: %s", err);
	free_outs(out, 1);
	CHECK(run_op("EyeLike", 9, 1, in, 1, str, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "dtype 8 (string) is not supported") != NULL,
		  "EyeLike dtype string refused: %s", err);
	free_outs(out, 1);
	in[0] = X3;
	CHECK(run_op("EyeLike", 9, 1, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "input must be 2-D, got rank 3") != NULL,
		  "EyeLike of a rank-3 input refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&X3);
}

/* Compress along axis 0 and flattened; a condition longer than the axis refused. */
static void
test_compress(void)
{
	ie_tensor  *X = tu_float_tensor(2, (int64_t[]) {3, 2}, (float[]) {1, 2, 3, 4, 5, 6});
	ie_tensor  *C = typed_tensor(IE_BOOL, 1, (int64_t[]) {3}, (uint8_t[]) {0, 1, 1});
	ie_tensor  *Cf = typed_tensor(IE_BOOL, 1, (int64_t[]) {5}, (uint8_t[]) {0, 1, 0, 0, 1});
	ie_tensor  *Clong = typed_tensor(IE_BOOL, 1, (int64_t[]) {4}, (uint8_t[]) {0, 1, 0, 0});
	ie_tensor  *out[1];
	char		err[256];
	const ie_tensor *in[2] = {X, C};
	ie_attr		axis0[1] = {attr_int("axis", 0)};

	CHECK(run_op("Compress", 11, 2, in, 1, axis0, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 2, (int64_t[]) {2, 2}, (float[]) {3, 4, 5, 6}),
		  "Compress rows 1 and 2: %s", err);
	free_outs(out, 1);
	in[1] = Cf;
	CHECK(run_op("Compress", 11, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  float_tensor_is(out[0], 1, (int64_t[]) {2}, (float[]) {2, 5}),
		  "Compress flattened, a short condition: %s", err);
	free_outs(out, 1);
	in[1] = Clong;
	CHECK(run_op("Compress", 11, 2, in, 1, axis0, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "condition has 4 entries, more than the 3 of the axis") != NULL,
		  "Compress with a condition longer than the axis refused: %s", err);
	free_outs(out, 1);
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&C);
	ie_tensor_destroy(&Cf);
	ie_tensor_destroy(&Clong);
}

/* ReverseSequence time-major (against a naive loop); a length past the time axis refused. */
static void
test_reverse_sequence(void)
{
	int64_t		xv[8],
				want[8],
				lens[2] = {3, 1};
	ie_tensor  *X,
			   *L = i64_tensor(2, lens),
			   *Lbad = i64_tensor(2, (int64_t[]) {5, 1});
	ie_tensor  *out[1];
	char		err[256];

	for (int i = 0; i < 8; i++)
		xv[i] = i;
	/* [time 4, batch 2]: out[t][b] = in[t < L ? L-1-t : t][b] */
	for (int t = 0; t < 4; t++)
		for (int b = 0; b < 2; b++)
			want[t * 2 + b] = xv[(t < lens[b] ? lens[b] - 1 - t : t) * 2 + b];
	X = typed_tensor(IE_INT64, 2, (int64_t[]) {4, 2}, xv);
	{
		const ie_tensor *in[2] = {X, L};

		CHECK(run_op("ReverseSequence", 10, 2, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  tensor_is(out[0], IE_INT64, 2, (int64_t[]) {4, 2}, want) &&
			  ((int64_t *) out[0]->data)[0] == 4,
			  "ReverseSequence time-major, lengths 3 and 1: %s", err);
		free_outs(out, 1);
		in[1] = Lbad;
		CHECK(run_op("ReverseSequence", 10, 2, in, 0, NULL, 1, out, err, sizeof(err)) == -1 &&
			  strstr(err, "sequence_lens[0] = 5 is out of range [0, 4]") != NULL,
			  "ReverseSequence length 5 on 4 steps refused: %s", err);
		free_outs(out, 1);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&L);
	ie_tensor_destroy(&Lbad);
}

/* ---- ONNX node tests ---- */

/* A TensorProto file as an ie_tensor (float, double, int32/64, uint8, bool). */
static ie_tensor *
load_tensor(const char *path)
{
	size_t		len;
	uint8_t    *buf = tu_read_file(path, &len);
	Onnx__TensorProto *tp;
	ie_tensor  *t = NULL;
	int64_t		n;

	if (buf == NULL)
		return NULL;
	tp = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (tp == NULL)
		return NULL;
	t = ie_tensor_new((ie_dtype) tp->data_type, (int) tp->n_dims, tp->dims);
	if (t == NULL)
		goto done;
	n = ie_tensor_numel(t);
	if (n == 0)
		;						/* nothing to copy */
	else if (tp->has_raw_data && tp->raw_data.len == t->nbytes)
		memcpy(t->data, tp->raw_data.data, t->nbytes);
	else if (t->dtype == IE_FLOAT && (int64_t) tp->n_float_data == n)
		memcpy(t->data, tp->float_data, t->nbytes);
	else if (t->dtype == IE_DOUBLE && (int64_t) tp->n_double_data == n)
		memcpy(t->data, tp->double_data, t->nbytes);
	else if (t->dtype == IE_INT64 && (int64_t) tp->n_int64_data == n)
		memcpy(t->data, tp->int64_data, t->nbytes);
	else if ((t->dtype == IE_INT32) && (int64_t) tp->n_int32_data == n)
		memcpy(t->data, tp->int32_data, t->nbytes);
	else if ((t->dtype == IE_UINT8 || t->dtype == IE_BOOL) && (int64_t) tp->n_int32_data == n)
		for (int64_t i = 0; i < n; i++)
			((uint8_t *) t->data)[i] = (uint8_t) tp->int32_data[i];
	else
		ie_tensor_destroy(&t);
done:
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return t;
}

/* ---- quantization operators (ops_quant.c) ---- */

/*
 * Whether t is an integer tensor (int8, uint8, int16, uint16 or int32) of
 * dtype dt and shape dims[0..nd) holding want.
 */
static int
ints_are(const ie_tensor *t, ie_dtype dt, int nd, const int64_t *dims,
		 const int64_t *want)
{
	if (!shape_is(t, nd, dims) || t->dtype != dt)
		return 0;
	for (int64_t i = 0; i < ie_tensor_numel(t); i++)
	{
		int64_t		v;

		switch (dt)
		{
			case IE_INT8: v = ((const int8_t *) t->data)[i]; break;
			case IE_UINT8: v = ((const uint8_t *) t->data)[i]; break;
			case IE_INT16: v = ((const int16_t *) t->data)[i]; break;
			case IE_UINT16: v = ((const uint16_t *) t->data)[i]; break;
			case IE_INT32: v = ((const int32_t *) t->data)[i]; break;
			default: return 0;
		}
		if (v != want[i])
			return 0;
	}
	return 1;
}

/* Runs op_type expecting failure with msg in the message. */
static void
check_quant_refused(const char *op_type, int opset, int n_in, const ie_tensor *const *in,
					int n_attr, const ie_attr *attrs, int n_out, const char *msg)
{
	char		err[256];
	ie_tensor  *out[3];

	CHECK(run_op(op_type, opset, n_in, in, n_attr, attrs, n_out, out, err, sizeof(err)) == -1 &&
		  strstr(err, msg) != NULL, "%s-%d must fail with \"%s\": \"%s\"", op_type, opset, msg, err);
	free_outs(out, n_out);
}

/*
 * QuantizeLinear, by hand: rint ties to even, then the zero point, then
 * saturation.  Per-tensor (13): x [5, 7, -3, 1000, -1000, 1] / 2 = [2.5,
 * 3.5, -1.5, 500, -500, 0.5] -> [2, 4, -2, ..] + 10 -> uint8 [12, 14, 8,
 * 255, 0, 10].  Opset 10 without a zero point: uint8, [-1, 1.5, 254.5,
 * 300] -> [0, 2, 254, 255].  Per-axis (13, axis 1): x [[1, 2, 3], [4, 5,
 * 6]], scales [1, 2, 4], int8 zero points [0, -1, 1] -> [[1, 0, 2], [4, 1,
 * 3]].  Blocked (21, axis 1, block_size 2): x [[1, 2, 3, 4], [5, 6, 7,
 * 8]], scales [[1, 2], [4, 8]], int16 zero points [[0, 0], [100, -100]]
 * -> [[1, 2, 2, 2], [101, 102, -99, -99]]; a remainder block (x [1, 3],
 * scales [1, 2] = [2, 3], output_dtype int8) -> [1, 2, 2].  Refusals: a
 * per-axis scale of the wrong length, axis out of range, a blocked scale
 * whose block count is not ceil(D / block_size), output_dtype float8 (at
 * load too), output_dtype differing from the zero point's type, an int32
 * scale before opset 19, precision bfloat16 (load too), a zero point
 * shaped unlike the scale, a per-axis scale at opset 10.  An empty x [0,
 * 3] per-axis gives an empty int8 [0, 3].  float16: a float16 scale of 1
 * gives opset 10's values; 0.25 / 0.1 (0.0999755859375 as float16) is
 * 2.5006 in float (-> 3) but 2.5 in float16 (-> 2): float16 division when
 * x and the scale are both float16 (numpy's promotion in the reference),
 * float otherwise or with precision float.  int32 scales (opset 19's T1
 * ties an int32 x to an int32 scale; 23 allows one with any x) divide in
 * double, as numpy's true division: int32 [7, -7, 5, 3] / 2 -> [4, -4, 2,
 * 2] (ties to even), float 5 / int32 2 -> 2; they were refused, so an
 * int32 x could not be quantized at opsets 19 to 22.
 */
static void
test_quantize_linear(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d6[1] = {6},
				d4[1] = {4},
				d23[2] = {2, 3},
				d3[1] = {3},
				d2[1] = {2},
				d24[2] = {2, 4},
				d22[2] = {2, 2},
				d13[2] = {1, 3},
				d12[2] = {1, 2},
				d11[2] = {1, 1};
	float		x1[6] = {5, 7, -3, 1000, -1000, 1},
				two = 2.0f,
				one = 1.0f,
				x2[4] = {-1, 1.5f, 254.5f, 300},
				x3[6] = {1, 2, 3, 4, 5, 6},
				s3[3] = {1, 2, 4},
				x4[8] = {1, 2, 3, 4, 5, 6, 7, 8},
				s4[4] = {1, 2, 4, 8},
				x5[3] = {2, 4, 6},
				s5[2] = {2, 3},
				s2[2] = {1, 1};
	uint8_t		z10 = 10;
	int8_t		z3[3] = {0, -1, 1};
	int16_t		z4[4] = {0, 0, 100, -100};
	uint16_t	h1 = 0x3c00;
	int64_t		want1[6] = {12, 14, 8, 255, 0, 10},
				want2[4] = {0, 2, 254, 255},
				want3[6] = {1, 0, 2, 4, 1, 3},
				want4[8] = {1, 2, 2, 2, 101, 102, -99, -99},
				want5[3] = {1, 2, 2};
	ie_tensor  *X1 = tu_float_tensor(1, d6, x1),
			   *S2 = tu_float_tensor(0, NULL, &two),
			   *S1 = tu_float_tensor(0, NULL, &one),
			   *Z10 = typed_tensor(IE_UINT8, 0, NULL, &z10),
			   *X2 = tu_float_tensor(1, d4, x2),
			   *X3 = tu_float_tensor(2, d23, x3),
			   *S3 = tu_float_tensor(1, d3, s3),
			   *Z3 = typed_tensor(IE_INT8, 1, d3, z3),
			   *X4 = tu_float_tensor(2, d24, x4),
			   *S4 = tu_float_tensor(2, d22, s4),
			   *Z4 = typed_tensor(IE_INT16, 2, d22, z4),
			   *X5 = tu_float_tensor(2, d13, x5),
			   *S5 = tu_float_tensor(2, d12, s5),
			   *S11 = tu_float_tensor(2, d11, &one),
			   *Sbad = tu_float_tensor(1, d2, s2),
			   *H = typed_tensor(IE_FLOAT16, 0, NULL, &h1);
	const ie_tensor *in1[3] = {X1, S2, Z10},
			   *in2[2] = {X2, S1},
			   *in3[3] = {X3, S3, Z3},
			   *in4[3] = {X4, S4, Z4},
			   *in5[2] = {X5, S5},
			   *bad_axis[2] = {X3, Sbad},
			   *bad_block[2] = {X5, S11},
			   *bad_zp[3] = {X3, S3, Z10},
			   *half[2] = {X2, H},
			   *dt_zp[3] = {X2, S1, Z10};
	ie_attr		ax1 = attr_int("axis", 1),
				ax2 = attr_int("axis", 2),
				blk[2] = {attr_int("axis", 1), attr_int("block_size", 2)},
				blk5[3] = {attr_int("axis", 1), attr_int("block_size", 2),
			attr_int("output_dtype", IE_INT8)},
				od_f8 = attr_int("output_dtype", 17),
				od_i8 = attr_int("output_dtype", IE_INT8);

	CHECK(run_op("QuantizeLinear", 13, 3, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d6, want1), "quantize per-tensor: %s", err);
	free_outs(out, 1);
	CHECK(run_op("QuantizeLinear", 10, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d4, want2), "quantize-10 default uint8: %s", err);
	free_outs(out, 1);
	CHECK(run_op("QuantizeLinear", 13, 3, in3, 1, &ax1, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT8, 2, d23, want3), "quantize per-axis: %s", err);
	free_outs(out, 1);
	CHECK(run_op("QuantizeLinear", 21, 3, in4, 2, blk, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT16, 2, d24, want4), "quantize blocked int16: %s", err);
	free_outs(out, 1);
	CHECK(run_op("QuantizeLinear", 21, 2, in5, 3, blk5, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT8, 2, d13, want5), "quantize blocked remainder: %s", err);
	free_outs(out, 1);
	{
		int64_t		d03[2] = {0, 3};
		ie_tensor  *E = ie_tensor_new(IE_FLOAT, 2, d03);
		const ie_tensor *ein[3] = {E, S3, Z3};

		CHECK(run_op("QuantizeLinear", 13, 3, ein, 1, &ax1, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_INT8, 2, d03, NULL), "quantize empty per-axis: %s", err);
		free_outs(out, 1);
		ie_tensor_destroy(&E);
	}
	check_quant_refused("QuantizeLinear", 13, 2, bad_axis, 1, &ax1, 1,
						"must have x's dim 3 at axis 1");
	check_quant_refused("QuantizeLinear", 13, 3, in3, 1, &ax2, 1,
						"axis 2 is out of range for an input of rank 2");
	check_quant_refused("QuantizeLinear", 21, 2, bad_block, 2, blk, 1,
						"blocked scale of shape [1, 1] must have shape [1, 2] "
						"(x's [1, 3] with ceil(3 / 2) blocks at axis 1)");
	check_quant_refused("QuantizeLinear", 21, 2, in2, 1, &od_f8, 1,
						"quantizing to float8e4m3fn is not supported");
	check_attrs_load("QuantizeLinear", 21, 1, &od_f8, "quantizing to float8e4m3fn is not supported",
					 IE_ERR_NOT_SUPPORTED);
	check_attrs_load("QuantizeLinear", 21, 1, &od_i8, NULL, IE_ERR_NONE);
	check_quant_refused("QuantizeLinear", 21, 3, dt_zp, 1, &od_i8, 1,
						"output_dtype int8 differs from y_zero_point's type uint8");
	CHECK(run_op("QuantizeLinear", 19, 2, half, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d4, want2), "quantize float16 scale: %s", err);
	free_outs(out, 1);
	{
		uint16_t	hx = 0x3400,	/* 0.25 */
					hs = 0x2e66;	/* 0.0999755859375 */
		float		fx = 0.25f;
		int32_t		ione = 1,
					itwo = 2,
					ix4[4] = {7, -7, 5, 3};
		int8_t		i8zero = 0;
		float		f5 = 5.0f;
		int64_t		two_ = 2,
					three = 3,
					want_iq[4] = {4, -4, 2, 2};
		ie_tensor  *HX = typed_tensor(IE_FLOAT16, 0, NULL, &hx),
				   *HS = typed_tensor(IE_FLOAT16, 0, NULL, &hs),
				   *FX = tu_float_tensor(0, NULL, &fx),
				   *IS = typed_tensor(IE_INT32, 0, NULL, &ione),
				   *IS2 = typed_tensor(IE_INT32, 0, NULL, &itwo),
				   *IX4 = typed_tensor(IE_INT32, 1, d4, ix4),
				   *I8Z = typed_tensor(IE_INT8, 0, NULL, &i8zero),
				   *F5 = tu_float_tensor(0, NULL, &f5);
		const ie_tensor *hh[2] = {HX, HS},
				   *fh[2] = {FX, HS},
				   *is[2] = {X2, IS},
				   *iq[3] = {IX4, IS2, I8Z},
				   *fi[2] = {F5, IS2};
		ie_attr		pf = attr_int("precision", IE_FLOAT),
					pb = attr_int("precision", 16);

		CHECK(run_op("QuantizeLinear", 19, 2, hh, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_UINT8, 0, NULL, &two_), "quantize float16 / float16: %s", err);
		free_outs(out, 1);
		CHECK(run_op("QuantizeLinear", 19, 2, fh, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_UINT8, 0, NULL, &three), "quantize float / float16: %s", err);
		free_outs(out, 1);
		CHECK(run_op("QuantizeLinear", 23, 2, hh, 1, &pf, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_UINT8, 0, NULL, &three), "quantize precision float: %s", err);
		free_outs(out, 1);
		check_quant_refused("QuantizeLinear", 23, 2, hh, 1, &pb, 1,
							"precision bfloat16 is not supported");
		check_attrs_load("QuantizeLinear", 23, 1, &pb, "precision bfloat16 is not supported",
						 IE_ERR_NOT_SUPPORTED);
		check_quant_refused("QuantizeLinear", 13, 2, is, 0, NULL, 1,
							"y_scale of type int32 is not supported");
		CHECK(run_op("QuantizeLinear", 19, 3, iq, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_INT8, 1, d4, want_iq), "quantize int32 / int32: %s", err);
		free_outs(out, 1);
		CHECK(run_op("QuantizeLinear", 23, 2, fi, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  ints_are(out[0], IE_UINT8, 0, NULL, &two_), "quantize float / int32: %s", err);
		free_outs(out, 1);
		ie_tensor_destroy(&HX);
		ie_tensor_destroy(&HS);
		ie_tensor_destroy(&FX);
		ie_tensor_destroy(&IS);
		ie_tensor_destroy(&IS2);
		ie_tensor_destroy(&IX4);
		ie_tensor_destroy(&I8Z);
		ie_tensor_destroy(&F5);
	}
	check_quant_refused("QuantizeLinear", 13, 3, bad_zp, 1, &ax1, 1,
						"zero point of shape [] differs from the scale's [3]");
	check_quant_refused("QuantizeLinear", 10, 2, bad_axis, 0, NULL, 1,
						"per-axis scales need opset 13");
	ie_tensor_destroy(&X1);
	ie_tensor_destroy(&S2);
	ie_tensor_destroy(&S1);
	ie_tensor_destroy(&Z10);
	ie_tensor_destroy(&X2);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&S3);
	ie_tensor_destroy(&Z3);
	ie_tensor_destroy(&X4);
	ie_tensor_destroy(&S4);
	ie_tensor_destroy(&Z4);
	ie_tensor_destroy(&X5);
	ie_tensor_destroy(&S5);
	ie_tensor_destroy(&S11);
	ie_tensor_destroy(&Sbad);
	ie_tensor_destroy(&H);
}

/*
 * DequantizeLinear, by hand: per-tensor (10) uint8 [0, 10, 255], scale
 * 0.5, zero point 10 -> [-5, 0, 122.5]; per-axis (13, axis 0) int8 [[-128,
 * 127], [0, 1]], scales [2, 0.25], zero points [0, 1] -> [[-256, 254],
 * [-0.25, 0]]; blocked (21, axis 0, block_size 2) int32 [[1], [2], [3]],
 * scales [[10], [100]] -> [[10], [20], [300]]; uint16 (21) 65535 less
 * zero point 65535 -> 0; a float16 scale 0.5, or output_dtype float16,
 * gives float16 [-5, 0, 122.5].  Refusals: a zero point of another type
 * than x, float x, output_dtype bfloat16 (at load too), a scale of rank 2
 * without block_size.
 */
static void
test_dequantize_linear(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d3[1] = {3},
				d22[2] = {2, 2},
				d2[1] = {2},
				d31[2] = {3, 1},
				d21[2] = {2, 1};
	uint8_t		x1[3] = {0, 10, 255},
				z1 = 10;
	int8_t		x2[4] = {-128, 127, 0, 1},
				z2[2] = {0, 1};
	int32_t		x3[3] = {1, 2, 3};
	uint16_t	x4 = 65535;
	float		half = 0.5f,
				s2[2] = {2, 0.25f},
				s3[2] = {10, 100},
				one = 1.0f,
				fx[2] = {1, 2};
	double		want1[3] = {-5, 0, 122.5},
				want2[4] = {-256, 254, -0.25, 0},
				want3[3] = {10, 20, 300},
				want4[1] = {0};
	ie_tensor  *X1 = typed_tensor(IE_UINT8, 1, d3, x1),
			   *S1 = tu_float_tensor(0, NULL, &half),
			   *Z1 = typed_tensor(IE_UINT8, 0, NULL, &z1),
			   *X2 = typed_tensor(IE_INT8, 2, d22, x2),
			   *S2 = tu_float_tensor(1, d2, s2),
			   *Z2 = typed_tensor(IE_INT8, 1, d2, z2),
			   *X3 = typed_tensor(IE_INT32, 2, d31, x3),
			   *S3 = tu_float_tensor(2, d21, s3),
			   *X4 = typed_tensor(IE_UINT16, 0, NULL, &x4),
			   *Z4 = typed_tensor(IE_UINT16, 0, NULL, &x4),
			   *S4 = tu_float_tensor(0, NULL, &one),
			   *FX = tu_float_tensor(1, d2, fx);
	const ie_tensor *in1[3] = {X1, S1, Z1},
			   *in2[3] = {X2, S2, Z2},
			   *in3[2] = {X3, S3},
			   *in4[3] = {X4, S4, Z4},
			   *mixed[3] = {X2, S2, Z1},
			   *fin[2] = {FX, S4},
			   *rank2[2] = {X3, S3};
	ie_attr		ax0 = attr_int("axis", 0),
				blk[2] = {attr_int("axis", 0), attr_int("block_size", 2)},
				od16 = attr_int("output_dtype", IE_FLOAT16);

	CHECK(run_op("DequantizeLinear", 10, 3, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 1, d3, want1, 0), "dequantize per-tensor: %s", err);
	free_outs(out, 1);
	CHECK(run_op("DequantizeLinear", 13, 3, in2, 1, &ax0, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, d22, want2, 0), "dequantize per-axis: %s", err);
	free_outs(out, 1);
	CHECK(run_op("DequantizeLinear", 21, 2, in3, 2, blk, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 2, d31, want3, 0), "dequantize blocked int32: %s", err);
	free_outs(out, 1);
	CHECK(run_op("DequantizeLinear", 21, 3, in4, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  values_near(out[0], IE_FLOAT, 0, NULL, want4, 0), "dequantize uint16: %s", err);
	free_outs(out, 1);
	check_quant_refused("DequantizeLinear", 13, 3, mixed, 1, &ax0, 1,
						"x_zero_point of type uint8 differs from x's type int8");
	check_quant_refused("DequantizeLinear", 13, 2, fin, 0, NULL, 1,
						"input of type float is not supported");
	{
		uint16_t	hhalf = 0x3800,
					want16[3] = {0xc500, 0x0000, 0x57a8};	/* -5, 0, 122.5 */
		ie_tensor  *HS = typed_tensor(IE_FLOAT16, 0, NULL, &hhalf);
		const ie_tensor *hin[3] = {X1, HS, Z1};
		ie_attr		odb = attr_int("output_dtype", 16);

		CHECK(run_op("DequantizeLinear", 19, 3, hin, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 1, d3) && out[0]->dtype == IE_FLOAT16 &&
			  memcmp(out[0]->data, want16, sizeof(want16)) == 0,
			  "dequantize float16 scale: %s", err);
		free_outs(out, 1);
		CHECK(run_op("DequantizeLinear", 23, 3, in1, 1, &od16, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 1, d3) && out[0]->dtype == IE_FLOAT16 &&
			  memcmp(out[0]->data, want16, sizeof(want16)) == 0,
			  "dequantize output_dtype float16: %s", err);
		free_outs(out, 1);
		check_quant_refused("DequantizeLinear", 23, 3, in1, 1, &odb, 1,
							"output_dtype bfloat16 is not supported");
		check_attrs_load("DequantizeLinear", 23, 1, &odb, "output_dtype bfloat16 is not supported",
						 IE_ERR_NOT_SUPPORTED);
		ie_tensor_destroy(&HS);
	}
	check_quant_refused("DequantizeLinear", 21, 2, rank2, 1, &ax0, 1,
						"scale of shape [2, 1] must be a scalar or a 1-D tensor");
	ie_tensor_destroy(&X1);
	ie_tensor_destroy(&S1);
	ie_tensor_destroy(&Z1);
	ie_tensor_destroy(&X2);
	ie_tensor_destroy(&S2);
	ie_tensor_destroy(&Z2);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&S3);
	ie_tensor_destroy(&X4);
	ie_tensor_destroy(&Z4);
	ie_tensor_destroy(&S4);
	ie_tensor_destroy(&FX);
}

/*
 * DynamicQuantizeLinear: x [-51, 0, 204, 102, 1.5] spans 255, so scale 1,
 * zero point 0 - (-51) = 51, y = rint(x) + 51 = [0, 51, 255, 153, 53]
 * (1.5 -> 2); x [0, 5, 510] (min 0): scale 2, zero point 0, [0, 2, 255]
 * (2.5 -> 2); all zeros: scale 1 / 255, zero point 0; a node naming y
 * alone gets y alone.  A NaN is refused, and so is -inf: [1, -inf, -2]
 * gives scale inf and zero point 0 - (-inf / inf), a NaN, whose conversion
 * to uint8 was undefined behaviour (-fsanitize=float-cast-overflow).
 */
static void
test_dynamic_quantize(void)
{
	char		err[256];
	ie_tensor  *out[3];
	int64_t		d5[1] = {5},
				d3[1] = {3},
				d2[1] = {2};
	float		x1[5] = {-51, 0, 204, 102, 1.5f},
				x2[3] = {0, 5, 510},
				x3[2] = {0, 0},
				xn[2] = {0, NAN},
				xi[3] = {1, -INFINITY, -2};
	int64_t		want1[5] = {0, 51, 255, 153, 53},
				want2[3] = {0, 2, 255},
				want3[2] = {0, 0},
				z51 = 51,
				z0 = 0;
	ie_tensor  *X1 = tu_float_tensor(1, d5, x1),
			   *X2 = tu_float_tensor(1, d3, x2),
			   *X3 = tu_float_tensor(1, d2, x3),
			   *XN = tu_float_tensor(1, d2, xn),
			   *XI = tu_float_tensor(1, d3, xi);
	const ie_tensor *in1[1] = {X1},
			   *in2[1] = {X2},
			   *in3[1] = {X3},
			   *inn[1] = {XN},
			   *ini[1] = {XI};

	CHECK(run_op("DynamicQuantizeLinear", 11, 1, in1, 0, NULL, 3, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d5, want1) &&
		  *(const float *) out[1]->data == 1.0f && out[1]->ndim == 0 &&
		  ints_are(out[2], IE_UINT8, 0, NULL, &z51), "dynamic quantize signed: %s", err);
	free_outs(out, 3);
	CHECK(run_op("DynamicQuantizeLinear", 11, 1, in2, 0, NULL, 3, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d3, want2) &&
		  *(const float *) out[1]->data == 2.0f &&
		  ints_are(out[2], IE_UINT8, 0, NULL, &z0), "dynamic quantize positive: %s", err);
	free_outs(out, 3);
	CHECK(run_op("DynamicQuantizeLinear", 11, 1, in3, 0, NULL, 3, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d2, want3) &&
		  *(const float *) out[1]->data == 1.0f / 255.0f &&
		  ints_are(out[2], IE_UINT8, 0, NULL, &z0), "dynamic quantize zeros: %s", err);
	free_outs(out, 3);
	CHECK(run_op("DynamicQuantizeLinear", 11, 1, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 1, d5, want1), "dynamic quantize, y alone: %s", err);
	free_outs(out, 1);
	check_quant_refused("DynamicQuantizeLinear", 11, 1, inn, 0, NULL, 3, "holds a NaN at element 1");
	check_quant_refused("DynamicQuantizeLinear", 11, 1, ini, 0, NULL, 3,
						"x holds -inf at element 1: its zero point is undefined");
	ie_tensor_destroy(&X1);
	ie_tensor_destroy(&X2);
	ie_tensor_destroy(&X3);
	ie_tensor_destroy(&XN);
	ie_tensor_destroy(&XI);
}

/* Next value of a small linear congruential generator (test data). */
static uint32_t
qrand_next(uint64_t *state)
{
	*state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return (uint32_t) (*state >> 33);
}

/*
 * DynamicQuantizeLinear over many tasks (its range and its quantization
 * run in chunks of 65536 on the pool, vectorised): 300001 values, random
 * with every half-integer tie of the scale 1 (x = k + 0.5 over a range of
 * 255) and the range's ends placed in late chunks, at 1 and 3 threads,
 * against the specification's formula in double (rint, ties to even) and
 * the same bytes at both; a NaN or -inf in the last chunk is named by its
 * element; +inf gives scale inf and y all zero point (0 / inf = 0, inf /
 * inf is a NaN, which gives the zero point, as ONNX Runtime).
 */
static void
test_dynamic_quantize_large(void)
{
	const int64_t n = 300001;
	int64_t		d[1] = {n};
	ie_tensor  *X = ie_tensor_new(IE_FLOAT, 1, d),
			   *out1[3],
			   *out3[3];
	const ie_tensor *in[1] = {X};
	float	   *x = X->data;
	uint64_t	st = 7;
	char		err[256];
	int			bad = 0;
	int64_t		zp;
	float		scale;

	for (int64_t i = 0; i < n; i++)
		x[i] = (int) (qrand_next(&st) % 255) - 100 + ((i & 1) ? 0.5f :
													   (float) (qrand_next(&st) % 1000) / 1000.0f);
	x[250000] = -100.0f;		/* min, in chunk 3 */
	x[299999] = 155.0f;			/* max, in the last chunk: range 255, scale 1 */
	CHECK(run_op_threads("DynamicQuantizeLinear", 11, 1, in, 0, NULL, 3, out1, err,
						 sizeof(err), 1) == 0 &&
		  run_op_threads("DynamicQuantizeLinear", 11, 1, in, 0, NULL, 3, out3, err,
						 sizeof(err), 3) == 0, "dynamic quantize large runs: %s", err);
	scale = *(const float *) out1[1]->data;
	zp = *(const uint8_t *) out1[2]->data;
	CHECK(scale == 1.0f && zp == 100 && *(const float *) out3[1]->data == 1.0f &&
		  *(const uint8_t *) out3[2]->data == 100,
		  "dynamic quantize large: scale %g zero point %lld", scale, (long long) zp);
	for (int64_t i = 0; i < n; i++)
	{
		double		q = rint((double) x[i] / scale) + (double) zp;
		int			want = q < 0 ? 0 : q > 255 ? 255 : (int) q;

		if (((const uint8_t *) out1[0]->data)[i] != want ||
			((const uint8_t *) out3[0]->data)[i] != want)
		{
			if (bad++ < 3)
				fprintf(stderr, "  element %lld: x %.9g, got %d / %d, want %d\n", (long long) i,
						x[i], ((const uint8_t *) out1[0]->data)[i],
						((const uint8_t *) out3[0]->data)[i], want);
		}
	}
	CHECK(bad == 0, "dynamic quantize large: %d elements off the formula", bad);
	free_outs(out1, 3);
	free_outs(out3, 3);

	x[299990] = NAN;
	check_quant_refused("DynamicQuantizeLinear", 11, 1, in, 0, NULL, 3,
						"holds a NaN at element 299990");
	x[299990] = -INFINITY;
	check_quant_refused("DynamicQuantizeLinear", 11, 1, in, 0, NULL, 3,
						"x holds -inf at element 299990");
	x[299990] = INFINITY;
	CHECK(run_op_threads("DynamicQuantizeLinear", 11, 1, in, 0, NULL, 3, out3, err,
						 sizeof(err), 3) == 0 &&
		  isinf(*(const float *) out3[1]->data) && *(const uint8_t *) out3[2]->data == 0,
		  "dynamic quantize +inf: scale inf, zero point 0: %s", err);
	bad = 0;
	for (int64_t i = 0; i < n && bad == 0; i++)
		bad = ((const uint8_t *) out3[0]->data)[i] != 0;
	CHECK(bad == 0, "dynamic quantize +inf: y all 0");
	free_outs(out3, 3);
	ie_tensor_destroy(&X);
}

/*
 * A random int8 or uint8 tensor of shape dims[nd]: with extreme, values
 * only at the ends of the range (-128 and 127, 0 and 255), so that a long
 * sum is past float's 2^24.
 */
static ie_tensor *
qrand_tensor(ie_dtype dt, int nd, const int64_t *dims, bool extreme,
			 uint64_t *state)
{
	ie_tensor  *t = ie_tensor_new(dt, nd, dims);
	int64_t		n = ie_tensor_numel(t);

	for (int64_t e = 0; e < n; e++)
	{
		uint32_t	r = qrand_next(state);
		int			v = extreme ? ((r & 1) ? 255 : 0) : (int) (r % 256);

		if (dt == IE_INT8)
			((int8_t *) t->data)[e] = (int8_t) (v - 128);
		else
			((uint8_t *) t->data)[e] = (uint8_t) v;
	}
	return t;
}

/* Element e of int8 or uint8 tensor t. */
static int64_t
qval(const ie_tensor *t, int64_t e)
{
	return t->dtype == IE_INT8 ? ((const int8_t *) t->data)[e] :
		((const uint8_t *) t->data)[e];
}

/*
 * The integer product of A [ab..., M, K] and B [bb..., K, N] (equal ranks
 * r >= 2, batch dims equal or 1) less zero points za (NULL, one value, or
 * M values) and zb (NULL, one value, or N values), by the plain loop:
 * exact int64 sums, low 32 bits.  Into want (int32 [batch..., M, N],
 * allocated), its dims into odims; returns the element count.
 */
static int64_t
qmm_naive(const ie_tensor *A, const ie_tensor *B, const ie_tensor *za,
		  const ie_tensor *zb, int64_t *odims, int32_t **want)
{
	int			r = A->ndim;
	int64_t		M = A->dims[r - 2],
				K = A->dims[r - 1],
				N = B->dims[r - 1],
				nb = 1,
				e = 0;

	for (int d = 0; d < r - 2; d++)
	{
		odims[d] = A->dims[d] > B->dims[d] ? A->dims[d] : B->dims[d];
		nb *= odims[d];
	}
	odims[r - 2] = M;
	odims[r - 1] = N;
	*want = malloc((size_t) (nb * M * N > 0 ? nb * M * N : 1) * sizeof(int32_t));
	for (int64_t bi = 0; bi < nb; bi++)
	{
		int64_t		ai = 0,
					bj = 0,
					rest = bi,
					as = 1,
					bs = 1;

		/* batch index bi of the output into A's and B's matrices */
		for (int d = r - 3; d >= 0; d--)
		{
			int64_t		x = rest % odims[d];

			rest /= odims[d];
			ai += (A->dims[d] == 1 ? 0 : x) * as;
			bj += (B->dims[d] == 1 ? 0 : x) * bs;
			as *= A->dims[d];
			bs *= B->dims[d];
		}
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++)
			{
				int64_t		zai = za == NULL ? 0 : qval(za, ie_tensor_numel(za) == 1 ? 0 : i),
							zbj = zb == NULL ? 0 : qval(zb, ie_tensor_numel(zb) == 1 ? 0 : j),
							acc = 0;

				for (int64_t k = 0; k < K; k++)
					acc += (qval(A, (ai * M + i) * K + k) - zai) *
						(qval(B, (bj * K + k) * N + j) - zbj);
				(*want)[e++] = (int32_t) (uint32_t) acc;
			}
	}
	return nb * M * N;
}

/*
 * MatMulInteger and QLinearMatMul (now on OpenBLAS: sgemm where float is
 * exact, else dgemm) against qmm_naive, the plain loop they replaced, on
 * random shapes: K 4096 with values only -128/127 (sums past 2^24, so
 * float would round), K 40000 of uint8 255 * 255 (the sum 2.6e9 wraps to
 * int32), batches broadcast either way ([2, 1, 3, 5, 7] x [1, 3, 1, 7, 4]
 * and a 3-D A times a shared 2-D-like B), per-row and per-column zero
 * points, mixed int8/uint8 operands, and empty M, N and K.  QLinearMatMul
 * requantizes the same accumulators with per-row/per-column scales
 * (float multiplier, rint, saturation).  Every output bit must match.
 */
static void
test_matmul_integer_blas(void)
{
	struct
	{
		ie_dtype	at,
					bt;
		int			nd;
		int64_t		ad[5],
					bd[5];
		bool		extreme,
					zpa,		/* a zero point per row of A */
					zpb;		/* a zero point per column of B */
	}			cases[] = {
		{IE_INT8, IE_INT8, 2, {3, 4096}, {4096, 5}, true, false, false},
		{IE_UINT8, IE_INT8, 2, {4, 4096}, {4096, 3}, true, true, true},
		{IE_UINT8, IE_UINT8, 2, {1, 40000}, {40000, 2}, true, false, false},
		{IE_UINT8, IE_INT8, 5, {2, 1, 3, 5, 7}, {1, 3, 1, 7, 4}, false, true, true},
		{IE_INT8, IE_UINT8, 3, {4, 300, 64}, {1, 64, 96}, false, false, true},
		{IE_UINT8, IE_INT8, 3, {3, 37, 384}, {1, 384, 70}, false, true, true},
		{IE_UINT8, IE_UINT8, 3, {2, 0, 5}, {1, 5, 3}, false, false, true},
		{IE_UINT8, IE_UINT8, 3, {2, 4, 5}, {2, 5, 0}, false, true, false},
		{IE_INT8, IE_INT8, 3, {2, 4, 0}, {1, 0, 3}, false, true, true},
	};
	uint64_t	state = 42;
	char		err[256];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		int			nd = cases[c].nd;
		int64_t		M = cases[c].ad[nd - 2],
					N = cases[c].bd[nd - 1],
					odims[5];
		ie_tensor  *A = qrand_tensor(cases[c].at, nd, cases[c].ad, cases[c].extreme, &state),
				   *B = qrand_tensor(cases[c].bt, nd, cases[c].bd, cases[c].extreme, &state),
				   *ZA = cases[c].zpa ? qrand_tensor(cases[c].at, 1, &M, false, &state) : NULL,
				   *ZB = cases[c].zpb ? qrand_tensor(cases[c].bt, 1, &N, false, &state) : NULL,
				   *out[1] = {NULL};
		int32_t    *want = NULL;
		int64_t		n = qmm_naive(A, B, ZA, ZB, odims, &want);
		const ie_tensor *in[4] = {A, B, ZA, ZB};
		bool		same;

		same = run_op("MatMulInteger", 10, 4, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			shape_is(out[0], nd, odims) && out[0]->dtype == IE_INT32 &&
			(n == 0 || memcmp(out[0]->data, want, (size_t) n * sizeof(int32_t)) == 0);
		CHECK(same, "matmulinteger blas case %zu matches the plain loop: %s", c, err);
		free_outs(out, 1);

		/* QLinearMatMul on the same operands (K below int32 wrap) */
		if (cases[c].ad[nd - 1] < 40000)
		{
			float		sa[512] = {0},
						sb[512] = {0},
						sy = 0.37f;
			uint8_t		yz = 3,
						za0 = 0,
						zb0 = 0;
			int64_t		one = 1;
			ie_tensor  *SA = tu_float_tensor(1, &M, sa),
					   *SB = tu_float_tensor(1, &N, sb),
					   *SY = tu_float_tensor(0, NULL, &sy),
					   *YZ = typed_tensor(IE_UINT8, 0, NULL, &yz),
					   *ZA0 = typed_tensor(cases[c].at, 1, &one, &za0),
					   *ZB0 = typed_tensor(cases[c].bt, 1, &one, &zb0);
			const ie_tensor *qin[8] = {A, SA, ZA ? ZA : ZA0, B, SB, ZB ? ZB : ZB0, SY, YZ};
			bool		ok = true;

			for (int64_t i = 0; i < M && i < 512; i++)
				((float *) SA->data)[i] = sa[i] = 1e-4f * (float) (1 + qrand_next(&state) % 100);
			for (int64_t j = 0; j < N && j < 512; j++)
				((float *) SB->data)[j] = sb[j] = 1e-3f * (float) (1 + qrand_next(&state) % 100);
			if (M <= 512 && N <= 512)
			{
				ok = run_op("QLinearMatMul", 10, 8, qin, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
					shape_is(out[0], nd, odims) && out[0]->dtype == IE_UINT8;
				for (int64_t e = 0; ok && e < n; e++)
				{
					int64_t		i = e / N % M,
								j = e % N;
					float		mult = sa[i] * sb[j] / sy;
					double		r = rint((double) want[e] * mult) + 3.0;
					int64_t		w = r < 0 ? 0 : r > 255 ? 255 : (int64_t) r;

					ok = ((const uint8_t *) out[0]->data)[e] == w;
				}
				CHECK(ok, "qlinearmatmul blas case %zu matches the plain loop: %s", c, err);
				free_outs(out, 1);
			}
			ie_tensor_destroy(&SA);
			ie_tensor_destroy(&SB);
			ie_tensor_destroy(&SY);
			ie_tensor_destroy(&YZ);
			ie_tensor_destroy(&ZA0);
			ie_tensor_destroy(&ZB0);
		}
		free(want);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
		if (ZA != NULL)
			ie_tensor_destroy(&ZA);
		if (ZB != NULL)
			ie_tensor_destroy(&ZB);
	}
}

/*
 * A random int8 or uint8 tensor for test_matmul_integer_vnni: values by
 * mode 0 uniform, 1 only the type's ends (0/255, -128/127), 2 uniform with
 * one in four an end.
 */
static ie_tensor *
qvnni_tensor(ie_dtype dt, int nd, const int64_t *dims, int mode, uint64_t *state)
{
	ie_tensor  *t = ie_tensor_new(dt, nd, dims);
	int64_t		n = ie_tensor_numel(t);

	for (int64_t e = 0; e < n; e++)
	{
		uint32_t	r = qrand_next(state);
		int			v = (int) (r % 256);

		if (mode == 1 || (mode == 2 && (r >> 8) % 4 == 0))
			v = (r >> 10) & 1 ? 255 : 0;
		if (dt == IE_INT8)
			((int8_t *) t->data)[e] = (int8_t) (v - 128);
		else
			((uint8_t *) t->data)[e] = (uint8_t) v;
	}
	return t;
}

/*
 * MatMulInteger on both its paths, the AVX-512 VNNI kernel (qgemm_vnni.h,
 * where the CPU has it) and the float sgemm slices (ie_qv_force(0)),
 * against qmm_naive's plain loop, bit for bit: 300 random shapes with M,
 * K and N from 1 to 70 (K not a multiple of 4 among them), all four
 * signedness combinations, no, scalar or per-row/per-column zero points
 * (the ends among their values), values uniform, at the ends only, or
 * mixed; then larger ones: K 40000 of ends (sums wrap int32), 300 x 1000
 * x 200 (several tasks and panels), a 3-D A over a shared B (folded
 * batch, per-row zero points repeating per matrix) and a batched B (the
 * float path under both settings).
 */
static void
test_matmul_integer_vnni(void)
{
	uint64_t	state = 7;
	char		err[256];
	int			failed = 0,
				n_cases = 0;

	for (int c = 0; c < 307; c++)
	{
		int			nd = 2;
		int64_t		M = 1 + qrand_next(&state) % 70,
					K = 1 + qrand_next(&state) % 70,
					N = 1 + qrand_next(&state) % 70,
					ad[3],
					bd[3],
					odims[3],
					one = 1;
		ie_dtype	at = qrand_next(&state) % 2 ? IE_INT8 : IE_UINT8,
					bt = qrand_next(&state) % 2 ? IE_INT8 : IE_UINT8;
		int			zmode = (int) (qrand_next(&state) % 3),
					vmode = (int) (qrand_next(&state) % 3);
		ie_tensor  *A,
				   *B,
				   *ZA = NULL,
				   *ZB = NULL,
				   *out[1] = {NULL};
		int32_t    *want = NULL;
		int64_t		n;
		const ie_tensor *in[4];

		if (c == 300)
		{
			M = 3;
			K = 40000;
			N = 70;
			vmode = 1;
		}
		else if (c == 301)
		{
			M = 300;
			K = 1000;
			N = 200;
		}
		else if (c == 302)
		{
			M = 97;
			K = 383;
			N = 129;
			at = IE_INT8;
			bt = IE_UINT8;
			zmode = 2;
		}
		if (c >= 303)
		{
			/* [2, M, K] x [1 or 2, K, N] */
			nd = 3;
			ad[0] = 2;
			bd[0] = c % 2 ? 1 : 2;
			ad[1] = M;
			ad[2] = K;
			bd[1] = K;
			bd[2] = N;
		}
		else
		{
			ad[0] = M;
			ad[1] = K;
			bd[0] = K;
			bd[1] = N;
		}
		A = qvnni_tensor(at, nd, ad, vmode, &state);
		B = qvnni_tensor(bt, nd, bd, vmode, &state);
		if (zmode == 1)
		{
			ZA = qvnni_tensor(at, 1, &one, 2, &state);
			ZB = qvnni_tensor(bt, 0, NULL, 2, &state);
		}
		else if (zmode == 2)
		{
			ZA = qvnni_tensor(at, 1, &M, 2, &state);
			ZB = qvnni_tensor(bt, 1, &N, 2, &state);
		}
		n = qmm_naive(A, B, ZA, ZB, odims, &want);
		in[0] = A;
		in[1] = B;
		in[2] = ZA;
		in[3] = ZB;
		for (int force = 1; force >= 0; force--)
		{
			bool		same;

			ie_qv_force(force);
			same = run_op("MatMulInteger", 10, 4, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
				shape_is(out[0], nd, odims) && out[0]->dtype == IE_INT32 &&
				memcmp(out[0]->data, want, (size_t) n * sizeof(int32_t)) == 0;
			if (!same)
			{
				failed++;
				printf("  matmulinteger vnni case %d (%s, M %lld K %lld N %lld, %s x %s, "
					   "zero points %d, values %d) differs from the plain loop: %s\n",
					   c, force ? "kernel" : "float", (long long) M, (long long) K,
					   (long long) N, ie_type_name(at), ie_type_name(bt), zmode, vmode, err);
			}
			free_outs(out, 1);
			n_cases++;
		}
		ie_qv_force(-1);
		free(want);
		ie_tensor_destroy(&A);
		ie_tensor_destroy(&B);
		if (ZA != NULL)
			ie_tensor_destroy(&ZA);
		if (ZB != NULL)
			ie_tensor_destroy(&ZB);
	}
	CHECK(failed == 0, "matmulinteger: %d of %d products on the VNNI kernel%s and the "
		  "float path match the plain loop", n_cases - failed, n_cases,
		  ie_qv_available() ? "" : " (not on this CPU: float twice)");
}

/*
 * MatMulInteger: A uint8 [2, 2, 2] less 1 = [[[0, 1], [2, 3]], [[4, 5],
 * [6, 7]]] times B [[1, 5], [2, 3]] (broadcast over the batch) less
 * per-column zero points [0, 2] = [[1, 3], [2, 1]] -> [[[2, 1], [8, 9]],
 * [[14, 17], [20, 25]]]; int8 [-128, -128] . [-128, -128] = 32768 (past
 * int16: int32 accumulation).  QLinearMatMul-10: a [1, 3, 5, 7] (2x2)
 * scale 0.5 times the identity (scale 1) gives [0.5, 1.5, 2.5, 3.5] ->
 * [0, 2, 2, 4]; uint8 y_zero_point 10 -> [10, 12, 12, 14]; int8 125 ->
 * [125, 127, 127, 127] (129 saturates).  Refusals: a zero point per row of
 * the wrong length, int16 A, a y_scale of two values.  N-D zero points
 * (Operators.md, MatMulInteger: [D1, D2, M, 1] for A, [D1, D2, 1, N] for
 * B): A as above less [[[1], [2]], [[3], [4]]] (shape [2, 2, 1], one per
 * row of each batch) = [[[0, 1], [1, 2]], [[2, 3], [3, 4]]] times B less
 * [[0, 2]] (shape [1, 2]) -> [[[2, 1], [5, 5]], [[8, 9], [11, 13]]]; they
 * were refused as neither one value nor 1-D.  Empty A [2^40, 1, 0, 3] and
 * B [1, 2^40, 3, 0] broadcast to a batch of 2^80 (ie_matmul_shape, shared
 * with MatMul): refused naming the batch dims (was a signed overflow).
 */
static void
test_matmul_integer(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		d222[3] = {2, 2, 2},
				d22[2] = {2, 2},
				d2[1] = {2},
				d3[1] = {3},
				d12[2] = {1, 2},
				d21[2] = {2, 1},
				d11[2] = {1, 1},
				d221[3] = {2, 2, 1};
	uint8_t		a1[8] = {1, 2, 3, 4, 5, 6, 7, 8},
				b1[4] = {1, 5, 2, 3},
				za = 1,
				zb[2] = {0, 2},
				z3[3] = {0, 0, 0},
				zand[4] = {1, 2, 3, 4},
				qa[4] = {1, 3, 5, 7},
				qb[4] = {1, 0, 0, 1},
				u0 = 0,
				y10 = 10;
	int8_t		m128[2] = {-128, -128},
				y125 = 125;
	int16_t		a16[4] = {1, 2, 3, 4};
	float		half = 0.5f,
				one = 1.0f,
				ys2[2] = {1, 1};
	int64_t		want1[8] = {2, 1, 8, 9, 14, 17, 20, 25},
				want2[1] = {32768},
				wantnd[8] = {2, 1, 5, 5, 8, 9, 11, 13},
				wantq1[4] = {10, 12, 12, 14},
				wantq2[4] = {125, 127, 127, 127};
	ie_tensor  *A1 = typed_tensor(IE_UINT8, 3, d222, a1),
			   *B1 = typed_tensor(IE_UINT8, 2, d22, b1),
			   *ZA = typed_tensor(IE_UINT8, 0, NULL, &za),
			   *ZB = typed_tensor(IE_UINT8, 1, d2, zb),
			   *Z3 = typed_tensor(IE_UINT8, 1, d3, z3),
			   *A2 = typed_tensor(IE_INT8, 2, d12, m128),
			   *B2 = typed_tensor(IE_INT8, 2, d21, m128),
			   *A16 = typed_tensor(IE_INT16, 2, d22, a16),
			   *QA = typed_tensor(IE_UINT8, 2, d22, qa),
			   *QB = typed_tensor(IE_UINT8, 2, d22, qb),
			   *SH = tu_float_tensor(0, NULL, &half),
			   *S1 = tu_float_tensor(0, NULL, &one),
			   *U0 = typed_tensor(IE_UINT8, 0, NULL, &u0),
			   *Y10 = typed_tensor(IE_UINT8, 0, NULL, &y10),
			   *Y125 = typed_tensor(IE_INT8, 0, NULL, &y125),
			   *YS2 = tu_float_tensor(1, d2, ys2),
			   *ZAND = typed_tensor(IE_UINT8, 3, d221, zand),
			   *ZBND = typed_tensor(IE_UINT8, 2, d12, zb);
	const ie_tensor *in1[4] = {A1, B1, ZA, ZB},
			   *innd[4] = {A1, B1, ZAND, ZBND},
			   *in2[2] = {A2, B2},
			   *bad_zp[3] = {QA, QB, Z3},
			   *bad16[2] = {A16, QB},
			   *q1[8] = {QA, SH, U0, QB, S1, U0, S1, Y10},
			   *q2[8] = {QA, SH, U0, QB, S1, U0, S1, Y125},
			   *q3[8] = {QA, SH, U0, QB, S1, U0, YS2, Y10};

	CHECK(run_op("MatMulInteger", 10, 4, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 3, d222, want1), "matmulinteger broadcast: %s", err);
	free_outs(out, 1);
	CHECK(run_op("MatMulInteger", 10, 4, innd, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 3, d222, wantnd), "matmulinteger N-D zero points: %s", err);
	free_outs(out, 1);
	{
		int64_t		dea[4] = {INT64_C(1) << 40, 1, 0, 3},
					deb[4] = {1, INT64_C(1) << 40, 3, 0};
		ie_tensor  *EA = typed_tensor(IE_UINT8, 4, dea, NULL),
				   *EB = typed_tensor(IE_UINT8, 4, deb, NULL);
		const ie_tensor *ein[2] = {EA, EB};

		check_quant_refused("MatMulInteger", 10, 2, ein, 0, NULL, 1,
							"broadcast batch dimensions [1099511627776, 1099511627776] "
							"hold more entries than int64 counts");
		ie_tensor_destroy(&EA);
		ie_tensor_destroy(&EB);
	}
	CHECK(run_op("MatMulInteger", 10, 2, in2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 2, d11, want2), "matmulinteger int8: %s", err);
	free_outs(out, 1);
	check_quant_refused("MatMulInteger", 10, 3, bad_zp, 0, NULL, 1,
						"a_zero_point of shape [3] must be a scalar or a 1-D tensor of one "
						"value per row of A (2)");
	check_quant_refused("MatMulInteger", 10, 2, bad16, 0, NULL, 1,
						"A of type int16 is not supported");
	CHECK(run_op("QLinearMatMul", 10, 8, q1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 2, d22, wantq1), "qlinearmatmul ties: %s", err);
	free_outs(out, 1);
	CHECK(run_op("QLinearMatMul", 21, 8, q2, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT8, 2, d22, wantq2), "qlinearmatmul saturation: %s", err);
	free_outs(out, 1);
	check_quant_refused("QLinearMatMul", 10, 8, q3, 0, NULL, 1,
						"y_scale of shape [2] must be a scalar");
	ie_tensor_destroy(&A1);
	ie_tensor_destroy(&B1);
	ie_tensor_destroy(&ZA);
	ie_tensor_destroy(&ZB);
	ie_tensor_destroy(&Z3);
	ie_tensor_destroy(&A2);
	ie_tensor_destroy(&B2);
	ie_tensor_destroy(&A16);
	ie_tensor_destroy(&QA);
	ie_tensor_destroy(&QB);
	ie_tensor_destroy(&SH);
	ie_tensor_destroy(&S1);
	ie_tensor_destroy(&U0);
	ie_tensor_destroy(&Y10);
	ie_tensor_destroy(&Y125);
	ie_tensor_destroy(&YS2);
	ie_tensor_destroy(&ZAND);
	ie_tensor_destroy(&ZBND);
}

/*
 * ConvInteger: x uint8 [1, 1, 3, 3] = 1..9 less zero point 1 (0..8), w
 * [2, 1, 2, 2] of 2s and 3s less per-channel zero points [1, 3] (ones,
 * zeros): 2x2 window sums [8, 12, 20, 24] and zeros; pads 1, strides 2
 * with w ones: [x00, x01 + x02, x10 + x20, x11 + x12 + x21 + x22] = [0, 3,
 * 9, 24] (padding counts as the zero point).  QLinearConv: x [2, 4, 6, 8]
 * (1x1 image 2x2) scale 0.5, w int8 [1, -1] (two 1x1 kernels) scales [1,
 * 2], bias [1, 0], y scale 1, uint8 zero point 128: channel 0 (x + 1) *
 * 0.5 = [1.5, 2.5, 3.5, 4.5] -> [2, 2, 4, 4] + 128, channel 1 -x * 1 ->
 * 128 - x.  Refusals: group 2 of one channel, w_zero_point of the wrong
 * length, a bias of the wrong shape.  Geometry past int64 (spatial.c):
 * pads [2^62, 0, 2^62, 0] pad the 3-wide x to 2^63 + 3 (was a signed
 * overflow, "kernel extent 2 exceeds padded input -9223372036854775805"),
 * refused; SAME_UPPER with strides INT64_MAX gives one window at the
 * origin, 0 + 1 + 3 + 4 = 8 (ceil(3 / stride) overflowed as (3 + stride -
 * 1) / stride).
 */
static void
test_conv_integer(void)
{
	char		err[256];
	ie_tensor  *out[1];
	int64_t		dx[4] = {1, 1, 3, 3},
				dw[4] = {2, 1, 2, 2},
				dw1[4] = {1, 1, 2, 2},
				d2[1] = {2},
				d3[1] = {3},
				dy[4] = {1, 2, 2, 2},
				dy1[4] = {1, 1, 2, 2},
				dqx[4] = {1, 1, 2, 2},
				dqw[4] = {2, 1, 1, 1};
	uint8_t		x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9},
				w[8] = {2, 2, 2, 2, 3, 3, 3, 3},
				w1[4] = {1, 1, 1, 1},
				zx = 1,
				zw[2] = {1, 3},
				zw3[3] = {1, 1, 1},
				qx[4] = {2, 4, 6, 8},
				u0 = 0,
				y128 = 128;
	int8_t		qw[2] = {1, -1},
				i0 = 0;
	int32_t		bias[2] = {1, 0};
	float		half = 0.5f,
				one = 1.0f,
				sw[2] = {1, 2};
	int64_t		want1[8] = {8, 12, 20, 24, 0, 0, 0, 0},
				want2[4] = {0, 3, 9, 24},
				wantq[8] = {130, 130, 132, 132, 126, 124, 122, 120},
				pads1[4] = {1, 1, 1, 1},
				strides2[2] = {2, 2},
				pads_huge[4] = {INT64_C(1) << 62, 0, INT64_C(1) << 62, 0},
				strides_max[2] = {INT64_MAX, INT64_MAX},
				want_same[1] = {8};
	ie_tensor  *X = typed_tensor(IE_UINT8, 4, dx, x),
			   *W = typed_tensor(IE_UINT8, 4, dw, w),
			   *W1 = typed_tensor(IE_UINT8, 4, dw1, w1),
			   *ZX = typed_tensor(IE_UINT8, 0, NULL, &zx),
			   *ZW = typed_tensor(IE_UINT8, 1, d2, zw),
			   *ZW3 = typed_tensor(IE_UINT8, 1, d3, zw3),
			   *QX = typed_tensor(IE_UINT8, 4, dqx, qx),
			   *QW = typed_tensor(IE_INT8, 4, dqw, qw),
			   *SX = tu_float_tensor(0, NULL, &half),
			   *SW = tu_float_tensor(1, d2, sw),
			   *SY = tu_float_tensor(0, NULL, &one),
			   *U0 = typed_tensor(IE_UINT8, 0, NULL, &u0),
			   *I0 = typed_tensor(IE_INT8, 0, NULL, &i0),
			   *Y128 = typed_tensor(IE_UINT8, 0, NULL, &y128),
			   *B = typed_tensor(IE_INT32, 1, d2, bias),
			   *B3 = typed_tensor(IE_INT32, 1, d3, (int32_t[]) {0, 0, 0});
	const ie_tensor *in1[4] = {X, W, ZX, ZW},
			   *in2[3] = {X, W1, ZX},
			   *bad_zw[4] = {X, W, ZX, ZW3},
			   *q[9] = {QX, SX, U0, QW, SW, I0, SY, Y128, B},
			   *qb3[9] = {QX, SX, U0, QW, SW, I0, SY, Y128, B3};
	ie_attr		pa[2] = {attr_ints("pads", 4, pads1), attr_ints("strides", 2, strides2)},
				g2 = attr_int("group", 2),
				ph = attr_ints("pads", 4, pads_huge),
				same[2] = {attr_str("auto_pad", "SAME_UPPER"),
					   attr_ints("strides", 2, strides_max)};

	CHECK(run_op("ConvInteger", 10, 4, in1, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 4, dy, want1), "convinteger per-channel zp: %s", err);
	free_outs(out, 1);
	CHECK(run_op("ConvInteger", 10, 3, in2, 2, pa, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 4, dy1, want2), "convinteger pads strides: %s", err);
	free_outs(out, 1);
	check_quant_refused("ConvInteger", 10, 3, in2, 1, &g2, 1,
						"group 2 does not divide channels 1 and 1");
	check_quant_refused("ConvInteger", 10, 3, in2, 1, &ph, 1,
						"input 3 padded by 4611686018427387904 and 4611686018427387904 "
						"overflows");
	CHECK(run_op("ConvInteger", 10, 3, in2, 2, same, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_INT32, 4, (int64_t[]) {1, 1, 1, 1}, want_same),
		  "convinteger SAME_UPPER, stride INT64_MAX: %s", err);
	free_outs(out, 1);
	check_quant_refused("ConvInteger", 10, 4, bad_zw, 0, NULL, 1,
						"w_zero_point of shape [3] must be a scalar or a 1-D tensor of one "
						"value per output channel (2)");
	CHECK(run_op("QLinearConv", 10, 9, q, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
		  ints_are(out[0], IE_UINT8, 4, (int64_t[]) {1, 2, 2, 2}, wantq),
		  "qlinearconv: %s", err);
	free_outs(out, 1);
	check_quant_refused("QLinearConv", 10, 9, qb3, 0, NULL, 1,
						"bias B must be int32 of shape [2]");
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&W);
	ie_tensor_destroy(&W1);
	ie_tensor_destroy(&ZX);
	ie_tensor_destroy(&ZW);
	ie_tensor_destroy(&ZW3);
	ie_tensor_destroy(&QX);
	ie_tensor_destroy(&QW);
	ie_tensor_destroy(&SX);
	ie_tensor_destroy(&SW);
	ie_tensor_destroy(&SY);
	ie_tensor_destroy(&U0);
	ie_tensor_destroy(&I0);
	ie_tensor_destroy(&Y128);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&B3);
}

/*
 * A 3-D depthwise Conv over an input of depth 1 with a kernel of depth 1,
 * padded in depth (pads [1, 1, 1, 0, 1, 1] and [0, 1, 1, 2, 1, 1]): the
 * output's depth slices over the padding are the bias, the one over the
 * input is the 2-D convolution of its plane (ref_conv2d).  The
 * zero-bordered 2-D path (dw_plane_padded, ops_conv.c) took these too and
 * wrote the 2-D result as though the output had one slice.
 */
static void
test_conv_depthwise_depth_pad(void)
{
	int64_t		pads[2][6] = {{1, 1, 1, 0, 1, 1}, {0, 1, 1, 2, 1, 1}},
				xd[5] = {1, 3, 1, 6, 7},
				wd[5] = {6, 1, 1, 3, 3},
				x4[4] = {1, 3, 6, 7},
				w4[4] = {6, 1, 3, 3},
				y4[4] = {1, 6, 6, 7},
				bd[1] = {6},
				strides[3] = {1, 1, 1},
				s2[2] = {1, 1},
				p2[4] = {1, 1, 1, 1},
				d2[2] = {1, 1};
	ie_tensor  *X = rand_tensor(5, xd),
			   *W = rand_tensor(5, wd),
			   *B = rand_tensor(1, bd),
			   *X4 = ie_tensor_new(IE_FLOAT, 4, x4),
			   *W4 = ie_tensor_new(IE_FLOAT, 4, w4),
			   *R = ie_tensor_new(IE_FLOAT, 4, y4);
	const ie_tensor *in[3] = {X, W, B};
	const float *b = B->data,
			   *r = R->data;

	memcpy(X4->data, X->data, X->nbytes);
	memcpy(W4->data, W->data, W->nbytes);
	ref_conv2d(X4, W4, b, 3, s2, p2, d2, R);
	for (int pi = 0; pi < 2; pi++)
	{
		ie_attr		attrs[3] = {
			attr_ints("strides", 3, strides), attr_ints("pads", 6, pads[pi]),
			attr_int("group", 3)
		};
		int64_t		depth = 1 + pads[pi][0] + pads[pi][3],
					od[5] = {1, 6, depth, 6, 7};
		ie_tensor  *out[1] = {NULL};
		char		err[256];
		double		worst = 0;
		bool		ok = run_op("Conv", 11, 3, in, 3, attrs, 1, out, err, sizeof(err)) == 0 &&
			shape_is(out[0], 5, od);

		for (int64_t oc = 0; ok && oc < 6; oc++)
			for (int64_t oz = 0; oz < depth; oz++)
				for (int64_t p = 0; p < 42; p++)
				{
					float		got = ((const float *) out[0]->data)[(oc * depth + oz) * 42 + p],
								want = oz == pads[pi][0] ? r[oc * 42 + p] : b[oc];

					worst = fmax(worst, fabs((double) got - want));
				}
		CHECK(ok && worst < 1e-4,
			  "conv 3-D depthwise of depth 1, pads %lld in depth before, %lld after: "
			  "max abs diff %g %s", (long long) pads[pi][0], (long long) pads[pi][3],
			  worst, err);
		free_outs(out, 1);
	}
	ie_tensor_destroy(&X);
	ie_tensor_destroy(&W);
	ie_tensor_destroy(&B);
	ie_tensor_destroy(&X4);
	ie_tensor_destroy(&W4);
	ie_tensor_destroy(&R);
}

/*
 * An integer convolution's geometry for qconv_naive, spatial axes padded
 * to 3 (leading extents 1) as the engine's spatial.h does.
 */
typedef struct qconv_geom
{
	int64_t		in[3],
				k[3],
				stride[3],
				dil[3],
				pb[3],
				pe[3],
				out[3];
} qconv_geom;

/*
 * Fills g's pads and output extents for the nsp trailing axes from
 * auto_pad (NULL: the explicit pads, begins then ends), by the formulas of
 * Operators.md's Conv written out again here: out = floor((in + pads -
 * dil * (k - 1) - 1) / stride) + 1; SAME_*: out = ceil(in / stride), the
 * total padding max(0, (out - 1) * stride + dil * (k - 1) + 1 - in), its
 * odd cell at the end (SAME_UPPER) or the beginning (SAME_LOWER); VALID:
 * no padding.
 */
static void
qconv_geom_fill(qconv_geom *g, int nsp, const char *auto_pad, const int64_t *pads)
{
	for (int i = 0; i < 3; i++)
	{
		int64_t		ek = g->dil[i] * (g->k[i] - 1) + 1;
		int			a = i - (3 - nsp);	/* the node's axis, or < 0 */

		g->pb[i] = g->pe[i] = 0;
		if (a >= 0 && auto_pad != NULL && strncmp(auto_pad, "SAME", 4) == 0)
		{
			int64_t		out = (g->in[i] + g->stride[i] - 1) / g->stride[i],
						total = (out - 1) * g->stride[i] + ek - g->in[i];

			total = total > 0 ? total : 0;
			g->pb[i] = strcmp(auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
			g->pe[i] = total - g->pb[i];
		}
		else if (a >= 0 && auto_pad == NULL)
		{
			g->pb[i] = pads[a];
			g->pe[i] = pads[nsp + a];
		}
		g->out[i] = (g->in[i] + g->pb[i] + g->pe[i] - ek) / g->stride[i] + 1;
	}
}

/*
 * The exact sum of ConvInteger's output (b, oc, o[0], o[1], o[2]): over
 * the channel group's inputs and the kernel taps inside the input, (x -
 * zx) * (w - zw), x [n, c, in...] and w [m, c / group, k...] int8 or uint8
 * in the 3-D view of g.
 */
static int64_t
qconv_naive_sum(const ie_tensor *X, const ie_tensor *W, int64_t zx, int64_t zw,
				int64_t group, const qconv_geom *g, int64_t b, int64_t oc,
				const int64_t *o)
{
	int64_t		c = X->dims[1],
				cg = c / group,
				mg = W->dims[0] / group,
				ipix = g->in[0] * g->in[1] * g->in[2],
				taps = g->k[0] * g->k[1] * g->k[2],
				acc = 0;

	for (int64_t ci = 0; ci < cg; ci++)
		for (int64_t t = 0; t < taps; t++)
		{
			int64_t		k[3] = {t / (g->k[1] * g->k[2]), t / g->k[2] % g->k[1], t % g->k[2]},
						i[3];
			bool		inside = true;

			for (int d = 0; d < 3; d++)
			{
				i[d] = o[d] * g->stride[d] - g->pb[d] + k[d] * g->dil[d];
				inside = inside && i[d] >= 0 && i[d] < g->in[d];
			}
			if (inside)
				acc += (qval(X, (b * c + oc / mg * cg + ci) * ipix +
							 (i[0] * g->in[1] + i[1]) * g->in[2] + i[2]) - zx) *
					(qval(W, (oc * cg + ci) * taps + t) - zw);
		}
	return acc;
}

/*
 * ConvInteger by the plain loop the operator ran before it moved to
 * sgemm: every output the exact int64 sum (qconv_naive_sum, w less
 * zw[oc]) kept to its low 32 bits.  Into want (int32 [n, m, out...],
 * allocated); returns the count.
 */
static int64_t
qconv_naive(const ie_tensor *X, const ie_tensor *W, int64_t zx, const int64_t *zw,
			int64_t group, const qconv_geom *g, int32_t **want)
{
	int64_t		n = X->dims[0],
				m = W->dims[0],
				opix = g->out[0] * g->out[1] * g->out[2],
				e = 0;

	*want = malloc((size_t) (n * m * opix > 0 ? n * m * opix : 1) * sizeof(int32_t));
	for (int64_t b = 0; b < n; b++)
		for (int64_t oc = 0; oc < m; oc++)
			for (int64_t p = 0; p < opix; p++)
			{
				int64_t		o[3] = {p / (g->out[1] * g->out[2]), p / g->out[2] % g->out[1],
				p % g->out[2]};

				(*want)[e++] = (int32_t) (uint32_t) qconv_naive_sum(X, W, zx, zw[oc], group,
																	 g, b, oc, o);
			}
	return n * m * opix;
}

/* A random int32 bias of n values in [-2^20, 2^20), or all near INT32_MAX. */
static ie_tensor *
qconv_bias(int64_t n, bool huge, uint64_t *state)
{
	ie_tensor  *t = ie_tensor_new(IE_INT32, 1, &n);

	for (int64_t i = 0; i < n; i++)
		((int32_t *) t->data)[i] = huge ? INT32_MAX - (int32_t) (qrand_next(state) % 1000) :
			(int32_t) (qrand_next(state) % 2097152) - 1048576;
	return t;
}

/*
 * ConvInteger and QLinearConv (im2col and OpenBLAS sgemm over exact
 * slices of the sum) against qconv_naive, the plain loop they replaced,
 * bit for bit, on shapes covering the lowering's paths: 1-D, 2-D and 3-D;
 * strides, dilations, asymmetric pads, auto_pad SAME_UPPER, SAME_LOWER
 * and VALID; groups; depthwise by Conv's direct loop (1-D, 2-D, 3-D, a
 * column stride) and, with 17x17 taps of extreme values (past 2^24), by
 * im2col; pointwise 1x1 kernels in several
 * column blocks; several im2col bands; sums of 3x3x512 and 3x3x1024 terms
 * of extreme values (past float's 2^24, so one sgemm over all of K would
 * round); 3x3x4096 terms of all 255 (uint8, zero point 0) or -128 (int8,
 * zero point 127) whose sums wrap int32 both ways; zero points at the ends
 * of their range, per output channel for w; mixed int8/uint8; an empty
 * channel dim and batch; 1 and 3 threads; depthwise 3-D over an input of
 * depth 1 padded in depth (Conv's zero-bordered 2-D plane took it, its
 * output misplaced); depthwise with a column stride of INT64_MAX or 2^40
 * (the loop's column phases, one per stride: their count overflowed or
 * did not fit memory) and with a row stride of 2^39 past 2^40 rows of
 * padding (a zero-bordered plane of 2^40 rows), which go to im2col
 * instead.  QLinearConv requantizes the
 * same sums plus a bias (near INT32_MAX in the wrapping cases) with per
 * channel scales: float multiplier, rint, saturation.
 */
static void
test_conv_integer_blas(void)
{
	struct
	{
		ie_dtype	xt,
					wt;
		int			nsp;
		int64_t		n,
					c,
					m,
					group,
					in[3],
					k[3],
					stride[3],
					dil[3],
					pads[6];
		const char *auto_pad;	/* NULL: NOTSET, pads */
		int			fill;		/* 0 random, 1 range ends, 2 all 255 / -128 */
		int			zx;			/* x's zero point; INT32_MIN: none */
		int			zw;			/* 0 none, 1 one random, 2 per channel, 3 per
								 * channel at the ends */
		int			threads;
	}			cases[] = {
		{IE_UINT8, IE_INT8, 2, 2, 3, 4, 1, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 0, 128, 2, 1},
		{IE_UINT8, IE_UINT8, 2, 1, 4, 6, 2, {11, 8}, {3, 2}, {2, 3}, {2, 1}, {0, 2, 1, 0},
		NULL, 0, 7, 1, 1},
		{IE_INT8, IE_UINT8, 2, 2, 8, 16, 8, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1},
		NULL, 1, -128, 3, 1},
		{IE_UINT8, IE_INT8, 2, 1, 5, 3, 1, {10, 7}, {4, 3}, {2, 2}, {1, 1}, {0},
		"SAME_UPPER", 0, 0, 0, 1},
		{IE_INT8, IE_INT8, 1, 3, 4, 4, 2, {17}, {4}, {3}, {2}, {0},
		"SAME_LOWER", 1, 127, 3, 1},
		{IE_UINT8, IE_UINT8, 3, 1, 3, 5, 1, {5, 6, 7}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0},
		"VALID", 0, 255, 2, 1},
		{IE_UINT8, IE_INT8, 3, 1, 4, 4, 4, {4, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
		{1, 1, 1, 1, 1, 1}, NULL, 0, INT32_MIN, 2, 1},
		{IE_UINT8, IE_INT8, 2, 1, 40, 300, 1, {30, 40}, {1, 1}, {1, 1}, {1, 1}, {0},
		NULL, 0, 100, 2, 3},
		{IE_UINT8, IE_INT8, 2, 2, 6, 8, 2, {13, 17}, {1, 1}, {2, 1}, {1, 1}, {0},
		NULL, 1, 0, 3, 1},
		{IE_UINT8, IE_INT8, 2, 1, 64, 16, 1, {64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 0, 3, 2, 3},
		{IE_UINT8, IE_INT8, 2, 1, 512, 4, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 1, 0, 3, 1},
		{IE_INT8, IE_UINT8, 2, 1, 1024, 4, 2, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 1, 127, 3, 3},
		{IE_UINT8, IE_UINT8, 2, 1, 4096, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 2, 0, 0, 1},
		{IE_INT8, IE_UINT8, 2, 1, 4096, 2, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
		NULL, 2, 127, 0, 1},
		{IE_UINT8, IE_INT8, 2, 2, 6, 6, 6, {12, 15}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2},
		NULL, 1, 0, 3, 3},
		{IE_UINT8, IE_UINT8, 3, 1, 3, 6, 3, {4, 5, 6}, {2, 3, 3}, {1, 1, 2}, {1, 1, 1},
		{1, 1, 1, 0, 1, 1}, NULL, 0, 9, 2, 1},
		{IE_INT8, IE_INT8, 1, 2, 5, 5, 5, {23}, {3}, {3}, {2}, {2, 1}, NULL, 1, 127, 3, 1},
		{IE_UINT8, IE_INT8, 2, 1, 2, 2, 2, {20, 20}, {17, 17}, {1, 1}, {1, 1}, {8, 8, 8, 8},
		NULL, 1, 0, 3, 1},
		{IE_UINT8, IE_INT8, 2, 2, 0, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {0},
		NULL, 0, 5, 2, 1},
		{IE_UINT8, IE_INT8, 2, 0, 2, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {0},
		NULL, 0, 5, 2, 1},
		{IE_UINT8, IE_INT8, 3, 1, 3, 6, 3, {1, 6, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1},
		{1, 1, 1, 0, 1, 1}, NULL, 0, 5, 2, 1},
		{IE_INT8, IE_UINT8, 3, 2, 2, 4, 2, {1, 5, 6}, {1, 2, 3}, {1, 2, 1}, {1, 1, 1},
		{0, 0, 1, 2, 1, 0}, NULL, 1, -3, 3, 3},
		{IE_UINT8, IE_UINT8, 2, 1, 2, 4, 2, {3, 5}, {2, 2}, {1, INT64_MAX}, {1, 1},
		{1, 2, 0, 1}, NULL, 0, 7, 2, 1},
		{IE_UINT8, IE_INT8, 2, 1, 3, 3, 3, {4, 6}, {3, 2}, {2, INT64_C(1) << 40}, {1, 2},
		{1, 0, 1, 3}, NULL, 1, 0, 3, 1},
		{IE_UINT8, IE_INT8, 2, 1, 2, 2, 2, {3, 6}, {2, 3}, {INT64_C(1) << 39, 1}, {1, 1},
		{INT64_C(1) << 40, 1, 0, 1}, NULL, 0, 9, 2, 1},
	};
	uint64_t	state = 4242;
	char		err[256];

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int			nsp = cases[ci].nsp,
					nd = nsp + 2,
					na = 0;
		int64_t		m = cases[ci].m,
					one = 1,
					xd[5],
					wd[5],
					odims[5],
					zw[4096],
					n;
		qconv_geom	g;
		ie_attr		attrs[6];
		ie_tensor  *X,
				   *W,
				   *ZX,
				   *ZW,
				   *out[1] = {NULL};
		int32_t    *want = NULL;
		int			zx = cases[ci].zx == INT32_MIN ? 0 : cases[ci].zx;
		bool		same;

		for (int i = 0; i < 3; i++)
		{
			int			a = i - (3 - nsp);

			g.in[i] = a < 0 ? 1 : cases[ci].in[a];
			g.k[i] = a < 0 ? 1 : cases[ci].k[a];
			g.stride[i] = a < 0 ? 1 : cases[ci].stride[a];
			g.dil[i] = a < 0 ? 1 : cases[ci].dil[a];
		}
		qconv_geom_fill(&g, nsp, cases[ci].auto_pad, cases[ci].pads);
		xd[0] = cases[ci].n;
		xd[1] = cases[ci].c;
		wd[0] = m;
		wd[1] = cases[ci].c / cases[ci].group;
		odims[0] = cases[ci].n;
		odims[1] = m;
		for (int a = 0; a < nsp; a++)
		{
			xd[2 + a] = cases[ci].in[a];
			wd[2 + a] = cases[ci].k[a];
			odims[2 + a] = g.out[3 - nsp + a];
		}
		X = qrand_tensor(cases[ci].xt, nd, xd, cases[ci].fill == 1, &state);
		W = qrand_tensor(cases[ci].wt, nd, wd, cases[ci].fill == 1, &state);
		if (cases[ci].fill == 2)
		{
			/* all 255 (uint8) or -128 (int8): every product of one sign */
			memset(X->data, cases[ci].xt == IE_UINT8 ? 255 : 128, X->nbytes);
			memset(W->data, cases[ci].wt == IE_UINT8 ? 255 : 128, W->nbytes);
		}
		ZX = typed_tensor(cases[ci].xt, 0, NULL,
						  cases[ci].xt == IE_UINT8 ? (const void *) &(uint8_t) {(uint8_t) zx} :
						  (const void *) &(int8_t) {(int8_t) zx});
		ZW = qrand_tensor(cases[ci].wt, 1, cases[ci].zw >= 2 ? &m : &one, false, &state);
		for (int64_t oc = 0; oc < ie_tensor_numel(ZW); oc++)
			if (cases[ci].zw == 3)
			{
				/* alternately the bottom and the top of the range */
				if (cases[ci].wt == IE_UINT8)
					((uint8_t *) ZW->data)[oc] = oc % 2 ? 255 : 0;
				else
					((int8_t *) ZW->data)[oc] = oc % 2 ? 127 : -128;
			}
		for (int64_t oc = 0; oc < m; oc++)
			zw[oc] = cases[ci].zw == 0 ? 0 : qval(ZW, cases[ci].zw >= 2 ? oc : 0);
		n = qconv_naive(X, W, zx, zw, cases[ci].group, &g, &want);
		if (cases[ci].fill == 2)
		{
			/* the centre's 3x3x4096 products of +-65025 wrap int32 */
			int64_t		exact = (int64_t) cases[ci].c * 9 * (zx == 0 ? 65025 : -65025);

			CHECK(n > 4 && want[4] == (int32_t) (uint32_t) exact && want[4] != exact,
				  "convinteger blas case %zu wraps int32", ci);
		}

		attrs[na++] = attr_int("group", cases[ci].group);
		attrs[na++] = attr_ints("strides", nsp, cases[ci].stride);
		attrs[na++] = attr_ints("dilations", nsp, cases[ci].dil);
		if (cases[ci].auto_pad != NULL)
			attrs[na++] = attr_str("auto_pad", cases[ci].auto_pad);
		else
			attrs[na++] = attr_ints("pads", 2 * nsp, cases[ci].pads);
		{
			const ie_tensor *in[4] = {X, W, cases[ci].zx == INT32_MIN ? NULL : ZX,
			cases[ci].zw == 0 ? NULL : ZW};

			same = run_op_threads("ConvInteger", 10, 4, in, na, attrs, 1, out, err,
								  sizeof(err), cases[ci].threads) == 0 &&
				shape_is(out[0], nd, odims) && out[0]->dtype == IE_INT32 &&
				(n == 0 || memcmp(out[0]->data, want, (size_t) n * sizeof(int32_t)) == 0);
			CHECK(same, "convinteger blas case %zu matches the plain loop: %s", ci, err);
			free_outs(out, 1);
		}

		/* QLinearConv on the same operands, a bias and per-channel scales */
		{
			float		sx = 0.02f,
						sy = 0.37f,
						sw[300];
			ie_dtype	yt = ci % 2 ? IE_INT8 : IE_UINT8;
			int64_t		yz = yt == IE_UINT8 ? 3 : -5,
						lo = yt == IE_UINT8 ? 0 : -128,
						hi = yt == IE_UINT8 ? 255 : 127,
						opix = n / (m > 0 && cases[ci].n > 0 ? m * cases[ci].n : 1);
			ie_tensor  *SX = tu_float_tensor(0, NULL, &sx),
					   *SY = tu_float_tensor(0, NULL, &sy),
					   *SW,
					   *YZ = typed_tensor(yt, 0, NULL,
										  yt == IE_UINT8 ? (const void *) &(uint8_t) {3} :
										  (const void *) &(int8_t) {-5}),
					   *B = qconv_bias(m, cases[ci].fill == 2, &state);
			const ie_tensor *qin[9] = {X, SX, cases[ci].zx == INT32_MIN ? NULL : ZX, W, NULL,
			cases[ci].zw == 0 ? NULL : ZW, SY, YZ, B};
			bool		ok;

			for (int64_t oc = 0; oc < m; oc++)
				sw[oc] = 1e-3f * (float) (1 + qrand_next(&state) % 100);
			SW = tu_float_tensor(1, &m, sw);
			qin[4] = SW;
			ok = run_op_threads("QLinearConv", 10, 9, qin, na, attrs, 1, out, err,
								sizeof(err), cases[ci].threads) == 0 &&
				shape_is(out[0], nd, odims) && out[0]->dtype == yt;
			for (int64_t e = 0; ok && e < n; e++)
			{
				int64_t		oc = e / opix % m,
							q;
				float		mult = sx * sw[oc] / sy;
				int32_t		acc = (int32_t) ((uint32_t) want[e] +
											 (uint32_t) ((const int32_t *) B->data)[oc]);
				double		r = rint((double) acc * mult) + (double) yz;

				q = r < lo ? lo : r > hi ? hi : (int64_t) r;
				ok = (yt == IE_UINT8 ? ((const uint8_t *) out[0]->data)[e] :
					  ((const int8_t *) out[0]->data)[e]) == q;
			}
			CHECK(ok, "qlinearconv blas case %zu matches the plain loop: %s", ci, err);
			free_outs(out, 1);
			ie_tensor_destroy(&SX);
			ie_tensor_destroy(&SY);
			ie_tensor_destroy(&SW);
			ie_tensor_destroy(&YZ);
			ie_tensor_destroy(&B);
		}
		free(want);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&W);
		ie_tensor_destroy(&ZX);
		ie_tensor_destroy(&ZW);
	}
}

/* Operators this test owns: node tests of these run here. */
static int
owned_op(const char *op)
{
	static const char *const ops[] = {
		"Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization",
		"Softmax", "LogSoftmax", "GlobalAveragePool", "GlobalMaxPool",
		"AveragePool", "MaxPool", "Resize", "Upsample", "ReduceMean",
		"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
		"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
		"LayerNormalization", "Gather", "GatherElements", "Where", "Expand",
		"Tile", "Range", "Min", "Max", "Sum", "Mean", "GatherND", "Size", "Einsum",
		"RMSNormalization", "RotaryEmbedding", "Swish",
		"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
		"Round", "Sign", "Mish", "ThresholdedRelu", "Shrink", "BitwiseAnd",
		"BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift", "DepthToSpace",
		"SpaceToDepth", "LpNormalization", "LpPool",
		"TopK", "CumSum", "CumProd", "Trilu", "ScatterElements", "Scatter",
		"OneHot", "NonZero", "Dropout", "Hardmax", "EyeLike", "Compress",
		"ReverseSequence",
		"InstanceNormalization", "GroupNormalization", "LRN",
		"MeanVarianceNormalization", "NonMaxSuppression", "GridSample",
		"RoiAlign", "AffineGrid",
		"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
		"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",
		NULL
	};

	for (int i = 0; ops[i]; i++)
		if (strcmp(ops[i], op) == 0)
			return 1;
	return 0;
}

/*
 * Runs one node test directory if its model is a single node of an owned
 * operator: returns 1 when it ran (pass or fail counted), 0 if skipped.
 */
static int
run_node_test(const char *root, const char *name, int verbose)
{
	char		path[1024];
	size_t		len;
	uint8_t    *buf;
	Onnx__ModelProto *mp;
	Onnx__GraphProto *g;
	Onnx__NodeProto *node;
	int			opset = 0;
	ie_attr		attrs[32];
	int			n_attrs = 0;
	const ie_tensor *inputs[16] = {0};
	ie_tensor  *owned_in[16] = {0};
	ie_tensor  *outs[8] = {0};
	ie_tensor  *want[8] = {0};
	char		err[512] = "";
	int			ran = 0,
				ok = 1,
				want_error = 0;
	char		why[1024] = "";

	snprintf(path, sizeof(path), "%s/%s/model.onnx", root, name);
	buf = tu_read_file(path, &len);
	if (buf == NULL)
		return 0;
	mp = onnx__model_proto__unpack(NULL, len, buf);
	free(buf);
	if (mp == NULL)
		return 0;
	g = mp->graph;
	if (g == NULL || g->n_node != 1 || !owned_op(g->node[0]->op_type) ||
		(g->node[0]->domain && g->node[0]->domain[0]) || g->node[0]->n_input > 16 ||
		g->node[0]->n_output > 8 || g->node[0]->n_attribute > 32)
		goto done;
	node = g->node[0];
	for (size_t i = 0; i < mp->n_opset_import; i++)
		if (mp->opset_import[i]->domain == NULL || mp->opset_import[i]->domain[0] == '\0')
			opset = (int) mp->opset_import[i]->version;
	for (int i = 0; expect_error[i]; i++)
		if (strcmp(expect_error[i], name) == 0)
			want_error = 1;
	ran = 1;

	for (size_t i = 0; i < node->n_attribute; i++)
	{
		Onnx__AttributeProto *ap = node->attribute[i];
		ie_attr    *a = &attrs[n_attrs++];

		memset(a, 0, sizeof(*a));
		a->name = ap->name;
		a->type = (ie_attr_type) ap->type;
		a->f = ap->f;
		a->i = ap->i;
		a->s = (const char *) ap->s.data;
		a->s_len = ap->s.len;
		a->n_floats = (int) ap->n_floats;
		a->floats = ap->floats;
		a->n_ints = (int) ap->n_ints;
		a->ints = ap->ints;
	}
	/* NUL-terminate strings: copy into a side buffer */
	{
		static char sbuf[32][128];

		for (int i = 0; i < n_attrs; i++)
			if (attrs[i].type == IE_ATTR_STRING)
			{
				snprintf(sbuf[i], sizeof(sbuf[i]), "%.*s", (int) attrs[i].s_len,
						 attrs[i].s ? attrs[i].s : "");
				attrs[i].s = sbuf[i];
			}
	}
	/* node input k is graph input j by name; input_j.pb holds it */
	for (size_t k = 0; k < node->n_input; k++)
	{
		if (node->input[k][0] == '\0')
			continue;
		for (size_t j = 0; j < g->n_input; j++)
			if (strcmp(g->input[j]->name, node->input[k]) == 0)
			{
				snprintf(path, sizeof(path), "%s/%s/test_data_set_0/input_%zu.pb", root, name, j);
				owned_in[k] = load_tensor(path);
				inputs[k] = owned_in[k];
			}
		if (inputs[k] == NULL)
		{
			snprintf(why, sizeof(why), "cannot load input %zu", k);
			ok = 0;
			goto report;
		}
	}
	{
		int			rc = run_op(node->op_type, opset, (int) node->n_input, inputs,
								n_attrs, attrs, (int) node->n_output, outs, err, sizeof(err));

		if (want_error)
		{
			ok = rc == -1 && err[0] != '\0';
			snprintf(why, sizeof(why), "expected an error, got rc %d '%s'", rc, err);
			goto report;
		}
		if (rc != 0)
		{
			snprintf(why, sizeof(why), "error: %s", err);
			ok = 0;
			goto report;
		}
	}
	for (size_t k = 0; k < node->n_output && ok; k++)
	{
		size_t		j;

		for (j = 0; j < g->n_output; j++)
			if (strcmp(g->output[j]->name, node->output[k]) == 0)
				break;
		if (j == g->n_output)
			continue;
		snprintf(path, sizeof(path), "%s/%s/test_data_set_0/output_%zu.pb", root, name, j);
		want[k] = load_tensor(path);
		if (want[k] == NULL || outs[k] == NULL)
		{
			snprintf(why, sizeof(why), "output %zu missing", k);
			ok = 0;
			break;
		}
		if (want[k]->ndim != outs[k]->ndim || want[k]->dtype != outs[k]->dtype ||
			memcmp(want[k]->dims, outs[k]->dims, sizeof(int64_t) * want[k]->ndim) != 0)
		{
			int			m = snprintf(why, sizeof(why), "output %zu shape/type: got %s [", k,
									 ie_dtype_name(outs[k]->dtype));

			for (int d = 0; d < outs[k]->ndim && m < 400; d++)
				m += snprintf(why + m, sizeof(why) - m, " %lld", (long long) outs[k]->dims[d]);
			m += snprintf(why + m, sizeof(why) - m, " ] want %s [", ie_dtype_name(want[k]->dtype));
			for (int d = 0; d < want[k]->ndim && m < 480; d++)
				m += snprintf(why + m, sizeof(why) - m, " %lld", (long long) want[k]->dims[d]);
			snprintf(why + m, sizeof(why) - m, " ]");
			ok = 0;
			break;
		}
		if (want[k]->dtype == IE_FLOAT)
		{
			double		worst;

			if (!close_to(outs[k]->data, want[k]->data, ie_tensor_numel(want[k]),
						  1e-3, 1e-5, &worst))
			{
				snprintf(why, sizeof(why), "output %zu values: max abs diff %g", k, worst);
				ok = 0;
			}
		}
		else if (want[k]->dtype == IE_DOUBLE)
		{
			const double *a = outs[k]->data,
					   *b = want[k]->data;

			for (int64_t i = 0; i < ie_tensor_numel(want[k]); i++)
				if (!(fabs(a[i] - b[i]) <= 1e-7 + 1e-6 * fabs(b[i])))
				{
					snprintf(why, sizeof(why), "output %zu value %lld: %g, want %g",
							 k, (long long) i, a[i], b[i]);
					ok = 0;
					break;
				}
		}
		else if (memcmp(outs[k]->data, want[k]->data, want[k]->nbytes) != 0)
		{
			snprintf(why, sizeof(why), "output %zu values differ", k);
			ok = 0;
		}
	}
report:
	CHECK(ok, "node test %s (%s, opset %d): %s", name, node->op_type, opset, why);
	if (verbose && ok)
		printf("ok   node test %s%s\n", name, want_error ? " (refused as expected)" : "");
	for (int i = 0; i < 16; i++)
		ie_tensor_destroy(&owned_in[i]);
	for (int i = 0; i < 8; i++)
	{
		ie_tensor_destroy(&outs[i]);
		ie_tensor_destroy(&want[i]);
	}
done:
	onnx__model_proto__free_unpacked(mp, NULL);
	return ran;
}

/* Runs every node test of the owned operators found under the test root. */
static void
test_node_tests(int verbose)
{
	const char *root = getenv("ONNX_NODE_TESTS");
	DIR		   *d;
	struct dirent *e;
	int			count = 0;

	if (root == NULL)
		root = "/usr/include/onnx/backend/test/data/node";
	d = opendir(root);
	if (d == NULL)
	{
		printf("note: no ONNX node tests at %s\n", root);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "test_", 5) == 0)
			count += run_node_test(root, e->d_name, verbose);
	closedir(d);
	CHECK(count > 100, "only %d node tests of these operators found", count);
}

/*
 * A recurrent node for rnn_case: the operator (0 RNN, 1 GRU, 2 LSTM), its
 * opset and element type, extents, direction (0 forward, 1 reverse, 2
 * bidirectional), layout, which optional inputs it has, clip (0 none),
 * linear_before_reset, input_forget and activations (n_act names, with
 * n_alpha alphas and n_beta betas; none: the defaults).
 */
typedef struct rnn_cfg
{
	int			kind;
	int			opset;
	ie_dtype	dt;
	int			seq,
				batch,
				input,
				hidden;
	int			dir;
	int			layout;
	bool		use_b,
				use_h0,
				use_c0,
				use_p;
	const int32_t *lens;		/* [batch], or NULL */
	double		clip;
	int			lbr;
	int			input_forget;
	int			n_act;
	const char *acts[6];
	int			n_alpha;
	float		alpha[6];
	int			n_beta;
	float		beta[6];
} rnn_cfg;

/* The activation called name at x, as Operators.md defines it. */
static double
ref_act(const char *name, double alpha, double beta, double x)
{
	if (strcmp(name, "Sigmoid") == 0)
		return 1.0 / (1.0 + exp(-x));
	if (strcmp(name, "Tanh") == 0)
		return tanh(x);
	if (strcmp(name, "Relu") == 0)
		return x > 0 ? x : 0;
	if (strcmp(name, "LeakyRelu") == 0)
		return x >= 0 ? x : alpha * x;
	if (strcmp(name, "HardSigmoid") == 0)
		return fmax(0, fmin(1, alpha * x + beta));
	if (strcmp(name, "Softsign") == 0)
		return x / (1 + fabs(x));
	return NAN;
}

/*
 * The naive recurrence of c in double, one batch row and one step at a
 * time: y [seq, D, batch, H] (layout 0 order, whatever c->layout),
 * yh and yc [D, batch, H] (zero for a row of length 0, seq_length 0
 * included).  x [seq, batch, input] in layout 0 order, w, r,
 * b, p, h0, c0 as ONNX lays them out (h0, c0 in layout 0 order), NULL when
 * omitted.  The activations of direction d are acts[d * n + k] when the
 * node gives n per direction for both, else acts[k]; alphas and betas are
 * taken by the functions that have them, in order.
 */
static void
ref_rnn(const rnn_cfg *c, const double *x, const double *w, const double *r,
		const double *b, const double *p, const double *h0, const double *c0,
		double *y, double *yh, double *yc)
{
	static const char *const dflt[3][3] = {
		{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}
	};
	int			G = c->kind == 0 ? 1 : c->kind == 1 ? 3 : 4,
				na = c->kind + 1,
				D = c->dir == 2 ? 2 : 1,
				H = c->hidden,
				I = c->input,
				B = c->batch,
				S = c->seq;
	const char *act[2][3];
	double		al[2][3],
				be[2][3];
	int			ia = 0,
				ib = 0;

	for (int d = 0; d < 2; d++)
		for (int k = 0; k < na; k++)
		{
			int			j = c->n_act == 0 ? -1 : c->n_act == na ? k : d * na + k;
			const char *n = j < 0 ? dflt[c->kind][k] : c->acts[j];

			act[d][k] = n;
			al[d][k] = strcmp(n, "LeakyRelu") == 0 ? 0.01 : 0.2;
			be[d][k] = 0.5;
			if (j >= 0 && (d == 0 || c->n_act > na) &&
				(strcmp(n, "LeakyRelu") == 0 || strcmp(n, "HardSigmoid") == 0))
			{
				if (ia < c->n_alpha)
					al[d][k] = c->alpha[ia++];
				if (strcmp(n, "HardSigmoid") == 0 && ib < c->n_beta)
					be[d][k] = c->beta[ib++];
			}
			if (j >= 0 && d == 1 && c->n_act == na)
			{
				al[1][k] = al[0][k];
				be[1][k] = be[0][k];
			}
		}
	memset(y, 0, sizeof(double) * S * D * B * H);
	for (int d = 0; d < D; d++)
		for (int bb = 0; bb < B; bb++)
		{
			bool		rev = c->dir == 1 || d == 1;
			int			len = c->lens ? c->lens[bb] : S;
			double		h[16],
						cs[16],
						nh[16],
						pre[4][16],
						xw[4][16],
						hr[4][16];

			for (int k = 0; k < H; k++)
			{
				h[k] = h0 ? h0[(d * B + bb) * H + k] : 0;
				cs[k] = c0 ? c0[(d * B + bb) * H + k] : 0;
			}
			for (int s = 0; s < len; s++)
			{
				int			t = rev ? len - 1 - s : s;
				const double *xt = x + (t * B + bb) * I;

				for (int g = 0; g < G; g++)
					for (int k = 0; k < H; k++)
					{
						int			row = d * G * H + g * H + k;

						xw[g][k] = b ? b[d * 2 * G * H + g * H + k] : 0;
						hr[g][k] = b ? b[d * 2 * G * H + G * H + g * H + k] : 0;
						for (int i = 0; i < I; i++)
							xw[g][k] += xt[i] * w[row * I + i];
						for (int i = 0; i < H; i++)
							hr[g][k] += h[i] * r[row * H + i];
						pre[g][k] = xw[g][k] + hr[g][k];
					}
#define CL(v) (c->clip > 0 ? fmin(c->clip, fmax(-c->clip, (v))) : (v))
				for (int k = 0; k < H; k++)
				{
					if (c->kind == 0)
						nh[k] = ref_act(act[d][0], al[d][0], be[d][0], CL(pre[0][k]));
					else if (c->kind == 1)
					{
						double		z = ref_act(act[d][0], al[d][0], be[d][0], CL(pre[0][k])),
									rr = ref_act(act[d][0], al[d][0], be[d][0], CL(pre[1][k])),
									hh;

						if (c->lbr)
							hh = xw[2][k] + rr * hr[2][k];
						else
						{
							hh = xw[2][k] + (b ? b[d * 6 * H + 5 * H + k] : 0);
							for (int i = 0; i < H; i++)
							{
								double		ri = ref_act(act[d][0], al[d][0], be[d][0], CL(pre[1][i]));

								hh += ri * h[i] * r[(d * 3 * H + 2 * H + k) * H + i];
							}
						}
						hh = ref_act(act[d][1], al[d][1], be[d][1], CL(hh));
						nh[k] = (1 - z) * hh + z * h[k];
					}
					else
					{
						const double *pp = p ? p + d * 3 * H : NULL;
						double		ig = ref_act(act[d][0], al[d][0], be[d][0],
												 CL(pre[0][k] + (pp ? pp[k] * cs[k] : 0))),
									fg = c->input_forget ? 1 - ig :
							ref_act(act[d][0], al[d][0], be[d][0],
									CL(pre[2][k] + (pp ? pp[2 * H + k] * cs[k] : 0))),
									cc = ref_act(act[d][1], al[d][1], be[d][1], CL(pre[3][k])),
									cn = fg * cs[k] + ig * cc,
									og = ref_act(act[d][0], al[d][0], be[d][0],
												 CL(pre[1][k] + (pp ? pp[H + k] * cn : 0)));

						cs[k] = cn;
						nh[k] = og * ref_act(act[d][2], al[d][2], be[d][2], cn);
					}
				}
#undef CL
				for (int k = 0; k < H; k++)
				{
					h[k] = nh[k];
					y[((t * D + d) * B + bb) * H + k] = h[k];
				}
			}
			/* a row of no step (len 0) has zero Y_h and Y_c, as ONNX Runtime */
			for (int k = 0; k < H; k++)
			{
				yh[(d * B + bb) * H + k] = len > 0 ? h[k] : 0;
				yc[(d * B + bb) * H + k] = len > 0 ? cs[k] : 0;
			}
		}
}

/* A tensor of type dt and shape dims holding vals (double) converted. */
static ie_tensor *
rnn_tensor(ie_dtype dt, int nd, const int64_t *dims, const double *vals)
{
	ie_tensor  *t = ie_tensor_new(dt, nd, dims);

	for (int64_t i = 0; i < ie_tensor_numel(t); i++)
	{
		if (dt == IE_FLOAT)
			((float *) t->data)[i] = (float) vals[i];
		else
			((double *) t->data)[i] = vals[i];
	}
	return t;
}

/*
 * Runs the node c describes on pseudo-random inputs (in [-1, 1)) and
 * checks Y, Y_h (and LSTM's Y_c) against ref_rnn, values within 2e-5
 * (float) or 1e-12 (double); layout 1 inputs and outputs are transposed
 * from and to ref_rnn's order; the node must give the same bytes at 2
 * threads (X W^T and a bidirectional node's directions may run in
 * parallel).  With want_err
 * set, checks instead that the
 * node fails with want_err in its message, given attrs replacing the
 * derived ones when n_extra > 0 and W of a wrong shape when bad_w.
 */
static void
rnn_case(const char *label, const rnn_cfg *c, int n_extra, const ie_attr *extra,
		 bool bad_w, const char *want_err)
{
	static const char *const ops[3] = {"RNN", "GRU", "LSTM"};
	static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
	int			G = c->kind == 0 ? 1 : c->kind == 1 ? 3 : 4,
				D = c->dir == 2 ? 2 : 1,
				H = c->hidden,
				I = c->input,
				B = c->batch,
				S = c->seq;
	double		x[256],
				xl[256],
				w[512],
				r[512],
				b[128],
				p[64],
				h0[64],
				c0[64],
				h0l[64],
				c0l[64],
				y[512],
				yh[64],
				yc[64],
				yl[512],
				yhl[64],
				ycl[64];
	int64_t		dx[3] = {c->layout ? B : S, c->layout ? S : B, I},
				dw[3] = {D, G * H, bad_w ? I + 1 : I},
				dr[3] = {D, G * H, H},
				db[2] = {D, 2 * G * H},
				dp[2] = {D, 3 * H},
				dl[1] = {B},
				ds[3] = {c->layout ? B : D, c->layout ? D : B, H},
				dy[4] = {c->layout ? B : S, c->layout ? S : D, c->layout ? D : B, H};
	ie_tensor  *in[8] = {NULL},
			   *out[3];
	ie_attr		at[8];
	int			na = 0,
				n_out = c->kind == 2 ? 3 : 2;
	char		err[512];
	int			rc;

	for (int i = 0; i < S * B * I; i++)
		x[i] = frand();
	for (int i = 0; i < D * G * H * (I + 1); i++)
		w[i] = frand();
	for (int i = 0; i < D * G * H * H; i++)
		r[i] = frand();
	for (int i = 0; i < D * 2 * G * H; i++)
		b[i] = frand();
	for (int i = 0; i < D * 3 * H; i++)
		p[i] = frand();
	for (int i = 0; i < D * B * H; i++)
	{
		h0[i] = frand();
		c0[i] = frand();
	}
	/* the layout's order: X [batch, seq, input], states [batch, D, H] */
	for (int t = 0; t < S; t++)
		for (int bb = 0; bb < B; bb++)
			for (int i = 0; i < I; i++)
				xl[c->layout ? (bb * S + t) * I + i : (t * B + bb) * I + i] = x[(t * B + bb) * I + i];
	for (int d = 0; d < D; d++)
		for (int bb = 0; bb < B; bb++)
			for (int k = 0; k < H; k++)
			{
				int			o = c->layout ? (bb * D + d) * H + k : (d * B + bb) * H + k;

				h0l[o] = h0[(d * B + bb) * H + k];
				c0l[o] = c0[(d * B + bb) * H + k];
			}
	in[0] = rnn_tensor(c->dt, 3, dx, xl);
	in[1] = rnn_tensor(c->dt, 3, dw, w);
	in[2] = rnn_tensor(c->dt, 3, dr, r);
	if (c->use_b)
		in[3] = rnn_tensor(c->dt, 2, db, b);
	if (c->lens)
		in[4] = typed_tensor(IE_INT32, 1, dl, c->lens);
	if (c->use_h0)
		in[5] = rnn_tensor(c->dt, 3, ds, h0l);
	if (c->use_c0)
		in[6] = rnn_tensor(c->dt, 3, ds, c0l);
	if (c->use_p)
		in[7] = rnn_tensor(c->dt, 2, dp, p);
	if (n_extra > 0)
	{
		memcpy(at, extra, sizeof(ie_attr) * n_extra);
		na = n_extra;
	}
	else
	{
		at[na++] = attr_int("hidden_size", H);
		at[na++] = attr_str("direction", dirs[c->dir]);
		if (c->opset >= 14)
			at[na++] = attr_int("layout", c->layout);
		if (c->clip > 0)
			at[na++] = (ie_attr) {.name = "clip", .type = IE_ATTR_FLOAT, .f = (float) c->clip};
		if (c->kind == 1)
			at[na++] = attr_int("linear_before_reset", c->lbr);
		if (c->kind == 2)
			at[na++] = attr_int("input_forget", c->input_forget);
		if (c->n_act > 0)
			at[na++] = (ie_attr) {.name = "activations", .type = IE_ATTR_STRINGS,
				.n_strings = c->n_act, .strings = c->acts};
		if (c->n_alpha > 0)
			at[na++] = (ie_attr) {.name = "activation_alpha", .type = IE_ATTR_FLOATS,
				.n_floats = c->n_alpha, .floats = c->alpha};
		if (c->n_beta > 0)
			at[na++] = (ie_attr) {.name = "activation_beta", .type = IE_ATTR_FLOATS,
				.n_floats = c->n_beta, .floats = c->beta};
	}
	rc = run_op(ops[c->kind], c->opset, c->kind == 2 ? 8 : 6, (const ie_tensor *const *) in,
				na, at, n_out, out, err, sizeof(err));
	if (want_err != NULL)
		CHECK(rc == -1 && strstr(err, want_err) != NULL,
			  "%s must fail with \"%s\": rc %d, \"%s\"", label, want_err, rc, err);
	else if (rc != 0)
		CHECK(0, "%s: %s", label, err);
	else
	{
		double		tol = c->dt == IE_FLOAT ? 2e-5 : 1e-12;

		ref_rnn(c, x, w, r, c->use_b ? b : NULL, c->use_p ? p : NULL,
				c->use_h0 ? h0 : NULL, c->use_c0 ? c0 : NULL, y, yh, yc);
		for (int t = 0; t < S; t++)
			for (int d = 0; d < D; d++)
				for (int bb = 0; bb < B; bb++)
					for (int k = 0; k < H; k++)
						yl[c->layout ? ((bb * S + t) * D + d) * H + k : ((t * D + d) * B + bb) * H + k] =
							y[((t * D + d) * B + bb) * H + k];
		for (int d = 0; d < D; d++)
			for (int bb = 0; bb < B; bb++)
				for (int k = 0; k < H; k++)
				{
					int			o = c->layout ? (bb * D + d) * H + k : (d * B + bb) * H + k;

					yhl[o] = yh[(d * B + bb) * H + k];
					ycl[o] = yc[(d * B + bb) * H + k];
				}
		CHECK(values_near(out[0], c->dt, 4, dy, yl, tol), "%s: Y", label);
		CHECK(values_near(out[1], c->dt, 3, ds, yhl, tol), "%s: Y_h", label);
		if (c->kind == 2)
			CHECK(values_near(out[2], c->dt, 3, ds, ycl, tol), "%s: Y_c", label);
		{
			ie_tensor  *out2[3];
			bool		same;

			rc = run_op_threads(ops[c->kind], c->opset, c->kind == 2 ? 8 : 6,
								(const ie_tensor *const *) in, na, at, n_out, out2,
								err, sizeof(err), 2);
			same = rc == 0;
			for (int i = 0; i < n_out; i++)
			{
				same = same && out2[i] != NULL && out2[i]->nbytes == out[i]->nbytes &&
					memcmp(out2[i]->data, out[i]->data, out[i]->nbytes) == 0;
				ie_tensor_destroy(&out2[i]);
			}
			CHECK(same, "%s: the same bytes at 2 threads: %s", label, err);
		}
	}
	for (int i = 0; i < n_out; i++)
		ie_tensor_destroy(&out[i]);
	for (int i = 0; i < 8; i++)
		ie_tensor_destroy(&in[i]);
}

/*
 * RNN, GRU and LSTM against ref_rnn: forward, reverse and bidirectional,
 * layout 1 (opset 14), sequence_lens shorter than the sequence (0
 * included: such a row's Y_h and Y_c are zeros, as ONNX Runtime gives),
 * initial states, clip, non-default activations with alpha and beta (one
 * list for both directions too), GRU's linear_before_reset 0 and 1,
 * LSTM's peepholes and input_forget, double; seq_length 0 (zero Y_h and
 * Y_c), batch 0 and input_size 0.  Refusals: W of the
 * wrong shape, direction "sideways", hidden_size not R's, a
 * sequence_lens entry past seq_length or negative, an unknown activation,
 * and the load-time checks.
 */
static void
test_rnn_ops(void)
{
	static const int32_t lens3[3] = {4, 2, 0},
				lens2[2] = {3, 1},
				lens0[2] = {0, 3},
				past[2] = {4, 5},
				neg[2] = {-1, 2};
	rnn_cfg		cases[] = {
		{.kind = 0, .opset = 7, .dt = IE_FLOAT, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .use_b = true},
		{.kind = 0, .opset = 14, .dt = IE_FLOAT, .seq = 4, .batch = 3, .input = 2, .hidden = 3, .dir = 1, .lens = lens3, .use_h0 = true},
		{.kind = 0, .opset = 22, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 4, .dir = 2, .layout = 1, .lens = lens2, .use_b = true, .use_h0 = true},
		{.kind = 0, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 3, .hidden = 2, .use_b = true, .clip = 0.4, .n_act = 1, .acts = {"LeakyRelu"}, .n_alpha = 1, .alpha = {0.3f}},
		{.kind = 0, .opset = 7, .dt = IE_DOUBLE, .seq = 3, .batch = 2, .input = 2, .hidden = 3, .dir = 2, .use_b = true, .n_act = 2, .acts = {"Relu", "Softsign"}},
		{.kind = 1, .opset = 7, .dt = IE_FLOAT, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .use_b = true},
		{.kind = 1, .opset = 14, .dt = IE_FLOAT, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .use_b = true, .use_h0 = true, .lbr = 1},
		{.kind = 1, .opset = 14, .dt = IE_FLOAT, .seq = 4, .batch = 3, .input = 2, .hidden = 2, .dir = 1, .use_b = true, .lens = lens3, .use_h0 = true},
		{.kind = 1, .opset = 22, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 3, .dir = 2, .layout = 1, .use_b = true, .lens = lens2, .use_h0 = true, .clip = 0.5, .lbr = 1},
		{.kind = 1, .opset = 22, .dt = IE_DOUBLE, .seq = 3, .batch = 2, .input = 2, .hidden = 3, .dir = 2, .layout = 1, .use_b = true, .lens = lens2, .use_h0 = true},
		{.kind = 1, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 3, .use_b = true, .n_act = 2, .acts = {"HardSigmoid", "Softsign"}, .n_alpha = 1, .alpha = {0.3f}, .n_beta = 1, .beta = {0.4f}},
		{.kind = 2, .opset = 7, .dt = IE_FLOAT, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .use_b = true},
		{.kind = 2, .opset = 14, .dt = IE_FLOAT, .seq = 4, .batch = 3, .input = 2, .hidden = 2, .dir = 1, .use_b = true, .lens = lens3, .use_h0 = true, .use_c0 = true},
		{.kind = 2, .opset = 22, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 3, .dir = 2, .layout = 1, .use_b = true, .lens = lens2, .use_h0 = true, .use_c0 = true, .use_p = true},
		{.kind = 2, .opset = 14, .dt = IE_FLOAT, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .use_b = true, .use_p = true, .use_c0 = true, .clip = 0.3, .input_forget = 1},
		{.kind = 2, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 2, .dir = 2, .use_b = true, .n_act = 3, .acts = {"HardSigmoid", "Tanh", "Softsign"}, .n_alpha = 1, .alpha = {0.25f}, .n_beta = 1, .beta = {0.45f}},
		{.kind = 2, .opset = 14, .dt = IE_DOUBLE, .seq = 3, .batch = 2, .input = 2, .hidden = 2, .dir = 2, .use_b = true, .use_p = true, .n_act = 6, .acts = {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Relu", "Softsign"}},
		/* a row of length 0 in both directions: its Y_h and Y_c zeros */
		{.kind = 2, .opset = 22, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 2, .hidden = 2, .dir = 2, .layout = 1, .use_b = true, .lens = lens0, .use_h0 = true, .use_c0 = true, .use_p = true},
		{.kind = 1, .opset = 22, .dt = IE_DOUBLE, .seq = 3, .batch = 2, .input = 2, .hidden = 2, .dir = 2, .use_b = true, .lens = lens0, .use_h0 = true},
		/* empty: seq_length 0 (Y_h, Y_c zeros, not the initial states), batch 0, input_size 0 */
		{.kind = 0, .opset = 14, .dt = IE_FLOAT, .seq = 0, .batch = 2, .input = 3, .hidden = 3, .dir = 2, .use_h0 = true},
		{.kind = 2, .opset = 14, .dt = IE_FLOAT, .seq = 0, .batch = 2, .input = 3, .hidden = 2, .layout = 1, .use_h0 = true, .use_c0 = true},
		{.kind = 1, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 0, .input = 2, .hidden = 3, .use_b = true},
		{.kind = 2, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 0, .hidden = 2, .dir = 1, .use_b = true, .use_h0 = true, .use_c0 = true},
		{.kind = 1, .opset = 14, .dt = IE_FLOAT, .seq = 3, .batch = 2, .input = 0, .hidden = 2, .use_b = true, .use_h0 = true},
	};
	rnn_cfg		c = cases[0];
	ie_attr		sideways[2] = {attr_int("hidden_size", 3), attr_str("direction", "sideways")},
				hid5[1] = {attr_int("hidden_size", 5)};
	const char *swish[1] = {"Swish"},
			   *two[2] = {"sigmoid", "TANH"};
	ie_attr		unknown[2] = {attr_int("hidden_size", 3),
		{.name = "activations", .type = IE_ATTR_STRINGS, .n_strings = 1, .strings = swish}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		label[64];

		snprintf(label, sizeof(label), "rnn case %zu", i);
		rnn_case(label, &cases[i], 0, NULL, false, NULL);
	}
	rnn_case("RNN W misshapen", &c, 0, NULL, true, "W must have shape [1, 3, 3]");
	rnn_case("RNN sideways", &c, 2, sideways, false, "direction \"sideways\" is not supported");
	rnn_case("RNN hidden_size 5", &c, 1, hid5, false, "hidden_size 5 does not match R of shape [1, 3, 3]");
	rnn_case("RNN Swish", &c, 2, unknown, false, "unknown activation \"Swish\"");
	c.lens = past;
	rnn_case("RNN sequence_lens past seq", &c, 0, NULL, false,
			 "sequence_lens[1] = 5 is not within [0, 4] (seq_length)");
	c.lens = neg;
	rnn_case("RNN sequence_lens negative", &c, 0, NULL, false,
			 "sequence_lens[0] = -1 is not within [0, 4]");
	c = cases[5];
	rnn_case("GRU W misshapen", &c, 0, NULL, true, "W must have shape [1, 9, 3]");
	c = cases[11];
	rnn_case("LSTM Swish", &c, 2, unknown, false, "unknown activation \"Swish\"");
	c.kind = 2;
	rnn_case("LSTM hidden_size 5", &c, 1, hid5, false, "hidden_size 5 does not match R");
	check_attrs_load("LSTM", 14, 2, sideways, "direction \"sideways\" is not supported",
					 IE_ERR_NOT_SUPPORTED);
	check_attrs_load("GRU", 14, 2, unknown, "unknown activation \"Swish\"", IE_ERR_INVALID);
	check_attrs_load("RNN", 1, 1, hid5, "opset 1 is not supported", IE_ERR_NOT_SUPPORTED);
	check_attrs_load("LSTM", 22, 1, hid5, NULL, IE_ERR_NONE);
	unknown[1].strings = two;
	unknown[1].n_strings = 2;
	check_attrs_load("LSTM", 14, 2, unknown, "activations lists 2 functions, not 3 (3 per direction)",
					 IE_ERR_INVALID);
	check_attrs_load("GRU", 14, 2, unknown, NULL, IE_ERR_NONE);

	/*
	 * an empty X with a huge other dim (unchecked_empty): an empty Y [2^40,
	 * 1, 0, 3] and Y_h [1, 0, 3], nothing looped over
	 */
	{
		int64_t		dx[3] = {(int64_t) 1 << 40, 0, 3},
					dw[3] = {1, 3, 3},
					dy[4] = {(int64_t) 1 << 40, 1, 0, 3},
					dh[3] = {1, 0, 3};
		ie_tensor  *X = unchecked_empty(IE_FLOAT, 3, dx),
				   *W = ie_tensor_new(IE_FLOAT, 3, dw),
				   *R = ie_tensor_new(IE_FLOAT, 3, dw),
				   *out[2];
		const ie_tensor *in[3] = {X, W, R};
		char		err[512];

		CHECK(run_op("RNN", 14, 3, in, 0, NULL, 2, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, dy) && shape_is(out[1], 3, dh),
			  "RNN X [2^40, 0, 3]: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&out[1]);
		ie_tensor_destroy(&X);

		/*
		 * seq_length 0, batch 2^40, Y alone: Y [0, 1, 2^40, 3] is empty and
		 * no state of 2^40 rows is made
		 */
		dx[0] = 0;
		dx[1] = (int64_t) 1 << 40;
		dy[0] = 0;
		dy[2] = (int64_t) 1 << 40;
		X = unchecked_empty(IE_FLOAT, 3, dx);
		in[0] = X;
		CHECK(run_op("RNN", 14, 3, in, 0, NULL, 1, out, err, sizeof(err)) == 0 &&
			  shape_is(out[0], 4, dy),
			  "RNN X [0, 2^40, 3], Y alone: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&W);
		ie_tensor_destroy(&R);

		/*
		 * X [2^31, 2^31, 0], hidden_size 1: 2^62 rows of X W^T pass
		 * OpenBLAS's int, refused before Y [2^31, 1, 2^31, 1] is made (it
		 * failed as out of memory for the output; X [2^20, 2^12, 0] zeroed
		 * a Y of 16 GiB first)
		 */
		dx[0] = (int64_t) 1 << 31;
		dx[1] = (int64_t) 1 << 31;
		dx[2] = 0;
		dw[1] = 1;
		dw[2] = 0;
		X = unchecked_empty(IE_FLOAT, 3, dx);
		W = ie_tensor_new(IE_FLOAT, 3, dw);
		dw[2] = 1;
		R = ie_tensor_new(IE_FLOAT, 3, dw);
		in[0] = X;
		in[1] = W;
		in[2] = R;
		CHECK(run_op("RNN", 14, 3, in, 0, NULL, 2, out, err, sizeof(err)) == -1 &&
			  strstr(err, "X with seq_length 2147483648, batch_size 2147483648 and input_size 0 passes the engine's limit") != NULL,
			  "RNN X [2^31, 2^31, 0]: %s", err);
		ie_tensor_destroy(&X);
		ie_tensor_destroy(&W);
		ie_tensor_destroy(&R);
	}
}

int
main(int argc, char **argv)
{
	int			verbose = argc > 1 && strcmp(argv[1], "-v") == 0;

	test_conv();
	test_conv_depthwise_depth_pad();
	test_gemm_fits();
	test_matmul();
	test_softmax();
	test_resize_det();
	test_resize_antialias();
	test_resize_half_pixel_symmetric();
	test_resize_keep_aspect_align_corners();
	test_rec_shapes();
	test_errors();
	test_broadcast_ops();
	test_unary_and_minmax();
	test_gather();
	test_gather_nd_isinf();
	test_generators();
	test_layernorm();
	test_rmsnorm();
	test_instance_group_norm();
	test_lrn_mvn();
	test_norm_empty();
	test_nms();
	test_gridsample();
	test_roialign();
	test_affinegrid();
	test_rotary();
	test_swish();
	test_unary_math();
	test_bitwise();
	test_depth_space();
	test_lpnorm();
	test_lppool();
	test_softmax_masked();
	test_cast_bool();
	test_cast_parallel();
	test_mod_edges();
	test_pad_axes_wrap();
	test_split_num_outputs();
	test_scatter_nd_max_min();
	test_reduce_bool();
	test_reduce_int();
	test_mod_float_floor();
	test_double_matmul_softmax();
	test_einsum();
	test_topk();
	test_cumsum_cumprod();
	test_trilu();
	test_scatter_elements();
	test_onehot();
	test_empty_span();
	test_empty_huge_dims();
	test_nonzero();
	test_dropout();
	test_hardmax();
	test_eyelike();
	test_compress();
	test_reverse_sequence();
	test_rnn_ops();
	test_quantize_linear();
	test_dequantize_linear();
	test_dynamic_quantize();
	test_dynamic_quantize_large();
	test_matmul_integer();
	test_matmul_integer_blas();
	test_matmul_integer_vnni();
	test_conv_integer();
	test_conv_integer_blas();
	test_node_tests(verbose);
	return tu_report("test_ops");
}
