#!/usr/bin/env bash
# bench/cache: the compilation cache against its peers.
#
#  (c) HTTP GETs of 100 KB blobs: `cuvil cache serve` vs nginx serving the
#      same bytes as static files, both on 127.0.0.1, driven by wrk rotating
#      over the same set of URLs.  Target: cuvil >= 0.8x nginx requests/s.
#
#  (a) and (b) (L2-hit compile time vs a ccache hit, cold/warm ratio) need
#      `cuvil compile`; they are added here once it exists.
#
# Env: BUILD (default build), BLOBS (200), SECONDS_PER_RUN (5), ROUNDS (3),
#      CONNECTIONS (32), THREADS (wrk threads, 2).
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
