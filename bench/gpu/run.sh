#!/usr/bin/env bash
# Cuvil CUDA artifacts vs PyTorch eager on this machine's NVIDIA GPU, for
# GPU test bundles built elsewhere (make gpu-bundle GPU_TORCHVISION=...):
#
#   bench/gpu/run.sh BUNDLE_DIR... [--iters N]
#
# For each bundle: bench/gpu/torch_ref.py (PyTorch's batch-32 references
# and eager timings), then every case of the bundle (tests/gpu/run.sh:
# correctness against the interpreter or PyTorch, median times), then a
# table of the torchvision models: Cuvil's on-device time (run_stream, data
# already on the GPU, synchronised), PyTorch eager in the same precision
# (fp32 with TF32 off, the same arithmetic; for NAME_fp16, compiled with
# fp16 weights, PyTorch in half precision) and with cuDNN's default TF32,
# and the ratios (< 1: Cuvil faster).  Bundles are written to, so pass copies.  CUVIL_CUDA_NAIVE=1
# times the one-thread-per-output kernels instead of the tiled ones; dense
# convolutions run on the tensor cores in 3xTF32 (fp32's tolerances) unless
# CUVIL_CUDA_TC=0 (the fp32 FMA tiles) or CUVIL_CUDA_TC=tf32 (plain TF32, as
# PyTorch's default: outside the 1e-4 fp32 tolerance of resnet18/cuda_conv);
# batches of windows wider than 1 x 1 run channels-last unless
# CUVIL_CUDA_NHWC=0 (CUVIL_CUDA_NHWC=1: every tensor-core convolution);
# repeated runs on the same buffers replay as one CUDA graph unless CUVIL_CUDA_GRAPH=0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
iters=20
bundles=()
while [ $# -gt 0 ]; do
    case "$1" in
        --iters) iters=$2; shift 2 ;;
        *) bundles+=("$1"); shift ;;
    esac
done
[ ${#bundles[@]} -gt 0 ] || { echo "usage: bench/gpu/run.sh BUNDLE_DIR... [--iters N]" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for b in "${bundles[@]}"; do
    python3 "$here/torch_ref.py" "$b" --iters "$((iters * 2))" 2>&1 | tee -a "$log"
    bash "$here/../../tests/gpu/run.sh" "$b" --iters "$iters" 2>&1 | tee -a "$log" || status=1
done
python3 - "$log" <<'EOF'
import re, sys
torch, cuvil = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"torch (\S+) b(\d+) (\S+) ([\d.]+)", line)
    if m:
        torch[(m[1], int(m[2]), m[3])] = float(m[4])
    m = re.match(r"PASS (\S+?)(_b32)?\s+run\s+([\d.]+) ms, on-device\s+([\d.]+) ms", line)
    if m:
        cuvil[(m[1], 32 if m[2] else 1)] = (float(m[3]), float(m[4]))
# NAME_fp16 (fp16 weights) against PyTorch in half precision.
def peer(name):
    return (name[:-5], "fp16") if name.endswith("_fp16") else (name, "fp32")
rows = sorted(k for k in cuvil if (peer(k[0])[0], k[1], peer(k[0])[1]) in torch)
if rows:
    print("%-19s %5s %11s %11s %11s %11s %9s %9s" % ("model", "batch", "cuvil_run", "cuvil_dev",
          "torch_same", "torch_tf32", "dev/same", "dev/tf32"))
for name, batch in rows:
    run, dev = cuvil[(name, batch)]
    base, prec = peer(name)
    f, t = torch[(base, batch, prec)], torch.get((base, batch, "tf32"), float("nan"))
    print("%-19s %5d %9.3fms %9.3fms %9.3fms %9.3fms %9.2f %9.2f" % (name, batch, run, dev, f, t,
          dev / f, dev / t))
EOF
exit $status
