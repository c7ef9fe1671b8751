/* The model language parser: tokens to a syntax tree (ast.h), recovering at
 * statement level so that one run reports every independent syntax error. */
#ifndef CV_DSL_PARSER_H
#define CV_DSL_PARSER_H

#include "common/diag.h"
#include "compiler-core/frontends/dsl/ast.h"
#include "compiler-core/frontends/dsl/lexer.h"

enum {
    DSL_MAX_EXPR_DEPTH = 200,       /* nested expressions (unary chains, a**b**c...) */
    /* Any node's depth below the module, statements included: a flat chain
     * (a+a+..., x.T.T...) makes a tree as deep as it is long.  CV1007. */
    DSL_MAX_AST_DEPTH = 1000,
    DSL_MAX_PARSE_ERRORS = 100,     /* the parser stops after this many */
};

/* Parses a token array into a Module node (parents linked).  Returns NULL
 * only when memory runs out; syntax errors go to d.  first_lex_diag is the
 * id of the first tokenizer diagnostic in d (0 if none): a syntax error on
 * a line the tokenizer already complained about is marked as caused by it. */
dsl_node *dsl_parse(const dsl_tokens *toks, const char *file, cv_arena *a, cv_diag *d,
                    int first_lex_diag);

/* Tokenizes and parses.  *had_errors (may be NULL) tells whether either
 * step reported an error. */
dsl_node *dsl_parse_source(const char *src, size_t len, const char *file, cv_arena *a,
                           cv_diag *d, bool *had_errors);

#endif
