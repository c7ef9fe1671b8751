/* -p bf16 and -p int8 on the dynamic transformer exports (tests/tools/
 * export_transformers.py "small", in $CUVIL_BUILD/models/dynamic; skipped
 * when PyTorch is missing): bert_small (dynamic batch N and length L, i64
 * token ids) and gpt_decode (dynamic past P, three inputs) compile once in
 * reduced precision and run natively at every exported shape against
 * PyTorch's outputs.
 *   bf16: max abs error <= BF16_TOL of the output's range (measured: at
 *         most 1.4e-3, SQNR >= 51 dB); attention, layer_norm and gelu
 *         compute in f32; every op whose weights are stored as bf16 reads
 *         them packed at compile time (no cast kernel widens them).
 *   int8: calibrated on the exported inputs themselves (shapes differ from
 *         file to file: symbolic dims through calibration), the last one
 *         held out; every output's SQNR in the quantizer's report and
 *         against PyTorch at every shape >= MIN_SQNR dB, the --min-sqnr
 *         gate the compile runs with; every gemm/matmul with constant
 *         weights (those over [N, L, d] too) becomes int8. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "compiler-core/frontends/onnx/onnx_import.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/model_refs_testlib.h"

#define BF16_TOL 5e-3
#define MIN_SQNR 30.0

enum { MAX_IO = 8, MAX_SHAPES = 8 };

static char *model_path(const char *model, int k, const char *kind, int i)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    if (k >= 0)
        snprintf(p, 4096, "%s/models/dynamic/%s.%d.%s%d.npy", build ? build : "build", model, k,
                 kind, i);
    else
        snprintf(p, 4096, "%s/models/dynamic/%s%s", build ? build : "build", model, kind);
    return p;
}

typedef struct shape_case {
    cv_tensor in[MAX_IO], want[MAX_IO];
    int n_in, n_out;
} shape_case;

static int read_io(const char *model, int k, const char *kind, cv_tensor *t)
{
    int n = 0;
    for (bool have = true; have && n < MAX_IO; n += have) {
        char *p = model_path(model, k, kind, n);
        have = tm_read_npy(p, &t[n]);
        free(p);
    }
    return n;
}

/* SQNR of got against want in dB, and max abs error over want's range. */
static void measure(const cv_tensor *got, const cv_tensor *want, double *sqnr, double *rel)
{
    double s = 0, e = 0, err = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < want->numel; i++) {
        double w = cv_tensor_get(want, i), x = cv_tensor_get(got, i) - w;
        s += w * w;
        e += x * x;
        err = fabs(x) > err || x != x ? fabs(x) : err;
        lo = fmin(lo, w);
        hi = fmax(hi, w);
    }
    *sqnr = e > 0 ? 10 * log10(s / e) : 200;
    *rel = err / fmax(hi - lo, 1e-30);
}

/* Every "output %x: SQNR v dB" line of the quantizer's report >= MIN_SQNR;
 * returns how many there are. */
static int report_sqnr(const char *name, const char *rep)
{
    int n = 0;
    for (const char *p = rep; (p = strstr(p, "output %")); p++, n++) {
        const char *s = strstr(p, "SQNR ");
        assert_non_null(s);
        double v = strtod(s + 5, NULL);
        printf("%s int8 report: %.*s\n", name, (int)strcspn(p, "\n"), p);
        if (!(v >= MIN_SQNR))
            fail_msg("%s: the report's output SQNR %.1f dB < %.1f", name, v, MIN_SQNR);
    }
    return n;
}

/* "weights of N ops stored as bf16" and "matmul/gemm xN read their bf16
 * weights as packed": every one of them, so no cast kernel is left. */
static void check_no_cast(const char *name, const char *rep)
{
    const char *s = strstr(rep, "weights of ");
    assert_non_null(s);
    int stored = atoi(s + strlen("weights of "));
    char want[96];
    snprintf(want, sizeof want, "matmul/gemm x%d read their bf16 weights as packed", stored);
    if (stored < 1 || !strstr(rep, want))
        fail_msg("%s: expected '%s' in the report:\n%s", name, want, rep);
}

static void check(const char *name, cv_precision prec, const char *calib, const char *quantized)
{
    char *onnx = model_path(name, -1, ".onnx", 0);
    if (access(onnx, R_OK) != 0) {
        free(onnx);
        skip();
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load(onnx, &d);
    free(onnx);
    assert_non_null(m);
    static shape_case sc[MAX_SHAPES];
    memset(sc, 0, sizeof sc);
    int n = 0;
    while (n < MAX_SHAPES && (sc[n].n_in = read_io(name, n, "in", sc[n].in)) > 0) {
        sc[n].n_out = read_io(name, n, "out", sc[n].want);
        n++;
    }
    assert_true(n >= 3);
    char *dir = cv_tmpdir_make("tquant");
    cv_quant_opts q = {.precision = prec, .calibration = calib, .min_sqnr = MIN_SQNR};
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = CV_EMIT_SO, .out_dir = dir,
                         .quant = &q};
    static cv_compile_info info;
    if (cv_compile_native(m, &o, &info, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("%s: the %s compile failed", name, cv_precision_name(prec));
    }
    if (!strstr(info.quant_report, quantized))
        fail_msg("%s: expected '%s' in the report:\n%s", name, quantized, info.quant_report);
    if (prec == CV_PRECISION_INT8)
        assert_true(report_sqnr(name, info.quant_report) >= 1);
    if (prec == CV_PRECISION_BF16)
        check_no_cast(name, info.quant_report);
    cv_native *nat = NULL;
    assert_int_equal(cv_native_open(dir, 2, &nat, &d), 0);
    for (int k = 0; k < n; k++) {
        cv_tensor got[MAX_IO] = {{0}};
        if (cv_native_run(nat, sc[k].in, sc[k].n_in, got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: native run failed at shape %d", name, k);
        }
        for (int i = 0; i < sc[k].n_out; i++) {
            double s, rel;
            assert_int_equal(got[i].numel, sc[k].want[i].numel);
            measure(&got[i], &sc[k].want[i], &s, &rel);
            printf("%s %s shape %d output %d: SQNR %.1f dB, max abs error %.3g of the range\n",
                   name, cv_precision_name(prec), k, i, s, rel);
            if (prec == CV_PRECISION_INT8 ? !(s >= MIN_SQNR) : !(rel <= BF16_TOL))
                fail_msg("%s %s shape %d output %d: SQNR %.1f dB, error %.3g of the range", name,
                         cv_precision_name(prec), k, i, s, rel);
            cv_tensor_free(&got[i]);
        }
    }
    cv_native_close(nat);
    cv_tmpdir_remove(dir);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < sc[k].n_in; i++)
            cv_tensor_free(&sc[k].in[i]);
        for (int i = 0; i < sc[k].n_out; i++)
            cv_tensor_free(&sc[k].want[i]);
    }
    cv_module_free(m);
    cv_diag_free(&d);
}

static char *calib_spec(const char *name, int n_in, const char *const *inputs)
{
    static char spec[4096];
    size_t len = 0;
    for (int i = 0; i < n_in; i++) {
        char *p = model_path(name, -1, ".*.in", 0);
        len += (size_t)snprintf(spec + len, sizeof spec - len, "%s%s%s%s%d.npy", i ? ";" : "",
                                inputs ? inputs[i] : "", inputs ? "=" : "", p, i);
        free(p);
    }
    return spec;
}

static void test_bert_bf16(void **state)
{
    (void)state;
    check("bert_small", CV_PRECISION_BF16, NULL, "stored as bf16");
}

static void test_bert_int8(void **state)
{
    (void)state;
    check("bert_small", CV_PRECISION_INT8, calib_spec("bert_small", 1, NULL), "8 of");
}

static void test_gpt_bf16(void **state)
{
    (void)state;
    check("gpt_decode", CV_PRECISION_BF16, NULL, "stored as bf16");
}

static void test_gpt_int8(void **state)
{
    (void)state;
    static const char *const ins[3] = {"ids", "past_k", "past_v"};
    check("gpt_decode", CV_PRECISION_INT8, calib_spec("gpt_decode", 3, ins), "9 of");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_bf16),
        cmocka_unit_test(test_bert_int8),
        cmocka_unit_test(test_gpt_bf16),
        cmocka_unit_test(test_gpt_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
