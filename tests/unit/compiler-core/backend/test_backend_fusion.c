/* Fusion: elementwise chains run inside their producer's kernel (an
 * elementwise loop, a direct convolution, or the GEMM's epilogue).  Each
 * model checks the kernel count and the values against the interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

typedef struct fuse_case {
    const char *text;
    int kernels;        /* expected after fusion */
} fuse_case;

static const fuse_case cases[] = {
    /* consecutive elementwise ops (with broadcast operands and a cast) */
    {"cuir 1\nmodel @ew(%x: f32[N,8], %y: f32[N,8], %z: f32[8]) -> (f16[N,8]) {\n"
     "  %0 = add(%x, %y) : f32[N,8]\n  %1 = relu(%0) : f32[N,8]\n"
     "  %2 = mul(%z, %1) : f32[N,8]\n  %3 = cast(%2) {to=f16} : f16[N,8]\n  return %3\n}\n", 1},
    /* conv + residual add + relu in the GEMM epilogue */
    {"cuir 1\nmodel @res(%x: f32[1,4,6,6], %w: f32[4,4,3,3], %b: f32[4]) -> (f32[1,4,6,6]) {\n"
     "  %0 = conv2d(%x, %w, %b) {pad=[1,1]} : f32[1,4,6,6]\n  %1 = add(%0, %x) : f32[1,4,6,6]\n"
     "  %2 = relu(%1) : f32[1,4,6,6]\n  return %2\n}\n", 1},
    /* depthwise conv + clip (relu6) in the direct loop */
    {"cuir 1\nmodel @dw(%x: f32[N,3,5,5], %w: f32[3,1,3,3]) -> (f32[N,3,5,5]) {\n"
     "  %0 = conv2d(%x, %w) {pad=[1,1], groups=3} : f32[N,3,5,5]\n"
     "  %1 = clip(%0) {min=0, max=0.5} : f32[N,3,5,5]\n  return %1\n}\n", 1},
    /* gemm + relu; matmul + add + clip */
    {"cuir 1\nmodel @mm(%a: f32[N,6], %w: f32[5,6], %c: f32[3,4,6], %d: f32[6,7], %e: f32[3,4,7])"
     " -> (f32[N,5], f32[3,4,7]) {\n"
     "  %0 = gemm(%a, %w) {trans_b=1} : f32[N,5]\n  %1 = relu(%0) : f32[N,5]\n"
     "  %2 = matmul(%c, %d) : f32[3,4,7]\n  %3 = add(%e, %2) : f32[3,4,7]\n"
     "  %4 = clip(%3) {min=-0.5, max=0.5} : f32[3,4,7]\n  return %1, %4\n}\n", 2},
    /* x * sigmoid(x) becomes silu, x * hard_sigmoid(x) {1/6, 1/2} hard_swish
     * (norm_fuse.c), each then the runtime epilogue's activation: an
     * implicit-GEMM conv (+ residual) with SiLU, a depthwise conv with
     * hard-swish, a gemm with silu (issue 30) */
    {"cuir 1\nmodel @silu(%x: f32[1,8,9,9], %w: f32[24,8,3,3], %b: f32[24], %r: f32[1,24,9,9])"
     " -> (f32[1,24,9,9]) {\n"
     "  %0 = conv2d(%x, %w, %b) {pad=[1,1]} : f32[1,24,9,9]\n  %1 = add(%0, %r) : f32[1,24,9,9]\n"
     "  %2 = sigmoid(%1) : f32[1,24,9,9]\n  %3 = mul(%1, %2) : f32[1,24,9,9]\n  return %3\n}\n", 1},
    {"cuir 1\nmodel @hswish(%x: f32[N,3,7,7], %w: f32[3,1,3,3]) -> (f32[N,3,7,7]) {\n"
     "  %0 = conv2d(%x, %w) {pad=[1,1], groups=3} : f32[N,3,7,7]\n"
     "  %1 = hard_sigmoid(%0) {alpha=0.16666667, beta=0.5} : f32[N,3,7,7]\n"
     "  %2 = mul(%1, %0) : f32[N,3,7,7]\n  return %2\n}\n", 1},
    {"cuir 1\nmodel @gsilu(%a: f32[N,6], %w: f32[37,6]) -> (f32[N,37]) {\n"
     "  %0 = gemm(%a, %w) {trans_b=1} : f32[N,37]\n  %1 = silu(%0) : f32[N,37]\n"
     "  return %1\n}\n", 1},
    /* hard_sigmoid with other constants stays itself: two kernels */
    {"cuir 1\nmodel @hsig(%x: f32[N,3,7,7], %w: f32[3,1,3,3]) -> (f32[N,3,7,7]) {\n"
     "  %0 = conv2d(%x, %w) {pad=[1,1], groups=3} : f32[N,3,7,7]\n"
     "  %1 = hard_sigmoid(%0) {alpha=0.2, beta=0.5} : f32[N,3,7,7]\n"
     "  %2 = mul(%1, %0) : f32[N,3,7,7]\n  return %2\n}\n", 2},
    /* the other operand comes from a later op: only the second conv fuses */
    {"cuir 1\nmodel @late(%x: f32[1,2,4,4], %w: f32[2,2,1,1], %v: f32[2,2,1,1]) -> (f32[1,2,4,4]) {\n"
     "  %0 = conv2d(%x, %w) : f32[1,2,4,4]\n  %1 = conv2d(%x, %v) : f32[1,2,4,4]\n"
     "  %2 = add(%0, %1) : f32[1,2,4,4]\n  %3 = relu(%2) : f32[1,2,4,4]\n  return %3\n}\n", 2},
    /* a returned or twice-used intermediate is not fused away */
    {"cuir 1\nmodel @kept(%x: f32[6], %y: f32[6]) -> (f32[6], f32[6]) {\n"
     "  %0 = sub(%x, %y) : f32[6]\n  %1 = exp(%0) : f32[6]\n  %2 = mul(%0, %0) : f32[6]\n"
     "  %3 = sigmoid(%1) : f32[6]\n  return %3, %2\n}\n", 3},
    /* pooling is not a producer the chain fits: lowered on its own */
    {"cuir 1\nmodel @pool(%x: f32[1,2,4,4]) -> (f32[1,2,2,2]) {\n"
     "  %0 = max_pool2d(%x) {kernel=[2,2], stride=[2,2]} : f32[1,2,2,2]\n"
     "  %1 = neg(%0) : f32[1,2,2,2]\n  return %1\n}\n", 2},
};

static void make_inputs(const cv_func *f, cv_tensor *ins)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].sym ? 3 : t->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims), 0);
        cv_npref_fill(&ins[i], (uint64_t)(i + 5), -1, 1);
    }
}

static void check_case(const fuse_case *fc)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(fc->text, strlen(fc->text), "fusion.cuir", &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    const cv_func *f = m->funcs[0];
    cv_tensor ins[8] = {{0}}, want[4] = {{0}}, got[4] = {{0}};
    make_inputs(f, ins);
    assert_int_equal(cv_interp_run(f, ins, f->n_inputs, want, &d), 0);
    char *dir = cv_tmpdir_make("fusion");
    cv_compile_opts o = {.target = "native", .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = dir};
    cv_compile_info info;
    cv_native *n = NULL;
    if (cv_compile_native(m, &o, &info, &d) || cv_native_open(dir, 2, &n, &d) ||
        cv_native_run(n, ins, f->n_inputs, got, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("@%s does not compile or run", f->name);
    }
    if (info.n_kernels != fc->kernels)
        fail_msg("@%s: %d kernels, want %d", f->name, info.n_kernels, fc->kernels);
    char msg[512];
    for (int i = 0; i < f->n_returns; i++) {
        double rtol = want[i].dtype == CV_F16 ? 1e-3 : 1e-4, atol = want[i].dtype == CV_F16 ? 1e-3 : 1e-5;
        if (cv_npref_compare(&got[i], &want[i], rtol, atol, msg, sizeof msg))
            fail_msg("@%s output %d: %s", f->name, i, msg);
        cv_tensor_free(&got[i]);
        cv_tensor_free(&want[i]);
    }
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_native_close(n);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    cv_module_free(m);
}

static void test_fusion(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
