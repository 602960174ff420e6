#!/usr/bin/env bash
# tests/gpu/run.sh: the CUDA backend's whole check, in one call, on a
# machine with an NVIDIA GPU (docs/gpu.md).  Exits 77 (skipped) where there
# is none.
#
#  1. the tools: from $PACK (build/gpu-pack.tar.xz, made here by
#     tests/gpu/pack.sh) when it exists, else built with make (which needs
#     the project's build dependencies and nvcc);
#  2. the device API test (gpu-test-device) and image preprocessing on the
#     device against the host's, value for value (gpu-test-prep);
#  3. ONNX's node conformance tests on the GPU in FP32 (onnx-conformance
#     --device cuda:0, known failures as on the CPU);
#  4. every model present on real inputs on the GPU against ONNX Runtime's
#     outputs (onnx-conformance --dir, relative L2 <= 1e-4);
#  5. every model on the GPU against the engine's CPU backend (gpu-bench),
#     at each precision (docs/gpu.md "Precision"): relative L2 <= 1e-4 in
#     FP32, <= 1e-2 in TF32 and FP16, <= 1e-1 in BF16 (its 8-bit mantissa
#     gives 1.3e-2 to 5.9e-2 on these models), then images/s or sentences/s at
#     batch 1, 8, 32 and 128 (1 s per batch in FP32, SECONDS_16 = 0.5 s in
#     the others);
#  6. one table, one row per model and precision;
#  7. infer-worker --device cuda:0 against the same worker on the CPU,
#     over ZeroMQ: per-row and batched rows/s and answers
#     (tests/gpu/worker.sh).
# KEEP_LOGS=DIR keeps every step's output in DIR/gpu-logs.tgz; PROFILE=1
# adds a per-operator profile of each model (below), PROFILE=only runs
# that alone.
# Budget: 8 minutes: each step has its own timeout (20 + 20 + 80 + 40 + 60
# + 3 x 45 + 120 = 475 s together; about 2 minutes on an H200).  PROFILE
# adds up to 60 s a profile, outside that budget.  The exit status is 0
# when every step passed, 1 otherwise.
set -u
cd "$(dirname "$0")/../.."
t_start=$(date +%s)
BUILD=${BUILD:-build}
PACK=${PACK:-$BUILD/gpu-pack.tar.xz}
DEVICE=${DEVICE:-cuda:0}
BATCHES=${BATCHES:-1,8,32,128}
SECONDS_PER_BATCH=${SECONDS_PER_BATCH:-1}
SECONDS_16=${SECONDS_16:-0.5}
KEEP_LOGS=${KEEP_LOGS:-}
log=$(mktemp -d)
trap '[ -n "$KEEP_LOGS" ] && tar -C "$log" --exclude=./pack -czf "$KEEP_LOGS/gpu-logs.tgz" .; rm -rf "$log"' EXIT
status=0
steps=()

note() { echo "run.sh: $*"; }
step() {						# step NAME RC
	if [ "$2" = 0 ]; then steps+=("$1: passed"); else steps+=("$1: FAILED (status $2)"); status=1; fi
}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	note "no NVIDIA GPU here (nvidia-smi finds none): skipped"
	exit 77
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
cuda=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
note "GPU: $gpu; CUDA toolkit ${cuda:-not found}"

# 1. the tools
if [ -f "$PACK" ]; then
	root=$log/pack
	mkdir -p "$root"
	tar -C "$root" -xJf "$PACK" || { note "cannot unpack $PACK"; exit 1; }
	root=$root/gpu-pack
	BIN=$root/bin
	NODE=$root/node
	TESTS=$root/model-tests
	WROOT=$root
	export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	note "tools from $PACK"
else
	make -j"$(nproc)" --no-print-directory BUILD="$BUILD" "$BUILD/bin/onnx-conformance" \
		"$BUILD/bin/gpu-bench" "$BUILD/bin/gpu-test-device" "$BUILD/bin/gpu-test-prep" \
		"$BUILD/lib/libinferengine_cuda.so" \
		>"$log/make" 2>&1 ||
		{ tail -30 "$log/make"; note "build failed (and no $PACK: see tests/gpu/pack.sh)"; exit 1; }
	BIN=$BUILD/bin
	NODE=${ONNX_NODE_DIR:-/usr/include/onnx/backend/test/data/node}
	TESTS=$log/tests
	mkdir -p "$TESTS"
	for t in det_p02 cls_p01 rec_p01; do
		[ -d "$BUILD/model-tests/$t" ] && ln -s "$(readlink -f "$BUILD/model-tests/$t")" "$TESTS/${t%_p0*}"
	done
	[ -d "$BUILD/text-model-tests/minilm_b4_s40" ] &&
		ln -s "$(readlink -f "$BUILD/text-model-tests/minilm_b4_s40")" "$TESTS/minilm"
	# worker.sh's layout, made of links into the tree
	WROOT=$log/wroot
	mkdir -p "$WROOT/bin" "$WROOT/data"
	make --no-print-directory BUILD="$BUILD" "$BUILD/bin/infer-worker" "$BUILD/bin/bench/batching-client" \
		"$BUILD/bin/tests/worker-client" >>"$log/make" 2>&1
	for b in infer-worker bench/batching-client tests/worker-client; do ln -s "$(readlink -f "$BUILD/bin/$b")" "$WROOT/bin/"; done
	ln -s "$(readlink -f "$BUILD/models")" "$WROOT/models"
	[ -d "$BUILD/bench-batching/crops" ] && ln -s "$(readlink -f "$BUILD/bench-batching/crops")" "$WROOT/data/crops"
	[ -d ../shared/data/ocr ] && ln -s "$(readlink -f ../shared/data/ocr)" "$WROOT/data/images"
	ln -s "$(pwd)/tests/text/sentences.txt" "$WROOT/data/sentences.txt"
	note "tools built in $BUILD"
fi
# CUDA's libraries where the loader does not find them (the toolkit, or Python's nvidia-* wheels)
plugin=$BIN/../lib/libinferengine_cuda.so
[ -f "$plugin" ] || { note "no CUDA backend at $plugin (built without nvcc?)"; exit 1; }
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9; do
	if ldd "$plugin" | grep -q "$lib => not found"; then
		dir=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets /usr/lib /opt \
			$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) \
			-name "$lib" 2>/dev/null | head -1)
		[ -n "$dir" ] && export LD_LIBRARY_PATH=$(dirname "$dir"):${LD_LIBRARY_PATH:-}
	fi
done
if ldd "$BIN/gpu-bench" "$plugin" | grep "not found"; then
	note "libraries missing (above): cannot run"
	exit 1
fi

# PROFILE=1: where a run's time goes, per operator (IE_CUDA_PROFILE: every
# node waited for and timed), each model at batch 1 and 32, FP32; into the
# logs (KEEP_LOGS) as profile-MODEL-bN.  PROFILE=only: that alone.
profile() {
	local t sp b
	for t in det cls rec minilm; do
		[ -e "$TESTS/$t/model.onnx" ] || continue
		sp=$t:images:$TESTS/$t
		[ "$t" = minilm ] && sp=$t:sentences:$TESTS/$t
		for b in 1 32; do
			IE_CUDA_PROFILE=1 timeout 60 "$BIN/gpu-bench" --device "$DEVICE" --batches "$b" \
				--seconds 0.3 "$sp" >"$log/profile-$t-b$b" 2>&1
			grep -h "ms in nodes\|^RESULT" "$log/profile-$t-b$b" | sed "s/^/run.sh: profile $t b$b: /"
		done
	done
}
if [ "${PROFILE:-0}" = only ]; then
	profile
	exit 0
fi

if [ -d "$NODE" ]; then
	# 2. the device API, and image preprocessing on the device against the host's
	timeout 20 "$BIN/gpu-test-device" "$NODE" 2>&1 | tee "$log/device"
	step "device API (gpu-test-device)" "${PIPESTATUS[0]}"
	timeout 20 "$BIN/gpu-test-prep" "$DEVICE" "$WROOT"/data/images/p0*.png 2>&1 | tee "$log/prep"
	step "image preprocessing on $DEVICE = the host's (gpu-test-prep)" "${PIPESTATUS[0]}"

	# 3. node conformance on the GPU, FP32
	timeout 80 "$BIN/onnx-conformance" --device "$DEVICE" --node-dir "$NODE" \
		--known tests/onnx/known_failures.txt --name onnx-conformance-gpu >"$log/conf" 2>"$log/conf.err"
	rc=$?
	grep -E "^(FAIL|NOTE)" "$log/conf" | head -40
	grep -c "runs on the CPU" "$log/conf.err" | sed 's/^/run.sh: node tests with a CPU fallback logged: /'
	tail -2 "$log/conf"
	step "node conformance on $DEVICE" "$rc"
else
	note "no ONNX node tests at $NODE (a models-only pack): steps 2 and 3 skipped"
fi

# 4. the models against ONNX Runtime, on the GPU
timeout 40 "$BIN/onnx-conformance" --device "$DEVICE" --dir "$TESTS" --metric rel-l2 --tol 1e-4 \
	--name onnx-models-gpu 2>"$log/models.err" | tee "$log/models"
step "models vs ONNX Runtime on $DEVICE (rel-l2 <= 1e-4)" "${PIPESTATUS[0]}"
grep "infer-engine:" "$log/models.err" | sort -u

# 5. the models against the CPU, and their speed: FP32, then TF32, FP16, BF16
specs=()
for t in det cls rec minilm; do
	[ -e "$TESTS/$t/model.onnx" ] || continue
	unit=images
	[ "$t" = minilm ] && unit=sentences
	specs+=("$t:$unit:$TESTS/$t")
done
timeout 60 "$BIN/gpu-bench" --device "$DEVICE" --precision fp32 --tol 1e-4 --batches "$BATCHES" \
	--seconds "$SECONDS_PER_BATCH" "${specs[@]}" 2>"$log/fp32.err" | tee "$log/fp32"
step "models vs CPU, FP32 (rel-l2 <= 1e-4)" "${PIPESTATUS[0]}"
for pt in tf32:1e-2 fp16:1e-2 bf16:1e-1; do
	p=${pt%:*}
	timeout 45 "$BIN/gpu-bench" --device "$DEVICE" --precision "$p" --tol "${pt#*:}" \
		--batches "$BATCHES" --seconds "$SECONDS_16" "${specs[@]}" 2>"$log/$p.err" | tee "$log/$p"
	step "models vs CPU, ${p^^} (rel-l2 <= ${pt#*:})" "${PIPESTATUS[0]}"
done
cat "$log"/{fp32,tf32,fp16,bf16}.err | grep -v "^infer-engine: model" | head -20

[ "${PROFILE:-0}" = 1 ] && profile

# 6. the table
echo
echo "GPU: $gpu; CUDA ${cuda:-?}; $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-7s %-9s %-10s %-10s %-10s %-10s' model precision unit rel-l2/cpu rel-l2/ort cpu-ms/row
for b in ${BATCHES//,/ }; do printf ' %10s' "b$b/s"; done
echo
for math in fp32 tf32 fp16 bf16; do
	while read -r _ name unit rest; do
		declare -A f=()
		for kv in $rest; do f[${kv%%=*}]=${kv#*=}; done
		printf '%-7s %-9s %-10s %-10s %-10s %-10s' "$name" "$math" "$unit" "${f[rel_l2]}" \
			"${f[ort_l2]}" "${f[cpu_ms_row]}"
		for b in ${BATCHES//,/ }; do printf ' %10s' "${f[b$b]:-?}"; done
		echo
		unset f
	done < <(grep '^RESULT ' "$log/$math")
done
for t in det cls rec minilm; do
	[ -e "$TESTS/$t/model.onnx" ] || echo "($t: no model or test folder here, not run)"
done
# 7. the worker on the device
echo
mkdir -p "$log/worker"
ROOT=$WROOT OUTDIR=$log/worker DEVICE=$DEVICE timeout 120 bash tests/gpu/worker.sh
step "infer-worker --device $DEVICE over ZeroMQ" "$?"

echo
printf '%s\n' "${steps[@]}"
echo "run.sh: $(($(date +%s) - t_start)) s"
exit $status
