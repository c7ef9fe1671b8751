/* Codegen hooks: reductions (reduce_sum/mean/max/min, argmax) and the
 * softmax pair (ops_reduce.c); cv_cg_reduce is shared with global pooling.
 *
 * Floats accumulate in f32, integers exactly in i64 (sums wrap, means
 * truncate).  max/min let NaN win; an empty reduction gives the identity
 * (integers: the dtype's own extreme, as the interpreter's saturating store
 * does). */
#include <math.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"

/* Input dims after dropping 1s and merging neighbours of the same kind. */
typedef struct rgroups {
    int n;
    const cv_kexpr *ext[CV_MAX_RANK];
    bool red[CV_MAX_RANK];
} rgroups;

static void group_dims(cv_codegen_ctx *c, const cv_kten *x, const bool *red, rgroups *g)
{
    g->n = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->sdim[d] == 1)
            continue;
        if (g->n && g->red[g->n - 1] == red[d]) {
            g->ext[g->n - 1] = cv_k_mul(c, g->ext[g->n - 1], x->dim[d]);
        } else {
            g->ext[g->n] = x->dim[d];
            g->red[g->n++] = red[d];
        }
    }
}

static const cv_kexpr *identity(cv_codegen_ctx *c, int kind, cv_kty t, cv_dtype dt)
{
    if (kind == CV_CG_RSUM || kind == CV_CG_RMEAN || kind == CV_CG_RPROD)
        return cv_k_const(c, t, kind == CV_CG_RPROD);
    bool mx = kind == CV_CG_RMAX;
    if (t != CV_KTY_I64)
        return cv_k_const(c, t, mx ? -INFINITY : INFINITY);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    cv_dtype_int_range(dt, &lo, &hi);
    return cv_k_i64(c, mx ? lo : hi);
}

static const cv_kexpr *combine(cv_codegen_ctx *c, int kind, const cv_kexpr *acc, const cv_kexpr *v)
{
    if (kind == CV_CG_RSUM || kind == CV_CG_RMEAN)
        return cv_k_add(c, acc, v);
    if (kind == CV_CG_RPROD)
        return cv_k_mul(c, acc, v);
    return cv_k_bin(c, kind == CV_CG_RMAX ? CV_KOP_MAX : CV_KOP_MIN, acc, v);
}

static const cv_kexpr *finish(cv_codegen_ctx *c, int kind, const cv_kexpr *acc,
                              const cv_kexpr *count)
{
    if (kind != CV_CG_RMEAN)
        return acc;
    if (acc->ty == CV_KTY_I64)
        return cv_k_idiv(c, acc, count);
    return cv_k_bin(c, CV_KOP_DIV, acc, cv_k_cast(c, count, (cv_kty)acc->ty));
}

/* Out-of-place order for [K1, R, K2]: out rows accumulate while r walks, so
 * the inner loop runs over contiguous K2. */
static void reduce_middle(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *out, int kind,
                          const rgroups *g)
{
    int k2 = g->n - 1, r = g->n - 2;
    const cv_kexpr *K1 = cv_k_i64(c, 1), *R = g->ext[r], *K2 = g->ext[k2];
    for (int i = 0; i < r; i++)
        K1 = cv_k_mul(c, K1, g->ext[i]);
    cv_kty t = cv_kty_of(x->dtype);
    const cv_kexpr *p = cv_k_begin(c, "reduce", K1, NULL);
    const cv_kexpr *obase = cv_k_mul(c, p, K2), *ibase = cv_k_mul(c, obase, R);
    const cv_kexpr *i = cv_k_for(c, cv_k_i64(c, 0), K2, CV_KFOR_INNER);
    cv_k_store(c, out, cv_k_add(c, obase, i), identity(c, kind, t, x->dtype));
    cv_k_close(c);
    const cv_kexpr *j = cv_k_for(c, cv_k_i64(c, 0), R, 0);
    const cv_kexpr *row = cv_k_add(c, ibase, cv_k_mul(c, j, K2));
    i = cv_k_for(c, cv_k_i64(c, 0), K2, CV_KFOR_INNER);
    const cv_kexpr *o = cv_k_add(c, obase, i);
    cv_k_store(c, out, o, combine(c, kind, cv_k_load(c, out, o), cv_k_load(c, x, cv_k_add(c, row, i))));
    cv_k_close(c);
    cv_k_close(c);
    if (kind == CV_CG_RMEAN) {
        i = cv_k_for(c, cv_k_i64(c, 0), K2, CV_KFOR_INNER);
        o = cv_k_add(c, obase, i);
        cv_k_store(c, out, o, finish(c, kind, cv_k_load(c, out, o), R));
        cv_k_close(c);
    }
    cv_k_end(c);
}

/* Any pattern: one output per parallel item, loops over the reduced groups. */
static void reduce_general(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *out, int kind,
                           const rgroups *g)
{
    const cv_kexpr *n_out = cv_k_i64(c, 1), *count = cv_k_i64(c, 1);
    const cv_kexpr *stride[CV_MAX_RANK], *s = cv_k_i64(c, 1);
    for (int i = g->n - 1; i >= 0; i--) {
        stride[i] = s;
        s = cv_k_mul(c, s, g->ext[i]);
        if (g->red[i])
            count = cv_k_mul(c, count, g->ext[i]);
        else
            n_out = cv_k_mul(c, n_out, g->ext[i]);
    }
    const cv_kexpr *p = cv_k_begin(c, "reduce", n_out, cv_k_i64(c, 16));
    const cv_kexpr *q = p, *base = cv_k_i64(c, 0);
    for (int i = g->n - 1; i >= 0; i--)
        if (!g->red[i]) {
            base = cv_k_add(c, base, cv_k_mul(c, cv_k_rem(c, q, g->ext[i]), stride[i]));
            q = cv_k_div(c, q, g->ext[i]);
        }
    cv_kty t = cv_kty_of(x->dtype);
    if (t != CV_KTY_I64 && t != CV_KTY_F64)
        t = CV_KTY_F32;
    const cv_kexpr *acc = cv_k_local(c, identity(c, kind, t, x->dtype)), *idx = base;
    int loops = 0;
    for (int i = 0; i < g->n; i++)
        if (g->red[i]) {
            const cv_kexpr *j = cv_k_for(c, cv_k_i64(c, 0), g->ext[i], CV_KFOR_INNER);
            idx = cv_k_add(c, idx, cv_k_mul(c, j, stride[i]));
            loops++;
        }
    cv_k_set(c, acc, combine(c, kind, acc, cv_k_cast(c, cv_k_load(c, x, idx), t)));
    while (loops--)
        cv_k_close(c);
    cv_k_store(c, out, p, finish(c, kind, acc, count));
    cv_k_end(c);
}

void cv_cg_reduce(cv_codegen_ctx *c, const cv_kten *x, const bool *red, const cv_kten *out,
                  int kind)
{
    rgroups g;
    group_dims(c, x, red, &g);
    bool exact_acc = out->dtype == CV_F32 || out->dtype == CV_I64;
    bool middle = (g.n == 2 || g.n == 3) && !g.red[g.n - 1] && g.red[g.n - 2];
    if (middle && exact_acc && x->dtype == out->dtype)
        reduce_middle(c, x, out, kind, &g);
    else
        reduce_general(c, x, out, kind, &g);
}

static int reduce_hook(cv_codegen_ctx *c, int kind)
{
    cv_kten x = cv_cg_in(c, 0), out = cv_cg_out(c, 0);
    bool red[CV_MAX_RANK] = {false};
    int64_t axes[CV_MAX_RANK];
    int n = cv_op_ints(c->op, "axes", axes, CV_MAX_RANK);
    for (int i = 0; i < n; i++)
        red[axes[i] < 0 ? axes[i] + x.rank : axes[i]] = true;
    if (n <= 0)
        for (int i = 0; i < x.rank; i++)
            red[i] = true;
    cv_cg_reduce(c, &x, red, &out, kind);
    return 0;
}

int cv_cg_reduce_sum(cv_codegen_ctx *c) { return reduce_hook(c, CV_CG_RSUM); }
int cv_cg_reduce_mean(cv_codegen_ctx *c) { return reduce_hook(c, CV_CG_RMEAN); }
int cv_cg_reduce_max(cv_codegen_ctx *c) { return reduce_hook(c, CV_CG_RMAX); }
int cv_cg_reduce_min(cv_codegen_ctx *c) { return reduce_hook(c, CV_CG_RMIN); }
int cv_cg_reduce_prod(cv_codegen_ctx *c) { return reduce_hook(c, CV_CG_RPROD); }

/* ---- along one axis: argmax, softmax, log_softmax -------------------------- */

typedef struct axis_view {
    const cv_kexpr *outer, *n, *inner;
} axis_view;

static axis_view split_axis(cv_codegen_ctx *c, const cv_kten *x, int64_t axis)
{
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    axis_view v = {cv_k_numel(c, x, 0, a), x->dim[a], cv_k_numel(c, x, a + 1, x->rank)};
    return v;
}

/* The first element of the line of item p and the step along the axis. */
static void line_of(cv_codegen_ctx *c, const axis_view *v, const cv_kexpr *p,
                    const cv_kexpr **base, const cv_kexpr **step)
{
    const cv_kexpr *o = cv_k_div(c, p, v->inner), *k = cv_k_rem(c, p, v->inner);
    *base = cv_k_add(c, cv_k_mul(c, cv_k_mul(c, o, v->n), v->inner), k);
    *step = v->inner;
}

int cv_cg_argmax(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), out = cv_cg_out(c, 0);
    axis_view v = split_axis(c, &x, cv_op_int(c->op, "axis", 0));
    bool last = cv_op_int(c->op, "select_last_index", 0) == 1;
    const cv_kexpr *p = cv_k_begin(c, NULL, cv_k_mul(c, v.outer, v.inner), cv_k_i64(c, 16));
    const cv_kexpr *base, *step;
    line_of(c, &v, p, &base, &step);
    const cv_kexpr *best = cv_k_local(c, cv_k_i64(c, 0)), *bv = cv_k_local(c, cv_k_load(c, &x, base));
    const cv_kexpr *j = cv_k_for(c, cv_k_i64(c, 1), v.n, 0);
    const cv_kexpr *val = cv_k_load(c, &x, cv_k_add(c, base, cv_k_mul(c, j, step))), *better;
    cv_kop cmp = last ? CV_KOP_GE : CV_KOP_GT;
    if (val->ty == CV_KTY_I64) {
        better = cv_k_cmp(c, cmp, val, bv);
    } else {
        /* NaN is the largest value, like numpy. */
        const cv_kexpr *vn = cv_k_un(c, CV_KOP_ISNAN, val), *bn = cv_k_un(c, CV_KOP_ISNAN, bv);
        const cv_kexpr *when_b_nan = last ? vn : cv_k_bool(c, false);
        better = cv_k_select(c, bn, when_b_nan, cv_k_bin(c, CV_KOP_OR, vn, cv_k_cmp(c, cmp, val, bv)));
    }
    cv_k_set(c, best, cv_k_select(c, better, j, best));
    cv_k_set(c, bv, cv_k_select(c, better, val, bv));
    cv_k_close(c);
    cv_k_store(c, &out, p, best);
    cv_k_end(c);
    return 0;
}

static int softmax_common(cv_codegen_ctx *c, bool log_form)
{
    cv_kten x = cv_cg_in(c, 0), out = cv_cg_out(c, 0);
    axis_view v = split_axis(c, &x, cv_op_int(c->op, "axis", -1));
    const cv_kexpr *p = cv_k_begin(c, NULL, cv_k_mul(c, v.outer, v.inner), cv_k_i64(c, 4));
    const cv_kexpr *base, *step, *zero = cv_k_i64(c, 0);
    line_of(c, &v, p, &base, &step);
    const cv_kexpr *mx = cv_k_local(c, cv_k_f32(c, -INFINITY));
    const cv_kexpr *j = cv_k_for(c, zero, v.n, CV_KFOR_INNER);
    const cv_kexpr *at = cv_k_add(c, base, cv_k_mul(c, j, step));
    cv_k_set(c, mx, cv_k_bin(c, CV_KOP_FMAX, mx, cv_k_load(c, &x, at)));
    cv_k_close(c);
    /* f32 results hold exp(x - max) between the passes; others recompute it. */
    bool keep = out.dtype == CV_F32 && !log_form;
    const cv_kexpr *sum = cv_k_local(c, cv_k_f32(c, 0));
    j = cv_k_for(c, zero, v.n, CV_KFOR_INNER);
    at = cv_k_add(c, base, cv_k_mul(c, j, step));
    const cv_kexpr *e = cv_k_un(c, CV_KOP_EXP, cv_k_sub(c, cv_k_load(c, &x, at), mx));
    if (keep)
        cv_k_store(c, &out, at, e);
    cv_k_set(c, sum, cv_k_add(c, sum, e));
    cv_k_close(c);
    const cv_kexpr *lsum = log_form ? cv_k_local(c, cv_k_un(c, CV_KOP_LOG, sum)) : NULL;
    const cv_kexpr *inv = keep ? cv_k_local(c, cv_k_bin(c, CV_KOP_DIV, cv_k_f32(c, 1), sum)) : NULL;
    j = cv_k_for(c, zero, v.n, CV_KFOR_INNER);
    at = cv_k_add(c, base, cv_k_mul(c, j, step));
    const cv_kexpr *r;
    if (keep)
        r = cv_k_mul(c, cv_k_load(c, &out, at), inv);
    else if (log_form)
        r = cv_k_sub(c, cv_k_sub(c, cv_k_load(c, &x, at), mx), lsum);
    else
        r = cv_k_bin(c, CV_KOP_DIV, cv_k_un(c, CV_KOP_EXP, cv_k_sub(c, cv_k_load(c, &x, at), mx)), sum);
    cv_k_store(c, &out, at, r);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

int cv_cg_softmax(cv_codegen_ctx *c) { return softmax_common(c, false); }
int cv_cg_log_softmax(cv_codegen_ctx *c) { return softmax_common(c, true); }
