/* Codegen hooks: unary float math (ops_math.c), one kernel op each in the
 * shared elementwise loop nest (libm in the generated code, like the
 * reference kernels). */
#include "compiler-core/backend/codegen.h"

#define MATH_HOOK(name, kop) \
    static const cv_kexpr *s_##name(cv_codegen_ctx *c, const cv_kexpr *const *in, int n) \
    { \
        (void)n; \
        return cv_k_un(c, kop, in[0]); \
    } \
    int cv_cg_##name(cv_codegen_ctx *c) { return cv_cg_elementwise(c, s_##name); }

MATH_HOOK(sin, CV_KOP_SIN)
MATH_HOOK(cos, CV_KOP_COS)
MATH_HOOK(tan, CV_KOP_TAN)
MATH_HOOK(asin, CV_KOP_ASIN)
MATH_HOOK(acos, CV_KOP_ACOS)
MATH_HOOK(atan, CV_KOP_ATAN)
MATH_HOOK(sinh, CV_KOP_SINH)
MATH_HOOK(cosh, CV_KOP_COSH)
MATH_HOOK(asinh, CV_KOP_ASINH)
MATH_HOOK(acosh, CV_KOP_ACOSH)
MATH_HOOK(atanh, CV_KOP_ATANH)
MATH_HOOK(floor, CV_KOP_FLOOR)
MATH_HOOK(ceil, CV_KOP_CEIL)
MATH_HOOK(round, CV_KOP_ROUND_EVEN)
