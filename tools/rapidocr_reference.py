#!/usr/bin/env python3
"""Compare infer-ocr with RapidOCR 1.4.4 (the reference) on the test images.

For every image listed in the manifests of the OCR data folders:
  - decode it with Pillow the way worker/image.c does (EXIF orientation
    applied, 16-bit samples rounded to 8 bits, alpha composited on white,
    palette / CMYK / grey converted to RGB), turn it into a BGR array and
    run rapidocr_onnxruntime.RapidOCR on it with the models in --models;
  - run infer-ocr (one process for all images, --json);
  - CER (Levenshtein distance / reference length; lines joined by one space,
    white space collapsed; an empty reference gives 0 for an empty answer
    and 1 otherwise) of ours against RapidOCR's text, and of both against
    the manifest's ground truth.
An image passes when CER(ours, RapidOCR) <= --max-cer (0.02).  One more
check: mean CER(ours, truth) <= mean CER(RapidOCR, truth) + 0.01.
Prints a table and "ocr-vs-rapidocr: N passed, M failed"; exits 1 on any
failure.  RapidOCR's answers are cached (keyed by the file's SHA-1) in
--cache, so reruns only run infer-ocr.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cer import cer, manifest_rows, normalize  # noqa: E402

# Where the same real images live when their Debian packages are installed;
# used only for images missing from the shared folder.
SYSTEM_DIRS = [
    "/usr/share/doc/opencv-doc/examples/text",
    "/usr/share/doc/opencv-doc/examples/data",
    "/usr/lib/python3/dist-packages/skimage/data",
]


def load_manifest(folder):
    """(file name, ground truth text) rows of folder/manifest.tsv."""
    path = os.path.join(folder, "manifest.tsv")
    return manifest_rows(path) if os.path.exists(path) else []


def find_images(folders):
    """[(path, truth)] for every manifest entry whose file can be found."""
    out = []
    for folder in folders:
        for name, truth in load_manifest(folder):
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                for d in SYSTEM_DIRS:
                    alt = os.path.join(d, name)
                    if os.path.exists(alt):
                        path = alt
                        break
            if os.path.exists(path):
                out.append((path, truth))
            else:
                print("warning: %s not found" % name, file=sys.stderr)
    return out


def decode_like_worker(path):
    """BGR uint8 array of the image as worker/image.c decodes it."""
    import numpy as np
    from PIL import Image, ImageOps

    im = Image.open(path)
    if im.format == "JPEG":
        # the worker reads EXIF orientation from JPEGs only (not PNG eXIf)
        im = ImageOps.exif_transpose(im)
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        a = np.asarray(im).astype(np.float64)
        a = np.clip(np.round(a * 255.0 / 65535.0), 0, 255).astype(np.uint8)
        im = Image.fromarray(a, "L")
    # a tRNS chunk is transparency for palette, gray and RGB PNGs alike
    has_alpha = im.mode in ("RGBA", "LA", "PA") or (
        im.mode in ("P", "L", "RGB") and "transparency" in im.info)
    if has_alpha:
        im = im.convert("RGBA")
        bg = Image.new("RGBA", im.size, (255, 255, 255, 255))
        bg.alpha_composite(im)
        im = bg.convert("RGB")
    else:
        im = im.convert("RGB")
    rgb = np.asarray(im, dtype=np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1])


def sha1(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def rapidocr_texts(images, models, cache_path):
    """{path: text} from RapidOCR, cached by content hash."""
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8") as f:
            cache = json.load(f)
    todo = [(p, sha1(p)) for p, _ in images]
    engine = None
    out = {}
    for path, key in todo:
        if key not in cache:
            if engine is None:
                from rapidocr_onnxruntime import RapidOCR
                engine = RapidOCR(
                    det_model_path=os.path.join(models, "ch_PP-OCRv4_det_infer.onnx"),
                    cls_model_path=os.path.join(models, "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                    rec_model_path=os.path.join(models, "ch_PP-OCRv4_rec_infer.onnx"))
            result, _ = engine(decode_like_worker(path))
            lines = [r[1] for r in result] if result else []
            cache[key] = {"file": os.path.basename(path), "lines": lines}
        out[path] = "\n".join(cache[key]["lines"])
    os.makedirs(os.path.dirname(os.path.abspath(cache_path)), exist_ok=True)
    with open(cache_path, "w", encoding="utf-8") as f:
        json.dump(cache, f, ensure_ascii=False, indent=1)
    return out


def our_texts(images, binary, models, threads):
    """{path: (text, ms)} from one infer-ocr --json run."""
    cmd = [binary, "--model-dir", models, "--json", "--threads", str(threads)]
    cmd += [p for p, _ in images]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    out = {}
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        out[rec["file"]] = ("\n".join(l["text"] for l in rec["lines"]), rec["ms"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--bin", default="build/bin/infer-ocr")
    ap.add_argument("--cache", default="build/ocr-reference/rapidocr.json")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-cer", type=float, default=0.02)
    ap.add_argument("--verbose", action="store_true",
                    help="print both texts for images that fail")
    ap.add_argument("folders", nargs="*",
                    default=["../shared/data/ocr", "../shared/data/ocr-real"])
    args = ap.parse_args()

    images = find_images(args.folders)
    if not images:
        print("ocr-vs-rapidocr: 0 passed, 1 failed (no images found)")
        return 1
    t0 = time.time()
    ref = rapidocr_texts(images, args.models, args.cache)
    t1 = time.time()
    ours = our_texts(images, args.bin, args.models, args.threads)
    t2 = time.time()

    passed = failed = 0
    sum_ours = sum_rapid = 0.0
    print("%-34s %9s %9s %9s %8s" % ("file", "ours/rap", "ours/gt", "rap/gt", "ms"))
    for path, truth in images:
        name = os.path.basename(path)
        if path not in ours:
            print("%-34s %9s" % (name, "NO OUTPUT"))
            failed += 1
            continue
        text, ms = ours[path]
        c_or = cer(text, ref[path])
        c_ot = cer(text, truth)
        c_rt = cer(ref[path], truth)
        sum_ours += c_ot
        sum_rapid += c_rt
        ok = c_or <= args.max_cer
        passed += ok
        failed += not ok
        print("%-34s %9.4f %9.4f %9.4f %8.0f%s" % (name, c_or, c_ot, c_rt, ms,
                                                 "" if ok else "  FAIL"))
        if not ok and args.verbose:
            print("    ours:     %r" % normalize(text))
            print("    rapidocr: %r" % normalize(ref[path]))
    n = len(images)
    mean_ours, mean_rapid = sum_ours / n, sum_rapid / n
    ok = mean_ours <= mean_rapid + 0.01
    passed += ok
    failed += not ok
    print("mean CER vs ground truth: ours %.4f, RapidOCR %.4f (%s)" %
          (mean_ours, mean_rapid, "ok" if ok else "FAIL: ours worse by > 0.01"))
    print("time: RapidOCR %.1f s (cached after the first run), infer-ocr %.1f s "
          "for %d images" % (t1 - t0, t2 - t1, n))
    print("ocr-vs-rapidocr: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
