# testlib.sh: helpers shared by the process-level tests in
# tests/integration/ (test_worker.sh, test_state.sh, test_pool.sh,
# test_faults.sh, test_curve.sh, test_restart.sh, test_hostile.sh).  Sourced from the
# repository root; sets BUILD, WORKER, CLIENT and MODEL_DIR where the
# environment does not, and sources tools/testenv.sh itself.
# Single-threaded shell; every process it starts is remembered in pids
# and killed by pid in the EXIT trap it installs.
#
#   pass NAME / fail NAME [OUTPUT]  count a result (OUTPUT shown, cut to
#                                   $TESTLIB_FAIL_BYTES, default 3000)
#   check NAME OUTPUT REGEX...      pass when OUTPUT matches every REGEX
#   check_not NAME OUTPUT REGEX     pass when OUTPUT does not match REGEX
#   require_bins SUITE FILE...      exit 1 with "SUITE: 0 passed, 1 failed"
#                                   unless every FILE is executable
#   start_worker LOG [ARGS...]      a worker on a free port of 127.0.0.1
#                                   with ${TESTLIB_WORKER_ARGS[@]} and ARGS
#   use_cluster_cleanup             the EXIT trap also stops the cluster
#   q ARGS... / ms_since T          psql on the test cluster; elapsed ms

BUILD=${BUILD:-build}
WORKER=${WORKER:-$BUILD/bin/infer-worker}
CLIENT=${CLIENT:-$BUILD/bin/tests/worker-client}
MODEL_DIR=${MODEL_DIR:-$BUILD/models}

passed=0
failed=0
tmp=$(mktemp -d)
pids=()
workers=()

# cleanup: the EXIT trap; SIGKILLs every pid in pids and removes $tmp.
cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# cluster_cleanup: the EXIT trap of a test that also runs a PostgreSQL
# cluster (tools/testenv.sh): its processes by pid, the postmaster, then
# $tmp.  use_cluster_cleanup installs it (INT and TERM exit 130 through
# it) and opens $tmp to the server's user, who keeps its cluster there.
cluster_cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	testenv_stop
	cleanup
}
use_cluster_cleanup() {
	trap cluster_cleanup EXIT
	trap 'exit 130' INT TERM
	chmod 755 "$tmp"
}

# wait_grep PATTERN FILE TRIES PAUSE: waits until FILE has a line
# matching PATTERN (grep's basic regular expression), looking TRIES times
# PAUSE seconds apart; 1 if it never does.
wait_grep() {
	for _ in $(seq "$3"); do
		grep -q -- "$1" "$2" 2>/dev/null && return 0
		sleep "$4"
	done
	return 1
}

# q ARGS...: psql ($TESTENV_PG_BIN) unaligned, no headers; stops at the
# first error.  A test may define its own q after sourcing this file.
q() {
	"$TESTENV_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# start_named_worker NAME PORT ARGS...: an infer-worker on 127.0.0.1:PORT
# with ARGS, run through ${worker_prefix[@]} (none: as this user; a test
# may set it to ${testenv_as_pg[@]}), log appended to $tmp/NAME.log; sets
# PID_<NAME>; waits until it listens (1, with its log, if it does not).
worker_prefix=()
start_named_worker() {
	local name=$1 port=$2 pid
	shift 2
	${worker_prefix[@]+"${worker_prefix[@]}"} "$WORKER" --listen "tcp://127.0.0.1:$port" "$@" \
		2>>"$tmp/$name.log" &
	pid=$!
	pids+=("$pid")
	disown "$pid" # killed by pid at exit; no job-control notice then
	printf -v "PID_$name" '%s' "$pid"
	if ! testenv_wait_port "$port" 20; then
		echo "worker $name did not listen on port $port:"
		cat "$tmp/$name.log"
		return 1
	fi
}

# ms_since T: milliseconds since T (date +%s%N).
ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# pass NAME / fail NAME [OUTPUT]: count and print one result.
pass() {
	passed=$((passed + 1))
	echo "ok   - $1"
}
fail() {
	failed=$((failed + 1))
	echo "FAIL - $1"
	[ $# -gt 1 ] && printf '       %s\n' "$2" | head -c "${TESTLIB_FAIL_BYTES:-3000}"
}

# check NAME OUTPUT REGEX...: passes when OUTPUT matches every (extended) REGEX.
check() {
	local name=$1 out=$2
	shift 2
	for re in "$@"; do
		if ! grep -Eq -- "$re" <<<"$out"; then
			fail "$name (no match for /$re/)" "$out"
			return
		fi
	done
	pass "$name"
}

# check_not NAME OUTPUT REGEX: passes when OUTPUT does not match REGEX.
check_not() {
	if grep -Eq -- "$3" <<<"$2"; then
		fail "$1 (matched /$3/)" "$2"
	else
		pass "$1"
	fi
}

# require_bins SUITE FILE...: exits 1 (one failure reported for SUITE)
# unless every FILE exists and is executable.
require_bins() {
	local suite=$1 f
	shift
	for f in "$@"; do
		if [ ! -x "$f" ]; then
			echo "missing $f (make it first)"
			echo "$suite: 0 passed, 1 failed"
			exit 1
		fi
	done
}

# shellcheck source=tools/testenv.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/testenv.sh"

# start_worker LOG [ARGS...]: starts $WORKER on a free port of 127.0.0.1
# with ${TESTLIB_WORKER_ARGS[@]} then ARGS, stderr to LOG, and waits until
# it answers a ping (50 tries); sets WPID and EP, appends WPID to pids and
# workers; returns 1 (printing LOG) when it does not start.
start_worker() {
	local log=$1
	shift
	EP=tcp://127.0.0.1:$(testenv_free_port)
	"$WORKER" --listen "$EP" ${TESTLIB_WORKER_ARGS[@]+"${TESTLIB_WORKER_ARGS[@]}"} "$@" 2>"$log" &
	WPID=$!
	pids+=("$WPID")
	workers+=("$WPID")
	for _ in $(seq 50); do
		if "$CLIENT" --endpoint "$EP" --timeout-ms 200 ping | grep -q '^PONG '; then
			return 0
		fi
		kill -0 "$WPID" 2>/dev/null || break
	done
	echo "worker did not start:"
	cat "$log"
	return 1
}
