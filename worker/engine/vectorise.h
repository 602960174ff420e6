/*
 * worker/engine/vectorise.h: attributes that build a hot loop with GCC's
 * full vectoriser, and an AVX2 clone of it.
 *
 * -O2 alone uses GCC's "very cheap" vector cost model, which leaves most
 * of the engine's element loops scalar (any loop whose trip count is not
 * known to be a multiple of the vector width); IE_VECTORISE turns on the
 * dynamic cost model for one function.  The vector instructions compute
 * the same IEEE results element by element, so a loop's output does not
 * change, only its speed.  IE_CLONES adds an AVX2 build of the function,
 * chosen at load by the CPU (GCC's target_clones, through an ifunc).
 * Both are empty under other compilers.
 */
#ifndef IE_VECTORISE_H
#define IE_VECTORISE_H

#if defined(__GNUC__) && !defined(__clang__)
#define IE_VECTORISE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define IE_VECTORISE
#endif

/*
 * IE_VECTORISE that also lets comparisons and selects of floats be
 * if-converted (-fno-trapping-math: a comparison with a NaN may then raise
 * its "invalid" flag where the scalar code would not; the engine never
 * reads the floating-point flags).  A loop of clamps written as ?: needs
 * it to vectorise; a static inline function such a loop calls must carry
 * it too, or GCC keeps the call's body scalar.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define IE_VECTORISE_SELECTS \
	__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")))
#else
#define IE_VECTORISE_SELECTS
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define IE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define IE_CLONES
#endif

#endif							/* IE_VECTORISE_H */
