/* Parser plumbing: the token cursor, error reporting (one error per
 * statement, with the statement's path), assignment targets, parameter
 * lists and statement labels. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/parse_internal.h"

/* ---- token cursor --------------------------------------------------------- */

const dsl_tok *ps_tok(const dsl_parser *p) { return &p->t[p->i]; }

const dsl_tok *ps_peek(const dsl_parser *p, int k)
{
    int j = p->i + k;
    return &p->t[j < p->n ? j : p->n - 1];
}

const dsl_tok *ps_prev(const dsl_parser *p) { return &p->t[p->i > 0 ? p->i - 1 : 0]; }

void ps_advance(dsl_parser *p)
{
    if (p->i < p->n - 1)
        p->i++;
}

bool ps_is_op(const dsl_parser *p, int op) { return ps_tok(p)->kind == DSL_T_OP && ps_tok(p)->sub == op; }
bool ps_is_kw(const dsl_parser *p, int kw) { return ps_tok(p)->kind == DSL_T_KEYWORD && ps_tok(p)->sub == kw; }
static bool is_kind(const dsl_parser *p, dsl_tok_kind k) { return ps_tok(p)->kind == k; }

bool ps_accept_op(dsl_parser *p, int op)
{
    if (!ps_is_op(p, op))
        return false;
    ps_advance(p);
    return true;
}

bool ps_accept_kw(dsl_parser *p, int kw)
{
    if (!ps_is_kw(p, kw))
        return false;
    ps_advance(p);
    return true;
}

char *ps_tok_str(dsl_parser *p, const dsl_tok *t) { return cv_arena_strndup(p->a, t->text, t->len); }

dsl_node *ps_node_at(dsl_parser *p, dsl_node_kind kind, const dsl_tok *t)
{
    dsl_node *n = dsl_node_new(p->a, kind, t->line, t->col);
    if (!n) {
        p->failed = p->stop = p->oom = true;  /* unwind everything */
        static dsl_node dummy;
        memset(&dummy, 0, sizeof dummy);
        return &dummy;
    }
    return n;
}

dsl_node *ps_finish(dsl_parser *p, dsl_node *n)
{
    const dsl_tok *t = ps_prev(p);
    n->end_line = t->end_line;
    n->end_col = t->end_col;
    return n;
}

/* ---- errors --------------------------------------------------------------- */

/* A syntax error on a line the tokenizer already reported (or at the end of
 * a file whose tokenizer failed) is a consequence of that error. */
static int lex_root(const dsl_parser *p, int line, bool at_eof)
{
    if (!p->first_lex_diag)
        return 0;
    if (at_eof)
        return p->last_lex_diag;
    for (int id = p->first_lex_diag; id <= p->last_lex_diag; id++) {
        const cv_diag_entry *e = cv_diag_get(p->d, id);
        if (e && e->sev == CV_SEV_ERROR && line >= e->span.line && line <= e->span.end_line)
            return id;
    }
    return 0;
}

static void report(dsl_parser *p, int code, cv_span sp, bool at_eof, bool soft, const char *fmt,
                   va_list ap)
{
    if (p->failed || p->stop)
        return;
    p->failed = !soft;
    if (++p->n_errors > DSL_MAX_PARSE_ERRORS) {
        p->stop = true;
        return;
    }
    cv_sb path = CV_SB_INIT;  /* owned here */
    for (int i = 0; i < p->n_ctx; i++)
        cv_sb_printf(&path, "%s>", p->ctx[i]);
    if (p->stmt)
        cv_sb_puts(&path, p->stmt);
    else if (path.len)
        path.buf[--path.len] = 0;  /* drop the trailing '>' */
    else
        cv_sb_puts(&path, "Module");
    sp.file = p->file;
    int id = cv_diag_vadd(p->d, CV_SEV_ERROR, code, sp, cv_sb_str(&path), fmt, ap);
    cv_sb_free(&path);
    int root = lex_root(p, sp.line, at_eof);
    if (id && root)
        cv_diag_set_root(p->d, id, root);
}

void ps_error_at(dsl_parser *p, int code, const dsl_tok *t, const char *fmt, ...)
{
    cv_span sp = {NULL, t->line, t->col, t->end_line, t->end_col};
    if (sp.end_line == sp.line && sp.end_col <= sp.col)
        sp.end_col = sp.col + 1;
    va_list ap;
    va_start(ap, fmt);
    const dsl_tok *eof = &p->t[p->n - 1];
    bool at_eof = t->line == eof->line && t->col == eof->col;  /* the NEWLINE, DEDENTs, EOF */
    report(p, code, sp, at_eof, false, fmt, ap);
    va_end(ap);
}

void ps_error_node(dsl_parser *p, int code, const dsl_node *n, const char *fmt, ...)
{
    cv_span sp = {NULL, n->line, n->col, n->end_line, n->end_col};
    va_list ap;
    va_start(ap, fmt);
    report(p, code, sp, false, false, fmt, ap);
    va_end(ap);
}

void ps_error_soft(dsl_parser *p, int code, const dsl_node *n, const char *fmt, ...)
{
    cv_span sp = {NULL, n->line, n->col, n->end_line, n->end_col};
    va_list ap;
    va_start(ap, fmt);
    report(p, code, sp, false, true, fmt, ap);
    va_end(ap);
}

void ps_expected(dsl_parser *p, const char *what)
{
    const dsl_tok *t = ps_tok(p);
    char got[96];
    dsl_tok_describe(t, got, sizeof got);
    if (t->kind == DSL_T_EOF)
        ps_error_at(p, CV_E_UNEXPECTED_EOF, t, "unexpected end of file: expected %s", what);
    else if (t->kind == DSL_T_INDENT)
        ps_error_at(p, CV_E_DSL_UNEXPECTED_INDENT, t, "unexpected indent: expected %s", what);
    else
        ps_error_at(p, CV_E_UNEXPECTED_TOKEN, t, "expected %s, got %s", what, got);
}

bool ps_expect_op(dsl_parser *p, int op)
{
    if (ps_accept_op(p, op))
        return true;
    char what[16];
    snprintf(what, sizeof what, "'%s'", dsl_op_text(op));
    ps_expected(p, what);
    return false;
}

/* ---- targets and parameters ----------------------------------------------- */

static const char *target_desc(const dsl_node *n)
{
    switch (n->kind) {
    case DSL_N_CALL: return "a function call";
    case DSL_N_CONSTANT: return "a literal";
    case DSL_N_BINOP: case DSL_N_UNARYOP: return "an operator expression";
    case DSL_N_COMPARE: return "a comparison";
    case DSL_N_BOOLOP: return "a boolean expression";
    case DSL_N_LAMBDA: return "a lambda";
    case DSL_N_IFEXP: return "a conditional expression";
    case DSL_N_LISTCOMP: case DSL_N_GENEXP: case DSL_N_SETCOMP: case DSL_N_DICTCOMP:
        return "a comprehension";
    case DSL_N_DICT: case DSL_N_SET: return "a dict or set display";
    case DSL_N_TUPLE: return "a tuple";
    case DSL_N_LIST: return "a list";
    default: return "this expression";
    }
}

bool ps_check_target(dsl_parser *p, dsl_node *n, bool aug)
{
    switch (n->kind) {
    case DSL_N_NAME: case DSL_N_ATTRIBUTE: case DSL_N_SUBSCRIPT:
        return true;
    case DSL_N_TUPLE: case DSL_N_LIST:
        if (aug)
            break;
        for (int i = 0; i < n->items.n; i++) {
            dsl_node *e = n->items.v[i];
            if (!ps_check_target(p, e->kind == DSL_N_STARRED ? e->a : e, false))
                return false;
        }
        return true;
    default:
        break;
    }
    ps_error_node(p, CV_E_DSL_INVALID_TARGET, n, "cannot assign to %s", target_desc(n));
    return false;
}

static void check_param(dsl_parser *p, dsl_list *out, dsl_node *arg, bool *seen_default, bool seen_star)
{
    if (arg->op == 0 && arg->a)
        *seen_default = true;
    else if (arg->op == 0 && *seen_default && !seen_star)
        ps_error_soft(p, CV_E_DSL_ARGUMENT_ORDER, arg, "parameter '%s' without a default follows a parameter with a default",
                      arg->name);
    for (int i = 0; arg->name && i < out->n; i++)
        if (out->v[i]->name && strcmp(out->v[i]->name, arg->name) == 0)
            ps_error_soft(p, CV_E_DSL_DUPLICATE_PARAMETER, arg, "duplicate parameter '%s'", arg->name);
}

void ps_params(dsl_parser *p, dsl_list *out, int close, bool annotations)
{
    bool seen_default = false, seen_star = false;
    while (!ps_is_op(p, close) && !p->failed) {
        dsl_node *arg = ps_node_at(p, DSL_N_ARG, ps_tok(p));
        if (ps_accept_op(p, DSL_OP_SLASH)) {
            arg->op = DSL_X_DIV;
        } else {
            if (ps_accept_op(p, DSL_OP_STAR))
                arg->op = DSL_X_MUL;
            else if (ps_accept_op(p, DSL_OP_POW))
                arg->op = DSL_X_POW;
            if (is_kind(p, DSL_T_NAME)) {
                arg->name = ps_tok_str(p, ps_tok(p));
                ps_advance(p);
            } else if (arg->op != DSL_X_MUL) {
                ps_expected(p, "a parameter name");
                return;
            }
            if (arg->name && annotations && ps_accept_op(p, DSL_OP_COLON))
                arg->b = ps_test(p);
            if (arg->op == 0 && ps_accept_op(p, DSL_OP_ASSIGN))
                arg->a = ps_test(p);
            if (p->failed)
                return;
            seen_star |= arg->op == DSL_X_MUL;
        }
        check_param(p, out, ps_finish(p, arg), &seen_default, seen_star);
        dsl_list_push(p->a, out, arg);
        if (!ps_accept_op(p, DSL_OP_COMMA))
            break;
    }
}

/* ---- statement labels for error paths ------------------------------------- */

static const char *simple_label(const dsl_parser *p)
{
    int depth = 0;
    for (int k = 0;; k++) {
        const dsl_tok *t = ps_peek(p, k);
        if (t->kind == DSL_T_NEWLINE || t->kind == DSL_T_EOF)
            return "Expr";
        if (t->kind != DSL_T_OP)
            continue;
        int op = t->sub;
        if (op == DSL_OP_LPAR || op == DSL_OP_LSQB || op == DSL_OP_LBRACE)
            depth++;
        else if (op == DSL_OP_RPAR || op == DSL_OP_RSQB || op == DSL_OP_RBRACE)
            depth--;
        else if (depth == 0 && op == DSL_OP_ASSIGN)
            return "Assign";
        else if (depth == 0 && op >= DSL_OP_POWEQ && op <= DSL_OP_ATEQ && op != DSL_OP_ELLIPSIS &&
                 op != DSL_OP_POW && op != DSL_OP_FLOORDIV && op != DSL_OP_SHL && op != DSL_OP_SHR &&
                 op != DSL_OP_LE && op != DSL_OP_GE && op != DSL_OP_EQ && op != DSL_OP_NE &&
                 op != DSL_OP_ARROW && op != DSL_OP_WALRUS)
            return "AugAssign";
        else if (depth == 0 && op == DSL_OP_COLON)
            return "AnnAssign";
    }
}

static const char *def_label(dsl_parser *p, int k)
{
    const dsl_tok *name = ps_peek(p, k + 1);
    const char *kind = ps_peek(p, k)->sub == DSL_KW_CLASS ? "ClassDef" : "FunctionDef";
    if (name->kind != DSL_T_NAME)
        return kind;
    char buf[160];
    snprintf(buf, sizeof buf, "%s[%.*s]", kind, (int)(name->len > 120 ? 120 : name->len), name->text);
    return cv_arena_strdup(p->a, buf);
}

const char *ps_stmt_label(dsl_parser *p)
{
    const dsl_tok *t = ps_tok(p);
    if (t->kind == DSL_T_OP && t->sub == DSL_OP_AT) {
        /* A decorated definition: find its def/class. */
        for (int k = 1; k < 4096; k++) {
            const dsl_tok *u = ps_peek(p, k);
            if (u->kind == DSL_T_EOF)
                break;
            if (u->kind == DSL_T_KEYWORD && (u->sub == DSL_KW_DEF || u->sub == DSL_KW_CLASS))
                return def_label(p, k);
        }
        return "FunctionDef";
    }
    if (t->kind != DSL_T_KEYWORD)
        return simple_label(p);
    switch (t->sub) {
    case DSL_KW_DEF: case DSL_KW_CLASS: return def_label(p, 0);
    case DSL_KW_IF: return "If";
    case DSL_KW_FOR: return "For";
    case DSL_KW_WHILE: return "While";
    case DSL_KW_TRY: return "Try";
    case DSL_KW_WITH: return "With";
    case DSL_KW_RETURN: return "Return";
    case DSL_KW_IMPORT: return "Import";
    case DSL_KW_FROM: return "ImportFrom";
    case DSL_KW_GLOBAL: return "Global";
    case DSL_KW_NONLOCAL: return "Nonlocal";
    case DSL_KW_DEL: return "Delete";
    case DSL_KW_ASSERT: return "Assert";
    case DSL_KW_RAISE: return "Raise";
    case DSL_KW_PASS: return "Pass";
    case DSL_KW_BREAK: return "Break";
    case DSL_KW_CONTINUE: return "Continue";
    case DSL_KW_ASYNC: return "Async";
    default: return simple_label(p);
    }
}

