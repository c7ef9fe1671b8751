#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"

#include "tests/support/netbuild.h"
#include "tests/support/numpyref.h"

cv_value *cv_nb_param(cv_nb *b, int rank, const int64_t *dims, double bound)
{
    cv_tensor t;
    assert_int_equal(cv_tensor_alloc(&t, CV_F32, rank, dims), 0);
    cv_npref_fill(&t, b->seed++, -bound, bound);
    cv_type ty = {.dtype = CV_F32, .shape = {.rank = rank}};
    for (int i = 0; i < rank; i++)
        ty.shape.d[i].n = dims[i];
    char name[32];
    snprintf(name, sizeof name, "p%llu", (unsigned long long)b->seed);
    cv_value *v = cv_func_add_dense(b->f, name, &ty, t.data, cv_tensor_nbytes(&t))->value;
    cv_tensor_free(&t);
    return v;
}

cv_value *cv_nb_finish(cv_nb *b, cv_op *op)
{
    assert_int_equal(cv_op_finish(op, 1, b->d), 0);
    return op->results[0];
}

cv_value *cv_nb_unary(cv_nb *b, const char *name, cv_value *x)
{
    return cv_nb_finish(b, cv_op_new(b->f, name, &x, 1));
}

cv_value *cv_nb_binary(cv_nb *b, const char *name, cv_value *x, cv_value *y)
{
    cv_value *ops[2] = {x, y};
    return cv_nb_finish(b, cv_op_new(b->f, name, ops, 2));
}

cv_value *cv_nb_conv(cv_nb *b, cv_value *x, int64_t oc, int64_t k, int64_t stride,
                     const int64_t pad[4], int64_t dil, int64_t groups)
{
    int64_t c = x->type.shape.d[1].n / groups, wd[4] = {oc, c, k, k}, bd[1] = {oc};
    cv_value *ops[3] = {x, cv_nb_param(b, 4, wd, sqrt(6.0 / (double)(c * k * k))),
                        cv_nb_param(b, 1, bd, 0.1)};
    cv_op *op = cv_op_new(b->f, "conv2d", ops, 3);
    cv_op_set_ints(op, "stride", (int64_t[]){stride, stride}, 2);
    cv_op_set_ints(op, "pad", pad, 4);
    cv_op_set_ints(op, "dilation", (int64_t[]){dil, dil}, 2);
    cv_op_set_int(op, "groups", groups);
    return cv_nb_finish(b, op);
}

cv_nb cv_nb_begin(const char *name, cv_diag *d, int64_t c, int64_t h, int64_t w)
{
    cv_nb b = {.m = cv_module_new(name), .seed = 11, .d = d};
    b.f = cv_func_new(b.m, "q");
    cv_type t = {.dtype = CV_F32, .shape = {.rank = 4, .d = {{0, cv_module_intern(b.m, "N", 1)},
                                                               {c, NULL}, {h, NULL}, {w, NULL}}}};
    cv_func_add_input(b.f, "x", &t);
    return b;
}

cv_module *cv_nb_end(cv_nb *b, cv_value *out)
{
    cv_func_add_output_type(b->f, &out->type);
    cv_func_set_returns(b->f, &out, 1);
    assert_int_equal(cv_verify(b->m, 0, b->d), 0);
    return b->m;
}

bool cv_nb_cpu_has(const char *flag)
{
    char *text = NULL;
    size_t len = 0;
    cv_diag d;
    cv_diag_init(&d);
    bool has = cv_fs_read_file("/proc/cpuinfo", 1 << 24, &text, &len, &d) == 0 &&
               strstr(text, flag) != NULL;
    free(text);
    cv_diag_free(&d);
    return has;
}
