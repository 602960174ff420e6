#!/usr/bin/env python3
"""bench/text/compare.py: bench/text's check of the vectors it measured.

usage: compare.py REFERENCE N_TEXTS NAME=FILE...

Each FILE has "ROW_ID|{v1,v2,...}" lines (psql -At of SELECT id,
infer.embed(...), or batching-client --answers); row i is text i mod
N_TEXTS of tests/text/sentences.txt, whose reference vector is line
i mod N_TEXTS of REFERENCE (tools/text_reference.py --sentences: Hugging
Face tokenizer + ONNX Runtime, one text at a time).  For each FILE prints
    NAME rows=R min_cos=C (1 - X) worst_row=I texts_covered=K
(every row must be there with a vector; a missing or empty one counts as
cosine -1), and for the first FILE against each later one
    NAME1~NAME max_abs_diff=D
Exits 1 when a FILE misses rows or a row has no vector.
"""
import sys

import numpy as np


def read_reference(path):
    with open(path, encoding="utf-8") as f:
        return [np.array(line.rstrip("\n").split("\t")[3].split(), np.float64) for line in f]


def read_vectors(path):
    """{row id: vector or None} of a "ID|{...}" file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            rid, _, val = line.rstrip("\n").partition("|")
            val = val.strip()
            if val.startswith("{") and val.endswith("}") and len(val) > 2:
                out[int(rid)] = np.array(val[1:-1].split(","), np.float64)
            else:
                out[int(rid)] = None
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    refs = read_reference(sys.argv[1])
    n = int(sys.argv[2])
    if len(refs) != n:
        sys.exit("compare: %s has %d texts, expected %d" % (sys.argv[1], len(refs), n))
    sets = []
    bad = 0
    for arg in sys.argv[3:]:
        name, _, path = arg.partition("=")
        vecs = read_vectors(path)
        rows = max(vecs) + 1 if vecs else 0
        worst, worst_row = 2.0, -1
        for i in range(rows):
            v = vecs.get(i)
            r = refs[i % n]
            c = -1.0 if v is None or len(v) != len(r) else \
                float(np.dot(v, r) / (np.linalg.norm(v) * np.linalg.norm(r)))
            if v is None:
                bad += 1
            if c < worst:
                worst, worst_row = c, i
        covered = len({i % n for i in range(rows) if vecs.get(i) is not None})
        print("%s rows=%d min_cos=%.9f (1 - %.2g) worst_row=%d texts_covered=%d" %
              (name, rows, worst, 1.0 - worst, worst_row, covered))
        sets.append((name, vecs))
    for name, vecs in sets[1:]:
        d = 0.0
        for i, v in sets[0][1].items():
            w = vecs.get(i)
            if v is not None and w is not None and len(v) == len(w):
                d = max(d, float(np.max(np.abs(v - w))))
        print("%s~%s max_abs_diff=%.3g" % (sets[0][0], name, d))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
