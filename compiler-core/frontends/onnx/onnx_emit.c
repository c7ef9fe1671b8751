/* Building CU-IR ops for the node being lowered: every op gets
 * loc("<node label>"), every failure is reported against the node. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

cv_op *onnx_op(onnx_ctx *c, const char *opname, cv_value *const *operands, int n)
{
    for (int i = 0; i < n; i++)
        if (!operands[i])
            return NULL;   /* already reported by whoever failed to make it */
    cv_op *op = cv_op_new(c->f, opname, operands, n);
    if (!op) {
        onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory creating %s", opname);
        return NULL;
    }
    if (!op->def)
        onnx_err(c, CV_E_ONNX_UNSUPPORTED_OPS, "CU-IR op '%s' is not in the op table", opname);
    cv_op_add_loc(op, c->label, 0, 0);
    return op->def ? op : NULL;
}

int onnx_finish_n(onnx_ctx *c, cv_op *op, int n, cv_value **out)
{
    if (!op)
        return -1;
    int before = c->d->n_errors;
    if (cv_op_finish(op, n, c->d) < 0) {
        /* The op table's message lacks the ONNX node: add it as a note. */
        if (c->d->n_errors > before && c->d->n > 0)
            cv_diag_note(c->d, c->d->v[c->d->n - 1].id, "while importing ONNX node '%s' (%s)",
                         c->label, c->node ? c->node->op_type : "?");
        else
            onnx_err(c, CV_E_INTERNAL_ERROR, "CU-IR op %s failed to build", op->name);
        return -1;
    }
    for (int i = 0; out && i < n; i++)
        out[i] = op->results[i];
    return 0;
}

cv_value *onnx_finish(onnx_ctx *c, cv_op *op)
{
    cv_value *v = NULL;
    return onnx_finish_n(c, op, 1, &v) < 0 ? NULL : v;
}

cv_value *onnx_unary(onnx_ctx *c, const char *opname, cv_value *a)
{
    return onnx_finish(c, onnx_op(c, opname, &a, 1));
}

cv_value *onnx_binary(onnx_ctx *c, const char *opname, cv_value *a, cv_value *b)
{
    cv_value *ops[2] = {a, b};
    return onnx_finish(c, onnx_op(c, opname, ops, 2));
}

cv_value *onnx_scalar(onnx_ctx *c, cv_dtype dt, double v)
{
    char key[64];
    snprintf(key, sizeof key, "%s:%.17g", cv_dtype_name(dt), v);
    cv_value *known = onnx_map_get(&c->scalars, key);
    if (known)
        return known;
    unsigned char buf[16] = {0};
    cv_dtype_store(dt, buf, 0, v);
    cv_type t = {.dtype = dt};
    const char *id = onnx_ident(c, "const");
    cv_param *p = id ? cv_func_add_dense(c->f, id, &t, buf, cv_dtype_size(dt)) : NULL;
    const char *k = cv_arena_strdup(c->a, key);
    if (!p || !k) {
        onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory adding a constant");
        return NULL;
    }
    onnx_map_put(&c->scalars, k, p->value);
    return p->value;
}

/* ---- helpers the index-based lowerings share ---- */

cv_value *onnx_where(onnx_ctx *c, cv_value *cond, cv_value *a, cv_value *b)
{
    cv_value *ops[3] = {cond, a, b};
    return onnx_finish(c, onnx_op(c, "where", ops, 3));
}

cv_value *onnx_op_ints(onnx_ctx *c, const char *op, cv_value *x, const char *attr,
                       const int64_t *v, int n)
{
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o)
        cv_op_set_ints(o, attr, v, n);
    return onnx_finish(c, o);
}

cv_value *onnx_slice(onnx_ctx *c, cv_value *x, int n, const int64_t *axes, const int64_t *starts,
                     const int64_t *ends, const int64_t *steps)
{
    cv_op *o = onnx_op(c, "slice", &x, 1);
    if (o) {
        cv_op_set_ints(o, "starts", starts, n);
        cv_op_set_ints(o, "ends", ends, n);
        cv_op_set_ints(o, "axes", axes, n);
        if (steps)
            cv_op_set_ints(o, "steps", steps, n);
    }
    return onnx_finish(c, o);
}

cv_value *onnx_slice1(onnx_ctx *c, cv_value *x, int64_t axis, int64_t start, int64_t end)
{
    return onnx_slice(c, x, 1, &axis, &start, &end, NULL);
}

cv_value *onnx_sum_axis(onnx_ctx *c, cv_value *x, int64_t axis, int keepdims)
{
    cv_op *o = onnx_op(c, "reduce_sum", &x, 1);
    if (o) {
        cv_op_set_ints(o, "axes", &axis, 1);
        cv_op_set_int(o, "keepdims", keepdims);
    }
    return onnx_finish(c, o);
}

cv_value *onnx_sum_all(onnx_ctx *c, cv_value *x)
{
    cv_op *o = onnx_op(c, "reduce_sum", &x, 1);
    if (o)
        cv_op_set_int(o, "keepdims", 0);
    return onnx_finish(c, o);
}

/* 0, 1, ..., n-1 of dtype dt laid along `axis` of a rank-`rank` tensor. */
cv_value *onnx_iota(onnx_ctx *c, cv_dtype dt, int rank, int axis, int64_t n)
{
    int64_t dims[CV_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = i == axis ? n : 1;
    onnx_const *k = onnx_const_new(c, dt, rank, dims);
    for (int64_t i = 0; k && i < n; i++)
        onnx_const_set_i64(k, i, i);
    return onnx_const_value(c, k, "iota");
}

cv_value *onnx_const_value(onnx_ctx *c, onnx_const *k, const char *what)
{
    if (!k)
        return NULL;
    char name[160];
    snprintf(name, sizeof name, "%.120s_%s", c->label, what);
    onnx_val tmp = {.name = cv_arena_strdup(c->a, name), .c = k};
    return tmp.name ? onnx_materialize(c, &tmp) : NULL;
}

/* The static extent of x's dim `axis`, or a CV4305 report. */
int onnx_static_extent(onnx_ctx *c, const cv_value *x, int axis, int64_t *out)
{
    cv_dim d = x->type.shape.d[axis];
    *out = 0;
    if (d.sym)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "dimension %d is the symbolic %s; it must be "
                        "static here", axis, d.sym);
    *out = d.n;
    return 0;
}

int onnx_norm_axis(onnx_ctx *c, int64_t axis, int rank, int *out)
{
    *out = (int)(axis < 0 ? axis + rank : axis);
    if (axis < -rank || axis >= rank)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %lld is out of range for rank %d",
                        (long long)axis, rank);
    return 0;
}
