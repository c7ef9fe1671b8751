#!/usr/bin/env bash
# Bazel (Debian's bazel-bootstrap 4.2) against `cuvil cache serve`: builds
# three genrule targets with --remote_cache=http://127.0.0.1:PORT (actions
# and outputs uploaded), `bazel clean`, builds again: every action must be a
# remote cache hit and the outputs identical.  Genrules only: Bazel's C++
# rules would download rules_cc, and nothing outside this machine is
# reachable.  Each Bazel command starts a JVM (several seconds), so this runs
# under `make integration`, not `make test`.
#
# Env: CUVIL_BIN (default build/cuvil).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cuvil=${CUVIL_BIN:-$root/build/cuvil}
[ -x "$cuvil" ] || { echo "bazel_remote_cache: $cuvil missing (make all)" >&2; exit 1; }
if ! command -v bazel >/dev/null; then
    [ "$(id -u)" -eq 0 ] || { echo "bazel_remote_cache: needs bazel-bootstrap" >&2; exit 1; }
    echo "bazel_remote_cache: installing bazel-bootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bazel-bootstrap >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-bazel-XXXXXX")
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    chmod -R u+w "$work" 2>/dev/null || true # Bazel leaves read-only trees
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bazel_remote_cache: FAILED: $*" >&2
    for f in "$work"/*.log; do echo "--- $f" >&2; tail -30 "$f" >&2; done
    exit 1
}

"$cuvil" cache serve --listen 127.0.0.1:0 --dir "$work/store" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "listening on port" "$work/serve.log" && break; sleep 0.05; done
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/serve.log")
[ -n "$port" ] || fail "the cache server did not start"

ws="$work/ws"
mkdir -p "$ws"
touch "$ws/WORKSPACE"
echo "hello from the workspace" >"$ws/in.txt"
cat >"$ws/BUILD" <<'BUILD'
genrule(
    name = "numbers",
    outs = ["numbers.txt"],
    cmd = "seq 1 5000 > $@",
)
genrule(
    name = "upper",
    srcs = ["in.txt"],
    outs = ["upper.txt"],
    cmd = "tr a-z A-Z < $< > $@",
)
genrule(
    name = "digest",
    srcs = [":numbers", ":upper"],
    outs = ["digest.txt"],
    cmd = "cat $(SRCS) | sha256sum > $@",
)
BUILD

# One output base for the test, no Bazel server left behind (--batch), and
# no sandbox: what is under test is the remote cache, not isolation.
bz() { (cd "$ws" && bazel --batch --output_user_root="$work/bazel-root" "$@"); }
flags=(--remote_cache="http://127.0.0.1:$port" --spawn_strategy=standalone --noshow_progress)
outs=(numbers.txt upper.txt digest.txt)

bz build "${flags[@]}" //:digest >"$work/build1.log" 2>&1 || fail "first build"
mkdir -p "$work/first"
for f in "${outs[@]}"; do cp "$ws/bazel-bin/$f" "$work/first/"; done
status=$(curl -sf "http://127.0.0.1:$port/status") || fail "no /status"
ac=$(echo "$status" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ac_entries"])')
[ "$ac" -ge 3 ] || fail "expected 3 action results uploaded, the server holds $ac"

bz clean >"$work/clean.log" 2>&1 || fail "bazel clean"
[ ! -e "$ws/bazel-bin/digest.txt" ] || fail "bazel clean left the outputs"
bz build "${flags[@]}" //:digest >"$work/build2.log" 2>&1 || fail "second build"
grep -q "3 remote cache hit" "$work/build2.log" ||
    fail "the rebuild did not take its 3 actions from the remote cache"
for f in "${outs[@]}"; do
    cmp -s "$work/first/$f" "$ws/bazel-bin/$f" || fail "$f differs after the rebuild"
done
hits=$(curl -sf "http://127.0.0.1:$port/status" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["hits"])')
echo "bazel_remote_cache: ok ($(grep -o '[0-9]* remote cache hit' "$work/build2.log")," \
     "server hits $hits)"
