#!/usr/bin/env bash
# bench/placement/bench.sh: the scheduler benchmark (issue 5): the
# placement policies on the same jobs, over real infer-worker processes
# with simulated devices (docs/placement.md, "Scheduler benchmark").
#
#   1. make_profile.py turns ../shared/data/placement/workflows.json (the
#      Compass/Navigator workflows, arXiv 2402.17652) into a --simulate
#      profile (times x TIME_SCALE), the model registrations and the job
#      queries; arrivals.py draws the arrivals of each pattern (uniform,
#      poisson, gamma cv=10, trace: a synthesized MMPP) from SEED.
#   2. One throwaway cluster (pg_infer preloaded); 8 text inputs of 1 kB and
#      8 image inputs of 3000 kB (random bytes) in tables.
#   3. The best time of each workflow: the job alone on one warm, idle
#      worker (the least of 3 runs after a warm-up run).
#   4. For each pattern and policy: WORKERS fresh workers (--simulate,
#      --gpu-memory GPU_MEMORY), registered anew; placement-driver (driver.c)
#      replays the arrivals over CONNECTIONS libpq connections with
#      infer.placement set; then each worker's counters (worker-client ping).
#      gamma, the headline, is run GAMMA_REPEATS times, each repeat running
#      every policy in turn (main-gamma-POLICY, then -r2, -r3): one run
#      moves by 10 to 20% on 2 shared cores, and analyze.py sums the
#      repeats up by each policy's median.
#   5. The search: for each policy, the fewest workers (from 2 to 8) whose
#      p95 slowdown stays under SLOWDOWN_BOUND, on SEARCH_PATTERN with
#      SEARCH_JOBS jobs.
#   6. bound.py: a lower bound on the p95 any placement could reach on
#      the gamma run's largest burst (the profile's times, no overhead).
#   7. analyze.py: the table, docs/img/placement.png (PLOT=0: none; drawn
#      with Debian's python3-matplotlib under PLOT_PYTHON, /usr/bin/python3),
#      and the RESULT line.
#
# Environment: WORKERS (5), JOBS (jobs of a gamma run: 300), OTHER_JOBS
# (of the other patterns' runs: 150), GAMMA_REPEATS (3: how many times each
# policy's gamma run is made), PATTERNS ("gamma poisson uniform
# trace"), POLICIES ("cost round_robin least_loaded locality"), COMPUTE_SCALE
# (TIME_SCALE: the profile's compute and load times alone; a small one with
# the same arrivals shows what the system itself costs), TIME_SCALE
# (0.25), LOAD (offered load in the paper's clients, each with a mean
# gap of 2000 ms unscaled: 6), CONNECTIONS (128), SEED (1), GPU_MEMORY
# (14000000000: the T4's 14 GB), WORKER (build/bin/infer-worker), SLOWDOWN_BOUND (5), SEARCH (on/off),
# SEARCH_PATTERN (poisson), SEARCH_JOBS (120), WORKER_ARGS (more flags for
# every worker, e.g. "--batch-hold 0"), FULL=1 (JOBS=OTHER_JOBS=1000,
# SEARCH_JOBS=400: the paper's 1000 jobs; about an hour), DEBUG=1 (the
# backends log each placement choice at debug1 into the cluster's log, the
# workers each run's model calls into theirs).
# The first 10% of each run's jobs are dropped as warm-up
# (workflows.json, warmup_fraction_dropped).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
FULL=${FULL:-0}
WORKERS=${WORKERS:-5}
JOBS=${JOBS:-$([ "$FULL" = 1 ] && echo 1000 || echo 300)}
OTHER_JOBS=${OTHER_JOBS:-$([ "$FULL" = 1 ] && echo 1000 || echo 150)}
PATTERNS=${PATTERNS:-gamma poisson uniform trace}
POLICIES=${POLICIES:-cost round_robin least_loaded locality}
TIME_SCALE=${TIME_SCALE:-0.25}
COMPUTE_SCALE=${COMPUTE_SCALE:-$TIME_SCALE}
LOAD=${LOAD:-6}
CONNECTIONS=${CONNECTIONS:-128}
SEED=${SEED:-1}
GPU_MEMORY=${GPU_MEMORY:-14000000000}
SLOWDOWN_BOUND=${SLOWDOWN_BOUND:-5}
GAMMA_REPEATS=${GAMMA_REPEATS:-3}
SEARCH=${SEARCH:-on}
SEARCH_PATTERN=${SEARCH_PATTERN:-poisson}
SEARCH_JOBS=${SEARCH_JOBS:-$([ "$FULL" = 1 ] && echo 400 || echo 120)}
DEBUG=${DEBUG:-0}
PLOT=${PLOT:-1}
# Debian's python3-matplotlib (tools/setup.sh) draws the plot
PLOT_PYTHON=${PLOT_PYTHON:-/usr/bin/python3}
N_INPUTS=8
WF_JSON=$SHARED/data/placement/workflows.json
WORKER=${WORKER:-$BUILD/bin/infer-worker}
DRIVER=$BUILD/bin/bench/placement-driver
WCLIENT=$BUILD/bin/tests/worker-client
top=$(pwd)
tmp=$top/$BUILD/bench-placement

# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_need bench-placement -x "$WORKER" "$DRIVER" "$WCLIENT"
bench_need bench-placement -e "$WF_JSON"
rm -rf "$tmp"
mkdir -p "$tmp/models" "$tmp/runs"
# a copy: a rebuild of build/bin during the bench must not change the workers
cp "$WORKER" "$tmp/infer-worker"
cp "$WCLIENT" "$tmp/worker-client"
WORKER=$tmp/infer-worker
WCLIENT=$tmp/worker-client

python3 bench/placement/make_profile.py "$WF_JSON" "$tmp" --time-scale "$COMPUTE_SCALE"
n_wf=$(wc -l <"$tmp/workflows.tsv")
# the mean gap between jobs: LOAD clients, each one job per 2000 ms (scaled)
gap=$(python3 -c "import sys; print(2000.0 / float(sys.argv[1]) * float(sys.argv[2]))" "$LOAD" "$TIME_SCALE")
echo "bench-placement: $n_wf workflows, time scale $TIME_SCALE (compute $COMPUTE_SCALE), a job every $gap ms on average" \
	"($LOAD clients of the paper), $JOBS jobs per run, $WORKERS workers of $GPU_MEMORY bytes," \
	"$CONNECTIONS connections, $(nproc) CPUs"

TESTENV_EXTRA_CONF="max_connections = $((CONNECTIONS + 20))"
testenv_start_cluster "$tmp/pg"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION pg_infer;
$(cat "$tmp/models.sql")
CREATE TABLE bench_texts (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO bench_texts
SELECT i, (SELECT string_agg(md5(i || ':' || k), ' ') FROM generate_series(1, 30) k)
  FROM generate_series(1, $N_INPUTS) i;
CREATE TABLE bench_images (id int PRIMARY KEY, img bytea NOT NULL);
ALTER TABLE bench_images ALTER img SET STORAGE EXTERNAL;
INSERT INTO bench_images
SELECT i, (SELECT string_agg(sha256((i * 1000000 + k)::text::bytea), '' ORDER BY k)
             FROM generate_series(1, 93750) k)
  FROM generate_series(1, $N_INPUTS) i;
SQL
conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE"

# pool_start N LOG_PREFIX: N fresh workers, the only registered ones, all up.
wpids=()
weps=()
# shellcheck disable=SC2206 # WORKER_ARGS: extra worker flags, split on spaces
WORKER_FLAGS=(${WORKER_ARGS:-})
[ "$DEBUG" = 1 ] && WORKER_FLAGS+=(--log-level debug)
pool_start() {
	local n=$1 i port
	wpids=()
	weps=()
	psql -X -q -At -c "SELECT infer.drop_worker(name) FROM infer.worker_registry" >/dev/null
	for i in $(seq "$n"); do
		port=$(testenv_free_port)
		"$WORKER" --listen "tcp://127.0.0.1:$port" --model-dir "$tmp/models" \
			--simulate "$tmp/profile.json" --gpu-memory "$GPU_MEMORY" \
			--input-cache 0 "${WORKER_FLAGS[@]}" 2>"$2.w$i.log" &
		wpids+=("$!")
		TESTENV_PIDS+=("$!")
		weps+=("tcp://127.0.0.1:$port")
		testenv_wait_port "$port" 20 || { cat "$2.w$i.log" >&2; return 1; }
		psql -X -q -At -c "SELECT infer.add_worker('w$i', 'tcp://127.0.0.1:$port')" >/dev/null
	done
	for _ in $(seq 100); do
		[ "$(psql -X -At -c "SELECT count(*) FROM infer.workers WHERE status = 'up'")" = "$n" ] && return 0
		sleep 0.1
	done
	echo "bench-placement: the workers did not come up" >&2
	return 1
}

# pings_cmd OUT: a command that writes every worker's PONG (its state,
# with the model_* counters) to OUT.
pings_cmd() {
	local ep cmd=""
	for ep in "${weps[@]}"; do
		cmd+="'$WCLIENT' --endpoint '$ep' ping; "
	done
	echo "{ $cmd} >'$1'"
}

# pool_stop OUT: the workers' PONGs to OUT, then stop them.
pool_stop() {
	local i
	sh -c "$(pings_cmd "$1")"
	for i in "${!weps[@]}"; do
		testenv_stop_pid "${wpids[$i]}" TERM
	done
}

# run NAME PATTERN POLICY N JOBS: one run; outputs in $tmp/runs/NAME.*
run() {
	local name=$1 pattern=$2 policy=$3 n=$4 jobs=$5
	local opts="-c infer.placement=$3 -c infer.input_cache_min_bytes=-1"
	python3 bench/placement/arrivals.py "$pattern" "$jobs" "$gap" "$n_wf" "$N_INPUTS" "$SEED" \
		>"$tmp/runs/$name.arrivals"
	pool_start "$n" "$tmp/runs/$name"
	[ "$DEBUG" = 1 ] && opts="$opts -c log_min_messages=debug1"
	PGOPTIONS="$opts" "$DRIVER" --conninfo "$conninfo" --workflows "$tmp/workflows.tsv" \
		--arrivals "$tmp/runs/$name.arrivals" --connections "$CONNECTIONS" \
		--out "$tmp/runs/$name.jobs" --at-warmup "$(pings_cmd "$tmp/runs/$name.warm")" |
		sed "s/^/  $name: /"
	pool_stop "$tmp/runs/$name.counters"
}

# The best time of each workflow: alone on one warm idle worker.
python3 - "$n_wf" >"$tmp/runs/best.arrivals" <<'PY'
import sys
for w in range(int(sys.argv[1])):
    for k in range(4):
        print("0\t%d\t%d" % (w, k % 2 + 1))
PY
pool_start 1 "$tmp/runs/best"
PGOPTIONS="-c infer.placement=cost" "$DRIVER" --conninfo "$conninfo" --workflows "$tmp/workflows.tsv" \
	--arrivals "$tmp/runs/best.arrivals" --connections 1 --out "$tmp/runs/best.jobs" | sed 's/^/  best: /'
pool_stop "$tmp/runs/best.counters"

for pattern in $PATTERNS; do
	reps=1
	[ "$pattern" = gamma ] && reps=$GAMMA_REPEATS
	for rep in $(seq "$reps"); do
		for policy in $POLICIES; do
			if [ "$pattern" = gamma ]; then n_jobs=$JOBS; else n_jobs=$OTHER_JOBS; fi
			name="main-$pattern-$policy"
			[ "$rep" -gt 1 ] && name="$name-r$rep"
			run "$name" "$pattern" "$policy" "$WORKERS" "$n_jobs"
		done
	done
done

if [ "$SEARCH" = on ]; then
	# per policy: from WORKERS down while under the bound, or up while over it
	for policy in $POLICIES; do
		n=$WORKERS
		run "search-$policy-$n" "$SEARCH_PATTERN" "$policy" "$n" "$SEARCH_JOBS"
		if python3 bench/placement/analyze.py --meets "$tmp" "search-$policy-$n" "$SLOWDOWN_BOUND"; then
			while [ "$n" -gt 2 ]; do
				n=$((n - 1))
				run "search-$policy-$n" "$SEARCH_PATTERN" "$policy" "$n" "$SEARCH_JOBS"
				python3 bench/placement/analyze.py --meets "$tmp" "search-$policy-$n" "$SLOWDOWN_BOUND" || break
			done
		else
			while [ "$n" -lt 8 ]; do
				n=$((n + 1))
				run "search-$policy-$n" "$SEARCH_PATTERN" "$policy" "$n" "$SEARCH_JOBS"
				python3 bench/placement/analyze.py --meets "$tmp" "search-$policy-$n" "$SLOWDOWN_BOUND" && break
			done
		fi
	done
fi

# 6. what any placement could reach on the gamma run's largest burst
floor=-
gamma_run=$(ls "$tmp"/runs/main-gamma-*.arrivals 2>/dev/null | head -n 1 || true)
if [ -n "$gamma_run" ]; then
	python3 bench/placement/bound.py "$tmp/workflows.tsv" "$tmp/profile.json" \
		"$tmp/models.sql" "$gamma_run" "$WORKERS" >"$tmp/bound.txt"
	sed -n '1,2s/^/gamma: /p' "$tmp/bound.txt"
	floor=$(sed -n 's/^floor_ms=\([0-9]*\) .*/\1/p' "$tmp/bound.txt")
fi

plot_args=()
[ "$PLOT" = 1 ] && plot_args=(--plot docs/img/placement.png)
"$PLOT_PYTHON" bench/placement/analyze.py --report "$tmp" --workers "$WORKERS" --bound "$SLOWDOWN_BOUND" \
	--search-pattern "$SEARCH_PATTERN" --time-scale "$TIME_SCALE" --load "$LOAD" \
	--floor "$floor" "${plot_args[@]}"
