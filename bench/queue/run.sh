#!/usr/bin/env bash
# bench/queue: the job queue's two backends side by side.  JOBS jobs
# (default 2000) are enqueued by a controller handle, leased and completed
# by 1 or 2 worker processes, and their results read back and acked
# (queue_bench.c); enqueueing is also timed alone.  SQLite: one WAL file on
# local disk.  Kafka: librdkafka's mock cluster (3 brokers, 6 job partitions,
# in one local process) with the workers' fetch.wait.max.ms at cuvil's
# default (100 ms), at 10 ms and, once, at librdkafka's own default (500 ms).
# librdkafka keeps one fetch in flight per broker, so a partition resumed
# after a job can wait out another partition's long poll; the mock adds to
# that by answering an empty fetch only after the full wait even when data
# arrives meanwhile (a real broker answers at once).
#
# Prints jobs/s per phase, Kafka/SQLite ratios, and bytes per job message.
# Env: BUILD (default build), JOBS (2000), REPEAT (3: the best of 3 runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
jobs=${JOBS:-2000}
repeat=${REPEAT:-3}

make -C "$root" --no-print-directory BUILD="$build" "$build/lib/libcv_common.a" \
    "$build/tools/kafka-mock" >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-queue-XXXXXX")
mock_pid=
cleanup() {
    [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cc -std=c17 -D_GNU_SOURCE -O2 -I"$root" -o "$work/queue_bench" "$here/queue_bench.c" \
    "$build/lib/libcv_common.a" $(pkg-config --libs jansson yaml-0.1 sqlite3 rdkafka) \
    -lpthread -ldl -lm

prefixes=(k0 k1 k2 k3 k4)
"$build/tools/kafka-mock" --brokers 3 --partitions 6 "${prefixes[@]}" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
for _ in $(seq 200); do [ -s "$work/mock.out" ] && break; sleep 0.05; done
bootstrap=$(head -1 "$work/mock.out")
[ -n "$bootstrap" ] || { echo "bench/queue: kafka-mock did not start" >&2; cat "$work/mock.err" >&2; exit 1; }

# run LABEL URL WORKERS -> sets ENQ (jobs/s), E2E (jobs/s), BYTES, RBYTES: the
# best of REPEAT runs, since other processes on the machine only slow a run down.
run() {
    local out best_enq= best_total= r url
    for r in $(seq "$repeat"); do
        url=${2//@RUN@/$r}
        out=$(CUVIL_LOG=error "$work/queue_bench" "$url" "$jobs" "$3")
        read -r enq_ms total_ms BYTES RBYTES <<<"$out"
        best_enq=$(awk -v a="${best_enq:-$enq_ms}" -v b="$enq_ms" 'BEGIN { print (a < b ? a : b) }')
        best_total=$(awk -v a="${best_total:-$total_ms}" -v b="$total_ms" 'BEGIN { print (a < b ? a : b) }')
    done
    ENQ=$(awk -v n="$jobs" -v t="$best_enq" 'BEGIN { printf "%.0f", n * 1000 / t }')
    E2E=$(awk -v n="$jobs" -v t="$best_total" 'BEGIN { printf "%.0f", n * 1000 / t }')
    printf '%-34s %7s %12s %16s\n' "$1" "$3" "$ENQ" "$E2E"
}

echo "bench/queue: $jobs jobs; enqueue alone, then enqueue + lease + complete by N worker" \
     "processes + read results (best of $repeat)"
printf '%-34s %7s %12s %16s\n' backend workers "enqueue/s" "end-to-end/s"
declare -A e2e enq
run "sqlite (WAL, local disk)" "sqlite:$work/e-@RUN@.db" 0
enq[sqlite]=$ENQ
run "kafka mock" "kafka://$bootstrap?topic_prefix=${prefixes[0]}" 0
enq[kafka]=$ENQ
for w in 1 2; do
    run "sqlite (WAL, local disk)" "sqlite:$work/q$w-@RUN@.db" "$w"
    e2e[sqlite$w]=$E2E
done
for w in 1 2; do
    run "kafka mock (fetch.wait.max.ms=100)" "kafka://$bootstrap?topic_prefix=${prefixes[$w]}" "$w"
    e2e[kafka$w]=$E2E
done
run "kafka mock, fetch.wait.max.ms=10" "kafka://$bootstrap?topic_prefix=${prefixes[3]}&fetch.wait.max.ms=10" 2
e2e[kafka10]=$E2E
# librdkafka's own default fetch wait, once and with fewer jobs: it is slow.
full=$jobs; jobs=$((full / 4)); repeat_all=$repeat; repeat=1
run "kafka mock, fetch.wait.max.ms=500" "kafka://$bootstrap?topic_prefix=${prefixes[4]}&fetch.wait.max.ms=500" 2
e2e[kafka500]=$E2E; jobs=$full; repeat=$repeat_all
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "ratios Kafka/SQLite: enqueue $(ratio "${enq[kafka]}" "${enq[sqlite]}")x," \
     "end-to-end with 2 workers $(ratio "${e2e[kafka2]}" "${e2e[sqlite2]}")x" \
     "(fetch.wait.max.ms=10: $(ratio "${e2e[kafka10]}" "${e2e[sqlite2]}")x," \
     "500: $(ratio "${e2e[kafka500]}" "${e2e[sqlite2]}")x)"
echo "worker scaling 1->2: sqlite $(ratio "${e2e[sqlite2]}" "${e2e[sqlite1]}")x," \
     "kafka $(ratio "${e2e[kafka2]}" "${e2e[kafka1]}")x"
# A job record on the wire: JSON body + 64-byte key + headers (job id,
# attempt, enqueue time: ~40 bytes of names plus values) + ~70 bytes of
# record and batch framing (linger.ms=0 sends one record per batch).
echo "bytes per job message: JSON body $BYTES, with key, headers and framing ~$((BYTES + 64 + 40 + 90 + 70));" \
     "result message body $RBYTES"
