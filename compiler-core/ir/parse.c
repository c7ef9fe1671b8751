/* CU-IR text parser: module, models and statements.  It builds the module
 * only through the builder API and records the declared result types; it
 * never runs shape functions (cv_verify compares inferred with declared).
 * Names are resolved when a model closes, so a use before the definition
 * reaches the verifier (CV2003) and a name never defined becomes a
 * placeholder value (CV2001).  After a syntax error the parser skips to the
 * next line and goes on, so one run reports several errors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/ir/parse.h"

/* ---- helpers shared with parse_lit.c ------------------------------------- */

void *cv_vec_push(cv_vec *v, size_t elem)
{
    size_t need = ((size_t)v->n + 1) * elem;
    if (need > v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        while (cap < need)
            cap *= 2;
        void *p = realloc(v->v, cap);
        if (!p)
            return NULL;
        v->v = p;
        v->cap = cap;
    }
    return (char *)v->v + (size_t)v->n++ * elem;
}

void cv_vec_free(cv_vec *v)
{
    free(v->v);
    memset(v, 0, sizeof *v);
}

void cv_p_next(cv_parser *P)
{
    if (P->cur.kind != TK_NEWLINE)
        P->prev_end_col = P->cur.end_col;
    cv_lex_next(&P->L, &P->cur);
}

cv_span cv_p_span(const cv_parser *P, const cv_token *t)
{
    cv_span s = {.file = P->file, .line = t->line, .col = t->col,
                 .end_line = t->line, .end_col = t->end_col};
    return s;
}

void cv_p_close(const cv_parser *P, cv_span *s)
{
    if (P->prev_end_col > s->col)
        s->end_col = P->prev_end_col;
}

void cv_p_describe(const cv_token *t, char *buf, size_t size)
{
    if (t->kind == TK_EOF)
        snprintf(buf, size, "end of input");
    else if (t->kind == TK_NEWLINE)
        snprintf(buf, size, "end of line");
    else
        snprintf(buf, size, "'%.*s%s'", (int)(t->n > 32 ? 32 : t->n), t->p, t->n > 32 ? "..." : "");
}

bool cv_p_fail(cv_parser *P, const cv_token *t, int code, const char *fmt, ...)
{
    if (P->failed)
        return false;
    P->failed = true;
    P->err_span = cv_p_span(P, t);
    if (t->kind == TK_ERROR)
        code = t->err;  /* the lexer's own diagnosis wins */
    /* Running out of input where anything was due is a truncation, and so
     * is a wrong last token that the end of input cut short ("f3"). */
    bool truncated = code != CV_E_UNEXPECTED_EOF &&
                     (t->kind == TK_EOF || (t->kind != TK_ERROR && t->kind != TK_NEWLINE &&
                                            t->p + t->n == P->L.end));
    size_t off = 0, size = sizeof P->err_msg;
    if (truncated)
        off = (size_t)snprintf(P->err_msg, size, "input ends too early (truncated file?): ");
    if (t->kind == TK_ERROR) {
        snprintf(P->err_msg + off, size - off, "%s", t->msg);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(P->err_msg + off, size - off, fmt, ap);
        va_end(ap);
    }
    P->err_code = truncated ? CV_E_UNEXPECTED_EOF : code;
    return false;
}

bool cv_p_expect(cv_parser *P, cv_tk kind, const char *what)
{
    if (P->cur.kind == kind) {
        cv_p_next(P);
        return true;
    }
    char got[64];
    cv_p_describe(&P->cur, got, sizeof got);
    return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected %s, got %s", what, got);
}

bool cv_p_list_open(cv_parser *P, cv_tk open, cv_tk close, const char *what, bool *done)
{
    if (!cv_p_expect(P, open, what))
        return false;
    *done = P->cur.kind == close;
    if (*done)
        cv_p_next(P);
    return true;
}

bool cv_p_list_sep(cv_parser *P, cv_tk close, const char *what, bool *done)
{
    if (P->cur.kind == TK_COMMA) {
        cv_p_next(P);
        *done = false;
        return true;
    }
    return cv_p_expect(P, close, what) && (*done = true);
}

/* ---- error reporting and recovery ---------------------------------------- */

static void report(cv_parser *P, int code, cv_span span, const char *msg)
{
    char path[160];
    const char *pp = NULL;
    if (P->f) {
        snprintf(path, sizeof path, "@%s", P->f->name);
        pp = path;
    }
    cv_diag_add(P->d, CV_SEV_ERROR, code, span, pp, "%s", msg);
    if (code == CV_E_UNEXPECTED_EOF)
        P->stop = true;  /* nothing follows a truncation */
    if (++P->n_errors >= CV_CUIR_MAX_ERRORS && !P->stop) {
        cv_diag_add(P->d, CV_SEV_NOTE, CV_E_UNEXPECTED_TOKEN, span, pp,
                    "too many syntax errors (%d); stopping here", P->n_errors);
        P->stop = true;
    }
}

/* Reports the statement's error and moves to the start of the next line.
 * A line whose brackets nest too deep reports that instead (CV1007). */
static void recover(cv_parser *P)
{
    if (!P->failed)
        return;
    P->failed = false;
    cv_span span = P->err_span;
    int code = P->err_code;
    const char *msg = P->err_msg;
    if (P->cur.kind == TK_EOF) {
        report(P, code, span, msg);
        P->stop = true;
        return;
    }
    if (P->cur.kind != TK_NEWLINE) {
        int line = P->cur.line, deep_col;
        cv_lex_skip_line(&P->L, P->L.line_start, CV_CUIR_MAX_DEPTH, &deep_col);
        if (deep_col) {
            code = CV_E_NESTING_TOO_DEEP;
            span = (cv_span){.file = P->file, .line = line, .col = deep_col,
                             .end_line = line, .end_col = deep_col + 1};
            msg = "brackets are nested more than 64 levels deep";
        }
    }
    report(P, code, span, msg);
    P->cur.kind = TK_NEWLINE;  /* the line is done: read on from the next one */
    cv_p_next(P);
}

static void skip_newlines(cv_parser *P)
{
    while (P->cur.kind == TK_NEWLINE)
        cv_p_next(P);
}

static bool end_stmt(cv_parser *P, const char *after)
{
    if (P->cur.kind == TK_EOF)
        return true;
    if (P->cur.kind == TK_NEWLINE) {
        cv_p_next(P);
        return true;
    }
    char got[64];
    cv_p_describe(&P->cur, got, sizeof got);
    return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected end of line after %s, got %s", after, got);
}

static bool value_name(cv_parser *P, cv_pname *out)
{
    if (P->cur.kind != TK_VALUE) {
        char got[64];
        cv_p_describe(&P->cur, got, sizeof got);
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected a value name such as %%x, got %s", got);
    }
    out->name = cv_lex_cstr(&P->L, &P->cur);
    out->span = cv_p_span(P, &P->cur);
    cv_p_next(P);
    return out->name != NULL || cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
}

static bool push_name(cv_parser *P, cv_vec *v, const cv_pname *n)
{
    cv_pname *slot = cv_vec_push(v, sizeof *slot);
    if (!slot)
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    *slot = *n;
    return true;
}

/* A copy of n whose name outlives the statement. */
static bool keep_name(cv_parser *P, cv_pname *n)
{
    n->name = cv_arena_strdup(&P->scratch, n->name);
    return n->name != NULL || cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
}

/* Starts a statement: the line arena of the one before last is free again
 * (the current token was read into the other one). */
static void next_line(cv_parser *P)
{
    P->line_i ^= 1;
    cv_arena_reset(&P->line[P->line_i]);
    P->L.scratch = &P->line[P->line_i];
}

/* ---- model header -------------------------------------------------------- */

static bool parse_inputs(cv_parser *P)
{
    bool done;
    if (!cv_p_list_open(P, TK_LPAREN, TK_RPAREN, "'(' and the model inputs", &done))
        return false;
    while (!done) {
        cv_pname n;
        cv_type t;
        if (!value_name(P, &n) || !cv_p_expect(P, TK_COLON, "':' and the input's type") ||
            !cv_p_type(P, &t))
            return false;
        cv_func_add_input(P->f, n.name, &t)->span = n.span;
        if (!cv_p_list_sep(P, TK_RPAREN, "',' or ')' after an input", &done))
            return false;
    }
    return true;
}

static bool parse_outputs(cv_parser *P)
{
    bool done;
    if (!cv_p_expect(P, TK_ARROW, "'->' and the output types") ||
        !cv_p_list_open(P, TK_LPAREN, TK_RPAREN, "'(' and the output types", &done))
        return false;
    while (!done) {
        cv_type t;
        if (!cv_p_type(P, &t))
            return false;
        cv_func_add_output_type(P->f, &t);
        if (!cv_p_list_sep(P, TK_RPAREN, "',' or ')' after an output type", &done))
            return false;
    }
    return true;
}

/* model @name(inputs) -> (types) { */
static bool parse_model_header(cv_parser *P)
{
    cv_token kw = P->cur;
    cv_p_next(P);
    const char *name = "?";
    bool named = P->cur.kind == TK_GLOBAL;
    if (named)
        name = cv_lex_cstr(&P->L, &P->cur);
    P->f = cv_func_new(P->m, name);
    P->f->span = cv_p_span(P, &kw);
    if (!named)
        return cv_p_expect(P, TK_GLOBAL, "a model name such as @lenet");
    cv_p_next(P);
    if (!parse_inputs(P) || !parse_outputs(P) || !cv_p_expect(P, TK_LBRACE, "'{' to open the body"))
        return false;
    cv_p_close(P, &P->f->span);
    return end_stmt(P, "'{'");
}

/* ---- statements ---------------------------------------------------------- */

/* param %name: type = weights("file", "key") | dense(v, ...) */
static bool parse_param(cv_parser *P)
{
    cv_span span = cv_p_span(P, &P->cur);
    cv_p_next(P);
    cv_pname n;
    cv_type t;
    if (!value_name(P, &n) || !cv_p_expect(P, TK_COLON, "':' and the param's type") ||
        !cv_p_type(P, &t) || !cv_p_expect(P, TK_EQ, "'=' and weights(...) or dense(...)"))
        return false;
    cv_param *p;
    if (cv_tok_is(&P->cur, "weights")) {
        cv_p_next(P);
        if (!cv_p_expect(P, TK_LPAREN, "'(' after weights"))
            return false;
        cv_token file = P->cur;
        if (!cv_p_expect(P, TK_STRING, "the quoted weights file name"))
            return false;
        if (!cv_p_expect(P, TK_COMMA, "',' and the tensor name"))
            return false;
        cv_token key = P->cur;
        if (!cv_p_expect(P, TK_STRING, "the quoted tensor name") ||
            !cv_p_expect(P, TK_RPAREN, "')' to close weights("))
            return false;
        cv_p_close(P, &span);
        if (!end_stmt(P, "the param"))
            return false;
        p = cv_func_add_weights(P->f, n.name, &t, file.s, key.s);
    } else if (cv_tok_is(&P->cur, "dense")) {
        if (!cv_p_dense(P, &t))
            return false;
        cv_p_close(P, &span);
        if (!end_stmt(P, "the param"))
            return false;
        p = cv_func_add_dense(P->f, n.name, &t, P->bytes.v,
                              (size_t)P->bytes.n * cv_dtype_size(t.dtype));
    } else {
        char got[64];
        cv_p_describe(&P->cur, got, sizeof got);
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected weights(...) or dense(...), got %s", got);
    }
    p->span = span;
    p->value->span = n.span;
    return true;
}

/* Operands resolve now when already defined, else when the model closes. */
static bool parse_operands(cv_parser *P)
{
    bool done;
    if (!cv_p_list_open(P, TK_LPAREN, TK_RPAREN, "'(' and the operands", &done))
        return false;
    while (!done) {
        cv_pname n;
        if (!value_name(P, &n))
            return false;
        cv_value **slot = cv_vec_push(&P->operands, sizeof *slot);
        if (!slot)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        *slot = cv_func_find_value(P->f, n.name);
        if (!*slot) {
            cv_fwd *fw = cv_vec_push(&P->fwd_here, sizeof *fw);
            if (!fw || !keep_name(P, &n))
                return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
            *fw = (cv_fwd){.k = P->operands.n - 1, .ref = n};
        }
        if (!cv_p_list_sep(P, TK_RPAREN, "',' or ')' after an operand", &done))
            return false;
    }
    return true;
}

static bool parse_result_types(cv_parser *P)
{
    for (;;) {
        cv_type *t = cv_vec_push(&P->types, sizeof *t);
        if (!t)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        if (!cv_p_type(P, t))
            return false;
        if (P->cur.kind != TK_COMMA)
            break;
        cv_p_next(P);
    }
    if (P->types.n != P->results.n)
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "%d result%s named but %d type%s given", P->results.n,
                         P->results.n == 1 ? "" : "s", P->types.n, P->types.n == 1 ? "" : "s");
    return true;
}

/* Builds the op from the parsed pieces (only once the whole line parsed). */
static bool build_op(cv_parser *P, const char *opname, cv_span span)
{
    cv_op *op = cv_op_new(P->f, opname, P->operands.v, P->operands.n);
    for (int k = 0; k < P->attrs.n; k++)
        cv_op_put_attr(op, &CV_VEC_AT(P->attrs, cv_attr, k));
    for (int k = 0; k < P->locs.n; k++) {
        const cv_ploc *l = &CV_VEC_AT(P->locs, cv_ploc, k);
        cv_op_add_loc(op, l->file, l->line, l->col);
    }
    const char **names = cv_arena_alloc_array(P->L.scratch, (size_t)P->results.n, sizeof *names);
    if (!names)
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < P->results.n; k++)
        names[k] = CV_VEC_AT(P->results, cv_pname, k).name;
    cv_op_finish_declared(op, P->results.n, names, P->types.v);
    op->span = span;
    for (int k = 0; k < P->results.n; k++)
        op->results[k]->span = CV_VEC_AT(P->results, cv_pname, k).span;
    for (int k = 0; k < P->fwd_here.n; k++) {
        cv_fwd *fw = cv_vec_push(&P->fwd, sizeof *fw);
        if (!fw)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        *fw = CV_VEC_AT(P->fwd_here, cv_fwd, k);
        fw->op = op;
    }
    return true;
}

/* %a, %b = opname(%x, ...) {attrs} : type, type  loc(...) */
static bool parse_op(cv_parser *P)
{
    cv_span span = cv_p_span(P, &P->cur);
    P->results.n = P->operands.n = P->fwd_here.n = P->types.n = P->attrs.n = P->locs.n = 0;
    for (;;) {
        cv_pname n;
        if (!value_name(P, &n) || !push_name(P, &P->results, &n))
            return false;
        if (P->cur.kind != TK_COMMA)
            break;
        cv_p_next(P);
    }
    if (!cv_p_expect(P, TK_EQ, "'=' and an op"))
        return false;
    if (P->cur.kind != TK_IDENT)
        return cv_p_expect(P, TK_IDENT, "an op name");
    const char *opname = cv_lex_cstr(&P->L, &P->cur);
    cv_p_next(P);
    if (!parse_operands(P))
        return false;
    if (P->cur.kind == TK_LBRACE && !cv_p_attrs(P, cv_op_def_lookup(opname)))
        return false;
    if (!cv_p_expect(P, TK_COLON, "':' and the result types") || !parse_result_types(P))
        return false;
    cv_p_close(P, &span);
    if (cv_tok_is(&P->cur, "loc") && !cv_p_loc(P))
        return false;
    return end_stmt(P, "the op") && build_op(P, opname, span);
}

/* return %a, %b */
static bool parse_return(cv_parser *P)
{
    cv_span span = cv_p_span(P, &P->cur);
    if (P->have_return)
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "a model has one return statement");
    P->have_return = true;  /* even if this one is broken: no "missing return" later */
    P->ret_span = span;
    cv_p_next(P);
    P->rets.n = 0;
    while (P->cur.kind == TK_VALUE) {
        cv_pname n;
        if (!value_name(P, &n) || !keep_name(P, &n) || !push_name(P, &P->rets, &n))
            return false;
        if (P->cur.kind != TK_COMMA)
            break;
        cv_p_next(P);
        if (P->cur.kind != TK_VALUE)
            return cv_p_expect(P, TK_VALUE, "a value name after ','");
    }
    cv_p_close(P, &span);
    P->ret_span = span;
    return end_stmt(P, "the returned values");
}

static cv_value *resolve(cv_parser *P, const cv_pname *n)
{
    cv_value *v = cv_func_find_value(P->f, n->name);
    if (!v) {
        v = cv_func_add_undefined(P->f, n->name);
        v->span = n->span;
    }
    return v;
}

/* Binds forward references and the returned values once every definition
 * of the model has been seen. */
static void close_model(cv_parser *P)
{
    cv_func *f = P->f;
    for (int k = 0; k < P->fwd.n; k++) {
        cv_fwd *fw = &CV_VEC_AT(P->fwd, cv_fwd, k);
        cv_op_set_operand(fw->op, fw->k, resolve(P, &fw->ref));
    }
    cv_value **vals = cv_arena_alloc_array(&P->scratch, (size_t)P->rets.n + 1, sizeof *vals);
    for (int k = 0; vals && k < P->rets.n; k++)
        vals[k] = resolve(P, &CV_VEC_AT(P->rets, cv_pname, k));
    if (vals)
        cv_func_set_returns(f, vals, P->rets.n);
    f->ret_span = P->ret_span;
    P->fwd.n = P->rets.n = 0;
    P->have_return = false;
    P->ret_span = (cv_span){0};
    P->f = NULL;
}

static bool parse_statement(cv_parser *P)
{
    const cv_token *t = &P->cur;
    if (P->have_return && (t->kind == TK_VALUE || cv_tok_is(t, "param")))
        return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "statements after the return statement");
    if (cv_tok_is(t, "param"))
        return parse_param(P);
    if (cv_tok_is(t, "return"))
        return parse_return(P);
    if (t->kind == TK_VALUE)
        return parse_op(P);
    char got[64];
    cv_p_describe(t, got, sizeof got);
    return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "expected param, an op (%%x = ...), return or '}', got %s", got);
}

static void parse_model(cv_parser *P)
{
    /* After a broken header the body is still read, but what is missing at
     * its end (return, '}') would only repeat that error. */
    bool quiet = !parse_model_header(P);
    recover(P);
    char name[128];
    snprintf(name, sizeof name, "%s", P->f->name);
    while (!P->stop) {
        skip_newlines(P);
        if (P->cur.kind == TK_RBRACE) {
            if (!P->have_return && !quiet)
                cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "model @%s has no return statement", name);
            cv_p_next(P);
            if (!P->failed)
                end_stmt(P, "'}'");
            break;
        }
        if (P->cur.kind == TK_EOF) {
            if (!quiet)
                cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_EOF, "input ends inside model @%s (truncated file?): "
                          "expected '}'", name);
            break;
        }
        if (cv_tok_is(&P->cur, "model")) {
            cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected '}' to close model @%s before the next model",
                      name);
            report(P, P->err_code, P->err_span, P->err_msg);
            P->failed = false;
            break;
        }
        next_line(P);
        if (!parse_statement(P))
            recover(P);
    }
    recover(P);
    if (P->f)
        close_model(P);
}

/* bound SYMBOL INT "why": a fact the model implies (ir/facts.c). */
static bool parse_bound(cv_parser *P)
{
    cv_p_next(P);
    const cv_token *t = &P->cur;
    char sym[256];
    if (t->kind == TK_IDENT && t->n < sizeof sym)
        memcpy(sym, t->p, t->n), sym[t->n] = 0;
    else if (t->kind == TK_STRING && t->slen > 0 && t->slen < sizeof sym && !memchr(t->s, 0, t->slen))
        memcpy(sym, t->s, t->slen), sym[t->slen] = 0;
    else
        return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "expected a symbol after 'bound'");
    cv_p_next(P);
    if (P->cur.kind != TK_INT || P->cur.overflow || P->cur.i < 0)
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected the bound (a non-negative integer) of %s",
                         sym);
    int64_t max = P->cur.i;
    cv_p_next(P);
    if (P->cur.kind != TK_STRING || memchr(P->cur.s, 0, P->cur.slen))
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected a string saying why %s <= %lld", sym,
                         (long long)max);
    char *why = cv_arena_strndup(&P->scratch, P->cur.s, P->cur.slen);
    if (!why || cv_module_add_fact(P->m, sym, max, why))
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    cv_p_next(P);
    if (P->cur.kind != TK_NEWLINE && P->cur.kind != TK_EOF)
        return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected the end of the line after a bound");
    return true;
}

static bool parse_header(cv_parser *P)
{
    skip_newlines(P);
    if (P->cur.kind == TK_EOF) {
        report(P, CV_E_BAD_HEADER, cv_p_span(P, &P->cur), "the input is empty: expected the header 'cuir 1'");
        return false;
    }
    if (!cv_tok_is(&P->cur, "cuir"))
        return cv_p_fail(P, &P->cur, CV_E_BAD_HEADER, "expected the header 'cuir 1' at the start of the file");
    cv_p_next(P);
    const cv_token *t = &P->cur;
    if (t->kind != TK_INT)
        return cv_p_fail(P, t, CV_E_BAD_HEADER, "expected a version number after 'cuir'");
    if (t->overflow || t->i != 1)
        return cv_p_fail(P, t, CV_E_BAD_HEADER, "unsupported CU-IR version %.*s (this reader knows 1)",
                         (int)(t->n > 20 ? 20 : t->n), t->p);
    P->m->version = 1;
    cv_p_next(P);
    return end_stmt(P, "the header");
}

/* File-level checks before any token: size, NUL bytes, UTF-8. */
static bool check_bytes(const char *text, size_t len, const char *file, cv_diag *d)
{
    cv_span s = {.file = file, .line = 1, .col = 1, .end_line = 1, .end_col = 2};
    if (len > CV_CUIR_MAX_INPUT) {
        cv_diag_error(d, CV_E_INPUT_TOO_LARGE, s, "input is %zu bytes; the limit is %zu", len, CV_CUIR_MAX_INPUT);
        return false;
    }
    /* Both problems are reported, the earlier one first. */
    long long nul = cv_lex_find_nul(text, len), bad = cv_lex_find_bad_utf8(text, len);
    long long offs[2] = {nul, bad};
    if (bad >= 0 && (nul < 0 || bad < nul)) {
        offs[0] = bad;
        offs[1] = nul;
    }
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        if (offs[i] < 0)
            continue;
        cv_lex_line_col(text, (size_t)offs[i], &s.line, &s.col);
        s.end_line = s.line;
        s.end_col = s.col + 1;
        if (offs[i] == nul)
            cv_diag_error(d, CV_E_NUL_BYTE, s, "NUL byte in the input (is this a binary file?)");
        else
            cv_diag_error(d, CV_E_INVALID_UTF8, s, "invalid UTF-8 (byte 0x%02x)", (unsigned char)text[bad]);
        ok = false;
    }
    return ok;
}

static void parser_free(cv_parser *P)
{
    cv_vec *vecs[] = {&P->results, &P->operands, &P->fwd_here, &P->types, &P->attrs,
                      &P->locs, &P->bytes, &P->list, &P->fwd, &P->rets};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        cv_vec_free(vecs[i]);
    cv_arena_free(&P->scratch);
    cv_arena_free(&P->line[0]);
    cv_arena_free(&P->line[1]);
}

cv_module *cv_cuir_parse(const char *text, size_t len, const char *filename, cv_diag *d)
{
    if (!filename)
        filename = "<input>";
    if (!text)
        len = 0;
    if (!check_bytes(text ? text : "", len, filename, d))
        return NULL;
    cv_parser P = {0};
    P.d = d;
    P.m = cv_module_new(filename);
    if (!P.m)
        return NULL;
    P.file = P.m->path;
    cv_arena_init(&P.scratch);
    cv_arena_init(&P.line[0]);
    cv_arena_init(&P.line[1]);
    cv_lex_init(&P.L, text ? text : "", len, &P.line[0]);
    cv_lex_next(&P.L, &P.cur);
    if (!parse_header(&P)) {
        recover(&P);
        P.stop = true;
    }
    while (!P.stop) {
        skip_newlines(&P);
        if (P.cur.kind == TK_EOF)
            break;
        if (cv_tok_is(&P.cur, "model")) {
            parse_model(&P);
            continue;
        }
        if (cv_tok_is(&P.cur, "bound")) {
            if (!parse_bound(&P))
                recover(&P);
            continue;
        }
        char got[64];
        cv_p_describe(&P.cur, got, sizeof got);
        cv_p_fail(&P, &P.cur, CV_E_UNEXPECTED_TOKEN, "expected 'model', got %s", got);
        recover(&P);
        /* Whatever this is, it is not CU-IR: skip it up to the next model. */
        while (P.cur.kind != TK_EOF && !cv_tok_is(&P.cur, "model")) {
            if (P.cur.kind != TK_NEWLINE)
                cv_lex_skip_line(&P.L, P.cur.p, CV_CUIR_MAX_DEPTH, &(int){0});
            P.cur.kind = TK_NEWLINE;
            cv_p_next(&P);
        }
    }
    int errors = P.n_errors;
    parser_free(&P);
    if (errors) {
        cv_module_free(P.m);
        return NULL;
    }
    return P.m;
}
