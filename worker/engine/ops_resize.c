/*
 * ops_resize.c
 *	  ONNX Resize (opsets 10, 11, 13, 18, 19) and Upsample (opsets 7, 9),
 *	  float32, any rank.
 *
 * Each output coordinate of each axis maps to a few taps of the input
 * axis (1 for nearest, 2 for linear, 4 for cubic) with weights; an output
 * element is the sum over the product of its axes' taps.  Axes whose
 * every output coordinate lands on one input element with weight 1 are
 * reduced to one tap, so an N, C that do not change cost nothing.
 * Coordinates are computed in float as onnxruntime does, so that nearest
 * rounding ties land on the same side.  Opset 10 (and Upsample) use the
 * asymmetric transform and onnxruntime's rounding for that opset (floor
 * when upsampling, ceil when downsampling).
 *
 * antialias (opset 18) stretches the linear or cubic filter of an axis
 * that shrinks by 1 / scale, so that about 2 / scale (linear) or 4 / scale
 * (cubic) taps make an output coordinate; such resizes run one axis at a
 * time (resize_apply_separable), as the spec's reference does, since the
 * product of the axes' taps would grow with the product of their shrinking.
 *
 * Threading: no state outside the call; tap tables are per call.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/op.h"

typedef enum coord_mode
{
	CT_HALF_PIXEL,
	CT_HALF_PIXEL_SYMMETRIC,
	CT_PYTORCH_HALF_PIXEL,
	CT_ALIGN_CORNERS,
	CT_ASYMMETRIC,
	CT_TF_HALF_PIXEL_FOR_NN,
	CT_TF_CROP_AND_RESIZE
} coord_mode;

typedef enum interp_mode
{
	IM_NEAREST,
	IM_LINEAR,
	IM_CUBIC
} interp_mode;

typedef enum nearest_mode
{
	NM_ROUND_PREFER_FLOOR,
	NM_ROUND_PREFER_CEIL,
	NM_FLOOR,
	NM_CEIL,
	NM_SIMPLE					/* opset 10: floor up, ceil down */
} nearest_mode;

/* Taps of one axis: for output coordinate o, ntaps (index, weight) pairs. */
typedef struct axis_taps
{
	int			ntaps;
	int64_t    *off;			/* [out * ntaps] input index * axis stride */
	float	   *w;				/* [out * ntaps] */
	char	   *outside;		/* [out] tf_crop_and_resize extrapolation */
} axis_taps;

/* Settings of one Resize node. */
typedef struct resize_cfg
{
	interp_mode mode;
	coord_mode	coord;
	nearest_mode nearest;
	float		cubic_a;
	int			exclude_outside;
	int			antialias;		/* linear or cubic with antialias=1 */
	float		extrapolation;
	int			from_sizes;		/* output lengths given by sizes, stretched */
} resize_cfg;

/*
 * Original coordinate of output coordinate o on an axis (ONNX formulas).
 * out is the resized length as the spec's reference computes it, in * scale
 * (not rounded), which matters for align_corners when downsampling; out_int
 * is the output's length.
 */
static float
resize_coord(const resize_cfg *cfg, float o, float scale, int64_t in,
			 float out, int64_t out_int, float roi_start, float roi_end)
{
	switch (cfg->coord)
	{
		case CT_HALF_PIXEL:
			return (o + 0.5f) / scale - 0.5f;
		case CT_HALF_PIXEL_SYMMETRIC:
			{
				/*
				 * output_width_int / output_width: the output's length over
				 * in * scale, whatever gave the length (sizes or scales)
				 */
				float		adj = (float) out_int / (scale * (float) in);
				float		center = (float) in / 2.0f;
				float		offset = center * (1.0f - adj);

				return offset + (o + 0.5f) / scale - 0.5f;
			}
		case CT_PYTORCH_HALF_PIXEL:
			/* the spec's 0 for one output (onnxruntime too); the reference: -0.5 */
			return out > 1.0f ? (o + 0.5f) / scale - 0.5f : 0.0f;
		case CT_ALIGN_CORNERS:
			return out == 1.0f ? 0.0f : o * (float) (in - 1) / (out - 1.0f);
		case CT_ASYMMETRIC:
			return o / scale;
		case CT_TF_HALF_PIXEL_FOR_NN:
			return (o + 0.5f) / scale;
		case CT_TF_CROP_AND_RESIZE:
			if (out > 1.0f)
				return roi_start * (float) (in - 1) +
					o * (roi_end - roi_start) * (float) (in - 1) / (out - 1.0f);
			return 0.5f * (roi_start + roi_end) * (float) (in - 1);
	}
	return 0.0f;
}

/* Nearest input index for original coordinate x under the rounding mode. */
static int64_t
resize_nearest(nearest_mode m, float x, float scale)
{
	float		f = floorf(x);

	switch (m)
	{
		case NM_ROUND_PREFER_FLOOR:
			return (int64_t) (x - f == 0.5f ? f : roundf(x));
		case NM_ROUND_PREFER_CEIL:
			return (int64_t) (x - f == 0.5f ? f + 1.0f : roundf(x));
		case NM_FLOOR:
			return (int64_t) f;
		case NM_CEIL:
			return (int64_t) ceilf(x);
		case NM_SIMPLE:
			return scale < 1.0f ? (int64_t) ceilf(x) : (int64_t) x;
	}
	return 0;
}

/* Clamps i into [0, n - 1]. */
static inline int64_t
clamp_idx(int64_t i, int64_t n)
{
	return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/*
 * Keys cubic convolution kernel with coefficient A at distance d >= 0
 * (zero from 2 on).
 */
static double
cubic_kernel(double d, double A)
{
	if (d <= 1.0)
		return ((A + 2.0) * d - (A + 3.0)) * d * d + 1.0;
	if (d < 2.0)
		return ((A * d - 5.0 * A) * d + 8.0 * A) * d - 4.0 * A;
	return 0.0;
}

/*
 * Taps of an axis that shrinks (scale < 1) with antialias: the linear
 * (support 1) or cubic (support 2) kernel stretched by 1 / scale.  The
 * spec's reference (onnx/reference/ops/op_resize.py, _linear_coeffs_antialias
 * and _cubic_coeffs_antialias) takes the taps floor(x) + j for j in [start,
 * 1 - start], start = floor(-support / scale) + 1, replicating the edge
 * elements, with weights kernel(scale * (j - fraction)) over their sum; this
 * returns that tap count, or -1 when it is past any tensor's extent.
 */
static int64_t
antialias_ntaps(const resize_cfg *cfg, float scale)
{
	double		reach = (cfg->mode == IM_CUBIC ? 2.0 : 1.0) / (double) scale;

	if (!(reach < (double) (INT32_MAX / 4)))
		return -1;
	return 2 - 2 * ((int64_t) floor(-reach) + 1);
}

/*
 * One coordinate's antialias taps (nt of them, see antialias_ntaps) around
 * original coordinate x into off (index * stride) and w.  exclude_outside
 * drops the taps outside [0, in) and shares their weight among the others,
 * as the reference does for every mode.
 */
static void
antialias_taps(const resize_cfg *cfg, float x, float scale, int64_t in, int64_t nt,
			   int64_t stride, int64_t *off, float *w)
{
	double		f = floor((double) x);
	double		r = (double) x - f;
	int64_t		start = 1 - nt / 2;
	double		kept = 0.0;

	for (int64_t k = 0; k < nt; k++)
	{
		int64_t		j = start + k;
		double		d = fabs((double) scale * ((double) j - r));
		double		v = cfg->mode == IM_CUBIC ? cubic_kernel(d, cfg->cubic_a) :
			(d < 1.0 ? 1.0 - d : 0.0);
		int64_t		i = (int64_t) f + j;

		if (cfg->exclude_outside && (i < 0 || i >= in))
			v = 0.0;
		kept += v;
		w[k] = (float) v;
		off[k] = clamp_idx(i, in) * stride;
	}
	/* the reference normalises over all taps, then over those kept */
	if (kept != 0.0)
		for (int64_t k = 0; k < nt; k++)
			w[k] = (float) ((double) w[k] / kept);
}

/*
 * Builds the taps of one axis (in -> out, scale, roi, input stride).
 * Returns -1 when the offsets table is over the tensor limit (refusal
 * noted) or memory runs out.
 */
static int
axis_taps_build(const resize_cfg *cfg, axis_taps *t, int64_t in, int64_t out,
				float scale, float roi_start, float roi_end, int64_t stride)
{
	int64_t		nt = cfg->mode == IM_NEAREST ? 1 : (cfg->mode == IM_LINEAR ? 2 : 4);
	int			aa = cfg->antialias && cfg->mode != IM_NEAREST && scale < 1.0f;
	int			trivial = !aa;
	float		rlen = (cfg->coord == CT_TF_CROP_AND_RESIZE || cfg->from_sizes) ?
		(float) out : (float) in * scale;

	if (aa && (nt = antialias_ntaps(cfg, scale)) < 0)
		return -1;
	t->ntaps = (int) nt;
	/* the weights and the outside flags are smaller than the offsets */
	t->off = ie_scratch_new(IE_INT64, 2, (int64_t[]) {out + 1, nt});
	t->w = t->off ? malloc(sizeof(float) * (size_t) ((out + 1) * nt)) : NULL;
	t->outside = calloc(out + 1, 1);
	if (t->off == NULL || t->w == NULL || t->outside == NULL)
		return -1;
	for (int64_t o = 0; o < out; o++)
	{
		float		x = resize_coord(cfg, (float) o, scale, in, rlen, out,
									 roi_start, roi_end);
		int64_t    *off = t->off + o * nt;
		float	   *w = t->w + o * nt;

		if (cfg->coord == CT_TF_CROP_AND_RESIZE && (x < 0.0f || x > (float) (in - 1)))
		{
			t->outside[o] = 1;
			trivial = 0;
			for (int64_t k = 0; k < nt; k++)
			{
				off[k] = 0;
				w[k] = 0.0f;
			}
			continue;
		}
		if (aa)
			antialias_taps(cfg, x, scale, in, nt, stride, off, w);
		else if (cfg->mode == IM_NEAREST)
		{
			off[0] = clamp_idx(resize_nearest(cfg->nearest, x, scale), in) * stride;
			w[0] = 1.0f;
		}
		else if (cfg->mode == IM_LINEAR)
		{
			float		f = floorf(x);
			float		r = x - f;
			int64_t		i0 = (int64_t) f;

			off[0] = clamp_idx(i0, in) * stride;
			off[1] = clamp_idx(i0 + 1, in) * stride;
			w[0] = 1.0f - r;
			w[1] = r;
		}
		else
		{
			float		f = floorf(x);
			float		r = x - f;
			float		A = cfg->cubic_a;
			int64_t		i0 = (int64_t) f;
			float		d[4] = {r + 1.0f, r, 1.0f - r, 2.0f - r};
			float		sum = 0.0f;

			/* Keys cubic convolution kernel with coefficient A */
			w[0] = ((A * d[0] - 5.0f * A) * d[0] + 8.0f * A) * d[0] - 4.0f * A;
			w[1] = ((A + 2.0f) * d[1] - (A + 3.0f)) * d[1] * d[1] + 1.0f;
			w[2] = ((A + 2.0f) * d[2] - (A + 3.0f)) * d[2] * d[2] + 1.0f;
			w[3] = ((A * d[3] - 5.0f * A) * d[3] + 8.0f * A) * d[3] - 4.0f * A;
			for (int k = 0; k < 4; k++)
			{
				int64_t		i = i0 - 1 + k;

				if (cfg->exclude_outside && (i < 0 || i >= in))
					w[k] = 0.0f;
				sum += w[k];
				off[k] = clamp_idx(i, in) * stride;
			}
			if (cfg->exclude_outside && sum != 0.0f)
				for (int k = 0; k < 4; k++)
					w[k] /= sum;
		}
		/* is this coordinate a plain copy of one element? */
		if (trivial)
		{
			int			ones = 0,
						zeros = 0;

			for (int k = 0; k < nt; k++)
			{
				if (w[k] == 1.0f)
					ones++;
				else if (w[k] == 0.0f)
					zeros++;
			}
			if (ones != 1 || zeros != nt - 1)
				trivial = 0;
		}
	}
	if (trivial && nt > 1)
	{
		/* keep only the weight-1 tap of each coordinate */
		for (int64_t o = 0; o < out; o++)
			for (int k = 0; k < nt; k++)
				if (t->w[o * nt + k] == 1.0f)
				{
					t->off[o] = t->off[o * nt + k];
					break;
				}
		for (int64_t o = 0; o < out; o++)
			t->w[o] = 1.0f;
		t->ntaps = 1;
	}
	return 0;
}

/* Frees the tables of r axes. */
static void
axis_taps_free(axis_taps *t, int r)
{
	for (int a = 0; a < r; a++)
	{
		free(t[a].off);
		free(t[a].w);
		free(t[a].outside);
	}
}

/*
 * Fills Y (dims odims) from X through the per-axis taps: for each output
 * element the weighted sum over the product of its axes' taps, or the
 * extrapolation value when an axis is outside the crop.
 */
static void
resize_apply(const resize_cfg *cfg, const ie_tensor *X, ie_tensor *Y,
			 const axis_taps *t)
{
	int			r = X->ndim;
	int64_t		idx[IE_MAX_DIMS] = {0};
	int64_t		n = ie_tensor_numel(Y);
	int64_t		combos = 1;
	const float *xd = X->data;
	float	   *yd = Y->data;

	for (int a = 0; a < r; a++)
		combos *= t[a].ntaps;
	if (combos == 1)
	{
		/*
		 * Gathers (nearest, or axes that copy): a row of the last axis at a
		 * time; a row that repeats the previous one's source is copied.
		 */
		int64_t		ow = Y->dims[r - 1];
		int64_t		prev_base = -1;
		int			prev_out = 0;
		const axis_taps *last = &t[r - 1];

		for (int64_t row = 0; row < n / ow; row++)
		{
			int64_t		base = 0;
			int			out = 0;
			float	   *dst = yd + row * ow;

			for (int a = 0; a < r - 1; a++)
			{
				base += t[a].off[idx[a]];
				out |= t[a].outside[idx[a]];
			}
			if (row > 0 && base == prev_base && out == prev_out)
				memcpy(dst, dst - ow, sizeof(float) * ow);
			else
				for (int64_t j = 0; j < ow; j++)
					dst[j] = (out || last->outside[j]) ? cfg->extrapolation :
						xd[base + last->off[j]];
			prev_base = base;
			prev_out = out;
			for (int a = r - 2; a >= 0; a--)
			{
				if (++idx[a] < Y->dims[a])
					break;
				idx[a] = 0;
			}
		}
		return;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int			outside = 0;
		float		v = 0.0f;

		for (int a = 0; a < r; a++)
			outside |= t[a].outside[idx[a]];
		if (outside)
			v = cfg->extrapolation;
		else if (combos == 1)
		{
			int64_t		off = 0;

			for (int a = 0; a < r; a++)
				off += t[a].off[idx[a]];
			v = xd[off];
		}
		else
		{
			for (int64_t c = 0; c < combos; c++)
			{
				int64_t		rem = c,
							off = 0;
				float		w = 1.0f;

				for (int a = r - 1; a >= 0; a--)
				{
					int			nt = t[a].ntaps;
					int			k = (int) (rem % nt);

					rem /= nt;
					off += t[a].off[idx[a] * nt + k];
					w *= t[a].w[idx[a] * nt + k];
				}
				if (w != 0.0f)
					v += w * xd[off];
			}
		}
		yd[i] = v;
		for (int a = r - 1; a >= 0; a--)
		{
			if (++idx[a] < Y->dims[a])
				break;
			idx[a] = 0;
		}
	}
}

/* Whether taps t (in -> out) copy the axis as it is. */
static int
axis_copies(const axis_taps *t, int64_t in, int64_t out)
{
	if (t->ntaps != 1 || in != out)
		return 0;
	for (int64_t o = 0; o < out; o++)
		if (t->off[o] != o || t->outside[o])
			return 0;
	return 1;
}

/*
 * One pass of resize_apply_separable: src (outer x in x inner) resized
 * along its middle axis by taps t (offsets in elements of that axis) into
 * dst (outer x out x inner), a row of inner elements at a time.
 */
static void
resize_axis_pass(const resize_cfg *cfg, const axis_taps *t, const float *src, float *dst,
				 int64_t outer, int64_t in, int64_t out, int64_t inner)
{
	int			nt = t->ntaps;

	for (int64_t p = 0; p < outer; p++)
	{
		const float *s = src + p * in * inner;

		for (int64_t o = 0; o < out; o++)
		{
			float	   *d = dst + (p * out + o) * inner;
			const int64_t *off = t->off + o * nt;
			const float *w = t->w + o * nt;

			for (int64_t i = 0; i < inner; i++)
				d[i] = t->outside[o] ? cfg->extrapolation : 0.0f;
			if (t->outside[o])
				continue;
			for (int k = 0; k < nt; k++)
			{
				const float *row = s + off[k] * inner;
				float		wk = w[k];

				if (wk == 0.0f)
					continue;
				for (int64_t i = 0; i < inner; i++)
					d[i] += wk * row[i];
			}
		}
	}
}

/*
 * Fills Y (dims odims) from X one axis at a time through the per-axis taps
 * (offsets in elements of the axis, not strides), skipping the axes that
 * copy; the passes between go through scratch buffers of the partly
 * resized shape.  For antialias, whose taps grow as an axis shrinks.
 * Returns -1 when a buffer is over the tensor limit (refusal noted) or
 * memory runs out.
 */
static int
resize_apply_separable(const resize_cfg *cfg, const ie_tensor *X, ie_tensor *Y,
					   const axis_taps *t)
{
	int			r = X->ndim;
	int			last = -1;
	int64_t		dims[IE_MAX_DIMS];
	const float *src = X->data;
	float	   *held = NULL;	/* src when it is a scratch buffer */

	for (int a = 0; a < r; a++)
	{
		dims[a] = X->dims[a];
		if (!axis_copies(&t[a], X->dims[a], Y->dims[a]))
			last = a;
	}
	if (last < 0)
	{
		memcpy(Y->data, X->data, sizeof(float) * (size_t) ie_tensor_numel(X));
		return 0;
	}
	for (int a = 0; a <= last; a++)
	{
		int64_t		outer = 1,
					inner = 1,
					in = dims[a];
		float	   *dst;

		if (axis_copies(&t[a], X->dims[a], Y->dims[a]))
			continue;
		for (int b = 0; b < r; b++)
		{
			if (b < a)
				outer *= dims[b];
			else if (b > a)
				inner *= dims[b];
		}
		dims[a] = Y->dims[a];
		dst = a == last ? Y->data : ie_scratch_new(IE_FLOAT, r, dims);
		if (dst == NULL)
		{
			free(held);
			return -1;
		}
		resize_axis_pass(cfg, &t[a], src, dst, outer, in, dims[a], inner);
		free(held);
		held = a == last ? NULL : dst;
		src = dst;
	}
	return 0;
}

/* Parses the string attributes into cfg; opset 10 and Upsample fix some. */
static int
resize_parse(ie_node_ctx *ctx, resize_cfg *cfg, int legacy)
{
	const char *mode = ie_attr_string(ctx, "mode", "nearest");
	const char *ct = ie_attr_string(ctx, "coordinate_transformation_mode", "half_pixel");
	const char *nm = ie_attr_string(ctx, "nearest_mode", "round_prefer_floor");

	if (strcmp(mode, "nearest") == 0)
		cfg->mode = IM_NEAREST;
	else if (strcmp(mode, "linear") == 0 || (legacy && strcmp(mode, "bilinear") == 0))
		cfg->mode = IM_LINEAR;
	else if (strcmp(mode, "cubic") == 0 && !legacy)
		cfg->mode = IM_CUBIC;
	else
		return ie_op_error(ctx, "unsupported mode \"%s\"", mode);
	cfg->cubic_a = ie_attr_float(ctx, "cubic_coeff_a", -0.75f);
	cfg->exclude_outside = (int) ie_attr_int(ctx, "exclude_outside", 0);
	cfg->extrapolation = ie_attr_float(ctx, "extrapolation_value", 0.0f);
	cfg->from_sizes = 0;

	/*
	 * The spec gives antialias to linear and cubic only, so nearest ignores
	 * it (the reference and onnxruntime refuse that node instead).
	 */
	cfg->antialias = !legacy && cfg->mode != IM_NEAREST &&
		ie_attr_int(ctx, "antialias", 0) != 0;
	if (legacy)
	{
		cfg->coord = CT_ASYMMETRIC;
		cfg->nearest = NM_SIMPLE;
		return 0;
	}
	if (strcmp(ct, "half_pixel") == 0)
		cfg->coord = CT_HALF_PIXEL;
	else if (strcmp(ct, "half_pixel_symmetric") == 0)
		cfg->coord = CT_HALF_PIXEL_SYMMETRIC;
	else if (strcmp(ct, "pytorch_half_pixel") == 0)
		cfg->coord = CT_PYTORCH_HALF_PIXEL;
	else if (strcmp(ct, "align_corners") == 0)
		cfg->coord = CT_ALIGN_CORNERS;
	else if (strcmp(ct, "asymmetric") == 0)
		cfg->coord = CT_ASYMMETRIC;
	else if (strcmp(ct, "tf_half_pixel_for_nn") == 0)
		cfg->coord = CT_TF_HALF_PIXEL_FOR_NN;
	else if (strcmp(ct, "tf_crop_and_resize") == 0)
		cfg->coord = CT_TF_CROP_AND_RESIZE;
	else
		return ie_op_error(ctx, "unsupported coordinate_transformation_mode \"%s\"", ct);
	if (strcmp(nm, "round_prefer_floor") == 0)
		cfg->nearest = NM_ROUND_PREFER_FLOOR;
	else if (strcmp(nm, "round_prefer_ceil") == 0)
		cfg->nearest = NM_ROUND_PREFER_CEIL;
	else if (strcmp(nm, "floor") == 0)
		cfg->nearest = NM_FLOOR;
	else if (strcmp(nm, "ceil") == 0)
		cfg->nearest = NM_CEIL;
	else
		return ie_op_error(ctx, "unsupported nearest_mode \"%s\"", nm);
	return 0;
}

/* Upsample's form: opset 7 on (opset 1's height_scale and width_scale not). */
static int
upsample_check_form(ie_node_ctx *ctx)
{
	if (ctx->opset < 7)
		return ie_op_error(ctx, "the opset 1 form (height_scale, width_scale) is not supported");
	return 0;
}

/*
 * The string attributes of Resize and Upsample (resize_parse, the forms
 * of opset 10 and Upsample for those): run by the loader on every such
 * node (ie_op_check_lookup).
 */
static int
resize_check_attrs(ie_node_ctx *ctx)
{
	resize_cfg	cfg;

	if (strcmp(ctx->op_type, "Upsample") == 0)
		return upsample_check_form(ctx) != 0 ? -1 : resize_parse(ctx, &cfg, 1);
	return resize_parse(ctx, &cfg, ctx->opset < 11);
}

/* Reads float tensor element i (float or double scales/roi). */
static int
read_float(const ie_tensor *t, int64_t i, float *out)
{
	if (t->dtype == IE_FLOAT)
		*out = ((const float *) t->data)[i];
	else if (t->dtype == IE_DOUBLE)
		*out = (float) ((const double *) t->data)[i];
	else
		return -1;
	return 0;
}

/*
 * The shared body: X resized by scales (float tensor or attribute values,
 * may be NULL) or sizes (int64, may be NULL), roi for tf_crop_and_resize.
 */
static int
resize_common(ie_node_ctx *ctx, const resize_cfg *cfg, const ie_tensor *scales_t,
			  const float *scales_attr, int n_scales_attr,
			  const ie_tensor *sizes_t, const ie_tensor *roi_t)
{
	const ie_tensor *X = ctx->inputs[0];
	int			r = X->ndim;
	int			axes[IE_MAX_DIMS];
	int			naxes;
	const int64_t *av;
	int			n;
	float		scale[IE_MAX_DIMS];
	float		roi_s[IE_MAX_DIMS],
				roi_e[IE_MAX_DIMS];
	int64_t		odims[IE_MAX_DIMS];
	int64_t		stride[IE_MAX_DIMS];
	axis_taps	taps[IE_MAX_DIMS];
	ie_tensor  *Y;
	const char *policy = ie_attr_string(ctx, "keep_aspect_ratio_policy", "stretch");
	int			from_sizes = 0;
	int			separable;
	int			rc = -1;

	if (X->dtype != IE_FLOAT)
		return ie_op_error(ctx, "unsupported input type %s (only float)",
						   ie_dtype_name(X->dtype));
	if (r < 1)
		return ie_op_error(ctx, "cannot resize a scalar");
	n = ie_attr_ints(ctx, "axes", &av);
	if (n >= 0)
	{
		naxes = n;
		for (int i = 0; i < n; i++)
		{
			int64_t		a = av[i] < 0 ? av[i] + r : av[i];

			if (a < 0 || a >= r)
				return ie_op_error(ctx, "axis %lld out of range", (long long) av[i]);
			axes[i] = (int) a;
		}
	}
	else
	{
		naxes = r;
		for (int i = 0; i < r; i++)
			axes[i] = i;
	}
	for (int i = 0; i < r; i++)
	{
		scale[i] = 1.0f;
		odims[i] = X->dims[i];
		roi_s[i] = 0.0f;
		roi_e[i] = 1.0f;
	}
	if (roi_t != NULL && ie_tensor_numel(roi_t) > 0 && cfg->coord == CT_TF_CROP_AND_RESIZE)
	{
		if (ie_tensor_numel(roi_t) != 2 * naxes)
			return ie_op_error(ctx, "roi must have %d values", 2 * naxes);
		for (int i = 0; i < naxes; i++)
			if (read_float(roi_t, i, &roi_s[axes[i]]) != 0 ||
				read_float(roi_t, naxes + i, &roi_e[axes[i]]) != 0)
				return ie_op_error(ctx, "unsupported roi type %s", ie_dtype_name(roi_t->dtype));
	}

	if (sizes_t != NULL && ie_tensor_numel(sizes_t) > 0)
	{
		int			keep = strcmp(policy, "stretch") != 0;
		float		ks = 0.0f;

		if (ie_tensor_numel(sizes_t) != naxes)
			return ie_op_error(ctx, "sizes must have %d values", naxes);
		if (keep && strcmp(policy, "not_larger") != 0 && strcmp(policy, "not_smaller") != 0)
			return ie_op_error(ctx, "unsupported keep_aspect_ratio_policy \"%s\"", policy);

		/*
		 * The reference's output_width is in * scale: the size itself when
		 * stretched, in * the kept scale (not the rounded size) otherwise,
		 * which align_corners and pytorch_half_pixel see; onnxruntime uses
		 * the rounded size there.
		 */
		from_sizes = !keep;
		for (int i = 0; i < naxes; i++)
		{
			int64_t		s;
			float		f;

			if (ie_tensor_get_i64(sizes_t, i, &s) != 0 || s < 0)
				return ie_op_error(ctx, "sizes must be non-negative int64");
			f = (float) s / (float) X->dims[axes[i]];
			if (i == 0 || (policy[4] == 'l' ? f < ks : f > ks))
				ks = f;
			odims[axes[i]] = s;
			scale[axes[i]] = f;
		}
		if (keep)
			for (int i = 0; i < naxes; i++)
			{
				scale[axes[i]] = ks;
				odims[axes[i]] = (int64_t) floorf(ks * (float) X->dims[axes[i]] + 0.5f);
			}
	}
	else if ((scales_t != NULL && ie_tensor_numel(scales_t) > 0) || scales_attr != NULL)
	{
		int64_t		ns = scales_t ? ie_tensor_numel(scales_t) : n_scales_attr;

		if (ns != naxes)
			return ie_op_error(ctx, "scales must have %d values", naxes);
		for (int i = 0; i < naxes; i++)
		{
			float		s;
			int			a = axes[i];

			if (scales_t != NULL)
			{
				if (read_float(scales_t, i, &s) != 0)
					return ie_op_error(ctx, "unsupported scales type %s",
									   ie_dtype_name(scales_t->dtype));
			}
			else
				s = scales_attr[i];
			if (!(s > 0.0f))
				return ie_op_error(ctx, "scales must be positive");
			scale[a] = s;
			if (cfg->coord == CT_TF_CROP_AND_RESIZE)
				odims[a] = (int64_t) floorf((float) X->dims[a] * (roi_e[a] - roi_s[a]) * s);
			else
				odims[a] = (int64_t) floorf((float) X->dims[a] * s);
		}
	}
	else
		return ie_op_error(ctx, "needs scales or sizes");

	Y = ie_tensor_new(IE_FLOAT, r, odims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	if (ie_tensor_numel(Y) == 0)
		return 0;
	if (ie_tensor_numel(X) == 0)
		return ie_op_error(ctx, "cannot resize an empty input to a non-empty output");

	/* antialias on a shrinking axis: one axis at a time, offsets unstrided */
	separable = 0;
	for (int a = 0; a < r; a++)
		if (cfg->antialias && scale[a] < 1.0f)
			separable = 1;
	stride[r - 1] = 1;
	for (int i = r - 2; i >= 0; i--)
		stride[i] = separable ? 1 : stride[i + 1] * X->dims[i + 1];
	memset(taps, 0, sizeof(taps));
	for (int a = 0; a < r; a++)
	{
		resize_cfg	c = *cfg;

		c.from_sizes = from_sizes;

		/* an axis outside "axes" keeps its coordinates */
		if (odims[a] == X->dims[a] && scale[a] == 1.0f &&
			(c.coord != CT_TF_CROP_AND_RESIZE || (roi_s[a] == 0.0f && roi_e[a] == 1.0f)))
		{
			c.mode = IM_NEAREST;
			c.coord = CT_ASYMMETRIC;
			c.nearest = NM_FLOOR;
		}
		if (axis_taps_build(&c, &taps[a], X->dims[a], odims[a], scale[a],
							roi_s[a], roi_e[a], stride[a]) != 0)
		{
			ie_op_error(ctx, "out of memory for the tap tables");
			goto done;
		}
	}
	if (separable)
	{
		if (resize_apply_separable(cfg, X, Y, taps) != 0)
		{
			ie_op_error(ctx, "out of memory for a partly resized copy of the input");
			goto done;
		}
	}
	else
		resize_apply(cfg, X, Y, taps);
	rc = 0;
done:
	axis_taps_free(taps, r);
	return rc;
}

/*
 * Resize: opset 10 (X, scales), opsets 11 and 13+ (X, roi, scales, sizes);
 * modes nearest, linear, cubic; every coordinate_transformation_mode and
 * nearest_mode; axes, keep_aspect_ratio_policy and antialias (18).
 */
static int
op_resize(ie_node_ctx *ctx)
{
	resize_cfg	cfg;
	const ie_tensor *in1,
			   *in2,
			   *in3;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	in1 = ctx->n_inputs > 1 ? ctx->inputs[1] : NULL;
	in2 = ctx->n_inputs > 2 ? ctx->inputs[2] : NULL;
	in3 = ctx->n_inputs > 3 ? ctx->inputs[3] : NULL;
	if (ctx->opset < 11)
	{
		if (resize_parse(ctx, &cfg, 1) != 0)
			return -1;
		if (in1 == NULL)
			return ie_op_error(ctx, "needs input scales");
		return resize_common(ctx, &cfg, in1, NULL, 0, NULL, NULL);
	}
	if (resize_parse(ctx, &cfg, 0) != 0)
		return -1;
	if (in2 != NULL && ie_tensor_numel(in2) > 0 && in3 != NULL && ie_tensor_numel(in3) > 0)
		return ie_op_error(ctx, "takes scales or sizes, not both");
	return resize_common(ctx, &cfg, in2, NULL, 0, in3, in1);
}

/*
 * Upsample (opset 7: scales attribute; opset 9: scales input): nearest or
 * (bi)linear with asymmetric coordinates.
 */
static int
op_upsample(ie_node_ctx *ctx)
{
	resize_cfg	cfg;
	const float *sv = NULL;
	int			ns;

	if (ctx->n_inputs < 1 || ctx->inputs[0] == NULL)
		return ie_op_error(ctx, "needs input X");
	if (upsample_check_form(ctx) != 0 || resize_parse(ctx, &cfg, 1) != 0)
		return -1;
	if (ctx->n_inputs > 1 && ctx->inputs[1] != NULL)
		return resize_common(ctx, &cfg, ctx->inputs[1], NULL, 0, NULL, NULL);
	ns = ie_attr_floats(ctx, "scales", &sv);
	if (ns < 0)
		return ie_op_error(ctx, "needs scales");
	return resize_common(ctx, &cfg, NULL, sv, ns, NULL, NULL);
}

const ie_op_def ie_ops_resize[] = {
	{"Resize", op_resize},
	{"Upsample", op_upsample},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_resize[] = {
	{"Resize", resize_check_attrs},
	{"Upsample", resize_check_attrs},
	{NULL, NULL}
};
