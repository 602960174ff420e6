/*
 * ocr.c
 *	  The OCR fragment's pipeline (detect -> classify -> recognise) on one
 *	  image, its dictionary, and its text and JSON renderings.
 *
 * Beyond the stages listed in ocr.h, ocr_run() does what RapidOCR 1.4.4's
 * RapidOCR.__call__ (main.py, config.yaml "Global") does around them, so
 * that the same image gives the same text:
 *	- an image whose longer side exceeds 2000 pixels is first resized so
 *	  that side is 2000, and one whose shorter side is under 30 is resized
 *	  so that side is 30 (both rounding the sides to multiples of 32, as
 *	  utils/process_img.py; the second resize's ratios replace the first's);
 *	- an image at most 30 pixels high or more than 8 times wider than high
 *	  gets black bands above and below (height max(w / 8, 30) * 2 in all);
 *	- the crops are cut from that resized and banded image; the boxes are
 *	  mapped back to the input image's pixels and clipped to it;
 *	- lines whose recognition score is under text_score are dropped.
 * Beyond RapidOCR, so that a thin image cannot grow without bound: an image
 * with a side under MIN_TEXT_SIDE pixels, or one whose short side rounds to
 * 0 in a resize, has no text (an empty result, not an error; RapidOCR
 * raises ResizeImgError there); after the short-side resize a long side
 * over OCR_DET_MAX_SIDE is brought back to it; and ocr_detect() caps its
 * input (OCR_DET_MAX_SIDE, OCR_DET_MAX_PIXELS).  None of these changes an
 * image RapidOCR handles within those sizes.
 * The pixels stay RGB throughout; the tensors are built in B, G, R plane
 * order because that is what RapidOCR feeds the models.
 *
 * The stages run their models through model_calls_run() (ocr_det.c,
 * ocr_rec.c): a caller that opens a model_calls log around ocr_run()
 * gets each model call's rows and milliseconds.
 *
 * Threading: ocr_run() keeps no state; the models are only read.
 */
#include "worker/ocr.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/ocr_geometry.h"
#include "worker/preprocess.h"

#define MAX_SIDE_LEN		2000
#define MIN_SIDE_LEN		30
#define MIN_HEIGHT			30
#define WIDTH_HEIGHT_RATIO	8
/* Not RapidOCR's: an image with a side under this holds no readable text. */
#define MIN_TEXT_SIDE		4

/* RapidOCR 1.4.4 config.yaml values. */
void
ocr_params_default(ocr_params *p)
{
	p->limit_side_len = 736;
	p->det_thresh = 0.3f;
	p->box_thresh = 0.5f;
	p->unclip_ratio = 1.6f;
	p->max_candidates = 1000;
	p->cls_thresh = 0.9f;
	p->text_score = 0.5f;
	p->use_cls = 1;
	p->stop = NULL;
}

/* Appends a copy of s to the list, growing it; -1 when memory runs out. */
static int
dict_push(char ***d, int *n, int *cap, const char *s, size_t len)
{
	char	   *c;

	if (*n == *cap)
	{
		int			nc = *cap ? *cap * 2 : 1024;
		char	  **nd = realloc(*d, sizeof(char *) * (size_t) nc);

		if (nd == NULL)
			return -1;
		*d = nd;
		*cap = nc;
	}
	c = malloc(len + 1);
	if (c == NULL)
		return -1;
	memcpy(c, s, len);
	c[len] = '\0';
	(*d)[(*n)++] = c;
	return 0;
}

/* Blank, the file's lines, space: RapidOCR's CTCLabelDecode character list. */
int
ocr_dict_load(const char *path, char ***dict, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "rb");
	char	  **d = NULL;
	int			n = 0,
				cap = 0;
	char	   *line = NULL;
	size_t		lcap = 0;
	ssize_t		len;

	*dict = NULL;
	if (f == NULL)
	{
		snprintf(err, errlen, "cannot open dictionary \"%s\": %s", path,
				 strerror(errno));
		return -1;
	}
	if (dict_push(&d, &n, &cap, "", 0) < 0)
		goto nomem;
	while ((len = getline(&line, &lcap, f)) >= 0)
	{
		/* strip one "\n" or "\r\n", as RapidOCR's read_character_file */
		if (len > 0 && line[len - 1] == '\n')
		{
			len--;
			if (len > 0 && line[len - 1] == '\r')
				len--;
		}
		if (dict_push(&d, &n, &cap, line, (size_t) len) < 0)
			goto nomem;
	}
	if (ferror(f))
	{
		snprintf(err, errlen, "cannot read dictionary \"%s\": %s", path,
				 strerror(errno));
		goto fail;
	}
	if (n == 1)
	{
		snprintf(err, errlen, "dictionary \"%s\" is empty", path);
		goto fail;
	}
	if (dict_push(&d, &n, &cap, " ", 1) < 0)
		goto nomem;
	free(line);
	fclose(f);
	*dict = d;
	return n;

nomem:
	snprintf(err, errlen, "out of memory reading dictionary \"%s\"", path);
fail:
	free(line);
	fclose(f);
	ocr_dict_free(&d, n);
	return -1;
}

/* Frees the entries and the list; sets *dict to NULL. */
void
ocr_dict_free(char ***dict, int dict_len)
{
	if (*dict == NULL)
		return;
	for (int i = 0; i < dict_len; i++)
		free((*dict)[i]);
	free(*dict);
	*dict = NULL;
}

/*
 * utils/process_img.py: scale by ratio, sides rounded to multiples of 32
 * (half to even, as Python's round).  Returns 0 with *out, 1 when a side
 * rounds to 0 (the image is too thin to hold text), -1 when memory runs out.
 */
static int
resize_side(const image_rgb *img, double ratio, float *ratio_h,
			float *ratio_w, image_rgb **out)
{
	double		dh = img->height * ratio;
	double		dw = img->width * ratio;
	int			rh,
				rw;

	*out = NULL;
	if (!(dh < INT_MAX && dw < INT_MAX))
		return -1;
	rh = (int) rint((int) dh / 32.0) * 32;
	rw = (int) rint((int) dw / 32.0) * 32;
	if (rh <= 0 || rw <= 0)
		return 1;
	*ratio_h = (float) ((double) img->height / rh);
	*ratio_w = (float) ((double) img->width / rw);
	*out = pre_resize(img, rw, rh);
	return *out != NULL ? 0 : -1;
}

/*
 * Scales *cur by r through resize_side (its ratios into *ratio_h, *ratio_w)
 * and makes the result *work and *cur, freeing the old *work.  Returns 0,
 * 1 when a side rounds to 0 (nothing changed), or -1 out of memory with err
 * naming the target, a len-pixel side (side: "long" or "short").
 */
static int
rescale(image_rgb **work, const image_rgb **cur, double r, float *ratio_h,
		float *ratio_w, int len, const char *side, char *err, size_t errlen)
{
	image_rgb  *t;
	int			rc = resize_side(*cur, r, ratio_h, ratio_w, &t);

	if (rc < 0)
	{
		snprintf(err, errlen, "OCR: out of memory resizing a %dx%d image to a "
				 "%d-pixel %s side", (*cur)->width, (*cur)->height, len, side);
		return -1;
	}
	if (rc > 0)
		return 1;
	image_destroy(work);
	*work = t;
	*cur = t;
	return 0;
}

/*
 * The CUDA device all of the fragment's models run on, or IE_DEVICE_CPU
 * (also when they are on different devices, or some on the CPU): then the
 * pipeline runs on the host and each model call uploads its input.
 */
static int
on_one_device(const ocr_models *models)
{
	int			d = ie_model_device(models->det);

	if (d == IE_DEVICE_CPU || ie_model_device(models->rec) != d ||
		(models->cls != NULL && ie_model_device(models->cls) != d))
		return IE_DEVICE_CPU;
	return d;
}

/* Black bands of pad rows above and below img. */
static image_rgb *
letterbox(const image_rgb *img, int pad)
{
	image_rgb  *o = image_new(img->width, img->height + 2 * pad);

	if (o == NULL)
		return NULL;
	memcpy(o->pixels + (size_t) pad * img->width * 3, img->pixels,
		   (size_t) img->width * img->height * 3);
	return o;
}

/* The fragment: size limits, bands, detect, crop, classify, recognise, filter. */
int
ocr_run(const ocr_models *models, const ocr_params *params,
		const image_rgb *img, int detect_only, ocr_result **out,
		char *err, size_t errlen)
{
	image_rgb  *work = NULL;	/* the resized / banded image, when made */
	const image_rgb *cur = img;
	float		ratio_h = 1,
				ratio_w = 1;
	int			top = 0;
	ocr_det_box *boxes = NULL;
	int			nb = 0;
	ocr_crop   *crops = NULL;
	int			device = on_one_device(models);
	ie_dimage  *page = NULL;	/* cur on the device, when the models are there */
	int		   *rotated = NULL;
	char	  **texts = NULL;
	float	   *scores = NULL;
	ocr_result *res = NULL;
	int			rc;
	int			stopped = 0;

	*out = NULL;
	if (img->width < 1 || img->height < 1)
	{
		snprintf(err, errlen, "OCR: empty image (%dx%d)", img->width, img->height);
		return -1;
	}

	/* Too thin for a text line in any direction: no text (not RapidOCR's). */
	if ((img->width < img->height ? img->width : img->height) < MIN_TEXT_SIDE)
		goto detected;

	/* RapidOCR.preprocess: max_side_len, then min_side_len */
	if ((cur->width > cur->height ? cur->width : cur->height) > MAX_SIDE_LEN)
	{
		double		r = cur->height > cur->width ?
			(double) MAX_SIDE_LEN / cur->height : (double) MAX_SIDE_LEN / cur->width;
		int			rc = rescale(&work, &cur, r, &ratio_h, &ratio_w, MAX_SIDE_LEN, "long",
							 err, errlen);

		if (rc > 0)
			goto detected;
		if (rc < 0)
			goto fail;
	}
	if ((cur->width < cur->height ? cur->width : cur->height) < MIN_SIDE_LEN)
	{
		double		r = cur->height < cur->width ?
			(double) MIN_SIDE_LEN / cur->height : (double) MIN_SIDE_LEN / cur->width;
		int			rc = rescale(&work, &cur, r, &ratio_h, &ratio_w, MIN_SIDE_LEN, "short",
							 err, errlen);

		if (rc > 0)
			goto detected;
		if (rc < 0)
			goto fail;
	}

	/*
	 * Not RapidOCR's: raising the short side may have pushed the long side
	 * past what the detector takes (OCR_DET_MAX_SIDE; aspect ratio over
	 * 4000 / 30); bring it back to that, composing the ratios so boxes
	 * still map to the previous step's input.  Up to there RapidOCR's
	 * sizes stand (a 2000x15 strip runs as 4000x32, banded to 4000x1000).
	 */
	if ((cur->width > cur->height ? cur->width : cur->height) > OCR_DET_MAX_SIDE)
	{
		double		r = cur->height > cur->width ?
			(double) OCR_DET_MAX_SIDE / cur->height : (double) OCR_DET_MAX_SIDE / cur->width;
		float		ch = 1,
					cw = 1;
		int			rc = rescale(&work, &cur, r, &ch, &cw, OCR_DET_MAX_SIDE, "long",
							 err, errlen);

		if (rc > 0)
			goto detected;
		if (rc < 0)
			goto fail;
		ratio_h *= ch;
		ratio_w *= cw;
	}

	/* maybe_add_letterbox */
	if (cur->height <= MIN_HEIGHT ||
		(double) cur->width / cur->height > WIDTH_HEIGHT_RATIO)
	{
		int			nh = (int) ((double) cur->width / WIDTH_HEIGHT_RATIO);
		image_rgb  *t;

		if (nh < MIN_HEIGHT)
			nh = MIN_HEIGHT;
		nh *= 2;
		top = abs(nh - cur->height) / 2;
		t = letterbox(cur, top);
		if (t == NULL)
			goto nomem;
		image_destroy(&work);
		work = t;
		cur = work;
	}

	/* on a GPU the page goes there once: detector input, crops, turns */
	if (device != IE_DEVICE_CPU &&
		(page = ie_dimage_upload(device, cur->pixels, cur->width, cur->height,
								 err, errlen)) == NULL)
		goto fail;
	nb = ocr_detect(models->det, params, cur, page, &boxes, err, errlen);
	if (nb < 0)
		goto fail;
	if (params->stop != NULL && *params->stop)
		goto stopped;

detected:
	res = calloc(1, sizeof(ocr_result));
	if (res == NULL)
		goto nomem;
	if (nb > 0)
	{
		crops = calloc((size_t) nb, sizeof(ocr_crop));
		rotated = calloc((size_t) nb, sizeof(int));
		texts = calloc((size_t) nb, sizeof(char *));
		scores = calloc((size_t) nb, sizeof(float));
		res->lines = calloc((size_t) nb, sizeof(ocr_line));
		if (!crops || !rotated || !texts || !scores || !res->lines)
			goto nomem;
	}
	if (!detect_only && nb > 0)
	{
		for (int i = 0; i < nb; i++)
		{
			if (page != NULL)
			{
				double		mi[9];
				int			cw,
							ch,
							rot90;

				if (geo_crop_plan((const float (*)[2]) boxes[i].pts, mi, &cw, &ch, &rot90) < 0)
					goto nomem;	/* as geo_crop_box's NULL on the host */
				crops[i].dimg = ie_dimage_warp(page, mi, cw, ch, rot90, err, errlen);
				if (crops[i].dimg == NULL)
					goto fail;
				continue;
			}
			crops[i].img = geo_crop_box(cur, (const float (*)[2]) boxes[i].pts);
			if (crops[i].img == NULL)
				goto nomem;
		}
		if (params->use_cls && models->cls != NULL &&
			ocr_classify(models->cls, crops, nb, params->cls_thresh, rotated,
						 err, errlen) < 0)
			goto fail;
		if (params->stop != NULL && *params->stop)
			goto stopped;
		rc = ocr_recognize(models->rec, models->dict, models->dict_len, crops,
						   nb, texts, scores, params->stop, err, errlen);
		if (rc == OCR_STOPPED)
			goto stopped;
		if (rc < 0)
			goto fail;
	}
	for (int i = 0; i < nb; i++)
	{
		ocr_line   *l = &res->lines[res->n_lines];

		if (!detect_only && scores[i] < params->text_score)
			continue;
		/* _get_origin_points: undo the band and the resize, clip */
		for (int k = 0; k < 4; k++)
		{
			float		x = boxes[i].pts[k][0] * ratio_w;
			float		y = (boxes[i].pts[k][1] - (float) top) * ratio_h;

			x = x < 0 ? 0 : (x > (float) img->width ? (float) img->width : x);
			y = y < 0 ? 0 : (y > (float) img->height ? (float) img->height : y);
			l->box[k][0] = x;
			l->box[k][1] = y;
		}
		l->box_score = boxes[i].score;
		l->rotated = rotated[i];
		l->text_score = scores[i];
		if (detect_only)
		{
			l->text = strdup("");
			if (l->text == NULL)
				goto nomem;
		}
		else
		{
			l->text = texts[i];
			texts[i] = NULL;
		}
		res->n_lines++;
	}
	goto done;

stopped:
	snprintf(err, errlen, "OCR: stopped (%d text boxes found)", nb);
	stopped = 1;
	goto fail;
nomem:
	snprintf(err, errlen, "OCR: out of memory on a %dx%d image", img->width,
			 img->height);
fail:
	ocr_result_destroy(&res);
done:
	for (int i = 0; i < nb; i++)
	{
		if (crops)
		{
			image_destroy(&crops[i].img);
			ie_dimage_destroy(&crops[i].dimg);
		}
		if (texts)
			free(texts[i]);
	}
	ie_dimage_destroy(&page);
	free(crops);
	free(rotated);
	free(texts);
	free(scores);
	free(boxes);
	image_destroy(&work);
	*out = res;
	return res ? 0 : stopped ? OCR_STOPPED : -1;
}

/* Lines joined by newlines; malloc'd, NULL when memory runs out. */
char *
ocr_result_text(const ocr_result *r)
{
	size_t		len = 1;
	char	   *s,
			   *p;

	for (int i = 0; i < r->n_lines; i++)
		len += strlen(r->lines[i].text) + 1;
	s = malloc(len);
	if (s == NULL)
		return NULL;
	p = s;
	for (int i = 0; i < r->n_lines; i++)
	{
		size_t		l = strlen(r->lines[i].text);

		if (i > 0)
			*p++ = '\n';
		memcpy(p, r->lines[i].text, l);
		p += l;
	}
	*p = '\0';
	return s;
}

/* Growable string for the JSON writer. */
typedef struct sbuf
{
	char	   *s;
	size_t		len;
	size_t		cap;
	int			oom;
} sbuf;

/* Appends n bytes, keeping a terminating NUL; sets oom on failure. */
static void
sb_put(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap)
	{
		size_t		nc = b->cap ? b->cap : 256;
		char	   *ns;

		while (b->len + n + 1 > nc)
			nc *= 2;
		ns = realloc(b->s, nc);
		if (ns == NULL)
		{
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->cap = nc;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* Appends one number formatted by fmt. */
static void
sb_printf_num(sbuf *b, const char *fmt, double v)
{
	char		t[64];
	int			n = snprintf(t, sizeof(t), fmt, v);

	sb_put(b, t, (size_t) n);
}

/* JSON string literal: quotes, backslashes and control bytes escaped. */
static void
sb_json_str(sbuf *b, const char *s)
{
	sb_put(b, "\"", 1);
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
		{
			char		e[2] = {'\\', (char) c};

			sb_put(b, e, 2);
		}
		else if (c < 0x20)
		{
			char		e[8];

			snprintf(e, sizeof(e), "\\u%04x", c);
			sb_put(b, e, 6);
		}
		else
			sb_put(b, s, 1);
	}
	sb_put(b, "\"", 1);
}

/*
 * "score" is the recognition score; for detection-only results (empty
 * text) it is the detector's box score.
 */
char *
ocr_result_json(const ocr_result *r)
{
	sbuf		b = {0};

	sb_put(&b, "[", 1);
	for (int i = 0; i < r->n_lines; i++)
	{
		const ocr_line *l = &r->lines[i];

		if (i > 0)
			sb_put(&b, ",", 1);
		sb_put(&b, "{\"box\":[", 8);
		for (int k = 0; k < 4; k++)
		{
			if (k > 0)
				sb_put(&b, ",", 1);
			sb_printf_num(&b, "[%.6g,", l->box[k][0]);
			sb_printf_num(&b, "%.6g]", l->box[k][1]);
		}
		sb_printf_num(&b, "],\"score\":%.6g,\"text\":",
					  l->text[0] ? l->text_score : l->box_score);
		sb_json_str(&b, l->text);
		sb_put(&b, "}", 1);
	}
	sb_put(&b, "]", 1);
	if (b.oom)
	{
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* Frees the lines' texts, the lines and the result; sets *r to NULL. */
void
ocr_result_destroy(ocr_result **r)
{
	if (*r == NULL)
		return;
	for (int i = 0; i < (*r)->n_lines; i++)
		free((*r)->lines[i].text);
	free((*r)->lines);
	free(*r);
	*r = NULL;
}
