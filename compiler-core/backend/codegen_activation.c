/* Codegen hooks: unary math and activations (ops_activation.c), as scalar
 * functions of the shared elementwise loop nest, with the reference
 * kernels' formulas (relu and leaky_relu test x < 0 so NaN propagates;
 * hard_sigmoid clamps with fmin/fmax like C). */
#include <math.h>

#include "compiler-core/backend/codegen.h"

static const cv_kexpr *k(cv_codegen_ctx *c, const cv_kexpr *like, double v)
{
    return cv_k_const(c, (cv_kty)like->ty, v);
}

static const cv_kexpr *sigmoid(cv_codegen_ctx *c, const cv_kexpr *x)
{
    const cv_kexpr *e = cv_k_un(c, CV_KOP_EXP, cv_k_un(c, CV_KOP_NEG, x));
    return cv_k_bin(c, CV_KOP_DIV, k(c, x, 1), cv_k_add(c, k(c, x, 1), e));
}

/* max(0, min(1, v)) with C's NaN-ignoring fmin/fmax. */
static const cv_kexpr *unit_clamp(cv_codegen_ctx *c, const cv_kexpr *v)
{
    return cv_k_bin(c, CV_KOP_FMAX, k(c, v, 0), cv_k_bin(c, CV_KOP_FMIN, k(c, v, 1), v));
}

#define UNARY(name, body) \
    static const cv_kexpr *s_##name(cv_codegen_ctx *c, const cv_kexpr *const *in, int n) \
    { \
        const cv_kexpr *x = in[0]; \
        return body; \
    } \
    int cv_cg_##name(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_##name); }

UNARY(neg, cv_k_un(c, CV_KOP_NEG, x))
UNARY(abs, cv_k_un(c, CV_KOP_ABS, x))
UNARY(relu, cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, x, k(c, x, 0)), k(c, x, 0), x))
UNARY(sqrt, cv_k_un(c, CV_KOP_SQRT, x))
UNARY(exp, cv_k_un(c, CV_KOP_EXP, x))
UNARY(log, cv_k_un(c, CV_KOP_LOG, x))
UNARY(tanh, cv_k_un(c, CV_KOP_TANH, x))
UNARY(erf, cv_k_un(c, CV_KOP_ERF, x))
UNARY(sigmoid, sigmoid(c, x))
UNARY(silu, cv_k_mul(c, x, sigmoid(c, x)))
UNARY(hard_swish, cv_k_mul(c, x, unit_clamp(c, cv_k_add(c, cv_k_bin(c, CV_KOP_DIV, x, k(c, x, 6)),
                                                        k(c, x, 0.5)))))
UNARY(leaky_relu, cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, x, k(c, x, 0)),
                              cv_k_mul(c, k(c, x, cv_op_float(c->op, "alpha", 0.01)), x), x))
UNARY(hard_sigmoid, unit_clamp(c, cv_k_add(c, cv_k_mul(c, k(c, x, cv_op_float(c->op, "alpha", 0.2)), x),
                                           k(c, x, cv_op_float(c->op, "beta", 0.5)))))

static const cv_kexpr *s_gelu(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *x = in[0], *t;
    const char *mode = cv_op_string(c->op, "approximate", "none");
    if (mode[0] == 't') {
        const cv_kexpr *x3 = cv_k_mul(c, cv_k_mul(c, x, x), x);
        const cv_kexpr *u = cv_k_mul(c, k(c, x, sqrt(2 / M_PI)),
                                     cv_k_add(c, x, cv_k_mul(c, k(c, x, 0.044715), x3)));
        t = cv_k_un(c, CV_KOP_TANH, u);
    } else {
        t = cv_k_un(c, CV_KOP_ERF, cv_k_bin(c, CV_KOP_DIV, x, k(c, x, M_SQRT2)));
    }
    return cv_k_mul(c, cv_k_mul(c, k(c, x, 0.5), x), cv_k_add(c, k(c, x, 1), t));
}

int cv_cg_gelu(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_gelu); }

/* The integer bounds of clip: ceil(min)..floor(max) inside the dtype. */
static int64_t int_bound(double v, cv_dtype dt)
{
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    cv_dtype_int_range(dt, &lo, &hi);
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

static const cv_kexpr *s_clip(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *x = in[0], *lo, *hi;
    double a = cv_op_float(c->op, "min", -INFINITY), b = cv_op_float(c->op, "max", INFINITY);
    if (x->ty == CV_KTY_I64) {
        cv_dtype dt = c->op->operands[0]->type.dtype;
        lo = cv_k_i64(c, int_bound(ceil(a), dt));
        hi = cv_k_i64(c, int_bound(floor(b), dt));
    } else {
        lo = k(c, x, a);
        hi = k(c, x, b);
    }
    const cv_kexpr *r = cv_k_select(c, cv_k_cmp(c, CV_KOP_LT, x, lo), lo, x);
    return cv_k_select(c, cv_k_cmp(c, CV_KOP_GT, r, hi), hi, r);
}

int cv_cg_clip(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_clip); }
