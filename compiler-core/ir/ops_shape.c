/* Op family fragment: shape ops that keep the data as it lies (reshape,
 * flatten, squeeze, unsqueeze), broadcast it (expand), describe it (shape)
 * or make it (constant).  Data moves as raw bytes, so integers and bools
 * come through exactly.  Reordering ops are in ops_layout.c. */
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

/* The extent that -1 stands for: the input's element count divided by the
 * other dims' product, exactly (N*3*4 / 12 = N; L*768 / 64 = 12*L). */
static int reshape_solve(cv_infer_ctx *c, cv_dim in, cv_dim out, cv_dim *hole)
{
    cv_dim rem;
    if (!in.sym && !out.sym) {
        if (out.n == 0 || in.n % out.n)
            return cv_infer_error(c, CV_E_ELEMENT_COUNT_MISMATCH, "reshape: %lld elements cannot fill a shape with %lld "
                                  "elements per -1 step", (long long)in.n, (long long)out.n);
        *hole = (cv_dim){in.n / out.n, NULL};
        return 0;
    }
    if (cv_dim_arith(c->module, CV_DIM_MOD, in, out, &rem) || rem.sym || rem.n != 0 ||
        cv_dim_arith(c->module, CV_DIM_FLOORDIV, in, out, hole))
        return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "reshape: the -1 dimension would be (%s) / (%s), which "
                              "does not divide exactly", in.sym ? in.sym : "a number",
                              out.sym ? out.sym : "a number");
    return 0;
}

static int reshape_infer(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    cv_dim want[CV_MAX_RANK + 1];
    int n = cv_infer_attr_dims(c, "shape", want, CV_MAX_RANK + 1);
    if (n < 0 && c->first_diag)
        return -1;
    if (n < 0 || n > CV_MAX_RANK)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "reshape: 'shape' must list 0 to %d dims", CV_MAX_RANK);
    cv_shape o = {.rank = n};
    int hole = -1;
    cv_dim ti = {1, NULL}, to = {1, NULL};
    for (int i = 0; i < n; i++) {
        int64_t w = want[i].n;
        if (!want[i].sym && w == -1 && hole < 0) {
            hole = i;
            continue;
        }
        if (!want[i].sym && (w < 0 || (w == 0 && i >= in->rank)))
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "reshape: shape[%d] = %lld is invalid%s", i,
                                  (long long)w, w == -1 ? " (a second -1)" : "");
        o.d[i] = !want[i].sym && w == 0 ? in->d[i] : want[i];
        if (cv_infer_dim(c, CV_DIM_MUL, to, o.d[i], &to))
            return -1;
    }
    for (int i = 0; i < in->rank; i++)
        if (cv_infer_dim(c, CV_DIM_MUL, ti, in->d[i], &ti))
            return -1;
    if (hole >= 0) {
        if (reshape_solve(c, ti, to, &o.d[hole]))
            return -1;
    } else if (!cv_dim_equal(ti, to)) {
        if (ti.sym || to.sym)
            return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "reshape: cannot prove that the element counts %s "
                                  "and %s agree", ti.sym ? ti.sym : "(a number)",
                                  to.sym ? to.sym : "(a number)");
        return cv_infer_error(c, CV_E_ELEMENT_COUNT_MISMATCH, "reshape: %lld elements cannot become %lld",
                              (long long)ti.n, (long long)to.n);
    }
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

static int flatten_infer(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    int64_t axis = cv_op_int(c->op, "axis", 1);
    if (axis < 0)
        axis += in->rank;
    if (axis < 0 || axis > in->rank)
        return cv_infer_error(c, CV_E_AXIS_OUT_OF_RANGE, "flatten: axis %lld is out of range for rank %d",
                              (long long)cv_op_int(c->op, "axis", 1), in->rank);
    cv_shape o = {.rank = 2};
    if (cv_nn_dim_product(c, in->d, (int)axis, &o.d[0]) ||
        cv_nn_dim_product(c, in->d + axis, in->rank - (int)axis, &o.d[1]))
        return -1;
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

/* Reads an axes list normalised against `rank`; *mask gets one bit per axis.
 * Returns the count, 0 when absent, -1 after an error. */
static int read_axes(cv_infer_ctx *c, int rank, unsigned *mask)
{
    int64_t v[CV_MAX_RANK + 1];
    int n = cv_op_ints(c->op, "axes", v, CV_MAX_RANK + 1);
    *mask = 0;
    if (n < 0)
        return 0;
    if (n > rank)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: %d axes for rank %d", c->op->name, n, rank);
    for (int i = 0; i < n; i++) {
        int a;
        if (cv_infer_axis(c, v[i], rank, &a))
            return -1;
        if (*mask & (1u << a))
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: axis %d is listed twice", c->op->name, a);
        *mask |= 1u << a;
    }
    return n;
}

static int squeeze_infer(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    unsigned mask;
    int n = read_axes(c, in->rank, &mask);
    if (n < 0)
        return -1;
    cv_shape o = {0};
    for (int i = 0; i < in->rank; i++) {
        cv_dim d = in->d[i];
        bool one = !d.sym && d.n == 1;
        if (n && (mask & (1u << i))) {
            if (d.sym)
                return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "squeeze: axis %d is %s, not provably 1", i, d.sym);
            if (!one)
                return cv_infer_error(c, CV_E_INVALID_DIMENSION, "squeeze: axis %d has extent %lld, not 1", i,
                                      (long long)d.n);
            continue;
        }
        if (!n && one)
            continue;
        o.d[o.rank++] = d;
    }
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

static int unsqueeze_infer(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    int64_t v[CV_MAX_RANK + 1];
    int n = cv_op_ints(c->op, "axes", v, CV_MAX_RANK + 1);
    if (n < 1 || in->rank + n > CV_MAX_RANK)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "unsqueeze: needs 1 to %d axes for rank %d",
                              CV_MAX_RANK - in->rank, in->rank);
    unsigned mask;
    if (read_axes(c, in->rank + n, &mask) < 0)
        return -1;
    cv_shape o = {.rank = in->rank + n};
    for (int i = 0, k = 0; i < o.rank; i++)
        o.d[i] = (mask & (1u << i)) ? (cv_dim){1, NULL} : in->d[k++];
    c->out[0] = (cv_type){c->in[0].dtype, o};
    return 0;
}

/* reshape, flatten, squeeze and unsqueeze keep the bytes in order. */
static int copy_eval(cv_eval_ctx *c)
{
    memcpy(c->out[0].data, c->in[0]->data, cv_tensor_nbytes(&c->out[0]));
    return 0;
}

static int expand_infer(cv_infer_ctx *c)
{
    cv_dim v[CV_MAX_RANK + 1];
    int n = cv_infer_attr_dims(c, "shape", v, CV_MAX_RANK + 1);
    if (n < 0 && c->first_diag)
        return -1;
    if (n < 0 || n > CV_MAX_RANK)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "expand: 'shape' must list 0 to %d dims", CV_MAX_RANK);
    cv_shape s = {.rank = n};
    for (int i = 0; i < n; i++) {
        if (!v[i].sym && v[i].n < 0)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "expand: shape[%d] = %lld is negative", i,
                                  (long long)v[i].n);
        s.d[i] = v[i];
    }
    c->out[0].dtype = c->in[0].dtype;
    return cv_infer_broadcast(c, &c->in[0].shape, &s, &c->out[0].shape);
}

static int expand_eval(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    cv_tensor *y = &c->out[0];
    int64_t xs[CV_MAX_RANK], st[CV_MAX_RANK];
    cv_strides(x->rank, x->dims, xs);
    for (int i = 0; i < y->rank; i++) {
        int k = i - (y->rank - x->rank);
        st[i] = (k < 0 || x->dims[k] == 1) ? 0 : xs[k];
    }
    cv_nn_copy_strided(y->data, x->data, cv_dtype_size(x->dtype), y->rank, y->dims, st, 0);
    return 0;
}

/* ONNX Shape's start/end: negative counts from the back; both clamp. */
static void shape_range(const cv_op *op, int rank, int64_t *start, int64_t *end)
{
    int64_t s = cv_op_int(op, "start", 0), e = cv_op_int(op, "end", rank);
    s = s < 0 ? s + rank : s;
    e = e < 0 ? e + rank : e;
    *start = s < 0 ? 0 : s > rank ? rank : s;
    *end = e < *start ? *start : e > rank ? rank : e;
}

static int shape_infer(cv_infer_ctx *c)
{
    int64_t s, e;
    shape_range(c->op, c->in[0].shape.rank, &s, &e);
    c->out[0] = (cv_type){CV_I64, {.rank = 1, .d = {{e - s, NULL}}}};
    return 0;
}

static int shape_eval(cv_eval_ctx *c)
{
    int64_t s, e;
    shape_range(c->op, c->in[0]->rank, &s, &e);
    for (int64_t i = s; i < e; i++)
        cv_tensor_set_i64(&c->out[0], i - s, c->in[0]->dims[i]);
    return 0;
}

static int constant_infer(cv_infer_ctx *c)
{
    const cv_attr *fv = cv_op_attr(c->op, "value"), *iv = cv_op_attr(c->op, "ints");
    if (!fv == !iv)
        return cv_infer_error(c, fv ? CV_E_INVALID_ATTRIBUTE_VALUE : CV_E_MISSING_ATTRIBUTE, "constant takes exactly one of 'value' and "
                              "'ints'");
    int nv = fv ? fv->n : iv->n;
    const cv_attr *dt = cv_op_attr(c->op, "dtype");
    cv_dtype t = dt && dt->kind == CV_ATTR_DTYPE ? dt->dt : fv ? CV_F32 : CV_I64;
    if (!(CV_DT_BIT(t) & CV_DT_ALL))
        return cv_infer_error(c, CV_E_UNSUPPORTED_DTYPE, "constant does not support element type %s",
                              cv_dtype_name(t));
    cv_dim dims[CV_MAX_RANK + 1];
    int rank = cv_infer_attr_dims(c, "shape", dims, CV_MAX_RANK + 1);
    if (rank < 0 && c->first_diag)
        return -1;
    if (rank < 0) {
        rank = 1;
        dims[0] = (cv_dim){nv, NULL};
    }
    if (rank > CV_MAX_RANK)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "constant: 'shape' has more than %d dims", CV_MAX_RANK);
    cv_type *o = &c->out[0];
    *o = (cv_type){t, {.rank = rank}};
    for (int i = 0; i < rank; i++) {
        if (!dims[i].sym && dims[i].n < 0)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "constant: shape[%d] = %lld is negative", i,
                                  (long long)dims[i].n);
        o->shape.d[i] = dims[i];
    }
    if (!cv_shape_is_static(&o->shape)) {   /* a fill of symbolic extent */
        if (nv != 1)
            return cv_infer_error(c, CV_E_ELEMENT_COUNT_MISMATCH, "constant: a symbolic shape takes one fill value");
        return 0;
    }
    int64_t numel = cv_shape_numel(&o->shape);
    if (numel < 0)
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "constant: element count overflows");
    if (numel != nv && nv != 1)
        return cv_infer_error(c, CV_E_ELEMENT_COUNT_MISMATCH, "constant: %d values for %lld elements (give one value "
                              "to fill)", nv, (long long)numel);
    return 0;
}

static int constant_eval(cv_eval_ctx *c)
{
    const cv_attr *fv = cv_op_attr(c->op, "value"), *iv = cv_op_attr(c->op, "ints");
    cv_tensor *y = &c->out[0];
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t k = (fv ? fv->n : iv->n) == 1 ? 0 : i;
        if (iv)
            cv_tensor_set_i64(y, i, iv->ints[k]);
        else if (fv->kind == CV_ATTR_INTS)
            cv_tensor_set(y, i, (double)fv->ints[k]);
        else
            cv_tensor_set(y, i, fv->floats[k]);
    }
    return 0;
}

/* start + i * delta for i < length, integers (in int64). */
static int range_infer(cv_infer_ctx *c)
{
    cv_dim len[2];
    int n = cv_infer_attr_dims(c, "length", len, 2);
    if (n < 0 && c->first_diag)
        return -1;
    if (n != 1 || (!len[0].sym && len[0].n < 0))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "range: 'length' must be one non-negative dim");
    const cv_attr *dt = cv_op_attr(c->op, "dtype");
    cv_dtype t = dt && dt->kind == CV_ATTR_DTYPE ? dt->dt : CV_I64;
    if (!cv_dtype_is_int(t) || t == CV_BOOL)
        return cv_infer_error(c, CV_E_UNSUPPORTED_DTYPE, "range does not support element type %s (integers only)",
                              cv_dtype_name(t));
    c->out[0] = (cv_type){t, {.rank = 1, .d = {len[0]}}};
    return 0;
}

static int range_eval(cv_eval_ctx *c)
{
    cv_tensor *y = &c->out[0];
    cv_dim sd;
    int64_t start = 0, delta = cv_op_int(c->op, "delta", 1);
    if (cv_op_dims(c->op, "start", &sd, 1) == 1) {
        start = sd.n;
        if (sd.sym && (!c->look || cv_dim_eval(sd, c->look, c->look_ctx, &start)))
            return cv_nn_eval_error(c, CV_E_RUNTIME_SHAPE, "range: start %s has no value at run time", sd.sym);
    }
    for (int64_t i = 0; i < y->numel; i++)   /* wraps like the element type, never UB */
        cv_tensor_set_i64(y, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
    return 0;
}

/* reshape(x) {shape DIMS required}: ONNX Reshape with allowzero=0: 0 copies
 *   the input dim at that position, a symbol or expression is that extent
 *   ([N, L, 4, 8]: evaluated at run time), one -1 takes what is left: the element
 *   counts divided exactly, symbolically too ([N,3,4] -> [-1,12] is [N,12],
 *   [N,L,768] -> [-1,768] is [L*N,768]); a count that does not provably
 *   divide is CV3009.
 * flatten(x) {axis INT = 1, in [-r, r]} -> [prod(d[:axis]), prod(d[axis:])].
 * squeeze(x) {axes INTS optional}: drops the listed axes (each must be 1) or,
 *   without axes, every static 1.
 * unsqueeze(x) {axes INTS required}: axes index the result (negative allowed).
 * expand(x) {shape DIMS required}: numpy broadcast of x with shape (both ways).
 * shape(x) {start INT = 0, end INT = rank} -> i64[end-start]: the run-time dims.
 * constant() {value FLOATS | ints INTS (exactly one), dtype DTYPE (default f32
 *   for value, i64 for ints), shape DIMS (default [number of values]; [] is a
 *   scalar)}: one value fills the whole shape; ints keep i64 exact.  A
 *   symbolic shape ([N, L]) takes one value.
 * arange() {length DIMS required (one dim), start DIMS = [0] (one dim: an
 *   integer or a symbol, evaluated at run time), delta INT = 1, dtype DTYPE =
 *   i64 (an integer type)} -> dtype[length]: start + i*delta (ONNX Range over
 *   a symbolic start or limit: arange(L), arange(P, P + 1)). */
static const cv_attr_schema reshape_attrs[] = {
    {"shape", CV_ATTR_DIMS, true}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema flatten_attrs[] = {
    {"axis", CV_ATTR_INT, false}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema squeeze_attrs[] = {
    {"axes", CV_ATTR_INTS, false}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema unsqueeze_attrs[] = {
    {"axes", CV_ATTR_INTS, true}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema shape_attrs[] = {
    {"start", CV_ATTR_INT, false}, {"end", CV_ATTR_INT, false}, {NULL, CV_ATTR_NONE, false}};
static const cv_attr_schema constant_attrs[] = {
    {"value", CV_ATTR_FLOATS, false},
    {"ints", CV_ATTR_INTS, false},
    {"dtype", CV_ATTR_DTYPE, false},
    {"shape", CV_ATTR_DIMS, false},
    {NULL, CV_ATTR_NONE, false},
};
static const cv_attr_schema range_attrs[] = {
    {"length", CV_ATTR_DIMS, true},
    {"start", CV_ATTR_DIMS, false},
    {"delta", CV_ATTR_INT, false},
    {"dtype", CV_ATTR_DTYPE, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"reshape", 1, 1, 1, 1, reshape_attrs, reshape_infer, copy_eval, cv_cg_reshape,
     CV_OPF_SHAPE_ONLY},
    {"flatten", 1, 1, 1, 1, flatten_attrs, flatten_infer, copy_eval, cv_cg_reshape,
     CV_OPF_SHAPE_ONLY},
    {"squeeze", 1, 1, 1, 1, squeeze_attrs, squeeze_infer, copy_eval, cv_cg_reshape,
     CV_OPF_SHAPE_ONLY},
    {"unsqueeze", 1, 1, 1, 1, unsqueeze_attrs, unsqueeze_infer, copy_eval, cv_cg_reshape,
     CV_OPF_SHAPE_ONLY},
    {"expand", 1, 1, 1, 1, reshape_attrs, expand_infer, expand_eval, cv_cg_expand,
     CV_OPF_SHAPE_ONLY},
    {"shape", 1, 1, 1, 1, shape_attrs, shape_infer, shape_eval, cv_cg_shape, 0},
    {"constant", 0, 0, 1, 1, constant_attrs, constant_infer, constant_eval, cv_cg_constant, 0},
    {"arange", 0, 0, 1, 1, range_attrs, range_infer, range_eval, cv_cg_arange, 0},
};

const cv_op_family cv_ops_shape = {defs, (int)(sizeof defs / sizeof defs[0])};
