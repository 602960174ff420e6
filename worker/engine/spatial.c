/*
 * spatial.c
 *	  Window geometry shared by Conv, ConvTranspose, AveragePool and MaxPool:
 *	  reading kernel_shape, strides, dilations, pads and auto_pad, and the
 *	  output extents; and the im2col lowering of Conv, ConvInteger and
 *	  QLinearConv (ops_conv.c, ops_quant.c).
 *
 * The output-size formulas are the ONNX operator specification's
 * (onnx/docs/Operators.md), with ek = dilation * (kernel - 1) + 1:
 *	  Conv, pools, auto_pad NOTSET:
 *		out = floor((in + pad_begin + pad_end - ek) / stride) + 1
 *		(ceil instead of floor with a pool's ceil_mode 1)
 *	  VALID: the same with no padding, i.e. ceil((in - ek + 1) / stride)
 *	  SAME_UPPER / SAME_LOWER: out = ceil(in / stride), total padding
 *		max(0, (out - 1) * stride + ek - in), the odd cell at the end for
 *		SAME_UPPER and at the beginning for SAME_LOWER
 *	  ConvTranspose (computed in ops_conv.c, padding split here):
 *		out = stride * (in - 1) + output_padding + ek - pad_begin - pad_end
 * With ceil_mode a last window that would start in the end padding is
 * dropped, as onnxruntime and PyTorch do.
 *
 * Threading: pure functions of their arguments.
 */
#include <string.h>

#include "worker/engine/spatial.h"

/* Sets nsp and every slot to extent 1, stride 1, dilation 1, no padding. */
void
ie_spatial_init(ie_spatial *s, int nsp)
{
	s->nsp = nsp;
	for (int i = 0; i < 3; i++)
	{
		s->in[i] = s->out[i] = s->k[i] = 1;
		s->stride[i] = s->dil[i] = 1;
		s->pad_begin[i] = s->pad_end[i] = 0;
	}
}

/*
 * Reads kernel_shape into s->k: from wdims (Conv weights) with the optional
 * attribute checked against it, or from the required attribute.
 */
int
ie_spatial_read_kernel(ie_node_ctx *ctx, ie_spatial *s, const int64_t *wdims)
{
	const int64_t *v;
	int			off = 3 - s->nsp;
	int			n = ie_attr_ints(ctx, "kernel_shape", &v);

	if (wdims != NULL)
	{
		for (int i = 0; i < s->nsp; i++)
			s->k[off + i] = wdims[i];
		if (n < 0)
			return 0;
		if (n != s->nsp)
			return ie_op_error(ctx, "kernel_shape has %d values for %d spatial axes",
							   n, s->nsp);
		for (int i = 0; i < n; i++)
			if (v[i] != s->k[off + i])
				return ie_op_error(ctx, "kernel_shape %lld disagrees with the weights (%lld)",
								   (long long) v[i], (long long) s->k[off + i]);
		return 0;
	}
	if (n != s->nsp)
		return ie_op_error(ctx, "kernel_shape must have %d values", s->nsp);
	for (int i = 0; i < n; i++)
	{
		if (v[i] < 1)
			return ie_op_error(ctx, "unsupported kernel extent %lld", (long long) v[i]);
		s->k[off + i] = v[i];
	}
	return 0;
}

/*
 * Reads the ints attribute name (one value >= 1 per spatial axis) into the
 * last nsp slots of dst; what names the value in errors.  Unset: dst stays.
 */
static int
spatial_read_steps(ie_node_ctx *ctx, const ie_spatial *s, const char *name,
				   const char *what, int64_t *dst)
{
	const int64_t *v;
	int			n = ie_attr_ints(ctx, name, &v);

	if (n < 0)
		return 0;
	if (n != s->nsp)
		return ie_op_error(ctx, "%s has %d values for %d spatial axes", name, n, s->nsp);
	for (int i = 0; i < n; i++)
	{
		if (v[i] < 1)
			return ie_op_error(ctx, "unsupported %s %lld", what, (long long) v[i]);
		dst[3 - s->nsp + i] = v[i];
	}
	return 0;
}

/* Reads strides, dilations and pads into s (see spatial.h). */
int
ie_spatial_read_attrs(ie_node_ctx *ctx, ie_spatial *s)
{
	const int64_t *v;
	int			n;
	int			off = 3 - s->nsp;

	if (spatial_read_steps(ctx, s, "strides", "stride", s->stride) != 0 ||
		spatial_read_steps(ctx, s, "dilations", "dilation", s->dil) != 0)
		return -1;
	n = ie_attr_ints(ctx, "pads", &v);
	if (n < 0)
		return 0;
	if (n != 2 * s->nsp)
		return ie_op_error(ctx, "pads has %d values for %d spatial axes", n, s->nsp);
	for (int i = 0; i < s->nsp; i++)
	{
		if (v[i] < 0 || v[s->nsp + i] < 0)
			return ie_op_error(ctx, "unsupported negative pad");
		s->pad_begin[off + i] = v[i];
		s->pad_end[off + i] = v[s->nsp + i];
	}
	return 0;
}

/*
 * 0 for the four auto_pad values the spec defines and "" (NOTSET, as ONNX
 * Runtime reads it; the callers treat it so), else an error.
 */
int
ie_spatial_check_auto_pad(ie_node_ctx *ctx, const char *auto_pad)
{
	if (auto_pad[0] != '\0' &&
		strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0 &&
		strcmp(auto_pad, "SAME_UPPER") != 0 && strcmp(auto_pad, "SAME_LOWER") != 0)
		return ie_op_error(ctx, "unsupported auto_pad \"%s\"", auto_pad);
	return 0;
}

/* Splits total padding; the odd cell at the end with upper (SAME_UPPER). */
void
ie_spatial_split_pad(int64_t total, int upper, int64_t *begin, int64_t *end)
{
	*begin = upper ? total / 2 : total - total / 2;
	*end = total - *begin;
}

/* Output extents and VALID/SAME_* pads of a Conv or pool (see top of file). */
int
ie_spatial_output(ie_node_ctx *ctx, ie_spatial *s, const int64_t *in_dims,
				  const char *auto_pad, int ceil_mode)
{
	int			off = 3 - s->nsp;

	if (ie_spatial_check_auto_pad(ctx, auto_pad) != 0)
		return -1;
	for (int i = off; i < 3; i++)
	{
		int64_t		in = in_dims[i - off];
		int64_t		ek;
		int64_t		st = s->stride[i];
		int64_t		span;

		/*
		 * Attributes are any int64 (pads [2^62, 0, 2^62, 0] padded a 3-wide
		 * input to 2^63 + 3, a signed overflow): sums and products past
		 * int64 are refused.  A window's extent, the padded input and SAME's
		 * total padding are then exact; ceil(in / st) cannot overflow.
		 */
		if (__builtin_mul_overflow(s->dil[i], s->k[i] - 1, &ek) ||
			__builtin_add_overflow(ek, 1, &ek))
			return ie_op_error(ctx, "dilation %lld times kernel extent %lld overflows",
							   (long long) s->dil[i], (long long) s->k[i]);
		s->in[i] = in;
		if (auto_pad[0] == 'S')
		{
			int64_t		total;

			s->out[i] = in / st + (in % st != 0);
			if (__builtin_mul_overflow(s->out[i] - 1, st, &total) ||
				__builtin_add_overflow(total, ek, &total) ||
				__builtin_sub_overflow(total, in, &total))
				return ie_op_error(ctx, "SAME padding of input %lld for kernel extent %lld "
								   "and stride %lld overflows",
								   (long long) in, (long long) ek, (long long) st);
			ie_spatial_split_pad(total < 0 ? 0 : total, auto_pad[5] == 'U',
								 &s->pad_begin[i], &s->pad_end[i]);
			continue;
		}
		if (auto_pad[0] == 'V')
			s->pad_begin[i] = s->pad_end[i] = 0;
		if (__builtin_add_overflow(in, s->pad_begin[i], &span) ||
			__builtin_add_overflow(span, s->pad_end[i], &span) ||
			__builtin_sub_overflow(span, ek, &span))
			return ie_op_error(ctx, "input %lld padded by %lld and %lld overflows",
							   (long long) in, (long long) s->pad_begin[i],
							   (long long) s->pad_end[i]);
		if (span < 0)
			return ie_op_error(ctx, "kernel extent %lld exceeds padded input %lld",
							   (long long) ek, (long long) (span + ek));
		s->out[i] = (ceil_mode ? span / st + (span % st != 0) : span / st) + 1;
		/* a window must start inside the input or the begin padding */
		if (ceil_mode && (s->out[i] - 1) * st >= in + s->pad_begin[i])
			s->out[i]--;
	}
	return 0;
}

/* odims = [n, c, out...] for the node's nsp spatial axes. */
void
ie_spatial_out_dims(const ie_spatial *s, int64_t n, int64_t c,
					int64_t odims[IE_MAX_DIMS])
{
	odims[0] = n;
	odims[1] = c;
	for (int i = 0; i < s->nsp; i++)
		odims[2 + i] = s->out[3 - s->nsp + i];
}

/*
 * im2col for output rows [r0, r1) of one image's channel group into col
 * [cg * taps, (r1 - r0) * ow], row stride ld; padding reads as zero (see
 * spatial.h).
 */
void
ie_spatial_im2col(const ie_spatial *g, const float *x, int64_t cg, int64_t r0,
				  int64_t r1, float *col, int64_t ld)
{
	int64_t		ow = g->out[2];
	int64_t		ncols = ld;
	int64_t		plane = g->in[0] * g->in[1] * g->in[2];

	for (int64_t c = 0; c < cg; c++)
		for (int64_t kz = 0; kz < g->k[0]; kz++)
			for (int64_t ky = 0; ky < g->k[1]; ky++)
				for (int64_t kx = 0; kx < g->k[2]; kx++)
				{
					float	   *dst = col + (((c * g->k[0] + kz) * g->k[1] + ky) * g->k[2] + kx) * ncols;
					int64_t		xoff = kx * g->dil[2] - g->pad_begin[2];
					/*
					 * ox range whose input column is inside [0, in_w): ceil(a
					 * / stride) for a > 0 as 1 + (a - 1) / stride, which a
					 * stride near INT64_MAX cannot overflow
					 */
					int64_t		lo = xoff >= 0 ? 0 : 1 + (-xoff - 1) / g->stride[2];
					int64_t		hi = g->in[2] - xoff <= 0 ? 0 :
						1 + (g->in[2] - xoff - 1) / g->stride[2];

					if (hi > ow)
						hi = ow;
					if (lo > hi)
						lo = hi;
					for (int64_t r = r0; r < r1; r++, dst += ow)
					{
						int64_t		oz = r / g->out[1];
						int64_t		oy = r % g->out[1];
						int64_t		iz = oz * g->stride[0] - g->pad_begin[0] + kz * g->dil[0];
						int64_t		iy = oy * g->stride[1] - g->pad_begin[1] + ky * g->dil[1];
						const float *src;

						if (iz < 0 || iz >= g->in[0] || iy < 0 || iy >= g->in[1])
						{
							memset(dst, 0, ow * sizeof(float));
							continue;
						}
						src = x + c * plane + (iz * g->in[1] + iy) * g->in[2] + xoff;
						if (lo > 0)
							memset(dst, 0, lo * sizeof(float));
						if (g->stride[2] == 1)
							memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
						else
							for (int64_t ox = lo; ox < hi; ox++)
								dst[ox] = src[ox * g->stride[2]];
						if (hi < ow)
							memset(dst + hi, 0, (ow - hi) * sizeof(float));
					}
				}
}
