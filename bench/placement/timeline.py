#!/usr/bin/env python3
"""bench/placement/timeline.py: what each simulated worker of one bench run
did in a window of the run: its model loads, evictions and runs (which
models, how many rows each, how long), and how busy it was.

    timeline.py RUN FROM_MS TO_MS

RUN is a run's prefix under build/bench-placement/runs (for example
build/bench-placement/runs/main-gamma-cost): its .jobs file (driver.c) and
its workers' logs RUN.wN.log.  FROM_MS and TO_MS are milliseconds from the
run's start, the times of the .jobs file (arrivals.py's schedule): to see
a burst, take its arrival from bound.py's line and a few seconds after.

The runs' model calls come from the workers' debug lines ("run of N
requests in X ms: model calls FILE ROWS MS, ..."): run the bench with
DEBUG=1 to have them; without it only loads and evictions show.  The
workers log wall-clock times and the jobs file times from the run's start;
the two are aligned on the last answer (the latest "request ... over"
line against the latest completion of a job that succeeded), which puts
the workers' times within a few milliseconds of the run's.  A group run
that failed as a whole logs no model calls and does not show.  A line is: start, end, length (ms),
what.  Busy is the time in the window that runs or loads took (a load
inside a run counted once).
"""
import datetime
import glob
import re
import sys


STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")


def wall_ms(line):
    """The wall-clock ms of a worker log line (ISO time, UTC)."""
    t = datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000.0


def offset_ms(run, logs):
    """Wall-clock ms of the run's time 0 (see the banner)."""
    last_done = 0.0
    with open(run + ".jobs") as f:
        for line in f:
            cols = line.split("\t")
            if len(cols) >= 8 and cols[7].strip() == "1":
                last_done = max(last_done, float(cols[5]))
    last_answer = 0.0
    for path in logs:
        with open(path) as f:
            for line in f:
                if STAMP.match(line) and " request " in line and " over " in line:
                    last_answer = max(last_answer, wall_ms(line))
    if last_answer == 0.0:
        sys.exit("timeline.py: no answered request in the workers' logs")
    return last_answer - last_done


def events(path, off):
    """(start, end, what) of the loads, evictions and runs in one log."""
    out = []
    with open(path) as f:
        for line in f:
            if not STAMP.match(line):
                continue
            t = wall_ms(line) - off
            m = re.search(r'loaded model "([^"]+)" .* in ([0-9.]+) ms', line)
            if m:
                out.append((t - float(m.group(2)), t, "load " + m.group(1)))
                continue
            m = re.search(r'evicting model "([^"]+)"', line)
            if m:
                out.append((t, t, "evict " + m.group(1)))
                continue
            m = re.search(r"run of (\d+) requests in ([0-9.]+) ms: model calls (.*)", line)
            if m:
                calls = re.sub(r" (\d+) [0-9.]+", r" x\1", m.group(3).strip())
                out.append((t - float(m.group(2)), t,
                            "run (%s requests) %s" % (m.group(1), calls)))
    return sorted(out)


def busy_ms(spans):
    """The length of the union of spans ((start, end) each)."""
    total, reach = 0.0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    run, lo, hi = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    logs = sorted(glob.glob(run + ".w*.log"),
                  key=lambda p: int(re.search(r"\.w(\d+)\.log$", p).group(1)))
    if not logs:
        sys.exit("timeline.py: no worker log %s.wN.log" % run)
    off = offset_ms(run, logs)
    for path in logs:
        spans = []
        print("== worker %s" % re.search(r"\.(w\d+)\.log$", path).group(1))
        for start, end, what in events(path, off):
            if end < lo or start > hi:
                continue
            if not what.startswith("evict"):
                spans.append((max(start, lo), min(end, hi)))
            print("  %9.0f %9.0f %6.0f  %s" % (start, end, end - start, what))
        print("  busy %.0f of %.0f ms" % (busy_ms(spans), hi - lo))


if __name__ == "__main__":
    main()
