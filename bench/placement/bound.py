#!/usr/bin/env python3
"""bench/placement/bound.py: a lower bound on the p95 latency any placement
can reach on a run's largest burst, from the simulated device's profile,
so that the measured p95s can be read against what is possible.

    bound.py WORKFLOWS.tsv PROFILE.json MODELS.sql ARRIVALS WORKERS [MEASURED]

WORKFLOWS.tsv, PROFILE.json and MODELS.sql are make_profile.py's (the
stages of each workflow, each model file's compute_ms, which stage runs
which file); ARRIVALS is arrivals.py's; WORKERS the worker count; MEASURED
the number of jobs the p95 is taken over (default: all but the first 10%,
the warm-up analyze.py leaves out).  Prints the burst and the bound, and
last a line "floor_ms=F burst_jobs=N".

The burst: the longest run of arrivals each within GAP of the one before
(GAP: a tenth of the run's mean gap between arrivals).  Its jobs must all
be served; the p95 (nearest rank over MEASURED jobs) lets the
MEASURED - rank slowest jobs lie above it, so the bound is taken over the
burst less that many of its jobs, those that carry the most work (by the
work they bring alone).  For those jobs, with every model resident and
no system overhead, no placement ends them all sooner than the least T
for which:

  - each model's rows can be cut into batches of at most T ms each (a
    batch runs on one worker: a run of n rows costs
    t(n) = t(1) (1 + 0.1 (n - 1)), up to 32 rows, the profile's largest
    batch; make_profile.py), a second stage's batches within T - theta,
    theta being the shortest first stage that feeds a second stage
    (nothing of a second stage starts before one has run);
  - the least work of those batches fits in WORKERS x T, and the second
    stages' in WORKERS x (T - theta);
  - T is at least one job's own chain: its first stage at batch 1, then
    its slowest second stage at batch 1 (branches may run apart);

less the burst's own spread (a job's latency counts from its own arrival).
It is a bound, not a schedule: loads, the cold start and the two cores'
PostgreSQL, ZeroMQ and image shipping are left out, and a schedule that
reaches it need not exist.  Stdlib only.
"""
import json
import math
import re
import sys

SLOPE = 0.1         # make_profile.py's BATCH_SLOPE
MAX_ROWS = 32       # the profile's largest batch size
WARMUP = 0.1        # analyze.py's


def read_inputs(tsv, profile, models_sql):
    """[(name, first_stage_files, second_stage_files)] and {file: t1}."""
    t1 = {f: m["compute_ms"][0][1] for f, m in json.load(open(profile))["models"].items()}
    stage_file = dict(re.findall(r"create_model\('([^']+)', '([^']+)'", open(models_sql).read()))
    wfs = []
    for line in open(tsv):
        f = line.rstrip("\n").split("\t")
        first, cols = f[5], f[6].split(",")
        if first == "-":
            wfs.append((f[0], [stage_file[c] for c in cols], []))
        else:
            wfs.append((f[0], [stage_file[first]], [stage_file[c] for c in cols]))
    return wfs, t1


def largest_burst(arrivals):
    """(start_ms, end_ms, [workflow index]) of the longest run of close arrivals."""
    a = [(float(t), int(w)) for t, w, _ in (l.split("\t") for l in open(arrivals))]
    gap = (a[-1][0] - a[0][0]) / max(len(a) - 1, 1) / 10.0
    best, cur = (0, 0), 0
    for i in range(1, len(a) + 1):
        if i == len(a) or a[i][0] - a[i - 1][0] > gap:
            if i - cur > best[1] - best[0]:
                best = (cur, i)
            cur = i
    burst = a[best[0]:best[1]]
    return burst[0][0], burst[-1][0], [w for _, w in burst], len(a)


def least_work(t1, n, longest):
    """(batches, ms) of the least work running n rows of a model whose
    batch-1 time is t1 in batches of at most `longest` ms each; None when a
    single row takes longer."""
    if n <= 0:
        return 0, 0.0
    rows = min(MAX_ROWS, int(math.floor((longest / t1 - (1 - SLOPE)) / SLOPE + 1e-9)))
    if rows < 1:
        return None
    k = math.ceil(n / rows)
    return k, t1 * ((1 - SLOPE) * k + SLOPE * n)


def feasible(T, rows, second_rows, t1, theta, workers):
    """Whether some schedule could end every job by T (see the banner)."""
    total = later = 0.0
    for f, n in rows.items():
        # a second stage's batch runs after a first stage has: within T - theta
        lw = least_work(t1[f], n, T - theta if f in second_rows else T)
        if lw is None:
            return False
        total += lw[1]
        if f in second_rows:
            later += lw[1]
    return total <= workers * T and later <= workers * (T - theta)


def bound(jobs, wfs, t1, workers):
    """(floor, path) in ms for the jobs (workflow indexes)."""
    rows, second_rows = {}, {}
    feeds = []
    path = 0.0
    for w in jobs:
        _, first, second = wfs[w]
        for f in first + second:
            rows[f] = rows.get(f, 0) + 1
        for f in second:
            second_rows[f] = second_rows.get(f, 0) + 1
        if second:
            feeds.append(min(t1[f] for f in first))
        path = max(path, max(t1[f] for f in first) + max([t1[f] for f in second] or [0]))
    theta = min(feeds) if feeds else 0.0
    lo, hi = path, path
    while not feasible(hi, rows, second_rows, t1, theta, workers):
        lo, hi = hi, hi * 2
    if lo == hi:
        return hi, path
    for _ in range(60):
        mid = (lo + hi) / 2
        if feasible(mid, rows, second_rows, t1, theta, workers):
            hi = mid
        else:
            lo = mid
    return hi, path


def alone_work(w, wfs, t1):
    _, first, second = wfs[w]
    return sum(t1[f] for f in first + second)


def main():
    tsv, profile, models_sql, arrivals, workers = sys.argv[1:6]
    workers = int(workers)
    wfs, t1 = read_inputs(tsv, profile, models_sql)
    start, end, jobs, total = largest_burst(arrivals)
    measured = int(sys.argv[6]) if len(sys.argv) > 6 else total - int(total * WARMUP)
    above = measured - int(math.ceil(0.95 * measured))
    kept = sorted(jobs, key=lambda w: alone_work(w, wfs, t1))[:max(len(jobs) - above, 0)]
    floor, path = bound(kept, wfs, t1, workers)
    counts = ", ".join("%s %d" % (wfs[i][0], jobs.count(i)) for i in range(len(wfs)))
    print("largest burst: %d jobs within %.0f ms from %.0f ms (%s)" %
          (len(jobs), end - start, start, counts))
    print("p95 floor over it (%d jobs, the %d with the most work left above the p95 of %d): "
          "%.0f ms (the least makespan %.0f, one job's path %.0f; less the spread %.0f)" %
          (len(kept), len(jobs) - len(kept), measured, floor - (end - start), floor,
           path, end - start))
    print("floor_ms=%.0f burst_jobs=%d" % (floor - (end - start), len(jobs)))


if __name__ == "__main__":
    main()
