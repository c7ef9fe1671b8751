/* Facts a model implies about its symbols (issue 26).  A model exported
 * with a dynamic sequence length L that indexes a 64-row positional table
 * with arange(L) is only valid for L <= 64: past that the gather reads out
 * of bounds.  The facts are derived once from the ops, kept in the module
 * (and its text form), and checked before a run, so that a too-long input
 * is a coded error naming the input, the symbol and the bound. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

int cv_module_add_fact(cv_module *m, const char *sym, int64_t max, const char *why)
{
    const char *s = cv_module_intern(m, sym, strlen(sym));
    if (!s)
        return -1;
    for (int i = 0; i < m->n_facts; i++)
        if (m->facts[i].sym == s) {
            if (max < m->facts[i].max) {
                m->facts[i].max = max;
                m->facts[i].why = cv_arena_strdup(&m->arena, why ? why : "");
            }
            return 0;
        }
    cv_sym_fact *v = cv_arena_alloc_array(&m->arena, (size_t)m->n_facts + 1, sizeof *v);
    const char *w = cv_arena_strdup(&m->arena, why ? why : "");
    if (!v || !w)
        return -1;
    if (m->n_facts)
        memcpy(v, m->facts, (size_t)m->n_facts * sizeof *v);
    v[m->n_facts] = (cv_sym_fact){s, max, w};
    m->facts = v;
    m->n_facts++;
    return 0;
}

int cv_module_facts(const cv_module *m, const cv_sym_fact **out)
{
    *out = m->facts;
    return m->n_facts;
}

/* The arange op whose values v holds unchanged (reshaped or broadcast). */
static const cv_op *range_source(const cv_value *v)
{
    for (int hops = 0; hops < 16; hops++) {
        if (cv_value_is(v, CV_OP_ARANGE))
            return v->def;
        if (!(cv_value_is(v, CV_OP_RESHAPE) || cv_value_is(v, CV_OP_UNSQUEEZE) ||
              cv_value_is(v, CV_OP_SQUEEZE) || cv_value_is(v, CV_OP_EXPAND) ||
              cv_value_is(v, CV_OP_FLATTEN)))
            return NULL;
        v = v->def->operands[0];
    }
    return NULL;
}

/* The fact a gather from x (static extent E on its axis) by range r
 * implies: indices start + i*delta, i < S, all in [0, E).  With a symbolic
 * length S: S <= (E - 1 - start)/delta + 1; with a symbolic start P and a
 * static length: P <= E - 1 - (S - 1)*delta. */
static int gather_fact(cv_func *f, const cv_op *op, const cv_op *r, int64_t extent)
{
    cv_dim len[2], start[2] = {{0, NULL}};
    int64_t delta = cv_op_int(r, "delta", 1);
    if (cv_op_dims(r, "length", len, 2) != 1 || cv_op_dims(r, "start", start, 2) > 1 ||
        delta < 1 || delta > extent)
        return 0;
    const char *sym;
    int64_t max;
    if (cv_dim_is_symbol(len[0]) && !start[0].sym && start[0].n >= 0 && start[0].n < extent) {
        sym = len[0].sym;
        max = (extent - 1 - start[0].n) / delta + 1;
    } else if (cv_dim_is_symbol(start[0]) && !len[0].sym && len[0].n >= 1 &&
               len[0].n <= extent) {
        sym = start[0].sym;
        max = extent - 1 - (len[0].n - 1) * delta;
    } else {
        return 0;
    }
    if (max < 0)
        return 0;
    char why[256], path[160];
    cv_op_path(op, path, sizeof path);
    snprintf(why, sizeof why, "%%%s has %lld entries on axis %lld, indexed by a range over %s at %s",
             op->operands[0]->name, (long long)extent, (long long)cv_op_int(op, "axis", 0), sym,
             path);
    return cv_module_add_fact(f->module, sym, max, why) ? -1 : 1;
}

int cv_func_derive_facts(cv_func *f)
{
    int added = 0;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        if (!cv_op_is(op, CV_OP_GATHER) || op->n_operands != 2)
            continue;
        const cv_value *x = op->operands[0];
        const cv_op *r = range_source(op->operands[1]);
        int64_t axis = cv_op_int(op, "axis", 0);
        axis = axis < 0 ? axis + x->type.shape.rank : axis;
        if (!r || axis < 0 || axis >= x->type.shape.rank || x->type.shape.d[axis].sym)
            continue;
        int rc = gather_fact(f, op, r, x->type.shape.d[axis].n);
        if (rc < 0)
            return -1;
        added += rc;
    }
    return added;
}

/* The input whose dims have sym by itself, for the message. */
static const char *binding_input(const cv_func *f, const char *sym)
{
    for (int i = 0; i < f->n_inputs; i++)
        for (int k = 0; k < f->inputs[i]->type.shape.rank; k++) {
            cv_dim d = f->inputs[i]->type.shape.d[k];
            if (cv_dim_is_symbol(d) && !strcmp(d.sym, sym))
                return f->inputs[i]->name;
        }
    return "?";
}

int cv_func_check_facts(const cv_func *f, cv_dim_lookup look, void *ctx, cv_diag *d)
{
    const cv_module *m = f->module;
    for (int i = 0; i < m->n_facts; i++) {
        const cv_sym_fact *k = &m->facts[i];
        int64_t v;
        if (!look(ctx, k->sym, &v) || v <= k->max)
            continue;
        cv_span sp = f->span;
        if (!sp.file)
            sp.file = m->path;
        cv_diag_error(d, CV_E_SYMBOL_BOUND, sp, "input %%%s binds %s = %lld, but the model holds only for "
                      "%s <= %lld (%s)", binding_input(f, k->sym), k->sym, (long long)v, k->sym,
                      (long long)k->max, k->why);
        return -1;
    }
    return 0;
}
