#!/usr/bin/env python3
"""Build ONNX-style test folders for BERT-class text models.

For a text encoder with int64 inputs input_ids, attention_mask and
token_type_ids ([batch, sequence]; any subset, matched by name) this writes
OUT/<name>_<case>/ with model.onnx (a symlink to the model file) and
test_data_set_0/{input_<i>.pb, output_<j>.pb}: fixed pseudo-random token ids
(a [CLS] first, a [SEP] last, right padding with mask 0 and id 0) and the
reference outputs from ONNX Runtime on the CPU (graph optimisations off).  tests/onnx/conformance.c
(--dir OUT --metric rel-l2) then compares the engine against them.

Cases: b1_s16 (one sequence of 16 tokens, no padding) and b4_s40 (four
sequences of 40 tokens, lengths 40/27/9/2, token type 1 on the second half of
each sequence).

  make_text_tests.py --out DIR MODEL[:NAME] ...

A MODEL that does not exist is skipped with a note (exit 0), so the target
runs before the model is exported.  Run with build/venv/bin/python (numpy,
onnx, onnxruntime).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

CLS, SEP = 101, 102
CASES = {
    "b1_s16": [16],
    "b4_s40": [40, 27, 9, 2],
}


def make_inputs(lengths, vocab, seed):
    """input_ids, attention_mask, token_type_ids ([len(lengths), max]) for
    sequences of the given lengths, right-padded."""
    rng = np.random.default_rng(seed)
    n = max(lengths)
    ids = np.zeros((len(lengths), n), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for i, ln in enumerate(lengths):
        ids[i, :ln] = rng.integers(1000, vocab, size=ln)
        ids[i, 0] = CLS
        if ln > 1:
            ids[i, ln - 1] = SEP
        mask[i, :ln] = 1
        if len(lengths) > 1:
            types[i, ln // 2:ln] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def vocab_size(model):
    """Rows of the word-embedding table: the largest first dim of a 2-D
    float initializer (the embedding is the biggest table in a BERT)."""
    best = 0
    for init in model.graph.initializer:
        if len(init.dims) == 2 and init.data_type == onnx.TensorProto.FLOAT:
            best = max(best, init.dims[0])
    return best if best > 0 else 30522


def write_tests(out_dir, name, model_path):
    """One folder per case for model_path; returns the number written."""
    model = onnx.load(model_path, load_external_data=False)
    # graph optimisations off: the reference is the plain operator-by-operator
    # semantics (and ORT's fusions reject some valid graphs)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    vocab = min(vocab_size(model), 30522)
    count = 0
    for seed, (case, lengths) in enumerate(sorted(CASES.items())):
        feeds_all = make_inputs(lengths, vocab, seed)
        missing = [n for n in in_names if n not in feeds_all]
        if missing:
            sys.exit("%s: unexpected model inputs %s" % (model_path, missing))
        feeds = {n: feeds_all[n] for n in in_names}
        outs = sess.run(out_names, feeds)
        tdir = os.path.join(out_dir, "%s_%s" % (name, case))
        dset = os.path.join(tdir, "test_data_set_0")
        os.makedirs(dset, exist_ok=True)
        link = os.path.join(tdir, "model.onnx")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(model_path), link)
        for i, n in enumerate(in_names):
            t = numpy_helper.from_array(feeds[n], n)
            with open(os.path.join(dset, "input_%d.pb" % i), "wb") as f:
                f.write(t.SerializeToString())
        for j, (n, v) in enumerate(zip(out_names, outs)):
            t = numpy_helper.from_array(np.asarray(v), n)
            with open(os.path.join(dset, "output_%d.pb" % j), "wb") as f:
                f.write(t.SerializeToString())
        count += 1
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+", help="MODEL[:NAME]")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    total = 0
    for spec in args.models:
        path, _, name = spec.partition(":")
        name = name or os.path.basename(os.path.dirname(os.path.abspath(path)))
        if not os.path.exists(path):
            print("make_text_tests: %s not found, skipped" % path)
            continue
        total += write_tests(args.out, name, path)
    print("make_text_tests: %d test folders in %s" % (total, args.out))


if __name__ == "__main__":
    main()
