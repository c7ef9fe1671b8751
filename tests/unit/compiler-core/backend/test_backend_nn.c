/* Native code for matrix products, convolutions and pooling, checked
 * against the interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

static const bk_case products[] = {
    BK("matmul", NULL, "f32[3,4]", "f32[4,5]"),
    BK("matmul", NULL, "f32[2,1,3,4]", "f32[5,4,2]"),
    BK("matmul", NULL, "f32[4]", "f32[4,3]"),
    BK("matmul", NULL, "f32[3,4]", "f32[4]"),
    BK("matmul", NULL, "f32[2,3,4]", "f32[4]"),
    BK("matmul", NULL, "f32[4]", "f32[2,4,3]"),
    BK("matmul", NULL, "f32[N:2,3,4]", "f32[4,5]"),
    /* Long sums: small values keep f32 accumulation within 1e-4 of fp64. */
    BK("matmul", NULL, "f32[37,300] @-0.5:0.5", "f32[300,45] @-0.5:0.5"),
    BK("matmul", NULL, "f32[2,70,33]", "f32[2,33,130]"),
    BK("matmul", NULL, "i32[2,3]", "i32[3,2]"),
    BK("matmul", NULL, "f16[2,3,8]", "f16[1,8,2]"),
    BK("gemm", "alpha=0.5 beta=2", "f32[3,4]", "f32[4,5]", "f32[5]"),
    BK("gemm", "trans_a=1 trans_b=1", "f32[4,3]", "f32[5,4]", "f32[3,1]"),
    BK("gemm", "trans_b=1 alpha=-1.5", "f32[2,3]", "f32[4,3]"),
    BK("gemm", "beta=0.25", "f32[3,2]", "f32[2,4]", "f32[]"),
    BK("gemm", NULL, "f32[N:3,6]", "f32[6,2]", "f32[1,2]"),
    BK("gemm", "trans_b=1", "f32[65,513] @-0.5:0.5", "f32[100,513] @-0.5:0.5", "f32[100]"),
    BK("gemm", NULL, "f32[5,4]", "f32[4,3]", "f32[5,3]"),
    BK("gemm", "beta=3", "i32[2,3]", "i32[3,4]", "i32[4]"),
};

static const bk_case convs[] = {
    BK("conv2d", NULL, "f32[1,3,8,8]", "f32[4,3,3,3]", "f32[4]"),
    BK("conv2d", "stride=[2,2] pad=[1,0,2,1]", "f32[2,3,9,8]", "f32[5,3,3,2]", "f32[5]"),
    BK("conv2d", "dilation=[2,1] pad=[2,1]", "f32[1,2,9,7]", "f32[3,2,3,3]"),
    BK("conv2d", "groups=2 stride=[1,2]", "f32[2,4,7,7]", "f32[6,2,3,3]"),
    BK("conv2d", "groups=4 pad=[1,1,1,1]", "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),
    BK("conv2d", "groups=3 stride=[2,2] dilation=[2,2] pad=[2,2,1,1]", "f32[1,3,11,10]",
       "f32[6,1,3,3]", "f32[6]"),
    BK("conv2d", "stride=[1,2]", "f32[N:3,2,5,5]", "f32[3,2,2,2]"),
    BK("conv2d", NULL, "f32[N:2,3,H:5,W:4]", "f32[2,3,1,1]", "f32[2]"),
    BK("conv2d", "pad=[1,1]", "f16[1,2,5,5]", "f16[2,2,3,3]"),
    BK("conv2d", "stride=[3,3] pad=[0,2,1,0]", "f32[2,2,10,9]", "f32[3,2,2,2]", "f32[3]"),
    BK("conv2d", "pad=[3,3] stride=[2,2]", "f32[1,3,30,30] @-0.5:0.5", "f32[70,3,7,7] @-0.5:0.5",
       "f32[70]"),
    BK("conv2d", NULL, "f32[1,300,7,7] @-0.5:0.5", "f32[20,300,1,1] @-0.5:0.5", "f32[20]"),
    BK("conv_transpose2d", NULL, "f32[1,2,4,4]", "f32[2,3,3,3]", "f32[3]"),
    BK("conv_transpose2d", "stride=[2,2] pad=[1,1,1,1] output_padding=[1,1]", "f32[2,3,4,5]",
       "f32[3,2,3,3]", "f32[2]"),
    BK("conv_transpose2d", "groups=2 dilation=[2,2]", "f32[1,4,3,3]", "f32[4,1,2,2]"),
    BK("conv_transpose2d", "stride=[2,1] pad=[0,1,1,0]", "f32[1,2,3,4]", "f32[2,2,3,3]"),
    BK("conv_transpose2d", "groups=3 stride=[3,3] output_padding=[2,1]", "f32[N:2,3,2,2]",
       "f32[3,2,3,3]", "f32[6]"),
};

static const bk_case pools[] = {
    BK("max_pool2d", "kernel=[2,2] stride=[2,2]", "f32[2,3,8,8]"),
    BK("max_pool2d", "kernel=[3,3] pad=[1,1]", "f32[1,2,5,6]"),
    BK("max_pool2d", "kernel=[2,3] dilation=[2,2] stride=[1,2]", "f32[1,2,7,9]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1", "f32[1,2,8,7]"),
    BK("max_pool2d", "kernel=[3,2] stride=[2,2] pad=[0,1,2,0]", "f32[1,2,7,7]"),
    BK("max_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", "i8[1,3,5,5]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2]", "f32[N:2,3,7,7]"),
    BK("avg_pool2d", "kernel=[2,2] stride=[2,2]", "f32[2,3,6,6]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "f32[1,2,7,6]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] count_include_pad=1", "f32[1,2,7,6]"),
    BK("avg_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1] ceil_mode=1 count_include_pad=1",
       "f32[1,2,6,8]"),
    BK("avg_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", "f32[1,2,5,5]"),
    BK("avg_pool2d", "kernel=[3,2] stride=[1,2] pad=[1,0,0,1]", "f32[1,2,6,5]"),
    BK("avg_pool2d", "kernel=[3,2] stride=[1,2] pad=[1,0,0,1] count_include_pad=1", "f32[1,2,6,5]"),
    BK("avg_pool2d", "kernel=[2,2]", "f32[N:2,1,4,4]"),
    BK("global_avg_pool", NULL, "f32[2,3,4,5]"),
    BK("global_avg_pool", NULL, "f32[2,3,7]"),
    BK("global_avg_pool", NULL, "f32[N:2,2,3,2,2]"),
};

static const bk_case resizes[] = {
    BK("resize", "scales=[1,1,2,2]", "f32[1,2,3,3]"),
    BK("resize", "sizes=[1,2,6,7] coordinate_transformation_mode=asymmetric nearest_mode=floor",
       "f32[1,2,3,4]"),
    BK("resize", "scales=[1,1,2,2] mode=linear", "f32[1,2,3,3]"),
    BK("resize", "sizes=[5,3] mode=linear coordinate_transformation_mode=align_corners",
       "f32[N:2,4,6]"),
    BK("resize", "scales=[1,1,0.5,1.5] mode=linear coordinate_transformation_mode=pytorch_half_pixel",
       "f32[1,3,8,4]"),
    BK("resize", "scales=[2,3] nearest_mode=round_prefer_ceil", "i32[3,2]"),
    BK("resize", "sizes=[1,1,4,5] nearest_mode=ceil", "u8[1,1,7,3]"),
};

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

static void check(const char *name, const bk_case *c, int n, int threads)
{
    char msg[2048] = "";
    if (bk_check(name, c, n, threads, msg, sizeof msg))
        fail_msg("%s", msg);
}

static void test_products(void **state) { check("prod", products, N_OF(products), 2); }
static void test_products_1t(void **state) { check("prod1", products, N_OF(products), 1); }
static void test_convs(void **state) { check("conv", convs, N_OF(convs), 2); }
static void test_pools(void **state) { check("pool", pools, N_OF(pools), 2); }
static void test_resize(void **state) { check("resize", resizes, N_OF(resizes), 2); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_products),
        cmocka_unit_test(test_products_1t),
        cmocka_unit_test(test_convs),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_resize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
