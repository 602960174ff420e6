# testenv.sh: sourced by the demo and the test harnesses.  Starts a
# throwaway PostgreSQL cluster and infer-workers on 127.0.0.1, and stops
# them again by pid (testenv_stop, which callers put in an EXIT trap).
#
#   testenv_free_port           a TCP port of 127.0.0.1 nothing listens on
#   testenv_wait_port PORT SECS wait until 127.0.0.1:PORT accepts; 1 if not
#   testenv_start_cluster DIR   initdb DIR/data and start it on 127.0.0.1 at
#                               a free port, Unix socket in DIR; lines read
#                               from TESTENV_EXTRA_CONF are appended to
#                               postgresql.conf; exports PGHOST, PGPORT,
#                               PGUSER, PGDATABASE for psql
#   testenv_start_worker LOG [ARGS...]
#                               start $TESTENV_TOP/build/bin/infer-worker on
#                               a free port with --model-dir build/models and
#                               ARGS, stderr to LOG; sets TESTENV_ENDPOINT
#                               and TESTENV_PID and remembers the pid
#   testenv_stop_pid PID SIG    send SIG, wait up to 10 s, then SIGKILL
#   testenv_stop                stop every worker started here, then the
#                               cluster (fast shutdown)
#
# PostgreSQL refuses to run as root; when we are root, the server runs as
# the "postgres" user that Debian's package creates (setpriv execs, so $!
# is the postmaster's own pid).

TESTENV_TOP=${TESTENV_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TESTENV_PG_BIN=${TESTENV_PG_BIN:-$(${PG_CONFIG:-pg_config} --bindir)}
TESTENV_EXTRA_CONF=${TESTENV_EXTRA_CONF:-}
TESTENV_PIDS=()
TESTENV_PG_PID=
TESTENV_ENDPOINT=
TESTENV_PID=

testenv_as_pg=()
if [ "$(id -u)" = 0 ]; then
	testenv_as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi

testenv_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

testenv_wait_port() {
	python3 - "$1" "$2" <<'PY'
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
PY
}

testenv_stop_pid() {
	local pid=$1 sig=$2
	kill "-$sig" "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

testenv_start_cluster() {
	local dir=$1 old
	# a postmaster left over from an interrupted run still owns dir: stop it
	if [ -f "$dir/data/postmaster.pid" ]; then
		old=$(head -1 "$dir/data/postmaster.pid")
		if grep -q "$dir/data" "/proc/$old/cmdline" 2>/dev/null; then
			testenv_stop_pid "$old" INT
		fi
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
	if ! "${testenv_as_pg[@]}" "$TESTENV_PG_BIN/initdb" -D "$dir/data" -U postgres \
		--auth=trust --no-instructions -E UTF8 --locale=C >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		return 1
	fi
	PGPORT=$(testenv_free_port)
	{
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $PGPORT"
		echo "unix_socket_directories = '$dir'"
		echo "fsync = off"
		echo "max_connections = 20"
		# shared memory and the pool monitor (extension/pool.c) need the
		# library at server start; session_preload_libraries stays so a
		# conf without the former still gets the planner hook at once
		echo "shared_preload_libraries = 'pg_infer'"
		echo "session_preload_libraries = 'pg_infer'"
		[ -n "$TESTENV_EXTRA_CONF" ] && echo "$TESTENV_EXTRA_CONF"
	} >>"$dir/data/postgresql.conf"
	"${testenv_as_pg[@]}" "$TESTENV_PG_BIN/postgres" -D "$dir/data" >"$dir/postgres.log" 2>&1 &
	TESTENV_PG_PID=$!
	for _ in $(seq 100); do
		if "$TESTENV_PG_BIN/pg_isready" -q -h "$dir" -p "$PGPORT"; then
			export PGHOST=$dir PGPORT PGUSER=postgres PGDATABASE=postgres
			return 0
		fi
		kill -0 "$TESTENV_PG_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$dir/postgres.log" >&2
	return 1
}

testenv_start_worker() {
	local log=$1 port
	shift
	port=$(testenv_free_port)
	while [ "$port" = "${PGPORT:-}" ]; do port=$(testenv_free_port); done
	TESTENV_ENDPOINT=tcp://127.0.0.1:$port
	"$TESTENV_TOP/build/bin/infer-worker" --listen "$TESTENV_ENDPOINT" \
		--model-dir "$TESTENV_TOP/build/models" "$@" 2>"$log" &
	TESTENV_PID=$!
	TESTENV_PIDS+=("$TESTENV_PID")
	if ! testenv_wait_port "$port" 20; then
		echo "testenv: infer-worker did not listen on $TESTENV_ENDPOINT:" >&2
		cat "$log" >&2
		return 1
	fi
}

testenv_stop() {
	local pid
	for pid in "${TESTENV_PIDS[@]}"; do
		testenv_stop_pid "$pid" TERM
	done
	TESTENV_PIDS=()
	if [ -n "$TESTENV_PG_PID" ]; then
		testenv_stop_pid "$TESTENV_PG_PID" INT
		TESTENV_PG_PID=
	fi
	wait 2>/dev/null
	return 0
}
