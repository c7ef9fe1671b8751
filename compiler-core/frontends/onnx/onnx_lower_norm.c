/* ONNX normalisations: BatchNormalization and LayerNormalization map to
 * CU-IR ops; InstanceNormalization, MeanVarianceNormalization, LRN and
 * LayerNormalization's Mean/InvStdDev outputs are compositions. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static bool wants_output(const onnx_ctx *c, int i)
{
    return c->node->n_output > (size_t)i && c->node->output[i][0];
}

static cv_value *reduce_mean(onnx_ctx *c, cv_value *x, const int64_t *axes, int n)
{
    cv_op *o = onnx_op(c, "reduce_mean", &x, 1);
    if (o) {
        cv_op_set_ints(o, "axes", axes, n);
        cv_op_set_int(o, "keepdims", 1);
    }
    return onnx_finish(c, o);
}

static cv_value *with_axes(onnx_ctx *c, const char *op, cv_value *x, const int64_t *axes, int n)
{
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o)
        cv_op_set_ints(o, "axes", axes, n);
    return onnx_finish(c, o);
}

static cv_value *kscalar(onnx_ctx *c, const cv_value *like, double v)
{
    return like ? onnx_scalar(c, like->type.dtype, v) : NULL;
}

/* Training mode (opset 14+): normalise with the batch's own mean and
 * (biased) variance over every axis but 1; outputs 1 and 2 are the running
 * statistics, input * momentum + batch * (1 - momentum). */
static int batch_norm_training(onnx_ctx *c, cv_value **ops)
{
    double momentum;
    if (onnx_attr_float(c, "momentum", 0.9, &momentum) < 0 || !ops[0])
        return -1;
    int r = ops[0]->type.shape.rank;
    int64_t axes[CV_MAX_RANK];
    int n = 0;
    for (int i = 0; i < r; i++)
        if (i != 1)
            axes[n++] = i;
    cv_value *mean = reduce_mean(c, ops[0], axes, n);
    cv_value *d = onnx_binary(c, "sub", ops[0], mean);
    cv_value *var = reduce_mean(c, onnx_binary(c, "mul", d, d), axes, n);
    cv_value *stats[2] = {with_axes(c, "squeeze", mean, axes, n), with_axes(c, "squeeze", var, axes, n)};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        cv_value *run = onnx_binary(c, "mul", ops[3 + i], kscalar(c, ops[0], momentum));
        cv_value *cur = onnx_binary(c, "mul", stats[i], kscalar(c, ops[0], 1 - momentum));
        rc |= onnx_bind_value(c, 1 + i, onnx_binary(c, "add", run, cur));
        ops[3 + i] = stats[i];
    }
    return rc;
}

static int lower_batch_norm(onnx_ctx *c)
{
    double eps;
    int64_t training = 0, spatial = 1;
    if (onnx_attr_float(c, "epsilon", 1e-5, &eps) < 0 ||
        onnx_attr_int(c, "training_mode", 0, &training) < 0 ||
        onnx_attr_int(c, "spatial", 1, &spatial) < 0)
        return -1;
    bool train = training && c->opset >= 14;
    if ((training && !train) || (!train && (wants_output(c, 1) || wants_output(c, 2))))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "training mode (running statistics "
                        "outputs) is supported from opset 14 only");
    if (!spatial)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "spatial=0 is not supported");
    cv_value *ops[5];
    for (int i = 0; i < 5; i++)
        ops[i] = onnx_in_value(c, i);
    if (train && batch_norm_training(c, ops) < 0)
        return -1;
    cv_op *o = onnx_op(c, "batch_norm", ops, 5);
    if (o)
        cv_op_set_float(o, "epsilon", eps);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* (x - mean) / sqrt(var + eps) over axes, with the statistics kept. */
typedef struct norm_parts {
    cv_value *centered, *mean, *inv_std;
} norm_parts;

static void normalise(onnx_ctx *c, cv_value *x, const int64_t *axes, int n, double eps,
                      norm_parts *p)
{
    p->mean = reduce_mean(c, x, axes, n);
    p->centered = onnx_binary(c, "sub", x, p->mean);
    cv_value *var = reduce_mean(c, onnx_binary(c, "mul", p->centered, p->centered), axes, n);
    cv_value *std = onnx_unary(c, "sqrt", onnx_binary(c, "add", var, kscalar(c, x, eps)));
    p->inv_std = onnx_binary(c, "div", kscalar(c, x, 1), std);
}

/* Instance norm: statistics over the spatial axes; scale and bias [C] are
 * viewed as [C,1,...]. */
static int lower_instance_norm(onnx_ctx *c)
{
    double eps;
    cv_value *x = onnx_in_value(c, 0), *scale = onnx_in_value(c, 1), *bias = onnx_in_value(c, 2);
    if (!x || !scale || !bias || onnx_attr_float(c, "epsilon", 1e-5, &eps) < 0)
        return -1;
    int r = x->type.shape.rank;
    int64_t axes[CV_MAX_RANK], unsq[CV_MAX_RANK];
    if (r < 3)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the input must have rank >= 3");
    for (int i = 2; i < r; i++) {
        axes[i - 2] = i;
        unsq[i - 2] = i - 1;
    }
    norm_parts p;
    normalise(c, x, axes, r - 2, eps, &p);
    cv_value *y = onnx_binary(c, "mul", p.centered, p.inv_std);
    y = onnx_binary(c, "mul", y, with_axes(c, "unsqueeze", scale, unsq, r - 2));
    y = onnx_binary(c, "add", y, with_axes(c, "unsqueeze", bias, unsq, r - 2));
    return onnx_bind_value(c, 0, y);
}

/* LayerNormalization: the CU-IR op for Y; Mean and InvStdDev, when asked
 * for, are computed alongside (stash_type float). */
static int lower_layer_norm(onnx_ctx *c)
{
    double eps;
    int64_t axis, stash;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_float(c, "epsilon", 1e-5, &eps) < 0 ||
        onnx_attr_int(c, "axis", -1, &axis) < 0 || onnx_attr_int(c, "stash_type", 1, &stash) < 0)
        return -1;
    if (stash != ONNX_DT_FLOAT || x->type.dtype != CV_F32)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "only float inputs and stash_type float "
                        "are supported");
    int r = x->type.shape.rank;
    if (axis < -r || axis >= r)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %lld is out of range", (long long)axis);
    int a = (int)(axis < 0 ? axis + r : axis);
    cv_value *ops[3] = {x, onnx_in_value(c, 1), NULL};
    int n = 2;
    if (onnx_in(c, 2))
        ops[n++] = onnx_in_value(c, 2);
    cv_op *o = onnx_op(c, "layer_norm", ops, n);
    if (o) {
        cv_op_set_int(o, "axis", a);
        cv_op_set_float(o, "epsilon", eps);
    }
    if (onnx_bind_value(c, 0, onnx_finish(c, o)) < 0)
        return -1;
    if (!wants_output(c, 1) && !wants_output(c, 2))
        return 0;
    int64_t axes[CV_MAX_RANK];
    for (int i = a; i < r; i++)
        axes[i - a] = i;
    norm_parts p;
    normalise(c, x, axes, r - a, eps, &p);
    return onnx_bind_value(c, 1, p.mean) | onnx_bind_value(c, 2, p.inv_std);
}

/* The ONNX function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9). */
static int lower_mvn(onnx_ctx *c)
{
    int64_t axes[CV_MAX_RANK] = {0, 2, 3};
    int n = onnx_attr_ints(c, "axes", axes, CV_MAX_RANK);
    cv_value *x = onnx_in_value(c, 0);
    if (!x || n == -2)
        return -1;
    if (n < 0)
        n = 3;
    cv_value *mean = reduce_mean(c, x, axes, n);
    cv_value *ex2 = reduce_mean(c, onnx_binary(c, "mul", x, x), axes, n);
    cv_value *var = onnx_binary(c, "sub", ex2, onnx_binary(c, "mul", mean, mean));
    cv_value *den = onnx_binary(c, "add", onnx_unary(c, "sqrt", var), kscalar(c, x, 1e-9));
    return onnx_bind_value(c, 0, onnx_binary(c, "div", onnx_binary(c, "sub", x, mean), den));
}

/* LRN: x / (bias + alpha/size * sum of squares over a channel window)^beta.
 * The window sum is an average pool over [N,1,C,H*W] with size x 1 windows
 * (padding counted), times size. */
static int lower_lrn(onnx_ctx *c)
{
    double alpha, beta, bias;
    int64_t size;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_float(c, "alpha", 1e-4, &alpha) < 0 ||
        onnx_attr_float(c, "beta", 0.75, &beta) < 0 || onnx_attr_float(c, "bias", 1, &bias) < 0 ||
        onnx_attr_int(c, "size", 0, &size) < 0)
        return -1;
    const cv_shape *s = &x->type.shape;
    if (size < 1 || s->rank < 3)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "needs size >= 1 and an input of rank >= 3");
    int64_t spatial = 1, view[4] = {0, 1, 0, 0}, back[CV_MAX_RANK] = {0};
    for (int i = 1; i < s->rank; i++) {
        if (s->d[i].sym)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "LRN needs static C and spatial extents");
        if (i >= 2)
            spatial *= s->d[i].n;
        back[i] = s->d[i].n;
    }
    view[2] = s->d[1].n;
    view[3] = spatial;
    cv_value *sq = onnx_binary(c, "mul", x, x);
    cv_op *o = onnx_op(c, "reshape", &sq, 1);
    if (o)
        cv_op_set_ints(o, "shape", view, 4);
    cv_value *v = onnx_finish(c, o);
    int64_t kernel[2] = {size, 1}, pads[4] = {(size - 1) / 2, 0, size / 2, 0};
    o = onnx_op(c, "avg_pool2d", &v, 1);
    if (o) {
        cv_op_set_ints(o, "kernel", kernel, 2);
        cv_op_set_ints(o, "pad", pads, 4);
        cv_op_set_int(o, "count_include_pad", 1);
    }
    v = onnx_finish(c, o);
    o = onnx_op(c, "reshape", &v, 1);
    if (o)
        cv_op_set_ints(o, "shape", back, s->rank);
    v = onnx_binary(c, "mul", onnx_finish(c, o), kscalar(c, x, alpha));
    v = onnx_binary(c, "pow", onnx_binary(c, "add", v, kscalar(c, x, bias)), kscalar(c, x, beta));
    return onnx_bind_value(c, 0, onnx_binary(c, "div", x, v));
}

static const onnx_op_entry entries[] = {
    {"BatchNormalization", 7, lower_batch_norm, "batch_norm reduce_mean sub mul squeeze add", 0},
    {"InstanceNormalization", 6, lower_instance_norm,
     "reduce_mean sub mul add sqrt div unsqueeze", 0},
    {"LayerNormalization", 17, lower_layer_norm, "layer_norm reduce_mean sub mul add sqrt div", 0},
    {"MeanVarianceNormalization", 9, lower_mvn, "reduce_mean mul sub sqrt add div", 0},
    {"LRN", 1, lower_lrn, "mul reshape avg_pool2d add pow div", 0},
};

const onnx_op_family onnx_ops_norm = {entries, sizeof entries / sizeof entries[0]};
