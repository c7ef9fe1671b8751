/* Internal to compiler-core/ir: the CU-IR tokenizer used by parse.c.
 * Tokens never span lines (a NEWLINE token ends each statement), so a
 * parser can always recover at the next line.  See docs/cuir.md. */
#ifndef CV_IR_LEX_H
#define CV_IR_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/arena.h"

/* Limits on single tokens: a longer one is CV1009 (never quadratic work). */
#define CV_LEX_MAX_NAME   65536
#define CV_LEX_MAX_NUMBER 1024

typedef enum cv_tk {
    TK_EOF, TK_NEWLINE,
    TK_IDENT,       /* op names, keywords, dtypes, symbols, attribute names */
    TK_VALUE,       /* %name or %"quoted" */
    TK_GLOBAL,      /* @name or @"quoted" */
    TK_INT, TK_FLOAT, TK_STRING,
    TK_LPAREN, TK_RPAREN, TK_LBRACK, TK_RBRACK, TK_LBRACE, TK_RBRACE,
    TK_COMMA, TK_COLON, TK_EQ, TK_ARROW,
    TK_ERROR        /* err/msg say why; the parser reports it */
} cv_tk;

typedef struct cv_token {
    cv_tk kind;
    const char *p;          /* raw text in the input (not NUL-terminated) */
    size_t n;
    int line, col;          /* 1-based, columns in bytes */
    int end_col;            /* exclusive, on the same line */
    const char *s;          /* IDENT/VALUE/GLOBAL/STRING: the name or decoded text */
    size_t slen;            /* (NUL-terminated only when quoted: see cv_lex_cstr) */
    bool quoted;
    int64_t i;              /* INT */
    bool overflow;          /* INT: does not fit in int64 */
    double f;               /* FLOAT; INT as a double too */
    int err;                /* ERROR: diagnostic code */
    const char *msg;        /* ERROR: static text */
} cv_token;

typedef struct cv_lexer {
    const char *src, *end, *p;
    const char *line_start;
    int line;
    cv_arena *scratch;      /* not owned: decoded strings live here */
} cv_lexer;

/* Byte classes: NAME continues a bare name, DIGIT is 0-9, IDENT starts an
 * identifier, STOP ends the fast scan of a string (quote, backslash, line
 * end, control character). */
enum { CV_CC_NAME = 1, CV_CC_DIGIT = 2, CV_CC_IDENT = 4, CV_CC_STOP = 8 };
extern const unsigned char cv_lex_cc[256];

void cv_lex_init(cv_lexer *L, const char *src, size_t len, cv_arena *scratch);
void cv_lex_next(cv_lexer *L, cv_token *t);
/* Moves the lexer to p, further on the current line: the parser's fast
 * paths read compact text directly and resume tokenizing at p. */
void cv_lex_seek(cv_lexer *L, const char *p);
/* A NUL-terminated copy of a name/string token's text in the scratch arena. */
const char *cv_lex_cstr(cv_lexer *L, const cv_token *t);
/* Moves past the end of the line that contains `from` (strings and comments
 * understood), measuring bracket depth from `from` (the line start, or a
 * position on the line before the lexer's).  Returns the deepest
 * level seen; *deep_col is the column where the depth first exceeded
 * `limit` (0 if never). */
int cv_lex_skip_line(cv_lexer *L, const char *from, int limit, int *deep_col);
/* True if the raw token text is exactly kw (inline: kw is a literal, so its
 * length folds away). */
static inline bool cv_tok_is(const cv_token *t, const char *kw)
{
    size_t n = strlen(kw);
    return t->kind == TK_IDENT && t->n == n && memcmp(t->p, kw, n) == 0;
}

/* The first NUL byte or invalid UTF-8 sequence, as a byte offset; -1 if none. */
long long cv_lex_find_nul(const char *s, size_t n);
long long cv_lex_find_bad_utf8(const char *s, size_t n);
/* 1-based line and byte column of offset off. */
void cv_lex_line_col(const char *s, size_t off, int *line, int *col);

#endif
