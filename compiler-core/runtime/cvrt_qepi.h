/* Internal to the int8 kernels (cvrt_qconv.c, cvrt_qdwconv.c): quantising
 * f32 lanes to u8, u8 lanes to int32, and the shared epilogue that adds a
 * (f32 or u8) residual, applies the activation and writes f32 or u8 (the
 * output requantised for the next int8 layer, so it never exists in f32). */
#ifndef CVRT_QEPI_H
#define CVRT_QEPI_H
#include "compiler-core/runtime/cvrt_vec.h"

typedef uint8_t cvrt_vb __attribute__((vector_size(CVRT_VL), aligned(1)));

/* round_half_even(v / s) + zp saturated to [0, 255], lane by lane, as the
 * interpreter computes it (a true division, not a reciprocal). */
static inline cvrt_vi cvrt_quant_vec(cvrt_vf v, float s, int32_t zp)
{
    cvrt_vf q = v / cvrt_splat(s), lo = cvrt_splat((float)-zp), hi = cvrt_splat((float)(255 - zp));
    q = cvrt_select(q > lo, q, lo);     /* NaN becomes lo: the zero point, like 0 */
    q = cvrt_select(q < hi, q, hi);
    q = (q + cvrt_splat(12582912.0f)) - cvrt_splat(12582912.0f);  /* |q| <= 255 */
    return __builtin_convertvector(q, cvrt_vi) + zp;
}

/* The requantisation of an int8 kernel's output: round_half_even(v *
 * inv) + zp saturated, inv = 1 / y_scale rounded to f32 once (what the
 * interpreter's qconv2d computes; a multiply, not a division). */
static inline cvrt_vi cvrt_requant_vec(cvrt_vf v, float inv, int32_t zp)
{
    cvrt_vf q = v * cvrt_splat(inv), lo = cvrt_splat((float)-zp), hi = cvrt_splat((float)(255 - zp));
    q = cvrt_select(q > lo, q, lo);
    q = cvrt_select(q < hi, q, hi);
    q = (q + cvrt_splat(12582912.0f)) - cvrt_splat(12582912.0f);
    return __builtin_convertvector(q, cvrt_vi) + zp;
}

/* Lanes [0, n) of p as int32 (the others fill). */
static inline cvrt_vi cvrt_load_u8(const uint8_t *p, int64_t n, int32_t fill)
{
    if (n == CVRT_VL)
        return __builtin_convertvector(*(const cvrt_vb *)p, cvrt_vi);
#if defined(CVRT_AVX512)
    __mmask16 m = (__mmask16)((1u << n) - 1);
    cvrt_vi v = (cvrt_vi)_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p));
    return (cvrt_vi)_mm512_mask_blend_epi32(m, _mm512_set1_epi32(fill), (__m512i)v);
#else
    cvrt_vi v = (cvrt_vi){0} + fill;
    for (int64_t i = 0; i < n; i++)
        v[i] = p[i];
    return v;
#endif
}

static inline void cvrt_store_u8(uint8_t *p, cvrt_vi v, int64_t n)
{
    if (n == CVRT_VL) {
        *(cvrt_vb *)p = __builtin_convertvector(v, cvrt_vb);
        return;
    }
#if defined(CVRT_AVX512)
    _mm_mask_storeu_epi8(p, (__mmask16)((1u << n) - 1), _mm512_cvtepi32_epi8((__m512i)v));
#else
    for (int64_t i = 0; i < n; i++)
        p[i] = (uint8_t)v[i];
#endif
}

/* Where an int8 kernel's results go. */
typedef struct cvrt_qout {
    void *y;                    /* f32 or u8 (flags) */
    const void *res;            /* NULL, f32 or u8 */
    int64_t flags, act;
    float lo, hi, yinv, rs;     /* yinv: 1 / y_scale */
    int32_t yzp, rzp;
} cvrt_qout;

/* Elements [off, off + n) of the output: v (scaled, biased) plus the
 * residual, through the activation, stored as f32 or requantised u8.
 * Callers keep a local copy of the cvrt_qout outside their loops. */
static inline __attribute__((always_inline)) void cvrt_qstore(cvrt_qout out, int64_t off,
                                                               cvrt_vf v, int64_t n)
{
    /* By value: a u8 store may alias anything, so fields read through a
     * pointer would be reloaded (and their splats redone) every call. */
    const cvrt_qout *o = &out;
    if (o->res && (o->flags & CVRT_Q_RU8))
        v += __builtin_convertvector(cvrt_load_u8((const uint8_t *)o->res + off, n, o->rzp) -
                                     o->rzp, cvrt_vf) * cvrt_splat(o->rs);
    else if (o->res)
        v += cvrt_load_mask((const float *)o->res + off, 0, n);
    if (o->act == 1) {
        v = cvrt_select(v < 0.0f, cvrt_splat(0.0f), v);
    } else if (o->act == 2) {
        v = cvrt_select(v < o->lo, cvrt_splat(o->lo), v);  /* NaN stays */
        v = cvrt_select(v > o->hi, cvrt_splat(o->hi), v);
    }
    if (o->flags & CVRT_Q_YU8)
        cvrt_store_u8((uint8_t *)o->y + off, cvrt_requant_vec(v, o->yinv, o->yzp), n);
    else
        cvrt_store_mask((float *)o->y + off, v, 0, n);
}

#endif
