#!/usr/bin/env bash
# make demo: validates the example models and runs them with the reference
# interpreter on generated inputs.  (Issue 7 turns this into the farm demo.)
set -euo pipefail
build=${1:-build}
cuvil="$build/cuvil"
demo="$build/demo"
mkdir -p "$demo"

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
export CUVIL_CACHE_DIR="$demo/cache"
"$cuvil" compile "$demo/models/lenet.cvl.py" -o "$demo/lenet-native" -v --stats
"$cuvil" compile "$demo/models/lenet.cvl.py" -o "$demo/lenet-native2" -v
echo "== cuvil run lenet natively and compare with the interpreter"
"$cuvil" run "$demo/lenet-native" --input "x=$demo/lenet_x.npy" --output "$demo/lenet-run"
/usr/bin/python3 -c "import numpy as np; a=np.load('$demo/lenet/output0.npy'); b=np.load('$demo/lenet-run/output0.npy'); d=float(abs(a-b).max()); print('   max abs difference native vs interpreter: %.2e' % d); assert d < 1e-4"

echo "== a broken model is refused with a located, coded diagnostic"
sed 's/f32\[N,4,4,4\]/f32[N,4,5,4]/' examples/cuir/tinycnn.cuir > "$demo/broken.cuir"
if "$cuvil" validate "$demo/broken.cuir"; then
    echo "demo: the broken model was accepted" >&2
    exit 1
fi
echo "demo: ok"
