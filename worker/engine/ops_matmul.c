/*
 * ops_matmul.c
 *	  ONNX matrix products: MatMul (numpy matmul semantics, with batch
 *	  broadcasting; float32, and float64 on OpenBLAS dgemm) and Gemm
 *	  (float32), both on OpenBLAS sgemm.
 *
 * MatMul uses the direct AVX-512 kernel (gemm_direct.h) where the CPU has
 * it, reading A's rows in place (no packing), in tasks of MM_ROWS rows by
 * a column block sized so the task's panel of B stays in cache (at most
 * MM_COLS columns, MM_B_BYTES of B); elsewhere OpenBLAS sgemm in tasks of
 * MM_ROWS rows.  With the direct kernel an element's result is one
 * multiply-add chain over k in order: it depends only on its row and
 * column, never on the batch, the thread count, or trailing zero terms
 * (a padded sequence's masked probabilities), so a text row keeps its bits
 * in any padded batch.  Element-wise nodes fused into a MatMul at load
 * (fusion.h: its bias Add, BERT's GELU chain, the attention scale) run on
 * each block of rows as soon as it is computed.
 *
 * Threading: no state outside the call.  OpenBLAS runs serial (see
 * ie_set_threads); the tasks run on the engine's pool (pool.h).
 */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/fusion.h"
#include "worker/engine/gemm_direct.h"
#include "worker/engine/pool.h"

/* Rows of one MatMul task (OpenBLAS packs B once per task; a multiple of
 * IE_GD_MR for the direct kernel), and columns of one direct-kernel task. */
#define MM_ROWS 384
#define MM_COLS 256
/* Fewest rows of A for which a direct-kernel task packs its panel of B. */
#define MM_PACK_B_ROWS 48
/* Most bytes of B one direct-kernel task reads (its K x cols panel). */
#define MM_B_BYTES (256 * 1024)

/* A batch of products y_i[M, N] = a_i[M, K] x b_i[K, N], as tasks. */
typedef struct mm_job
{
	const float *a,
			   *b;
	float	   *y;
	const int64_t *aoff,
			   *boff;			/* per product: matrix index into a and b */
	bool		direct;			/* gemm_direct.h's kernel, else OpenBLAS */
	bool		pack_b;			/* the direct kernel reads B packed per task */
	const ie_epilogue *ep;		/* fused element-wise nodes (fusion.h), or NULL */
	int64_t		cols;			/* columns of one direct-kernel task */
	int64_t		M,
				K,
				N,
				row_blocks,
				col_blocks;
} mm_job;

/* Task t: rows [r0, r0 + MM_ROWS) of product t / row_blocks. */
static void
mm_task(void *arg, int64_t t, int worker)
{
	mm_job	   *j = arg;
	int64_t		cb = t % j->col_blocks;
	int64_t		bi = t / j->col_blocks / j->row_blocks;
	int64_t		r0 = t / j->col_blocks % j->row_blocks * MM_ROWS;
	int64_t		rows = j->M - r0 < MM_ROWS ? j->M - r0 : MM_ROWS;

	(void) worker;
	if (j->direct)
	{
		int64_t		c0 = cb * j->cols;
		int64_t		nc = j->N - c0 < j->cols ? j->N - c0 : j->cols;

		const float *b = j->b + j->boff[bi] * j->K * j->N + c0;
		float	   *bp = j->pack_b ?
			ie_thread_scratch((size_t) ie_gd_packed_b_size(j->K, j->cols) * sizeof(float)) : NULL;

		if (bp != NULL)
		{
			ie_gd_pack_b(b, j->N, j->K, nc, bp);
			ie_gd_gemm_rows_pb(j->a + (j->aoff[bi] * j->M + r0) * j->K, j->K, rows, j->K,
							   bp, nc, j->y + (bi * j->M + r0) * j->N + c0, j->N);
		}
		else
			ie_gd_gemm_rows(j->a + (j->aoff[bi] * j->M + r0) * j->K, j->K, rows, j->K,
							b, j->N, nc, j->y + (bi * j->M + r0) * j->N + c0, j->N);
		if (j->ep != NULL)
			for (int64_t r = 0; r < rows; r++)
				ie_epilogue_apply_row(j->ep, j->y + (bi * j->M + r0 + r) * j->N + c0, c0, nc);
		return;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				(int) rows, (int) j->N, (int) j->K, 1.0f,
				j->a + (j->aoff[bi] * j->M + r0) * j->K, (int) j->K,
				j->b + j->boff[bi] * j->K * j->N, (int) j->N, 0.0f,
				j->y + (bi * j->M + r0) * j->N, (int) j->N);
	if (j->ep != NULL)
		for (int64_t r = 0; r < rows; r++)
			ie_epilogue_apply_row(j->ep, j->y + (bi * j->M + r0 + r) * j->N, 0, j->N);
}

/* MM_B_BYTES, or IE_MM_B from the environment (for measurements). */
static int64_t
mm_b_bytes(void)
{
	const char *e = getenv("IE_MM_B");
	return e ? atoll(e) : MM_B_BYTES;
}

/* Runs the products of j on up to n_threads threads (small ones serially). */
static void
mm_run(mm_job *j, int64_t nbatch, int n_threads)
{
	int64_t		tasks;
	int64_t		work;

	j->row_blocks = (j->M + MM_ROWS - 1) / MM_ROWS;
	/* a task's panel of B (K x cols) stays within MM_B_BYTES of cache */
	j->cols = MM_COLS;
	while (j->cols > 32 && j->cols * j->K * 4 > mm_b_bytes())
		j->cols /= 2;
	j->col_blocks = j->direct ? (j->N + j->cols - 1) / j->cols : 1;
	/* B packed per task when the task has rows enough to repay the copy
	 * and its panel fits a thread's scratch (the largest, checked here: a
	 * refusal on a pool thread is not seen); the bits are the same */
	if (j->direct && j->M >= MM_PACK_B_ROWS)
	{
		int64_t		pb = ie_gd_packed_b_size(j->K, j->cols);

		j->pack_b = ie_scratch_fits(IE_FLOAT, 1, &pb);
	}
	tasks = nbatch * j->row_blocks * j->col_blocks;
	work = nbatch * j->M * j->N * j->K;
	if (work < (int64_t) 262144 * n_threads)
		n_threads = (int) (work / 262144 > 1 ? work / 262144 : 1);
	ie_parallel_for(n_threads, tasks, mm_task, j);
}

/* A batch of double products y_i[M, N] = a_i[M, K] x b_i[K, N], one task each. */
typedef struct mm_job_f64
{
	const double *a,
			   *b;
	double	   *y;
	const int64_t *aoff,
			   *boff;			/* per product: matrix index into a and b */
	int64_t		M,
				K,
				N;
} mm_job_f64;

/* Task t: product t of the double job, on OpenBLAS dgemm. */
static void
mm_task_f64(void *arg, int64_t t, int worker)
{
	mm_job_f64 *j = arg;

	(void) worker;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				(int) j->M, (int) j->N, (int) j->K, 1.0,
				j->a + j->aoff[t] * j->M * j->K, (int) j->K,
				j->b + j->boff[t] * j->K * j->N, (int) j->N, 0.0,
				j->y + t * j->M * j->N, (int) j->N);
}

/*
 * The shape of A[..., M, K] x B[..., K, N] with numpy matmul rules (ONNX
 * MatMul): a 1-D A is [1, K] and a 1-D B is [K, 1], the added axis being
 * dropped from the result; the batch axes (all but the last two)
 * broadcast.  Fills s; errors name ranks under 1, differing inner
 * dimensions and batch dimensions that do not broadcast.  Shared by MatMul
 * and the integer products (ops_quant.c).
 */
int
ie_matmul_shape(ie_node_ctx *ctx, const ie_tensor *A, const ie_tensor *B,
				ie_mm_shape *s)
{
	if (A->ndim < 1 || B->ndim < 1)
		return ie_op_error(ctx, "inputs must have rank 1 or more");
	s->ar = A->ndim;
	memcpy(s->adims, A->dims, sizeof(int64_t) * s->ar);
	if (s->ar == 1)
	{
		s->adims[1] = s->adims[0];
		s->adims[0] = 1;
		s->ar = 2;
	}
	s->br = B->ndim;
	memcpy(s->bdims, B->dims, sizeof(int64_t) * s->br);
	if (s->br == 1)
	{
		s->bdims[1] = 1;
		s->br = 2;
	}
	s->M = s->adims[s->ar - 2];
	s->K = s->adims[s->ar - 1];
	s->N = s->bdims[s->br - 1];
	if (s->bdims[s->br - 2] != s->K)
		return ie_op_error(ctx, "inner dimensions differ (%lld vs %lld)",
						   (long long) s->K, (long long) s->bdims[s->br - 2]);

	/* broadcast batch axes */
	s->nb = (s->ar > s->br ? s->ar : s->br) - 2;
	if (s->nb + 2 > IE_MAX_DIMS)
		return ie_op_error(ctx, "rank %d is over the engine's limit of %d",
						   s->nb + 2, IE_MAX_DIMS);
	s->nbatch = 1;
	s->bbatch = 1;
	for (int i = 0; i < s->nb; i++)
	{
		int			ia = i - (s->nb - (s->ar - 2));
		int			ib = i - (s->nb - (s->br - 2));
		int64_t		da = ia >= 0 ? s->adims[ia] : 1;
		int64_t		db = ib >= 0 ? s->bdims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return ie_op_error(ctx, "batch dimensions %lld and %lld do not broadcast",
							   (long long) da, (long long) db);
		s->odims[i] = da == 1 ? db : da;
	}

	/*
	 * The batch count, a product the operands' own sizes do not bound: empty
	 * A [2^40, 1, 0, 3] and B [1, 2^40, 3, 0] broadcast to a batch of 2^80
	 * (a signed overflow).  A zero dim makes it 0 wherever it stands;
	 * otherwise past int64 is refused.
	 */
	for (int i = 0; i < s->nb; i++)
		if (s->odims[i] == 0)
			s->nbatch = 0;
	for (int i = 0; i < s->nb && s->nbatch != 0; i++)
		if (__builtin_mul_overflow(s->nbatch, s->odims[i], &s->nbatch))
		{
			char		b[128];

			return ie_op_error(ctx, "broadcast batch dimensions %s hold more entries "
							   "than int64 counts",
							   ie_shape_str(b, sizeof(b), s->nb, s->odims));
		}
	/* B's own batch dims: their product is at most B's element count */
	for (int i = 0; i < s->br - 2; i++)
		s->bbatch *= s->bdims[i];
	s->ond = s->nb;
	if (A->ndim > 1)
		s->odims[s->ond++] = s->M;
	if (B->ndim > 1)
		s->odims[s->ond++] = s->N;
	return 0;
}

/*
 * The offsets (in matrices) of each of the s->nbatch products in A
 * (offs[bi]) and B (offs[nbatch + bi]): batch entry bi of the broadcast
 * batch axes, A's and B's batch axes being the first ar - 2 of adims and
 * br - 2 of bdims, a 1 broadcasting.  offs holds 2 * nbatch values.
 */
void
ie_matmul_batch_offsets(const ie_mm_shape *s, int64_t *offs)
{
	int			nb = s->nb,
				ar = s->ar,
				br = s->br;
	int64_t		nbatch = s->nbatch;

	for (int64_t bi = 0; bi < nbatch; bi++)
	{
		int64_t		rem = bi,
					aoff = 0,
					boff = 0,
					astride = 1,
					bstride = 1;

		for (int i = nb - 1; i >= 0; i--)
		{
			int			ia = i - (nb - (ar - 2));
			int			ib = i - (nb - (br - 2));
			int64_t		idx = rem % s->odims[i];

			rem /= s->odims[i];
			if (ia >= 0)
			{
				if (s->adims[ia] != 1)
					aoff += idx * astride;
				astride *= s->adims[ia];
			}
			if (ib >= 0)
			{
				if (s->bdims[ib] != 1)
					boff += idx * bstride;
				bstride *= s->bdims[ib];
			}
		}
		offs[bi] = aoff;
		offs[nbatch + bi] = boff;
	}
}

int
ie_op_gemm_fits(ie_node_ctx *ctx, int64_t M, int64_t K, int64_t N)
{
	if (M > INT_MAX || K > INT_MAX || N > INT_MAX)
		return ie_op_error(ctx, "a matrix product of %lld x %lld x %lld is over the engine's "
						   "limit (%d rows or columns)", (long long) M, (long long) K,
						   (long long) N, INT_MAX);
	return 0;
}

/*
 * MatMul (opsets 1, 9, 13): A[..., M, K] x B[..., K, N] -> [..., M, N] with
 * numpy rules: a 1-D A is [1, K] and a 1-D B is [K, 1], the added axis being
 * dropped from the result; batch axes broadcast.  Float, or double (both
 * inputs).  When B has no batch (or a batch of ones) the batch of A folds
 * into M: one sgemm.  Double runs one OpenBLAS dgemm per product, and
 * takes no fused nodes: fusion.h's epilogues compute in float.
 */
static int
op_matmul(ie_node_ctx *ctx)
{
	const ie_tensor *A,
			   *B;
	ie_mm_shape sh;
	int64_t		M,
				K,
				N,
				nbatch;
	ie_tensor  *Y;
	const float *ad,
			   *bd;
	float	   *yd;
	ie_dtype	dt;

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs A and B");
	A = ctx->inputs[0];
	B = ctx->inputs[1];
	dt = A->dtype;
	if ((dt != IE_FLOAT && dt != IE_DOUBLE) || B->dtype != dt)
		return ie_op_error(ctx, "unsupported input types %s, %s (only float, double)",
						   ie_dtype_name(A->dtype), ie_dtype_name(B->dtype));
	if (dt == IE_DOUBLE && ctx->epilogue != NULL)
		return ie_op_error(ctx, "fused element-wise nodes on a double product are not "
						   "supported (IE_FUSION=0 turns fusion off)");
	if (ie_matmul_shape(ctx, A, B, &sh) != 0)
		return -1;
	/* an empty product calls no BLAS */
	if (sh.nbatch != 0 && sh.M != 0 && sh.N != 0 && sh.K != 0 && ie_op_gemm_fits(ctx, sh.M, sh.K, sh.N) != 0)
		return -1;
	M = sh.M;
	K = sh.K;
	N = sh.N;
	nbatch = sh.nbatch;
	/* every element is written below, except for K == 0: zeros */
	Y = K == 0 ? ie_tensor_new(dt, sh.ond, sh.odims) :
		ie_tensor_new_uninit(dt, sh.ond, sh.odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	/* a 0-D product whose fused chain broadcasts it with a 1-D constant */
	ie_epilogue_widen_output(ctx->epilogue, Y);
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) == 0)
		return 0;
	ad = A->data;
	bd = B->data;
	yd = Y->data;
	if (K == 0)
	{
		/* an empty sum: zeros, through the fused nodes if any (a double
		 * product has none) */
		if (ctx->epilogue != NULL)
			for (int64_t r = 0; r < ie_tensor_numel(Y) / N; r++)
				ie_epilogue_apply_row(ctx->epilogue, yd + r * N, 0, N);
		return 0;
	}

	{
		/* A's and B's offset of each batch entry: [2, nbatch] */
		int64_t    *offs = ie_scratch_new(IE_INT64, 2, (int64_t[]) {2, nbatch});
		mm_job		job = {.a = ad, .b = bd, .y = yd, .ep = ctx->epilogue, .M = M, .K = K, .N = N};

		if (offs == NULL)
			return ie_op_error(ctx, "out of memory for the batch offsets");
		ie_matmul_batch_offsets(&sh, offs);
		if (dt == IE_DOUBLE)
		{
			mm_job_f64	dj = {.a = A->data, .b = B->data, .y = Y->data, .aoff = offs,
			.boff = offs + nbatch, .M = M, .K = K, .N = N};
			int64_t		work = nbatch * M * N * K;
			int			nt = ctx->n_threads;

			if (work < (int64_t) 262144 * nt)
				nt = (int) (work / 262144 > 1 ? work / 262144 : 1);
			ie_parallel_for(nt, nbatch, mm_task_f64, &dj);
			free(offs);
			return 0;
		}
		job.aoff = offs;
		job.boff = offs + nbatch;
		if (sh.bbatch == 1 && ie_tensor_numel(A) == nbatch * M * K)
		{
			/* one B and A holding the whole batch: fold the batch into M,
			 * so OpenBLAS packs B once per MM_ROWS rows, not per entry */
			job.M = nbatch * M;
			offs[0] = offs[nbatch] = 0;
			nbatch = 1;
		}
		job.direct = ie_gd_enabled();
		mm_run(&job, nbatch, ctx->n_threads);
		free(offs);
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
	if (M != 0 && N != 0 && K != 0 && ie_op_gemm_fits(ctx, M, K, N) != 0)
		return -1;
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
