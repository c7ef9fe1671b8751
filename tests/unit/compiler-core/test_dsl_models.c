/* The example models (every examples/models/ model): each parses, lowers to a
 * verified CU-IR module with the expected signature and locations, and
 * runs in the reference interpreter; lenet and the residual block match
 * the same networks in PyTorch (Debian's python3-torch) with the same
 * weights to 1e-5. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/dsl.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *g_dir;   /* owned: example models and their weights */

static const char *const models[] = {"lenet", "mlp", "resblock", "kws"};

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("dsl-models");
    char script[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    const char *args[] = {script, g_dir, NULL};
    if (cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + sys.argv[2:]\n"
                 "runpy.run_path(path, run_name='__main__')\n", args, NULL) != 0)
        return -1;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char src[1024], name[64];
        snprintf(name, sizeof name, "%s.cvl.py", models[i]);
        snprintf(src, sizeof src, "%s/examples/models/%s", cv_tmpdir_src_root(), name);
        size_t len;
        char *text = cv_tmpdir_read_file(src, &len);
        if (!text || cv_tmpdir_write(g_dir, name, text, len) != 0)
            return -1;
        free(text);
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return cv_tmpdir_remove(g_dir);
}

static cv_module *load_model(const char *name)
{
    char file[64];
    snprintf(file, sizeof file, "%s.cvl.py", name);
    char *path = cv_tmpdir_path(g_dir, file);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_dsl_load(path, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    assert_int_equal(cv_module_load_weights(m, g_dir, &d), 0);
    cv_diag_free(&d);
    free(path);
    return m;
}

static void assert_type(const cv_type *t, const char *want)
{
    char buf[128];
    cv_type_format(t, buf, sizeof buf);
    assert_string_equal(buf, want);
}

static void test_signatures(void **state)
{
    (void)state;
    static const struct { const char *model, *in, *out, *out2; } sig[] = {
        {"lenet", "f32[N,1,28,28]", "f32[N,10]", NULL},
        {"mlp", "f32[N,64]", "f32[N,10]", "f32[N,10]"},
        {"resblock", "f32[N,16,8,8]", "f32[N,16,8,8]", NULL},
        {"kws", "f32[N,1,49,10]", "f32[N,12]", NULL},
    };
    for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++) {
        cv_module *m = load_model(sig[i].model);
        assert_int_equal(m->n_funcs, 1);
        const cv_func *f = m->funcs[0];
        assert_string_equal(f->name, sig[i].model);
        assert_int_equal(f->n_inputs, 1);
        assert_type(&f->inputs[0]->type, sig[i].in);
        assert_int_equal(f->n_outputs, sig[i].out2 ? 2 : 1);
        assert_type(&f->out_types[0], sig[i].out);
        if (sig[i].out2)
            assert_type(&f->out_types[1], sig[i].out2);
        /* Every op names where it came from. */
        char file[64];
        snprintf(file, sizeof file, "%s.cvl.py", sig[i].model);
        for (int k = 0; k < f->n_ops; k++) {
            assert_true(f->ops[k]->n_locs >= 1);
            assert_string_equal(f->ops[k]->locs[0].file, file);
            assert_true(f->ops[k]->locs[0].line > 0 && f->ops[k]->locs[0].col > 0);
        }
        cv_module_free(m);
    }
}

static void test_lenet_locations(void **state)
{
    (void)state;
    cv_module *m = load_model("lenet");
    const cv_func *f = m->funcs[0];
    /* conv1 is the first op: `cvl.conv2d(` on line 7, column 33. */
    assert_string_equal(f->ops[0]->name, "conv2d");
    assert_int_equal(f->ops[0]->locs[0].line, 7);
    assert_int_equal(f->ops[0]->locs[0].col, 33);
    /* The loop is unrolled: two matmuls on line 11, at the '@'. */
    int matmuls = 0;
    for (int k = 0; k < f->n_ops; k++)
        if (strcmp(f->ops[k]->name, "matmul") == 0 && f->ops[k]->locs[0].line == 11) {
            assert_int_equal(f->ops[k]->locs[0].col, 24);
            matmuls++;
        }
    assert_int_equal(matmuls, 2);
    assert_int_equal(f->n_params, 10);
    assert_string_equal(f->params[4]->key, "fc.0.weight");
    assert_string_equal(f->params[4]->file, "lenet.safetensors");
    cv_module_free(m);
}

/* Runs every example on a deterministic input: all outputs finite. */
static void test_all_run(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        cv_module *m = load_model(models[i]);
        const cv_func *f = m->funcs[0];
        cv_tensor in;
        int64_t dims[CV_MAX_RANK];
        const cv_shape *sh = &f->inputs[0]->type.shape;
        for (int k = 0; k < sh->rank; k++)
            dims[k] = sh->d[k].sym ? 2 : sh->d[k].n;
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, sh->rank, dims), 0);
        for (int64_t k = 0; k < in.numel; k++)
            cv_tensor_set(&in, k, sin((double)k * 0.37));
        cv_tensor out[4];
        cv_diag d;
        cv_diag_init(&d);
        int rc = cv_interp_run(f, &in, 1, out, &d);
        if (rc)
            cv_diag_print(&d, stderr, false);
        assert_int_equal(rc, 0);
        for (int o = 0; o < f->n_outputs; o++) {
            assert_int_equal(out[o].dims[0], 2);
            for (int64_t k = 0; k < out[o].numel; k++)
                assert_true(isfinite(cv_tensor_get(&out[o], k)));
            cv_tensor_free(&out[o]);
        }
        cv_tensor_free(&in);
        cv_diag_free(&d);
        cv_module_free(m);
    }
}

static void equivalence(const char *model)
{
    if (!cv_pyrun_has_module("torch"))
        skip();
    char script_path[1024], weights[64];
    snprintf(script_path, sizeof script_path, "%s/tests/dsl/torch_reference.py",
             cv_tmpdir_src_root());
    size_t len;
    char *script = cv_tmpdir_read_file(script_path, &len);
    assert_non_null(script);
    snprintf(weights, sizeof weights, "%s.safetensors", model);
    char *wpath = cv_tmpdir_path(g_dir, weights);
    const char *args[] = {model, wpath, NULL};
    char *out = NULL;
    size_t out_len = 0;
    assert_int_equal(cv_pyrun_io(script, args, NULL, 0, &out, &out_len), 0);

    cv_module *m = load_model(model);
    const cv_func *f = m->funcs[0];
    const cv_shape *sh = &f->inputs[0]->type.shape;
    int64_t dims[CV_MAX_RANK];
    for (int k = 0; k < sh->rank; k++)
        dims[k] = sh->d[k].sym ? (strcmp(model, "lenet") == 0 ? 3 : 2) : sh->d[k].n;
    cv_tensor in;
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, sh->rank, dims), 0);
    size_t in_bytes = cv_tensor_nbytes(&in);
    assert_true(out_len > in_bytes);
    memcpy(in.data, out, in_bytes);
    cv_tensor y;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(f, &in, 1, &y, &d), 0);
    assert_int_equal(cv_tensor_nbytes(&y), out_len - in_bytes);
    const float *want = (const float *)(out + in_bytes);
    double max_err = 0;
    for (int64_t k = 0; k < y.numel; k++) {
        double e = fabs(cv_tensor_get(&y, k) - (double)want[k]);
        max_err = e > max_err ? e : max_err;
    }
    fprintf(stderr, "%s: max abs error vs PyTorch %.3g over %lld values\n", model, max_err,
            (long long)y.numel);
    assert_true(max_err <= 1e-5);
    cv_tensor_free(&y);
    cv_tensor_free(&in);
    cv_diag_free(&d);
    cv_module_free(m);
    free(out);
    free(wpath);
    free(script);
}

static void test_lenet_matches_pytorch(void **state)
{
    (void)state;
    equivalence("lenet");
}

static void test_resblock_matches_pytorch(void **state)
{
    (void)state;
    equivalence("resblock");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_lenet_locations),
        cmocka_unit_test(test_all_run),
        cmocka_unit_test(test_lenet_matches_pytorch),
        cmocka_unit_test(test_resblock_matches_pytorch),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
