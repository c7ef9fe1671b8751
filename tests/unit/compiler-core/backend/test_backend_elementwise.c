/* Native code for the elementwise and activation ops: every case compiled
 * into one artifact per group, run through dlopen and compared with the
 * interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

static const bk_case arith[] = {
    BK("add", NULL, "f32[2,3]", "f32[2,3]"),
    BK("add", NULL, "f32[N:3,4,5]", "f32[5]"),
    BK("add", NULL, "f32[4,1,5]", "f32[1,3,1]"),
    BK("add", NULL, "i32[3,4]", "i32[4] =2147483647"),
    BK("add", NULL, "f16[2,5]", "f16[2,5]"),
    BK("add", NULL, "bf16[3,4]", "bf16[1]"),
    BK("sub", NULL, "f32[N:2,3]", "f32[N:2,3]"),
    BK("sub", NULL, "u8[6]", "u8[6] @0:255"),
    BK("mul", NULL, "f32[3,1]", "f32[1,4]"),
    BK("mul", NULL, "i64[5]", "i64[5]"),
    BK("div", NULL, "f32[4,4]", "f32[4,4] @0.5:3"),
    BK("div", NULL, "i32[8]", "i32[8] =0,1,-1,3,-3,7,0,2"),
    BK("div", NULL, "i64[2] =-9223372036854775808,5", "i64[2] =-1,-2"),
    BK("pow", NULL, "f32[6] @0.1:3", "f32[6]"),
    BK("pow", NULL, "f32[4] @0.1:2", "i64[1] =3"),
    BK("pow", NULL, "i64[6] =2,-3,0,1,-1,5", "i64[6] =10,3,0,-2,-3,2"),
    BK("pow", NULL, "i32[3] =2,3,4", "f32[3] =0.5,2,1.5"),
    BK("min", NULL, "f32[3,4]", "f32[4]", "f32[3,1]"),
    BK("max", NULL, "f32[5] =1,nan,3,-inf,0", "f32[5] =2,0,nan,1,-0"),
    BK("max", NULL, "i8[7]"),
    BK("min", NULL, "i32[2,3]", "i32[3]"),
    BK("equal", NULL, "i32[3,4] @0:2", "i32[4] @0:2"),
    BK("equal", NULL, "bool[6]", "bool[6]"),
    BK("equal", NULL, "f32[4] =1,nan,2,3", "f32[4] =1,nan,2.5,3"),
    BK("less", NULL, "f32[N:2,5]", "f32[5]"),
    BK("greater", NULL, "i64[5]", "i64[1]"),
    BK("where", NULL, "bool[3,4]", "f32[3,4]", "f32[4]"),
    BK("where", NULL, "bool[4]", "i64[2,4]", "i64[1]"),
    BK("where", NULL, "bool[2,1]", "bool[2,3]", "bool[3]"),
};

static const bk_case casts[] = {
    BK("cast", "to=i32", "f32[8] =1.5,-1.5,2.9,-2.9,nan,inf,-inf,3e10"),
    BK("cast", "to=i8", "f32[6] =300,-300,127.9,-128.9,0.5,nan"),
    BK("cast", "to=u8", "f32[5] =-1,256,255.5,3.7,nan"),
    BK("cast", "to=i8", "i64[5] =300,-129,127,255,-1"),
    BK("cast", "to=u8", "i32[4] =-1,256,511,7"),
    BK("cast", "to=f32", "i64[3] =16777217,-5,0"),
    BK("cast", "to=f16", "f32[6] =1,0.1,65504,70000,-3.14159,1e-6"),
    BK("cast", "to=bf16", "f32[5] =1,0.1,3.14159,-2.71828,1e30"),
    BK("cast", "to=f32", "f16[4]"),
    BK("cast", "to=bool", "f32[4] =0,-0,nan,2"),
    BK("cast", "to=i64", "bool[4] =0,1,1,0"),
    BK("cast", "to=f32", "bool[3] =1,0,1"),
    BK("cast", "to=i64", "f32[N:2,3]"),
};

static const bk_case activations[] = {
    BK("neg", NULL, "f32[3,4]"),
    BK("neg", NULL, "i32[4] =-2147483648,1,0,-5"),
    BK("abs", NULL, "f32[7]"),
    BK("abs", NULL, "i8[5] =-128,-1,0,5,127"),
    BK("relu", NULL, "f32[N:2,3,4]"),
    BK("relu", NULL, "f32[3] =nan,-1,1"),
    BK("relu", NULL, "i32[6]"),
    BK("sqrt", NULL, "f32[6] @0:9"),
    BK("exp", NULL, "f32[2,5]"),
    /* f32 exp and erf are inline polynomials (backend/llvm/lower_math.c):
     * the whole range, vector-wide, and the edges. */
    BK("exp", NULL, "f32[67] @-104:88.7"),
    BK("exp", NULL, "f32[12] =nan,inf,-inf,88.72,88.8,-87.3,-103,-120,0,-0,1e-8,0.5"),
    BK("erf", NULL, "f32[67] @-6:6"),
    BK("erf", NULL, "f32[9] =nan,inf,-inf,0,3.99,4.5,-5,1e-4,-0.7"),
    BK("sigmoid", NULL, "f32[6] =nan,inf,-inf,100,-100,0"),
    BK("log", NULL, "f32[8] @0.01:10"),
    BK("tanh", NULL, "f32[9]"),
    BK("erf", NULL, "f32[9]"),
    BK("sigmoid", NULL, "f32[3,3] @-10:10"),
    BK("silu", NULL, "f32[10]"),
    BK("hard_swish", NULL, "f32[12] @-5:5"),
    BK("leaky_relu", "alpha=0.2", "f32[8]"),
    BK("leaky_relu", NULL, "f16[8]"),
    BK("hard_sigmoid", "alpha=0.3 beta=0.4", "f32[9]"),
    BK("hard_sigmoid", NULL, "f32[3] =nan,10,-10"),
    BK("gelu", NULL, "f32[11]"),
    BK("gelu", "approximate=tanh", "f32[11]"),
    BK("clip", "min=-1 max=1.5", "f32[10]"),
    BK("clip", "min=2", "f32[3] =nan,1,3"),
    BK("clip", "min=-2.5 max=3.5", "i32[9]"),
    BK("clip", "min=-1000 max=1000", "i8[5] =-128,127,0,-5,9"),
    BK("clip", "min=2 max=1", "f32[4]"),
};

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

static void check(const char *name, const bk_case *c, int n, int threads)
{
    char msg[2048] = "";
    int rc = bk_check(name, c, n, threads, msg, sizeof msg);
    if (rc)
        fail_msg("%s", msg);
}

static void test_arith(void **state) { check("ew_arith", arith, N_OF(arith), 1); }
static void test_arith_threads(void **state) { check("ew_arith2", arith, N_OF(arith), 2); }
static void test_cast(void **state) { check("ew_cast", casts, N_OF(casts), 1); }
static void test_activations(void **state) { check("ew_act", activations, N_OF(activations), 2); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arith),
        cmocka_unit_test(test_arith_threads),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_activations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
