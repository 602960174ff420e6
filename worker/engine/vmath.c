/*
 * vmath.c
 *	  The vector exp and erf of vmath.h over glibc's libmvec: the AVX-512
 *	  variants (_ZGVeN16v_*) when the CPU has AVX-512F, the SSE2 ones
 *	  (_ZGVbN4v_*) otherwise; both reached through libm's linker script.
 *
 * Threading: pure functions; the CPU check is cached in a static int
 * (a benign race: every thread computes the same value).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "worker/engine/vmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define VM_LIBMVEC 1
#include <immintrin.h>
extern __m128 _ZGVbN4v_expf(__m128);
extern __m128 _ZGVbN4v_erff(__m128);
extern __m512 _ZGVeN16v_expf(__m512);
extern __m512 _ZGVeN16v_erff(__m512);
extern __m128 _ZGVbN4v_tanhf(__m128);
extern __m512 _ZGVeN16v_tanhf(__m512);
#endif

#ifdef VM_LIBMVEC
/* Whether this CPU has AVX-512F (checked once). */
static bool
vm_avx512(void)
{
	static int	cached = -1;

	if (cached < 0)
		cached = __builtin_cpu_supports("avx512f") ? 1 : 0;
	return cached == 1;
}

/* 16 lanes at a time, the tail under a mask (its other lanes zero). */
#define VM_WIDE(NAME, FN) \
__attribute__((target("avx512f"))) static void \
NAME(const float *x, float *y, int64_t n) \
{ \
	int64_t		i = 0; \
	for (; i + 16 <= n; i += 16) \
		_mm512_storeu_ps(y + i, FN(_mm512_loadu_ps(x + i))); \
	if (i < n) \
	{ \
		__mmask16	m = (__mmask16) ((1u << (n - i)) - 1); \
		_mm512_mask_storeu_ps(y + i, m, FN(_mm512_maskz_loadu_ps(m, x + i))); \
	} \
}

/* 4 lanes at a time, the tail padded with zeros. */
#define VM_NARROW(NAME, FN) \
static void \
NAME(const float *x, float *y, int64_t n) \
{ \
	int64_t		i = 0; \
	for (; i + 4 <= n; i += 4) \
		_mm_storeu_ps(y + i, FN(_mm_loadu_ps(x + i))); \
	if (i < n) \
	{ \
		float		buf[4] = {0, 0, 0, 0}; \
		memcpy(buf, x + i, (size_t) (n - i) * sizeof(float)); \
		_mm_storeu_ps(buf, FN(_mm_loadu_ps(buf))); \
		memcpy(y + i, buf, (size_t) (n - i) * sizeof(float)); \
	} \
}

VM_WIDE(exp16, _ZGVeN16v_expf)
VM_WIDE(erf16, _ZGVeN16v_erff)
VM_NARROW(exp4, _ZGVbN4v_expf)
VM_NARROW(erf4, _ZGVbN4v_erff)
VM_WIDE(tanh16, _ZGVeN16v_tanhf)
VM_NARROW(tanh4, _ZGVbN4v_tanhf)

/* 1 / (1 + exp(0 - x)) on 16 lanes (the divide correctly rounded). */
__attribute__((target("avx512f"))) static inline __m512
sigmoid16v(__m512 x)
{
	__m512		one = _mm512_set1_ps(1.0f);

	return _mm512_div_ps(one, _mm512_add_ps(one, _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

/* The same on 4 lanes. */
static inline __m128
sigmoid4v(__m128 x)
{
	__m128		one = _mm_set1_ps(1.0f);

	return _mm_div_ps(one, _mm_add_ps(one, _ZGVbN4v_expf(_mm_sub_ps(_mm_setzero_ps(), x))));
}

VM_WIDE(sigmoid16, sigmoid16v)
VM_NARROW(sigmoid4, sigmoid4v)
#endif

/* y = exp(x), elementwise; see vmath.h. */
void
ie_vexpf(const float *x, float *y, int64_t n)
{
#ifdef VM_LIBMVEC
	if (vm_avx512())
		exp16(x, y, n);
	else
		exp4(x, y, n);
#else
	for (int64_t i = 0; i < n; i++)
		y[i] = expf(x[i]);
#endif
}

/* y = erf(x), elementwise; see vmath.h. */
void
ie_verff(const float *x, float *y, int64_t n)
{
#ifdef VM_LIBMVEC
	if (vm_avx512())
		erf16(x, y, n);
	else
		erf4(x, y, n);
#else
	for (int64_t i = 0; i < n; i++)
		y[i] = erff(x[i]);
#endif
}

/* y = tanh(x), elementwise; see vmath.h. */
void
ie_vtanhf(const float *x, float *y, int64_t n)
{
#ifdef VM_LIBMVEC
	if (vm_avx512())
		tanh16(x, y, n);
	else
		tanh4(x, y, n);
#else
	for (int64_t i = 0; i < n; i++)
		y[i] = tanhf(x[i]);
#endif
}

/*
 * y = 1 / (1 + exp(-x)), elementwise; see vmath.h.  exp(-x) overflows to
 * inf for x < -88.7, giving 0 (the true value is below 2^-128 there); it
 * is 0 for x > 103.9, giving 1.
 */
void
ie_vsigmoidf(const float *x, float *y, int64_t n)
{
#ifdef VM_LIBMVEC
	if (vm_avx512())
		sigmoid16(x, y, n);
	else
		sigmoid4(x, y, n);
#else
	for (int64_t i = 0; i < n; i++)
		y[i] = 1.0f / (1.0f + expf(0.0f - x[i]));
#endif
}

/* GELU's erf form; see vmath.h. */
void
ie_vgeluf(const float *x, float *y, int64_t n)
{
	float		t[256];

	for (int64_t c = 0; c < n; c += 256)
	{
		int64_t		m = n - c < 256 ? n - c : 256;

		for (int64_t k = 0; k < m; k++)
			t[k] = x[c + k] * (float) 0.70710678118654752440;	/* 1 / sqrt(2) */
		ie_verff(t, t, m);
		for (int64_t k = 0; k < m; k++)
			y[c + k] = 0.5f * x[c + k] * (1.0f + t[k]);
	}
}
