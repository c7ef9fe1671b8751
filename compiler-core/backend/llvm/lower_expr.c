/* Kernel IR expressions to LLVM IR: scalar math, loads with the tensor
 * dtype's conversion to its compute type, conversions with the
 * interpreter's store semantics. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/backend/llvm/llvm_internal.h"

LLVMTypeRef cv_llvm_kty(LLVMContextRef ctx, cv_kty t)
{
    switch (t) {
    case CV_KTY_BOOL: return LLVMInt1TypeInContext(ctx);
    case CV_KTY_I64: return LLVMInt64TypeInContext(ctx);
    case CV_KTY_F32: return LLVMFloatTypeInContext(ctx);
    case CV_KTY_F64: return LLVMDoubleTypeInContext(ctx);
    case CV_KTY_PTR: return LLVMPointerTypeInContext(ctx, 0);
    default: return LLVMVoidTypeInContext(ctx);
    }
}

/* The type a tensor element has in memory. */
static LLVMTypeRef elem_type(const cv_llvm_fn *f, cv_dtype dt)
{
    LLVMContextRef ctx = f->ctx;
    switch (dt) {
    case CV_F32: return LLVMFloatTypeInContext(ctx);
    case CV_F64: return LLVMDoubleTypeInContext(ctx);
    case CV_F16: return (f->quirks & CV_LLVM_SOFT_HALF) ? LLVMInt16TypeInContext(ctx) : LLVMHalfTypeInContext(ctx);
    case CV_BF16: return LLVMInt16TypeInContext(ctx);
    case CV_I16:
    case CV_U16: return LLVMInt16TypeInContext(ctx);
    case CV_I32:
    case CV_U32: return LLVMInt32TypeInContext(ctx);
    case CV_I64:
    case CV_U64: return LLVMInt64TypeInContext(ctx);
    default: return LLVMInt8TypeInContext(ctx);    /* i8 u8 bool */
    }
}

LLVMValueRef cv_llvm_declare(cv_llvm_fn *f, const char *name, LLVMTypeRef ret,
                             LLVMTypeRef *params, int n)
{
    LLVMValueRef fn = LLVMGetNamedFunction(f->mod, name);
    if (!fn)
        fn = LLVMAddFunction(f->mod, name, LLVMFunctionType(ret, params, (unsigned)n, 0));
    return fn;
}

LLVMValueRef cv_llvm_call(cv_llvm_fn *f, const char *name, LLVMTypeRef ret,
                          LLVMTypeRef *params, LLVMValueRef *args, int n)
{
    LLVMValueRef fn = cv_llvm_declare(f, name, ret, params, n);
    return LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)n, "");
}

/* An overloaded intrinsic such as llvm.sqrt.f32, over the types given. */
static LLVMValueRef intrinsic(cv_llvm_fn *f, const char *name, LLVMTypeRef *over, int n_over,
                              LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(f->mod, id, over, (size_t)n_over);
    LLVMTypeRef ft = LLVMIntrinsicGetType(f->ctx, id, over, (size_t)n_over);
    return LLVMBuildCall2(f->b, ft, fn, args, (unsigned)n, "");
}

static LLVMValueRef intrinsic1(cv_llvm_fn *f, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return intrinsic(f, name, &t, 1, &x, 1);
}

static LLVMValueRef intrinsic2(cv_llvm_fn *f, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef a[2] = {x, y};
    return intrinsic(f, name, &t, 1, a, 2);
}

/* libm for what LLVM has no lowering-independent intrinsic for. */
static LLVMValueRef libm1(cv_llvm_fn *f, const char *base, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    char name[32];
    bool single = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
    snprintf(name, sizeof name, "%s%s", base, single ? "f" : "");
    return cv_llvm_call(f, name, t, &t, &x, 1);
}

static bool is_fp(LLVMValueRef v)
{
    LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(v));
    return k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind;
}

/* Round half to even.  The soft form adds and subtracts copysign(2^p, x)
 * (p = mantissa bits), which rounds in the default mode; larger values are
 * integers already. */
static LLVMValueRef round_even(cv_llvm_fn *f, LLVMValueRef x)
{
    if (!(f->quirks & CV_LLVM_SOFT_ROUND))
        return intrinsic1(f, "llvm.roundeven", x);
    LLVMTypeRef t = LLVMTypeOf(x);
    double big = LLVMGetTypeKind(t) == LLVMFloatTypeKind ? 8388608.0 : 4503599627370496.0;
    LLVMValueRef m = intrinsic2(f, "llvm.copysign", LLVMConstReal(t, big), x);
    LLVMValueRef r = LLVMBuildFSub(f->b, LLVMBuildFAdd(f->b, x, m, ""), m, "");
    LLVMValueRef small = LLVMBuildFCmp(f->b, LLVMRealOLT, intrinsic1(f, "llvm.fabs", x),
                                       LLVMConstReal(t, big), "");
    return LLVMBuildSelect(f->b, small, r, x, "");
}

static LLVMValueRef lower_un(cv_llvm_fn *f, cv_kop op, LLVMValueRef x)
{
    LLVMBuilderRef b = f->b;
    bool single = LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMFloatTypeKind;
    switch (op) {
    case CV_KOP_NEG: return is_fp(x) ? LLVMBuildFNeg(b, x, "") : LLVMBuildNeg(b, x, "");
    case CV_KOP_ABS:
        if (is_fp(x))
            return intrinsic1(f, "llvm.fabs", x);
        return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, LLVMConstNull(LLVMTypeOf(x)), ""),
                               LLVMBuildNeg(b, x, ""), x, "");
    case CV_KOP_NOT: return LLVMBuildNot(b, x, "");
    case CV_KOP_SQRT: return intrinsic1(f, "llvm.sqrt", x);
    case CV_KOP_EXP: return single ? cv_llvm_expf(f, x) : intrinsic1(f, "llvm.exp", x);
    case CV_KOP_LOG: return intrinsic1(f, "llvm.log", x);
    case CV_KOP_TANH: return libm1(f, "tanh", x);
    case CV_KOP_ERF: return single ? cv_llvm_erff(f, x) : libm1(f, "erf", x);
    case CV_KOP_SIN: return libm1(f, "sin", x);
    case CV_KOP_COS: return libm1(f, "cos", x);
    case CV_KOP_TAN: return libm1(f, "tan", x);
    case CV_KOP_ASIN: return libm1(f, "asin", x);
    case CV_KOP_ACOS: return libm1(f, "acos", x);
    case CV_KOP_ATAN: return libm1(f, "atan", x);
    case CV_KOP_SINH: return libm1(f, "sinh", x);
    case CV_KOP_COSH: return libm1(f, "cosh", x);
    case CV_KOP_ASINH: return libm1(f, "asinh", x);
    case CV_KOP_ACOSH: return libm1(f, "acosh", x);
    case CV_KOP_ATANH: return libm1(f, "atanh", x);
    case CV_KOP_FLOOR: return intrinsic1(f, "llvm.floor", x);
    case CV_KOP_CEIL: return intrinsic1(f, "llvm.ceil", x);
    case CV_KOP_ROUND_EVEN: return round_even(f, x);
    case CV_KOP_ISNAN: return LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    default: return LLVMGetUndef(LLVMTypeOf(x));
    }
}

static LLVMValueRef lower_bin(cv_llvm_fn *f, cv_kop op, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = f->b;
    bool fp = is_fp(x);
    switch (op) {
    case CV_KOP_ADD: return fp ? LLVMBuildFAdd(b, x, y, "") : LLVMBuildAdd(b, x, y, "");
    case CV_KOP_SUB: return fp ? LLVMBuildFSub(b, x, y, "") : LLVMBuildSub(b, x, y, "");
    case CV_KOP_MUL: return fp ? LLVMBuildFMul(b, x, y, "") : LLVMBuildMul(b, x, y, "");
    case CV_KOP_DIV: return fp ? LLVMBuildFDiv(b, x, y, "") : LLVMBuildSDiv(b, x, y, "");
    case CV_KOP_REM: return fp ? LLVMBuildFRem(b, x, y, "") : LLVMBuildSRem(b, x, y, "");
    case CV_KOP_MIN: return intrinsic2(f, fp ? "llvm.minimum" : "llvm.smin", x, y);
    case CV_KOP_MAX: return intrinsic2(f, fp ? "llvm.maximum" : "llvm.smax", x, y);
    case CV_KOP_FMIN: return intrinsic2(f, "llvm.minnum", x, y);
    case CV_KOP_FMAX: return intrinsic2(f, "llvm.maxnum", x, y);
    case CV_KOP_POW: return intrinsic2(f, "llvm.pow", x, y);
    case CV_KOP_AND: return LLVMBuildAnd(b, x, y, "");
    case CV_KOP_OR: return LLVMBuildOr(b, x, y, "");
    default: return LLVMGetUndef(LLVMTypeOf(x));
    }
}

static LLVMValueRef lower_cmp(cv_llvm_fn *f, cv_kop op, LLVMValueRef x, LLVMValueRef y)
{
    static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE,
                                           LLVMRealOGT, LLVMRealOGE};
    static const LLVMIntPredicate ip[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE,
                                          LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE,
                                          LLVMIntUGT, LLVMIntUGE};
    int i = (int)op - CV_KOP_EQ;
    if (is_fp(x))
        return LLVMBuildFCmp(f->b, fp[i], x, y, "");
    bool is_bool = LLVMGetIntTypeWidth(LLVMTypeOf(x)) == 1;
    return LLVMBuildICmp(f->b, is_bool ? up[i] : ip[i], x, y, "");
}

/* Numeric conversion between compute types (cv_k_cast). */
static LLVMValueRef cast(cv_llvm_fn *f, LLVMValueRef x, cv_kty from, cv_kty to)
{
    LLVMBuilderRef b = f->b;
    LLVMTypeRef tt = cv_llvm_kty(f->ctx, to);
    bool ffrom = from == CV_KTY_F32 || from == CV_KTY_F64, fto = to == CV_KTY_F32 || to == CV_KTY_F64;
    if (from == to)
        return x;
    if (to == CV_KTY_BOOL)
        return ffrom ? LLVMBuildFCmp(b, LLVMRealUNE, x, LLVMConstNull(LLVMTypeOf(x)), "")
                     : LLVMBuildICmp(b, LLVMIntNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
    if (from == CV_KTY_BOOL)
        return fto ? LLVMBuildUIToFP(b, x, tt, "") : LLVMBuildZExt(b, x, tt, "");
    if (ffrom && fto)
        return to == CV_KTY_F64 ? LLVMBuildFPExt(b, x, tt, "") : LLVMBuildFPTrunc(b, x, tt, "");
    if (fto)
        return LLVMBuildSIToFP(b, x, tt, "");
    LLVMTypeRef over[2] = {tt, LLVMTypeOf(x)};
    return intrinsic(f, "llvm.fptosi.sat", over, 2, &x, 1);
}

static LLVMValueRef f32_to_half(cv_llvm_fn *f, LLVMValueRef v)
{
    if (!(f->quirks & CV_LLVM_SOFT_HALF))
        return LLVMBuildFPTrunc(f->b, v, LLVMHalfTypeInContext(f->ctx), "");
    LLVMTypeRef f32 = LLVMFloatTypeInContext(f->ctx);
    return cv_llvm_call(f, "cvrt_f32_to_f16", LLVMInt16TypeInContext(f->ctx), &f32, &v, 1);
}

static LLVMValueRef half_to_f32(cv_llvm_fn *f, LLVMValueRef h)
{
    LLVMTypeRef f32 = LLVMFloatTypeInContext(f->ctx);
    if (!(f->quirks & CV_LLVM_SOFT_HALF))
        return LLVMBuildFPExt(f->b, h, f32, "");
    LLVMTypeRef i16 = LLVMInt16TypeInContext(f->ctx);
    return cv_llvm_call(f, "cvrt_f16_to_f32", f32, &i16, &h, 1);
}

/* Round-to-nearest-even of a float to bfloat16, kept as a float (NaN stays
 * a quiet NaN), matching cv_f32_to_bf16. */
static LLVMValueRef bf16_round(cv_llvm_fn *f, LLVMValueRef x)
{
    LLVMBuilderRef b = f->b;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(f->ctx);
    LLVMValueRef u = LLVMBuildBitCast(b, x, i32, "");
    LLVMValueRef hi = LLVMBuildLShr(b, u, LLVMConstInt(i32, 16, 0), "");
    LLVMValueRef odd = LLVMBuildAnd(b, hi, LLVMConstInt(i32, 1, 0), "");
    LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, odd, LLVMConstInt(i32, 0x7fff, 0), ""), "");
    LLVMValueRef nan = LLVMBuildOr(b, u, LLVMConstInt(i32, 0x400000, 0), "");
    LLVMValueRef v = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), nan, r, "");
    v = LLVMBuildAnd(b, v, LLVMConstInt(i32, 0xffff0000u, 0), "");
    return LLVMBuildBitCast(b, v, LLVMFloatTypeInContext(f->ctx), "");
}

static LLVMValueRef to_int_dtype(cv_llvm_fn *f, LLVMValueRef x, cv_kty from, cv_dtype to)
{
    LLVMBuilderRef b = f->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(f->ctx), et = elem_type(f, to);
    bool is_unsigned = cv_dtype_is_unsigned(to), wide = cv_dtype_size(to) == 8;
    if (from == CV_KTY_BOOL)
        return LLVMBuildZExt(b, x, i64, "");
    if (from == CV_KTY_F32 || from == CV_KTY_F64) {
        LLVMTypeRef over[2] = {et, LLVMTypeOf(x)};
        x = intrinsic(f, is_unsigned ? "llvm.fptoui.sat" : "llvm.fptosi.sat", over, 2, &x, 1);
    } else if (!wide) {
        x = LLVMBuildTrunc(b, x, et, "");
    }
    if (wide)
        return x;
    return is_unsigned ? LLVMBuildZExt(b, x, i64, "") : LLVMBuildSExt(b, x, i64, "");
}

static LLVMValueRef convert(cv_llvm_fn *f, LLVMValueRef x, cv_kty from, cv_dtype to)
{
    if (to == CV_BOOL)
        return cast(f, x, from, CV_KTY_BOOL);
    if (cv_dtype_is_int(to))
        return to_int_dtype(f, x, from, to);
    if (to == CV_F64)
        return cast(f, x, from, CV_KTY_F64);
    LLVMValueRef v = cast(f, x, from, CV_KTY_F32);
    if (to == CV_F16) {
        v = half_to_f32(f, f32_to_half(f, v));
    } else if (to == CV_BF16) {
        v = bf16_round(f, v);
    }
    return v;
}

LLVMValueRef cv_llvm_to_storage(cv_llvm_fn *f, LLVMValueRef v, cv_dtype dt)
{
    LLVMBuilderRef b = f->b;
    LLVMTypeRef et = elem_type(f, dt);
    switch (dt) {
    case CV_F32:
    case CV_F64:
    case CV_I64:
    case CV_U64: return v;
    case CV_F16: return f32_to_half(f, v);
    case CV_BF16: {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(f->ctx);
        LLVMValueRef u = LLVMBuildBitCast(b, v, i32, "");
        return LLVMBuildTrunc(b, LLVMBuildLShr(b, u, LLVMConstInt(i32, 16, 0), ""), et, "");
    }
    case CV_BOOL: return LLVMBuildZExt(b, v, et, "");
    default: return LLVMBuildTrunc(b, v, et, "");
    }
}

static LLVMValueRef from_storage(cv_llvm_fn *f, LLVMValueRef v, cv_dtype dt)
{
    LLVMBuilderRef b = f->b;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(f->ctx), f32 = LLVMFloatTypeInContext(f->ctx);
    switch (dt) {
    case CV_F16: return half_to_f32(f, v);
    case CV_BF16: {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(f->ctx);
        LLVMValueRef u = LLVMBuildShl(b, LLVMBuildZExt(b, v, i32, ""), LLVMConstInt(i32, 16, 0), "");
        return LLVMBuildBitCast(b, u, f32, "");
    }
    case CV_I8:
    case CV_I16:
    case CV_I32: return LLVMBuildSExt(b, v, i64, "");
    case CV_U8:
    case CV_U16:
    case CV_U32: return LLVMBuildZExt(b, v, i64, "");
    case CV_BOOL: return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    default: return v;
    }
}

static LLVMValueRef element_ptr(cv_llvm_fn *f, const cv_kexpr *e)
{
    LLVMValueRef idx = cv_llvm_expr(f, e->a);
    LLVMTypeRef et = elem_type(f, (cv_dtype)e->op);
    return LLVMBuildGEP2(f->b, et, f->slot[e->id], &idx, 1, "");
}

static LLVMValueRef lower(cv_llvm_fn *f, const cv_kexpr *e)
{
    LLVMContextRef ctx = f->ctx;
    LLVMTypeRef t = cv_llvm_kty(ctx, (cv_kty)e->ty);
    switch ((cv_kexpr_kind)e->kind) {
    case CV_KE_CONST_I:
        return e->ty == CV_KTY_PTR ? LLVMConstNull(t) : LLVMConstInt(t, (unsigned long long)e->i, 1);
    case CV_KE_CONST_F: return LLVMConstReal(t, e->f);
    case CV_KE_SYM: return f->sym[e->id];
    case CV_KE_VAR: return LLVMBuildLoad2(f->b, t, f->var[e->id], "");
    case CV_KE_LOAD: {
        cv_dtype dt = (cv_dtype)e->op;
        LLVMValueRef v = LLVMBuildLoad2(f->b, elem_type(f, dt), element_ptr(f, e), "");
        LLVMSetAlignment(v, (unsigned)cv_dtype_size(dt));
        return from_storage(f, v, dt);
    }
    case CV_KE_ADDR: return element_ptr(f, e);
    case CV_KE_UN: return lower_un(f, (cv_kop)e->op, cv_llvm_expr(f, e->a));
    case CV_KE_BIN: return lower_bin(f, (cv_kop)e->op, cv_llvm_expr(f, e->a), cv_llvm_expr(f, e->b));
    case CV_KE_CMP: return lower_cmp(f, (cv_kop)e->op, cv_llvm_expr(f, e->a), cv_llvm_expr(f, e->b));
    case CV_KE_SELECT:
        return LLVMBuildSelect(f->b, cv_llvm_expr(f, e->a), cv_llvm_expr(f, e->b),
                               cv_llvm_expr(f, e->c), "");
    case CV_KE_CAST: return cast(f, cv_llvm_expr(f, e->a), (cv_kty)e->a->ty, (cv_kty)e->ty);
    case CV_KE_CONVERT:
        return convert(f, cv_llvm_expr(f, e->a), (cv_kty)e->a->ty, (cv_dtype)e->op);
    case CV_KE_STOREPTR: return f->store_ptr_fn(f, e->id);
    }
    return LLVMGetUndef(t);
}

void cv_llvm_memo_reset(cv_llvm_fn *f)
{
    if (f->memo_key)
        memset(f->memo_key, 0, sizeof *f->memo_key * (size_t)f->memo_cap);
}

/* Open addressing on the expression's address; a full table just stops
 * memoising (correct, only slower to compile). */
LLVMValueRef cv_llvm_expr(cv_llvm_fn *f, const cv_kexpr *e)
{
    bool cacheable = e->kind != CV_KE_CONST_I && e->kind != CV_KE_CONST_F && f->memo_cap;
    size_t h = 0;
    if (cacheable) {
        h = ((uintptr_t)e >> 4) * 0x9E3779B97F4A7C15ull % (size_t)f->memo_cap;
        for (int probe = 0; probe < 16; probe++) {
            size_t i = (h + (size_t)probe) % (size_t)f->memo_cap;
            if (f->memo_key[i] == e)
                return f->memo_val[i];
            if (!f->memo_key[i])
                break;
        }
    }
    LLVMValueRef v = lower(f, e);
    for (int probe = 0; cacheable && probe < 16; probe++) {
        size_t i = (h + (size_t)probe) % (size_t)f->memo_cap;
        if (!f->memo_key[i]) {
            f->memo_key[i] = e;
            f->memo_val[i] = v;
            break;
        }
    }
    return v;
}
