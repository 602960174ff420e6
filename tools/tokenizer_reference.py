#!/usr/bin/env python3
"""tokenizer_reference.py TOKENIZER_JSON SENTENCES OUT

Writes the token ids the Hugging Face `tokenizers` library (pinned in
tools/requirements.txt) gives for every test text, for tests/text's C test of
worker/tokenizer.c.  The tokenizer is the model's own tokenizer.json
(BertNormalizer, BertPreTokenizer, WordPiece, [CLS] ... [SEP]) with padding
and truncation off; an encoding longer than max_len is cut to its first
max_len - 1 ids plus [SEP], which is what the library's own truncation gives
(checked here on every long text).

SENTENCES holds one text a line, UTF-8, with the escapes \\\\, \\n, \\r, \\t
and \\x{HEX} (one code point); an empty line is the empty text.

OUT has one line per case: the text's UTF-8 bytes in hex, max_len, 1 when
the text was cut else 0, and the ids separated by spaces; tab-separated.
The cases: every sentence at max_len 256 (the model's max_seq_length) and at
max_len 8, then a sweep over all 1,112,064 Unicode scalar values, 16 to a
text, each inside a word ("x<c>y"), at max_len 512.
"""
import sys

from tokenizers import Tokenizer

SWEEP_PER_TEXT = 16


def unescape(line):
    """Decodes the escapes of the sentence file (see the module comment)."""
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = line[i + 1]
        if n == "x":
            end = line.index("}", i)
            out.append(chr(int(line[i + 3:end], 16)))
            i = end + 1
            continue
        out.append({"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}[n])
        i += 2
    return "".join(out)


def read_sentences(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return [unescape(line.rstrip("\n")) for line in f]


def encode(tk, text, max_len):
    """Returns (ids, truncated) for text cut to max_len ids, [SEP] kept."""
    tk.no_truncation()
    tk.no_padding()
    ids = tk.encode(text).ids
    if len(ids) <= max_len:
        return ids, False
    cut = ids[:max_len - 1] + [ids[-1]]
    tk.enable_truncation(max_len)
    assert tk.encode(text).ids == cut, "library truncation differs for %r" % text[:40]
    tk.no_truncation()
    return cut, True


def sweep_texts():
    """Every Unicode scalar value, 16 to a text, each inside a word."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(cps), SWEEP_PER_TEXT):
        yield " ".join("x" + chr(c) + "y" for c in cps[i:i + SWEEP_PER_TEXT])


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: tokenizer_reference.py TOKENIZER_JSON SENTENCES OUT")
    tk = Tokenizer.from_file(sys.argv[1])
    cases = [(t, 256) for t in read_sentences(sys.argv[2])]
    cases += [(t, 8) for t, _ in list(cases)]
    sweep = list(sweep_texts())
    with open(sys.argv[3], "w", encoding="ascii") as out:
        for text, max_len in cases:
            ids, cut = encode(tk, text, max_len)
            out.write("%s\t%d\t%d\t%s\n" % (text.encode("utf-8").hex(), max_len, int(cut),
                                            " ".join(map(str, ids))))
        tk.no_truncation()
        tk.no_padding()
        for text, enc in zip(sweep, tk.encode_batch(sweep)):
            assert len(enc.ids) <= 512
            out.write("%s\t512\t0\t%s\n" % (text.encode("utf-8").hex(),
                                             " ".join(map(str, enc.ids))))


if __name__ == "__main__":
    main()
