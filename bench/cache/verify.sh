#!/usr/bin/env bash
# bench/cache/verify.sh: the cost of checking a `cuvil cache serve` entry on
# every GET (sendfile alone vs XXH3 + sendfile vs SHA-256 + sendfile), per
# entry size, files in the page cache (verify_bench.c says how).
#
# Env: MAX_MIB (largest entry, default 256), DIR (where the files go, default $TMPDIR)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-verify-XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -std=c17 -O2 -o "$work/verify_bench" "$here/verify_bench.c" \
    $(pkg-config --cflags --libs libxxhash openssl) -lpthread -Wno-deprecated-declarations
echo "bench/cache/verify: one GET of an entry in the page cache, best of 5 interleaved rounds," \
     "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
"$work/verify_bench" "${DIR:-$work}" "${MAX_MIB:-256}"
