/* Codegen hooks: elementwise ops over several operands (ops_elementwise.c),
 * each a scalar function run by the shared elementwise loop nest.  Semantics
 * follow the reference kernels: integer math wraps, integer division by zero
 * gives 0, min/max propagate NaN, comparisons with NaN are false. */
#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"

static bool is_int(const cv_kexpr *e) { return e->ty == CV_KTY_I64; }

static const cv_kexpr *s_add(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_add(c, in[0], in[1]);
}

static const cv_kexpr *s_sub(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_sub(c, in[0], in[1]);
}

static const cv_kexpr *s_mul(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_mul(c, in[0], in[1]);
}

static const cv_kexpr *s_div(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return is_int(in[0]) ? cv_k_idiv(c, in[0], in[1]) : cv_k_bin(c, CV_KOP_DIV, in[0], in[1]);
}

/* Exact integer power by squaring (64 steps cover every exponent); a
 * negative exponent truncates 1/x^n toward zero. */
static const cv_kexpr *int_pow(cv_codegen_ctx *c, const cv_kexpr *x, const cv_kexpr *y)
{
    const cv_kexpr *zero = cv_k_i64(c, 0), *one = cv_k_i64(c, 1), *two = cv_k_i64(c, 2);
    const cv_kexpr *r = cv_k_local(c, one), *b = cv_k_local(c, x);
    const cv_kexpr *e = cv_k_local(c, cv_k_max(c, y, zero));
    cv_k_for(c, zero, cv_k_i64(c, 64), 0);
    cv_k_set(c, r, cv_k_select(c, cv_k_cmp(c, CV_KOP_EQ, cv_k_rem(c, e, two), one),
                               cv_k_mul(c, r, b), r));
    cv_k_set(c, b, cv_k_mul(c, b, b));
    cv_k_set(c, e, cv_k_div(c, e, two));
    cv_k_close(c);
    const cv_kexpr *neg = cv_k_cmp(c, CV_KOP_LT, y, zero);
    const cv_kexpr *m1 = cv_k_i64(c, -1);
    const cv_kexpr *odd = cv_k_cmp(c, CV_KOP_NE, cv_k_rem(c, y, two), zero);
    const cv_kexpr *inv = cv_k_select(c, cv_k_cmp(c, CV_KOP_EQ, x, one), one,
                                      cv_k_select(c, cv_k_cmp(c, CV_KOP_EQ, x, m1),
                                                  cv_k_select(c, odd, m1, one), zero));
    return cv_k_select(c, neg, inv, r);
}

static const cv_kexpr *s_pow(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *x = in[0], *y = in[1];
    if (is_int(x) && is_int(y))
        return int_pow(c, x, y);
    cv_kty t = is_int(x) ? CV_KTY_F64 : CV_KTY_F32;
    return cv_k_bin(c, CV_KOP_POW, cv_k_cast(c, x, t), cv_k_cast(c, y, t));
}

static const cv_kexpr *fold(cv_codegen_ctx *c, const cv_kexpr *const *in, int n, cv_kop op)
{
    const cv_kexpr *r = in[0];
    for (int i = 1; i < n; i++)
        r = cv_k_bin(c, op, r, in[i]);
    return r;
}

static const cv_kexpr *s_min(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return fold(c, in, n, CV_KOP_MIN);
}

static const cv_kexpr *s_max(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return fold(c, in, n, CV_KOP_MAX);
}

static const cv_kexpr *s_equal(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_cmp(c, CV_KOP_EQ, in[0], in[1]);
}

static const cv_kexpr *s_less(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_cmp(c, CV_KOP_LT, in[0], in[1]);
}

static const cv_kexpr *s_greater(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_cmp(c, CV_KOP_GT, in[0], in[1]);
}

static const cv_kexpr *s_where(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_select(c, in[0], in[1], in[2]);
}

static const cv_kexpr *s_cast(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return cv_k_convert(c, in[0], c->op->results[0]->type.dtype);
}

int cv_cg_add(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_add); }
int cv_cg_sub(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_sub); }
int cv_cg_mul(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_mul); }
int cv_cg_div(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_div); }
int cv_cg_pow(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_pow); }
int cv_cg_min(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_min); }
int cv_cg_max(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_max); }
int cv_cg_equal(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_equal); }
int cv_cg_less(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_less); }
int cv_cg_greater(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_greater); }
int cv_cg_where(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_where); }
/* -p fp16/bf16 weights that their convolutions read 16-bit emit nothing
 * (the result gets a storage, which no kernel touches). */
int cv_cg_cast(cv_codegen_ctx *c)
{
    if (!cv_cg_cast_feeds_half_convs(c))
        return cv_cg_elementwise(c, s_cast);
    cv_cg_out(c, 0);
    return 0;
}
