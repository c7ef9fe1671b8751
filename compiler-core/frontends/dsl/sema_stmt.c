/* Statements: assignment and unpacking, unrolled for loops, constant ifs,
 * returns, imports, defs, and the Python statements a model cannot hold.
 * A statement skipped because of an error (an if whose condition failed, a
 * while) binds the names it would have assigned to an error value, so that
 * later uses are not reported as new mistakes. */
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

/* ---- names a skipped region would have bound ------------------------------ */

static void poison_target(dsl_sema *s, dsl_frame *fr, const dsl_node *t, int root)
{
    if (!t)
        return;
    if (t->kind == DSL_N_NAME)
        dsl_scope_set(s, fr->scope, t->name, dsl_v_error(s, root));
    else if (t->kind == DSL_N_TUPLE || t->kind == DSL_N_LIST)
        for (int i = 0; i < t->items.n; i++)
            poison_target(s, fr, t->items.v[i], root);
    else if (t->kind == DSL_N_STARRED)
        poison_target(s, fr, t->a, root);
}

static void poison_block(dsl_sema *s, dsl_frame *fr, const dsl_list *body, int root);

static void poison_stmt(dsl_sema *s, dsl_frame *fr, const dsl_node *st, int root)
{
    switch (st->kind) {
    case DSL_N_ASSIGN:
        for (int i = 0; i < st->items.n; i++)
            poison_target(s, fr, st->items.v[i], root);
        break;
    case DSL_N_AUGASSIGN: case DSL_N_ANNASSIGN: case DSL_N_FOR:
        poison_target(s, fr, st->a, root);
        break;
    case DSL_N_FUNCTIONDEF: case DSL_N_CLASSDEF:
        dsl_scope_set(s, fr->scope, st->name, dsl_v_error(s, root));
        break;
    case DSL_N_IMPORT: case DSL_N_IMPORTFROM:
        for (int i = 0; i < st->items.n; i++) {
            const dsl_node *al = st->items.v[i];
            dsl_scope_set(s, fr->scope, al->asname ? al->asname : al->name, dsl_v_error(s, root));
        }
        break;
    case DSL_N_RETURN:
        if (!fr->ret_root)
            fr->ret_root = root ? root : -1;
        break;
    case DSL_N_ASYNC:
        if (st->a)
            poison_stmt(s, fr, st->a, root);
        break;
    default:
        break;
    }
    if (st->kind == DSL_N_FUNCTIONDEF || st->kind == DSL_N_CLASSDEF)
        return;  /* their bodies bind names of their own scope */
    poison_block(s, fr, &st->body, root);
    poison_block(s, fr, &st->orelse, root);
    poison_block(s, fr, &st->final, root);
    if (st->kind == DSL_N_TRY)
        for (int i = 0; i < st->items.n; i++)
            poison_block(s, fr, &st->items.v[i]->body, root);
}

static void poison_block(dsl_sema *s, dsl_frame *fr, const dsl_list *body, int root)
{
    for (int i = 0; i < body->n; i++)
        poison_stmt(s, fr, body->v[i], root);
}

/* ---- assignment ----------------------------------------------------------- */

void dsl_assign(dsl_sema *s, dsl_frame *fr, const dsl_node *target, dsl_val *v)
{
    switch (target->kind) {
    case DSL_N_NAME:
        dsl_scope_set(s, fr->scope, target->name, v);
        return;
    case DSL_N_TUPLE: case DSL_N_LIST: {
        int n = target->items.n, root = 0;
        for (int i = 0; i < n; i++)
            if (target->items.v[i]->kind == DSL_N_STARRED)
                root = dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, target->items.v[i], "starred assignment targets are not supported");
        v = dsl_resolve(s, v);
        if (!root && v->kind == DSL_V_ERROR)
            root = v->root ? v->root : -1;
        if (!root && v->kind != DSL_V_TUPLE && v->kind != DSL_V_LIST) {
            char d[96];
            dsl_v_describe(v, d, sizeof d);
            root = dsl_error(s, v->kind == DSL_V_TENSOR ? CV_E_DSL_TYPE_ERROR : CV_E_DSL_UNPACK_MISMATCH, target, "cannot unpack %s into "
                             "%d names%s", d, n, v->kind == DSL_V_TENSOR ? " (use cvl.split)" : "");
        }
        if (!root && v->n != n)
            root = dsl_error(s, CV_E_DSL_UNPACK_MISMATCH, target, "%s values to unpack: expected %d, got %d",
                             v->n > n ? "too many" : "not enough", n, v->n);
        for (int i = 0; i < n; i++)
            if (root)
                poison_target(s, fr, target->items.v[i], root > 0 ? root : 0);
            else
                dsl_assign(s, fr, target->items.v[i], v->items[i]);
        return;
    }
    default:
        dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, target, "assignment to %s is not supported: values in a model are "
                  "immutable; bind a new name", target->kind == DSL_N_SUBSCRIPT ? "an item" : "an attribute");
        return;
    }
}

/* ---- control flow --------------------------------------------------------- */

static dsl_flow exec_for(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    dsl_val **items;
    int n, root;
    if (!dsl_iterate(s, st->b, dsl_eval(s, fr, st->b), CV_E_DSL_DATA_DEPENDENT_LOOP, "a for loop", &items, &n, &root)) {
        poison_target(s, fr, st->a, root);
        poison_block(s, fr, &st->body, root);
        return DSL_FLOW_NEXT;
    }
    if (n > DSL_MAX_UNROLL) {
        root = dsl_error(s, CV_E_DSL_TOO_LARGE, st->b, "a loop of %d iterations is too long to unroll (limit %d)",
                         n, DSL_MAX_UNROLL);
        poison_target(s, fr, st->a, root);
        poison_block(s, fr, &st->body, root);
        return DSL_FLOW_NEXT;
    }
    bool broke = false;
    fr->loops++;
    for (int i = 0; i < n && !broke; i++) {
        dsl_assign(s, fr, st->a, items[i]);
        dsl_flow f = dsl_exec_block(s, fr, &st->body);
        if (f == DSL_FLOW_RETURN) {
            fr->loops--;
            return f;
        }
        broke = f == DSL_FLOW_BREAK;
    }
    fr->loops--;
    return broke ? DSL_FLOW_NEXT : dsl_exec_block(s, fr, &st->orelse);
}

static dsl_flow exec_if(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    dsl_val *test = dsl_resolve(s, dsl_eval(s, fr, st->a));
    bool known, t = dsl_v_truth(test, &known);
    if (known)
        return dsl_exec_block(s, fr, t ? &st->body : &st->orelse);
    int root = test->kind == DSL_V_ERROR
                   ? test->root
                   : dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, st->a, "this if depends on %s, known only at run time; a model's "
                               "ifs must be decided at compile time (use cvl.where to select per element)",
                               test->kind == DSL_V_TENSOR ? "tensor data" : "a symbolic dimension");
    poison_block(s, fr, &st->body, root);
    poison_block(s, fr, &st->orelse, root);
    return DSL_FLOW_NEXT;
}

static dsl_flow exec_return(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    fr->ret = st->a ? dsl_eval(s, fr, st->a) : dsl_v_none(s);
    fr->ret_node = st;
    return DSL_FLOW_RETURN;
}

static void exec_assert(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    dsl_val *test = dsl_resolve(s, dsl_eval(s, fr, st->a));
    bool known, t = dsl_v_truth(test, &known);
    if (test->kind == DSL_V_ERROR)
        return;
    if (!known) {
        dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, st->a, "an assert on %s cannot be checked at compile time",
                  test->kind == DSL_V_TENSOR ? "tensor data" : "a symbolic dimension");
        return;
    }
    if (t)
        return;
    dsl_val *msg = st->b ? dsl_eval(s, fr, st->b) : NULL;
    if (msg && msg->kind == DSL_V_STR)
        dsl_error(s, CV_E_DSL_CONSTANT_ERROR, st, "assertion failed: %.*s", (int)(msg->slen > 200 ? 200 : msg->slen), msg->s);
    else
        dsl_error(s, CV_E_DSL_CONSTANT_ERROR, st, "assertion failed");
}

/* ---- imports and defs ----------------------------------------------------- */

static bool is_cuvil(const char *name) { return strcmp(name, "cuvil") == 0; }

static void exec_import(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    for (int i = 0; i < st->items.n; i++) {
        const dsl_node *al = st->items.v[i];
        if (!is_cuvil(al->name)) {
            int id = dsl_error(s, CV_E_DSL_IMPORT, al, "import of '%s': a model can only import cuvil", al->name);
            dsl_scope_set(s, fr->scope, al->asname ? al->asname : al->name, dsl_v_error(s, id));
            continue;
        }
        dsl_scope_set(s, fr->scope, al->asname ? al->asname : al->name, dsl_v_new(s, DSL_V_MODULE));
    }
}

static void exec_import_from(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    if (strcmp(st->name, "__future__") == 0)
        return;
    for (int i = 0; i < st->items.n; i++) {
        const dsl_node *al = st->items.v[i];
        const char *bind = al->asname ? al->asname : al->name;
        dsl_val *v;
        if (!is_cuvil(st->name))
            v = dsl_v_error(s, dsl_error(s, CV_E_DSL_IMPORT, st, "import from '%s': a model can only import cuvil",
                                         st->name));
        else if (strcmp(al->name, "*") == 0)
            v = dsl_v_error(s, dsl_error(s, CV_E_DSL_IMPORT, al, "'from cuvil import *' is not supported; import "
                                         "the names you use"));
        else {
            /* from cuvil import relu, model: the same as cvl.relu, cvl.model. */
            const cv_op_def *def = cv_op_def_lookup(al->name);
            cv_dtype dt = dsl_dtype_named(al->name);
            if (def) {
                v = dsl_v_new(s, DSL_V_OP);
                if (v->kind == DSL_V_OP)
                    v->op = def;
            } else if (strcmp(al->name, "model") == 0) {
                v = dsl_v_new(s, DSL_V_MODEL);
            } else if (dt != CV_DT_INVALID) {
                v = dsl_v_new(s, DSL_V_DTYPE);
                if (v->kind == DSL_V_DTYPE)
                    v->dt = dt;
            } else {
                v = dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_OP, al, "cuvil has no op '%s'", al->name));
            }
        }
        dsl_scope_set(s, fr->scope, bind, v);
    }
}

/* Registers @cvl.model defs (module level) and binds helpers. */
static void exec_def(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    for (int i = 0; i < st->items.n; i++)
        if (st->items.v[i]->op != 0)
            dsl_error(s, CV_E_DSL_UNSUPPORTED_PARAMETER, st->items.v[i], "*args, **kwargs, '*' and '/' parameters are not supported");
    const dsl_node *model_call = NULL;
    int root = 0;
    for (int i = 0; i < st->items2.n; i++) {
        const dsl_node *dec = st->items2.v[i];
        dsl_val *dv = dsl_eval(s, fr, dec->kind == DSL_N_CALL ? dec->a : dec);
        if (dv->kind == DSL_V_ERROR) {
            root = dv->root ? dv->root : -1;
        } else if (dv->kind != DSL_V_MODEL) {
            root = dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, dec, "decorators other than @cvl.model(...) are not supported");
        } else if (dec->kind != DSL_N_CALL) {
            root = dsl_error(s, CV_E_DSL_MODEL_SPEC, dec, "@cvl.model needs arguments: "
                             "@cvl.model(input_shapes=[...], dtype=\"float32\", weights=\"file.safetensors\")");
        } else if (s->f || s->depth || fr->scope != s->globals) {
            root = dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, dec, "@cvl.model decorates a module-level def only");
        } else {
            model_call = dec;
        }
    }
    if (root) {
        dsl_scope_set(s, fr->scope, st->name, dsl_v_error(s, root > 0 ? root : 0));
        return;
    }
    dsl_val *fn = dsl_v_new(s, DSL_V_FUNC);
    if (fn->kind == DSL_V_FUNC) {
        fn->fn = st;
        fn->scope = fr->scope;
    }
    dsl_scope_set(s, fr->scope, st->name, fn);
    if (!model_call)
        return;
    if (s->n_models == s->cap_models) {
        int cap = s->cap_models ? s->cap_models * 2 : 4;
        const dsl_node **m = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *m);
        const dsl_node **d = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *d);
        if (!m || !d)
            return;
        if (s->n_models) {
            memcpy(m, s->models, (size_t)s->n_models * sizeof *m);
            memcpy(d, s->model_decos, (size_t)s->n_models * sizeof *d);
        }
        s->models = m;
        s->model_decos = d;
        s->cap_models = cap;
    }
    s->models[s->n_models] = st;
    s->model_decos[s->n_models++] = model_call;
}

/* ---- statements a model cannot contain ------------------------------------ */

static void refuse(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    int id;
    switch (st->kind) {
    case DSL_N_WHILE:
        id = dsl_error(s, CV_E_DSL_WHILE, st, "while loops are not supported: a model's loops are unrolled at "
                       "compile time; use for i in range(CONST)");
        break;
    case DSL_N_TRY:
        id = dsl_error(s, CV_E_DSL_TRY, st, "try statements are not supported in a model");
        break;
    case DSL_N_GLOBAL: case DSL_N_NONLOCAL:
        id = dsl_error(s, CV_E_DSL_GLOBAL, st, "%s statements are not supported: a model has no mutable state",
                       st->kind == DSL_N_GLOBAL ? "global" : "nonlocal");
        break;
    default: {
        static const struct { dsl_node_kind k; const char *what; } names[] = {
            {DSL_N_CLASSDEF, "class definitions"}, {DSL_N_WITH, "with statements"},
            {DSL_N_DELETE, "del statements"}, {DSL_N_RAISE, "raise statements"},
            {DSL_N_ASYNC, "async statements"}, {DSL_N_BREAK, "break outside a loop"},
            {DSL_N_CONTINUE, "continue outside a loop"}, {DSL_N_RETURN, "return outside a function"},
        };
        const char *what = "this statement";
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (names[i].k == st->kind)
                what = names[i].what;
        id = dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, st, "%s %s not supported in a model", what,
                       strstr(what, "outside") ? "is" : "are");
    }
    }
    poison_stmt(s, fr, st, id);
}

static dsl_flow exec_stmt(dsl_sema *s, dsl_frame *fr, const dsl_node *st)
{
    switch (st->kind) {
    case DSL_N_EXPR:
        if (st->a->kind != DSL_N_CONSTANT)  /* docstrings and bare constants do nothing */
            dsl_eval(s, fr, st->a);
        return DSL_FLOW_NEXT;
    case DSL_N_ASSIGN: {
        dsl_val *v = dsl_eval(s, fr, st->a);
        for (int i = 0; i < st->items.n; i++)
            dsl_assign(s, fr, st->items.v[i], v);
        return DSL_FLOW_NEXT;
    }
    case DSL_N_AUGASSIGN: {
        if (st->a->kind != DSL_N_NAME) {
            dsl_assign(s, fr, st->a, NULL);  /* reports the unsupported target */
            return DSL_FLOW_NEXT;
        }
        dsl_val *cur = dsl_eval(s, fr, st->a);
        dsl_val *rhs = dsl_eval(s, fr, st->b);
        dsl_assign(s, fr, st->a, dsl_binop(s, st, (dsl_exop)st->op, cur, rhs));
        return DSL_FLOW_NEXT;
    }
    case DSL_N_ANNASSIGN:
        if (st->c)
            dsl_assign(s, fr, st->a, dsl_eval(s, fr, st->c));
        return DSL_FLOW_NEXT;
    case DSL_N_RETURN:
        if (s->depth == 0 && !s->f)
            break;
        return exec_return(s, fr, st);
    case DSL_N_FOR: return exec_for(s, fr, st);
    case DSL_N_IF: return exec_if(s, fr, st);
    case DSL_N_ASSERT: exec_assert(s, fr, st); return DSL_FLOW_NEXT;
    case DSL_N_IMPORT: exec_import(s, fr, st); return DSL_FLOW_NEXT;
    case DSL_N_IMPORTFROM: exec_import_from(s, fr, st); return DSL_FLOW_NEXT;
    case DSL_N_FUNCTIONDEF: exec_def(s, fr, st); return DSL_FLOW_NEXT;
    case DSL_N_PASS: return DSL_FLOW_NEXT;
    case DSL_N_BREAK: case DSL_N_CONTINUE:
        if (fr->loops > 0)
            return st->kind == DSL_N_BREAK ? DSL_FLOW_BREAK : DSL_FLOW_CONTINUE;
        break;
    default:
        break;
    }
    refuse(s, fr, st);
    return DSL_FLOW_NEXT;
}

dsl_flow dsl_exec_block(dsl_sema *s, dsl_frame *fr, const dsl_list *body)
{
    dsl_flow f = DSL_FLOW_NEXT;
    s->nest++;
    for (int i = 0; i < body->n && f == DSL_FLOW_NEXT; i++) {
        if (!dsl_step(s, body->v[i])) {
            fr->ret_root = s->budget_id ? s->budget_id : -1;
            f = DSL_FLOW_RETURN;
        } else {
            f = exec_stmt(s, fr, body->v[i]);
        }
    }
    s->nest--;
    return f;
}
