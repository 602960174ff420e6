/*
 * op_registry.c
 *	  Operator look-up by op_type, and the helpers every operator shares:
 *	  attribute access, error formatting, broadcasting.
 *
 * The tables are constant; nothing here keeps state, so it is safe from any
 * thread.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/engine/op.h"
#include "worker/engine/op_schemas.h"

static const ie_op_def *const op_tables[] = {
	ie_ops_elementwise,
	ie_ops_shape,
	ie_ops_conv,
	ie_ops_pool,
	ie_ops_norm,
	ie_ops_matmul,
	ie_ops_resize,
	ie_ops_reduce,
	ie_ops_gather,
	ie_ops_einsum,
	ie_ops_attention,
	ie_ops_rotary,
	ie_ops_misc,
	ie_ops_vision,
	ie_ops_rnn,
	ie_ops_quant,
};

static const ie_op_def *const check_tables[] = {
	ie_op_checks_elementwise,
	ie_op_checks_conv,
	ie_op_checks_gather,
	ie_op_checks_einsum,
	ie_op_checks_pool,
	ie_op_checks_norm,
	ie_op_checks_resize,
	ie_op_checks_shape,
	ie_op_checks_attention,
	ie_op_checks_rotary,
	ie_op_checks_misc,
	ie_op_checks_vision,
	ie_op_checks_rnn,
	ie_op_checks_quant,
};

/* The function of op_type in tables[0..n), or NULL. */
static ie_op_fn
table_lookup(const ie_op_def *const *tables, size_t n, const char *op_type)
{
	for (size_t t = 0; t < n; t++)
		for (const ie_op_def *d = tables[t]; d->op_type != NULL; d++)
			if (strcmp(d->op_type, op_type) == 0)
				return d->fn;
	return NULL;
}

/* The operator implementing op_type (default ONNX domain), or NULL. */
ie_op_fn
ie_op_lookup(const char *op_type)
{
	return table_lookup(op_tables, sizeof(op_tables) / sizeof(op_tables[0]), op_type);
}

ie_op_fn
ie_op_check_lookup(const char *op_type)
{
	return table_lookup(check_tables, sizeof(check_tables) / sizeof(check_tables[0]),
						op_type);
}

/*
 * Operators whose required inputs are not exactly one: the least number of
 * inputs every opset version the engine accepts requires (ONNX Operators.md;
 * for an operator whose inputs were attributes in early opsets, such as
 * Slice-1 or Unsqueeze-1, the earlier count, and the operator checks the
 * later inputs itself).
 */
static const struct
{
	const char *op_type;
	int			min_inputs;
}			op_min_inputs[] = {
	{"Constant", 0},
	{"Add", 2}, {"Sub", 2}, {"Mul", 2}, {"Div", 2}, {"Pow", 2},
	{"And", 2}, {"Or", 2}, {"Xor", 2},
	{"BitwiseAnd", 2}, {"BitwiseOr", 2}, {"BitwiseXor", 2}, {"BitShift", 2},
	{"Equal", 2}, {"Less", 2}, {"LessOrEqual", 2}, {"Greater", 2},
	{"GreaterOrEqual", 2},
	{"MatMul", 2}, {"Gemm", 2}, {"Conv", 2}, {"ConvTranspose", 2},
	{"Expand", 2}, {"Reshape", 2}, {"Tile", 2},
	{"Gather", 2}, {"GatherElements", 2}, {"GatherND", 2}, {"ScatterND", 3},
	{"Mod", 2}, {"CastLike", 2},
	{"LayerNormalization", 2}, {"RMSNormalization", 2},
	{"InstanceNormalization", 3}, {"GroupNormalization", 3},
	{"NonMaxSuppression", 2}, {"GridSample", 2}, {"RoiAlign", 3}, {"AffineGrid", 2},
	{"RotaryEmbedding", 3},
	{"Where", 3}, {"Range", 3}, {"PRelu", 2}, {"Attention", 3},
	{"BatchNormalization", 5},
	{"RNN", 3}, {"GRU", 3}, {"LSTM", 3},
	{"CumSum", 2}, {"CumProd", 2}, {"ScatterElements", 3}, {"Scatter", 3},
	{"OneHot", 3}, {"Compress", 2}, {"ReverseSequence", 2},
	{"QuantizeLinear", 2}, {"DequantizeLinear", 2}, {"MatMulInteger", 2},
	{"ConvInteger", 2}, {"QLinearMatMul", 8}, {"QLinearConv", 8},
	{NULL, 0}
};

/*
 * Inputs a node of op_type must have, none of them omitted: operators read
 * their required inputs without checking that the node names them, so the
 * loader refuses a node with fewer.  1 for an operator not listed above.
 */
int
ie_op_min_inputs(const char *op_type)
{
	for (int i = 0; op_min_inputs[i].op_type != NULL; i++)
		if (strcmp(op_min_inputs[i].op_type, op_type) == 0)
			return op_min_inputs[i].min_inputs;
	return 1;
}

/*
 * onnx.proto's AttributeProto.AttributeType values (0 UNDEFINED to 14
 * TYPE_PROTOS): their names, and the letters op_schemas.h writes them as.
 */
static const char attr_letters[] = "?fistgFISTGpPyY";
static const char *const attr_names[] = {
	"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
	"STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS",
	"TYPE_PROTO", "TYPE_PROTOS"
};

/* The letter of attribute type t, '?' for UNDEFINED or another value. */
static char
attr_type_letter(ie_attr_type t)
{
	return (int) t >= 0 && (size_t) t < sizeof(attr_letters) - 1 ? attr_letters[t] : '?';
}

/* The ONNX name of the attribute type op_schemas.h writes as letter. */
static const char *
attr_type_name(char letter)
{
	const char *p = strchr(attr_letters, letter);

	return p != NULL && *p != '\0' ? attr_names[p - attr_letters] : "UNDEFINED";
}

/*
 * The op_schemas[] entry of op_type's version for opset: the newest version
 * whose since_version is at most opset, or, for an operator newer than
 * opset, its first version (ie_op_check_attrs allows that for
 * LayerNormalization alone).  -1 when op_schemas.h lacks op_type.
 */
static int
schema_version(const char *op_type, int opset)
{
	int			found = -1;

	for (int i = 0; op_schemas[i].op_type != NULL; i++)
		if (strcmp(op_schemas[i].op_type, op_type) == 0 &&
			(op_schemas[i].since <= opset || found < 0))
		{
			found = i;
			if (op_schemas[i].since > opset)
				break;
		}
	return found;
}

/*
 * The schema attributes of op_type's version for opset (schema_version),
 * its since_version into *since; NULL when op_schemas.h lacks op_type.
 */
static const char *
schema_attrs(const char *op_type, int opset, int *since)
{
	int			i = schema_version(op_type, opset);

	if (i < 0)
		return NULL;
	*since = op_schemas[i].since;
	return op_schemas[i].attrs;
}

/*
 * Finds attribute name among the "name:T[!]" words of attrs: returns its
 * word, or NULL (always for a name holding a space or a colon).
 */
static const char *
schema_find(const char *attrs, const char *name)
{
	size_t		len = strlen(name);

	if (strpbrk(name, " :") != NULL)
		return NULL;
	for (const char *w = attrs; *w != '\0';)
	{
		if (strncmp(w, name, len) == 0 && w[len] == ':')
			return w;
		w += strcspn(w, " ");
		w += strspn(w, " ");
	}
	return NULL;
}

/*
 * Operators the engine runs in models of opsets older than their first
 * version: ONNX Runtime registers LayerNormalization (opset 17) in the
 * default domain from version 1, and its transformer optimizer writes it
 * into opset 11 to 16 models.  Any other operator newer than the model's
 * opset makes the model invalid, as for ONNX's checker.
 */
static const char *const runs_before_its_opset[] = {"LayerNormalization", NULL};

static bool
may_run_before_its_opset(const char *op_type)
{
	for (int i = 0; runs_before_its_opset[i] != NULL; i++)
		if (strcmp(runs_before_its_opset[i], op_type) == 0)
			return true;
	return false;
}

/* Sets *kind and formats err; returns -1. */
static int
check_error(ie_error_kind *kind, ie_error_kind k, char *err, size_t errlen,
			const char *fmt,...)
__attribute__((format(printf, 5, 6)));

static int
check_error(ie_error_kind *kind, ie_error_kind k, char *err, size_t errlen,
			const char *fmt,...)
{
	va_list		ap;

	*kind = k;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Checks a node's attributes against the ONNX schema of op_type's version
 * for opset (op_schemas.h, generated from onnx.defs; ONNX IR spec,
 * "Attributes"), as ONNX's checker and ONNX Runtime do: every attribute
 * must be one that version defines, of the type it defines, and every
 * attribute it requires must be there (IE_ERR_INVALID); an operator newer
 * than opset is invalid but for LayerNormalization (checked against its
 * first version).  An attribute the schema defines with a type the engine
 * does not hold (strings, graphs, ...) is IE_ERR_NOT_SUPPORTED.  The
 * loader leaves out attributes named "__..." and refuses duplicates before
 * this.  Returns 0, or -1 with the kind in *kind and "attribute ..." or
 * "operator ..." in err.
 */
int
ie_op_check_attrs(const char *op_type, int opset, int n_attrs,
				  const ie_attr *attrs, ie_error_kind *kind, char *err,
				  size_t errlen)
{
	int			since = 0;
	const char *schema = schema_attrs(op_type, opset, &since);

	if (schema == NULL)
		return check_error(kind, IE_ERR_INVALID, err, errlen,
						   "operator %s has no schema in op_schemas.h (regenerate it with tools/gen_op_schemas.py)",
						   op_type);
	if (since > opset && !may_run_before_its_opset(op_type))
		return check_error(kind, IE_ERR_INVALID, err, errlen,
						   "operator %s does not exist in opset %d (it came in opset %d)",
						   op_type, opset, since);
	for (int i = 0; i < n_attrs; i++)
	{
		const char *w = schema_find(schema, attrs[i].name);
		size_t		len = strlen(attrs[i].name);

		if (w == NULL)
			return check_error(kind, IE_ERR_INVALID, err, errlen,
							   "attribute '%s' is not an attribute of %s-%d (opset %d)",
							   attrs[i].name, op_type, since, opset);
		if (w[len + 1] != attr_type_letter(attrs[i].type))
			return check_error(kind, IE_ERR_INVALID, err, errlen,
							   "attribute '%s' must have type %s in %s-%d",
							   attrs[i].name, attr_type_name(w[len + 1]), op_type, since);
		if (strchr("fisFISt", w[len + 1]) == NULL)
			return check_error(kind, IE_ERR_NOT_SUPPORTED, err, errlen,
							   "attribute '%s' has type %s, which the engine does not support",
							   attrs[i].name, attr_type_name(w[len + 1]));
	}
	for (const char *w = schema; *w != '\0';)
	{
		size_t		n = strcspn(w, " ");

		if (w[n - 1] == '!')
		{
			size_t		name_len = strcspn(w, ":");
			bool		found = false;

			for (int i = 0; i < n_attrs && !found; i++)
				found = strlen(attrs[i].name) == name_len &&
					strncmp(attrs[i].name, w, name_len) == 0;
			if (!found)
				return check_error(kind, IE_ERR_INVALID, err, errlen,
								   "required attribute '%.*s' of %s-%d is missing",
								   (int) name_len, w, op_type, since);
		}
		w += n;
		w += strspn(w, " ");
	}
	return 0;
}

/*
 * The input checks of a node (op.h): input i takes formal input i, or the
 * last one when that is variadic.  Inputs of one constraint must share one
 * type, and so must a homogeneous variadic input's values (ONNX IR spec,
 * "Type constraints"; OpSchema::FormalParameter::is_homogeneous), so each
 * input points at the first present input before it of the same group.
 */
int
ie_op_input_checks(const char *op_type, int opset, int n_inputs,
				   const int *inputs, ie_input_check *checks, int *since,
				   char *err, size_t errlen)
{
	int			v = schema_version(op_type, opset);
	const ie_formal_input *formal;
	int			n_formal;
	bool		variadic;

	if (v < 0)
	{
		snprintf(err, errlen, "operator %s has no schema in op_schemas.h (regenerate it with tools/gen_op_schemas.py)",
				 op_type);
		return -1;
	}
	*since = op_schemas[v].since;
	formal = &op_schema_inputs[op_schemas[v].first_input];
	n_formal = op_schemas[v].n_inputs;
	variadic = n_formal > 0 && (formal[n_formal - 1].flags & IE_IN_VARIADIC) != 0;
	if (n_inputs > n_formal && !variadic)
	{
		snprintf(err, errlen, "it has %d inputs, and %s-%d takes at most %d",
				 n_inputs, op_type, *since, n_formal);
		return -1;
	}
	for (int i = 0; i < n_inputs; i++)
	{
		const ie_formal_input *f = &formal[i < n_formal ? i : n_formal - 1];

		/* a required input left out ("") makes the node invalid, as for ORT */
		if (inputs[i] < 0 && (f->flags & (IE_IN_OPTIONAL | IE_IN_VARIADIC)) == 0)
		{
			snprintf(err, errlen, "input %d (%s) of %s-%d is required, but the node leaves it out (\"\")",
					 i, f->name, op_type, *since);
			return -1;
		}
		checks[i].types = f->types;
		checks[i].formal = f;
		checks[i].same_as = -1;
		if (f->constraint == NULL)
			continue;
		for (int j = 0; j < i && checks[i].same_as < 0; j++)
		{
			const ie_formal_input *g = checks[j].formal;
			bool		same = g->group == f->group &&
				(g != f || (f->flags & IE_IN_HETEROGENEOUS) == 0);

			if (inputs[j] >= 0 && same)
				checks[i].same_as = j;
		}
	}
	return 0;
}

/*
 * The formal output a node's output i takes among outputs (op_schemas.h's
 * "name[?*] ..." words): the i-th, or the last when that is variadic ('*');
 * its name's length into *len and its flag ('?', '*' or '\0' for a single
 * output) into *flag.  NULL past the last.
 */
static const char *
formal_output(const char *outputs, int i, int *len, char *flag)
{
	const char *last = NULL;
	bool		found = false;

	for (const char *w = outputs; *w != '\0' && !found; i--)
	{
		last = w;
		*len = (int) strcspn(w, " ");
		found = i == 0;
		w += *len;
		w += strspn(w, " ");
	}
	if (last == NULL || (!found && last[*len - 1] != '*'))
		return NULL;
	*flag = last[*len - 1] == '?' || last[*len - 1] == '*' ? last[*len - 1] : '\0';
	if (*flag != '\0')
		(*len)--;
	return last;
}

/*
 * The names of the first n formal outputs among outputs, comma-separated,
 * into buf (len bytes, truncated); returns buf.
 */
static const char *
output_names(const char *outputs, int n, char *buf, size_t len)
{
	size_t		used = 0;

	if (len > 0)
		buf[0] = '\0';
	for (int i = 0; i < n && used < len; i++)
	{
		int			nlen;
		char		flag;
		const char *w = formal_output(outputs, i, &nlen, &flag);

		if (w == NULL)
			break;
		used += snprintf(buf + used, len - used, "%s%.*s", i > 0 ? ", " : "", nlen, w);
	}
	return buf;
}

/*
 * The output counts of mask (bit n for n outputs) as words, "1 or 5", into
 * buf (len bytes, truncated); returns buf.
 */
static const char *
count_words(unsigned mask, char *buf, size_t len)
{
	size_t		used = 0;
	int			last = 31;

	if (len > 0)
		buf[0] = '\0';
	while (last > 0 && (mask & (1u << last)) == 0)
		last--;
	for (int n = 0; n < 32 && used < len; n++)
		if ((mask & (1u << n)) != 0)
			used += snprintf(buf + used, len - used, "%s%d",
							 used == 0 ? "" : n == last ? " or " : ", ", n);
	return buf;
}

/*
 * Checks the outputs of a node (op.h) against its version's formal outputs,
 * as OpSchema::Verify does: their number within the schema's min_output
 * and max_output, and one of the counts it allows when it allows only some
 * (BatchNormalization: 1 or 5, 1 or 3 from version 14), and none that is
 * not optional left out ("").
 */
int
ie_op_check_outputs(const char *op_type, int opset, int n_outputs,
					const char *const *outputs, char *err, size_t errlen)
{
	int			v = schema_version(op_type, opset);
	char		names[256];
	unsigned	counts;

	if (v < 0)
	{
		snprintf(err, errlen, "operator %s has no schema in op_schemas.h (regenerate it with tools/gen_op_schemas.py)",
				 op_type);
		return -1;
	}
	if (op_schemas[v].max_outputs >= 0 && n_outputs > op_schemas[v].max_outputs)
	{
		snprintf(err, errlen, "it has %d outputs, and %s-%d (opset %d) has at most %d (%s)",
				 n_outputs, op_type, op_schemas[v].since, opset,
				 op_schemas[v].max_outputs,
				 output_names(op_schemas[v].outputs, op_schemas[v].max_outputs,
							  names, sizeof(names)));
		return -1;
	}
	if (n_outputs < op_schemas[v].min_outputs)
	{
		snprintf(err, errlen, "it has %d output%s, and %s-%d (opset %d) has at least %d (%s)",
				 n_outputs, n_outputs == 1 ? "" : "s", op_type, op_schemas[v].since,
				 opset, op_schemas[v].min_outputs,
				 output_names(op_schemas[v].outputs, op_schemas[v].min_outputs,
							  names, sizeof(names)));
		return -1;
	}
	counts = op_schemas[v].output_counts;
	if (counts != 0 && (n_outputs >= 32 || (counts & (1u << n_outputs)) == 0))
	{
		char		words[64];

		snprintf(err, errlen, "it has %d output%s, and %s-%d (opset %d) has %s (%s)",
				 n_outputs, n_outputs == 1 ? "" : "s", op_type, op_schemas[v].since,
				 opset, count_words(counts, words, sizeof(words)),
				 output_names(op_schemas[v].outputs, op_schemas[v].max_outputs,
							  names, sizeof(names)));
		return -1;
	}
	for (int i = 0; i < n_outputs; i++)
	{
		int			len;
		char		flag;
		const char *w;

		if (outputs[i] != NULL && outputs[i][0] != '\0')
			continue;
		w = formal_output(op_schemas[v].outputs, i, &len, &flag);
		if (w != NULL && flag == '\0')
		{
			snprintf(err, errlen, "output %d (%.*s) of %s-%d is required, but the node leaves it out (\"\")",
					 i, len, w, op_type, op_schemas[v].since);
			return -1;
		}
	}
	return 0;
}

/* onnx.TensorProto.DataType's names, by value (onnx.proto, "DataType"). */
static const char *const type_names[] = {
	"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
	"string", "bool", "float16", "double", "uint32", "uint64", "complex64",
	"complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
	"float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2",
	"int2", "float6e2m3", "float6e3m2"
};

const char *
ie_type_name(int t)
{
	return t >= 0 && (size_t) t < sizeof(type_names) / sizeof(type_names[0]) ?
		type_names[t] : "unknown";
}

const char *
ie_type_list(uint32_t mask, char *buf, size_t len)
{
	size_t		n = 0;

	if (len > 0)
		buf[0] = '\0';
	for (int t = 0; t < 32 && n < len; t++)
		if (mask & ((uint32_t) 1 << t))
			n += snprintf(buf + n, len - n, "%s%s", n > 0 ? ", " : "", ie_type_name(t));
	return buf;
}

ie_error_kind
ie_error_kind_of(const char *fmt)
{
	if (strstr(fmt, "unsupported") != NULL || strstr(fmt, "not supported") != NULL ||
		strstr(fmt, "does not support") != NULL || strstr(fmt, "engine's limit") != NULL)
		return IE_ERR_NOT_SUPPORTED;
	if (strstr(fmt, "out of memory") != NULL)
		return IE_ERR_NO_MEMORY;
	return IE_ERR_INVALID;
}

int
ie_attr_choice(ie_node_ctx *ctx, const char *name, const char *dflt,
			   const char *const *choices, int *out)
{
	const char *v = ie_attr_string(ctx, name, dflt);
	char		list[128] = "";

	for (int i = 0; choices[i] != NULL; i++)
	{
		if (strcmp(v, choices[i]) == 0)
		{
			*out = i;
			return 0;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i > 0 ? ", " : "", choices[i]);
	}
	return ie_op_error(ctx, "%s \"%s\" is not supported (%s)", name, v, list);
}

/* The node's attribute called name, or NULL. */
const ie_attr *
ie_attr_find(const ie_node_ctx *ctx, const char *name)
{
	for (int i = 0; i < ctx->n_attrs; i++)
		if (strcmp(ctx->attrs[i].name, name) == 0)
			return &ctx->attrs[i];
	return NULL;
}

int64_t
ie_attr_int(const ie_node_ctx *ctx, const char *name, int64_t dflt)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	return (a != NULL && a->type == IE_ATTR_INT) ? a->i : dflt;
}

float
ie_attr_float(const ie_node_ctx *ctx, const char *name, float dflt)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	return (a != NULL && a->type == IE_ATTR_FLOAT) ? a->f : dflt;
}

const char *
ie_attr_string(const ie_node_ctx *ctx, const char *name, const char *dflt)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	return (a != NULL && a->type == IE_ATTR_STRING) ? a->s : dflt;
}

int
ie_attr_ints(const ie_node_ctx *ctx, const char *name, const int64_t **vals)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	if (a == NULL || a->type != IE_ATTR_INTS)
		return -1;
	*vals = a->ints;
	return a->n_ints;
}

int
ie_attr_floats(const ie_node_ctx *ctx, const char *name, const float **vals)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	if (a == NULL || a->type != IE_ATTR_FLOATS)
		return -1;
	*vals = a->floats;
	return a->n_floats;
}

int
ie_attr_strings(const ie_node_ctx *ctx, const char *name, const char *const **vals)
{
	const ie_attr *a = ie_attr_find(ctx, name);

	if (a == NULL || a->type != IE_ATTR_STRINGS)
		return -1;
	*vals = a->strings;
	return a->n_strings;
}

/* "<op_type> node '<name>': <message>" into ctx->err; returns -1. */
/*
 * When an "out of memory" message (msg, room bytes, the part after the
 * node's name) follows a tensor refused for its size: the kind becomes
 * IE_ERR_LIMIT, "out of memory" reads "over the tensor limit" and the
 * refusal is appended ("...: a float tensor of shape [..] is N bytes, more
 * than the M bytes a tensor may take").
 */
static void
limit_error(ie_node_ctx *ctx, char *msg, size_t room)
{
	static const char oom[] = "out of memory";
	char		why[384];
	char		rest[512];
	char	   *at = strstr(msg, oom);

	if (at == NULL || !ie_tensor_take_refusal(why, sizeof(why)))
		return;
	ctx->err_kind = IE_ERR_LIMIT;
	snprintf(rest, sizeof(rest), "%s", at + strlen(oom));
	snprintf(at, room - (size_t) (at - msg), "over the tensor limit%s: %s", rest, why);
}

int
ie_op_error(ie_node_ctx *ctx, const char *fmt,...)
{
	va_list		ap;
	int			n;

	ctx->err_kind = ie_error_kind_of(fmt);
	n = snprintf(ctx->err, ctx->errlen, "%s node '%s': ", ctx->op_type,
				 ctx->node_name ? ctx->node_name : "");
	if (n < 0 || (size_t) n >= ctx->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ctx->err + n, ctx->errlen - n, fmt, ap);
	va_end(ap);
	if (ctx->err_kind == IE_ERR_NO_MEMORY)
		limit_error(ctx, ctx->err + n, ctx->errlen - n);
	return -1;
}

/* Output shape of broadcasting a with b; its rank, or -1 if incompatible. */
int
ie_broadcast_shape(const ie_tensor *a, const ie_tensor *b,
				   int64_t out_dims[IE_MAX_DIMS])
{
	int			nd = a->ndim > b->ndim ? a->ndim : b->ndim;

	for (int i = 0; i < nd; i++)
	{
		int			ia = i - (nd - a->ndim);
		int			ib = i - (nd - b->ndim);
		int64_t		da = ia >= 0 ? a->dims[ia] : 1;
		int64_t		db = ib >= 0 ? b->dims[ib] : 1;

		if (da == db || db == 1)
			out_dims[i] = da;
		else if (da == 1)
			out_dims[i] = db;
		else
			return -1;
	}
	return nd;
}

/* Element idx of an int32 or int64 tensor as int64; -1 on another type. */
int
ie_tensor_get_i64(const ie_tensor *t, int64_t idx, int64_t *out)
{
	if (idx < 0 || idx >= ie_tensor_numel(t))
		return -1;
	if (t->dtype == IE_INT64)
		*out = ((const int64_t *) t->data)[idx];
	else if (t->dtype == IE_INT32)
		*out = ((const int32_t *) t->data)[idx];
	else
		return -1;
	return 0;
}

/*
 * Formats dims as "[d0, d1, ...]" into buf (len bytes, truncated) for
 * messages; returns buf.  Declared in op.h.
 */
const char *
ie_shape_str(char *buf, size_t len, int ndim, const int64_t *dims)
{
	size_t		n = snprintf(buf, len, "[");

	for (int d = 0; d < ndim && n < len; d++)
		n += snprintf(buf + n, len - n, d ? ", %lld" : "%lld", (long long) dims[d]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}
