/* Dead-code elimination: ops whose results reach no return and params
 * nothing reads leave the function; live ops keep their order, ids are
 * renumbered, results do not change. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/passes_testlib.h"

static void test_dead_ops_and_params(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @dead(%x: f32[N,4], %y: f32[N,4]) -> (f32[N,4]) {\n"
        "  param %unused: f32[2] = dense(1, 2)\n"
        "  param %b: f32[4] = dense(1, 2, 3, 4)\n"
        "  %0 = mul(%x, %y) : f32[N,4]\n"
        "  %1 = exp(%0) : f32[N,4]\n"
        "  %2 = add(%x, %b) : f32[N,4]\n"
        "  %3 = relu(%1) : f32[N,4]\n"
        "  %4 = neg(%2) : f32[N,4]\n"
        "  return %4\n}\n",
        pt_dce, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.dead_ops, 3);
    assert_int_equal(st.dead_params, 1);
    assert_int_equal(f->n_ops, 2);
    assert_string_equal(f->ops[0]->name, "add");
    assert_string_equal(f->ops[1]->name, "neg");
    assert_int_equal(f->n_params, 1);
    assert_string_equal(f->params[0]->value->name, "b");
    pt_check_order(f);
    /* Inputs stay even when unused (the signature is the artifact's API). */
    assert_int_equal(f->n_inputs, 2);
    cv_module_free(m);
}

static void test_multi_result_kept_whole(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @half(%x: f32[6]) -> (f32[3], f32[6]) {\n"
        "  %a, %b = split(%x) {axis=0, sizes=[3,3]} : f32[3], f32[3]\n"
        "  %c = abs(%x) : f32[6]\n"
        "  return %b, %x\n}\n",
        pt_dce, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.dead_ops, 1);
    assert_int_equal(f->n_ops, 1);
    assert_string_equal(f->ops[0]->name, "split");
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_ops_and_params),
        cmocka_unit_test(test_multi_result_kept_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
