/* Test helper: small CNNs built op by op with random weights (cv_npref_fill
 * from a running seed, so that a builder makes the same module each time),
 * for tests that compile them and compare against the interpreter. */
#ifndef CV_TEST_NETBUILD_H
#define CV_TEST_NETBUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler-core/ir/ir.h"

typedef struct cv_nb {
    cv_module *m;
    cv_func *f;
    uint64_t seed;      /* of the next parameter */
    cv_diag *d;
} cv_nb;

/* A module named name with one function "q" of input x [N][c][h][w] (N
 * symbolic); parameters seeded from 11. */
cv_nb cv_nb_begin(const char *name, cv_diag *d, int64_t c, int64_t h, int64_t w);
/* A dense f32 parameter uniform in [-bound, bound]. */
cv_value *cv_nb_param(cv_nb *b, int rank, const int64_t *dims, double bound);
/* Finishes op (asserting success) and returns its result. */
cv_value *cv_nb_finish(cv_nb *b, cv_op *op);
cv_value *cv_nb_unary(cv_nb *b, const char *name, cv_value *x);
cv_value *cv_nb_binary(cv_nb *b, const char *name, cv_value *x, cv_value *y);
/* conv2d with He-uniform weights and a small bias; pad is top, left,
 * bottom, right. */
cv_value *cv_nb_conv(cv_nb *b, cv_value *x, int64_t oc, int64_t k, int64_t stride,
                     const int64_t pad[4], int64_t dil, int64_t groups);
/* Returns out and verifies the module (asserted). */
cv_module *cv_nb_end(cv_nb *b, cv_value *out);
/* Whether /proc/cpuinfo lists flag (" avx2": with the leading space),
 * for tests that pick a target variant this CPU can run. */
bool cv_nb_cpu_has(const char *flag);

#endif
