/* Reference outputs of exported models ($CUVIL_BUILD/models/...npy) for the
 * model tests: reading them and comparing a result within 1e-4, or 1e-4 of
 * the reference's range. */
#ifndef CV_TEST_MODEL_REFS_H
#define CV_TEST_MODEL_REFS_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/npy.h"
#include "compiler-core/ir/ir.h"

/* Reads the .npy at path into *t: true, or false when there is none. */
static inline bool tm_read_npy(const char *path, cv_tensor *t)
{
    if (access(path, R_OK) != 0)
        return false;
    cv_diag d;
    cv_diag_init(&d);
    cv_npy x;
    assert_int_equal(cv_npy_read(path, &x, &d), 0);
    assert_int_equal(cv_tensor_alloc(t, x.dtype, x.rank, x.dims), 0);
    memcpy(t->data, x.data, x.nbytes);
    cv_npy_free(&x);
    cv_diag_free(&d);
    return true;
}

/* Max abs error of got against want, within 1e-4 or 1e-4 of want's range. */
static inline void tm_compare(const char *what, int k, const cv_tensor *got, const cv_tensor *want)
{
    assert_int_equal(got->numel, want->numel);
    double err = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < want->numel; i++) {
        double w = cv_tensor_get(want, i), e = fabs(cv_tensor_get(got, i) - w);
        err = e > err || e != e ? e : err;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    double tol = fmax(1e-4, 1e-4 * (hi - lo));
    printf("%s output %d: max abs error %.3g (range %.3g)\n", what, k, err, hi - lo);
    if (!(err <= tol))
        fail_msg("%s output %d: max abs error %.3g > %.3g", what, k, err, tol);
}

#endif
