/* -p fp16 dense convolutions in the blocked (NCHWc) layout: the weights
 * stay f16 in the artifact ([OCB][ICB][KH][KW][CI][blk], as
 * cvrt_nchwc_conv2d's).  Each task of the convolution widens the group
 * of output blocks it computes into its thread's buffer as it reaches it
 * (cvrt_nchwc_conv2d_f16), so both threads widen, in parallel with each
 * other's math, and the f32 kernel reads the group from cache: f32 math
 * on the exact f16 values, half the weight bytes read from memory.  A
 * group too large for that buffer falls back to widening a few output
 * blocks at a time (about 1 MB of f32) before running
 * cvrt_nchwc_conv2d on them. */
#include "compiler-core/runtime/cvrt_vec.h"
#include "compiler-core/runtime/cvrt_sys.h"
#include "compiler-core/runtime/cvrt_half.h"

enum { CHUNK_FLOATS = 262144 };

void cvrt_widen_f16(float *dst, const uint16_t *src, int64_t n)
{
    int64_t i = 0;
#if defined(CVRT_AVX512)
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
#elif defined(CVRT_AVX2)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
    for (; i < n; i++)
        dst[i] = cvrt_f16_to_f32(src[i]);
}

void cvrt_nchwc_conv2d_h(cvrt_ctx *rt, const float *x, const uint16_t *wh, const float *bias,
                         float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                         int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt,
                         int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                         const float *res, int64_t act, float lo, float hi)
{
    if (blk != CVRT_VL || OH <= 0 || OW <= 0 || OCB <= 0 ||
        cvrt_nchwc_conv2d_f16(rt, x, wh, bias, y, blk, ICB, CI, H, W, OCB, KH, KW, sh, sw, pt,
                              pl, dh, dw, OH, OW, res, act, lo, hi) == 0)
        return;
    int64_t per = ICB * KH * KW * CI * blk, out = OH * OW * blk;
    /* Whole pairs of blocks (the kernel computes two at once) where OCB is even. */
    int64_t g = cvrt_max(1, cvrt_min(OCB, CHUNK_FLOATS / per));
    if (OCB % 2 == 0)
        g = cvrt_max(2, g / 2 * 2);
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(float) * (size_t)(g * per)))
        return;     /* no memory: as the other routines, nothing written */
    float *wb = p;
    for (int64_t o = 0; o < OCB; o += g) {
        int64_t n = cvrt_min(g, OCB - o);
        cvrt_widen_f16(wb, wh + o * per, n * per);
        cvrt_nchwc_conv2d(rt, x, wb, bias ? bias + o * blk : NULL, y + o * out, blk, ICB, CI, H,
                          W, n, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW,
                          res ? res + o * out : NULL, act, lo, hi);
    }
    free(p);
}
