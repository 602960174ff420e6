/*
 * ops.c
 *	  The native CUDA operators: each reads its node's attributes like the
 *	  CPU operator of the same name (ONNX operator specification), checks
 *	  that the case is one it implements, and queues its work on the
 *	  thread's stream: cuBLAS for MatMul and Gemm, cuDNN for Conv and
 *	  pooling, kernels.cu for the rest, cudaMemcpy*Async for the shape and
 *	  copy operators.  A case it does not implement (another dtype, rank or
 *	  attribute value) returns CU_FALLBACK before touching any output, and
 *	  the node runs on the CPU (exec.c); a real error returns -1 with the
 *	  message in the node's error buffer.
 *
 * Threading: operators keep no state; each run uses its own thread's
 * context (stream, handles, pool).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/cuda/cuda_int.h"
#include "worker/engine/cuda/kernels.h"


/*
 * The node's error with buf, a message of cu_err, cu_blas_err or
 * cu_dnn_err, and its kind (cu_error_kind: out of memory or not); -1.
 */
static int
cu_op_status_error(cu_op *op, const char *buf)
{
	ie_node_ctx *nc = cu_op_node(op);

	ie_op_error(nc, "%s", buf);
	nc->err_kind = cu_error_kind(buf);
	return -1;
}

/* The status of a launch or an async copy: 0, or -1 with a message. */
static int
cuda_ok(cu_op *op, cudaError_t e, const char *what)
{
	char		buf[256];

	if (e == cudaSuccess)
		return 0;
	cu_err(buf, sizeof(buf), what, e);
	return cu_op_status_error(op, buf);
}

static int
blas_ok(cu_op *op, cublasStatus_t s, const char *what)
{
	char		buf[256];

	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	cu_blas_err(buf, sizeof(buf), what, s);
	return cu_op_status_error(op, buf);
}

static int
dnn_ok(cu_op *op, cudnnStatus_t s, const char *what)
{
	char		buf[256];

	if (s == CUDNN_STATUS_SUCCESS)
		return 0;
	cu_dnn_err(buf, sizeof(buf), what, s);
	return cu_op_status_error(op, buf);
}

/* Product of dims[lo..hi). */
static int64_t
prod(const int64_t *dims, int lo, int hi)
{
	int64_t		p = 1;

	for (int i = lo; i < hi; i++)
		p *= dims[i];
	return p;
}

/* Row-major element strides of dims. */
static void
strides_of(int nd, const int64_t *dims, int64_t *st)
{
	int64_t		s = 1;

	for (int d = nd - 1; d >= 0; d--)
	{
		st[d] = s;
		s *= dims[d];
	}
}

/* Normalises axis for rank r; -1 when out of range. */
static int
norm_axis(int64_t axis, int r)
{
	if (axis < 0)
		axis += r;
	return (axis < 0 || axis >= r) ? -1 : (int) axis;
}

/* Output 0 as a device copy of input 0 with new dims (Reshape family). */
static int
copy_as(cu_op *op, int ndim, const int64_t *dims)
{
	const ie_dtensor *x = cu_op_dev(op, 0);
	ie_dtensor *y;

	if (x == NULL)
		return -1;
	if (prod(dims, 0, ndim) != cu_numel(x))
		return CU_FALLBACK;		/* the CPU operator names the mismatch */
	y = cu_op_out(op, 0, x->dtype, ndim, dims);
	if (y == NULL)
		return -1;
	if (x->nbytes == 0)
		return 0;
	return cuda_ok(op, cudaMemcpyAsync(y->ptr, x->ptr, x->nbytes, cudaMemcpyDeviceToDevice,
									   cu_op_ctx(op)->stream), "cudaMemcpyAsync");
}

/* ---- element-wise ---- */

/* Add, Sub, Mul, Div, Pow, Max, Min on float with broadcasting. */
static int
op_binary(cu_op *op, int kind)
{
	ie_tensor	a_meta,
				b_meta;
	int64_t		odims[IE_MAX_DIMS];
	cu_bcast	bc;
	int			nd;
	const ie_dtensor *a,
			   *b;
	ie_dtensor *y;

	if (cu_op_n_inputs(op) != 2)
		return CU_FALLBACK;
	memset(&a_meta, 0, sizeof(a_meta));
	memset(&b_meta, 0, sizeof(b_meta));
	cu_op_shape(op, 0, &a_meta.dtype, &a_meta.ndim, a_meta.dims);
	cu_op_shape(op, 1, &b_meta.dtype, &b_meta.ndim, b_meta.dims);
	if (a_meta.dtype != IE_FLOAT || b_meta.dtype != IE_FLOAT)
		return CU_FALLBACK;
	nd = ie_broadcast_shape(&a_meta, &b_meta, odims);
	if (nd < 0 || nd > CU_KMAXD)
		return CU_FALLBACK;
	memset(&bc, 0, sizeof(bc));
	bc.nd = nd;
	for (int d = 0; d < nd; d++)
		bc.dims[d] = odims[d];
	{
		int64_t		sa[IE_MAX_DIMS],
					sb[IE_MAX_DIMS];

		strides_of(a_meta.ndim, a_meta.dims, sa);
		strides_of(b_meta.ndim, b_meta.dims, sb);
		for (int d = 0; d < nd; d++)
		{
			int			ia = d - (nd - a_meta.ndim),
						ib = d - (nd - b_meta.ndim);

			bc.sa[d] = (ia >= 0 && a_meta.dims[ia] != 1) ? sa[ia] : 0;
			bc.sb[d] = (ib >= 0 && b_meta.dims[ib] != 1) ? sb[ib] : 0;
		}
	}
	a = cu_op_dev(op, 0);
	b = cu_op_dev(op, 1);
	if (a == NULL || b == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, nd, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_binary(kind, a->ptr, b->ptr, y->ptr, bc, cu_numel(y),
								   cu_op_ctx(op)->stream), "binary kernel");
}

static int op_add(cu_op *op) { return op_binary(op, CU_ADD); }
static int op_sub(cu_op *op) { return op_binary(op, CU_SUB); }
static int op_mul(cu_op *op) { return op_binary(op, CU_MUL); }
static int op_div(cu_op *op) { return op_binary(op, CU_DIV); }
static int op_pow(cu_op *op) { return op_binary(op, CU_POW); }
static int op_max(cu_op *op) { return op_binary(op, CU_MAX); }
static int op_min(cu_op *op) { return op_binary(op, CU_MIN); }

/* A float scalar input i on the host into *v (left alone when omitted). */
static int
scalar_input(cu_op *op, int i, float *v)
{
	const ie_tensor *t;

	if (!cu_op_has(op, i))
		return 0;
	t = cu_op_host(op, i);
	if (t == NULL)
		return -1;
	if (t->dtype != IE_FLOAT || ie_tensor_numel(t) != 1)
		return CU_FALLBACK;
	*v = ((const float *) t->data)[0];
	return 0;
}

/* The float unary operators. */
static int
op_unary(cu_op *op, int kind, float p0, float p1)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT)
		return CU_FALLBACK;
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, x->ndim, x->dims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_unary(kind, x->ptr, y->ptr, cu_numel(x), p0, p1,
								  cu_op_ctx(op)->stream), "unary kernel");
}

static int op_relu(cu_op *op) { return op_unary(op, CU_RELU, 0, 0); }
static int op_sigmoid(cu_op *op) { return op_unary(op, CU_SIGMOID, 0, 0); }
static int op_tanh(cu_op *op) { return op_unary(op, CU_TANH, 0, 0); }
static int op_sqrt(cu_op *op) { return op_unary(op, CU_SQRT, 0, 0); }
static int op_erf(cu_op *op) { return op_unary(op, CU_ERF, 0, 0); }
static int op_exp(cu_op *op) { return op_unary(op, CU_EXP, 0, 0); }
static int op_log(cu_op *op) { return op_unary(op, CU_LOG, 0, 0); }
static int op_neg(cu_op *op) { return op_unary(op, CU_NEG, 0, 0); }
static int op_abs(cu_op *op) { return op_unary(op, CU_ABS, 0, 0); }
static int op_reciprocal(cu_op *op) { return op_unary(op, CU_RECIPROCAL, 0, 0); }
static int op_floor(cu_op *op) { return op_unary(op, CU_FLOOR, 0, 0); }
static int op_ceil(cu_op *op) { return op_unary(op, CU_CEIL, 0, 0); }
static int op_hardswish(cu_op *op) { return op_unary(op, CU_HARDSWISH, 0, 0); }

/* Gelu (opset 20): approximate "none" or "tanh"; the CPU operator refuses another. */
static int
op_gelu(cu_op *op)
{
	const char *form = ie_attr_string(cu_op_node(op), "approximate", "none");

	if (strcmp(form, "none") == 0)
		return op_unary(op, CU_GELU, 0, 0);
	if (strcmp(form, "tanh") == 0)
		return op_unary(op, CU_GELU_TANH, 0, 0);
	return CU_FALLBACK;
}

static int
op_hardsigmoid(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);

	return op_unary(op, CU_HARDSIGMOID, ie_attr_float(nc, "alpha", 0.2f),
					ie_attr_float(nc, "beta", 0.5f));
}

static int
op_leakyrelu(cu_op *op)
{
	return op_unary(op, CU_LEAKYRELU, ie_attr_float(cu_op_node(op), "alpha", 0.01f), 0);
}

/* Clip: bounds from attributes (opset < 11) or scalar inputs 1 and 2. */
static int
op_clip(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	float		lo = -INFINITY,
				hi = INFINITY;
	int			rc;

	if (nc->opset < 11)
	{
		lo = ie_attr_float(nc, "min", -INFINITY);
		hi = ie_attr_float(nc, "max", INFINITY);
	}
	else if ((rc = scalar_input(op, 1, &lo)) != 0 || (rc = scalar_input(op, 2, &hi)) != 0)
		return rc;
	return op_unary(op, CU_CLIP, lo, hi);
}

/* Identity: a device copy. */
static int
op_identity(cu_op *op)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];

	cu_op_shape(op, 0, &dt, &nd, dims);
	return copy_as(op, nd, dims);
}

/* Input 0 converted to `to` between float, int32 and int64; same type: a copy. */
static int
cast_as(cu_op *op, int64_t to)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if ((int64_t) dt == to)
		return copy_as(op, nd, dims);
	if (!((dt == IE_FLOAT || dt == IE_INT32 || dt == IE_INT64) &&
		  (to == IE_FLOAT || to == IE_INT32 || to == IE_INT64)))
		return CU_FALLBACK;
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, (ie_dtype) to, nd, dims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_cast((int) dt, (int) to, x->ptr, y->ptr, cu_numel(x),
								 cu_op_ctx(op)->stream), "cast kernel");
}

/* Cast to attribute 'to' (cast_as). */
static int
op_cast(cu_op *op)
{
	return cast_as(op, ie_attr_int(cu_op_node(op), "to", 0));
}

/* CastLike (opset 15): Cast to input 1's element type (cast_as). */
static int
op_castlike(cu_op *op)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];

	cu_op_shape(op, 1, &dt, &nd, dims);
	return cast_as(op, (int64_t) dt);
}

/* ---- normalisation, reductions, softmax ---- */

/* Inference-mode BatchNormalization, one output. */
static int
op_batchnorm(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];
	const ie_dtensor *x,
			   *p[4];
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT || nd < 2 || cu_op_has_out(op, 1) || cu_op_has_out(op, 2) ||
		ie_attr_int(nc, "training_mode", 0) != 0 || cu_op_n_inputs(op) != 5)
		return CU_FALLBACK;
	for (int i = 1; i < 5; i++)
	{
		ie_dtype	pdt;
		int			pnd;
		int64_t		pdims[IE_MAX_DIMS];

		cu_op_shape(op, i, &pdt, &pnd, pdims);
		if (pdt != IE_FLOAT || prod(pdims, 0, pnd) != dims[1])
			return CU_FALLBACK;
	}
	x = cu_op_dev(op, 0);
	for (int i = 0; i < 4; i++)
		p[i] = cu_op_dev(op, i + 1);
	if (x == NULL || p[0] == NULL || p[1] == NULL || p[2] == NULL || p[3] == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, nd, dims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_batchnorm(x->ptr, y->ptr, dims[0], dims[1], prod(dims, 2, nd),
									  p[0]->ptr, p[1]->ptr, p[2]->ptr, p[3]->ptr,
									  ie_attr_float(nc, "epsilon", 1e-5f),
									  cu_op_ctx(op)->stream), "batchnorm kernel");
}

/*
 * ReduceSum/Mean/Max/Min over a contiguous run of axes (attribute axes, or
 * input 1 for ReduceSum from opset 13 and the others from opset 18).
 */
static int
op_reduce(cu_op *op, int kind, int axes_input_from)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt;
	int			nd,
				ond = 0;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	bool		red[IE_MAX_DIMS] = {false};
	int			lo = -1,
				hi = -1,
				n_axes = 0;
	int64_t		keep = ie_attr_int(nc, "keepdims", 1);
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT || ie_attr_int(nc, "noop_with_empty_axes", 0) != 0)
		return CU_FALLBACK;
	if (nc->opset >= axes_input_from)
	{
		if (cu_op_has(op, 1))
		{
			const ie_tensor *a = cu_op_host(op, 1);

			if (a == NULL)
				return -1;
			n_axes = (int) ie_tensor_numel(a);
			for (int i = 0; i < n_axes; i++)
			{
				int64_t		v;
				int			ax;

				if (ie_tensor_get_i64(a, i, &v) != 0 || (ax = norm_axis(v, nd)) < 0)
					return CU_FALLBACK;
				red[ax] = true;
			}
		}
	}
	else
	{
		const int64_t *axes;

		n_axes = ie_attr_ints(nc, "axes", &axes);
		for (int i = 0; i < n_axes; i++)
		{
			int			ax = norm_axis(axes[i], nd);

			if (ax < 0)
				return CU_FALLBACK;
			red[ax] = true;
		}
		if (n_axes < 0)
			n_axes = 0;
	}
	if (n_axes == 0)
		for (int d = 0; d < nd; d++)
			red[d] = true;
	for (int d = 0; d < nd; d++)
		if (red[d])
		{
			if (lo < 0)
				lo = d;
			else if (hi != d)
				return CU_FALLBACK;	/* not contiguous */
			hi = d + 1;
		}
	if (lo < 0)
		return CU_FALLBACK;
	for (int d = 0; d < nd; d++)
	{
		if (!red[d])
			odims[ond++] = dims[d];
		else if (keep)
			odims[ond++] = 1;
	}
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	if (prod(dims, lo, hi) == 0)
		return CU_FALLBACK;		/* empty reduction: the CPU's identities */
	y = cu_op_out(op, 0, IE_FLOAT, ond, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_reduce(kind, x->ptr, y->ptr, prod(dims, 0, lo), prod(dims, lo, hi),
								   prod(dims, hi, nd), cu_op_ctx(op)->stream), "reduce kernel");
}

static int op_reducesum(cu_op *op) { return op_reduce(op, CU_RSUM, 13); }
static int op_reducemean(cu_op *op) { return op_reduce(op, CU_RMEAN, 18); }
static int op_reducemax(cu_op *op) { return op_reduce(op, CU_RMAX, 18); }
static int op_reducemin(cu_op *op) { return op_reduce(op, CU_RMIN, 18); }

/* GlobalAveragePool / GlobalMaxPool: [N, C, ...] to [N, C, 1, ...]. */
static int
op_global_pool(cu_op *op, int kind)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT || nd < 3 || prod(dims, 2, nd) == 0)
		return CU_FALLBACK;
	for (int d = 0; d < nd; d++)
		odims[d] = d < 2 ? dims[d] : 1;
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, nd, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_reduce(kind, x->ptr, y->ptr, dims[0] * dims[1], prod(dims, 2, nd), 1,
								   cu_op_ctx(op)->stream), "reduce kernel");
}

static int op_globalavgpool(cu_op *op) { return op_global_pool(op, CU_RMEAN); }
static int op_globalmaxpool(cu_op *op) { return op_global_pool(op, CU_RMAX); }

/* Softmax / LogSoftmax: opset < 13 flattens at axis (default 1); 13+ one axis (default -1). */
static int
op_softmax_kind(cu_op *op, int log)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt;
	int			nd,
				ax;
	int64_t		dims[IE_MAX_DIMS];
	int64_t		outer,
				n,
				inner;
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT || nd < 1)
		return CU_FALLBACK;
	ax = norm_axis(ie_attr_int(nc, "axis", nc->opset < 13 ? 1 : -1), nd);
	if (ax < 0)
		return CU_FALLBACK;
	outer = prod(dims, 0, ax);
	if (nc->opset < 13)
	{
		n = prod(dims, ax, nd);
		inner = 1;
	}
	else
	{
		n = dims[ax];
		inner = prod(dims, ax + 1, nd);
	}
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, nd, dims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_softmax(x->ptr, y->ptr, outer, n, inner, log,
									cu_op_ctx(op)->stream), "softmax kernel");
}

static int op_softmax(cu_op *op) { return op_softmax_kind(op, 0); }
static int op_logsoftmax(cu_op *op) { return op_softmax_kind(op, 1); }

/* LayerNormalization with scale (and bias) of the normalised size; output Y only. */
static int
op_layernorm(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt,
				sdt;
	int			nd,
				snd,
				ax;
	int64_t		dims[IE_MAX_DIMS],
				sdims[IE_MAX_DIMS];
	int64_t		n;
	const ie_dtensor *x,
			   *scale,
			   *bias = NULL;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (dt != IE_FLOAT || nd < 1)
		return CU_FALLBACK;
	for (int j = 1; j < nc->n_outputs; j++)
		if (cu_op_has_out(op, j))
			return CU_FALLBACK;	/* Mean / InvStdDev outputs: CPU */
	ax = norm_axis(ie_attr_int(nc, "axis", -1), nd);
	if (ax < 0)
		return CU_FALLBACK;
	n = prod(dims, ax, nd);
	cu_op_shape(op, 1, &sdt, &snd, sdims);
	if (sdt != IE_FLOAT || prod(sdims, 0, snd) != n || n == 0)
		return CU_FALLBACK;
	if (cu_op_has(op, 2))
	{
		cu_op_shape(op, 2, &sdt, &snd, sdims);
		if (sdt != IE_FLOAT || prod(sdims, 0, snd) != n)
			return CU_FALLBACK;
	}
	x = cu_op_dev(op, 0);
	scale = cu_op_dev(op, 1);
	if (x == NULL || scale == NULL)
		return -1;
	if (cu_op_has(op, 2) && (bias = cu_op_dev(op, 2)) == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, nd, dims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_layernorm(x->ptr, y->ptr, prod(dims, 0, ax), n, scale->ptr,
									  bias != NULL ? bias->ptr : NULL,
									  ie_attr_float(nc, "epsilon", 1e-5f),
									  cu_op_ctx(op)->stream), "layernorm kernel");
}

/* ---- Attention ---- */

static int	blas_math(cu_op *op);

/* Q, K, V or Y of Attention as [batch, heads, sequence, size]: element strides. */
typedef struct att_view
{
	int64_t		seq,
				size,
				sb,
				sh,
				ss;
} att_view;

/* The view of 4-D dims, or 3-D ones with heads heads; false when none fits. */
static bool
att_view_of(int nd, const int64_t *dims, int64_t heads, att_view *v)
{
	if (nd == 4)
	{
		v->seq = dims[2];
		v->size = dims[3];
		v->sh = dims[2] * dims[3];
		v->sb = dims[1] * v->sh;
		v->ss = dims[3];
		return true;
	}
	if (nd != 3 || heads <= 0 || dims[2] % heads != 0)
		return false;
	v->seq = dims[1];
	v->size = dims[2] / heads;
	v->sb = dims[1] * dims[2];
	v->sh = v->size;
	v->ss = dims[2];
	return true;
}

/*
 * One of Attention's products for every batch entry b and query head h,
 * in cuBLAS's column-major terms: C[b, h] (ldc) = alpha op(A[b, g]) B[b, h]
 * with g = h / rep the key/value head of h (A K or V, B Q or the
 * probabilities, C the scores or Y; the views give their strides).  Per
 * batch entry one strided batched call over the heads, or with grouped
 * heads (rep > 1) one per key/value head over its rep query heads, A's
 * stride 0.
 */
static int
att_gemm(cu_op *op, cublasOperation_t ta, int m, int n, int k, float alpha,
		 const float *a, int lda, const att_view *av, const float *b, int ldb,
		 const att_view *bv, float *c, int ldc, const att_view *cv, int64_t B,
		 int64_t Hq, int64_t rep)
{
	const float zero = 0.0f;
	int64_t		per = rep > 1 ? rep : Hq;

	for (int64_t bi = 0; bi < B; bi++)
		for (int64_t h0 = 0; h0 < Hq; h0 += per)
		{
			cublasStatus_t st;

			st = cublasSgemmStridedBatched(cu_op_ctx(op)->blas, ta, CUBLAS_OP_N, m, n, k,
										   &alpha, a + bi * av->sb + h0 / rep * av->sh, lda,
										   rep > 1 ? 0 : (long long) av->sh,
										   b + bi * bv->sb + h0 * bv->sh, ldb,
										   (long long) bv->sh, &zero,
										   c + bi * cv->sb + h0 * cv->sh, ldc,
										   (long long) cv->sh, (int) per);
			if (blas_ok(op, st, "cublasSgemmStridedBatched") != 0)
				return -1;
		}
	return 0;
}

/*
 * attn_mask (input 3) for the kernel: bool or float, rank 1 to 4, its last
 * axis T long and the others broadcasting to (B, Hq, Sq); false for
 * another (the CPU operator takes it, or says what is wrong).
 */
static bool
att_mask_strides(cu_op *op, int64_t B, int64_t Hq, int64_t Sq, int64_t T, cu_attn *p)
{
	ie_dtype	md;
	int			mn;
	int64_t		mdims[IE_MAX_DIMS],
				full[3] = {B, Hq, Sq},
				st = T;

	cu_op_shape(op, 3, &md, &mn, mdims);
	if ((md != IE_FLOAT && md != IE_BOOL) || mn < 1 || mn > 4 || mdims[mn - 1] != T)
		return false;
	for (int i = mn - 2; i >= 0; i--)
	{
		int			ax = 3 - (mn - 1) + i;

		if (mdims[i] != 1 && mdims[i] != full[ax])
			return false;
		p->mst[ax] = mdims[i] == 1 ? 0 : st;
		st *= mdims[i];
	}
	p->mask_bool = md == IE_BOOL;
	return true;
}

/*
 * Attention (opsets 23 to 25) in float, without the cache (past/present),
 * nonpad_kv_seqlen or qk_matmul_output, softmax in float: S = scale Q K^T
 * (cuBLAS), softcap, bias and softmax per row (cu_k_attn_softmax), Y = S V
 * (cuBLAS), Q/K/V/Y read and written in place in the 3-D or 4-D layout.
 * Other cases, and shapes the CPU operator refuses, run on the CPU.
 */
static int
op_attention(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	cu_ctx	   *c = cu_op_ctx(op);
	ie_dtype	dq,
				dk,
				dv;
	int			nq,
				nk,
				nv;
	int64_t		qd[IE_MAX_DIMS],
				kd[IE_MAX_DIMS],
				vd[IE_MAX_DIMS],
				yd[4],
				qh = ie_attr_int(nc, "q_num_heads", 0),
				kvh = ie_attr_int(nc, "kv_num_heads", 0),
				B,
				rows;
	att_view	q,
				k,
				v,
				y,
				sv;
	cu_attn		p = {0};
	const ie_dtensor *xq,
			   *xk,
			   *xv,
			   *xm = NULL;
	ie_dtensor *out;
	float	   *sbuf;
	size_t		cap;
	char		e2[256];
	float		scale;
	int			rc;

	for (int i = 4; i < cu_op_n_inputs(op); i++)
		if (cu_op_has(op, i))
			return CU_FALLBACK;	/* the key/value cache, nonpad_kv_seqlen */
	for (int j = 1; j < nc->n_outputs; j++)
		if (cu_op_has_out(op, j))
			return CU_FALLBACK;
	if (ie_attr_int(nc, "softmax_precision", IE_FLOAT) != IE_FLOAT ||
		ie_attr_int(nc, "qk_matmul_output_mode", 0) != 0)
		return CU_FALLBACK;
	cu_op_shape(op, 0, &dq, &nq, qd);
	cu_op_shape(op, 1, &dk, &nk, kd);
	cu_op_shape(op, 2, &dv, &nv, vd);
	if (dq != IE_FLOAT || dk != IE_FLOAT || dv != IE_FLOAT || nq != nk || nq != nv)
		return CU_FALLBACK;
	if (nq == 4)
	{
		if ((qh != 0 && qh != qd[1]) || (kvh != 0 && kvh != kd[1]) ||
			(nc->opset >= 25 && (qh != 0 || kvh != 0)) || vd[1] != kd[1])
			return CU_FALLBACK;
		qh = qd[1];
		kvh = kd[1];
	}
	if (qh <= 0 || kvh <= 0 || qh % kvh != 0 ||
		!att_view_of(nq, qd, qh, &q) || !att_view_of(nk, kd, kvh, &k) ||
		!att_view_of(nv, vd, kvh, &v) || k.size != q.size || k.seq != v.seq ||
		kd[0] != qd[0] || vd[0] != qd[0])
		return CU_FALLBACK;
	B = qd[0];
	rows = B * qh * q.seq;
	if (rows > 0x7fffffff || k.seq > 0x7fffffff || q.ss > 0x7fffffff ||
		k.ss > 0x7fffffff || v.ss > 0x7fffffff || qh * v.size > 0x7fffffff)
		return CU_FALLBACK;
	p.Hq = qh;
	p.Sq = q.seq;
	p.T = k.seq;
	p.causal = ie_attr_int(nc, "is_causal", 0) != 0;
	p.left = ie_attr_int(nc, "left_window_size", -1);
	p.right = ie_attr_int(nc, "right_window_size", -1);
	p.softcap = ie_attr_float(nc, "softcap", 0.0f);
	if (p.left < -1 || p.right < -1)
		return CU_FALLBACK;
	if (cu_op_has(op, 3) && !att_mask_strides(op, B, qh, q.seq, k.seq, &p))
		return CU_FALLBACK;
	scale = ie_attr_find(nc, "scale") != NULL ? ie_attr_float(nc, "scale", 1.0f) :
		(float) (1.0 / sqrt((double) (q.size > 0 ? q.size : 1)));

	/* Y in Q's layout with V's head size */
	yd[0] = B;
	if (nq == 4)
	{
		yd[1] = qh;
		yd[2] = q.seq;
		yd[3] = v.size;
	}
	else
	{
		yd[1] = q.seq;
		yd[2] = qh * v.size;
	}
	y.sb = qh * q.seq * v.size;
	y.sh = nq == 4 ? q.seq * v.size : v.size;
	y.ss = nq == 4 ? v.size : qh * v.size;
	sv.sb = qh * q.seq * k.seq;
	sv.sh = q.seq * k.seq;
	xq = cu_op_dev(op, 0);
	xk = cu_op_dev(op, 1);
	xv = cu_op_dev(op, 2);
	if (xq == NULL || xk == NULL || xv == NULL ||
		(cu_op_has(op, 3) && (xm = cu_op_dev(op, 3)) == NULL))
		return -1;
	p.mask = xm != NULL ? xm->ptr : NULL;
	if ((out = cu_op_out(op, 0, IE_FLOAT, nq, yd)) == NULL)
		return -1;
	if (cu_numel(out) == 0)
		return 0;
	if (k.seq == 0)				/* no key: every row attends nothing */
		return cuda_ok(op, cudaMemsetAsync(out->ptr, 0, out->nbytes, c->stream),
					   "cudaMemsetAsync");
	if ((sbuf = cu_pool_get(c, (size_t) (rows * k.seq) * sizeof(float), &cap,
							e2, sizeof(e2))) == NULL)
		return cu_op_fail(op, e2, "attention scores");
	if (blas_math(op) != 0)
		rc = -1;
	else if (q.size == 0)
		rc = cuda_ok(op, cudaMemsetAsync(sbuf, 0, (size_t) (rows * k.seq) * sizeof(float),
										 c->stream), "cudaMemsetAsync");
	else
		rc = att_gemm(op, CUBLAS_OP_T, (int) k.seq, (int) q.seq, (int) q.size, scale,
					  xk->ptr, (int) k.ss, &k, xq->ptr, (int) q.ss, &q, sbuf,
					  (int) k.seq, &sv, B, qh, qh / kvh);
	if (rc == 0)
		rc = cuda_ok(op, cu_k_attn_softmax(sbuf, rows, p, c->stream), "attention softmax kernel");
	if (rc == 0)
		rc = att_gemm(op, CUBLAS_OP_N, (int) v.size, (int) q.seq, (int) k.seq, 1.0f,
					  xv->ptr, (int) v.ss, &v, sbuf, (int) k.seq, &sv, out->ptr,
					  (int) y.ss, &y, B, qh, qh / kvh);
	cu_pool_put(c, sbuf, cap);
	return rc;
}

/* ---- shape and copy operators ---- */

/* Reshape: target from input 1 (0 copies a dim unless allowzero, -1 infers one). */
static int
op_reshape(cu_op *op)
{
	ie_dtype	dt;
	int			nd,
				ond,
				infer = -1;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	int64_t		known = 1;
	int64_t		allowzero = ie_attr_int(cu_op_node(op), "allowzero", 0);
	const ie_tensor *shape;

	if (cu_op_node(op)->opset < 5 || !cu_op_has(op, 1))
		return CU_FALLBACK;
	cu_op_shape(op, 0, &dt, &nd, dims);
	shape = cu_op_host(op, 1);
	if (shape == NULL)
		return -1;
	ond = (int) ie_tensor_numel(shape);
	if (ond > IE_MAX_DIMS)
		return CU_FALLBACK;
	for (int d = 0; d < ond; d++)
	{
		int64_t		v;

		if (ie_tensor_get_i64(shape, d, &v) != 0)
			return CU_FALLBACK;
		if (v == 0 && !allowzero)
		{
			if (d >= nd)
				return CU_FALLBACK;
			v = dims[d];
		}
		if (v == -1)
		{
			if (infer >= 0)
				return CU_FALLBACK;
			infer = d;
			v = 1;
		}
		else if (v < 0)
			return CU_FALLBACK;
		else
			known *= v;
		odims[d] = v;
	}
	if (infer >= 0)
	{
		if (known == 0 || prod(dims, 0, nd) % known != 0)
			return CU_FALLBACK;
		odims[infer] = prod(dims, 0, nd) / known;
	}
	return copy_as(op, ond, odims);
}

/* Flatten at axis (default 1) into 2-D. */
static int
op_flatten(cu_op *op)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS],
				odims[2];
	int64_t		axis = ie_attr_int(cu_op_node(op), "axis", 1);

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (axis < 0)
		axis += nd;
	if (axis < 0 || axis > nd)
		return CU_FALLBACK;
	odims[0] = prod(dims, 0, (int) axis);
	odims[1] = prod(dims, (int) axis, nd);
	return copy_as(op, 2, odims);
}

/* The axes of (Un)Squeeze: attribute before opset 13, input 1 from 13; -1 when unusable. */
static int
squeeze_axes(cu_op *op, int64_t *axes)
{
	ie_node_ctx *nc = cu_op_node(op);
	int			n = 0;

	if (nc->opset < 13)
	{
		const int64_t *a;

		n = ie_attr_ints(nc, "axes", &a);
		if (n > IE_MAX_DIMS)
			return -1;
		for (int i = 0; i < n; i++)
			axes[i] = a[i];
		return n < 0 ? 0 : n;
	}
	if (cu_op_has(op, 1))
	{
		const ie_tensor *t = cu_op_host(op, 1);

		if (t == NULL)
			return -2;
		n = (int) ie_tensor_numel(t);
		if (n > IE_MAX_DIMS)
			return -1;
		for (int i = 0; i < n; i++)
			if (ie_tensor_get_i64(t, i, &axes[i]) != 0)
				return -1;
	}
	return n;
}

static int
op_squeeze(cu_op *op)
{
	ie_dtype	dt;
	int			nd,
				ond = 0,
				n;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS],
				axes[IE_MAX_DIMS];
	bool		drop[IE_MAX_DIMS] = {false};

	cu_op_shape(op, 0, &dt, &nd, dims);
	n = squeeze_axes(op, axes);
	if (n == -2)
		return -1;
	if (n < 0)
		return CU_FALLBACK;
	for (int i = 0; i < n; i++)
	{
		int			ax = norm_axis(axes[i], nd);

		if (ax < 0 || dims[ax] != 1)
			return CU_FALLBACK;
		drop[ax] = true;
	}
	for (int d = 0; d < nd; d++)
		if (!(n == 0 ? dims[d] == 1 : drop[d]))
			odims[ond++] = dims[d];
	return copy_as(op, ond, odims);
}

static int
op_unsqueeze(cu_op *op)
{
	ie_dtype	dt;
	int			nd,
				ond,
				n,
				src = 0;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS],
				axes[IE_MAX_DIMS];
	bool		ins[IE_MAX_DIMS] = {false};

	cu_op_shape(op, 0, &dt, &nd, dims);
	n = squeeze_axes(op, axes);
	if (n == -2)
		return -1;
	if (n <= 0 || nd + n > IE_MAX_DIMS)
		return CU_FALLBACK;
	ond = nd + n;
	for (int i = 0; i < n; i++)
	{
		int			ax = norm_axis(axes[i], ond);

		if (ax < 0 || ins[ax])
			return CU_FALLBACK;
		ins[ax] = true;
	}
	for (int d = 0; d < ond; d++)
		odims[d] = ins[d] ? 1 : dims[src++];
	return copy_as(op, ond, odims);
}

/* Shape: the input's dims as a host int64 tensor (no start/end). */
static int
op_shape(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS];
	int64_t		n;
	ie_tensor  *t;

	if (ie_attr_find(nc, "start") != NULL || ie_attr_find(nc, "end") != NULL)
		return CU_FALLBACK;
	cu_op_shape(op, 0, &dt, &nd, dims);
	n = nd;
	t = ie_tensor_new(IE_INT64, 1, &n);
	if (t == NULL)
		return ie_op_error(nc, "out of memory");
	for (int d = 0; d < nd; d++)
		((int64_t *) t->data)[d] = dims[d];
	cu_op_out_host(op, 0, t);
	return 0;
}

/* Transpose by perm (default: reversed axes). */
static int
op_transpose(cu_op *op)
{
	ie_dtype	dt;
	int			nd,
				np;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS],
				st[IE_MAX_DIMS];
	const int64_t *perm;
	int			pv[IE_MAX_DIMS];
	bool		seen[IE_MAX_DIMS] = {false};
	cu_strided	sp;
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	np = ie_attr_ints(cu_op_node(op), "perm", &perm);
	for (int d = 0; d < nd; d++)
	{
		pv[d] = np < 0 ? nd - 1 - d : (d < np ? (int) perm[d] : -1);
		if (pv[d] < 0 || pv[d] >= nd || seen[pv[d]])
			return CU_FALLBACK;
		seen[pv[d]] = true;
	}
	if (np >= 0 && np != nd)
		return CU_FALLBACK;
	strides_of(nd, dims, st);
	memset(&sp, 0, sizeof(sp));
	sp.nd = nd;
	for (int d = 0; d < nd; d++)
	{
		odims[d] = dims[pv[d]];
		sp.dims[d] = odims[d];
		sp.st[d] = st[pv[d]];
	}
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, dt, nd, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_strided(ie_dtype_size(dt), x->ptr, y->ptr, sp, cu_numel(y),
									cu_op_ctx(op)->stream), "transpose kernel");
}

/* Concat along axis: one 2-D copy per input. */
static int
op_concat(cu_op *op)
{
	int			n = cu_op_n_inputs(op);
	ie_dtype	dt0,
				dt;
	int			nd0,
				nd,
				ax;
	int64_t		dims0[IE_MAX_DIMS],
				dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	int64_t		total = 0,
				outer,
				inner,
				off = 0;
	size_t		es;
	ie_dtensor *y;

	if (n < 1 || !cu_op_has(op, 0))
		return CU_FALLBACK;
	cu_op_shape(op, 0, &dt0, &nd0, dims0);
	ax = norm_axis(ie_attr_int(cu_op_node(op), "axis", 0), nd0);
	if (ax < 0 || (es = ie_dtype_size(dt0)) == 0)
		return CU_FALLBACK;
	for (int i = 0; i < n; i++)
	{
		if (!cu_op_has(op, i))
			return CU_FALLBACK;
		cu_op_shape(op, i, &dt, &nd, dims);
		if (dt != dt0 || nd != nd0)
			return CU_FALLBACK;
		for (int d = 0; d < nd; d++)
			if (d != ax && dims[d] != dims0[d])
				return CU_FALLBACK;
		total += dims[ax];
	}
	memcpy(odims, dims0, sizeof(odims));
	odims[ax] = total;
	outer = prod(dims0, 0, ax);
	inner = prod(dims0, ax + 1, nd0);
	for (int i = 0; i < n; i++)
		if (cu_op_dev(op, i) == NULL)
			return -1;
	y = cu_op_out(op, 0, dt0, nd0, odims);
	if (y == NULL)
		return -1;
	for (int i = 0; i < n; i++)
	{
		const ie_dtensor *x = cu_op_dev(op, i);
		size_t		width;

		if (x == NULL)
			return -1;
		width = (size_t) (x->dims[ax] * inner) * es;
		if (width > 0 && outer > 0 &&
			cuda_ok(op, cudaMemcpy2DAsync((char *) y->ptr + off * inner * es,
										  (size_t) (total * inner) * es, x->ptr, width, width,
										  (size_t) outer, cudaMemcpyDeviceToDevice,
										  cu_op_ctx(op)->stream), "cudaMemcpy2DAsync") != 0)
			return -1;
		off += x->dims[ax];
	}
	return 0;
}

/* Slice (opset 10+: starts, ends, axes, steps inputs) as a strided copy. */
static int
op_slice(cu_op *op)
{
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS],
				st[IE_MAX_DIMS],
				start[IE_MAX_DIMS],
				step[IE_MAX_DIMS];
	const ie_tensor *t_st,
			   *t_en,
			   *t_ax = NULL,
			   *t_sp = NULL;
	int64_t		n;
	cu_strided	sp;
	const ie_dtensor *x;
	ie_dtensor *y;

	if (cu_op_node(op)->opset < 10 || !cu_op_has(op, 1) || !cu_op_has(op, 2))
		return CU_FALLBACK;
	cu_op_shape(op, 0, &dt, &nd, dims);
	if ((t_st = cu_op_host(op, 1)) == NULL || (t_en = cu_op_host(op, 2)) == NULL)
		return -1;
	if (cu_op_has(op, 3) && (t_ax = cu_op_host(op, 3)) == NULL)
		return -1;
	if (cu_op_has(op, 4) && (t_sp = cu_op_host(op, 4)) == NULL)
		return -1;
	n = ie_tensor_numel(t_st);
	if (ie_tensor_numel(t_en) != n || (t_ax && ie_tensor_numel(t_ax) != n) ||
		(t_sp && ie_tensor_numel(t_sp) != n) || n > nd)
		return CU_FALLBACK;
	for (int d = 0; d < nd; d++)
	{
		start[d] = 0;
		step[d] = 1;
		odims[d] = dims[d];
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		a = i,
					s,
					e,
					k = 1,
					len,
					dlen;
		int			ax;

		if (ie_tensor_get_i64(t_st, i, &s) != 0 || ie_tensor_get_i64(t_en, i, &e) != 0 ||
			(t_ax && ie_tensor_get_i64(t_ax, i, &a) != 0) ||
			(t_sp && ie_tensor_get_i64(t_sp, i, &k) != 0) || k == 0)
			return CU_FALLBACK;
		if ((ax = norm_axis(a, nd)) < 0)
			return CU_FALLBACK;
		dlen = dims[ax];
		if (s < 0)
			s += dlen;
		if (e < 0)
			e += dlen;
		if (k > 0)
		{
			s = s < 0 ? 0 : s > dlen ? dlen : s;
			e = e < 0 ? 0 : e > dlen ? dlen : e;
			len = e > s ? (e - s + k - 1) / k : 0;
		}
		else
		{
			s = s < 0 ? 0 : s > dlen - 1 ? dlen - 1 : s;
			e = e < -1 ? -1 : e > dlen - 1 ? dlen - 1 : e;
			len = s > e ? (s - e + (-k) - 1) / (-k) : 0;
		}
		start[ax] = s;
		step[ax] = k;
		odims[ax] = len;
	}
	strides_of(nd, dims, st);
	memset(&sp, 0, sizeof(sp));
	sp.nd = nd;
	for (int d = 0; d < nd; d++)
	{
		sp.dims[d] = odims[d];
		sp.st[d] = step[d] * st[d];
		if (odims[d] > 0)
			sp.base += start[d] * st[d];
	}
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, dt, nd, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_strided(ie_dtype_size(dt), x->ptr, y->ptr, sp, cu_numel(y),
									cu_op_ctx(op)->stream), "slice kernel");
}

/* Gather along axis with host indices (checked here, as the CPU does). */
static int
op_gather(cu_op *op)
{
	ie_dtype	dt;
	int			nd,
				ond = 0,
				ax;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	const ie_tensor *it;
	ie_tensor  *idx = NULL;
	ie_dtensor *didx = NULL;
	const ie_dtensor *x;
	ie_dtensor *y;
	int64_t		ni;
	char		e2[256];
	int			rc = -1;

	cu_op_shape(op, 0, &dt, &nd, dims);
	ax = norm_axis(ie_attr_int(cu_op_node(op), "axis", 0), nd);
	if (ax < 0 || ie_dtype_size(dt) == 0)
		return CU_FALLBACK;
	it = cu_op_host(op, 1);
	if (it == NULL)
		return -1;
	if ((it->dtype != IE_INT64 && it->dtype != IE_INT32) || nd - 1 + it->ndim > IE_MAX_DIMS)
		return CU_FALLBACK;
	ni = ie_tensor_numel(it);
	idx = ie_tensor_new_uninit(IE_INT64, 1, &ni);
	if (idx == NULL)
		return ie_op_error(cu_op_node(op), "out of memory");
	for (int64_t j = 0; j < ni; j++)
	{
		int64_t		v;

		ie_tensor_get_i64(it, j, &v);
		if (v < 0)
			v += dims[ax];
		if (v < 0 || v >= dims[ax])
		{
			ie_tensor_destroy(&idx);
			return CU_FALLBACK;	/* the CPU operator reports the bad index */
		}
		((int64_t *) idx->data)[j] = v;
	}
	for (int d = 0; d < ax; d++)
		odims[ond++] = dims[d];
	for (int d = 0; d < it->ndim; d++)
		odims[ond++] = it->dims[d];
	for (int d = ax + 1; d < nd; d++)
		odims[ond++] = dims[d];
	x = cu_op_dev(op, 0);
	if (x == NULL)
		goto done;
	if (cu_upload(cu_op_ctx(op), idx, &didx, e2, sizeof(e2)) != 0)
	{
		cu_op_fail(op, e2, "indices to the device");
		goto done;
	}
	y = cu_op_out(op, 0, dt, ond, odims);
	if (y == NULL)
		goto done;
	rc = cuda_ok(op, cu_k_gather(ie_dtype_size(dt), x->ptr, y->ptr, didx->ptr,
								 prod(dims, 0, ax), ni, dims[ax], prod(dims, ax + 1, nd),
								 cu_op_ctx(op)->stream), "gather kernel");
done:
	/* the pool hands didx out again only to later work on this stream */
	cu_dtensor_free(cu_op_ctx(op), &didx);
	ie_tensor_destroy(&idx);
	return rc;
}

/* Resize: 4-D, nearest, asymmetric, floor, from scales (the OCR detector's upsampling). */
static int
op_resize(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	dt;
	int			nd;
	int64_t		dims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	const ie_tensor *sc;
	float		s[4];
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, dims);
	if (nc->opset < 11 || dt != IE_FLOAT || nd != 4 ||
		strcmp(ie_attr_string(nc, "mode", "nearest"), "nearest") != 0 ||
		strcmp(ie_attr_string(nc, "coordinate_transformation_mode", "half_pixel"), "asymmetric") != 0 ||
		strcmp(ie_attr_string(nc, "nearest_mode", "round_prefer_floor"), "floor") != 0 ||
		ie_attr_find(nc, "axes") != NULL || !cu_op_has(op, 2))
		return CU_FALLBACK;
	if (cu_op_has(op, 3))
	{
		ie_dtype	sdt;
		int			snd;
		int64_t		sdims[IE_MAX_DIMS];

		cu_op_shape(op, 3, &sdt, &snd, sdims);
		if (prod(sdims, 0, snd) != 0)
			return CU_FALLBACK;
	}
	sc = cu_op_host(op, 2);
	if (sc == NULL)
		return -1;
	if (sc->dtype != IE_FLOAT || ie_tensor_numel(sc) != 4)
		return CU_FALLBACK;
	memcpy(s, sc->data, sizeof(s));
	if (s[0] != 1.0f || s[1] != 1.0f || !(s[2] > 0.0f) || !(s[3] > 0.0f))
		return CU_FALLBACK;
	for (int d = 0; d < 4; d++)
		odims[d] = (int64_t) floorf((float) dims[d] * s[d]);
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, 4, odims);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_resize_nearest(x->ptr, y->ptr, dims[0] * dims[1], dims[2], dims[3],
										   odims[2], odims[3], s[2], s[3],
										   cu_op_ctx(op)->stream), "resize kernel");
}

/* ---- 16-bit operands (FP16/BF16 models: docs/gpu.md "Precision") ---- */

/* Whether op's model takes MatMul, Gemm and Conv inputs in 16 bits. */
static bool
use16(cu_op *op)
{
	ie_precision p = cu_op_precision(op);

	return p == IE_PRECISION_FP16 || p == IE_PRECISION_BF16;
}

/* Whether the 16-bit type is bfloat16 (else IEEE half). */
static bool
is_bf16(cu_op *op)
{
	return cu_op_precision(op) == IE_PRECISION_BF16;
}

/* A 16-bit operand: the model's converted weight, or a converted copy in tmp. */
typedef struct in16
{
	const void *ptr;
	void	   *tmp;			/* pool buffer (capacity cap) or NULL */
	size_t		cap;
} in16;

/*
 * Input i as 16-bit data in *o: the weight converted at load when it is
 * one, else input i (float) converted into a buffer of the thread's pool,
 * which in16_put returns.  0, or -1 with the node's error set.
 */
static int
in16_get(cu_op *op, int i, in16 *o)
{
	const ie_dtensor *w = cu_op_dev16(op, i);
	const ie_dtensor *x;
	char		e2[256];

	o->ptr = NULL;
	o->tmp = NULL;
	o->cap = 0;
	if (w != NULL)
	{
		o->ptr = w->ptr;
		return 0;
	}
	if ((x = cu_op_dev(op, i)) == NULL)
		return -1;
	o->tmp = cu_pool_get(cu_op_ctx(op), x->nbytes / 2 > 0 ? x->nbytes / 2 : 1, &o->cap,
						 e2, sizeof(e2));
	if (o->tmp == NULL)
	{
		cu_op_fail(op, e2, "16-bit copy of input %d", i);
		return -1;
	}
	o->ptr = o->tmp;
	return cuda_ok(op, cu_k_to_16(is_bf16(op), x->ptr, o->tmp, cu_numel(x),
								  cu_op_ctx(op)->stream), "16-bit conversion kernel");
}

/* Returns o's buffer to the pool; stream order keeps it alive for queued work. */
static void
in16_put(cu_op *op, in16 *o)
{
	if (o->tmp != NULL)
		cu_pool_put(cu_op_ctx(op), o->tmp, o->cap);
	o->tmp = NULL;
}

/* ---- cuBLAS ---- */

/* Sets the handle's math mode for this model: FP32, or TF32 tensor cores. */
static int
blas_math(cu_op *op)
{
	return blas_ok(op, cublasSetMathMode(cu_op_ctx(op)->blas,
										 cu_op_tf32(op) ? CUBLAS_TF32_TENSOR_OP_MATH :
										 CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

/*
 * op_matmul's GEMM for an FP16/BF16 model: A and B in 16 bits (converted
 * weights, or activations converted here), FP32 accumulation and output
 * (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F).  Same shapes and
 * strides as the FP32 call.
 */
static int
matmul16(cu_op *op, int64_t M, int64_t N, int64_t K, int64_t batch, long long sa,
		 long long sb, int ond, const int64_t *od)
{
	cudaDataType t = is_bf16(op) ? CUDA_R_16BF : CUDA_R_16F;
	const float one = 1.0f,
				zero = 0.0f;
	in16		a = {0},
				b = {0};
	ie_dtensor *y;
	int			rc = -1;

	if (in16_get(op, 0, &a) != 0 || in16_get(op, 1, &b) != 0)
		goto done;
	y = cu_op_out(op, 0, IE_FLOAT, ond, od);
	if (y == NULL)
		goto done;
	if (cu_numel(y) == 0)
		rc = 0;
	else if (K == 0)
		rc = cuda_ok(op, cudaMemsetAsync(y->ptr, 0, y->nbytes, cu_op_ctx(op)->stream),
					 "cudaMemsetAsync");
	else if (blas_math(op) == 0)
		rc = blas_ok(op, cublasGemmStridedBatchedEx(cu_op_ctx(op)->blas, CUBLAS_OP_N, CUBLAS_OP_N,
													(int) N, (int) M, (int) K, &one,
													b.ptr, t, (int) N, sb, a.ptr, t, (int) K, sa,
													&zero, y->ptr, CUDA_R_32F, (int) N,
													(long long) (M * N), (int) batch,
													CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
					 "cublasGemmStridedBatchedEx");
done:
	in16_put(op, &a);
	in16_put(op, &b);
	return rc;
}

/*
 * MatMul of float A [..., M, K] and B [..., K, N], both rank >= 2: one GEMM
 * when B is 2-D (A's batch folds into M), a strided batched GEMM when the
 * batch dims are equal or A is 2-D.  Row-major C = A B is column-major
 * C^T = B^T A^T, so cuBLAS gets B first.
 */
static int
op_matmul(cu_op *op)
{
	ie_dtype	adt,
				bdt;
	int			and,
				bnd,
				ond;
	int64_t		ad[IE_MAX_DIMS],
				bd[IE_MAX_DIMS],
				od[IE_MAX_DIMS];
	int64_t		M,
				K,
				N,
				batch;
	long long	sa,
				sb;
	const float one = 1.0f,
				zero = 0.0f;
	const ie_dtensor *a,
			   *b;
	ie_dtensor *y;

	cu_op_shape(op, 0, &adt, &and, ad);
	cu_op_shape(op, 1, &bdt, &bnd, bd);
	if (adt != IE_FLOAT || bdt != IE_FLOAT || and < 2 || bnd < 2)
		return CU_FALLBACK;
	M = ad[and - 2];
	K = ad[and - 1];
	N = bd[bnd - 1];
	if (bd[bnd - 2] != K || M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff)
		return CU_FALLBACK;
	if (bnd == 2)
	{
		/* fold A's batch into its rows */
		M = prod(ad, 0, and - 1);
		batch = 1;
		sa = sb = 0;
		ond = and;
		memcpy(od, ad, sizeof(od));
		od[and - 1] = N;
		if (M > 0x7fffffff)
			return CU_FALLBACK;
	}
	else if (and == 2)
	{
		batch = prod(bd, 0, bnd - 2);
		sa = 0;
		sb = (long long) (K * N);
		ond = bnd;
		memcpy(od, bd, sizeof(od));
		od[bnd - 2] = M;
	}
	else
	{
		if (and != bnd)
			return CU_FALLBACK;
		for (int d = 0; d < and - 2; d++)
			if (ad[d] != bd[d])
				return CU_FALLBACK;
		batch = prod(ad, 0, and - 2);
		sa = (long long) (M * K);
		sb = (long long) (K * N);
		ond = and;
		memcpy(od, ad, sizeof(od));
		od[and - 1] = N;
	}
	if (batch > 0x7fffffff)
		return CU_FALLBACK;
	if (use16(op))
		return matmul16(op, M, N, K, batch, sa, sb, ond, od);
	a = cu_op_dev(op, 0);
	b = cu_op_dev(op, 1);
	if (a == NULL || b == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, ond, od);
	if (y == NULL)
		return -1;
	if (cu_numel(y) == 0)
		return 0;
	if (K == 0)
		return cuda_ok(op, cudaMemsetAsync(y->ptr, 0, y->nbytes, cu_op_ctx(op)->stream),
					   "cudaMemsetAsync");
	if (blas_math(op) != 0)
		return -1;
	return blas_ok(op, cublasSgemmStridedBatched(cu_op_ctx(op)->blas, CUBLAS_OP_N, CUBLAS_OP_N,
												 (int) N, (int) M, (int) K, &one,
												 b->ptr, (int) N, sb, a->ptr, (int) K, sa,
												 &zero, y->ptr, (int) N, (long long) (M * N),
												 (int) batch), "cublasSgemmStridedBatched");
}

/*
 * op_gemm's product for an FP16/BF16 model: Y = alpha op(A) op(B) + beta Y
 * with A and B in 16 bits and Y in FP32 (cublasGemmEx, CUBLAS_COMPUTE_32F).
 */
static int
gemm16(cu_op *op, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
	   ie_dtensor *y)
{
	cudaDataType t = is_bf16(op) ? CUDA_R_16BF : CUDA_R_16F;
	in16		a = {0},
				b = {0};
	int			rc = -1;

	if (in16_get(op, 0, &a) == 0 && in16_get(op, 1, &b) == 0)
		rc = blas_ok(op, cublasGemmEx(cu_op_ctx(op)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
									  ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int) N, (int) M, (int) K,
									  &alpha, b.ptr, t, tb ? (int) K : (int) N,
									  a.ptr, t, ta ? (int) M : (int) K, &beta,
									  y->ptr, CUDA_R_32F, (int) N, CUBLAS_COMPUTE_32F,
									  CUBLAS_GEMM_DEFAULT), "cublasGemmEx");
	in16_put(op, &a);
	in16_put(op, &b);
	return rc;
}

/* Gemm: Y = alpha op(A) op(B) + beta C, A and B 2-D, C broadcast to [M, N]. */
static int
op_gemm(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	ie_dtype	adt,
				bdt,
				cdt;
	int			and,
				bnd,
				cnd = 0;
	int64_t		ad[IE_MAX_DIMS],
				bd[IE_MAX_DIMS],
				cd[IE_MAX_DIMS],
				od[2];
	int			ta = (int) ie_attr_int(nc, "transA", 0),
				tb = (int) ie_attr_int(nc, "transB", 0);
	float		alpha = ie_attr_float(nc, "alpha", 1.0f),
				beta = ie_attr_float(nc, "beta", 1.0f);
	int64_t		M,
				K,
				N;
	bool		has_c = cu_op_has(op, 2);
	const ie_dtensor *a = NULL,
			   *b = NULL,
			   *c = NULL;
	ie_dtensor *y;

	cu_op_shape(op, 0, &adt, &and, ad);
	cu_op_shape(op, 1, &bdt, &bnd, bd);
	if (adt != IE_FLOAT || bdt != IE_FLOAT || and != 2 || bnd != 2)
		return CU_FALLBACK;
	M = ta ? ad[1] : ad[0];
	K = ta ? ad[0] : ad[1];
	N = tb ? bd[0] : bd[1];
	if ((tb ? bd[1] : bd[0]) != K || K == 0 || M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff)
		return CU_FALLBACK;
	od[0] = M;
	od[1] = N;
	if (has_c)
	{
		cu_op_shape(op, 2, &cdt, &cnd, cd);
		if (cdt != IE_FLOAT || cnd > 2)
			return CU_FALLBACK;
		for (int d = 0; d < cnd; d++)
			if (cd[d] != 1 && cd[d] != od[2 - cnd + d])
				return CU_FALLBACK;
	}
	/* FP16/BF16: A and B are taken in 16 bits by gemm16 */
	if (!use16(op) && ((a = cu_op_dev(op, 0)) == NULL || (b = cu_op_dev(op, 1)) == NULL))
		return -1;
	if (has_c && (c = cu_op_dev(op, 2)) == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, 2, od);
	if (y == NULL)
		return -1;
	if (M * N == 0)
		return 0;
	if (c != NULL && beta != 0.0f)
	{
		/* Y = C broadcast over [M, N], then the GEMM adds alpha AB to beta Y */
		cu_strided	sp;
		int64_t		cst[2];

		memset(&sp, 0, sizeof(sp));
		sp.nd = 2;
		sp.dims[0] = M;
		sp.dims[1] = N;
		strides_of(cnd, cd, cst);
		for (int d = 0; d < 2; d++)
		{
			int			ic = d - (2 - cnd);

			sp.st[d] = (ic >= 0 && cd[ic] != 1) ? cst[ic] : 0;
		}
		if (cuda_ok(op, cu_k_strided(4, c->ptr, y->ptr, sp, M * N, cu_op_ctx(op)->stream),
					"broadcast kernel") != 0)
			return -1;
	}
	else
		beta = 0.0f;
	if (blas_math(op) != 0)
		return -1;
	if (use16(op))
		return gemm16(op, ta, tb, M, N, K, alpha, beta, y);
	return blas_ok(op, cublasSgemm(cu_op_ctx(op)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
								   ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int) N, (int) M, (int) K,
								   &alpha, b->ptr, tb ? (int) K : (int) N,
								   a->ptr, ta ? (int) M : (int) K, &beta,
								   y->ptr, (int) N), "cublasSgemm");
}

/* ---- cuDNN ---- */

/* The cuDNN descriptors of one Conv or pooling call, destroyed together. */
typedef struct dnn_descs
{
	cudnnTensorDescriptor_t x,
				y;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnPoolingDescriptor_t pool;
} dnn_descs;

static void
dnn_descs_free(dnn_descs *d)
{
	if (d->x != NULL)
		cudnnDestroyTensorDescriptor(d->x);
	if (d->y != NULL)
		cudnnDestroyTensorDescriptor(d->y);
	if (d->w != NULL)
		cudnnDestroyFilterDescriptor(d->w);
	if (d->conv != NULL)
		cudnnDestroyConvolutionDescriptor(d->conv);
	if (d->pool != NULL)
		cudnnDestroyPoolingDescriptor(d->pool);
}

/*
 * Whether an algorithm cuDNN listed for a convolution (its status, math
 * type, and whether it is a transform: FFT or Winograd) may serve in pass
 * second (false: the first of the two passes over the list).  FP32 takes an
 * algorithm in FMA math in the first pass, one in default math in the
 * second, and never a transform, whose digits differ from the direct sums
 * of the CPU and ONNX Runtime; TF32 takes cuDNN's first, in one pass.
 */
static bool
conv_algo_ok(cudnnStatus_t status, cudnnMathType_t math, bool transform, bool tf32,
			 bool second)
{
	if (status != CUDNN_STATUS_SUCCESS)
		return false;
	if (tf32)
		return !second;
	return !transform && math != CUDNN_TENSOR_OP_MATH &&
		(second ? math != CUDNN_FMA_MATH : math == CUDNN_FMA_MATH);
}

/*
 * Creates d's descriptors for a 2-D convolution (NCHW, float) whose
 * forward input fwd_in[4] goes into d->x, or into d->y when transposed (a
 * ConvTranspose is cuDNN's backward-data pass of the forward convolution
 * from its output to its input), with filter wd[4], pads (begin = end),
 * strides, dilations, g groups and the math type tf32 asks for (tensor
 * cores or FMA); the input and filter hold data of type dt (float, or half
 * / bfloat16 with float compute); out[4] receives cuDNN's forward output
 * shape.  The other tensor descriptor is created and left for the caller
 * to set.  0, or -1 after dnn_ok.
 */
static int
conv_descs_set(cu_op *op, dnn_descs *d, bool transposed, const int64_t *fwd_in,
			   const int64_t *wd, const int64_t *pads, const int64_t *strides,
			   const int64_t *dil, int64_t g, bool tf32, cudnnDataType_t dt, int out[4])
{
	cudnnTensorDescriptor_t in;

	if (dnn_ok(op, cudnnCreateTensorDescriptor(&d->x), "cudnnCreateTensorDescriptor") != 0 ||
		dnn_ok(op, cudnnCreateTensorDescriptor(&d->y), "cudnnCreateTensorDescriptor") != 0 ||
		dnn_ok(op, cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor") != 0 ||
		dnn_ok(op, cudnnCreateConvolutionDescriptor(&d->conv), "cudnnCreateConvolutionDescriptor") != 0)
		return -1;
	in = transposed ? d->y : d->x;
	if (dnn_ok(op, cudnnSetTensor4dDescriptor(in, CUDNN_TENSOR_NCHW, dt,
											  (int) fwd_in[0], (int) fwd_in[1],
											  (int) fwd_in[2], (int) fwd_in[3]),
			   "cudnnSetTensor4dDescriptor (forward input)") != 0 ||
		dnn_ok(op, cudnnSetFilter4dDescriptor(d->w, dt, CUDNN_TENSOR_NCHW,
											  (int) wd[0], (int) wd[1], (int) wd[2], (int) wd[3]),
			   "cudnnSetFilter4dDescriptor") != 0 ||
		dnn_ok(op, cudnnSetConvolution2dDescriptor(d->conv, (int) pads[0], (int) pads[1],
												   (int) strides[0], (int) strides[1],
												   (int) dil[0], (int) dil[1],
												   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
			   "cudnnSetConvolution2dDescriptor") != 0 ||
		dnn_ok(op, cudnnSetConvolutionGroupCount(d->conv, (int) g),
			   "cudnnSetConvolutionGroupCount") != 0 ||
		dnn_ok(op, cudnnSetConvolutionMathType(d->conv, tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
			   "cudnnSetConvolutionMathType") != 0 ||
		dnn_ok(op, cudnnGetConvolution2dForwardOutputDim(d->conv, in, d->w, &out[0], &out[1],
														 &out[2], &out[3]),
			   "cudnnGetConvolution2dForwardOutputDim") != 0)
		return -1;
	return 0;
}

/* An int attribute list of exactly n values into out (default dflt); -1 when the node sets another count. */
static int
ints_attr(cu_op *op, const char *name, int n, int64_t dflt, int64_t *out)
{
	const int64_t *v;
	int			got = ie_attr_ints(cu_op_node(op), name, &v);

	for (int i = 0; i < n; i++)
		out[i] = dflt;
	if (got < 0)
		return 0;
	if (got != n)
		return -1;
	for (int i = 0; i < n; i++)
		out[i] = v[i];
	return 0;
}

/* auto_pad NOTSET, or "" (ONNX Runtime reads it as NOTSET, as the CPU does). */
static bool
plain_auto_pad_notset(const char *ap)
{
	return ap[0] == '\0' || strcmp(ap, "NOTSET") == 0;
}

/* auto_pad NOTSET or VALID (pads 0); the SAME_* modes run on the CPU. */
static bool
plain_auto_pad(cu_op *op, int64_t *pads)
{
	const char *ap = ie_attr_string(cu_op_node(op), "auto_pad", "NOTSET");

	if (strcmp(ap, "VALID") == 0)
	{
		for (int i = 0; i < 4; i++)
			pads[i] = 0;
		return true;
	}
	return plain_auto_pad_notset(ap);
}

/* conv_direct's answer for a convolution it leaves to cuDNN */
#define CONV_CUDNN 2

/*
 * The convolutions the classifier, the detector and the recogniser are
 * mostly made of, without cuDNN, whose host-side cost per call (300 to 700
 * us on an H200 under cuDNN 9's legacy API, docs/gpu.md) dwarfs their GPU
 * time at small batches:
 * - 1x1, stride 1, no pads, group 1: for each image a GEMM, W [Cout, Cin]
 *   times X [Cin, H W] (row-major; cuBLAS, column-major, gets
 *   Y^T = X^T W^T), as one strided batched call over N with W's stride 0;
 * - depthwise (group = C, one input channel a group): cu_k_depthwise.
 * Then the bias.  0 or -1 (error set) when done here, CONV_CUDNN otherwise.
 */
static int
conv_direct(cu_op *op, const int64_t *xd, const int64_t *wd, const int64_t *od,
			const int64_t *pads, const int64_t *strides, const int64_t *dil, int64_t g)
{
	cu_ctx	   *c = cu_op_ctx(op);
	bool		pointwise = g == 1 && wd[2] == 1 && wd[3] == 1 && pads[0] == 0 &&
		pads[1] == 0 && strides[0] == 1 && strides[1] == 1;
	bool		depthwise = g == xd[1] && wd[1] == 1 && g > 1;
	const ie_dtensor *x,
			   *w,
			   *b = NULL;
	ie_dtensor *y;
	int64_t		hw = xd[2] * xd[3];
	const float one = 1.0f,
				zero = 0.0f;

	if (!(pointwise || depthwise) || hw > 0x7fffffff || xd[1] > 0x7fffffff ||
		wd[0] > 0x7fffffff || xd[0] > 0x7fffffff)
		return CONV_CUDNN;
	x = cu_op_dev(op, 0);
	w = cu_op_dev(op, 1);
	if (x == NULL || w == NULL || (cu_op_has(op, 2) && (b = cu_op_dev(op, 2)) == NULL))
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, 4, od);
	if (y == NULL)
		return -1;
	if (depthwise)
	{
		cu_window	win = {od[0], od[1], xd[2], xd[3], od[2], od[3],
			(int) wd[2], (int) wd[3], (int) strides[0], (int) strides[1],
			(int) pads[0], (int) pads[1], (int) dil[0], (int) dil[1]};

		return cuda_ok(op, cu_k_depthwise(x->ptr, w->ptr, b != NULL ? b->ptr : NULL, y->ptr,
										  win, (int) (wd[0] / g), c->stream),
					   "depthwise convolution kernel");
	}
	if (blas_math(op) != 0 ||
		blas_ok(op, cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int) hw,
											  (int) wd[0], (int) xd[1], &one, x->ptr, (int) hw,
											  (long long) (xd[1] * hw), w->ptr, (int) xd[1], 0,
											  &zero, y->ptr, (int) hw,
											  (long long) (wd[0] * hw), (int) xd[0]),
				"cublasSgemmStridedBatched (1x1 convolution)") != 0)
		return -1;
	if (b != NULL)
		return cuda_ok(op, cu_k_bias(y->ptr, od[0], od[1], hw, b->ptr, c->stream), "bias kernel");
	return 0;
}

/*
 * Conv, 2-D, float, symmetric pads, any group.  In FP32/TF32, 1x1 and
 * depthwise convolutions go to conv_direct; the others to
 * cudnnConvolutionForward with the first algorithm cuDNN's heuristics
 * offer in the model's math mode (FP32 FMA, or TF32 tensor cores), then
 * the bias as a kernel.  An FP16 or BF16 model convolves 16-bit X
 * (converted here) and W (converted at load) with float compute into a
 * 16-bit Y (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configuration, tensor
 * cores), converted back to float before the bias.
 */
static int
op_conv(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	cu_ctx	   *c = cu_op_ctx(op);
	bool		h16 = use16(op);
	bool		tf32 = cu_op_tf32(op) || h16;	/* tensor-core math */
	cudnnDataType_t dt = !h16 ? CUDNN_DATA_FLOAT :
		is_bf16(op) ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
	in16		x16 = {0},
				w16 = {0};
	void	   *y16 = NULL;
	size_t		y16_cap = 0;
	ie_dtype	xdt,
				wdt;
	int			xnd,
				wnd;
	int64_t		xd[IE_MAX_DIMS],
				wd[IE_MAX_DIMS],
				od[4];
	int64_t		pads[4],
				strides[2],
				dil[2];
	int64_t		g = ie_attr_int(nc, "group", 1);
	dnn_descs	d;
	cudnnConvolutionFwdAlgoPerf_t perf[16];
	int			o4[4],
				n_perf = 0,
				on,
				oc,
				oh,
				ow;
	cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
	int64_t		key[8];
	cu_algo_memo memo;
	size_t		ws_bytes = 0,
				ws_cap = 0;
	void	   *ws = NULL;
	bool		found = false;
	const float one = 1.0f,
				zero = 0.0f;
	const ie_dtensor *x,
			   *w,
			   *b = NULL;
	ie_dtensor *y;
	char		e2[256];
	int			rc = -1;

	cu_op_shape(op, 0, &xdt, &xnd, xd);
	cu_op_shape(op, 1, &wdt, &wnd, wd);
	if (xdt != IE_FLOAT || wdt != IE_FLOAT || xnd != 4 || wnd != 4 || g < 1 ||
		xd[1] != wd[1] * g || wd[0] % g != 0 ||
		ints_attr(op, "pads", 4, 0, pads) != 0 || !plain_auto_pad(op, pads) ||
		ints_attr(op, "strides", 2, 1, strides) != 0 ||
		ints_attr(op, "dilations", 2, 1, dil) != 0 ||
		pads[0] != pads[2] || pads[1] != pads[3] ||
		xd[0] > 0x7fffffff || xd[1] > 0x7fffffff || xd[2] > 0x7fffffff || xd[3] > 0x7fffffff ||
		wd[0] > 0x7fffffff)
		return CU_FALLBACK;
	if (cu_op_has(op, 2))
	{
		ie_dtype	bdt;
		int			bnd;
		int64_t		bd[IE_MAX_DIMS];

		cu_op_shape(op, 2, &bdt, &bnd, bd);
		if (bdt != IE_FLOAT || prod(bd, 0, bnd) != wd[0])
			return CU_FALLBACK;
	}
	od[0] = xd[0];
	od[1] = wd[0];
	for (int i = 0; i < 2; i++)
	{
		if (strides[i] < 1 || dil[i] < 1)
			return CU_FALLBACK;
		od[2 + i] = (xd[2 + i] + 2 * pads[i] - dil[i] * (wd[2 + i] - 1) - 1) / strides[i] + 1;
		if (xd[2 + i] + 2 * pads[i] - dil[i] * (wd[2 + i] - 1) - 1 < 0)
			return CU_FALLBACK;
	}
	if (prod(xd, 0, 4) == 0 || prod(wd, 0, 4) == 0)
		return CU_FALLBACK;

	/* 1x1 and depthwise convolutions in FP32/TF32: no cuDNN call (docs/gpu.md) */
	if (!h16 && (rc = conv_direct(op, xd, wd, od, pads, strides, dil, g)) != CONV_CUDNN)
		return rc;
	rc = -1;
	memset(&d, 0, sizeof(d));
	if (conv_descs_set(op, &d, false, xd, wd, pads, strides, dil, g, tf32, dt, o4) != 0)
		goto done;
	on = o4[0];
	oc = o4[1];
	oh = o4[2];
	ow = o4[3];
	if (on != od[0] || oc != od[1] || oh != od[2] || ow != od[3])
	{
		rc = CU_FALLBACK;		/* cuDNN sees another shape: leave it to the CPU */
		goto done;
	}
	if (dnn_ok(op, cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, dt,
											  on, oc, oh, ow), "cudnnSetTensor4dDescriptor (Y)") != 0)
		goto done;
	/* the same shapes as this node's last run: its algorithm again */
	memcpy(key, xd, 4 * sizeof(int64_t));
	memcpy(key + 4, wd, 4 * sizeof(int64_t));
	if (cu_op_memo_get(op, key, &memo) &&
		cudnnSetConvolutionMathType(d.conv, (cudnnMathType_t) memo.math) == CUDNN_STATUS_SUCCESS)
	{
		algo = (cudnnConvolutionFwdAlgo_t) memo.algo;
		ws_bytes = memo.ws_bytes;
		found = true;
	}
	else if (dnn_ok(op, cudnnGetConvolutionForwardAlgorithm_v7(c->dnn, d.x, d.w, d.conv, d.y, 16,
															   &n_perf, perf),
					"cudnnGetConvolutionForwardAlgorithm_v7") != 0)
		goto done;
	/*
	 * FP32: an algorithm measured in FMA math first, then one in default
	 * math; never FFT or Winograd, whose transforms lose digits (the CPU
	 * and ONNX Runtime sum the products directly).  TF32: cuDNN's first.
	 */
	for (int i = 0; i < 2 * n_perf && !found; i++)
	{
		int			k = i % n_perf;

		if (!conv_algo_ok(perf[k].status, perf[k].mathType,
						  perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
						  perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
						  perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
						  perf[k].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
						  tf32, i >= n_perf))
			continue;
		if (cudnnSetConvolutionMathType(d.conv, tf32 ? perf[k].mathType : CUDNN_FMA_MATH) !=
			CUDNN_STATUS_SUCCESS)
			continue;
		if (cudnnGetConvolutionForwardWorkspaceSize(c->dnn, d.x, d.w, d.conv, d.y, perf[k].algo,
													&ws_bytes) != CUDNN_STATUS_SUCCESS)
			continue;
		algo = perf[k].algo;
		found = true;
		cu_op_memo_put(op, key, (int) algo, (int) (tf32 ? perf[k].mathType : CUDNN_FMA_MATH),
					   ws_bytes);
	}
	if (!found)
	{
		rc = CU_FALLBACK;
		goto done;
	}
	if (h16)
	{
		/* 16-bit X and W, and a 16-bit Y for cuDNN to write */
		if (in16_get(op, 0, &x16) != 0 || in16_get(op, 1, &w16) != 0)
			goto done;
		if ((y16 = cu_pool_get(c, (size_t) prod(od, 0, 4) * 2, &y16_cap, e2, sizeof(e2))) == NULL)
		{
			cu_op_fail(op, e2, "16-bit convolution output");
			goto done;
		}
	}
	else
	{
		x = cu_op_dev(op, 0);
		w = cu_op_dev(op, 1);
		if (x == NULL || w == NULL)
			goto done;
		x16.ptr = x->ptr;
		w16.ptr = w->ptr;
	}
	if (cu_op_has(op, 2) && (b = cu_op_dev(op, 2)) == NULL)
		goto done;
	y = cu_op_out(op, 0, IE_FLOAT, 4, od);
	if (y == NULL)
		goto done;
	if (ws_bytes > 0 && (ws = cu_pool_get(c, ws_bytes, &ws_cap, e2, sizeof(e2))) == NULL)
	{
		cu_op_fail(op, e2, "cuDNN workspace");
		goto done;
	}
	{
		cudnnStatus_t st = cudnnConvolutionForward(c->dnn, &one, d.x, x16.ptr, d.w, w16.ptr,
												   d.conv, algo, ws, ws_bytes, &zero, d.y,
												   h16 ? y16 : y->ptr);

		if (st == CUDNN_STATUS_NOT_SUPPORTED)
		{
			rc = CU_FALLBACK;	/* the executor frees y and runs the CPU's Conv */
			goto done;
		}
		if (dnn_ok(op, st, "cudnnConvolutionForward") != 0)
			goto done;
	}
	if (h16 &&
		cuda_ok(op, cu_k_from_16(is_bf16(op), y16, y->ptr, cu_numel(y), c->stream),
				"16-bit conversion kernel") != 0)
		goto done;
	if (b != NULL &&
		cuda_ok(op, cu_k_bias(y->ptr, od[0], od[1], od[2] * od[3], b->ptr, c->stream),
				"bias kernel") != 0)
		goto done;
	rc = 0;

done:
	/* stream order keeps the workspace and 16-bit buffers alive for the queued work */
	if (ws != NULL)
		cu_pool_put(c, ws, ws_cap);
	if (y16 != NULL)
		cu_pool_put(c, y16, y16_cap);
	in16_put(op, &x16);
	in16_put(op, &w16);
	dnn_descs_free(&d);
	return rc;
}

/*
 * ConvTranspose, 2-D, float, symmetric pads, no output_shape: the gradient
 * of a convolution with respect to its input (cudnnConvolutionBackwardData),
 * whose filter layout [C_in, C_out / group, kH, kW] is ONNX's W.  The output
 * is H_out = stride (H - 1) + output_padding + dilation (kH - 1) + 1 - 2 pad
 * (ONNX ConvTranspose); positions no input reaches get 0, then the bias.
 */
static int
op_convtranspose(cu_op *op)
{
	ie_node_ctx *nc = cu_op_node(op);
	cu_ctx	   *c = cu_op_ctx(op);
	bool		tf32 = cu_op_tf32(op);
	ie_dtype	xdt,
				wdt;
	int			xnd,
				wnd;
	int64_t		xd[IE_MAX_DIMS],
				wd[IE_MAX_DIMS],
				od[4];
	int64_t		pads[4],
				strides[2],
				dil[2],
				opad[2];
	int64_t		g = ie_attr_int(nc, "group", 1);
	dnn_descs	d;
	cudnnConvolutionBwdDataAlgoPerf_t perf[16];
	int			o4[4],
				n_perf = 0,
				on,
				oc,
				oh,
				ow;
	cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
	size_t		ws_bytes = 0,
				ws_cap = 0;
	void	   *ws = NULL;
	bool		found = false;
	const float one = 1.0f,
				zero = 0.0f;
	const ie_dtensor *x,
			   *w,
			   *b = NULL;
	ie_dtensor *y;
	char		e2[256];
	int			rc = -1;

	cu_op_shape(op, 0, &xdt, &xnd, xd);
	cu_op_shape(op, 1, &wdt, &wnd, wd);
	if (xdt != IE_FLOAT || wdt != IE_FLOAT || xnd != 4 || wnd != 4 || g < 1 ||
		wd[0] != xd[1] || xd[1] % g != 0 ||
		ie_attr_find(nc, "output_shape") != NULL ||
		!plain_auto_pad_notset(ie_attr_string(nc, "auto_pad", "NOTSET")) ||
		ints_attr(op, "pads", 4, 0, pads) != 0 ||
		ints_attr(op, "strides", 2, 1, strides) != 0 ||
		ints_attr(op, "dilations", 2, 1, dil) != 0 ||
		ints_attr(op, "output_padding", 2, 0, opad) != 0 ||
		pads[0] != pads[2] || pads[1] != pads[3] ||
		xd[0] > 0x7fffffff || xd[1] > 0x7fffffff || xd[2] > 0x7fffffff || xd[3] > 0x7fffffff ||
		wd[1] * g > 0x7fffffff)
		return CU_FALLBACK;
	od[0] = xd[0];
	od[1] = wd[1] * g;
	for (int i = 0; i < 2; i++)
	{
		if (strides[i] < 1 || dil[i] < 1 || opad[i] < 0 || opad[i] >= strides[i] || pads[i] < 0)
			return CU_FALLBACK;
		od[2 + i] = strides[i] * (xd[2 + i] - 1) + opad[i] + dil[i] * (wd[2 + i] - 1) + 1 -
			2 * pads[i];
		if (od[2 + i] < 1 || od[2 + i] > 0x7fffffff)
			return CU_FALLBACK;
	}
	if (cu_op_has(op, 2))
	{
		ie_dtype	bdt;
		int			bnd;
		int64_t		bd[IE_MAX_DIMS];

		cu_op_shape(op, 2, &bdt, &bnd, bd);
		if (bdt != IE_FLOAT || prod(bd, 0, bnd) != od[1])
			return CU_FALLBACK;
	}
	if (prod(xd, 0, 4) == 0 || prod(wd, 0, 4) == 0)
		return CU_FALLBACK;

	/* cuDNN's view: the forward convolution from y ("dx") to x ("dy") */
	memset(&d, 0, sizeof(d));
	if (conv_descs_set(op, &d, true, od, wd, pads, strides, dil, g, tf32, CUDNN_DATA_FLOAT,
					   o4) != 0 ||
		dnn_ok(op, cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
											  (int) xd[0], (int) xd[1], (int) xd[2], (int) xd[3]),
			   "cudnnSetTensor4dDescriptor (X)") != 0)
		goto done;
	on = o4[0];
	oc = o4[1];
	oh = o4[2];
	ow = o4[3];
	if (on != xd[0] || oc != xd[1] || oh != xd[2] || ow != xd[3])
	{
		rc = CU_FALLBACK;		/* not the forward shape cuDNN expects */
		goto done;
	}
	if (dnn_ok(op, cudnnGetConvolutionBackwardDataAlgorithm_v7(c->dnn, d.w, d.x, d.conv, d.y, 16,
															   &n_perf, perf),
			   "cudnnGetConvolutionBackwardDataAlgorithm_v7") != 0)
		goto done;
	/* as op_conv: FP32 prefers FMA math and never uses FFT or Winograd */
	for (int i = 0; i < 2 * n_perf && !found; i++)
	{
		int			k = i % n_perf;

		if (!conv_algo_ok(perf[k].status, perf[k].mathType,
						  perf[k].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
						  perf[k].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
						  perf[k].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
						  perf[k].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
						  tf32, i >= n_perf))
			continue;
		if (cudnnSetConvolutionMathType(d.conv, tf32 ? perf[k].mathType : CUDNN_FMA_MATH) !=
			CUDNN_STATUS_SUCCESS)
			continue;
		if (cudnnGetConvolutionBackwardDataWorkspaceSize(c->dnn, d.w, d.x, d.conv, d.y,
														 perf[k].algo, &ws_bytes) !=
			CUDNN_STATUS_SUCCESS)
			continue;
		algo = perf[k].algo;
		found = true;
	}
	if (!found)
	{
		rc = CU_FALLBACK;
		goto done;
	}
	x = cu_op_dev(op, 0);
	w = cu_op_dev(op, 1);
	if (x == NULL || w == NULL)
		goto done;
	if (cu_op_has(op, 2) && (b = cu_op_dev(op, 2)) == NULL)
		goto done;
	y = cu_op_out(op, 0, IE_FLOAT, 4, od);
	if (y == NULL)
		goto done;
	if (ws_bytes > 0 && (ws = cu_pool_get(c, ws_bytes, &ws_cap, e2, sizeof(e2))) == NULL)
	{
		cu_op_fail(op, e2, "cuDNN workspace");
		goto done;
	}
	{
		cudnnStatus_t st = cudnnConvolutionBackwardData(c->dnn, &one, d.w, w->ptr, d.x, x->ptr,
														d.conv, algo, ws, ws_bytes, &zero,
														d.y, y->ptr);

		if (st == CUDNN_STATUS_NOT_SUPPORTED)
		{
			rc = CU_FALLBACK;
			goto done;
		}
		if (dnn_ok(op, st, "cudnnConvolutionBackwardData") != 0)
			goto done;
	}
	if (b != NULL &&
		cuda_ok(op, cu_k_bias(y->ptr, od[0], od[1], od[2] * od[3], b->ptr, c->stream),
				"bias kernel") != 0)
		goto done;
	rc = 0;

done:
	if (ws != NULL)
		cu_pool_put(c, ws, ws_cap);
	dnn_descs_free(&d);
	return rc;
}

/* MaxPool and AveragePool, 2-D, symmetric pads, no dilation, ceil_mode 0: cu_k_pool2d. */
static int
op_pool(cu_op *op, bool is_max)
{
	ie_node_ctx *nc = cu_op_node(op);
	cu_ctx	   *c = cu_op_ctx(op);
	ie_dtype	dt;
	int			nd;
	int64_t		xd[IE_MAX_DIMS],
				od[4];
	int64_t		k[2],
				pads[4],
				strides[2],
				dil[2];
	cu_window	win;
	int			kind;
	const ie_dtensor *x;
	ie_dtensor *y;

	cu_op_shape(op, 0, &dt, &nd, xd);
	if (dt != IE_FLOAT || nd != 4 || cu_op_has_out(op, 1) ||
		ints_attr(op, "kernel_shape", 2, -1, k) != 0 || k[0] < 1 || k[1] < 1 ||
		ints_attr(op, "pads", 4, 0, pads) != 0 || !plain_auto_pad(op, pads) ||
		ints_attr(op, "strides", 2, 1, strides) != 0 ||
		ints_attr(op, "dilations", 2, 1, dil) != 0 || dil[0] != 1 || dil[1] != 1 ||
		ie_attr_int(nc, "ceil_mode", 0) != 0 || ie_attr_int(nc, "storage_order", 0) != 0 ||
		pads[0] != pads[2] || pads[1] != pads[3] || strides[0] < 1 || strides[1] < 1 ||
		xd[0] > 0x7fffffff || xd[1] > 0x7fffffff || xd[2] > 0x7fffffff || xd[3] > 0x7fffffff)
		return CU_FALLBACK;
	od[0] = xd[0];
	od[1] = xd[1];
	for (int i = 0; i < 2; i++)
	{
		if (xd[2 + i] + 2 * pads[i] - k[i] < 0 || pads[i] >= k[i])
			return CU_FALLBACK;
		od[2 + i] = (xd[2 + i] + 2 * pads[i] - k[i]) / strides[i] + 1;
	}
	if (prod(xd, 0, 4) == 0)
		return CU_FALLBACK;
	win.n = xd[0];
	win.c = xd[1];
	win.h = xd[2];
	win.w = xd[3];
	win.oh = od[2];
	win.ow = od[3];
	win.kh = (int) k[0];
	win.kw = (int) k[1];
	win.sy = (int) strides[0];
	win.sx = (int) strides[1];
	win.py = (int) pads[0];
	win.px = (int) pads[1];
	win.dy = win.dx = 1;
	kind = is_max ? CU_POOL_MAX :
		ie_attr_int(nc, "count_include_pad", 0) ? CU_POOL_AVG_PAD : CU_POOL_AVG;
	x = cu_op_dev(op, 0);
	if (x == NULL)
		return -1;
	y = cu_op_out(op, 0, IE_FLOAT, 4, od);
	if (y == NULL)
		return -1;
	return cuda_ok(op, cu_k_pool2d(kind, x->ptr, y->ptr, win, c->stream), "pooling kernel");
}

static int op_maxpool(cu_op *op) { return op_pool(op, true); }
static int op_averagepool(cu_op *op) { return op_pool(op, false); }

/* ---- the table ---- */

typedef struct cu_op_def
{
	const char *op_type;
	cu_op_fn	fn;
} cu_op_def;

static const cu_op_def cu_ops[] = {
	{"Add", op_add}, {"Sub", op_sub}, {"Mul", op_mul}, {"Div", op_div}, {"Pow", op_pow},
	{"Max", op_max}, {"Min", op_min},
	{"Relu", op_relu}, {"Sigmoid", op_sigmoid}, {"Tanh", op_tanh}, {"Sqrt", op_sqrt},
	{"Erf", op_erf}, {"Gelu", op_gelu}, {"Exp", op_exp}, {"Log", op_log}, {"Neg", op_neg}, {"Abs", op_abs},
	{"Reciprocal", op_reciprocal}, {"Floor", op_floor}, {"Ceil", op_ceil},
	{"HardSigmoid", op_hardsigmoid}, {"HardSwish", op_hardswish},
	{"LeakyRelu", op_leakyrelu}, {"Clip", op_clip}, {"Identity", op_identity},
	{"Cast", op_cast}, {"CastLike", op_castlike}, {"Attention", op_attention},
	{"BatchNormalization", op_batchnorm}, {"LayerNormalization", op_layernorm},
	{"ReduceSum", op_reducesum}, {"ReduceMean", op_reducemean},
	{"ReduceMax", op_reducemax}, {"ReduceMin", op_reducemin},
	{"GlobalAveragePool", op_globalavgpool}, {"GlobalMaxPool", op_globalmaxpool},
	{"Softmax", op_softmax}, {"LogSoftmax", op_logsoftmax},
	{"Reshape", op_reshape}, {"Flatten", op_flatten}, {"Squeeze", op_squeeze},
	{"Unsqueeze", op_unsqueeze}, {"Shape", op_shape}, {"Transpose", op_transpose},
	{"Concat", op_concat}, {"Slice", op_slice}, {"Gather", op_gather},
	{"Resize", op_resize},
	{"MatMul", op_matmul}, {"Gemm", op_gemm},
	{"Conv", op_conv}, {"ConvTranspose", op_convtranspose},
	{"MaxPool", op_maxpool}, {"AveragePool", op_averagepool},
	{NULL, NULL}
};

/* The native operator for op_type, or NULL. */
cu_op_fn
cu_op_lookup(const char *op_type)
{
	for (const cu_op_def *d = cu_ops; d->op_type != NULL; d++)
		if (strcmp(d->op_type, op_type) == 0)
			return d->fn;
	return NULL;
}
