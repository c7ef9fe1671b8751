/* The verifier's --strict rules: nothing unused, nothing bound twice, every
 * output computed from the inputs.  These are errors only under
 * CV_VERIFY_STRICT because a valid model may break them (an exporter often
 * leaves an unused value behind). */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/verify.h"

static bool sibling_used(const cv_value *v)
{
    for (int i = 0; i < v->def->n_results; i++)
        if (v->def->results[i]->n_uses)
            return true;
    return false;
}

/* CV2020: an input or an op result nobody reads.  For ops with several
 * results (split) reading some of them is normal, so only an op none of
 * whose results is read is reported, once. */
static void unused_values(cv_vstate *S)
{
    for (int i = 0; i < S->f->n_values; i++) {
        const cv_value *v = S->f->values[i];
        if (v->n_uses || v->kind == CV_VAL_PARAM || (v->kind == CV_VAL_RESULT && !v->def))
            continue;
        if (v->kind == CV_VAL_RESULT && (v->def_index > 0 || sibling_used(v)))
            continue;
        char path[256];
        cv_verify_value_path(S, v, path, sizeof path);
        if (v->kind == CV_VAL_INPUT)
            cv_verify_error(S, CV_E_UNUSED_VALUE, cv_verify_value_span(S, v), path,
                            "input %%%s is never used", v->name);
        else
            cv_verify_error(S, CV_E_UNUSED_VALUE, cv_verify_value_span(S, v), path,
                            "%%%s (%s) is never used", v->name, v->def->name);
    }
}

/* CV2021 */
static void dead_params(cv_vstate *S)
{
    for (int i = 0; i < S->f->n_params; i++) {
        const cv_param *p = S->f->params[i];
        if (p->value->n_uses)
            continue;
        char path[256];
        cv_verify_value_path(S, p->value, path, sizeof path);
        cv_verify_error(S, CV_E_DEAD_PARAM, p->span.line > 0 ? p->span : cv_verify_value_span(S, p->value),
                        path, "param %%%s is never used", p->value->name);
    }
}

static int by_tensor(const void *a, const void *b)
{
    const cv_param *p = *(cv_param *const *)a, *q = *(cv_param *const *)b;
    int c = strcmp(p->file, q->file);
    if (!c)
        c = strcmp(p->key, q->key);
    return c ? c : p->value->id - q->value->id;
}

/* CV2022: two params bound to one weights tensor (sorting keeps it n log n). */
static void shared_weights(cv_vstate *S)
{
    cv_func *f = S->f;
    cv_param **w = malloc((size_t)f->n_params * sizeof *w + 1);
    if (!w)
        return;
    int n = 0;
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i]->kind == CV_PARAM_WEIGHTS && f->params[i]->file && f->params[i]->key)
            w[n++] = f->params[i];
    qsort(w, (size_t)n, sizeof *w, by_tensor);
    for (int i = 1; i < n; i++) {
        if (strcmp(w[i]->file, w[i - 1]->file) || strcmp(w[i]->key, w[i - 1]->key))
            continue;
        char path[256];
        cv_verify_value_path(S, w[i]->value, path, sizeof path);
        cv_verify_error(S, CV_E_DUPLICATE_NAME, w[i]->span.line > 0 ? w[i]->span : cv_verify_value_span(S, w[i]->value),
                        path, "params %%%s and %%%s are both bound to \"%s\" in \"%s\"",
                        w[i - 1]->value->name, w[i]->value->name, w[i]->key, w[i]->file);
    }
    free(w);
}

/* CV2023: an output computed from params alone is a constant the model
 * should not recompute on every call (or a wiring mistake). */
static void constant_outputs(cv_vstate *S)
{
    cv_func *f = S->f;
    unsigned char *dep = calloc((size_t)f->n_values + 1, 1);
    if (!dep)
        return;
    for (int i = 0; i < f->n_values; i++) {
        const cv_value *v = f->values[i];
        /* Unknown provenance counts as input-derived: no noise after errors. */
        dep[i] = v->kind == CV_VAL_INPUT || (v->kind == CV_VAL_RESULT && !v->def);
    }
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        unsigned char any = 0;
        for (int k = 0; k < op->n_operands; k++) {
            const cv_value *v = op->operands[k];
            any |= !v || !cv_verify_owns(S, v) ||
                   (v->kind == CV_VAL_RESULT && v->def && v->def->id >= op->id) || dep[v->id];
        }
        for (int k = 0; k < op->n_results; k++)
            dep[op->results[k]->id] = any;
    }
    cv_span sp = f->ret_span.line > 0 ? f->ret_span : f->span;
    if (!sp.file)
        sp.file = S->m->path;
    char path[256];
    snprintf(path, sizeof path, "@%s>return", f->name);
    for (int i = 0; i < f->n_returns; i++) {
        const cv_value *v = f->returns[i];
        if (v && cv_verify_owns(S, v) && !dep[v->id] && !S->root[v->id])
            cv_verify_error(S, CV_E_CONSTANT_OUTPUT, sp, path, "output %d (%%%s) does not depend on any model "
                            "input", i, v->name);
    }
    free(dep);
}

void cv_verify_strict_func(cv_vstate *S)
{
    cv_func_count_uses(S->f);
    unused_values(S);
    dead_params(S);
    shared_weights(S);
    constant_outputs(S);
}

/* CV2022: two models of one module share a name. */
void cv_verify_strict_module(cv_module *m, cv_diag *d)
{
    for (int i = 1; i < m->n_funcs; i++)
        for (int j = 0; j < i; j++) {
            if (strcmp(m->funcs[i]->name, m->funcs[j]->name) != 0)
                continue;
            cv_span sp = m->funcs[i]->span;
            if (!sp.file)
                sp.file = m->path;
            int id = cv_diag_add(d, CV_SEV_ERROR, CV_E_DUPLICATE_NAME, sp, NULL, "model @%s is defined twice",
                                 m->funcs[i]->name);
            if (id)
                cv_diag_note(d, id, "first defined at line %d", m->funcs[j]->span.line);
            break;
        }
}
