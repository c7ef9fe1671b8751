/* Codegen hooks: normalisations (ops_norm.c) and linear (de)quantisation
 * (ops_quant.c).  batch_norm and (de)quantisation are elementwise with
 * per-channel operands viewed along their axis; layer_norm is one parallel
 * item per normalised row (mean, variance, then the scaled write). */
#include "compiler-core/backend/codegen.h"

static int axis_of(const cv_codegen_ctx *c, int64_t dflt, int rank)
{
    int64_t a = cv_op_int(c->op, "axis", dflt);
    return (int)(a < 0 ? a + rank : a);
}

static const cv_kexpr *s_batch_norm(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *x = in[0], *scale = in[1], *bias = in[2], *mean = in[3], *var = in[4];
    const cv_kexpr *eps = cv_k_f32(c, cv_op_float(c->op, "epsilon", 1e-5));
    const cv_kexpr *den = cv_k_un(c, CV_KOP_SQRT, cv_k_add(c, var, eps));
    return cv_k_add(c, cv_k_mul(c, cv_k_bin(c, CV_KOP_DIV, cv_k_sub(c, x, mean), den), scale), bias);
}

int cv_cg_batch_norm(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), out = cv_cg_out(c, 0);
    cv_cg_operand ops[5] = {cv_cg_operand_of(&x)};
    for (int i = 1; i < 5; i++) {
        cv_kten t = cv_cg_in(c, i);
        ops[i] = cv_cg_operand_at(c, &t, 1, x.rank);
    }
    return cv_cg_elementwise_views(c, &out, ops, 5, s_batch_norm);
}

/* The element of t (broadcasting against dims[0..n)) at flat index j of dims. */
static const cv_kexpr *bcast_flat(cv_codegen_ctx *c, const cv_kten *t, const cv_kten *x, int from,
                                  const cv_kexpr *j)
{
    int n = x->rank - from;
    const cv_kexpr *idx = cv_k_i64(c, 0), *stride = cv_k_i64(c, 1);
    for (int d = n - 1; d >= 0; d--) {
        int k = d - (n - t->rank);
        const cv_kexpr *coord = d ? cv_k_rem(c, j, x->dim[from + d]) : j;
        j = cv_k_div(c, j, x->dim[from + d]);
        if (k < 0 || t->sdim[k] == 1)
            continue;
        idx = cv_k_add(c, idx, cv_k_mul(c, coord, stride));
        stride = cv_k_mul(c, stride, t->dim[k]);
    }
    return idx;
}

static bool same_tail(const cv_kten *t, const cv_kten *x, int from)
{
    if (t->rank != x->rank - from)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->sdim[d] < 0 ? t->dim[d] != x->dim[from + d] : t->sdim[d] != x->sdim[from + d])
            return false;
    return true;
}

int cv_cg_layer_norm(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), out = cv_cg_out(c, 0), scale = cv_cg_in(c, 1), bias;
    bool has_bias = c->op->n_operands > 2;
    if (has_bias)
        bias = cv_cg_in(c, 2);
    int a = axis_of(c, -1, x.rank);
    const cv_kexpr *n = cv_k_numel(c, &x, a, x.rank), *zero = cv_k_i64(c, 0);
    const cv_kexpr *nf = cv_k_cast(c, n, CV_KTY_F32);
    const cv_kexpr *p = cv_k_begin(c, NULL, cv_k_numel(c, &x, 0, a), NULL);
    const cv_kexpr *base = cv_k_mul(c, p, n);
    const cv_kexpr *sum = cv_k_local(c, cv_k_f32(c, 0));
    const cv_kexpr *j = cv_k_for(c, zero, n, CV_KFOR_INNER);
    cv_k_set(c, sum, cv_k_add(c, sum, cv_k_load(c, &x, cv_k_add(c, base, j))));
    cv_k_close(c);
    const cv_kexpr *mean = cv_k_local(c, cv_k_bin(c, CV_KOP_DIV, sum, nf));
    const cv_kexpr *var = cv_k_local(c, cv_k_f32(c, 0));
    j = cv_k_for(c, zero, n, CV_KFOR_INNER);
    const cv_kexpr *dv = cv_k_sub(c, cv_k_load(c, &x, cv_k_add(c, base, j)), mean);
    cv_k_set(c, var, cv_k_add(c, var, cv_k_mul(c, dv, dv)));
    cv_k_close(c);
    const cv_kexpr *eps = cv_k_f32(c, cv_op_float(c->op, "epsilon", 1e-5));
    const cv_kexpr *inv = cv_k_local(c, cv_k_bin(c, CV_KOP_DIV, cv_k_f32(c, 1),
        cv_k_un(c, CV_KOP_SQRT, cv_k_add(c, cv_k_bin(c, CV_KOP_DIV, var, nf), eps))));
    j = cv_k_for(c, zero, n, CV_KFOR_INNER);
    const cv_kexpr *at = cv_k_add(c, base, j);
    const cv_kexpr *si = same_tail(&scale, &x, a) ? j : bcast_flat(c, &scale, &x, a, j);
    const cv_kexpr *y = cv_k_mul(c, cv_k_mul(c, cv_k_sub(c, cv_k_load(c, &x, at), mean), inv),
                                 cv_k_load(c, &scale, si));
    if (has_bias) {
        const cv_kexpr *bi = same_tail(&bias, &x, a) ? j : bcast_flat(c, &bias, &x, a, j);
        y = cv_k_add(c, y, cv_k_load(c, &bias, bi));
    }
    cv_k_store(c, &out, at, y);
    cv_k_close(c);
    cv_k_end(c);
    return 0;
}

/* ---- (de)quantisation ------------------------------------------------------- */

/* Operand views: per-axis scale and zero point along `axis`, else as they are. */
static int quant_views(cv_codegen_ctx *c, cv_cg_operand *ops, cv_kten *out)
{
    cv_kten x = cv_cg_in(c, 0);
    *out = cv_cg_out(c, 0);
    ops[0] = cv_cg_operand_of(&x);
    int n = c->op->n_operands, a = axis_of(c, 1, x.rank);
    for (int i = 1; i < n; i++) {
        cv_kten t = cv_cg_in(c, i);
        bool per_axis = t.rank == 1 && t.sdim[0] != 1;
        ops[i] = per_axis ? cv_cg_operand_at(c, &t, a, x.rank) : cv_cg_operand_of(&t);
    }
    return n;
}

/* round_half_even(x / scale) + zero_point in f32; the store into u8/i8
 * saturates and sends NaN to 0. */
static const cv_kexpr *s_quantize(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *r = cv_k_un(c, CV_KOP_ROUND_EVEN, cv_k_bin(c, CV_KOP_DIV, in[0], in[1]));
    return n > 2 ? cv_k_add(c, r, cv_k_cast(c, in[2], CV_KTY_F32)) : r;
}

static const cv_kexpr *s_dequantize(cv_codegen_ctx *c, const cv_kexpr *const *in, int n)
{
    const cv_kexpr *d = n > 2 ? cv_k_sub(c, in[0], in[2]) : in[0];
    return cv_k_mul(c, cv_k_cast(c, d, CV_KTY_F32), in[1]);
}

int cv_cg_quantize_linear(cv_codegen_ctx *c)
{
    cv_cg_operand ops[3];
    cv_kten out;
    int n = quant_views(c, ops, &out);
    return cv_cg_elementwise_views(c, &out, ops, n, s_quantize);
}

int cv_cg_dequantize_linear(cv_codegen_ctx *c)
{
    cv_cg_operand ops[3];
    cv_kten out;
    int n = quant_views(c, ops, &out);
    return cv_cg_elementwise_views(c, &out, ops, n, s_dequantize);
}
