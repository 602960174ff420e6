#!/usr/bin/env bash
# tests/asan/run.sh TARGET...: `make check-asan` (tests/asan/asan.mk).
#
# Runs the test suites TARGET... (the make targets of `make check`) against
# programs and an extension built with AddressSanitizer and
# UndefinedBehaviorSanitizer, without installing anything and without
# touching build/:
#
#   1. make BUILD=$ASAN_BUILD OPT="$ASAN_OPT" asan-programs: every program
#      of the fragments, sanitized, in $ASAN_BUILD (default build-asan);
#   2. pg_infer.so, sanitized, by PGXS in $ASAN_BUILD/ext (a tree of
#      symbolic links to extension/, planner/, common/ and the generated
#      protocol code; make's COPT carries the flags);
#   3. a private PostgreSQL tree, $ASAN_BUILD/pg: the installation's
#      bindir, sharedir and pkglibdir mirrored under $ASAN_BUILD/pg (the
#      server finds share/ and lib/ relative to its executable when the
#      installation is moved: src/port/path.c, make_relative_path), with
#      postgres and initdb copied, every other file a symbolic link to the
#      real one, and pg_infer.so, its control and SQL files ours; the test
#      harness (tools/testenv.sh) reaches it through TESTENV_PG_BIN, a
#      folder whose postgres execs the copy with libasan and libubsan in
#      LD_PRELOAD (an unsanitized executable that loads a sanitized library
#      needs the runtime first) and tests/asan/asan_first.c; a server is started once to check that it
#      maps our pg_infer.so and libasan and creates the extension;
#   4. each TARGET by make BUILD=$ASAN_BUILD -o install-extension, with
#      MODEL_DIR and PYTHON those of build/ (read only) and the regress
#      results in $ASAN_BUILD/regress-out (REGRESS_OUTDIR);
#   5. every sanitizer report goes to a file in $ASAN_BUILD/sanitizer-logs
#      (ASan's by ASAN_OPTIONS log_path, UBSan's by tests/asan/ubsan_log.c,
#      linked into each program); any file there, or a report in a suite's
#      output, fails the run and is printed.  Before the suites, three faults
#      (tests/asan/selftest.c) must each leave a report, or the run stops.
#
# Our programs run with leak detection on; the postgres processes with it
# off (PostgreSQL frees its memory contexts at exit by design, not one
# allocation at a time).  UndefinedBehaviorSanitizer does not recover
# (-fno-sanitize-recover=undefined): undefined behaviour aborts the process.
# Prints each suite's output, "check-asan: ..." with the counts and the wall
# time; exits non-zero on any failure or report.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
AB=${ASAN_BUILD:-build-asan}
ASAN_OPT=${ASAN_OPT:--O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer}
PG_CONFIG=${PG_CONFIG:-pg_config}
MODEL_DIR=${MODEL_DIR:-$ROOT/build/models}
PYTHON=${PYTHON:-$ROOT/build/venv/bin/python}
SHARED=${SHARED:-../shared}
case $AB in
"" | build | build/ | ./build | ./build/ | "$ROOT/build" | "$ROOT/build/")
	echo "check-asan: ASAN_BUILD must not be the normal build folder ($AB)" >&2
	exit 2
	;;
esac
case $AB in /*) ABS=$AB ;; *) ABS=$ROOT/$AB ;; esac
T0=$(date +%s)
LOGS=$ABS/sanitizer-logs
LIBASAN=$(gcc -print-file-name=libasan.so)
LIBUBSAN=$(gcc -print-file-name=libubsan.so)
mkdir -p "$ABS"
# nothing in the ASan build is tracked
[ -f "$ABS/.gitignore" ] || printf '# the ASan build (tests/asan/asan.mk)\n*\n' >"$ABS/.gitignore"

# UBSan's reports to files too: tests/asan/ubsan_log.c, linked into every
# program and into pg_infer.so (-Wl,: the compiler passes it to the linker
# only, so compiling with OPT leaves it alone)
mkdir -p "$ABS/asan"
gcc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -c tests/asan/ubsan_log.c \
	-o "$ABS/asan/ubsan_log.o" || fatal "tests/asan/ubsan_log.c does not build"
ASAN_OPT="$ASAN_OPT -Wl,$ABS/asan/ubsan_log.o"

# make with the ASan build's settings; -o install-extension: the suites
# that install the extension system-wide first (check-regress, check-pool)
# use the private tree instead
MK=(make --no-print-directory "BUILD=$AB" "OPT=$ASAN_OPT" "MODEL_DIR=$MODEL_DIR"
	"PYTHON=$PYTHON" "SHARED=$SHARED" "PG_CONFIG=$PG_CONFIG" -o install-extension)

fatal() {
	echo "check-asan: $*" >&2
	echo "check-asan: 0 suites run, setup failed, wall $(($(date +%s) - T0)) s"
	exit 1
}

# ---- 1. the programs -------------------------------------------------------
echo "=== check-asan: building the programs in $AB"
"${MK[@]}" asan-programs || fatal "the sanitized build of the programs failed"

# ---- 2. the extension ------------------------------------------------------
echo "=== check-asan: building pg_infer.so in $AB/ext"
EXT=$ABS/ext
mkdir -p "$EXT/extension" "$EXT/build"
for d in common planner worker sql; do
	ln -sfn "$ROOT/$d" "$EXT/$d"
done
ln -sfn "$ABS/gen" "$EXT/build/gen"
# the extension's files, as links (objects land beside them, in $EXT)
find "$EXT/extension" -maxdepth 1 -type l -delete
for f in "$ROOT"/extension/*; do
	case $f in *.o | *.so | *.bc) continue ;; esac
	[ -f "$f" ] && ln -sfn "$f" "$EXT/extension/$(basename "$f")"
done
make --no-print-directory -C "$EXT/extension" PG_CONFIG="$PG_CONFIG" \
	COPT="$ASAN_OPT" with_llvm=no pg_infer.so ||
	fatal "the sanitized build of pg_infer.so failed"

# ---- 3. the private PostgreSQL tree -----------------------------------------
echo "=== check-asan: private PostgreSQL tree in $AB/pg"
PG_BIN_SYS=$("$PG_CONFIG" --bindir)
PG_SHARE_SYS=$("$PG_CONFIG" --sharedir)
PG_LIB_SYS=$("$PG_CONFIG" --pkglibdir)
PGT=$ABS/pg
rm -rf "$PGT"
TBIN=$PGT$PG_BIN_SYS
TSHARE=$PGT$PG_SHARE_SYS
TLIB=$PGT$PG_LIB_SYS
WRAP=$PGT/wrap
mkdir -p "$TBIN" "$TSHARE/extension" "$TLIB/bitcode" "$WRAP"
# link_all SRC DST: a link in DST to every entry of SRC but pg_infer's and
# those DST has already
link_all() {
	local f
	for f in "$1"/*; do
		case $(basename "$f") in pg_infer*) continue ;; esac
		[ -e "$2/$(basename "$f")" ] || ln -s "$f" "$2/$(basename "$f")"
	done
}
# postgres and initdb find the tree from their own path: copies, not links
cp -p "$PG_BIN_SYS/postgres" "$PG_BIN_SYS/initdb" "$TBIN/"
[ -x "$PG_BIN_SYS/pg_ctl" ] && cp -p "$PG_BIN_SYS/pg_ctl" "$TBIN/"
link_all "$PG_BIN_SYS" "$TBIN"
link_all "$PG_SHARE_SYS/extension" "$TSHARE/extension"
link_all "$PG_SHARE_SYS" "$TSHARE"
link_all "$PG_LIB_SYS/bitcode" "$TLIB/bitcode" # no JIT inlining of another pg_infer
link_all "$PG_LIB_SYS" "$TLIB"
ln -s "$EXT/extension/pg_infer.so" "$TLIB/pg_infer.so"
for f in "$ROOT"/sql/pg_infer.control "$ROOT"/sql/pg_infer--*.sql; do
	ln -s "$f" "$TSHARE/extension/$(basename "$f")"
done
# TESTENV_PG_BIN: postgres with the sanitizer runtimes first, then
# asan_first.so (tests/asan/asan_first.c: without it the server hangs in
# bindtextdomain at start); leaks off (PostgreSQL frees memory contexts,
# not allocations, at exit)
gcc -std=c11 -Wall -Wextra -Werror -O0 -fPIC -shared -o "$PGT/asan_first.so" \
	tests/asan/asan_first.c -ldl || fatal "tests/asan/asan_first.c does not build"
PG_ASAN_OPTIONS="log_path=$LOGS/asan-postgres:detect_leaks=0"
PG_UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cat >"$WRAP/postgres" <<EOF
#!/bin/sh
# check-asan: the private tree's postgres with ASan and UBSan preloaded
LD_PRELOAD="$LIBASAN $LIBUBSAN $PGT/asan_first.so\${LD_PRELOAD:+ \$LD_PRELOAD}" \\
ASAN_OPTIONS="$PG_ASAN_OPTIONS" UBSAN_OPTIONS="$PG_UBSAN_OPTIONS" \\
CHECK_ASAN_UBSAN_LOG="$LOGS/ubsan-postgres" \\
exec "$TBIN/postgres" "\$@"
EOF
chmod 755 "$WRAP/postgres"
ln -s "$TBIN/initdb" "$WRAP/initdb"
for f in "$PG_BIN_SYS"/*; do
	[ -e "$WRAP/$(basename "$f")" ] || ln -s "$f" "$WRAP/$(basename "$f")"
done

rm -rf "$LOGS"
mkdir -p "$LOGS"
chmod 1777 "$LOGS" # the server and worker 4 run as postgres when we are root
export ASAN_OPTIONS="log_path=$LOGS/asan:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export CHECK_ASAN_UBSAN_LOG=$LOGS/ubsan
export LSAN_OPTIONS="suppressions=$ROOT/tests/asan/lsan.supp:print_suppressions=0"
export TESTENV_PG_BIN=$WRAP
export REGRESS_OUTDIR=$ABS/regress-out
mkdir -p "$REGRESS_OUTDIR"
# the hard-wired $BUILD/models of the harnesses: the models of build/
[ -e "$ABS/models" ] || ln -s "$MODEL_DIR" "$ABS/models"
# the Python references the suites cache in $BUILD (ONNX Runtime,
# RapidOCR): those of build/ where they are, copied (make keeps them when
# they are up to date)
for d in model-tests text text-model-tests ocr-reference; do
	if [ -d "$ROOT/build/$d" ]; then
		mkdir -p "$ABS/$d"
		cp -a -u "$ROOT/build/$d/." "$ABS/$d/"
	fi
done

# the sanitizers report to files here: each of three faults
# (tests/asan/selftest.c) must leave its report, or the run proves nothing
echo "=== check-asan: self-test (a heap overflow, a leak, undefined behaviour)"
# shellcheck disable=SC2086 # ASAN_OPT is a list of flags
gcc -std=c11 $ASAN_OPT -o "$ABS/asan/selftest" tests/asan/selftest.c ||
	fatal "tests/asan/selftest.c does not build"
for fault in overflow leak shift; do
	st=$ABS/asan/selftest-$fault
	rm -f "$st".*
	ASAN_OPTIONS="log_path=$st:detect_leaks=1" CHECK_ASAN_UBSAN_LOG=$st \
		"$ABS/asan/selftest" "$fault" >/dev/null 2>&1
	if ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error' "$st".* 2>/dev/null; then
		fatal "self-test: '$fault' left no report in $st.PID"
	fi
	echo "self-test: '$fault' reported in $(basename "$(ls "$st".*)")"
	rm -f "$st".*
done

# the server of the tree loads our pg_infer.so, with libasan
(
	# shellcheck source=tools/testenv.sh
	. "$ROOT/tools/testenv.sh"
	trap testenv_stop EXIT
	testenv_start_cluster "$ABS/check-tmp" || exit 1
	maps=$(cat "/proc/$TESTENV_PG_PID/maps")
	grep -q "$EXT/extension/pg_infer.so" <<<"$maps" || {
		echo "the server did not map $EXT/extension/pg_infer.so" >&2
		exit 1
	}
	grep -q libasan <<<"$maps" || {
		echo "the server did not map libasan" >&2
		exit 1
	}
	libdir=$("$PG_BIN_SYS/psql" -X -At -c "SELECT setting FROM pg_settings WHERE name = 'dynamic_library_path'" \
		-c "CREATE EXTENSION pg_infer" -c "SELECT probin FROM pg_proc WHERE probin LIKE '%pg_infer%' LIMIT 1") ||
		exit 1
	echo "server pid $TESTENV_PG_PID maps $EXT/extension/pg_infer.so and libasan;" \
		"dynamic_library_path, probin:" "$(tr '\n' ' ' <<<"$libdir")"
) || fatal "the private PostgreSQL tree does not load the sanitized pg_infer.so"

# ---- 4. the suites -------------------------------------------------------------
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
failed_suites=()
for target in "$@"; do
	echo "=== $target (asan)"
	"${MK[@]}" "$target" 2>&1 | tee -a "$log"
	if [ "${PIPESTATUS[0]}" != 0 ]; then
		status=1
		failed_suites+=("$target")
	fi
done
read -r passed failed < <(grep -E '^[A-Za-z0-9_./-]+: [0-9]+ passed, [0-9]+ failed' "$log" |
	awk '{p += $2; f += $4} END {print p+0, f+0}')

# ---- 5. the sanitizer reports --------------------------------------------------
reports=$(find "$LOGS" -type f | sort)
nreports=0
# a report printed to a suite's output all the same (a runtime that did
# not get the log path) fails the run too
stray=$(grep -cE '(runtime error: |ERROR: (Address|Leak|UndefinedBehavior)Sanitizer)' "$log")
if [ "$stray" != 0 ]; then
	status=1
	nreports=$((nreports + stray))
	echo
	echo "=== sanitizer reports in the suites' output ($stray lines; above)"
	grep -E '(runtime error: |ERROR: (Address|Leak|UndefinedBehavior)Sanitizer)' "$log"
fi
if [ -n "$reports" ]; then
	nreports=$((nreports + $(wc -l <<<"$reports")))
	status=1
	echo
	echo "=== sanitizer reports ($(wc -l <<<"$reports") files in $LOGS)"
	while read -r f; do
		echo "--- $f"
		head -c 20000 "$f"
	done <<<"$reports"
fi
echo
if [ "${#failed_suites[@]}" -gt 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
	failed=$((failed > 0 ? failed : 1))
fi
echo "check-asan: $# suites, $((${#@} - ${#failed_suites[@]})) passed;" \
	"tests $passed passed, $failed failed; sanitizer reports: $nreports;" \
	"wall $(($(date +%s) - T0)) s"
exit $status
