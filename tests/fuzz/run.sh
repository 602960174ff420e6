#!/usr/bin/env bash
# tests/fuzz/run.sh TARGET...: runs the libFuzzer targets built by
# tests/fuzz/fuzz.mk in $BUILD/fuzz.
#
#   FUZZ_MODE=replay  every file of tests/fuzz/corpus/TARGET once
#                     (-runs=0): the regression check of `make check`;
#   FUZZ_MODE=run     fuzzing for FUZZ_TIME seconds per target, from a
#                     working corpus in $BUILD/fuzz/corpus/TARGET seeded with
#                     the committed corpus and the seeds below; with
#                     FUZZ_MERGE=1 the inputs that add coverage are merged
#                     into tests/fuzz/corpus/TARGET.  A summary line per
#                     target: executions, seconds, coverage (libFuzzer's
#                     "cov" edges and "ft" features), corpus size, findings.
#
# Seeds: image: the shared OCR images and the project's test images under
# 64 KiB; model: ONNX's node-test models (libonnx-testdata); tokenizer: the
# text test sentences, one per file; protocol: the requests fuzz_protocol
# writes when built (FUZZ_WRITE_SEEDS, into $BUILD/fuzz/seeds/protocol).
# Findings (crash-*, leak-*, timeout-*) land in $BUILD/fuzz/findings/TARGET.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
MODE=${FUZZ_MODE:-replay}
TIME=${FUZZ_TIME:-600}
export FUZZ_VOCAB=${FUZZ_VOCAB:-$BUILD/models/minilm/vocab.txt}
# leaks fail the run; UBSan stops at the first report
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Per-target libFuzzer options: the longest input and the memory limit.
opts() {
	case $1 in
	image) echo "-max_len=65536 -rss_limit_mb=2048" ;;
	model) echo "-max_len=65536 -rss_limit_mb=2048 -timeout=10" ;;
	tokenizer) echo "-max_len=4096" ;;
	protocol) echo "-max_len=65536" ;;
	esac
}

# Writes the seeds of target $1 into folder $2.
seed() {
	local t=$1 dir=$2 i=0
	mkdir -p "$dir"
	case $t in
	image)
		find "$SHARED/data" tests -type f \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' \) \
			-size -64k 2>/dev/null | head -200 | while read -r f; do
			cp "$f" "$dir/seed-$(sha1sum "$f" | cut -c1-16)"
		done ;;
	model)
		find /usr/include/onnx/backend/test/data/node -name model.onnx -size -64k 2>/dev/null |
			sort | head -2000 | while read -r f; do
			cp "$f" "$dir/seed-$(sha1sum "$f" | cut -c1-16)"
		done ;;
	tokenizer)
		while IFS= read -r line; do
			i=$((i + 1))
			# byte 0: max_len (2 + low 7 bits) and casing (high bit)
			{ printf "\\x$(printf %02x $(( (i * 37) % 256 )))"; printf '%s' "$line"; } \
				>"$dir/seed-$i"
		done <tests/text/sentences.txt ;;
	protocol)
		cp "$BUILD"/fuzz/seeds/protocol/* "$dir/" ;;
	esac
	return 0
}

status=0
for t in "$@"; do
	bin=$BUILD/fuzz/fuzz_$t
	corpus=tests/fuzz/corpus/$t
	mkdir -p "$corpus"
	find_dir=$BUILD/fuzz/findings/$t
	mkdir -p "$find_dir"
	if [ "$MODE" = replay ]; then
		n=$(find "$corpus" -type f | wc -l)
		if [ "$n" -eq 0 ]; then
			echo "fuzz $t: FAIL: empty corpus $corpus"
			status=1
			continue
		fi
		# shellcheck disable=SC2046
		if "$bin" $(opts "$t") -runs=0 -artifact_prefix="$find_dir/" "$corpus" \
			>"$BUILD/fuzz/replay_$t.log" 2>&1; then
			echo "fuzz $t: ok: $n corpus inputs replayed"
		else
			echo "fuzz $t: FAIL (see $BUILD/fuzz/replay_$t.log)"
			tail -30 "$BUILD/fuzz/replay_$t.log"
			status=1
		fi
		continue
	fi
	work=$BUILD/fuzz/corpus/$t
	rm -rf "$work" && mkdir -p "$work"
	cp "$corpus"/* "$work/" 2>/dev/null || true
	seed "$t" "$work"
	log=$BUILD/fuzz/run_$t.log
	echo "fuzz $t: $(find "$work" -type f | wc -l) starting inputs, ${TIME}s"
	# shellcheck disable=SC2046
	if "$bin" $(opts "$t") -max_total_time="$TIME" -print_final_stats=1 \
		-artifact_prefix="$find_dir/" "$work" >"$log" 2>&1; then
		result=clean
	else
		result="FINDING (see $log)"
		status=1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	ncorp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
	echo "fuzz $t: $result: executions=${execs:-?} exec_per_s=${secs:-?} seconds=$TIME cov=${cov:-?} ft=${ft:-?} corpus=${ncorp:-?}"
	if [ "${FUZZ_MERGE:-}" = 1 ]; then
		# shellcheck disable=SC2046
		"$bin" $(opts "$t") -merge=1 -use_counters=0 -use_value_profile=0 "$corpus" "$work" >"$BUILD/fuzz/merge_$t.log" 2>&1 || true
		echo "fuzz $t: committed corpus now $(find "$corpus" -type f | wc -l) inputs"
	fi
done
exit $status
