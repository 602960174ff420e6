/*
 * gemm_direct.c
 *	  The direct matrix-product kernel of gemm_direct.h: a 6x32 register
 *	  tile of AVX-512 vectors, B read in place (no packing), C written in
 *	  place, the last columns under a lane mask.
 *
 * For each block of 6 rows of A (packed, k-major, so its 6 values for one k
 * are adjacent) and each panel of 32 columns, 12 vectors hold the sums;
 * each k loads 32 values of B's row k and broadcasts 6 of A.  There is no
 * blocking over k (see gemm_direct.h for why).
 *
 * Threading: pure functions.
 */
#include <stdlib.h>
#include <string.h>

#include "worker/engine/gemm_direct.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define IE_GD_X86 1
#endif

/* Whether this CPU has AVX-512F (checked once). */
bool
ie_gd_available(void)
{
#ifdef IE_GD_X86
	static int	cached = -1;

	if (cached < 0)
		cached = __builtin_cpu_supports("avx512f") ? 1 : 0;
	return cached == 1;
#else
	return false;
#endif
}

/* ie_gd_available() unless IE_DIRECT_GEMM=0; see gemm_direct.h. */
bool
ie_gd_enabled(void)
{
	static int	on = -1;

	if (on < 0)
	{
		const char *e = getenv("IE_DIRECT_GEMM");

		on = ie_gd_available() && (e == NULL || strcmp(e, "0") != 0);
	}
	return on == 1;
}

/* Floats of the packed form of an [M, K] matrix. */
int64_t
ie_gd_packed_size(int64_t M, int64_t K)
{
	return (M + IE_GD_MR - 1) / IE_GD_MR * IE_GD_MR * K;
}

/* Packs A k-major in blocks of IE_GD_MR rows (missing rows zero). */
void
ie_gd_pack_a(const float *a, int64_t lda, int64_t M, int64_t K, float *ap)
{
	for (int64_t m0 = 0; m0 < M; m0 += IE_GD_MR)
	{
		for (int64_t k = 0; k < K; k++)
			for (int r = 0; r < IE_GD_MR; r++)
				ap[k * IE_GD_MR + r] = m0 + r < M ? a[(m0 + r) * lda + k] : 0.0f;
		ap += IE_GD_MR * K;
	}
}

/* Floats of the packed form of a [K, n] B. */
int64_t
ie_gd_packed_b_size(int64_t K, int64_t n)
{
	return (n + IE_GD_NR - 1) / IE_GD_NR * IE_GD_NR * K;
}

/* Packs B into contiguous [K, IE_GD_NR] panels (missing columns zero). */
void
ie_gd_pack_b(const float *b, int64_t ldb, int64_t K, int64_t n, float *bp)
{
	for (int64_t j0 = 0; j0 < n; j0 += IE_GD_NR)
	{
		int64_t		w = n - j0 < IE_GD_NR ? n - j0 : IE_GD_NR;

		for (int64_t k = 0; k < K; k++)
		{
			const float *src = b + k * ldb + j0;
			float	   *dst = bp + k * IE_GD_NR;
			int64_t		x;

			for (x = 0; x < w; x++)
				dst[x] = src[x];
			for (; x < IE_GD_NR; x++)
				dst[x] = 0.0f;
		}
		bp += IE_GD_NR * K;
	}
}

/* Packs Bt^T into contiguous [K, IE_GD_NR] panels (missing columns zero). */
void
ie_gd_pack_bt(const float *bt, int64_t ldbt, int64_t K, int64_t n, float *bp)
{
	for (int64_t j0 = 0; j0 < n; j0 += IE_GD_NR)
	{
		int64_t		w = n - j0 < IE_GD_NR ? n - j0 : IE_GD_NR;

		for (int64_t x = 0; x < IE_GD_NR; x++)
		{
			const float *src = bt + (j0 + x) * ldbt;

			if (x < w)
				for (int64_t k = 0; k < K; k++)
					bp[k * IE_GD_NR + x] = src[k];
			else
				for (int64_t k = 0; k < K; k++)
					bp[k * IE_GD_NR + x] = 0.0f;
		}
		bp += IE_GD_NR * K;
	}
}

#ifdef IE_GD_X86
/*
 * One 6-row block times columns [0, n) of b (n <= 32; lanes past n are
 * masked off in loads and stores); rows >= mr are not stored.  Row r's
 * value for k is ar[r][k * as]: the packed block (ar[r] = ap + r, as =
 * IE_GD_MR) or A's rows in place (ar[r] = row r, as = 1).  Only the
 * first rows (a constant: 2, 4 or 6, at least mr) are computed, so that a
 * last block of 1 to 4 rows does not cost a full one; each element's sum
 * is the same chain whatever rows is, so the same bits.
 */
__attribute__((target("avx512f"), always_inline)) static inline void
tile_g(const float *const ar[IE_GD_MR], int64_t as, int64_t K, const float *b,
	   int64_t ldb, int n, float *c, int64_t ldc, int mr, const bool full,
	   const int rows)
{
	__mmask16	m0 = n >= 16 ? 0xffff : (__mmask16) ((1u << n) - 1);
	__mmask16	m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16) ((1u << (n - 16)) - 1);
	const float *a0 = ar[0],
			   *a1 = ar[1],
			   *a2 = ar[2],
			   *a3 = ar[3],
			   *a4 = ar[4],
			   *a5 = ar[5];
	__m512		c00 = _mm512_setzero_ps(),
				c01 = c00,
				c10 = c00,
				c11 = c00,
				c20 = c00,
				c21 = c00,
				c30 = c00,
				c31 = c00,
				c40 = c00,
				c41 = c00,
				c50 = c00,
				c51 = c00;

	for (int64_t k = 0; k < K; k++)
	{
		__m512		b0 = full ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(m0, b);
		__m512		b1 = full ? _mm512_loadu_ps(b + 16) : _mm512_maskz_loadu_ps(m1, b + 16);
		__m512		a;
		int64_t		ka = k * as;

		a = _mm512_set1_ps(a0[ka]);
		c00 = _mm512_fmadd_ps(a, b0, c00);
		c01 = _mm512_fmadd_ps(a, b1, c01);
		a = _mm512_set1_ps(a1[ka]);
		c10 = _mm512_fmadd_ps(a, b0, c10);
		c11 = _mm512_fmadd_ps(a, b1, c11);
		if (rows > 2)
		{
			a = _mm512_set1_ps(a2[ka]);
			c20 = _mm512_fmadd_ps(a, b0, c20);
			c21 = _mm512_fmadd_ps(a, b1, c21);
			a = _mm512_set1_ps(a3[ka]);
			c30 = _mm512_fmadd_ps(a, b0, c30);
			c31 = _mm512_fmadd_ps(a, b1, c31);
		}
		if (rows > 4)
		{
			a = _mm512_set1_ps(a4[ka]);
			c40 = _mm512_fmadd_ps(a, b0, c40);
			c41 = _mm512_fmadd_ps(a, b1, c41);
			a = _mm512_set1_ps(a5[ka]);
			c50 = _mm512_fmadd_ps(a, b0, c50);
			c51 = _mm512_fmadd_ps(a, b1, c51);
		}
		b += ldb;
	}
#define ST(r, lo, hi) \
	if (mr > r && full) \
	{ \
		_mm512_storeu_ps(c + r * ldc, lo); \
		_mm512_storeu_ps(c + r * ldc + 16, hi); \
	} \
	else if (mr > r) \
	{ \
		_mm512_mask_storeu_ps(c + r * ldc, m0, lo); \
		_mm512_mask_storeu_ps(c + r * ldc + 16, m1, hi); \
	}
	ST(0, c00, c01);
	ST(1, c10, c11);
	ST(2, c20, c21);
	ST(3, c30, c31);
	ST(4, c40, c41);
	ST(5, c50, c51);
#undef ST
}

/* tile_g over a packed block (k-major, IE_GD_MR values per k). */
__attribute__((target("avx512f"))) static void
tile(const float *ap, int64_t K, const float *b, int64_t ldb, int n,
	 float *c, int64_t ldc, int mr)
{
	const float *ar[IE_GD_MR] = {ap, ap + 1, ap + 2, ap + 3, ap + 4, ap + 5};

	if (n == 32)
		tile_g(ar, IE_GD_MR, K, b, ldb, n, c, ldc, mr, true, IE_GD_MR);
	else
		tile_g(ar, IE_GD_MR, K, b, ldb, n, c, ldc, mr, false, IE_GD_MR);
}

/*
 * tile_g over A's rows in place (rows past mr read row 0, not stored),
 * computing 2, 4 or 6 rows: the fewest that hold mr (an RNN step's batch
 * of 8 is a block of 6 and one of 2, not two of 6).
 */
__attribute__((target("avx512f"))) static void
tile_rows(const float *a, int64_t lda, int64_t K, const float *b, int64_t ldb,
		  int n, float *c, int64_t ldc, int mr)
{
	const float *ar[IE_GD_MR];

	for (int r = 0; r < IE_GD_MR; r++)
		ar[r] = a + (r < mr ? r : 0) * lda;
	if (n == 32 && mr > 4)
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, true, 6);
	else if (n == 32 && mr > 2)
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, true, 4);
	else if (n == 32)
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, true, 2);
	else if (mr > 4)
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, false, 6);
	else if (mr > 2)
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, false, 4);
	else
		tile_g(ar, 1, K, b, ldb, n, c, ldc, mr, false, 2);
}
#endif

/* C = A x B over n columns; see gemm_direct.h. */
void
ie_gd_gemm(const float *ap, int64_t M, int64_t K, const float *b, int64_t ldb,
		   int64_t n, float *c, int64_t ldc)
{
#ifdef IE_GD_X86
	for (int64_t m0 = 0; m0 < M; m0 += IE_GD_MR)
	{
		int			mr = M - m0 < IE_GD_MR ? (int) (M - m0) : IE_GD_MR;

		for (int64_t j = 0; j < n; j += 32)
			tile(ap, K, b + j, ldb, n - j < 32 ? (int) (n - j) : 32,
				 c + m0 * ldc + j, ldc, mr);
		ap += IE_GD_MR * K;
	}
#else
	(void) ap;
	(void) M;
	(void) K;
	(void) b;
	(void) ldb;
	(void) n;
	(void) c;
	(void) ldc;
#endif
}

/* C = A x B with A read in place and B packed; see gemm_direct.h. */
void
ie_gd_gemm_rows_pb(const float *a, int64_t lda, int64_t M, int64_t K, const float *bp,
				   int64_t n, float *c, int64_t ldc)
{
#ifdef IE_GD_X86
	for (int64_t j = 0; j < n; j += IE_GD_NR)
	{
		for (int64_t m0 = 0; m0 < M; m0 += IE_GD_MR)
		{
			int			mr = M - m0 < IE_GD_MR ? (int) (M - m0) : IE_GD_MR;

			tile_rows(a + m0 * lda, lda, K, bp, IE_GD_NR,
					  n - j < IE_GD_NR ? (int) (n - j) : IE_GD_NR, c + m0 * ldc + j, ldc, mr);
		}
		bp += IE_GD_NR * K;
	}
#else
	(void) a;
	(void) lda;
	(void) M;
	(void) K;
	(void) bp;
	(void) n;
	(void) c;
	(void) ldc;
#endif
}

/* C = A x B with A read in place; see gemm_direct.h. */
void
ie_gd_gemm_rows(const float *a, int64_t lda, int64_t M, int64_t K, const float *b,
				int64_t ldb, int64_t n, float *c, int64_t ldc)
{
#ifdef IE_GD_X86
	for (int64_t m0 = 0; m0 < M; m0 += IE_GD_MR)
	{
		int			mr = M - m0 < IE_GD_MR ? (int) (M - m0) : IE_GD_MR;

		for (int64_t j = 0; j < n; j += 32)
			tile_rows(a + m0 * lda, lda, K, b + j, ldb, n - j < 32 ? (int) (n - j) : 32,
					  c + m0 * ldc + j, ldc, mr);
	}
#else
	(void) a;
	(void) lda;
	(void) M;
	(void) K;
	(void) b;
	(void) ldb;
	(void) n;
	(void) c;
	(void) ldc;
#endif
}
