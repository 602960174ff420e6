/*
 * ops_attention.c
 *	  ONNX Attention (opsets 23, 24, 25): scaled dot-product attention,
 *	  Y = softmax(softcap(scale * Q K^T) + bias) V, float32 and float64.
 *
 * Semantics are ONNX's (Operators.md, Attention; its function body in
 * onnx/defs/nn, which ONNX's expanded node tests run): Q, K and V are 4-D
 * [batch, heads, sequence, head_size] or 3-D [batch, sequence, heads *
 * head_size] with the attributes q_num_heads and kv_num_heads; K and V may
 * have fewer heads than Q (grouped-query attention, Ainslie et al., arXiv
 * 2305.13245: query head h reads key/value head h / (q_heads / kv_heads));
 * the bias adds a float mask, or -inf where a boolean mask is false or past
 * its last column, where is_causal forbids (key j after query i + offset,
 * bottom-right aligned), outside the sliding window of opset 25, and past
 * nonpad_kv_seqlen[b] (opset 24); past_key/past_value are concatenated in
 * front of K/V and returned as present_key/present_value.  A query row
 * whose bias is -inf everywhere attends nothing: its Y row and its
 * probabilities are 0 (the errata of onnx 1.23).  qk_matmul_output is the
 * scaled product (mode 0), after softcap (1), after the bias (2) or the
 * probabilities (3).  Where ONNX's reference scales Q and K by sqrt(scale)
 * each, the engine scales their product once (the same value up to
 * rounding; scale must be positive, as ONNX Runtime requires).
 *
 * The two products run for each batch entry, query head and block of
 * ATT_ROWS query rows, on MatMul's direct kernel for float where the CPU
 * has it (gemm_direct.h: K^T and V packed per task, so a text row's values
 * do not depend on its padding or batch), else OpenBLAS (sgemm, dgemm),
 * reading Q, K, V and writing Y in place through strides; the
 * blocks are tasks on the engine's pool, each with its scores in thread
 * scratch, so memory grows with ATT_ROWS x total sequence length per
 * thread, not with the square of the sequence.  The softmax is the
 * Softmax operator's (ie_softmax_row).  float16 and bfloat16 are refused.
 *
 * Threading: no state outside the call.
 */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/gemm_direct.h"
#include "worker/engine/op.h"
#include "worker/engine/pool.h"
#include "worker/engine/vectorise.h"

/* Query rows of one task. */
#define ATT_ROWS 128

/* A Q, K, V or Y tensor read as [batch, heads, sequence, size]: strides in
 * elements (the size axis is contiguous in both layouts). */
typedef struct att_view
{
	void	   *p;
	int64_t		sb,
				sh,
				ss;
} att_view;

/* One Attention node's run: shapes, views and what the bias holds. */
typedef struct att_job
{
	ie_dtype	dt;
	int64_t		B,
				Hq,
				Hkv,
				Sq,
				T,				/* total key sequence: past + K's */
				D,				/* Q's and K's head size */
				Dv;				/* V's head size */
	att_view	q,
				k,
				v,
				y;
	void	   *qk;				/* qk_matmul_output [B, Hq, Sq, T], or NULL */
	int			mode;
	double		scale,
				softcap;
	int			sm_type;		/* the softmax's element type */
	const ie_tensor *mask;		/* attn_mask, or NULL */
	int64_t		mst[3],			/* its strides for batch, head, query row */
				mlen;			/* its last dimension */
	bool		causal;
	int64_t		left,
				right;			/* window sizes (opset 25), -1: unbounded */
	const int64_t *nonpad;		/* nonpad_kv_seqlen [B], or NULL */
	int64_t		past;			/* past_key's sequence length */
	int64_t		nblk;			/* blocks of ATT_ROWS query rows */
	bool		no_bias;		/* no mask, causal, window or padding: bias 0 */
	bool		direct;			/* float products on gemm_direct.h's kernel */
	atomic_int	failed;			/* a task found no scratch memory */
} att_job;

/*
 * The load-time check of Attention's attributes (also run by the
 * operator): qk_matmul_output_mode 0 to 3, softmax_precision float or
 * double, scale greater than 0 (as ONNX Runtime requires: ONNX's function
 * body takes its square root), window sizes -1 or more.
 */
static int
attention_check_attrs(ie_node_ctx *ctx)
{
	int64_t		mode = ie_attr_int(ctx, "qk_matmul_output_mode", 0);
	int64_t		prec = ie_attr_int(ctx, "softmax_precision", IE_FLOAT);

	if (mode < 0 || mode > 3)
		return ie_op_error(ctx, "qk_matmul_output_mode %lld is not supported (0 to 3)",
						   (long long) mode);
	if (prec != IE_FLOAT && prec != IE_DOUBLE)
		return ie_op_error(ctx, "softmax_precision %s (%lld) is not supported (float, double)",
						   ie_type_name((int) prec), (long long) prec);
	if (ie_attr_find(ctx, "scale") != NULL && !(ie_attr_float(ctx, "scale", 1.0f) > 0))
		return ie_op_error(ctx, "scale %g must be greater than 0 (ONNX scales Q and K by its square root)",
						   (double) ie_attr_float(ctx, "scale", 1.0f));
	if (ie_attr_int(ctx, "left_window_size", -1) < -1 ||
		ie_attr_int(ctx, "right_window_size", -1) < -1)
		return ie_op_error(ctx, "left_window_size and right_window_size must be -1 or more");
	return 0;
}

/*
 * The view of Q, K or V (x) for heads heads (the attribute, for 3-D x):
 * its sequence length into *seq, its head size into *size; -1 after an
 * error when a 3-D hidden size is not a multiple of heads.
 */
static int
att_view_of(ie_node_ctx *ctx, const ie_tensor *x, const char *what, int64_t heads,
			att_view *v, int64_t *seq, int64_t *size)
{
	v->p = x->data;
	if (x->ndim == 4)
	{
		*seq = x->dims[2];
		*size = x->dims[3];
		v->sb = x->dims[1] * x->dims[2] * x->dims[3];
		v->sh = x->dims[2] * x->dims[3];
		v->ss = x->dims[3];
		return 0;
	}
	if (heads <= 0 || x->dims[2] % heads != 0)
		return ie_op_error(ctx, "%s's hidden size %lld is not a multiple of its %lld heads",
						   what, (long long) x->dims[2], (long long) heads);
	*seq = x->dims[1];
	*size = x->dims[2] / heads;
	v->sb = x->dims[1] * x->dims[2];
	v->sh = *size;
	v->ss = x->dims[2];
	return 0;
}

/*
 * Sets up j's shapes and views from Q, K, V and the heads attributes;
 * -1 after an error naming the mismatch.
 */
static int
att_shapes(ie_node_ctx *ctx, const ie_tensor *Q, const ie_tensor *K,
		   const ie_tensor *V, att_job *j)
{
	int64_t		qh = ie_attr_int(ctx, "q_num_heads", 0),
				kvh = ie_attr_int(ctx, "kv_num_heads", 0),
				ks,
				kd,
				vs;

	if (Q->ndim != K->ndim || Q->ndim != V->ndim || (Q->ndim != 3 && Q->ndim != 4))
		return ie_op_error(ctx, "Q, K and V must all be 3-D or all 4-D (ranks %d, %d, %d)",
						   Q->ndim, K->ndim, V->ndim);
	if (Q->ndim == 4)
	{
		if (ctx->opset >= 25 && (ie_attr_find(ctx, "q_num_heads") != NULL ||
								 ie_attr_find(ctx, "kv_num_heads") != NULL))
			return ie_op_error(ctx, "q_num_heads and kv_num_heads must not be set for 4-D inputs");
		if ((qh != 0 && qh != Q->dims[1]) || (kvh != 0 && kvh != K->dims[1]))
			return ie_op_error(ctx, "q_num_heads %lld and kv_num_heads %lld differ from Q's %lld and K's %lld heads",
							   (long long) qh, (long long) kvh,
							   (long long) Q->dims[1], (long long) K->dims[1]);
		qh = Q->dims[1];
		kvh = K->dims[1];
		if (V->dims[1] != kvh)
			return ie_op_error(ctx, "V has %lld heads, K %lld", (long long) V->dims[1],
							   (long long) kvh);
	}
	else if (qh <= 0 || kvh <= 0)
		return ie_op_error(ctx, "3-D inputs need the attributes q_num_heads and kv_num_heads");
	if (kvh == 0 && qh > 0)
		return ie_op_error(ctx, "K and V have no heads for Q's %lld", (long long) qh);
	if (kvh > 0 && qh % kvh != 0)
		return ie_op_error(ctx, "q_num_heads %lld is not a multiple of kv_num_heads %lld",
						   (long long) qh, (long long) kvh);
	if (K->dims[0] != Q->dims[0] || V->dims[0] != Q->dims[0])
		return ie_op_error(ctx, "Q, K and V differ in batch size (%lld, %lld, %lld)",
						   (long long) Q->dims[0], (long long) K->dims[0],
						   (long long) V->dims[0]);
	if (att_view_of(ctx, Q, "Q", qh, &j->q, &j->Sq, &j->D) != 0 ||
		att_view_of(ctx, K, "K", kvh, &j->k, &ks, &kd) != 0 ||
		att_view_of(ctx, V, "V", kvh, &j->v, &vs, &j->Dv) != 0)
		return -1;
	if (kd != j->D)
		return ie_op_error(ctx, "K's head size %lld differs from Q's %lld", (long long) kd,
						   (long long) j->D);
	if (ks != vs)
		return ie_op_error(ctx, "K and V differ in sequence length (%lld, %lld)",
						   (long long) ks, (long long) vs);
	j->B = Q->dims[0];
	j->Hq = qh;
	j->Hkv = kvh;
	j->T = ks;
	return 0;
}

/*
 * Checks past (past_key or past_value, [B, Hkv, P, size]) against the
 * node's shapes; its P into *plen.
 */
static int
att_past_shape(ie_node_ctx *ctx, const ie_tensor *past, const char *what,
			   const att_job *j, int64_t size, int64_t *plen)
{
	if (past->ndim != 4 || past->dims[0] != j->B || past->dims[1] != j->Hkv ||
		past->dims[3] != size)
	{
		char		s[128];

		return ie_op_error(ctx, "%s has shape %s, not [%lld, %lld, past_sequence_length, %lld]",
						   what, ie_shape_str(s, sizeof(s), past->ndim, past->dims),
						   (long long) j->B, (long long) j->Hkv, (long long) size);
	}
	*plen = past->dims[2];
	return 0;
}

/*
 * Writes the present cache [B, H, P + S, size] into out (element size es):
 * past's P rows (NULL: none), then the S rows of view kv, per head.
 */
static void
att_present(const ie_tensor *past, const att_view *kv, int64_t B, int64_t H,
			int64_t S, int64_t size, size_t es, char *out)
{
	int64_t		P = past != NULL ? past->dims[2] : 0;
	size_t		row = (size_t) size * es;

	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++)
		{
			char	   *o = out + (size_t) ((b * H + h) * (P + S)) * row;
			const char *src = (const char *) kv->p + (size_t) (b * kv->sb + h * kv->sh) * es;

			if (P > 0)
				memcpy(o, (const char *) past->data + (size_t) ((b * H + h) * P) * row,
					   (size_t) P * row);
			for (int64_t s = 0; s < S; s++)
				memcpy(o + (size_t) (P + s) * row, src + (size_t) (s * kv->ss) * es, row);
		}
}

/*
 * Checks attn_mask against [B, Hq, Sq, T] and sets j's mask strides: its
 * dims but the last align right with (B, Hq, Sq), each equal or 1; its
 * last may be shorter than T (the missing columns are masked).
 */
static int
att_mask_setup(ie_node_ctx *ctx, const ie_tensor *M, att_job *j)
{
	int64_t		full[3] = {j->B, j->Hq, j->Sq};
	int64_t		st = 1;
	int			lead = M->ndim - 1;
	char		s[128];

	if (M->dtype != IE_BOOL && M->dtype != j->dt)
		return ie_op_error(ctx, "attn_mask of type %s is not supported (bool, or Q's type %s)",
						   ie_dtype_name(M->dtype), ie_dtype_name(j->dt));
	if (M->ndim < 1 || M->ndim > 4)
		goto bad;
	j->mlen = M->dims[M->ndim - 1];
	if (j->mlen > j->T)
		goto bad;
	j->mst[0] = j->mst[1] = j->mst[2] = 0;
	st = j->mlen;
	for (int k = lead - 1; k >= 0; k--)
	{
		int			ax = 3 - lead + k;

		if (M->dims[k] != 1 && M->dims[k] != full[ax])
			goto bad;
		j->mst[ax] = M->dims[k] == 1 ? 0 : st;
		st *= M->dims[k];
	}
	j->mask = M;
	return 0;
bad:
	return ie_op_error(ctx, "attn_mask of shape %s does not broadcast to [%lld, %lld, %lld, %lld] (batch, q_num_heads, q_sequence_length, total_sequence_length; the last may be shorter)",
					   ie_shape_str(s, sizeof(s), M->ndim, M->dims), (long long) j->B,
					   (long long) j->Hq, (long long) j->Sq, (long long) j->T);
}

/*
 * The bias of query row i of batch entry b, head h, over the T keys, into
 * bias[T]; true when every entry is -inf (the row attends nothing).  The
 * keys that causal masking, the window, the padding and the mask's length
 * allow form one interval [lo, hi); the mask's values apply inside it.
 */
IE_VECTORISE static bool
att_bias_row(const att_job *j, int64_t b, int64_t h, int64_t i, double *bias)
{
	int64_t		pos = i + (j->nonpad != NULL ? j->nonpad[b] - j->Sq : j->past);
	int64_t		lo = 0,
				hi = j->T;

	if (j->nonpad != NULL && j->nonpad[b] < hi)
		hi = j->nonpad[b];
	if (j->causal && pos + 1 < hi)
		hi = pos + 1;
	if (j->right >= 0 && pos + j->right + 1 < hi)
		hi = pos + j->right + 1;
	if (j->mask != NULL && j->mlen < hi)
		hi = j->mlen;
	if (j->left >= 0 && pos - j->left > lo)
		lo = pos - j->left;
	if (hi < lo)
		hi = lo;
	for (int64_t t = 0; t < lo && t < j->T; t++)
		bias[t] = -INFINITY;
	for (int64_t t = hi; t < j->T; t++)
		bias[t] = -INFINITY;
	if (lo >= hi)
		return true;
	if (j->mask == NULL)
	{
		for (int64_t t = lo; t < hi; t++)
			bias[t] = 0;
		return false;
	}
	{
		const char *m = (const char *) j->mask->data +
			(b * j->mst[0] + h * j->mst[1] + i * j->mst[2]) * (int64_t) ie_dtype_size(j->mask->dtype);

		if (j->mask->dtype == IE_BOOL)
			for (int64_t t = lo; t < hi; t++)
				bias[t] = ((const uint8_t *) m)[t] ? 0 : -INFINITY;
		else if (j->mask->dtype == IE_FLOAT)
			for (int64_t t = lo; t < hi; t++)
				bias[t] = ((const float *) m)[t];
		else
			for (int64_t t = lo; t < hi; t++)
				bias[t] = ((const double *) m)[t];
	}
	for (int64_t t = lo; t < hi; t++)
		if (bias[t] != -INFINITY)	/* a NaN too: the row is NaN, not zeros */
			return false;
	return true;
}

/*
 * Softmax of one row of n scores x into y (j->dt), in j->sm_type: the
 * operator's own type, or the other through t1, t2 (n doubles each).
 */
static void
att_softmax(const att_job *j, const void *x, void *y, int64_t n, double *t1, double *t2)
{
	if (j->dt == IE_FLOAT && j->sm_type == IE_FLOAT)
		ie_softmax_row(x, y, n);
	else if (j->dt == IE_DOUBLE && j->sm_type == IE_DOUBLE)
		ie_softmax_row_f64(x, y, n);
	else if (j->dt == IE_FLOAT)
	{
		for (int64_t t = 0; t < n; t++)
			t1[t] = ((const float *) x)[t];
		ie_softmax_row_f64(t1, t2, n);
		for (int64_t t = 0; t < n; t++)
			((float *) y)[t] = (float) t2[t];
	}
	else
	{
		float	   *f1 = (float *) t1,
				   *f2 = (float *) t2;

		for (int64_t t = 0; t < n; t++)
			f1[t] = (float) ((const double *) x)[t];
		ie_softmax_row(f1, f2, n);
		for (int64_t t = 0; t < n; t++)
			((double *) y)[t] = f2[t];
	}
}

/* Floats of a task's packed operand for the direct kernel (K^T or V). */
static int64_t
att_packed_floats(const att_job *j)
{
	int64_t		kt = ie_gd_packed_b_size(j->D, j->T),
				v = ie_gd_packed_b_size(j->T, j->Dv);

	return j->direct ? (kt > v ? kt : v) : 0;
}

/* Bytes of scores and probabilities and two double rows, 64-aligned. */
static int64_t
att_rows_bytes(const att_job *j)
{
	return (2 * ATT_ROWS * j->T * (int64_t) ie_dtype_size(j->dt) + 2 * j->T * 8 + 63) / 64 * 64;
}

/* Bytes of one task's scratch: the rows, then the packed operand. */
static int64_t
att_scratch_bytes(const att_job *j)
{
	return att_rows_bytes(j) + att_packed_floats(j) * 4 + 64;
}

/*
 * The two products of a float task, on the direct kernel (gemm_direct.h)
 * when j->direct: s[r, n] = scale q[r, D] k[n, D]^T with K^T packed into
 * bp, and y[r, Dv] = p[r, n] v[n, Dv] with V packed.  Each score and each
 * output is one multiply-add chain in order, so a row's values depend
 * neither on the batch nor on padded keys (their probabilities are exact
 * zeros), as for MatMul ("Batch invariance of text rows",
 * docs/performance.md).  Else OpenBLAS sgemm.
 */
static void
att_qk_f32(const att_job *j, int64_t r, const float *q, const float *k, float *s, float *bp)
{
	int64_t		n = j->T;
	float		scale = (float) j->scale;

	if (!j->direct)
	{
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) r, (int) n, (int) j->D,
					scale, q, (int) j->q.ss, k, (int) j->k.ss, 0, s, (int) n);
		return;
	}
	ie_gd_pack_bt(k, j->k.ss, j->D, n, bp);
	ie_gd_gemm_rows_pb(q, j->q.ss, r, j->D, bp, n, s, n);
	for (int64_t i = 0; i < r * n; i++)
		s[i] *= scale;
}

static void
att_pv_f32(const att_job *j, int64_t r, const float *p, const float *v, float *y, float *bp)
{
	int64_t		n = j->T;

	if (!j->direct)
	{
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) r, (int) j->Dv, (int) n,
					1.0f, p, (int) n, v, (int) j->v.ss, 0, y, (int) j->y.ss);
		return;
	}
	ie_gd_pack_b(v, j->v.ss, n, j->Dv, bp);
	ie_gd_gemm_rows_pb(p, n, r, n, bp, j->Dv, y, j->y.ss);
}

/* The double products: OpenBLAS dgemm (bp unused). */
static void
att_qk_f64(const att_job *j, int64_t r, const double *q, const double *k, double *s,
		   float *bp)
{
	(void) bp;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) r, (int) j->T, (int) j->D,
				j->scale, q, (int) j->q.ss, k, (int) j->k.ss, 0, s, (int) j->T);
}

static void
att_pv_f64(const att_job *j, int64_t r, const double *p, const double *v, double *y,
		   float *bp)
{
	(void) bp;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) r, (int) j->Dv, (int) j->T,
				1.0, p, (int) j->T, v, (int) j->v.ss, 0, y, (int) j->y.ss);
}

/*
 * Task t of a float (ELT float, QK and PV the float products) or double job: query
 * rows [i0, i0 + r) of batch entry b, head h.  S = scale Q K^T; per row
 * softcap, bias, softmax (or zeros for a row that attends nothing), the
 * qk_matmul_output copy of the mode's stage; then Y = P V.
 */
#define ATT_TASK(NAME, ELT, QK, PV) \
IE_VECTORISE static void \
NAME(void *arg, int64_t task, int worker) \
{ \
	att_job    *j = arg; \
	int64_t		rb = task % j->nblk, \
				bh = task / j->nblk; \
	int64_t		b = bh / j->Hq, \
				h = bh % j->Hq, \
				kvh = h / (j->Hq / j->Hkv), \
				i0 = rb * ATT_ROWS, \
				r = j->Sq - i0 < ATT_ROWS ? j->Sq - i0 : ATT_ROWS, \
				n = j->T; \
	ELT		   *s = ie_thread_scratch((size_t) att_scratch_bytes(j)), \
			   *p = s + ATT_ROWS * n; \
	double	   *t1 = (double *) (p + ATT_ROWS * n), \
			   *t2 = t1 + n; \
	float	   *bp = (float *) ((char *) s + att_rows_bytes(j)); \
	const ELT  *q = (const ELT *) j->q.p + b * j->q.sb + h * j->q.sh + i0 * j->q.ss, \
			   *k = (const ELT *) j->k.p + b * j->k.sb + kvh * j->k.sh, \
			   *v = (const ELT *) j->v.p + b * j->v.sb + kvh * j->v.sh; \
	ELT		   *y = (ELT *) j->y.p + b * j->y.sb + h * j->y.sh + i0 * j->y.ss; \
	(void) worker; \
	if (s == NULL) \
	{ \
		atomic_store(&j->failed, 1); \
		return; \
	} \
	if (n > 0 && j->D > 0) \
		QK(j, r, q, k, s, bp); \
	else \
		memset(s, 0, (size_t) (r * n) * sizeof(ELT)); \
	for (int64_t ii = 0; ii < r; ii++) \
	{ \
		ELT		   *sr = s + ii * n, \
				   *pr = p + ii * n, \
				   *qk = j->qk != NULL ? (ELT *) j->qk + (bh * j->Sq + i0 + ii) * n : NULL; \
		bool		dead = j->no_bias ? false : att_bias_row(j, b, h, i0 + ii, t1); \
		if (qk != NULL && j->mode == 0) \
			memcpy(qk, sr, (size_t) n * sizeof(ELT)); \
		if (j->softcap > 0) \
			for (int64_t t = 0; t < n; t++) \
				sr[t] = (ELT) (j->softcap * tanh(sr[t] / j->softcap)); \
		if (qk != NULL && j->mode == 1) \
			memcpy(qk, sr, (size_t) n * sizeof(ELT)); \
		if (!j->no_bias) \
			for (int64_t t = 0; t < n; t++) \
				sr[t] = (ELT) (sr[t] + t1[t]); \
		if (qk != NULL && j->mode == 2) \
			memcpy(qk, sr, (size_t) n * sizeof(ELT)); \
		if (dead) \
			memset(pr, 0, (size_t) n * sizeof(ELT)); \
		else \
			att_softmax(j, sr, pr, n, t1, t2); \
		if (qk != NULL && j->mode == 3) \
			memcpy(qk, pr, (size_t) n * sizeof(ELT)); \
	} \
	if (j->Dv == 0) \
		return; \
	if (n > 0) \
		PV(j, r, p, v, y, bp); \
	else \
		for (int64_t ii = 0; ii < r; ii++) \
			memset(y + ii * j->y.ss, 0, (size_t) j->Dv * sizeof(ELT)); \
}

ATT_TASK(att_task_f32, float, att_qk_f32, att_pv_f32)
ATT_TASK(att_task_f64, double, att_qk_f64, att_pv_f64)

/*
 * Allocates output o with the given shape, or fails the node.  Not zeroed:
 * the tasks write every element of Y and qk_matmul_output, att_present
 * every element of a cache.
 */
static void *
att_output(ie_node_ctx *ctx, int o, ie_dtype dt, int ndim, const int64_t *dims)
{
	if (o >= ctx->n_outputs)
		return NULL;
	ctx->outputs[o] = ie_tensor_new_uninit(dt, ndim, dims);
	if (ctx->outputs[o] == NULL)
	{
		ie_op_error(ctx, "out of memory for output %d", o);
		return NULL;
	}
	return ctx->outputs[o]->data;
}

/*
 * The key (which 0) or value (1) cache: present output 1 + which when the
 * node has it, else (with a past) a scratch copy in *tmp; the view of K or
 * V switches to it when there is a past.  -1 after an error.
 */
static int
att_cache(ie_node_ctx *ctx, att_job *j, int which, const ie_tensor *past, void **tmp)
{
	att_view   *kv = which == 0 ? &j->k : &j->v;
	int64_t		size = which == 0 ? j->D : j->Dv;
	int64_t		S = j->T - j->past;
	int64_t		dims[4] = {j->B, j->Hkv, j->T, size};
	void	   *out = NULL;

	if (ctx->n_outputs > 1 + which)
	{
		out = att_output(ctx, 1 + which, j->dt, 4, dims);
		if (out == NULL)
			return -1;
	}
	else if (past != NULL)
	{
		out = *tmp = ie_scratch_new(j->dt, 4, dims);
		if (out == NULL)
			return ie_op_error(ctx, "out of memory for the %s cache", which == 0 ? "key" : "value");
	}
	if (out == NULL)
		return 0;
	att_present(past, kv, j->B, j->Hkv, S, size, ie_dtype_size(j->dt), out);
	if (past != NULL)
	{
		kv->p = out;
		kv->sb = j->Hkv * j->T * size;
		kv->sh = j->T * size;
		kv->ss = size;
	}
	return 0;
}

/* Sets j's bias sources from the attributes and inputs 3 and 6; -1 on error. */
static int
att_bias_setup(ie_node_ctx *ctx, att_job *j)
{
	const ie_tensor *M = ctx->n_inputs > 3 ? ctx->inputs[3] : NULL;
	const ie_tensor *N = ctx->n_inputs > 6 ? ctx->inputs[6] : NULL;

	j->causal = ie_attr_int(ctx, "is_causal", 0) != 0;
	j->left = ie_attr_int(ctx, "left_window_size", -1);
	j->right = ie_attr_int(ctx, "right_window_size", -1);
	if (M != NULL && att_mask_setup(ctx, M, j) != 0)
		return -1;
	if (N != NULL)
	{
		if (j->past > 0 || (ctx->n_inputs > 4 && ctx->inputs[4] != NULL))
			return ie_op_error(ctx, "nonpad_kv_seqlen cannot be used with past_key and past_value");
		if (N->ndim != 1 || N->dims[0] != j->B)
			return ie_op_error(ctx, "nonpad_kv_seqlen must have shape [%lld] (the batch)",
							   (long long) j->B);
		j->nonpad = N->data;
	}
	return 0;
}

/*
 * Attention (opsets 23, 24, 25): inputs Q, K, V, optional attn_mask,
 * past_key, past_value (together), nonpad_kv_seqlen (opset 24); outputs Y
 * (Q's layout with V's head size), optional present_key, present_value
 * ([B, kv_heads, past + kv_sequence, size]) and qk_matmul_output ([B,
 * q_heads, q_sequence, total_sequence]).  Attributes is_causal, scale
 * (default 1 / sqrt(head_size)), softcap, q_num_heads, kv_num_heads,
 * qk_matmul_output_mode, softmax_precision (float or double),
 * left_window_size and right_window_size (opset 25).  Q, K and V float, or
 * all double; errors name the inconsistent shape.
 */
static int
op_attention(ie_node_ctx *ctx)
{
	const ie_tensor *Q = ctx->inputs[0],
			   *K = ctx->inputs[1],
			   *V = ctx->inputs[2];
	const ie_tensor *pk = ctx->n_inputs > 4 ? ctx->inputs[4] : NULL,
			   *pv = ctx->n_inputs > 5 ? ctx->inputs[5] : NULL;
	att_job		j = {0};
	void	   *tmp[2] = {NULL, NULL};
	int64_t		ydims[4],
				qkdims[4],
				pvlen = 0,
				work,
				scratch;
	int			n_threads = ctx->n_threads,
				rc = -1;

	if (Q == NULL || K == NULL || V == NULL)
		return ie_op_error(ctx, "needs inputs Q, K and V");
	if (attention_check_attrs(ctx) != 0)
		return -1;
	j.dt = Q->dtype;
	if (j.dt != IE_FLOAT && j.dt != IE_DOUBLE)
		return ie_op_error(ctx, "unsupported input type %s (only float, double)",
						   ie_dtype_name(j.dt));
	if (K->dtype != j.dt || V->dtype != j.dt)
		return ie_op_error(ctx, "Q, K and V of different types (%s, %s, %s) are not supported",
						   ie_dtype_name(j.dt), ie_dtype_name(K->dtype), ie_dtype_name(V->dtype));
	if (att_shapes(ctx, Q, K, V, &j) != 0)
		return -1;
	if ((pk == NULL) != (pv == NULL))
		return ie_op_error(ctx, "past_key and past_value must be given together");
	if (pk != NULL &&
		(att_past_shape(ctx, pk, "past_key", &j, j.D, &j.past) != 0 ||
		 att_past_shape(ctx, pv, "past_value", &j, j.Dv, &pvlen) != 0))
		return -1;
	if (pk != NULL && pvlen != j.past)
		return ie_op_error(ctx, "past_key and past_value differ in sequence length (%lld, %lld)",
						   (long long) j.past, (long long) pvlen);
	j.T += j.past;
	/* the products per head: [rows, D] x [D, T] and [rows, T] x [T, Dv] */
	if (ie_op_gemm_fits(ctx, j.Sq, j.D > j.Dv ? j.D : j.Dv, j.T) != 0 ||
		att_bias_setup(ctx, &j) != 0)
		return -1;
	j.mode = (int) ie_attr_int(ctx, "qk_matmul_output_mode", 0);
	j.sm_type = (int) ie_attr_int(ctx, "softmax_precision", j.dt);
	j.softcap = ie_attr_float(ctx, "softcap", 0.0f);
	j.scale = ie_attr_find(ctx, "scale") != NULL ? ie_attr_float(ctx, "scale", 1.0f) :
		1.0 / sqrt((double) (j.D > 0 ? j.D : 1));

	/* outputs: Y in Q's layout, the caches, the scores */
	ydims[0] = j.B;
	if (Q->ndim == 4)
	{
		ydims[1] = j.Hq;
		ydims[2] = j.Sq;
		ydims[3] = j.Dv;
	}
	else
	{
		ydims[1] = j.Sq;
		ydims[2] = j.Hq * j.Dv;
	}
	if ((j.y.p = att_output(ctx, 0, j.dt, Q->ndim, ydims)) == NULL)
		return -1;
	j.y.sb = j.Hq * j.Sq * j.Dv;
	j.y.sh = Q->ndim == 4 ? j.Sq * j.Dv : j.Dv;
	j.y.ss = Q->ndim == 4 ? j.Dv : j.Hq * j.Dv;
	if (att_cache(ctx, &j, 0, pk, &tmp[0]) != 0 || att_cache(ctx, &j, 1, pv, &tmp[1]) != 0)
		goto done;
	qkdims[0] = j.B;
	qkdims[1] = j.Hq;
	qkdims[2] = j.Sq;
	qkdims[3] = j.T;
	if (ctx->n_outputs > 3 && (j.qk = att_output(ctx, 3, j.dt, 4, qkdims)) == NULL)
		goto done;
	if (j.B * j.Hq * j.Sq == 0)
	{
		rc = 0;
		goto done;
	}

	j.no_bias = j.mask == NULL && !j.causal && j.left < 0 && j.right < 0 && j.nonpad == NULL;
	j.direct = j.dt == IE_FLOAT && ie_gd_enabled();

	/* the tasks: every (batch, head, block of query rows) */
	j.nblk = (j.Sq + ATT_ROWS - 1) / ATT_ROWS;
	scratch = att_scratch_bytes(&j);
	if (!ie_scratch_fits(IE_UINT8, 1, &scratch))
	{
		ie_op_error(ctx, "out of memory for the scores (%lld bytes per thread)",
					(long long) scratch);
		goto done;
	}
	work = j.B * j.Hq * j.Sq * j.T * (j.D + j.Dv);
	if (work < (int64_t) 262144 * n_threads)
		n_threads = (int) (work / 262144 > 1 ? work / 262144 : 1);
	ie_parallel_for(n_threads, j.B * j.Hq * j.nblk,
					j.dt == IE_FLOAT ? att_task_f32 : att_task_f64, &j);
	if (atomic_load(&j.failed))
	{
		ie_op_error(ctx, "out of memory for the scores");
		goto done;
	}
	rc = 0;
done:
	free(tmp[0]);
	free(tmp[1]);
	return rc;
}

const ie_op_def ie_ops_attention[] = {
	{"Attention", op_attention},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_attention[] = {
	{"Attention", attention_check_attrs},
	{NULL, NULL}
};
