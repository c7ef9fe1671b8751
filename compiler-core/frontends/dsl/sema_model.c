/* Models: runs the module's top-level statements, then lowers each
 * @cvl.model(input_shapes=..., dtype=..., weights=...) def into a CU-IR
 * function whose inputs are the def's leading parameters and whose last
 * parameter (with weights=) is the weights namespace. */
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

typedef struct model_spec {
    const dsl_node *shapes_node, *dtype_node, *weights_node;
    dsl_val *shapes;
    cv_dtype dtype;
    const char *weights;
    int err;
} model_spec;

static void spec_fail(model_spec *m, int id)
{
    if (!m->err)
        m->err = id ? id : -1;
}

static bool is_identifier(const dsl_val *v)
{
    if (v->slen == 0 || v->slen > 64 || (v->s[0] >= '0' && v->s[0] <= '9'))
        return false;
    for (size_t i = 0; i < v->slen; i++) {
        char c = v->s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* A string dimension that is an expression over symbols (docs/cuir.md). */
static bool dim_expr(dsl_sema *s, const dsl_val *d, cv_dim *out)
{
    const char *err;
    size_t at;
    return cv_dim_parse(s->m, d->s, d->slen, out, &err, &at) == 0 && (out->sym || out->n >= 0);
}

/* One entry of input_shapes: a tuple of ints, symbol names and expressions. */
static bool shape_of(dsl_sema *s, const dsl_val *v, cv_shape *out, const dsl_node *at, model_spec *m)
{
    if (v->kind != DSL_V_TUPLE && v->kind != DSL_V_LIST) {
        spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, at, "each input shape must be a tuple like (\"N\", 1, 28, 28)"));
        return false;
    }
    if (v->n > CV_MAX_RANK) {
        spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, at, "an input shape has %d dimensions; CU-IR allows %d", v->n,
                               CV_MAX_RANK));
        return false;
    }
    out->rank = v->n;
    for (int i = 0; i < v->n; i++) {
        const dsl_val *d = v->items[i];
        if (d->kind == DSL_V_INT && d->i >= 0) {
            out->d[i] = (cv_dim){d->i, NULL};
        } else if (d->kind == DSL_V_STR && is_identifier(d)) {
            out->d[i] = (cv_dim){0, cv_module_intern(s->m, d->s, d->slen)};
        } else if (d->kind == DSL_V_STR && dim_expr(s, d, &out->d[i])) {
            continue;   /* "(L + 1) floordiv 2", "2*N" */
        } else {
            char desc[96];
            dsl_v_describe(d, desc, sizeof desc);
            spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, at, "dimension %d of an input shape is %s; use a "
                                   "non-negative int, a symbol name such as \"N\" or an "
                                   "expression such as \"2*N + 1\"", i, desc));
            return false;
        }
    }
    return true;
}

static void read_spec(dsl_sema *s, dsl_frame *fr, const dsl_node *deco, model_spec *m)
{
    m->dtype = CV_F32;
    if (deco->items.n)
        spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, deco->items.v[0], "@cvl.model takes keyword arguments: "
                               "input_shapes=, dtype=, weights="));
    for (int k = 0; k < deco->items2.n; k++) {
        const dsl_node *kw = deco->items2.v[k];
        if (!kw->name)
            continue;
        dsl_val *v = dsl_eval(s, fr, kw->a);
        if (v->kind == DSL_V_ERROR) {
            spec_fail(m, v->root);
        } else if (strcmp(kw->name, "input_shapes") == 0) {
            m->shapes_node = kw;
            m->shapes = v;
            if (v->kind != DSL_V_TUPLE && v->kind != DSL_V_LIST)
                spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, kw, "input_shapes must be a list of shape tuples"));
        } else if (strcmp(kw->name, "dtype") == 0) {
            m->dtype_node = kw;
            m->dtype = v->kind == DSL_V_DTYPE ? v->dt
                       : v->kind == DSL_V_STR ? dsl_dtype_named(cv_arena_strndup(s->a, v->s, v->slen))
                                              : CV_DT_INVALID;
            if (m->dtype == CV_DT_INVALID)
                spec_fail(m, dsl_error(s, CV_E_DSL_UNKNOWN_DTYPE, kw, "unknown model dtype; use one of float32 float16 "
                                       "bfloat16 int8 uint8 int32 int64 bool"));
        } else if (strcmp(kw->name, "weights") == 0) {
            m->weights_node = kw;
            if (v->kind == DSL_V_STR && v->slen && !memchr(v->s, 0, v->slen))
                m->weights = cv_arena_strndup(s->a, v->s, v->slen);
            else if (v->kind != DSL_V_NONE)
                spec_fail(m, dsl_error(s, CV_E_DSL_MODEL_SPEC, kw, "weights must be a file name such as \"model.safetensors\""));
        } else {
            static const char *const known[] = {"input_shapes", "dtype", "weights"};
            const char *hint = dsl_suggest(kw->name, known, 3);
            spec_fail(m, dsl_error(s, CV_E_DSL_UNKNOWN_KEYWORD, kw, "@cvl.model has no argument '%s'%s%s%s", kw->name,
                                   hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : ""));
        }
    }
    if (!m->shapes_node)
        spec_fail(m, dsl_error(s, CV_E_DSL_MISSING_ARGUMENT, deco, "@cvl.model needs input_shapes=[...]"));
}

/* Binds the def's parameters: inputs, then the weights namespace. */
static void bind_inputs(dsl_sema *s, const dsl_node *def, model_spec *m, dsl_scope *scope)
{
    int n_in = m->shapes && !m->err ? m->shapes->n : 0;
    int want = n_in + (m->weights ? 1 : 0), have = def->items.n;
    int err = m->err;
    if (!err && want != have)
        err = dsl_error(s, CV_E_DSL_MODEL_SIGNATURE, def, "model '%s' has %d parameter%s, but input_shapes lists %d input%s%s: "
                        "expected %d", def->name, have, have == 1 ? "" : "s", n_in, n_in == 1 ? "" : "s",
                        m->weights ? " and weights= adds the weights parameter" : "", want);
    for (int i = 0; i < have; i++) {
        const dsl_node *p = def->items.v[i];
        if (!p->name)
            continue;
        dsl_val *v;
        cv_type t = {.dtype = m->dtype};
        if (err) {
            v = dsl_v_error(s, err > 0 ? err : 0);
        } else if (i < n_in && shape_of(s, m->shapes->items[i], &t.shape, m->shapes_node, m)) {
            v = dsl_v_tensor(s, cv_func_add_input(s->f, p->name, &t));
        } else if (i < n_in) {
            v = dsl_v_error(s, m->err > 0 ? m->err : 0);
        } else {
            v = dsl_v_new(s, DSL_V_PARAMS);
            if (v->kind == DSL_V_PARAMS) {
                v->s = "";
                v->at = p;
            }
        }
        dsl_scope_set(s, scope, p->name, v);
    }
}

static void set_outputs(dsl_sema *s, const dsl_node *def, const dsl_frame *fr)
{
    if (fr->ret_root)
        return;
    const dsl_node *at = fr->ret_node ? fr->ret_node : def;
    dsl_val *r = fr->ret ? dsl_resolve(s, fr->ret) : NULL;
    if (r && r->kind == DSL_V_ERROR)
        return;
    dsl_val *single[1] = {r};
    dsl_val **items = single;
    int n = 1;
    if (r && r->kind == DSL_V_TUPLE) {
        items = r->items;
        n = r->n;
    }
    cv_value *vals[256];
    for (int i = 0; i < n; i++) {
        dsl_val *v = items[i] ? dsl_resolve(s, items[i]) : NULL;
        if (v && v->kind == DSL_V_ERROR)
            return;
        if (!v || v->kind != DSL_V_TENSOR || n > 256 || n == 0) {
            char d[96] = "nothing";
            if (v)
                dsl_v_describe(v, d, sizeof d);
            if (items == single)
                dsl_error(s, CV_E_DSL_MODEL_RETURN, at, "model '%s' must return a tensor or a tuple of tensors, not %s",
                          def->name, d);
            else
                dsl_error(s, CV_E_DSL_MODEL_RETURN, at, "model '%s' must return a tensor or a tuple of tensors; item %d "
                          "of its tuple is %s", def->name, i, n ? d : "missing (the tuple is empty)");
            return;
        }
        vals[i] = v->t;
    }
    for (int i = 0; i < n; i++)
        cv_func_add_output_type(s->f, &vals[i]->type);
    cv_func_set_returns(s->f, vals, n);
}

static void lower_model(dsl_sema *s, dsl_frame *module_fr, const dsl_node *def, const dsl_node *deco)
{
    model_spec m = {0};
    read_spec(s, module_fr, deco, &m);
    s->f = cv_func_new(s->m, def->name);
    if (m.weights && !m.err)
        dsl_weights_open(s, m.weights_node, m.weights);
    dsl_scope *scope = dsl_scope_new(s, s->globals);
    bind_inputs(s, def, &m, scope);
    dsl_frame fr = {.scope = scope};
    s->stack[0].fn = def;   /* a model calling itself is recursion too */
    s->stack[0].call = def;
    s->depth = 1;
    dsl_exec_block(s, &fr, &def->body);
    s->depth = 0;
    set_outputs(s, def, &fr);
    dsl_weights_close(s);
    s->f = NULL;
}

void dsl_run_module(dsl_sema *s, const dsl_node *mod)
{
    s->globals = dsl_scope_new(s, dsl_builtins_scope(s));
    dsl_frame fr = {.scope = s->globals};
    int errors_before = s->d->n_errors;
    dsl_exec_block(s, &fr, &mod->body);
    if (s->n_models == 0 && s->d->n_errors == errors_before)
        dsl_error(s, CV_E_DSL_NO_MODEL, mod, "%s defines no model: decorate a def with @cvl.model(...)", s->file);
    for (int i = 0; i < s->n_models; i++)
        lower_model(s, &fr, s->models[i], s->model_decos[i]);
}
