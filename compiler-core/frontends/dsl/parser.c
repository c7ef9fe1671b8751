/* Statements, blocks and error recovery.  A syntax error abandons the
 * statement it is in (the rest of its logical line; the block of a
 * compound statement whose header failed is still checked for errors of
 * its own), so that every independent error of a file is reported. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/parse_internal.h"

static bool is_kind(const dsl_parser *p, dsl_tok_kind k) { return ps_tok(p)->kind == k; }

/* ---- blocks and recovery -------------------------------------------------- */

static void statement(dsl_parser *p, dsl_list *out);

static void statements_until_dedent(dsl_parser *p, dsl_list *out)
{
    while (!p->stop && !is_kind(p, DSL_T_DEDENT) && !is_kind(p, DSL_T_EOF)) {
        int before = p->i;
        statement(p, out);
        if (p->i == before)
            ps_advance(p);  /* always make progress */
    }
}

/* Skips the rest of the logical line after an error. */
static void skip_line(dsl_parser *p)
{
    while (!is_kind(p, DSL_T_NEWLINE) && !is_kind(p, DSL_T_EOF) && !is_kind(p, DSL_T_INDENT) &&
           !is_kind(p, DSL_T_DEDENT))
        ps_advance(p);
    if (is_kind(p, DSL_T_NEWLINE))
        ps_advance(p);
}

/* After a failed compound header: skip it, and check its block on its own
 * (inside `label` when the header got far enough to name it). */
static void push_ctx(dsl_parser *p, const char *label);

static void header_failed(dsl_parser *p, const char *label)
{
    skip_line(p);
    if (!is_kind(p, DSL_T_INDENT))
        return;
    ps_advance(p);
    int saved = p->n_ctx;
    if (label)
        push_ctx(p, label);
    dsl_list junk = {0};
    statements_until_dedent(p, &junk);
    p->n_ctx = saved;
    if (is_kind(p, DSL_T_DEDENT))
        ps_advance(p);
}

static void push_ctx(dsl_parser *p, const char *label)
{
    if (p->n_ctx < DSL_MAX_BLOCK_CTX)
        p->ctx[p->n_ctx] = label;
    p->n_ctx++;
}


/* The body after ':': an indented block, or simple statements on the line. */
static void suite(dsl_parser *p, dsl_list *out, const char *label, const dsl_tok *header)
{
    int saved = p->n_ctx;
    if (ps_tok(p)->kind == DSL_T_NEWLINE) {
        ps_advance(p);
        if (!is_kind(p, DSL_T_INDENT)) {
            p->failed = false;
            ps_error_at(p, CV_E_DSL_EXPECTED_INDENT, ps_tok(p), "expected an indented block after '%.*s' on line %d",
                        (int)header->len, header->text, header->line);
        } else {
            push_ctx(p, label);
            ps_advance(p);
            statements_until_dedent(p, out);
            if (is_kind(p, DSL_T_DEDENT))
                ps_advance(p);
        }
    } else {
        push_ctx(p, label);
        p->failed = false;
        p->stmt = ps_stmt_label(p);
        ps_simple_stmts(p, out);
        if (p->failed)
            skip_line(p);
    }
    p->n_ctx = saved;
    p->failed = false;
}

static dsl_node *last_of(const dsl_list *l) { return l->n ? l->v[l->n - 1] : NULL; }

/* ':' then suite; false after reporting a header error (already recovered). */
static bool colon_suite(dsl_parser *p, dsl_list *out, const char *label, const dsl_tok *header)
{
    if (p->failed || !ps_expect_op(p, DSL_OP_COLON)) {
        header_failed(p, label);
        return false;
    }
    suite(p, out, label, header);
    return true;
}

/* Skips a header we do not analyse (class bases, with items, except
 * clauses) up to its ':' at bracket depth 0. */
static void skip_header(dsl_parser *p)
{
    int depth = 0;
    while (!is_kind(p, DSL_T_NEWLINE) && !is_kind(p, DSL_T_EOF)) {
        if (depth == 0 && ps_is_op(p, DSL_OP_COLON))
            return;
        if (ps_is_op(p, DSL_OP_LPAR) || ps_is_op(p, DSL_OP_LSQB) || ps_is_op(p, DSL_OP_LBRACE))
            depth++;
        if (ps_is_op(p, DSL_OP_RPAR) || ps_is_op(p, DSL_OP_RSQB) || ps_is_op(p, DSL_OP_RBRACE))
            depth--;
        ps_advance(p);
    }
}


/* A compound statement ends where its last nested statement ends. */
static void end_block(dsl_node *n)
{
    const dsl_list *lists[] = {&n->final, &n->orelse, n->kind == DSL_N_TRY ? &n->items : &n->final,
                               &n->body};
    for (int i = 0; i < 4; i++)
        if (lists[i]->n && last_of(lists[i])) {
            dsl_node_end_at(n, last_of(lists[i]));
            return;
        }
}

/* ---- compound statements -------------------------------------------------- */

enum { DSL_MAX_ELIF = 256 };

static dsl_node *if_stmt(dsl_parser *p)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *top = ps_node_at(p, DSL_N_IF, kw), *cur = top;
    ps_advance(p);
    top->a = ps_namedexpr(p);
    if (!colon_suite(p, &top->body, "If", kw))
        return NULL;
    for (int n_elif = 0; ps_is_kw(p, DSL_KW_ELIF); n_elif++) {
        const dsl_tok *el = ps_tok(p);
        p->stmt = "If";
        if (n_elif >= DSL_MAX_ELIF) {
            ps_error_at(p, CV_E_NESTING_TOO_DEEP, el, "more than %d elif branches", DSL_MAX_ELIF);
            header_failed(p, NULL);
            continue;
        }
        dsl_node *e = ps_node_at(p, DSL_N_IF, el);
        ps_advance(p);
        e->a = ps_namedexpr(p);
        if (!colon_suite(p, &e->body, "If", el))
            continue;
        dsl_list_push(p->a, &cur->orelse, e);
        cur = e;
    }
    if (ps_is_kw(p, DSL_KW_ELSE)) {
        const dsl_tok *el = ps_tok(p);
        ps_advance(p);
        p->stmt = "If";
        colon_suite(p, &cur->orelse, "If", el);
    }
    end_block(cur);
    for (dsl_node *n = top; n != cur; n = n->orelse.v[0])
        dsl_node_end_at(n, cur);
    return top;
}

static bool else_clause(dsl_parser *p, dsl_list *out, const char *label)
{
    if (!ps_is_kw(p, DSL_KW_ELSE))
        return false;
    const dsl_tok *el = ps_tok(p);
    ps_advance(p);
    p->stmt = label;
    colon_suite(p, out, label, el);
    return true;
}

static dsl_node *for_stmt(dsl_parser *p)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_FOR, kw);
    ps_advance(p);
    n->a = ps_exprlist(p);
    if (n->a && ps_check_target(p, n->a, false) && !ps_accept_kw(p, DSL_KW_IN))
        ps_expected(p, "'in'");
    if (!p->failed)
        n->b = ps_testlist(p);
    if (!colon_suite(p, &n->body, "For", kw))
        return NULL;
    else_clause(p, &n->orelse, "For");
    end_block(n);
    return n;
}

static dsl_node *while_stmt(dsl_parser *p)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_WHILE, kw);
    ps_advance(p);
    n->a = ps_namedexpr(p);
    if (!colon_suite(p, &n->body, "While", kw))
        return NULL;
    else_clause(p, &n->orelse, "While");
    end_block(n);
    return n;
}

static const char *def_ctx(dsl_parser *p, const char *kind, const char *name)
{
    size_t n = strlen(kind) + strlen(name) + 3;
    char *s = cv_arena_alloc(p->a, n);
    if (s)
        snprintf(s, n, "%s[%s]", kind, name);
    return s ? s : kind;
}

static dsl_node *funcdef(dsl_parser *p, dsl_list decorators)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_FUNCTIONDEF, kw);
    n->items2 = decorators;
    ps_advance(p);
    if (!is_kind(p, DSL_T_NAME)) {
        ps_expected(p, "a function name");
        header_failed(p, NULL);
        return NULL;
    }
    n->name = ps_tok_str(p, ps_tok(p));
    ps_advance(p);
    if (ps_expect_op(p, DSL_OP_LPAR)) {
        ps_params(p, &n->items, DSL_OP_RPAR, true);
        if (!p->failed && ps_expect_op(p, DSL_OP_RPAR) && ps_accept_op(p, DSL_OP_ARROW))
            n->a = ps_test(p);
    }
    if (!colon_suite(p, &n->body, def_ctx(p, "FunctionDef", n->name), kw))
        return NULL;
    end_block(n);
    return n;
}

static dsl_node *classdef(dsl_parser *p, dsl_list decorators)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_CLASSDEF, kw);
    n->items2 = decorators;
    ps_advance(p);
    if (!is_kind(p, DSL_T_NAME)) {
        ps_expected(p, "a class name");
        header_failed(p, NULL);
        return NULL;
    }
    n->name = ps_tok_str(p, ps_tok(p));
    ps_advance(p);
    skip_header(p);
    if (!colon_suite(p, &n->body, def_ctx(p, "ClassDef", n->name), kw))
        return NULL;
    end_block(n);
    return n;
}

static dsl_node *try_stmt(dsl_parser *p)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_TRY, kw);
    ps_advance(p);
    if (!colon_suite(p, &n->body, "Try", kw))
        return NULL;
    while (ps_is_kw(p, DSL_KW_EXCEPT)) {
        const dsl_tok *ex = ps_tok(p);
        dsl_node *h = ps_node_at(p, DSL_N_HANDLER, ex);
        ps_advance(p);
        p->stmt = "Try";
        skip_header(p);
        colon_suite(p, &h->body, "ExceptHandler", ex);
        end_block(h);
        dsl_list_push(p->a, &n->items, h);
    }
    else_clause(p, &n->orelse, "Try");
    if (ps_is_kw(p, DSL_KW_FINALLY)) {
        const dsl_tok *fin = ps_tok(p);
        ps_advance(p);
        p->stmt = "Try";
        colon_suite(p, &n->final, "Try", fin);
    } else if (n->items.n == 0) {
        p->stmt = "Try";
        ps_expected(p, "'except' or 'finally'");
        p->failed = false;
    }
    end_block(n);
    return n;
}

static dsl_node *with_stmt(dsl_parser *p)
{
    const dsl_tok *kw = ps_tok(p);
    dsl_node *n = ps_node_at(p, DSL_N_WITH, kw);
    ps_advance(p);
    skip_header(p);
    if (!colon_suite(p, &n->body, "With", kw))
        return NULL;
    end_block(n);
    return n;
}

static dsl_node *compound(dsl_parser *p, dsl_list decorators);

static dsl_node *async_stmt(dsl_parser *p, dsl_list decorators)
{
    dsl_node *n = ps_node_at(p, DSL_N_ASYNC, ps_tok(p));
    ps_advance(p);
    if (!ps_is_kw(p, DSL_KW_DEF) && !ps_is_kw(p, DSL_KW_FOR) && !ps_is_kw(p, DSL_KW_WITH)) {
        ps_expected(p, "'def', 'for' or 'with' after 'async'");
        header_failed(p, NULL);
        return NULL;
    }
    n->a = compound(p, decorators);
    if (!n->a)
        return NULL;
    dsl_node_end_at(n, n->a);
    return n;
}

static dsl_node *decorated(dsl_parser *p)
{
    dsl_list decorators = {0};
    while (ps_accept_op(p, DSL_OP_AT)) {
        dsl_node *d = ps_namedexpr(p);
        if (!d || !is_kind(p, DSL_T_NEWLINE)) {
            if (d)
                ps_expected(p, "end of line after the decorator");
            header_failed(p, NULL);
            return NULL;
        }
        ps_advance(p);
        dsl_list_push(p->a, &decorators, d);
    }
    if (ps_is_kw(p, DSL_KW_DEF) || ps_is_kw(p, DSL_KW_CLASS) || ps_is_kw(p, DSL_KW_ASYNC))
        return compound(p, decorators);
    ps_expected(p, "'def' or 'class' after a decorator");
    header_failed(p, NULL);
    return NULL;
}

/* Parses a compound statement at the cursor; NULL if there is none (or
 * after a reported, already recovered header error). */
static dsl_node *compound(dsl_parser *p, dsl_list decorators)
{
    if (ps_is_op(p, DSL_OP_AT))
        return decorated(p);
    if (!is_kind(p, DSL_T_KEYWORD))
        return NULL;
    switch (ps_tok(p)->sub) {
    case DSL_KW_IF: return if_stmt(p);
    case DSL_KW_FOR: return for_stmt(p);
    case DSL_KW_WHILE: return while_stmt(p);
    case DSL_KW_DEF: return funcdef(p, decorators);
    case DSL_KW_CLASS: return classdef(p, decorators);
    case DSL_KW_TRY: return try_stmt(p);
    case DSL_KW_WITH: return with_stmt(p);
    case DSL_KW_ASYNC: return async_stmt(p, decorators);
    default: return NULL;
    }
}

static bool is_compound_start(const dsl_parser *p)
{
    if (ps_is_op(p, DSL_OP_AT))
        return true;
    if (!is_kind(p, DSL_T_KEYWORD))
        return false;
    switch (ps_tok(p)->sub) {
    case DSL_KW_IF: case DSL_KW_FOR: case DSL_KW_WHILE: case DSL_KW_DEF: case DSL_KW_CLASS:
    case DSL_KW_TRY: case DSL_KW_WITH: case DSL_KW_ASYNC:
        return true;
    default:
        return false;
    }
}

static void statement(dsl_parser *p, dsl_list *out)
{
    p->failed = false;
    p->depth = 0;
    p->stmt = ps_stmt_label(p);
    const dsl_tok *t = ps_tok(p);
    if (t->kind == DSL_T_INDENT) {
        ps_error_at(p, CV_E_DSL_UNEXPECTED_INDENT, t, "unexpected indent");
        p->failed = false;
        ps_advance(p);
        statements_until_dedent(p, out);
        if (is_kind(p, DSL_T_DEDENT))
            ps_advance(p);
        return;
    }
    if (t->kind == DSL_T_NEWLINE) {
        ps_advance(p);
        return;
    }
    if (is_compound_start(p)) {
        dsl_list none = {0};
        dsl_node *n = compound(p, none);
        if (n)
            dsl_list_push(p->a, out, n);
        return;
    }
    ps_simple_stmts(p, out);
    if (p->failed)
        skip_line(p);
}

/* The statements body[from..] just parsed, less any with a node deeper than
 * DSL_MAX_AST_DEPTH (reported as CV1007): the parser builds a flat chain
 * (a+a+..., x.T.T..., f(x)(x)...) in a loop, but it is still a tree as deep
 * as the chain is long, and the analysis, the dump and the AST paths walk
 * trees recursively.  -1 when memory runs out. */
static int drop_too_deep(dsl_parser *p, dsl_list *body, int from)
{
    int kept = from;
    for (int i = from; i < body->n; i++) {
        dsl_node *at;
        int rc = dsl_ast_too_deep(body->v[i], DSL_MAX_AST_DEPTH - 1, &at);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            body->v[kept++] = body->v[i];
            continue;
        }
        p->failed = false;
        ps_error_node(p, CV_E_NESTING_TOO_DEEP, at, "expression nested deeper than %d levels (a chain of operators, "
                      "attributes, calls or subscripts counts one level per link)",
                      DSL_MAX_AST_DEPTH);
    }
    body->n = kept;
    return 0;
}

dsl_node *dsl_parse(const dsl_tokens *toks, const char *file, cv_arena *a, cv_diag *d,
                    int first_lex_diag)
{
    dsl_parser p = {.t = toks->v, .n = toks->n, .a = a, .d = d, .file = file,
                    .first_lex_diag = first_lex_diag, .last_lex_diag = first_lex_diag ? d->n : 0};
    dsl_node *m = dsl_node_new(a, DSL_N_MODULE, 1, 1);
    if (!m)
        return NULL;
    while (!p.stop && !is_kind(&p, DSL_T_EOF)) {
        int before = p.i, n_before = m->body.n;
        statement(&p, &m->body);
        if (p.i == before)
            ps_advance(&p);
        if (drop_too_deep(&p, &m->body, n_before) < 0)
            p.oom = true;
    }
    if (p.oom)
        return NULL;
    const dsl_tok *eof = &toks->v[toks->n - 1];
    m->end_line = eof->line;
    m->end_col = eof->col;
    return dsl_ast_link(m) == 0 ? m : NULL;
}

dsl_node *dsl_parse_source(const char *src, size_t len, const char *file, cv_arena *a,
                           cv_diag *d, bool *had_errors)
{
    int before = d->n, errors_before = d->n_errors;
    dsl_tokens toks;
    int lex_rc = dsl_lex(src, len, file, a, d, &toks);
    int first = d->n > before ? before + 1 : 0;
    dsl_node *m = dsl_parse(&toks, file, a, d, first);
    if (had_errors)
        *had_errors = lex_rc != 0 || d->n_errors > errors_before || !m;
    return m;
}
