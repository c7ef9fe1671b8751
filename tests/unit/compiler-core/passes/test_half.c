/* -p fp16 in the blocked (NCHWc) layout (runtime/cvrt_nchwc.c's
 * half_task, cvrt_half_nchwc.c): the dense convolutions keep f16 weights
 * and each task widens the group of output blocks it computes, so the
 * native result is f32 math on the exact f16 values, which the
 * interpreter computes from the same rewritten module (its casts): they
 * must agree within f32 rounding, at 1 and 2 threads (2 threads split
 * groups between tasks mid-group), for a plain 3-channel stem, fused
 * residuals, and a group too large for a thread's buffer (the fallback
 * that widens a few output blocks at a time).  The same net in the plain
 * layout checks the GEMM's f16 path as closely. */
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

/* x [N,3,20,20] -> 3x3/2 stem to 32 relu -> 3x3 to 64 relu (10 rows of 2
 * groups) -> 3x3 + itself relu -> dw 3x3 relu -> 1x1/2 to 576 -> 3x3 to 64
 * relu (36 input blocks x 9 taps x 2 output blocks: more than a thread's
 * buffer at 16 lanes; widened 2 blocks at a time) -> global pool: 64
 * values. */
static cv_module *half_net(cv_diag *d)
{
    static const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    cv_nb b = cv_nb_begin("half.cuir", d, 3, 20, 20);
    cv_value *a = cv_nb_unary(&b, "relu", cv_nb_conv(&b, b.f->inputs[0], 32, 3, 2, p1, 1, 1));
    cv_value *c = cv_nb_unary(&b, "relu", cv_nb_conv(&b, a, 64, 3, 1, p1, 1, 1));
    cv_value *r = cv_nb_conv(&b, c, 64, 3, 1, p1, 1, 1);
    r = cv_nb_unary(&b, "relu", cv_nb_binary(&b, "add", r, c));
    cv_value *u = cv_nb_unary(&b, "relu", cv_nb_conv(&b, r, 64, 3, 1, p1, 1, 64));
    cv_value *e = cv_nb_conv(&b, u, 576, 1, 2, p0, 1, 1);
    cv_value *z = cv_nb_unary(&b, "relu", cv_nb_conv(&b, e, 64, 3, 1, p1, 1, 1));
    return cv_nb_end(&b, cv_nb_unary(&b, "flatten", cv_nb_unary(&b, "global_avg_pool", z)));
}

/* got within f32 rounding of want: 1e-4 of want's range. */
static void assert_near(const cv_tensor *got, const cv_tensor *want, const char *what)
{
    assert_int_equal(got->numel, want->numel);
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < want->numel; i++) {
        lo = fminf(lo, ((const float *)want->data)[i]);
        hi = fmaxf(hi, ((const float *)want->data)[i]);
    }
    for (int64_t i = 0; i < got->numel; i++) {
        float a = ((const float *)got->data)[i], b = ((const float *)want->data)[i];
        if (!(fabsf(a - b) <= 1e-4f * (hi - lo)))
            fail_msg("%s element %lld: native %g, interpreter %g (range %g)", what, (long long)i,
                     (double)a, (double)b, (double)(hi - lo));
    }
}

/* Compiles half_net -p fp16 natively (blocked: in the NCHWc layout where
 * the CPU has AVX-512, else as the plain one), runs it at 1 and 2 threads
 * and compares both with the interpreter on the rewritten module. */
static void check(bool blocked)
{
    cv_diag d;
    cv_diag_init(&d);
    char *dir = cv_tmpdir_make("half");
    cv_tensor in, want = {0};
    int64_t dims[4] = {2, 3, 20, 20};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, 4, dims), 0);
    cv_npref_fill(&in, 3, -1, 1);
    cv_quant_opts q = {.precision = CV_PRECISION_FP16};
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = CV_EMIT_SO, .out_dir = dir,
                         .quant = &q, .no_blocked_layout = !blocked};
    cv_compile_info info;
    cv_module *m = half_net(&d);
    assert_int_equal(cv_compile_native(m, &o, &info, &d), 0);
    assert_non_null(strstr(info.quant_report, "stored as f16"));
    /* Every convolution blocked (the f16 weights are no reorder). */
    assert_int_equal(info.n_blocked_convs, blocked && info.nchwc_block ? 6 : 0);
    assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &want, &d), 0);
    for (int threads = 1; threads <= 2; threads++) {
        cv_native *n = NULL;
        cv_tensor got = {0};
        assert_int_equal(cv_native_open(dir, threads, &n, &d), 0);
        assert_int_equal(cv_native_run(n, &in, 1, &got, &d), 0);
        char what[64];
        snprintf(what, sizeof what, "%s, %d thread(s)", blocked ? "blocked" : "plain", threads);
        assert_near(&got, &want, what);
        cv_tensor_free(&got);
        cv_native_close(n);
    }
    cv_module_free(m);
    cv_tensor_free(&in);
    cv_tensor_free(&want);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

static void test_fp16_blocked_matches_interp(void **state)
{
    (void)state;
    if (!cv_nb_cpu_has(" avx512f"))
        printf("no AVX-512: the plain layout only\n");
    check(true);
}

/* The plain layout: the GEMM widens each task's K block of the packed f16
 * weights (cvrt_conv2d_p8h). */
static void test_fp16_plain_matches_interp(void **state)
{
    (void)state;
    check(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_blocked_matches_interp),
        cmocka_unit_test(test_fp16_plain_matches_interp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
