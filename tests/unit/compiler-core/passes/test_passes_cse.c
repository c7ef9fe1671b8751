/* Common-subexpression elimination: equal ops (commutative operands in
 * either order) and equal small params merge, the survivor keeps every
 * location; ops differing in an attribute, an operand or a result type do
 * not.  Results stay bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "tests/support/passes_testlib.h"

static int cse_and_clean(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    return cv_pass_cse(f, st, d) || cv_pass_dce(f, st) ? -1 : 0;
}

static void test_equal_ops_merge(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @dup(%x: f32[N,4], %y: f32[N,4]) -> (f32[N,4], f32[N,4]) {\n"
        "  %0 = add(%x, %y) : f32[N,4]  loc(\"A1\")\n"
        "  %1 = add(%y, %x) : f32[N,4]  loc(\"A2\")\n"
        "  %2 = clip(%0) {min=0.0, max=6.0} : f32[N,4]  loc(\"C1\")\n"
        "  %3 = clip(%1) {min=0.0, max=6.0} : f32[N,4]  loc(\"C2\")\n"
        "  %4 = clip(%1) {min=0.0, max=5.0} : f32[N,4]  loc(\"C3\")\n"
        "  %5 = sub(%2, %3) : f32[N,4]\n"
        "  %6 = sub(%3, %2) : f32[N,4]\n"
        "  %7 = mul(%5, %4) : f32[N,4]\n"
        "  %8 = mul(%6, %4) : f32[N,4]\n"
        "  return %7, %8\n}\n",
        cse_and_clean, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    /* %1 joins %0, then %3 joins %2, then %6 (sub(%2,%2) now) joins %5 and %8 joins %7;
     * sub is not commutative, but after the merges its operands are equal. */
    assert_int_equal(st.cse_ops, 4);
    assert_int_equal(pt_count_ops(f, "add"), 1);
    assert_int_equal(pt_count_ops(f, "clip"), 2);
    const cv_op *add = pt_find_op(f, "add");
    assert_true(pt_has_loc(add, "A1") && pt_has_loc(add, "A2"));
    assert_true(f->returns[0] == f->returns[1]);
    pt_check_order(f);
    cv_module_free(m);
}

static void test_equal_params_merge(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @params(%x: f32[N,3]) -> (f32[N,3], f32[N,3]) {\n"
        "  param %a: f32[3] = dense(1, 2, 3)\n"
        "  param %b: f32[3] = dense(1, 2, 3)\n"
        "  param %c: f32[3] = dense(1, 2, 4)\n"
        "  %0 = mul(%x, %a) : f32[N,3]\n"
        "  %1 = mul(%x, %b) : f32[N,3]\n"
        "  %2 = mul(%x, %c) : f32[N,3]\n"
        "  %3 = add(%0, %2) : f32[N,3]\n"
        "  return %3, %1\n}\n",
        cse_and_clean, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.cse_params, 1);
    assert_int_equal(st.cse_ops, 1);
    assert_int_equal(pt_count_ops(f, "mul"), 2);
    assert_int_equal(f->n_params, 2);
    cv_module_free(m);
}

static void test_different_types_stay(void **state)
{
    (void)state;
    cv_pass_stats st;
    cv_module *m = pt_apply(
        "cuir 1\nmodel @types(%x: f32[4]) -> (f16[4], bf16[4]) {\n"
        "  %0 = cast(%x) {to=f16} : f16[4]\n"
        "  %1 = cast(%x) {to=bf16} : bf16[4]\n"
        "  return %0, %1\n}\n",
        cse_and_clean, &st, 0, 0);
    assert_int_equal(st.cse_ops, 0);
    assert_int_equal(m->funcs[0]->n_ops, 2);
    cv_module_free(m);
}

/* Many equal ops, each at its own line, every result used by a chain of
 * adds: one survivor, uses moved through the whole chain (results checked
 * against the interpreter by pt_apply), and the survivor's locations
 * capped so that merging stays linear. */
static void test_many_equal_ops(void **state)
{
    (void)state;
    enum { N = 200 };
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "cuir 1\nmodel @fan(%x: f32[4]) -> (f32[4]) {\n");
    for (int i = 0; i < N; i++)
        cv_sb_printf(&sb, "  %%r%d = relu(%%x) : f32[4]  loc(\"m.py\":%d:1)\n", i, i + 1);
    cv_sb_puts(&sb, "  %s1 = add(%r0, %r1) : f32[4]\n");
    for (int i = 2; i < N; i++)
        cv_sb_printf(&sb, "  %%s%d = add(%%s%d, %%r%d) : f32[4]\n", i, i - 1, i);
    cv_sb_printf(&sb, "  return %%s%d\n}\n", N - 1);
    cv_pass_stats st;
    cv_module *m = pt_apply(cv_sb_str(&sb), cse_and_clean, &st, 0, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(st.cse_ops, N - 1);
    assert_int_equal(pt_count_ops(f, "relu"), 1);
    assert_int_equal(pt_count_ops(f, "add"), N - 1);
    assert_int_equal(pt_find_op(f, "relu")->n_locs, CV_PASS_MAX_MERGED_LOCS);
    pt_check_order(f);
    cv_module_free(m);
    cv_sb_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_ops_merge),
        cmocka_unit_test(test_equal_params_merge),
        cmocka_unit_test(test_different_types_stay),
        cmocka_unit_test(test_many_equal_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
