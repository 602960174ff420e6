#!/usr/bin/env bash
# bench/e2e/bench.sh: SQL against the worker alone, the transport, and
# worker scaling (issue 8, "End to end" and "Scaling").
#
# 1. SQL versus direct.  $ROWS rows of real text-line crops (cut along the
#    boxes the worker's own detector finds in the real images, as
#    bench/batching does, with its make_crops.py) through the PP-OCR
#    direction classifier ppocr_cls, one infer-worker (--threads 1):
#      sql     SELECT id, infer.classify('ppocr_cls', img) FROM e2e_lines
#              (an InferBatch plan: checked in its EXPLAIN), timed by psql's
#              \timing in a session that has run a warm-up query;
#      direct  batching-client --ramp sending what InferBatch sends
#              (extension/inferbatch.c): batches of 1, 2, 4, ... up to
#              infer.batch_size (64), at most infer.max_inflight (4) in
#              flight, read-ahead no larger than the rows already answered.
#    $REPS runs of each, alternating; the ratio is of the medians.  Both
#    write "id|label" per row; the md5 of each must be the same.
# 2. Transport.  Bytes over the socket per row (request and reply frames,
#    batching-client's counters) and e2e-zmq-bw: ZeroMQ over tcp loopback
#    with 1 MiB messages, zero-copy and copying sends, next to memcpy of
#    1 MiB buffers in the same process.
# 3. Scaling.  The SQL query with 1, 2 and 4 infer-workers (--threads 1
#    each, all registered with infer.add_worker: InferBatch sends its
#    batches round-robin) and, when the plan has InferBatch under a Gather,
#    with 2 parallel workers (and $PAR_WORKERS infer-workers).  Each row
#    also shows the CPUs busy on average while it ran, from /proc: in the
#    infer-workers, in PostgreSQL, and on the whole machine (other users'
#    processes included), which says where the cores saturate.
#
# Ends with one line
#   RESULT: sql_vs_direct=X zmq_1mb_gbps=Z memcpy_gbps=M bytes_per_row=B
#           workers_1=R1rows/s workers_2=R2 workers_4=R4 parallel_2=P|na
#           zmq_copy_1mb_gbps=C direct=D sql=S rows=N
# (rows/s; sql_vs_direct is sql over direct, target at least 0.9).
# Environment: ROWS (2000), REPS (3), SCALE_REPS (2), PAR_WORKERS (2),
# CROPS (a folder of crops to use instead of making them).  Needs the
# extension installed (make install).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
ROWS=${ROWS:-2000}
REPS=${REPS:-3}
SCALE_REPS=${SCALE_REPS:-2}
PAR_WORKERS=${PAR_WORKERS:-2}
CROPS=${CROPS:-}
CLIENT=$BUILD/bin/bench/batching-client
WCLIENT=$BUILD/bin/tests/worker-client
ZMQBW=$BUILD/bin/bench/e2e-zmq-bw
PY=$BUILD/venv/bin/python
top=$(pwd)
tmp=$top/$BUILD/bench-e2e

# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_need bench-e2e -x "$BUILD/bin/infer-worker" "$CLIENT" "$WCLIENT" "$ZMQBW"
if [ -n "$CROPS" ]; then
	CROPS=$(cd "$CROPS" && pwd)
	case "$CROPS/" in
	"$tmp"/*) echo "bench-e2e: CROPS must be outside $tmp (it is emptied)" >&2; exit 1 ;;
	esac
fi
rm -rf "$tmp"
mkdir -p "$tmp"
chmod 755 "$tmp"

# median of the numbers given
median() {
	python3 -c "import sys, statistics; print('%.2f' % statistics.median(map(float, sys.argv[1:])))" "$@"
}

# --- four workers, one engine thread each -----------------------------------
EPS=()
for w in 1 2 3 4; do
	testenv_start_worker "$tmp/worker$w.log" --threads 1
	EPS+=("$TESTENV_ENDPOINT")
done
EP=${EPS[0]}
echo "bench-e2e: workers ${EPS[*]} (1 engine thread each), $(nproc) CPUs, $ROWS rows"

# --- the crops ---------------------------------------------------------------
if [ -n "$CROPS" ]; then
	crops=("$CROPS"/*.png)
else
	bench_images bench-e2e
	bench_boxes "$WCLIENT" "$EP" "$tmp/boxes.tsv"
	"$PY" bench/batching/make_crops.py "$tmp/boxes.tsv" "$tmp/crops" >/dev/null 2>"$tmp/crops.log"
	chmod -R a+rX "$tmp/crops"
	crops=("$tmp"/crops/*.png)
fi
[ -f "${crops[0]}" ] || { echo "bench-e2e: no crops" >&2; exit 1; }
echo "bench-e2e: ${#crops[@]} text-line crops, used in turn"

# --- the cluster and the table ------------------------------------------------
testenv_start_cluster "$tmp/pg"
{
	echo "CREATE EXTENSION pg_infer;"
	echo "SELECT infer.add_worker('w1', '$EP');"
	echo "CREATE TABLE e2e_crops (k int, img bytea);"
	k=0
	for f in "${crops[@]}"; do
		echo "INSERT INTO e2e_crops VALUES ($k, pg_read_binary_file('$(cd "$(dirname "$f")" && pwd)/$(basename "$f")'));"
		k=$((k + 1))
	done
	# row id i holds crop i mod n: what batching-client sends as row i
	echo "CREATE TABLE e2e_lines AS SELECT g AS id, c.img
	        FROM generate_series(0, $ROWS - 1) g
	        JOIN e2e_crops c ON c.k = g % ${#crops[@]} ORDER BY g;"
	echo "ALTER TABLE e2e_lines SET (parallel_workers = 2);"
	echo "VACUUM ANALYZE e2e_lines;"
} | psql -X -q -v ON_ERROR_STOP=1 >/dev/null

Q="SELECT id, infer.classify('ppocr_cls', img) FROM e2e_lines"
WARM="SELECT count(infer.classify('ppocr_cls', img)) FROM (SELECT img FROM e2e_lines LIMIT 64) s"
SERIAL="SET max_parallel_workers_per_gather = 0;"
PARALLEL="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"

# register N: the first N workers are the registered ones
register() {
	local n=$1 w
	{
		echo "SELECT infer.drop_worker(name) FROM infer.workers;"
		for w in $(seq "$n"); do echo "SELECT infer.add_worker('w$w', '${EPS[$((w - 1))]}');"; done
	} | psql -X -q -v ON_ERROR_STOP=1 >/dev/null
}

# sql_run SETTINGS OUT: runs $Q after a warm-up in one session, the rows
# sorted into OUT; prints rows/s (from psql's \timing of the query alone)
sql_run() {
	local settings=$1 out=$2 ms
	ms=$(psql -X -q -At -v ON_ERROR_STOP=1 <<SQL | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
$settings
$WARM;
\\o $out.raw
\\timing on
$Q;
SQL
	)
	sort -t'|' -k1,1n "$out.raw" >"$out"
	python3 -c "import sys; print('%.2f' % ($ROWS / (float(sys.argv[1]) / 1000)))" "$ms"
}

# ticks PID...: CPU ticks (user + system, reaped children included) of PIDs
ticks() {
	local t=0 p
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] &&
			t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 + $14 + $15 }')))
	done
	echo "$t"
}
# machine_ticks: "busy idle" ticks of all CPUs together
machine_ticks() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat
}

# cpu_case SETTINGS OUT: sql_run, and the CPU used meanwhile; sets RATE and
# CORES ("workers postgres machine": CPUs busy on average, from /proc)
cpu_case() {
	local t0 t1 w0 w1 p0 p1 m0 m1
	t0=$(date +%s.%N)
	w0=$(ticks "${TESTENV_PIDS[@]}")
	p0=$(ticks "$TESTENV_PG_PID")
	m0=$(machine_ticks)
	RATE=$(sql_run "$1" "$2")
	t1=$(date +%s.%N)
	sleep 0.2 # the postmaster reaps the session's backend (its ticks go to it)
	w1=$(ticks "${TESTENV_PIDS[@]}")
	p1=$(ticks "$TESTENV_PG_PID")
	m1=$(machine_ticks)
	CORES=$(python3 -c "
import sys
a = sys.argv[1:]
wall = float(a[1]) - float(a[0])
hz, n = float(a[8]), int(a[9])
mb = int(a[7].split()[0]) - int(a[6].split()[0])
mi = int(a[7].split()[1]) - int(a[6].split()[1])
print('%.2f %.2f %.2f' % ((int(a[3]) - int(a[2])) / hz / wall,
	(int(a[5]) - int(a[4])) / hz / wall, n * mb / max(mb + mi, 1)))" \
		"$t0" "$t1" "$w0" "$w1" "$p0" "$p1" "$m0" "$m1" \
		"$(getconf CLK_TCK)" "$(nproc)")
}

# direct_run OUT: batching-client as InferBatch sends; prints its line
direct_run() {
	"$CLIENT" --endpoint "$EP" --fragment classify --rows "$ROWS" --batch 64 \
		--inflight 4 --ramp --count-bytes --answers "$1" "${crops[@]}"
}

# --- 1. SQL versus direct -------------------------------------------------------
echo
echo "1. SQL versus direct (ppocr_cls, $ROWS rows, one worker, batches of 1, 2, 4 .. 64, 4 in flight)"
plan=$(psql -X -q -At -c "$SERIAL" -c "EXPLAIN (COSTS OFF) $Q")
sed 's/^/  | /' <<<"$plan"
if ! grep -q InferBatch <<<"$plan"; then
	echo "bench-e2e: the plan has no InferBatch node" >&2
	exit 1
fi
# warm the worker's model
"$CLIENT" --endpoint "$EP" --fragment classify --rows 64 --batch 64 "${crops[@]}" >/dev/null
sql_rates=() direct_rates=()
printf '  %-4s %-7s %10s %12s %10s  %s\n' rep path rows/s bytes/row seconds md5
for r in $(seq "$REPS"); do
	line=$(direct_run "$tmp/direct.$r")
	rate=$(sed -n 's/.*rows_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
	secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
	bout=$(sed -n 's/.*bytes_out=\([0-9]*\).*/\1/p' <<<"$line")
	bin=$(sed -n 's/.*bytes_in=\([0-9]*\).*/\1/p' <<<"$line")
	sort -t'|' -k1,1n "$tmp/direct.$r" >"$tmp/direct.$r.sorted"
	direct_rates+=("$rate")
	printf '  %-4s %-7s %10s %12s %10s  %s\n' "$r" direct "$rate" \
		"$(((bout + bin) / ROWS))" "$secs" "$(md5sum <"$tmp/direct.$r.sorted" | cut -c1-16)"
	rate=$(sql_run "$SERIAL" "$tmp/sql.$r")
	sql_rates+=("$rate")
	printf '  %-4s %-7s %10s %12s %10s  %s\n' "$r" sql "$rate" - - \
		"$(md5sum <"$tmp/sql.$r" | cut -c1-16)"
done
direct_med=$(median "${direct_rates[@]}")
sql_med=$(median "${sql_rates[@]}")
sql_vs_direct=$(ratio "$sql_med" "$direct_med")
answers="same answers"
for r in $(seq "$REPS"); do
	cmp -s "$tmp/direct.1.sorted" "$tmp/direct.$r.sorted" || answers="ANSWERS DIFFER"
	cmp -s "$tmp/direct.1.sorted" "$tmp/sql.$r" || answers="ANSWERS DIFFER"
done
echo "  median rows/s: direct $direct_med, sql $sql_med; sql_vs_direct $sql_vs_direct; $answers"
echo "  labels: $(cut -d'|' -f2 "$tmp/sql.1" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
# For scale: the same rows in full batches from the start (no ramp-up)
line=$("$CLIENT" --endpoint "$EP" --fragment classify --rows "$ROWS" --batch 64 \
	--inflight 4 "${crops[@]}")
echo "  direct without ramp-up (64 rows x 4 in flight from the start): $(sed -n 's/.*rows_per_s=\([0-9.]*\).*/\1/p' <<<"$line") rows/s"
# Where the backend's time goes: EXPLAIN ANALYZE's own counters (one more run)
echo "  EXPLAIN ANALYZE of the SQL query (the backend waits for replies for"
echo "  Reply Wait; the rest of Execution Time is its own work):"
explain=$(psql -X -q -At -c "$SERIAL" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $Q")
grep -E 'Batches|Mean Batch|Reply Wait|Worker Compute|Bytes Sent|Execution Time' <<<"$explain" |
	sed 's/^ */  | /'
sql_bytes=$(sed -n 's/.*Bytes Sent: \([0-9]*\).*/\1/p' <<<"$explain")
wait_ms=$(sed -n 's/.*Reply Wait: \([0-9.]*\).*/\1/p' <<<"$explain")
exec_ms=$(sed -n 's/.*Execution Time: \([0-9.]*\).*/\1/p' <<<"$explain")
python3 -c "import sys; w, e, n = map(float, sys.argv[1:]); print('  backend busy outside the wait: %.1f ms (%.1f%% of execution, %.1f us/row)' % (e - w, 100 * (e - w) / e, 1000 * (e - w) / n))" \
	"$wait_ms" "$exec_ms" "$ROWS"

# --- 2. Transport -----------------------------------------------------------------
echo
echo "2. Transport"
bytes_per_row=$(((bout + bin) / ROWS))
echo "  per row over the socket (direct): $((bout / ROWS)) bytes out (header + image), $((bin / ROWS)) bytes in (reply), $bytes_per_row in all"
echo "  per row from SQL (EXPLAIN ANALYZE Bytes Sent, image bytes only): $((sql_bytes / ROWS))"
bw=$("$ZMQBW" --size 1048576 --count 1000)
sed 's/^/  /' <<<"$bw" | grep -v '^  zmq_zerocopy_gbps='
zmq_gbps=$(sed -n 's/.*zmq_zerocopy_gbps=\([0-9.]*\).*/\1/p' <<<"$bw")
zmq_copy_gbps=$(sed -n 's/.*zmq_copy_gbps=\([0-9.]*\).*/\1/p' <<<"$bw")
memcpy_gbps=$(sed -n 's/.*memcpy_gbps=\([0-9.]*\).*/\1/p' <<<"$bw")
echo "  (memcpy of 1 MiB stays in the CPU caches)"

# --- 3. Scaling -------------------------------------------------------------------
echo
echo "3. Scaling (the SQL query, $ROWS rows, median of $SCALE_REPS; infer-workers of 1 engine thread each)"
echo "   CPUs busy on average during the runs (from /proc): in the infer-workers,"
echo "   in PostgreSQL (backends, parallel workers), and on the whole machine"
echo "   (other users included) out of $(nproc)"
declare -A SCALE
printf '  %-28s %10s %6s %8s %8s %8s  %s\n' case rows/s vs_1 workers postgres machine answers
# scale_case LABEL SETTINGS NAME: SCALE_REPS runs, median, one table row
scale_case() {
	local label=$1 settings=$2 name=$3 rates=() cores=() same=same r
	for r in $(seq "$SCALE_REPS"); do
		cpu_case "$settings" "$tmp/$name.$r"
		rates+=("$RATE")
		cores+=("$CORES")
		cmp -s "$tmp/direct.1.sorted" "$tmp/$name.$r" || same=DIFFER
	done
	SCALE[$name]=$(median "${rates[@]}")
	# the CPU figures of the last run
	printf '  %-28s %10s %6s %8s %8s %8s  %s\n' "$label" "${SCALE[$name]}" \
		"$(ratio "${SCALE[$name]}" "${SCALE[w1]}")" ${cores[-1]} "$same"
}
for n in 1 2 4; do
	register "$n"
	scale_case "$n infer-worker(s)" "$SERIAL" "w$n"
done
register "$PAR_WORKERS"
pplan=$(psql -X -q -At -c "$PARALLEL" -c "EXPLAIN (COSTS OFF) $Q")
parallel=na
if grep -q Gather <<<"$pplan" && grep -A20 Gather <<<"$pplan" | grep -q InferBatch; then
	scale_case "parallel 2+leader, $PAR_WORKERS iw" "$PARALLEL" par
	parallel=${SCALE[par]}
	echo "  parallel plan: $(tr '\n' ';' <<<"$pplan" | tr -s ' ')"
else
	echo "  parallel: not available (plan: $(tr '\n' ';' <<<"$pplan" | tr -s ' '))"
fi
echo "  ($(nproc) CPUs: beyond $(nproc) busy processes the rows/s stop growing)"

echo
echo "RESULT: sql_vs_direct=$sql_vs_direct zmq_1mb_gbps=$zmq_gbps memcpy_gbps=$memcpy_gbps bytes_per_row=$bytes_per_row workers_1=${SCALE[w1]}rows/s workers_2=${SCALE[w2]} workers_4=${SCALE[w4]} parallel_2=$parallel zmq_copy_1mb_gbps=$zmq_copy_gbps direct=$direct_med sql=$sql_med rows=$ROWS"
