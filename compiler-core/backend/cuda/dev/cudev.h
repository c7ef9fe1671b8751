/* The device runtime of CUDA artifacts (compiler-core/backend/cuda/dev/):
 * C compiled with clang-19 for nvptx64-nvidia-cuda to LLVM bitcode when
 * cuvil is built (cuda/build.mk), embedded in the LLVM plugin and linked
 * into every CUDA artifact's device module.  Freestanding: no libc, no
 * CUDA headers; thread indices come from clang's NVPTX builtins.
 *
 * Functions named cvdk_* are kernels: the backend gives them the PTX kernel
 * calling convention (plain C has no __global__), and the artifact's host
 * runtime launches them with the parameters of their cvrt.h counterparts
 * (less the context). */
#ifndef CVDEV_H
#define CVDEV_H

#include <stdint.h>

#ifdef __NVPTX__
/* The first item of this thread and the stride of a grid-stride loop. */
static inline int64_t cvd_gid(void)
{
    return (int64_t)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
           __nvvm_read_ptx_sreg_tid_x();
}

static inline int64_t cvd_gstride(void)
{
    return (int64_t)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
}
#else
/* Compiled for the host (tests/unit/compiler-core/backend/test_cuda.c checks the kernels'
 * arithmetic on the CPU): one thread does every item. */
static inline int64_t cvd_gid(void) { return 0; }
static inline int64_t cvd_gstride(void) { return 1; }
#endif

/* t / d, and t % d in *rem, in 32-bit arithmetic where both fit (a 64-bit
 * division is a long instruction sequence on the GPU). */
static inline int64_t cvd_divmod(int64_t t, int64_t d, int64_t *rem)
{
    if ((((uint64_t)t | (uint64_t)d) >> 31) == 0) {
        uint32_t q = (uint32_t)t / (uint32_t)d;
        *rem = (int64_t)((uint32_t)t - q * (uint32_t)d);
        return (int64_t)q;
    }
    *rem = t % d;
    return t / d;
}

float cvd_expf(float x);   /* dev/cudev_math.c */

/* The epilogue of cvrt.h's cvrt_epilogue: residual, then act (CVRT_ACT_*:
 * relu, clip (NaN stays), silu, hard_swish). */
static inline float cvd_epilogue(float v, const float *res, int64_t at, int64_t act, float lo,
                                 float hi)
{
    if (res)
        v += res[at];
    if (act == 1)
        v = v < 0.0f ? 0.0f : v;
    else if (act == 2)
        v = v < lo ? lo : v > hi ? hi : v;
    else if (act == 3)
        v = v / (1.0f + cvd_expf(-v));
    else if (act == 4) {
        float g = v / 6.0f + 0.5f;
        g = g < 0.0f ? 0.0f : g;
        v = v * (g > 1.0f ? 1.0f : g);
    }
    return v;
}

/* A 16-bit weight widened: kind 2 bf16, else IEEE half (cvrt.h's
 * CVRT_W_*); portable (the naive kernels run on the host in unit tests). */
static inline float cvd_half_to_float(uint16_t h, int64_t kind)
{
    uint32_t bits, sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff;
    if (kind == 2) {
        bits = (uint32_t)h << 16;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | m << 13;
    } else if (e) {
        bits = sign | (e + 112) << 23 | m << 13;
    } else if (!m) {
        bits = sign;
    } else {
        for (e = 113; !(m & 0x400); e--)
            m <<= 1;
        bits = sign | e << 23 | (m & 0x3ff) << 13;
    }
    union {
        uint32_t u;
        float f;
    } v = {bits};
    return v.f;
}

double cvd_exp(double x);
double cvd_log(double x);
double cvd_pow(double x, double y);
double cvd_tanh(double x);
double cvd_erf(double x);
float cvd_expf(float x);
float cvd_logf(float x);
float cvd_powf(float x, float y);
float cvd_tanhf(float x);
float cvd_erff(float x);
double cvd_expm1(double x);
double cvd_log1p(double x);

/* dev/cudev_trig.c */
double cvd_sin(double x);
double cvd_cos(double x);
double cvd_tan(double x);
double cvd_asin(double x);
double cvd_acos(double x);
double cvd_atan(double x);
double cvd_sinh(double x);
double cvd_cosh(double x);
double cvd_asinh(double x);
double cvd_acosh(double x);
double cvd_atanh(double x);
float cvd_sinf(float x);
float cvd_cosf(float x);
float cvd_tanf(float x);
float cvd_asinf(float x);
float cvd_acosf(float x);
float cvd_atanf(float x);
float cvd_sinhf(float x);
float cvd_coshf(float x);
float cvd_asinhf(float x);
float cvd_acoshf(float x);
float cvd_atanhf(float x);

#endif
