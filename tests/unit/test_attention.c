/*
 * test_attention.c
 *	  Unit tests of the Attention operator (worker/engine/ops_attention.c):
 *	  small cases whose answers are worked out by hand (softmax weights of
 *	  1/4 and 3/4 from scores 0 and ln 3), each feature on its own (causal,
 *	  a short boolean mask, grouped-query heads in the 3-D layout, the
 *	  key/value cache, nonpad_kv_seqlen, softcap and the four
 *	  qk_matmul_output modes, a fully masked row), the refusals, and one
 *	  large case against a direct double-precision computation in this file
 *	  (more query rows than one task, two threads, grouped heads, a past, a
 *	  float mask and causal masking together).  ONNX's own node tests of
 *	  Attention run in `make check-onnx`.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/testutil.h"
#include "worker/engine/gemm_direct.h"
#include "worker/engine/op.h"

#define LN3 1.0986122886681098

/* A tensor of dtype and shape holding vals (numel of them), or zeros. */
static ie_tensor *
tensor_of(ie_dtype dt, int ndim, const int64_t *dims, const void *vals)
{
	ie_tensor  *t = ie_tensor_new(dt, ndim, dims);

	if (t != NULL && vals != NULL)
		memcpy(t->data, vals, t->nbytes);
	return t;
}

static ie_attr
a_int(const char *name, int64_t v)
{
	ie_attr		a = {.name = name, .type = IE_ATTR_INT, .i = v};

	return a;
}

static ie_attr
a_float(const char *name, float v)
{
	ie_attr		a = {.name = name, .type = IE_ATTR_FLOAT, .f = v};

	return a;
}

/*
 * Runs Attention at opset with n_in inputs (NULL: omitted) and the
 * attributes; n_out outputs into outs; returns the operator's code, its
 * message in err.
 */
static int
run_attention(int opset, int n_in, const ie_tensor *const *in, int n_attr,
			  const ie_attr *attrs, int n_out, ie_tensor **outs, int threads,
			  char *err, size_t errlen)
{
	ie_op_fn	fn = ie_op_lookup("Attention");
	ie_node_ctx ctx = {
		.op_type = "Attention", .node_name = "t", .opset = opset,
		.n_inputs = n_in, .inputs = in, .n_outputs = n_out, .outputs = outs,
		.n_attrs = n_attr, .attrs = attrs, .n_threads = threads,
		.err = err, .errlen = errlen,
	};

	err[0] = '\0';
	for (int i = 0; i < n_out; i++)
		outs[i] = NULL;
	if (fn == NULL)
	{
		snprintf(err, errlen, "no operator Attention");
		return -1;
	}
	return fn(&ctx);
}

static void
free_all(ie_tensor **t, int n)
{
	for (int i = 0; i < n; i++)
		ie_tensor_destroy(&t[i]);
}

/* Whether float tensor t holds want[0..n) within tol each. */
static bool
floats_are(const ie_tensor *t, const double *want, int64_t n, double tol)
{
	if (t == NULL || t->dtype != IE_FLOAT || ie_tensor_numel(t) != n)
		return false;
	for (int64_t i = 0; i < n; i++)
		if (!(fabs(((const float *) t->data)[i] - want[i]) <= tol))
			return false;
	return true;
}

/*
 * One query (1), two keys (0, ln 3) with scale 1: weights 1/4 and 3/4, so
 * Y = V0 / 4 + 3 V1 / 4 = 7 for V = (4, 8); in double, to 1e-15.  With
 * is_causal and two queries, the first sees only key 0 (Y = 4).
 */
static void
test_basic_and_causal(void)
{
	int64_t		qd[4] = {1, 1, 1, 1},
				kd[4] = {1, 1, 2, 1},
				q2d[4] = {1, 1, 2, 1};
	float		qv[2] = {1, 1},
				kv[2] = {0, (float) LN3},
				vv[2] = {4, 8};
	double		qdv[1] = {1},
				kdv[2] = {0, LN3},
				vdv[2] = {4, 8};
	ie_tensor  *Q = tensor_of(IE_FLOAT, 4, qd, qv),
			   *K = tensor_of(IE_FLOAT, 4, kd, kv),
			   *V = tensor_of(IE_FLOAT, 4, kd, vv),
			   *Q2 = tensor_of(IE_FLOAT, 4, q2d, qv),
			   *QD = tensor_of(IE_DOUBLE, 4, qd, qdv),
			   *KD = tensor_of(IE_DOUBLE, 4, kd, kdv),
			   *VD = tensor_of(IE_DOUBLE, 4, kd, vdv);
	ie_attr		at[2] = {a_float("scale", 1.0f), a_int("is_causal", 1)};
	ie_tensor  *out[4];
	char		err[256];
	double		want7[1] = {7},
				want_causal[2] = {4, 7};

	{
		const ie_tensor *in[3] = {Q, K, V};

		CHECK(run_attention(23, 3, in, 1, at, 1, out, 1, err, sizeof(err)) == 0 &&
			  out[0]->ndim == 4 && out[0]->dims[3] == 1 &&
			  floats_are(out[0], want7, 1, 1e-6), "attention 1x2: %s %g", err,
			  out[0] ? ((float *) out[0]->data)[0] : -1.0);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[3] = {QD, KD, VD};

		CHECK(run_attention(23, 3, in, 1, at, 1, out, 1, err, sizeof(err)) == 0 &&
			  out[0]->dtype == IE_DOUBLE &&
			  fabs(((double *) out[0]->data)[0] - 7) < 1e-14, "attention double: %s", err);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[3] = {Q2, K, V};

		CHECK(run_attention(23, 3, in, 2, at, 1, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want_causal, 2, 1e-6), "attention causal: %s", err);
		free_all(out, 1);
	}
	{
		/* the default scale, 1 / sqrt(head size 1) = 1: the same answer */
		const ie_tensor *in[3] = {Q, K, V};

		CHECK(run_attention(23, 3, in, 0, NULL, 1, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want7, 1, 1e-6), "attention default scale: %s", err);
		free_all(out, 1);
	}
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&Q2);
	ie_tensor_destroy(&QD);
	ie_tensor_destroy(&KD);
	ie_tensor_destroy(&VD);
}

/*
 * Masks: a boolean mask of one column over three keys leaves key 0 alone
 * (Y = V0); a float mask adding ln 3 to key 1 of equal scores gives 1/4,
 * 3/4; an all-false row attends nothing (Y = 0, mode-3 probabilities 0,
 * not NaN).
 */
static void
test_masks(void)
{
	int64_t		qd[4] = {1, 1, 1, 1},
				kd[4] = {1, 1, 3, 1},
				k2d[4] = {1, 1, 2, 1},
				m1d[2] = {1, 1},
				m2d[2] = {1, 2};
	float		qv[1] = {1},
				kv[3] = {0, 0, 0},
				vv[3] = {4, 8, 16},
				fm[2] = {0, (float) LN3};
	uint8_t		bm[1] = {1},
				none[2] = {0, 0};
	ie_tensor  *Q = tensor_of(IE_FLOAT, 4, qd, qv),
			   *K = tensor_of(IE_FLOAT, 4, kd, kv),
			   *V = tensor_of(IE_FLOAT, 4, kd, vv),
			   *K2 = tensor_of(IE_FLOAT, 4, k2d, kv),
			   *V2 = tensor_of(IE_FLOAT, 4, k2d, vv),
			   *BM = tensor_of(IE_BOOL, 2, m1d, bm),
			   *FM = tensor_of(IE_FLOAT, 2, m2d, fm),
			   *NM = tensor_of(IE_BOOL, 2, m2d, none);
	ie_attr		mode3 = a_int("qk_matmul_output_mode", 3);
	ie_tensor  *out[4];
	char		err[256];
	double		want4[1] = {4},
				want7[1] = {7},
				zero[2] = {0, 0};

	{
		const ie_tensor *in[4] = {Q, K, V, BM};

		CHECK(run_attention(23, 4, in, 0, NULL, 1, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want4, 1, 1e-6), "short bool mask: %s", err);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[4] = {Q, K2, V2, FM};

		CHECK(run_attention(23, 4, in, 0, NULL, 1, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want7, 1, 1e-6), "float mask: %s", err);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[4] = {Q, K2, V2, NM};

		CHECK(run_attention(23, 4, in, 1, &mode3, 4, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], zero, 1, 0) && floats_are(out[3], zero, 2, 0),
			  "fully masked row: %s", err);
		free_all(out, 4);
	}
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&K2);
	ie_tensor_destroy(&V2);
	ie_tensor_destroy(&BM);
	ie_tensor_destroy(&FM);
	ie_tensor_destroy(&NM);
}

/*
 * 3-D layout with grouped-query heads: Q [1, 1, 2] is two query heads
 * (q_num_heads 2) over one key/value head (kv_num_heads 1, K [1, 2, 1]):
 * head 0 (query 1) weighs keys 0 and ln 3 as 1/4, 3/4 (Y 7), head 1
 * (query 0) equally (Y 6); Y is [1, 1, 2], heads side by side.
 */
static void
test_gqa_3d(void)
{
	int64_t		qd[3] = {1, 1, 2},
				kd[3] = {1, 2, 1};
	float		qv[2] = {1, 0},
				kv[2] = {0, (float) LN3},
				vv[2] = {4, 8};
	ie_tensor  *Q = tensor_of(IE_FLOAT, 3, qd, qv),
			   *K = tensor_of(IE_FLOAT, 3, kd, kv),
			   *V = tensor_of(IE_FLOAT, 3, kd, vv);
	ie_attr		at[3] = {a_int("q_num_heads", 2), a_int("kv_num_heads", 1),
	a_float("scale", 1.0f)};
	ie_tensor  *out[4];
	char		err[256];
	double		want[2] = {7, 6};
	const ie_tensor *in[3] = {Q, K, V};

	CHECK(run_attention(23, 3, in, 3, at, 1, out, 1, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 3 && out[0]->dims[1] == 1 && out[0]->dims[2] == 2 &&
		  floats_are(out[0], want, 2, 1e-6), "gqa 3-D: %s", err);
	free_all(out, 1);
	CHECK(run_attention(23, 3, in, 1, at + 2, 1, out, 1, err, sizeof(err)) == -1 &&
		  strstr(err, "q_num_heads") != NULL, "3-D without heads: %s", err);
	free_all(out, 1);
	{
		ie_attr		bad[2] = {a_int("q_num_heads", 2), a_int("kv_num_heads", 3)};
		int64_t		k3d[3] = {1, 2, 3};
		float		z[6] = {0};
		ie_tensor  *K3 = tensor_of(IE_FLOAT, 3, k3d, z),
				   *V3 = tensor_of(IE_FLOAT, 3, k3d, z);
		const ie_tensor *in3[3] = {Q, K3, V3};

		CHECK(run_attention(23, 3, in3, 2, bad, 1, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "not a multiple") != NULL, "2 heads over 3: %s", err);
		free_all(out, 1);
		ie_tensor_destroy(&K3);
		ie_tensor_destroy(&V3);
	}
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
}

/*
 * The key/value cache: past_key (0) and K (ln 3) make present_key (0,
 * ln 3), past_value (4) and V (8) present_value (4, 8); with is_causal the
 * one new query is at position 1 (offset = past length) and sees both: Y
 * 7.  nonpad_kv_seqlen (opset 24) of 1 hides key 1: Y 4.
 */
static void
test_cache_and_nonpad(void)
{
	int64_t		one[4] = {1, 1, 1, 1},
				two[4] = {1, 1, 2, 1},
				nd[1] = {1};
	float		qv[1] = {1},
				pk[1] = {0},
				kv[1] = {(float) LN3},
				pv[1] = {4},
				vv[1] = {8},
				k2[2] = {0, (float) LN3},
				v2[2] = {4, 8};
	int64_t		np[1] = {1};
	ie_tensor  *Q = tensor_of(IE_FLOAT, 4, one, qv),
			   *PK = tensor_of(IE_FLOAT, 4, one, pk),
			   *K = tensor_of(IE_FLOAT, 4, one, kv),
			   *PV = tensor_of(IE_FLOAT, 4, one, pv),
			   *V = tensor_of(IE_FLOAT, 4, one, vv),
			   *K2 = tensor_of(IE_FLOAT, 4, two, k2),
			   *V2 = tensor_of(IE_FLOAT, 4, two, v2),
			   *NP = tensor_of(IE_INT64, 1, nd, np);
	ie_attr		at[2] = {a_float("scale", 1.0f), a_int("is_causal", 1)};
	ie_tensor  *out[4];
	char		err[256];
	double		want7[1] = {7},
				want4[1] = {4},
				pkw[2] = {0, LN3},
				pvw[2] = {4, 8};

	{
		const ie_tensor *in[6] = {Q, K, V, NULL, PK, PV};

		CHECK(run_attention(23, 6, in, 2, at, 3, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want7, 1, 1e-6) && floats_are(out[1], pkw, 2, 1e-7) &&
			  floats_are(out[2], pvw, 2, 0) && out[1]->dims[2] == 2,
			  "past and present: %s", err);
		free_all(out, 3);
		/* past_key without past_value is refused */
		in[5] = NULL;
		CHECK(run_attention(23, 6, in, 2, at, 3, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "together") != NULL, "past_key alone: %s", err);
		free_all(out, 3);
	}
	{
		const ie_tensor *in[7] = {Q, K2, V2, NULL, NULL, NULL, NP};

		CHECK(run_attention(24, 7, in, 1, at, 1, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[0], want4, 1, 1e-6), "nonpad_kv_seqlen: %s", err);
		free_all(out, 1);
	}
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&PK);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&PV);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&K2);
	ie_tensor_destroy(&V2);
	ie_tensor_destroy(&NP);
}

/*
 * softcap 1 over scores (0, 2): mode 0 gives the raw product (0, 2), mode
 * 1 the capped (0, tanh 2), mode 2 adds the mask (ln 3 on key 0), mode 3
 * the probabilities; refusals of mode 4 and a float16 softmax.
 */
static void
test_softcap_modes(void)
{
	int64_t		qd[4] = {1, 1, 1, 1},
				kd[4] = {1, 1, 2, 1},
				md[1] = {2};
	float		qv[1] = {1},
				kv[2] = {0, 2},
				vv[2] = {4, 8},
				mv[2] = {(float) LN3, 0};
	ie_tensor  *Q = tensor_of(IE_FLOAT, 4, qd, qv),
			   *K = tensor_of(IE_FLOAT, 4, kd, kv),
			   *V = tensor_of(IE_FLOAT, 4, kd, vv),
			   *M = tensor_of(IE_FLOAT, 1, md, mv);
	const ie_tensor *in[4] = {Q, K, V, M};
	ie_tensor  *out[4];
	char		err[256];
	double		t2 = tanh(2.0),
				p1 = 1.0 / (1.0 + exp(t2 - LN3)),
				want[4][2] = {{0, 2}, {0, t2}, {LN3, t2}, {p1, 1 - p1}};

	for (int mode = 0; mode < 4; mode++)
	{
		ie_attr		at[3] = {a_float("scale", 1.0f), a_float("softcap", 1.0f),
		a_int("qk_matmul_output_mode", mode)};
		double		y = 4 * p1 + 8 * (1 - p1);

		CHECK(run_attention(23, 4, in, 3, at, 4, out, 1, err, sizeof(err)) == 0 &&
			  floats_are(out[3], want[mode], 2, 1e-6) && floats_are(out[0], &y, 1, 1e-5),
			  "softcap mode %d: %s", mode, err);
		free_all(out, 4);
	}
	{
		ie_attr		at[1] = {a_int("qk_matmul_output_mode", 4)};

		CHECK(run_attention(23, 4, in, 1, at, 4, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "qk_matmul_output_mode 4") != NULL, "mode 4: %s", err);
		free_all(out, 4);
	}
	{
		ie_attr		at[1] = {a_int("softmax_precision", IE_FLOAT16)};

		CHECK(run_attention(23, 4, in, 1, at, 1, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "not supported") != NULL, "float16 softmax: %s", err);
		free_all(out, 1);
	}
	{
		/* a mask row of 3 columns for 2 keys does not fit */
		int64_t		bd[1] = {3};
		float		bv[3] = {0};
		ie_tensor  *BM = tensor_of(IE_FLOAT, 1, bd, bv);
		const ie_tensor *bin[4] = {Q, K, V, BM};

		CHECK(run_attention(23, 4, bin, 0, NULL, 1, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "does not broadcast") != NULL, "mask too long: %s", err);
		free_all(out, 1);
		ie_tensor_destroy(&BM);
	}
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&M);
}

/*
 * What a hostile model meets: K and V with no heads for Q's two are an
 * error (the head ratio divided by zero before), none anywhere is an
 * empty result; scale 0 or below is refused, as ONNX Runtime refuses it;
 * a NaN in a float mask makes its row NaN, as in ONNX's reference and
 * ONNX Runtime (the shared row softmax dropped it), the other row stays
 * finite; and the Softmax operator keeps a NaN too, in rows long enough
 * for its vector path.
 */
static void
test_hostile(void)
{
	int64_t		q2[4] = {1, 2, 3, 4},
				k0[4] = {1, 0, 5, 4},
				q0[4] = {1, 0, 3, 4},
				qd[4] = {1, 1, 2, 1},
				kd[4] = {1, 1, 2, 1},
				md[2] = {2, 2},
				sd[2] = {1, 40};
	float		qv[2] = {1, 1},
				kv[2] = {0, 1},
				vv[2] = {4, 8},
				mv[4] = {0, NAN, 0, 0},
				sv[40];
	ie_tensor  *Q2 = tensor_of(IE_FLOAT, 4, q2, NULL),
			   *K0 = tensor_of(IE_FLOAT, 4, k0, NULL),
			   *Q0 = tensor_of(IE_FLOAT, 4, q0, NULL),
			   *Q = tensor_of(IE_FLOAT, 4, qd, qv),
			   *K = tensor_of(IE_FLOAT, 4, kd, kv),
			   *V = tensor_of(IE_FLOAT, 4, kd, vv),
			   *M = tensor_of(IE_FLOAT, 2, md, mv),
			   *S;
	ie_tensor  *out[4];
	char		err[256];

	{
		const ie_tensor *in[3] = {Q2, K0, K0};

		CHECK(run_attention(23, 3, in, 0, NULL, 1, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "no heads") != NULL, "0 key/value heads: %s", err);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[3] = {Q0, K0, K0};

		CHECK(run_attention(23, 3, in, 0, NULL, 1, out, 1, err, sizeof(err)) == 0 &&
			  out[0] != NULL && ie_tensor_numel(out[0]) == 0, "0 heads anywhere: %s", err);
		free_all(out, 1);
	}
	for (int i = 0; i < 2; i++)
	{
		const ie_tensor *in[3] = {Q, K, V};
		ie_attr		at[1] = {a_float("scale", i == 0 ? 0.0f : -0.5f)};

		CHECK(run_attention(23, 3, in, 1, at, 1, out, 1, err, sizeof(err)) == -1 &&
			  strstr(err, "greater than 0") != NULL, "scale %s: %s", i ? "-0.5" : "0", err);
		free_all(out, 1);
	}
	{
		const ie_tensor *in[4] = {Q, K, V, M};

		CHECK(run_attention(23, 4, in, 0, NULL, 1, out, 1, err, sizeof(err)) == 0 &&
			  isnan(((float *) out[0]->data)[0]) && isfinite(((float *) out[0]->data)[1]),
			  "NaN in the mask: %s (%g, %g)", err,
			  out[0] ? ((float *) out[0]->data)[0] : 0.0, out[0] ? ((float *) out[0]->data)[1] : 0.0);
		free_all(out, 1);
	}
	for (int i = 0; i < 40; i++)
		sv[i] = i == 17 ? NAN : (float) i / 10;
	S = tensor_of(IE_FLOAT, 2, sd, sv);
	{
		const ie_tensor *in[1] = {S};
		ie_op_fn	fn = ie_op_lookup("Softmax");
		ie_node_ctx ctx = {
			.op_type = "Softmax", .node_name = "t", .opset = 13, .n_inputs = 1,
			.inputs = in, .n_outputs = 1, .outputs = out, .n_threads = 1,
			.err = err, .errlen = sizeof(err),
		};
		bool		all_nan = true;

		out[0] = NULL;
		CHECK(fn != NULL && fn(&ctx) == 0, "softmax with a NaN: %s", err);
		for (int i = 0; out[0] != NULL && i < 40; i++)
			all_nan = all_nan && isnan(((float *) out[0]->data)[i]);
		CHECK(out[0] != NULL && all_nan, "softmax with a NaN: the row is not all NaN");
		free_all(out, 1);
	}
	ie_tensor_destroy(&Q2);
	ie_tensor_destroy(&K0);
	ie_tensor_destroy(&Q0);
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&M);
	ie_tensor_destroy(&S);
}

/* Deterministic pseudo-random values in [-1, 1). */
static unsigned int rng = 2024;

static float
frand(void)
{
	rng = rng * 1103515245u + 12345u;
	return ((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static ie_tensor *
rand_tensor(int ndim, const int64_t *dims)
{
	ie_tensor  *t = ie_tensor_new(IE_FLOAT, ndim, dims);

	for (int64_t i = 0; t != NULL && i < ie_tensor_numel(t); i++)
		((float *) t->data)[i] = frand();
	return t;
}

/*
 * A large case against a direct computation in double: B 2, 4 query heads
 * over 2 key/value heads in the 3-D layout, 130 new queries (three tasks
 * of rows) after a past of 20, head sizes 8 (Q, K) and 5 (V), a float mask
 * [2, 1, 130, 150] and is_causal, on two threads; Y within 1e-5 and
 * present_key equal to the concatenation.
 */
static void
test_large_against_direct(void)
{
	enum
	{
		B = 2, HQ = 4, HKV = 2, SQ = 130, P = 20, T = SQ + P, D = 8, DV = 5
	};
	int64_t		qd[3] = {B, SQ, HQ * D},
				kd[3] = {B, SQ, HKV * D},
				vd[3] = {B, SQ, HKV * DV},
				pkd[4] = {B, HKV, P, D},
				pvd[4] = {B, HKV, P, DV},
				md[4] = {B, 1, SQ, T};
	ie_tensor  *Q = rand_tensor(3, qd),
			   *K = rand_tensor(3, kd),
			   *V = rand_tensor(3, vd),
			   *PK = rand_tensor(4, pkd),
			   *PV = rand_tensor(4, pvd),
			   *M = rand_tensor(4, md);
	const ie_tensor *in[6] = {Q, K, V, M, PK, PV};
	ie_attr		at[3] = {a_int("q_num_heads", HQ), a_int("kv_num_heads", HKV),
	a_int("is_causal", 1)};
	ie_tensor  *out[4];
	char		err[256];
	double		worst = 0,
				worst_k = 0;
	static double kf[B][HKV][T][D],
				vf[B][HKV][T][DV];
	const float *q = Q->data,
			   *k = K->data,
			   *v = V->data,
			   *pk = PK->data,
			   *pv = PV->data,
			   *m = M->data;

	/* the full key and value sequences, past first */
	for (int b = 0; b < B; b++)
		for (int h = 0; h < HKV; h++)
			for (int t = 0; t < T; t++)
			{
				for (int d = 0; d < D; d++)
					kf[b][h][t][d] = t < P ? pk[((b * HKV + h) * P + t) * D + d] :
						k[((b * SQ) + t - P) * HKV * D + h * D + d];
				for (int d = 0; d < DV; d++)
					vf[b][h][t][d] = t < P ? pv[((b * HKV + h) * P + t) * DV + d] :
						v[((b * SQ) + t - P) * HKV * DV + h * DV + d];
			}
	CHECK(run_attention(23, 6, in, 3, at, 3, out, 2, err, sizeof(err)) == 0 &&
		  out[0]->ndim == 3 && out[0]->dims[2] == HQ * DV, "large case: %s", err);
	for (int b = 0; out[0] != NULL && b < B; b++)
		for (int h = 0; h < HQ; h++)
			for (int i = 0; i < SQ; i++)
			{
				double		s[T],
							mx = -INFINITY,
							sum = 0;
				int			g = h / (HQ / HKV);

				for (int t = 0; t < T; t++)
				{
					double		dot = 0;

					for (int d = 0; d < D; d++)
						dot += q[(b * SQ + i) * HQ * D + h * D + d] * kf[b][g][t][d];
					s[t] = t > i + P ? -INFINITY :
						dot / sqrt((double) D) + m[(b * SQ + i) * T + t];
					mx = fmax(mx, s[t]);
				}
				for (int t = 0; t < T; t++)
					sum += (s[t] = exp(s[t] - mx));
				for (int d = 0; d < DV; d++)
				{
					double		y = 0;

					for (int t = 0; t < T; t++)
						y += s[t] / sum * vf[b][g][t][d];
					worst = fmax(worst, fabs(((float *) out[0]->data)[(b * SQ + i) * HQ * DV + h * DV + d] - y));
				}
			}
	for (int b = 0; out[1] != NULL && b < B; b++)
		for (int h = 0; h < HKV; h++)
			for (int t = 0; t < T; t++)
				for (int d = 0; d < D; d++)
					worst_k = fmax(worst_k, fabs(((float *) out[1]->data)[((b * HKV + h) * T + t) * D + d] -
												 kf[b][h][t][d]));
	CHECK(worst < 1e-5, "large case: Y off by %g", worst);
	CHECK(out[1] != NULL && out[1]->dims[2] == T && worst_k == 0,
		  "large case: present_key off by %g", worst_k);
	free_all(out, 3);
	ie_tensor_destroy(&Q);
	ie_tensor_destroy(&K);
	ie_tensor_destroy(&V);
	ie_tensor_destroy(&PK);
	ie_tensor_destroy(&PV);
	ie_tensor_destroy(&M);
}

/*
 * Batch invariance of text rows, as docs/performance.md has it for MatMul:
 * 20 queries over 37 keys (2 heads, head size 64, a boolean mask of all
 * true) give, bit for bit, the rows they give as the middle entry of a
 * batch of 3 padded to 128 queries and 128 keys (the padded keys masked),
 * at 1 and 2 threads, where the direct kernel runs (AVX-512F); elsewhere
 * OpenBLAS rounds by the shapes (6e-8 here) and the check is 1e-6.
 */
static void
test_padding_invariance(void)
{
	enum
	{
		H = 2, S = 20, T = 37, P = 128, D = 64
	};
	int64_t		d1[4] = {1, H, S, D},
				k1[4] = {1, H, T, D},
				m1[4] = {1, 1, S, T},
				d3[4] = {3, H, P, D},
				m3[4] = {3, 1, P, P};
	ie_tensor  *Q1 = rand_tensor(4, d1),
			   *K1 = rand_tensor(4, k1),
			   *V1 = rand_tensor(4, k1),
			   *M1 = ie_tensor_new(IE_BOOL, 4, m1),
			   *Q3 = rand_tensor(4, d3),
			   *K3 = rand_tensor(4, d3),
			   *V3 = rand_tensor(4, d3),
			   *M3 = ie_tensor_new(IE_BOOL, 4, m3);
	bool		exact = ie_gd_enabled();
	char		err[256];

	memset(M1->data, 1, M1->nbytes);
	/* entry 1 of the batch: the same queries, keys and values, padded */
	for (int h = 0; h < H; h++)
	{
		memcpy((float *) Q3->data + ((1 * H + h) * P) * D,
			   (float *) Q1->data + (h * S) * D, S * D * sizeof(float));
		memcpy((float *) K3->data + ((1 * H + h) * P) * D,
			   (float *) K1->data + (h * T) * D, T * D * sizeof(float));
		memcpy((float *) V3->data + ((1 * H + h) * P) * D,
			   (float *) V1->data + (h * T) * D, T * D * sizeof(float));
	}
	for (int b = 0; b < 3; b++)
		for (int i = 0; i < P; i++)
			for (int t = 0; t < P; t++)
				((uint8_t *) M3->data)[(b * P + i) * P + t] = t < (b == 1 ? T : P - b);
	for (int threads = 1; threads <= 2; threads++)
	{
		const ie_tensor *in1[4] = {Q1, K1, V1, M1},
				   *in3[4] = {Q3, K3, V3, M3};
		ie_tensor  *o1[1],
				   *o3[1];
		double		worst = 0;

		CHECK(run_attention(23, 4, in1, 0, NULL, 1, o1, threads, err, sizeof(err)) == 0 &&
			  run_attention(23, 4, in3, 0, NULL, 1, o3, threads, err, sizeof(err)) == 0,
			  "padding: %s", err);
		for (int h = 0; o1[0] != NULL && o3[0] != NULL && h < H; h++)
			for (int e = 0; e < S * D; e++)
				worst = fmax(worst, fabs(((float *) o1[0]->data)[h * S * D + e] -
										 ((float *) o3[0]->data)[((1 * H + h) * P) * D + e]));
		CHECK(exact ? worst == 0 : worst < 1e-6,
			  "padding, %d thread(s): rows differ by %g (%s)", threads, worst,
			  exact ? "direct kernel: bit for bit" : "OpenBLAS: 1e-6");
		ie_tensor_destroy(&o1[0]);
		ie_tensor_destroy(&o3[0]);
	}
	ie_tensor_destroy(&Q1);
	ie_tensor_destroy(&K1);
	ie_tensor_destroy(&V1);
	ie_tensor_destroy(&M1);
	ie_tensor_destroy(&Q3);
	ie_tensor_destroy(&K3);
	ie_tensor_destroy(&V3);
	ie_tensor_destroy(&M3);
}

int
main(void)
{
	test_basic_and_causal();
	test_masks();
	test_gqa_3d();
	test_cache_and_nonpad();
	test_softcap_modes();
	test_large_against_direct();
	test_hostile();
	test_padding_invariance();
	return tu_report("test_attention");
}
