/* int8 depthwise convolution (the -p int8 path): u8 activations (one
 * scale and zero point per tensor, quantised here from f32 or already u8),
 * s8 weights (one scale per channel), exact integer sums, the epilogue of
 * cvrt_qepi.h (f32 or requantised u8 out).
 *
 * The sums are computed in f32 lanes: (xq - zp) and w are integers of at
 * most 255 and 127 in magnitude, so products and sums of up to 512 taps
 * stay below 2^24 and are exact, the very int32 result, at the FMA rate.
 * One channel per task: its plane (minus the zero point, zero as padding)
 * goes into the thread's scratch split by stride phase, as in
 * cvrt_dwconv.c, so that every tap reads the output grid (oh*Wq + ow) at
 * one fixed offset; the grid is accumulated eight vectors at a time and its
 * rows [0, OW) go through the epilogue. */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_qepi.h"

enum { VL = CVRT_VL, NV = 8, BLK = VL * NV };

typedef struct qdw_job {
    const void *x;
    const float *w, *scale, *bias;   /* w: [C][KH*KW] integer values */
    int64_t C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
    int64_t Hq, Wq, PS;              /* a phase plane: Hq x Wq, PS floats apart */
    float xs;
    int32_t zp;
    float **scratch;
    cvrt_qout out;
} qdw_job;

/* One padded, zero-point-free input row of channel c into dst (W floats). */
static void load_row(const qdw_job *j, int64_t c, int64_t ih, float *dst)
{
    int64_t off = (c * j->H + ih) * j->W;
    for (int64_t iw = 0; iw < j->W; iw += VL) {
        int64_t n = cvrt_min(VL, j->W - iw);
        cvrt_vi q;
        if (j->out.flags & CVRT_Q_XU8)
            q = cvrt_load_u8((const uint8_t *)j->x + off + iw, n, j->zp);
        else
            q = cvrt_quant_vec(cvrt_load_mask((const float *)j->x + off + iw, 0, n), j->xs,
                               j->zp);
        cvrt_store_mask(dst + iw, __builtin_convertvector(q - j->zp, cvrt_vf), 0, n);
    }
}

/* The phase planes of channel c; row is W floats of scratch. */
static void split(const qdw_job *j, int64_t c, float *planes, float *row)
{
    for (int64_t ph = 0; ph < j->sh; ph++)
        for (int64_t i = 0; i < j->Hq; i++) {
            int64_t ih = i * j->sh + ph - j->pt;
            int in = ih >= 0 && ih < j->H;
            if (in && j->sw == 1 && j->pl + j->W <= j->Wq) {    /* straight into the plane */
                float *dst = planes + ph * j->PS + i * j->Wq;
                cvrt_zero(dst, j->pl);
                load_row(j, c, ih, dst + j->pl);
                cvrt_zero(dst + j->pl + j->W, j->Wq - j->pl - j->W);
                continue;
            }
            if (in)
                load_row(j, c, ih, row);
            for (int64_t pw = 0; pw < j->sw; pw++) {
                float *dst = planes + (ph * j->sw + pw) * j->PS + i * j->Wq;
                if (!in) {
                    cvrt_zero(dst, j->Wq);
                    continue;
                }
                /* Columns q with 0 <= q*sw + pw - pl < W. */
                int64_t q0 = cvrt_min(j->Wq, cvrt_max(0, cvrt_cdiv(j->pl - pw, j->sw)));
                int64_t q1 = cvrt_max(q0, cvrt_min(j->Wq, cvrt_cdiv(j->W + j->pl - pw, j->sw)));
                const float *s = row + q0 * j->sw + pw - j->pl;
                cvrt_zero(dst, q0);
                if (j->sw == 1)
                    cvrt_copy(dst + q0, s, q1 - q0);
                else
                    for (int64_t q = 0; q < q1 - q0; q++)
                        dst[q0 + q] = s[q * j->sw];
                cvrt_zero(dst + q1, j->Wq - q1);
            }
        }
}

/* Grid positions [g, g + BLK): every tap, eight vectors at a time (taps
 * is a constant where the caller unrolls the common 3x3). */
static inline __attribute__((always_inline)) void grid_block(const float *planes,
                                                             const int64_t *off, const float *w,
                                                             int64_t taps, float *grid, int64_t g)
{
    cvrt_vf acc[NV] = {{0}};
    for (int64_t t = 0; t < taps; t++) {
        const float *src = planes + off[t] + g;
        cvrt_vf wv = cvrt_splat(w[t]);
        for (int v = 0; v < NV; v++)
            acc[v] += wv * *(const cvrt_vfu *)(src + v * VL);
    }
    for (int v = 0; v < NV; v++)
        *(cvrt_vfu *)(grid + g + v * VL) = acc[v];
}

static void channel_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qdw_job *j = arg;
    float *planes = j->scratch[tid], *grid = planes + j->sh * j->sw * j->PS;
    float *row = grid + j->OH * j->Wq + BLK;
    int64_t taps = j->KH * j->KW, ng = j->OH * j->Wq, off[512];
    /* Where each tap reads the grid: its phase plane and row/column shift. */
    for (int64_t t = 0; t < taps; t++) {
        int64_t rh = t / j->KW * j->dh, rw = t % j->KW * j->dw;
        off[t] = ((rh % j->sh) * j->sw + rw % j->sw) * j->PS + (rh / j->sh) * j->Wq + rw / j->sw;
    }
    for (int64_t c = lo; c < hi; c++) {
        split(j, c, planes, row);
        const float *w = j->w + c * taps;
        if (taps == 9)
            for (int64_t g = 0; g < ng; g += BLK)
                grid_block(planes, off, w, 9, grid, g);
        else
            for (int64_t g = 0; g < ng; g += BLK)
                grid_block(planes, off, w, taps, grid, g);
        cvrt_vf s = cvrt_splat(j->scale[c]), b = cvrt_splat(j->bias ? j->bias[c] : 0.0f);
        const cvrt_qout out = j->out;
        const int64_t OH = j->OH, OW = j->OW, Wq = j->Wq;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow += VL) {
                int64_t n = cvrt_min(VL, OW - ow);
                cvrt_vf v = cvrt_load_mask(grid + oh * Wq + ow, 0, n);
                cvrt_qstore(out, (c * OH + oh) * OW + ow, v * s + b, n);
            }
    }
}

void cvrt_qdwconv2d(cvrt_ctx *rt, const void *x, const float *w, const float *scale,
                    const float *bias, void *y, int64_t C, int64_t H, int64_t W, int64_t KH,
                    int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                    int64_t dw, int64_t OH, int64_t OW, const void *res, int64_t act, float lo,
                    float hi, float xs, int64_t zp, int64_t flags, float ys, int64_t yzp,
                    float rs, int64_t rzp)
{
    qdw_job j = {x, w, scale, bias, C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW,
                 0, 0, 0, xs, (int32_t)zp, rt->pack_b,
                 {y, res, flags, act, lo, hi, ys > 0 ? 1.0f / ys : 0.0f, rs, (int32_t)yzp, (int32_t)rzp}};
    j.Hq = cvrt_cdiv(CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh), sh);
    j.Wq = cvrt_cdiv(CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw), sw);
    j.PS = j.Hq * j.Wq + BLK;
    cvrt_parallel(rt, C, 1, channel_task, &j);
}
