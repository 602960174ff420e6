#!/usr/bin/env python3
"""prom_check.py: checks a Prometheus text exposition (format 0.0.4) on stdin.

Used by test_metrics.sh.  Every line must be a "# HELP NAME TEXT", a
"# TYPE NAME TYPE" or a sample "NAME{LABEL="VALUE",...} VALUE"; a family's
HELP and TYPE come once, before its samples, and its samples are together;
no series repeats; a counter's name ends in _total; a histogram has
cumulative _bucket{le} series ending in le="+Inf" equal to its _count, and
a _sum.  Prints "ok N samples in M families", or each problem (exit 1).
"""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(?:\{((?:%s)(?:,%s)*)?\})? (\S+)$" % (NAME, LABEL, LABEL))
HELP = re.compile(r"^# HELP (%s) (.*)$" % NAME)
TYPE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)
LABELS = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def value(text):
    """A sample value as Go's ParseFloat reads it, or None."""
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


def family_of(name, types):
    """The family a sample belongs to (histogram suffixes stripped)."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return name


def main():
    problems = []
    helps, types, done = {}, {}, set()
    current = None
    series = set()
    hist = {}  # family -> {"buckets": [(le, v)], "count": v, "sum": v}
    n = 0
    for lineno, line in enumerate(sys.stdin.read().split("\n"), 1):
        if line == "":
            continue
        m = HELP.match(line)
        if m:
            if m.group(1) in helps:
                problems.append("line %d: second HELP for %s" % (lineno, m.group(1)))
            helps[m.group(1)] = m.group(2)
            continue
        m = TYPE.match(line)
        if m:
            if m.group(1) in types:
                problems.append("line %d: second TYPE for %s" % (lineno, m.group(1)))
            types[m.group(1)] = m.group(2)
            if m.group(2) == "counter" and not m.group(1).endswith("_total"):
                problems.append("line %d: counter %s does not end in _total" % (lineno, m.group(1)))
            continue
        if line.startswith("#"):
            problems.append("line %d: a comment that is neither HELP nor TYPE: %r" % (lineno, line))
            continue
        m = SAMPLE.match(line)
        if not m or value(m.group(3)) is None:
            problems.append("line %d: not a sample: %r" % (lineno, line))
            continue
        n += 1
        name, labels, v = m.group(1), m.group(2) or "", value(m.group(3))
        fam = family_of(name, types)
        if fam not in types or fam not in helps:
            problems.append("line %d: %s has no TYPE and HELP before it" % (lineno, name))
        if fam != current:
            if fam in done:
                problems.append("line %d: samples of %s are not together" % (lineno, fam))
            if current is not None:
                done.add(current)
            current = fam
        key = (name, tuple(sorted(LABELS.findall(labels))))
        if key in series:
            problems.append("line %d: series repeated: %s{%s}" % (lineno, name, labels))
        series.add(key)
        if types.get(fam) == "histogram":
            h = hist.setdefault(fam, {"buckets": []})
            if name.endswith("_bucket"):
                le = dict(LABELS.findall(labels)).get("le")
                if le is None or value(le) is None:
                    problems.append("line %d: bucket without a le label" % lineno)
                else:
                    h["buckets"].append((value(le), v))
            elif name.endswith("_count"):
                h["count"] = v
            elif name.endswith("_sum"):
                h["sum"] = v
    for fam, h in hist.items():
        b = h["buckets"]
        if not b or b[-1][0] != math.inf:
            problems.append("histogram %s: no le=\"+Inf\" bucket last" % fam)
        for (le0, v0), (le1, v1) in zip(b, b[1:]):
            if le1 <= le0 or v1 < v0:
                problems.append("histogram %s: buckets not ascending and cumulative at le=%g" % (fam, le1))
        if "count" not in h or "sum" not in h:
            problems.append("histogram %s: no _count or _sum" % fam)
        elif b and b[-1][1] != h["count"]:
            problems.append("histogram %s: +Inf bucket %g != _count %g" % (fam, b[-1][1], h["count"]))
    if problems:
        print("\n".join(problems))
        return 1
    print("ok %d samples in %d families" % (n, len(types)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
