/*
 * ops_gather.c
 *	  ONNX operators that select or write elements by index: Gather,
 *	  GatherElements, GatherND, ScatterND, ScatterElements and Scatter.
 *
 * Indices are int32 or int64; a negative index counts from the end of its
 * axis (opset 11+, accepted at every opset), and an index outside
 * [-size, size - 1] is an error naming the index, its position and the
 * axis, never a read out of bounds.  Data may be any type the engine holds
 * (elements are copied as bytes).  Stateless: safe from any thread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"

/* Input idx, or NULL with an error when the node lacks it. */
static const ie_tensor *
need_input(ie_node_ctx *ctx, int idx, const char *what)
{
	if (idx >= ctx->n_inputs || ctx->inputs[idx] == NULL)
	{
		ie_op_error(ctx, "missing input %d (%s)", idx, what);
		return NULL;
	}
	return ctx->inputs[idx];
}

/*
 * Attribute axis (default 0) normalised against rank; -1 after an error
 * when it is out of range.
 */
static int
read_axis(ie_node_ctx *ctx, int rank)
{
	int64_t		axis = ie_attr_int(ctx, "axis", 0);

	if (axis < -rank || axis >= rank)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) axis, rank);
	return (int) (axis < 0 ? axis + rank : axis);
}

/*
 * Index i of the int32/int64 tensor ind, checked against an axis of size
 * dim and made non-negative into *out; -1 after an error.
 */
static int
read_index(ie_node_ctx *ctx, const ie_tensor *ind, int64_t i, int axis,
		   int64_t dim, int64_t *out)
{
	int64_t		v = ind->dtype == IE_INT64 ? ((const int64_t *) ind->data)[i] :
		((const int32_t *) ind->data)[i];

	if (v < -dim || v >= dim)
		return ie_op_error(ctx, "index %lld (at position %lld) is out of range "
						   "[%lld, %lld] for axis %d", (long long) v, (long long) i,
						   (long long) -dim, (long long) (dim - 1), axis);
	*out = v < 0 ? v + dim : v;
	return 0;
}

/* Checks the indices input is int32 or int64. */
static int
check_indices(ie_node_ctx *ctx, const ie_tensor *ind)
{
	if (ind->dtype != IE_INT64 && ind->dtype != IE_INT32)
		return ie_op_error(ctx, "indices must be int64 or int32, got %s",
						   ie_dtype_name(ind->dtype));
	return 0;
}

/*
 * Gather (opsets 1, 11, 13): out = data indexed along axis by indices;
 * out shape = data.shape[:axis] + indices.shape + data.shape[axis+1:].
 * Each selected slice is one contiguous block, so this is a memcpy per
 * (outer, index) pair (an embedding look-up is one row per token).
 */
static int
op_gather(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *ind = need_input(ctx, 1, "indices");
	int64_t		dims[IE_MAX_DIMS],
				outer = 1,
				inner = 1,
				n_idx,
				dim;
	int			axis,
				nd = 0;
	int64_t    *idx = NULL;
	size_t		es,
				block;
	ie_tensor  *o;
	char	   *dst;

	if (x == NULL || ind == NULL || check_indices(ctx, ind) != 0)
		return -1;
	if (x->ndim == 0)
		return ie_op_error(ctx, "data must have rank 1 or more");
	if ((axis = read_axis(ctx, x->ndim)) < 0)
		return -1;
	if (x->ndim - 1 + ind->ndim > IE_MAX_DIMS)
		return ie_op_error(ctx, "output rank %d exceeds the engine's limit of %d",
						   x->ndim - 1 + ind->ndim, IE_MAX_DIMS);
	for (int d = 0; d < axis; d++)
	{
		dims[nd++] = x->dims[d];
		outer *= x->dims[d];
	}
	for (int d = 0; d < ind->ndim; d++)
		dims[nd++] = ind->dims[d];
	for (int d = axis + 1; d < x->ndim; d++)
	{
		dims[nd++] = x->dims[d];
		inner *= x->dims[d];
	}
	dim = x->dims[axis];
	n_idx = ie_tensor_numel(ind);
	idx = ie_scratch_new(IE_INT64, 1, &n_idx);
	if (idx == NULL)
		return ie_op_error(ctx, "out of memory for the indices read as int64");
	for (int64_t i = 0; i < n_idx; i++)
		if (read_index(ctx, ind, i, axis, dim, &idx[i]) != 0)
			goto fail;
	o = ie_tensor_new(x->dtype, nd, dims);
	if (o == NULL)
	{
		ie_op_error(ctx, "out of memory for the output");
		goto fail;
	}
	ctx->outputs[0] = o;
	es = ie_dtype_size(x->dtype);
	block = (size_t) inner * es;
	dst = o->data;
	if (block > 0)
		for (int64_t r = 0; r < outer; r++)
		{
			const char *src = (const char *) x->data + (size_t) (r * dim) * block;

			for (int64_t i = 0; i < n_idx; i++)
			{
				memcpy(dst, src + (size_t) idx[i] * block, block);
				dst += block;
			}
		}
	free(idx);
	return 0;
fail:
	free(idx);
	return -1;
}

/*
 * The indices' shape checks GatherElements and ScatterElements share:
 * indices have data's rank nd, then (ScatterElements: u, NULL for
 * GatherElements) updates have the indices' shape, then off axis no dim
 * of the indices is longer than data's; errors in that order.  Fills
 * xstride[0..nd) with data's row-major strides (elements).  Returns 0, or
 * -1 with the node's error set.
 */
static int
element_indices_shape(ie_node_ctx *ctx, const ie_tensor *x, const ie_tensor *ind,
					  const ie_tensor *u, int axis, int64_t *xstride)
{
	int			nd = x->ndim;
	int64_t		acc = 1;
	char		s1[128],
				s2[128];

	if (ind->ndim != nd)
		return ie_op_error(ctx, "indices have rank %d, data has rank %d", ind->ndim, nd);
	/* updates [1, 2], indices [1, 4]: "updates have shape [1, 2], indices [1, 4]" */
	if (u != NULL && (u->ndim != nd || memcmp(u->dims, ind->dims, sizeof(int64_t) * nd) != 0))
		return ie_op_error(ctx, "updates have shape %s, indices %s",
						   ie_shape_str(s1, sizeof(s1), u->ndim, u->dims),
						   ie_shape_str(s2, sizeof(s2), nd, ind->dims));
	for (int d = 0; d < nd; d++)
		if (d != axis && ind->dims[d] > x->dims[d])
			return ie_op_error(ctx, "indices shape %s exceeds data shape %s on axis %d",
							   ie_shape_str(s1, sizeof(s1), nd, ind->dims),
							   ie_shape_str(s2, sizeof(s2), nd, x->dims), d);
	for (int d = nd - 1; d >= 0; d--)
	{
		xstride[d] = acc;
		acc *= x->dims[d];
	}
	return 0;
}

/*
 * Steps pos, a position in the indices' shape dims (row-major, nd axes),
 * to the next element and returns base updated to match: base is the
 * data offset of pos with the axis coordinate left out (data strides
 * xstride), as GatherElements and ScatterElements walk their indices.
 */
static int64_t
next_element_pos(int64_t *pos, const int64_t *dims, const int64_t *xstride,
				 int nd, int axis, int64_t base)
{
	for (int d = nd - 1; d >= 0; d--)
	{
		pos[d]++;
		if (d != axis)
			base += xstride[d];
		if (pos[d] < dims[d])
			break;
		if (d != axis)
			base -= xstride[d] * pos[d];
		pos[d] = 0;
	}
	return base;
}

/*
 * GatherElements (opsets 11, 13): out has the shape of indices (same rank
 * as data, each dim at most data's except along axis);
 * out[i0, .., ia, ..] = data[i0, .., indices[i0, .., ia, ..], ..].
 */
static int
op_gather_elements(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *ind = need_input(ctx, 1, "indices");
	int64_t		xstride[IE_MAX_DIMS],
				pos[IE_MAX_DIMS] = {0},
				n,
				base = 0;
	int			axis,
				nd;
	size_t		es;
	ie_tensor  *o;

	if (x == NULL || ind == NULL || check_indices(ctx, ind) != 0)
		return -1;
	nd = x->ndim;
	if (nd == 0)
		return ie_op_error(ctx, "data must have rank 1 or more");
	if ((axis = read_axis(ctx, nd)) < 0)
		return -1;
	if (element_indices_shape(ctx, x, ind, NULL, axis, xstride) != 0)
		return -1;
	if ((o = ie_tensor_new(x->dtype, nd, ind->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = o;
	n = ie_tensor_numel(o);
	es = ie_dtype_size(x->dtype);
	/* base: data offset of pos with the axis coordinate left out */
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		k;

		if (read_index(ctx, ind, i, axis, x->dims[axis], &k) != 0)
			return -1;
		memcpy((char *) o->data + i * es,
			   (const char *) x->data + (base + k * xstride[axis]) * es, es);
		base = next_element_pos(pos, ind->dims, xstride, nd, axis, base);
	}
	return 0;
}

/*
 * GatherND (opsets 11, 12, 13): with b = batch_dims, data [B..., D...] and
 * indices [B..., M..., k] (the first b dims shared), each k-tuple of
 * indices picks the slice data[batch, i1, .., ik] of shape
 * data.shape[b+k:]; out shape = data.shape[:b] + indices.shape[b:-1] +
 * data.shape[b+k:].
 */
static int
op_gather_nd(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *ind = need_input(ctx, 1, "indices");
	int64_t		b = ie_attr_int(ctx, "batch_dims", 0);
	int64_t		dims[IE_MAX_DIMS],
				xstride[IE_MAX_DIMS],
				acc = 1,
				n_batch = 1,
				n_tuples = 1,
				slice = 1,
				k;
	int			nd = 0;
	size_t		es,
				block;
	ie_tensor  *o;
	char	   *dst;

	if (x == NULL || ind == NULL || check_indices(ctx, ind) != 0)
		return -1;
	if (ind->ndim < 1 || x->ndim < 1)
		return ie_op_error(ctx, "data and indices must have rank 1 or more");
	k = ind->dims[ind->ndim - 1];
	if (b < 0 || b >= ind->ndim || b >= x->ndim)
		return ie_op_error(ctx, "batch_dims %lld is out of range", (long long) b);
	if (k < 1 || k > x->ndim - b)
		return ie_op_error(ctx, "the last indices dim (%lld) must be in [1, %lld]",
						   (long long) k, (long long) (x->ndim - b));
	for (int d = 0; d < b; d++)
		if (ind->dims[d] != x->dims[d])
			return ie_op_error(ctx, "batch dim %d differs: data %lld, indices %lld", d,
							   (long long) x->dims[d], (long long) ind->dims[d]);
	if (b + (ind->ndim - 1 - b) + (x->ndim - b - k) > IE_MAX_DIMS)
		return ie_op_error(ctx, "output rank exceeds the engine's limit of %d", IE_MAX_DIMS);
	for (int d = 0; d < b; d++)
	{
		dims[nd++] = x->dims[d];
		n_batch *= x->dims[d];
	}
	for (int d = (int) b; d < ind->ndim - 1; d++)
	{
		dims[nd++] = ind->dims[d];
		n_tuples *= ind->dims[d];
	}
	for (int d = (int) (b + k); d < x->ndim; d++)
	{
		dims[nd++] = x->dims[d];
		slice *= x->dims[d];
	}
	for (int d = x->ndim - 1; d >= 0; d--)
	{
		xstride[d] = acc;
		acc *= x->dims[d];
	}
	if ((o = ie_tensor_new(x->dtype, nd, dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = o;
	es = ie_dtype_size(x->dtype);
	block = (size_t) slice * es;
	dst = o->data;
	for (int64_t bi = 0; bi < n_batch; bi++)
	{
		/* data offset of batch bi: its first b coordinates */
		int64_t		base = b > 0 ? bi * xstride[b - 1] : 0;

		for (int64_t t = 0; t < n_tuples; t++)
		{
			int64_t		off = base,
						pos = (bi * n_tuples + t) * k;

			for (int64_t j = 0; j < k; j++)
			{
				int64_t		v;

				if (read_index(ctx, ind, pos + j, (int) (b + j), x->dims[b + j], &v) != 0)
					return -1;
				off += v * xstride[b + j];
			}
			if (block > 0)
				memcpy(dst, (const char *) x->data + (size_t) off * es, block);
			dst += block;
		}
	}
	return 0;
}

/* ScatterND's reductions, in the order scatter_reduction lists them. */
enum scatter_red
{
	SCATTER_NONE,
	SCATTER_ADD,
	SCATTER_MUL,
	SCATTER_MAX,
	SCATTER_MIN
};

/*
 * ScatterND's reduction (enum scatter_red) into *red; -1 for another one,
 * or for max and min below opset 18, which brought them.
 */
static int
scatter_reduction(ie_node_ctx *ctx, int *red)
{
	static const char *const reductions[] = {"none", "add", "mul", "max", "min", NULL};

	if (ie_attr_choice(ctx, "reduction", "none", reductions, red) != 0)
		return -1;
	if ((*red == SCATTER_MAX || *red == SCATTER_MIN) && ctx->opset < 18)
		return ie_op_error(ctx, "reduction \"%s\" needs opset 18 or later (the model imports %d)",
						   reductions[*red], ctx->opset);
	return 0;
}

/* ScatterND's reduction (scatter_reduction): run by the loader on every node. */
static int
scatter_nd_check_attrs(ie_node_ctx *ctx)
{
	int			red;

	return scatter_reduction(ctx, &red);
}

/*
 * dst[i] = dst[i] (red) src[i] for n elements of type T; IS_NAN(v) says
 * whether v is a NaN, which max and min return whichever side it is on
 * (numpy.maximum and numpy.minimum, as the ONNX reference uses).
 */
#define COMBINE(T, IS_NAN) \
	do { \
		T		   *d = dst; \
		const T    *s = src; \
		for (int64_t i = 0; i < n; i++) \
		{ \
			switch (red) \
			{ \
				case SCATTER_ADD: d[i] = (T) (d[i] + s[i]); break; \
				case SCATTER_MUL: d[i] = (T) (d[i] * s[i]); break; \
				case SCATTER_MAX: \
					if (s[i] > d[i] || IS_NAN(s[i])) \
						d[i] = s[i]; \
					break; \
				default: \
					if (s[i] < d[i] || IS_NAN(s[i])) \
						d[i] = s[i]; \
					break; \
			} \
		} \
	} while (0)
#define NEVER_NAN(v) false

/*
 * Combines n elements of dt at src into dst by red (not SCATTER_NONE): float,
 * double, int32 and int64; 0, or -1 after an error naming another type.
 */
static int
combine(ie_node_ctx *ctx, int red, ie_dtype dt, void *dst, const void *src, int64_t n)
{
	switch (dt)
	{
		case IE_FLOAT: COMBINE(float, isnan); break;
		case IE_DOUBLE: COMBINE(double, isnan); break;
		case IE_INT32: COMBINE(int32_t, NEVER_NAN); break;
		case IE_INT64: COMBINE(int64_t, NEVER_NAN); break;
		default:
			return ie_op_error(ctx, "reduction on element type %s is not supported",
							   ie_dtype_name(dt));
	}
	return 0;
}
#undef COMBINE
#undef NEVER_NAN

/*
 * ScatterND (opsets 11, 13, 16, 18; ONNX Operators.md): the output is a
 * copy of data in which, for each index tuple t of indices (its last dim
 * k, 1 <= k <= rank of data), the slice data[t] (shape data.shape[k:]) is
 * replaced by the matching slice of updates (shape indices.shape[:-1] +
 * data.shape[k:]), or, with reduction add or mul (opset 16), max or min
 * (opset 18; a NaN on either side wins), combined with it (float, double,
 * int32, int64).  Tuples are applied in order, so a
 * repeated index keeps the last update, as ONNX Runtime does (the spec
 * leaves it undefined).
 */
static int
op_scatter_nd(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *ind = need_input(ctx, 1, "indices");
	const ie_tensor *u = need_input(ctx, 2, "updates");
	int64_t		xstride[IE_MAX_DIMS],
				acc = 1,
				n_tuples = 1,
				slice = 1,
				k;
	int			red;
	size_t		es,
				block;
	ie_tensor  *o;

	if (x == NULL || ind == NULL || u == NULL || check_indices(ctx, ind) != 0 ||
		scatter_reduction(ctx, &red) != 0)
		return -1;
	if (ind->ndim < 1 || x->ndim < 1)
		return ie_op_error(ctx, "data and indices must have rank 1 or more");
	if (u->dtype != x->dtype)
		return ie_op_error(ctx, "updates are %s, data %s", ie_dtype_name(u->dtype),
						   ie_dtype_name(x->dtype));
	k = ind->dims[ind->ndim - 1];
	if (k < 1 || k > x->ndim)
		return ie_op_error(ctx, "the last indices dim (%lld) must be in [1, %d]",
						   (long long) k, x->ndim);
	if (u->ndim != ind->ndim - 1 + x->ndim - k)
		return ie_op_error(ctx, "updates have rank %d, expected %lld", u->ndim,
						   (long long) (ind->ndim - 1 + x->ndim - k));
	for (int d = 0; d < ind->ndim - 1; d++)
	{
		if (u->dims[d] != ind->dims[d])
			return ie_op_error(ctx, "updates dim %d is %lld, indices have %lld", d,
							   (long long) u->dims[d], (long long) ind->dims[d]);
		n_tuples *= ind->dims[d];
	}
	for (int d = (int) k; d < x->ndim; d++)
	{
		if (u->dims[ind->ndim - 1 + d - k] != x->dims[d])
			return ie_op_error(ctx, "updates dim %lld is %lld, data has %lld",
							   (long long) (ind->ndim - 1 + d - k),
							   (long long) u->dims[ind->ndim - 1 + d - k],
							   (long long) x->dims[d]);
		slice *= x->dims[d];
	}
	for (int d = x->ndim - 1; d >= 0; d--)
	{
		xstride[d] = acc;
		acc *= x->dims[d];
	}
	if ((o = ie_tensor_new_uninit(x->dtype, x->ndim, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = o;
	if (x->nbytes > 0)
		memcpy(o->data, x->data, x->nbytes);
	es = ie_dtype_size(x->dtype);
	block = (size_t) slice * es;
	for (int64_t t = 0; t < n_tuples; t++)
	{
		int64_t		off = 0;
		char	   *dst;
		const char *src = (const char *) u->data + (size_t) t * block;

		for (int64_t j = 0; j < k; j++)
		{
			int64_t		v;

			if (read_index(ctx, ind, t * k + j, (int) j, x->dims[j], &v) != 0)
				return -1;
			off += v * xstride[j];
		}
		dst = (char *) o->data + (size_t) off * es;
		if (red == SCATTER_NONE)
		{
			if (block > 0)
				memcpy(dst, src, block);
		}
		else if (combine(ctx, red, x->dtype, dst, src, slice) != 0)
			return -1;
	}
	return 0;
}

/*
 * ScatterElements (opsets 11, 13, 16, 18) and its deprecated alias Scatter
 * (opsets 9, 11) (Operators.md "ScatterElements", "Scatter"): data,
 * indices (int32 or int64, data's rank, each dim at most data's off axis)
 * and updates (indices' shape, data's type); the output is a copy of data
 * in which, for each position p of indices, the element at p with its axis
 * coordinate replaced by indices[p] (in [-s, s-1], s = data's axis size)
 * gets updates[p], or, with reduction (opset 16: add, mul; 18: max, min),
 * is combined with it (float, double, int32, int64).  Positions are taken
 * in row-major order, so a repeated index keeps the last update, as ONNX
 * Runtime and the reference do.  Any type without a reduction.
 */
static int
op_scatter_elements(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *ind = need_input(ctx, 1, "indices");
	const ie_tensor *u = need_input(ctx, 2, "updates");
	int64_t		xstride[IE_MAX_DIMS],
				pos[IE_MAX_DIMS] = {0},
				n,
				base = 0;
	int			axis,
				nd,
				red = SCATTER_NONE;
	size_t		es;
	ie_tensor  *o;

	if (x == NULL || ind == NULL || u == NULL || check_indices(ctx, ind) != 0)
		return -1;
	if (strcmp(ctx->op_type, "Scatter") != 0 && scatter_reduction(ctx, &red) != 0)
		return -1;
	nd = x->ndim;
	if (nd == 0)
		return ie_op_error(ctx, "data must have rank 1 or more");
	if ((axis = read_axis(ctx, nd)) < 0)
		return -1;
	if (u->dtype != x->dtype)
		return ie_op_error(ctx, "updates are %s, data %s", ie_dtype_name(u->dtype),
						   ie_dtype_name(x->dtype));
	if (element_indices_shape(ctx, x, ind, u, axis, xstride) != 0)
		return -1;
	if ((o = ie_tensor_new_uninit(x->dtype, nd, x->dims)) == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = o;
	if (x->nbytes > 0)
		memcpy(o->data, x->data, x->nbytes);
	n = ie_tensor_numel(ind);
	es = ie_dtype_size(x->dtype);
	/* base: data offset of pos with the axis coordinate left out */
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		k;
		char	   *dst;
		const char *src = (const char *) u->data + (size_t) i * es;

		if (read_index(ctx, ind, i, axis, x->dims[axis], &k) != 0)
			return -1;
		dst = (char *) o->data + (size_t) (base + k * xstride[axis]) * es;
		if (red == SCATTER_NONE)
			memcpy(dst, src, es);
		else if (combine(ctx, red, x->dtype, dst, src, 1) != 0)
			return -1;
		base = next_element_pos(pos, ind->dims, xstride, nd, axis, base);
	}
	return 0;
}

const ie_op_def ie_ops_gather[] = {
	{"Gather", op_gather},
	{"GatherElements", op_gather_elements},
	{"GatherND", op_gather_nd},
	{"ScatterND", op_scatter_nd},
	{"ScatterElements", op_scatter_elements},
	{"Scatter", op_scatter_elements},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_gather[] = {
	{"ScatterND", scatter_nd_check_attrs},
	{"ScatterElements", scatter_nd_check_attrs},
	{NULL, NULL}
};
