/* Whole models natively: the CU-IR examples against the interpreter (with a
 * symbolic batch, at 1 and 2 threads), byte-identical artifacts from two
 * compiles, and the torchvision exports against PyTorch when present. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/npy.h"
#include "compiler-core/frontends/onnx/onnx_import.h"
#include "tests/support/backend_testlib.h"

#define MAX_IO 8

static cv_module *load(const char *path)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return m;
}

/* Random inputs with every symbolic dim = batch. */
static int make_inputs(const cv_func *f, int64_t batch, cv_tensor *ins)
{
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].sym ? batch : t->shape.d[k].n;
        if (cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims))
            return -1;
        cv_npref_fill(&ins[i], (uint64_t)(i + 11), -1, 1);
    }
    return 0;
}

static void check_example(const char *file, int threads)
{
    char path[256];
    snprintf(path, sizeof path, "examples/cuir/%s", file);
    cv_module *m = load(path);
    assert_non_null(m);
    const cv_func *f = m->funcs[0];
    cv_tensor ins[MAX_IO] = {{0}}, want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}};
    assert_int_equal(make_inputs(f, 3, ins), 0);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(f, ins, f->n_inputs, want, &d), 0);
    char msg[2048] = "";
    if (bk_run_native(m, ins, f->n_inputs, threads, got, msg, sizeof msg))
        fail_msg("%s: %s", file, msg);
    for (int i = 0; i < f->n_returns; i++) {
        if (cv_npref_compare(&got[i], &want[i], 1e-4, 1e-5, msg, sizeof msg))
            fail_msg("%s output %d: %s", file, i, msg);
        cv_tensor_free(&got[i]);
        cv_tensor_free(&want[i]);
    }
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_diag_free(&d);
    cv_module_free(m);
}

static void test_mlp(void **state) { check_example("mlp.cuir", 1); }
static void test_tinycnn(void **state) { check_example("tinycnn.cuir", 2); }
static void test_residual(void **state) { check_example("residual.cuir", 2); }

/* Views (reshape, contiguous slices and split parts) feeding other ops,
 * a returned view, a returned input, one value returned twice. */
static const char views_cuir[] =
    "cuir 1\n"
    "model @views(%x: f32[N,4,6], %y: f32[6], %z: f32[5,6]) -> "
    "(f32[N,2,6], f32[N,24], f32[N,24], f32[6], f32[N,1,6], f32[2,6], f32[2,6]) {\n"
    "  %a = slice(%x) {starts=[1], ends=[3], axes=[1]} : f32[N,2,6]\n"
    "  %b = relu(%a) : f32[N,2,6]\n"
    "  %c = reshape(%x) {shape=[0,-1]} : f32[N,24]\n"
    "  %d = mul(%c, %c) : f32[N,24]\n"
    "  %p0, %p1 = split(%x) {axis=1, sizes=[3,1]} : f32[N,3,6], f32[N,1,6]\n"
    "  %e = add(%p1, %y) : f32[N,1,6]\n"
    "  %s = slice(%z) {starts=[1], ends=[3]} : f32[2,6]\n"
    "  %q0, %q1 = split(%z) {sizes=[3,2]} : f32[3,6], f32[2,6]\n"
    "  %f = sub(%s, %q1) : f32[2,6]\n"
    "  %g = exp(%s) : f32[2,6]\n"
    "  return %b, %d, %d, %y, %e, %f, %g\n"
    "}\n";

static void test_views(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(views_cuir, strlen(views_cuir), "views.cuir", &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    const cv_func *f = m->funcs[0];
    cv_tensor ins[MAX_IO] = {{0}}, want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}};
    assert_int_equal(make_inputs(f, 2, ins), 0);
    assert_int_equal(cv_interp_run(f, ins, f->n_inputs, want, &d), 0);
    char msg[2048] = "";
    if (bk_run_native(m, ins, f->n_inputs, 2, got, msg, sizeof msg))
        fail_msg("%s", msg);
    for (int i = 0; i < f->n_returns; i++) {
        if (cv_npref_compare(&got[i], &want[i], 1e-4, 1e-5, msg, sizeof msg))
            fail_msg("output %d: %s", i, msg);
        cv_tensor_free(&got[i]);
        cv_tensor_free(&want[i]);
    }
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_diag_free(&d);
    cv_module_free(m);
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char *p = cv_fs_join(dir, name), *data = NULL;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_fs_read_file(p, 1u << 30, &data, len, &d))
        data = NULL;
    cv_diag_free(&d);
    free(p);
    return data;
}

/* Two compiles of one model give the same bytes in every file. */
static void test_reproducible(void **state)
{
    cv_module *m = load("examples/cuir/tinycnn.cuir");
    assert_non_null(m);
    char msg[1024] = "";
    unsigned all = CV_EMIT_DEFAULT | CV_EMIT_LLVM | CV_EMIT_CUIR;
    char *a = bk_compile(m, "x86_64-avx2", 2, all, msg, sizeof msg);
    char *b = bk_compile(m, "x86_64-avx2", 2, all, msg, sizeof msg);
    assert_non_null(a);
    assert_non_null(b);
    DIR *dir = opendir(a);
    int files = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        size_t la, lb;
        char *x = slurp(a, e->d_name, &la), *y = slurp(b, e->d_name, &lb);
        assert_non_null(x);
        assert_non_null(y);
        if (la != lb || memcmp(x, y, la) != 0)
            fail_msg("%s differs between two compiles", e->d_name);
        free(x);
        free(y);
        files++;
    }
    closedir(dir);
    assert_int_equal(files, 9);  /* .o _weights.o .a .so .h .ll .cuir .cvsym manifest.json */
    cv_tmpdir_remove(a);
    cv_tmpdir_remove(b);
    cv_module_free(m);
}

static char *model_file(const char *model, const char *suffix)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/models/%s%s", build ? build : "build", model, suffix);
    return p;
}

/* torchvision exports against PyTorch's own output (max abs error 1e-4). */
static void check_torchvision(const char *name)
{
    char *onnx = model_file(name, ".onnx"), *in_path = model_file(name, ".input.npy"),
         *out_path = model_file(name, ".output.npy");
    bool have = access(onnx, R_OK) == 0 && access(in_path, R_OK) == 0 && access(out_path, R_OK) == 0;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = have ? cv_onnx_load(onnx, &d) : NULL;
    free(onnx);
    if (!have) {
        free(in_path);
        free(out_path);
        cv_diag_free(&d);
        skip();
    }
    assert_non_null(m);
    cv_npy x, want;
    assert_int_equal(cv_npy_read(in_path, &x, &d), 0);
    assert_int_equal(cv_npy_read(out_path, &want, &d), 0);
    cv_tensor in, got = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, x.rank, x.dims), 0);
    memcpy(in.data, x.data, x.nbytes);
    char msg[2048] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s: %s", name, msg);
    for (int threads = 1; threads <= 2; threads++) {
        cv_native *nat = NULL;
        if (cv_native_open(dir, threads, &nat, &d) || cv_native_run(nat, &in, 1, &got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: native run failed", name);
        }
        cv_native_close(nat);
        double max_err = 0;
        for (int64_t i = 0; i < got.numel; i++) {
            double e = fabs((double)((float *)got.data)[i] - ((float *)want.data)[i]);
            max_err = e > max_err ? e : max_err;
        }
        printf("%s native, %d thread(s): max abs error %.3g\n", name, threads, max_err);
        assert_true(max_err <= 1e-4);
    }
    cv_tmpdir_remove(dir);
    cv_tensor_free(&in);
    cv_tensor_free(&got);
    cv_npy_free(&x);
    cv_npy_free(&want);
    cv_module_free(m);
    cv_diag_free(&d);
    free(in_path);
    free(out_path);
}

static void test_resnet18(void **state) { check_torchvision("resnet18"); }
static void test_mobilenet_v2(void **state) { check_torchvision("mobilenet_v2"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_tinycnn),
        cmocka_unit_test(test_residual),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_resnet18),
        cmocka_unit_test(test_mobilenet_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
