/*
 * ops_einsum.c
 *	  ONNX Einsum (opset 12): sums of products of the inputs' elements over
 *	  the index letters of an equation such as "bij,bjk->bik".
 *
 * The equation comes from the model file and is parsed as hostile text, at
 * load (the check einsum_check_attrs) and again at each run (it is short):
 * a malformed equation, one whose operand count differs from the node's
 * inputs, an output letter in no input or given twice, or a term of more
 * letters than the engine's rank limit fails the load.  At run every axis
 * of every input gets a label: its letter (0..25 for 'A'..'Z', 26..51 for
 * 'a'..'z', so label order is ASCII order), or, for the axes "..." stands
 * for, one of IE_MAX_DIMS broadcast labels, right-aligned across inputs.
 *
 * One input goes through the strided loop (es_loop): transposes,
 * diagonals (a letter repeated in one term walks the diagonal) and sums.
 * Several are contracted pairwise from the left, each intermediate keeping
 * the labels that the output or a later input uses.  Each side of a pair
 * is first reduced alone to its distinct labels (diagonals, letters summed
 * nowhere else); then a float or double pair is a batch of matrix products
 * on OpenBLAS, each side, unless it already has that layout, copied into
 * [batch, free, summed] order, and an integer pair goes through the
 * strided loop, as do pairs with an empty axis.  An axis of size 1 that
 * broadcasts against a longer one is left out of the views (never copied
 * out).  The products sum in the inputs' type (OpenBLAS), the strided
 * loop sums float in double (as ReduceSum, ops_reduce.c); integer sums
 * wrap around (two's complement).
 *
 * Threading: no state outside the call; the products of a batch run as
 * tasks on the engine's pool (pool.h), OpenBLAS serial in each.
 */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/pool.h"

/* Letters: 'A'..'Z' then 'a'..'z'; then the axes "..." stands for. */
#define ES_LETTERS 52
#define ES_LABELS (ES_LETTERS + IE_MAX_DIMS)
/* Most operands an equation may have (the engine's limit). */
#define ES_MAX_OPERANDS 32
/* Bytes of the equation a message shows. */
#define ES_SHOWN 72
/* Multiply-adds below which a batch of products runs on one thread. */
#define ES_TASK_WORK 262144

/* One term of the equation: its letters, and where "..." stands. */
typedef struct es_term
{
	int			n;				/* letters */
	int8_t		letter[IE_MAX_DIMS];	/* their labels, in order */
	int			ell;			/* letters before "...", or -1 without one */
} es_term;

/* A parsed equation: one term per input and the output's term. */
typedef struct es_equation
{
	int			n_in;
	es_term		in[ES_MAX_OPERANDS];
	es_term		out;			/* explicit, or the implicit output */
	bool		any_ell;		/* some input has "..." */
} es_equation;

/*
 * A strided view of an operand: axis i has label lab[i] (a label may be
 * on several axes: a diagonal) and steps stride[i] elements (0 where the
 * axis broadcasts a size 1 to its label's size).  Axis sizes are their
 * labels' sizes.
 */
typedef struct es_view
{
	const void *data;
	int			n;
	int8_t		lab[ES_LABELS];
	int64_t		stride[ES_LABELS];
} es_view;

/* The label of an ASCII letter. */
static int
es_label(unsigned char c)
{
	return c >= 'a' ? 26 + (c - 'a') : c - 'A';
}

/* The character a label prints as ('.' for the axes of "..."). */
static char
es_char(int label)
{
	return label < 26 ? 'A' + label : label < ES_LETTERS ? 'a' + (label - 26) : '.';
}

/*
 * The equation as messages show it (into buf, ES_SHOWN bytes): its first
 * bytes, a byte outside printable ASCII (or a quote or backslash) as '?',
 * "..." appended when cut.
 */
static void
es_shown(const char *s, size_t len, char *buf)
{
	size_t		n = 0;

	for (size_t i = 0; i < len && n < ES_SHOWN - 4; i++)
	{
		unsigned char c = (unsigned char) s[i];

		buf[n++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char) c : '?';
	}
	if (n < len)
	{
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
}

/* The index of the first byte of s[from, len) that is not a space, or len. */
static size_t
es_skip_spaces(const char *s, size_t len, size_t from)
{
	while (from < len && s[from] == ' ')
		from++;
	return from;
}

/*
 * Parses attribute equation (ONNX Operators.md, Einsum: terms of letters
 * and at most one "..." separated by ',', optionally "->" and the output's
 * term; spaces anywhere, inside "->" and "..." too, as ONNX Runtime and
 * ONNX's reference read them) into *eq, against the node's input count.
 * Without "->" the output is "..." (when an input has it) then the letters
 * that occur once, in ASCII order, as numpy's einsum (ONNX's reference)
 * does.  Returns 0, or -1 after ie_op_error: "equation "..." <problem>"
 * for an equation that is not valid (checked first), then "... engine's
 * limit" for a term of more than IE_MAX_DIMS letters or more than
 * ES_MAX_OPERANDS operands.
 */

static int
es_parse(ie_node_ctx *ctx, es_equation *eq)
{
	const ie_attr *a = ie_attr_find(ctx, "equation");
	char		shown[ES_SHOWN];
	int			count[ES_LETTERS] = {0};
	bool		seen_out[ES_LETTERS] = {false};
	bool		explicit_out = false;
	bool		too_long = false;	/* a term of more than IE_MAX_DIMS letters */
	es_term		spare;			/* the terms past ES_MAX_OPERANDS */
	const char *s;
	size_t		len;
	int			n_in = 1;
	es_term    *t;

	if (a == NULL || a->type != IE_ATTR_STRING || a->s == NULL)
		return ie_op_error(ctx, "needs the string attribute equation");
	s = a->s;
	len = a->s_len;
	es_shown(s, len, shown);
	if (memchr(s, '\0', len) != NULL)
		return ie_op_error(ctx, "equation \"%s\" holds a NUL byte", shown);
	memset(eq, 0, sizeof(*eq));
	t = &eq->in[0];
	t->ell = -1;
	eq->out.ell = -1;

	/*
	 * Whether it is valid ONNX is decided first, the engine's limits (terms
	 * of IE_MAX_DIMS letters, ES_MAX_OPERANDS operands) after: past a limit
	 * the scan goes on without keeping what it reads.
	 */
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == ' ')
			continue;
		if (c == ',')
		{
			if (explicit_out)
				return ie_op_error(ctx, "equation \"%s\" has a ',' after \"->\"", shown);
			t = n_in < ES_MAX_OPERANDS ? &eq->in[n_in] : &spare;
			memset(t, 0, sizeof(*t));
			t->ell = -1;
			n_in++;
		}
		else if (c == '-')
		{
			size_t		j = es_skip_spaces(s, len, i + 1);

			if (j >= len || s[j] != '>')
				return ie_op_error(ctx, "equation \"%s\" has a '-' not followed by '>'", shown);
			if (explicit_out)
				return ie_op_error(ctx, "equation \"%s\" has \"->\" twice", shown);
			explicit_out = true;
			t = &eq->out;
			i = j;
		}
		else if (c == '.')
		{
			size_t		j1 = es_skip_spaces(s, len, i + 1),
						j2 = j1 < len ? es_skip_spaces(s, len, j1 + 1) : len;

			if (j2 >= len || s[j1] != '.' || s[j2] != '.')
				return ie_op_error(ctx, "equation \"%s\" has a '.' outside \"...\"", shown);
			if (t->ell >= 0)
				return ie_op_error(ctx, "equation \"%s\" has \"...\" twice in one term", shown);
			t->ell = t->n;
			eq->any_ell |= !explicit_out;
			i = j2;
		}
		else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		{
			int			l = es_label(c);

			/* the inputs are all read when the output's letters come */
			if (explicit_out && count[l] == 0)
				return ie_op_error(ctx, "equation \"%s\" has output letter '%c', which is in no input",
								   shown, c);
			if (explicit_out && seen_out[l])
				return ie_op_error(ctx, "equation \"%s\" has output letter '%c' twice",
								   shown, c);
			if (explicit_out)
				seen_out[l] = true;
			else
				count[l]++;
			if (t->n == IE_MAX_DIMS)
				too_long = true;
			else
				t->letter[t->n++] = (int8_t) l;
		}
		else if (c >= 0x20 && c < 0x7f)
			return ie_op_error(ctx, "equation \"%s\" has '%c' at offset %zu, which is not a letter, ',', \"...\", \"->\" or a space",
							   shown, c, i);
		else
			return ie_op_error(ctx, "equation \"%s\" has byte 0x%02x at offset %zu, which is not a letter, ',', \"...\", \"->\" or a space",
							   shown, c, i);
	}
	if (n_in != ctx->n_inputs)
		return ie_op_error(ctx, "equation \"%s\" has %d operand%s, the node has %d input%s",
						   shown, n_in, n_in == 1 ? "" : "s", ctx->n_inputs,
						   ctx->n_inputs == 1 ? "" : "s");
	if (explicit_out && eq->out.ell >= 0 && !eq->any_ell)
		return ie_op_error(ctx, "equation \"%s\" has \"...\" in the output and in no input",
						   shown);
	/* valid: now the engine's limits */
	if (n_in > ES_MAX_OPERANDS)
		return ie_op_error(ctx, "equation \"%s\" has more than %d operands, the engine's limit",
						   shown, ES_MAX_OPERANDS);
	if (too_long)
		return ie_op_error(ctx, "equation \"%s\" has a term of more than %d letters, the engine's limit of dims",
						   shown, IE_MAX_DIMS);
	eq->n_in = n_in;
	if (explicit_out)
		return 0;
	eq->out.ell = eq->any_ell ? 0 : -1;
	for (int l = 0; l < ES_LETTERS; l++)
		if (count[l] == 1)
		{
			if (eq->out.n == IE_MAX_DIMS)
				return ie_op_error(ctx, "equation \"%s\" has an output of more than %d letters, the engine's limit of dims",
								   shown, IE_MAX_DIMS);
			eq->out.letter[eq->out.n++] = (int8_t) l;
		}
	return 0;
}

/* Einsum's equation (es_parse): run by the loader on every node. */
static int
einsum_check_attrs(ie_node_ctx *ctx)
{
	es_equation eq;

	return es_parse(ctx, &eq);
}

/* *acc * v, false when it overflows int64 (v >= 0, *acc >= 0). */
static bool
es_mul(int64_t *acc, int64_t v)
{
	if (v != 0 && *acc > INT64_MAX / v)
		return false;
	*acc *= v;
	return true;
}

/* The labels of term t for an input of rank, with n_ell "..." labels in all. */
static void
es_term_labels(const es_term *t, int rank, int n_ell, int8_t *lab)
{
	int			e = t->ell < 0 ? 0 : rank - t->n;

	for (int j = 0; j < rank; j++)
	{
		if (t->ell < 0 || j < t->ell)
			lab[j] = t->letter[j];
		else if (j < t->ell + e)
			lab[j] = (int8_t) (ES_LETTERS + n_ell - e + (j - t->ell));
		else
			lab[j] = t->letter[j - e];
	}
}

/*
 * Labels every input's axes (views[k]) and sets each label's size in
 * sizes[] (-1 for a label no input has): a letter's size must be the same
 * on every axis it labels, but a size 1 in another input broadcasts, as
 * in numpy and ONNX Runtime; a letter repeated in one term needs equal
 * sizes there; the axes of "..." broadcast (ONNX "Broadcasting").  *n_ell
 * is the most axes "..." stands for.  -1 after ie_op_error.
 */
static int
es_bind(ie_node_ctx *ctx, const es_equation *eq, es_view *views,
		int64_t *sizes, int *n_ell)
{
	int			owner[ES_LABELS];

	*n_ell = 0;
	for (int k = 0; k < eq->n_in; k++)
	{
		const ie_tensor *x = ctx->inputs[k];
		const es_term *t = &eq->in[k];

		if (t->ell < 0 ? x->ndim != t->n : x->ndim < t->n)
			return ie_op_error(ctx, "input %d has rank %d, its term has %d letters%s",
							   k, x->ndim, t->n, t->ell < 0 ? "" : " and \"...\"");
		if (t->ell >= 0 && x->ndim - t->n > *n_ell)
			*n_ell = x->ndim - t->n;
	}
	for (int l = 0; l < ES_LABELS; l++)
	{
		sizes[l] = -1;
		owner[l] = -1;
	}
	for (int k = 0; k < eq->n_in; k++)
	{
		const ie_tensor *x = ctx->inputs[k];
		es_view    *v = &views[k];

		v->data = x->data;
		v->n = x->ndim;
		es_term_labels(&eq->in[k], x->ndim, *n_ell, v->lab);
		for (int j = 0; j < x->ndim; j++)
		{
			int			l = v->lab[j];
			int64_t		d = x->dims[j];

			for (int i = 0; i < j; i++)
				if (v->lab[i] == l && x->dims[i] != d)
					return ie_op_error(ctx, "letter '%c' is repeated in input %d's term with sizes %lld and %lld",
									   es_char(l), k, (long long) x->dims[i], (long long) d);
			if (sizes[l] == -1 || sizes[l] == 1)
			{
				sizes[l] = d;
				owner[l] = k;
			}
			else if (d != sizes[l] && d != 1)
			{
				if (l >= ES_LETTERS)
					return ie_op_error(ctx, "the axes \"...\" stands for do not broadcast: size %lld in input %d, %lld in input %d",
									   (long long) sizes[l], owner[l], (long long) d, k);
				return ie_op_error(ctx, "letter '%c' has size %lld in input %d and %lld in input %d",
								   es_char(l), (long long) sizes[l], owner[l], (long long) d, k);
			}
		}
	}
	for (int k = 0; k < eq->n_in; k++)
	{
		const ie_tensor *x = ctx->inputs[k];
		es_view    *v = &views[k];
		int64_t		st = 1;

		int			m = 0;

		for (int j = x->ndim - 1; j >= 0; j--)
		{
			v->stride[j] = x->dims[j] == 1 ? 0 : st;
			st *= x->dims[j];
		}
		/* an axis of size 1 that broadcasts: the view does not vary along it */
		for (int j = 0; j < x->ndim; j++)
			if (x->dims[j] != 1 || sizes[v->lab[j]] == 1)
			{
				v->lab[m] = v->lab[j];
				v->stride[m++] = v->stride[j];
			}
		v->n = m;
	}
	return 0;
}

/* A dense row-major view of data with labels lab[0..n). */
static void
es_dense_view(es_view *v, const void *data, const int8_t *lab, int n,
			  const int64_t *sizes)
{
	int64_t		st = 1;

	v->data = data;
	v->n = n;
	for (int i = n - 1; i >= 0; i--)
	{
		v->lab[i] = lab[i];
		v->stride[i] = st;
		st *= sizes[lab[i]];
	}
}

/* Whether v is dense row-major with exactly the labels lab[0..n) in order. */
static bool
es_is_dense(const es_view *v, const int8_t *lab, int n, const int64_t *sizes)
{
	int64_t		st = 1;

	if (v->n != n)
		return false;
	for (int i = n - 1; i >= 0; i--)
	{
		if (v->lab[i] != lab[i] || (sizes[lab[i]] != 1 && v->stride[i] != st))
			return false;
		st *= sizes[lab[i]];
	}
	return true;
}

/* The strides and sizes of the strided loop's axes, per view. */
typedef struct es_axes
{
	int			n;
	int64_t		size[ES_LABELS];
	int64_t		stride[2][ES_LABELS];
} es_axes;

/* Steps odometer idx over the axes of ax, moving off[0..nv) along. */
static inline void
es_step(const es_axes *ax, int64_t *idx, int nv, int64_t *off)
{
	for (int j = ax->n - 1; j >= 0; j--)
	{
		for (int k = 0; k < nv; k++)
			off[k] += ax->stride[k][j];
		if (++idx[j] < ax->size[j])
			return;
		for (int k = 0; k < nv; k++)
			off[k] -= ax->stride[k][j] * ax->size[j];
		idx[j] = 0;
	}
}

/*
 * out[o] = sum over s of the product over views k of v_k[o, s], for
 * out_n outputs and sum_n terms each; ACC is the accumulator type.  The
 * summed odometer (sidx) comes back to zero after each full sum.
 */
#define ES_LOOP(T, ACC) \
	do { \
		const T    *p0 = v[0].data, \
				   *p1 = nv > 1 ? v[1].data : NULL; \
		T		   *y = out; \
		\
		for (int64_t o = 0; o < out_n; o++) \
		{ \
			int64_t		off[2] = {ooff[0], ooff[1]}; \
			ACC			acc = 0; \
			\
			for (int64_t s = 0; s < sum_n; s++) \
			{ \
				acc += nv > 1 ? (ACC) p0[off[0]] * (ACC) p1[off[1]] : (ACC) p0[off[0]]; \
				es_step(&sa, sidx, nv, off); \
			} \
			y[o] = (T) acc; \
			es_step(&oa, oidx, nv, ooff); \
		} \
	} while (0)

/*
 * The strided loop: out (dense, labels olab[0..no) in that order) = for
 * each output element, the sum over the labels of v[0..nv) (nv 1 or 2)
 * not in olab of the product of the views' elements, in type dt.  A label
 * on several axes of a view walks their diagonal (the strides add up); a
 * label a view lacks broadcasts.  out_n and sum_n are the products of the
 * output's and the summed labels' sizes (es_counts).
 */
static void
es_loop(ie_dtype dt, const es_view *v, int nv, const int8_t *olab, int no,
		const int64_t *sizes, void *out, int64_t out_n, int64_t sum_n)
{
	int64_t		lstride[2][ES_LABELS] = {{0}};
	bool		used[ES_LABELS] = {false},
				in_out[ES_LABELS] = {false};
	es_axes		oa = {0},
				sa = {0};
	int64_t		oidx[ES_LABELS] = {0},
				sidx[ES_LABELS] = {0},
				ooff[2] = {0, 0};

	for (int k = 0; k < nv; k++)
		for (int i = 0; i < v[k].n; i++)
		{
			lstride[k][v[k].lab[i]] += v[k].stride[i];
			used[v[k].lab[i]] = true;
		}
	for (int i = 0; i < no; i++)
	{
		in_out[olab[i]] = true;
		oa.size[oa.n] = sizes[olab[i]];
		for (int k = 0; k < nv; k++)
			oa.stride[k][oa.n] = lstride[k][olab[i]];
		oa.n++;
	}
	for (int l = 0; l < ES_LABELS; l++)
		if (used[l] && !in_out[l])
		{
			sa.size[sa.n] = sizes[l];
			for (int k = 0; k < nv; k++)
				sa.stride[k][sa.n] = lstride[k][l];
			sa.n++;
		}
	switch (dt)
	{
		case IE_FLOAT:
			ES_LOOP(float, double);
			break;
		case IE_DOUBLE:
			ES_LOOP(double, double);
			break;
		case IE_INT32:
			ES_LOOP(int32_t, uint32_t);
			break;
		case IE_INT64:
			ES_LOOP(int64_t, uint64_t);
			break;
		case IE_UINT32:
			ES_LOOP(uint32_t, uint32_t);
			break;
		case IE_UINT64:
			ES_LOOP(uint64_t, uint64_t);
			break;
		default:
			break;				/* op_einsum refused the type */
	}
}

#undef ES_LOOP

/*
 * The strided loop's counts for views v[0..nv) into labels olab[0..no):
 * *out_n outputs, *sum_n summed terms each; -1 after ie_op_error when
 * either or their product overflows int64.
 */
static int
es_counts(ie_node_ctx *ctx, const es_view *v, int nv, const int8_t *olab,
		  int no, const int64_t *sizes, int64_t *out_n, int64_t *sum_n)
{
	bool		seen[ES_LABELS] = {false};
	int64_t		all;

	*out_n = 1;
	*sum_n = 1;
	for (int i = 0; i < no; i++)
	{
		seen[olab[i]] = true;
		if (!es_mul(out_n, sizes[olab[i]]))
			return ie_op_error(ctx, "more than 2^63 output elements is over the engine's limit");
	}
	for (int k = 0; k < nv; k++)
		for (int i = 0; i < v[k].n; i++)
			if (!seen[v[k].lab[i]])
			{
				seen[v[k].lab[i]] = true;
				if (!es_mul(sum_n, sizes[v[k].lab[i]]))
					return ie_op_error(ctx, "more than 2^63 terms per sum is over the engine's limit");
			}
	all = *out_n;
	if (!es_mul(&all, *sum_n))
		return ie_op_error(ctx, "more than 2^63 products is over the engine's limit");
	return 0;
}

/*
 * A new dense buffer (a 1-D tensor, for the engine's limits and buffer
 * cache) for labels lab[0..n) of type dt; NULL after ie_op_error.
 */
static ie_tensor *
es_alloc(ie_node_ctx *ctx, ie_dtype dt, const int8_t *lab, int n,
		 const int64_t *sizes)
{
	int64_t		count = 1;
	ie_tensor  *t;

	for (int i = 0; i < n; i++)
		if (!es_mul(&count, sizes[lab[i]]))
		{
			ie_op_error(ctx, "an intermediate of more than 2^63 elements is over the engine's limit");
			return NULL;
		}
	if ((t = ie_tensor_new_uninit(dt, 1, &count)) == NULL)
		ie_op_error(ctx, "out of memory for an intermediate of %lld elements",
					(long long) count);
	return t;
}

/*
 * Runs the strided loop from v[0..nv) into a new dense buffer *buf with
 * labels lab[0..n), and points *res at it.  -1 after ie_op_error.
 */
static int
es_loop_into(ie_node_ctx *ctx, ie_dtype dt, const es_view *v, int nv,
			 const int8_t *lab, int n, const int64_t *sizes, es_view *res,
			 ie_tensor **buf)
{
	int64_t		out_n,
				sum_n;

	if (es_counts(ctx, v, nv, lab, n, sizes, &out_n, &sum_n) != 0 ||
		(*buf = es_alloc(ctx, dt, lab, n, sizes)) == NULL)
		return -1;
	es_loop(dt, v, nv, lab, n, sizes, (*buf)->data, out_n, sum_n);
	es_dense_view(res, (*buf)->data, lab, n, sizes);
	return 0;
}

/*
 * v reduced to its distinct labels that need[] marks, in the order of
 * their first axes (into *res, with a new buffer in *buf), or v itself
 * (*buf NULL) when it has no other label and no diagonal.
 */
static int
es_reduce_alone(ie_node_ctx *ctx, ie_dtype dt, const es_view *v,
				const bool *need, const int64_t *sizes, es_view *res,
				ie_tensor **buf)
{
	bool		seen[ES_LABELS] = {false};
	int8_t		lab[ES_LABELS];
	int			n = 0;

	*buf = NULL;
	for (int i = 0; i < v->n; i++)
		if (need[v->lab[i]] && !seen[v->lab[i]])
		{
			seen[v->lab[i]] = true;
			lab[n++] = v->lab[i];
		}
	if (n == v->n)
	{
		*res = *v;
		return 0;
	}
	return es_loop_into(ctx, dt, v, 1, lab, n, sizes, res, buf);
}

/* A batch of products c_i[M, N] = a_i[M, K] x b_i[K, N], a_i or b_i transposed. */
typedef struct es_gemm
{
	ie_dtype	dt;
	const void *a,
			   *b;
	void	   *c;
	int64_t		M,
				N,
				K;
	bool		ta,
				tb;
} es_gemm;

/* Product t of the batch. */
static void
es_gemm_task(void *arg, int64_t t, int worker)
{
	const es_gemm *g = arg;
	int64_t		ao = t * g->M * g->K,
				bo = t * g->K * g->N,
				co = t * g->M * g->N;

	(void) worker;
	if (g->dt == IE_FLOAT)
		cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
					g->tb ? CblasTrans : CblasNoTrans, (int) g->M, (int) g->N,
					(int) g->K, 1.0f, (const float *) g->a + ao,
					(int) (g->ta ? g->M : g->K), (const float *) g->b + bo,
					(int) (g->tb ? g->K : g->N), 0.0f, (float *) g->c + co, (int) g->N);
	else
		cblas_dgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
					g->tb ? CblasTrans : CblasNoTrans, (int) g->M, (int) g->N,
					(int) g->K, 1.0, (const double *) g->a + ao,
					(int) (g->ta ? g->M : g->K), (const double *) g->b + bo,
					(int) (g->tb ? g->K : g->N), 0.0, (double *) g->c + co, (int) g->N);
}

/* Concatenates label lists x[0..nx), y[0..ny), z[0..nz) into out; the count. */
static int
es_cat(int8_t *out, const int8_t *x, int nx, const int8_t *y, int ny,
	   const int8_t *z, int nz)
{
	memcpy(out, x, nx);
	memcpy(out + nx, y, ny);
	memcpy(out + nx + ny, z, nz);
	return nx + ny + nz;
}

/*
 * v as a dense buffer in label order lab[0..n) or, when alt is not NULL,
 * in the order alt[0..n): points *p at the data, sets *trans when it is
 * alt's, and copies v into *buf in lab's order only when it has neither.
 */
static int
es_layout(ie_node_ctx *ctx, ie_dtype dt, const es_view *v, const int8_t *lab,
		  const int8_t *alt, int n, const int64_t *sizes, const void **p,
		  bool *trans, ie_tensor **buf)
{
	es_view		packed;

	*trans = false;
	if (es_is_dense(v, lab, n, sizes))
	{
		*p = v->data;
		return 0;
	}
	if (alt != NULL && es_is_dense(v, alt, n, sizes))
	{
		*p = v->data;
		*trans = true;
		return 0;
	}
	if (es_loop_into(ctx, dt, v, 1, lab, n, sizes, &packed, buf) != 0)
		return -1;
	*p = packed.data;
	return 0;
}

/*
 * Contracts float or double views a and b as a batch of matrix products:
 * the result (a new buffer in *buf, its view in *res) has labels batch
 * (in both and kept), then a's free labels, then b's, in a's and b's axis
 * order; labels in both and not kept are summed.  a and b hold distinct
 * labels, each kept or in the other (es_reduce_alone).
 */
static int
es_pair_gemm(ie_node_ctx *ctx, ie_dtype dt, const es_view *a, const es_view *b,
			 const bool *keep, const int64_t *sizes, int n_threads,
			 es_view *res, ie_tensor **buf)
{
	bool		in_a[ES_LABELS] = {false},
				in_b[ES_LABELS] = {false};
	int8_t		bat[ES_LABELS],
				af[ES_LABELS],
				bf[ES_LABELS],
				con[ES_LABELS],
				la[ES_LABELS],
				la_t[ES_LABELS],
				lb[ES_LABELS],
				lb_t[ES_LABELS],
				lr[ES_LABELS];
	int			nbat = 0,
				naf = 0,
				nbf = 0,
				ncon = 0,
				n;
	int64_t		nb = 1,
				M = 1,
				N = 1,
				K = 1;
	ie_tensor  *pa = NULL,
			   *pb = NULL;
	es_gemm		g = {.dt = dt};
	double		work;
	int			rc = -1;

	*buf = NULL;
	for (int i = 0; i < a->n; i++)
		in_a[a->lab[i]] = true;
	for (int i = 0; i < b->n; i++)
		in_b[b->lab[i]] = true;
	for (int i = 0; i < a->n; i++)
	{
		int			l = a->lab[i];
		bool		ok;

		if (in_b[l] && keep[l])
		{
			bat[nbat++] = (int8_t) l;
			ok = es_mul(&nb, sizes[l]);
		}
		else if (in_b[l])
		{
			con[ncon++] = (int8_t) l;
			ok = es_mul(&K, sizes[l]);
		}
		else
		{
			af[naf++] = (int8_t) l;
			ok = es_mul(&M, sizes[l]);
		}
		if (!ok)
			return ie_op_error(ctx, "a matrix product of more than 2^63 elements is over the engine's limit");
	}
	for (int i = 0; i < b->n; i++)
		if (!in_a[b->lab[i]])
		{
			bf[nbf++] = b->lab[i];
			if (!es_mul(&N, sizes[b->lab[i]]))
				return ie_op_error(ctx, "a matrix product of more than 2^63 elements is over the engine's limit");
		}
	if (ie_op_gemm_fits(ctx, M, K, N) != 0)
		return -1;
	n = es_cat(la, bat, nbat, af, naf, con, ncon);
	es_cat(la_t, bat, nbat, con, ncon, af, naf);
	es_cat(lb, bat, nbat, con, ncon, bf, nbf);
	es_cat(lb_t, bat, nbat, bf, nbf, con, ncon);
	if (es_layout(ctx, dt, a, la, la_t, n, sizes, &g.a, &g.ta, &pa) != 0 ||
		es_layout(ctx, dt, b, lb, lb_t, nbat + ncon + nbf, sizes, &g.b, &g.tb, &pb) != 0)
		goto done;
	n = es_cat(lr, bat, nbat, af, naf, bf, nbf);
	if ((*buf = es_alloc(ctx, dt, lr, n, sizes)) == NULL)
		goto done;
	g.c = (*buf)->data;
	g.M = M;
	g.N = N;
	g.K = K;
	work = (double) nb * M * N * K;
	if (work < (double) ES_TASK_WORK * n_threads)
		n_threads = work / ES_TASK_WORK > 1 ? (int) (work / ES_TASK_WORK) : 1;
	ie_parallel_for(n_threads, nb, es_gemm_task, &g);
	es_dense_view(res, g.c, lr, n, sizes);
	rc = 0;
done:
	ie_tensor_destroy(&pa);
	ie_tensor_destroy(&pb);
	return rc;
}

/* es_pair through the strided loop, a's kept labels first, then b's. */
static int
es_pair_loop(ie_node_ctx *ctx, ie_dtype dt, const es_view *a, const es_view *b,
			 const bool *keep, const int64_t *sizes, es_view *res, ie_tensor **buf)
{
	es_view		v2[2] = {*a, *b};
	bool		seen[ES_LABELS] = {false};
	int8_t		lab[ES_LABELS];
	int			n = 0;

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < v2[k].n; i++)
			if (keep[v2[k].lab[i]] && !seen[v2[k].lab[i]])
			{
				seen[v2[k].lab[i]] = true;
				lab[n++] = v2[k].lab[i];
			}
	return es_loop_into(ctx, dt, v2, 2, lab, n, sizes, res, buf);
}

/*
 * Contracts views a and b into a new buffer *buf (its view in *res) that
 * keeps the labels keep[] marks and sums the others.  Each side is first
 * reduced alone (es_reduce_alone: its diagonals, the letters only it
 * has); then a float or double pair goes as matrix products
 * (es_pair_gemm), others through the strided loop.  A pair with an empty
 * axis goes straight to the loop.
 */
static int
es_pair(ie_node_ctx *ctx, ie_dtype dt, const es_view *a, const es_view *b,
		const bool *keep, const int64_t *sizes, es_view *res, ie_tensor **buf)
{
	bool		need[ES_LABELS],
				empty = false;
	es_view		ra,
				rb;
	ie_tensor  *ba = NULL,
			   *bb = NULL;
	int			rc;

	for (int i = 0; i < a->n; i++)
		empty |= sizes[a->lab[i]] == 0;
	for (int i = 0; i < b->n; i++)
		empty |= sizes[b->lab[i]] == 0;
	if (empty)
		return es_pair_loop(ctx, dt, a, b, keep, sizes, res, buf);
	/* first each side alone: its diagonals, the letters only it has */
	memcpy(need, keep, sizeof(need));
	for (int i = 0; i < b->n; i++)
		need[b->lab[i]] = true;
	if (es_reduce_alone(ctx, dt, a, need, sizes, &ra, &ba) != 0)
		return -1;
	memcpy(need, keep, sizeof(need));
	for (int i = 0; i < ra.n; i++)
		need[ra.lab[i]] = true;
	rc = es_reduce_alone(ctx, dt, b, need, sizes, &rb, &bb);
	if (rc == 0 && (dt == IE_FLOAT || dt == IE_DOUBLE))
		rc = es_pair_gemm(ctx, dt, &ra, &rb, keep, sizes, ctx->n_threads, res, buf);
	else if (rc == 0)
		rc = es_pair_loop(ctx, dt, &ra, &rb, keep, sizes, res, buf);
	ie_tensor_destroy(&ba);
	ie_tensor_destroy(&bb);
	return rc;
}

/*
 * Refuses an explicit output that leaves out the "..." its inputs have
 * when "..." stands for n_ell > 0 axes, as numpy's einsum and ONNX
 * Runtime do (ONNX's reference evaluator sums those axes instead; a
 * model meaning that writes them as letters).  Returns -1 after
 * ie_op_error.
 */
static int
es_ellipsis_left_out(ie_node_ctx *ctx, int n_ell)
{
	const ie_attr *a = ie_attr_find(ctx, "equation");
	char		shown[ES_SHOWN];

	es_shown(a->s, a->s_len, shown);
	return ie_op_error(ctx, "equation \"%s\" leaves \"...\" out of its output, and here \"...\" stands for %d %s (numpy and ONNX Runtime refuse this; write \"...\" in the output, or letters for the axes to sum)",
					   shown, n_ell, n_ell == 1 ? "axis" : "axes");
}

/*
 * Einsum (opset 12; ONNX Operators.md): Output = the sum, over the letters
 * of the equation's inputs that its output lacks, of the product of the
 * inputs' elements, for each index of the output's letters.  Inputs
 * (1 to ES_MAX_OPERANDS, one per term) have one type: float, double,
 * int32, int64, uint32 or uint64 (float16 is refused); each has its
 * term's letters as axes, "..." standing for leading, middle or trailing
 * axes that broadcast across inputs.  A letter repeated in a term takes
 * the diagonal; a letter's sizes must agree across inputs (a size 1
 * broadcasts).  The output has the output term's letters, "..." expanded,
 * at most IE_MAX_DIMS axes.  Errors: es_parse's, a rank or size that does
 * not match the equation, an explicit output without the "..." that
 * stands for one axis or more (es_ellipsis_left_out), a mixed or unsupported type, counts over 2^63,
 * out of memory.
 */
static int
op_einsum(ie_node_ctx *ctx)
{
	es_equation eq;
	es_view		views[ES_MAX_OPERANDS],
				cur;
	int64_t		sizes[ES_LABELS],
				odims[IE_MAX_DIMS],
				out_n,
				sum_n;
	int8_t		olab[ES_LABELS];
	bool		in_out[ES_LABELS] = {false};
	int			n_ell,
				no;
	ie_dtype	dt;
	ie_tensor  *Y,
			   *cur_buf = NULL;

	if (es_parse(ctx, &eq) != 0)
		return -1;
	for (int k = 0; k < eq.n_in; k++)
		if (ctx->inputs[k] == NULL)
			return ie_op_error(ctx, "input %d is missing", k);
	dt = ctx->inputs[0]->dtype;
	if (dt != IE_FLOAT && dt != IE_DOUBLE && dt != IE_INT32 && dt != IE_INT64 &&
		dt != IE_UINT32 && dt != IE_UINT64)
		return ie_op_error(ctx, "element type %s is not supported (float, double, int32, int64, uint32, uint64)",
						   ie_dtype_name(dt));
	for (int k = 1; k < eq.n_in; k++)
		if (ctx->inputs[k]->dtype != dt)
			return ie_op_error(ctx, "input %d is %s, input 0 is %s", k,
							   ie_dtype_name(ctx->inputs[k]->dtype), ie_dtype_name(dt));
	if (es_bind(ctx, &eq, views, sizes, &n_ell) != 0)
		return -1;
	if (n_ell > 0 && eq.out.ell < 0)
		return es_ellipsis_left_out(ctx, n_ell);
	no = eq.out.n + (eq.out.ell >= 0 ? n_ell : 0);
	if (no > IE_MAX_DIMS)
		return ie_op_error(ctx, "an output of rank %d is over the engine's limit of %d",
						   no, IE_MAX_DIMS);
	es_term_labels(&eq.out, no, n_ell, olab);
	for (int i = 0; i < no; i++)
	{
		odims[i] = sizes[olab[i]];
		in_out[olab[i]] = true;
	}
	if ((Y = ie_tensor_new_uninit(dt, no, odims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) == 0)
		return 0;

	/* contract from the left, keeping what the output or a later input uses */
	cur = views[0];
	for (int k = 1; k < eq.n_in; k++)
	{
		bool		keep[ES_LABELS];
		es_view		next;
		ie_tensor  *next_buf = NULL;
		int			rc;

		memcpy(keep, in_out, sizeof(keep));
		for (int j = k + 1; j < eq.n_in; j++)
			for (int i = 0; i < views[j].n; i++)
				keep[views[j].lab[i]] = true;
		rc = es_pair(ctx, dt, &cur, &views[k], keep, sizes, &next, &next_buf);
		ie_tensor_destroy(&cur_buf);
		if (rc != 0)
			return -1;
		cur = next;
		cur_buf = next_buf;
	}
	if (es_is_dense(&cur, olab, no, sizes))
		memcpy(Y->data, cur.data, Y->nbytes);
	else if (es_counts(ctx, &cur, 1, olab, no, sizes, &out_n, &sum_n) != 0)
	{
		ie_tensor_destroy(&cur_buf);
		return -1;
	}
	else
		es_loop(dt, &cur, 1, olab, no, sizes, Y->data, out_n, sum_n);
	ie_tensor_destroy(&cur_buf);
	return 0;
}

const ie_op_def ie_ops_einsum[] = {
	{"Einsum", op_einsum},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_einsum[] = {
	{"Einsum", einsum_check_attrs},
	{NULL, NULL}
};
