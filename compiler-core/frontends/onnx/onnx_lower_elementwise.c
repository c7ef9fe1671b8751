/* ONNX elementwise ops: those with a CU-IR op of their own map directly;
 * the rest are compositions of CU-IR elementwise ops (Elu, Softsign, PRelu,
 * the boolean ops through `where`, ...).  Scalars are params of the
 * operand's dtype. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

#define X(i) onnx_in_value(c, (i))

static cv_dtype dt_of(const cv_value *v)
{
    return v ? v->type.dtype : CV_DT_INVALID;
}

static cv_value *kscalar(onnx_ctx *c, const cv_value *like, double v)
{
    return like ? onnx_scalar(c, like->type.dtype, v) : NULL;
}

static cv_value *where3(onnx_ctx *c, cv_value *cond, cv_value *a, cv_value *b)
{
    cv_value *ops[3] = {cond, a, b};
    return onnx_finish(c, onnx_op(c, "where", ops, 3));
}

static cv_value *bool_not(onnx_ctx *c, cv_value *b)
{
    return where3(c, b, onnx_scalar(c, CV_BOOL, 0), onnx_scalar(c, CV_BOOL, 1));
}

/* Refuses non-float operands of float-only compositions (CV4303). */
static int need_float(onnx_ctx *c, const cv_value *x)
{
    if (!x)
        return -1;
    if (!cv_dtype_is_float(x->type.dtype))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "element type %s is not supported here",
                        cv_dtype_name(x->type.dtype));
    return 0;
}

/* ---- direct maps: the entry's `needs` names the CU-IR op ---------------- */

/* The unary ops shape and size arithmetic uses, on one known element. */
static int64_t fold_int(const char *op, int64_t v)
{
    if (!strcmp(op, "Neg") || (!strcmp(op, "Abs") && v < 0))
        return (int64_t)(0u - (uint64_t)v);
    return !strcmp(op, "Relu") && v < 0 ? 0 : v;   /* Abs, Relu, Ceil, Floor */
}

static double fold_float(const char *op, double v)
{
    switch (op[0]) {
    case 'N': return -v;
    case 'A': return fabs(v);
    case 'C': return ceil(v);
    case 'F': return floor(v);
    default: return v < 0 ? 0 : v;   /* Relu; NaN stays */
    }
}

static int lower_unary(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    const char *op = c->node->op_type;
    bool folds = !strcmp(op, "Neg") || !strcmp(op, "Abs") || !strcmp(op, "Relu") ||
                 !strcmp(op, "Ceil") || !strcmp(op, "Floor");
    if (folds && x && x->c && !x->v && onnx_foldable(x->c) && !x->c->syms &&
        (onnx_const_is_int(x->c) || cv_dtype_is_float(x->c->dt))) {
        /* shape and size arithmetic: evaluate here */
        onnx_const *k = onnx_const_new(c, x->c->dt, x->c->rank, x->c->dims);
        for (int64_t i = 0; k && i < k->numel; i++) {
            if (onnx_const_is_int(x->c))
                onnx_const_set_i64(k, i, fold_int(op, onnx_const_i64(x->c, i)));
            else
                onnx_const_set_f64(k, i, fold_float(op, onnx_const_f64(x->c, i)));
        }
        return onnx_bind_const(c, 0, k);
    }
    return onnx_bind_value(c, 0, onnx_unary(c, c->entry->needs, X(0)));
}

/* Both operands known at import time (shape arithmetic): evaluate here. */
static int try_fold(onnx_ctx *c)
{
    onnx_val *a = onnx_in(c, 0), *b = onnx_in(c, 1);
    if (onnx_n_in(c) != 2 || !a || !b || !a->c || !b->c || a->v || b->v ||
        !onnx_foldable(a->c) || !onnx_foldable(b->c))
        return 0;
    onnx_const *k = onnx_fold_binary(c, c->node->op_type, a->c, b->c);
    return k ? (onnx_bind_const(c, 0, k) < 0 ? -1 : 1) : 0;
}

static int lower_binary(onnx_ctx *c)
{
    int folded = try_fold(c);
    if (folded)
        return folded < 0 ? -1 : 0;
    return onnx_bind_value(c, 0, onnx_binary(c, c->entry->needs, X(0), X(1)));
}

static int lower_variadic(onnx_ctx *c)
{
    int n = onnx_n_in(c);
    cv_value *ops[64];
    if (n < 1 || n > 64)
        return onnx_err(c, CV_E_ONNX_ARITY, "needs 1 to 64 inputs, has %d", n);
    int folded = try_fold(c);
    if (folded)
        return folded < 0 ? -1 : 0;
    for (int i = 0; i < n; i++)
        ops[i] = X(i);
    return onnx_bind_value(c, 0, onnx_finish(c, onnx_op(c, c->entry->needs, ops, n)));
}

/* Sum and Mean: a chain of adds (Mean then divides by the count). */
static int lower_sum_mean(onnx_ctx *c)
{
    int n = onnx_n_in(c);
    if (n < 1)
        return onnx_err(c, CV_E_ONNX_ARITY, "needs at least one input");
    cv_value *acc = X(0);
    for (int i = 1; i < n && acc; i++)
        acc = onnx_binary(c, "add", acc, X(i));
    if (strcmp(c->node->op_type, "Mean") == 0 && n > 1 && acc)
        acc = onnx_binary(c, "div", acc, kscalar(c, acc, n));
    return onnx_bind_value(c, 0, acc);
}

static int lower_identity(onnx_ctx *c)
{
    onnx_val *v = onnx_in(c, 0);
    if (!v)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    if (v->kind != ONNX_VAL_TENSOR)   /* a sequence or optional: the same list */
        return onnx_bind_val(c, 0, v);
    if (v->c && !v->v)
        return onnx_bind_const(c, 0, v->c);
    return onnx_bind_value(c, 0, onnx_materialize(c, v));
}

/* ---- activations with attributes ----------------------------------------- */

static int lower_alpha_op(onnx_ctx *c, const char *op, double dflt)
{
    double alpha;
    if (onnx_attr_float(c, "alpha", dflt, &alpha) < 0)
        return -1;
    cv_value *x = X(0);
    cv_op *o = onnx_op(c, op, &x, 1);
    if (o)
        cv_op_set_float(o, "alpha", alpha);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static int lower_leaky_relu(onnx_ctx *c) { return lower_alpha_op(c, "leaky_relu", 0.01); }

static int lower_hard_sigmoid(onnx_ctx *c)
{
    double alpha, beta;
    if (onnx_attr_float(c, "alpha", 0.2, &alpha) < 0 || onnx_attr_float(c, "beta", 0.5, &beta) < 0)
        return -1;
    cv_value *x = X(0);
    cv_op *o = onnx_op(c, "hard_sigmoid", &x, 1);
    if (o) {
        cv_op_set_float(o, "alpha", alpha);
        cv_op_set_float(o, "beta", beta);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* A constant bound of Clip: attribute before opset 11, optional input after. */
static int clip_bound(onnx_ctx *c, int input, const char *attr, double dflt, double *out)
{
    if (c->opset < 11)
        return onnx_attr_float(c, attr, dflt, out);
    *out = dflt;
    if (!onnx_in(c, input))
        return 0;
    const onnx_const *k = onnx_in_const(c, input, attr);
    if (!k)
        return -1;
    if (k->numel != 1)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "%s must be a scalar", attr);
    *out = onnx_const_f64(k, 0);
    return 0;
}

static int lower_clip(onnx_ctx *c)
{
    double lo, hi;
    if (clip_bound(c, 1, "min", -INFINITY, &lo) < 0 || clip_bound(c, 2, "max", INFINITY, &hi) < 0)
        return -1;
    cv_value *x = X(0);
    cv_op *o = onnx_op(c, "clip", &x, 1);
    if (o && isfinite(lo))
        cv_op_set_float(o, "min", lo);
    if (o && isfinite(hi))
        cv_op_set_float(o, "max", hi);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* alpha * (exp(x) - 1), the negative branch of Elu/Selu/Celu. */
static cv_value *expm1_scaled(onnx_ctx *c, cv_value *x, double alpha)
{
    cv_value *e = onnx_binary(c, "sub", onnx_unary(c, "exp", x), kscalar(c, x, 1));
    return onnx_binary(c, "mul", e, kscalar(c, x, alpha));
}

static int lower_elu_selu(onnx_ctx *c)
{
    bool selu = strcmp(c->node->op_type, "Selu") == 0;
    double alpha, gamma = 1;
    cv_value *x = X(0);
    if (need_float(c, x) < 0 || onnx_attr_float(c, "alpha", selu ? 1.67326319217681884765625 : 1,
                                                &alpha) < 0 ||
        (selu && onnx_attr_float(c, "gamma", 1.05070102214813232421875, &gamma) < 0))
        return -1;
    cv_value *neg = onnx_binary(c, "less", x, kscalar(c, x, 0));
    cv_value *y = where3(c, neg, expm1_scaled(c, x, alpha), x);
    if (selu)
        y = onnx_binary(c, "mul", y, kscalar(c, x, gamma));
    return onnx_bind_value(c, 0, y);
}

/* Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)). */
static int lower_celu(onnx_ctx *c)
{
    double alpha;
    cv_value *x = X(0);
    if (need_float(c, x) < 0 || onnx_attr_float(c, "alpha", 1, &alpha) < 0)
        return -1;
    if (alpha == 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "alpha must not be 0");
    cv_value *zero = kscalar(c, x, 0);
    cv_value *e = expm1_scaled(c, onnx_binary(c, "div", x, kscalar(c, x, alpha)), alpha);
    cv_value *y = onnx_binary(c, "add", onnx_binary(c, "max", x, zero),
                              onnx_binary(c, "min", e, zero));
    return onnx_bind_value(c, 0, y);
}

static int lower_thresholded_relu(onnx_ctx *c)
{
    double alpha;
    cv_value *x = X(0);
    if (onnx_attr_float(c, "alpha", 1, &alpha) < 0)
        return -1;
    cv_value *above = onnx_binary(c, "greater", x, kscalar(c, x, alpha));
    cv_value *y = where3(c, above, x, kscalar(c, x, 0));
    return onnx_bind_value(c, 0, y);
}

static int lower_prelu(onnx_ctx *c)
{
    cv_value *x = X(0), *slope = X(1);
    cv_value *neg = onnx_binary(c, "less", x, kscalar(c, x, 0));
    return onnx_bind_value(c, 0, where3(c, neg, onnx_binary(c, "mul", x, slope), x));
}

/* Softplus log(exp(x) + 1), Softsign x / (1 + |x|), Reciprocal 1 / x. */
static int lower_softplus(onnx_ctx *c)
{
    cv_value *x = X(0);
    if (need_float(c, x) < 0)
        return -1;
    cv_value *e = onnx_binary(c, "add", onnx_unary(c, "exp", x), kscalar(c, x, 1));
    return onnx_bind_value(c, 0, onnx_unary(c, "log", e));
}

static int lower_softsign(onnx_ctx *c)
{
    cv_value *x = X(0);
    if (need_float(c, x) < 0)
        return -1;
    cv_value *den = onnx_binary(c, "add", onnx_unary(c, "abs", x), kscalar(c, x, 1));
    return onnx_bind_value(c, 0, onnx_binary(c, "div", x, den));
}

static int lower_reciprocal(onnx_ctx *c)
{
    cv_value *x = X(0);
    if (need_float(c, x) < 0)
        return -1;
    return onnx_bind_value(c, 0, onnx_binary(c, "div", kscalar(c, x, 1), x));
}

/* Shrink: x + bias below -lambd, x - bias above lambd, 0 between. */
static int lower_shrink(onnx_ctx *c)
{
    double lambd, bias;
    cv_value *x = X(0);
    if (!x || onnx_attr_float(c, "lambd", 0.5, &lambd) < 0 ||
        onnx_attr_float(c, "bias", 0, &bias) < 0)
        return -1;
    cv_value *lo = onnx_binary(c, "less", x, kscalar(c, x, -lambd));
    cv_value *hi = onnx_binary(c, "greater", x, kscalar(c, x, lambd));
    cv_value *y = where3(c, hi, onnx_binary(c, "sub", x, kscalar(c, x, bias)), kscalar(c, x, 0));
    y = where3(c, lo, onnx_binary(c, "add", x, kscalar(c, x, bias)), y);
    return onnx_bind_value(c, 0, y);
}

static int lower_sign(onnx_ctx *c)
{
    cv_value *x = X(0);
    cv_value *zero = kscalar(c, x, 0);
    cv_value *y = where3(c, onnx_binary(c, "less", x, zero), kscalar(c, x, -1), zero);
    y = where3(c, onnx_binary(c, "greater", x, zero), kscalar(c, x, 1), y);
    return onnx_bind_value(c, 0, y);
}

/* ---- predicates and booleans --------------------------------------------- */

static int lower_isnan(onnx_ctx *c)
{
    cv_value *x = X(0);
    return onnx_bind_value(c, 0, bool_not(c, onnx_binary(c, "equal", x, x)));
}

static int lower_isinf(onnx_ctx *c)
{
    int64_t pos, neg;
    cv_value *x = X(0);
    if (need_float(c, x) < 0 || onnx_attr_int(c, "detect_positive", 1, &pos) < 0 ||
        onnx_attr_int(c, "detect_negative", 1, &neg) < 0)
        return -1;
    cv_value *y = onnx_scalar(c, CV_BOOL, 0);
    if (pos)
        y = onnx_binary(c, "equal", x, kscalar(c, x, INFINITY));
    if (neg) {
        cv_value *n = onnx_binary(c, "equal", x, kscalar(c, x, -INFINITY));
        y = pos ? where3(c, y, onnx_scalar(c, CV_BOOL, 1), n) : n;
    }
    if (!pos && !neg)   /* broadcast the constant false to x's shape */
        y = onnx_binary(c, "equal", onnx_binary(c, "less", x, x), onnx_scalar(c, CV_BOOL, 1));
    return onnx_bind_value(c, 0, y);
}

static int lower_not(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (x && x->c && !x->v && onnx_foldable(x->c) && !x->c->syms) {
        /* a known flag (OptionalHasElement, ...): evaluate here, so that an
         * If on it takes one branch */
        onnx_const *k = onnx_const_new(c, CV_BOOL, x->c->rank, x->c->dims);
        for (int64_t i = 0; k && i < k->numel; i++)
            onnx_const_set_i64(k, i, onnx_const_i64(x->c, i) == 0);
        return onnx_bind_const(c, 0, k);
    }
    return onnx_bind_value(c, 0, bool_not(c, X(0)));
}

static int lower_logic(onnx_ctx *c)
{
    const char *t = c->node->op_type;
    cv_value *a = X(0), *b = X(1);
    cv_value *y = strcmp(t, "And") == 0 ? where3(c, a, b, onnx_scalar(c, CV_BOOL, 0))
                : strcmp(t, "Or") == 0 ? where3(c, a, onnx_scalar(c, CV_BOOL, 1), b)
                : bool_not(c, onnx_binary(c, "equal", a, b));
    return onnx_bind_value(c, 0, y);
}

/* a >= b as (a > b) or (a == b), so that NaN compares false. */
static int lower_or_equal(onnx_ctx *c)
{
    bool ge = strcmp(c->node->op_type, "GreaterOrEqual") == 0;
    cv_value *a = X(0), *b = X(1);
    cv_value *strict = onnx_binary(c, ge ? "greater" : "less", a, b);
    cv_value *y = where3(c, strict, onnx_scalar(c, CV_BOOL, 1), onnx_binary(c, "equal", a, b));
    return onnx_bind_value(c, 0, y);
}

static int lower_where(onnx_ctx *c)
{
    return onnx_bind_value(c, 0, where3(c, X(0), X(1), X(2)));
}

/* Mod: fmod=1 is C's fmod (a - b * trunc(a / b)); fmod=0, integers only,
 * takes the divisor's sign (Python's %). */
static int lower_mod(onnx_ctx *c)
{
    int64_t fmod;
    cv_value *a = X(0), *b = X(1);
    if (!a || !b || onnx_attr_int(c, "fmod", 0, &fmod) < 0)
        return -1;
    cv_dtype dt = a->type.dtype;
    bool flt = cv_dtype_is_float(dt);
    if (flt && !fmod)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "fmod=0 is only defined for integers");
    cv_value *q = onnx_binary(c, "div", a, b);
    if (flt) {   /* truncate the quotient toward zero through i64 */
        cv_op *o = onnx_op(c, "cast", &q, 1);
        if (o)
            cv_op_set_dtype(o, "to", CV_I64);
        q = onnx_finish(c, o);
        o = onnx_op(c, "cast", &q, 1);
        if (o)
            cv_op_set_dtype(o, "to", dt);
        q = onnx_finish(c, o);
    }
    cv_value *r = onnx_binary(c, "sub", a, onnx_binary(c, "mul", b, q));
    if (fmod)
        return onnx_bind_value(c, 0, r);
    cv_value *zero = kscalar(c, r, 0);
    cv_value *signs_differ = bool_not(c, onnx_binary(c, "equal", onnx_binary(c, "less", r, zero),
                                                      onnx_binary(c, "less", b, zero)));
    cv_value *fix = where3(c, onnx_binary(c, "equal", r, zero), onnx_scalar(c, CV_BOOL, 0),
                           signs_differ);
    return onnx_bind_value(c, 0, where3(c, fix, onnx_binary(c, "add", r, b), r));
}

/* ---- casts --------------------------------------------------------------- */

static int cast_to(onnx_ctx *c, cv_value *x, cv_dtype to)
{
    if (!x)
        return -1;
    if (to == CV_DT_INVALID)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "cast to an element type CU-IR lacks");
    if (dt_of(x) == to)
        return onnx_bind_value(c, 0, x);
    cv_op *o = onnx_op(c, "cast", &x, 1);
    if (o)
        cv_op_set_dtype(o, "to", to);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static int lower_cast(onnx_ctx *c)
{
    int64_t to;
    if (onnx_attr_int(c, "to", 0, &to) < 0)
        return -1;
    if (!onnx_attr(c, "to"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute 'to' is required");
    onnx_val *v = onnx_in(c, 0);
    cv_dtype to_dt = onnx_dtype((int32_t)to);
    bool int_syms = v && v->c && v->c->syms && onnx_const_is_int(v->c) &&
                    to_dt != CV_DT_INVALID && !cv_dtype_is_float(to_dt) && to_dt != CV_BOOL;
    if (v && v->c && !v->v && (!v->c->syms || int_syms)) {
        /* fold: shape arithmetic often casts; an integer-to-integer cast
         * keeps symbolic elements (a float cast of one is data, refused
         * where it is materialised) */
        cv_dtype dt = to_dt;
        if (dt == CV_DT_INVALID)
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "cast to %s is not supported",
                            onnx_dtype_name((int32_t)to));
        onnx_const *k = onnx_const_new(c, dt, v->c->rank, v->c->dims);
        if (k && int_syms)
            k->syms = v->c->syms;
        for (int64_t i = 0; k && i < k->numel; i++) {
            if (cv_dtype_is_float(dt) || cv_dtype_is_float(v->c->dt))
                onnx_const_set_f64(k, i, onnx_const_f64(v->c, i));
            else
                onnx_const_set_i64(k, i, onnx_const_i64(v->c, i));
        }
        return onnx_bind_const(c, 0, k);
    }
    return cast_to(c, X(0), onnx_dtype((int32_t)to));
}

static int lower_cast_like(onnx_ctx *c)
{
    onnx_val *like = onnx_in(c, 1);
    if (!like)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 1 is required");
    return cast_to(c, X(0), like->type.dtype);
}

/* BitShift on unsigned integers: x * 2^y (wrapping) or x / 2^y. */
static int lower_bitshift(onnx_ctx *c)
{
    const char *dir;
    cv_value *x = onnx_in_value(c, 0), *y = onnx_in_value(c, 1);
    if (!x || !y || onnx_attr_string(c, "direction", "", &dir) < 0)
        return -1;
    bool left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "direction must be LEFT or RIGHT, got '%s'", dir);
    if (!cv_dtype_is_unsigned(x->type.dtype))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "BitShift needs an unsigned integer type");
    cv_value *p = onnx_binary(c, "pow", onnx_scalar(c, x->type.dtype, 2), y);
    return onnx_bind_value(c, 0, onnx_binary(c, left ? "mul" : "div", x, p));
}

static const onnx_op_entry entries[] = {
    {"Abs", 6, lower_unary, "abs", 0},
    {"Neg", 6, lower_unary, "neg", 0},
    {"Relu", 6, lower_unary, "relu", 0},
    {"Sqrt", 6, lower_unary, "sqrt", 0},
    {"Exp", 6, lower_unary, "exp", 0},
    {"Log", 6, lower_unary, "log", 0},
    {"Tanh", 6, lower_unary, "tanh", 0},
    {"Erf", 9, lower_unary, "erf", 0},
    {"Sigmoid", 6, lower_unary, "sigmoid", 0},
    {"HardSwish", 14, lower_unary, "hard_swish", 0},
    {"Sin", 7, lower_unary, "sin", 0},
    {"Cos", 7, lower_unary, "cos", 0},
    {"Tan", 7, lower_unary, "tan", 0},
    {"Asin", 7, lower_unary, "asin", 0},
    {"Acos", 7, lower_unary, "acos", 0},
    {"Atan", 7, lower_unary, "atan", 0},
    {"Sinh", 9, lower_unary, "sinh", 0},
    {"Cosh", 9, lower_unary, "cosh", 0},
    {"Asinh", 9, lower_unary, "asinh", 0},
    {"Acosh", 9, lower_unary, "acosh", 0},
    {"Atanh", 9, lower_unary, "atanh", 0},
    {"Floor", 6, lower_unary, "floor", 0},
    {"Ceil", 6, lower_unary, "ceil", 0},
    {"Round", 11, lower_unary, "round", 0},
    {"BitShift", 11, lower_bitshift, "pow mul div", 0},
    {"Add", 7, lower_binary, "add", 0},
    {"Sub", 7, lower_binary, "sub", 0},
    {"Mul", 7, lower_binary, "mul", 0},
    {"Div", 7, lower_binary, "div", 0},
    {"Pow", 7, lower_binary, "pow", 0},
    {"Equal", 7, lower_binary, "equal", 0},
    {"Less", 7, lower_binary, "less", 0},
    {"Greater", 7, lower_binary, "greater", 0},
    {"Max", 6, lower_variadic, "max", 0},
    {"Min", 6, lower_variadic, "min", 0},
    {"Sum", 6, lower_sum_mean, "add", 0},
    {"Mean", 6, lower_sum_mean, "add div", 0},
    {"Identity", 1, lower_identity, NULL, 0},
    {"LeakyRelu", 6, lower_leaky_relu, "leaky_relu", 0},
    {"HardSigmoid", 6, lower_hard_sigmoid, "hard_sigmoid", 0},
    {"Clip", 6, lower_clip, "clip", 0x6u},
    {"Elu", 6, lower_elu_selu, "less where exp sub mul", 0},
    {"Selu", 6, lower_elu_selu, "less where exp sub mul", 0},
    {"Celu", 12, lower_celu, "exp sub mul div add max min", 0},
    {"ThresholdedRelu", 10, lower_thresholded_relu, "greater where", 0},
    {"PRelu", 7, lower_prelu, "less mul where", 0},
    {"Softplus", 1, lower_softplus, "exp add log", 0},
    {"Softsign", 1, lower_softsign, "abs add div", 0},
    {"Reciprocal", 6, lower_reciprocal, "div", 0},
    {"Shrink", 9, lower_shrink, "less greater add sub where", 0},
    {"Sign", 9, lower_sign, "less greater where", 0},
    {"IsNaN", 9, lower_isnan, "equal where", 0},
    {"IsInf", 10, lower_isinf, "equal where less", 0},
    {"Not", 1, lower_not, "where", 0},
    {"And", 7, lower_logic, "where", 0},
    {"Or", 7, lower_logic, "where", 0},
    {"Xor", 7, lower_logic, "equal where", 0},
    {"GreaterOrEqual", 12, lower_or_equal, "greater equal where", 0},
    {"LessOrEqual", 12, lower_or_equal, "less equal where", 0},
    {"Where", 9, lower_where, "where", 0},
    {"Mod", 10, lower_mod, "div cast sub mul less equal where add", 0},
    {"Cast", 6, lower_cast, "cast", 0},
    {"CastLike", 15, lower_cast_like, "cast", 0},
};

const onnx_op_family onnx_ops_elementwise = {entries, sizeof entries / sizeof entries[0]};
