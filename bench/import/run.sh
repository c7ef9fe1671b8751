#!/usr/bin/env bash
# Import + verify of torchvision resnet18.onnx (47 MB) and mobilenet_v2.onnx by
# `cuvil validate` (whole process, minus the binary's start-up measured in the
# same run) next to ONNX Runtime 1.20.1's session creation for the same file
# (in process, median).  Needs $BUILD/models from `make test` and
# `npm install --ignore-scripts --no-save onnxruntime-node@1.20.1` for ORT.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cuvil="$build/cuvil"
runs=${RUNS:-10}
[ -x "$cuvil" ] || { echo "bench/import: $cuvil not built (make all)"; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/import: needs hyperfine (apt-get install hyperfine)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mean_ms() {
    hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/h.json" "$*" >/dev/null 2>&1
    /usr/bin/python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["mean"]*1e3))' "$work/h.json"
}
start=$(mean_ms "$cuvil" --version)
printf '%-14s %12s %12s %8s\n' model cuvil_ms ort_ms cuv/ort
for m in resnet18 mobilenet_v2; do
    onnx="$build/models/$m.onnx"
    [ -f "$onnx" ] || { echo "bench/import: $onnx missing (run make test first)"; exit 1; }
    total=$(mean_ms "$cuvil" validate -q "$onnx")
    o=nan
    [ -f node_modules/onnxruntime-node/package.json ] &&
        o=$(node bench/import/ort_session.js "$onnx" "$runs" 2>/dev/null || echo nan)
    /usr/bin/python3 -c 'import sys; c=float(sys.argv[2])-float(sys.argv[3]); o=float(sys.argv[4])
print("%-14s %12.2f %12s %8s" % (sys.argv[1], c, "%.2f" % o if o == o else "-", "%.2f" % (c / o) if o == o else "-"))' \
        "$m" "$total" "$start" "$o"
done
echo "(cuvil: validate minus start-up ${start} ms; ORT: InferenceSession.create, optimisations on)"
