/*
 * preflight.h
 *	  The test row of MSG_LOAD_MODEL: a registered model run once, on one
 *	  synthetic row, the way a request of its task runs it.
 *
 * infer.load_model is used as a pre-flight check before a burst, so a
 * load that succeeds must mean that the first real row does not fail for
 * the model or its registration.  Making the file resident (model_cache)
 * checks only that it loads; preflight_run() then sends one row through
 * fragment_run() as the request a task's SQL function sends:
 *
 *	  classify			FRAG_CLASSIFY (labels, input count, type and size)
 *	  raw, embed_image	FRAG_PREDICT
 *	  detect_text		FRAG_DETECT_TEXT
 *	  embed_text		FRAG_EMBED_TEXT, the text "pg_infer"
 *	  classify_text		FRAG_CLASSIFY_TEXT, the text "pg_infer"
 *	  recognize_text	the recogniser stage of FRAG_OCR (ocr_recognize)
 *						over one grey 48x192 line with its dictionary, as
 *						a detected line reaches it (no fragment runs a
 *						recogniser without a detector)
 *
 * An image row is a mid-grey PNG (encoded in memory, decoded by the same
 * image_decode as a real row) at the registered input size when one is
 * set, else 224x224 (the preprocessing resizes it to a size the model
 * declares); a detect_text row is 64x256.  A task outside this list has
 * no run of its own here and is not tried.
 *
 * What the run touches: the model cache (the use counts as a model hit,
 * as the load counts as a use) and nothing of the server: no request,
 * batch, row or timing is counted, no input-cache entry is made.  The
 * caller skips it for a simulated device.
 */
#ifndef INFER_PREFLIGHT_H
#define INFER_PREFLIGHT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/model_cache.h"

/* What a failed test row reports: as the first real row would. */
typedef struct preflight_error
{
	char		sqlstate[6];	/* five characters */
	char		message[1024];	/* the row's or request's message */
	char		detail[1024];	/* "" when none */
	char		hint[512];		/* "" when none */
} preflight_error;

/* The context preflight_run() appends to a failure's message. */
#define PREFLIGHT_CONTEXT "(a test row at load)"

/*
 * Runs spec once on a synthetic row of its task (see above), its model
 * already resident.  max_pixels is the worker's pixel limit, stop as
 * fragment_run's.  Returns 0 when the row ran (or the task has no run),
 * or -1 with *e filled: the SQLSTATE and message a real first row would
 * get, followed by " " PREFLIGHT_CONTEXT, with its detail and hint.
 */
int			preflight_run(model_cache *mc, const Pginfer__ModelSpec *spec,
						  int64_t max_pixels, volatile sig_atomic_t *stop,
						  preflight_error *e);

#endif							/* INFER_PREFLIGHT_H */
