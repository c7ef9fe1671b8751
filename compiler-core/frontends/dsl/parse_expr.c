/* Expressions: Python's precedence climbing from lambda / conditional
 * down to atoms, with calls, subscripts, slices, comprehensions and
 * displays.  Recursion is bounded by DSL_MAX_EXPR_DEPTH. */
#include <string.h>

#include "compiler-core/frontends/dsl/parse_internal.h"

static bool enter(dsl_parser *p)
{
    if (p->failed)
        return false;
    if (p->depth >= DSL_MAX_EXPR_DEPTH) {
        ps_error_at(p, CV_E_NESTING_TOO_DEEP, ps_tok(p), "expression nested deeper than %d levels", DSL_MAX_EXPR_DEPTH);
        return false;
    }
    p->depth++;
    return true;
}

static dsl_node *leave(dsl_parser *p, dsl_node *n)
{
    p->depth--;
    return p->failed ? NULL : n;
}

/* A node that starts where `first` starts. */
static dsl_node *node_from(dsl_parser *p, dsl_node_kind kind, const dsl_node *first)
{
    return dsl_node_new(p->a, kind, first->line, first->col);
}

static bool starts_expr(const dsl_tok *t)
{
    switch (t->kind) {
    case DSL_T_NAME: case DSL_T_INT: case DSL_T_FLOAT: case DSL_T_IMAG: case DSL_T_STRING:
        return true;
    case DSL_T_KEYWORD:
        return t->sub == DSL_KW_NOT || t->sub == DSL_KW_LAMBDA || t->sub == DSL_KW_AWAIT ||
               t->sub == DSL_KW_TRUE || t->sub == DSL_KW_FALSE || t->sub == DSL_KW_NONE;
    case DSL_T_OP:
        return t->sub == DSL_OP_LPAR || t->sub == DSL_OP_LSQB || t->sub == DSL_OP_LBRACE ||
               t->sub == DSL_OP_MINUS || t->sub == DSL_OP_PLUS || t->sub == DSL_OP_TILDE ||
               t->sub == DSL_OP_STAR || t->sub == DSL_OP_ELLIPSIS;
    default:
        return false;
    }
}

/* ---- atoms ---------------------------------------------------------------- */

static dsl_node *strings(dsl_parser *p)
{
    const dsl_tok *first = ps_tok(p);
    size_t total = 0;
    unsigned flags = 0;
    bool mixed = false;
    int count = 0;
    for (const dsl_tok *s; (s = ps_peek(p, count))->kind == DSL_T_STRING; count++) {
        if ((s->sflags ^ first->sflags) & DSL_STR_BYTES)
            mixed = true;
        flags |= s->sflags;
        total += s->slen;
    }
    char *buf = cv_arena_alloc(p->a, total + 1);
    if (!buf)
        return NULL;
    size_t at = 0;
    for (int k = 0; k < count; k++, ps_advance(p)) {
        memcpy(buf + at, ps_tok(p)->sval, ps_tok(p)->slen);
        at += ps_tok(p)->slen;
    }
    dsl_node *n = ps_node_at(p, DSL_N_CONSTANT, first);
    n->op = (flags & DSL_STR_BYTES) ? DSL_C_BYTES : (flags & DSL_STR_FORMAT) ? DSL_C_FSTRING : DSL_C_STR;
    n->sval = buf;
    n->slen = total;
    ps_finish(p, n);
    if (mixed)
        ps_error_soft(p, CV_E_UNEXPECTED_TOKEN, n, "cannot mix bytes and str literals");
    return n;
}

static dsl_node *star_or_named(dsl_parser *p)
{
    if (ps_is_op(p, DSL_OP_STAR)) {
        dsl_node *s = ps_node_at(p, DSL_N_STARRED, ps_tok(p));
        ps_advance(p);
        s->a = ps_expr(p);
        return s->a ? ps_finish(p, s) : NULL;
    }
    return ps_namedexpr(p);
}

/* `for target in iter [if cond]...` clauses after elt; n gets them. */
static dsl_node *comprehension(dsl_parser *p, dsl_node_kind kind, dsl_node *n, dsl_node *elt)
{
    n->kind = kind;
    n->a = elt;
    while (ps_is_kw(p, DSL_KW_FOR) && !p->failed) {
        dsl_node *c = ps_node_at(p, DSL_N_COMPREHENSION, ps_tok(p));
        ps_advance(p);
        c->a = ps_exprlist(p);
        if (!c->a || !ps_check_target(p, c->a, false))
            return NULL;
        if (!ps_accept_kw(p, DSL_KW_IN)) {
            ps_expected(p, "'in'");
            return NULL;
        }
        c->b = ps_or_test(p);
        while (c->b && ps_accept_kw(p, DSL_KW_IF)) {
            dsl_node *cond = ps_or_test(p);
            if (!cond)
                return NULL;
            dsl_list_push(p->a, &c->items, cond);
        }
        if (p->failed)
            return NULL;
        dsl_list_push(p->a, &n->items, ps_finish(p, c));
    }
    return p->failed ? NULL : n;
}

/* Elements of a display up to `close`; first is already parsed. */
static bool display_rest(dsl_parser *p, dsl_node *n, dsl_node *first, int close)
{
    dsl_list_push(p->a, &n->items, first);
    while (ps_accept_op(p, DSL_OP_COMMA) && !ps_is_op(p, close)) {
        dsl_node *e = star_or_named(p);
        if (!e)
            return false;
        dsl_list_push(p->a, &n->items, e);
    }
    return ps_expect_op(p, close);
}

static dsl_node *paren_or_list(dsl_parser *p, bool list)
{
    const dsl_tok *open = ps_tok(p);
    int close = list ? DSL_OP_RSQB : DSL_OP_RPAR;
    ps_advance(p);
    dsl_node *n = ps_node_at(p, list ? DSL_N_LIST : DSL_N_TUPLE, open);
    if (ps_accept_op(p, close))
        return ps_finish(p, n);
    if (!list && ps_is_kw(p, DSL_KW_YIELD)) {
        dsl_node *y = ps_node_at(p, DSL_N_YIELD, ps_tok(p));
        ps_advance(p);
        y->op = ps_accept_kw(p, DSL_KW_FROM);
        if (ps_tok(p)->kind != DSL_T_OP || ps_tok(p)->sub != DSL_OP_RPAR)
            y->a = ps_testlist(p);
        ps_finish(p, y);
        return ps_expect_op(p, close) ? y : NULL;
    }
    dsl_node *first = star_or_named(p);
    if (!first)
        return NULL;
    if (ps_is_kw(p, DSL_KW_FOR)) {
        if (!comprehension(p, list ? DSL_N_LISTCOMP : DSL_N_GENEXP, n, first) || !ps_expect_op(p, close))
            return NULL;
        return ps_finish(p, n);
    }
    if (!list && !ps_is_op(p, DSL_OP_COMMA))
        return ps_expect_op(p, close) ? first : NULL;  /* parenthesized expression */
    return display_rest(p, n, first, close) ? ps_finish(p, n) : NULL;
}

static bool dict_item(dsl_parser *p, dsl_node *n)
{
    if (ps_accept_op(p, DSL_OP_POW)) {
        dsl_node *v = ps_expr(p);
        dsl_list_push(p->a, &n->items, NULL);
        dsl_list_push(p->a, &n->items2, v);
        return v != NULL;
    }
    dsl_node *k = ps_test(p);
    if (!k || !ps_expect_op(p, DSL_OP_COLON))
        return false;
    dsl_node *v = ps_test(p);
    dsl_list_push(p->a, &n->items, k);
    dsl_list_push(p->a, &n->items2, v);
    return v != NULL;
}

static dsl_node *brace(dsl_parser *p)
{
    const dsl_tok *open = ps_tok(p);
    ps_advance(p);
    dsl_node *n = ps_node_at(p, DSL_N_DICT, open);
    if (ps_accept_op(p, DSL_OP_RBRACE))
        return ps_finish(p, n);
    if (ps_is_op(p, DSL_OP_POW)) {
        if (!dict_item(p, n))
            return NULL;
    } else {
        dsl_node *first = star_or_named(p);
        if (!first)
            return NULL;
        if (!ps_accept_op(p, DSL_OP_COLON)) {
            n->kind = DSL_N_SET;
            if (ps_is_kw(p, DSL_KW_FOR)) {
                if (!comprehension(p, DSL_N_SETCOMP, n, first) || !ps_expect_op(p, DSL_OP_RBRACE))
                    return NULL;
                return ps_finish(p, n);
            }
            return display_rest(p, n, first, DSL_OP_RBRACE) ? ps_finish(p, n) : NULL;
        }
        dsl_node *v = ps_test(p);
        if (!v)
            return NULL;
        if (ps_is_kw(p, DSL_KW_FOR)) {
            n->b = v;
            if (!comprehension(p, DSL_N_DICTCOMP, n, first) || !ps_expect_op(p, DSL_OP_RBRACE))
                return NULL;
            return ps_finish(p, n);
        }
        dsl_list_push(p->a, &n->items, first);
        dsl_list_push(p->a, &n->items2, v);
    }
    while (ps_accept_op(p, DSL_OP_COMMA) && !ps_is_op(p, DSL_OP_RBRACE))
        if (!dict_item(p, n))
            return NULL;
    return ps_expect_op(p, DSL_OP_RBRACE) ? ps_finish(p, n) : NULL;
}

static dsl_node *constant(dsl_parser *p, dsl_const_kind k)
{
    const dsl_tok *t = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_CONSTANT, t);
    n->op = k;
    n->ival = t->ival;
    n->fval = t->fval;
    ps_advance(p);
    return ps_finish(p, n);
}

static dsl_node *atom(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    switch (t->kind) {
    case DSL_T_NAME: {
        dsl_node *n = ps_node_at(p, DSL_N_NAME, t);
        n->name = ps_tok_str(p, t);
        ps_advance(p);
        return ps_finish(p, n);
    }
    case DSL_T_INT: return constant(p, DSL_C_INT);
    case DSL_T_FLOAT: return constant(p, DSL_C_FLOAT);
    case DSL_T_IMAG: return constant(p, DSL_C_IMAG);
    case DSL_T_STRING: return strings(p);
    case DSL_T_KEYWORD:
        if (t->sub == DSL_KW_TRUE) return constant(p, DSL_C_TRUE);
        if (t->sub == DSL_KW_FALSE) return constant(p, DSL_C_FALSE);
        if (t->sub == DSL_KW_NONE) return constant(p, DSL_C_NONE);
        break;
    case DSL_T_OP:
        if (t->sub == DSL_OP_LPAR) return paren_or_list(p, false);
        if (t->sub == DSL_OP_LSQB) return paren_or_list(p, true);
        if (t->sub == DSL_OP_LBRACE) return brace(p);
        if (t->sub == DSL_OP_ELLIPSIS) return constant(p, DSL_C_ELLIPSIS);
        break;
    default:
        break;
    }
    ps_expected(p, "an expression");
    return NULL;
}

/* ---- trailers ------------------------------------------------------------- */

static bool call_arg(dsl_parser *p, dsl_node *call, bool *seen_kw)
{
    const dsl_tok *t = ps_tok(p);
    if (ps_accept_op(p, DSL_OP_POW) ||
        (t->kind == DSL_T_NAME && ps_peek(p, 1)->kind == DSL_T_OP && ps_peek(p, 1)->sub == DSL_OP_ASSIGN)) {
        dsl_node *k = ps_node_at(p, DSL_N_KEYWORD, t);
        if (t->kind == DSL_T_NAME) {
            k->name = ps_tok_str(p, t);
            ps_advance(p);
            ps_advance(p);
        }
        k->a = ps_test(p);
        if (!k->a)
            return false;
        dsl_list_push(p->a, &call->items2, ps_finish(p, k));
        *seen_kw = true;
        return true;
    }
    dsl_node *e = star_or_named(p);
    if (!e)
        return false;
    if (ps_is_kw(p, DSL_KW_FOR)) {
        dsl_node *g = node_from(p, DSL_N_GENEXP, e);
        if (!comprehension(p, DSL_N_GENEXP, g, e))
            return false;
        e = ps_finish(p, g);
    }
    if (*seen_kw && e->kind != DSL_N_STARRED)
        ps_error_soft(p, CV_E_DSL_ARGUMENT_ORDER, e, "positional argument follows keyword argument");
    dsl_list_push(p->a, &call->items, e);
    return !p->failed;
}

static dsl_node *call(dsl_parser *p, dsl_node *func)
{
    dsl_node *n = node_from(p, DSL_N_CALL, func);
    n->a = func;
    ps_advance(p);  /* '(' */
    bool seen_kw = false;
    while (!ps_is_op(p, DSL_OP_RPAR)) {
        if (!call_arg(p, n, &seen_kw))
            return NULL;
        if (!ps_accept_op(p, DSL_OP_COMMA))
            break;
    }
    return ps_expect_op(p, DSL_OP_RPAR) ? ps_finish(p, n) : NULL;
}

static dsl_node *subscript_item(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    dsl_node *lower = NULL;
    if (!ps_is_op(p, DSL_OP_COLON)) {
        lower = star_or_named(p);
        if (!lower || !ps_is_op(p, DSL_OP_COLON))
            return lower;
    }
    dsl_node *s = ps_node_at(p, DSL_N_SLICE, t);
    ps_advance(p);  /* ':' */
    s->a = lower;
    if (!ps_is_op(p, DSL_OP_COLON) && !ps_is_op(p, DSL_OP_COMMA) && !ps_is_op(p, DSL_OP_RSQB) &&
        !(s->b = ps_test(p)))
        return NULL;
    if (ps_accept_op(p, DSL_OP_COLON) && !ps_is_op(p, DSL_OP_COMMA) && !ps_is_op(p, DSL_OP_RSQB) &&
        !(s->c = ps_test(p)))
        return NULL;
    return ps_finish(p, s);
}

static dsl_node *subscript(dsl_parser *p, dsl_node *value)
{
    dsl_node *n = node_from(p, DSL_N_SUBSCRIPT, value);
    n->a = value;
    ps_advance(p);  /* '[' */
    dsl_node *first = subscript_item(p);
    if (!first)
        return NULL;
    n->b = first;
    if (ps_is_op(p, DSL_OP_COMMA)) {
        dsl_node *tup = node_from(p, DSL_N_TUPLE, first);
        dsl_list_push(p->a, &tup->items, first);
        while (ps_accept_op(p, DSL_OP_COMMA) && !ps_is_op(p, DSL_OP_RSQB)) {
            dsl_node *e = subscript_item(p);
            if (!e)
                return NULL;
            dsl_list_push(p->a, &tup->items, e);
        }
        n->b = ps_finish(p, tup);
    }
    return ps_expect_op(p, DSL_OP_RSQB) ? ps_finish(p, n) : NULL;
}

static dsl_node *primary(dsl_parser *p)
{
    dsl_node *e = atom(p);
    while (e && !p->failed) {
        if (ps_is_op(p, DSL_OP_LPAR)) {
            e = call(p, e);
        } else if (ps_is_op(p, DSL_OP_LSQB)) {
            e = subscript(p, e);
        } else if (ps_is_op(p, DSL_OP_DOT)) {
            ps_advance(p);
            if (ps_tok(p)->kind != DSL_T_NAME) {
                ps_expected(p, "an attribute name");
                return NULL;
            }
            dsl_node *at = node_from(p, DSL_N_ATTRIBUTE, e);
            at->a = e;
            at->name = ps_tok_str(p, ps_tok(p));
            ps_advance(p);
            e = ps_finish(p, at);
        } else {
            break;
        }
    }
    return p->failed ? NULL : e;
}

/* ---- operators ------------------------------------------------------------ */

static dsl_node *factor(dsl_parser *p);

static dsl_node *power(dsl_parser *p)
{
    if (ps_is_kw(p, DSL_KW_AWAIT)) {
        dsl_node *w = ps_node_at(p, DSL_N_AWAIT, ps_tok(p));
        ps_advance(p);
        w->a = primary(p);
        return w->a ? ps_finish(p, w) : NULL;
    }
    dsl_node *base = primary(p);
    if (!base || !ps_is_op(p, DSL_OP_POW))
        return base;
    dsl_node *n = node_from(p, DSL_N_BINOP, base);
    n->op = DSL_X_POW;
    n->op_line = ps_tok(p)->line;
    n->op_col = ps_tok(p)->col;
    ps_advance(p);
    n->a = base;
    if (!enter(p))   /* a**b**c... is right-recursive */
        return NULL;
    n->b = factor(p);
    return leave(p, n->b ? ps_finish(p, n) : NULL);
}

static dsl_node *factor(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    dsl_exop op = ps_is_op(p, DSL_OP_MINUS) ? DSL_X_NEG : ps_is_op(p, DSL_OP_PLUS) ? DSL_X_POS
                  : ps_is_op(p, DSL_OP_TILDE) ? DSL_X_INVERT : DSL_X_NONE;
    if (op == DSL_X_NONE)
        return power(p);
    if (!enter(p))
        return NULL;
    dsl_node *n = ps_node_at(p, DSL_N_UNARYOP, t);
    n->op = op;
    n->op_line = t->line;
    n->op_col = t->col;
    ps_advance(p);
    n->a = factor(p);
    return leave(p, n->a ? ps_finish(p, n) : NULL);
}

static const struct { int level, tok; dsl_exop op; } binops[] = {
    {0, DSL_OP_PIPE, DSL_X_BITOR}, {1, DSL_OP_CARET, DSL_X_BITXOR}, {2, DSL_OP_AMP, DSL_X_BITAND},
    {3, DSL_OP_SHL, DSL_X_LSHIFT}, {3, DSL_OP_SHR, DSL_X_RSHIFT},
    {4, DSL_OP_PLUS, DSL_X_ADD}, {4, DSL_OP_MINUS, DSL_X_SUB},
    {5, DSL_OP_STAR, DSL_X_MUL}, {5, DSL_OP_SLASH, DSL_X_DIV}, {5, DSL_OP_FLOORDIV, DSL_X_FLOORDIV},
    {5, DSL_OP_PERCENT, DSL_X_MOD}, {5, DSL_OP_AT, DSL_X_MATMUL},
};

static dsl_exop binop_at(const dsl_parser *p, int level)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind != DSL_T_OP)
        return DSL_X_NONE;
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
        if (binops[i].level == level && binops[i].tok == t->sub)
            return binops[i].op;
    return DSL_X_NONE;
}

static dsl_node *binary(dsl_parser *p, int level)
{
    if (level > 5)
        return factor(p);
    dsl_node *l = binary(p, level + 1);
    dsl_exop op;
    while (l && (op = binop_at(p, level)) != DSL_X_NONE) {
        dsl_node *n = node_from(p, DSL_N_BINOP, l);
        n->op = op;
        n->op_line = ps_tok(p)->line;
        n->op_col = ps_tok(p)->col;
        ps_advance(p);
        n->a = l;
        n->b = binary(p, level + 1);
        l = n->b ? ps_finish(p, n) : NULL;
    }
    return p->failed ? NULL : l;
}

dsl_node *ps_expr(dsl_parser *p)
{
    if (!enter(p))
        return NULL;
    return leave(p, binary(p, 0));
}

static dsl_exop comp_op(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind == DSL_T_KEYWORD) {
        if (t->sub == DSL_KW_IN) return DSL_X_IN;
        if (t->sub == DSL_KW_IS)
            return (ps_peek(p, 1)->kind == DSL_T_KEYWORD && ps_peek(p, 1)->sub == DSL_KW_NOT) ? DSL_X_ISNOT : DSL_X_IS;
        if (t->sub == DSL_KW_NOT && ps_peek(p, 1)->kind == DSL_T_KEYWORD && ps_peek(p, 1)->sub == DSL_KW_IN)
            return DSL_X_NOTIN;
        return DSL_X_NONE;
    }
    if (t->kind != DSL_T_OP)
        return DSL_X_NONE;
    switch (t->sub) {
    case DSL_OP_LT: return DSL_X_LT;
    case DSL_OP_GT: return DSL_X_GT;
    case DSL_OP_EQ: return DSL_X_EQ;
    case DSL_OP_NE: return DSL_X_NE;
    case DSL_OP_LE: return DSL_X_LE;
    case DSL_OP_GE: return DSL_X_GE;
    default: return DSL_X_NONE;
    }
}

static dsl_node *comparison(dsl_parser *p)
{
    dsl_node *l = ps_expr(p);
    if (!l || comp_op(p) == DSL_X_NONE)
        return l;
    dsl_node *n = node_from(p, DSL_N_COMPARE, l);
    n->a = l;
    n->op_line = ps_tok(p)->line;
    n->op_col = ps_tok(p)->col;
    dsl_exop ops[64];
    dsl_exop op;
    while ((op = comp_op(p)) != DSL_X_NONE) {
        if (n->items.n >= 64) {
            ps_error_at(p, CV_E_NESTING_TOO_DEEP, ps_tok(p), "comparison chain longer than 64");
            return NULL;
        }
        ps_advance(p);
        if (op == DSL_X_ISNOT || op == DSL_X_NOTIN)
            ps_advance(p);
        dsl_node *r = ps_expr(p);
        if (!r)
            return NULL;
        ops[n->items.n] = op;
        dsl_list_push(p->a, &n->items, r);
    }
    n->cmp_ops = cv_arena_memdup(p->a, ops, (size_t)n->items.n * sizeof ops[0]);
    return ps_finish(p, n);
}

static dsl_node *not_test(dsl_parser *p)
{
    if (!ps_is_kw(p, DSL_KW_NOT))
        return comparison(p);
    if (!enter(p))
        return NULL;
    dsl_node *n = ps_node_at(p, DSL_N_UNARYOP, ps_tok(p));
    n->op = DSL_X_NOT;
    n->op_line = ps_tok(p)->line;
    n->op_col = ps_tok(p)->col;
    ps_advance(p);
    n->a = not_test(p);
    return leave(p, n->a ? ps_finish(p, n) : NULL);
}

static dsl_node *bool_chain(dsl_parser *p, int kw, dsl_exop op, dsl_node *(*sub)(dsl_parser *))
{
    dsl_node *first = sub(p);
    if (!first || !ps_is_kw(p, kw))
        return first;
    dsl_node *n = node_from(p, DSL_N_BOOLOP, first);
    n->op = op;
    dsl_list_push(p->a, &n->items, first);
    while (ps_accept_kw(p, kw)) {
        dsl_node *e = sub(p);
        if (!e)
            return NULL;
        dsl_list_push(p->a, &n->items, e);
    }
    return ps_finish(p, n);
}

static dsl_node *and_test(dsl_parser *p) { return bool_chain(p, DSL_KW_AND, DSL_X_AND, not_test); }

dsl_node *ps_or_test(dsl_parser *p) { return bool_chain(p, DSL_KW_OR, DSL_X_OR, and_test); }

static dsl_node *lambda(dsl_parser *p)
{
    dsl_node *n = ps_node_at(p, DSL_N_LAMBDA, ps_tok(p));
    ps_advance(p);
    ps_params(p, &n->items, DSL_OP_COLON, false);
    if (p->failed || !ps_expect_op(p, DSL_OP_COLON))
        return NULL;
    n->a = ps_test(p);
    return n->a ? ps_finish(p, n) : NULL;
}

dsl_node *ps_test(dsl_parser *p)
{
    if (!enter(p))
        return NULL;
    if (ps_is_kw(p, DSL_KW_LAMBDA))
        return leave(p, lambda(p));
    dsl_node *body = ps_or_test(p);
    if (!body || !ps_is_kw(p, DSL_KW_IF))
        return leave(p, body);
    dsl_node *n = node_from(p, DSL_N_IFEXP, body);
    ps_advance(p);
    n->a = body;
    n->b = ps_or_test(p);
    if (n->b && !ps_accept_kw(p, DSL_KW_ELSE))
        ps_expected(p, "'else'");
    n->c = p->failed ? NULL : ps_test(p);
    return leave(p, n->c ? ps_finish(p, n) : NULL);
}

dsl_node *ps_namedexpr(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind == DSL_T_NAME && ps_peek(p, 1)->kind == DSL_T_OP && ps_peek(p, 1)->sub == DSL_OP_WALRUS) {
        dsl_node *n = ps_node_at(p, DSL_N_NAMEDEXPR, t);
        dsl_node *target = ps_node_at(p, DSL_N_NAME, t);
        target->name = ps_tok_str(p, t);
        ps_advance(p);
        ps_finish(p, target);
        ps_advance(p);
        n->a = target;
        n->b = ps_test(p);
        return n->b ? ps_finish(p, n) : NULL;
    }
    return ps_test(p);
}

dsl_node *ps_star_or_test(dsl_parser *p)
{
    if (!ps_is_op(p, DSL_OP_STAR))
        return ps_test(p);
    dsl_node *s = ps_node_at(p, DSL_N_STARRED, ps_tok(p));
    ps_advance(p);
    s->a = ps_expr(p);
    return s->a ? ps_finish(p, s) : NULL;
}

static dsl_node *comma_list(dsl_parser *p, dsl_node *(*elem)(dsl_parser *))
{
    dsl_node *first = elem(p);
    if (!first || !ps_is_op(p, DSL_OP_COMMA))
        return first;
    dsl_node *t = node_from(p, DSL_N_TUPLE, first);
    dsl_list_push(p->a, &t->items, first);
    while (ps_accept_op(p, DSL_OP_COMMA) && starts_expr(ps_tok(p))) {
        dsl_node *e = elem(p);
        if (!e)
            return NULL;
        dsl_list_push(p->a, &t->items, e);
    }
    return p->failed ? NULL : ps_finish(p, t);
}

dsl_node *ps_testlist(dsl_parser *p) { return comma_list(p, ps_star_or_test); }

static dsl_node *star_or_expr(dsl_parser *p)
{
    if (!ps_is_op(p, DSL_OP_STAR))
        return ps_expr(p);
    return ps_star_or_test(p);
}

dsl_node *ps_exprlist(dsl_parser *p) { return comma_list(p, star_or_expr); }
