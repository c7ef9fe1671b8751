/* Test helpers for CU-IR text: the corpus under tests/cuir, expectation
 * lines ("# expect: CV1002 3:14, CV2010 4:19"), and checking diagnostics
 * against them. */
#ifndef CV_TEST_CUIRTEST_H
#define CV_TEST_CUIRTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "compiler-core/ir/ir.h"

typedef struct cv_cuirtest_want {
    int code, line, col;
} cv_cuirtest_want;

/* A whole file, malloc'd and NUL-terminated (aborts when unreadable). */
char *cv_cuirtest_read(const char *path, size_t *len);
/* The sorted *.cuir files of tests/cuir/<sub> as malloc'd paths (free each
 * and the array); the directory is found from the repository root (the
 * working directory of `make unit-test`) or $CUVIL_SRC. */
int cv_cuirtest_list(const char *sub, char ***paths);
/* Reads the first line's expectations; *strict for "# expect-strict:".
 * Returns the count, or -1 when the line is missing or malformed. */
int cv_cuirtest_expect(const char *text, cv_cuirtest_want *w, int max, bool *strict);
/* True when the error entries of d are exactly w[0..n) in order; otherwise
 * prints both lists (tagged with name) to stderr. */
bool cv_cuirtest_match(const char *name, const cv_diag *d, const cv_cuirtest_want *w, int n);
/* Parses and, when that succeeded, verifies; returns the module (or NULL). */
cv_module *cv_cuirtest_load(const char *text, size_t len, const char *name, unsigned vflags,
                            cv_diag *d);
/* Structural equality of two modules: names, types, params (bytes; NaN
 * equal to NaN), ops, operands by name, attributes, locations, returns.
 * Prints the first difference to stderr. */
bool cv_cuirtest_equal(const cv_module *a, const cv_module *b);

#endif
