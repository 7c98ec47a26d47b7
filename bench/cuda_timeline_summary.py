#!/usr/bin/env python3
"""A decode step's median timeline from bench/cuda_timeline.cc's records.

Usage: cuda_timeline_summary.py TIMELINE [FIRST_KERNEL]

Steps are cut at each launch of FIRST_KERNEL (default: the mask column's kernel, the first node
of anvil's recorded decode step), copies included from the one that follows the previous step's
last kernel. For each place in a step: the record, its median duration and the median gap
between the end of the record before it and its start; then the step's median period, and how
much of it the records and the gaps take. Only steps with the most common sequence of records
count (the prefill and the first, eager step differ).
"""
import re
import statistics
import sys
from collections import Counter


def identifiers(mangled):
    """The length-prefixed names of an Itanium-mangled symbol, in order."""
    names, i = [], 0
    while i < len(mangled):
        m = re.match(r"(\d+)", mangled[i:])
        if not m:
            i += 1
            continue
        n = int(m.group(1))
        start = i + len(m.group(1))
        names.append(mangled[start:start + n])
        i = start + n
    return names


def short(name):
    if name.startswith("_Z"):
        names = [n for n in identifiers(name) if n.endswith("kernel")]
        if names:
            return names[0]
    name = re.sub(r"\(.*", "", name)
    name = re.sub(r"^void ", "", name)
    name = name.replace("(anonymous namespace)::", "").replace("anvil::cuda::", "")
    return name[:60]


def main():
    path = sys.argv[1]
    first = sys.argv[2] if len(sys.argv) > 2 else "mask_column_kernel"
    records = []
    for line in open(path):
        parts = line.split(maxsplit=4)
        if len(parts) < 4:
            continue
        kind, start, end = parts[0], int(parts[1]), int(parts[2])
        if kind == "K":
            label = short(parts[4] if len(parts) > 4 else "?")
        elif kind == "M":
            what = {"1": "copy H2D", "2": "copy D2H", "8": "copy D2D", "10": "copy D2D"}
            label = what.get(parts[4].split()[0], "copy kind " + parts[4].split()[0])
        else:
            label = "memset"
        records.append((start, end, label))
    records.sort()
    starts = [i for i, r in enumerate(records) if first in r[2]]
    if len(starts) < 3:
        sys.exit("fewer than three steps found (no '%s' kernels)" % first)
    steps = []
    for a, b in zip(starts, starts[1:]):
        # The copies queued just before the first kernel belong to its step.
        lo = a
        while lo > 0 and records[lo - 1][2].startswith("copy H2D"):
            lo -= 1
        hi = b
        while hi > a and records[hi - 1][2].startswith("copy H2D"):
            hi -= 1
        steps.append(records[lo:hi])
    shapes = Counter(tuple(r[2] for r in s) for s in steps)
    shape, count = shapes.most_common(1)[0]
    kept = [s for s in steps if tuple(r[2] for r in s) == shape]
    print("%d steps of %d share the most common sequence of %d records" %
          (count, len(steps), len(shape)))
    total_busy = 0.0
    total_gap = 0.0
    print("%-62s %10s %10s" % ("record", "us", "gap before"))
    for i, label in enumerate(shape):
        dur = statistics.median((s[i][1] - s[i][0]) / 1e3 for s in kept)
        gap = statistics.median((s[i][0] - s[i - 1][1]) / 1e3 for s in kept) if i else 0.0
        total_busy += dur
        total_gap += gap
        print("%-62s %10.2f %10.2f" % (label, dur, gap))
    periods = [(b[0][0] - a[0][0]) / 1e3 for a, b in zip(kept, kept[1:])]
    period = statistics.median(periods) if periods else float("nan")
    tail = statistics.median((b[0][0] - a[-1][1]) / 1e3 for a, b in zip(kept, kept[1:]))
    print("step period %.1f us (median): records %.1f us, gaps inside %.1f us, "
          "between steps %.1f us" % (period, total_busy, total_gap, tail))


if __name__ == "__main__":
    main()
