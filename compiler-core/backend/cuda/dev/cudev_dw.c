/* The batched depthwise convolution for the GPU (cvrt_dwconv2d's calls of a
 * batch merged by host/cuhost_batch.c): cvdk_dwconv2d_b's arithmetic (one
 * thread per output, the taps summed in the CPU's order), in 32-bit index
 * math (the host checks that batch * C * OH * OW and every image fit) and
 * with the 3 x 3 window unrolled: the 64-bit divisions and the general tap
 * loop made it mobilenet's slowest kernel. */
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

void cvdk_dwconv2d_bt(const float *x, const float *w, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                      int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                      const float *res, int64_t act, float lo, float hi, int64_t batch,
                      int64_t dx, int64_t dy)
{
    int ohw = (int)(OH * OW), per = (int)C * ohw, n = per * (int)batch;
    int h = (int)H, wd = (int)W, kh = (int)KH, kw = (int)KW;
    for (int t = (int)cvd_gid(); t < n; t += (int)cvd_gstride()) {
        int b = t / per, i = t - b * per, c = i / ohw, p = i - c * ohw;
        int oh = p / (int)OW, ow = p - oh * (int)OW;
        int ih0 = oh * (int)sh - (int)pt, iw0 = ow * (int)sw - (int)pl;
        const float *xp = x + b * dx + c * h * wd, *wp = w + c * kh * kw;
        float v = kh == 3 && kw == 3
                      ? taps(xp, wp, h, wd, 3, 3, ih0, iw0, (int)dh, (int)dw)
                      : taps(xp, wp, h, wd, kh, kw, ih0, iw0, (int)dh, (int)dw);
        v += bias ? bias[c] : 0.0f;
        int64_t at = b * dy + i;
        y[at] = cvd_epilogue(v, res ? res + b * dy : res, i, act, lo, hi);
    }
}

#endif
