/*
 * model_int.h
 *	  The planned form of a loaded model, shared by model.c (which builds it)
 *	  and executor.c (which runs it); internal to the engine and its tests.
 *
 * Every tensor name in the graph is a "value" with an index.  A value is
 * either constant (an initializer or a folded Constant node: consts[v] is
 * set, owned by the model) or computed at run time (a graph input or a node
 * output).  Nodes are stored in topological order.  A planned model is
 * never written after ie_model_load_*() returns, so concurrent runs are
 * safe.
 */
#ifndef IE_MODEL_INT_H
#define IE_MODEL_INT_H

#include <stdbool.h>

#include "worker/engine/op.h"

struct Onnx__TensorProto;

/* One node of the plan, bound to its operator. */
typedef struct ie_plan_node
{
	char	   *name;			/* node name, or "#<index>" when unnamed */
	char	   *op_type;
	ie_op_fn	fn;
	int			n_inputs;
	int		   *inputs;			/* value indexes; -1 for an omitted input */
	int			n_outputs;
	int		   *outputs;		/* value indexes; -1 for an omitted output */
	int			n_attrs;
	ie_attr    *attrs;
	struct ie_epilogue *epilogue;	/* element-wise nodes fused into this one
									 * (fusion.h), or NULL */
	ie_input_check *checks;		/* [n_inputs]: the element types its ONNX
								 * schema allows each input (op.h), or NULL
								 * when nothing is checked */
	int			since;			/* the schema version checks come from */
} ie_plan_node;

/* A graph input or output as declared. */
typedef struct ie_plan_io
{
	char	   *name;
	int			value;			/* value index */
	ie_dtype	dtype;			/* IE_UNDEFINED when not declared */
	int			rank;			/* -1 when the shape is not declared */
	int64_t		dims[IE_MAX_DIMS];	/* -1 for a dynamic dimension */
	char	   *dim_param[IE_MAX_DIMS]; /* a dynamic dimension's name (ONNX
										 * dim_param), or NULL */
} ie_plan_io;

struct ie_model
{
	char	   *name;			/* file name (no folder), or "<memory>" */
	int			opset;			/* default-domain opset */
	int			n_values;
	char	  **value_names;
	ie_tensor **consts;			/* [n_values]; NULL for run-time values */
	int		   *last_use;		/* [n_values]; last node reading it, or -1 */
	bool	   *is_output;		/* [n_values]; a graph output */
	int			n_inputs;
	ie_plan_io *inputs;
	int			n_outputs;
	ie_plan_io *outputs;
	int			n_nodes;
	ie_plan_node *nodes;		/* topological order */
	size_t		weight_bytes;
	/* the device backend (cuda/backend.h): set at load, read-only after */
	bool		on_cuda;		/* runs on CUDA device `device` */
	int			device;			/* CUDA device index when on_cuda */
	ie_precision precision;		/* math of MatMul/Gemm/Conv on the device */
	struct ie_cuda_model *cuda; /* uploaded weights and per-node facts */
};

/*
 * Converts a TensorProto (raw_data or the typed fields) into a new tensor.
 * Fails with a message for strings, external data, segments, types the
 * engine does not hold (these return -IE_ERR_NOT_SUPPORTED), and element
 * counts that do not match the dims (-IE_ERR_INVALID, -1).
 */
int			ie_tensor_from_proto(const struct Onnx__TensorProto *tp,
								 ie_tensor **out, char *err, size_t errlen);

/*
 * Checks the element types of node pn's inputs, dtypes[0..pn->n_inputs)
 * (IE_UNDEFINED for an omitted input or, at load, one not yet known),
 * against pn->checks: each allowed by its type constraint, and equal to
 * the input its constraint binds it to.  0, or -1 with "<op> node '<name>'
 * (<op>-<version>, opset <n>): input ..." in err; the error is
 * IE_ERR_INVALID, a model ONNX says is invalid.  Defined in executor.c,
 * which runs it before every node; model.c runs it at load on what is
 * known there.
 */
int			ie_node_check_types(const ie_model *m, const ie_plan_node *pn,
								const ie_dtype *dtypes, char *err, size_t errlen);

/* Frees one plan node's contents (model.c). */
void		ie_plan_node_free(ie_plan_node *pn);

/*
 * Fills ctx for running node pn of model m: inputs ins and outputs outs
 * (arrays of pn->n_inputs and pn->n_outputs), n_threads, and the error
 * buffer.  Defined in executor.c; model.c uses it to fold constants.
 */
void		ie_node_ctx_init(ie_node_ctx *ctx, const ie_model *m,
							 const ie_plan_node *pn, const ie_tensor **ins,
							 ie_tensor **outs, int n_threads,
							 char *err, size_t errlen);

#endif							/* IE_MODEL_INT_H */
