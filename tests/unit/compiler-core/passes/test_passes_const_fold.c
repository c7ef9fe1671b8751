/* Constant folding: ops reading only params become params holding the
 * interpreter's own values (so results stay bit for bit); ops reading an
 * input, or whose result would dwarf their inputs, stay. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/passes_testlib.h"

/* const_fold then dce, the way the pipeline runs them. */
static int fold_and_clean(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    return cv_pass_const_fold(f, st, d) || cv_pass_dce(f, st) ? -1 : 0;
}

static void test_chain_folds(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @chain(%x: f32[N,3]) -> (f32[N,2]) {\n"
        "  param %w: f32[2,3] = dense(1, -2, 3.5, 0.25, 5, -6)\n"
        "  param %s: f32[3,2] = dense(0.5, 2, -1, 3, 0.125, 7)\n"
        "  %0 = transpose(%w) {perm=[1,0]} : f32[3,2]  loc(\"T\")\n"
        "  %1 = mul(%0, %s) : f32[3,2]  loc(\"M\")\n"
        "  %2 = exp(%1) : f32[3,2]  loc(\"E\")\n"
        "  %3 = matmul(%x, %2) : f32[N,2]  loc(\"MM\")\n"
        "  return %3\n}\n",
        fold_and_clean, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.folded, 3);
    assert_int_equal(f->n_ops, 1);
    assert_string_equal(f->ops[0]->name, "matmul");
    assert_true(pt_has_loc(f->ops[0], "MM"));
    /* w, s and the folded intermediates are dead; the folded exp is the one
     * param left. */
    assert_int_equal(f->n_params, 1);
    assert_int_equal(st.dead_params, 4);
    assert_int_equal(f->ops[0]->operands[1]->kind, CV_VAL_PARAM);
    pt_check_order(f);
    cv_module_free(m);
}

static void test_inputs_and_growth_stay(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @stay(%x: f32[4]) -> (f32[4], f32[256,256]) {\n"
        "  param %c: f32[1] = dense(2.5)\n"
        "  %0 = add(%x, %c) : f32[4]\n"
        "  %1 = expand(%c) {shape=[256,256]} : f32[256,256]\n"
        "  return %0, %1\n}\n",
        fold_and_clean, &st, 0, 0);
    assert_int_equal(st.folded, 0);
    assert_int_equal(m->funcs[0]->n_ops, 2);
    cv_module_free(m);
}

static void test_multi_result_and_constant(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @split(%x: f32[2,3]) -> (f32[2,3], i64[3], f32[2,1]) {\n"
        "  param %w: f32[2,3] = dense(1, 2, 3, 4, 5, 6)\n"
        "  %a, %b = split(%w) {axis=1, sizes=[1,2]} : f32[2,1], f32[2,2]\n"
        "  %k = constant() {ints=[7,8,9]} : i64[3]\n"
        "  %c = concat(%b, %a) {axis=1} : f32[2,3]\n"
        "  %d = sub(%x, %c) : f32[2,3]\n"
        "  return %d, %k, %a\n}\n",
        fold_and_clean, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.folded, 3);
    assert_int_equal(f->n_ops, 1);
    assert_string_equal(f->ops[0]->name, "sub");
    /* Folded values may be returned directly. */
    assert_int_equal(f->returns[1]->kind, CV_VAL_PARAM);
    assert_int_equal(f->returns[2]->kind, CV_VAL_PARAM);
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_folds),
        cmocka_unit_test(test_inputs_and_growth_stay),
        cmocka_unit_test(test_multi_result_and_constant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
