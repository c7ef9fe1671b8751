/* -p int8 for fully connected layers and matrix products with constant
 * weights (gemm, matmul): each becomes the int8 1x1 convolution qconv2d,
 * so that it shares the convolutions' kernels (VNNI with a portable
 * fallback), calibration, SQNR report and requantisation.  A rank-2 x
 * [M, K] with M symbolic or 1 is M images of one pixel (x viewed as [M, K,
 * 1, 1]: no copy); with a static M > 1 one image of M pixels, transposed to
 * [1, K, M, 1] and back (the kernel fills its 32-pixel panels); a rank-3 x
 * [B, S, K] is B images of S pixels, [B, K, S, 1], when S is static, else
 * (qconv2d's pixels are static) flattened into B*S images of one pixel and
 * reshaped back to [B, S, N] after.  The weights become [N, K, 1, 1]
 * (symmetric per output channel), gemm's c (one value per column) the
 * bias.  The original op is rewritten in place into the last reshaping
 * op, so its result (perhaps a model output, by name) stays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/quantize.h"
#include "compiler-core/runtime/cvrt.h"

static bool static_f32_param(const cv_value *v, int rank)
{
    return v->kind == CV_VAL_PARAM && v->param->data && v->type.dtype == CV_F32 &&
           v->type.shape.rank == rank && cv_shape_is_static(&v->type.shape);
}

/* N (output columns) and K of op's weights. */
static void dims_nk(const cv_op *op, int64_t *n, int64_t *k)
{
    const cv_shape *b = &op->operands[1]->type.shape;
    bool tb = cv_op_is(op, CV_OP_GEMM) && cv_op_int(op, "trans_b", 0) != 0;
    *n = b->d[tb ? 0 : 1].n;
    *k = b->d[tb ? 1 : 0].n;
}

bool cv_qlin_candidate(const cv_op *op)
{
    bool gemm = cv_op_is(op, CV_OP_GEMM);
    if ((!gemm && !cv_op_is(op, CV_OP_MATMUL)) || op->n_operands < 2)
        return false;
    const cv_value *x = op->operands[0];
    const cv_shape *xs = &x->type.shape;
    if (x->type.dtype != CV_F32 || !static_f32_param(op->operands[1], 2) ||
        (xs->rank != 2 && !(xs->rank == 3 && !gemm)) || xs->d[xs->rank - 1].sym)
        return false;
    int64_t n, k;
    dims_nk(op, &n, &k);
    if (xs->d[xs->rank - 1].n != k || n < 1 || CVRT_QCONV_CP(k) > CVRT_QCONV_MAX_K)
        return false;
    if (!gemm)
        return true;
    const cv_value *c = op->n_operands > 2 ? op->operands[2] : NULL;
    return cv_op_int(op, "trans_a", 0) == 0 && cv_op_float(op, "alpha", 1) == 1 &&
           (!c || (c->kind == CV_VAL_PARAM && c->param->data && c->type.dtype == CV_F32 &&
                   cv_shape_numel(&c->type.shape) == n && c->type.shape.rank <= 2 &&
                   c->type.shape.d[c->type.shape.rank - 1].n == n &&
                   cv_op_float(op, "beta", 1) == 1));
}

double cv_qlin_macs(const cv_op *op)
{
    const cv_shape *xs = &op->operands[0]->type.shape;
    int64_t n, k;
    dims_nk(op, &n, &k);
    const cv_dim *rows = &xs->d[xs->rank - 2];
    return (rows->sym ? 1 : (double)rows->n) * (double)n * (double)k;
}

/* How x is viewed as images: transposed by perm (NULL: not) then
 * unsqueezed at axes, the result squeezed at the same axes and transposed
 * back. */
typedef struct view {
    const int64_t *perm, *axes;
    int rank, n_axes;
    bool flat;                  /* rank 3, S symbolic: flattened to [B*S, K] and back */
} view;

static view view_of(const cv_op *op)
{
    static const int64_t p2[2] = {1, 0}, p3[3] = {0, 2, 1}, a03[2] = {0, 3}, a23[2] = {2, 3},
                         a3[1] = {3};
    const cv_shape *xs = &op->operands[0]->type.shape;
    if (xs->rank == 3 && xs->d[1].sym)
        return (view){NULL, a23, 2, 2, true};
    if (xs->rank == 3)
        return (view){p3, a3, 3, 1, false};
    if (xs->d[0].sym || xs->d[0].n == 1)
        return (view){NULL, a23, 2, 2, false};
    return (view){p2, a03, 2, 2, false};
}

/* The weights as an f32 [N, K, 1, 1] constant (what cv_qweights quantizes). */
static cv_value *weights_nk11(cv_func *f, const cv_op *op)
{
    int64_t n, k;
    dims_nk(op, &n, &k);
    bool tb = cv_op_is(op, CV_OP_GEMM) && cv_op_int(op, "trans_b", 0) != 0;
    int64_t dims[4] = {n, k, 1, 1};
    cv_tensor t;
    if (cv_tensor_alloc(&t, CV_F32, 4, dims))
        return NULL;
    const float *b = op->operands[1]->param->data;
    float *w = t.data;
    for (int64_t i = 0; i < n; i++)
        for (int64_t q = 0; q < k; q++)
            w[i * k + q] = tb ? b[i * k + q] : b[q * n + i];
    cv_value *v = cv_pass_add_const(f, &t);
    cv_tensor_free(&t);
    return v;
}

/* gemm's c as a [N] constant (NULL: none; *oom on failure). */
static cv_value *bias_n(cv_func *f, const cv_op *op, bool *oom)
{
    const cv_value *c = cv_op_is(op, CV_OP_GEMM) && op->n_operands > 2
                            ? op->operands[2] : NULL;
    if (!c)
        return NULL;
    if (c->type.shape.rank == 1)
        return (cv_value *)c;
    int64_t n = cv_shape_numel(&c->type.shape);
    cv_tensor t;
    if (cv_tensor_alloc(&t, CV_F32, 1, &n))
        return *oom = true, NULL;
    memcpy(t.data, c->param->data, (size_t)n * sizeof(float));
    cv_value *v = cv_pass_add_const(f, &t);
    cv_tensor_free(&t);
    *oom = !v;
    return v;
}

/* A one-operand reshaping op on x (appended to f), with `name`'s ints. */
static cv_value *reshaping(cv_func *f, const cv_op *src, const char *opname, cv_value *x,
                           const char *attr, const int64_t *v, int n, cv_diag *d)
{
    cv_op *op = cv_op_new(f, opname, &x, 1);
    cv_op_set_ints(op, attr, v, n);
    cv_pass_merge_locs(op, src);
    return cv_op_finish(op, 1, d) ? NULL : op->results[0];
}

/* Moves the last n ops of f, in order, to index at. */
static void move_tail(cv_func *f, int n, int at)
{
    cv_op *tail[8];
    memcpy(tail, &f->ops[f->n_ops - n], (size_t)n * sizeof *tail);
    memmove(&f->ops[at + n], &f->ops[at], (size_t)(f->n_ops - n - at) * sizeof *f->ops);
    memcpy(&f->ops[at], tail, (size_t)n * sizeof *tail);
    for (int i = at; i < f->n_ops; i++)
        f->ops[i]->id = i;
}

int cv_qlin_rewrite(cv_func *f, cv_op *op, double x_scale, int64_t x_zp, cv_op **qop,
                    cv_diag *d)
{
    view v = view_of(op);
    bool oom = false;
    int at = op->id, before = f->n_ops;
    cv_value *wf = weights_nk11(f, op), *wq = NULL, *ws = NULL, *b = bias_n(f, op, &oom);
    if (!wf || oom || cv_qweights(f, wf, &wq, &ws))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory quantizing weights");
    cv_value *x = op->operands[0];
    if (v.flat) {
        cv_op *fl = cv_op_new(f, "flatten", &x, 1);
        cv_op_set_int(fl, "axis", 2);
        cv_pass_merge_locs(fl, op);
        x = cv_op_finish(fl, 1, d) ? NULL : fl->results[0];
    }
    if (x && v.perm)
        x = reshaping(f, op, "transpose", x, "perm", v.perm, v.rank, d);
    x = x ? reshaping(f, op, "unsqueeze", x, "axes", v.axes, v.n_axes, d) : NULL;
    if (!x)
        return -1;
    cv_value *qin[4] = {x, wq, ws, b};
    cv_op *q = cv_op_new(f, "qconv2d", qin, b ? 4 : 3);
    cv_op_set_float(q, "x_scale", x_scale);
    cv_op_set_int(q, "x_zp", x_zp);
    cv_pass_merge_locs(q, op);
    if (cv_op_finish(q, 1, d))
        return -1;
    cv_value *y = q->results[0];
    if ((v.perm || v.flat) && !(y = reshaping(f, op, "squeeze", y, "axes", v.axes, v.n_axes, d)))
        return -1;
    move_tail(f, f->n_ops - before, at);
    /* op itself becomes the last step, keeping its result. */
    cv_value **one = cv_arena_alloc_array(&f->module->arena, 1, sizeof *one);
    if (!one)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory");
    one[0] = y;
    op->operands = one;
    op->n_operands = 1;
    op->attrs = NULL;
    op->n_attrs = 0;
    op->def = cv_op_def_lookup(v.flat ? "reshape" : v.perm ? "transpose" : "squeeze");
    op->name = op->def->name;
    if (v.flat)
        cv_op_set_dims(op, "shape", op->results[0]->type.shape.d, 3);
    else if (v.perm)
        cv_op_set_ints(op, "perm", v.perm, v.rank);
    else
        cv_op_set_ints(op, "axes", v.axes, v.n_axes);
    *qop = q;
    return 0;
}
