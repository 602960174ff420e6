#!/usr/bin/env bash
# tests/regress/run.sh [TEST...]
#
# Runs the pg_regress tests of the extension (tests/regress/sql/*.sql, or
# the TESTs named) against a throwaway cluster and one real infer-worker:
#
#   - initdb a cluster in build/regress-tmp (its Unix socket there too,
#     TCP on 127.0.0.1 only, a free port), run as user postgres when this
#     script runs as root;
#   - start build/bin/infer-worker on another free 127.0.0.1 port with
#     --model-dir build/models;
#   - hand the run-dependent values to the SQL as settings in
#     postgresql.conf, so that the expected files hold none of them:
#       regress.worker_endpoint   the worker's tcp:// endpoint
#       regress.data_dir          absolute path of the OCR test images
#       regress.test_data_dir     absolute path of tests/regress/data
#   - create database pg_infer_regress with the extension, then run
#     pg_regress --use-existing on it (results in tests/regress/results,
#     differences in tests/regress/regression.diffs);
#   - stop the worker and the postmaster by pid on exit, whatever happens.
#
# `make install` (or `make install-extension`) must have been run first;
# `make check-regress` does both.  Prints "regress: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
PG_CONFIG=${PG_CONFIG:-pg_config}
PG_BINDIR=$("$PG_CONFIG" --bindir)
PGXS_MK=$("$PG_CONFIG" --pgxs)
PG_REGRESS=$(dirname "$PGXS_MK")/../test/regress/pg_regress
DATA_DIR=$(cd "${OCR_DATA:-$ROOT/../shared/data/ocr}" && pwd)
WORKER_BIN=$ROOT/$BUILD/bin/infer-worker
MODEL_DIR=$ROOT/$BUILD/models
TMP=$ROOT/$BUILD/regress-tmp
REGRESS_DIR=$ROOT/tests/regress

pg_pid=""
worker_pid=""

# Stops what this script started, by pid: the postmaster with a fast
# shutdown (SIGINT), the worker with SIGTERM; SIGKILL after 10 s.
cleanup() {
	local pid
	for pid in $worker_pid $pg_pid; do
		if [ "$pid" = "$pg_pid" ]; then
			kill -INT "$pid" 2>/dev/null
		else
			kill -TERM "$pid" 2>/dev/null
		fi
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Waits up to $2 seconds until 127.0.0.1:$1 accepts connections.
wait_port() {
	python3 - "$1" "$2" <<'EOF'
import socket, sys, time
port, limit = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + limit
while time.time() < end:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
EOF
}

if [ "$#" -gt 0 ]; then
	tests=("$@")
else
	tests=()
	for f in "$REGRESS_DIR"/sql/*.sql; do
		tests+=("$(basename "$f" .sql)")
	done
fi

# The server refuses to run as root: run it as postgres then.  setpriv
# execs (runuser would fork), so $! below is the postmaster's own pid.
as_pg=()
if [ "$(id -u)" = 0 ]; then
	as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

# A postmaster left over from an interrupted run still owns $TMP: stop it.
if [ -f "$TMP/data/postmaster.pid" ]; then
	old_pid=$(head -1 "$TMP/data/postmaster.pid")
	if kill -0 "$old_pid" 2>/dev/null &&
		grep -q "$TMP/data" "/proc/$old_pid/cmdline" 2>/dev/null; then
		kill -INT "$old_pid"
		for _ in $(seq 100); do
			kill -0 "$old_pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
fi
rm -rf "$TMP"
mkdir -p "$TMP"
[ "$(id -u)" = 0 ] && chown postgres: "$TMP"

pg_port=$(free_port)
worker_port=$(free_port)
while [ "$worker_port" = "$pg_port" ]; do worker_port=$(free_port); done
endpoint="tcp://127.0.0.1:$worker_port"

if ! "${as_pg[@]}" "$PG_BINDIR/initdb" -D "$TMP/data" -U postgres \
	--auth=trust --no-instructions -E UTF8 --locale=C >"$TMP/initdb.log" 2>&1; then
	cat "$TMP/initdb.log"
	echo "regress: 0 passed, ${#tests[@]} failed"
	exit 1
fi
cat >>"$TMP/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$TMP'
fsync = off
max_connections = 20
regress.worker_endpoint = '$endpoint'
regress.data_dir = '$DATA_DIR'
regress.test_data_dir = '$REGRESS_DIR/data'
EOF

"${as_pg[@]}" "$PG_BINDIR/postgres" -D "$TMP/data" >"$TMP/postgres.log" 2>&1 &
pg_pid=$!

if [ -x "$WORKER_BIN" ]; then
	"$WORKER_BIN" --listen "$endpoint" --model-dir "$MODEL_DIR" \
		>"$TMP/worker.log" 2>&1 &
	worker_pid=$!
	if ! wait_port "$worker_port" 20; then
		echo "regress: warning: infer-worker did not listen on $endpoint; see $TMP/worker.log"
	fi
else
	echo "regress: warning: $WORKER_BIN is missing; tests that need a worker will fail"
fi

ready=0
for _ in $(seq 100); do
	if "$PG_BINDIR/pg_isready" -q -h "$TMP" -p "$pg_port"; then
		ready=1
		break
	fi
	sleep 0.1
done
# the postmaster's pid, as it wrote it (the same as $! with setpriv)
if [ -f "$TMP/data/postmaster.pid" ]; then
	pg_pid=$(head -1 "$TMP/data/postmaster.pid")
fi
if [ "$ready" != 1 ]; then
	cat "$TMP/postgres.log"
	echo "regress: 0 passed, ${#tests[@]} failed"
	exit 1
fi

# --use-existing leaves the database to us.
if ! "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$TMP" -p "$pg_port" \
	-U postgres -d postgres >"$TMP/setup.log" 2>&1 <<'EOF'
CREATE DATABASE pg_infer_regress TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C';
\c pg_infer_regress
CREATE EXTENSION pg_infer;
EOF
then
	cat "$TMP/setup.log"
	echo "regress: 0 passed, ${#tests[@]} failed"
	exit 1
fi

"$PG_REGRESS" --use-existing --bindir="$PG_BINDIR" \
	--host="$TMP" --port="$pg_port" --user=postgres \
	--dbname=pg_infer_regress \
	--inputdir="$REGRESS_DIR" --outputdir="$REGRESS_DIR" \
	"${tests[@]}" 2>&1 | tee "$TMP/pg_regress.out"
rc=${PIPESTATUS[0]}

passed=$(grep -cE '\.\.\. +ok( |$)' "$TMP/pg_regress.out")
failed=$(grep -cE '\.\.\. +FAILED' "$TMP/pg_regress.out")
# pg_regress could not run at all: count every test as failed.
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
	failed=$((${#tests[@]} - passed))
fi
if [ "$failed" != 0 ] && [ -f "$REGRESS_DIR/regression.diffs" ]; then
	echo "differences: tests/regress/regression.diffs"
fi
echo "regress: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$rc" = 0 ]
