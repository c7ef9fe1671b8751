/* Dense convolutions on the tensor cores: the 64 x 64 output tiles of
 * dev/cudev_gemm.h, each done by the 8 warps with wmma, each warp a
 * 16 x 32 strip (two 16 x 16 accumulators, fp32).
 *
 * fp32 weights (cvdk_conv2d_tc, cvdk_conv2d_p8_tc): K in steps of 16,
 * m16n16k8 TF32.  passes 3 splits each operand into a TF32 high part and a
 * TF32 remainder and adds hi*hi + hi*lo + lo*hi ("3xTF32"): about fp32's
 * accuracy, within the fp32 tolerances; passes 1 is plain TF32 (PyTorch's
 * default for convolutions).
 *
 * 16-bit weights (cvdk_conv2d_p8h_tc, -p fp16 / bf16): K in steps of 32,
 * m16n16k16 in the weights' type (f16 or bf16), the activations rounded to
 * it as they are staged, fp32 sums: PyTorch's half-precision arithmetic.
 *
 * The tensor cores leave the gather as the cost, so it is pipelined: the
 * next step's operands are loaded into registers while the warps multiply
 * the current one (two shared buffers); each thread keeps one im2col column
 * (its output pixel decoded once per tile) and walks consecutive k; packed
 * (P8) weights are read 16 bytes at a time (8 rows of one k in 16 bits, or
 * 4 rows in 32).  For batches, windows wider than 1 x 1 go channels-last
 * instead (dev/cudev_nhwc.c); the steps and the output are shared
 * (dev/cudev_tc.h). */
#include "compiler-core/backend/cuda/dev/cudev_tc.h"

#ifdef __NVPTX__

/* ---- TF32 ---------------------------------------------------------------- */

/* Shared memory, 32-bit words: A as [buffer][hi, lo][k][TLD] (column-major
 * A), then B column-major, [buffer][hi, lo][j][LDT] (a thread's 4
 * consecutive k of its column are one 16-byte store); the output tile
 * [64][TLD] fp32 reuses it. */
#define TF_A(buf, hl) ((SHARED int *)tf_sm + ((buf) * 2 + (hl)) * TK * TLD)
#define TF_B(buf, hl) ((SHARED int *)tf_sm + 4 * TK * TLD + ((buf) * 2 + (hl)) * TN * LDT)
static SHARED v4u tf_sm[(4 * TK * TLD + 4 * TN * LDT) / 4];
static SHARED v4i tf_kt[2][TK];     /* gather_t's tables, by step parity */

/* This thread's 4 elements of A for step k0: rows ai[l] of k ak[l], or
 * (P8) one 16-byte run, 4 rows of one k. */
typedef struct tf_thr {
    int ai[4], ak[4];
} tf_thr;

static ALWAYS_INLINE void tf_load_a(const gsrc *s, const tf_thr *th, int tid, int64_t m0,
                                    int64_t k0, int64_t kend, float ra[4])
{
    if (s->p8) {
        v4u v = load_p8_vec(s->a, m0 / 8 + tid / 32, (s->M + 7) / 8, s->K, k0 + tid / 2 % TK,
                            kend, 2, tid % 2);
        /* (Through a scalar: clang 19 bit-casts a vector element lvalue
         * from the vector's first element.) */
#pragma unroll
        for (int l = 0; l < 4; l++) {
            unsigned u = v[l];
            ra[l] = __builtin_bit_cast(float, u);
        }
        return;
    }
#pragma unroll
    for (int l = 0; l < 4; l++) {
        int64_t i = m0 + th->ai[l], k = k0 + th->ak[l];
        ra[l] = i < s->M && k < kend ? s->a[i * s->ars + k] : 0.0f;
    }
}

static ALWAYS_INLINE void tf_tile(const gsrc *s, const gout *o, const gtile *w, int passes)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), warp = tid / 32;
    int wm = warp / 2 * 16, wn = warp % 2 * 32, bj = tid % TN, bk = tid / TN * 4;
    tf_thr th;
    for (int l = 0; l < 4; l++) {
        int e = tid + l * TT * TT;
        th.ai[l] = e / TK, th.ak[l] = e % TK;
    }
    /* P8: rows 8 * (tid / 32) + 4 * (tid % 2) .. + 3 of k tid / 2 % 16. */
    int pk = tid / 2 % TK, pi = tid / 32 * 8 + tid % 2 * 4;
    bcol c = bcol_at(s, w->n0 + bj);
    float acc[2][2][8] = {{{0}}}, ra[4], rb[4];
    int buf = 0;
    if (w->kbegin < w->kend) {
        if (tid < TK)
            ktab_fill(s, tf_kt[0], tid, w->kbegin, w->kend);
        __nvvm_bar_sync(0);
        tf_load_a(s, &th, tid, w->m0, w->kbegin, w->kend, ra);
        gather_t(s, &c, tf_kt[0] + bk, (int)w->kbegin + bk, (int)w->kend, 4, rb);
    }
    for (int64_t k0 = w->kbegin; k0 < w->kend; k0 += TK, buf ^= 1) {
        v4u hi, lo;
        tf_split(ra, passes, &hi, &lo);
        if (s->p8) {
            *(SHARED v4u *)(TF_A(buf, 0) + pk * TLD + pi) = hi;
            *(SHARED v4u *)(TF_A(buf, 1) + pk * TLD + pi) = lo;
        } else {
            for (int l = 0; l < 4; l++) {
                TF_A(buf, 0)[th.ak[l] * TLD + th.ai[l]] = (int)hi[l];
                TF_A(buf, 1)[th.ak[l] * TLD + th.ai[l]] = (int)lo[l];
            }
        }
        tf_split(rb, passes, &hi, &lo);
        *(SHARED v4u *)(TF_B(buf, 0) + bj * LDT + bk) = hi;
        *(SHARED v4u *)(TF_B(buf, 1) + bj * LDT + bk) = lo;
        if (k0 + TK < w->kend && tid < TK)
            ktab_fill(s, tf_kt[buf ^ 1], tid, k0 + TK, w->kend);
        __nvvm_bar_sync(0);
        if (k0 + TK < w->kend) {
            tf_load_a(s, &th, tid, w->m0, k0 + TK, w->kend, ra);
            gather_t(s, &c, tf_kt[buf ^ 1] + bk, (int)k0 + TK + bk, (int)w->kend, 4, rb);
        }
        tf_steps(acc, TF_A(buf, 0), TF_A(buf, 1), TLD, TF_B(buf, 0), TF_B(buf, 1), LDT, 1, wm,
                 wn, passes);
    }
    tc_out(s, o, w, tid, 1, wm, wn, 1, acc, tf_sm);
}

/* ---- 16-bit -------------------------------------------------------------- */

/* A tile of `rows` (64 or 128) x 64 outputs.  Shared memory: A as
 * [buffer][k][rows + 8] halves, then B column-major, [buffer][j][HK + 8]
 * (a thread's 8 consecutive k of its column are one 16-byte store); the
 * output tile [rows][TLD] fp32 reuses it.  Each warp owns rows/4 x 32
 * outputs. */
#define H_A(sm, rows, buf) ((SHARED uint16_t *)(sm) + (buf) * HK * ((rows) + 8))
#define H_B(sm, rows, buf) ((SHARED uint16_t *)(sm) + 2 * HK * ((rows) + 8) + (buf) * TN * LDB)
#define H_AB(rows) (4 * HK * ((rows) + 8) + 4 * TN * LDB)
#define H_BYTES(rows) ((rows) * TLD * 4 > H_AB(rows) ? (rows) * TLD * 4 : H_AB(rows))
static SHARED v4u h_sm64[H_BYTES(64) / 16], h_sm128[H_BYTES(128) / 16];
static SHARED v4i h_kt[2][HK];      /* gather_t's tables, by step parity */

/* Each thread stages rows/64 16-byte runs of A (8 rows of one k each) and
 * 8 consecutive k (8 * (tid / 64) ..) of its column. */
static ALWAYS_INLINE void h_tile_kind(const gsrc *s, const gout *o, const gtile *w, int kind,
                                      int rows, SHARED v4u *sm)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), warp = tid / 32, lda = rows + 8;
    int fr = rows / 64, wm = warp / 2 * 16 * fr, wn = warp % 2 * 32, bj = tid % TN;
    int bk = tid / TN * 8, ak = tid % HK, ai = tid / HK * 8;
    int64_t panels = (s->M + 7) / 8, p0 = w->m0 / 8 + tid / HK;
    bcol c = bcol_at(s, w->n0 + bj);
    float acc[2][2][8] = {{{0}}}, rb[8];
    v4u ra[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    int buf = 0;
    if (w->kbegin < w->kend) {
        if (tid < HK)
            ktab_fill(s, h_kt[0], tid, w->kbegin, w->kend);
        __nvvm_bar_sync(0);
#pragma unroll
        for (int r = 0; r < fr; r++)
            ra[r] = load_p8_vec(s->ah, p0 + 8 * r, panels, s->K, w->kbegin + ak, w->kend, 1, 0);
        gather_t(s, &c, h_kt[0] + bk, (int)w->kbegin + bk, (int)w->kend, 8, rb);
    }
    for (int64_t k0 = w->kbegin; k0 < w->kend; k0 += HK, buf ^= 1) {
        SHARED uint16_t *a = H_A(sm, rows, buf), *b = H_B(sm, rows, buf);
#pragma unroll
        for (int r = 0; r < fr; r++)
            *(SHARED v4u *)&a[ak * lda + ai + 64 * r] = ra[r];
        v4u hb = {h_pack(rb[0], rb[1], kind), h_pack(rb[2], rb[3], kind),
                  h_pack(rb[4], rb[5], kind), h_pack(rb[6], rb[7], kind)};
        *(SHARED v4u *)&b[bj * LDB + bk] = hb;
        if (k0 + HK < w->kend && tid < HK)
            ktab_fill(s, h_kt[buf ^ 1], tid, k0 + HK, w->kend);
        __nvvm_bar_sync(0);
        if (k0 + HK < w->kend) {
#pragma unroll
            for (int r = 0; r < fr; r++)
                ra[r] = load_p8_vec(s->ah, p0 + 8 * r, panels, s->K, k0 + HK + ak, w->kend, 1, 0);
            gather_t(s, &c, h_kt[buf ^ 1] + bk, (int)k0 + HK + bk, (int)w->kend, 8, rb);
        }
        h_step(acc, a, b, lda, fr, wm, wn, 0, kind);
        h_step(acc, a, b, lda, fr, wm, wn, 16, kind);
    }
    tc_out(s, o, w, tid, fr, wm, wn, 0, acc, sm);
}

static ALWAYS_INLINE void h_tile(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    BY_KIND(h_tile_kind, s, o, w, kind, 64, h_sm64);
}

static ALWAYS_INLINE void h_tile2(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    BY_KIND(h_tile_kind, s, o, w, kind, 128, h_sm128);
}

/* ---- entry points -------------------------------------------------------- */

/* cvdk_conv2d_t and cvdk_conv2d_p8_t (dev/cudev_gemm.c) on the tensor
 * cores, passes 1 (TF32) or 3 (3xTF32); cvdk_conv2d_p8h_t in the weights'
 * 16-bit type. */
void cvdk_conv2d_tc(const float *x, const float *w, const float *bias, float *y, CVD_CONV_GEOM,
                    CVD_CONV_BATCH, int64_t passes);
void cvdk_conv2d_p8_tc(const float *x, const float *w, const float *bias, float *y,
                       CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH, int64_t passes);
void cvdk_conv2d_p8h_tc(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                        float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH);
void cvdk_conv2d_p8h_tc2(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                         float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH);

static ALWAYS_INLINE void conv_tf(const cvd_conv *cv, int64_t passes)
{
    gsrc s;
    gout o;
    conv_prep(cv, &s, &o);
    run_tiles(&s, &o, cv->split, TM, TK, passes > 1 ? 3 : 1, tf_tile);
}

void cvdk_conv2d_tc(const float *x, const float *w, const float *bias, float *y, CVD_CONV_GEOM,
                    CVD_CONV_BATCH, int64_t passes)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w;
    conv_tf(&cv, passes);
}

void cvdk_conv2d_p8_tc(const float *x, const float *w, const float *bias, float *y,
                       CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH, int64_t passes)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w, cv.p8 = 1;
    conv_tf(&cv, passes);
}

/* The 16-bit kernels: 64 x 64 tiles, or (tall) 128 x 64 ones, whose
 * gathered columns each feed twice the rows (OC a multiple of 128). */
static ALWAYS_INLINE void conv_h(cvd_conv *cv, const uint16_t *w, int64_t wkind, int tall)
{
    cv->wh = w, cv->wkind = wkind, cv->p8 = 1;
    gsrc s;
    gout o;
    conv_prep(cv, &s, &o);
    if (tall)
        run_tiles(&s, &o, cv->split, 2 * TM, HK, (int)wkind, h_tile2);
    else
        run_tiles(&s, &o, cv->split, TM, HK, (int)wkind, h_tile);
}

void cvdk_conv2d_p8h_tc(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                        float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    conv_h(&cv, w, wkind, 0);
}

void cvdk_conv2d_p8h_tc2(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                         float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    conv_h(&cv, w, wkind, 1);
}

#endif
