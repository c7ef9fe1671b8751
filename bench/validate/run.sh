#!/usr/bin/env bash
# The pre-commit validator's speed: `cuvil validate` (whole process) on a
# generated 10,000-op CU-IR module and its safetensors weights, side by side
# with `cat` of the same files (the floor for reading them) and `cuvil help
# validate` (the floor for starting the binary: it loads no plugin, unlike
# --version, which asks LLVM for its version).  Target: validate under 50 ms.
# Uses hyperfine when installed, else a loop timed with date +%s%N (mean only).
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
weights="$work/gen.safetensors"
"$cuvil" validate -q "$model" || { echo "bench/validate: the generated model does not validate"; exit 1; }
echo "model: $(grep -c '^  %' "$model") ops, $(wc -c <"$model") bytes;" \
     "weights: $(grep -c 'weights(' "$model") tensors, $(wc -c <"$weights") bytes"

# Prints "mean min" wall time of a command in milliseconds.
time_ms() {
    if command -v hyperfine >/dev/null; then
        hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/h.json" "$*" >/dev/null 2>&1
        /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.2f %.2f" % (r["mean"] * 1e3, r["min"] * 1e3))' "$work/h.json"
    else
        local t0 t1
        for _ in 1 2 3; do "$@" >/dev/null; done
        t0=$(date +%s%N)
        for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
        t1=$(date +%s%N)
        echo "$(( (t1 - t0) / runs / 1000 ))" | awk '{printf "%.2f -\n", $1 / 1000}'
    fi
}

read -r cat_mean cat_min <<<"$(time_ms cat "$model" "$weights")"
read -r start_mean start_min <<<"$(time_ms "$cuvil" help validate)"
read -r val_mean val_min <<<"$(time_ms "$cuvil" validate -q "$model")"
row() { printf '%-36s %9s %9s %12s\n' "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
row "command (whole process)" "mean ms" "min ms" "validate/it"
row "cat big.cuir gen.safetensors" "$cat_mean" "$cat_min" "$(ratio "$val_mean" "$cat_mean")"
row "cuvil help validate (start-up)" "$start_mean" "$start_min" "$(ratio "$val_mean" "$start_mean")"
row "cuvil validate big.cuir" "$val_mean" "$val_min" "1.0x"
awk -v v="$val_mean" -v s="$start_mean" 'BEGIN {
    printf "validate - start-up: %.2f ms   target: mean < 50 ms (%s)\n", v - s,
           v < 50 ? "met" : "NOT met" }'

# The pre-commit hook's other inputs (issue 11): an exported ONNX model
# (torchvision resnet18, 47 MB of weights; target < 50 ms) and a model-
# language file with its weights (lenet; target < 10 ms).
onnx=${RESNET18_ONNX:-$build/models/resnet18.onnx}
if [ ! -f "$onnx" ]; then
    mkdir -p "$build/models"
    /usr/bin/python3 tests/tools/export_torchvision.py "$build/models" >/dev/null 2>&1 ||
        echo "bench/validate: cannot export resnet18 (python3-torch, torchvision)"
fi
cp examples/models/lenet.cvl.py "$work/"
/usr/bin/python3 examples/models/gen_weights.py "$work" lenet >/dev/null
read -r dsl_mean dsl_min <<<"$(time_ms "$cuvil" validate -q "$work/lenet.cvl.py")"
row "cuvil validate lenet.cvl.py" "$dsl_mean" "$dsl_min" "$(ratio "$dsl_mean" "$start_mean")"
awk -v v="$dsl_mean" 'BEGIN { printf "model language (lenet): mean %.2f ms, target < 10 ms (%s)\n",
    v, v < 10 ? "met" : "NOT met" }'
if [ -f "$onnx" ]; then
    read -r onnx_mean onnx_min <<<"$(time_ms "$cuvil" validate -q "$onnx")"
    row "cuvil validate resnet18.onnx" "$onnx_mean" "$onnx_min" "$(ratio "$onnx_mean" "$start_mean")"
    awk -v v="$onnx_mean" 'BEGIN { printf "ONNX (resnet18): mean %.2f ms, target < 50 ms (%s)\n",
        v, v < 50 ? "met" : "NOT met" }'
fi
