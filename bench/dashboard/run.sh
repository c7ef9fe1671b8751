#!/usr/bin/env bash
# bench/dashboard: the farm's pages with 1,000 revisions and 100 models in the
# build DB against the same pages on a one-revision DB (render_bench.py).
# Env: BUILD (default build), REVISIONS (1000), MODELS (100), ROUNDS (5).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-dashboard-XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/render_bench.py" "$build/cuvil" "$work/w" "${REVISIONS:-1000}" \
    "${MODELS:-100}" "${ROUNDS:-5}"
