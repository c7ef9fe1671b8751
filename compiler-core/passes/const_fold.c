/* Constant folding: an op whose operands are all params is evaluated now,
 * with its reference kernel (the interpreter's), and its results become
 * params.  Folding runs in program order, so chains of constant ops fold
 * one after another.  The folded ops lose their uses; dce drops them. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

enum {
    MAX_IO = 16,
    /* A result may be this much larger than the op's inputs before folding
     * stops paying (expand, tile: the artifact would carry the big copy). */
    GROWTH = 4,
    GROWTH_FREE_BYTES = 64 * 1024,
};

static void as_tensor(const cv_value *v, cv_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = v->type.dtype;
    t->rank = v->type.shape.rank;
    t->numel = 1;
    for (int i = 0; i < t->rank; i++) {
        t->dims[i] = v->type.shape.d[i].n;
        t->numel *= t->dims[i];
    }
    t->data = v->param ? v->param->data : NULL;
}

static int64_t value_bytes(const cv_value *v)
{
    int64_t n = cv_shape_numel(&v->type.shape);
    return n < 0 ? -1 : n * (int64_t)cv_dtype_size(v->type.dtype);
}

/* Whether op can and should be folded. */
static bool foldable(const cv_op *op)
{
    if (!op->def || !op->def->eval || op->n_results < 1 || op->n_results > MAX_IO ||
        op->n_operands > MAX_IO)
        return false;
    int64_t in = 0, out = 0;
    for (int k = 0; k < op->n_operands; k++) {
        const cv_value *v = op->operands[k];
        if (v->kind != CV_VAL_PARAM || !v->param || (!v->param->data && v->param->nbytes) ||
            value_bytes(v) < 0 || (size_t)value_bytes(v) != v->param->nbytes)
            return false;
        in += value_bytes(v);
    }
    for (int r = 0; r < op->n_results; r++) {
        int64_t b = value_bytes(op->results[r]);
        if (b < 0 || !cv_type_known(&op->results[r]->type))
            return false;
        out += b;
    }
    return op->n_operands == 0 || out <= GROWTH * in + GROWTH_FREE_BYTES;
}

/* Evaluates op; on success its results' uses move to new params. */
static int fold(cv_func *f, cv_op *op, cv_pass_fwd *fwd, cv_diag *d)
{
    cv_tensor ins[MAX_IO], outs[MAX_IO];
    const cv_tensor *in_ptrs[MAX_IO];
    int made = 0, rc = 0;
    for (int k = 0; k < op->n_operands; k++) {
        as_tensor(op->operands[k], &ins[k]);
        in_ptrs[k] = &ins[k];
    }
    for (; made < op->n_results; made++) {
        cv_tensor shape;
        as_tensor(op->results[made], &shape);
        if (cv_tensor_alloc(&outs[made], shape.dtype, shape.rank, shape.dims)) {
            rc = -1;
            break;
        }
    }
    cv_arena scratch;
    cv_arena_init(&scratch);
    /* A kernel that fails (an index out of range...) leaves the op to fail
     * at run time exactly as the interpreter would: no diagnostic here. */
    cv_diag quiet;
    cv_diag_init(&quiet);
    cv_eval_ctx ec = {.op = op, .in = in_ptrs, .n_in = op->n_operands, .out = outs,
                      .n_out = op->n_results, .scratch = &scratch, .diag = &quiet};
    if (rc == 0)
        rc = op->def->eval(&ec) ? 1 : 0;
    cv_diag_free(&quiet);
    cv_arena_free(&scratch);
    for (int r = 0; rc == 0 && r < op->n_results; r++) {
        cv_value *c = cv_pass_add_const(f, &outs[r]);
        if (!c) {
            rc = -1;
            break;
        }
        cv_pass_fwd_set(fwd, op->results[r], c);
    }
    for (int r = 0; r < made; r++)
        cv_tensor_free(&outs[r]);
    if (rc < 0)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, cv_op_span(op), "%s: out of memory folding constants", op->name);
    return rc;
}

int cv_pass_const_fold(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    int *uses = cv_pass_count_uses(f);
    cv_pass_fwd fwd;   /* folded results -> their constants */
    if (cv_pass_fwd_init(&fwd, f) || !uses) {
        free(uses);
        cv_pass_fwd_free(&fwd);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory folding constants");
    }
    int rc = 0;
    for (int i = 0; i < f->n_ops && rc == 0; i++) {
        cv_op *op = f->ops[i];
        cv_pass_fwd_op(&fwd, op);
        bool used = false;
        for (int r = 0; r < op->n_results; r++)
            used |= uses[op->results[r]->id] > 0;
        if (!used || !foldable(op))
            continue;
        int got = fold(f, op, &fwd, d);
        if (got < 0)
            rc = -1;
        else if (got == 0)
            st->folded++;
    }
    /* After a failure too: the walk stopped, the rest of f must still see
     * the constants that replaced what was folded so far. */
    for (int i = 0; i < f->n_ops; i++)
        cv_pass_fwd_op(&fwd, f->ops[i]);
    cv_pass_fwd_returns(&fwd, f);
    cv_pass_fwd_free(&fwd);
    free(uses);
    return rc;
}
