/*
 * fusion.h
 *	  Load-time fusion of element-wise chains into the Conv or MatMul that
 *	  feeds them (internal to the engine).
 *
 * After planning, model.c calls ie_fuse_plan().  For each Conv and
 * ConvTranspose with constant weights, and each MatMul, it collects the nodes that follow and
 * compute only from its output and constants: Add, Sub, Mul, Div with a
 * scalar or per-channel constant (for MatMul: per column, a 1-D constant,
 * when B is a constant 2-D matrix; scalars only otherwise) or with another
 * value of the chain, Relu, Clip, HardSigmoid, Sigmoid, Erf and Gelu's erf
 * form (exp, erf and GELU through vmath.h, as the operators compute them;
 * Erf: BERT's GELU chain spelled out, Gelu: opset 20 exports) and (Conv,
 * ConvTranspose) inference-mode BatchNormalization.
 * The longest run of them whose intermediate values nobody else reads
 * becomes the node's epilogue: a small program over registers, run on each
 * block of output right after it is computed, while it is in cache.  The
 * fused nodes leave the plan, and so do their intermediate tensors.
 * IE_FUSION=0 in the environment turns this off (for measurements).
 *
 * A fused node keeps its op_type, inputs and input type checks (model_int.h,
 * ie_plan_node.checks); the nodes fused into it leave with theirs, which
 * would pass: every value of the chain is float (Conv, ConvTranspose and
 * MatMul compute float alone) and so is every constant a step takes, and
 * float is a type each version of these operators allows.
 *
 * The epilogue computes every step in float in the order the graph does, so
 * results equal the unfused graph's, except BatchNormalization, which
 * becomes y = x * a + b with a = scale / sqrt(var + eps) and b = B - mean * a
 * (as ONNX Runtime folds it; differences ~1e-7 relative).  A Conv's bias is
 * added by the epilogue after the product rather than before it.
 *
 * Threading: an epilogue is read-only after load; ie_epilogue_apply may run
 * on many threads at once.
 */
#ifndef IE_FUSION_H
#define IE_FUSION_H

#include "worker/engine/op.h"

typedef struct ie_epilogue ie_epilogue;
struct ie_model;

/*
 * Rewrites m's plan in place, fusing element-wise chains into Convs and
 * MatMuls as above; 0, or -1 with a message in err when memory runs out.
 */
int			ie_fuse_plan(struct ie_model *m, char *err, size_t errlen);

/*
 * Adds bias to n consecutive values y of output channel c (0 <= c < the
 * Conv's output channels), then applies ep to them in place.
 */
void		ie_epilogue_apply(const ie_epilogue *ep, float *y, int64_t c, int64_t n,
							  float bias);

/*
 * Applies a MatMul's ep in place to n consecutive values of one output
 * row, columns [c0, c0 + n) of the N columns.
 */
void		ie_epilogue_apply_row(const ie_epilogue *ep, float *y, int64_t c0,
								  int64_t n);

/* Number of graph nodes fused into ep (for tests and logs). */
int			ie_epilogue_n_steps(const ie_epilogue *ep);

/* Frees *ep and nulls the pointer. */
void		ie_epilogue_destroy(ie_epilogue **ep);

#endif							/* IE_FUSION_H */
