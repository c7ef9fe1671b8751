/* ONNX ops that place or pick elements by computed positions, built from
 * one-hot masks like onnx_lower_select.c: ScatterElements (and the older
 * Scatter), ScatterND, GatherND (a gather of linearised positions), TopK
 * (each element's rank among its neighbours along the axis), and Compress
 * (its condition known at import time: a gather of constant indices),
 * ReverseSequence (its lengths known) and MaxUnpool.  The masks cost (index count) x
 * (extent) elements, so they are refused beyond ONNX_CONST_MAX_NUMEL. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static cv_value *cast_to(onnx_ctx *c, cv_value *x, cv_dtype dt)
{
    if (!x || x->type.dtype == dt)
        return x;
    cv_op *o = onnx_op(c, "cast", &x, 1);
    if (o)
        cv_op_set_dtype(o, "to", dt);
    return onnx_finish(c, o);
}

/* Indices below zero count from the end of an extent n (a scalar or a
 * tensor that broadcasts against idx). */
static cv_value *wrap_negative(onnx_ctx *c, cv_value *idx, cv_value *n)
{
    cv_value *neg = onnx_binary(c, "less", idx, onnx_scalar(c, CV_I64, 0));
    return onnx_where(c, neg, onnx_binary(c, "add", idx, n), idx);
}

/* A one-hot mask of a * b elements stays within the import's budget. */
static int onehot_fits(onnx_ctx *c, int64_t a, int64_t b)
{
    int64_t n;
    if (a >= 0 && b >= 0 && cv_mul_i64(a, b, &n) && n <= ONNX_CONST_MAX_NUMEL)
        return 0;
    return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "the one-hot lowering would need a mask of %lld x "
                    "%lld elements (at most %d)", (long long)a, (long long)b, ONNX_CONST_MAX_NUMEL);
}

static int64_t numel_of(const cv_value *v)
{
    int64_t n = cv_shape_numel(&v->type.shape);
    return n < 0 ? INT64_MAX : n;
}

enum { RED_NONE, RED_ADD, RED_MUL };

static int reduction_attr(onnx_ctx *c, int *out)
{
    const char *r;
    if (onnx_attr_string(c, "reduction", "none", &r) < 0)
        return -1;
    *out = !strcmp(r, "add") ? RED_ADD : !strcmp(r, "mul") ? RED_MUL : RED_NONE;
    if (*out == RED_NONE && strcmp(r, "none"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "reduction '%s' is not supported", r);
    return 0;
}

/* The scatter core: hit has the update axis at `along` and the data axis
 * right after it; upd is broadcastable to hit's shape with the data axis 1.
 * Returns data with the hit positions replaced, added to or multiplied. */
static cv_value *scatter_core(onnx_ctx *c, cv_value *data, cv_value *hit, cv_value *upd,
                              int64_t along, int red)
{
    cv_dtype dt = data->type.dtype;
    cv_value *placed = onnx_where(c, hit, upd, onnx_scalar(c, dt, red == RED_MUL ? 1 : 0));
    if (red == RED_MUL) {
        cv_op *o = placed ? onnx_op(c, "reduce_prod", &placed, 1) : NULL;
        if (o) {
            cv_op_set_ints(o, "axes", &along, 1);
            cv_op_set_int(o, "keepdims", 0);
        }
        return onnx_binary(c, "mul", data, onnx_finish(c, o));
    }
    cv_value *sum = onnx_sum_axis(c, placed, along, 0);
    if (red == RED_ADD)
        return onnx_binary(c, "add", data, sum);
    cv_value *count = onnx_sum_axis(c, onnx_where(c, hit, onnx_scalar(c, CV_I64, 1),
                                                  onnx_scalar(c, CV_I64, 0)), along, 0);
    cv_value *any = onnx_binary(c, "greater", count, onnx_scalar(c, CV_I64, 0));
    return onnx_where(c, any, sum, data);
}

/* data[.., idx[.., i, ..], ..] = upd[.., i, ..] along axis: one-hot over a
 * new data axis after `axis`, then a sum over the update axis. */
static int lower_scatter_elements(onnx_ctx *c)
{
    int64_t axis_attr, n;
    int axis, red = RED_NONE;
    cv_value *data = onnx_in_value(c, 0), *idx = cast_to(c, onnx_in_value(c, 1), CV_I64);
    cv_value *upd = onnx_in_value(c, 2);
    if (!data || !idx || !upd || onnx_attr_int(c, "axis", 0, &axis_attr) < 0 ||
        (strcmp(c->node->op_type, "Scatter") && reduction_attr(c, &red) < 0))
        return -1;
    int r = data->type.shape.rank;
    if (onnx_norm_axis(c, axis_attr, r, &axis) < 0 || onnx_static_extent(c, data, axis, &n) < 0 ||
        onehot_fits(c, numel_of(upd), n) < 0)
        return -1;
    bool same = idx->type.shape.rank == r && r + 1 <= CV_MAX_RANK;
    for (int i = 0; same && i < r; i++)
        same = i == axis || cv_dim_equal(idx->type.shape.d[i], data->type.shape.d[i]);
    if (!same)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "indices must match the data's shape except "
                        "along the axis");
    idx = wrap_negative(c, idx, onnx_scalar(c, CV_I64, (double)n));
    int64_t after = axis + 1;
    cv_value *hit = onnx_binary(c, "equal", onnx_op_ints(c, "unsqueeze", idx, "axes", &after, 1),
                                onnx_iota(c, CV_I64, r + 1, axis + 1, n));
    upd = onnx_op_ints(c, "unsqueeze", upd, "axes", &after, 1);
    return onnx_bind_value(c, 0, hit && upd ? scatter_core(c, data, hit, upd, axis, red) : NULL);
}

/* The static dims of v, or a report. */
static int static_dims(onnx_ctx *c, const cv_value *v, int64_t *dims)
{
    for (int i = 0; i < v->type.shape.rank; i++)
        if (onnx_static_extent(c, v, i, &dims[i]) < 0)
            return -1;
    return 0;
}

/* Linear positions of the index tuples idx[..., k] in dims[0..k) (row
 * major), negative components wrapped: shape idx.shape[:-1]. */
static cv_value *linearise(onnx_ctx *c, cv_value *idx, const int64_t *dims, int k)
{
    int64_t one = k;
    onnx_const *ext = onnx_const_new(c, CV_I64, 1, &one), *st = onnx_const_new(c, CV_I64, 1, &one);
    int64_t s = 1;
    for (int i = k - 1; ext && st && i >= 0; i--) {
        onnx_const_set_i64(ext, i, dims[i]);
        onnx_const_set_i64(st, i, s);
        s *= dims[i];
    }
    idx = wrap_negative(c, idx, onnx_const_value(c, ext, "extent"));
    cv_value *lin = onnx_binary(c, "mul", idx, onnx_const_value(c, st, "strides"));
    return lin ? onnx_sum_axis(c, lin, lin->type.shape.rank - 1, 0) : NULL;
}

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

/* ScatterND on data viewed as [N, rest...] with M index tuples. */
static int lower_scatter_nd(onnx_ctx *c)
{
    int red;
    cv_value *data = onnx_in_value(c, 0), *idx = cast_to(c, onnx_in_value(c, 1), CV_I64);
    cv_value *upd = onnx_in_value(c, 2);
    int64_t dd[CV_MAX_RANK], id[CV_MAX_RANK];
    if (!data || !idx || !upd || reduction_attr(c, &red) < 0 || static_dims(c, data, dd) < 0 ||
        static_dims(c, idx, id) < 0)
        return -1;
    int r = data->type.shape.rank, q = idx->type.shape.rank, k = q ? (int)id[q - 1] : 0;
    if (q < 1 || k < 1 || k > r || r - k + 2 > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "index tuples of length %d do not fit rank %d", k,
                        r);
    int64_t m = prod(id, 0, q - 1), n = prod(dd, 0, k), flat[CV_MAX_RANK], hitd[CV_MAX_RANK];
    if (onehot_fits(c, numel_of(upd), n) < 0)
        return -1;
    int rr = r - k + 2;   /* [M, N, rest...] */
    flat[0] = n;
    hitd[0] = m;
    hitd[1] = n;
    for (int i = k; i < r; i++) {
        flat[i - k + 1] = dd[i];
        hitd[i - k + 2] = 1;
    }
    int64_t col[2] = {m, 1};
    cv_value *lin = onnx_op_ints(c, "reshape", linearise(c, idx, dd, k), "shape", col, 2);
    cv_value *hit = onnx_binary(c, "equal", lin, onnx_iota(c, CV_I64, 2, 1, n));
    hit = onnx_op_ints(c, "reshape", hit, "shape", hitd, rr);
    int64_t ud[CV_MAX_RANK] = {m, 1};
    for (int i = k; i < r; i++)
        ud[i - k + 2] = dd[i];
    upd = onnx_op_ints(c, "reshape", upd, "shape", ud, rr);
    cv_value *df = onnx_op_ints(c, "reshape", data, "shape", flat, r - k + 1);
    cv_value *out = hit && upd && df ? scatter_core(c, df, hit, upd, 0, red) : NULL;
    return onnx_bind_value(c, 0, onnx_op_ints(c, "reshape", out, "shape", dd, r));
}

/* GatherND: a gather along axis 0 of data viewed as [B*N, rest...] at the
 * linear positions of the index tuples (plus each batch's offset). */
static int lower_gather_nd(onnx_ctx *c)
{
    int64_t b;
    cv_value *data = onnx_in_value(c, 0), *idx = cast_to(c, onnx_in_value(c, 1), CV_I64);
    int64_t dd[CV_MAX_RANK], id[CV_MAX_RANK];
    if (!data || !idx || onnx_attr_int(c, "batch_dims", 0, &b) < 0 ||
        static_dims(c, data, dd) < 0 || static_dims(c, idx, id) < 0)
        return -1;
    int r = data->type.shape.rank, q = idx->type.shape.rank, k = q ? (int)id[q - 1] : 0;
    if (b < 0 || q < 1 || b >= q || k < 1 || b + k > r)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "index tuples of length %d with %lld batch dims "
                        "do not fit rank %d", k, (long long)b, r);
    int nb = (int)b;
    int64_t n = prod(dd, nb, nb + k), flat[CV_MAX_RANK];
    flat[0] = prod(dd, 0, nb) * n;
    for (int i = nb + k; i < r; i++)
        flat[i - nb - k + 1] = dd[i];
    cv_value *lin = linearise(c, idx, dd + nb, k);
    if (nb > 0) {   /* batch j starts at j * n */
        int64_t od[CV_MAX_RANK];
        for (int i = 0; i < q - 1; i++)
            od[i] = i < nb ? id[i] : 1;
        onnx_const *off = onnx_const_new(c, CV_I64, q - 1, od);
        for (int64_t j = 0; off && j < off->numel; j++)
            onnx_const_set_i64(off, j, j * n);
        lin = onnx_binary(c, "add", lin, onnx_const_value(c, off, "batch_offset"));
    }
    cv_value *ops[2] = {onnx_op_ints(c, "reshape", data, "shape", flat, r - nb - k + 1), lin};
    cv_op *o = onnx_op(c, "gather", ops, 2);
    if (o)
        cv_op_set_int(o, "axis", 0);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* TopK: rank_i = #{j : x_j beats x_i} (beats: larger, or equal and
 * earlier), then output k picks the element of rank k. */
static int lower_topk(onnx_ctx *c)
{
    int64_t axis_attr, largest, n, kk;
    int axis;
    cv_value *x = onnx_in_value(c, 0);
    const onnx_const *kc = onnx_in_const(c, 1, "k");
    if (!x || !kc || onnx_attr_int(c, "axis", -1, &axis_attr) < 0 ||
        onnx_attr_int(c, "largest", 1, &largest) < 0 || onnx_const_ints(kc, &kk, 1) != 1)
        return x && kc ? onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "k must be one known integer") : -1;
    int r = x->type.shape.rank;
    if (onnx_norm_axis(c, axis_attr, r, &axis) < 0 || onnx_static_extent(c, x, axis, &n) < 0 ||
        onehot_fits(c, numel_of(x), n) < 0)
        return -1;
    if (kk < 0 || kk > n || r + 1 > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "k = %lld is outside 0..%lld", (long long)kk,
                        (long long)n);
    int64_t a0 = axis, a1 = axis + 1, md[CV_MAX_RANK];
    cv_value *xi = onnx_op_ints(c, "unsqueeze", x, "axes", &a1, 1);   /* [.., n, 1, ..] */
    cv_value *xj = onnx_op_ints(c, "unsqueeze", x, "axes", &a0, 1);   /* [.., 1, n, ..] */
    for (int i = 0; i <= r; i++)
        md[i] = i == axis || i == axis + 1 ? n : 1;
    onnx_const *earlier = onnx_const_new(c, CV_I64, r + 1, md);   /* j < i */
    for (int64_t i = 0; earlier && i < n * n; i++)
        onnx_const_set_i64(earlier, i, i % n < i / n);
    cv_value *zero = onnx_scalar(c, CV_I64, 0), *one = onnx_scalar(c, CV_I64, 1);
    cv_value *beats = onnx_where(c, onnx_binary(c, largest ? "greater" : "less", xj, xi), one,
                                 onnx_where(c, onnx_binary(c, "equal", xj, xi),
                                            onnx_const_value(c, earlier, "earlier"), zero));
    cv_value *rank = onnx_sum_axis(c, beats, axis + 1, 0);                 /* like x */
    cv_value *hit = onnx_binary(c, "equal", onnx_op_ints(c, "unsqueeze", rank, "axes", &a0, 1),
                                onnx_iota(c, CV_I64, r + 1, axis, kk));      /* [.., K, n, ..] */
    cv_value *vals = onnx_where(c, hit, xj, onnx_scalar(c, x->type.dtype, 0));
    cv_value *pos = onnx_where(c, hit, onnx_iota(c, CV_I64, r + 1, axis + 1, n), zero);
    int rc = onnx_bind_value(c, 0, onnx_sum_axis(c, vals, axis + 1, 0));
    return rc | onnx_bind_value(c, 1, onnx_sum_axis(c, pos, axis + 1, 0));
}

/* Compress with a known condition: a gather of the selected positions. */
static int lower_compress(onnx_ctx *c)
{
    int64_t axis_attr, n;
    int axis = 0;
    bool flat = onnx_attr(c, "axis") == NULL;
    cv_value *x = onnx_in_value(c, 0);
    const onnx_const *cond = onnx_in_const(c, 1, "condition");
    if (!x || !cond || onnx_attr_int(c, "axis", 0, &axis_attr) < 0)
        return -1;
    if (flat) {
        int64_t all[CV_MAX_RANK], numel;
        if (static_dims(c, x, all) < 0)
            return -1;
        numel = prod(all, 0, x->type.shape.rank);
        x = onnx_op_ints(c, "reshape", x, "shape", &numel, 1);
    } else if (onnx_norm_axis(c, axis_attr, x->type.shape.rank, &axis) < 0) {
        return -1;
    }
    if (!x || onnx_static_extent(c, x, axis, &n) < 0)
        return -1;
    int64_t count = 0;
    for (int64_t i = 0; i < cond->numel && i < n; i++)
        count += onnx_const_f64(cond, i) != 0;
    onnx_const *pick = onnx_const_new(c, CV_I64, 1, &count);
    for (int64_t i = 0, j = 0; pick && i < cond->numel && i < n; i++)
        if (onnx_const_f64(cond, i) != 0)
            onnx_const_set_i64(pick, j++, i);
    cv_value *ops[2] = {x, onnx_const_value(c, pick, "picked")};
    cv_op *o = onnx_op(c, "gather", ops, 2);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ReverseSequence: out[t, b] = x[len[b] - 1 - t, b] for t < len[b], else
 * x[t, b], as a one-hot mask over (output time, source time, batch). */
static int lower_reverse_sequence(onnx_ctx *c)
{
    int64_t ta, ba, dims[CV_MAX_RANK], md[CV_MAX_RANK];
    cv_value *x = onnx_in_value(c, 0);
    const onnx_const *lens = onnx_in_const(c, 1, "sequence_lens");
    if (!x || !lens || onnx_attr_int(c, "time_axis", 0, &ta) < 0 ||
        onnx_attr_int(c, "batch_axis", 1, &ba) < 0 || static_dims(c, x, dims) < 0)
        return -1;
    int r = x->type.shape.rank;
    if (r < 2 || r + 1 > CV_MAX_RANK || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "time_axis and batch_axis must be 0 and 1");
    int64_t t_n = dims[ta], b_n = dims[ba];
    if (lens->numel != b_n || onehot_fits(c, numel_of(x), t_n) < 0)
        return lens->numel != b_n ? onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "sequence_lens needs %lld "
                                             "values", (long long)b_n) : -1;
    for (int i = 0; i <= r; i++)
        md[i] = i == 0 ? t_n : i == 1 + ta ? t_n : i == 1 + ba ? b_n : 1;
    onnx_const *m = onnx_const_new(c, CV_BOOL, r + 1, md);
    for (int64_t t = 0; m && t < t_n; t++)
        for (int64_t s = 0; s < t_n; s++)
            for (int64_t b = 0; b < b_n; b++) {
                int64_t len = onnx_const_i64(lens, b), src = t < len ? len - 1 - t : t;
                int64_t at = ta == 0 ? (t * t_n + s) * b_n + b : (t * b_n + b) * t_n + s;
                onnx_const_set_i64(m, at, s == src);
            }
    int64_t zero = 0;
    cv_value *picked = onnx_where(c, onnx_const_value(c, m, "reverse"),
                                  onnx_op_ints(c, "unsqueeze", x, "axes", &zero, 1),
                                  onnx_scalar(c, x->type.dtype, 0));
    cv_value *y = onnx_sum_axis(c, picked, 1 + ta, 0);   /* [T, B, rest...] */
    if (ta == 1 && y) {
        int64_t perm[CV_MAX_RANK];
        for (int i = 0; i < r; i++)
            perm[i] = i < 2 ? 1 - i : i;
        y = onnx_op_ints(c, "transpose", y, "perm", perm, r);
    }
    return onnx_bind_value(c, 0, y);
}

/* MaxUnpool: the values go to their MaxPool positions (flat indices into
 * the default unpooled shape), re-linearised into the output shape, which
 * may be larger (output_shape pads at the end). */
static int lower_max_unpool(onnx_ctx *c)
{
    int64_t xd[CV_MAX_RANK], ks[CV_MAX_RANK], st[CV_MAX_RANK], pads[2 * CV_MAX_RANK];
    int64_t def[CV_MAX_RANK], out[CV_MAX_RANK];
    cv_value *x = onnx_in_value(c, 0), *idx = cast_to(c, onnx_in_value(c, 1), CV_I64);
    if (!x || !idx || static_dims(c, x, xd) < 0)
        return -1;
    int r = x->type.shape.rank, sp = r - 2;
    int nk = onnx_attr_ints(c, "kernel_shape", ks, CV_MAX_RANK);
    int ns = onnx_attr_ints(c, "strides", st, CV_MAX_RANK);
    int np = onnx_attr_ints(c, "pads", pads, 2 * CV_MAX_RANK);
    if (nk == -2 || ns == -2 || np == -2)
        return -1;
    if (sp < 1 || nk != sp || (ns >= 0 && ns != sp) || (np >= 0 && np != 2 * sp))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "kernel_shape, strides and pads need %d spatial "
                        "entries", sp);
    for (int i = 0; i < r; i++) {
        int s = i - 2;
        def[i] = s < 0 ? xd[i] : (xd[i] - 1) * (ns >= 0 ? st[s] : 1) + ks[s] -
                                 (np >= 0 ? pads[s] + pads[s + sp] : 0);
        out[i] = def[i];
    }
    if (onnx_in(c, 2)) {
        const onnx_const *os = onnx_in_const(c, 2, "output_shape");
        if (!os || onnx_const_ints(os, out, CV_MAX_RANK) != r)
            return os ? onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "output_shape needs %d values", r) : -1;
    }
    int64_t n_out = prod(out, 0, r), m = numel_of(x);
    for (int i = 0; i < r; i++)
        if (out[i] < def[i])
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "output_shape is smaller than the unpooled "
                            "shape");
    if (onehot_fits(c, m, n_out) < 0)
        return -1;
    /* coordinate i of the default shape, times the output's stride */
    cv_value *lin = NULL;
    int64_t sdef = 1, sout = 1;
    for (int i = r - 1; i >= 0; i--) {
        cv_value *q = onnx_binary(c, "div", idx, onnx_scalar(c, CV_I64, (double)sdef));
        cv_value *hi = onnx_binary(c, "mul", onnx_binary(c, "div", q, onnx_scalar(c, CV_I64,
                                   (double)def[i])), onnx_scalar(c, CV_I64, (double)def[i]));
        cv_value *term = onnx_binary(c, "mul", onnx_binary(c, "sub", q, hi),
                                     onnx_scalar(c, CV_I64, (double)sout));
        lin = lin ? onnx_binary(c, "add", lin, term) : term;
        sdef *= def[i];
        sout *= out[i];
    }
    int64_t col[2] = {m, 1};
    cv_value *hit = onnx_binary(c, "equal", onnx_op_ints(c, "reshape", lin, "shape", col, 2),
                                onnx_iota(c, CV_I64, 2, 1, n_out));
    cv_value *vals = onnx_op_ints(c, "reshape", x, "shape", col, 2);
    cv_value *placed = onnx_where(c, hit, vals, onnx_scalar(c, x->type.dtype, 0));
    cv_value *y = onnx_sum_axis(c, placed, 0, 0);
    return onnx_bind_value(c, 0, onnx_op_ints(c, "reshape", y, "shape", out, r));
}

static const onnx_op_entry entries[] = {
    {"ScatterElements", 11, lower_scatter_elements,
     "cast less add where unsqueeze equal reduce_sum reduce_prod mul greater", 0},
    {"Scatter", 9, lower_scatter_elements,
     "cast less add where unsqueeze equal reduce_sum greater", 0},
    {"ScatterND", 11, lower_scatter_nd,
     "cast less add mul reshape where equal reduce_sum reduce_prod greater", 0},
    {"GatherND", 11, lower_gather_nd, "cast less add mul where reduce_sum reshape gather", 0},
    {"TopK", 10, lower_topk, "unsqueeze greater less equal where reduce_sum", 0x2u},
    {"Compress", 9, lower_compress, "reshape gather", 0x2u},
    {"ReverseSequence", 10, lower_reverse_sequence, "where unsqueeze reduce_sum transpose", 0x2u},
    {"MaxUnpool", 9, lower_max_unpool, "cast div mul sub add reshape equal where reduce_sum", 0x4u},
};

const onnx_op_family onnx_ops_scatter = {entries, sizeof entries / sizeof entries[0]};
