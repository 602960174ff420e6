#!/usr/bin/env bash
# test_curve.sh: process-level test of ZeroMQ CURVE between backends and
# workers (issue 7 "Security"; docs/security.md "Encryption: CURVE").
#
# Makes key pairs with infer-worker --curve-keygen (a worker's, a listed
# backend's, an unlisted one's), then:
#   - the worker refuses a secret key file of mode 0644, an allowed-clients
#     file with a bad line (naming it), and one flag without the other; it
#     counts the keys of an allowed-clients file with comments and blanks;
#   - a CURVE worker on 127.0.0.1 answers a plain worker-client nothing;
#   - a real PostgreSQL (tools/testenv.sh) whose backends hold the listed
#     key pair (infer.curve_*_key_file in postgresql.conf) runs
#     infer.classify through the CURVE worker (added with its public key)
#     and gets the real answer (0 for an upright line, 180 for a rotated
#     one, as the plain worker gives);
#   - the same endpoint registered without the key in another database
#     leaves the CURVE worker up in the first (each key its own slot);
#   - a backend with the unlisted pair gets nothing: the query fails with
#     the usual connection error (08006, no connection made within
#     infer.timeout) within infer.timeout, and the worker logs
#     the ZAP refusal naming that key;
#   - a backend without key files gets ERROR 28000 with a hint naming the
#     settings; a key pair that does not match is refused (28000); a
#     malformed server key is refused by infer.add_worker (22023), and the
#     two-argument infer.add_worker still adds a plain worker;
#   - the pool monitor: a CURVE worker added while the server has no key
#     pair is down and the log says why, and comes up after the pair is
#     set and the configuration reloaded; one that refuses the server's
#     key is down, and comes up within about 10 s once started again with
#     the key allowed, without a reload;
#   - a session whose key a worker refused is answered at its next call
#     once the worker has been started again with the key allowed;
#   - a worker registered at PostgreSQL's own port: the monitor logs the
#     failed handshake once and connects there a few times in 6 s, not
#     ten times a second;
#   - a worker bound to 0.0.0.0 without CURVE logs a WARNING at start (it
#     is stopped at once); one on 127.0.0.1 does not.
#
# Prints "curve: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins curve "$WORKER" "$CLIENT"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
MODEL_DIR=$(cd "$MODEL_DIR" && pwd)
REGRESS_DATA=$ROOT/tests/regress/data
PSQL=$TESTENV_PG_BIN/psql

use_cluster_cleanup

# q ARGS...: psql on the test database, unaligned, no headers, errors
# with their SQLSTATE (VERBOSITY sqlstate) on stdout too.
q() {
	"$PSQL" -X -q -At -v VERBOSITY=verbose "$@" 2>&1
}

# key Z85 FILE: the key line of a key file (comments start with "# ").
key() {
	grep -v '^# ' "$1" | head -1
}

# --- keys ------------------------------------------------------------------------
k=$tmp/keys
mkdir -p "$k"
out=$("$WORKER" --curve-keygen "$k/worker" 2>&1 && "$WORKER" --curve-keygen "$k/listed" 2>&1 &&
	"$WORKER" --curve-keygen "$k/unlisted" 2>&1)
check "keygen: PREFIX.key 0600 and PREFIX.pub 0644, 40-character Z85 keys" \
	"$out $(stat -c '%a' "$k/worker.key" "$k/worker.pub" | tr '\n' ' ') $(key "$k/worker.pub" | wc -c)" \
	"worker\.key .*worker\.pub" ' 600 644 +41$'
out=$("$WORKER" --curve-keygen "$k/worker" 2>&1; echo "rc=$?")
check "keygen refuses to overwrite a key" "$out" 'File exists' 'rc=1$'
WPUB=$(key "$k/worker.pub")
{
	echo "# the backends of the test cluster"
	echo
	echo "   $(key "$k/listed.pub")   "
	echo "# another (here: the worker's own, any valid key will do)"
	key "$k/worker.pub"
} >"$k/allowed"

# --- the worker's checks at start ------------------------------------------------
cp "$k/worker.key" "$k/open.key"
chmod 644 "$k/open.key"
out=$(timeout 10 "$WORKER" --listen tcp://127.0.0.1:0 --model-dir "$MODEL_DIR" \
	--curve-secret-key "$k/open.key" --curve-allowed-clients "$k/allowed" 2>&1; echo "rc=$?")
check "a secret key file of mode 0644 is refused" "$out" 'mode 0644' 'chmod 600' 'rc=1$'
printf '# ok\n%s\nnot-a-key\n' "$(key "$k/listed.pub")" >"$k/bad_allowed"
out=$(timeout 10 "$WORKER" --listen tcp://127.0.0.1:0 --model-dir "$MODEL_DIR" \
	--curve-secret-key "$k/worker.key" --curve-allowed-clients "$k/bad_allowed" 2>&1; echo "rc=$?")
check "an allowed-clients file with a bad line is refused, naming line 3" "$out" \
	'bad_allowed": line 3 is not a Z85 public key' 'rc=1$'
printf '%s\n' "$(key "$k/listed.pub" | cut -c1-39)" >"$k/short_allowed"
out=$(timeout 10 "$WORKER" --listen tcp://127.0.0.1:0 --model-dir "$MODEL_DIR" \
	--curve-secret-key "$k/worker.key" --curve-allowed-clients "$k/short_allowed" 2>&1; echo "rc=$?")
check "a 39-character key is refused (line 1)" "$out" 'line 1 is not a Z85' 'rc=1$'
out=$(timeout 10 "$WORKER" --listen tcp://127.0.0.1:0 --model-dir "$MODEL_DIR" \
	--curve-secret-key "$k/worker.key" 2>&1; echo "rc=$?")
check "--curve-secret-key alone is refused" "$out" 'go together' 'rc=1$'

# --- a CURVE worker --------------------------------------------------------------
CPORT=$(testenv_free_port)
CEP=tcp://127.0.0.1:$CPORT
"$WORKER" --listen "$CEP" --model-dir "$MODEL_DIR" --curve-secret-key "$k/worker.key" \
	--curve-allowed-clients "$k/allowed" 2>"$tmp/curve.log" &
CPID=$!
pids+=("$CPID")
disown "$CPID" # killed by pid at exit; no job-control notice then
if ! testenv_wait_port "$CPORT" 20; then
	fail "CURVE worker did not start" "$(cat "$tmp/curve.log")"
	echo "curve: $passed passed, $failed failed"
	exit 1
fi
check "the CURVE worker logs its public key and 2 allowed keys, and no WARNING" \
	"$(cat "$tmp/curve.log")" "CURVE on: public key $(sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$WPUB"), 2 client keys allowed"
check_not "no WARNING on 127.0.0.1 with CURVE" "$(cat "$tmp/curve.log")" 'WARN'
out=$("$CLIENT" --endpoint "$CEP" --timeout-ms 1000 ping 2>&1)
check "a plain client gets nothing from the CURVE worker" "$out" '^NOREPLY'

# a plain worker for comparison (2-argument infer.add_worker)
start_worker "$tmp/plain.log" --model-dir "$MODEL_DIR" || exit 1
PEP=$EP
disown "$WPID"
check_not "no WARNING from a plain worker on 127.0.0.1" "$(cat "$tmp/plain.log")" 'WARN'

# --- PostgreSQL with the listed key pair ----------------------------------------
pk=$tmp/pgkeys
mkdir -p "$pk"
cp "$k/listed.key" "$k/listed.pub" "$k/unlisted.key" "$k/unlisted.pub" "$k/worker.pub" "$pk/"
chmod 600 "$pk"/*.key
if [ "$(id -u)" = 0 ]; then chown -R postgres: "$pk"; fi
TESTENV_EXTRA_CONF="infer.curve_secret_key_file = '$pk/listed.key'
infer.curve_public_key_file = '$pk/listed.pub'"
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "curve: $passed passed, $failed failed"
	exit 1
fi
q -v ON_ERROR_STOP=1 <<EOF >/dev/null
CREATE EXTENSION pg_infer;
CREATE TABLE img (n int, data bytea);
INSERT INTO img VALUES (1, pg_read_binary_file('$REGRESS_DATA/line_upright.png')),
					   (2, pg_read_binary_file('$REGRESS_DATA/line_rot180.png'));
EOF
CLS="SELECT string_agg(infer.classify('ppocr_cls', data), ',' ORDER BY n) FROM img"

out=$(q -c "SELECT infer.add_worker('bad', 'tcp://127.0.0.1:1', 'short')")
check "add_worker refuses a malformed server key (22023)" "$out" \
	'22023: invalid CURVE public key for inference worker "bad"'
q -c "SELECT infer.add_worker('plain', '$PEP')" >/dev/null
out=$(q -c "SET infer.timeout = 20000" -c "$CLS")
check "plain worker (two-argument add_worker): 0,180" "$out" '^0,180$'
q -c "SELECT infer.drop_worker('plain')" >/dev/null

out=$(q -c "SELECT infer.add_worker('wc', '$CEP', '$(cat "$k/worker.pub")')" \
	-c "SELECT name, server_public_key = '$WPUB' FROM infer.worker_registry")
check "add_worker with the worker's public key, given as the whole worker.pub (its # line skipped)" "$out" '^wc\|t$'
out=$(q -c "SET infer.timeout = 20000" -c "$CLS")
check "a listed backend gets the CURVE worker's answer: 0,180" "$out" '^0,180$'
out=$(q -c "SET infer.timeout = 20000" -c "SET infer.enable_batching = off" -c "$CLS")
check "the same one row at a time (no InferBatch)" "$out" '^0,180$'
# the pool monitor watches it with CURVE too (the key in the pool's slot,
# the backends' key pair from postgresql.conf): still up past
# infer.worker_timeout, with its state (a heartbeat, its device)
sleep 2.5
out=$(q -c "SET infer.timeout = 20000" -c "$CLS" \
	-c "SELECT status, heartbeat_age < interval '1 second', device, state_source FROM infer.workers")
check "the pool monitor hears the CURVE worker: up, fresh heartbeat, over its CURVE PUB socket" "$out" '^0,180$' '^up\|t\|cpu\|publish$'
# another database registers the same endpoint without the key: its
# registration gets a slot of its own, watched plain (the worker answers
# it nothing), and this database's worker stays up however often the other
# database reads infer.workers
q -c "CREATE DATABASE curve_other" >/dev/null
q -d curve_other -c "CREATE EXTENSION pg_infer" -c "SELECT infer.add_worker('wc_plain', '$CEP')" >/dev/null
for _ in $(seq 15); do
	q -d curve_other -c "SELECT status FROM infer.workers" >/dev/null
	sleep 0.2
done
out=$(q -c "SELECT status, heartbeat_age < interval '1 second' FROM infer.workers" \
	-c "SELECT resident_on IS NOT NULL FROM infer.models WHERE name = 'ppocr_cls'")
check "the same endpoint registered plain in another database: here still up, fresh" \
	"$out $(q -d curve_other -c "SELECT status FROM infer.workers")" '^up\|t$' ' (unknown|down)$'
q -c "DROP DATABASE curve_other WITH (FORCE)" >/dev/null

# A CURVE worker with --max-message-bytes 65536 reads rows of up to 65503
# bytes (a frame grows by 33 on the wire under CURVE) and says so: a row of
# 65503 bytes reaches it (not an image: its own row error, 22P03), one of
# 65504 is refused before it is sent (54000); nothing drops the connection.
C64PORT=$(testenv_free_port)
"$WORKER" --listen "tcp://127.0.0.1:$C64PORT" --model-dir "$MODEL_DIR" \
	--curve-secret-key "$k/worker.key" --curve-allowed-clients "$k/allowed" \
	--max-message-bytes 65536 2>"$tmp/curve64.log" &
C64PID=$!
pids+=("$C64PID")
disown "$C64PID"
testenv_wait_port "$C64PORT" 20 || fail "CURVE worker of 64 KiB did not start" "$(cat "$tmp/curve64.log")"
q -c "SELECT infer.drop_worker('wc')" \
	-c "SELECT infer.add_worker('wc64', 'tcp://127.0.0.1:$C64PORT', '$WPUB')" >/dev/null
for _ in $(seq 50); do
	[ "$(q -c "SELECT status FROM infer.workers WHERE name = 'wc64'")" = up ] && break
	sleep 0.1
done
out=$(q -c "SET infer.on_error = 'null'" -c "SET client_min_messages = debug1" \
	-c "SELECT n, infer.classify('ppocr_cls', decode(repeat('ab', n), 'hex')) IS NULL FROM (VALUES (65503), (65504)) AS v(n) ORDER BY n" 2>&1)
check "CURVE, --max-message-bytes 65536: a row of 65503 bytes is sent (its own 22P03), one of 65504 refused (54000)" \
	"$out" 'WARNING:  (54000: )?input of 65504 bytes is larger than any inference worker reads' \
	'The largest an inference worker that is up reads is 65503 bytes \("wc64"' \
	'^65503\|t$' '^65504\|t$'
check_not "... the 65503-byte row was not refused, and nothing was lost" "$out" \
	'input of 65503 bytes|was lost|lost the connection'
check "... the 65503-byte row reached the worker: its own error" \
	"$(q -c "SELECT errors FROM infer.stats WHERE worker = 'wc64'" 2>&1)" '^1$'
q -c "SELECT infer.drop_worker('wc64')" \
	-c "SELECT infer.add_worker('wc', '$CEP', '$WPUB')" >/dev/null
kill "$C64PID" 2>/dev/null

# the unlisted pair: nothing comes back, the worker logs the refusal
T0=$(date +%s%N)
out=$(q -c "SET infer.curve_secret_key_file = '$pk/unlisted.key'" \
	-c "SET infer.curve_public_key_file = '$pk/unlisted.pub'" \
	-c "SET infer.timeout = 2000" -c "$CLS")
ms=$((($(date +%s%N) - T0) / 1000000))
check "an unlisted backend gets nothing: the connection error (08006), its detail saying the worker refused the key" "$out" \
	'08006: could not connect to inference worker "wc" at tcp://127\.0\.0\.1:[0-9]+' \
	'No connection was made within 2000 ms' \
	"The worker refused this backend's CURVE key: its --curve-allowed-clients file lacks the key of infer\.curve_public_key_file \(once the worker has it and has been started again, the next call connects anew"
if [ "$ms" -lt 3500 ]; then # infer.timeout plus 1.5 s
	pass "... within infer.timeout ($ms ms)"
else
	fail "... within infer.timeout (took $ms ms)"
fi
UPUB=$(key "$k/unlisted.pub")
sleep 0.3
if grep -qF "refused CURVE client $UPUB from 127.0.0.1" "$tmp/curve.log"; then
	pass "the worker logs the ZAP refusal of the unlisted key"
else
	fail "the worker logs the ZAP refusal of the unlisted key" "$(tail -5 "$tmp/curve.log")"
fi
check_not "the listed key was never refused" "$(cat "$tmp/curve.log")" \
	"refused CURVE client $(sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$(key "$k/listed.pub")")"

# no key pair at all, and a pair that does not match
out=$(q -c "SET infer.curve_secret_key_file = ''" -c "$CLS")
check "no key files: ERROR 28000 with a hint naming the settings" "$out" \
	'28000: inference worker "wc" requires CURVE, but this backend has no CURVE key pair' \
	'HINT: +Set infer\.curve_secret_key_file and infer\.curve_public_key_file'
out=$(q -c "SET infer.curve_public_key_file = '$pk/unlisted.pub'" -c "$CLS")
check "a key pair that does not match: ERROR 28000" "$out" '28000: CURVE keys .* are not a pair'
chmod 640 "$pk/listed.key"
out=$(q -c "$CLS")
check "a backend secret key file of mode 0640: ERROR 28000" "$out" \
	'28000: CURVE secret key file .* must be a regular file readable by its owner only' 'mode is 0640'
chmod 600 "$pk/listed.key"
out=$(q -c "SHOW infer.curve_secret_key_file" -c "SET ROLE infer_admin" -c "SET infer.curve_secret_key_file = '/tmp/x'")
check "only a superuser may set infer.curve_secret_key_file" "$out" \
	'42501: permission denied to set parameter "infer\.curve_secret_key_file"'

# --- the pool monitor without a key pair, then with one after a reload -----------
# wait_status NAME STATUS TRIES: waits, 0.1 s apart, until infer.workers
# shows worker NAME with STATUS.
wait_status() {
	for _ in $(seq "$3"); do
		[ "$(q -c "SELECT status FROM infer.workers WHERE name = '$1'")" = "$2" ] && return
		sleep 0.1
	done
}
# start_curve_on PORT ALLOWED LOG: a CURVE worker on PORT (the worker's key
# pair) that allows the keys of file ALLOWED, logging to LOG; its pid in RPID.
start_curve_on() {
	"$WORKER" --listen "tcp://127.0.0.1:$1" --model-dir "$MODEL_DIR" --curve-secret-key "$k/worker.key" \
		--curve-allowed-clients "$2" 2>"$3" &
	RPID=$!
	pids+=("$RPID")
	disown "$RPID"
	testenv_wait_port "$1" 20
}

# A CURVE worker registered while the server has no key pair is not watched
# (the monitor logs why) and goes down; once the key pair is set and the
# configuration reloaded, the monitor tries again and the worker comes up,
# without a restart.
q -c "ALTER SYSTEM SET infer.curve_secret_key_file = ''" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
q -c "SELECT infer.drop_worker('wc')" -c "SELECT infer.add_worker('wr', '$CEP', '$WPUB')" >/dev/null
wait_status wr down 60
check "a CURVE worker added while the server has no key pair: not watched, down, the log says why" \
	"$(q -c "SELECT status FROM infer.workers WHERE name = 'wr'") $(grep -c 'pool monitor: cannot watch CURVE worker "wr" .*no CURVE key pair' "$tmp/pg/postgres.log")" \
	'^down [1-9]'
q -c "ALTER SYSTEM RESET infer.curve_secret_key_file" -c "SELECT pg_reload_conf()" >/dev/null
wait_status wr up 60
out=$(q -c "SELECT status FROM infer.workers WHERE name = 'wr'" -c "SET infer.timeout = 20000" -c "$CLS")
check "... the key pair set again and the configuration reloaded: up, and it answers" "$out" '^up$' '^0,180$'

# A CURVE worker that refuses the server's key (its allowed-clients file
# lacks it): ZeroMQ does not connect again after a refusal, so the pool
# monitor makes its sockets anew every 10 s while it is down; started
# again with the key allowed, it comes up without a reload or a restart.
RPORT=$(testenv_free_port)
key "$k/unlisted.pub" >"$k/allowed_other"
start_curve_on "$RPORT" "$k/allowed_other" "$tmp/refusing.log"
q -c "SELECT infer.add_worker('wk', 'tcp://127.0.0.1:$RPORT', '$WPUB')" >/dev/null
wait_status wk down 60
check "a CURVE worker that refuses the server's key: down, and it logs the refusal" \
	"$(q -c "SELECT status FROM infer.workers WHERE name = 'wk'") $(grep -c 'refused CURVE client' "$tmp/refusing.log")" \
	'^down [1-9]'
testenv_stop_pid "$RPID" TERM
start_curve_on "$RPORT" "$k/allowed" "$tmp/refusing2.log"
T0=$(date +%s%N)
wait_status wk up 150
check "... started again with the key allowed: up within 10 s and a bit, no reload ($((($(date +%s%N) - T0) / 1000000)) ms)" \
	"$(q -c "SELECT status FROM infer.workers WHERE name = 'wk'")" '^up$'
q -c "SELECT infer.drop_worker('wk')" >/dev/null
testenv_stop_pid "$RPID" TERM

# A session whose key a worker refused connects anew at its next call: the
# worker, started again with that key allowed, answers the same session
# (ZeroMQ alone never connects again after a refusal). psql's \! restarts
# the worker between the session's two calls (restart.sh: stop the pid in
# a file, start the worker with the arguments given, its pid in the file).
UPORT=$(testenv_free_port)
start_curve_on "$UPORT" "$k/allowed" "$tmp/session1.log"
echo "$RPID" >"$tmp/session.pid"
{
	cat "$k/allowed"
	key "$k/unlisted.pub"
} >"$k/allowed_both"
cat >"$tmp/restart.sh" <<'EOF'
pidfile=$1 port=$2 log=$3
shift 3
kill -TERM "$(cat "$pidfile")"
while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.1; done
"$@" 2>"$log" </dev/null >/dev/null &
echo $! >"$pidfile"
for _ in $(seq 200); do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && exit 0
	sleep 0.1
done
EOF
q -c "SELECT infer.drop_worker(name) FROM infer.worker_registry" \
	-c "SELECT infer.add_worker('wu', 'tcp://127.0.0.1:$UPORT', '$WPUB')" >/dev/null
wait_status wu up 60
out=$(q -v ON_ERROR_STOP=0 -c "SET infer.curve_secret_key_file = '$pk/unlisted.key'" \
	-c "SET infer.curve_public_key_file = '$pk/unlisted.pub'" \
	-c "SET infer.timeout = 2000" -c "$CLS" \
	-c "\\! bash $tmp/restart.sh $tmp/session.pid $UPORT $tmp/session2.log $WORKER --listen tcp://127.0.0.1:$UPORT --model-dir $MODEL_DIR --curve-secret-key $k/worker.key --curve-allowed-clients $k/allowed_both" \
	-c "SET infer.timeout = 20000" -c "$CLS" 2>&1)
pids+=("$(cat "$tmp/session.pid")")
check "a session's key refused, then allowed after a restart of the worker: the same session's next call is answered" "$out" \
	"The worker refused this backend's CURVE key: .*the next call connects anew" '^0,180$'
check "... the restarted worker refused nothing" "$(grep -c 'refused CURVE client' "$tmp/session2.log")" '^0$'
q -c "SELECT infer.drop_worker('wu')" >/dev/null
testenv_stop_pid "$(cat "$tmp/session.pid")" TERM

# A worker registered at an endpoint where another server listens (here
# PostgreSQL's own port): ZeroMQ alone would connect there again every
# 100 ms, each connection a line in PostgreSQL's log; the monitor logs the
# failed handshake once and connects again after 1 s, then every 2 s.
before=$(grep -c 'invalid length of startup packet' "$tmp/pg/postgres.log")
q -c "SELECT infer.add_worker('pgport', 'tcp://127.0.0.1:$PGPORT')" >/dev/null
sleep 6
lines=$(($(grep -c 'invalid length of startup packet' "$tmp/pg/postgres.log") - before))
if [ "$lines" -ge 1 ] && [ "$lines" -le 5 ]; then
	pass "a worker registered at PostgreSQL's own port: the monitor connects there 1 to 5 times in 6 s ($lines)"
else
	fail "a worker registered at PostgreSQL's own port: the monitor connects there 1 to 5 times in 6 s ($lines)"
fi
check "... and logs the failed handshake once, saying what may listen there" \
	"$(grep -A 2 'inference worker "pgport" .*did not complete the ZeroMQ handshake' "$tmp/pg/postgres.log")
$(grep -c 'inference worker "pgport" .*did not complete the ZeroMQ handshake' "$tmp/pg/postgres.log")" \
	'DETAIL: +A connection was made, but it was closed or timed out before the handshake ended: another server listens there' \
	'HINT: +The monitor connects again after 1 s, then at most every 2 s' '^1$'
q -c "SELECT infer.drop_worker('pgport')" >/dev/null

# --- the WARNING without CURVE on a non-loopback address -------------------------
WPORT=$(testenv_free_port)
"$WORKER" --listen "tcp://0.0.0.0:$WPORT" --state-listen "tcp://127.0.0.1:*" \
	--model-dir "$MODEL_DIR" 2>"$tmp/open.log" &
OPID=$!
pids+=("$OPID")
testenv_wait_port "$WPORT" 20
testenv_stop_pid "$OPID" TERM
check "a worker on 0.0.0.0 without CURVE logs a WARNING at start" "$(cat "$tmp/open.log")" \
	"WARN WARNING: listening on tcp://0\.0\.0\.0:$WPORT .*without CURVE"

echo "curve: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
