#!/usr/bin/env bash
# Transformers (issue 26): Cuvil native vs ONNX Runtime 1.20.1 (graph
# optimisations on: it fuses attention) vs PyTorch eager, fp32, batch 1, at
# 1 and 2 threads: a BERT-base-sized encoder at sequence 128 and a
# GPT-2-small-sized decode step with a 128-token past (static exports of
# tests/tools/export_transformers_static.py), and torchvision's ViT-B/16
# (tests/tools/export_transformers.py), exported into $BUILD/models on first
# use (random weights, fixed seed).  Each engine keeps its lowest median of
# ITERS runs over ROUNDS rounds, the engines alternating within a round (a
# shared machine disturbs a round, not an engine).  Prints the ratios, the
# error against PyTorch's outputs (max abs error / the output's range, worst
# output), the cold -O2 compile time and the load average.  Target:
# Cuvil/ORT <= 1.0 at both thread counts.
#   MODELS="bert_base gpt2_step vit_b_16"  PRECISION=bf16 (adds -p bf16 columns)
#   NO_TORCH=1 leaves PyTorch out (on a loaded machine one eager run can take seconds)
#   NODE_PATH: where onnxruntime-node 1.20.1 is (default ./node_modules)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
iters=${ITERS:-10}
rounds=${ROUNDS:-3}
models=${MODELS:-bert_base gpt2_step vit_b_16}
export NODE_PATH=${NODE_PATH:-$PWD/node_modules}
[ -x "$cuvil" ] || { echo "bench/models: $cuvil not built (make all)"; exit 1; }
[ -f "$NODE_PATH/onnxruntime-node/package.json" ] ||
    { echo "bench/models: npm install --ignore-scripts onnxruntime-node@1.20.1 first"; exit 1; }
least() { /usr/bin/python3 -c 'import sys; v=[float(a) for a in sys.argv[1:] if a != "nan"]
print(min(v) if v else "nan")' "$@"; }
p50() { /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["p50_ms"])'; }
# err ARTIFACT ONNX REF_PREFIX IN...: the worst output's max abs error over its range.
err() {
    local art=$1 onnx=$2 ref=$3 out=$work/out args=() i=0
    shift 3
    for n in $(/usr/bin/python3 -c 'import onnx,sys
print(" ".join(i.name for i in onnx.load(sys.argv[1], load_external_data=False).graph.input))' "$onnx"); do
        args+=(--input "$n=${@:$((i + 1)):1}")
        i=$((i + 1))
    done
    rm -rf "$out"
    "$cuvil" run "$art" "${args[@]}" -o "$out" --json >"$work/run.json"
    /usr/bin/python3 - "$work/run.json" "$ref" <<'PY'
import json, sys
import numpy as np
worst = 0.0
for k, o in enumerate(json.load(open(sys.argv[1]))["outputs"]):   # in the model's order
    y, r = np.load(o["path"]), np.load("%s%d.npy" % (sys.argv[2], k))
    worst = max(worst, float(np.abs(y - r).max()) / max(float(r.max() - r.min()), 1e-30))
print("%.1e" % worst)
PY
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-10s %3s %9s %9s %9s %7s %9s %8s %9s %8s %8s\n' model th cuvil_ms ort_ms torch_ms \
    cuv/ort cuv/torch err bf16_ms bf16/ort bf16_err
for m in $models; do
    if [ "$m" = vit_b_16 ]; then
        onnx="$build/models/large/$m.onnx" ref="$build/models/large/$m.0.out"
        [ -f "$onnx" ] || /usr/bin/python3 tests/tools/export_transformers.py "$build/models/large" "$m" \
            >/dev/null 2>&1
        ins=$(ls "$build/models/large/$m".0.in*.npy | sort -V)
    else
        onnx="$build/models/$m.onnx" ref="$build/models/$m.out"
        [ -f "$onnx" ] || /usr/bin/python3 tests/tools/export_transformers_static.py "$build/models" "$m" \
            >/dev/null 2>&1
        ins=$(ls "$build/models/$m".in*.npy | sort -V)
    fi
    t0=$(date +%s%N)
    "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m" --emit so --no-cache >/dev/null
    t1=$(date +%s%N)
    # shellcheck disable=SC2086
    e=$(err "$work/$m" "$onnx" "$ref" $ins) he=-
    if [ -n "${PRECISION:-}" ]; then
        "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m.$PRECISION" --emit so --no-cache \
            -p "$PRECISION" >/dev/null
        # shellcheck disable=SC2086
        he=$(err "$work/$m.$PRECISION" "$onnx" "$ref" $ins)
    fi
    for th in 1 2; do
        c=inf o=inf t=inf h=nan
        [ -z "${NO_TORCH:-}" ] || t=nan
        for _ in $(seq "$rounds"); do
            c=$(least "$c" "$("$cuvil" bench "$work/$m" --threads "$th" --iters "$iters" --json | p50)")
            # shellcheck disable=SC2086
            o=$(least "$o" "$(node bench/models/ort_tbench.js "$onnx" "$th" "$iters" $ins || echo nan)")
            [ -n "${NO_TORCH:-}" ] || t=$(least "$t" "$(/usr/bin/python3 bench/models/torch_tbench.py \
                "$m" "$th" "$iters" 2>/dev/null || echo nan)")
            [ -n "${PRECISION:-}" ] && h=$(least "$h" "$("$cuvil" bench "$work/$m.$PRECISION" \
                --threads "$th" --iters "$iters" --json | p50)")
        done
        /usr/bin/python3 -c 'import sys; c,o,t,h=map(float,sys.argv[2:6]); r=lambda a,b: "%.2f"%(a/b) if a==a and b==b else "-"
print("%-10s %3s %9.2f %9.2f %9.2f %7s %9s %8s %9s %8s %8s" % (sys.argv[1], sys.argv[6], c, o, t, r(c,o), r(c,t),
      sys.argv[7], "%.2f"%h if h==h else "-", r(h,o), sys.argv[8]))' "$m" "$c" "$o" "$t" "$h" "$th" "$e" "$he"
    done
    echo "  $m: cold compile -O2 $(( (t1 - t0) / 1000000 )) ms; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
