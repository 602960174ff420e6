#!/usr/bin/env bash
# tests/gpu/test_start.sh WORKER
#
# infer-worker's --device flag at start: a malformed value exits 2 naming
# the accepted forms; --device cpu starts; on a machine without a usable
# CUDA device (or a build without CUDA) --device cuda:0 exits 1 at once with
# a message naming the cause.  Where a GPU is present the last check is
# replaced by: --device cuda:0 starts and logs "models run on cuda:0".
# With IE_CUDA_BACKEND naming a missing plugin, cuda:0 exits 1 naming it.
# Prints "gpu-start: N passed, M failed".
set -u
worker=${1:?usage: test_start.sh WORKER}
models=$(mktemp -d)
logs=$(mktemp -d)
log=
trap 'rm -rf "$models" "$logs"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; sed 's/^/     | /' "$log"; }

# Starts the worker with the given --device, waits up to 10 s for it to
# exit; sets rc (the status, or "running" after stopping it with SIGTERM)
# and log (a file of this start's own, so that no earlier worker's lines
# can be read as this one's).
starts=0
start() {
	starts=$((starts + 1))
	log=$logs/start$starts.log
	"$worker" --listen tcp://127.0.0.1:0 --model-dir "$models" --device "$1" >"$log" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			rc=$?
			return
		fi
		if grep -q "models run on" "$log"; then
			break
		fi
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		wait "$pid"
		rc=running
	else
		wait "$pid"
		rc=$?
	fi
}

start gpu
if [ "$rc" = 2 ] && grep -q 'must be "cpu", "cuda" or "cuda:N"' "$log"; then
	ok "--device gpu exits 2 naming the forms"
else
	bad "--device gpu: status $rc"
fi

start cpu
if [ "$rc" = running ] && grep -q "models run on cpu" "$log"; then
	ok "--device cpu starts"
else
	bad "--device cpu: status $rc"
fi

start cuda:0
if [ "$rc" = running ]; then
	if grep -q "models run on cuda:0" "$log"; then
		ok "--device cuda:0 starts (a GPU is present)"
	else
		bad "--device cuda:0 runs but did not log its device"
	fi
elif [ "$rc" = 1 ] && grep -q "could not start: --device cuda:0: cannot use cuda:0: " "$log" &&
	grep -Eq "no usable CUDA device or driver|no CUDA device found|built without CUDA" "$log"; then
	ok "--device cuda:0 without a GPU exits 1: $(sed -n 's/.*cannot use cuda:0: //p' "$log" | head -1)"
else
	bad "--device cuda:0: status $rc"
fi

# a CUDA build whose plugin cannot be loaded names the plugin and the loader's reason
IE_CUDA_BACKEND=/nonexistent/libinferengine_cuda.so start cuda:0
if [ "$rc" = 1 ] && grep -Eq "cannot use cuda:0: (cannot load the CUDA backend: /nonexistent/libinferengine_cuda.so: cannot open shared object file|the engine was built without CUDA)" "$log"; then
	ok "--device cuda:0 with a missing CUDA plugin exits 1 naming it"
else
	bad "--device cuda:0 with IE_CUDA_BACKEND=/nonexistent/...: status $rc"
fi

echo "gpu-start: $passed passed, $failed failed"
[ "$failed" = 0 ]
