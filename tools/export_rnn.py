#!/usr/bin/env python3
"""export_rnn.py [OUT_DIR] [NAME ...]

Small recurrent models (ONNX RNN, GRU and LSTM nodes), each written as
OUT_DIR/<name>/model.onnx and test_data_set_0/{input,output}_J.pb with ONNX
Runtime's outputs on the same file, as tools/check_exports.py writes its
folders; onnx-conformance --dir reads them.

The models are built with onnx.helper, not exported from PyTorch: the
pinned environment (build/venv) has onnx and onnxruntime but no torch.
lstm_2layer_bidi and gru_2layer lay their nodes out as torch.onnx.export
does for nn.LSTM(8, 6, num_layers=2, bidirectional=True, batch_first=True)
and nn.GRU(8, 6, num_layers=2, batch_first=True): a Transpose to
[seq, batch, input], one node per layer (GRU with linear_before_reset 1,
as PyTorch computes it), the Y of a bidirectional layer transposed and
reshaped to [seq, batch, 2 * hidden] for the next, and a Transpose back.
The rnn_* models cover what those do not: reverse and bidirectional with
sequence_lens, initial states, clip (rnn_lstm_clip: a cell state above
clip, which ONNX Runtime does not clip before h), activations with alpha
and beta (consumed only by the functions that take them), GRU's
linear_before_reset 0, LSTM's peepholes and input_forget, a row of
sequence_lens 0 (rnn_zero_lens: zero Y_h and Y_c, not the initial
states, as ONNX Runtime gives them), so that the
engine is checked against ONNX Runtime's reading of each.  Not
layout 1: ONNX Runtime's CPU kernels refuse it ("Batchwise recurrent
operations (layout == 1) are not supported"); the node tests
test_*_batchwise and tests/unit/test_ops.c check it.

Weights and inputs are numpy draws at a fixed seed.  tests/onnx/exports/
holds this script's output (opset 22).
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 22


def rand(rng, *shape):
    return rng.uniform(-0.6, 0.6, size=shape).astype(np.float32)


def gates(op):
    return {"RNN": 1, "GRU": 3, "LSTM": 4}[op]


def rnn_weights(rng, prefix, op, dirs, inp, hidden, peepholes=False):
    """W, R, B (and P) initializers of one node, named prefix_W, ..."""
    g = gates(op)
    inits = [numpy_helper.from_array(rand(rng, dirs, g * hidden, inp), prefix + "_W"),
             numpy_helper.from_array(rand(rng, dirs, g * hidden, hidden), prefix + "_R"),
             numpy_helper.from_array(rand(rng, dirs, 2 * g * hidden), prefix + "_B")]
    if peepholes:
        inits.append(numpy_helper.from_array(rand(rng, dirs, 3 * hidden), prefix + "_P"))
    return inits


def stacked(rng, op, layers, bidi, batch, seq, inp, hidden):
    """A PyTorch-style stack of op layers, batch_first: X [batch, seq, inp]
    -> Y [batch, seq, dirs * hidden], Y_h of the last layer."""
    dirs = 2 if bidi else 1
    nodes, inits = [], []
    nodes.append(helper.make_node("Transpose", ["X"], ["x0"], perm=[1, 0, 2]))
    cur, cur_in = "x0", inp
    attrs = {"hidden_size": hidden}
    if bidi:
        attrs["direction"] = "bidirectional"
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    for layer in range(layers):
        p = "l%d" % layer
        inits += rnn_weights(rng, p, op, dirs, cur_in, hidden)
        outs = [p + "_Y", p + "_Yh"] + ([p + "_Yc"] if op == "LSTM" else [])
        nodes.append(helper.make_node(op, [cur, p + "_W", p + "_R", p + "_B"], outs,
                                      name=p, **attrs))
        # Y [seq, dirs, batch, hidden] -> [seq, batch, dirs * hidden]
        nodes.append(helper.make_node("Transpose", [p + "_Y"], [p + "_Yt"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [p + "_Yt", "shape3"], [p + "_out"]))
        cur, cur_in = p + "_out", dirs * hidden
    inits.append(numpy_helper.from_array(np.array([0, 0, dirs * hidden], np.int64), "shape3"))
    nodes.append(helper.make_node("Transpose", [cur], ["Y"], perm=[1, 0, 2]))
    nodes.append(helper.make_node("Identity", ["l%d_Yh" % (layers - 1)], ["Y_h"]))
    graph = helper.make_graph(
        nodes, "%s_stack" % op.lower(),
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, seq, inp])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [batch, seq, dirs * hidden]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [dirs, batch, hidden])],
        inits)
    return graph, [rand(rng, batch, seq, inp)]


def single(rng, op, batch, seq, inp, hidden, dirs, layout=0, lens=None, init_h=False,
           init_c=False, peepholes=False, n_out=None, c_scale=1.0, **attrs):
    """One op node with every optional input the arguments ask for, fed as
    graph inputs (X, sequence_lens, initial_h, initial_c) or initializers."""
    inits = rnn_weights(rng, "n", op, dirs, inp, hidden, peepholes)
    st_shape = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    x_shape = [batch, seq, inp] if layout else [seq, batch, inp]
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    feeds = [rand(rng, *x_shape)]
    names = ["X", "n_W", "n_R", "n_B", "", "", "", ""]
    if lens is not None:
        ins.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [batch]))
        feeds.append(np.array(lens, np.int32))
        names[4] = "sequence_lens"
    if init_h:
        ins.append(helper.make_tensor_value_info("initial_h", TensorProto.FLOAT, st_shape))
        feeds.append(rand(rng, *st_shape))
        names[5] = "initial_h"
    if init_c:
        ins.append(helper.make_tensor_value_info("initial_c", TensorProto.FLOAT, st_shape))
        feeds.append(rand(rng, *st_shape) * np.float32(c_scale))
        names[6] = "initial_c"
    if peepholes:
        names[7] = "n_P"
    while names[-1] == "":
        names.pop()
    y_shape = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, st_shape)]
    if op == "LSTM":
        outs.append(helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, st_shape))
    if n_out is not None:
        outs = outs[:n_out]
    if dirs == 2:
        attrs["direction"] = "bidirectional"
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, names, [o.name for o in outs], name="n", hidden_size=hidden,
                            **attrs)
    return helper.make_graph([node], op.lower(), ins, outs, inits), feeds


MODELS = {
    "lstm_2layer_bidi": lambda rng: stacked(rng, "LSTM", 2, True, 3, 5, 8, 6),
    "gru_2layer": lambda rng: stacked(rng, "GRU", 2, False, 3, 5, 8, 6),
    "rnn_reverse_lens_clip": lambda rng: single(
        rng, "RNN", 3, 5, 4, 5, 1, lens=[5, 2, 3], init_h=True, direction="reverse", clip=0.7),
    "rnn_gru_bidi_lens": lambda rng: single(
        rng, "GRU", 3, 4, 4, 5, 2, lens=[4, 1, 3], init_h=True, n_out=2),
    "rnn_gru_activations": lambda rng: single(
        rng, "GRU", 2, 4, 3, 4, 2, linear_before_reset=1, init_h=True,
        activations=["HardSigmoid", "Softsign", "LeakyRelu", "Tanh"],
        activation_alpha=[0.3, 0.1], activation_beta=[0.45]),
    "rnn_lstm_peepholes_forget": lambda rng: single(
        rng, "LSTM", 3, 5, 4, 5, 2, lens=[5, 3, 1], init_h=True, init_c=True, peepholes=True,
        input_forget=1, clip=0.5),
    "rnn_lstm_clip": lambda rng: single(
        rng, "LSTM", 2, 4, 3, 4, 1, init_c=True, c_scale=4.0, clip=0.3),
    "rnn_zero_lens": lambda rng: single(
        rng, "LSTM", 3, 4, 3, 4, 2, lens=[3, 0, 4], init_h=True, init_c=True, peepholes=True),
    "rnn_lstm_activations": lambda rng: single(
        rng, "LSTM", 2, 4, 3, 4, 1, init_h=True, init_c=True,
        activations=["Sigmoid", "ScaledTanh", "Elu"], activation_alpha=[0.9, 0.8],
        activation_beta=[1.1]),
}


def write_folder(out, name, graph, feeds):
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="tools/export_rnn.py")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), feeds)})
    for j, (i, a) in enumerate(zip(sess.get_inputs(), feeds)):
        with open(os.path.join(folder, "test_data_set_0", "input_%d.pb" % j), "wb") as f:
            f.write(numpy_helper.from_array(a, i.name).SerializeToString())
    for j, (o, a) in enumerate(zip(sess.get_outputs(), ref)):
        with open(os.path.join(folder, "test_data_set_0", "output_%d.pb" % j), "wb") as f:
            f.write(numpy_helper.from_array(a, o.name).SerializeToString())
    print("%s: %s" % (name, ", ".join("%s %s" % (o.name, list(a.shape))
                                      for o, a in zip(sess.get_outputs(), ref))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx", "exports"))
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    print("onnx %s, onnxruntime %s, numpy %s" % (onnx.__version__, ort.__version__,
                                                np.__version__))
    for k, name in enumerate(a.names or sorted(MODELS)):
        if name not in MODELS:
            sys.exit("export_rnn: no model %r (%s)" % (name, ", ".join(sorted(MODELS))))
        rng = np.random.default_rng(1000 + sorted(MODELS).index(name))
        graph, feeds = MODELS[name](rng)
        write_folder(a.out, name, graph, feeds)


if __name__ == "__main__":
    main()
