#!/usr/bin/env bash
# test_stats.sh: infer.progress and infer.stats seen from a second session
# (issue 9; docs/sql.md "Watching the work").  A real PostgreSQL with
# pg_infer in shared_preload_libraries and one real infer-worker (CPU, the
# real PP-OCR models) on 127.0.0.1; a background psql runs infer.ocr over
# 40 real scanned pages, two rows a batch, and this shell polls:
#   (p) infer.progress names the background backend's pid, its query, the
#       OCR models, the planner's estimate (40), at most 2 batches in flight,
#       rows answered that grow between two looks, rows per second > 0;
#   (s) once it is done: no progress row is left, and infer.stats holds
#       one call of 40 rows in 21 batches (1, 2, 2, ..., 2, 1), no error,
#       bytes both ways;
#   (r) the same query with infer.enable_batching = off (a request a row):
#       infer.progress shows it too (rows_estimate 0), rows answered grow,
#       and nothing is left after it;
#   (c) a query cancelled (pg_cancel_backend) and a backend terminated
#       (pg_terminate_backend) in the middle of their scans leave no
#       progress row behind; the cancelled requests count at send only;
#   (f) with infer.max_stats_entries = 16, a 17th (model, worker) pair is
#       not counted and infer.stats_info() says so; a reset makes room;
#   (q) the worker's own times per request (Result.queue_ms, compute_ms):
#       on a simulated worker (real process, compute that sleeps), a
#       request sent while a 1.2 s one runs reports the wait, the slow
#       one its compute;
#   and no PostgreSQL crash-restart at any point (the postmaster's log).
# Prints "stats: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins stats "$WORKER"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
case $MODEL_DIR in /*) ;; *) MODEL_DIR=$ROOT/$MODEL_DIR ;; esac
PAGE=$(cd "${OCR_DATA:-$ROOT/../shared/data/ocr}" && pwd)/p03_book_gpl.png
PSQL=$TESTENV_PG_BIN/psql
OCR_MODELS='ppocr_det\+ppocr_cls\+ppocr_rec'	# a regex

use_cluster_cleanup

# wait_sql SQL VALUE [TRIES]: waits (TRIES x 0.1 s, default 50) until SQL
# gives VALUE; 1 if it does not.
wait_sql() {
	for _ in $(seq "${3:-50}"); do
		[ "$(q -c "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# background LABEL [SETTING]: runs the OCR query in a psql of its own,
# named by application_name LABEL (after SET SETTING, when given), output
# in $tmp/LABEL.out; sets BG to its pid.
background() {
	q >"$tmp/$1.out" 2>&1 <<EOF &
SET application_name = '$1';
${2:+SET $2;}
SET infer.batch_size = 2;
SET infer.max_inflight = 2;
-- batches as asked, however slow the pages (batch_rows_cap: a quarter of
-- infer.timeout in flight), as the counts below rest on them
SET infer.timeout = '1h';
-- the same page 40 times: no input cache, so that every row is sent
SET infer.input_cache_min_bytes = -1;
SELECT 'pages ' || count(t) FROM (SELECT infer.ocr(data) AS t FROM pages) s;
EOF
	BG=$!
	pids+=("$BG")
}

# backend_of LABEL: the pid of the backend whose application_name is LABEL.
backend_of() {
	q -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"
}

TESTENV_EXTRA_CONF="infer.max_stats_entries = 16"
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "stats: 0 passed, 1 failed"
	exit 1
fi
PGLOG=$tmp/pg/postgres.log
port=$(testenv_free_port)
start_named_worker w "$port" --model-dir "$MODEL_DIR" || exit 1

q <<EOF >/dev/null
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('w', 'tcp://127.0.0.1:$port');
CREATE TABLE pages AS
	SELECT n AS id, pg_read_binary_file('$PAGE') AS data
	  FROM generate_series(1, 40) AS n;
ANALYZE pages;
SELECT infer.stats_reset();
EOF

# --- (p) progress of a running query, from this session ------------------
background stats_ocr
ok=1
wait_sql "SELECT count(*) FROM infer.progress WHERE rows_done > 0" 1 200 || ok=0
vpid=$(backend_of stats_ocr)
first=$(q -F ' ' -c "SELECT pid, rows_done, rows_sent, batches_in_flight,
	rows_estimate, models, rows_per_second > 0, query ~ 'infer\\.ocr', scans
  FROM infer.progress")
check "(p) infer.progress shows the running OCR query" "ok=$ok $first" \
	"^ok=1 $vpid [0-9]+ [0-9]+ [0-2] 40 $OCR_MODELS t t 1\$"
done1=$(awk '{print $2}' <<<"$first")
sent1=$(awk '{print $3}' <<<"$first")
check "(p) rows sent run ahead of rows answered, at most 2 batches" \
	"$done1 $sent1 $((sent1 - done1))" '^[0-9]+ [0-9]+ [0-4]$'
ok=1
wait_sql "SELECT count(*) FROM infer.progress WHERE rows_done > $done1" 1 200 || ok=0
check "(p) rows answered grow while it runs" "ok=$ok" '^ok=1$'

# --- (s) once it is done ---------------------------------------------------
wait "$BG"
check "(s) the query answered every page" "$(cat "$tmp/stats_ocr.out")" '^pages 40$'
check "(s) no progress row is left" \
	"$(q -c "SELECT count(*) FROM infer.progress")" '^0$'
check "(s) infer.stats: one call, 40 rows in 21 batches, no error" \
	"$(q -F ' ' -c "SELECT model, worker, calls, rows, batches, errors,
		bytes_sent > 40 * length(data), bytes_received > 0,
		compute_ms > 0, queue_ms >= 0
	  FROM infer.stats, (SELECT data FROM pages LIMIT 1) p")" \
	"^$OCR_MODELS w 1 40 21 0 t t t t\$"

# --- (r) calls one row at a time (no InferBatch) ----------------------------
background stats_rows "infer.enable_batching = off"
ok=1
wait_sql "SELECT count(*) FROM infer.progress WHERE rows_done > 0" 1 300 || ok=0
vpid=$(backend_of stats_rows)
first=$(q -F ' ' -c "SELECT pid, rows_done, rows_sent - rows_done, batches_in_flight,
	rows_estimate, models, query ~ 'infer\\.ocr', scans
  FROM infer.progress")
check "(r) infer.progress shows a query whose calls run one row at a time" "ok=$ok $first" \
	"^ok=1 $vpid [0-9]+ [01] [01] 0 $OCR_MODELS t 1\$"
done1=$(awk '{print $2}' <<<"$first")
ok=1
wait_sql "SELECT count(*) FROM infer.progress WHERE rows_done > $done1" 1 300 || ok=0
check "(r) ... its rows answered grow" "ok=$ok" '^ok=1$'
wait "$BG"
check "(r) ... it answered every page, one request a page" \
	"$(cat "$tmp/stats_rows.out") $(q -F ' ' -c "SELECT calls, rows, batches FROM infer.stats
		WHERE model ~ '^$OCR_MODELS\$'")" '^pages 40 41 80 61$'
check "(r) ... and no progress row is left" \
	"$(q -c "SELECT count(*) FROM infer.progress")" '^0$'

# --- (c) cancelled and terminated scans leave nothing behind -------------
for how in cancel terminate; do
	q -c "SELECT infer.stats_reset()" >/dev/null
	background "stats_$how"
	ok=1
	wait_sql "SELECT count(*) FROM infer.progress WHERE rows_done > 0" 1 200 || ok=0
	vpid=$(backend_of "stats_$how")
	q -c "SELECT pg_${how}_backend($vpid)" >/dev/null
	wait "$BG"
	wait_sql "SELECT count(*) FROM infer.progress" 0 50 || ok=0
	check "(c) $how: the progress row goes with the scan" \
		"ok=$ok $(cat "$tmp/stats_$how.out")" \
		'^ok=1 ' 'canceling statement due to user request|terminating connection'
	check "(c) $how: infer.stats counted the call, fewer than 40 rows" \
		"$(q -F ' ' -c "SELECT calls, rows < 40, bytes_sent > 0 FROM infer.stats")" \
		'^1 t t$'
done

# --- (f) a full table --------------------------------------------------------
# 17 names for the text direction classifier: 17 (model, worker) pairs
LINE=$ROOT/tests/regress/data/line_upright.png
q <<EOF >/dev/null
SELECT infer.stats_reset();
SELECT infer.create_model('cls_' || i, 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192,
	mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}', labels => '{0,180}')
  FROM generate_series(1, 17) AS i;
EOF
# the 17 calls: one row at a time, each a request (and an entry) of its own
out=$(q -F ' ' <<EOF
SET infer.enable_batching = off;
SELECT string_agg(DISTINCT infer.classify('cls_' || i, pg_read_binary_file('$LINE')), ',')
  FROM generate_series(1, 17) AS i;
SELECT count(*), sum(calls), sum(rows) FROM infer.stats;
SELECT max_entries, entries, dropped FROM infer.stats_info();
SELECT infer.stats_reset();
SELECT infer.classify('cls_17', pg_read_binary_file('$LINE'));
SELECT model, calls FROM infer.stats;
EOF
)
check "(f) 16 pairs counted, the 17th dropped (its send and its reply), room after a reset" \
	"$(tr '\n' '|' <<<"$out")" '^0\|16 16 16\|16 16 2\|\|0\|cls_17 1\|$'

# --- (q) the worker's queue and compute times, per request ------------------
# a simulated worker (real process and protocol, compute that sleeps): one
# compute thread, so a quick request sent while a slow one runs waits
mkdir -p "$tmp/sim"
cat >"$tmp/sim/profile.json" <<'EOF'
{
  "load_bandwidth": 3e9,
  "output_values": 2,
  "models": {
    "slow.onnx": {"bytes": 1000000, "compute_ms": [[1, 1200]]},
    "quick.onnx": {"bytes": 1000000, "compute_ms": [[1, 5]]}
  }
}
EOF
sport=$(testenv_free_port)
start_named_worker sim "$sport" --model-dir "$tmp/sim" --simulate "$tmp/sim/profile.json" || exit 1
q <<EOF >/dev/null
SELECT infer.add_worker('sim', 'tcp://127.0.0.1:$sport');
SELECT infer.create_model('slow', 'slow.onnx', 'classify', labels => '{a,b}');
SELECT infer.create_model('quick', 'quick.onnx', 'classify', labels => '{a,b}');
SELECT infer.load_model('slow', 'sim'), infer.load_model('quick', 'sim');
SELECT infer.stats_reset();
EOF
q -c "SET infer.placement = locality;
	SELECT infer.classify('slow', '\\x01'::bytea)" >"$tmp/slow.out" 2>&1 &
BG=$!
pids+=("$BG")
ok=1
wait_sql "SELECT queue_length FROM infer.workers WHERE name = 'sim'" 1 100 || ok=0
t0=$(date +%s%N)
q -c "SET infer.placement = locality;
	SELECT infer.classify('quick', '\\x02'::bytea)" >/dev/null || ok=0
waited=$(ms_since "$t0")
wait "$BG"
check "(q) per request: the slow model's compute, the quick one's wait behind it" \
	"ok=$ok $(q -F ' ' -c "SELECT model, batches, compute_ms < 100,
		compute_ms BETWEEN 1150 AND 3000, queue_ms > 500, queue_ms <= $waited
	  FROM infer.stats WHERE worker = 'sim' ORDER BY model" | tr '\n' ' ')" \
	'^ok=1 quick 1 t f t t slow 1 f t f t $'

check_not "no server crash-restart" "$(cat "$PGLOG" 2>/dev/null)" \
	'terminated by signal|server process .* was terminated|all server processes terminated'

echo "stats: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
