/*
 * preflight.c
 *	  The test row of MSG_LOAD_MODEL; see preflight.h.
 *
 * Ownership: every buffer here (the image, its PNG, the result) is made
 * and freed within preflight_run() or the helper that makes it, on one
 * error path each.
 */
#include "worker/preflight.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "worker/fragment.h"
#include "worker/image.h"
#include "worker/model_calls.h"
#include "worker/ocr.h"
#include "worker/ocr_geometry.h"

/* The text row of the text tasks. */
#define PREFLIGHT_TEXT "pg_infer"

/* Sides of the image row when the registration sets none. */
#define PREFLIGHT_SIDE 224
#define PREFLIGHT_DET_H 64
#define PREFLIGHT_DET_W 256

/* A recogniser's line, as ocr_rec.c resizes it (height 48). */
#define PREFLIGHT_LINE_H 48
#define PREFLIGHT_LINE_W 192

/* Mid-grey. */
#define PREFLIGHT_GREY 128

/*
 * The fragment kind a request of task runs, FRAG_UNKNOWN for a task that
 * has none of its own (recognize_text is handled apart).
 */
static Pginfer__FragmentKind
task_kind(const char *task)
{
	if (task == NULL)
		return PGINFER__FRAGMENT_KIND__FRAG_UNKNOWN;
	if (strcmp(task, "classify") == 0)
		return PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
	if (strcmp(task, "raw") == 0 || strcmp(task, "embed_image") == 0)
		return PGINFER__FRAGMENT_KIND__FRAG_PREDICT;
	if (strcmp(task, "detect_text") == 0)
		return PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
	if (strcmp(task, "embed_text") == 0)
		return PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	if (strcmp(task, "classify_text") == 0)
		return PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT;
	return PGINFER__FRAGMENT_KIND__FRAG_UNKNOWN;
}

/* Fills *e: sqlstate, message + the context, detail and hint (NULL: none). */
static void
set_failure(preflight_error *e, const char *sqlstate, const char *message,
			const char *detail, const char *hint)
{
	snprintf(e->sqlstate, sizeof(e->sqlstate), "%s",
			 sqlstate != NULL && strlen(sqlstate) == 5 ? sqlstate :
			 PGINFER_SQLSTATE_INTERNAL);
	snprintf(e->message, sizeof(e->message), "%s %s",
			 message != NULL && message[0] != '\0' ? message : "the model failed",
			 PREFLIGHT_CONTEXT);
	snprintf(e->detail, sizeof(e->detail), "%s", detail != NULL ? detail : "");
	snprintf(e->hint, sizeof(e->hint), "%s", hint != NULL ? hint : "");
}

/* A new mid-grey image, or NULL when memory runs out. */
static image_rgb *
grey_image(int width, int height)
{
	image_rgb  *img = image_new(width, height);

	if (img != NULL)
		memset(img->pixels, PREFLIGHT_GREY, (size_t) width * (size_t) height * 3);
	return img;
}

/*
 * The image row of kind for spec: a mid-grey PNG in a new malloc'd
 * buffer (*png, *len).  Returns 0, or -1 with *e.
 */
static int
image_row(const Pginfer__ModelSpec *spec, Pginfer__FragmentKind kind,
		  uint8_t **png, size_t *len, preflight_error *e)
{
	image_rgb  *img = NULL;
	char		err[256];
	int			h = PREFLIGHT_SIDE,
				w = PREFLIGHT_SIDE;
	int			rc = -1;

	if (kind == PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT)
	{
		h = PREFLIGHT_DET_H;
		w = PREFLIGHT_DET_W;
	}
	else
	{
		/* out of range sizes are the fragment's to refuse: keep the default */
		if (spec->input_height > 0 && spec->input_height <= FRAGMENT_MAX_INPUT_SIDE)
			h = spec->input_height;
		if (spec->input_width > 0 && spec->input_width <= FRAGMENT_MAX_INPUT_SIDE)
			w = spec->input_width;
	}
	img = grey_image(w, h);
	if (img == NULL)
	{
		set_failure(e, PGINFER_SQLSTATE_OUT_OF_MEMORY, "out of memory for a test image",
					NULL, NULL);
		goto done;
	}
	if (image_encode_png(img, png, len, err, sizeof(err)) != 0)
	{
		set_failure(e, PGINFER_SQLSTATE_OUT_OF_MEMORY, err, NULL, NULL);
		goto done;
	}
	rc = 0;

done:
	image_destroy(&img);
	return rc;
}

/*
 * recognize_text: the recogniser stage of FRAG_OCR over one grey line,
 * with the checks prepare_ocr makes of the recogniser and the errors
 * run_ocr_row gives.  Returns 0, or -1 with *e.
 */
static int
run_recognizer(model_cache *mc, const Pginfer__ModelSpec *spec,
			   volatile sig_atomic_t *stop, preflight_error *e)
{
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	const ie_model *rec;
	const char *const *dict;
	int			dict_len;
	ocr_crop	crop = {0};
	char	   *text = NULL;
	float		score = 0;
	model_calls log = {0};
	ie_error_kind failed;
	char		err[1024];
	int			rc = -1;
	int			ran;

	rec = model_cache_get(mc, spec, &sqlstate, err, sizeof(err));
	if (rec == NULL)
	{
		set_failure(e, sqlstate, err, NULL, NULL);
		goto done;
	}
	if (spec->labels_file[0] == '\0')
	{
		snprintf(err, sizeof(err), "recognizer model \"%s\" has no labels_file (its dictionary)",
				 spec->file);
		set_failure(e, PGINFER_SQLSTATE_BAD_PARAM, err, NULL, NULL);
		goto done;
	}
	if (model_cache_get_dict(mc, spec->labels_file, &dict, &dict_len, &sqlstate,
							 err, sizeof(err)) != 0)
	{
		set_failure(e, sqlstate, err, NULL, NULL);
		goto done;
	}
	crop.img = grey_image(PREFLIGHT_LINE_W, PREFLIGHT_LINE_H);
	if (crop.img == NULL)
	{
		set_failure(e, PGINFER_SQLSTATE_OUT_OF_MEMORY, "out of memory for a test line",
					NULL, NULL);
		goto done;
	}
	model_calls_open(&log);
	ran = ocr_recognize(rec, dict, dict_len, &crop, 1, &text, &score, stop,
						err, sizeof(err));
	model_calls_close(&log);
	failed = log.failed;
	model_calls_free(&log);
	if (ran == OCR_STOPPED)
	{
		set_failure(e, FRAGMENT_SQLSTATE_SHUTDOWN,
					"the worker is shutting down; the model was not tried", NULL, NULL);
		goto done;
	}
	if (ran != 0)
	{
		/* as run_ocr_row: 0A000 fails the request, the rest the row */
		const char *state = failed != IE_ERR_NONE ? model_calls_sqlstate(failed) :
			strstr(err, "out of memory") != NULL ? PGINFER_SQLSTATE_OUT_OF_MEMORY :
			PGINFER_SQLSTATE_INTERNAL;
		char		msg[1100];

		if (strcmp(state, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
		{
			snprintf(msg, sizeof(msg), "OCR failed: %s", err);
			set_failure(e, state, msg, NULL, NULL);
		}
		else
			set_failure(e, state, "OCR failed", err, NULL);
		goto done;
	}
	rc = 0;

done:
	free(text);
	image_destroy(&crop.img);
	return rc;
}

/* Runs spec once on a synthetic row of its task; see preflight.h. */
int
preflight_run(model_cache *mc, const Pginfer__ModelSpec *spec,
			  int64_t max_pixels, volatile sig_atomic_t *stop,
			  preflight_error *e)
{
	Pginfer__FragmentKind kind = task_kind(spec->task);
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__ModelSpec *models[1];
	uint64_t	row_id = 0;
	uint8_t    *png = NULL;
	const void *rows[1];
	size_t		lens[1];
	fragment_result *fr = NULL;
	const char *sqlstate = PGINFER_SQLSTATE_INTERNAL;
	char		err[1024];
	int			rc = -1;

	memset(e, 0, sizeof(*e));
	if (spec->task != NULL && strcmp(spec->task, "recognize_text") == 0)
		return run_recognizer(mc, spec, stop, e);
	if (kind == PGINFER__FRAGMENT_KIND__FRAG_UNKNOWN)
		return 0;

	if (kind == PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT ||
		kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT)
	{
		rows[0] = PREFLIGHT_TEXT;
		lens[0] = strlen(PREFLIGHT_TEXT);
	}
	else
	{
		if (image_row(spec, kind, &png, &lens[0], e) != 0)
			goto done;
		rows[0] = png;
	}

	/* the request the task's SQL function sends, with this one row */
	models[0] = (Pginfer__ModelSpec *) spec;
	frag.kind = kind;
	frag.n_models = 1;
	frag.models = models;
	frag.truncate_text = true;
	run.fragment = &frag;
	run.n_row_ids = 1;
	run.row_ids = &row_id;
	if (fragment_run(mc, &run, rows, lens, 1, max_pixels, 1, stop, &fr,
					 &sqlstate, err, sizeof(err)) != 0)
	{
		set_failure(e, sqlstate, err, NULL, NULL);
		goto done;
	}
	if (fr->n_rows < 1 || !fr->rows[0].ok)
	{
		const Pginfer__RowResult *row = fr->n_rows >= 1 ? &fr->rows[0] : NULL;

		set_failure(e, row != NULL ? row->sqlstate : NULL,
					row != NULL ? row->message : NULL,
					row != NULL ? row->detail : NULL,
					row != NULL ? row->hint : NULL);
		goto done;
	}
	rc = 0;

done:
	fragment_result_destroy(&fr);
	free(png);
	return rc;
}
