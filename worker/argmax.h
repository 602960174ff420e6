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

#include <math.h>
#include <stddef.h>

/*
 * Index of the largest of v[0..n) (the first on ties); n >= 1.  A NaN is
 * the largest: the first NaN's index, wherever it is, as numpy.argmax
 * gives (and the engine's ArgMax: docs/sql.md, "Models").
 */
static inline size_t
argmax(const float *v, size_t n)
{
	size_t		best = 0;

	if (isnan(v[0]))
		return 0;
	for (size_t i = 1; i < n; i++)
	{
		if (isnan(v[i]))
			return i;
		if (v[i] > v[best])
			best = i;
	}
	return best;
}

#endif							/* WORKER_ARGMAX_H */
