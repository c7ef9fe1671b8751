#!/usr/bin/env bash
# bench/cache: the compilation cache against its peers, in one run.
#
#  (a) whole-process time of `cuvil compile` on an L2 hit, lenet (DSL) and
#      resnet18 (ONNX, 47 MB), next to `ccache gcc -O2 -c` on a direct-mode
#      hit of a small C file.  Two cuvil figures: a hit into the directory
#      that already holds the artifact (the usual re-run: nothing is
#      written) and a hit into an empty directory (the artifact is copied
#      out of the store; ccache always writes its .o).  Target: lenet hit
#      <= 1.0x the ccache hit.
#  (b) resnet18: cold compile (empty cache: front end, LLVM, link, store)
#      against the warm one of (a).  Target: >= 100x.
#  (c) HTTP GETs of 100 KB blobs: `cuvil cache serve` vs nginx serving the
#      same bytes as static files, both on 127.0.0.1, driven by wrk rotating
#      over the same set of URLs.  Target: cuvil >= 0.8x nginx requests/s.
#
# Times are medians of RUNS runs (min in brackets), the commands of (a)
# interleaved round by round so that other load on the machine hits them
# alike.  resnet18.onnx comes from $BUILD/models (made by `make test`), else
# it is exported here with torchvision (random weights, no download).
#
# Env: BUILD (default build), RUNS (30), COLD_RUNS (3), BLOBS (200),
#      SECONDS_PER_RUN (5), ROUNDS (3), CONNECTIONS (32), THREADS (wrk
#      threads, 2), SKIP_HTTP=1 (only (a) and (b)).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
cuvil=$build/cuvil
blobs=${BLOBS:-200}
secs=${SECONDS_PER_RUN:-5}
rounds=${ROUNDS:-3}
conns=${CONNECTIONS:-32}
wthreads=${THREADS:-2}

[ -x "$cuvil" ] || { echo "bench/cache: $cuvil missing (run make first)" >&2; exit 1; }
need=()
command -v ccache >/dev/null || need+=(ccache)
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
    echo "bench/cache: installing ${need[*]}"
    if [ "$(id -u)" -ne 0 ]; then echo "bench/cache: run as root or install ${need[*]}" >&2; exit 1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bench-cache-XXXXXX")
chmod 755 "$work" # nginx workers run as an unprivileged user
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# ======================================================= (a) and (b): hits
runs=${RUNS:-30}
cold_runs=${COLD_RUNS:-3}
mkdir -p "$work/m" "$work/c"
cp "$root/examples/models/lenet.cvl.py" "$work/m/"
/usr/bin/python3 "$root/examples/models/gen_weights.py" "$work/m" lenet >/dev/null
if [ -f "$build/models/resnet18.onnx" ]; then
    cp "$build/models/resnet18.onnx" "$work/m/"
else
    echo "bench/cache: exporting resnet18 with torchvision"
    /usr/bin/python3 "$root/tests/tools/export_torchvision.py" "$work/x" >/dev/null
    cp "$work/x/resnet18.onnx" "$work/m/"
fi
printf 'int scale(int x) { return 3 * x + 1; }\n' >"$work/c/t.c"
export CUVIL_CACHE_DIR="$work/cuvil-cache" CCACHE_DIR="$work/ccache"
unset CUVIL_REMOTE_CACHE CCACHE_DISABLE CCACHE_NODIRECT CCACHE_REMOTE_STORAGE
cold_out=$(mktemp -d "$work/cold-XXXXXX")

# Interleaved timing: each round runs every command once; prints, per
# command, "median_ms min_ms".  A command's optional "prep:" part runs
# before each of its timed runs, untimed (emptying its output directory).
cat >"$work/timeit.py" <<'PY'
import shlex, statistics, subprocess, sys, time
runs = int(sys.argv[1]); cmds = sys.argv[2:]
ts = [[] for _ in cmds]
for r in range(runs + 2):                    # two warm-up rounds
    for i, c in enumerate(cmds):
        prep, cmd = c[5:].split("||", 1) if c.startswith("prep:") else ("", c)
        if prep:
            subprocess.run(prep, shell=True, check=True)
        t = time.perf_counter()
        p = subprocess.run(shlex.split(cmd), stdout=subprocess.DEVNULL)
        d = (time.perf_counter() - t) * 1e3
        if p.returncode:
            sys.exit("bench/cache: failed: " + cmd)
        if r >= 2:
            ts[i].append(d)
for t in ts:
    print("%.2f %.2f" % (statistics.median(t), min(t)))
PY
ms() { /usr/bin/python3 "$work/timeit.py" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

cd "$work/m"
ccgcc="ccache gcc -O2 -c $work/c/t.c -o $work/c/t.o"
ccache -z >/dev/null
$ccgcc && $ccgcc # a miss, then a hit
for m in lenet.cvl.py resnet18.onnx; do       # a cold compile, then hits
    "$cuvil" compile "$m" -o "out-${m%%.*}" >/dev/null
    "$cuvil" compile "$m" -o "out-${m%%.*}" -v 2>&1 | grep -q "l2 hit" ||
        { echo "bench/cache: no L2 hit for $m" >&2; exit 1; }
done
sleep 2.5 # the file-hash memo trusts a file only once it is older than 2 s
cu="$cuvil compile"
mapfile -t res < <(ms "$runs" \
    "$ccgcc" \
    "$cu lenet.cvl.py -o out-lenet" \
    "prep:rm -rf fresh-lenet||$cu lenet.cvl.py -o fresh-lenet" \
    "$cu resnet18.onnx -o out-resnet18" \
    "prep:rm -rf fresh-resnet18||$cu resnet18.onnx -o fresh-resnet18" \
    "$cuvil --version")
hits=$(ccache -s 2>/dev/null | awk '/Direct:/ { print $2; exit }')
read -r cc cc_min <<<"${res[0]}"
read -r le le_min <<<"${res[1]}"
read -r lef lef_min <<<"${res[2]}"
read -r rn rn_min <<<"${res[3]}"
read -r rnf rnf_min <<<"${res[4]}"
read -r ver ver_min <<<"${res[5]}"
echo "bench/cache (a): whole-process time of a hit, median of $runs interleaved runs [min]," \
     "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
row() { printf '  %-46s %8.2f ms [%6.2f]   %s\n' "$1" "$2" "$3" "$4"; }
row "ccache gcc -O2 -c t.c (direct-mode hit)" "$cc" "$cc_min" "(direct-mode hits: ${hits:-?})"
row "cuvil compile lenet, L2 hit, same dir" "$le" "$le_min" "$(ratio "$le" "$cc")x ccache"
row "cuvil compile lenet, L2 hit, empty dir" "$lef" "$lef_min" "$(ratio "$lef" "$cc")x ccache"
row "cuvil compile resnet18, L2 hit, same dir" "$rn" "$rn_min" "$(ratio "$rn" "$cc")x ccache"
row "cuvil compile resnet18, L2 hit, empty dir" "$rnf" "$rnf_min" "$(ratio "$rnf" "$cc")x ccache"
row "cuvil --version (process start-up alone)" "$ver" "$ver_min" "$(ratio "$ver" "$cc")x ccache"
awk -v r="$(ratio "$le" "$cc")" 'BEGIN { printf "  lenet hit / ccache hit: %sx (target <= 1.0x): %s\n", r,
    (r <= 1.0 ? "ok" : "ABOVE TARGET") }'

# (b): each cold run gets an empty cache and an empty output directory.
mapfile -t res < <(ms "$cold_runs" \
    "prep:rm -rf $work/cold-cache $cold_out||env CUVIL_CACHE_DIR=$work/cold-cache $cu resnet18.onnx -o $cold_out")
read -r cold cold_min <<<"${res[0]}"
echo "bench/cache (b): resnet18 cold compile (empty cache) vs L2 hit, median of $cold_runs cold runs"
row "cold compile (front end, LLVM, link, store)" "$cold" "$cold_min" ""
row "warm, same dir (from (a))" "$rn" "$rn_min" "cold/warm $(ratio "$cold" "$rn")x"
row "warm, empty dir (from (a))" "$rnf" "$rnf_min" "cold/warm $(ratio "$cold" "$rnf")x"
awk -v r="$(ratio "$cold" "$rn")" 'BEGIN { printf "  cold/warm: %sx (target >= 100x): %s\n", r,
    (r >= 100 ? "ok" : "BELOW TARGET") }'
cd "$root"
[ -n "${SKIP_HTTP:-}" ] && exit 0

# ============================================== (c): HTTP GETs of 100 KB blobs
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- the blobs: 100 KB of random bytes each, named by their SHA-256
mkdir -p "$work/files/cas" "$work/store"
for i in $(seq 1 "$blobs"); do
    head -c 102400 /dev/urandom >"$work/blob"
    h=$(sha256sum "$work/blob" | cut -d' ' -f1)
    mv "$work/blob" "$work/files/cas/$h"
done

# ---- cuvil cache serve (threads: one per CPU, its default)
"$cuvil" cache serve --listen 127.0.0.1:0 --dir "$work/store" 2>"$work/serve.log" &
cpid=$!
pids+=($cpid)
for _ in $(seq 100); do grep -q "listening on port" "$work/serve.log" && break; sleep 0.05; done
cport=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/serve.log")
[ -n "$cport" ] || { cat "$work/serve.log"; exit 1; }
for f in "$work"/files/cas/*; do
    curl -sf -X PUT --data-binary @"$f" -H 'Expect:' "http://127.0.0.1:$cport/cas/$(basename "$f")" >/dev/null
done

# ---- nginx over the same files
nport=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:$nport;
        root $work/files;
    }
}
EOF
/usr/sbin/nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -g 'daemon off;' &
npid=$!
pids+=($npid)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$nport/cas/$(basename "$f")" && break; sleep 0.05; done
curl -sf -o /dev/null "http://127.0.0.1:$nport/cas/$(basename "$f")" ||
    { echo "bench/cache: nginx does not serve the files" >&2; cat "$work/nginx/error.log" >&2; exit 1; }

# ---- same bytes from both
for f in $(ls "$work"/files/cas | head -3); do
    a=$(curl -sf "http://127.0.0.1:$cport/cas/$f" | sha256sum | cut -d' ' -f1)
    b=$(curl -sf "http://127.0.0.1:$nport/cas/$f" | sha256sum | cut -d' ' -f1)
    [ "$a" = "$f" ] && [ "$b" = "$f" ] || { echo "bench/cache: wrong bytes for $f" >&2; exit 1; }
done

ls "$work"/files/cas | sed 's|^|/cas/|' >"$work/paths"
cat >"$work/rotate.lua" <<EOF
local paths = {}
for line in io.lines("$work/paths") do paths[#paths + 1] = line end
local i = math.random(#paths)
request = function()
    i = i % #paths + 1
    return wrk.format("GET", paths[i])
end
EOF

# CPU ticks used by a server process, its threads and its children (the
# nginx workers): CPU per request is the figure other load disturbs least.
ticks() {
    local t=0 p f
    for p in "$1" $(pgrep -P "$1"); do
        for f in /proc/"$p"/task/*/stat; do
            t=$((t + $(awk '{print $14 + $15}' "$f" 2>/dev/null || echo 0)))
        done
    done
    echo "$t"
}

rps() { # url pid -> "requests/s cpu-us-per-request"
    local a b
    a=$(ticks "$2")
    wrk -t"$wthreads" -c"$conns" -d"${secs}s" -s "$work/rotate.lua" "$1" >"$work/wrk.out" 2>&1
    b=$(ticks "$2")
    if grep -q "Non-2xx" "$work/wrk.out"; then cat "$work/wrk.out" >&2; exit 1; fi
    awk -v a="$a" -v b="$b" -v hz="$(getconf CLK_TCK)" '
        /requests in/ { n = $1 } /^Requests\/sec:/ { r = $2 }
        END { printf "%s %.1f\n", r, (b - a) / hz * 1e6 / n }' "$work/wrk.out"
}

rps "http://127.0.0.1:$cport" "$cpid" >/dev/null  # warm-up both (page cache, connections)
rps "http://127.0.0.1:$nport" "$npid" >/dev/null
# Alternating rounds, best of each: other load on the machine hits both alike.
cs=() ns=() ccpu=() ncpu=()
for _ in $(seq "$rounds"); do
    read -r r u < <(rps "http://127.0.0.1:$cport" "$cpid"); cs+=("$r"); ccpu+=("$u")
    read -r r u < <(rps "http://127.0.0.1:$nport" "$npid"); ns+=("$r"); ncpu+=("$u")
done
best() { printf '%s\n' "$@" | sort -g | tail -1; }
least() { printf '%s\n' "$@" | sort -g | head -1; }
c=$(best "${cs[@]}")
n=$(best "${ns[@]}")
ratio=$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.2f", c / n }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.8 ? "ok" : "BELOW TARGET") }')
echo "bench/cache (c): GET of 100 KB blobs, $blobs blobs, wrk -t$wthreads -c$conns -d${secs}s," \
     "best of $rounds alternating rounds, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf '  %-24s %12s %14s   %s\n' "server" "requests/s" "CPU-us/req" "requests/s per round"
printf '  %-24s %12.0f %14s   %s\n' "cuvil cache serve" "$c" "$(least "${ccpu[@]}")" "${cs[*]}"
printf '  %-24s %12.0f %14s   %s\n' "nginx $(/usr/sbin/nginx -v 2>&1 | sed 's|.*/||')" "$n" \
    "$(least "${ncpu[@]}")" "${ns[*]}"
echo "  ratio cuvil/nginx: ${ratio}x (target >= 0.8x): $verdict"
