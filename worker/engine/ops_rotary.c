/*
 * ops_rotary.c
 *	  The ONNX RotaryEmbedding operator (opset 23): rotary positional
 *	  embeddings (RoPE; Su et al., "RoFormer", arXiv 2104.09864), float32
 *	  and float64.
 *
 * Semantics are those of ONNX Operators.md, RotaryEmbedding-23, and of its
 * reference, onnx/reference/ops/op_rotary_embedding.py: each head vector of
 * X (head_size values) has its first rotary_embedding_dim values rotated
 * pairwise by the angle of its token's position, cos and sin read from the
 * caches; the rest is copied.  Pairs are (i, i + dim / 2) ("halves", the
 * default) or (2i, 2i + 1) (interleaved).  Products are formed in X's type,
 * as the reference does.
 *
 * Threading: no state outside the call.
 */
#include <stdbool.h>
#include <string.h>

#include "worker/engine/op.h"

/*
 * The attribute values the operator takes: rotary_embedding_dim and
 * num_heads not negative, rotary_embedding_dim even (the rotated part splits
 * into two halves, or into pairs).  Run by the loader on every
 * RotaryEmbedding node (ie_op_check_lookup) and by the operator.
 */
static int
rotary_check_attrs(ie_node_ctx *ctx)
{
	int64_t		dim = ie_attr_int(ctx, "rotary_embedding_dim", 0);
	int64_t		heads = ie_attr_int(ctx, "num_heads", 0);

	if (dim < 0 || dim % 2 != 0)
		return ie_op_error(ctx, "rotary_embedding_dim %lld must be even and not negative",
						   (long long) dim);
	if (heads < 0)
		return ie_op_error(ctx, "num_heads %lld must not be negative", (long long) heads);
	return 0;
}

/*
 * Where X's values lie, seen as [batch, seq, heads, head] with head_size
 * contiguous values per head vector: the element counts of each dimension
 * and the strides (in elements) of the first three.
 */
typedef struct rope_layout
{
	int64_t		batch,
				seq,
				heads,
				head_size;
	int64_t		sb,
				ss,
				sh;
} rope_layout;

/*
 * X's layout: 4-D [batch, heads, seq, head_size], or 3-D [batch, seq,
 * hidden] with num_heads (attribute, required) heads of hidden / num_heads
 * values each.  -1 after an error for another rank, a 3-D X without
 * num_heads or whose hidden size num_heads does not divide.
 */
static int
rope_layout_of(ie_node_ctx *ctx, const ie_tensor *X, rope_layout *l)
{
	if (X->ndim == 4)
	{
		l->batch = X->dims[0];
		l->heads = X->dims[1];
		l->seq = X->dims[2];
		l->head_size = X->dims[3];
		l->sh = l->seq * l->head_size;
		l->ss = l->head_size;
	}
	else if (X->ndim == 3)
	{
		int64_t		heads = ie_attr_int(ctx, "num_heads", 0);

		if (heads <= 0)
			return ie_op_error(ctx, "a 3-D input needs the num_heads attribute");
		if (X->dims[2] % heads != 0)
			return ie_op_error(ctx, "hidden size %lld is not a multiple of num_heads %lld",
							   (long long) X->dims[2], (long long) heads);
		l->batch = X->dims[0];
		l->seq = X->dims[1];
		l->heads = heads;
		l->head_size = X->dims[2] / heads;
		l->sh = l->head_size;
		l->ss = heads * l->head_size;
	}
	else
		return ie_op_error(ctx, "input rank %d (3 or 4)", X->ndim);
	l->sb = l->seq * l->heads * l->head_size;
	return 0;
}

/*
 * Checks cos_cache and sin_cache against X and the optional position_ids:
 * with position_ids ([batch, seq] int64, or [1, seq] for every batch
 * entry, as the reference's broadcasting allows), caches [max_position,
 * half]; without, caches [batch, seq, half] (or [1, seq, half]).  Sets
 * *cache_sb to the caches' stride, in rows of half values, from one batch
 * entry to the next (0 when shared) and *pos_sb likewise for position_ids.
 * -1 after an error.
 */
static int
rope_check_caches(ie_node_ctx *ctx, const rope_layout *l, int64_t half,
				  const ie_tensor *C, const ie_tensor *S, const ie_tensor *P,
				  int64_t *cache_sb, int64_t *pos_sb)
{
	char		s1[128],
				s2[128];

	if (C->ndim != S->ndim || memcmp(C->dims, S->dims, sizeof(int64_t) * C->ndim) != 0)
		return ie_op_error(ctx, "cos_cache %s and sin_cache %s differ in shape",
						   ie_shape_str(s1, sizeof(s1), C->ndim, C->dims),
						   ie_shape_str(s2, sizeof(s2), S->ndim, S->dims));
	*cache_sb = 0;
	*pos_sb = 0;
	if (P != NULL)
	{
		if (P->dtype != IE_INT64)
			return ie_op_error(ctx, "position_ids must be int64, not %s",
							   ie_dtype_name(P->dtype));
		if (P->ndim != 2 || (P->dims[0] != l->batch && P->dims[0] != 1) ||
			P->dims[1] != l->seq)
			return ie_op_error(ctx, "position_ids %s is not [batch, sequence] = [%lld, %lld]",
							   ie_shape_str(s1, sizeof(s1), P->ndim, P->dims),
							   (long long) l->batch, (long long) l->seq);
		if (C->ndim != 2 || C->dims[1] != half)
			return ie_op_error(ctx, "with position_ids, cos_cache %s must be [max_position, %lld]",
							   ie_shape_str(s1, sizeof(s1), C->ndim, C->dims),
							   (long long) half);
		*pos_sb = P->dims[0] == 1 ? 0 : l->seq;
		return 0;
	}
	if (C->ndim != 3 || (C->dims[0] != l->batch && C->dims[0] != 1) ||
		C->dims[1] != l->seq || C->dims[2] != half)
		return ie_op_error(ctx, "without position_ids, cos_cache %s must be [%lld, %lld, %lld]",
						   ie_shape_str(s1, sizeof(s1), C->ndim, C->dims),
						   (long long) l->batch, (long long) l->seq, (long long) half);
	*cache_sb = C->dims[0] == 1 ? 0 : l->seq;
	return 0;
}

/*
 * One head vector: x (head_size values) into y, its first 2 * half values
 * rotated with cos c[0..half) and sin s[0..half), the rest copied.
 */
#define ROPE_VECTOR(NAME, T) \
static void \
NAME(const T *x, T *y, const T *c, const T *s, int64_t half, int64_t head_size, \
	 bool interleaved) \
{ \
	if (interleaved) \
		for (int64_t i = 0; i < half; i++) \
		{ \
			T			x1 = x[2 * i], \
						x2 = x[2 * i + 1]; \
			y[2 * i] = c[i] * x1 - s[i] * x2; \
			y[2 * i + 1] = s[i] * x1 + c[i] * x2; \
		} \
	else \
		for (int64_t i = 0; i < half; i++) \
		{ \
			T			x1 = x[i], \
						x2 = x[i + half]; \
			y[i] = c[i] * x1 - s[i] * x2; \
			y[i + half] = s[i] * x1 + c[i] * x2; \
		} \
	for (int64_t k = 2 * half; k < head_size; k++) \
		y[k] = x[k]; \
}

ROPE_VECTOR(rope_vector_f32, float)
ROPE_VECTOR(rope_vector_f64, double)

/*
 * RotaryEmbedding (opset 23): inputs X (4-D [batch, heads, seq, head_size]
 * or 3-D [batch, seq, heads * head_size] with num_heads), cos_cache and
 * sin_cache (X's type; [max_position, dim / 2] with position_ids, else
 * [batch, seq, dim / 2]), optional position_ids (int64 [batch, seq], each
 * in [0, max_position)); attributes interleaved (0: rotate the halves),
 * rotary_embedding_dim (0: head_size; else even, at most head_size),
 * num_heads.  Y has X's shape, layout and type.  Float and double; any
 * shape or value outside these is an error (IE_ERR_INVALID), another type
 * "is not supported".
 */
static int
op_rotary(ie_node_ctx *ctx)
{
	const ie_tensor *X,
			   *C,
			   *S,
			   *P;
	bool		interleaved = ie_attr_int(ctx, "interleaved", 0) != 0;
	int64_t		dim = ie_attr_int(ctx, "rotary_embedding_dim", 0);
	int64_t		half,
				cache_sb = 0,
				pos_sb = 0,
				max_pos;
	rope_layout l = {0};
	ie_tensor  *Y;

	if (ctx->n_inputs < 3 || ctx->inputs[0] == NULL || ctx->inputs[1] == NULL ||
		ctx->inputs[2] == NULL)
		return ie_op_error(ctx, "needs inputs X, cos_cache and sin_cache");
	X = ctx->inputs[0];
	C = ctx->inputs[1];
	S = ctx->inputs[2];
	P = ctx->n_inputs > 3 ? ctx->inputs[3] : NULL;
	if (X->dtype != IE_FLOAT && X->dtype != IE_DOUBLE)
		return ie_op_error(ctx, "input type %s is not supported (only float, double)",
						   ie_dtype_name(X->dtype));
	if (C->dtype != X->dtype || S->dtype != X->dtype)
		return ie_op_error(ctx, "cos_cache and sin_cache must have X's type %s",
						   ie_dtype_name(X->dtype));
	if (rotary_check_attrs(ctx) != 0 || rope_layout_of(ctx, X, &l) != 0)
		return -1;
	if (dim == 0)
		dim = l.head_size;
	if (dim % 2 != 0 || dim > l.head_size)
		return ie_op_error(ctx, "rotary dimension %lld must be even and at most head_size %lld",
						   (long long) dim, (long long) l.head_size);
	half = dim / 2;
	if (rope_check_caches(ctx, &l, half, C, S, P, &cache_sb, &pos_sb) != 0)
		return -1;
	max_pos = C->dims[0];
	if (P != NULL)
		for (int64_t i = 0; i < ie_tensor_numel(P); i++)
		{
			int64_t		p = ((const int64_t *) P->data)[i];

			if (p < 0 || p >= max_pos)
				return ie_op_error(ctx, "position id %lld is out of range [0, %lld)",
								   (long long) p, (long long) max_pos);
		}
	Y = ie_tensor_new_uninit(X->dtype, X->ndim, X->dims);
	if (Y == NULL)
		return ie_op_error(ctx, "out of memory for the output");
	ctx->outputs[0] = Y;
	for (int64_t b = 0; b < l.batch; b++)
		for (int64_t s = 0; s < l.seq; s++)
		{
			/* the caches' row of this token */
			int64_t		row = P != NULL ?
				((const int64_t *) P->data)[b * pos_sb + s] : b * cache_sb + s;

			for (int64_t h = 0; h < l.heads; h++)
			{
				int64_t		off = b * l.sb + s * l.ss + h * l.sh;

				if (X->dtype == IE_FLOAT)
					rope_vector_f32((const float *) X->data + off, (float *) Y->data + off,
									(const float *) C->data + row * half,
									(const float *) S->data + row * half, half,
									l.head_size, interleaved);
				else
					rope_vector_f64((const double *) X->data + off, (double *) Y->data + off,
									(const double *) C->data + row * half,
									(const double *) S->data + row * half, half,
									l.head_size, interleaved);
			}
		}
	return 0;
}

const ie_op_def ie_ops_rotary[] = {
	{"RotaryEmbedding", op_rotary},
	{NULL, NULL}
};

const ie_op_def ie_op_checks_rotary[] = {
	{"RotaryEmbedding", rotary_check_attrs},
	{NULL, NULL}
};
