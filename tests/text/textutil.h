/*
 * textutil.h
 *	  What the test programs of tests/text/ share: the passed/failed counters,
 *	  the CHECK counter (which prints only the first 20 failures: a broken
 *	  reference would otherwise print one line per text), the hex digit
 *	  decoder for the references' "<UTF-8 hex>" columns, and the cosine of
 *	  two vectors.
 *
 * Header-only (static) because tests/text/text.mk builds each test_*.c into
 * its own program.  Include it once, from the test's .c file.  (Unlike
 * tests/unit/testutil.h, it caps the printed failures and pulls in no
 * engine header: test_tokenizer links only worker/tokenizer.o.)
 *
 * Threading: the counters are plain ints; CHECK from one thread at a time.
 */
#ifndef TEXTUTIL_H
#define TEXTUTIL_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

static int	passed;
static int	failed;

/*
 * Counts one case; a failure prints "FAIL file:line: " and the
 * printf-style message that follows (the first 20 failures only).
 */
#define CHECK(cond, ...) \
	do { \
		if (cond) \
			passed++; \
		else \
		{ \
			failed++; \
			if (failed <= 20) \
			{ \
				printf("FAIL %s:%d: ", __FILE__, __LINE__); \
				printf(__VA_ARGS__); \
				printf("\n"); \
			} \
		} \
	} while (0)

/* Value of a lower-case hex digit, -1 for anything else. */
static inline int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Cosine of two vectors of n floats, summed in double. */
static inline double
cosine(const float *a, const float *b, size_t n)
{
	double		d = 0,
				aa = 0,
				bb = 0;

	for (size_t i = 0; i < n; i++)
	{
		d += (double) a[i] * b[i];
		aa += (double) a[i] * a[i];
		bb += (double) b[i] * b[i];
	}
	return d / sqrt(aa * bb);
}

#endif							/* TEXTUTIL_H */
