/*
 * vmath.h
 *	  Vector exp and erf of float arrays (internal to the engine), shared by
 *	  the element-wise operators, Softmax and the fused epilogues so that a
 *	  fused node computes exactly what the unfused one does.
 *
 * Each element goes through the same vector code whatever its position in
 * the array (tails are padded to a full vector), so a value's result never
 * depends on its neighbours, the array's length or the batch around it.
 * Accuracy: glibc's libmvec (at most 4 ulp, glibc manual), 16 lanes where
 * the CPU has AVX-512F, else 4 lanes (SSE2); the C library elsewhere.
 *
 * Threading: pure functions.
 */
#ifndef IE_VMATH_H
#define IE_VMATH_H

#include <stdint.h>

/* y[i] = expf(x[i]) for i < n (x == y allowed). */
void		ie_vexpf(const float *x, float *y, int64_t n);

/* y[i] = erff(x[i]) for i < n (x == y allowed). */
void		ie_verff(const float *x, float *y, int64_t n);

/*
 * y[i] = GELU(x[i]) for i < n (x == y allowed), the erf form: x / 2 * (1 +
 * erf(x / sqrt(2))) (ONNX Gelu-20 with approximate "none"; Hendrycks and
 * Gimpel, arXiv 1606.08415), the erf through ie_verff, in blocks of 256 on
 * the stack.  The Gelu operator and the fused epilogue step both call it.
 */
void		ie_vgeluf(const float *x, float *y, int64_t n);

#endif							/* IE_VMATH_H */
