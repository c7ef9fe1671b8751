#!/usr/bin/env bash
# make demo: the embedded farm on a real git repository made from
# examples/ (examples/models-repo/make-repo.sh), built at two commits: the
# second retrains one model (new weights) and changes only a comment of
# another, so only the first is compiled again, and that compile is a code
# hit (the cache's code level: its generated code is reused, its weights
# packed and its library spliced around them, no link).  Then a tour of the
# single-model commands: validate, run with the interpreter, compile
# through the cache, run natively.
#
# DEMO_BREAK=1 adds a third commit that breaks two models and shows how the
# farm reports them, then `cuvil failures` sorts them into patterns.
set -euo pipefail
build=${1:-build}
cuvil="$(cd "$build" && pwd)/cuvil"
demo="$build/demo"
rm -rf "$demo"
mkdir -p "$demo"
export CUVIL_CACHE_DIR="$demo/cache"

farm_up() {
    echo "== cuvil farm up $demo/models-repo --once --workers 2"
    "$cuvil" farm up "$demo/models-repo" --once --workers 2 --state "$demo/farm" "$@"
}

echo "== examples/models-repo/make-repo.sh: commit 1 (specs, 5 models, 2 ONNX exports)"
examples/models-repo/make-repo.sh "$demo/models-repo"
farm_up
echo "== commit 2: tinyconv.onnx retrained, a comment added to mlp.cvl.py"
examples/models-repo/make-repo.sh "$demo/models-repo" --commit 2
"$cuvil" cache stats --zero >/dev/null
farm_up
"$cuvil" status --state "$demo/farm" --json > "$demo/status2.json"
"$cuvil" cache stats --json > "$demo/stats2.json"
/usr/bin/python3 - "$demo/status2.json" "$demo/stats2.json" <<'PY'
import json, sys
code = json.load(open(sys.argv[2]))["code"]
code_hits = code["hits_local"] + code["hits_remote"]
print("   code level: %d hits, %d misses (the retrained model reused its generated code:"
      " only its weights were packed, the library spliced around them)" % (code_hits, code["misses"]))
assert code_hits >= 1 and code["misses"] == 0, code
rev = json.load(open(sys.argv[1]))["revision"]
jobs = rev["jobsList"]
compiled = sorted({j["model"] for j in jobs if j["state"] == "ok" and j["l2"] == "miss"})
worker_hits = sorted({j["model"] for j in jobs if j["state"] == "ok" and j["l2"] != "miss"})
print("   compiled again:", ", ".join(compiled))
print("   L2 hits in a worker (the front end ran, the IR was unchanged):", ", ".join(worker_hits))
print("   L2 hits at planning:", sum(1 for j in jobs if j["state"] == "hit"))
assert compiled == ["onnx/tinyconv.onnx"], compiled
PY
if [[ ${DEMO_BREAK:-0} == 1 ]]; then
    echo "== commit 3: two models broken"
    examples/models-repo/make-repo.sh "$demo/models-repo" --commit 3
    if farm_up; then echo "demo: the broken revision was accepted" >&2; exit 1; fi
    echo "== cuvil failures: the broken jobs by root cause"
    "$cuvil" failures --state "$demo/farm"
fi
echo "== cuvil artifacts get latest onnx/tinyconv.onnx x86_64-avx2"
"$cuvil" artifacts get latest onnx/tinyconv.onnx x86_64-avx2 -o "$demo/tinyconv" --state "$demo/farm"
ls "$demo/tinyconv"

echo "== cuvil validate examples/cuir/*.cuir"
"$cuvil" validate examples/cuir/*.cuir

echo "== generating inputs (numpy, fixed seed)"
/usr/bin/python3 - "$demo" <<'PY'
import sys, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)
np.save(out + "/mlp_x.npy", rng.normal(size=(3, 8)).astype(np.float32))
np.save(out + "/tinycnn_image.npy", rng.normal(size=(2, 1, 8, 8)).astype(np.float32))
np.save(out + "/residual_x.npy", rng.normal(size=(1, 3, 6, 6)).astype(np.float32))
PY

run() {
    local model=$1 input=$2 file=$3
    echo "== cuvil run examples/cuir/$model.cuir --interp"
    "$cuvil" run "examples/cuir/$model.cuir" --interp --input "$input=$demo/$file" --output "$demo/$model"
    /usr/bin/python3 -c "import numpy as np, glob; [print('  ', f, np.load(f).shape, np.round(np.load(f).ravel()[:6], 4)) for f in sorted(glob.glob('$demo/$model/*.npy'))]"
}
run mlp x mlp_x.npy
run tinycnn image tinycnn_image.npy
run residual x residual_x.npy

echo "== the model language: examples/models/*.cvl.py (weights generated into $demo/models)"
mkdir -p "$demo/models"
cp examples/models/*.cvl.py "$demo/models/"
/usr/bin/python3 examples/models/gen_weights.py "$demo/models"
"$cuvil" validate "$demo"/models/*.cvl.py
/usr/bin/python3 - "$demo" <<'PY'
import sys, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(8)
np.save(out + "/lenet_x.npy", rng.normal(size=(2, 1, 28, 28)).astype(np.float32))
PY
echo "== cuvil run lenet.cvl.py --interp"
"$cuvil" run "$demo/models/lenet.cvl.py" --interp --input "x=$demo/lenet_x.npy" --output "$demo/lenet"

echo "== cuvil compile lenet.cvl.py (native, -O2), twice: the second is a cache hit"
export CUVIL_CACHE_DIR="$demo/cache-single"
"$cuvil" compile "$demo/models/lenet.cvl.py" -o "$demo/lenet-native" -v --stats
"$cuvil" compile "$demo/models/lenet.cvl.py" -o "$demo/lenet-native2" -v
echo "== cuvil run lenet natively and compare with the interpreter"
"$cuvil" run "$demo/lenet-native" --input "x=$demo/lenet_x.npy" --output "$demo/lenet-run"
/usr/bin/python3 -c "import numpy as np, glob; a=np.load(glob.glob('$demo/lenet/*.npy')[0]); b=np.load(glob.glob('$demo/lenet-run/*.npy')[0]); d=float(abs(a-b).max()); print('   max abs difference native vs interpreter: %.2e' % d); assert d < 1e-4"

echo "== a broken model is refused with a located, coded diagnostic"
sed 's/f32\[N,4,4,4\]/f32[N,4,5,4]/' examples/cuir/tinycnn.cuir > "$demo/broken.cuir"
if "$cuvil" validate "$demo/broken.cuir"; then
    echo "demo: the broken model was accepted" >&2
    exit 1
fi
echo "demo: ok"
