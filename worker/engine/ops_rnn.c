/*
 * ops_rnn.c
 *	  ONNX recurrent operators: RNN, GRU and LSTM (opsets 7, 14, 22), float32
 *	  and float64.
 *
 * Shapes (ONNX Operators.md, RNN/GRU/LSTM), G gates (RNN 1, GRU 3 in the
 * order z r h, LSTM 4 in the order i o f c), D directions (2 when
 * bidirectional), H hidden_size, layout 0 (layout 1 in brackets):
 *	 X [seq, batch, input]					([batch, seq, input])
 *	 W [D, G * H, input], R [D, G * H, H], B [D, 2 * G * H] (Wb then Rb)
 *	 sequence_lens int32 [batch], P [D, 3 * H] (LSTM peepholes i o f)
 *	 initial_h, initial_c, Y_h, Y_c [D, batch, H]	([batch, D, H])
 *	 Y [seq, D, batch, H]					([batch, seq, D, H])
 *
 * X W_d^T of every time step is computed up front; each step then takes
 * H R^T for the whole batch in one more GEMM and runs the gates per row.
 * float X: with the direct kernel (gemm_direct.h, AVX-512, ie_gd_enabled)
 * W_d^T and R_d^T are packed once per run (OpenBLAS's sgemm repacked R at
 * every step: a fifth of the time), X W^T runs over the pool in blocks of
 * rows, the two directions of a bidirectional node on two threads, and the
 * gates are float, sigmoid and tanh through vmath.h (the gate arithmetic
 * in double with libm took half the time); without the direct kernel the
 * products are OpenBLAS sgemm, on one thread.  double X: dgemm, gates in
 * double.  A row past its sequence_lens entry is left alone: its Y is
 * zero and its state the last one it reached, so Y_h and Y_c hold it (the
 * reverse direction runs a row from its own last step, as ONNX Runtime
 * does); a row of length 0 (every row when seq_length is 0) has zero Y_h
 * and Y_c, not its initial state, as ONNX Runtime gives (Operators.md does
 * not say).  clip bounds the input of every gate activation (f and g), not
 * the cell state before h, as ONNX Runtime.  activation_alpha and
 * activation_beta are consumed in the order of the activations, each taken
 * only by a function that has such a parameter, the ONNX operator's
 * default when the list has run out (ONNX Runtime's reading).
 *
 * Threading: no state outside the call; with the direct kernel X W^T is
 * split over ie_parallel_for by rows and a bidirectional node's directions
 * run as two tasks, each on its own buffers, so the result does not
 * depend on the thread count.  OpenBLAS is serial (ie_set_threads).
 */
#include <cblas.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/gemm_direct.h"
#include "worker/engine/op.h"
#include "worker/engine/pool.h"
#include "worker/engine/vmath.h"

/* The three operators. */
typedef enum rnn_kind
{
	RK_RNN,
	RK_GRU,
	RK_LSTM
} rnn_kind;

/* Activation functions, in the order of act_names. */
enum
{
	ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKY_RELU,
	ACT_THRESHOLDED_RELU, ACT_SCALED_TANH, ACT_HARD_SIGMOID, ACT_ELU,
	ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT
};

static const char *const act_names[ACT_COUNT] = {
	"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
	"ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"
};

/*
 * Whether each function takes alpha and beta, and their defaults (those of
 * the ONNX operators of the same name; Affine and ScaledTanh as the
 * experimental operators had them).
 */
static const struct
{
	bool		has_alpha;
	bool		has_beta;
	double		alpha;
	double		beta;
}			act_params[ACT_COUNT] = {
	[ACT_AFFINE] = {true, true, 1.0, 0.0},
	[ACT_LEAKY_RELU] = {true, false, 0.01, 0.0},
	[ACT_THRESHOLDED_RELU] = {true, false, 1.0, 0.0},
	[ACT_SCALED_TANH] = {true, true, 1.0, 1.0},
	[ACT_HARD_SIGMOID] = {true, true, 0.2, 0.5},
	[ACT_ELU] = {true, false, 1.0, 0.0},
};

/* One activation function with its parameters. */
typedef struct rnn_act
{
	int			fn;
	double		alpha;
	double		beta;
} rnn_act;

/* A node's attributes, read and checked by rnn_read_attrs. */
typedef struct rnn_attrs
{
	rnn_kind	kind;
	int			gates;			/* G: 1, 3, 4 */
	int			n_act;			/* activations per direction: 1, 2, 3 */
	int			direction;		/* 0 forward, 1 reverse, 2 bidirectional */
	int			dirs;			/* D */
	int64_t		hidden;			/* hidden_size, -1 when not set */
	int			layout;
	bool		has_clip;
	double		clip;
	bool		linear_before_reset;	/* GRU */
	bool		input_forget;	/* LSTM */
	rnn_act		act[2][3];		/* per direction: f (, g (, h)) */
} rnn_attrs;

/* The node's inputs and their extents, checked by rnn_read_inputs. */
typedef struct rnn_inputs
{
	const ie_tensor *x,
			   *w,
			   *r,
			   *b,
			   *seq_lens,
			   *h0,
			   *c0,
			   *p;
	bool		dbl;			/* float64 rather than float32 */
	int64_t		seq;
	int64_t		batch;
	int64_t		input;
	int64_t		hidden;
} rnn_inputs;

/* Whether a and b are equal ignoring ASCII case. */
static bool
name_equal(const char *a, const char *b)
{
	for (; *a != '\0' && *b != '\0'; a++, b++)
		if (tolower((unsigned char) *a) != tolower((unsigned char) *b))
			return false;
	return *a == *b;
}

/*
 * name as messages show it (into buf, 40 bytes): a byte outside printable
 * ASCII, a quote or a backslash as '?' (a model's string may be anything),
 * "..." after the first 32 bytes of a longer one.
 */
static void
act_shown(const char *name, char *buf)
{
	size_t		n = 0;

	for (; name[n] != '\0' && n < 32; n++)
	{
		unsigned char c = (unsigned char) name[n];

		buf[n] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char) c : '?';
	}
	if (name[n] != '\0')
	{
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
}

/* The position in act_names of name (ignoring case), or -1. */
static int
act_find(const char *name)
{
	for (int f = 0; f < ACT_COUNT; f++)
		if (name_equal(name, act_names[f]))
			return f;
	return -1;
}

/*
 * The activations of the node into a->act: the "activations" list (n_act
 * per direction, or n_act for both directions of a bidirectional node,
 * which ONNX Runtime 1.31 refuses: the engine reads it as the same list
 * twice), names matched ignoring case, alpha and beta
 * consumed as the file header says; the defaults (RNN Tanh, GRU Sigmoid
 * Tanh, LSTM Sigmoid Tanh Tanh) without the attribute.  An unknown name or
 * a list of another length is invalid (Operators.md, "activations").
 */
static int
rnn_read_activations(ie_node_ctx *ctx, rnn_attrs *a)
{
	static const int dflt[3][3] = {
		{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}
	};
	const char *const *names = NULL;
	const float *alphas = NULL,
			   *betas = NULL;
	int			n = ie_attr_strings(ctx, "activations", &names);
	int			n_alpha = ie_attr_floats(ctx, "activation_alpha", &alphas),
				n_beta = ie_attr_floats(ctx, "activation_beta", &betas),
				ia = 0,
				ib = 0;

	if (n < 0)
	{
		for (int d = 0; d < 2; d++)
			for (int k = 0; k < a->n_act; k++)
			{
				a->act[d][k].fn = dflt[a->kind][k];
				a->act[d][k].alpha = act_params[dflt[a->kind][k]].alpha;
				a->act[d][k].beta = act_params[dflt[a->kind][k]].beta;
			}
		return 0;
	}
	for (int j = 0; j < n; j++)
		if (act_find(names[j]) < 0)
		{
			char		shown[40];

			act_shown(names[j], shown);
			return ie_op_error(ctx, "unknown activation \"%s\" (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
							   shown);
		}
	if (n != a->n_act && n != a->n_act * a->dirs)
		return ie_op_error(ctx, "activations lists %d functions, not %d (%d per direction)",
						   n, a->n_act * a->dirs, a->n_act);
	for (int j = 0; j < n; j++)
	{
		rnn_act    *act = &a->act[j / a->n_act][j % a->n_act];
		int			fn = act_find(names[j]);

		act->fn = fn;
		act->alpha = act_params[fn].alpha;
		act->beta = act_params[fn].beta;
		if (act_params[fn].has_alpha && ia < n_alpha)
			act->alpha = alphas[ia++];
		if (act_params[fn].has_beta && ib < n_beta)
			act->beta = betas[ib++];
	}
	if (n < a->n_act * a->dirs)
		memcpy(a->act[1], a->act[0], sizeof(a->act[0]));
	return 0;
}

/*
 * Reads and checks the attributes of an RNN, GRU or LSTM node into *a:
 * opset 7 or later (opset 1's output_sequence is not supported), direction
 * forward, reverse or bidirectional, layout 0 or 1, hidden_size positive
 * when set, clip positive (ONNX Runtime refuses others), GRU's
 * linear_before_reset and LSTM's input_forget 0 or 1, the activations.  0,
 * or -1 after ie_op_error.
 */
static int
rnn_read_attrs(ie_node_ctx *ctx, rnn_kind kind, rnn_attrs *a)
{
	static const char *const directions[] = {"forward", "reverse", "bidirectional", NULL};
	const ie_attr *clip = ie_attr_find(ctx, "clip");
	int64_t		lbr = ie_attr_int(ctx, "linear_before_reset", 0),
				forget = ie_attr_int(ctx, "input_forget", 0);
	int64_t		layout = ie_attr_int(ctx, "layout", 0);

	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->gates = kind == RK_RNN ? 1 : kind == RK_GRU ? 3 : 4;
	a->n_act = kind == RK_RNN ? 1 : kind == RK_GRU ? 2 : 3;
	if (ctx->opset < 7)
		return ie_op_error(ctx, "opset %d is not supported (%s-1's output_sequence; opset 7 and later)",
						   ctx->opset, ctx->op_type);
	if (ie_attr_choice(ctx, "direction", "forward", directions, &a->direction) != 0)
		return -1;
	a->dirs = a->direction == 2 ? 2 : 1;
	if (layout != 0 && layout != 1)
		return ie_op_error(ctx, "layout %lld is not supported (0 or 1)", (long long) layout);
	a->layout = (int) layout;
	a->hidden = ie_attr_int(ctx, "hidden_size", -1);
	if (ie_attr_find(ctx, "hidden_size") != NULL && a->hidden <= 0)
		return ie_op_error(ctx, "hidden_size %lld must be positive", (long long) a->hidden);
	if (clip != NULL && clip->type == IE_ATTR_FLOAT)
	{
		if (!(clip->f > 0.0f))
			return ie_op_error(ctx, "clip %g must be positive", (double) clip->f);
		a->has_clip = true;
		a->clip = clip->f;
	}
	if (lbr != 0 && lbr != 1)
		return ie_op_error(ctx, "linear_before_reset %lld must be 0 or 1", (long long) lbr);
	a->linear_before_reset = lbr == 1;
	if (forget != 0 && forget != 1)
		return ie_op_error(ctx, "input_forget %lld must be 0 or 1", (long long) forget);
	a->input_forget = forget == 1;
	return rnn_read_activations(ctx, a);
}

/*
 * Whether t has shape dims[0..nd); otherwise -1 after the error "<what>
 * must have shape [..] (<why>), not [..]".
 */
static int
expect_shape(ie_node_ctx *ctx, const ie_tensor *t, const char *what, int nd,
			 const int64_t *dims, const char *why)
{
	char		want[96],
				got[96];
	bool		ok = t->ndim == nd;

	for (int i = 0; ok && i < nd; i++)
		ok = t->dims[i] == dims[i];
	if (ok)
		return 0;
	return ie_op_error(ctx, "%s must have shape %s (%s), not %s", what,
					   ie_shape_str(want, sizeof(want), nd, dims), why,
					   ie_shape_str(got, sizeof(got), t->ndim, t->dims));
}

/*
 * Reads and checks the inputs against each other and the attributes
 * (shapes in the file header): X float or double of rank 3, hidden_size
 * from R's last dim when the node does not set it (else they must agree),
 * every sequence_lens entry within [0, seq_length].  0, or -1 after
 * ie_op_error.
 */
static int
rnn_read_inputs(ie_node_ctx *ctx, const rnn_attrs *a, rnn_inputs *in)
{
	const ie_tensor *const *v = ctx->inputs;
	int64_t		gh,
				dims[3];
	char		buf[96];

	memset(in, 0, sizeof(*in));
	in->x = v[0];
	in->w = v[1];
	in->r = v[2];
	in->b = ctx->n_inputs > 3 ? v[3] : NULL;
	in->seq_lens = ctx->n_inputs > 4 ? v[4] : NULL;
	in->h0 = ctx->n_inputs > 5 ? v[5] : NULL;
	if (a->kind == RK_LSTM)
	{
		in->c0 = ctx->n_inputs > 6 ? v[6] : NULL;
		in->p = ctx->n_inputs > 7 ? v[7] : NULL;
	}
	if (in->x->dtype != IE_FLOAT && in->x->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "X of type %s is not supported (float and double)",
						   ie_dtype_name(in->x->dtype));
	in->dbl = in->x->dtype == IE_DOUBLE;
	if (in->x->ndim != 3)
		return ie_op_error(ctx, "X must have rank 3, not %s",
						   ie_shape_str(buf, sizeof(buf), in->x->ndim, in->x->dims));
	in->seq = in->x->dims[a->layout == 0 ? 0 : 1];
	in->batch = in->x->dims[a->layout == 0 ? 1 : 0];
	in->input = in->x->dims[2];
	if (in->r->ndim != 3)
		return ie_op_error(ctx, "R must have rank 3, not %s",
						   ie_shape_str(buf, sizeof(buf), in->r->ndim, in->r->dims));
	if (a->hidden >= 0 && in->r->dims[2] != a->hidden)
		return ie_op_error(ctx, "hidden_size %lld does not match R of shape %s (its last dim is hidden_size)",
						   (long long) a->hidden,
						   ie_shape_str(buf, sizeof(buf), in->r->ndim, in->r->dims));
	in->hidden = in->r->dims[2];
	/* no R of shape [D, G * H, H] holds more (and G * H must not overflow) */
	if (in->hidden > INT_MAX / 8)
		return ie_op_error(ctx, "hidden_size %lld (R of shape %s) passes the engine's limit of %d",
						   (long long) in->hidden,
						   ie_shape_str(buf, sizeof(buf), in->r->ndim, in->r->dims),
						   INT_MAX / 8);
	gh = a->gates * in->hidden;
	dims[0] = a->dirs;
	dims[1] = gh;
	dims[2] = in->hidden;
	if (expect_shape(ctx, in->r, "R", 3, dims, "num_directions, gates * hidden_size, hidden_size") != 0)
		return -1;
	dims[2] = in->input;
	if (expect_shape(ctx, in->w, "W", 3, dims, "num_directions, gates * hidden_size, input_size") != 0)
		return -1;
	dims[1] = 2 * gh;
	if (in->b != NULL &&
		expect_shape(ctx, in->b, "B", 2, dims, "num_directions, 2 * gates * hidden_size") != 0)
		return -1;
	dims[1] = 3 * in->hidden;
	if (in->p != NULL &&
		expect_shape(ctx, in->p, "P", 2, dims, "num_directions, 3 * hidden_size") != 0)
		return -1;
	dims[0] = a->layout == 0 ? a->dirs : in->batch;
	dims[1] = a->layout == 0 ? in->batch : a->dirs;
	dims[2] = in->hidden;
	if (in->h0 != NULL &&
		expect_shape(ctx, in->h0, "initial_h", 3, dims,
					 a->layout == 0 ? "num_directions, batch_size, hidden_size" :
					 "batch_size, num_directions, hidden_size") != 0)
		return -1;
	if (in->c0 != NULL &&
		expect_shape(ctx, in->c0, "initial_c", 3, dims,
					 a->layout == 0 ? "num_directions, batch_size, hidden_size" :
					 "batch_size, num_directions, hidden_size") != 0)
		return -1;
	if (in->seq_lens != NULL)
	{
		const int32_t *sl = in->seq_lens->data;

		if (in->seq_lens->dtype != IE_INT32)
			return ie_op_error(ctx, "sequence_lens must be int32, not %s",
							   ie_dtype_name(in->seq_lens->dtype));
		if (expect_shape(ctx, in->seq_lens, "sequence_lens", 1, &in->batch, "batch_size") != 0)
			return -1;
		for (int64_t b = 0; b < in->batch; b++)
			if (sl[b] < 0 || sl[b] > in->seq)
				return ie_op_error(ctx, "sequence_lens[%lld] = %d is not within [0, %lld] (seq_length)",
								   (long long) b, (int) sl[b], (long long) in->seq);
	}
	return 0;
}

/* Element i of a float (dbl false) or double array, as double. */
static inline double
ld(const void *p, int64_t i, bool dbl)
{
	return dbl ? ((const double *) p)[i] : (double) ((const float *) p)[i];
}

/* Stores v as element i of a float or double array. */
static inline void
st(void *p, int64_t i, bool dbl, double v)
{
	if (dbl)
		((double *) p)[i] = v;
	else
		((float *) p)[i] = (float) v;
}

/*
 * C [m, n] (row stride ldc) = A [m, k] (row stride lda) x B^T, B [n, k]
 * (row stride ldb), in float or double; C zero when k is 0.  Extents fit
 * int (rnn_read_inputs).
 */
static void
gemm_nt(bool dbl, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
		const void *b, int64_t ldb, void *c, int64_t ldc)
{
	if (m == 0 || n == 0)
		return;
	if (k == 0)
	{
		for (int64_t i = 0; i < m; i++)
			memset((char *) c + i * ldc * (dbl ? 8 : 4), 0, n * (dbl ? 8 : 4));
		return;
	}
	if (dbl)
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) m, (int) n, (int) k,
					1.0, a, (int) lda, b, (int) ldb, 0.0, c, (int) ldc);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) m, (int) n, (int) k,
					1.0f, a, (int) lda, b, (int) ldb, 0.0f, c, (int) ldc);
}

/* f(x) for one activation (Operators.md, RNN "activations"). */
static double
act_apply(const rnn_act *f, double x)
{
	switch (f->fn)
	{
		case ACT_RELU:
			return x > 0 ? x : 0;
		case ACT_TANH:
			return tanh(x);
		case ACT_SIGMOID:
			return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
		case ACT_AFFINE:
			return f->alpha * x + f->beta;
		case ACT_LEAKY_RELU:
			return x >= 0 ? x : f->alpha * x;
		case ACT_THRESHOLDED_RELU:
			return x > f->alpha ? x : 0;
		case ACT_SCALED_TANH:
			return f->alpha * tanh(f->beta * x);
		case ACT_HARD_SIGMOID:
			return fmax(0.0, fmin(1.0, f->alpha * x + f->beta));
		case ACT_ELU:
			return x >= 0 ? x : f->alpha * (exp(x) - 1.0);
		case ACT_SOFTSIGN:
			return x / (1.0 + fabs(x));
		case ACT_SOFTPLUS:
			return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
	}
	return x;
}

/* f(x) after clip bounds x to [-clip, clip] when the node sets clip. */
static inline double
gate(const rnn_attrs *a, const rnn_act *f, double x)
{
	if (a->has_clip)
		x = fmin(a->clip, fmax(-a->clip, x));
	return act_apply(f, x);
}

/*
 * The work of one node: the inputs and attributes, the sums X W^T of
 * every step (xw [seq * batch rows, D * G * H], rows in X's order), the
 * biases in double (bias [D, G * H], Wb + Rb but for GRU's h gate, where
 * it is Wbh alone, rbh [D, H] holding Rbh), and the state.
 */
typedef struct rnn_job
{
	const rnn_attrs *a;
	const rnn_inputs *in;
	bool		direct;			/* float products through gemm_direct.h */
	bool		xw_done;		/* xw made before the directions run */
	void	   *xw;
	double	   *bias;
	double	   *rbh;
	float	   *biasf;			/* [D, G * H]: bias rounded to float */
	float	   *rbhf;			/* [D, H]: rbh rounded to float */
	/* per direction, [D, ...] */
	void	   *h;				/* [batch, H]: the direction's hidden state */
	void	   *c;				/* [batch, H]: LSTM's cell state */
	void	   *hr;				/* [batch, G * H]: H R^T of a step */
	void	   *rh;				/* [batch, H]: GRU's r (.) H (linear_before_reset 0) */
	void	   *rhr;			/* [batch, H]: (r (.) H) Rh^T */
	float	   *pre;			/* [G * H]: float gate sums of one row */
	float	   *rp;				/* R^T packed by ie_gd_pack_bt (rp_size floats) */
	float	   *wp;				/* W^T packed likewise (wp_size floats) */
	int64_t		rp_size;
	int64_t		wp_size;
	ie_tensor  *y;
	ie_tensor  *yh;
	ie_tensor  *yc;
} rnn_job;

/* The buffers of direction d: slices of rnn_job's [D, ...] buffers. */
typedef struct rnn_dir
{
	void	   *h;
	void	   *c;
	void	   *hr;
	void	   *rh;
	void	   *rhr;
	float	   *pre;
	float	   *rp;				/* the first product's packed R^T */
	float	   *rp2;			/* GRU's Rh^T (linear_before_reset 0) */
	float	   *wp;
} rnn_dir;

/* The row of X (and of xw) of step t of batch row b. */
static inline int64_t
x_row(const rnn_inputs *in, int layout, int64_t t, int64_t b)
{
	return layout == 0 ? t * in->batch + b : b * in->seq + t;
}

/* The offset in Y of step t, direction d, batch row b (H values follow). */
static inline int64_t
y_off(const rnn_job *j, int64_t t, int d, int64_t b)
{
	int64_t		D = j->a->dirs,
				H = j->in->hidden;

	if (j->a->layout == 0)
		return ((t * D + d) * j->in->batch + b) * H;
	return ((b * j->in->seq + t) * D + d) * H;
}

/* The offset of direction d, batch row b in initial_h/c and Y_h/c. */
static inline int64_t
state_off(const rnn_attrs *a, const rnn_inputs *in, int d, int64_t b)
{
	return a->layout == 0 ? (d * in->batch + b) * in->hidden :
		(b * a->dirs + d) * in->hidden;
}

/*
 * One step of batch row b in direction d: xw the row's X W^T for this
 * direction (G * H), hr its H R^T, hp/cp its state [H], updated in place.
 * RNN: H = f(xw + hr + b).  LSTM (i o f c): i = f(.. + Pi C), f = f(.. + Pf
 * C) (1 - i with input_forget), C = f C + i g(..), o = f(.. + Po C), H = o
 * h(C).  GRU with linear_before_reset 1: z, r = f(..), h~ = g(xw_h + Wbh +
 * r (hr_h + Rbh)), H = (1 - z) h~ + z H.  GRU with linear_before_reset 0
 * runs in gru_step's two phases instead.
 */
static void
cell_step(const rnn_job *j, int d, const void *xw, const void *hr, void *hp,
		  void *cp, int64_t b)
{
	const rnn_attrs *a = j->a;
	const rnn_act *f = a->act[d];
	bool		dbl = j->in->dbl;
	int64_t		H = j->in->hidden;
	const double *bias = j->bias + d * a->gates * H;
	int64_t		o = b * H;

	if (a->kind == RK_RNN)
	{
		for (int64_t k = 0; k < H; k++)
			st(hp, o + k, dbl, gate(a, &f[0], ld(xw, k, dbl) + ld(hr, k, dbl) + bias[k]));
	}
	else if (a->kind == RK_GRU)
	{
		const double *rbh = j->rbh + d * H;

		for (int64_t k = 0; k < H; k++)
		{
			double		z = gate(a, &f[0], ld(xw, k, dbl) + ld(hr, k, dbl) + bias[k]),
						r = gate(a, &f[0], ld(xw, H + k, dbl) + ld(hr, H + k, dbl) + bias[H + k]),
						hh = gate(a, &f[1], ld(xw, 2 * H + k, dbl) + bias[2 * H + k] +
								  r * (ld(hr, 2 * H + k, dbl) + rbh[k]));

			st(hp, o + k, dbl, (1.0 - z) * hh + z * ld(hp, o + k, dbl));
		}
	}
	else
	{
		const ie_tensor *p = j->in->p;
		const void *pp = p != NULL ? (const char *) p->data + d * 3 * H * (dbl ? 8 : 4) : NULL;

		for (int64_t k = 0; k < H; k++)
		{
			double		c = ld(cp, o + k, dbl),
						pi = pp ? ld(pp, k, dbl) : 0,
						po = pp ? ld(pp, H + k, dbl) : 0,
						pf = pp ? ld(pp, 2 * H + k, dbl) : 0;
			double		i = gate(a, &f[0], ld(xw, k, dbl) + ld(hr, k, dbl) + bias[k] + pi * c);
			double		fg = a->input_forget ? 1.0 - i :
				gate(a, &f[0], ld(xw, 2 * H + k, dbl) + ld(hr, 2 * H + k, dbl) +
					 bias[2 * H + k] + pf * c);
			double		cc = gate(a, &f[1], ld(xw, 3 * H + k, dbl) + ld(hr, 3 * H + k, dbl) +
								  bias[3 * H + k]);
			double		og;

			c = fg * c + i * cc;
			if (!dbl)
				c = (float) c;
			og = gate(a, &f[0], ld(xw, H + k, dbl) + ld(hr, H + k, dbl) + bias[H + k] + po * c);
			st(cp, o + k, dbl, c);
			st(hp, o + k, dbl, og * act_apply(&f[2], c));
		}
	}
}

/* The sequence length of batch row b. */
static inline int64_t
row_len(const rnn_inputs *in, int64_t b)
{
	return in->seq_lens != NULL ? ((const int32_t *) in->seq_lens->data)[b] : in->seq;
}

/*
 * x[0..n) = f(x) in float, x first bounded to [-clip, clip] when clip is
 * set and the node sets one: Sigmoid, Tanh and ScaledTanh's tanh through
 * vmath.h's vector functions (at most 5 ulp, vmath.h), the other functions
 * per element through act_apply in double, rounded to float.
 */
static void
act_vec(const rnn_attrs *a, const rnn_act *f, bool clip, float *x, int64_t n)
{
	if (clip && a->has_clip)
	{
		float		cl = (float) a->clip;

		for (int64_t k = 0; k < n; k++)
			x[k] = fminf(cl, fmaxf(-cl, x[k]));
	}
	switch (f->fn)
	{
		case ACT_SIGMOID:
			ie_vsigmoidf(x, x, n);
			break;
		case ACT_TANH:
			ie_vtanhf(x, x, n);
			break;
		case ACT_SCALED_TANH:
			for (int64_t k = 0; k < n; k++)
				x[k] *= (float) f->beta;
			ie_vtanhf(x, x, n);
			for (int64_t k = 0; k < n; k++)
				x[k] *= (float) f->alpha;
			break;
		default:
			for (int64_t k = 0; k < n; k++)
				x[k] = (float) act_apply(f, x[k]);
			break;
	}
}

/*
 * y[k] = a[k] + b[k] + c[k] for k < n, left to right, in blocks of 8 that
 * the compiler turns into vector adds at -O2 (a loop of unknown length
 * stays scalar there): the same operations per element, so the same bits.
 */
static void
sum3(const float *restrict a, const float *restrict b, const float *restrict c,
	 float *restrict y, int64_t n)
{
	int64_t		k = 0;

	for (; k + 8 <= n; k += 8)
		for (int i = 0; i < 8; i++)
			y[k + i] = a[k + i] + b[k + i] + c[k + i];
	for (; k < n; k++)
		y[k] = a[k] + b[k] + c[k];
}

/*
 * cell_step in float (X float): xw, hr [G * H] of batch row b, hp, cp
 * [batch, H] its state, pre [G * H] scratch.  The same equations, each
 * gate's sums (xw + hr + bias, in that order) in float, then its
 * activation over the H values at once (act_vec).
 */
static void
cell_step_f(const rnn_job *j, int d, const float *xw, const float *hr, float *hp,
			float *cp, float *pre, int64_t b)
{
	const rnn_attrs *a = j->a;
	const rnn_act *f = a->act[d];
	int64_t		H = j->in->hidden,
				GH = a->gates * H;
	const float *bias = j->biasf + d * GH;
	float	   *h = hp + b * H;

	if (a->kind == RK_RNN)
	{
		sum3(xw, hr, bias, pre, H);
		act_vec(a, &f[0], true, pre, H);
		memcpy(h, pre, H * sizeof(float));
	}
	else if (a->kind == RK_GRU)
	{
		const float *rbh = j->rbhf + d * H;

		sum3(xw, hr, bias, pre, 2 * H);
		act_vec(a, &f[0], true, pre, 2 * H);
		for (int64_t k = 0; k < H; k++)
			pre[2 * H + k] = xw[2 * H + k] + bias[2 * H + k] +
				pre[H + k] * (hr[2 * H + k] + rbh[k]);
		act_vec(a, &f[1], true, pre + 2 * H, H);
		for (int64_t k = 0; k < H; k++)
			h[k] = (1.0f - pre[k]) * pre[2 * H + k] + pre[k] * h[k];
	}
	else
	{
		const ie_tensor *p = j->in->p;
		const float *pp = p != NULL ? (const float *) p->data + d * 3 * H : NULL;
		float	   *c = cp + b * H;

		sum3(xw, hr, bias, pre, GH);
		if (pp != NULL)
			for (int64_t k = 0; k < H; k++)
			{
				pre[k] += pp[k] * c[k];
				pre[2 * H + k] += pp[2 * H + k] * c[k];
			}
		act_vec(a, &f[0], true, pre, H);
		if (!a->input_forget)
			act_vec(a, &f[0], true, pre + 2 * H, H);
		act_vec(a, &f[1], true, pre + 3 * H, H);
		for (int64_t k = 0; k < H; k++)
		{
			float		fg = a->input_forget ? 1.0f - pre[k] : pre[2 * H + k];

			c[k] = fg * c[k] + pre[k] * pre[3 * H + k];
			if (pp != NULL)
				pre[H + k] += pp[H + k] * c[k];
		}
		act_vec(a, &f[0], true, pre + H, H);
		memcpy(pre + 3 * H, c, H * sizeof(float));
		act_vec(a, &f[2], false, pre + 3 * H, H);
		for (int64_t k = 0; k < H; k++)
			h[k] = pre[H + k] * pre[3 * H + k];
	}
}

/* The buffers of direction d (rnn_dir). */
static void
dir_bufs(const rnn_job *j, int d, rnn_dir *s)
{
	int64_t		esz = j->in->dbl ? 8 : 4,
				B = j->in->batch,
				H = j->in->hidden,
				GH = j->a->gates * H;

	s->h = (char *) j->h + d * B * H * esz;
	s->c = (char *) j->c + d * B * H * esz;
	s->hr = (char *) j->hr + d * B * GH * esz;
	s->rh = (char *) j->rh + d * B * H * esz;
	s->rhr = (char *) j->rhr + d * B * H * esz;
	s->pre = j->pre + d * GH;
	s->rp = j->direct ? j->rp + d * j->rp_size : NULL;
	s->rp2 = j->direct ? s->rp + ie_gd_packed_b_size(H, 2 * H) : NULL;
	s->wp = j->direct ? j->wp + d * j->wp_size : NULL;
}

/*
 * C [batch, n] (row stride ldc) = A [batch, H] x Rs^T, Rs [n, H] rows of
 * R: with the direct kernel over rp, Rs^T packed once by run_direction
 * (each element one fused multiply-add chain in k order), else gemm_nt.
 */
static void
step_gemm(const rnn_job *j, const void *a, const void *rs, const float *rp, int64_t n,
		  void *c, int64_t ldc)
{
	int64_t		H = j->in->hidden;

	if (j->direct)
		ie_gd_gemm_rows_pb(a, H, j->in->batch, H, rp, n, c, ldc);
	else
		gemm_nt(j->in->dbl, j->in->batch, n, H, a, H, rs, H, c, ldc);
}

/*
 * GRU's first phase (linear_before_reset 0) for batch row b, not past its
 * length: r = f(xw_r + hr_r + bias_r), rh's row = r (.) H, in double or
 * (X float) in float with act_vec.
 */
static void
gru_reset(const rnn_job *j, int d, const rnn_dir *s, const char *xw, const char *hr,
		  int64_t b)
{
	const rnn_attrs *a = j->a;
	bool		dbl = j->in->dbl;
	int64_t		H = j->in->hidden,
				GH = a->gates * H;

	if (!dbl)
	{
		const float *xf = (const float *) xw + H,
				   *hf = (const float *) hr + H,
				   *bf = j->biasf + d * GH + H,
				   *h = (const float *) s->h + b * H;
		float	   *rh = (float *) s->rh + b * H;

		sum3(xf, hf, bf, s->pre, H);
		act_vec(a, &a->act[d][0], true, s->pre, H);
		for (int64_t k = 0; k < H; k++)
			rh[k] = s->pre[k] * h[k];
		return;
	}
	for (int64_t k = 0; k < H; k++)
	{
		double		rg = gate(a, &a->act[d][0], ld(xw, H + k, dbl) + ld(hr, H + k, dbl) +
							  j->bias[d * GH + H + k]);

		st(s->rh, b * H + k, dbl, rg * ld(s->h, b * H + k, dbl));
	}
}

/*
 * GRU's second phase (linear_before_reset 0) for batch row b: z = f(xw_z
 * + hr_z + bias_z), ht = g(xw_h + Wbh + (r (.) H) Rh^T + Rbh), H = (1 - z)
 * ht + z H, in double or (X float) in float with act_vec.
 */
static void
gru_update(const rnn_job *j, int d, const rnn_dir *s, const char *xw, const char *hr,
		   int64_t b)
{
	const rnn_attrs *a = j->a;
	bool		dbl = j->in->dbl;
	int64_t		H = j->in->hidden,
				GH = a->gates * H;

	if (!dbl)
	{
		const float *xf = (const float *) xw,
				   *hf = (const float *) hr,
				   *bf = j->biasf + d * GH,
				   *rbh = j->rbhf + d * H,
				   *rhr = (const float *) s->rhr + b * H;
		float	   *h = (float *) s->h + b * H,
				   *z = s->pre,
				   *hh = s->pre + H;

		for (int64_t k = 0; k < H; k++)
		{
			z[k] = xf[k] + hf[k] + bf[k];
			hh[k] = xf[2 * H + k] + bf[2 * H + k] + rhr[k] + rbh[k];
		}
		act_vec(a, &a->act[d][0], true, z, H);
		act_vec(a, &a->act[d][1], true, hh, H);
		for (int64_t k = 0; k < H; k++)
			h[k] = (1.0f - z[k]) * hh[k] + z[k] * h[k];
		return;
	}
	for (int64_t k = 0; k < H; k++)
	{
		double		z = gate(a, &a->act[d][0], ld(xw, k, dbl) + ld(hr, k, dbl) + j->bias[d * GH + k]),
					hh = gate(a, &a->act[d][1], ld(xw, 2 * H + k, dbl) + j->bias[d * GH + 2 * H + k] +
							  ld(s->rhr, b * H + k, dbl) + j->rbh[d * H + k]);

		st(s->h, b * H + k, dbl, (1.0 - z) * hh + z * ld(s->h, b * H + k, dbl));
	}
}

/*
 * Runs direction d over every step: per step one GEMM H R^T for the whole
 * batch (GRU with linear_before_reset 0: H [Rz Rr]^T, then (r (.) H) Rh^T
 * once r is known, gru_reset and gru_update), then the rows still within
 * their length, Y's entries of the step written.  With the direct kernel
 * R's rows are packed (transposed) once here, not by every step's sgemm.
 * The state in the direction's h (and c) starts as the initial one and
 * ends as the last.
 */
static void
run_direction(rnn_job *j, int d)
{
	const rnn_attrs *a = j->a;
	const rnn_inputs *in = j->in;
	bool		dbl = in->dbl,
				rev = a->direction == 1 || d == 1,
				two_phase = a->kind == RK_GRU && !a->linear_before_reset;
	int64_t		H = in->hidden,
				GH = a->gates * H,
				n1 = two_phase ? 2 * H : GH,
				esz = dbl ? 8 : 4,
				ldxw = a->dirs * GH;
	const char *r = (const char *) in->r->data + d * GH * H * esz;
	rnn_dir		s;

	dir_bufs(j, d, &s);
	if (j->direct)
	{
		ie_gd_pack_bt((const float *) r, H, H, n1, s.rp);
		if (two_phase)
			ie_gd_pack_bt((const float *) r + 2 * H * H, H, H, H, s.rp2);
	}
	for (int64_t step = 0; step < in->seq; step++)
	{
		bool		any = false;

		for (int64_t b = 0; b < in->batch && !any; b++)
			any = step < row_len(in, b);
		if (!any)
			break;
		step_gemm(j, s.h, r, s.rp, n1, s.hr, GH);
		if (two_phase)
		{
			for (int64_t b = 0; b < in->batch; b++)
			{
				int64_t		len = row_len(in, b),
							t = rev ? len - 1 - step : step;

				if (step >= len)
				{
					memset((char *) s.rh + b * H * esz, 0, H * esz);
					continue;
				}
				gru_reset(j, d, &s,
						  (const char *) j->xw + (x_row(in, a->layout, t, b) * ldxw + d * GH) * esz,
						  (const char *) s.hr + b * GH * esz, b);
			}
			step_gemm(j, s.rh, r + 2 * H * H * esz, s.rp2, H, s.rhr, H);
		}
		for (int64_t b = 0; b < in->batch; b++)
		{
			int64_t		len = row_len(in, b),
						t = rev ? len - 1 - step : step;
			const char *xw;
			const char *hr = (const char *) s.hr + b * GH * esz;

			if (step >= len)
				continue;
			xw = (const char *) j->xw + (x_row(in, a->layout, t, b) * ldxw + d * GH) * esz;
			if (two_phase)
				gru_update(j, d, &s, xw, hr, b);
			else if (!dbl)
				cell_step_f(j, d, (const float *) xw, (const float *) hr, s.h, s.c,
							s.pre, b);
			else
				cell_step(j, d, xw, hr, s.h, s.c, b);
			if (j->y != NULL)
				memcpy((char *) j->y->data + y_off(j, t, d, b) * esz,
					   (char *) s.h + b * H * esz, H * esz);
		}
	}
}

/*
 * Copies direction d of an initial state (initial_h or initial_c, in the
 * node's layout; zeros when omitted) into state [batch, H], or (to_out)
 * state into direction d of an output Y_h or Y_c, zeros for a row of
 * length 0 (file header).
 */
static void
copy_state(const rnn_attrs *a, const rnn_inputs *in, const ie_tensor *t, void *state,
		   int d, bool to_out)
{
	int64_t		esz = in->dbl ? 8 : 4,
				row = in->hidden * esz;

	for (int64_t b = 0; b < in->batch; b++)
	{
		char	   *s = (char *) state + b * row;
		char	   *v = t != NULL ? (char *) t->data + state_off(a, in, d, b) * esz : NULL;

		if (to_out && row_len(in, b) == 0)
			memset(v, 0, row);
		else if (to_out)
			memcpy(v, s, row);
		else if (v != NULL)
			memcpy(s, v, row);
		else
			memset(s, 0, row);
	}
}

/*
 * The biases of direction d into j->bias and j->rbh (file header of
 * rnn_job), and rounded to float into j->biasf and j->rbhf; zeros without
 * B.
 */
static void
fill_bias(rnn_job *j, int d)
{
	const rnn_attrs *a = j->a;
	const rnn_inputs *in = j->in;
	int64_t		H = in->hidden,
				GH = a->gates * H;
	double	   *bias = j->bias + d * GH;
	double	   *rbh = j->rbh + d * H;

	for (int64_t k = 0; k < GH; k++)
	{
		double		wb = in->b ? ld(in->b->data, d * 2 * GH + k, in->dbl) : 0,
					rb = in->b ? ld(in->b->data, d * 2 * GH + GH + k, in->dbl) : 0;

		if (a->kind == RK_GRU && k >= 2 * H)
		{
			bias[k] = wb;
			rbh[k - 2 * H] = rb;
		}
		else
			bias[k] = wb + rb;
	}
	for (int64_t k = 0; k < GH; k++)
		j->biasf[d * GH + k] = (float) bias[k];
	for (int64_t k = 0; k < H; k++)
		j->rbhf[d * H + k] = (float) rbh[k];
}

/* Rows of X per task of the direct X W^T (a multiple of IE_GD_MR). */
#define RNN_XW_ROWS 96

/*
 * Packs W_d^T (W_d [G * H, input]) for the direct kernel into direction
 * d's wp (task d of ie_parallel_for).
 */
static void
pack_w_task(void *arg, int64_t task, int worker)
{
	rnn_job    *j = arg;
	const rnn_inputs *in = j->in;
	int64_t		GH = j->a->gates * in->hidden;
	rnn_dir		s;

	(void) worker;
	dir_bufs(j, (int) task, &s);
	ie_gd_pack_bt((const float *) in->w->data + task * GH * in->input, in->input,
				  in->input, GH, s.wp);
}

/*
 * Task t of ie_parallel_for: rows [r0, r0 + RNN_XW_ROWS) of X times W_d^T
 * (packed), into direction d's columns of xw [seq * batch, D * G * H],
 * with d = t / chunks.  Each element is one chain over k whatever the
 * rows around it, so the split does not change a bit.
 */
static void
xw_task(void *arg, int64_t task, int worker)
{
	rnn_job    *j = arg;
	const rnn_inputs *in = j->in;
	int64_t		GH = j->a->gates * in->hidden,
				M = in->seq * in->batch,
				chunks = (M + RNN_XW_ROWS - 1) / RNN_XW_ROWS,
				r0 = task % chunks * RNN_XW_ROWS,
				rows = M - r0 < RNN_XW_ROWS ? M - r0 : RNN_XW_ROWS;
	int			d = (int) (task / chunks);
	rnn_dir		s;

	(void) worker;
	dir_bufs(j, d, &s);
	ie_gd_gemm_rows_pb((const float *) in->x->data + r0 * in->input, in->input, rows,
					   in->input, s.wp, GH,
					   (float *) j->xw + r0 * j->a->dirs * GH + d * GH, j->a->dirs * GH);
}

/*
 * X W_d^T for direction d into its columns of xw (xw [seq * batch, D * G
 * * H]) with gemm_nt (OpenBLAS); input_size 0 gives zeros.  The direct
 * kernel's product is made before the directions run (pack_w_task,
 * xw_task).
 */
static void
input_product(rnn_job *j, int d)
{
	const rnn_inputs *in = j->in;
	int64_t		GH = j->a->gates * in->hidden,
				esz = in->dbl ? 8 : 4,
				K = in->input > 0 ? in->input : 1;
	const char *w = (const char *) in->w->data + d * GH * in->input * esz;
	char	   *xw = (char *) j->xw + d * GH * esz;

	gemm_nt(in->dbl, in->seq * in->batch, GH, in->input, in->x->data, K, w, K,
			xw, j->a->dirs * GH);
}

/*
 * One direction (task d of ie_parallel_for): biases, X W_d^T (unless the
 * direct kernel made it), initial state, the steps, the final state into
 * Y_h and Y_c.  Directions share
 * no buffer they write (xw's columns, Y's and Y_h's entries are theirs),
 * so running them on two threads gives the bits of running them in turn.
 */
static void
direction_task(void *arg, int64_t task, int worker)
{
	rnn_job    *j = arg;
	int			d = (int) task;
	rnn_dir		s;

	(void) worker;
	dir_bufs(j, d, &s);
	fill_bias(j, d);
	if (!j->xw_done)
		input_product(j, d);
	copy_state(j->a, j->in, j->in->h0, s.h, d, false);
	copy_state(j->a, j->in, j->in->c0, s.c, d, false);
	run_direction(j, d);
	if (j->yh != NULL)
		copy_state(j->a, j->in, j->yh, s.h, d, true);
	if (j->yc != NULL)
		copy_state(j->a, j->in, j->yc, s.c, d, true);
}

/*
 * The recurrence proper, outputs allocated (y may be NULL, yh and yc
 * too): scratch buffers (the state per direction); with the direct kernel
 * X W^T over the pool in tasks of RNN_XW_ROWS rows per direction (W_d^T
 * packed first), then each direction (direction_task), the two of a
 * bidirectional float node on two threads (OpenBLAS is not called from
 * the pool here).  An empty batch or hidden_size 0 computes nothing;
 * seq_length 0 gives zero Y_h and Y_c (every row has length 0; file
 * header) without a buffer or a look at the inputs; input_size 0 gives X
 * W^T = 0.  Extents fit OpenBLAS's int (rnn_run).  0, or -1 after
 * ie_op_error.
 */
static int
rnn_compute(ie_node_ctx *ctx, const rnn_attrs *a, const rnn_inputs *in, ie_tensor *y,
			ie_tensor *yh, ie_tensor *yc)
{
	rnn_job		j = {.a = a, .in = in, .y = y, .yh = yh, .yc = yc};
	ie_dtype	dt = in->x->dtype;
	int64_t		H = in->hidden,
				GH = a->gates * H;
	int64_t		dxw[3] = {in->seq, in->batch, a->dirs * GH},
				dhr[3] = {a->dirs, in->batch, GH},
				dh[3] = {a->dirs, in->batch, H},
				db[2] = {a->dirs, GH},
				drbh[2] = {a->dirs, H},
				dp[2] = {a->dirs, 0};
	int			rc = -1;

	if (in->batch == 0 || H == 0)
		return 0;
	if (in->seq == 0)
	{
		/* Y_h, Y_c [D, batch, H] (or [batch, D, H]) are allocated, so sized */
		if (yh != NULL)
			memset(yh->data, 0, ie_tensor_numel(yh) * ie_dtype_size(dt));
		if (yc != NULL)
			memset(yc->data, 0, ie_tensor_numel(yc) * ie_dtype_size(dt));
		return 0;
	}
	j.direct = !in->dbl && ie_gd_enabled();
	j.h = ie_scratch_new(dt, 3, dh);
	j.c = ie_scratch_new(dt, 3, dh);
	j.bias = ie_scratch_new(IE_DOUBLE, 2, db);
	j.rbh = ie_scratch_new(IE_DOUBLE, 2, drbh);
	j.biasf = ie_scratch_new(IE_FLOAT, 2, db);
	j.rbhf = ie_scratch_new(IE_FLOAT, 2, drbh);
	j.pre = ie_scratch_new(IE_FLOAT, 2, db);
	if (j.h == NULL || j.c == NULL || j.bias == NULL || j.rbh == NULL ||
		j.biasf == NULL || j.rbhf == NULL || j.pre == NULL)
		goto oom;
	j.xw = ie_scratch_new(dt, 3, dxw);
	j.hr = ie_scratch_new(dt, 3, dhr);
	j.rh = ie_scratch_new(dt, 3, dh);
	j.rhr = ie_scratch_new(dt, 3, dh);
	if (j.xw == NULL || j.hr == NULL || j.rh == NULL || j.rhr == NULL)
		goto oom;
	if (j.direct)
	{
		/* R^T's first rows (GRU: [Rz Rr], then Rh), W^T */
		j.rp_size = ie_gd_packed_b_size(H, GH) + ie_gd_packed_b_size(H, H);
		j.wp_size = ie_gd_packed_b_size(in->input, GH);
		dp[1] = j.rp_size;
		j.rp = ie_scratch_new(IE_FLOAT, 2, dp);
		dp[1] = j.wp_size;
		j.wp = ie_scratch_new(IE_FLOAT, 2, dp);
		if (j.rp == NULL || j.wp == NULL)
			goto oom;
	}
	if (j.direct && in->input > 0)
	{
		int64_t		chunks = (in->seq * in->batch + RNN_XW_ROWS - 1) / RNN_XW_ROWS;

		ie_parallel_for(ctx->n_threads, a->dirs, pack_w_task, &j);
		ie_parallel_for(ctx->n_threads, a->dirs * chunks, xw_task, &j);
		j.xw_done = true;
	}
	ie_parallel_for(j.direct ? ctx->n_threads : 1, a->dirs, direction_task, &j);
	rc = 0;
	goto done;
oom:
	rc = ie_op_error(ctx, "out of memory for the recurrence's buffers");
done:
	free(j.h);
	free(j.c);
	free(j.bias);
	free(j.rbh);
	free(j.biasf);
	free(j.rbhf);
	free(j.pre);
	free(j.xw);
	free(j.hr);
	free(j.rh);
	free(j.rhr);
	free(j.rp);
	free(j.wp);
	return rc;
}

/*
 * RNN, GRU or LSTM (kind): attributes and inputs checked, then the outputs
 * the node names (Y, Y_h, and LSTM's Y_c; the executor drops those named
 * ""), Y zeroed so that steps past a row's length read 0; Y_h and Y_c
 * with hidden_size 0 or an empty batch are empty, with seq_length 0
 * zeros.
 */
static int
rnn_run(ie_node_ctx *ctx, rnn_kind kind)
{
	rnn_attrs	a;
	rnn_inputs	in;
	int64_t		dy[4],
				ds[3];
	ie_tensor  *y,
			   *yh = NULL,
			   *yc = NULL;

	if (rnn_read_attrs(ctx, kind, &a) != 0 || rnn_read_inputs(ctx, &a, &in) != 0)
		return -1;

	/*
	 * OpenBLAS's int extents (X W^T has seq_length * batch_size rows, K
	 * input_size), checked before Y [seq, D, batch, H] is made and zeroed:
	 * X [2^20, 2^12, 0] would otherwise zero a Y of 2^32 values only to be
	 * refused.  A node that computes nothing (seq_length, batch_size or
	 * hidden_size 0) is not refused.
	 */
	if (in.seq > 0 && in.batch > 0 && in.hidden > 0 &&
		(in.seq > INT_MAX || in.batch > INT_MAX || in.seq * in.batch > INT_MAX ||
		 in.input > INT_MAX))
		return ie_op_error(ctx, "X with seq_length %lld, batch_size %lld and input_size %lld passes the engine's limit of %d rows and columns",
						   (long long) in.seq, (long long) in.batch,
						   (long long) in.input, INT_MAX);
	if (a.layout == 0)
	{
		dy[0] = in.seq;
		dy[1] = a.dirs;
		dy[2] = in.batch;
		ds[0] = a.dirs;
		ds[1] = in.batch;
	}
	else
	{
		dy[0] = in.batch;
		dy[1] = in.seq;
		dy[2] = a.dirs;
		ds[0] = in.batch;
		ds[1] = a.dirs;
	}
	dy[3] = in.hidden;
	ds[2] = in.hidden;
	y = ie_tensor_new(in.x->dtype, 4, dy);
	ctx->outputs[0] = y;
	if (y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	if (ctx->n_outputs > 1)
	{
		yh = ie_tensor_new_uninit(in.x->dtype, 3, ds);
		ctx->outputs[1] = yh;
		if (yh == NULL)
			return ie_op_error(ctx, "out of memory for the output");
	}
	if (kind == RK_LSTM && ctx->n_outputs > 2)
	{
		yc = ie_tensor_new_uninit(in.x->dtype, 3, ds);
		ctx->outputs[2] = yc;
		if (yc == NULL)
			return ie_op_error(ctx, "out of memory for the output");
	}
	return rnn_compute(ctx, &a, &in, y, yh, yc);
}

/* RNN (Operators.md, RNN-7/14/22). */
static int
op_rnn(ie_node_ctx *ctx)
{
	return rnn_run(ctx, RK_RNN);
}

/* GRU (Operators.md, GRU-7/14/22). */
static int
op_gru(ie_node_ctx *ctx)
{
	return rnn_run(ctx, RK_GRU);
}

/* LSTM (Operators.md, LSTM-7/14/22). */
static int
op_lstm(ie_node_ctx *ctx)
{
	return rnn_run(ctx, RK_LSTM);
}

/* The load-time checks: rnn_read_attrs of each kind, no inputs. */
static int
rnn_check_attrs(ie_node_ctx *ctx)
{
	rnn_attrs	a;
	rnn_kind	kind = strcmp(ctx->op_type, "GRU") == 0 ? RK_GRU :
		strcmp(ctx->op_type, "LSTM") == 0 ? RK_LSTM : RK_RNN;

	return rnn_read_attrs(ctx, kind, &a);
}

const ie_op_def ie_ops_rnn[] = {
	{"RNN", op_rnn},
	{"GRU", op_gru},
	{"LSTM", op_lstm},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_rnn[] = {
	{"RNN", rnn_check_attrs},
	{"GRU", rnn_check_attrs},
	{"LSTM", rnn_check_attrs},
	{NULL, NULL}
};
