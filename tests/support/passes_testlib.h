/* Shared by the graph-pass tests: a model is parsed twice from CU-IR text,
 * one copy is rewritten by the pass under test, and both run in the
 * reference interpreter on the same random inputs; the rewritten model must
 * give the original's results (bit for bit, or within a tolerance for
 * rewrites that reassociate arithmetic). */
#ifndef CV_TEST_PASSES_UTIL_H
#define CV_TEST_PASSES_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"
#include "compiler-core/passes/passes.h"
#include "tests/support/numpyref.h"

#define PT_FN static __attribute__((unused))
enum { PT_MAX_IO = 8, PT_SYM = 3 };

typedef int (*pt_pass_fn)(cv_func *f, cv_pass_stats *st, cv_diag *d);

PT_FN cv_module *pt_parse(const char *text)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), "pass.cuir", &d);
    if (!m || cv_verify(m, 0, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("test model does not verify:\n%s", text);
    }
    cv_diag_free(&d);
    return m;
}

/* Runs f on inputs made from seed (symbolic dims = PT_SYM). */
PT_FN void pt_run(const cv_func *f, uint64_t seed, cv_tensor *outs)
{
    cv_tensor ins[PT_MAX_IO];
    assert_true(f->n_inputs <= PT_MAX_IO && f->n_returns <= PT_MAX_IO);
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].sym ? PT_SYM : t->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims), 0);
        cv_npref_fill(&ins[i], seed + (uint64_t)i, -2, 2);
    }
    cv_diag d;
    cv_diag_init(&d);
    if (cv_interp_run(f, ins, f->n_inputs, outs, &d)) {
        cv_diag_print(&d, stderr, false);
        fail_msg("the interpreter fails on @%s", f->name);
    }
    cv_diag_free(&d);
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
}

/* Verifies the rewritten module and compares it with the original on two
 * input sets; rtol = atol = 0 asks for identical bits. */
PT_FN void pt_same_results(cv_module *orig, cv_module *opt, double rtol, double atol)
{
    cv_diag d;
    cv_diag_init(&d);
    if (cv_verify(opt, 0, &d)) {
        cv_diag_print(&d, stderr, false);
        char *text = cv_module_print(opt, 0);
        fail_msg("the rewritten model does not verify:\n%s", text);
    }
    cv_diag_free(&d);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        cv_tensor want[PT_MAX_IO], got[PT_MAX_IO];
        pt_run(orig->funcs[0], seed * 11, want);
        pt_run(opt->funcs[0], seed * 11, got);
        for (int i = 0; i < orig->funcs[0]->n_returns; i++) {
            char msg[512];
            bool same = want[i].dtype == got[i].dtype && want[i].rank == got[i].rank &&
                        cv_tensor_nbytes(&want[i]) == cv_tensor_nbytes(&got[i]);
            if (same && rtol == 0 && atol == 0)
                same = memcmp(want[i].data, got[i].data, cv_tensor_nbytes(&got[i])) == 0;
            else if (same && cv_npref_compare(&got[i], &want[i], rtol, atol, msg, sizeof msg))
                fail_msg("output %d differs after the pass: %s", i, msg);
            if (!same)
                fail_msg("output %d differs after the pass", i);
            cv_tensor_free(&want[i]);
            cv_tensor_free(&got[i]);
        }
    }
}

/* Parses text twice, runs pass on the second copy, checks the results and
 * returns the rewritten module (the caller frees it) with the stats. */
PT_FN cv_module *pt_apply(const char *text, pt_pass_fn pass, cv_pass_stats *st, double rtol,
                          double atol)
{
    cv_module *orig = pt_parse(text), *opt = pt_parse(text);
    cv_diag d;
    cv_diag_init(&d);
    *st = (cv_pass_stats){0};
    assert_int_equal(pass(opt->funcs[0], st, &d), 0);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    pt_same_results(orig, opt, rtol, atol);
    cv_module_free(orig);
    return opt;
}

/* dce with the signature of the other passes. */
PT_FN int pt_dce(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    (void)d;
    return cv_pass_dce(f, st);
}

PT_FN int pt_count_ops(const cv_func *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += strcmp(f->ops[i]->name, name) == 0;
    return n;
}

PT_FN const cv_op *pt_find_op(const cv_func *f, const char *name)
{
    for (int i = 0; i < f->n_ops; i++)
        if (strcmp(f->ops[i]->name, name) == 0)
            return f->ops[i];
    fail_msg("no %s op left", name);
    return NULL;
}

/* Whether op carries the location named `name` (an ONNX-style loc("name")). */
PT_FN bool pt_has_loc(const cv_op *op, const char *name)
{
    for (int i = 0; i < op->n_locs; i++)
        if (op->locs[i].file && strcmp(op->locs[i].file, name) == 0)
            return true;
    return false;
}

/* Every op id is its index and every operand is defined before use. */
PT_FN void pt_check_order(const cv_func *f)
{
    for (int i = 0; i < f->n_ops; i++) {
        assert_int_equal(f->ops[i]->id, i);
        for (int k = 0; k < f->ops[i]->n_operands; k++) {
            const cv_value *v = f->ops[i]->operands[k];
            if (v->kind == CV_VAL_RESULT)
                assert_true(v->def && v->def->id < i && f->ops[v->def->id] == v->def);
        }
    }
}

#endif
