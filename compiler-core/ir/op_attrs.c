/* Attribute look-ups with defaults, used by shape functions and kernels. */
#include <string.h>

#include "compiler-core/ir/ir.h"

const cv_attr *cv_op_attr(const cv_op *op, const char *name)
{
    for (int i = 0; i < op->n_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0)
            return &op->attrs[i];
    return NULL;
}

int64_t cv_op_int(const cv_op *op, const char *name, int64_t dflt)
{
    const cv_attr *a = cv_op_attr(op, name);
    return (a && a->kind == CV_ATTR_INT) ? a->i : dflt;
}

double cv_op_float(const cv_op *op, const char *name, double dflt)
{
    const cv_attr *a = cv_op_attr(op, name);
    if (a && a->kind == CV_ATTR_FLOAT)
        return a->f;
    if (a && a->kind == CV_ATTR_INT)
        return (double)a->i;
    return dflt;
}

const char *cv_op_string(const cv_op *op, const char *name, const char *dflt)
{
    const cv_attr *a = cv_op_attr(op, name);
    return (a && a->kind == CV_ATTR_STRING) ? a->s : dflt;
}

int cv_op_ints(const cv_op *op, const char *name, int64_t *out, int max)
{
    const cv_attr *a = cv_op_attr(op, name);
    if (!a)
        return -1;
    if (a->kind == CV_ATTR_INT) {
        if (max > 0)
            out[0] = a->i;
        return 1;
    }
    if (a->kind != CV_ATTR_INTS)
        return -1;
    for (int i = 0; i < a->n && i < max; i++)
        out[i] = a->ints[i];
    return a->n;
}

int cv_op_dims(const cv_op *op, const char *name, cv_dim *out, int max)
{
    const cv_attr *a = cv_op_attr(op, name);
    if (!a || (a->kind != CV_ATTR_INTS && a->kind != CV_ATTR_DIMS))
        return -1;
    for (int i = 0; i < a->n && i < max; i++)
        out[i] = a->kind == CV_ATTR_DIMS ? a->dims[i] : (cv_dim){a->ints[i], NULL};
    return a->n;
}

void cv_func_count_uses(cv_func *f)
{
    for (int i = 0; i < f->n_values; i++)
        f->values[i]->n_uses = 0;
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++)
            if (f->ops[i]->operands[k])
                f->ops[i]->operands[k]->n_uses++;
    for (int i = 0; i < f->n_returns; i++)
        if (f->returns[i])
            f->returns[i]->n_uses++;
}
