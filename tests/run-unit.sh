#!/usr/bin/env bash
# Runs every unit-test binary given, then prints one closing line
# "N passed, N failed" over all cmocka tests.
set -uo pipefail
passed=0 failed=0 broken=()
for t in "$@"; do
    name=$(basename "$t")
    log=$(mktemp)
    "$t" >"$log" 2>&1
    rc=$?
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ] || [ -n "${f:-}" ]; then
        broken+=("$name")
        cat "$log"
        [ -z "${f:-}" ] && failed=$((failed + 1))
    else
        echo "ok   $name (${p:-0} tests)"
    fi
    rm -f "$log"
done
echo "${passed} passed, ${failed} failed"
[ ${#broken[@]} -eq 0 ] || { echo "failing: ${broken[*]}"; exit 1; }
