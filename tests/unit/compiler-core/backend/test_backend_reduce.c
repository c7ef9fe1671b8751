/* Native code for reductions, softmax, normalisations and (de)quantisation,
 * checked against the interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

static const bk_case reductions[] = {
    BK("reduce_sum", NULL, "f32[3,4,5]"),
    BK("reduce_sum", "axes=[1]", "f32[N:2,7,5]"),
    BK("reduce_sum", "axes=[-1] keepdims=0", "f32[4,33]"),
    BK("reduce_sum", "axes=[0,2]", "f32[3,4,5]"),
    BK("reduce_sum", "axes=[0]", "i32[6,3]"),
    BK("reduce_sum", "axes=[1]", "f16[3,6,2]"),
    BK("reduce_mean", "axes=[1]", "f32[2,9,4]"),
    BK("reduce_mean", "axes=[2,3]", "f32[N:2,3,4,5]"),
    BK("reduce_mean", "axes=[0]", "i64[4,3] =7,-7,1,2,3,4,5,6,7,8,9,10"),
    BK("reduce_mean", "axes=[1] keepdims=0", "i32[3,4]"),
    BK("reduce_max", "axes=[1]", "f32[4,6] =1,nan,3,4,5,6"),
    BK("reduce_max", "axes=[0] keepdims=0", "f32[5,3]"),
    BK("reduce_max", NULL, "i8[4,4]"),
    BK("reduce_min", "axes=[-1]", "f32[3,8]"),
    BK("reduce_min", "axes=[0,1]", "u8[2,3,4]"),
    BK("reduce_min", "axes=[1]", "i32[3,0,2]"),
    BK("reduce_max", "axes=[1]", "f32[2,0]"),
    BK("argmax", NULL, "f32[5,3]"),
    BK("argmax", "axis=1 keepdims=0", "f32[3,6,2]"),
    BK("argmax", "axis=-1 select_last_index=1", "i32[4,5] @0:3"),
    BK("argmax", "axis=1", "f32[2,4] =1,nan,3,nan,2,2,1,0"),
    BK("argmax", "axis=1 select_last_index=1", "f32[2,4] =1,nan,3,nan,2,2,1,0"),
    BK("softmax", NULL, "f32[N:3,10]"),
    BK("softmax", "axis=1", "f32[2,5,3]"),
    BK("softmax", "axis=0", "f16[4,3]"),
    BK("softmax", NULL, "f32[2,4] =1,2,nan,4,-inf,0,1,2"),
    BK("log_softmax", NULL, "f32[4,7] @-20:20"),
    BK("log_softmax", "axis=1", "f32[2,3,4]"),
};

static const bk_case norms[] = {
    BK("batch_norm", NULL, "f32[2,3,4,5]", "f32[3]", "f32[3]", "f32[3]", "f32[3] @0.1:2"),
    BK("batch_norm", "epsilon=0.001", "f32[N:2,4]", "f32[4]", "f32[4]", "f32[4]", "f32[4] @0:1"),
    BK("batch_norm", NULL, "f16[1,2,3]", "f16[2]", "f16[2]", "f16[2]", "f16[2] @0.5:1"),
    BK("layer_norm", NULL, "f32[3,16]", "f32[16]", "f32[16]"),
    BK("layer_norm", "axis=1 epsilon=0.01", "f32[N:2,3,4]", "f32[3,4]"),
    BK("layer_norm", "axis=1", "f32[2,3,4]", "f32[1,4]", "f32[3,1]"),
    BK("quantize_linear", NULL, "f32[2,8] @-300:300", "f32[] =2.5"),
    BK("quantize_linear", NULL, "f32[8] =0.5,1.5,2.5,-0.5,-1.5,nan,1000,-1000", "f32[1] =1",
       "i8[1] =3"),
    BK("quantize_linear", "axis=1", "f32[2,3,4] @-10:10", "f32[3] =0.5,1,0.25", "u8[3] =10,128,0"),
    BK("dequantize_linear", NULL, "u8[6] @0:255", "f32[] =0.1", "u8[] =128"),
    BK("dequantize_linear", "axis=0", "i8[3,4] @-128:127", "f32[3] =1,0.5,2", "i8[3] =-1,0,5"),
    BK("dequantize_linear", NULL, "i32[5] @-1000:1000", "f32[1] =0.01"),
};

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

static void check(const char *name, const bk_case *c, int n, int threads)
{
    char msg[2048] = "";
    if (bk_check(name, c, n, threads, msg, sizeof msg))
        fail_msg("%s", msg);
}

static void test_reductions(void **state) { check("red", reductions, N_OF(reductions), 2); }
static void test_norms(void **state) { check("norms", norms, N_OF(norms), 1); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_norms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
