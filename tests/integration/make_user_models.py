#!/usr/bin/env python3
"""make_user_models.py OUTDIR: small ONNX image models of the kind a user
registers with infer.create_model (task raw), for
tests/integration/test_user_models.sh.

Each takes x: float [N, 3, 8, 8] (N named "N", ONNX dim_param) and its
first operator is one that copies or keeps its input tensor whole, so
that a batch tensor whose byte count is not its shape's shows:

  first_identity.onnx  Identity -> GlobalAveragePool -> Flatten
                       y [N, 3]: each channel's mean
  first_concat.onnx    Concat(x, x, axis 1) -> GlobalAveragePool -> Flatten
                       y [N, 6]: the channel means twice
  mlp.onnx             Flatten -> Gemm (192x16) -> Relu -> Gemm (16x4)
                       -> Softmax, y [N, 4] (weights from numpy's
                       default_rng(7), opset 13)
  mlp_b.onnx           the same graph, weights from default_rng(8):
                       other answers
  opset20.onnx         Conv (3x3, 4 channels) -> Gelu -> ReduceMean with
                       its axes an input: y [N, 4], at opset 20 (IR 10),
                       as PyTorch's default exporter writes models
  opset13.onnx         the same function at opset 13: GELU with Erf, Mul
                       and Add; ReduceMean's axes an attribute
  batch_transpose.onnx GlobalAveragePool -> Transpose (perm 1, 0, 2, 3)
                       y [3, N, 1, 1]: the batch is not the output's
                       first dimension
  seq_first.onnx       GlobalAveragePool -> Flatten -> Transpose: y [C, N]
                       (both named), the batch in the second dimension
  undeclared.onnx      the same, y [?, ?] (no size, no name): the worker
                       finds where the rows are by running one alone
  unnamed.onnx         first_identity with y [?, ?] (no size, no name): rows
                       first, which the worker finds by the same check
  reshape_b1.onnx      Reshape to [1, 192] (a batch of 1 fixed inside, as
                       exporters write) -> Gemm (192x4): y [N, 4], runs
                       only a row at a time
  maxpool_indices.onnx MaxPool (2x2, stride 2) -> its Indices -> Cast
                       (float) -> Flatten: y [N, 48], declared rows first,
                       but the indices count over the whole batch tensor
                       (row k's are k * 192 higher than alone), so the
                       rows must run alone (opset 12)
  fixed_b4.onnx        first_identity with its batch fixed at 4: x [4, 3, 8, 8]
  int_out.onnx         GlobalAveragePool -> Flatten -> Cast (int64):
                       y int64 [N, 3], an output the image functions
                       cannot read
  reshape_100.onnx     Reshape to [-1, 100]: no image's 192 values fit,
                       every run fails in the engine
  cast_bf16.onnx       GlobalAveragePool -> Flatten -> Cast (bfloat16)
                       -> Cast (float): a valid model whose bfloat16 the
                       engine lacks (0A000 at load, not at the first run)
  bad_attr.onnx        GlobalAveragePool -> Flatten -> Relu with an
                       attribute "foo" Relu does not have: not valid ONNX
                       (onnx.checker refuses it; saved unchecked), XX001
                       at load
  int32_shape.onnx     GlobalAveragePool -> Flatten -> Reshape whose shape
                       initializer is int32 (Reshape takes int64 alone):
                       not valid ONNX (onnx.checker's full check, which
                       infers types, refuses it), XX001 at load
  u8_add.onnx          GlobalAveragePool -> Flatten -> Cast (uint8) -> Add
                       -> Cast (float) at opset 13, whose Add does not take
                       uint8 (Add-14 does): the type comes from a node, so
                       the first run refuses it (XX000), as ONNX Runtime
                       refuses the model
  named_oom.onnx       reshape_100 with its Reshape named "out of memory":
                       the run fails for the shape (XX000), whatever the
                       node's name says
  f16_add.onnx         GlobalAveragePool -> Flatten -> Cast (float16) ->
                       Add -> Cast (float): valid, loads, and its float16
                       Add is what the engine lacks at run time (0A000);
                       the Add is named "image too small"
  f16_dyn.onnx         the same with x [N, 3, H, W] (the image's own size)
  two_inputs.onnx      Add(x, x2) -> GlobalAveragePool -> Flatten, x and
                       x2 float [N, 3, 8, 8]: a valid model with two
                       inputs, no image model (22023 at the first row)
  reshape_dyn.onnx     Reshape to [0, 100] with x [N, 3, H, W] (the image's
                       own size): no image's values fit, each row fails
                       alone (22023, naming its size)
  expand_huge.onnx     ReduceMean -> Expand to [1, 2^25, 2^25, 1] (2^50
                       floats a row) -> ReduceMean -> Flatten: y [N, 1],
                       a tensor larger than the host's memory at run
                       time (54000); the Expand is named "not supported"
  dyn_concat.onnx      Concat(x, x, axis 1) -> GlobalAveragePool ->
                       Flatten with x [N, 3, H, W] (the image's own
                       size): y [N, 6], an intermediate tensor twice the
                       input's size
  dyn_convt.onnx       ConvTranspose (3 -> 1 channel, 5x5, weights 0.04)
                       -> GlobalAveragePool -> Flatten with x [N, 3, H, W]:
                       y [N, 1]; its column buffer, [25, H * W] floats,
                       is more than 8 times its input's size and its
                       output's
  gray.onnx            GlobalAveragePool -> Flatten over x [N, 1, 8, 8]:
                       one channel, no image model (22023 naming its shape)
  txt_pos8/            a text model (docs/text.md) whose position table
                       has 8 rows: token embeddings [20, 4] gathered by
                       input_ids, plus the first `sequence` rows of the
                       position table, so a text of more than 8 tokens
                       fails the Add (a shape), its row alone; vocab.txt
                       of 20 words, model.json max_seq_length 64
  txt_b1/              txt_pos8 with its output reshaped to [1, sequence,
                       4]: a batch of 1 fixed inside, so that a batch of
                       several rows fails (a shape) where each row alone
                       runs
  labels4.txt          4 labels for mlp's 4 scores, one a line (the
                       second line "\r\n" ended, a blank line at the
                       end): cat, dog, bird, fish
  labels5.txt          the same and a fifth, "eel"

Each model is checked with onnx.checker.  Prints the files written.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def image_input():
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])


def save(outdir, name, nodes, output, inits=(), opset=13, x=None, valid=True, ir_version=8):
    """Writes the model; valid is True (onnx.checker passes it), False (it
    refuses it) or "types" (it passes it, and its full check, which infers
    the types, refuses it)."""
    graph = helper.make_graph(nodes, name, [x or image_input()], [output],
                              initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="pg_infer tests")
    model.ir_version = ir_version
    if valid == "types":
        onnx.checker.check_model(model)
        try:
            onnx.checker.check_model(model, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
            pass
        else:
            sys.exit("make_user_models: %s was meant to fail type inference" % name)
    elif valid:
        onnx.checker.check_model(model)
    else:
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError:
            pass
        else:
            sys.exit("make_user_models: %s was meant to be invalid" % name)
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(model, path)
    print(path)


def text_model(outdir, name, batch1=False):
    """A text model folder whose sequences may have 8 tokens at most; with
    batch1, its output is reshaped to [1, sequence, 4], as an export that
    fixed a batch of 1 inside, so that a batch of several rows fails."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "one", "two", "three", "four", "five",
             "six", "seven", "eight", "nine", "ten", "a", "b", "c", "d", "e", "f"]
    rng = np.random.default_rng(11)
    tok = numpy_helper.from_array(rng.normal(0, 1, (len(words), 4)).astype(np.float32), "tok")
    pos = numpy_helper.from_array(rng.normal(0, 1, (8, 4)).astype(np.float32), "pos")
    consts = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
              for n, v in (("one", [1]), ("two", [2]), ("zero", [0]), ("four", [4]))]
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "sequence", 4])
    nodes = [
        helper.make_node("Gather", ["tok", "input_ids"], ["e"]),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Slice", ["shape", "one", "two"], ["seq"]),
        helper.make_node("Slice", ["pos", "zero", "seq", "zero"], ["p"]),
        helper.make_node("Add", ["e", "p"], ["h" if batch1 else "last_hidden_state"],
                         name="add_positions"),
    ]
    if batch1:
        nodes += [
            helper.make_node("Concat", ["one", "seq", "four"], ["b1"], axis=0),
            helper.make_node("Reshape", ["h", "b1"], ["last_hidden_state"], name="batch_of_one"),
        ]
    graph = helper.make_graph(nodes, name, [ids, mask], [out], initializer=[tok, pos] + consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="pg_infer tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder = os.path.join(outdir, name)
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(words) + "\n")
    with open(os.path.join(folder, "model.json"), "w") as f:
        f.write('{"max_seq_length": 64, "pooling": "mean"}\n')
    print(folder)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    y = lambda shape: helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)

    save(outdir, "first_identity", [
        helper.make_node("Identity", ["x"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y(["N", 3]))
    save(outdir, "first_concat", [
        helper.make_node("Concat", ["x", "x"], ["a"], axis=1),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y(["N", 6]))

    for name, seed in (("mlp", 7), ("mlp_b", 8)):
        rng = np.random.default_rng(seed)
        w1 = numpy_helper.from_array(rng.normal(0, 0.1, (192, 16)).astype(np.float32), "w1")
        b1 = numpy_helper.from_array(rng.normal(0, 0.1, (16,)).astype(np.float32), "b1")
        w2 = numpy_helper.from_array(rng.normal(0, 0.5, (16, 4)).astype(np.float32), "w2")
        b2 = numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), "b2")
        save(outdir, name, [
            helper.make_node("Flatten", ["x"], ["f"]),
            helper.make_node("Gemm", ["f", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["l"]),
            helper.make_node("Softmax", ["l"], ["y"], axis=1),
        ], y(["N", 4]), [w1, b1, w2, b2])

    # the opsets of PyTorch's default exporter: Gelu-20, ReduceMean-18's axes input
    rng = np.random.default_rng(10)
    cw = numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "cw")
    cb = numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), "cb")
    axes = numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "axes")
    save(outdir, "opset20", [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Gelu", ["c"], ["g"]),
        helper.make_node("ReduceMean", ["g", "axes"], ["y"], keepdims=0),
    ], y(["N", 4]), [cw, cb, axes], opset=20, ir_version=10)
    # the same function at opset 13: GELU spelt with Erf, ReduceMean's axes an attribute
    consts = [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
              for n, v in (("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5))]
    save(outdir, "opset13", [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["c", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["c", "e1"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["g"]),
        helper.make_node("ReduceMean", ["g"], ["y"], axes=[2, 3], keepdims=0),
    ], y(["N", 4]), [cw, cb] + consts)

    save(outdir, "batch_transpose", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Transpose", ["g"], ["y"], perm=[1, 0, 2, 3]),
    ], y([3, "N", 1, 1]))

    save(outdir, "seq_first", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Transpose", ["f"], ["y"], perm=[1, 0]),
    ], y(["C", "N"]))

    save(outdir, "undeclared", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Transpose", ["f"], ["y"], perm=[1, 0]),
    ], helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None]))

    save(outdir, "unnamed", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None]))

    rng = np.random.default_rng(9)
    w = numpy_helper.from_array(rng.normal(0, 0.1, (192, 4)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, 192], dtype=np.int64), "shape")
    save(outdir, "reshape_b1", [
        helper.make_node("Reshape", ["x", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "w"], ["y"]),
    ], y(["N", 4]), [w, shape])

    save(outdir, "maxpool_indices", [
        helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Cast", ["i"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Flatten", ["c"], ["y"]),
    ], y(["N", 48]), opset=12)

    save(outdir, "fixed_b4", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y([4, 3]), x=helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 8, 8]))

    shape = numpy_helper.from_array(np.array([-1, 100], dtype=np.int64), "shape")
    save(outdir, "reshape_100", [
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ], y(["N", 100]), [shape])

    save(outdir, "cast_bf16", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Cast", ["f"], ["h"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT),
    ], y(["N", 3]))

    save(outdir, "bad_attr", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Relu", ["f"], ["y"], name="relu_foo", foo=3),
    ], y(["N", 3]), valid=False)

    shape32 = numpy_helper.from_array(np.array([-1, 3], dtype=np.int32), "shape32")
    save(outdir, "int32_shape", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Reshape", ["g", "shape32"], ["y"], name="reshape_i32"),
    ], y(["N", 3]), [shape32], valid="types")

    save(outdir, "u8_add", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Cast", ["f"], ["u"], to=TensorProto.UINT8),
        helper.make_node("Add", ["u", "u"], ["s"], name="add_u8"),
        helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT),
    ], y(["N", 3]), valid="types")

    shape = numpy_helper.from_array(np.array([-1, 100], dtype=np.int64), "shape")
    save(outdir, "named_oom", [
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="out of memory"),
    ], y(["N", 100]), [shape])

    f16 = [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Cast", ["f"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("Add", ["h", "h"], ["s"], name="image too small"),
        helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT),
    ]
    save(outdir, "f16_add", f16, y(["N", 3]))
    save(outdir, "f16_dyn", f16, y(["N", 3]),
         x=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]))

    graph = helper.make_graph([
        helper.make_node("Add", ["x", "x2"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], "two_inputs", [image_input(),
                      helper.make_tensor_value_info("x2", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [y(["N", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="pg_infer tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(outdir, "two_inputs.onnx"))
    print(os.path.join(outdir, "two_inputs.onnx"))

    shape = numpy_helper.from_array(np.array([0, 100], dtype=np.int64), "shape")
    save(outdir, "reshape_dyn", [
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ], y(["N", 100]), [shape],
         x=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]))

    save(outdir, "dyn_concat", [
        helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
        helper.make_node("GlobalAveragePool", ["c"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y(["N", 6]),
         x=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]))

    convt_w = numpy_helper.from_array(np.full((3, 1, 5, 5), 0.04, dtype=np.float32), "w")
    save(outdir, "dyn_convt", [
        helper.make_node("ConvTranspose", ["x", "w"], ["c"]),
        helper.make_node("GlobalAveragePool", ["c"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y(["N", 1]), [convt_w],
         x=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]))

    huge = numpy_helper.from_array(np.array([1, 1 << 25, 1 << 25, 1], dtype=np.int64), "huge")
    save(outdir, "expand_huge", [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 2, 3]),
        helper.make_node("Expand", ["m", "huge"], ["e"], name="not supported"),
        helper.make_node("ReduceMean", ["e"], ["r"], axes=[1, 2, 3]),
        helper.make_node("Flatten", ["r"], ["y"]),
    ], y(["N", 1]), [huge])

    save(outdir, "gray", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ], y(["N", 1]), x=helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8]))

    text_model(outdir, "txt_pos8")
    text_model(outdir, "txt_b1", batch1=True)

    for name, text in (("labels4.txt", b"cat\ndog\r\nbird\nfish\n\n"),
                       ("labels5.txt", b"cat\ndog\r\nbird\nfish\neel\n")):
        with open(os.path.join(outdir, name), "wb") as out:
            out.write(text)
        print(os.path.join(outdir, name))

    save(outdir, "int_out", [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Cast", ["f"], ["y"], to=TensorProto.INT64),
    ], helper.make_tensor_value_info("y", TensorProto.INT64, ["N", 3]))


if __name__ == "__main__":
    main()
