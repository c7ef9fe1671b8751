/* Real models: torchvision resnet18 and mobilenet_v2 exported by PyTorch
 * (tests/tools/export_torchvision.py, run by `make test` into
 * $CUVIL_BUILD/models when missing).  Each is imported, verified and run by
 * the reference interpreter; the output must match PyTorch's within 1e-4.
 * Skipped when the exports are absent (no PyTorch on the machine). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/npy.h"
#include "compiler-core/frontends/onnx/onnx_import.h"

static char *model_file(const char *model, const char *suffix)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/models/%s%s", build ? build : "build", model, suffix);
    return p;
}

static void check_model(const char *name)
{
    char *onnx = model_file(name, ".onnx"), *in_path = model_file(name, ".input.npy"),
         *out_path = model_file(name, ".output.npy");
    if (access(onnx, R_OK) != 0 || access(in_path, R_OK) != 0 || access(out_path, R_OK) != 0) {
        free(onnx);
        free(in_path);
        free(out_path);
        skip();
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load(onnx, &d);
    if (!m || cv_verify(m, 0, &d) != 0)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_int_equal(d.n_errors, 0);
    const cv_func *f = m->funcs[0];
    assert_int_equal(f->n_inputs, 1);
    assert_string_equal(f->inputs[0]->type.shape.d[0].sym, "N");   /* dynamic batch */
    /* Every op carries the ONNX node name as its location. */
    for (int i = 0; i < f->n_ops; i++)
        assert_true(f->ops[i]->n_locs >= 1 && f->ops[i]->locs[0].file[0] == '/');

    cv_npy x, want;
    assert_int_equal(cv_npy_read(in_path, &x, &d), 0);
    assert_int_equal(cv_npy_read(out_path, &want, &d), 0);
    cv_tensor in, out = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, x.rank, x.dims), 0);
    memcpy(in.data, x.data, x.nbytes);
    int rc = cv_interp_run(f, &in, 1, &out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    assert_int_equal(out.numel, cv_npy_numel(&want));
    double max_err = 0;
    for (int64_t i = 0; i < out.numel; i++) {
        double e = fabs((double)((float *)out.data)[i] - ((float *)want.data)[i]);
        max_err = e > max_err ? e : max_err;
    }
    printf("%s: %d ops, max abs error %.3g\n", name, f->n_ops, max_err);
    assert_true(max_err <= 1e-4);
    cv_tensor_free(&in);
    cv_tensor_free(&out);
    cv_npy_free(&x);
    cv_npy_free(&want);
    cv_module_free(m);
    cv_diag_free(&d);
    free(onnx);
    free(in_path);
    free(out_path);
}

static void test_resnet18(void **state)
{
    (void)state;
    check_model("resnet18");
}

static void test_mobilenet_v2(void **state)
{
    (void)state;
    check_model("mobilenet_v2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet18),
        cmocka_unit_test(test_mobilenet_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
