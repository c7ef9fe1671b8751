/* Building kernel IR: expressions (with constant folding of index math, so
 * static shapes give clean code in every backend), statements and kernels. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/backend/kernel_internal.h"

static const uint8_t sgemm_args[] = {
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_F32,         /* M N K alpha */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_I64,                     /* a, strides */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_I64,                     /* b, strides */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_I64,                     /* c ldc accumulate */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_I64, CV_KTY_F32,         /* bias, strides, scale */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32, /* res, ld, act, lo, hi */
};
static const uint8_t conv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x w bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W OC KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
};

static const uint8_t conv2d_p8_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x w(P8) bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W OC KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
    CV_KTY_PTR,                                             /* scratch */
};
static const uint8_t conv2d_p8h_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_I64, CV_KTY_PTR, CV_KTY_PTR, /* x w(P8, 16-bit) kind bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W OC KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
    CV_KTY_PTR,                                             /* scratch */
};
static const uint8_t dwconv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x w bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
};

static const uint8_t qconv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, /* x wp wsum scale bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W OC KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
    CV_KTY_F32, CV_KTY_I64, CV_KTY_PTR,                     /* xs zp scratch */
    CV_KTY_I64, CV_KTY_F32, CV_KTY_I64, CV_KTY_F32, CV_KTY_I64, /* flags ys yzp rs rzp */
};
static const uint8_t qdwconv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, /* x w scale bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* C H W KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
    CV_KTY_F32, CV_KTY_I64,                                 /* xs zp */
    CV_KTY_I64, CV_KTY_F32, CV_KTY_I64, CV_KTY_F32, CV_KTY_I64, /* flags ys yzp rs rzp */
};

static const uint8_t nchwc_conv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x wb bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* blk ICB CI H W OCB */
    CV_KTY_I64, CV_KTY_I64,                                 /* KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
};
static const uint8_t nchwc_dwconv2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x wb bias y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* blk CB H W KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* sh sw pt pl dh dw */
    CV_KTY_I64, CV_KTY_I64,                                 /* OH OW */
    CV_KTY_PTR, CV_KTY_I64, CV_KTY_F32, CV_KTY_F32,         /* res act lo hi */
};
static const uint8_t nchwc_pool2d_args[] = {
    CV_KTY_PTR, CV_KTY_PTR,                                 /* x y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* blk CB H W KH KW */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64,         /* sh sw pt pl */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64,                     /* OH OW kind */
};
static const uint8_t rnn_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* x w r bias */
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,         /* h0 c0 p lens */
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR,                     /* y yh yc */
    CV_KTY_PTR, CV_KTY_PTR,                                 /* scratch: xg hg */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64,         /* T B I H */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_F32,         /* gates dirs flags clip */
};

static const uint8_t attention_args[] = {
    CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, CV_KTY_PTR, /* q k v mask y */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* B H Sq Sk D Dv */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* q k strides */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, /* v y strides */
    CV_KTY_I64, CV_KTY_I64, CV_KTY_I64, CV_KTY_I64,         /* mask strides */
    CV_KTY_F32, CV_KTY_I64,                                 /* scale causal */
};

static const cv_krt_info rt_info[CV_KRT__COUNT] = {
    [CV_KRT_SGEMM] = {"cvrt_sgemm", (int)sizeof sgemm_args, sgemm_args},
    [CV_KRT_CONV2D] = {"cvrt_conv2d", (int)sizeof conv2d_args, conv2d_args},
    [CV_KRT_CONV2D_P8] = {"cvrt_conv2d_p8", (int)sizeof conv2d_p8_args, conv2d_p8_args},
    [CV_KRT_CONV2D_P8H] = {"cvrt_conv2d_p8h", (int)sizeof conv2d_p8h_args, conv2d_p8h_args},
    [CV_KRT_SGEMM_H] = {"cvrt_sgemm_h", (int)sizeof sgemm_args, sgemm_args},
    [CV_KRT_SGEMM_PB] = {"cvrt_sgemm_pb", (int)sizeof sgemm_args, sgemm_args},
    [CV_KRT_SGEMM_BF] = {"cvrt_sgemm_bf16", (int)sizeof sgemm_args, sgemm_args},
    [CV_KRT_DWCONV2D] = {"cvrt_dwconv2d", (int)sizeof dwconv2d_args, dwconv2d_args},
    [CV_KRT_QCONV2D] = {"cvrt_qconv2d", (int)sizeof qconv2d_args, qconv2d_args},
    [CV_KRT_NCHWC_CONV2D] = {"cvrt_nchwc_conv2d", (int)sizeof nchwc_conv2d_args,
                             nchwc_conv2d_args},
    [CV_KRT_NCHWC_DWCONV2D] = {"cvrt_nchwc_dwconv2d", (int)sizeof nchwc_dwconv2d_args,
                               nchwc_dwconv2d_args},
    [CV_KRT_NCHWC_POOL2D] = {"cvrt_nchwc_pool2d", (int)sizeof nchwc_pool2d_args,
                             nchwc_pool2d_args},
    [CV_KRT_QDWCONV2D] = {"cvrt_qdwconv2d", (int)sizeof qdwconv2d_args, qdwconv2d_args},
    [CV_KRT_NCHWC_CONV2D_H] = {"cvrt_nchwc_conv2d_h", (int)sizeof nchwc_conv2d_args,
                               nchwc_conv2d_args},
    [CV_KRT_RNN] = {"cvrt_rnn", (int)sizeof rnn_args, rnn_args},
    [CV_KRT_ATTENTION] = {"cvrt_attention", (int)sizeof attention_args, attention_args},
};

const cv_krt_info *cv_krt_get(cv_krt fn)
{
    return fn >= 0 && fn < CV_KRT__COUNT ? &rt_info[fn] : NULL;
}

static const char *const op_names[CV_KOP__COUNT] = {
    "neg", "abs", "not", "sqrt", "exp", "log", "tanh", "erf", "floor", "ceil", "round_even",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "isnan", "add", "sub", "mul", "div", "rem", "min", "max", "fmin", "fmax", "pow", "and", "or",
    "eq", "ne", "lt", "le", "gt", "ge",
};

const char *cv_kop_name(cv_kop op)
{
    return op < CV_KOP__COUNT ? op_names[op] : "?";
}

const char *cv_kty_name(cv_kty t)
{
    static const char *const n[] = {"void", "bool", "i64", "f32", "f64", "ptr"};
    return t <= CV_KTY_PTR ? n[t] : "?";
}

cv_kty cv_kty_of(cv_dtype dt)
{
    if (dt == CV_BOOL)
        return CV_KTY_BOOL;
    if (dt == CV_F64)
        return CV_KTY_F64;
    return cv_dtype_is_float(dt) ? CV_KTY_F32 : CV_KTY_I64;
}

/* ---- allocation and errors ------------------------------------------------ */

void *cv_kp_alloc(cv_kprog *p, size_t size)
{
    void *m = cv_arena_alloc(&p->arena, size);
    if (!m)
        p->oom = true;
    return m;
}

void cv_kp_bug(cv_codegen_ctx *c, const char *what)
{
    if (!c->prog->bug)
        c->prog->bug = what;
}

/* Every expression of a failed build points here, so builders never see NULL. */
static const cv_kexpr poison = {.kind = CV_KE_CONST_I, .ty = CV_KTY_I64};

static cv_kexpr *new_expr(cv_codegen_ctx *c, cv_kexpr_kind kind, cv_kty ty)
{
    cv_kexpr *e = cv_kp_alloc(c->prog, sizeof *e);
    if (!e)
        return NULL;
    e->kind = (uint8_t)kind;
    e->ty = (uint8_t)ty;
    return e;
}

#define NEW_OR_POISON(e, c, kind, ty) \
    cv_kexpr *e = new_expr(c, kind, ty); \
    if (!e) \
        return &poison

/* ---- expressions ---------------------------------------------------------- */

bool cv_k_is_const(const cv_kexpr *e, int64_t *v)
{
    if (e->kind != CV_KE_CONST_I || e->ty != CV_KTY_I64)
        return false;
    if (v)
        *v = e->i;
    return true;
}

const cv_kexpr *cv_k_i64(cv_codegen_ctx *c, int64_t v)
{
    NEW_OR_POISON(e, c, CV_KE_CONST_I, CV_KTY_I64);
    e->i = v;
    return e;
}

const cv_kexpr *cv_k_bool(cv_codegen_ctx *c, bool v)
{
    NEW_OR_POISON(e, c, CV_KE_CONST_I, CV_KTY_BOOL);
    e->i = v;
    return e;
}

const cv_kexpr *cv_k_null(cv_codegen_ctx *c)
{
    NEW_OR_POISON(e, c, CV_KE_CONST_I, CV_KTY_PTR);
    return e;
}

static const cv_kexpr *const_f(cv_codegen_ctx *c, cv_kty ty, double v)
{
    NEW_OR_POISON(e, c, CV_KE_CONST_F, ty);
    e->f = ty == CV_KTY_F32 ? (double)(float)v : v;
    return e;
}

const cv_kexpr *cv_k_f32(cv_codegen_ctx *c, double v) { return const_f(c, CV_KTY_F32, v); }
const cv_kexpr *cv_k_f64(cv_codegen_ctx *c, double v) { return const_f(c, CV_KTY_F64, v); }

const cv_kexpr *cv_k_const(cv_codegen_ctx *c, cv_kty t, double v)
{
    switch (t) {
    case CV_KTY_BOOL: return cv_k_bool(c, v != 0);
    case CV_KTY_I64: return cv_k_i64(c, (int64_t)v);
    case CV_KTY_F32:
    case CV_KTY_F64: return const_f(c, t, v);
    default: cv_kp_bug(c, "constant of a non-scalar type"); return &poison;
    }
}

static bool is_float(cv_kty t) { return t == CV_KTY_F32 || t == CV_KTY_F64; }

const cv_kexpr *cv_k_un(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a)
{
    if (op > CV_KOP_ISNAN) {
        cv_kp_bug(c, "cv_k_un with a binary op");
        return &poison;
    }
    bool float_only = op >= CV_KOP_SQRT && op <= CV_KOP_ISNAN;
    if ((float_only && !is_float(a->ty)) || (op == CV_KOP_NOT && a->ty != CV_KTY_BOOL)) {
        cv_kp_bug(c, "unary op on the wrong type");
        return &poison;
    }
    int64_t v;
    if (op == CV_KOP_NEG && cv_k_is_const(a, &v))
        return cv_k_i64(c, (int64_t)(0u - (uint64_t)v));
    NEW_OR_POISON(e, c, CV_KE_UN, op == CV_KOP_ISNAN ? CV_KTY_BOOL : (cv_kty)a->ty);
    e->op = (uint8_t)op;
    e->a = a;
    return e;
}

static int64_t fold_i64(cv_kop op, int64_t x, int64_t y)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (op) {
    case CV_KOP_ADD: return (int64_t)(ux + uy);
    case CV_KOP_SUB: return (int64_t)(ux - uy);
    case CV_KOP_MUL: return (int64_t)(ux * uy);
    case CV_KOP_DIV: return x / y;
    case CV_KOP_REM: return x % y;
    case CV_KOP_MIN: return x < y ? x : y;
    default: return x > y ? x : y;
    }
}

/* Folds constant integer math and the identities index math is full of. */
static const cv_kexpr *fold_bin(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a,
                                const cv_kexpr *b)
{
    int64_t x = 0, y = 0;
    bool ca = cv_k_is_const(a, &x), cb = cv_k_is_const(b, &y);
    bool safe_div = cb && y != 0 && !(y == -1 && ca && x == INT64_MIN);
    if (ca && cb && op <= CV_KOP_MAX && op >= CV_KOP_ADD &&
        ((op != CV_KOP_DIV && op != CV_KOP_REM) || safe_div))
        return cv_k_i64(c, fold_i64(op, x, y));
    if ((op == CV_KOP_ADD && ca && x == 0) || (op == CV_KOP_MUL && ca && x == 1))
        return b;
    if (((op == CV_KOP_ADD || op == CV_KOP_SUB) && cb && y == 0) ||
        ((op == CV_KOP_MUL || op == CV_KOP_DIV) && cb && y == 1))
        return a;
    if (op == CV_KOP_MUL && ((ca && x == 0) || (cb && y == 0)))
        return cv_k_i64(c, 0);
    if (op == CV_KOP_REM && cb && y == 1)
        return cv_k_i64(c, 0);
    return NULL;
}

const cv_kexpr *cv_k_bin(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a, const cv_kexpr *b)
{
    if (op < CV_KOP_ADD || op > CV_KOP_OR || a->ty != b->ty ||
        ((op == CV_KOP_AND || op == CV_KOP_OR) != (a->ty == CV_KTY_BOOL)) ||
        ((op == CV_KOP_POW || op == CV_KOP_FMIN || op == CV_KOP_FMAX) && !is_float(a->ty)) ||
        a->ty == CV_KTY_PTR) {
        cv_kp_bug(c, "binary op with mismatched or wrong operand types");
        return &poison;
    }
    if (a->ty == CV_KTY_I64) {
        const cv_kexpr *f = fold_bin(c, op, a, b);
        if (f)
            return f;
    }
    NEW_OR_POISON(e, c, CV_KE_BIN, (cv_kty)a->ty);
    e->op = (uint8_t)op;
    e->a = a;
    e->b = b;
    return e;
}

const cv_kexpr *cv_k_cmp(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a, const cv_kexpr *b)
{
    if (op < CV_KOP_EQ || op > CV_KOP_GE || a->ty != b->ty || a->ty == CV_KTY_PTR) {
        cv_kp_bug(c, "comparison with mismatched operand types");
        return &poison;
    }
    NEW_OR_POISON(e, c, CV_KE_CMP, CV_KTY_BOOL);
    e->op = (uint8_t)op;
    e->a = a;
    e->b = b;
    return e;
}

const cv_kexpr *cv_k_select(cv_codegen_ctx *c, const cv_kexpr *cond, const cv_kexpr *a,
                            const cv_kexpr *b)
{
    if (cond->ty != CV_KTY_BOOL || a->ty != b->ty) {
        cv_kp_bug(c, "select with mismatched types");
        return &poison;
    }
    if (cond->kind == CV_KE_CONST_I)
        return cond->i ? a : b;
    NEW_OR_POISON(e, c, CV_KE_SELECT, (cv_kty)a->ty);
    e->a = cond;
    e->b = a;
    e->c = b;
    return e;
}

const cv_kexpr *cv_k_cast(cv_codegen_ctx *c, const cv_kexpr *a, cv_kty to)
{
    if (a->ty == to)
        return a;
    if (to == CV_KTY_VOID || to == CV_KTY_PTR || a->ty == CV_KTY_PTR) {
        cv_kp_bug(c, "cast to or from a pointer");
        return &poison;
    }
    if (a->kind == CV_KE_CONST_I && is_float(to))
        return const_f(c, to, (double)a->i);
    NEW_OR_POISON(e, c, CV_KE_CAST, to);
    e->a = a;
    return e;
}

const cv_kexpr *cv_k_convert(cv_codegen_ctx *c, const cv_kexpr *a, cv_dtype to)
{
    cv_kty t = cv_kty_of(to);
    /* Only these keep every value of a's type exactly. */
    if ((to == CV_F32 && a->ty == CV_KTY_F32) || (to == CV_I64 && a->ty == CV_KTY_I64) ||
        (to == CV_BOOL && a->ty == CV_KTY_BOOL))
        return a;
    if (a->ty == CV_KTY_PTR || a->ty == CV_KTY_VOID) {
        cv_kp_bug(c, "convert of a pointer");
        return &poison;
    }
    NEW_OR_POISON(e, c, CV_KE_CONVERT, t);
    e->op = (uint8_t)to;
    e->a = a;
    return e;
}

const cv_kexpr *cv_k_add(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_ADD, a, b);
}

const cv_kexpr *cv_k_sub(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_SUB, a, b);
}

const cv_kexpr *cv_k_mul(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_MUL, a, b);
}

const cv_kexpr *cv_k_div(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_DIV, a, b);
}

const cv_kexpr *cv_k_rem(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_REM, a, b);
}

const cv_kexpr *cv_k_min(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_MIN, a, b);
}

const cv_kexpr *cv_k_max(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    return cv_k_bin(c, CV_KOP_MAX, a, b);
}

const cv_kexpr *cv_k_idiv(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b)
{
    const cv_kexpr *zero = cv_k_i64(c, 0), *m1 = cv_k_i64(c, -1);
    const cv_kexpr *is0 = cv_k_cmp(c, CV_KOP_EQ, b, zero), *ism1 = cv_k_cmp(c, CV_KOP_EQ, b, m1);
    const cv_kexpr *safe = cv_k_select(c, cv_k_bin(c, CV_KOP_OR, is0, ism1), cv_k_i64(c, 1), b);
    const cv_kexpr *q = cv_k_select(c, ism1, cv_k_sub(c, zero, a), cv_k_div(c, a, safe));
    return cv_k_select(c, is0, zero, q);
}

const cv_kexpr *cv_k_numel(cv_codegen_ctx *c, const cv_kten *t, int from, int to)
{
    const cv_kexpr *n = cv_k_i64(c, 1);
    for (int i = from; i < to; i++)
        n = cv_k_mul(c, n, t->dim[i]);
    return n;
}

/* ---- buffers ---------------------------------------------------------------- */

/* The slot of kernel k bound to storage `store` (added on first use). */
int cv_k_slot(cv_codegen_ctx *c, const cv_kten *t, bool write)
{
    cv_kernel *k = c->k;
    if (!k) {
        cv_kp_bug(c, "tensor access outside a kernel");
        return 0;
    }
    for (int i = 0; i < k->n_slots; i++)
        if (k->slot_store[i] == t->store) {
            k->slot_written[i] |= write;
            return i;
        }
    if (k->n_slots == CV_K_MAX_SLOTS) {
        cv_kp_bug(c, "too many tensors in one kernel");
        return 0;
    }
    int i = k->n_slots++;
    k->slot_store[i] = t->store;
    k->slot_dtype[i] = t->dtype;
    k->slot_written[i] = write;
    return i;
}

const cv_kexpr *cv_k_load(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index)
{
    if (index->ty != CV_KTY_I64) {
        cv_kp_bug(c, "load with a non-integer index");
        return &poison;
    }
    int slot = cv_k_slot(c, t, false);
    NEW_OR_POISON(e, c, CV_KE_LOAD, cv_kty_of(t->dtype));
    e->op = (uint8_t)t->dtype;
    e->id = slot;
    e->a = index;
    return e;
}

const cv_kexpr *cv_k_addr(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index)
{
    int slot = cv_k_slot(c, t, true);
    NEW_OR_POISON(e, c, CV_KE_ADDR, CV_KTY_PTR);
    e->op = (uint8_t)t->dtype;
    e->id = slot;
    e->a = index;
    return e;
}

/* ---- statements ------------------------------------------------------------ */

static int new_var(cv_codegen_ctx *c, cv_kty ty)
{
    cv_kernel *k = c->k;
    if (!k || k->n_vars == CV_K_MAX_VARS) {
        cv_kp_bug(c, k ? "too many variables in one kernel" : "variable outside a kernel");
        return 0;
    }
    k->var_ty[k->n_vars] = ty;
    return k->n_vars++;
}

static cv_kstmt *append(cv_codegen_ctx *c, cv_kstmt_kind kind)
{
    if (!c->k || c->depth == 0) {
        cv_kp_bug(c, "statement outside a kernel");
        return NULL;
    }
    cv_kstmt *s = cv_kp_alloc(c->prog, sizeof *s);
    if (!s)
        return NULL;
    s->kind = (uint8_t)kind;
    cv_kstmt **tail = c->tails[c->depth - 1];
    *tail = s;
    c->tails[c->depth - 1] = &s->next;
    return s;
}

static void open_list(cv_codegen_ctx *c, cv_kstmt **list)
{
    if (c->depth == CV_K_MAX_DEPTH) {
        cv_kp_bug(c, "statements nested too deeply");
        return;
    }
    c->tails[c->depth++] = list;
}

static const cv_kexpr *var_expr(cv_codegen_ctx *c, int id, cv_kty ty)
{
    NEW_OR_POISON(e, c, CV_KE_VAR, ty);
    e->id = id;
    return e;
}

const cv_kexpr *cv_k_for(cv_codegen_ctx *c, const cv_kexpr *lo, const cv_kexpr *hi,
                         unsigned flags)
{
    int v = new_var(c, CV_KTY_I64);
    cv_kstmt *s = append(c, CV_KS_FOR);
    if (!s)
        return &poison;
    s->id = v;
    s->flags = (uint8_t)flags;
    s->a = lo;
    s->b = hi;
    if (lo->ty != CV_KTY_I64 || hi->ty != CV_KTY_I64)
        cv_kp_bug(c, "loop bounds must be i64");
    open_list(c, &s->body);
    c->open[c->depth - 1] = s;
    return var_expr(c, v, CV_KTY_I64);
}

void cv_k_if(cv_codegen_ctx *c, const cv_kexpr *cond)
{
    cv_kstmt *s = append(c, CV_KS_IF);
    if (!s)
        return;
    s->a = cond;
    if (cond->ty != CV_KTY_BOOL)
        cv_kp_bug(c, "if condition must be bool");
    open_list(c, &s->body);
    c->open[c->depth - 1] = s;
}

void cv_k_else(cv_codegen_ctx *c)
{
    cv_kstmt *s = c->depth > 1 ? c->open[c->depth - 1] : NULL;
    if (!s || s->kind != CV_KS_IF || s->orelse) {
        cv_kp_bug(c, "else without an open if");
        return;
    }
    c->tails[c->depth - 1] = &s->orelse;
}

void cv_k_close(cv_codegen_ctx *c)
{
    if (c->depth <= 1) {
        cv_kp_bug(c, "close without an open for or if");
        return;
    }
    c->depth--;
}

void cv_k_store(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index,
                const cv_kexpr *value)
{
    int slot = cv_k_slot(c, t, true);
    cv_kstmt *s = append(c, CV_KS_STORE);
    if (!s)
        return;
    s->id = slot;
    s->a = index;
    s->b = cv_k_convert(c, value, t->dtype);
    if (index->ty != CV_KTY_I64)
        cv_kp_bug(c, "store with a non-integer index");
}

const cv_kexpr *cv_k_local(cv_codegen_ctx *c, const cv_kexpr *init)
{
    int v = new_var(c, (cv_kty)init->ty);
    cv_kstmt *s = append(c, CV_KS_SET);
    if (!s)
        return &poison;
    s->id = v;
    s->a = init;
    return var_expr(c, v, (cv_kty)init->ty);
}

void cv_k_set(cv_codegen_ctx *c, const cv_kexpr *var, const cv_kexpr *value)
{
    if (var->kind != CV_KE_VAR || var->ty != value->ty) {
        cv_kp_bug(c, "set of a non-variable or with a different type");
        return;
    }
    cv_kstmt *s = append(c, CV_KS_SET);
    if (!s)
        return;
    s->id = var->id;
    s->a = value;
}

void cv_k_call(cv_codegen_ctx *c, cv_krt fn, const cv_kexpr *const *args, int n)
{
    const cv_krt_info *info = cv_krt_get(fn);
    if (!info || info->n_args != n) {
        cv_kp_bug(c, "runtime call with the wrong argument count");
        return;
    }
    for (int i = 0; i < n; i++)
        if (args[i]->ty != info->args[i]) {
            cv_kp_bug(c, "runtime call with a wrongly typed argument");
            return;
        }
    cv_kstmt *s = append(c, CV_KS_CALL);
    const cv_kexpr **copy = cv_kp_alloc(c->prog, sizeof *copy * (size_t)(n ? n : 1));
    if (!s || !copy)
        return;
    memcpy(copy, args, sizeof *copy * (size_t)n);
    s->id = fn;
    s->args = copy;
    s->n_args = n;
    c->k->calls_runtime = true;
}
