/* The elementwise loop nest every pointwise op (and fused chain) shares.
 *
 * Result dims of extent 1 are dropped and neighbouring dims merge when every
 * operand treats them alike (both broadcast or both read), so a same-shape op
 * becomes one flat loop and a bias add a two-level nest.  The innermost merged
 * dim is the contiguous inner loop; the outer ones are flattened into the
 * kernel's parallel index (a flat loop is cut into blocks instead). */
#include <math.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/kernel_internal.h"

enum { EW_BLOCK = 8192, EW_GRAIN = 8192, MAX_EW_OPERANDS = 24 };

/* The epilogue a fused chain adds to an elementwise kernel: extra operands
 * (the chain ops' other inputs, after the producer's own) and where the
 * chain's last result goes. */
typedef struct ew_epi {
    int n;                      /* chain ops applied (0: none) */
    int first_extra[8];         /* index among the extras of epi[k]'s first other operand */
    cv_kten out;
} ew_epi;

cv_cg_operand cv_cg_operand_of(const cv_kten *t)
{
    cv_cg_operand o = {.t = *t, .rank = t->rank};
    memcpy(o.dim, t->dim, sizeof o.dim);
    memcpy(o.sdim, t->sdim, sizeof o.sdim);
    return o;
}

cv_cg_operand cv_cg_operand_at(cv_codegen_ctx *c, const cv_kten *t, int at, int rank)
{
    cv_cg_operand o = {.t = *t, .rank = rank};
    for (int j = 0; j < rank; j++) {
        int k = j - at;
        bool in = k >= 0 && k < t->rank;
        o.dim[j] = in ? t->dim[k] : cv_k_i64(c, 1);
        o.sdim[j] = in ? t->sdim[k] : 1;
    }
    return o;
}

typedef struct ew_plan {
    int m;                                      /* merged dims */
    const cv_kexpr *ext[CV_MAX_RANK];
    const cv_kexpr *stride[MAX_EW_OPERANDS + 1][CV_MAX_RANK];  /* [n]: the result */
} ew_plan;

/* Strides of every operand (right-aligned, broadcast dims stride 0) and the
 * result, per result dim. */
static void dim_strides(cv_codegen_ctx *c, const cv_kten *out, const cv_cg_operand *ops, int n,
                        const cv_kexpr *st[][CV_MAX_RANK], bool bc[][CV_MAX_RANK])
{
    int R = out->rank;
    for (int o = 0; o <= n; o++) {
        const cv_kexpr *acc = cv_k_i64(c, 1);
        for (int j = R - 1; j >= 0; j--) {
            if (o == n) {
                st[o][j] = acc;
                acc = cv_k_mul(c, acc, out->dim[j]);
                continue;
            }
            int k = j - (R - ops[o].rank);
            int64_t sd = k < 0 ? 1 : ops[o].sdim[k];
            bc[o][j] = sd == 1 && out->sdim[j] != 1;
            st[o][j] = bc[o][j] ? cv_k_i64(c, 0) : acc;
            if (k >= 0)
                acc = cv_k_mul(c, acc, ops[o].dim[k]);
        }
    }
}

static bool same_pattern(bool bc[][CV_MAX_RANK], int n, int a, int b)
{
    for (int o = 0; o < n; o++)
        if (bc[o][a] != bc[o][b])
            return false;
    return true;
}

static void plan_loops(cv_codegen_ctx *c, const cv_kten *out, const cv_cg_operand *ops, int n,
                       ew_plan *pl)
{
    const cv_kexpr *st[MAX_EW_OPERANDS + 1][CV_MAX_RANK];
    bool bc[MAX_EW_OPERANDS + 1][CV_MAX_RANK] = {{false}};
    dim_strides(c, out, ops, n, st, bc);
    pl->m = 0;
    int last = -1;
    for (int j = 0; j < out->rank; j++) {
        if (out->sdim[j] == 1)
            continue;
        if (last >= 0 && same_pattern(bc, n, last, j)) {
            /* Merge into the current group: its stride becomes the inner one. */
            int g = pl->m - 1;
            pl->ext[g] = cv_k_mul(c, pl->ext[g], out->dim[j]);
            for (int o = 0; o <= n; o++)
                pl->stride[o][g] = st[o][j];
        } else {
            int g = pl->m++;
            pl->ext[g] = out->dim[j];
            for (int o = 0; o <= n; o++)
                pl->stride[o][g] = st[o][j];
        }
        last = j;
    }
}

/* Runs the fused chain on value r: each op's hook in scalar mode, with its
 * other operands from the loaded extras. */
static const cv_kexpr *apply_chain(cv_codegen_ctx *c, const ew_epi *ep, const cv_kexpr *r,
                                   const cv_kexpr *const *loaded)
{
    const cv_op *self = c->op;
    for (int k = 0; k < ep->n; k++) {
        const cv_op *e = c->epi[k];
        const cv_value *feed = k ? c->epi[k - 1]->results[0] : self->results[0];
        const cv_kexpr *in[MAX_EW_OPERANDS];
        for (int j = 0, x = ep->first_extra[k]; j < e->n_operands && j < MAX_EW_OPERANDS; j++)
            in[j] = j == c->epi_link[k] ? cv_k_convert(c, r, feed->type.dtype) : loaded[x++];
        c->op = e;
        c->scalar_mode = true;
        c->scalar_in = in;
        c->scalar_n = e->n_operands;
        c->scalar_out = NULL;
        cv_codegen_fn hook = cv_cg_hook_for(e->def);
        if (!hook || hook(c) || !c->scalar_out)
            cv_kp_bug(c, "a fused op has no scalar form");
        r = c->scalar_out ? c->scalar_out : r;
        c->scalar_mode = false;
        c->op = self;
    }
    return r;
}

/* Emits the inner loop over [lo, hi) of the last merged dim; operands
 * [0, n) feed fn, the rest feed the fused chain. */
static void inner_loop(cv_codegen_ctx *c, const cv_kten *out, const cv_cg_operand *ops, int n,
                       int n_all, const ew_epi *ep, const ew_plan *pl,
                       const cv_kexpr *const *base, const cv_kexpr *lo, const cv_kexpr *hi,
                       cv_cg_scalar_fn fn)
{
    int g = pl->m - 1;
    const cv_kexpr *i = g >= 0 ? cv_k_for(c, lo, hi, CV_KFOR_INNER) : cv_k_i64(c, 0);
    const cv_kexpr *in[MAX_EW_OPERANDS], *idx[MAX_EW_OPERANDS + 1];
    for (int o = 0; o <= n_all; o++)
        idx[o] = g >= 0 ? cv_k_add(c, base[o], cv_k_mul(c, i, pl->stride[o][g])) : base[o];
    for (int o = 0; o < n_all; o++)
        in[o] = cv_k_load(c, &ops[o].t, idx[o]);
    const cv_kexpr *r = fn(c, in, n);
    if (ep->n)
        r = apply_chain(c, ep, r, in + n);
    cv_k_store(c, ep->n ? &ep->out : out, idx[n_all], r);
    if (g >= 0)
        cv_k_close(c);
}

/* Takes the planned chain when this kernel writes the op's result 0: the
 * chain ops' other operands join the operand list. */
static int take_chain(cv_codegen_ctx *c, const cv_kten *out, cv_cg_operand *ops, int n,
                      ew_epi *ep)
{
    ep->n = 0;
    if (!c->n_epi || c->epi_taken || out->store != c->prog->value_store[c->op->results[0]->id])
        return n;
    int total = n, own = n;
    for (int k = 0; k < c->n_epi; k++)
        total += c->epi[k]->n_operands - 1;
    if (total > MAX_EW_OPERANDS)
        return n;
    for (int k = 0; k < c->n_epi; k++) {
        ep->first_extra[k] = n - own;
        for (int j = 0; j < c->epi[k]->n_operands; j++)
            if (j != c->epi_link[k]) {
                cv_kten t = cv_cg_value(c, c->epi[k]->operands[j]);
                ops[n++] = cv_cg_operand_of(&t);
            }
    }
    ep->n = c->n_epi;
    ep->out = cv_cg_value(c, c->epi[c->n_epi - 1]->results[0]);
    c->epi_taken = true;
    return n;
}

int cv_cg_elementwise_views(cv_codegen_ctx *c, const cv_kten *out, const cv_cg_operand *own,
                            int n, cv_cg_scalar_fn fn)
{
    if (n > MAX_EW_OPERANDS)
        return cv_cg_error(c, CV_E_CODEGEN_TOO_MANY_OPERANDS, "more than %d operands in one elementwise kernel",
                           MAX_EW_OPERANDS);
    cv_cg_operand ops[MAX_EW_OPERANDS];
    memcpy(ops, own, sizeof *ops * (size_t)n);
    ew_epi ep;
    int n_all = take_chain(c, out, ops, n, &ep);
    ew_plan pl;
    plan_loops(c, out, ops, n_all, &pl);
    const cv_kexpr *base[MAX_EW_OPERANDS + 1];
    const cv_kexpr *zero = cv_k_i64(c, 0);
    if (pl.m <= 1) {
        const cv_kexpr *e = pl.m ? pl.ext[0] : cv_k_i64(c, 1), *b = cv_k_i64(c, EW_BLOCK);
        const cv_kexpr *blocks = cv_k_div(c, cv_k_add(c, e, cv_k_i64(c, EW_BLOCK - 1)), b);
        const cv_kexpr *p = cv_k_begin(c, NULL, pl.m ? blocks : NULL, NULL);
        for (int o = 0; o <= n_all; o++)
            base[o] = zero;
        const cv_kexpr *lo = cv_k_mul(c, p, b);
        inner_loop(c, out, ops, n, n_all, &ep, &pl, base, lo, cv_k_min(c, e, cv_k_add(c, lo, b)), fn);
        cv_k_end(c);
        return 0;
    }
    const cv_kexpr *outer = cv_k_i64(c, 1), *inner = pl.ext[pl.m - 1];
    for (int g = 0; g < pl.m - 1; g++)
        outer = cv_k_mul(c, outer, pl.ext[g]);
    const cv_kexpr *grain = cv_k_div(c, cv_k_i64(c, EW_GRAIN + 0),
                                     cv_k_max(c, inner, cv_k_i64(c, 1)));
    const cv_kexpr *p = cv_k_begin(c, NULL, outer, cv_k_max(c, grain, cv_k_i64(c, 1)));
    for (int o = 0; o <= n_all; o++)
        base[o] = zero;
    const cv_kexpr *q = p;
    for (int g = pl.m - 2; g >= 0; g--) {
        const cv_kexpr *idx = g ? cv_k_rem(c, q, pl.ext[g]) : q;
        for (int o = 0; o <= n_all; o++)
            base[o] = cv_k_add(c, base[o], cv_k_mul(c, idx, pl.stride[o][g]));
        if (g)
            q = cv_k_div(c, q, pl.ext[g]);
    }
    inner_loop(c, out, ops, n, n_all, &ep, &pl, base, zero, inner, fn);
    cv_k_end(c);
    return 0;
}

int cv_cg_elementwise(cv_codegen_ctx *c, cv_cg_scalar_fn fn)
{
    if (c->scalar_mode) {   /* one element of a fused chain */
        c->scalar_out = fn(c, c->scalar_in, c->scalar_n);
        return 0;
    }
    int n = c->op->n_operands;
    if (n > MAX_EW_OPERANDS)
        return cv_cg_error(c, CV_E_CODEGEN_TOO_MANY_OPERANDS, "more than %d operands in one elementwise kernel",
                           MAX_EW_OPERANDS);
    cv_cg_operand ops[MAX_EW_OPERANDS];
    for (int i = 0; i < n; i++) {
        cv_kten t = cv_cg_in(c, i);
        ops[i] = cv_cg_operand_of(&t);
    }
    cv_kten out = cv_cg_out(c, 0);
    return cv_cg_elementwise_views(c, &out, ops, n, fn);
}

/* A fused chain as the runtime GEMM's epilogue: an optional same-shape add
 * (the residual), then an optional relu or clip, all f32. */
bool cv_cg_rt_epilogue(cv_codegen_ctx *c, cv_cg_rt_epi *e)
{
    memset(e, 0, sizeof *e);
    if (!c->n_epi || c->epi_taken)
        return false;
    int k = 0;
    const cv_op *op = c->epi[0];
    const cv_value *run = c->op->results[0];
    if (op->def->codegen == cv_cg_add) {
        const cv_value *other = op->operands[1 - c->epi_link[0]];
        if (!cv_shape_equal(&other->type.shape, &run->type.shape) || other->type.dtype != CV_F32)
            return false;
        e->res = cv_cg_value(c, other);
        e->has_res = true;
        k++;
    }
    if (k < c->n_epi && CV_OP_EPI_ACT(c->epi[k]->def)) {
        e->act = CV_OP_EPI_ACT(c->epi[k]->def);
        e->lo = cv_op_float(c->epi[k], "min", -INFINITY);   /* clip's bounds */
        e->hi = cv_op_float(c->epi[k], "max", INFINITY);
        k++;
    }
    if (k != c->n_epi || c->epi[k - 1]->results[0]->type.dtype != CV_F32)
        return false;
    e->out = cv_cg_value(c, c->epi[k - 1]->results[0]);
    c->epi_taken = true;
    return true;
}

/* The runtime epilogue's arguments (res at element offset off). */
void cv_cg_rt_epilogue_args(cv_codegen_ctx *c, const cv_cg_rt_epi *e, const cv_kexpr *off,
                            const cv_kexpr **args)
{
    args[0] = e && e->has_res ? cv_k_addr(c, &e->res, off) : cv_k_null(c);
    args[1] = cv_k_i64(c, e ? e->act : 0);
    args[2] = cv_k_f32(c, e ? e->lo : 0);
    args[3] = cv_k_f32(c, e ? e->hi : 0);
}

bool cv_cg_take_pointwise_chain(cv_codegen_ctx *c)
{
    if (!c->n_epi || c->epi_taken)
        return false;
    const cv_shape *shape = &c->op->results[0]->type.shape;
    for (int k = 0; k < c->n_epi; k++)
        for (int j = 0; j < c->epi[k]->n_operands; j++) {
            const cv_value *o = c->epi[k]->operands[j];
            if (j != c->epi_link[k] && !cv_shape_equal(&o->type.shape, shape) &&
                cv_shape_numel(&o->type.shape) != 1)
                return false;
        }
    c->epi_taken = c->epi_pointwise = true;
    return true;
}

void cv_cg_store_result(cv_codegen_ctx *c, const cv_kten *out, const cv_kexpr *idx,
                        const cv_kexpr *v)
{
    if (!c->epi_pointwise) {
        cv_k_store(c, out, idx, v);
        return;
    }
    ew_epi ep = {.n = c->n_epi};
    const cv_kexpr *loaded[MAX_EW_OPERANDS];
    int n = 0;
    for (int k = 0; k < c->n_epi; k++) {
        ep.first_extra[k] = n;
        for (int j = 0; j < c->epi[k]->n_operands && n < MAX_EW_OPERANDS; j++) {
            const cv_value *o = c->epi[k]->operands[j];
            if (j == c->epi_link[k])
                continue;
            cv_kten t = cv_cg_value(c, o);
            bool single = cv_shape_numel(&o->type.shape) == 1;
            loaded[n++] = cv_k_load(c, &t, single ? cv_k_i64(c, 0) : idx);
        }
    }
    ep.out = cv_cg_value(c, c->epi[c->n_epi - 1]->results[0]);
    cv_k_store(c, &ep.out, idx, apply_chain(c, &ep, v, loaded));
}
