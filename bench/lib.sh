# bench/lib.sh: shell helpers shared by the benchmark scripts
# (bench/batching, bench/e2e, bench/text bench.sh).  Sourced from the
# repository root after the caller has set BUILD (and SHARED for
# bench_images); sources tools/testenv.sh and makes testenv_stop the EXIT
# trap, so every worker and cluster a bench starts is stopped by pid.
# Single-threaded shell.
#
#   bench_need NAME TEST FILE...  exit 1 ("NAME: missing FILE (make it
#                                 first)") unless [ TEST FILE ] holds for
#                                 every FILE (TEST: -x or -e)
#   bench_images NAME             set images to the absolute paths of the
#                                 .png/.jpg in $SHARED/data/ocr and
#                                 $BUILD/real-images; exit 1 if none
#   bench_boxes CLIENT EP OUT     the detector's boxes of every image in
#                                 images, "<path>\t<json>" lines to OUT
#   ratio A B                     A / B with two decimals

# shellcheck source=tools/testenv.sh
. tools/testenv.sh
trap testenv_stop EXIT

# bench_need NAME TEST FILE...: exits 1 unless [ TEST FILE ] holds for each.
bench_need() {
	local name=$1 test=$2 f
	shift 2
	for f in "$@"; do
		[ "$test" "$f" ] || { echo "$name: missing $f (make it first)" >&2; exit 1; }
	done
}

# bench_images NAME: fills the array images with absolute paths of the
# test images (../shared/data/ocr, build/real-images); exits 1 if none.
bench_images() {
	local d f
	images=()
	for d in "$SHARED/data/ocr" "$BUILD/real-images"; do
		[ -d "$d" ] || continue
		for f in "$d"/*.png "$d"/*.jpg; do
			[ -f "$f" ] && images+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
		done
	done
	[ "${#images[@]}" -gt 0 ] || { echo "$1: no images found" >&2; exit 1; }
}

# bench_boxes CLIENT EP OUT: asks the worker at EP (worker-client CLIENT,
# 120 s timeout) for the text boxes of every image in images and writes
# "<path>\t<boxes JSON>" to OUT, one line per image that has any.
bench_boxes() {
	local f js
	for f in "${images[@]}"; do
		js=$("$1" --endpoint "$2" --timeout-ms 120000 detect "$f" |
			sed -n 's/^ROW 0 id=100 ok=1 .* json=//p')
		[ -n "$js" ] && printf '%s\t%s\n' "$f" "$js"
	done >"$3"
	return 0
}

# ratio A B: prints A / B with two decimals.
ratio() {
	python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"
}
