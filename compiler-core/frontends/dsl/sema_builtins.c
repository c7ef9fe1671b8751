/* The Python builtins a model may use, evaluated at compile time:
 * range len min max abs int float bool tuple list zip enumerate sum. */
#include <math.h>
#include <string.h>

#include "compiler-core/cuvil.h"
#include "compiler-core/frontends/dsl/sema.h"

static const char *const builtin_names[DSL_B_COUNT] = {
    "range", "len", "min", "max", "abs", "int", "float", "bool", "tuple", "list", "zip",
    "enumerate", "sum",
};

const char *cv_dsl_builtin_at(int i)
{
    return i >= 0 && i < DSL_B_COUNT ? builtin_names[i] : NULL;
}

dsl_scope *dsl_builtins_scope(dsl_sema *s)
{
    dsl_scope *sc = dsl_scope_new(s, NULL);
    for (int b = 0; b < DSL_B_COUNT; b++) {
        dsl_val *v = dsl_v_new(s, DSL_V_BUILTIN);
        if (v->kind == DSL_V_BUILTIN)
            v->i = b;
        dsl_scope_set(s, sc, builtin_names[b], v);
    }
    /* `if __name__ == "__main__":` blocks are skipped, as on import. */
    dsl_scope_set(s, sc, "__name__", dsl_v_str(s, "cuvil_model", 11));
    return sc;
}

static dsl_val *arity(dsl_sema *s, const dsl_node *call, dsl_builtin b, int lo, int hi, int n)
{
    if (n >= lo && n <= hi)
        return NULL;
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, call, "%s() takes %s%d argument%s, got %d",
                                    builtin_names[b], lo == hi ? "" : "at most ", hi,
                                    hi == 1 ? "" : "s", n));
}

static dsl_val *wrong(dsl_sema *s, const dsl_node *at, dsl_builtin b, const dsl_val *v)
{
    char d[96];
    dsl_v_describe(v, d, sizeof d);
    int code = v->kind == DSL_V_DIM ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR;
    return dsl_v_error(s, dsl_error(s, code, at, "%s() cannot take %s%s", builtin_names[b], d,
                                    v->kind == DSL_V_TENSOR ? " (it runs at compile time; use a cvl op)" : ""));
}

static const dsl_node *arg_node(const dsl_node *call, int i)
{
    return i < call->items.n ? call->items.v[i] : call;
}

static dsl_val *range_of(dsl_sema *s, const dsl_node *call, dsl_val **args, int n)
{
    int64_t v[3] = {0, 0, 1};
    for (int i = 0; i < n; i++) {
        if (args[i]->kind != DSL_V_INT && args[i]->kind != DSL_V_BOOL)
            return wrong(s, arg_node(call, i), DSL_B_RANGE, args[i]);
        v[n == 1 ? 1 : i] = args[i]->i;
    }
    if (v[2] == 0)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, arg_node(call, 2), "range() step must not be zero"));
    double count = ceil(((double)v[1] - (double)v[0]) / (double)v[2]);
    if (count > DSL_MAX_UNROLL)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TOO_LARGE, call, "range of %.0f items is too long to unroll "
                                        "(limit %d)", count, DSL_MAX_UNROLL));
    int k = count > 0 ? (int)count : 0;
    dsl_val **items = cv_arena_alloc_array(s->a, (size_t)k + 1, sizeof *items);
    if (!items)
        return dsl_v_error(s, 0);
    for (int i = 0; i < k; i++)
        items[i] = dsl_v_int(s, v[0] + (int64_t)i * v[2]);
    return dsl_v_seq(s, DSL_V_TUPLE, items, k);
}

/* min/max/sum over numbers: the arguments, or the one iterable given. */
static dsl_val *fold(dsl_sema *s, const dsl_node *call, dsl_builtin b, dsl_val **args, int n)
{
    dsl_val **v = args;
    int count = n, root;
    if (n == 1 && (args[0]->kind == DSL_V_TUPLE || args[0]->kind == DSL_V_LIST ||
                   args[0]->kind == DSL_V_TENSOR)) {
        if (!dsl_iterate(s, arg_node(call, 0), args[0], CV_E_DSL_TYPE_ERROR, "sum/min/max", &v, &count, &root))
            return dsl_v_error(s, root);
    }
    if (count == 0 && b != DSL_B_SUM)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, call, "%s() of an empty sequence", builtin_names[b]));
    dsl_val *acc = b == DSL_B_SUM ? dsl_v_int(s, 0) : v[0];
    for (int i = 0; i < count; i++) {
        if (!dsl_v_is_number(v[i]))
            return wrong(s, n == 1 ? arg_node(call, 0) : arg_node(call, i), b, v[i]);
        if (b == DSL_B_SUM) {
            acc = dsl_binop(s, call, DSL_X_ADD, acc, v[i]);
            if (acc->kind == DSL_V_ERROR)
                return acc;
        } else if (b == DSL_B_MIN ? dsl_v_num(v[i]) < dsl_v_num(acc) : dsl_v_num(v[i]) > dsl_v_num(acc)) {
            acc = v[i];
        }
    }
    return acc;
}

static dsl_val *convert(dsl_sema *s, const dsl_node *call, dsl_builtin b, dsl_val *v)
{
    bool known;
    switch (b) {
    case DSL_B_BOOL: {
        bool t = dsl_v_truth(v, &known);
        return known ? dsl_v_bool(s, t) : wrong(s, arg_node(call, 0), b, v);
    }
    case DSL_B_INT:
        if (v->kind == DSL_V_FLOAT) {
            if (!(fabs(v->f) < 9.2e18))
                return dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, call, "int() of %g does not fit in 64 bits", v->f));
            return dsl_v_int(s, (int64_t)v->f);
        }
        return (v->kind == DSL_V_INT || v->kind == DSL_V_BOOL) ? dsl_v_int(s, v->i)
                                                               : wrong(s, arg_node(call, 0), b, v);
    case DSL_B_FLOAT:
        return dsl_v_is_number(v) ? dsl_v_float(s, dsl_v_num(v)) : wrong(s, arg_node(call, 0), b, v);
    case DSL_B_ABS:
        if (v->kind == DSL_V_FLOAT)
            return dsl_v_float(s, fabs(v->f));
        if (v->kind == DSL_V_INT || v->kind == DSL_V_BOOL)
            return v->i == INT64_MIN ? dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, call, "integer overflow"))
                                     : dsl_v_int(s, v->i < 0 ? -v->i : v->i);
        return wrong(s, arg_node(call, 0), b, v);
    default:
        return NULL;
    }
}

static dsl_val *length(dsl_sema *s, const dsl_node *call, dsl_val *v)
{
    switch (v->kind) {
    case DSL_V_TUPLE: case DSL_V_LIST: return dsl_v_int(s, v->n);
    case DSL_V_STR: return dsl_v_int(s, (int64_t)v->slen);
    case DSL_V_TENSOR:
        if (v->t->type.shape.rank > 0)
            return dsl_v_dim(s, v->t->type.shape.d[0]);
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, arg_node(call, 0), "len() of a rank-0 tensor"));
    default: return wrong(s, arg_node(call, 0), DSL_B_LEN, v);
    }
}

/* zip(a, b, ...) and enumerate(a[, start]) as tuples of tuples. */
static dsl_val *pairs(dsl_sema *s, const dsl_node *call, dsl_builtin b, dsl_val **args, int n)
{
    int seqs = b == DSL_B_ENUMERATE ? 1 : n, count = 0, root;
    dsl_val **items[16];
    int lens[16];
    if (seqs > 16)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, call, "zip() of more than 16 sequences"));
    for (int i = 0; i < seqs; i++) {
        if (!dsl_iterate(s, arg_node(call, i), args[i], CV_E_DSL_TYPE_ERROR, builtin_names[b], &items[i], &lens[i], &root))
            return dsl_v_error(s, root);
        count = (i == 0 || lens[i] < count) ? lens[i] : count;
    }
    int64_t start = 0;
    if (b == DSL_B_ENUMERATE && n == 2) {
        if (args[1]->kind != DSL_V_INT)
            return wrong(s, arg_node(call, 1), b, args[1]);
        start = args[1]->i;
    }
    dsl_val **out = cv_arena_alloc_array(s->a, (size_t)count + 1, sizeof *out);
    if (!out)
        return dsl_v_error(s, 0);
    for (int k = 0; k < count; k++) {
        dsl_val *t[16];
        int w = 0;
        if (b == DSL_B_ENUMERATE)
            t[w++] = dsl_v_int(s, start + k);
        for (int i = 0; i < seqs; i++)
            t[w++] = items[i][k];
        out[k] = dsl_v_seq(s, DSL_V_TUPLE, t, w);
    }
    return dsl_v_seq(s, DSL_V_TUPLE, out, count);
}

dsl_val *dsl_call_builtin(dsl_sema *s, const dsl_node *call, dsl_builtin b, dsl_val **args, int n)
{
    for (int i = 0; i < n; i++)
        args[i] = dsl_resolve(s, args[i]);
    int root = dsl_v_first_error(args, n);
    if (root)
        return dsl_v_error(s, root > 0 ? root : 0);
    static const int lo[DSL_B_COUNT] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int hi[DSL_B_COUNT] = {3, 1, 64, 64, 1, 1, 1, 1, 1, 1, 16, 2, 1};
    dsl_val *bad = arity(s, call, b, lo[b], hi[b], n);
    if (bad)
        return bad;
    switch (b) {
    case DSL_B_RANGE: return range_of(s, call, args, n);
    case DSL_B_LEN: return length(s, call, args[0]);
    case DSL_B_MIN: case DSL_B_MAX: case DSL_B_SUM: return fold(s, call, b, args, n);
    case DSL_B_ZIP: case DSL_B_ENUMERATE: return pairs(s, call, b, args, n);
    case DSL_B_TUPLE: case DSL_B_LIST: {
        dsl_val **items;
        int count;
        if (!dsl_iterate(s, arg_node(call, 0), args[0], CV_E_DSL_TYPE_ERROR, builtin_names[b], &items, &count, &root))
            return dsl_v_error(s, root);
        return dsl_v_seq(s, b == DSL_B_LIST ? DSL_V_LIST : DSL_V_TUPLE, items, count);
    }
    default: return convert(s, call, b, args[0]);
    }
}
