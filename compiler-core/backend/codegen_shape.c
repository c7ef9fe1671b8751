/* Codegen hooks: shape ops (ops_shape.c).  reshape, flatten, squeeze and
 * unsqueeze keep the bytes as they lie, so their result is a view of the
 * operand (no code; a copy only when the result must land in an output
 * buffer); expand is an elementwise broadcast copy; shape writes the dims,
 * symbolic ones read at run time.  constant and arange get here only when
 * they depend on the symbols (a fill of symbolic extent, arange(L),
 * arange(P, P + 1)): otherwise ops without operands are evaluated at
 * compile time. */
#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/kernel_internal.h"

int cv_cg_reshape(cv_codegen_ctx *c)
{
    return cv_cg_view(c, 0, 0, NULL);
}

static const cv_kexpr *s_identity(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    return in[0];
}

int cv_cg_expand(cv_codegen_ctx *c)
{
    return cv_cg_elementwise(c, s_identity);
}

int cv_cg_shape(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    int64_t r = x.rank, s = cv_op_int(c->op, "start", 0), e = cv_op_int(c->op, "end", r);
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < s ? s : e > r ? r : e;
    cv_k_begin(c, "shape", NULL, NULL);
    for (int64_t i = s; i < e; i++)
        cv_k_store(c, &y, cv_k_i64(c, i - s), x.dim[i]);
    cv_k_end(c);
    return 0;
}

/* y[i] = start + i * delta, start and the length read at run time. */
int cv_cg_arange(cv_codegen_ctx *c)
{
    cv_kten y = cv_cg_out(c, 0);
    cv_dim sd = {0, NULL};
    cv_op_dims(c->op, "start", &sd, 1);
    const cv_kexpr *start = cv_kp_dim(c, sd);
    if (!start)
        return cv_cg_error(c, CV_E_BACKEND_DIM_EXPRESSION, "arange: start %s is not computable "
                           "from the inputs' symbols", sd.sym ? sd.sym : "?");
    const cv_kexpr *delta = cv_k_i64(c, cv_op_int(c->op, "delta", 1));
    cv_k_begin(c, "arange", NULL, NULL);
    const cv_kexpr *i = cv_k_for(c, cv_k_i64(c, 0), y.dim[0], CV_KFOR_INNER);
    cv_k_store(c, &y, i, cv_k_add(c, start, cv_k_mul(c, i, delta)));
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* One value over a shape of symbolic extent. */
int cv_cg_constant(cv_codegen_ctx *c)
{
    cv_kten y = cv_cg_out(c, 0);
    const cv_attr *fv = cv_op_attr(c->op, "value"), *iv = cv_op_attr(c->op, "ints");
    const cv_kexpr *v = iv                           ? cv_k_i64(c, iv->ints[0])
                        : fv->kind == CV_ATTR_INTS   ? cv_k_f64(c, (double)fv->ints[0])
                                                     : cv_k_f64(c, fv->floats[0]);
    cv_k_begin(c, "fill", NULL, NULL);
    const cv_kexpr *i = cv_k_for(c, cv_k_i64(c, 0), cv_k_numel(c, &y, 0, y.rank), CV_KFOR_INNER);
    cv_k_store(c, &y, i, v);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}
