/* Shared by lexer.c (line structure) and lex_literals.c (numbers, strings). */
#ifndef CV_DSL_LEX_INTERNAL_H
#define CV_DSL_LEX_INTERNAL_H

#include "compiler-core/frontends/dsl/lexer.h"

typedef struct dsl_lexer {
    const char *src;        /* not owned */
    size_t len, pos;
    int line, col;
    const char *file;       /* not owned */
    cv_arena *a;            /* owns tokens and decoded strings */
    cv_diag *d;
    dsl_tok *v;             /* arena-owned token array */
    int n, cap;
    dsl_tok scratch;        /* written to when the arena is exhausted */
    int indent[DSL_MAX_INDENT + 1], alt_indent[DSL_MAX_INDENT + 1];
    int n_indent;
    struct { char ch; int line, col, diags_at_open; } brackets[DSL_MAX_BRACKETS];
    int depth;
    bool at_line_start, line_has_tokens, fatal;
    int n_errors;
} dsl_lexer;

int dsl_lx_peek(const dsl_lexer *lx, size_t k);   /* -1 at end */
void dsl_lx_adv(dsl_lexer *lx);
bool dsl_lx_is_name_char(int c);
/* Reports an error whose path is "Module><what>" from line:col to the cursor. */
int dsl_lx_error(dsl_lexer *lx, int code, const char *what, int line, int col,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Appends a token spanning [start, pos). */
dsl_tok *dsl_lx_push(dsl_lexer *lx, dsl_tok_kind kind, size_t start, int line, int col);

void dsl_lx_number(dsl_lexer *lx);
/* The cursor is on the opening quote; prefix letters start at `start`. */
void dsl_lx_string(dsl_lexer *lx, size_t start, int line, int col, unsigned flags);

#endif
