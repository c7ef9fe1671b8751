/* Tiled device kernels for the matrix routines (cvrt_sgemm, cvrt_conv2d,
 * cvrt_conv2d_p8): one block of CVD_TILE_THREADS threads per 64 x 64 tile
 * of the output (a grid-stride loop over tiles), the K dimension in steps
 * of 16 staged through shared memory, each thread accumulating a 4 x 4
 * sub-tile in registers (plain fp32 FMA: results stay within the CPU
 * backend's fp32 tolerances).  Dense convolutions deep and wide enough run
 * on the tensor cores instead (tiled_tc below, cvdk_conv2d*_tc).  A convolution is the implicit GEMM
 * y[OC, OH*OW] = W[OC, C*KH*KW] x im2col(x): the im2col matrix is never
 * stored, its tile is gathered straight from x.
 *
 * The convolutions take a batch of images that share the weights (the host
 * runtime merges a kernel's per-image calls, host/cuhost_batch.c): image b
 * reads x + b*dx and writes y + b*dy (and reads res + b*dy).
 *
 * The host runtime (host/cuhost_rt.c) launches these with one block per
 * tile; the one-thread-per-output kernels of cudev_rt.c remain for
 * CUVIL_CUDA_NAIVE=1 and are what tests/unit/test_cuda.c checks on the
 * CPU. */
#include "compiler-core/backend/cuda/dev/cudev.h"

#ifdef __NVPTX__

enum { TM = 64, TN = 64, TK = 16, PAD = 4, TT = 16 /* threads per tile side */ };

#define SHARED __attribute__((address_space(3)))
static SHARED float tile_a[TK][TM + PAD];
static SHARED float tile_b[TK][TN + PAD];

/* What a tiled product reads: A[i,k] (strided, or cvrt.h's P8 form) and
 * B[k,j] (strided, or the im2col of x). */
typedef struct gsrc {
    int64_t M, N, K;
    const float *a, *b;
    int64_t ars, acs, brs, bcs;
    int p8, conv;
    /* conv: the geometry, in 32-bit index math (it is cheaper on the GPU;
     * the host checks that every extent fits). */
    int C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OW;
} gsrc;

static inline float load_a(const gsrc *s, int64_t i, int64_t k, int64_t kend)
{
    if (i >= s->M || k >= kend)
        return 0.0f;
    if (s->p8)
        return s->a[((i >> 3) * s->K + k) * 8 + (i & 7)];
    return s->a[i * s->ars + k * s->acs];
}

static inline float load_b(const gsrc *s, int64_t k, int64_t j, int64_t kend)
{
    if (k >= kend || j >= s->N)
        return 0.0f;
    if (!s->conv)
        return s->b[k * s->brs + j * s->bcs];
    int kk = (int)k, jj = (int)j;
    int kw = kk % s->KW, r = kk / s->KW, kh = r % s->KH, c = r / s->KH;
    int ih = jj / s->OW * s->sh - s->pt + kh * s->dh, iw = jj % s->OW * s->sw - s->pl + kw * s->dw;
    if (ih < 0 || ih >= s->H || iw < 0 || iw >= s->W)
        return 0.0f;
    return s->b[((int64_t)c * s->H + ih) * s->W + iw];
}

/* The finished sub-tile: out(i, j, v) for each element inside M x N. */
typedef struct gout {
    float *c;
    int64_t ldc;
    float alpha, bias_scale, lo, hi;
    int64_t accumulate, bias_rs, bias_cs, res_ld, act;
    const float *bias, *res;
    int conv;       /* bias by row (output channel), res with c's layout */
    int partial;    /* split K: add alpha * acc to c atomically, no epilogue */
} gout;

static inline void put(const gout *o, int64_t i, int64_t j, float acc)
{
    int64_t at = i * o->ldc + j;
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

/* Stages the 64 x 16 tile of A and the 16 x 64 tile of B at (m0, n0, k0),
 * each thread loading 4 of each, the warp walking the contiguous side. */
static inline void stage(const gsrc *s, int tid, int64_t m0, int64_t n0, int64_t k0,
                         int64_t kend)
{
    int a_k_fast = s->p8 == 0 && s->acs == 1;
    int b_j_fast = s->conv || s->bcs == 1;
    for (int l = 0; l < 4; l++) {
        int e = tid + l * TT * TT;
        int ai = a_k_fast ? e / TK : e % TM, ak = a_k_fast ? e % TK : e / TM;
        tile_a[ak][ai] = load_a(s, m0 + ai, k0 + ak, kend);
        int bj = b_j_fast ? e % TN : e / TK, bk = b_j_fast ? e / TN : e % TK;
        tile_b[bk][bj] = load_b(s, k0 + bk, n0 + bj, kend);
    }
}

/* n products of one A: the b-th reads B at b * db and writes C (and reads
 * the residual) at b * dc elements further.  split > 1: K in that many
 * chunks, each block one chunk of one tile, adding its partial sums to C
 * atomically (C zeroed before, the epilogue after: cvdk_zero2,
 * cvdk_*_epi). */
typedef struct gbatch {
    int64_t n, db, dc, split;
} gbatch;

/* Thread (tx, ty) owns rows m0 + ty + 16r and columns n0 + tx + 16c
 * (r, c < 4): a warp's stores cover 16 consecutive columns. */
static void tiled(const gsrc *s0, const gout *o0, gbatch bt)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), tx = tid % TT, ty = tid / TT;
    int64_t tiles_m = (s0->M + TM - 1) / TM, tiles_n = (s0->N + TN - 1) / TN;
    int64_t tiles = tiles_m * tiles_n, split = bt.split > 1 ? bt.split : 1;
    int64_t kchunk = (s0->K + split * TK - 1) / (split * TK) * TK;
    for (int64_t bt_t = __nvvm_read_ptx_sreg_ctaid_x(); bt_t < tiles * bt.n * split;
         bt_t += __nvvm_read_ptx_sreg_nctaid_x()) {
        int64_t kc = bt_t % split, rest = bt_t / split, b = rest / tiles, t = rest % tiles;
        int64_t kbegin = kc * kchunk, kend = kbegin + kchunk < s0->K ? kbegin + kchunk : s0->K;
        gsrc sb = *s0;
        gout ob = *o0;
        ob.partial = split > 1;
        sb.b += b * bt.db;
        ob.c += b * bt.dc;
        if (ob.res)
            ob.res += b * bt.dc;
        const gsrc *s = &sb;
        const gout *o = &ob;
        int64_t m0 = t / tiles_n * TM, n0 = t % tiles_n * TN;
        float acc[4][4] = {{0}};
        for (int64_t k0 = kbegin; k0 < kend; k0 += TK) {
            stage(s, tid, m0, n0, k0, kend);
            __nvvm_bar_sync(0);
#pragma unroll
            for (int kk = 0; kk < TK; kk++) {
                float ra[4], rb[4];
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    ra[r] = tile_a[kk][ty + TT * r];
                    rb[r] = tile_b[kk][tx + TT * r];
                }
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        acc[r][c] += ra[r] * rb[c];
            }
            __nvvm_bar_sync(0);
        }
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                int64_t i = m0 + ty + TT * r, j = n0 + tx + TT * c;
                if (i < s->M && j < s->N)
                    put(o, i, j, acc[r][c]);
            }
    }
}

/* The tensor-core variant of tiled() for convolutions: the same tiles and
 * epilogue, the 64 x 64 x 16 step done by the 8 warps with TF32 wmma
 * (m16n16k8, fp32 accumulate), each warp a 16 x 32 strip.  passes 3 splits
 * each operand into a TF32 high part and a TF32 remainder and adds
 * hi*hi + hi*lo + lo*hi ("3xTF32"): about fp32's accuracy, within the fp32
 * tolerances; passes 1 is plain TF32 (PyTorch's default for convolutions).
 * The tensor cores leave the gather as the cost, so it is pipelined: the
 * next step's operands are loaded into registers while the warps multiply
 * the current one (two shared buffers), each thread keeps one im2col column
 * (its output pixel decoded once per tile) and walks its k values
 * incrementally, and packed (P8) weights are read 8 x 16 contiguous. */
enum { TLD = TM + 8 /* a 32-byte aligned row, as wmma's loads want */ };
/* [A, B][buffer][TF32 hi, lo][k][i or j]; the output tile reuses it. */
static SHARED int tc_sm[2][2][2][TK][TLD] __attribute__((aligned(128)));

/* What one thread gathers per step: 4 elements of A and 4 of B. */
typedef struct tc_thr {
    int ak[4], ai[4];           /* A: k and i within the tile */
    int bk0, bj;                /* B: k = bk0 + 4l, the column bj */
    int ih0, iw0, jok;          /* the column's output pixel, inside N */
} tc_thr;

static inline void tc_put(int ab, int buf, int k, int x, float v, int passes)
{
    int hi = (int)__nvvm_f2tf32_rna(v);
    tc_sm[ab][buf][0][k][x] = hi;
    if (passes > 1)
        tc_sm[ab][buf][1][k][x] = (int)__nvvm_f2tf32_rna(v - __builtin_bit_cast(float, hi));
}

static inline float tc_load_a(const gsrc *s, int64_t i, int64_t k, int64_t kend)
{
    if (i >= s->M || k >= kend)
        return 0.0f;
    if (s->p8)
        return s->a[((i >> 3) * s->K + k) * 8 + (i & 7)];
    return s->a[i * s->ars + k];
}

static inline void tc_load(const gsrc *s, const tc_thr *th, int64_t m0, int64_t k0, int64_t kend,
                           float ra[4], float rb[4])
{
#pragma unroll
    for (int l = 0; l < 4; l++)
        ra[l] = tc_load_a(s, m0 + th->ai[l], k0 + th->ak[l], kend);
    int k = (int)k0 + th->bk0;
    int kw = k % s->KW, r = k / s->KW, kh = r % s->KH, c = r / s->KH;
#pragma unroll
    for (int l = 0; l < 4; l++) {
        int ih = th->ih0 + kh * s->dh, iw = th->iw0 + kw * s->dw;
        rb[l] = th->jok && k < kend && ih >= 0 && ih < s->H && iw >= 0 && iw < s->W
                    ? s->b[((int64_t)c * s->H + ih) * s->W + iw]
                    : 0.0f;
        k += 4;
        for (kw += 4; kw >= s->KW; kw -= s->KW)
            if (++kh == s->KH)
                kh = 0, c++;
    }
}

#define TC_GEN(p) ((const int *)(p))

/* acc[f] += A[wm.., k0..k0+8] x B[k0..k0+8, wn + 16f..] for f < 2. */
static inline void tc_step(float acc[2][8], int buf, int wm, int wn, int k0, int passes)
{
    int ah[4], al[4], bh[2][4], bl[2][4];
    __mma_tf32_m16n16k8_ld_a(ah, TC_GEN(&tc_sm[0][buf][0][k0][wm]), TLD, 1);
    if (passes > 1)
        __mma_tf32_m16n16k8_ld_a(al, TC_GEN(&tc_sm[0][buf][1][k0][wm]), TLD, 1);
#pragma unroll
    for (int f = 0; f < 2; f++) {
        __mma_tf32_m16n16k8_ld_b(bh[f], TC_GEN(&tc_sm[1][buf][0][k0][wn + 16 * f]), TLD, 0);
        if (passes > 1) {
            __mma_tf32_m16n16k8_ld_b(bl[f], TC_GEN(&tc_sm[1][buf][1][k0][wn + 16 * f]), TLD, 0);
            __mma_tf32_m16n16k8_mma_f32(acc[f], al, bh[f], acc[f], 2, 0);
            __mma_tf32_m16n16k8_mma_f32(acc[f], ah, bl[f], acc[f], 2, 0);
        }
        __mma_tf32_m16n16k8_mma_f32(acc[f], ah, bh[f], acc[f], 2, 0);
    }
}

/* This thread's share of the gather: P8 weights as 8 rows x 16 k
 * contiguous runs, plain ones along k; one im2col column. */
static tc_thr tc_thread(const gsrc *s, int tid)
{
    tc_thr th;
    for (int l = 0; l < 4; l++) {
        int e = tid + l * TT * TT;
        th.ai[l] = s->p8 ? (e >> 7) * 8 + (e & 7) : e / TK;
        th.ak[l] = s->p8 ? (e >> 3) & (TK - 1) : e % TK;
    }
    th.bj = tid % TN;
    th.bk0 = tid / TN;
    return th;
}

static void tiled_tc(const gsrc *s0, const gout *o0, gbatch bt, int passes)
{
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), tx = tid % TT, ty = tid / TT, warp = tid / 32;
    int wm = warp / 2 * 16, wn = warp % 2 * 32;
    int64_t tiles_m = (s0->M + TM - 1) / TM, tiles_n = (s0->N + TN - 1) / TN;
    int64_t tiles = tiles_m * tiles_n, split = bt.split > 1 ? bt.split : 1;
    int64_t kchunk = (s0->K + split * TK - 1) / (split * TK) * TK;
    float (*ct)[TLD] = (float (*)[TLD])(float *)&tc_sm[0][0][0][0][0];
    tc_thr th = tc_thread(s0, tid);
    for (int64_t bt_t = __nvvm_read_ptx_sreg_ctaid_x(); bt_t < tiles * bt.n * split;
         bt_t += __nvvm_read_ptx_sreg_nctaid_x()) {
        int64_t kc = bt_t % split, rest = bt_t / split, b = rest / tiles, t = rest % tiles;
        int64_t kbegin = kc * kchunk, kend = kbegin + kchunk < s0->K ? kbegin + kchunk : s0->K;
        gsrc sb = *s0;
        gout ob = *o0;
        ob.partial = split > 1;
        sb.b += b * bt.db;
        ob.c += b * bt.dc;
        if (ob.res)
            ob.res += b * bt.dc;
        int64_t m0 = t / tiles_n * TM, n0 = t % tiles_n * TN;
        int j = (int)(n0 + th.bj);
        th.jok = j < sb.N;
        th.ih0 = j / sb.OW * sb.sh - sb.pt;
        th.iw0 = j % sb.OW * sb.sw - sb.pl;
        float acc[2][8] = {{0}}, ra[4], rb[4];
        int buf = 0;
        if (kbegin < kend)
            tc_load(&sb, &th, m0, kbegin, kend, ra, rb);
        for (int64_t k0 = kbegin; k0 < kend; k0 += TK, buf ^= 1) {
#pragma unroll
            for (int l = 0; l < 4; l++) {
                tc_put(0, buf, th.ak[l], th.ai[l], ra[l], passes);
                tc_put(1, buf, th.bk0 + 4 * l, th.bj, rb[l], passes);
            }
            __nvvm_bar_sync(0);
            if (k0 + TK < kend)
                tc_load(&sb, &th, m0, k0 + TK, kend, ra, rb);
            /* The tensor cores' own fp32 sums truncate: over a deep K that
             * drifts past fp32's tolerance, so each step's sum starts at
             * zero and is added to acc with ordinary (rounded) adds. */
            float part[2][8] = {{0}};
            tc_step(part, buf, wm, wn, 0, passes);
            tc_step(part, buf, wm, wn, 8, passes);
#pragma unroll
            for (int f = 0; f < 2; f++)
#pragma unroll
                for (int v = 0; v < 8; v++)
                    acc[f][v] += part[f][v];
        }
        __nvvm_bar_sync(0);
#pragma unroll
        for (int f = 0; f < 2; f++)
            __mma_m16n16k8_st_c_f32(&ct[wm][wn + 16 * f], acc[f], TLD, 0);
        __nvvm_bar_sync(0);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                int64_t i = m0 + ty + TT * r, jj = n0 + tx + TT * c;
                if (i < sb.M && jj < sb.N)
                    put(&ob, i, jj, ct[ty + TT * r][tx + TT * c]);
            }
        __nvvm_bar_sync(0);
    }
}

void cvdk_sgemm_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                  int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                  float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                  float hi, int64_t split);
void cvdk_conv2d_t(const float *x, const float *w, const float *bias, float *y, int64_t C,
                   int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                   int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                   int64_t OW, const float *res, int64_t act, float lo, float hi,
                   int64_t batch, int64_t dx, int64_t dy, int64_t split);
void cvdk_conv2d_p8_t(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                      int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                      int64_t OW, const float *res, int64_t act, float lo, float hi,
                      float *scratch, int64_t batch, int64_t dx, int64_t dy, int64_t split);

void cvdk_sgemm_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                  int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                  float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                  float hi, int64_t split)
{
    gsrc s = {.M = M, .N = N, .K = K, .a = a, .b = b, .ars = ars, .acs = acs, .brs = brs,
              .bcs = bcs};
    gout o = {.c = c, .ldc = ldc, .alpha = alpha, .bias_scale = bias_scale, .lo = lo, .hi = hi,
              .accumulate = accumulate, .bias_rs = bias_rs, .bias_cs = bias_cs,
              .res_ld = res_ld, .act = act, .bias = bias, .res = res};
    tiled(&s, &o, (gbatch){1, 0, 0, split});
}

static void conv_tiled(const float *x, const float *w, int p8, const float *bias, float *y,
                       int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                       int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                       int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                       gbatch bt, int passes)
{
    int64_t K = C * KH * KW;
    gsrc s = {.M = OC, .N = OH * OW, .K = K, .a = w, .b = x, .ars = K, .acs = 1, .p8 = p8,
              .conv = 1, .C = (int)C, .H = (int)H, .W = (int)W, .KH = (int)KH, .KW = (int)KW,
              .sh = (int)sh, .sw = (int)sw, .pt = (int)pt, .pl = (int)pl, .dh = (int)dh,
              .dw = (int)dw, .OW = (int)OW};
    gout o = {.c = y, .ldc = OH * OW, .alpha = 1.0f, .lo = lo, .hi = hi, .act = act,
              .bias = bias, .res = res, .conv = 1};
    if (passes > 0)
        tiled_tc(&s, &o, bt, passes);
    else
        tiled(&s, &o, bt);
}

void cvdk_conv2d_t(const float *x, const float *w, const float *bias, float *y, int64_t C,
                   int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                   int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                   int64_t OW, const float *res, int64_t act, float lo, float hi,
                   int64_t batch, int64_t dx, int64_t dy, int64_t split)
{
    conv_tiled(x, w, 0, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split}, 0);
}

void cvdk_conv2d_p8_t(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                      int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                      int64_t OW, const float *res, int64_t act, float lo, float hi,
                      float *scratch, int64_t batch, int64_t dx, int64_t dy, int64_t split)
{
    (void)scratch;
    conv_tiled(x, wp, 1, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split}, 0);
}

/* cvdk_conv2d_t and cvdk_conv2d_p8_t on the tensor cores (tiled_tc), with
 * passes 1 (TF32) or 3 (3xTF32). */
void cvdk_conv2d_tc(const float *x, const float *w, const float *bias, float *y, int64_t C,
                    int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                    int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                    int64_t OW, const float *res, int64_t act, float lo, float hi,
                    int64_t batch, int64_t dx, int64_t dy, int64_t split, int64_t passes);
void cvdk_conv2d_p8_tc(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                       int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                       int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                       int64_t OW, const float *res, int64_t act, float lo, float hi,
                       float *scratch, int64_t batch, int64_t dx, int64_t dy, int64_t split,
                       int64_t passes);

void cvdk_conv2d_tc(const float *x, const float *w, const float *bias, float *y, int64_t C,
                    int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                    int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                    int64_t OW, const float *res, int64_t act, float lo, float hi,
                    int64_t batch, int64_t dx, int64_t dy, int64_t split, int64_t passes)
{
    conv_tiled(x, w, 0, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split}, passes > 1 ? 3 : 1);
}

void cvdk_conv2d_p8_tc(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                       int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                       int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                       int64_t OW, const float *res, int64_t act, float lo, float hi,
                       float *scratch, int64_t batch, int64_t dx, int64_t dy, int64_t split,
                       int64_t passes)
{
    (void)scratch;
    conv_tiled(x, wp, 1, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split}, passes > 1 ? 3 : 1);
}

/* Split K: c[i*ldc + j] = 0 for i < M, j < N before the partial sums... */
void cvdk_zero2(float *c, int64_t M, int64_t N, int64_t ldc);
/* ...and the epilogue after them: the bias, then cvd_epilogue. */
void cvdk_gemm_epi(float *c, int64_t ldc, int64_t M, int64_t N, const float *bias,
                   int64_t bias_rs, int64_t bias_cs, float bias_scale, const float *res,
                   int64_t res_ld, int64_t act, float lo, float hi);
void cvdk_conv_epi(float *y, const float *bias, const float *res, int64_t OC, int64_t OHW,
                   int64_t act, float lo, float hi, int64_t batch, int64_t dy);

void cvdk_zero2(float *c, int64_t M, int64_t N, int64_t ldc)
{
    for (int64_t t = cvd_gid(); t < M * N; t += cvd_gstride())
        c[t / N * ldc + t % N] = 0.0f;
}

void cvdk_gemm_epi(float *c, int64_t ldc, int64_t M, int64_t N, const float *bias,
                   int64_t bias_rs, int64_t bias_cs, float bias_scale, const float *res,
                   int64_t res_ld, int64_t act, float lo, float hi)
{
    for (int64_t t = cvd_gid(); t < M * N; t += cvd_gstride()) {
        int64_t i = t / N, j = t % N;
        float v = c[i * ldc + j];
        if (bias)
            v += bias_scale * bias[i * bias_rs + j * bias_cs];
        c[i * ldc + j] = cvd_epilogue(v, res, i * res_ld + j, act, lo, hi);
    }
}

void cvdk_conv_epi(float *y, const float *bias, const float *res, int64_t OC, int64_t OHW,
                   int64_t act, float lo, float hi, int64_t batch, int64_t dy)
{
    int64_t per = OC * OHW;
    for (int64_t t = cvd_gid(); t < per * batch; t += cvd_gstride()) {
        int64_t b = t / per, i = t % per;
        float v = y[b * dy + i] + (bias ? bias[i / OHW] : 0.0f);
        y[b * dy + i] = cvd_epilogue(v, res ? res + b * dy : res, i, act, lo, hi);
    }
}

#endif
