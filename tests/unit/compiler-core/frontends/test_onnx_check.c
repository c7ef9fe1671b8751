/* The check-only import (cuvil validate): large initializers are neither
 * copied nor read, yet the module's types and params and every diagnostic
 * are those of the ordinary import. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/tmpdir.h"
#include "tests/support/onnx_testlib.h"

enum { K = 128, N = 256 };   /* w: K*N floats = 128 KiB, above the strip threshold */

/* y = MatMul(x, w) + b, with w large and b small; the node names are given
 * so that the two imports' diagnostics can be compared verbatim. */
static void model(tb *b, const int64_t *wdims, long wbytes_delta)
{
    static float w[K * N + 64], bias[N];
    for (int i = 0; i < K * N + 64; i++)
        w[i] = (float)(i % 97) * 0.25f;
    for (int i = 0; i < N; i++)
        bias[i] = (float)i;
    int64_t dx[2] = {2, K}, dy[2] = {2, N}, db[1] = {N};
    tb_init(b, 13);
    tb_input(b, "x", TB_FLOAT, 2, dx);
    tb_output(b, "y", TB_FLOAT, 2, dy);
    Onnx__TensorProto *t = tb_init_tensor(b, "w", TB_FLOAT, 2, wdims, w, true);
    t->raw_data.len = (size_t)((long)t->raw_data.len + wbytes_delta);
    t->raw_data.data = tb_dup(b, w, t->raw_data.len);
    tb_init_tensor(b, "b", TB_FLOAT, 1, db, bias, true);
    tb_node(b, "MatMul", "mm", "x,w", "xw");
    tb_node(b, "Add", "add", "xw,b", "y");
}

/* Writes the model to dir/name and returns the path (malloc'd). */
static char *write_model(tb *b, const char *dir, const char *name)
{
    size_t len;
    uint8_t *buf = tb_pack(b, &len);
    assert_int_equal(cv_tmpdir_write(dir, name, buf, len), 0);
    return cv_tmpdir_path(dir, name);
}

static void same_diagnostics(const cv_diag *a, const cv_diag *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_int_equal(a->v[i].code, b->v[i].code);
        assert_string_equal(a->v[i].msg, b->v[i].msg);
    }
}

static void same_modules(const cv_module *a, const cv_module *b)
{
    const cv_func *fa = a->funcs[0], *fb = b->funcs[0];
    assert_int_equal(fa->n_ops, fb->n_ops);
    assert_int_equal(fa->n_params, fb->n_params);
    for (int i = 0; i < fa->n_params; i++) {
        const cv_param *pa = fa->params[i], *pb = fb->params[i];
        assert_true(cv_type_equal(&pa->value->type, &pb->value->type));
        assert_int_equal(pa->nbytes, pb->nbytes);
        assert_memory_equal(pa->data, pb->data, pa->nbytes);
    }
}

/* Loads path both ways and compares; returns whether the import succeeded. */
static bool load_both(const char *path)
{
    cv_diag d1, d2;
    cv_diag_init(&d1);
    cv_diag_init(&d2);
    cv_module *m1 = cv_onnx_load(path, &d1), *m2 = cv_onnx_load_check(path, &d2);
    same_diagnostics(&d1, &d2);
    assert_true((m1 == NULL) == (m2 == NULL));
    if (m1)
        same_modules(m1, m2);
    bool ok = m1 != NULL;
    cv_module_free(m1);
    cv_module_free(m2);
    cv_diag_free(&d1);
    cv_diag_free(&d2);
    return ok;
}

static void test_check_import_matches(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("onnx-check");
    assert_non_null(dir);
    int64_t good[2] = {K, N}, wrong_k[2] = {K / 2, 2 * N};
    struct { const int64_t *dims; long delta; bool ok; } cases[] = {
        {good, 0, true},        /* borrowed weights, same bytes */
        {wrong_k, 0, false},    /* shape error in MatMul */
        {good, -256, false},    /* raw_data shorter than its dims */
        {good, 256, false},     /* raw_data longer than its dims */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tb b;
        model(&b, cases[i].dims, cases[i].delta);
        char name[32];
        snprintf(name, sizeof name, "m%zu.onnx", i);
        char *path = write_model(&b, dir, name);
        assert_int_equal(load_both(path), cases[i].ok);
        /* Every cut of the file: the same refusal both ways. */
        if (i == 0) {
            size_t len;
            uint8_t *buf = tb_pack(&b, &len);
            for (size_t cut = 1; cut < len; cut += len / 61 + 1) {
                assert_int_equal(cv_tmpdir_write(dir, "cut.onnx", buf, cut), 0);
                char *cp = cv_tmpdir_path(dir, "cut.onnx");
                assert_false(load_both(cp));
                free(cp);
            }
        }
        free(path);
        tb_free(&b);
    }
    cv_tmpdir_remove(dir);
}

/* Missing and empty files fall back to the ordinary reader's diagnostics. */
static void test_check_import_unreadable(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("onnx-check");
    assert_non_null(dir);
    assert_int_equal(cv_tmpdir_write(dir, "empty.onnx", "", 0), 0);
    char *empty = cv_tmpdir_path(dir, "empty.onnx"), *missing = cv_tmpdir_path(dir, "no.onnx");
    assert_false(load_both(empty));
    assert_false(load_both(missing));
    free(empty);
    free(missing);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_import_matches),
        cmocka_unit_test(test_check_import_unreadable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
