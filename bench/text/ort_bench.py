#!/usr/bin/env python3
"""bench/text/ort_bench.py: the ONNX Runtime baseline of bench/text.

usage: ort_bench.py MODEL_DIR SENTENCES ROWS THREADS REFERENCE [--batch 32]
                    [--request 64]

Embeds ROWS rows (row i is text i mod n of SENTENCES, the escaped form of
tests/text/sentences.txt read by tools/tokenizer_reference.py) the way a
Python user would with the same model file: the Hugging Face tokenizer of
MODEL_DIR/tokenizer.json (cut to max_seq_length as model.json says, [SEP]
kept), an ONNX Runtime CPU session on MODEL_DIR/model.onnx
(intra_op_num_threads=THREADS, inter_op_num_threads=1, sequential, the
highest graph optimisation level that runs the model), mean pooling over
the attention mask and L2 normalisation in numpy.  Two ways, each timed
over all ROWS rows, tokenizing included:

  per_row  one text per session run, no padding;
  batched  the rows in requests of --request rows (what InferBatch sends),
           each sorted by token count and cut into runs of --batch rows
           padded to the longest with id 0 and mask 0 (as our worker
           pads).

Both runs' vectors are checked against REFERENCE
(tools/text_reference.py --sentences: one text at a time): prints the
minimum cosine of each.  Prints one line:
  ort per_row_s_per_s=A batched_s_per_s=B per_row_min_cos=C batched_min_cos=D
      threads=T opt=LEVEL rows=N
"""
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../tools"))
from tokenizer_reference import read_sentences  # noqa: E402

LEVELS = [("all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
          ("extended", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
          ("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
          ("none", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)]


def session(model, threads):
    """The session of the highest optimisation level whose runs succeed on
    probe shapes (1x2, 1x256, 32x17); tools/text_reference.py saw ONNX
    Runtime's optimised graph reject some shapes.  Returns (sess, name)."""
    last = None
    for name, level in LEVELS:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = level
        try:
            sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            for b, s in ((1, 2), (1, 256), (32, 17)):
                ids = np.full((b, s), 1000, np.int64)
                run(sess, ids, np.ones_like(ids))
            return sess, name
        except Exception as e:  # noqa: BLE001 - try the next level
            last = e
    raise SystemExit("ort_bench: ONNX Runtime cannot run the model: %s" % last)


def run(sess, ids, mask):
    """Mean-pooled, L2-normalised embeddings [batch, hidden] of one run."""
    names = [i.name for i in sess.get_inputs()]
    feed = {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids)}
    hidden = sess.run(None, {n: feed[n] for n in names})[0]
    m = mask[:, :, None].astype(np.float32)
    v = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def encode(tok, text, max_len):
    """The text's ids cut to max_len, [SEP] kept (the library's truncation)."""
    ids = tok.encode(text).ids
    return ids[:max_len - 1] + [ids[-1]] if len(ids) > max_len else ids


def per_row(sess, tok, texts, max_len):
    out = []
    for t in texts:
        ids = np.array([encode(tok, t, max_len)], np.int64)
        out.append(run(sess, ids, np.ones_like(ids))[0])
    return out


def batched(sess, tok, texts, max_len, batch, request):
    out = [None] * len(texts)
    for r0 in range(0, len(texts), request):
        enc = [(encode(tok, texts[i], max_len), i)
               for i in range(r0, min(r0 + request, len(texts)))]
        enc.sort(key=lambda e: len(e[0]))
        for b0 in range(0, len(enc), batch):
            part = enc[b0:b0 + batch]
            width = max(len(e[0]) for e in part)
            ids = np.zeros((len(part), width), np.int64)
            mask = np.zeros((len(part), width), np.int64)
            for k, (e, _) in enumerate(part):
                ids[k, :len(e)] = e
                mask[k, :len(e)] = 1
            v = run(sess, ids, mask)
            for k, (_, i) in enumerate(part):
                out[i] = v[k]
    return out


def read_reference(path):
    """The reference vectors of tools/text_reference.py --sentences, in order."""
    refs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            refs.append(np.array(line.rstrip("\n").split("\t")[3].split(), np.float64))
    return refs


def min_cos(vecs, refs):
    return min(float(np.dot(v, refs[i % len(refs)]) /
                     (np.linalg.norm(v) * np.linalg.norm(refs[i % len(refs)])))
               for i, v in enumerate(vecs))


def main():
    args = sys.argv[1:]
    opts = {"--batch": 32, "--request": 64}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = int(args[i + 1])
            del args[i:i + 2]
    if len(args) != 5:
        sys.exit(__doc__)
    model_dir, sentences, rows, threads, reference = args
    rows, threads = int(rows), int(threads)
    with open(os.path.join(model_dir, "model.json"), encoding="utf-8") as f:
        max_len = int(json.load(f)["max_seq_length"])
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    base = read_sentences(sentences)
    texts = [base[i % len(base)] for i in range(rows)]
    refs = read_reference(reference)
    if len(refs) != len(base):
        sys.exit("ort_bench: %s has %d texts, %s %d" % (reference, len(refs), sentences, len(base)))
    sess, level = session(os.path.join(model_dir, "model.onnx"), threads)
    # warm-up: one run of each way over a few rows
    per_row(sess, tok, texts[:8], max_len)
    batched(sess, tok, texts[:64], max_len, opts["--batch"], opts["--request"])

    t0 = time.perf_counter()
    v1 = per_row(sess, tok, texts, max_len)
    t1 = time.perf_counter()
    v2 = batched(sess, tok, texts, max_len, opts["--batch"], opts["--request"])
    t2 = time.perf_counter()
    print("ort per_row_s_per_s=%.2f batched_s_per_s=%.2f per_row_min_cos=%.9f "
          "batched_min_cos=%.9f threads=%d opt=%s rows=%d" % (
              rows / (t1 - t0), rows / (t2 - t1), min_cos(v1, refs), min_cos(v2, refs),
              threads, level, rows))


if __name__ == "__main__":
    main()
