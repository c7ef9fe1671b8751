/* Fusion planning: which elementwise ops can run inside the kernel of the
 * op that produces their input, so the intermediate tensor is never
 * written.  An elementwise op E joins the chain after op X when:
 *   - X's only result feeds E alone (one use, not returned);
 *   - E's result has the shape of that input (the running value is not
 *     broadcast), so E computes one element per element of X;
 *   - every other operand of E exists before the chain's first op runs.
 * The plan only proposes: the producer's codegen hook takes the chain (an
 * elementwise producer always can; conv/gemm/matmul when the chain maps to
 * their runtime epilogue) or leaves the ops to be lowered on their own. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

/* Op index defining v, or -1 for inputs and params. */
static int def_index(const cv_value *v)
{
    return v->kind == CV_VAL_RESULT && v->def ? v->def->id : -1;
}

static bool joins(const cv_op *x, const cv_op *e, int first, const int *uses, int *link)
{
    if (x->n_results != 1 || e->n_results != 1 || !e->def ||
        !(e->def->flags & CV_OPF_ELEMENTWISE))
        return false;
    const cv_value *r = x->results[0];
    if (uses[r->id] != 1 || !cv_shape_equal(&r->type.shape, &e->results[0]->type.shape))
        return false;
    *link = -1;
    for (int j = 0; j < e->n_operands; j++) {
        const cv_value *o = e->operands[j];
        if (o == r)
            *link = j;
        else if (def_index(o) >= first)
            return false;
    }
    return *link >= 0;
}

int cv_fusion_plan(const cv_func *f, int *next, int *link)
{
    int *uses = calloc((size_t)f->n_values + 1, sizeof *uses);
    int *user = calloc((size_t)f->n_values + 1, sizeof *user);
    if (!uses || !user) {
        free(uses);
        free(user);
        return -1;
    }
    for (int i = 0; i < f->n_ops; i++) {
        next[i] = link[i] = -1;
        for (int k = 0; k < f->ops[i]->n_operands; k++) {
            uses[f->ops[i]->operands[k]->id]++;
            user[f->ops[i]->operands[k]->id] = i;
        }
    }
    for (int i = 0; i < f->n_returns; i++)
        uses[f->returns[i]->id] += 2;     /* a returned value is materialised */
    /* Chains grow from each op; an op already inside a chain extends it
     * from the chain's first op (whose index bounds the other operands). */
    int *first = calloc((size_t)f->n_ops + 1, sizeof *first);
    int *len = calloc((size_t)f->n_ops + 1, sizeof *len);     /* ops chained after first[i] */
    for (int i = 0; first && i < f->n_ops; i++)
        first[i] = i;
    for (int i = 0; first && len && i < f->n_ops; i++) {
        const cv_op *x = f->ops[i];
        if (x->n_results != 1 || uses[x->results[0]->id] != 1 || len[first[i]] >= CV_FUSION_MAX)
            continue;
        int e = user[x->results[0]->id], l;
        if (e > i && joins(x, f->ops[e], first[i], uses, &l)) {
            next[i] = e;
            link[i] = l;
            first[e] = first[i];
            len[first[i]]++;
        }
    }
    free(first);
    free(len);
    free(uses);
    free(user);
    return 0;
}
