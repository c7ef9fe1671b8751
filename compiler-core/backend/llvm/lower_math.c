/* f32 exp and erf as straight-line arithmetic the loop vectorizer can widen
 * (a call to expf or erff stays scalar: SiLU, sigmoid, softmax and GELU
 * spent most of their time in those calls).  exp is Cephes' expf: n =
 * round(x log2 e), r = x - n ln 2 in two parts, a degree-6 polynomial,
 * scaled by 2^n as two factors 2^h 2^(n-h) so that every n in [-150, 128]
 * gives normal numbers (the product rounds to a denormal or to infinity as
 * expf does); within 1.5 ulp.  erf is the rational approximation of
 * Eigen's generic_fast_erf_float on [-4, 4] (|erf| is 1 in f32 beyond),
 * absolute error below 5e-7.  NaN stays NaN; exp(+inf) is +inf, exp(-inf)
 * is 0. */
#include "compiler-core/backend/llvm/llvm_internal.h"

#include <string.h>

static LLVMValueRef ic(cv_llvm_fn *f, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(f->mod, id, &t, 1);
    LLVMValueRef a[2] = {x, y};
    return LLVMBuildCall2(f->b, LLVMIntrinsicGetType(f->ctx, id, &t, 1), fn, a, y ? 2 : 1, "");
}

static LLVMValueRef cf(LLVMValueRef like, double v)
{
    return LLVMConstReal(LLVMTypeOf(like), v);
}

static LLVMValueRef fma3(cv_llvm_fn *f, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    return LLVMBuildFAdd(f->b, LLVMBuildFMul(f->b, a, b, ""), c, "");
}

/* NaN in, NaN out (minnum/maxnum would turn it into a bound). */
static LLVMValueRef keep_nan(cv_llvm_fn *f, LLVMValueRef x, LLVMValueRef v)
{
    return LLVMBuildSelect(f->b, LLVMBuildFCmp(f->b, LLVMRealUNO, x, x, ""), x, v, "");
}

static LLVMValueRef clamp(cv_llvm_fn *f, LLVMValueRef x, double lo, double hi)
{
    return ic(f, "llvm.minnum", ic(f, "llvm.maxnum", x, cf(x, lo)), cf(x, hi));
}

/* 2^k for an i32 k in [-126, 127], as float bits. */
static LLVMValueRef pow2(cv_llvm_fn *f, LLVMValueRef k)
{
    LLVMTypeRef i32 = LLVMTypeOf(k);
    LLVMValueRef e = LLVMBuildAdd(f->b, k, LLVMConstInt(i32, 127, 0), "");
    return LLVMBuildBitCast(f->b, LLVMBuildShl(f->b, e, LLVMConstInt(i32, 23, 0), ""),
                            LLVMFloatTypeInContext(f->ctx), "");
}

LLVMValueRef cv_llvm_expf(cv_llvm_fn *f, LLVMValueRef x)
{
    static const double poly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
    LLVMBuilderRef b = f->b;
    LLVMValueRef xc = clamp(f, x, -104.0, 88.72283935546875);
    LLVMValueRef n = ic(f, "llvm.floor", fma3(f, xc, cf(x, 1.44269504088896341), cf(x, 0.5)), NULL);
    LLVMValueRef r = fma3(f, n, cf(x, -0.693359375), xc);
    r = fma3(f, n, cf(x, 2.12194440e-4), r);
    LLVMValueRef y = cf(x, poly[0]);
    for (int i = 1; i < 6; i++)
        y = fma3(f, y, r, cf(x, poly[i]));
    y = fma3(f, y, LLVMBuildFMul(b, r, r, ""), LLVMBuildFAdd(b, r, cf(x, 1), ""));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(f->ctx);
    LLVMValueRef k = LLVMBuildFPToSI(b, n, i32, "");
    LLVMValueRef h = LLVMBuildAShr(b, k, LLVMConstInt(i32, 1, 0), "");
    y = LLVMBuildFMul(b, LLVMBuildFMul(b, y, pow2(f, h), ""), pow2(f, LLVMBuildSub(b, k, h, "")), "");
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, x, cf(x, 88.72283935546875), "");
    y = LLVMBuildSelect(b, big, cf(x, __builtin_inf()), y, "");
    return keep_nan(f, x, y);
}

LLVMValueRef cv_llvm_erff(cv_llvm_fn *f, LLVMValueRef x)
{
    static const double num[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                                 -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                 -1.60960333262415e-02};
    static const double den[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                 -7.37332916720468e-03, -1.42647390514189e-02};
    LLVMValueRef xc = clamp(f, x, -4.0, 4.0), x2 = LLVMBuildFMul(f->b, xc, xc, "");
    LLVMValueRef p = cf(x, num[0]), q = cf(x, den[0]);
    for (int i = 1; i < 7; i++)
        p = fma3(f, p, x2, cf(x, num[i]));
    for (int i = 1; i < 5; i++)
        q = fma3(f, q, x2, cf(x, den[i]));
    LLVMValueRef v = LLVMBuildFDiv(f->b, LLVMBuildFMul(f->b, p, xc, ""), q, "");
    return keep_nan(f, x, v);
}
