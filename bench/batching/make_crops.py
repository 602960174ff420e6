"""Cuts text-line crops out of real images for bench/batching.

make_crops.py BOXES_TSV OUT_DIR

BOXES_TSV holds one line per image: its path, a tab, and the JSON that
infer-worker's detect_text fragment returned for it ([{"box": [[x, y] x4],
"score": s, "text": ""}, ...], box corners in the decoded image's pixels).
Each box's axis-aligned bounding rectangle, clipped to the image and at
least 8 pixels each way, is written to OUT_DIR as <image>_<k>.png: the
inputs the text-direction classifier sees in an OCR pipeline.  Prints the
number of crops written.  Needs OpenCV (the project's venv has it).
"""
import json
import os
import sys

import cv2


def main():
    boxes_tsv, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    with open(boxes_tsv, encoding="utf-8") as f:
        for line in f:
            path, _, js = line.rstrip("\n").partition("\t")
            if not js:
                continue
            # IMREAD_COLOR applies EXIF orientation, as the worker's decoder does.
            img = cv2.imread(path, cv2.IMREAD_COLOR)
            if img is None:
                continue
            h, w = img.shape[:2]
            stem = os.path.splitext(os.path.basename(path))[0]
            for k, b in enumerate(json.loads(js)):
                xs = [p[0] for p in b["box"]]
                ys = [p[1] for p in b["box"]]
                x0, x1 = max(0, int(min(xs))), min(w, int(max(xs)) + 1)
                y0, y1 = max(0, int(min(ys))), min(h, int(max(ys)) + 1)
                if x1 - x0 < 8 or y1 - y0 < 8:
                    continue
                cv2.imwrite(os.path.join(out_dir, "%s_%03d.png" % (stem, k)),
                            img[y0:y1, x0:x1])
                written += 1
    print(written)


if __name__ == "__main__":
    main()
