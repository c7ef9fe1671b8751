/* ONNX reductions, ArgMax/ArgMin and Softmax/LogSoftmax.  Reduce axes are an
 * attribute before opset 13 (ReduceSum) or 18 (the others) and a constant
 * input after; the L1/L2/SumSquare/LogSum/LogSumExp variants are
 * compositions around reduce_sum. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct reduce_args {
    int64_t axes[CV_MAX_RANK];
    int n;                  /* -1: all axes */
    int64_t keepdims;
    bool noop;              /* empty axes with noop_with_empty_axes: identity */
} reduce_args;

static int reduce_read(onnx_ctx *c, reduce_args *r)
{
    int since = strcmp(c->node->op_type, "ReduceSum") == 0 ? 13 : 18;
    int64_t noop;
    r->n = onnx_ints_arg(c, 1, "axes", since, r->axes, CV_MAX_RANK);
    if (r->n == -2 || onnx_attr_int(c, "keepdims", 1, &r->keepdims) < 0 ||
        onnx_attr_int(c, "noop_with_empty_axes", 0, &noop) < 0)
        return -1;
    r->noop = noop && r->n <= 0;
    return 0;
}

static cv_value *reduce_op(onnx_ctx *c, const char *op, cv_value *x, const reduce_args *r,
                           int64_t keepdims)
{
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o) {
        if (r->n > 0)
            cv_op_set_ints(o, "axes", r->axes, r->n);
        cv_op_set_int(o, "keepdims", keepdims);
    }
    return onnx_finish(c, o);
}

static cv_value *square(onnx_ctx *c, cv_value *x)
{
    return onnx_binary(c, "mul", x, x);
}

/* log(sum(exp(x - max))) + max, with the max kept for broadcasting. */
static cv_value *log_sum_exp(onnx_ctx *c, cv_value *x, const reduce_args *r)
{
    cv_value *m = reduce_op(c, "reduce_max", x, r, 1);
    cv_value *s = reduce_op(c, "reduce_sum", onnx_unary(c, "exp", onnx_binary(c, "sub", x, m)), r,
                            r->keepdims);
    if (!r->keepdims && m) {
        int64_t all[CV_MAX_RANK];
        int n = r->n;
        if (n <= 0)
            for (n = 0; n < x->type.shape.rank; n++)
                all[n] = n;
        cv_op *o = onnx_op(c, "squeeze", &m, 1);
        if (o)
            cv_op_set_ints(o, "axes", r->n > 0 ? r->axes : all, n);
        m = onnx_finish(c, o);
    }
    return onnx_binary(c, "add", onnx_unary(c, "log", s), m);
}

static int lower_reduce(onnx_ctx *c)
{
    const char *t = c->node->op_type + 6;   /* after "Reduce" */
    reduce_args r;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || reduce_read(c, &r) < 0)
        return -1;
    if (r.noop)
        return onnx_bind_value(c, 0, x);
    cv_value *y;
    if (!strcmp(t, "Sum") || !strcmp(t, "Mean") || !strcmp(t, "Max") || !strcmp(t, "Min") ||
        !strcmp(t, "Prod"))
        y = reduce_op(c, c->entry->needs, x, &r, r.keepdims);
    else if (!strcmp(t, "L1"))
        y = reduce_op(c, "reduce_sum", onnx_unary(c, "abs", x), &r, r.keepdims);
    else if (!strcmp(t, "L2"))
        y = onnx_unary(c, "sqrt", reduce_op(c, "reduce_sum", square(c, x), &r, r.keepdims));
    else if (!strcmp(t, "SumSquare"))
        y = reduce_op(c, "reduce_sum", square(c, x), &r, r.keepdims);
    else if (!strcmp(t, "LogSum"))
        y = onnx_unary(c, "log", reduce_op(c, "reduce_sum", x, &r, r.keepdims));
    else
        y = log_sum_exp(c, x, &r);
    return onnx_bind_value(c, 0, y);
}

/* ArgMin is ArgMax of the negation (ties keep their order). */
static int lower_arg(onnx_ctx *c)
{
    int64_t axis, keepdims, last;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_int(c, "axis", 0, &axis) < 0 ||
        onnx_attr_int(c, "keepdims", 1, &keepdims) < 0 ||
        onnx_attr_int(c, "select_last_index", 0, &last) < 0)
        return -1;
    if (strcmp(c->node->op_type, "ArgMin") == 0)
        x = onnx_unary(c, "neg", x);
    cv_op *o = onnx_op(c, "argmax", &x, 1);
    if (o) {
        cv_op_set_int(o, "axis", axis);
        cv_op_set_int(o, "keepdims", keepdims);
        if (last)
            cv_op_set_int(o, "select_last_index", 1);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static cv_value *softmax_op(onnx_ctx *c, const char *op, cv_value *x, int64_t axis)
{
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_finish(c, o);
}

static cv_value *reshape_to(onnx_ctx *c, cv_value *x, const int64_t *shape, int n)
{
    cv_op *o = onnx_op(c, "reshape", &x, 1);
    if (o)
        cv_op_set_ints(o, "shape", shape, n);
    return onnx_finish(c, o);
}

/* Before opset 13 Softmax treats the input as 2-D: [prod(d[:axis]),
 * prod(d[axis:])], normalising over the second factor. */
static int lower_softmax(onnx_ctx *c)
{
    const char *op = c->entry->needs;
    int64_t axis;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_int(c, "axis", c->opset >= 13 ? -1 : 1, &axis) < 0)
        return -1;
    const cv_shape *s = &x->type.shape;
    int r = s->rank;
    if (axis < -r || axis >= r)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %lld is out of range for rank %d",
                        (long long)axis, r);
    int a = (int)(axis < 0 ? axis + r : axis);
    if (c->opset >= 13 || a == r - 1)
        return onnx_bind_value(c, 0, softmax_op(c, op, x, a));
    int64_t inner = 1, flat[2] = {-1, 0}, back[CV_MAX_RANK];
    int holes = 0;
    for (int i = 0; i < r; i++) {
        if (s->d[i].sym && i >= a)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "softmax over the symbolic dimension %s",
                            s->d[i].sym);
        back[i] = !s->d[i].sym ? s->d[i].n : (i == 0 && a == 1) ? 0 : -1;
        holes += back[i] == -1;
        if (i >= a)
            inner *= s->d[i].n;
    }
    if (holes > 1)
        return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "softmax over a shape with several symbols");
    flat[1] = inner;
    cv_value *y = softmax_op(c, op, reshape_to(c, x, flat, 2), 1);
    return onnx_bind_value(c, 0, reshape_to(c, y, back, r));
}

static const onnx_op_entry entries[] = {
    {"ReduceSum", 1, lower_reduce, "reduce_sum", 1u << 1},
    {"ReduceMean", 1, lower_reduce, "reduce_mean", 1u << 1},
    {"ReduceMax", 1, lower_reduce, "reduce_max", 1u << 1},
    {"ReduceMin", 1, lower_reduce, "reduce_min", 1u << 1},
    {"ReduceProd", 1, lower_reduce, "reduce_prod", 1u << 1},
    {"ReduceL1", 1, lower_reduce, "reduce_sum abs", 1u << 1},
    {"ReduceL2", 1, lower_reduce, "reduce_sum mul sqrt", 1u << 1},
    {"ReduceSumSquare", 1, lower_reduce, "reduce_sum mul", 1u << 1},
    {"ReduceLogSum", 1, lower_reduce, "reduce_sum log", 1u << 1},
    {"ReduceLogSumExp", 1, lower_reduce, "reduce_max reduce_sum exp sub log add squeeze",
     1u << 1},
    {"ArgMax", 1, lower_arg, "argmax", 0},
    {"ArgMin", 1, lower_arg, "argmax neg", 0},
    {"Softmax", 1, lower_softmax, "softmax", 0},
    {"LogSoftmax", 1, lower_softmax, "log_softmax", 0},
};

const onnx_op_family onnx_ops_reduce = {entries, sizeof entries / sizeof entries[0]};
