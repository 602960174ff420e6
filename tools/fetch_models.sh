#!/usr/bin/env bash
# fetch_models.sh DIR
#   Puts the three PaddleOCR ONNX models (PP-OCRv4 detection and recognition,
#   PP-OCR mobile v2 direction classifier) and the recognition dictionary in
#   DIR, taken from the PyPI wheel of rapidocr-onnxruntime, and checks every
#   file against tools/models.sha256.  The dictionary is the "character"
#   metadata entry of the recognition model (identical to ppocr_keys_v1.txt).
#   Idempotent: files whose checksums already match are left alone.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/models}
wheel_version=1.4.4
sums=$top/tools/models.sha256
python=$top/build/venv/bin/python
mkdir -p "$dir"

if (cd "$dir" && sha256sum --quiet -c "$sums" >/dev/null 2>&1); then
	echo "models: $dir is up to date"
	exit 0
fi

cache=$top/build/cache
mkdir -p "$cache"
wheel=$cache/rapidocr_onnxruntime-$wheel_version-py3-none-any.whl
if [ ! -f "$wheel" ]; then
	"$python" -m pip download --quiet --no-deps --dest "$cache" \
		"rapidocr-onnxruntime==$wheel_version"
fi

"$python" - "$wheel" "$dir" <<'PY'
import sys, zipfile, os, onnx
wheel, out = sys.argv[1], sys.argv[2]
names = ["ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
         "ch_ppocr_mobile_v2.0_cls_infer.onnx"]
with zipfile.ZipFile(wheel) as z:
    for n in names:
        data = z.read("rapidocr_onnxruntime/models/" + n)
        with open(os.path.join(out, n + ".tmp"), "wb") as f:
            f.write(data)
        os.replace(os.path.join(out, n + ".tmp"), os.path.join(out, n))
rec = onnx.load(os.path.join(out, names[1]), load_external_data=False)
chars = [p.value for p in rec.metadata_props if p.key == "character"]
if len(chars) != 1:
    sys.exit("fetch_models: the recognition model carries no dictionary")
with open(os.path.join(out, "ppocr_keys_v1.txt"), "w", encoding="utf-8") as f:
    f.write(chars[0])
PY

if ! (cd "$dir" && sha256sum -c "$sums"); then
	echo "fetch_models: checksum mismatch in $dir (see above); the files were not what tools/models.sha256 records" >&2
	exit 1
fi
echo "models: fetched into $dir"
