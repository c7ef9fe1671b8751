/* Internal to the tiled device kernels (dev/cudev_gemm.c: fp32 FMA tiles,
 * dev/cudev_tc.c: tensor-core tiles): what a tiled product reads and
 * writes, the one loop that hands out its 64 x 64 output tiles, and the
 * convolution kernels' shared parameter list.
 *
 * A product is C[M, N] = A[M, K] x B[K, N].  A convolution is the implicit
 * GEMM y[OC, OH*OW] = W[OC, C*KH*KW] x im2col(x), the im2col matrix never
 * stored; a batch of images that share the weights is one product whose N
 * runs over every image's columns (column j is pixel j % cols of image
 * j / cols), so the last layers' 7 x 7 outputs fill whole tiles at batch
 * 32.  The host keeps batch * cols, and every tensor extent the 32-bit
 * index math sees, under 2^30 (host/cuhost_rt.c, cuhost_batch.c). */
#ifndef CVDEV_GEMM_H
#define CVDEV_GEMM_H

#include "compiler-core/backend/cuda/dev/cudev.h"

#ifdef __NVPTX__

enum { TM = 64, TN = 64, TT = 16 /* threads per tile side: 256 a block */ };

#define SHARED __attribute__((address_space(3)))
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* 16-bit element kinds (cvrt.h's CVRT_W_F16, CVRT_W_BF16). */
enum { CVD_F16 = 1, CVD_BF16 = 2 };

static ALWAYS_INLINE float cvd_widen(uint16_t h, int kind)
{
    if (kind == CVD_BF16)
        return __builtin_bit_cast(float, (uint32_t)h << 16);
    float f;
    __asm__("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

/* A[i,k]: a[i*ars + k*acs], or cvrt.h's P8 form (p8), in f32 or, when ah
 * is set, in the 16-bit kind akind.  B[k,j]: b[k*brs + j*bcs] (or bh, 16
 * bits, kind bkind), or for a convolution the im2col of image j / cols of
 * x = b, images db floats apart. */
typedef struct gsrc {
    int64_t M, N, K;
    const float *a, *b;
    const uint16_t *ah, *bh;
    int akind, bkind;
    int64_t ars, acs, brs, bcs;
    int p8, conv;
    int64_t db;
    /* conv: the geometry, in 32-bit index math (cheaper on the GPU). */
    int cols, C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OW;
    /* Channels-last convolutions (dev/cudev_nhwc.c): x packed as xt, cp
     * channels per pixel; K runs over (kh, kw, c < cp), korig = C*KH*KW is
     * the weights' K. */
    const void *xt;
    int cp, korig;
} gsrc;

/* C and its epilogue.  conv: bias by row (output channel), the residual
 * with C's layout, image j / cols at c + (j / cols) * dc.  partial (split
 * K): alpha * acc is added to C atomically, the epilogue comes after
 * (cvdk_zero2, cvdk_*_epi). */
typedef struct gout {
    float *c;
    int64_t ldc, dc;
    float alpha, bias_scale, lo, hi;
    int64_t accumulate, bias_rs, bias_cs, res_ld, act;
    const float *bias, *res;
    int conv, partial, cols;
} gout;

/* Where column j of C starts (row 0): image j / cols's pixel j % cols. */
static ALWAYS_INLINE int64_t col_at(const gout *o, int64_t j)
{
    if (!o->conv)
        return j;
    int img = (int)j / o->cols;
    return img * o->dc + ((int)j - img * o->cols);
}

/* C[i, j] from the accumulated sum, cj = col_at(o, j). */
static ALWAYS_INLINE void put(const gout *o, int64_t i, int64_t j, int64_t cj, float acc)
{
    int64_t at = i * o->ldc + cj;
    float v = o->alpha * acc;
    if (o->partial) {
        __nvvm_atom_add_gen_f(o->c + at, v);
        return;
    }
    if (o->conv) {
        if (o->bias)
            v += o->bias[i];
        o->c[at] = cvd_epilogue(v, o->res, at, o->act, o->lo, o->hi);
        return;
    }
    if (o->bias)
        v += o->bias_scale * o->bias[i * o->bias_rs + j * o->bias_cs];
    if (o->accumulate)
        v += o->c[at];
    o->c[at] = cvd_epilogue(v, o->res, i * o->res_ld + j, o->act, o->lo, o->hi);
}

/* One output tile and its K range. */
typedef struct gtile {
    int64_t m0, n0, kbegin, kend;
} gtile;

/* Thread (tx, ty)'s 4 x 4 outputs of a 64 x 64 tile: rows m0 + ty + 16r,
 * columns n0 + tx + 16q (a warp's stores cover 16 consecutive columns). */
static ALWAYS_INLINE void put_tile(const gsrc *s, const gout *o, const gtile *w, int tx, int ty,
                                   float v[4][4])
{
#pragma unroll
    for (int q = 0; q < 4; q++) {
        int64_t j = w->n0 + tx + TT * q;
        if (j >= s->N)
            continue;
        int64_t cj = col_at(o, j);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int64_t i = w->m0 + ty + TT * r;
            if (i < s->M)
                put(o, i, j, cj, v[r][q]);
        }
    }
}

/* The work of one tile, by a whole block: fn(s, o, w, mode). */
typedef void gtile_fn(const gsrc *s, const gout *o, const gtile *w, int mode);

/* Every block takes tm x TN tiles (and, split > 1, K chunks of tk
 * multiples) in a grid-stride loop: consecutive blocks share a row of
 * tiles (the same weights) and walk the columns. */
static ALWAYS_INLINE void run_tiles(const gsrc *s, gout *o, int64_t split, int tm, int tk,
                                    int mode, gtile_fn *fn)
{
    int64_t tiles_n = (s->N + TN - 1) / TN, tiles = (s->M + tm - 1) / tm * tiles_n;
    split = split > 1 ? split : 1;
    int64_t kchunk = (s->K + split * tk - 1) / (split * tk) * tk;
    o->partial = split > 1;
    for (int64_t it = __nvvm_read_ptx_sreg_ctaid_x(); it < tiles * split;
         it += __nvvm_read_ptx_sreg_nctaid_x()) {
        int64_t t = it / split;
        gtile w = {t / tiles_n * tm, t % tiles_n * TN, it % split * kchunk, 0};
        w.kend = w.kbegin + kchunk < s->K ? w.kbegin + kchunk : s->K;
        fn(s, o, &w, mode);
    }
}

/* The column of B a thread gathers for a tile: its image's x, its output
 * pixel's top-left input position, and whether it is inside N. */
typedef struct bcol {
    const float *x;
    int ih0, iw0, ok;
} bcol;

static ALWAYS_INLINE bcol bcol_at(const gsrc *s, int64_t j)
{
    int jj = (int)j, img = jj / s->cols, p = jj - img * s->cols;
    /* A column past N reads image 0 (every load stays in bounds: the
     * gathers load unconditionally and select zeros). */
    bcol c = {j < s->N ? s->b + img * s->db : s->b, p / s->OW * s->sh - s->pt,
              p % s->OW * s->sw - s->pl, j < s->N};
    return c;
}

/* The gathers read each step's im2col row offsets from a table that one
 * warp fills per step (shared memory), so no thread divides or walks
 * (c, kh, kw): entry kk of the step at k0 is, for k = k0 + kk, {the offset
 * of x[c, kh*dh, kw*dw] in an image, kh*dh, kw*dw, k < kend}. */
typedef int v4i __attribute__((ext_vector_type(4)));

static ALWAYS_INLINE void ktab_fill(const gsrc *s, SHARED v4i *tb, int kk, int64_t k0,
                                    int64_t kend)
{
    int k = (int)k0 + kk, r = k / s->KW, kw = k - r * s->KW, kh = r % s->KH, ch = r / s->KH;
    v4i e = {(ch * s->H + kh * s->dh) * s->W + kw * s->dw, kh * s->dh, kw * s->dw, k < kend};
    tb[kk] = e;
}

/* im2col rows k .. k+n-1 (zero at or past kend) of a thread's column, tb[l]
 * describing row k + l.  Branch free: every load is issued (at offset 0
 * where the element is padding) and zeros selected after, so a thread's n
 * loads are in flight together. */
static ALWAYS_INLINE void gather_t(const gsrc *s, const bcol *c, SHARED const v4i *tb, int k,
                                   int kend, int n, float *out)
{
    int hw = s->H * s->W, base = c->ih0 * s->W + c->iw0;
    if (s->KH == 1 && s->KW == 1 && c->ih0 >= 0 && c->ih0 < s->H && c->iw0 >= 0 &&
        c->iw0 < s->W) {
#pragma unroll
        for (int l = 0; l < n; l++) {
            int valid = c->ok & (k + l < kend);
            float v = c->x[valid ? (k + l) * hw + base : 0];
            out[l] = valid ? v : 0.0f;
        }
        return;
    }
#pragma unroll
    for (int l = 0; l < n; l++) {
        v4i e = tb[l];
        int ih = c->ih0 + e.y, iw = c->iw0 + e.z;
        int valid = c->ok & e.w & ((unsigned)ih < (unsigned)s->H) & ((unsigned)iw < (unsigned)s->W);
        float v = c->x[valid ? base + e.x : 0];
        out[l] = valid ? v : 0.0f;
    }
}

/* The dense convolution kernels' parameters (cvrt.h's cvrt_conv2d* less
 * the context, then the batch: image b reads x + b*dx, writes y + b*dy;
 * split: K chunks, see run_tiles). */
#define CVD_CONV_GEOM                                                                          \
    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,          \
        int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH, int64_t OW,    \
        const float *res, int64_t act, float lo, float hi
#define CVD_CONV_BATCH int64_t batch, int64_t dx, int64_t dy, int64_t split

typedef struct cvd_conv {
    const float *x, *w, *bias, *res;
    const uint16_t *wh;         /* 16-bit P8 weights of kind wkind instead of w */
    float *y;
    int64_t wkind, p8;
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, act;
    float lo, hi;
    int64_t batch, dx, dy, split;
} cvd_conv;

#define CVD_CONV_INIT                                                                          \
    {.x = x, .bias = bias, .res = res, .y = y, .C = C, .H = H, .W = W, .OC = OC, .KH = KH,     \
     .KW = KW, .sh = sh, .sw = sw, .pt = pt, .pl = pl, .dh = dh, .dw = dw, .OH = OH, .OW = OW, \
     .act = act, .lo = lo, .hi = hi, .batch = batch, .dx = dx, .dy = dy, .split = split}

/* Convolution cv as a tiled product (gsrc, gout). */
static ALWAYS_INLINE void conv_prep(const cvd_conv *cv, gsrc *s, gout *o)
{
    int64_t K = cv->C * cv->KH * cv->KW, cols = cv->OH * cv->OW;
    *s = (gsrc){.M = cv->OC, .N = cols * cv->batch, .K = K, .a = cv->w, .b = cv->x,
                .ah = cv->wh, .akind = (int)cv->wkind, .ars = K, .acs = 1, .p8 = (int)cv->p8,
                .conv = 1, .db = cv->dx, .cols = (int)cols, .C = (int)cv->C, .H = (int)cv->H,
                .W = (int)cv->W, .KH = (int)cv->KH, .KW = (int)cv->KW, .sh = (int)cv->sh,
                .sw = (int)cv->sw, .pt = (int)cv->pt, .pl = (int)cv->pl, .dh = (int)cv->dh,
                .dw = (int)cv->dw, .OW = (int)cv->OW};
    *o = (gout){.c = cv->y, .ldc = cols, .dc = cv->dy, .alpha = 1.0f, .lo = cv->lo,
                .hi = cv->hi, .act = cv->act, .bias = cv->bias, .res = cv->res, .conv = 1,
                .cols = (int)cols};
}

#endif
#endif
