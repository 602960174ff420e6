/*
 * fusion.h
 *	  Load-time fusion of element-wise chains into the Conv, MatMul or
 *	  MatMulInteger that feeds them (internal to the engine).
 *
 * After planning, model.c calls ie_fuse_plan().  For each Conv and
 * ConvTranspose with constant weights, and each MatMul, it collects the
 * nodes that follow and compute only from its output and constants: Add,
 * Sub, Mul, Div with a scalar or per-channel constant (for MatMul: per
 * column, a 1-D constant, when B is a constant 2-D matrix; scalars only
 * otherwise) or with another value of the chain, Relu, Clip, HardSigmoid,
 * Sigmoid, Erf and Gelu's erf form (exp, erf and GELU through vmath.h, as
 * the operators compute them; Erf: BERT's GELU chain spelled out, Gelu:
 * opset 20 exports) and (Conv, ConvTranspose) inference-mode
 * BatchNormalization.
 * The longest run of them whose intermediate values nobody else reads
 * becomes the node's epilogue: a small program over registers, run on each
 * block of output right after it is computed, while it is in cache.  The
 * fused nodes leave the plan, and so do their intermediate tensors.
 * IE_FUSION=0 in the environment turns this off (for measurements).
 *
 * A MatMulInteger takes the chain that starts with a Cast of its int32
 * output to float and, next, a Mul by the scale, then what a MatMul takes
 * (the bias Add, GELU): each quantized MatMul as ONNX Runtime's
 * quantize_dynamic writes it.  This is the idea of ONNX Runtime's
 * MatMulIntegerToFloat fusion (onnxruntime/core/optimizer/
 * matmul_integer_to_float.cc), whose kernel scales each block of int32
 * sums as the GEMM finishes it (MLAS_QGEMM_SCALE_BIAS_OUTPUT_PROCESSOR,
 * onnxruntime/core/mlas/lib/qpostprocessor.cpp); here the epilogue runs on
 * each block the integer product completes (ops_quant.c) and the
 * MatMulInteger writes float.  The Mul's other operand is a constant (a
 * scalar, or one per column of a constant 2-D B) or a value computed at
 * run time (A's scale from DynamicQuantizeLinear times B's).  That value
 * becomes the fused node's input 4 (ie_epilogue_runtime_input), the node
 * running at the Mul's place when the value is computed after the
 * MatMulInteger; at run time it must be float (the Mul's type rule, its
 * other operand being the Cast's float) and one value or one per column
 * along the output's last axis, widening nothing, or ops_quant.c computes
 * the Cast and the Mul as those nodes do, then the steps that follow.
 * Register 0 holds the int32 sums, which only the Cast reads; with a
 * run-time operand, no step after the Mul reads the sums or the Cast's
 * output.
 *
 * A fused node keeps its op_type, inputs and input type checks (model_int.h,
 * ie_plan_node.checks); the nodes fused into it leave with theirs, which
 * would pass: every value of the chain is float (Conv, ConvTranspose and
 * MatMul compute float alone; a MatMulInteger's int32 goes to a Cast,
 * which takes int32) and so is every constant a step takes, and float is
 * a type each version of these operators allows.  The run-time operand's
 * check is the Mul's, narrowed to float.
 *
 * The epilogue computes every step in float in the order the graph does, so
 * results equal the unfused graph's (a MatMulInteger's: each sum rounded to
 * float as Cast rounds it, then the product with the scale rounded, as Mul
 * rounds it), except BatchNormalization, which becomes y = x * a + b with
 * a = scale / sqrt(var + eps) and b = B - mean * a (as ONNX Runtime folds
 * it; differences ~1e-7 relative).  A Conv's bias is added by the
 * epilogue after the product rather than before it.
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
 * Rewrites m's plan in place, fusing element-wise chains into Convs,
 * MatMuls and MatMulIntegers as above; 0, or -1 with a message in err
 * when memory runs out.
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

/*
 * Applies a MatMulInteger's ep in place to n int32 sums y of one output
 * row, columns [c0, c0 + n) of the N columns, leaving n floats there.
 * scale: the run-time operand's values (ie_epilogue_runtime_input): one,
 * or with scale_per_col one per column (N); NULL where ep has none.
 */
void		ie_epilogue_apply_row_i32(const ie_epilogue *ep, void *y, int64_t c0,
									  int64_t n, const float *scale, bool scale_per_col);

/*
 * Applies the steps of a MatMulInteger's ep that follow the Mul by its
 * run-time operand in place to n floats of one row of that Mul's output
 * (computed apart, when the operand's shape does not fit: fusion.h),
 * columns [c0, c0 + n).
 */
void		ie_epilogue_apply_row_scaled(const ie_epilogue *ep, float *y, int64_t c0,
										 int64_t n);

/*
 * The input of the fused node that holds ep's run-time operand (a
 * MatMulInteger's scale computed at run time), or -1 when it has none
 * (ep NULL included).
 */
int			ie_epilogue_runtime_input(const ie_epilogue *ep);

/*
 * The least rank of the result of ep's chain: 1 where a step takes a 1-D
 * constant (of one value: a MatMul's per-column constants are 1-D), which
 * broadcasting makes a 0-D product (A and B 1-D) into [1]; else 0.  A
 * MatMul or MatMulInteger with a 0-D product and ep then writes [1].
 */
int			ie_epilogue_min_rank(const ie_epilogue *ep);

/*
 * Widens Y, a new output of a MatMul or MatMulInteger that carries ep, from
 * 0-D to [1] (one element either way) where ep's chain needs that rank
 * (ie_epilogue_min_rank).
 */
void		ie_epilogue_widen_output(const ie_epilogue *ep, ie_tensor *Y);

/* Number of graph nodes fused into ep (for tests and logs). */
int			ie_epilogue_n_steps(const ie_epilogue *ep);

/* Frees *ep and nulls the pointer. */
void		ie_epilogue_destroy(ie_epilogue **ep);

#endif							/* IE_FUSION_H */
