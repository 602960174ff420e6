#!/usr/bin/env python3
"""make_sentences.py > tests/text/sentences.txt

Builds the tokenizer test set from real text that Debian 12 packages install
(see tests/text/README.md for the packages and their licences):

  - PostgreSQL 15's message catalogues (postgresql-15, PostgreSQL Licence):
    English messages and their German, French, Russian, Ukrainian, Spanish,
    Italian, Swedish, Japanese, Chinese (simplified, traditional) and Korean
    translations;
  - GLib's catalogues (libglib2.0-data, LGPL-2.1+): Greek, Arabic, Hebrew,
    Hindi, Thai, Vietnamese, Turkish, Polish and Czech translations;
  - APT's catalogues (apt, GPL-2+): multi-line messages (newlines inside);
  - the GPL-3 and Apache-2.0 texts (/usr/share/common-licenses): long texts
    (over 256 tokens) with CR LF line ends;
  - Unicode's emoji-test.txt (unicode-data, Unicode licence): emoji (ZWJ
    sequences, flags, skin tones, keycaps) appended to real messages;
  - EDGE_CASES below, written for this test: empty and blank texts, control
    and format characters, literal special tokens, decomposed accents, long
    words, CJK compatibility ideographs and other corners of BertNormalizer.

Writes one text a line with the escapes of tools/tokenizer_reference.py.
Deterministic: the same packages give the same file.
"""
import gettext
import os
import sys
import unicodedata

LOCALE = "/usr/share/locale/%s/LC_MESSAGES/%s.mo"

EDGE_CASES = [
    "",
    "",
    " ",
    "\t\r\n",
    "\r\n\r\n",
    "Hello\x00World",
    "bell\x07 and escape\x1b[0m codes",
    "zero\u200bwidth\u200djoiner and soft\u00adhyphen",
    "\ufeffbyte order mark at the start",
    "replacement \ufffd character",
    "private use \ue000\uf8ff and \U000f0000",
    "no-break\u00a0space, ideographic\u3000space, thin\u2009space, line\u2028separator",
    "Mask a [MASK] word, [SEP] in the middle, [CLS][UNK][PAD] in a row, [mask] lower-case",
    "foo[MASK]bar and [MASK",
    "Cafe\u0301 nai\u0308ve re\u0301sume\u0301 (decomposed accents)",
    "Café naïve résumé (precomposed accents)",
    "İstanbul, ı, İ, ß, ẞ, Σίσυφος, ΣΊΣΥΦΟΣ",
    "Việt Nam: Tiếng Việt có nhiều dấu thanh như ầ, ẫ, ợ, ự",
    "ﬁnance ﬂow ligatures, ①②③, ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "𝐌𝐚𝐭𝐡 𝑖𝑡𝑎𝑙𝑖𝑐 and ℌ𝔢𝔩𝔩𝔬",
    "豈更車 CJK compatibility ideographs and 𠀀𠀁 extension B",
    "한국어 문장입니다. 한글 음절은 분해됩니다.",
    "ภาษาไทย ไม่มีช่องว่างระหว่างคำ",
    "हिन्दी में लिखा गया वाक्य।",
    "שָׁלוֹם עוֹלָם with niqqud",
    "https://www.postgresql.org/docs/15/sql-createindex.html?query=" + "a" * 120,
    "x" * 100,
    "x" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "C:\\Program Files\\PostgreSQL\\15\\bin\\psql.exe -U postgres",
    "SELECT id, infer.embed('minilm', body) FROM docs WHERE id < 10;",
    "e-mail: user@example.org, price: $9.99, 50% off, #hashtag, a_b, a~b, a^b, `code`",
    "«Guillemets» „Anführungszeichen“ “curly” ‘single’ — em dash – en dash … ellipsis",
    "¿Qué? ¡Sí! ・ 「日本語」 『引用』 【括弧】 〜",
    "ab\u0334\u0301c a\u0301\u0316 combining marks in non-canonical order",
    "Ǆemal ǅemal ǆemal titlecase digraphs",
    "ᏣᎳᎩ Cherokee, ⰀⰁ Glagolitic, Ꙁꙁ Cyrillic extended",
    "\u1734 \u166d \U000111c9 \u1885 \ua9bd \U00011938 characters whose category changed",
    "1234567890 3.14159 -42 1e10 0x1F",
    "..., !!!, ???, ---, ***",
    "a" + "\u0301" * 30,
    "Tab\tseparated\tvalues\r\nand\rcarriage\nreturns",
    "\x85next line and \x0bvertical tab and \x0cform feed",
]


def catalog(lang, domain):
    path = LOCALE % (lang, domain)
    with open(path, "rb") as f:
        cat = gettext.GNUTranslations(f)._catalog
    return {k: v for k, v in cat.items() if isinstance(k, str) and k and v}


def pick(items, n):
    """n items spread evenly over the sorted list."""
    items = sorted(items)
    if len(items) <= n:
        return items
    return [items[i * len(items) // n] for i in range(n)]


def fit(s, lo=25, hi=400):
    return lo <= len(s) <= hi


def escape(s):
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cs") or c == "\ufffd":
            out.append("\\x{%X}" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def emoji():
    seqs = []
    with open("/usr/share/unicode/emoji/emoji-test.txt", encoding="utf-8") as f:
        for line in f:
            if "; fully-qualified" in line:
                seqs.append("".join(chr(int(x, 16)) for x in line.split(";")[0].split()))
    return pick(seqs, 90)


def licence_texts(path, chunks, crlf):
    with open(path, encoding="utf-8") as f:
        paras = [p.strip() for p in f.read().split("\n\n") if p.strip()]
    out = []
    per = max(1, len(paras) // chunks)
    for i in range(0, per * chunks, per):
        text = "\n\n".join(paras[i:i + max(per, 6)])
        out.append(text.replace("\n", "\r\n") if crlf else text)
    return out


def main():
    texts = list(EDGE_CASES)
    pg_en = [k for k in catalog("de", "postgres-15") if fit(k)]
    english = pick(pg_en, 80)
    texts += english
    for lang in ("de", "fr", "ru", "uk", "es", "it", "sv", "ja", "zh_CN", "zh_TW", "ko"):
        cat = catalog(lang, "postgres-15")
        texts += pick([v for k, v in cat.items() if fit(k) and fit(v, 10)], 24)
    for lang in ("el", "ar", "he", "hi", "th", "vi", "tr", "pl", "cs"):
        cat = catalog(lang, "glib20")
        texts += pick([v for k, v in cat.items() if fit(k, 20) and fit(v, 10)], 16)
    apt = catalog("de", "apt")
    texts += pick([v for k, v in apt.items() if "\n" in v and fit(v, 40, 1500)], 15)
    em = emoji()
    for i, msg in enumerate(pick(pg_en, 30)):
        texts.append(msg + " " + "".join(em[3 * i:3 * i + 3]))
    texts += licence_texts("/usr/share/common-licenses/GPL-3", 8, crlf=True)
    texts += licence_texts("/usr/share/common-licenses/Apache-2.0", 4, crlf=False)
    sys.stdout.write("".join(escape(t) + "\n" for t in texts))
    print("%d texts" % len(texts), file=sys.stderr)


if __name__ == "__main__":
    main()
