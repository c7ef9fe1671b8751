/* Op family fragment: unary elementwise math and activations.  The result
 * has the operand's type.  Float kernels compute in double and round once;
 * neg, abs, relu and clip also take integers and are exact on them. */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"
#include "compiler-core/runtime/cvrt.h"

/* ---- shape functions ----------------------------------------------------- */

static int infer_unary(cv_infer_ctx *c, unsigned mask)
{
    if (cv_infer_dtype_in(c, 0, mask))
        return -1;
    c->out[0] = c->in[0];
    return 0;
}

static int infer_float(cv_infer_ctx *c) { return infer_unary(c, CV_DT_REALS); }
static int infer_numeric(cv_infer_ctx *c) { return infer_unary(c, CV_DT_NUMERIC); }

static int infer_signed(cv_infer_ctx *c)
{
    return infer_unary(c, CV_DT_REALS | CV_DT_BIT(CV_I8) | CV_DT_BIT(CV_I16) | CV_DT_BIT(CV_I32) |
                              CV_DT_BIT(CV_I64));
}

/* gelu's `approximate` is "none" (erf form) or "tanh". */
static int gelu_tanh(const cv_op *op, int *out)
{
    const char *a = cv_op_string(op, "approximate", "none");
    *out = strcmp(a, "tanh") == 0;
    return (*out || strcmp(a, "none") == 0) ? 0 : -1;
}

static int infer_gelu(cv_infer_ctx *c)
{
    int t;
    if (gelu_tanh(c->op, &t))
        return cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "gelu: approximate must be \"none\" or \"tanh\", got \"%s\"",
                              cv_op_string(c->op, "approximate", ""));
    return infer_float(c);
}

static int infer_clip(cv_infer_ctx *c)
{
    double lo = cv_op_float(c->op, "min", -INFINITY), hi = cv_op_float(c->op, "max", INFINITY);
    if (isnan(lo) || isnan(hi))
        return cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "clip: min and max must not be NaN");
    return infer_numeric(c);
}

/* ---- kernels ------------------------------------------------------------- */

typedef double (*f1_fn)(double x, const double *p);
typedef int64_t (*i1_fn)(int64_t x, const double *p);

/* Applies ff (floats) or fi (integers, when given) to every element; p holds
 * the op's attribute values. */
static int eval_unary(cv_eval_ctx *c, f1_fn ff, i1_fn fi, const double *p)
{
    const cv_tensor *x = c->in[0];
    cv_tensor *o = &c->out[0];
    if (fi && !cv_dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < o->numel; i++)
            cv_tensor_set_i64(o, i, fi(cv_tensor_get_i64(x, i), p));
        return 0;
    }
    double *v = cv_tensor_to_f64(x, c->scratch);
    if (!v) {
        cv_diag_error(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "%s: out of memory", c->op->name);
        return -1;
    }
    for (int64_t i = 0; i < o->numel; i++)
        v[i] = ff(v[i], p);
    cv_tensor_from_f64(o, v);
    return 0;
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static double f_neg(double x, const double *p) { return -x; }
static double f_abs(double x, const double *p) { return fabs(x); }
static double f_sqrt(double x, const double *p) { return sqrt(x); }
static double f_exp(double x, const double *p) { return exp(x); }
static double f_log(double x, const double *p) { return log(x); }
static double f_tanh(double x, const double *p) { return tanh(x); }
static double f_erf(double x, const double *p) { return erf(x); }
/* x < 0 rather than fmax, so that NaN propagates like numpy and ONNX Runtime. */
static double f_relu(double x, const double *p) { return x < 0 ? 0 : x; }
static double f_leaky_relu(double x, const double *p) { return x < 0 ? p[0] * x : x; }
static double f_sigmoid(double x, const double *p) { return sigmoid(x); }
static double f_silu(double x, const double *p) { return x * sigmoid(x); }
static double f_hard_sigmoid(double x, const double *p) { return fmax(0, fmin(1, p[0] * x + p[1])); }
static double f_hard_swish(double x, const double *p) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
/* max then min, like numpy and ONNX Runtime: min > max gives max; NaN stays. */
static double f_clip(double x, const double *p)
{
    double r = x < p[0] ? p[0] : x;
    return r > p[1] ? p[1] : r;
}

static double f_gelu(double x, const double *p)
{
    if (p[0] != 0)
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1 + erf(x / M_SQRT2));
}

static int64_t i_neg(int64_t x, const double *p) { return (int64_t)(0u - (uint64_t)x); }
static int64_t i_abs(int64_t x, const double *p) { return x < 0 ? i_neg(x, p) : x; }
static int64_t i_relu(int64_t x, const double *p) { return x < 0 ? 0 : x; }

static int eval_neg(cv_eval_ctx *c) { return eval_unary(c, f_neg, i_neg, NULL); }
static int eval_abs(cv_eval_ctx *c) { return eval_unary(c, f_abs, i_abs, NULL); }
static int eval_sqrt(cv_eval_ctx *c) { return eval_unary(c, f_sqrt, NULL, NULL); }
static int eval_exp(cv_eval_ctx *c) { return eval_unary(c, f_exp, NULL, NULL); }
static int eval_log(cv_eval_ctx *c) { return eval_unary(c, f_log, NULL, NULL); }
static int eval_tanh(cv_eval_ctx *c) { return eval_unary(c, f_tanh, NULL, NULL); }
static int eval_erf(cv_eval_ctx *c) { return eval_unary(c, f_erf, NULL, NULL); }
static int eval_relu(cv_eval_ctx *c) { return eval_unary(c, f_relu, i_relu, NULL); }
static int eval_sigmoid(cv_eval_ctx *c) { return eval_unary(c, f_sigmoid, NULL, NULL); }
static int eval_silu(cv_eval_ctx *c) { return eval_unary(c, f_silu, NULL, NULL); }
static int eval_hard_swish(cv_eval_ctx *c) { return eval_unary(c, f_hard_swish, NULL, NULL); }

static int eval_leaky_relu(cv_eval_ctx *c)
{
    double p[1] = {cv_op_float(c->op, "alpha", 0.01)};
    return eval_unary(c, f_leaky_relu, NULL, p);
}

static int eval_hard_sigmoid(cv_eval_ctx *c)
{
    double p[2] = {cv_op_float(c->op, "alpha", 0.2), cv_op_float(c->op, "beta", 0.5)};
    return eval_unary(c, f_hard_sigmoid, NULL, p);
}

static int eval_gelu(cv_eval_ctx *c)
{
    int t = 0;
    gelu_tanh(c->op, &t);
    double p[1] = {t};
    return eval_unary(c, f_gelu, NULL, p);
}


/* v rounded (already integral or infinite) into [lo, hi]. */
static int64_t bound(double v, int64_t lo, int64_t hi)
{
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

/* Integers clip exactly to ceil(min)..floor(max), kept inside the dtype. */
static int eval_clip(cv_eval_ctx *c)
{
    double p[2] = {cv_op_float(c->op, "min", -INFINITY), cv_op_float(c->op, "max", INFINITY)};
    const cv_tensor *x = c->in[0];
    if (cv_dtype_is_float(x->dtype))
        return eval_unary(c, f_clip, NULL, p);
    int64_t dlo, dhi;
    cv_dtype_int_range(x->dtype, &dlo, &dhi);
    int64_t lo = bound(ceil(p[0]), dlo, dhi), hi = bound(floor(p[1]), dlo, dhi);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t v = cv_tensor_get_i64(x, i);
        v = v < lo ? lo : v;
        cv_tensor_set_i64(&c->out[0], i, v > hi ? hi : v);
    }
    return 0;
}

/* ---- the table ----------------------------------------------------------- */

static const cv_attr_schema no_attrs[] = {{NULL, CV_ATTR_NONE, false}};

/* leaky_relu: alpha (float, default 0.01) */
static const cv_attr_schema leaky_relu_attrs[] = {
    {"alpha", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* hard_sigmoid: alpha (float, default 0.2), beta (float, default 0.5) */
static const cv_attr_schema hard_sigmoid_attrs[] = {
    {"alpha", CV_ATTR_FLOAT, false},
    {"beta", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* clip: min (float, default -inf), max (float, default +inf) */
static const cv_attr_schema clip_attrs[] = {
    {"min", CV_ATTR_FLOAT, false},
    {"max", CV_ATTR_FLOAT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* gelu: approximate (string "none" | "tanh", default "none") */
static const cv_attr_schema gelu_attrs[] = {
    {"approximate", CV_ATTR_STRING, false},
    {NULL, CV_ATTR_NONE, false},
};

#define EW CV_OPF_ELEMENTWISE
/* elementwise, and computed by the runtime epilogue's activation `a` */
#define EPI(a) (EW | CV_OPF_EPI(CVRT_ACT_##a))

static const cv_op_def defs[] = {
    /* neg: floats and signed ints (wraps); abs, relu: any numeric dtype. */
    {"neg", 1, 1, 1, 1, no_attrs, infer_signed, eval_neg, cv_cg_neg, EW},
    {"abs", 1, 1, 1, 1, no_attrs, infer_numeric, eval_abs, cv_cg_abs, EW},
    {"relu", 1, 1, 1, 1, no_attrs, infer_numeric, eval_relu, cv_cg_relu, EPI(RELU)},
    /* Float-only math, no attributes. */
    {"sqrt", 1, 1, 1, 1, no_attrs, infer_float, eval_sqrt, cv_cg_sqrt, EW},
    {"exp", 1, 1, 1, 1, no_attrs, infer_float, eval_exp, cv_cg_exp, EW},
    {"log", 1, 1, 1, 1, no_attrs, infer_float, eval_log, cv_cg_log, EW},
    {"tanh", 1, 1, 1, 1, no_attrs, infer_float, eval_tanh, cv_cg_tanh, EW},
    {"erf", 1, 1, 1, 1, no_attrs, infer_float, eval_erf, cv_cg_erf, EW},
    {"sigmoid", 1, 1, 1, 1, no_attrs, infer_float, eval_sigmoid, cv_cg_sigmoid, EW},
    /* silu(x) = x * sigmoid(x) */
    {"silu", 1, 1, 1, 1, no_attrs, infer_float, eval_silu, cv_cg_silu, EPI(SILU)},
    /* hard_swish(x) = x * max(0, min(1, x/6 + 1/2))  (ONNX HardSwish) */
    {"hard_swish", 1, 1, 1, 1, no_attrs, infer_float, eval_hard_swish, cv_cg_hard_swish,
     EPI(HARD_SWISH)},
    /* leaky_relu {alpha: float = 0.01} */
    {"leaky_relu", 1, 1, 1, 1, leaky_relu_attrs, infer_float, eval_leaky_relu, cv_cg_leaky_relu,
     EW},
    /* hard_sigmoid {alpha: float = 0.2, beta: float = 0.5}: max(0, min(1, alpha*x + beta)) */
    {"hard_sigmoid", 1, 1, 1, 1, hard_sigmoid_attrs, infer_float, eval_hard_sigmoid,
     cv_cg_hard_sigmoid, EW},
    /* gelu {approximate: string = "none" | "tanh"} */
    {"gelu", 1, 1, 1, 1, gelu_attrs, infer_gelu, eval_gelu, cv_cg_gelu, EW},
    /* clip {min: float = -inf, max: float = +inf}; numeric dtypes (ints clip to
     * ceil(min)..floor(max)). */
    {"clip", 1, 1, 1, 1, clip_attrs, infer_clip, eval_clip, cv_cg_clip, EPI(CLIP)},
};

const cv_op_family cv_ops_activation = {defs, (int)(sizeof defs / sizeof defs[0])};
