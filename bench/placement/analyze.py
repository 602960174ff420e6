#!/usr/bin/env python3
"""bench/placement/analyze.py: the scheduler benchmark's figures from the
runs bench.sh leaves in DIR/runs (NAME.jobs from placement-driver,
NAME.counters from the workers' state).

    analyze.py --meets DIR NAME BOUND
        exit 0 when run NAME's p95 slowdown is at most BOUND, else 1
    analyze.py --report DIR --workers N --bound B --search-pattern P
               --time-scale S --load L [--plot PNG]
        the table of every main-PATTERN-POLICY run (main-PATTERN-POLICY-rK
        for the K-th repeat, K >= 2), the workers each policy needs
        (search-POLICY-N runs), the plot, and the RESULT line

A pattern run more than once per policy (bench.sh GAMMA_REPEATS) is
summed up by each policy's median run by p95 (the lower of the middle
two for an even count): its row is marked "median" under the repeats'
rows, and the plot, the ratios and the hit rate of the RESULT line are
its; the RESULT line then also carries the repeats and each repeat's
p95_vs_least_loaded (the repeats interleave the policies, so that each
repeat compares them over the same minutes).

A run's figures are over its jobs after the first 10% (by arrival; the
paper's warm-up, workflows.json warmup_fraction_dropped): latency is
completion minus scheduled arrival; slowdown is latency over the
workflow's best time (runs/best.jobs: the least service time of the job
alone on a warm idle worker, warm-up run excluded).  Failed jobs are
counted over the whole run.  hit_rate = model_hits / (model_hits +
model_misses) summed over the run's workers (WorkerState), counted from
the moment the warm-up jobs had all completed (NAME.warm, read then by
placement-driver --at-warmup) to the end (NAME.counters), so that the
cold start's first loads are left out like the warm-up jobs' latencies;
hit_all is the same over the whole run.  Percentiles are nearest-rank.
"""
import math
import os
import re
import sys

WARMUP = 0.1
POLICIES = ["cost", "round_robin", "least_loaded", "locality"]


def pct(xs, p):
    """Nearest-rank percentile p (0..100) of xs."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(math.ceil(p / 100.0 * len(s))) - 1))
    return s[k]


def read_jobs(path):
    jobs = []
    with open(path) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            jobs.append({"i": int(c[0]), "wf": c[1], "arrival": float(c[3]),
                         "start": float(c[4]), "done": float(c[5]),
                         "latency": float(c[6]), "ok": c[7] == "1",
                         "err": c[8] if len(c) > 8 else ""})
    return jobs


def best_times(d):
    """Least service time per workflow, the first (warm-up) job of each left out."""
    seen, best = set(), {}
    for j in read_jobs(os.path.join(d, "runs", "best.jobs")):
        if j["wf"] not in seen:
            seen.add(j["wf"])
            continue
        if j["ok"]:
            t = j["done"] - j["start"]
            best[j["wf"]] = min(best.get(j["wf"], t), t)
    return best


def stats(d, name, best):
    jobs = read_jobs(os.path.join(d, "runs", name + ".jobs"))
    jobs.sort(key=lambda j: j["arrival"])
    kept = jobs[int(len(jobs) * WARMUP):]
    lat = [j["latency"] for j in kept]
    slow = [j["latency"] / best[j["wf"]] for j in kept]
    end = counters(os.path.join(d, "runs", name + ".counters"))
    warm = counters(os.path.join(d, "runs", name + ".warm"))
    loads, ev, hits, misses = end
    whits, wmisses = hits - warm[2], misses - warm[3]
    return {"name": name, "jobs": len(jobs), "failed": sum(not j["ok"] for j in jobs),
            "errors": [j["err"] for j in jobs if not j["ok"]][:3],
            "lat": lat, "p50": pct(lat, 50), "p95": pct(lat, 95), "p99": pct(lat, 99),
            "slow_p50": pct(slow, 50), "slow_p95": pct(slow, 95),
            "hit_rate_all": hits / (hits + misses) if hits + misses else float("nan"),
            "hit_rate": whits / (whits + wmisses) if whits + wmisses else float("nan"),
            "loads": loads, "evictions": ev, "uses": hits + misses,
            "loads_after": loads - warm[0], "uses_after": whits + wmisses}


def counters(path):
    """(loads, evictions, hits, misses) summed over the PONG lines in path."""
    tot = [0, 0, 0, 0]
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = re.search(r" model_loads=(\d+) model_evictions=(\d+) "
                              r"model_hits=(\d+) model_misses=(\d+) ", line)
                if m:
                    tot = [a + int(b) for a, b in zip(tot, m.groups())]
    return tot


def repeat_of(name):
    """K of run main-PATTERN-POLICY-rK, 1 of main-PATTERN-POLICY."""
    m = re.search(r"-r(\d+)$", name)
    return int(m.group(1)) if m else 1


def print_row(pattern, label, s):
    """One line of the table: run s of pattern under label."""
    print("%-8s %-19s %5d %6d %8.0f %8.0f %8.0f %8.2f %8.2f %8.3f %8.3f %6d %6d %6d" %
          (pattern, label, s["jobs"], s["failed"], s["p50"], s["p95"], s["p99"],
           s["slow_p50"], s["slow_p95"], s["hit_rate"], s["hit_rate_all"],
           s["loads"], s["evictions"], s["uses"]))
    for e in s["errors"]:
        print("    failed: %s" % e)


def arg(name, default=None):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def main():
    if sys.argv[1] == "--meets":
        d, name, bound = sys.argv[2], sys.argv[3], float(sys.argv[4])
        s = stats(d, name, best_times(d))
        ok = s["slow_p95"] <= bound and s["failed"] == 0
        print("  %s: p95 slowdown %.2f (bound %g), %d failed: %s" %
              (name, s["slow_p95"], bound, s["failed"], "meets" if ok else "does not meet"))
        sys.exit(0 if ok else 1)

    d = sys.argv[2]
    bound = float(arg("--bound"))
    best = best_times(d)
    runs = sorted(f[:-5] for f in os.listdir(os.path.join(d, "runs")) if f.endswith(".jobs"))
    patterns = []
    for r in runs:
        if r.startswith("main-"):
            p = r.split("-")[1]
            if p not in patterns:
                patterns.append(p)
    order = {"gamma": 0, "poisson": 1, "uniform": 2, "trace": 3}
    patterns.sort(key=lambda p: order.get(p, 9))
    res = {}
    print()
    print("best time per workflow (alone on a warm idle worker, ms): " +
          ", ".join("%s %.1f" % (k, v) for k, v in sorted(best.items())))
    print()
    print("%-8s %-19s %5s %6s %8s %8s %8s %8s %8s %8s %8s %6s %6s %6s" %
          ("pattern", "policy", "jobs", "failed", "p50_ms", "p95_ms", "p99_ms",
           "slow_p50", "slow_p95", "hit_rate", "hit_all", "loads", "evict", "uses"))
    reps = {}
    for p in patterns:
        for pol in POLICIES:
            names = [r for r in runs if r == "main-%s-%s" % (p, pol) or
                     re.match(r"main-%s-%s-r\d+$" % (p, pol), r)]
            names.sort(key=repeat_of)
            if not names:
                continue
            reps[(p, pol)] = [stats(d, n, best) for n in names]
            for k, s in enumerate(reps[(p, pol)]):
                label = pol if len(names) == 1 else "%s #%d" % (pol, k + 1)
                print_row(p, label, s)
            ordered = sorted(reps[(p, pol)], key=lambda s: s["p95"])
            res[(p, pol)] = ordered[(len(ordered) - 1) // 2]
            if len(names) > 1:
                print_row(p, "%s median" % pol, res[(p, pol)])

    # the search: fewest workers under the bound, per policy
    need = {}
    tried = {}
    for r in runs:
        if r.startswith("search-"):
            pol, n = r[len("search-"):].rsplit("-", 1)
            s = stats(d, r, best)
            tried.setdefault(pol, []).append((int(n), s["slow_p95"], s["failed"]))
    if tried:
        print()
        print("workers needed for p95 slowdown <= %g (%s arrivals, same rate):" %
              (bound, arg("--search-pattern")))
        for pol in POLICIES:
            if pol not in tried:
                continue
            ok = [n for n, sl, fl in tried[pol] if sl <= bound and fl == 0]
            need[pol] = min(ok) if ok else None
            print("  %-13s %s   (tried: %s)" % (
                pol, need[pol] if need[pol] is not None else ">8",
                ", ".join("%d workers: %.2f%s" % (n, sl, " (%d failed)" % fl if fl else "")
                          for n, sl, fl in sorted(tried[pol]))))

    plot = arg("--plot")
    if plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("analyze.py: no matplotlib (python3-matplotlib): no plot")
            plot = None
    if plot:
        fig, axes = plt.subplots(1, len(patterns), figsize=(4.2 * len(patterns), 3.6),
                                 sharey=True)
        if len(patterns) == 1:
            axes = [axes]
        for ax, p in zip(axes, patterns):
            for pol in POLICIES:
                if (p, pol) not in res:
                    continue
                lat = sorted(x / 1000.0 for x in res[(p, pol)]["lat"])
                ys = [(i + 1) / len(lat) for i in range(len(lat))]
                ax.step(lat, ys, where="post",
                        label="%s (p95 %.2f s)" % (pol, res[(p, pol)]["p95"] / 1000.0))
            ax.set_xscale("log")
            ax.set_title("%s arrivals" % p)
            ax.set_xlabel("job latency (s, log)")
            ax.axhline(0.95, color="grey", lw=0.5, ls=":")
            ax.legend(fontsize=7, loc="lower right")
            ax.grid(True, which="both", lw=0.3)
        axes[0].set_ylabel("fraction of jobs")
        fig.suptitle("bench/placement: latency CDF per policy, %s workers, time scale %s"
                     % (arg("--workers"), arg("--time-scale")), fontsize=9)
        fig.tight_layout()
        os.makedirs(os.path.dirname(plot) or ".", exist_ok=True)
        fig.savefig(plot, dpi=90)
        print()
        print("plot: %s" % plot)

    def ratio(base):
        a, b = res.get(("gamma", base)), res.get(("gamma", "cost"))
        return "%.2f" % (a["p95"] / b["p95"]) if a and b else "-"

    cost = res.get(("gamma", "cost"))
    failed = sum(s["failed"] for runs_of in reps.values() for s in runs_of)
    line = ("RESULT: p95_vs_round_robin=%s p95_vs_least_loaded=%s hit_rate=%s "
            "p95_vs_locality=%s" % (ratio("round_robin"), ratio("least_loaded"),
                                    "%.3f" % cost["hit_rate"] if cost else "-",
                                    ratio("locality")))
    for pol in POLICIES:
        if pol in need:
            line += " workers_%s=%s" % (pol, need[pol] if need[pol] is not None else ">8")
    line += " failed=%d workers=%s time_scale=%s load=%s" % (
        failed, arg("--workers"), arg("--time-scale"), arg("--load"))
    # bound.py's floor of the gamma p95 (ms), and cost's p95 over it
    floor = arg("--floor", "-")
    line += " p95_floor_ms=%s" % floor
    if cost and floor not in ("-", ""):
        line += " cost_p95_over_floor=%.2f" % (cost["p95"] / float(floor))
    # each repeat's ratio, cost against least_loaded, in the repeats' order
    rc, rl = reps.get(("gamma", "cost"), []), reps.get(("gamma", "least_loaded"), [])
    if len(rc) > 1:
        line += " repeats=%d" % len(rc)
        if len(rl) == len(rc):
            line += " p95_vs_least_loaded_each=%s" % "/".join(
                "%.2f" % (b["p95"] / a["p95"]) for a, b in zip(rc, rl))
    print()
    print(line)


if __name__ == "__main__":
    main()
