/* Tiled device kernels for the matrix routines (cvrt_sgemm, cvrt_sgemm_h,
 * cvrt_conv2d, cvrt_conv2d_p8, cvrt_conv2d_p8h): one block of 256 threads
 * per 64 x 64 tile of the output (dev/cudev_gemm.h hands the tiles out),
 * the K dimension in steps of 16 staged through shared memory, each thread
 * accumulating a 4 x 4 sub-tile in registers (plain fp32 FMA: results stay
 * within the CPU backend's fp32 tolerances; 16-bit weights are widened as
 * they are staged).  Dense convolutions deep and wide enough run on the
 * tensor cores instead (dev/cudev_tc.c).
 *
 * The convolutions take a batch of images that share the weights (the host
 * runtime merges a kernel's per-image calls, host/cuhost_batch.c): image b
 * reads x + b*dx and writes y + b*dy (and reads res + b*dy).
 *
 * The host runtime (host/cuhost_rt.c) launches these with one block per
 * tile; the one-thread-per-output kernels of cudev_rt.c remain for
 * CUVIL_CUDA_NAIVE=1 and are what tests/unit/compiler-core/backend/test_cuda.c checks on the
 * CPU. */
#include "compiler-core/backend/cuda/dev/cudev_gemm.h"

#ifdef __NVPTX__

enum { TK = 16, PAD = 4 };

static SHARED float tile_a[TK][TM + PAD];
static SHARED float tile_b[TK][TN + PAD];
static SHARED v4i fma_kt[TK];

static inline float load_a(const gsrc *s, int64_t i, int64_t k, int64_t kend)
{
    if (i >= s->M || k >= kend)
        return 0.0f;
    int64_t at = s->p8 ? ((i >> 3) * s->K + k) * 8 + (i & 7) : i * s->ars + k * s->acs;
    return s->ah ? cvd_widen(s->ah[at], s->akind) : s->a[at];
}

static inline float load_b(const gsrc *s, int64_t k, int64_t j, int64_t kend)
{
    if (k >= kend || j >= s->N)
        return 0.0f;
    int64_t at = k * s->brs + j * s->bcs;
    return s->bh ? cvd_widen(s->bh[at], s->bkind) : s->b[at];
}

/* Stages the 64 x 16 tile of A and the 16 x 64 tile of B at (m0, n0, k0),
 * each thread loading 4 of each, the warp walking the contiguous side (a
 * convolution's thread: 4 consecutive k of its im2col column c). */
static inline void stage(const gsrc *s, const bcol *c, int tid, int64_t m0, int64_t n0,
                         int64_t k0, int64_t kend)
{
    int a_k_fast = s->p8 == 0 && s->acs == 1;
    int b_j_fast = s->bcs == 1;
    float rb[4];
    if (s->conv) {
        /* This step's gather table (gather_t), then the gather. */
        if (tid < TK)
            ktab_fill(s, fma_kt, tid, k0, kend);
        __nvvm_bar_sync(0);
        gather_t(s, c, fma_kt + tid / TN * 4, (int)k0 + tid / TN * 4, (int)kend, 4, rb);
    }
    for (int l = 0; l < 4; l++) {
        int e = tid + l * TT * TT;
        int ai = a_k_fast ? e / TK : e % TM, ak = a_k_fast ? e % TK : e / TM;
        tile_a[ak][ai] = load_a(s, m0 + ai, k0 + ak, kend);
        if (s->conv) {
            tile_b[tid / TN * 4 + l][tid % TN] = rb[l];
            continue;
        }
        int bj = b_j_fast ? e % TN : e / TK, bk = b_j_fast ? e / TN : e % TK;
        tile_b[bk][bj] = load_b(s, k0 + bk, n0 + bj, kend);
    }
}

/* Thread (tx, ty) owns the outputs of put_tile. */
static ALWAYS_INLINE void fma_tile(const gsrc *s, const gout *o, const gtile *w, int mode)
{
    (void)mode;
    int tid = (int)__nvvm_read_ptx_sreg_tid_x(), tx = tid % TT, ty = tid / TT;
    bcol c = s->conv ? bcol_at(s, w->n0 + tid % TN) : (bcol){0};
    float acc[4][4] = {{0}};
    for (int64_t k0 = w->kbegin; k0 < w->kend; k0 += TK) {
        stage(s, &c, tid, w->m0, w->n0, k0, w->kend);
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
                for (int q = 0; q < 4; q++)
                    acc[r][q] += ra[r] * rb[q];
        }
        __nvvm_bar_sync(0);
    }
    put_tile(s, o, w, tx, ty, acc);
}

void cvdk_sgemm_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                  int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                  float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                  float hi, int64_t split);
void cvdk_sgemm_h_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                    int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs, float *c,
                    int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                    int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                    int64_t act, float lo, float hi, int64_t split);

static ALWAYS_INLINE void gemm(const gsrc *s, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                 int64_t ars, int64_t acs, float *c, int64_t ldc, int64_t accumulate,
                 const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                 const float *res, int64_t res_ld, int64_t act, float lo, float hi, int64_t split)
{
    gsrc sb = *s;
    sb.M = M, sb.N = N, sb.K = K, sb.a = a, sb.ars = ars, sb.acs = acs;
    gout o = {.c = c, .ldc = ldc, .alpha = alpha, .bias_scale = bias_scale, .lo = lo, .hi = hi,
              .accumulate = accumulate, .bias_rs = bias_rs, .bias_cs = bias_cs,
              .res_ld = res_ld, .act = act, .bias = bias, .res = res};
    run_tiles(&sb, &o, split, TM, TK, 0, fma_tile);
}

void cvdk_sgemm_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                  int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc,
                  int64_t accumulate, const float *bias, int64_t bias_rs, int64_t bias_cs,
                  float bias_scale, const float *res, int64_t res_ld, int64_t act, float lo,
                  float hi, int64_t split)
{
    gsrc s = {.b = b, .brs = brs, .bcs = bcs};
    gemm(&s, M, N, K, alpha, a, ars, acs, c, ldc, accumulate, bias, bias_rs, bias_cs, bias_scale,
         res, res_ld, act, lo, hi, split);
}

/* cvrt_sgemm_h: B[k,j] = b[k + j*bcs], 16 bits of kind bkind. */
void cvdk_sgemm_h_t(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
                    int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs, float *c,
                    int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                    int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                    int64_t act, float lo, float hi, int64_t split)
{
    gsrc s = {.bh = b, .bkind = (int)bkind, .brs = 1, .bcs = bcs};
    gemm(&s, M, N, K, alpha, a, ars, acs, c, ldc, accumulate, bias, bias_rs, bias_cs, bias_scale,
         res, res_ld, act, lo, hi, split);
}

/* The FMA convolutions: plain (w[oc*K + k]), P8, and P8 in 16 bits. */
static ALWAYS_INLINE void conv_fma(const cvd_conv *cv)
{
    gsrc s;
    gout o;
    conv_prep(cv, &s, &o);
    run_tiles(&s, &o, cv->split, TM, TK, 0, fma_tile);
}

void cvdk_conv2d_t(const float *x, const float *w, const float *bias, float *y, CVD_CONV_GEOM,
                   CVD_CONV_BATCH);
void cvdk_conv2d_p8_t(const float *x, const float *w, const float *bias, float *y,
                      CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH);
void cvdk_conv2d_p8h_t(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                       float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH);

void cvdk_conv2d_t(const float *x, const float *w, const float *bias, float *y, CVD_CONV_GEOM,
                   CVD_CONV_BATCH)
{
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w;
    conv_fma(&cv);
}

void cvdk_conv2d_p8_t(const float *x, const float *w, const float *bias, float *y,
                      CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    cv.w = w, cv.p8 = 1;
    conv_fma(&cv);
}

void cvdk_conv2d_p8h_t(const float *x, const uint16_t *w, int64_t wkind, const float *bias,
                       float *y, CVD_CONV_GEOM, float *scratch, CVD_CONV_BATCH)
{
    (void)scratch;
    cvd_conv cv = CVD_CONV_INIT;
    cv.wh = w, cv.wkind = wkind, cv.p8 = 1;
    conv_fma(&cv);
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
    for (int64_t t = cvd_gid(), j; t < M * N; t += cvd_gstride())
        c[cvd_divmod(t, N, &j) * ldc + j] = 0.0f;
}

void cvdk_gemm_epi(float *c, int64_t ldc, int64_t M, int64_t N, const float *bias,
                   int64_t bias_rs, int64_t bias_cs, float bias_scale, const float *res,
                   int64_t res_ld, int64_t act, float lo, float hi)
{
    for (int64_t t = cvd_gid(), j; t < M * N; t += cvd_gstride()) {
        int64_t i = cvd_divmod(t, N, &j);
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
    for (int64_t t = cvd_gid(), i, r; t < per * batch; t += cvd_gstride()) {
        int64_t b = cvd_divmod(t, per, &i);
        float v = y[b * dy + i] + (bias ? bias[cvd_divmod(i, OHW, &r)] : 0.0f);
        y[b * dy + i] = cvd_epilogue(v, res ? res + b * dy : res, i, act, lo, hi);
    }
}

#endif
