/*
 * fragment.h
 *	  Running one RunFragment (common/pg_infer.proto) over its rows.
 *
 * The caller hands over the request's header part (a Pginfer__RunFragment)
 * and one payload per row (the raw image bytes, borrowed); fragment_run()
 * decodes each row, runs the fragment's models and fills a fragment_result:
 * one RowResult per row, in request order, echoing row_ids, plus for
 * FRAG_PREDICT the row's float32 values.
 *
 *	  FRAG_OCR			models[0] detector, [1] classifier (file "" for none),
 *						[2] recogniser whose labels_file is the dictionary;
 *						text = the lines joined by '\n'
 *	  FRAG_DETECT_TEXT	models[0] detector; json = the boxes
 *	  FRAG_PREDICT		models[0] an image model with one NCHW float input;
 *						values = its first output, n_values of them
 *	  FRAG_CLASSIFY		as PREDICT, then text = labels[argmax]
 *	  FRAG_EMBED_TEXT	models[0] a text model (worker/text.h); rows are
 *						UTF-8 text; values = the row's embedding,
 *						truncated / n_tokens set
 *	  FRAG_CLASSIFY_TEXT models[0] a text classifier (worker/text.h); rows
 *						are UTF-8 text; text = labels[argmax of its
 *						scores], truncated / n_tokens set
 *
 * FRAG_PREDICT and FRAG_CLASSIFY run batched: the rows whose preprocessed
 * input has the same shape (all of them, for a model with a fixed input
 * size) go through the model as one N-row tensor, at most max_batch rows
 * a call, and the first output is split back per row; a row's answer is
 * the one it gets alone (tests/integration/test_worker.sh compares them).
 * A model that declares a fixed batch dimension runs one row a call.
 * FRAG_OCR and FRAG_DETECT_TEXT run each image through the whole pipeline
 * on its own (detector inputs differ in size; the recogniser's batches
 * within an image keep their composition, so the text is the same).
 *
 * Chains and shared input: a Fragment with `next` runs its first stage
 * over the rows, then each following stage over the text results of the
 * rows still ok (FRAG_OCR or FRAG_CLASSIFY text into FRAG_EMBED_TEXT;
 * another pair fails the request with 22023); a row keeps the first
 * error it met, and the row's answer is the last stage's.  A request with
 * more_fragments runs each fragment over the same rows and its result
 * holds n_fragments blocks of rows, fragment-major, each RowResult with
 * its fragment index; a chain whose first stage equals an earlier
 * single-stage fragment of the request starts from that fragment's rows
 * instead of running the stage again.
 *
 * Timings: each engine call the run makes (every stage of every fragment;
 * not a first stage taken from an earlier fragment, which does not run)
 * is one entry of the result's samples: the model file, the rows of that
 * call and the milliseconds of ie_model_run alone (no decoding or
 * preprocessing, no model load).  OCR gives per image one detector call
 * of 1 row and classifier and recogniser calls of up to 6 lines each;
 * PREDICT / CLASSIFY and the text kinds one call per batch.  A failed
 * call is not sampled.  The server folds them into its timings.
 *
 * A row that cannot be decoded (22P03), is over the pixel limit (54000) or
 * fails inside a pipeline stage gets ok = false with sqlstate, message,
 * detail and hint; the other rows go on.  What is wrong with the request
 * itself (unknown fragment kind, missing or unloadable model, unsupported
 * preprocessing, labels shorter than the output) fails the whole call.
 *
 * Threading: one call at a time per model_cache (the cache is not locked).
 */
#ifndef INFER_FRAGMENT_H
#define INFER_FRAGMENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/model_cache.h"
#include "worker/state.h"

/*
 * admin_shutdown: a request abandoned because the worker is stopping.
 * (Belongs in common/protocol.h as PGINFER_SQLSTATE_SHUTDOWN.)
 */
#define FRAGMENT_SQLSTATE_SHUTDOWN "57P01"

/*
 * Largest side of a PREDICT / CLASSIFY model input: a larger input size in
 * the model spec fails the request (22023); with input size 0 (the image's
 * own size) a larger image fails its row (22023).  8192 x 8192 x 3 floats
 * is 768 MiB.
 */
#define FRAGMENT_MAX_INPUT_SIDE 8192

typedef struct fragment_result
{
	int			n_rows;
	Pginfer__RowResult *rows;	/* n_rows; strings owned by the result */
	Pginfer__RowResult **row_ptrs;	/* &rows[i], for Pginfer__Result */
	float	  **values;			/* n_rows; malloc'd floats or NULL */
	size_t	   *n_values;		/* n_rows */
	double		compute_ms;		/* wall time of the whole fragment */
	int			model_runs;		/* ie_model_run calls (PREDICT, CLASSIFY) */
	int			n_fragments;	/* fragments of the request (rows are
								 * n_fragments blocks of the request's rows) */
	state_sample *samples;		/* n_samples model calls, in call order */
	int			n_samples;
	int			cap_samples;
} fragment_result;

/*
 * Most model calls one result keeps in samples (FRAGMENT_MAX_SAMPLES x
 * 264 bytes); later calls of the run are not sampled.
 */
#define FRAGMENT_MAX_SAMPLES 1024

/* A result of n_rows empty rows (ok = false until filled; one fragment), or NULL. */
fragment_result *fragment_result_new(int n_rows);

/*
 * Frees *r with its strings and value arrays (values[i] that the caller
 * set to NULL after taking them are skipped); sets *r to NULL.
 */
void		fragment_result_destroy(fragment_result **r);

/*
 * Runs run over n_rows payloads rows[i] of rows_len[i] bytes (n_rows must
 * equal run->n_row_ids): its fragment (with its chained stages) and its
 * more_fragments, giving n_rows * (*out)->n_fragments rows (see above).  max_pixels is the worker's limit: a request's
 * own max_pixels is used when it is set and not larger.  max_batch (>= 1)
 * caps the rows of one model call.  Returns 0 and
 * *out, or -1 with *sqlstate and a message in err when the request as a
 * whole cannot run.  When stop (may be NULL) becomes non-zero between two
 * rows, the request is abandoned with FRAGMENT_SQLSTATE_SHUTDOWN.
 * Rows that fail on their own (decoding; with input size 0 a model run
 * that fails on the image's size: 22023, or 53200 out of memory) get a
 * row error and the other rows are still answered.
 */
int			fragment_run(model_cache *mc, const Pginfer__RunFragment *run,
						 const void *const *rows, const size_t *rows_len,
						 int n_rows, int64_t max_pixels, int max_batch,
						 volatile sig_atomic_t *stop, fragment_result **out,
						 const char **sqlstate, char *err, size_t errlen);

/*
 * Appends one model call to r->samples: model file, the rows of the call
 * (its batch) and the milliseconds the engine took for it, model load
 * excluded.  Beyond FRAGMENT_MAX_SAMPLES, or when memory runs out, the
 * call is not kept (the run goes on).
 */
void		fragment_result_add_sample(fragment_result *r, const char *file,
									   int rows, double ms);

/*
 * Marks row i of r failed with these fields (copied; NULL for none),
 * replacing what the row held.
 */
void		fragment_row_error(fragment_result *r, int i, const char *sqlstate,
							   const char *message, const char *detail,
							   const char *hint);

/* The effective pixel limit for a request (see fragment_run). */
int64_t		fragment_max_pixels(int64_t requested, int64_t worker_limit);

/* Name of a fragment kind ("ocr", "detect_text", ...), for messages. */
const char *fragment_kind_name(Pginfer__FragmentKind kind);

#endif							/* INFER_FRAGMENT_H */
