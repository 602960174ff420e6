/*
 * ocr.h
 *	  The OCR fragment: text detection (DB) -> direction classification ->
 *	  recognition (CTC), on one decoded image.
 *
 * The stages follow PaddleOCR's PP-OCR pipeline as RapidOCR runs it:
 *	- detection: resize so the short side is at least limit_side_len (736),
 *	  sides rounded to multiples of 32, normalised with mean 0.5/std 0.5;
 *	  DB post-processing (Liao et al., "Real-time Scene Text Detection with
 *	  Differentiable Binarization", AAAI 2020): threshold 0.3, dilation,
 *	  outer contours, minimum-area rectangles, box score (mean probability)
 *	  >= 0.5, unclip by area * 1.6 / perimeter, boxes back in image
 *	  coordinates, sorted in reading order;
 *	- each box cropped and perspective-rectified (bicubic, replicated
 *	  border), turned upright when it is at least 1.5 times taller than wide;
 *	- direction classifier at 48x192: rotate a crop 180 degrees when the
 *	  label is "180" with score > 0.9;
 *	- recogniser at height 48, batches of 6 sorted by aspect ratio, CTC
 *	  greedy decoding over the dictionary (index 0 is the blank, a space is
 *	  the last class); lines scoring under 0.5 are dropped.
 *
 * Threading: ocr_run() may be called from several threads with the same
 * models; it keeps no state between calls.
 */
#ifndef INFER_OCR_H
#define INFER_OCR_H

#include <signal.h>

#include "worker/engine/engine.h"
#include "worker/image.h"

typedef struct ocr_params
{
	int			limit_side_len; /* 736 */
	float		det_thresh;		/* 0.3 */
	float		box_thresh;		/* 0.5 */
	float		unclip_ratio;	/* 1.6 */
	int			max_candidates; /* 1000 */
	float		cls_thresh;		/* 0.9 */
	float		text_score;		/* 0.5 */
	int			use_cls;		/* 1 */
	/*
	 * Not RapidOCR's: NULL, or a flag that ocr_run() reads between model
	 * calls (after detection, between recognition batches): once it is
	 * non-zero, ocr_run() stops and returns OCR_STOPPED, so that a worker
	 * stopping or cancelling a run does not wait for a dense page's
	 * hundreds of lines.
	 */
	volatile sig_atomic_t *stop;
} ocr_params;

/* ocr_run()'s return when params->stop was raised (no result). */
#define OCR_STOPPED (-2)

/* The models and dictionary of one OCR fragment (borrowed, not owned). */
typedef struct ocr_models
{
	const ie_model *det;
	const ie_model *cls;		/* may be NULL: no direction classification */
	const ie_model *rec;
	const char *const *dict;	/* dict[0] is the CTC blank "" ... last " " */
	int			dict_len;
} ocr_models;

typedef struct ocr_line
{
	float		box[4][2];		/* corners in image pixels: TL, TR, BR, BL */
	float		box_score;		/* detector's mean probability in the box */
	int			rotated;		/* 1 when the classifier turned it by 180 */
	char	   *text;			/* UTF-8, owned; "" when detection only */
	float		text_score;		/* mean CTC probability of the kept steps */
} ocr_line;

typedef struct ocr_result
{
	int			n_lines;
	ocr_line   *lines;			/* in reading order */
} ocr_result;

/* The defaults listed above. */
void		ocr_params_default(ocr_params *p);

/*
 * Loads a dictionary file (one entry a line, as ppocr_keys_v1.txt) into
 * the CTC class list: "" (blank) first, the file's lines, " " last.
 * Returns the count, or -1 with a message in err.  Free with
 * ocr_dict_free().
 */
int			ocr_dict_load(const char *path, char ***dict, char *err, size_t errlen);
void		ocr_dict_free(char ***dict, int dict_len);

/*
 * Runs the whole fragment (detect_only = 0) or the detector alone
 * (detect_only = 1: lines with boxes and scores, empty text).  Returns 0 and
 * sets *out, -1 with a message in err (a model error; an image with no
 * text is a success with n_lines 0), or OCR_STOPPED when params->stop
 * was raised.
 */
int			ocr_run(const ocr_models *models, const ocr_params *params,
					const image_rgb *img, int detect_only, ocr_result **out,
					char *err, size_t errlen);

/* The recognised text: lines in reading order joined by '\n'; malloc'd. */
char	   *ocr_result_text(const ocr_result *r);

/* The boxes as JSON: [{"box":[[x,y],...4],"score":s,"text":"..."}, ...]. */
char	   *ocr_result_json(const ocr_result *r);

void		ocr_result_destroy(ocr_result **r);

#endif							/* INFER_OCR_H */
