#!/usr/bin/env bash
# Runs on the benchmark machine, from the repository root, after pack.sh
# here (bench/device/README.md):
#   bench/device/run.sh [devbench.py options]   (results also in $OUT)
set -euo pipefail
root=$(pwd)
stage=/tmp/devbench
if [ ! -x $stage/cuvil ] || [ "$root/.devbench/payload.tar.xz" -nt $stage/cuvil ]; then
    rm -rf $stage && mkdir -p $stage
    xz -dc "$root/.devbench/payload.tar.xz" | tar -C $stage -xf -
    touch $stage/cuvil
fi
export CUVIL_LIBS=$stage/deps
models=$(cd "$root/.devbench/models" && ls *.json | sed 's/\.json$//' | sort)
work=/tmp/devbench-models
mkdir -p $work
cp -n "$root"/.devbench/models/* $work/ 2>/dev/null || true
# shellcheck disable=SC2086
python3 "$root/bench/device/rebuild.py" $work $(for m in $models; do
    [ -f $work/$m.full.onnx ] || echo "$m"; done)
python3 "$root/bench/device/devbench.py" $work --cuvil $stage/cuvil \
    --json "${OUT:-/tmp}/devbench.json" "$@"
