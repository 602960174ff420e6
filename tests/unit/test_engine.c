/*
 * test_engine.c
 *	  Unit test of the ONNX executor's core (worker/engine/model.c,
 *	  executor.c, ops_elementwise.c, ops_shape.c) and of its performance
 *	  machinery (fusion.c, pool.c, the tensor buffer cache in tensor.c):
 *	  small models built here with protobuf-c, loaded from memory, run, and
 *	  their outputs and error messages checked.
 *
 * Prints "test_engine: N passed, M failed" and exits non-zero on failure.
 * Single-threaded, except where a test starts threads itself.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "tests/unit/testutil.h"
#include "worker/engine/engine.h"
#include "worker/engine/fusion.h"
#include "worker/engine/gemm_direct.h"
#include "worker/engine/model_int.h"
#include "worker/engine/pool.h"
#include "worker/engine/qgemm_vnni.h"

/* ---- a tiny arena for the protobuf structs a test model is built from ---- */

static void *arena[4096];
static int	n_arena;

/* Zeroed memory that lives until arena_reset(). */
static void *
alloc(size_t n)
{
	void	   *p = calloc(1, n ? n : 1);

	if (p == NULL || n_arena == (int) (sizeof(arena) / sizeof(arena[0])))
	{
		fprintf(stderr, "test_engine: out of memory\n");
		exit(2);
	}
	arena[n_arena++] = p;
	return p;
}

/* Frees everything alloc() handed out. */
static void
arena_reset(void)
{
	while (n_arena > 0)
		free(arena[--n_arena]);
}

/* A copy of s in the arena. */
static char *
str(const char *s)
{
	char	   *p = alloc(strlen(s) + 1);

	strcpy(p, s);
	return p;
}

/* Splits "a,b,,c" into an array of names (empty names kept). */
static size_t
split(const char *list, char ***out)
{
	size_t		n = 0;
	const char *p = list;

	if (list[0] == '\0')
	{
		*out = NULL;
		return 0;
	}
	for (const char *q = list; *q; q++)
		n += *q == ',';
	n++;
	*out = alloc(n * sizeof(char *));
	for (size_t i = 0; i < n; i++)
	{
		const char *e = strchr(p, ',');
		size_t		len = e ? (size_t) (e - p) : strlen(p);
		char	   *s = alloc(len + 1);

		memcpy(s, p, len);
		(*out)[i] = s;
		p = e ? e + 1 : p + len;
	}
	return n;
}

/* A tensor-typed graph input/output; a dim of -1 becomes a named dim. */
static Onnx__ValueInfoProto *
value_info(const char *name, int elem, int rank, const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = alloc(sizeof(*vi));
	Onnx__TypeProto *tp = alloc(sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = alloc(sizeof(*tt));
	Onnx__TensorShapeProto *sh = alloc(sizeof(*sh));

	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	vi->name = str(name);
	vi->type = tp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = elem;
	tt->shape = sh;
	sh->n_dim = rank;
	sh->dim = alloc(rank * sizeof(*sh->dim));
	for (int d = 0; d < rank; d++)
	{
		Onnx__TensorShapeProto__Dimension *dim = alloc(sizeof(*dim));

		onnx__tensor_shape_proto__dimension__init(dim);
		if (dims[d] >= 0)
		{
			dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dim->dim_value = dims[d];
		}
		else
		{
			dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dim->dim_param = str("N");
		}
		sh->dim[d] = dim;
	}
	return vi;
}

/* A float tensor: in raw_data when raw, else in float_data. */
static Onnx__TensorProto *
tensor_f(const char *name, int rank, const int64_t *dims, const float *vals,
		 int n, bool raw)
{
	Onnx__TensorProto *t = alloc(sizeof(*t));

	onnx__tensor_proto__init(t);
	t->name = str(name);
	t->has_data_type = 1;
	t->data_type = IE_FLOAT;
	t->n_dims = rank;
	t->dims = alloc(rank * sizeof(int64_t));
	if (rank > 0)				/* a scalar's dims may be NULL */
		memcpy(t->dims, dims, rank * sizeof(int64_t));
	if (raw)
	{
		t->has_raw_data = 1;
		t->raw_data.len = n * sizeof(float);
		t->raw_data.data = alloc(n * sizeof(float));
		memcpy(t->raw_data.data, vals, n * sizeof(float));
	}
	else
	{
		t->n_float_data = n;
		t->float_data = alloc(n * sizeof(float));
		memcpy(t->float_data, vals, n * sizeof(float));
	}
	return t;
}

/* A 1-D int64 tensor in int64_data. */
static Onnx__TensorProto *
tensor_i64(const char *name, const int64_t *vals, int n)
{
	Onnx__TensorProto *t = alloc(sizeof(*t));
	int64_t		d = n;

	onnx__tensor_proto__init(t);
	t->name = str(name);
	t->has_data_type = 1;
	t->data_type = IE_INT64;
	t->n_dims = 1;
	t->dims = alloc(sizeof(int64_t));
	t->dims[0] = d;
	t->n_int64_data = n;
	t->int64_data = alloc(n * sizeof(int64_t));
	memcpy(t->int64_data, vals, n * sizeof(int64_t));
	return t;
}

/* A tensor of element type dtype (any the engine holds) in raw_data. */
static Onnx__TensorProto *
tensor_raw(const char *name, ie_dtype dtype, int rank, const int64_t *dims,
		   const void *vals, int n)
{
	Onnx__TensorProto *t = alloc(sizeof(*t));

	onnx__tensor_proto__init(t);
	t->name = str(name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = rank;
	t->dims = alloc((rank > 0 ? rank : 1) * sizeof(int64_t));
	if (rank > 0)
		memcpy(t->dims, dims, rank * sizeof(int64_t));
	t->has_raw_data = 1;
	t->raw_data.len = n * ie_dtype_size(dtype);
	t->raw_data.data = alloc(t->raw_data.len);
	memcpy(t->raw_data.data, vals, t->raw_data.len);
	return t;
}

/* A node; inputs and outputs as comma-separated names. */
static Onnx__NodeProto *
node(const char *op, const char *name, const char *ins, const char *outs)
{
	Onnx__NodeProto *n = alloc(sizeof(*n));

	onnx__node_proto__init(n);
	n->op_type = str(op);
	n->name = str(name);
	n->n_input = split(ins, &n->input);
	n->n_output = split(outs, &n->output);
	n->attribute = alloc(8 * sizeof(*n->attribute));
	return n;
}

/* Adds an attribute to n and returns it for the caller to fill. */
static Onnx__AttributeProto *
attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = alloc(sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = str(name);
	a->has_type = 1;
	a->type = type;
	n->attribute[n->n_attribute++] = a;
	return a;
}

/* An INT attribute of n. */
static void
attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

/* A FLOAT attribute of n. */
static void
attr_float(Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

/* A STRING attribute of n. */
static void
attr_string(Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *) str(v);
}

/* An INTS attribute of n. */
static void
attr_ints(Onnx__NodeProto *n, const char *name, const int64_t *v, int k)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->n_ints = k;
	a->ints = alloc(k * sizeof(int64_t));
	memcpy(a->ints, v, k * sizeof(int64_t));
}

typedef struct graph_spec
{
	int			opset;
	int			n_nodes;
	Onnx__NodeProto *nodes[16];
	int			n_inits;
	Onnx__TensorProto *inits[12];
	int			n_inputs;
	Onnx__ValueInfoProto *inputs[4];
	int			n_outputs;
	Onnx__ValueInfoProto *outputs[4];
} graph_spec;

/* Serialises the graph as a ModelProto; the caller frees the bytes. */
static void *
pack(const graph_spec *g, size_t *len)
{
	Onnx__ModelProto m;
	Onnx__GraphProto gp;
	Onnx__OperatorSetIdProto os;
	Onnx__OperatorSetIdProto *osp[1] = {&os};
	void	   *buf;

	onnx__model_proto__init(&m);
	onnx__graph_proto__init(&gp);
	onnx__operator_set_id_proto__init(&os);
	os.domain = str("");
	os.has_version = 1;
	os.version = g->opset;
	m.has_ir_version = 1;
	m.ir_version = 8;
	m.n_opset_import = 1;
	m.opset_import = osp;
	m.graph = &gp;
	gp.name = str("test");
	gp.n_node = g->n_nodes;
	gp.node = (Onnx__NodeProto **) g->nodes;
	gp.n_initializer = g->n_inits;
	gp.initializer = (Onnx__TensorProto **) g->inits;
	gp.n_input = g->n_inputs;
	gp.input = (Onnx__ValueInfoProto **) g->inputs;
	gp.n_output = g->n_outputs;
	gp.output = (Onnx__ValueInfoProto **) g->outputs;
	*len = onnx__model_proto__get_packed_size(&m);
	buf = malloc(*len);
	onnx__model_proto__pack(&m, buf);
	return buf;
}

/*
 * Loads the graph from memory (NULL with err on failure); the kind of the
 * failure into *kind when kind is not NULL.
 */
static ie_model *
load_kind(const graph_spec *g, char *err, size_t errlen, ie_error_kind *kind)
{
	size_t		len;
	void	   *buf = pack(g, &len);
	ie_load_opts opts = {.error = kind};
	ie_model   *m = ie_model_load_bytes_opts(buf, len, &opts, err, errlen);

	free(buf);
	return m;
}

/*
 * Whether loading g fails with kind want and a message holding want_msg
 * (into err); a model that loads is destroyed.
 */
static bool
load_fails(const graph_spec *g, ie_error_kind want, const char *want_msg,
		   char *err, size_t errlen)
{
	ie_error_kind kind = IE_ERR_NONE;
	ie_model   *m = load_kind(g, err, errlen, &kind);

	if (m != NULL)
	{
		ie_model_destroy(&m);
		return false;
	}
	return kind == want && strstr(err, want_msg) != NULL;
}

/* load_kind without the kind. */
static ie_model *
load(const graph_spec *g, char *err, size_t errlen)
{
	return load_kind(g, err, errlen, NULL);
}

/* A STRINGS attribute of n holding the k strings v. */
static void
attr_strings(Onnx__NodeProto *n, const char *name, const char *const *v, int k)
{
	Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);

	a->n_strings = k;
	a->strings = alloc(k * sizeof(ProtobufCBinaryData));
	for (int i = 0; i < k; i++)
	{
		a->strings[i].len = strlen(v[i]);
		a->strings[i].data = (uint8_t *) str(v[i]);
	}
}

/*
 * A STRINGS attribute through the loader: RNN-14 with activations
 * ["Relu"], hidden_size 1, W 1 and R 0 over X [2, 1, 1] = [-1, 2] gives
 * Y [2, 1, 1, 1] = [0, 2] (Tanh, the default, would give tanh(-1));
 * ["Swish"] fails the load as invalid, naming it; a string holding a NUL
 * byte fails it too; an unknown name is shown printable and cut.
 */
static void
test_strings_attr(void)
{
	graph_spec	g = {0};
	int64_t		xd[3] = {2, 1, 1},
				yd[4] = {2, 1, 1, 1};
	float		one = 1,
				zero = 0,
				xv[2] = {-1, 2};
	static const char relu_nul[10] = "Relu\0junk";
	const char *relu[1] = {"Relu"},
			   *swish[1] = {"Swish"};
	char		err[512];
	ie_tensor  *in = ie_tensor_new(IE_FLOAT, 3, xd),
			   *out[1] = {NULL};
	ie_model   *m;

	memcpy(in->data, xv, sizeof(xv));
	g.opset = 14;
	g.nodes[g.n_nodes++] = node("RNN", "rnn_0", "X,W,R", "Y");
	attr_int(g.nodes[0], "hidden_size", 1);
	attr_strings(g.nodes[0], "activations", relu, 1);
	g.inits[g.n_inits++] = tensor_raw("W", IE_FLOAT, 3, (int64_t[]) {1, 1, 1}, &one, 1);
	g.inits[g.n_inits++] = tensor_raw("R", IE_FLOAT, 3, (int64_t[]) {1, 1, 1}, &zero, 1);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 3, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "RNN with activations [Relu] loads: %s", err);
	if (m != NULL)
	{
		CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0 &&
			  out[0] != NULL && ((float *) out[0]->data)[0] == 0 &&
			  ((float *) out[0]->data)[1] == 2, "RNN Relu: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_model_destroy(&m);
	}
	g.nodes[0] = node("RNN", "rnn_0", "X,W,R", "Y");
	attr_int(g.nodes[0], "hidden_size", 1);
	attr_strings(g.nodes[0], "activations", swish, 1);
	CHECK(load_fails(&g, IE_ERR_INVALID, "unknown activation \"Swish\"", err, sizeof(err)),
		  "RNN activations [Swish]: %s", err);

	/*
	 * "Relu\0junk" (9 bytes): a NUL inside a string of a STRINGS attribute
	 * is refused by the loader, not read as "Relu"
	 */
	g.nodes[0] = node("RNN", "rnn_0", "X,W,R", "Y");
	attr_int(g.nodes[0], "hidden_size", 1);
	attr_strings(g.nodes[0], "activations", relu, 1);
	g.nodes[0]->attribute[g.nodes[0]->n_attribute - 1]->strings[0].data =
		(uint8_t *) relu_nul;
	g.nodes[0]->attribute[g.nodes[0]->n_attribute - 1]->strings[0].len = 9;
	CHECK(load_fails(&g, IE_ERR_INVALID, "attribute 'activations': string 0 holds a NUL byte",
					 err, sizeof(err)),
		  "RNN activations [\"Relu\\0junk\"]: %s", err);

	/*
	 * bytes outside printable ASCII (not UTF-8, an escape sequence) are
	 * shown as '?', a long name cut with "..."
	 */
	{
		const char *odd[1] = {"\xff\x1b[31mX\n"};
		char		lng[300];
		const char *lp[1] = {lng};

		g.nodes[0] = node("RNN", "rnn_0", "X,W,R", "Y");
		attr_int(g.nodes[0], "hidden_size", 1);
		attr_strings(g.nodes[0], "activations", odd, 1);
		CHECK(load_fails(&g, IE_ERR_INVALID, "unknown activation \"??[31mX?\"", err, sizeof(err)),
			  "RNN activations [\"\\xff\\x1b[31mX\\n\"]: %s", err);
		memset(lng, 'A', sizeof(lng) - 1);
		lng[sizeof(lng) - 1] = '\0';
		g.nodes[0] = node("RNN", "rnn_0", "X,W,R", "Y");
		attr_int(g.nodes[0], "hidden_size", 1);
		attr_strings(g.nodes[0], "activations", lp, 1);
		CHECK(load_fails(&g, IE_ERR_INVALID, "AAAA...\" (Relu,", err, sizeof(err)),
			  "RNN activations [300 A]: %s", err);
	}
	ie_tensor_destroy(&in);
}

/*
 * Builds into g (zeroed) and loads the opset-13 graph Y = Relu(X + B): X
 * and Y float of shape xd[2], B a float initializer of shape bd[1] holding
 * b[3].  NULL with err set when loading fails.
 */
static ie_model *
load_add_relu(graph_spec *g, const int64_t *xd, const int64_t *bd,
			  const float *b, char *err, size_t errlen)
{
	g->opset = 13;
	g->nodes[g->n_nodes++] = node("Add", "add_0", "X,B", "S");
	g->nodes[g->n_nodes++] = node("Relu", "relu_0", "S", "Y");
	g->inits[g->n_inits++] = tensor_f("B", 1, bd, b, 3, false);
	g->inputs[g->n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
	g->outputs[g->n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
	return load(g, err, errlen);
}

/* Add(X, B) -> Relu -> Y, B an initializer: values, info, errors. */
static void
test_add_relu(void)
{
	graph_spec	g = {0};
	int64_t		xd[2] = {-1, 3},
				bd[1] = {3},
				got[IE_MAX_DIMS];
	float		b[3] = {1, -2, 0.5f};
	float		x[6] = {-3, 1, 2, 0.5f, 4, -1};
	float		want[6] = {0, 0, 2.5f, 1.5f, 2, 0};
	char		err[512];
	ie_model   *m;
	ie_tensor  *in,
			   *out[1] = {NULL};
	ie_dtype	dt;
	int			rank;

	m = load_add_relu(&g, xd, bd, b, err, sizeof(err));
	CHECK(m != NULL, "load Add+Relu: %s", err);
	if (m == NULL)
		return;
	CHECK(ie_model_n_inputs(m) == 1, "inputs: %d", ie_model_n_inputs(m));
	CHECK(ie_model_n_outputs(m) == 1, "outputs: %d", ie_model_n_outputs(m));
	CHECK(strcmp(ie_model_input_name(m, 0), "X") == 0, "input name");
	CHECK(strcmp(ie_model_output_name(m, 0), "Y") == 0, "output name");
	CHECK(ie_model_input_name(m, 1) == NULL, "input 1 is out of range");
	rank = ie_model_input_shape(m, 0, &dt, got);
	CHECK(rank == 2 && dt == IE_FLOAT && got[0] == -1 && got[1] == 3,
		  "input shape rank %d dims %lld %lld", rank, (long long) got[0], (long long) got[1]);
	CHECK(ie_model_input_shape(m, 5, &dt, got) == -1, "input 5 out of range");
	CHECK(ie_model_weight_bytes(m) == 12, "weight bytes %zu", ie_model_weight_bytes(m));

	in = tu_float_tensor(2, (int64_t[]) {2, 3}, x);
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0,
		  "run: %s", err);
	if (out[0] != NULL)
	{
		CHECK(out[0]->ndim == 2 && out[0]->dims[0] == 2 && out[0]->dims[1] == 3,
			  "output shape");
		CHECK(memcmp(out[0]->data, want, sizeof(want)) == 0, "Add+Relu values");
		ie_tensor_destroy(&out[0]);
		CHECK(out[0] == NULL, "destroy nulls the pointer");
	}
	ie_tensor_destroy(&in);

	/* a second batch size through the same model */
	in = tu_float_tensor(2, (int64_t[]) {1, 3}, x);
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0 &&
		  out[0]->dims[0] == 1 && ((float *) out[0]->data)[2] == 2.5f,
		  "run with batch 1: %s", err);
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&in);

	/* wrong rank */
	in = tu_float_tensor(1, (int64_t[]) {3}, x);
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == -1 &&
		  out[0] == NULL && strstr(err, "input 'X' must have rank 2") != NULL,
		  "wrong rank message: %s", err);
	ie_tensor_destroy(&in);

	/* wrong fixed dimension */
	in = tu_float_tensor(2, (int64_t[]) {3, 2}, x);
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == -1 &&
		  strstr(err, "must have shape [-1, 3], got [3, 2]") != NULL,
		  "wrong dim message: %s", err);
	ie_tensor_destroy(&in);

	/* wrong type */
	in = ie_tensor_new(IE_INT64, 2, (int64_t[]) {2, 3});
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == -1 &&
		  strstr(err, "input 'X' must be float, got int64") != NULL,
		  "wrong type message: %s", err);
	ie_tensor_destroy(&in);
	ie_model_destroy(&m);
	CHECK(m == NULL, "model destroy nulls the pointer");
	arena_reset();
}

/* Load-time failures: unknown op, bad opset, dangling input, cycle, files. */
static void
test_load_errors(void)
{
	graph_spec	g = {0};
	int64_t		xd[1] = {4};
	char		err[512];
	ie_model   *m;

	g.opset = 12;
	g.nodes[g.n_nodes++] = node("Relu", "relu_0", "X", "A");
	g.nodes[g.n_nodes++] = node("Loop", "loop_0", "A", "Y");
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, xd);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strcmp(err, "model '<memory>': unsupported operator 'Loop' "
							  "(node 'loop_0')") == 0, "unknown op: %s", err);
	ie_model_destroy(&m);

	/* another domain's operator, with advice for ONNX Runtime's own */
	g.nodes[1] = node("QLinearAdd", "qadd_0", "A", "Y");
	g.nodes[1]->domain = str("com.microsoft");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strcmp(err, "model '<memory>': unsupported operator 'QLinearAdd' in "
							  "domain 'com.microsoft' (node 'qadd_0'): ONNX Runtime's QOperator "
							  "quantization format; quantize in the QDQ format "
							  "(quant_format=QuantFormat.QDQ), which is standard ONNX") == 0,
		  "QOperator op: %s", err);
	g.nodes[1] = node("FusedMatMul", "fmm_0", "A", "Y");
	g.nodes[1]->domain = str("com.microsoft");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "unsupported operator 'FusedMatMul' in domain "
							  "'com.microsoft' (node 'fmm_0'): an ONNX Runtime contrib "
							  "operator") != NULL, "contrib op: %s", err);
	g.nodes[1] = node("Foo", "foo_0", "A", "Y");
	g.nodes[1]->domain = str("org.example");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strcmp(err, "model '<memory>': unsupported operator 'Foo' in domain "
							  "'org.example' (node 'foo_0')") == 0, "other domain: %s", err);

	g.nodes[1] = node("Relu", "relu_1", "A", "Y");
	g.opset = 99;
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "opset 99 is not supported") != NULL,
		  "opset message: %s", err);

	g.opset = 12;
	g.nodes[1] = node("Relu", "relu_1", "Nowhere", "Y");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "Relu node 'relu_1': input 'Nowhere' is not produced") != NULL,
		  "dangling input: %s", err);

	/* A = Relu(Y), Y = Relu(A): a cycle */
	g.nodes[0] = node("Relu", "relu_0", "Y", "A");
	g.nodes[1] = node("Relu", "relu_1", "A", "Y");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "cycle") != NULL, "cycle: %s", err);

	/* output name nothing produces */
	g.nodes[0] = node("Relu", "relu_0", "X", "A");
	g.nodes[1] = node("Relu", "relu_1", "A", "Z");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "graph output 'Y' is not produced") != NULL,
		  "missing output: %s", err);

	/* attributes against the operator's schema (op_schemas.h) */
	g.nodes[1] = node("Relu", "relu_1", "A", "Y");
	attr_int(g.nodes[1], "foo", 3);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strcmp(err, "model '<memory>': Relu node 'relu_1': attribute 'foo' "
							  "is not an attribute of Relu-6 (opset 12)") == 0,
		  "unknown attribute: %s", err);

	g.nodes[1] = node("Softmax", "softmax_1", "A", "Y");
	attr_float(g.nodes[1], "axis", 0.0f);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strcmp(err, "model '<memory>': Softmax node 'softmax_1': attribute "
							  "'axis' must have type INT in Softmax-11") == 0,
		  "attribute of the wrong type (an INT read as its default): %s", err);

	g.nodes[1] = node("Softmax", "softmax_1", "A", "Y");
	attr_int(g.nodes[1], "axis", 0);
	attr_int(g.nodes[1], "axis", -1);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "Softmax node 'softmax_1': attribute 'axis' is given twice") != NULL,
		  "an attribute given twice: %s", err);

	g.nodes[1] = node("Cast", "cast_1", "A", "Y");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "Cast node 'cast_1': required attribute 'to' of Cast-9 is missing") != NULL,
		  "a required attribute missing: %s", err);

	/*
	 * an operator newer than the model's opset (as ONNX Runtime's optimizer
	 * writes LayerNormalization) is checked against its first version
	 */
	g.nodes[1] = node("LayerNormalization", "ln_1", "A,A", "Y");
	attr_int(g.nodes[1], "axis", -1);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "LayerNormalization at opset 12 loads: %s", m ? "" : err);
	ie_model_destroy(&m);
	g.nodes[1] = node("LayerNormalization", "ln_1", "A,A", "Y");
	attr_int(g.nodes[1], "axes", -1);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "attribute 'axes' is not an attribute of "
							  "LayerNormalization-17 (opset 12)") != NULL,
		  "... against LayerNormalization-17's attributes: %s", err);

	/* attributes named "__..." are the tools' own: ONNX's checker skips them */
	g.nodes[1] = node("Relu", "relu_1", "A", "Y");
	attr_int(g.nodes[1], "__tool_note", 1);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "an attribute named __tool_note is skipped: %s", m ? "" : err);
	ie_model_destroy(&m);

	/* attribute values the operator lacks fail the load, not the first run */
	g.nodes[1] = node("Pad", "pad_1", "A,P", "Y");
	attr_string(g.nodes[1], "mode", "symmetric");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "Pad node 'pad_1': mode \"symmetric\" is not supported "
							  "(constant, edge, reflect, wrap)") != NULL,
		  "Pad mode symmetric at load: %s", err);

	g.nodes[1] = node("MaxPool", "pool_1", "A", "Y");
	attr_ints(g.nodes[1], "kernel_shape", (int64_t[]) {2}, 1);
	attr_int(g.nodes[1], "ceil_mode", 2);
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "MaxPool node 'pool_1': unsupported ceil_mode 2 (0 or 1)") != NULL,
		  "MaxPool ceil_mode 2 at load: %s", err);

	g.nodes[1] = node("Resize", "resize_1", "A,,S", "Y");
	attr_string(g.nodes[1], "mode", "area");
	m = load(&g, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "Resize node 'resize_1': unsupported mode \"area\"") != NULL,
		  "Resize mode area at load: %s", err);

	/*
	 * the kind of a failure comes from the engine's own message, never from
	 * names in the file: a node called "unsupported..." with an attribute
	 * Relu lacks is invalid; a Pad node whose name fills the message is
	 * still not supported
	 */
	{
		ie_error_kind kind = IE_ERR_NONE;
		char		longname[300];

		g.nodes[1] = node("Relu", "unsupported_relu", "A", "Y");
		attr_int(g.nodes[1], "unsupported_flag", 1);
		kind = IE_ERR_NONE;
		m = load_kind(&g, err, sizeof(err), &kind);
		CHECK(m == NULL && kind == IE_ERR_INVALID,
			  "an unknown attribute is IE_ERR_INVALID whatever its name (%d): %s", kind, err);
		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		g.nodes[1] = node("Pad", longname, "A,P", "Y");
		attr_string(g.nodes[1], "mode", "symmetric");
		kind = IE_ERR_NONE;
		m = load_kind(&g, err, 200, &kind);
		CHECK(m == NULL && kind == IE_ERR_NOT_SUPPORTED && strstr(err, "symmetric") == NULL,
			  "Pad mode symmetric is IE_ERR_NOT_SUPPORTED though the message is cut (%d): %s",
			  kind, err);
		g.nodes[1] = node("Loop", "loop_1", "A", "Y");
		kind = IE_ERR_NONE;
		m = load_kind(&g, err, sizeof(err), &kind);
		CHECK(m == NULL && kind == IE_ERR_NOT_SUPPORTED, "an unknown operator: %d", kind);
		g.nodes[1] = node("Relu", "relu_1", "A", "Y");
		kind = IE_ERR_INVALID;
		m = load_kind(&g, err, sizeof(err), &kind);
		CHECK(m != NULL && kind == IE_ERR_NONE, "a good load: %d", kind);
		ie_model_destroy(&m);

		/* a node folded at load that runs out of memory: 2^50 floats */
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {1 << 25, 1 << 25}, 2);
		g.nodes[1] = node("ConstantOfShape", "cos_1", "S", "Y");
		kind = IE_ERR_NONE;
		m = load_kind(&g, err, sizeof(err), &kind);
		CHECK(m == NULL && kind == IE_ERR_NO_MEMORY && strstr(err, "out of memory") != NULL,
			  "a folded node out of memory is IE_ERR_NO_MEMORY (%d): %s", kind, err);
		g.n_inits = 0;

		/* a file that cannot be opened */
		kind = IE_ERR_NONE;
		m = ie_model_load_file_opts("/nonexistent/x.onnx", &(ie_load_opts) {.error = &kind},
									err, sizeof(err));
		CHECK(m == NULL && kind == IE_ERR_INVALID, "a missing file: %d", kind);

		/* an attribute twice, a "__" one too; a "__" one of any type is left out */
		g.nodes[1] = node("Relu", "relu_1", "A", "Y");
		attr_int(g.nodes[1], "__i", 1);
		attr_int(g.nodes[1], "__i", 2);
		kind = IE_ERR_NONE;
		m = load_kind(&g, err, sizeof(err), &kind);
		CHECK(m == NULL && kind == IE_ERR_INVALID &&
			  strstr(err, "attribute '__i' is given twice") != NULL, "__i twice: %s", err);
		g.nodes[1] = node("Relu", "relu_1", "A", "Y");
		attr(g.nodes[1], "__notes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL, "a STRINGS attribute named __notes is left out: %s", m ? "" : err);
		ie_model_destroy(&m);

		/* an unknown attribute of a type the engine does not hold is still unknown */
		g.nodes[1] = node("Relu", "relu_1", "A", "Y");
		attr(g.nodes[1], "foo", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
		CHECK(load_fails(&g, IE_ERR_INVALID, "attribute 'foo' is not an attribute of Relu-6", err, sizeof(err)),
			  "Relu foo of type STRINGS: %s", err);

		/* an operator newer than the opset, LayerNormalization aside */
		g.nodes[1] = node("HardSwish", "hs_1", "A", "Y");
		CHECK(load_fails(&g, IE_ERR_INVALID, "operator HardSwish does not exist in opset 12 (it came in opset 14)", err, sizeof(err)),
			  "HardSwish at opset 12: %s", err);

		/* opset 1 forms: 0A000 at load */
		g.opset = 5;
		g.nodes[1] = node("Tile", "tile_1", "A,T,X", "Y");
		CHECK(load_fails(&g, IE_ERR_NOT_SUPPORTED, "the opset 1 form (inputs tiles and axis) is not supported", err, sizeof(err)),
			  "Tile at opset 5: %s", err);
		g.opset = 6;
		g.nodes[1] = node("Upsample", "up_1", "A", "Y");
		attr_float(g.nodes[1], "height_scale", 2.0f);
		attr_float(g.nodes[1], "width_scale", 2.0f);
		CHECK(load_fails(&g, IE_ERR_NOT_SUPPORTED, "the opset 1 form (height_scale, width_scale) is not supported", err, sizeof(err)),
			  "Upsample at opset 6: %s", err);

		/*
		 * RMSNormalization, RotaryEmbedding (opset 23) and Swish (opset
		 * 24): a stash_type other than 1 is 0A000 at load, an odd
		 * rotary_embedding_dim invalid, a missing required input refused
		 */
		g.opset = 24;
		g.nodes[1] = node("RMSNormalization", "rms_1", "A,A", "Y");
		attr_int(g.nodes[1], "stash_type", 11);
		CHECK(load_fails(&g, IE_ERR_NOT_SUPPORTED, "RMSNormalization node 'rms_1': stash_type 11 is not supported", err, sizeof(err)),
			  "RMSNormalization stash_type 11: %s", err);
		g.nodes[1] = node("RMSNormalization", "rms_1", "A", "Y");
		CHECK(load_fails(&g, IE_ERR_INVALID, "required input 1 is missing", err, sizeof(err)),
			  "RMSNormalization without scale: %s", err);
		g.nodes[1] = node("RotaryEmbedding", "rope_1", "A,A,A", "Y");
		attr_int(g.nodes[1], "rotary_embedding_dim", 3);
		CHECK(load_fails(&g, IE_ERR_INVALID, "RotaryEmbedding node 'rope_1': rotary_embedding_dim 3 must be even", err, sizeof(err)),
			  "RotaryEmbedding rotary_embedding_dim 3: %s", err);
		g.nodes[1] = node("RotaryEmbedding", "rope_1", "A,A", "Y");
		CHECK(load_fails(&g, IE_ERR_INVALID, "required input 2 is missing", err, sizeof(err)),
			  "RotaryEmbedding without sin_cache: %s", err);
		g.nodes[1] = node("Swish", "swish_1", "A", "Y");
		attr_float(g.nodes[1], "alpha", 0.5f);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL, "Swish at opset 24 loads: %s", m ? "" : err);
		ie_model_destroy(&m);
		g.opset = 12;

		/* auto_pad "" is NOTSET, as for ONNX Runtime */
		g.nodes[1] = node("MaxPool", "pool_1", "A", "Y");
		attr_ints(g.nodes[1], "kernel_shape", (int64_t[]) {2}, 1);
		attr_string(g.nodes[1], "auto_pad", "");
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL, "MaxPool with auto_pad \"\" loads: %s", m ? "" : err);
		ie_model_destroy(&m);
	}

	/* the same node is fine where its version defines the attribute */
	g.nodes[1] = node("LeakyRelu", "lrelu_1", "A", "Y");
	attr_float(g.nodes[1], "alpha", 0.5f);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "a node whose attributes match its schema loads: %s", m ? "" : err);
	ie_model_destroy(&m);

	m = ie_model_load_file("../shared/data/ocr/manifest.tsv", err, sizeof(err));
	if (m == NULL && strstr(err, "cannot open") != NULL)
		m = ie_model_load_file("/work/shared/data/ocr/manifest.tsv", err, sizeof(err));
	CHECK(m == NULL && strstr(err, "model 'manifest.tsv': not an ONNX model") != NULL,
		  "text file: %s", err);
	ie_model_destroy(&m);

	m = ie_model_load_file("/nonexistent/x.onnx", err, sizeof(err));
	CHECK(m == NULL && strstr(err, "model 'x.onnx': cannot open") != NULL,
		  "missing file: %s", err);

	m = ie_model_load_bytes("\x08\x07garbage", 9, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "not an ONNX model") != NULL, "garbage bytes: %s", err);
	arena_reset();
}

/*
 * Constant folding and dynamic shapes: Y = Reshape(X * C, [0, -1]) with C a
 * Constant node (raw_data), run on two input shapes.
 */
static void
test_constant_reshape(void)
{
	graph_spec	g = {0};
	int64_t		xd[3] = {-1, 2, -1},
				yd[2] = {-1, -1},
				shape[2] = {0, -1},
				one = 1;
	float		c = 2.0f;
	char		err[512];
	ie_model   *m;
	Onnx__NodeProto *cn;
	Onnx__AttributeProto *a;
	float		x[24];

	for (int i = 0; i < 24; i++)
		x[i] = (float) i;
	g.opset = 11;
	cn = node("Constant", "const_0", "", "C");
	a = attr(cn, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	a->t = tensor_f("", 1, &one, &c, 1, true);
	g.nodes[g.n_nodes++] = cn;
	g.nodes[g.n_nodes++] = node("Mul", "mul_0", "X,C", "P");
	g.nodes[g.n_nodes++] = node("Reshape", "reshape_0", "P,S", "Y");
	g.inits[g.n_inits++] = tensor_i64("S", shape, 2);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 3, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, yd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "load Constant+Mul+Reshape: %s", err);
	if (m == NULL)
		return;
	CHECK(ie_model_weight_bytes(m) == 16 + 4, "weights: %zu", ie_model_weight_bytes(m));
	for (int trial = 0; trial < 2; trial++)
	{
		int64_t		dims[3] = {trial ? 3 : 1, 2, trial ? 4 : 12};
		ie_tensor  *in = tu_float_tensor(3, dims, x);
		ie_tensor  *out[1] = {NULL};

		CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0,
			  "run: %s", err);
		if (out[0] != NULL)
		{
			CHECK(out[0]->ndim == 2 && out[0]->dims[0] == dims[0] &&
				  out[0]->dims[1] == 24 / dims[0], "reshape dims %lld x %lld",
				  (long long) out[0]->dims[0], (long long) out[0]->dims[1]);
			CHECK(((float *) out[0]->data)[23] == 46.0f && ((float *) out[0]->data)[5] == 10.0f,
				  "Mul by folded constant");
		}
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&in);
	}
	ie_model_destroy(&m);
	arena_reset();
}

/*
 * run_fails: whether running m on in fails with kind want (the negative
 * of ie_model_run's result) and a message holding want_msg (into err).
 */
static bool
run_fails(const ie_model *m, const ie_tensor *in, ie_error_kind want,
		  const char *want_msg, char *err, size_t errlen)
{
	ie_tensor  *out[1] = {NULL};
	int			rc = ie_model_run(m, (const ie_tensor *const *) &in, out, err, errlen);

	if (rc == 0)
	{
		ie_tensor_destroy(&out[0]);
		return false;
	}
	return rc == -(int) want && out[0] == NULL && strstr(err, want_msg) != NULL;
}

/*
 * Whether g loads and then fails on in as run_fails says (a load that
 * fails leaves its message in err); the model is destroyed, the arena
 * reset.
 */
static bool
graph_run_fails(const graph_spec *g, const ie_tensor *in, ie_error_kind want,
				const char *want_msg, char *err, size_t errlen)
{
	ie_model   *m = load(g, err, errlen);
	bool		ok = m != NULL && run_fails(m, in, want, want_msg, err, errlen);

	ie_model_destroy(&m);
	arena_reset();
	return ok;
}

/*
 * Runs the one-input model g on the float tensor of n values x and
 * compares its float output with want[n_want] (NaN-free, exact); the
 * model is destroyed, the arena reset.  A failure's message into err.
 */
static bool
graph_gives(const graph_spec *g, int n, const float *x, int n_want, const float *want,
			char *err, size_t errlen)
{
	ie_model   *m = load(g, err, errlen);
	ie_tensor  *in = tu_float_tensor(1, (int64_t[]) {n}, x);
	ie_tensor  *out[1] = {NULL};
	bool		ok = m != NULL &&
		ie_model_run(m, (const ie_tensor *const *) &in, out, err, errlen) == 0 &&
		out[0]->dtype == IE_FLOAT && ie_tensor_numel(out[0]) == n_want &&
		memcmp(out[0]->data, want, n_want * sizeof(float)) == 0;

	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&in);
	ie_model_destroy(&m);
	arena_reset();
	return ok;
}

/*
 * Operator versions newer than opset 17 through whole models, by the
 * opset the model imports: Pad's wrap (19; refused at load before), bool
 * ReduceMax and ReduceMin (20; the schema refuses bool at 18), and Mod's
 * fmod 0 on floats (28; refused at the run before).
 */
static void
test_opset_changes(void)
{
	int64_t		d4[1] = {4},
				dn[1] = {-1};
	float		x[4] = {0, 0, 3, 0};
	char		err[1024];

	for (int opset = 18; opset <= 19; opset++)
	{
		graph_spec	g = {0};
		float		want[7] = {0, 0, 0, 3, 0, 0, 0};

		g.opset = opset;
		g.nodes[g.n_nodes] = node("Pad", "pad_0", "X,P", "Y");
		attr_string(g.nodes[g.n_nodes++], "mode", "wrap");
		g.inits[g.n_inits++] = tensor_i64("P", (int64_t[]) {1, 2}, 2);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, d4);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, dn);
		if (opset == 18)
		{
			CHECK(load_fails(&g, IE_ERR_INVALID, "Pad node 'pad_0': mode \"wrap\" needs opset "
							 "19 or later (the model imports 18)", err, sizeof(err)),
				  "Pad wrap at opset 18 fails the load: %s", err);
			arena_reset();
		}
		else
			CHECK(graph_gives(&g, 4, x, 7, want, err, sizeof(err)),
				  "Pad wrap at opset 19: [0, 0, 3, 0] by 1 and 2: %s", err);
	}

	{
		graph_spec	g = {0};
		ie_tensor  *in = tu_float_tensor(1, d4, x);

		g.opset = 18;
		g.nodes[g.n_nodes] = node("Cast", "cast_in", "X", "C");
		attr_int(g.nodes[g.n_nodes++], "to", IE_BOOL);
		g.nodes[g.n_nodes++] = node("ReduceMax", "op0", "C", "R");
		g.nodes[g.n_nodes] = node("Cast", "cast_out", "R", "Y");
		attr_int(g.nodes[g.n_nodes++], "to", IE_FLOAT);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, d4);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, dn);
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "ReduceMax node 'op0' (ReduceMax-18, opset 18): input 0 'C' (data) "
							  "is bool, which T does not allow", err, sizeof(err)),
			  "bool ReduceMax at opset 18 is refused: %s", err);
		ie_tensor_destroy(&in);
	}
	for (int k = 0; k < 2; k++)
	{
		graph_spec	g = {0};
		float		want[1] = {k == 0 ? 1.0f : 0.0f};

		g.opset = 20;
		g.nodes[g.n_nodes] = node("Cast", "cast_in", "X", "C");
		attr_int(g.nodes[g.n_nodes++], "to", IE_BOOL);
		g.nodes[g.n_nodes] = node(k == 0 ? "ReduceMax" : "ReduceMin", "op0", "C", "R");
		attr_int(g.nodes[g.n_nodes++], "keepdims", 0);
		g.nodes[g.n_nodes] = node("Cast", "cast_out", "R", "Y");
		attr_int(g.nodes[g.n_nodes++], "to", IE_FLOAT);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, d4);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 0, NULL);
		CHECK(graph_gives(&g, 4, x, 1, want, err, sizeof(err)),
			  "bool %s at opset 20 of [0, 0, 1, 0]: %g: %s",
			  k == 0 ? "ReduceMax" : "ReduceMin", want[0], err);
	}

	for (int opset = 17; opset <= 28; opset += 11)
	{
		graph_spec	g = {0};
		float		a[3] = {-5.5f, 5.5f, 7},
					want[3] = {0.5f, -0.5f, 7};

		g.opset = opset;
		g.nodes[g.n_nodes++] = node("Mod", "mod_0", "X,B", "Y");
		g.inits[g.n_inits++] = tensor_f("B", 1, (int64_t[]) {3},
										(float[]) {2, -2, INFINITY}, 3, false);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, (int64_t[]) {3});
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, (int64_t[]) {3});
		if (opset == 17)
		{
			ie_tensor  *in = tu_float_tensor(1, (int64_t[]) {3}, a);

			CHECK(graph_run_fails(&g, in, IE_ERR_INVALID, "Mod node 'mod_0': fmod must be 1 "
								  "for float inputs below opset 28 (the model imports 17",
								  err, sizeof(err)),
				  "float Mod fmod 0 at opset 17 is refused: %s", err);
			ie_tensor_destroy(&in);
		}
		else
			CHECK(graph_gives(&g, 3, a, 3, want, err, sizeof(err)),
				  "float Mod fmod 0 at opset 28: -5.5 mod 2, 5.5 mod -2, 7 mod inf: %s", err);
	}
}

/*
 * The kind of a run's failure comes from what failed, never from the
 * names in the file: each node below is named after another kind.
 */
static void
test_run_error_kinds(void)
{
	int64_t		xd[2] = {-1, -1};
	float		x[6] = {1, 2, 3, 4, 5, 6};
	ie_tensor  *in = tu_float_tensor(2, (int64_t[]) {2, 3}, x);
	char		err[512];
	ie_model   *m;

	/* a shape the node cannot take: IE_ERR_INVALID, named "out of memory" */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Reshape", "out of memory", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {0, 5}, 2);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID, "Reshape node 'out of memory'", err,
							  sizeof(err)),
			  "a Reshape that cannot be done is IE_ERR_INVALID: %s", err);
	}

	/* float16 arithmetic, which the engine lacks: IE_ERR_NOT_SUPPORTED */
	{
		graph_spec	g = {0};
		Onnx__NodeProto *c = node("Cast", "c16", "X", "H");

		attr_int(c, "to", 10);	/* FLOAT16 */
		g.opset = 13;
		g.nodes[g.n_nodes++] = c;
		g.nodes[g.n_nodes++] = node("Add", "out of memory", "H,H", "S");
		g.nodes[g.n_nodes++] = node("Cast", "c32", "S", "Y");
		attr_int(g.nodes[2], "to", 1);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		CHECK(graph_run_fails(&g, in, IE_ERR_NOT_SUPPORTED, "is not supported", err,
							  sizeof(err)),
			  "float16 Add is IE_ERR_NOT_SUPPORTED: %s", err);
	}

	/* an output of 2^50 floats: IE_ERR_NO_MEMORY, named "not supported" */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Expand", "not supported", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {1 << 25, 1 << 25, 1, 1}, 4);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, (int64_t[]) {-1, -1, -1, -1});
		CHECK(graph_run_fails(&g, in, IE_ERR_NO_MEMORY, "Expand node 'not supported'", err,
							  sizeof(err)),
			  "an Expand out of memory is IE_ERR_NO_MEMORY: %s", err);
	}

	/* an output of 2^64 floats, past what a byte count holds: IE_ERR_LIMIT */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Expand", "out of memory", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {1LL << 32, 1LL << 31, 1, 1}, 4);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, (int64_t[]) {-1, -1, -1, -1});
		CHECK(graph_run_fails(&g, in, IE_ERR_LIMIT,
							  "a float tensor of shape [4294967296, 2147483648, 2, 3] has more bytes than the engine can count",
							  err, sizeof(err)),
			  "an Expand past 2^63 bytes is IE_ERR_LIMIT: %s", err);
	}

	/*
	 * Empty outputs are held to the same bounds with their zero dims
	 * counted as 1: [2^32, 2^31, 0, 2, 3] (other dims past a byte count)
	 * is IE_ERR_LIMIT without a limit; under 1 MiB [0, 262144, 2, 3] (6
	 * MiB of other dims) is refused and [0, 1024, 2, 3] runs.  Before,
	 * both huge ones came back as empty tensors whose other dims
	 * operators after them looped over or multiplied past int64.
	 */
	{
		graph_spec	g = {0};
		ie_model   *em;
		ie_tensor  *out[1] = {NULL};
		const ie_tensor *ins[1] = {in};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Expand", "e0", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {1LL << 32, 1LL << 31, 0, 1, 1}, 5);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 5, (int64_t[]) {-1, -1, -1, -1, -1});
		CHECK(graph_run_fails(&g, in, IE_ERR_LIMIT,
							  "Expand node 'e0': over the tensor limit for the output (type float, rank 5): an empty float tensor of shape [4294967296, 2147483648, 0, 2, 3] has other dims whose bytes the engine cannot count",
							  err, sizeof(err)),
			  "an empty Expand whose other dims pass 2^63 bytes is IE_ERR_LIMIT: %s", err);

		for (int k = 0; k < 2; k++)
		{
			graph_spec	e = {0};
			int64_t		wide = k == 0 ? 262144 : 1024;

			e.opset = 13;
			e.nodes[e.n_nodes++] = node("Expand", "e1", "X,S", "Y");
			e.inits[e.n_inits++] = tensor_i64("S", (int64_t[]) {0, wide, 1, 1}, 4);
			e.inputs[e.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
			e.outputs[e.n_outputs++] = value_info("Y", IE_FLOAT, 4, (int64_t[]) {-1, -1, -1, -1});
			em = load(&e, err, sizeof(err));
			CHECK(em != NULL, "load Expand to [0, %lld]: %s", (long long) wide, err);
			if (em == NULL)
				continue;
			ie_set_max_tensor_bytes(1 << 20);
			if (k == 0)
				CHECK(run_fails(em, in, IE_ERR_LIMIT,
								"Expand node 'e1': over the tensor limit for the output (type float, rank 4): an empty float tensor of shape [0, 262144, 2, 3] has other dims of 6291456 bytes, more than the 1048576 bytes a tensor may take",
								err, sizeof(err)),
					  "an empty Expand over the tensor limit is IE_ERR_LIMIT: %s", err);
			else
			{
				CHECK(ie_model_run(em, ins, out, err, sizeof(err)) == 0 && out[0] != NULL &&
					  out[0]->ndim == 4 && out[0]->dims[0] == 0 && out[0]->dims[1] == 1024 &&
					  out[0]->nbytes == 0,
					  "an empty Expand to [0, 1024, 2, 3] under the limit runs: %s", err);
				ie_tensor_destroy(&out[0]);
			}
			ie_set_max_tensor_bytes(0);
			ie_model_destroy(&em);
		}
		arena_reset();
	}

	/* over ie_set_max_tensor_bytes: IE_ERR_LIMIT, then the same run succeeds without it */
	{
		graph_spec	g = {0};
		ie_model   *big;
		ie_tensor  *out[1] = {NULL};
		const ie_tensor *ins[1] = {in};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Expand", "e", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S", (int64_t[]) {512, 1024, 1, 1}, 4);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, (int64_t[]) {-1, -1, -1, -1});
		big = load(&g, err, sizeof(err));
		CHECK(big != NULL, "load Expand: %s", err);
		if (big != NULL)
		{
			ie_set_max_tensor_bytes(1 << 20);
			CHECK(run_fails(big, in, IE_ERR_LIMIT,
							"Expand node 'e': over the tensor limit for the output (type float, rank 4): a float tensor of shape [512, 1024, 2, 3] is 12582912 bytes, more than the 1048576 bytes a tensor may take",
							err, sizeof(err)),
				  "an Expand over the tensor limit is IE_ERR_LIMIT: %s", err);
			ie_set_max_tensor_bytes(0);
			CHECK(ie_model_run(big, ins, out, err, sizeof(err)) == 0 && out[0] != NULL &&
				  ie_tensor_numel(out[0]) == 512 * 1024 * 6,
				  "the same Expand without a limit runs: %s", err);
			ie_tensor_destroy(&out[0]);
		}
		ie_model_destroy(&big);
		arena_reset();
	}

	/* a weight over ie_set_max_tensor_bytes: the load fails with IE_ERR_LIMIT */
	{
		graph_spec	g = {0};
		float	   *w = calloc(131072 * 3, sizeof(float));

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Add", "a", "X,W", "Y");
		g.inits[g.n_inits++] = tensor_f("W", 2, (int64_t[]) {131072, 3}, w, 131072 * 3, true);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		ie_set_max_tensor_bytes(1 << 20);
		CHECK(load_fails(&g, IE_ERR_LIMIT,
						 "tensor 'W': over the tensor limit: a float tensor of shape [131072, 3] is 1572864 bytes, more than the 1048576 bytes a tensor may take",
						 err, sizeof(err)),
			  "a weight over the tensor limit fails the load with IE_ERR_LIMIT: %s", err);
		ie_set_max_tensor_bytes(0);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL, "the same model loads without the limit: %s", err);
		ie_model_destroy(&m);
		free(w);
		arena_reset();
	}

	/* an input of another type: IE_ERR_INVALID, -1 as before kinds */
	{
		graph_spec	g = {0};
		ie_tensor  *bad = ie_tensor_new(IE_INT64, 2, (int64_t[]) {2, 3});

		m = load_add_relu(&g, (int64_t[]) {-1, 3}, (int64_t[]) {3},
						  (float[]) {1, 1, 1}, err, sizeof(err));
		CHECK(m != NULL, "load Add+Relu: %s", err);
		if (m != NULL)
			CHECK(run_fails(m, bad, IE_ERR_INVALID, "must be float", err, sizeof(err)) &&
				  IE_ERR_INVALID == 1, "an input of another type is IE_ERR_INVALID: %s", err);
		ie_tensor_destroy(&bad);
		ie_model_destroy(&m);
		arena_reset();
	}
	ie_tensor_destroy(&in);
}

/*
 * Builds into g (zeroed) the graph Y = Cast<float>(Op(Cast<to>(X), ...)) at
 * opset: X [2, 3] float, the op node named "op0" reading the cast "C" and
 * then ins (more inputs, after "C,"), so its input types come from a node
 * and are checked when it runs.
 */
static void
cast_op_graph(graph_spec *g, int opset, int to, const char *op, const char *ins)
{
	int64_t		xd[2] = {2, 3};
	char		names[64];

	snprintf(names, sizeof(names), "C%s%s", ins[0] ? "," : "", ins);
	g->opset = opset;
	g->nodes[g->n_nodes] = node("Cast", "cast_in", "X", "C");
	attr_int(g->nodes[g->n_nodes++], "to", to);
	g->nodes[g->n_nodes++] = node(op, "op0", names, "R");
	g->nodes[g->n_nodes] = node("Cast", "cast_out", "R", "Y");
	attr_int(g->nodes[g->n_nodes++], "to", IE_FLOAT);
	g->inputs[g->n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
	g->outputs[g->n_outputs++] = value_info("Y", IE_FLOAT, 2, (int64_t[]) {-1, -1});
}

/*
 * Input element types the operator's ONNX schema does not allow make the
 * model invalid (IE_ERR_INVALID), as ONNX Runtime refuses it: at the run
 * when a node computes the type, at the load when an initializer or a
 * declared graph input has it.  Each case beside one that is allowed.
 */
static void
test_input_types(void)
{
	float		x[6] = {1, 2, 3, 4, 5, 6};
	ie_tensor  *in = tu_float_tensor(2, (int64_t[]) {2, 3}, x);
	ie_tensor  *out[1] = {NULL};
	int64_t		xd[2] = {2, 3};
	char		err[1024];
	ie_model   *m;

	/* uint8 Add: T of Add-13 lacks the 8- and 16-bit integers, Add-14 has them */
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 13, IE_UINT8, "Add", "C");
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "model '<memory>': Add node 'op0' (Add-13, opset 13): input 0 'C' (A) "
							  "is uint8, which T does not allow (float, int32, int64, float16, "
							  "double, uint32, uint64, bfloat16)", err, sizeof(err)),
			  "uint8 Add at opset 13 is refused: %s", err);
	}
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 14, IE_UINT8, "Add", "C");
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0 &&
			  ((float *) out[0]->data)[5] == 12.0f,
			  "uint8 Add at opset 14 runs: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_model_destroy(&m);
		arena_reset();
	}

	/* the same through a declared graph input: refused at load */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Add", "add0", "X,X", "Y");
		g.inputs[g.n_inputs++] = value_info("X", IE_UINT8, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_UINT8, 2, xd);
		CHECK(load_fails(&g, IE_ERR_INVALID, "Add node 'add0' (Add-13, opset 13): input 0 'X' "
						 "(A) is uint8, which T does not allow", err, sizeof(err)),
			  "a declared uint8 input of Add-13 fails the load: %s", err);
		g.opset = 14;
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL, "a declared uint8 input of Add-14 loads: %s", m ? "" : err);
		ie_model_destroy(&m);
		arena_reset();
	}

	/* float + double: A and B are both T, which must be one type */
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 13, IE_DOUBLE, "Add", "X");
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "Add node 'op0' (Add-13, opset 13): input 1 'X' (B) is float but "
							  "input 0 'C' (A) is double: T must be one type", err, sizeof(err)),
			  "Add of double and float is refused: %s", err);
	}
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 13, IE_FLOAT, "Add", "X");
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0,
			  "Add of float and float runs: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_model_destroy(&m);
		arena_reset();
	}

	/* a homogeneous variadic input: Concat's values share T */
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 13, IE_DOUBLE, "Concat", "X,C");
		attr_int(g.nodes[1], "axis", 0);
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "Concat node 'op0' (Concat-13, opset 13): input 1 'X' (inputs) is "
							  "float but input 0 'C' (inputs) is double: T must be one type",
							  err, sizeof(err)),
			  "Concat of double and float is refused: %s", err);
	}

	/* Reshape's shape is int64 alone: an int32 one is refused, at the run ... */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes] = node("Cast", "cast_s", "S64", "S");
		attr_int(g.nodes[g.n_nodes++], "to", IE_INT32);
		g.nodes[g.n_nodes++] = node("Reshape", "reshape0", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_i64("S64", (int64_t[]) {3, 2}, 2);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, (int64_t[]) {3, 2});
		/* a Cast of a constant folds at load: the check runs after it */
		CHECK(load_fails(&g, IE_ERR_INVALID, "Reshape node 'reshape0' (Reshape-13, opset 13): "
						 "input 1 'S' (shape) is int32, which Reshape-13 does not allow (int64)",
						 err, sizeof(err)),
			  "Reshape with an int32 shape from a folded Cast is refused: %s", err);
		arena_reset();
	}
	{
		graph_spec	g = {0};

		cast_op_graph(&g, 13, IE_INT32, "Reshape", "C");
		g.nodes[1]->input[0] = str("X");
		g.nodes[1]->input[1] = str("C");
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "Reshape node 'op0' (Reshape-13, opset 13): input 1 'C' (shape) is "
							  "int32, which Reshape-13 does not allow (int64)", err, sizeof(err)),
			  "Reshape with an int32 shape computed at run is refused: %s", err);
	}

	/* ... and at load, for an initializer */
	{
		graph_spec	g = {0};
		int32_t		s32[2] = {3, 2};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Reshape", "reshape0", "X,S", "Y");
		g.inits[g.n_inits++] = tensor_raw("S", IE_INT32, 1, (int64_t[]) {2}, s32, 2);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, (int64_t[]) {3, 2});
		CHECK(load_fails(&g, IE_ERR_INVALID, "model '<memory>': Reshape node 'reshape0' "
						 "(Reshape-13, opset 13): input 1 'S' (shape) is int32, which "
						 "Reshape-13 does not allow (int64)", err, sizeof(err)),
			  "an int32 shape initializer fails the load: %s", err);
		g.inits[0] = tensor_i64("S", (int64_t[]) {3, 2}, 2);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0 &&
			  out[0]->dims[0] == 3, "an int64 shape initializer runs: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_model_destroy(&m);
		arena_reset();
	}

	/* an initializer whose type differs from the declared input it joins */
	{
		graph_spec	g = {0};
		double		b[3] = {1, 2, 3};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Add", "add0", "X,B", "Y");
		g.inits[g.n_inits++] = tensor_raw("B", IE_DOUBLE, 1, (int64_t[]) {3}, b, 3);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		CHECK(load_fails(&g, IE_ERR_INVALID, "Add node 'add0' (Add-13, opset 13): input 1 'B' "
						 "(B) is double but input 0 'X' (A) is float: T must be one type",
						 err, sizeof(err)),
			  "a double initializer added to a float input fails the load: %s", err);
		arena_reset();
	}

	/* more inputs than the version takes */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Relu", "relu0", "X,X", "Y");
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		CHECK(load_fails(&g, IE_ERR_INVALID, "Relu node 'relu0': it has 2 inputs, and Relu-13 "
						 "takes at most 1", err, sizeof(err)),
			  "a Relu with two inputs fails the load: %s", err);
		arena_reset();
	}

	/*
	 * LayerNormalization before opset 17 (ONNX Runtime's optimizer writes
	 * it there) is checked against its first version and runs
	 */
	{
		graph_spec	g = {0};
		float		one[3] = {1, 1, 1};

		g.opset = 12;
		g.nodes[g.n_nodes++] = node("LayerNormalization", "ln0", "X,G", "Y");
		g.inits[g.n_inits++] = tensor_f("G", 1, (int64_t[]) {3}, one, 3, true);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0,
			  "LayerNormalization at opset 12 runs: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_model_destroy(&m);
		arena_reset();
		memset(&g, 0, sizeof(g));
		cast_op_graph(&g, 12, IE_INT32, "LayerNormalization", "G");
		g.inits[g.n_inits++] = tensor_f("G", 1, (int64_t[]) {3}, one, 3, true);
		CHECK(graph_run_fails(&g, in, IE_ERR_INVALID,
							  "LayerNormalization node 'op0' (LayerNormalization-17, opset 12): "
							  "input 0 'C' (X) is int32, which T does not allow (float, float16, "
							  "double, bfloat16)", err, sizeof(err)),
			  "an int32 LayerNormalization at opset 12 is refused: %s", err);
	}

	/* a required input left out (""): Resize-11's roi; optional from Resize-13 */
	for (int opset = 11; opset <= 13; opset += 2)
	{
		graph_spec	g = {0};

		g.opset = opset;
		g.nodes[g.n_nodes++] = node("Resize", "r", "X,,S", "Y");
		g.inits[g.n_inits++] = tensor_f("S", 1, (int64_t[]) {2}, (float[]) {1, 2}, 2, true);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, (int64_t[]) {-1, -1});
		if (opset == 11)
			CHECK(load_fails(&g, IE_ERR_INVALID,
							 "Resize node 'r': input 1 (roi) of Resize-11 is required, but the node leaves it out (\"\")",
							 err, sizeof(err)),
				  "Resize-11 without its roi is refused at load: %s", err);
		else
		{
			m = load(&g, err, sizeof(err));
			CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
											sizeof(err)) == 0 &&
				  out[0]->ndim == 2 && out[0]->dims[1] == 6,
				  "Resize-13 without its roi runs: %s", err);
			ie_tensor_destroy(&out[0]);
			ie_model_destroy(&m);
		}
		arena_reset();
	}
	ie_tensor_destroy(&in);
}

/*
 * Builds into g (zeroed) the graph of one recurrent node op (gates 1 for
 * RNN, 3 for GRU, 4 for LSTM) named "rec0" at opset, hidden size 1, with
 * outputs outs (comma-separated, "" for one left out): X [1, 2, 3] in, the
 * named ones of Y [1, 1, 2, 1], Y_h and Y_c [1, 2, 1] out.
 */
static void
recurrent_graph(graph_spec *g, const char *op, int gates, int opset, const char *outs)
{
	static const float w[12] = {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f,
	0.7f, 0.8f, -0.9f, 1.0f, 0.2f, 0.3f};
	static const float r[4] = {0.5f, -0.5f, 0.25f, 0.75f};
	char	  **names;
	size_t		n = split(outs, &names);

	g->opset = opset;
	g->nodes[g->n_nodes++] = node(op, "rec0", "X,W,R", outs);
	attr_int(g->nodes[0], "hidden_size", 1);
	g->inits[g->n_inits++] = tensor_f("W", 3, (int64_t[]) {1, gates, 3}, w, gates * 3, true);
	g->inits[g->n_inits++] = tensor_f("R", 3, (int64_t[]) {1, gates, 1}, r, gates, true);
	g->inputs[g->n_inputs++] = value_info("X", IE_FLOAT, 3, (int64_t[]) {1, 2, 3});
	for (size_t i = 0; i < n; i++)
		if (names[i][0] != '\0')
			g->outputs[g->n_outputs++] =
				i == 0 ? value_info(names[i], IE_FLOAT, 4, (int64_t[]) {1, 1, 2, 1}) :
				value_info(names[i], IE_FLOAT, 3, (int64_t[]) {1, 2, 1});
}

/*
 * A node's outputs against its operator version's formal outputs
 * (ie_op_check_outputs): RNN and GRU have no Y_c, Relu one output, TopK
 * two it requires (and neither may be ""), GRU-1 a required Y_h after an
 * optional Y; LSTM's Y_c, Dropout's mask (given or "") and Split's
 * variadic outputs load and run.
 */
static void
test_output_counts(void)
{
	float		x[6] = {1, 2, 3, 4, 5, 6};
	int64_t		xd[2] = {2, 3};
	ie_tensor  *in = tu_float_tensor(2, xd, x);
	ie_tensor  *xin = tu_float_tensor(3, (int64_t[]) {1, 2, 3}, x);
	ie_tensor  *out[4] = {NULL};
	char		err[1024];
	ie_model   *m;
	static const struct
	{
		const char *op;
		int			gates;
		int			opset;
		const char *outs;
		const char *want;		/* the refusal, NULL when it loads and runs */
	}			rec[] = {
		{"RNN", 1, 14, "Y,Y_h,Y_c",
		"RNN node 'rec0': it has 3 outputs, and RNN-14 (opset 14) has at most 2 (Y, Y_h)"},
		{"GRU", 3, 14, "Y,Y_h,Y_c",
		"GRU node 'rec0': it has 3 outputs, and GRU-14 (opset 14) has at most 2 (Y, Y_h)"},
		{"GRU", 3, 2, "Y",
		"GRU node 'rec0': it has 1 output, and GRU-1 (opset 2) has at least 2 (Y, Y_h)"},
		{"RNN", 1, 14, "Y,Y_h", NULL},
		{"GRU", 3, 14, ",Y_h", NULL},
		{"LSTM", 4, 14, "Y,Y_h,Y_c", NULL},
		{"LSTM", 4, 14, ",,Y_c", NULL},
	};

	for (size_t k = 0; k < sizeof(rec) / sizeof(rec[0]); k++)
	{
		graph_spec	g = {0};

		recurrent_graph(&g, rec[k].op, rec[k].gates, rec[k].opset, rec[k].outs);
		if (rec[k].want != NULL)
		{
			CHECK(load_fails(&g, IE_ERR_INVALID, rec[k].want, err, sizeof(err)),
				  "%s-%d node with outputs \"%s\" is refused at load: %s",
				  rec[k].op, rec[k].opset, rec[k].outs, err);
			arena_reset();
			continue;
		}
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &xin, out, err,
										sizeof(err)) == 0 &&
			  out[g.n_outputs - 1] != NULL && out[g.n_outputs - 1]->ndim == 3 &&
			  out[g.n_outputs - 1]->dims[1] == 2,
			  "%s node with outputs \"%s\" loads and runs: %s", rec[k].op, rec[k].outs, err);
		for (int i = 0; i < g.n_outputs; i++)
			ie_tensor_destroy(&out[i]);
		ie_model_destroy(&m);
		arena_reset();
	}

	/* Relu has one output */
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Relu", "relu0", "X", "Y,Z");
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		CHECK(load_fails(&g, IE_ERR_INVALID, "model '<memory>': Relu node 'relu0': it has 2 "
						 "outputs, and Relu-13 (opset 13) has at most 1 (Y)", err, sizeof(err)),
			  "a Relu with two outputs fails the load: %s", err);
		arena_reset();
	}

	/* TopK: Values and Indices, both required */
	{
		static const char *const outs[] = {"V,I", "V", ",I"};
		static const char *const want[] = {
			NULL,
			"TopK node 'topk0': it has 1 output, and TopK-11 (opset 13) has at least 2 "
			"(Values, Indices)",
			"TopK node 'topk0': output 0 (Values) of TopK-11 is required, but the node "
			"leaves it out (\"\")",
		};

		for (int k = 0; k < 3; k++)
		{
			graph_spec	g = {0};

			g.opset = 13;
			g.nodes[g.n_nodes++] = node("TopK", "topk0", "X,K", outs[k]);
			g.inits[g.n_inits++] = tensor_i64("K", (int64_t[]) {2}, 1);
			g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
			g.outputs[g.n_outputs++] = value_info("I", IE_INT64, 2, (int64_t[]) {2, 2});
			if (want[k] != NULL)
			{
				CHECK(load_fails(&g, IE_ERR_INVALID, want[k], err, sizeof(err)),
					  "a TopK with outputs \"%s\" fails the load: %s", outs[k], err);
				arena_reset();
				continue;
			}
			m = load(&g, err, sizeof(err));
			CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
											sizeof(err)) == 0 &&
				  out[0]->dtype == IE_INT64 && ((int64_t *) out[0]->data)[0] == 2 &&
				  ((int64_t *) out[0]->data)[1] == 1,
				  "a TopK with outputs \"%s\" runs: %s", outs[k], err);
			ie_tensor_destroy(&out[0]);
			ie_model_destroy(&m);
			arena_reset();
		}
	}

	/* Dropout's optional mask, given or left out (""): an identity at inference */
	for (int k = 0; k < 2; k++)
	{
		graph_spec	g = {0};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Dropout", "drop0", "X", k == 0 ? "Y,M" : "Y,");
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
		if (k == 0)
			g.outputs[g.n_outputs++] = value_info("M", IE_BOOL, 2, xd);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0 &&
			  memcmp(out[0]->data, x, sizeof(x)) == 0 &&
			  (k == 1 || (out[1] != NULL && out[1]->dtype == IE_BOOL)),
			  "a Dropout with outputs \"%s\" loads and runs: %s", k == 0 ? "Y,M" : "Y,", err);
		for (int i = 0; i < g.n_outputs; i++)
			ie_tensor_destroy(&out[i]);
		ie_model_destroy(&m);
		arena_reset();
	}

	/*
	 * BatchNormalization allows 1 or 5 outputs, 1 or 3 from version 14
	 * (OpSchema::NumOutputs of a set), not every count from 1 to its last:
	 * a running_mean without running_var is refused, as are mean and var
	 * without saved_mean and saved_var, and 2 with the second "" (the
	 * count, not the names).  From version 14 training_mode fixes the count
	 * (ONNX's shape inference): 1 at 0, 3 at 1
	 */
	{
		static const struct
		{
			int			opset;		/* the model's */
			int			training;
			const char *outs;
			const char *want;	/* the refusal, NULL when it loads and runs */
		}			bn[] = {
			{15, 1, "Y,RM",
			"BatchNormalization node 'bn0': it has 2 outputs, and BatchNormalization-15 "
			"(opset 15) has 1 or 3 (Y, running_mean, running_var)"},
			{14, 0, "Y,",
			"BatchNormalization node 'bn0': it has 2 outputs, and BatchNormalization-14 "
			"(opset 14) has 1 or 3 (Y, running_mean, running_var)"},
			{9, 0, "Y,M,V",
			"BatchNormalization node 'bn0': it has 3 outputs, and BatchNormalization-9 "
			"(opset 9) has 1 or 5 (Y, mean, var, saved_mean, saved_var)"},
			{8, 0, "Y,M",
			"BatchNormalization node 'bn0': it has 2 outputs, and BatchNormalization-7 "
			"(opset 8) has 1 or 5 (Y, mean, var, saved_mean, saved_var)"},
			{15, 0, "Y,RM,RV",
			"BatchNormalization node 'bn0': it has 3 outputs, and with training_mode 0 it "
			"must have 1 (Y)"},
			{14, 0, "Y,,",
			"BatchNormalization node 'bn0': it has 3 outputs, and with training_mode 0 it "
			"must have 1 (Y)"},
			{15, 1, "Y",
			"BatchNormalization node 'bn0': it has 1 output, and with training_mode 1 it "
			"must have 3 (Y, running_mean, running_var)"},
			{15, 1, "Y,RM,RV", NULL},
			{15, 0, "Y", NULL},
			{9, 0, "Y", NULL},
		};
		static const float one[3] = {1, 1, 1},
					zero[3] = {0, 0, 0};
		int64_t		cd[1] = {3};

		for (size_t k = 0; k < sizeof(bn) / sizeof(bn[0]); k++)
		{
			graph_spec	g = {0};

			g.opset = bn[k].opset;
			g.nodes[g.n_nodes++] = node("BatchNormalization", "bn0", "X,SC,BI,ME,VA",
										bn[k].outs);
			if (bn[k].training)
				attr_int(g.nodes[0], "training_mode", 1);
			g.inits[g.n_inits++] = tensor_f("SC", 1, cd, one, 3, true);
			g.inits[g.n_inits++] = tensor_f("BI", 1, cd, zero, 3, true);
			g.inits[g.n_inits++] = tensor_f("ME", 1, cd, zero, 3, true);
			g.inits[g.n_inits++] = tensor_f("VA", 1, cd, one, 3, true);
			g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
			g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
			if (bn[k].want != NULL)
			{
				CHECK(load_fails(&g, IE_ERR_INVALID, bn[k].want, err, sizeof(err)),
					  "a BatchNormalization (opset %d) with outputs \"%s\" fails the load: %s",
					  bn[k].opset, bn[k].outs, err);
				arena_reset();
				continue;
			}
			m = load(&g, err, sizeof(err));
			/* training normalises with the batch's mean: column 0 is 1, 4 */
			CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
											sizeof(err)) == 0 &&
				  out[0] != NULL &&
				  (bn[k].training ? ((float *) out[0]->data)[0] < 0 :
				   ((float *) out[0]->data)[0] > 0.99f),
				  "a BatchNormalization (opset %d) with outputs \"%s\" loads and runs: %s",
				  bn[k].opset, bn[k].outs, err);
			ie_tensor_destroy(&out[0]);
			ie_model_destroy(&m);
			arena_reset();
		}
	}

	/* Split's variadic outputs: three columns */
	{
		graph_spec	g = {0};
		int64_t		cd[2] = {2, 1};

		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Split", "split0", "X", "A,B,C");
		attr_int(g.nodes[0], "axis", 1);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
		g.outputs[g.n_outputs++] = value_info("A", IE_FLOAT, 2, cd);
		g.outputs[g.n_outputs++] = value_info("B", IE_FLOAT, 2, cd);
		g.outputs[g.n_outputs++] = value_info("C", IE_FLOAT, 2, cd);
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_run(m, (const ie_tensor *const *) &in, out, err,
										sizeof(err)) == 0 &&
			  ((float *) out[2]->data)[0] == 3 && ((float *) out[2]->data)[1] == 6,
			  "a Split with three outputs loads and runs: %s", err);
		for (int i = 0; i < 3; i++)
			ie_tensor_destroy(&out[i]);
		ie_model_destroy(&m);
		arena_reset();
	}
	ie_tensor_destroy(&in);
	ie_tensor_destroy(&xin);
}

/* Per-channel broadcasting, Clip in both forms, run-time operator errors. */
static void
test_broadcast_clip(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {1, 2, 2, 2},
				bd[4] = {1, 2, 1, 1},
				sd[1] = {-1};
	float		b[2] = {10, 20};
	float		x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	char		err[512];
	ie_model   *m;
	ie_tensor  *ins[2],
			   *out[1] = {NULL};
	Onnx__NodeProto *clip;
	Onnx__AttributeProto *a;

	/* opset 9: Clip with attributes */
	g.opset = 9;
	g.nodes[g.n_nodes++] = node("Add", "add_0", "X,B", "S");
	clip = node("Clip", "clip_0", "S", "Y");
	a = attr(clip, "min", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = 11.0f;
	a = attr(clip, "max", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = 23.0f;
	g.nodes[g.n_nodes++] = clip;
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
	g.inputs[g.n_inputs++] = value_info("B", IE_FLOAT, 4, bd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, xd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "load Add+Clip: %s", err);
	if (m != NULL)
	{
		float		want[8] = {11, 11, 12, 13, 23, 23, 23, 23};

		ins[0] = tu_float_tensor(4, xd, x);
		ins[1] = tu_float_tensor(4, bd, b);
		CHECK(ie_model_run(m, (const ie_tensor *const *) ins, out, err, sizeof(err)) == 0 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0, "channel add + clip: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&ins[1]);
		ie_model_destroy(&m);
		ie_tensor_destroy(&ins[0]);
	}

	/* opset 11: Clip bounds as inputs; a broadcast error names the node */
	g = (graph_spec) {0};
	g.opset = 11;
	g.nodes[g.n_nodes++] = node("Sub", "sub_0", "X,B", "S");
	g.nodes[g.n_nodes++] = node("Clip", "clip_1", "S,,Hi", "Y");
	g.inits[g.n_inits++] = tensor_f("Hi", 0, NULL, (float[]) {2.5f}, 1, true);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 1, sd);
	g.inputs[g.n_inputs++] = value_info("B", IE_FLOAT, 1, sd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, sd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "load Sub+Clip-11: %s", err);
	if (m != NULL)
	{
		float		want[4] = {0.5f, 1.5f, 2.5f, 2.5f};

		ins[0] = tu_float_tensor(1, (int64_t[]) {4}, x);
		ins[1] = tu_float_tensor(1, (int64_t[]) {1}, (float[]) {-0.5f});
		CHECK(ie_model_run(m, (const ie_tensor *const *) ins, out, err, sizeof(err)) == 0 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0, "sub + clip-11: %s", err);
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&ins[1]);
		ins[1] = tu_float_tensor(1, (int64_t[]) {3}, x);
		CHECK(ie_model_run(m, (const ie_tensor *const *) ins, out, err, sizeof(err)) == -1 &&
			  out[0] == NULL &&
			  strstr(err, "Sub node 'sub_0': shapes [4] and [3] do not broadcast") != NULL,
			  "broadcast error: %s", err);
		ie_tensor_destroy(&ins[1]);
		ie_tensor_destroy(&ins[0]);
		ie_model_destroy(&m);
	}
	arena_reset();
}

/* Shape ops on a dynamic input: Transpose, Slice (input form), Concat. */
static void
test_shape_ops(void)
{
	graph_spec	g = {0};
	int64_t		xd[2] = {-1, -1};
	int64_t		starts[1] = {1},
				ends[1] = {INT64_MAX},
				axes[1] = {1};
	char		err[512];
	ie_model   *m;
	ie_tensor  *in,
			   *out[2] = {NULL, NULL};
	Onnx__AttributeProto *a;
	Onnx__NodeProto *cat;
	float		x[6] = {1, 2, 3, 4, 5, 6};

	g.opset = 13;
	g.nodes[g.n_nodes++] = node("Transpose", "t_0", "X", "T");
	g.nodes[g.n_nodes++] = node("Slice", "s_0", "T,St,En,Ax", "S");
	cat = node("Concat", "c_0", "S,S", "Y");
	a = attr(cat, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = -1;
	g.nodes[g.n_nodes++] = cat;
	g.nodes[g.n_nodes++] = node("Shape", "shape_0", "Y", "Sh");
	g.inits[g.n_inits++] = tensor_i64("St", starts, 1);
	g.inits[g.n_inits++] = tensor_i64("En", ends, 1);
	g.inits[g.n_inits++] = tensor_i64("Ax", axes, 1);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, xd);
	g.outputs[g.n_outputs++] = value_info("Sh", IE_INT64, 1, xd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "load shape ops: %s", err);
	if (m == NULL)
		return;
	/* X = [[1,2,3],[4,5,6]] -> T = [[1,4],[2,5],[3,6]] -> S = [[4],[5],[6]] */
	in = tu_float_tensor(2, (int64_t[]) {2, 3}, x);
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0,
		  "run shape ops: %s", err);
	if (out[0] != NULL && out[1] != NULL)
	{
		float		want[6] = {4, 4, 5, 5, 6, 6};
		const int64_t *sh = out[1]->data;

		CHECK(out[0]->dims[0] == 3 && out[0]->dims[1] == 2 &&
			  memcmp(out[0]->data, want, sizeof(want)) == 0, "transpose/slice/concat");
		CHECK(out[1]->dtype == IE_INT64 && out[1]->dims[0] == 2 && sh[0] == 3 && sh[1] == 2,
			  "shape output");
	}
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&out[1]);
	ie_tensor_destroy(&in);
	ie_model_destroy(&m);
	arena_reset();
}

/* What one thread of test_concurrent_runs checks. */
typedef struct run_job
{
	const ie_model *m;
	int			bad;
	float		scale;
} run_job;

/* Runs the model 200 times with its own inputs and counts wrong outputs. */
static void *
run_many(void *arg)
{
	run_job    *job = arg;
	char		err[256];

	for (int it = 0; it < 200; it++)
	{
		int64_t		dims[2] = {1 + it % 5, 3};
		ie_tensor  *in = ie_tensor_new(IE_FLOAT, 2, dims);
		ie_tensor  *out[1] = {NULL};

		for (int64_t i = 0; i < dims[0] * 3; i++)
			((float *) in->data)[i] = job->scale * (float) i;
		if (ie_model_run(job->m, (const ie_tensor *const *) &in, out, err, sizeof(err)) != 0)
			job->bad++;
		else
		{
			/* Y = relu(X + [1, -2, 0.5]) */
			for (int64_t i = 0; i < dims[0] * 3; i++)
			{
				float		b = (i % 3 == 0) ? 1.0f : (i % 3 == 1) ? -2.0f : 0.5f;
				float		want = fmaxf(0.0f, job->scale * (float) i + b);

				if (((float *) out[0]->data)[i] != want)
				{
					job->bad++;
					break;
				}
			}
		}
		ie_tensor_destroy(&out[0]);
		ie_tensor_destroy(&in);
	}
	return NULL;
}

/* One loaded model run from four threads at once, each with its own shapes. */
static void
test_concurrent_runs(void)
{
	graph_spec	g = {0};
	int64_t		xd[2] = {-1, 3},
				bd[1] = {3};
	float		b[3] = {1, -2, 0.5f};
	char		err[512];
	ie_model   *m;
	pthread_t	th[4];
	run_job		jobs[4];

	m = load_add_relu(&g, xd, bd, b, err, sizeof(err));
	arena_reset();
	CHECK(m != NULL, "load: %s", err);
	if (m == NULL)
		return;
	for (int t = 0; t < 4; t++)
	{
		jobs[t] = (run_job) {m, 0, t % 2 ? 1.5f : -0.75f};
		pthread_create(&th[t], NULL, run_many, &jobs[t]);
	}
	for (int t = 0; t < 4; t++)
	{
		pthread_join(th[t], NULL);
		CHECK(jobs[t].bad == 0, "thread %d: %d wrong runs", t, jobs[t].bad);
	}
	ie_model_destroy(&m);
}

/* ie_set_threads / ie_get_threads. */
static void
test_threads(void)
{
	ie_set_threads(2);
	CHECK(ie_get_threads() == 2, "threads %d", ie_get_threads());
	ie_set_threads(0);
	CHECK(ie_get_threads() >= 1, "threads default %d", ie_get_threads());
	ie_set_threads(1);
}


/* ---- fusion, pool, buffer cache ---- */

/* A float constant of the given shape holding vals (n of them). */
static Onnx__TensorProto *
init_f(const char *name, int rank, const int64_t *dims, const float *vals, int n)
{
	return tensor_f(name, rank, dims, vals, n, true);
}

/* Deterministic pseudo-random floats in [-1, 1). */
static float
frand(unsigned *state)
{
	*state = *state * 1664525u + 1013904223u;
	return (float) ((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#define FC_CIN 2
#define FC_COUT 4
#define FC_H 5
#define FC_W 7

static float fc_w[FC_COUT * FC_CIN * 9];
static float fc_b[FC_COUT];

/*
 * Loads the opset-13 graph: S = Conv(X, W, B) 3x3 pad 1; T = S * 1.5;
 * U = T + P (P per channel, [C, 1, 1]); then hard-swish as PaddleOCR
 * exports it: V = U + 3, C = Clip(V, 0, 6), M = U * C, Y = M / 6.  With
 * extra_out, U is a graph output too (so it must not be fused away).
 * fuse selects IE_FUSION.  NULL with err set on failure.
 */
static ie_model *
load_conv_chain(bool fuse, bool extra_out, char *err, size_t errlen)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {-1, FC_CIN, FC_H, FC_W},
				yd[4] = {-1, FC_COUT, FC_H, FC_W},
				wd[4] = {FC_COUT, FC_CIN, 3, 3},
				bd[1] = {FC_COUT},
				pd[3] = {FC_COUT, 1, 1},
				one[1] = {1},
				pads[4] = {1, 1, 1, 1};
	float		p[FC_COUT] = {0.25f, -0.5f, 1.0f, 0.0f};
	float		k15 = 1.5f,
				k3 = 3.0f,
				k0 = 0.0f,
				k6 = 6.0f;
	Onnx__NodeProto *conv;
	ie_model   *m;

	g.opset = 13;
	conv = node("Conv", "conv", "X,W,B", "S");
	attr_ints(conv, "pads", pads, 4);
	g.nodes[g.n_nodes++] = conv;
	g.nodes[g.n_nodes++] = node("Mul", "mul", "S,K15", "T");
	g.nodes[g.n_nodes++] = node("Add", "addp", "T,P", "U");
	g.nodes[g.n_nodes++] = node("Add", "add3", "U,K3", "V");
	g.nodes[g.n_nodes++] = node("Clip", "clip", "V,K0,K6", "C");
	g.nodes[g.n_nodes++] = node("Mul", "hsw", "U,C", "M");
	g.nodes[g.n_nodes++] = node("Div", "div6", "M,K6", "Y");
	g.inits[g.n_inits++] = init_f("W", 4, wd, fc_w, FC_COUT * FC_CIN * 9);
	g.inits[g.n_inits++] = init_f("B", 1, bd, fc_b, FC_COUT);
	g.inits[g.n_inits++] = init_f("P", 3, pd, p, FC_COUT);
	g.inits[g.n_inits++] = init_f("K15", 1, one, &k15, 1);
	g.inits[g.n_inits++] = init_f("K3", 0, one, &k3, 1);
	g.inits[g.n_inits++] = init_f("K0", 0, one, &k0, 1);
	g.inits[g.n_inits++] = init_f("K6", 0, one, &k6, 1);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
	if (extra_out)
		g.outputs[g.n_outputs++] = value_info("U", IE_FLOAT, 4, yd);
	setenv("IE_FUSION", fuse ? "1" : "0", 1);
	m = load(&g, err, errlen);
	unsetenv("IE_FUSION");
	arena_reset();
	return m;
}

/* The chain of load_conv_chain computed directly in double, image n. */
static double
conv_chain_ref(const float *x, int64_t n, int64_t co, int64_t oy, int64_t ox)
{
	static const double p[FC_COUT] = {0.25, -0.5, 1.0, 0.0};
	double		s = fc_b[co],
				u,
				c;

	for (int ci = 0; ci < FC_CIN; ci++)
		for (int ky = 0; ky < 3; ky++)
			for (int kx = 0; kx < 3; kx++)
			{
				int64_t		iy = oy + ky - 1,
							ix = ox + kx - 1;

				if (iy < 0 || iy >= FC_H || ix < 0 || ix >= FC_W)
					continue;
				s += (double) fc_w[((co * FC_CIN + ci) * 3 + ky) * 3 + kx] *
					x[((n * FC_CIN + ci) * FC_H + iy) * FC_W + ix];
			}
	u = s * 1.5 + p[co];
	c = fmin(fmax(u + 3.0, 0.0), 6.0);
	return u * c / 6.0;
}

/* Runs m on x [n, FC_CIN, FC_H, FC_W]; returns output 0 (caller frees). */
static ie_tensor *
run_chain(const ie_model *m, const float *x, int64_t n, ie_tensor **extra)
{
	int64_t		xd[4] = {n, FC_CIN, FC_H, FC_W};
	ie_tensor  *in = ie_tensor_new(IE_FLOAT, 4, xd);
	ie_tensor  *out[2] = {NULL, NULL};
	char		err[512];

	memcpy(in->data, x, in->nbytes);
	if (ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) != 0)
		CHECK(false, "run: %s", err);
	ie_tensor_destroy(&in);
	if (extra != NULL)
		*extra = out[1];
	else
		ie_tensor_destroy(&out[1]);
	return out[0];
}

/*
 * Conv + scale + per-channel shift + hard-swish fuse into one node whose
 * outputs match the unfused graph and a direct computation; a row's
 * output is bit-identical alone and inside a batch, at 1 and 2 threads.
 */
static void
test_conv_fusion(void)
{
	char		err[512];
	unsigned	seed = 7;
	float		x[3 * FC_CIN * FC_H * FC_W];
	int64_t		per = FC_COUT * FC_H * FC_W;
	ie_model   *fused,
			   *plain;
	ie_tensor  *yf,
			   *yp;
	double		maxdiff = 0,
				maxref = 0;

	for (size_t i = 0; i < sizeof(fc_w) / sizeof(fc_w[0]); i++)
		fc_w[i] = frand(&seed);
	for (int i = 0; i < FC_COUT; i++)
		fc_b[i] = frand(&seed);
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = 2.0f * frand(&seed);
	fused = load_conv_chain(true, false, err, sizeof(err));
	CHECK(fused != NULL, "load fused: %s", err);
	plain = load_conv_chain(false, false, err, sizeof(err));
	CHECK(plain != NULL, "load plain: %s", err);
	if (fused == NULL || plain == NULL)
		goto out;
	CHECK(fused->n_nodes == 1 && fused->nodes[0].epilogue != NULL &&
		  ie_epilogue_n_steps(fused->nodes[0].epilogue) == 6,
		  "fused plan has %d nodes, %d steps", fused->n_nodes,
		  ie_epilogue_n_steps(fused->nodes[0].epilogue));
	CHECK(plain->n_nodes == 7, "unfused plan has %d nodes", plain->n_nodes);

	ie_set_threads(1);
	yf = run_chain(fused, x, 3, NULL);
	yp = run_chain(plain, x, 3, NULL);
	if (yf != NULL && yp != NULL)
	{
		const float *f = yf->data,
				   *p = yp->data;

		for (int64_t i = 0; i < 3 * per; i++)
		{
			int64_t		n = i / per,
						co = i / (FC_H * FC_W) % FC_COUT,
						oy = i / FC_W % FC_H,
						ox = i % FC_W;
			double		r = conv_chain_ref(x, n, co, oy, ox);

			if (fabs(f[i] - p[i]) > maxdiff)
				maxdiff = fabs(f[i] - p[i]);
			if (fabs(f[i] - r) > maxref)
				maxref = fabs(f[i] - r);
		}
		CHECK(maxdiff < 1e-5, "fused vs unfused differ by %g", maxdiff);
		CHECK(maxref < 1e-4, "fused vs direct computation differ by %g", maxref);
	}

	/* row 1 alone, and inside batches of 3, at 1 and 2 threads */
	for (int t = 1; t <= 2; t++)
	{
		ie_tensor  *alone,
				   *batch;

		ie_set_threads(t);
		alone = run_chain(fused, x + FC_CIN * FC_H * FC_W, 1, NULL);
		batch = run_chain(fused, x, 3, NULL);
		CHECK(alone != NULL && batch != NULL &&
			  memcmp(alone->data, (float *) batch->data + per, per * sizeof(float)) == 0 &&
			  memcmp(alone->data, (float *) yf->data + per, per * sizeof(float)) == 0,
			  "row 1 differs alone / in a batch at %d threads", t);
		ie_tensor_destroy(&alone);
		ie_tensor_destroy(&batch);
	}
	ie_set_threads(1);
	ie_tensor_destroy(&yf);
	ie_tensor_destroy(&yp);
out:
	ie_model_destroy(&fused);
	ie_model_destroy(&plain);
}

/* A value read outside the chain (here a graph output) stops the fusion there. */
static void
test_fusion_escape(void)
{
	char		err[512];
	float		x[FC_CIN * FC_H * FC_W];
	unsigned	seed = 11;
	ie_model   *fused,
			   *plain;
	ie_tensor  *yf,
			   *uf = NULL,
			   *yp,
			   *up = NULL;

	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = frand(&seed);
	fused = load_conv_chain(true, true, err, sizeof(err));
	plain = load_conv_chain(false, true, err, sizeof(err));
	CHECK(fused != NULL && plain != NULL, "load: %s", err);
	if (fused == NULL || plain == NULL)
		goto out;
	/* Conv absorbs Mul and Add (U), and the hard-swish stays separate */
	CHECK(fused->n_nodes == 5 && fused->nodes[0].epilogue != NULL &&
		  ie_epilogue_n_steps(fused->nodes[0].epilogue) == 2,
		  "plan has %d nodes", fused->n_nodes);
	yf = run_chain(fused, x, 1, &uf);
	yp = run_chain(plain, x, 1, &up);
	if (yf && yp && uf && up)
	{
		double		d = 0;

		for (int64_t i = 0; i < FC_COUT * FC_H * FC_W; i++)
		{
			d = fmax(d, fabs(((float *) yf->data)[i] - ((float *) yp->data)[i]));
			d = fmax(d, fabs(((float *) uf->data)[i] - ((float *) up->data)[i]));
		}
		CHECK(d < 1e-5, "outputs differ by %g", d);
	}
	else
		CHECK(false, "missing outputs");
	ie_tensor_destroy(&yf);
	ie_tensor_destroy(&uf);
	ie_tensor_destroy(&yp);
	ie_tensor_destroy(&up);
out:
	ie_model_destroy(&fused);
	ie_model_destroy(&plain);
}

/* Conv -> BatchNormalization -> Relu fuses, within 1e-5 of the unfused graph. */
static void
test_conv_bn_fusion(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {1, FC_CIN, FC_H, FC_W},
				yd[4] = {1, FC_COUT, FC_H, FC_W},
				wd[4] = {FC_COUT, FC_CIN, 1, 1},
				cd[1] = {FC_COUT};
	float		w[FC_COUT * FC_CIN],
				sc[FC_COUT] = {1.5f, 0.5f, -2.0f, 1.0f},
				bi[FC_COUT] = {0.1f, -0.2f, 0.3f, 0.0f},
				mean[FC_COUT] = {0.5f, -0.5f, 0.0f, 2.0f},
				var[FC_COUT] = {1.0f, 4.0f, 0.25f, 2.0f},
				x[FC_CIN * FC_H * FC_W];
	unsigned	seed = 3;
	char		err[512];
	ie_model   *m[2];
	ie_tensor  *y[2];

	for (int i = 0; i < FC_COUT * FC_CIN; i++)
		w[i] = frand(&seed);
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = frand(&seed);
	for (int f = 0; f < 2; f++)
	{
		memset(&g, 0, sizeof(g));
		g.opset = 13;
		g.nodes[g.n_nodes++] = node("Conv", "conv", "X,W", "S");
		g.nodes[g.n_nodes++] = node("BatchNormalization", "bn", "S,SC,BI,ME,VA", "T");
		g.nodes[g.n_nodes++] = node("Relu", "relu", "T", "Y");
		g.inits[g.n_inits++] = init_f("W", 4, wd, w, FC_COUT * FC_CIN);
		g.inits[g.n_inits++] = init_f("SC", 1, cd, sc, FC_COUT);
		g.inits[g.n_inits++] = init_f("BI", 1, cd, bi, FC_COUT);
		g.inits[g.n_inits++] = init_f("ME", 1, cd, mean, FC_COUT);
		g.inits[g.n_inits++] = init_f("VA", 1, cd, var, FC_COUT);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
		setenv("IE_FUSION", f ? "1" : "0", 1);
		m[f] = load(&g, err, sizeof(err));
		unsetenv("IE_FUSION");
		arena_reset();
		CHECK(m[f] != NULL, "load: %s", err);
		if (m[f] == NULL)
			return;
		{
			ie_tensor  *in = ie_tensor_new(IE_FLOAT, 4, xd);
			ie_tensor  *out[1] = {NULL};

			memcpy(in->data, x, in->nbytes);
			CHECK(ie_model_run(m[f], (const ie_tensor *const *) &in, out, err,
							   sizeof(err)) == 0, "run: %s", err);
			y[f] = out[0];
			ie_tensor_destroy(&in);
		}
	}
	CHECK(m[1]->n_nodes == 1 && m[0]->n_nodes == 3, "plans have %d and %d nodes",
		  m[1]->n_nodes, m[0]->n_nodes);
	if (y[0] != NULL && y[1] != NULL)
	{
		double		d = 0;

		for (int64_t i = 0; i < FC_COUT * FC_H * FC_W; i++)
			d = fmax(d, fabs(((float *) y[0]->data)[i] - ((float *) y[1]->data)[i]));
		CHECK(d < 1e-5, "BN fused vs unfused differ by %g", d);
	}
	ie_tensor_destroy(&y[0]);
	ie_tensor_destroy(&y[1]);
	ie_model_destroy(&m[0]);
	ie_model_destroy(&m[1]);
}

/* ie_parallel_for: each task once, on at most the threads asked for. */
typedef struct pf_state
{
	int			hits[1000];
	int			max_worker;
} pf_state;

static void
pf_task(void *arg, int64_t t, int worker)
{
	pf_state   *s = arg;

	__atomic_add_fetch(&s->hits[t], 1, __ATOMIC_RELAXED);
	if (worker > __atomic_load_n(&s->max_worker, __ATOMIC_RELAXED))
		__atomic_store_n(&s->max_worker, worker, __ATOMIC_RELAXED);
}

/* Callers from several threads at once: each region still runs every task once. */
static void *
pf_caller(void *arg)
{
	int		   *bad = arg;

	for (int r = 0; r < 200; r++)
	{
		pf_state	s;

		memset(&s, 0, sizeof(s));
		ie_parallel_for(3, 1000, pf_task, &s);
		for (int t = 0; t < 1000; t++)
			if (s.hits[t] != 1)
			{
				(*bad)++;
				break;
			}
	}
	return NULL;
}

static void
test_pool(void)
{
	pf_state	s;
	pthread_t	th[3];
	int			bad[3] = {0, 0, 0};
	int			ok = 1;

	for (int r = 0; r < 50; r++)
	{
		memset(&s, 0, sizeof(s));
		ie_parallel_for(4, 1000, pf_task, &s);
		for (int t = 0; t < 1000; t++)
			ok &= s.hits[t] == 1;
		ok &= s.max_worker < 4;
	}
	CHECK(ok, "parallel_for ran a task twice, skipped one or used too many threads");
	memset(&s, 0, sizeof(s));
	ie_parallel_for(1, 10, pf_task, &s);
	CHECK(s.max_worker == 0 && s.hits[9] == 1, "one thread: worker %d", s.max_worker);
	for (int t = 0; t < 3; t++)
		pthread_create(&th[t], NULL, pf_caller, &bad[t]);
	for (int t = 0; t < 3; t++)
	{
		pthread_join(th[t], NULL);
		CHECK(bad[t] == 0, "concurrent caller %d: %d bad regions", t, bad[t]);
	}
}

/* Freed tensor buffers are reused, come back zeroed from ie_tensor_new, and clear. */
static void
test_tensor_cache(void)
{
	int64_t		d[1] = {300000};
	ie_tensor  *t = ie_tensor_new(IE_FLOAT, 1, d);
	void	   *first;
	size_t		before;
	bool		zero = true;

	ie_tensor_cache_clear();
	CHECK(t != NULL && ie_tensor_cache_bytes() == 0, "cache not empty");
	if (t == NULL)
		return;
	memset(t->data, 0xab, t->nbytes);
	first = t->data;
	ie_tensor_destroy(&t);
	before = ie_tensor_cache_bytes();
	CHECK(before >= 300000 * sizeof(float), "cache holds %zu bytes", before);
	t = ie_tensor_new(IE_FLOAT, 1, d);
	CHECK(t != NULL && t->data == first, "buffer not reused");
	for (int64_t i = 0; t != NULL && i < d[0]; i++)
		zero &= ((float *) t->data)[i] == 0.0f;
	CHECK(zero, "reused buffer not zeroed");
	CHECK(ie_tensor_cache_bytes() == 0, "cache still holds %zu bytes", ie_tensor_cache_bytes());
	ie_tensor_destroy(&t);
	ie_tensor_cache_clear();
	CHECK(ie_tensor_cache_bytes() == 0, "clear left %zu bytes", ie_tensor_cache_bytes());
}

/*
 * The direct kernel: products match a double-precision reference, and a
 * column's result is bit-identical whatever the number of columns and the
 * column's position (what lets batches keep each row's bits).
 */
static void
test_gemm_direct(void)
{
	enum
	{
		M = 13, K = 37, N = 75
	};
	static float a[M * K],
				b[K * N],
				c[M * N],
				c2[M * N];
	float	   *ap;
	unsigned	seed = 5;
	double		maxerr = 0;
	bool		same = true;

	if (!ie_gd_available())
	{
		printf("test_engine: skipping the direct kernel (no AVX-512 here; it is not used)\n");
		return;
	}
	for (int i = 0; i < M * K; i++)
		a[i] = frand(&seed);
	for (int i = 0; i < K * N; i++)
		b[i] = frand(&seed);
	ap = malloc(ie_gd_packed_size(M, K) * sizeof(float));
	ie_gd_pack_a(a, K, M, K, ap);
	ie_gd_gemm(ap, M, K, b, N, N, c, N);
	for (int m = 0; m < M; m++)
		for (int j = 0; j < N; j++)
		{
			double		r = 0;

			for (int k = 0; k < K; k++)
				r += (double) a[m * K + k] * b[k * N + j];
			maxerr = fmax(maxerr, fabs(r - c[m * N + j]));
		}
	CHECK(maxerr < 1e-4, "direct kernel off by %g", maxerr);
	/* columns 7..7+w computed alone, for several widths w */
	for (int w = 1; w <= N - 7; w += 11)
	{
		memset(c2, 0, sizeof(c2));
		ie_gd_gemm(ap, M, K, b + 7, N, w, c2 + 7, N);
		for (int m = 0; m < M; m++)
		{
			same &= memcmp(c2 + m * N + 7, c + m * N + 7, w * sizeof(float)) == 0;
			/* nothing written past the w columns */
			same &= 7 + w >= N || c2[m * N + 7 + w] == 0.0f;
		}
	}
	CHECK(same, "a column's bits depend on the product's width");
	free(ap);
}

/* ConvTranspose 2x2 stride 2 (the non-overlapping fast path) against a direct sum. */
static void
test_conv_transpose_disjoint(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {2, 3, 4, 5},
				yd[4] = {2, 2, 8, 10},
				wd[4] = {3, 2, 2, 2},
				bd[1] = {2},
				strides[2] = {2, 2};
	float		w[3 * 2 * 4],
				b[2] = {0.5f, -1.0f},
				x[2 * 3 * 4 * 5];
	unsigned	seed = 9;
	char		err[512];
	Onnx__NodeProto *n;
	ie_model   *m;
	ie_tensor  *in,
			   *out[1] = {NULL};
	double		maxerr = 0;

	for (int i = 0; i < 24; i++)
		w[i] = frand(&seed);
	for (int i = 0; i < 120; i++)
		x[i] = frand(&seed);
	g.opset = 13;
	n = node("ConvTranspose", "ct", "X,W,B", "Y");
	attr_ints(n, "strides", strides, 2);
	g.nodes[g.n_nodes++] = n;
	g.inits[g.n_inits++] = init_f("W", 4, wd, w, 24);
	g.inits[g.n_inits++] = init_f("B", 1, bd, b, 2);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
	m = load(&g, err, sizeof(err));
	arena_reset();
	CHECK(m != NULL, "load: %s", err);
	if (m == NULL)
		return;
	in = ie_tensor_new(IE_FLOAT, 4, xd);
	memcpy(in->data, x, sizeof(x));
	CHECK(ie_model_run(m, (const ie_tensor *const *) &in, out, err, sizeof(err)) == 0,
		  "run: %s", err);
	if (out[0] != NULL)
	{
		CHECK(out[0]->dims[2] == 8 && out[0]->dims[3] == 10, "shape [%lld, %lld]",
			  (long long) out[0]->dims[2], (long long) out[0]->dims[3]);
		for (int nn = 0; nn < 2; nn++)
			for (int mo = 0; mo < 2; mo++)
				for (int oy = 0; oy < 8; oy++)
					for (int ox = 0; ox < 10; ox++)
					{
						double		r = b[mo];

						for (int c = 0; c < 3; c++)
							r += (double) w[((c * 2 + mo) * 2 + oy % 2) * 2 + ox % 2] *
								x[((nn * 3 + c) * 4 + oy / 2) * 5 + ox / 2];
						maxerr = fmax(maxerr, fabs(r - ((float *) out[0]->data)[((nn * 2 + mo) * 8 + oy) * 10 + ox]));
					}
		CHECK(maxerr < 1e-5, "ConvTranspose off by %g", maxerr);
	}
	ie_tensor_destroy(&out[0]);
	ie_tensor_destroy(&in);
	ie_model_destroy(&m);
}

/* ---- operators' scratch buffers under the tensor limit ---- */

/*
 * Loads g (its input X of shape xd, rank nd, filled from frand) and runs
 * it under a tensor limit of `small` bytes, which must fail with
 * IE_ERR_LIMIT and the message want_msg, then under `big`, which must
 * answer: returns the output (NULL when that fails, checks recorded) and
 * the input into *in.  The limit is 0 (none) again after; the model is
 * destroyed, the arena reset.
 */
static ie_tensor *
run_small_then_big(const graph_spec *g, int nd, const int64_t *xd, size_t small,
				   size_t big, const char *want_msg, ie_tensor **in)
{
	ie_tensor  *out[1] = {NULL};
	ie_model   *m;
	unsigned	seed = 5;
	char		err[512];

	*in = ie_tensor_new(IE_FLOAT, nd, xd);
	for (int64_t i = 0; i < ie_tensor_numel(*in); i++)
		((float *) (*in)->data)[i] = frand(&seed);
	m = load(g, err, sizeof(err));
	arena_reset();
	CHECK(m != NULL, "load %s: %s", want_msg, err);
	if (m == NULL)
		return NULL;
	ie_set_max_tensor_bytes(small);
	CHECK(run_fails(m, *in, IE_ERR_LIMIT, want_msg, err, sizeof(err)),
		  "a scratch buffer over the limit is IE_ERR_LIMIT \"%s\": %s", want_msg, err);
	ie_set_max_tensor_bytes(big);
	CHECK(ie_model_run(m, (const ie_tensor *const *) in, out, err, sizeof(err)) == 0,
		  "under a limit it fits, the node runs (\"%s\" under the smaller): %s",
		  want_msg, err);
	ie_set_max_tensor_bytes(0);
	ie_model_destroy(&m);
	return out[0];
}

/*
 * Builds into g (zeroed) the opset-13 graph of node n alone, its inputs X
 * (shape xd) and W, a constant of shape wd holding w (nw values), its
 * output Y (shape yd); all rank 4.
 */
static void
conv_graph(graph_spec *g, Onnx__NodeProto *n, const int64_t *xd, const int64_t *yd,
		   const int64_t *wd, const float *w, int nw)
{
	g->opset = 13;
	g->nodes[g->n_nodes++] = n;
	g->inits[g->n_inits++] = init_f("W", 4, wd, w, nw);
	g->inputs[g->n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
	g->outputs[g->n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
}

/*
 * A 9x9 ConvTranspose of a 64x64 plane: its col2im buffer [81, 4096] (1.3
 * MB) is over a 1 MiB limit that its input and output fit; under 2 MiB it
 * answers, as a direct sum says.
 */
static void
test_scratch_conv_transpose(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {1, 1, 64, 64},
				yd[4] = {1, 1, 72, 72},
				wd[4] = {1, 1, 9, 9};
	float		w[81];
	unsigned	seed = 3;
	ie_tensor  *in,
			   *out;
	double		maxerr = 0;

	for (int i = 0; i < 81; i++)
		w[i] = frand(&seed);
	conv_graph(&g, node("ConvTranspose", "ct", "X,W", "Y"), xd, yd, wd, w, 81);
	out = run_small_then_big(&g, 4, xd, 1 << 20, 2 << 20,
							 "ConvTranspose node 'ct': over the tensor limit for the col2im buffer: "
							 "a float buffer of shape [81, 4096] is 1327104 bytes, more than the 1048576 bytes a tensor may take",
							 &in);
	if (out != NULL)
	{
		const float *x = in->data;

		for (int oy = 0; oy < 72; oy++)
			for (int ox = 0; ox < 72; ox++)
			{
				double		r = 0;

				for (int ky = 0; ky < 9; ky++)
					for (int kx = 0; kx < 9; kx++)
						if (oy - ky >= 0 && oy - ky < 64 && ox - kx >= 0 && ox - kx < 64)
							r += (double) w[ky * 9 + kx] * x[(oy - ky) * 64 + ox - kx];
				maxerr = fmax(maxerr, fabs(r - ((float *) out->data)[oy * 72 + ox]));
			}
		CHECK(maxerr < 1e-4, "ConvTranspose under the limit off by %g", maxerr);
	}
	ie_tensor_destroy(&out);
	ie_tensor_destroy(&in);
}

/*
 * Runs a Conv of 2 channels (input 1 x 2 x ih x iw, one kh x kw filter of
 * frand weights, stride 1, no padding) under a tensor limit of `small`
 * bytes, which must fail with want_msg, then under `big`, whose answer must
 * be a direct sum's (run_small_then_big).
 */
static void
scratch_conv_case(int64_t ih, int64_t iw, int64_t kh, int64_t kw, unsigned seed,
				  size_t small, size_t big, const char *want_msg)
{
	graph_spec	g = {0};
	int64_t		oh = ih - kh + 1,
				ow = iw - kw + 1;
	int64_t		xd[4] = {1, 2, ih, iw},
				yd[4] = {1, 1, oh, ow},
				wd[4] = {1, 2, kh, kw};
	int			nw = (int) (2 * kh * kw);
	float	   *w = malloc(sizeof(float) * nw);
	ie_tensor  *in,
			   *out;
	double		maxerr = 0;

	for (int i = 0; i < nw; i++)
		w[i] = frand(&seed);
	conv_graph(&g, node("Conv", "c", "X,W", "Y"), xd, yd, wd, w, nw);
	out = run_small_then_big(&g, 4, xd, small, big, want_msg, &in);
	if (out != NULL)
	{
		const float *x = in->data;

		for (int64_t oy = 0; oy < oh; oy++)
			for (int64_t ox = 0; ox < ow; ox++)
			{
				double		r = 0;

				for (int64_t c = 0; c < 2; c++)
					for (int64_t ky = 0; ky < kh; ky++)
						for (int64_t kx = 0; kx < kw; kx++)
							r += (double) w[(c * kh + ky) * kw + kx] *
								x[(c * ih + oy + ky) * iw + ox + kx];
				maxerr = fmax(maxerr, fabs(r - ((float *) out->data)[oy * ow + ox]));
			}
		CHECK(maxerr < 1e-4, "Conv under the limit off by %g (%s)", maxerr, want_msg);
	}
	ie_tensor_destroy(&out);
	ie_tensor_destroy(&in);
	free(w);
}

/*
 * A 9x9 Conv of two channels 9 x 4096: one output row's im2col band
 * [162, 4088] (2.6 MB, built by the pool's tasks) is over a 2 MiB limit
 * that the input (295 kB) and output (16 kB) fit; under 4 MiB it answers,
 * as a direct sum says.
 */
static void
test_scratch_conv_im2col(void)
{
	scratch_conv_case(9, 4096, 9, 9, 4, 2 << 20, 4 << 20,
					  "Conv node 'c': over the tensor limit for the im2col buffer: "
					  "a float buffer of shape [162, 4088] is 2649024 bytes, more than the 2097152 bytes a tensor may take");
}

/*
 * A 3x3 Conv of 2 channels, 4 output rows of 510: under a limit of 30600
 * bytes one row's im2col [18, 510] (36720 bytes) does not fit; under 76500
 * the band is cut to 2 rows (73440 bytes) and the node answers, where the
 * whole band (4 rows, 146880 bytes) would not fit (ie_scratch_budget).
 */
static void
test_scratch_conv_bands(void)
{
	scratch_conv_case(6, 512, 3, 3, 6, 30600, 76500,
					  "Conv node 'c': over the tensor limit for the im2col buffer: "
					  "a float buffer of shape [18, 510] is 36720 bytes, more than the 30600 bytes a tensor may take");
}

/*
 * A depthwise 1x3 Conv with a column stride of 20000 over 64 x 64 planes:
 * each plane's column phases [20000, 64, 1] (5 MB, the pool's tasks') are
 * over a 1 MiB limit that the tensors fit; under 8 MiB it answers.
 */
static void
test_scratch_conv_depthwise(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {1, 2, 64, 64},
				yd[4] = {1, 2, 64, 1},
				wd[4] = {2, 1, 1, 3},
				strides[2] = {1, 20000};
	float		w[6] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
	Onnx__NodeProto *n;
	ie_tensor  *in,
			   *out;
	double		maxerr = 0;

	n = node("Conv", "dw", "X,W", "Y");
	attr_int(n, "group", 2);
	attr_ints(n, "strides", strides, 2);
	conv_graph(&g, n, xd, yd, wd, w, 6);
	out = run_small_then_big(&g, 4, xd, 1 << 20, 8 << 20,
							 "Conv node 'dw': over the tensor limit for the depthwise input plane: "
							 "a float buffer of shape [20000, 64, 1] is 5120000 bytes, more than the 1048576 bytes a tensor may take",
							 &in);
	if (out != NULL)
	{
		const float *x = in->data;

		for (int c = 0; c < 2; c++)
			for (int oy = 0; oy < 64; oy++)
			{
				double		r = 0;

				for (int kx = 0; kx < 3; kx++)
					r += (double) w[c * 3 + kx] * x[(c * 64 + oy) * 64 + kx];
				maxerr = fmax(maxerr, fabs(r - ((float *) out->data)[c * 64 + oy]));
			}
		CHECK(maxerr < 1e-5, "depthwise Conv under the limit off by %g", maxerr);
	}
	ie_tensor_destroy(&out);
	ie_tensor_destroy(&in);
}

/*
 * ReduceMean over an axis of 1 of X [200000, 1]: its accumulators, a
 * double each (1.6 MB), are over a 1 MiB limit that X and Y (800 kB each)
 * fit; under 2 MiB it answers X's values.
 */
static void
test_scratch_reduce(void)
{
	graph_spec	g = {0};
	int64_t		xd[2] = {200000, 1},
				yd[1] = {200000},
				axes[1] = {1};
	Onnx__NodeProto *n;
	ie_tensor  *in,
			   *out;

	g.opset = 13;
	n = node("ReduceMean", "r", "X", "Y");
	attr_ints(n, "axes", axes, 1);
	attr_int(n, "keepdims", 0);
	g.nodes[g.n_nodes++] = n;
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, yd);
	out = run_small_then_big(&g, 2, xd, 1 << 20, 2 << 20,
							 "ReduceMean node 'r': over the tensor limit for the accumulators: "
							 "a double buffer of shape [200000] is 1600000 bytes, more than the 1048576 bytes a tensor may take",
							 &in);
	if (out != NULL)
		CHECK(ie_tensor_numel(out) == 200000 &&
			  memcmp(out->data, in->data, 200000 * sizeof(float)) == 0,
			  "ReduceMean under the limit gives X's values");
	ie_tensor_destroy(&out);
	ie_tensor_destroy(&in);
}

/*
 * Taps of the ONNX reference's linear Resize, antialiased when scale < 1,
 * half_pixel: the input indices (edge-clamped) and weights of output o of
 * an axis of length in; returns their count (at most 16 here).
 */
static int
ref_linear_taps(double scale, int64_t in, int64_t o, int64_t *idx, double *w)
{
	double		s = fmin(scale, 1.0),
				x = (o + 0.5) / scale - 0.5,
				f = floor(x),
				sum = 0;
	int			start = (int) floor(-1 / s) + 1,
				n = 0;

	for (int j = start; j <= 1 - start; j++, n++)
	{
		int64_t		i = (int64_t) f + j;

		w[n] = fmax(0.0, 1 - fabs((j - (x - f)) * s));
		idx[n] = i < 0 ? 0 : (i >= in ? in - 1 : i);
		sum += w[n];
	}
	for (int k = 0; k < n; k++)
		w[k] /= sum;
	return n;
}

/*
 * An antialiased Resize of X [1, 1, 200, 1000] by [1, 1, 2, 0.25] runs one
 * axis at a time: the first pass's [1, 1, 400, 1000] (1.6 MB) is over a 1
 * MiB limit that X (800 kB) and Y (400 kB) fit; under 2 MiB it answers the
 * reference's weighted sums.
 */
static void
test_scratch_resize_antialias(void)
{
	graph_spec	g = {0};
	int64_t		xd[4] = {1, 1, 200, 1000},
				yd[4] = {1, 1, 400, 250},
				sd[1] = {4};
	Onnx__NodeProto *n;
	ie_tensor  *in,
			   *out;
	double		maxerr = 0;

	g.opset = 18;
	n = node("Resize", "r", "X,,S", "Y");
	attr_string(n, "mode", "linear");
	attr_int(n, "antialias", 1);
	g.nodes[g.n_nodes++] = n;
	g.inits[g.n_inits++] = init_f("S", 1, sd, (float[]) {1, 1, 2, 0.25f}, 4);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 4, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 4, yd);
	out = run_small_then_big(&g, 4, xd, 1 << 20, 2 << 20,
							 "Resize node 'r': over the tensor limit for a partly resized copy of the input: "
							 "a float buffer of shape [1, 1, 400, 1000] is 1600000 bytes, more than the 1048576 bytes a tensor may take",
							 &in);
	if (out != NULL)
	{
		const float *x = in->data;

		for (int64_t oy = 0; oy < 400; oy++)
			for (int64_t ox = 0; ox < 250; ox++)
			{
				int64_t		iy[16],
							ix[16];
				double		wy[16],
							wx[16],
							r = 0;
				int			ny = ref_linear_taps(2, 200, oy, iy, wy),
							nx = ref_linear_taps(0.25, 1000, ox, ix, wx);

				for (int a = 0; a < ny; a++)
					for (int b = 0; b < nx; b++)
						r += wy[a] * wx[b] * x[iy[a] * 1000 + ix[b]];
				maxerr = fmax(maxerr, fabs(r - ((float *) out->data)[oy * 250 + ox]));
			}
		CHECK(maxerr < 1e-5, "antialiased Resize under the limit off by %g", maxerr);
	}
	ie_tensor_destroy(&out);
	ie_tensor_destroy(&in);
}

/* MatMul -> Add(bias[N]) -> Relu fuses, and gives the unfused graph's bits. */
/*
 * MatMul of double inputs declared as such, then Relu: the fusion leaves
 * the Relu apart (its fused steps compute in float), so the model runs and
 * gives max(0, A B) in double.  Before, the fused chain was refused at the
 * run.
 */
static void
test_matmul_double_relu(void)
{
	graph_spec	g = {0};
	int64_t		ad[2] = {2, 3},
				bd[2] = {3, 2},
				yd[2] = {2, 2};
	double		a[6] = {1, -2, 3, 0.5, 0.25, -4},
				b[6] = {2, -1, 1, 0.5, -1, 3};
	char		err[512];
	ie_model   *m;
	ie_tensor  *in[2],
			   *out[1] = {NULL};

	g.opset = 13;
	g.nodes[g.n_nodes++] = node("MatMul", "mm", "A,B", "P");
	g.nodes[g.n_nodes++] = node("Relu", "relu", "P", "Y");
	g.inputs[g.n_inputs++] = value_info("A", IE_DOUBLE, 2, ad);
	g.inputs[g.n_inputs++] = value_info("B", IE_DOUBLE, 2, bd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_DOUBLE, 2, yd);
	m = load(&g, err, sizeof(err));
	CHECK(m != NULL, "load double MatMul + Relu: %s", err);
	if (m == NULL)
		return;
	in[0] = ie_tensor_new(IE_DOUBLE, 2, ad);
	in[1] = ie_tensor_new(IE_DOUBLE, 2, bd);
	memcpy(in[0]->data, a, sizeof(a));
	memcpy(in[1]->data, b, sizeof(b));
	CHECK(ie_model_run(m, (const ie_tensor *const *) in, out, err, sizeof(err)) == 0 &&
		  out[0]->dtype == IE_DOUBLE, "run double MatMul + Relu: %s", err);
	if (out[0] != NULL)
	{
		const double *y = out[0]->data;

		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
			{
				double		want = 0;

				for (int k = 0; k < 3; k++)
					want += a[i * 3 + k] * b[k * 2 + j];
				want = want > 0 ? want : 0;
				CHECK(y[i * 2 + j] == want, "Y[%d][%d] = %g, want %g", i, j, y[i * 2 + j], want);
			}
		ie_tensor_destroy(&out[0]);
	}
	ie_tensor_destroy(&in[0]);
	ie_tensor_destroy(&in[1]);
	ie_model_destroy(&m);
}

static void
test_matmul_fusion(void)
{
	enum
	{
		R = 2, M = 5, K = 7, N = 11
	};
	int64_t		xd[3] = {R, M, K},
				yd[3] = {R, M, N},
				wd[2] = {K, N},
				bd[1] = {N};
	float		w[K * N],
				bias[N],
				x[R * M * K];
	unsigned	seed = 21;
	char		err[512];
	ie_model   *m[4] = {NULL, NULL, NULL, NULL};
	ie_tensor  *y[4] = {NULL, NULL, NULL, NULL};

	for (int i = 0; i < K * N; i++)
		w[i] = frand(&seed);
	for (int i = 0; i < N; i++)
		bias[i] = frand(&seed);
	for (int i = 0; i < R * M * K; i++)
		x[i] = frand(&seed);
	for (int f = 0; f < 4; f++)
	{
		graph_spec	g = {0};
		ie_tensor  *in;

		/* f 0, 1: Relu at opset 13; f 2, 3: Gelu (erf form) at opset 20 */
		g.opset = f < 2 ? 13 : 20;
		g.nodes[g.n_nodes++] = node("MatMul", "mm", "X,W", "P");
		g.nodes[g.n_nodes++] = node("Add", "bias", "BI,P", "Q");
		g.nodes[g.n_nodes++] = node(f < 2 ? "Relu" : "Gelu", "act", "Q", "Y");
		g.inits[g.n_inits++] = init_f("W", 2, wd, w, K * N);
		g.inits[g.n_inits++] = init_f("BI", 1, bd, bias, N);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 3, xd);
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 3, yd);
		setenv("IE_FUSION", f % 2 ? "1" : "0", 1);
		m[f] = load(&g, err, sizeof(err));
		unsetenv("IE_FUSION");
		arena_reset();
		CHECK(m[f] != NULL, "load: %s", err);
		if (m[f] == NULL)
			goto out;
		in = ie_tensor_new(IE_FLOAT, 3, xd);
		memcpy(in->data, x, sizeof(x));
		CHECK(ie_model_run(m[f], (const ie_tensor *const *) &in, &y[f], err,
						   sizeof(err)) == 0, "run: %s", err);
		ie_tensor_destroy(&in);
	}
	for (int a = 0; a < 4; a += 2)
	{
		double		r = bias[3],
					want;

		CHECK(m[a + 1]->n_nodes == 1 && m[a + 1]->nodes[0].epilogue != NULL &&
			  m[a]->n_nodes == 3, "%s: plans have %d and %d nodes", a ? "Gelu" : "Relu",
			  m[a + 1]->n_nodes, m[a]->n_nodes);
		CHECK(y[a] != NULL && y[a + 1] != NULL &&
			  memcmp(y[a]->data, y[a + 1]->data, sizeof(float) * R * M * N) == 0,
			  "%s: fused MatMul differs from the unfused graph", a ? "Gelu" : "Relu");
		for (int k = 0; k < K; k++)
			r += (double) x[(1 * M + 2) * K + k] * w[k * N + 3];
		want = a ? 0.5 * r * (1 + erf(r / sqrt(2.0))) : fmax(r, 0.0);
		CHECK(y[a + 1] != NULL &&
			  fabs(want - ((float *) y[a + 1]->data)[(1 * M + 2) * N + 3]) < 1e-5,
			  "%s: y[1][2][3] is %g, want %g", a ? "Gelu" : "Relu",
			  y[a + 1] ? ((float *) y[a + 1]->data)[(1 * M + 2) * N + 3] : 0.0, want);
	}
out:
	for (int f = 0; f < 4; f++)
	{
		ie_tensor_destroy(&y[f]);
		ie_model_destroy(&m[f]);
	}
}

/* ---- MatMulInteger's Cast, scale and bias fused (fusion.h) ---- */

/* How a test_qmatmul_fusion case scales the product. */
typedef enum qf_scale
{
	QF_SCALAR,					/* B's scale one value: A's times it, one */
	QF_COLUMN,					/* one per column of B: [N] */
	QF_ROW,						/* [M, 1]: one per row, fits no epilogue */
	QF_WIDE						/* [1, 1, 1] on a 2-D product: widens it */
} qf_scale;

/* One case of test_qmatmul_fusion. */
typedef struct qf_case
{
	const char *what;
	int			a_rank;			/* 2: A [M, K]; 3: A [2, M, K] */
	int64_t		M,
				K,
				N;
	qf_scale	scale;
	bool		bias;			/* Add(bias [N], scaled) after the Mul */
	bool		gelu;			/* then BERT's GELU: Div, Erf, Add, Mul, Mul */
	bool		late_scale;		/* the scales' Mul after the MatMulInteger */
	bool		big;			/* X in [0.5, 1), W in [100, 127]: sums past 2^24 */
	int			extra_out;		/* 1: the Cast's output, 2: the MatMulInteger's,
								 * a graph output too */
	int			want_nodes;		/* nodes of the fused plan */
	int			want_steps;		/* nodes fused into the MatMulInteger */
} qf_case;

/*
 * Loads case c's graph, opset 13, as ONNX Runtime's quantize_dynamic
 * writes a MatMul: (Xq, Xs, Xz) = DynamicQuantizeLinear(X); S = Xs * SB;
 * P = MatMulInteger(Xq, W, Xz, WZ) (W int8 [K, N], WZ int8, one value or
 * per column); C = Cast(P, float); Q = C * S; then R = BI + Q and the GELU
 * chain as c asks, its last value Y the output.  fuse selects IE_FUSION.
 * The constants are pseudo-random, seeded by K.  NULL with err set on
 * failure.
 */
static ie_model *
load_qf_case(const qf_case *c, bool fuse, char *err, size_t errlen)
{
	graph_spec	g = {0};
	int64_t		xd[3],
				yd[3],
				wd[2] = {c->K, c->N},
				nd[1] = {c->N},
				rowd[2] = {c->M, 1},
				wide[3] = {1, 1, 1},
				one[1] = {1};
	int			xr = c->a_rank,
				yr = c->scale == QF_WIDE ? 3 : c->a_rank;
	int64_t		nsb = c->scale == QF_COLUMN ? c->N : c->scale == QF_ROW ? c->M : 1;
	int8_t	   *w = malloc(c->K * c->N),
				wz[c->N];
	float		sb[nsb],
				bias[c->N],
				k_sqrt2 = 1.41421354f,
				k_one = 1.0f,
				k_half = 0.5f;
	unsigned	seed = 99 + (unsigned) c->K;
	ie_model   *m;

	if (w == NULL)
		return NULL;
	for (int64_t i = 0; i < c->K * c->N; i++)
		w[i] = c->big ? (int8_t) (100 + (int) ((frand(&seed) + 1.0f) * 13.5f)) :
			(int8_t) (int) (frand(&seed) * 127.5f);
	for (int64_t i = 0; i < c->N; i++)
		wz[i] = c->big ? 0 : (int8_t) (int) (frand(&seed) * 4.0f);
	for (int64_t i = 0; i < nsb; i++)
		sb[i] = 0.004f + 0.003f * frand(&seed);
	for (int64_t i = 0; i < c->N; i++)
		bias[i] = frand(&seed);
	if (xr == 3)
	{
		xd[0] = yd[0] = 2;
		xd[1] = yd[1] = c->M;
		xd[2] = c->K;
		yd[2] = c->N;
	}
	else
	{
		xd[0] = c->M;
		xd[1] = c->K;
		yd[yr - 2] = c->M;
		yd[yr - 1] = c->N;
		if (yr == 3)
			yd[0] = 1;
	}

	g.opset = 13;
	g.nodes[g.n_nodes++] = node("DynamicQuantizeLinear", "dql", "X", "Xq,Xs,Xz");
	if (!c->late_scale)
		g.nodes[g.n_nodes++] = node("Mul", "scales", "Xs,SB", "S");
	g.nodes[g.n_nodes++] = node("MatMulInteger", "mmi", "Xq,W,Xz,WZ", "P");
	attr_int(g.nodes[g.n_nodes++] = node("Cast", "cast", "P", "C"), "to", IE_FLOAT);
	if (c->late_scale)
		g.nodes[g.n_nodes++] = node("Mul", "scales", "Xs,SB", "S");
	g.nodes[g.n_nodes++] = node("Mul", "scale", "C,S", "Q");
	if (c->bias)
		g.nodes[g.n_nodes++] = node("Add", "bias", "BI,Q", "R");
	if (c->gelu)
	{
		g.nodes[g.n_nodes++] = node("Div", "g1", "R,KR", "G1");
		g.nodes[g.n_nodes++] = node("Erf", "g2", "G1", "G2");
		g.nodes[g.n_nodes++] = node("Add", "g3", "G2,K1", "G3");
		g.nodes[g.n_nodes++] = node("Mul", "g4", "R,G3", "G4");
		g.nodes[g.n_nodes++] = node("Mul", "g5", "G4,KH", "G5");
	}
	/* the last node's output (Q, R or G5) is the graph's: name it Y */
	g.nodes[g.n_nodes - 1]->output[0] = str("Y");
	g.inits[g.n_inits++] = tensor_raw("W", IE_INT8, 2, wd, w, (int) (c->K * c->N));
	g.inits[g.n_inits++] = c->scale == QF_COLUMN ?
		tensor_raw("WZ", IE_INT8, 1, nd, wz, (int) c->N) :
		tensor_raw("WZ", IE_INT8, 0, NULL, wz, 1);
	g.inits[g.n_inits++] =
		c->scale == QF_COLUMN ? init_f("SB", 1, nd, sb, (int) nsb) :
		c->scale == QF_ROW ? init_f("SB", 2, rowd, sb, (int) nsb) :
		c->scale == QF_WIDE ? init_f("SB", 3, wide, sb, 1) : init_f("SB", 0, one, sb, 1);
	g.inits[g.n_inits++] = init_f("BI", 1, nd, bias, (int) c->N);
	g.inits[g.n_inits++] = init_f("KR", 0, one, &k_sqrt2, 1);
	g.inits[g.n_inits++] = init_f("K1", 0, one, &k_one, 1);
	g.inits[g.n_inits++] = init_f("KH", 0, one, &k_half, 1);
	g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, xr, xd);
	g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, yr, yd);
	if (c->extra_out == 1)
		g.outputs[g.n_outputs++] = value_info("C", IE_FLOAT, xr, yd);
	else if (c->extra_out == 2)
		g.outputs[g.n_outputs++] = value_info("P", IE_INT32, xr, yd);
	setenv("IE_FUSION", fuse ? "1" : "0", 1);
	m = load(&g, err, errlen);
	unsetenv("IE_FUSION");
	arena_reset();
	free(w);
	return m;
}

/* X of case c (seeded by its K), values in [-2, 2), or [0.5, 1) for big. */
static ie_tensor *
qf_input(const qf_case *c)
{
	int64_t		xd[3] = {2, c->M, c->K};
	ie_tensor  *x = c->a_rank == 3 ? ie_tensor_new(IE_FLOAT, 3, xd) :
		ie_tensor_new(IE_FLOAT, 2, xd + 1);
	unsigned	seed = 5 + (unsigned) c->K;

	for (int64_t i = 0; x != NULL && i < ie_tensor_numel(x); i++)
		((float *) x->data)[i] = c->big ? 0.75f + 0.25f * frand(&seed) : 2.0f * frand(&seed);
	return x;
}

/* Whether outputs a[0..n) and b[0..n) have the same shapes, types and bytes. */
static bool
same_outputs(ie_tensor *const *a, ie_tensor *const *b, int n)
{
	for (int j = 0; j < n; j++)
		if (a[j] == NULL || b[j] == NULL || a[j]->dtype != b[j]->dtype ||
			a[j]->ndim != b[j]->ndim || a[j]->nbytes != b[j]->nbytes ||
			memcmp(a[j]->dims, b[j]->dims, a[j]->ndim * sizeof(int64_t)) != 0 ||
			memcmp(a[j]->data, b[j]->data, a[j]->nbytes) != 0)
			return false;
	return true;
}

/*
 * MatMulInteger -> Cast -> Mul (-> Add -> GELU) as ONNX Runtime's
 * quantize_dynamic writes it fuses into the MatMulInteger, whose outputs
 * are then bit for bit the unfused graph's: A 2-D and 3-D, B's scale one
 * value or one per column, with and without the bias and GELU, K not a
 * multiple of 4 and N not of 64, sums past 2^24 (where float's rounding of
 * the int32 sum shows), the scales' Mul after the MatMulInteger (the node
 * moves to it), on the VNNI kernel and the sgemm path, at 1 and 3
 * threads.  A scale of [M, 1] or [1, 1, 1] fuses at load and takes the
 * operator's path at the run; a Cast output or an int32 output that is
 * also a graph output stops the chain before the Mul or fuses nothing.
 */
static void
test_qmatmul_fusion(void)
{
	/* what, A's rank, M, K, N, scale, bias, gelu, late_scale, big,
	 * extra_out, want_nodes, want_steps */
	static const qf_case cases[] = {
		{"2-D A, scalar scale, bias",
		2, 300, 203, 130, QF_SCALAR, true, false, false, false, 0, 3, 3},
		{"3-D A, per-column scale",
		3, 150, 203, 130, QF_COLUMN, false, false, false, false, 0, 3, 2},
		{"3-D A, K 5, N 3, bias, GELU",
		3, 7, 5, 3, QF_SCALAR, true, true, false, false, 0, 3, 8},
		{"2-D A, per-column scale, bias, GELU, scales' Mul late",
		2, 97, 67, 200, QF_COLUMN, true, true, true, false, 0, 3, 8},
		{"2-D A, K 2001, sums past 2^24, bias",
		2, 20, 2001, 70, QF_SCALAR, true, false, false, true, 0, 3, 3},
		{"3-D A, scale [M, 1] (operator's path), bias, GELU",
		3, 40, 33, 70, QF_ROW, true, true, false, false, 0, 3, 8},
		{"2-D A, scale [1, 1, 1] widens (operator's path), bias",
		2, 50, 21, 70, QF_WIDE, true, false, false, false, 0, 3, 3},
		{"Cast output a graph output: only the Cast fuses",
		2, 300, 203, 130, QF_SCALAR, true, false, false, false, 1, 5, 1},
		{"MatMulInteger output a graph output: nothing fuses",
		2, 300, 203, 130, QF_SCALAR, true, false, false, false, 2, 6, 0},
	};
	char		err[512];

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		const qf_case *c = &cases[ci];
		int			n_out = c->extra_out ? 2 : 1;
		ie_model   *fused = load_qf_case(c, true, err, sizeof(err)),
				   *plain = NULL;
		ie_tensor  *x = qf_input(c),
				   *want[2] = {NULL, NULL};
		int			steps = 0;

		CHECK(fused != NULL, "%s: load fused: %s", c->what, err);
		if (fused != NULL)
			plain = load_qf_case(c, false, err, sizeof(err));
		CHECK(plain != NULL, "%s: load unfused: %s", c->what, err);
		if (fused == NULL || plain == NULL || x == NULL)
			goto next;
		for (int k = 0; k < fused->n_nodes; k++)
			if (strcmp(fused->nodes[k].op_type, "MatMulInteger") == 0)
				steps = ie_epilogue_n_steps(fused->nodes[k].epilogue);
		CHECK(fused->n_nodes == c->want_nodes && steps == c->want_steps,
			  "%s: fused plan has %d nodes, %d fused into the MatMulInteger (want %d, %d)",
			  c->what, fused->n_nodes, steps, c->want_nodes, c->want_steps);
		ie_set_threads(1);
		CHECK(ie_model_run(plain, (const ie_tensor *const *) &x, want, err, sizeof(err)) == 0,
			  "%s: run unfused: %s", c->what, err);
		for (int vnni = 1; vnni >= 0; vnni--)
			for (int t = 1; t <= 3; t += 2)
			{
				ie_tensor  *got[2] = {NULL, NULL},
						   *ref[2] = {NULL, NULL};

				ie_qv_force(vnni);
				ie_set_threads(t);
				CHECK(ie_model_run(fused, (const ie_tensor *const *) &x, got, err,
								   sizeof(err)) == 0 &&
					  ie_model_run(plain, (const ie_tensor *const *) &x, ref, err,
								   sizeof(err)) == 0,
					  "%s: run: %s", c->what, err);
				CHECK(same_outputs(got, want, n_out) && same_outputs(ref, want, n_out),
					  "%s: %s, %d threads: fused outputs differ from the unfused graph's",
					  c->what, vnni && ie_qv_available() ? "VNNI" : "sgemm", t);
				for (int j = 0; j < 2; j++)
				{
					ie_tensor_destroy(&got[j]);
					ie_tensor_destroy(&ref[j]);
				}
			}
		ie_qv_force(-1);
		ie_set_threads(1);
next:
		for (int j = 0; j < 2; j++)
			ie_tensor_destroy(&want[j]);
		ie_tensor_destroy(&x);
		ie_model_destroy(&fused);
		ie_model_destroy(&plain);
	}
}

/*
 * Two MatMulIntegers whose Casts are multiplied, Y = Cast(A x W1) *
 * Cast(A x W2): the first chain takes the Mul, the second's Cast output as
 * its run-time operand; the second chain must then stop at its Cast (the
 * Mul is no longer a node it can take), not fuse the Mul a second time,
 * which left the first's Cast output unproduced ("input 'C1' was not
 * produced").  Both orders of the Mul's operands; outputs as unfused.
 */
static void
test_qmatmul_two_casts(void)
{
	int64_t		ad[2] = {3, 8},
				wd[2] = {8, 5},
				yd[2] = {3, 5};
	uint8_t		a[24];
	int8_t		w1[40],
				w2[40];
	unsigned	seed = 17;
	char		err[512];

	for (int i = 0; i < 24; i++)
		a[i] = (uint8_t) (int) ((frand(&seed) + 1.0f) * 127.5f);
	for (int i = 0; i < 40; i++)
	{
		w1[i] = (int8_t) (int) (frand(&seed) * 127.5f);
		w2[i] = (int8_t) (int) (frand(&seed) * 127.5f);
	}
	for (int order = 0; order < 2; order++)
	{
		ie_model   *m[2] = {NULL, NULL};
		ie_tensor  *x = ie_tensor_new(IE_UINT8, 2, ad),
				   *y[2] = {NULL, NULL};
		int			n_mmi = 0;

		if (x != NULL)
			memcpy(x->data, a, sizeof(a));
		for (int fuse = 0; fuse < 2; fuse++)
		{
			graph_spec	g = {0};

			g.opset = 13;
			g.nodes[g.n_nodes++] = node("MatMulInteger", "mmi1", "A,W1", "P1");
			g.nodes[g.n_nodes++] = node("MatMulInteger", "mmi2", "A,W2", "P2");
			attr_int(g.nodes[g.n_nodes++] = node("Cast", "cast1", "P1", "C1"), "to", IE_FLOAT);
			attr_int(g.nodes[g.n_nodes++] = node("Cast", "cast2", "P2", "C2"), "to", IE_FLOAT);
			g.nodes[g.n_nodes++] = node("Mul", "mul", order ? "C2,C1" : "C1,C2", "Y");
			g.inits[g.n_inits++] = tensor_raw("W1", IE_INT8, 2, wd, w1, 40);
			g.inits[g.n_inits++] = tensor_raw("W2", IE_INT8, 2, wd, w2, 40);
			g.inputs[g.n_inputs++] = value_info("A", IE_UINT8, 2, ad);
			g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 2, yd);
			setenv("IE_FUSION", fuse ? "1" : "0", 1);
			m[fuse] = load(&g, err, sizeof(err));
			unsetenv("IE_FUSION");
			arena_reset();
			CHECK(m[fuse] != NULL, "two casts (order %d, fusion %d): load: %s", order, fuse, err);
			if (m[fuse] == NULL || x == NULL)
				continue;
			CHECK(ie_model_run(m[fuse], (const ie_tensor *const *) &x, &y[fuse], err,
							   sizeof(err)) == 0,
				  "two casts (order %d, fusion %d): run: %s", order, fuse, err);
		}
		for (int k = 0; m[1] != NULL && k < m[1]->n_nodes; k++)
			n_mmi += strcmp(m[1]->nodes[k].op_type, "MatMulInteger") == 0;
		CHECK(m[1] == NULL || (m[1]->n_nodes == 2 && n_mmi == 2),
			  "two casts (order %d): fused plan has %d nodes, want the 2 MatMulIntegers",
			  order, m[1] != NULL ? m[1]->n_nodes : -1);
		CHECK(y[0] != NULL && y[1] != NULL && same_outputs(&y[1], &y[0], 1),
			  "two casts (order %d): fused output differs from the unfused graph's", order);
		for (int f = 0; f < 2; f++)
		{
			ie_tensor_destroy(&y[f]);
			ie_model_destroy(&m[f]);
		}
		ie_tensor_destroy(&x);
	}
}

/*
 * A MatMul or MatMulInteger of two 1-D inputs is 0-D; a Mul by a 1-D
 * constant of one value after it makes [1], fused or not (the fused
 * product used to stay 0-D).  Plain product, then Cast for the integer one.
 */
static void
test_fused_0d_product(void)
{
	int64_t		kd[1] = {4},
				one[1] = {1};
	float		af[4] = {1, 2, 3, 4},
				bf[4] = {0.5f, -1, 2, 0.25f},
				k2 = 2.0f;
	uint8_t		aq[4] = {1, 2, 3, 4};
	int8_t		bq[4] = {5, -1, 2, 7};

	for (int integer = 0; integer < 2; integer++)
		for (int fuse = 0; fuse < 2; fuse++)
		{
			graph_spec	g = {0};
			char		err[512];
			ie_model   *m;
			ie_tensor  *in[2] = {ie_tensor_new(integer ? IE_UINT8 : IE_FLOAT, 1, kd),
				ie_tensor_new(integer ? IE_INT8 : IE_FLOAT, 1, kd)},
					   *y = NULL;

			if (in[0] != NULL && in[1] != NULL)
			{
				memcpy(in[0]->data, integer ? (void *) aq : (void *) af, in[0]->nbytes);
				memcpy(in[1]->data, integer ? (void *) bq : (void *) bf, in[1]->nbytes);
			}
			g.opset = 13;
			if (integer)
			{
				g.nodes[g.n_nodes++] = node("MatMulInteger", "mmi", "A,B", "P");
				attr_int(g.nodes[g.n_nodes++] = node("Cast", "cast", "P", "C"), "to", IE_FLOAT);
			}
			else
				g.nodes[g.n_nodes++] = node("MatMul", "mm", "A,B", "C");
			g.nodes[g.n_nodes++] = node("Mul", "mul", "C,K2", "Y");
			g.inits[g.n_inits++] = init_f("K2", 1, one, &k2, 1);
			g.inputs[g.n_inputs++] = value_info("A", integer ? IE_UINT8 : IE_FLOAT, 1, kd);
			g.inputs[g.n_inputs++] = value_info("B", integer ? IE_INT8 : IE_FLOAT, 1, kd);
			g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, 1, one);
			setenv("IE_FUSION", fuse ? "1" : "0", 1);
			m = load(&g, err, sizeof(err));
			unsetenv("IE_FUSION");
			arena_reset();
			CHECK(m != NULL && in[0] != NULL && in[1] != NULL &&
				  ie_model_run(m, (const ie_tensor *const *) in, &y, err, sizeof(err)) == 0,
				  "0-D %s (fusion %d): %s", integer ? "MatMulInteger" : "MatMul", fuse, err);
			CHECK(y != NULL && y->ndim == 1 && y->dims[0] == 1 &&
				  ((float *) y->data)[0] == (integer ? 74.0f : 11.0f),
				  "0-D %s (fusion %d): want [1] of %g, got rank %d, %g",
				  integer ? "MatMulInteger" : "MatMul", fuse, integer ? 74.0 : 11.0,
				  y != NULL ? y->ndim : -1, y != NULL ? ((float *) y->data)[0] : 0.0);
			ie_tensor_destroy(&y);
			ie_tensor_destroy(&in[0]);
			ie_tensor_destroy(&in[1]);
			ie_model_destroy(&m);
		}
}

/* ---- batch invariance of a text model ---- */

#define MINI_PATH "build/models/minilm/model.onnx"
#define MINI_HIDDEN 384

/*
 * Runs the MiniLM model on rows rows of seq tokens: ids[r * seq + t],
 * mask[r * seq + t] (token types 0); returns last_hidden_state
 * [rows, seq, 384] (caller frees) or NULL after a failed CHECK.
 */
static ie_tensor *
run_minilm(const ie_model *m, const int64_t *ids, const int64_t *mask,
		   int64_t rows, int64_t seq)
{
	int64_t		d[2] = {rows, seq};
	ie_tensor  *in[3] = {NULL, NULL, NULL};
	ie_tensor  *out[1] = {NULL};
	char		err[512];

	for (int i = 0; i < 3; i++)
	{
		const char *name = ie_model_input_name(m, i);

		in[i] = ie_tensor_new(IE_INT64, 2, d);
		if (strcmp(name, "input_ids") == 0)
			memcpy(in[i]->data, ids, in[i]->nbytes);
		else if (strcmp(name, "attention_mask") == 0)
			memcpy(in[i]->data, mask, in[i]->nbytes);
	}
	if (ie_model_run(m, (const ie_tensor *const *) in, out, err, sizeof(err)) != 0)
		CHECK(false, "minilm run: %s", err);
	for (int i = 0; i < 3; i++)
		ie_tensor_destroy(&in[i]);
	return out[0];
}

/*
 * A sentence's last_hidden_state is bit-identical alone (seq = its n
 * tokens) and padded to n+1, n+7, 2n and 128 tokens (id 0, mask 0) in a
 * batch with other rows around it, at 1 and 2 threads: Softmax over the
 * key axis and the products over it give the same bits when exact zeros
 * are appended.  Skipped when the model file is absent.  Bit for bit where
 * MatMul runs on the direct kernel (AVX-512F); within 1e-5 elsewhere.
 */
static void
test_text_batch_invariance(void)
{
	/* [CLS] hello world is a test sentence . [SEP] (BERT uncased ids) */
	static const int64_t sent[] = {101, 7592, 2088, 2003, 1037, 3231, 6251, 1012, 102};
	const int64_t n = (int64_t) (sizeof(sent) / sizeof(sent[0]));
	const int64_t pads[] = {n + 1, n + 7, 2 * n, 128};
	char		err[512];
	ie_model   *m;
	ie_tensor  *ref;
	int64_t		ids[3 * 128],
				mask[3 * 128];
	unsigned	st = 7;
	bool		exact = ie_gd_available() && getenv("IE_DIRECT_GEMM") == NULL;
	FILE	   *f = fopen(MINI_PATH, "rb");

	if (f == NULL)
	{
		printf("test_engine: skipping the text batch-invariance test: %s is absent "
			   "(make models)\n", MINI_PATH);
		return;
	}
	fclose(f);
	if (!exact)
		printf("test_engine: MatMul runs on OpenBLAS (no AVX-512F, or IE_DIRECT_GEMM=0): text rows are "
			   "checked to 1e-5, not bit for bit\n");
	m = ie_model_load_file(MINI_PATH, err, sizeof(err));
	CHECK(m != NULL, "load %s: %s", MINI_PATH, err);
	if (m == NULL)
		return;
	ie_set_threads(1);
	for (int64_t t = 0; t < n; t++)
		mask[t] = 1;
	ref = run_minilm(m, sent, mask, 1, n);
	CHECK(ref != NULL && ref->ndim == 3 && ref->dims[1] == n && ref->dims[2] == MINI_HIDDEN,
		  "alone: last_hidden_state shape");
	if (ref == NULL)
		goto done;
	for (int th = 1; th <= 2; th++)
	{
		ie_set_threads(th);
		for (size_t pi = 0; pi < sizeof(pads) / sizeof(pads[0]); pi++)
		{
			int64_t		seq = pads[pi];
			ie_tensor  *out;

			/* row 0: random tokens, all real; row 1: the sentence padded;
			 * row 2: random tokens, the first 5 real */
			for (int64_t r = 0; r < 3; r++)
				for (int64_t t = 0; t < seq; t++)
				{
					int64_t		i = r * seq + t;

					if (r == 1)
					{
						ids[i] = t < n ? sent[t] : 0;
						mask[i] = t < n;
					}
					else
					{
						ids[i] = t == 0 ? 101 : 1000 + (int64_t) ((frand(&st) + 1.0f) * 9000.0f);
						mask[i] = r == 0 || t < 5;
					}
				}
			out = run_minilm(m, ids, mask, 3, seq);
			CHECK(out != NULL && out->dims[1] == seq, "threads %d, seq %lld: shape", th,
				  (long long) seq);
			if (out == NULL)
				continue;
			if (exact)
				CHECK(memcmp((const float *) out->data + seq * MINI_HIDDEN, ref->data,
							 n * MINI_HIDDEN * sizeof(float)) == 0,
					  "threads %d, padded to %lld in a batch of 3: the sentence's rows "
					  "differ from running it alone", th, (long long) seq);
			else
			{
				/* OpenBLAS's products (no AVX-512F) round by batch shape */
				double		md = 0;

				for (int64_t i = 0; i < n * MINI_HIDDEN; i++)
					md = fmax(md, fabs((double) ((const float *) out->data)[seq * MINI_HIDDEN + i] -
									   ((const float *) ref->data)[i]));
				CHECK(md <= 1e-5, "threads %d, padded to %lld: differs by %g", th,
					  (long long) seq, md);
			}
			/* and a real value, not zeros: the [CLS] row is not all 0 */
			CHECK(fabsf(((const float *) ref->data)[0]) + fabsf(((const float *) ref->data)[1]) > 0,
				  "the reference output is not all zeros");
			ie_tensor_destroy(&out);
		}
	}
	ie_tensor_destroy(&ref);
done:
	ie_set_threads(1);
	ie_model_destroy(&m);
}

/*
 * An empty output of the CUDA executor is held to the host tensor's bounds
 * like the CPU's (ie_tensor_new): X [0, 4] reshaped (allowzero) to
 * [0, 2^40, 2^40], whose other dims pass a byte count, is refused on the
 * device itself (cu_dtensor_new), and [0, 262144, 2, 2] under a 1 MiB
 * limit (4 MiB of other dims) when brought to the host; both IE_ERR_LIMIT
 * naming the refused shape, not "out of memory for a 0-byte host tensor"
 * (IE_ERR_NO_MEMORY), and so is [0, 262144, 2, 2] brought back for a
 * Round, which runs on the CPU; [0, 1024, 2, 2] under it runs.  Only
 * where IE_CUDA_BACKEND names a backend (the emulation: check-gpu-emu's
 * libinferengine_cudaemu.so) and cuda:0 can be used.
 */
static void
test_cuda_empty_download(void)
{
	char		err[512];
	ie_tensor  *in;

	if (getenv("IE_CUDA_BACKEND") == NULL || ie_set_device(0, err, sizeof(err)) != 0)
		return;
	in = ie_tensor_new(IE_FLOAT, 2, (int64_t[]) {0, 4});
	for (int k = 0; k < 4; k++)
	{
		graph_spec	g = {0};
		Onnx__NodeProto *r = node("Reshape", "r0", "X,S", k == 3 ? "R" : "Y");
		int64_t		big[3] = {0, 1LL << 40, 1LL << 40},
					wide[4] = {0, k == 2 ? 1024 : 262144, 2, 2};
		ie_model   *m;
		ie_tensor  *out[1] = {NULL};
		const ie_tensor *ins[1] = {in};
		int			rc;

		attr_int(r, "allowzero", 1);
		g.opset = 14;
		g.nodes[g.n_nodes++] = r;
		if (k == 3)
			g.nodes[g.n_nodes++] = node("Round", "round0", "R", "Y");
		g.inits[g.n_inits++] = k == 0 ? tensor_i64("S", big, 3) : tensor_i64("S", wide, 4);
		g.inputs[g.n_inputs++] = value_info("X", IE_FLOAT, 2, (int64_t[]) {-1, -1});
		g.outputs[g.n_outputs++] = value_info("Y", IE_FLOAT, k == 0 ? 3 : 4,
											  (int64_t[]) {-1, -1, -1, -1});
		m = load(&g, err, sizeof(err));
		CHECK(m != NULL && ie_model_device(m) == 0, "load an empty Reshape (%d) on cuda:0: %s", k, err);
		if (m == NULL)
			continue;
		if (k > 0)
			ie_set_max_tensor_bytes(1 << 20);
		err[0] = '\0';
		rc = ie_model_run(m, ins, out, err, sizeof(err));
		if (k == 0)
			CHECK(rc == -IE_ERR_LIMIT && out[0] == NULL &&
				  strstr(err, "over the tensor limit for the device: an empty float tensor of shape [0, 1099511627776, 1099511627776] has other dims whose bytes the engine cannot count") != NULL,
				  "cuda: an empty output whose other dims pass 2^63 bytes is IE_ERR_LIMIT (%d): %s",
				  rc, err);
		else if (k == 1)
			CHECK(rc == -IE_ERR_LIMIT && out[0] == NULL &&
				  strstr(err, "over the tensor limit for a host tensor: an empty float tensor of shape [0, 262144, 2, 2] has other dims of 4194304 bytes, more than the 1048576 bytes a tensor may take") != NULL,
				  "cuda: an empty output over the tensor limit is IE_ERR_LIMIT (%d): %s", rc, err);
		else if (k == 3)
			CHECK(rc == -IE_ERR_LIMIT && out[0] == NULL &&
				  strstr(err, "Round node 'round0': input 0 to the host: over the tensor limit for a host tensor: an empty float tensor of shape [0, 262144, 2, 2]") != NULL,
				  "cuda: an empty input of a CPU node over the tensor limit is IE_ERR_LIMIT (%d): %s",
				  rc, err);
		else
			CHECK(rc == 0 && out[0] != NULL && out[0]->ndim == 4 && out[0]->dims[1] == 1024 &&
				  out[0]->nbytes == 0,
				  "cuda: an empty output under the tensor limit runs (%d): %s", rc, err);
		ie_tensor_destroy(&out[0]);
		ie_set_max_tensor_bytes(0);
		ie_model_destroy(&m);
		arena_reset();
	}
	ie_tensor_destroy(&in);
	ie_set_device(IE_DEVICE_CPU, err, sizeof(err));
}

/* Runs every test and prints the summary line. */
int
main(void)
{
	test_add_relu();
	test_load_errors();
	test_strings_attr();
	test_constant_reshape();
	test_run_error_kinds();
	test_input_types();
	test_output_counts();
	test_opset_changes();
	test_broadcast_clip();
	test_shape_ops();
	test_concurrent_runs();
	test_threads();
	test_conv_fusion();
	test_fusion_escape();
	test_conv_bn_fusion();
	test_pool();
	test_tensor_cache();
	test_gemm_direct();
	test_conv_transpose_disjoint();
	test_scratch_conv_transpose();
	test_scratch_conv_im2col();
	test_scratch_conv_bands();
	test_scratch_conv_depthwise();
	test_scratch_reduce();
	test_scratch_resize_antialias();
	test_matmul_fusion();
	test_matmul_double_relu();
	test_qmatmul_fusion();
	test_qmatmul_two_casts();
	test_fused_0d_product();
	test_text_batch_invariance();
	test_cuda_empty_download();
	return tu_report("test_engine");
}
