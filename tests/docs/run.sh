#!/usr/bin/env bash
# tests/docs/run.sh [FILE.md...]
#
# Runs every ```sql block of the documentation (docs/*.md and README.md, or
# the FILEs named) against a real cluster and real workers, so that the
# examples the docs show are right:
#
#   - a throwaway cluster in build/docs-tmp/PID (tools/testenv.sh: 127.0.0.1
#     only, pg_infer in shared_preload_libraries) and two infer-workers on
#     free 127.0.0.1 ports with the models of MODEL_DIR (default
#     build/models; hard links in build/docs-tmp/PID/models, which the
#     docs' uploads write to);
#   - a template database docs_template: CREATE EXTENSION pg_infer, the
#     workers registered as gpu1 and gpu2, and the fixture
#     tests/docs/fixture.sql (tables scans, lines, docs, staging, cref of
#     real images and texts; its header lists what a doc may use);
#   - per file, a copy of the template and one psql session for all its
#     blocks, in order, ON_ERROR_STOP=1 (tests/docs/check_docs.py: the
#     fence flags error, norun and output, the endpoints 5555/5556 mapped
#     to the workers' and /path/to/your/images to ../shared/data/ocr, and
#     what a file that creates the extension gets).
#
# Without FILEs, the checker first runs its self-test, tests/docs/selftest.md.
# A failing block is reported as FILE:LINE (the line of its ```sql fence)
# with psql's error.  `make install` (or install-extension) first; `make
# check-docs` does both.  Prints "docs: N passed, M failed" (blocks).
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
PG_CONFIG=${PG_CONFIG:-pg_config}
export PG_CONFIG
DATA_DIR=$(cd "${OCR_DATA:-$ROOT/../shared/data/ocr}" && pwd)
WORKER_BIN=$ROOT/$BUILD/bin/infer-worker
MODEL_DIR=$(cd "${MODEL_DIR:-$ROOT/$BUILD/models}" && pwd)
# one folder per run, so that runs at the same time do not meet
TMP=$ROOT/$BUILD/docs-tmp/$$

# shellcheck source=tools/testenv.sh
. "$ROOT/tools/testenv.sh"
# on exit: stop what this run started; keep its folder (logs, the psql
# output of a failing file) only when something failed
docs_rc=1
docs_exit() {
	testenv_stop
	if [ "$docs_rc" = 0 ]; then rm -rf "$TMP"; else echo "docs: logs in $TMP"; fi
}
trap docs_exit EXIT
trap 'exit 130' INT TERM
# folders of earlier runs whose script and postmaster are gone
for d in "$ROOT/$BUILD"/docs-tmp/*/; do
	[ -d "$d" ] || continue
	pid=$(basename "$d")
	case $pid in *[!0-9]*) continue ;; esac
	pm=$(head -1 "$d/data/postmaster.pid" 2>/dev/null)
	if ! kill -0 "$pid" 2>/dev/null && { [ -z "$pm" ] || ! kill -0 "$pm" 2>/dev/null; }; then
		rm -rf "$d"
	fi
done

if [ "$#" -gt 0 ]; then
	files=("$@")
else
	files=(README.md docs/*.md)
fi

if [ ! -x "$WORKER_BIN" ]; then
	echo "missing $WORKER_BIN (make it first)"
	echo "docs: 0 passed, 1 failed"
	exit 1
fi
# a worker is "up" in infer.workers while its last heartbeat is younger
# than half of this: 5 s rather than 1 s, so that a busy machine does not
# turn an example's "up" into "stale"
TESTENV_EXTRA_CONF="infer.worker_timeout = '10s'"
if ! testenv_start_cluster "$TMP"; then
	echo "docs: 0 passed, 1 failed"
	exit 1
fi
# the workers' --model-dir: hard links to the models (a copy across file
# systems), so that what the docs upload (infer.upload_model writes
# .uploaded/ there) stays in $TMP
if ! cp -al "$MODEL_DIR" "$TMP/models" 2>/dev/null && ! cp -a "$MODEL_DIR" "$TMP/models"; then
	echo "docs: 0 passed, 1 failed"
	exit 1
fi
endpoints=()
for i in 1 2; do
	port=$(testenv_free_port)
	while [ "$port" = "$PGPORT" ]; do port=$(testenv_free_port); done
	"$WORKER_BIN" --listen "tcp://127.0.0.1:$port" --model-dir "$TMP/models" \
		2>"$TMP/worker$i.log" &
	TESTENV_PIDS+=("$!")
	if ! testenv_wait_port "$port" 20; then
		cat "$TMP/worker$i.log"
		echo "docs: 0 passed, 1 failed"
		exit 1
	fi
	endpoints+=("tcp://127.0.0.1:$port")
done

if ! "$TESTENV_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "CREATE DATABASE docs_template TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'" \
	>"$TMP/fixture.log" 2>&1 ||
	! "$TESTENV_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d docs_template \
		-c 'CREATE EXTENSION pg_infer' \
		-v data_dir="$DATA_DIR" -v test_data_dir="$ROOT/tests/regress/data" \
		-v endpoint1="${endpoints[0]}" -v endpoint2="${endpoints[1]}" \
		-f tests/docs/fixture.sql >>"$TMP/fixture.log" 2>&1; then
	cat "$TMP/fixture.log"
	echo "docs: fixture failed"
	echo "docs: 0 passed, 1 failed"
	exit 1
fi

check_docs() {
	PATH=$TESTENV_PG_BIN:$PATH DOCS_TMP=$TMP DOCS_IMAGES=$DATA_DIR \
		DOCS_ENDPOINT1=${endpoints[0]} DOCS_ENDPOINT2=${endpoints[1]} \
		python3 tests/docs/check_docs.py docs_template "$@"
}

# The harness's own test: tests/docs/selftest.md holds blocks that must
# pass and blocks that must fail (a wrong output, an error block that does
# not fail, a failing statement, the blocks after it, a norun block
# without its reason, a block without its ';'); the checker must name
# exactly the failing ones.
self_rc=0
if [ "$#" = 0 ]; then
	out=$(check_docs tests/docs/selftest.md 2>&1)
	got=$(grep -oE '^tests/docs/selftest.md:[0-9]+:' <<<"$out" | cut -d: -f2 | sort -n | tr '\n' ' ')
	if [ "$got" = "15 39 51 57 63 69 " ] && grep -q '^docs: 3 passed, 6 failed$' <<<"$out"; then
		echo "ok   - the checker finds the 6 wrong blocks of tests/docs/selftest.md"
		echo "docs-selftest: 1 passed, 0 failed"
	else
		echo "FAIL - the checker on tests/docs/selftest.md (failing lines: $got; want 15 39 51 57 63 69):"
		echo "$out"
		echo "docs-selftest: 0 passed, 1 failed"
		self_rc=1
	fi
fi

check_docs "${files[@]}"
docs_rc=$?
[ "$self_rc" = 0 ] || docs_rc=1
exit "$docs_rc"
