/* Compile-time arithmetic with Python's rules (int overflow is an error,
 * not a bignum), iteration, and subscripts of tuples, lists, strings,
 * weights and tensors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

static dsl_val *const_error(dsl_sema *s, const dsl_node *at, const char *what)
{
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_CONSTANT_ERROR, at, "%s in a constant expression", what));
}

static bool ipow(int64_t b, int64_t e, int64_t *out)
{
    int64_t r = 1;
    while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(r, b, &r))
            return false;
        e >>= 1;
        if (e && __builtin_mul_overflow(b, b, &b))
            return false;
    }
    *out = r;
    return true;
}

static dsl_val *int_op(dsl_sema *s, const dsl_node *at, dsl_exop op, int64_t a, int64_t b)
{
    int64_t r = 0;
    bool ok = true;
    switch (op) {
    case DSL_X_ADD: ok = !__builtin_add_overflow(a, b, &r); break;
    case DSL_X_SUB: ok = !__builtin_sub_overflow(a, b, &r); break;
    case DSL_X_MUL: ok = !__builtin_mul_overflow(a, b, &r); break;
    case DSL_X_DIV:
        if (b == 0)
            return const_error(s, at, "division by zero");
        return dsl_v_float(s, (double)a / (double)b);
    case DSL_X_FLOORDIV: case DSL_X_MOD:
        if (b == 0)
            return const_error(s, at, "division by zero");
        if (a == INT64_MIN && b == -1)
            return const_error(s, at, "integer overflow");
        r = op == DSL_X_FLOORDIV ? a / b - ((a % b != 0) && ((a < 0) != (b < 0))) : a % b;
        if (op == DSL_X_MOD && r != 0 && ((r < 0) != (b < 0)))
            r += b;
        break;
    case DSL_X_POW:
        if (b < 0)
            return dsl_v_float(s, pow((double)a, (double)b));
        ok = ipow(a, b, &r);
        break;
    case DSL_X_LSHIFT:
        if (b < 0)
            return const_error(s, at, "negative shift count");
        ok = b < 63 && (a == 0 || (a > 0 ? a <= (INT64_MAX >> b) : a >= (INT64_MIN >> b)));
        r = ok ? (int64_t)((uint64_t)a << b) : 0;
        break;
    case DSL_X_RSHIFT:
        if (b < 0)
            return const_error(s, at, "negative shift count");
        r = b >= 63 ? (a < 0 ? -1 : 0) : a >> b;
        break;
    case DSL_X_BITAND: r = a & b; break;
    case DSL_X_BITOR: r = a | b; break;
    case DSL_X_BITXOR: r = a ^ b; break;
    default: return NULL;
    }
    return ok ? dsl_v_int(s, r) : const_error(s, at, "integer overflow");
}

static dsl_val *float_op(dsl_sema *s, const dsl_node *at, dsl_exop op, double a, double b)
{
    switch (op) {
    case DSL_X_ADD: return dsl_v_float(s, a + b);
    case DSL_X_SUB: return dsl_v_float(s, a - b);
    case DSL_X_MUL: return dsl_v_float(s, a * b);
    case DSL_X_DIV:
        return b == 0 ? const_error(s, at, "float division by zero") : dsl_v_float(s, a / b);
    case DSL_X_FLOORDIV:
        return b == 0 ? const_error(s, at, "float division by zero") : dsl_v_float(s, floor(a / b));
    case DSL_X_MOD: {
        if (b == 0)
            return const_error(s, at, "float modulo by zero");
        double m = fmod(a, b);
        return dsl_v_float(s, (m != 0 && ((m < 0) != (b < 0))) ? m + b : m);
    }
    case DSL_X_POW: return dsl_v_float(s, pow(a, b));
    default: return NULL;
    }
}

/* Concatenation and repetition of strings, tuples and lists. */
static dsl_val *seq_op(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r)
{
    if (op == DSL_X_ADD && l->kind == r->kind && l->kind == DSL_V_STR) {
        char *buf = cv_arena_alloc(s->a, l->slen + r->slen + 1);
        if (!buf)
            return dsl_v_error(s, 0);
        memcpy(buf, l->s, l->slen);
        memcpy(buf + l->slen, r->s, r->slen);
        return dsl_v_str(s, buf, l->slen + r->slen);
    }
    bool seq_l = l->kind == DSL_V_TUPLE || l->kind == DSL_V_LIST;
    if (op == DSL_X_ADD && seq_l && l->kind == r->kind) {
        if (l->n + r->n > DSL_MAX_SEQ)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_TOO_LARGE, at, "a sequence longer than %d", DSL_MAX_SEQ));
        dsl_val **v = cv_arena_alloc_array(s->a, (size_t)(l->n + r->n) + 1, sizeof *v);
        if (!v)
            return dsl_v_error(s, 0);
        for (int i = 0; i < l->n; i++)
            v[i] = l->items[i];
        for (int i = 0; i < r->n; i++)
            v[l->n + i] = r->items[i];
        return dsl_v_seq(s, l->kind, v, l->n + r->n);
    }
    if (op == DSL_X_MUL && seq_l && (r->kind == DSL_V_INT || r->kind == DSL_V_BOOL)) {
        int64_t times = r->i < 0 ? 0 : r->i;
        if (l->n && times > DSL_MAX_SEQ / l->n)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_TOO_LARGE, at, "a sequence longer than %d", DSL_MAX_SEQ));
        int n = l->n * (int)times;
        dsl_val **v = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *v);
        if (!v)
            return dsl_v_error(s, 0);
        for (int i = 0; i < n; i++)
            v[i] = l->items[i % l->n];
        return dsl_v_seq(s, l->kind, v, n);
    }
    return NULL;
}

dsl_val *dsl_binop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r)
{
    l = dsl_resolve(s, l);
    r = dsl_resolve(s, r);
    if (l->kind == DSL_V_ERROR)
        return l;
    if (r->kind == DSL_V_ERROR)
        return r;
    if (l->kind == DSL_V_TENSOR || r->kind == DSL_V_TENSOR)
        return dsl_tensor_binop(s, at, op, l, r);
    dsl_val *res = NULL;
    if (dsl_v_is_number(l) && dsl_v_is_number(r)) {
        if (l->kind != DSL_V_FLOAT && r->kind != DSL_V_FLOAT)
            res = int_op(s, at, op, l->i, r->i);
        else
            res = float_op(s, at, op, dsl_v_num(l), dsl_v_num(r));
    } else if (l->kind == DSL_V_TUPLE && r->kind == DSL_V_LIST) {
        res = NULL;
    } else {
        res = seq_op(s, at, op, l, r);
        if (!res && op == DSL_X_MUL && (l->kind == DSL_V_INT || l->kind == DSL_V_BOOL))
            res = seq_op(s, at, op, r, l);
    }
    if (res)
        return res;
    char a[96], b[96];
    dsl_v_describe(l, a, sizeof a);
    dsl_v_describe(r, b, sizeof b);
    if (l->kind == DSL_V_DIM || r->kind == DSL_V_DIM)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_SYMBOLIC_DIM, at, "cannot compute %s %s %s: a symbolic dimension "
                                        "is only known at run time", a, dsl_exop_text(op), b));
    return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, at, "unsupported operands for %s: %s and %s",
                                    dsl_exop_text(op), a, b));
}

/* ---- iteration ------------------------------------------------------------ */

bool dsl_iterate(dsl_sema *s, const dsl_node *at, dsl_val *it, int tensor_code, const char *what,
                 dsl_val ***items, int *n, int *root)
{
    it = dsl_resolve(s, it);
    *root = 0;
    switch (it->kind) {
    case DSL_V_TUPLE: case DSL_V_LIST:
        *items = it->items;
        *n = it->n;
        return true;
    case DSL_V_STR: {
        dsl_val **v = cv_arena_alloc_array(s->a, it->slen + 1, sizeof *v);
        if (!v)
            return false;
        for (size_t i = 0; i < it->slen; i++)
            v[i] = dsl_v_str(s, it->s + i, 1);
        *items = v;
        *n = (int)it->slen;
        return true;
    }
    case DSL_V_ERROR:
        *root = it->root;
        return false;
    case DSL_V_TENSOR:
        *root = dsl_error(s, tensor_code, at, "%s iterates over a tensor: the number of iterations "
                          "would depend on data; iterate over range(CONST)", what);
        return false;
    default: {
        char d[96];
        dsl_v_describe(it, d, sizeof d);
        *root = dsl_error(s, it->kind == DSL_V_DIM ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR, at, "%s cannot iterate over %s",
                          what, d);
        return false;
    }
    }
}

/* ---- subscripts ----------------------------------------------------------- */

/* A constant int for an index or slice bound; NULL node gives "absent". */
static bool index_int(dsl_sema *s, dsl_frame *fr, const dsl_node *n, bool *present, int64_t *out,
                      int *root)
{
    *present = false;
    if (!n)
        return true;
    dsl_val *v = dsl_resolve(s, dsl_eval(s, fr, n));
    if (v->kind == DSL_V_ERROR) {
        *root = v->root ? v->root : -1;
        return false;
    }
    if (v->kind == DSL_V_NONE)
        return true;
    if (v->kind == DSL_V_INT || v->kind == DSL_V_BOOL) {
        *present = true;
        *out = v->i;
        return true;
    }
    char d[96];
    dsl_v_describe(v, d, sizeof d);
    if (v->kind == DSL_V_TENSOR)
        *root = dsl_error(s, CV_E_DSL_UNSUPPORTED_EXPRESSION, n, "indexing with a tensor is data-dependent; use cvl.gather");
    else
        *root = dsl_error(s, v->kind == DSL_V_DIM ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR, n, "an index must be a constant int, "
                          "got %s", d);
    return false;
}

static bool index_item(dsl_sema *s, dsl_frame *fr, const dsl_node *n, dsl_index *ix, int *root)
{
    memset(ix, 0, sizeof *ix);
    ix->node = n;
    ix->step = 1;
    bool present;
    if (n->kind == DSL_N_CONSTANT && n->op == DSL_C_ELLIPSIS) {
        ix->kind = DSL_IX_ELLIPSIS;
        return true;
    }
    if (n->kind == DSL_N_CONSTANT && n->op == DSL_C_NONE) {
        ix->kind = DSL_IX_NEWAXIS;
        return true;
    }
    if (n->kind != DSL_N_SLICE) {
        ix->kind = DSL_IX_INT;
        if (!index_int(s, fr, n, &present, &ix->i, root))
            return false;
        if (!present)
            *root = dsl_error(s, CV_E_DSL_TYPE_ERROR, n, "an index must be a constant int, got None");
        return present;
    }
    ix->kind = DSL_IX_SLICE;
    bool ok = index_int(s, fr, n->a, &ix->has_lo, &ix->lo, root) &&
              index_int(s, fr, n->b, &ix->has_hi, &ix->hi, root) &&
              index_int(s, fr, n->c, &present, &ix->step, root);
    if (ok && ix->step == 0) {
        *root = dsl_error(s, CV_E_DSL_INDEX_ERROR, n, "slice step cannot be zero");
        return false;
    }
    return ok;
}

/* Python's slice.indices for a sequence of length len. */
static int slice_take(const dsl_index *ix, int64_t len, int64_t *start_out)
{
    int64_t step = ix->step, lo, hi;
    if (step > 0) {
        lo = !ix->has_lo ? 0 : ix->lo < 0 ? (ix->lo + len < 0 ? 0 : ix->lo + len) : (ix->lo > len ? len : ix->lo);
        hi = !ix->has_hi ? len : ix->hi < 0 ? (ix->hi + len < 0 ? 0 : ix->hi + len) : (ix->hi > len ? len : ix->hi);
        *start_out = lo;
        return hi > lo ? (int)((hi - lo + step - 1) / step) : 0;
    }
    lo = !ix->has_lo ? len - 1 : ix->lo < 0 ? (ix->lo + len < 0 ? -1 : ix->lo + len) : (ix->lo >= len ? len - 1 : ix->lo);
    hi = !ix->has_hi ? -1 : ix->hi < 0 ? (ix->hi + len < 0 ? -1 : ix->hi + len) : (ix->hi >= len ? len - 1 : ix->hi);
    *start_out = lo;
    return lo > hi ? (int)((lo - hi + (-step) - 1) / (-step)) : 0;
}

static dsl_val *seq_index(dsl_sema *s, const dsl_node *e, dsl_val *base, const dsl_index *ix, int n)
{
    int64_t len = base->kind == DSL_V_STR ? (int64_t)base->slen : base->n;
    if (n != 1 || (ix->kind != DSL_IX_INT && ix->kind != DSL_IX_SLICE))
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, e->b, "%s indices must be one int or slice",
                                        base->kind == DSL_V_STR ? "str" : "tuple and list"));
    if (ix->kind == DSL_IX_INT) {
        int64_t i = ix->i < 0 ? ix->i + len : ix->i;
        if (i < 0 || i >= len)
            return dsl_v_error(s, dsl_error(s, CV_E_DSL_INDEX_ERROR, e->b, "index %lld is out of range for a %s of "
                                            "length %lld", (long long)ix->i,
                                            base->kind == DSL_V_STR ? "str" : "sequence", (long long)len));
        return base->kind == DSL_V_STR ? dsl_v_str(s, base->s + i, 1) : base->items[i];
    }
    int64_t start;
    int count = slice_take(ix, len, &start);
    dsl_val **v = cv_arena_alloc_array(s->a, (size_t)count + 1, sizeof *v);
    char *str = base->kind == DSL_V_STR ? cv_arena_alloc(s->a, (size_t)count + 1) : NULL;
    if (!v || (base->kind == DSL_V_STR && !str))
        return dsl_v_error(s, 0);
    for (int k = 0; k < count; k++) {
        int64_t at = start + k * ix->step;
        if (str)
            str[k] = base->s[at];
        else
            v[k] = base->items[at];
    }
    return str ? dsl_v_str(s, str, (size_t)count) : dsl_v_seq(s, base->kind, v, count);
}

/* p.fc[0] and p["conv1.weight"]: the index is one more key component. */
static dsl_val *params_index(dsl_sema *s, dsl_frame *fr, const dsl_node *e, dsl_val *p)
{
    dsl_val *k = dsl_eval(s, fr, e->b);
    char buf[32];
    switch (k->kind) {
    case DSL_V_ERROR: return k;
    case DSL_V_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)k->i);
        return dsl_params_child(s, e, p, cv_arena_strdup(s->a, buf));
    case DSL_V_STR:
        return dsl_params_child(s, e, p, cv_arena_strndup(s->a, k->s, k->slen));
    default: {
        char d[96];
        dsl_v_describe(k, d, sizeof d);
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, e->b, "weights are indexed by an int or a str, "
                                        "not %s", d));
    }
    }
}

enum { MAX_INDEX_ITEMS = 2 * CV_MAX_RANK };

dsl_val *dsl_subscript(dsl_sema *s, dsl_frame *fr, const dsl_node *e, dsl_val *base)
{
    if (base->kind == DSL_V_PARAMS && !dsl_params_is_tensor(s, base))
        return params_index(s, fr, e, base);
    base = dsl_resolve(s, base);
    const dsl_node *const *nodes = (const dsl_node *const *)&e->b;
    int n = 1;
    if (e->b->kind == DSL_N_TUPLE && base->kind == DSL_V_TENSOR) {
        nodes = (const dsl_node *const *)e->b->items.v;
        n = e->b->items.n;
    }
    if (n > MAX_INDEX_ITEMS)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_INDEX_ERROR, e->b, "more than %d indices", MAX_INDEX_ITEMS));
    dsl_index ix[MAX_INDEX_ITEMS];
    int root = 0;
    for (int i = 0; i < n; i++) {
        int r = 0;
        if (!index_item(s, fr, nodes[i], &ix[i], &r) && !root)
            root = r ? r : -1;
    }
    if (base->kind == DSL_V_ERROR)
        return base;
    if (root)
        return dsl_v_error(s, root > 0 ? root : 0);
    switch (base->kind) {
    case DSL_V_TENSOR: return dsl_tensor_index(s, e, base, ix, n);
    case DSL_V_TUPLE: case DSL_V_LIST: case DSL_V_STR: return seq_index(s, e, base, ix, n);
    default: {
        char d[96];
        dsl_v_describe(base, d, sizeof d);
        return dsl_v_error(s, dsl_error(s, base->kind == DSL_V_DIM ? CV_E_DSL_SYMBOLIC_DIM : CV_E_DSL_TYPE_ERROR, e,
                                        "%s cannot be indexed", d));
    }
    }
}
