#!/usr/bin/env bash
# bench/models/run.sh --precision (issue 14): Cuvil fp32 vs fp16 vs bf16 vs int8 on
# the torchvision resnet18 and mobilenet_v2 exports ($BUILD/models, made by
# make test), batch 1, at 1 and 2 threads, next to ONNX Runtime 1.20.1 fp32
# (when its Node package is installed): medians over ITERS runs after
# warm-up, the lowest of ROUNDS interleaved rounds.  int8 is calibrated on
# 32 random inputs from a fixed seed (minmax).  Target: int8 >= 1.5x
# faster than Cuvil fp32 on an AVX-512 VNNI machine.  -t native: on a CPU
# with AVX512_BF16 the bf16 convolutions compute in bf16 (AMX when the
# kernel grants it), fp16 is f32 math on widened weights.  The load average
# is printed with the table: figures from a shared machine are noisy.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
iters=${ITERS:-20}
rounds=${ROUNDS:-3}
PY=/usr/bin/python3
[ -x "$cuvil" ] || { echo "bench/models: $cuvil not built (make all)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ort=""
[ -f node_modules/onnxruntime-node/package.json ] && ort=yes
"$PY" - "$work" <<'EOF'
import sys, numpy as np
r = np.random.default_rng(0)
for i in range(33):
    np.save(f"{sys.argv[1]}/cal{i:02d}.npy", r.standard_normal((1, 3, 224, 224)).astype(np.float32))
EOF
least() { "$PY" -c 'import sys; v=[float(a) for a in sys.argv[1:] if a != "nan"]
print(min(v) if v else "nan")' "$@"; }
p50() { "$cuvil" bench "$1" --threads "$2" --iters "$iters" --json |
        "$PY" -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["p50_ms"])'; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %7s %9s %9s %9s %9s %9s %10s %10s %10s %10s\n' model threads fp32_ms fp16_ms \
    bf16_ms int8_ms ort_ms fp32/fp16 fp32/bf16 fp32/int8 int8/ort
for m in resnet18 mobilenet_v2; do
    onnx="$build/models/$m.onnx"
    [ -f "$onnx" ] || { echo "bench/models: $onnx missing (run make test first)"; exit 1; }
    for p in fp32 fp16 bf16 int8; do
        extra=()
        [ "$p" = int8 ] && extra=(--calibration "$work/cal*.npy")
        CUVIL_CACHE=off "$cuvil" compile "$onnx" -O2 -t native -p "$p" "${extra[@]}" \
            -o "$work/$m-$p" --emit so >/dev/null
    done
    for th in 1 2; do
        a=inf b=inf h=inf c=inf o=inf
        for _ in $(seq "$rounds"); do
            a=$(least "$a" "$(p50 "$work/$m-fp32" "$th")")
            b=$(least "$b" "$(p50 "$work/$m-fp16" "$th")")
            h=$(least "$h" "$(p50 "$work/$m-bf16" "$th")")
            c=$(least "$c" "$(p50 "$work/$m-int8" "$th")")
            [ -n "$ort" ] && o=$(least "$o" "$(node bench/models/ort_bench.js "$onnx" "$th" "$iters" 2>/dev/null || echo nan)")
        done
        [ -n "$ort" ] || o=nan
        "$PY" -c 'import sys; a,b,h,c,o=map(float,sys.argv[2:7])
f=lambda v: "%.2f"%v if v==v else "-"
print("%-14s %7s %9.2f %9.2f %9.2f %9.2f %9s %10.2f %10.2f %10.2f %10s" % (sys.argv[1], sys.argv[7], a, b, h, c, f(o), a/b, a/h, a/c, f(c/o) if o==o else "-"))' \
            "$m" "$a" "$b" "$h" "$c" "$o" "$th"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$ort" ] || echo "(ONNX Runtime: npm install --ignore-scripts onnxruntime-node@1.20.1 to add it)"
