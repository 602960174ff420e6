#!/usr/bin/env python3
"""Writes thin strips of one text line (PNG) and their manifest.tsv.

Usage: make_thin_strips.py FOLDER

Each strip is black text on white, WIDTHxHEIGHT pixels with HEIGHT from
14 to 20: so thin that RapidOCR raises the short side to 30 pixels and
the long side grows past 2000 (worker/ocr.c, "Not RapidOCR's": the long
side is brought back only past the detector's 4000-pixel cap).
check-ocr compares infer-ocr with RapidOCR on them as on the shared
images.  The font is Pillow's own (ImageFont.load_default at a size, a
pinned wheel: tools/requirements.txt), so the pixels are the same on
every machine.
"""
import os
import sys

from PIL import Image, ImageDraw, ImageFont

# (file, width, height, text): the texts fit their strips at height - 3
STRIPS = [
    ("thin_2000x15.png", 2000, 15,
     "Total amount due by 2024-12-31: 1,234.56 EUR, reference INV-000117, "
     "payable to Example Bank"),
    ("thin_1400x14.png", 1400, 14,
     "Order 2024-117 was sent on 14 May at 08:42 by courier"),
    ("thin_2000x20.png", 2000, 20,
     "Thank you for your order, questions to help@example.org"),
]


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows = ["file\tkind\ttext"]
    for name, w, h, text in STRIPS:
        font = ImageFont.load_default(size=h - 3)
        img = Image.new("RGB", (w, h), "white")
        draw = ImageDraw.Draw(img)
        top = draw.textbbox((0, 0), text, font=font)[1]
        draw.text((10, (h - (h - 3)) // 2 - top), text, font=font, fill="black")
        img.save(os.path.join(out, name))
        rows.append("%s\tthin\t%s" % (name, text))
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
