/* The CUDA backend's device code compiled for this machine (freestanding
 * C; on the host one thread does every item): the device math
 * (dev/cudev_math.c, cudev_trig.c) against libm, and the runtime routines'
 * kernels (dev/cudev_rt.c) against plain loops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "compiler-core/backend/cuda/dev/cudev_math.c"
#include "compiler-core/backend/cuda/dev/cudev_rt.c"
#include "compiler-core/backend/cuda/dev/cudev_trig.c"

/* ---- device math (dev/cudev_math.c) against libm ------------------------------------- */

static double ulp_f(float want) { return (double)nextafterf(fabsf(want), INFINITY) - fabsf(want); }

static void check_f(const char *name, float got, float want, float x)
{
    if (isnan(want) ? !isnan(got) : got != want && fabs((double)got - want) > 2 * ulp_f(want))
        fail_msg("%s(%.9g) = %.9g, libm %.9g", name, x, got, want);
}

static void check_d(const char *name, double got, double want, double x, double rtol)
{
    if (isnan(want) ? !isnan(got) : got != want && fabs(got - want) > rtol * fabs(want) + 1e-300)
        fail_msg("%s(%.17g) = %.17g, libm %.17g", name, x, got, want);
}

static void test_device_math(void **state)
{
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                                     1e-30f, -1e-30f, 88.7f, -103.9f, 1e-45f, 3.4e38f};
    for (int i = -20000; i <= 20000 + (int)(sizeof specials / sizeof specials[0]); i++) {
        float x = i <= 20000 ? (float)i * 0.0047f : specials[i - 20001];
        check_f("expf", cvd_expf(x), expf(x), x);
        check_f("logf", cvd_logf(fabsf(x) * 13.0f), logf(fabsf(x) * 13.0f), fabsf(x) * 13.0f);
        check_f("tanhf", cvd_tanhf(x), tanhf(x), x);
        check_f("erff", cvd_erff(x), erff(x), x);
        check_f("powf", cvd_powf(fabsf(x), 1.7f), powf(fabsf(x), 1.7f), x);
        check_f("powf", cvd_powf(x, 3.0f), powf(x, 3.0f), x);
        double y = (double)x * 7.3;
        check_d("exp", cvd_exp(y), exp(y), y, 4e-16);
        check_d("log", cvd_log(fabs(y)), log(fabs(y)), y, 4e-16);
        check_d("tanh", cvd_tanh(y), tanh(y), y, 4e-16);
        check_d("erf", cvd_erf(x), erf(x), x, 4e-15);
        check_d("pow", cvd_pow(fabs(y), 0.37), pow(fabs(y), 0.37), y, 1e-13);
    }
    static const float pw[][2] = {{-2, 3}, {-2, 0.5f}, {0, -1}, {-0.0f, -3}, {-0.0f, 2},
                                  {NAN, 0}, {1, NAN}, {-1, INFINITY}, {0.5f, INFINITY},
                                  {2, -INFINITY}, {-INFINITY, 3}, {-INFINITY, 2}};
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++) {
        float a = pw[i][0], b = pw[i][1], got = cvd_powf(a, b), want = powf(a, b);
        if (isnan(want) ? !isnan(got) : (got != want || signbit(got) != signbit(want)))
            fail_msg("powf(%g, %g) = %g, libm %g", a, b, got, want);
    }
}

/* The trigonometric functions (dev/cudev_trig.c): floats within 2 ulps of
 * libm, doubles within 1e-14 relative (near a zero of sin, cos or tan,
 * 1e-14 of the argument's size absolute). */
static void test_device_trig(void **state)
{
    typedef struct fn {
        const char *name;
        float (*df)(float);
        float (*lf)(float);
        double (*dd)(double);
        double (*ld)(double);
        float lo, hi;
    } fn;
    static const fn fns[] = {
        {"sin", cvd_sinf, sinf, cvd_sin, sin, -1e4f, 1e4f},
        {"cos", cvd_cosf, cosf, cvd_cos, cos, -1e4f, 1e4f},
        {"tan", cvd_tanf, tanf, cvd_tan, tan, -40, 40},
        {"asin", cvd_asinf, asinf, cvd_asin, asin, -1.2f, 1.2f},
        {"acos", cvd_acosf, acosf, cvd_acos, acos, -1.2f, 1.2f},
        {"atan", cvd_atanf, atanf, cvd_atan, atan, -300, 300},
        {"sinh", cvd_sinhf, sinhf, cvd_sinh, sinh, -95, 95},
        {"cosh", cvd_coshf, coshf, cvd_cosh, cosh, -95, 95},
        {"asinh", cvd_asinhf, asinhf, cvd_asinh, asinh, -1e5f, 1e5f},
        {"acosh", cvd_acoshf, acoshf, cvd_acosh, acosh, 0.5f, 1e5f},
        {"atanh", cvd_atanhf, atanhf, cvd_atanh, atanh, -1.1f, 1.1f},
    };
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                                     1e-30f, -1e-30f, 1e-45f, 3.4e38f, 3.14159274f, 1.57079637f};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        const fn *t = &fns[f];
        for (int i = 0; i <= 20000 + (int)(sizeof specials / sizeof specials[0]); i++) {
            bool special = i > 20000;
            float x = special ? specials[i - 20001] : t->lo + (t->hi - t->lo) * (float)i / 20000.0f;
            bool trig = f < 3;
            /* Past 8e8 the reduction loses digits (dev/cudev_trig.c). */
            if (trig && fabsf(x) > 8e8f && isfinite(x))
                continue;
            check_f(t->name, t->df(x), t->lf(x), x);
            double y = special ? x : (double)x + 1e-9 * i;
            double got = t->dd(y), want = t->ld(y);
            double scale = trig ? fabs(y) + 1 : 0;
            if (isnan(want) ? !isnan(got) : got != want && fabs(got - want) > 1e-14 * (fabs(want) + scale) + 1e-300)
                fail_msg("%s(%.17g) = %.17g, libm %.17g", t->name, y, got, want);
        }
    }
}

/* ---- the routines' device kernels (dev/cudev_rt.c) against plain loops -------------- */

static uint64_t g_rng = 88172645463325252ull;

static float rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *rnd_buf(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

static void expect_close(const char *what, const float *got, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-5 + 1e-5 * fabs(want[i]))
            fail_msg("%s: element %lld: got %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

static double ref_epilogue(double v, const float *res, int64_t at, int64_t act, float lo, float hi)
{
    v += res ? res[at] : 0.0;
    return act == 1 ? (v < 0 ? 0 : v) : act == 2 ? (v < lo ? lo : v > hi ? hi : v) : v;
}

/* cvdk_sgemm (and cvdk_sgemm_h, B in f16) with transposed strides, a
 * broadcast bias, accumulation, a residual and each activation. */
static void test_dev_sgemm(void **state)
{
    enum { M = 19, N = 23, K = 37 };
    float *a = rnd_buf(M * K), *b = rnd_buf(K * N), *bias = rnd_buf(N), *res = rnd_buf(M * N);
    float *c = rnd_buf(M * N), *c0 = malloc(sizeof(float) * M * N);
    double *want = malloc(sizeof(double) * M * N);
    uint16_t *bh = malloc(sizeof(uint16_t) * K * N);
    assert_non_null(c0);
    assert_non_null(want);
    assert_non_null(bh);
    for (int64_t i = 0; i < K * N; i++) {
        bh[i] = cv_f32_to_f16(b[i]);
        b[i] = cv_f16_to_f32(bh[i]);
    }
    memcpy(c0, c, sizeof(float) * M * N);
    for (int act = 0; act < 3; act++) {
        memcpy(c, c0, sizeof(float) * M * N);
        /* A as given row-major (ars K, acs 1); B read transposed (brs 1, bcs K). */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)a[i * K + k] * b[j * K + k];
                double v = 0.5 * s + 2.0 * bias[j] + c0[i * N + j];
                want[i * N + j] = ref_epilogue(v, res, i * N + j, act, -0.5f, 0.75f);
            }
        cvdk_sgemm(M, N, K, 0.5f, a, K, 1, b, 1, K, c, N, 1, bias, 0, 1, 2.0f, res, N, act, -0.5f,
                   0.75f);
        expect_close("cvdk_sgemm", c, want, M * N);
        /* B in f16 (-p fp16 weights; b holds f16 values exactly). */
        memcpy(c, c0, sizeof(float) * M * N);
        cvdk_sgemm_h(M, N, K, 0.5f, a, K, 1, bh, 1, K, c, N, 1, bias, 0, 1, 2.0f, res, N, act,
                     -0.5f, 0.75f);
        expect_close("cvdk_sgemm_h", c, want, M * N);
    }
    free(a), free(b), free(bh), free(bias), free(res), free(c), free(c0), free(want);
}

typedef struct cgeo {
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
} cgeo;

/* y[oc, oh, ow] of a dense (groups 1) or depthwise (dw) convolution. */
static void ref_conv(const cgeo *g, bool dw, const float *x, const float *w, const float *bias,
                     const float *res, int64_t act, double *y)
{
    for (int64_t oc = 0; oc < g->OC; oc++)
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                double s = bias ? bias[oc] : 0;
                for (int64_t c = dw ? oc : 0; c < (dw ? oc + 1 : g->C); c++)
                    for (int64_t kh = 0; kh < g->KH; kh++)
                        for (int64_t kw = 0; kw < g->KW; kw++) {
                            int64_t ih = oh * g->sh - g->pt + kh * g->dh, iw = ow * g->sw - g->pl + kw * g->dw;
                            if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
                                continue;
                            int64_t wc = dw ? 0 : c;
                            s += (double)w[((oc * (dw ? 1 : g->C) + wc) * g->KH + kh) * g->KW + kw] *
                                 x[(c * g->H + ih) * g->W + iw];
                        }
                int64_t at = (oc * g->OH + oh) * g->OW + ow;
                y[at] = ref_epilogue(s, res, at, act, 0, 0);
            }
}

/* cvdk_conv2d, cvdk_conv2d_p8 (weights packed as cvrt.h's P8),
 * cvdk_conv2d_p8h (P8 in f16 or bf16) and cvdk_dwconv2d: strides,
 * padding, dilation, bias, residual, relu. */
static void test_dev_conv(void **state)
{
    static const cgeo geos[] = {
        {3, 9, 8, 5, 3, 2, 2, 2, 1, 0, 1, 1, 5, 4},
        {4, 7, 7, 13, 3, 3, 1, 1, 2, 1, 2, 1, 7, 7},
        {16, 5, 5, 9, 1, 1, 1, 1, 0, 0, 1, 1, 5, 5},
    };
    for (size_t gi = 0; gi < sizeof geos / sizeof geos[0]; gi++) {
        const cgeo *g = &geos[gi];
        int64_t K = g->C * g->KH * g->KW, ny = g->OC * g->OH * g->OW, mp = (g->OC + 7) / 8 * 8;
        int64_t most = (g->OC > g->C ? g->OC : g->C) * g->OH * g->OW;   /* dense or depthwise */
        float *x = rnd_buf(g->C * g->H * g->W), *w = rnd_buf(g->OC * K), *bias = rnd_buf(g->OC);
        float *res = rnd_buf(ny), *y = rnd_buf(most), *wp = calloc((size_t)(mp * K), sizeof *wp);
        double *want = malloc(sizeof(double) * (size_t)most);
        assert_non_null(wp);
        assert_non_null(want);
        /* Weights that f16 holds exactly, so the 16-bit P8 form (-p fp16)
         * computes the same; bf16 of the same bits widened is checked too. */
        uint16_t *wh = calloc((size_t)(mp * K), sizeof *wh);
        assert_non_null(wh);
        for (int64_t i = 0; i < g->OC * K; i++)
            w[i] = cv_f16_to_f32(cv_f32_to_f16(w[i]));
        for (int64_t i = 0; i < g->OC; i++)
            for (int64_t k = 0; k < K; k++) {
                wp[((i / 8) * K + k) * 8 + i % 8] = w[i * K + k];
                wh[((i / 8) * K + k) * 8 + i % 8] = cv_f32_to_f16(w[i * K + k]);
            }
        ref_conv(g, false, x, w, bias, res, 1, want);
        memset(y, 0, sizeof(float) * (size_t)ny);
        cvdk_conv2d_p8h(x, wh, 1, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                        g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8h", y, want, ny);
        /* The same weights as bf16 (truncated) against their own reference. */
        float *wb = malloc(sizeof(float) * (size_t)(g->OC * K));
        double *wantb = malloc(sizeof(double) * (size_t)ny);
        assert_non_null(wb);
        assert_non_null(wantb);
        for (int64_t i = 0; i < g->OC; i++)
            for (int64_t k = 0; k < K; k++) {
                uint16_t b = cv_f32_to_bf16(w[i * K + k]);
                wb[i * K + k] = cv_bf16_to_f32(b);
                wh[((i / 8) * K + k) * 8 + i % 8] = b;
            }
        ref_conv(g, false, x, wb, bias, res, 1, wantb);
        cvdk_conv2d_p8h(x, wh, 2, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                        g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8h bf16", y, wantb, ny);
        free(wh), free(wb), free(wantb);
        cvdk_conv2d(x, w, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw, g->pt,
                    g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0);
        expect_close("cvdk_conv2d", y, want, ny);
        memset(y, 0, sizeof(float) * (size_t)ny);
        cvdk_conv2d_p8(x, wp, bias, y, g->C, g->H, g->W, g->OC, g->KH, g->KW, g->sh, g->sw,
                       g->pt, g->pl, g->dh, g->dw, g->OH, g->OW, res, 1, 0, 0, NULL);
        expect_close("cvdk_conv2d_p8", y, want, ny);
        /* Depthwise: C = OC channels, one KH x KW filter each. */
        cgeo d = *g;
        d.OC = d.C;
        int64_t nd = d.C * d.OH * d.OW;
        ref_conv(&d, true, x, w, NULL, NULL, 0, want);
        cvdk_dwconv2d(x, w, NULL, y, d.C, d.H, d.W, d.KH, d.KW, d.sh, d.sw, d.pt, d.pl, d.dh, d.dw,
                      d.OH, d.OW, NULL, 0, 0, 0);
        expect_close("cvdk_dwconv2d", y, want, nd);
        /* Two images in one call (the batched launch the host runtime makes). */
        int64_t nx = d.C * d.H * d.W;
        float *x2 = rnd_buf(2 * nx), *y2 = rnd_buf(2 * nd);
        cvdk_dwconv2d_b(x2, w, NULL, y2, d.C, d.H, d.W, d.KH, d.KW, d.sh, d.sw, d.pt, d.pl, d.dh,
                        d.dw, d.OH, d.OW, NULL, 0, 0, 0, 2, nx, nd);
        for (int b = 0; b < 2; b++) {
            ref_conv(&d, true, x2 + b * nx, w, NULL, NULL, 0, want);
            expect_close("cvdk_dwconv2d_b", y2 + b * nd, want, nd);
        }
        free(x2), free(y2);
        free(x), free(w), free(bias), free(res), free(y), free(wp), free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_math),
        cmocka_unit_test(test_device_trig),
        cmocka_unit_test(test_dev_sgemm),
        cmocka_unit_test(test_dev_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
