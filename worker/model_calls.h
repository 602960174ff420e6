/*
 * model_calls.h
 *	  The time of each engine model call (ie_model_run), for the worker's
 *	  measured compute time per model and batch size (state.h's timings),
 *	  the kind of a call that failed, and the SQLSTATE of that kind.
 *
 * Code that calls the engine deep inside a pipeline whose interface
 * carries no timing (the OCR stages under ocr_run(), which infer-ocr and
 * the unit tests share) runs its models through model_calls_run(): it
 * times ie_model_run() alone (no pre- or post-processing, no model load)
 * and appends {model, rows, ms} to the log the calling thread has open,
 * if any.  The caller that wants the times (fragment.c, per OCR image)
 * opens a log on its thread, runs the pipeline, closes the log and reads
 * its calls; with no log open a call costs two clock reads.
 *
 * A log holds at most MODEL_CALLS_MAX calls; later ones (and any it has
 * no memory for) are counted in dropped.
 *
 * Threading: the open log is per thread (C11 _Thread_local), so threads
 * that run pipelines at once keep their calls apart; a log belongs to the
 * thread that opened it.
 */
#ifndef INFER_MODEL_CALLS_H
#define INFER_MODEL_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "worker/engine/engine.h"

/* Most calls one log keeps. */
#define MODEL_CALLS_MAX 1024

/* One engine call: the model, the rows of its batch, its milliseconds. */
typedef struct model_call_time
{
	const ie_model *model;
	int			rows;			/* first input's first dimension (1 for a scalar) */
	double		ms;				/* wall time of ie_model_run, CLOCK_MONOTONIC */
} model_call_time;

typedef struct model_calls
{
	model_call_time *calls;		/* n of them, malloc'd */
	int			n;
	int			cap;
	int			dropped;		/* calls not kept (MODEL_CALLS_MAX, memory) */
	ie_error_kind failed;		/* the kind of the last call that failed
								 * (engine.h), IE_ERR_NONE when none did */
} model_calls;

/*
 * Empties *log and makes it the calling thread's open log (one at a time:
 * opening a second one while one is open is a bug, asserted).
 */
void		model_calls_open(model_calls *log);

/* Makes *log no longer the thread's open log; its calls stay readable. */
void		model_calls_close(model_calls *log);

/* Frees the calls of *log (closing it first when it is open). */
void		model_calls_free(model_calls *log);

/*
 * ie_model_run(model, inputs, outputs, err, errlen), timed; a call that
 * succeeds is appended to the thread's open log (when there is one), a
 * failed one is not (its time measures no compute) but sets the log's
 * failed.  Returns what ie_model_run returns.
 */
int			model_calls_run(const ie_model *model, const ie_tensor *const *inputs,
							ie_tensor **outputs, char *err, size_t errlen);

/*
 * ie_model_run_images(model, images, n, norm, outputs, err, errlen), timed
 * and logged as model_calls_run (rows: n); on the device the time includes
 * the images' upload and preprocessing, which are part of that call.
 */
int			model_calls_run_images(const ie_model *model, const ie_image *images, int n,
								   const ie_image_norm *norm, ie_tensor **outputs,
								   char *err, size_t errlen);

/*
 * The SQLSTATE (common/protocol.h) of a failed model run's kind (engine.h;
 * ie_model_run returns its negative): PGINFER_SQLSTATE_OUT_OF_MEMORY
 * (53200) when memory ran out,
 * PGINFER_SQLSTATE_NOT_SUPPORTED (0A000) for what the engine lacks,
 * PGINFER_SQLSTATE_INTERNAL (XX000) for the rest (inputs the model cannot
 * take, device errors).  Never from the message, which holds the names of
 * the model's file, nodes and tensors.
 */
const char *model_calls_sqlstate(ie_error_kind kind);

/*
 * For a tensor of the caller's own (a pipeline's input batch) whose
 * ie_tensor_new returned NULL: when the engine refused it for its size
 * (ie_tensor_take_refusal: over --max-tensor-bytes), the thread's open log
 * notes IE_ERR_LIMIT (54000) and err gets "<what>: over the tensor limit:
 * <the refusal>"; otherwise IE_ERR_NO_MEMORY (53200) and "<what>: out of
 * memory", what formatted from fmt.  Returns the kind's negative, as a
 * failed ie_model_run does.
 */
int			model_calls_tensor_failed(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Milliseconds since an arbitrary point, CLOCK_MONOTONIC. */
double		model_calls_now_ms(void);

/*
 * Whether a row's n values from a batched run (batched) are what the row
 * run alone gave (alone), the check that decides whether a model's rows
 * may share a batch (fragment.c's rows_first, text.c's probe_rows).
 * exact: bit for bit (memcmp); otherwise within the tolerance of ONNX's
 * backend tests, numpy.allclose rtol 1e-3, atol 1e-5, NaN matching NaN,
 * an infinity itself.
 */
bool		model_calls_rows_match(const float *batched, const float *alone,
								   size_t n, bool exact);

#endif							/* INFER_MODEL_CALLS_H */
