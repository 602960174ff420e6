#!/usr/bin/env python3
"""gen_tokenizer_unicode.py [--check] [UCD_DIR] > worker/tokenizer_unicode.h

Generates the Unicode tables of worker/tokenizer.c from the Unicode Character
Database files of Debian's unicode-data package (UCD_DIR, default
/usr/share/unicode: UnicodeData.txt, DerivedAge.txt, PropList.txt,
SpecialCasing.txt; Unicode 15.0.0 in Debian 12).

The tokenizer must give the ids of Hugging Face `tokenizers` (BertNormalizer,
BertPreTokenizer), which mixes Unicode versions; the tables reproduce that
mix (each point was found, and is re-checked, by --check below):

  - control characters (dropped by clean_text: Cc, Cf, Co, Cs), nonspacing
    marks (dropped by strip_accents: Mn) and punctuation (P*, split off by
    the pre-tokenizer) come from the crate unicode_categories 0.1.1, whose
    tables are Unicode 8.0: characters assigned after 8.0 (DerivedAge) have
    none of these properties, and the six characters whose General_Category
    changed since 8.0 keep their 8.0 category (CATEGORY_8_0 below);
  - white space is Rust's char::is_whitespace (White_Space, PropList.txt);
  - lower-casing is Rust's char::to_lowercase (UnicodeData simple mapping,
    SpecialCasing.txt's unconditional entries);
  - NFD comes from the crate unicode-normalization-alignments, whose data
    are Unicode 9.0: decompositions and combining classes of characters
    assigned after 9.0 are left out (U+11938, 13.0, is not decomposed;
    marks of 10.0 and later are not reordered).
  - Known difference: the lower-case pairs added in Unicode 16.0 (Rust's
    tables are newer than Debian's UCD) are missing here; none of those
    characters or their lower-case forms is in the BERT vocabulary, so the
    ids are the same (the code point sweep of tests/text checks this).

--check compares these rules, per code point, with the installed `tokenizers`
(normalizer and pre-tokenizer of a BERT uncased tokenizer), including
canonical reordering of mark pairs, and prints every difference.
"""
import os
import sys

CATEGORY_8_0 = {
    0x166D: "Po",   # CANADIAN SYLLABICS CHI SIGN: So since Unicode 12.0
    0x1734: "Mn",   # HANUNOO SIGN PAMUDPOD: Mc since Unicode 14.0
    0x1885: "Lo",   # MONGOLIAN LETTER ALI GALI BALUDA: Mn since Unicode 9.0
    0x1886: "Lo",   # MONGOLIAN LETTER ALI GALI THREE BALUDA: Mn since Unicode 9.0
    0xA9BD: "Mc",   # JAVANESE CONSONANT SIGN KERET: Mn since Unicode 12.0
    0x111C9: "Po",  # SHARADA SANDHI MARK: Mn since Unicode 11.0
}
CATEGORY_AGE = (8, 0)
NFD_AGE = (9, 0)

FLAG_CTRL, FLAG_WS, FLAG_PUNCT, FLAG_MN = 1, 2, 4, 8


def ranges_of(line):
    a = line.split(";")[0].strip()
    if ".." in a:
        lo, hi = a.split("..")
        return int(lo, 16), int(hi, 16)
    return int(a, 16), int(a, 16)


def data_lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                yield line


class UCD:
    def __init__(self, d):
        self.cat, self.ccc, self.dec, self.low, self.age = {}, {}, {}, {}, {}
        self.ws = set()
        first = None
        for line in data_lines(os.path.join(d, "UnicodeData.txt")):
            f = line.split(";")
            c = int(f[0], 16)
            if f[1].endswith("First>"):
                first = c
                continue
            lo = first if f[1].endswith("Last>") else c
            for x in range(lo, c + 1):
                self.cat[x] = f[2]
            if int(f[3]):
                self.ccc[c] = int(f[3])
            if f[5] and not f[5].startswith("<"):
                self.dec[c] = [int(x, 16) for x in f[5].split()]
            if f[13]:
                self.low[c] = [int(f[13], 16)]
        for line in data_lines(os.path.join(d, "SpecialCasing.txt")):
            f = [x.strip() for x in line.split(";")]
            if len(f) > 4 and f[4]:
                continue  # conditional (language or context): Rust ignores these
            c = int(f[0], 16)
            low = [int(x, 16) for x in f[1].split()]
            if low != [c]:
                self.low[c] = low
        for line in data_lines(os.path.join(d, "DerivedAge.txt")):
            lo, hi = ranges_of(line)
            v = tuple(int(x) for x in line.split(";")[1].strip().split("."))
            for x in range(lo, hi + 1):
                self.age[x] = v
        for line in data_lines(os.path.join(d, "PropList.txt")):
            if line.split(";")[1].strip() == "White_Space":
                lo, hi = ranges_of(line)
                self.ws.update(range(lo, hi + 1))

    def assigned_by(self, c, v):
        return c in self.age and self.age[c] <= v

    def cat8(self, c):
        if c in CATEGORY_8_0:
            return CATEGORY_8_0[c]
        return self.cat.get(c, "Cn") if self.assigned_by(c, CATEGORY_AGE) else "Cn"

    def flags(self, c):
        f = 0
        cat = self.cat8(c)
        if cat in ("Cc", "Cf", "Co", "Cs") and c not in (9, 10, 13):
            f |= FLAG_CTRL
        if c in self.ws:
            f |= FLAG_WS
        if cat.startswith("P") or (c < 128 and chr(c) in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"):
            f |= FLAG_PUNCT
        if cat == "Mn":
            f |= FLAG_MN
        return f

    def ccc_of(self, c):
        return self.ccc.get(c, 0) if self.assigned_by(c, NFD_AGE) else 0

    def decompose(self, c):
        """Full canonical decomposition (Hangul syllables excluded: the C
        code decomposes them arithmetically)."""
        if c not in self.dec or not self.assigned_by(c, NFD_AGE):
            return [c]
        return [y for x in self.dec[c] for y in self.decompose(x)]

    # --- the algorithm, as worker/tokenizer.c runs it, for --check ---
    def nfd(self, cps):
        out = []
        for c in cps:
            if 0xAC00 <= c <= 0xD7A3:
                s = c - 0xAC00
                out += [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
                if s % 28:
                    out.append(0x11A7 + s % 28)
            else:
                out += self.decompose(c)
        i = 0
        while i < len(out):
            if not self.ccc_of(out[i]):
                i += 1
                continue
            j = i
            while j < len(out) and self.ccc_of(out[j]):
                j += 1
            out[i:j] = sorted(out[i:j], key=self.ccc_of)
            i = j
        return out

    def normalize(self, text):
        cps = []
        for c in map(ord, text):
            if c == 0 or c == 0xFFFD or self.flags(c) & FLAG_CTRL:
                continue
            if c in self.ws:
                cps.append(32)
            elif is_chinese(c):
                cps += [32, c, 32]
            else:
                cps.append(c)
        cps = [c for c in self.nfd(cps) if not self.flags(c) & FLAG_MN]
        return "".join(chr(y) for c in cps for y in self.low.get(c, [c]))


def is_chinese(c):
    return (0x4E00 <= c <= 0x9FFF or 0x3400 <= c <= 0x4DBF or 0x20000 <= c <= 0x2A6DF
            or 0x2A700 <= c <= 0x2B73F or 0x2B740 <= c <= 0x2B81F or 0x2B920 <= c <= 0x2CEAF
            or 0xF900 <= c <= 0xFAFF or 0x2F800 <= c <= 0x2FA1F)


def check(u):
    from tokenizers import normalizers, pre_tokenizers
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                      strip_accents=None, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    bad = 0
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        want, got = norm.normalize_str(ch), u.normalize(ch)
        if want != got:
            bad += 1
            print("normalize U+%04X: tokenizers %r, tables %r" % (c, want, got))
        want = [w for w, _ in pre.pre_tokenize_str("a" + ch + "b")]
        fl = u.flags(c)
        got = ["a", "b"] if fl & FLAG_WS else ["a", ch, "b"] if fl & FLAG_PUNCT else ["a" + ch + "b"]
        if want != got:
            bad += 1
            print("pre-tokenize U+%04X: tokenizers %r, tables %r" % (c, want, got))
    # Canonical reordering: every character with a combining class, before
    # and after marks of other classes (one of them a spacing mark, Mc,
    # that survives accent stripping).
    marks = [0x0301, 0x0316, 0x0334, 0x05B0, 0x1D165, 0x1D16D, 0x0F39]
    for c in sorted(set(u.ccc) | set(CATEGORY_8_0)):
        for m in marks:
            for s in ("e" + chr(c) + chr(m) + "x", "e" + chr(m) + chr(c) + "x"):
                want, got = norm.normalize_str(s), u.normalize(s)
                if want != got:
                    bad += 1
                    print("normalize %r: tokenizers %r, tables %r" % (s, want, got))
    print("check: %d differences" % bad, file=sys.stderr)
    return bad


def ranges(pairs):
    """Merges (code point, value) pairs, sorted, into (lo, hi, value) runs."""
    out = []
    for c, v in pairs:
        if out and out[-1][1] == c - 1 and out[-1][2] == v:
            out[-1][1] = c
        else:
            out.append([c, c, v])
    return out


def emit(u, src):
    w = sys.stdout.write
    props = ranges((c, u.flags(c)) for c in range(0x110000) if u.flags(c))
    low = sorted(u.low.items())
    dec = [(c, u.decompose(c)) for c in sorted(u.dec) if u.decompose(c) != [c]]
    ccc = ranges((c, u.ccc_of(c)) for c in sorted(u.ccc) if u.ccc_of(c))
    maxdec = max(len(d) for _, d in dec)
    w("/*\n * tokenizer_unicode.h\n *\t\tUnicode tables of worker/tokenizer.c.  GENERATED by\n"
      " *\t\ttools/gen_tokenizer_unicode.py from %s (Unicode 15.0.0,\n"
      " *\t\tDebian's unicode-data); do not edit.  That script says which Unicode\n"
      " *\t\tversion each table follows to give the ids of Hugging Face tokenizers.\n"
      " *\n *\t\tIncluded by worker/tokenizer.c only; read-only data, thread-safe.\n */\n" % src)
    w("#ifndef TOKENIZER_UNICODE_H\n#define TOKENIZER_UNICODE_H\n\n#include <stdint.h>\n\n")
    w("#define TOKU_CTRL\t%d\t/* dropped by clean_text (Cc Cf Co Cs, Unicode 8.0) */\n" % FLAG_CTRL)
    w("#define TOKU_WS\t\t%d\t/* White_Space */\n" % FLAG_WS)
    w("#define TOKU_PUNCT\t%d\t/* P* (Unicode 8.0) or ASCII punctuation */\n" % FLAG_PUNCT)
    w("#define TOKU_MN\t\t%d\t/* Mn (Unicode 8.0): dropped when stripping accents */\n" % FLAG_MN)
    w("#define TOKU_MAX_DECOMP\t%d\t/* longest full canonical decomposition */\n\n" % maxdec)
    w("typedef struct { uint32_t lo, hi; uint8_t val; } toku_range;\n")
    w("typedef struct { uint32_t cp; uint16_t off; uint8_t len; } toku_map;\n\n")
    w("/* Property flags, sorted runs; code points not listed have none. */\n")
    w("static const toku_range toku_props[] = {\n")
    for lo, hi, v in props:
        w("\t{0x%04X, 0x%04X, %d},\n" % (lo, hi, v))
    w("};\n\n/* Canonical combining class (Unicode 9.0), sorted runs; others 0. */\n")
    w("static const toku_range toku_ccc[] = {\n")
    for lo, hi, v in ccc:
        w("\t{0x%04X, 0x%04X, %d},\n" % (lo, hi, v))
    for name, rows, what in (("lower", low, "Full lower-case mapping"),
                             ("decomp", dec, "Full canonical decomposition (Unicode 9.0; "
                                             "Hangul syllables arithmetically)")):
        pool = []
        w("};\n\n/* %s: code point, offset and length in toku_%s_pool. */\n" % (what, name))
        w("static const toku_map toku_%s[] = {\n" % name)
        for c, seq in rows:
            w("\t{0x%04X, %d, %d},\n" % (c, len(pool), len(seq)))
            pool += seq
        w("};\n\nstatic const uint32_t toku_%s_pool[] = {\n" % name)
        for i in range(0, len(pool), 8):
            w("\t" + " ".join("0x%04X," % x for x in pool[i:i + 8]) + "\n")
    w("};\n\n#endif\t\t\t\t\t\t\t/* TOKENIZER_UNICODE_H */\n")


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    d = args[0] if args else "/usr/share/unicode"
    u = UCD(d)
    if "--check" in sys.argv:
        sys.exit(1 if check(u) else 0)
    emit(u, os.path.join(d, "UnicodeData.txt"))


if __name__ == "__main__":
    main()
