"""Character error rate, as DESIGN.md defines it for pg_infer's OCR.

CER = Levenshtein distance between the recognised text and the ground
truth, each with its lines joined by one space and runs of white space
collapsed, over the length of the ground truth.  For an empty ground truth
it is 0 when nothing was recognised and 1 otherwise.
"""
import re


def normalize(text):
    """Lines joined by one space, white space runs collapsed, trimmed.
    Accepts real newlines and the two-character "\\n" of manifest files."""
    text = text.replace("\\n", "\n")
    return re.sub(r"\s+", " ", text).strip()


def levenshtein(a, b):
    """Edit distance (insert, delete, substitute; all cost 1) over code points."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(hyp, ref):
    """CER of hyp against ref (both raw texts; normalised here)."""
    hyp, ref = normalize(hyp or ""), normalize(ref or "")
    if not ref:
        return 0.0 if not hyp else 1.0
    return levenshtein(hyp, ref) / len(ref)


def manifest_rows(path):
    """[(file, text)] of a manifest.tsv (columns file, kind, text; lines of
    text joined by a literal backslash-n, returned with real newlines)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = header.index("text")
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields and fields[0]:
                text = fields[col] if len(fields) > col else ""
                rows.append((fields[0], text.replace("\\n", "\n")))
    return rows


def read_manifest(path):
    """{file: text} of a manifest.tsv, as manifest_rows gives them."""
    return dict(manifest_rows(path))
