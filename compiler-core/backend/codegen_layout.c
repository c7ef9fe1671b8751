/* Codegen hooks: data movement (ops_layout.c).  A slice or split part that
 * is one contiguous block of its input becomes a view (no code); the rest
 * are strided copies (transpose, slice, split), block copies (concat),
 * indexed copies (gather) and padded copies (pad).  Elements move with
 * their exact bytes in every dtype. */
#include <stdint.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"

/* dst[coords] = src[off + sum coords[d] * st[d]]: one parallel item per
 * row of dst, the inner loop along its last axis. */
static void strided_copy(cv_codegen_ctx *c, const cv_kten *dst, const cv_kten *src,
                         const cv_kexpr *const *st, const cv_kexpr *off)
{
    int r = dst->rank;
    if (r == 0) {
        cv_k_begin(c, "copy", NULL, NULL);
        cv_k_store(c, dst, cv_k_i64(c, 0), cv_k_load(c, src, off));
        cv_k_end(c);
        return;
    }
    const cv_kexpr *last = dst->dim[r - 1], *rows = cv_k_numel(c, dst, 0, r - 1);
    const cv_kexpr *grain = cv_k_max(c, cv_k_div(c, cv_k_i64(c, 4096), cv_k_max(c, last, cv_k_i64(c, 1))),
                                     cv_k_i64(c, 1));
    const cv_kexpr *p = cv_k_begin(c, "copy", rows, grain), *q = p, *base = off;
    for (int d = r - 2; d >= 0; d--) {
        const cv_kexpr *coord = d ? cv_k_rem(c, q, dst->dim[d]) : q;
        base = cv_k_add(c, base, cv_k_mul(c, coord, st[d]));
        q = cv_k_div(c, q, dst->dim[d]);
    }
    const cv_kexpr *i = cv_k_for(c, cv_k_i64(c, 0), last, CV_KFOR_INNER);
    cv_k_store(c, dst, cv_k_add(c, cv_k_mul(c, p, last), i),
               cv_k_load(c, src, cv_k_add(c, base, cv_k_mul(c, i, st[r - 1]))));
    cv_k_close(c);
    cv_k_end(c);
}

/* Row-major strides of t. */
static void strides_of(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr **st)
{
    const cv_kexpr *s = cv_k_i64(c, 1);
    for (int d = t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s = cv_k_mul(c, s, t->dim[d]);
    }
}

int cv_cg_transpose(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    int64_t perm[CV_MAX_RANK + 1];
    if (cv_op_ints(c->op, "perm", perm, CV_MAX_RANK + 1) < 0)
        for (int i = 0; i < x.rank; i++)
            perm[i] = x.rank - 1 - i;
    const cv_kexpr *xs[CV_MAX_RANK], *st[CV_MAX_RANK];
    strides_of(c, &x, xs);
    for (int i = 0; i < x.rank; i++)
        st[i] = xs[perm[i]];
    strided_copy(c, &y, &x, st, cv_k_i64(c, 0));
    return 0;
}

/* Whether the part of x with y's shape at start[] / step[] is one block:
 * every axis after the last narrowed one is whole, the narrowed one has
 * unit step, and every axis before it has extent 1. */
static bool contiguous_part(const cv_kten *x, const cv_shape *xsh, const cv_shape *y,
                            const cv_kexpr *const *start, const int64_t *step)
{
    int a = -1;
    for (int d = 0; d < x->rank; d++) {
        int64_t yd = y->d[d].sym ? -1 : y->d[d].n, s0;
        bool at0 = cv_k_is_const(start[d], &s0) && s0 == 0;
        /* a symbolic axis is whole when the result keeps the same dim */
        bool same = yd >= 0 ? yd == x->sdim[d] : cv_dim_equal(y->d[d], xsh->d[d]);
        bool whole = at0 && step[d] == 1 && same;
        if (!whole)
            a = d;
    }
    if (a < 0)
        return true;
    if (step[a] != 1 && y->d[a].n != 1)
        return false;
    for (int d = 0; d < a; d++)
        if (y->d[d].sym || y->d[d].n != 1)
            return false;
    return true;
}

/* Result `res` = the part of operand 0 at start[] with steps step[]: a view
 * when contiguous, else a strided copy. */
static int part_of(cv_codegen_ctx *c, int res, const cv_kten *x, const cv_kexpr *const *start,
                   const int64_t *step)
{
    const cv_kexpr *xs[CV_MAX_RANK], *st[CV_MAX_RANK], *off = cv_k_i64(c, 0);
    strides_of(c, x, xs);
    for (int d = 0; d < x->rank; d++) {
        off = cv_k_add(c, off, cv_k_mul(c, start[d], xs[d]));
        st[d] = cv_k_mul(c, cv_k_i64(c, step[d]), xs[d]);
    }
    if (contiguous_part(x, &c->op->operands[0]->type.shape, &c->op->results[res]->type.shape,
                        start, step))
        return cv_cg_view(c, res, 0, off);
    cv_kten y = cv_cg_out(c, res);
    strided_copy(c, &y, x, st, off);
    return 0;
}

/* ONNX Slice's first index on one axis of extent d (as the reference
 * kernel), computed at run time when d is symbolic. */
static const cv_kexpr *slice_axis(cv_codegen_ctx *c, const cv_kexpr *d, int64_t start,
                                  int64_t step)
{
    const cv_kexpr *s = cv_k_i64(c, start), *zero = cv_k_i64(c, 0);
    if (start < 0)
        s = cv_k_add(c, s, d);
    const cv_kexpr *hi = step > 0 ? d : cv_k_sub(c, d, cv_k_i64(c, 1));
    return cv_k_max(c, zero, cv_k_min(c, cv_k_max(c, s, zero), hi));
}

int cv_cg_slice(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0);
    int64_t st[CV_MAX_RANK + 1], en[CV_MAX_RANK + 1], ax[CV_MAX_RANK + 1], sp[CV_MAX_RANK + 1];
    int n = cv_op_ints(c->op, "starts", st, CV_MAX_RANK + 1);
    cv_op_ints(c->op, "ends", en, CV_MAX_RANK + 1);
    int na = cv_op_ints(c->op, "axes", ax, CV_MAX_RANK + 1);
    int ns = cv_op_ints(c->op, "steps", sp, CV_MAX_RANK + 1);
    const cv_kexpr *start[CV_MAX_RANK];
    int64_t step[CV_MAX_RANK];
    for (int d = 0; d < x.rank; d++) {
        step[d] = 1;
        start[d] = cv_k_i64(c, 0);
    }
    for (int i = 0; i < n; i++) {
        int a = (int)(na >= 0 ? (ax[i] < 0 ? ax[i] + x.rank : ax[i]) : i);
        step[a] = ns >= 0 ? sp[i] : 1;
        start[a] = slice_axis(c, x.dim[a], st[i], step[a]);
    }
    return part_of(c, 0, &x, start, step);
}

int cv_cg_split(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0);
    int64_t a = cv_op_int(c->op, "axis", 0), sizes[64];
    int axis = (int)(a < 0 ? a + x.rank : a);
    int n = cv_op_ints(c->op, "sizes", sizes, 64);
    const cv_kexpr *start[CV_MAX_RANK];
    int64_t step[CV_MAX_RANK];
    for (int d = 0; d < x.rank; d++) {
        step[d] = 1;
        start[d] = cv_k_i64(c, 0);
    }
    int64_t at = 0;
    for (int k = 0; k < n && k < c->op->n_results; k++) {
        start[axis] = cv_k_i64(c, at);
        if (part_of(c, k, &x, start, step))
            return -1;
        at += sizes[k];
    }
    return 0;
}

int cv_cg_concat(cv_codegen_ctx *c)
{
    cv_kten y = cv_cg_out(c, 0);
    int64_t a = cv_op_int(c->op, "axis", 0);
    int axis = (int)(a < 0 ? a + y.rank : a);
    const cv_kexpr *outer = cv_k_numel(c, &y, 0, axis), *inner = cv_k_numel(c, &y, axis + 1, y.rank);
    const cv_kexpr *row = cv_k_mul(c, y.dim[axis], inner), *at = cv_k_i64(c, 0);
    for (int k = 0; k < c->op->n_operands; k++) {
        cv_kten x = cv_cg_in(c, k);
        const cv_kexpr *chunk = cv_k_mul(c, x.dim[axis], inner);
        const cv_kexpr *p = cv_k_begin(c, "concat", outer, NULL);
        const cv_kexpr *j = cv_k_for(c, cv_k_i64(c, 0), chunk, CV_KFOR_INNER);
        const cv_kexpr *dst = cv_k_add(c, cv_k_add(c, cv_k_mul(c, p, row), cv_k_mul(c, at, inner)), j);
        cv_k_store(c, &y, dst, cv_k_load(c, &x, cv_k_add(c, cv_k_mul(c, p, chunk), j)));
        cv_k_close(c);
        cv_k_end(c);
        at = cv_k_add(c, at, x.dim[axis]);
    }
    return 0;
}

/* Indices out of range are clamped (the interpreter reports CV3012; compiled
 * code must stay inside its buffers). */
int cv_cg_gather(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), ix = cv_cg_in(c, 1), y = cv_cg_out(c, 0);
    int64_t a = cv_op_int(c->op, "axis", 0);
    int axis = (int)(a < 0 ? a + x.rank : a);
    const cv_kexpr *outer = cv_k_numel(c, &x, 0, axis), *inner = cv_k_numel(c, &x, axis + 1, x.rank);
    const cv_kexpr *d = x.dim[axis], *nidx = cv_k_numel(c, &ix, 0, ix.rank), *zero = cv_k_i64(c, 0);
    const cv_kexpr *p = cv_k_begin(c, "gather", cv_k_mul(c, outer, nidx), NULL);
    const cv_kexpr *o = cv_k_div(c, p, nidx), *k = cv_k_rem(c, p, nidx);
    const cv_kexpr *i = cv_k_load(c, &ix, k);
    i = cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, i, zero), cv_k_add(c, i, d), i);
    i = cv_k_local(c, cv_k_max(c, zero, cv_k_min(c, i, cv_k_sub(c, d, cv_k_i64(c, 1)))));
    const cv_kexpr *src = cv_k_mul(c, cv_k_add(c, cv_k_mul(c, o, d), i), inner);
    const cv_kexpr *j = cv_k_for(c, zero, inner, CV_KFOR_INNER);
    cv_k_store(c, &y, cv_k_add(c, cv_k_mul(c, p, inner), j), cv_k_load(c, &x, cv_k_add(c, src, j)));
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* Source coordinate of padded position q on an axis of extent d, and
 * whether it exists (constant mode: only inside). */
static const cv_kexpr *pad_source(cv_codegen_ctx *c, const char *mode, const cv_kexpr *q,
                                  const cv_kexpr *d, const cv_kexpr **valid)
{
    const cv_kexpr *zero = cv_k_i64(c, 0), *last = cv_k_sub(c, d, cv_k_i64(c, 1));
    const cv_kexpr *inside = cv_k_bin(c, CV_KOP_AND, cv_k_cmp(c, CV_KOP_GE, q, zero),
                                      cv_k_cmp(c, CV_KOP_LT, q, d));
    if (strcmp(mode, "constant") == 0) {
        *valid = inside;
        return cv_k_select(c, inside, q, zero);
    }
    *valid = cv_k_bool(c, true);
    const cv_kexpr *edge = cv_k_max(c, zero, cv_k_min(c, q, last));
    if (strcmp(mode, "edge") == 0)
        return edge;
    /* reflect without repeating the edge; period 2(d-1) */
    const cv_kexpr *period = cv_k_max(c, cv_k_mul(c, cv_k_i64(c, 2), last), cv_k_i64(c, 1));
    const cv_kexpr *r = cv_k_rem(c, q, period);
    r = cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, r, zero), cv_k_add(c, r, period), r);
    r = cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, r, d), r, cv_k_sub(c, period, r));
    return cv_k_select(c, cv_k_cmp(c, CV_KOP_EQ, d, cv_k_i64(c, 1)), edge, r);
}

int cv_cg_pad(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    int64_t pads[2 * CV_MAX_RANK + 1];
    cv_op_ints(c->op, "pads", pads, 2 * CV_MAX_RANK + 1);
    const char *mode = cv_op_string(c->op, "mode", "constant");
    int r = y.rank;
    const cv_kexpr *xs[CV_MAX_RANK];
    strides_of(c, &x, xs);
    const cv_kexpr *n = cv_k_numel(c, &y, 0, r);
    const cv_kexpr *p = cv_k_begin(c, "pad", n, cv_k_i64(c, 4096));
    const cv_kexpr *q = p, *src = cv_k_i64(c, 0), *ok = cv_k_bool(c, true);
    for (int d = r - 1; d >= 0; d--) {
        const cv_kexpr *coord = d ? cv_k_rem(c, q, y.dim[d]) : q, *valid;
        q = cv_k_div(c, q, y.dim[d]);
        const cv_kexpr *s = pad_source(c, mode, cv_k_sub(c, coord, cv_k_i64(c, pads[d])), x.dim[d], &valid);
        src = cv_k_add(c, src, cv_k_mul(c, s, xs[d]));
        ok = cv_k_bin(c, CV_KOP_AND, ok, valid);
    }
    const cv_kexpr *v = cv_k_load(c, &x, cv_k_select(c, ok, src, cv_k_i64(c, 0)));
    const cv_kexpr *fill = cv_k_convert(c, cv_k_f64(c, cv_op_float(c->op, "value", 0.0)), x.dtype);
    cv_k_store(c, &y, p, cv_k_select(c, ok, v, fill));
    cv_k_end(c);
    return 0;
}
