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
 * rows [0, OW) go through the epilogue.  u8 in and u8 out (mobilenet_v2's
 * depthwise layers; u8 is stored channels last) take the channel-blocked
 * path below instead: about twice as fast on those layers. */
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
        cvrt_vi q = (cvrt_vi){0} + j->zp;
        if (j->out.flags & CVRT_Q_XU8) {    /* channels last: a strided read */
            const uint8_t *x = (const uint8_t *)j->x + (ih * j->W + iw) * j->C + c;
            for (int64_t l = 0; l < n; l++)
                q[l] = x[l * j->C];
        } else {
            q = cvrt_quant_vec(cvrt_load_mask((const float *)j->x + off + iw, 0, n), j->xs,
                               j->zp);
        }
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
        /* u8 output and residual are channels last: element by element. */
        int yl = (out.flags & CVRT_Q_YU8) != 0, rl = out.res && (out.flags & CVRT_Q_RU8);
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow += VL) {
                int64_t n = cvrt_min(VL, OW - ow), at = (c * OH + oh) * OW + ow;
                cvrt_vf v = cvrt_load_mask(grid + oh * Wq + ow, 0, n) * s + b;
                if (!yl && !rl) {
                    cvrt_qstore(out, at, v, n);
                    continue;
                }
                int64_t yo[VL], ro[VL];
                for (int64_t l = 0; l < n; l++) {
                    int64_t nhwc = (oh * OW + ow + l) * j->C + c;
                    yo[l] = yl ? nhwc : at + l;
                    ro[l] = rl ? nhwc : at + l;
                }
                cvrt_qstore_lanes(out, yo, ro, v, n);
            }
    }
}

/* The channel-blocked path, for u8 in and u8 out (the depthwise layers
 * between int8 pointwise convolutions; a residual, if any, u8): a task
 * takes 16 channels and a strip of output rows; the strip's input rows
 * (channels last: 16 bytes per pixel) are widened into a padded
 * [row][col][16] f32 scratch, zero point removed, so that each tap of an
 * output pixel is one load of 16 channels and one FMA with that tap's 16
 * weights held in registers (as fp32's NCHW16c depthwise), exact integer
 * sums as above.  Each output pixel's 16 channels go through the same
 * epilogue straight into the channels-last output. */
enum { CB = 16, NB = CB / VL, PX = 8, STRIP_FLOATS = 65536 };

typedef struct qdb_job {
    const qdw_job *j;
    int64_t nstrip, rows, Wp, R;     /* R output rows per strip, rows input rows per strip */
} qdb_job;

/* Lanes of vector v of a 16-channel block with nc channels. */
static inline int64_t lanes(int64_t nc, int v)
{
    return cvrt_max(0, cvrt_min(VL, nc - v * VL));
}

/* Input row ih of channels [c0, c0 + nc) into dst ([Wp][16] floats, the
 * padding zero). */
static void block_row(const qdw_job *j, const qdb_job *b, int64_t c0, int64_t nc, int64_t ih,
                      float *dst)
{
    if (ih < 0 || ih >= j->H) {
        cvrt_zero(dst, b->Wp * CB);
        return;
    }
    cvrt_zero(dst, j->pl * CB);
    cvrt_zero(dst + (j->pl + j->W) * CB, (b->Wp - j->pl - j->W) * CB);
    const uint8_t *x = (const uint8_t *)j->x + ih * j->W * j->C + c0;
    float *d = dst + j->pl * CB;
    for (int64_t iw = 0; iw < j->W; iw++)
        for (int v = 0; v < NB; v++) {
            cvrt_vi q = cvrt_load_u8(x + iw * j->C + v * VL, lanes(nc, v), j->zp) - j->zp;
            *(cvrt_vfu *)(d + iw * CB + v * VL) = __builtin_convertvector(q, cvrt_vf);
        }
}

/* The epilogue: the fast u8 store where it applies (qf not NULL). */
static inline __attribute__((always_inline)) void store(cvrt_qout o, const cvrt_qfast *qf,
                                                        int64_t off, cvrt_vf v, int64_t n)
{
    if (qf)
        cvrt_qfast_store(qf, (uint8_t *)o.y, off, v, n);
    else
        cvrt_qstore(o, off, v, n);
}

/* Output row oh of the strip starting at oh0 (its input rows in in) into
 * channels [c0, c0 + nc) of y; eight pixels at a time, each tap's weights
 * one vector per 16/VL. */
static inline __attribute__((always_inline)) void block_out_row(const qdw_job *j,
        const qdb_job *b, const float *in, int64_t oh0, int64_t oh, int64_t c0, int64_t nc,
        const cvrt_vf *wv, int64_t taps, const cvrt_vf *s, const cvrt_vf *bi, cvrt_qout o,
        const cvrt_qfast *qf)
{
    const int64_t OW = j->OW, sw = j->sw, KW = j->KW, C = j->C;
    const int64_t yrow = oh * OW * C + c0;
    int64_t toff[512];
    for (int64_t t = 0; t < taps; t++)
        toff[t] = (((oh - oh0) * j->sh + t / KW * j->dh) * b->Wp + t % KW * j->dw) * CB;
    int64_t ow = 0;
    for (; ow + PX <= OW; ow += PX) {
        cvrt_vf acc[PX][NB] = {{{0}}};
        for (int64_t t = 0; t < taps; t++) {
            const float *src = in + toff[t] + ow * sw * CB;
            for (int p = 0; p < PX; p++)
                for (int v = 0; v < NB; v++)
                    acc[p][v] += wv[t * NB + v] * *(const cvrt_vfu *)(src + p * sw * CB + v * VL);
        }
        for (int p = 0; p < PX; p++)
            for (int v = 0; v < NB; v++)
                if (lanes(nc, v))
                    store(o, qf, yrow + (ow + p) * C + v * VL, acc[p][v] * s[v] + bi[v],
                          lanes(nc, v));
    }
    for (; ow < OW; ow++) {
        cvrt_vf acc[NB] = {{0}};
        for (int64_t t = 0; t < taps; t++)
            for (int v = 0; v < NB; v++)
                acc[v] += wv[t * NB + v] * *(const cvrt_vfu *)(in + toff[t] + ow * sw * CB + v * VL);
        for (int v = 0; v < NB; v++)
            if (lanes(nc, v))
                store(o, qf, yrow + ow * C + v * VL, acc[v] * s[v] + bi[v], lanes(nc, v));
    }
}

static void block_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qdb_job *b = arg;
    const qdw_job *j = b->j;
    float *in = j->scratch[tid];
    const int64_t taps = j->KH * j->KW;
    const cvrt_qout o = j->out;
    cvrt_qfast fast;
    const cvrt_qfast *qf = cvrt_qfast_init(&o, &fast) ? &fast : NULL;
    for (int64_t task = lo; task < hi; task++) {
        int64_t nblk = cvrt_cdiv(j->C, CB), c0 = task % nblk * CB, nc = cvrt_min(CB, j->C - c0);
        int64_t oh0 = task / nblk * b->R, oh1 = cvrt_min(j->OH, oh0 + b->R);
        cvrt_vf wv[25 * NB], s[NB], bi[NB];
        for (int v = 0; v < NB; v++)
            for (int l = 0; l < VL; l++) {
                int64_t c = c0 + v * VL + l;
                s[v][l] = c < j->C ? j->scale[c] : 0.0f;
                bi[v][l] = c < j->C && j->bias ? j->bias[c] : 0.0f;
                for (int64_t t = 0; t < taps; t++)
                    wv[t * NB + v][l] = c < j->C ? j->w[c * taps + t] : 0.0f;
            }
        int64_t rows = (oh1 - oh0 - 1) * j->sh + (j->KH - 1) * j->dh + 1;
        for (int64_t r = 0; r < rows; r++)
            block_row(j, b, c0, nc, oh0 * j->sh - j->pt + r, in + r * b->Wp * CB);
        for (int64_t oh = oh0; oh < oh1; oh++) {
            if (taps == 9 && qf)
                block_out_row(j, b, in, oh0, oh, c0, nc, wv, 9, s, bi, o, qf);
            else
                block_out_row(j, b, in, oh0, oh, c0, nc, wv, taps, s, bi, o, qf);
        }
    }
}

/* Whether the blocked path takes j, and its strips. */
static int blocked(cvrt_ctx *rt, qdw_job *j)
{
    int64_t f = j->out.flags, taps = j->KH * j->KW;
    if (!(f & CVRT_Q_XU8) || !(f & CVRT_Q_YU8) || (j->out.res && !(f & CVRT_Q_RU8)) ||
        taps > 25)
        return 0;
    qdb_job b = {j, 0, 0, CVRT_QCONV_EXT(j->W, j->pl, j->OW, j->sw, j->KW, j->dw), 0};
    int64_t per = b.Wp * CB, fixed = ((j->KH - 1) * j->dh + 1) * per;
    int64_t cap = cvrt_min(STRIP_FLOATS, CVRT_QDW_MAX_FLOATS);
    if (fixed > CVRT_QDW_MAX_FLOATS)
        return 0;
    b.R = fixed > cap ? 1 : cvrt_max(1, cvrt_min(j->OH, (cap - fixed) / (j->sh * per) + 1));
    b.nstrip = cvrt_cdiv(j->OH, b.R);
    /* Threads take whole strips (every channel block of some rows: a
     * cache line of the channels-last output is then written by one
     * thread), at least two each where there are rows enough; a small
     * image (the 7x7 layers: strips of a row or two would convert most
     * input rows twice) is shared as one contiguous range of channel
     * blocks per thread instead. */
    int64_t nblk = cvrt_cdiv(j->C, CB), nt = cvrt_threads(rt), chunk = nblk;
    if (nt > 1 && b.nstrip < 2 * nt && j->OH >= 4 * nt)
        b.nstrip = 2 * nt;
    b.R = cvrt_cdiv(j->OH, b.nstrip);   /* even strips */
    b.nstrip = cvrt_cdiv(j->OH, b.R);
    b.rows = (b.R - 1) * j->sh + (j->KH - 1) * j->dh + 1;
    if (b.nstrip < nt)
        chunk = cvrt_cdiv(nblk * b.nstrip, nt);
    cvrt_parallel(rt, nblk * b.nstrip, chunk, block_task, &b);
    return 1;
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
    if (blocked(rt, &j))
        return;
    cvrt_parallel(rt, C, 1, channel_task, &j);
}
