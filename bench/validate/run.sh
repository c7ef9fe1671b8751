#!/usr/bin/env bash
# The pre-commit validator's speed: `cuvil validate` on a generated
# 10,000-op CU-IR module, next to `cat` of the same file (the floor for
# reading it) and `cuvil --version` (the floor for starting the binary).
# Target: validate under 50 ms.  Uses hyperfine when installed, else a loop
# timed with date +%s%N.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
n_ops=${N_OPS:-10000}
runs=${RUNS:-30}
[ -x "$cuvil" ] || { echo "bench/validate: $cuvil not built (make all)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/validate/gen.py "$work" "$n_ops"
model="$work/big.cuir"
"$cuvil" validate -q "$model" || { echo "bench/validate: the generated model does not validate"; exit 1; }
ops=$(grep -c '^  %' "$model")
echo "model: $ops ops, $(wc -c <"$model") bytes"

# Prints the mean wall time of a command in milliseconds.
mean_ms() {
    if command -v hyperfine >/dev/null; then
        hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/h.json" "$*" >/dev/null 2>&1
        /usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["mean"]*1e3))' "$work/h.json"
    else
        local t0 t1
        for _ in 1 2 3; do "$@" >/dev/null; done
        t0=$(date +%s%N)
        for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
        t1=$(date +%s%N)
        echo "$(( (t1 - t0) / runs / 1000 ))" | awk '{printf "%.2f\n", $1 / 1000}'
    fi
}

t_cat=$(mean_ms cat "$model")
t_start=$(mean_ms "$cuvil" --version)
t_val=$(mean_ms "$cuvil" validate -q "$model")
printf '%-32s %10s\n' "command" "mean ms"
printf '%-32s %10s\n' "cat big.cuir" "$t_cat"
printf '%-32s %10s\n' "cuvil --version (start-up)" "$t_start"
printf '%-32s %10s\n' "cuvil validate big.cuir" "$t_val"
awk -v v="$t_val" -v c="$t_cat" -v s="$t_start" 'BEGIN {
    printf "validate / cat: %.1fx   validate - start-up: %.2f ms   target: < 50 ms (%s)\n",
           v / c, v - s, v < 50 ? "met" : "NOT met" }'
