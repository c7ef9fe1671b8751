/* Elementwise and activation ops: interpreter results against NumPy computed
 * at test time (one Python run for the whole file), plus the shape
 * functions' types and error codes. */
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

/* Helpers for the expected values.  Float references are computed in
 * float64 where NumPy's own f16/f32 chains would add rounding of their own. */
static const char prelude[] =
    "def f64(x): return np.asarray(x).astype(np.float64)\n"
    "def tdiv(a, b):\n"
    "    a64, b64 = a.astype(np.int64), b.astype(np.int64)\n"
    "    q = np.abs(a64) // np.where(b64 == 0, 1, np.abs(b64)) * np.sign(a64) * np.sign(b64)\n"
    "    return np.where(b64 == 0, 0, q).astype(a.dtype)\n"
    "def sigmoid(x): return 1 / (1 + np.exp(-f64(x)))\n"
    "def gelu(x): x = f64(x); return 0.5 * x * (1 + erf(x / math.sqrt(2)))\n"
    "def gelu_tanh(x):\n"
    "    x = f64(x); return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))\n"
    "def bf16(x):\n"
    "    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)\n"
    "    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000\n"
    "    return u.astype(np.uint32).view(np.float32)\n";

#define CASE CV_OPCASE
#define CASE_TOL CV_OPCASE_TOL

static const cv_npref_opcase cases[] = {
    /* binary arithmetic */
    CASE("add", NULL, "a + b", "f32[N:2,3]", "f32[3]"),
    CASE("add", NULL, "a + b", "i32[2,1,4]", "i32[3,1]"),
    CASE("add", NULL, "a + b", "u8[5]=250,251,252,253,254", "u8[5]=10,1,2,3,4"),
    CASE("add", NULL, "a + b", "i64[2]=9007199254740993,-5", "i64[2]=2,1"),
    CASE("add", NULL, "a + b", "f16[4]", "f16[4]"),
    CASE("add", NULL, "a + b", "bf16[3]", "bf16[1]"),
    CASE("add", NULL, "a + b", "f32[0,3]", "f32[1]"),
    CASE("sub", NULL, "a - b", "f32[2,3,4]", "f32[3,1]"),
    CASE("sub", NULL, "a - b", "i8[3]=-128,100,0", "i8[3]=1,-100,0"),
    CASE("mul", NULL, "a * b", "f32[2,3]", "f32[]"),
    CASE("mul", NULL, "a * b", "i64[2]=4611686018427387904,3", "i64[2]=4,-3"),
    CASE("div", NULL, "a / b", "f32[B:3,4]", "f32[4]@0.5:3"),
    CASE("div", NULL, "tdiv(a, b)", "i32[7]=7,-7,7,-7,0,5,-2147483648", "i32[7]=2,2,-2,-2,3,0,-1"),
    CASE("div", NULL, "tdiv(a, b)", "i8[4]=-128,100,-9,9", "i8[4]=-1,7,4,-4"),
    CASE("pow", NULL, "np.power(a, b)", "f32[2,3]@0.5:2", "f32[3]@-2:2"),
    CASE("pow", NULL, "np.power(a, b)", "i32[6]@-4:4", "i32[6]@0:5"),
    CASE("pow", NULL, "np.power(a, b)", "i64[3]=3,-2,7", "i64[3]=39,63,22"),
    CASE("pow", NULL, "np.power(f64(a), b)", "f32[4]@0.5:2", "i32[4]@-3:3"),
    CASE("pow", NULL, "np.trunc(np.power(f64(a), f64(b)))", "i32[4]@1:9", "f32[4]@0:2"),
    /* min / max (variadic) */
    CASE("min", NULL, "np.minimum(np.minimum(a, b), c)", "f32[2,3]", "f32[3]", "f32[2,1]"),
    CASE("min", NULL, "np.minimum(a, b)", "i64[4]", "i64[4]"),
    CASE("min", NULL, "np.minimum(a, b)", "f32[3]=nan,1,2", "f32[3]=0,nan,3"),
    CASE("min", NULL, "a", "i8[2,2]"),
    CASE("max", NULL, "np.maximum(np.maximum(a, b), c)", "f32[N:2,3]", "f32[1,3]", "f32[]"),
    CASE("max", NULL, "np.maximum(a, b)", "u8[5]", "u8[5]"),
    CASE("max", NULL, "np.maximum(a, b)", "f32[3]=nan,1,2", "f32[3]=0,nan,3"),
    /* comparisons */
    CASE("equal", NULL, "a == b", "i32[2,3]@0:2", "i32[3]@0:2"),
    CASE("equal", NULL, "a == b", "f32[3]=nan,1,2", "f32[3]=nan,1,3"),
    CASE("equal", NULL, "a == b", "bool[4]", "bool[4]"),
    CASE("equal", NULL, "a == b", "i64[2]=9007199254740993,1", "i64[2]=9007199254740992,1"),
    CASE("less", NULL, "a < b", "f32[2,3]", "f32[2,1]"),
    CASE("less", NULL, "a < b", "u8[4]", "u8[4]"),
    CASE("less", NULL, "a < b", "f32[2]=nan,1", "f32[2]=1,nan"),
    CASE("greater", NULL, "a > b", "i64[N:3,2]", "i64[2]"),
    CASE("greater", NULL, "a > b", "f16[5]", "f16[5]"),
    /* where */
    CASE("where", NULL, "np.where(a, b, c)", "bool[2,1]", "f32[3]", "f32[2,3]"),
    CASE("where", NULL, "np.where(a, b, c)", "bool[4]", "i64[4]=9007199254740993,1,2,3", "i64[]=-1"),
    CASE("where", NULL, "np.where(a, b, c)", "bool[]=1", "bf16[2]", "bf16[2]"),
    /* cast */
    CASE("cast", "to=i32", "a.astype(np.int32)", "f32[6]@-100:100"),
    CASE("cast", "to=u8", "a.astype(np.uint8)", "f32[4]=0.5,1.9,254.9,3.2"),
    CASE("cast", "to=i8", "a.astype(np.int8)", "i32[8]@-300:300"),
    CASE("cast", "to=bool", "a.astype(bool)", "f32[4]=0,1.5,-0,nan"),
    CASE("cast", "to=f32", "a.astype(np.float32)", "i64[3]=16777217,-3,123456789"),
    CASE("cast", "to=f16", "a.astype(np.float16)", "f32[5]"),
    CASE_TOL("cast", "to=bf16", "bf16(a)", 1e-30, "f32[6]"),
    CASE("cast", "to=f32", "a.astype(np.float32)", "bool[3]"),
    CASE("cast", "to=i64", "a.astype(np.int64)", "i32[3]=-2147483648,0,7"),
    CASE("cast", "to=f32", "a.astype(np.float32)", "f16[4]"),
    CASE("cast", "to=i32", "a.astype(np.int32)", "u8[3]=0,128,255"),
    /* unary */
    CASE("neg", NULL, "-a", "f32[2,3]"),
    CASE("neg", NULL, "-a", "i8[3]=-128,5,-7"),
    CASE("neg", NULL, "-a", "i64[2]=9007199254740993,-1"),
    CASE("abs", NULL, "np.abs(a)", "f32[4]"),
    CASE("abs", NULL, "np.abs(a)", "i8[3]=-128,5,-7"),
    CASE("abs", NULL, "np.abs(a)", "u8[3]"),
    CASE("relu", NULL, "np.maximum(a, 0)", "f32[N:2,3]"),
    CASE("relu", NULL, "np.maximum(a, 0)", "f32[3]=nan,-1,2"),
    CASE("relu", NULL, "np.maximum(a, 0)", "i32[5]"),
    CASE("sqrt", NULL, "np.sqrt(a)", "f32[6]@0:9"),
    CASE("sqrt", NULL, "np.sqrt(f64(a))", "f16[4]@0:9"),
    CASE("exp", NULL, "np.exp(f64(a))", "f32[2,3]"),
    CASE("exp", NULL, "np.exp(f64(a))", "bf16[4]"),
    CASE("log", NULL, "np.log(f64(a))", "f32[5]@0.01:10"),
    CASE("log", NULL, "np.log(f64(a))", "f32[2]=0,-1"),
    CASE("tanh", NULL, "np.tanh(f64(a))", "f32[6]"),
    CASE("erf", NULL, "erf(f64(a))", "f32[6]"),
    CASE("erf", NULL, "erf(f64(a))", "f16[4]"),
    CASE("sigmoid", NULL, "sigmoid(a)", "f32[8]@-20:20"),
    CASE("silu", NULL, "f64(a) * sigmoid(a)", "f32[8]@-10:10"),
    CASE("hard_sigmoid", NULL, "np.clip(0.2 * f64(a) + 0.5, 0, 1)", "f32[8]@-5:5"),
    CASE("hard_sigmoid", "alpha=0.5 beta=0.1", "np.clip(0.5 * f64(a) + 0.1, 0, 1)", "f32[8]@-5:5"),
    CASE("hard_swish", NULL, "f64(a) * np.clip(f64(a) / 6 + 0.5, 0, 1)", "f32[8]@-6:6"),
    CASE("leaky_relu", NULL, "np.where(a < 0, 0.01 * f64(a), a)", "f32[6]"),
    CASE("leaky_relu", "alpha=0.2", "np.where(a < 0, 0.2 * f64(a), a)", "f16[6]"),
    CASE("gelu", NULL, "gelu(a)", "f32[8]"),
    CASE("gelu", "approximate=none", "gelu(a)", "f32[2,2]"),
    CASE("gelu", "approximate=tanh", "gelu_tanh(a)", "f32[8]"),
    CASE("clip", "min=-1 max=1.5", "np.clip(a, -1, 1.5)", "f32[8]"),
    CASE("clip", "min=0", "np.maximum(a, 0)", "f32[8]"),
    CASE("clip", NULL, "a", "f32[3]=nan,-1e30,1e30"),
    CASE("clip", "min=2 max=1", "np.minimum(np.maximum(a, 2), 1)", "f32[4]"),
    CASE("clip", "min=-2.5 max=7.5", "np.clip(a, -2, 7)", "i32[8]"),
    CASE("clip", "min=-5 max=300", "a", "u8[8]"),
    CASE("clip", "min=300", "np.full(a.shape, 255, np.uint8)", "u8[2]"),
    CASE("clip", "max=5", "np.array([5, -9007199254740993], np.int64)", "i64[2]=9007199254740993,-9007199254740993"),
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int setup(void **state)
{
    return cv_opstest_setup(cases, N_CASES, prelude);
}

static int teardown(void **state)
{
    cv_opstest_teardown();
    return 0;
}

#define OP_TEST(op) \
    static void test_##op(void **state) { cv_opstest_check(#op, 1); }
OP_TEST(add) OP_TEST(sub) OP_TEST(mul) OP_TEST(div) OP_TEST(pow) OP_TEST(min) OP_TEST(max)
OP_TEST(equal) OP_TEST(less) OP_TEST(greater) OP_TEST(where) OP_TEST(cast)
OP_TEST(neg) OP_TEST(abs) OP_TEST(relu) OP_TEST(sqrt) OP_TEST(exp) OP_TEST(log) OP_TEST(tanh)
OP_TEST(erf) OP_TEST(sigmoid) OP_TEST(silu) OP_TEST(hard_sigmoid) OP_TEST(hard_swish)
OP_TEST(leaky_relu) OP_TEST(gelu) OP_TEST(clip)

/* Every op of both families has at least one NumPy case. */
static void test_every_op_has_a_case(void **state)
{
    const cv_op_family *fams[] = {&cv_ops_elementwise, &cv_ops_activation};
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < fams[f]->count; i++) {
            const char *name = fams[f]->defs[i].name;
            int found = 0;
            for (int k = 0; k < N_CASES && !found; k++)
                found = strcmp(cases[k].tag, name) == 0;
            if (!found)
                fail_msg("op %s has no numpy case", name);
            assert_non_null(cv_op_def_lookup(name));
            assert_non_null(fams[f]->defs[i].infer);
            assert_non_null(fams[f]->defs[i].eval);
        }
}

/* ---- shape functions: inferred types and error codes --------------------- */

typedef struct infer_case {
    const char *op, *attrs;
    const char *in[4];
    const char *want;   /* the inferred result type, or "CVnnnn" for the expected error */
} infer_case;

static const infer_case infer_cases[] = {
    /* symbolic broadcasting */
    {"add", NULL, {"f32[N:1,3]", "f32[3]"}, "f32[N,3]"},
    {"add", NULL, {"f32[N:1,1]", "f32[1,M:1]"}, "f32[N,M]"},
    {"mul", NULL, {"i32[2,1,4]", "i32[N:1,1]"}, "i32[2,N,4]"},
    {"pow", NULL, {"f16[3]", "i64[]"}, "f16[3]"},
    {"equal", NULL, {"f32[N:1]", "f32[1]"}, "bool[N]"},
    {"where", NULL, {"bool[N:1,1]", "i8[2]", "i8[]"}, "i8[N,2]"},
    {"max", NULL, {"f32[N:1]", "f32[4,1]", "f32[]"}, "f32[4,N]"},
    {"cast", "to=bf16", {"i64[N:1,2]"}, "bf16[N,2]"},
    {"gelu", "approximate=tanh", {"f32[N:1]"}, "f32[N]"},
    {"relu", NULL, {"i64[N:1,B:1]"}, "i64[N,B]"},
    {"add", NULL, {"f32[N:1,3]", "f32[M:1,3]"}, "CV3002"},
    {"add", NULL, {"f32[N:1]", "f32[3]"}, "CV3002"},
    {"sub", NULL, {"f32[2,3]", "f32[2]"}, "CV3002"},
    {"where", NULL, {"bool[4]", "f32[3]", "f32[3]"}, "CV3002"},
    {"min", NULL, {"f32[3]", "f32[3]", "f32[2]"}, "CV3002"},
    /* dtypes */
    {"add", NULL, {"f32[3]", "i32[3]"}, "CV2009"},
    {"add", NULL, {"bool[3]", "bool[3]"}, "CV4002"},
    {"less", NULL, {"bool[3]", "bool[3]"}, "CV4002"},
    {"max", NULL, {"f32[3]", "f16[3]"}, "CV2009"},
    {"sqrt", NULL, {"i32[3]"}, "CV4002"},
    {"neg", NULL, {"u8[3]"}, "CV4002"},
    {"leaky_relu", NULL, {"i8[3]"}, "CV4002"},
    {"where", NULL, {"f32[3]", "f32[3]", "f32[3]"}, "CV4002"},
    {"where", NULL, {"bool[3]", "f32[3]", "i32[3]"}, "CV2009"},
    /* attributes (schema checks run before the shape function) */
    {"gelu", "approximate=fast", {"f32[3]"}, "CV2017"},
    {"clip", "min=nan", {"f32[3]"}, "CV2017"},
    {"cast", NULL, {"f32[3]"}, "CV2006"},
    {"cast", "to=3", {"f32[3]"}, "CV2005"},
    {"leaky_relu", "alpha=big", {"f32[3]"}, "CV2005"},
    {"relu", "alpha=1", {"f32[3]"}, "CV2004"},
    /* operand counts */
    {"add", NULL, {"f32[3]", "f32[3]", "f32[3]"}, "CV2007"},
    {"max", NULL, {NULL}, "CV2007"},
};

static void test_infer(void **state)
{
    for (size_t i = 0; i < sizeof infer_cases / sizeof infer_cases[0]; i++) {
        const infer_case *c = &infer_cases[i];
        cv_opstest_expect_infer(i, c->op, c->attrs, c->in, 4, 1, c->want);
    }
}

/* The schemas the front ends are written against. */
static void test_schemas(void **state)
{
    const cv_op_def *d = cv_op_def_lookup("clip");
    assert_non_null(d);
    assert_int_equal(cv_op_def_attr(d, "min", NULL)->kind, CV_ATTR_FLOAT);
    assert_int_equal(cv_op_def_attr(d, "max", NULL)->kind, CV_ATTR_FLOAT);
    assert_int_equal(cv_op_def_attr(cv_op_def_lookup("cast"), "to", NULL)->kind, CV_ATTR_DTYPE);
    assert_true(cv_op_def_attr(cv_op_def_lookup("cast"), "to", NULL)->required);
    assert_int_equal(cv_op_def_attr(cv_op_def_lookup("gelu"), "approximate", NULL)->kind,
                     CV_ATTR_STRING);
    assert_int_equal(cv_op_def_attr(cv_op_def_lookup("leaky_relu"), "alpha", NULL)->kind,
                     CV_ATTR_FLOAT);
    assert_int_equal(cv_op_def_lookup("max")->max_operands, -1);
    assert_true(cv_op_def_lookup("add")->flags & CV_OPF_COMMUTATIVE);
    assert_true(cv_op_def_lookup("tanh")->flags & CV_OPF_ELEMENTWISE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add), cmocka_unit_test(test_sub), cmocka_unit_test(test_mul),
        cmocka_unit_test(test_div), cmocka_unit_test(test_pow), cmocka_unit_test(test_min),
        cmocka_unit_test(test_max), cmocka_unit_test(test_equal), cmocka_unit_test(test_less),
        cmocka_unit_test(test_greater), cmocka_unit_test(test_where), cmocka_unit_test(test_cast),
        cmocka_unit_test(test_neg), cmocka_unit_test(test_abs), cmocka_unit_test(test_relu),
        cmocka_unit_test(test_sqrt), cmocka_unit_test(test_exp), cmocka_unit_test(test_log),
        cmocka_unit_test(test_tanh), cmocka_unit_test(test_erf), cmocka_unit_test(test_sigmoid),
        cmocka_unit_test(test_silu), cmocka_unit_test(test_hard_sigmoid),
        cmocka_unit_test(test_hard_swish), cmocka_unit_test(test_leaky_relu),
        cmocka_unit_test(test_gelu), cmocka_unit_test(test_clip),
        cmocka_unit_test(test_every_op_has_a_case),
        cmocka_unit_test(test_infer),
        cmocka_unit_test(test_schemas),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
