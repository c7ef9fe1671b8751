#!/usr/bin/env bash
# bench/farm: the embedded farm on a generated repository of MODELS (default
# 200) small CU-IR models x 2 targets: cold build with 1 and with 2 workers
# (speedup), a no-change rebuild (jobs/s through the planner) and the
# per-job scheduling overhead.  With --queue kafka, also the cold build and
# the rebuild through librdkafka's mock cluster, with Kafka/SQLite ratios.
# Env: BUILD (default build), MODELS, ROUNDS (alternating 1-/2-worker pairs, default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
mock=
if [[ ${1:-} == --queue && ${2:-} == kafka ]]; then mock="$build/tools/kafka-mock"; fi
make -C "$root" --no-print-directory BUILD="$build" all ${mock:+"$mock"} >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-farm-XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/farm_bench.py" "$build/cuvil" "$work" "${MODELS:-200}" ${mock:+"$mock"}
