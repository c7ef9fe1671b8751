#!/usr/bin/env bash
# Runs every unit-test binary given, TEST_JOBS at a time (default: the
# number of CPUs), reports each in the order given, with its wall time, as
# soon as it and those before it are done, then prints one closing line
# "N passed, N failed" over all cmocka tests.
set -uo pipefail
jobs=${TEST_JOBS:-$(nproc)}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
tests=("$@")
passed=0 failed=0 broken=() next=0

# LeakSanitizer (GCC 12's libsanitizer) reads each thread's dynamic TLS when
# it stops the world at exit; on glibc 2.36, under load, its tracer sometimes
# crashes there ("Tracer caught signal 11") after every test has passed.  That
# is the checker failing, not the test: such a run is repeated once, and a
# second crash (or any real failure) counts.
lsan_tracer_crashed() { # log
    grep -q 'Tracer caught signal' "$1" && grep -q '^\[  PASSED  \]' "$1" &&
        ! grep -q '^\[  FAILED  \]' "$1"
}

# LeakSanitizer's walk of dynamic TLS (the blocks __tls_get_addr hands out
# for a dlopen'd library's thread_locals: LLVM's, in the backend plugin)
# reads a bogus DTV range on glibc 2.36 and its tracer dies with SIGSEGV at
# every exit of some builds (deterministic per binary layout: `cuvil compile`
# of one build 4 of 4 times, of another never).  TLS stops being a root:
# an object reachable only from a thread_local would then be reported as a
# leak, so this can add reports, never hide one; the dynamic loader's own
# blocks that it reports so are suppressed by name (tests/lsan.supp).
export LSAN_OPTIONS=${LSAN_OPTIONS:-use_tls=0:suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp}

run_one() { # index binary
    local start=$SECONDS rc
    "$2" >"$logs/$1.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && lsan_tracer_crashed "$logs/$1.log"; then
        "$2" >"$logs/$1.log" 2>&1
        rc=$?
        echo "(run again: LeakSanitizer's tracer crashed at exit the first time)" >>"$logs/$1.log"
    fi
    echo "$rc $((SECONDS - start))" >"$logs/$1.tmp" && mv "$logs/$1.tmp" "$logs/$1.rc"
}

# Reports the finished tests that come next in order.
report() {
    while [ "$next" -lt "${#tests[@]}" ] && [ -f "$logs/$next.rc" ]; do
        local name log rc secs p f
        name=$(basename "${tests[$next]}")
        log=$logs/$next.log
        read -r rc secs <"$logs/$next.rc"
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-0}))
        if [ "$rc" -ne 0 ] || [ -n "${f:-}" ]; then
            broken+=("$name")
            cat "$log"
            [ -z "${f:-}" ] && failed=$((failed + 1))
        else
            printf 'ok   %-30s (%s tests, %s s)\n' "$name" "${p:-0}" "$secs"
        fi
        next=$((next + 1))
    done
}

for i in "${!tests[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n
        report
    done
    run_one "$i" "${tests[$i]}" &
done
wait
report
echo "${passed} passed, ${failed} failed"
[ ${#broken[@]} -eq 0 ] || { echo "failing: ${broken[*]}"; exit 1; }
