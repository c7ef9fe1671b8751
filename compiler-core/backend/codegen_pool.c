/* Codegen hooks: pooling (ops_pool.c).  One parallel item per (n, c) plane;
 * taps outside the image are skipped (padding never wins a max and counts
 * toward an average only with count_include_pad). */
#include <math.h>

#include "compiler-core/backend/codegen.h"

typedef struct pool_geo {
    int64_t k[2], stride[2], pad[4], dil[2];
    const cv_kexpr *H, *W, *OH, *OW;
} pool_geo;

static void read_geo(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *y, pool_geo *g)
{
    g->k[0] = g->k[1] = 1;
    g->stride[0] = g->stride[1] = g->dil[0] = g->dil[1] = 1;
    cv_op_ints(c->op, "kernel", g->k, 2);
    cv_op_ints(c->op, "stride", g->stride, 2);
    cv_op_ints(c->op, "dilation", g->dil, 2);
    cv_cg_pads2d(c->op, g->pad);
    g->H = x->dim[2], g->W = x->dim[3], g->OH = y->dim[2], g->OW = y->dim[3];
}

/* The input coordinate of tap t of output o along axis a, and whether it
 * lies inside the image. */
static const cv_kexpr *tap(cv_codegen_ctx *c, const pool_geo *g, int a, const cv_kexpr *o,
                           const cv_kexpr *t, const cv_kexpr **inside)
{
    const cv_kexpr *v = cv_k_add(c, cv_k_sub(c, cv_k_mul(c, o, cv_k_i64(c, g->stride[a])),
                                             cv_k_i64(c, g->pad[a])),
                                 cv_k_mul(c, t, cv_k_i64(c, g->dil[a])));
    *inside = cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_GE, v, cv_k_i64(c, 0)),
                       cv_k_cmp(c, CV_KOP_LT, v, a ? g->W : g->H));
    return v;
}

/* Opens the plane/oh/ow loops; returns p (the plane) and sets oh, ow. */
static const cv_kexpr *open_planes(cv_codegen_ctx *c, const cv_kten *x, const pool_geo *g,
                                   const cv_kexpr **oh, const cv_kexpr **ow)
{
    const cv_kexpr *p = cv_k_begin(c, NULL, cv_k_mul(c, x->dim[0], x->dim[1]), NULL);
    *oh = cv_k_for(c, cv_k_i64(c, 0), g->OH, 0);
    *ow = cv_k_for(c, cv_k_i64(c, 0), g->OW, CV_KFOR_INNER);
    return p;
}

static const cv_kexpr *out_index(cv_codegen_ctx *c, const pool_geo *g, const cv_kexpr *p,
                                 const cv_kexpr *oh, const cv_kexpr *ow)
{
    return cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, p, g->OH), oh), g->OW), ow);
}

static const cv_kexpr *in_index(cv_codegen_ctx *c, const pool_geo *g, const cv_kexpr *p,
                                const cv_kexpr *ih, const cv_kexpr *iw)
{
    return cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, p, g->H), ih), g->W), iw);
}

int cv_cg_max_pool2d(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    pool_geo g;
    read_geo(c, &x, &y, &g);
    const cv_kexpr *oh, *ow, *inh, *inw, *zero = cv_k_i64(c, 0);
    const cv_kexpr *p = open_planes(c, &x, &g, &oh, &ow);
    cv_kty t = cv_kty_of(x.dtype);
    const cv_kexpr *lowest;
    if (t == CV_KTY_I64) {
        int64_t lo = INT64_MIN, hi;
        cv_dtype_int_range(x.dtype, &lo, &hi);
        lowest = cv_k_i64(c, lo);
    } else {
        lowest = cv_k_const(c, t, -INFINITY);
    }
    const cv_kexpr *acc = cv_k_local(c, lowest);
    const cv_kexpr *ih = tap(c, &g, 0, oh, cv_k_for(c, zero, cv_k_i64(c, g.k[0]), 0), &inh);
    cv_k_if(c, inh);
    const cv_kexpr *iw = tap(c, &g, 1, ow, cv_k_for(c, zero, cv_k_i64(c, g.k[1]), 0), &inw);
    cv_k_if(c, inw);
    cv_k_set(c, acc, cv_k_max(c, acc, cv_k_load(c, &x, in_index(c, &g, p, ih, iw))));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_store(c, &y, out_index(c, &g, p, oh, ow), acc);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* The divisor with count_include_pad: the window clipped to the padded
 * extent (PyTorch's rule, also for ceil_mode windows). */
static const cv_kexpr *padded_extent(cv_codegen_ctx *c, const pool_geo *g, int a,
                                     const cv_kexpr *o)
{
    const cv_kexpr *start = cv_k_sub(c, cv_k_mul(c, o, cv_k_i64(c, g->stride[a])), cv_k_i64(c, g->pad[a]));
    const cv_kexpr *end = cv_k_add(c, start, cv_k_i64(c, g->k[a]));
    const cv_kexpr *pend = cv_k_add(c, a ? g->W : g->H, cv_k_i64(c, g->pad[a + 2]));
    return cv_k_sub(c, cv_k_min(c, end, pend), start);
}

int cv_cg_avg_pool2d(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    pool_geo g;
    read_geo(c, &x, &y, &g);
    g.dil[0] = g.dil[1] = 1;
    bool incl = cv_op_int(c->op, "count_include_pad", 0) != 0;
    const cv_kexpr *oh, *ow, *inh, *inw, *zero = cv_k_i64(c, 0);
    const cv_kexpr *p = open_planes(c, &x, &g, &oh, &ow);
    const cv_kexpr *acc = cv_k_local(c, cv_k_f32(c, 0)), *cnt = cv_k_local(c, zero);
    const cv_kexpr *ih = tap(c, &g, 0, oh, cv_k_for(c, zero, cv_k_i64(c, g.k[0]), 0), &inh);
    cv_k_if(c, inh);
    const cv_kexpr *iw = tap(c, &g, 1, ow, cv_k_for(c, zero, cv_k_i64(c, g.k[1]), 0), &inw);
    cv_k_if(c, inw);
    cv_k_set(c, acc, cv_k_add(c, acc, cv_k_load(c, &x, in_index(c, &g, p, ih, iw))));
    cv_k_set(c, cnt, cv_k_add(c, cnt, cv_k_i64(c, 1)));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    const cv_kexpr *n = incl ? cv_k_mul(c, padded_extent(c, &g, 0, oh), padded_extent(c, &g, 1, ow))
                             : cnt;
    cv_k_store(c, &y, out_index(c, &g, p, oh, ow),
               cv_k_bin(c, CV_KOP_DIV, acc, cv_k_cast(c, n, CV_KTY_F32)));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

int cv_cg_global_avg_pool(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    bool red[CV_MAX_RANK] = {false};
    for (int i = 2; i < x.rank; i++)
        red[i] = true;
    cv_cg_reduce(c, &x, red, &y, CV_CG_RMEAN);
    return 0;
}
