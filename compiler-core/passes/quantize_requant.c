/* Requantization fused into the producing int8 kernel.  After the int8
 * rewrite (or QDQ import) each qconv2d:
 *   1. takes in the residual add and the relu/clip that follow it (when it
 *      is their only producer still to run), as its epilogue: the int8
 *      layer's value is then the block's value;
 *   2. writes u8 rather than f32 when every use of its result is an int8
 *      layer's input (all with the same scale and zero point, the one the
 *      calibration gave that value) or, for -p int8, an int8 layer's
 *      residual: the output is requantised in the kernel, the next layer
 *      reads bytes, and consecutive int8 layers never go through f32.
 * For QDQ import residuals stay f32: the QDQ graph adds them unquantised. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/quantize.h"

static bool is_q(const cv_op *op)
{
    return op->def && cv_op_is(op, CV_OP_QCONV2D);
}

static bool named(const cv_op *op, const char *name)
{
    return op->def && strcmp(op->def->name, name) == 0;
}

/* The only op using v (NULL when v is returned or used more than once). */
static cv_op *sole_user(const cv_func *f, const int *uses, const cv_value *v)
{
    if (uses[v->id] != 1)
        return NULL;
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++)
            if (f->ops[i]->operands[k] == v)
                return f->ops[i];
    return NULL;
}

static bool is_act(const cv_op *u)
{
    return u && (named(u, "relu") || (named(u, "clip") && u->n_operands == 1));
}

/* The one-operand ops that only move elements, as quantize_lin.c's views. */
static bool is_view(const cv_op *u)
{
    return u && u->n_operands == 1 && (named(u, "squeeze") || named(u, "transpose"));
}

static int def_id(const cv_value *v)
{
    return v->kind == CV_VAL_RESULT && v->def ? v->def->id : -1;
}

void cv_qchain_find(const cv_func *f, const int *uses, const cv_op *op, cv_qchain *ch)
{
    memset(ch, 0, sizeof *ch);
    const cv_value *r = op->results[0];
    ch->end = op->results[0];
    if (op->n_operands > 4)
        return;
    cv_op *u = sole_user(f, uses, r);
    if (u && named(u, "add") && u->n_operands == 2 && op->n_operands < 5 &&
        cv_shape_equal(&u->results[0]->type.shape, &r->type.shape)) {
        int k = u->operands[0] == r ? 1 : 0;
        const cv_value *o = u->operands[k];
        if (o != r && o->type.dtype == CV_F32 && cv_shape_equal(&o->type.shape, &r->type.shape) &&
            def_id(o) < op->id) {
            ch->add = u;
            ch->res = u->operands[k];
            ch->end = u->results[0];
            u = sole_user(f, uses, ch->end);
        } else {
            u = NULL;
        }
    }
    if (is_act(u) && cv_op_int(op, "act", 0) == 0) {
        ch->act = u;
        ch->end = u->results[0];
        return;
    }
    /* An int8 gemm/matmul: the activation commutes with the views. */
    cv_op *view = NULL;
    for (int n = 0; n < 2 && !ch->add && is_view(u); n++) {
        view = u;
        u = sole_user(f, uses, u->results[0]);
    }
    if (view && is_act(u) && cv_op_int(op, "act", 0) == 0) {
        ch->act = u;
        ch->view = view;
        ch->end = u->results[0];
    }
}

cv_value *cv_qlin_end(const cv_func *f, const int *uses, const cv_op *op)
{
    cv_op *u = sole_user(f, uses, op->results[0]);
    return is_act(u) ? u->results[0] : op->results[0];
}

/* Makes op's operands x, w, w_scale, bias, res (a zero bias when it had none). */
static int add_residual(cv_func *f, cv_op *op, cv_value *res)
{
    cv_value **ops = cv_arena_alloc_array(&f->module->arena, 5, sizeof *ops);
    if (!ops)
        return -1;
    memcpy(ops, op->operands, (size_t)op->n_operands * sizeof *ops);
    if (op->n_operands == 3) {
        int64_t m = op->operands[1]->type.shape.d[0].n;
        cv_tensor z;
        if (cv_tensor_alloc(&z, CV_F32, 1, &m))
            return -1;
        ops[3] = cv_pass_add_const(f, &z);
        cv_tensor_free(&z);
        if (!ops[3])
            return -1;
    }
    ops[4] = res;
    op->operands = ops;
    op->n_operands = 5;
    return 0;
}

static int fold(cv_func *f, cv_op *op, const int *uses, cv_qchain *ch)
{
    cv_qchain_find(f, uses, op, ch);
    if (ch->add && add_residual(f, op, ch->res))
        return -1;
    if (ch->act && named(ch->act, "relu")) {
        cv_op_set_int(op, "act", 1);
    } else if (ch->act) {
        cv_op_set_int(op, "act", 2);
        cv_op_set_float(op, "act_lo", cv_op_float(ch->act, "min", -INFINITY));
        cv_op_set_float(op, "act_hi", cv_op_float(ch->act, "max", INFINITY));
    }
    if (ch->end != op->results[0]) {
        cv_pass_merge_locs(op, ch->add ? ch->add : ch->act);
        if (ch->add && ch->act)
            cv_pass_merge_locs(op, ch->act);
        cv_pass_replace_uses(f, ch->end, ch->view ? ch->view->results[0] : op->results[0]);
    }
    return 0;
}

/* Whether every use of op's result can read u8, and with which scale. */
static bool u8_uses(const cv_func *f, const cv_op *op, bool u8_res, double *scale, int64_t *zp)
{
    const cv_value *r = op->results[0];
    int inputs = 0;
    for (int i = 0; i < f->n_returns; i++)
        if (f->returns[i] == r)
            return false;
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++) {
            const cv_op *u = f->ops[i];
            if (u->operands[k] != r)
                continue;
            if (!is_q(u) || (k != 0 && !(k == 4 && u8_res)))
                return false;
            if (k != 0)
                continue;
            double s = cv_op_float(u, "x_scale", 0);
            int64_t z = cv_op_int(u, "x_zp", 0);
            if (inputs++ && (s != *scale || z != *zp))
                return false;
            *scale = s;
            *zp = z;
        }
    return inputs > 0;
}

int cv_quantize_requant(cv_func *f, bool u8_res, cv_qrequant_stats *st, cv_diag *d)
{
    memset(st, 0, sizeof *st);
    cv_pass_stats ps = {0};
    if (cv_pass_dce(f, &ps))    /* dead Q/DQ ops would count as users */
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory removing dead code");
    for (int i = 0; i < f->n_ops; i++) {
        if (!is_q(f->ops[i]))
            continue;
        int *uses = cv_pass_count_uses(f);
        cv_qchain ch;
        int rc = uses ? fold(f, f->ops[i], uses, &ch) : -1;
        free(uses);
        if (rc)
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory fusing int8 epilogues");
        st->adds += ch.add != NULL;
        st->acts += ch.act != NULL;
        st->layers++;
    }
    if (cv_pass_dce(f, &ps))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory removing dead code");
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        double s = 0;
        int64_t z = 0;
        if (!is_q(op) || op->results[0]->type.dtype != CV_F32 || !u8_uses(f, op, u8_res, &s, &z))
            continue;
        cv_op_set_float(op, "y_scale", s);
        cv_op_set_int(op, "y_zp", z);
        op->results[0]->type.dtype = CV_U8;
        st->u8_out++;
        for (int j = i + 1; j < f->n_ops; j++)
            if (is_q(f->ops[j]) && f->ops[j]->n_operands > 4 &&
                f->ops[j]->operands[4] == op->results[0]) {
                cv_op_set_float(f->ops[j], "res_scale", s);
                cv_op_set_int(f->ops[j], "res_zp", z);
                st->u8_res++;
            }
    }
    for (int i = 0; i < f->n_ops; i++)
        st->u8_in += is_q(f->ops[i]) && f->ops[i]->operands[0]->type.dtype == CV_U8;
    return 0;
}
