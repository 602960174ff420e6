#!/usr/bin/env bash
# bench/soak/bench.sh: the soak benchmark (issue 7): CLIENTS libpq clients
# loop ML queries for DURATION seconds against 2 real infer-workers, one
# of which is killed and started again on its endpoint halfway; every row
# of every answer is checked, and the resident memory of the backends, the
# pool monitor and the workers is compared between the warm-up and the end
# (docs/reliability.md, "Soak").
#
#   1. A throwaway cluster (pg_infer preloaded, tools/testenv.sh) with
#      soak_texts: 256 short real texts of tests/text/sentences.txt (20 to
#      200 bytes) in TEXT_GROUPS groups, and soak_images: the real images
#      of ../shared/data/ocr of at most IMAGE_MAX_BYTES bytes and the two
#      text-line crops of tests/regress/data in IMAGE_GROUPS groups.
#   2. Workers w1 and w2 (a copy of build/bin/infer-worker, CPU, THREADS
#      engine threads each, the real models of build/models) on 127.0.0.1;
#      "NAME PID" lines in $tmp/workers.
#   3. soak-driver (driver.c) makes the reference (each query kind over
#      each group once), then runs the load: MiniLM embeddings, the
#      prompt_task classifier with embeddings over the same input, the
#      PP-OCR direction classifier (label and scores) over the images, and
#      the classifier one row at a time; at RESTART_AT it runs
#      $tmp/restart.sh: w1 gets RESTART_SIGNAL, and a new w1 starts on the
#      same endpoint; the script exits once infer.workers shows it up.
#   4. The driver's tables and RESULT line; the server's log is searched for
#      backends that crashed (server_crashes in the RESULT line).
#
# Environment: DURATION (600 s), CLIENTS (8), WARMUP (DURATION / 10),
# RESTART_AT (DURATION / 2; "off": no restart), RESTART_SIGNAL (KILL),
# GRACE (5 s: the restart window lasts until this long after w1 is up
# again), THREADS (1), MAX_GROWTH (1.05), TEXT_GROUPS (16), IMAGE_GROUPS
# (4), IMAGE_MAX_BYTES (40000), WORKER_LOG_LEVEL (warn), WORKER
# (build/bin/infer-worker).  Exit status: the driver's (1 on a lost row,
# an error outside the restart window, a lost connection, growth at or
# over MAX_GROWTH), or 1 when a backend crashed.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
DURATION=${DURATION:-600}
CLIENTS=${CLIENTS:-8}
WARMUP=${WARMUP:-$((DURATION / 10))}
RESTART_AT=${RESTART_AT:-$((DURATION / 2))}
RESTART_SIGNAL=${RESTART_SIGNAL:-KILL}
GRACE=${GRACE:-5}
THREADS=${THREADS:-1}
MAX_GROWTH=${MAX_GROWTH:-1.05}
TEXT_GROUPS=${TEXT_GROUPS:-16}
IMAGE_GROUPS=${IMAGE_GROUPS:-4}
IMAGE_MAX_BYTES=${IMAGE_MAX_BYTES:-40000}
WORKER_LOG_LEVEL=${WORKER_LOG_LEVEL:-warn}
WORKER=${WORKER:-$BUILD/bin/infer-worker}
DRIVER=$BUILD/bin/bench/soak-driver
top=$(pwd)
tmp=$top/$BUILD/bench-soak
MODEL_DIR=$top/$BUILD/models

# shellcheck source=bench/lib.sh
. bench/lib.sh

# soak_stop: the EXIT trap: the workers of $tmp/workers (the restarted w1
# is not this shell's child), then the cluster.
soak_stop() {
	local pid
	if [ -f "$tmp/workers" ]; then
		while read -r _ pid; do
			testenv_stop_pid "$pid" TERM
		done <"$tmp/workers"
	fi
	testenv_stop
}
trap soak_stop EXIT

bench_need bench-soak -x "$WORKER" "$DRIVER"
bench_need bench-soak -e "$MODEL_DIR/minilm/model.onnx" "$MODEL_DIR/prompt_task/model.onnx" \
	"$MODEL_DIR/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$SHARED/data/ocr"
rm -rf "$tmp"
mkdir -p "$tmp"
# a copy: a rebuild of build/bin during the bench must not change the workers
cp "$WORKER" "$tmp/infer-worker"
WORKER=$tmp/infer-worker

# The inputs.
awk 'length($0) >= 20 && length($0) <= 200 && !/\\/ && !/\t/ { print; if (++n == 256) exit }' \
	tests/text/sentences.txt >"$tmp/texts.txt"
images=()
for f in "$SHARED"/data/ocr/*.png "$SHARED"/data/ocr/*.jpg tests/regress/data/line_*.png; do
	[ "$(stat -c %s "$f")" -le "$IMAGE_MAX_BYTES" ] && images+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
[ "${#images[@]}" -ge "$IMAGE_GROUPS" ] || { echo "bench-soak: too few images" >&2; exit 1; }

TESTENV_EXTRA_CONF="max_connections = $((CLIENTS + 20))"
testenv_start_cluster "$tmp/pg"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION pg_infer;
CREATE TABLE soak_text_lines (n serial, body text NOT NULL);
\\copy soak_text_lines (body) FROM '$tmp/texts.txt'
CREATE TABLE soak_texts AS
SELECT n AS id, (n - 1) % $TEXT_GROUPS AS grp, body FROM soak_text_lines;
CREATE TABLE soak_image_files (n serial, img bytea NOT NULL);
$(for f in "${images[@]}"; do echo "INSERT INTO soak_image_files (img) VALUES (pg_read_binary_file('$f'));"; done)
CREATE TABLE soak_images AS
SELECT n AS id, (n - 1) % $IMAGE_GROUPS AS grp, img FROM soak_image_files;
ANALYZE soak_texts, soak_images;
SQL
conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE"

# start_soak_worker NAME PORT: starts worker NAME on 127.0.0.1:PORT, appends
# "NAME PID" to $tmp/workers and waits until it listens.
start_soak_worker() {
	"$WORKER" --listen "tcp://127.0.0.1:$2" --model-dir "$MODEL_DIR" --threads "$THREADS" \
		--log-level "$WORKER_LOG_LEVEL" </dev/null >/dev/null 2>>"$tmp/$1.log" &
	echo "$1 $!" >>"$tmp/workers"
	disown "$!" # stopped by pid (soak_stop); no job notice when w1 is killed
	testenv_wait_port "$2" 20 || { cat "$tmp/$1.log" >&2; return 1; }
	psql -X -q -At -c "SELECT infer.add_worker('$1', 'tcp://127.0.0.1:$2')" >/dev/null
}
port1=$(testenv_free_port)
port2=$(testenv_free_port)
while [ "$port2" = "$port1" ]; do port2=$(testenv_free_port); done
start_soak_worker w1 "$port1"
start_soak_worker w2 "$port2"
for _ in $(seq 100); do
	[ "$(psql -X -At -c "SELECT count(*) FROM infer.workers WHERE status = 'up'")" = 2 ] && break
	sleep 0.1
done

# The restart: w1 gets RESTART_SIGNAL; once it is gone a new w1 listens on
# the same endpoint; done when infer.workers shows it up (30 s at most).
cat >"$tmp/restart.sh" <<SH
#!/usr/bin/env bash
set -eu
cd '$top'
. tools/testenv.sh
export PGHOST='$PGHOST' PGPORT='$PGPORT' PGUSER='$PGUSER' PGDATABASE='$PGDATABASE'
old=\$(awk '\$1 == "w1" { print \$2 }' '$tmp/workers')
echo "--- restart: $RESTART_SIGNAL to pid \$old at \$(date -u +%FT%TZ)" >>'$tmp/w1.log'
kill -$RESTART_SIGNAL "\$old"
for _ in \$(seq 300); do kill -0 "\$old" 2>/dev/null || break; sleep 0.1; done
'$WORKER' --listen 'tcp://127.0.0.1:$port1' --model-dir '$MODEL_DIR' --threads '$THREADS' \\
	--log-level '$WORKER_LOG_LEVEL' </dev/null >/dev/null 2>>'$tmp/w1.log' &
new=\$!
sed -i "s/^w1 .*/w1 \$new/" '$tmp/workers'
testenv_wait_port '$port1' 20
for _ in \$(seq 300); do
	s=\$(psql -X -At -c "SELECT status FROM infer.workers WHERE name = 'w1'")
	[ "\$s" = up ] && exit 0
	sleep 0.1
done
exit 1
SH
chmod +x "$tmp/restart.sh"
restart_args=(--restart-at "$RESTART_AT" --restart-cmd "$tmp/restart.sh")
[ "$RESTART_AT" = off ] && restart_args=()

echo "bench-soak: $CLIENTS clients, $DURATION s, workers w1 (tcp://127.0.0.1:$port1) and" \
	"w2 (tcp://127.0.0.1:$port2), $THREADS engine thread(s) each, $(wc -l <"$tmp/texts.txt") texts," \
	"${#images[@]} images, $(nproc) CPUs"
set +e
"$DRIVER" --conninfo "$conninfo" --workers "$tmp/workers" --clients "$CLIENTS" \
	--duration "$DURATION" --warmup "$WARMUP" --grace "$GRACE" --max-growth "$MAX_GROWTH" \
	--log "$tmp/queries.tsv" ${restart_args[@]+"${restart_args[@]}"} |
	tee "$tmp/driver.out" | grep --line-buffered -v '^RESULT:'
status=${PIPESTATUS[0]}
set -e

# A backend that crashed makes the postmaster log it and restart them all.
crashes=$(grep -cE 'terminated by signal|was terminated by|server process .* exited with exit code [^0]' \
	"$tmp/pg/postgres.log" || true)
if [ "$crashes" -gt 0 ]; then
	echo "bench-soak: FAIL: the server log shows $crashes crashed processes:"
	grep -E 'terminated by signal|was terminated by|exited with exit code' "$tmp/pg/postgres.log" | head -5
	status=1
fi
echo "worker logs: $tmp/w1.log, $tmp/w2.log; every query: $tmp/queries.tsv"
result=$(grep '^RESULT:' "$tmp/driver.out" || echo "RESULT: failed=1")
echo "$result server_crashes=$crashes"
exit "$status"
