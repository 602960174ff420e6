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
#     --model-dir build/models, and three more for the pool_* tests;
#   - hand the run-dependent values to the SQL as settings in
#     postgresql.conf, so that the expected files hold none of them:
#       regress.worker_endpoint   the worker's tcp:// endpoint
#       regress.worker2_endpoint, regress.worker3_endpoint
#                                 the pool tests' other workers
#       regress.worker4_endpoint, regress.worker4_pidfile,
#       regress.worker4_start     a worker pool_resend kills mid-query and
#                                 starts again (its pid in the pidfile)
#       regress.data_dir          absolute path of the OCR test images
#       regress.test_data_dir     absolute path of tests/regress/data
#       regress.worker_log        the worker's log file (its stderr)
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
export PG_CONFIG
PG_REGRESS=$(dirname "$PGXS_MK")/../test/regress/pg_regress
DATA_DIR=$(cd "${OCR_DATA:-$ROOT/../shared/data/ocr}" && pwd)
WORKER_BIN=$ROOT/$BUILD/bin/infer-worker
MODEL_DIR=$ROOT/$BUILD/models
TMP=$ROOT/$BUILD/regress-tmp
REGRESS_DIR=$ROOT/tests/regress
# results/ and regression.diffs: tests/regress unless REGRESS_OUTDIR says
# elsewhere (make check-asan keeps its own)
REGRESS_OUTDIR=${REGRESS_OUTDIR:-$REGRESS_DIR}

# shellcheck source=tools/testenv.sh
. "$ROOT/tools/testenv.sh"
# pool_resend restarts worker 4 from SQL; that one is stopped by the pid
# it leaves in worker4.pid
regress_stop() {
	local pid
	if [ -f "$TMP/worker4.pid" ]; then
		pid=$(cat "$TMP/worker4.pid")
		if grep -q infer-worker "/proc/$pid/cmdline" 2>/dev/null; then
			testenv_stop_pid "$pid" TERM
		fi
	fi
	testenv_stop
}
trap regress_stop EXIT
trap 'exit 130' INT TERM

if [ "$#" -gt 0 ]; then
	tests=("$@")
else
	tests=()
	for f in "$REGRESS_DIR"/sql/*.sql; do
		tests+=("$(basename "$f" .sql)")
	done
fi

# The workers' endpoints go into postgresql.conf, so pick their ports
# first.  Workers 2 and 3 serve the pool_* tests (several workers,
# placement); every other test uses the first one only.
worker_port=$(testenv_free_port)
endpoint="tcp://127.0.0.1:$worker_port"
pool_ports=()
while [ "${#pool_ports[@]}" -lt 3 ]; do
	p=$(testenv_free_port)
	if [ "$p" != "$worker_port" ] && [[ " ${pool_ports[*]} " != *" $p "* ]]; then
		pool_ports+=("$p")
	fi
done
# The input cache is off (infer.input_cache_min_bytes = -1) so that the
# bytes EXPLAIN ANALYZE reports do not depend on what earlier tests left in
# the workers' caches; pool_input_cache turns it on for itself.
TESTENV_EXTRA_CONF="regress.worker_endpoint = '$endpoint'
regress.worker2_endpoint = 'tcp://127.0.0.1:${pool_ports[0]}'
regress.worker3_endpoint = 'tcp://127.0.0.1:${pool_ports[1]}'
regress.worker4_endpoint = 'tcp://127.0.0.1:${pool_ports[2]}'
regress.worker4_pidfile = '$TMP/worker4.pid'
regress.worker4_start = '$WORKER_BIN --listen tcp://127.0.0.1:${pool_ports[2]} --model-dir $MODEL_DIR'
regress.data_dir = '$DATA_DIR'
regress.test_data_dir = '$REGRESS_DIR/data'
regress.worker_log = '$TMP/worker.log'
infer.input_cache_min_bytes = -1"
if ! testenv_start_cluster "$TMP"; then
	echo "regress: 0 passed, ${#tests[@]} failed"
	exit 1
fi
pg_port=$PGPORT

if [ -x "$WORKER_BIN" ]; then
	"$WORKER_BIN" --listen "$endpoint" --model-dir "$MODEL_DIR" \
		>"$TMP/worker.log" 2>&1 &
	TESTENV_PIDS+=("$!")
	if ! testenv_wait_port "$worker_port" 20; then
		echo "regress: warning: infer-worker did not listen on $endpoint; see $TMP/worker.log"
	fi
	for i in 0 1; do
		"$WORKER_BIN" --listen "tcp://127.0.0.1:${pool_ports[$i]}" \
			--model-dir "$MODEL_DIR" >"$TMP/worker$((i + 2)).log" 2>&1 &
		TESTENV_PIDS+=("$!")
	done
	# worker 4 runs as the server's user, so that pool_resend can kill it
	# (COPY TO PROGRAM) in the middle of a query
	"${testenv_as_pg[@]}" "$WORKER_BIN" --listen "tcp://127.0.0.1:${pool_ports[2]}" \
		--model-dir "$MODEL_DIR" >"$TMP/worker4.log" 2>&1 &
	TESTENV_PIDS+=("$!")
	echo "$!" >"$TMP/worker4.pid"
	# the server's user rewrites it when pool_resend starts the worker again
	chmod 666 "$TMP/worker4.pid"
	for i in 0 1 2; do
		if ! testenv_wait_port "${pool_ports[$i]}" 20; then
			echo "regress: warning: infer-worker $((i + 2)) did not listen on port ${pool_ports[$i]}"
		fi
	done
else
	echo "regress: warning: $WORKER_BIN is missing; tests that need a worker will fail"
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
	--inputdir="$REGRESS_DIR" --outputdir="$REGRESS_OUTDIR" \
	"${tests[@]}" 2>&1 | tee "$TMP/pg_regress.out"
rc=${PIPESTATUS[0]}

passed=$(grep -cE '\.\.\. +ok( |$)' "$TMP/pg_regress.out")
failed=$(grep -cE '\.\.\. +FAILED' "$TMP/pg_regress.out")
# pg_regress could not run at all: count every test as failed.
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
	failed=$((${#tests[@]} - passed))
fi
if [ "$failed" != 0 ] && [ -f "$REGRESS_OUTDIR/regression.diffs" ]; then
	echo "differences: $REGRESS_OUTDIR/regression.diffs"
fi
echo "regress: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$rc" = 0 ]
