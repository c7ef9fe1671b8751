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
 * 4 rows in 32). */
#include "compiler-core/backend/cuda/dev/cudev_gemm.h"

#ifdef __NVPTX__

enum {
    TK = 16, HK = 32,   /* K per step: TF32, 16-bit */
    TLD = TM + 8,       /* a 32-byte aligned row, as wmma's loads want */
};

typedef unsigned v4u __attribute__((ext_vector_type(4)));

#define SM_C(base) ((SHARED float(*)[TLD])(SHARED void *)(base))
#define GEN(p) ((const int *)(const void *)(p))

/* Row i (within the tile) of its P8 panel, as this thread's vector load. */
static ALWAYS_INLINE v4u load_p8_vec(const void *base, int64_t panel, int64_t panels, int64_t K,
                                     int64_t k, int64_t kend, int64_t words_per_k, int part)
{
    v4u z = {0, 0, 0, 0};
    if (panel >= panels || k >= kend)
        return z;
    const v4u *p = (const v4u *)base;
    return p[(panel * K + k) * words_per_k + part];
}

/* The tile's output from shared memory through put(). */
static ALWAYS_INLINE void tile_out(const gsrc *s, const gout *o, const gtile *w, int tid,
                                   SHARED float (*ct)[TLD])
{
    int tx = tid % TT, ty = tid / TT;
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
                put(o, i, j, cj, ct[ty + TT * r][tx + TT * q]);
        }
    }
}

/* ---- TF32 ---------------------------------------------------------------- */

/* Shared memory, 32-bit words: A as [buffer][hi, lo][k][TLD] (column-major
 * A), then B column-major, [buffer][hi, lo][j][LDT] (a thread's 4
 * consecutive k of its column are one 16-byte store); the output tile
 * [64][TLD] fp32 reuses it. */
enum { LDT = TK + 4 };
#define TF_A(buf, hl) ((SHARED int *)tf_sm + ((buf) * 2 + (hl)) * TK * TLD)
#define TF_B(buf, hl) ((SHARED int *)tf_sm + 4 * TK * TLD + ((buf) * 2 + (hl)) * TN * LDT)
static SHARED v4u tf_sm[(4 * TK * TLD + 4 * TN * LDT) / 4];
static SHARED v4i tf_kt[2][TK];     /* gather_t's tables, by step parity */

/* v as TF32 high parts and (passes > 1) remainders, 4 at a time. */
static ALWAYS_INLINE void tf_split(const float v[4], int passes, v4u *hi, v4u *lo)
{
#pragma unroll
    for (int l = 0; l < 4; l++) {
        unsigned h = __nvvm_f2tf32_rna(v[l]);
        (*hi)[l] = h;
        (*lo)[l] = passes > 1 ? __nvvm_f2tf32_rna(v[l] - __builtin_bit_cast(float, h)) : 0;
    }
}

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

/* acc[f] += A[wm.., kb..kb+8] x B[kb..kb+8, wn + 16f..] for f < 2. */
static ALWAYS_INLINE void tf_step(float acc[2][8], int buf, int wm, int wn, int kb, int passes)
{
    int ah[4], al[4], bh[2][4], bl[2][4];
    __mma_tf32_m16n16k8_ld_a(ah, GEN(TF_A(buf, 0) + kb * TLD + wm), TLD, 1);
    if (passes > 1)
        __mma_tf32_m16n16k8_ld_a(al, GEN(TF_A(buf, 1) + kb * TLD + wm), TLD, 1);
#pragma unroll
    for (int f = 0; f < 2; f++) {
        __mma_tf32_m16n16k8_ld_b(bh[f], GEN(TF_B(buf, 0) + (wn + 16 * f) * LDT + kb), LDT, 1);
        if (passes > 1) {
            __mma_tf32_m16n16k8_ld_b(bl[f], GEN(TF_B(buf, 1) + (wn + 16 * f) * LDT + kb), LDT,
                                     1);
            __mma_tf32_m16n16k8_mma_f32(acc[f], al, bh[f], acc[f], 3, 0);
            __mma_tf32_m16n16k8_mma_f32(acc[f], ah, bl[f], acc[f], 3, 0);
        }
        __mma_tf32_m16n16k8_mma_f32(acc[f], ah, bh[f], acc[f], 3, 0);
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
    float acc[2][8] = {{0}}, ra[4], rb[4];
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
        /* The tensor cores' own fp32 sums truncate: over a deep K that
         * drifts past fp32's tolerance, so each step's sum starts at zero
         * and is added to acc with ordinary (rounded) adds. */
        float part[2][8] = {{0}};
        tf_step(part, buf, wm, wn, 0, passes);
        tf_step(part, buf, wm, wn, 8, passes);
#pragma unroll
        for (int f = 0; f < 2; f++)
#pragma unroll
            for (int v = 0; v < 8; v++)
                acc[f][v] += part[f][v];
    }
    __nvvm_bar_sync(0);
#pragma unroll
    for (int f = 0; f < 2; f++)
        __mma_m16n16k8_st_c_f32(&SM_C(tf_sm)[wm][wn + 16 * f], acc[f], TLD, 0);
    __nvvm_bar_sync(0);
    tile_out(s, o, w, tid, SM_C(tf_sm));
    __nvvm_bar_sync(0);
}

/* ---- 16-bit -------------------------------------------------------------- */

/* A tile of `rows` (64 or 128) x 64 outputs.  Shared memory: A as
 * [buffer][k][rows + 8] halves, then B column-major, [buffer][j][HK + 8]
 * (a thread's 8 consecutive k of its column are one 16-byte store); the
 * output tile [rows][TLD] fp32 reuses it.  Each warp owns rows/4 x 32
 * outputs. */
enum { LDB = HK + 8 };
#define H_A(sm, rows, buf) ((SHARED uint16_t *)(sm) + (buf) * HK * ((rows) + 8))
#define H_B(sm, rows, buf) ((SHARED uint16_t *)(sm) + 2 * HK * ((rows) + 8) + (buf) * TN * LDB)
#define H_AB(rows) (4 * HK * ((rows) + 8) + 4 * TN * LDB)
#define H_BYTES(rows) ((rows) * TLD * 4 > H_AB(rows) ? (rows) * TLD * 4 : H_AB(rows))
static SHARED v4u h_sm64[H_BYTES(64) / 16], h_sm128[H_BYTES(128) / 16];
static SHARED v4i h_kt[2][HK];      /* gather_t's tables, by step parity */

/* Two floats as one word of two 16-bit values (lo at the lower address). */
static ALWAYS_INLINE unsigned h_pack(float lo, float hi, int kind)
{
    unsigned r;
    if (kind == CVD_BF16)
        __asm__("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        __asm__("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* acc[r][f] += A[wm + 16r.., kb..kb+16] x B[kb..kb+16, wn + 16f..] (A and
 * B column-major). */
static ALWAYS_INLINE void h_step(float acc[2][2][8], SHARED uint16_t *a, SHARED uint16_t *b,
                                 int lda, int fr, int wm, int wn, int kb, int kind)
{
#pragma unroll
    for (int r = 0; r < fr; r++) {
        if (kind == CVD_BF16) {
            int fa[4], fb[4];
            __mma_bf16_m16n16k16_ld_a(fa, GEN(a + kb * lda + wm + 16 * r), lda, 1);
#pragma unroll
            for (int f = 0; f < 2; f++) {
                __mma_bf16_m16n16k16_ld_b(fb, GEN(b + (wn + 16 * f) * LDB + kb), LDB, 1);
                __mma_bf16_m16n16k16_mma_f32(acc[r][f], fa, fb, acc[r][f], 3, 0);
            }
        } else {
            int fa[8], fb[8];
            __hmma_m16n16k16_ld_a(fa, GEN(a + kb * lda + wm + 16 * r), lda, 1);
#pragma unroll
            for (int f = 0; f < 2; f++) {
                __hmma_m16n16k16_ld_b(fb, GEN(b + (wn + 16 * f) * LDB + kb), LDB, 1);
                __hmma_m16n16k16_mma_f32f32(acc[r][f], fa, fb, acc[r][f], 3, 0);
            }
        }
    }
}

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
    __nvvm_bar_sync(0);
    SHARED float (*ct)[TLD] = SM_C(sm);
#pragma unroll
    for (int r = 0; r < fr; r++)
#pragma unroll
        for (int f = 0; f < 2; f++)
            __hmma_m16n16k16_st_c_f32(&ct[wm + 16 * r][wn + 16 * f], acc[r][f], TLD, 0);
    __nvvm_bar_sync(0);
#pragma unroll
    for (int r = 0; r < fr; r++) {
        gtile part = *w;
        part.m0 += 64 * r;
        tile_out(s, o, &part, tid, ct + 64 * r);
    }
    __nvvm_bar_sync(0);
}

static ALWAYS_INLINE void h_tile(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    if (kind == CVD_BF16)
        h_tile_kind(s, o, w, CVD_BF16, 64, h_sm64);
    else
        h_tile_kind(s, o, w, CVD_F16, 64, h_sm64);
}

static ALWAYS_INLINE void h_tile2(const gsrc *s, const gout *o, const gtile *w, int kind)
{
    if (kind == CVD_BF16)
        h_tile_kind(s, o, w, CVD_BF16, 128, h_sm128);
    else
        h_tile_kind(s, o, w, CVD_F16, 128, h_sm128);
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

void cvdk_conv2d_p8h_tc(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                        float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    cv.wh = w, cv.wkind = wkind, cv.p8 = 1;
    gsrc s;
    gout o;
    conv_prep(&cv, &s, &o);
    run_tiles(&s, &o, cv.split, TM, HK, (int)wkind, h_tile);
}

/* cvdk_conv2d_p8h_tc with 128 x 64 tiles (OC a multiple of 128): each
 * gathered column feeds twice the rows. */
void cvdk_conv2d_p8h_tc2(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                         float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    cv.wh = w, cv.wkind = wkind, cv.p8 = 1;
    gsrc s;
    gout o;
    conv_prep(&cv, &s, &o);
    run_tiles(&s, &o, cv.split, 2 * TM, HK, (int)wkind, h_tile2);
}

#endif
