#!/usr/bin/env python3
"""bench/placement/arrivals.py: open-loop job arrivals for the scheduler
benchmark, from a fixed seed, so that every policy sees the same jobs.

    arrivals.py PATTERN JOBS MEAN_GAP_MS N_WORKFLOWS N_INPUTS SEED > FILE

Writes JOBS lines "arrival_ms<TAB>workflow<TAB>input_id": the scheduled
arrival (ms from the start), the workflow (0..N_WORKFLOWS-1, uniform) and
the input row (1..N_INPUTS, uniform).  The gaps between arrivals have mean
MEAN_GAP_MS and follow PATTERN:

  uniform   every gap MEAN_GAP_MS (cv 0);
  poisson   exponential gaps (cv 1);
  gamma     gamma gaps with cv 10 (shape 1/cv^2 = 0.01): bursts of jobs
            arriving together, long silences between (workflows.json,
            "gamma_bursty");
  trace     a synthesized trace, not a recorded one: a two-state
            Markov-modulated Poisson process (MMPP-2), the usual model of
            bursty production request traces.  A "busy" state with 4x the
            mean rate and a "quiet" state with a quarter of it, each lasting
            an exponential time with a mean of 20 mean gaps in busy and 40
            in quiet; the rates are scaled so that the long-run mean gap is
            MEAN_GAP_MS.
"""
import random
import sys


def gaps(pattern, n, mean, rng):
    """n gaps of mean `mean` following pattern."""
    if pattern == "uniform":
        return [mean] * n
    if pattern == "poisson":
        return [rng.expovariate(1.0 / mean) for _ in range(n)]
    if pattern == "gamma":
        cv = 10.0
        shape = 1.0 / (cv * cv)
        return [rng.gammavariate(shape, mean / shape) for _ in range(n)]
    if pattern == "trace":
        # MMPP-2: (rate factor, mean sojourn in mean gaps) of busy, quiet
        states = [(4.0, 20.0), (0.25, 40.0)]
        # long-run rate: time-weighted mean of the factors; rescale to 1
        w = sum(f * d for f, d in states) / sum(d for _, d in states)
        out, t, s = [], 0.0, 0
        left = rng.expovariate(1.0 / (states[s][1] * mean))
        last = 0.0
        while len(out) < n:
            rate = states[s][0] / w / mean
            g = rng.expovariate(rate)
            if g < left:
                left -= g
                t += g
                out.append(t - last)
                last = t
            else:
                # the state changes first (memoryless: draw again after)
                t += left
                s = 1 - s
                left = rng.expovariate(1.0 / (states[s][1] * mean))
        return out
    sys.exit("arrivals.py: unknown pattern %r (uniform, poisson, gamma, trace)" % pattern)


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: arrivals.py PATTERN JOBS MEAN_GAP_MS N_WORKFLOWS N_INPUTS SEED")
    pattern, n, mean, nwf, ninp, seed = sys.argv[1:]
    n, mean, nwf, ninp = int(n), float(mean), int(nwf), int(ninp)
    # one stream for the jobs, one for the gaps: the same jobs under
    # every pattern of one seed
    jobs = random.Random(int(seed))
    rng = random.Random(int(seed) * 7919 + 1)
    t = 0.0
    for g in gaps(pattern, n, mean, rng):
        t += g
        print("%.3f\t%d\t%d" % (t, jobs.randrange(nwf), jobs.randrange(ninp) + 1))


if __name__ == "__main__":
    main()
