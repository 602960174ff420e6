#!/usr/bin/env bash
# bench/batching/bench.sh: batched against per-row execution (issue 3).
#
# Starts one infer-worker on 127.0.0.1 (tools/testenv.sh) and measures
# rows per second of the same work sent per row and batched:
#
#   classify  the PP-OCR text-direction classifier (ppocr_cls, 48x192)
#             over $ROWS rows of real text lines: crops cut out of the
#             real images (../shared/data/ocr, build/real-images) along
#             the boxes the worker's own detector finds in them
#             (make_crops.py), used in turn;
#   pages     the same classifier over $ROWS rows of the whole images
#             (image decoding dominates there);
#   ocr       infer.ocr's fragment over $OCR_ROWS rows of the images;
#   dynamic   8 backends sending one row at a time each, to a worker that
#             merges them (the default) against one that cannot
#             (--max-batch 1).
#
# Per row = one row per request, one request at a time (what a backend
# sends without the InferBatch custom scan); batched = 64 rows per request,
# two requests in flight (what InferBatch sends).  Each pair must give the
# same answers (the digest of every row's answer is compared).
#
# Direct mode (always): batching-client (bench_client.c) sends the
# requests itself.  SQL mode (when the extension has the
# infer.enable_batching setting): a throwaway cluster, the crops loaded with
# pg_read_binary_file, and
#     SELECT id, infer.classify('ppocr_cls', img) FROM bench_lines
# with SET infer.enable_batching = off, then on (likewise infer.ocr).
#
# Ends with a line
#     RESULT: speedup=X ocr_speedup=Y page_speedup=Z dynamic_speedup=W mode=M
# (from the SQL numbers when SQL mode ran, else from the direct ones).
# Environment: ROWS (1000), OCR_ROWS (40), THREADS (engine threads, 1: on
# a shared machine one thread gives steady numbers), SQL (auto, on, off),
# DIRECT (on, off: skip the direct measurements).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
ROWS=${ROWS:-1000}
OCR_ROWS=${OCR_ROWS:-40}
THREADS=${THREADS:-1}
SQL=${SQL:-auto}
DIRECT=${DIRECT:-on}
CLIENT=$BUILD/bin/bench/batching-client
WCLIENT=$BUILD/bin/tests/worker-client
PY=$BUILD/venv/bin/python
top=$(pwd)
tmp=$top/$BUILD/bench-batching

# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_need bench-batching -x "$BUILD/bin/infer-worker" "$CLIENT" "$WCLIENT"
rm -rf "$tmp"
mkdir -p "$tmp"

bench_images bench-batching

testenv_start_worker "$tmp/worker.log" --threads "$THREADS"
EP=$TESTENV_ENDPOINT
echo "bench-batching: worker $EP, $THREADS engine thread(s), ${#images[@]} images, $(nproc) CPUs"

# Text-line crops along the detector's boxes.
bench_boxes "$WCLIENT" "$EP" "$tmp/boxes.tsv"
n_crops=$("$PY" bench/batching/make_crops.py "$tmp/boxes.tsv" "$tmp/crops")
crops=("$tmp"/crops/*.png)
echo "bench-batching: $n_crops text-line crops from the detector's boxes"

# measure NAME CLIENT-ARGS...: runs batching-client, prints and keeps its line.
declare -A RATE DIGEST
measure() {
	local name=$1 out
	shift
	out=$("$CLIENT" --endpoint "$EP" "$@")
	RATE[$name]=$(sed -n 's/.*rows_per_s=\([0-9.]*\).*/\1/p' <<<"$out")
	DIGEST[$name]=$(sed -n 's/.*digest=\([0-9a-f]*\).*/\1/p' <<<"$out")
	printf '  %-22s %s\n' "$name" "$out"
}
same() {
	if [ "${DIGEST[$1]}" = "${DIGEST[$2]}" ]; then echo "same answers"; else echo "ANSWERS DIFFER"; fi
}

speedup=- ocr_speedup=- page_speedup=- dynamic_speedup=- mode=none
if [ "$DIRECT" = on ]; then
	echo
	echo "direct mode (the worker alone; per row = 1-row requests one at a time,"
	echo "batched = 64-row requests, 2 in flight):"
	measure classify_per_row --fragment classify --rows "$ROWS" "${crops[@]}"
	measure classify_batched --fragment classify --rows "$ROWS" --batch 64 --inflight 2 "${crops[@]}"
	measure pages_per_row --fragment classify --rows "$ROWS" "${images[@]}"
	measure pages_batched --fragment classify --rows "$ROWS" --batch 64 --inflight 2 "${images[@]}"
	measure ocr_per_row --fragment ocr --rows "$OCR_ROWS" "${images[@]}"
	measure ocr_batched --fragment ocr --rows "$OCR_ROWS" --batch 64 --inflight 2 "${images[@]}"
	measure dynamic_merged --fragment classify --rows "$ROWS" --clients 8 "${crops[@]}"
	merged=$("$WCLIENT" --endpoint "$EP" ping | sed -n 's/.* merged=\([0-9]*\) .*/\1/p')
	testenv_start_worker "$tmp/worker-nomerge.log" --threads "$THREADS" --max-batch 1
	EP_MERGING=$EP
	EP=$TESTENV_ENDPOINT
	measure dynamic_unmerged --fragment classify --rows "$ROWS" --clients 8 "${crops[@]}"
	EP=$EP_MERGING

	speedup=$(ratio "${RATE[classify_batched]}" "${RATE[classify_per_row]}")
	page_speedup=$(ratio "${RATE[pages_batched]}" "${RATE[pages_per_row]}")
	ocr_speedup=$(ratio "${RATE[ocr_batched]}" "${RATE[ocr_per_row]}")
	dynamic_speedup=$(ratio "${RATE[dynamic_merged]}" "${RATE[dynamic_unmerged]}")
	echo
	printf '%-10s %6s %12s %12s %8s  %s\n' what rows per-row/s batched/s ratio answers
	printf '%-10s %6s %12s %12s %8s  %s\n' \
		classify "$ROWS" "${RATE[classify_per_row]}" "${RATE[classify_batched]}" "$speedup" \
		"$(same classify_per_row classify_batched)" \
		pages "$ROWS" "${RATE[pages_per_row]}" "${RATE[pages_batched]}" "$page_speedup" \
		"$(same pages_per_row pages_batched)" \
		ocr "$OCR_ROWS" "${RATE[ocr_per_row]}" "${RATE[ocr_batched]}" "$ocr_speedup" \
		"$(same ocr_per_row ocr_batched)" \
		dynamic "$ROWS" "${RATE[dynamic_unmerged]}" "${RATE[dynamic_merged]}" "$dynamic_speedup" \
		"$(same dynamic_unmerged dynamic_merged)"
	echo "(dynamic: 8 clients, one row each in flight; per-row/s = a worker that"
	echo " cannot merge (--max-batch 1), batched/s = merging worker: $merged merged batches)"
	# The worker's own compute time per row (its log), without the round trips.
	grep 'classify over' "$tmp/worker.log" |
		awk -v n1="$ROWS" -v n2="$(((ROWS + 63) / 64))" '
			{ for (i = 1; i <= NF; i++) { if ($i == "over") r = $(i + 1); if ($i == "in") ms = $(i + 1) } }
			NR <= n1 { a += ms; na += r }
			NR > n1 && NR <= n1 + n2 { b += ms; nb += r }
			END { if (na && nb) printf "worker compute, classify: %.3f ms/row in 1-row calls, %.3f ms/row in 64-row calls\n", a / na, b / nb }'
	mode=direct
fi

# --- SQL mode ---------------------------------------------------------------
has_guc=0
if [ "$SQL" != off ] && grep -rqs enable_batching extension/; then
	has_guc=1
fi
if [ "$SQL" = on ] || [ "$has_guc" = 1 ]; then
	# The planner hook must be there when a session's first query is planned.
	TESTENV_EXTRA_CONF="session_preload_libraries = 'pg_infer'"
	testenv_start_cluster "$tmp/pg"
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('bench', '$EP');
CREATE TABLE crop_files (img bytea);
CREATE TABLE page_files (img bytea);
$(for f in "${crops[@]}"; do echo "INSERT INTO crop_files VALUES (pg_read_binary_file('$f'));"; done)
$(for f in "${images[@]}"; do echo "INSERT INTO page_files VALUES (pg_read_binary_file('$f'));"; done)
CREATE TABLE bench_lines AS
	SELECT row_number() OVER () AS id, img
	  FROM generate_series(1, ($ROWS / (SELECT count(*) FROM crop_files))::int + 1), crop_files
	 LIMIT $ROWS;
CREATE TABLE bench_pages AS
	SELECT row_number() OVER () AS id, img
	  FROM generate_series(1, ($OCR_ROWS / (SELECT count(*) FROM page_files))::int + 1), page_files
	 LIMIT $OCR_ROWS;
SQL
	# sql NAME ROWS GUC QUERY: times QUERY with infer.enable_batching = GUC.
	sql() {
		local name=$1 rows=$2 guc=$3 query=$4 t0 t1 sum
		t0=$(date +%s.%N)
		sum=$(psql -X -At -v ON_ERROR_STOP=1 -c "SET infer.enable_batching = $guc" \
			-c "$query" | md5sum | cut -c1-16)
		t1=$(date +%s.%N)
		RATE[$name]=$(python3 -c "import sys; print('%.2f' % (int(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2]))))" "$rows" "$t0" "$t1")
		DIGEST[$name]=$sum
		printf '  %-22s rows=%s rows_per_s=%s digest=%s\n' "$name" "$rows" "${RATE[$name]}" "$sum"
	}
	echo
	echo "SQL mode (SET infer.enable_batching = off / on):"
	q_cls="SELECT id, infer.classify('ppocr_cls', img) FROM bench_lines"
	q_ocr="SELECT id, infer.ocr(img) FROM bench_pages"
	plan=$(psql -X -At -c "SET infer.enable_batching = on" -c "EXPLAIN (COSTS OFF) $q_cls")
	sed 's/^/  | /' <<<"$plan"
	sql sql_classify_per_row "$ROWS" off "$q_cls"
	sql sql_classify_batched "$ROWS" on "$q_cls"
	sql sql_ocr_per_row "$OCR_ROWS" off "$q_ocr"
	sql sql_ocr_batched "$OCR_ROWS" on "$q_ocr"
	sql_speedup=$(ratio "${RATE[sql_classify_batched]}" "${RATE[sql_classify_per_row]}")
	sql_ocr_speedup=$(ratio "${RATE[sql_ocr_batched]}" "${RATE[sql_ocr_per_row]}")
	echo "  classify: speedup $sql_speedup, $(same sql_classify_per_row sql_classify_batched)"
	echo "  ocr:      speedup $sql_ocr_speedup, $(same sql_ocr_per_row sql_ocr_batched)"
	if grep -q 'InferBatch' <<<"$plan"; then
		speedup=$sql_speedup
		ocr_speedup=$sql_ocr_speedup
		mode=sql
	else
		echo "  (the plan has no InferBatch node: the RESULT keeps the direct numbers)"
	fi
else
	echo
	echo "SQL mode skipped: the extension has no infer.enable_batching setting yet"
	echo "(the InferBatch custom scan brings it); numbers above are the worker's."
fi

echo
echo "RESULT: speedup=$speedup ocr_speedup=$ocr_speedup page_speedup=$page_speedup dynamic_speedup=$dynamic_speedup mode=$mode rows=$ROWS ocr_rows=$OCR_ROWS threads=$THREADS"
