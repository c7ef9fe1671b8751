/* The unary math family (ops_math.c): interpreter results against NumPy
 * computed at test time, every op with a case, and the float-only shape
 * function. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"
#include "tests/support/numpyref.h"
#include "tests/support/opstest.h"

static const char prelude[] = "def f64(x): return np.asarray(x).astype(np.float64)\n";

#define CASE CV_OPCASE

static const cv_npref_opcase cases[] = {
    CASE("sin", NULL, "np.sin(f64(a))", "f32[6]@-7:7"),
    CASE("sin", NULL, "np.sin(f64(a))", "f16[4]"),
    CASE("cos", NULL, "np.cos(f64(a))", "f32[2,3]@-7:7"),
    CASE("tan", NULL, "np.tan(f64(a))", "f32[6]@-1.4:1.4"),
    CASE("asin", NULL, "np.arcsin(f64(a))", "f32[6]@-1:1"),
    CASE("asin", NULL, "np.arcsin(f64(a))", "f32[2]=2,-1"),
    CASE("acos", NULL, "np.arccos(f64(a))", "f32[6]@-1:1"),
    CASE("atan", NULL, "np.arctan(f64(a))", "f32[6]@-20:20"),
    CASE("sinh", NULL, "np.sinh(f64(a))", "f32[6]@-5:5"),
    CASE("cosh", NULL, "np.cosh(f64(a))", "f32[6]@-5:5"),
    CASE("asinh", NULL, "np.arcsinh(f64(a))", "f32[6]@-9:9"),
    CASE("acosh", NULL, "np.arccosh(f64(a))", "f32[6]@1:9"),
    CASE("atanh", NULL, "np.arctanh(f64(a))", "f32[6]@-0.99:0.99"),
    CASE("floor", NULL, "np.floor(a)", "f32[4]=-1.5,-0.5,0.5,2"),
    CASE("ceil", NULL, "np.ceil(a)", "f32[4]=-1.5,-0.5,0.5,2"),
    CASE("ceil", NULL, "np.ceil(f64(a))", "bf16[5]@-3:3"),
    /* half to even, like numpy and ONNX Round */
    CASE("round", NULL, "np.round(a)", "f32[6]=-2.5,-1.5,-0.5,0.5,1.5,2.5"),
    CASE("round", NULL, "np.round(a)", "f32[3]=nan,inf,-0.2"),
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int setup(void **state)
{
    (void)state;
    return cv_opstest_setup(cases, N_CASES, prelude);
}

static int teardown(void **state)
{
    (void)state;
    cv_opstest_teardown();
    return 0;
}

#define OP_TEST(op) \
    static void test_##op(void **state) { (void)state; cv_opstest_check(#op, 1); }
OP_TEST(sin) OP_TEST(cos) OP_TEST(tan) OP_TEST(asin) OP_TEST(acos) OP_TEST(atan) OP_TEST(sinh)
OP_TEST(cosh) OP_TEST(asinh) OP_TEST(acosh) OP_TEST(atanh) OP_TEST(floor) OP_TEST(ceil)
OP_TEST(round)

static void test_every_op_has_a_case(void **state)
{
    (void)state;
    for (int i = 0; i < cv_ops_math.count; i++) {
        const char *name = cv_ops_math.defs[i].name;
        int found = 0;
        for (int k = 0; k < N_CASES && !found; k++)
            found = strcmp(cases[k].tag, name) == 0;
        if (!found)
            fail_msg("op %s has no numpy case", name);
        assert_ptr_equal(cv_op_def_lookup(name), &cv_ops_math.defs[i]);
    }
}

/* The op ids passes and backends compare (CV_OP_IDS in ir.h) name ops of
 * the table, each its own entry; cv_op_is compares the entry, not a name. */
static void test_op_ids(void **state)
{
    (void)state;
#define CHECK_ID_(id, nm)                                                    \
    assert_non_null(cv_op_def_of(id));                                       \
    assert_ptr_equal(cv_op_def_of(id), cv_op_def_lookup(nm));                \
    assert_string_equal(cv_op_def_of(id)->name, nm);
    CV_OP_IDS(CHECK_ID_)
#undef CHECK_ID_
    assert_null(cv_op_def_of(CV_OP_ID__COUNT));
    cv_op op = {.def = cv_op_def_of(CV_OP_MUL), .name = "div"};
    assert_true(cv_op_is(&op, CV_OP_MUL));   /* identity, not the written name */
    assert_false(cv_op_is(&op, CV_OP_DIV));
    assert_false(cv_op_is(NULL, CV_OP_MUL));
    op.def = NULL;
    assert_false(cv_op_is(&op, CV_OP_MUL));
}

/* Float operands only; the result keeps the operand's type. */
static void test_infer(void **state)
{
    (void)state;
    const char *f[1] = {"f32[N:2,3]"}, *i[1] = {"i32[3]"}, *h[1] = {"f16[2]"};
    cv_opstest_expect_infer(0, "sin", NULL, f, 1, 1, "f32[N,3]");
    cv_opstest_expect_infer(1, "round", NULL, h, 1, 1, "f16[2]");
    cv_opstest_expect_infer(2, "floor", NULL, i, 1, 1, "CV4002");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sin), cmocka_unit_test(test_cos), cmocka_unit_test(test_tan),
        cmocka_unit_test(test_asin), cmocka_unit_test(test_acos), cmocka_unit_test(test_atan),
        cmocka_unit_test(test_sinh), cmocka_unit_test(test_cosh), cmocka_unit_test(test_asinh),
        cmocka_unit_test(test_acosh), cmocka_unit_test(test_atanh), cmocka_unit_test(test_floor),
        cmocka_unit_test(test_ceil), cmocka_unit_test(test_round),
        cmocka_unit_test(test_every_op_has_a_case), cmocka_unit_test(test_infer),
        cmocka_unit_test(test_op_ids),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
