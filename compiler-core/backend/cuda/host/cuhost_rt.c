/* The runtime routines of cvrt.h, called by kernels that run on the host
 * (the backend keeps a kernel on the host when it calls one): each
 * launches a device kernel with its own arguments, all of them device
 * addresses and sizes: the tiled GEMM (dev/cudev_gemm.c, dev/cudev_tc.c)
 * for products and dense convolutions, whose per-image calls are merged
 * into batched launches (cuhost_batch.c), or with CUVIL_CUDA_NAIVE=1 the
 * one-thread-per-output kernels (dev/cudev_rt.c).  The -p fp16 / bf16
 * routines (cvrt_sgemm_h, cvrt_conv2d_p8h) keep the weights in 16 bits on
 * the device; dense convolutions then multiply on the tensor cores in that
 * type with fp32 sums. */
#include "compiler-core/backend/cuda/host/cuhost_internal.h"

void cvrt_sgemm(cvcu_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c,
                int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                int64_t act, float lo, float hi);
void cvrt_conv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi);
void cvrt_conv2d_p8(cvcu_ctx *rt, const float *x, const float *wp, const float *bias, float *y,
                    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch);
void cvrt_dwconv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                   int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                   int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi);
void cvrt_sgemm_h(cvcu_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t ars, int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs,
                  float *c, int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                  int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                  int64_t act, float lo, float hi);
void cvrt_conv2d_p8h(cvcu_ctx *rt, const float *x, const uint16_t *wp, int64_t wkind,
                     const float *bias, float *y, int64_t C, int64_t H, int64_t W, int64_t OC,
                     int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                     int64_t dh, int64_t dw, int64_t OH, int64_t OW, const float *res,
                     int64_t act, float lo, float hi, float *scratch);

static const char *const names[CVCU_RT_KERNELS] = {
    "cvdk_sgemm", "cvdk_conv2d", "cvdk_conv2d_p8", "cvdk_dwconv2d",
    "cvdk_sgemm_t", "cvdk_conv2d_t", "cvdk_conv2d_p8_t", "cvdk_dwconv2d_b",
    "cvdk_zero2", "cvdk_gemm_epi", "cvdk_conv_epi",
    "cvdk_conv2d_tc", "cvdk_conv2d_p8_tc",
    "cvdk_sgemm_h", "cvdk_sgemm_h_t",
    "cvdk_conv2d_p8h", "cvdk_conv2d_p8h_t", "cvdk_conv2d_p8h_tc",
    "cvdk_dwconv2d_bt", "cvdk_conv2d_p8h_tc2",
    "cvdk_nhwc_pack", "cvdk_conv2d_p8_nc", "cvdk_conv2d_p8_nc2",
    "cvdk_conv2d_p8h_nc", "cvdk_conv2d_p8h_nc2",
};
enum { TILE = 64, TILE_THREADS = CVCU_TILE_THREADS, TILE_MAX_INDEX = CVCU_TILE_MAX_INDEX };

int64_t cvcu_tile_items(int64_t M, int64_t N)
{
    return M > 0 && N > 0 ? (M + TILE - 1) / TILE * ((N + TILE - 1) / TILE) * TILE_THREADS : 0;
}

int64_t cvcu_tile_items2(int64_t M, int64_t N)
{
    return cvcu_tile_items((M + 2 * TILE - 1) / (2 * TILE) * TILE, N);
}

/* A block of the tiled kernel waits on its loads with nothing to hide them
 * unless its multiprocessor has others: aim at 4 blocks per multiprocessor,
 * each chunk at least 64 deep. */
int64_t cvcu_split_k(const cvcu_ctx *ctx, int64_t blocks, int64_t K)
{
    int64_t want = 4 * (int64_t)(ctx->max_blocks / 16);
    if (blocks <= 0 || blocks * 2 > want || K < 256)
        return 1;
    int64_t split = (want + blocks - 1) / blocks, most = K / 64;
    return split < most ? split : most;
}

/* Splits for a kernel of which per_sm blocks fit a multiprocessor: the K
 * chunks that waste least of the last wave of blocks (a partial wave runs
 * as long as a full one), each chunk's pass of atomic adds on the output
 * counted as a fiftieth of the product. */
int64_t cvcu_split_waves(const cvcu_ctx *ctx, int64_t blocks, int64_t K, int per_sm)
{
    int64_t cap = (int64_t)(ctx->max_blocks / 16) * per_sm, most = K / 64, best = 1;
    double best_cost = 1e30;
    for (int64_t s = 1; blocks > 0 && s <= 16 && (s == 1 || s <= most); s++) {
        double cost = (double)((blocks * s + cap - 1) / cap) / (double)s + 0.02 * (double)s;
        if (cost < best_cost - 1e-9)
            best_cost = cost, best = s;
    }
    return best;
}

void cvcu_launch_rt(cvcu_ctx *ctx, int which, int64_t n, void **params)
{
    if (ctx->err || n <= 0)
        return;
    const cvcu_driver *d = ctx->drv;
    if (!ctx->rt_kernels[which] &&
        cvcu_check(d, d->ModuleGetFunction(&ctx->rt_kernels[which], ctx->mod, names[which]),
                   names[which])) {
        ctx->rt_kernels[which] = NULL;
        ctx->err = CVCU_E_DRIVER;
        return;
    }
    cvcu_launch_fn(ctx, ctx->rt_kernels[which], n, params, names[which]);
}

/* A product through kernel `naive` (CUVIL_CUDA_NAIVE=1) or the tiled
 * `tiled`, whose parameters p are cvrt_sgemm's (b's two strides or b's
 * kind and stride), then split (p[22]). */
static void gemm(cvcu_ctx *rt, int naive, int tiled, int64_t M, int64_t N, int64_t K, float *c,
                 int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                 int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                 int64_t act, float lo, float hi, void **p)
{
    int64_t split = 1;
    p[22] = &split;
    cvcu_flush(rt);
    if (rt->naive) {
        cvcu_launch_rt(rt, naive, M > 0 && N > 0 ? M * N : 0, p);
        return;
    }
    int64_t items = cvcu_tile_items(M, N);
    /* Split K sums into c first: not when c holds a summand or the residual. */
    if (!accumulate && (!res || res != c))
        split = cvcu_split_k(rt, items / TILE_THREADS, K);
    if (split > 1) {
        void *z[] = {&c, &M, &N, &ldc};
        cvcu_launch_rt(rt, CVCU_RT_ZERO2, M * N, z);
    }
    cvcu_launch_rt(rt, tiled, items * split, p);
    if (split > 1) {
        void *e[] = {&c, &ldc, &M, &N, &bias, &bias_rs, &bias_cs, &bias_scale, &res, &res_ld,
                     &act, &lo, &hi};
        cvcu_launch_rt(rt, CVCU_RT_GEMM_EPI, M * N, e);
    }
}

void cvrt_sgemm(cvcu_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c,
                int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                int64_t act, float lo, float hi)
{
    void *p[] = {&M, &N, &K, &alpha, &a, &ars, &acs, &b, &brs, &bcs, &c, &ldc, &accumulate,
                 &bias, &bias_rs, &bias_cs, &bias_scale, &res, &res_ld, &act, &lo, &hi, NULL};
    gemm(rt, CVCU_RT_SGEMM, CVCU_RT_SGEMM_T, M, N, K, c, ldc, accumulate, bias, bias_rs, bias_cs,
         bias_scale, res, res_ld, act, lo, hi, p);
}

void cvrt_sgemm_h(cvcu_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t ars, int64_t acs, const uint16_t *b, int64_t bkind, int64_t bcs,
                  float *c, int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                  int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                  int64_t act, float lo, float hi)
{
    void *p[] = {&M, &N, &K, &alpha, &a, &ars, &acs, &b, &bkind, &bcs, &c, &ldc, &accumulate,
                 &bias, &bias_rs, &bias_cs, &bias_scale, &res, &res_ld, &act, &lo, &hi, NULL};
    gemm(rt, CVCU_RT_SGEMM_H, CVCU_RT_SGEMM_H_T, M, N, K, c, ldc, accumulate, bias, bias_rs,
         bias_cs, bias_scale, res, res_ld, act, lo, hi, p);
}

/* A dense convolution through the tiled kernel, when its implicit GEMM fits
 * the kernel's 32-bit index math. */
static int conv_tiled(cvcu_ctx *rt, int kernel, const float *x, const void *w, int64_t wkind,
                      const float *bias, float *y, int64_t C, int64_t H, int64_t W, int64_t OC,
                      int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                      int64_t dh, int64_t dw, int64_t OH, int64_t OW, const float *res,
                      int64_t act, float lo, float hi, float *scratch)
{
    if (rt->naive || C * KH * KW >= TILE_MAX_INDEX || OH * OW >= TILE_MAX_INDEX ||
        C * H * W >= TILE_MAX_INDEX)
        return 0;
    cvcu_conv c = {kernel, x, bias, res, w, y, scratch, wkind, C, H, W, OC, KH, KW, sh, sw, pt,
                   pl, dh, dw, OH, OW, act, lo, hi, cvcu_tile_items(OC, OH * OW)};
    cvcu_conv_submit(rt, &c);
    return 1;
}

void cvrt_conv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    if (conv_tiled(rt, CVCU_RT_CONV2D_T, x, w, 0, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh,
                   dw, OH, OW, res, act, lo, hi, NULL))
        return;
    void *p[] = {&x, &w, &bias, &y, &C, &H, &W, &OC, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw,
                 &OH, &OW, &res, &act, &lo, &hi};
    cvcu_flush(rt);
    cvcu_launch_rt(rt, CVCU_RT_CONV2D, OC * OH * OW, p);
}

void cvrt_conv2d_p8(cvcu_ctx *rt, const float *x, const float *wp, const float *bias, float *y,
                    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch)
{
    if (conv_tiled(rt, CVCU_RT_CONV2D_P8_T, x, wp, 0, bias, y, C, H, W, OC, KH, KW, sh, sw, pt, pl,
                   dh, dw, OH, OW, res, act, lo, hi, scratch))
        return;
    void *p[] = {&x, &wp, &bias, &y, &C, &H, &W, &OC, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw,
                 &OH, &OW, &res, &act, &lo, &hi, &scratch};
    cvcu_flush(rt);
    cvcu_launch_rt(rt, CVCU_RT_CONV2D_P8, OC * OH * OW, p);
}

void cvrt_conv2d_p8h(cvcu_ctx *rt, const float *x, const uint16_t *wp, int64_t wkind,
                     const float *bias, float *y, int64_t C, int64_t H, int64_t W, int64_t OC,
                     int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                     int64_t dh, int64_t dw, int64_t OH, int64_t OW, const float *res,
                     int64_t act, float lo, float hi, float *scratch)
{
    if (conv_tiled(rt, CVCU_RT_CONV2D_P8H_T, x, wp, wkind, bias, y, C, H, W, OC, KH, KW, sh, sw,
                   pt, pl, dh, dw, OH, OW, res, act, lo, hi, scratch))
        return;
    void *p[] = {&x, &wp, &wkind, &bias, &y, &C, &H, &W, &OC, &KH, &KW, &sh, &sw, &pt, &pl,
                 &dh, &dw, &OH, &OW, &res, &act, &lo, &hi, &scratch};
    cvcu_flush(rt);
    cvcu_launch_rt(rt, CVCU_RT_CONV2D_P8H, OC * OH * OW, p);
}

void cvrt_dwconv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                   int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                   int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    if (!rt->naive) {
        /* OC 0 marks the depthwise form (C outputs per pixel). */
        cvcu_conv c = {CVCU_RT_DWCONV2D_B, x, bias, res, w, y, NULL, 0, C, H, W, 0, KH, KW, sh,
                       sw, pt, pl, dh, dw, OH, OW, act, lo, hi, C * OH * OW};
        cvcu_conv_submit(rt, &c);
        return;
    }
    void *p[] = {&x, &w, &bias, &y, &C, &H, &W, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw, &OH,
                 &OW, &res, &act, &lo, &hi};
    cvcu_flush(rt);
    cvcu_launch_rt(rt, CVCU_RT_DWCONV2D, C * OH * OW, p);
}
