/*
 * fragment.c
 *	  Runs one RunFragment over its rows: decode, the fragment's pipeline,
 *	  one RowResult per row (see fragment.h for the kinds).
 *
 * fragment_run() first resolves everything the rows share (models from the
 * cache, dictionary, preprocessing parameters) in prepare(); only then does
 * it touch the rows, so a request that cannot run fails before any work.
 * Row-level failures are written into the row and the loop goes on.
 *
 * FRAG_PREDICT / FRAG_CLASSIFY rows are batched by input shape in
 * run_image_rows(): each decoded row is resized and normalised straight
 * into the pending N x 3 x h x w tensor of its shape, which runs when it
 * holds max_batch rows (or too many bytes wait, or the rows are done).
 * When a row's input shape is its image's own (input size 0), a batch whose
 * run fails is rerun row by row, so that only the rows the model cannot
 * take (say, smaller than a pooling kernel) fail, each with 22023.
 *
 * Every engine call is timed into the result's samples (fragment.h): here
 * in model_call(), in text.c's batches, and for OCR through the
 * model_calls log that run_ocr_row() opens around each image's pipeline.
 *
 * Threading: one call at a time per model_cache.
 */
#include "worker/fragment.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/protocol.h"
#include "worker/argmax.h"
#include "worker/image.h"
#include "worker/log.h"
#include "worker/model_calls.h"
#include "worker/ocr.h"
#include "worker/preprocess.h"
#include "worker/request.h"
#include "worker/text.h"

/*
 * Whether a model's first output keeps the rows of a batch in its first
 * dimension (output_layout): known from the declarations, or to be found
 * by a run (flush_batch's check, whose verdict is kept with the loaded
 * model).
 */
typedef enum out_layout
{
	OUT_ROWS_FIRST,				/* yes: split it by rows */
	OUT_NOT_ROWS,				/* no: run rows alone */
	OUT_UNKNOWN					/* check at the first batch of 2 or more */
} out_layout;

/* What prepare() resolves once per request. */
typedef struct frag_plan
{
	Pginfer__FragmentKind kind;
	/* FRAG_OCR, FRAG_DETECT_TEXT */
	ocr_models ocr;
	ocr_params params;
	const char *ocr_file[3];	/* model files of ocr.det, .cls, .rec */
	/* FRAG_PREDICT, FRAG_CLASSIFY */
	const Pginfer__ModelSpec *spec;
	const ie_model *model;
	int			in_h;			/* 0: the image's own height */
	int			in_w;
	float		mean[3];
	float		std[3];
	int			bgr;
	out_layout	out;			/* where the first output keeps the rows */
	model_cache *mc;			/* the cache holding model (its verdict) */
	/* FRAG_CLASSIFY: the labels, in the order of the scores */
	const char *const *labels;
	size_t		n_labels;
} frag_plan;

/* Name of a fragment kind, for messages. */
const char *
fragment_kind_name(Pginfer__FragmentKind kind)
{
	switch (kind)
	{
		case PGINFER__FRAGMENT_KIND__FRAG_OCR:
			return "ocr";
		case PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT:
			return "detect_text";
		case PGINFER__FRAGMENT_KIND__FRAG_PREDICT:
			return "predict";
		case PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY:
			return "classify";
		case PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT:
			return "embed_text";
		case PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT:
			return "classify_text";
		default:
			return "unknown";
	}
}

/* The request's limit when set and not above the worker's, else the worker's. */
int64_t
fragment_max_pixels(int64_t requested, int64_t worker_limit)
{
	if (worker_limit <= 0)
		worker_limit = PGINFER_DEFAULT_MAX_PIXELS;
	if (requested > 0 && requested < worker_limit)
		return requested;
	return worker_limit;
}

/* A result of n_rows rows, each initialised (ok = false, empty strings). */
fragment_result *
fragment_result_new(int n_rows)
{
	fragment_result *r = NULL;
	size_t		n = n_rows > 0 ? (size_t) n_rows : 1;

	if (n_rows < 0)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		goto fail;
	r->n_rows = n_rows;
	r->n_fragments = 1;
	r->rows = calloc(n, sizeof(*r->rows));
	r->row_ptrs = calloc(n, sizeof(*r->row_ptrs));
	r->values = calloc(n, sizeof(*r->values));
	r->n_values = calloc(n, sizeof(*r->n_values));
	if (r->rows == NULL || r->row_ptrs == NULL || r->values == NULL ||
		r->n_values == NULL)
		goto fail;
	for (int i = 0; i < n_rows; i++)
	{
		Pginfer__RowResult init = PGINFER__ROW_RESULT__INIT;

		r->rows[i] = init;
		r->row_ptrs[i] = &r->rows[i];
	}
	return r;

fail:
	fragment_result_destroy(&r);
	return NULL;
}

/* Frees a string field unless it is protobuf-c's shared empty string. */
static void
free_field(char **s)
{
	if (*s != NULL && *s != (char *) protobuf_c_empty_string)
		free(*s);
	*s = (char *) protobuf_c_empty_string;
}

/* Frees *rp, its strings and its value arrays; sets *rp to NULL. */
void
fragment_result_destroy(fragment_result **rp)
{
	fragment_result *r;

	if (rp == NULL || *rp == NULL)
		return;
	r = *rp;
	for (int i = 0; r->rows != NULL && i < r->n_rows; i++)
	{
		free_field(&r->rows[i].sqlstate);
		free_field(&r->rows[i].message);
		free_field(&r->rows[i].detail);
		free_field(&r->rows[i].hint);
		free_field(&r->rows[i].text);
		free_field(&r->rows[i].json);
		if (r->values != NULL)
			free(r->values[i]);
	}
	free(r->rows);
	free(r->row_ptrs);
	free(r->values);
	free(r->n_values);
	free(r->samples);
	free(r);
	*rp = NULL;
}

/* Appends one model call to r's samples; see fragment.h. */
void
fragment_result_add_sample(fragment_result *r, const char *file, int rows,
						   double ms)
{
	state_sample *smp;

	if (r->n_samples == r->cap_samples)
	{
		int			cap = r->cap_samples > 0 ? r->cap_samples * 2 : 16;
		state_sample *v;

		if (cap > FRAGMENT_MAX_SAMPLES)
			cap = FRAGMENT_MAX_SAMPLES;
		if (cap <= r->n_samples)
			return;
		v = realloc(r->samples, (size_t) cap * sizeof(*v));
		if (v == NULL)
			return;
		r->samples = v;
		r->cap_samples = cap;
	}
	smp = &r->samples[r->n_samples++];
	snprintf(smp->file, sizeof(smp->file), "%s", file);
	smp->rows = rows;
	smp->ms = ms;
}

/* Appends the samples of src to dst's (as far as they fit). */
static void
take_samples(fragment_result *dst, const fragment_result *src)
{
	for (int k = 0; k < src->n_samples; k++)
		fragment_result_add_sample(dst, src->samples[k].file, src->samples[k].rows,
								   src->samples[k].ms);
}

/* strdup that falls back to the empty string when memory runs out. */
static char *
dup_field(const char *s)
{
	char	   *d;

	if (s == NULL || s[0] == '\0')
		return (char *) protobuf_c_empty_string;
	d = strdup(s);
	return d != NULL ? d : (char *) protobuf_c_empty_string;
}

/* Marks row i failed with the given error fields; see fragment.h. */
void
fragment_row_error(fragment_result *r, int i, const char *sqlstate,
				   const char *message, const char *detail, const char *hint)
{
	Pginfer__RowResult *row = &r->rows[i];

	row->ok = 0;
	free_field(&row->sqlstate);
	free_field(&row->message);
	free_field(&row->detail);
	free_field(&row->hint);
	row->sqlstate = dup_field(sqlstate);
	row->message = dup_field(message);
	row->detail = dup_field(detail);
	row->hint = dup_field(hint);
}

/*
 * Reads a per-channel parameter (mean or std): none gives def, one value
 * is used for all three channels, three are taken as they are.
 */
static int
channel_param(const float *v, size_t n, float def, float out[3],
			  const char *what, const char *model, char *err, size_t errlen)
{
	if (n == 0)
		out[0] = out[1] = out[2] = def;
	else if (n == 1)
		out[0] = out[1] = out[2] = v[0];
	else if (n == 3)
		memcpy(out, v, 3 * sizeof(float));
	else
	{
		snprintf(err, errlen, "model \"%s\" has %zu %s values, expected 1 or 3",
				 model, n, what);
		return -1;
	}
	return 0;
}

/* Resolves the OCR models and dictionary (FRAG_OCR, FRAG_DETECT_TEXT). */
static int
prepare_ocr(model_cache *mc, const Pginfer__Fragment *frag, frag_plan *p,
			const char **sqlstate, char *err, size_t errlen)
{
	int			need = frag->kind == PGINFER__FRAGMENT_KIND__FRAG_OCR ? 3 : 1;
	const Pginfer__ModelSpec *rec;

	ocr_params_default(&p->params);
	if (frag->n_models < (size_t) need)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "%s fragment has %zu models, expected %d (%s)",
				 fragment_kind_name(frag->kind), frag->n_models, need,
				 need == 3 ? "detector, classifier, recognizer" : "detector");
		return -1;
	}
	/* two versions of one file cannot both be resident: refuse first */
	if (model_cache_check_specs((const Pginfer__ModelSpec *const *) frag->models,
								need, sqlstate, err, errlen) != 0)
		return -1;
	p->ocr.det = model_cache_get(mc, frag->models[0], sqlstate, err, errlen);
	if (p->ocr.det == NULL)
		return -1;
	p->ocr_file[0] = frag->models[0]->file;
	if (frag->kind == PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT)
		return 0;

	/* The classifier is optional: an empty file name skips the stage. */
	if (frag->models[1]->file[0] != '\0')
	{
		p->ocr.cls = model_cache_get(mc, frag->models[1], sqlstate, err, errlen);
		if (p->ocr.cls == NULL)
			return -1;
		p->ocr_file[1] = frag->models[1]->file;
	}
	else
		p->params.use_cls = 0;

	rec = frag->models[2];
	p->ocr.rec = model_cache_get(mc, rec, sqlstate, err, errlen);
	if (p->ocr.rec == NULL)
		return -1;
	p->ocr_file[2] = rec->file;
	if (rec->labels_file[0] == '\0')
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "recognizer model \"%s\" has no labels_file (its dictionary)",
				 rec->file);
		return -1;
	}
	return model_cache_get_dict(mc, rec->labels_file, &p->ocr.dict,
								&p->ocr.dict_len, sqlstate, err, errlen);
}

/*
 * The name (ONNX dim_param) of dimension d of model's first input
 * (output 0) or first output (1), or NULL when it has none or "?" (a
 * placeholder, not a name).
 */
static const char *
dim_name(const ie_model *model, int output, int d)
{
	const char *name = ie_model_dim_param(model, output, 0, d);

	return name != NULL && strcmp(name, "?") != 0 ? name : NULL;
}

/*
 * What the declarations of model's first output say of its rows (input
 * 0's first dimension): OUT_ROWS_FIRST when its first dimension has the
 * name (ONNX dim_param) of the input's first; OUT_NOT_ROWS when it is
 * fixed at more than 1 ([3, N, 1, 1]) or a later dimension has the
 * input's name ([T, N, C] against [N, 3, H, W]); else OUT_UNKNOWN (no
 * declared shape, unnamed or otherwise named dimensions), which a run
 * settles (flush_batch).  Exporters name dimensions as they please
 * (paddle2onnx names every one apart, "p2o.DynamicDimension.0" and ".3"
 * for the same batch, and some "?", which names nothing), so a name that
 * differs proves nothing.
 */
static out_layout
output_layout(const ie_model *model)
{
	int64_t		dims[IE_MAX_DIMS];
	int			rank = ie_model_output_shape(model, 0, NULL, dims);
	const char *batch = dim_name(model, 0, 0);

	if (rank >= 1 && dims[0] > 1)
		return OUT_NOT_ROWS;
	if (rank < 1 || batch == NULL)
		return OUT_UNKNOWN;
	if (dim_name(model, 1, 0) != NULL && strcmp(dim_name(model, 1, 0), batch) == 0)
		return OUT_ROWS_FIRST;
	for (int d = 1; d < rank; d++)
		if (dim_name(model, 1, d) != NULL && strcmp(dim_name(model, 1, d), batch) == 0)
			return OUT_NOT_ROWS;
	return OUT_UNKNOWN;
}

/*
 * Where p's model keeps the rows: "not rows" kept with the model wins (a
 * batch failed where its rows alone ran, or the check of rows_first), as
 * do declarations that put the rows elsewhere; rows first only from a
 * verdict kept, so that a model whose output is declared [N, ...] is
 * checked once a load too (OUT_UNKNOWN until then): the declaration says
 * where the rows are, not that they stay apart, and a MaxPool's Indices,
 * counted over the whole batch tensor (ONNX MaxPool-12, "Indices"), give
 * row k values k * C * H * W higher than the row gets alone.
 */
static out_layout
plan_layout(const frag_plan *p)
{
	int			v = p->mc != NULL ? model_cache_get_layout(p->mc, p->spec->file) : 0;

	if (v == MODEL_LAYOUT_NOT_ROWS || p->out == OUT_NOT_ROWS)
		return OUT_NOT_ROWS;
	return v == MODEL_LAYOUT_ROWS_FIRST ? OUT_ROWS_FIRST : OUT_UNKNOWN;
}

/* Keeps the verdict rows_first with p's model (plan_layout), saying why. */
static void
keep_verdict(const frag_plan *p, bool rows_first, const char *why)
{
	if (p->mc != NULL)
		model_cache_keep_layout(p->mc, p->spec->file,
								rows_first ? MODEL_LAYOUT_ROWS_FIRST : MODEL_LAYOUT_NOT_ROWS,
								"model", why);
}

/* Resolves the model and preprocessing of FRAG_PREDICT / FRAG_CLASSIFY. */
static int
prepare_image_model(model_cache *mc, const Pginfer__Fragment *frag,
					frag_plan *p, const char **sqlstate, char *err,
					size_t errlen)
{
	const Pginfer__ModelSpec *spec;
	int64_t		dims[IE_MAX_DIMS];
	ie_dtype	dtype = IE_UNDEFINED;
	int			rank;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (frag->n_models < 1)
	{
		snprintf(err, errlen, "%s fragment has no model",
				 fragment_kind_name(frag->kind));
		return -1;
	}
	spec = p->spec = frag->models[0];
	if (spec->resize_mode[0] != '\0' && strcmp(spec->resize_mode, "stretch") != 0)
	{
		snprintf(err, errlen,
				 "resize_mode \"%s\" of model \"%s\" is not supported by this worker; use \"stretch\"",
				 spec->resize_mode, spec->file);
		return -1;
	}
	if (spec->color_order[0] == '\0' || strcasecmp(spec->color_order, "RGB") == 0)
		p->bgr = 0;
	else if (strcasecmp(spec->color_order, "BGR") == 0)
		p->bgr = 1;
	else
	{
		snprintf(err, errlen, "color_order \"%s\" of model \"%s\" is neither \"RGB\" nor \"BGR\"",
				 spec->color_order, spec->file);
		return -1;
	}
	if (channel_param(spec->mean, spec->n_mean, 0.0f, p->mean, "mean",
					  spec->file, err, errlen) != 0 ||
		channel_param(spec->std, spec->n_std, 1.0f, p->std, "std",
					  spec->file, err, errlen) != 0)
		return -1;
	for (int c = 0; c < 3; c++)
	{
		if (!(fabsf(p->std[c]) > 0.0f))
		{
			snprintf(err, errlen, "std of model \"%s\" has a zero value", spec->file);
			return -1;
		}
	}
	if (spec->input_height < 0 || spec->input_width < 0)
	{
		snprintf(err, errlen, "model \"%s\" has a negative input size %dx%d",
				 spec->file, spec->input_width, spec->input_height);
		return -1;
	}
	if (spec->input_height > FRAGMENT_MAX_INPUT_SIDE ||
		spec->input_width > FRAGMENT_MAX_INPUT_SIDE)
	{
		snprintf(err, errlen, "input size %dx%d of model \"%s\" exceeds this worker's "
				 "limit of %d pixels a side", spec->input_width, spec->input_height,
				 spec->file, FRAGMENT_MAX_INPUT_SIDE);
		return -1;
	}
	if (frag->kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY &&
		model_cache_get_labels(mc, spec, &p->labels, &p->n_labels, sqlstate,
							   err, errlen) != 0)
		return -1;

	p->model = model_cache_get(mc, spec, sqlstate, err, errlen);
	if (p->model == NULL)
		return -1;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (ie_model_n_inputs(p->model) != 1)
	{
		snprintf(err, errlen, "model \"%s\" has %d inputs; an image model needs exactly 1",
				 spec->file, ie_model_n_inputs(p->model));
		return -1;
	}
	rank = ie_model_input_shape(p->model, 0, &dtype, dims);
	if (rank != 4 || dtype != IE_FLOAT || (dims[1] != 3 && dims[1] >= 0))
	{
		char		shape[256] = "";
		size_t		n = 0;

		/* "[N, 1, 224, 224]": a dynamic dimension by its name, else "?" */
		for (int d = 0; d < rank && n < sizeof(shape); d++)
		{
			const char *name = ie_model_dim_param(p->model, 0, 0, d);
			int			k = dims[d] >= 0 ?
				snprintf(shape + n, sizeof(shape) - n, "%s%lld", d ? ", " : "",
						 (long long) dims[d]) :
				snprintf(shape + n, sizeof(shape) - n, "%s%.20s", d ? ", " : "",
						 name != NULL ? name : "?");

			n += k > 0 ? (size_t) k : 0;
		}
		snprintf(err, errlen,
				 rank > 0 ?
				 "input \"%s\" of model \"%s\" is %s [%s], not an image: an image model's input is float [N, 3, H, W] (%s)" :
				 "input \"%s\" of model \"%s\" is %s with no declared shape%s, not an image: an image model's input is float [N, 3, H, W] (%s)",
				 ie_model_input_name(p->model, 0), spec->file, ie_dtype_name(dtype), shape,
				 rank != 4 ? "rank 4" : dtype != IE_FLOAT ? "float" : "3 channels");
		return -1;
	}
	/* a registered size the model's fixed one refuses: every row would fail */
	if ((spec->input_height > 0 && dims[2] > 0 && dims[2] != spec->input_height) ||
		(spec->input_width > 0 && dims[3] > 0 && dims[3] != spec->input_width))
	{
		snprintf(err, errlen,
				 "model \"%s\" is registered with input_height %d and input_width %d, but its input \"%s\" is fixed at height %lld and width %lld",
				 spec->name && spec->name[0] ? spec->name : spec->file, spec->input_height, spec->input_width,
				 ie_model_input_name(p->model, 0), (long long) dims[2], (long long) dims[3]);
		return -1;
	}
	if (ie_model_output_shape(p->model, 0, &dtype, NULL) >= 0 &&
		dtype != IE_UNDEFINED && dtype != IE_FLOAT)
	{
		snprintf(err, errlen,
				 "first output \"%s\" of model \"%s\" is %s; infer.predict and infer.classify read a float output",
				 ie_model_output_name(p->model, 0), spec->file, ie_dtype_name(dtype));
		return -1;
	}
	/* Size: the spec's, else the model's declared one, else the image's. */
	p->in_h = spec->input_height > 0 ? spec->input_height :
		(dims[2] > 0 && dims[2] <= 65536 ? (int) dims[2] : 0);
	p->in_w = spec->input_width > 0 ? spec->input_width :
		(dims[3] > 0 && dims[3] <= 65536 ? (int) dims[3] : 0);
	/* a fixed batch of more than one: no request holds exactly that */
	if (dims[0] > 1)
	{
		snprintf(err, errlen,
				 "model \"%s\" takes a fixed batch of %lld images (input \"%s\"); the image functions run one row, or a batch of any size: export it with a batch dimension of 1 or a dynamic one",
				 spec->file, (long long) dims[0], ie_model_input_name(p->model, 0));
		return -1;
	}
	p->out = output_layout(p->model);
	p->mc = mc;
	return 0;
}

/* Resolves what every row of the request shares; -1 with sqlstate/err. */
static int
prepare(model_cache *mc, const Pginfer__RunFragment *run, frag_plan *p,
		const char **sqlstate, char *err, size_t errlen)
{
	const Pginfer__Fragment *frag = run->fragment;

	memset(p, 0, sizeof(*p));
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (frag == NULL)
	{
		snprintf(err, errlen, "run-fragment request has no fragment");
		return -1;
	}
	p->kind = frag->kind;
	model_cache_begin_run(mc);
	switch (frag->kind)
	{
		case PGINFER__FRAGMENT_KIND__FRAG_OCR:
		case PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT:
			return prepare_ocr(mc, frag, p, sqlstate, err, errlen);
		case PGINFER__FRAGMENT_KIND__FRAG_PREDICT:
		case PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY:
			return prepare_image_model(mc, frag, p, sqlstate, err, errlen);
		case PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT:
		case PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT:
			return 0;			/* text_run() resolves its own model */
		default:
			snprintf(err, errlen, "unknown fragment kind %d", (int) frag->kind);
			return -1;
	}
}

/*
 * Records a decoding failure of row i with the SQLSTATE its status calls
 * for.  max_pixels is the limit that applied (fragment_max_pixels of the
 * request's, the session's infer.max_pixels, and worker_limit, the
 * worker's --max-pixels): the hint names the one to raise.
 */
static void
row_decode_error(fragment_result *r, int i, image_status st, const char *derr,
				 int64_t max_pixels, const Pginfer__RunFragment *run,
				 int64_t worker_limit)
{
	char		msg[160];
	char		hint[200];
	int64_t		requested = (int64_t) run->max_pixels;

	if (st == IMAGE_ERR_TOO_LARGE)
	{
		snprintf(msg, sizeof(msg), "image is larger than the limit of %lld pixels",
				 (long long) max_pixels);
		if (requested > 0 && requested == max_pixels && requested < worker_limit)
			snprintf(hint, sizeof(hint), "Downscale the image, or raise infer.max_pixels (this session's limit; the worker's --max-pixels is %lld).",
					 (long long) worker_limit);
		else if (requested > 0 && requested == max_pixels)
			snprintf(hint, sizeof(hint), "Downscale the image, or raise both infer.max_pixels and the worker's --max-pixels.");
		else
			snprintf(hint, sizeof(hint), "Downscale the image, or raise the worker's --max-pixels.");
		fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, derr, hint);
	}
	else if (st == IMAGE_ERR_NOMEM)
		fragment_row_error(r, i, PGINFER_SQLSTATE_OUT_OF_MEMORY,
						   "out of memory decoding image", derr, NULL);
	else if (st == IMAGE_ERR_UNSUPPORTED)
		fragment_row_error(r, i, PGINFER_SQLSTATE_BAD_IMAGE,
						   "invalid image: unsupported kind of image", derr,
						   "Convert the image to an 8-bit baseline or progressive JPEG, or to a PNG.");
	else
	{
		snprintf(msg, sizeof(msg), "invalid image: %s", image_status_name(st));
		fragment_row_error(r, i, PGINFER_SQLSTATE_BAD_IMAGE, msg, derr,
						   "The value must be the complete bytes of a JPEG or PNG file.");
	}
}

/*
 * Starts row i of n_rows of an image run: -1 when the run is stopped
 * (*stop; FRAGMENT_SQLSTATE_SHUTDOWN, naming the rows left), else the
 * row's id goes into r and its image is decoded (limit: the pixels
 * allowed; row_decode_error) into *img: 0 when it decoded, 1 when it did
 * not (the row holds its error and *img is NULL: go on with the next row).
 */
static int
start_image_row(const Pginfer__RunFragment *run, const void *const *rows,
				const size_t *rows_len, int i, int n_rows, int64_t limit,
				int64_t worker_limit, volatile sig_atomic_t *stop,
				fragment_result *r, image_rgb **img,
				const char **sqlstate, char *err, size_t errlen)
{
	image_status st;
	char		derr[512] = "";

	*img = NULL;
	if (stop != NULL && *stop)
	{
		*sqlstate = FRAGMENT_SQLSTATE_SHUTDOWN;
		snprintf(err, errlen, "the run was stopped between rows; %d of %d rows were not run",
				 n_rows - i, n_rows);
		return -1;
	}
	r->rows[i].row_id = run->row_ids[i];
	st = image_decode(rows[i], rows_len[i], limit, img, derr, sizeof(derr));
	if (st == IMAGE_OK)
		return 0;
	log_debug("row %llu: %s: %s", (unsigned long long) run->row_ids[i],
			  image_status_name(st), derr);
	row_decode_error(r, i, st, derr, limit, run, worker_limit);
	image_destroy(img);
	return 1;
}

/*
 * Rows of FRAG_PREDICT / FRAG_CLASSIFY waiting for their model run: the
 * preprocessed inputs of rows that share one input shape, packed into one
 * N x 3 x h x w tensor (capacity grows by doubling up to the batch cap).
 */
typedef struct pending_batch
{
	int			h;
	int			w;
	int			count;
	int			cap;			/* rows input (or imgs) has room for */
	ie_tensor  *input;			/* on the CPU: cap x 3 x h x w, preprocessed */
	image_rgb **imgs;			/* on a device: the decoded images (owned),
								 * preprocessed there when the batch runs */
	int		   *row;			/* count row indices into the result */
} pending_batch;

/* Largest preprocessed input (bytes) held for batching before a flush. */
#define FRAGMENT_PENDING_BYTES ((size_t) 256 << 20)

/*
 * Most rows in one model call on the CPU, whatever max_batch allows.  On
 * the CPU engine the cost per row is flat up to about 16 rows and rises
 * beyond (cache misses as the intermediates of 64 rows outgrow the cache):
 * 1.16 ms/row at 1, 4, 8 and 16 rows, 1.48 ms/row at 64, for the PP-OCR
 * direction classifier at 3x48x192 on one thread.  On a GPU the cost per
 * row keeps falling (the classifier: 5924 images/s at 32 rows, 12398 at
 * 128 on an H200, docs/gpu.md), so there max_batch alone bounds a call.
 */
#define FRAGMENT_MODEL_BATCH 16

/*
 * Most rows in one model call on a device: beyond this the GPU's rows per
 * second hardly rise (the classifier: 12398 images/s at 128 rows, 5924 at
 * 32), while the input and the pinned staging buffer grow with the batch.
 */
#define FRAGMENT_DEVICE_MODEL_BATCH 128

/* Floats of one row's preprocessed input. */
static size_t
plane_floats(const pending_batch *b)
{
	return (size_t) 3 * (size_t) b->h * (size_t) b->w;
}

/*
 * Bytes b's rows take: their preprocessed floats, or on a device their
 * decoded pixels plus the floats they become there.
 */
static size_t
batch_bytes(const pending_batch *b)
{
	size_t		n = 0;

	if (b->imgs == NULL)
		return (size_t) b->count * plane_floats(b) * sizeof(float);
	for (int k = 0; k < b->count; k++)
		n += (size_t) b->imgs[k]->width * (size_t) b->imgs[k]->height * 3 +
			plane_floats(b) * sizeof(float);
	return n;
}

/* Frees a pending batch's tensor, images and row list, leaving it empty. */
static void
pending_clear(pending_batch *b)
{
	ie_tensor_destroy(&b->input);
	for (int k = 0; b->imgs != NULL && k < b->count; k++)
		image_destroy(&b->imgs[k]);
	free(b->imgs);
	b->imgs = NULL;
	free(b->row);
	b->row = NULL;
	b->count = b->cap = 0;
}

/*
 * Makes room in b for one more row (up to max rows): grows the tensor (or,
 * on a device, the image list) by doubling, keeping the rows already in
 * it.  -1 when memory runs out.
 */
static int
pending_reserve(pending_batch *b, int max, bool on_device)
{
	int			cap;
	int64_t		dims[4];
	ie_tensor  *t;
	int		   *row;

	if (b->count < b->cap)
		return 0;
	cap = b->cap > 0 ? b->cap * 2 : 1;
	if (cap > max)
		cap = max;
	if (on_device)
	{
		image_rgb **imgs = realloc(b->imgs, (size_t) cap * sizeof(*imgs));

		if (imgs != NULL)
			b->imgs = imgs;
		row = realloc(b->row, (size_t) cap * sizeof(int));
		if (row != NULL)
			b->row = row;
		if (imgs == NULL || row == NULL)
			return -1;
		b->cap = cap;
		return 0;
	}
	dims[0] = cap;
	dims[1] = 3;
	dims[2] = b->h;
	dims[3] = b->w;
	t = ie_tensor_new(IE_FLOAT, 4, dims);
	row = realloc(b->row, (size_t) cap * sizeof(int));
	if (row != NULL)
		b->row = row;
	if (t == NULL || row == NULL)
	{
		ie_tensor_destroy(&t);
		return -1;
	}
	if (b->input != NULL)
		memcpy(t->data, b->input->data, (size_t) b->count * plane_floats(b) * sizeof(float));
	ie_tensor_destroy(&b->input);
	b->input = t;
	b->cap = cap;
	return 0;
}

/*
 * Stores one row's model output v[0..n) (copied) as row i's answer:
 * the values for FRAG_PREDICT, labels[argmax] for FRAG_CLASSIFY.
 * -1 with sqlstate/err when the request as a whole cannot go on.
 */
static int
store_row_output(const frag_plan *p, fragment_result *r, int i, const float *v,
				 size_t n, const char **sqlstate, char *err, size_t errlen)
{
	Pginfer__RowResult *row = &r->rows[i];

	if (n > (size_t) UINT32_MAX)
	{
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "first output of model \"%s\" has %zu values, too many for one row",
				 p->spec->file, n);
		return -1;
	}
	if (p->kind == PGINFER__FRAGMENT_KIND__FRAG_PREDICT)
	{
		r->values[i] = malloc(n > 0 ? n * sizeof(float) : 1);
		if (r->values[i] == NULL)
		{
			*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
			snprintf(err, errlen, "out of memory for %zu output values", n);
			return -1;
		}
		memcpy(r->values[i], v, n * sizeof(float));
		r->n_values[i] = n;
		row->n_values = (uint32_t) n;
		row->ok = 1;
		return 0;
	}
	/* more labels than scores is a registration for another model too */
	if (n == 0 || n != p->n_labels)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		model_cache_labels_mismatch("classify model", p->spec, n, p->n_labels,
									err, errlen);
		return -1;
	}
	row->text = dup_field(p->labels[argmax(v, n)]);
	row->ok = 1;
	return 0;
}

/*
 * Runs p's model on b's images k0 .. k0 + n - 1 on its device: their
 * pixels go there and are resized to b's h x w and normalised there
 * (ie_model_run_images).  What ie_model_run_images returns.
 */
static int
run_on_device(const frag_plan *p, const pending_batch *b, int k0, int n,
			  ie_tensor **outputs, char *err, size_t errlen)
{
	ie_image   *ims = malloc((size_t) n * sizeof(*ims));
	ie_image_norm norm;
	int			rc;

	if (ims == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -IE_ERR_NO_MEMORY;
	}
	for (int k = 0; k < n; k++)
	{
		const image_rgb *img = b->imgs[k0 + k];

		ims[k].pixels = img->pixels;
		ims[k].width = img->width;
		ims[k].height = img->height;
		ims[k].resize_w = b->w;
		ims[k].resize_h = b->h;
		ims[k].dpixels = NULL;
	}
	memcpy(norm.mean, p->mean, sizeof(norm.mean));
	memcpy(norm.std, p->std, sizeof(norm.std));
	norm.bgr = p->bgr;
	norm.pad = 0.0f;
	norm.out_h = b->h;
	norm.out_w = b->w;
	rc = ie_model_run_images(p->model, ims, n, &norm, outputs, err, errlen);
	free(ims);
	return rc;
}

/*
 * One model run over rows k0 .. k0 + n - 1 of b (n = b->count with k0 = 0,
 * or one row), sampled in r (its time at n rows when it succeeds); *out
 * gets the first output, which must be float.  On the CPU the rows come
 * from b's tensor (copied into one of their own for a single row of
 * several); on a device from b's images (run_on_device).  1 with sqlstate
 * and the engine's message in err when the run itself fails (the kind the
 * engine returns, model_calls_sqlstate: 53200 out of memory, 0A000 what
 * the engine lacks, else XX000), -1 with sqlstate/err on any other error.
 */
static int
model_call(const frag_plan *p, const pending_batch *b, int k0, int n, ie_tensor **out,
		   fragment_result *r, const char **sqlstate, char *err, size_t errlen)
{
	int			n_out = ie_model_n_outputs(p->model);
	ie_tensor **outputs = calloc(n_out > 0 ? (size_t) n_out : 1, sizeof(*outputs));
	ie_tensor  *one = NULL;
	const ie_tensor *input = b->input;
	char		lerr[512];
	double		t0;
	int			run;
	int			rc = -1;

	*out = NULL;
	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	if (outputs != NULL && b->imgs == NULL && n != b->count)
	{
		int64_t		dims[4] = {1, 3, b->h, b->w};
		size_t		plane = plane_floats(b);

		if ((one = ie_tensor_new(IE_FLOAT, 4, dims)) != NULL)
			memcpy(one->data, (const float *) b->input->data + (size_t) k0 * plane,
				   plane * sizeof(float));
		input = one;
	}
	if (outputs == NULL || (b->imgs == NULL && input == NULL))
	{
		free(outputs);
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for a %dx%d input", b->w, b->h);
		return -1;
	}
	r->model_runs++;
	t0 = model_calls_now_ms();
	if (b->imgs != NULL)
		run = run_on_device(p, b, k0, n, outputs, lerr, sizeof(lerr));
	else
		run = ie_model_run(p->model, &input, outputs, lerr, sizeof(lerr));
	ie_tensor_destroy(&one);
	if (run == 0)
		fragment_result_add_sample(r, p->spec->file, n, model_calls_now_ms() - t0);
	else
	{
		*sqlstate = model_calls_sqlstate((ie_error_kind) -run);
		snprintf(err, errlen, "%s", lerr);
		rc = 1;
		goto done;
	}
	if (n_out < 1 || outputs[0] == NULL || outputs[0]->dtype != IE_FLOAT)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "first output of model \"%s\" is not float (it is %s)",
				 p->spec->file,
				 n_out >= 1 && outputs[0] ? ie_dtype_name(outputs[0]->dtype) : "missing");
		goto done;
	}
	*out = outputs[0];
	outputs[0] = NULL;
	rc = 0;

done:
	for (int j = 0; j < n_out; j++)
		ie_tensor_destroy(&outputs[j]);
	free(outputs);
	return rc;
}

/*
 * A failed model run (model_call returned 1 with its sqlstate, err holds
 * the engine's message) of row i alone, of b's size.  When the input
 * shape came from the row's own image the row gets the error (22023, the
 * model cannot take an image of that size, or 53200) and 0 is returned;
 * otherwise, and for what the engine lacks (0A000: every row would fail
 * alike), the request fails: -1 with sqlstate/err naming the model.
 */
static int
row_run_failed(const frag_plan *p, const pending_batch *b, fragment_result *r, int i,
			   const char **sqlstate, char *err, size_t errlen)
{
	char		msg[768];

	if ((p->in_h > 0 && p->in_w > 0) ||
		strcmp(*sqlstate, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
	{
		snprintf(msg, sizeof(msg), "%s", ie_message_body(err));
		snprintf(err, errlen, "model \"%s\" failed: %s", p->spec->file, msg);
		return -1;
	}
	if (strcmp(*sqlstate, PGINFER_SQLSTATE_OUT_OF_MEMORY) == 0)
	{
		snprintf(msg, sizeof(msg), "out of memory running model \"%s\"", p->spec->file);
		fragment_row_error(r, i, PGINFER_SQLSTATE_OUT_OF_MEMORY, msg, err, NULL);
	}
	else if (strcmp(*sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0)
	{
		snprintf(msg, sizeof(msg), "model \"%s\" needs a tensor larger than the worker allows for the row's image at its own size, %dx%d: %s",
				 p->spec->file, b->w, b->h, ie_message_body(err));
		fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, NULL,
						   "Pass a smaller image, register the input size the model was made for (infer.create_model's input_height and input_width), or start the worker with a larger --max-tensor-bytes.");
	}
	else
	{
		snprintf(msg, sizeof(msg), "model \"%s\" cannot take the row's image at its own size, %dx%d: %s",
				 p->spec->file, b->w, b->h, ie_message_body(err));
		fragment_row_error(r, i, PGINFER_SQLSTATE_BAD_PARAM, msg, NULL,
						   "The model is registered without an input size, so each image goes in at its own: register the size it was made for (infer.create_model's input_height and input_width), or pass images of a size it takes.");
	}
	*sqlstate = PGINFER_SQLSTATE_INTERNAL;
	err[0] = '\0';
	return 0;
}

/*
 * Whether out, the first output of b's rows run as one batch, whose first
 * dimension is their count, keeps the rows there: 1 yes, 0 no, -1 with
 * sqlstate/err on a request error.  A verdict kept (plan_layout), or,
 * until there is one, what a run of the batch's last row alone shows
 * (whatever the output's declared shape): its output must be out's last slice (the
 * tolerance of ONNX's backend tests, numpy.allclose rtol 1e-3, atol 1e-5;
 * NaN matches NaN, an infinity itself).  A [T, N, C] output with T the row
 * count fails it, as does a model that mixes the rows of a batch (unless
 * the batch's rows are alike).  The last row, not the first: an output
 * that lists the first row's items first (a batch index, then a box)
 * matches for row 0.  The verdict is kept with the loaded model
 * (keep_verdict), so the check costs one row run a load.
 */
static int
rows_first(const frag_plan *p, out_layout layout, const pending_batch *b,
		   const ie_tensor *out, fragment_result *r, const char **sqlstate,
		   char *err, size_t errlen)
{
	ie_tensor  *one = NULL;
	size_t		per = (size_t) ie_tensor_numel(out) / (size_t) b->count;
	int			last = b->count - 1;
	const float *slice = (const float *) out->data + (size_t) last * per;
	bool		same;
	int			c;

	if (layout != OUT_UNKNOWN)
		return layout == OUT_ROWS_FIRST;
	c = model_call(p, b, last, 1, &one, r, sqlstate, err, errlen);
	if (c != 0)
	{
		ie_tensor_destroy(&one);
		if (c < 0)
			return -1;
		/* the row's own error comes again when the rows run alone */
		err[0] = '\0';
		return 0;
	}
	same = (size_t) ie_tensor_numel(one) == per &&
		model_calls_rows_match(slice, (const float *) one->data, per, false);
	ie_tensor_destroy(&one);
	keep_verdict(p, same, same ? "the last row of a batch, run alone, gives its slice of the batch's first output: the rows come first there"
				 : "the last row of a batch, run alone, does not give its slice of the batch's first output: the rows do not come first there (or the model mixes the rows of a batch)");
	return same;
}

/*
 * Runs the rows of b as one N-row tensor and splits the first output back
 * per row (row k gets numel / N values starting at k * numel / N) when its
 * first dimension is N and keeps the rows there (rows_first).  Otherwise,
 * or when the batched run fails (a row may be at fault, or the batch), each
 * row is run again alone and a row whose run fails gets its own error
 * (row_run_failed).  Empties b.  -1 with sqlstate/err on a request error.
 */
static int
flush_batch(const frag_plan *p, pending_batch *b, fragment_result *r,
			const char **sqlstate, char *err, size_t errlen)
{
	ie_tensor  *out = NULL;
	int			rc = -1;
	int			c;
	int			split = 0;
	bool		batch_failed = false;
	out_layout	layout;

	if (b->count == 0)
		return 0;
	/*
	 * The tensor may have room for more rows than it holds (its room
	 * doubles, pending_reserve): say how many, in its shape and in its
	 * byte count, which operators that copy a tensor whole (Identity,
	 * Concat) or keep its buffer (Flatten, Reshape) go by.
	 */
	if (b->input != NULL)
	{
		b->input->dims[0] = b->count;
		b->input->nbytes = (size_t) b->count * plane_floats(b) * sizeof(float);
	}
	/* a model known to run rows alone: no batched run first */
	/* the model's layout, read once a batch (plan_layout takes the cache's lock) */
	layout = b->count > 1 ? plan_layout(p) : p->out;
	if (b->count > 1 && layout == OUT_NOT_ROWS)
		goto alone;
	c = model_call(p, b, 0, b->count, &out, r, sqlstate, err, errlen);
	if (c < 0)
		goto done;
	if (c > 0)
	{
		/* one row, or what the engine lacks: no row runs alone */
		if (b->count == 1 || strcmp(*sqlstate, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
		{
			if (row_run_failed(p, b, r, b->row[0], sqlstate, err, errlen) != 0)
				goto done;
			rc = 0;
			goto done;
		}
		/*
		 * a row may be at fault (its size, memory), or the batch itself:
		 * a model that fixes a batch of 1 inside (Reshape to [1, ...])
		 */
		batch_failed = strcmp(*sqlstate, PGINFER_SQLSTATE_OUT_OF_MEMORY) != 0 &&
			strcmp(*sqlstate, PGINFER_SQLSTATE_TOO_LARGE) != 0;
		log_debug("model \"%s\": a %d-row batch of %dx%d inputs failed (%s); running rows alone",
				  p->spec->file, b->count, b->w, b->h, err);
	}
	else if (b->count > 1 && out->ndim >= 1 && out->dims[0] == b->count &&
			 (split = rows_first(p, layout, b, out, r, sqlstate, err, errlen)) < 0)
		goto done;
	if (c == 0 && (b->count == 1 || split > 0))
	{
		size_t		per = (size_t) ie_tensor_numel(out) / (size_t) b->count;

		for (int k = 0; k < b->count; k++)
			if (store_row_output(p, r, b->row[k], (const float *) out->data + (size_t) k * per,
								 per, sqlstate, err, errlen) != 0)
				goto done;
		rc = 0;
		goto done;
	}
	/* (rows_first keeps its own verdict when it ran) */
	if (c == 0 && split == 0 && layout == OUT_UNKNOWN &&
		!(out->ndim >= 1 && out->dims[0] == b->count))
		keep_verdict(p, false, "the first dimension of a batch's first output is not its rows");
	if (c == 0)
		log_debug("model \"%s\": output of a %d-row batch has shape [%lld,...]; running rows alone",
				  p->spec->file, b->count, out->ndim >= 1 ? (long long) out->dims[0] : -1LL);

alone:

	/* One row at a time. */
	for (int k = 0; k < b->count; k++)
	{
		ie_tensor_destroy(&out);
		c = model_call(p, b, k, 1, &out, r, sqlstate, err, errlen);
		if (c < 0)
			goto done;
		if (c > 0)
		{
			if (row_run_failed(p, b, r, b->row[k], sqlstate, err, errlen) != 0)
				goto done;
			continue;
		}
		/*
		 * the batch failed where this row alone runs (the batch's rows
		 * share one size): the model runs rows alone
		 */
		if (batch_failed)
		{
			keep_verdict(p, false, "a batch failed where its rows alone run");
			batch_failed = false;
		}
		if (store_row_output(p, r, b->row[k], out->data, (size_t) ie_tensor_numel(out),
							 sqlstate, err, errlen) != 0)
			goto done;
	}
	rc = 0;

done:
	ie_tensor_destroy(&out);
	pending_clear(b);
	return rc;
}

/*
 * Makes room in b for row i (pending_reserve).  When the engine refuses
 * the batch's tensor for its size (ie_tensor_take_refusal: over the
 * worker's --max-tensor-bytes) and b holds rows, they run first
 * (flush_batch, *pending_bytes less theirs) and the room is sought for the
 * row alone; a row whose input alone is refused gets 54000 and 1 is
 * returned, unless the model fixes its input size (every row would fail
 * alike): then the request fails, -1 with 54000.  0 when there is room;
 * -1 with sqlstate/err (53200 when memory ran out, or flush_batch's
 * error).
 */
static int
reserve_row(const frag_plan *p, pending_batch *b, int max_batch, bool on_device,
			size_t *pending_bytes, fragment_result *r, int i,
			const char **sqlstate, char *err, size_t errlen)
{
	char		why[384];
	char		msg[768];

	if (pending_reserve(b, max_batch, on_device) == 0)
		return 0;
	if (!ie_tensor_take_refusal(why, sizeof(why)))
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for a batch of %dx%d inputs", b->w, b->h);
		return -1;
	}
	if (b->count > 0)
	{
		*pending_bytes -= batch_bytes(b);
		if (flush_batch(p, b, r, sqlstate, err, errlen) != 0)
			return -1;
		if (pending_reserve(b, max_batch, on_device) == 0)
			return 0;
		if (!ie_tensor_take_refusal(why, sizeof(why)))
		{
			*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
			snprintf(err, errlen, "out of memory for a %dx%d input", b->w, b->h);
			return -1;
		}
	}
	if (p->in_h > 0 && p->in_w > 0)
	{
		/* the model's own input size: every row would fail alike */
		*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
		snprintf(err, errlen, "model \"%s\"'s %dx%d input is larger than the worker allows: %s",
				 p->spec->file, b->w, b->h, why);
		return -1;
	}
	snprintf(msg, sizeof(msg), "the row's %dx%d input to model \"%s\" is larger than the worker allows: %s",
			 b->w, b->h, p->spec->file, why);
	fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, NULL,
					   "Pass a smaller image, register a smaller input size for the model (infer.create_model's input_height and input_width), or start the worker with a larger --max-tensor-bytes.");
	return 1;
}

/*
 * FRAG_PREDICT / FRAG_CLASSIFY over every row: decode, resize (stretch),
 * normalise each row into the pending batch of its input shape (on a
 * device: keep its decoded image, preprocessed there), and run a batch
 * when it holds max_batch rows (at most FRAGMENT_MODEL_BATCH on the CPU,
 * FRAGMENT_DEVICE_MODEL_BATCH on a device), when
 * the pending inputs pass
 * FRAGMENT_PENDING_BYTES, and at the end.  Rows that fail to decode get
 * their error and stay out of every batch.  -1 with sqlstate/err when the
 * request as a whole fails (also on a stop between rows).
 */
static int
run_image_rows(const frag_plan *p, const Pginfer__RunFragment *run,
			   const void *const *rows, const size_t *rows_len, int n_rows,
			   int64_t limit, int64_t worker_limit, int max_batch,
			   volatile sig_atomic_t *stop, fragment_result *r,
			   const char **sqlstate, char *err, size_t errlen)
{
	pending_batch *batches = NULL;
	int			n_batches = 0;
	size_t		pending_bytes = 0;
	int64_t		dims[IE_MAX_DIMS];
	ie_dtype	dtype;
	bool		on_device = ie_model_device(p->model) != IE_DEVICE_CPU &&
		ie_model_n_inputs(p->model) == 1;
	int			rc = -1;

	/*
	 * A model whose batch dimension is fixed, or whose output does not
	 * keep the rows in its first dimension, runs one row at a time.
	 */
	if ((ie_model_input_shape(p->model, 0, &dtype, dims) >= 1 && dims[0] >= 0) ||
		plan_layout(p) == OUT_NOT_ROWS)
		max_batch = 1;
	if (max_batch < 1)
		max_batch = 1;
	if (max_batch > FRAGMENT_MODEL_BATCH && !on_device)
		max_batch = FRAGMENT_MODEL_BATCH;
	if (max_batch > FRAGMENT_DEVICE_MODEL_BATCH)
		max_batch = FRAGMENT_DEVICE_MODEL_BATCH;
	batches = calloc(n_rows > 0 ? (size_t) n_rows : 1, sizeof(*batches));
	if (batches == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for %d rows", n_rows);
		return -1;
	}

	for (int i = 0; i < n_rows; i++)
	{
		image_rgb  *img = NULL,
				   *resized = NULL;
		const image_rgb *src;
		pending_batch *b = NULL;
		int			h,
					w,
					c;

		c = start_image_row(run, rows, rows_len, i, n_rows, limit, worker_limit,
							stop, r, &img, sqlstate, err, errlen);
		if (c < 0)
			goto done;
		if (c > 0)
			continue;
		h = p->in_h > 0 ? p->in_h : img->height;
		w = p->in_w > 0 ? p->in_w : img->width;
		if (h > FRAGMENT_MAX_INPUT_SIDE || w > FRAGMENT_MAX_INPUT_SIDE)
		{
			char		msg[256];

			snprintf(msg, sizeof(msg), "image too large for model \"%s\": a %dx%d input "
					 "exceeds this worker's limit of %d pixels a side",
					 p->spec->file, w, h, FRAGMENT_MAX_INPUT_SIDE);
			fragment_row_error(r, i, PGINFER_SQLSTATE_BAD_PARAM, msg, NULL,
							   "Give the model an input size, or downscale the image.");
			image_destroy(&img);
			continue;
		}
		for (int k = 0; k < n_batches; k++)
			if (batches[k].h == h && batches[k].w == w)
				b = &batches[k];
		if (b == NULL)
		{
			b = &batches[n_batches++];
			b->h = h;
			b->w = w;
		}
		c = reserve_row(p, b, max_batch, on_device, &pending_bytes, r, i,
						sqlstate, err, errlen);
		if (c != 0)
		{
			image_destroy(&img);
			if (c < 0)
				goto done;
			continue;
		}
		src = img;
		if (on_device)
		{
			/*
			 * kept as decoded: resized and normalised on the device; the
			 * batch counts its pixels and the float input they become there
			 */
			pending_bytes += (size_t) img->width * (size_t) img->height * 3 +
				plane_floats(b) * sizeof(float);
			b->imgs[b->count] = img;
			img = NULL;
		}
		else if (h != img->height || w != img->width)
		{
			resized = pre_resize(img, w, h);
			if (resized == NULL)
			{
				image_destroy(&img);
				*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
				snprintf(err, errlen, "out of memory resizing to %dx%d", w, h);
				goto done;
			}
			src = resized;
		}
		if (!on_device)
		{
			pre_normalize_chw(src, p->mean, p->std, p->bgr,
							  (float *) b->input->data + (size_t) b->count * plane_floats(b),
							  h, w, 0.0f);
			pending_bytes += plane_floats(b) * sizeof(float);
		}
		b->row[b->count++] = i;
		image_destroy(&resized);
		image_destroy(&img);

		if (b->count == max_batch)
		{
			pending_bytes -= batch_bytes(b);
			if (flush_batch(p, b, r, sqlstate, err, errlen) != 0)
				goto done;
		}
		if (pending_bytes > FRAGMENT_PENDING_BYTES)
		{
			for (int k = 0; k < n_batches; k++)
				if (flush_batch(p, &batches[k], r, sqlstate, err, errlen) != 0)
					goto done;
			pending_bytes = 0;
		}
	}
	for (int k = 0; k < n_batches; k++)
		if (flush_batch(p, &batches[k], r, sqlstate, err, errlen) != 0)
			goto done;
	rc = 0;

done:
	for (int k = 0; k < n_batches; k++)
		pending_clear(&batches[k]);
	free(batches);
	return rc;
}

/*
 * Appends the OCR model calls in log to r's samples, each under the file
 * of the plan's model it ran.
 */
static void
ocr_samples(const frag_plan *p, const model_calls *log, fragment_result *r)
{
	const ie_model *m[3] = {p->ocr.det, p->ocr.cls, p->ocr.rec};

	for (int k = 0; k < log->n; k++)
		for (int s = 0; s < 3; s++)
			if (m[s] != NULL && log->calls[k].model == m[s])
			{
				fragment_result_add_sample(r, p->ocr_file[s], log->calls[k].rows,
										   log->calls[k].ms);
				break;
			}
}

/*
 * Fills row i of r from a decoded image by the OCR pipeline (FRAG_OCR,
 * FRAG_DETECT_TEXT), each image on its own, and samples its model calls
 * (the stages run them through model_calls_run).  A failure is recorded
 * in the row, but for what the engine lacks (0A000: every row would fail
 * alike), which fails the request: -1 with sqlstate/err.  Returns 0, or 1
 * when the run was stopped in the row (its stop flag, p->params.stop:
 * nothing recorded).
 */
static int
run_ocr_row(const frag_plan *p, const image_rgb *img, fragment_result *r, int i,
			const char **sqlstate, char *err, size_t errlen)
{
	Pginfer__RowResult *row = &r->rows[i];
	int			detect_only = p->kind == PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
	ocr_result *res = NULL;
	model_calls log = {0};
	char		lerr[512];
	char	   *s;
	int			rc;
	ie_error_kind failed;

	model_calls_open(&log);
	rc = ocr_run(&p->ocr, &p->params, img, detect_only, &res, lerr, sizeof(lerr));
	model_calls_close(&log);
	ocr_samples(p, &log, r);
	failed = log.failed;
	model_calls_free(&log);
	if (rc == OCR_STOPPED)
		return 1;
	if (rc != 0)
	{
		/*
		 * A model run's failure has the engine's kind; the pipeline's own
		 * messages (ocr.c, ocr_det.c, ocr_rec.c) hold no name from a file.
		 */
		const char *what = detect_only ? "text detection failed" : "OCR failed";
		const char *state = failed != IE_ERR_NONE ? model_calls_sqlstate(failed) :
			strstr(lerr, "out of memory") != NULL ? PGINFER_SQLSTATE_OUT_OF_MEMORY :
			PGINFER_SQLSTATE_INTERNAL;

		if (strcmp(state, PGINFER_SQLSTATE_NOT_SUPPORTED) == 0)
		{
			*sqlstate = state;
			snprintf(err, errlen, "%s: %s", what, lerr);
			return -1;
		}
		fragment_row_error(r, i, state, what, lerr,
						   strcmp(state, PGINFER_SQLSTATE_TOO_LARGE) == 0 ?
						   "Start the worker with a larger --max-tensor-bytes (OCR resizes each page for its detector, so a smaller image need not help)." : NULL);
		return 0;
	}
	s = detect_only ? ocr_result_json(res) : ocr_result_text(res);
	ocr_result_destroy(&res);
	if (s == NULL)
	{
		fragment_row_error(r, i, PGINFER_SQLSTATE_OUT_OF_MEMORY, "out of memory",
						   "Formatting the row's result failed.", NULL);
		return 0;
	}
	if (detect_only)
		row->json = s;
	else
		row->text = s;
	row->ok = 1;
	return 0;
}

/*
 * Runs run->fragment as one stage (its next is not looked at) over n_rows
 * payloads into *out: one RowResult per row, in request order.  As
 * fragment_run otherwise.
 */
static int
run_stage(model_cache *mc, const Pginfer__RunFragment *run,
		  const void *const *rows, const size_t *rows_len, int n_rows,
		  int64_t max_pixels, int max_batch, volatile sig_atomic_t *stop,
		  fragment_result **out,
		  const char **sqlstate, char *err, size_t errlen)
{
	fragment_result *r = NULL;
	frag_plan	plan;
	int64_t		limit = fragment_max_pixels(run->max_pixels, max_pixels);
	int64_t		worker_limit = fragment_max_pixels(0, max_pixels);
	double		t0 = model_calls_now_ms();

	*out = NULL;
	*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	if (n_rows < 0 || (size_t) n_rows != run->n_row_ids)
	{
		snprintf(err, errlen, "request has %zu row ids but %d row frames",
				 run->n_row_ids, n_rows);
		goto fail;
	}
	if (prepare(mc, run, &plan, sqlstate, err, errlen) != 0)
		goto fail;
	r = fragment_result_new(n_rows);
	if (r == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for %d rows", n_rows);
		goto fail;
	}

	if (plan.kind == PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT ||
		plan.kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT)
	{
		if (text_run(mc, run, rows, rows_len, n_rows, max_batch, stop, r,
					 sqlstate, err, errlen) != 0)
			goto fail;
		r->compute_ms = model_calls_now_ms() - t0;
		*out = r;
		return 0;
	}

	if (plan.kind == PGINFER__FRAGMENT_KIND__FRAG_PREDICT ||
		plan.kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY)
	{
		if (run_image_rows(&plan, run, rows, rows_len, n_rows, limit,
						   worker_limit, max_batch, stop, r, sqlstate, err,
						   errlen) != 0)
			goto fail;
		r->compute_ms = model_calls_now_ms() - t0;
		*out = r;
		return 0;
	}

	/*
	 * OCR: every image through the whole pipeline on its own; a stop is
	 * also seen between the model calls of a page (ocr_params.stop).
	 */
	plan.params.stop = stop;
	for (int i = 0; i < n_rows; i++)
	{
		image_rgb  *img = NULL;
		int			rc;

		rc = start_image_row(run, rows, rows_len, i, n_rows, limit, worker_limit,
							 stop, r, &img, sqlstate, err, errlen);
		if (rc < 0)
			goto fail;
		if (rc > 0)
			continue;
		if ((rc = run_ocr_row(&plan, img, r, i, sqlstate, err, errlen)) < 0)
		{
			image_destroy(&img);
			goto fail;
		}
		if (rc > 0)
		{
			image_destroy(&img);
			*sqlstate = FRAGMENT_SQLSTATE_SHUTDOWN;
			snprintf(err, errlen, "the run was stopped in row %d; %d of %d rows were not run",
					 i + 1, n_rows - i, n_rows);
			goto fail;
		}
		image_destroy(&img);
	}
	r->compute_ms = model_calls_now_ms() - t0;
	*out = r;
	return 0;

fail:
	fragment_result_destroy(&r);
	return -1;
}

/* Whether a fragment of kind `next` can take each row's result of `kind`. */
static int
stage_can_follow(Pginfer__FragmentKind kind, Pginfer__FragmentKind next)
{
	int			gives_text = kind == PGINFER__FRAGMENT_KIND__FRAG_OCR ||
		kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;

	return gives_text && next == PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
}

/*
 * Moves row j of src (its fields and values) into row i of dst, freeing
 * what row i held; row j of src is left empty.
 */
static void
move_row(fragment_result *dst, int i, fragment_result *src, int j)
{
	Pginfer__RowResult init = PGINFER__ROW_RESULT__INIT;
	Pginfer__RowResult *d = &dst->rows[i];

	free_field(&d->sqlstate);
	free_field(&d->message);
	free_field(&d->detail);
	free_field(&d->hint);
	free_field(&d->text);
	free_field(&d->json);
	free(dst->values[i]);
	*d = src->rows[j];
	dst->values[i] = src->values[j];
	dst->n_values[i] = src->n_values[j];
	src->rows[j] = init;
	src->values[j] = NULL;
	src->n_values[j] = 0;
}

/*
 * Copies row j of src into row i of dst (which is empty), strings and
 * values duplicated; -1 when memory runs out.
 */
static int
copy_row(fragment_result *dst, int i, const fragment_result *src, int j)
{
	const Pginfer__RowResult *s = &src->rows[j];
	Pginfer__RowResult *d = &dst->rows[i];

	*d = *s;
	d->sqlstate = dup_field(s->sqlstate);
	d->message = dup_field(s->message);
	d->detail = dup_field(s->detail);
	d->hint = dup_field(s->hint);
	d->text = dup_field(s->text);
	d->json = dup_field(s->json);
	dst->n_values[i] = src->n_values[j];
	if (src->values[j] != NULL)
	{
		dst->values[i] = malloc(src->n_values[j] * sizeof(float) + 1);
		if (dst->values[i] == NULL)
			return -1;
		memcpy(dst->values[i], src->values[j], src->n_values[j] * sizeof(float));
	}
	/* dup_field gives "" for a string it cannot copy */
	if ((s->text[0] != '\0' && d->text[0] == '\0') ||
		(s->json[0] != '\0' && d->json[0] == '\0'))
		return -1;
	return 0;
}

/*
 * Whether row i of r, whose text stage prev made, is within stage next's
 * max_input_text_bytes (0: no limit); if not, the row gets its 54000
 * error, worded as the backend words infer.max_text_bytes one row at a
 * time, and next does not run it.
 */
static bool
chained_text_within_limit(fragment_result *r, int i, const Pginfer__Fragment *prev,
						  const Pginfer__Fragment *next)
{
	size_t		len = strlen(r->rows[i].text);
	char		msg[256];
	char		detail[512];
	const Pginfer__ModelSpec *spec = next->n_models > 0 ? next->models[0] : NULL;

	if (next->max_input_text_bytes <= 0 ||
		(uint64_t) len <= (uint64_t) next->max_input_text_bytes)
		return true;
	snprintf(msg, sizeof(msg), "text of %zu bytes is longer than infer.max_text_bytes (%lld bytes)",
			 len, (long long) next->max_input_text_bytes);
	snprintf(detail, sizeof(detail), "The text was the %s stage's, for model \"%s\" of the %s stage; it was not run.",
			 fragment_kind_name(prev->kind),
			 spec == NULL ? "" : spec->name[0] ? spec->name : spec->file,
			 fragment_kind_name(next->kind));
	fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, detail,
					   "Split the text, or raise infer.max_text_bytes.");
	return false;
}

/*
 * Runs the stages after the first of frag (frag->next, ...) over r, the
 * first stage's result over rows with row_ids: each stage takes the text
 * of the rows that are ok and replaces them with its own answer; rows
 * that failed keep their error.  -1 with sqlstate/err when a stage fails
 * as a whole or cannot follow the one before (22023).
 */
static int
run_next_stages(model_cache *mc, const Pginfer__RunFragment *run,
				const Pginfer__Fragment *frag, fragment_result *r,
				int64_t max_pixels, int max_batch, volatile sig_atomic_t *stop,
				const char **sqlstate, char *err, size_t errlen)
{
	int			n = r->n_rows;
	int		   *idx = calloc(n > 0 ? (size_t) n : 1, sizeof(int));
	uint64_t   *ids = calloc(n > 0 ? (size_t) n : 1, sizeof(uint64_t));
	const void **texts = calloc(n > 0 ? (size_t) n : 1, sizeof(void *));
	size_t	   *lens = calloc(n > 0 ? (size_t) n : 1, sizeof(size_t));
	fragment_result *r2 = NULL;
	int			rc = -1;

	if (idx == NULL || ids == NULL || texts == NULL || lens == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory for a %d-row chain", n);
		goto done;
	}
	for (const Pginfer__Fragment *prev = frag, *next = frag->next; next != NULL;
		 prev = next, next = next->next)
	{
		Pginfer__RunFragment stage = *run;
		int			m = 0;

		if (!stage_can_follow(prev->kind, next->kind))
		{
			*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
			snprintf(err, errlen, "stage %s cannot follow stage %s in a chained fragment",
					 fragment_kind_name(next->kind), fragment_kind_name(prev->kind));
			goto done;
		}
		for (int i = 0; i < n; i++)
		{
			if (!r->rows[i].ok || !chained_text_within_limit(r, i, prev, next))
				continue;
			idx[m] = i;
			ids[m] = r->rows[i].row_id;
			texts[m] = r->rows[i].text;
			lens[m] = strlen(r->rows[i].text);
			m++;
		}
		stage.fragment = (Pginfer__Fragment *) next;
		stage.n_row_ids = (size_t) m;
		stage.row_ids = ids;
		stage.n_more_fragments = 0;
		if (run_stage(mc, &stage, texts, lens, m, max_pixels, max_batch, stop,
					  &r2, sqlstate, err, errlen) != 0)
			goto done;
		for (int j = 0; j < m; j++)
			move_row(r, idx[j], r2, j);
		r->model_runs += r2->model_runs;
		take_samples(r, r2);
		fragment_result_destroy(&r2);
	}
	rc = 0;

done:
	fragment_result_destroy(&r2);
	free(idx);
	free(ids);
	free(texts);
	free(lens);
	return rc;
}

/*
 * Whether fragment a, a single stage, is the first stage of b: equal
 * packed bytes once b's next is left out.
 */
static int
same_first_stage(const Pginfer__Fragment *a, const Pginfer__Fragment *b)
{
	Pginfer__Fragment b1 = *b;
	size_t		la,
				lb;
	uint8_t    *pa,
			   *pb;
	int			same = 0;

	if (a->next != NULL)
		return 0;
	b1.next = NULL;
	la = pginfer__fragment__get_packed_size(a);
	lb = pginfer__fragment__get_packed_size(&b1);
	if (la != lb)
		return 0;
	pa = malloc(la + 1);
	pb = malloc(lb + 1);
	if (pa != NULL && pb != NULL)
	{
		pginfer__fragment__pack(a, pa);
		pginfer__fragment__pack(&b1, pb);
		same = memcmp(pa, pb, la) == 0;
	}
	free(pa);
	free(pb);
	return same;
}

/* Runs run over its rows into *out; see fragment.h. */
int
fragment_run(model_cache *mc, const Pginfer__RunFragment *run,
			 const void *const *rows, const size_t *rows_len, int n_rows,
			 int64_t max_pixels, int max_batch, volatile sig_atomic_t *stop,
			 fragment_result **out,
			 const char **sqlstate, char *err, size_t errlen)
{
	size_t		nf = 1 + run->n_more_fragments;
	fragment_result **parts = NULL;
	fragment_result *r = NULL;
	double		t0 = model_calls_now_ms();
	int			rc = -1;

	*out = NULL;
	*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	if (run->fragment == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
		snprintf(err, errlen, "run-fragment request has no fragment");
		return -1;
	}
	if (n_rows < 0 || (size_t) n_rows != run->n_row_ids)
	{
		snprintf(err, errlen, "request has %zu row ids but %d row frames",
				 run->n_row_ids, n_rows);
		return -1;
	}
	for (size_t f = 1; f < nf; f++)
		if (request_fragment_at(run, f) == NULL)
		{
			snprintf(err, errlen, "fragment %zu of the request is empty", f);
			return -1;
		}
	parts = calloc(nf, sizeof(*parts));
	if (parts == NULL)
		goto oom;

	for (size_t f = 0; f < nf; f++)
	{
		const Pginfer__Fragment *frag = request_fragment_at(run, f);
		Pginfer__RunFragment one = *run;
		size_t		g;

		one.fragment = (Pginfer__Fragment *) frag;
		one.n_more_fragments = 0;
		/* a chain whose first stage is an earlier fragment starts from its rows */
		for (g = 0; g < f; g++)
			if (frag->next != NULL && same_first_stage(request_fragment_at(run, g), frag))
				break;
		if (g < f)
		{
			parts[f] = fragment_result_new(n_rows);
			if (parts[f] == NULL)
				goto oom;
			for (int i = 0; i < n_rows; i++)
				if (copy_row(parts[f], i, parts[g], i) != 0)
					goto oom;
			log_debug("fragment %zu: first stage taken from fragment %zu", f, g);
		}
		else if (run_stage(mc, &one, rows, rows_len, n_rows, max_pixels,
						   max_batch, stop, &parts[f], sqlstate, err, errlen) != 0)
			goto done;
		if (frag->next != NULL &&
			run_next_stages(mc, &one, frag, parts[f], max_pixels, max_batch,
							stop, sqlstate, err, errlen) != 0)
			goto done;
	}

	if (nf == 1)
	{
		r = parts[0];
		parts[0] = NULL;
	}
	else
	{
		/* fragment-major: the rows of fragment 0, then of fragment 1, ... */
		r = fragment_result_new(n_rows * (int) nf);
		if (r == NULL)
			goto oom;
		for (size_t f = 0; f < nf; f++)
		{
			for (int i = 0; i < n_rows; i++)
			{
				move_row(r, (int) f * n_rows + i, parts[f], i);
				r->rows[(int) f * n_rows + i].fragment = (uint32_t) f;
			}
			r->model_runs += parts[f]->model_runs;
			take_samples(r, parts[f]);
		}
	}
	r->n_fragments = (int) nf;
	r->compute_ms = model_calls_now_ms() - t0;
	*out = r;
	r = NULL;
	rc = 0;
	goto done;

oom:
	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	snprintf(err, errlen, "out of memory for %d rows of %zu fragments", n_rows, nf);
done:
	for (size_t f = 0; parts != NULL && f < nf; f++)
		fragment_result_destroy(&parts[f]);
	free(parts);
	fragment_result_destroy(&r);
	return rc;
}
