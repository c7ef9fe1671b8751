#!/usr/bin/env bash
# How `cuvil compile` time grows with the graph (issue 25): two generated
# CU-IR shapes at N ops, compiled at -O0 to C (no LLVM: what is measured is
# Cuvil's own front end, passes and code generation), printing the
# --stats phase times and the process's CPU seconds.
#   chain: relu/add alternating, each op on the previous one
#   fan:   N relu(%x) (all equal: CSE merges them), then N-1 adds summing them
# Goal: CPU time per op flat from 1,000 to 100,000 ops (linear).  Before the
# CSE fix, fan's passes took 28 ms at 1,000 ops and 23 s at 16,000.
#   bench/compile-scale/run.sh [N...]        (default 1000 10000 100000)
#   OPT=-O2 EMIT=so bench/compile-scale/run.sh 1000 4000   (with LLVM)
set -euo pipefail
cd "$(dirname "$0")/../.."
cuvil=${BUILD:-build}/cuvil
[ -x "$cuvil" ] || { echo "bench/compile-scale: $cuvil not built (make all)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
for n in "${sizes[@]}"; do
    /usr/bin/python3 - "$work" "$n" <<'PY'
import sys
out, n = sys.argv[1], int(sys.argv[2])
chain = ["cuir 1", "model @chain(%x: f32[4]) -> (f32[4]) {"]
prev = "%x"
for i in range(n):
    chain.append("  %%%d = %s : f32[4]" % (i, "relu(%s)" % prev if i % 2 == 0 else "add(%s, %%x)" % prev))
    prev = "%%%d" % i
chain += ["  return %s" % prev, "}"]
fan = ["cuir 1", "model @fan(%x: f32[4]) -> (f32[4]) {"]
fan += ["  %%r%d = relu(%%x) : f32[4]" % i for i in range(n)]
prev = "%r0"
for i in range(1, n):
    fan.append("  %%s%d = add(%s, %%r%d) : f32[4]" % (i, prev, i))
    prev = "%%s%d" % i
fan += ["  return %s" % prev, "}"]
for name, lines in (("chain", chain), ("fan", fan)):
    with open("%s/%s_%d.cuir" % (out, name, n), "w") as f:
        f.write("\n".join(lines) + "\n")
PY
    for shape in chain fan; do
        /usr/bin/time -f "%U %S" -o "$work/time" "$cuvil" compile "$work/${shape}_$n.cuir" \
            --no-cache -o "$work/out" "${OPT:--O0}" --emit "${EMIT:-c}" --stats \
            --max-ops 10000000 >"$work/stats" 2>&1
        printf '%-6s N=%-7d %s | cpu %s s\n' "$shape" "$n" "$(grep '^time' "$work/stats")" \
            "$(awk '{printf "%.2f", $1 + $2}' "$work/time")"
    done
done
