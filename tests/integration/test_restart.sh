#!/usr/bin/env bash
# test_restart.sh: process-level test of a clean server restart (issue 7
# "The pool monitor background worker dies or the server restarts: it
# comes back and the pool state is rebuilt from the heartbeats"; the
# monitor's own death is tests/regress/sql/pool_monitor.sql).
#
# Starts a throwaway PostgreSQL with pg_infer in shared_preload_libraries
# (tools/testenv.sh) and two real infer-workers w1, w2 on 127.0.0.1 with
# the real models of build/models, and checks:
#   - before: both workers up, a batched round-robin query places work on
#     both, which then hold its model (resident_models) and report their
#     memory;
#   - `pg_ctl restart -m fast` (a clean shutdown and start, not a crash
#     restart): before any session, the pool monitor's registry loader
#     has put both workers in the pool and the log says they are up;
#     the pool's shared memory starts empty (no requests sent,
#     nothing in flight), and within 2 s of the server accepting
#     connections infer.workers shows both workers up again, with fresh
#     heartbeats (state_seq past the one before the restart, age under
#     1 s), their resident models and memory rebuilt from those heartbeats
#     (the workers kept running: the same models as before);
#   - a batched query after the restart places work on both workers
#     (EXPLAIN ANALYZE "Inference Workers") and gives the same answers as
#     before, in order;
#   - a pool monitor runs again, and the postmaster's log shows one clean
#     shutdown and two starts, and no "terminated by signal", "was
#     terminated", "reinitializing" or "all server processes terminated"
#     line (a crash restart would print them);
#   - with w2 stopped and the server restarted, the first query's rows
#     all come back within 10 s (the pool finds w2 down
#     infer.worker_timeout after taking it in; before, a send to it
#     waited infer.timeout), the log saying that w2's rows went to w1;
#   - a hot standby (pg_basebackup -R) runs a pool monitor while in
#     recovery, shows both workers up, and with w2 stopped its query's
#     rows all go to w1;
#   - evildb, whose owner set its search_path to put their own operator =
#     first: the registry loader run there as the bootstrap superuser at
#     the restart made nobody a superuser;
#   - the only worker, registered 3 s before it starts: the first call
#     waits for it and answers.
#
# Prints "restart: N passed, M failed"; exits 1 on any failure.  Every
# process it starts (workers, the postmaster before and after the
# restart) is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins restart "$WORKER"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
MODEL_DIR=$(cd "$MODEL_DIR" && pwd)
REGRESS_DATA=$ROOT/tests/regress/data
T0=$(date +%s%N)

use_cluster_cleanup

# workers_line OUTPUT: the "Inference Workers" line of an EXPLAIN ANALYZE.
workers_line() {
	grep -o 'Inference Workers: .*' <<<"$1"
}

# pool_state: one line per worker, "name:status:requests_sent:inflight:
# resident models:host memory > 0:state_seq".
pool_state() {
	q -c "SELECT string_agg(name || ':' || coalesce(status, '-') || ':' ||
	                        coalesce(requests_sent, -1) || ':' ||
	                        coalesce(inflight_requests, -1) || ':' ||
	                        coalesce(array_to_string(resident_models, ','), '-') || ':' ||
	                        coalesce(host_memory_used > 0, false) || ':' ||
	                        coalesce(state_seq, -1), ' ' ORDER BY name)
	        FROM infer.workers"
}

# --- the cluster and two real workers ---------------------------------------
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "restart: 0 passed, 1 failed"
	exit 1
fi
DATA=$tmp/pg/data
ports=()
while [ "${#ports[@]}" -lt 2 ]; do
	p=$(testenv_free_port)
	if [ "$p" != "$PGPORT" ] && [[ " ${ports[*]} " != *" $p "* ]]; then
		ports+=("$p")
	fi
done
start_named_worker w1 "${ports[0]}" --model-dir "$MODEL_DIR" || exit 1
start_named_worker w2 "${ports[1]}" --model-dir "$MODEL_DIR" || exit 1

q <<EOF
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('w1', 'tcp://127.0.0.1:${ports[0]}');
SELECT infer.add_worker('w2', 'tcp://127.0.0.1:${ports[1]}');
-- 8 rows: the two line images (rot180 first), 4 times each
CREATE TABLE img (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO img
SELECT row_number() OVER (ORDER BY k, f), pg_read_binary_file(f)
  FROM unnest(ARRAY['$REGRESS_DATA/line_upright.png',
					'$REGRESS_DATA/line_rot180.png']) AS f,
	   generate_series(1, 4) AS k;
EOF
ok=0
for _ in $(seq 100); do
	[ "$(q -c "SELECT count(*) FROM infer.workers WHERE status = 'up'")" = 2 ] && ok=1 && break
	sleep 0.1
done
check "before: both workers up" "ok=$ok" '^ok=1$'

# batches of 1, 2, 2, 2, 1 rows in turn: w1 3 requests, w2 2
RUN_Q="SET infer.placement = round_robin;
SET infer.batch_size = 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
CREATE TABLE RESULT AS
SELECT n, infer.classify('ppocr_cls', data) AS label FROM img;"
out=$(q 2>&1 <<<"${RUN_Q//RESULT/before_restart}")
line=$(workers_line "$out")
check "before: a batched query places work on both workers ($line)" "$line" \
	'^Inference Workers: w1: [1-9][0-9]* requests, [0-9]+ rows; w2: [1-9][0-9]* requests, [0-9]+ rows$'
BEFORE=$(q -c "SELECT string_agg(n || '=' || label, ',' ORDER BY n) FROM before_restart")
check "before: the line images read 180 and 0 ($BEFORE)" "$BEFORE" \
	'^1=180,2=0,3=180,4=0,5=180,6=0,7=180,8=0$'
# the state shows the model resident on both (heartbeats come every 100 ms)
state=
for _ in $(seq 50); do
	state=$(pool_state)
	[[ $state =~ ^w1:up:[1-9][0-9]*:0:[^:]*cls[^:]*:true:[0-9]+\ w2:up:[1-9][0-9]*:0:[^:]*cls[^:]*:true:[0-9]+$ ]] && break
	sleep 0.1
done
check "before: both up, requests sent, the classifier resident, memory reported ($state)" \
	"$state" \
	'^w1:up:[1-9][0-9]*:0:[^:]*ch_ppocr_mobile_v2\.0_cls_infer\.onnx[^:]*:true:[0-9]+ w2:up:[1-9][0-9]*:0:[^:]*ch_ppocr_mobile_v2\.0_cls_infer\.onnx[^:]*:true:[0-9]+$'
RES_BEFORE=$(q -c "SELECT string_agg(name || ':' || array_to_string(resident_models, ','), ' ' ORDER BY name) FROM infer.workers")
SEQ_BEFORE=$(q -c "SELECT max(state_seq) FROM infer.workers")
OLD_PM=$TESTENV_PG_PID

# A database whose owner (not a superuser) set its search_path to put an
# operator of theirs first: the registry loaders that run in every database
# at the monitor's start (as the bootstrap superuser) must call nothing of
# it. evil's operator = on name would make evil a superuser.
q >/dev/null <<'EOF'
CREATE ROLE evil LOGIN;
CREATE DATABASE evildb OWNER evil;
EOF
q -d evildb -c "CREATE EXTENSION pg_infer" \
	-c "SELECT infer.add_worker('w1', 'tcp://127.0.0.1:${ports[0]}')" >/dev/null
q -U evil -d evildb >/dev/null <<'EOF'
ALTER DATABASE evildb SET search_path = public, pg_catalog;
CREATE FUNCTION public.evil_eq(name, name) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		EXECUTE 'ALTER ROLE evil SUPERUSER';
	EXCEPTION WHEN OTHERS THEN NULL;
	END;
	RETURN pg_catalog.nameeq($1, $2);
END $$;
CREATE OPERATOR public.= (LEFTARG = name, RIGHTARG = name, FUNCTION = public.evil_eq);
CREATE FUNCTION public.evil_eqt(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		EXECUTE 'ALTER ROLE evil SUPERUSER';
	EXCEPTION WHEN OTHERS THEN NULL;
	END;
	RETURN pg_catalog.texteq($1, $2);
END $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.evil_eqt);
EOF

# --- a clean restart ----------------------------------------------------------
# -p: the postgres of TESTENV_PG_BIN (under make check-asan a wrapper that
# preloads the sanitizers), not the binary postmaster.opts names
t_restart=$(date +%s%N)
out=$("${testenv_as_pg[@]}" "$TESTENV_PG_BIN/pg_ctl" restart -D "$DATA" -m fast -w -t 60 \
	-p "$TESTENV_PG_BIN/postgres" -l "$tmp/pg/restart.log" 2>&1)
rc=$?
NEW_PM=$(head -1 "$DATA/postmaster.pid" 2>/dev/null)
# the cleanup (testenv_stop) now stops the new postmaster
[ -n "$NEW_PM" ] && TESTENV_PG_PID=$NEW_PM
wait "$OLD_PM" 2>/dev/null
ms_restart=$(ms_since "$t_restart")
check "pg_ctl restart -m fast: done in $ms_restart ms, a new postmaster" \
	"rc=$rc old=$OLD_PM new=$NEW_PM old_alive=$(kill -0 "$OLD_PM" 2>/dev/null && echo yes || echo no) $out" \
	'^rc=0 old=[0-9]+ new=[0-9]+ old_alive=no ' 'server started'
[ "$NEW_PM" != "$OLD_PM" ] || fail "the postmaster's pid changed ($OLD_PM)"

# before any session reads a registry, the monitor's registry loader has
# put both workers in the pool: the server's log says they are up
t_up=$(date +%s%N)
for _ in $(seq 100); do
	[ "$(grep -cE 'inference worker "w[12]" at .* is up' "$tmp/pg/restart.log" 2>/dev/null)" = 2 ] && break
	sleep 0.05
done
check "after: with no session yet, the monitor finds both workers up (the log, $(ms_since "$t_up") ms)" \
	"$(grep -E 'inference worker "w[12]" at .* is up|registry loader' "$tmp/pg/restart.log")" \
	'inference worker "w1" at .* is up' 'inference worker "w2" at .* is up'
check_not "... and no registry loader failed" "$(cat "$tmp/pg/restart.log")" 'registry loader.*(exited with exit code [^0]|could not start)'
check "... the loader of evildb (its owner's search_path and operators) made nobody a superuser" \
	"$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'evil'")" '^f$'

# the shared pool state starts empty: nothing sent, nothing in flight
first=$(pool_state)
check "after: the pool's shared state is new (no requests sent yet): $first" "$first" \
	'^w1:[a-z]+:0:0:[^ ]* w2:[a-z]+:0:0:[^ ]*$'
state=
for _ in $(seq 100); do
	state=$(pool_state)
	[[ $state =~ ^w1:up:0:0:[^:]*cls[^:]*:true:([0-9]+)\ w2:up:0:0:[^:]*cls[^:]*:true:([0-9]+)$ ]] &&
		[ "${BASH_REMATCH[1]}" -gt "$SEQ_BEFORE" ] && [ "${BASH_REMATCH[2]}" -gt "$SEQ_BEFORE" ] && break
	[ "$(ms_since "$t_up")" -gt 5000 ] && break
	sleep 0.05
done
ms_up=$(ms_since "$t_up")
check "after: both workers up again within 2 s ($ms_up ms), resident models and memory from their heartbeats" \
	"ms=$ms_up $state" \
	'^ms=(1?[0-9]{1,3}) w1:up:0:0:[^:]*ch_ppocr_mobile_v2\.0_cls_infer\.onnx[^:]*:true:[0-9]+ w2:up:0:0:[^:]*ch_ppocr_mobile_v2\.0_cls_infer\.onnx[^:]*:true:[0-9]+$'
seqs=$(q -c "SELECT string_agg((state_seq > $SEQ_BEFORE)::text || ':' ||
                               (heartbeat_age < interval '1 s')::text, ' ' ORDER BY name)
               FROM infer.workers")
check "after: fresh heartbeats (state_seq past $SEQ_BEFORE, age under 1 s)" "$seqs" '^true:true true:true$'
check "after: the same resident models as before the restart" \
	"$(q -c "SELECT string_agg(name || ':' || array_to_string(resident_models, ','), ' ' ORDER BY name) FROM infer.workers")" \
	"^${RES_BEFORE//./\\.}\$"

# --- work after the restart ------------------------------------------------------
out=$(q 2>&1 <<<"${RUN_Q//RESULT/after_restart}")
line=$(workers_line "$out")
check "after: a batched query places work on both workers ($line)" "$line" \
	'^Inference Workers: w1: [1-9][0-9]* requests, [0-9]+ rows; w2: [1-9][0-9]* requests, [0-9]+ rows$'
check "after: the same answers, in order" \
	"$(q -c "SELECT string_agg(n || '=' || label, ',' ORDER BY n) FROM after_restart")" "^$BEFORE\$"
check "after: requests sent counted again from 0" \
	"$(q -c "SELECT string_agg(name || ':' || requests_sent || ':' || inflight_requests, ' ' ORDER BY name) FROM infer.workers")" \
	'^w1:[1-9][0-9]*:0 w2:[1-9][0-9]*:0$'
check "after: one pool monitor runs" \
	"$(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_infer pool monitor'")" '^1$'

# --- the postmaster's logs: a clean shutdown, no crash ---------------------------
logs=$(cat "$tmp/pg/postgres.log" "$tmp/pg/restart.log" 2>/dev/null)
check "the logs show a fast shutdown, a clean stop and two starts" \
	"$(grep -c 'received fast shutdown request' <<<"$logs") $(grep -c 'database system is shut down' <<<"$logs") $(grep -c 'database system is ready to accept connections' <<<"$logs")" \
	'^1 1 2$'
check_not "no process was terminated by a signal, no crash restart" "$logs" \
	'terminated by signal|was terminated|reinitializing|all server processes terminated|server process .* exited with exit code [^01]'
# shellcheck disable=SC2154 # PID_w1, PID_w2: set by start_named_worker (printf -v)
check "the workers kept running" \
	"$(kill -0 "$PID_w1" && kill -0 "$PID_w2" && echo alive)" '^alive$'

# all_labels PSQL...: the img rows' labels, "1=180,2=0,...", in batches of
# 2 under round_robin, through the psql command given (q, or qs: the standby)
all_labels() {
	"$@" 2>&1 <<'EOF'
SET infer.placement = round_robin;
SET infer.batch_size = 2;
SELECT string_agg(n || '=' || label, ',' ORDER BY n)
  FROM (SELECT n, infer.classify('ppocr_cls', data) AS label FROM img) s;
EOF
}

# --- a worker down at a restart ---------------------------------------------------
# After a restart the pool has heard from no worker yet: a send to w2, which
# is stopped, ends when the pool finds it down (infer.worker_timeout after
# its registration there), not after infer.timeout (30 s), and its rows go
# to w1, the server's log saying so.
testenv_stop_pid "$PID_w2" TERM
OLD_PM=$TESTENV_PG_PID
"${testenv_as_pg[@]}" "$TESTENV_PG_BIN/pg_ctl" restart -D "$DATA" -m fast -w -t 60 \
	-p "$TESTENV_PG_BIN/postgres" -l "$tmp/pg/restart2.log" >/dev/null 2>&1
NEW_PM=$(head -1 "$DATA/postmaster.pid" 2>/dev/null)
[ -n "$NEW_PM" ] && TESTENV_PG_PID=$NEW_PM
wait "$OLD_PM" 2>/dev/null
t_down=$(date +%s%N)
out=$(all_labels q)
ms_down=$(ms_since "$t_down")
check "a worker down at a restart: the first query answers every row within 10 s ($ms_down ms), not infer.timeout" \
	"ms=$ms_down $out" "^ms=[0-9]{1,4} ${BEFORE}\$"
check "... the server's log says w2's rows went to another worker" "$(cat "$tmp/pg/restart2.log")" \
	'inference worker "w2" at tcp://127\.0\.0\.1:[0-9]+ went down before the request was sent \(.*\); sending its [12] rows? to another worker'
start_named_worker w2 "${ports[1]}" --model-dir "$MODEL_DIR" || exit 1

# --- a hot standby ------------------------------------------------------------------
# A streaming standby of the cluster (pg_basebackup -R) runs its own pool
# monitor from the consistent state on: its read-only queries see the
# workers' state and fail over as the primary's do.
SB=$tmp/standby
mkdir -p "$SB"
if [ "$(id -u)" = 0 ]; then chown postgres: "$SB"; fi
SPORT=$(testenv_free_port)
out=$("${testenv_as_pg[@]}" "$TESTENV_PG_BIN/pg_basebackup" -h "$PGHOST" -p "$PGPORT" -U postgres \
	-D "$SB/data" -R -c fast 2>&1)
check "pg_basebackup -R of the cluster" "rc=$? $out" '^rc=0'
{
	echo "port = $SPORT"
	echo "unix_socket_directories = '$SB'"
} >>"$SB/data/postgresql.conf"
"${testenv_as_pg[@]}" "$TESTENV_PG_BIN/postgres" -D "$SB/data" >"$SB/postgres.log" 2>&1 &
SB_PID=$!
pids+=("$SB_PID")
for _ in $(seq 100); do
	"$TESTENV_PG_BIN/pg_isready" -q -h "$SB" -p "$SPORT" && break
	sleep 0.1
done
# qs ARGS...: psql on the standby
qs() { q -h "$SB" -p "$SPORT" "$@"; }
mon=
for _ in $(seq 50); do
	mon=$(qs -c "SELECT pg_is_in_recovery(), count(*) FROM pg_stat_activity WHERE backend_type = 'pg_infer pool monitor'" 2>&1)
	[ "$mon" = "t|1" ] && break
	sleep 0.1
done
check "the standby, in recovery, runs a pool monitor" "$mon" '^t\|1$'
state=
for _ in $(seq 100); do
	state=$(qs -c "SELECT string_agg(name || ':' || coalesce(status, '-'), ' ' ORDER BY name) FROM infer.workers" 2>&1)
	[ "$state" = "w1:up w2:up" ] && break
	sleep 0.05
done
check "... infer.workers there shows both workers up" "$state" '^w1:up w2:up$'
testenv_stop_pid "$PID_w2" TERM
for _ in $(seq 100); do
	[ "$(qs -c "SELECT status FROM infer.workers WHERE name = 'w2'")" = down ] && break
	sleep 0.05
done
t_sb=$(date +%s%N)
out=$(all_labels qs)
ms_sb=$(ms_since "$t_sb")
check "... with w2 stopped, a standby query's rows all go to w1 ($ms_sb ms)" \
	"ms=$ms_sb $out" "^ms=[0-9]{1,4} ${BEFORE}\$"
testenv_stop_pid "$SB_PID" INT

# --- the only worker, not heard from yet ------------------------------------------
# A worker registered before it starts, and the only one: a call waits for it
# (up to infer.timeout, as for a worker still starting) rather than failing
# infer.worker_timeout after the pool took it in.
LPORT=$(testenv_free_port)
q -c "SELECT infer.drop_worker(name) FROM infer.worker_registry" \
	-c "SELECT infer.add_worker('late', 'tcp://127.0.0.1:$LPORT')" >/dev/null 2>&1
(
	sleep 3
	exec "$WORKER" --listen "tcp://127.0.0.1:$LPORT" --model-dir "$MODEL_DIR" 2>"$tmp/late.log"
) &
pids+=("$!")
t_late=$(date +%s%N)
out=$(q -c "SELECT string_agg(n || '=' || label, ',' ORDER BY n) FROM (SELECT n, infer.classify('ppocr_cls', data) AS label FROM img) s" 2>&1)
ms_late=$(ms_since "$t_late")
check "the only worker, started 3 s after it was registered: the first call waits for it and answers ($ms_late ms)" \
	"ms=$ms_late $out" "^ms=([3-9][0-9]{3}|[12][0-9]{4}) ${BEFORE}\$"

echo "restart: $passed passed, $failed failed ($(ms_since "$T0") ms)"
[ "$failed" -eq 0 ]
