/* Op family fragment: normalizations (batch_norm in inference form,
 * layer_norm).  Statistics are computed in double. */
#include <math.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"

static int oom(cv_eval_ctx *c)
{
    cv_diag_error(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "%s: out of memory", c->op->name);
    return -1;
}

static int infer_floats(cv_infer_ctx *c)
{
    for (int i = 0; i < c->n_in; i++)
        if (cv_infer_dtype_in(c, i, CV_DT_FLOATS))
            return -1;
    return 0;
}

static int shape_error(cv_infer_ctx *c, int code, int i, const char *want)
{
    char got[160];
    cv_type_format(&c->in[i], got, sizeof got);
    return cv_infer_error(c, code, "%s: operand %d is %s but must be %s", c->op->name, i, got, want);
}

/* batch_norm(x, scale, bias, mean, var) {epsilon: float = 1e-5}
 * x is [N, C, ...]; the others are [C]: y = (x - mean) / sqrt(var + eps) * scale + bias. */
static int infer_batch_norm(cv_infer_ctx *c)
{
    if (infer_floats(c))
        return -1;
    const cv_shape *x = &c->in[0].shape;
    if (x->rank < 2)
        return shape_error(c, CV_E_RANK_MISMATCH, 0, "of rank 2 or more ([N, C, ...])");
    for (int i = 1; i < 5; i++) {
        const cv_shape *s = &c->in[i].shape;
        if (s->rank != 1)
            return shape_error(c, CV_E_RANK_MISMATCH, i, "of rank 1 ([C])");
        if (!cv_dim_equal(s->d[0], x->d[1]))
            return shape_error(c, CV_E_BROADCAST_MISMATCH, i, "as long as the channel axis of operand 0");
    }
    c->out[0] = c->in[0];
    return 0;
}

static int eval_batch_norm(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    double eps = cv_op_float(c->op, "epsilon", 1e-5);
    double *v = cv_tensor_to_f64(x, c->scratch), *p[4];
    for (int i = 0; i < 4; i++)
        if (!(p[i] = cv_tensor_to_f64(c->in[i + 1], c->scratch)))
            return oom(c);
    if (!v)
        return oom(c);
    int64_t channels = x->dims[1], inner = 1;
    for (int d = 2; d < x->rank; d++)
        inner *= x->dims[d];
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t ch = (i / inner) % channels;
        v[i] = (v[i] - p[2][ch]) / sqrt(p[3][ch] + eps) * p[0][ch] + p[1][ch];
    }
    cv_tensor_from_f64(&c->out[0], v);
    return 0;
}

/* True when s broadcasts (one way) to dims to[0..n): right-aligned, each of
 * its dims equal to the target's or 1. */
static bool broadcasts_to(const cv_shape *s, const cv_dim *to, int n)
{
    if (s->rank > n)
        return false;
    for (int i = 0; i < s->rank; i++) {
        cv_dim d = s->d[s->rank - 1 - i], t = to[n - 1 - i];
        if (!cv_dim_equal(d, t) && !(!d.sym && d.n == 1))
            return false;
    }
    return true;
}

/* layer_norm(x, scale, bias?) {axis: int = -1, epsilon: float = 1e-5}
 * Normalizes over axes [axis, rank); scale and bias broadcast to x.shape[axis:]. */
static int infer_layer_norm(cv_infer_ctx *c)
{
    int axis;
    if (infer_floats(c) || cv_infer_axis(c, cv_op_int(c->op, "axis", -1), c->in[0].shape.rank, &axis))
        return -1;
    for (int i = 1; i < c->n_in; i++) {
        if (cv_infer_same_dtype(c, 0, i))
            return -1;
        const cv_shape *x = &c->in[0].shape;
        if (!broadcasts_to(&c->in[i].shape, &x->d[axis], x->rank - axis))
            return shape_error(c, CV_E_BROADCAST_MISMATCH, i, "broadcastable to the normalized axes of operand 0");
    }
    c->out[0] = c->in[0];
    return 0;
}

static int eval_layer_norm(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    int64_t ax = cv_op_int(c->op, "axis", -1);
    int axis = (int)(ax < 0 ? ax + x->rank : ax), srank = x->rank - axis;
    double eps = cv_op_float(c->op, "epsilon", 1e-5);
    const int64_t *sdims = x->dims + axis;
    int64_t n = 1;
    for (int d = axis; d < x->rank; d++)
        n *= x->dims[d];
    double *v = cv_tensor_to_f64(x, c->scratch);
    double *scale = cv_tensor_to_f64(c->in[1], c->scratch);
    double *bias = c->n_in > 2 ? cv_tensor_to_f64(c->in[2], c->scratch) : NULL;
    if (!v || !scale || (c->n_in > 2 && !bias))
        return oom(c);
    for (int64_t row = 0; n && row < x->numel / n; row++) {
        double *r = v + row * n, mean = 0, var = 0;
        for (int64_t j = 0; j < n; j++)
            mean += r[j];
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++)
            var += (r[j] - mean) * (r[j] - mean);
        double inv = 1.0 / sqrt(var / (double)n + eps);
        for (int64_t j = 0; j < n; j++) {
            double y = (r[j] - mean) * inv * scale[cv_broadcast_index(c->in[1], srank, sdims, j)];
            r[j] = bias ? y + bias[cv_broadcast_index(c->in[2], srank, sdims, j)] : y;
        }
    }
    cv_tensor_from_f64(&c->out[0], v);
    return 0;
}

/* batch_norm: epsilon (float, default 1e-5) */
static const cv_attr_schema batch_norm_attrs[] = {
    {"epsilon", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* layer_norm: axis (int, default -1), epsilon (float, default 1e-5) */
static const cv_attr_schema layer_norm_attrs[] = {
    {"axis", CV_ATTR_INT, false},
    {"epsilon", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    /* batch_norm(x, scale, bias, mean, var) {epsilon: float = 1e-5}: floats. */
    {"batch_norm", 5, 5, 1, 1, batch_norm_attrs, infer_batch_norm, eval_batch_norm,
     cv_cg_batch_norm, 0},
    /* layer_norm(x, scale, bias?) {axis: int = -1, epsilon: float = 1e-5}: one float dtype. */
    {"layer_norm", 2, 3, 1, 1, layer_norm_attrs, infer_layer_norm, eval_layer_norm,
     cv_cg_layer_norm, 0},
};

const cv_op_family cv_ops_norm = {defs, (int)(sizeof defs / sizeof defs[0])};
