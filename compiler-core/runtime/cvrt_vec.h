/* Internal to the runtime: the target variant's vector type (GCC/Clang
 * vector extensions, lowered by LLVM for every target) and a few helpers
 * built on it. */
#ifndef CVRT_VEC_H
#define CVRT_VEC_H

#include "compiler-core/runtime/cvrt_internal.h"

#if defined(CVRT_AVX512) || defined(CVRT_AVX2)
#include <immintrin.h>
#endif

#if defined(CVRT_AVX512)
#define CVRT_VL 16
#elif defined(CVRT_AVX2)
#define CVRT_VL 8
#else
#define CVRT_VL 4
#endif

typedef float cvrt_vf __attribute__((vector_size(CVRT_VL * 4)));
typedef float cvrt_vfu __attribute__((vector_size(CVRT_VL * 4), aligned(4)));  /* unaligned */
typedef int cvrt_vi __attribute__((vector_size(CVRT_VL * 4)));

/* m ? a : b lane by lane (C has no vector ?:); a NaN in b stays NaN, as in
 * the scalar code it replaces. */
static inline cvrt_vf cvrt_select(cvrt_vi m, cvrt_vf a, cvrt_vf b)
{
    return (cvrt_vf)((m & (cvrt_vi)a) | (~m & (cvrt_vi)b));
}

static inline cvrt_vf cvrt_splat(float v)
{
    return (cvrt_vf){0} + v;
}

/* Lanes [a, b) from p[a..b) (the others 0; memory outside is not read). */
static inline cvrt_vf cvrt_load_mask(const float *p, int64_t a, int64_t b)
{
    if (a == 0 && b == CVRT_VL)
        return *(const cvrt_vfu *)p;
#if defined(CVRT_AVX512)
    return (cvrt_vf)_mm512_maskz_loadu_ps((__mmask16)(((1u << b) - 1) & ~((1u << a) - 1)), p);
#elif defined(CVRT_AVX2)
    __m256i l = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), l),
                                 _mm256_cmpgt_epi32(l, _mm256_set1_epi32((int)a - 1)));
    return (cvrt_vf)_mm256_maskload_ps(p, m);
#else
    cvrt_vf v = {0};
    for (int64_t q = a; q < b; q++)
        v[q] = p[q];
    return v;
#endif
}

/* p[a..b) = lanes [a, b) of v (memory outside is not written). */
static inline void cvrt_store_mask(float *p, cvrt_vf v, int64_t a, int64_t b)
{
    if (a == 0 && b == CVRT_VL) {
        *(cvrt_vfu *)p = v;
        return;
    }
#if defined(CVRT_AVX512)
    _mm512_mask_storeu_ps(p, (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1)), (__m512)v);
#elif defined(CVRT_AVX2)
    __m256i l = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), l),
                                 _mm256_cmpgt_epi32(l, _mm256_set1_epi32((int)a - 1)));
    _mm256_maskstore_ps(p, m, (__m256)v);
#else
    for (int64_t q = a; q < b; q++)
        p[q] = v[q];
#endif
}

/* dst[0..n) = src[0..n), whole vectors (the last one overlapping; a
 * masked one when n is below the width: rows of 7 and 14 are common). */
static inline void cvrt_copy(float *restrict dst, const float *restrict src, int64_t n)
{
    if (n < CVRT_VL) {
#if defined(CVRT_AVX512) || defined(CVRT_AVX2)
        if (n > 0)
            cvrt_store_mask(dst, cvrt_load_mask(src, 0, n), 0, n);
#else
        for (int64_t q = 0; q < n; q++)
            dst[q] = src[q];
#endif
        return;
    }
    int64_t q = 0;
    for (; q + CVRT_VL <= n; q += CVRT_VL)
        *(cvrt_vfu *)(dst + q) = *(const cvrt_vfu *)(src + q);
    if (q < n)
        *(cvrt_vfu *)(dst + n - CVRT_VL) = *(const cvrt_vfu *)(src + n - CVRT_VL);
}

/* dst[0..n) = 0. */
static inline void cvrt_zero(float *dst, int64_t n)
{
    if (n < CVRT_VL) {
#if defined(CVRT_AVX512) || defined(CVRT_AVX2)
        if (n > 0)
            cvrt_store_mask(dst, (cvrt_vf){0}, 0, n);
#else
        for (int64_t q = 0; q < n; q++)
            dst[q] = 0.0f;
#endif
        return;
    }
    int64_t q = 0;
    for (; q + CVRT_VL <= n; q += CVRT_VL)
        *(cvrt_vfu *)(dst + q) = (cvrt_vf){0};
    if (q < n)
        *(cvrt_vfu *)(dst + n - CVRT_VL) = (cvrt_vf){0};
}

typedef float cvrt_v4u __attribute__((vector_size(16), aligned(4)));
typedef float cvrt_v8u __attribute__((vector_size(32), aligned(4)));

/* dst[q] = src[2q] for q < n; reads src[0 .. 2n-1) only. */
static inline void cvrt_copy_even(float *restrict dst, const float *restrict src, int64_t n)
{
    int64_t q = 0;
#if CVRT_VL == 16
    for (; q + 16 <= n - 1; q += 16) {
        cvrt_vf a = *(const cvrt_vfu *)(src + 2 * q), b = *(const cvrt_vfu *)(src + 2 * q + 16);
        *(cvrt_vfu *)(dst + q) = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                                         20, 22, 24, 26, 28, 30);
    }
#endif
#if CVRT_VL >= 8
    for (; q + 8 <= n - 1; q += 8) {
        cvrt_v8u a = *(const cvrt_v8u *)(src + 2 * q), b = *(const cvrt_v8u *)(src + 2 * q + 8);
        *(cvrt_v8u *)(dst + q) = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    }
#endif
    for (; q + 4 <= n - 1; q += 4) {
        cvrt_v4u a = *(const cvrt_v4u *)(src + 2 * q), b = *(const cvrt_v4u *)(src + 2 * q + 4);
        *(cvrt_v4u *)(dst + q) = __builtin_shufflevector(a, b, 0, 2, 4, 6);
    }
    for (; q < n; q++)
        dst[q] = src[2 * q];
}

/* dst[k*ds + i] = src[i*rs + k] for 8 rows i and n columns k, 8x8 blocks
 * transposed in registers (as a loop, the strided stores would become
 * scatters, slow on every x86 that has them). */
typedef float cvrt_v8 __attribute__((vector_size(32)));
typedef float cvrt_v8u __attribute__((vector_size(32), aligned(4)));
static inline void cvrt_transpose8(const float *restrict src, int64_t rs, int64_t n,
                                   float *restrict dst, int64_t ds)
{
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        cvrt_v8 r[8], t[8], u[8];
        for (int i = 0; i < 8; i++)
            r[i] = *(const cvrt_v8u *)(src + i * rs + k);
        for (int i = 0; i < 8; i += 2) {
            t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
            t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
        }
        for (int i = 0; i < 8; i += 4)
            for (int h = 0; h < 2; h++) {
                u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5,
                                                       12, 13);
                u[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11,
                                                           6, 7, 14, 15);
            }
        for (int c = 0; c < 4; c++) {
            *(cvrt_v8u *)(dst + (k + c) * ds) =
                __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
            *(cvrt_v8u *)(dst + (k + c + 4) * ds) =
                __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
        }
    }
    for (; k < n; k++)
        for (int i = 0; i < 8; i++)
            dst[k * ds + i] = src[i * rs + k];
}

#endif
