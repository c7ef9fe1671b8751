/* Internal to ir/: the parsed form of a dimension expression's text,
 * shared by the arithmetic (dimexpr.c) and the text form's parser and
 * walks (dimexpr_parse.c). */
#ifndef CV_IR_DIMEXPR_INTERNAL_H
#define CV_IR_DIMEXPR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "compiler-core/ir/ir.h"

/* Hostile-input guards: longer or larger expressions are "not expressible". */
enum { DX_MAX_TEXT = 2048, DX_MAX_TERMS = 32, DX_MAX_FACTORS = 8, DX_MAX_DEPTH = 48,
       DX_MAX_NODES = 512 };

/* The parse tree of a dimension's text. */
typedef enum { N_INT, N_SYM, N_BIN } node_kind;

typedef struct node {
    node_kind kind;
    cv_dim_op op;
    int64_t v;
    const char *name;       /* SYM: the decoded name */
    size_t len;
    struct node *a, *b;
} node;

typedef struct parser {
    const char *p, *end;
    cv_arena *a;
    int depth, nodes;
    const char *err;
    size_t err_at;
    const char *start;
} parser;

/* Parses s[0..n) into nodes in a; NULL with P->err (and P->err_at) set on
 * malformed or too large text. */
node *cv_dx_parse(parser *P, const char *s, size_t n, cv_arena *a);

#endif
