#!/usr/bin/env bash
# The dashboard over the demo farm: the repository of `make demo`
# (examples/models-repo/make-repo.sh) built at three commits with
# `cuvil farm up --once` (real workers and compiles; the third commit breaks
# two models), then `cuvil controller --http 127.0.0.1:0` serves the state
# while headless Chromium loads the overview, the second revision's page
# and the failures page.  Their DOM must show the figures the JSON API
# reports, and the screenshots are saved as $CUVIL_BUILD/dashboard-*.png
# for review.  The ONNX exports and compiles take minutes, so this runs
# under `make integration` (tests/unit/controller/test_controller_http_browser.c covers the pages
# in `make test` over a farm with a stand-in worker).
#
# Env: CUVIL_BIN (default build/cuvil), CUVIL_BUILD (default build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cuvil=${CUVIL_BIN:-$root/build/cuvil}
out=${CUVIL_BUILD:-$root/build}
py=/usr/bin/python3
[ -x "$cuvil" ] || { echo "dashboard: $cuvil missing (make all)" >&2; exit 1; }
if ! command -v chromium >/dev/null; then
    [ "$(id -u)" -eq 0 ] || { echo "dashboard: needs Debian's chromium" >&2; exit 1; }
    echo "dashboard: installing chromium"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-dashboard-XXXXXX")
ctl=
cleanup() {
    if [ -n "$ctl" ]; then kill "$ctl" 2>/dev/null || true; wait "$ctl" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "dashboard: FAILED: $*" >&2
    exit 1
}
export CUVIL_CACHE_DIR="$work/cache"

build() {
    "$cuvil" farm up "$work/repo" --once --workers 2 --state "$work/farm" >"$work/farm.log" 2>&1
}
echo "== demo repository, commit 1"
"$root/examples/models-repo/make-repo.sh" "$work/repo" >/dev/null
build || fail "commit 1 did not build: $(tail -20 "$work/farm.log")"
echo "== commit 2"
"$root/examples/models-repo/make-repo.sh" "$work/repo" --commit 2 >/dev/null
build || fail "commit 2 did not build: $(tail -20 "$work/farm.log")"
rev2=$(git -C "$work/repo" rev-parse HEAD)
echo "== commit 3 (two models broken)"
"$root/examples/models-repo/make-repo.sh" "$work/repo" --commit 3 >/dev/null
if build; then fail "the broken commit built"; fi

echo "== cuvil controller --http 127.0.0.1:0"
"$cuvil" controller "$work/repo" --state "$work/farm" --interval 1h --http 127.0.0.1:0 \
    2>"$work/controller.err" &
ctl=$!
port=
for _ in $(seq 1 100); do
    port=$(sed -n 's|.*dashboard, API and metrics on http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
        "$work/controller.err")
    [ -n "$port" ] && break
    sleep 0.2
done
[ -n "$port" ] || fail "the controller did not serve: $(cat "$work/controller.err")"
base=http://127.0.0.1:$port

# The figures the pages must show, from the JSON API.
curl -sf "$base/api/v1/revisions/latest" >"$work/latest.json"
curl -sf "$base/api/v1/revisions/$rev2" >"$work/rev2.json"
curl -sf "$base/api/v1/failures" >"$work/failures.json"
read -r jobs failed < <($py -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(r["jobs"], r["failed"])' "$work/latest.json")
read -r jobs2 hits2 < <($py -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(r["jobs"], r["hits"])' "$work/rev2.json")
read -r broken patterns < <($py -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(r["broken"], r["patternCount"])' "$work/failures.json")
[ "$failed" -ge 2 ] || fail "the broken revision has $failed failed jobs"

pids=()
i=0
for page in overview:/ revision:/revisions/$rev2 failures:/failures; do
    name=${page%%:*}
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1600 \
        --user-data-dir="$work/profile-$i" --no-first-run --dump-dom \
        --screenshot="$out/dashboard-$name.png" "$base${page#*:}" \
        >"$work/$name.html" 2>"$work/chromium-$name.err" &
    pids+=($!)
    i=$((i + 1))
done
for p in "${pids[@]}"; do wait "$p" || fail "chromium failed"; done

has() {
    grep -qF -- "$2" "$work/$1.html" || fail "the $1 page has no '$2'"
}
has overview "id=\"jobs-total\">$jobs<"
has overview "id=\"count-failed\">$failed<"
has overview "id=\"controller-state\">running<"
has overview 'id="chart-l2"'
has revision "id=\"rev-jobs\">$jobs2<"
has revision "id=\"rev-hits\">$hits2<"
has failures "id=\"broken\">$broken<"
has failures "id=\"pattern-count\">$patterns<"
has failures "Reproduce: <code>cuvil compile "
for name in overview revision failures; do
    [ "$(stat -c %s "$out/dashboard-$name.png")" -gt 10000 ] || fail "blank screenshot of $name"
done
echo "dashboard: ok ($jobs jobs at the head, $failed failed in $patterns patterns;" \
    "screenshots in $out/dashboard-*.png)"
