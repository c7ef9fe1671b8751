#!/usr/bin/env bash
# make chaos: every chaos scenario at full size (issue 16).
#   tests/chaos/run.sh BUILD
# 8 processes x CHAOS_OPS (10,000) cache operations with writers killed and
# bytes flipped; workers killed every few seconds and the controller killed
# twice during a cold build of MODELS (100) models x 2 targets, on SQLite and
# (with BUILD/tools/kafka-mock) on librdkafka's mock cluster with static group
# membership, a worker every ~4 s there too; a full disk
# under the cache; the remote cache killed mid-upload.  Prints one line per
# scenario; fails if any scenario does.
set -uo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cuvil-chaos-XXXXXX")
trap 'rm -rf "$work"' EXIT
cuvil=$build/cuvil
status=0
echo "== cache: 8 processes x ${CHAOS_OPS:-10000} operations, writers killed, bytes flipped"
CUVIL_CHAOS_OPS=${CHAOS_OPS:-10000} "$build/asan/tests/test_chaos_cache" || status=1
echo "== farm (SQLite queue): workers and controller killed with SIGKILL"
/usr/bin/python3 "$here/farm_chaos.py" "$cuvil" "$work/farm" --models "${MODELS:-100}" \
    workers controller || status=1
if [ -x "$build/tools/kafka-mock" ]; then
    echo "== farm (Kafka, mock cluster): workers killed with SIGKILL"
    /usr/bin/python3 "$here/farm_chaos.py" "$cuvil" "$work/farm" --models "${MODELS:-100}" \
        --kill-every 4 --static --queue kafka --kafka-mock "$build/tools/kafka-mock" workers \
        || status=1
fi
echo "== stores: full disk under the cache, remote cache killed mid-upload"
/usr/bin/python3 "$here/store_chaos.py" "$cuvil" "$work/store" diskfull remote || status=1
exit $status
