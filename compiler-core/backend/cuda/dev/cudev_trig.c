/* Trigonometric and hyperbolic functions of CUDA artifacts (sin .. atanh,
 * the libm calls the CPU lowering makes for the ONNX trig ops), in double
 * precision like dev/cudev_math.c: the float versions are correctly
 * rounded but for rare ties, the double versions within a few ulps.
 *
 * sin, cos and tan reduce x by k pi/2 with pi/2 split into five 24-bit
 * parts, so that k * part is exact for |k| < 2^29: accurate for |x| below
 * about 8e8 (a float there is already 64 apart); beyond, the reduction
 * loses digits.  Freestanding: no libc. */
#include "compiler-core/backend/cuda/dev/cudev.h"

#define TWO_OVER_PI 0.63661977236758138
#define PIO2_HI 1.5707963267948966      /* pi/2 = PIO2_HI + PIO2_LO */
#define PIO2_LO 6.123233995736766e-17
#define LN2 0.69314718055994531
#define BIG 1e150                       /* x*x would overflow past this */

/* pi/2 in 24-bit parts. */
static const double pio2_part[5] = {
    1.5707963705062866, -4.3711388286737929e-08, -1.7151245100058819e-15,
    1.0562998982203151e-23, 8.4784275662168458e-32,
};

/* 1/((2n)(2n+1)) and 1/((2n-1)(2n)), n = 1..11: the nested Taylor forms. */
static const double sin_k[11] = {
    1.0 / (2 * 3), 1.0 / (4 * 5), 1.0 / (6 * 7), 1.0 / (8 * 9), 1.0 / (10 * 11),
    1.0 / (12 * 13), 1.0 / (14 * 15), 1.0 / (16 * 17), 1.0 / (18 * 19), 1.0 / (20 * 21),
    1.0 / (22 * 23),
};
static const double cos_k[11] = {
    1.0 / (1 * 2), 1.0 / (3 * 4), 1.0 / (5 * 6), 1.0 / (7 * 8), 1.0 / (9 * 10),
    1.0 / (11 * 12), 1.0 / (13 * 14), 1.0 / (15 * 16), 1.0 / (17 * 18), 1.0 / (19 * 20),
    1.0 / (21 * 22),
};

/* sin r and cos r for |r| <= pi/4 (a little more is fine): the terms
 * past r^23/23! are below 2^-70 relative. */
static void sincos_r(double r, double *s, double *c)
{
    double r2 = r * r, ps = 1.0, pc = 1.0;
    for (int n = 10; n >= 0; n--) {
        ps = 1.0 - r2 * sin_k[n] * ps;
        pc = 1.0 - r2 * cos_k[n] * pc;
    }
    *s = r * ps;
    *c = pc;
}

/* x = k pi/2 + r; returns k mod 4, or -1 for inf and NaN (r is NaN). */
static int reduce(double x, double *r)
{
    if (!(__builtin_fabs(x) < __builtin_inf())) {
        *r = x - x;
        return -1;
    }
    double k = __builtin_floor(x * TWO_OVER_PI + 0.5);
    double v = x;
    for (int i = 0; i < 5; i++)
        v -= k * pio2_part[i];
    *r = v;
    return (int)(k - 4.0 * __builtin_floor(k * 0.25));
}

double cvd_sin(double x)
{
    double r, s, c;
    int q = reduce(x, &r);
    if (q < 0)
        return r;
    sincos_r(r, &s, &c);
    return q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
}

double cvd_cos(double x)
{
    double r, s, c;
    int q = reduce(x, &r);
    if (q < 0)
        return r;
    sincos_r(r, &s, &c);
    return q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

double cvd_tan(double x)
{
    double r, s, c;
    int q = reduce(x, &r);
    if (q < 0)
        return r;
    sincos_r(r, &s, &c);
    return q & 1 ? -c / s : s / c;
}

/* atan t for |t| <= tan(pi/16) = 0.199: t^27/27 and on are below 2^-60 relative. */
static double atan_small(double t)
{
    double t2 = t * t, p = 0.0;
    for (int n = 13; n >= 0; n--)
        p = p * t2 + (n & 1 ? -1.0 : 1.0) / (2 * n + 1);
    return t * p;
}

double cvd_atan(double x)
{
    if (x != x)
        return x + x;
    double a = __builtin_fabs(x);
    int inv = a > 1.0;
    if (inv)
        a = 1.0 / a;
    /* atan a = 2 atan(a / (1 + sqrt(1 + a^2))), twice: a <= 1 becomes <= 0.199. */
    for (int i = 0; i < 2; i++)
        a = a / (1.0 + __builtin_sqrt(1.0 + a * a));
    double r = 4.0 * atan_small(a);
    if (inv)
        r = (PIO2_HI - r) + PIO2_LO;
    return x < 0 ? -r : r;
}

double cvd_asin(double x)
{
    double a = __builtin_fabs(x);
    if (!(a <= 1.0))
        return __builtin_nan("");
    double r = a == 1.0 ? PIO2_HI : cvd_atan(a / __builtin_sqrt((1.0 - a) * (1.0 + a)));
    return x < 0 ? -r : r;
}

double cvd_acos(double x)
{
    if (!(__builtin_fabs(x) <= 1.0))
        return __builtin_nan("");
    if (x == -1.0)
        return 2.0 * PIO2_HI;
    return 2.0 * cvd_atan(__builtin_sqrt((1.0 - x) / (1.0 + x)));
}

/* log(1 + x) without cancellation near 0 (u - 1 is exact). */
double cvd_log1p(double x)
{
    double u = 1.0 + x;
    if (u == 1.0)
        return x;
    if (u == __builtin_inf())
        return u;
    return cvd_log(u) * (x / (u - 1.0));
}

double cvd_sinh(double x)
{
    double a = __builtin_fabs(x), r;
    if (a < 22.0) {
        double e = cvd_expm1(a);
        r = 0.5 * (e + e / (e + 1.0));
    } else {
        double h = cvd_exp(0.5 * a);   /* e^a / 2 without overflowing early */
        r = (0.5 * h) * h;
    }
    return x < 0 ? -r : r;
}

double cvd_cosh(double x)
{
    double a = __builtin_fabs(x);
    if (a < 22.0) {
        double e = cvd_exp(a);
        return 0.5 * (e + 1.0 / e);
    }
    double h = cvd_exp(0.5 * a);
    return (0.5 * h) * h;
}

double cvd_asinh(double x)
{
    double a = __builtin_fabs(x), r;
    if (a > BIG)
        r = cvd_log(a) + LN2;
    else
        r = cvd_log1p(a + a * a / (1.0 + __builtin_sqrt(1.0 + a * a)));
    return x < 0 ? -r : r;
}

double cvd_acosh(double x)
{
    if (!(x >= 1.0))
        return __builtin_nan("");
    if (x > BIG)
        return cvd_log(x) + LN2;
    double t = x - 1.0;
    return cvd_log1p(t + __builtin_sqrt(2.0 * t + t * t));
}

double cvd_atanh(double x)
{
    double a = __builtin_fabs(x);
    if (a > 1.0)
        return __builtin_nan("");
    double r = a == 1.0 ? __builtin_inf() : 0.5 * cvd_log1p(2.0 * a / (1.0 - a));
    return x < 0 ? -r : r;
}

float cvd_sinf(float x) { return (float)cvd_sin(x); }
float cvd_cosf(float x) { return (float)cvd_cos(x); }
float cvd_tanf(float x) { return (float)cvd_tan(x); }
float cvd_asinf(float x) { return (float)cvd_asin(x); }
float cvd_acosf(float x) { return (float)cvd_acos(x); }
float cvd_atanf(float x) { return (float)cvd_atan(x); }
float cvd_sinhf(float x) { return (float)cvd_sinh(x); }
float cvd_coshf(float x) { return (float)cvd_cosh(x); }
float cvd_asinhf(float x) { return (float)cvd_asinh(x); }
float cvd_acoshf(float x) { return (float)cvd_acosh(x); }
float cvd_atanhf(float x) { return (float)cvd_atanh(x); }
