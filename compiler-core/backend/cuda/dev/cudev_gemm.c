/* Tiled device kernels for the matrix routines (cvrt_sgemm, cvrt_conv2d,
 * cvrt_conv2d_p8): one block of CVD_TILE_THREADS threads per 64 x 64 tile
 * of the output (a grid-stride loop over tiles), the K dimension in steps
 * of 16 staged through shared memory, each thread accumulating a 4 x 4
 * sub-tile in registers (plain fp32 FMA: results stay within the CPU
 * backend's fp32 tolerances).  A convolution is the implicit GEMM
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
                       gbatch bt)
{
    int64_t K = C * KH * KW;
    gsrc s = {.M = OC, .N = OH * OW, .K = K, .a = w, .b = x, .ars = K, .acs = 1, .p8 = p8,
              .conv = 1, .C = (int)C, .H = (int)H, .W = (int)W, .KH = (int)KH, .KW = (int)KW,
              .sh = (int)sh, .sw = (int)sw, .pt = (int)pt, .pl = (int)pl, .dh = (int)dh,
              .dw = (int)dw, .OW = (int)OW};
    gout o = {.c = y, .ldc = OH * OW, .alpha = 1.0f, .lo = lo, .hi = hi, .act = act,
              .bias = bias, .res = res, .conv = 1};
    tiled(&s, &o, bt);
}

void cvdk_conv2d_t(const float *x, const float *w, const float *bias, float *y, int64_t C,
                   int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                   int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                   int64_t OW, const float *res, int64_t act, float lo, float hi,
                   int64_t batch, int64_t dx, int64_t dy, int64_t split)
{
    conv_tiled(x, w, 0, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split});
}

void cvdk_conv2d_p8_t(const float *x, const float *wp, const float *bias, float *y, int64_t C,
                      int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t sh,
                      int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t OH,
                      int64_t OW, const float *res, int64_t act, float lo, float hi,
                      float *scratch, int64_t batch, int64_t dx, int64_t dy, int64_t split)
{
    (void)scratch;
    conv_tiled(x, wp, 1, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, res, act,
               lo, hi, (gbatch){batch, dx, dy, split});
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
