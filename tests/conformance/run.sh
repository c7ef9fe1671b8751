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
# (report: $BUILD/conformance-c99.json).
#
#   BUILD=build tests/conformance/run.sh [--backend interp|native|c99] [--filter SUBSTR] [-v]
#   make conformance CONFORMANCE_BACKEND=native|c99
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
for a in "$@"; do
    if [ "$prev" = --backend ] && { [ "$a" = native ] || [ "$a" = c99 ]; }; then
        REPORT="$BUILD/conformance-$a.json"
    fi
    prev=$a
done
make --no-print-directory BUILD="$BUILD" "$RUNNER" "$BUILD/lib/cuvil/libcv_llvm.so"
CUVIL_LLVM_PLUGIN="${CUVIL_LLVM_PLUGIN:-$(cd "$BUILD" && pwd)/lib/cuvil/libcv_llvm.so}"
export CUVIL_LLVM_PLUGIN
"$RUNNER" --json "$REPORT" "$@" "$TESTS/node"
echo "conformance: wrote $REPORT"
