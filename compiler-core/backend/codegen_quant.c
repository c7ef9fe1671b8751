/* Codegen hook: qconv2d (ops_quant.c), the int8 convolution of the int8
 * pass.  The s8 weights are packed at compile time into the runtime's
 * layout (cvrt_qconv2d: quads of k = (kh*KW+kw)*Cp + c, [OCp/16][KUp][16],
 * with each channel's sum to remove the activation zero point; depthwise ones
 * for cvrt_qdwconv2d as [C][KH*KW] floats) and the combined scale x_scale *
 * w_scale[oc]; one runtime call per image.  The residual, activation and
 * u8 output the pass fused into the op (quantize_requant.c) go to the
 * runtime epilogue, or else a planned f32 chain does.  The same call runs
 * bf16 convolutions (CVRT_Q_BF16; weights packed by codegen_half.c). */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/runtime/cvrt.h"

typedef struct qgeo {
    int64_t C, H, W, OC, KH, KW, OH, OW, Cp, K4, OCp, KUp;
    bool dw;                    /* depthwise: cvrt_qdwconv2d */
    int64_t stride[2], pad[4], dil[2];
} qgeo;

static int geometry(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *w, const cv_kten *y,
                    qgeo *g)
{
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    cv_op_ints(c->op, "stride", st, 2);
    cv_op_ints(c->op, "dilation", dl, 2);
    cv_cg_pads2d(c->op, g->pad);
    memcpy(g->stride, st, sizeof st);
    memcpy(g->dil, dl, sizeof dl);
    g->C = x->sdim[1], g->H = x->sdim[2], g->W = x->sdim[3];
    g->OC = w->sdim[0], g->KH = w->sdim[2], g->KW = w->sdim[3];
    g->OH = y->sdim[2], g->OW = y->sdim[3];
    g->dw = cv_op_int(c->op, "groups", 1) == g->C && g->C == g->OC && w->sdim[1] == 1 && g->C > 1;
    if ((!g->dw && cv_op_int(c->op, "groups", 1) != 1) || g->C < 1 || g->H < 1 || g->W < 1 ||
        g->OH < 1 || g->OW < 1 || (!g->dw && w->sdim[1] != g->C))
        return cv_cg_error(c, CV_E_INT8_CONV_UNSUPPORTED, "qconv2d: only static ungrouped or depthwise convolutions "
                           "run in int8");
    g->Cp = CVRT_QCONV_CP(g->C);
    g->K4 = g->KH * g->KW * g->Cp / 4;
    g->OCp = (g->OC + CVRT_Q_OCB - 1) / CVRT_Q_OCB * CVRT_Q_OCB;
    g->KUp = (g->K4 + CVRT_Q_KUB - 1) / CVRT_Q_KUB * CVRT_Q_KUB;
    if (g->dw && (g->KH * g->KW > 512 ||
                  CVRT_QDW_FLOATS(g->H, g->W, g->KH, g->KW, st[0], st[1], g->pad[0], g->pad[1],
                                  dl[0], dl[1], g->OH, g->OW) > CVRT_QDW_MAX_FLOATS))
        return cv_cg_error(c, CV_E_INT8_DWCONV_TOO_LARGE, "qconv2d: the depthwise int8 kernel takes at most 512 taps "
                           "and planes of %d floats", CVRT_QDW_MAX_FLOATS);
    if (!g->dw && g->K4 * 4 > CVRT_QCONV_MAX_K)
        return cv_cg_error(c, CV_E_INT8_CONV_TOO_DEEP, "qconv2d: %lld products per output exceed the int8 kernel's "
                           "%d", (long long)(g->K4 * 4), CVRT_QCONV_MAX_K);
    return 0;
}

/* Depthwise: the s8 weights as floats [C][KH*KW], and the scales. */
static int pack_dw(cv_codegen_ctx *c, const qgeo *g, const cv_kstore *sw, const cv_kstore *ss,
                   cv_kten out[3])
{
    int64_t taps = g->KH * g->KW;
    float *wf = calloc((size_t)(g->C * taps), sizeof *wf), *scale = calloc((size_t)g->C, 4);
    if (!wf || !scale) {
        free(wf);
        free(scale);
        return cv_diag_fail(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "out of memory packing int8 "
                            "weights");
    }
    const int8_t *src = sw->data;
    float xs = (float)cv_op_float(c->op, "x_scale", 1);
    for (int64_t i = 0; i < g->C * taps; i++)
        wf[i] = src[i];
    for (int64_t oc = 0; oc < g->C; oc++)
        scale[oc] = xs * ((const float *)ss->data)[oc];
    cv_shape s1 = {.rank = 1, .d = {{.n = g->C * taps}}}, s2 = {.rank = 1, .d = {{.n = g->C}}};
    out[0] = cv_cg_const(c, CV_F32, &s1, wf);
    out[1] = out[0];
    out[2] = cv_cg_const(c, CV_F32, &s2, scale);
    free(wf);
    free(scale);
    return 0;
}

/* The packed weights, row sums and scales as constants. */
static int pack(cv_codegen_ctx *c, const qgeo *g, const cv_kten *w, const cv_kten *ws,
                cv_kten out[3])
{
    const cv_kstore *sw = &c->prog->stores[w->store], *ss = &c->prog->stores[ws->store];
    if (sw->kind != CV_KST_CONST || !sw->data || ss->kind != CV_KST_CONST || !ss->data)
        return cv_cg_error(c, CV_E_INT8_WEIGHTS_NOT_CONSTANT, "qconv2d: the weights and their scales must be constants");
    if (g->dw)
        return pack_dw(c, g, sw, ss, out);
    size_t nq = (size_t)(g->OCp * g->KUp);
    int32_t *wp = calloc(nq ? nq : 1, 4), *wsum = calloc((size_t)g->OCp, 4);
    float *scale = calloc((size_t)g->OCp, sizeof *scale);
    int rc = -1;
    if (wp && wsum && scale) {
        const int8_t *src = sw->data;
        const float *wscale = ss->data;
        float xs = (float)cv_op_float(c->op, "x_scale", 1);
        int64_t taps = g->KH * g->KW;
        for (int64_t oc = 0; oc < g->OC; oc++) {
            int8_t *dst = (int8_t *)wp;
            for (int64_t ci = 0; ci < g->C; ci++)
                for (int64_t t = 0; t < taps; t++) {
                    int8_t v = src[(oc * g->C + ci) * taps + t];
                    int64_t k = t * g->Cp + ci;
                    dst[(((oc / 16) * g->KUp + k / 4) * 16 + oc % 16) * 4 + k % 4] = v;
                    wsum[oc] += v;
                }
            scale[oc] = xs * wscale[oc];
        }
        cv_shape s1 = {.rank = 1, .d = {{.n = (int64_t)nq}}}, s2 = {.rank = 1, .d = {{.n = g->OCp}}};
        out[0] = cv_cg_const(c, CV_I32, &s1, wp);
        out[1] = cv_cg_const(c, CV_I32, &s2, wsum);
        out[2] = cv_cg_const(c, CV_F32, &s2, scale);
        rc = 0;
    } else {
        cv_diag_error(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "out of memory packing int8 weights");
    }
    free(wp);
    free(wsum);
    free(scale);
    return rc;
}

/* The epilogue: what the pass fused into the op, else a planned f32
 * chain (an f32 result only); args[0..4) as cv_cg_rt_epilogue_args. */
static const cv_kten *epilogue(cv_codegen_ctx *c, const cv_kten *y, cv_cg_rt_epi *e,
                               const cv_kexpr *yo, const cv_kexpr **args)
{
    const cv_op *op = c->op;
    if (op->n_operands > 4 || cv_op_int(op, "act", 0) || op->results[0]->type.dtype != CV_F32) {
        memset(e, 0, sizeof *e);
        e->has_res = op->n_operands > 4;
        if (e->has_res)
            e->res = cv_cg_in(c, 4);
        e->act = (int)cv_op_int(op, "act", 0);
        e->lo = cv_op_float(op, "act_lo", 0);
        e->hi = cv_op_float(op, "act_hi", 0);
        cv_cg_rt_epilogue_args(c, e, yo, args);
        return y;
    }
    bool fused = cv_cg_rt_epilogue(c, e);
    cv_cg_rt_epilogue_args(c, fused ? e : NULL, yo, args);
    return fused ? &e->out : y;
}

/* cvrt_qepi.h's flags: which of x, y, res are u8. */
static int64_t u8_flags(const cv_op *op)
{
    return (op->operands[0]->type.dtype == CV_U8 ? CVRT_Q_XU8 : 0) |
           (op->results[0]->type.dtype == CV_U8 ? CVRT_Q_YU8 : 0) |
           (op->n_operands > 4 && op->operands[4]->type.dtype == CV_U8 ? CVRT_Q_RU8 : 0);
}

/* The runtime call for one image at a time: k[0..3) the packed weights,
 * row sums and scales (int8), or k[0] the packed bf16 pairs (bf16: the
 * call's int8 parameters are inert). */
static void emit_call(cv_codegen_ctx *c, const qgeo *g, const cv_kten *x, const cv_kten k[3],
                      const cv_kten *b, const cv_kten *y, bool bf16)
{
    cv_kten scr = {0};
    if (!g->dw) {
        int64_t nscr = bf16 ? CVRT_BCONV_SCRATCH(g->C, g->H, g->W, g->KH, g->KW, g->stride[0],
                                                 g->stride[1], g->pad[0], g->pad[1], g->dil[0],
                                                 g->dil[1], g->OH, g->OW)
                            : CVRT_QCONV_SCRATCH(g->C, g->H, g->W, g->KH, g->KW, g->stride[0],
                                                 g->stride[1], g->pad[0], g->pad[1], g->dil[0],
                                                 g->dil[1], g->OH, g->OW);
        cv_shape ss = {.rank = 1, .d = {{.n = nscr}}};
        scr = cv_cg_scratch(c, CV_U8, &ss);
    }
    const cv_kexpr *zero = cv_k_i64(c, 0);
    cv_k_begin(c, bf16 ? "bconv2d" : "qconv2d", NULL, NULL);
    const cv_kexpr *n = cv_k_for(c, zero, x->dim[0], 0);
    const cv_kexpr *xo = cv_k_mul(c, n, cv_k_i64(c, g->C * g->H * g->W));
    const cv_kexpr *yo = cv_k_mul(c, n, cv_k_i64(c, g->OC * g->OH * g->OW));
    const cv_kexpr *args[32], *epi[4];
    cv_cg_rt_epi e;
    const cv_kten *dst = epilogue(c, y, &e, yo, epi);
    int a = 0;
    args[a++] = cv_k_addr(c, x, xo);
    args[a++] = cv_k_addr(c, &k[0], zero);
    if (!g->dw)
        args[a++] = bf16 ? cv_k_null(c) : cv_k_addr(c, &k[1], zero);
    args[a++] = bf16 ? cv_k_null(c) : cv_k_addr(c, &k[2], zero);
    args[a++] = b ? cv_k_addr(c, b, zero) : cv_k_null(c);
    args[a++] = cv_k_addr(c, dst, yo);
    const int64_t geo[] = {g->C, g->H, g->W, g->OC, g->KH, g->KW, g->stride[0], g->stride[1],
                           g->pad[0], g->pad[1], g->dil[0], g->dil[1], g->OH, g->OW};
    for (int i = 0; i < 14; i++)
        if (!g->dw || i != 3)   /* the depthwise routine has no OC */
            args[a++] = cv_k_i64(c, geo[i]);
    for (int i = 0; i < 4; i++)
        args[a++] = epi[i];
    args[a++] = cv_k_f32(c, bf16 ? 1 : cv_op_float(c->op, "x_scale", 1));
    args[a++] = cv_k_i64(c, bf16 ? 0 : cv_op_int(c->op, "x_zp", 0));
    if (!g->dw)
        args[a++] = cv_k_addr(c, &scr, zero);
    args[a++] = cv_k_i64(c, bf16 ? CVRT_Q_BF16 : u8_flags(c->op));
    args[a++] = cv_k_f32(c, bf16 ? 0 : cv_op_float(c->op, "y_scale", 0));
    args[a++] = cv_k_i64(c, bf16 ? 0 : cv_op_int(c->op, "y_zp", 0));
    args[a++] = cv_k_f32(c, bf16 ? 0 : cv_op_float(c->op, "res_scale", 0));
    args[a++] = cv_k_i64(c, bf16 ? 0 : cv_op_int(c->op, "res_zp", 0));
    cv_k_call(c, g->dw ? CV_KRT_QDWCONV2D : CV_KRT_QCONV2D, args, a);
    cv_k_close(c);
    cv_k_end(c);
}

int cv_cg_qconv2d(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), w = cv_cg_in(c, 1), ws = cv_cg_in(c, 2), y = cv_cg_out(c, 0), b;
    bool has_b = c->op->n_operands > 3;
    if (has_b)
        b = cv_cg_in(c, 3);
    qgeo g;
    cv_kten k[3];
    if (geometry(c, &x, &w, &y, &g) || pack(c, &g, &w, &ws, k))
        return -1;
    emit_call(c, &g, &x, k, has_b ? &b : NULL, &y, false);
    return 0;
}

int cv_cg_qconv_bf16(cv_codegen_ctx *c, const cv_kten *wp)
{
    cv_kten x = cv_cg_in(c, 0), w = cv_cg_in(c, 1), y = cv_cg_out(c, 0), b;
    bool has_b = c->op->n_operands > 2;
    if (has_b)
        b = cv_cg_in(c, 2);
    qgeo g;
    if (geometry(c, &x, &w, &y, &g))
        return -1;
    const cv_kten k[3] = {*wp, *wp, *wp};
    emit_call(c, &g, &x, k, has_b ? &b : NULL, &y, true);
    return 0;
}
