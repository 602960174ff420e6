/*
 * testutil.h
 *	  What every unit test program in tests/unit/ shares: the CHECK counter,
 *	  reading a whole file, a float tensor from values, and the final
 *	  "test_<module>: N passed, M failed" line.
 *
 * Header-only (static functions) because tests/unit/unit.mk builds each
 * test_*.c into its own program.  Include it once, from the test's .c file.
 *
 * Threading: the counters are plain ints; CHECK from one thread at a time.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"

static int	tu_passed;
static int	tu_failed;

/*
 * Counts one assertion: passes when cond holds, else prints
 * "FAIL file:line: " and the printf-style message that follows.
 */
#define CHECK(cond, ...) \
	do { \
		if (cond) \
			tu_passed++; \
		else \
		{ \
			tu_failed++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

/*
 * Counts one assertion like CHECK, but prints its failure to stderr:
 * "FAIL file:line: " and the printf-style message that follows.
 */
#define CHECK_ERR(cond, ...) \
	do { \
		if (cond) \
			tu_passed++; \
		else \
		{ \
			tu_failed++; \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__); \
			fprintf(stderr, "\n"); \
		} \
	} while (0)

/* Counts one assertion; a failure prints "FAIL file:line: cond" to stderr. */
#define CHECK_EXPR(cond) CHECK_ERR(cond, "%s", #cond)

/*
 * Reads a whole file into a malloc'ed buffer (one spare byte at the end)
 * and sets *len; NULL when it cannot be opened or read.
 */
static inline uint8_t *
tu_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf = NULL;
	long		n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
	{
		buf = malloc((size_t) n + 1);
		if (buf != NULL && fread(buf, 1, (size_t) n, f) != (size_t) n)
		{
			free(buf);
			buf = NULL;
		}
		*len = (size_t) n;
	}
	fclose(f);
	return buf;
}

/* A float tensor of shape dims[ndim] holding vals (numel of them). */
static inline ie_tensor *
tu_float_tensor(int ndim, const int64_t *dims, const float *vals)
{
	ie_tensor  *t = ie_tensor_new(IE_FLOAT, ndim, dims);

	memcpy(t->data, vals, t->nbytes);
	return t;
}

/*
 * Prints "name: N passed, M failed" and returns the exit status for main:
 * 0 when no CHECK failed, else 1.
 */
static inline int
tu_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, tu_passed, tu_failed);
	return tu_failed == 0 ? 0 : 1;
}

#endif							/* TESTUTIL_H */
