#!/usr/bin/env python3
"""text_reference.py MODEL_DIR OUT.jsonl [--texts FILE]
   text_reference.py MODEL_DIR OUT.tsv --sentences FILE

Reference sentence embeddings for the text-embedding tests: each text is
tokenized by the Hugging Face `tokenizers` BERT WordPiece tokenizer over the
model folder's vocab.txt ([CLS] ... [SEP], cut to max_seq_length as
model.json says), run through MODEL_DIR/model.onnx by ONNX Runtime, pooled
and normalised as model.json says (sentence-transformers' mean pooling over
the attention mask, L2 normalisation), one text at a time.  Writes one JSON
object a line: {"text": ..., "n_tokens": ..., "truncated": ...,
"embedding": [384 floats as %.8g]}.

Without --texts it embeds the built-in test sentences below (ASCII,
accented Latin-1 text, CJK, emoji, CR LF, the empty string, and a text
longer than the model takes).  tests/regress/data/text_reference.jsonl is
this script's output over build/models/minilm (run from the repository root
with build/venv/bin/python).  For a text classifier (a model.json with
"labels", as build/models/prompt_task) each line has "label", the label of
the largest score, instead of "embedding";
tests/regress/data/text_classify_reference.jsonl is the output over
build/models/prompt_task with --texts tests/regress/data/text_classify.txt.

With --sentences it reads FILE in the escaped format of
tests/text/sentences.txt (tools/tokenizer_reference.py), tokenizes with the
model folder's tokenizer.json (the library's own BERT pipeline), and writes
TSV for tests/text/test_embed.c: one line a text, tab-separated: the text's
UTF-8 bytes in hex, n_tokens, 1 when cut else 0, and the embedding's
values as %.9g separated by spaces.
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import BertWordPieceTokenizer, Tokenizer

TEXTS = [
    "hello world",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The stock market fell sharply on Tuesday.",
    "PostgreSQL is an object-relational database system.",
    "How do I create an index on a table?",
    "Café crème brûlée à la française",
    "naïve résumé, Ærøskøbing, Straße",
    "日本語のテキストも扱えます",
    "Emoji are tokens too 😀🎉",
    "first line\r\nsecond line",
    "",
    " ".join(["database"] * 300),
]


def main():
    args = sys.argv[1:]
    texts = TEXTS
    tsv = False
    if "--sentences" in args:
        i = args.index("--sentences")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from tokenizer_reference import read_sentences
        texts = read_sentences(args[i + 1])
        del args[i:i + 2]
        tsv = True
    if "--texts" in args:
        i = args.index("--texts")
        with open(args[i + 1], encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    model_dir, out = args
    with open(os.path.join(model_dir, "model.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    max_len = int(cfg["max_seq_length"])
    if tsv:
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
    else:
        tok = BertWordPieceTokenizer(
            os.path.join(model_dir, cfg.get("vocab", "vocab.txt")),
            lowercase=bool(cfg.get("do_lower_case", True)),
            strip_accents=None, clean_text=True, handle_chinese_chars=True)
    # Without graph optimisations: ONNX Runtime 1.31's rewrite of the
    # Shape -> Gather -> Unsqueeze position-id path inserts a Slice that
    # its own kernel rejects; the plain graph is the reference anyway.
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outputs = [o.name for o in sess.get_outputs()]
    out_name = next((n for n in ("last_hidden_state", "token_embeddings")
                     if n in outputs), outputs[0])
    with open(out, "w", encoding="utf-8") as f:
        for text in texts:
            full = tok.encode(text).ids
            ids = full[:max_len - 1] + [full[-1]] if len(full) > max_len else full
            ids_a = np.array([ids], dtype=np.int64)
            feed = {"input_ids": ids_a,
                    "attention_mask": np.ones_like(ids_a),
                    "token_type_ids": np.zeros_like(ids_a)}
            hidden = sess.run([out_name], {n: feed[n] for n in names})[0][0]
            if hidden.ndim == 2:
                if cfg.get("pooling", "mean") == "cls":
                    v = hidden[0].astype(np.float64)
                else:
                    v = hidden.astype(np.float64).mean(axis=0)
            else:
                v = hidden.astype(np.float64)
            if cfg.get("normalize", False):
                v = v / max(np.linalg.norm(v), 1e-12)
            if "labels" in cfg and not tsv:
                f.write(json.dumps({
                    "text": text, "n_tokens": len(ids),
                    "truncated": len(full) > max_len,
                    "label": cfg["labels"][int(np.argmax(v))]},
                    ensure_ascii=False) + "\n")
                continue
            if tsv:
                f.write("%s\t%d\t%d\t%s\n" % (
                    text.encode("utf-8").hex(), len(ids), int(len(full) > max_len),
                    " ".join("%.9g" % x for x in v)))
                continue
            f.write(json.dumps({
                "text": text, "n_tokens": len(ids),
                "truncated": len(full) > max_len,
                "embedding": [float("%.8g" % x) for x in v]},
                ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
