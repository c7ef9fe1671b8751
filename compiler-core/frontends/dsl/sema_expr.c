/* Expressions: names, constants, members, operators, comparisons,
 * conditionals, displays and comprehensions, all evaluated at compile time
 * (tensor operands turn into ops through sema_tensor.c). */
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

static const char *const unsupported_builtins[] = {
    "open", "eval", "exec", "compile", "input", "getattr", "setattr", "delattr", "hasattr",
    "isinstance", "issubclass", "map", "filter", "sorted", "reversed", "iter", "next", "type",
    "dict", "set", "frozenset", "str", "repr", "round", "pow", "divmod", "any", "all", "super",
    "object", "globals", "locals", "vars", "id", "hash", "callable", "chr", "ord", "format",
    "slice", "bytes", "bytearray", "memoryview", "complex", "__import__", "breakpoint", "exit",
    "quit", "help", "dir", "property", "staticmethod", "classmethod", "hex", "oct", "bin",
};

DSL_NOINLINE static dsl_val *undefined_name(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    int id;
    bool unsupported = false;
    for (size_t i = 0; i < sizeof unsupported_builtins / sizeof unsupported_builtins[0]; i++)
        unsupported |= strcmp(e->name, unsupported_builtins[i]) == 0;
    if (strcmp(e->name, "print") == 0) {
        id = dsl_error(s, CV_E_DSL_PRINT, e, "print is not supported in a model: a model runs once, at "
                       "compile time; use `cuvil run` to see values");
    } else if (unsupported) {
        id = dsl_error(s, CV_E_DSL_UNSUPPORTED_BUILTIN, e, "the builtin '%s' is not part of the model language", e->name);
    } else {
        const char **names;
        int n = dsl_scope_names(s, fr->scope, &names);
        const char *hint = dsl_suggest(e->name, names, n);
        id = dsl_error(s, CV_E_DSL_UNDEFINED_NAME, e, "name '%s' is not defined%s%s%s", e->name,
                       hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
    }
    /* Later uses of the same name are consequences of this report. */
    dsl_val *err = dsl_v_error(s, id);
    dsl_scope_set(s, s->globals, e->name, err);
    return err;
}

DSL_NOINLINE static dsl_val *constant(dsl_sema *s, const dsl_node *e)
{
    switch ((dsl_const_kind)e->op) {
    case DSL_C_INT: return dsl_v_int(s, e->ival);
    case DSL_C_FLOAT: return dsl_v_float(s, e->fval);
    case DSL_C_STR: return dsl_v_str(s, e->sval, e->slen);
    case DSL_C_TRUE: return dsl_v_bool(s, true);
    case DSL_C_FALSE: return dsl_v_bool(s, false);
    case DSL_C_NONE: return dsl_v_none(s);
    case DSL_C_IMAG: return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "complex numbers are not supported"));
    case DSL_C_BYTES: return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "bytes literals are not supported"));
    case DSL_C_FSTRING: return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "f-strings are not supported"));
    case DSL_C_ELLIPSIS: break;
    }
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "'...' is only supported inside a tensor index"));
}

static const char *const dtype_names[][2] = {
    {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}, {"int8", "i8"},
    {"uint8", "u8"}, {"int32", "i32"}, {"int64", "i64"}, {"bool", "bool"},
};

/* Accepts numpy/torch names (float32) and CU-IR names (f32). */
static cv_dtype dtype_named(const char *name)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strcmp(name, dtype_names[i][0]) == 0 || strcmp(name, dtype_names[i][1]) == 0)
            return cv_dtype_parse(dtype_names[i][1], strlen(dtype_names[i][1]));
    return CV_DT_INVALID;
}

static dsl_val *module_member(dsl_sema *s, const dsl_node *e)
{
    const cv_op_def *def = cv_op_def_lookup(e->name);
    if (def) {
        dsl_val *v = dsl_v_new(s, DSL_V_OP);
        if (v->kind == DSL_V_OP)
            v->op = def;
        return v;
    }
    if (strcmp(e->name, "model") == 0)
        return dsl_v_new(s, DSL_V_MODEL);
    cv_dtype dt = dtype_named(e->name);
    if (dt != CV_DT_INVALID) {
        dsl_val *v = dsl_v_new(s, DSL_V_DTYPE);
        if (v->kind == DSL_V_DTYPE)
            v->dt = dt;
        return v;
    }
    int n = cv_op_def_count();
    const char **names = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *names);
    for (int i = 0; names && i < n; i++)
        names[i] = cv_op_def_at(i)->name;
    const char *hint = names ? dsl_suggest(e->name, names, n) : NULL;
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_OP, e, "cuvil has no op '%s'%s%s%s", e->name,
                                    hint ? "; did you mean 'cvl." : "", hint ? hint : "",
                                    hint ? "'?" : ""));
}

cv_dtype dsl_dtype_named(const char *name) { return dtype_named(name); }

DSL_NOINLINE static dsl_val *member(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    dsl_val *base = dsl_eval(s, fr, e->a);
    switch (base->kind) {
    case DSL_V_ERROR: return base;
    case DSL_V_MODULE: return module_member(s, e);
    case DSL_V_PARAMS: return dsl_params_child(s, e, base, e->name);
    case DSL_V_TENSOR: return dsl_tensor_member(s, e, base, e->name);
    default: {
        char what[96];
        dsl_v_describe(base, what, sizeof what);
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNKNOWN_MEMBER, e, "%s has no member '%s'", what, e->name));
    }
    }
}

/* ---- operators ------------------------------------------------------------ */

DSL_NOINLINE static dsl_val *unary(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    dsl_val *v = dsl_resolve(s, dsl_eval(s, fr, e->a));
    if (v->kind == DSL_V_ERROR)
        return v;
    if (e->op == DSL_X_NOT) {
        bool known, t = dsl_v_truth(v, &known);
        if (known)
            return dsl_v_bool(s, !t);
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, e, "'not' on %s would depend on %s",
                                        v->kind == DSL_V_TENSOR ? "a tensor" : "a symbolic dimension",
                                        v->kind == DSL_V_TENSOR ? "its data" : "the input size"));
    }
    if (v->kind == DSL_V_TENSOR)
        return dsl_tensor_unop(s, e, (dsl_exop)e->op, v);
    if (e->op == DSL_X_POS && dsl_v_is_number(v))
        return v->kind == DSL_V_BOOL ? dsl_v_int(s, v->i) : v;
    if (e->op == DSL_X_NEG && v->kind == DSL_V_FLOAT)
        return dsl_v_float(s, -v->f);
    if ((e->op == DSL_X_NEG || e->op == DSL_X_INVERT) && (v->kind == DSL_V_INT || v->kind == DSL_V_BOOL)) {
        if (e->op == DSL_X_NEG && v->i == INT64_MIN)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, e, "integer overflow in -(%lld)", (long long)v->i));
        return dsl_v_int(s, e->op == DSL_X_NEG ? -v->i : ~v->i);
    }
    if (v->kind == DSL_V_DIM)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_SYMBOLIC_DIM, e, "symbolic dimension %s cannot be negated", v->s));
    char what[96];
    dsl_v_describe(v, what, sizeof what);
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, e, "bad operand for unary %s: %s", dsl_exop_text(e->op), what));
}

DSL_NOINLINE static dsl_val *boolop(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    dsl_val *v = NULL;
    for (int i = 0; i < e->items.n; i++) {
        v = dsl_resolve(s, dsl_eval(s, fr, e->items.v[i]));
        if (v->kind == DSL_V_ERROR)
            return v;
        bool known, t = dsl_v_truth(v, &known);
        if (!known)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, e->items.v[i],
                                            "'%s' on a tensor or symbolic dimension would depend on "
                                            "run-time values", dsl_exop_text(e->op)));
        if ((e->op == DSL_X_AND && !t) || (e->op == DSL_X_OR && t))
            return v;  /* Python returns the deciding operand */
    }
    return v;
}

static bool contains(const dsl_val *hay, const dsl_val *needle, bool *known)
{
    *known = true;
    if (hay->kind == DSL_V_STR && needle->kind == DSL_V_STR)
        return memmem(hay->s, hay->slen, needle->s, needle->slen) != NULL || needle->slen == 0;
    for (int i = 0; i < hay->n; i++) {
        bool k;
        if (dsl_v_equal(hay->items[i], needle, &k) && k)
            return true;
        if (!k)
            *known = false;
    }
    return false;
}

/* One comparison of compile-time values; an error value if it cannot tell. */
static dsl_val *compare_const(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r)
{
    bool known = true, res = false;
    if (op == DSL_X_IS || op == DSL_X_ISNOT) {
        if (l->kind == DSL_V_NONE || r->kind == DSL_V_NONE)
            res = l->kind == r->kind;
        else if (l->kind == DSL_V_TENSOR && r->kind == DSL_V_TENSOR)
            res = l->t == r->t;
        else
            res = dsl_v_equal(l, r, &known);
        return known ? dsl_v_bool(s, op == DSL_X_IS ? res : !res) : NULL;
    }
    if (op == DSL_X_IN || op == DSL_X_NOTIN) {
        if (r->kind != DSL_V_TUPLE && r->kind != DSL_V_LIST && r->kind != DSL_V_STR)
            return NULL;
        res = contains(r, l, &known);
        return known ? dsl_v_bool(s, op == DSL_X_IN ? res : !res) : NULL;
    }
    if (op == DSL_X_EQ || op == DSL_X_NE) {
        res = dsl_v_equal(l, r, &known);
        return known ? dsl_v_bool(s, op == DSL_X_EQ ? res : !res) : NULL;
    }
    int c;
    if (dsl_v_is_number(l) && dsl_v_is_number(r)) {
        double a = dsl_v_num(l), b = dsl_v_num(r);
        if (l->kind != DSL_V_FLOAT && r->kind != DSL_V_FLOAT)
            c = l->i < r->i ? -1 : l->i > r->i;
        else
            c = a < b ? -1 : a > b;
    } else if (l->kind == DSL_V_STR && r->kind == DSL_V_STR) {
        size_t n = l->slen < r->slen ? l->slen : r->slen;
        c = memcmp(l->s, r->s, n);
        if (c == 0)
            c = l->slen < r->slen ? -1 : l->slen > r->slen;
    } else {
        return NULL;
    }
    switch (op) {
    case DSL_X_LT: res = c < 0; break;
    case DSL_X_LE: res = c <= 0; break;
    case DSL_X_GT: res = c > 0; break;
    default: res = c >= 0; break;
    }
    (void)at;
    return dsl_v_bool(s, res);
}

DSL_NOINLINE static dsl_val *compare(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    dsl_val *l = dsl_resolve(s, dsl_eval(s, fr, e->a));
    dsl_val *res = dsl_v_bool(s, true);
    for (int i = 0; i < e->items.n; i++) {
        dsl_val *r = dsl_resolve(s, dsl_eval(s, fr, e->items.v[i]));
        if (l->kind == DSL_V_ERROR)
            return l;
        if (r->kind == DSL_V_ERROR)
            return r;
        dsl_exop op = e->cmp_ops[i];
        bool tensor = (l->kind == DSL_V_TENSOR || r->kind == DSL_V_TENSOR) && op != DSL_X_IS &&
                      op != DSL_X_ISNOT;
        if (tensor && e->items.n == 1)
            return dsl_tensor_binop(s, e, op, l, r);
        if (tensor)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "chained comparisons of tensors are not supported"));
        dsl_val *c = compare_const(s, e, op, l, r);
        if (!c) {
            char a[96], b[96];
            dsl_v_describe(l, a, sizeof a);
            dsl_v_describe(r, b, sizeof b);
            bool dim = l->kind == DSL_V_DIM || r->kind == DSL_V_DIM;
            return dsl_v_error(s, dsl_error(s, dim ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR, e, "cannot compare %s %s %s%s", a,
                                            dsl_exop_text(op), b,
                                            dim ? ": a symbolic dimension is only known at run time" : ""));
        }
        if (!c->i)
            return c;
        res = c;
        l = r;
    }
    return res;
}

DSL_NOINLINE static dsl_val *ifexp(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    dsl_val *t = dsl_resolve(s, dsl_eval(s, fr, e->b));
    if (t->kind == DSL_V_ERROR)
        return t;
    bool known, v = dsl_v_truth(t, &known);
    if (!known)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, e->b, "a conditional expression on %s would depend "
                                        "on run-time values; use cvl.where",
                                        t->kind == DSL_V_TENSOR ? "a tensor" : "a symbolic dimension"));
    return dsl_eval(s, fr, v ? e->a : e->c);
}

/* ---- displays and comprehensions ------------------------------------------ */

DSL_NOINLINE static dsl_val *display(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    int n = e->items.n;
    dsl_val **items = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *items);
    if (!items)
        return dsl_v_error(s, 0);
    for (int i = 0; i < n; i++) {
        const dsl_node *it = e->items.v[i];
        items[i] = it->kind == DSL_N_STARRED
                       ? dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, it, "starred items in a display are not supported"))
                       : dsl_eval(s, fr, it);
    }
    return dsl_v_seq(s, e->kind == DSL_N_LIST ? DSL_V_LIST : DSL_V_TUPLE, items, n);
}

typedef struct comp_out {
    dsl_val **v;
    int n, cap;
    int root;
} comp_out;

static void comp_push(dsl_sema *s, comp_out *o, dsl_val *v)
{
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 16;
        dsl_val **nv = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *nv);
        if (!nv)
            return;
        if (o->n)
            memcpy(nv, o->v, (size_t)o->n * sizeof *nv);
        o->v = nv;
        o->cap = cap;
    }
    o->v[o->n++] = v;
}

static void comp_loop_at(dsl_sema *s, dsl_frame *fr, const dsl_node *e, int gen, comp_out *o);

/* One level per `for` clause, and a comprehension may have any number of
 * them: the nesting budget (DSL_MAX_NEST) bounds the recursion. */
static void comp_loop(dsl_sema *s, dsl_frame *fr, const dsl_node *e, int gen, comp_out *o)
{
    s->nest++;
    if (dsl_step(s, e->items.v[gen]))
        comp_loop_at(s, fr, e, gen, o);
    else
        o->root = s->budget_id > 0 ? s->budget_id : -1;
    s->nest--;
}

static void comp_loop_at(dsl_sema *s, dsl_frame *fr, const dsl_node *e, int gen, comp_out *o)
{
    const dsl_node *g = e->items.v[gen];
    dsl_val **items;
    int n, root;
    if (!dsl_iterate(s, g->b, dsl_eval(s, fr, g->b), CV_E_DSL_COMPREHENSION_OVER_TENSOR, "a comprehension", &items, &n, &root)) {
        o->root = root ? root : -1;
        return;
    }
    for (int k = 0; k < n && !o->root; k++) {
        dsl_assign(s, fr, g->a, items[k]);
        bool keep = true;
        for (int c = 0; c < g->items.n && keep; c++) {
            dsl_val *cond = dsl_resolve(s, dsl_eval(s, fr, g->items.v[c]));
            bool known;
            keep = dsl_v_truth(cond, &known);
            if (cond->kind == DSL_V_ERROR) {
                o->root = cond->root ? cond->root : -1;
                return;
            }
            if (!known) {
                o->root = dsl_error(s, CV_E_DSL_DATA_DEPENDENT_IF, g->items.v[c], "a comprehension condition on a tensor "
                                    "would depend on its data");
                return;
            }
        }
        if (!keep)
            continue;
        if (gen + 1 < e->items.n) {
            comp_loop(s, fr, e, gen + 1, o);
        } else if (o->n >= DSL_MAX_SEQ) {
            o->root = dsl_error(s, CV_E_DSL_TOO_LARGE, e, "a comprehension makes more than %d items", DSL_MAX_SEQ);
        } else {
            comp_push(s, o, dsl_eval(s, fr, e->a));
        }
    }
}

DSL_NOINLINE static dsl_val *comprehension(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    if (e->kind == DSL_N_SETCOMP || e->kind == DSL_N_DICTCOMP)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "%s comprehensions are not supported",
                                        e->kind == DSL_N_SETCOMP ? "set" : "dict"));
    /* The loop variables live in their own scope, as in Python 3. */
    dsl_frame inner = *fr;
    inner.scope = dsl_scope_new(s, fr->scope);
    comp_out o = {0};
    comp_loop(s, &inner, e, 0, &o);
    if (o.root)
        return dsl_v_error(s, o.root > 0 ? o.root : 0);
    return dsl_v_seq(s, e->kind == DSL_N_LISTCOMP ? DSL_V_LIST : DSL_V_TUPLE, o.v, o.n);
}

/* ---- the dispatcher ------------------------------------------------------- */

DSL_NOINLINE static dsl_val *unsupported(dsl_sema *s, const dsl_node *e)
{
    switch (e->kind) {
    case DSL_N_LAMBDA:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_LAMBDA, e, "lambda is not supported; define a helper with def"));
    case DSL_N_DICT: case DSL_N_SET:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "%s displays are not supported",
                                        e->kind == DSL_N_DICT ? "dict" : "set"));
    case DSL_N_YIELD:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, e, "yield is not supported: a model is not a generator"));
    case DSL_N_NAMEDEXPR:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "assignment expressions (:=) are not supported"));
    case DSL_N_AWAIT:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "await is not supported"));
    case DSL_N_STARRED:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "starred expressions are not supported here"));
    default:
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, e, "a slice is only allowed inside [...]"));
    }
}

static dsl_val *eval(dsl_sema *s, dsl_frame *fr, const dsl_node *e);

dsl_val *dsl_eval(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    s->nest++;
    dsl_val *v = dsl_step(s, e) ? eval(s, fr, e) : dsl_v_error(s, s->budget_id > 0 ? s->budget_id : 0);
    s->nest--;
    return v;
}

static dsl_val *eval(dsl_sema *s, dsl_frame *fr, const dsl_node *e)
{
    switch (e->kind) {
    case DSL_N_NAME: {
        dsl_val *v = dsl_scope_get(fr->scope, e->name);
        return v ? v : undefined_name(s, fr, e);
    }
    case DSL_N_CONSTANT: return constant(s, e);
    case DSL_N_ATTRIBUTE: return member(s, fr, e);
    case DSL_N_SUBSCRIPT: return dsl_subscript(s, fr, e, dsl_eval(s, fr, e->a));
    case DSL_N_CALL: return dsl_call(s, fr, e);
    case DSL_N_BINOP: {
        dsl_val *l = dsl_eval(s, fr, e->a);
        dsl_val *r = dsl_eval(s, fr, e->b);
        return dsl_binop(s, e, (dsl_exop)e->op, l, r);
    }
    case DSL_N_UNARYOP: return unary(s, fr, e);
    case DSL_N_BOOLOP: return boolop(s, fr, e);
    case DSL_N_COMPARE: return compare(s, fr, e);
    case DSL_N_IFEXP: return ifexp(s, fr, e);
    case DSL_N_TUPLE: case DSL_N_LIST: return display(s, fr, e);
    case DSL_N_LISTCOMP: case DSL_N_GENEXP: case DSL_N_SETCOMP: case DSL_N_DICTCOMP:
        return comprehension(s, fr, e);
    default: return unsupported(s, e);
    }
}
