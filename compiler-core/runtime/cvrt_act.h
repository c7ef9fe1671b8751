/* Internal to the runtime: the epilogue activations (cvrt.h's CVRT_ACT_*),
 * defined once for every kernel that applies them (the GEMM, the implicit
 * GEMM convolutions, depthwise, blocked and int8 kernels).  The scalar
 * form is the vector form's lane 0, so a border element gets the value its
 * neighbours in a vector would. */
#ifndef CVRT_ACT_H
#define CVRT_ACT_H

#include "compiler-core/runtime/cvrt_vec.h"

/* e^x lane by lane: x = n ln2 + r, |r| <= ln2/2, Cephes' expf polynomial
 * for e^r (relative error below 2e-7), 2^n from the exponent bits.  x is
 * clamped to [-87.3, 88] (n stays a normal exponent); NaN stays NaN. */
static inline cvrt_vf cvrt_exp_vec(cvrt_vf x)
{
    cvrt_vi nan = x != x;
    cvrt_vf c = cvrt_select(nan, (cvrt_vf){0}, x);
    c = cvrt_select(c > cvrt_splat(88.0f), cvrt_splat(88.0f), c);
    c = cvrt_select(c < cvrt_splat(-87.3f), cvrt_splat(-87.3f), c);
    /* round to nearest (|x log2 e| < 2^22) */
    cvrt_vf n = (c * cvrt_splat(1.44269504088896341f) + cvrt_splat(12582912.0f)) -
                cvrt_splat(12582912.0f);
    cvrt_vf r = c - n * cvrt_splat(0.693359375f);
    r = r + n * cvrt_splat(2.12194440e-4f);
    cvrt_vf p = cvrt_splat(1.9875691500e-4f);
    p = p * r + cvrt_splat(1.3981999507e-3f);
    p = p * r + cvrt_splat(8.3334519073e-3f);
    p = p * r + cvrt_splat(4.1665795894e-2f);
    p = p * r + cvrt_splat(1.6666665459e-1f);
    p = p * r + cvrt_splat(5.0000001201e-1f);
    p = p * r * r + r + cvrt_splat(1.0f);
    cvrt_vi e = (__builtin_convertvector(n, cvrt_vi) + 127) << 23;
    return cvrt_select(nan, x, p * (cvrt_vf)e);
}

/* The activations with a transcendental or a division.  Inline: a call
 * from a store loop whose accumulators are all live (the blocked and GEMM
 * tiles hold up to 28 vectors) spills every one of them (no vector
 * register survives a call), which made efficientnet_b0 slower. */
static inline __attribute__((always_inline)) cvrt_vf cvrt_act_slow(cvrt_vf v, int64_t act)
{
    if (act == CVRT_ACT_SILU)
        return v / (cvrt_splat(1.0f) + cvrt_exp_vec(-v));
    /* hard_swish: v * min(max(v/6 + 1/2, 0), 1) */
    cvrt_vf g = v / cvrt_splat(6.0f) + cvrt_splat(0.5f);
    g = cvrt_select(g < (cvrt_vf){0}, (cvrt_vf){0}, g);
    g = cvrt_select(g > cvrt_splat(1.0f), cvrt_splat(1.0f), g);
    return v * g;
}

static inline __attribute__((always_inline)) cvrt_vf cvrt_act_vec(cvrt_vf v, int64_t act,
                                                                  float lo, float hi)
{
    if (act == CVRT_ACT_RELU)
        return cvrt_select(v < (cvrt_vf){0}, (cvrt_vf){0}, v);
    if (act == CVRT_ACT_CLIP)   /* max first: lo > hi gives hi; NaN stays */
        return cvrt_select(v > cvrt_splat(hi), cvrt_splat(hi),
                           cvrt_select(v < cvrt_splat(lo), cvrt_splat(lo), v));
    if (act == CVRT_ACT_SILU || act == CVRT_ACT_HARD_SWISH)
        return cvrt_act_slow(v, act);
    return v;
}

static inline float cvrt_act_f32(float v, int64_t act, float lo, float hi)
{
    return act ? cvrt_act_vec(cvrt_splat(v), act, lo, hi)[0] : v;
}

#endif
