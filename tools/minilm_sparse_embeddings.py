"""Writes a copy of an ONNX text model whose word-embedding rows that the
given inputs never look up are zero (tests/gpu/pack.sh).

For the token ids of those inputs the copy computes exactly what the model
computes (a Gather reads only the rows it is given), at the same cost, but
its weights compress to about half: MiniLM's 30522 x 384 embedding table is
47 MB of its 90 MB.  It lets MiniLM, its ONNX Runtime test and a set of
sentences travel to a GPU machine under a 64 MiB carry limit.  Nothing else
in the model changes.

usage: minilm_sparse_embeddings.py MODEL.onnx OUT.onnx INPUT_IDS.pb
           [--sentences FILE TOKENIZER_JSON] [--initializer NAME]

INPUT_IDS.pb: an ONNX TensorProto of token ids (a model test's input);
FILE: texts one a line in the escaped form of tests/text/sentences.txt,
tokenized with the model's tokenizer.json (Hugging Face tokenizers, the
same ids as worker/tokenizer.c gives: tests/text); their ids are kept too.
The initializer defaults to embeddings.word_embeddings.weight.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def sentence_ids(path, tokenizer_json):
    """Every token id the tokenizer gives for the texts of path."""
    from tokenizers import Tokenizer
    from tokenizer_reference import unescape

    tok = Tokenizer.from_file(tokenizer_json)
    ids = set()
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            ids.update(tok.encode(unescape(line)).ids)
    return np.array(sorted(ids), dtype=np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("input_ids")
    ap.add_argument("--sentences", nargs=2, metavar=("FILE", "TOKENIZER_JSON"))
    ap.add_argument("--initializer", default="embeddings.word_embeddings.weight")
    a = ap.parse_args()

    model = onnx.load(a.model)
    ids = onnx.TensorProto()
    with open(a.input_ids, "rb") as f:
        ids.ParseFromString(f.read())
    used = numpy_helper.to_array(ids).ravel()
    if a.sentences:
        used = np.concatenate([used, sentence_ids(*a.sentences)])
    used = np.unique(used)
    for i, init in enumerate(model.graph.initializer):
        if init.name != a.initializer:
            continue
        table = numpy_helper.to_array(init)
        if used.min() < 0 or used.max() >= table.shape[0]:
            sys.exit(f"token ids outside 0..{table.shape[0] - 1}")
        sparse = np.zeros_like(table)
        sparse[used] = table[used]
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(sparse, a.initializer))
        onnx.save(model, a.out)
        print(f"{a.out}: {len(used)} of {table.shape[0]} rows of {a.initializer} kept")
        return
    sys.exit(f"{a.model}: no initializer {a.initializer}")


if __name__ == "__main__":
    main()
