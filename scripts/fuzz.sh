#!/usr/bin/env bash
# Runs each libFuzzer target for the given number of seconds, seeded from the
# test corpora; fails if any target finds a crash.
set -uo pipefail
build=$1; seconds=$2; shift 2
status=0
for bin in "$@"; do
    name=$(basename "$bin")
    corpus="$build/fuzz/corpus/$name"
    mkdir -p "$corpus" "$build/fuzz/crashes/$name"
    seeds=()
    [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
    case "$name" in
        fuzz_cuir) seeds+=(examples/cuir tests/cuir/accept tests/cuir/reject) ;;
        fuzz_dsl) seeds+=(examples/models tests/dsl) ;;
    esac
    existing=()
    for s in "${seeds[@]}"; do [ -d "$s" ] && existing+=("$s"); done
    echo "== $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$build/fuzz/crashes/$name/" -print_final_stats=1 \
            "$corpus" "${existing[@]}" >"$build/fuzz/$name.log" 2>&1; then
        echo "$name: FAILED (see $build/fuzz/$name.log and $build/fuzz/crashes/$name/)"
        tail -30 "$build/fuzz/$name.log"
        status=1
    else
        grep -E "stat::number_of_executed_units|Done " "$build/fuzz/$name.log" | tail -2
    fi
done
exit $status
