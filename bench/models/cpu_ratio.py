#!/usr/bin/python3
"""CPU time per run of two Cuvil builds side by side, for a busy machine
where wall-clock medians are not usable: user+sys of `cuvil bench` with
ITERS runs minus the same with 5 runs (loading and warm-up cancel), each
build's best over alternating rounds.  Reads the artifacts zoo.py leaves
in $BUILD/zoo (NAME.fp32.cuvil and NAME.fp32.base: run zoo.py with
--engines cuvil,base --base DIR once first).

    /usr/bin/python3 bench/models/cpu_ratio.py --base DIR [--models a,b]
        [--rounds R] [--iters K] [--threads T]

Prints per model the CPU ms per run of each and new/base, their geometric
mean, and the load average before and after each model."""
import argparse
import math
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu(binary, art, iters, threads):
    p = subprocess.Popen([binary, "bench", art, "--threads", str(threads), "--iters", str(iters),
                          "--warmup", "3"], stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise RuntimeError("%s bench %s failed" % (binary, art))
    return (ru.ru_utime + ru.ru_stime) * 1e3


def per_run(binary, art, iters, threads):
    return (cpu(binary, art, iters + 5, threads) - cpu(binary, art, 5, threads)) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    zoo = os.path.join(build, "zoo")
    new_bin, base_bin = os.path.join(build, "cuvil"), os.path.join(a.base, "cuvil")
    ratios = []
    print("| model | new CPU ms | base CPU ms | new/base | load before/after |")
    print("|---|---:|---:|---:|---|")
    for name in a.models.split(","):
        load0 = open("/proc/loadavg").read().split()[0]
        best = {"new": float("inf"), "base": float("inf")}
        for _ in range(a.rounds):
            best["new"] = min(best["new"], per_run(new_bin, os.path.join(zoo, name + ".fp32.cuvil"),
                                                   a.iters, a.threads))
            best["base"] = min(best["base"], per_run(base_bin, os.path.join(zoo, name + ".fp32.base"),
                                                     a.iters, a.threads))
        load1 = open("/proc/loadavg").read().split()[0]
        ratios.append(best["new"] / best["base"])
        print("| %s | %.2f | %.2f | %.3f | %s / %s |" % (name, best["new"], best["base"], ratios[-1],
                                                        load0, load1), flush=True)
    print("| geometric mean | | | %.3f | |" % math.exp(sum(map(math.log, ratios)) / len(ratios)))


if __name__ == "__main__":
    main()
