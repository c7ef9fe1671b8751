/* The runtime of a C99 artifact: static helpers written into <name>.c,
 * each only when the generated code uses it.  They mirror the interpreter
 * (common/dtype.c) and the native runtime (compiler-core/runtime/): the
 * same half and bfloat16 rounding, saturating conversions, NaN-propagating
 * min/max, and the GEMM / convolution contracts of cvrt.h in plain loops. */
#include "compiler-core/backend/c99/c99_internal.h"

#include <string.h>

#include "common/half_round.h"

typedef struct helper {
    int dep, dep2;              /* the helpers it calls, or -1 */
    const char *text;
} helper;

#define NO -1

static const helper helpers[CV_C99_H__COUNT] = {
    [CV_C99_H_ADD] = {NO, NO,
        "static int64_t cv_add(int64_t a, int64_t b)\n"
        "{\n    return (int64_t)((uint64_t)a + (uint64_t)b);\n}\n\n"},
    [CV_C99_H_SUB] = {NO, NO,
        "static int64_t cv_sub(int64_t a, int64_t b)\n"
        "{\n    return (int64_t)((uint64_t)a - (uint64_t)b);\n}\n\n"},
    [CV_C99_H_MUL] = {NO, NO,
        "static int64_t cv_mul(int64_t a, int64_t b)\n"
        "{\n    return (int64_t)((uint64_t)a * (uint64_t)b);\n}\n\n"},
    [CV_C99_H_NEG] = {NO, NO,
        "static int64_t cv_neg(int64_t a)\n"
        "{\n    return (int64_t)(0u - (uint64_t)a);\n}\n\n"},
    [CV_C99_H_IABS] = {CV_C99_H_NEG, NO,
        "static int64_t cv_iabs(int64_t a)\n"
        "{\n    return a < 0 ? cv_neg(a) : a;\n}\n\n"},
    [CV_C99_H_IMIN] = {NO, NO,
        "static int64_t cv_imin(int64_t a, int64_t b)\n"
        "{\n    return a < b ? a : b;\n}\n\n"},
    [CV_C99_H_IMAX] = {NO, NO,
        "static int64_t cv_imax(int64_t a, int64_t b)\n"
        "{\n    return a > b ? a : b;\n}\n\n"},
    /* IEEE 754-2019 minimum / maximum: NaN wins, -0 is below +0. */
    [CV_C99_H_MINF] = {NO, NO,
        "static float cv_minf(float a, float b)\n{\n"
        "    if (a != a || b != b)\n        return a + b;\n"
        "    if (a == b)\n        return signbit(a) ? a : b;\n"
        "    return a < b ? a : b;\n}\n\n"},
    [CV_C99_H_MAXF] = {NO, NO,
        "static float cv_maxf(float a, float b)\n{\n"
        "    if (a != a || b != b)\n        return a + b;\n"
        "    if (a == b)\n        return signbit(a) ? b : a;\n"
        "    return a > b ? a : b;\n}\n\n"},
    [CV_C99_H_MIND] = {NO, NO,
        "static double cv_mind(double a, double b)\n{\n"
        "    if (a != a || b != b)\n        return a + b;\n"
        "    if (a == b)\n        return signbit(a) ? a : b;\n"
        "    return a < b ? a : b;\n}\n\n"},
    [CV_C99_H_MAXD] = {NO, NO,
        "static double cv_maxd(double a, double b)\n{\n"
        "    if (a != a || b != b)\n        return a + b;\n"
        "    if (a == b)\n        return signbit(a) ? b : a;\n"
        "    return a > b ? a : b;\n}\n\n"},
    /* Float to integer: truncation, saturating, NaN to 0. */
    [CV_C99_H_F2I64] = {NO, NO,
        "static int64_t cv_f2i64(double x)\n{\n"
        "    if (x != x)\n        return 0;\n"
        "    if (x >= 9223372036854775808.0)\n        return INT64_MAX;\n"
        "    if (x <= -9223372036854775808.0)\n        return INT64_MIN;\n"
        "    return (int64_t)x;\n}\n\n"},
    [CV_C99_H_FSAT] = {NO, NO,
        "static int64_t cv_fsat(double x, double lo, double hi)\n{\n"
        "    if (x != x)\n        return 0;\n"
        "    if (x <= lo)\n        return (int64_t)lo;\n"
        "    if (x >= hi)\n        return (int64_t)hi;\n"
        "    return (int64_t)x;\n}\n\n"},
    /* Integer to a narrower integer: two's complement wrap-around. */
    [CV_C99_H_WRAP8] = {NO, NO,
        "static int64_t cv_wrap8(int64_t x)\n{\n"
        "    int64_t u = (int64_t)((uint64_t)x & 0xffu);\n"
        "    return u >= 128 ? u - 256 : u;\n}\n\n"},
    [CV_C99_H_WRAPU8] = {NO, NO,
        "static int64_t cv_wrapu8(int64_t x)\n"
        "{\n    return (int64_t)((uint64_t)x & 0xffu);\n}\n\n"},
    [CV_C99_H_WRAP32] = {NO, NO,
        "static int64_t cv_wrap32(int64_t x)\n{\n"
        "    int64_t u = (int64_t)((uint64_t)x & 0xffffffffu);\n"
        "    return u >= INT64_C(2147483648) ? u - INT64_C(4294967296) : u;\n}\n\n"},
    [CV_C99_H_WRAP16] = {NO, NO,
        "static int64_t cv_wrap16(int64_t x)\n{\n"
        "    int64_t u = (int64_t)((uint64_t)x & 0xffffu);\n"
        "    return u >= 32768 ? u - 65536 : u;\n}\n\n"},
    [CV_C99_H_WRAPU16] = {NO, NO,
        "static int64_t cv_wrapu16(int64_t x)\n"
        "{\n    return (int64_t)((uint64_t)x & 0xffffu);\n}\n\n"},
    [CV_C99_H_WRAPU32] = {NO, NO,
        "static int64_t cv_wrapu32(int64_t x)\n"
        "{\n    return (int64_t)((uint64_t)x & 0xffffffffu);\n}\n\n"},
    [CV_C99_H_FBITS] = {NO, NO,
        "static uint32_t cv_fbits(float f)\n{\n"
        "    uint32_t u;\n    memcpy(&u, &f, 4);\n    return u;\n}\n\n"},
    [CV_C99_H_BITSF] = {NO, NO,
        "static float cv_bitsf(uint32_t u)\n{\n"
        "    float f;\n    memcpy(&f, &u, 4);\n    return f;\n}\n\n"},
    /* IEEE half and bfloat16 rounding: common/half_round.h's text, the
     * interpreter's and the native runtime's code (one line, reflowed). */
    [CV_C99_H_F2H] = {CV_C99_H_FBITS, NO, CV_HALF_TEXT(CV_HALF_F32_TO_F16(cv_f2h, cv_fbits))},
    [CV_C99_H_H2F] = {CV_C99_H_BITSF, NO, CV_HALF_TEXT(CV_HALF_F16_TO_F32(cv_h2f, cv_bitsf))},
    [CV_C99_H_F2BF] = {CV_C99_H_FBITS, NO, CV_HALF_TEXT(CV_HALF_F32_TO_BF16(cv_f2bf, cv_fbits))},
    /* bfloat16 round to nearest even, kept as a float (NaN stays quiet). */
    [CV_C99_H_BFROUND] = {CV_C99_H_F2BF, CV_C99_H_BITSF,
        "static float cv_bfround(float f)\n{\n"
        "    return cv_bitsf((uint32_t)cv_f2bf(f) << 16);\n}\n\n"},
    [CV_C99_H_BF2F] = {CV_C99_H_BITSF, NO,
        "static float cv_bf2f(uint16_t h)\n"
        "{\n    return cv_bitsf((uint32_t)h << 16);\n}\n\n"},
    [CV_C99_H_BFBITS] = {CV_C99_H_FBITS, NO,
        "static uint16_t cv_bfbits(float f)\n"
        "{\n    return (uint16_t)(cv_fbits(f) >> 16);\n}\n\n"},
    /* The activation arena: grows only when a run needs more than any
     * before it; 64-byte aligned. */
    [CV_C99_H_ARENA] = {NO, NO,
        "static char *cvrt_arena(cvrt_ctx *rt, int64_t bytes)\n{\n"
        "    void *m;\n"
        "    if (bytes < 0 || (uint64_t)bytes > (uint64_t)(SIZE_MAX - 128))\n"
        "        return NULL;\n"
        "    if (rt->arena && bytes <= rt->arena_cap)\n        return rt->arena;\n"
        "    m = malloc((size_t)bytes + 64);\n"
        "    if (!m)\n        return NULL;\n"
        "    free(rt->arena_mem);\n"
        "    rt->arena_mem = m;\n"
        "    rt->arena = (char *)m + (64 - (size_t)((uintptr_t)m % 64));\n"
        "    rt->arena_cap = bytes;\n"
        "    return rt->arena;\n}\n\n"},
    /* Serial, or spread over the context's threads when compiled with OpenMP. */
    [CV_C99_H_LAUNCH] = {NO, NO,
        "typedef void (*cvrt_kernel_fn)(cvrt_ctx *rt, void *const *bufs, const int64_t *syms,\n"
        "    int64_t lo, int64_t hi);\n\n"
        "static void cvrt_launch(cvrt_ctx *rt, int64_t n, int64_t grain, cvrt_kernel_fn fn,\n"
        "    void *const *bufs, const int64_t *syms)\n{\n"
        "#ifdef _OPENMP\n"
        "    if (rt->threads > 1 && n > 1 && n > grain) {\n"
        "        int64_t chunk = (n + rt->threads - 1) / rt->threads, chunks, i;\n"
        "        if (chunk < grain)\n            chunk = grain;\n"
        "        chunks = (n + chunk - 1) / chunk;\n"
        "#pragma omp parallel for num_threads(rt->threads) schedule(static, 1)\n"
        "        for (i = 0; i < chunks; i++)\n"
        "            fn(rt, bufs, syms, i * chunk,\n"
        "               n - i * chunk < chunk ? n : i * chunk + chunk);\n"
        "        return;\n"
        "    }\n"
        "#endif\n"
        "    (void)grain;\n"
        "    if (n > 0)\n        fn(rt, bufs, syms, 0, n);\n}\n\n"},
    /* cvrt.h's epilogue of a finished element: + res[i] when res is given,
     * then act (CVRT_ACT_*): 0 none, 1 relu, 2 clip to [lo, hi] (NaN stays
     * NaN), 3 silu, 4 hard_swish. */
    [CV_C99_H_EPI] = {NO, NO,
        "static float cvrt_epi(float v, const float *res, int64_t i, int64_t act, float lo,\n"
        "    float hi)\n{\n"
        "    float g;\n"
        "    if (res)\n        v += res[i];\n"
        "    if (act == 1)\n        return v < 0.0f ? 0.0f : v;\n"
        "    if (act == 2) {\n        v = v < lo ? lo : v;\n"
        "        return v > hi ? hi : v;\n    }\n"
        "    if (act == 3)\n        return v / (1.0f + expf(-v));\n"
        "    if (act == 4) {\n        g = v / 6.0f + 0.5f;\n"
        "        g = g < 0.0f ? 0.0f : g;\n        return v * (g > 1.0f ? 1.0f : g);\n    }\n"
        "    return v;\n}\n\n"},
    /* The product tiles shared by the GEMM and the convolution: MR rows of
     * NB accumulators; one row += a scalar times a row of B. */
    [CV_C99_H_TILE] = {CV_C99_H_EPI, NO,
        "#define CVRT_MR 8\n#define CVRT_NB 64\n\n"
        "static void cvrt_tile_zero(float acc[][CVRT_NB], int64_t mr)\n{\n"
        "    int64_t i, j;\n"
        "    for (i = 0; i < mr; i++)\n        for (j = 0; j < CVRT_NB; j++)\n"
        "            acc[i][j] = 0.0f;\n}\n\n"
        "static void cvrt_tile_fma(float *restrict acc, float a, const float *restrict b)\n{\n"
        "    int j;\n"
        "    for (j = 0; j < CVRT_NB; j++)\n        acc[j] += a * b[j];\n}\n\n"},
    /* cvrt.h's cvrt_sgemm: C = alpha * A B + bias_scale * bias (+ C when
     * accumulating), then the epilogue; any strides.  Eight rows of C at a
     * time against a strip of B's columns copied into a local row, so the
     * inner loop has a constant trip count and no aliasing (compilers
     * vectorize it at -O2). */
    [CV_C99_H_SGEMM] = {CV_C99_H_TILE, NO,
        "static void cvrt_sgemm(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,\n"
        "    const void *a_, int64_t ars, int64_t acs, const void *b_, int64_t brs, int64_t bcs,\n"
        "    void *c_, int64_t ldc, int64_t accumulate, const void *bias_, int64_t bias_rs,\n"
        "    int64_t bias_cs, float bias_scale, const void *res_, int64_t res_ld, int64_t act,\n"
        "    float lo, float hi)\n{\n"
        "    const float *a = (const float *)a_, *b = (const float *)b_;\n"
        "    const float *bias = (const float *)bias_, *res = (const float *)res_;\n"
        "    float *c = (float *)c_;\n"
        "    float acc[CVRT_MR][CVRT_NB], row[CVRT_NB];\n"
        "    int64_t i0, j0, k, ii, jj;\n"
        "    (void)rt;\n"
        "    for (j0 = 0; j0 < N; j0 += CVRT_NB) {\n"
        "        int64_t nb = N - j0 < CVRT_NB ? N - j0 : CVRT_NB;\n"
        "        for (jj = nb; jj < CVRT_NB; jj++)\n            row[jj] = 0.0f;\n"
        "        for (i0 = 0; i0 < M; i0 += CVRT_MR) {\n"
        "            int64_t mr = M - i0 < CVRT_MR ? M - i0 : CVRT_MR;\n"
        "            cvrt_tile_zero(acc, mr);\n"
        "            for (k = 0; k < K; k++) {\n"
        "                const float *brow = b + k * brs + j0 * bcs;\n"
        "                for (jj = 0; jj < nb; jj++)\n"
        "                    row[jj] = brow[jj * bcs];\n"
        "                for (ii = 0; ii < mr; ii++)\n"
        "                    cvrt_tile_fma(acc[ii], a[(i0 + ii) * ars + k * acs], row);\n"
        "            }\n"
        "            for (ii = 0; ii < mr; ii++) {\n"
        "                int64_t i = i0 + ii;\n"
        "                float *crow = c + i * ldc + j0;\n"
        "                for (jj = 0; jj < nb; jj++) {\n"
        "                    float v = alpha * acc[ii][jj];\n"
        "                    if (accumulate)\n                        v = crow[jj] + v;\n"
        "                    if (bias)\n"
        "                        v += bias_scale * bias[i * bias_rs + (j0 + jj) * bias_cs];\n"
        "                    crow[jj] = cvrt_epi(v, res, i * res_ld + j0 + jj, act, lo, hi);\n"
        "                }\n"
        "            }\n"
        "        }\n"
        "    }\n}\n\n"},
    /* One group of a 2-D convolution on one image as an implicit GEMM: for
     * each strip of output positions, blocks of the im2col matrix's rows
     * are gathered into a local panel (zero outside the image) and
     * multiplied into tiles of output channels; partial sums go through y.
     * Weight (oc, k) of the OC x (C*KH*KW) matrix is w[oc * K + k], or in
     * cvrt.h's P8 packing w[((oc / 8) * K + k) * 8 + oc % 8]. */
    [CV_C99_H_CONV] = {CV_C99_H_TILE, NO,
        "#define CVRT_KB 32\n\n"
        "static void cvrt_conv(const float *x, const float *w, int p8, const float *bias,\n"
        "    float *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,\n"
        "    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,\n"
        "    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)\n{\n"
        "    float panel[CVRT_KB][CVRT_NB], acc[CVRT_MR][CVRT_NB];\n"
        "    int64_t ihb[CVRT_NB], iwb[CVRT_NB];\n"
        "    int64_t n = OH * OW, K = C * KH * KW, j0, k0, oc0, jj, ii, kk, oc;\n"
        "    for (j0 = 0; j0 < n; j0 += CVRT_NB) {\n"
        "        int64_t nb = n - j0 < CVRT_NB ? n - j0 : CVRT_NB;\n"
        "        /* Positions past the strip read above the image: zeros. */\n"
        "        for (jj = 0; jj < CVRT_NB; jj++) {\n"
        "            ihb[jj] = jj < nb ? (j0 + jj) / OW * sh - pt : -1 - (KH - 1) * dh;\n"
        "            iwb[jj] = jj < nb ? (j0 + jj) % OW * sw - pl : 0;\n"
        "        }\n"
        "        for (oc = 0; K == 0 && oc < OC; oc++)\n"
        "            for (jj = 0; jj < nb; jj++)\n                y[oc * n + j0 + jj] = 0.0f;\n"
        "        for (k0 = 0; k0 < K; k0 += CVRT_KB) {\n"
        "            int64_t kb = K - k0 < CVRT_KB ? K - k0 : CVRT_KB;\n"
        "            for (kk = 0; kk < kb; kk++) {\n"
        "                int64_t k = k0 + kk, c = k / (KH * KW), kh = k % (KH * KW) / KW;\n"
        "                int64_t kw = k % KW;\n"
        "                const float *xp = x + c * H * W;\n"
        "                for (jj = 0; jj < CVRT_NB; jj++) {\n"
        "                    int64_t ih = ihb[jj] + kh * dh, iw = iwb[jj] + kw * dw;\n"
        "                    panel[kk][jj] = ih >= 0 && ih < H && iw >= 0 && iw < W\n"
        "                                        ? xp[ih * W + iw] : 0.0f;\n"
        "                }\n"
        "            }\n"
        "            for (oc0 = 0; oc0 < OC; oc0 += CVRT_MR) {\n"
        "                int64_t mr = OC - oc0 < CVRT_MR ? OC - oc0 : CVRT_MR;\n"
        "                cvrt_tile_zero(acc, mr);\n"
        "                for (kk = 0; kk < kb; kk++)\n"
        "                    for (ii = 0; ii < mr; ii++) {\n"
        "                        int64_t o = oc0 + ii, k = k0 + kk;\n"
        "                        cvrt_tile_fma(acc[ii], p8 ? w[((o / 8) * K + k) * 8 + o % 8]\n"
        "                                                  : w[o * K + k], panel[kk]);\n"
        "                    }\n"
        "                for (ii = 0; ii < mr; ii++) {\n"
        "                    float *yr = y + (oc0 + ii) * n + j0;\n"
        "                    for (jj = 0; jj < nb; jj++)\n"
        "                        yr[jj] = k0 ? yr[jj] + acc[ii][jj] : acc[ii][jj];\n"
        "                }\n"
        "            }\n"
        "        }\n"
        "        for (oc = 0; oc < OC; oc++)\n"
        "            for (jj = 0; jj < nb; jj++) {\n"
        "                int64_t i = oc * n + j0 + jj;\n"
        "                y[i] = cvrt_epi(y[i] + (bias ? bias[oc] : 0.0f), res, i, act, lo, hi);\n"
        "            }\n"
        "    }\n}\n\n"},
    [CV_C99_H_CONV2D] = {CV_C99_H_CONV, NO,
        "static void cvrt_conv2d(cvrt_ctx *rt, const void *x, const void *w, const void *bias,\n"
        "    void *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,\n"
        "    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,\n"
        "    int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi)\n{\n"
        "    (void)rt;\n"
        "    cvrt_conv((const float *)x, (const float *)w, 0, (const float *)bias, (float *)y,\n"
        "              C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW,\n"
        "              (const float *)res, act, lo, hi);\n}\n\n"},
    /* The scratch the native runtime may use is not needed here. */
    [CV_C99_H_CONV2D_P8] = {CV_C99_H_CONV, NO,
        "static void cvrt_conv2d_p8(cvrt_ctx *rt, const void *x, const void *wp,\n"
        "    const void *bias, void *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,\n"
        "    int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,\n"
        "    int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi,\n"
        "    void *scratch)\n{\n"
        "    (void)rt;\n    (void)scratch;\n"
        "    cvrt_conv((const float *)x, (const float *)wp, 1, (const float *)bias, (float *)y,\n"
        "              C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW,\n"
        "              (const float *)res, act, lo, hi);\n}\n\n"},
    /* cvrt.h's cvrt_dwconv2d: one filter per channel of one image. */
    [CV_C99_H_DWCONV2D] = {CV_C99_H_EPI, NO,
        "static void cvrt_dwconv2d(cvrt_ctx *rt, const void *x_, const void *w_,\n"
        "    const void *bias_, void *y_, int64_t C, int64_t H, int64_t W, int64_t KH,\n"
        "    int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,\n"
        "    int64_t dw, int64_t OH, int64_t OW, const void *res_, int64_t act, float lo,\n"
        "    float hi)\n{\n"
        "    const float *x = (const float *)x_, *w = (const float *)w_;\n"
        "    const float *bias = (const float *)bias_, *res = (const float *)res_;\n"
        "    float *y = (float *)y_;\n"
        "    int64_t c, oh, ow, kh, kw;\n"
        "    (void)rt;\n"
        "    for (c = 0; c < C; c++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                float v = 0.0f;\n"
        "                int64_t i = (c * OH + oh) * OW + ow;\n"
        "                for (kh = 0; kh < KH; kh++) {\n"
        "                    int64_t ih = oh * sh - pt + kh * dh;\n"
        "                    if (ih < 0 || ih >= H)\n                        continue;\n"
        "                    for (kw = 0; kw < KW; kw++) {\n"
        "                        int64_t iw = ow * sw - pl + kw * dw;\n"
        "                        if (iw >= 0 && iw < W)\n"
        "                            v += w[(c * KH + kh) * KW + kw] * x[(c * H + ih) * W + iw];\n"
        "                    }\n"
        "                }\n"
        "                y[i] = cvrt_epi(v + (bias ? bias[c] : 0.0f), res, i, act, lo, hi);\n"
        "            }\n}\n\n"},
    /* The int8 kernels' input (quantised now, or already u8) and epilogue
     * (residual f32 or u8, activation, output f32 or requantised u8), as
     * runtime/cvrt_qepi.h computes them; u8 tensors are channels last
     * (element j), f32 ones NCHW (element i). */
    [CV_C99_H_QEPI] = {CV_C99_H_EPI, NO,
        "static int64_t cvrt_qin(const void *x_, int64_t i, int64_t j, int64_t flags, float xs,\n"
        "    int64_t zp)\n"
        "{\n    float q;\n"
        "    if (flags & 1)\n        return (int64_t)((const unsigned char *)x_)[j] - zp;\n"
        "    q = nearbyintf(((const float *)x_)[i] / xs) + (float)zp;\n"
        "    q = q != q ? (float)zp : q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q;\n"
        "    return (int64_t)q - zp;\n}\n\n"
        "static void cvrt_qstore(float v, void *y_, const void *res_, int64_t i, int64_t j,\n"
        "    int64_t act,\n"
        "    float lo, float hi, int64_t flags, float ys, int64_t yzp, float rs, int64_t rzp)\n{\n"
        "    float q, zl = (float)-yzp, zh = (float)(255 - yzp);\n"
        "    if (res_ && (flags & 4))\n"
        "        v += (float)((int64_t)((const unsigned char *)res_)[j] - rzp) * rs;\n"
        "    else if (res_)\n        v += ((const float *)res_)[i];\n"
        "    v = cvrt_epi(v, 0, 0, act, lo, hi);\n"
        "    if (!(flags & 2)) {\n        ((float *)y_)[i] = v;\n        return;\n    }\n"
        "    q = v * (1.0f / ys);\n"
        "    q = q != q ? zl : q < zl ? zl : q > zh ? zh : q;\n"
        "    ((unsigned char *)y_)[j] = (unsigned char)(nearbyintf(q) + (float)yzp);\n}\n\n"},
    /* cvrt.h's cvrt_qconv2d (int8): the weights in the runtime's quads
     * ([OCp/16][KUp][16][4], KUp = K/4 rounded up to 16, k = (kh*KW + kw)*Cp + c);
     * direct loops, exact sums. */
    [CV_C99_H_QCONV2D] = {CV_C99_H_QEPI, NO,
        "static void cvrt_qconv2d(cvrt_ctx *rt, const void *x_, const void *wp_,\n"
        "    const void *wsum_, const void *scale_, const void *bias_, void *y_, int64_t C,\n"
        "    int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh, int64_t sw,\n"
        "    int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,\n"
        "    const void *res_, int64_t act, float lo, float hi, float xs, int64_t zp,\n"
        "    void *scratch, int64_t flags, float ys, int64_t yzp, float rs, int64_t rzp)\n{\n"
        "    const float *scale = (const float *)scale_, *bias = (const float *)bias_;\n"
        "    const signed char *wp = (const signed char *)wp_;\n"
        "    int64_t Cp = (C + 3) / 4 * 4, KUp = (KH * KW * Cp / 4 + 15) / 16 * 16, oc, oh, ow, c,\n"
        "        kh, kw;\n"
        "    (void)rt;\n    (void)wsum_;\n    (void)scratch;\n"
        "    for (oc = 0; oc < OC; oc++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                int64_t acc = 0, i = (oc * OH + oh) * OW + ow;\n"
        "                for (kh = 0; kh < KH; kh++)\n"
        "                    for (kw = 0; kw < KW; kw++) {\n"
        "                        int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;\n"
        "                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)\n"
        "                            continue;\n"
        "                        for (c = 0; c < C; c++) {\n"
        "                            int64_t k = (kh * KW + kw) * Cp + c;\n"
        "                            acc += cvrt_qin(x_, (c * H + ih) * W + iw,\n"
        "                                            (ih * W + iw) * C + c, flags, xs, zp) *\n"
        "                                   wp[(((oc / 16) * KUp + k / 4) * 16 + oc % 16) * 4 +\n"
        "                                      k % 4];\n"
        "                        }\n"
        "                    }\n"
        "                cvrt_qstore((float)acc * scale[oc] + (bias ? bias[oc] : 0.0f), y_, res_, i,\n"
        "                            (oh * OW + ow) * OC + oc, act, lo, hi, flags, ys, yzp, rs,\n"
        "                            rzp);\n"
        "            }\n}\n\n"},
    /* cvrt.h's cvrt_qdwconv2d (int8 depthwise): w holds the s8 weights as
     * floats, [C][KH*KW]. */
    [CV_C99_H_QDWCONV2D] = {CV_C99_H_QEPI, NO,
        "static void cvrt_qdwconv2d(cvrt_ctx *rt, const void *x_, const void *w_,\n"
        "    const void *scale_, const void *bias_, void *y_, int64_t C, int64_t H, int64_t W,\n"
        "    int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,\n"
        "    int64_t dw, int64_t OH, int64_t OW, const void *res_, int64_t act, float lo,\n"
        "    float hi, float xs, int64_t zp, int64_t flags, float ys, int64_t yzp, float rs,\n"
        "    int64_t rzp)\n{\n"
        "    const float *w = (const float *)w_, *scale = (const float *)scale_;\n"
        "    const float *bias = (const float *)bias_;\n"
        "    int64_t c, oh, ow, kh, kw;\n"
        "    (void)rt;\n"
        "    for (c = 0; c < C; c++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                int64_t acc = 0, i = (c * OH + oh) * OW + ow;\n"
        "                for (kh = 0; kh < KH; kh++)\n"
        "                    for (kw = 0; kw < KW; kw++) {\n"
        "                        int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;\n"
        "                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
        "                            acc += cvrt_qin(x_, (c * H + ih) * W + iw,\n"
        "                                            (ih * W + iw) * C + c, flags, xs, zp) *\n"
        "                                   (int64_t)w[(c * KH + kh) * KW + kw];\n"
        "                    }\n"
        "                cvrt_qstore((float)acc * scale[c] + (bias ? bias[c] : 0.0f), y_, res_, i,\n"
        "                            (oh * OW + ow) * C + c, act, lo, hi, flags, ys, yzp, rs, rzp);\n"
        "            }\n}\n\n"},
    /* The blocked (NCHWc) routines, one output element at a time (cvrt.h;
     * the compiler uses them only for the LLVM targets today). */
    [CV_C99_H_NCHWC_CONV2D] = {CV_C99_H_EPI, NO,
        "static void cvrt_nchwc_conv2d(cvrt_ctx *rt, const void *x_, const void *w_,\n"
        "    const void *bias_, void *y_, int64_t B, int64_t ICB, int64_t CI, int64_t H,\n"
        "    int64_t W, int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw,\n"
        "    int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,\n"
        "    const void *res_, int64_t act, float lo, float hi)\n{\n"
        "    const float *x = (const float *)x_, *w = (const float *)w_;\n"
        "    const float *bias = (const float *)bias_, *res = (const float *)res_;\n"
        "    float *y = (float *)y_;\n"
        "    int64_t o, oh, ow, ib, ci, kh, kw, plain = CI != B;\n"
        "    (void)rt;\n"
        "    for (o = 0; o < OCB * B; o++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                float v = bias ? bias[o] : 0.0f;\n"
        "                int64_t i = (((o / B) * OH + oh) * OW + ow) * B + o % B;\n"
        "                for (ib = 0; ib < ICB; ib++)\n"
        "                    for (kh = 0; kh < KH; kh++)\n"
        "                        for (kw = 0; kw < KW; kw++) {\n"
        "                            int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;\n"
        "                            if (ih < 0 || ih >= H || iw < 0 || iw >= W)\n"
        "                                continue;\n"
        "                            for (ci = 0; ci < CI; ci++)\n"
        "                                v += w[((((o / B) * ICB + ib) * KH + kh) * KW + kw) * CI * B +\n"
        "                                       ci * B + o % B] *\n"
        "                                     x[plain ? (ci * H + ih) * W + iw\n"
        "                                             : ((ib * H + ih) * W + iw) * B + ci];\n"
        "                        }\n"
        "                y[i] = cvrt_epi(v, res, i, act, lo, hi);\n"
        "            }\n}\n\n"},
    [CV_C99_H_NCHWC_DWCONV2D] = {CV_C99_H_EPI, NO,
        "static void cvrt_nchwc_dwconv2d(cvrt_ctx *rt, const void *x_, const void *w_,\n"
        "    const void *bias_, void *y_, int64_t B, int64_t CB, int64_t H, int64_t W,\n"
        "    int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,\n"
        "    int64_t dh, int64_t dw, int64_t OH, int64_t OW, const void *res_, int64_t act,\n"
        "    float lo, float hi)\n{\n"
        "    const float *x = (const float *)x_, *w = (const float *)w_;\n"
        "    const float *bias = (const float *)bias_, *res = (const float *)res_;\n"
        "    float *y = (float *)y_;\n"
        "    int64_t c, oh, ow, kh, kw;\n"
        "    (void)rt;\n"
        "    for (c = 0; c < CB * B; c++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                float v = bias ? bias[c] : 0.0f;\n"
        "                int64_t i = (((c / B) * OH + oh) * OW + ow) * B + c % B;\n"
        "                for (kh = 0; kh < KH; kh++)\n"
        "                    for (kw = 0; kw < KW; kw++) {\n"
        "                        int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;\n"
        "                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
        "                            v += w[(((c / B) * KH + kh) * KW + kw) * B + c % B] *\n"
        "                                 x[(((c / B) * H + ih) * W + iw) * B + c % B];\n"
        "                    }\n"
        "                y[i] = cvrt_epi(v, res, i, act, lo, hi);\n"
        "            }\n}\n\n"},
    [CV_C99_H_NCHWC_POOL2D] = {NO, NO,
        "static void cvrt_nchwc_pool2d(cvrt_ctx *rt, const void *x_, void *y_, int64_t B,\n"
        "    int64_t CB, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,\n"
        "    int64_t pt, int64_t pl, int64_t OH, int64_t OW, int64_t kind)\n{\n"
        "    const float *x = (const float *)x_;\n"
        "    float *y = (float *)y_;\n"
        "    int64_t c, oh, ow, kh, kw;\n"
        "    (void)rt;\n"
        "    for (c = 0; c < CB * B; c++)\n"
        "        for (oh = 0; oh < OH; oh++)\n"
        "            for (ow = 0; ow < OW; ow++) {\n"
        "                float v = kind ? 0.0f : -HUGE_VALF;\n"
        "                int64_t n = 0;\n"
        "                for (kh = 0; kh < KH; kh++)\n"
        "                    for (kw = 0; kw < KW; kw++) {\n"
        "                        int64_t ih = oh * sh - pt + kh, iw = ow * sw - pl + kw;\n"
        "                        float t;\n"
        "                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)\n"
        "                            continue;\n"
        "                        t = x[(((c / B) * H + ih) * W + iw) * B + c % B];\n"
        "                        v = kind ? v + t : (t > v || t != t ? t : v);\n"
        "                        n++;\n"
        "                    }\n"
        "                if (kind)\n"
        "                    v /= (float)(kind == 2 ? KH * KW : n ? n : 1);\n"
        "                y[(((c / B) * OH + oh) * OW + ow) * B + c % B] = v;\n"
        "            }\n}\n\n"},
    /* -p fp16/bf16 weights (kind 1: IEEE half, 2: bfloat16) for the f32
     * routines: a widened copy, malloc'd per call (the native runtime
     * widens them block by block instead); on running out of memory the
     * routine leaves its output unwritten. */
    [CV_C99_H_W16] = {CV_C99_H_H2F, CV_C99_H_BF2F,
        "static float *cvrt_widen16(const void *w_, int64_t kind, int64_t n)\n{\n"
        "    const uint16_t *w = (const uint16_t *)w_;\n"
        "    float *f = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof *f);\n"
        "    int64_t i;\n"
        "    for (i = 0; f && i < n; i++)\n"
        "        f[i] = kind == 2 ? cv_bf2f(w[i]) : cv_h2f(w[i]);\n"
        "    return f;\n}\n\n"},
    [CV_C99_H_CONV2D_P8H] = {CV_C99_H_CONV, CV_C99_H_W16,
        "static void cvrt_conv2d_p8h(cvrt_ctx *rt, const void *x, const void *wp, int64_t kind,\n"
        "    const void *bias, void *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,\n"
        "    int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,\n"
        "    int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi,\n"
        "    void *scratch)\n{\n"
        "    float *w = cvrt_widen16(wp, kind, (OC + 7) / 8 * 8 * C * KH * KW);\n"
        "    (void)rt;\n    (void)scratch;\n"
        "    if (!w)\n        return;\n"
        "    cvrt_conv((const float *)x, w, 1, (const float *)bias, (float *)y,\n"
        "              C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW,\n"
        "              (const float *)res, act, lo, hi);\n"
        "    free(w);\n}\n\n"},
    /* B[k, j] = b[k + j*bcs] (a fully connected layer's weights). */
    [CV_C99_H_SGEMM_H] = {CV_C99_H_SGEMM, CV_C99_H_W16,
        "static void cvrt_sgemm_h(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,\n"
        "    const void *a, int64_t ars, int64_t acs, const void *b, int64_t kind, int64_t bcs,\n"
        "    void *c, int64_t ldc, int64_t accumulate, const void *bias, int64_t bias_rs,\n"
        "    int64_t bias_cs, float bias_scale, const void *res, int64_t res_ld, int64_t act,\n"
        "    float lo, float hi)\n{\n"
        "    float *w = cvrt_widen16(b, kind, N > 0 && K > 0 ? (N - 1) * bcs + K : 0);\n"
        "    if (!w)\n        return;\n"
        "    cvrt_sgemm(rt, M, N, K, alpha, a, ars, acs, w, 1, bcs, c, ldc, accumulate, bias,\n"
        "               bias_rs, bias_cs, bias_scale, res, res_ld, act, lo, hi);\n"
        "    free(w);\n}\n\n"},
    [CV_C99_H_NCHWC_CONV2D_H] = {CV_C99_H_NCHWC_CONV2D, CV_C99_H_W16,
        "static void cvrt_nchwc_conv2d_h(cvrt_ctx *rt, const void *x, const void *wh,\n"
        "    const void *bias, void *y, int64_t B, int64_t ICB, int64_t CI, int64_t H,\n"
        "    int64_t W, int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw,\n"
        "    int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,\n"
        "    const void *res, int64_t act, float lo, float hi)\n{\n"
        "    float *w = cvrt_widen16(wh, 1, OCB * ICB * KH * KW * CI * B);\n"
        "    if (!w)\n        return;\n"
        "    cvrt_nchwc_conv2d(rt, x, w, bias, y, B, ICB, CI, H, W, OCB, KH, KW, sh, sw, pt, pl,\n"
        "                      dh, dw, OH, OW, res, act, lo, hi);\n"
        "    free(w);\n}\n\n"},
    /* B packed at compile time (cvrt.h, CVRT_PB): each 32-column panel is a
     * K x 32 row-major block, so the product is cvrt_sgemm panel by panel. */
    /* B in the bf16 pair form (cvrt.h, made at compile time for -p bf16):
     * panels of 32 columns, K2p rows of words each holding B[2q][j] in its
     * low half and B[2q+1][j] in its high half; widened, then cvrt_sgemm. */
    [CV_C99_H_SGEMM_BF] = {CV_C99_H_SGEMM, CV_C99_H_BITSF,
        "static void cvrt_sgemm_bf16(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K,\n"
        "    float alpha, const void *a, int64_t ars, int64_t acs, const void *bq_, int64_t brs,\n"
        "    int64_t bcs, void *c, int64_t ldc, int64_t accumulate, const void *bias,\n"
        "    int64_t bias_rs, int64_t bias_cs, float bias_scale, const void *res, int64_t res_ld,\n"
        "    int64_t act, float lo, float hi)\n{\n"
        "    const uint32_t *bq = (const uint32_t *)bq_;\n"
        "    int64_t k2p = ((K + 1) / 2 + 15) / 16 * 16, k, n;\n"
        "    float *w = (float *)malloc((size_t)(K > 0 && N > 0 ? K * N : 1) * sizeof(float));\n"
        "    (void)brs, (void)bcs;\n"
        "    if (!w)\n        return;\n"
        "    for (k = 0; k < K; k++)\n"
        "        for (n = 0; n < N; n++) {\n"
        "            uint32_t u = bq[((n / 32) * k2p + k / 2) * 32 + n % 32];\n"
        "            w[k * N + n] = cv_bitsf(k % 2 ? (u & 0xffff0000u) : (u << 16));\n"
        "        }\n"
        "    cvrt_sgemm(rt, M, N, K, alpha, a, ars, acs, w, N, 1, c, ldc, accumulate, bias,\n"
        "               bias_rs, bias_cs, bias_scale, res, res_ld, act, lo, hi);\n"
        "    free(w);\n}\n\n"},
    [CV_C99_H_SGEMM_PB] = {CV_C99_H_SGEMM, NO,
        "static void cvrt_sgemm_pb(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,\n"
        "    const void *a, int64_t ars, int64_t acs, const void *bp_, int64_t brs, int64_t bcs,\n"
        "    void *c_, int64_t ldc, int64_t accumulate, const void *bias_, int64_t bias_rs,\n"
        "    int64_t bias_cs, float bias_scale, const void *res_, int64_t res_ld, int64_t act,\n"
        "    float lo, float hi)\n{\n"
        "    const float *bp = (const float *)bp_, *bias = (const float *)bias_;\n"
        "    const float *res = (const float *)res_;\n"
        "    float *c = (float *)c_;\n"
        "    int64_t j0;\n"
        "    (void)brs, (void)bcs;\n"
        "    for (j0 = 0; j0 < N; j0 += 32) {\n"
        "        int64_t nb = N - j0 < 32 ? N - j0 : 32;\n"
        "        cvrt_sgemm(rt, M, nb, K, alpha, a, ars, acs, bp + (j0 / 32) * K * 32, 32, 1,\n"
        "                   c + j0, ldc, accumulate, bias ? bias + j0 * bias_cs : NULL, bias_rs,\n"
        "                   bias_cs, bias_scale, res ? res + j0 : NULL, res_ld, act, lo, hi);\n"
        "    }\n}\n\n"},
    /* runtime/cvrt_rnn.c (c99_runtime_rnn.c). */
    [CV_C99_H_RNN] = {CV_C99_H_SGEMM, NO, cv_c99_rnn_text},
    /* runtime/cvrt_attn.c's contract, plainly (c99_runtime_attn.c). */
    [CV_C99_H_ATTENTION] = {NO, NO, cv_c99_attention_text},
};

/* A helper whose text is one line (a stringised macro): a line after each
 * '{', ';' and '}' outside parentheses, four spaces a brace level. */
static void reflow(const char *t, cv_sb *out)
{
    int depth = 0, parens = 0;
    bool bol = true;
    for (; *t; t++) {
        if (bol && *t == ' ')
            continue;
        if (bol)
            for (int i = 0; i < depth - (*t == '}'); i++)
                cv_sb_puts(out, "    ");
        bol = false;
        cv_sb_putc(out, *t);
        parens += (*t == '(') - (*t == ')');
        depth += (*t == '{') - (*t == '}');
        if (!parens && (*t == '{' || *t == ';' || *t == '}')) {
            cv_sb_puts(out, "\n");
            bol = true;
        }
    }
    cv_sb_puts(out, "\n");
}

void cv_c99_runtime(bool *need, cv_sb *out)
{
    /* Dependencies point to earlier entries: one backward pass closes them. */
    for (int h = CV_C99_H__COUNT - 1; h >= 0; h--) {
        if (need[h] && helpers[h].dep >= 0)
            need[helpers[h].dep] = true;
        if (need[h] && helpers[h].dep2 >= 0)
            need[helpers[h].dep2] = true;
    }
    for (int h = 0; h < CV_C99_H__COUNT; h++) {
        if (!need[h])
            continue;
        if (strchr(helpers[h].text, '\n'))
            cv_sb_puts(out, helpers[h].text);
        else
            reflow(helpers[h].text, out);
    }
}

const char *cv_c99_rt_name(cv_krt fn, bool *need)
{
    switch (fn) {
    case CV_KRT_SGEMM: need[CV_C99_H_SGEMM] = true; return "cvrt_sgemm";
    case CV_KRT_CONV2D: need[CV_C99_H_CONV2D] = true; return "cvrt_conv2d";
    case CV_KRT_CONV2D_P8: need[CV_C99_H_CONV2D_P8] = true; return "cvrt_conv2d_p8";
    case CV_KRT_DWCONV2D: need[CV_C99_H_DWCONV2D] = true; return "cvrt_dwconv2d";
    case CV_KRT_QCONV2D: need[CV_C99_H_QCONV2D] = true; return "cvrt_qconv2d";
    case CV_KRT_QDWCONV2D: need[CV_C99_H_QDWCONV2D] = true; return "cvrt_qdwconv2d";
    case CV_KRT_NCHWC_CONV2D: need[CV_C99_H_NCHWC_CONV2D] = true; return "cvrt_nchwc_conv2d";
    case CV_KRT_NCHWC_DWCONV2D:
        need[CV_C99_H_NCHWC_DWCONV2D] = true;
        return "cvrt_nchwc_dwconv2d";
    case CV_KRT_NCHWC_POOL2D: need[CV_C99_H_NCHWC_POOL2D] = true; return "cvrt_nchwc_pool2d";
    case CV_KRT_CONV2D_P8H: need[CV_C99_H_CONV2D_P8H] = true; return "cvrt_conv2d_p8h";
    case CV_KRT_SGEMM_H: need[CV_C99_H_SGEMM_H] = true; return "cvrt_sgemm_h";
    case CV_KRT_SGEMM_PB: need[CV_C99_H_SGEMM_PB] = true; return "cvrt_sgemm_pb";
    case CV_KRT_SGEMM_BF: need[CV_C99_H_SGEMM_BF] = true; return "cvrt_sgemm_bf16";
    case CV_KRT_RNN: need[CV_C99_H_RNN] = true; return "cvrt_rnn";
    case CV_KRT_ATTENTION: need[CV_C99_H_ATTENTION] = true; return "cvrt_attention";
    case CV_KRT_NCHWC_CONV2D_H:
        need[CV_C99_H_NCHWC_CONV2D_H] = true;
        return "cvrt_nchwc_conv2d_h";
    default: return NULL;
    }
}
