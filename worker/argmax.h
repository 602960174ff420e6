/*
 * argmax.h
 *	  The index of a float vector's largest value, as the classifiers'
 *	  answers use it (worker/fragment.c for image models, worker/text.c for
 *	  text models): labels[argmax of the scores].
 *
 * Header-only (static inline); pure, safe from any thread.
 */
#ifndef WORKER_ARGMAX_H
#define WORKER_ARGMAX_H

#include <stddef.h>

/* Index of the largest of v[0..n) (the first on ties); n >= 1. */
static inline size_t
argmax(const float *v, size_t n)
{
	size_t		best = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

#endif							/* WORKER_ARGMAX_H */
