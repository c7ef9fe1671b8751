/* The harness shared by the single-op tests (tests/unit/test_ops_*.c): one
 * NumPy suite of op cases per test binary, run in the cmocka group setup and
 * checked tag by tag, and the shape-function checks.  Failures are reported
 * through cmocka, so only test code may call these. */
#ifndef CV_TEST_OPSTEST_H
#define CV_TEST_OPSTEST_H

#include <stddef.h>

#include "tests/support/numpyref.h"

/* One single-op case: tag = op name, attribute text, NumPy expression, inputs. */
#define CV_OPCASE(op_, attrs_, expr_, ...) \
    {.tag = op_, .op = op_, .attrs = attrs_, .in = {__VA_ARGS__}, .expr = expr_}
/* The same with one tolerance for rtol and atol. */
#define CV_OPCASE_TOL(op_, attrs_, expr_, tol_, ...) \
    {.tag = op_, .op = op_, .attrs = attrs_, .in = {__VA_ARGS__}, .expr = expr_, .rtol = tol_, \
     .atol = tol_}
/* A case checking result k of n. */
#define CV_OPCASE_RES(op_, attrs_, n_, k_, expr_, ...) \
    {.tag = op_, .op = op_, .attrs = attrs_, .in = {__VA_ARGS__}, .expr = expr_, \
     .n_results = n_, .result = k_}

/* Runs the cases (cv_npref_suite_run) into the binary's one suite; returns 0,
 * or -1 (with the reason on stderr) when NumPy could not run.  cases must
 * outlive the suite. */
int cv_opstest_setup(const cv_npref_opcase *cases, int n, const char *prelude);
void cv_opstest_teardown(void);
/* Fails the test unless every case tagged tag matches NumPy and there are at
 * least at_least of them. */
void cv_opstest_check(const char *tag, int at_least);

/* Builds op over the specs in[0..max_in) (up to the first NULL) with
 * n_results results and fails the test, naming case i, unless
 * the first result's type (e.g. "f32[N,3]") or the first error code
 * ("CVnnnn") is want. */
void cv_opstest_expect_infer(size_t i, const char *op, const char *attrs,
                             const char *const *in, int max_in, int n_results,
                             const char *want);

#endif
