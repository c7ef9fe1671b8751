/* Helpers the graph rewrites share: use counts, use replacement, location
 * merging and new constants. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

void cv_pass_replace_uses(cv_func *f, const cv_value *from, cv_value *to)
{
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        for (int k = 0; k < op->n_operands; k++)
            if (op->operands[k] == from)
                cv_op_set_operand(op, k, to);
    }
    for (int i = 0; i < f->n_returns; i++)
        if (f->returns[i] == from)
            f->returns[i] = to;
}

int cv_pass_fwd_init(cv_pass_fwd *fw, const cv_func *f)
{
    fw->n = f->n_values;
    fw->to = calloc((size_t)f->n_values + 1, sizeof *fw->to);
    return fw->to ? 0 : -1;
}

void cv_pass_fwd_set(cv_pass_fwd *fw, const cv_value *from, cv_value *to)
{
    if (from->id >= 0 && from->id < fw->n)
        fw->to[from->id] = to;
}

static cv_value *forwarded(const cv_pass_fwd *fw, cv_value *v)
{
    return v->id >= 0 && v->id < fw->n && fw->to[v->id] ? fw->to[v->id] : v;
}

void cv_pass_fwd_op(const cv_pass_fwd *fw, cv_op *op)
{
    for (int k = 0; k < op->n_operands; k++)
        cv_op_set_operand(op, k, forwarded(fw, op->operands[k]));
}

void cv_pass_fwd_returns(const cv_pass_fwd *fw, cv_func *f)
{
    for (int i = 0; i < f->n_returns; i++)
        f->returns[i] = forwarded(fw, f->returns[i]);
}

void cv_pass_fwd_free(cv_pass_fwd *fw)
{
    free(fw->to);
    fw->to = NULL;
}

void cv_pass_merge_locs(cv_op *dst, const cv_op *src)
{
    /* Thousands of equal ops merged into one would make this quadratic;
     * past the cap, the first locations stand for the rest. */
    for (int i = 0; i < src->n_locs && dst->n_locs < CV_PASS_MAX_MERGED_LOCS; i++) {
        const cv_loc *l = &src->locs[i];
        bool seen = false;
        for (int k = 0; k < dst->n_locs && !seen; k++)
            seen = dst->locs[k].file == l->file && dst->locs[k].line == l->line &&
                   dst->locs[k].col == l->col;
        if (!seen && l->file)
            cv_op_add_loc(dst, l->file, l->line, l->col);
    }
}

int *cv_pass_count_uses(const cv_func *f)
{
    int *uses = calloc((size_t)f->n_values + 1, sizeof *uses);
    if (!uses)
        return NULL;
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++)
            uses[f->ops[i]->operands[k]->id]++;
    for (int i = 0; i < f->n_returns; i++)
        uses[f->returns[i]->id]++;
    return uses;
}

void cv_pass_move_last_op(cv_func *f, int at)
{
    cv_op *op = f->ops[f->n_ops - 1];
    memmove(&f->ops[at + 1], &f->ops[at], sizeof f->ops[0] * (size_t)(f->n_ops - 1 - at));
    f->ops[at] = op;
    for (int i = at; i < f->n_ops; i++)
        f->ops[i]->id = i;
}

cv_value *cv_pass_add_const(cv_func *f, const cv_tensor *t)
{
    cv_type ty = {.dtype = t->dtype, .shape = {.rank = t->rank}};
    for (int i = 0; i < t->rank; i++)
        ty.shape.d[i].n = t->dims[i];
    cv_param *p = cv_func_add_dense(f, cv_func_auto_name(f), &ty, t->data, cv_tensor_nbytes(t));
    return p && (p->data || !p->nbytes) ? p->value : NULL;
}
