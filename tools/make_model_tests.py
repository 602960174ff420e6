#!/usr/bin/env python3
"""Build ONNX-style test folders for the three OCR models.

For each model and each of a few images from the OCR test set this writes
OUT/<model>_<image>/ with model.onnx (a symlink to the model file) and
test_data_set_0/{input_0.pb, output_0.pb}: a real input tensor made from the
image the way the OCR pipeline prepares it, and the reference output from
ONNX Runtime on the CPU.  tests/onnx/conformance.c (--dir OUT --metric rel-l2)
then compares the engine against those references.

Inputs (all NCHW float32, normalised (x/255 - 0.5) / 0.5, BGR as RapidOCR):
  det: the whole image, resized so that both sides are multiples of 32 and
       the longer side is at most --det-max (default 960);
  cls: three crops of the image, each resized to 3x48x192 (batch 3);
  rec: two crops, each resized to 3x48x320 (batch 2).

With --also DIR the same inputs also go through DIR's copies of the models
(tests named alt_<model>_<image>).  Run with build/venv/bin/python (numpy, opencv, onnx, onnxruntime).
"""
import argparse
import os
import sys

import cv2
import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

MODELS = {
    "det": "ch_PP-OCRv4_det_infer.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "rec": "ch_PP-OCRv4_rec_infer.onnx",
}
IMAGES = ["p01_web_docs.png", "p02_receipt_bakery.png", "p05_street_sign.jpg"]


def normalise(img):
    """HxWx3 uint8 -> 3xHxW float32 in [-1, 1]."""
    x = img.astype(np.float32) / 255.0
    x = (x - 0.5) / 0.5
    return x.transpose(2, 0, 1)


def det_input(img, max_side):
    """The whole image, sides rounded to multiples of 32, longer side <= max_side."""
    h, w = img.shape[:2]
    r = min(1.0, float(max_side) / max(h, w))
    nh = max(32, int(round(h * r / 32.0)) * 32)
    nw = max(32, int(round(w * r / 32.0)) * 32)
    resized = cv2.resize(img, (nw, nh))
    return normalise(resized)[None]


def crops(img, n, aspect):
    """n horizontal strips of the image with width/height about `aspect`."""
    h, w = img.shape[:2]
    ch = max(8, min(h // (n + 1), int(w / aspect)))
    cw = min(w, int(ch * aspect))
    out = []
    for i in range(n):
        y = min(h - ch, (i + 1) * h // (n + 2))
        x = (i * w // (3 * n)) if cw < w else 0
        x = min(x, w - cw)
        out.append(img[y:y + ch, x:x + cw])
    return out


def crop_batch(img, n, height, width):
    """n crops resized to height x width, as an n x 3 x height x width batch."""
    batch = [normalise(cv2.resize(c, (width, height)))
             for c in crops(img, n, width / float(height))]
    return np.stack(batch).astype(np.float32)


def write_test(out_dir, name, model_path, x):
    """One test folder: model symlink, input_0.pb, output_0.pb from ORT."""
    tdir = os.path.join(out_dir, name)
    dset = os.path.join(tdir, "test_data_set_0")
    os.makedirs(dset, exist_ok=True)
    link = os.path.join(tdir, "model.onnx")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(model_path), link)
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    outs = sess.run(None, feed)
    with open(os.path.join(dset, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, sess.get_inputs()[0].name).SerializeToString())
    for j, y in enumerate(outs):
        with open(os.path.join(dset, "output_%d.pb" % j), "wb") as f:
            f.write(numpy_helper.from_array(
                np.ascontiguousarray(y), sess.get_outputs()[j].name).SerializeToString())
    print("make_model_tests: %s input %s -> output %s" %
          (name, list(x.shape), [list(o.shape) for o in outs]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--images", default="../shared/data/ocr")
    ap.add_argument("--out", default="build/model-tests")
    ap.add_argument("--det-max", type=int, default=960)
    ap.add_argument("--also", metavar="DIR",
                    help="another folder with the same three model files (other "
                         "exports, e.g. ../shared/models); its tests are prefixed 'alt_'")
    args = ap.parse_args()

    ort.set_default_logger_severity(3)
    os.makedirs(args.out, exist_ok=True)
    model_dirs = [("", args.models)]
    if args.also and os.path.isdir(args.also):
        model_dirs.append(("alt_", args.also))
    for _, mdir in model_dirs:
        for fname in MODELS.values():
            model_path = os.path.join(mdir, fname)
            if not os.path.exists(model_path):
                sys.exit("make_model_tests: missing model %s (run `make models`)" % model_path)
            onnx.checker.check_model(model_path)
    for image in IMAGES:
        path = os.path.join(args.images, image)
        img = cv2.imread(path, cv2.IMREAD_COLOR)
        if img is None:
            sys.exit("make_model_tests: cannot read image %s" % path)
        stem = os.path.splitext(image)[0].split("_")[0]
        inputs = {
            "det": det_input(img, args.det_max),
            "cls": crop_batch(img, 3, 48, 192),
            "rec": crop_batch(img, 2, 48, 320),
        }
        for prefix, mdir in model_dirs:
            for key, fname in MODELS.items():
                write_test(args.out, "%s%s_%s" % (prefix, key, stem),
                           os.path.join(mdir, fname), inputs[key])

if __name__ == "__main__":
    main()
