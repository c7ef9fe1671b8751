/* Codegen hooks: shape ops (ops_shape.c).  reshape, flatten, squeeze and
 * unsqueeze keep the bytes as they lie, so their result is a view of the
 * operand (no code; a copy only when the result must land in an output
 * buffer); expand is an elementwise broadcast copy; shape writes the dims,
 * symbolic ones read at run time.  constant never gets here: ops without
 * operands are evaluated at compile time. */
#include "compiler-core/backend/codegen.h"

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
