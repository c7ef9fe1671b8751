/* Compile-time values and scopes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

dsl_val *dsl_v_new(dsl_sema *s, dsl_vkind k)
{
    static dsl_val oom = {.kind = DSL_V_ERROR};  /* the arena ran out: an error, root 0 */
    dsl_val *v = cv_arena_alloc(s->a, sizeof *v);
    if (!v)
        return &oom;
    v->kind = k;
    return v;
}

dsl_val *dsl_v_error(dsl_sema *s, int root)
{
    dsl_val *v = dsl_v_new(s, DSL_V_ERROR);
    if (v->kind == DSL_V_ERROR && root)
        v->root = root;
    return v;
}

dsl_val *dsl_v_none(dsl_sema *s) { return dsl_v_new(s, DSL_V_NONE); }

dsl_val *dsl_v_bool(dsl_sema *s, bool b)
{
    dsl_val *v = dsl_v_new(s, DSL_V_BOOL);
    if (v->kind == DSL_V_BOOL)
        v->i = b;
    return v;
}

dsl_val *dsl_v_int(dsl_sema *s, int64_t i)
{
    dsl_val *v = dsl_v_new(s, DSL_V_INT);
    if (v->kind == DSL_V_INT)
        v->i = i;
    return v;
}

dsl_val *dsl_v_float(dsl_sema *s, double f)
{
    dsl_val *v = dsl_v_new(s, DSL_V_FLOAT);
    if (v->kind == DSL_V_FLOAT)
        v->f = f;
    return v;
}

dsl_val *dsl_v_str(dsl_sema *s, const char *p, size_t n)
{
    dsl_val *v = dsl_v_new(s, DSL_V_STR);
    if (v->kind != DSL_V_STR)
        return v;
    char *c = cv_arena_alloc(s->a, n + 1);
    if (c && n)
        memcpy(c, p, n);
    v->s = c ? c : "";
    v->slen = c ? n : 0;
    return v;
}

dsl_val *dsl_v_seq(dsl_sema *s, dsl_vkind k, dsl_val **items, int n)
{
    dsl_val *v = dsl_v_new(s, k);
    if (v->kind != k)
        return v;
    v->items = n ? cv_arena_memdup(s->a, items, (size_t)n * sizeof *items) : NULL;
    v->n = v->items || !n ? n : 0;
    return v;
}

dsl_val *dsl_v_tensor(dsl_sema *s, cv_value *t)
{
    dsl_val *v = dsl_v_new(s, DSL_V_TENSOR);
    if (v->kind == DSL_V_TENSOR)
        v->t = t;
    return v;
}

dsl_val *dsl_v_dim(dsl_sema *s, cv_dim d)
{
    if (!d.sym)
        return dsl_v_int(s, d.n);
    dsl_val *v = dsl_v_new(s, DSL_V_DIM);
    if (v->kind == DSL_V_DIM)
        v->s = d.sym;
    return v;
}

void dsl_v_describe(const dsl_val *v, char *buf, size_t size)
{
    switch (v->kind) {
    case DSL_V_ERROR: snprintf(buf, size, "an erroneous value"); break;
    case DSL_V_NONE: snprintf(buf, size, "None"); break;
    case DSL_V_BOOL: snprintf(buf, size, "bool %s", v->i ? "True" : "False"); break;
    case DSL_V_INT: snprintf(buf, size, "int %lld", (long long)v->i); break;
    case DSL_V_FLOAT: snprintf(buf, size, "float %g", v->f); break;
    case DSL_V_STR: snprintf(buf, size, "str '%.*s'", (int)(v->slen > 32 ? 32 : v->slen), v->s); break;
    case DSL_V_TUPLE: snprintf(buf, size, "a tuple of %d", v->n); break;
    case DSL_V_LIST: snprintf(buf, size, "a list of %d", v->n); break;
    case DSL_V_DIM: snprintf(buf, size, "symbolic dimension %s", v->s); break;
    case DSL_V_TENSOR: {
        char t[96];
        cv_type_format(&v->t->type, t, sizeof t);
        snprintf(buf, size, "tensor %s", t);
        break;
    }
    case DSL_V_FUNC: snprintf(buf, size, "function %s", v->fn->name); break;
    case DSL_V_MODULE: snprintf(buf, size, "module cuvil"); break;
    case DSL_V_OP: snprintf(buf, size, "op cvl.%s", v->op->name); break;
    case DSL_V_MODEL: snprintf(buf, size, "the cvl.model decorator"); break;
    case DSL_V_PARAMS: snprintf(buf, size, v->s[0] ? "weights group '%s'" : "the weights", v->s); break;
    case DSL_V_BUILTIN: snprintf(buf, size, "a builtin function"); break;
    case DSL_V_DTYPE: snprintf(buf, size, "dtype %s", cv_dtype_name(v->dt)); break;
    }
}

bool dsl_v_is_number(const dsl_val *v)
{
    return v->kind == DSL_V_BOOL || v->kind == DSL_V_INT || v->kind == DSL_V_FLOAT;
}

double dsl_v_num(const dsl_val *v) { return v->kind == DSL_V_FLOAT ? v->f : (double)v->i; }

bool dsl_v_truth(const dsl_val *v, bool *known)
{
    *known = true;
    switch (v->kind) {
    case DSL_V_NONE: return false;
    case DSL_V_BOOL: case DSL_V_INT: return v->i != 0;
    case DSL_V_FLOAT: return v->f != 0.0;
    case DSL_V_STR: return v->slen != 0;
    case DSL_V_TUPLE: case DSL_V_LIST: return v->n != 0;
    case DSL_V_FUNC: case DSL_V_MODULE: case DSL_V_OP: case DSL_V_MODEL: case DSL_V_BUILTIN:
    case DSL_V_DTYPE:
        return true;
    default:
        *known = false;  /* tensors, dims, weights, errors */
        return false;
    }
}

int dsl_v_first_error(dsl_val *const *vals, int n)
{
    for (int i = 0; i < n; i++)
        if (vals[i] && vals[i]->kind == DSL_V_ERROR)
            return vals[i]->root ? vals[i]->root : -1;
    return 0;
}

/* 1 equal, 0 not, -1 unknown, 2 sequences of the same kind and length
 * (equal when their items are). */
static int equal_shallow(const dsl_val *a, const dsl_val *b)
{
    if (dsl_v_is_number(a) && dsl_v_is_number(b)) {
        if (a->kind != DSL_V_FLOAT && b->kind != DSL_V_FLOAT)
            return a->i == b->i;
        return dsl_v_num(a) == dsl_v_num(b);
    }
    if (a->kind == DSL_V_DIM && b->kind == DSL_V_DIM && strcmp(a->s, b->s) == 0)
        return 1;
    if (a->kind == DSL_V_DIM || b->kind == DSL_V_DIM || a->kind == DSL_V_TENSOR ||
        b->kind == DSL_V_TENSOR || a->kind == DSL_V_ERROR || b->kind == DSL_V_ERROR ||
        a->kind == DSL_V_PARAMS || b->kind == DSL_V_PARAMS)
        return -1;
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case DSL_V_NONE: case DSL_V_MODULE: case DSL_V_MODEL: return 1;
    case DSL_V_STR: return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0;
    case DSL_V_TUPLE: case DSL_V_LIST: return a->n == b->n ? 2 : 0;
    case DSL_V_FUNC: return a->fn == b->fn;
    case DSL_V_OP: return a->op == b->op;
    case DSL_V_BUILTIN: return a->i == b->i;
    case DSL_V_DTYPE: return a->dt == b->dt;
    default: return 0;
    }
}

typedef struct val_pair {
    const dsl_val *a, *b;
} val_pair;

/* Items are compared in order with an explicit stack: a compile-time loop
 * can nest a tuple as deep as it runs (t = (t,)), deeper than the C stack. */
bool dsl_v_equal(const dsl_val *a, const dsl_val *b, bool *known)
{
    val_pair *st = malloc(16 * sizeof *st);   /* owned */
    size_t n = 0, cap = 16;
    int r = st ? 1 : -1;
    if (st)
        st[n++] = (val_pair){a, b};
    while (r == 1 && n) {
        val_pair p = st[--n];
        r = equal_shallow(p.a, p.b);
        if (r != 2)
            continue;
        r = 1;
        if (n + (size_t)p.a->n > cap) {
            size_t want = (n + (size_t)p.a->n) * 2;
            val_pair *v = realloc(st, want * sizeof *v);
            if (!v) {
                r = -1;
                break;
            }
            st = v;
            cap = want;
        }
        for (int i = p.a->n - 1; i >= 0; i--)
            st[n++] = (val_pair){p.a->items[i], p.b->items[i]};
    }
    free(st);
    *known = r >= 0;
    return r == 1;
}

/* ---- scopes --------------------------------------------------------------- */

dsl_scope *dsl_scope_new(dsl_sema *s, dsl_scope *parent)
{
    dsl_scope *sc = cv_arena_alloc(s->a, sizeof *sc);
    if (sc)
        sc->parent = parent;
    return sc;
}

void dsl_scope_set(dsl_sema *s, dsl_scope *sc, const char *name, dsl_val *v)
{
    if (!sc)
        return;
    for (int i = 0; i < sc->n; i++)
        if (strcmp(sc->v[i].name, name) == 0) {
            sc->v[i].val = v;
            return;
        }
    if (sc->n == sc->cap) {
        int cap = sc->cap ? sc->cap * 2 : 16;
        dsl_binding *b = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *b);
        if (!b)
            return;
        if (sc->n)
            memcpy(b, sc->v, (size_t)sc->n * sizeof *b);
        sc->v = b;
        sc->cap = cap;
    }
    sc->v[sc->n].name = name;
    sc->v[sc->n].val = v;
    sc->n++;
}

dsl_val *dsl_scope_get(const dsl_scope *sc, const char *name)
{
    for (; sc; sc = sc->parent)
        for (int i = sc->n - 1; i >= 0; i--)
            if (strcmp(sc->v[i].name, name) == 0)
                return sc->v[i].val;
    return NULL;
}

int dsl_scope_names(dsl_sema *s, const dsl_scope *sc, const char ***out)
{
    int n = 0;
    for (const dsl_scope *p = sc; p; p = p->parent)
        n += p->n;
    const char **v = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *v);
    if (!v) {
        *out = NULL;
        return 0;
    }
    int k = 0;
    for (const dsl_scope *p = sc; p; p = p->parent)
        for (int i = 0; i < p->n; i++)
            v[k++] = p->v[i].name;
    *out = v;
    return k;
}
