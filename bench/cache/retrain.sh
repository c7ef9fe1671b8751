#!/usr/bin/env bash
# bench/cache/retrain.sh: code and weights apart (issue 29), in one run.
#
# For resnet18, mobilenet_v2 (torchvision, random weights) and a BERT-base-
# sized encoder (bench/cache/export_bert.py: 12 layers, d=768, random
# weights), each exported twice with different seeds (the second is the
# same model retrained):
#
#   cold       `cuvil compile` of the first export, empty cache
#   no-change  the same again (an L2 hit into the same directory)
#   retrain    the second export in place of the first (l1, l2 miss; code hit)
#   cold'      the second export, empty cache: the artifact the retrain
#              must equal byte for byte (checked with cmp)
#
# Target: retrain <= 5% of cold.  One run per cell (a retrain needs new
# weights each time).  Each cell is wall ms and, in brackets, CPU ms (user +
# system, the linker included): on a shared machine the wall time is mostly
# waiting, and the CPU time is the fairer ratio.
#
# Env: BUILD (default build), WORK (exports kept between runs; default a
# temp dir), MODELS (default "resnet18 mobilenet_v2 bert").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
cuvil=$build/cuvil
[ -x "$cuvil" ] || { echo "bench/cache/retrain: $cuvil missing (run make first)" >&2; exit 1; }
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-retrain-XXXXXX")}
mkdir -p "$work/s0" "$work/s1"
unset CUVIL_REMOTE_CACHE

export_models() { # seed dir
    local s=$1 d=$2
    [ -f "$d/resnet18.onnx" ] && [ -f "$d/mobilenet_v2.onnx" ] ||
        CUVIL_EXPORT_SEED=$s /usr/bin/python3 "$root/tests/tools/export_torchvision.py" "$d" >/dev/null
    [ -f "$d/bert.onnx" ] || /usr/bin/python3 "$here/export_bert.py" "$d/bert.onnx" "$s" >/dev/null
}
export_models 0 "$work/s0"
export_models 1 "$work/s1"

# timed LABEL CACHE OUT MODEL: compiles; sets $t ("wall [cpu]" ms), $w (wall
# ms), $cpu (ms) and $line (the cache line).
timed() {
    CUVIL_CACHE_DIR=$2 /usr/bin/time -f '%e %U %S' -o "$work/time" \
        "$cuvil" compile "$4" -o "$3" -v >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    line=$(grep '^cache:' "$work/log" || true)
    read -r e u s <"$work/time"
    w=$(echo "$e * 1000 / 1" | bc)
    cpu=$(echo "($u + $s) * 1000 / 1" | bc)
    t="$w [$cpu]"
}

printf '%-13s %16s %16s %16s %14s %16s  %s\n' model cold_ms nochange_ms retrain_ms \
    "retrain%(cpu)" cold2_ms "retrain cache line; byte-identical to cold'"
for m in ${MODELS:-resnet18 mobilenet_v2 bert}; do
    d="$work/run-$m"
    rm -rf "$d"
    mkdir -p "$d/m"
    cp "$work/s0/$m.onnx" "$d/m/$m.onnx"
    timed cold "$d/cache" "$d/out" "$d/m/$m.onnx"; cold=$t; cold_w=$w; cold_cpu=$cpu
    timed same "$d/cache" "$d/out" "$d/m/$m.onnx"; same=$t
    cp "$work/s1/$m.onnx" "$d/m/$m.onnx"
    timed retrain "$d/cache" "$d/out" "$d/m/$m.onnx"; retrain=$t; rline=$line
    pct="$(echo "scale=1; 100 * $w / $cold_w" | bc)% ($(echo "scale=1; 100 * $cpu / $cold_cpu" | bc)%)"
    timed cold2 "$d/cache2" "$d/out2" "$d/m/$m.onnx"; cold2=$t
    same_bytes=yes
    for f in "$d/out2"/*; do cmp -s "$f" "$d/out/$(basename "$f")" || same_bytes="NO ($(basename "$f"))"; done
    printf '%-13s %16s %16s %16s %14s %16s  %s; %s\n' "$m" "$cold" "$same" "$retrain" "$pct" \
        "$cold2" "$rline" "$same_bytes"
    rm -rf "$d"
done
[ -n "${WORK:-}" ] || rm -rf "$work"
