/* Tokenizer for the Cuvil model language (see lexer.h).  Literals are in
 * lex_literals.c; this file holds the line structure: indentation,
 * brackets, newlines, continuations, names and operators. */
#include "compiler-core/frontends/dsl/lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/lex_internal.h"

static const char *const kw_text[] = {
    NULL,
#define X(id, s) s,
    DSL_KEYWORDS(X)
#undef X
};

static const char *const op_text[] = {
    NULL,
#define X(id, s) s,
    DSL_OPERATORS(X)
#undef X
};

#define N_KW ((int)(sizeof kw_text / sizeof kw_text[0]))
#define N_OP ((int)(sizeof op_text / sizeof op_text[0]))

const char *dsl_op_text(int op) { return (op > 0 && op < N_OP) ? op_text[op] : "?"; }
const char *dsl_kw_text(int kw) { return (kw > 0 && kw < N_KW) ? kw_text[kw] : "?"; }

void dsl_tok_describe(const dsl_tok *t, char *buf, size_t size)
{
    switch (t->kind) {
    case DSL_T_EOF: snprintf(buf, size, "end of file"); break;
    case DSL_T_NEWLINE: snprintf(buf, size, "end of line"); break;
    case DSL_T_INDENT: snprintf(buf, size, "indent"); break;
    case DSL_T_DEDENT: snprintf(buf, size, "dedent"); break;
    case DSL_T_NAME: snprintf(buf, size, "name '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
    case DSL_T_KEYWORD: snprintf(buf, size, "keyword '%s'", dsl_kw_text(t->sub)); break;
    case DSL_T_INT: case DSL_T_FLOAT: case DSL_T_IMAG:
        snprintf(buf, size, "number %.*s", (int)(t->len > 40 ? 40 : t->len), t->text); break;
    case DSL_T_STRING: snprintf(buf, size, "string literal"); break;
    case DSL_T_OP: snprintf(buf, size, "'%s'", dsl_op_text(t->sub)); break;
    }
}

/* ---- cursor ------------------------------------------------------------- */

int dsl_lx_peek(const dsl_lexer *lx, size_t k)
{
    return lx->pos + k < lx->len ? (unsigned char)lx->src[lx->pos + k] : -1;
}

void dsl_lx_adv(dsl_lexer *lx)
{
    if (lx->pos >= lx->len)
        return;
    unsigned char c = (unsigned char)lx->src[lx->pos++];
    if (c == '\n' || (c == '\r' && dsl_lx_peek(lx, 0) != '\n')) {
        lx->line++;
        lx->col = 1;
    } else if ((c & 0xC0) != 0x80 && c != '\r') {
        lx->col++;
    }
}

static int lx_verror(dsl_lexer *lx, int code, const char *what, cv_span sp, const char *fmt,
                     va_list ap)
{
    if (lx->n_errors >= DSL_MAX_LEX_ERRORS) {
        lx->fatal = true;
        return 0;
    }
    lx->n_errors++;
    char path[64];
    snprintf(path, sizeof path, "Module>%s", what);
    sp.file = lx->file;
    if (sp.end_line < sp.line || (sp.end_line == sp.line && sp.end_col <= sp.col)) {
        sp.end_line = sp.line;
        sp.end_col = sp.col + 1;
    }
    return cv_diag_vadd(lx->d, CV_SEV_ERROR, code, sp, path, fmt, ap);
}

int dsl_lx_error(dsl_lexer *lx, int code, const char *what, int line, int col,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int id = lx_verror(lx, code, what, (cv_span){NULL, line, col, lx->line, lx->col}, fmt, ap);
    va_end(ap);
    return id;
}

/* An error spanning the one character at line:col (a bracket). */
static int error_point(dsl_lexer *lx, int code, const char *what, int line, int col,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int error_point(dsl_lexer *lx, int code, const char *what, int line, int col,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int id = lx_verror(lx, code, what, (cv_span){NULL, line, col, line, col + 1}, fmt, ap);
    va_end(ap);
    return id;
}

dsl_tok *dsl_lx_push(dsl_lexer *lx, dsl_tok_kind kind, size_t start, int line, int col)
{
    if (lx->n == lx->cap) {
        int cap = lx->cap ? lx->cap * 2 : 256;
        dsl_tok *v = cv_arena_alloc_array(lx->a, (size_t)cap, sizeof *v);
        if (!v) {
            lx->fatal = true;
            return &lx->scratch;
        }
        if (lx->n)
            memcpy(v, lx->v, (size_t)lx->n * sizeof *v);
        lx->v = v;
        lx->cap = cap;
    }
    dsl_tok *t = &lx->v[lx->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->text = lx->src + start;
    t->len = lx->pos - start;
    t->line = line;
    t->col = col;
    t->end_line = lx->line;
    t->end_col = lx->col;
    lx->line_has_tokens = true;
    return t;
}

/* ---- whole-input checks --------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *p, size_t avail)
{
    unsigned c = p[0];
    int n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; min = 0x10000; }
    else return 0;
    if ((size_t)n > avail)
        return 0;
    unsigned cp = c & (0x7Fu >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* CPython refuses a whole file with a NUL byte or bad UTF-8; so do we. */
static bool check_bytes(dsl_lexer *lx)
{
    bool ok = true, nul_seen = false, bad_seen = false;
    while (lx->pos < lx->len && !(nul_seen && bad_seen)) {
        const unsigned char *p = (const unsigned char *)lx->src + lx->pos;
        if (*p == 0 && !nul_seen) {
            dsl_lx_error(lx, CV_E_NUL_BYTE, "Source", lx->line, lx->col, "source contains a NUL byte");
            nul_seen = true;
            ok = false;
        }
        int n = utf8_len(p, lx->len - lx->pos);
        if (n == 0) {
            if (!bad_seen)
                dsl_lx_error(lx, CV_E_INVALID_UTF8, "Source", lx->line, lx->col,
                             "invalid UTF-8 byte 0x%02x", *p);
            bad_seen = true;
            ok = false;
            n = 1;
        }
        for (int i = 0; i < n; i++)
            dsl_lx_adv(lx);
    }
    lx->pos = 0;
    lx->line = lx->col = 1;
    return ok;
}

/* ---- indentation ---------------------------------------------------------- */

/* Measures the indentation of the line at pos: width with tabs to multiples
 * of 8 and with tabs as 1 column (CPython's TabError test compares both).
 * Returns false for a blank or comment-only line. */
static bool measure_indent(dsl_lexer *lx, int *width, int *alt)
{
    int w = 0, a = 0;
    for (;;) {
        int c = dsl_lx_peek(lx, 0);
        if (c == ' ') { w++; a++; }
        else if (c == '\t') { w = (w / 8 + 1) * 8; a++; }
        else if (c == '\f') { w = a = 0; }
        else break;
        dsl_lx_adv(lx);
    }
    *width = w;
    *alt = a;
    int c = dsl_lx_peek(lx, 0);
    return !(c == '#' || c == '\n' || c == '\r' || c == -1 ||
             (c == '\\' && (dsl_lx_peek(lx, 1) == '\n' || dsl_lx_peek(lx, 1) == '\r')));
}

static void tab_error(dsl_lexer *lx)
{
    dsl_lx_error(lx, CV_E_DSL_TAB_ERROR, "Indent", lx->line, 1, "inconsistent use of tabs and spaces in indentation");
}

static void handle_indent(dsl_lexer *lx)
{
    int w, alt;
    if (!measure_indent(lx, &w, &alt))
        return;
    lx->at_line_start = false;
    int *st = lx->indent, *as = lx->alt_indent;
    int line = lx->line, col = lx->col;
    size_t here = lx->pos;
    if (w == st[lx->n_indent]) {
        if (alt != as[lx->n_indent])
            tab_error(lx);
    } else if (w > st[lx->n_indent]) {
        if (alt <= as[lx->n_indent])
            tab_error(lx);
        if (lx->n_indent + 1 >= DSL_MAX_INDENT) {
            dsl_lx_error(lx, CV_E_NESTING_TOO_DEEP, "Indent", line, col, "too many levels of indentation (limit %d)",
                         DSL_MAX_INDENT);
            lx->fatal = true;
            return;
        }
        lx->n_indent++;
        st[lx->n_indent] = w;
        as[lx->n_indent] = alt;
        dsl_lx_push(lx, DSL_T_INDENT, here, line, col);
    } else {
        while (lx->n_indent > 0 && w < st[lx->n_indent]) {
            lx->n_indent--;
            dsl_lx_push(lx, DSL_T_DEDENT, here, line, col);
        }
        if (w != st[lx->n_indent])
            dsl_lx_error(lx, CV_E_DSL_UNINDENT_MISMATCH, "Indent", line, col,
                         "unindent does not match any outer indentation level");
        else if (alt != as[lx->n_indent])
            tab_error(lx);
    }
    lx->line_has_tokens = false;  /* INDENT/DEDENT do not make a logical line */
}

/* ---- names, operators, brackets ------------------------------------------- */

static bool is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool dsl_lx_is_name_char(int c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

static int keyword_of(const char *s, size_t n)
{
    for (int k = 1; k < N_KW; k++)
        if (strlen(kw_text[k]) == n && memcmp(kw_text[k], s, n) == 0)
            return k;
    return 0;
}

static void lex_name(dsl_lexer *lx)
{
    size_t start = lx->pos;
    int line = lx->line, col = lx->col;
    while (dsl_lx_is_name_char(dsl_lx_peek(lx, 0)))
        dsl_lx_adv(lx);
    size_t n = lx->pos - start;
    /* String prefixes: r b u f and their two-letter combinations. */
    int q = dsl_lx_peek(lx, 0);
    if ((q == '\'' || q == '"') && n <= 2) {
        unsigned flags = 0;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            switch (lx->src[start + i] | 0x20) {
            case 'r': flags |= DSL_STR_RAW; break;
            case 'b': flags |= DSL_STR_BYTES; break;
            case 'f': flags |= DSL_STR_FORMAT; break;
            case 'u': ok = n == 1; break;
            default: ok = false;
            }
        }
        if (ok && !((flags & DSL_STR_BYTES) && (flags & DSL_STR_FORMAT))) {
            dsl_lx_string(lx, start, line, col, flags);
            return;
        }
    }
    if (n > DSL_MAX_TOKEN_BYTES)
        dsl_lx_error(lx, CV_E_TOKEN_TOO_LONG, "Token[name]", line, col, "name is %zu bytes long (limit %d)", n,
                     DSL_MAX_TOKEN_BYTES);
    int kw = keyword_of(lx->src + start, n);
    dsl_tok *t = dsl_lx_push(lx, kw ? DSL_T_KEYWORD : DSL_T_NAME, start, line, col);
    t->sub = kw;
}

static int match_operator(const dsl_lexer *lx, size_t *n)
{
    for (int k = 1; k < N_OP; k++) {
        size_t len = strlen(op_text[k]);
        if (lx->pos + len <= lx->len && memcmp(lx->src + lx->pos, op_text[k], len) == 0) {
            *n = len;
            return k;
        }
    }
    return 0;
}

static char closer_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

static void track_bracket(dsl_lexer *lx, int op, int line, int col)
{
    if (op == DSL_OP_LPAR || op == DSL_OP_LSQB || op == DSL_OP_LBRACE) {
        if (lx->depth >= DSL_MAX_BRACKETS) {
            dsl_lx_error(lx, CV_E_NESTING_TOO_DEEP, "Bracket", line, col, "brackets nested deeper than %d",
                         DSL_MAX_BRACKETS);
            lx->fatal = true;
            lx->depth = 0;  /* the rest of the file is abandoned, not unclosed */
            return;
        }
        lx->brackets[lx->depth].ch = dsl_op_text(op)[0];
        lx->brackets[lx->depth].line = line;
        lx->brackets[lx->depth].col = col;
        lx->brackets[lx->depth].diags_at_open = lx->d->n;
        lx->depth++;
        return;
    }
    char close = dsl_op_text(op)[0];
    if (lx->depth == 0) {
        error_point(lx, CV_E_DSL_UNBALANCED_BRACKET, "Bracket", line, col, "unmatched '%c'", close);
        return;
    }
    char open = lx->brackets[lx->depth - 1].ch;
    if (closer_of(open) != close)
        error_point(lx, CV_E_DSL_UNBALANCED_BRACKET, "Bracket", line, col,
                    "closing '%c' does not match opening '%c' at %d:%d", close, open,
                     lx->brackets[lx->depth - 1].line, lx->brackets[lx->depth - 1].col);
    lx->depth--;
}

static void lex_operator(dsl_lexer *lx)
{
    size_t start = lx->pos, n = 0;
    int line = lx->line, col = lx->col;
    int op = match_operator(lx, &n);
    if (!op) {
        int c = dsl_lx_peek(lx, 0);
        if (c >= 0x80) {
            dsl_lx_error(lx, CV_E_INVALID_CHARACTER, "Token", line, col,
                         "non-ASCII character outside a string or comment");
            dsl_lx_adv(lx);
            while (lx->pos < lx->len && ((unsigned char)lx->src[lx->pos] & 0xC0) == 0x80)
                dsl_lx_adv(lx);
        } else {
            dsl_lx_error(lx, CV_E_INVALID_CHARACTER, "Token", line, col, "invalid character '%c' (0x%02x)",
                         c >= 0x20 && c < 0x7f ? c : '?', (unsigned)c);
            dsl_lx_adv(lx);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        dsl_lx_adv(lx);
    bool is_close = op == DSL_OP_RPAR || op == DSL_OP_RSQB || op == DSL_OP_RBRACE;
    if (is_close && lx->depth == 0) {
        track_bracket(lx, op, line, col);  /* reports; the stray bracket is dropped */
        return;
    }
    if (op == DSL_OP_LPAR || op == DSL_OP_LSQB || op == DSL_OP_LBRACE || is_close)
        track_bracket(lx, op, line, col);
    dsl_tok *t = dsl_lx_push(lx, DSL_T_OP, start, line, col);
    t->sub = op;
}

/* ---- the driver ----------------------------------------------------------- */

static bool last_is(const dsl_lexer *lx, dsl_tok_kind k) { return lx->n > 0 && lx->v[lx->n - 1].kind == k; }

static void end_logical_line(dsl_lexer *lx, size_t at, int line, int col)
{
    if (lx->depth == 0 && lx->line_has_tokens && !last_is(lx, DSL_T_NEWLINE)) {
        size_t save = lx->pos;
        lx->pos = at;
        dsl_tok *t = dsl_lx_push(lx, DSL_T_NEWLINE, at, line, col);
        t->end_line = line;
        t->end_col = col + 1;
        lx->pos = save;
    }
    lx->line_has_tokens = false;
}

/* Reports the open brackets; one opened before another tokenizer error (an
 * unterminated string swallowing its ')') is a consequence of that error. */
static void close_all_brackets(dsl_lexer *lx)
{
    for (int i = lx->depth - 1; i >= 0; i--) {
        int id = error_point(lx, CV_E_DSL_UNBALANCED_BRACKET, "Bracket", lx->brackets[i].line, lx->brackets[i].col,
                             "'%c' was never closed", lx->brackets[i].ch);
        if (id && id > lx->brackets[i].diags_at_open + 1)
            cv_diag_set_root(lx->d, id, lx->brackets[i].diags_at_open + 1);
    }
    lx->depth = 0;
}

/* Inside brackets, a line that starts with a keyword no expression can
 * contain means the bracket was left open: CPython reports only that, we
 * close it here so that the statements after it are still checked. */
static bool next_line_starts_statement(const dsl_lexer *lx)
{
    static const char *const words[] = {
        "def", "class", "return", "import", "global", "nonlocal", "pass", "break", "continue",
        "del", "assert", "raise", "try", "except", "finally", "while", "with", "elif",
    };
    size_t i = lx->pos;
    while (i < lx->len && (lx->src[i] == ' ' || lx->src[i] == '\t'))
        i++;
    size_t start = i;
    while (i < lx->len && dsl_lx_is_name_char((unsigned char)lx->src[i]))
        i++;
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (strlen(words[k]) == i - start && memcmp(words[k], lx->src + start, i - start) == 0)
            return true;
    return false;
}

static void lex_newline(dsl_lexer *lx)
{
    size_t at = lx->pos;
    int line = lx->line, col = lx->col;
    if (dsl_lx_peek(lx, 0) == '\r' && dsl_lx_peek(lx, 1) == '\n')
        dsl_lx_adv(lx);
    dsl_lx_adv(lx);
    if (lx->depth > 0 && next_line_starts_statement(lx))
        close_all_brackets(lx);
    if (lx->depth == 0) {
        end_logical_line(lx, at, line, col);
        lx->at_line_start = true;
    }
}

static void lex_continuation(dsl_lexer *lx)
{
    int line = lx->line, col = lx->col;
    dsl_lx_adv(lx);
    int c = dsl_lx_peek(lx, 0);
    if (c == '\r' || c == '\n') {
        if (c == '\r' && dsl_lx_peek(lx, 1) == '\n')
            dsl_lx_adv(lx);
        dsl_lx_adv(lx);
        if (lx->pos >= lx->len)
            dsl_lx_error(lx, CV_E_UNEXPECTED_EOF, "Token", line, col, "file ends after a line continuation");
        return;
    }
    dsl_lx_error(lx, CV_E_DSL_BAD_CONTINUATION, "Token", line, col,
                 c == -1 ? "file ends after a line continuation character"
                         : "unexpected character after line continuation character");
}

static void lex_one(dsl_lexer *lx)
{
    int c = dsl_lx_peek(lx, 0);
    if (c == ' ' || c == '\t' || c == '\f') {
        dsl_lx_adv(lx);
    } else if (c == '#') {
        while (lx->pos < lx->len && dsl_lx_peek(lx, 0) != '\n' && dsl_lx_peek(lx, 0) != '\r')
            dsl_lx_adv(lx);
    } else if (c == '\n' || c == '\r') {
        lex_newline(lx);
    } else if (c == '\\') {
        lex_continuation(lx);
    } else if (is_name_start(c)) {
        lex_name(lx);
    } else if ((c >= '0' && c <= '9') || (c == '.' && dsl_lx_peek(lx, 1) >= '0' && dsl_lx_peek(lx, 1) <= '9')) {
        dsl_lx_number(lx);
    } else if (c == '\'' || c == '"') {
        dsl_lx_string(lx, lx->pos, lx->line, lx->col, 0);
    } else {
        lex_operator(lx);
    }
}

static void finish(dsl_lexer *lx)
{
    close_all_brackets(lx);
    end_logical_line(lx, lx->pos, lx->line, lx->col);
    while (lx->n_indent > 0) {
        lx->n_indent--;
        dsl_lx_push(lx, DSL_T_DEDENT, lx->pos, lx->line, lx->col);
    }
    lx->fatal = false;  /* the EOF token is always pushed */
    dsl_lx_push(lx, DSL_T_EOF, lx->pos, lx->line, lx->col);
}

int dsl_lex(const char *src, size_t len, const char *file, cv_arena *a, cv_diag *d,
            dsl_tokens *out)
{
    dsl_lexer lx = {.src = src, .len = len, .line = 1, .col = 1, .file = file, .a = a, .d = d,
                    .at_line_start = true};
    if (len > DSL_MAX_FILE_BYTES) {
        dsl_lx_error(&lx, CV_E_INPUT_TOO_LARGE, "Source", 1, 1, "source is %zu bytes (limit %d)", len,
                     DSL_MAX_FILE_BYTES);
        lx.len = 0;
    } else if (!check_bytes(&lx)) {
        lx.len = 0;
    }
    if (lx.len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0)
        lx.pos = 3;  /* a UTF-8 byte order mark */
    while (lx.pos < lx.len && !lx.fatal) {
        if (lx.at_line_start && lx.depth == 0) {
            handle_indent(&lx);
            if (lx.fatal || lx.pos >= lx.len)
                break;
        }
        lex_one(&lx);
    }
    finish(&lx);
    static dsl_tok eof_only = {.kind = DSL_T_EOF, .text = "", .line = 1, .col = 1,
                               .end_line = 1, .end_col = 1};
    if (!lx.v || lx.n == 0 || lx.v[lx.n - 1].kind != DSL_T_EOF) {
        out->v = &eof_only;  /* the arena ran out: still hand the parser an EOF */
        out->n = 1;
        return -1;
    }
    out->v = lx.v;
    out->n = lx.n;
    return lx.n_errors ? -1 : 0;
}
