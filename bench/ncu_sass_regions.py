#!/usr/bin/env python3
"""Where a kernel's instructions and stalls go, from ncu's per-instruction source page.

    ncu --clock-control none -k regex:decode_layers --launch-skip 20 --launch-count 1 \\
        --section SourceCounters --section WarpStateStats -o rep anvil bench MODEL --device cuda ...
    ncu --import rep.ncu-rep --page source --print-source sass --csv > sass.csv
    bench/ncu_sass_regions.py sass.csv [REGIONS] [BLOCK_LAYERS]

Splits the SASS at its block barriers (BAR.SYNC) and prints the regions with the most executed
warp instructions: per block and layer (BLOCK_LAYERS = blocks x layers of the profiled launch,
132 x 24 for Qwen2.5-0.5B on an H200), their share of the stall samples, the top stall reasons
and opcodes. A phase's product loop, its chunk bookkeeping and its waits show up as separate
regions, which is how the integer divisions of the decode kernel's chunk loop were found.
"""
import collections
import csv
import sys


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    block_layers = int(sys.argv[3]) if len(sys.argv) > 3 else 132 * 24
    header, data = rows[1], [r for r in rows[2:] if len(r) >= len(rows[1])]
    col = {h: i for i, h in enumerate(header)}
    samples = col["Warp Stall Sampling (All Samples)"]
    executed = col["Instructions Executed"]
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    num = lambda r, c: int(r[c] or 0)
    total = sum(num(r, samples) for r in data) or 1
    print(f"stall samples {total}, warp instructions per block and layer "
          f"{sum(num(r, executed) for r in data) / block_layers:.0f}")
    bars = [i for i, r in enumerate(data) if "BAR.SYNC" in r[1]]
    bounds = [0] + [b + 1 for b in bars] + [len(data)]
    regions = []
    for a, b in zip(bounds, bounds[1:]):
        reasons, ops = collections.Counter(), collections.Counter()
        for r in data[a:b]:
            for s in stalls:
                reasons[s[len("stall_"):]] += num(r, col[s])
            words = r[1].split()
            if words:
                op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
                ops[op.split(".")[0]] += num(r, executed)
        count = sum(num(r, executed) for r in data[a:b])
        regions.append((count, sum(reasons.values()), a, b, reasons, ops))
    regions.sort(reverse=True)
    for count, n, a, b, reasons, ops in regions[:top]:
        print(f"[{a:5d},{b:5d}) {count / block_layers:8.0f} instr  {100 * n / total:5.1f}% samples  "
              f"{reasons.most_common(3)}  "
              f"{[(k, round(v / block_layers)) for k, v in ops.most_common(7)]}")


if __name__ == "__main__":
    main()
