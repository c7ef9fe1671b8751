/* Dense convolutions on the tensor cores over channels-last activations.
 *
 * The NCHW kernels of dev/cudev_tc.c gather the im2col matrix one element
 * at a time (bounds, address and select per element), which at batch 32
 * leaves them issue-bound on the gather.  Here a batch's input is first
 * packed (cvdk_nhwc_pack) channels-last in the tensor cores' operand type,
 * channels padded to a whole step: 16-bit for -p fp16 / bf16, else fp32.
 * K then runs over (kh, kw, channel), so a step's slice of a B column is cp
 * channels of one input pixel: a few 16-byte cp.async copies per thread,
 * zero-filled where the tap is padding, with no register staging.  The P8
 * weights are copied the same way (16-bit: three stages deep, fp32: two).
 * fp32 runs in 3xTF32 (fp32's tolerances): each B word is split into its
 * TF32 high part and remainder once, by the thread that copied it, and
 * each A fragment as it is loaded from shared memory.
 *
 * Tiles and warps as in dev/cudev_tc.h; cvdk_*_nc2 take 128 x 64 tiles
 * (OC a multiple of 128).  The host picks these kernels for batches
 * (host/cuhost_batch.c); the kernels' parameters are the _tc ones', with x
 * the packed input and the scratch slot its channel count cp. */
#include "compiler-core/backend/cuda/dev/cudev_tc.h"

#ifdef __NVPTX__

#define GLOBAL __attribute__((address_space(1)))

/* 16 bytes from global src to shared dst through cp.async (L2 only),
 * zeros where !ok (nothing is read then). */
static ALWAYS_INLINE void cp16(SHARED void *dst, const void *src, int ok)
{
    __nvvm_cp_async_cg_shared_global_16(dst, (const GLOBAL void *)src, ok ? 16 : 0);
}

/* ---- packing ------------------------------------------------------------- */

/* Modes of cvdk_nhwc_pack: 16 bits of cvd_widen's kinds, or fp32. */
enum { PACK_F16 = CVD_F16, PACK_BF16 = CVD_BF16, PACK_F32 = 3 };

void cvdk_nhwc_pack(const float *x, void *xt, int64_t C, int64_t HW, int64_t cp, int64_t batch,
                    int64_t dx, int64_t mode);

static SHARED float pk_sm[64][33];

/* xt[b][p][c] (c < cp, zero from C on) from image b of x (x + b*dx,
 * [C][HW]), by tiles of 32 pixels x 64 channels: read along pixels, written
 * along channels two at a time (a warp stores a pixel's 64 channels in one
 * 128- or 256-byte run). */
void cvdk_nhwc_pack(const float *x, void *xt, int64_t C, int64_t HW, int64_t cp, int64_t batch,
                    int64_t dx, int64_t mode)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), tx = tid % 32, ty = tid / 32;
    int hw = (int)HW, c = (int)C, ncp = (int)cp, tp = (hw + 31) / 32, tc = (ncp + 63) / 64;
    int64_t tiles = (int64_t)tp * tc * batch;
    typedef float v2f __attribute__((ext_vector_type(2)));
    for (int64_t t = __nvvm_read_ptx_sreg_ctaid_x(); t < tiles;
         t += __nvvm_read_ptx_sreg_nctaid_x()) {
        int b = (int)(t / (tp * tc)), rem = (int)(t - (int64_t)b * tp * tc);
        int c0 = rem / tp * 64, p0 = rem % tp * 32;
        const float *xb = x + b * dx;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            int ch = c0 + ty + 8 * i, p = p0 + tx;
            pk_sm[ty + 8 * i][tx] = ch < c && p < hw ? xb[(int64_t)ch * hw + p] : 0.0f;
        }
        __nvvm_bar_sync(0);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            /* cp is even: a channel pair is whole or past it. */
            int p = p0 + ty + 8 * i, ch = c0 + 2 * tx;
            if (p >= hw || ch >= ncp)
                continue;
            float lo = pk_sm[2 * tx][ty + 8 * i], hi = pk_sm[2 * tx + 1][ty + 8 * i];
            int64_t at = ((int64_t)b * hw + p) * ncp + ch;
            if (mode == PACK_F32) {
                v2f v = {lo, hi};
                *(v2f *)((float *)xt + at) = v;
            } else {
                ((unsigned *)xt)[at / 2] = h_pack(lo, hi, mode == PACK_BF16 ? CVD_BF16 : CVD_F16);
            }
        }
        __nvvm_bar_sync(0);
    }
}

/* ---- operands -------------------------------------------------------------- */

/* A thread's B column: its image's first pixel in xt, its output pixel's
 * top-left input position, whether it is inside N. */
typedef struct ncol {
    int base, ih0, iw0, ok;
} ncol;

static ALWAYS_INLINE ncol ncol_at(const gsrc *s, int64_t j)
{
    int jj = (int)j, img = jj / s->cols, p = jj - img * s->cols, ok = j < s->N;
    ncol c = {ok ? img * s->H * s->W : 0, p / s->OW * s->sh - s->pt, p % s->OW * s->sw - s->pl,
              ok};
    return c;
}

/* The step being staged, in K = (kh, kw, c < cp): its tap r = kh * KW + kw
 * and first channel c0 (steps never straddle taps: cp is a whole number of
 * steps).  A tile's steps are staged in order, so kpos_next advances it
 * without the divisions that were a third of the loop's instructions. */
typedef struct kpos {
    int r, kh, kw, c0;
} kpos;

static ALWAYS_INLINE kpos kpos_at(const gsrc *s, int64_t k0)
{
    kpos p = {(int)k0 / s->cp, 0, 0, 0};
    p.c0 = (int)k0 - p.r * s->cp;
    p.kh = p.r / s->KW;
    p.kw = p.r - p.kh * s->KW;
    return p;
}

static ALWAYS_INLINE void kpos_next(const gsrc *s, kpos *p, int step)
{
    p->c0 += step;
    if (p->c0 >= s->cp) {
        p->c0 = 0;
        p->r++;
        if (++p->kw == s->KW) {
            p->kw = 0;
            p->kh++;
        }
    }
}

/* Where in xt channel c0 + ch of the column's input pixel for step p's tap
 * is; *ok when the tap is inside the image (else 0). */
static ALWAYS_INLINE int64_t ncol_src(const gsrc *s, const ncol *c, const kpos *p, int ch, int *ok)
{
    int ih = c->ih0 + p->kh * s->dh, iw = c->iw0 + p->kw * s->dw;
    *ok = c->ok & ((unsigned)ih < (unsigned)s->H) & ((unsigned)iw < (unsigned)s->W);
    return *ok ? (int64_t)(c->base + ih * s->W + iw) * s->cp + p->c0 + ch : 0;
}

/* The 16-byte part `part` (of `parts` per k) of P8 panel p's 8 weights for
 * channel c0 + ch of step k's tap (the weights keep K = (c, kh, kw)); *ok
 * when the panel and channel exist (else the start of a). */
static ALWAYS_INLINE const v4u *a_src(const gsrc *s, const void *a, int64_t p, const kpos *k,
                                      int ch, int parts, int part, int *ok)
{
    ch += k->c0;
    *ok = p < (s->M + 7) / 8 && ch < s->C;
    int64_t at = (int64_t)ch * (s->KH * s->KW) + k->r;
    return (const v4u *)a + (*ok ? (p * s->korig + at) * parts + part : 0);
}

/* ---- 16-bit ---------------------------------------------------------------- */

/* NS stages of [A: HK k x (rows + 8) halves, column-major][B: TN columns x
 * LDB halves]; the output tile reuses them. */
enum { NS = 3 };
#define NH_STAGE(rows) (HK * ((rows) + 8) + TN * LDB)
#define NH_A(sm, rows, st) ((SHARED uint16_t *)(sm) + (st) * NH_STAGE(rows))
#define NH_B(sm, rows, st) (NH_A(sm, rows, st) + HK * ((rows) + 8))
#define NH_BYTES(rows)                                                                         \
    (NS * NH_STAGE(rows) * 2 > (rows) * TLD * 4 ? NS * NH_STAGE(rows) * 2 : (rows) * TLD * 4)
static SHARED v4u nh_sm64[NH_BYTES(64) / 16] __attribute__((aligned(128)));
static SHARED v4u nh_sm128[NH_BYTES(128) / 16] __attribute__((aligned(128)));

/* Step k's copies into stage st: rows/64 runs of A (8 rows of channel
 * c0 + tid % HK each) and 8 channels ((tid % 4) * 8 ..) of column tid / 4. */
static ALWAYS_INLINE void nh_stage(const gsrc *s, const ncol *c, int tid, int64_t m0,
                                   const kpos *k, int rows, SHARED v4u *sm, int st)
{
    int ok, ak = tid % HK;
    SHARED uint16_t *a = NH_A(sm, rows, st), *b = NH_B(sm, rows, st);
#pragma unroll
    for (int q = 0; q < rows / 64; q++) {
        const v4u *src = a_src(s, s->ah, m0 / 8 + tid / HK + 8 * q, k, ak, 1, 0, &ok);
        cp16(a + ak * (rows + 8) + tid / HK * 8 + 64 * q, src, ok);
    }
    int64_t at = ncol_src(s, c, k, tid % 4 * 8, &ok);
    cp16(b + tid / 4 * LDB + tid % 4 * 8, (const uint16_t *)s->xt + at, ok);
}

static ALWAYS_INLINE void nh_tile_rows(const gsrc *s, const gout *o, const gtile *w, int kind,
                                       int rows, SHARED v4u *sm)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), warp = tid / 32, fr = rows / 64;
    int wm = warp / 2 * 16 * fr, wn = warp % 2 * 32;
    ncol c = ncol_at(s, w->n0 + tid / 4);
    float acc[2][2][8] = {{{0}}};
    int steps = (int)((w->kend - w->kbegin) / HK);
    kpos k = kpos_at(s, w->kbegin);
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (i < steps) {
            nh_stage(s, &c, tid, w->m0, &k, rows, sm, i);
            kpos_next(s, &k, HK);
        }
        __nvvm_cp_async_commit_group();
    }
    for (int i = 0; i < steps; i++) {
        /* Step i has landed (this thread's copies, then everyone's), and
         * every warp is done with step i - 1, whose stage is refilled. */
        __nvvm_cp_async_wait_group(NS - 2);
        __nvvm_bar_sync(0);
        if (i + NS - 1 < steps) {
            nh_stage(s, &c, tid, w->m0, &k, rows, sm, (i + NS - 1) % NS);
            kpos_next(s, &k, HK);
        }
        __nvvm_cp_async_commit_group();
        SHARED uint16_t *a = NH_A(sm, rows, i % NS), *b = NH_B(sm, rows, i % NS);
        h_step(acc, a, b, rows + 8, fr, wm, wn, 0, kind);
        h_step(acc, a, b, rows + 8, fr, wm, wn, 16, kind);
    }
    __nvvm_cp_async_wait_all();
    tc_out(s, o, w, tid, fr, wm, wn, 0, acc, sm);
}

static ALWAYS_INLINE void nh_tile(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    BY_KIND(nh_tile_rows, s, o, w, kind, 64, nh_sm64);
}

static ALWAYS_INLINE void nh_tile2(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    BY_KIND(nh_tile_rows, s, o, w, kind, 128, nh_sm128);
}

/* ---- TF32 ------------------------------------------------------------------ */

/* NT_NS stages of [A: TK k x (rows + 8) words, column-major][B: TN columns
 * x LDT words][B's remainders, the same], A and B copied raw (fp32) with
 * cp.async.  Each thread splits the B words it copied into TF32 high parts
 * (in place) and remainders once they land, before the step's barrier (B
 * is read by 4 warps); A fragments are split as they are loaded (by 2).  A
 * step needs one barrier.  The output tile reuses them. */
enum { NT_NS = 2 };
#define NT_STAGE(rows) (TK * ((rows) + 8) + 2 * TN * LDT)
#define NT_A(sm, rows, st) ((SHARED int *)(sm) + (st) * NT_STAGE(rows))
#define NT_B(sm, rows, st) (NT_A(sm, rows, st) + TK * ((rows) + 8))
#define NT_BLO(sm, rows, st) (NT_B(sm, rows, st) + TN * LDT)
#define NT_BYTES(rows)                                                                         \
    (NT_NS * NT_STAGE(rows) * 4 > (rows) * TLD * 4 ? NT_NS * NT_STAGE(rows) * 4                \
                                                   : (rows) * TLD * 4)
static SHARED v4u nt_sm64[NT_BYTES(64) / 16] __attribute__((aligned(128)));
static SHARED v4u nt_sm128[NT_BYTES(128) / 16] __attribute__((aligned(128)));

/* Step k's copies into stage st: per 64 rows, 4 rows (the 16-byte part
 * tid / TK % 2 of P8 panel tid / (2 * TK)) of channel c0 + tid % TK, and
 * 4 channels ((tid % 4) * 4 ..) of column tid / 4. */
static ALWAYS_INLINE void nt_stage(const gsrc *s, const ncol *c, int tid, int64_t m0,
                                   const kpos *k, int rows, SHARED v4u *sm, int st)
{
    int ok, ak = tid % TK, part = tid / TK % 2;
    SHARED int *a = NT_A(sm, rows, st) + ak * (rows + 8) + tid / (2 * TK) * 8 + part * 4;
#pragma unroll
    for (int q = 0; q < rows / 64; q++) {
        const v4u *src = a_src(s, s->a, m0 / 8 + tid / (2 * TK) + 8 * q, k, ak, 2, part, &ok);
        cp16(a + 64 * q, src, ok);
    }
    int64_t at = ncol_src(s, c, k, tid % 4 * 4, &ok);
    cp16(NT_B(sm, rows, st) + tid / 4 * LDT + tid % 4 * 4, (const float *)s->xt + at, ok);
}

/* A fragment's raw fp32 words as TF32 high parts and (passes > 1)
 * remainders. */
static ALWAYS_INLINE void frag_split(const int raw[4], int hi[4], int lo[4], int passes)
{
#pragma unroll
    for (int l = 0; l < 4; l++) {
        float v = __builtin_bit_cast(float, raw[l]);
        unsigned h = __nvvm_f2tf32_rna(v);
        hi[l] = (int)h;
        lo[l] = passes > 1 ? (int)__nvvm_f2tf32_rna(v - __builtin_bit_cast(float, h)) : 0;
    }
}

/* This thread's B words of stage st (column tid / 4, k (tid % 4) * 4 ..,
 * the ones it copied, landed) as TF32 high parts in place and remainders.
 * (The asm orders the loads after the cp.async wait, which the compiler
 * does not see as touching memory.) */
static ALWAYS_INLINE void nt_split_b(SHARED v4u *sm, int rows, int st, int tid, int passes)
{
    int at = tid / 4 * LDT + tid % 4 * 4;
    volatile SHARED v4u *b = (volatile SHARED v4u *)(NT_B(sm, rows, st) + at);
    __asm__ volatile("" ::: "memory");
    v4u raw = *b, hi, lo;
    float v[4];
#pragma unroll
    for (int l = 0; l < 4; l++) {
        unsigned u = raw[l];    /* (bit_cast of a vector element reads element 0) */
        v[l] = __builtin_bit_cast(float, u);
    }
    tf_split(v, passes, &hi, &lo);
    *b = hi;
    if (passes > 1)
        *(volatile SHARED v4u *)(NT_BLO(sm, rows, st) + at) = lo;
}

/* part[r][f] += A[wm + 16r.., kb..kb+8] x B[kb..kb+8, wn + 16f..] (A raw
 * [k][lda], B split: [j][LDT] high parts at b, remainders at blo); passes
 * 3 adds hi*hi + hi*lo + lo*hi. */
static ALWAYS_INLINE void nt_step(float part[2][2][8], SHARED const int *a, int lda,
                                  SHARED const int *b, SHARED const int *blo, int fr, int wm,
                                  int wn, int kb, int passes)
{
    int bh[2][4], bl[2][4];
#pragma unroll
    for (int f = 0; f < 2; f++) {
        LD_B_TF32(bh[f], b + (wn + 16 * f) * LDT + kb, LDT);
        if (passes > 1)
            LD_B_TF32(bl[f], blo + (wn + 16 * f) * LDT + kb, LDT);
    }
#pragma unroll
    for (int r = 0; r < fr; r++) {
        int raw[4], ah[4], al[4];
        LD_A_TF32(raw, a + kb * lda + wm + 16 * r, lda);
        frag_split(raw, ah, al, passes);
#pragma unroll
        for (int f = 0; f < 2; f++) {
            if (passes > 1) {
                __mma_tf32_m16n16k8_mma_f32(part[r][f], al, bh[f], part[r][f], 3, 0);
                __mma_tf32_m16n16k8_mma_f32(part[r][f], ah, bl[f], part[r][f], 3, 0);
            }
            __mma_tf32_m16n16k8_mma_f32(part[r][f], ah, bh[f], part[r][f], 3, 0);
        }
    }
}

static ALWAYS_INLINE void nt_tile_rows(const gsrc *s, const gout *o, const gtile *w, int passes,
                                       int rows, SHARED v4u *sm)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), warp = tid / 32, fr = rows / 64;
    int wm = warp / 2 * 16 * fr, wn = warp % 2 * 32, lda = rows + 8;
    ncol c = ncol_at(s, w->n0 + tid / 4);
    float acc[2][2][8] = {{{0}}}, part[2][2][8] = {{{0}}};
    int steps = (int)((w->kend - w->kbegin) / TK);
    kpos k = kpos_at(s, w->kbegin);
    if (steps > 0) {
        nt_stage(s, &c, tid, w->m0, &k, rows, sm, 0);
        kpos_next(s, &k, TK);
    }
    __nvvm_cp_async_commit_group();
    for (int i = 0; i < steps; i++) {
        /* Step i has landed (this thread's copies: it splits its B words;
         * then everyone's), and every warp is done with step i - 1, whose
         * stage is refilled. */
        __nvvm_cp_async_wait_group(0);
        nt_split_b(sm, rows, i % NT_NS, tid, passes);
        __nvvm_bar_sync(0);
        if (i + 1 < steps) {
            nt_stage(s, &c, tid, w->m0, &k, rows, sm, (i + 1) % NT_NS);
            kpos_next(s, &k, TK);
        }
        __nvvm_cp_async_commit_group();
        SHARED const int *a = NT_A(sm, rows, i % NT_NS), *b = NT_B(sm, rows, i % NT_NS);
        SHARED const int *bl = NT_BLO(sm, rows, i % NT_NS);
        nt_step(part, a, lda, b, bl, fr, wm, wn, 0, passes);
        nt_step(part, a, lda, b, bl, fr, wm, wn, 8, passes);
        /* The tensor cores' own fp32 sums truncate: the sum of every 32 k
         * starts at zero and is added to acc with rounded adds. */
        if (i % 2 == 0 && i + 1 < steps)
            continue;
#pragma unroll
        for (int r = 0; r < fr; r++)
#pragma unroll
            for (int f = 0; f < 2; f++)
#pragma unroll
                for (int v = 0; v < 8; v++) {
                    acc[r][f][v] += part[r][f][v];
                    part[r][f][v] = 0.0f;
                }
    }
    __nvvm_cp_async_wait_all();
    tc_out(s, o, w, tid, fr, wm, wn, 1, acc, sm);
}

/* passes 3 or 1 as constants, so the steps carry no run-time tests. */
static ALWAYS_INLINE void nt_tile(const gsrc *s, const gout *o, const gtile *w, int passes)
{
    if (passes > 1)
        nt_tile_rows(s, o, w, 3, 64, nt_sm64);
    else
        nt_tile_rows(s, o, w, 1, 64, nt_sm64);
}

static ALWAYS_INLINE void nt_tile2(const gsrc *s, const gout *o, const gtile *w, int passes)
{
    if (passes > 1)
        nt_tile_rows(s, o, w, 3, 128, nt_sm128);
    else
        nt_tile_rows(s, o, w, 1, 128, nt_sm128);
}

/* ---- entry points -------------------------------------------------------- */

void cvdk_conv2d_p8_nc(const float *x, const float *w, const float *bias, float *y,
                       CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH, int64_t passes);
void cvdk_conv2d_p8_nc2(const float *x, const float *w, const float *bias, float *y,
                        CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH, int64_t passes);
void cvdk_conv2d_p8h_nc(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                        float *y, CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH);
void cvdk_conv2d_p8h_nc2(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                         float *y, CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH);

/* cv over the packed input x (cp channels a pixel) as a tiled product of
 * K = KH * KW * cp; half: 16-bit weights, tall: 128-row tiles (both
 * constants, so that run_tiles inlines the one tile function). */
static ALWAYS_INLINE void conv_nc(cvd_conv *cv, int64_t cp, int half, int tall, int mode)
{
    gsrc s;
    gout o;
    cv->p8 = 1;
    conv_prep(cv, &s, &o);
    s.xt = cv->x, s.b = 0, s.cp = (int)cp, s.korig = (int)s.K;
    s.K = cv->KH * cv->KW * cp;
    if (half && tall)
        run_tiles(&s, &o, cv->split, 2 * TM, HK, mode, nh_tile2);
    else if (half)
        run_tiles(&s, &o, cv->split, TM, HK, mode, nh_tile);
    else if (tall)
        run_tiles(&s, &o, cv->split, 2 * TM, TK, mode, nt_tile2);
    else
        run_tiles(&s, &o, cv->split, TM, TK, mode, nt_tile);
}

void cvdk_conv2d_p8_nc(const float *x, const float *w, const float *bias, float *y,
                       CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH, int64_t passes)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w;
    conv_nc(&cv, cp, 0, 0, (int)passes);
}

void cvdk_conv2d_p8_nc2(const float *x, const float *w, const float *bias, float *y,
                        CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH, int64_t passes)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w;
    conv_nc(&cv, cp, 0, 1, (int)passes);
}

void cvdk_conv2d_p8h_nc(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                        float *y, CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.wh = w, cv.wkind = wkind;
    conv_nc(&cv, cp, 1, 0, (int)wkind);
}

void cvdk_conv2d_p8h_nc2(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                         float *y, CVD_CONV_GEOM, int64_t cp, CVD_CONV_BATCH)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.wh = w, cv.wkind = wkind;
    conv_nc(&cv, cp, 1, 1, (int)wkind);
}

#endif
