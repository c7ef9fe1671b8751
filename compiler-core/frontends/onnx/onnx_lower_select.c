/* ONNX ops that select elements by index, built from one-hot masks:
 * mask = (index == iota along the axis), then where/reduce_sum picks the
 * element.  GatherElements, Hardmax, NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (its log_softmax, then the same loss). */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

/* GatherElements: out[.., i, ..] = data[.., idx[.., i, ..], ..] along axis,
 * as sum_j where(idx == j, data_j, 0) over a new axis after `axis`. */
static int lower_gather_elements(onnx_ctx *c)
{
    int64_t axis_attr, n;
    cv_value *data = onnx_in_value(c, 0), *idx = onnx_in_value(c, 1);
    int axis;
    if (!data || !idx || onnx_attr_int(c, "axis", 0, &axis_attr) < 0)
        return -1;
    int r = data->type.shape.rank;
    if (onnx_norm_axis(c, axis_attr, r, &axis) < 0 || onnx_static_extent(c, data, axis, &n) < 0)
        return -1;
    if (idx->type.shape.rank != r || r + 1 > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "indices must have the data's rank (< %d)",
                        CV_MAX_RANK);
    cv_dtype it = idx->type.dtype;
    cv_value *neg = onnx_binary(c, "less", idx, onnx_scalar(c, it, 0));
    idx = onnx_where(c, neg, onnx_binary(c, "add", idx, onnx_scalar(c, it, (double)n)), idx);
    int64_t after = axis + 1, at = axis;
    cv_value *hit = onnx_binary(c, "equal", onnx_op_ints(c, "unsqueeze", idx, "axes", &after, 1),
                                onnx_iota(c, it, r + 1, axis + 1, n));
    cv_value *du = onnx_op_ints(c, "unsqueeze", data, "axes", &at, 1);
    cv_value *picked = onnx_where(c, hit, du, onnx_scalar(c, data->type.dtype, 0));
    return onnx_bind_value(c, 0, onnx_sum_axis(c, picked, axis + 1, 0));
}

/* Hardmax: 1 at the first maximum along axis, 0 elsewhere. */
static int lower_hardmax(onnx_ctx *c)
{
    int64_t axis_attr, n;
    int axis;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_int(c, "axis", -1, &axis_attr) < 0 ||
        onnx_norm_axis(c, axis_attr, x->type.shape.rank, &axis) < 0 ||
        onnx_static_extent(c, x, axis, &n) < 0)
        return -1;
    cv_op *o = onnx_op(c, "argmax", &x, 1);
    if (o) {
        cv_op_set_int(o, "axis", axis);
        cv_op_set_int(o, "keepdims", 1);
    }
    cv_value *hit = onnx_binary(c, "equal", onnx_finish(c, o),
                                onnx_iota(c, CV_I64, x->type.shape.rank, axis, n));
    o = onnx_op(c, "cast", &hit, 1);
    if (o)
        cv_op_set_dtype(o, "to", x->type.dtype);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* The NegativeLogLikelihoodLoss core on log-probabilities lp [N,C,d..]
 * and targets t [N,d..]; weight [C] may be NULL. */
static cv_value *nll(onnx_ctx *c, cv_value *lp, cv_value *t, cv_value *weight)
{
    const char *reduction;
    int64_t classes, ignore;
    bool has_ignore = onnx_attr(c, "ignore_index") != NULL;
    if (!lp || !t || onnx_attr_string(c, "reduction", "mean", &reduction) < 0 ||
        onnx_attr_int(c, "ignore_index", 0, &ignore) < 0)
        return NULL;
    int r = lp->type.shape.rank;
    if (r < 2 || t->type.shape.rank != r - 1 || onnx_static_extent(c, lp, 1, &classes) < 0) {
        if (r >= 2 && t->type.shape.rank != r - 1)
            onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "target must have rank %d", r - 1);
        return NULL;
    }
    if (strcmp(reduction, "none") && strcmp(reduction, "sum") && strcmp(reduction, "mean")) {
        onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "reduction '%s' is invalid", reduction);
        return NULL;
    }
    cv_dtype ft = lp->type.dtype, it = t->type.dtype;
    int64_t one = 1, wshape[CV_MAX_RANK];
    cv_value *hit = onnx_binary(c, "equal", onnx_op_ints(c, "unsqueeze", t, "axes", &one, 1),
                                onnx_iota(c, it, r, 1, classes));
    cv_value *zero = onnx_scalar(c, ft, 0);
    cv_value *picked = onnx_sum_axis(c, onnx_where(c, hit, lp, zero), 1, 0);
    cv_value *w = onnx_scalar(c, ft, 1);
    if (weight) {
        for (int i = 0; i < r; i++)
            wshape[i] = i == 1 ? classes : 1;
        w = onnx_op_ints(c, "reshape", weight, "shape", wshape, r);
    }
    cv_value *wt = onnx_sum_axis(c, onnx_where(c, hit, w, zero), 1, 0);
    if (has_ignore) {
        cv_value *ignored = onnx_binary(c, "equal", t, onnx_scalar(c, it, (double)ignore));
        wt = onnx_where(c, ignored, zero, wt);
    }
    cv_value *loss = onnx_unary(c, "neg", onnx_binary(c, "mul", picked, wt));
    if (!strcmp(reduction, "none"))
        return loss;
    if (!strcmp(reduction, "sum"))
        return onnx_sum_all(c, loss);
    return onnx_binary(c, "div", onnx_sum_all(c, loss), onnx_sum_all(c, wt));
}

static int lower_nll(onnx_ctx *c)
{
    cv_value *w = onnx_in(c, 2) ? onnx_in_value(c, 2) : NULL;
    if (onnx_in(c, 2) && !w)
        return -1;
    return onnx_bind_value(c, 0, nll(c, onnx_in_value(c, 0), onnx_in_value(c, 1), w));
}

static int lower_sce(onnx_ctx *c)
{
    cv_value *scores = onnx_in_value(c, 0);
    cv_value *w = onnx_in(c, 2) ? onnx_in_value(c, 2) : NULL;
    if (!scores || (onnx_in(c, 2) && !w))
        return -1;
    cv_op *o = onnx_op(c, "log_softmax", &scores, 1);
    if (o)
        cv_op_set_int(o, "axis", 1);
    cv_value *lp = onnx_finish(c, o);
    if (onnx_bind_value(c, 0, nll(c, lp, onnx_in_value(c, 1), w)) < 0)
        return -1;
    return onnx_bind_value(c, 1, lp);
}

static const onnx_op_entry entries[] = {
    {"GatherElements", 11, lower_gather_elements,
     "less add where unsqueeze equal reduce_sum", 0},
    {"Hardmax", 13, lower_hardmax, "argmax equal cast", 0},
    {"NegativeLogLikelihoodLoss", 12, lower_nll,
     "unsqueeze equal where reduce_sum reshape mul neg div", 0},
    {"SoftmaxCrossEntropyLoss", 12, lower_sce,
     "log_softmax unsqueeze equal where reduce_sum reshape mul neg div", 0},
};

const onnx_op_family onnx_ops_select = {entries, sizeof entries / sizeof entries[0]};
