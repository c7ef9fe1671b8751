#!/usr/bin/env python3
"""The kernels that take a run's GPU time, from Nsight Compute's summary.

    ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \\
        PROGRAM ... > ncu.txt
    python3 bench/gpu/ncu_top.py ncu.txt [N]

Prints the N (default 8) kernel names with the largest total time
(invocations x average), their share of all kernels' time, and the total.
"""
import re
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: ncu_top.py NCU_OUTPUT [N]")
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    totals, calls, name, n = {}, {}, None, 0
    for line in open(sys.argv[1], errors="replace"):
        m = re.match(r"\s+(\S+) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*Invocations (\d+)", line)
        if m:
            name, n = m.group(1), int(m.group(2))
            continue
        # ncu groups thousands with commas (1,192.00).
        m = re.match(r"\s+gpu__time_duration\.sum\s+(\S+)\s+[\d.,]+\s+[\d.,]+\s+([\d.,]+)", line)
        if m and name:
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}.get(m.group(1), 1.0)
            avg = float(m.group(2).replace(",", ""))
            totals[name] = totals.get(name, 0.0) + n * avg * scale
            calls[name] = calls.get(name, 0) + n
            name = None
    all_us = sum(totals.values())
    if not all_us:
        sys.exit("ncu_top: no kernel times in %s" % sys.argv[1])
    print("%-22s %6s %10s %6s" % ("kernel", "calls", "total_us", "share"))
    for k in sorted(totals, key=totals.get, reverse=True)[:top]:
        print("%-22s %6d %10.1f %5.1f%%" % (k, calls[k], totals[k], 100 * totals[k] / all_us))
    print("%-22s %6d %10.1f" % ("all kernels", sum(calls.values()), all_us))


if __name__ == "__main__":
    main()
