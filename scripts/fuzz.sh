#!/usr/bin/env bash
# Runs each libFuzzer target for the given number of seconds, FUZZ_JOBS at a
# time (default: CPUs), seeded from the test corpora; fails if any target
# finds a crash.
#   scripts/fuzz.sh BUILD SECONDS BIN...    run each target
#   scripts/fuzz.sh --seeds BUILD NAME      print the target's seed directories
set -uo pipefail

seed_dirs() {  # the seed corpora of target $2 that exist
    local build=$1 name=$2 s
    local seeds=("fuzz/seeds/$name")
    case "$name" in
        fuzz_cuir) seeds+=(examples/cuir tests/cuir/accept tests/cuir/reject) ;;
        fuzz_dsl) seeds+=(examples/models tests/dsl) ;;
        fuzz_spec) seeds+=(tests/specs) ;;
        fuzz_onnx) seeds+=("${ONNX_SEEDS:-$build/onnx-tests/node}") ;;   # made by make conformance
    esac
    for s in "${seeds[@]}"; do [ -d "$s" ] && echo "$s"; done
}

if [ "${1:-}" = --seeds ]; then
    seed_dirs "$2" "$3"
    exit 0
fi

build=$1; seconds=$2; shift 2
jobs=${FUZZ_JOBS:-$(nproc)}   # targets run at once: each is single-threaded

# Runs one target; prints its outcome in one block; fails on a finding.
run_target() {
    local bin=$1 name corpus
    name=$(basename "$bin")
    corpus="$build/fuzz/corpus/$name"
    mkdir -p "$corpus" "$build/fuzz/crashes/$name"
    mapfile -t existing < <(seed_dirs "$build" "$name")
    if ! "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$build/fuzz/crashes/$name/" -print_final_stats=1 \
            "$corpus" "${existing[@]}" >"$build/fuzz/$name.log" 2>&1; then
        { echo "== $name: FAILED (see $build/fuzz/$name.log and $build/fuzz/crashes/$name/)"
          tail -30 "$build/fuzz/$name.log"; }
        return 1
    fi
    echo "== $name for ${seconds}s: $(grep -E "stat::number_of_executed_units" \
        "$build/fuzz/$name.log" | tail -1)"
}

for bin in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    name=$(basename "$bin")
    rm -f "$build/fuzz/$name.status"
    { run_target "$bin"; echo $? >"$build/fuzz/$name.status"; } &
done
wait
status=0
for bin in "$@"; do
    [ "$(cat "$build/fuzz/$(basename "$bin").status" 2>/dev/null)" = 0 ] || status=1
done
exit $status
