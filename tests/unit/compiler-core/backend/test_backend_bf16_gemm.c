/* -p bf16 matrix products (issue 26): a matmul's or gemm's constant B is
 * stored as bf16 and packed at compile time into the pair form that the
 * runtime reads directly (codegen_half.c cv_cg_bf16_pairs, runtime
 * cvrt_gemm_bf16.c), so no cast kernel widens it at every run.  One model
 * holds ragged cases (odd K, N not a multiple of the 32-column panel, the
 * few-rows path at M = 1 and 3, the blocked engine above, K deeper than a
 * K block, gemm with trans_b either way, bias, residual and relu riding
 * along); compiled natively at 1 and 3 threads, and for the AVX2 variant
 * (run here, 2 threads), and compared with the
 * interpreter running the same bf16 weights.  The widened path is f32
 * math on those weights (1e-4 of the range); AMX and vdpbf16ps round the
 * activations to bf16 too (1e-2, only where the CPU has AMX-BF16 or
 * AVX512_BF16; tests/device/amx_gemm_check holds those to 1e-5 against a
 * reference with rounded activations, run by test_bf16_dispatch).  Each product must
 * be one kernel: a cast kernel per weight would double the count. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/cuvil.h"
#include "tests/support/netbuild.h"
#include "tests/support/numpyref.h"
#include "tests/support/tmpdir.h"

typedef struct mm_case {
    int M, K, N;
    int kind;       /* 0 matmul + bias, 1 gemm trans_b + c, 2 gemm + relu, 3 matmul [2,M,K] + residual */
} mm_case;

static const mm_case cases[] = {
    {1, 37, 45, 0}, {3, 70, 33, 0},  {13, 37, 45, 0}, {29, 131, 70, 1},
    {64, 200, 97, 2}, {40, 700, 64, 0}, {5, 48, 40, 3}, {17, 45, 66, 1},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static int put_vals(char *t, size_t size, int n, int count, uint64_t seed)
{
    for (int i = 0; i < count; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        n += snprintf(t + n, size - (size_t)n, "%s%.4f", i ? ", " : "",
                      (double)(seed >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    return n;
}

/* The model: input %xI (and %rI) per case, output per case. */
static char *model_text(void)
{
    size_t size = 4u << 20;
    char *t = malloc(size);
    assert_non_null(t);
    int n = snprintf(t, size, "cuir 1\nmodel @bf(");
    for (int c = 0; c < N_CASES; c++) {
        const mm_case *k = &cases[c];
        if (k->kind == 3)
            n += snprintf(t + n, size - (size_t)n, "%s%%x%d: f32[2,%d,%d], %%r%d: f32[2,%d,%d]",
                          c ? ", " : "", c, k->M, k->K, c, k->M, k->N);
        else
            n += snprintf(t + n, size - (size_t)n, "%s%%x%d: f32[%d,%d]", c ? ", " : "", c, k->M,
                          k->K);
    }
    n += snprintf(t + n, size - (size_t)n, ") -> (");
    for (int c = 0; c < N_CASES; c++)
        n += cases[c].kind == 3
                 ? snprintf(t + n, size - (size_t)n, "%sf32[2,%d,%d]", c ? ", " : "", cases[c].M,
                            cases[c].N)
                 : snprintf(t + n, size - (size_t)n, "%sf32[%d,%d]", c ? ", " : "", cases[c].M,
                            cases[c].N);
    n += snprintf(t + n, size - (size_t)n, ") {\n");
    for (int c = 0; c < N_CASES; c++) {
        const mm_case *k = &cases[c];
        bool tb = k->kind == 1;
        n += snprintf(t + n, size - (size_t)n, "  param %%w%d: f32[%d,%d] = dense(", c,
                      tb ? k->N : k->K, tb ? k->K : k->N);
        n = put_vals(t, size, n, k->K * k->N, 1000u + (uint64_t)c);
        n += snprintf(t + n, size - (size_t)n, ")\n  param %%b%d: f32[%d] = dense(", c, k->N);
        n = put_vals(t, size, n, k->N, 2000u + (uint64_t)c);
        n += snprintf(t + n, size - (size_t)n, ")\n");
    }
    for (int c = 0; c < N_CASES; c++) {
        const mm_case *k = &cases[c];
        int M = k->M, N = k->N;
        switch (k->kind) {
        case 0:
            n += snprintf(t + n, size - (size_t)n,
                          "  %%m%d = matmul(%%x%d, %%w%d) : f32[%d,%d]\n"
                          "  %%y%d = add(%%m%d, %%b%d) : f32[%d,%d]\n", c, c, c, M, N, c, c, c, M, N);
            break;
        case 1:
            n += snprintf(t + n, size - (size_t)n,
                          "  %%y%d = gemm(%%x%d, %%w%d, %%b%d) {trans_b=1} : f32[%d,%d]\n", c, c,
                          c, c, M, N);
            break;
        case 2:
            n += snprintf(t + n, size - (size_t)n,
                          "  %%m%d = gemm(%%x%d, %%w%d, %%b%d) {alpha=0.5} : f32[%d,%d]\n"
                          "  %%y%d = relu(%%m%d) : f32[%d,%d]\n", c, c, c, c, M, N, c, c, M, N);
            break;
        default:
            n += snprintf(t + n, size - (size_t)n,
                          "  %%m%d = matmul(%%x%d, %%w%d) : f32[2,%d,%d]\n"
                          "  %%a%d = add(%%b%d, %%m%d) : f32[2,%d,%d]\n"
                          "  %%y%d = add(%%r%d, %%a%d) : f32[2,%d,%d]\n", c, c, c, M, N, c, c, c,
                          M, N, c, c, c, M, N);
        }
    }
    n += snprintf(t + n, size - (size_t)n, "  return ");
    for (int c = 0; c < N_CASES; c++)
        n += snprintf(t + n, size - (size_t)n, "%s%%y%d", c ? ", " : "", c);
    snprintf(t + n, size - (size_t)n, "\n}\n");
    return t;
}

/* Compiles the model for target, runs it at each thread count in [t0, t1]
 * (step 2) and compares every output with the interpreter within tol of
 * its range. */
static void compile_compare(const char *target, double tol, int t0, int t1)
{
    cv_diag d;
    cv_diag_init(&d);
    char *text = model_text();
    cv_module *m = cv_cuir_parse(text, strlen(text), "bf.cuir", &d);
    free(text);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    char *dir = cv_tmpdir_make("bf16mm");
    cv_quant_opts q = {.precision = CV_PRECISION_BF16};
    cv_compile_opts o = {.target = target, .opt_level = 1, .emit = CV_EMIT_SO, .out_dir = dir,
                         .quant = &q};
    static cv_compile_info info;
    if (cv_compile_native(m, &o, &info, &d))
        cv_diag_print(&d, stderr, false);
    printf("%s: %s", target, info.quant_report);
    char want[96];
    snprintf(want, sizeof want, "matmul/gemm x%d read their bf16 weights as packed", N_CASES);
    if (!strstr(info.quant_report, want))
        fail_msg("%s: expected '%s' in the report", target, want);
    /* One kernel per product (its bias, residual and relu fused): no cast. */
    assert_int_equal(info.n_kernels, N_CASES);

    cv_tensor in[2 * N_CASES], got[N_CASES], ref[N_CASES];
    int n_in = 0;
    for (int c = 0; c < N_CASES; c++) {
        const mm_case *k = &cases[c];
        int64_t dx[3] = {2, k->M, k->K}, dr[3] = {2, k->M, k->N};
        bool b3 = k->kind == 3;
        assert_int_equal(cv_tensor_alloc(&in[n_in], CV_F32, b3 ? 3 : 2, b3 ? dx : dx + 1), 0);
        cv_npref_fill(&in[n_in++], 31u + (uint64_t)c, -2, 2);
        if (b3) {
            assert_int_equal(cv_tensor_alloc(&in[n_in], CV_F32, 3, dr), 0);
            cv_npref_fill(&in[n_in++], 61u + (uint64_t)c, -1, 1);
        }
    }
    memset(ref, 0, sizeof ref);
    assert_int_equal(cv_interp_run(m->funcs[0], in, n_in, ref, &d), 0);
    for (int threads = t0; threads <= t1; threads += 2) {
        cv_native *nat = NULL;
        assert_int_equal(cv_native_open(dir, threads, &nat, &d), 0);
        memset(got, 0, sizeof got);
        if (cv_native_run(nat, in, n_in, got, &d))
            cv_diag_print(&d, stderr, false);
        for (int c = 0; c < N_CASES; c++) {
            assert_int_equal(got[c].numel, ref[c].numel);
            double lo = INFINITY, hi = -INFINITY, err = 0;
            for (int64_t i = 0; i < ref[c].numel; i++) {
                double r = ((const float *)ref[c].data)[i], g = ((const float *)got[c].data)[i];
                lo = fmin(lo, r);
                hi = fmax(hi, r);
                err = fabs(g - r) > err || g != g ? fabs(g - r) : err;
            }
            printf("%s case %d (M %d K %d N %d kind %d), %d threads: max abs err %.3g of range "
                   "%.3g\n", target, c, cases[c].M, cases[c].K, cases[c].N, cases[c].kind,
                   threads, err, hi - lo);
            if (!(err <= tol * (hi - lo)))
                fail_msg("%s case %d: error %.3g > %.0e of the range %.3g", target, c, err, tol,
                         hi - lo);
            cv_tensor_free(&got[c]);
        }
        cv_native_close(nat);
    }
    for (int i = 0; i < n_in; i++)
        cv_tensor_free(&in[i]);
    for (int c = 0; c < N_CASES; c++)
        cv_tensor_free(&ref[c]);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* This CPU's best path, at 1 and 3 threads. */
static void test_bf16_gemm_native(void **state)
{
    (void)state;
    compile_compare("native", cv_nb_cpu_has(" amx_bf16") || cv_nb_cpu_has(" avx512_bf16") ? 1e-2
                                                                                           : 1e-4,
                    1, 3);
}

/* The AVX2 variant (24-column micro-kernel panels, widened from the
 * 32-column pair form; no bf16 instructions): f32 math on the weights. */
static void test_bf16_gemm_avx2(void **state)
{
    (void)state;
    if (!cv_nb_cpu_has(" avx2") || !cv_nb_cpu_has(" fma"))
        skip();
    compile_compare("x86_64-avx2", 1e-4, 2, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_gemm_native),
        cmocka_unit_test(test_bf16_gemm_avx2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
