/* Dead-code elimination: liveness flows back from the returns; an op is
 * live when one of its results is, a param when a live op or a return
 * reads it.  Dead ops and params leave the function's lists (their values
 * stay allocated in the module arena, unreferenced); op ids are renumbered
 * to stay the index in ops[]. */
#include <stdlib.h>

#include "compiler-core/passes/passes.h"

int cv_pass_dce(cv_func *f, cv_pass_stats *st)
{
    bool *live = calloc((size_t)f->n_values + 1, sizeof *live);
    bool *keep = calloc((size_t)f->n_ops + 1, sizeof *keep);
    if (!live || !keep) {
        free(live);
        free(keep);
        return -1;
    }
    for (int i = 0; i < f->n_returns; i++)
        live[f->returns[i]->id] = true;
    for (int i = f->n_ops - 1; i >= 0; i--) {
        const cv_op *op = f->ops[i];
        for (int r = 0; r < op->n_results && !keep[i]; r++)
            keep[i] = live[op->results[r]->id];
        for (int k = 0; keep[i] && k < op->n_operands; k++)
            live[op->operands[k]->id] = true;
    }
    int n = 0;
    for (int i = 0; i < f->n_ops; i++) {
        if (!keep[i])
            continue;
        f->ops[n] = f->ops[i];
        f->ops[n]->id = n;
        n++;
    }
    st->dead_ops += f->n_ops - n;
    f->n_ops = n;
    n = 0;
    for (int i = 0; i < f->n_params; i++)
        if (live[f->params[i]->value->id])
            f->params[n++] = f->params[i];
    st->dead_params += f->n_params - n;
    f->n_params = n;
    free(live);
    free(keep);
    return 0;
}
