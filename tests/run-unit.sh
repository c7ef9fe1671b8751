#!/usr/bin/env bash
# Runs every unit-test binary given, then prints one closing line
# "N passed, N failed" over all cmocka tests.
set -uo pipefail
passed=0 failed=0 broken=()
# LeakSanitizer's own tracer sometimes crashes at exit on a loaded machine
# ("Tracer caught signal 11" / "LeakSanitizer has encountered a fatal
# error") after every test passed and before any leak was looked at; such a
# binary runs once more, and counts as failed if it happens again.
lsan_crashed() {
    grep -q 'LeakSanitizer has encountered a fatal error' "$1" &&
        ! grep -q 'ERROR: LeakSanitizer: detected memory leaks' "$1" &&
        ! grep -q '^\[  FAILED  \]' "$1"
}
for t in "$@"; do
    name=$(basename "$t")
    log=$(mktemp)
    "$t" >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && lsan_crashed "$log"; then
        echo "note $name: LeakSanitizer's tracer crashed at exit; running it again"
        "$t" >"$log" 2>&1
        rc=$?
    fi
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
