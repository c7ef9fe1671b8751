/* Statically shaped transformer exports (tests/tools/export_transformers_static.py,
 * made into $CUVIL_BUILD/models by make test; skipped when PyTorch is
 * missing) against PyTorch's own outputs, natively at 1 and 2 threads and
 * in the reference interpreter: a BERT-style encoder (additive padding
 * mask, erf GELU, decomposed LayerNorm), a GPT-2-style decode step with a
 * past key/value cache (present outputs too) and a GPT-2-style causal
 * prefill.  Max abs error <= 1e-4, or 1e-4 of the output's range.  Each
 * export's attention chains must become attention ops (one per layer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "common/npy.h"
#include "compiler-core/frontends/onnx/onnx_import.h"
#include "compiler-core/passes/passes.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/model_refs_testlib.h"

enum { MAX_IO = 32 };

static char *model_file(const char *model, const char *suffix, int i)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    if (i >= 0)
        snprintf(p, 4096, "%s/models/%s.%s%d.npy", build ? build : "build", model, suffix, i);
    else
        snprintf(p, 4096, "%s/models/%s%s", build ? build : "build", model, suffix);
    return p;
}

/* Reads <model>.<kind><i>.npy for i = 0.. while they exist. */
static int read_all(const char *model, const char *kind, cv_tensor *t)
{
    int n = 0;
    for (; n < MAX_IO; n++) {
        char *p = model_file(model, kind, n);
        bool have = tm_read_npy(p, &t[n]);
        free(p);
        if (!have)
            break;
    }
    return n;
}

static void check_model(const char *name, int layers)
{
    char *onnx = model_file(name, ".onnx", -1);
    bool have = access(onnx, R_OK) == 0;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = have ? cv_onnx_load(onnx, &d) : NULL, *fused = have ? cv_onnx_load(onnx, &d) : NULL;
    free(onnx);
    if (!have) {
        cv_diag_free(&d);
        skip();
    }
    if (!m || !fused)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_non_null(fused);
    cv_tensor ins[MAX_IO] = {{0}}, want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}};
    int n_in = read_all(name, "in", ins), n_out = read_all(name, "out", want);
    const cv_func *f = m->funcs[0];
    assert_int_equal(n_in, f->n_inputs);
    assert_int_equal(n_out, f->n_returns);
    cv_pass_stats st;
    assert_int_equal(cv_passes_run(fused->funcs[0], &st, &d), 0);
    assert_int_equal(st.attention_fused, layers);
    /* The fused function in the interpreter, then natively. */
    assert_int_equal(cv_interp_run(fused->funcs[0], ins, n_in, got, &d), 0);
    char what[64];
    snprintf(what, sizeof what, "%s interpreter", name);
    for (int k = 0; k < n_out; k++) {
        tm_compare(what, k, &got[k], &want[k]);
        cv_tensor_free(&got[k]);
    }
    char msg[2048] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s: %s", name, msg);
    for (int threads = 1; threads <= 2; threads++) {
        cv_native *nat = NULL;
        if (cv_native_open(dir, threads, &nat, &d) || cv_native_run(nat, ins, n_in, got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: native run failed", name);
        }
        cv_native_close(nat);
        snprintf(what, sizeof what, "%s native, %d thread(s)", name, threads);
        for (int k = 0; k < n_out; k++) {
            tm_compare(what, k, &got[k], &want[k]);
            cv_tensor_free(&got[k]);
        }
    }
    cv_tmpdir_remove(dir);
    for (int k = 0; k < n_in; k++)
        cv_tensor_free(&ins[k]);
    for (int k = 0; k < n_out; k++)
        cv_tensor_free(&want[k]);
    cv_module_free(m);
    cv_module_free(fused);
    cv_diag_free(&d);
}

static void test_bert_tiny(void **state) { (void)state; check_model("bert_tiny", 2); }
static void test_gpt_tiny(void **state) { (void)state; check_model("gpt_tiny", 2); }
static void test_gptc_tiny(void **state) { (void)state; check_model("gptc_tiny", 2); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_tiny),
        cmocka_unit_test(test_gpt_tiny),
        cmocka_unit_test(test_gptc_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
