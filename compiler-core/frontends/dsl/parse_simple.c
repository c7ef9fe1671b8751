/* Simple statements: expression statements and assignments (plain,
 * augmented, annotated), return, pass/break/continue, imports, global,
 * nonlocal, del, assert, raise. */
#include "compiler-core/frontends/dsl/parse_internal.h"

static bool is_kind(const dsl_parser *p, dsl_tok_kind k) { return ps_tok(p)->kind == k; }

static bool at_line_end(const dsl_parser *p)
{
    return is_kind(p, DSL_T_NEWLINE) || is_kind(p, DSL_T_EOF) || ps_is_op(p, DSL_OP_SEMI);
}

static dsl_node *yield_expr(dsl_parser *p)
{
    dsl_node *y = ps_node_at(p, DSL_N_YIELD, ps_tok(p));
    ps_advance(p);
    y->op = ps_accept_kw(p, DSL_KW_FROM);
    if (!at_line_end(p) && !ps_is_op(p, DSL_OP_RPAR) && !(y->a = ps_testlist(p)))
        return NULL;
    return ps_finish(p, y);
}

static dsl_node *rhs(dsl_parser *p)
{
    return ps_is_kw(p, DSL_KW_YIELD) ? yield_expr(p) : ps_testlist(p);
}

static dsl_exop aug_op(const dsl_parser *p)
{
    if (!is_kind(p, DSL_T_OP))
        return DSL_X_NONE;
    switch (ps_tok(p)->sub) {
    case DSL_OP_PLUSEQ: return DSL_X_ADD;
    case DSL_OP_MINUSEQ: return DSL_X_SUB;
    case DSL_OP_STAREQ: return DSL_X_MUL;
    case DSL_OP_SLASHEQ: return DSL_X_DIV;
    case DSL_OP_FLOORDIVEQ: return DSL_X_FLOORDIV;
    case DSL_OP_PERCENTEQ: return DSL_X_MOD;
    case DSL_OP_POWEQ: return DSL_X_POW;
    case DSL_OP_ATEQ: return DSL_X_MATMUL;
    case DSL_OP_AMPEQ: return DSL_X_BITAND;
    case DSL_OP_PIPEEQ: return DSL_X_BITOR;
    case DSL_OP_CARETEQ: return DSL_X_BITXOR;
    case DSL_OP_SHLEQ: return DSL_X_LSHIFT;
    case DSL_OP_SHREQ: return DSL_X_RSHIFT;
    default: return DSL_X_NONE;
    }
}

static dsl_node *expr_stmt(dsl_parser *p)
{
    dsl_node *first = rhs(p);
    if (!first)
        return NULL;
    dsl_exop aug = aug_op(p);
    dsl_node *n;
    if (aug != DSL_X_NONE) {
        n = dsl_node_new(p->a, DSL_N_AUGASSIGN, first->line, first->col);
        n->op = aug;
        n->op_line = ps_tok(p)->line;
        n->op_col = ps_tok(p)->col;
        ps_advance(p);
        n->a = first;
        if (!ps_check_target(p, first, true) || !(n->b = rhs(p)))
            return NULL;
    } else if (ps_is_op(p, DSL_OP_COLON)) {
        n = dsl_node_new(p->a, DSL_N_ANNASSIGN, first->line, first->col);
        ps_advance(p);
        n->a = first;
        if (!ps_check_target(p, first, true) || !(n->b = ps_test(p)))
            return NULL;
        if (ps_accept_op(p, DSL_OP_ASSIGN) && !(n->c = rhs(p)))
            return NULL;
    } else if (ps_is_op(p, DSL_OP_ASSIGN)) {
        n = dsl_node_new(p->a, DSL_N_ASSIGN, first->line, first->col);
        dsl_node *v = first;
        while (ps_accept_op(p, DSL_OP_ASSIGN)) {
            if (!ps_check_target(p, v, false))
                return NULL;
            dsl_list_push(p->a, &n->items, v);
            if (!(v = rhs(p)))
                return NULL;
        }
        n->a = v;
    } else {
        n = dsl_node_new(p->a, DSL_N_EXPR, first->line, first->col);
        n->a = first;
    }
    return ps_finish(p, n);
}

static dsl_node *dotted_alias(dsl_parser *p, bool dotted)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind != DSL_T_NAME) {
        ps_expected(p, dotted ? "a module name" : "a name to import");
        return NULL;
    }
    dsl_node *al = ps_node_at(p, DSL_N_ALIAS, t);
    cv_sb name = CV_SB_INIT;  /* owned here; copied into the arena */
    cv_sb_add(&name, t->text, t->len);
    ps_advance(p);
    while (dotted && ps_is_op(p, DSL_OP_DOT) && ps_peek(p, 1)->kind == DSL_T_NAME) {
        ps_advance(p);
        cv_sb_putc(&name, '.');
        cv_sb_add(&name, ps_tok(p)->text, ps_tok(p)->len);
        ps_advance(p);
    }
    al->name = cv_arena_strdup(p->a, cv_sb_str(&name));
    cv_sb_free(&name);
    if (ps_accept_kw(p, DSL_KW_AS)) {
        if (!is_kind(p, DSL_T_NAME)) {
            ps_expected(p, "a name after 'as'");
            return NULL;
        }
        al->asname = ps_tok_str(p, ps_tok(p));
        ps_advance(p);
    }
    return ps_finish(p, al);
}

static dsl_node *import_stmt(dsl_parser *p)
{
    dsl_node *n = ps_node_at(p, DSL_N_IMPORT, ps_tok(p));
    ps_advance(p);
    do {
        dsl_node *al = dotted_alias(p, true);
        if (!al)
            return NULL;
        dsl_list_push(p->a, &n->items, al);
    } while (ps_accept_op(p, DSL_OP_COMMA));
    return ps_finish(p, n);
}

static dsl_node *import_from(dsl_parser *p)
{
    dsl_node *n = ps_node_at(p, DSL_N_IMPORTFROM, ps_tok(p));
    ps_advance(p);
    cv_sb mod = CV_SB_INIT;  /* owned here */
    while (ps_is_op(p, DSL_OP_DOT) || ps_is_op(p, DSL_OP_ELLIPSIS)) {
        cv_sb_puts(&mod, ps_is_op(p, DSL_OP_DOT) ? "." : "...");
        ps_advance(p);
    }
    if (is_kind(p, DSL_T_NAME)) {
        dsl_node *m = dotted_alias(p, true);
        if (m)
            cv_sb_puts(&mod, m->name);
    } else if (mod.len == 0) {
        ps_expected(p, "a module name");
    }
    n->name = cv_arena_strdup(p->a, cv_sb_str(&mod));
    cv_sb_free(&mod);
    if (p->failed)
        return NULL;
    if (!ps_accept_kw(p, DSL_KW_IMPORT)) {
        ps_expected(p, "'import'");
        return NULL;
    }
    if (ps_is_op(p, DSL_OP_STAR)) {
        dsl_node *al = ps_node_at(p, DSL_N_ALIAS, ps_tok(p));
        al->name = "*";
        ps_advance(p);
        dsl_list_push(p->a, &n->items, ps_finish(p, al));
        return ps_finish(p, n);
    }
    bool paren = ps_accept_op(p, DSL_OP_LPAR);
    do {
        if (paren && ps_is_op(p, DSL_OP_RPAR))
            break;
        dsl_node *al = dotted_alias(p, false);
        if (!al)
            return NULL;
        dsl_list_push(p->a, &n->items, al);
    } while (ps_accept_op(p, DSL_OP_COMMA));
    if (paren && !ps_expect_op(p, DSL_OP_RPAR))
        return NULL;
    return ps_finish(p, n);
}

static dsl_node *name_list(dsl_parser *p, dsl_node_kind kind)
{
    dsl_node *n = ps_node_at(p, kind, ps_tok(p));
    ps_advance(p);
    do {
        if (!is_kind(p, DSL_T_NAME)) {
            ps_expected(p, "a name");
            return NULL;
        }
        dsl_node *nm = ps_node_at(p, DSL_N_NAME, ps_tok(p));
        nm->name = ps_tok_str(p, ps_tok(p));
        ps_advance(p);
        dsl_list_push(p->a, &n->items, ps_finish(p, nm));
    } while (ps_accept_op(p, DSL_OP_COMMA));
    return ps_finish(p, n);
}

static dsl_node *keyword_stmt(dsl_parser *p, dsl_node_kind kind)
{
    dsl_node *n = ps_node_at(p, kind, ps_tok(p));
    ps_advance(p);
    if (kind == DSL_N_RETURN && !at_line_end(p) && !(n->a = ps_testlist(p)))
        return NULL;
    if (kind == DSL_N_ASSERT) {
        if (!(n->a = ps_test(p)) || (ps_accept_op(p, DSL_OP_COMMA) && !(n->b = ps_test(p))))
            return NULL;
    }
    if (kind == DSL_N_RAISE && !at_line_end(p)) {
        if (!(n->a = ps_test(p)) || (ps_accept_kw(p, DSL_KW_FROM) && !(n->b = ps_test(p))))
            return NULL;
    }
    if (kind == DSL_N_DELETE) {
        dsl_node *t = ps_exprlist(p);
        if (!t)
            return NULL;
        if (t->kind == DSL_N_TUPLE)
            n->items = t->items;
        else
            dsl_list_push(p->a, &n->items, t);
    }
    return ps_finish(p, n);
}

static dsl_node *small_stmt(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind != DSL_T_KEYWORD)
        return expr_stmt(p);
    switch (t->sub) {
    case DSL_KW_PASS: return keyword_stmt(p, DSL_N_PASS);
    case DSL_KW_BREAK: return keyword_stmt(p, DSL_N_BREAK);
    case DSL_KW_CONTINUE: return keyword_stmt(p, DSL_N_CONTINUE);
    case DSL_KW_RETURN: return keyword_stmt(p, DSL_N_RETURN);
    case DSL_KW_ASSERT: return keyword_stmt(p, DSL_N_ASSERT);
    case DSL_KW_RAISE: return keyword_stmt(p, DSL_N_RAISE);
    case DSL_KW_DEL: return keyword_stmt(p, DSL_N_DELETE);
    case DSL_KW_IMPORT: return import_stmt(p);
    case DSL_KW_FROM: return import_from(p);
    case DSL_KW_GLOBAL: return name_list(p, DSL_N_GLOBAL);
    case DSL_KW_NONLOCAL: return name_list(p, DSL_N_NONLOCAL);
    default: return expr_stmt(p);
    }
}

void ps_simple_stmts(dsl_parser *p, dsl_list *out)
{
    for (;;) {
        dsl_node *s = small_stmt(p);
        if (!s || p->failed)
            return;
        dsl_list_push(p->a, out, s);
        if (!ps_accept_op(p, DSL_OP_SEMI) || is_kind(p, DSL_T_NEWLINE))
            break;
        p->stmt = ps_stmt_label(p);
    }
    if (!is_kind(p, DSL_T_NEWLINE)) {
        ps_expected(p, "end of line");
        return;
    }
    ps_advance(p);
}

