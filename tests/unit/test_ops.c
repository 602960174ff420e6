/*
 * test_ops.c
 *	  Unit tests of the compute operators (ops_conv.c, ops_matmul.c,
 *	  ops_norm.c, ops_pool.c, ops_resize.c, ops_reduce.c).
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "tests/unit/testutil.h"
#include "worker/engine/op.h"

/* Node tests whose operator must refuse them with an error. */
static const char *const expect_error[] = {
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
 * Runs op_type on inputs with attrs at opset; returns the operator's
 * return code, outputs in outs (n_out of them), message in err.
 */
static int
run_op(const char *op_type, int opset, int n_in, const ie_tensor *const *in,
	   int n_attr, const ie_attr *attrs, int n_out, ie_tensor **outs,
	   char *err, size_t errlen)
{
	ie_op_fn	fn = ie_op_lookup(op_type);
	ie_node_ctx ctx = {
		.op_type = op_type, .node_name = "t", .opset = opset,
		.n_inputs = n_in, .inputs = in, .n_outputs = n_out, .outputs = outs,
		.n_attrs = n_attr, .attrs = attrs, .n_threads = 1,
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
	ie_attr		aa[1] = {attr_int("antialias", 1)};
	ie_attr		ma[1] = {attr_str("mode", "bicubic")};
	int64_t		k[2] = {2, 2};
	ie_attr		pa[2] = {attr_ints("kernel_shape", 2, k), attr_str("auto_pad", "SAME_MIDDLE")};
	ie_attr		ba[1] = {attr_int("training_mode", 2)};

	CHECK(run_op("Resize", 18, 3, rin, 1, aa, 1, out, err, sizeof(err)) == -1 &&
		  strstr(err, "antialias") != NULL, "resize antialias: %s", err);
	ie_tensor_destroy(&out[0]);
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

/* Operators this test owns: node tests of these run here. */
static int
owned_op(const char *op)
{
	static const char *const ops[] = {
		"Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization",
		"Softmax", "LogSoftmax", "GlobalAveragePool", "GlobalMaxPool",
		"AveragePool", "MaxPool", "Resize", "Upsample", "ReduceMean",
		"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
		"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", NULL
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

int
main(int argc, char **argv)
{
	int			verbose = argc > 1 && strcmp(argv[1], "-v") == 0;

	test_conv();
	test_matmul();
	test_softmax();
	test_resize_det();
	test_rec_shapes();
	test_errors();
	test_node_tests(verbose);
	return tu_report("test_ops");
}
