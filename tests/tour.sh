#!/usr/bin/env bash
# Runs the README's quick tour as written, top to bottom, in a fresh
# directory: the ```sh block under "## Quick tour", one line at a time with
# bash, `build/` and `examples/` pointing at this checkout.  Skipped: `make`
# (the test runs after it) and lines marked `# needs:`.  A line that fails
# fails the tour, naming it.
#   tests/tour.sh [README]    (CUVIL_BUILD: the build directory, default build)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
readme=${1:-$root/README.md}
build=$(cd "${CUVIL_BUILD:-$root/build}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-tour-XXXXXX")
trap 'jobs -p | xargs -r kill 2>/dev/null; rm -rf "$work"' EXIT
ln -s "$build" "$work/build"
ln -s "$root/examples" "$work/examples"
export CUVIL_CACHE_DIR=$work/cache CUVIL_FARM_STATE=$work/.cuvil-farm NO_COLOR=1

script=$work/tour.sh
awk '/^## Quick tour/ {t = 1} t && /^```sh/ {b = 1; next} b && /^```/ {exit} b' "$readme" \
    | grep -v -e '^make\b' -e '# needs:' > "$script"
[ -s "$script" ] || { echo "tour: no sh block under '## Quick tour' in $readme" >&2; exit 1; }
cd "$work"
n=0
while IFS= read -r line; do
    n=$((n + 1))
    echo "+ $line"
    eval "$line" </dev/null
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "tour: line $n failed (exit $rc): $line" >&2
        exit 1
    fi
done < "$script"
echo "tour: $n lines ran"
