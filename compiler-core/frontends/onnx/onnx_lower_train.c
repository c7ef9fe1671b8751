/* The optimizer ops of the ai.onnx.preview.training domain (Adagrad,
 * Momentum, Adam) as elementwise CU-IR, one update per optimized tensor.
 * The learning rate R and the step count T must be known at import time:
 * their scalar adjustments are computed here. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct opt {
    onnx_ctx *c;
    double r;               /* learning rate */
    int64_t t;              /* update count */
    int n;                  /* optimized tensors */
    double norm;            /* norm_coefficient */
} opt;

static cv_value *sc(opt *o, const cv_value *like, double v)
{
    return like ? onnx_scalar(o->c, like->type.dtype, v) : NULL;
}

static cv_value *mul(opt *o, cv_value *a, cv_value *b) { return onnx_binary(o->c, "mul", a, b); }
static cv_value *add(opt *o, cv_value *a, cv_value *b) { return onnx_binary(o->c, "add", a, b); }
static cv_value *sub(opt *o, cv_value *a, cv_value *b) { return onnx_binary(o->c, "sub", a, b); }

/* Input j of group g (X, G, V, H, ... each n tensors after R and T). */
static cv_value *in(opt *o, int g, int j) { return onnx_in_value(o->c, 2 + g * o->n + j); }

/* norm_coefficient * x + g */
static cv_value *regularized(opt *o, cv_value *x, cv_value *g)
{
    return o->norm != 0 ? add(o, mul(o, sc(o, x, o->norm), x), g) : g;
}

/* Reads R, T and the tensor count for `groups` input groups. */
static int read_common(opt *o, int groups)
{
    onnx_ctx *c = o->c;
    const onnx_const *r = onnx_in_const(c, 0, "R"), *t = onnx_in_const(c, 1, "T");
    if (!r || !t)
        return -1;
    if (r->numel != 1 || t->numel != 1 || !onnx_const_is_int(t))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "R and T must be scalars");
    int n_in = onnx_n_in(c);
    if (n_in < 2 + groups || (n_in - 2) % groups)
        return onnx_err(c, CV_E_ONNX_ARITY, "needs R, T and %d groups of equal length", groups);
    o->r = onnx_const_f64(r, 0);
    o->t = onnx_const_i64(t, 0);
    o->n = (n_in - 2) / groups;
    return onnx_attr_float(c, "norm_coefficient", 0, &o->norm);
}

static int lower_adagrad(onnx_ctx *c)
{
    opt o = {.c = c};
    double decay, eps;
    if (read_common(&o, 3) < 0 || onnx_attr_float(c, "decay_factor", 0, &decay) < 0 ||
        onnx_attr_float(c, "epsilon", 1e-6, &eps) < 0)
        return -1;
    double rate = o.r / (1 + (double)o.t * decay);
    int rc = 0;
    for (int j = 0; j < o.n; j++) {
        cv_value *x = in(&o, 0, j), *g = regularized(&o, x, in(&o, 1, j));
        cv_value *h = add(&o, in(&o, 2, j), mul(&o, g, g));
        cv_value *hs = add(&o, onnx_unary(c, "sqrt", h), sc(&o, x, eps));
        cv_value *step = onnx_binary(c, "div", mul(&o, sc(&o, x, rate), g), hs);
        rc |= onnx_bind_value(c, j, sub(&o, x, step));
        rc |= onnx_bind_value(c, o.n + j, h);
    }
    return rc;
}

static int lower_momentum(onnx_ctx *c)
{
    opt o = {.c = c};
    double alpha, beta;
    const char *mode;
    if (read_common(&o, 3) < 0 || onnx_attr_float(c, "alpha", 0, &alpha) < 0 ||
        onnx_attr_float(c, "beta", 0, &beta) < 0 ||
        onnx_attr_string(c, "mode", "standard", &mode) < 0)
        return -1;
    bool nesterov = !strcmp(mode, "nesterov");
    if (!nesterov && strcmp(mode, "standard"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "mode '%s' is not standard or nesterov", mode);
    double b = o.t > 0 ? beta : 1;
    int rc = 0;
    for (int j = 0; j < o.n; j++) {
        cv_value *x = in(&o, 0, j), *g = regularized(&o, x, in(&o, 1, j));
        cv_value *v = add(&o, mul(&o, sc(&o, x, alpha), in(&o, 2, j)), mul(&o, sc(&o, x, b), g));
        cv_value *dir = nesterov ? add(&o, g, mul(&o, sc(&o, x, alpha), v)) : v;
        rc |= onnx_bind_value(c, j, sub(&o, x, mul(&o, sc(&o, x, o.r), dir)));
        rc |= onnx_bind_value(c, o.n + j, v);
    }
    return rc;
}

static int lower_adam(onnx_ctx *c)
{
    opt o = {.c = c};
    double alpha, beta, eps, post;
    if (read_common(&o, 4) < 0 || onnx_attr_float(c, "alpha", 0.9, &alpha) < 0 ||
        onnx_attr_float(c, "beta", 0.999, &beta) < 0 ||
        onnx_attr_float(c, "epsilon", 1e-6, &eps) < 0 ||
        onnx_attr_float(c, "norm_coefficient_post", 0, &post) < 0)
        return -1;
    double t = (double)o.t;
    double rate = o.t > 0 ? o.r * sqrt(1 - pow(beta, t)) / (1 - pow(alpha, t)) : o.r;
    int rc = 0;
    for (int j = 0; j < o.n; j++) {
        cv_value *x = in(&o, 0, j), *g = regularized(&o, x, in(&o, 1, j));
        cv_value *v = add(&o, mul(&o, sc(&o, x, alpha), in(&o, 2, j)),
                          mul(&o, sc(&o, x, 1 - alpha), g));
        cv_value *h = add(&o, mul(&o, sc(&o, x, beta), in(&o, 3, j)),
                          mul(&o, sc(&o, x, 1 - beta), mul(&o, g, g)));
        cv_value *hs = add(&o, onnx_unary(c, "sqrt", h), sc(&o, x, eps));
        cv_value *xn = sub(&o, x, mul(&o, sc(&o, x, rate), onnx_binary(c, "div", v, hs)));
        rc |= onnx_bind_value(c, j, post != 0 ? mul(&o, sc(&o, x, 1 - post), xn) : xn);
        rc |= onnx_bind_value(c, o.n + j, v);
        rc |= onnx_bind_value(c, 2 * o.n + j, h);
    }
    return rc;
}

/* Looked up only for nodes of the training domain (onnx_node_entry). */
static const onnx_op_entry entries[] = {
    {"Adagrad", 1, lower_adagrad, "add sub mul div sqrt", 0x3u},
    {"Momentum", 1, lower_momentum, "add sub mul", 0x3u},
    {"Adam", 1, lower_adam, "add sub mul div sqrt", 0x3u},
};

const onnx_op_family onnx_ops_train = {entries, sizeof entries / sizeof entries[0]};
