/* The batched depthwise convolution for the GPU (cvrt_dwconv2d's calls of a
 * batch merged by host/cuhost_batch.c): cvdk_dwconv2d_b's arithmetic (the
 * taps summed in the CPU's order), in 32-bit index math (the host checks
 * that batch * C * OH * OW and every image fit), 4 outputs of a row per
 * thread: the 64-bit divisions, the general tap loop and the loads that
 * neighbouring windows share made it mobilenet's slowest kernel. */
#include "compiler-core/backend/cuda/dev/cudev.h"

#ifdef __NVPTX__

void cvdk_dwconv2d_bt(const float *x, const float *w, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                      int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                      const float *res, int64_t act, float lo, float hi, int64_t batch,
                      int64_t dx, int64_t dy);

/* sum over the KH x KW taps of plane xp at output (oh, ow), bounds-checked. */
static inline __attribute__((always_inline)) float taps(const float *xp, const float *wp, int H,
                                                        int W, int KH, int KW, int ih0, int iw0,
                                                        int dh, int dw)
{
    float s = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        int ih = ih0 + kh * dh;
        if ((unsigned)ih >= (unsigned)H)
            continue;
        for (int kw = 0; kw < KW; kw++) {
            int iw = iw0 + kw * dw;
            if ((unsigned)iw < (unsigned)W)
                s += wp[kh * KW + kw] * xp[ih * W + iw];
        }
    }
    return s;
}

/* acc[q] += the 3 taps of row `row` (weights wr) for outputs q < 4 of
 * stride sw (1 or 2, a constant) from input column iw0: the row's 3 * sw + 3
 * inputs are loaded once (zero where they are padding) and shared. */
static inline __attribute__((always_inline)) void row3(const float *row, int W, int iw0, int sw,
                                                       const float *wr, float acc[4])
{
    float xr[9];
#pragma unroll
    for (int e = 0; e < 3 * sw + 3; e++) {
        int iw = iw0 + e;
        xr[e] = (unsigned)iw < (unsigned)W ? row[iw] : 0.0f;
    }
#pragma unroll
    for (int kw = 0; kw < 3; kw++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            acc[q] += wr[kw] * xr[q * sw + kw];
}

/* Each item is 4 horizontally adjacent outputs of one plane (host/
 * cuhost_batch.c launches batch * C * OH * ceil(OW / 4) of them): the 3 x 3
 * windows of stride 1 or 2 without dilation share their loads (the taps
 * still summed per output in the CPU's order; a padding tap adds +0, not
 * skipped); any other window goes through taps(). */
void cvdk_dwconv2d_bt(const float *x, const float *w, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                      int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                      const float *res, int64_t act, float lo, float hi, int64_t batch,
                      int64_t dx, int64_t dy)
{
    int ow4 = (int)(OW + 3) / 4, ohw = (int)(OH * OW), rows = (int)OH * ow4;
    int per = (int)C * rows, n = per * (int)batch;
    int h = (int)H, wd = (int)W, kh = (int)KH, kw = (int)KW, s = (int)sw;
    int fast = kh == 3 && kw == 3 && dh == 1 && dw == 1 && (s == 1 || s == 2);
    for (int t = (int)cvd_gid(); t < n; t += (int)cvd_gstride()) {
        int b = t / per, i = t - b * per, c = i / rows, p = i - c * rows;
        int oh = p / ow4, ow0 = (p - oh * ow4) * 4;
        int ih0 = oh * (int)sh - (int)pt, iw0 = ow0 * s - (int)pl;
        const float *xp = x + b * dx + c * h * wd, *wp = w + c * kh * kw;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (fast) {
            for (int r = 0; r < 3; r++) {
                int ih = ih0 + r;
                if ((unsigned)ih >= (unsigned)h)
                    continue;
                if (s == 1)
                    row3(xp + ih * wd, wd, iw0, 1, wp + 3 * r, acc);
                else
                    row3(xp + ih * wd, wd, iw0, 2, wp + 3 * r, acc);
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++)
                acc[q] = taps(xp, wp, h, wd, kh, kw, ih0, iw0 + q * s, (int)dh, (int)dw);
        }
        float bv = bias ? bias[c] : 0.0f;
        const float *rb = res ? res + b * dy : res;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            if (ow0 + q >= (int)OW)
                break;
            int at = c * ohw + oh * (int)OW + ow0 + q;
            y[b * dy + at] = cvd_epilogue(acc[q] + bv, rb, at, act, lo, hi);
        }
    }
}

#endif
