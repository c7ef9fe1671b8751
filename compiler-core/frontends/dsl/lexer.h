/* The Cuvil model language tokenizer: Python's tokenizer rules for the
 * subset (INDENT/DEDENT from an indentation stack, NEWLINE only outside
 * brackets, line continuations, comments, Python's literal forms).
 * Every token records its start and end (end is one past the last
 * character); lines and columns are 1-based and count code points. */
#ifndef CV_DSL_LEXER_H
#define CV_DSL_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/diag.h"

/* Bounds on untrusted input (a model file comes from a git repository). */
enum {
    DSL_MAX_FILE_BYTES = 4 << 20,
    DSL_MAX_TOKEN_BYTES = 64 << 10,
    DSL_MAX_BRACKETS = 64,          /* open brackets at once */
    DSL_MAX_INDENT = 100,           /* indentation levels, as CPython */
    DSL_MAX_LEX_ERRORS = 50,        /* the tokenizer gives up after this many */
};

typedef enum dsl_tok_kind {
    DSL_T_EOF, DSL_T_NEWLINE, DSL_T_INDENT, DSL_T_DEDENT,
    DSL_T_NAME, DSL_T_KEYWORD, DSL_T_INT, DSL_T_FLOAT, DSL_T_IMAG, DSL_T_STRING, DSL_T_OP,
} dsl_tok_kind;

#define DSL_KEYWORDS(X)                                                                  \
    X(FALSE, "False") X(NONE, "None") X(TRUE, "True") X(AND, "and") X(AS, "as")          \
    X(ASSERT, "assert") X(ASYNC, "async") X(AWAIT, "await") X(BREAK, "break")            \
    X(CLASS, "class") X(CONTINUE, "continue") X(DEF, "def") X(DEL, "del") X(ELIF, "elif") \
    X(ELSE, "else") X(EXCEPT, "except") X(FINALLY, "finally") X(FOR, "for")              \
    X(FROM, "from") X(GLOBAL, "global") X(IF, "if") X(IMPORT, "import") X(IN, "in")      \
    X(IS, "is") X(LAMBDA, "lambda") X(NONLOCAL, "nonlocal") X(NOT, "not") X(OR, "or")    \
    X(PASS, "pass") X(RAISE, "raise") X(RETURN, "return") X(TRY, "try")                  \
    X(WHILE, "while") X(WITH, "with") X(YIELD, "yield")

typedef enum dsl_kw {
    DSL_KW_INVALID = 0,
#define X(id, s) DSL_KW_##id,
    DSL_KEYWORDS(X)
#undef X
} dsl_kw;

/* Longest first within each length so that matching can scan in order. */
#define DSL_OPERATORS(X)                                                                 \
    X(POWEQ, "**=") X(FLOORDIVEQ, "//=") X(SHLEQ, "<<=") X(SHREQ, ">>=")                  \
    X(ELLIPSIS, "...")                                                                   \
    X(POW, "**") X(FLOORDIV, "//") X(SHL, "<<") X(SHR, ">>") X(LE, "<=") X(GE, ">=")      \
    X(EQ, "==") X(NE, "!=") X(ARROW, "->") X(WALRUS, ":=") X(PLUSEQ, "+=")               \
    X(MINUSEQ, "-=") X(STAREQ, "*=") X(SLASHEQ, "/=") X(PERCENTEQ, "%=") X(AMPEQ, "&=")  \
    X(PIPEEQ, "|=") X(CARETEQ, "^=") X(ATEQ, "@=")                                       \
    X(LPAR, "(") X(RPAR, ")") X(LSQB, "[") X(RSQB, "]") X(LBRACE, "{") X(RBRACE, "}")     \
    X(COMMA, ",") X(COLON, ":") X(SEMI, ";") X(DOT, ".") X(ASSIGN, "=") X(PLUS, "+")      \
    X(MINUS, "-") X(STAR, "*") X(SLASH, "/") X(PERCENT, "%") X(AT, "@") X(AMP, "&")       \
    X(PIPE, "|") X(CARET, "^") X(TILDE, "~") X(LT, "<") X(GT, ">")

typedef enum dsl_opk {
    DSL_OP_INVALID = 0,
#define X(id, s) DSL_OP_##id,
    DSL_OPERATORS(X)
#undef X
} dsl_opk;

enum { DSL_STR_RAW = 1u << 0, DSL_STR_BYTES = 1u << 1, DSL_STR_FORMAT = 1u << 2 };

typedef struct dsl_tok {
    dsl_tok_kind kind;
    int sub;                /* KEYWORD: dsl_kw; OP: dsl_opk */
    const char *text;       /* the raw token in the source (not owned) */
    size_t len;
    int line, col, end_line, end_col;
    int64_t ival;           /* INT */
    double fval;            /* FLOAT, IMAG */
    const char *sval;       /* STRING: decoded bytes (UTF-8 for str), arena-owned */
    size_t slen;
    unsigned sflags;        /* STRING: DSL_STR_* */
} dsl_tok;

typedef struct dsl_tokens {
    dsl_tok *v;             /* arena-owned; always ends with one DSL_T_EOF */
    int n;
} dsl_tokens;

/* Tokenizes src (len bytes; need not be NUL-terminated).  Errors go to d
 * with spans in `file`; the token array is produced even after errors
 * (possibly only EOF), so the parser can still report its own errors.
 * Returns 0, or -1 when any error was reported. */
int dsl_lex(const char *src, size_t len, const char *file, cv_arena *a, cv_diag *d,
            dsl_tokens *out);

const char *dsl_op_text(int op);
const char *dsl_kw_text(int kw);
/* A short description for messages: "name 'x'", "')'", "newline". */
void dsl_tok_describe(const dsl_tok *t, char *buf, size_t size);

#endif
