/*
 * qgemm_vnni.c
 *	  The 8-bit integer matrix-product kernel of qgemm_vnni.h: VPDPBUSD
 *	  (AVX-512 VNNI) on a 6 x 64 register tile, B packed in dwords of 4 k.
 *
 * For each chunk of QV_MC rows of A (their row sums first), each panel of
 * 64 columns of packed B and each block of 6 rows, 24 vectors hold the
 * int32 sums; each 4 k loads 4 vectors of the panel and broadcasts one
 * dword (4 bytes of k) of each of the 6 rows.  After each panel of a
 * chunk, the caller's block function (a fused epilogue) may take the
 * chunk's rows of it while they are in L1.  Only these functions are
 * built for AVX-512 (target attributes); the rest of the engine stays
 * generic.
 *
 * Threading: pure functions but for the flags read once.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/qgemm_vnni.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define IE_QV_X86 1
#endif

/* Rows of A per chunk (their row sums on the stack, their bytes in L2). */
#define QV_MC 96
/* Rows of the register tile. */
#define QV_MR 6

static int	qv_forced = -1;

/* Whether this CPU has AVX-512F, BW and VNNI (checked once). */
bool
ie_qv_available(void)
{
#ifdef IE_QV_X86
	static int	cached = -1;

	if (cached < 0)
		cached = __builtin_cpu_supports("avx512f") &&
			__builtin_cpu_supports("avx512bw") &&
			__builtin_cpu_supports("avx512vnni") ? 1 : 0;
	return cached == 1;
#else
	return false;
#endif
}

/* ie_qv_available() unless IE_VNNI=0 or ie_qv_force; see qgemm_vnni.h. */
bool
ie_qv_enabled(void)
{
	static int	on = -1;

	if (qv_forced >= 0)
		return qv_forced == 1 && ie_qv_available();
	if (on < 0)
	{
		const char *e = getenv("IE_VNNI");

		on = ie_qv_available() && (e == NULL || strcmp(e, "0") != 0);
	}
	return on == 1;
}

/* Tests' override of ie_qv_enabled; see qgemm_vnni.h. */
void
ie_qv_force(int on)
{
	qv_forced = on < 0 ? -1 : on > 0 ? 1 : 0;
}

/* Bytes of packed B: N rounded up to IE_QV_NR, K to 4. */
int64_t
ie_qv_packed_b_size(int64_t K, int64_t N)
{
	return (N + IE_QV_NR - 1) / IE_QV_NR * IE_QV_NR * ((K + 3) / 4 * 4);
}

/* Column sums of packed B: N rounded up to IE_QV_NR. */
int64_t
ie_qv_colsum_size(int64_t N)
{
	return (N + IE_QV_NR - 1) / IE_QV_NR * IE_QV_NR;
}

/* Packs B into panels of dwords of 4 k (see qgemm_vnni.h). */
void
ie_qv_pack_b(const uint8_t *b, bool b_unsigned, int64_t K, int64_t N,
			 uint8_t *bp, int32_t *colsum)
{
	int64_t		k4 = (K + 3) / 4,
				panel = k4 * IE_QV_NR * 4;
	uint8_t		x = b_unsigned ? 0x80 : 0;

	memset(bp, 0, (size_t) ie_qv_packed_b_size(K, N));
	memset(colsum, 0, (size_t) ie_qv_colsum_size(N) * sizeof(int32_t));
	for (int64_t k = 0; k < K; k++)
	{
		const uint8_t *row = b + k * N;
		uint8_t    *dst = bp + k / 4 * IE_QV_NR * 4 + k % 4;

		for (int64_t j = 0; j < N; j++)
		{
			uint8_t		v = row[j] ^ x;

			dst[j / IE_QV_NR * panel + j % IE_QV_NR * 4] = v;
			/* wraps mod 2^32 past 2^31 / 128 rows, as everything here */
			colsum[j] = (int32_t) ((uint32_t) colsum[j] + (uint32_t) (int32_t) (int8_t) v);
		}
	}
}

#ifdef IE_QV_X86

#define QV_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

/*
 * The 6 x 64 tile at rows a (stride lda; rows past mr repeat row mr - 1,
 * so the loop is always the full tile's) and panel p: full sums over K
 * into acc.
 */
static inline __attribute__((always_inline)) QV_TARGET void
qv_tile(int mr, const uint8_t *a, int64_t lda, uint32_t ax, int64_t K,
		const uint8_t *p, __m512i acc[QV_MR][4])
{
	int64_t		kf = K / 4,
				rem = K % 4;
	const uint8_t *ar[QV_MR];

#pragma GCC unroll 6
	for (int r = 0; r < QV_MR; r++)
		ar[r] = a + (r < mr ? r : mr - 1) * lda;

#pragma GCC unroll 6
	for (int r = 0; r < QV_MR; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			acc[r][v] = _mm512_setzero_si512();
	for (int64_t k = 0; k < kf; k++)
	{
		const uint8_t *pk = p + k * IE_QV_NR * 4;
		__m512i		b0 = _mm512_loadu_si512(pk),
					b1 = _mm512_loadu_si512(pk + 64),
					b2 = _mm512_loadu_si512(pk + 128),
					b3 = _mm512_loadu_si512(pk + 192);

#pragma GCC unroll 6
		for (int r = 0; r < QV_MR; r++)
		{
			uint32_t	d;
			__m512i		av;

			memcpy(&d, ar[r] + 4 * k, 4);
			av = _mm512_set1_epi32((int) (d ^ ax));
			acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
			acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
			acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], av, b2);
			acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], av, b3);
		}
	}
	if (rem != 0)
	{
		/* the last k: B's bytes past K are zero, so A's pad is free */
		const uint8_t *pk = p + kf * IE_QV_NR * 4;
		__m512i		b0 = _mm512_loadu_si512(pk),
					b1 = _mm512_loadu_si512(pk + 64),
					b2 = _mm512_loadu_si512(pk + 128),
					b3 = _mm512_loadu_si512(pk + 192);

#pragma GCC unroll 6
		for (int r = 0; r < QV_MR; r++)
		{
			uint32_t	d = 0;
			__m512i		av;

			memcpy(&d, ar[r] + 4 * kf, (size_t) rem);
			av = _mm512_set1_epi32((int) (d ^ ax));
			acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
			acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
			acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], av, b2);
			acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], av, b3);
		}
	}
}

/*
 * One block of mr <= 6 rows (y at row i0 of the chunk) times panel j0:
 * the tile, then the zero-point terms, the first mr rows stored, under a
 * mask past N.
 */
static inline __attribute__((always_inline)) QV_TARGET void
qv_block(int mr, const uint8_t *a, int64_t lda, uint32_t ax, int64_t K,
		 const uint8_t *p, const int32_t *colsum, int64_t N, int64_t j0,
		 const int32_t *za, const uint32_t *s, const int32_t *zb, int32_t *y,
		 int64_t ldy)
{
	__m512i		acc[QV_MR][4];

	qv_tile(mr, a, lda, ax, K, p, acc);
#pragma GCC unroll 4
	for (int v = 0; v < 4; v++)
	{
		int64_t		j = j0 + v * 16,
					left = N - j;
		__mmask16	m;
		__m512i		cs,
					zbv;

		if (left <= 0)
			break;
		m = left >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << left) - 1);
		cs = _mm512_loadu_si512(colsum + j);
		zbv = _mm512_maskz_loadu_epi32(m, zb + j);
#pragma GCC unroll 6
		for (int r = 0; r < QV_MR; r++)
		{
			if (r >= mr)
				break;
			/* y = acc - za' colsum - zb' (rowsum - K za'), mod 2^32 */
			__m512i		t = _mm512_sub_epi32(acc[r][v],
											 _mm512_mullo_epi32(_mm512_set1_epi32(za[r]), cs));

			t = _mm512_sub_epi32(t, _mm512_mullo_epi32(_mm512_set1_epi32((int) s[r]), zbv));
			_mm512_mask_storeu_epi32(y + r * ldy + j, m, t);
		}
	}
}

/* ie_qv_gemm on this CPU: see qgemm_vnni.h. */
static QV_TARGET void
qv_gemm(const uint8_t *a, bool a_signed, int64_t lda, int64_t rows, int64_t K,
		const uint8_t *bp, const int32_t *colsum, int64_t N, const int32_t *za,
		const int32_t *zb, int32_t *y, int64_t ldy, ie_qv_block_fn done, void *done_arg)
{
	uint32_t	ax = a_signed ? 0x80808080u : 0;
	uint8_t		ab = a_signed ? 0x80 : 0;
	int64_t		panel = (K + 3) / 4 * IE_QV_NR * 4;

	for (int64_t c0 = 0; c0 < rows; c0 += QV_MC)
	{
		int64_t		mc = rows - c0 < QV_MC ? rows - c0 : QV_MC;
		uint32_t	s[QV_MC];

		/* rowsum(a_u) - K za', mod 2^32 */
		for (int64_t i = 0; i < mc; i++)
		{
			const uint8_t *ar = a + (c0 + i) * lda;
			uint32_t	sum = 0;

			for (int64_t k = 0; k < K; k++)
				sum += (uint8_t) (ar[k] ^ ab);
			s[i] = sum - (uint32_t) K * (uint32_t) za[c0 + i];
		}
		for (int64_t j0 = 0; j0 < N; j0 += IE_QV_NR)
		{
			const uint8_t *p = bp + j0 / IE_QV_NR * panel;

			for (int64_t i0 = 0; i0 < mc; i0 += QV_MR)
			{
				const uint8_t *ai = a + (c0 + i0) * lda;
				const int32_t *zai = za + c0 + i0;
				int32_t    *yi = y + (c0 + i0) * ldy;

				qv_block((int) (mc - i0 < QV_MR ? mc - i0 : QV_MR), ai, lda, ax, K, p,
						 colsum, N, j0, zai, s + i0, zb, yi, ldy);
			}
			/* the chunk's rows of this panel are final: mc x 64 sums, in L1 */
			if (done != NULL)
				done(done_arg, c0, mc, j0, N - j0 < IE_QV_NR ? N - j0 : IE_QV_NR);
		}
	}
}
#endif

/* Y = (A - za) x (B - zb), low 32 bits: see qgemm_vnni.h. */
void
ie_qv_gemm(const uint8_t *a, bool a_signed, int64_t lda, int64_t rows, int64_t K,
		   const uint8_t *bp, const int32_t *colsum, int64_t N, const int32_t *za,
		   const int32_t *zb, int32_t *y, int64_t ldy, ie_qv_block_fn done, void *done_arg)
{
#ifdef IE_QV_X86
	qv_gemm(a, a_signed, lda, rows, K, bp, colsum, N, za, zb, y, ldy, done, done_arg);
#else
	(void) a;
	(void) a_signed;
	(void) lda;
	(void) rows;
	(void) K;
	(void) bp;
	(void) colsum;
	(void) N;
	(void) za;
	(void) zb;
	(void) y;
	(void) ldy;
	(void) done;
	(void) done_arg;
	abort();
#endif
}
