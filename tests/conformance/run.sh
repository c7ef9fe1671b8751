#!/usr/bin/env bash
# ONNX backend node-test conformance (make conformance).
#
# Generates the ONNX project's node tests with Debian's python3-onnx into
# $BUILD/onnx-tests (once; generated data is never committed), builds the
# runner, imports and runs every test with the reference interpreter, prints
# the per-op table and writes $BUILD/conformance.json.  With --backend native
# every model is compiled natively instead (CUVIL_LLVM_PLUGIN points at the
# build's LLVM plugin) and the report is $BUILD/conformance-native.json;
# with --backend c99 every model is emitted as C99 (--emit c), built with
# gcc -std=c99 -pedantic -Wall -Wextra -Werror and loaded the same way
# (report: $BUILD/conformance-c99.json).  With --backend cuda every model is
# compiled for cuda-sm90 into a GPU bundle ($BUILD/conformance-cuda) that
# runs here on the GPU, else on a GPU machine (onnx_cuda.c says how).
#
#   BUILD=build tests/conformance/run.sh [--backend interp|native|c99|cuda] [--filter SUBSTR] [-v]
#   make conformance CONFORMANCE_BACKEND=native|c99|cuda
set -euo pipefail
BUILD=${BUILD:-build}
PY=/usr/bin/python3
TESTS="$BUILD/onnx-tests"
RUNNER="$BUILD/conformance/onnx_conformance"

if [ ! -f "$TESTS/.complete" ]; then
    echo "conformance: generating the ONNX node tests into $TESTS"
    rm -rf "$TESTS"
    mkdir -p "$TESTS"
    # numpy 1.24 removed the aliases onnx 1.12's generators still use.
    "$PY" -c "import numpy as np, sys; np.float = float; np.int = int; np.bool = bool; \
np.object = object; np.complex = complex; np.str = str; \
sys.argv = ['onnx-backend-test', 'generate-data', '-o', sys.argv[1]]; \
from onnx.backend.test import cmd_tools; cmd_tools.main()" "$TESTS" >/dev/null
    n=$(find "$TESTS/node" -mindepth 1 -maxdepth 1 -type d | wc -l)
    echo "conformance: $n node tests"
    touch "$TESTS/.complete"
fi

REPORT="$BUILD/conformance.json"
prev=
cuda=
for a in "$@"; do
    if [ "$prev" = --backend ] && { [ "$a" = native ] || [ "$a" = c99 ] || [ "$a" = cuda ]; }; then
        REPORT="$BUILD/conformance-$a.json"
        [ "$a" = cuda ] && cuda=1
    fi
    prev=$a
done
make --no-print-directory BUILD="$BUILD" "$RUNNER" "$BUILD/lib/cuvil/libcv_llvm.so"
CUVIL_LLVM_PLUGIN="${CUVIL_LLVM_PLUGIN:-$(cd "$BUILD" && pwd)/lib/cuvil/libcv_llvm.so}"
export CUVIL_LLVM_PLUGIN
if [ -n "$cuda" ]; then
    # --backend cuda (onnx_cuda.c): a GPU bundle, run here when there is a GPU.
    bundle="$BUILD/conformance-cuda"
    "$RUNNER" --bundle "$bundle" "$@" "$TESTS/node"
    make --no-print-directory BUILD="$BUILD" "$BUILD/tools/gpu_runner"
    cp "$BUILD/tools/gpu_runner" "$bundle/"
    tests/gpu/run.sh "$bundle" --iters 0 > "$bundle/gpu.log" || true
    if grep -q '^[0-9]* passed' "$bundle/gpu.log"; then
        "$RUNNER" --json "$REPORT" --bundle "$bundle" --gpu-log "$bundle/gpu.log" "$@" "$TESTS/node"
    else
        cat "$bundle/gpu.log"
        echo "conformance: no GPU here; copy $bundle to a GPU machine, run tests/gpu/run.sh on it" \
             "(--iters 0 > LOG), then $RUNNER --bundle $bundle --gpu-log LOG $* $TESTS/node"
        exit 0
    fi
else
    "$RUNNER" --json "$REPORT" "$@" "$TESTS/node"
fi
echo "conformance: wrote $REPORT"
