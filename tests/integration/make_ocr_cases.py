#!/usr/bin/env python3
"""Writes OCR test images made at test time, and their manifest.tsv.

Usage: make_ocr_cases.py SHARED_OCR_FOLDER FOLDER

check-ocr compares infer-ocr with RapidOCR (fed as worker/image.c
decodes: tools/rapidocr_reference.py) on them as on the shared images:
  - thin strips of one text line (PNG), black text on white,
    WIDTHxHEIGHT pixels with HEIGHT from 14 to 20: so thin that RapidOCR
    raises the short side to 30 pixels and the long side grows past 2000
    (worker/ocr.c, "Not RapidOCR's": the long side is brought back only
    past the detector's 4000-pixel cap).  The font is Pillow's own
    (ImageFont.load_default at a size, a pinned wheel:
    tools/requirements.txt), so the pixels are the same on every machine;
  - a shared page (p17_session_notice.png) as a JPEG turned by an EXIF
    Orientation tag stored as a LONG (the standard says SHORT; Pillow
    and the worker apply both), as an inverted RGB PNG whose tRNS chunk
    makes black transparent (composited on white), and as a PNG whose
    eXIf chunk asks for a turn (not applied: the page reads as stored).
"""
import io
import os
import struct
import sys

from PIL import Image, ImageDraw, ImageFont, ImageOps

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


PAGE = "p17_session_notice.png"
PAGE_TEXT = ("Your session will expire in 5 minutes.\\nSave your work to avoid "
             "losing changes.\\nExtend session")


def exif_long_orientation(value):
    """An APP1 "Exif" payload whose IFD0 holds Orientation as a LONG."""
    tiff = b"MM" + struct.pack(">HI", 42, 8) + struct.pack(">H", 1)
    tiff += struct.pack(">HHII", 0x0112, 4, 1, value) + struct.pack(">I", 0)
    return b"Exif\0\0" + tiff


def page_cases(shared, out, rows):
    """The p17 variants (see the module's doc) into out, rows appended."""
    page = Image.open(os.path.join(shared, PAGE)).convert("RGB")
    # JPEG stored turned 90 degrees counter-clockwise; orientation 6
    # (turn 90 degrees clockwise to display) makes it upright
    stored = page.transpose(Image.Transpose.ROTATE_90)
    buf = io.BytesIO()
    stored.save(buf, "JPEG", quality=95)
    data = buf.getvalue()
    app1 = exif_long_orientation(6)
    data = data[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + data[2:]
    with open(os.path.join(out, "page_exif6_long.jpg"), "wb") as f:
        f.write(data)
    rows.append("page_exif6_long.jpg\tgenerated\t" + PAGE_TEXT)
    # white text on black, black transparent: over white, black text
    inverted = ImageOps.invert(page)
    inverted.save(os.path.join(out, "page_trns_key.png"), transparency=(0, 0, 0))
    rows.append("page_trns_key.png\tgenerated\t" + PAGE_TEXT)
    # an eXIf chunk asking for orientation 3 (180 degrees): not applied
    exif = Image.Exif()
    exif[0x0112] = 3
    page.save(os.path.join(out, "page_png_exif3.png"), exif=exif)
    rows.append("page_png_exif3.png\tgenerated\t" + PAGE_TEXT)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    shared, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rows = ["file\tkind\ttext"]
    page_cases(shared, out, rows)
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
