/*
 * ocr_det.c
 *	  Text detection: DB (Differentiable Binarization) pre- and
 *	  post-processing around the PP-OCR detector, step for step as
 *	  RapidOCR 1.4.4 does it (ch_ppocr_det/text_detect.py, utils.py and
 *	  main.py's sorted_boxes), except that the detector input is capped
 *	  (OCR_DET_MAX_SIDE, OCR_DET_MAX_PIXELS) so a thin image cannot grow
 *	  without bound.
 *
 * The detector runs through model_calls_run(), so its time lands in the
 * calling thread's open model_calls log (fragment.c's timings).
 *
 * Threading: pure functions; the model is only read.
 */
#include "worker/ocr_geometry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/model_calls.h"
#include "worker/preprocess.h"

#define DB_MIN_SIZE 3

/* Area over perimeter of a 4-point polygon (shapely's area and length). */
static double
box_unclip_distance(const geo_pt b[4], double ratio)
{
	double		area = 0,
				len = 0;

	for (int i = 0; i < 4; i++)
	{
		const geo_pt *p = &b[i];
		const geo_pt *q = &b[(i + 1) % 4];
		double		dx = (double) q->x - p->x;
		double		dy = (double) q->y - p->y;

		area += (double) p->x * q->y - (double) q->x * p->y;
		len += sqrt(dx * dx + dy * dy);
	}
	area = fabs(area) / 2;
	return len > 0 ? area * ratio / len : 0;
}

/* order_points_clockwise: two smallest x are the left pair, each pair by y. */
static void
order_clockwise(float b[4][2])
{
	int			idx[4] = {0, 1, 2, 3};
	float		r[4][2];
	int			l0,
				l1,
				r0,
				r1;

	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && b[idx[j - 1]][0] > b[idx[j]][0]; j--)
		{
			int			t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	l0 = idx[0];
	l1 = idx[1];
	if (b[l1][1] < b[l0][1])
	{
		int			t = l0;

		l0 = l1;
		l1 = t;
	}
	r0 = idx[2];
	r1 = idx[3];
	if (b[r1][1] < b[r0][1])
	{
		int			t = r0;

		r0 = r1;
		r1 = t;
	}
	memcpy(r[0], b[l0], sizeof(r[0]));
	memcpy(r[1], b[r0], sizeof(r[0]));
	memcpy(r[2], b[r1], sizeof(r[0]));
	memcpy(r[3], b[l1], sizeof(r[0]));
	memcpy(b, r, sizeof(r));
}

/* Sort by (TL.y, TL.x), stable; then RapidOCR's adjacent swaps within 10 px. */
static void
sort_reading_order(ocr_det_box *b, int n)
{
	for (int i = 1; i < n; i++)
	{
		ocr_det_box t = b[i];
		int			j = i - 1;

		while (j >= 0 && (b[j].pts[0][1] > t.pts[0][1] ||
						  (b[j].pts[0][1] == t.pts[0][1] &&
						   b[j].pts[0][0] > t.pts[0][0])))
		{
			b[j + 1] = b[j];
			j--;
		}
		b[j + 1] = t;
	}
	for (int i = 0; i < n - 1; i++)
		for (int j = i; j >= 0; j--)
		{
			if (fabsf(b[j + 1].pts[0][1] - b[j].pts[0][1]) < 10 &&
				b[j + 1].pts[0][0] < b[j].pts[0][0])
			{
				ocr_det_box t = b[j];

				b[j] = b[j + 1];
				b[j + 1] = t;
			}
			else
				break;
		}
}

/* boxes_from_bitmap + filter_tag_det_res + sorted_boxes (see ocr_geometry.h). */
int
ocr_db_postprocess(const float *prob, int w, int h, int dest_w, int dest_h,
				   const ocr_params *p, ocr_det_box **out, char *err,
				   size_t errlen)
{
	size_t		np = (size_t) w * h;
	uint8_t    *seg = NULL,
			   *mask = NULL;
	geo_contour *cs = NULL;
	int			ncs = 0;
	ocr_det_box *boxes = NULL;
	int			nb = 0;
	float		thr = p->det_thresh;

	*out = NULL;
	seg = malloc(np);
	mask = malloc(np);
	if (seg == NULL || mask == NULL)
		goto nomem;
	for (size_t i = 0; i < np; i++)
		seg[i] = prob[i] > thr;
	geo_dilate2x2(seg, mask, w, h);
	ncs = geo_find_borders(mask, w, h, &cs);
	if (ncs < 0)
		goto nomem;
	if (ncs > p->max_candidates)
		ncs = p->max_candidates;
	boxes = malloc(sizeof(ocr_det_box) * (size_t) (ncs ? ncs : 1));
	if (boxes == NULL)
		goto nomem;

	for (int c = 0; c < ncs; c++)
	{
		geo_pt		pts[4],
					box[4];
		float		sside;
		double		score;
		geo_pt	   *grown = NULL;
		int			ngrown = 0;
		ocr_det_box *ob;
		int			rw,
					rh;

		if (cs[c].n == 0)
			continue;
		if (geo_mini_box(cs[c].pts, cs[c].n, GEO_START_AFTER_TOP_LEFT, pts, &sside) < 0)
			goto nomem;
		if (sside < DB_MIN_SIZE)
			continue;
		score = geo_poly_mean(prob, w, h, pts);
		if (p->box_thresh > score)
			continue;
		if (geo_offset_round(pts, box_unclip_distance(pts, p->unclip_ratio),
							 &grown, &ngrown) < 0)
			goto nomem;
		if (ngrown == 0)
		{
			free(grown);
			continue;
		}
		if (geo_mini_box(grown, ngrown, GEO_START_AFTER_TOP_RIGHT, box, &sside) < 0)
		{
			free(grown);
			goto nomem;
		}
		free(grown);
		if (sside < DB_MIN_SIZE + 2)
			continue;

		ob = &boxes[nb];
		for (int k = 0; k < 4; k++)
		{
			/* float32 arithmetic and half-to-even rounding, as numpy */
			float		x = rintf(box[k].x / (float) w * (float) dest_w);
			float		y = rintf(box[k].y / (float) h * (float) dest_h);

			x = fminf(fmaxf(x, 0), (float) dest_w);
			y = fminf(fmaxf(y, 0), (float) dest_h);
			ob->pts[k][0] = (float) (int) x;
			ob->pts[k][1] = (float) (int) y;
		}
		ob->score = (float) score;

		/* filter_tag_det_res: clockwise order, clip to the image, size */
		order_clockwise(ob->pts);
		for (int k = 0; k < 4; k++)
		{
			ob->pts[k][0] = (float) (int) fminf(fmaxf(ob->pts[k][0], 0), (float) (dest_w - 1));
			ob->pts[k][1] = (float) (int) fminf(fmaxf(ob->pts[k][1], 0), (float) (dest_h - 1));
		}
		rw = (int) hypotf(ob->pts[0][0] - ob->pts[1][0], ob->pts[0][1] - ob->pts[1][1]);
		rh = (int) hypotf(ob->pts[0][0] - ob->pts[3][0], ob->pts[0][1] - ob->pts[3][1]);
		if (rw <= 3 || rh <= 3)
			continue;
		nb++;
	}
	sort_reading_order(boxes, nb);
	geo_contours_free(&cs, ncs);
	free(seg);
	free(mask);
	if (nb == 0)
	{
		free(boxes);
		boxes = NULL;
	}
	*out = boxes;
	return nb;

nomem:
	snprintf(err, errlen, "text detection: out of memory on a %dx%d map", w, h);
	geo_contours_free(&cs, ncs);
	free(seg);
	free(mask);
	free(boxes);
	return -1;
}

/* Python's round(): half to even. */
static int
round_even(double v)
{
	return (int) rint(v);
}

/* DetPreProcess.resize (limit_type "min") with the caps; see ocr_geometry.h. */
void
ocr_det_input_size(int h, int w, int limit_side_len, int *rh, int *rw)
{
	double		ratio = 1.0;
	double		sh,
				sw,
				s;

	if ((h < w ? h : w) < limit_side_len)
		ratio = h < w ? (double) limit_side_len / h : (double) limit_side_len / w;
	sh = (int) (h * ratio);
	sw = (int) (w * ratio);
	*rh = round_even(sh / 32.0) * 32;
	*rw = round_even(sw / 32.0) * 32;
	if (*rh <= OCR_DET_MAX_SIDE && *rw <= OCR_DET_MAX_SIDE &&
		(double) *rh * *rw <= OCR_DET_MAX_PIXELS)
		return;
	/* over a cap: scale the unrounded size into the caps, round down */
	s = OCR_DET_MAX_SIDE / (sh > sw ? sh : sw);
	if (sqrt(OCR_DET_MAX_PIXELS / (sh * sw)) < s)
		s = sqrt(OCR_DET_MAX_PIXELS / (sh * sw));
	*rh = (int) (sh * s) / 32 * 32;
	*rw = (int) (sw * s) / 32 * 32;
}

/* DetPreProcess (limit_type "min", capped), the detector, DB post-processing. */
int
ocr_detect(const ie_model *det, const ocr_params *p, const image_rgb *img,
		   const ie_dimage *dimg, ocr_det_box **out, char *err, size_t errlen)
{
	static const float mean[3] = {0.5f, 0.5f, 0.5f};
	static const float stdv[3] = {0.5f, 0.5f, 0.5f};
	int			h = img->height,
				w = img->width;
	int			rh,
				rw;
	image_rgb  *rs = NULL;
	ie_tensor  *in = NULL;
	ie_tensor  *outs[1] = {NULL};
	const ie_tensor *ins[1];
	int64_t		dims[4];
	int			n;

	*out = NULL;
	ocr_det_input_size(h, w, p->limit_side_len, &rh, &rw);
	if (rh <= 0 || rw <= 0)
		return 0;
	if (ie_model_device(det) != IE_DEVICE_CPU)
	{
		/* the page's pixels to the device (or there already), resized and normalised there */
		ie_image	im = {dimg == NULL ? img->pixels : NULL, w, h, rw, rh, dimg};
		ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, 0.0f, rh, rw};

		if (model_calls_run_images(det, &im, 1, &norm, outs, err, errlen) < 0)
			goto fail;
	}
	else
	{
		rs = pre_resize(img, rw, rh);
		if (rs == NULL)
			goto nomem;
		dims[0] = 1;
		dims[1] = 3;
		dims[2] = rh;
		dims[3] = rw;
		in = ie_tensor_new(IE_FLOAT, 4, dims);
		if (in == NULL)
		{
			model_calls_tensor_failed(err, errlen, "text detection: a %dx%d input", rw, rh);
			goto fail;
		}
		pre_normalize_chw(rs, mean, stdv, 1, in->data, rh, rw, 0);
		image_destroy(&rs);
		ins[0] = in;
		if (model_calls_run(det, ins, outs, err, errlen) < 0)
			goto fail;
	}
	if (outs[0]->dtype != IE_FLOAT || outs[0]->ndim != 4 ||
		outs[0]->dims[0] != 1 || outs[0]->dims[1] != 1)
	{
		snprintf(err, errlen, "text detection: the detector returned an unexpected "
				 "tensor (rank %d, want 1x1xHxW float)", outs[0]->ndim);
		goto fail;
	}
	n = ocr_db_postprocess(outs[0]->data, (int) outs[0]->dims[3],
						   (int) outs[0]->dims[2], w, h, p, out, err, errlen);
	ie_tensor_destroy(&in);
	ie_tensor_destroy(&outs[0]);
	return n;

nomem:
	snprintf(err, errlen, "text detection: out of memory for a %dx%d input", rw, rh);
fail:
	image_destroy(&rs);
	ie_tensor_destroy(&in);
	ie_tensor_destroy(&outs[0]);
	return -1;
}
