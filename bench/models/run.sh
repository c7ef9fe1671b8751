#!/usr/bin/env bash
# Cuvil native vs PyTorch eager (and ONNX Runtime 1.20.1 when its Node
# package is installed) on the torchvision resnet18 and mobilenet_v2 exports
# ($BUILD/models, made by `make test`), fp32, batch 1, at 1 and 2 threads:
# medians over ITERS runs after warm-up (the lowest of ROUNDS interleaved
# rounds), with the ratios, plus the cold -O2 compile time of each model
# (--no-cache: a cache hit is not a compile).  Target (issue 5): Cuvil/ORT
# <= 1.5 at 2 threads and faster than PyTorch.  The same model compiled with
# --no-blocked-layout (every convolution in the plain NCHW layout) runs in
# the same rounds: the "plain" columns show what the blocked layout gains.
set -euo pipefail
cd "$(dirname "$0")/../.."
# --precision: fp32 vs fp16 vs int8 (issue 14), bench/models/precision.sh.
[ "${1:-}" = --precision ] && exec bench/models/precision.sh
# --zoo: 26 torchvision models of every family vs ORT and PyTorch (issue 30),
# bench/models/zoo.py (its options follow --zoo); make bench-zoo.
[ "${1:-}" = --zoo ] && { shift; exec /usr/bin/python3 bench/models/zoo.py "$@"; }
build=${BUILD:-build}
cuvil="$build/cuvil"
iters=${ITERS:-20}
# Each engine is measured ROUNDS times, interleaved, and keeps its lowest
# median: on a shared machine a round that another job disturbed says
# nothing about the engine.
rounds=${ROUNDS:-3}
least() { /usr/bin/python3 -c 'import sys; v=[float(a) for a in sys.argv[1:] if a != "nan"]
print(min(v) if v else "nan")' "$@"; }
[ -x "$cuvil" ] || { echo "bench/models: $cuvil not built (make all)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ort=""
[ -f node_modules/onnxruntime-node/package.json ] && ort=yes
printf '%-14s %7s %10s %10s %10s %9s %9s %9s %9s\n' model threads cuvil_ms torch_ms ort_ms cuv/torch cuv/ort \
    plain_ms cuv/plain
for m in resnet18 mobilenet_v2; do
    onnx="$build/models/$m.onnx"
    [ -f "$onnx" ] || { echo "bench/models: $onnx missing (run make test first)"; exit 1; }
    t0=$(date +%s%N)
    "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m" --emit so --no-cache >/dev/null
    t1=$(date +%s%N)
    "$cuvil" compile "$onnx" -O2 -t native -o "$work/$m.plain" --emit so --no-cache \
        --no-blocked-layout >/dev/null
    compile_ms=$(( (t1 - t0) / 1000000 ))
    for th in 1 2; do
        c=inf t=inf o=inf p=inf
        for _ in $(seq "$rounds"); do
            c=$(least "$c" "$("$cuvil" bench "$work/$m" --threads "$th" --iters "$iters" --json |
                /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["p50_ms"])')")
            p=$(least "$p" "$("$cuvil" bench "$work/$m.plain" --threads "$th" --iters "$iters" --json |
                /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["p50_ms"])')")
            t=$(least "$t" "$(/usr/bin/python3 bench/models/torch_bench.py "$m" "$th" "$iters" 2>/dev/null || echo nan)")
            [ -n "$ort" ] && o=$(least "$o" "$(node bench/models/ort_bench.js "$onnx" "$th" "$iters" 2>/dev/null || echo nan)")
        done
        [ -n "$ort" ] || o=nan
        /usr/bin/python3 -c 'import sys; c,t,o,p=map(float,sys.argv[2:6]); r=lambda a,b: "%.2f"%(a/b) if b==b else "-"
print("%-14s %7s %10.2f %10.2f %10s %9s %9s %9.2f %9s" % (sys.argv[1], sys.argv[6], c, t, "%.2f"%o if o==o else "-", r(c,t), r(c,o), p, r(c,p)))' \
            "$m" "$c" "$t" "$o" "$p" "$th"
    done
    echo "  $m: cold compile -O2 ${compile_ms} ms"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$ort" ] || echo "(ONNX Runtime: npm install --ignore-scripts onnxruntime-node@1.20.1 to add it)"
