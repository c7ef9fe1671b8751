/* Op family fragment: ops that reorder, cut, join or border data
 * (transpose, concat, split, slice, gather, pad).  Elements move as raw
 * bytes, so every dtype comes through exactly. */
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

/* ---- transpose ----------------------------------------------------------- */

static int read_perm(cv_infer_ctx *c, int rank, int64_t *perm)
{
    int n = cv_op_ints(c->op, "perm", perm, CV_MAX_RANK + 1);
    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return 0;
    }
    unsigned seen = 0;
    bool ok = n == rank;
    for (int i = 0; ok && i < n; i++) {
        ok = perm[i] >= 0 && perm[i] < rank && !(seen & (1u << perm[i]));
        if (ok)
            seen |= 1u << perm[i];
    }
    if (!ok)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "transpose: 'perm' is not a permutation of 0..%d", rank - 1);
    return 0;
}

static int transpose_infer(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    int64_t perm[CV_MAX_RANK + 1];
    if (read_perm(c, in->rank, perm))
        return -1;
    cv_type *o = &c->out[0];
    o->dtype = c->in[0].dtype;
    o->shape.rank = in->rank;
    for (int i = 0; i < in->rank; i++)
        o->shape.d[i] = in->d[perm[i]];
    return 0;
}

static int transpose_eval(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    int64_t perm[CV_MAX_RANK + 1], xs[CV_MAX_RANK], st[CV_MAX_RANK];
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (read_perm(&ic, x->rank, perm))
        return -1;
    cv_strides(x->rank, x->dims, xs);
    for (int i = 0; i < x->rank; i++)
        st[i] = xs[perm[i]];
    cv_nn_copy_strided(c->out[0].data, x->data, cv_dtype_size(x->dtype), x->rank, c->out[0].dims,
                       st, 0);
    return 0;
}

/* ---- concat and split ---------------------------------------------------- */

/* Sum of dims that may be symbolic. */
static int dim_sum(cv_infer_ctx *c, cv_dim a, cv_dim b, cv_dim *out)
{
    return cv_infer_dim(c, CV_DIM_ADD, a, b, out);
}

static int concat_infer(cv_infer_ctx *c)
{
    const cv_shape *s0 = &c->in[0].shape;
    int axis;
    if (cv_infer_axis(c, cv_op_int(c->op, "axis", 0), s0->rank, &axis))
        return -1;
    cv_shape o = *s0;
    char b1[32], b2[32];
    for (int k = 1; k < c->n_in; k++) {
        const cv_shape *s = &c->in[k].shape;
        if (cv_infer_same_dtype(c, 0, k))
            return -1;
        if (s->rank != s0->rank)
            return cv_infer_error(c, CV_E_RANK_MISMATCH, "concat: operand %d has rank %d, operand 0 rank %d", k,
                                  s->rank, s0->rank);
        for (int i = 0; i < s->rank; i++)
            if (i != axis && !cv_dim_equal(s->d[i], s0->d[i]))
                return cv_infer_error(c, CV_E_INVALID_DIMENSION, "concat: operand %d has extent %s on axis %d, "
                                      "operand 0 has %s", k, cv_nn_dim_fmt(s->d[i], b1, sizeof b1),
                                      i, cv_nn_dim_fmt(s0->d[i], b2, sizeof b2));
        if (dim_sum(c, o.d[axis], s->d[axis], &o.d[axis]))
            return -1;
    }
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

/* Bytes per step along `axis` and the number of outer steps. */
static void axis_geometry(const cv_tensor *t, int axis, int64_t *outer, size_t *inner_bytes)
{
    int64_t o = 1, in = 1;
    for (int i = 0; i < axis; i++)
        o *= t->dims[i];
    for (int i = axis + 1; i < t->rank; i++)
        in *= t->dims[i];
    *outer = o;
    *inner_bytes = (size_t)in * cv_dtype_size(t->dtype);
}

/* Copies the axis-blocks of `part` into or out of `whole` at axis offset `at`. */
static void block_copy(const cv_tensor *whole, const cv_tensor *part, int axis, int64_t at,
                       bool into_whole)
{
    int64_t outer;
    size_t inner;
    axis_geometry(whole, axis, &outer, &inner);
    size_t wrow = (size_t)whole->dims[axis] * inner, prow = (size_t)part->dims[axis] * inner;
    unsigned char *w = whole->data, *p = part->data;
    for (int64_t o = 0; o < outer && prow; o++) {
        unsigned char *wp = w + (size_t)o * wrow + (size_t)at * inner, *pp = p + (size_t)o * prow;
        if (into_whole)
            memcpy(wp, pp, prow);
        else
            memcpy(pp, wp, prow);
    }
}

static int concat_eval(cv_eval_ctx *c)
{
    int axis = (int)cv_op_int(c->op, "axis", 0);
    axis = axis < 0 ? axis + c->out[0].rank : axis;
    int64_t at = 0;
    for (int k = 0; k < c->n_in; k++) {
        block_copy(&c->out[0], c->in[k], axis, at, true);
        at += c->in[k]->dims[axis];
    }
    return 0;
}

static int split_infer(cv_infer_ctx *c)
{
    const cv_shape *s = &c->in[0].shape;
    int axis;
    int64_t sizes[64];
    int n = cv_op_ints(c->op, "sizes", sizes, 64);
    if (cv_infer_axis(c, cv_op_int(c->op, "axis", 0), s->rank, &axis))
        return -1;
    if (n != c->n_out)
        return cv_infer_error(c, CV_E_RESULT_COUNT, "split: 'sizes' lists %d parts but the op has %d results",
                              n, c->n_out);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0 || __builtin_add_overflow(total, sizes[i], &total))
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "split: sizes[%d] = %lld is invalid", i,
                                  (long long)sizes[i]);
        c->out[i] = c->in[0];
        c->out[i].shape.d[axis] = (cv_dim){sizes[i], NULL};
    }
    int64_t extent;
    if (cv_nn_static_dim(c, s->d[axis], "the split axis", &extent))
        return -1;
    if (total != extent)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "split: sizes add up to %lld but axis %d has extent %lld",
                              (long long)total, axis, (long long)extent);
    return 0;
}

static int split_eval(cv_eval_ctx *c)
{
    int axis = (int)cv_op_int(c->op, "axis", 0);
    axis = axis < 0 ? axis + c->in[0]->rank : axis;
    int64_t at = 0;
    for (int k = 0; k < c->n_out; k++) {
        block_copy(c->in[0], &c->out[k], axis, at, false);
        at += c->out[k].dims[axis];
    }
    return 0;
}

/* ---- slice ---------------------------------------------------------------- */

typedef struct slice_plan {
    int64_t start[CV_MAX_RANK], step[CV_MAX_RANK];
    cv_dim count[CV_MAX_RANK];
} slice_plan;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ONNX Slice on one axis of static extent d. */
static void slice_axis(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *s0,
                       int64_t *cnt)
{
    if (start < 0)
        start += d;
    if (end < 0)
        end += d;
    if (step > 0) {
        start = clamp64(start, 0, d);
        end = clamp64(end, 0, d);
        *cnt = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = clamp64(start, 0, d - 1);
        end = clamp64(end, -1, d - 1);
        *cnt = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    *s0 = start;
}

/* One bound of slice_axis over a symbolic extent d: v (< 0 counts from the
 * end) clamped to [lo, d + hi].  Exporters write "to the end" as INT64_MAX
 * or INT32_MAX: any bound at least INT32_MAX is taken as past the end. */
static int slice_bound_sym(cv_infer_ctx *c, cv_dim d, int64_t v, int64_t lo, int64_t hi,
                           cv_dim *out)
{
    cv_dim top;
    if (cv_infer_dim(c, CV_DIM_ADD, d, (cv_dim){hi, NULL}, &top))
        return -1;
    if (v >= INT32_MAX) {
        *out = top;
        return 0;
    }
    if (v < 0) {
        if (v <= -(int64_t)INT32_MAX) {
            *out = (cv_dim){lo, NULL};
            return 0;
        }
        return cv_infer_dim(c, CV_DIM_ADD, d, (cv_dim){v, NULL}, out) ||
               cv_infer_dim(c, CV_DIM_MAX, *out, (cv_dim){lo, NULL}, out);
    }
    return cv_infer_dim(c, CV_DIM_MIN, (cv_dim){v, NULL}, top, out);
}

/* slice_axis's count over a symbolic extent: max(ceil((end - start) /
 * step), 0), or with a negative step ceil((start - end) / -step). */
static int slice_count_sym(cv_infer_ctx *c, cv_dim d, int64_t start, int64_t end,
                           int64_t step, cv_dim *cnt)
{
    cv_dim s, e, len;
    bool up = step > 0;
    if (slice_bound_sym(c, d, start, 0, up ? 0 : -1, &s) ||
        slice_bound_sym(c, d, end, up ? 0 : -1, up ? 0 : -1, &e) ||
        cv_infer_dim(c, CV_DIM_SUB, up ? e : s, up ? s : e, &len) ||
        cv_infer_dim(c, CV_DIM_CEILDIV, len, (cv_dim){up ? step : -step, NULL}, &len))
        return -1;
    return cv_infer_dim(c, CV_DIM_MAX, len, (cv_dim){0, NULL}, cnt);
}

static int slice_make_plan(cv_infer_ctx *c, const cv_shape *s, slice_plan *p)
{
    int64_t st[CV_MAX_RANK + 1], en[CV_MAX_RANK + 1], ax[CV_MAX_RANK + 1], sp[CV_MAX_RANK + 1];
    int n = cv_op_ints(c->op, "starts", st, CV_MAX_RANK + 1);
    int ne = cv_op_ints(c->op, "ends", en, CV_MAX_RANK + 1);
    int na = cv_op_ints(c->op, "axes", ax, CV_MAX_RANK + 1);
    int ns = cv_op_ints(c->op, "steps", sp, CV_MAX_RANK + 1);
    if (n < 0 || n > s->rank || ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "slice: starts, ends, axes and steps must have the same "
                              "length, at most the rank %d", s->rank);
    for (int i = 0; i < s->rank; i++) {
        p->start[i] = 0;
        p->step[i] = 1;
        p->count[i] = s->d[i];
    }
    unsigned seen = 0;
    for (int i = 0; i < n; i++) {
        int a;
        int64_t step = ns >= 0 ? sp[i] : 1;
        if (cv_infer_axis(c, na >= 0 ? ax[i] : i, s->rank, &a))
            return -1;
        if ((seen & (1u << a)) || step == 0 || step == INT64_MIN)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "slice: axis %d repeated or step %lld invalid", a,
                                  (long long)step);
        seen |= 1u << a;
        p->step[a] = step;
        cv_dim d = s->d[a];
        if (d.sym) {
            /* The start is only needed at run time, when d is known. */
            if (slice_count_sym(c, d, st[i], en[i], step, &p->count[a]))
                return -1;
            continue;
        }
        p->count[a].sym = NULL;
        slice_axis(d.n, st[i], en[i], step, &p->start[a], &p->count[a].n);
    }
    return 0;
}

static int slice_infer(cv_infer_ctx *c)
{
    slice_plan p;
    if (slice_make_plan(c, &c->in[0].shape, &p))
        return -1;
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].shape.rank = c->in[0].shape.rank;
    memcpy(c->out[0].shape.d, p.count, sizeof p.count);
    return 0;
}

static int slice_eval(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    cv_shape s = {.rank = x->rank};
    for (int i = 0; i < x->rank; i++)
        s.d[i].n = x->dims[i];
    slice_plan p;
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (slice_make_plan(&ic, &s, &p))
        return -1;
    int64_t xs[CV_MAX_RANK], st[CV_MAX_RANK], off = 0;
    cv_strides(x->rank, x->dims, xs);
    for (int i = 0; i < x->rank; i++) {
        st[i] = xs[i] * p.step[i];
        off += xs[i] * p.start[i];
    }
    cv_nn_copy_strided(c->out[0].data, x->data, cv_dtype_size(x->dtype), x->rank, c->out[0].dims,
                       st, off);
    return 0;
}

/* ---- gather ----------------------------------------------------------------- */

static int gather_infer(cv_infer_ctx *c)
{
    const cv_shape *s = &c->in[0].shape, *ix = &c->in[1].shape;
    int axis;
    if (cv_infer_dtype_in(c, 1, CV_DT_BIT(CV_I32) | CV_DT_BIT(CV_I64)) ||
        cv_infer_axis(c, cv_op_int(c->op, "axis", 0), s->rank, &axis))
        return -1;
    if (s->rank - 1 + ix->rank > CV_MAX_RANK)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "gather: the result would have rank %d (at most %d)",
                              s->rank - 1 + ix->rank, CV_MAX_RANK);
    cv_shape o = {.rank = s->rank - 1 + ix->rank};
    memcpy(o.d, s->d, (size_t)axis * sizeof o.d[0]);
    memcpy(o.d + axis, ix->d, (size_t)ix->rank * sizeof o.d[0]);
    memcpy(o.d + axis + ix->rank, s->d + axis + 1, (size_t)(s->rank - axis - 1) * sizeof o.d[0]);
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

static int gather_eval(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *ix = c->in[1];
    int axis = (int)cv_op_int(c->op, "axis", 0);
    axis = axis < 0 ? axis + x->rank : axis;
    int64_t outer, d = x->dims[axis];
    size_t inner;
    axis_geometry(x, axis, &outer, &inner);
    const unsigned char *src = x->data;
    unsigned char *dst = c->out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < ix->numel; k++) {
            int64_t i = cv_tensor_get_i64(ix, k);
            if (i < -d || i >= d)
                return cv_nn_eval_error(c, CV_E_INDEX_OUT_OF_RANGE, "gather: index %lld is out of range for axis %d "
                                        "of extent %lld", (long long)i, axis, (long long)d);
            i = i < 0 ? i + d : i;
            memcpy(dst, src + ((size_t)o * (size_t)d + (size_t)i) * inner, inner);
            dst += inner;
        }
    return 0;
}

/* ---- pad ------------------------------------------------------------------ */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

static int pad_read(cv_infer_ctx *c, int rank, int64_t *pads, int *mode)
{
    int n = cv_op_ints(c->op, "pads", pads, 2 * CV_MAX_RANK + 1);
    if (n != 2 * rank)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "pad: 'pads' must have %d entries (all begins, then all "
                              "ends), got %d", 2 * rank, n);
    const char *m = cv_op_string(c->op, "mode", "constant");
    *mode = !strcmp(m, "constant") ? PAD_CONSTANT : !strcmp(m, "reflect") ? PAD_REFLECT
            : !strcmp(m, "edge") ? PAD_EDGE : -1;
    if (*mode < 0)
        return cv_infer_error(c, CV_E_UNSUPPORTED_ATTRIBUTE_VALUE, "pad: mode '%s' is not supported", m);
    return 0;
}

static int pad_infer(cv_infer_ctx *c)
{
    const cv_shape *s = &c->in[0].shape;
    int64_t pads[2 * CV_MAX_RANK + 1];
    int mode;
    if (pad_read(c, s->rank, pads, &mode))
        return -1;
    cv_type *o = &c->out[0];
    *o = c->in[0];
    for (int i = 0; i < s->rank; i++) {
        int64_t b = pads[i], e = pads[i + s->rank], n;
        if (b == 0 && e == 0)
            continue;
        if (s->d[i].sym) {
            /* Reflect/edge modes need a non-empty axis: checked at run time. */
            if (cv_infer_dim(c, CV_DIM_ADD, s->d[i], (cv_dim){b, NULL}, &o->shape.d[i]) ||
                cv_infer_dim(c, CV_DIM_ADD, o->shape.d[i], (cv_dim){e, NULL}, &o->shape.d[i]))
                return -1;
            continue;
        }
        if (__builtin_add_overflow(s->d[i].n, b, &n) || __builtin_add_overflow(n, e, &n))
            return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "pad: extent of axis %d overflows", i);
        if (n < 0 || (mode != PAD_CONSTANT && s->d[i].n == 0 && n > 0))
            return cv_infer_error(c, CV_E_INVALID_DIMENSION, "pad: axis %d of extent %lld cannot be padded by "
                                  "[%lld, %lld] in this mode", i, (long long)s->d[i].n,
                                  (long long)b, (long long)e);
        o->shape.d[i].n = n;
    }
    return 0;
}

/* Source index along one axis for padded position q (-1: the fill value). */
static int64_t pad_source(int mode, int64_t q, int64_t d)
{
    if (q >= 0 && q < d)
        return q;
    if (mode == PAD_CONSTANT)
        return -1;
    if (mode == PAD_EDGE || d == 1)
        return q < 0 ? 0 : d - 1;
    int64_t period = 2 * (d - 1), r = q % period;  /* reflect without the edge */
    r = r < 0 ? r + period : r;
    return r < d ? r : period - r;
}

static int pad_eval(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    cv_tensor *y = &c->out[0];
    int64_t pads[2 * CV_MAX_RANK + 1], xs[CV_MAX_RANK], coord[CV_MAX_RANK] = {0};
    int mode;
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (pad_read(&ic, x->rank, pads, &mode))
        return -1;
    size_t es = cv_dtype_size(x->dtype);
    unsigned char fill[8];
    cv_dtype_store(x->dtype, fill, 0, cv_op_float(c->op, "value", 0.0));
    cv_strides(x->rank, x->dims, xs);
    unsigned char *dst = y->data;
    const unsigned char *src = x->data;
    for (int64_t i = 0; i < y->numel; i++, dst += es) {
        int64_t off = 0;
        for (int a = 0; a < x->rank && off >= 0; a++) {
            int64_t s = pad_source(mode, coord[a] - pads[a], x->dims[a]);
            off = s < 0 ? -1 : off + s * xs[a];
        }
        memcpy(dst, off < 0 ? fill : src + (size_t)off * es, es);
        for (int a = x->rank - 1; a >= 0 && ++coord[a] == y->dims[a]; a--)
            coord[a] = 0;
    }
    return 0;
}

/* transpose(x) {perm INTS, default reversed axes}: result dim i = x dim perm[i].
 * concat(x0, x1, ...) {axis INT required, negative allowed}: same dtype and
 *   rank, equal extents off the axis.
 * split(x) {axis INT = 0, sizes INTS required}: one result per entry of sizes,
 *   which must add up to the axis extent.
 * slice(x) {starts INTS, ends INTS required; axes INTS (default 0..n-1), steps
 *   INTS (default 1)}: ONNX Slice: negative starts/ends count from the end,
 *   both clamp (INT64_MAX and INT64_MIN are fine), negative steps walk back;
 *   on a symbolic axis only the whole axis (start 0, end >= INT32_MAX, step 1).
 * gather(x, indices: i32|i64) {axis INT = 0}: ONNX Gather; negative indices
 *   count from the end; an index out of range at run time is CV3012.
 * pad(x) {pads INTS required: begins for every axis, then ends (negative
 *   crops); mode STRING "constant" (default) | "reflect" | "edge"; value
 *   FLOAT = 0 (constant mode)}. */
static const cv_attr_schema transpose_attrs[] = {
    {"perm", CV_ATTR_INTS, false}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema concat_attrs[] = {
    {"axis", CV_ATTR_INT, true}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema split_attrs[] = {
    {"axis", CV_ATTR_INT, false}, {"sizes", CV_ATTR_INTS, true}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema slice_attrs[] = {
    {"starts", CV_ATTR_INTS, true},
    {"ends", CV_ATTR_INTS, true},
    {"axes", CV_ATTR_INTS, false},
    {"steps", CV_ATTR_INTS, false},
    {NULL, CV_ATTR_NONE, false},
};
static const cv_attr_schema gather_attrs[] = {
    {"axis", CV_ATTR_INT, false}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema pad_attrs[] = {
    {"pads", CV_ATTR_INTS, true},
    {"mode", CV_ATTR_STRING, false},
    {"value", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"transpose", 1, 1, 1, 1, transpose_attrs, transpose_infer, transpose_eval, cv_cg_transpose,
     CV_OPF_SHAPE_ONLY},
    {"concat", 1, -1, 1, 1, concat_attrs, concat_infer, concat_eval, cv_cg_concat,
     CV_OPF_SHAPE_ONLY},
    {"split", 1, 1, 1, -1, split_attrs, split_infer, split_eval, cv_cg_split, CV_OPF_SHAPE_ONLY},
    {"slice", 1, 1, 1, 1, slice_attrs, slice_infer, slice_eval, cv_cg_slice, CV_OPF_SHAPE_ONLY},
    {"gather", 2, 2, 1, 1, gather_attrs, gather_infer, gather_eval, cv_cg_gather,
     CV_OPF_SHAPE_ONLY},
    {"pad", 1, 1, 1, 1, pad_attrs, pad_infer, pad_eval, cv_cg_pad, 0},
};

const cv_op_family cv_ops_layout = {defs, (int)(sizeof defs / sizeof defs[0])};
