/*
 * ops_vision.c
 *	  ONNX operators of detection and spatial-transformer models:
 *	  NonMaxSuppression, GridSample, AffineGrid and RoiAlign (float32,
 *	  float64 where the spec allows it).
 *
 * Semantics are those of ONNX Operators.md and of its reference
 * implementations (onnx/reference/ops/op_non_max_suppression.py,
 * op_grid_sample.py, op_affine_grid.py, op_roi_align.py), which follow
 * ONNX Runtime's CPU kernels.  GridSample's cubic weights are Keys'
 * (A = -0.75), shared with the image warp (warp_cubic.h).
 *
 * Threading: no state outside the call.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/warp_cubic.h"

/* Element i of a float or double tensor, as double. */
static inline double
fval(const ie_tensor *t, int64_t i)
{
	return t->dtype == IE_FLOAT ? ((const float *) t->data)[i] :
		((const double *) t->data)[i];
}

/* Stores v into element i of a float or double tensor. */
static inline void
fset(ie_tensor *t, int64_t i, double v)
{
	if (t->dtype == IE_FLOAT)
		((float *) t->data)[i] = (float) v;
	else
		((double *) t->data)[i] = v;
}

/* -1 after an error unless t is float or double; what names it. */
static int
check_float(ie_node_ctx *ctx, const ie_tensor *t, const char *what)
{
	if (t->dtype != IE_FLOAT && t->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "%s type %s is not supported (only float, double)",
						   what, ie_dtype_name(t->dtype));
	return 0;
}

/* ---------------------------------------------------------------- NMS */

/* NonMaxSuppression's center_point_box: 0 or 1. */
static int
nms_check_attrs(ie_node_ctx *ctx)
{
	int64_t		cpb = ie_attr_int(ctx, "center_point_box", 0);

	if (cpb != 0 && cpb != 1)
		return ie_op_error(ctx, "center_point_box %lld must be 0 or 1", (long long) cpb);
	return 0;
}

/* A candidate box of one class: its score and index. */
typedef struct nms_box
{
	float		score;
	int64_t		idx;
} nms_box;

/*
 * Higher score first; for equal scores, the lower index first; a NaN
 * score after every number (a total order: qsort's comparator must be
 * consistent, which x->score != y->score alone is not with a NaN).
 */
static int
nms_box_cmp(const void *a, const void *b)
{
	const nms_box *x = a,
			   *y = b;
	bool		xn = isnan(x->score),
				yn = isnan(y->score);

	if (xn != yn)
		return xn ? 1 : -1;
	if (!xn && x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->idx < y->idx ? -1 : (x->idx > y->idx ? 1 : 0);
}

/* The extent [lo, hi] of box b (4 floats) along axis 0 (y) or 1 (x). */
static void
nms_extent(const float *b, int center, int axis, float *lo, float *hi)
{
	if (center)
	{
		/* [x_center, y_center, width, height] */
		float		c = b[axis == 1 ? 0 : 1],
					h = b[axis == 1 ? 2 : 3] / 2;

		*lo = c - h;
		*hi = c + h;
	}
	else
	{
		/* [y1, x1, y2, x2], either corner first */
		float		p = b[axis],
					q = b[axis + 2];

		*lo = p < q ? p : q;
		*hi = p < q ? q : p;
	}
}

/*
 * Whether box a suppresses box b: their intersection over union is above
 * iou_threshold (ONNX Runtime's SuppressByIOU, the reference's
 * suppress_by_iou): boxes that do not overlap or have no area never do.
 */
static bool
nms_suppress(const float *a, const float *b, int center, float iou_threshold)
{
	float		ax0,
				ax1,
				ay0,
				ay1,
				bx0,
				bx1,
				by0,
				by1,
				ix0,
				ix1,
				iy0,
				iy1,
				inter,
				area_a,
				area_b,
				uni;

	nms_extent(a, center, 1, &ax0, &ax1);
	nms_extent(b, center, 1, &bx0, &bx1);
	ix0 = ax0 > bx0 ? ax0 : bx0;
	ix1 = ax1 < bx1 ? ax1 : bx1;
	if (ix1 <= ix0)
		return false;
	nms_extent(a, center, 0, &ay0, &ay1);
	nms_extent(b, center, 0, &by0, &by1);
	iy0 = ay0 > by0 ? ay0 : by0;
	iy1 = ay1 < by1 ? ay1 : by1;
	if (iy1 <= iy0)
		return false;
	inter = (ix1 - ix0) * (iy1 - iy0);
	area_a = (ax1 - ax0) * (ay1 - ay0);
	area_b = (bx1 - bx0) * (by1 - by0);
	uni = area_a + area_b - inter;
	if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0)
		return false;
	return inter / uni > iou_threshold;
}

/* Scalar input i (one value, or absent/empty: *present false) as double. */
static int
nms_scalar(ie_node_ctx *ctx, int i, const char *what, double *out, bool *present)
{
	const ie_tensor *t = ctx->n_inputs > i ? ctx->inputs[i] : NULL;
	int64_t		v;

	*present = false;
	if (t == NULL || ie_tensor_numel(t) == 0)
		return 0;
	if (ie_tensor_numel(t) != 1)
		return ie_op_error(ctx, "%s must hold one value, not %lld", what,
						   (long long) ie_tensor_numel(t));
	if (t->dtype == IE_FLOAT || t->dtype == IE_DOUBLE)
		*out = fval(t, 0);
	else if (ie_tensor_get_i64(t, 0, &v) == 0)
		*out = (double) v;
	else
		return ie_op_error(ctx, "%s type %s is not supported", what, ie_dtype_name(t->dtype));
	*present = true;
	return 0;
}

/*
 * NonMaxSuppression (opsets 10, 11; ONNX Operators.md, NonMaxSuppression;
 * the greedy algorithm of ONNX Runtime's CPU kernel,
 * onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc,
 * which onnx/reference/ops/op_non_max_suppression.py transcribes).
 * boxes [B, N, 4] float ([y1, x1, y2, x2], either diagonal, or with
 * center_point_box 1 [x_center, y_center, width, height]), scores
 * [B, C, N] float, optional max_output_boxes_per_class (int64, default 0:
 * nothing selected), iou_threshold (default 0, within [0, 1]) and
 * score_threshold (when given, only boxes scoring above it are
 * candidates).  Per batch and class, candidates are taken in decreasing
 * score (ties: lower box index first) and kept unless their IoU with a box
 * already kept exceeds iou_threshold, at most max_output_boxes_per_class
 * of them.  Output selected_indices [num_selected, 3] int64 rows of
 * (batch, class, box), batch-major, then class, then selection order.
 * Errors: boxes not [B, N, 4], scores not [B, C, N] with the same B and N,
 * a threshold input with more than one value, iou_threshold outside
 * [0, 1], center_point_box other than 0 or 1.
 */
static int
op_nms(ie_node_ctx *ctx)
{
	const ie_tensor *boxes,
			   *scores;
	double		max_out_d = 0,
				iou_d = 0,
				score_d = 0;
	bool		has_max,
				has_iou,
				has_score;
	int64_t		B,
				N,
				C,
				max_out,
				n_sel = 0,
				cap,
				odims[2];
	int			center = (int) ie_attr_int(ctx, "center_point_box", 0);
	nms_box    *cand = NULL;
	int64_t    *sel = NULL,
			   *kept = NULL;
	char		s1[128],
				s2[128];

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs boxes and scores");
	boxes = ctx->inputs[0];
	scores = ctx->inputs[1];
	if (nms_check_attrs(ctx) != 0)
		return -1;
	if (boxes->dtype != IE_FLOAT || scores->dtype != IE_FLOAT)
		return ie_op_error(ctx, "boxes and scores type %s is not supported (only float)",
						   ie_dtype_name(boxes->dtype != IE_FLOAT ? boxes->dtype : scores->dtype));
	if (boxes->ndim != 3 || boxes->dims[2] != 4)
		return ie_op_error(ctx, "boxes of shape %s: it must be [num_batches, spatial_dimension, 4]",
						   ie_shape_str(s1, sizeof(s1), boxes->ndim, boxes->dims));
	if (scores->ndim != 3 || scores->dims[0] != boxes->dims[0] ||
		scores->dims[2] != boxes->dims[1])
		return ie_op_error(ctx, "scores of shape %s do not match boxes of shape %s: they must be [%lld, num_classes, %lld]",
						   ie_shape_str(s1, sizeof(s1), scores->ndim, scores->dims),
						   ie_shape_str(s2, sizeof(s2), boxes->ndim, boxes->dims),
						   (long long) boxes->dims[0], (long long) boxes->dims[1]);
	if (nms_scalar(ctx, 2, "max_output_boxes_per_class", &max_out_d, &has_max) != 0 ||
		nms_scalar(ctx, 3, "iou_threshold", &iou_d, &has_iou) != 0 ||
		nms_scalar(ctx, 4, "score_threshold", &score_d, &has_score) != 0)
		return -1;
	if (has_iou && !(iou_d >= 0 && iou_d <= 1))
		return ie_op_error(ctx, "iou_threshold %g must be in [0, 1]", iou_d);
	B = boxes->dims[0];
	N = boxes->dims[1];
	C = scores->dims[1];
	max_out = max_out_d >= (double) N ? N : (max_out_d > 0 ? (int64_t) max_out_d : 0);
	/* at most max_out boxes per (batch, class) */
	cap = B * C * max_out;
	if (cap > 0)
	{
		int64_t		sdims[2] = {cap, 3},
					cdims[2] = {N, sizeof(nms_box) / sizeof(float)};

		cand = ie_scratch_new(IE_FLOAT, 2, cdims);
		sel = ie_scratch_new(IE_INT64, 2, sdims);
		kept = ie_scratch_new(IE_INT64, 1, &max_out);
		if (cand == NULL || sel == NULL || kept == NULL)
		{
			free(cand);
			free(sel);
			free(kept);
			return ie_op_error(ctx, "out of memory for the candidate boxes");
		}
	}
	for (int64_t b = 0; b < B && cap > 0; b++)
	{
		const float *bx = (const float *) boxes->data + b * N * 4;

		for (int64_t c = 0; c < C; c++)
		{
			const float *sc = (const float *) scores->data + (b * C + c) * N;
			int64_t		n_cand = 0,
						n_kept = 0;

			for (int64_t i = 0; i < N; i++)
				if (!has_score || sc[i] > (float) score_d)
				{
					cand[n_cand].score = sc[i];
					cand[n_cand].idx = i;
					n_cand++;
				}
			qsort(cand, n_cand, sizeof(nms_box), nms_box_cmp);
			for (int64_t k = 0; k < n_cand && n_kept < max_out; k++)
			{
				bool		keep = true;

				for (int64_t j = 0; j < n_kept && keep; j++)
					keep = !nms_suppress(bx + cand[k].idx * 4, bx + kept[j] * 4, center,
										 (float) iou_d);
				if (!keep)
					continue;
				kept[n_kept++] = cand[k].idx;
				sel[n_sel * 3] = b;
				sel[n_sel * 3 + 1] = c;
				sel[n_sel * 3 + 2] = cand[k].idx;
				n_sel++;
			}
		}
	}
	odims[0] = n_sel;
	odims[1] = 3;
	ctx->outputs[0] = ie_tensor_new(IE_INT64, 2, odims);
	if (ctx->outputs[0] == NULL)
	{
		free(cand);
		free(sel);
		free(kept);
		return ie_op_error(ctx, "out of memory for the output");
	}
	if (n_sel > 0)
		memcpy(ctx->outputs[0]->data, sel, sizeof(int64_t) * 3 * n_sel);
	free(cand);
	free(sel);
	free(kept);
	return 0;
}

/* --------------------------------------------------------- GridSample */

enum
{
	GS_LINEAR, GS_NEAREST, GS_CUBIC
};
enum
{
	GS_ZEROS, GS_BORDER, GS_REFLECTION
};

/*
 * GridSample's mode (opset 16: bilinear, nearest, bicubic; 20 on: linear,
 * nearest, cubic) and padding_mode (zeros, border, reflection) into *mode
 * and *pad (when not NULL).
 */
static int
gs_attrs(ie_node_ctx *ctx, int *mode, int *pad)
{
	static const char *const modes16[] = {"bilinear", "nearest", "bicubic", NULL};
	static const char *const modes20[] = {"linear", "nearest", "cubic", NULL};
	static const char *const pads[] = {"zeros", "border", "reflection", NULL};
	int			m,
				p;

	if (ie_attr_choice(ctx, "mode", ctx->opset >= 20 ? "linear" : "bilinear",
					   ctx->opset >= 20 ? modes20 : modes16, &m) != 0 ||
		ie_attr_choice(ctx, "padding_mode", "zeros", pads, &p) != 0)
		return -1;
	if (mode)
		*mode = m;
	if (pad)
		*pad = p;
	return 0;
}

static int
gs_check_attrs(ie_node_ctx *ctx)
{
	return gs_attrs(ctx, NULL, NULL);
}

/*
 * Reflects x into [lo, hi] by its nearer border, again until inside (the
 * reference's _gs_reflect; PyTorch's reflect_coordinates).
 */
static double
gs_reflect(double x, double lo, double hi)
{
	double		rng = hi - lo,
				m;

	if (x >= lo && x <= hi)
		return x;
	if (!(rng > 0) || !isfinite(x))
		return lo;
	/* distance past the border, modulo a round trip: an even number of
	 * reflections leaves it measured from that border, an odd one from
	 * the other */
	m = fmod(x < lo ? lo - x : x - hi, 2 * rng);
	if (m <= rng)
		return x < lo ? lo + m : hi - m;
	return x < lo ? hi - (m - rng) : lo + (m - rng);
}

/*
 * The index GridSample reads for tap i along a dim of size d with borders
 * [lo, hi], or -1 for a zero (padding zeros outside the input).
 */
static inline int64_t
gs_tap(int64_t i, int64_t d, double lo, double hi, int pad)
{
	if (pad == GS_ZEROS)
		return i >= 0 && i < d ? i : -1;
	if (pad == GS_BORDER)
		return i < 0 ? 0 : (i > d - 1 ? d - 1 : i);
	i = (int64_t) gs_reflect((double) i, lo, hi);
	return i < 0 ? 0 : (i > d - 1 ? d - 1 : i);
}

/* What one GridSample call shares: sizes, modes, the input plane. */
typedef struct gs_job
{
	int			r;				/* spatial rank */
	const int64_t *dims;		/* X's spatial dims [r] */
	int64_t		plane;			/* their product */
	int			mode,
				pad,
				align,
				grid_f64;		/* a double grid: denormalise in double */
} gs_job;

/*
 * The value of X's plane xp (plane values, dims j->dims) at the grid
 * point g (r normalised coordinates, innermost dim first, as the grid
 * stores them), as the reference computes it: coordinates denormalised
 * (align_corners: -1 and 1 the centres of the corner pixels; else their
 * outer edges), outside [lo, hi] clamped (border) or reflected
 * (reflection); then nearest (rounded half to even), linear (2 taps a dim)
 * or cubic (4 taps, Keys) interpolation, each tap padded as padding_mode
 * says.
 */
static double
gs_point(const gs_job *j, const ie_tensor *X, int64_t xoff, const double *g)
{
	double		w[IE_MAX_DIMS][4];
	int64_t		base[IE_MAX_DIMS];
	int			r = j->r,
				taps = j->mode == GS_LINEAR ? 2 : (j->mode == GS_CUBIC ? 4 : 1);
	int64_t		n_comb = 1;
	double		sum = 0;

	for (int d = 0; d < r; d++)
	{
		int64_t		len = j->dims[d];
		float		n = (float) g[r - 1 - d];
		double		lo = j->align ? 0 : -0.5,
					hi = j->align ? (double) len - 1 : (double) len - 0.5;
		double		v = j->align ? (n + 1) / 2.0f * (float) (len - 1) :
			((n + 1) * (float) len - 1) / 2.0f;

		/* a float grid in float, as the reference; a double one in double */
		if (j->grid_f64)
		{
			double		nd = g[r - 1 - d];

			v = j->align ? (nd + 1) / 2.0 * (double) (len - 1) :
				((nd + 1) * (double) len - 1) / 2.0;
		}

		if (j->mode == GS_NEAREST)
			v = nearbyint(v);
		if (v < lo || v > hi)
		{
			if (j->pad == GS_BORDER)
				v = v < 0 ? 0 : (v > (double) len - 1 ? (double) len - 1 : v);
			else if (j->pad == GS_REFLECTION)
				v = gs_reflect(v, lo, hi);
		}
		/* far outside (or NaN): a zero, or the border, either way */
		if (!(v > -1e9))
			v = -1e9;
		else if (v > 1e9)
			v = 1e9;
		if (j->mode == GS_NEAREST)
		{
			base[d] = (int64_t) v;	/* truncation, as the reference's astype */
			w[d][0] = 1;
		}
		else
		{
			double		f = floor(v);

			base[d] = (int64_t) f - (j->mode == GS_CUBIC ? 1 : 0);
			if (j->mode == GS_LINEAR)
			{
				w[d][0] = 1 - (v - f);
				w[d][1] = v - f;
			}
			else
				ie_warp_cubic_weights(v - f, w[d]);
		}
		n_comb *= taps;
	}
	for (int64_t k = 0; k < n_comb; k++)
	{
		int64_t		rem = k,
					off = 0;
		double		wt = 1;

		for (int d = r - 1; d >= 0; d--)
		{
			int			t = (int) (rem % taps);
			double		lo = j->align ? 0 : -0.5,
						hi = j->align ? (double) j->dims[d] - 1 : (double) j->dims[d] - 0.5;
			int64_t		i = gs_tap(base[d] + t, j->dims[d], lo, hi, j->pad);
			int64_t		stride = 1;

			rem /= taps;
			if (i < 0)
			{
				wt = 0;
				break;
			}
			for (int e = d + 1; e < r; e++)
				stride *= j->dims[e];
			off += i * stride;
			wt *= w[d][t];
		}
		if (wt != 0)
			sum += wt * fval(X, xoff + off);
	}
	return sum;
}

/*
 * GridSample (opsets 16, 20, 22; ONNX Operators.md, GridSample, and
 * onnx/reference/ops/op_grid_sample.py): X [N, C, D1, ..., Dr] (opset 16:
 * r = 2) sampled at grid [N, O1, ..., Or, r] (normalised coordinates in
 * [-1, 1], the innermost spatial dim first: (x, y) for 2-D) into
 * Y [N, C, O1, ..., Or].  mode bilinear/linear (default), nearest or
 * bicubic/cubic; padding_mode zeros (default), border or reflection;
 * align_corners 0 (default) or 1.  X and grid float or double (each its
 * own).  Errors: another type, X of rank other than 4 (opset 16) or below
 * 3, a grid whose rank, batch or last dim does not match X, a mode or
 * padding_mode not listed.
 */
static int
op_gridsample(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *G;
	gs_job		j;
	int64_t		N,
				C,
				n_out = 1,
				ydims[IE_MAX_DIMS];
	ie_tensor  *Y;
	char		s1[128],
				s2[128];

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs X and grid");
	X = ctx->inputs[0];
	G = ctx->inputs[1];
	if (gs_attrs(ctx, &j.mode, &j.pad) != 0 ||
		check_float(ctx, X, "X") != 0 || check_float(ctx, G, "grid") != 0)
		return -1;
	j.align = ie_attr_int(ctx, "align_corners", 0) != 0;
	j.grid_f64 = G->dtype == IE_DOUBLE;
	if (ctx->opset < 20 && X->ndim != 4)
		return ie_op_error(ctx, "X of shape %s: GridSample-16 takes 4-D input [N, C, H, W]",
						   ie_shape_str(s1, sizeof(s1), X->ndim, X->dims));
	if (X->ndim < 3)
		return ie_op_error(ctx, "X of shape %s: it must be [N, C, D1, ...]",
						   ie_shape_str(s1, sizeof(s1), X->ndim, X->dims));
	j.r = X->ndim - 2;
	if (G->ndim != X->ndim || G->dims[0] != X->dims[0] || G->dims[G->ndim - 1] != j.r)
		return ie_op_error(ctx, "grid of shape %s does not match X of shape %s: it must be [%lld, O1, ..., %d]",
						   ie_shape_str(s1, sizeof(s1), G->ndim, G->dims),
						   ie_shape_str(s2, sizeof(s2), X->ndim, X->dims),
						   (long long) X->dims[0], j.r);
	N = X->dims[0];
	C = X->dims[1];
	j.dims = X->dims + 2;
	j.plane = 1;
	for (int d = 0; d < j.r; d++)
		ydims[2 + d] = G->dims[1 + d];
	ydims[0] = N;
	ydims[1] = C;
	Y = ie_tensor_new(X->dtype, X->ndim, ydims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	/*
	 * products only of non-empty tensors' dims (an empty one's other dims
	 * may be huge: their product would overflow int64)
	 */
	if (ie_tensor_numel(Y) == 0 || ie_tensor_numel(X) == 0)
		return 0;				/* an empty input samples zeros (padding) */
	for (int d = 0; d < j.r; d++)
	{
		j.plane *= j.dims[d];
		n_out *= G->dims[1 + d];
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t o = 0; o < n_out; o++)
		{
			double		g[IE_MAX_DIMS];

			for (int d = 0; d < j.r; d++)
				g[d] = fval(G, (n * n_out + o) * j.r + d);
			for (int64_t c = 0; c < C; c++)
				fset(Y, (n * C + c) * n_out + o,
					 gs_point(&j, X, (n * C + c) * j.plane, g));
		}
	return 0;
}

/* --------------------------------------------------------- AffineGrid */

/*
 * The base grid's normalised coordinate i of a dim of size len: pixel
 * centres from -1 to 1 (align_corners), else the centres of len equal
 * cells spanning [-1, 1] (the reference's construct_original_grid; a
 * single pixel with align_corners sits at -1, as there).
 */
static double
ag_coord(int64_t i, int64_t len, int align)
{
	if (align)
		return len > 1 ? -1.0 + 2.0 * (double) i / (double) (len - 1) : -1.0;
	return -1.0 + (2.0 * (double) i + 1.0) / (double) len;
}

/*
 * AffineGrid (opset 20; ONNX Operators.md, AffineGrid, and
 * onnx/reference/ops/op_affine_grid.py): theta [N, 2, 3] with size
 * (int64) [N, C, H, W] gives grid [N, H, W, 2]; theta [N, 3, 4] with size
 * [N, C, D, H, W] gives [N, D, H, W, 3].  Each output point is theta[n]
 * times the homogeneous base coordinate (x, y[, z], 1), x along the last
 * dim, normalised to [-1, 1] as align_corners (default 0) says: the
 * sampling grid GridSample takes.  theta float or double (the grid's
 * type).  Errors: another type, size not 4 or 5 values, theta's shape not
 * matching it, a negative size.
 */
static int
op_affinegrid(ie_node_ctx *ctx)
{
	const ie_tensor *T,
			   *S;
	int64_t		size[5],
				n_size,
				r,
				gdims[5],
				n_pts = 1;
	int			align = ie_attr_int(ctx, "align_corners", 0) != 0;
	ie_tensor  *Y;
	char		s1[128];

	if (ctx->n_inputs < 2 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL)
		return ie_op_error(ctx, "needs inputs theta and size");
	T = ctx->inputs[0];
	S = ctx->inputs[1];
	if (check_float(ctx, T, "theta") != 0)
		return -1;
	n_size = ie_tensor_numel(S);
	if (S->ndim != 1 || (n_size != 4 && n_size != 5))
		return ie_op_error(ctx, "size must hold 4 values [N, C, H, W] or 5 [N, C, D, H, W], not %lld",
						   (long long) n_size);
	for (int i = 0; i < n_size; i++)
		if (ie_tensor_get_i64(S, i, &size[i]) != 0 || size[i] < 0)
			return ie_op_error(ctx, "size must hold int64 values, none negative");
	r = n_size - 2;
	if (T->ndim != 3 || T->dims[0] != size[0] || T->dims[1] != r || T->dims[2] != r + 1)
		return ie_op_error(ctx, "theta of shape %s must be [%lld, %lld, %lld] for size of %lld values",
						   ie_shape_str(s1, sizeof(s1), T->ndim, T->dims),
						   (long long) size[0], (long long) r, (long long) r + 1,
						   (long long) n_size);
	gdims[0] = size[0];
	for (int d = 0; d < r; d++)
		gdims[1 + d] = size[2 + d];
	gdims[1 + r] = r;
	Y = ie_tensor_new(T->dtype, (int) r + 2, gdims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	/*
	 * the point count only once the output exists: size is the model's,
	 * and its product can pass int64 (signed overflow) before a zero or
	 * the tensor limit refuses it
	 */
	if (ie_tensor_numel(Y) == 0)
		return 0;
	for (int d = 0; d < r; d++)
		n_pts *= size[2 + d];
	for (int64_t n = 0; n < size[0]; n++)
		for (int64_t p = 0; p < n_pts; p++)
		{
			double		h[4];
			int64_t		rem = p;

			/* h = (x, y[, z], 1): x from the last (innermost) dim */
			for (int d = 0; d < r; d++)
			{
				int64_t		len = size[1 + r - d];

				h[d] = ag_coord(rem % len, len, align);
				rem /= len;
			}
			h[r] = 1.0;
			for (int k = 0; k < r; k++)
			{
				double		v = 0;

				for (int m = 0; m <= r; m++)
					v += fval(T, (n * r + k) * (r + 1) + m) * h[m];
				fset(Y, (n * n_pts + p) * r + k, v);
			}
		}
	return 0;
}

/* ----------------------------------------------------------- RoiAlign */

/*
 * RoiAlign's mode (avg, max) into *mode and coordinate_transformation_mode
 * (opset 16: half_pixel, the default, or output_half_pixel; opset 10
 * behaves as output_half_pixel) into *half (when not NULL).
 */
static int
roi_attrs(ie_node_ctx *ctx, int *mode, int *half)
{
	static const char *const modes[] = {"avg", "max", NULL};
	static const char *const ctms[] = {"half_pixel", "output_half_pixel", NULL};
	int			m,
				c = 1;

	if (ie_attr_choice(ctx, "mode", "avg", modes, &m) != 0)
		return -1;
	if (ctx->opset >= 16 &&
		ie_attr_choice(ctx, "coordinate_transformation_mode", "half_pixel", ctms, &c) != 0)
		return -1;
	if (mode)
		*mode = m;
	if (half)
		*half = c == 0;
	return 0;
}

static int
roi_check_attrs(ie_node_ctx *ctx)
{
	return roi_attrs(ctx, NULL, NULL);
}

/*
 * One bilinear sample of RoiAlign at (y, x) in a plane of h x w: the four
 * corner offsets and weights (all 0 outside [-1, h] x [-1, w]), as ONNX
 * Runtime's pre_calc_for_bilinear_interpolate.
 */
static void
roi_sample(double y, double x, int64_t h, int64_t w, int64_t pos[4], double wt[4])
{
	int64_t		y0,
				x0,
				y1,
				x1;
	double		ly,
				lx;

	if (y < -1.0 || y > (double) h || x < -1.0 || x > (double) w)
	{
		for (int k = 0; k < 4; k++)
		{
			pos[k] = 0;
			wt[k] = 0;
		}
		return;
	}
	y = y < 0 ? 0 : y;
	x = x < 0 ? 0 : x;
	y0 = (int64_t) y;
	x0 = (int64_t) x;
	if (y0 >= h - 1)
	{
		y0 = y1 = h - 1;
		y = (double) y0;
	}
	else
		y1 = y0 + 1;
	if (x0 >= w - 1)
	{
		x0 = x1 = w - 1;
		x = (double) x0;
	}
	else
		x1 = x0 + 1;
	ly = y - (double) y0;
	lx = x - (double) x0;
	pos[0] = y0 * w + x0;
	pos[1] = y0 * w + x1;
	pos[2] = y1 * w + x0;
	pos[3] = y1 * w + x1;
	wt[0] = (1 - ly) * (1 - lx);
	wt[1] = (1 - ly) * lx;
	wt[2] = ly * (1 - lx);
	wt[3] = ly * lx;
}

/*
 * RoiAlign (opsets 10, 16; ONNX Operators.md, RoiAlign, and
 * onnx/reference/ops/op_roi_align.py, after ONNX Runtime's roialign.cc):
 * X [N, C, H, W], rois [R, 4] ((x1, y1, x2, y2) in X's coordinates once
 * multiplied by spatial_scale), batch_indices [R] int64 in [0, N), into
 * Y [R, C, output_height, output_width] (attributes, default 1).  Each
 * output bin averages (mode avg) or takes the largest of (max) a
 * sampling_ratio x sampling_ratio grid of bilinear samples (0, the
 * default: ceil(bin size) per axis).  coordinate_transformation_mode
 * half_pixel (opset 16's default) shifts the roi by -0.5 pixel;
 * output_half_pixel (opset 10's behaviour) does not, and widens rois
 * below one pixel to one.  max takes the largest of the weighted corner
 * values, as the reference and ONNX Runtime do.  X and rois float or
 * double, the same.  Errors: another type, X not 4-D, rois not [R, 4],
 * batch_indices not [R] or an index outside [0, N), output sizes or
 * sampling_ratio not positive (sampling_ratio: negative), a mode not
 * listed, a roi not finite (NaN or infinite, after spatial_scale), and
 * (IE_ERR_NOT_SUPPORTED) a sampling_ratio above 10^6 or a roi whose
 * adaptive sampling grid
 * would take more than 10^6 samples a bin along an axis (or NaN).
 */
static int
op_roialign(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *rois,
			   *bi;
	int			mode,
				half;
	int64_t		oh = ie_attr_int(ctx, "output_height", 1),
				ow = ie_attr_int(ctx, "output_width", 1),
				sr = ie_attr_int(ctx, "sampling_ratio", 0);
	double		scale = ie_attr_float(ctx, "spatial_scale", 1.0f);
	int64_t		R,
				C,
				H,
				W,
				ydims[4];
	ie_tensor  *Y;
	char		s1[128];

	if (ctx->n_inputs < 3 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL ||
		ctx->inputs[2] == NULL)
		return ie_op_error(ctx, "needs inputs X, rois and batch_indices");
	X = ctx->inputs[0];
	rois = ctx->inputs[1];
	bi = ctx->inputs[2];
	if (roi_attrs(ctx, &mode, &half) != 0 || check_float(ctx, X, "X") != 0)
		return -1;
	if (rois->dtype != X->dtype)
		return ie_op_error(ctx, "rois must have X's type %s", ie_dtype_name(X->dtype));
	if (bi->dtype != IE_INT64)
		return ie_op_error(ctx, "batch_indices type %s is not supported (only int64)",
						   ie_dtype_name(bi->dtype));
	if (X->ndim != 4)
		return ie_op_error(ctx, "X of shape %s: it must be [N, C, H, W]",
						   ie_shape_str(s1, sizeof(s1), X->ndim, X->dims));
	if (rois->ndim != 2 || rois->dims[1] != 4)
		return ie_op_error(ctx, "rois of shape %s: it must be [num_rois, 4]",
						   ie_shape_str(s1, sizeof(s1), rois->ndim, rois->dims));
	R = rois->dims[0];
	if (bi->ndim != 1 || bi->dims[0] != R)
		return ie_op_error(ctx, "batch_indices of shape %s: it must be [%lld]",
						   ie_shape_str(s1, sizeof(s1), bi->ndim, bi->dims), (long long) R);
	if (oh <= 0 || ow <= 0 || sr < 0)
		return ie_op_error(ctx, "output_height %lld and output_width %lld must be positive, sampling_ratio %lld not negative",
						   (long long) oh, (long long) ow, (long long) sr);
	/* the adaptive grid's limit: gh * gw must neither overflow nor run for ever */
	if (sr > 1000000)
		return ie_op_error(ctx, "sampling_ratio %lld is past the engine's limit of 10^6 samples a bin along an axis",
						   (long long) sr);
	C = X->dims[1];
	H = X->dims[2];
	W = X->dims[3];
	for (int64_t r = 0; r < R; r++)
	{
		int64_t		b = ((const int64_t *) bi->data)[r];

		if (b < 0 || b >= X->dims[0])
			return ie_op_error(ctx, "batch_indices[%lld] = %lld is outside [0, %lld)",
							   (long long) r, (long long) b, (long long) X->dims[0]);
	}
	ydims[0] = R;
	ydims[1] = C;
	ydims[2] = oh;
	ydims[3] = ow;
	Y = ie_tensor_new(X->dtype, 4, ydims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (H == 0 || W == 0)
		return 0;
	for (int64_t r = 0; r < R; r++)
	{
		int64_t		b = ((const int64_t *) bi->data)[r];
		double		off = half ? 0.5 : 0.0;
		double		x0 = fval(rois, r * 4) * scale - off,
					y0 = fval(rois, r * 4 + 1) * scale - off,
					x1 = fval(rois, r * 4 + 2) * scale - off,
					y1 = fval(rois, r * 4 + 3) * scale - off;
		double		rw = x1 - x0,
					rh = y1 - y0,
					bh,
					bw;
		int64_t		gh,
					gw,
					count;

		/* a NaN or infinite corner (after spatial_scale) would reach the
		 * samples' integer casts, undefined and read far outside X */
		if (!(isfinite(x0) && isfinite(y0) && isfinite(x1) && isfinite(y1)))
			return ie_op_error(ctx, "roi %lld is not finite (after spatial_scale %g)",
							   (long long) r, scale);
		if (!half)
		{
			rw = rw > 1.0 ? rw : 1.0;
			rh = rh > 1.0 ? rh : 1.0;
		}
		bh = rh / (double) oh;
		bw = rw / (double) ow;
		if (sr == 0 && !(bh < 1e6 && bw < 1e6))
			return ie_op_error(ctx, "roi %lld is not finite or its bins are more than 10^6 pixels a side, past the engine's limit",
							   (long long) r);
		gh = sr > 0 ? sr : (int64_t) ceil(rh / (double) oh);
		gw = sr > 0 ? sr : (int64_t) ceil(rw / (double) ow);
		count = gh * gw > 1 ? gh * gw : 1;
		for (int64_t c = 0; c < C; c++)
		{
			int64_t		xoff = (b * C + c) * H * W;

			for (int64_t ph = 0; ph < oh; ph++)
				for (int64_t pw = 0; pw < ow; pw++)
				{
					double		acc = 0;
					bool		first = true;

					for (int64_t iy = 0; iy < gh; iy++)
					{
						double		y = y0 + (double) ph * bh + ((double) iy + 0.5) * bh / (double) gh;

						for (int64_t ix = 0; ix < gw; ix++)
						{
							double		x = x0 + (double) pw * bw + ((double) ix + 0.5) * bw / (double) gw;
							int64_t		pos[4];
							double		wt[4];

							roi_sample(y, x, H, W, pos, wt);
							if (mode == 0)
								for (int k = 0; k < 4; k++)
									acc += wt[k] * fval(X, xoff + pos[k]);
							else
								for (int k = 0; k < 4; k++)
								{
									double		v = wt[k] * fval(X, xoff + pos[k]);

									if (first || v > acc)
										acc = v;
									first = false;
								}
						}
					}
					if (mode == 0)
						acc /= (double) count;
					fset(Y, ((r * C + c) * oh + ph) * ow + pw, acc);
				}
		}
	}
	return 0;
}

const ie_op_def ie_ops_vision[] = {
	{"NonMaxSuppression", op_nms},
	{"GridSample", op_gridsample},
	{"AffineGrid", op_affinegrid},
	{"RoiAlign", op_roialign},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_vision[] = {
	{"NonMaxSuppression", nms_check_attrs},
	{"GridSample", gs_check_attrs},
	{"RoiAlign", roi_check_attrs},
	{NULL, NULL}
};
