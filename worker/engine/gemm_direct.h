/*
 * gemm_direct.h
 *	  A float32 matrix-product kernel for 1x1 convolutions that reads the
 *	  image straight from its layout (internal to the engine).
 *
 * C[M, n] (row stride ldc) = A[M, K] x B[K, n] (row stride ldb), A packed
 * once per call by ie_gd_pack_a.  Each output element is one fused
 * multiply-add chain over k = 0..K-1 in order, in its own vector lane, so a
 * column's result depends only on its own inputs: not on n, on the other
 * columns, or on the thread.  AVX-512 only; ie_gd_available() says whether
 * this CPU has it (callers fall back to sgemm otherwise).
 *
 * Threading: no state; any number of threads may call it at once.
 */
#ifndef IE_GEMM_DIRECT_H
#define IE_GEMM_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

/* Rows per packed block of A. */
#define IE_GD_MR 6

/* Whether the kernel can run on this CPU (AVX-512F). */
bool		ie_gd_available(void);

/*
 * Whether the operators use the kernel: ie_gd_available(), unless
 * IE_DIRECT_GEMM=0 in the environment (OpenBLAS instead, for
 * measurements).  Read once.
 */
bool		ie_gd_enabled(void);

/* Floats ie_gd_pack_a writes for an [M, K] matrix. */
int64_t		ie_gd_packed_size(int64_t M, int64_t K);

/* Packs A [M, K] (row stride lda) k-major in blocks of IE_GD_MR rows. */
void		ie_gd_pack_a(const float *a, int64_t lda, int64_t M, int64_t K, float *ap);

/* C = A x B as above, for n columns (any n >= 1). */
void		ie_gd_gemm(const float *ap, int64_t M, int64_t K, const float *b,
					   int64_t ldb, int64_t n, float *c, int64_t ldc);

/*
 * The same product with A [M, K] read in place (row stride lda), no
 * packing: each 6-row block broadcasts from its rows directly.  Same
 * arithmetic, so the same bits as ie_gd_gemm.
 */
void		ie_gd_gemm_rows(const float *a, int64_t lda, int64_t M, int64_t K,
							const float *b, int64_t ldb, int64_t n, float *c,
							int64_t ldc);

/* Columns of one packed panel of B. */
#define IE_GD_NR 32

/* Floats ie_gd_pack_b writes for a [K, n] matrix. */
int64_t		ie_gd_packed_b_size(int64_t K, int64_t n);

/*
 * Packs B [K, n] (row stride ldb) into panels of IE_GD_NR columns, each
 * [K, IE_GD_NR] contiguous, the columns past n zero.
 */
void		ie_gd_pack_b(const float *b, int64_t ldb, int64_t K, int64_t n, float *bp);

/*
 * Packs B = Bt^T, Bt [n, K] row-major (row stride ldbt), as ie_gd_pack_b
 * packs a [K, n] B: for products with a transposed operand (Attention's
 * Q K^T).
 */
void		ie_gd_pack_bt(const float *bt, int64_t ldbt, int64_t K, int64_t n, float *bp);

/*
 * ie_gd_gemm_rows with B packed by ie_gd_pack_b: the same arithmetic, so
 * the same bits, but B's panels are read contiguously (a strided B
 * re-read for every block of rows runs at a third of the speed on large
 * K, e.g. ViT-B's [394, 3072] x [3072, 768]).
 */
void		ie_gd_gemm_rows_pb(const float *a, int64_t lda, int64_t M, int64_t K,
							   const float *bp, int64_t n, float *c, int64_t ldc);

#endif							/* IE_GEMM_DIRECT_H */
