/* Codegen hooks: convolutions (ops_nn.c).  f32 conv2d with more than one
 * input channel per group runs as an implicit GEMM in the runtime (packed
 * panels read straight from the image, register-tiled FMA micro-kernel),
 * with constant weights packed for it at compile time; f32 depthwise
 * convolutions (one filter per channel) have their own runtime routine;
 * other dtypes and channel multipliers use direct loops; conv_transpose2d
 * is direct in its gather form (each output sums the taps that land on it). */
#include <stdlib.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/runtime/cvrt.h"

enum { P8 = CVRT_P8 };  /* rows per panel of the runtime's packed weights */

typedef struct conv_geo {
    int64_t stride[2], pad[4], dil[2], groups;
    const cv_kexpr *N, *C, *H, *W, *OC, *OH, *OW, *KH, *KW, *Cg, *OCg;
} conv_geo;

static void ints2(const cv_op *op, const char *name, int64_t dflt, int64_t out[2])
{
    out[0] = out[1] = dflt;
    cv_op_ints(op, name, out, 2);
}

/* [top,left,bottom,right], or [h,w] for both sides. */
void cv_cg_pads2d(const cv_op *op, int64_t out[4])
{
    int64_t v[4] = {0, 0, 0, 0};
    if (cv_op_ints(op, "pad", v, 4) == 2) {
        v[2] = v[0];
        v[3] = v[1];
    }
    for (int i = 0; i < 4; i++)
        out[i] = v[i];
}

static void geometry(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *w, const cv_kten *y,
                     bool transpose, conv_geo *g)
{
    ints2(c->op, "stride", 1, g->stride);
    ints2(c->op, "dilation", 1, g->dil);
    cv_cg_pads2d(c->op, g->pad);
    g->groups = cv_op_int(c->op, "groups", 1);
    const cv_kexpr *G = cv_k_i64(c, g->groups);
    g->N = x->dim[0], g->C = x->dim[1], g->H = x->dim[2], g->W = x->dim[3];
    g->OC = y->dim[1], g->OH = y->dim[2], g->OW = y->dim[3];
    g->KH = w->dim[2], g->KW = w->dim[3];
    g->Cg = cv_k_div(c, g->C, G);
    g->OCg = transpose ? w->dim[1] : cv_k_div(c, g->OC, G);
}

static const cv_kexpr *i64(cv_codegen_ctx *c, int64_t v) { return cv_k_i64(c, v); }

/* The weights of each group as the runtime's P8 form of its OCg x K
 * matrix (K = Cg*KH*KW): rows in panels of 8, k-major inside a panel, zero
 * rows up to a multiple of 8.  NULL when the weights are not a constant. */
static const cv_kten *packed_weights(cv_codegen_ctx *c, const cv_kten *w, const conv_geo *g,
                                     cv_kten *out)
{
    const cv_kstore *s = &c->prog->stores[w->store];
    int64_t ocg, k = w->sdim[1] * w->sdim[2] * w->sdim[3];
    if (s->kind != CV_KST_CONST || !s->data || w->dtype != CV_F32 || !cv_k_is_const(g->OCg, &ocg))
        return NULL;
    int64_t rows = (ocg + P8 - 1) / P8 * P8, n = g->groups * rows * k;
    cv_shape shape = {.rank = 1, .d = {{.n = n}}};
    float *buf = cv_kp_alloc(c->prog, (size_t)(n ? n : 1) * sizeof *buf);   /* the constant's own */
    if (!buf)
        return NULL;
    cv_cg_pack_p8(buf, s->data, sizeof *buf, g->groups, ocg, k);
    *out = cv_cg_const_own(c, CV_F32, &shape, buf);
    return out;
}

/* Room for the zero-padded, phase-split copy of one group's image through
 * which cvrt_conv2d_p8 reads its taps as plain runs (it decides whether
 * to).  One copy per image, so the scratch scales with the batch like the
 * activations and memory planning can overlap them (it plans each
 * monomial of the symbolic dims on its own). */
static const cv_kten *conv_scratch(cv_codegen_ctx *c, const conv_geo *g, cv_kten *out)
{
    int64_t cg, H, W, OH, OW, KH, KW, sh = g->stride[0], sw = g->stride[1];
    if (!cv_k_is_const(g->Cg, &cg) || !cv_k_is_const(g->H, &H) || !cv_k_is_const(g->W, &W) ||
        !cv_k_is_const(g->OH, &OH) || !cv_k_is_const(g->OW, &OW) ||
        !cv_k_is_const(g->KH, &KH) || !cv_k_is_const(g->KW, &KW) || sh * sw > 16)
        return NULL;
    if (sh == 1 && sw == 1 && g->pad[0] == 0 && g->pad[1] == 0 &&
        OH + (KH - 1) * g->dil[0] <= H && OW + (KW - 1) * g->dil[1] <= W)
        return NULL;    /* stride 1 and nothing to pad: x is read as it is */
    int64_t n = CVRT_CONV_SCRATCH(cg, KH, KW, sh, sw, g->dil[0], g->dil[1], OH, OW);
    cv_shape shape = {.rank = 2, .d = {c->op->operands[0]->type.shape.d[0], {.n = n}}};
    *out = cv_cg_scratch(c, CV_F32, &shape);
    return out;
}

/* for n, g: cvrt_conv2d(one image, one group), or cvrt_conv2d_p8 with the
 * weights packed at compile time (cvrt_conv2d_p8h when they are 16-bit). */
static void conv_gemm(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *w, const cv_kten *b,
                      const cv_kten *y, const conv_geo *g, const cv_cg_rt_epi *e)
{
    cv_kten wpk, scr;
    int64_t hkind = 0;
    const cv_kten *wp = packed_weights(c, w, g, &wpk);
    if (!wp)
        wp = cv_cg_half_packed(c, &wpk, &hkind);
    const cv_kten *scratch = wp ? conv_scratch(c, g, &scr) : NULL;
    const cv_kexpr *zero = i64(c, 0);
    cv_k_begin(c, "conv2d", NULL, NULL);
    const cv_kexpr *n = cv_k_for(c, zero, g->N, 0);
    const cv_kexpr *gi = cv_k_for(c, zero, i64(c, g->groups), 0);
    const cv_kexpr *HW = cv_k_mul(c, g->H, g->W), *OHW = cv_k_mul(c, g->OH, g->OW);
    const cv_kexpr *ksz = cv_k_mul(c, cv_k_mul(c, g->Cg, g->KH), g->KW);
    const cv_kexpr *xo = cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, g->C), cv_k_mul(c, gi, g->Cg)), HW);
    const cv_kexpr *oc0 = cv_k_mul(c, gi, g->OCg);
    const cv_kexpr *yo = cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, g->OC), oc0), OHW);
    const cv_kexpr *wo = cv_k_mul(c, oc0, ksz);
    if (wp) {
        int64_t ocg = 0;
        cv_k_is_const(g->OCg, &ocg);
        wo = cv_k_mul(c, cv_k_mul(c, gi, i64(c, (ocg + P8 - 1) / P8 * P8)), ksz);
    }
    const cv_kexpr *args[] = {
        cv_k_addr(c, x, xo), cv_k_addr(c, wp ? wp : w, wo),
        b ? cv_k_addr(c, b, oc0) : cv_k_null(c), cv_k_addr(c, y, yo),
        g->Cg, g->H, g->W, g->OCg, g->KH, g->KW, i64(c, g->stride[0]), i64(c, g->stride[1]),
        i64(c, g->pad[0]), i64(c, g->pad[1]), i64(c, g->dil[0]), i64(c, g->dil[1]), g->OH, g->OW,
        NULL, NULL, NULL, NULL,
        scratch ? cv_k_addr(c, scratch, cv_k_mul(c, n, scratch->dim[1])) : cv_k_null(c),
    };
    cv_cg_rt_epilogue_args(c, e, yo, &args[18]);
    int nargs = (int)(sizeof args / sizeof args[0]);
    if (hkind) {
        /* The 16-bit form's kind goes after the weights. */
        const cv_kexpr *hargs[sizeof args / sizeof args[0] + 1] = {args[0], args[1], i64(c, hkind)};
        for (int i = 2; i < nargs; i++)
            hargs[i + 1] = args[i];
        cv_k_call(c, CV_KRT_CONV2D_P8H, hargs, nargs + 1);
    } else {
        cv_k_call(c, wp ? CV_KRT_CONV2D_P8 : CV_KRT_CONV2D, args, wp ? nargs : nargs - 1);
    }
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
}

/* for n: cvrt_dwconv2d(one image) -- one filter per channel, f32. */
static void conv_depthwise(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *w,
                           const cv_kten *b, const cv_kten *y, const conv_geo *g,
                           const cv_cg_rt_epi *e)
{
    const cv_kexpr *zero = i64(c, 0);
    cv_k_begin(c, "dwconv2d", NULL, NULL);
    const cv_kexpr *n = cv_k_for(c, zero, g->N, 0);
    const cv_kexpr *xo = cv_k_mul(c, cv_k_mul(c, n, g->C), cv_k_mul(c, g->H, g->W));
    const cv_kexpr *yo = cv_k_mul(c, cv_k_mul(c, n, g->OC), cv_k_mul(c, g->OH, g->OW));
    const cv_kexpr *args[] = {
        cv_k_addr(c, x, xo), cv_k_addr(c, w, zero), b ? cv_k_addr(c, b, zero) : cv_k_null(c),
        cv_k_addr(c, y, yo), g->C, g->H, g->W, g->KH, g->KW, i64(c, g->stride[0]),
        i64(c, g->stride[1]), i64(c, g->pad[0]), i64(c, g->pad[1]), i64(c, g->dil[0]),
        i64(c, g->dil[1]), g->OH, g->OW, NULL, NULL, NULL, NULL,
    };
    cv_cg_rt_epilogue_args(c, e, yo, &args[17]);
    cv_k_call(c, CV_KRT_DWCONV2D, args, (int)(sizeof args / sizeof args[0]));
    cv_k_close(c);
    cv_k_end(c);
}

/* One parallel item per output plane (n, oc); taps outside the image skip.
 * Used for non-f32 data and depthwise convolutions with several filters per channel. */
static void conv_direct(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *w, const cv_kten *b,
                        const cv_kten *y, const conv_geo *g)
{
    const cv_kexpr *zero = i64(c, 0);
    const cv_kexpr *p = cv_k_begin(c, "conv2d", cv_k_mul(c, g->N, g->OC), NULL);
    const cv_kexpr *n = cv_k_div(c, p, g->OC), *oc = cv_k_rem(c, p, g->OC);
    const cv_kexpr *grp = cv_k_div(c, oc, g->OCg);
    const cv_kexpr *oh = cv_k_for(c, zero, g->OH, 0);
    const cv_kexpr *ow = cv_k_for(c, zero, g->OW, CV_KFOR_INNER);
    const cv_kexpr *acc = cv_k_local(c, b ? cv_k_load(c, b, oc) : cv_k_f32(c, 0));
    const cv_kexpr *ci = cv_k_for(c, zero, g->Cg, 0);
    const cv_kexpr *kh = cv_k_for(c, zero, g->KH, 0);
    const cv_kexpr *ih = cv_k_add(c, cv_k_sub(c, cv_k_mul(c, oh, i64(c, g->stride[0])), i64(c, g->pad[0])),
                                  cv_k_mul(c, kh, i64(c, g->dil[0])));
    const cv_kexpr *kw = cv_k_for(c, zero, g->KW, 0);
    const cv_kexpr *iw = cv_k_add(c, cv_k_sub(c, cv_k_mul(c, ow, i64(c, g->stride[1])), i64(c, g->pad[1])),
                                  cv_k_mul(c, kw, i64(c, g->dil[1])));
    const cv_kexpr *in = cv_k_bin(c, CV_KOP_AND,
        cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_GE, ih, zero), cv_k_cmp(c, CV_KOP_LT, ih, g->H)),
        cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_GE, iw, zero), cv_k_cmp(c, CV_KOP_LT, iw, g->W)));
    cv_k_if(c, in);
    const cv_kexpr *chan = cv_k_add(c, cv_k_mul(c, n, g->C), cv_k_add(c, cv_k_mul(c, grp, g->Cg), ci));
    const cv_kexpr *xv = cv_k_load(c, x, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, chan, g->H), ih), g->W), iw));
    const cv_kexpr *wi = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, oc, g->Cg), ci), g->KH), kh), g->KW), kw);
    cv_k_set(c, acc, cv_k_add(c, acc, cv_k_mul(c, xv, cv_k_load(c, w, wi))));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_cg_store_result(c, y, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, p, g->OH), oh), g->OW), ow), acc);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
}

int cv_cg_conv2d(cv_codegen_ctx *c)
{
    int bf16 = cv_cg_bf16_conv2d(c);    /* -p bf16 computed in bf16 (codegen_half.c) */
    if (bf16)
        return bf16 < 0 ? -1 : 0;
    cv_kten x = cv_cg_in(c, 0), w = cv_cg_in(c, 1), y = cv_cg_out(c, 0), b;
    bool has_b = c->op->n_operands > 2;
    if (has_b)
        b = cv_cg_in(c, 2);
    conv_geo g;
    geometry(c, &x, &w, &y, false, &g);
    int64_t cg, ocg;
    bool depthwise = cv_k_is_const(g.Cg, &cg) && cg == 1;
    bool one_filter = depthwise && cv_k_is_const(g.OCg, &ocg) && ocg == 1;
    cv_cg_rt_epi e;
    if (y.dtype == CV_F32 && (!depthwise || one_filter)) {
        bool fused = cv_cg_rt_epilogue(c, &e);
        if (depthwise)
            conv_depthwise(c, &x, &w, has_b ? &b : NULL, fused ? &e.out : &y, &g,
                           fused ? &e : NULL);
        else
            conv_gemm(c, &x, &w, has_b ? &b : NULL, fused ? &e.out : &y, &g, fused ? &e : NULL);
    } else {
        cv_cg_take_pointwise_chain(c);
        conv_direct(c, &x, &w, has_b ? &b : NULL, &y, &g);
    }
    return 0;
}

/* y[n,oc,oh,ow] = b[oc] + sum over the group's input channels ci and taps
 * (kh,kw) with oh = ih*sh - pt + kh*dh of x[n,ci,ih,iw] w[ci,oc%OCg,kh,kw]. */
int cv_cg_conv_transpose2d(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), w = cv_cg_in(c, 1), y = cv_cg_out(c, 0), b;
    bool has_b = c->op->n_operands > 2;
    if (has_b)
        b = cv_cg_in(c, 2);
    conv_geo g;
    geometry(c, &x, &w, &y, true, &g);
    const cv_kexpr *zero = i64(c, 0);
    const cv_kexpr *p = cv_k_begin(c, "convt", cv_k_mul(c, g.N, g.OC), NULL);
    const cv_kexpr *n = cv_k_div(c, p, g.OC), *oc = cv_k_rem(c, p, g.OC);
    const cv_kexpr *grp = cv_k_div(c, oc, g.OCg), *ocg = cv_k_rem(c, oc, g.OCg);
    const cv_kexpr *oh = cv_k_for(c, zero, g.OH, 0);
    const cv_kexpr *ow = cv_k_for(c, zero, g.OW, 0);
    const cv_kexpr *acc = cv_k_local(c, has_b ? cv_k_load(c, &b, oc) : cv_k_f32(c, 0));
    const cv_kexpr *ci = cv_k_for(c, zero, g.Cg, 0);
    const cv_kexpr *chan = cv_k_add(c, cv_k_mul(c, grp, g.Cg), ci);
    const cv_kexpr *kh = cv_k_for(c, zero, g.KH, 0);
    const cv_kexpr *th = cv_k_sub(c, cv_k_add(c, oh, i64(c, g.pad[0])), cv_k_mul(c, kh, i64(c, g.dil[0])));
    const cv_kexpr *kw = cv_k_for(c, zero, g.KW, 0);
    const cv_kexpr *tw = cv_k_sub(c, cv_k_add(c, ow, i64(c, g.pad[1])), cv_k_mul(c, kw, i64(c, g.dil[1])));
    const cv_kexpr *sh = i64(c, g.stride[0]), *sw = i64(c, g.stride[1]);
    /* th >= 0 first, so that the remainders below see non-negative values. */
    cv_k_if(c, cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_GE, th, zero), cv_k_cmp(c, CV_KOP_GE, tw, zero)));
    const cv_kexpr *ih = cv_k_div(c, th, sh), *iw = cv_k_div(c, tw, sw);
    const cv_kexpr *ok = cv_k_bin(c, CV_KOP_AND,
        cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_EQ, cv_k_rem(c, th, sh), zero),
                 cv_k_cmp(c, CV_KOP_EQ, cv_k_rem(c, tw, sw), zero)),
        cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_LT, ih, g.H), cv_k_cmp(c, CV_KOP_LT, iw, g.W)));
    cv_k_if(c, ok);
    const cv_kexpr *xi = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, g.C), chan), g.H), ih), g.W), iw);
    const cv_kexpr *wi = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, chan, g.OCg), ocg), g.KH), kh), g.KW), kw);
    cv_k_set(c, acc, cv_k_add(c, acc, cv_k_mul(c, cv_k_load(c, &x, xi), cv_k_load(c, &w, wi))));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_store(c, &y, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, p, g.OH), oh), g.OW), ow), acc);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}
