/*
 * fusion.c
 *	  Load-time fusion of element-wise chains into Conv, MatMul and
 *	  MatMulInteger epilogues; see fusion.h for what is fused and how
 *	  results compare.
 *
 * The epilogue is a straight-line program over registers: register 0 holds
 * the node's output, each fused node writes a new register, and the last
 * one is the result.  Operands are registers or constants (a scalar or one
 * value per output channel, resolved to a scalar per channel; for a MatMul,
 * one value per column, read as a vector along the row).  It runs on blocks
 * of EP_BLOCK values so the registers stay in L1.  After building, runs of
 * steps that a single loop can do with the same arithmetic are merged
 * (merge_steps, merge_chain), so most epilogues are one pass.
 *
 * A MatMulInteger's epilogue (ep->from_i32) starts from its int32 sums:
 * register 0 holds int32, read only by the first step, the Cast to float,
 * which merges with the Mul by the scale that follows into one step
 * (EP_I2F_MUL).  That scale is a constant or, as ONNX Runtime's
 * quantize_dynamic writes it (A's scale, computed by DynamicQuantizeLinear,
 * times B's), a value computed at run time: the fused node gets it as an
 * extra input (ie_epilogue_runtime_input) and passes its values to each
 * apply.
 *
 * Threading: ie_fuse_plan runs once, at load; the epilogues it makes are
 * read-only afterwards.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/fusion.h"
#include "worker/engine/model_int.h"
#include "worker/engine/vectorise.h"
#include "worker/engine/vmath.h"

/* Most nodes fused into one Conv, and nodes looked at past the Conv. */
#define EP_MAX_STEPS 15
#define EP_WINDOW 64
/* Values processed per pass over the program. */
#define EP_BLOCK 128
/* The input a fused MatMulInteger reads its run-time scale from: after
 * A, B, a_zero_point and b_zero_point (MatMulInteger-10's four). */
#define EP_RT_INPUT 4

/* An int32 that may alias a float (register 0 of a MatMulInteger's
 * epilogue holds the int32 sums in the buffer the floats replace). */
typedef int32_t ep_i32 __attribute__((may_alias));

typedef enum ep_op
{
	EP_ADD,
	EP_SUB,
	EP_MUL,
	EP_DIV,
	EP_RELU,
	EP_CLIP,					/* p0 = lo, p1 = hi */
	EP_HARDSIGMOID,				/* p0 = alpha, p1 = beta */
	EP_SIGMOID,
	EP_ERF,						/* erf through vmath.h, as the Erf operator */
	EP_GELU,					/* Gelu's erf form through vmath.h, as the operator */
	EP_AFFINE,					/* y = a * ca[c] + cb[c] (BatchNormalization) */
	EP_I2F,						/* y = (float) a, a int32 (Cast to float) */
	/* merged runs of the above (merge_steps), same arithmetic in one pass */
	EP_MULADD,					/* y = a * b + e (b, e constants) */
	EP_I2F_MUL,					/* y = (float) a * b, a int32: Cast, then Mul */
	EP_HARDSWISH,				/* y = a * clip(a + k, p0, p1) / q */
	EP_CHAIN					/* pre-affine, activation, post-affine in one
								 * pass (merge_chain) */
} ep_op;

/* The activation inside an EP_CHAIN. */
typedef enum ep_act
{
	ACT_NONE,
	ACT_RELU,
	ACT_HARDSWISH,
	ACT_CLIP
} ep_act;

/*
 * One operand: a register, a constant (per channel or scalar), or the
 * fused node's run-time operand (rt: its values come with each apply).
 */
typedef struct ep_arg
{
	int			reg;			/* >= 0: a register; -1: the constant */
	const float *c;				/* constant values (owned by the epilogue) */
	int			per_channel;	/* c has one value per channel, else one */
	bool		vec;			/* c came from a 1-D constant (a MatMul's) */
	bool		rt;				/* the run-time operand (ep_rt), not c */
} ep_arg;

/* The run-time operand's values for one apply: one, or one per column. */
typedef struct ep_rt
{
	const float *v;
	bool		per_col;
} ep_rt;

typedef struct ep_step
{
	ep_op		op;
	int			dst;
	ep_arg		a;
	ep_arg		b;
	float		p0,
				p1;
	const float *ca,
			   *cb;				/* EP_AFFINE per-channel factors */
	ep_arg		e;				/* EP_MULADD's added constant */
	float		k,
				q;				/* EP_HARDSWISH's added and divisor constants */
	/* EP_CHAIN: y = post(act(pre(a))), pre and post x * s + t (each
	 * optional), act as the step it replaced (k, p0, p1, q) */
	bool		has_pre,
				has_post;
	ep_arg		pre_s,
				pre_t,
				post_s,
				post_t;
	ep_act		act;
} ep_step;

struct ie_epilogue
{
	int			n_fused;		/* graph nodes fused */
	int			n_steps;		/* steps after merge_steps */
	ep_step		steps[EP_MAX_STEPS];
	int			out_reg;
	int64_t		channels;
	int			n_consts;
	float	   *consts[2 * EP_MAX_STEPS];	/* owned */
	bool		from_i32;		/* register 0 holds int32 (MatMulInteger) */
	int			rt_value;		/* at load: the run-time operand's value, or -1 */
	int			rt_input;		/* the fused node's input holding it, or -1 */
	int			min_rank;		/* 1 where a 1-D constant widens a 0-D product */
};

/* The operand's value for channel c (a constant). */
static inline float
arg_const(const ep_arg *a, int64_t c)
{
	return a->per_channel ? a->c[c] : a->c[0];
}

/*
 * The step kernels, one plain loop each so the compiler vectorises them
 * (SSE2, and AVX2 in the clone: vectorise.h).  Min and max are written as
 * comparisons, which vectorise and give fminf/fmaxf's results, NaN
 * included, for these operand orders; Relu's keeps a NaN (x < 0 ? 0 : x),
 * as op_relu does.
 *
 * Runs one step of ep over len values: of channel c, or with bycol (a
 * MatMul's epilogue) of columns c, c + 1, ... of one row, where a
 * per-channel constant is a vector along the row.
 */
static inline __attribute__((always_inline)) void
ep_step_run(const ep_step *st, float *const *regs, int64_t c, int len, bool bycol,
			const ep_rt *rt)
{
	/* d may be an operand's storage (the last step writes y in place):
	 * element i is read before it is written, so that is safe */
	float	   *d = regs[st->dst];
	ep_arg		a = st->a,
				b = st->b;
	const float *ra,
			   *rb,
			   *va,
			   *vb;
	float		ka,
				kb;

	/* the run-time operand reads as a constant of this apply */
	if (a.rt)
	{
		a.c = rt->v;
		a.per_channel = rt->per_col;
	}
	if (b.rt)
	{
		b.c = rt->v;
		b.per_channel = rt->per_col;
	}
	ra = a.reg >= 0 ? regs[a.reg] : NULL;
	rb = b.reg >= 0 ? regs[b.reg] : NULL;
	va = !ra && bycol && a.per_channel ? a.c + c : NULL;
	vb = !rb && bycol && b.c && b.per_channel ? b.c + c : NULL;
	ka = ra || va ? 0.0f : arg_const(&a, c);
	kb = rb || vb || !b.c ? 0.0f : arg_const(&b, c);

	switch (st->op)
	{
#define BIN(OPER) \
		if (ra && rb) \
			for (int i = 0; i < len; i++) d[i] = ra[i] OPER rb[i]; \
		else if (ra && vb) \
			for (int i = 0; i < len; i++) d[i] = ra[i] OPER vb[i]; \
		else if (ra) \
			for (int i = 0; i < len; i++) d[i] = ra[i] OPER kb; \
		else if (va) \
			for (int i = 0; i < len; i++) d[i] = va[i] OPER rb[i]; \
		else \
			for (int i = 0; i < len; i++) d[i] = ka OPER rb[i]; \
		break
		case EP_ADD:
			BIN(+);
		case EP_SUB:
			BIN(-);
		case EP_MUL:
			BIN(*);
		case EP_DIV:
			BIN(/);
#undef BIN
		case EP_RELU:
			for (int i = 0; i < len; i++)
				d[i] = ra[i] < 0.0f ? 0.0f : ra[i];
			break;
		case EP_CLIP:
			{
				float		lo = st->p0,
							hi = st->p1;

				for (int i = 0; i < len; i++)
				{
					float		v = ra[i] < lo ? lo : ra[i];

					d[i] = v > hi ? hi : v;
				}
				break;
			}
		case EP_HARDSIGMOID:
			{
				float		al = st->p0,
							be = st->p1;

				/* max(0, min(1, alpha * x + beta)) */
				for (int i = 0; i < len; i++)
				{
					float		v = al * ra[i] + be;

					v = v < 1.0f ? v : 1.0f;
					d[i] = v < 0.0f ? 0.0f : v;
				}
				break;
			}
		case EP_SIGMOID:
			/* as the Sigmoid operator */
			ie_vsigmoidf(ra, d, len);
			break;
		case EP_ERF:
			ie_verff(ra, d, len);
			break;
		case EP_GELU:
			ie_vgeluf(ra, d, len);
			break;
		case EP_AFFINE:
			{
				float		a = st->ca[c],
							b = st->cb[c];

				for (int i = 0; i < len; i++)
					d[i] = ra[i] * a + b;
				break;
			}
		case EP_I2F:
			{
				const ep_i32 *ai = (const ep_i32 *) ra;

				/* Cast's conversion (ops_shape.c): round to nearest */
				for (int i = 0; i < len; i++)
					d[i] = (float) ai[i];
				break;
			}
		case EP_I2F_MUL:
			{
				const ep_i32 *ai = (const ep_i32 *) ra;

				/* the conversion, then the product: Cast's rounding, then
				 * Mul's, as the two nodes (no contraction: ISO C mode) */
				if (vb)
					for (int i = 0; i < len; i++)
						d[i] = (float) ai[i] * vb[i];
				else
					for (int i = 0; i < len; i++)
						d[i] = (float) ai[i] * kb;
				break;
			}
		case EP_MULADD:
			if (bycol && (b.per_channel || st->e.per_channel))
			{
				/* the product, then the sum: the same two roundings */
				for (int i = 0; i < len; i++)
					d[i] = ra[i] * (vb ? vb[i] : kb);
				if (st->e.per_channel)
					for (int i = 0; i < len; i++)
						d[i] = d[i] + st->e.c[c + i];
				else
					for (int i = 0; i < len; i++)
						d[i] = d[i] + st->e.c[0];
			}
			else
			{
				float		ke = arg_const(&st->e, c);

				for (int i = 0; i < len; i++)
					d[i] = ra[i] * kb + ke;
			}
			break;

		case EP_CHAIN:
			{
				float		s1 = 1.0f,
							t1 = 0.0f,
							s2 = 1.0f,
							t2 = 0.0f,
							k = st->k,
							lo = st->p0,
							hi = st->p1,
							q = st->q;
				bool		pre = st->has_pre,
							post = st->has_post;

				if (pre)
				{
					s1 = arg_const(&st->pre_s, c);
					t1 = arg_const(&st->pre_t, c);
				}
				if (post)
				{
					s2 = arg_const(&st->post_s, c);
					t2 = arg_const(&st->post_t, c);
				}
				/* one loop per activation; the optional affines are
				 * selected outside the loops so each vectorises */
#define CHAIN_LOOP(ACT) \
				if (pre && post) \
					for (int i = 0; i < len; i++) { float v = ra[i] * s1 + t1; ACT; d[i] = v * s2 + t2; } \
				else if (pre) \
					for (int i = 0; i < len; i++) { float v = ra[i] * s1 + t1; ACT; d[i] = v; } \
				else \
					for (int i = 0; i < len; i++) { float v = ra[i]; ACT; d[i] = v * s2 + t2; }
				switch (st->act)
				{
					case ACT_NONE:
						CHAIN_LOOP((void) 0);
						break;
					case ACT_RELU:
						CHAIN_LOOP(v = v < 0.0f ? 0.0f : v);
						break;
					case ACT_CLIP:
						CHAIN_LOOP(v = v < lo ? lo : v; v = v > hi ? hi : v);
						break;
					case ACT_HARDSWISH:
						CHAIN_LOOP(float u = v + k; u = u < lo ? lo : u; u = u > hi ? hi : u; v = v * u / q);
						break;
				}
#undef CHAIN_LOOP
				break;
			}
		case EP_HARDSWISH:
			{
				float		k = st->k,
							lo = st->p0,
							hi = st->p1,
							q = st->q;

				for (int i = 0; i < len; i++)
				{
					float		t = ra[i] + k;

					t = t < lo ? lo : t;
					t = t > hi ? hi : t;
					d[i] = ra[i] * t / q;
				}
				break;
			}
	}
}

/*
 * Applies ep in place to n values of channel c, adding bias first; see
 * fusion.h.  Register 0 and the result register are y itself; the others
 * live on the stack, EP_BLOCK values at a time.
 */
IE_CLONES IE_VECTORISE void
ie_epilogue_apply(const ie_epilogue *ep, float *y, int64_t c, int64_t n, float bias)
{
	float		tmp[EP_MAX_STEPS + 1][EP_BLOCK] __attribute__((aligned(64)));
	float	   *regs[EP_MAX_STEPS + 1];

	for (int r = 1; r <= ep->n_fused; r++)
		regs[r] = tmp[r];
	for (int64_t off = 0; off < n; off += EP_BLOCK)
	{
		int			len = n - off < EP_BLOCK ? (int) (n - off) : EP_BLOCK;
		float	   *yb = y + off;

		if (bias != 0.0f)
			for (int i = 0; i < len; i++)
				yb[i] += bias;
		regs[0] = yb;
		regs[ep->out_reg] = yb;
		for (int s = 0; s < ep->n_steps; s++)
			ep_step_run(&ep->steps[s], regs, c, len, false, NULL);
	}
}

/*
 * Runs steps [first, n_steps) of a MatMul's or MatMulInteger's ep in place
 * over n values of one output row, columns [c0, c0 + n), EP_BLOCK at a
 * time; rt is the run-time operand's values (NULL where ep has none).
 */
static inline __attribute__((always_inline)) void
ep_apply_row(const ie_epilogue *ep, float *y, int64_t c0, int64_t n, const ep_rt *rt,
			 int first)
{
	float		tmp[EP_MAX_STEPS + 1][EP_BLOCK] __attribute__((aligned(64)));
	float	   *regs[EP_MAX_STEPS + 1];

	for (int r = 1; r <= ep->n_fused; r++)
		regs[r] = tmp[r];
	for (int64_t off = 0; off < n; off += EP_BLOCK)
	{
		int			len = n - off < EP_BLOCK ? (int) (n - off) : EP_BLOCK;

		regs[0] = y + off;
		regs[ep->out_reg] = y + off;
		/* from the second step on: the first's output is y, and no later
		 * step reads what came before it (i32_step_ok) */
		if (first > 0)
			regs[ep->steps[0].dst] = y + off;
		for (int s = first; s < ep->n_steps; s++)
			ep_step_run(&ep->steps[s], regs, c0 + off, len, true, rt);
	}
}

/*
 * Applies a MatMul's ep in place to n values of one output row, columns
 * [c0, c0 + n); see fusion.h.
 */
IE_CLONES IE_VECTORISE void
ie_epilogue_apply_row(const ie_epilogue *ep, float *y, int64_t c0, int64_t n)
{
	ep_apply_row(ep, y, c0, n, NULL, 0);
}

/*
 * Applies a MatMulInteger's ep in place to n int32 sums of one output row,
 * columns [c0, c0 + n), leaving floats; see fusion.h.
 */
IE_CLONES IE_VECTORISE void
ie_epilogue_apply_row_i32(const ie_epilogue *ep, void *y, int64_t c0, int64_t n,
						  const float *scale, bool scale_per_col)
{
	ep_rt		rt = {scale, scale_per_col};

	ep_apply_row(ep, y, c0, n, &rt, 0);
}

/*
 * Applies the steps of a MatMulInteger's ep that follow its scaling in
 * place to n floats of one row of the scaled product; see fusion.h.
 */
IE_CLONES IE_VECTORISE void
ie_epilogue_apply_row_scaled(const ie_epilogue *ep, float *y, int64_t c0, int64_t n)
{
	ep_apply_row(ep, y, c0, n, NULL, 1);
}

/* The fused node's input holding ep's run-time operand, or -1. */
int
ie_epilogue_runtime_input(const ie_epilogue *ep)
{
	return ep ? ep->rt_input : -1;
}

/* The least rank of the fused chain's result; see fusion.h. */
int
ie_epilogue_min_rank(const ie_epilogue *ep)
{
	return ep ? ep->min_rank : 0;
}

/* A 0-D product made [1] for ep's chain; see fusion.h. */
void
ie_epilogue_widen_output(const ie_epilogue *ep, ie_tensor *Y)
{
	if (Y->ndim < ie_epilogue_min_rank(ep))
	{
		Y->ndim = 1;
		Y->dims[0] = 1;
	}
}

/* Number of graph nodes fused into ep. */
int
ie_epilogue_n_steps(const ie_epilogue *ep)
{
	return ep ? ep->n_fused : 0;
}

/* Frees *ep and nulls the pointer. */
void
ie_epilogue_destroy(ie_epilogue **ep)
{
	if (ep == NULL || *ep == NULL)
		return;
	for (int i = 0; i < (*ep)->n_consts; i++)
		free((*ep)->consts[i]);
	free(*ep);
	*ep = NULL;
}

/*
 * Copies n floats into a new constant owned by ep; NULL when out of memory.
 * At load, from a constant of the model (a tensor the limit bounded), so
 * not checked against the tensor limit like a run's scratch.
 */
static const float *
ep_keep(ie_epilogue *ep, const float *src, int64_t n)
{
	float	   *c = malloc((n > 0 ? n : 1) * sizeof(float));

	if (c == NULL)
		return NULL;
	memcpy(c, src, n * sizeof(float));
	ep->consts[ep->n_consts++] = c;
	return c;
}

/*
 * Whether constant t can be an operand for a Conv output of rank `rank`
 * with `channels` channels without changing the output's shape: float,
 * rank <= rank, and either one element or one per channel laid out along
 * the channel axis (dims right-aligned: spatial ones 1).  Sets *per_channel.
 */
static bool
const_operand_ok(const ie_tensor *t, int rank, int64_t channels, int *per_channel)
{
	int64_t		n;

	if (rank == 0)
	{
		/* a MatMul's output (rank unknown at load): a scalar, or one value
		 * per column as a 1-D tensor, never widens it */
		if (t->dtype != IE_FLOAT || t->ndim > 1)
			return false;
		*per_channel = ie_tensor_numel(t) != 1;
		return ie_tensor_numel(t) == 1 || t->dims[0] == channels;
	}
	if (t->dtype != IE_FLOAT || t->ndim > rank)
		return false;
	n = ie_tensor_numel(t);
	if (n == 1)
	{
		*per_channel = 0;
		return true;
	}
	if (n != channels)
		return false;
	/* right-aligned against [N, C, s...]: the channel axis is rank-1-nsp */
	for (int i = 0; i < t->ndim; i++)
	{
		int			axis = rank - t->ndim + i;

		if (axis == 1 ? t->dims[i] != channels : t->dims[i] != 1)
			return false;
	}
	*per_channel = 1;
	return true;
}

/* A float attribute of a plan node, or dflt. */
static float
node_attr_float(const ie_plan_node *pn, const char *name, float dflt)
{
	for (int i = 0; i < pn->n_attrs; i++)
		if (strcmp(pn->attrs[i].name, name) == 0 && pn->attrs[i].type == IE_ATTR_FLOAT)
			return pn->attrs[i].f;
	return dflt;
}

/* An int attribute of a plan node, or dflt. */
static int64_t
node_attr_int(const ie_plan_node *pn, const char *name, int64_t dflt)
{
	for (int i = 0; i < pn->n_attrs; i++)
		if (strcmp(pn->attrs[i].name, name) == 0 && pn->attrs[i].type == IE_ATTR_INT)
			return pn->attrs[i].i;
	return dflt;
}

/* Whether a Gelu plan node has the erf form (approximate "none", the default). */
static bool
gelu_is_erf(const ie_plan_node *pn)
{
	for (int i = 0; i < pn->n_attrs; i++)
		if (strcmp(pn->attrs[i].name, "approximate") == 0)
			return pn->attrs[i].type == IE_ATTR_STRING && strcmp(pn->attrs[i].s, "none") == 0;
	return true;
}

/* Register of value v in the chain (reg_of[] by value), or -1. */
static int
chain_reg(const int *vals, int n_vals, int v)
{
	for (int r = 0; r < n_vals; r++)
		if (vals[r] == v)
			return r;
	return -1;
}

/*
 * What a MatMulInteger's chain allows node pn as the step that writes
 * register n_vals (ep->from_i32): the first step must be a Cast to float
 * of register 0 (the int32 sums, which nothing else reads); a run-time
 * operand only in the second, a Mul of the Cast's output (make_step); and
 * once the chain has one, no later step reads register 0 or 1, so the
 * steps after the scaling run alone on a scaled product
 * (ie_epilogue_apply_row_scaled).  true for any node of another chain.
 */
static bool
i32_step_ok(const ie_plan_node *pn, const int *vals, int n_vals, const ie_epilogue *ep)
{
	if (!ep->from_i32)
		return true;
	if (n_vals == 1)
		return strcmp(pn->op_type, "Cast") == 0 && pn->n_inputs == 1 &&
			pn->inputs[0] == vals[0] && node_attr_int(pn, "to", 0) == IE_FLOAT;
	for (int i = 0; i < pn->n_inputs; i++)
		if (pn->inputs[i] == vals[0] ||
			(ep->rt_value >= 0 && n_vals > 2 && pn->inputs[i] == vals[1]))
			return false;
	return true;
}

/*
 * Tries to express node pn as one epilogue step over the chain's values
 * (vals[0..n_vals), register r holds vals[r]); fills *st and returns true
 * when it can.  Constant operands are copied into ep.  In a MatMulInteger's
 * chain (i32_step_ok), the Mul after the Cast may take a value computed at
 * run time (float at run time: the Mul's type rule, Cast's output being
 * float); ep->rt_value records it.
 */
static bool
make_step(const ie_model *m, const ie_plan_node *pn, const int *vals, int n_vals,
		  int rank, int64_t channels, ie_epilogue *ep, ep_step *st)
{
	const char *op = pn->op_type;
	int			n_real = 0;

	memset(st, 0, sizeof(*st));
	st->a.reg = st->b.reg = -1;
	if (pn->n_outputs != 1 || pn->outputs[0] < 0 || !i32_step_ok(pn, vals, n_vals, ep))
		return false;
	for (int i = 0; i < pn->n_inputs; i++)
		if (pn->inputs[i] >= 0)
			n_real++;

	if (ep->from_i32 && n_vals == 1)
	{
		st->op = EP_I2F;		/* the Cast i32_step_ok let through */
		st->a.reg = 0;
		return true;
	}
	if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 ||
		strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0)
	{
		ep_arg	   *args[2] = {&st->a, &st->b};
		int			n_regs = 0,
					rt_value = -1;

		if (pn->n_inputs != 2 || n_real != 2)
			return false;
		for (int i = 0; i < 2; i++)
		{
			int			v = pn->inputs[i];
			int			r = chain_reg(vals, n_vals, v);

			if (r >= 0)
			{
				args[i]->reg = r;
				n_regs++;
			}
			else if (m->consts[v] != NULL &&
					 const_operand_ok(m->consts[v], rank, channels, &args[i]->per_channel))
			{
				args[i]->c = ep_keep(ep, m->consts[v]->data, ie_tensor_numel(m->consts[v]));
				args[i]->vec = rank == 0 && m->consts[v]->ndim == 1;
				if (args[i]->c == NULL)
					return false;
			}
			else if (ep->from_i32 && n_vals == 2 && strcmp(op, "Mul") == 0 &&
					 m->consts[v] == NULL && ep->rt_value < 0)
			{
				/* A's scale times B's, computed at run time */
				args[i]->rt = true;
				rt_value = v;
			}
			else
				return false;
		}
		if (n_regs == 0)
			return false;
		/* the run-time operand multiplies the Cast's output, nothing else */
		if (rt_value >= 0 && (st->a.reg >= 0 ? st->a.reg : st->b.reg) != 1)
			return false;
		if (rt_value >= 0)
			ep->rt_value = rt_value;
		st->op = op[0] == 'A' ? EP_ADD : op[0] == 'S' ? EP_SUB : op[0] == 'M' ? EP_MUL : EP_DIV;
		return true;
	}

	/* the rest are unary in their first input, which must be in the chain */
	if (pn->n_inputs < 1 || pn->inputs[0] < 0 ||
		(st->a.reg = chain_reg(vals, n_vals, pn->inputs[0])) < 0)
		return false;
	if (strcmp(op, "Relu") == 0 && pn->n_inputs == 1)
		st->op = EP_RELU;
	else if (strcmp(op, "Sigmoid") == 0 && pn->n_inputs == 1)
		st->op = EP_SIGMOID;
	else if (strcmp(op, "Erf") == 0 && pn->n_inputs == 1)
		st->op = EP_ERF;
	else if (strcmp(op, "Gelu") == 0 && pn->n_inputs == 1 && gelu_is_erf(pn))
		st->op = EP_GELU;
	else if (strcmp(op, "HardSigmoid") == 0 && pn->n_inputs == 1)
	{
		st->op = EP_HARDSIGMOID;
		st->p0 = node_attr_float(pn, "alpha", 0.2f);
		st->p1 = node_attr_float(pn, "beta", 0.5f);
	}
	else if (strcmp(op, "Clip") == 0)
	{
		st->op = EP_CLIP;
		if (m->opset < 11)
		{
			st->p0 = node_attr_float(pn, "min", -3.402823466e38f);
			st->p1 = node_attr_float(pn, "max", 3.402823466e38f);
		}
		else
		{
			st->p0 = -INFINITY;
			st->p1 = INFINITY;
			for (int i = 1; i < pn->n_inputs && i < 3; i++)
			{
				const ie_tensor *t;

				if (pn->inputs[i] < 0)
					continue;
				t = m->consts[pn->inputs[i]];
				if (t == NULL || t->dtype != IE_FLOAT || ie_tensor_numel(t) != 1)
					return false;
				if (i == 1)
					st->p0 = ((const float *) t->data)[0];
				else
					st->p1 = ((const float *) t->data)[0];
			}
		}
	}
	else if (strcmp(op, "BatchNormalization") == 0 && pn->n_inputs == 5 && rank > 0 &&
			 node_attr_int(pn, "training_mode", 0) == 0)
	{
		float		eps = node_attr_float(pn, "epsilon", 1e-5f);
		float	   *a,
				   *b;
		const float *p[4];

		for (int i = 1; i < 5; i++)
		{
			const ie_tensor *t = pn->inputs[i] >= 0 ? m->consts[pn->inputs[i]] : NULL;

			if (t == NULL || t->dtype != IE_FLOAT || t->ndim != 1 || t->dims[0] != channels)
				return false;
			p[i - 1] = t->data;
		}
		/* at load: one per channel, as the model's constants hold */
		a = malloc(channels * sizeof(float));
		b = malloc(channels * sizeof(float));
		if (a == NULL || b == NULL)
		{
			free(a);
			free(b);
			return false;
		}
		for (int64_t c = 0; c < channels; c++)
		{
			double		f = (double) p[0][c] / sqrt((double) p[3][c] + (double) eps);

			a[c] = (float) f;
			b[c] = (float) ((double) p[1][c] - (double) p[2][c] * f);
		}
		ep->consts[ep->n_consts++] = a;
		ep->consts[ep->n_consts++] = b;
		st->op = EP_AFFINE;
		st->ca = a;
		st->cb = b;
	}
	else
		return false;
	return true;
}

/* Whether any of the steps st[from..n) reads register r. */
static bool
reg_read_after(const ep_step *st, int n, int from, int r)
{
	for (int s = from; s < n; s++)
		if (st[s].a.reg == r || st[s].b.reg == r)
			return true;
	return false;
}

/* Whether operand a is a scalar constant. */
static bool
scalar_const(const ep_arg *a)
{
	return a->reg < 0 && a->c != NULL && !a->per_channel;
}

/*
 * Merges runs of steps into one pass where the arithmetic stays the same,
 * element by element: Mul by a constant then Add of a constant (MULADD),
 * x * Clip(x + k, lo, hi) / q as PaddleOCR exports hard-swish
 * (HARDSWISH), and MatMulInteger's Cast then its Mul by the scale
 * (I2F_MUL, the run-time operand's step when there is one).  The
 * registers the run used in between must not be read later.  Rewrites
 * ep->steps in place and returns the new count.
 */
static int
merge_steps(ie_epilogue *ep, int n)
{
	ep_step    *st = ep->steps;
	int			out = 0;

	for (int s = 0; s < n; s++)
	{
		/* normalise commutative constant operands to the b side */
		for (int t = s; t < n && t < s + 4; t++)
			if ((st[t].op == EP_ADD || st[t].op == EP_MUL) && st[t].a.reg < 0)
			{
				ep_arg		tmp = st[t].a;

				st[t].a = st[t].b;
				st[t].b = tmp;
			}
		if (s + 3 < n && st[s].op == EP_ADD && scalar_const(&st[s].b) &&
			st[s + 1].op == EP_CLIP && st[s + 1].a.reg == st[s].dst &&
			st[s + 2].op == EP_MUL && st[s + 2].a.reg >= 0 && st[s + 2].b.reg >= 0 &&
			((st[s + 2].a.reg == st[s].a.reg && st[s + 2].b.reg == st[s + 1].dst) ||
			 (st[s + 2].b.reg == st[s].a.reg && st[s + 2].a.reg == st[s + 1].dst)) &&
			st[s + 3].op == EP_DIV && st[s + 3].a.reg == st[s + 2].dst &&
			scalar_const(&st[s + 3].b) &&
			!reg_read_after(st, n, s + 2, st[s].dst) &&
			!reg_read_after(st, n, s + 3, st[s + 1].dst) &&
			!reg_read_after(st, n, s + 4, st[s + 2].dst))
		{
			ep_step		m = st[s + 3];

			m.op = EP_HARDSWISH;
			m.a = st[s].a;
			m.k = st[s].b.c[0];
			m.p0 = st[s + 1].p0;
			m.p1 = st[s + 1].p1;
			m.q = st[s + 3].b.c[0];
			memset(&m.b, 0, sizeof(m.b));
			m.b.reg = -1;
			st[out++] = m;
			s += 3;
			continue;
		}
		if (s + 1 < n && st[s].op == EP_I2F && st[s + 1].op == EP_MUL &&
			st[s + 1].a.reg == st[s].dst && st[s + 1].b.reg < 0 &&
			!reg_read_after(st, n, s + 2, st[s].dst))
		{
			/* MatMulInteger's Cast and its scaling (fusion.h) */
			ep_step		m = st[s + 1];

			m.op = EP_I2F_MUL;
			m.a = st[s].a;
			st[out++] = m;
			s += 1;
			continue;
		}
		if (s + 1 < n && st[s].op == EP_MUL && st[s].a.reg >= 0 && st[s].b.reg < 0 &&
			!st[s].b.rt && st[s + 1].op == EP_ADD && st[s + 1].a.reg == st[s].dst &&
			st[s + 1].b.reg < 0 && !st[s + 1].b.rt &&
			!reg_read_after(st, n, s + 2, st[s].dst))
		{
			ep_step		m = st[s];

			m.op = EP_MULADD;
			m.dst = st[s + 1].dst;
			m.e = st[s + 1].b;
			st[out++] = m;
			s += 1;
			continue;
		}
		st[out++] = st[s];
	}
	return out;
}

/*
 * Whether step st is x * s + t over a register with scalar or per-channel
 * constants (EP_MULADD, or EP_AFFINE whose arrays are per channel); sets
 * *s_out and *t_out to those constants (still owned by the epilogue).
 */
static bool
as_affine(const ep_step *st, ep_arg *s_out, ep_arg *t_out)
{
	if (st->op == EP_MULADD && st->a.reg >= 0)
	{
		*s_out = st->b;
		*t_out = st->e;
		return true;
	}
	if (st->op == EP_AFFINE && st->a.reg >= 0)
	{
		memset(s_out, 0, sizeof(*s_out));
		memset(t_out, 0, sizeof(*t_out));
		s_out->reg = t_out->reg = -1;
		s_out->c = st->ca;
		t_out->c = st->cb;
		s_out->per_channel = t_out->per_channel = 1;
		return true;
	}
	return false;
}

/*
 * Second pass over merged steps (Conv epilogues only: constants are one
 * value per call): [affine] activation [affine], each reading the one
 * before and nothing else reading what it wrote, becomes one EP_CHAIN step
 * computing the same operations in the same order in one loop.
 */
static int
merge_chain(ie_epilogue *ep, int n)
{
	ep_step    *st = ep->steps;
	int			out = 0;

	for (int s = 0; s < n; s++)
	{
		ep_step		c;
		int			at = s;
		int			src;

		memset(&c, 0, sizeof(c));
		c.op = EP_CHAIN;
		c.a.reg = c.b.reg = -1;
		if (as_affine(&st[at], &c.pre_s, &c.pre_t))
		{
			c.has_pre = true;
			src = st[at].a.reg;
			at++;
		}
		else
			src = st[at].a.reg;
		if (at < n && (at == s || (st[at].a.reg == st[at - 1].dst &&
								   !reg_read_after(st, n, at + 1, st[at - 1].dst))))
		{
			if (st[at].op == EP_RELU)
				c.act = ACT_RELU;
			else if (st[at].op == EP_CLIP)
				c.act = ACT_CLIP;
			else if (st[at].op == EP_HARDSWISH)
				c.act = ACT_HARDSWISH;
			if (c.act != ACT_NONE)
			{
				c.k = st[at].k;
				c.p0 = st[at].p0;
				c.p1 = st[at].p1;
				c.q = st[at].q;
				if (at == s)
					src = st[at].a.reg;
				at++;
			}
		}
		if (at < n && at > s && st[at].a.reg == st[at - 1].dst &&
			!reg_read_after(st, n, at + 1, st[at - 1].dst) &&
			as_affine(&st[at], &c.post_s, &c.post_t))
		{
			c.has_post = true;
			at++;
		}
		/* worth it only when it replaces two steps or more */
		if (at - s >= 2 && src >= 0 && (c.has_pre || c.has_post))
		{
			c.a.reg = src;
			c.dst = st[at - 1].dst;
			st[out++] = c;
			s = at - 1;
			continue;
		}
		st[out++] = st[s];
	}
	return out;
}

/*
 * The plan index at which value v is computed as the plan stands (a node
 * fused so far no longer computes anything; a fused node computes its
 * chain's last value, at run_at[k]), or -1 for a graph input or constant.
 */
static int
computed_at(const ie_model *m, int v, const bool *fused, const int *run_at)
{
	for (int k = 0; k < m->n_nodes; k++)
		for (int j = 0; j < m->nodes[k].n_outputs && !fused[k]; j++)
			if (m->nodes[k].outputs[j] == v)
				return run_at[k];
	return -1;
}

/*
 * Builds the epilogue of Conv, MatMul or MatMulInteger node k (plan index)
 * and records which nodes it absorbs in fused[]; returns NULL when nothing
 * fuses (or out of memory, which only means no fusion).  n_read[v] counts
 * the node inputs reading value v over the whole plan; run_at[j] is
 * where node j runs (computed_at).  *place gets the plan index the fused
 * node is to run at: k, or, where its run-time operand is computed after
 * k (ONNX Runtime writes the scales' Mul after the MatMulInteger), the
 * index of the Mul that reads it, after which everything the fused node
 * reads exists and before which nothing reads what it writes (the chain's
 * last value, made at or after that Mul).  *rt_node gets the index of
 * that Mul where there is a run-time operand.
 */
static ie_epilogue *
build_epilogue(const ie_model *m, int k, const int *n_read, bool *fused,
			   const int *run_at, int *out_value, int *place, int *rt_node)
{
	const ie_plan_node *conv = &m->nodes[k];
	const ie_tensor *W;
	int			rank;
	int64_t		channels;
	int			vals[EP_MAX_STEPS + 1];
	int			nodes[EP_MAX_STEPS];
	int			n_vals = 1,
				n_steps = 0,
				best = 0;
	ie_epilogue *ep;

	*place = k;
	if (conv->n_inputs < 2 || conv->n_outputs != 1 || conv->outputs[0] < 0 ||
		conv->inputs[1] < 0)
		return NULL;
	W = m->consts[conv->inputs[1]];
	if (strcmp(conv->op_type, "MatMulInteger") == 0)
	{
		/* as MatMul's below, for an int8 or uint8 B */
		if (W != NULL && ((W->dtype != IE_INT8 && W->dtype != IE_UINT8) || W->ndim != 2))
			return NULL;
		rank = 0;
		channels = W != NULL ? W->dims[1] : -1;
	}
	else if (strcmp(conv->op_type, "MatMul") == 0)
	{
		/* B [K, N]: the output's last axis has N columns; rank 0 tells
		 * make_step that constants run along the row.  A B computed at
		 * run time (attention's products): N is unknown here, so only
		 * scalar constants (channels -1 matches no per-column one) */
		if (W != NULL && (W->dtype != IE_FLOAT || W->ndim != 2))
			return NULL;
		rank = 0;
		channels = W != NULL ? W->dims[1] : -1;
	}
	else if (W == NULL || W->dtype != IE_FLOAT)
		return NULL;
	else
	{
		if (W->ndim < 3)
			return NULL;
		rank = W->ndim;
		/* Conv: W [M, C/group, k...]; ConvTranspose: W [C, M/group, k...] */
		channels = strcmp(conv->op_type, "ConvTranspose") == 0 ?
			W->dims[1] * node_attr_int(conv, "group", 1) : W->dims[0];
	}
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return NULL;
	ep->channels = channels;
	ep->from_i32 = strcmp(conv->op_type, "MatMulInteger") == 0;
	ep->rt_value = -1;
	ep->rt_input = -1;
	vals[0] = conv->outputs[0];

	for (int j = k + 1; j < m->n_nodes && j <= k + EP_WINDOW && n_steps < EP_MAX_STEPS; j++)
	{
		const ie_plan_node *pn = &m->nodes[j];
		bool		reads = false;
		ep_step		st;

		for (int i = 0; i < pn->n_inputs; i++)
			if (pn->inputs[i] >= 0 && chain_reg(vals, n_vals, pn->inputs[i]) >= 0)
				reads = true;
		if (!reads)
			continue;
		/* an earlier chain took this node (a value of this chain was its
		 * run-time operand: Mul(Cast(MMI1), Cast(MMI2))): the value is
		 * read there, outside this chain */
		if (fused[j])
			break;
		if (!make_step(m, pn, vals, n_vals, rank, channels, ep, &st))
			break;				/* a value of the chain escapes here */
		st.dst = n_vals;
		vals[n_vals++] = pn->outputs[0];
		ep->steps[n_steps] = st;
		nodes[n_steps++] = j;

		/* does the chain so far close: every value but the last read only inside? */
		{
			bool		closed = true;

			for (int r = 0; r < n_vals - 1 && closed; r++)
			{
				int			inside = 0;

				if (m->is_output != NULL && m->is_output[vals[r]])
					closed = false;
				for (int s = 0; s < n_steps; s++)
				{
					const ie_plan_node *q = &m->nodes[nodes[s]];

					for (int i = 0; i < q->n_inputs; i++)
						if (q->inputs[i] == vals[r])
							inside++;
				}
				if (inside != n_read[vals[r]])
					closed = false;
			}
			if (closed)
				best = n_steps;
		}
	}
	if (best == 0)
	{
		ie_epilogue_destroy(&ep);
		return NULL;
	}
	if (best < 2)
		ep->rt_value = -1;		/* its Mul is not in the closed chain */
	/* a MatMul of two 1-D inputs is 0-D, and a 1-D constant of one value
	 * makes the graph's result [1] (ie_epilogue_min_rank) */
	for (int s = 0; s < best; s++)
		if (ep->steps[s].a.vec || ep->steps[s].b.vec)
			ep->min_rank = 1;
	ep->n_fused = best;
	ep->out_reg = best;
	ep->n_steps = merge_steps(ep, best);
	if (rank > 0)
		ep->n_steps = merge_chain(ep, ep->n_steps);
	if (ep->rt_value >= 0)
	{
		int			p = computed_at(m, ep->rt_value, fused, run_at);

		/* i32_step_ok made the run-time Mul merge into the first step */
		if (ep->steps[0].op != EP_I2F_MUL || !ep->steps[0].b.rt)
		{
			ie_epilogue_destroy(&ep);
			return NULL;
		}
		if (p > k)
			*place = nodes[1];
		*rt_node = nodes[1];
		ep->rt_input = EP_RT_INPUT;
	}
	for (int s = 0; s < best; s++)
		fused[nodes[s]] = true;
	*out_value = vals[best];
	return ep;
}

/*
 * Gives fused MatMulInteger pn its epilogue's run-time operand v as input
 * EP_RT_INPUT (inputs it leaves out before that omitted, -1), with the
 * type check of the Mul (mul) that read it narrowed to float, the type of
 * the Mul's other operand, the Cast's output.  0, or -1 when out of
 * memory.
 */
static int
add_runtime_input(ie_plan_node *pn, const ie_plan_node *mul, int v)
{
	int			n = EP_RT_INPUT + 1;
	int		   *inputs = realloc(pn->inputs, n * sizeof(int));
	ie_input_check chk = {.types = ~0u, .same_as = -1, .formal = NULL};

	if (inputs == NULL)
		return -1;
	pn->inputs = inputs;
	for (int i = pn->n_inputs; i < n; i++)
		inputs[i] = -1;
	inputs[EP_RT_INPUT] = v;
	for (int i = 0; i < mul->n_inputs && mul->checks != NULL; i++)
		if (mul->inputs[i] == v)
		{
			chk = mul->checks[i];
			chk.types = (uint32_t) 1 << IE_FLOAT;
			chk.same_as = -1;
			break;
		}
	if (pn->checks != NULL)
	{
		ie_input_check *checks = realloc(pn->checks, n * sizeof(ie_input_check));

		if (checks == NULL)
			return -1;
		pn->checks = checks;
		memset(checks + pn->n_inputs, 0, (n - pn->n_inputs) * sizeof(ie_input_check));
		checks[EP_RT_INPUT] = chk;
	}
	pn->n_inputs = n;
	return 0;
}

/*
 * Whether value v is known at load to be double: a double initializer or
 * constant, or a graph input declared double.  The fused steps compute in
 * float, so a MatMul over such a value keeps its following nodes apart
 * (a double product whose type only shows at run time refuses a fused
 * chain instead: ops_matmul.c).
 */
static bool
value_is_double(const ie_model *m, int v)
{
	if (v < 0)
		return false;
	if (m->consts[v] != NULL)
		return m->consts[v]->dtype == IE_DOUBLE;
	for (int i = 0; i < m->n_inputs; i++)
		if (m->inputs[i].value == v)
			return m->inputs[i].dtype == IE_DOUBLE;
	return false;
}

/*
 * Rewrites m's plan, fusing chains into Convs, MatMuls and MatMulIntegers;
 * see fusion.h.  A fused node whose run-time operand is computed after it
 * moves to the place of the Mul that read it (build_epilogue).
 */
int
ie_fuse_plan(ie_model *m, char *err, size_t errlen)
{
	int			n = m->n_nodes ? m->n_nodes : 1;
	int		   *n_read = calloc(m->n_values ? m->n_values : 1, sizeof(int));
	bool	   *fused = calloc(n, sizeof(bool));
	int		   *run_at = malloc(n * sizeof(int));	/* node k runs at run_at[k] */
	int		   *moved_in = malloc(n * sizeof(int));	/* node run at k's place, or -1 */
	ie_plan_node *nodes = malloc(n * sizeof(ie_plan_node));
	int			n_keep = 0;

	if (n_read == NULL || fused == NULL || run_at == NULL || moved_in == NULL ||
		nodes == NULL)
		goto oom;
	for (int k = 0; k < m->n_nodes; k++)
	{
		run_at[k] = k;
		moved_in[k] = -1;
		for (int i = 0; i < m->nodes[k].n_inputs; i++)
			if (m->nodes[k].inputs[i] >= 0)
				n_read[m->nodes[k].inputs[i]]++;
	}
	for (int k = 0; k < m->n_nodes; k++)
	{
		ie_plan_node *pn = &m->nodes[k];
		int			out,
					rt_node = -1;

		if (fused[k] || (strcmp(pn->op_type, "Conv") != 0 &&
						 strcmp(pn->op_type, "ConvTranspose") != 0 &&
						 strcmp(pn->op_type, "MatMul") != 0 &&
						 strcmp(pn->op_type, "MatMulInteger") != 0))
			continue;
		if (strcmp(pn->op_type, "MatMul") == 0 && pn->n_inputs >= 2 &&
			(value_is_double(m, pn->inputs[0]) || value_is_double(m, pn->inputs[1])))
			continue;
		pn->epilogue = build_epilogue(m, k, n_read, fused, run_at, &out, &run_at[k],
									  &rt_node);
		if (pn->epilogue == NULL)
			continue;
		pn->outputs[0] = out;
		if (rt_node >= 0 &&
			add_runtime_input(pn, &m->nodes[rt_node], pn->epilogue->rt_value) != 0)
			goto oom;
		if (run_at[k] != k)
			moved_in[run_at[k]] = k;
	}
	/* drop the fused nodes, keeping the order, a moved node in the place
	 * of the fused node it runs at */
	for (int k = 0; k < m->n_nodes; k++)
	{
		if (run_at[k] != k)
			continue;
		if (fused[k])
		{
			ie_plan_node_free(&m->nodes[k]);
			if (moved_in[k] >= 0)
				nodes[n_keep++] = m->nodes[moved_in[k]];
			continue;
		}
		nodes[n_keep++] = m->nodes[k];
	}
	free(m->nodes);
	m->nodes = nodes;
	m->n_nodes = n_keep;
	free(n_read);
	free(fused);
	free(run_at);
	free(moved_in);
	return 0;

oom:
	free(n_read);
	free(fused);
	free(run_at);
	free(moved_in);
	free(nodes);
	snprintf(err, errlen, "model '%s': out of memory", m->name);
	return -1;
}
