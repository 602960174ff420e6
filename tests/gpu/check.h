/*
 * check.h
 *	  The pass/fail count of the GPU test programs (test_device.c,
 *	  test_prep.c): check() records one result and prints a failure as
 *	  "FAIL what: detail".  Included by one .c file each.
 */
#ifndef INFER_TESTS_GPU_CHECK_H
#define INFER_TESTS_GPU_CHECK_H

#include <stdio.h>

static int	passed,
			failed;

/* Records one check. */
static void
check(int ok, const char *what, const char *detail)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	}
}

#endif							/* INFER_TESTS_GPU_CHECK_H */
