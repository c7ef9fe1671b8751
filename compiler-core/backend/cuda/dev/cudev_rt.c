/* The runtime routines that kernels call (cvrt.h's cvrt_sgemm,
 * cvrt_conv2d, cvrt_conv2d_p8, cvrt_dwconv2d) as device kernels: one
 * thread per output element in a grid-stride loop, each summing its dot
 * product in the order the CPU's plain loops do.  The artifact's host
 * runtime launches them where the CPU artifact would call the routine. */
#include "compiler-core/backend/cuda/dev/cudev.h"

void cvdk_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                float hi);
void cvdk_conv2d(const float *x, const float *w, const float *bias, float *y, int64_t C,
                 int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                 int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                 int64_t OW, const float *res, int64_t act, float lo, float hi);
void cvdk_conv2d_p8(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                    int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                    int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                    int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch);
void cvdk_dwconv2d(const float *x, const float *w, const float *bias, float *y, int64_t C,
                   int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                   int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                   const float *res, int64_t act, float lo, float hi);
void cvdk_sgemm_h(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs, float *c,
                  int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                  int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                  int64_t act, float lo, float hi);
void cvdk_conv2d_p8h(const float *x, const uint16_t *wp, int64_t wkind, const float *bias,
                     float *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,
                     int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                     int64_t dw, int64_t OH, int64_t OW, const float *res, int64_t act, float lo,
                     float hi, float *scratch);
void cvdk_dwconv2d_b(const float *x, const float *w, const float *bias, float *y, int64_t C,
                     int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                     int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                     const float *res, int64_t act, float lo, float hi, int64_t batch,
                     int64_t dx, int64_t dy);

/* c[i, j] from the product's sum v (alpha applied): cvrt_sgemm's bias,
 * summand and epilogue. */
static inline void gemm_put(float *c, int64_t ldc, int64_t i, int64_t j, float v,
                            int64_t accumulate, const float *bias, int64_t bias_rs,
                            int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                            int64_t act, float lo, float hi)
{
    if (bias)
        v += bias_scale * bias[i * bias_rs + j * bias_cs];
    if (accumulate)
        v += c[i * ldc + j];
    c[i * ldc + j] = cvd_epilogue(v, res, i * res_ld + j, act, lo, hi);
}

void cvdk_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                float hi)
{
    for (int64_t t = cvd_gid(); t < M * N; t += cvd_gstride()) {
        int64_t i = t / N, j = t % N;
        const float *ap = a + i * ars, *bp = b + j * bcs;
        float s = 0.0f;
        for (int64_t k = 0; k < K; k++)
            s += ap[k * acs] * bp[k * brs];
        gemm_put(c, ldc, i, j, alpha * s, accumulate, bias, bias_rs, bias_cs, bias_scale, res,
                 res_ld, act, lo, hi);
    }
}

/* cvdk_sgemm with B[k,j] = b[k + j*bcs] in 16 bits (cvrt_sgemm_h). */
void cvdk_sgemm_h(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs, float *c,
                  int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                  int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                  int64_t act, float lo, float hi)
{
    for (int64_t t = cvd_gid(); t < M * N; t += cvd_gstride()) {
        int64_t i = t / N, j = t % N;
        float s = 0.0f;
        for (int64_t k = 0; k < K; k++)
            s += a[i * ars + k * acs] * cvd_half_to_float(b[k + j * bcs], bkind);
        gemm_put(c, ldc, i, j, alpha * s, accumulate, bias, bias_rs, bias_cs, bias_scale, res,
                 res_ld, act, lo, hi);
    }
}

/* The geometry both dense convolutions share. */
typedef struct geo {
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
} geo;

/* Weight i: f32 (kind 0) or 16 bits of cvd_half_to_float's kind. */
static inline float wat(const void *w, int64_t i, int64_t kind)
{
    return kind ? cvd_half_to_float(((const uint16_t *)w)[i], kind) : ((const float *)w)[i];
}

/* y[oc, pix] for item t = oc * OH*OW + pix, with weight row oc of K = C*KH*KW
 * columns at w[k * wstride] (of kind wkind, see wat). */
static float conv_dot(const geo *g, const float *x, const void *w, int64_t wstride,
                      int64_t wkind, int64_t t)
{
    int64_t pix = t % (g->OH * g->OW), oh = pix / g->OW, ow = pix % g->OW;
    float s = 0.0f;
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            if (ih < 0 || ih >= g->H)
                continue;
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                if (iw < 0 || iw >= g->W)
                    continue;
                s += wat(w, ((c * g->KH + kh) * g->KW + kw) * wstride, wkind) *
                     x[(c * g->H + ih) * g->W + iw];
            }
        }
    return s;
}

/* Every output of a dense convolution: row oc of the weights (kind
 * wkind, see wat) at w + oc*K, or (p8) in cvrt.h's P8 form,
 * A[i][k] = w[((i/8)*K + k)*8 + i%8]. */
static void conv_all(const geo *g, const float *x, const void *w, int64_t wkind, int p8,
                     const float *bias, float *y, const float *res, int64_t act, float lo,
                     float hi)
{
    int64_t K = g->C * g->KH * g->KW, n = g->OC * g->OH * g->OW;
    int64_t size = wkind ? (int64_t)sizeof(uint16_t) : (int64_t)sizeof(float);
    for (int64_t t = cvd_gid(); t < n; t += cvd_gstride()) {
        int64_t oc = t / (g->OH * g->OW), at = p8 ? (oc / 8) * K * 8 + oc % 8 : oc * K;
        const void *row = (const char *)w + at * size;
        float v = conv_dot(g, x, row, p8 ? 8 : 1, wkind, t) + (bias ? bias[oc] : 0.0f);
        y[t] = cvd_epilogue(v, res, t, act, lo, hi);
    }
}

void cvdk_conv2d(const float *x, const float *w, const float *bias, float *y, int64_t C,
                 int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                 int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                 int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    geo g = {C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_all(&g, x, w, 0, 0, bias, y, res, act, lo, hi);
}

/* The weights in cvrt.h's P8 form. */
void cvdk_conv2d_p8(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                    int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                    int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                    int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch)
{
    (void)scratch;
    geo g = {C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_all(&g, x, wp, 0, 1, bias, y, res, act, lo, hi);
}

/* cvdk_conv2d_p8 with the P8 weights in 16 bits of kind wkind. */
void cvdk_conv2d_p8h(const float *x, const uint16_t *wp, int64_t wkind, const float *bias,
                     float *y, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,
                     int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                     int64_t dw, int64_t OH, int64_t OW, const float *res, int64_t act, float lo,
                     float hi, float *scratch)
{
    (void)scratch;
    geo g = {C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_all(&g, x, wp, wkind, 1, bias, y, res, act, lo, hi);
}

void cvdk_dwconv2d(const float *x, const float *w, const float *bias, float *y, int64_t C,
                   int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                   int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                   const float *res, int64_t act, float lo, float hi)
{
    cvdk_dwconv2d_b(x, w, bias, y, C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
                    lo, hi, 1, 0, 0);
}

/* batch images sharing the filters: image b reads x + b*dx and writes
 * y + b*dy (and reads res + b*dy); the host runtime merges per-image calls
 * into one launch (host/cuhost_batch.c). */
void cvdk_dwconv2d_b(const float *x, const float *w, const float *bias, float *y, int64_t C,
                     int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                     int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                     const float *res, int64_t act, float lo, float hi, int64_t batch,
                     int64_t dx, int64_t dy)
{
    geo g = {1, H, W, 1, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    int64_t per = C * OH * OW;
    for (int64_t t = cvd_gid(); t < per * batch; t += cvd_gstride()) {
        int64_t b = t / per, i = t % per, c = i / (OH * OW);
        const float *xb = x + b * dx;
        float v = conv_dot(&g, xb + c * H * W, w + c * KH * KW, 1, 0, i) + (bias ? bias[c] : 0.0f);
        y[b * dy + i] = cvd_epilogue(v, res ? res + b * dy : res, i, act, lo, hi);
    }
}
