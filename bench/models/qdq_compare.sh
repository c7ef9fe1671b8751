#!/usr/bin/env bash
# Cuvil int8 next to ONNX Runtime's int8 on the same QDQ model (issue 14):
# Cuvil calibrates resnet18/mobilenet_v2 ($BUILD/models) on 8 random inputs
# (-p int8), bench/models/qdq_export.py writes the model in QDQ form with
# Cuvil's activation scales and per-channel int8 weights, then Cuvil
# (QDQ import: every quantized conv becomes its int8 kernel) and ONNX
# Runtime 1.20.1 run that model on 16 further random inputs.  Prints the
# SQNR of each against Cuvil fp32, of one against the other, and their
# top-1 agreement.  Needs node_modules/onnxruntime-node.
#
#   BUILD=build bench/models/qdq_compare.sh [MODEL...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
PY=/usr/bin/python3
[ -f node_modules/onnxruntime-node/package.json ] ||
    { echo "qdq_compare: needs npm install --ignore-scripts onnxruntime-node@1.20.1"; exit 0; }
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 mobilenet_v2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUVIL_CACHE=off
"$PY" - "$work" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
r = np.random.default_rng(0)
for i in range(9):
    np.save(f"{w}/cal{i}.npy", r.standard_normal((1, 3, 224, 224)).astype(np.float32))
x = np.random.default_rng(3).standard_normal((16, 3, 224, 224)).astype(np.float32)
np.save(f"{w}/x.npy", x)
x.tofile(f"{w}/x.f32")
EOF
for m in "${models[@]}"; do
    onnx="$build/models/$m.onnx"
    in=$("$PY" -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)' "$onnx")
    "$cuvil" compile "$onnx" -o "$work/$m-fp32" --emit so >/dev/null
    "$cuvil" compile "$onnx" -p int8 --calibration "$work/cal*.npy" -o "$work/$m-int8" \
        --emit so >"$work/$m.report"
    "$PY" bench/models/qdq_export.py "$onnx" "$work/$m.report" "$work/$m-qdq.onnx" >/dev/null
    "$cuvil" compile "$work/$m-qdq.onnx" -o "$work/$m-qdq" --emit so >/dev/null
    for v in fp32 qdq; do
        "$cuvil" run "$work/$m-$v" --threads 2 --input "$in=$work/x.npy" --output "$work/out-$m-$v" \
            >/dev/null
    done
    node bench/models/ort_run.js "$work/$m-qdq.onnx" "$work/x.f32" 16,3,224,224 \
        "$work/ort-$m.f32" 2 2>/dev/null
    "$PY" - "$work" "$m" <<'EOF'
import sys, glob, numpy as np
w, m = sys.argv[1:3]
f = np.load(glob.glob(f"{w}/out-{m}-fp32/*.npy")[0])
c = np.load(glob.glob(f"{w}/out-{m}-qdq/*.npy")[0])
o = np.fromfile(f"{w}/ort-{m}.f32", np.float32).reshape(f.shape)
s = lambda r, x: 10 * np.log10((r ** 2).sum() / ((r - x) ** 2).sum())
print(f"{m} (QDQ, 16 inputs): SQNR vs fp32: Cuvil {s(f, c):.1f} dB, ORT {s(f, o):.1f} dB; "
      f"Cuvil vs ORT {s(o, c):.1f} dB; top-1 Cuvil=ORT {100 * (c.argmax(1) == o.argmax(1)).mean():.0f}%, "
      f"Cuvil=fp32 {100 * (c.argmax(1) == f.argmax(1)).mean():.0f}%, ORT=fp32 {100 * (o.argmax(1) == f.argmax(1)).mean():.0f}%")
EOF
done
