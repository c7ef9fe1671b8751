/* Internal to compiler-core/ir: the CU-IR parser's state, shared by
 * parse.c (module, models, statements) and parse_lit.c (types, attributes,
 * inline constants, locations).  The parser is not recursive: the grammar
 * nests at most three levels, and deeper input is CV1007. */
#ifndef CV_IR_PARSE_H
#define CV_IR_PARSE_H

#include "compiler-core/ir/cuir_text.h"
#include "compiler-core/ir/ir.h"
#include "compiler-core/ir/lex.h"

/* A growable array (malloc'd; owned by the parser, freed by cv_vec_free). */
typedef struct cv_vec {
    void *v;
    int n;          /* elements */
    size_t cap;     /* bytes, so one vector may be reused with another element size */
} cv_vec;

typedef struct cv_pname {       /* a %name as written, with where */
    const char *name;           /* a line arena, or scratch once kept past the statement */
    cv_span span;
} cv_pname;

typedef struct cv_fwd {         /* an operand naming a value not seen yet */
    cv_op *op;
    int k;
    cv_pname ref;
} cv_fwd;

typedef struct cv_ploc {
    const char *file;           /* a line arena */
    int line, col;
} cv_ploc;

typedef struct cv_parser {
    cv_lexer L;
    cv_token cur;               /* one token of look-ahead */
    int prev_end_col;           /* end of the last consumed token (same line) */
    cv_module *m;               /* owned until returned */
    cv_func *f;                 /* the model being read, or NULL */
    cv_diag *d;                 /* not owned */
    const char *file;           /* m->path: lives as long as the module */
    cv_arena scratch;           /* owned: names kept past their statement */
    /* Owned: token text and names of one statement.  Two take turns: the
     * next statement's first token is read while the current one ends. */
    cv_arena line[2];
    int line_i;
    int n_errors;
    bool stop;
    /* The first error of the current statement, reported on recovery. */
    bool failed;
    int err_code;
    cv_span err_span;
    char err_msg[400];
    /* Per statement (cleared at its start). */
    cv_vec results, operands, fwd_here, types, attrs, locs;
    cv_vec bytes;               /* dense(...) data: n elements of the param's dtype */
    cv_vec list;                /* attribute list items */
    /* Per model. */
    cv_vec fwd, rets;
    bool have_return;
    cv_span ret_span;
} cv_parser;

void *cv_vec_push(cv_vec *v, size_t elem);
void cv_vec_free(cv_vec *v);
#define CV_VEC_AT(vec, type, i) (((type *)(vec).v)[i])

void cv_p_next(cv_parser *P);
/* Records the statement's first error (at token t) and returns false. */
bool cv_p_fail(cv_parser *P, const cv_token *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool cv_p_expect(cv_parser *P, cv_tk kind, const char *what);
/* A delimited, comma-separated list: cv_p_list_open consumes the opener
 * (and the closer too when the list is empty: *done = true); after each
 * element cv_p_list_sep takes ',' (*done = false) or the closer (*done = true). */
bool cv_p_list_open(cv_parser *P, cv_tk open, cv_tk close, const char *what, bool *done);
bool cv_p_list_sep(cv_parser *P, cv_tk close, const char *what, bool *done);
cv_span cv_p_span(const cv_parser *P, const cv_token *t);
/* Ends span s at the last consumed token. */
void cv_p_close(const cv_parser *P, cv_span *s);
void cv_p_describe(const cv_token *t, char *buf, size_t size);

/* parse_lit.c */
bool cv_p_type(cv_parser *P, cv_type *out);
/* {name=value, ...} for an op of definition def (may be NULL). */
bool cv_p_attrs(cv_parser *P, const cv_op_def *def);
/* dense(v, ...) in t's dtype, into P->bytes. */
bool cv_p_dense(cv_parser *P, const cv_type *t);
/* loc(...) into P->locs. */
bool cv_p_loc(cv_parser *P);

#endif
