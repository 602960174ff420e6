/*
 * ocr_geometry.c
 *	  Contours, hulls, minimum-area rectangles, polygon offset, polygon
 *	  fill, perspective warp: the geometry of the OCR fragment, matching
 *	  OpenCV (and Clipper) where RapidOCR's numbers depend on it.
 *
 * Sources of the algorithms (read, not copied): OpenCV modules/imgproc
 * (contours.cpp, rotcalipers.cpp, drawing.cpp FillEdgeCollection and
 * LineIterator, imgwarp.cpp getPerspectiveTransform / warpPerspective),
 * Angus Johnson's Clipper
 * (ClipperOffset::DoOffset and DoRound).
 *
 * Threading: pure functions, no shared state.
 */
#include "worker/ocr_geometry.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/warp_cubic.h"

#define XY_SHIFT			16
#define XY_ONE				(1 << XY_SHIFT)

/* qsort order for the monotone chain: x, then y. */
static int
pt_cmp(const void *a, const void *b)
{
	const geo_pt *p = a;
	const geo_pt *q = b;

	if (p->x != q->x)
		return p->x < q->x ? -1 : 1;
	if (p->y != q->y)
		return p->y < q->y ? -1 : 1;
	return 0;
}

/* z of (a - o) x (b - o), in double. */
static double
cross(geo_pt o, geo_pt a, geo_pt b)
{
	return ((double) a.x - o.x) * ((double) b.y - o.y) -
		((double) a.y - o.y) * ((double) b.x - o.x);
}

/* Andrew's monotone chain over a sorted copy of the points. */
int
geo_convex_hull(const geo_pt *pts, int n, geo_pt *hull)
{
	geo_pt	   *s;
	int			k = 0;
	int			t;

	if (n <= 0)
		return 0;
	s = malloc(sizeof(geo_pt) * (size_t) n);
	if (s == NULL)
		return 0;
	memcpy(s, pts, sizeof(geo_pt) * (size_t) n);
	qsort(s, (size_t) n, sizeof(geo_pt), pt_cmp);
	if (n == 1 || (s[0].x == s[n - 1].x && s[0].y == s[n - 1].y))
	{
		hull[0] = s[0];
		free(s);
		return 1;
	}
	/* lower chain, then upper chain; hull has room for n points */
	for (int i = 0; i < n; i++)
	{
		while (k >= 2 && cross(hull[k - 2], hull[k - 1], s[i]) <= 0)
			k--;
		hull[k++] = s[i];
	}
	t = k + 1;
	for (int i = n - 2; i >= 0; i--)
	{
		while (k >= t && cross(hull[k - 2], hull[k - 1], s[i]) <= 0)
			k--;
		hull[k++] = s[i];
	}
	free(s);
	return k > 1 ? k - 1 : k;
}

/*
 * OpenCV's rotatingCalipers (CALIPERS_MINAREARECT), in float as OpenCV
 * computes it so that the corners carry the same rounding (RapidOCR
 * truncates them to integers before unclipping, so one ulp matters).
 * hull: n >= 3 points in cv::convexHull's order.  out: the corner point
 * and the two side vectors.
 */
static void
calipers_min_area(const geo_pt *pts, int n, float out[6])
{
	float		minarea = FLT_MAX;
	float	   *inv_len = malloc(sizeof(float) * (size_t) n);
	geo_pt	   *vect = malloc(sizeof(geo_pt) * (size_t) n);
	int			left = 0,
				bottom = 0,
				right = 0,
				top = 0;
	int			seq[4];
	float		orientation = 0;
	float		base_a,
				base_b = 0;
	float		left_x,
				right_x,
				top_y,
				bottom_y;
	geo_pt		pt0 = pts[0];
	int			best_left = 0,
				best_bottom = 0;
	float		best_a = 1,
				best_b = 0,
				best_w = 0,
				best_h = 0;

	if (inv_len == NULL || vect == NULL)
	{
		free(inv_len);
		free(vect);
		memset(out, 0, sizeof(float) * 6);
		return;
	}
	left_x = right_x = pt0.x;
	top_y = bottom_y = pt0.y;
	for (int i = 0; i < n; i++)
	{
		double		dx,
					dy;
		geo_pt		pt;

		if (pt0.x < left_x)
			left_x = pt0.x, left = i;
		if (pt0.x > right_x)
			right_x = pt0.x, right = i;
		if (pt0.y > top_y)
			top_y = pt0.y, top = i;
		if (pt0.y < bottom_y)
			bottom_y = pt0.y, bottom = i;
		pt = pts[i + 1 < n ? i + 1 : 0];
		dx = (double) pt.x - pt0.x;
		dy = (double) pt.y - pt0.y;
		vect[i].x = (float) dx;
		vect[i].y = (float) dy;
		inv_len[i] = (float) (1. / sqrt(dx * dx + dy * dy));
		pt0 = pt;
	}
	{
		double		ax = vect[n - 1].x;
		double		ay = vect[n - 1].y;

		for (int i = 0; i < n; i++)
		{
			double		bx = vect[i].x;
			double		by = vect[i].y;
			double		convexity = ax * by - ay * bx;

			if (convexity != 0)
			{
				orientation = convexity > 0 ? 1.f : -1.f;
				break;
			}
			ax = bx;
			ay = by;
		}
	}
	base_a = orientation;
	seq[0] = bottom;
	seq[1] = right;
	seq[2] = top;
	seq[3] = left;
	for (int k = 0; k < n; k++)
	{
		int			main_element = 0;
		float		dp[4];
		float		maxcos;
		int			pindex;
		float		lead_x,
					lead_y;

		dp[0] = +base_a * vect[seq[0]].x + base_b * vect[seq[0]].y;
		dp[1] = -base_b * vect[seq[1]].x + base_a * vect[seq[1]].y;
		dp[2] = -base_a * vect[seq[2]].x - base_b * vect[seq[2]].y;
		dp[3] = +base_b * vect[seq[3]].x - base_a * vect[seq[3]].y;
		maxcos = dp[0] * inv_len[seq[0]];
		for (int i = 1; i < 4; i++)
		{
			float		cosalpha = dp[i] * inv_len[seq[i]];

			if (cosalpha > maxcos)
			{
				main_element = i;
				maxcos = cosalpha;
			}
		}
		pindex = seq[main_element];
		lead_x = vect[pindex].x * inv_len[pindex];
		lead_y = vect[pindex].y * inv_len[pindex];
		switch (main_element)
		{
			case 0:
				base_a = lead_x;
				base_b = lead_y;
				break;
			case 1:
				base_a = lead_y;
				base_b = -lead_x;
				break;
			case 2:
				base_a = -lead_x;
				base_b = -lead_y;
				break;
			default:
				base_a = -lead_y;
				base_b = lead_x;
				break;
		}
		seq[main_element] += 1;
		if (seq[main_element] == n)
			seq[main_element] = 0;
		{
			float		dx = pts[seq[1]].x - pts[seq[3]].x;
			float		dy = pts[seq[1]].y - pts[seq[3]].y;
			float		width = dx * base_a + dy * base_b;
			float		height,
						area;

			dx = pts[seq[2]].x - pts[seq[0]].x;
			dy = pts[seq[2]].y - pts[seq[0]].y;
			height = -dx * base_b + dy * base_a;
			area = width * height;
			if (area <= minarea)
			{
				minarea = area;
				best_left = seq[3];
				best_a = base_a;
				best_w = width;
				best_b = base_b;
				best_h = height;
				best_bottom = seq[0];
			}
		}
	}
	{
		float		A1 = best_a;
		float		B1 = best_b;
		float		A2 = -best_b;
		float		B2 = best_a;
		float		C1 = A1 * pts[best_left].x + pts[best_left].y * B1;
		float		C2 = A2 * pts[best_bottom].x + pts[best_bottom].y * B2;
		float		idet = 1.f / (A1 * B2 - A2 * B1);

		out[0] = (C1 * B2 - C2 * B1) * idet;
		out[1] = (A1 * C2 - A2 * C1) * idet;
		out[2] = A1 * best_w;
		out[3] = B1 * best_w;
		out[4] = A2 * best_h;
		out[5] = B2 * best_h;
	}
	free(inv_len);
	free(vect);
}

/*
 * cv::minAreaRect as opencv-python 5.0 computes it (checked bit for bit on
 * random point sets): the hull clockwise on screen from the vertex chosen
 * by start_at, rotating calipers in float, centre and sizes in float, the
 * angle in double degrees turned by quarters (swapping the sides) into
 * [-90, 0) and then rounded to float.
 */
int
geo_min_area_rect(const geo_pt *pts, int n, geo_hull_start start_at,
				  geo_rrect *r)
{
	geo_pt	   *hull,
			   *h2;
	int			m;
	double		deg = 0;

	memset(r, 0, sizeof(*r));
	if (n <= 0)
		return 0;
	hull = malloc(sizeof(geo_pt) * (size_t) (n + 1) * 2);
	if (hull == NULL)
		return -1;
	h2 = hull + n + 1;
	m = geo_convex_hull(pts, n, hull);
	if (m >= 3)
	{
		int			start = 0;
		float		out[6];

		/* our chain runs clockwise on screen, as OpenCV's list does here */
		for (int i = 1; i < m; i++)
		{
			const geo_pt *p = &hull[i],
					   *q = &hull[start];
			int			better;

			if (start_at == GEO_START_LEFT)
				better = p->x < q->x || (p->x == q->x && p->y < q->y);
			else if (start_at == GEO_START_AFTER_TOP_LEFT)
				better = p->y < q->y || (p->y == q->y && p->x < q->x);
			else
				better = p->y < q->y || (p->y == q->y && p->x > q->x);
			if (better)
				start = i;
		}
		if (start_at != GEO_START_LEFT)
			start = (start + 1) % m;
		for (int i = 0; i < m; i++)
			h2[i] = hull[(start + i) % m];
		calipers_min_area(h2, m, out);
		r->cx = out[0] + (out[2] + out[4]) * 0.5f;
		r->cy = out[1] + (out[3] + out[5]) * 0.5f;
		r->w = (float) sqrt((double) out[2] * out[2] + (double) out[3] * out[3]);
		r->h = (float) sqrt((double) out[4] * out[4] + (double) out[5] * out[5]);
		deg = atan2((double) out[3], (double) out[2]) * 180 / M_PI;
	}
	else if (m == 2)
	{
		double		dx = (double) hull[1].x - hull[0].x;
		double		dy = (double) hull[1].y - hull[0].y;

		/* convexHull lists the larger point first */
		r->cx = (hull[0].x + hull[1].x) * 0.5f;
		r->cy = (hull[0].y + hull[1].y) * 0.5f;
		r->w = (float) sqrt(dx * dx + dy * dy);
		r->h = 0;
		deg = atan2(-dy, -dx) * 180 / M_PI;
	}
	else if (m == 1)
	{
		r->cx = hull[0].x;
		r->cy = hull[0].y;
	}
	{
		/* OpenCV 5 reports angles in [-90, 0), turning by quarters */
		while (deg >= 0 && (r->w > 0 || r->h > 0))
		{
			float		t = r->w;

			r->w = r->h;
			r->h = t;
			deg -= 90;
		}
		while (deg < -90)
		{
			float		t = r->w;

			r->w = r->h;
			r->h = t;
			deg += 90;
		}
		r->angle = (float) deg;
	}
	free(hull);
	return 0;
}

/* cv::RotatedRect::points (OpenCV 5): float corners from the angle's cos and sin. */
void
geo_rrect_points(const geo_rrect *r, geo_pt out[4])
{
	double		ang = r->angle * M_PI / 180.;
	float		b = (float) cos(ang) * 0.5f;
	float		a = (float) sin(ang) * 0.5f;

	out[0].x = r->cx - a * r->h - b * r->w;
	out[0].y = r->cy + b * r->h - a * r->w;
	out[1].x = r->cx + a * r->h - b * r->w;
	out[1].y = r->cy - b * r->h - a * r->w;
	out[2].x = r->cx + a * r->h + b * r->w;
	out[2].y = r->cy - b * r->h + a * r->w;
	out[3].x = r->cx - a * r->h + b * r->w;
	out[3].y = r->cy + b * r->h + a * r->w;
}

/* get_mini_boxes: stable x-sort, then the two left / two right by y. */
int
geo_mini_box(const geo_pt *pts, int n, geo_hull_start start, geo_pt box[4],
			 float *sside)
{
	geo_rrect	r;
	geo_pt		p[4];
	int			i1,
				i2,
				i3,
				i4;

	if (geo_min_area_rect(pts, n, start, &r) < 0)
		return -1;
	geo_rrect_points(&r, p);
	/* insertion sort by x keeps ties in order (Python's sorted is stable) */
	for (int i = 1; i < 4; i++)
	{
		geo_pt		t = p[i];
		int			j = i - 1;

		while (j >= 0 && p[j].x > t.x)
		{
			p[j + 1] = p[j];
			j--;
		}
		p[j + 1] = t;
	}
	if (p[1].y > p[0].y)
	{
		i1 = 0;
		i4 = 1;
	}
	else
	{
		i1 = 1;
		i4 = 0;
	}
	if (p[3].y > p[2].y)
	{
		i2 = 2;
		i3 = 3;
	}
	else
	{
		i2 = 3;
		i3 = 2;
	}
	box[0] = p[i1];
	box[1] = p[i2];
	box[2] = p[i3];
	box[3] = p[i4];
	*sside = r.w < r.h ? r.w : r.h;
	return 0;
}

/* Clipper's Round(): half away from zero. */
static double
clip_round(double v)
{
	return v < 0 ? ceil(v - 0.5) : floor(v + 0.5);
}

/* ClipperOffset on one closed polygon with round joins. */
int
geo_offset_round(const geo_pt box[4], double delta, geo_pt **out, int *n_out)
{
	double		px[4],
				py[4],
				nx[4],
				ny[4];
	int			n = 0;
	double		area = 0;
	double		tol,
				steps,
				sn,
				cs,
				steps_per_rad;
	int			cap,
				k;
	geo_pt	   *o;

	*out = NULL;
	*n_out = 0;
	/* truncate to integers, drop repeated points */
	for (int i = 0; i < 4; i++)
	{
		double		x = trunc((double) box[i].x);
		double		y = trunc((double) box[i].y);

		if (n > 0 && px[n - 1] == x && py[n - 1] == y)
			continue;
		px[n] = x;
		py[n] = y;
		n++;
	}
	while (n > 1 && px[n - 1] == px[0] && py[n - 1] == py[0])
		n--;
	if (n < 3)
		return 0;
	for (int i = 0; i < n; i++)
		area += px[i] * py[(i + 1) % n] - px[(i + 1) % n] * py[i];
	if (area < 0)
	{
		/* reverse, so that the normal (dy, -dx) points outward */
		for (int i = 0; i < n / 2; i++)
		{
			double		t = px[i];

			px[i] = px[n - 1 - i];
			px[n - 1 - i] = t;
			t = py[i];
			py[i] = py[n - 1 - i];
			py[n - 1 - i] = t;
		}
	}
	for (int i = 0; i < n; i++)
	{
		double		dx = px[(i + 1) % n] - px[i];
		double		dy = py[(i + 1) % n] - py[i];
		double		f = 1.0 / sqrt(dx * dx + dy * dy);

		nx[i] = dy * f;
		ny[i] = -dx * f;
	}
	tol = 0.25;
	if (tol > fabs(delta) * 0.25)
		tol = fabs(delta) * 0.25;
	steps = M_PI / acos(1 - tol / fabs(delta));
	if (steps > fabs(delta) * M_PI)
		steps = fabs(delta) * M_PI;
	sn = sin(2 * M_PI / steps);
	cs = cos(2 * M_PI / steps);
	steps_per_rad = steps / (2 * M_PI);
	if (delta < 0)
		sn = -sn;
	cap = n * ((int) steps + 4) + 8;
	o = malloc(sizeof(geo_pt) * (size_t) cap);
	if (o == NULL)
		return -1;
	k = n - 1;
	for (int j = 0; j < n; j++)
	{
		double		sin_a = nx[k] * ny[j] - nx[j] * ny[k];
		double		cos_a = nx[j] * nx[k] + ny[j] * ny[k];

		if (fabs(sin_a * delta) < 1.0 && cos_a > 0)
		{
			o[(*n_out)++] = (geo_pt) {(float) clip_round(px[j] + nx[k] * delta),
			(float) clip_round(py[j] + ny[k] * delta)};
		}
		else
		{
			if (sin_a > 1.0)
				sin_a = 1.0;
			else if (sin_a < -1.0)
				sin_a = -1.0;
			if (sin_a * delta < 0)
			{
				o[(*n_out)++] = (geo_pt) {(float) clip_round(px[j] + nx[k] * delta),
				(float) clip_round(py[j] + ny[k] * delta)};
				o[(*n_out)++] = (geo_pt) {(float) px[j], (float) py[j]};
				o[(*n_out)++] = (geo_pt) {(float) clip_round(px[j] + nx[j] * delta),
				(float) clip_round(py[j] + ny[j] * delta)};
			}
			else
			{
				double		a = atan2(sin_a, cos_a);
				int			st = (int) clip_round(steps_per_rad * fabs(a));
				double		x = nx[k],
							y = ny[k];

				if (st < 1)
					st = 1;
				for (int i = 0; i < st && *n_out < cap - 1; i++)
				{
					double		x2 = x;

					o[(*n_out)++] = (geo_pt) {(float) clip_round(px[j] + x * delta),
					(float) clip_round(py[j] + y * delta)};
					x = x * cs - sn * y;
					y = x2 * sn + y * cs;
				}
				o[(*n_out)++] = (geo_pt) {(float) clip_round(px[j] + nx[j] * delta),
				(float) clip_round(py[j] + ny[j] * delta)};
			}
		}
		k = j;
	}
	*out = o;
	return 0;
}

/* Sets mask[y][x] when (x, y) is inside the mask's bounds. */
static void
mask_set(uint8_t *mask, int w, int h, int x, int y)
{
	if (x >= 0 && x < w && y >= 0 && y < h)
		mask[(size_t) y * w + x] = 1;
}

/* 8-connected line from a to b, as OpenCV's LineIterator (left to right). */
static void
mask_line(uint8_t *mask, int w, int h, int x0, int y0, int x1, int y1)
{
	int			dx,
				dy,
				sy,
				err,
				count;
	int			ymajor;

	if (x1 < x0)
	{
		int			t = x0;

		x0 = x1;
		x1 = t;
		t = y0;
		y0 = y1;
		y1 = t;
	}
	dx = x1 - x0;
	dy = y1 - y0;
	sy = dy < 0 ? -1 : 1;
	dy = abs(dy);
	ymajor = dy > dx;
	if (ymajor)
	{
		int			t = dx;

		dx = dy;
		dy = t;
	}
	err = dx - 2 * dy;
	count = dx + 1;
	for (int i = 0; i < count; i++)
	{
		int			neg = err < 0;

		mask_set(mask, w, h, x0, y0);
		err += -2 * dy + (neg ? 2 * dx : 0);
		if (ymajor)
		{
			y0 += sy;
			if (neg)
				x0 += 1;
		}
		else
		{
			x0 += 1;
			if (neg)
				y0 += sy;
		}
	}
}

/* cv::fillPoly (lineType 8, shift 0) of one polygon with integer corners. */
static void
mask_fill_poly(uint8_t *mask, int w, int h, const int (*v)[2], int n)
{
	int			ymin = INT_MAX,
				ymax = INT_MIN;

	for (int i = 0; i < n; i++)
	{
		const int  *a = v[(i + n - 1) % n];
		const int  *b = v[i];

		mask_line(mask, w, h, a[0], a[1], b[0], b[1]);
		if (b[1] < ymin)
			ymin = b[1];
		if (b[1] > ymax)
			ymax = b[1];
	}
	/* scanlines: each edge covers y0 <= y < y1, x fills [ceil(xl), floor(xr)] */
	for (int y = ymin < 0 ? 0 : ymin; y < ymax && y < h; y++)
	{
		int64_t		xs[8];
		int			nx = 0;

		for (int i = 0; i < n && nx < 8; i++)
		{
			const int  *a = v[(i + n - 1) % n];
			const int  *b = v[i];
			int64_t		x0,
						x1,
						dxf;
			int			y0,
						y1;

			if (a[1] == b[1])
				continue;
			/* "* XY_ONE", not "<< XY_SHIFT": x can be negative, and a left
			 * shift of a negative value is undefined (UBSan, check-asan) */
			if (a[1] < b[1])
			{
				y0 = a[1];
				y1 = b[1];
				x0 = (int64_t) a[0] * XY_ONE;
				x1 = (int64_t) b[0] * XY_ONE;
			}
			else
			{
				y0 = b[1];
				y1 = a[1];
				x0 = (int64_t) b[0] * XY_ONE;
				x1 = (int64_t) a[0] * XY_ONE;
			}
			if (y < y0 || y >= y1)
				continue;
			dxf = (x1 - x0) / (y1 - y0);
			xs[nx++] = x0 + dxf * (y - y0);
		}
		/* sort the crossings; fill between pairs */
		for (int i = 1; i < nx; i++)
			for (int j = i; j > 0 && xs[j - 1] > xs[j]; j--)
			{
				int64_t		t = xs[j];

				xs[j] = xs[j - 1];
				xs[j - 1] = t;
			}
		for (int i = 0; i + 1 < nx; i += 2)
		{
			int			xa = (int) ((xs[i] + XY_ONE - 1) >> XY_SHIFT);
			int			xb = (int) (xs[i + 1] >> XY_SHIFT);

			if (xa < 0)
				xa = 0;
			if (xb >= w)
				xb = w - 1;
			for (int x = xa; x <= xb; x++)
				mask[(size_t) y * w + x] = 1;
		}
	}
}

/* box_score_fast: bounding box clip, fillPoly on truncated corners, mean. */
double
geo_poly_mean(const float *map, int w, int h, const geo_pt box[4])
{
	float		fxmin = box[0].x,
				fxmax = box[0].x,
				fymin = box[0].y,
				fymax = box[0].y;
	int			xmin,
				xmax,
				ymin,
				ymax,
				mw,
				mh;
	int			v[4][2];
	uint8_t    *mask;
	double		sum = 0;
	long		cnt = 0;

	for (int i = 1; i < 4; i++)
	{
		fxmin = fminf(fxmin, box[i].x);
		fxmax = fmaxf(fxmax, box[i].x);
		fymin = fminf(fymin, box[i].y);
		fymax = fmaxf(fymax, box[i].y);
	}
	xmin = (int) floorf(fxmin);
	xmax = (int) ceilf(fxmax);
	ymin = (int) floorf(fymin);
	ymax = (int) ceilf(fymax);
	xmin = xmin < 0 ? 0 : (xmin > w - 1 ? w - 1 : xmin);
	xmax = xmax < 0 ? 0 : (xmax > w - 1 ? w - 1 : xmax);
	ymin = ymin < 0 ? 0 : (ymin > h - 1 ? h - 1 : ymin);
	ymax = ymax < 0 ? 0 : (ymax > h - 1 ? h - 1 : ymax);
	mw = xmax - xmin + 1;
	mh = ymax - ymin + 1;
	if (mw <= 0 || mh <= 0)
		return 0;
	mask = calloc((size_t) mw * mh, 1);
	if (mask == NULL)
		return 0;
	for (int i = 0; i < 4; i++)
	{
		v[i][0] = (int) (box[i].x - (float) xmin);
		v[i][1] = (int) (box[i].y - (float) ymin);
	}
	mask_fill_poly(mask, mw, mh, (const int (*)[2]) v, 4);
	for (int y = 0; y < mh; y++)
		for (int x = 0; x < mw; x++)
			if (mask[(size_t) y * mw + x])
			{
				sum += map[(size_t) (y + ymin) * w + x + xmin];
				cnt++;
			}
	free(mask);
	return cnt ? sum / (double) cnt : 0;
}

/* dst(x,y) = max of src over x-1..x, y-1..y (cv::dilate, 2x2 ones). */
void
geo_dilate2x2(const uint8_t *src, uint8_t *dst, int w, int h)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			uint8_t		m = src[(size_t) y * w + x];

			if (x > 0 && src[(size_t) y * w + x - 1] > m)
				m = src[(size_t) y * w + x - 1];
			if (y > 0)
			{
				if (src[(size_t) (y - 1) * w + x] > m)
					m = src[(size_t) (y - 1) * w + x];
				if (x > 0 && src[(size_t) (y - 1) * w + x - 1] > m)
					m = src[(size_t) (y - 1) * w + x - 1];
			}
			dst[(size_t) y * w + x] = m;
		}
}

/* Union-find root with path halving. */
static int
uf_find(int *parent, int i)
{
	while (parent[i] != i)
	{
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/* Joins the sets of a and b under the smaller root (raster order kept). */
static void
uf_union(int *parent, int a, int b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a < b)
		parent[b] = a;
	else if (b < a)
		parent[a] = b;
}

/* The border list being built: contours, their capacities, hole owners. */
typedef struct border_set
{
	geo_contour *c;
	int		   *cap;			/* points allocated in c[i] */
	int		   *owner;			/* outer contour of a hole, -1 for outer */
	int			n;
	int			alloc;
} border_set;

/* Opens a new empty contour; its index, or -1 when memory runs out. */
static int
border_open(border_set *bs, int owner)
{
	if (bs->n == bs->alloc)
	{
		int			na = bs->alloc ? bs->alloc * 2 : 64;
		geo_contour *c = realloc(bs->c, sizeof(geo_contour) * (size_t) na);
		int		   *cap,
				   *own;

		if (c == NULL)
			return -1;
		bs->c = c;
		cap = realloc(bs->cap, sizeof(int) * (size_t) na);
		if (cap == NULL)
			return -1;
		bs->cap = cap;
		own = realloc(bs->owner, sizeof(int) * (size_t) na);
		if (own == NULL)
			return -1;
		bs->owner = own;
		bs->alloc = na;
	}
	bs->c[bs->n].n = 0;
	bs->c[bs->n].pts = NULL;
	bs->cap[bs->n] = 0;
	bs->owner[bs->n] = owner;
	return bs->n++;
}

/* Appends pixel (x, y) to contour i; -1 when memory runs out. */
static int
border_push(border_set *bs, int i, int x, int y)
{
	geo_contour *c = &bs->c[i];

	if (c->n == bs->cap[i])
	{
		int			nc = bs->cap[i] ? bs->cap[i] * 2 : 16;
		geo_pt	   *np = realloc(c->pts, sizeof(geo_pt) * (size_t) nc);

		if (np == NULL)
			return -1;
		c->pts = np;
		bs->cap[i] = nc;
	}
	c->pts[c->n].x = (float) x;
	c->pts[c->n].y = (float) y;
	c->n++;
	return 0;
}

/*
 * Components by union-find (foreground 8-connected, background 4-connected
 * with a virtual "outside" node joined to every edge pixel), then one
 * raster pass that files each border pixel under its component and under
 * every hole it touches.
 */
int
geo_find_borders(const uint8_t *mask, int w, int h, geo_contour **out)
{
	size_t		np = (size_t) w * h;
	int		   *parent = NULL;
	int		   *slot = NULL;	/* root pixel -> contour index */
	border_set	bs = {0};
	geo_contour *sorted = NULL;
	int			outside = (int) np;
	int			outside_root,
				k = 0;

	*out = NULL;
	parent = malloc(sizeof(int) * (np + 1));
	slot = malloc(sizeof(int) * (np + 1));
	if (parent == NULL || slot == NULL)
		goto fail;
	for (size_t i = 0; i <= np; i++)
	{
		parent[i] = (int) i;
		slot[i] = -1;
	}
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			int			i = y * w + x;

			if (mask[i])
			{
				if (x > 0 && mask[i - 1])
					uf_union(parent, i, i - 1);
				if (y > 0)
				{
					if (mask[i - w])
						uf_union(parent, i, i - w);
					if (x > 0 && mask[i - w - 1])
						uf_union(parent, i, i - w - 1);
					if (x + 1 < w && mask[i - w + 1])
						uf_union(parent, i, i - w + 1);
				}
			}
			else
			{
				if (x > 0 && !mask[i - 1])
					uf_union(parent, i, i - 1);
				if (y > 0 && !mask[i - w])
					uf_union(parent, i, i - w);
				if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
					uf_union(parent, i, outside);
			}
		}
	outside_root = uf_find(parent, outside);

	/*
	 * Outer borders: foreground pixels with a 4-neighbour in the background
	 * or off the image.  Hole borders: foreground pixels 4-adjacent to a
	 * background component other than the outside (what OpenCV traces for
	 * a hole, its diagonal corners aside, which never change the hull).
	 */
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
		{
			int			i = y * w + x;
			int			nb[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
			int			edge = 0;
			int			r;

			if (!mask[i])
				continue;
			r = uf_find(parent, i);
			if (slot[r] < 0 && (slot[r] = border_open(&bs, -1)) < 0)
				goto fail;
			for (int d = 0; d < 4; d++)
			{
				int			qx = nb[d][0],
							qy = nb[d][1],
							qr;
				geo_contour *hc;

				if (qx < 0 || qy < 0 || qx >= w || qy >= h)
				{
					edge = 1;
					continue;
				}
				if (mask[qy * w + qx])
					continue;
				edge = 1;
				qr = uf_find(parent, qy * w + qx);
				if (qr == outside_root)
					continue;
				if (slot[qr] < 0 && (slot[qr] = border_open(&bs, slot[r])) < 0)
					goto fail;
				/* the same pixel may touch the hole from two sides */
				hc = &bs.c[slot[qr]];
				if (hc->n > 0 && hc->pts[hc->n - 1].x == x && hc->pts[hc->n - 1].y == y)
					continue;
				if (border_push(&bs, slot[qr], x, y) < 0)
					goto fail;
			}
			if (edge && border_push(&bs, slot[r], x, y) < 0)
				goto fail;
		}

	/* each component followed by its holes */
	sorted = malloc(sizeof(geo_contour) * (size_t) (bs.n ? bs.n : 1));
	if (sorted == NULL)
		goto fail;
	for (int i = 0; i < bs.n; i++)
	{
		if (bs.owner[i] >= 0)
			continue;
		sorted[k++] = bs.c[i];
		for (int j = i + 1; j < bs.n; j++)
			if (bs.owner[j] == i)
				sorted[k++] = bs.c[j];
	}
	free(bs.c);
	free(bs.cap);
	free(bs.owner);
	free(parent);
	free(slot);
	*out = sorted;
	return k;

fail:
	for (int i = 0; i < bs.n; i++)
		free(bs.c[i].pts);
	free(bs.c);
	free(bs.cap);
	free(bs.owner);
	free(parent);
	free(slot);
	return -1;
}

/* Frees the contours and their points; sets *c to NULL. */
void
geo_contours_free(geo_contour **c, int n)
{
	if (*c == NULL)
		return;
	for (int i = 0; i < n; i++)
		free((*c)[i].pts);
	free(*c);
	*c = NULL;
}

/* Gaussian elimination with partial pivoting on an n x (n+1) system. */
static int
solve_linear(double *a, int n, double *x)
{
	for (int i = 0; i < n; i++)
	{
		int			p = i;

		for (int r = i + 1; r < n; r++)
			if (fabs(a[r * (n + 1) + i]) > fabs(a[p * (n + 1) + i]))
				p = r;
		if (fabs(a[p * (n + 1) + i]) < 1e-300)
			return -1;
		if (p != i)
			for (int k = 0; k <= n; k++)
			{
				double		t = a[i * (n + 1) + k];

				a[i * (n + 1) + k] = a[p * (n + 1) + k];
				a[p * (n + 1) + k] = t;
			}
		for (int r = i + 1; r < n; r++)
		{
			double		f = a[r * (n + 1) + i] / a[i * (n + 1) + i];

			for (int k = i; k <= n; k++)
				a[r * (n + 1) + k] -= f * a[i * (n + 1) + k];
		}
	}
	for (int i = n - 1; i >= 0; i--)
	{
		double		s = a[i * (n + 1) + n];

		for (int k = i + 1; k < n; k++)
			s -= a[i * (n + 1) + k] * x[k];
		x[i] = s / a[i * (n + 1) + i];
	}
	return 0;
}

/* cv::getPerspectiveTransform's 8x8 system. */
int
geo_perspective(const float src[4][2], const float dst[4][2], double M[9])
{
	double		a[8 * 9];
	double		x[8];

	memset(a, 0, sizeof(a));
	for (int i = 0; i < 4; i++)
	{
		double	   *r0 = &a[i * 9];
		double	   *r1 = &a[(i + 4) * 9];

		r0[0] = r1[3] = src[i][0];
		r0[1] = r1[4] = src[i][1];
		r0[2] = r1[5] = 1;
		r0[6] = -(double) src[i][0] * dst[i][0];
		r0[7] = -(double) src[i][1] * dst[i][0];
		r1[6] = -(double) src[i][0] * dst[i][1];
		r1[7] = -(double) src[i][1] * dst[i][1];
		r0[8] = dst[i][0];
		r1[8] = dst[i][1];
	}
	if (solve_linear(a, 8, x) < 0)
		return -1;
	memcpy(M, x, sizeof(x));
	M[8] = 1;
	return 0;
}

/* 3x3 inverse by the adjugate (what cv::invert does for 3x3 with LU). */
static int
invert3(const double m[9], double r[9])
{
	double		d = m[0] * (m[4] * m[8] - m[5] * m[7]) -
		m[1] * (m[3] * m[8] - m[5] * m[6]) +
		m[2] * (m[3] * m[7] - m[4] * m[6]);

	if (d == 0)
		return -1;
	d = 1.0 / d;
	r[0] = (m[4] * m[8] - m[5] * m[7]) * d;
	r[1] = (m[2] * m[7] - m[1] * m[8]) * d;
	r[2] = (m[1] * m[5] - m[2] * m[4]) * d;
	r[3] = (m[5] * m[6] - m[3] * m[8]) * d;
	r[4] = (m[0] * m[8] - m[2] * m[6]) * d;
	r[5] = (m[2] * m[3] - m[0] * m[5]) * d;
	r[6] = (m[3] * m[7] - m[4] * m[6]) * d;
	r[7] = (m[1] * m[6] - m[0] * m[7]) * d;
	r[8] = (m[0] * m[4] - m[1] * m[3]) * d;
	return 0;
}

/*
 * warpPerspective as opencv-python 5.0 computes it for INTER_CUBIC on 8-bit
 * images (checked pixel for pixel): each pixel by ie_warp_cubic_px
 * (worker/engine/warp_cubic.h, shared with the CUDA backend's warp).
 */
image_rgb *
geo_warp_perspective(const image_rgb *src, const double M[9], int out_w,
					 int out_h)
{
	double		mi[9];
	image_rgb  *dst;

	if (invert3(M, mi) < 0)
		return NULL;
	dst = image_new(out_w, out_h);
	if (dst == NULL)
		return NULL;
	for (int y = 0; y < out_h; y++)
		for (int x = 0; x < out_w; x++)
			ie_warp_cubic_px(src->pixels, src->width, src->height, mi, x, y,
							 dst->pixels + ((size_t) y * out_w + x) * 3);
	return dst;
}

/* np.rot90: out[i][j] = in[j][W - 1 - i]. */
image_rgb *
geo_rot90_ccw(const image_rgb *src)
{
	image_rgb  *dst = image_new(src->height, src->width);

	if (dst == NULL)
		return NULL;
	/* out[i][j] = in[j][W - 1 - i]; out is W rows of H pixels */
	for (int i = 0; i < src->width; i++)
		for (int j = 0; j < src->height; j++)
			memcpy(dst->pixels + ((size_t) i * src->height + j) * 3,
				   src->pixels + ((size_t) j * src->width + (src->width - 1 - i)) * 3, 3);
	return dst;
}

/* Length of a - b in float, as np.linalg.norm on float32 rows. */
static float
seg_len(const float a[2], const float b[2])
{
	float		dx = a[0] - b[0];
	float		dy = a[1] - b[1];

	return sqrtf(dx * dx + dy * dy);
}

/* get_rotate_crop_image's geometry; see ocr_geometry.h. */
int
geo_crop_plan(const float box[4][2], double Minv[9], int *out_w, int *out_h, int *rot90)
{
	int			cw = (int) fmaxf(seg_len(box[0], box[1]), seg_len(box[2], box[3]));
	int			ch = (int) fmaxf(seg_len(box[0], box[3]), seg_len(box[1], box[2]));
	float		std[4][2];
	double		M[9];

	if (cw <= 0 || ch <= 0)
		return -1;
	std[0][0] = 0;
	std[0][1] = 0;
	std[1][0] = (float) cw;
	std[1][1] = 0;
	std[2][0] = (float) cw;
	std[2][1] = (float) ch;
	std[3][0] = 0;
	std[3][1] = (float) ch;
	if (geo_perspective(box, (const float (*)[2]) std, M) < 0 || invert3(M, Minv) < 0)
		return -1;
	*out_w = cw;
	*out_h = ch;
	*rot90 = (double) ch / (double) cw >= 1.5;
	return 0;
}

/* get_rotate_crop_image: perspective crop, then upright when tall. */
image_rgb *
geo_crop_box(const image_rgb *img, const float box[4][2])
{
	double		mi[9];
	int			cw,
				ch,
				rot90;
	image_rgb  *crop,
			   *rot;

	if (geo_crop_plan(box, mi, &cw, &ch, &rot90) < 0)
		return NULL;
	crop = image_new(cw, ch);
	if (crop == NULL)
		return NULL;
	for (int y = 0; y < ch; y++)
		for (int x = 0; x < cw; x++)
			ie_warp_cubic_px(img->pixels, img->width, img->height, mi, x, y,
							 crop->pixels + ((size_t) y * cw + x) * 3);
	if (rot90)
	{
		rot = geo_rot90_ccw(crop);
		image_destroy(&crop);
		return rot;
	}
	return crop;
}
