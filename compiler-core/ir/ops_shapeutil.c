/* Helpers shared by shape functions and reference kernels. */
#include "compiler-core/ir/ops_internal.h"

int cv_infer_broadcast(cv_infer_ctx *c, const cv_shape *a, const cv_shape *b, cv_shape *out)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    cv_shape r = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        cv_dim da = ia >= 0 ? a->d[ia] : (cv_dim){1, NULL};
        cv_dim db = ib >= 0 ? b->d[ib] : (cv_dim){1, NULL};
        if (cv_dim_equal(da, db) || (!db.sym && db.n == 1))
            r.d[i] = da;
        else if (!da.sym && da.n == 1)
            r.d[i] = db;
        else {
            cv_type ta = {.dtype = c->in[0].dtype, .shape = *a};
            cv_type tb = {.dtype = c->in[0].dtype, .shape = *b};
            char sa[160], sb[160];
            cv_type_format(&ta, sa, sizeof sa);
            cv_type_format(&tb, sb, sizeof sb);
            return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "%s: shapes %s and %s cannot be broadcast (axis %d)",
                                  c->op->name, sa, sb, i);
        }
    }
    *out = r;
    return 0;
}

int cv_infer_attr_dims(cv_infer_ctx *c, const char *name, cv_dim *out, int max)
{
    int n = cv_op_dims(c->op, name, out, max);
    for (int i = 0; c->look && i < n && i < max; i++) {
        int64_t v;
        if (!out[i].sym)
            continue;
        if (cv_dim_eval(out[i], c->look, c->look_ctx, &v) || v < 0)
            return cv_infer_error(c, CV_E_RUNTIME_SHAPE, "%s: %s[%d] = %s has no non-negative value at run "
                                  "time", c->op->name, name, i, out[i].sym);
        out[i] = (cv_dim){v, NULL};
    }
    return n;
}

int cv_infer_dim(cv_infer_ctx *c, cv_dim_op op, cv_dim a, cv_dim b, cv_dim *out)
{
    static const char *const names[] = {"+", "-", "*", "floordiv", "ceildiv", "mod", "min",
                                         "max"};
    if (cv_dim_arith(c->module, op, a, b, out) == 0)
        return 0;
    char sa[96], sb[96];
    cv_dim_format(a, sa, sizeof sa);
    cv_dim_format(b, sb, sizeof sb);
    if (!a.sym && !b.sym && op != CV_DIM_FLOORDIV && op != CV_DIM_CEILDIV && op != CV_DIM_MOD)
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "%s: %s %s %s overflows", c->op->name, sa, names[op], sb);
    return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "%s: (%s) %s (%s) is not expressible as a dimension",
                          c->op->name, sa, names[op], sb);
}

int cv_infer_axis(cv_infer_ctx *c, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return cv_infer_error(c, CV_E_AXIS_OUT_OF_RANGE, "%s: axis %lld is out of range for rank %d",
                              c->op->name, (long long)axis, rank);
    *out = (int)a;
    return 0;
}

int cv_infer_dtype_in(cv_infer_ctx *c, int i, unsigned mask)
{
    if (i < c->n_in && (CV_DT_BIT(c->in[i].dtype) & mask))
        return 0;
    return cv_infer_error(c, CV_E_UNSUPPORTED_DTYPE, "%s does not support element type %s (operand %d)",
                          c->op->name, cv_dtype_name(c->in[i].dtype), i);
}

int cv_infer_same_dtype(cv_infer_ctx *c, int i, int j)
{
    if (c->in[i].dtype == c->in[j].dtype)
        return 0;
    return cv_infer_error(c, CV_E_DTYPE_MISMATCH, "%s: operand %d is %s but operand %d is %s", c->op->name,
                          i, cv_dtype_name(c->in[i].dtype), j, cv_dtype_name(c->in[j].dtype));
}

void cv_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

int64_t cv_broadcast_index(const cv_tensor *t, int out_rank, const int64_t *out_dims, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = out_rank - 1, td = t->rank - 1; d >= 0; d--, td--) {
        int64_t coord = i % out_dims[d];
        i /= out_dims[d];
        if (td < 0)
            continue;
        if (t->dims[td] != 1)
            idx += coord * stride;
        stride *= t->dims[td];
    }
    return idx;
}
