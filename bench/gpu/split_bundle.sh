#!/usr/bin/env bash
# Splits a full GPU test bundle (make gpu-bundle GPU_TORCHVISION=mobilenet_v2,resnet18
# GPU_FP16=1, about 117 MB) into three self-contained parts of at most ~56 MB, for a
# device tool that carries at most 64 MiB a call:
#
#   bench/gpu/split_bundle.sh BUNDLE_DIR OUT_PREFIX     -> OUT_PREFIX1 .. OUT_PREFIX3
#
# Each part has torch_cases.txt (the cases bench/gpu/torch_ref.py needs to write the
# batch-32 references: a model's batch-1 case, without its library, checks the weights)
# and run_cases.txt (the cases gpu_runner runs).  On the GPU machine, in a part:
#   cp torch_cases.txt cases.txt && python3 ../../bench/gpu/torch_ref.py . &&
#   cp run_cases.txt cases.txt && ./gpu_runner . --iters 20
# Part 1: resnet18 fp32 and mobilenet_v2 fp16; part 2: resnet18 fp16 and mobilenet_v2
# fp32; part 3: every core case (no PyTorch needed).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/gpu/split_bundle.sh BUNDLE_DIR OUT_PREFIX" >&2; exit 2; }
b=$1 o=$2
for m in resnet18 resnet18_b32 resnet18_fp16 resnet18_fp16_b32 mobilenet_v2 mobilenet_v2_b32 \
         mobilenet_v2_fp16 mobilenet_v2_fp16_b32; do
    [ -d "$b/$m" ] || { echo "split_bundle: $b has no case $m" >&2; exit 2; }
done
rm -rf "${o}1" "${o}2" "${o}3"
mkdir -p "${o}1" "${o}2" "${o}3"
for p in 1 2 3; do cp "$b/gpu_runner" "$b/run.sh" "${o}$p/"; done
# A model's batch-1 case without its library: torch_ref.py's weight check only.
strip_copy() { mkdir -p "$2/$(basename "$1")"; cp "$1"/case.txt "$1"/*.bin "$2/$(basename "$1")/"; }
cases() { printf '%s\n' "$@"; }
# Part p: model f in fp32, model h in fp16 (h's fp32 batch-32 case carries the input both
# precisions of h use).
part() { # p f h
    local d=${o}$1 f=$2 h=$3
    cp -r "$b/$f" "$b/${f}_b32" "$b/${h}_fp16" "$b/${h}_fp16_b32" "$b/${h}_b32" "$d/"
    strip_copy "$b/$h" "$d"
    cases "$f" "${f}_b32" "$h" "${h}_b32" "${h}_fp16" "${h}_fp16_b32" > "$d/torch_cases.txt"
    cases "$f" "${f}_b32" "${h}_fp16" "${h}_fp16_b32" > "$d/run_cases.txt"
}
part 1 resnet18 mobilenet_v2
part 2 mobilenet_v2 resnet18
grep -v -E '^(resnet18|mobilenet_v2)' "$b/cases.txt" > "${o}3/run_cases.txt" || true
while read -r c; do cp -r "$b/$c" "${o}3/"; done < "${o}3/run_cases.txt"
cp "${o}3/run_cases.txt" "${o}3/torch_cases.txt"
cp "${o}3/run_cases.txt" "${o}3/cases.txt"
du -sh "${o}1" "${o}2" "${o}3"
