/*
 * model.c
 *	  Loading and planning an ONNX model: ModelProto (protobuf-c over the
 *	  official onnx.proto) into the plan of model_int.h.
 *
 * Loading checks the opset, converts initializers (raw_data or the typed
 * fields), decodes attributes into ie_attr, binds every node to its
 * operator (an unknown operator fails the load, naming the node), orders
 * the nodes topologically, folds Constant nodes and nodes whose inputs are
 * all constant into constant values, records the declared inputs and
 * outputs, and fuses element-wise chains into the Conv, MatMul or
 * MatMulInteger before them (fusion.h).  Nothing here keeps global state;
 * a loaded model is read-only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "worker/engine/cuda/backend.h"
#include "worker/engine/fusion.h"
#include "worker/engine/model_int.h"

/* Most bytes a model file may have (protobuf's own limit is 2 GiB). */
#define IE_MODEL_MAX_BYTES ((size_t) 2 << 30)

/* Name -> value index, open addressing; only used while loading. */
typedef struct name_map
{
	size_t		cap;			/* power of two */
	const char **keys;
	int		   *vals;
} name_map;

/* Everything one load needs; freed (except the model) at the end. */
typedef struct loader
{
	ie_model   *m;
	const char *name;
	int			cap_values;
	name_map	map;
	char	   *err;
	size_t		errlen;
	ie_error_kind kind;			/* of the error in err */
} loader;

/*
 * Formats "model '<name>': <message>" into the loader's err, its kind
 * kind; returns -1.
 */
static int
load_error_kind(loader *ld, ie_error_kind kind, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

/* load_error_kind with the kind of the message's format (ie_error_kind_of). */
#define FIRST_ARG(a, ...) a
#define load_error(ld, ...) \
	load_error_kind((ld), ie_error_kind_of(FIRST_ARG(__VA_ARGS__, "")), __VA_ARGS__)

static int
load_error_kind(loader *ld, ie_error_kind kind, const char *fmt,...)
{
	va_list		ap;
	int			n;

	ld->kind = kind;
	n = snprintf(ld->err, ld->errlen, "model '%s': ", ld->name);
	if (n < 0 || (size_t) n >= ld->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ld->err + n, ld->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* FNV-1a hash of a NUL-terminated string. */
static size_t
hash_str(const char *s)
{
	size_t		h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 1099511628211ULL;
	return h;
}

/* Value index of name, or -1. */
static int
map_get(const name_map *map, const char *name)
{
	if (map->cap == 0)
		return -1;
	for (size_t i = hash_str(name) & (map->cap - 1);; i = (i + 1) & (map->cap - 1))
	{
		if (map->keys[i] == NULL)
			return -1;
		if (strcmp(map->keys[i], name) == 0)
			return map->vals[i];
	}
}

/* Inserts name (not copied: it must outlive the map); 0, or -1 on no memory. */
static int
map_put(name_map *map, const char *name, int val)
{
	size_t		i;

	if (map->cap == 0 || (size_t) val * 2 + 2 > map->cap)
	{
		name_map	bigger;

		bigger.cap = map->cap ? map->cap * 2 : 256;
		bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
		bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
		if (bigger.keys == NULL || bigger.vals == NULL)
		{
			free(bigger.keys);
			free(bigger.vals);
			return -1;
		}
		for (size_t k = 0; k < map->cap; k++)
			if (map->keys[k] != NULL)
			{
				for (i = hash_str(map->keys[k]) & (bigger.cap - 1); bigger.keys[i];
					 i = (i + 1) & (bigger.cap - 1))
					;
				bigger.keys[i] = map->keys[k];
				bigger.vals[i] = map->vals[k];
			}
		free(map->keys);
		free(map->vals);
		*map = bigger;
	}
	for (i = hash_str(name) & (map->cap - 1); map->keys[i];
		 i = (i + 1) & (map->cap - 1))
		;
	map->keys[i] = name;
	map->vals[i] = val;
	return 0;
}

/* Adds a value called name (copied) and returns its index, or -1 (no memory). */
static int
add_value(loader *ld, const char *name)
{
	ie_model   *m = ld->m;
	int			v = m->n_values;

	if (v == ld->cap_values)
	{
		int			cap = ld->cap_values ? ld->cap_values * 2 : 256;
		char	  **names = realloc(m->value_names, cap * sizeof(*names));

		if (names == NULL)
			return -1;
		m->value_names = names;
		ie_tensor **consts = realloc(m->consts, cap * sizeof(*consts));

		if (consts == NULL)
			return -1;
		m->consts = consts;
		ld->cap_values = cap;
	}
	m->value_names[v] = strdup(name);
	if (m->value_names[v] == NULL)
		return -1;
	m->consts[v] = NULL;
	m->n_values++;
	if (map_put(&ld->map, m->value_names[v], v) != 0)
		return -1;
	return v;
}

/*
 * TensorProto -> new tensor.  Values come from raw_data (little-endian, as
 * ONNX stores it; this engine runs on little-endian hosts) or from the typed
 * field that onnx.proto assigns to the element type.  Returns 0, or minus
 * the kind of the error (-IE_ERR_INVALID, which is -1, ...) with a message.
 */
int
ie_tensor_from_proto(const Onnx__TensorProto *tp, ie_tensor **out,
					 char *err, size_t errlen)
{
	const char *name = (tp->name && tp->name[0]) ? tp->name : "<unnamed>";
	ie_dtype	dt = (ie_dtype) tp->data_type;
	size_t		esize = (dt == IE_STRING) ? 0 : ie_dtype_size(dt);
	int64_t		dims[IE_MAX_DIMS];
	ie_tensor  *t;
	size_t		n,
				count = 0;

	*out = NULL;
	if (esize == 0)
	{
		snprintf(err, errlen, "tensor '%s': element type %s (%d) is not supported",
				 name, ie_type_name(tp->data_type), (int) tp->data_type);
		return -IE_ERR_NOT_SUPPORTED;
	}
	if (tp->has_data_location &&
		tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
	{
		snprintf(err, errlen, "tensor '%s': external data is not supported", name);
		return -IE_ERR_NOT_SUPPORTED;
	}
	if (tp->segment != NULL)
	{
		snprintf(err, errlen, "tensor '%s': segmented tensors are not supported", name);
		return -IE_ERR_NOT_SUPPORTED;
	}
	if (tp->n_dims > IE_MAX_DIMS)
	{
		snprintf(err, errlen, "tensor '%s': rank %zu exceeds the engine's limit of %d",
				 name, tp->n_dims, IE_MAX_DIMS);
		return -IE_ERR_NOT_SUPPORTED;
	}
	for (size_t i = 0; i < tp->n_dims; i++)
	{
		if (tp->dims[i] < 0)
		{
			snprintf(err, errlen, "tensor '%s': negative dimension %lld", name,
					 (long long) tp->dims[i]);
			return -1;
		}
		dims[i] = tp->dims[i];
	}
	t = ie_tensor_new(dt, (int) tp->n_dims, dims);
	if (t == NULL)
	{
		char		why[384];

		if (ie_tensor_take_refusal(why, sizeof(why)))
		{
			snprintf(err, errlen, "tensor '%s': over the tensor limit: %s", name, why);
			return -IE_ERR_LIMIT;
		}
		snprintf(err, errlen, "tensor '%s': out of memory", name);
		return -IE_ERR_NO_MEMORY;
	}
	n = (size_t) ie_tensor_numel(t);
	if (tp->has_raw_data)
	{
		if (tp->raw_data.len != t->nbytes)
		{
			snprintf(err, errlen, "tensor '%s': raw_data holds %zu bytes, shape needs %zu",
					 name, tp->raw_data.len, t->nbytes);
			goto fail;
		}
		if (t->nbytes > 0)
			memcpy(t->data, tp->raw_data.data, t->nbytes);
		*out = t;
		return 0;
	}
	switch (dt)
	{
		case IE_FLOAT:
			count = tp->n_float_data;
			if (count == n && n > 0)
				memcpy(t->data, tp->float_data, n * sizeof(float));
			break;
		case IE_DOUBLE:
			count = tp->n_double_data;
			if (count == n && n > 0)
				memcpy(t->data, tp->double_data, n * sizeof(double));
			break;
		case IE_INT64:
			count = tp->n_int64_data;
			if (count == n && n > 0)
				memcpy(t->data, tp->int64_data, n * sizeof(int64_t));
			break;
		case IE_INT32:
			count = tp->n_int32_data;
			if (count == n && n > 0)
				memcpy(t->data, tp->int32_data, n * sizeof(int32_t));
			break;
		case IE_INT16:
		case IE_UINT16:
		case IE_FLOAT16:
			count = tp->n_int32_data;
			if (count == n)
				for (size_t i = 0; i < n; i++)
					((uint16_t *) t->data)[i] = (uint16_t) tp->int32_data[i];
			break;
		case IE_INT8:
		case IE_UINT8:
		case IE_BOOL:
			count = tp->n_int32_data;
			if (count == n)
				for (size_t i = 0; i < n; i++)
					((uint8_t *) t->data)[i] = (uint8_t) tp->int32_data[i];
			break;
		case IE_UINT32:
			count = tp->n_uint64_data;
			if (count == n)
				for (size_t i = 0; i < n; i++)
					((uint32_t *) t->data)[i] = (uint32_t) tp->uint64_data[i];
			break;
		case IE_UINT64:
			count = tp->n_uint64_data;
			if (count == n && n > 0)
				memcpy(t->data, tp->uint64_data, n * sizeof(uint64_t));
			break;
		default:
			break;
	}
	if (count != n)
	{
		snprintf(err, errlen, "tensor '%s': holds %zu values of type %s, shape needs %zu",
				 name, count, ie_dtype_name(dt), n);
		goto fail;
	}
	*out = t;
	return 0;

fail:
	ie_tensor_destroy(&t);
	return -1;
}

/* Frees the decoded attributes of one node. */
static void
free_attrs(ie_attr *attrs, int n)
{
	for (int i = 0; i < n; i++)
	{
		ie_tensor  *t = (ie_tensor *) attrs[i].t;

		free((char *) attrs[i].name);
		free((char *) attrs[i].s);
		free((float *) attrs[i].floats);
		free((int64_t *) attrs[i].ints);
		for (int j = 0; j < attrs[i].n_strings; j++)
			free((char *) attrs[i].strings[j]);
		free((char **) attrs[i].strings);
		ie_tensor_destroy(&t);
	}
	free(attrs);
}

/* Decodes node's attributes into pn->attrs; 0, or -1 with a message. */
static int
decode_attrs(loader *ld, const Onnx__NodeProto *np, ie_plan_node *pn)
{
	char		terr[256];
	int			rc;

	pn->attrs = calloc(np->n_attribute ? np->n_attribute : 1, sizeof(ie_attr));
	if (pn->attrs == NULL)
		return load_error(ld, "out of memory");
	for (size_t i = 0; i < np->n_attribute; i++)
	{
		const Onnx__AttributeProto *ap = np->attribute[i];
		const char *name = ap->name ? ap->name : "";
		ie_attr    *a;

		/* a name twice is invalid, as for ONNX's checker, "__..." too */
		for (size_t j = 0; j < i; j++)
			if (strcmp(np->attribute[j]->name ? np->attribute[j]->name : "", name) == 0)
				return load_error_kind(ld, IE_ERR_INVALID,
									   "%s node '%s': attribute '%s' is given twice",
									   pn->op_type, pn->name, name);
		/* "__..." names are tools' own: the checker skips them, so do we */
		if (strncmp(name, "__", 2) == 0)
			continue;
		a = &pn->attrs[pn->n_attrs++];
		a->name = strdup(name);
		if (a->name == NULL)
			return load_error(ld, "out of memory");
		a->type = (ie_attr_type) ap->type;
		switch (ap->type)
		{
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
				a->f = ap->f;
				break;
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
				a->i = ap->i;
				break;
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
				{
					char	   *s = malloc(ap->s.len + 1);

					if (s == NULL)
						return load_error(ld, "out of memory");
					if (ap->s.len > 0)
						memcpy(s, ap->s.data, ap->s.len);
					s[ap->s.len] = '\0';
					a->s = s;
					a->s_len = ap->s.len;
					break;
				}
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
				{
					float	   *f = malloc((ap->n_floats ? ap->n_floats : 1) * sizeof(float));

					if (f == NULL)
						return load_error(ld, "out of memory");
					if (ap->n_floats > 0)
						memcpy(f, ap->floats, ap->n_floats * sizeof(float));
					a->floats = f;
					a->n_floats = (int) ap->n_floats;
					break;
				}
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
				{
					int64_t    *v = malloc((ap->n_ints ? ap->n_ints : 1) * sizeof(int64_t));

					if (v == NULL)
						return load_error(ld, "out of memory");
					if (ap->n_ints > 0)
						memcpy(v, ap->ints, ap->n_ints * sizeof(int64_t));
					a->ints = v;
					a->n_ints = (int) ap->n_ints;
					break;
				}
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
				{
					char	  **v = calloc(ap->n_strings ? ap->n_strings : 1, sizeof(char *));

					if (v == NULL)
						return load_error(ld, "out of memory");
					a->strings = (const char *const *) v;
					for (size_t j = 0; j < ap->n_strings; j++)
					{
						if ((v[j] = malloc(ap->strings[j].len + 1)) == NULL)
							return load_error(ld, "out of memory");
						a->n_strings = (int) j + 1;
						if (ap->strings[j].len > 0)
							memcpy(v[j], ap->strings[j].data, ap->strings[j].len);
						v[j][ap->strings[j].len] = '\0';

						/*
						 * kept NUL-terminated without their lengths, so a
						 * NUL inside ("Relu\0junk") would read as a shorter
						 * string: invalid
						 */
						if (memchr(v[j], '\0', ap->strings[j].len) != NULL)
							return load_error_kind(ld, IE_ERR_INVALID,
												   "%s node '%s': attribute '%s': string %zu holds a NUL byte",
												   pn->op_type, pn->name, name, j);
					}
					break;
				}
			case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
				{
					ie_tensor  *t;

					if (ap->t == NULL)
						return load_error(ld, "%s node '%s': attribute '%s' has no tensor",
										  pn->op_type, pn->name, a->name);
					if ((rc = ie_tensor_from_proto(ap->t, &t, terr, sizeof(terr))) != 0)
						return load_error_kind(ld, (ie_error_kind) -rc,
											   "%s node '%s': attribute '%s': %s",
											   pn->op_type, pn->name, a->name, terr);
					a->t = t;
					break;
				}
			default:
				/*
				 * kept with its type and no value: ie_op_check_attrs refuses
				 * it, as an attribute the operator's schema lacks or gives
				 * another type (invalid), or one of a type the engine does
				 * not hold (lists of strings or tensors, graphs, sparse
				 * tensors, types: not supported)
				 */
				break;
		}
	}
	return 0;
}

/* Frees one plan node's contents, its epilogue included. */
void
ie_plan_node_free(ie_plan_node *pn)
{
	ie_epilogue_destroy(&pn->epilogue);
	free(pn->name);
	free(pn->op_type);
	free(pn->inputs);
	free(pn->outputs);
	free(pn->checks);
	free_attrs(pn->attrs, pn->n_attrs);
	memset(pn, 0, sizeof(*pn));
}

/* Records the declared type and shape of a graph input or output. */
static int
read_value_info(loader *ld, const Onnx__ValueInfoProto *vi, ie_plan_io *io,
				const char *what)
{
	const Onnx__TypeProto *tp = vi->type;
	const Onnx__TensorShapeProto *sh;

	io->dtype = IE_UNDEFINED;
	io->rank = -1;
	if (tp == NULL)
		return 0;
	if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || tp->tensor_type == NULL)
		return load_error(ld, "%s '%s' is not a tensor (sequence, map and optional "
						  "values are not supported)", what, io->name);
	if (tp->tensor_type->has_elem_type)
		io->dtype = (ie_dtype) tp->tensor_type->elem_type;
	if (io->dtype == IE_STRING ||
		(io->dtype != IE_UNDEFINED && ie_dtype_size(io->dtype) == 0))
		return load_error(ld, "%s '%s' has element type %s, which the engine does "
						  "not support", what, io->name,
						  ie_type_name(tp->tensor_type->elem_type));
	sh = tp->tensor_type->shape;
	if (sh == NULL)
		return 0;
	if (sh->n_dim > IE_MAX_DIMS)
		return load_error(ld, "%s '%s' has rank %zu, more than the engine's limit of %d",
						  what, io->name, sh->n_dim, IE_MAX_DIMS);
	io->rank = (int) sh->n_dim;
	for (size_t d = 0; d < sh->n_dim; d++)
	{
		const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];

		io->dims[d] = -1;
		if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			dim->dim_param != NULL && dim->dim_param[0] != '\0' &&
			(io->dim_param[d] = strdup(dim->dim_param)) == NULL)
			return load_error(ld, "out of memory");
		if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			dim->dim_value > 0)
			io->dims[d] = dim->dim_value;
		else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
				 dim->dim_value == 0)
			io->dims[d] = 0;
	}
	return 0;
}

/*
 * Runs node pn at load time on constant inputs and stores its outputs as
 * constants (Constant nodes, and nodes whose inputs are all constant).
 */
static int
fold_node(loader *ld, ie_plan_node *pn)
{
	ie_model   *m = ld->m;
	const ie_tensor *ins[pn->n_inputs > 0 ? pn->n_inputs : 1];
	ie_dtype	dtypes[pn->n_inputs > 0 ? pn->n_inputs : 1];
	ie_tensor  *outs[pn->n_outputs > 0 ? pn->n_outputs : 1];
	char		operr[512];
	ie_node_ctx ctx;

	for (int i = 0; i < pn->n_inputs; i++)
		ins[i] = pn->inputs[i] >= 0 ? m->consts[pn->inputs[i]] : NULL;
	for (int j = 0; j < pn->n_outputs; j++)
		outs[j] = NULL;
	for (int i = 0; i < pn->n_inputs; i++)
		dtypes[i] = ins[i] != NULL ? ins[i]->dtype : IE_UNDEFINED;
	/* a folded node's input types are checked here, as the executor would */
	if (ie_node_check_types(m, pn, dtypes, operr, sizeof(operr)) != 0)
		return load_error_kind(ld, IE_ERR_INVALID, "%s", operr);
	ie_node_ctx_init(&ctx, m, pn, ins, outs, 1,
					 operr, sizeof(operr));
	operr[0] = '\0';
	ctx.err_kind = IE_ERR_INVALID;
	ie_tensor_forget_refusal();
	if (pn->fn(&ctx) != 0)
	{
		for (int j = 0; j < pn->n_outputs; j++)
			ie_tensor_destroy(&outs[j]);
		if (operr[0] == '\0')
			snprintf(operr, sizeof(operr), "%s node '%s': failed", pn->op_type, pn->name);
		return load_error_kind(ld, ctx.err_kind, "%s", operr);
	}
	for (int j = 0; j < pn->n_outputs; j++)
	{
		if (pn->outputs[j] >= 0 && outs[j] != NULL)
		{
			m->consts[pn->outputs[j]] = outs[j];
			m->weight_bytes += outs[j]->nbytes;
		}
		else
			ie_tensor_destroy(&outs[j]);
	}
	return 0;
}

/* Frees what a graph input's or output's record owns. */
static void
plan_io_free(ie_plan_io *io)
{
	free(io->name);
	for (int d = 0; d < IE_MAX_DIMS; d++)
		free(io->dim_param[d]);
}

/* Frees a model and nulls the caller's pointer. */
void
ie_model_destroy(ie_model **mp)
{
	ie_model   *m;

	if (mp == NULL || *mp == NULL)
		return;
	m = *mp;
	ie_cuda_model_release(m);
	for (int v = 0; v < m->n_values; v++)
	{
		free(m->value_names[v]);
		ie_tensor_destroy(&m->consts[v]);
	}
	free(m->value_names);
	free(m->consts);
	free(m->last_use);
	free(m->is_output);
	for (int i = 0; i < m->n_inputs; i++)
		plan_io_free(&m->inputs[i]);
	free(m->inputs);
	for (int i = 0; i < m->n_outputs; i++)
		plan_io_free(&m->outputs[i]);
	free(m->outputs);
	for (int k = 0; k < m->n_nodes; k++)
		ie_plan_node_free(&m->nodes[k]);
	free(m->nodes);
	free(m->name);
	free(m);
	*mp = NULL;
}

/* The default-domain opset of mp, or -1 with a message. */
static int
read_opset(loader *ld, const Onnx__ModelProto *mp)
{
	int			opset = -1;

	for (size_t i = 0; i < mp->n_opset_import; i++)
	{
		const Onnx__OperatorSetIdProto *os = mp->opset_import[i];

		if (os->domain == NULL || os->domain[0] == '\0' ||
			strcmp(os->domain, "ai.onnx") == 0)
			opset = (int) os->version;
	}
	if (opset < 0)
		return load_error(ld, "imports no default-domain (ai.onnx) opset");
	if (opset < IE_OPSET_MIN || opset > IE_OPSET_MAX)
		return load_error(ld, "opset %d is not supported (the engine knows opsets %d to %d)",
						  opset, IE_OPSET_MIN, IE_OPSET_MAX);
	return opset;
}

/*
 * Advice appended to the refusal of an operator of another domain: ONNX
 * Runtime's own domain (com.microsoft) is what its tools write, and each
 * has a standard-ONNX form the engine runs.  QLinear* and the other Q ops
 * come from onnxruntime.quantization's QOperator format (quant_format=
 * QuantFormat.QOperator), whose QDQ format (QuantizeLinear and
 * DequantizeLinear around float operators, the default of quantize_static)
 * is standard ONNX; the fused ones (FusedMatMul, SkipLayerNormalization,
 * BiasGelu, ...) from a model saved after ONNX Runtime's graph optimizer
 * (SessionOptions.optimized_model_filepath, or onnxruntime.transformers'
 * optimizer), whose input model is standard ONNX.  "" for other domains.
 */
static const char *
contrib_advice(const char *domain, const char *op)
{
	if (strcmp(domain, "com.microsoft") != 0)
		return "";
	if (op[0] == 'Q')
		return ": ONNX Runtime's QOperator quantization format; quantize in the QDQ "
			"format (quant_format=QuantFormat.QDQ), which is standard ONNX";
	return ": an ONNX Runtime contrib operator, as its graph optimizer writes; "
		"use the model as exported, before ONNX Runtime's optimizations";
}

/*
 * Binds node np (graph position idx) into pn: operator look-up, attributes
 * (checked against the operator's ONNX schema, ie_op_check_attrs, and its
 * values against what the operator implements, ie_op_check_lookup), the
 * number of outputs (against the schema, ie_op_check_outputs, before the
 * operator's own check reads it), output values.  Input values are
 * resolved later, once all outputs exist.
 */
static int
bind_node(loader *ld, const Onnx__NodeProto *np, int idx, ie_plan_node *pn)
{
	char		namebuf[32];
	char		aerr[512] = "";
	const char *op = np->op_type ? np->op_type : "";
	ie_op_fn	check;
	ie_error_kind kind = IE_ERR_INVALID;

	if (np->name != NULL && np->name[0] != '\0')
		pn->name = strdup(np->name);
	else
	{
		snprintf(namebuf, sizeof(namebuf), "#%d", idx);
		pn->name = strdup(namebuf);
	}
	pn->op_type = strdup(op);
	if (pn->name == NULL || pn->op_type == NULL)
		return load_error(ld, "out of memory");
	if (np->domain != NULL && np->domain[0] != '\0' && strcmp(np->domain, "ai.onnx") != 0)
		return load_error(ld, "unsupported operator '%s' in domain '%s' (node '%s')%s",
						  op, np->domain, pn->name, contrib_advice(np->domain, op));
	pn->fn = ie_op_lookup(op);
	if (pn->fn == NULL)
		return load_error(ld, "unsupported operator '%s' (node '%s')", op, pn->name);
	if (decode_attrs(ld, np, pn) != 0)
		return -1;
	if (ie_op_check_attrs(op, ld->m->opset, pn->n_attrs, pn->attrs, &kind, aerr,
						  sizeof(aerr)) != 0)
		return load_error_kind(ld, kind, "%s node '%s': %s", op, pn->name, aerr);
	/* the engine needs at least one output, though ONNX lets RNN, GRU and
	 * LSTM have none (output 0 of those may be ""): operators write output
	 * 0 without asking */
	if (np->n_output == 0)
		return load_error(ld, "%s node '%s' has no outputs", op, pn->name);
	if (ie_op_check_outputs(op, ld->m->opset, (int) np->n_output,
							(const char *const *) np->output, aerr, sizeof(aerr)) != 0)
		return load_error_kind(ld, IE_ERR_INVALID, "%s node '%s': %s", op, pn->name, aerr);
	pn->n_inputs = (int) np->n_input;
	pn->n_outputs = (int) np->n_output;
	if ((check = ie_op_check_lookup(op)) != NULL)
	{
		ie_node_ctx cctx = {
			.op_type = op, .node_name = pn->name, .opset = ld->m->opset,
			.n_inputs = pn->n_inputs, .n_outputs = pn->n_outputs,
			.n_attrs = pn->n_attrs, .attrs = pn->attrs, .n_threads = 1,
			.err = aerr, .errlen = sizeof(aerr), .err_kind = IE_ERR_INVALID
		};

		if (check(&cctx) != 0)
			return load_error_kind(ld, cctx.err_kind, "%s", aerr);
	}
	for (int i = 0; i < ie_op_min_inputs(op); i++)
		if (i >= pn->n_inputs || np->input[i] == NULL || np->input[i][0] == '\0')
			return load_error(ld, "%s node '%s': required input %d is missing "
							  "(the operator needs %d)", op, pn->name, i,
							  ie_op_min_inputs(op));
	pn->inputs = calloc(np->n_input ? np->n_input : 1, sizeof(int));
	pn->outputs = calloc(np->n_output ? np->n_output : 1, sizeof(int));
	if (pn->inputs == NULL || pn->outputs == NULL)
		return load_error(ld, "out of memory");
	for (size_t j = 0; j < np->n_output; j++)
	{
		const char *o = np->output[j];

		if (o == NULL || o[0] == '\0')
		{
			pn->outputs[j] = -1;
			continue;
		}
		if (map_get(&ld->map, o) >= 0)
			return load_error(ld, "%s node '%s': output '%s' is already defined by "
							  "another node, an input or an initializer", op, pn->name, o);
		pn->outputs[j] = add_value(ld, o);
		if (pn->outputs[j] < 0)
			return load_error(ld, "out of memory");
	}
	return 0;
}

/*
 * Sets up the input type checks of the bound nodes (ie_op_input_checks,
 * op.h); fails on a node with more inputs than its operator's version
 * takes.
 */
static int
plan_input_checks(loader *ld, ie_plan_node *bound, int n)
{
	char		terr[512];

	for (int k = 0; k < n; k++)
	{
		ie_plan_node *pn = &bound[k];

		if (pn->n_inputs == 0)
			continue;
		pn->checks = calloc(pn->n_inputs, sizeof(ie_input_check));
		if (pn->checks == NULL)
			return load_error(ld, "out of memory");
		if (ie_op_input_checks(pn->op_type, ld->m->opset, pn->n_inputs, pn->inputs,
							   pn->checks, &pn->since, terr, sizeof(terr)) != 0)
			return load_error_kind(ld, IE_ERR_INVALID, "%s node '%s': %s", pn->op_type,
								   pn->name, terr);
	}
	return 0;
}

/*
 * Checks the planned nodes' input types known before a run
 * (ie_node_check_types): the constants' (initializers, folded nodes) and
 * the graph inputs' declared element types, so that a model whose constant
 * or declared input has a type the operator's schema does not allow fails
 * its load.  Types computed at run are checked then (executor.c).
 */
static int
check_known_types(loader *ld)
{
	ie_model   *m = ld->m;
	ie_dtype   *known = calloc(m->n_values ? m->n_values : 1, sizeof(ie_dtype));
	ie_dtype   *dtypes;
	int			max_in = 1;
	char		terr[1024];
	int			rc = 0;

	for (int k = 0; k < m->n_nodes; k++)
		if (m->nodes[k].n_inputs > max_in)
			max_in = m->nodes[k].n_inputs;
	dtypes = calloc(max_in, sizeof(ie_dtype));
	if (known == NULL || dtypes == NULL)
	{
		free(known);
		free(dtypes);
		return load_error(ld, "out of memory");
	}
	for (int v = 0; v < m->n_values; v++)
		known[v] = m->consts[v] != NULL ? m->consts[v]->dtype : IE_UNDEFINED;
	for (int i = 0; i < m->n_inputs; i++)
		known[m->inputs[i].value] = m->inputs[i].dtype;
	for (int k = 0; k < m->n_nodes && rc == 0; k++)
	{
		const ie_plan_node *pn = &m->nodes[k];

		for (int i = 0; i < pn->n_inputs; i++)
			dtypes[i] = pn->inputs[i] >= 0 ? known[pn->inputs[i]] : IE_UNDEFINED;
		if (ie_node_check_types(m, pn, dtypes, terr, sizeof(terr)) != 0)
			rc = load_error_kind(ld, IE_ERR_INVALID, "%s", terr);
	}
	free(known);
	free(dtypes);
	return rc;
}

/*
 * Orders the bound nodes topologically (stable: a graph already in order
 * keeps it), folding the constant ones; fills m->nodes.  Fails on a cycle.
 */
static int
plan_nodes(loader *ld, ie_plan_node *bound, int n)
{
	ie_model   *m = ld->m;
	bool	   *ready = calloc(m->n_values ? m->n_values : 1, sizeof(bool));
	bool	   *done = calloc(n ? n : 1, sizeof(bool));
	int			n_done = 0;
	int			rc = -1;

	m->nodes = calloc(n ? n : 1, sizeof(ie_plan_node));
	if (ready == NULL || done == NULL || m->nodes == NULL)
	{
		load_error(ld, "out of memory");
		goto out;
	}
	for (int v = 0; v < m->n_values; v++)
		ready[v] = m->consts[v] != NULL;
	for (int i = 0; i < m->n_inputs; i++)
		ready[m->inputs[i].value] = true;

	while (n_done < n)
	{
		bool		progress = false;

		for (int k = 0; k < n; k++)
		{
			ie_plan_node *pn = &bound[k];
			bool		all_const = true;
			bool		ok = true;

			if (done[k])
				continue;
			for (int i = 0; i < pn->n_inputs; i++)
			{
				int			v = pn->inputs[i];

				if (v < 0)
					continue;
				if (!ready[v])
					ok = false;
				if (m->consts[v] == NULL)
					all_const = false;
			}
			if (!ok)
				continue;
			done[k] = true;
			n_done++;
			progress = true;
			if (all_const && (pn->n_inputs > 0 || strcmp(pn->op_type, "Constant") == 0))
			{
				if (fold_node(ld, pn) != 0)
					goto out;
			}
			else
			{
				m->nodes[m->n_nodes] = *pn;
				pn = &m->nodes[m->n_nodes++];
				memset(&bound[k], 0, sizeof(bound[k]));
			}
			for (int j = 0; j < pn->n_outputs; j++)
				if (pn->outputs[j] >= 0)
					ready[pn->outputs[j]] = true;
			if (pn == &bound[k])
				ie_plan_node_free(pn);
		}
		if (!progress)
		{
			for (int k = 0; k < n; k++)
				if (!done[k])
				{
					load_error(ld, "the graph has a cycle through %s node '%s'",
							   bound[k].op_type, bound[k].name);
					goto out;
				}
		}
	}
	rc = 0;
out:
	free(ready);
	free(done);
	return rc;
}

/* Loads and plans a model from a ModelProto in memory; see engine.h. */
static ie_model *
load_model(const void *bytes, size_t len, const char *name, const ie_load_opts *opts,
		   char *err, size_t errlen)
{
	loader		ld;
	Onnx__ModelProto *mp = NULL;
	const Onnx__GraphProto *g;
	ie_plan_node *bound = NULL;
	int			n_bound = 0;
	char		terr[256];
	int			rc;

	memset(&ld, 0, sizeof(ld));
	ld.name = name;
	ld.err = err;
	ld.errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	ld.m = calloc(1, sizeof(ie_model));
	if (ld.m == NULL || (ld.m->name = strdup(name)) == NULL)
	{
		load_error(&ld, "out of memory");
		goto fail;
	}
	mp = onnx__model_proto__unpack(NULL, len, bytes);
	if (mp == NULL)
	{
		load_error(&ld, "not an ONNX model (the bytes do not parse as a ModelProto)");
		goto fail;
	}
	g = mp->graph;
	if (g == NULL || (g->n_node == 0 && g->n_output == 0))
	{
		load_error(&ld, "not an ONNX model (no graph)");
		goto fail;
	}
	if ((ld.m->opset = read_opset(&ld, mp)) < 0)
		goto fail;

	/* initializers: constant values */
	for (size_t i = 0; i < g->n_initializer; i++)
	{
		const Onnx__TensorProto *tp = g->initializer[i];
		int			v;

		if (tp->name == NULL || map_get(&ld.map, tp->name) >= 0)
		{
			load_error(&ld, "initializer '%s' is unnamed or defined twice",
					   tp->name ? tp->name : "");
			goto fail;
		}
		if ((v = add_value(&ld, tp->name)) < 0)
		{
			load_error(&ld, "out of memory");
			goto fail;
		}
		if ((rc = ie_tensor_from_proto(tp, &ld.m->consts[v], terr, sizeof(terr))) != 0)
		{
			load_error_kind(&ld, (ie_error_kind) -rc, "initializer: %s", terr);
			goto fail;
		}
		ld.m->weight_bytes += ld.m->consts[v]->nbytes;
	}

	/* graph inputs that are not initializers */
	ld.m->inputs = calloc(g->n_input ? g->n_input : 1, sizeof(ie_plan_io));
	if (ld.m->inputs == NULL)
	{
		load_error(&ld, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < g->n_input; i++)
	{
		const Onnx__ValueInfoProto *vi = g->input[i];
		ie_plan_io *io;

		if (vi->name == NULL || vi->name[0] == '\0')
		{
			load_error(&ld, "graph input %zu has no name", i);
			goto fail;
		}
		if (map_get(&ld.map, vi->name) >= 0)
		{
			int			v = map_get(&ld.map, vi->name);

			if (ld.m->consts[v] != NULL)
				continue;		/* an initializer listed as input (IR < 4) */
			load_error(&ld, "graph input '%s' is declared twice", vi->name);
			goto fail;
		}
		io = &ld.m->inputs[ld.m->n_inputs++];
		if ((io->name = strdup(vi->name)) == NULL ||
			(io->value = add_value(&ld, vi->name)) < 0)
		{
			load_error(&ld, "out of memory");
			goto fail;
		}
		if (read_value_info(&ld, vi, io, "graph input") != 0)
			goto fail;
	}

	/* nodes: operators, attributes, outputs */
	bound = calloc(g->n_node ? g->n_node : 1, sizeof(ie_plan_node));
	if (bound == NULL)
	{
		load_error(&ld, "out of memory");
		goto fail;
	}
	for (size_t k = 0; k < g->n_node; k++)
	{
		n_bound++;
		if (bind_node(&ld, g->node[k], (int) k, &bound[k]) != 0)
			goto fail;
	}
	for (size_t k = 0; k < g->n_node; k++)
	{
		const Onnx__NodeProto *np = g->node[k];

		for (size_t i = 0; i < np->n_input; i++)
		{
			const char *in = np->input[i];

			if (in == NULL || in[0] == '\0')
			{
				bound[k].inputs[i] = -1;
				continue;
			}
			bound[k].inputs[i] = map_get(&ld.map, in);
			if (bound[k].inputs[i] < 0)
			{
				load_error(&ld, "%s node '%s': input '%s' is not produced by any node, "
						   "graph input or initializer", bound[k].op_type,
						   bound[k].name, in);
				goto fail;
			}
		}
	}

	/* graph outputs */
	ld.m->outputs = calloc(g->n_output ? g->n_output : 1, sizeof(ie_plan_io));
	if (ld.m->outputs == NULL)
	{
		load_error(&ld, "out of memory");
		goto fail;
	}
	for (size_t j = 0; j < g->n_output; j++)
	{
		const Onnx__ValueInfoProto *vi = g->output[j];
		ie_plan_io *io = &ld.m->outputs[ld.m->n_outputs++];

		if ((io->name = strdup(vi->name ? vi->name : "")) == NULL)
		{
			load_error(&ld, "out of memory");
			goto fail;
		}
		io->value = map_get(&ld.map, io->name);
		if (io->value < 0)
		{
			load_error(&ld, "graph output '%s' is not produced by any node, input "
					   "or initializer", io->name);
			goto fail;
		}
		if (read_value_info(&ld, vi, io, "graph output") != 0)
			goto fail;
	}

	if (plan_input_checks(&ld, bound, n_bound) != 0 ||
		plan_nodes(&ld, bound, n_bound) != 0 ||
		check_known_types(&ld) != 0)
		goto fail;

	/* last use of each value, and which values leave as outputs */
	ld.m->last_use = malloc((ld.m->n_values ? ld.m->n_values : 1) * sizeof(int));
	ld.m->is_output = calloc(ld.m->n_values ? ld.m->n_values : 1, sizeof(bool));
	if (ld.m->last_use == NULL || ld.m->is_output == NULL)
	{
		load_error(&ld, "out of memory");
		goto fail;
	}
	for (int j = 0; j < ld.m->n_outputs; j++)
		ld.m->is_output[ld.m->outputs[j].value] = true;
	/*
	 * IE_FUSION=0 in the environment turns fusion off (for measurements).
	 * A model for a CUDA device is not fused: its epilogues are CPU code,
	 * and the device runs the element-wise nodes as kernels of their own.
	 * The device is the process default when the load starts (engine.h).
	 */
	ld.m->device = ie_get_device();
	ld.m->on_cuda = ld.m->device != IE_DEVICE_CPU;
	/* no options: the process default, FP32 or TF32 (ie_set_tf32) */
	ld.m->precision = opts != NULL ? opts->precision :
		ie_get_tf32() ? IE_PRECISION_TF32 : IE_PRECISION_FP32;
	if (ie_precision_name(ld.m->precision) == NULL)
	{
		load_error(&ld, "unknown precision %d", (int) ld.m->precision);
		goto fail;
	}
	if (!ld.m->on_cuda &&
		(getenv("IE_FUSION") == NULL || strcmp(getenv("IE_FUSION"), "0") != 0) &&
		ie_fuse_plan(ld.m, err, errlen) != 0)
	{
		ld.kind = IE_ERR_NO_MEMORY;	/* its only failure */
		goto fail;
	}
	for (int v = 0; v < ld.m->n_values; v++)
		ld.m->last_use[v] = -1;
	for (int k = 0; k < ld.m->n_nodes; k++)
		for (int i = 0; i < ld.m->nodes[k].n_inputs; i++)
			if (ld.m->nodes[k].inputs[i] >= 0)
				ld.m->last_use[ld.m->nodes[k].inputs[i]] = k;
	/* on a CUDA device: weights uploaded once, here */
	if (ld.m->on_cuda && (rc = ie_cuda_model_prepare(ld.m, err, errlen)) != 0)
	{
		/* a valid model the device cannot take, or its memory is short */
		ld.kind = rc == -IE_ERR_NO_MEMORY ? IE_ERR_NO_MEMORY : IE_ERR_NOT_SUPPORTED;
		goto fail;
	}

	for (int k = 0; k < n_bound; k++)
		ie_plan_node_free(&bound[k]);
	free(bound);
	free(ld.map.keys);
	free(ld.map.vals);
	onnx__model_proto__free_unpacked(mp, NULL);
	if (opts != NULL && opts->error != NULL)
		*opts->error = IE_ERR_NONE;
	return ld.m;

fail:
	if (opts != NULL && opts->error != NULL)
		*opts->error = ld.kind != IE_ERR_NONE ? ld.kind : IE_ERR_INVALID;
	for (int k = 0; k < n_bound; k++)
		ie_plan_node_free(&bound[k]);
	free(bound);
	free(ld.map.keys);
	free(ld.map.vals);
	if (mp != NULL)
		onnx__model_proto__free_unpacked(mp, NULL);
	ie_model_destroy(&ld.m);
	return NULL;
}

/* Loads a model from bytes in memory; the model is called "<memory>". */
ie_model *
ie_model_load_bytes(const void *bytes, size_t len, char *err, size_t errlen)
{
	return load_model(bytes, len, "<memory>", NULL, err, errlen);
}

/* ie_model_load_bytes with load options (engine.h), named opts->name. */
ie_model *
ie_model_load_bytes_opts(const void *bytes, size_t len, const ie_load_opts *opts,
						 char *err, size_t errlen)
{
	return load_model(bytes, len, opts != NULL && opts->name != NULL ? opts->name : "<memory>",
					  opts, err, errlen);
}

/* Loads a model file; messages name the file (without its folder). */
ie_model *
ie_model_load_file(const char *path, char *err, size_t errlen)
{
	return ie_model_load_file_opts(path, NULL, err, errlen);
}

/* Sets the kind of a load that failed before parsing; returns NULL. */
static ie_model *
file_failed(const ie_load_opts *opts, ie_error_kind kind)
{
	if (opts != NULL && opts->error != NULL)
		*opts->error = kind;
	return NULL;
}

/* ie_model_load_file with load options (engine.h). */
ie_model *
ie_model_load_file_opts(const char *path, const ie_load_opts *opts, char *err, size_t errlen)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	FILE	   *f = fopen(path, "rb");
	void	   *buf = NULL;
	long		size;
	ie_model   *m;

	if (f == NULL)
	{
		snprintf(err, errlen, "model '%s': cannot open '%s': %m", base, path);
		return file_failed(opts, IE_ERR_INVALID);
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		snprintf(err, errlen, "model '%s': cannot read '%s': %m", base, path);
		fclose(f);
		return file_failed(opts, IE_ERR_INVALID);
	}
	if ((size_t) size > IE_MODEL_MAX_BYTES)
	{
		snprintf(err, errlen, "model '%s': file is too large (%ld bytes, more than the engine's limit)",
				 base, size);
		fclose(f);
		return file_failed(opts, IE_ERR_NOT_SUPPORTED);
	}
	buf = malloc(size > 0 ? (size_t) size : 1);
	if (buf == NULL)
	{
		snprintf(err, errlen, "model '%s': out of memory for %ld bytes", base, size);
		fclose(f);
		return file_failed(opts, IE_ERR_NO_MEMORY);
	}
	if (fread(buf, 1, (size_t) size, f) != (size_t) size)
	{
		snprintf(err, errlen, "model '%s': cannot read '%s'", base, path);
		free(buf);
		fclose(f);
		return file_failed(opts, IE_ERR_INVALID);
	}
	fclose(f);
	m = load_model(buf, (size_t) size, base, opts, err, errlen);
	free(buf);
	return m;
}

/* Number of graph inputs, initializers excluded. */
int
ie_model_n_inputs(const ie_model *model)
{
	return model->n_inputs;
}

/* Number of graph outputs. */
int
ie_model_n_outputs(const ie_model *model)
{
	return model->n_outputs;
}

/* Name of graph input i, or NULL when i is out of range. */
const char *
ie_model_input_name(const ie_model *model, int i)
{
	return (i >= 0 && i < model->n_inputs) ? model->inputs[i].name : NULL;
}

/* Name of graph output i, or NULL when i is out of range. */
const char *
ie_model_output_name(const ie_model *model, int i)
{
	return (i >= 0 && i < model->n_outputs) ? model->outputs[i].name : NULL;
}

/* The record of input i (output 0) or output i (else); NULL if none. */
static const ie_plan_io *
model_io(const ie_model *model, int output, int i)
{
	if (output)
		return (i >= 0 && i < model->n_outputs) ? &model->outputs[i] : NULL;
	return (i >= 0 && i < model->n_inputs) ? &model->inputs[i] : NULL;
}

/* io's declared type and shape; see ie_model_input_shape. */
static int
io_shape(const ie_plan_io *io, ie_dtype *dtype, int64_t dims[IE_MAX_DIMS])
{
	if (io == NULL)
		return -1;
	if (dtype != NULL)
		*dtype = io->dtype;
	if (io->rank < 0)
		return 0;
	if (dims != NULL)
		for (int d = 0; d < io->rank; d++)
			dims[d] = io->dims[d];
	return io->rank;
}

/*
 * Declared type and shape of input i (dynamic dims are -1).  An input
 * declared without a shape reports rank 0.
 */
int
ie_model_input_shape(const ie_model *model, int i, ie_dtype *dtype,
					 int64_t dims[IE_MAX_DIMS])
{
	return io_shape(model_io(model, 0, i), dtype, dims);
}

/* Declared type and shape of output i, as ie_model_input_shape. */
int
ie_model_output_shape(const ie_model *model, int i, ie_dtype *dtype,
					  int64_t dims[IE_MAX_DIMS])
{
	return io_shape(model_io(model, 1, i), dtype, dims);
}

/* Name of a dynamic dimension (ONNX dim_param); see engine.h. */
const char *
ie_model_dim_param(const ie_model *model, int output, int i, int d)
{
	const ie_plan_io *io = model_io(model, output, i);

	if (io == NULL || d < 0 || d >= io->rank || d >= IE_MAX_DIMS)
		return NULL;
	return io->dim_param[d];
}

/* Bytes held as constants: initializers, Constant outputs, folded nodes. */
size_t
ie_model_weight_bytes(const ie_model *model)
{
	return model->weight_bytes;
}
