#!/usr/bin/env bash
# Transformers (issue 26): Cuvil native vs ONNX Runtime 1.20.1 (graph
# optimisations on: it fuses attention) vs PyTorch eager, fp32, batch 1, at
# 1 and 2 threads, on the static exports of
# tests/tools/export_transformers_static.py: a BERT-base-sized encoder at
# sequence 128 and a GPT-2-small-sized decode step with a 128-token past
# (exported into $BUILD/models on first use; random weights, fixed seed).
# Each engine keeps its lowest median of ITERS runs over ROUNDS rounds, the
# engines alternating within a round (a shared machine disturbs a round, not
# an engine).  Prints the ratios and the cold -O2 compile time.  Target:
# Cuvil/ORT <= 1.0 at both thread counts.
#   MODELS="bert_base gpt2_step"  PRECISION=bf16 (adds a -p bf16 column)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
iters=${ITERS:-10}
rounds=${ROUNDS:-3}
models=${MODELS:-bert_base gpt2_step}
[ -x "$cuvil" ] || { echo "bench/models: $cuvil not built (make all)"; exit 1; }
[ -f node_modules/onnxruntime-node/package.json ] ||
    { echo "bench/models: npm install --ignore-scripts onnxruntime-node@1.20.1 first"; exit 1; }
least() { /usr/bin/python3 -c 'import sys; v=[float(a) for a in sys.argv[1:] if a != "nan"]
print(min(v) if v else "nan")' "$@"; }
p50() { /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["p50_ms"])'; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-10s %7s %10s %10s %10s %9s %9s %10s %9s\n' model threads cuvil_ms ort_ms torch_ms \
    cuv/ort cuv/torch bf16_ms bf16/ort
for m in $models; do
    onnx="$build/models/$m.onnx"
    [ -f "$onnx" ] || /usr/bin/python3 tests/tools/export_transformers_static.py "$build/models" "$m" \
        >/dev/null 2>&1
    ins=$(ls "$build/models/$m".in*.npy | sort -V)
    t0=$(date +%s%N)
    "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m" --emit so --no-cache >/dev/null
    t1=$(date +%s%N)
    [ -n "${PRECISION:-}" ] && "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m.$PRECISION" \
        --emit so --no-cache -p "$PRECISION" >/dev/null
    for th in 1 2; do
        c=inf o=inf t=inf h=nan
        for _ in $(seq "$rounds"); do
            c=$(least "$c" "$("$cuvil" bench "$work/$m" --threads "$th" --iters "$iters" --json | p50)")
            # shellcheck disable=SC2086
            o=$(least "$o" "$(node bench/models/ort_tbench.js "$onnx" "$th" "$iters" $ins || echo nan)")
            t=$(least "$t" "$(/usr/bin/python3 bench/models/torch_tbench.py "$m" "$th" "$iters" \
                2>/dev/null || echo nan)")
            [ -n "${PRECISION:-}" ] && h=$(least "$h" "$("$cuvil" bench "$work/$m.$PRECISION" \
                --threads "$th" --iters "$iters" --json | p50)")
        done
        /usr/bin/python3 -c 'import sys; c,o,t,h=map(float,sys.argv[2:6]); r=lambda a,b: "%.2f"%(a/b) if a==a and b==b else "-"
print("%-10s %7s %10.2f %10.2f %10.2f %9s %9s %10s %9s" % (sys.argv[1], sys.argv[6], c, o, t, r(c,o), r(c,t),
      "%.2f"%h if h==h else "-", r(h,o)))' "$m" "$c" "$o" "$t" "$h" "$th"
    done
    echo "  $m: cold compile -O2 $(( (t1 - t0) / 1000000 )) ms"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
