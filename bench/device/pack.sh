#!/usr/bin/env bash
# Packs what the benchmark machine needs (bench/device/README.md) into
# .devbench/ at the repository root: the cuvil program and its LLVM plugin
# with the plugin's shared libraries (the machine runs another distribution:
# its glibc is newer, so a program built here runs there, but it has no
# LLVM 19), and the models as skeletons (skeleton.py).  The run tool carries
# at most 64 MiB a call; this stays near 50.
#   bench/device/pack.sh BUILD_DIR NAME=MODEL.onnx[:IN.npy,...] ...
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
shift
out=$root/.devbench
rm -rf "$out" && mkdir -p "$out/stage/lib/cuvil" "$out/stage/deps" "$out/models"
strip -o "$out/stage/cuvil" "$build/cuvil"
cp "$build/lib/cuvil/libcv_llvm.so" "$out/stage/lib/cuvil/"
# What the plugin needs beyond the C and C++ runtimes, which the machine has.
ldd "$build/lib/cuvil/libcv_llvm.so" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s)\.so' | xargs -I{} cp -L {} "$out/stage/deps/"
tar -C "$out/stage" -cf - . | xz -T2 -6 >"$out/payload.tar.xz"
rm -rf "$out/stage"
/usr/bin/python3 "$root/bench/device/skeleton.py" "$out/models" "$@"
du -sh "$out"
