#!/usr/bin/env python3
"""gen_op_schemas.py [--check] > worker/engine/op_schemas.h

Generates the schemas of the operators the engine implements from the
`onnx` package's operator schemas (onnx.defs; the version pinned in
tools/requirements.txt): for each operator registered in worker/engine/ops_*.c
(its `{"OpType", op_fn}` table entries) and each version of it up to the
newest opset the engine accepts (IE_OPSET_MAX in worker/engine/op.h), the
attributes that version defines, their types and which are required, and its
formal inputs: for each, the element types its type constraint allows (a
bitmask of TensorProto data types), whether it is optional or variadic, and
which earlier input shares its constraint; and its formal outputs: their
names, which are optional or variadic, the least and most outputs a node of
that version may have (the schema's min_output and max_output), and the
counts between those it allows when it allows only some (BatchNormalization's
1 or 5 outputs, 1 or 3 from version 14: OpSchema::NumOutputs of a set).

The loader (op_registry.c, ie_op_check_attrs) refuses a node whose attribute
its version does not define, has another type, or that lacks a required one,
as ONNX's checker and ONNX Runtime do; without the table, an operator reading
an attribute of the wrong type would take its default.  The loader and the
executor (ie_op_input_checks, ie_op_check_input_types) refuse an input whose
element type its constraint does not allow, or that differs from another
input of the same constraint, as ONNX Runtime's type inference does.  The
loader (ie_op_check_outputs) refuses a node with more outputs than its
version has, fewer than it requires, or that leaves out ("") an output that
is not optional, as ONNX's checker and ONNX Runtime do (OpSchema::Verify).

--check exits 1 when the committed header differs from what this prints
(`make check-onnx` runs it).
"""
import glob
import os
import re
import sys

import onnx
import onnx.checker
import onnx.defs
import onnx.helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HEADER = os.path.join(ROOT, "worker", "engine", "op_schemas.h")

# TensorProto data type value -> its name in tensor(...), for comments
DTYPE_NAMES = {v: n.lower() for n, v in onnx.TensorProto.DataType.items() if v > 0}

# onnx.defs.OpSchema.AttrType -> the letter the header uses
TYPE_LETTER = {
    "FLOAT": "f", "INT": "i", "STRING": "s", "TENSOR": "t", "GRAPH": "g",
    "FLOATS": "F", "INTS": "I", "STRINGS": "S", "TENSORS": "T", "GRAPHS": "G",
    "SPARSE_TENSOR": "p", "SPARSE_TENSORS": "P", "TYPE_PROTO": "y",
    "TYPE_PROTOS": "Y",
}


def registered_ops():
    ops = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "worker", "engine", "ops_*.c"))):
        with open(path) as f:
            ops.update(re.findall(r'^\s*{"([A-Za-z][A-Za-z0-9]*)",\s*op_\w+\}', f.read(), re.M))
    return sorted(ops)


def opset_max():
    with open(os.path.join(ROOT, "worker", "engine", "op.h")) as f:
        return int(re.search(r"#define IE_OPSET_MAX (\d+)", f.read()).group(1))


def versions(op, top):
    """The schemas of op with since_version <= top, oldest first."""
    out = []
    v = top
    while v >= 1:
        try:
            s = onnx.defs.get_schema(op, v, "")
        except onnx.defs.SchemaError:
            break
        out.append(s)
        v = s.since_version - 1
    return list(reversed(out))


def attrs_string(schema):
    words = []
    for name in sorted(schema.attributes):
        a = schema.attributes[name]
        words.append("%s:%s%s" % (name, TYPE_LETTER[a.type.name],
                                  "!" if a.required else ""))
    return " ".join(words)


def type_mask(formal):
    """The TensorProto data types of formal's tensor(...) types as a bitmask
    (sequences and optionals, which the engine does not hold, left out)."""
    mask = 0
    for t in formal.types:
        m = re.fullmatch(r"tensor\((\w+)\)", t)
        if m is None:
            continue
        value = onnx.TensorProto.DataType.Value(m.group(1).upper())
        if value >= 32:
            sys.exit("gen_op_schemas: type %s does not fit a 32-bit mask" % t)
        mask |= 1 << value
    return mask


def inputs_lines(schema):
    """The op_schema_inputs[] lines of schema's formal inputs."""
    constraints = {c.type_param_str for c in schema.type_constraints}
    lines = []
    first = {}
    for k, f in enumerate(schema.inputs):
        constraint = f.type_str if f.type_str in constraints else None
        group = first.setdefault(f.type_str, k) if constraint else k
        flags = []
        if f.option == onnx.defs.OpSchema.FormalParameterOption.Optional:
            flags.append("IE_IN_OPTIONAL")
        elif f.option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            flags.append("IE_IN_VARIADIC")
            if not f.is_homogeneous:
                flags.append("IE_IN_HETEROGENEOUS")
        mask = type_mask(f)
        names = [n for v, n in sorted(DTYPE_NAMES.items()) if mask & (1 << v)]
        lines.append('\t{"%s", %s, 0x%08x, %s, %d},\t/* %s */'
                     % (f.name, '"%s"' % constraint if constraint else "NULL", mask,
                        " | ".join(flags) or "0", group, " ".join(names)))
    return lines


def outputs_string(schema):
    """schema's formal outputs as words: the name, "?" after an optional one,
    "*" after a variadic one (the last)."""
    option = onnx.defs.OpSchema.FormalParameterOption
    words = []
    for f in schema.outputs:
        if " " in f.name or f.name.endswith(("?", "*")):
            sys.exit("gen_op_schemas: output name %r of %s-%d does not fit the header"
                     % (f.name, schema.name, schema.since_version))
        words.append(f.name + {option.Single: "", option.Optional: "?",
                               option.Variadic: "*"}[f.option])
    return " ".join(words)


def output_bounds(schema):
    """The least and most outputs a node of schema may have (max -1 for no
    limit): the schema's min_output and max_output, which OpSchema::Verify
    checks; min_output counts up to the last output that is not optional,
    so GRU-1 (an optional Y before a single Y_h) needs 2."""
    variadic = schema.outputs and schema.outputs[-1].option == \
        onnx.defs.OpSchema.FormalParameterOption.Variadic
    most = -1 if variadic else schema.max_output
    if not variadic and most != len(schema.outputs):
        sys.exit("gen_op_schemas: %s-%d has max_output %d but %d outputs"
                 % (schema.name, schema.since_version, most, len(schema.outputs)))
    return schema.min_output, most


# onnx.defs.OpSchema.AttrType name -> a value of that type, for probe nodes
PROBE_VALUES = {
    "FLOAT": 1.0, "INT": 1, "STRING": "x", "FLOATS": [1.0], "INTS": [1],
    "STRINGS": ["x"], "TENSOR": onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [], [0.0]),
}


def output_counts(schema, least, most):
    """The output counts from least to most that schema allows, as a bitmask
    (bit n for n outputs), when it allows only some of them; 0 when it allows
    all.  OpSchema::Verify refuses a count outside the set a schema gives
    NumOutputs (BatchNormalization: 1 or 5 outputs, 1 or 3 from version 14),
    which onnx's Python OpSchema does not show, so this asks onnx's checker
    about a node of each count, its inputs and required attributes given.
    Variadic outputs and deprecated versions (the checker refuses a node of
    those whole) allow every count."""
    if most < 0 or schema.deprecated:
        return 0
    if most >= 32:
        sys.exit("gen_op_schemas: %s-%d has %d outputs, more than a 32-bit mask holds"
                 % (schema.name, schema.since_version, most))
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {"": schema.since_version}
    mask = 0
    for n in range(least, most + 1):
        node = onnx.helper.make_node(schema.name,
                                     ["in%d" % i for i in range(schema.min_input)],
                                     ["out%d" % i for i in range(n)])
        for a in schema.attributes.values():
            if a.required:
                if a.type.name not in PROBE_VALUES:
                    sys.exit("gen_op_schemas: cannot probe %s-%d: required attribute %s is %s"
                             % (schema.name, schema.since_version, a.name, a.type.name))
                node.attribute.append(onnx.helper.make_attribute(a.name,
                                                                 PROBE_VALUES[a.type.name]))
        try:
            onnx.checker.check_node(node, ctx, onnx.checker.C.LexicalScopeContext())
            mask |= 1 << n
        except onnx.checker.ValidationError as e:
            if "output size" not in str(e):
                sys.exit("gen_op_schemas: cannot probe %s-%d with %d outputs: %s"
                         % (schema.name, schema.since_version, n, str(e).splitlines()[0]))
    if mask & (1 << least) == 0 or mask & (1 << most) == 0:
        sys.exit("gen_op_schemas: %s-%d refuses %d or %d outputs, its own bounds"
                 % (schema.name, schema.since_version, least, most))
    return 0 if mask == (1 << (most + 1)) - (1 << least) else mask


def counts_hex(schema, least, most):
    """output_counts as the header writes it: "0", or the mask in hex."""
    mask = output_counts(schema, least, most)
    return "0x%x" % mask if mask else "0"


def generate():
    top = opset_max()
    lines = [
        "/*",
        " * op_schemas.h",
        " *\t  The attributes, formal inputs and formal outputs of each version of",
        " *\t  the operators the engine implements.",
        " *",
        " * GENERATED by tools/gen_op_schemas.py from the operator schemas of onnx %s"
        % onnx.__version__,
        " * (opsets 1 to %d); do not edit.  Included by op_registry.c alone." % top,
        " *",
        " * op_schema_inputs[]: the formal inputs of every version, in order (an",
        " * ie_formal_input each, op.h): name, type constraint (NULL for a fixed",
        " * type), the element types allowed (bit t for TensorProto data type t;",
        " * the comment lists them), IE_IN_* flags, and the position of the first",
        " * input of that version with the same constraint (its own when none",
        " * before it has it).",
        " *",
        " * op_schemas[]: one entry per operator version: op_type, since_version,",
        " * \"name:T\" for each attribute, T its type (f float, i int, s string,",
        " * t tensor, g graph, F floats, I ints, S strings, T tensors, G graphs,",
        " * p sparse tensor, P sparse tensors, y type proto, Y type protos), \"!\"",
        " * after it when it is required; then where its formal inputs start in",
        " * op_schema_inputs[] and how many there are; then its formal outputs",
        " * (each name, \"?\" after an optional one, \"*\" after a variadic one)",
        " * and the least and most outputs a node may have (the schema's",
        " * min_output and max_output; -1 for no limit); then, for a version",
        " * that allows only some counts between those (OpSchema::NumOutputs of",
        " * a set: BatchNormalization), those counts (bit n for n outputs), and",
        " * 0 for one that allows all.",
        " */",
        "static const ie_formal_input op_schema_inputs[] = {",
    ]
    entries = []
    n_inputs = 0
    for op in registered_ops():
        vs = versions(op, top)
        if not vs:
            sys.exit("gen_op_schemas: %s has no schema in opsets 1 to %d" % (op, top))
        for s in vs:
            ins = inputs_lines(s)
            if ins:
                lines.append("\t/* %d: %s-%d */" % (n_inputs, op, s.since_version))
                lines.extend(ins)
            bounds = output_bounds(s)
            entries.append('\t{"%s", %d, "%s", %d, %d, "%s", %d, %d, %s},'
                           % ((op, s.since_version, attrs_string(s), n_inputs, len(ins),
                               outputs_string(s)) + bounds + (counts_hex(s, *bounds),)))
            n_inputs += len(ins)
    lines += [
        "};",
        "",
        "static const struct",
        "{",
        "\tconst char *op_type;",
        "\tint\t\t\tsince;",
        "\tconst char *attrs;",
        "\tint\t\t\tfirst_input;",
        "\tint\t\t\tn_inputs;",
        "\tconst char *outputs;",
        "\tint\t\t\tmin_outputs;",
        "\tint\t\t\tmax_outputs;",
        "\tunsigned\toutput_counts;",
        "}\t\t\top_schemas[] = {",
    ]
    lines += entries
    lines.append("\t{NULL, 0, NULL, 0, 0, NULL, 0, 0, 0}")
    lines.append("};")
    return "\n".join(lines) + "\n"


def main():
    text = generate()
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        with open(HEADER) as f:
            if f.read() != text:
                print("gen_op_schemas: %s is out of date: run tools/gen_op_schemas.py > %s"
                      % (os.path.relpath(HEADER), os.path.relpath(HEADER)), file=sys.stderr)
                return 1
        print("gen_op_schemas: %s matches onnx %s" % (os.path.relpath(HEADER), onnx.__version__))
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
