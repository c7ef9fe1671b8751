/* Shared by parser.c (statements) and parse_expr.c (expressions). */
#ifndef CV_DSL_PARSE_INTERNAL_H
#define CV_DSL_PARSE_INTERNAL_H

#include "compiler-core/frontends/dsl/parser.h"

enum { DSL_MAX_BLOCK_CTX = 128 };

typedef struct dsl_parser {
    const dsl_tok *t;       /* not owned */
    int n, i;
    cv_arena *a;            /* owns every node */
    cv_diag *d;
    const char *file;
    int depth;              /* expression recursion */
    bool failed;            /* the current statement has an error: unwind */
    bool stop;              /* too many errors, or out of memory: give up */
    bool oom;
    int n_errors;
    int first_lex_diag, last_lex_diag;
    const char *ctx[DSL_MAX_BLOCK_CTX];  /* enclosing blocks, for error paths */
    int n_ctx;
    const char *stmt;       /* label of the statement being parsed */
} dsl_parser;

const dsl_tok *ps_tok(const dsl_parser *p);
const dsl_tok *ps_peek(const dsl_parser *p, int k);
const dsl_tok *ps_prev(const dsl_parser *p);
void ps_advance(dsl_parser *p);
bool ps_is_op(const dsl_parser *p, int op);
bool ps_is_kw(const dsl_parser *p, int kw);
bool ps_accept_op(dsl_parser *p, int op);
bool ps_accept_kw(dsl_parser *p, int kw);
/* Reports (once per statement) and marks the statement failed. */
void ps_error_at(dsl_parser *p, int code, const dsl_tok *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ps_error_node(dsl_parser *p, int code, const dsl_node *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Reports without abandoning the statement (errors that do not confuse
 * the rest of the parse: argument order, duplicate parameters). */
void ps_error_soft(dsl_parser *p, int code, const dsl_node *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "expected X, got Y" at the current token. */
void ps_expected(dsl_parser *p, const char *what);
bool ps_expect_op(dsl_parser *p, int op);
/* A node starting at token t; ps_finish sets its end to the previous token's. */
dsl_node *ps_node_at(dsl_parser *p, dsl_node_kind kind, const dsl_tok *t);
dsl_node *ps_finish(dsl_parser *p, dsl_node *n);
char *ps_tok_str(dsl_parser *p, const dsl_tok *t);
/* The path label of the statement starting at the cursor ("Assign",
 * "FunctionDef[lenet]", ...), found by looking ahead on its line. */
const char *ps_stmt_label(dsl_parser *p);

/* One line of simple statements up to its NEWLINE (parse_simple.c). */
void ps_simple_stmts(dsl_parser *p, dsl_list *out);

/* Expressions (parse_expr.c).  Each returns NULL after an error. */
dsl_node *ps_test(dsl_parser *p);                 /* test, lambda, conditional */
dsl_node *ps_namedexpr(dsl_parser *p);            /* test [':=' test] */
dsl_node *ps_or_test(dsl_parser *p);
dsl_node *ps_expr(dsl_parser *p);                 /* bitwise-or level */
dsl_node *ps_star_or_test(dsl_parser *p);         /* '*' expr | test */
/* A comma list of star_or_test; a Tuple when there is a comma. */
dsl_node *ps_testlist(dsl_parser *p);
/* Targets of for / comprehensions: star_expr | expr, comma separated. */
dsl_node *ps_exprlist(dsl_parser *p);
/* Parameters of def / lambda, up to (not including) `close`. */
void ps_params(dsl_parser *p, dsl_list *out, int close, bool annotations);
/* Checks that n can be assigned to (Name, Attribute, Subscript, or a
 * Tuple/List/Starred of those); reports CV1205 otherwise. */
bool ps_check_target(dsl_parser *p, dsl_node *n, bool aug);

#endif
