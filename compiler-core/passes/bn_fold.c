/* Batch-norm folding.  In inference form batch_norm is a per-channel
 * affine map y = x*s + t with s = scale / sqrt(var + eps) and
 * t = bias - mean*s.  Following a conv2d (channel = output channel) or a
 * gemm (channel = output column), it folds into the producer's constants:
 *   conv2d: w'[oc,...] = w[oc,...]*s[oc],  b'[oc] = b[oc]*s[oc] + t[oc]
 *   gemm:   B'[.,n] = B[.,n]*s[n],  beta*C' = beta*C*s + t (C' dense, beta 1)
 * computed in double and stored as f32.  The batch_norm's uses move to the
 * producer, which keeps the batch_norm's locations; dce drops it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

static const float *const_f32(const cv_value *v)
{
    if (v->kind != CV_VAL_PARAM || !v->param || v->type.dtype != CV_F32 || !v->param->data)
        return NULL;
    int64_t n = cv_shape_numel(&v->type.shape);
    return n >= 0 && (size_t)n * sizeof(float) == v->param->nbytes ? v->param->data : NULL;
}

/* s and t of the batch_norm, per channel (n of them); false unless its
 * statistics are f32 params. */
static bool affine(const cv_op *bn, int64_t n, double *s, double *t)
{
    const float *p[4];
    for (int i = 0; i < 4; i++)
        if (!(p[i] = const_f32(bn->operands[i + 1])) ||
            cv_shape_numel(&bn->operands[i + 1]->type.shape) != n)
            return false;
    double eps = cv_op_float(bn, "epsilon", 1e-5);
    for (int64_t c = 0; c < n; c++) {
        s[c] = (double)p[0][c] / sqrt((double)p[3][c] + eps);
        t[c] = (double)p[1][c] - (double)p[2][c] * s[c];
    }
    return true;
}

static cv_value *new_f32(cv_func *f, int rank, const int64_t *dims, const float *data)
{
    cv_tensor t = {.dtype = CV_F32, .rank = rank, .numel = 1, .data = (void *)data};
    for (int i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        t.numel *= dims[i];
    }
    return cv_pass_add_const(f, &t);
}

/* Operands as a fresh array one longer (conv2d without bias gains one). */
static bool grow_operands(cv_op *op, int n)
{
    if (op->n_operands >= n)
        return true;
    cv_value **ops = cv_arena_alloc_array(&op->func->module->arena, (size_t)n, sizeof *ops);
    if (!ops)
        return false;
    memcpy(ops, op->operands, sizeof *ops * (size_t)op->n_operands);
    op->operands = ops;
    op->n_operands = n;
    return true;
}

static bool fold_conv(cv_func *f, cv_op *conv, const double *s, const double *t, int64_t oc)
{
    const cv_value *wv = conv->operands[1];
    const float *w = const_f32(wv), *b = NULL;
    if (!w || wv->type.shape.rank != 4 || wv->type.shape.d[0].n != oc)
        return false;
    if (conv->n_operands > 2 && !(b = const_f32(conv->operands[2])))
        return false;
    int64_t per = cv_shape_numel(&wv->type.shape) / (oc ? oc : 1), dims[4];
    float *nw = malloc(sizeof *nw * (size_t)(oc * per + 1)), *nb = malloc(sizeof *nb * (size_t)(oc + 1));
    bool ok = nw && nb;
    for (int64_t c = 0; ok && c < oc; c++) {
        for (int64_t q = 0; q < per; q++)
            nw[c * per + q] = (float)((double)w[c * per + q] * s[c]);
        nb[c] = (float)((b ? (double)b[c] : 0.0) * s[c] + t[c]);
    }
    for (int i = 0; i < 4; i++)
        dims[i] = wv->type.shape.d[i].n;
    cv_value *w2 = ok ? new_f32(f, 4, dims, nw) : NULL, *b2 = ok ? new_f32(f, 1, &oc, nb) : NULL;
    ok = w2 && b2 && grow_operands(conv, 3);
    if (ok) {
        cv_op_set_operand(conv, 1, w2);
        cv_op_set_operand(conv, 2, b2);
    }
    free(nw);
    free(nb);
    return ok;
}

/* gemm's C broadcast to [m, n] read at (i, j); shape [], [1], [n], [1,n] or [m,n]. */
static bool c_layout(const cv_value *c, int64_t m, int64_t n, int64_t *rs, int64_t *cs)
{
    const cv_shape *sh = &c->type.shape;
    int64_t last = sh->rank ? sh->d[sh->rank - 1].n : 1, first = sh->rank == 2 ? sh->d[0].n : 1;
    if (sh->rank > 2 || (last != 1 && last != n) || (first != 1 && first != m))
        return false;
    *cs = last == 1 ? 0 : 1;
    *rs = first == 1 ? 0 : last;
    return true;
}

static bool fold_gemm(cv_func *f, cv_op *g, const double *s, const double *t, int64_t n)
{
    const cv_value *bv = g->operands[1];
    const float *B = const_f32(bv), *C = NULL;
    const cv_shape *ys = &g->results[0]->type.shape;
    if (!B || bv->type.shape.rank != 2 || ys->d[0].sym)
        return false;
    int64_t m = ys->d[0].n, rs = 0, cs = 0, K = cv_shape_numel(&bv->type.shape) / (n ? n : 1);
    bool tb = cv_op_int(g, "trans_b", 0) != 0;
    if (g->n_operands > 2 && (!(C = const_f32(g->operands[2])) || !c_layout(g->operands[2], m, n, &rs, &cs)))
        return false;
    double beta = cv_op_float(g, "beta", 1.0);
    bool full = C && rs != 0;     /* C varies along rows: C' keeps [m, n] */
    int64_t cn = full ? m * n : n;
    float *nB = malloc(sizeof *nB * (size_t)(K * n + 1)), *nC = malloc(sizeof *nC * (size_t)(cn + 1));
    bool ok = nB && nC;
    for (int64_t k = 0; ok && k < K; k++)
        for (int64_t j = 0; j < n; j++) {
            int64_t at = tb ? j * K + k : k * n + j;
            nB[at] = (float)((double)B[at] * s[j]);
        }
    for (int64_t q = 0; ok && q < cn; q++) {
        int64_t i = full ? q / n : 0, j = full ? q % n : q;
        double c = C ? beta * (double)C[i * rs + j * cs] : 0.0;
        nC[q] = (float)(c * s[j] + t[j]);
    }
    int64_t cdims[2] = {m, n};
    cv_value *B2 = ok ? new_f32(f, 2, (int64_t[]){bv->type.shape.d[0].n, bv->type.shape.d[1].n}, nB) : NULL;
    cv_value *C2 = ok ? new_f32(f, full ? 2 : 1, full ? cdims : &n, nC) : NULL;
    ok = B2 && C2 && grow_operands(g, 3);
    if (ok) {
        cv_op_set_operand(g, 1, B2);
        cv_op_set_operand(g, 2, C2);
        cv_op_set_float(g, "beta", 1.0);
    }
    free(nB);
    free(nC);
    return ok;
}

static bool fold_one(cv_func *f, cv_op *bn, const int *uses)
{
    const cv_value *x = bn->operands[0];
    cv_op *p = x->kind == CV_VAL_RESULT ? x->def : NULL;
    if (!p || !p->def || uses[x->id] != 1 || p->n_results != 1 || x->type.dtype != CV_F32 ||
        x->type.shape.rank < 2 || x->type.shape.d[1].sym)
        return false;
    bool conv = cv_op_is(p, CV_OP_CONV2D), gemm = cv_op_is(p, CV_OP_GEMM);
    int64_t n = x->type.shape.d[1].n;
    if (!(conv || gemm) || n <= 0)
        return false;
    double *s = malloc(sizeof *s * (size_t)n), *t = malloc(sizeof *t * (size_t)n);
    bool ok = s && t && affine(bn, n, s, t) &&
              (conv ? fold_conv(f, p, s, t, n) : fold_gemm(f, p, s, t, n));
    free(s);
    free(t);
    if (ok) {
        cv_pass_replace_uses(f, bn->results[0], p->results[0]);
        cv_pass_merge_locs(p, bn);
    }
    return ok;
}

int cv_pass_bn_fold(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    int *uses = cv_pass_count_uses(f);
    if (!uses)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory folding batch norms");
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        if (op->def && cv_op_is(op, CV_OP_BATCH_NORM) && fold_one(f, op, uses))
            st->bn_folded++;
    }
    free(uses);
    return 0;
}
