/* QDQ import: a conv2d whose input is dequantize_linear(quantize_linear(x))
 * with one constant scale and zero point, and whose weights are
 * dequantize_linear of constant int8 weights with symmetric per-tensor or
 * per-output-channel scales (what ONNX Runtime's quantizer and QAT exports
 * write), becomes the int8 qconv2d the -p int8 pass makes: the same values
 * (the kernel quantizes x with that scale and zero point), with exact int32
 * sums.  It runs before constant folding, which would otherwise turn the
 * weights' dequantize_linear into f32 constants.  The Q/DQ ops left without
 * users go with dead-code elimination.  Then the following relu/residual
 * add and the requantisation for the next int8 layer move into the
 * kernels (quantize_requant.c; the QDQ graph's values exactly, the
 * residuals kept f32 as the graph adds them). */
#include <string.h>

#include "compiler-core/passes/quantize.h"
#include "compiler-core/runtime/cvrt.h"

static const cv_op *def_named(const cv_value *v, const char *name)
{
    return v && v->kind == CV_VAL_RESULT && v->def && v->def->def &&
                   strcmp(v->def->def->name, name) == 0
               ? v->def
               : NULL;
}

static bool const_data(const cv_value *v)
{
    return v && v->kind == CV_VAL_PARAM && v->param->data && cv_shape_is_static(&v->type.shape);
}

static double scalar_of(const cv_value *v)
{
    cv_tensor t = {.dtype = v->type.dtype, .numel = 1, .data = v->param->data};
    return cv_tensor_get(&t, 0);
}

/* x's quantize/dequantize pair: its scale and u8 zero point. */
static bool activation_qdq(const cv_value *xd, const cv_value **x, double *scale, int64_t *zp)
{
    const cv_op *dq = def_named(xd, "dequantize_linear");
    const cv_op *q = dq ? def_named(dq->operands[0], "quantize_linear") : NULL;
    if (!q || q->n_operands != dq->n_operands)
        return false;
    for (int i = 1; i < q->n_operands; i++)
        if (!const_data(q->operands[i]) || cv_shape_numel(&q->operands[i]->type.shape) != 1 ||
            scalar_of(q->operands[i]) != scalar_of(dq->operands[i]) ||
            !const_data(dq->operands[i]))
            return false;
    *x = q->operands[0];
    *scale = scalar_of(q->operands[1]);
    bool i8 = q->n_operands > 2 && q->operands[2]->type.dtype == CV_I8;
    *zp = (q->n_operands > 2 ? (int64_t)scalar_of(q->operands[2]) : 0) + (i8 ? 128 : 0);
    return (*x)->type.dtype == CV_F32 && *scale > 0;
}

/* The weights' dequantize_linear: int8 data, zero zero points, per-tensor
 * or per-output-channel scales; *ws gets one scale per channel. */
static bool weight_dq(cv_func *f, const cv_value *wd, cv_value **wq, cv_value **ws)
{
    const cv_op *dq = def_named(wd, "dequantize_linear");
    if (!dq || !const_data(dq->operands[0]) || dq->operands[0]->type.dtype != CV_I8 ||
        !const_data(dq->operands[1]))
        return false;
    const cv_value *s = dq->operands[1];
    int64_t m = wd->type.shape.d[0].n, ns = cv_shape_numel(&s->type.shape);
    if ((ns != 1 && (ns != m || cv_op_int(dq, "axis", 1) != 0)) || s->type.dtype != CV_F32)
        return false;
    if (dq->n_operands > 2) {
        const cv_value *z = dq->operands[2];
        cv_tensor t = {.dtype = z->type.dtype, .numel = cv_shape_numel(&z->type.shape),
                       .data = z->param->data};
        if (!const_data(z))
            return false;
        for (int64_t i = 0; i < t.numel; i++)
            if (cv_tensor_get_i64(&t, i) != 0)
                return false;
    }
    cv_tensor sc;
    if (cv_tensor_alloc(&sc, CV_F32, 1, &m))
        return false;
    for (int64_t i = 0; i < m; i++)
        ((float *)sc.data)[i] = ((const float *)s->param->data)[ns == 1 ? 0 : i];
    *ws = cv_pass_add_const(f, &sc);
    cv_tensor_free(&sc);
    *wq = dq->operands[0];
    return *ws != NULL;
}

static bool fits(const cv_op *op, const cv_value *x, const cv_value *w)
{
    const cv_shape *xs = &x->type.shape, *wsh = &w->type.shape;
    if (cv_op_int(op, "groups", 1) != 1 || wsh->rank != 4 || xs->rank != 4)
        return false;
    for (int i = 1; i < 4; i++)
        if (xs->d[i].sym || wsh->d[i].sym)
            return false;
    return wsh->d[2].n * wsh->d[3].n * CVRT_QCONV_CP(wsh->d[1].n) <= CVRT_QCONV_MAX_K;
}

int cv_pass_qdq(cv_func *f, int *fused, cv_diag *d)
{
    *fused = 0;
    const cv_op_def *qdef = cv_op_def_lookup("qconv2d");
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        const cv_value *x;
        cv_value *wq, *ws;
        double scale;
        int64_t zp;
        if (!op->def || !cv_op_is(op, CV_OP_CONV2D) ||
            !activation_qdq(op->operands[0], &x, &scale, &zp) ||
            !fits(op, op->operands[0], op->operands[1]) || zp < 0 || zp > 255 ||
            !weight_dq(f, op->operands[1], &wq, &ws))
            continue;
        cv_value **ops = cv_arena_alloc_array(&f->module->arena, 4, sizeof *ops);
        if (!ops)
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory fusing QDQ");
        ops[0] = (cv_value *)x;
        ops[1] = wq;
        ops[2] = ws;
        if (op->n_operands > 2)
            ops[3] = op->operands[2];
        op->operands = ops;
        op->n_operands++;
        op->def = qdef;
        op->name = qdef->name;
        cv_op_set_float(op, "x_scale", scale);
        cv_op_set_int(op, "x_zp", zp);
        (*fused)++;
    }
    cv_qrequant_stats st;
    return *fused ? cv_quantize_requant(f, false, &st, d) : 0;
}
