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

The burst: the longest run of arrivals after the warm-up, each within GAP
of the one before (GAP: a tenth of the run's mean gap between arrivals).
The p95 (nearest rank over MEASURED jobs) lets the MEASURED - rank slowest
jobs lie above it, so all of the burst's jobs but any that many end within
p95 of their arrival.  The bound below holds for every choice of the jobs
left out: the chain term takes the (that many + 1)-th longest chain, and
the work terms less the most that leaving them out could save (the that
many largest works of one job alone; or per model, a tenth of its batch-1
time a row and its batch-1 time less that tenth a batch the rows empty).
With every model resident and no system overhead, no placement ends the
kept jobs sooner than the least T for which:

  - each model's rows can be cut into batches of at most T ms each (a
    batch runs on one worker: a run of n rows costs
    t(n) = t(1) (1 + 0.1 (n - 1)), up to 32 rows, the profile's largest
    batch; make_profile.py), a second stage's batches within T - theta,
    theta being the shortest first stage that feeds a second stage
    (nothing of a second stage starts before one has run);
  - the least work of those batches fits in WORKERS x T, and the second
    stages' in WORKERS x (T - theta) (a file's first- and second-stage
    rows counted apart);
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
    """(start_ms, end_ms, [workflow index], jobs in the file) of the longest
    run of close arrivals after the warm-up (which analyze.py leaves out)."""
    a = [(float(t), int(w)) for t, w, _ in (l.split("\t") for l in open(arrivals))]
    gap = (a[-1][0] - a[0][0]) / max(len(a) - 1, 1) / 10.0
    first = int(len(a) * WARMUP)
    best, cur = (first, first + 1), first
    for i in range(first + 1, len(a) + 1):
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


def feasible(T, rows, t1, theta, drop, drop_second, above, workers):
    """Whether the kept jobs could all end by T (see the banner)."""
    total = later = save = save_second = 0.0
    for (f, second), n in rows.items():
        # a second stage's batch runs after a first stage has: within T - theta
        longest = T - theta if second else T
        lw = least_work(t1[f], n, longest)
        if lw is None:
            if n <= above:
                continue        # every job with such a row may be left out
            return False
        # leaving out k <= above of its rows saves at most a tenth of t(1)
        # a row and t(1) less the tenth a batch they empty
        k = min(above, n)
        per = lw[0] if lw[0] <= 1 else math.ceil(n / lw[0])
        s = t1[f] * (SLOPE * k + (1 - SLOPE) * min(lw[0], k // per + 1))
        total += lw[1]
        save += s
        if second:
            later += lw[1]
            save_second += s
    return (total - min(drop, save) <= workers * T and
            later - min(drop_second, save_second) <= workers * (T - theta))


def bound(jobs, above, wfs, t1, workers):
    """(floor, path) in ms for the burst's jobs (workflow indexes), any
    `above` of them left out."""
    rows = {}
    feeds, paths, alone, alone_second = [], [], [], []
    for w in jobs:
        _, first, second = wfs[w]
        for f in first:
            rows[(f, False)] = rows.get((f, False), 0) + 1
        for f in second:
            rows[(f, True)] = rows.get((f, True), 0) + 1
        if second:
            feeds.append(min(t1[f] for f in first))
        paths.append(max(t1[f] for f in first) + max([t1[f] for f in second] or [0]))
        alone.append(sum(t1[f] for f in first + second))
        alone_second.append(sum(t1[f] for f in second))
    theta = min(feeds) if feeds else 0.0
    path = sorted(paths, reverse=True)[above] if len(paths) > above else 0.0
    drop = sum(sorted(alone, reverse=True)[:above])
    drop_second = sum(sorted(alone_second, reverse=True)[:above])
    args = (rows, t1, theta, drop, drop_second, above, workers)
    lo, hi = 0.0, max(path, theta, 1.0)
    while not feasible(hi, *args):
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if feasible(mid, *args):
            hi = mid
        else:
            lo = mid
    return max(hi, path), path


def main():
    tsv, profile, models_sql, arrivals, workers = sys.argv[1:6]
    workers = int(workers)
    wfs, t1 = read_inputs(tsv, profile, models_sql)
    start, end, jobs, total = largest_burst(arrivals)
    measured = int(sys.argv[6]) if len(sys.argv) > 6 else total - int(total * WARMUP)
    above = measured - int(math.ceil(0.95 * measured))
    floor, path = bound(jobs, above, wfs, t1, workers)
    floor = max(floor - (end - start), 0.0)
    counts = ", ".join("%s %d" % (wfs[i][0], jobs.count(i)) for i in range(len(wfs)))
    print("largest burst: %d jobs within %.0f ms from %.0f ms (%s)" %
          (len(jobs), end - start, start, counts))
    print("p95 floor over it (any %d of its jobs above the p95 of %d): %.0f ms "
          "(the least makespan less the spread of %.0f ms; one job's path %.0f)" %
          (above, measured, floor, end - start, path))
    print("floor_ms=%.0f burst_jobs=%d" % (floor, len(jobs)))


if __name__ == "__main__":
    main()
