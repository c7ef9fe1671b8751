#!/usr/bin/env bash
# Creates the demo models repository: a real git repository with a cluster
# spec, two pipelines (one extending the other), the example model-language
# and CU-IR models with their weights, and two ONNX models exported from
# PyTorch.
#
#   examples/models-repo/make-repo.sh DIR            commit 1 (a fresh repository)
#   examples/models-repo/make-repo.sh DIR --commit 2 commit 2: one model really
#        changes (tinyconv.onnx re-exported with new weights) and one only gets
#        a comment edited (mlp.cvl.py): only the first is compiled again
#   examples/models-repo/make-repo.sh DIR --commit 3 commit 3: two models are
#        broken (a shape error in one, a bad call in another)
#
# Prints the new commit id.  Needs git and Debian's python3 with numpy and
# torch (make deps installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${1:?usage: make-repo.sh DIR [--commit 2|3]}
step=1
if [[ ${2:-} == --commit ]]; then step=${3:?--commit needs 2 or 3}; fi
py=/usr/bin/python3

git_in() { git -C "$dir" -c user.name="Cuvil Demo" -c user.email=demo@cuvil.dev "$@"; }

commit1() {
    rm -rf "$dir"
    mkdir -p "$dir/cuvil" "$dir/models" "$dir/onnx"
    git init -q -b main "$dir"
    cat > "$dir/cuvil/cluster.yaml" <<'YAML'
apiVersion: cuvil.dev/v1
kind: CuvilBuildCluster
metadata: {name: demo}
spec:
  source: {url: /srv/git/models.git, ref: main, interval: 30s}
  workers: {replicas: 2, jobTimeout: 300s}
  queue: {kind: embedded}
YAML
    cat > "$dir/cuvil/pipelines.yaml" <<'YAML'
# The base pipeline: every model-language and CU-IR model, for AVX2 machines.
apiVersion: cuvil.dev/v1
kind: CuvilPipeline
metadata: {name: edge}
spec:
  models: ["models/*.cvl.py", "models/*.cuir"]
  targets: [x86_64-avx2]
  precisions: [fp32]
  optLevel: O2
---
# The ONNX exports, for AVX2 and for any x86-64: lists replace the base's.
apiVersion: cuvil.dev/v1
kind: CuvilPipeline
metadata: {name: edge-onnx}
spec:
  extends: edge
  models: ["onnx/*.onnx"]
  targets: [x86_64-avx2, x86_64]
YAML
    cp "$root"/examples/models/{lenet,mlp,kws}.cvl.py "$dir/models/"
    cp "$root"/examples/cuir/{mlp,tinycnn}.cuir "$dir/models/"
    "$py" "$root/examples/models/gen_weights.py" "$dir/models" lenet mlp kws >/dev/null
    "$py" "$here/export_onnx.py" "$dir/onnx" >/dev/null 2>&1
    git_in add -A
    git_in commit -q -m "Models and pipelines for the edge devices"
}

commit2() {
    "$py" "$here/export_onnx.py" "$dir/onnx" --variant 1 >/dev/null 2>&1
    sed -i '1s/^/# Reviewed for the v2 release: no change to the network.\n/' "$dir/models/mlp.cvl.py"
    git_in commit -q -am "Retrain tinyconv; document mlp"
}

commit3() {
    sed -i 's/f32\[N,4,4,4\]/f32[N,4,5,4]/' "$dir/models/tinycnn.cuir"
    sed -i '0,/cvl\.relu(/s//cvl.relux(/' "$dir/models/lenet.cvl.py"
    git_in commit -q -am "Experiment: wider tinycnn, new activation in lenet"
}

case $step in
1) commit1 ;;
2) commit2 ;;
3) commit3 ;;
*) echo "make-repo.sh: --commit takes 2 or 3" >&2; exit 2 ;;
esac
git_in rev-parse HEAD
