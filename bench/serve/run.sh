#!/usr/bin/env bash
# bench/serve: cuvil serve under load (issue 32).  resnet18 (build/models,
# `make conformance` or a copy makes it) with 1, 8 and 32 concurrent clients,
# dynamic batching off (--no-batching) and on (max_batch_size 32), alternating
# rounds, best throughput of ROUNDS; then the server's overhead per request on
# a tiny model (relu on f32[N,4]): one client's p50 against `cuvil bench`'s
# p50 of a direct in-process call of the same artifact.  The load generator
# is loadgen.c (C, keep-alive, binary tensors).
# Env: BUILD (default build), SECS (per point, default 5), ROUNDS (default 1),
#      THREADS (runtime threads of the instance, default 2), DELAY_US (default 5000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
secs=${SECS:-5} rounds=${ROUNDS:-1} threads=${THREADS:-2} delay=${DELAY_US:-5000}
make -C "$root" --no-print-directory BUILD="$build" all >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-serve-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cc -O2 -o "$work/loadgen" "$here/loadgen.c" -lpthread
cuvil=$build/cuvil

mkdir -p "$work/repo/tiny" "$work/repo/resnet18"
printf 'cuir 1\nmodel @tiny(%%x: f32[N,4]) -> (f32[N,4]) {\n  %%0 = relu(%%x) : f32[N,4]\n  return %%0\n}\n' >"$work/tiny.cuir"
"$cuvil" compile "$work/tiny.cuir" -o "$work/repo/tiny/1" -q
printf 'max_batch_size: 32\nmax_queue_delay_us: 0\n' >"$work/repo/tiny/config.yaml"
have_resnet=0
if [ -f "$build/models/resnet18.onnx" ]; then
    "$cuvil" compile "$build/models/resnet18.onnx" -o "$work/repo/resnet18/1" -q
    printf 'max_batch_size: 32\nmax_queue_delay_us: %s\n' "$delay" >"$work/repo/resnet18/config.yaml"
    have_resnet=1
else
    rmdir "$work/repo/resnet18"
    echo "bench/serve: $build/models/resnet18.onnx missing: resnet18 rows skipped" >&2
fi

# Binary bodies: the JSON header, then the input's bytes (zeros).
body() { # name shape bytes out
    local h
    h=$(printf '{"inputs":[{"name":"%s","datatype":"FP32","shape":%s,"parameters":{"binary_data_size":%s}}],"parameters":{"binary_data_output":true}}' "$1" "$2" "$3")
    printf '%s' "$h" >"$4"
    head -c "$3" /dev/zero >>"$4"
    echo "${#h}"
}
tiny_hl=$(body x '[1,4]' 16 "$work/tiny.body")
[ $have_resnet = 1 ] && res_hl=$(body input '[1,3,224,224]' 602112 "$work/res.body")

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start() { # extra flags
    "$cuvil" serve --model-repository "$work/repo" --listen "127.0.0.1:$port" --threads "$threads" \
        --max-connections 512 "$@" 2>"$work/serve.log" &
    pid=$!
    for _ in $(seq 200); do
        curl -sf "127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$work/serve.log" >&2
    return 1
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

echo "bench/serve: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $secs s a point, runtime threads $threads"
if [ $have_resnet = 1 ]; then
    declare -A best
    for r in $(seq "$rounds"); do
        for mode in off on; do
            start $([ $mode = off ] && echo --no-batching)
            "$work/loadgen" "$port" /v2/models/resnet18/infer "$work/res.body" "$res_hl" 1 1 >/dev/null   # warm-up
            for c in 1 8 32; do
                line=$("$work/loadgen" "$port" /v2/models/resnet18/infer "$work/res.body" "$res_hl" "$c" "$secs")
                prev=${best[$mode.$c]:-}
                if [ -z "$prev" ] || awk "BEGIN{exit !($(field "$line" rps) > $(field "$prev" rps))}"; then
                    best[$mode.$c]=$line
                fi
            done
            stop
        done
    done
    printf '\nresnet18, binary tensors (best of %s rounds)\n' "$rounds"
    printf '%-8s %-8s %10s %10s %10s %10s %8s\n' batching clients req/s p50_ms p95_ms p99_ms errors
    for c in 1 8 32; do
        for mode in off on; do
            l=${best[$mode.$c]}
            printf '%-8s %-8s %10s %10s %10s %10s %8s\n' "$mode" "$c" "$(field "$l" rps)" \
                "$(field "$l" p50_ms)" "$(field "$l" p95_ms)" "$(field "$l" p99_ms)" "$(field "$l" errors)"
        done
    done
    on=${best[on.32]} off=${best[off.32]}
    echo "32 clients: batching on / off throughput $(awk "BEGIN{printf \"%.2f\", $(field "$on" rps)/$(field "$off" rps)}")x," \
         "p95 $(awk "BEGIN{printf \"%.2f\", $(field "$on" p95_ms)/$(field "$off" p95_ms)}")x"
fi

start --no-batching
"$work/loadgen" "$port" /v2/models/tiny/infer "$work/tiny.body" "$tiny_hl" 1 1 >/dev/null
served=$("$work/loadgen" "$port" /v2/models/tiny/infer "$work/tiny.body" "$tiny_hl" 1 "$secs")
stop
direct=$("$cuvil" bench "$work/repo/tiny/1" --iters 20000 --warmup 100 --json)
d50=$(/usr/bin/python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(j.get('p50_ms', j.get('latency_ms', {}).get('p50')))" "$direct")
s50=$(field "$served" p50_ms)
printf '\ntiny model, one client: served p50 %s ms, direct call p50 %s ms, server overhead %s us at p50\n' \
    "$s50" "$d50" "$(awk "BEGIN{printf \"%.1f\", ($s50 - $d50) * 1000}")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
