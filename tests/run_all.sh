#!/usr/bin/env bash
# Runs each test suite (a make target) in turn, shows its output, and sums
# the "<name>: N passed, M failed" lines the suites print into one closing
# line.  Exits non-zero when any suite fails.
set -u
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
failed_suites=()
for target in "$@"; do
	echo "=== $target"
	make --no-print-directory "$target" 2>&1 | tee -a "$log"
	if [ "${PIPESTATUS[0]}" != 0 ]; then
		status=1
		failed_suites+=("$target")
	fi
done
read -r passed failed < <(grep -E '^[A-Za-z0-9_./-]+: [0-9]+ passed, [0-9]+ failed' "$log" |
	awk '{p += $2; f += $4} END {print p+0, f+0}')
echo
if [ "${#failed_suites[@]}" -gt 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
	failed=$((failed > 0 ? failed : 1))
fi
echo "total: $passed passed, $failed failed"
exit $status
