#!/usr/bin/env python3
"""Reference sizes and pixel values for tests/unit/test_image.c, from Pillow.

Decodes every image of ../shared/data/ocr and ../shared/data/ocr-real the way
worker/image.c promises to (and the Python OCR reference pipeline does):
EXIF orientation applied (ImageOps.exif_transpose), alpha composited onto
white as (c*a + 255*(255-a) + 127) // 255 (16-bit: in 16-bit, one rounding),
16-bit gray scaled by rounding v*255/65535 (Pillow's own I;16 -> L clips),
CMYK by Pillow's convert("RGB").  Prints the C table of the test.

    build/venv/bin/python tools/image_reference.py [SHARED_DIR]
    build/venv/bin/python tools/image_reference.py --compare DIR_OF_PPM [SHARED_DIR]
"""
import os
import sys

import numpy as np
from PIL import Image, ImageOps


def over_white8(c, a):
    return (c * a + 255 * (255 - a) + 127) // 255


def reference_rgb(path):
    """RGB uint8 array (h, w, 3) as worker/image.c should decode path."""
    im = Image.open(path)
    if im.format == "JPEG":
        # the worker reads EXIF orientation from JPEGs only (not PNG eXIf)
        im = ImageOps.exif_transpose(im)
    mode = im.mode
    if mode in ("I;16", "I;16B", "I"):
        v = np.array(im).astype(np.int64)
        g = (v * 255 + 32767) // 65535
        return np.repeat(g[..., None], 3, axis=2).astype(np.uint8)
    # a tRNS chunk is transparency for palette, gray and RGB PNGs alike
    if mode in ("P", "RGB") and "transparency" in im.info:
        im = im.convert("RGBA")
        mode = "RGBA"
    elif mode == "L" and "transparency" in im.info:
        im = im.convert("LA")
        mode = "LA"
    if mode == "LA":
        a = np.array(im).astype(np.int64)
        g = over_white8(a[..., 0], a[..., 1])
        return np.repeat(g[..., None], 3, axis=2).astype(np.uint8)
    if mode == "RGBA":
        a = np.array(im).astype(np.int64)
        return over_white8(a[..., :3], a[..., 3:4]).astype(np.uint8)
    return np.array(im.convert("RGB"))


def raw_info(path):
    """(mode, alpha or 16-bit array or None) of the stored image, no transpose."""
    im = Image.open(path)
    if im.mode in ("RGBA", "LA"):
        return im.mode, np.array(im)[..., -1]
    if im.mode == "I;16":
        return im.mode, np.array(im).astype(np.int64)
    return im.mode, None


def pick_samples(path, ref):
    """A few (x, y) positions per image: corners and centre, plus positions
    that tell right from wrong for the image's kind."""
    h, w = ref.shape[:2]
    pts = [(0, 0), (w - 1, 0), (0, h - 1), (w // 2, h // 2)]
    mode, extra = raw_info(path)
    flat = ref.astype(np.int64).sum(axis=2)
    if mode in ("RGBA", "LA"):
        for cond in (extra == 0, extra == 255, (extra > 0) & (extra < 255)):
            ys, xs = np.nonzero(cond)
            if len(ys):
                i = len(ys) // 2
                pts.append((int(xs[i]), int(ys[i])))
    elif mode == "I;16":
        # values where rounding and truncation (>> 8) give different bytes
        v = extra
        differs = ((v * 255 + 32767) // 65535) != (v >> 8)
        ys, xs = np.nonzero(differs & (v < 40000))
        if len(ys):
            pts.append((int(xs[len(ys) // 2]), int(ys[len(ys) // 2])))
        ys, xs = np.nonzero(differs & (v >= 40000))
        if len(ys):
            pts.append((int(xs[len(ys) // 3]), int(ys[len(ys) // 3])))
    if mode in ("CMYK", "P", "LA", "RGBA", "I;16") or "exif" in path:
        # darkest pixel (text) and a saturated one
        y, x = np.unravel_index(np.argmin(flat), flat.shape)
        pts.append((int(x), int(y)))
        sat = ref.astype(np.int64).max(axis=2) - ref.astype(np.int64).min(axis=2)
        y, x = np.unravel_index(np.argmax(sat), sat.shape)
        pts.append((int(x), int(y)))
    if "exif" in path:
        pts.append((w // 5, h // 7))
        pts.append((w - 1 - w // 6, h // 4))
    out = []
    for p in pts:
        if p not in out:
            out.append(p)
    return out[:8]


def images(shared):
    for sub in ("data/ocr", "data/ocr-real"):
        d = os.path.join(shared, sub)
        for name in sorted(os.listdir(d)):
            if name.endswith((".png", ".jpg")):
                yield sub.split("/")[1] + "/" + name, os.path.join(d, name)


def main():
    args = sys.argv[1:]
    compare = None
    if args and args[0] == "--compare":
        compare = args[1]
        args = args[2:]
    shared = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "shared")
    worst = 0
    for rel, path in images(shared):
        ref = reference_rgb(path)
        h, w = ref.shape[:2]
        if compare:
            got = np.array(Image.open(os.path.join(compare, os.path.basename(path) + ".ppm")))
            if got.shape != ref.shape:
                print(f"{rel}: shape {got.shape} != {ref.shape}")
                worst = 999
                continue
            d = np.abs(got.astype(int) - ref.astype(int))
            worst = max(worst, int(d.max()))
            print(f"{rel}: max diff {d.max()}, differing {np.mean(d > 0) * 100:.3f}%")
            continue
        samples = pick_samples(path, ref)
        cells = ", ".join(f"{{{x}, {y}, {{{ref[y, x, 0]}, {ref[y, x, 1]}, {ref[y, x, 2]}}}}}"
                          for x, y in samples)
        print(f'\t{{"{rel}", {w}, {h}, {len(samples)}, {{{cells}}}}},')
    if compare:
        print(f"worst difference: {worst}")


if __name__ == "__main__":
    main()
