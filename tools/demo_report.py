"""Reads CSV rows (name, recognised text, ground truth or empty, has_truth)
on stdin and prints the demo's table: name, CER, text; then
"mean CER: <value> over <N> images" over the images that have a ground truth."""
import csv
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cer import cer  # noqa: E402

rows = list(csv.reader(sys.stdin))
scores = []
print(f"{'image':<34} {'CER':>6}  text")
for name, text, truth, has_truth in rows:
    shown = (text or "").replace("\n", " | ")
    if has_truth == "t":
        c = cer(text, truth)
        scores.append(c)
        print(f"{name:<34} {c:6.3f}  {shown}")
    else:
        print(f"{name:<34} {'-':>6}  {shown}")
if scores:
    print(f"mean CER: {sum(scores) / len(scores):.4f} over {len(scores)} images")
else:
    print(f"mean CER: n/a over 0 images ({len(rows)} without ground truth)")
