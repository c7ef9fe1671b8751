#!/usr/bin/env bash
# Reduced-precision accuracy on the torchvision exports (make conformance;
# issue 14): resnet18 and mobilenet_v2 with random weights ($BUILD/models,
# made by make test), compiled natively in fp32, int8 (calibrated on 32
# random inputs from a fixed seed, one more held out for the compile's SQNR
# report) and fp16, then run on 200 further random inputs:
#   int8 top-1 agrees with fp32 on >= 98%, output SQNR >= 20 dB;
#   fp16 and bf16 max abs error <= 1e-2 of the fp32 output range (bf16
#   computes in bf16 where the CPU has AVX512_BF16: AMX or vdpbf16ps).
# Too slow for make test (the calibration runs the reference interpreter:
# about a minute for resnet18); tests/unit/compiler-core/passes/test_quant.c checks a small CNN.
#
#   BUILD=build tests/conformance/quant_models.sh [MODEL...] [--method M]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PY=/usr/bin/python3
cuvil="$BUILD/cuvil"
method=minmax
models=()
while [ $# -gt 0 ]; do
    case "$1" in
        --method) method=$2; shift 2 ;;
        *) models+=("$1"); shift ;;
    esac
done
[ ${#models[@]} -gt 0 ] || models=(resnet18 mobilenet_v2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUVIL_CACHE=off

# 33 calibration images (seed 0) and 4 batches of 50 held-out ones (seed 1).
"$PY" - "$work" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
r = np.random.default_rng(0)
for i in range(33):
    np.save(f"{w}/cal{i:02d}.npy", r.standard_normal((1, 3, 224, 224)).astype(np.float32))
r = np.random.default_rng(1)
for b in range(4):
    np.save(f"{w}/eval{b}.npy", r.standard_normal((50, 3, 224, 224)).astype(np.float32))
EOF

fail=0
for m in "${models[@]}"; do
    onnx="$BUILD/models/$m.onnx"
    [ -f "$onnx" ] || { echo "quant_models: $onnx missing (run make test first)"; exit 1; }
    for p in fp32 int8 fp16 bf16; do
        extra=()
        [ "$p" = int8 ] && extra=(--calibration "$work/cal*.npy" --calibration-method "$method")
        t0=$(date +%s)
        "$cuvil" compile "$onnx" -p "$p" "${extra[@]}" -o "$work/$m-$p" --emit so \
            >"$work/$m-$p.report"
        echo "$m $p: compiled in $(( $(date +%s) - t0 )) s"
        # (sed alone: head closing the pipe early would fail the script under pipefail)
        [ "$p" = fp32 ] || sed -n '1,4s/^/    /p' "$work/$m-$p.report"
        for b in 0 1 2 3; do
            name=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["inputs"][0]["name"])' \
                   "$work/$m-$p/manifest.json")
            "$cuvil" run "$work/$m-$p" --threads 2 --input "$name=$work/eval$b.npy" \
                --output "$work/out-$m-$p-$b" >/dev/null
        done
    done
    "$PY" - "$work" "$m" <<'EOF' || fail=1
import sys, glob, numpy as np
w, m = sys.argv[1], sys.argv[2]
def load(p):
    return np.concatenate([np.load(glob.glob(f"{w}/out-{m}-{p}-{b}/*.npy")[0]) for b in range(4)])
f32, i8, f16, b16 = load("fp32"), load("int8"), load("fp16"), load("bf16")
agree = (f32.argmax(1) == i8.argmax(1)).mean() * 100
sqnr = 10 * np.log10((f32 ** 2).sum() / ((f32 - i8) ** 2).sum())
rel = np.abs(f32 - f16).max() / (f32.max() - f32.min())
relb = np.abs(f32 - b16).max() / (f32.max() - f32.min())
ok = agree >= 98 and sqnr >= 20 and rel <= 1e-2 and relb <= 1e-2
print(f"{m}: int8 top-1 agreement {agree:.1f}% (>= 98), SQNR {sqnr:.1f} dB (>= 20); "
      f"fp16 max abs err {rel:.2e}, bf16 {relb:.2e} of the output range (<= 1e-2): "
      f"{'ok' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
EOF
done
exit $fail
