#!/usr/bin/env bash
# Runs each libFuzzer target for the given number of seconds, FUZZ_JOBS at a
# time (default: CPUs), seeded from the test corpora; fails if any target
# finds a crash.
#   scripts/fuzz.sh BUILD SECONDS BIN...    run each target
#   scripts/fuzz.sh --seeds BUILD NAME      print the target's seed directories
#   scripts/fuzz.sh --flags BUILD NAME      print the target's libFuzzer flags
# Inputs reach the sizes real files have (libFuzzer's default stops at
# 4 KiB): the text front ends up to their 4 MiB file limit, the rest 1 MiB;
# long-chain seeds (fuzz/gen-seeds.py) and dictionaries (fuzz/dict/) lead
# the mutations to the deep trees and long chains that overflow stacks.
set -uo pipefail

max_len() {  # bytes: the largest input the target's callers accept, a little over
    case "$1" in
        fuzz_dsl|fuzz_cuir|fuzz_onnx|fuzz_spec|fuzz_yamldoc) echo $((4 << 20)) ;;
        *) echo $((1 << 20)) ;;
    esac
}

fuzz_flags() {  # the libFuzzer flags of target $2
    local build=$1 name=$2
    echo "-max_len=$(max_len "$name")"
    [ -f "fuzz/dict/$name.dict" ] && echo "-dict=fuzz/dict/$name.dict"
}

seed_dirs() {  # the seed corpora of target $2 that exist
    local build=$1 name=$2 s
    local seeds=("fuzz/seeds/$name" "$build/fuzz/seeds-gen/$name")
    case "$name" in
        fuzz_cuir) seeds+=(examples/cuir tests/cuir/accept tests/cuir/reject) ;;
        fuzz_dsl) seeds+=(examples/models tests/dsl) ;;
        fuzz_spec) seeds+=(tests/specs) ;;
        fuzz_onnx) seeds+=("${ONNX_SEEDS:-$build/onnx-tests/node}") ;;   # made by make conformance
    esac
    for s in "${seeds[@]}"; do [ -d "$s" ] && echo "$s"; done
}

gen_seeds() {  # once per build directory, before any target reads them
    [ -d "$1/fuzz/seeds-gen" ] || /usr/bin/python3 fuzz/gen-seeds.py "$1/fuzz/seeds-gen"
}

if [ "${1:-}" = --seeds ]; then
    gen_seeds "$2"
    seed_dirs "$2" "$3"
    exit 0
fi
if [ "${1:-}" = --flags ]; then
    fuzz_flags "$2" "$3"
    exit 0
fi

build=$1; seconds=$2; shift 2
jobs=${FUZZ_JOBS:-$(nproc)}   # targets run at once: each is single-threaded
gen_seeds "$build"

# Runs one target; prints its outcome in one block; fails on a finding.
run_target() {
    local bin=$1 name corpus
    name=$(basename "$bin")
    corpus="$build/fuzz/corpus/$name"
    mkdir -p "$corpus" "$build/fuzz/crashes/$name"
    mapfile -t existing < <(seed_dirs "$build" "$name")
    mapfile -t flags < <(fuzz_flags "$build" "$name")
    if ! "$bin" -max_total_time="$seconds" "${flags[@]}" -timeout=10 -rss_limit_mb=2048 \
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
