/* Internal to the int8 kernels (cvrt_qconv.c, cvrt_qdwconv.c): quantising
 * f32 lanes to u8, u8 lanes to int32, and the shared epilogue that adds a
 * (f32 or u8) residual, applies the activation and writes f32 or u8 (the
 * output requantised for the next int8 layer, so it never exists in f32).
 * u8 activations (the values between int8 layers) are stored channels
 * last, [N][H][W][C]; f32 ones in the IR's NCHW order (the strided loads,
 * stores and the transpose below move lanes between the two). */
#ifndef CVRT_QEPI_H
#define CVRT_QEPI_H
#include "compiler-core/runtime/cvrt_act.h"

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

/* v plus the u8 residual's elements [ro, ro + n), dequantised. */
static inline __attribute__((always_inline)) cvrt_vf cvrt_qres_u8(const cvrt_qout *o, int64_t ro,
                                                                  cvrt_vf v, int64_t n)
{
    return v + __builtin_convertvector(cvrt_load_u8((const uint8_t *)o->res + ro, n, o->rzp) -
                                       o->rzp, cvrt_vf) * cvrt_splat(o->rs);
}

/* v through the activation. */
static inline __attribute__((always_inline)) cvrt_vf cvrt_qact(const cvrt_qout *o, cvrt_vf v)
{
    return cvrt_act_vec(v, o->act, o->lo, o->hi);
}

/* Elements [yo, yo + n) of the output: v (scaled, biased) plus the
 * residual's elements [ro, ro + n), through the activation, stored as f32
 * or requantised u8.  Callers keep a local copy of the cvrt_qout outside
 * their loops. */
static inline __attribute__((always_inline)) void cvrt_qstore2(cvrt_qout out, int64_t yo,
                                                                int64_t ro, cvrt_vf v, int64_t n)
{
    /* By value: a u8 store may alias anything, so fields read through a
     * pointer would be reloaded (and their splats redone) every call. */
    const cvrt_qout *o = &out;
    if (o->res && (o->flags & CVRT_Q_RU8))
        v = cvrt_qres_u8(o, ro, v, n);
    else if (o->res)
        v += cvrt_load_mask((const float *)o->res + ro, 0, n);
    v = cvrt_qact(o, v);
    if (o->flags & CVRT_Q_YU8)
        cvrt_store_u8((uint8_t *)o->y + yo, cvrt_requant_vec(v, o->yinv, o->yzp), n);
    else
        cvrt_store_mask((float *)o->y + yo, v, 0, n);
}

/* The output and the residual at the same offset (both f32, or both u8). */
static inline __attribute__((always_inline)) void cvrt_qstore(cvrt_qout out, int64_t off,
                                                               cvrt_vf v, int64_t n)
{
    cvrt_qstore2(out, off, off, v, n);
}

/* The u8 output of a block without an f32 residual, in fewer steps: the
 * activation's bounds, scaled by 1 / y_scale, merge with the u8 range
 * (multiplying by a positive number keeps the order of the rounded
 * products, so clamping before or after it gives the same value), then
 * one rounding to the nearest even.  Only for sums of integers (finite:
 * no NaN to map to the zero point). */
typedef struct cvrt_qfast {
    float yinv, qlo, qhi, rs;   /* qlo, qhi: the bounds of v / y_scale */
    int32_t yzp, rzp;
    const uint8_t *res;         /* NULL or the u8 residual */
} cvrt_qfast;

/* Whether o takes the fast store, and its constants. */
static inline int cvrt_qfast_init(const cvrt_qout *o, cvrt_qfast *f)
{
    if (!(o->flags & CVRT_Q_YU8) || (o->res && !(o->flags & CVRT_Q_RU8)))
        return 0;
    float lo = (float)-o->yzp, hi = (float)(255 - o->yzp);
    if (o->act > CVRT_ACT_CLIP)
        return 0;
    if (o->act == 1) {
        lo = lo > 0.0f ? lo : 0.0f;
    } else if (o->act == 2) {
        float a = o->lo * o->yinv, b = o->hi * o->yinv;
        if (!(a <= b))
            return 0;
        lo = lo > a ? lo : a;
        hi = hi < b ? hi : b;
    }
    if (!(lo <= hi))
        return 0;
    *f = (cvrt_qfast){o->yinv, lo, hi, o->rs, o->yzp, o->rzp, (const uint8_t *)o->res};
    return 1;
}

/* Elements [off, off + n) of the u8 output (and residual). */
static inline __attribute__((always_inline)) void cvrt_qfast_store(const cvrt_qfast *f,
        uint8_t *y, int64_t off, cvrt_vf v, int64_t n)
{
    if (f->res)
        v += __builtin_convertvector(cvrt_load_u8(f->res + off, n, f->rzp) - f->rzp, cvrt_vf) *
             cvrt_splat(f->rs);
    v *= cvrt_splat(f->yinv);
    v = cvrt_select(v < f->qlo, cvrt_splat(f->qlo), v);
    v = cvrt_select(v > f->qhi, cvrt_splat(f->qhi), v);
#if defined(CVRT_AVX512)
    cvrt_vi q = (cvrt_vi)_mm512_cvtps_epi32((__m512)v);    /* MXCSR: nearest even */
#else
    cvrt_vi q = __builtin_convertvector((v + cvrt_splat(12582912.0f)) - cvrt_splat(12582912.0f),
                                        cvrt_vi);
#endif
    cvrt_store_u8(y + off, q + f->yzp, n);
}

#if defined(CVRT_AVX512)
/* r[k] = column k of the 16x16 int32 matrix whose rows r held. */
static inline void transpose16(__m512i *r)
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)
        for (int k = 0; k < 4; k++) {
            t[i + k] = _mm512_shuffle_i32x4(r[i + k], r[i + k + 4], 0x88);
            t[i + k + 4] = _mm512_shuffle_i32x4(r[i + k], r[i + k + 4], 0xdd);
        }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0xdd);
    }
}
#endif

/* Lanes [0, n) of base[l * stride] (f32, NCHW: one channel per lane). */
static inline cvrt_vf load_strided(const float *base, int64_t stride, int64_t n)
{
#if defined(CVRT_AVX512)
    if (stride < (1 << 26)) {
        __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                           12, 13, 14, 15),
                                         _mm512_set1_epi32((int)stride));
        return (cvrt_vf)_mm512_mask_i32gather_ps(_mm512_setzero_ps(),
                                                 (__mmask16)((1u << n) - 1), idx, base, 4);
    }
#endif
    cvrt_vf v = {0};
    for (int64_t l = 0; l < n; l++)
        v[l] = base[l * stride];
    return v;
}

static inline void store_strided(float *base, int64_t stride, cvrt_vf v, int64_t n)
{
#if defined(CVRT_AVX512)
    if (stride < (1 << 26)) {
        __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                           12, 13, 14, 15),
                                         _mm512_set1_epi32((int)stride));
        _mm512_mask_i32scatter_ps(base, (__mmask16)((1u << n) - 1), idx, (__m512)v, 4);
        return;
    }
#endif
    for (int64_t l = 0; l < n; l++)
        base[l * stride] = v[l];
}

/* Lane by lane, for n lanes whose output and residual elements are not
 * consecutive: lane l goes to yo[l] and reads ro[l]. */
static inline void cvrt_qstore_lanes(cvrt_qout out, const int64_t *yo, const int64_t *ro,
                                     cvrt_vf v, int64_t n)
{
    for (int64_t l = 0; l < n; l++)
        cvrt_qstore2(out, yo[l], ro[l], cvrt_splat(v[l]), 1);
}

#endif
