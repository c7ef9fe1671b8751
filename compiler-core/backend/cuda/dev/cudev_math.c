/* Math functions of CUDA artifacts, compiled to NVPTX bitcode with clang-19
 * (no libdevice, no CUDA toolkit on the build machine).  The CUDA backend
 * redirects the LLVM math intrinsics and libm calls that kernels make
 * (llvm.exp, llvm.log, llvm.pow, tanh, erf: the NVPTX back end has no
 * lowering for them) to these; the trigonometric ones are in cudev_trig.c.
 *
 * Everything is computed in double precision, so the float versions are
 * correctly rounded but for rare double-rounding ties, within the CPU
 * backend's tolerances by a wide margin; the double versions are accurate
 * to a few ulps (pow to about 1e-13 relative).  Freestanding: no libc. */
#include "compiler-core/backend/cuda/dev/cudev.h"

#define LN2_HI 6.93147180369123816490e-01  /* ln 2 with its last 32 bits clear */
#define LN2_LO 1.90821492927058770002e-10
#define LOG2E 1.44269504088896338700
#define TWO_OVER_SQRTPI 1.12837916709551257390

typedef union dbits { double d; uint64_t u; } dbits;

static double inf(void) { return __builtin_inf(); }
static int is_nan(double x) { return x != x; }

/* 2^k for -1022 <= k <= 1023. */
static double pow2i(int k)
{
    dbits b = {.u = (uint64_t)(k + 1023) << 52};
    return b.d;
}

double cvd_exp(double x)
{
    if (is_nan(x))
        return x + x;
    if (x > 709.782712893384)
        return inf();
    if (x < -745.1332191019412)
        return 0.0;
    double k = __builtin_floor(x * LOG2E + 0.5);
    double r = (x - k * LN2_HI) - k * LN2_LO;   /* |r| <= 0.347 */
    /* Taylor to r^13 / 13!: the remainder is below 2^-60 relative. */
    double p = 1.0 / 6227020800.0;
    static const double inv_fact[13] = {
        1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
        1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0,
    };
    for (int i = 0; i < 13; i++)
        p = p * r + inv_fact[i];
    int ki = (int)k;
    /* Near the ends the scale alone would overflow or underflow early. */
    if (ki > 1023)
        return p * 2.0 * pow2i(ki - 1);
    if (ki < -1022)
        return p * pow2i(ki + 60) * 8.6736173798840355e-19;  /* 2^-60 */
    return p * pow2i(ki);
}

/* e^x - 1 without cancellation near 0. */
double cvd_expm1(double x)
{
    if (x > -0.35 && x < 0.35) {
        double t = x, s = x;
        for (int n = 2; n <= 16; n++) {
            t *= x / n;
            s += t;
        }
        return s;
    }
    return cvd_exp(x) - 1.0;
}

double cvd_log(double x)
{
    if (is_nan(x) || x == inf())
        return x + x;
    if (x < 0.0)
        return __builtin_nan("");
    if (x == 0.0)
        return -inf();
    dbits b = {.d = x};
    int e = 0;
    if (b.u >> 52 == 0) {           /* subnormal */
        b.d = x * 18014398509481984.0;  /* 2^54 */
        e = -54;
    }
    e += (int)(b.u >> 52) - 1023;
    b.u = (b.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;     /* m in [1, 2) */
    double m = b.d;
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    /* log m = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716. */
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
    for (int n = 12; n >= 1; n--)
        sum = sum * s2 + 1.0 / (2 * n + 1);
    double lm = 2.0 * s + 2.0 * s * s2 * sum;
    return e * LN2_HI + (e * LN2_LO + lm);
}

static int is_int(double y) { return __builtin_floor(y) == y; }
static int is_odd_int(double y)
{
    return is_int(y) && __builtin_fabs(y) < 9007199254740992.0 && __builtin_fmod(y, 2.0) != 0.0;
}

/* C99's pow, special cases included. */
double cvd_pow(double x, double y)
{
    if (y == 0.0 || x == 1.0)
        return 1.0;
    if (is_nan(x) || is_nan(y))
        return x + y;
    if (x == -1.0 && __builtin_fabs(y) == inf())
        return 1.0;
    int neg = 0;
    if (x < 0.0 || (x == 0.0 && __builtin_signbit(x))) {
        if (x != 0.0 && x != -inf() && !is_int(y))
            return __builtin_nan("");
        neg = is_odd_int(y);
        x = -x;
    }
    double r;
    if (x == 0.0)
        r = y < 0.0 ? inf() : 0.0;
    else
        r = cvd_exp(y * cvd_log(x));
    return neg ? -r : r;
}

double cvd_tanh(double x)
{
    if (is_nan(x))
        return x + x;
    double a = __builtin_fabs(x);
    if (a > 22.0)
        return x < 0 ? -1.0 : 1.0;
    double e = cvd_expm1(2.0 * a), r = e / (e + 2.0);
    return x < 0 ? -r : r;
}

/* erf x = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (1*3*...*(2n+1)): every
 * term positive, so no cancellation; erf is 1 in double past 6. */
static double erf_d(double x, double one_past)
{
    if (is_nan(x))
        return x + x;
    double a = __builtin_fabs(x);
    if (a >= one_past)
        return x < 0 ? -1.0 : 1.0;
    double q = 2.0 * a * a, t = a, s = a;
    for (int n = 1; n < 400 && t > s * 1e-17; n++) {
        t *= q / (2 * n + 1);
        s += t;
    }
    double r = TWO_OVER_SQRTPI * cvd_exp(-a * a) * s;
    return x < 0 ? -r : r;
}

double cvd_erf(double x) { return erf_d(x, 6.0); }

/* float erf rounds to 1 past 3.92. */
float cvd_erff(float x) { return (float)erf_d(x, 4.0); }
float cvd_expf(float x) { return (float)cvd_exp(x); }
float cvd_logf(float x) { return (float)cvd_log(x); }
float cvd_powf(float x, float y) { return (float)cvd_pow(x, y); }
float cvd_tanhf(float x) { return (float)cvd_tanh(x); }
