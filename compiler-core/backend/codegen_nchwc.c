/* Code generation in the blocked (NCHWc) layout that passes/layout.c plans:
 * a blocked tensor of logical shape [N,C,H,W] lives in its own arena
 * storage of shape [N, ceil(C/blk), H, W, blk] (channels past C zero), the
 * same logical tensor as the interpreter's.  A value is stored in the
 * layout its producer writes; a consumer wanting the other layout gets a
 * reorder kernel, made at the first such consumer and shared by the later
 * ones.  The plain storage of a value stays p->value_store (what every
 * other hook reads), the blocked one nc->bstore. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/runtime/cvrt.h"

static const cv_kexpr *i64(cv_codegen_ctx *c, int64_t v) { return cv_k_i64(c, v); }

/* The blocked type of v: [N, Cb, H, W, blk]. */
static cv_type btype(const cv_nchwc *nc, const cv_value *v)
{
    const cv_shape *s = &v->type.shape;
    cv_type t = {CV_F32, {.rank = 5}};
    t.shape.d[0] = s->d[0];
    t.shape.d[1].n = (s->d[1].n + nc->blk - 1) / nc->blk;
    t.shape.d[2] = s->d[2];
    t.shape.d[3] = s->d[3];
    t.shape.d[4].n = nc->blk;
    return t;
}

static cv_kten blocked_tensor(cv_codegen_ctx *c, cv_nchwc *nc, const cv_value *v)
{
    cv_type t = btype(nc, v);
    if (nc->bstore[v->id] < 0) {
        cv_kstore s = {.kind = CV_KST_ARENA, .dtype = CV_F32, .shape = t.shape};
        nc->bstore[v->id] = cv_kp_add_store(c->prog, &s);
        if (nc->bstore[v->id] < 0) {
            cv_kp_bug(c, "out of memory");
            nc->bstore[v->id] = 0;
        }
    }
    return cv_cg_tensor(c, nc->bstore[v->id], &t);
}

/* v in the blocked layout, converted from its plain storage when it has
 * none yet: y[n,cb,hw,ci] = x[n, cb*blk+ci, hw] (0 past C). */
static cv_kten need_blocked(cv_codegen_ctx *c, cv_nchwc *nc, const cv_value *v)
{
    if (nc->bstore[v->id] >= 0)
        return blocked_tensor(c, nc, v);
    cv_kten x = cv_cg_value(c, v), y = blocked_tensor(c, nc, v);
    const cv_kexpr *zero = i64(c, 0), *B = i64(c, nc->blk), *C = x.dim[1];
    const cv_kexpr *HW = cv_k_mul(c, x.dim[2], x.dim[3]), *Cb = y.dim[1];
    const cv_kexpr *p = cv_k_begin(c, "to_nchwc", cv_k_mul(c, x.dim[0], Cb), NULL);
    const cv_kexpr *n = cv_k_div(c, p, Cb), *cb = cv_k_rem(c, p, Cb);
    const cv_kexpr *hw = cv_k_for(c, zero, HW, 0);
    const cv_kexpr *ci = cv_k_for(c, zero, B, CV_KFOR_INNER);
    const cv_kexpr *ch = cv_k_add(c, cv_k_mul(c, cb, B), ci);
    const cv_kexpr *src = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, C),
                                                           cv_k_min(c, ch, cv_k_sub(c, C, i64(c, 1)))),
                                               HW), hw);
    const cv_kexpr *val = cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, ch, C), cv_k_load(c, &x, src),
                                      cv_k_f32(c, 0));
    cv_k_store(c, &y, cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, p, HW), hw), B), ci), val);
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
    c->prog->n_reorders++;
    return y;
}

/* v's plain storage, converted from the blocked one when v has none yet. */
static void need_plain(cv_codegen_ctx *c, cv_nchwc *nc, const cv_value *v)
{
    if (c->prog->value_store[v->id] >= 0 || nc->bstore[v->id] < 0)
        return;
    cv_kten x = blocked_tensor(c, nc, v), y = cv_cg_value(c, v);
    const cv_kexpr *zero = i64(c, 0), *B = i64(c, nc->blk), *C = y.dim[1];
    const cv_kexpr *HW = cv_k_mul(c, y.dim[2], y.dim[3]);
    const cv_kexpr *p = cv_k_begin(c, "from_nchwc", cv_k_mul(c, y.dim[0], C), NULL);
    const cv_kexpr *n = cv_k_div(c, p, C), *ch = cv_k_rem(c, p, C);
    const cv_kexpr *base = cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, x.dim[1]), cv_k_div(c, ch, B)),
                                    HW);
    const cv_kexpr *hw = cv_k_for(c, zero, HW, CV_KFOR_INNER);
    const cv_kexpr *src = cv_k_add(c, cv_k_mul(c, cv_k_add(c, base, hw), B), cv_k_rem(c, ch, B));
    cv_k_store(c, &y, cv_k_add(c, cv_k_mul(c, p, HW), hw), cv_k_load(c, &x, src));
    cv_k_close(c);
    cv_k_end(c);
    c->prog->n_reorders++;
}

void cv_nchwc_prepare_plain(cv_codegen_ctx *c, cv_nchwc *nc)
{
    for (int j = 0; j < c->op->n_operands; j++)
        need_plain(c, nc, c->op->operands[j]);
    for (int k = 0; k < c->n_epi; k++)
        for (int j = 0; j < c->epi[k]->n_operands; j++)
            if (j != c->epi_link[k])
                need_plain(c, nc, c->epi[k]->operands[j]);
}

/* ---- convolutions --------------------------------------------------------- */

typedef struct nconv {
    int64_t C, H, W, OC, OH, OW, KH, KW, st[2], pad[4], dil[2], groups;
    int64_t icb, ci, ocb;       /* input blocks and channels per block, output blocks */
    bool depthwise, plain_in;
} nconv;

static void read_conv(cv_codegen_ctx *c, int blk, nconv *g)
{
    const cv_op *op = c->op;
    const cv_shape *x = &op->operands[0]->type.shape, *y = &op->results[0]->type.shape;
    const cv_shape *w = &op->operands[1]->type.shape;
    g->C = x->d[1].n, g->H = x->d[2].n, g->W = x->d[3].n;
    g->OC = y->d[1].n, g->OH = y->d[2].n, g->OW = y->d[3].n;
    g->KH = w->d[2].n, g->KW = w->d[3].n;
    g->st[0] = g->st[1] = g->dil[0] = g->dil[1] = 1;
    cv_op_ints(op, "stride", g->st, 2);
    cv_op_ints(op, "dilation", g->dil, 2);
    cv_cg_pads2d(op, g->pad);
    g->groups = cv_op_int(op, "groups", 1);
    g->depthwise = g->groups > 1;
    g->plain_in = !g->depthwise && g->C < blk;
    g->icb = g->plain_in ? 1 : (g->C + blk - 1) / blk;
    g->ci = g->plain_in ? g->C : blk;
    g->ocb = (g->OC + blk - 1) / blk;
}

/* The constant data of operand i (NULL when it is not embedded). */
static const float *const_data(cv_codegen_ctx *c, int i)
{
    int s = c->prog->value_store[c->op->operands[i]->id];
    return s >= 0 && c->prog->stores[s].kind == CV_KST_CONST ? c->prog->stores[s].data : NULL;
}

/* Weights [OCB][ICB][KH][KW][CI][blk] (dense) or [CB][KH][KW][blk]
 * (depthwise), and the bias padded to whole blocks. */
static int pack(cv_codegen_ctx *c, const nconv *g, int blk, cv_kten *wb, cv_kten *bb,
                bool *has_b)
{
    const float *w = const_data(c, 1), *b = c->op->n_operands > 2 ? const_data(c, 2) : NULL;
    float *wide = w ? NULL : cv_cg_half_widen(c);  /* -p fp16: f16 weights (codegen_half.c) */
    w = wide ? wide : w;
    *has_b = b != NULL;
    if (!w || (c->op->n_operands > 2 && !b))
        return free(wide), -1;
    int64_t taps = g->KH * g->KW, cin = g->depthwise ? 1 : g->C;
    int64_t n = g->depthwise ? g->ocb * taps * blk : g->ocb * g->icb * taps * g->ci * blk;
    /* In the program's arena: the packed weights become the constant itself. */
    float *buf = cv_kp_alloc(c->prog, ((size_t)n + (size_t)g->ocb * blk) * sizeof *buf);
    if (!buf)
        return free(wide), -1;
    for (int64_t o = 0; o < g->OC; o++)
        for (int64_t i = 0; i < cin; i++)
            for (int64_t t = 0; t < taps; t++) {
                float v = w[(o * cin + i) * taps + t];
                if (g->depthwise)
                    buf[((o / blk) * taps + t) * blk + o % blk] = v;
                else
                    buf[((((o / blk) * g->icb + i / g->ci) * taps + t) * g->ci + i % g->ci) *
                        blk + o % blk] = v;
            }
    float *bias = buf + n;
    for (int64_t o = 0; b && o < g->OC; o++)
        bias[o] = b[o];
    cv_shape ws = {.rank = 1, .d = {{.n = n}}}, bs = {.rank = 1, .d = {{.n = g->ocb * blk}}};
    *wb = wide && !g->depthwise ? cv_cg_half_narrow(c, &ws, buf)
                                : cv_cg_const_own(c, CV_F32, &ws, buf);
    free(wide);
    *bb = cv_cg_const_own(c, CV_F32, &bs, bias);
    return 0;
}

/* The fused chain (residual add, relu/clip) on blocked tensors: the
 * residual and the chain's result get blocked storage, which the runtime
 * epilogue reads and writes like the plain ones. */
static bool take_chain(cv_codegen_ctx *c, cv_nchwc *nc, cv_cg_rt_epi *e)
{
    if (!c->n_epi)
        return false;
    const cv_value *res = NULL, *last = c->epi[c->n_epi - 1]->results[0];
    if (cv_op_is(c->epi[0], CV_OP_ADD)) {
        res = c->epi[0]->operands[1 - c->epi_link[0]];
        if (!cv_shape_equal(&res->type.shape, &c->op->results[0]->type.shape))
            return false;
        need_blocked(c, nc, res);
    }
    int *vs = c->prog->value_store;
    int save_res = res ? vs[res->id] : -1, save_last = vs[last->id];
    if (save_last >= 0)
        return false;   /* already has plain storage (returned): not ours */
    blocked_tensor(c, nc, last);
    if (res)
        vs[res->id] = nc->bstore[res->id];
    vs[last->id] = nc->bstore[last->id];
    bool ok = cv_cg_rt_epilogue(c, e);
    if (res)
        vs[res->id] = save_res;
    vs[last->id] = save_last;
    if (!ok)
        nc->bstore[last->id] = -1;     /* the chain runs on its own, plain */
    return ok;
}

static void conv_call(cv_codegen_ctx *c, const nconv *g, int blk, const cv_kten *x,
                      const cv_kten *wb, const cv_kten *bb, bool has_b, const cv_kten *y,
                      const cv_cg_rt_epi *e)
{
    const cv_kexpr *zero = i64(c, 0);
    cv_k_begin(c, g->depthwise ? "nchwc_dwconv2d" : "nchwc_conv2d", NULL, NULL);
    const cv_kexpr *n = cv_k_for(c, zero, y->dim[0], 0);
    int64_t xin = g->plain_in ? g->C * g->H * g->W : g->icb * blk * g->H * g->W;
    const cv_kexpr *xo = cv_k_mul(c, n, i64(c, xin));
    const cv_kexpr *yo = cv_k_mul(c, n, i64(c, g->ocb * blk * g->OH * g->OW));
    const cv_kexpr *args[24];
    int k = 0;
    args[k++] = cv_k_addr(c, x, xo);
    args[k++] = cv_k_addr(c, wb, zero);
    args[k++] = has_b ? cv_k_addr(c, bb, zero) : cv_k_null(c);
    args[k++] = cv_k_addr(c, y, yo);
    args[k++] = i64(c, blk);
    if (g->depthwise) {
        args[k++] = i64(c, g->ocb);
    } else {
        args[k++] = i64(c, g->icb);
        args[k++] = i64(c, g->ci);
    }
    args[k++] = i64(c, g->H);
    args[k++] = i64(c, g->W);
    if (!g->depthwise)
        args[k++] = i64(c, g->ocb);
    const int64_t rest[] = {g->KH, g->KW, g->st[0], g->st[1], g->pad[0], g->pad[1],
                            g->dil[0], g->dil[1], g->OH, g->OW};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
        args[k++] = i64(c, rest[i]);
    cv_cg_rt_epilogue_args(c, e, yo, &args[k]);
    k += 4;
    cv_k_call(c, g->depthwise ? CV_KRT_NCHWC_DWCONV2D
                 : wb->dtype == CV_F16 ? CV_KRT_NCHWC_CONV2D_H : CV_KRT_NCHWC_CONV2D, args, k);
    cv_k_close(c);
    cv_k_end(c);
}

static int lower_conv(cv_codegen_ctx *c, cv_nchwc *nc)
{
    nconv g;
    read_conv(c, nc->blk, &g);
    cv_kten wb, bb, x;
    bool has_b;
    if (pack(c, &g, nc->blk, &wb, &bb, &has_b))
        return cv_cg_error(c, CV_E_NCHWC_WEIGHTS_NOT_CONSTANT, "blocked convolution: weights are not embedded constants");
    if (g.plain_in) {
        need_plain(c, nc, c->op->operands[0]);
        x = cv_cg_in(c, 0);
    } else
        x = need_blocked(c, nc, c->op->operands[0]);
    cv_cg_rt_epi e;
    bool fused = take_chain(c, nc, &e);
    const cv_value *out = fused ? c->epi[c->n_epi - 1]->results[0] : c->op->results[0];
    cv_kten y = blocked_tensor(c, nc, out);
    if (fused && e.has_res) {
        cv_type rt = btype(nc, out);
        e.res = cv_cg_tensor(c, nc->bstore[c->epi[0]->operands[1 - c->epi_link[0]]->id], &rt);
    }
    conv_call(c, &g, nc->blk, &x, &wb, &bb, has_b, &y, fused ? &e : NULL);
    c->prog->n_blocked_convs++;
    return 0;
}

/* ---- pooling -------------------------------------------------------------- */

static int lower_max_pool(cv_codegen_ctx *c, cv_nchwc *nc)
{
    const cv_value *xv = c->op->operands[0], *yv = c->op->results[0];
    cv_kten x = need_blocked(c, nc, xv), y = blocked_tensor(c, nc, yv);
    int64_t k[2] = {1, 1}, st[2] = {1, 1}, pad[4];
    cv_op_ints(c->op, "kernel", k, 2);
    cv_op_ints(c->op, "stride", st, 2);
    cv_cg_pads2d(c->op, pad);
    const cv_shape *xs = &xv->type.shape, *ys = &yv->type.shape;
    int64_t cb = (xs->d[1].n + nc->blk - 1) / nc->blk;
    const cv_kexpr *zero = i64(c, 0);
    cv_k_begin(c, "nchwc_max_pool2d", NULL, NULL);
    const cv_kexpr *n = cv_k_for(c, zero, y.dim[0], 0);
    const cv_kexpr *args[] = {
        cv_k_addr(c, &x, cv_k_mul(c, n, i64(c, cb * nc->blk * xs->d[2].n * xs->d[3].n))),
        cv_k_addr(c, &y, cv_k_mul(c, n, i64(c, cb * nc->blk * ys->d[2].n * ys->d[3].n))),
        i64(c, nc->blk), i64(c, cb), i64(c, xs->d[2].n), i64(c, xs->d[3].n), i64(c, k[0]),
        i64(c, k[1]), i64(c, st[0]), i64(c, st[1]), i64(c, pad[0]), i64(c, pad[1]),
        i64(c, ys->d[2].n), i64(c, ys->d[3].n), zero,
    };
    cv_k_call(c, CV_KRT_NCHWC_POOL2D, args, (int)(sizeof args / sizeof args[0]));
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* Blocked in, plain [N,C,1,1] out: one item per (n, block). */
static int lower_global_avg_pool(cv_codegen_ctx *c, cv_nchwc *nc)
{
    const cv_value *xv = c->op->operands[0];
    cv_kten x = need_blocked(c, nc, xv), y = cv_cg_out(c, 0);
    const cv_kexpr *zero = i64(c, 0), *B = i64(c, nc->blk), *Cb = x.dim[1], *C = y.dim[1];
    const cv_kexpr *HW = cv_k_mul(c, x.dim[2], x.dim[3]);
    const cv_kexpr *p = cv_k_begin(c, "nchwc_global_avg_pool", cv_k_mul(c, x.dim[0], Cb), NULL);
    const cv_kexpr *n = cv_k_div(c, p, Cb), *cb = cv_k_rem(c, p, Cb);
    const cv_kexpr *ci = cv_k_for(c, zero, B, 0);
    const cv_kexpr *ch = cv_k_add(c, cv_k_mul(c, cb, B), ci);
    cv_k_if(c, cv_k_cmp(c, CV_KOP_LT, ch, C));
    const cv_kexpr *acc = cv_k_local(c, cv_k_f32(c, 0));
    const cv_kexpr *hw = cv_k_for(c, zero, HW, 0);
    cv_k_set(c, acc, cv_k_add(c, acc, cv_k_load(c, &x, cv_k_add(c, cv_k_mul(c, cv_k_add(c,
                                                cv_k_mul(c, p, HW), hw), B), ci))));
    cv_k_close(c);
    cv_k_store(c, &y, cv_k_add(c, cv_k_mul(c, n, C), ch),
               cv_k_bin(c, CV_KOP_DIV, acc, cv_k_cast(c, HW, CV_KTY_F32)));
    cv_k_close(c);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* ---- channel concatenation ------------------------------------------------ */

/* Parts of whole blocks (the last may be padded, as the result is): part
 * k's blocks of image n are one contiguous run of the result's. */
static int lower_concat(cv_codegen_ctx *c, cv_nchwc *nc)
{
    const cv_value *yv = c->op->results[0];
    cv_kten y = blocked_tensor(c, nc, yv);
    const cv_kexpr *zero = i64(c, 0);
    int64_t hwb = yv->type.shape.d[2].n * yv->type.shape.d[3].n * nc->blk, at = 0;
    int64_t ocb = (yv->type.shape.d[1].n + nc->blk - 1) / nc->blk;
    for (int k = 0; k < c->op->n_operands; k++) {
        const cv_value *xv = c->op->operands[k];
        int64_t cb = (xv->type.shape.d[1].n + nc->blk - 1) / nc->blk;
        cv_kten x = need_blocked(c, nc, xv);
        const cv_kexpr *p = cv_k_begin(c, "nchwc_concat", cv_k_mul(c, y.dim[0], i64(c, cb)), NULL);
        const cv_kexpr *n = cv_k_div(c, p, i64(c, cb)), *b = cv_k_rem(c, p, i64(c, cb));
        const cv_kexpr *e = cv_k_for(c, zero, i64(c, hwb), CV_KFOR_INNER);
        const cv_kexpr *dst = cv_k_add(c, cv_k_mul(c, cv_k_add(c, cv_k_mul(c, n, i64(c, ocb)),
                                                               cv_k_add(c, b, i64(c, at))),
                                                   i64(c, hwb)), e);
        cv_k_store(c, &y, dst, cv_k_load(c, &x, cv_k_add(c, cv_k_mul(c, p, i64(c, hwb)), e)));
        cv_k_close(c);
        cv_k_end(c);
        at += cb;
    }
    return 0;
}

int cv_nchwc_lower(cv_codegen_ctx *c, cv_nchwc *nc)
{
    if (cv_op_is(c->op, CV_OP_CONCAT))
        return lower_concat(c, nc);
    if (cv_op_is(c->op, CV_OP_CONV2D))
        return lower_conv(c, nc);
    if (cv_op_is(c->op, CV_OP_MAX_POOL2D))
        return lower_max_pool(c, nc);
    if (cv_op_is(c->op, CV_OP_GLOBAL_AVG_POOL))
        return lower_global_avg_pool(c, nc);
    return cv_cg_error(c, CV_E_NCHWC_NO_KERNEL, "%s: no blocked-layout kernel", c->op->name);
}
