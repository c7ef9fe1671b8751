#!/usr/bin/env bash
# Long fuzz runs on a shared machine: one target at a time, at the lowest
# priority, until each has used CPU_SECONDS of CPU (not wall) time, in
# chunks of at most CHUNK wall seconds so the corpus is saved between them.
#   fuzz/run-long.sh BUILD CPU_SECONDS TARGET...
# Logs and a summary (target, chunks, CPU seconds, executions, result) go to
# BUILD/fuzz-logs/; crashes to BUILD/fuzz/crashes/<target>/.
set -uo pipefail
build=$1; want=$2; shift 2
chunk=${CHUNK:-300}
logs="$build/fuzz-logs"
mkdir -p "$logs"
summary="$logs/summary.tsv"
[ -f "$summary" ] || printf 'target\tchunks\tcpu_s\texecs\tresult\n' >"$summary"

cpu_of() {  # utime+stime of a finished /usr/bin/time -f '%U %S' record (its last line)
    tail -n 1 "$1" | awk '{printf "%d", $1 + $2}'
}

for bin in "$@"; do
    name=$(basename "$bin")
    corpus="$build/fuzz/corpus/$name"
    crashes="$build/fuzz/crashes/$name"
    mkdir -p "$corpus" "$crashes"
    mapfile -t seeds < <(scripts/fuzz.sh --seeds "$build" "$name")
    mapfile -t flags < <(scripts/fuzz.sh --flags "$build" "$name")
    cpu=0; chunks=0; execs=0; result=ok
    while [ "$cpu" -lt "$want" ]; do
        chunks=$((chunks + 1))
        log="$logs/$name.$chunks.log"
        nice -n 19 /usr/bin/time -f '%U %S' -o "$logs/$name.time" \
            "$bin" -max_total_time="$chunk" "${flags[@]}" -timeout=20 -rss_limit_mb=2048 \
            -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "${seeds[@]}" \
            >"$log" 2>&1
        rc=$?
        cpu=$((cpu + $(cpu_of "$logs/$name.time")))
        echo "$name chunk $chunks: ${cpu}s CPU so far ($(cat /proc/loadavg | cut -d' ' -f1-3))" \
            >>"$logs/progress.log"
        n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' | tail -1)
        execs=$((execs + ${n:-0}))
        if [ $rc -ne 0 ]; then
            result="crash(rc=$rc, $log)"
            break
        fi
    done
    printf '%s\t%d\t%d\t%d\t%s\n' "$name" "$chunks" "$cpu" "$execs" "$result" >>"$summary"
    echo "$name: $chunks chunks, ${cpu}s CPU, $execs runs, $result"
done
