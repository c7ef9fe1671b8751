#!/usr/bin/env bash
# bench/python: the Python API's per-call overhead over the artifact's C API,
# side by side in one run: a tiny model (classifier.onnx, Linear(4,3) +
# softmax, batch 1: target <= 5 us of overhead) and resnet18 (batch 1: the
# overhead should be within noise).  Both sides run the same lib<name>.so on
# one thread; Python makes a new numpy output per call (and, third column,
# writes into out=).  Models come from $BUILD/models (made by `make test`).
# Last, in the same run, ONNX Runtime's Python-free path on resnet18
# (onnxruntime-node 1.20.1 through bench/models/ort_bench.js, one thread,
# median) when node_modules/onnxruntime-node is installed:
#   npm install --ignore-scripts --no-save onnxruntime-node@1.20.1
# Env: BUILD (default build), ROUNDS (7), TINY_ITERS (200000), R18_ITERS (20).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
py=${PYTHON:-/usr/bin/python3}
[ -x "$build/cuvil" ] || { echo "bench/python: $build/cuvil missing (run make first)" >&2; exit 1; }
make -s -C "$root" BUILD="$build" python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/c_run" "$here/c_run.c" -ldl
PYTHONPATH=$build/python "$py" "$here/bench.py" "$build/cuvil" "$work/c_run" "$work" \
  "$build/models/tiny/classifier.onnx:1:${TINY_ITERS:-200000}" \
  "$build/models/resnet18.onnx:1:${R18_ITERS:-20}"
if [ -f "$root/node_modules/onnxruntime-node/package.json" ] && command -v node >/dev/null; then
    printf '%-28s %12s  (onnxruntime-node, 1 thread, median of %s)\n' "resnet18 (1) ORT" \
      "$(cd "$root" && node bench/models/ort_bench.js "$build/models/resnet18.onnx" 1 "${R18_ITERS:-20}") ms" \
      "${R18_ITERS:-20}"
else
    echo "(onnxruntime-node not installed: no ORT row)"
fi
