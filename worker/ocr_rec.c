/*
 * ocr_rec.c
 *	  Direction classification and text recognition of cropped lines, as
 *	  RapidOCR 1.4.4 runs them (ch_ppocr_cls/text_cls.py,
 *	  ch_ppocr_rec/text_recognize.py and utils.py):
 *	- crops are taken in order of width / height, in batches of 6;
 *	- classifier input 3x48x192: resize to height 48 keeping the ratio
 *	  (width ceil(48 * w / h), at most 192), zero padding on the right;
 *	- recogniser input 3x48xW with W = int(48 * max(320/48, the batch's
 *	  largest w/h)), same resize rule and padding;
 *	- both normalise (x / 255 - 0.5) / 0.5 over planes in B, G, R order
 *	  (RapidOCR feeds OpenCV's BGR arrays).
 *
 * Both models run through model_calls_run(), so each batch's time lands
 * in the calling thread's open model_calls log (fragment.c's timings).
 *
 * Threading: pure functions; the models are only read.
 */
#include "worker/ocr_geometry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/model_calls.h"
#include "worker/preprocess.h"

#define BATCH		6
#define REC_H		48
#define REC_W		320
#define CLS_W		192

/* A crop's width and height, wherever it is. */
static void
crop_size(const ocr_crop *c, int *w, int *h)
{
	if (c->dimg != NULL)
		ie_dimage_size(c->dimg, w, h);
	else
	{
		*w = c->img->width;
		*h = c->img->height;
	}
}

typedef struct ratio_idx
{
	double		ratio;
	int			idx;
} ratio_idx;

/*
 * A new array (free() it) of the n crops' indexes and width / height in a
 * stable order by that ratio (an insertion sort); NULL when out of memory.
 */
static ratio_idx *
order_by_ratio(const ocr_crop *crops, int n)
{
	ratio_idx  *o = malloc(sizeof(ratio_idx) * (size_t) n);

	if (o == NULL)
		return NULL;
	for (int i = 0; i < n; i++)
	{
		int			w,
					h;

		crop_size(&crops[i], &w, &h);
		o[i].ratio = (double) w / (double) h;
		o[i].idx = i;
	}
	for (int i = 1; i < n; i++)
	{
		ratio_idx	t = o[i];
		int			j = i - 1;

		while (j >= 0 && o[j].ratio > t.ratio)
		{
			o[j + 1] = o[j];
			j--;
		}
		o[j + 1] = t;
	}
	return o;
}

/* Width of a w x h crop resized to height REC_H: ceil(REC_H * ratio), in 1..max_w. */
static int
crop_width(int w, int h, int max_w)
{
	double		ratio = (double) w / (double) h;
	int			rw;

	if (ceil(REC_H * ratio) > max_w)
		rw = max_w;
	else
		rw = (int) ceil(REC_H * ratio);
	return rw < 1 ? 1 : rw;
}

/*
 * A new m x 3 x REC_H x w float tensor of the crops o[0..m) name, each
 * resized to height REC_H (crop_width) and normalised (mean and std 0.5,
 * BGR), zero-padded on the right; NULL with err when the tensor is over
 * the limit or memory runs out (model_calls_tensor_failed).
 */
static ie_tensor *
batch_input(const char *what, const ocr_crop *crops, const ratio_idx *o, int m,
			int w, char *err, size_t errlen)
{
	static const float mean[3] = {0.5f, 0.5f, 0.5f};
	static const float stdv[3] = {0.5f, 0.5f, 0.5f};
	int64_t		dims[4] = {m, 3, REC_H, w};
	ie_tensor  *in = ie_tensor_new(IE_FLOAT, 4, dims);

	if (in == NULL)
	{
		model_calls_tensor_failed(err, errlen, "%s: a batch of %d crops of %dx%d", what, m, w, REC_H);
		return NULL;
	}
	for (int k = 0; k < m; k++)
	{
		const image_rgb *crop = crops[o[k].idx].img;
		image_rgb  *rs = pre_resize(crop, crop_width(crop->width, crop->height, w), REC_H);

		if (rs == NULL)
		{
			snprintf(err, errlen, "%s: out of memory resizing a crop", what);
			ie_tensor_destroy(&in);
			return NULL;
		}
		pre_normalize_chw(rs, mean, stdv, 1, (float *) in->data + (size_t) k * 3 * REC_H * w,
						  REC_H, w, 0);
		image_destroy(&rs);
	}
	return in;
}

/*
 * Runs model on the batch_input of crops o[0..m) (width w): on the model's
 * CUDA device the crops' pixels go there and are resized and normalised
 * there (ie_model_run_images, the same values), else batch_input here.
 * outs[0] receives the first output.  -1 with err (what names the stage
 * in batch_input's).
 */
static int
run_crops(const ie_model *model, const ocr_crop *crops, const ratio_idx *o, int m,
		  int w, ie_tensor **outs, const char *what, char *err, size_t errlen)
{
	const ie_tensor *ins[1];
	ie_tensor  *in;
	int			rc;

	if (ie_model_device(model) != IE_DEVICE_CPU)
	{
		ie_image	ims[BATCH];
		ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, 0.0f, REC_H, w};

		for (int k = 0; k < m; k++)
		{
			const ocr_crop *crop = &crops[o[k].idx];

			crop_size(crop, &ims[k].width, &ims[k].height);
			ims[k].pixels = crop->dimg == NULL ? crop->img->pixels : NULL;
			ims[k].dpixels = crop->dimg;
			ims[k].resize_w = crop_width(ims[k].width, ims[k].height, w);
			ims[k].resize_h = REC_H;
		}
		return model_calls_run_images(model, ims, m, &norm, outs, err, errlen);
	}
	for (int k = 0; k < m; k++)
		if (crops[o[k].idx].img == NULL)
		{
			snprintf(err, errlen, "a crop in device memory for a model on the CPU");
			return -1;
		}
	if ((in = batch_input(what, crops, o, m, w, err, errlen)) == NULL)
		return -1;
	ins[0] = in;
	rc = model_calls_run(model, ins, outs, err, errlen);
	ie_tensor_destroy(&in);
	return rc;
}

/* TextClassifier: batches of 6 by ratio, 3x48x192 inputs, turn "180" crops. */
int
ocr_classify(const ie_model *cls, ocr_crop *crops, int n, float thresh,
			 int *rotated, char *err, size_t errlen)
{
	ratio_idx  *o = NULL;
	ie_tensor  *outs[1] = {NULL};
	for (int i = 0; i < n; i++)
		rotated[i] = 0;
	if (n <= 0)
		return 0;
	o = order_by_ratio(crops, n);
	if (o == NULL)
		goto nomem;
	for (int b = 0; b < n; b += BATCH)
	{
		int			m = n - b < BATCH ? n - b : BATCH;
		const float *pr;

		if (run_crops(cls, crops, o + b, m, CLS_W, outs, "direction classifier",
					  err, errlen) < 0)
			goto fail;
		if (outs[0]->dtype != IE_FLOAT || outs[0]->ndim != 2 ||
			outs[0]->dims[0] != m || outs[0]->dims[1] < 2)
		{
			snprintf(err, errlen, "direction classifier: unexpected output "
					 "(rank %d, want %dx2 float)", outs[0]->ndim, m);
			goto fail;
		}
		pr = outs[0]->data;
		for (int k = 0; k < m; k++)
		{
			const float *row = pr + (size_t) k * outs[0]->dims[1];
			int			best = 0;

			for (int c = 1; c < outs[0]->dims[1]; c++)
				if (row[c] > row[best])
					best = c;
			/* label_list ['0', '180'] */
			if (best == 1 && row[best] > thresh)
			{
				int			i = o[b + k].idx;

				if (crops[i].dimg != NULL)
				{
					if (ie_dimage_rotate180(crops[i].dimg, err, errlen) != 0)
						goto fail;
				}
				else
				{
					image_rgb  *r = pre_rotate180(crops[i].img);

					if (r == NULL)
						goto nomem;
					image_destroy(&crops[i].img);
					crops[i].img = r;
				}
				rotated[i] = 1;
			}
		}
		ie_tensor_destroy(&outs[0]);
	}
	free(o);
	return 0;

nomem:
	snprintf(err, errlen, "direction classifier: out of memory");
fail:
	free(o);
	ie_tensor_destroy(&outs[0]);
	return -1;
}

/* CTCLabelDecode with is_remove_duplicate: argmax, merge repeats, drop blank. */
char *
ocr_ctc_decode(const float *probs, int T, int C, const char *const *dict,
			   int dict_len, float *score)
{
	size_t		cap = 64,
				len = 0;
	char	   *s = malloc(cap);
	int			prev = -1;
	double		sum = 0;
	int			kept = 0;

	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (int t = 0; t < T; t++)
	{
		const float *row = probs + (size_t) t * C;
		int			best = 0;

		for (int c = 1; c < C; c++)
			if (row[c] > row[best])
				best = c;
		if (best != 0 && best != prev)
		{
			const char *ch = best < dict_len ? dict[best] : "";
			size_t		l = strlen(ch);

			if (len + l + 1 > cap)
			{
				char	   *ns;

				while (len + l + 1 > cap)
					cap *= 2;
				ns = realloc(s, cap);
				if (ns == NULL)
				{
					free(s);
					return NULL;
				}
				s = ns;
			}
			memcpy(s + len, ch, l + 1);
			len += l;
			sum += row[best];
			kept++;
		}
		prev = best;
	}
	*score = kept ? (float) (sum / kept) : 0.f;
	return s;
}

/* TextRecognizer: batches of 6 by ratio, width from the batch's widest ratio. */
int
ocr_recognize(const ie_model *rec, const char *const *dict, int dict_len,
			  const ocr_crop *crops, int n, char **texts, float *scores,
			  volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	ratio_idx  *o = NULL;
	ie_tensor  *outs[1] = {NULL};
	int			rc = -1;

	for (int i = 0; i < n; i++)
	{
		texts[i] = NULL;
		scores[i] = 0;
	}
	if (n <= 0)
		return 0;
	o = order_by_ratio(crops, n);
	if (o == NULL)
		goto nomem;
	for (int b = 0; b < n; b += BATCH)
	{
		int			m = n - b < BATCH ? n - b : BATCH;
		double		max_ratio = (double) REC_W / REC_H;
		int			bw;
		int			T,
					C;

		if (stop != NULL && *stop)
		{
			snprintf(err, errlen, "text recogniser: stopped after %d of %d crops", b, n);
			rc = OCR_STOPPED;
			goto fail;
		}
		for (int k = 0; k < m; k++)
			if (o[b + k].ratio > max_ratio)
				max_ratio = o[b + k].ratio;
		bw = (int) (REC_H * max_ratio);
		if (run_crops(rec, crops, o + b, m, bw, outs, "text recogniser", err, errlen) < 0)
			goto fail;
		if (outs[0]->dtype != IE_FLOAT || outs[0]->ndim != 3 ||
			outs[0]->dims[0] != m)
		{
			snprintf(err, errlen, "text recogniser: unexpected output (rank %d, "
					 "want %dxTxC float)", outs[0]->ndim, m);
			goto fail;
		}
		T = (int) outs[0]->dims[1];
		C = (int) outs[0]->dims[2];
		if (C != dict_len)
		{
			snprintf(err, errlen, "text recogniser: %d classes but the dictionary "
					 "has %d entries (blank and space included)", C, dict_len);
			goto fail;
		}
		for (int k = 0; k < m; k++)
		{
			int			i = o[b + k].idx;

			texts[i] = ocr_ctc_decode((const float *) outs[0]->data +
									  (size_t) k * T * C, T, C, dict, dict_len,
									  &scores[i]);
			if (texts[i] == NULL)
				goto nomem;
		}
		ie_tensor_destroy(&outs[0]);
	}
	free(o);
	return 0;

nomem:
	snprintf(err, errlen, "text recogniser: out of memory");
fail:
	for (int i = 0; i < n; i++)
	{
		free(texts[i]);
		texts[i] = NULL;
	}
	free(o);
	ie_tensor_destroy(&outs[0]);
	return rc;
}
