/* The per-layer diff's engine: both sides run (an artifact built with every
 * kernel's result as an output, the reference interpreter on the model as
 * written), then one row per op whose result both sides have, in program
 * order, with the first that deviates beyond the tolerance.  `cuvil diff`
 * (cli/cmd_diff.c) only parses arguments and prints these rows. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/diff/diff.h"
#include "compiler-core/cuvil.h"

int cv_diff_native(cv_native *n, const cv_tensor *ins, int n_in, cv_diff_side *s, cv_diag *d)
{
    int outs = cv_native_num_outputs(n);
    if (cv_diff_side_reserve(s, outs, d) || cv_native_run(n, ins, n_in, s->t, d))
        return -1;
    s->n = outs;
    for (int i = 0; i < outs; i++)
        s->name[i] = cv_native_output(n, i).name;
    return 0;
}

int cv_diff_interp(const char *model, const cv_tensor *ins, int n_in, cv_diff_side *s,
                   cv_module **keep, cv_diag *d)
{
    cv_module *m = *keep = cv_model_load(model, 0, d);
    if (!m)
        return -1;
    cv_func *f = m->funcs[0];
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += f->ops[i]->n_results;
    if (f->n_inputs != n_in)
        return cv_diag_fail(d, CV_E_DIFF_NO_REFERENCE, (cv_span){.file = model},
                            "the model has %d inputs, its build %d", f->n_inputs, n_in);
    if (cv_diff_side_reserve(s, n, d))
        return -1;
    cv_value **vals = calloc((size_t)n + 1, sizeof *vals);  /* owned */
    if (!vals)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    n = 0;
    for (int i = 0; i < f->n_ops; i++)
        for (int r = 0; r < f->ops[i]->n_results; r++)
            vals[n++] = f->ops[i]->results[r];
    cv_func_set_returns(f, vals, n);
    free(vals);
    if (cv_interp_run(f, ins, n_in, s->t, d))
        return -1;
    s->n = n;
    for (int i = 0; i < n; i++)
        s->name[i] = f->returns[i]->name;
    return 0;
}

static const cv_tensor *lookup(const cv_diff_side *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return &s->t[i];
    return NULL;
}

static void compare(const cv_tensor *got, const cv_tensor *want, double atol, double rtol,
                    cv_diff_row *r)
{
    if (got->rank != want->rank || got->numel != want->numel ||
        memcmp(got->dims, want->dims, sizeof got->dims[0] * (size_t)got->rank) != 0) {
        r->shape_differs = true;
        return;
    }
    double scale = 0;
    for (int64_t i = 0; i < got->numel; i++) {
        double g = cv_tensor_get(got, i), w = cv_tensor_get(want, i);
        double diff = fabs(g - w);
        if (isnan(g) != isnan(w) || (!isnan(g) && diff > atol + rtol * fabs(w)))
            r->deviates = true;
        if (!isnan(diff) && diff > r->max_abs)
            r->max_abs = diff;
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    r->rel = r->max_abs / (scale > DBL_MIN ? scale : 1.0);
}

/* The op (index in the map) whose result value is name, or -1. */
static int op_of_value(const cv_symmap *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].value, name) == 0)
            return m->tensors[i].op;
    return -1;
}

/* The name the reference knows op's result by: its value name, or, for an
 * ONNX Runtime reference, the label of the ONNX node it computes when it is
 * the last op lowered from that node (NULL otherwise). */
static const char *ref_key(const cv_symmap *m, int op, const cv_diff_side *ref)
{
    if (!ref->by_node)
        return m->ops[op].value;
    const cv_sym_op *o = &m->ops[op];
    if (o->n_locs == 0 || o->locs[0].line != 0)
        return NULL;
    for (int later = op + 1; later < m->n_ops; later++)
        if (m->ops[later].n_locs && m->ops[later].locs[0].line == 0 &&
            strcmp(m->ops[later].locs[0].file, o->locs[0].file) == 0)
            return NULL;
    return o->locs[0].file;
}

int cv_diff_compare(const cv_symmap *m, const cv_diff_side *build, const cv_diff_side *ref,
                    double atol, double rtol, cv_diff_rows *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    out->first = -1;
    if (m->n_ops && !(out->row = calloc((size_t)m->n_ops, sizeof *out->row)))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    for (int op = 0; op < m->n_ops; op++) {
        const char *v = m->ops[op].value, *key = ref_key(m, op, ref);
        const cv_tensor *got = v ? lookup(build, v) : NULL, *want = key ? lookup(ref, key) : NULL;
        if (!got || !want || op_of_value(m, v) != op)
            continue;
        cv_diff_row *r = &out->row[out->n++];
        r->op = op;
        r->value = v;
        compare(got, want, atol, rtol, r);
        if (r->deviates && out->first < 0)
            out->first = op;
    }
    return 0;
}
