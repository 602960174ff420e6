#!/usr/bin/env bash
# test_faults.sh: process-level fault tests of issue 7 "Faults" that
# test_pool.sh does not cover (docs/reliability.md "Faults"):
#   (t) a backend terminated (pg_terminate_backend) while its batches run
#       on a slow worker: the worker drops its requests (its log names the
#       cancels, by the request ids that carry the backend's pid), its
#       queue and the pool's in-flight count go back to 0, the memory it
#       held for them is freed (its request_bytes back to 0 and its heap
#       back to where it was before, within 16 KiB, having held at least
#       two rows of 48 kB), and a query of another session is answered at
#       once;
#   (c) the same with a query cancel (pg_cancel_backend);
#   (r) a row larger than every worker's --max-message-bytes (which the
#       workers publish) is refused before it is sent: 54000 naming the
#       row, the limit and a worker; NULL and a WARNING under
#       infer.on_error = null, the other rows answered in order; per-row
#       calls alike; no connection lost;
#   (p) a poison request (one that makes every worker drop the
#       connection: a header over their --max-message-bytes) is not sent
#       for ever: with infer.retries = 2 it is the statement's error after
#       it failed on the two workers (a re-send never goes back to a
#       worker that lost it while the other is up), naming the rows and
#       both workers; with infer.retries = 0 after the first; the workers
#       are up again and the rows in smaller requests are answered;
#   (h) more requests outstanding at one worker, on one socket, than
#       ZeroMQ's default high-water mark (1000 messages): every row is
#       answered once, with its own answer;
#   (k) a worker killed (SIGKILL) during a per-row query
#       (infer.enable_batching = off: no InferBatch) with a second worker
#       up: the call it held goes to the other one, and the query returns
#       every row once with the answers of a reference made before; alone,
#       the query fails with 08006 within infer.timeout + 1 s, saying no
#       other worker is up; both restarted on their endpoints are up; a
#       worker hung (SIGSTOP) while it holds a per-row call: the call goes
#       to the other worker once the pool finds it down; with both down, a
#       new query fails after infer.worker_timeout, not infer.timeout;
#   (s) a worker stopped (SIGTERM) while it holds requests of a batched
#       query, then of a per-row query: it answers them 57P01 (not run),
#       they go to the other worker, every row once with the reference's
#       answers; the stopped worker is down; infer.stats counts each lost
#       request as one error of the worker that lost it, and every row
#       answered once; likewise a worker killed (SIGKILL) while it holds
#       several batches: those sent again before their own wait found
#       the loss count too;
#   (x) an idle worker killed (SIGKILL) during a batched round_robin
#       query with infer.worker_timeout 60 s: the next send to it finds
#       its connection gone and marks it down after 500 ms, so the query
#       ends within 10 s with every row once (not after infer.timeout);
#       infer.load_model on it then fails after infer.worker_timeout, not
#       infer.timeout;
#   (d) a worker dropped (infer.drop_worker) while a round_robin query
#       runs: that query sends it no more requests, every row once;
#   (g) two calls over one input that cost sends apart (each model
#       resident on its own worker), one worker killed (SIGKILL) mid-query:
#       its requests go to the other, every row once with both calls' own
#       answers;
#   (w) s2 restarted with a larger --max-message-bytes than s1's: a row
#       over s1's limit goes to s2 under every policy, no connection lost;
#       s2 killed while it holds that row (batched, then per-row): 54000,
#       the row not sent to s1;
#   and no PostgreSQL crash-restart at any point (the postmaster's log).
#
# The workers are simulated (--simulate: real infer-worker processes, the
# real protocol and queueing, compute that sleeps) so that a slow model
# costs no CPU.  Prints "faults: N passed, M failed"; exits 1 on any
# failure.  Every process it starts (workers, background psql, the
# postmaster) is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins faults "$WORKER" "$CLIENT"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
case $CLIENT in /*) ;; *) CLIENT=$ROOT/$CLIENT ;; esac
PSQL=$TESTENV_PG_BIN/psql
T0=$(date +%s%N)

use_cluster_cleanup



# start_sim_worker NAME PORT [FLAG...]: a simulated infer-worker on
# 127.0.0.1:PORT (frames over 64 KiB drop the connection, unless a FLAG
# says otherwise), log in $tmp/NAME.log; sets PID_<NAME>; waits until it
# listens.
start_sim_worker() {
	start_named_worker "$1" "$2" --model-dir "$tmp/sim" \
		--simulate "$tmp/sim/profile.json" --max-message-bytes 65536 "${@:3}"
}

# wait_sql SQL VALUE [TRIES]: waits (TRIES x 0.1 s, default 50) until SQL
# gives VALUE; 1 if it does not.
wait_sql() {
	for _ in $(seq "${3:-50}"); do
		[ "$(q -c "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_held NAME N [TRIES]: waits (TRIES x 0.02 s, default 200) until worker
# NAME holds at least N requests in flight, then 50 ms more (a request counts
# in flight from the moment placement chooses its worker; its send follows
# within a few ms); sets held to the last count.
wait_held() {
	held=0
	for _ in $(seq "${3:-200}"); do
		held=$(q -c "SELECT inflight_requests FROM infer.workers WHERE name = '$1'")
		[ "${held:-0}" -ge "$2" ] && sleep 0.05 && return 0
		sleep 0.02
	done
	return 1
}

# bg_sql LABEL LINE...: runs the SQL lines in one background session, its
# output in $tmp/LABEL.out; sets bg to its pid (killed at exit).
bg_sql() {
	local label=$1
	shift
	printf '%s\n' "$@" | q >"$tmp/$label.out" 2>&1 &
	bg=$!
	pids+=("$bg")
}

# worker_memory PORT: "request_bytes=R heap_bytes=H" of the worker on PORT
# (a ping's state: the bytes of the requests it holds, and its allocator's
# bytes in use, 0 when not known, as under AddressSanitizer).
worker_memory() {
	"$CLIENT" --endpoint "tcp://127.0.0.1:$1" --timeout-ms 5000 ping |
		grep -oE 'request_bytes=[0-9]+ heap_bytes=[0-9]+'
}

# --- the cluster and two simulated workers ---------------------------------
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "faults: 0 passed, 1 failed"
	exit 1
fi
PGLOG=$tmp/pg/postgres.log
ports=()
while [ "${#ports[@]}" -lt 2 ]; do
	p=$(testenv_free_port)
	if [ "$p" != "$PGPORT" ] && [[ " ${ports[*]} " != *" $p "* ]]; then
		ports+=("$p")
	fi
done
# slow.onnx sleeps 300 ms a row; quick.onnx 3 ms a row, 150 ms for 64 rows;
# mid.onnx 20 ms a row
mkdir -p "$tmp/sim"
cat >"$tmp/sim/profile.json" <<'EOF'
{
  "load_bandwidth": 3e9,
  "output_values": 2,
  "models": {
    "slow.onnx": {"bytes": 1000000, "compute_ms": [[1, 300], [16, 4800]]},
    "quick.onnx": {"bytes": 1000000, "compute_ms": [[1, 3], [64, 150]]},
    "mid.onnx": {"bytes": 1000000, "compute_ms": [[1, 20], [16, 320]]},
    "mid2.onnx": {"bytes": 1000000, "compute_ms": [[1, 20], [16, 320]]},
    "tiny.onnx": {"bytes": 1000000, "compute_ms": [[1, 0.01], [2048, 2]]}
  }
}
EOF
start_sim_worker s1 "${ports[0]}" || exit 1
start_sim_worker s2 "${ports[1]}" || exit 1

q <<EOF >/dev/null
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('s1', 'tcp://127.0.0.1:${ports[0]}');
SELECT infer.add_worker('s2', 'tcp://127.0.0.1:${ports[1]}');
SELECT infer.create_model('slow', 'slow.onnx', 'classify', labels => '{a,b}');
SELECT infer.create_model('quick', 'quick.onnx', 'classify', labels => '{a,b}');
SELECT infer.create_model('mid', 'mid.onnx', 'classify', labels => '{a,b}');
SELECT infer.create_model('mid2', 'mid2.onnx', 'classify', labels => '{a,b}');
SELECT infer.create_model('tiny', 'tiny.onnx', 'classify', labels => '{a,b}');
-- small distinct rows; the simulated answer names each row's SHA-256
CREATE TABLE t (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO t SELECT n, convert_to('row ' || n, 'UTF8') FROM generate_series(1, 2400) AS n;
-- rows of 48 kB (under the workers' 64 KiB), each its own
CREATE TABLE big (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO big SELECT n, convert_to(n || repeat(chr(65 + n % 26), 48000), 'UTF8')
  FROM generate_series(1, 100) AS n;
-- row 3 is larger than the workers' --max-message-bytes (64 KiB): (r)
CREATE TABLE p (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO p SELECT n, CASE WHEN n = 3 THEN decode(repeat('ab', 100000), 'hex')
                             ELSE convert_to('poison test ' || n, 'UTF8') END
  FROM generate_series(1, 5) AS n;
-- 4100 small rows: (p) sends 2048 of them in one request
CREATE TABLE hp (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO hp SELECT n, convert_to('h' || n, 'UTF8') FROM generate_series(1, 4100) AS n;
EOF
ok=1
wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up || ok=0
check "two simulated workers up" "ok=$ok" '^ok=1$'
q -c "SELECT infer.load_model('slow', 's1')" >/dev/null

# --- (t) and (c): a backend terminated or cancelled mid-query ------------------
# victim SIGNAL_FN LABEL: runs 40 slow.onnx rows (300 ms each, up to 8
# batches at s1) in a background session, waits until s1 holds at least 2
# of its requests, calls SIGNAL_FN (pg_terminate_backend or
# pg_cancel_backend) on it, and checks what follows.
victim() {
	local fn=$1 label=$2 vpid held bg rc out t0 ms cancels lines_before
	local mem_before mem_during mem_after
	# the same work, 3 rows, first: what the worker keeps after any request
	# (its allocator's caches, the peer's entries) is in the level before
	q -c "SET infer.placement = locality" -c "SET infer.input_cache_min_bytes = -1" \
		-c "SELECT count(v) FROM (SELECT infer.classify('slow', data) AS v FROM big WHERE n > 90 AND n <= 93 OFFSET 0) AS s" >/dev/null
	mem_before=$(worker_memory "${ports[0]}")
	q >"$tmp/$label.out" 2>&1 <<EOF &
SET application_name = 'faults_victim';
SET infer.placement = locality;
SET infer.batch_size = 1;
SET infer.max_inflight = 8;
SET infer.input_cache_min_bytes = -1;
SELECT 'victim ' || count(v)
  FROM (SELECT infer.classify('slow', data) AS v FROM big WHERE n <= 40 OFFSET 0) AS s;
EOF
	bg=$!
	pids+=("$bg")
	wait_held s1 2 250
	mem_during=$(worker_memory "${ports[0]}")
	vpid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'faults_victim'")
	lines_before=$(wc -l <"$tmp/s1.log")
	t0=$(date +%s%N)
	q -c "SELECT $fn($vpid)" >/dev/null
	wait "$bg"
	rc=$?
	out=$(cat "$tmp/$label.out")
	ok=1
	wait_sql "SELECT queue_length + inflight_requests FROM infer.workers WHERE name = 's1'" 0 || ok=0
	ms=$(ms_since "$t0")
	# the cancels the worker logged for the victim's request ids (pid << 32 | n)
	cancels=0
	while read -r id; do
		[ $((id >> 32)) = "$vpid" ] && cancels=$((cancels + 1))
	done < <(tail -n +"$((lines_before + 1))" "$tmp/s1.log" |
		grep -oE 'request [0-9]+: cancel dropped the (queued|running) request' |
		grep -oE '[0-9]+' | head -n 64)
	check "($label) $fn while s1 held $held of its requests: the session ends with its error" \
		"held=$held rc=$rc $out" "^held=([2-8]) rc=[1-9]" "$3"
	check "($label) ... s1 logged $cancels cancels of its requests; queue and in-flight 0 again in $ms ms" \
		"cancels=$cancels ok=$ok" '^cancels=[1-9][0-9]* ok=1$'
	# the victim's connection is torn down after its requests: up to 2 s
	for _ in $(seq 20); do
		mem_after=$(worker_memory "${ports[0]}")
		[ "$(memory_freed "$mem_before" "$mem_during" "$mem_after")" = freed ] && break
		sleep 0.1
	done
	check "($label) ... s1 freed what it held: before [$mem_before] during [$mem_during] after [$mem_after]" \
		"$(memory_freed "$mem_before" "$mem_during" "$mem_after")" '^freed$'
	t0=$(date +%s%N)
	out=$(q -c "SET infer.placement = locality" \
		-c "SELECT 'other ' || count(DISTINCT v) FROM (SELECT infer.classify('slow', data) AS v FROM t WHERE n <= 3 OFFSET 0) AS s" 2>&1)
	check "($label) ... another session's query on s1 is answered ($(ms_since "$t0") ms)" \
		"$out" '^other 3$'
}
# memory_freed BEFORE DURING AFTER (worker_memory's lines): "freed" when
# the worker held at least two of the victim's 48 kB rows during, holds
# no request's bytes after, and its heap is back within 16 KiB of before
# (under AddressSanitizer, heap_bytes 0: the request bytes alone).
memory_freed() {
	local rb hb rd hd ra ha
	read -r rb hb <<<"$(echo "$1" | tr -c '0-9\n' ' ')"
	read -r rd hd <<<"$(echo "$2" | tr -c '0-9\n' ' ')"
	read -r ra ha <<<"$(echo "$3" | tr -c '0-9\n' ' ')"
	if [ -z "${ra:-}" ] || [ -z "${rd:-}" ] || [ -z "${hb:-}" ]; then
		echo "no figures"
	elif [ "$rd" -lt 96000 ] || [ "$ra" != 0 ] || [ "$rb" != 0 ]; then
		echo "request bytes $rb, $rd, $ra"
	elif [ "$hb" != 0 ] && [ $((hd - hb)) -lt "$rd" ]; then
		echo "heap grew by $((hd - hb)) while it held $rd request bytes"
	elif [ "$hb" != 0 ] && [ $((ha - hb)) -gt 16384 ]; then
		echo "heap $((ha - hb)) bytes above before"
	else
		echo freed
	fi
}
victim pg_terminate_backend t 'FATAL:  terminating connection due to administrator command'
victim pg_cancel_backend c 'ERROR:  canceling statement due to user request'

# --- (r) a row larger than every worker reads ---------------------------------------
# Row 3 (100000 bytes) is over both workers' --max-message-bytes (64 KiB),
# which they publish: it is refused before it is sent (54000), as a row's
# error, and nothing is sent that would make a worker drop the connection.
POISON_Q="SELECT n, infer.classify('quick', data) FROM p ORDER BY n"
t0=$(date +%s%N)
out=$(q 2>&1 <<EOF
\set VERBOSITY verbose
SET infer.placement = round_robin;
SET infer.batch_size = 2;
SET client_min_messages = debug1;
$POISON_Q;
EOF
)
rc=$?
check "(r) a row over every worker's --max-message-bytes: 54000 before it is sent ($(ms_since "$t0") ms)" \
	"rc=$rc $out" '^rc=[1-9]' \
	'ERROR:  54000: input of 100000 bytes is larger than any inference worker reads' \
	'DETAIL:  The input of row 3 was for infer\.classify with model "quick"; it was not sent\.  The largest an inference worker that is up reads is 65536 bytes \("s[12]", its --max-message-bytes\)\.' \
	'HINT:  Start the inference workers with a larger --max-message-bytes, or send a smaller input\.'
check_not "(r) ... no connection was lost" "$out" 'was lost|lost the connection'
out=$(q 2>&1 <<EOF
SET infer.placement = cost;
SET infer.on_error = 'null';
SELECT string_agg(n || '=' || coalesce(v, 'NULL'), ',') FROM (SELECT n, infer.classify('quick', data) AS v FROM p ORDER BY n) AS s;
EOF
)
check "(r) ... with infer.on_error = null: row 3 NULL with a WARNING, the others answered in order" \
	"$out" 'WARNING:  input of 100000 bytes is larger than any inference worker reads' \
	'^1=sim:quick:[0-9a-f]+,2=sim:quick:[0-9a-f]+,3=NULL,4=sim:quick:[0-9a-f]+,5=sim:quick:[0-9a-f]+$'
out=$(q -c "SET infer.enable_batching = off" -c "SET infer.on_error = 'null'" \
	-c "SELECT count(*) FILTER (WHERE v IS NULL) || ' ' || count(v) FROM (SELECT infer.classify('quick', data) AS v FROM p) AS s" 2>&1)
check "(r) ... per-row calls: the same refusal" "$out" \
	'WARNING:  input of 100000 bytes is larger than any inference worker reads' '^1 4$'
check "(r) ... both workers up" \
	"$(q -c "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers")" '^up,up$'

# --- (p) a poison request: retries bounded ------------------------------------------
# A request that makes every worker drop the connection: a batch of 2048
# rows whose header, with each row's SHA-256 (infer.input_cache_min_bytes
# = 0), is over the workers' 64 KiB (the rows alone are small; the ramp-up
# sends 1, 2, 4, ..., 1024 rows first, whose headers fit).  It is not sent
# for ever: after the two workers lost it, or after infer.retries sends.
POISON_Q="SELECT count(v) FROM (SELECT infer.classify('tiny', data) AS v FROM hp OFFSET 0) AS s"
t0=$(date +%s%N)
out=$(q 2>&1 <<EOF
\set VERBOSITY verbose
SET infer.placement = round_robin;
SET infer.batch_size = 2048;
SET infer.input_cache_min_bytes = 0;
$POISON_Q;
EOF
)
rc=$?
ms=$(ms_since "$t0")
check "(p) poison request, infer.retries = 2: its error after the 2 workers lost it, in $ms ms" \
	"rc=$rc ms=$ms $out" '^rc=[1-9][0-9]* ms=([0-9]{1,3}|[1-4][0-9]{3}) ' \
	'ERROR:  08006: inference of rows 2048 to 4095 \(2048 rows sent\) failed on inference workers "s[12]", "s[12]"' \
	'DETAIL:  The request was sent 2 times \(infer\.retries = 2\) and each worker lost it: lost the connection to inference worker "s[12]"'
check_not "(p) ... the two workers are distinct" "$out" '"s1", "s1"|"s2", "s2"'
ok=1
wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up || ok=0
out=$(q 2>&1 <<EOF
\set VERBOSITY verbose
SET infer.placement = cost;
SET infer.batch_size = 2048;
SET infer.input_cache_min_bytes = 0;
SET infer.retries = 0;
$POISON_Q;
EOF
)
check "(p) infer.retries = 0: its error after the first worker" "ok=$ok $out" '^ok=1' \
	'ERROR:  08006: inference of rows 2048 to 4095 \(2048 rows sent\) failed on inference worker "s[12]"$' \
	'DETAIL:  The request was sent 1 time \(infer\.retries = 0\)'
ok=1
wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up || ok=0
check "(p) ... the workers are up again; the same rows in smaller requests are answered" \
	"ok=$ok $(q -c "SET infer.batch_size = 1024" -c "SET infer.input_cache_min_bytes = 0" -c "$POISON_Q")" \
	'^ok=1 4100$'
check "(p) infer.retries is a user setting, 0 to 16" \
	"$(q -c "SELECT setting || ' ' || context || ' ' || min_val || ' ' || max_val FROM pg_settings WHERE name = 'infer.retries'")" \
	'^2 user 0 16$'

# --- (h) more requests at one worker than ZeroMQ's high-water mark -------------
# 2400 one-row batches, up to 1024 in flight (the read-ahead lets the
# in-flight rows grow with the rows returned), each batch three requests
# (three calls with different inputs), to s2 alone (quick.onnx resident
# there, locality) over the backend's one socket to it; a poller records
# the most requests s2 held at once.
q -c "SELECT infer.load_model('quick', 's2')" >/dev/null
q >"$tmp/h.out" 2>&1 <<EOF &
SET infer.placement = locality;
SET infer.batch_size = 1;
SET infer.max_inflight = 1024;
CREATE TABLE h AS
SELECT n, data, infer.classify('quick', data) AS v1,
       infer.classify('quick', data || '\x01'::bytea) AS v2,
       infer.classify('quick', data || '\x02'::bytea) AS v3
  FROM t;
EOF
bg=$!
pids+=("$bg")
t0=$(date +%s%N)
most=0
while kill -0 "$bg" 2>/dev/null; do
	n=$(q -c "SELECT inflight_requests FROM infer.workers WHERE name = 's2'" 2>/dev/null)
	[ "${n:-0}" -gt "$most" ] && most=$n
	sleep 0.02
done
wait "$bg"
rc=$?
check "(h) 2400 batches of 3 requests in $(ms_since "$t0") ms, up to $most requests in flight at s2 at once (> 1000): every row once, its own answers" \
	"rc=$rc most=$most $(cat "$tmp/h.out") $(q -c "SELECT count(*) || ' ' || count(DISTINCT n) || ' ' ||
		count(*) FILTER (WHERE v1 ~ ('^sim:[^:]+:' || left(encode(sha256(data), 'hex'), 16) || '\$')
		                   AND v2 ~ ('^sim:[^:]+:' || left(encode(sha256(data || '\x01'::bytea), 'hex'), 16) || '\$')
		                   AND v3 ~ ('^sim:[^:]+:' || left(encode(sha256(data || '\x02'::bytea), 'hex'), 16) || '\$'))
		FROM h")" \
	'^rc=0 most=(10[0-9][0-9]|1[1-9][0-9][0-9]|[2-9][0-9]{3})  2400 2400 2400$'
check "(h) ... s2's queue and the pool's in-flight count are 0 after" \
	"$(q -c "SELECT queue_length + inflight_requests FROM infer.workers WHERE name = 's2'")" '^0$'

# --- (k) and (s): a worker lost mid-query, its rows sent to the other ---------
# digest TABLE: "rows distinct md5" of TABLE(n, v) in row order.
digest() {
	q -c "SELECT count(*) || ' ' || count(DISTINCT n) || ' ' ||
	             md5(string_agg(n || '=' || v, ',' ORDER BY n)) FROM $1"
}
# the reference: mid.onnx over rows 1..150, batched, both workers up
q -c "CREATE TABLE ref_mid AS SELECT n, infer.classify('mid', data) AS v FROM t WHERE n <= 150" >/dev/null
REF_MID=$(digest ref_mid)
q -c "CREATE TABLE ref_slow AS SELECT n, infer.classify('slow', data) AS v FROM t WHERE n <= 10" >/dev/null
REF_SLOW=$(digest ref_slow)
check "(k) the reference: 150 rows, each its own simulated answer" \
	"$REF_MID $(q -c "SELECT count(*) FROM ref_mid JOIN t USING (n) WHERE v ~ ('^sim:[^:]+:' || left(encode(sha256(data), 'hex'), 16) || '\$')" 2>&1)" \
	'^150 150 [0-9a-f]{32} 150$'
check "(k) ... and slow.onnx over 10 rows" "$REF_SLOW" '^10 10 [0-9a-f]{32}$'

# lose NAME SIGNAL LABEL HELD SETTINGS: runs model $LOSE_MODEL (mid) over
# rows 1..$LOSE_ROWS (150) into
# table LABEL in the background (SETTINGS first, debug1 messages kept),
# the model resident at worker NAME only (locality sends it everything, unless
# it is down: then the other); waits
# until NAME holds at least HELD requests and signals it with SIGNAL; sets
# rc, out ("held=N " and psql's output), ms (from the signal to the end)
# and stats (infer.stats of the model over the query: "ROWS NAME_ERRORS
# OTHER_ERRORS").
lose() {
	local name=$1 sig=$2 label=$3 want=$4 settings=$5 bg t0 held pidvar
	local model=${LOSE_MODEL:-mid} nrows=${LOSE_ROWS:-150}
	pidvar=PID_$name
	q -c "SELECT infer.stats_reset()" -c "SELECT infer.load_model('$model', '$name')" \
		-c "SELECT infer.unload_model('$model', name) FROM infer.workers WHERE name <> '$name' AND status = 'up'" >/dev/null
	bg_sql "$label" "SET infer.placement = locality;" "$settings" \
		"SET client_min_messages = debug1;" \
		"CREATE TABLE $label AS SELECT n, infer.classify('$model', data) AS v FROM t WHERE n <= $nrows;"
	wait_held "$name" "$want"
	t0=$(date +%s%N)
	kill "-$sig" "${!pidvar}"
	wait "$bg"
	rc=$?
	ms=$(ms_since "$t0")
	stats=$(q -c "SELECT sum(rows) || ' ' || coalesce(sum(errors) FILTER (WHERE worker = '$name'), 0) || ' ' ||
		coalesce(sum(errors) FILTER (WHERE worker <> '$name'), 0) FROM infer.stats WHERE model = '$model'")
	out="held=$held $(grep -E '^(ERROR|DETAIL|DEBUG:  pg_infer: |LOG:  pg_infer: )' "$tmp/$label.out" | head -c 3000)
worker log: $(tail -n 12 "$tmp/$name.log")"
}

# restart NAME PORT [FLAG...]: starts worker NAME again on its endpoint;
# waits until both workers are up.
restart() {
	start_sim_worker "$@" || exit 1
	wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up 100
}

# (k) per-row, SIGKILL, s2 up: the row s1 held goes to s2
lose s1 KILL k_two 1 "SET infer.enable_batching = off;"
check "(k) s1 killed while it held a per-row call ($ms ms to the end): every row once, the reference's answers" \
	"rc=$rc $(digest k_two 2>&1)" "^rc=0 $REF_MID\$"
# (the kill may find the call sent, or chosen and still connecting, as a
# choice counts in flight from the moment it is made: either way it goes
# to s2)
check "(k) ... the call s1 held was sent again, to s2" "$out" \
	'^held=1 ' 'was lost \((lost the connection to|could not connect to) inference worker "s1".*\); sending the row to "s2"'
check "(k) ... infer.stats: 150 rows answered, the lost call one error of s1's" \
	"$stats" '^150 1 0$'
check "(k) ... s1 down, s2 up, nothing in flight" \
	"$(q -c "SELECT string_agg(name || ':' || status || ':' || inflight_requests, ' ' ORDER BY name) FROM infer.workers")" \
	'^s1:down:0 s2:up:0$'
# alone: s2 killed during the same query, s1 down (the call in flight, or
# chosen and waiting to connect, as above: then the wait ends when the
# pool finds s2 down, infer.worker_timeout after its last heartbeat)
lose s2 KILL k_alone 1 "SET infer.enable_batching = off; SET infer.timeout = '3s';
\\set VERBOSITY verbose"
check "(k) alone, s2 killed during a per-row query: 08006 within infer.timeout + 1 s ($ms ms)" \
	"rc=$rc ms=$ms $out" '^rc=[1-9][0-9]* ms=([0-9]{1,3}|[1-3][0-9]{3}) held=1 ' \
	'ERROR:  08006: (lost the connection to|could not connect to) inference worker "s2"' \
	'DETAIL:  (The worker closed the connection or exited before it answered|The worker went down while the request waited for a connection \(its connection dropped and did not come back, or no heartbeat came for infer\.worker_timeout\))\. No other inference worker is up to take the request \(1 row\)\.'
# both down now: a new query gets infer.worker_timeout to connect, not the
# whole infer.timeout
t0=$(date +%s%N)
out=$(printf '%s\n' "SET infer.timeout = '20s';" "SET infer.worker_timeout = '1s';" \
	'\set VERBOSITY verbose' "SELECT infer.classify('mid', data) FROM t WHERE n = 1;" | q 2>&1)
ms=$(ms_since "$t0")
check "(k) both down: a new query fails within infer.worker_timeout + 1 s, not infer.timeout ($ms ms)" \
	"ms=$ms $out" '^ms=([0-9]{1,3}|1[0-9]{3}) ' \
	'ERROR:  08006: could not connect to inference worker "s[12]"' \
	'DETAIL:  The pool holds the worker down \(no heartbeat for infer.worker_timeout\), and no connection was made within that time \(1000 ms\)\.'
restart s1 "${ports[0]}"
restart s2 "${ports[1]}"
check "(k) s1 and s2 started again on their endpoints: up" \
	"$(q -c "SELECT string_agg(name || ':' || status, ' ' ORDER BY name) FROM infer.workers")" '^s1:up s2:up$'

# (k) per-row, SIGSTOP (hung, still connected): once the pool finds s1
# down (infer.worker_timeout) the call it holds goes to s2
lose s1 STOP k_hung 1 "SET infer.enable_batching = off; SET infer.worker_timeout = '1s';"
kill -CONT "$PID_s1"
check "(k) s1 hung (SIGSTOP) while it held a per-row call ($ms ms to the end): every row once, the reference's answers" \
	"rc=$rc $(digest k_hung 2>&1)" "^rc=0 $REF_MID\$"
check "(k) ... the call went to s2 once the pool found s1 down" "$out" \
	'^held=1 ' 'was lost \(inference worker "s1" at [^ ]+ stopped answering while it held the request\); sending the row to "s2"'
ok=1
wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up 100 || ok=0
check "(k) ... s1 resumed (SIGCONT) is up again" "ok=$ok" '^ok=1$'

# (s) SIGTERM: s1 answers what it holds with 57P01; it goes to s2
lose s1 TERM s_batch 4 "SET infer.batch_size = 1; SET infer.max_inflight = 8;"
check "(s) s1 stopped (SIGTERM) while it held batches: every row once, the reference's answers" \
	"rc=$rc $(digest s_batch 2>&1)" "^rc=0 $REF_MID\$"
# (the 57P01 answers s1 sends just before it closes do not always reach
# the backend, which then sees a lost connection: either is re-sent)
n57=$(grep -c 'error 57P01: the worker is shutting down' <<<"$out")
check "(s) ... s1 answered $n57 requests 57P01; its batches went to another worker" "$out" \
	'^held=[4-8] ' 'was lost \((inference worker "s1" at [^ ]+ is shutting down and did not run the request|lost the connection to inference worker "s1"[^)]*)\); sending its 1 row to another worker'
check "(s) ... infer.stats: 150 rows answered, each request s1 lost (8 at most) one error of s1's" \
	"$stats" '^150 [1-8] 0$'
check "(s) ... s1 exited and is down, nothing in flight" \
	"$(kill -0 "$PID_s1" 2>/dev/null && echo alive) $(q -c "SELECT string_agg(name || ':' || status || ':' || inflight_requests, ' ' ORDER BY name) FROM infer.workers")" \
	'^ s1:down:0 s2:up:0$'
restart s1 "${ports[0]}"
# per-row: slow.onnx (300 ms a row), so that s1 is stopped while it runs
# the call (mid's 20 ms would mostly end before the stop reaches it)
LOSE_MODEL=slow LOSE_ROWS=10 lose s1 TERM s_row 1 "SET infer.enable_batching = off;"
check "(s) s1 stopped (SIGTERM) during a per-row query: every row once, the reference's answers" \
	"rc=$rc $(digest s_row 2>&1)" "^rc=0 $REF_SLOW\$"
# (or its answer did not reach the backend before it closed the
# connection: docs/placement.md, "A worker lost mid-query"; as the batched
# (s) above accepts)
check "(s) ... s1 answered 57P01 for the call it held (or closed first), which went to s2" "$out" \
	'^held=1 ' 'was lost \((inference worker "s1" at [^ ]+ is shutting down and did not run the request|lost the connection to inference worker "s1"[^)]*)\); sending the row to "s2"'
restart s1 "${ports[0]}"

# (k) batched, SIGKILL while s1 holds several requests of slow.onnx (300
# ms a row, so that they are still there): the ones the scan sends again
# before their own wait found the loss count in infer.stats too
LOSE_MODEL=slow LOSE_ROWS=10 lose s1 KILL k_batch 4 "SET infer.batch_size = 1; SET infer.max_inflight = 8;"
check "(k) s1 killed while it held batches: every row once, the reference's answers" \
	"rc=$rc $(digest k_batch 2>&1)" "^rc=0 $REF_SLOW\$"
errs=$(cut -d' ' -f2 <<<"$stats")
check "(k) ... infer.stats: 10 rows answered, an error of s1's for each request it lost ($errs, 2 to 8)" \
	"$stats ok=$([ "${errs:-0}" -ge 2 ] && [ "${errs:-0}" -le 8 ] && echo 1)" '^10 [0-9]+ 0 ok=1$'
restart s1 "${ports[0]}"

# (x) SIGKILL of an idle s1 under round_robin, one batch in flight at a
# time, with a long infer.worker_timeout (60 s): s1 is killed while s2
# runs the scan's batch, so the next batch, s1's turn, is the first to
# meet the lost connection, with no request of s1's to notice it by.  The
# send marks s1 down once its connection has not come back for 500 ms, and
# the batch goes to s2, rather than the send waiting for a connection
# until infer.timeout (20 s) and failing.  (500 ms: client.c's grace.)
q -c "SELECT infer.load_model('mid', 's1')" -c "SELECT infer.load_model('mid', 's2')" >/dev/null
bg_sql x_batch "SET infer.placement = round_robin;" "SET infer.worker_timeout = '60s';" \
	"SET infer.timeout = '20s';" "SET infer.batch_size = 4;" "SET infer.max_inflight = 1;" \
	"SET client_min_messages = debug1;" \
	"CREATE TABLE x_batch AS SELECT n, infer.classify('mid', data) AS v FROM t WHERE n <= 150;"
sleep 0.3
wait_held s2 1
t0=$(date +%s%N)
kill -KILL "$PID_s1"
wait "$bg"
rc=$?
ms=$(ms_since "$t0")
check "(x) idle s1 killed under round_robin, infer.worker_timeout 60 s: every row once, the reference's answers, $ms ms after the kill" \
	"rc=$rc ms=$ms $(digest x_batch 2>&1)" "^rc=0 ms=([0-9]{1,3}|[1-9][0-9]{3}) $REF_MID\$" 
check "(x) ... s1 down, nothing in flight" \
	"$(q -c "SELECT string_agg(name || ':' || status || ':' || inflight_requests, ' ' ORDER BY name) FROM infer.workers")" \
	'^s1:down:0 s2:up:0$'
t0=$(date +%s%N)
out=$(q -c "SET infer.timeout = '20s'" -c "SET infer.worker_timeout = '1s'" \
	-c "SELECT infer.load_model('mid', 's1')" 2>&1)
ms=$(ms_since "$t0")
check "(x) ... infer.load_model on the down s1: 08006 within infer.worker_timeout + 1 s, not infer.timeout ($ms ms)" \
	"ms=$ms $out" '^ms=([0-9]{1,3}|1[0-9]{3}) ' \
	'could not connect to inference worker "s1"' 'The pool holds the worker down'
restart s1 "${ports[0]}"

# (d) s2 dropped (infer.drop_worker, another session) while a round_robin
# query runs: the query sends it nothing more (it reads the registry in
# the latest snapshot), and every row comes back once.  12 rows of
# slow.onnx (300 ms), one at a time, two in flight: about 6 to each
# worker without the drop; s2 held at most 2 when it was dropped.
q -c "SELECT infer.stats_reset()" -c "SELECT infer.load_model('slow', 's2')" >/dev/null
bg_sql d_drop "SET infer.placement = round_robin;" "SET infer.batch_size = 1;" \
	"SET infer.max_inflight = 2;" \
	"CREATE TABLE d_drop AS SELECT n, infer.classify('slow', data) AS v FROM t WHERE n <= 12;"
wait_held s2 1
q -c "SELECT infer.drop_worker('s2')" >/dev/null
wait "$bg"
rc=$?
check "(d) s2 dropped mid-query: every row once, each its own answer" \
	"rc=$rc $(q -c "SELECT count(*) || ' ' || count(DISTINCT n) || ' ' || count(*) FILTER (WHERE v = 'sim:slow:' || left(encode(sha256(data), 'hex'), 16)) FROM d_drop JOIN t USING (n)" 2>&1)" \
	'^rc=0 12 12 12$'
check "(d) ... s2 got few requests (those it held or was chosen for by the drop), s1 the rest" \
	"$(q -c "SELECT string_agg(worker || ':' || rows, ' ' ORDER BY worker) FROM infer.stats WHERE model = 'slow'" 2>&1)" \
	'^s1:(1[0-1]|[89]) s2:[1-4]$'
q -c "SELECT infer.add_worker('s2', 'tcp://127.0.0.1:${ports[1]}')" >/dev/null
wait_sql "SELECT string_agg(status, ',' ORDER BY name) FROM infer.workers" up,up 100

# --- (g) a group of calls sent apart, one of its workers killed -----------------
q -c "CREATE TABLE ref_two AS SELECT n, infer.classify('mid', data) AS a, infer.classify('mid2', data) AS b FROM t WHERE n <= 150" >/dev/null
REF_TWO=$(q -c "SELECT count(*) || ' ' || md5(string_agg(n || '=' || a || '/' || b, ',' ORDER BY n)) FROM ref_two")
check "(g) the reference: 150 rows, both calls' own simulated answers" \
	"$REF_TWO $(q -c "SELECT count(*) FROM ref_two JOIN t USING (n) WHERE a = 'sim:mid:' || left(encode(sha256(data), 'hex'), 16) AND b = 'sim:mid2:' || left(encode(sha256(data), 'hex'), 16)" 2>&1)" \
	'^150 [0-9a-f]{32} 150$'
q -c "SELECT infer.load_model('mid', 's1')" -c "SELECT infer.load_model('mid2', 's2')" >/dev/null
q -c "SELECT infer.unload_model('mid2', 's1')" >/dev/null 2>&1
q -c "SELECT infer.unload_model('mid', 's2')" >/dev/null 2>&1
bg_sql g_two "SET infer.placement = cost;" "SET infer.batch_size = 2;" \
	"SET infer.max_inflight = 8;" "SET client_min_messages = debug1;" \
	"CREATE TABLE g_two AS SELECT n, infer.classify('mid', data) AS a, infer.classify('mid2', data) AS b FROM t WHERE n <= 150;"
wait_held s2 2
kill -KILL "$PID_s2"
wait "$bg"
rc=$?
check "(g) s2 killed while it held requests of a group sent apart: every row once, both calls' answers" \
	"rc=$rc $(q -c "SELECT count(*) || ' ' || md5(string_agg(n || '=' || a || '/' || b, ',' ORDER BY n)) FROM g_two" 2>&1)" \
	"^rc=0 $REF_TWO\$"
# (the first split and the losses: a slow run logs many placements first)
check "(g) ... the calls went apart, and what s2 held went to s1" \
	"held=$held $(grep -E -m1 '^DEBUG:  pg_infer placement: 2 fragments over 2 rows go apart' "$tmp/g_two.out")
$(grep -E '^LOG:  pg_infer: .*was lost' "$tmp/g_two.out" | head -n 8)" \
	'^held=[2-8] ' '2 fragments over 2 rows go apart \(together on "s[12]"' \
	'was lost \(lost the connection to inference worker "s2"[^)]*\); sending its [12] rows? to another worker'
restart s2 "${ports[1]}"

# --- (w) workers that read different sizes --------------------------------------------
# s2 restarted with --max-message-bytes 1 MiB: row 3 (100000 bytes) goes to
# s2 under every policy, and s1 never gets it (it would drop the connection)
kill -KILL "$PID_s2"
wait_sql "SELECT status FROM infer.workers WHERE name = 's2'" down 100
restart s2 "${ports[1]}" --max-message-bytes 1048576
for policy in round_robin least_loaded locality cost; do
	out=$(q -c "SET infer.placement = $policy" -c "SET infer.batch_size = 1" \
		-c "SET client_min_messages = debug1" \
		-c "SELECT string_agg(n || '=' || coalesce(v, 'NULL'), ',' ORDER BY n) FROM (SELECT n, infer.classify('quick', data) AS v FROM p) AS s" 2>&1)
	check "(w) $policy: row 3, over s1's limit, answered by s2; every row once, in order" \
		"$out" '^1=sim:quick:[0-9a-f]+,2=sim:quick:[0-9a-f]+,3=sim:quick:[0-9a-f]+,4=sim:quick:[0-9a-f]+,5=sim:quick:[0-9a-f]+$'
	check_not "(w) ... $policy: no connection lost" "$out" 'was lost|lost the connection'
done
# s2 killed while it holds row 3 (slow.onnx, 300 ms): the re-send finds
# only s1 up, which does not read it: 54000, not sent to s1
for batching in on off; do
	q >"$tmp/w_$batching.out" 2>&1 <<EOF &
\set VERBOSITY verbose
SET infer.enable_batching = $batching;
SELECT infer.classify('slow', data) FROM p WHERE n = 3;
EOF
	bg=$!
	pids+=("$bg")
	wait_held s2 1
	kill -KILL "$PID_s2"
	wait "$bg"
	rc=$?
	out="held=$held rc=$rc $(cat "$tmp/w_$batching.out")"
	check "(w) enable_batching = $batching: s2 killed while it held row 3, only s1 up: 54000, not sent to s1" \
		"$out" '^held=1 rc=[1-9]' \
		'ERROR:  54000: input of 100000 bytes is larger than any inference worker reads' \
		"DETAIL:  The input $([ "$batching" = on ] && echo 'of row 1 ')was for infer"'\.classify[^;]*; the workers that read it went down while they held it, and it was not sent again\.  The largest an inference worker that is up reads is 65536 bytes \("s1", its --max-message-bytes\)\.' \
		'HINT:  Start the workers that read it again, or one with a larger --max-message-bytes, and run the statement again\.'
	check_not "(w) ... s1 lost nothing" "$out" 'inference worker "s1"[^(]*while it held'
	restart s2 "${ports[1]}" --max-message-bytes 1048576
done

# --- no crash-restart ----------------------------------------------------------------
check_not "no PostgreSQL crash-restart (postmaster log)" "$(cat "$PGLOG")" \
	'terminated by signal|server process .* was terminated|all server processes terminated; reinitializing'
check "the postmaster log is the real one (it saw the terminated backend)" \
	"$(cat "$PGLOG")" 'terminating connection due to administrator command'

echo "faults: $passed passed, $failed failed ($(ms_since "$T0") ms)"
[ "$failed" -eq 0 ]
