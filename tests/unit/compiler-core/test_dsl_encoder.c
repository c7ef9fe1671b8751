/* A transformer written in the model language (examples/models/
 * encoder.cvl.py: input projection, two pre-norm layers of fused 4-head
 * attention and a GELU MLP with residuals, LayerNorm, a head) over a
 * symbolic batch N and length L: compiled natively once, run at several
 * (N, L) against the interpreter, and at two of them against the same
 * network in PyTorch (tests/dsl/torch_reference.py) with the same weights;
 * within 1e-4 everywhere. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "compiler-core/frontends/dsl/dsl.h"
#include "tests/support/pyrun.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/model_refs_testlib.h"

static char *g_dir;   /* owned: the model and its weights */

static int group_setup(void **state)
{
    (void)state;
    if (!cv_pyrun_has_module("numpy"))
        return 0;
    g_dir = cv_tmpdir_make("dsl-encoder");
    char script[1024], src[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    const char *args[] = {script, g_dir, "encoder", NULL};
    if (cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + sys.argv[2:]\n"
                 "runpy.run_path(path, run_name='__main__')\n", args, NULL) != 0)
        return -1;
    snprintf(src, sizeof src, "%s/examples/models/encoder.cvl.py", cv_tmpdir_src_root());
    size_t len;
    char *text = cv_tmpdir_read_file(src, &len);
    int rc = text ? cv_tmpdir_write(g_dir, "encoder.cvl.py", text, len) : -1;
    free(text);
    return rc;
}

static int group_teardown(void **state)
{
    (void)state;
    return g_dir ? cv_tmpdir_remove(g_dir) : 0;
}

static cv_module *load_encoder(void)
{
    char *path = cv_tmpdir_path(g_dir, "encoder.cvl.py");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_dsl_load(path, &d);
    if (!m || cv_verify(m, 0, &d) || cv_module_load_weights(m, g_dir, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    free(path);
    return m;
}

/* PyTorch's input and output at [n, l, 16] (false without torch). */
static bool torch_case(int64_t n, int64_t l, cv_tensor *x, cv_tensor *y)
{
    if (!cv_pyrun_has_module("torch"))
        return false;
    char script_path[1024], ns[24], ls[24];
    snprintf(script_path, sizeof script_path, "%s/tests/dsl/torch_reference.py",
             cv_tmpdir_src_root());
    snprintf(ns, sizeof ns, "%lld", (long long)n);
    snprintf(ls, sizeof ls, "%lld", (long long)l);
    size_t len, out_len = 0;
    char *script = cv_tmpdir_read_file(script_path, &len), *out = NULL;
    char *wpath = cv_tmpdir_path(g_dir, "encoder.safetensors");
    const char *args[] = {"encoder", wpath, ns, ls, "16", NULL};
    assert_int_equal(cv_pyrun_io(script, args, NULL, 0, &out, &out_len), 0);
    int64_t xd[3] = {n, l, 16}, yd[3] = {n, l, 8};
    assert_int_equal(cv_tensor_alloc(x, CV_F32, 3, xd), 0);
    assert_int_equal(cv_tensor_alloc(y, CV_F32, 3, yd), 0);
    assert_int_equal(out_len, cv_tensor_nbytes(x) + cv_tensor_nbytes(y));
    memcpy(x->data, out, cv_tensor_nbytes(x));
    memcpy(y->data, out + cv_tensor_nbytes(x), cv_tensor_nbytes(y));
    free(out);
    free(wpath);
    free(script);
    return true;
}

static void check_shape(cv_native *nat, const cv_func *f, int64_t n, int64_t l)
{
    cv_tensor x, torch_y, got = {0}, want = {0};
    bool torch = l % 2 && torch_case(n, l, &x, &torch_y);
    if (!torch) {
        int64_t xd[3] = {n, l, 16};
        assert_int_equal(cv_tensor_alloc(&x, CV_F32, 3, xd), 0);
        cv_npref_fill(&x, (uint64_t)(n * 1000 + l), -2, 2);
    }
    cv_diag d;
    cv_diag_init(&d);
    if (cv_native_run(nat, &x, 1, &got, &d) || cv_interp_run(f, &x, 1, &want, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    assert_int_equal(got.rank, 3);
    assert_int_equal(got.dims[0], n);
    assert_int_equal(got.dims[1], l);
    assert_int_equal(got.dims[2], 8);
    char what[96];
    snprintf(what, sizeof what, "encoder N=%lld L=%lld native vs interpreter", (long long)n,
             (long long)l);
    tm_compare(what, 0, &got, &want);
    if (torch) {
        snprintf(what, sizeof what, "encoder N=%lld L=%lld native vs PyTorch", (long long)n,
                 (long long)l);
        tm_compare(what, 0, &got, &torch_y);
        snprintf(what, sizeof what, "encoder N=%lld L=%lld interpreter vs PyTorch", (long long)n,
                 (long long)l);
        tm_compare(what, 0, &want, &torch_y);
        cv_tensor_free(&torch_y);
    }
    cv_tensor_free(&got);
    cv_tensor_free(&want);
    cv_tensor_free(&x);
    cv_diag_free(&d);
}

static void test_one_artifact_every_length(void **state)
{
    (void)state;
    if (!g_dir)
        skip();
    cv_module *m = load_encoder();
    const cv_func *f = m->funcs[0];
    char type[64];
    cv_type_format(&f->inputs[0]->type, type, sizeof type);
    assert_string_equal(type, "f32[N,L,16]");
    int attention = 0;
    for (int i = 0; i < f->n_ops; i++)
        attention += strcmp(f->ops[i]->name, "attention") == 0;
    assert_int_equal(attention, 2);
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("encoder: %s", msg);
    cv_diag d;
    cv_diag_init(&d);
    cv_native *nat = NULL;
    assert_int_equal(cv_native_open(dir, 2, &nat, &d), 0);
    static const int64_t shapes[][2] = {{1, 1}, {2, 5}, {1, 17}, {3, 8}, {1, 300}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(nat, f, shapes[i][0], shapes[i][1]);
    cv_native_close(nat);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_artifact_every_length),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
