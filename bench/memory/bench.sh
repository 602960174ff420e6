#!/usr/bin/env bash
# bench/memory/bench.sh: a backend's memory over a 1,000,000-row batched
# query (issue 3: "memory stays flat over a 1,000,000-row query").
#
# Starts a throwaway cluster and one infer-worker on 127.0.0.1
# (tools/testenv.sh) with a model directory of its own holding a tiny real
# ONNX model (make_inputs.py: GlobalAveragePool over an 8x8 RGB image,
# registered as task raw) and one 8x8 PNG.  Then, in one session,
#
#     DECLARE c CURSOR FOR
#         SELECT g, infer.predict('tiny', img)
#           FROM generate_series(1, $ROWS) AS g, bench_img;
#
# (an InferBatch node above the join: default batch size and in-flight
# limit; bench_img analyzed, so that the plan is costed for its one row)
# and MOVEs through it in steps.  After each step the backend
# samples itself: VmRSS and VmHWM from /proc/self/status, the total of its
# memory contexts and of the InferBatch ones (pg_backend_memory_contexts).
# Every row's answer is checked (the mean of each channel of the image)
# by a second pass that sums them.
#
# Prints the table, then
#     RESULT: rss_growth_ratio=X rss_first_mb=A rss_last_mb=B
#             ctx_growth_ratio=Y rows=N rows_per_s=R
# (one line), where the ratios are last over first sample (the first
# after 10,000 rows, once the batches have reached full size).
# Environment: ROWS (1000000).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
ROWS=${ROWS:-1000000}
PY=$BUILD/venv/bin/python
top=$(pwd)
tmp=$top/$BUILD/bench-memory

# shellcheck source=tools/testenv.sh
. tools/testenv.sh
trap testenv_stop EXIT

[ -x "$BUILD/bin/infer-worker" ] ||
	{ echo "bench-memory: missing $BUILD/bin/infer-worker (make it first)" >&2; exit 1; }
rm -rf "$tmp"
mkdir -p "$tmp/models"
"$PY" bench/memory/make_inputs.py "$tmp/models"
chmod -R a+rX "$tmp"

testenv_start_cluster "$tmp/pg" >/dev/null
worker_port=$(testenv_free_port)
"$BUILD/bin/infer-worker" --listen "tcp://127.0.0.1:$worker_port" \
	--model-dir "$tmp/models" >"$tmp/worker.log" 2>&1 &
TESTENV_PIDS+=("$!")
testenv_wait_port "$worker_port" 20 ||
	{ echo "bench-memory: infer-worker did not start; see $tmp/worker.log" >&2; exit 1; }

psql_run() {
	"$TESTENV_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d bench "$@"
}
"$TESTENV_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "CREATE DATABASE bench"
psql_run >/dev/null <<SQL
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('bench', 'tcp://127.0.0.1:$worker_port');
SELECT infer.create_model('tiny', 'tiny_gap.onnx', 'raw',
	input_height => 8, input_width => 8, mean => '{0,0,0}', std => '{1,1,1}');
CREATE TABLE bench_img AS
	SELECT pg_read_binary_file('$tmp/models/tiny.png') AS img;
ANALYZE bench_img;
SQL

# MOVE steps: up to 10k, 100k, then every 100k rows
steps=()
done_rows=0
for target in 10000 100000 $(seq 200000 100000 "$ROWS"); do
	[ "$target" -le "$ROWS" ] || break
	steps+=($((target - done_rows)))
	done_rows=$target
done
[ "$done_rows" -eq "$ROWS" ] || steps+=($((ROWS - done_rows)))

{
	cat <<'SQL'
LOAD 'pg_infer';
CREATE TEMP TABLE samples (rows bigint, at timestamptz, rss_kb bigint,
	hwm_kb bigint, ctx_bytes bigint, batch_ctx_bytes bigint);
-- one sample of this backend after `rows` rows
CREATE PROCEDURE pg_temp.sample(rows bigint) LANGUAGE sql AS $$
	INSERT INTO samples
	SELECT rows, clock_timestamp(),
		   substring(s FROM 'VmRSS:\s*([0-9]+)')::bigint,
		   substring(s FROM 'VmHWM:\s*([0-9]+)')::bigint,
		   (SELECT sum(total_bytes) FROM pg_backend_memory_contexts),
		   (SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
			 WHERE name LIKE 'InferBatch%' OR name = 'pg_infer reply')
	  FROM pg_read_file('/proc/self/status') AS s
$$;
BEGIN;
SQL
	echo "DECLARE c NO SCROLL CURSOR FOR SELECT g, infer.predict('tiny', img) FROM generate_series(1, $ROWS) AS g, bench_img;"
	echo "CALL pg_temp.sample(0);"
	n=0
	for s in "${steps[@]}"; do
		n=$((n + s))
		echo "MOVE FORWARD $s IN c;"
		echo "CALL pg_temp.sample($n);"
	done
	cat <<'SQL'
COMMIT;
\echo 'rows       rss_mb  hwm_mb  contexts_kb  inferbatch_kb  rows_per_s'
SELECT format('%-10s %6s  %6s  %11s  %13s  %10s', rows,
		round(rss_kb / 1024.0, 1), round(hwm_kb / 1024.0, 1),
		round(ctx_bytes / 1024.0), round(batch_ctx_bytes / 1024.0),
		coalesce(round((rows - lag(rows) OVER w) /
			extract(epoch FROM at - lag(at) OVER w)), 0))
  FROM samples WINDOW w AS (ORDER BY rows) ORDER BY rows;
-- first: the first sample after 10,000 rows (the batches are full size)
SELECT format('RESULT: rss_growth_ratio=%s rss_first_mb=%s rss_last_mb=%s ctx_growth_ratio=%s hwm_last_mb=%s rows=%s rows_per_s=%s',
		round(l.rss_kb::numeric / f.rss_kb, 3), round(f.rss_kb / 1024.0, 1),
		round(l.rss_kb / 1024.0, 1), round(l.ctx_bytes::numeric / f.ctx_bytes, 3),
		round(l.hwm_kb / 1024.0, 1), l.rows,
		round(l.rows / extract(epoch FROM l.at - z.at)))
  FROM (SELECT * FROM samples WHERE rows >= 10000 ORDER BY rows LIMIT 1) AS f,
	   (SELECT * FROM samples ORDER BY rows DESC LIMIT 1) AS l,
	   (SELECT * FROM samples WHERE rows = 0) AS z;
SQL
} >"$tmp/run.sql"

echo "bench-memory: $ROWS rows of infer.predict('tiny', 8x8 PNG) through a cursor, sampled in steps"
psql_run -At -f "$tmp/run.sql" >"$tmp/run.out"
grep -v '^RESULT' "$tmp/run.out"

# every answer is the image's channel means, (112, 112, 128) / 255 for
# make_inputs.py's gradient: counted in a second pass
check=$(psql_run -At -c "LOAD 'pg_infer'" -c "SELECT count(*) FILTER (
	WHERE abs(v[1] - 112 / 255.0) < 1e-5 AND abs(v[2] - 112 / 255.0) < 1e-5
	  AND abs(v[3] - 128 / 255.0) < 1e-5) || '/' || count(*)
	FROM (SELECT infer.predict('tiny', img) AS v
			FROM generate_series(1, $ROWS), bench_img OFFSET 0) AS s")
echo "right answers: $check"
[ "$check" = "$ROWS/$ROWS" ] || { echo "bench-memory: wrong answers" >&2; exit 1; }
grep '^RESULT' "$tmp/run.out"
