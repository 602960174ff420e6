#!/usr/bin/env bash
# tests/gpu/pack.sh: packs what tests/gpu/run.sh needs on a GPU machine that
# has CUDA (nvcc, cuBLAS, cuDNN) but not this project's other build
# dependencies (protobuf-c, OpenBLAS, libonnx-dev, the Python tools), into
# one file: $BUILD/gpu-pack.tar.xz (about 25 MB; the device tool carries at
# most 64 MiB with the working tree).  Run it here, then on the GPU machine
# `tests/gpu/run.sh` with that file carried (docs/gpu.md).
#
# The pack holds: bin/ (onnx-conformance, gpu-bench, gpu-test-device built
# here with CUDA), lib/ (the CUDA backend plugin libinferengine_cuda.so and
# the programs' shared libraries other than the C runtime and CUDA's), node/ (ONNX's node tests from libonnx-dev), models/ (the OCR
# models, and MiniLM when PACK_MINILM=1, which makes the pack too big to
# carry in one call) and model-tests/ (real inputs with ONNX Runtime's
# outputs, from `make check-models`: a detector, a classifier and a
# recogniser test, and MiniLM's when its model is packed).
#
# PACK_MINILM=only makes a second pack instead, $BUILD/gpu-pack-minilm.tar.xz
# (about 47 MB, carried in a call of its own): the programs and MiniLM's
# test, its model with the word-embedding rows the test's token ids never
# look up set to zero (tools/minilm_sparse_embeddings.py: the same outputs
# for that input at the same cost, in 40 MB compressed instead of 83 MB).
# run.sh runs the model steps alone on a pack without node tests.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
MODEL_TESTS=${MODEL_TESTS:-$BUILD/model-tests}
TEXT_TESTS=${TEXT_TESTS:-$BUILD/text-model-tests}
NODE_DIR=${NODE_DIR:-/usr/include/onnx/backend/test/data/node}
PACK_MINILM=${PACK_MINILM:-0}
out=$BUILD/gpu-pack.tar.xz
[ "$PACK_MINILM" = only ] && out=$BUILD/gpu-pack-minilm.tar.xz
bins="onnx-conformance gpu-bench gpu-test-device gpu-test-prep infer-worker bench/batching-client tests/worker-client"
SHARED=${SHARED:-../shared}

command -v "${NVCC:-nvcc}" >/dev/null || { echo "pack.sh: needs nvcc to build the CUDA backend" >&2; exit 1; }
make --no-print-directory BUILD="$BUILD" $(for b in $bins; do echo "$BUILD/bin/$b"; done) \
	"$BUILD/lib/libinferengine_cuda.so"
for t in det_p02 cls_p01 rec_p01; do
	[ "$PACK_MINILM" = only ] && break
	[ -f "$MODEL_TESTS/$t/test_data_set_0/input_0.pb" ] ||
		{ echo "pack.sh: no $MODEL_TESTS/$t; run make check-models first" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
p=$stage/gpu-pack
mkdir -p "$p/bin" "$p/lib" "$p/models" "$p/model-tests"
for b in $bins; do cp "$BUILD/bin/$b" "$p/bin/"; done
# tests/gpu/worker.sh's inputs: the text-line crops of bench-batching (64)
# and the shared OCR images, or the sentences of tests/text
mkdir -p "$p/data"
# the CUDA backend plugin, found by the programs in ../lib
cp "$BUILD/lib/libinferengine_cuda.so" "$p/lib/"
# shared libraries other than the C runtime's and CUDA's (the GPU machine has those)
for b in $bins; do ldd "$BUILD/bin/$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
	while read -r name path; do
		case $name in
			libc.so* | libm.so* | libmvec.so* | libstdc++.so* | libgcc_s.so* | libdl.so* | \
			librt.so* | libpthread.so* | ld-linux* | libcud* | libcublas*) ;;
			*) cp -L "$path" "$p/lib/$name" ;;
		esac
	done
[ "$PACK_MINILM" = only ] || cp -r "$NODE_DIR" "$p/node"
# each test's model.onnx becomes a link into models/
add_test() {					# add_test NAME SRC_DIR
	mkdir -p "$p/model-tests/$1"
	cp -r "$2/test_data_set_0" "$p/model-tests/$1/"
	local model
	model=$(basename "$(readlink -f "$2/model.onnx")")
	[ -f "$p/models/$model" ] || cp -L "$2/model.onnx" "$p/models/$model"
	ln -s "../../models/$model" "$p/model-tests/$1/model.onnx"
}
if [ "$PACK_MINILM" = only ]; then
	t=$TEXT_TESTS/minilm_b4_s40
	[ -f "$t/test_data_set_0/input_0.pb" ] ||
		{ echo "pack.sh: no $t; run make check-models first" >&2; exit 1; }
	mkdir -p "$p/model-tests/minilm" "$p/models/minilm"
	cp -r "$t/test_data_set_0" "$p/model-tests/minilm/"
	src=$(dirname "$(readlink -f "$t/model.onnx")")
	cp "$src"/tokenizer.json "$src"/vocab.txt "$src"/model.json "$p/models/minilm/"
	cp tests/text/sentences.txt "$p/data/"
	"${PYTHON:-$BUILD/venv/bin/python}" tools/minilm_sparse_embeddings.py "$t/model.onnx" \
		"$p/models/minilm/model.onnx" "$t/test_data_set_0/input_0.pb" \
		--sentences tests/text/sentences.txt "$src/tokenizer.json"
	ln -s ../../models/minilm/model.onnx "$p/model-tests/minilm/model.onnx"
else
	crops=${CROPS:-$BUILD/bench-batching/crops}
	[ -d "$crops" ] || { echo "pack.sh: no $crops; run make bench-batching first" >&2; exit 1; }
	mkdir -p "$p/data/crops" "$p/data/images"
	ls "$crops"/*.png | head -64 | xargs cp -t "$p/data/crops/"
	cp "$SHARED"/data/ocr/*.png "$SHARED"/data/ocr/*.jpg "$p/data/images/"
	cp "$(dirname "$(readlink -f "$MODEL_TESTS/rec_p01/model.onnx")")/ppocr_keys_v1.txt" "$p/models/"
	add_test det "$MODEL_TESTS/det_p02"
	add_test cls "$MODEL_TESTS/cls_p01"
	add_test rec "$MODEL_TESTS/rec_p01"
	if [ "$PACK_MINILM" = 1 ] && [ -d "$TEXT_TESTS/minilm_b4_s40" ]; then
		add_test minilm "$TEXT_TESTS/minilm_b4_s40"
	fi
fi
tar -C "$stage" -cf - gpu-pack | xz -T0 -6 >"$out"
echo "pack.sh: $out, $(du -h "$out" | cut -f1) ($(ls "$p/model-tests" | tr '\n' ' '))"
