/* Cross targets: a model of many ops compiled for aarch64-linux-gnu and
 * riscv64-linux-gnu (rv64gcv), its static library linked into a small
 * driver by Debian's cross gcc and run under qemu-user; the outputs must
 * match the interpreter's.  LeNet (examples/models, with generated
 * weights) runs on RISC-V, resnet18 (the torchvision export) on AArch64
 * against PyTorch's output (about a minute of emulation, in parallel with
 * the other test binaries; CUVIL_CROSS_RESNET18=0 leaves it out).
 * Skipped (with the reason) where the cross toolchain or qemu is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "common/npy.h"
#include "tests/support/pyrun.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/cross_testlib.h"

static const bk_case mix[] = {
    BK("conv2d", "pad=[1,1] stride=[2,1]", "f32[2,3,9,8] @-0.5:0.5", "f32[5,3,3,3]", "f32[5]"),
    BK("conv2d", "groups=4 pad=[1,1,1,1]", "f32[1,4,6,6]", "f32[4,1,3,3]", "f32[4]"),
    BK("gemm", "trans_b=1", "f32[N:3,40] @-0.5:0.5", "f32[20,40] @-0.5:0.5", "f32[20]"),
    BK("matmul", NULL, "f32[2,7,9]", "f32[9,5]"),
    BK("softmax", NULL, "f32[4,10]"),
    BK("log_softmax", "axis=0", "f32[6,3]"),
    BK("max_pool2d", "kernel=[3,3] stride=[2,2] pad=[1,1]", "f32[1,3,8,8]"),
    BK("avg_pool2d", "kernel=[2,2] stride=[2,2]", "f32[2,2,6,6]"),
    BK("global_avg_pool", NULL, "f32[2,3,5,5]"),
    BK("add", NULL, "f32[N:3,4,5]", "f32[5]"),
    BK("relu", NULL, "f32[33]"),
    BK("sigmoid", NULL, "f32[17]"),
    BK("tanh", NULL, "f32[9]"),
    BK("erf", NULL, "f32[9]"),
    BK("div", NULL, "i32[8]", "i32[8] =0,1,-1,3,-3,7,0,2"),
    BK("cast", "to=f16", "f32[6] =1,0.1,65504,70000,-3.14159,1e-6"),
    BK("cast", "to=u8", "f32[5] =-1,256,255.5,3.7,nan"),
    BK("reduce_mean", "axes=[1]", "f32[3,8,4]"),
    BK("argmax", "axis=1", "f32[3,6]"),
    BK("batch_norm", NULL, "f32[2,3,4,4]", "f32[3]", "f32[3]", "f32[3]", "f32[3] @0.1:2"),
    BK("layer_norm", NULL, "f32[3,16]", "f32[16]", "f32[16]"),
    BK("transpose", "perm=[0,2,1]", "f32[2,3,4]"),
    BK("concat", "axis=1", "f32[2,3]", "f32[2,5]"),
    BK("gather", "axis=1", "f32[2,6,3]", "i64[2] =5,-2"),
    BK("pad", "pads=[1,2,0,1] mode=reflect", "f32[3,4]"),
    BK("resize", "scales=[1,1,2,2] mode=linear", "f32[1,2,3,3]"),
    BK("quantize_linear", NULL, "f32[2,8] @-300:300", "f32[] =2.5"),
};

static void check_mix(const xc_target *t)
{
    if (!xc_available(t))
        skip();
    char msg[4096] = "";
    bk_model b;
    int n = (int)(sizeof mix / sizeof mix[0]);
    if (bk_build(&b, "mix", mix, n, msg, sizeof msg))
        fail_msg("%s", msg);
    cv_tensor want[BK_MAX_CASES] = {{0}}, got[BK_MAX_CASES] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(b.m->funcs[0], b.ins, b.n_ins, want, &d), 0);
    if (xc_run(t, b.m, 2, b.ins, b.n_ins, want, n, got, msg, sizeof msg))
        fail_msg("%s", msg);
    if (bk_compare(mix, n, got, want, msg, sizeof msg))
        fail_msg("%s: %s", t->name, msg);
    printf("%s: %d cases match the interpreter under %s\n", t->name, n, t->qemu);
    for (int i = 0; i < n; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    cv_diag_free(&d);
    bk_model_free(&b);
}

/* LeNet from examples/models with weights written by gen_weights.py, on a
 * batch of 3, against the interpreter (rtol 1e-4, atol 1e-5). */
static void check_lenet(const xc_target *t)
{
    if (!xc_available(t))
        skip();
    if (!cv_pyrun_has_module("numpy")) {
        printf("skipping lenet: python3-numpy (gen_weights.py) is not installed\n");
        skip();
    }
    char *dir = cv_tmpdir_make("cross-lenet"), script[1024], src[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    snprintf(src, sizeof src, "%s/examples/models/lenet.cvl.py", cv_tmpdir_src_root());
    const char *args[] = {script, dir, "lenet", NULL};
    assert_int_equal(cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + sys.argv[2:]\n"
                              "runpy.run_path(path, run_name='__main__')\n", args, NULL), 0);
    size_t len;
    char *text = cv_tmpdir_read_file(src, &len);
    assert_non_null(text);
    assert_int_equal(cv_tmpdir_write(dir, "lenet.cvl.py", text, len), 0);
    free(text);
    char *path = cv_tmpdir_path(dir, "lenet.cvl.py");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    int64_t dims[4] = {3, 1, 28, 28};
    cv_tensor in, want = {0}, got = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, 4, dims), 0);
    cv_npref_fill(&in, 5, -1, 1);
    assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &want, &d), 0);
    char msg[4096] = "";
    if (xc_run(t, m, 2, &in, 1, &want, 1, &got, msg, sizeof msg))
        fail_msg("%s", msg);
    if (cv_npref_compare(&got, &want, 1e-4, 1e-5, msg, sizeof msg))
        fail_msg("lenet on %s: %s", t->name, msg);
    printf("%s: lenet (batch 3) matches the interpreter under %s\n", t->name, t->qemu);
    cv_tensor_free(&in);
    cv_tensor_free(&want);
    cv_tensor_free(&got);
    cv_module_free(m);
    cv_diag_free(&d);
    free(path);
    cv_tmpdir_remove(dir);
}

/* resnet18 (the torchvision export of make's test data) against PyTorch's
 * output, max abs error 1e-4. */
static void check_resnet18(const xc_target *t)
{
    const char *off = getenv("CUVIL_CROSS_RESNET18");
    if (off && strcmp(off, "0") == 0) {
        printf("skipping resnet18 on %s (CUVIL_CROSS_RESNET18=0)\n", t->name);
        skip();
    }
    if (!xc_available(t))
        skip();
    const char *build = getenv("CUVIL_BUILD");
    char onnx[4096], in_path[4096], out_path[4096];
    snprintf(onnx, sizeof onnx, "%s/models/resnet18.onnx", build ? build : "build");
    snprintf(in_path, sizeof in_path, "%s/models/resnet18.input.npy", build ? build : "build");
    snprintf(out_path, sizeof out_path, "%s/models/resnet18.output.npy", build ? build : "build");
    if (access(onnx, R_OK) || access(in_path, R_OK) || access(out_path, R_OK)) {
        printf("skipping resnet18 on %s: %s is missing (python3-torch exports it)\n", t->name, onnx);
        skip();
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(onnx, 0, &d);
    assert_non_null(m);
    cv_npy x, y;
    assert_int_equal(cv_npy_read(in_path, &x, &d), 0);
    assert_int_equal(cv_npy_read(out_path, &y, &d), 0);
    cv_tensor in, want, got = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, x.rank, x.dims), 0);
    assert_int_equal(cv_tensor_alloc(&want, CV_F32, y.rank, y.dims), 0);
    memcpy(in.data, x.data, x.nbytes);
    memcpy(want.data, y.data, y.nbytes);
    char msg[4096] = "";
    if (xc_run(t, m, 2, &in, 1, &want, 1, &got, msg, sizeof msg))
        fail_msg("%s", msg);
    double max_err = 0;
    for (int64_t i = 0; i < got.numel; i++) {
        double e = fabs(cv_tensor_get(&got, i) - cv_tensor_get(&want, i));
        max_err = e > max_err || isnan(e) ? e : max_err;
    }
    printf("%s: resnet18 under %s, max abs error vs PyTorch %.3g\n", t->name, t->qemu, max_err);
    assert_true(max_err <= 1e-4);
    cv_tensor_free(&in);
    cv_tensor_free(&want);
    cv_tensor_free(&got);
    cv_npy_free(&x);
    cv_npy_free(&y);
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_aarch64(void **state) { check_mix(&xc_aarch64); }
static void test_riscv64(void **state) { check_mix(&xc_riscv64); }
static void test_lenet_riscv64(void **state) { check_lenet(&xc_riscv64); }
static void test_resnet18_aarch64(void **state) { check_resnet18(&xc_aarch64); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_riscv64),
        cmocka_unit_test(test_lenet_riscv64),
        cmocka_unit_test(test_resnet18_aarch64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
