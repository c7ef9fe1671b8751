/* Convolutions and pooling in the blocked (NCHWc) layout: an image of C
 * channels is [C/B][H][W][B] with B = CVRT_VL, so that the B channels of
 * one pixel are one vector.
 *
 * Direct convolution: an output tile is NOC output channel blocks x NW
 * consecutive output columns of one row, all in vector registers; for each
 * input channel ci of each tap, NOC weight vectors (one per output block)
 * and NW broadcasts of x[ci] feed NOC*NW fused multiply-adds.  The common
 * shapes (pads no larger than the stride) run in row tiles, which cover
 * the whole row, border columns included (see below); otherwise columns
 * whose taps all lie inside the image run unchecked and the few at the
 * borders one at a time with the taps outside skipped.  The input may also
 * be a plain image (first layers: 3 channels), read with strides.  Work
 * items are (output block group, output row), a group's rows in a row so
 * that its weights stay in cache. */
#include "compiler-core/runtime/cvrt_act.h"
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_half.h"

enum { VL = CVRT_VL };
/* Tile widths for 2 and 1 output blocks: 24 accumulators where there are
 * 32 vector registers (AVX-512), 12 where there are 16. */
#if CVRT_VL == 16
enum { NW2 = 12, NW1 = 12 };
#else
enum { NW2 = 6, NW1 = 12 };
#endif

typedef cvrt_vf vf;
typedef cvrt_vfu vfu;

/* v in every lane; x - 0 folds away (x + 0 does not: -0), so the
 * broadcast becomes the FMA's memory operand. */
static inline vf bcast(float v)
{
    return v - (vf){0};
}

#define ALWAYS_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#define NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define UNROLL_FULL
#define NO_UNROLL
#endif

typedef struct nc_job {
    const float *x, *w, *bias, *res;
    float *y;
    int64_t ICB, CI, xps, xcs, xbs;  /* input blocks, channels per block, strides */
    int64_t H, W, OCB, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, act;
    float lo, hi;
    int64_t noc, ngrp;
    int64_t ow_lo, ow_hi;       /* columns whose taps are all inside the image */
    const uint16_t *wh;         /* -p fp16: the weights in f16 (w unused), see half_task */
    float *const *wbuf;         /* then: each thread's buffer for one group's f32 weights */
    int64_t *held;              /* and by thread the group its buffer holds (-1: none) */
    int64_t pix, nch;           /* pointwise: pixels per work item, items per group */
} nc_job;

static ALWAYS_INLINE vf epi(const nc_job *j, vf v, const float *res)
{
    if (res)
        v += *(const vfu *)res;
    return cvrt_act_vec(v, j->act, j->lo, j->hi);
}

/* Output blocks [ob, ob+NOC) x columns [ow0, ow0+NW) of row oh, bias
 * included (the rest of the epilogue runs over the row afterwards). */
static ALWAYS_INLINE void tile(const nc_job *j, int64_t ob, int64_t oh, int64_t ow0,
                               const int NOC, const int NW, const int checked, const int64_t XPS,
                               const int64_t SW)
{
    vf acc[2][12];
    UNROLL_FULL
    for (int o = 0; o < NOC; o++) {
        vf b = j->bias ? *(const vfu *)(j->bias + (ob + o) * VL) : (vf){0};
        UNROLL_FULL
        for (int t = 0; t < NW; t++)
            acc[o][t] = b;
    }
    int64_t wstride = j->ICB * j->KH * j->KW * j->CI * VL;
    /* Constant strides (the blocked cases) keep every broadcast at a fixed
     * offset from one pointer. */
    int64_t xstep = SW * XPS, xcs = XPS == VL ? 1 : j->xcs;
    for (int64_t icb = 0; icb < j->ICB; icb++)
        for (int64_t kh = 0; kh < j->KH; kh++) {
            int64_t ih = oh * j->sh - j->pt + kh * j->dh;
            if (ih < 0 || ih >= j->H)
                continue;
            const float *xr = j->x + icb * j->xbs + ih * j->W * XPS;
            for (int64_t kw = 0; kw < j->KW; kw++) {
                int64_t iw = ow0 * SW - j->pl + kw * j->dw;
                if (checked && (iw < 0 || iw >= j->W))
                    continue;
                const float *xp = xr + iw * XPS;
                const float *wp = j->w + (((ob * j->ICB + icb) * j->KH + kh) * j->KW + kw) *
                                         j->CI * VL;
                for (int64_t ci = 0; ci < j->CI; ci++) {
                    vf wv[2];
                    UNROLL_FULL
                    for (int o = 0; o < NOC; o++)
                        wv[o] = *(const vfu *)(wp + o * wstride + ci * VL);
                    const float *xc = xp + ci * xcs;
                    UNROLL_FULL
                    for (int t = 0; t < NW; t++) {
                        vf xv = bcast(xc[t * xstep]);
                        UNROLL_FULL
                        for (int o = 0; o < NOC; o++)
                            acc[o][t] += wv[o] * xv;
                    }
                }
            }
        }
    UNROLL_FULL
    for (int o = 0; o < NOC; o++) {
        int64_t off = (((ob + o) * j->OH + oh) * j->OW + ow0) * VL;
        UNROLL_FULL
        for (int t = 0; t < NW; t++)
            *(vfu *)(j->y + off + t * VL) = acc[o][t];
    }
}

/* The residual and activation over blocks [ob, ob+n) of row oh. */
static void row_epilogue(const nc_job *j, int64_t ob, int64_t n, int64_t oh)
{
    if (!j->res && !j->act)
        return;
    for (int64_t o = ob; o < ob + n; o++) {
        int64_t off = ((o * j->OH + oh) * j->OW) * VL;
        for (int64_t q = 0; q < j->OW * VL; q += VL)
            *(vfu *)(j->y + off + q) = epi(j, *(const vfu *)(j->y + off + q),
                                          j->res ? j->res + off + q : 0);
    }
}

#define TILE(nw, chk) tile(j, ob, oh, ow, NOC, nw, chk, XPS, SW)

/* Row oh of blocks [ob, ob+NOC): the border columns one at a time with
 * their taps checked, the inner ones in tiles of NW, 4 and 1. */
static ALWAYS_INLINE void conv_row(const nc_job *j, int64_t ob, int64_t oh, const int NOC,
                                   const int NW, const int64_t XPS, const int64_t SW)
{
    int64_t nb = j->ow_lo + j->OW - j->ow_hi;
    for (int64_t q = 0; q < nb; q++) {
        int64_t ow = q < j->ow_lo ? q : j->ow_hi + q - j->ow_lo;
        TILE(1, 1);
    }
    int64_t ow = j->ow_lo;
    for (; ow + NW <= j->ow_hi; ow += NW)
        TILE(NW, 0);
    if (NW > 4 && ow + 4 <= j->ow_hi) {
        TILE(4, 0);
        ow += 4;
    }
    for (; ow < j->ow_hi; ow++)
        TILE(1, 0);
}
#undef TILE

/* ---- row tiles ------------------------------------------------------------
 * Where the pads are small next to the stride, only the first and the last
 * output columns of a row can have taps outside the image (at most one at
 * each end; two at the start for a plain input: resnet18's first 7x7
 * convolution).  The row then runs in tiles of up to NWR columns x NOC output
 * blocks, all in registers, and a tap that misses the image at a tile's
 * end columns skips just those -- decided once per tap, not per column.
 * Wide tiles reuse each weight vector NWR times (a 7-wide row is one tile)
 * and the residual and activation are applied as the registers are
 * stored. */
#if CVRT_VL == 16
enum { NWR = 14 };
#else
enum { NWR = 6 };
#endif

/* Columns [T0, NW - T1) of a tile: the CIN input channels of one tap
 * (stride XCS), x at xp (column T0's tap, columns SW * XPS apart), the
 * weights at wp (block o at o * wstride). */
static ALWAYS_INLINE void row_taps(vf acc[2][NWR], const float *xp, const float *wp,
                                   int64_t wstride, const int64_t CIN, const int64_t XCS,
                                   const int NOC, const int NW, const int T0, const int T1,
                                   const int64_t SW, const int64_t XPS)
{
    /* (one channel's FMAs are enough work per iteration: unrolled, the 70
     * tile variants would add seconds to every compile) */
    NO_UNROLL
    for (int64_t ci = 0; ci < CIN; ci++) {
        vf wv[2];
        UNROLL_FULL
        for (int o = 0; o < NOC; o++)
            wv[o] = *(const vfu *)(wp + o * wstride + ci * VL);
        UNROLL_FULL
        for (int t = T0; t < NW - T1; t++) {
            vf xv = bcast(xp[(t - T0) * SW * XPS + ci * XCS]);
            UNROLL_FULL
            for (int o = 0; o < NOC; o++)
                acc[o][t] += wv[o] * xv;
        }
    }
}

/* Output blocks [ob, ob+NOC) x columns [ow0, ow0+NW) of row oh, the
 * epilogue included.  A blocked input (XPS = VL) has VL channels per
 * block, a plain one (XPS = 1) CI channels HW apart; at most MAXT columns
 * at the start of the tile miss a tap, and one at its end. */
static ALWAYS_INLINE void row_tile(const nc_job *j, int64_t ob, int64_t oh, int64_t ow0,
                                   const int NOC, const int NW, const int64_t SW,
                                   const int64_t XPS, const int MAXT)
{
    vf acc[2][NWR];
    UNROLL_FULL
    for (int o = 0; o < NOC; o++) {
        vf b = j->bias ? *(const vfu *)(j->bias + (ob + o) * VL) : (vf){0};
        UNROLL_FULL
        for (int t = 0; t < NW; t++)
            acc[o][t] = b;
    }
    const int64_t CIN = XPS == VL ? VL : j->CI, XCS = XPS == VL ? 1 : j->xcs;
    int64_t wstride = j->ICB * j->KH * j->KW * CIN * VL;
    for (int64_t icb = 0; icb < j->ICB; icb++)
        for (int64_t kh = 0; kh < j->KH; kh++) {
            int64_t ih = oh * j->sh - j->pt + kh * j->dh;
            if (ih < 0 || ih >= j->H)
                continue;
            const float *xr = j->x + icb * j->xbs + ih * j->W * XPS;
            const float *wp = j->w + ((ob * j->ICB + icb) * j->KH + kh) * j->KW * CIN * VL;
            for (int64_t kw = 0; kw < j->KW; kw++, wp += CIN * VL) {
                int64_t iw = ow0 * SW - j->pl + kw * j->dw, last = iw + (NW - 1) * SW;
                /* columns missing the image at the start and at the end */
                int64_t nl = iw < 0 ? (-iw + SW - 1) / SW : 0;
                int64_t nr = last >= j->W ? (last - j->W) / SW + 1 : 0;
                if (nl + nr >= NW)
                    continue;
#define TAPS(a, b) \
    row_taps(acc, xr + (iw + (a) * SW) * XPS, wp, wstride, CIN, XCS, NOC, NW, a, b, SW, XPS)
                if (nl == 0 && nr == 0)
                    TAPS(0, 0);
                else if (nl == 1 && nr == 0)
                    TAPS(1, 0);
                else if (nl == 0 && nr == 1)
                    TAPS(0, 1);
                else if (nl == 1 && nr == 1)
                    TAPS(1, 1);
                else if (MAXT > 1 && nr == 0)
                    TAPS(2, 0);
                else if (MAXT > 1)
                    TAPS(2, 1);
#undef TAPS
            }
        }
    UNROLL_FULL
    for (int o = 0; o < NOC; o++) {
        int64_t off = (((ob + o) * j->OH + oh) * j->OW + ow0) * VL;
        UNROLL_FULL
        for (int t = 0; t < NW; t++)
            *(vfu *)(j->y + off + t * VL) =
                epi(j, acc[o][t], j->res ? j->res + off + t * VL : 0);
    }
}

#define ROW_TILE(nw) row_tile(j, ob, oh, ow, NOC, nw, SW, XPS, MAXT)

/* Columns [ow, end) of row oh of blocks [ob, ob+NOC): tiles of NWR, then
 * 7, 4, 2 and 1. */
static ALWAYS_INLINE void row_span(const nc_job *j, int64_t ob, int64_t oh, int64_t ow,
                                   int64_t end, const int NOC, const int64_t SW,
                                   const int64_t XPS, const int MAXT)
{
    for (; ow + NWR <= end; ow += NWR)
        ROW_TILE(NWR);
    if (NWR > 7 && ow + 7 <= end) {
        ROW_TILE(7);
        ow += 7;
    }
    if (ow + 4 <= end) {
        ROW_TILE(4);
        ow += 4;
    }
    if (ow + 2 <= end) {
        ROW_TILE(2);
        ow += 2;
    }
    if (ow < end)
        ROW_TILE(1);
}
#undef ROW_TILE

static ALWAYS_INLINE void row_tiles(const nc_job *j, int64_t ob, int64_t oh, const int NOC,
                                    const int64_t SW, const int64_t XPS, const int MAXT)
{
    row_span(j, ob, oh, 0, j->OW, NOC, SW, XPS, MAXT);
}

/* Whether the row tiles apply to n output blocks (pairs, and the odd last
 * block of a blocked input: channel counts like 40 or 1000 pad to an odd
 * number of blocks), stride 1 or 2 (2 for a plain input: the stems of
 * resnets), taps outside the image only at the first column (two for a
 * plain input) and at the last. */
static int row_tiled(const nc_job *j, int64_t n)
{
    int plain = j->xps != VL;
    return (n == 2 || !plain) && (j->sw == 2 || (j->sw == 1 && !plain)) &&
           j->ow_lo <= 1 + plain && j->OW - j->ow_hi <= 1;
}

/* Row oh of blocks [ob, ob+n) in row tiles. */
static void row_item(const nc_job *j, int64_t ob, int64_t oh, int64_t n)
{
    if (j->xps == 1)
        row_tiles(j, ob, oh, 2, 2, 1, 2);
    else if (n == 1 && j->sw == 1)
        row_tiles(j, ob, oh, 1, 1, VL, 1);
    else if (n == 1)
        row_tiles(j, ob, oh, 1, 2, VL, 1);
    else if (j->sw == 1)
        row_tiles(j, ob, oh, 2, 1, VL, 1);
    else
        row_tiles(j, ob, oh, 2, 2, VL, 1);
}

/* One work item, blocks [ob, ob+n) of row oh: in row tiles where they
 * apply; else the blocked input at stride 1, two blocks at once, with
 * constant strides, and anything else (a plain input, other strides) one
 * block at a time. */
static void conv_item(const nc_job *j, int64_t ob, int64_t oh, int64_t n)
{
    if (row_tiled(j, n)) {
        row_item(j, ob, oh, n);
        return;
    }
    if (j->xps == VL && j->sw == 1 && n == 2)
        conv_row(j, ob, oh, 2, NW2, VL, 1);
    else
        for (int64_t o = 0; o < n; o++)
            conv_row(j, ob + o, oh, 1, NW1, j->xps, j->sw);
    row_epilogue(j, ob, n, oh);
}

/* -p fp16: a task widens each group's f16 weights into its thread's buffer
 * as it reaches the group, unless the buffer holds it already (the
 * thread's previous chunk ended in it), then runs the rows on a copy of
 * the job whose weights, bias, output and residual start at that group:
 * the f32 kernels on the exact f16 values, half the weight bytes read,
 * and every thread widening (cvrt_half_nchwc.c).  (Fewer, longer chunks
 * would widen less, but balance worse on a busy machine: mobilenet_v2 at
 * 2 threads ran 3-10% slower with 2 or 1 chunks per thread than with 4.) */
static void half_task(const nc_job *j, int64_t lo, int64_t hi, int tid)
{
    nc_job g = *j;
    int64_t per = j->noc * j->ICB * j->KH * j->KW * j->CI * VL, out = j->OH * j->OW * VL;
    g.w = j->wbuf[tid];
    /* Each row also fetches its share of the next group's f16 weights into
     * L2, so that widening them does not wait on memory. */
    int64_t share = cvrt_cdiv(per * 2, j->OH * 64) * 64;
    for (int64_t it = lo, cur = -1; it < hi; it++) {
        int64_t grp = it / j->OH, ob = grp * j->noc, oh = it % j->OH;
        if (grp != cur) {
            if (j->held[tid] != grp)
                cvrt_widen_f16(j->wbuf[tid], j->wh + grp * per, per);
            j->held[tid] = grp;
            g.bias = j->bias ? j->bias + ob * VL : NULL;
            g.y = j->y + ob * out;
            g.res = j->res ? j->res + ob * out : NULL;
            cur = grp;
        }
        if (grp + 1 < j->ngrp) {
            const char *nx = (const char *)(j->wh + (grp + 1) * per);
            for (int64_t b = oh * share; b < cvrt_min((oh + 1) * share, per * 2); b += 64)
                __builtin_prefetch(nx + b, 0, 2);
        }
        conv_item(&g, 0, oh, j->noc);
    }
}

/* A pointwise convolution (1x1, stride 1, no pads) over a blocked input is
 * one row of H*W pixels: work items are (output block group, run of pix
 * pixels), every tile NWR pixels wide however narrow the image's rows
 * (squeezenet's 13x13 layers ran in tiles of 7, 4 and 2 columns, a single
 * output block with as few accumulators: too few FMA chains to hide their
 * latency). */
static void pw_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const nc_job *j = arg;
    for (int64_t it = lo; it < hi; it++) {
        int64_t ob = it / j->nch * j->noc, p0 = it % j->nch * j->pix;
        int64_t p1 = cvrt_min(j->OW, p0 + j->pix);
        if (j->OCB - ob >= 2)
            row_span(j, ob, 0, p0, p1, 2, 1, VL, 1);
        else
            row_span(j, ob, 0, p0, p1, 1, 1, VL, 1);
    }
}

static int pointwise(const nc_job *j)
{
    return !j->wh && j->xps == VL && j->KH == 1 && j->KW == 1 && j->sh == 1 && j->sw == 1 &&
           j->pt == 0 && j->pl == 0 && j->OH == j->H && j->OW == j->W;
}

static void pw_run(cvrt_ctx *rt, nc_job *j)
{
    j->W = j->OW = j->H * j->W;
    j->H = j->OH = 1;
    j->ow_lo = 0;
    j->ow_hi = j->OW;
    /* runs of about 8 tiles, whole tiles but the last, and at least four
     * items per thread where there are tiles enough */
    int64_t want = cvrt_cdiv(4 * (int64_t)cvrt_threads(rt), j->ngrp);
    j->nch = cvrt_min(cvrt_max(want, j->OW / (8 * NWR)), cvrt_cdiv(j->OW, NWR));
    j->pix = cvrt_cdiv(cvrt_cdiv(j->OW, j->nch), NWR) * NWR;
    j->nch = cvrt_cdiv(j->OW, j->pix);
    int64_t items = j->ngrp * j->nch;
    cvrt_parallel(rt, items, cvrt_cdiv(items, 4 * (int64_t)cvrt_threads(rt)), pw_task, j);
}

static void conv_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const nc_job *j = arg;
    if (j->wh) {
        half_task(j, lo, hi, tid);
        return;
    }
    for (int64_t it = lo; it < hi; it++) {
        int64_t ob = it / j->OH * j->noc;
        conv_item(j, ob, it % j->OH, cvrt_min(j->noc, j->OCB - ob));
    }
}

/* Columns [*lo, *hi) whose taps all lie inside [0, W). */
static void inner_cols(int64_t W, int64_t KW, int64_t sw, int64_t pl, int64_t dw, int64_t OW,
                       int64_t *lo, int64_t *hi)
{
    int64_t a = cvrt_min(OW, cvrt_cdiv(pl, sw));
    int64_t last = W - 1 + pl - (KW - 1) * dw;     /* ow*sw <= last */
    int64_t b = last < 0 ? 0 : cvrt_min(OW, last / sw + 1);
    *lo = a;
    *hi = cvrt_max(a, b);
}

/* cvrt_nchwc_conv2d with f32 weights wb or f16 ones wh; -1 (nothing done)
 * where a group's widened f16 weights would not fit a thread's buffer. */
static int conv_any(cvrt_ctx *rt, const float *x, const float *wb, const uint16_t *wh,
                    const float *bias, float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H,
                    int64_t W, int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                    int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                    const float *res, int64_t act, float lo, float hi)
{
    if (blk != VL || OH <= 0 || OW <= 0)
        return 0;   /* the compiler blocks by the target's width only */
    int64_t held[CVRT_MAX_THREADS];
    nc_job j = {x, wb, bias, res, y, ICB, CI, 0, 0, 0, H, W, OCB, KH, KW, sh, sw, pt, pl, dh,
                dw, OH, OW, act, lo, hi, 1, 0, 0, 0, wh, rt->pack_b, held, 0, 0};
    if (wh && (!rt->pack_b || (OCB % 2 == 0 ? 2 : 1) * ICB * KH * KW * CI * VL >
                                  cvrt_scratch_floats()))
        return -1;
    for (int t = 0; t < cvrt_threads(rt) && t < CVRT_MAX_THREADS; t++)
        held[t] = -1;
    /* Blocked input: channel ci of pixel p at p*VL + ci; a plain one (one
     * block of CI channels): at ci*H*W + p. */
    int plain = CI != VL;
    j.xps = plain ? 1 : VL;
    j.xcs = plain ? H * W : 1;
    j.xbs = H * W * VL;
    inner_cols(W, KW, sw, pl, dw, OW, &j.ow_lo, &j.ow_hi);
    /* Pairs of output blocks, the last one alone when OCB is odd (-p fp16
     * widens one group's weights at a time: groups of one size there). */
    j.noc = OCB % 2 == 0 || !wh ? 2 : 1;
    j.ngrp = cvrt_cdiv(OCB, j.noc);
    if (pointwise(&j)) {
        pw_run(rt, &j);
        return 0;
    }
    /* About four runs of consecutive rows per thread: a group's weights
     * (up to 0.6 MB in resnet18's last layers) are then read by one thread,
     * into its own L2, rather than by all of them. */
    int64_t items = j.ngrp * OH;
    cvrt_parallel(rt, items, cvrt_cdiv(items, 4 * (int64_t)cvrt_threads(rt)), conv_task, &j);
    return 0;
}

void cvrt_nchwc_conv2d(cvrt_ctx *rt, const float *x, const float *wb, const float *bias,
                       float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                       int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt,
                       int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,
                       const float *res, int64_t act, float lo, float hi)
{
    conv_any(rt, x, wb, NULL, bias, y, blk, ICB, CI, H, W, OCB, KH, KW, sh, sw, pt, pl, dh, dw,
             OH, OW, res, act, lo, hi);
}

int cvrt_nchwc_conv2d_f16(cvrt_ctx *rt, const float *x, const uint16_t *wh, const float *bias,
                          float *y, int64_t blk, int64_t ICB, int64_t CI, int64_t H, int64_t W,
                          int64_t OCB, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                          int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                          int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    return conv_any(rt, x, NULL, wh, bias, y, blk, ICB, CI, H, W, OCB, KH, KW, sh, sw, pt, pl,
                    dh, dw, OH, OW, res, act, lo, hi);
}

/* ---- depthwise ------------------------------------------------------------ */

static ALWAYS_INLINE void dw_tile(const nc_job *j, int64_t cb, int64_t oh, int64_t ow0,
                                  const int NW, const int checked, const int64_t KH,
                                  const int64_t KW)
{
    vf acc[8];
    vf b = j->bias ? *(const vfu *)(j->bias + cb * VL) : (vf){0};
    UNROLL_FULL
    for (int t = 0; t < NW; t++)
        acc[t] = b;
    const float *xb = j->x + cb * j->H * j->W * VL;
    const float *wk = j->w + cb * KH * KW * VL;
    for (int64_t kh = 0; kh < KH; kh++) {
        int64_t ih = oh * j->sh - j->pt + kh * j->dh;
        if (ih < 0 || ih >= j->H)
            continue;
        for (int64_t kw = 0; kw < KW; kw++) {
            int64_t iw = ow0 * j->sw - j->pl + kw * j->dw;
            if (checked && (iw < 0 || iw >= j->W))
                continue;
            vf wv = *(const vfu *)(wk + (kh * KW + kw) * VL);
            const float *xp = xb + (ih * j->W + iw) * VL;
            UNROLL_FULL
            for (int t = 0; t < NW; t++)
                acc[t] += wv * *(const vfu *)(xp + t * j->sw * VL);
        }
    }
    int64_t off = ((cb * j->OH + oh) * j->OW + ow0) * VL;
    UNROLL_FULL
    for (int t = 0; t < NW; t++)
        *(vfu *)(j->y + off + t * VL) = acc[t];
}

static ALWAYS_INLINE void dw_row(const nc_job *j, int64_t cb, int64_t oh, const int64_t KH,
                                 const int64_t KW)
{
    int64_t nb = j->ow_lo + j->OW - j->ow_hi;
    for (int64_t q = 0; q < nb; q++)
        dw_tile(j, cb, oh, q < j->ow_lo ? q : j->ow_hi + q - j->ow_lo, 1, 1, KH, KW);
    int64_t ow = j->ow_lo;
    for (; ow + 8 <= j->ow_hi; ow += 8)
        dw_tile(j, cb, oh, ow, 8, 0, KH, KW);
    if (ow + 4 <= j->ow_hi) {
        dw_tile(j, cb, oh, ow, 4, 0, KH, KW);
        ow += 4;
    }
    for (; ow < j->ow_hi; ow++)
        dw_tile(j, cb, oh, ow, 1, 0, KH, KW);
}

static void dw_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const nc_job *j = arg;
    for (int64_t it = lo; it < hi; it++) {
        int64_t cb = it / j->OH, oh = it % j->OH;
        if (j->KH == 3 && j->KW == 3)
            dw_row(j, cb, oh, 3, 3);
        else
            dw_row(j, cb, oh, j->KH, j->KW);
        row_epilogue(j, cb, 1, oh);
    }
}

void cvrt_nchwc_dwconv2d(cvrt_ctx *rt, const float *x, const float *wb, const float *bias,
                         float *y, int64_t blk, int64_t CB, int64_t H, int64_t W, int64_t KH,
                         int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                         int64_t dw, int64_t OH, int64_t OW, const float *res, int64_t act,
                         float lo, float hi)
{
    if (blk != VL || OH <= 0 || OW <= 0)
        return;
    nc_job j = {x, wb, bias, res, y, CB, VL, VL, 1, 0, H, W, CB, KH, KW, sh, sw, pt, pl, dh,
                dw, OH, OW, act, lo, hi, 1, CB, 0, 0, NULL, NULL, NULL, 0, 0};
    inner_cols(W, KW, sw, pl, dw, OW, &j.ow_lo, &j.ow_hi);
    cvrt_parallel(rt, CB * OH, cvrt_max(1, 256 / OW), dw_task, &j);
}

/* ---- pooling -------------------------------------------------------------- */

/* kind 0: max (taps outside skipped), 1: average over the taps inside
 * (count_include_pad 0), 2: average over all KH*KW taps. */
typedef struct pool_job {
    const float *x;
    float *y;
    int64_t H, W, KH, KW, sh, sw, pt, pl, OH, OW, kind;
} pool_job;

static void pool_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const pool_job *j = arg;
    for (int64_t it = lo; it < hi; it++) {
        int64_t cb = it / j->OH, oh = it % j->OH;
        const float *xb = j->x + cb * j->H * j->W * VL;
        float *yr = j->y + (cb * j->OH + oh) * j->OW * VL;
        for (int64_t ow = 0; ow < j->OW; ow++) {
            vf acc = j->kind == 0 ? cvrt_splat(-__builtin_inff()) : (vf){0};
            int64_t n = 0;
            for (int64_t kh = 0; kh < j->KH; kh++) {
                int64_t ih = oh * j->sh - j->pt + kh;
                for (int64_t kw = 0; ih >= 0 && ih < j->H && kw < j->KW; kw++) {
                    int64_t iw = ow * j->sw - j->pl + kw;
                    if (iw < 0 || iw >= j->W)
                        continue;
                    vf v = *(const vfu *)(xb + (ih * j->W + iw) * VL);
                    /* max with NaN kept, as the reference does */
                    acc = j->kind ? acc + v : cvrt_select((v > acc) | (v != v), v, acc);
                    n++;
                }
            }
            if (j->kind)
                acc /= cvrt_splat((float)(j->kind == 2 ? j->KH * j->KW : n ? n : 1));
            *(vfu *)(yr + ow * VL) = acc;
        }
    }
}

void cvrt_nchwc_pool2d(cvrt_ctx *rt, const float *x, float *y, int64_t blk, int64_t CB,
                       int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                       int64_t pt, int64_t pl, int64_t OH, int64_t OW, int64_t kind)
{
    if (blk != VL || OH <= 0 || OW <= 0)
        return;
    pool_job j = {x, y, H, W, KH, KW, sh, sw, pt, pl, OH, OW, kind};
    cvrt_parallel(rt, CB * OH, cvrt_max(1, 512 / OW), pool_task, &j);
}
