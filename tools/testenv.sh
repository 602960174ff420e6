# testenv.sh: sourced by the demo and the test harnesses.  Starts a
# throwaway PostgreSQL cluster and infer-workers on loopback, and stops them
# again (by pid) in testenv_stop, which callers put in an EXIT trap.
#
#   testenv_start_cluster DIR   initdb DIR/data, start it on 127.0.0.1 at a
#                               free port; exports PGHOST, PGPORT, PGUSER,
#                               PGDATABASE for psql
#   testenv_start_worker        start build/bin/infer-worker on a free
#                               loopback port; appends to TESTENV_WORKERS
#                               (endpoints) and TESTENV_WORKER_PIDS
#   testenv_stop                stop the workers and the cluster
#
# PostgreSQL refuses to run as root; when we are root, the cluster runs as
# the "postgres" user that Debian's package creates.

TESTENV_TOP=${TESTENV_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TESTENV_PG_BIN=${TESTENV_PG_BIN:-$(pg_config --bindir)}
TESTENV_WORKERS=()
TESTENV_WORKER_PIDS=()
TESTENV_DATA=

testenv_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

testenv_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

testenv_start_cluster() {
	local dir=$1
	rm -rf "$dir"
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	TESTENV_DATA=$dir/data
	testenv_as_pg "$TESTENV_PG_BIN/initdb" -D "$TESTENV_DATA" -U postgres \
		--auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	PGPORT=$(testenv_free_port)
	cat >>"$TESTENV_DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$dir'
fsync = off
max_connections = 20
CONF
	testenv_as_pg "$TESTENV_PG_BIN/pg_ctl" -D "$TESTENV_DATA" -l "$dir/postgres.log" \
		-w -t 60 start >/dev/null ||
		{ cat "$dir/postgres.log" >&2; return 1; }
	export PGHOST=127.0.0.1 PGPORT PGUSER=postgres PGDATABASE=postgres
}

testenv_start_worker() {
	local port log pid
	port=$(testenv_free_port)
	log=${TESTENV_LOG_DIR:-/tmp}/infer-worker-$port.log
	"$TESTENV_TOP/build/bin/infer-worker" --listen "tcp://127.0.0.1:$port" \
		--model-dir "$TESTENV_TOP/build/models" "$@" >"$log" 2>&1 &
	pid=$!
	TESTENV_WORKERS+=("tcp://127.0.0.1:$port")
	TESTENV_WORKER_PIDS+=("$pid")
	# ready once it listens
	for _ in $(seq 50); do
		if ! kill -0 "$pid" 2>/dev/null; then
			cat "$log" >&2
			return 1
		fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "testenv: infer-worker on port $port did not start" >&2
	return 1
}

testenv_stop() {
	local pid
	for pid in "${TESTENV_WORKER_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	TESTENV_WORKER_PIDS=()
	if [ -n "$TESTENV_DATA" ] && [ -f "$TESTENV_DATA/postmaster.pid" ]; then
		testenv_as_pg "$TESTENV_PG_BIN/pg_ctl" -D "$TESTENV_DATA" -m fast -w stop >/dev/null 2>&1
	fi
}
