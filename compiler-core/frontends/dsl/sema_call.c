/* Calls: helper defs are inlined (positional, keyword and default
 * arguments; recursion is refused), cvl.<op> calls become ops, and the few
 * Python builtins a model needs run at compile time. */
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

dsl_val *dsl_call(dsl_sema *s, dsl_frame *fr, const dsl_node *call)
{
    dsl_val *callee = dsl_eval(s, fr, call->a);
    int n = call->items.n, n_kw = call->items2.n;
    dsl_val **args = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *args);
    dsl_val **kw_vals = cv_arena_alloc_array(s->a, (size_t)n_kw + 1, sizeof *kw_vals);
    if (!args || !kw_vals)
        return dsl_v_error(s, 0);
    /* Every argument is evaluated, so that errors in each are reported. */
    for (int i = 0; i < n; i++) {
        const dsl_node *a = call->items.v[i];
        args[i] = a->kind == DSL_N_STARRED
                      ? dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, a, "*args in a call is not supported"))
                      : dsl_eval(s, fr, a);
    }
    for (int i = 0; i < n_kw; i++) {
        const dsl_node *k = call->items2.v[i];
        kw_vals[i] = k->name ? dsl_eval(s, fr, k->a)
                             : dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, k, "**kwargs in a call is not supported"));
    }
    const dsl_node *const *kw_nodes = (const dsl_node *const *)call->items2.v;
    switch (callee->kind) {
    case DSL_V_ERROR:
        return callee;
    case DSL_V_FUNC:
        return dsl_inline_call(s, call, callee, args, n, kw_nodes, kw_vals, n_kw);
    case DSL_V_OP:
        return dsl_call_op(s, call, callee->op, args, n, kw_nodes, kw_vals, n_kw);
    case DSL_V_BUILTIN:
        if (n_kw)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_KEYWORD, kw_nodes[0], "this builtin takes no keyword "
                                            "arguments"));
        return dsl_call_builtin(s, call, (dsl_builtin)callee->i, args, n);
    case DSL_V_MODEL:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, call, "cvl.model(...) is a decorator of a "
                                        "module-level def"));
    default: {
        char d[96];
        dsl_v_describe(callee, d, sizeof d);
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, call->a, "%s is not callable", d));
    }
    }
}

/* ---- helper inlining ------------------------------------------------------ */

static int param_index(const dsl_node *def, const char *name)
{
    for (int i = 0; i < def->items.n; i++)
        if (def->items.v[i]->name && strcmp(def->items.v[i]->name, name) == 0)
            return i;
    return -1;
}

static int unknown_keyword(dsl_sema *s, const dsl_node *def, const dsl_node *kw)
{
    const char **names = cv_arena_alloc_array(s->a, (size_t)def->items.n + 1, sizeof *names);
    for (int i = 0; names && i < def->items.n; i++)
        names[i] = def->items.v[i]->name;
    const char *hint = names ? dsl_suggest(kw->name, names, def->items.n) : NULL;
    return dsl_error(s, CV_E_DSL_UNKNOWN_KEYWORD, kw, "%s() has no parameter '%s'%s%s%s", def->name, kw->name,
                     hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
}

/* Binds the call's arguments into scope; returns the first error's id. */
static int bind_args(dsl_sema *s, const dsl_node *call, const dsl_node *def, dsl_scope *scope,
                     dsl_val *fn, dsl_val **args, int n, const dsl_node *const *kw_nodes,
                     dsl_val **kw_vals, int n_kw)
{
    int np = def->items.n;
    bool bound[256] = {false};
    if (np > 256)
        return dsl_error(s, CV_E_DSL_TOO_LARGE, def, "%s() has more than 256 parameters", def->name);
    if (n > np)
        return dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, call->items.v[np], "%s() takes %d positional argument%s but %d "
                         "were given", def->name, np, np == 1 ? "" : "s", n);
    for (int i = 0; i < n; i++) {
        dsl_scope_set(s, scope, def->items.v[i]->name, args[i]);
        bound[i] = true;
    }
    int err = 0;
    for (int k = 0; k < n_kw; k++) {
        int i = param_index(def, kw_nodes[k]->name);
        int id = 0;
        if (i < 0)
            id = unknown_keyword(s, def, kw_nodes[k]);
        else if (bound[i])
            id = dsl_error(s, CV_E_DSL_DUPLICATE_ARGUMENT, kw_nodes[k], "%s() got two values for argument '%s'", def->name,
                           kw_nodes[k]->name);
        else {
            dsl_scope_set(s, scope, kw_nodes[k]->name, kw_vals[k]);
            bound[i] = true;
        }
        if (id && !err)
            err = id;
    }
    for (int i = 0; i < np; i++) {
        if (bound[i])
            continue;
        const dsl_node *p = def->items.v[i];
        if (p->a) {
            /* Defaults are evaluated where the def is, as Python does. */
            dsl_frame dfr = {.scope = fn->scope};
            dsl_scope_set(s, scope, p->name, dsl_eval(s, &dfr, p->a));
        } else if (!err) {
            err = dsl_error(s, CV_E_DSL_MISSING_ARGUMENT, call, "%s() is missing the required argument '%s'", def->name,
                            p->name);
        }
    }
    return err;
}

dsl_val *dsl_inline_call(dsl_sema *s, const dsl_node *call, dsl_val *fn, dsl_val **args, int n,
                         const dsl_node *const *kw_nodes, dsl_val **kw_vals, int n_kw)
{
    const dsl_node *def = fn->fn;
    for (int i = 0; i < s->depth; i++)
        if (s->stack[i].fn == def)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_RECURSION, call, "'%s' calls itself: helpers are inlined, so "
                                            "recursion cannot be compiled", def->name));
    if (s->depth >= DSL_MAX_INLINE_DEPTH)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TOO_LARGE, call, "helpers nested more than %d calls deep",
                                        DSL_MAX_INLINE_DEPTH));
    for (int i = 0; i < def->items.n; i++)
        if (def->items.v[i]->op != 0)  /* reported when the def was run */
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_PARAMETER, def->items.v[i], "*args, **kwargs, '*' and '/' "
                                            "parameters are not supported"));
    dsl_scope *scope = dsl_scope_new(s, fn->scope);
    int err = bind_args(s, call, def, scope, fn, args, n, kw_nodes, kw_vals, n_kw);
    if (err)
        return dsl_v_error(s, err);
    s->stack[s->depth].fn = def;
    s->stack[s->depth].call = call;
    s->depth++;
    dsl_frame fr = {.scope = scope};
    dsl_exec_block(s, &fr, &def->body);
    s->depth--;
    if (fr.ret_root)
        return dsl_v_error(s, fr.ret_root > 0 ? fr.ret_root : 0);
    return fr.ret ? fr.ret : dsl_v_none(s);
}
