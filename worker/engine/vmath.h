/*
 * vmath.h
 *	  Vector exp, erf, tanh and sigmoid of float arrays (internal to the engine), shared by
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

/* y[i] = tanhf(x[i]) for i < n (x == y allowed); libmvec's tanhf. */
void		ie_vtanhf(const float *x, float *y, int64_t n);

/*
 * y[i] = 1 / (1 + exp(-x[i])) for i < n (x == y allowed): exp(-x) by
 * ie_vexpf's libmvec function (at most 4 ulp), then one float add and one
 * divide in the same vector registers, each correctly rounded; the
 * relative error of 1 / (1 + e) is at most that of e times e / (1 + e) < 1,
 * plus the two roundings: at most 5 ulp for a normal result (measured: 3.3
 * ulp over 2e6 points of [-100, 100] against double; tanh 1.3).  Results
 * below 2^-126 (x < -87.3) are subnormal or 0 and carry only an absolute
 * error below 2^-126.  The one sigmoid of the Sigmoid operator, the fused
 * epilogue step (fusion.c) and the recurrent operators' float gates
 * (ops_rnn.c); it gives the same bits as negating, ie_vexpf and dividing
 * element by element (all 2^32 floats compared).
 */
void		ie_vsigmoidf(const float *x, float *y, int64_t n);

/*
 * y[i] = GELU(x[i]) for i < n (x == y allowed), the erf form: x / 2 * (1 +
 * erf(x / sqrt(2))) (ONNX Gelu-20 with approximate "none"; Hendrycks and
 * Gimpel, arXiv 1606.08415), the erf through ie_verff, in blocks of 256 on
 * the stack.  The Gelu operator and the fused epilogue step both call it.
 */
void		ie_vgeluf(const float *x, float *y, int64_t n);

#endif							/* IE_VMATH_H */
