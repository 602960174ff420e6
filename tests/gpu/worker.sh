#!/usr/bin/env bash
# tests/gpu/worker.sh: infer-worker on the GPU, driven over ZeroMQ the way
# backends drive it (docs/gpu.md).  Run by tests/gpu/run.sh after the
# engine's checks, with ROOT set to the unpacked pack (tests/gpu/pack.sh):
# ROOT/bin (infer-worker, batching-client, worker-client), ROOT/models (the
# worker's model folder) and ROOT/data (crops/ and images/, or
# sentences.txt).
#
# For each device, $DEVICE then cpu (the reference), one worker on
# 127.0.0.1 and bench/batching's direct measurements (bench_client.c):
#   classify  the PP-OCR direction classifier over $ROWS text-line crops
#   ocr       infer.ocr's fragment over $OCR_ROWS page images
#   embed     infer.embed's fragment (MiniLM) over $TEXT_ROWS sentences
# each sent per row (1-row requests, one at a time) and batched (64-row
# requests, 2 in flight), the fragments whose models are in ROOT/models.
# Checks: the worker's state names the device and its memory
# (cudaMemGetInfo); per-row and batched answers are the same on each
# device (texts equal, embeddings within EMBED_TOL on the device); the
# device's answers against the CPU's, likewise.  Prints a table; exits 0 when every check held.
set -u
ROOT=${ROOT:?the unpacked pack}
DEVICE=${DEVICE:-cuda:0}
ROWS=${ROWS:-1000}
OCR_ROWS=${OCR_ROWS:-40}
TEXT_ROWS=${TEXT_ROWS:-1000}
OUTDIR=${OUTDIR:-$(mktemp -d)}
mkdir -p "$OUTDIR"
BIN=$ROOT/bin
PORT=${PORT:-47811}
pids=()
status=0
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT

say() { echo "worker.sh: $*"; }
fail() { say "FAILED: $*"; status=1; }

# start_worker DEV: an infer-worker on $DEV at 127.0.0.1:$PORT, ready
start_worker() {
	"$BIN/infer-worker" --listen "tcp://127.0.0.1:$PORT" --state-listen "tcp://127.0.0.1:$((PORT + 1))" \
		--model-dir "$ROOT/models" --device "$1" 2>"$OUTDIR/worker-$1.log" &
	pids+=($!)
	EP=tcp://127.0.0.1:$PORT
	"$BIN/worker-client" --endpoint "$EP" --timeout-ms 30000 ping >"$OUTDIR/ping-$1" 2>&1 ||
		{ fail "the worker on $1 did not answer a ping"; tail -5 "$OUTDIR/worker-$1.log"; return 1; }
	grep -o 'cap=.* device=[^ ]*' "$OUTDIR/ping-$1" | sed "s/^/worker.sh: $1 state: /"
}

stop_worker() {
	kill "${pids[-1]}" 2>/dev/null
	wait "${pids[-1]}" 2>/dev/null
	unset 'pids[-1]'
	PORT=$((PORT + 2))
}

declare -A RATE DIGEST
# measure KEY ARGS...: batching-client's line, answers to $OUTDIR/KEY.ans
measure() {
	local key=$1 out
	shift
	out=$(timeout 120 "$BIN/batching-client" --endpoint "$EP" --timeout-ms 60000 \
		--answers "$OUTDIR/$key.ans" "$@" 2>&1) || fail "$key: $out"
	RATE[$key]=$(sed -n 's/.*rows_per_s=\([0-9.]*\).*/\1/p' <<<"$out")
	DIGEST[$key]=$(sed -n 's/.*digest=\([0-9a-f]*\).*/\1/p' <<<"$out")
	printf 'worker.sh:   %-26s %s\n' "$key" "$out"
}

work=()
[ -f "$ROOT/models/ch_ppocr_mobile_v2.0_cls_infer.onnx" ] && [ -d "$ROOT/data/crops" ] &&
	work+=(classify ocr)
[ -f "$ROOT/models/minilm/model.onnx" ] && [ -f "$ROOT/data/sentences.txt" ] && work+=(embed)
[ -n "${WORK:-}" ] && read -ra work <<<"$WORK"		# a subset, e.g. WORK=classify
[ "${#work[@]}" -gt 0 ] || { say "no models or data in $ROOT"; exit 1; }

# compare A B: two --answers files, row by row: "equal=N of M max_abs=X"
# (N rows with the same answer; X the largest difference of an embedding's
# values, 0 when none); exit status 1 unless every text answer is the same
# and X <= $EMBED_TOL.  An answer may span lines (an OCR text).
EMBED_TOL=${EMBED_TOL:-1e-4}
compare() {
	python3 - "$1" "$2" "$EMBED_TOL" <<'EOF'
import re
import sys


def rows(path):
    parts = re.split(r"(?m)^(\d+)\|", open(path).read())
    return [(int(parts[i]), parts[i + 1].rstrip("\n")) for i in range(1, len(parts), 2)]


a, b = rows(sys.argv[1]), rows(sys.argv[2])
eq = sum(1 for x, y in zip(a, b) if x == y)
worst, bad = 0.0, len(a) != len(b)
for (i, x), (j, y) in zip(a, b):
    if i != j:
        bad = True
    elif x.startswith("{") and y.startswith("{"):
        u = [float(v) for v in x.strip("{}").split(",")]
        w = [float(v) for v in y.strip("{}").split(",")]
        worst = max([worst] + [abs(p - q) for p, q in zip(u, w)])
        bad |= len(u) != len(w)
    elif x != y:
        bad = True
print(f"equal={eq} of {len(a)} max_abs={worst:.3g}")
sys.exit(1 if bad or worst > float(sys.argv[3]) else 0)
EOF
}

for dev in "$DEVICE" cpu; do
	say "worker on $dev"
	start_worker "$dev" || { stop_worker; continue; }
	if [ "$dev" != cpu ] && ! grep -q " device=$dev " "$OUTDIR/ping-$dev"; then
		fail "the worker's state does not name $dev"
	fi
	if [ "$dev" != cpu ] && grep -q ' gpu_total=0 ' "$OUTDIR/ping-$dev"; then
		fail "the worker's state has no GPU memory total"
	fi
	for w in "${work[@]}"; do
		files=()
		case $w in
			classify) args=(--fragment classify --rows "$ROWS"); files=("$ROOT"/data/crops/*.png) ;;
			ocr) args=(--fragment ocr --rows "$OCR_ROWS"); files=("$ROOT"/data/images/*) ;;
			embed) args=(--fragment embed_text --rows "$TEXT_ROWS" --sentences "$ROOT/data/sentences.txt") ;;
		esac
		# warm-up (model load, the device's per-shape plans and pools), not counted
		timeout 120 "$BIN/batching-client" --endpoint "$EP" --timeout-ms 60000 "${args[@]}" \
			--rows 16 "${files[@]}" >/dev/null 2>&1
		timeout 120 "$BIN/batching-client" --endpoint "$EP" --timeout-ms 60000 "${args[@]}" \
			--rows 128 --batch 64 --inflight 2 "${files[@]}" >/dev/null 2>&1
		measure "$w.$dev.per_row" "${args[@]}" "${files[@]}"
		measure "$w.$dev.batched" "${args[@]}" --batch 64 --inflight 2 "${files[@]}"
		# the same answers per row and batched: bit for bit on the CPU; on the
		# device texts equal and embeddings within EMBED_TOL (cuBLAS picks its
		# kernels by shape, so sums are ordered differently at other sizes)
		if [ "$dev" = cpu ]; then
			[ "${DIGEST[$w.$dev.per_row]}" = "${DIGEST[$w.$dev.batched]}" ] ||
				fail "$w on $dev: per-row and batched answers differ"
		else
			c=$(compare "$OUTDIR/$w.$dev.per_row.ans" "$OUTDIR/$w.$dev.batched.ans") ||
				fail "$w on $dev: per-row and batched answers differ ($c)"
			say "$w on $dev, per row against batched: $c"
		fi
	done
	"$BIN/worker-client" --endpoint "$EP" --timeout-ms 5000 ping >"$OUTDIR/ping-$dev.end" 2>&1
	stop_worker
done

echo
printf '%-9s %-7s %6s %12s %12s %8s  %s\n' what device rows per-row/s batched/s ratio "answers vs cpu (batched)"
for w in "${work[@]}"; do
	for dev in "$DEVICE" cpu; do
		pr=${RATE[$w.$dev.per_row]:-} ba=${RATE[$w.$dev.batched]:-}
		ratio=-
		[ -n "$pr" ] && [ -n "$ba" ] && ratio=$(python3 -c "print('%.2f' % ($ba / $pr))")
		cmp=-
		if [ "$dev" != cpu ] && [ -f "$OUTDIR/$w.$dev.batched.ans" ] && [ -f "$OUTDIR/$w.cpu.batched.ans" ]; then
			cmp=$(compare "$OUTDIR/$w.$dev.batched.ans" "$OUTDIR/$w.cpu.batched.ans") ||
				fail "$w: the answers on $dev and on the CPU differ ($cmp)"
		fi
		case $w in classify) n=$ROWS ;; ocr) n=$OCR_ROWS ;; embed) n=$TEXT_ROWS ;; esac
		printf '%-9s %-7s %6s %12s %12s %8s  %s\n' "$w" "$dev" "$n" "${pr:-?}" "${ba:-?}" "$ratio" "$cmp"
	done
done
echo "(per row: 1-row requests one at a time; batched: 64-row requests, 2 in flight;"
echo " one worker, default threads; the worker's logs: $OUTDIR)"
exit $status
