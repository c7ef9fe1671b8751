/* Dense convolutions on the tensor cores over channels-last activations.
 *
 * The NCHW kernels of dev/cudev_tc.c gather the im2col matrix one element
 * at a time (bounds, address and select per element), which at batch 32
 * leaves them issue-bound on the gather.  Here a batch's input is first
 * packed (cvdk_nhwc_pack) channels-last in the tensor cores' operand type,
 * channels padded to a whole step: 16-bit for -p fp16 / bf16, or for fp32
 * TF32 high parts and remainders in two planes (3xTF32, fp32's tolerances,
 * the split done once per element instead of once per use).  K then runs
 * over (kh, kw, channel), so a step's slice of a B column is cp channels of
 * one input pixel: a few 16-byte cp.async copies per thread, zero-filled
 * where the tap is padding, with no register staging.  16-bit weights (P8)
 * are copied the same way, three stages deep; fp32 weights are split into
 * TF32 parts in registers one step ahead (two B stages, one A buffer).
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

/* Modes of cvdk_nhwc_pack: 16 bits of cvd_widen's kinds, or TF32 parts. */
enum { PACK_F16 = CVD_F16, PACK_BF16 = CVD_BF16, PACK_TF32 = 3 };

void cvdk_nhwc_pack(const float *x, void *xt, int64_t C, int64_t HW, int64_t cp, int64_t batch,
                    int64_t dx, int64_t mode);

static SHARED float pk_sm[32][33];

static ALWAYS_INLINE uint16_t to16(float v, int64_t mode)
{
    uint16_t r;
    if (mode == PACK_BF16)
        __asm__("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
    else
        __asm__("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
    return r;
}

/* xt[b][p][c] (c < cp, zero from C on) from image b of x (x + b*dx,
 * [C][HW]), by tiles of 32 pixels x 32 channels: read along pixels, written
 * along channels.  TF32: high parts at xt, remainders batch*HW*cp words
 * further. */
void cvdk_nhwc_pack(const float *x, void *xt, int64_t C, int64_t HW, int64_t cp, int64_t batch,
                    int64_t dx, int64_t mode)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), tx = tid % 32, ty = tid / 32;
    int hw = (int)HW, c = (int)C, ncp = (int)cp, tp = (hw + 31) / 32, tc = (ncp + 31) / 32;
    int64_t tiles = (int64_t)tp * tc * batch, plane = batch * HW * cp;
    for (int64_t t = __nvvm_read_ptx_sreg_ctaid_x(); t < tiles;
         t += __nvvm_read_ptx_sreg_nctaid_x()) {
        int b = (int)(t / (tp * tc)), rem = (int)(t - (int64_t)b * tp * tc);
        int c0 = rem / tp * 32, p0 = rem % tp * 32;
        const float *xb = x + b * dx;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int ch = c0 + ty + 8 * i, p = p0 + tx;
            pk_sm[ty + 8 * i][tx] = ch < c && p < hw ? xb[(int64_t)ch * hw + p] : 0.0f;
        }
        __nvvm_bar_sync(0);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int p = p0 + ty + 8 * i, ch = c0 + tx;
            if (p >= hw || ch >= ncp)
                continue;
            float v = pk_sm[tx][ty + 8 * i];
            int64_t at = ((int64_t)b * hw + p) * ncp + ch;
            if (mode == PACK_TF32) {
                unsigned h = __nvvm_f2tf32_rna(v);
                ((unsigned *)xt)[at] = h;
                ((unsigned *)xt)[plane + at] = __nvvm_f2tf32_rna(v - __builtin_bit_cast(float, h));
            } else {
                ((uint16_t *)xt)[at] = to16(v, mode);
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

/* The step at k0 of K = (kh, kw, c < cp): tap r = kh * KW + kw, channels
 * c0 .. (steps never straddle taps: cp is a whole number of steps). */
static ALWAYS_INLINE void step_at(const gsrc *s, int64_t k0, int *r, int *c0)
{
    *r = (int)(k0 / s->cp);
    *c0 = (int)(k0 - (int64_t)*r * s->cp);
}

/* Where in xt channel ch of the column's input pixel for tap r is; *ok
 * when the tap is inside the image (else 0). */
static ALWAYS_INLINE int64_t ncol_src(const gsrc *s, const ncol *c, int r, int ch, int *ok)
{
    int kh = r / s->KW, kw = r - kh * s->KW;
    int ih = c->ih0 + kh * s->dh, iw = c->iw0 + kw * s->dw;
    *ok = c->ok & ((unsigned)ih < (unsigned)s->H) & ((unsigned)iw < (unsigned)s->W);
    return *ok ? (int64_t)(c->base + ih * s->W + iw) * s->cp + ch : 0;
}

/* The 16-byte part `part` (of `parts` per k) of P8 panel p's 8 weights for
 * tap r of channel ch (the weights keep K = (c, kh, kw)); *ok when the
 * panel and channel exist (else the start of a). */
static ALWAYS_INLINE const v4u *a_src(const gsrc *s, const void *a, int64_t p, int r, int ch,
                                      int parts, int part, int *ok)
{
    *ok = p < (s->M + 7) / 8 && ch < s->C;
    int64_t k = (int64_t)ch * (s->KH * s->KW) + r;
    return (const v4u *)a + (*ok ? (p * s->korig + k) * parts + part : 0);
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

/* Step k0's copies into stage st: rows/64 runs of A (8 rows of channel
 * c0 + tid % HK each) and 8 channels ((tid % 4) * 8 ..) of column tid / 4. */
static ALWAYS_INLINE void nh_stage(const gsrc *s, const ncol *c, int tid, int64_t m0, int64_t k0,
                                   int rows, SHARED v4u *sm, int st)
{
    int r, c0, ok, ak = tid % HK;
    step_at(s, k0, &r, &c0);
    SHARED uint16_t *a = NH_A(sm, rows, st), *b = NH_B(sm, rows, st);
#pragma unroll
    for (int q = 0; q < rows / 64; q++) {
        const v4u *src = a_src(s, s->ah, m0 / 8 + tid / HK + 8 * q, r, c0 + ak, 1, 0, &ok);
        cp16(a + ak * (rows + 8) + tid / HK * 8 + 64 * q, src, ok);
    }
    int64_t at = ncol_src(s, c, r, c0 + tid % 4 * 8, &ok);
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
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (i < steps)
            nh_stage(s, &c, tid, w->m0, w->kbegin + (int64_t)i * HK, rows, sm, i);
        __nvvm_cp_async_commit_group();
    }
    for (int i = 0; i < steps; i++) {
        /* Step i has landed (this thread's copies, then everyone's), and
         * every warp is done with step i - 1, whose stage is refilled. */
        __nvvm_cp_async_wait_group(NS - 2);
        __nvvm_bar_sync(0);
        if (i + NS - 1 < steps)
            nh_stage(s, &c, tid, w->m0, w->kbegin + (int64_t)(i + NS - 1) * HK, rows, sm,
                     (i + NS - 1) % NS);
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

/* Words: A [hi, lo][TK][rows + 8] (one buffer, stored from registers), then
 * B [2 stages][hi, lo][TN][LDT]; the output tile reuses them. */
#define NT_A(sm, rows, hl) ((SHARED int *)(sm) + (hl) * TK * ((rows) + 8))
#define NT_B(sm, rows, st, hl)                                                                 \
    ((SHARED int *)(sm) + 2 * TK * ((rows) + 8) + ((st) * 2 + (hl)) * TN * LDT)
#define NT_WORDS(rows) (2 * TK * ((rows) + 8) + 4 * TN * LDT)
#define NT_BYTES(rows) (NT_WORDS(rows) > (rows) * TLD ? NT_WORDS(rows) * 4 : (rows) * TLD * 4)
static SHARED v4u nt_sm64[NT_BYTES(64) / 16] __attribute__((aligned(128)));
static SHARED v4u nt_sm128[NT_BYTES(128) / 16] __attribute__((aligned(128)));

/* This thread's A for step k0: per 64 rows, 4 rows (8 * (tid / 32) +
 * 4 * (tid % 2) ..) of channel c0 + tid / 2 % TK. */
static ALWAYS_INLINE void nt_load_a(const gsrc *s, int tid, int64_t m0, int64_t k0, int fr,
                                    v4u ra[2])
{
    int r, c0, ok;
    step_at(s, k0, &r, &c0);
#pragma unroll
    for (int q = 0; q < fr; q++) {
        const v4u *src = a_src(s, s->a, m0 / 8 + tid / 32 + 8 * q, r, c0 + tid / 2 % TK, 2,
                               tid % 2, &ok);
        v4u z = {0, 0, 0, 0};
        ra[q] = ok ? *src : z;
    }
}

static ALWAYS_INLINE void nt_store_a(SHARED v4u *sm, int rows, int tid, int fr, const v4u ra[2],
                                     int passes)
{
    int at = tid / 2 % TK * (rows + 8) + tid / 32 * 8 + tid % 2 * 4;
#pragma unroll
    for (int q = 0; q < fr; q++) {
        float v[4];
#pragma unroll
        for (int l = 0; l < 4; l++) {
            unsigned u = ra[q][l];
            v[l] = __builtin_bit_cast(float, u);
        }
        v4u hi, lo;
        tf_split(v, passes, &hi, &lo);
        *(SHARED v4u *)(NT_A(sm, rows, 0) + at + 64 * q) = hi;
        if (passes > 1)
            *(SHARED v4u *)(NT_A(sm, rows, 1) + at + 64 * q) = lo;
    }
}

/* Step k0's B into stage st: 4 channels ((tid % 4) * 4 ..) of column
 * tid / 4, high parts and (passes > 1) remainders. */
static ALWAYS_INLINE void nt_stage_b(const gsrc *s, const ncol *c, int tid, int64_t k0, int rows,
                                     SHARED v4u *sm, int st, int passes)
{
    int r, c0, ok;
    step_at(s, k0, &r, &c0);
    int64_t at = ncol_src(s, c, r, c0 + tid % 4 * 4, &ok);
    const unsigned *xt = s->xt;
    int to = tid / 4 * LDT + tid % 4 * 4;
    cp16(NT_B(sm, rows, st, 0) + to, xt + at, ok);
    if (passes > 1)
        cp16(NT_B(sm, rows, st, 1) + to, xt + s->plane + at, ok);
}

static ALWAYS_INLINE void nt_tile_rows(const gsrc *s, const gout *o, const gtile *w, int passes,
                                       int rows, SHARED v4u *sm)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), warp = tid / 32, fr = rows / 64;
    int wm = warp / 2 * 16 * fr, wn = warp % 2 * 32, lda = rows + 8;
    ncol c = ncol_at(s, w->n0 + tid / 4);
    float acc[2][2][8] = {{{0}}};
    v4u ra[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    int steps = (int)((w->kend - w->kbegin) / TK);
    if (steps > 0) {
        nt_stage_b(s, &c, tid, w->kbegin, rows, sm, 0, passes);
        nt_load_a(s, tid, w->m0, w->kbegin, fr, ra);
    }
    __nvvm_cp_async_commit_group();
    for (int i = 0; i < steps; i++) {
        /* Every warp is done with step i - 1: A's buffer and the other B
         * stage are free. */
        int64_t k0 = w->kbegin + (int64_t)i * TK;
        nt_store_a(sm, rows, tid, fr, ra, passes);
        if (i + 1 < steps) {
            nt_stage_b(s, &c, tid, k0 + TK, rows, sm, (i + 1) & 1, passes);
            nt_load_a(s, tid, w->m0, k0 + TK, fr, ra);
        }
        __nvvm_cp_async_commit_group();
        __nvvm_cp_async_wait_group(1);
        __nvvm_bar_sync(0);
        tf_steps(acc, NT_A(sm, rows, 0), NT_A(sm, rows, 1), lda, NT_B(sm, rows, i & 1, 0),
                 NT_B(sm, rows, i & 1, 1), LDT, fr, wm, wn, passes);
        __nvvm_bar_sync(0);
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
    s.plane = cv->batch * cv->H * cv->W * cp;
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
