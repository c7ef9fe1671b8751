/* The runtime routines of cvrt.h, called by kernels that run on the host
 * (the backend keeps a kernel on the host when it calls one): each
 * launches its device kernel (dev/cudev_rt.c) with its own arguments, all
 * of them device addresses and sizes. */
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

enum { RT_SGEMM, RT_CONV2D, RT_CONV2D_P8, RT_DWCONV2D };
static const char *const names[CVCU_RT_KERNELS] = {
    "cvdk_sgemm", "cvdk_conv2d", "cvdk_conv2d_p8", "cvdk_dwconv2d",
};

static void launch(cvcu_ctx *ctx, int which, int64_t n, void **params)
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

void cvrt_sgemm(cvcu_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c,
                int64_t ldc, int64_t accumulate, const float *bias, int64_t bias_rs,
                int64_t bias_cs, float bias_scale, const float *res, int64_t res_ld,
                int64_t act, float lo, float hi)
{
    void *p[] = {&M, &N, &K, &alpha, &a, &ars, &acs, &b, &brs, &bcs, &c, &ldc, &accumulate,
                 &bias, &bias_rs, &bias_cs, &bias_scale, &res, &res_ld, &act, &lo, &hi};
    launch(rt, RT_SGEMM, M > 0 && N > 0 ? M * N : 0, p);
}

void cvrt_conv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    void *p[] = {&x, &w, &bias, &y, &C, &H, &W, &OC, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw,
                 &OH, &OW, &res, &act, &lo, &hi};
    launch(rt, RT_CONV2D, OC * OH * OW, p);
}

void cvrt_conv2d_p8(cvcu_ctx *rt, const float *x, const float *wp, const float *bias, float *y,
                    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch)
{
    void *p[] = {&x, &wp, &bias, &y, &C, &H, &W, &OC, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw,
                 &OH, &OW, &res, &act, &lo, &hi, &scratch};
    launch(rt, RT_CONV2D_P8, OC * OH * OW, p);
}

void cvrt_dwconv2d(cvcu_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                   int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                   int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    void *p[] = {&x, &w, &bias, &y, &C, &H, &W, &KH, &KW, &sh, &sw, &pt, &pl, &dh, &dw, &OH,
                 &OW, &res, &act, &lo, &hi};
    launch(rt, RT_DWCONV2D, C * OH * OW, p);
}
