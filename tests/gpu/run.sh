#!/usr/bin/env bash
# Runs a GPU test bundle (make gpu-bundle) on this machine's NVIDIA GPU:
# every case through cv_<name>_run and cv_<name>_run_stream against the
# reference interpreter, then its median run time.  Skips (exit 0) with a
# message where there is no NVIDIA driver.
#
#   tests/gpu/run.sh [BUNDLE_DIR] [gpu_runner options: --filter SUBSTR --iters N]
#   (a bundle carries a copy: BUNDLE_DIR/run.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=${1:-}
if [ -z "$bundle" ]; then
    if [ -x "$here/gpu_runner" ]; then bundle=$here; else bundle=${BUILD:-build}/gpu-bundle; fi
else
    shift
fi
if [ ! -x "$bundle/gpu_runner" ]; then
    echo "test-gpu: no bundle at $bundle (make gpu-bundle)" >&2
    exit 2
fi
# The driver: the loader's search path, else the usual install places.
if [ -z "${CUVIL_CUDA_DRIVER:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu \
             /usr/lib64 /usr/local/cuda/compat /usr/local/cuda/lib64/stubs/..; do
        if [ -e "$d/libcuda.so.1" ]; then export CUVIL_CUDA_DRIVER="$d/libcuda.so.1"; break; fi
    done
    if [ -z "${CUVIL_CUDA_DRIVER:-}" ]; then
        echo "test-gpu: skipped: no NVIDIA driver (libcuda.so.1) on this machine"
        exit 0
    fi
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
exec "$bundle/gpu_runner" "$bundle" "$@"
