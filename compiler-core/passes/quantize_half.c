/* -p fp16 / -p bf16: the weights of convolutions and matrix products are
 * stored in the reduced type (half the bytes) behind a cast to f32, so
 * every other op, numerically fragile ones (softmax, norms, reductions,
 * exp/log) included, stays f32 by construction.  The report says which
 * ops hold reduced weights; code generation says how they compute
 * (backend/codegen_half.c: in bf16 with f32 sums where the target has
 * AVX512_BF16, else f32 on weights widened block by block in the GEMM). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/quantize.h"

/* The ops whose weights (operand 1) are stored reduced. */
static const cv_op_id weight_ops[] = {CV_OP_CONV2D, CV_OP_CONV_TRANSPOSE2D, CV_OP_GEMM,
                                      CV_OP_MATMUL};
#define N_WEIGHT_OPS (sizeof weight_ops / sizeof weight_ops[0])

static bool weight_op(const cv_op *op)
{
    for (size_t i = 0; i < N_WEIGHT_OPS; i++)
        if (cv_op_is(op, weight_ops[i]))
            return true;
    return false;
}

/* Moves the op just appended to f to position `at` (before its user). */
static void move_last_to(cv_func *f, int at)
{
    cv_op *op = f->ops[f->n_ops - 1];
    memmove(&f->ops[at + 1], &f->ops[at], (size_t)(f->n_ops - 1 - at) * sizeof *f->ops);
    f->ops[at] = op;
    for (int i = at; i < f->n_ops; i++)
        f->ops[i]->id = i;
}

/* cast(reduced copy of w) -> f32, placed before op index `at`. */
static cv_value *reduced(cv_func *f, const cv_value *w, cv_dtype dt, int at, cv_diag *d)
{
    const cv_shape *s = &w->type.shape;
    int64_t dims[CV_MAX_RANK];
    for (int i = 0; i < s->rank; i++)
        dims[i] = s->d[i].n;
    cv_tensor t;
    if (cv_tensor_alloc(&t, dt, s->rank, dims))
        return NULL;
    const float *src = w->param->data;
    for (int64_t i = 0; i < t.numel; i++)
        cv_tensor_set(&t, i, src[i]);
    cv_value *p = cv_pass_add_const(f, &t);
    cv_tensor_free(&t);
    if (!p)
        return NULL;
    cv_op *cast = cv_op_new(f, "cast", &p, 1);
    cv_op_set_dtype(cast, "to", CV_F32);
    for (int i = 0; i < f->ops[at]->n_locs; i++)
        cv_op_add_loc(cast, f->ops[at]->locs[i].file, f->ops[at]->locs[i].line,
                      f->ops[at]->locs[i].col);
    if (cv_op_finish(cast, 1, d))
        return NULL;
    move_last_to(f, at);
    return cast->results[0];
}

int cv_quantize_half(cv_func *f, const cv_quant_opts *q, char *rep, size_t size, cv_diag *d)
{
    cv_dtype dt = q->precision == CV_PRECISION_BF16 ? CV_BF16 : CV_F16;
    int64_t before = 0;
    int n = 0, kinds[N_WEIGHT_OPS] = {0};
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        if (!weight_op(op) || op->n_operands < 2)
            continue;
        cv_value *w = op->operands[1];
        if (w->kind != CV_VAL_PARAM || !w->param->data || w->type.dtype != CV_F32 ||
            !cv_shape_is_static(&w->type.shape))
            continue;
        cv_value *r = reduced(f, w, dt, i, d);
        if (!r)
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory storing reduced weights");
        op->operands[1] = r;
        before += cv_shape_numel(&w->type.shape) * 4;
        n++;
        for (size_t k = 0; k < N_WEIGHT_OPS; k++)
            kinds[k] += cv_op_is(op, weight_ops[k]);
        i++;    /* the cast now sits at i */
    }
    cv_pass_stats st = {0};
    if (cv_pass_dce(f, &st))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory removing dead code");
    int at = snprintf(rep, size, "precision %s: weights of %d ops stored as %s (%.2f MB -> "
                      "%.2f MB):", cv_dtype_name(dt), n, cv_dtype_name(dt), before / 1e6,
                      before / 2e6);
    for (size_t k = 0; k < N_WEIGHT_OPS && at > 0 && (size_t)at < size; k++)
        if (kinds[k])
            at += snprintf(rep + at, size - (size_t)at, " %s x%d",
                           cv_op_def_of(weight_ops[k])->name, kinds[k]);
    if (at > 0 && (size_t)at < size)
        snprintf(rep + at, size - (size_t)at, "; every other op (softmax, norms, reductions, "
                 "exp/log included) computes in f32; the codegen lines below say how "
                 "these compute\n");
    return 0;
}
