#!/bin/bash
# bench/engine/levers.sh: our engine with its levers switched off one by one,
# on the inputs bench.py uses (regenerated here), for docs/performance.md.
#
# Usage: bench/engine/levers.sh RUNNER [BASELINE_RUNNER]
#   RUNNER           build/bin/bench/engine-bench-run of this tree
#   BASELINE_RUNNER  optional: the same program built from an older tree
#
# Prints one Markdown row per model and thread count: baseline (if given),
# IE_FUSION=0 IE_DIRECT_GEMM=0, IE_DIRECT_GEMM=0, everything on; each the
# better median of 2 interleaved rounds.
set -euo pipefail
runner=$1
base=${2:-}
py=${PYTHON:-build/venv/bin/python}
models=${MODEL_DIR:-build/models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$py" - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
rng.uniform(-1, 1, (1, 3, 960, 960)).astype(np.float32).tofile(d + "/det.raw")
rng.uniform(-1, 1, (8, 3, 48, 320)).astype(np.float32).tofile(d + "/rec.raw")
rng.uniform(-1, 1, (8, 3, 48, 192)).astype(np.float32).tofile(d + "/cls.raw")
ids = rng.integers(1000, 20000, (32, 128)).astype(np.int64); ids[:, 0] = 101
mask = np.ones((32, 128), np.int64); mask[:, 100:] = 0
ids.tofile(d + "/ids.raw"); mask.tofile(d + "/mask.raw")
np.zeros((32, 128), np.int64).tofile(d + "/tt.raw")
PY

cases=("$models/ch_PP-OCRv4_det_infer.onnx|$tmp/det.raw:float:1x3x960x960|det960|5"
	"$models/ch_PP-OCRv4_rec_infer.onnx|$tmp/rec.raw:float:8x3x48x320|rec8|10"
	"$models/ch_ppocr_mobile_v2.0_cls_infer.onnx|$tmp/cls.raw:float:8x3x48x192|cls8|20"
	"$models/minilm/model.onnx|$tmp/ids.raw:int64:32x128 $tmp/mask.raw:int64:32x128 $tmp/tt.raw:int64:32x128|minilm32x128|3")

# median_ms of one run of a runner, or nothing when it fails
med() { "$@" 2>/dev/null | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' || true; }
# the smallest of its arguments, or n/a
least() { printf '%s\n' "$@" | awk 'NF { if (m == "" || $1 < m) m = $1 } END { print (m == "" ? "n/a" : m) }'; }

echo "| model | threads | baseline | no fusion, no direct kernel | no direct kernel | all |"
echo "| --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
	IFS='|' read -r m ins name runs <<<"$c"
	[ -f "$m" ] || continue
	for t in 1 2; do
		b=(); a=(); f=(); d=()
		for round in 1 2; do
			# word splitting of $ins is wanted: one argument per input
			# shellcheck disable=SC2086
			{
				[ -n "$base" ] && b+=("$(med "$base" "$m" "$t" "$runs" $ins)")
				a+=("$(IE_FUSION=0 IE_DIRECT_GEMM=0 OPENBLAS_NUM_THREADS=1 med "$runner" "$m" "$t" "$runs" $ins)")
				f+=("$(IE_DIRECT_GEMM=0 OPENBLAS_NUM_THREADS=1 med "$runner" "$m" "$t" "$runs" $ins)")
				d+=("$(OPENBLAS_NUM_THREADS=1 med "$runner" "$m" "$t" "$runs" $ins)")
			}
		done
		echo "| $name | $t | $(least "${b[@]:-}") | $(least "${a[@]}") | $(least "${f[@]}") | $(least "${d[@]}") |"
	done
done
