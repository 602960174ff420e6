/*
 * spatial.h
 *	  Window geometry shared by the convolution and pooling operators
 *	  (ops_conv.c, ops_pool.c, ops_quant.c); internal to the engine.
 *
 * A windowed operator over 1 to 3 spatial axes is handled as 3-D: the
 * node's nsp axes fill the last nsp of the 3 slots and the leading ones
 * have extent 1, stride 1, dilation 1 and no padding.  spatial.c reads the
 * attributes every windowed operator shares (kernel_shape, strides,
 * dilations, pads, auto_pad) and computes output extents by the formulas
 * of the ONNX operator specification (Conv, ConvTranspose, AveragePool,
 * MaxPool sections of onnx/docs/Operators.md).
 *
 * Threading: pure functions of their arguments, but for
 * ie_conv_depthwise_plane's use of the calling thread's scratch.
 */
#ifndef IE_SPATIAL_H
#define IE_SPATIAL_H

#include "worker/engine/op.h"

/* Geometry of one windowed operator, spatial axes padded to 3 (d, h, w). */
typedef struct ie_spatial
{
	int			nsp;			/* spatial rank of the node, 1..3 */
	int64_t		in[3];
	int64_t		out[3];
	int64_t		k[3];
	int64_t		stride[3];
	int64_t		dil[3];
	int64_t		pad_begin[3];
	int64_t		pad_end[3];
} ie_spatial;

/* Sets nsp and every slot to extent 1, stride 1, dilation 1, no padding. */
void		ie_spatial_init(ie_spatial *s, int nsp);

/*
 * Reads kernel_shape into s->k.  With wdims (the spatial dims of Conv
 * weights) the kernel comes from the weights and the attribute, optional,
 * must agree; without, the attribute is required and each extent >= 1.
 */
int			ie_spatial_read_kernel(ie_node_ctx *ctx, ie_spatial *s,
								   const int64_t *wdims);

/*
 * Reads strides and dilations (each >= 1) and pads (>= 0, all begins then
 * all ends), checking each has one value per spatial axis (two for pads).
 */
int			ie_spatial_read_attrs(ie_node_ctx *ctx, ie_spatial *s);

/* 0 when auto_pad is NOTSET, VALID, SAME_UPPER or SAME_LOWER, else an error. */
int			ie_spatial_check_auto_pad(ie_node_ctx *ctx, const char *auto_pad);

/*
 * Splits a total padding between the two ends of an axis: the odd cell goes
 * at the end with upper (SAME_UPPER), at the beginning otherwise.
 */
void		ie_spatial_split_pad(int64_t total, int upper, int64_t *begin,
								 int64_t *end);

/*
 * Sets s->in from in_dims (the node's nsp spatial extents) and computes
 * s->out and, for VALID/SAME_*, the pads: the Conv/pool formulas, ceil_mode
 * (0 or 1) only for pools.  Errors name an unsupported auto_pad or a kernel
 * larger than the padded input.
 */
int			ie_spatial_output(ie_node_ctx *ctx, ie_spatial *s,
							  const int64_t *in_dims, const char *auto_pad,
							  int ceil_mode);

/* odims = [n, c, out...] for the node's nsp spatial axes. */
void		ie_spatial_out_dims(const ie_spatial *s, int64_t n, int64_t c,
								int64_t odims[IE_MAX_DIMS]);

/*
 * im2col for output rows [r0, r1) of one image's channel group (float):
 * x is the group's first channel, [cg, in...]; col gets [cg * taps,
 * (r1 - r0) * out_w] with row stride ld (>= (r1 - r0) * out_w), row (c,
 * kz, ky, kx), column (oz, oy, ox) with oz, oy merged into the output row
 * index r = oz * out_h + oy.  Taps in the padding read as zero.  Conv
 * (ops_conv.c) and ConvInteger/QLinearConv (ops_quant.c, on operands
 * centred by their zero points, so zero is the zero point) multiply the
 * weights [mg, cg * taps] by it.
 */
void		ie_spatial_im2col(const ie_spatial *g, const float *x, int64_t cg,
							  int64_t r0, int64_t r1, float *col, int64_t ld);

/*
 * Depthwise convolution (ops_conv.c, Conv's direct loop, also taken by
 * ConvInteger and QLinearConv on centred operands): one input plane x
 * [in...] of geometry g into the output planes y [mult, out...] of its
 * mult output channels, weights w [mult, taps], bias b [mult] or NULL,
 * float; taps in the padding read as zero.  Takes this thread's scratch
 * (ie_thread_scratch) of the shape ie_conv_depthwise_scratch gives (its
 * rank, 0 for none), which the caller checks against the tensor limit
 * before its parallel region.  Returns -1 when memory runs out.
 */
int			ie_conv_depthwise_scratch(const ie_spatial *g, int64_t dims[3]);
int			ie_conv_depthwise_plane(const ie_spatial *g, const float *x,
									const float *w, const float *b, int64_t mult,
									float *y);

#endif							/* IE_SPATIAL_H */
