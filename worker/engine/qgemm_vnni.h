/*
 * qgemm_vnni.h
 *	  An 8-bit integer matrix-product kernel on AVX-512 VNNI (internal to
 *	  the engine): MatMulInteger's and QLinearMatMul's common case.
 *
 * Y[rows, N] (int32, row stride ldy) = sum over k of (A[i, k] - za[i]) *
 * (B[k, j] - zb[j]), its low 32 bits (ONNX's int32 accumulation), for A
 * and B each int8 or uint8.  B is packed once per product by
 * ie_qv_pack_b; A is read in place.  AVX-512F, BW and VNNI only;
 * ie_qv_available() says whether this CPU has them (callers keep their
 * portable path otherwise).
 *
 * Threading: no state but the flags read once; any number of threads may
 * call ie_qv_gemm at once on one packed B.
 */
#ifndef IE_QGEMM_VNNI_H
#define IE_QGEMM_VNNI_H

#include <stdbool.h>
#include <stdint.h>

/* Columns of one packed panel of B. */
#define IE_QV_NR 64

/* Whether the kernel can run on this CPU (AVX-512F, BW and VNNI). */
bool		ie_qv_available(void);

/*
 * Whether the integer products use the kernel: ie_qv_available(), unless
 * IE_VNNI=0 in the environment (the float path instead, for measurements
 * and tests), or as ie_qv_force last set it.  The environment is read once.
 */
bool		ie_qv_enabled(void);

/*
 * Tests: on > 0 uses the kernel where available, on == 0 never, on < 0
 * back to the environment's choice.  Not for use while products run.
 */
void		ie_qv_force(int on);

/* Bytes ie_qv_pack_b writes for a [K, N] matrix. */
int64_t		ie_qv_packed_b_size(int64_t K, int64_t N);

/* int32 values ie_qv_pack_b writes into colsum for N columns. */
int64_t		ie_qv_colsum_size(int64_t N);

/*
 * Packs B [K, N] (row-major; int8, or uint8 when b_unsigned) as signed
 * bytes b_s (b, or b - 128 for uint8) into bp (ie_qv_packed_b_size bytes):
 * panels of IE_QV_NR columns, each [ceil(K / 4)][IE_QV_NR][4], the 4
 * consecutive k of one column in one dword, k past K and columns past N
 * zero.  colsum (ie_qv_colsum_size values) gets each column's sum of b_s
 * (zero past N).
 */
void		ie_qv_pack_b(const uint8_t *b, bool b_unsigned, int64_t K, int64_t N,
						 uint8_t *bp, int32_t *colsum);

/*
 * Called by ie_qv_gemm on each block of Y as soon as its sums are final,
 * on the calling thread: rows [r0, r0 + nr) of the call's rows and
 * columns [c0, c0 + nc), at most 96 rows by IE_QV_NR columns, whose first
 * value is y[r0 * ldy + c0] (for a fused epilogue to convert while the
 * block is in cache).
 */
typedef void (*ie_qv_block_fn) (void *arg, int64_t r0, int64_t nr, int64_t c0,
								int64_t nc);

/*
 * Y = (A - za) x (B - zb), low 32 bits, for A [rows, K] (row stride lda;
 * int8 when a_signed, else uint8) and B packed by ie_qv_pack_b (with its
 * colsum).  za holds one value per row and zb one per column (N), both
 * already in the kernel's form: za' = za (uint8 A) or za + 128 (int8 A),
 * zb' = zb (int8 B) or zb - 128 (uint8 B).  K and N at most INT_MAX.
 *
 * Method: VPDPBUSD (Intel Intrinsics Guide, _mm512_dpbusd_epi32) adds
 * four products of unsigned bytes and signed bytes into each int32 lane,
 * wrapping mod 2^32.  A is taken unsigned (a_u = a, or a + 128 for int8:
 * a xor 0x80), B signed (b_s), and (a_u - za')(b_s - zb') summed over k is
 * sum a_u b_s - za' colsum(b_s) - zb' (rowsum(a_u) - K za'), all mod 2^32,
 * which is the exact sum's low 32 bits.  A 6 x 64 register tile (24
 * accumulators) per block of rows and panel of columns.  done, when not
 * NULL, is called with done_arg on each finished block (ie_qv_block_fn).
 */
void		ie_qv_gemm(const uint8_t *a, bool a_signed, int64_t lda, int64_t rows,
					   int64_t K, const uint8_t *bp, const int32_t *colsum, int64_t N,
					   const int32_t *za, const int32_t *zb, int32_t *y, int64_t ldy,
					   ie_qv_block_fn done, void *done_arg);

#endif							/* IE_QGEMM_VNNI_H */
