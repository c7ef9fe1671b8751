/* Batch-norm folding into conv2d (with and without a bias, grouped) and
 * gemm (either B layout, with and without C): no batch_norm is left, the
 * producer carries both locations, and the model computes what the
 * original did (to f32 rounding of the folded weights).  A producer whose
 * result is also used elsewhere, or whose weights are not constants, keeps
 * its batch_norm. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/passes_testlib.h"

static int fold_and_clean(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    return cv_pass_bn_fold(f, st, d) || cv_pass_dce(f, st) ? -1 : 0;
}

#define BN_PARAMS(C, S, B, M, V) \
    "  param %s: f32[" C "] = dense(" S ")\n  param %bb: f32[" C "] = dense(" B ")\n" \
    "  param %mu: f32[" C "] = dense(" M ")\n  param %va: f32[" C "] = dense(" V ")\n"

static void test_conv(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @convbn(%x: f32[N,2,5,5]) -> (f32[N,3,5,5], f32[N,2,3,3]) {\n"
        "  param %w: f32[3,2,3,3] = dense(0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 1, 1.1, "
        "-1.2, 0.13, 0.14, -0.15, 0.16, 0.17, 0.18, -0.19, 0.2, 0.21, 0.22, -0.23, 0.24, 0.25, 0.26, "
        "-0.27, 0.28, 0.29, 0.3, -0.31, 0.32, 0.33, 0.34, -0.35, 0.36, 0.37, 0.38, -0.39, 0.4, 0.41, "
        "0.42, -0.43, 0.44, 0.45, 0.46, -0.47, 0.48, 0.49, 0.5, -0.51, 0.52, 0.53, 0.54)\n"
        "  param %cb: f32[3] = dense(0.5, -1, 2)\n"
        "  param %g: f32[2,1,2,2] = dense(1, 2, 3, 4, -1, 0.5, 0.25, 2)\n"
        BN_PARAMS("3", "1.5, -0.5, 2", "0.1, 0.2, -0.3", "0.4, -0.1, 1", "0.9, 2, 0.01")
        "  param %s2: f32[2] = dense(2, 3)\n  param %b2: f32[2] = dense(-1, 1)\n"
        "  param %m2: f32[2] = dense(0.5, 0.25)\n  param %v2: f32[2] = dense(4, 0.5)\n"
        "  %0 = conv2d(%x, %w, %cb) {pad=[1,1]} : f32[N,3,5,5]  loc(\"Conv\")\n"
        "  %1 = batch_norm(%0, %s, %bb, %mu, %va) {epsilon=0.001} : f32[N,3,5,5]  loc(\"BN\")\n"
        "  %2 = conv2d(%x, %g) {stride=[2,2], groups=2} : f32[N,2,2,2]  loc(\"GConv\")\n"
        "  %3 = batch_norm(%2, %s2, %b2, %m2, %v2) : f32[N,2,2,2]  loc(\"GBN\")\n"
        "  %4 = pad(%3) {pads=[0,0,0,0,0,0,1,1]} : f32[N,2,3,3]\n"
        "  return %1, %4\n}\n",
        fold_and_clean, &st, 1e-5, 1e-5);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.bn_folded, 2);
    assert_int_equal(pt_count_ops(f, "batch_norm"), 0);
    const cv_op *conv = f->ops[0], *gconv = f->ops[1];
    assert_true(pt_has_loc(conv, "Conv") && pt_has_loc(conv, "BN"));
    assert_true(pt_has_loc(gconv, "GConv") && pt_has_loc(gconv, "GBN"));
    assert_int_equal(gconv->n_operands, 3);     /* the bias-less conv gained one */
    assert_int_equal(f->n_params, 4);           /* two weights, two biases */
    pt_check_order(f);
    cv_module_free(m);
}

static void test_gemm(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @gemmbn(%x: f32[4,3]) -> (f32[4,2], f32[4,2]) {\n"
        "  param %w: f32[2,3] = dense(1, -2, 0.5, 0.25, 3, -1)\n"
        "  param %v: f32[3,2] = dense(0.5, -1, 2, 0.125, -0.75, 1.5)\n"
        "  param %c: f32[2] = dense(0.3, -0.7)\n"
        BN_PARAMS("2", "1.5, -0.5", "0.1, 0.2", "0.4, -0.1", "0.9, 2")
        "  %0 = gemm(%x, %w, %c) {trans_b=1, alpha=0.5, beta=2.0} : f32[4,2]  loc(\"G1\")\n"
        "  %1 = batch_norm(%0, %s, %bb, %mu, %va) : f32[4,2]  loc(\"B1\")\n"
        "  %2 = gemm(%x, %v) : f32[4,2]  loc(\"G2\")\n"
        "  %3 = batch_norm(%2, %s, %bb, %mu, %va) : f32[4,2]  loc(\"B2\")\n"
        "  return %1, %3\n}\n",
        fold_and_clean, &st, 1e-5, 1e-5);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.bn_folded, 2);
    assert_int_equal(pt_count_ops(f, "batch_norm"), 0);
    assert_true(pt_has_loc(f->ops[0], "B1") && pt_has_loc(f->ops[1], "B2"));
    assert_true(cv_op_float(f->ops[0], "beta", 0) == 1.0);
    cv_module_free(m);
}

static void test_not_folded(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @keep(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> (f32[1,2,3,3], f32[1,2,3,3]) {\n"
        "  param %u: f32[2,2,1,1] = dense(1, 2, 3, 4)\n"
        BN_PARAMS("2", "1.5, -0.5", "0.1, 0.2", "0.4, -0.1", "0.9, 2")
        "  %0 = conv2d(%x, %u) : f32[1,2,3,3]\n"
        "  %1 = batch_norm(%0, %s, %bb, %mu, %va) : f32[1,2,3,3]\n"
        "  %2 = add(%0, %1) : f32[1,2,3,3]\n"
        "  %3 = conv2d(%x, %w) : f32[1,2,3,3]\n"
        "  %4 = batch_norm(%3, %s, %bb, %mu, %va) : f32[1,2,3,3]\n"
        "  return %2, %4\n}\n",
        fold_and_clean, &st, 0, 0);
    assert_int_equal(st.bn_folded, 0);
    assert_int_equal(pt_count_ops(m->funcs[0], "batch_norm"), 2);
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_not_folded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
