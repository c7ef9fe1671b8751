/* ONNX shape ops (Reshape, Flatten, Squeeze, Unsqueeze, Expand, Transpose,
 * Concat, Split, Slice, Gather, Pad, Tile).  Their shape-like inputs become
 * CU-IR attributes, so they must be known at import time; when the data is
 * known too (shape arithmetic), the op is evaluated here instead. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static onnx_val *data_in(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (!x)
        onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    return x;
}

/* The input's constant when it is small enough to evaluate here. */
static const onnx_const *foldable(const onnx_val *x)
{
    return x && x->c && onnx_foldable(x->c) ? x->c : NULL;
}

static int norm_axis(onnx_ctx *c, int64_t axis, int rank, int *out)
{
    *out = 0;
    if (axis < -rank || axis >= rank || rank == 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %lld is out of range for rank %d",
                        (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* op(x) with one INTS attribute, bound to output 0. */
static int emit_ints_op(onnx_ctx *c, const char *op, const char *attr, const int64_t *v, int n)
{
    cv_value *x = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o && n >= 0)
        cv_op_set_ints(o, attr, v, n);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* op(x) with one DIMS attribute (a target shape holding symbols). */
static int emit_dims_op(onnx_ctx *c, const char *op, const char *attr, const cv_dim *v, int n)
{
    cv_value *x = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o)
        cv_op_set_dims(o, attr, v, n);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ---- Reshape ------------------------------------------------------------- */

static bool static_empty(const cv_shape *s)
{
    for (int i = 0; i < s->rank; i++)
        if (!s->d[i].sym && s->d[i].n == 0)
            return true;
    return false;
}

/* Turns the target shape into CU-IR reshape form: a symbolic element equal
 * to the input's symbol at the same position becomes 0 (copy), and one
 * other unknown may become -1. */
static int reshape_target(onnx_ctx *c, const onnx_val *x, const onnx_const *sk, bool allowzero,
                          int64_t *want)
{
    const cv_shape *in = &x->type.shape;
    if (sk->rank != 1 || !onnx_const_is_int(sk) || sk->numel > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the target shape must be a 1-D integer tensor of "
                        "at most %d entries", CV_MAX_RANK);
    int holes = 0, zeros = 0;
    for (int i = 0; i < sk->numel; i++) {
        const char *sym = sk->syms ? sk->syms[i] : NULL;
        want[i] = onnx_const_i64(sk, i);
        if (sym)
            want[i] = (!allowzero && i < in->rank && in->d[i].sym && !strcmp(in->d[i].sym, sym))
                    ? 0 : -1;
        /* CU-IR's 0 copies the input extent; a literal 0 of an empty input
         * is the one extent -1 can infer (0 elements / the rest). */
        if (want[i] == 0 && allowzero) {
            if (!static_empty(in) || zeros++)
                return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "allowzero=1 with a 0 in the shape "
                                "is supported once, for an input of static extent 0");
            want[i] = -1;
        }
        if (want[i] < -1)
            return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "shape[%d] = %lld is invalid", i,
                            (long long)want[i]);
        holes += want[i] == -1;
    }
    return holes > 1 ? -2 - holes : (int)sk->numel;
}

/* A target shape with several symbolic entries ([N, L, 4, 8] of a
 * [N*L, 32]): the entries stay symbols and expressions in a DIMS attribute,
 * 0 still copies the input extent and a literal -1 still fills. */
static int reshape_symbolic(onnx_ctx *c, const onnx_val *x, const onnx_const *sk, int holes)
{
    cv_dim want[CV_MAX_RANK];
    int fill = 0;
    for (int i = 0; i < sk->numel; i++) {
        want[i] = onnx_const_dim(sk, i);
        fill += !want[i].sym && want[i].n == -1;
        if (!want[i].sym && want[i].n == 0 && i >= x->type.shape.rank)
            fill = 2;
    }
    if (fill > 1)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the target shape has %d entries unknown at "
                        "import time (at most one can be inferred)", holes);
    return emit_dims_op(c, "reshape", "shape", want, (int)sk->numel);
}

/* Static result dims of reshaping k to want[n] (0 copies, -1 fills). */
static int static_reshape(onnx_ctx *c, const onnx_const *k, const int64_t *want, int n,
                          int64_t *dims)
{
    int64_t prod = 1;
    int hole = -1;
    for (int i = 0; i < n; i++) {
        dims[i] = want[i] == 0 && i < k->rank ? k->dims[i] : want[i];
        if (dims[i] == -1)
            hole = i;
        else if (!cv_mul_i64(prod, dims[i], &prod))
            return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the target shape overflows");
    }
    if (hole >= 0)
        dims[hole] = prod ? k->numel / prod : 0;
    int64_t total = 1;
    for (int i = 0; i < n; i++)
        if (!cv_mul_i64(total, dims[i], &total))
            total = -1;
    if (total != k->numel)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "cannot reshape %lld elements to the target shape",
                        (long long)k->numel);
    return 0;
}

static int lower_reshape(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    const onnx_const *sk = onnx_in_const(c, 1, "shape");
    int64_t allowzero, want[CV_MAX_RANK], dims[CV_MAX_RANK];
    if (!x || !sk || onnx_attr_int(c, "allowzero", 0, &allowzero) < 0)
        return -1;
    int n = reshape_target(c, x, sk, allowzero != 0, want);
    if (n < -2 && !allowzero)
        return reshape_symbolic(c, x, sk, -2 - n);
    if (n < -2)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the target shape has %d entries unknown at "
                        "import time (at most one with allowzero=1)", -2 - n);
    if (n < 0)
        return -1;
    const onnx_const *k = foldable(x);
    if (k && !x->v)
        return static_reshape(c, k, want, n, dims) < 0 ? -1
             : onnx_bind_const(c, 0, onnx_fold_reshape(c, k, n, dims));
    return emit_ints_op(c, "reshape", "shape", want, n);
}

static int lower_flatten(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int64_t axis;
    if (!x || onnx_attr_int(c, "axis", 1, &axis) < 0)
        return -1;
    const onnx_const *k = foldable(x);
    if (k && !x->v) {
        int a = (int)(axis < 0 ? axis + k->rank : axis);
        if (a < 0 || a > k->rank)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %lld is out of range", (long long)axis);
        int64_t dims[2] = {1, 1};
        for (int i = 0; i < k->rank; i++)
            dims[i >= a] *= k->dims[i];
        return onnx_bind_const(c, 0, onnx_fold_reshape(c, k, 2, dims));
    }
    cv_value *v = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, "flatten", &v, 1);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ---- Squeeze / Unsqueeze ---------------------------------------------------- */

static int lower_squeeze(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int64_t axes[CV_MAX_RANK];
    int n = onnx_ints_arg(c, 1, "axes", 13, axes, CV_MAX_RANK);
    if (!x || n == -2)
        return -1;
    const onnx_const *k = foldable(x);
    if (k && !x->v) {
        unsigned mask = 0;
        for (int i = 0; i < n; i++) {
            int a;
            if (norm_axis(c, axes[i], k->rank, &a) < 0)
                return -1;
            mask |= 1u << a;
        }
        int64_t dims[CV_MAX_RANK];
        int r = 0;
        for (int i = 0; i < k->rank; i++)
            if (n > 0 ? !(mask & (1u << i)) : k->dims[i] != 1)
                dims[r++] = k->dims[i];
        return onnx_bind_const(c, 0, onnx_fold_reshape(c, k, r, dims));
    }
    return emit_ints_op(c, "squeeze", "axes", axes, n);
}

static int lower_unsqueeze(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int64_t axes[CV_MAX_RANK];
    int n = onnx_ints_arg(c, 1, "axes", 13, axes, CV_MAX_RANK);
    if (!x || n == -2)
        return -1;
    if (n <= 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "'axes' is required");
    const onnx_const *k = foldable(x);
    if (k && !x->v) {
        int r = k->rank + n;
        unsigned mask = 0;
        for (int i = 0; i < n; i++) {
            int a;
            if (r > CV_MAX_RANK || norm_axis(c, axes[i], r, &a) < 0)
                return r > CV_MAX_RANK ? onnx_err(c, CV_E_ONNX_RANK_LIMIT, "rank above %d", CV_MAX_RANK)
                                       : -1;
            mask |= 1u << a;
        }
        int64_t dims[CV_MAX_RANK];
        for (int i = 0, j = 0; i < r; i++)
            dims[i] = (mask & (1u << i)) ? 1 : k->dims[j++];
        return onnx_bind_const(c, 0, onnx_fold_reshape(c, k, r, dims));
    }
    return emit_ints_op(c, "unsqueeze", "axes", axes, n);
}

/* ---- Expand -------------------------------------------------------------- */

static int lower_expand(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    const onnx_const *sk = onnx_in_const(c, 1, "shape");
    if (!x || !sk)
        return -1;
    if (sk->rank != 1 || !onnx_const_is_int(sk) || sk->numel > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the shape must be a 1-D integer tensor of at most "
                        "%d entries", CV_MAX_RANK);
    int n = (int)sk->numel, off = n - x->type.shape.rank;
    int64_t want[CV_MAX_RANK];
    cv_dim dims_want[CV_MAX_RANK];
    bool new_sym = false;
    for (int i = 0; i < n; i++) {
        const char *sym = sk->syms ? sk->syms[i] : NULL;
        const cv_dim *d = i - off >= 0 ? &x->type.shape.d[i - off] : NULL;
        want[i] = onnx_const_i64(sk, i);
        dims_want[i] = onnx_const_dim(sk, i);
        new_sym |= sym && !(d && d->sym && !strcmp(d->sym, sym));
        if (sym)
            want[i] = 1;   /* broadcasting keeps the input's symbol */
    }
    if (new_sym)   /* a symbolic extent the input lacks: a DIMS attribute */
        return emit_dims_op(c, "expand", "shape", dims_want, n);
    const onnx_const *k = foldable(x);
    int r;
    int64_t dims[CV_MAX_RANK], numel = 1;
    if (k && !x->v && onnx_broadcast_dims(k->rank, k->dims, n, want, &r, dims) == 0) {
        for (int i = 0; i < r && numel <= (1 << 16); i++)
            numel *= dims[i] < (1 << 20) ? dims[i] : (1 << 20);
        if (numel <= (1 << 16))   /* small: shape arithmetic, evaluated here */
            return onnx_bind_const(c, 0, onnx_fold_expand(c, k, r, dims));
    }
    return emit_ints_op(c, "expand", "shape", want, n);
}

/* ---- Transpose ----------------------------------------------------------- */

static int lower_transpose(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int64_t perm[CV_MAX_RANK];
    int n = onnx_attr_ints(c, "perm", perm, CV_MAX_RANK);
    if (!x || n == -2)
        return -1;
    int rank = x->type.shape.rank;
    if (n < 0)
        for (n = 0; n < rank; n++)
            perm[n] = rank - 1 - n;
    const onnx_const *k = foldable(x);
    if (k && !x->v && n == k->rank) {
        int64_t st[CV_MAX_RANK], own[CV_MAX_RANK], dims[CV_MAX_RANK], s = 1;
        for (int a = k->rank - 1; a >= 0; a--, s *= k->dims[a + 1])
            own[a] = s;
        for (int a = 0; a < n; a++) {
            if (perm[a] < 0 || perm[a] >= n)
                return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "perm[%d] is out of range", a);
            dims[a] = k->dims[perm[a]];
            st[a] = own[perm[a]];
        }
        return onnx_bind_const(c, 0, onnx_fold_view(c, k, n, dims, st, 0));
    }
    return emit_ints_op(c, "transpose", "perm", perm, n);
}

/* ---- Concat, Split ------------------------------------------------------- */

static int lower_concat(onnx_ctx *c)
{
    int n = onnx_n_in(c);
    int64_t axis;
    if (onnx_attr_int(c, "axis", 0, &axis) < 0)
        return -1;
    if (!onnx_attr(c, "axis"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute 'axis' is required");
    if (n < 1 || n > 256)
        return onnx_err(c, CV_E_ONNX_ARITY, "needs 1 to 256 inputs, has %d", n);
    const onnx_const *ks[256];
    bool all_const = true;
    for (int i = 0; i < n; i++) {
        onnx_val *v = onnx_in(c, i);
        if (!v)
            return onnx_err(c, CV_E_ONNX_ARITY, "input %d is missing", i);
        ks[i] = foldable(v);
        all_const &= ks[i] && !v->v;
    }
    if (all_const) {
        int a;
        if (norm_axis(c, axis, ks[0]->rank, &a) < 0)
            return -1;
        onnx_const *k = onnx_fold_concat(c, ks, n, a);
        if (!k)
            return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "inputs do not concatenate");
        return onnx_bind_const(c, 0, k);
    }
    cv_value *vals[256];
    for (int i = 0; i < n; i++)
        vals[i] = onnx_in_value(c, i);
    cv_op *o = onnx_op(c, "concat", vals, n);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* Split sizes: the 'split' attribute (< 13) or input (>= 13), else equal
 * parts (opset 18's num_outputs: ceil-sized parts, the last smaller). */
static int split_sizes(onnx_ctx *c, const onnx_val *x, int axis, int n_out, int64_t *sizes)
{
    int n = onnx_ints_arg(c, 1, "split", 13, sizes, 64);
    if (n == -2)
        return -1;
    if (n >= 0) {
        if (n != n_out)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'split' has %d entries for %d outputs", n,
                            n_out);
        return 0;
    }
    cv_dim d = x->type.shape.d[axis];
    if (d.sym)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "equal split of the symbolic axis %s", d.sym);
    int64_t part = d.n / n_out + (d.n % n_out != 0);
    if (c->opset < 18 && d.n % n_out)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "axis extent %lld does not split into %d equal "
                        "parts",
                        (long long)d.n, n_out);
    for (int i = 0; i < n_out; i++) {
        int64_t left = d.n - part * i;
        sizes[i] = left < part ? (left > 0 ? left : 0) : part;
    }
    return 0;
}

static int lower_split(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int n_out = (int)c->node->n_output, a;
    int64_t axis, sizes[64];
    if (!x || onnx_attr_int(c, "axis", 0, &axis) < 0 ||
        norm_axis(c, axis, x->type.shape.rank, &a) < 0)
        return -1;
    if (n_out < 1 || n_out > 64)
        return onnx_err(c, CV_E_ONNX_ARITY, "needs 1 to 64 outputs, has %d", n_out);
    if (split_sizes(c, x, a, n_out, sizes) < 0)
        return -1;
    cv_value *v = onnx_in_value(c, 0), *outs[64];
    cv_op *o = onnx_op(c, "split", &v, 1);
    if (o) {
        cv_op_set_int(o, "axis", a);
        cv_op_set_ints(o, "sizes", sizes, n_out);
    }
    if (onnx_finish_n(c, o, n_out, outs) < 0)
        return -1;
    for (int i = 0; i < n_out; i++)
        onnx_bind_value(c, i, outs[i]);
    return 0;
}

/* ---- Slice ----------------------------------------------------------------- */

typedef struct slice_args {
    int64_t starts[CV_MAX_RANK], ends[CV_MAX_RANK], axes[CV_MAX_RANK], steps[CV_MAX_RANK];
    int n;
    bool has_axes, has_steps;
} slice_args;

static int slice_read(onnx_ctx *c, slice_args *s)
{
    int ns = onnx_ints_arg(c, 1, "starts", 10, s->starts, CV_MAX_RANK);
    int ne = onnx_ints_arg(c, 2, "ends", 10, s->ends, CV_MAX_RANK);
    int na = onnx_ints_arg(c, 3, "axes", 10, s->axes, CV_MAX_RANK);
    int nt = c->opset < 10 ? -1 : onnx_ints_arg(c, 4, "steps", 10, s->steps, CV_MAX_RANK);
    if (ns == -2 || ne == -2 || na == -2 || nt == -2)
        return -1;
    if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nt >= 0 && nt != ns))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "starts, ends, axes and steps must have one entry "
                        "per sliced axis");
    s->n = ns;
    s->has_axes = na >= 0;
    s->has_steps = nt >= 0;
    for (int i = 0; i < ns; i++) {
        if (!s->has_axes)
            s->axes[i] = i;
        if (!s->has_steps)
            s->steps[i] = 1;
        if (s->steps[i] == 0)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "steps[%d] is 0", i);
    }
    return 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ONNX Slice on a constant: a strided view. */
static int slice_fold(onnx_ctx *c, const onnx_const *k, const slice_args *s)
{
    int64_t dims[CV_MAX_RANK], st[CV_MAX_RANK], off = 0, stride = 1;
    for (int a = k->rank - 1; a >= 0; a--) {
        dims[a] = k->dims[a];
        st[a] = stride;
        stride *= k->dims[a];
    }
    for (int i = 0; i < s->n; i++) {
        int a;
        if (norm_axis(c, s->axes[i], k->rank, &a) < 0)
            return -1;
        int64_t d = k->dims[a], step = s->steps[i], b = s->starts[i], e = s->ends[i];
        if (step > d || step < -d)   /* at most one element: keep the stride small */
            step = step > 0 ? (d > 0 ? d : 1) : -(d > 0 ? d : 1);
        b = b < 0 ? b + d : b;
        e = e < 0 ? e + d : e;
        b = step > 0 ? clamp64(b, 0, d) : clamp64(b, 0, d - 1);
        e = step > 0 ? clamp64(e, 0, d) : clamp64(e, -1, d - 1);
        int64_t span = step > 0 ? e - b : b - e, mag = step > 0 ? step : -step;
        dims[a] = span > 0 ? 1 + (span - 1) / mag : 0;
        off += b * st[a];
        st[a] *= step;
    }
    return onnx_bind_const(c, 0, onnx_fold_view(c, k, k->rank, dims, st, off));
}

/* Whether Slice input i (starts, ends) holds a symbol. */
static bool sym_arg(onnx_ctx *c, int i)
{
    onnx_val *v = c->opset >= 10 ? onnx_in(c, i) : NULL;
    if (!v || !v->c || !v->c->syms)
        return false;
    for (int64_t k = 0; k < v->c->numel; k++)
        if (v->c->syms[k])
            return true;
    return false;
}

/* Slice bound b of an axis of extent d as an index in [0, d] where static
 * (negative counts from the end; past the end clamps). */
static int slice_bound(onnx_ctx *c, cv_dim b, cv_dim d, cv_dim *out)
{
    *out = b;
    if (b.sym)
        return 0;
    if (b.n < 0)
        return b.n < -(1LL << 40) ? (*out = (cv_dim){0, NULL}, 0) : cv_dim_add(c->m, d, b, out);
    if (b.n > (1LL << 40) || (!d.sym && b.n > d.n))
        *out = d;
    return 0;
}

/* x[..., b:e, ...] for symbolic b or e (torch's bias[:, :, :T, :T]): a
 * gather by arange(b, max(e - b, 0)) on each such axis (step 1), so the
 * facts pass bounds the symbol by the axis' extent. */
static int slice_symbolic(onnx_ctx *c, onnx_val *x)
{
    const onnx_const *st = onnx_in_const(c, 1, "starts"), *en = onnx_in_const(c, 2, "ends");
    int64_t axes[CV_MAX_RANK], steps[CV_MAX_RANK];
    int na = onnx_ints_arg(c, 3, "axes", 10, axes, CV_MAX_RANK);
    int nt = onnx_ints_arg(c, 4, "steps", 10, steps, CV_MAX_RANK);
    if (!st || !en || na == -2 || nt == -2)
        return -1;
    int n = (int)st->numel, rank = x->type.shape.rank;
    if (st->rank != 1 || en->numel != n || n > CV_MAX_RANK || (na >= 0 && na != n) ||
        (nt >= 0 && nt != n))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "starts, ends, axes and steps must have one entry "
                        "per sliced axis");
    cv_value *v = onnx_in_value(c, 0);
    for (int i = 0; i < n && v; i++) {
        int a;
        cv_dim b = onnx_const_dim(st, i), e = onnx_const_dim(en, i), len;
        int64_t step = nt >= 0 ? steps[i] : 1;
        if (norm_axis(c, na >= 0 ? axes[i] : i, rank, &a) < 0)
            return -1;
        if (step != 1)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "a slice with symbolic bounds must "
                            "have step 1 (axis %d has %lld)", a, (long long)step);
        cv_dim d = v->type.shape.d[a];
        if (slice_bound(c, b, d, &b) || slice_bound(c, e, d, &e) || cv_dim_sub(c->m, e, b, &len))
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the slice's extent is not expressible");
        int cmp = cv_dim_compare(len, (cv_dim){0, NULL});
        if (cmp != CV_DIM_EQ && cmp != CV_DIM_GT && cmp != CV_DIM_GE &&
            cv_dim_arith(c->m, CV_DIM_MAX, len, (cv_dim){0, NULL}, &len))
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the slice's extent is not expressible");
        cv_op *r = onnx_op(c, "arange", NULL, 0);
        if (r) {
            cv_op_set_dims(r, "length", &len, 1);
            cv_op_set_dims(r, "start", &b, 1);
            cv_op_set_dtype(r, "dtype", CV_I64);
        }
        cv_value *ops[2] = {v, onnx_finish(c, r)};
        cv_op *g = ops[1] ? onnx_op(c, "gather", ops, 2) : NULL;
        if (g)
            cv_op_set_int(g, "axis", a);
        v = onnx_finish(c, g);
    }
    return v ? onnx_bind_value(c, 0, v) : -1;
}

static int lower_slice(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    slice_args s;
    if (x && (sym_arg(c, 1) || sym_arg(c, 2)))
        return slice_symbolic(c, x);
    if (!x || slice_read(c, &s) < 0)
        return -1;
    const onnx_const *k = foldable(x);
    if (k && !x->v)
        return slice_fold(c, k, &s);
    cv_value *v = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, "slice", &v, 1);
    if (o) {
        cv_op_set_ints(o, "starts", s.starts, s.n);
        cv_op_set_ints(o, "ends", s.ends, s.n);
        cv_op_set_ints(o, "axes", s.axes, s.n);
        cv_op_set_ints(o, "steps", s.steps, s.n);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ---- Gather, Pad, Tile ------------------------------------------------------ */

static int lower_gather(onnx_ctx *c)
{
    onnx_val *x = data_in(c), *idx = onnx_in(c, 1);
    int64_t axis;
    if (!x || onnx_attr_int(c, "axis", 0, &axis) < 0)
        return -1;
    if (!idx)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 1 (indices) is required");
    const onnx_const *k = foldable(x), *ik = foldable(idx);
    if (k && ik && !x->v) {
        int a;
        if (norm_axis(c, axis, k->rank, &a) < 0)
            return -1;
        onnx_const *r = onnx_fold_gather(c, k, ik, a);
        return r ? onnx_bind_const(c, 0, r) : -1;
    }
    cv_value *ops[2] = {onnx_in_value(c, 0), onnx_in_value(c, 1)};
    cv_op *o = onnx_op(c, "gather", ops, 2);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* Pad's constant value: attribute before opset 11, optional input after. */
static int pad_value(onnx_ctx *c, double *out)
{
    if (c->opset < 11)
        return onnx_attr_float(c, "value", 0, out);
    *out = 0;
    if (!onnx_in(c, 2))
        return 0;
    const onnx_const *k = onnx_in_const(c, 2, "constant_value");
    if (!k || k->numel != 1)
        return k ? onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "constant_value must be a scalar") : -1;
    *out = onnx_const_f64(k, 0);
    return 0;
}

static int lower_pad(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    int64_t pads[2 * CV_MAX_RANK], axes[CV_MAX_RANK], full[2 * CV_MAX_RANK] = {0};
    const char *mode;
    double value;
    int np = onnx_ints_arg(c, 1, "pads", 11, pads, 2 * CV_MAX_RANK);
    int na = c->opset >= 18 ? onnx_ints_arg(c, 3, "axes", 18, axes, CV_MAX_RANK) : -1;
    if (!x || np == -2 || na == -2 || onnx_attr_string(c, "mode", "constant", &mode) < 0 ||
        pad_value(c, &value) < 0)
        return -1;
    int r = x->type.shape.rank;
    if (na < 0)
        for (na = 0; na < r; na++)
            axes[na] = na;
    if (np != 2 * na)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'pads' has %d entries for %d axes", np, na);
    for (int i = 0; i < na; i++) {
        int a;
        if (norm_axis(c, axes[i], r, &a) < 0)
            return -1;
        full[a] = pads[i];
        full[a + r] = pads[i + na];
    }
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "mode '%s' is not supported", mode);
    cv_value *v = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, "pad", &v, 1);
    if (o) {
        cv_op_set_ints(o, "pads", full, 2 * r);
        cv_op_set_string(o, "mode", mode);
        if (value != 0)
            cv_op_set_float(o, "value", value);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* v reshaped or expanded (op) to the dims d[n], which may hold symbols. */
static cv_value *dims_op(onnx_ctx *c, const char *op, cv_value *v, const cv_dim *d, int n)
{
    cv_op *o = onnx_op(c, op, &v, 1);
    if (o)
        cv_op_set_dims(o, "shape", d, n);
    return onnx_finish(c, o);
}

/* Tiling axis a of v r times, r a symbol or expression (torch's
 * x.repeat(y.shape[0], 1)): [.., X, ..] becomes [.., 1, X, ..], expanded
 * to [.., r, X, ..], reshaped to [.., r*X, ..]; an axis of extent 1 is
 * just expanded. */
static cv_value *tile_symbolic(onnx_ctx *c, cv_value *v, int a, cv_dim r)
{
    cv_shape s = v->type.shape;
    cv_dim d[CV_MAX_RANK], prod;
    if (!s.d[a].sym && s.d[a].n == 1) {
        s.d[a] = r;
        return dims_op(c, "expand", v, s.d, s.rank);
    }
    if (s.rank >= CV_MAX_RANK) {
        onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "a symbolic repeat of a rank-%d input (at most "
                 "rank %d)", s.rank, CV_MAX_RANK - 1);
        return NULL;
    }
    for (int i = 0, j = 0; i <= s.rank; i++)
        d[i] = i == a ? (cv_dim){.n = 1} : s.d[j++];
    v = dims_op(c, "reshape", v, d, s.rank + 1);
    d[a] = r;
    v = v ? dims_op(c, "expand", v, d, s.rank + 1) : NULL;
    if (!v || cv_dim_mul(c->m, r, s.d[a], &prod))
        return NULL;
    s.d[a] = prod;
    return dims_op(c, "reshape", v, s.d, s.rank);
}

/* Tile: each repeated axis becomes a concat of copies, or for a symbolic
 * repeat count (a shape value) an expand (tile_symbolic). */
static int lower_tile(onnx_ctx *c)
{
    onnx_val *x = data_in(c);
    const onnx_const *rk = NULL;
    if (!x || (c->opset >= 6 && !(rk = onnx_in_const(c, 1, "repeats"))))
        return -1;
    bool sym = rk && rk->syms;
    int64_t reps[CV_MAX_RANK];
    int n = !sym ? onnx_ints_arg(c, 1, "repeats", 6, reps, CV_MAX_RANK)
        : onnx_const_is_int(rk) && rk->rank == 1 && rk->numel <= CV_MAX_RANK ? (int)rk->numel : -1;
    if (n == -2)
        return -1;
    if (n != x->type.shape.rank)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'repeats' has %d entries for rank %d", n,
                        x->type.shape.rank);
    cv_value *v = onnx_in_value(c, 0), *copies[256];
    for (int a = 0; a < n && v; a++) {
        cv_dim r = sym ? onnx_const_dim(rk, a) : (cv_dim){.n = reps[a]};
        if (r.sym) {
            v = tile_symbolic(c, v, a, r);
            continue;
        }
        if (r.n < 1 || r.n > 256)
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "repeats[%d] = %lld (supported: 1 to 256)",
                            a, (long long)r.n);
        if (r.n == 1)
            continue;
        for (int i = 0; i < r.n; i++)
            copies[i] = v;
        cv_op *o = onnx_op(c, "concat", copies, (int)r.n);
        if (o)
            cv_op_set_int(o, "axis", a);
        v = onnx_finish(c, o);
    }
    return v ? onnx_bind_value(c, 0, v) : -1;
}

static const onnx_op_entry entries[] = {
    {"Reshape", 5, lower_reshape, "reshape", 1u << 1},
    {"Flatten", 1, lower_flatten, "flatten", 0},
    {"Squeeze", 1, lower_squeeze, "squeeze", 1u << 1},
    {"Unsqueeze", 1, lower_unsqueeze, "unsqueeze", 1u << 1},
    {"Expand", 8, lower_expand, "expand", 1u << 1},
    {"Transpose", 1, lower_transpose, "transpose", 0},
    {"Concat", 4, lower_concat, "concat", 0},
    {"Split", 2, lower_split, "split", 1u << 1},
    {"Slice", 1, lower_slice, "slice gather arange", 0x1eu},
    {"Gather", 1, lower_gather, "gather", 0},
    {"Pad", 2, lower_pad, "pad", 0xeu},
    {"Tile", 6, lower_tile, "concat reshape expand", 1u << 1},
};

const onnx_op_family onnx_ops_shape = {entries, sizeof entries / sizeof entries[0]};
