/* Op family fragment: unary float math beyond the activations: the
 * trigonometric and hyperbolic functions and their inverses, and rounding
 * (floor, ceil, round half to even, as ONNX Round).  The result has the
 * operand's type; kernels compute in double (C's libm) and round once. */
#include <math.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"

static int infer_float(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_REALS))
        return -1;
    c->out[0] = c->in[0];
    return 0;
}

static int eval_map(cv_eval_ctx *c, double (*fn)(double))
{
    const cv_tensor *x = c->in[0];
    cv_tensor *o = &c->out[0];
    for (int64_t i = 0; i < o->numel; i++)
        cv_tensor_set(o, i, fn(cv_tensor_get(x, i)));
    return 0;
}

#define MATH_KERNEL(name, fn) \
    static int eval_##name(cv_eval_ctx *c) { return eval_map(c, fn); }

MATH_KERNEL(sin, sin)
MATH_KERNEL(cos, cos)
MATH_KERNEL(tan, tan)
MATH_KERNEL(asin, asin)
MATH_KERNEL(acos, acos)
MATH_KERNEL(atan, atan)
MATH_KERNEL(sinh, sinh)
MATH_KERNEL(cosh, cosh)
MATH_KERNEL(asinh, asinh)
MATH_KERNEL(acosh, acosh)
MATH_KERNEL(atanh, atanh)
MATH_KERNEL(floor, floor)
MATH_KERNEL(ceil, ceil)
/* nearbyint rounds half to even in the default rounding mode. */
MATH_KERNEL(round, nearbyint)

static const cv_attr_schema no_attrs[] = {{NULL, CV_ATTR_NONE, false}};

#define EW CV_OPF_ELEMENTWISE
#define MATH_OP(name) {#name, 1, 1, 1, 1, no_attrs, infer_float, eval_##name, cv_cg_##name, EW}

/* Every op: one float operand, no attributes; result of the operand's type. */
static const cv_op_def defs[] = {
    MATH_OP(sin), MATH_OP(cos), MATH_OP(tan), MATH_OP(asin), MATH_OP(acos), MATH_OP(atan),
    MATH_OP(sinh), MATH_OP(cosh), MATH_OP(asinh), MATH_OP(acosh), MATH_OP(atanh),
    MATH_OP(floor), MATH_OP(ceil),
    /* round: half to even (ONNX Round) */
    MATH_OP(round),
};

const cv_op_family cv_ops_math = {defs, (int)(sizeof defs / sizeof defs[0])};
