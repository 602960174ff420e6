/*
 * op.h
 *	  The operator interface of the ONNX executor (internal to the engine).
 *
 * An operator is a function that reads a node's inputs and attributes and
 * allocates and fills its outputs.  Operators are grouped by concern, one
 * file each (ops_elementwise.c, ops_shape.c, ops_conv.c, ops_pool.c,
 * ops_norm.c, ops_matmul.c, ops_resize.c, ops_reduce.c, ops_rotary.c,
 * ops_misc.c, ops_vision.c, ops_rnn.c, ops_quant.c, ...); each file
 * exports one table of ie_op_def ending with a {NULL} entry, and
 * op_registry.c lists the tables.  Semantics
 * follow the ONNX operator specification (onnx/docs/Operators.md) for the
 * opset the model imports; an attribute value or input type an operator
 * does not implement is an error naming it, never a silent fallback.
 *
 * Threading: operators may run concurrently on different models and
 * inputs; they must not keep state outside the node context.
 */
#ifndef IE_OP_H
#define IE_OP_H

#include <stdarg.h>
#include <stdbool.h>

#include "worker/engine/engine.h"

/*
 * The default-domain opsets whose operator versions the engine knows
 * (op_schemas.h holds their attributes, inputs and outputs up to
 * IE_OPSET_MAX).
 */
#define IE_OPSET_MIN 1
#define IE_OPSET_MAX 28

/* Attribute kinds: the values of onnx.AttributeProto.AttributeType. */
typedef enum ie_attr_type
{
	IE_ATTR_UNDEFINED = 0,
	IE_ATTR_FLOAT = 1,
	IE_ATTR_INT = 2,
	IE_ATTR_STRING = 3,
	IE_ATTR_TENSOR = 4,
	IE_ATTR_FLOATS = 6,
	IE_ATTR_INTS = 7,
	IE_ATTR_STRINGS = 8
} ie_attr_type;

/* One attribute of a node, decoded at load time (owned by the model). */
typedef struct ie_attr
{
	const char *name;
	ie_attr_type type;
	float		f;
	int64_t		i;
	const char *s;				/* NUL-terminated copy of the bytes */
	size_t		s_len;
	int			n_floats;
	const float *floats;
	int			n_ints;
	const int64_t *ints;
	int			n_strings;
	const char *const *strings; /* NUL-terminated copies (STRINGS) */
	const ie_tensor *t;
} ie_attr;

/*
 * What an operator sees of one node at run time.
 *
 * inputs[i] is NULL where the node omits optional input i (empty name).
 * The operator sets outputs[j] = ie_tensor_new(...) for each output it
 * produces (n_outputs of them, omitted ones excepted); on failure it
 * returns -1 after ie_op_error(), and the executor frees whatever it had
 * allocated.
 */
typedef struct ie_node_ctx
{
	const char *op_type;
	const char *node_name;
	int			opset;			/* the default-domain opset the model imports */
	int			n_inputs;
	const ie_tensor *const *inputs;
	int			n_outputs;
	ie_tensor **outputs;
	int			n_attrs;
	const ie_attr *attrs;
	int			n_threads;
	char	   *err;
	size_t		errlen;
	ie_error_kind err_kind;		/* ie_op_error's: ie_error_kind_of its format */
	/* element-wise nodes fused into this Conv, MatMul or MatMulInteger
	 * (fusion.h), or NULL */
	const struct ie_epilogue *epilogue;
	/* inputs[0] itself when the executor drops it after this node (no
	 * later node reads it, not a graph output, not another input here):
	 * a shape-only operator may move its buffer (ie_tensor_take) rather
	 * than copy it; else NULL */
	ie_tensor  *donor;
} ie_node_ctx;

typedef int (*ie_op_fn) (ie_node_ctx *ctx);

typedef struct ie_op_def
{
	const char *op_type;
	ie_op_fn	fn;
} ie_op_def;

/* The operator tables, one per ops_*.c file. */
extern const ie_op_def ie_ops_elementwise[];
extern const ie_op_def ie_ops_shape[];
extern const ie_op_def ie_ops_conv[];
extern const ie_op_def ie_ops_pool[];
extern const ie_op_def ie_ops_norm[];
extern const ie_op_def ie_ops_matmul[];
extern const ie_op_def ie_ops_resize[];
extern const ie_op_def ie_ops_reduce[];
extern const ie_op_def ie_ops_gather[];
extern const ie_op_def ie_ops_einsum[];
extern const ie_op_def ie_ops_attention[];
extern const ie_op_def ie_ops_rotary[];
extern const ie_op_def ie_ops_misc[];
extern const ie_op_def ie_ops_vision[];
extern const ie_op_def ie_ops_rnn[];
extern const ie_op_def ie_ops_quant[];

/*
 * Load-time checks of attribute values, by op_type (same entry type, the
 * function a check): a value the operator does not implement ("unsupported
 * ..." or "... is not supported" from ie_op_error) fails the load rather
 * than the first run.  A check sees op_type, node_name, opset, the
 * attributes and n_inputs/n_outputs (the node's counts), no inputs.  The
 * operator runs the same check, so a direct call (tests) gets the same
 * error.
 */
extern const ie_op_def ie_op_checks_elementwise[];
extern const ie_op_def ie_op_checks_conv[];
extern const ie_op_def ie_op_checks_gather[];
extern const ie_op_def ie_op_checks_einsum[];
extern const ie_op_def ie_op_checks_pool[];
extern const ie_op_def ie_op_checks_norm[];
extern const ie_op_def ie_op_checks_resize[];
extern const ie_op_def ie_op_checks_shape[];
extern const ie_op_def ie_op_checks_attention[];
extern const ie_op_def ie_op_checks_rotary[];
extern const ie_op_def ie_op_checks_misc[];
extern const ie_op_def ie_op_checks_vision[];
extern const ie_op_def ie_op_checks_rnn[];
extern const ie_op_def ie_op_checks_quant[];

/*
 * Moves src's buffer into a new tensor of shape dims (same byte count),
 * leaving src empty; NULL (src untouched) when the sizes differ, the
 * shape is one ie_tensor_new would refuse, or memory runs out.  Defined in
 * tensor.c.
 */
ie_tensor  *ie_tensor_take(ie_tensor *src, int ndim, const int64_t *dims);

/*
 * One formal input of an operator version, as op_schemas.h lists them
 * (generated from onnx.defs by tools/gen_op_schemas.py): its ONNX name, its
 * type constraint ("T", "T1"; NULL for a fixed type such as Reshape's
 * int64 shape), the element types it allows (bit t set for
 * onnx.TensorProto.DataType t, which ie_dtype's values are), IE_IN_* flags,
 * and group, the position of the first formal input of the same version
 * with the same constraint (its own position when no earlier one has it).
 */
#define IE_IN_OPTIONAL		1	/* may be omitted ("") or left off the end */
#define IE_IN_VARIADIC		2	/* the last formal input, taking the rest */
#define IE_IN_HETEROGENEOUS 4	/* variadic inputs that may differ in type */

typedef struct ie_formal_input
{
	const char *name;
	const char *constraint;
	uint32_t	types;
	int			flags;
	int			group;
} ie_formal_input;

/*
 * How a node's input is checked before it runs, set at load by
 * ie_op_input_checks: the element types it may have (bit t for ie_dtype t),
 * the position of an earlier input of the node, present in it, whose type
 * it must equal (both bound by one type constraint), or -1, and its formal
 * input (for messages).
 */
typedef struct ie_input_check
{
	uint32_t	types;
	int			same_as;
	const ie_formal_input *formal;
} ie_input_check;

/*
 * Fills checks[0..n_inputs) for a node of op_type at opset (the version
 * ie_op_check_attrs checks the attributes of) whose input i is omitted
 * when inputs[i] (its value index) is negative, from the version's formal
 * inputs (op_schemas.h); the version's since_version into *since.  A node
 * with more inputs than the version takes, or that leaves out ("") an
 * input the version requires (Resize-11's roi), is invalid (ONNX IR spec,
 * "Nodes"; ONNX Runtime refuses both).  0, or -1 with a message in err
 * (IE_ERR_INVALID).
 */
int			ie_op_input_checks(const char *op_type, int opset, int n_inputs,
							   const int *inputs, ie_input_check *checks,
							   int *since, char *err, size_t errlen);

/*
 * Checks the outputs of a node of op_type at opset (the version
 * ie_op_check_attrs checks the attributes of) that has n_outputs outputs,
 * outputs[i] its output i's name ("" or NULL when left out), against the
 * version's formal outputs (op_schemas.h): a node with more outputs than
 * the version has (a third output of RNN or GRU, which only LSTM has), or
 * fewer than its schema's min_output (TopK's Values and Indices), or a
 * count between those the version does not allow (BatchNormalization has 1
 * or 5 outputs, 1 or 3 from version 14), or that leaves out ("") an output
 * that is not optional, is invalid (ONNX IR spec, "Nodes"; ONNX's checker
 * and ONNX Runtime refuse all of these through OpSchema::Verify).  0, or
 * -1 with a message in err (IE_ERR_INVALID).
 */
int			ie_op_check_outputs(const char *op_type, int opset, int n_outputs,
								const char *const *outputs, char *err,
								size_t errlen);

/*
 * Writes the names of the element types in mask (bit t for
 * onnx.TensorProto.DataType t), comma-separated, into buf (len bytes,
 * truncated); returns buf.
 */
const char *ie_type_list(uint32_t mask, char *buf, size_t len);

/* The ONNX name of element type t (any onnx.TensorProto.DataType value). */
const char *ie_type_name(int t);

/* The operator for op_type in the default ONNX domain, or NULL. */
ie_op_fn	ie_op_lookup(const char *op_type);

/* The load-time attribute check of op_type (ie_op_checks_*), or NULL. */
ie_op_fn	ie_op_check_lookup(const char *op_type);

/*
 * Inputs a node of op_type must name (none omitted, "" is omitted): the
 * loader refuses nodes with fewer (ONNX Operators.md, required inputs).
 */
int			ie_op_min_inputs(const char *op_type);

/*
 * Checks a node's attributes (attrs[0..n_attrs)) against ONNX's schema of
 * op_type at opset (op_schemas.h): each one defined by that version, with
 * its type, every required one there, the operator not newer than opset
 * (LayerNormalization excepted); IE_ERR_INVALID, or IE_ERR_NOT_SUPPORTED
 * for a type the engine does not hold.  0, or -1 with the kind in *kind and
 * a message in err.  Run by the loader on every node.
 */
int			ie_op_check_attrs(const char *op_type, int opset, int n_attrs,
							  const ie_attr *attrs, ie_error_kind *kind,
							  char *err, size_t errlen);

/* Attribute look-ups; the default when the node does not set it. */
const ie_attr *ie_attr_find(const ie_node_ctx *ctx, const char *name);
int64_t		ie_attr_int(const ie_node_ctx *ctx, const char *name, int64_t dflt);
float		ie_attr_float(const ie_node_ctx *ctx, const char *name, float dflt);
const char *ie_attr_string(const ie_node_ctx *ctx, const char *name,
						   const char *dflt);

/*
 * The position in choices (NULL-ended) of string attribute name (dflt when
 * the node does not set it) into *out; for a value not among them, -1 after
 * the error '<name> "<value>" is not supported (<choices>)'.
 */
int			ie_attr_choice(ie_node_ctx *ctx, const char *name, const char *dflt,
						   const char *const *choices, int *out);

/*
 * The ints of attribute name: returns their count and sets *vals, or
 * returns -1 (and leaves *vals alone) when the node does not set it.
 */
int			ie_attr_ints(const ie_node_ctx *ctx, const char *name,
						 const int64_t **vals);
int			ie_attr_floats(const ie_node_ctx *ctx, const char *name,
						   const float **vals);

/*
 * The strings of STRINGS attribute name (as ie_attr_ints): their count, or
 * -1 when the node does not set it.
 */
int			ie_attr_strings(const ie_node_ctx *ctx, const char *name,
							const char *const **vals);

/*
 * The kind of an error whose message the engine formats from fmt (a
 * format string of the engine's own, never text from a model file):
 * IE_ERR_NOT_SUPPORTED when it says "unsupported", "not supported", "does
 * not support" or "engine's limit", IE_ERR_NO_MEMORY for "out of memory",
 * else IE_ERR_INVALID.
 */
ie_error_kind ie_error_kind_of(const char *fmt);

/*
 * Formats "<op_type> node '<name>': <message>" into ctx->err, sets
 * ctx->err_kind (ie_error_kind_of(fmt)) and returns -1, so an operator can
 * `return ie_op_error(ctx, "...", ...);`.  An "out of memory" message
 * after a tensor refused for its size (ie_tensor_take_refusal) is
 * IE_ERR_LIMIT instead: "over the tensor limit" in place of "out of
 * memory", the refusal appended after ": ".
 */
int			ie_op_error(ie_node_ctx *ctx, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/*
 * Numpy-style multidirectional broadcasting (ONNX "Broadcasting in ONNX"):
 * the output shape of a and b, into out_dims; returns its rank or -1 when
 * the shapes do not broadcast.
 */
int			ie_broadcast_shape(const ie_tensor *a, const ie_tensor *b,
							   int64_t out_dims[IE_MAX_DIMS]);

/*
 * The shape of a matrix product A[..., M, K] x B[..., K, N] (ONNX MatMul's
 * numpy rules), from ie_matmul_shape: A's and B's dims with a 1-D operand
 * promoted to a matrix (ar, adims; br, bdims), the nb broadcast batch
 * axes and the output's ond dims (odims, the batch axes first), the
 * products' count nbatch and B's own batch count bbatch.  Defined in
 * ops_matmul.c, shared by MatMul and the integer products (ops_quant.c).
 */
typedef struct ie_mm_shape
{
	int			ar,
				br,
				nb,
				ond;
	int64_t		adims[IE_MAX_DIMS],
				bdims[IE_MAX_DIMS],
				odims[IE_MAX_DIMS];
	int64_t		M,
				K,
				N,
				nbatch,
				bbatch;
} ie_mm_shape;

int			ie_matmul_shape(ie_node_ctx *ctx, const ie_tensor *A,
							const ie_tensor *B, ie_mm_shape *s);

/*
 * Whether a matrix product of M x K by K x N (row counts, column counts and
 * leading dimensions all within the three) fits the int extents that
 * OpenBLAS's cblas_sgemm and cblas_dgemm take: 0, or -1 from ie_op_error
 * with "a matrix product of M x K x N is over the engine's limit" (kind
 * IE_ERR_NOT_SUPPORTED) when one passes INT_MAX.  Such a product needs an
 * operand of 8 GiB or more; without the check the cast to int wrapped and
 * OpenBLAS refused the call (its xerbla message, the output left as it was)
 * or wrote outside the output.
 */
int			ie_op_gemm_fits(ie_node_ctx *ctx, int64_t M, int64_t K, int64_t N);

/*
 * Each product's offset, in matrices, into A (offs[bi]) and B
 * (offs[nbatch + bi]), a batch dim of 1 broadcasting: offs holds
 * 2 * s->nbatch values.
 */
void		ie_matmul_batch_offsets(const ie_mm_shape *s, int64_t *offs);

/* An input read as int64 values (int32 or int64 tensors), for shape inputs. */
int			ie_tensor_get_i64(const ie_tensor *t, int64_t idx, int64_t *out);

/*
 * Formats dims as "[d0, d1, ...]" into buf (len bytes, truncated) for
 * messages; returns buf.  Defined in ops_elementwise.c.
 */
const char *ie_shape_str(char *buf, size_t len, int ndim, const int64_t *dims);

/*
 * IEEE half (binary16) bits to float, exactly; float to half bits, rounding
 * to nearest even (a value past the largest half gives inf, a NaN a quiet
 * NaN).  Defined in ops_shape.c (Cast), shared by the quantization
 * operators.
 */
float		ie_half_to_float(uint16_t h);
uint16_t	ie_float_to_half(float f);

/* Forgets the calling thread's last refusal (the executor, before a node). */
void		ie_tensor_forget_refusal(void);

/*
 * Whether an operator's scratch buffer of dtype and shape (ndim dims: the
 * buffer's elements as the operator lays them out), one it allocates for
 * its own work rather than as a tensor, fits ie_set_max_tensor_bytes's
 * limit: true; false when it does not (or its byte count passes SIZE_MAX /
 * 2), the refusal noted for the calling thread as "a <type> buffer of
 * shape [..] is N bytes, more than the M bytes a tensor may take", so that
 * the operator's "out of memory for <the buffer>" that follows becomes
 * IE_ERR_LIMIT (ie_op_error); also false, nothing noted, for a negative
 * extent.  An empty shape is held to the same bounds with its zero dims
 * counted as 1, as ie_tensor_new's is: [0, 262144, 2, 3] of float is
 * refused under a 1 MiB limit ("an empty float buffer of shape [..] has
 * other dims of 6291456 bytes, ..."), though it takes no bytes.  A few
 * compares, no allocation.
 *
 * Every such buffer sized by the input's shape is checked, on the thread
 * that reports the node's error: a buffer that tasks on the pool's threads
 * take (ie_thread_scratch) is checked at its largest before the parallel
 * region, since a refusal noted on a pool thread is never seen by the
 * caller.  Bookkeeping arrays sized by a rank, a kernel's taps or a
 * channel count are not; each says why it is bounded.
 */
bool		ie_scratch_fits(ie_dtype dtype, int ndim, const int64_t *dims);

/*
 * malloc of a scratch buffer of dtype and shape (at least 1 byte) when
 * ie_scratch_fits says it fits; NULL when it does not (refusal noted) or
 * memory runs out.  Released with free().
 */
void	   *ie_scratch_new(ie_dtype dtype, int ndim, const int64_t *dims);

/*
 * bytes, or ie_set_max_tensor_bytes's limit when that is smaller: the most
 * an operator that works in pieces (Conv's im2col bands) should give one
 * piece's scratch buffer, so that a limit smaller than its usual budget
 * makes the pieces smaller rather than refusing the node.
 */
size_t		ie_scratch_budget(size_t bytes);

/*
 * Softmax of one contiguous row of len values, x into y (not overlapping),
 * as the Softmax operator computes it along its last axis (ops_norm.c):
 * max-subtracted, the exponentials summed in double.  A row whose every
 * value is -inf gives NaN: callers that mask whole rows test for that
 * first.  Shared by Softmax and Attention.
 */
void		ie_softmax_row(const float *x, float *y, int64_t len);
void		ie_softmax_row_f64(const double *x, double *y, int64_t len);

#endif							/* IE_OP_H */
