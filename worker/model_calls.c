/*
 * model_calls.c
 *	  Timing of engine model calls into the thread's open log, and the
 *	  SQLSTATE of a failed call's kind; see model_calls.h.
 *
 * Threading: the open log is a _Thread_local pointer; nothing is shared.
 */
#include "worker/model_calls.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"

/* The calling thread's open log, or NULL. */
static _Thread_local model_calls *open_log;

/* Milliseconds since an arbitrary point; see model_calls.h. */
double
model_calls_now_ms(void)
{
	return (double) ie_now_ns() / 1e6;
}

/* Empties *log and opens it on this thread; see model_calls.h. */
void
model_calls_open(model_calls *log)
{
	assert(open_log == NULL);
	log->n = 0;
	log->dropped = 0;
	log->failed = IE_ERR_NONE;
	open_log = log;
}

/* Closes *log on this thread (a no-op when it is not the open one). */
void
model_calls_close(model_calls *log)
{
	if (open_log == log)
		open_log = NULL;
}

/* Frees the calls of *log, closing it first; see model_calls.h. */
void
model_calls_free(model_calls *log)
{
	model_calls_close(log);
	free(log->calls);
	log->calls = NULL;
	log->n = log->cap = log->dropped = 0;
	log->failed = IE_ERR_NONE;
}

/* The SQLSTATE of a failed run's kind; see model_calls.h. */
const char *
model_calls_sqlstate(ie_error_kind kind)
{
	switch (kind)
	{
		case IE_ERR_NO_MEMORY:
			return PGINFER_SQLSTATE_OUT_OF_MEMORY;
		case IE_ERR_NOT_SUPPORTED:
			return PGINFER_SQLSTATE_NOT_SUPPORTED;
		case IE_ERR_LIMIT:
			return PGINFER_SQLSTATE_TOO_LARGE;
		default:
			return PGINFER_SQLSTATE_INTERNAL;
	}
}

/* Notes a failed call's kind (rc < 0, what the engine returned) in the open log. */
static void
note_failure(int rc)
{
	if (rc < 0 && open_log != NULL)
		open_log->failed = (ie_error_kind) -rc;
}

/* The failure of a tensor of the caller's own; see model_calls.h. */
int
model_calls_tensor_failed(char *err, size_t errlen, const char *fmt,...)
{
	char		what[256];
	char		why[384];
	va_list		ap;
	ie_error_kind kind = IE_ERR_NO_MEMORY;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ie_tensor_take_refusal(why, sizeof(why)))
	{
		kind = IE_ERR_LIMIT;
		snprintf(err, errlen, "%s: over the tensor limit: %s", what, why);
	}
	else
		snprintf(err, errlen, "%s: out of memory", what);
	note_failure(-(int) kind);
	return -(int) kind;
}

/* Appends one call to log, growing it by doubling; counts it as dropped when it cannot. */
static void
append(model_calls *log, const ie_model *model, int rows, double ms)
{
	if (log->n == log->cap)
	{
		int			cap = log->cap > 0 ? log->cap * 2 : 16;
		model_call_time *c;

		if (cap > MODEL_CALLS_MAX)
			cap = MODEL_CALLS_MAX;
		if (cap <= log->n)
		{
			log->dropped++;
			return;
		}
		c = realloc(log->calls, (size_t) cap * sizeof(*c));
		if (c == NULL)
		{
			log->dropped++;
			return;
		}
		log->calls = c;
		log->cap = cap;
	}
	log->calls[log->n].model = model;
	log->calls[log->n].rows = rows;
	log->calls[log->n].ms = ms;
	log->n++;
}

/* ie_model_run_images, timed into the thread's open log; see model_calls.h. */
int
model_calls_run_images(const ie_model *model, const ie_image *images, int n,
					   const ie_image_norm *norm, ie_tensor **outputs, char *err,
					   size_t errlen)
{
	double		t0 = model_calls_now_ms();
	int			rc = ie_model_run_images(model, images, n, norm, outputs, err, errlen);
	double		ms = model_calls_now_ms() - t0;

	if (rc == 0 && open_log != NULL)
		append(open_log, model, n, ms);
	note_failure(rc);
	return rc;
}

/* ie_model_run, timed into the thread's open log; see model_calls.h. */
int
model_calls_run(const ie_model *model, const ie_tensor *const *inputs,
				ie_tensor **outputs, char *err, size_t errlen)
{
	double		t0 = model_calls_now_ms();
	int			rc = ie_model_run(model, inputs, outputs, err, errlen);
	double		ms = model_calls_now_ms() - t0;

	if (rc == 0 && open_log != NULL)
	{
		const ie_tensor *in = inputs != NULL ? inputs[0] : NULL;
		int			rows = in != NULL && in->ndim >= 1 ? (int) in->dims[0] : 1;

		append(open_log, model, rows, ms);
	}
	note_failure(rc);
	return rc;
}

/* Whether a row's batched values are its values alone; see model_calls.h. */
bool
model_calls_rows_match(const float *batched, const float *alone, size_t n,
					   bool exact)
{
	if (exact)
		return n == 0 || memcmp(batched, alone, n * sizeof(float)) == 0;
	for (size_t i = 0; i < n; i++)
	{
		float		x = batched[i],
					y = alone[i];

		if (!(x == y || (isnan(x) && isnan(y)) ||
			  fabsf(x - y) <= 1e-5f + 1e-3f * fabsf(y)))
			return false;
	}
	return true;
}
