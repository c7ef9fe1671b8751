/* Transformer and speech exports with dynamic axes (tests/tools/
 * export_transformers.py "small", made into $CUVIL_BUILD/models/dynamic by
 * make test; skipped when PyTorch is missing): each model is imported once
 * and run at every exported shape, against PyTorch's outputs (max abs
 * error <= 1e-4, or 1e-4 of the output's range).  bert_small has dynamic
 * batch N and length L (positions from arange(L) into a 64-row table),
 * speech_lstm (speech_gru) a dynamic number of frames through a stride-2
 * Conv1d and an LSTM (a bidirectional GRU), gpt_decode a dynamic past
 * length P (present outputs P+1), gpt_causal T new tokens past P. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <jansson.h>
#include <unistd.h>

#include "common/npy.h"
#include "compiler-core/frontends/onnx/onnx_import.h"
#include "compiler-core/passes/passes.h"
#include "tests/support/pyrun.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/model_refs_testlib.h"

enum { MAX_IO = 8, MAX_SHAPES = 8 };

static char *model_file(const char *model, int k, const char *kind, int i)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    if (k >= 0)
        snprintf(p, 4096, "%s/models/dynamic/%s.%d.%s%d.npy", build ? build : "build", model, k,
                 kind, i);
    else
        snprintf(p, 4096, "%s/models/dynamic/%s.onnx", build ? build : "build", model);
    return p;
}

/* Reads <model>.<k>.<kind><i>.npy for i = 0.. while they exist. */
static int read_all(const char *model, int k, const char *kind, cv_tensor *t)
{
    int n = 0;
    for (; n < MAX_IO; n++) {
        char *p = model_file(model, k, kind, n);
        bool have = tm_read_npy(p, &t[n]);
        free(p);
        if (!have)
            break;
    }
    return n;
}

/* Same shape, then within tolerance (tm_compare). */
static void compare(const char *what, int k, const cv_tensor *got, const cv_tensor *want)
{
    assert_int_equal(got->rank, want->rank);
    for (int i = 0; i < want->rank; i++)
        assert_int_equal(got->dims[i], want->dims[i]);
    tm_compare(what, k, got, want);
}

typedef struct shape_case {
    cv_tensor in[MAX_IO], want[MAX_IO];
    int n_in, n_out;
} shape_case;

static int read_shapes(const char *name, shape_case *sc)
{
    int n = 0;
    while (n < MAX_SHAPES && (sc[n].n_in = read_all(name, n, "in", sc[n].in)) > 0) {
        sc[n].n_out = read_all(name, n, "out", sc[n].want);
        n++;
    }
    return n;
}

static void free_shapes(shape_case *sc, int n)
{
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < sc[k].n_in; i++)
            cv_tensor_free(&sc[k].in[i]);
        for (int i = 0; i < sc[k].n_out; i++)
            cv_tensor_free(&sc[k].want[i]);
    }
}

static void run_interp(const char *name, const cv_func *f, shape_case *sc, int n_shapes)
{
    cv_diag d;
    cv_diag_init(&d);
    for (int k = 0; k < n_shapes; k++) {
        cv_tensor got[MAX_IO] = {{0}};
        assert_int_equal(sc[k].n_in, f->n_inputs);
        assert_int_equal(sc[k].n_out, f->n_returns);
        if (cv_interp_run(f, sc[k].in, sc[k].n_in, got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: interpreter failed at shape %d", name, k);
        }
        char what[96];
        snprintf(what, sizeof what, "%s interpreter, shape %d", name, k);
        for (int i = 0; i < sc[k].n_out; i++) {
            compare(what, i, &got[i], &sc[k].want[i]);
            cv_tensor_free(&got[i]);
        }
    }
    cv_diag_free(&d);
}

/* One native compile, run at every shape; or, for a model with an op the
 * native backend has no kernel for, that refusal (its code). */
static void run_native(const char *name, cv_module *m, shape_case *sc, int n_shapes,
                       const char *refusal)
{
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (refusal) {
        if (dir)
            cv_tmpdir_remove(dir);
        assert_null(dir);
        if (!strstr(msg, refusal))
            fail_msg("%s: expected %s, got: %s", name, refusal, msg);
        return;
    }
    if (!dir)
        fail_msg("%s: %s", name, msg);
    cv_diag d;
    cv_diag_init(&d);
    cv_native *nat = NULL;
    assert_int_equal(cv_native_open(dir, 1, &nat, &d), 0);
    for (int k = 0; k < n_shapes; k++) {
        cv_tensor got[MAX_IO] = {{0}};
        if (cv_native_run(nat, sc[k].in, sc[k].n_in, got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: native run failed at shape %d", name, k);
        }
        char what[96];
        snprintf(what, sizeof what, "%s native, shape %d", name, k);
        for (int i = 0; i < sc[k].n_out; i++) {
            compare(what, i, &got[i], &sc[k].want[i]);
            cv_tensor_free(&got[i]);
        }
    }
    cv_native_close(nat);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

/* attention: attention ops the pass pipeline must fuse (-1: not checked). */
static void check_model(const char *name, int attention, const char *native_refusal)
{
    char *onnx = model_file(name, -1, NULL, 0);
    bool have = access(onnx, R_OK) == 0;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = have ? cv_onnx_load(onnx, &d) : NULL;
    cv_module *fused = have ? cv_onnx_load(onnx, &d) : NULL;
    free(onnx);
    if (!have) {
        cv_diag_free(&d);
        skip();
    }
    if (!m || !fused)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_non_null(fused);
    static shape_case sc[MAX_SHAPES];
    memset(sc, 0, sizeof sc);
    int n_shapes = read_shapes(name, sc);
    assert_true(n_shapes >= 2);
    cv_pass_stats st;
    assert_int_equal(cv_passes_run(fused->funcs[0], &st, &d), 0);
    if (attention >= 0)
        assert_int_equal(st.attention_fused, attention);
    run_interp(name, fused->funcs[0], sc, n_shapes);
    run_native(name, m, sc, n_shapes, native_refusal);
    free_shapes(sc, n_shapes);
    cv_module_free(m);
    cv_module_free(fused);
    cv_diag_free(&d);
}

/* One native compile runs at (1,8), (4,8) and (2,33). */
static void test_bert_small(void **state) { (void)state; check_model("bert_small", 2, NULL); }

/* The compiled model checks the bound too: cv_native_run names it
 * (CV3013), and the artifact's own run returns -4 (CV_<N>_SYMBOL_MAX). */
static void check_native_bound(cv_module *m, cv_diag *d)
{
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO | CV_EMIT_H, msg, sizeof msg);
    if (!dir)
        fail_msg("bert_small: %s", msg);
    cv_native *nat = NULL;
    assert_int_equal(cv_native_open(dir, 1, &nat, d), 0);
    int64_t dims[2] = {1, 65};
    cv_tensor in, out = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_I64, 2, dims), 0);
    assert_int_not_equal(cv_native_run(nat, &in, 1, &out, d), 0);
    assert_int_equal(d->v[0].code, 3013);
    assert_non_null(strstr(d->v[0].msg, "%ids binds L = 65"));
    cv_native_close(nat);
    /* The library alone, as a C program calls it. */
    char *lib = cv_tmpdir_path(dir, "libbert_small.so"), *hdr = cv_tmpdir_path(dir, "bert_small.h");
    size_t len;
    char *text = cv_tmpdir_read_file(hdr, &len);
    assert_non_null(strstr(text, "#define CV_BERT_SMALL_SYMBOL_MAX {-1, 64}"));
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    void *(*create)(int);
    int (*run)(void *, const void *const *, void *const *, const int64_t *);
    void (*destroy)(void *);
    *(void **)&create = dlsym(dl, "cv_bert_small_create");
    *(void **)&run = dlsym(dl, "cv_bert_small_run");
    *(void **)&destroy = dlsym(dl, "cv_bert_small_destroy");
    void *ctx = create(1);
    float y[65 * 32];
    const void *ins[1] = {in.data};
    void *outs[1] = {y};
    int64_t syms[2] = {1, 65};
    assert_int_equal(run(ctx, ins, outs, syms), -4);
    syms[1] = 64;
    assert_int_equal(run(ctx, ins, outs, syms), 0);
    destroy(ctx);
    dlclose(dl);
    cv_tensor_free(&in);
    free(text);
    free(hdr);
    free(lib);
    cv_tmpdir_remove(dir);
}

/* The export `name` imported, or the test skipped when it is missing (or
 * when need is false). */
static cv_module *load_or_skip(const char *name, bool need, cv_diag *d)
{
    char *onnx = model_file(name, -1, NULL, 0);
    bool have = need && access(onnx, R_OK) == 0;
    cv_module *m = have ? cv_onnx_load(onnx, d) : NULL;
    free(onnx);
    if (!have) {
        cv_diag_free(d);
        skip();
    }
    assert_non_null(m);
    return m;
}

/* The 64-row positional table bounds L: L = 65 is CV3013 naming the input,
 * before any op runs (not an out-of-range gather). */
static void test_bert_small_bound(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_or_skip("bert_small", true, &d);
    for (int64_t l = 64; l <= 65; l++) {
        int64_t dims[2] = {1, l};
        cv_tensor in, out = {0};
        assert_int_equal(cv_tensor_alloc(&in, CV_I64, 2, dims), 0);
        int rc = cv_interp_run(m->funcs[0], &in, 1, &out, &d);
        assert_int_equal(rc != 0, l > 64);
        cv_tensor_free(&out);
        cv_tensor_free(&in);
    }
    assert_int_equal(d.n_errors, 1);
    assert_int_equal(d.v[0].code, 3013);
    assert_non_null(strstr(d.v[0].msg, "%ids binds L = 65"));
    assert_non_null(strstr(d.v[0].msg, "L <= 64"));
    cv_diag_clear(&d);
    check_native_bound(m, &d);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* speech_lstm's LSTM over (frames + 1) floordiv 2 steps is one rnn op,
 * run by the interpreter and, after one native compile, by the runtime's
 * cvrt_rnn at 20, 37, 1 and 64 frames (batch 1 to 3). */
static void test_speech_lstm(void **state) { (void)state; check_model("speech_lstm", -1, NULL); }

/* The same stem with a bidirectional GRU (linear_before_reset, as PyTorch
 * exports it): both directions of one rnn op, at 20, 37 and 3 frames. */
static void test_speech_gru(void **state) { (void)state; check_model("speech_gru", -1, NULL); }

/* One decode step past caches of P = 0, 5, 17 and 63 tokens (present
 * outputs P + 1), one native compile; the 64-row position table indexed
 * by arange(P, P + 1) bounds P <= 63. */
static void test_gpt_decode(void **state) { (void)state; check_model("gpt_decode", 2, NULL); }

/* nanoGPT's causal attention past a cache: masked_fill by the slice
 * bias[:, :, P:P+T, :P+T] of a lower triangle over symbolic T and P is
 * one causal attention op; at (N,T,P) = (2,9,3), (1,1,0), (1,1,12) and
 * (1,30,20), natively and in the interpreter. */
static void test_gpt_causal(void **state) { (void)state; check_model("gpt_causal", 1, NULL); }

/* cuvil bench on the compiled decoder: --dim P=17 sets the past length,
 * --batch 2 the sequences; one decode step per run makes 2 tokens, and
 * tokens/s is 2 over the p50.  A --dim naming no symbol is CV2024 naming
 * the model's symbols. */
static void test_gpt_decode_bench(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_or_skip("gpt_decode", bin && access(bin, X_OK) == 0, &d);
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO | CV_EMIT_H, msg, sizeof msg);
    if (!dir)
        fail_msg("gpt_decode: %s", msg);
    char *err = cv_tmpdir_path(dir, "stderr.txt"), *out = NULL;
    const char *argv[] = {bin, "bench", dir, "--batch", "2", "--dim", "P=17", "--iters", "3",
                          "--warmup", "0", "--json", NULL};
    assert_int_equal(cv_run_argv(argv, err, &out), 0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "tokens_per_run")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "dims"), "P")), 17);
    double p50 = json_real_value(json_object_get(j, "p50_ms"));
    double tps = json_real_value(json_object_get(j, "tokens_per_s"));
    assert_true(p50 > 0 && fabs(tps - 2000.0 / p50) <= 1e-6 * tps);
    json_decref(j);
    free(out);
    const char *bad[] = {bin, "bench", dir, "--dim", "Q=3", "--iters", "1", NULL};
    assert_int_equal(cv_run_argv(bad, err, &out), 1);
    free(out);
    size_t len;
    char *text = cv_tmpdir_read_file(err, &len);
    assert_non_null(strstr(text, "error[CV2024]"));
    assert_non_null(strstr(text, "no symbol Q (they have: N, P)"));
    free(text);
    free(err);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_small),
        cmocka_unit_test(test_bert_small_bound),
        cmocka_unit_test(test_speech_lstm),
        cmocka_unit_test(test_speech_gru),
        cmocka_unit_test(test_gpt_decode),
        cmocka_unit_test(test_gpt_decode_bench),
        cmocka_unit_test(test_gpt_causal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
