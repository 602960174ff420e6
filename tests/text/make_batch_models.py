#!/usr/bin/env python3
"""make_batch_models.py MINILM_DIR OUT_DIR: the text models of
tests/text/test_textbatch.c, whose answers depend on their batch unless
the worker keeps their rows apart, written at test time:

  OUT_DIR/qdyn/     MiniLM (MINILM_DIR/model.onnx) through
                    onnxruntime.quantization.quantize_dynamic (QInt8
                    weights, op_types_to_quantize=["MatMul"], as
                    bench/engine/bench.py's minilm_qdyn case): its
                    DynamicQuantizeLinear nodes take one scale over the
                    whole batch tensor; MiniLM's model.json and vocab.txt
  OUT_DIR/nomask/   input_ids [N, S] alone (no attention_mask) -> Gather
                    (an embedding of 8) -> Transpose to [S, N, 8] -> LSTM
                    (hidden 6) -> Y_h [1, N, 6] -> Squeeze -> Gemm (6x3)
                    -> logits [N, 3]: the last step's state reads
                    padding as tokens (weights from numpy's
                    default_rng(11), opset 17); MiniLM's vocab.txt
  OUT_DIR/nomask_reference.tsv  one text a line, "<UTF-8 hex>\\t<values>":
                    ONNX Runtime's logits for the text alone, unpadded
                    (ids from the Hugging Face tokenizer of
                    MINILM_DIR/tokenizer.json)

Takes a few seconds (quantize_dynamic of MiniLM's 22M weights).
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# texts of several lengths; the first two, and the third and fourth, of
# equal token counts (rows a model without attention_mask batches)
TEXTS = [
    "A man is eating food.",
    "A girl is eating rice.",
    "hello world",
    "good night",
    "The stock market fell sharply on Tuesday as investors worried about rates.",
    "Databases hold rows of text and numbers queried with SQL.",
    "ok",
]


def make_qdyn(minilm, out):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    os.makedirs(out, exist_ok=True)
    quantize_dynamic(os.path.join(minilm, "model.onnx"), os.path.join(out, "model.onnx"),
                     weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    for f in ("model.json", "vocab.txt"):
        shutil.copy(os.path.join(minilm, f), os.path.join(out, f))


def make_nomask(minilm, out):
    rng = np.random.default_rng(11)
    vocab = sum(1 for _ in open(os.path.join(minilm, "vocab.txt"), encoding="utf-8"))
    emb, hid, classes = 8, 6, 3

    def rand(*shape):
        return rng.uniform(-0.6, 0.6, size=shape).astype(np.float32)

    inits = [numpy_helper.from_array(rand(vocab, emb), "E"),
             numpy_helper.from_array(rand(1, 4 * hid, emb), "W"),
             numpy_helper.from_array(rand(1, 4 * hid, hid), "R"),
             numpy_helper.from_array(rand(1, 8 * hid), "B"),
             numpy_helper.from_array(rand(hid, classes), "G"),
             numpy_helper.from_array(rand(classes), "GB"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0")]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["x"]),
             helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("LSTM", ["xt", "W", "R", "B"], ["", "h"], hidden_size=hid),
             helper.make_node("Squeeze", ["h", "axis0"], ["h2"]),
             helper.make_node("Gemm", ["h2", "G", "GB"], ["logits"])]
    graph = helper.make_graph(
        nodes, "lstm_nomask",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", "S"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    shutil.copy(os.path.join(minilm, "vocab.txt"), os.path.join(out, "vocab.txt"))
    cfg = {"task": "embed_text", "max_seq_length": 64, "do_lower_case": True,
           "pooling": "cls", "normalize": False, "inputs": ["input_ids"],
           "output": "logits", "vocab": "vocab.txt"}
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def reference(minilm, model, path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(minilm, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    with open(path, "w") as f:
        for t in TEXTS:
            ids = np.array([tok.encode(t).ids], dtype=np.int64)
            y = sess.run(None, {"input_ids": ids})[0][0]
            f.write("%s\t%s\n" % (t.encode("utf-8").hex(),
                                  " ".join("%.9g" % v for v in y)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    minilm, out = sys.argv[1], sys.argv[2]
    make_qdyn(minilm, os.path.join(out, "qdyn"))
    make_nomask(minilm, os.path.join(out, "nomask"))
    reference(minilm, os.path.join(out, "nomask", "model.onnx"),
              os.path.join(out, "nomask_reference.tsv"))


if __name__ == "__main__":
    main()
