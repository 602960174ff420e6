/*
 * ops_matmul.c
 *	  ONNX matrix products: MatMul (numpy matmul semantics, with batch
 *	  broadcasting) and Gemm (float32), both on OpenBLAS sgemm.
 *
 * Threading: no state outside the call; OpenBLAS uses its own threads.
 */
#include <cblas.h>
#include <string.h>

#include "worker/engine/op.h"

/*
 * MatMul (opsets 1, 9, 13): A[..., M, K] x B[..., K, N] -> [..., M, N] with
 * numpy rules: a 1-D A is [1, K] and a 1-D B is [K, 1], the added axis being
 * dropped from the result; batch axes broadcast.  When B has no batch
 * (or a batch of ones) the batch of A folds into M: one sgemm.
 */
static int
op_matmul(ie_node_ctx *ctx)
{
	const ie_tensor *A,
			   *B;
	int64_t		adims[IE_MAX_DIMS],
				bdims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	int			ar,
				br,
				nb,
				ond = 0;
	int64_t		M,
				K,
				N,
				nbatch = 1,
				bbatch = 1;
	ie_tensor  *Y;
	const float *ad,
			   *bd;
	float	   *yd;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs A and B");
	A = ctx->inputs[0];
	B = ctx->inputs[1];
	if (A->dtype != IE_FLOAT || B->dtype != IE_FLOAT)
		return ie_op_error(ctx, "unsupported input types %s, %s (only float)",
						   ie_dtype_name(A->dtype), ie_dtype_name(B->dtype));
	if (A->ndim < 1 || B->ndim < 1)
		return ie_op_error(ctx, "inputs must have rank 1 or more");

	/* promote 1-D operands to matrices */
	ar = A->ndim;
	memcpy(adims, A->dims, sizeof(int64_t) * ar);
	if (ar == 1)
	{
		adims[1] = adims[0];
		adims[0] = 1;
		ar = 2;
	}
	br = B->ndim;
	memcpy(bdims, B->dims, sizeof(int64_t) * br);
	if (br == 1)
	{
		bdims[1] = 1;
		br = 2;
	}
	M = adims[ar - 2];
	K = adims[ar - 1];
	N = bdims[br - 1];
	if (bdims[br - 2] != K)
		return ie_op_error(ctx, "inner dimensions differ (%lld vs %lld)",
						   (long long) K, (long long) bdims[br - 2]);

	/* broadcast batch axes */
	nb = (ar > br ? ar : br) - 2;
	if (nb + 2 > IE_MAX_DIMS)
		return ie_op_error(ctx, "rank too large");
	for (int i = 0; i < nb; i++)
	{
		int			ia = i - (nb - (ar - 2));
		int			ib = i - (nb - (br - 2));
		int64_t		da = ia >= 0 ? adims[ia] : 1;
		int64_t		db = ib >= 0 ? bdims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return ie_op_error(ctx, "batch dimensions %lld and %lld do not broadcast",
							   (long long) da, (long long) db);
		odims[i] = da == 1 ? db : da;
		nbatch *= odims[i];
		if (ib >= 0)
			bbatch *= db;
	}
	ond = nb;
	if (A->ndim > 1)
		odims[ond++] = M;
	if (B->ndim > 1)
		odims[ond++] = N;
	Y = ie_tensor_new(IE_FLOAT, ond, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) == 0)
		return 0;
	ad = A->data;
	bd = B->data;
	yd = Y->data;
	if (K == 0)
		return 0;				/* an empty sum: zeros */

	if (bbatch == 1 && ie_tensor_numel(A) == nbatch * M * K)
	{
		/* B is one matrix and A holds the full batch: fold batch into M */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
					(int) (nbatch * M), (int) N, (int) K, 1.0f, ad, (int) K,
					bd, (int) N, 0.0f, yd, (int) N);
		return 0;
	}
	for (int64_t bi = 0; bi < nbatch; bi++)
	{
		/* offsets of this batch entry in A and B, with broadcasting */
		int64_t		rem = bi,
					aoff = 0,
					boff = 0,
					astride = 1,
					bstride = 1;

		for (int i = nb - 1; i >= 0; i--)
		{
			int			ia = i - (nb - (ar - 2));
			int			ib = i - (nb - (br - 2));
			int64_t		idx = rem % odims[i];

			rem /= odims[i];
			if (ia >= 0)
			{
				if (adims[ia] != 1)
					aoff += idx * astride;
				astride *= adims[ia];
			}
			if (ib >= 0)
			{
				if (bdims[ib] != 1)
					boff += idx * bstride;
				bstride *= bdims[ib];
			}
		}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
					(int) M, (int) N, (int) K, 1.0f, ad + aoff * M * K, (int) K,
					bd + boff * K * N, (int) N, 0.0f, yd + bi * M * N, (int) N);
	}
	return 0;
}

/*
 * Gemm (opsets 1..13): Y[M, N] = alpha * A' x B' + beta * C, A' = A or A^T
 * (transA), B' = B or B^T (transB); C (optional) broadcasts to [M, N].
 */
static int
op_gemm(ie_node_ctx *ctx)
{
	const ie_tensor *A,
			   *B,
			   *C;
	float		alpha = ie_attr_float(ctx, "alpha", 1.0f);
	float		beta = ie_attr_float(ctx, "beta", 1.0f);
	int64_t		transA = ie_attr_int(ctx, "transA", 0);
	int64_t		transB = ie_attr_int(ctx, "transB", 0);
	int64_t		M,
				K,
				N,
				kb,
				cm = 1,
				cn = 1;
	int64_t		odims[2];
	ie_tensor  *Y;
	float	   *yd;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs A and B");
	A = ctx->inputs[0];
	B = ctx->inputs[1];
	C = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	if (A->dtype != IE_FLOAT || B->dtype != IE_FLOAT ||
		(C != NULL && C->dtype != IE_FLOAT))
		return ie_op_error(ctx, "unsupported input type (only float)");
	if (A->ndim != 2 || B->ndim != 2)
		return ie_op_error(ctx, "A and B must be matrices (ranks %d, %d)", A->ndim, B->ndim);
	M = transA ? A->dims[1] : A->dims[0];
	K = transA ? A->dims[0] : A->dims[1];
	kb = transB ? B->dims[1] : B->dims[0];
	N = transB ? B->dims[0] : B->dims[1];
	if (K != kb)
		return ie_op_error(ctx, "inner dimensions differ (%lld vs %lld)",
						   (long long) K, (long long) kb);
	if (C != NULL)
	{
		if (C->ndim > 2)
			return ie_op_error(ctx, "C has rank %d (at most 2)", C->ndim);
		if (C->ndim == 2)
			cm = C->dims[0];
		if (C->ndim >= 1)
			cn = C->dims[C->ndim - 1];
		if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
			return ie_op_error(ctx, "C does not broadcast to [%lld, %lld]",
							   (long long) M, (long long) N);
	}
	odims[0] = M;
	odims[1] = N;
	Y = ie_tensor_new(IE_FLOAT, 2, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	yd = Y->data;
	if (M * N == 0)
		return 0;
	if (C != NULL && beta != 0.0f)
	{
		const float *cd = C->data;

		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++)
				yd[i * N + j] = beta * cd[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
	}
	if (K > 0)
		cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
					transB ? CblasTrans : CblasNoTrans,
					(int) M, (int) N, (int) K, alpha,
					A->data, (int) A->dims[1], B->data, (int) B->dims[1],
					(C != NULL && beta != 0.0f) ? 1.0f : 0.0f, yd, (int) N);
	return 0;
}

const ie_op_def ie_ops_matmul[] = {
	{"MatMul", op_matmul},
	{"Gemm", op_gemm},
	{NULL, NULL}
};
