/* ONNX ops that make values known at import time (Constant,
 * ConstantOfShape, Range, Shape, Size, EyeLike, NonZero of a known input),
 * Dropout in inference, and
 * ops built from an import-time mask or index grid (Trilu, OneHot,
 * DepthToSpace, SpaceToDepth). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static onnx_const *scalar_const(onnx_ctx *c, cv_dtype dt, double v)
{
    onnx_const *k = onnx_const_new(c, dt, 0, NULL);
    if (k)
        onnx_const_set_f64(k, 0, v);
    return k;
}

static onnx_const *list_const(onnx_ctx *c, cv_dtype dt, const Onnx__AttributeProto *a)
{
    int64_t n = (int64_t)(dt == CV_I64 ? a->n_ints : a->n_floats);
    onnx_const *k = onnx_const_new(c, dt, 1, &n);
    for (int64_t i = 0; k && i < n; i++) {
        if (dt == CV_I64)
            onnx_const_set_i64(k, i, a->ints[i]);
        else
            onnx_const_set_f64(k, i, a->floats[i]);
    }
    return k;
}

static int lower_constant(onnx_ctx *c)
{
    const Onnx__NodeProto *n = c->node;
    if (n->n_attribute != 1)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "needs exactly one value attribute, has %zu",
                        n->n_attribute);
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *name = a->name ? a->name : "";
    onnx_const *k = NULL;
    if (!strcmp(name, "value") && a->t) {
        k = cv_arena_alloc(c->a, sizeof *k);
        if (!k || onnx_tensor_decode(a->t, c->a, c->base_dir, c->path, c->label, k, c->d) < 0)
            return -1;
    } else if (!strcmp(name, "value_float") && a->has_f) {
        k = scalar_const(c, CV_F32, a->f);
    } else if (!strcmp(name, "value_int") && a->has_i) {
        k = onnx_const_new(c, CV_I64, 0, NULL);
        if (k)
            onnx_const_set_i64(k, 0, a->i);
    } else if (!strcmp(name, "value_floats")) {
        k = list_const(c, CV_F32, a);
    } else if (!strcmp(name, "value_ints")) {
        k = list_const(c, CV_I64, a);
    } else if (!strcmp(name, "sparse_value")) {
        return onnx_err(c, CV_E_ONNX_SPARSE_TENSOR, "sparse constants are not supported");
    } else {
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "constant attribute '%s' is not supported",
                        name);
    }
    return onnx_bind_const(c, 0, k);
}

/* The static dims held by a 1-D integer constant (shape inputs). */
static int const_dims(onnx_ctx *c, int input, int64_t *dims, int *rank)
{
    const onnx_const *k = onnx_in_const(c, input, "shape");
    if (!k)
        return -1;
    int n = onnx_const_ints(k, dims, CV_MAX_RANK);
    if (n < 0 || k->rank != 1)
        return onnx_err(c, k->syms ? CV_E_ONNX_DATA_DEPENDENT_SHAPE : CV_E_ONNX_SHAPE_VALUE,
                        "the shape must be a 1-D tensor of at most %d known integers", CV_MAX_RANK);
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "shape[%d] = %lld is negative", i,
                            (long long)dims[i]);
    *rank = n;
    return 0;
}

/* constant() {value or ints, dtype, shape}: a fill CU-IR materialises. */
static int big_fill(onnx_ctx *c, cv_dtype dt, const void *value, const int64_t *dims, int rank)
{
    cv_op *o = onnx_op(c, "constant", NULL, 0);
    if (o) {
        if (value && !cv_dtype_is_float(dt)) {
            int64_t v = cv_dtype_load_i64(dt, value, 0);
            cv_op_set_ints(o, "ints", &v, 1);
        } else {
            double v = value ? cv_dtype_load(dt, value, 0) : 0;
            cv_op_set_floats(o, "value", &v, 1);
        }
        cv_op_set_dtype(o, "dtype", dt);
        cv_op_set_ints(o, "shape", dims, rank);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* A value of the graph with extent `sym` on some axis (*axis), or NULL. */
static cv_value *value_with_dim(onnx_ctx *c, const char *sym, int *axis)
{
    for (int i = 0; i < c->f->n_values; i++) {
        const cv_value *v = c->f->values[i];
        for (int a = 0; a < v->type.shape.rank; a++)
            if (v->type.shape.d[a].sym && !strcmp(v->type.shape.d[a].sym, sym) &&
                cv_type_known(&v->type)) {
                *axis = a;
                return c->f->values[i];
            }
    }
    return NULL;
}

/* A [1,..,S,..,1] tensor of zeros of type dt (S at position j of rank
 * `rank`) made from a value that has extent S on some axis: slice every
 * other axis to 1, compare it with itself (false even for NaN), cast, and
 * reshape. */
static cv_value *zeros_along(onnx_ctx *c, cv_dtype dt, const char *sym, int j, int rank)
{
    int axis;
    cv_value *v = value_with_dim(c, sym, &axis);
    if (!v)
        return NULL;
    int64_t st[CV_MAX_RANK], en[CV_MAX_RANK], ax[CV_MAX_RANK], shape[CV_MAX_RANK];
    int n = 0;
    for (int a = 0; a < v->type.shape.rank; a++)
        if (a != axis) {
            st[n] = 0;
            en[n] = 1;
            ax[n++] = a;
        }
    if (n) {
        cv_op *o = onnx_op(c, "slice", &v, 1);
        if (o) {
            cv_op_set_ints(o, "starts", st, n);
            cv_op_set_ints(o, "ends", en, n);
            cv_op_set_ints(o, "axes", ax, n);
        }
        v = onnx_finish(c, o);
    }
    v = v ? onnx_binary(c, "less", v, v) : NULL;
    cv_op *o = v ? onnx_op(c, "cast", &v, 1) : NULL;
    if (o)
        cv_op_set_dtype(o, "to", dt);
    v = onnx_finish(c, o);
    for (int a = 0; a < rank; a++)
        shape[a] = a == j ? -1 : 1;
    o = v ? onnx_op(c, "reshape", &v, 1) : NULL;
    if (o)
        cv_op_set_ints(o, "shape", shape, rank);
    return onnx_finish(c, o);
}

/* A fill of a shape no value of the graph has (an expression such as
 * P + 1): a constant op with a DIMS shape, sized at run time. */
static int constant_dims(onnx_ctx *c, const onnx_const *k, cv_dtype dt, const void *value)
{
    cv_dim dims[CV_MAX_RANK];
    for (int i = 0; i < k->numel; i++)
        dims[i] = onnx_const_dim(k, i);
    double v = value ? cv_dtype_load(dt, value, 0) : 0;
    cv_op *o = onnx_op(c, "constant", NULL, 0);
    if (o) {
        cv_op_set_floats(o, "value", &v, 1);
        cv_op_set_dtype(o, "dtype", dt);
        cv_op_set_dims(o, "shape", dims, (int)k->numel);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ConstantOfShape of a shape value with symbolic entries: zeros along each
 * symbolic axis, broadcast together, expanded over the static ones, plus
 * the fill value. */
static int symbolic_fill(onnx_ctx *c, const onnx_const *k, cv_dtype dt, const void *value)
{
    int rank = (int)k->numel;
    int64_t st[CV_MAX_RANK];
    cv_value *acc = NULL;
    if (k->rank != 1 || rank > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the shape must be a 1-D tensor of at most %d "
                        "entries", CV_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        st[i] = k->syms[i] ? 1 : onnx_const_i64(k, i);
        if (!k->syms[i])
            continue;
        cv_value *z = zeros_along(c, dt, k->syms[i], i, rank);
        if (!z)
            return constant_dims(c, k, dt, value);
        acc = acc ? onnx_binary(c, "add", acc, z) : z;
    }
    cv_op *o = acc ? onnx_op(c, "expand", &acc, 1) : NULL;
    if (o)
        cv_op_set_ints(o, "shape", st, rank);
    acc = onnx_finish(c, o);
    /* The zeros must have exactly the wanted extents: a value whose other
     * axes are symbolic too gives N*min(1, frames) for N (a frame axis of
     * 0 would empty it).  Otherwise: a constant op sized at run time. */
    cv_shape want = {.rank = rank};
    for (int i = 0; i < rank; i++)
        want.d[i] = onnx_const_dim(k, i);
    if (acc && !cv_shape_equal(&acc->type.shape, &want))
        return constant_dims(c, k, dt, value);
    double v = value ? cv_dtype_load(dt, value, 0) : 0;
    if (acc && v != 0)
        acc = onnx_binary(c, "add", acc, onnx_scalar(c, dt, v));
    return onnx_bind_value(c, 0, acc);
}

static int lower_constant_of_shape(onnx_ctx *c)
{
    int64_t dims[CV_MAX_RANK];
    int rank = 0;
    const onnx_val *sv = onnx_in(c, 0);
    if (sv && sv->c && sv->c->syms) {
        const Onnx__AttributeProto *a = onnx_attr(c, "value");
        onnx_const fill = {0};
        if (a && a->t &&
            onnx_tensor_decode(a->t, c->a, c->base_dir, c->path, c->label, &fill, c->d) < 0)
            return -1;
        return symbolic_fill(c, sv->c, a && a->t ? fill.dt : CV_F32, a && a->t ? fill.data : NULL);
    }
    if (const_dims(c, 0, dims, &rank) < 0)
        return -1;
    const Onnx__AttributeProto *a = onnx_attr(c, "value");
    onnx_const fill = {0};
    if (a && a->t) {
        if (onnx_tensor_decode(a->t, c->a, c->base_dir, c->path, c->label, &fill, c->d) < 0)
            return -1;
        if (fill.numel != 1)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'value' must hold one element");
    }
    cv_dtype dt = a && a->t ? fill.dt : CV_F32;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel = cv_mul_i64(numel, dims[i], &numel) ? numel : INT64_MAX;
    if (numel > (1 << 16))   /* large fills stay a CU-IR constant op */
        return big_fill(c, dt, fill.data, dims, rank);
    onnx_const *k = onnx_const_new(c, dt, rank, dims);
    if (!k)
        return -1;
    size_t es = cv_dtype_size(k->dt);
    for (int64_t i = 0; a && a->t && i < k->numel; i++)
        memcpy((char *)k->data + (size_t)i * es, fill.data, es);
    return onnx_bind_const(c, 0, k);
}

/* Range(start, limit, delta) over a symbolic start or limit (arange(L),
 * arange(P, P + 1) past a cache): a CU-IR arange op of length
 * max(ceildiv(limit - start, delta), 0), evaluated when the symbols are
 * known. */
static int symbolic_range(onnx_ctx *c, const onnx_const *s, const onnx_const *l,
                          const onnx_const *d)
{
    if (!onnx_const_is_int(s) || (d->syms && d->syms[0]))
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "a range over the symbolic %s needs integer "
                        "bounds and a known delta", s->syms && s->syms[0] ? s->syms[0]
                                                                          : l->syms[0]);
    int64_t delta = onnx_const_i64(d, 0);
    cv_dim start = onnx_const_dim(s, 0), limit = onnx_const_dim(l, 0), span, len;
    if (delta == 0)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "range has a zero delta");
    int rc = delta > 0 ? cv_dim_sub(c->m, limit, start, &span) : cv_dim_sub(c->m, start, limit,
                                                                             &span);
    rc = rc ? rc : cv_dim_arith(c->m, CV_DIM_CEILDIV, span, (cv_dim){delta > 0 ? delta : -delta,
                                                                       NULL}, &len);
    int cmp = rc ? CV_DIM_UNKNOWN : cv_dim_compare(len, (cv_dim){0, NULL});
    if (!rc && cmp != CV_DIM_EQ && cmp != CV_DIM_GT && cmp != CV_DIM_GE)
        rc = cv_dim_arith(c->m, CV_DIM_MAX, len, (cv_dim){0, NULL}, &len);
    if (rc)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the length of a range over the symbolic %s "
                        "is not expressible", s->syms && s->syms[0] ? s->syms[0] : l->syms[0]);
    cv_op *o = onnx_op(c, "arange", NULL, 0);
    if (o) {
        cv_op_set_dims(o, "length", &len, 1);
        cv_op_set_dims(o, "start", &start, 1);
        cv_op_set_int(o, "delta", delta);
        cv_op_set_dtype(o, "dtype", s->dt);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static int lower_range(onnx_ctx *c)
{
    const onnx_const *s = onnx_in_const(c, 0, "start"), *l = onnx_in_const(c, 1, "limit"),
                     *d = onnx_in_const(c, 2, "delta");
    if (!s || !l || !d)
        return -1;
    if (s->numel != 1 || l->numel != 1 || d->numel != 1 || s->dt != l->dt || s->dt != d->dt)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "start, limit and delta must be known scalars of "
                        "one type");
    if ((s->syms && s->syms[0]) || (l->syms && l->syms[0]))
        return symbolic_range(c, s, l, d);
    double start = onnx_const_f64(s, 0), delta = onnx_const_f64(d, 0);
    double count = ceil((onnx_const_f64(l, 0) - start) / delta);
    if (delta == 0 || !(count < (1 << 24)))
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "range has a zero delta or too many elements");
    int64_t n = count > 0 ? (int64_t)count : 0;
    onnx_const *k = onnx_const_new(c, s->dt, 1, &n);
    bool ints = onnx_const_is_int(s);
    for (int64_t i = 0; k && i < n; i++) {
        if (ints)   /* unsigned: wraps like the element type instead of overflowing */
            onnx_const_set_i64(k, i, (int64_t)((uint64_t)onnx_const_i64(s, 0) +
                                               (uint64_t)i * (uint64_t)onnx_const_i64(d, 0)));
        else   /* ONNX accumulates in the element type: start + i*delta in float */
            onnx_const_set_f64(k, i, start + (double)i * delta);
    }
    return onnx_bind_const(c, 0, k);
}

static int lower_shape(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    int64_t start, end;
    if (!x || onnx_attr_int(c, "start", 0, &start) < 0 ||
        onnx_attr_int(c, "end", x->type.shape.rank, &end) < 0)
        return x ? -1 : onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    return onnx_bind_const(c, 0, onnx_fold_shape(c, &x->type, start, end));
}

static int lower_size(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (!x)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    int64_t n = cv_shape_numel(&x->type.shape);
    if (n < 0)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the size of a symbolic shape is not known at "
                        "import time");
    onnx_const *k = onnx_const_new(c, CV_I64, 0, NULL);
    if (k)
        onnx_const_set_i64(k, 0, n);
    return onnx_bind_const(c, 0, k);
}

/* The static dims of input i's type, or a CV4305 report. */
static int static_dims(onnx_ctx *c, const onnx_val *x, int64_t *dims)
{
    for (int i = 0; i < x->type.shape.rank; i++) {
        if (x->type.shape.d[i].sym)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "'%s' has the symbolic dimension %s",
                            x->name, x->type.shape.d[i].sym);
        dims[i] = x->type.shape.d[i].n;
    }
    return 0;
}

static int lower_eye_like(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    int64_t k, dt, dims[CV_MAX_RANK];
    if (!x || onnx_attr_int(c, "k", 0, &k) < 0 || onnx_attr_int(c, "dtype", 0, &dt) < 0 ||
        static_dims(c, x, dims) < 0)
        return -1;
    if (x->type.shape.rank != 2)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the input must be 2-D");
    cv_dtype t = onnx_attr(c, "dtype") ? onnx_dtype((int32_t)dt) : x->type.dtype;
    if (t == CV_DT_INVALID)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "dtype %lld is not supported", (long long)dt);
    onnx_const *e = onnx_const_new(c, t, 2, dims);
    for (int64_t i = 0; e && i < dims[0]; i++)
        for (int64_t j = 0; j < dims[1]; j++)
            onnx_const_set_f64(e, i * dims[1] + j, j - i == k);
    return onnx_bind_const(c, 0, e);
}

/* Dropout at inference is the identity; its mask is all true. */
static int lower_dropout(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (!x)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    if (c->opset >= 12 && onnx_in(c, 2)) {
        const onnx_const *t = onnx_in_const(c, 2, "training_mode");
        const onnx_const *r = onnx_in(c, 1) ? onnx_in_const(c, 1, "ratio") : NULL;
        if (!t || (onnx_in(c, 1) && !r))
            return -1;
        /* Training with ratio 0 drops nothing; any other ratio is random. */
        if (onnx_const_i64(t, 0) && (!r || onnx_const_f64(r, 0) != 0))
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "training mode is not supported");
    }
    if (c->node->n_output > 1 && c->node->output[1][0]) {
        int64_t dims[CV_MAX_RANK];
        if (static_dims(c, x, dims) < 0)
            return -1;
        onnx_const *m = onnx_const_new(c, CV_BOOL, x->type.shape.rank, dims);
        for (int64_t i = 0; m && i < m->numel; i++)
            onnx_const_set_i64(m, i, 1);
        if (onnx_bind_const(c, 1, m) < 0)
            return -1;
    }
    if (x->c && !x->v)
        return onnx_bind_const(c, 0, x->c);
    return onnx_bind_value(c, 0, onnx_materialize(c, x));
}

static cv_value *where3(onnx_ctx *c, cv_value *cond, cv_value *a, cv_value *b)
{
    cv_value *ops[3] = {cond, a, b};
    return onnx_finish(c, onnx_op(c, "where", ops, 3));
}

/* A constant as a CU-IR param (named after the node). */
static cv_value *param_of(onnx_ctx *c, onnx_const *k, const char *suffix)
{
    char name[160];
    snprintf(name, sizeof name, "%.120s_%s", c->label, suffix);
    onnx_val tmp = {.name = cv_arena_strdup(c->a, name), .c = k};
    return k ? onnx_materialize(c, &tmp) : NULL;
}

/* Trilu: where(mask, x, 0) with the triangle mask built here. */
static int lower_trilu(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    int64_t upper, k = 0;
    if (!x || onnx_attr_int(c, "upper", 1, &upper) < 0)
        return -1;
    if (onnx_in(c, 1)) {
        const onnx_const *kk = onnx_in_const(c, 1, "k");
        if (!kk)
            return -1;
        k = onnx_const_i64(kk, 0);
    }
    int r = x->type.shape.rank;
    if (r < 2)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the input must have rank >= 2");
    cv_dim dn = x->type.shape.d[r - 2], dm = x->type.shape.d[r - 1];
    if (dn.sym || dm.sym)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the last two dimensions must be static");
    int64_t dims[2] = {dn.n, dm.n};
    onnx_const *mask = onnx_const_new(c, CV_BOOL, 2, dims);
    for (int64_t i = 0; mask && i < dims[0]; i++)
        for (int64_t j = 0; j < dims[1]; j++)
            onnx_const_set_i64(mask, i * dims[1] + j, upper ? j - i >= k : j - i <= k);
    cv_value *xv = onnx_in_value(c, 0);
    cv_value *zero = xv ? onnx_scalar(c, xv->type.dtype, 0) : NULL;
    return onnx_bind_value(c, 0, where3(c, param_of(c, mask, "mask"), xv, zero));
}

/* OneHot: where(idx == iota along axis, on, off); negative indices wrap. */
static int lower_one_hot(onnx_ctx *c)
{
    const onnx_const *dk = onnx_in_const(c, 1, "depth"), *vk = onnx_in_const(c, 2, "values");
    onnx_val *idx = onnx_in(c, 0);
    int64_t axis;
    if (!idx || !dk || !vk || onnx_attr_int(c, "axis", -1, &axis) < 0)
        return -1;
    int r = idx->type.shape.rank + 1;
    double dd = dk->numel == 1 ? onnx_const_f64(dk, 0) : 0;
    if (axis < -r || axis >= r || r > CV_MAX_RANK || vk->numel != 2 ||
        !(dd >= 1 && dd <= (1 << 24)))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "bad axis, depth or values");
    int a = (int)(axis < 0 ? axis + r : axis);
    int64_t depth = (int64_t)dd, dims[CV_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = i == a ? depth : 1;
    onnx_const *iota = onnx_const_new(c, CV_I64, r, dims);
    for (int64_t i = 0; iota && i < depth; i++)
        onnx_const_set_i64(iota, i, i);
    cv_value *iv = onnx_in_value(c, 0);
    if (iv && iv->type.dtype != CV_I64) {
        cv_op *o = onnx_op(c, "cast", &iv, 1);
        if (o)
            cv_op_set_dtype(o, "to", CV_I64);
        iv = onnx_finish(c, o);
    }
    cv_value *neg = onnx_binary(c, "less", iv, onnx_scalar(c, CV_I64, 0));
    iv = where3(c, neg, onnx_binary(c, "add", iv, onnx_scalar(c, CV_I64, (double)depth)), iv);
    int64_t ax = a;
    cv_op *u = onnx_op(c, "unsqueeze", &iv, 1);
    if (u)
        cv_op_set_ints(u, "axes", &ax, 1);
    cv_value *hit = onnx_binary(c, "equal", onnx_finish(c, u), param_of(c, iota, "iota"));
    cv_value *on = onnx_scalar(c, vk->dt, onnx_const_f64(vk, 1));
    cv_value *off = onnx_scalar(c, vk->dt, onnx_const_f64(vk, 0));
    return onnx_bind_value(c, 0, where3(c, hit, on, off));
}

/* reshape -> transpose -> reshape, with the batch dim copied (it may be N). */
static cv_value *shuffle(onnx_ctx *c, cv_value *x, const int64_t *s1, const int64_t *perm,
                         const int64_t *s2)
{
    cv_op *o = onnx_op(c, "reshape", &x, 1);
    if (o)
        cv_op_set_ints(o, "shape", s1, 6);
    cv_value *t = onnx_finish(c, o);
    o = onnx_op(c, "transpose", &t, 1);
    if (o)
        cv_op_set_ints(o, "perm", perm, 6);
    t = onnx_finish(c, o);
    o = onnx_op(c, "reshape", &t, 1);
    if (o)
        cv_op_set_ints(o, "shape", s2, 4);
    return onnx_finish(c, o);
}

/* DepthToSpace (DCR and CRD modes) and SpaceToDepth on NCHW. */
static int lower_depth_space(onnx_ctx *c)
{
    bool to_space = strcmp(c->node->op_type, "DepthToSpace") == 0;
    onnx_val *x = onnx_in(c, 0);
    int64_t b;
    const char *mode;
    if (!x || onnx_attr_int(c, "blocksize", 0, &b) < 0 ||
        onnx_attr_string(c, "mode", "DCR", &mode) < 0)
        return -1;
    const cv_shape *s = &x->type.shape;
    if (s->rank != 4 || s->d[1].sym || s->d[2].sym || s->d[3].sym || b < 1 || b > 4096 ||
        s->d[1].n > (1 << 30) || s->d[2].n > (1 << 30) || s->d[3].n > (1 << 30))
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "needs a 4-D input with static C, H, W and a "
                        "positive blocksize");
    int64_t C = s->d[1].n, H = s->d[2].n, W = s->d[3].n;
    if (to_space ? C % (b * b) : (H % b || W % b))
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "dimensions are not divisible by the blocksize");
    cv_value *v = onnx_in_value(c, 0), *y;
    if (!to_space) {
        int64_t s1[6] = {0, C, H / b, b, W / b, b}, p[6] = {0, 3, 5, 1, 2, 4};
        int64_t s2[4] = {0, C * b * b, H / b, W / b};
        y = shuffle(c, v, s1, p, s2);
    } else if (strcmp(mode, "CRD") == 0) {
        int64_t s1[6] = {0, C / (b * b), b, b, H, W}, p[6] = {0, 1, 4, 2, 5, 3};
        int64_t s2[4] = {0, C / (b * b), H * b, W * b};
        y = shuffle(c, v, s1, p, s2);
    } else {
        int64_t s1[6] = {0, b, b, C / (b * b), H, W}, p[6] = {0, 3, 4, 1, 5, 2};
        int64_t s2[4] = {0, C / (b * b), H * b, W * b};
        y = shuffle(c, v, s1, p, s2);
    }
    return onnx_bind_value(c, 0, y);
}

/* NonZero has a data-dependent shape: it imports only when its input is
 * known (a constant or a specialised input), and is evaluated here. */
static int lower_non_zero(onnx_ctx *c)
{
    const onnx_const *x = onnx_in_const(c, 0, "X");
    if (!x)
        return -1;
    if (x->syms)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "NonZero of symbolic values");
    int64_t nz = 0, dims[2] = {x->rank ? x->rank : 1, 0};
    for (int64_t i = 0; i < x->numel; i++)
        nz += onnx_const_f64(x, i) != 0;
    dims[1] = nz;
    onnx_const *k = onnx_const_new(c, CV_I64, 2, dims);
    for (int64_t i = 0, j = 0; k && i < x->numel; i++) {
        if (onnx_const_f64(x, i) == 0)
            continue;
        int64_t rest = i;
        for (int d = x->rank - 1; d >= 0; d--) {
            onnx_const_set_i64(k, d * nz + j, rest % x->dims[d]);
            rest /= x->dims[d];
        }
        if (x->rank == 0)
            onnx_const_set_i64(k, j, 0);
        j++;
    }
    return onnx_bind_const(c, 0, k);
}

static const onnx_op_entry entries[] = {
    {"Constant", 1, lower_constant, NULL, 0},
    {"NonZero", 9, lower_non_zero, NULL, 0x1u},
    {"ConstantOfShape", 9, lower_constant_of_shape, "constant", 1u},
    {"Range", 11, lower_range, "arange", 0x7u},
    {"Shape", 1, lower_shape, NULL, 0},
    {"Size", 1, lower_size, NULL, 0},
    {"EyeLike", 9, lower_eye_like, NULL, 0},
    {"Dropout", 7, lower_dropout, NULL, 0x6u},
    {"Trilu", 14, lower_trilu, "where", 1u << 1},
    {"OneHot", 9, lower_one_hot, "cast less add where unsqueeze equal", 0x6u},
    {"DepthToSpace", 1, lower_depth_space, "reshape transpose", 0},
    {"SpaceToDepth", 1, lower_depth_space, "reshape transpose", 0},
};

const onnx_op_family onnx_ops_const = {entries, sizeof entries / sizeof entries[0]};
