/*
 * ops_shape.c
 *	  ONNX operators that move, reshape, replicate, retype or make data
 *	  without arithmetic on it: Constant, Concat, Reshape, Transpose,
 *	  Squeeze, Unsqueeze, Slice, Shape, Size, Cast, Flatten, Expand, Tile,
 *	  ConstantOfShape, Range, Split, Pad, DepthToSpace, SpaceToDepth.
 *
 * Every shape is computed from the actual inputs at run time.  Attribute
 * forms of older opsets (Squeeze/Unsqueeze axes before 13, Slice starts/
 * ends/axes before 10) and input forms of newer ones are both handled, by
 * ctx->opset.  These operators work on any element type the engine holds
 * (they copy bytes), except Cast, which lists its types.  Reshape,
 * Flatten, Squeeze and Unsqueeze move their input's buffer instead of
 * copying it when the executor says no one reads the input afterwards
 * (ctx->donor); large Transposes split into tasks on the engine's pool.
 * Stateless: safe from any thread.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/pool.h"

/*
 * Output 0 of the node: a new tensor of the given type and shape, zeroed
 * unless uninit (for operators that write every element).
 */
static ie_tensor *
new_output_as(ie_node_ctx *ctx, ie_dtype dt, int ndim, const int64_t *dims, bool uninit)
{
	ie_tensor  *o;

	if (ctx->n_outputs < 1)
	{
		ie_op_error(ctx, "expects an output");
		return NULL;
	}
	o = uninit ? ie_tensor_new_uninit(dt, ndim, dims) : ie_tensor_new(dt, ndim, dims);
	if (o == NULL)
	{
		ie_op_error(ctx, "out of memory for the output (type %s, rank %d)",
					ie_dtype_name(dt), ndim);
		return NULL;
	}
	ctx->outputs[0] = o;
	return o;
}

/* new_output_as, zeroed. */
static ie_tensor *
new_output(ie_node_ctx *ctx, ie_dtype dt, int ndim, const int64_t *dims)
{
	return new_output_as(ctx, dt, ndim, dims, false);
}

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

/* Normalises a possibly negative axis against rank; -1 when out of range. */
static int
norm_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return (axis < 0 || axis >= rank) ? -1 : (int) axis;
}

/*
 * Reads a 1-D int64/int32 input (axes, shape, starts...) into vals (at most
 * max); returns the count, or -1 after an error.
 */
static int
read_ints(ie_node_ctx *ctx, const ie_tensor *t, const char *what,
		  int64_t *vals, int max)
{
	int64_t		n;

	if (t->dtype != IE_INT64 && t->dtype != IE_INT32)
		return ie_op_error(ctx, "%s must be int64 or int32, got %s", what,
						   ie_dtype_name(t->dtype));
	if (t->ndim > 1)
		return ie_op_error(ctx, "%s must be 1-D, got rank %d", what, t->ndim);
	n = ie_tensor_numel(t);
	if (n > max)
		return ie_op_error(ctx, "%s has %lld values, more than the engine's limit of %d", what,
						   (long long) n, max);
	for (int64_t i = 0; i < n; i++)
		ie_tensor_get_i64(t, i, &vals[i]);
	return (int) n;
}

/*
 * Strided gather: fills out (contiguous, ndim dims) with elements of src at
 * base + sum(i_d * strides[d]) (in elements; strides may be negative).
 */
static void
strided_copy(char *out, const char *src, size_t esize, int ndim,
			 const int64_t *dims, int64_t base, const int64_t *strides)
{
	int64_t		idx[IE_MAX_DIMS] = {0};
	int64_t		inner,
				outer = 1,
				off = base,
				s;

	if (ndim == 0)
	{
		memcpy(out, src + base * esize, esize);
		return;
	}
	inner = dims[ndim - 1];
	s = strides[ndim - 1];
	for (int d = 0; d < ndim - 1; d++)
		outer *= dims[d];
	if (inner == 0 || outer == 0)
		return;
	for (int64_t r = 0; r < outer; r++)
	{
		if (s == 1)
			memcpy(out, src + off * esize, inner * esize);
		else
		{
			switch (esize)
			{
#define GATHER(T) \
				do { const T *p = (const T *) src + off; T *q = (T *) out; \
					for (int64_t i = 0; i < inner; i++) q[i] = p[i * s]; } while (0)
				case 1: GATHER(uint8_t); break;
				case 2: GATHER(uint16_t); break;
				case 4: GATHER(uint32_t); break;
				case 8: GATHER(uint64_t); break;
				default:
					for (int64_t i = 0; i < inner; i++)
						memcpy(out + i * esize, src + (off + i * s) * esize, esize);
#undef GATHER
			}
		}
		out += inner * esize;
		for (int d = ndim - 2; d >= 0; d--)
		{
			idx[d]++;
			off += strides[d];
			if (idx[d] < dims[d])
				break;
			off -= strides[d] * dims[d];
			idx[d] = 0;
		}
	}
}

/* A strided_copy split into tasks along the output's leading one or two
 * dims (each task a block of the rest), for large tensors. */
typedef struct sc_job
{
	char	   *out;
	const char *src;
	size_t		esize;
	int			ndim,
				split;			/* leading dims the tasks cover: 1 or 2 */
	const int64_t *dims,
			   *strides;
	int64_t		base,
				block;			/* elements of one task */
} sc_job;

/* Task t of an sc_job. */
static void
sc_task(void *arg, int64_t t, int worker)
{
	sc_job	   *j = arg;
	int64_t		base = j->base;

	(void) worker;
	if (j->split == 2)
		base += t / j->dims[1] * j->strides[0] + t % j->dims[1] * j->strides[1];
	else
		base += t * j->strides[0];
	strided_copy(j->out + t * j->block * j->esize, j->src, j->esize, j->ndim - j->split,
				 j->dims + j->split, base, j->strides + j->split);
}

/* strided_copy on up to n_threads threads when the output is large. */
static void
strided_copy_par(char *out, const char *src, size_t esize, int ndim, const int64_t *dims,
				 int64_t base, const int64_t *strides, int n_threads)
{
	int64_t		numel = 1;
	sc_job		j;
	int64_t		tasks;

	for (int d = 0; d < ndim; d++)
		numel *= dims[d];
	if (n_threads <= 1 || ndim < 2 || numel < (1 << 20))
	{
		strided_copy(out, src, esize, ndim, dims, base, strides);
		return;
	}
	j = (sc_job) {out, src, esize, ndim, ndim >= 3 && dims[0] < 4 * n_threads ? 2 : 1,
	dims, strides, base, 0};
	tasks = j.split == 2 ? dims[0] * dims[1] : dims[0];
	j.block = numel / tasks;
	ie_parallel_for(n_threads, tasks, sc_task, &j);
}

/* A copy of x with a new shape of the same element count. */
static int
reshaped_copy(ie_node_ctx *ctx, const ie_tensor *x, int ndim, const int64_t *dims)
{
	ie_tensor  *o;

	/* the input dies here: move its buffer instead of copying it */
	if (ctx->donor == x && ctx->n_outputs >= 1 &&
		(o = ie_tensor_take(ctx->donor, ndim, dims)) != NULL)
	{
		ctx->outputs[0] = o;
		return 0;
	}
	o = new_output_as(ctx, x->dtype, ndim, dims, true);
	if (o == NULL)
		return -1;
	if (o->nbytes != x->nbytes)
		return ie_op_error(ctx, "internal error: reshape changes the size");
	if (x->nbytes > 0)
		memcpy(o->data, x->data, x->nbytes);
	return 0;
}

/*
 * Constant: the tensor of attribute value, or a scalar/1-D tensor from
 * value_float(s) / value_int(s).  Strings and sparse values are not held.
 */
static int
op_constant(ie_node_ctx *ctx)
{
	const ie_attr *a;
	ie_tensor  *o;
	int64_t		n;

	if (ctx->n_outputs < 1)
		return ie_op_error(ctx, "expects an output");
	if ((a = ie_attr_find(ctx, "value")) != NULL && a->type == IE_ATTR_TENSOR)
	{
		ctx->outputs[0] = ie_tensor_clone(a->t);
		return ctx->outputs[0] ? 0 : ie_op_error(ctx, "out of memory");
	}
	if ((a = ie_attr_find(ctx, "value_float")) != NULL && a->type == IE_ATTR_FLOAT)
	{
		if ((o = new_output(ctx, IE_FLOAT, 0, NULL)) == NULL)
			return -1;
		((float *) o->data)[0] = a->f;
		return 0;
	}
	if ((a = ie_attr_find(ctx, "value_int")) != NULL && a->type == IE_ATTR_INT)
	{
		if ((o = new_output(ctx, IE_INT64, 0, NULL)) == NULL)
			return -1;
		((int64_t *) o->data)[0] = a->i;
		return 0;
	}
	if ((a = ie_attr_find(ctx, "value_floats")) != NULL && a->type == IE_ATTR_FLOATS)
	{
		n = a->n_floats;
		if ((o = new_output(ctx, IE_FLOAT, 1, &n)) == NULL)
			return -1;
		if (n > 0)
			memcpy(o->data, a->floats, n * sizeof(float));
		return 0;
	}
	if ((a = ie_attr_find(ctx, "value_ints")) != NULL && a->type == IE_ATTR_INTS)
	{
		n = a->n_ints;
		if ((o = new_output(ctx, IE_INT64, 1, &n)) == NULL)
			return -1;
		if (n > 0)
			memcpy(o->data, a->ints, n * sizeof(int64_t));
		return 0;
	}
	if (ie_attr_find(ctx, "value_string") || ie_attr_find(ctx, "value_strings"))
		return ie_op_error(ctx, "string constants are not supported");
	return ie_op_error(ctx, "no supported value attribute (value, value_float(s), "
					   "value_int(s))");
}

/* Concat: joins the inputs along attribute axis (negative from opset 11). */
static int
op_concat(ie_node_ctx *ctx)
{
	const ie_attr *ax = ie_attr_find(ctx, "axis");
	const ie_tensor *first = NULL;
	int64_t		dims[IE_MAX_DIMS];
	int64_t		outer = 1;
	int			axis,
				rank;
	ie_tensor  *o;
	char	   *dst;

	if (ax == NULL || ax->type != IE_ATTR_INT)
		return ie_op_error(ctx, "attribute 'axis' is required");
	for (int i = 0; i < ctx->n_inputs; i++)
		if (ctx->inputs[i] != NULL)
		{
			first = ctx->inputs[i];
			break;
		}
	if (first == NULL)
		return ie_op_error(ctx, "expects at least one input");
	rank = first->ndim;
	if ((axis = norm_axis(ax->i, rank)) < 0)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ax->i, rank);
	for (int d = 0; d < rank; d++)
		dims[d] = first->dims[d];
	dims[axis] = 0;
	for (int i = 0; i < ctx->n_inputs; i++)
	{
		const ie_tensor *t = ctx->inputs[i];

		if (t == NULL)
			continue;
		if (t->dtype != first->dtype)
			return ie_op_error(ctx, "input %d has type %s, input 0 has %s", i,
							   ie_dtype_name(t->dtype), ie_dtype_name(first->dtype));
		if (t->ndim != rank)
			return ie_op_error(ctx, "input %d has rank %d, input 0 has rank %d", i,
							   t->ndim, rank);
		for (int d = 0; d < rank; d++)
			if (d != axis && t->dims[d] != first->dims[d])
				return ie_op_error(ctx, "input %d has dimension %d = %lld, input 0 has %lld",
								   i, d, (long long) t->dims[d],
								   (long long) first->dims[d]);
		dims[axis] += t->dims[axis];
	}
	if ((o = new_output(ctx, first->dtype, rank, dims)) == NULL)
		return -1;
	for (int d = 0; d < axis; d++)
		outer *= dims[d];
	dst = o->data;
	for (int64_t r = 0; r < outer; r++)
		for (int i = 0; i < ctx->n_inputs; i++)
		{
			const ie_tensor *t = ctx->inputs[i];
			size_t		block;

			if (t == NULL || outer == 0)
				continue;
			block = t->nbytes / (size_t) outer;
			if (block > 0)
				memcpy(dst, (const char *) t->data + r * block, block);
			dst += block;
		}
	return 0;
}

/*
 * Reshape: shape from input 1; 0 copies the input's dimension (unless
 * allowzero = 1, opset 14), -1 is inferred from the element count.
 */
static int
op_reshape(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const ie_tensor *s = need_input(ctx, 1, "shape");
	int64_t		dims[IE_MAX_DIMS];
	int64_t		known = 1,
				total;
	int			n,
				infer = -1;
	bool		allowzero;

	if (x == NULL || s == NULL)
		return -1;
	if ((n = read_ints(ctx, s, "shape", dims, IE_MAX_DIMS)) < 0)
		return -1;
	allowzero = ie_attr_int(ctx, "allowzero", 0) != 0;
	total = ie_tensor_numel(x);
	for (int i = 0; i < n; i++)
	{
		if (dims[i] == 0 && !allowzero)
		{
			if (i >= x->ndim)
				return ie_op_error(ctx, "shape[%d] = 0 copies a dimension the input "
								   "(rank %d) lacks", i, x->ndim);
			dims[i] = x->dims[i];
		}
		if (dims[i] == -1)
		{
			if (infer >= 0)
				return ie_op_error(ctx, "shape has more than one -1");
			infer = i;
			continue;
		}
		if (dims[i] < 0)
			return ie_op_error(ctx, "shape[%d] = %lld is invalid", i, (long long) dims[i]);
		if (__builtin_mul_overflow(known, dims[i], &known))
			return ie_op_error(ctx, "shape has more elements than a tensor can hold");
	}
	if (infer >= 0)
	{
		if (known == 0 || total % known != 0)
			return ie_op_error(ctx, "cannot infer the -1 dimension: %lld elements, "
							   "%lld in the other dimensions", (long long) total,
							   (long long) known);
		dims[infer] = total / known;
		known *= dims[infer];
	}
	if (known != total)
		return ie_op_error(ctx, "cannot reshape %lld elements into %lld",
						   (long long) total, (long long) known);
	return reshaped_copy(ctx, x, n, dims);
}

/* Flatten: to 2-D [prod(dims[:axis]), prod(dims[axis:])]; axis default 1. */
static int
op_flatten(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	int64_t		axis = ie_attr_int(ctx, "axis", 1);
	int64_t		dims[2] = {1, 1};

	if (x == NULL)
		return -1;
	if (axis < 0)
		axis += x->ndim;
	if (axis < 0 || axis > x->ndim)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ie_attr_int(ctx, "axis", 1), x->ndim);
	for (int d = 0; d < x->ndim; d++)
		dims[d < axis ? 0 : 1] *= x->dims[d];
	return reshaped_copy(ctx, x, 2, dims);
}

/* Transpose: permutes the axes by attribute perm (default: reversed). */
static int
op_transpose(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	const int64_t *perm = NULL;
	int64_t		p[IE_MAX_DIMS],
				dims[IE_MAX_DIMS],
				in_strides[IE_MAX_DIMS],
				strides[IE_MAX_DIMS];
	bool		seen[IE_MAX_DIMS] = {false};
	int			n;
	ie_tensor  *o;

	if (x == NULL)
		return -1;
	n = ie_attr_ints(ctx, "perm", &perm);
	if (n < 0)
	{
		for (int d = 0; d < x->ndim; d++)
			p[d] = x->ndim - 1 - d;
	}
	else
	{
		if (n != x->ndim)
			return ie_op_error(ctx, "perm has %d values, input has rank %d", n, x->ndim);
		for (int d = 0; d < n; d++)
		{
			if (perm[d] < 0 || perm[d] >= n || seen[perm[d]])
				return ie_op_error(ctx, "perm is not a permutation of 0..%d", n - 1);
			seen[perm[d]] = true;
			p[d] = perm[d];
		}
	}
	{
		int64_t		acc = 1;

		for (int d = x->ndim - 1; d >= 0; d--)
		{
			in_strides[d] = acc;
			acc *= x->dims[d];
		}
	}
	for (int d = 0; d < x->ndim; d++)
	{
		dims[d] = x->dims[p[d]];
		strides[d] = in_strides[p[d]];
	}
	if ((o = new_output_as(ctx, x->dtype, x->ndim, dims, true)) == NULL)
		return -1;
	strided_copy_par(o->data, x->data, ie_dtype_size(x->dtype), x->ndim, dims, 0, strides,
					 ctx->n_threads);
	return 0;
}

/*
 * The axes of Squeeze/Unsqueeze: attribute before opset 13, input 1 from 13.
 * Returns the count (0 when absent), or -1 after an error.
 */
static int
read_axes(ie_node_ctx *ctx, int64_t *axes)
{
	if (ctx->opset < 13)
	{
		const int64_t *a;
		int			n = ie_attr_ints(ctx, "axes", &a);

		if (n < 0)
			return 0;
		if (n > IE_MAX_DIMS)
			return ie_op_error(ctx, "%d axes, more than the engine's limit of %d", n, IE_MAX_DIMS);
		for (int i = 0; i < n; i++)
			axes[i] = a[i];
		return n;
	}
	if (ctx->n_inputs < 2 || ctx->inputs[1] == NULL)
		return 0;
	return read_ints(ctx, ctx->inputs[1], "axes", axes, IE_MAX_DIMS);
}

/* Squeeze: removes the given size-1 axes, or every size-1 axis by default. */
static int
op_squeeze(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	int64_t		axes[IE_MAX_DIMS],
				dims[IE_MAX_DIMS];
	bool		drop[IE_MAX_DIMS] = {false};
	int			n,
				nd = 0;

	if (x == NULL || (n = read_axes(ctx, axes)) < 0)
		return -1;
	for (int i = 0; i < n; i++)
	{
		int			a = norm_axis(axes[i], x->ndim);

		if (a < 0)
			return ie_op_error(ctx, "axis %lld is out of range for rank %d",
							   (long long) axes[i], x->ndim);
		if (x->dims[a] != 1)
			return ie_op_error(ctx, "cannot squeeze axis %d of size %lld", a,
							   (long long) x->dims[a]);
		drop[a] = true;
	}
	for (int d = 0; d < x->ndim; d++)
	{
		if (n == 0 && x->dims[d] == 1)
			continue;
		if (!drop[d])
			dims[nd++] = x->dims[d];
	}
	return reshaped_copy(ctx, x, nd, dims);
}

/* Unsqueeze: inserts size-1 axes at the given positions of the output. */
static int
op_unsqueeze(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	int64_t		axes[IE_MAX_DIMS],
				dims[IE_MAX_DIMS];
	bool		ins[IE_MAX_DIMS] = {false};
	int			n,
				out_rank,
				src = 0;

	if (x == NULL || (n = read_axes(ctx, axes)) < 0)
		return -1;
	if (n == 0)
		return ie_op_error(ctx, "axes are required");
	out_rank = x->ndim + n;
	if (out_rank > IE_MAX_DIMS)
		return ie_op_error(ctx, "output rank %d exceeds the engine's limit of %d",
						   out_rank, IE_MAX_DIMS);
	for (int i = 0; i < n; i++)
	{
		int			a = norm_axis(axes[i], out_rank);

		if (a < 0 || ins[a])
			return ie_op_error(ctx, "axis %lld is out of range or repeated (output rank %d)",
							   (long long) axes[i], out_rank);
		ins[a] = true;
	}
	for (int d = 0; d < out_rank; d++)
		dims[d] = ins[d] ? 1 : x->dims[src++];
	return reshaped_copy(ctx, x, out_rank, dims);
}

/*
 * Slice: starts/ends/axes as attributes before opset 10, as inputs 1-4
 * (starts, ends, axes, steps) from 10.  Negative starts/ends count from the
 * end; both are clamped as ONNX specifies; steps may be negative.
 */
static int
op_slice(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	int64_t		starts[IE_MAX_DIMS],
				ends[IE_MAX_DIMS],
				axes[IE_MAX_DIMS],
				steps[IE_MAX_DIMS];
	int64_t		st[IE_MAX_DIMS],
				step[IE_MAX_DIMS],
				dims[IE_MAX_DIMS],
				in_strides[IE_MAX_DIMS],
				strides[IE_MAX_DIMS];
	bool		seen[IE_MAX_DIMS] = {false};
	int			n,
				n_axes = -1,
				n_steps = -1;
	int64_t		base = 0,
				acc = 1;
	ie_tensor  *o;

	if (x == NULL)
		return -1;
	if (ctx->opset < 10)
	{
		const int64_t *a;
		int			ne;

		n = ie_attr_ints(ctx, "starts", &a);
		if (n < 0 || n > IE_MAX_DIMS)
			return ie_op_error(ctx, "attribute 'starts' is required (at most %d values)",
							   IE_MAX_DIMS);
		memcpy(starts, a, n * sizeof(int64_t));
		ne = ie_attr_ints(ctx, "ends", &a);
		if (ne != n)
			return ie_op_error(ctx, "attribute 'ends' must have as many values as 'starts'");
		memcpy(ends, a, n * sizeof(int64_t));
		n_axes = ie_attr_ints(ctx, "axes", &a);
		if (n_axes > IE_MAX_DIMS)
			return ie_op_error(ctx, "%d axes, more than the engine's limit of %d", n_axes,
							   IE_MAX_DIMS);
		if (n_axes >= 0)
			memcpy(axes, a, n_axes * sizeof(int64_t));
	}
	else
	{
		int			ne;

		if (need_input(ctx, 1, "starts") == NULL || need_input(ctx, 2, "ends") == NULL)
			return -1;
		if ((n = read_ints(ctx, ctx->inputs[1], "starts", starts, IE_MAX_DIMS)) < 0 ||
			(ne = read_ints(ctx, ctx->inputs[2], "ends", ends, IE_MAX_DIMS)) < 0)
			return -1;
		if (ne != n)
			return ie_op_error(ctx, "starts has %d values, ends has %d", n, ne);
		if (ctx->n_inputs > 3 && ctx->inputs[3] != NULL &&
			(n_axes = read_ints(ctx, ctx->inputs[3], "axes", axes, IE_MAX_DIMS)) < 0)
			return -1;
		if (ctx->n_inputs > 4 && ctx->inputs[4] != NULL &&
			(n_steps = read_ints(ctx, ctx->inputs[4], "steps", steps, IE_MAX_DIMS)) < 0)
			return -1;
	}
	if ((n_axes >= 0 && n_axes != n) || (n_steps >= 0 && n_steps != n))
		return ie_op_error(ctx, "starts, ends, axes and steps must have the same length");

	for (int d = 0; d < x->ndim; d++)
	{
		st[d] = 0;
		step[d] = 1;
		dims[d] = x->dims[d];
	}
	for (int i = 0; i < n; i++)
	{
		int			a = norm_axis(n_axes >= 0 ? axes[i] : i, x->ndim);
		int64_t		dim,
					s,
					e,
					k = n_steps >= 0 ? steps[i] : 1;

		if (a < 0 || seen[a])
			return ie_op_error(ctx, "axis %lld is out of range or repeated (rank %d)",
							   (long long) (n_axes >= 0 ? axes[i] : i), x->ndim);
		seen[a] = true;
		if (k == 0)
			return ie_op_error(ctx, "step 0 is invalid");
		if (k < -INT64_MAX)
			k = -INT64_MAX;		/* so that -k cannot overflow */
		dim = x->dims[a];
		s = starts[i];
		e = ends[i];
		if (s < 0)
			s = (s < -dim) ? 0 : s + dim;
		if (e < 0)
			e = (e < -dim) ? -1 : e + dim;
		if (k > 0)
		{
			s = s < 0 ? 0 : (s > dim ? dim : s);
			e = e < 0 ? 0 : (e > dim ? dim : e);
			dims[a] = e > s ? (e - s - 1) / k + 1 : 0;
		}
		else
		{
			s = s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
			dims[a] = s > e ? (s - e - 1) / (-k) + 1 : 0;
		}
		st[a] = s;
		step[a] = k;
	}
	for (int d = x->ndim - 1; d >= 0; d--)
	{
		in_strides[d] = acc;
		acc *= x->dims[d];
	}
	for (int d = 0; d < x->ndim; d++)
	{
		/* a step of an axis that yields one element is never taken (and
		 * may be as large as int64 allows): only a step below the axis's
		 * extent multiplies */
		strides[d] = dims[d] > 1 ? in_strides[d] * step[d] : 0;
		if (dims[d] > 0)
			base += st[d] * in_strides[d];
	}
	if ((o = new_output(ctx, x->dtype, x->ndim, dims)) == NULL)
		return -1;
	if (ie_tensor_numel(o) > 0)
		strided_copy(o->data, x->data, ie_dtype_size(x->dtype), x->ndim, dims, base,
					 strides);
	return 0;
}

/* Shape: the input's dims as 1-D int64, optionally dims[start:end] (opset 15). */
static int
op_shape(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	int64_t		start,
				end,
				n;
	ie_tensor  *o;

	if (x == NULL)
		return -1;
	start = ie_attr_int(ctx, "start", 0);
	end = ie_attr_int(ctx, "end", x->ndim);
	if (start < 0)
		start += x->ndim;
	if (end < 0)
		end += x->ndim;
	start = start < 0 ? 0 : (start > x->ndim ? x->ndim : start);
	end = end < 0 ? 0 : (end > x->ndim ? x->ndim : end);
	n = end > start ? end - start : 0;
	if ((o = new_output(ctx, IE_INT64, 1, &n)) == NULL)
		return -1;
	for (int64_t i = 0; i < n; i++)
		((int64_t *) o->data)[i] = x->dims[start + i];
	return 0;
}

/* Size: the input's element count as an int64 scalar. */
static int
op_size(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "data");
	ie_tensor  *o;

	if (x == NULL)
		return -1;
	if ((o = new_output(ctx, IE_INT64, 0, NULL)) == NULL)
		return -1;
	((int64_t *) o->data)[0] = ie_tensor_numel(x);
	return 0;
}

/* IEEE half (binary16) bits to float (op.h). */
float
ie_half_to_float(uint16_t h)
{
	int			e = (h >> 10) & 0x1f;
	int			m = h & 0x3ff;
	float		v;

	if (e == 0)
		v = ldexpf((float) m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexpf((float) (m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

/* Float to IEEE half bits, rounding to nearest even (op.h). */
uint16_t
ie_float_to_half(float f)
{
	uint32_t	u;
	uint16_t	sign;

	memcpy(&u, &f, sizeof(u));
	sign = (uint16_t) ((u >> 16) & 0x8000);
	u &= 0x7fffffff;
	if (u >= 0x7f800000)		/* inf or NaN */
		return sign | (u > 0x7f800000 ? 0x7e00 : 0x7c00);
	if (u >= 0x47800000)		/* >= 65536: too large */
		return sign | 0x7c00;
	if (u < 0x38800000)			/* below the smallest normal half: subnormal */
	{
		float		a;

		memcpy(&a, &u, sizeof(a));
		return sign | (uint16_t) nearbyintf(a * 16777216.0f);
	}
	/* rebias the exponent (127 -> 15) and round the 13 dropped bits to even */
	u += 0xc8000fffU + ((u >> 13) & 1);
	return sign | (uint16_t) (u >> 13);
}

/* True for the types Cast converts between (besides float16, staged). */
static bool
cast_type_ok(ie_dtype t)
{
	switch (t)
	{
		case IE_FLOAT:
		case IE_DOUBLE:
		case IE_INT8:
		case IE_UINT8:
		case IE_INT16:
		case IE_UINT16:
		case IE_INT32:
		case IE_UINT32:
		case IE_INT64:
		case IE_UINT64:
		case IE_BOOL:
			return true;
		default:
			return false;
	}
}

/* Float to integer type T saturating at its limits (NaN gives 0). */
#define SAT(T, v, MIN, MAX) \
	((v) != (v) ? (T) 0 : (v) <= (double) (MIN) ? (T) (MIN) : \
	 (v) >= (double) (MAX) ? (T) (MAX) : (T) (v))

/*
 * Converts n elements between two Cast types (cast_type_ok): to bool is
 * x != 0; float to integer truncates and saturates; integers wrap.
 */
static void
convert(const void *src, ie_dtype from, void *dst, ie_dtype to, int64_t n)
{
#define LOOP(ST, DT, EXPR) \
	do { const ST *s_ = src; DT *d_ = dst; \
		for (int64_t i = 0; i < n; i++) { ST v = s_[i]; d_[i] = (EXPR); } } while (0)
#define TO_ALL(ST, FSRC) \
	switch (to) \
	{ \
		case IE_FLOAT: LOOP(ST, float, (float) v); break; \
		case IE_DOUBLE: LOOP(ST, double, (double) v); break; \
		case IE_BOOL: LOOP(ST, uint8_t, v != 0); break; \
		case IE_INT8: LOOP(ST, int8_t, FSRC ? SAT(int8_t, (double) v, INT8_MIN, INT8_MAX) : (int8_t) v); break; \
		case IE_UINT8: LOOP(ST, uint8_t, FSRC ? SAT(uint8_t, (double) v, 0, UINT8_MAX) : (uint8_t) v); break; \
		case IE_INT16: LOOP(ST, int16_t, FSRC ? SAT(int16_t, (double) v, INT16_MIN, INT16_MAX) : (int16_t) v); break; \
		case IE_UINT16: LOOP(ST, uint16_t, FSRC ? SAT(uint16_t, (double) v, 0, UINT16_MAX) : (uint16_t) v); break; \
		case IE_INT32: LOOP(ST, int32_t, FSRC ? SAT(int32_t, (double) v, INT32_MIN, INT32_MAX) : (int32_t) v); break; \
		case IE_UINT32: LOOP(ST, uint32_t, FSRC ? SAT(uint32_t, (double) v, 0, UINT32_MAX) : (uint32_t) v); break; \
		case IE_INT64: LOOP(ST, int64_t, FSRC ? SAT(int64_t, (double) v, INT64_MIN, INT64_MAX) : (int64_t) v); break; \
		case IE_UINT64: LOOP(ST, uint64_t, FSRC ? SAT(uint64_t, (double) v, 0, UINT64_MAX) : (uint64_t) v); break; \
		default: break; \
	}
	switch (from)
	{
		case IE_FLOAT: TO_ALL(float, 1); break;
		case IE_DOUBLE: TO_ALL(double, 1); break;
		case IE_BOOL: TO_ALL(uint8_t, 0); break;
		case IE_INT8: TO_ALL(int8_t, 0); break;
		case IE_UINT8: TO_ALL(uint8_t, 0); break;
		case IE_INT16: TO_ALL(int16_t, 0); break;
		case IE_UINT16: TO_ALL(uint16_t, 0); break;
		case IE_INT32: TO_ALL(int32_t, 0); break;
		case IE_UINT32: TO_ALL(uint32_t, 0); break;
		case IE_INT64: TO_ALL(int64_t, 0); break;
		case IE_UINT64: TO_ALL(uint64_t, 0); break;
		default: break;
	}
#undef TO_ALL
#undef LOOP
}

/*
 * Cast's 'to' (required: the loader's schema check sees to that), one of
 * the types cast_type_ok accepts or float16: run by the loader on every
 * Cast node and by the operator.  An opset 1 'to' is a type name, which the
 * engine does not read.
 */
static int
cast_check_attrs(ie_node_ctx *ctx)
{
	const ie_attr *a = ie_attr_find(ctx, "to");

	if (a == NULL || a->type != IE_ATTR_INT)
		return ie_op_error(ctx, "attribute 'to' must be an INT (the type names of opset 1 are not supported)");
	if (!cast_type_ok((ie_dtype) a->i) && a->i != IE_FLOAT16)
		return ie_op_error(ctx, "cast to %s (%lld) is not supported",
						   ie_type_name((int) a->i),
						   (long long) a->i);
	return 0;
}

/* Elements of one task of a parallel convert (64 K: 256 kB of floats). */
#define CAST_CHUNK ((int64_t) 1 << 16)

/* A convert split into tasks of CAST_CHUNK elements (convert_task). */
typedef struct
{
	const char *src;
	ie_dtype	from;
	char	   *dst;
	ie_dtype	to;
	int64_t		n;
} convert_job;

static void
convert_task(void *arg, int64_t task, int worker)
{
	const convert_job *j = arg;
	int64_t		off = task * CAST_CHUNK;
	int64_t		len = j->n - off < CAST_CHUNK ? j->n - off : CAST_CHUNK;

	(void) worker;
	convert(j->src + (size_t) off * ie_dtype_size(j->from), j->from,
			j->dst + (size_t) off * ie_dtype_size(j->to), j->to, len);
}

/*
 * convert over the node's threads, in tasks of CAST_CHUNK elements (each
 * element is converted alone, so the result does not depend on the split).
 */
static void
convert_parallel(ie_node_ctx *ctx, const void *src, ie_dtype from, void *dst,
				 ie_dtype to, int64_t n)
{
	convert_job j = {.src = src, .from = from, .dst = dst, .to = to, .n = n};

	ie_parallel_for(ctx->n_threads, (n + CAST_CHUNK - 1) / CAST_CHUNK, convert_task, &j);
}

/*
 * Writes x converted to element type `to` (cast_type_ok or float16) into a
 * new output 0 of x's shape: to bool is x != 0, float to integer truncates
 * and saturates, integers wrap, float16 goes through float.  -1 after an
 * error for a source type Cast does not take.
 */
static int
cast_to(ie_node_ctx *ctx, const ie_tensor *x, ie_dtype to)
{
	ie_tensor  *o,
			   *tmp = NULL;
	int64_t		n;

	if (!cast_type_ok(x->dtype) && x->dtype != IE_FLOAT16)
		return ie_op_error(ctx, "cast from %s is not supported", ie_dtype_name(x->dtype));
	/* every path below writes every element */
	if ((o = new_output_as(ctx, to, x->ndim, x->dims, true)) == NULL)
		return -1;
	n = ie_tensor_numel(x);
	if (x->dtype == to)
	{
		if (x->nbytes > 0)
			memcpy(o->data, x->data, x->nbytes);
		return 0;
	}
	if (x->dtype == IE_FLOAT16 || to == IE_FLOAT16)
	{
		tmp = ie_tensor_new(IE_FLOAT, x->ndim, x->dims);
		if (tmp == NULL)
			return ie_op_error(ctx, "out of memory");
		if (x->dtype == IE_FLOAT16)
			for (int64_t i = 0; i < n; i++)
				((float *) tmp->data)[i] = ie_half_to_float(((const uint16_t *) x->data)[i]);
		else
			convert(x->data, x->dtype, tmp->data, IE_FLOAT, n);
		if (to == IE_FLOAT16)
			for (int64_t i = 0; i < n; i++)
				((uint16_t *) o->data)[i] = ie_float_to_half(((const float *) tmp->data)[i]);
		else
			convert(tmp->data, IE_FLOAT, o->data, to, n);
		ie_tensor_destroy(&tmp);
		return 0;
	}
	convert_parallel(ctx, x->data, x->dtype, o->data, to, n);
	return 0;
}

/*
 * Cast: converts to attribute 'to' among float, double, float16, bool and
 * the 8- to 64-bit integer types (cast_to).  Strings and bfloat16 are
 * errors.
 */
static int
op_cast(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");

	if (x == NULL || cast_check_attrs(ctx) != 0)
		return -1;
	return cast_to(ctx, x, (ie_dtype) ie_attr_find(ctx, "to")->i);
}

/*
 * CastLike (opset 15, 19, 21, 23, 24, 25): Cast to the element type of
 * input 1, target_type, whose values are not read (ONNX Operators.md,
 * CastLike).  The same types as Cast; saturate and round_mode concern only
 * float8 and float4 targets, which the engine refuses.
 */
static int
op_castlike(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *like = need_input(ctx, 1, "target_type");

	if (x == NULL || like == NULL)
		return -1;
	if (!cast_type_ok(like->dtype) && like->dtype != IE_FLOAT16)
		return ie_op_error(ctx, "cast to %s is not supported", ie_dtype_name(like->dtype));
	return cast_to(ctx, x, like->dtype);
}

/*
 * Expand (opset 8, 13): broadcasts the input to input 1's shape with
 * multidirectional broadcasting, so the output has the larger rank and,
 * per dim, the larger of the two sizes (either may be 1).
 */
static int
op_expand(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *s = need_input(ctx, 1, "shape");
	ie_tensor	shape = {0};
	int64_t		dims[IE_MAX_DIMS],
				strides[IE_MAX_DIMS],
				acc = 1;
	int			nd;
	ie_tensor  *o;
	char		s1[128],
				s2[128];

	if (x == NULL || s == NULL)
		return -1;
	if ((shape.ndim = read_ints(ctx, s, "shape", shape.dims, IE_MAX_DIMS)) < 0)
		return -1;
	for (int i = 0; i < shape.ndim; i++)
		if (shape.dims[i] < 0)
			return ie_op_error(ctx, "shape[%d] = %lld is negative", i,
							   (long long) shape.dims[i]);
	if ((nd = ie_broadcast_shape(x, &shape, dims)) < 0)
		return ie_op_error(ctx, "input shape %s does not broadcast to %s",
						   ie_shape_str(s1, sizeof(s1), x->ndim, x->dims),
						   ie_shape_str(s2, sizeof(s2), shape.ndim, shape.dims));
	for (int i = nd - 1; i >= 0; i--)
	{
		int			xi = i - (nd - x->ndim);
		int64_t		d = xi >= 0 ? x->dims[xi] : 1;

		strides[i] = d == 1 ? 0 : acc;
		acc *= d;
	}
	if ((o = new_output(ctx, x->dtype, nd, dims)) == NULL)
		return -1;
	if (ie_tensor_numel(o) > 0)
		strided_copy(o->data, x->data, ie_dtype_size(x->dtype), nd, dims, 0, strides);
	return 0;
}

/* Tile's form: opset 6 on (the opset 1 form is not implemented). */
static int
tile_check_attrs(ie_node_ctx *ctx)
{
	if (ctx->opset < 6)
		return ie_op_error(ctx, "the opset 1 form (inputs tiles and axis) is not supported");
	return 0;
}

/*
 * Tile (opset 6, 13): repeats the input repeats[d] times along each dim d;
 * repeats is a 1-D int64 input with one non-negative value per dim.
 */
static int
op_tile(ie_node_ctx *ctx)
{
	const ie_tensor *x = need_input(ctx, 0, "input");
	const ie_tensor *r = need_input(ctx, 1, "repeats");
	int64_t		rep[IE_MAX_DIMS],
				dims[IE_MAX_DIMS],
				in_strides[IE_MAX_DIMS],
				idx[IE_MAX_DIMS] = {0},
				acc = 1,
				outer = 1,
				in_off = 0;
	int			n,
				nd;
	size_t		es;
	ie_tensor  *o;
	char	   *dst;

	if (x == NULL || r == NULL || tile_check_attrs(ctx) != 0)
		return -1;
	if ((n = read_ints(ctx, r, "repeats", rep, IE_MAX_DIMS)) < 0)
		return -1;
	nd = x->ndim;
	if (n != nd)
		return ie_op_error(ctx, "repeats has %d values, input has rank %d", n, nd);
	for (int d = nd - 1; d >= 0; d--)
	{
		if (rep[d] < 0)
			return ie_op_error(ctx, "repeats[%d] = %lld is negative", d, (long long) rep[d]);
		if (__builtin_mul_overflow(x->dims[d], rep[d], &dims[d]))
			return ie_op_error(ctx, "repeats[%d] = %lld makes dimension %d overflow",
							   d, (long long) rep[d], d);
		in_strides[d] = acc;
		acc *= x->dims[d];
	}
	if ((o = new_output(ctx, x->dtype, nd, dims)) == NULL)
		return -1;
	if (ie_tensor_numel(o) == 0)
		return 0;
	es = ie_dtype_size(x->dtype);
	if (nd == 0)
	{
		memcpy(o->data, x->data, es);
		return 0;
	}
	/* one output row (last dim) at a time: the input row repeated */
	for (int d = 0; d < nd - 1; d++)
		outer *= dims[d];
	dst = o->data;
	for (int64_t row = 0; row < outer; row++)
	{
		size_t		len = (size_t) x->dims[nd - 1] * es;

		for (int64_t k = 0; k < rep[nd - 1]; k++)
		{
			memcpy(dst, (const char *) x->data + in_off * es, len);
			dst += len;
		}
		/* odometer over the output's outer dims; input index = idx % dim */
		for (int d = nd - 2; d >= 0; d--)
		{
			idx[d]++;
			if (idx[d] % x->dims[d] == 0)
				in_off -= (x->dims[d] - 1) * in_strides[d];
			else
				in_off += in_strides[d];
			if (idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return 0;
}

/*
 * ConstantOfShape (opset 9+): a tensor of input 0's shape (1-D int64, an
 * empty shape gives a scalar) filled with attribute value's one element
 * (default float 0), in value's type.
 */
static int
op_constant_of_shape(ie_node_ctx *ctx)
{
	const ie_tensor *s = need_input(ctx, 0, "input");
	const ie_attr *v = ie_attr_find(ctx, "value");
	int64_t		dims[IE_MAX_DIMS],
				n;
	int			nd;
	ie_dtype	dt = IE_FLOAT;
	size_t		es;
	ie_tensor  *o;

	if (s == NULL)
		return -1;
	if ((nd = read_ints(ctx, s, "shape", dims, IE_MAX_DIMS)) < 0)
		return -1;
	for (int i = 0; i < nd; i++)
		if (dims[i] < 0)
			return ie_op_error(ctx, "shape[%d] = %lld is negative", i, (long long) dims[i]);
	if (v != NULL)
	{
		if (v->type != IE_ATTR_TENSOR || v->t == NULL || ie_tensor_numel(v->t) != 1)
			return ie_op_error(ctx, "attribute 'value' must be a one-element tensor");
		dt = v->t->dtype;
	}
	if ((o = new_output(ctx, dt, nd, dims)) == NULL)
		return -1;
	if (v == NULL)
		return 0;				/* float zeros */
	es = ie_dtype_size(dt);
	n = ie_tensor_numel(o);
	for (int64_t i = 0; i < n; i++)
		memcpy((char *) o->data + i * es, v->t->data, es);
	return 0;
}

/*
 * Range (opset 11): the 1-D sequence start, start + delta, ... up to but
 * excluding limit; max(ceil((limit - start) / delta), 0) elements.  The
 * three inputs are scalars of one type: float, double, int16, int32,
 * int64.  delta 0 is an error.
 */
static int
op_range(ie_node_ctx *ctx)
{
	const ie_tensor *in[3];
	static const char *const names[3] = {"start", "limit", "delta"};
	double		v[3];
	int64_t		n;
	ie_dtype	dt;
	ie_tensor  *o;

	for (int i = 0; i < 3; i++)
	{
		if ((in[i] = need_input(ctx, i, names[i])) == NULL)
			return -1;
		if (ie_tensor_numel(in[i]) != 1)
			return ie_op_error(ctx, "%s must be a scalar", names[i]);
		if (in[i]->dtype != in[0]->dtype)
			return ie_op_error(ctx, "%s has type %s, start has %s", names[i],
							   ie_dtype_name(in[i]->dtype), ie_dtype_name(in[0]->dtype));
	}
	dt = in[0]->dtype;
	if (dt == IE_INT16 || dt == IE_INT32 || dt == IE_INT64)
	{
		int64_t		iv[3];

		for (int i = 0; i < 3; i++)
			iv[i] = dt == IE_INT16 ? ((const int16_t *) in[i]->data)[0] :
				dt == IE_INT32 ? ((const int32_t *) in[i]->data)[0] :
				((const int64_t *) in[i]->data)[0];
		if (iv[2] == 0)
			return ie_op_error(ctx, "delta must not be 0");
		/* ceil division, in unsigned 64-bit so no difference overflows */
		{
			uint64_t	span = 0,
						step = iv[2] > 0 ? (uint64_t) iv[2] : (uint64_t) 0 - (uint64_t) iv[2],
						cnt;

			if (iv[2] > 0 && iv[1] > iv[0])
				span = (uint64_t) iv[1] - (uint64_t) iv[0];
			else if (iv[2] < 0 && iv[0] > iv[1])
				span = (uint64_t) iv[0] - (uint64_t) iv[1];
			cnt = span == 0 ? 0 : (span - 1) / step + 1;
			if (cnt > (uint64_t) INT32_MAX)
				return ie_op_error(ctx, "the range from %lld to %lld by %lld has too many "
								   "elements", (long long) iv[0], (long long) iv[1],
								   (long long) iv[2]);
			n = (int64_t) cnt;
		}
		if ((o = new_output(ctx, dt, 1, &n)) == NULL)
			return -1;
		for (int64_t i = 0; i < n; i++)
		{
			int64_t		x = (int64_t) ((uint64_t) iv[0] + (uint64_t) i * (uint64_t) iv[2]);

			if (dt == IE_INT16)
				((int16_t *) o->data)[i] = (int16_t) x;
			else if (dt == IE_INT32)
				((int32_t *) o->data)[i] = (int32_t) x;
			else
				((int64_t *) o->data)[i] = x;
		}
		return 0;
	}
	if (dt != IE_FLOAT && dt != IE_DOUBLE)
		return ie_op_error(ctx, "element type %s is not supported", ie_dtype_name(dt));
	for (int i = 0; i < 3; i++)
		v[i] = dt == IE_FLOAT ? ((const float *) in[i]->data)[0] :
			((const double *) in[i]->data)[0];
	if (v[2] == 0 || isnan(v[2]))
		return ie_op_error(ctx, "delta must be a non-zero number");
	{
		/* limit - start in the inputs' type, as the spec's pseudocode */
		double		span = dt == IE_FLOAT ? (double) ((float) v[1] - (float) v[0]) : v[1] - v[0];
		double		cnt = ceil(span / v[2]);

		if (isnan(cnt) || cnt > (double) INT32_MAX)
			return ie_op_error(ctx, "the range from %g to %g by %g has too many elements",
							   v[0], v[1], v[2]);
		n = cnt > 0 ? (int64_t) cnt : 0;
	}
	if ((o = new_output(ctx, dt, 1, &n)) == NULL)
		return -1;
	for (int64_t i = 0; i < n; i++)
	{
		if (dt == IE_FLOAT)
			((float *) o->data)[i] = (float) ((float) v[0] + (float) i * (float) v[2]);
		else
			((double *) o->data)[i] = v[0] + (double) i * v[2];
	}
	return 0;
}

/* Outputs of one Split node, at most. */
#define IE_MAX_SPLIT 64

/*
 * The sizes of Split's pieces when the node gives no `split`: n pieces
 * (num_outputs from opset 18, else the node's outputs) along an axis of
 * dim elements into sizes.  Below opset 18 they must be equal; from 18
 * each is ceil(dim / n) but the last, which takes what is left and may be
 * smaller (Operators.md, Split-18), so ceil(dim / n) * (n - 1) must not
 * pass dim.  0, or -1 after an error.
 */
static int
split_even_sizes(ie_node_ctx *ctx, int64_t dim, int axis, int n, int64_t *sizes)
{
	int64_t		chunk = (dim + n - 1) / n;

	if (ctx->opset < 18 && dim % n != 0)
		return ie_op_error(ctx, "dimension %lld of axis %d does not split into %d equal parts",
						   (long long) dim, axis, n);
	if (chunk * (n - 1) > dim)
		return ie_op_error(ctx, "dimension %lld of axis %d does not split into %d parts: "
						   "%d parts of %lld leave less than nothing for the last",
						   (long long) dim, axis, n, n - 1, (long long) chunk);
	for (int i = 0; i < n - 1; i++)
		sizes[i] = chunk;
	sizes[n - 1] = dim - chunk * (n - 1);
	return 0;
}

/*
 * Split (opsets 1, 2, 11, 13, 18): the input cut along axis (default 0)
 * into one piece per output, of the sizes of `split` (an attribute before
 * opset 13, input 1 from 13; opset 1's input 1 too), or, when it is not
 * given, of equal sizes (split_even_sizes: from opset 18 the last may be
 * smaller).  Opset 18's num_outputs must equal the node's outputs and
 * excludes the `split` input.
 */
static int
op_split(ie_node_ctx *ctx)
{
	const ie_tensor *X = need_input(ctx, 0, "input");
	const ie_attr *num_outputs = ctx->opset >= 18 ? ie_attr_find(ctx, "num_outputs") : NULL;
	bool		split_input = ctx->n_inputs > 1 && ctx->inputs[1] != NULL;
	int64_t		sizes[IE_MAX_SPLIT];
	int			n = -1,
				axis;
	int64_t		outer = 1,
				inner = 1,
				off = 0,
				total = 0;
	size_t		es;

	if (X == NULL)
		return -1;
	if (ctx->n_outputs < 1 || ctx->n_outputs > IE_MAX_SPLIT)
		return ie_op_error(ctx, "has %d outputs; 1 to %d are supported (the engine's limit)",
						   ctx->n_outputs, IE_MAX_SPLIT);
	if ((axis = norm_axis(ie_attr_int(ctx, "axis", 0), X->ndim)) < 0)
		return ie_op_error(ctx, "axis %lld is out of range for rank %d",
						   (long long) ie_attr_int(ctx, "axis", 0), X->ndim);
	if (num_outputs != NULL)
	{
		if (split_input)
			return ie_op_error(ctx, "has both input 'split' and attribute num_outputs "
							   "(one or the other)");
		if (num_outputs->i != ctx->n_outputs)
			return ie_op_error(ctx, "num_outputs is %lld but the node has %d outputs",
							   (long long) num_outputs->i, ctx->n_outputs);
	}
	if (split_input)
	{
		if ((n = read_ints(ctx, ctx->inputs[1], "split", sizes, IE_MAX_SPLIT)) < 0)
			return -1;
	}
	else
	{
		const int64_t *v;
		int			na = ie_attr_ints(ctx, "split", &v);

		if (na > IE_MAX_SPLIT)
			return ie_op_error(ctx, "split has %d values, more than the engine's limit of %d",
							   na, IE_MAX_SPLIT);
		for (int i = 0; i < na; i++)
			sizes[i] = v[i];
		n = na;
	}
	if (n < 0)
	{
		n = ctx->n_outputs;
		if (split_even_sizes(ctx, X->dims[axis], axis, n, sizes) != 0)
			return -1;
	}
	if (n != ctx->n_outputs)
		return ie_op_error(ctx, "split has %d sizes for %d outputs", n, ctx->n_outputs);
	for (int i = 0; i < n; i++)
	{
		if (sizes[i] < 0)
			return ie_op_error(ctx, "split size %lld is negative", (long long) sizes[i]);
		total += sizes[i];
	}
	if (total != X->dims[axis])
		return ie_op_error(ctx, "split sizes add up to %lld, axis %d has %lld",
						   (long long) total, axis, (long long) X->dims[axis]);
	for (int d = 0; d < axis; d++)
		outer *= X->dims[d];
	for (int d = axis + 1; d < X->ndim; d++)
		inner *= X->dims[d];
	es = ie_dtype_size(X->dtype);
	for (int i = 0; i < n; i++)
	{
		int64_t		dims[IE_MAX_DIMS];
		ie_tensor  *o;
		size_t		block = (size_t) (sizes[i] * inner) * es;

		memcpy(dims, X->dims, sizeof(int64_t) * X->ndim);
		dims[axis] = sizes[i];
		o = ie_tensor_new_uninit(X->dtype, X->ndim, dims);
		if (o == NULL)
			return ie_op_error(ctx, "out of memory for output %d", i);
		ctx->outputs[i] = o;
		for (int64_t r = 0; r < outer && block > 0; r++)
			memcpy((char *) o->data + r * block,
				   (const char *) X->data + ((size_t) (r * X->dims[axis] + off) * inner) * es,
				   block);
		off += sizes[i];
	}
	return 0;
}

/* Pad's modes, in the order pad_mode lists them. */
enum pad_mode
{
	PAD_CONSTANT,
	PAD_EDGE,
	PAD_REFLECT,
	PAD_WRAP
};

/*
 * The source index along one dimension of n elements for output index j
 * less the leading pad, for modes constant (-1: the constant), edge and
 * reflect.  Reflect mirrors without repeating the edge (numpy's "reflect").
 */
static int64_t
pad_source(int64_t j, int64_t n, int mode)
{
	if (j >= 0 && j < n)
		return j;
	if (mode == PAD_CONSTANT)
		return -1;
	if (mode == PAD_EDGE)
		return j < 0 ? 0 : n - 1;
	if (n == 1)
		return 0;
	/* reflect, period 2n - 2 */
	{
		int64_t		period = 2 * n - 2;

		j %= period;
		if (j < 0)
			j += period;
		return j < n ? j : period - j;
	}
}

/*
 * The source index for mode wrap: j (output index less the leading pad)
 * taken round the m elements from lo that negative pads leave of the
 * dimension (m > 0), any number of times, as a torus.
 */
static int64_t
pad_wrap_source(int64_t j, int64_t lo, int64_t m)
{
	int64_t		r = (j - lo) % m;

	return lo + (r < 0 ? r + m : r);
}

/*
 * Pad's mode (enum pad_mode) into *mode; -1 for another one, or for "wrap"
 * below opset 19, which brought it.
 */
static int
pad_mode(ie_node_ctx *ctx, int *mode)
{
	static const char *const modes[] = {"constant", "edge", "reflect", "wrap", NULL};

	if (ie_attr_choice(ctx, "mode", "constant", modes, mode) != 0)
		return -1;
	if (*mode == PAD_WRAP && ctx->opset < 19)
		return ie_op_error(ctx, "mode \"wrap\" needs opset 19 or later (the model imports %d)",
						   ctx->opset);
	return 0;
}

/* Pad's mode (pad_mode): run by the loader on every Pad node. */
static int
pad_check_attrs(ie_node_ctx *ctx)
{
	int			mode;

	return pad_mode(ctx, &mode);
}

/*
 * Pad-18's optional input 3, axes (int32 or int64, negative counting from
 * the end, each axis of rank at most once): spreads pads (np values, 2 per
 * axis: all the starts, then all the ends) over the rank dimensions into
 * full[2 * rank], zero for the axes not named.  0, or -1 after an error.
 */
static int
pad_spread_axes(ie_node_ctx *ctx, const ie_tensor *A, int rank,
				const int64_t *pads, int np, int64_t *full)
{
	int64_t		axes[IE_MAX_DIMS];
	bool		seen[IE_MAX_DIMS] = {false};
	int			na;

	if (ie_tensor_numel(A) > rank)
		return ie_op_error(ctx, "axes has %lld values for rank %d (each axis at most once)",
						   (long long) ie_tensor_numel(A), rank);
	if ((na = read_ints(ctx, A, "axes", axes, IE_MAX_DIMS)) < 0)
		return -1;
	if (np != 2 * na)
		return ie_op_error(ctx, "pads has %d values for %d axes (2 x the axes are needed)",
						   np, na);
	for (int d = 0; d < 2 * rank; d++)
		full[d] = 0;
	for (int i = 0; i < na; i++)
	{
		int			a = norm_axis(axes[i], rank);

		if (a < 0)
			return ie_op_error(ctx, "axis %lld is out of range for rank %d",
							   (long long) axes[i], rank);
		if (seen[a])
			return ie_op_error(ctx, "axis %lld appears twice in axes (as dimension %d)",
							   (long long) axes[i], a);
		seen[a] = true;
		full[a] = pads[i];
		full[rank + a] = pads[na + i];
	}
	return 0;
}

/*
 * Pad (opsets 1, 2, 11, 13, 18, 19+): the input with pads[d] elements
 * before and pads[rank + d] after dimension d (negative: cut), filled by
 * mode "constant" (the value: an attribute before opset 11, optional
 * input 2 from 11; 0 by default), "edge" (the nearest element), "reflect"
 * (the mirror image, numpy.pad's "reflect") or, from opset 19, "wrap" (the
 * dimension repeated round, as a torus; negative pads cut first, so it
 * wraps round what is left, as ONNX Runtime does).  Opset 1 calls pads
 * "paddings"; from 11 they are input 1; from 18 optional input 3 (axes)
 * names the dimensions they are for (Operators.md, Pad-18).  An element
 * at a time, by strides.
 */
static int
op_pad(ie_node_ctx *ctx)
{
	const ie_tensor *X = need_input(ctx, 0, "data");
	const char *mode_s = ie_attr_string(ctx, "mode", "constant");
	int64_t		pads[2 * IE_MAX_DIMS];
	int64_t		dims[IE_MAX_DIMS],
				istride[IE_MAX_DIMS],
				lo[IE_MAX_DIMS],
				keep[IE_MAX_DIMS],
				idx[IE_MAX_DIMS] = {0};
	char		cval[16] = {0};
	int			mode,
				np;
	size_t		es;
	ie_tensor  *o;
	int64_t		n;

	if (X == NULL || pad_mode(ctx, &mode) != 0)
		return -1;
	es = ie_dtype_size(X->dtype);
	if (ctx->opset >= 11)
	{
		const ie_tensor *P = need_input(ctx, 1, "pads");

		if (P == NULL || (np = read_ints(ctx, P, "pads", pads, 2 * IE_MAX_DIMS)) < 0)
			return -1;
		if (ctx->n_inputs > 2 && ctx->inputs[2] != NULL)
		{
			const ie_tensor *V = ctx->inputs[2];

			if (V->dtype != X->dtype || ie_tensor_numel(V) != 1 || es > sizeof(cval))
				return ie_op_error(ctx, "constant_value must be one %s",
								   ie_dtype_name(X->dtype));
			memcpy(cval, V->data, es);
		}
		if (ctx->opset >= 18 && ctx->n_inputs > 3 && ctx->inputs[3] != NULL)
		{
			int64_t		given[2 * IE_MAX_DIMS];

			memcpy(given, pads, sizeof(int64_t) * np);
			if (pad_spread_axes(ctx, ctx->inputs[3], X->ndim, given, np, pads) != 0)
				return -1;
			np = 2 * X->ndim;
		}
	}
	else
	{
		const int64_t *v;
		float		value = ie_attr_float(ctx, "value", 0.0f);

		np = ie_attr_ints(ctx, ctx->opset < 2 ? "paddings" : "pads", &v);
		if (np < 0 || np > 2 * IE_MAX_DIMS)
			return ie_op_error(ctx, "attribute 'pads' is required");
		for (int i = 0; i < np; i++)
			pads[i] = v[i];
		if (X->dtype == IE_FLOAT)
			memcpy(cval, &value, sizeof(float));
		else if (X->dtype == IE_DOUBLE)
		{
			double		dv = value;

			memcpy(cval, &dv, sizeof(double));
		}
		else if (value != 0.0f)
			return ie_op_error(ctx, "a constant value for %s is not supported",
							   ie_dtype_name(X->dtype));
	}
	if (np != 2 * X->ndim)
		return ie_op_error(ctx, "pads has %d values for rank %d (2 x rank are needed)",
						   np, X->ndim);
	for (int d = 0; d < X->ndim; d++)
	{
		dims[d] = X->dims[d] + pads[d] + pads[X->ndim + d];
		if (dims[d] < 0)
			return ie_op_error(ctx, "pads cut dimension %d (%lld) below 0", d,
							   (long long) X->dims[d]);
		/* what negative pads leave of the dimension: [lo, lo + keep) */
		lo[d] = pads[d] < 0 ? -pads[d] : 0;
		keep[d] = X->dims[d] - lo[d] - (pads[X->ndim + d] < 0 ? -pads[X->ndim + d] : 0);
		if (mode != PAD_CONSTANT && dims[d] > 0 &&
			(X->dims[d] == 0 || (mode == PAD_WRAP && keep[d] <= 0)))
			return ie_op_error(ctx, "mode %s cannot pad the empty dimension %d", mode_s, d);
	}
	if ((o = new_output_as(ctx, X->dtype, X->ndim, dims, true)) == NULL)
		return -1;
	istride[X->ndim > 0 ? X->ndim - 1 : 0] = 1;
	for (int d = X->ndim - 2; d >= 0; d--)
		istride[d] = istride[d + 1] * X->dims[d + 1];
	n = ie_tensor_numel(o);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		src = 0;
		bool		fill = false;

		for (int d = 0; d < X->ndim && !fill; d++)
		{
			int64_t		j = idx[d] - pads[d];

			j = mode == PAD_WRAP ? pad_wrap_source(j, lo[d], keep[d]) :
				pad_source(j, X->dims[d], mode);
			if (j < 0)
				fill = true;
			else
				src += j * istride[d];
		}
		memcpy((char *) o->data + i * es, fill ? cval : (const char *) X->data + src * es, es);
		for (int d = X->ndim - 1; d >= 0; d--)
		{
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return 0;
}

/* DepthToSpace's and SpaceToDepth's modes (mode_of's values). */
static const char *const block_modes[] = {"DCR", "CRD", NULL};

/*
 * The blocksize (required, positive) and mode (DCR by default; CRD from
 * DepthToSpace-11 and SpaceToDepth-28, the loader refusing the attribute
 * before) of DepthToSpace and SpaceToDepth into *bs and *crd.
 */
static int
block_attrs(ie_node_ctx *ctx, int64_t *bs, bool *crd)
{
	int			mode;

	if (ie_attr_find(ctx, "blocksize") == NULL)
		return ie_op_error(ctx, "attribute 'blocksize' is required");
	*bs = ie_attr_int(ctx, "blocksize", 0);
	if (*bs <= 0)
		return ie_op_error(ctx, "blocksize must be positive, got %lld", (long long) *bs);
	if (ie_attr_choice(ctx, "mode", "DCR", block_modes, &mode) != 0)
		return -1;
	*crd = mode == 1;
	return 0;
}

/* block_attrs: run by the loader on every DepthToSpace and SpaceToDepth. */
static int
block_check_attrs(ie_node_ctx *ctx)
{
	int64_t		bs;
	bool		crd;

	return block_attrs(ctx, &bs, &crd);
}

/*
 * The output of DepthToSpace or SpaceToDepth (dims, rank 4): input x
 * viewed as the 6-D shape view (contiguous), its axes permuted by perm,
 * copied out contiguously (strided_copy_par), which is the spec's
 * reshape, transpose, reshape.
 */
static int
block_permute(ie_node_ctx *ctx, const ie_tensor *x, const int64_t *view,
			  const int *perm, const int64_t *dims)
{
	int64_t		vstride[6],
				pdims[6],
				pstride[6],
				acc = 1;
	ie_tensor  *o;

	for (int d = 5; d >= 0; d--)
	{
		vstride[d] = acc;
		acc *= view[d];
	}
	for (int d = 0; d < 6; d++)
	{
		pdims[d] = view[perm[d]];
		pstride[d] = vstride[perm[d]];
	}
	if ((o = new_output_as(ctx, x->dtype, 4, dims, true)) == NULL)
		return -1;
	strided_copy_par(o->data, x->data, ie_dtype_size(x->dtype), 6, pdims, 0, pstride,
					 ctx->n_threads);
	return 0;
}

/*
 * DepthToSpace (opsets 1, 11, 13, 28): input [N, C, H, W] of any element
 * type, blocksize b; output [N, C / b^2, H * b, W * b], the channels moved
 * into b x b spatial blocks.  Mode DCR (the default; the only one before
 * opset 11) reads channel (i * b + j) * C / b^2 + c for block offset
 * (i, j) of output channel c; CRD reads (c * b + i) * b + j (ONNX
 * Operators.md, DepthToSpace: reshape, transpose [0, 3, 4, 1, 5, 2] or
 * [0, 1, 4, 2, 5, 3], reshape).  Errors: an input not of rank 4, a
 * blocksize not positive, C not a multiple of b^2; a mode other than DCR
 * or CRD is refused at load.
 */
static int
op_depth_to_space(ie_node_ctx *ctx)
{
	static const int dcr[6] = {0, 3, 4, 1, 5, 2};
	static const int crd[6] = {0, 1, 4, 2, 5, 3};
	const ie_tensor *x = need_input(ctx, 0, "input");
	int64_t		bs,
				n,
				c,
				h,
				w,
				bb,
				cb,
				view[6],
				dims[4];
	bool		crd_mode;

	if (x == NULL || block_attrs(ctx, &bs, &crd_mode) != 0)
		return -1;
	if (x->ndim != 4)
		return ie_op_error(ctx, "input must have rank 4 ([N, C, H, W]), got rank %d", x->ndim);
	n = x->dims[0];
	c = x->dims[1];
	h = x->dims[2];
	w = x->dims[3];
	if (__builtin_mul_overflow(bs, bs, &bb) || c % bb != 0)
		return ie_op_error(ctx, "channels %lld are not a multiple of blocksize^2 (%lld^2)",
						   (long long) c, (long long) bs);
	cb = c / bb;
	if (crd_mode)
	{
		view[0] = n, view[1] = cb, view[2] = bs, view[3] = bs, view[4] = h, view[5] = w;
	}
	else
	{
		view[0] = n, view[1] = bs, view[2] = bs, view[3] = cb, view[4] = h, view[5] = w;
	}
	dims[0] = n;
	dims[1] = cb;
	if (__builtin_mul_overflow(h, bs, &dims[2]) || __builtin_mul_overflow(w, bs, &dims[3]))
		return ie_op_error(ctx, "output dims %lld x %lld times blocksize %lld pass the engine's limit",
						   (long long) h, (long long) w, (long long) bs);
	return block_permute(ctx, x, view, crd_mode ? crd : dcr, dims);
}

/*
 * SpaceToDepth (opsets 1, 13, 28): input [N, C, H, W] of any element
 * type, blocksize b; output [N, C * b^2, H / b, W / b], the inverse of
 * DepthToSpace: each b x b block moved into channels, in DCR order (the
 * default, the only one before opset 28; reshape to [N, C, H / b, b, W /
 * b, b], transpose [0, 3, 5, 1, 2, 4]) or CRD ([0, 1, 3, 5, 2, 4]; ONNX
 * Operators.md, SpaceToDepth-28).  Errors: an input not of rank 4, a
 * blocksize not positive, H or W not a multiple of it, an output channel
 * count past int64.
 */
static int
op_space_to_depth(ie_node_ctx *ctx)
{
	static const int dcr[6] = {0, 3, 5, 1, 2, 4};
	static const int crd[6] = {0, 1, 3, 5, 2, 4};
	const ie_tensor *x = need_input(ctx, 0, "input");
	int64_t		bs,
				h,
				w,
				view[6],
				dims[4];
	bool		crd_mode;

	if (x == NULL || block_attrs(ctx, &bs, &crd_mode) != 0)
		return -1;
	if (x->ndim != 4)
		return ie_op_error(ctx, "input must have rank 4 ([N, C, H, W]), got rank %d", x->ndim);
	h = x->dims[2];
	w = x->dims[3];
	if (h % bs != 0 || w % bs != 0)
		return ie_op_error(ctx, "spatial dims %lld x %lld are not multiples of blocksize %lld",
						   (long long) h, (long long) w, (long long) bs);
	dims[0] = x->dims[0];
	if (__builtin_mul_overflow(bs, bs, &dims[1]) ||
		__builtin_mul_overflow(dims[1], x->dims[1], &dims[1]))
		return ie_op_error(ctx, "output channels %lld * %lld^2 pass the engine's limit",
						   (long long) x->dims[1], (long long) bs);
	dims[2] = h / bs;
	dims[3] = w / bs;
	view[0] = x->dims[0], view[1] = x->dims[1], view[2] = dims[2], view[3] = bs;
	view[4] = dims[3], view[5] = bs;
	return block_permute(ctx, x, view, crd_mode ? crd : dcr, dims);
}

const ie_op_def ie_ops_shape[] = {
	{"Constant", op_constant},
	{"Concat", op_concat},
	{"Reshape", op_reshape},
	{"Flatten", op_flatten},
	{"Transpose", op_transpose},
	{"Squeeze", op_squeeze},
	{"Unsqueeze", op_unsqueeze},
	{"Slice", op_slice},
	{"Shape", op_shape},
	{"Size", op_size},
	{"Cast", op_cast},
	{"CastLike", op_castlike},
	{"Expand", op_expand},
	{"Tile", op_tile},
	{"ConstantOfShape", op_constant_of_shape},
	{"Range", op_range},
	{"Split", op_split},
	{"Pad", op_pad},
	{"DepthToSpace", op_depth_to_space},
	{"SpaceToDepth", op_space_to_depth},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_shape[] = {
	{"Cast", cast_check_attrs},
	{"Pad", pad_check_attrs},
	{"Tile", tile_check_attrs},
	{"DepthToSpace", block_check_attrs},
	{"SpaceToDepth", block_check_attrs},
	{NULL, NULL}
};
