/* The model language's syntax tree: Python's ast node kinds (so that paths
 * read like Python: FunctionDef[lenet]>Assign>Call[cvl.conv2d]>arg[1]),
 * arena-allocated, each node with its start and end line:col (end is one
 * past the last character).  Constructs the subset rejects (while, try,
 * lambda, ...) are parsed too, so that the analysis can name them. */
#ifndef CV_DSL_AST_H
#define CV_DSL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/strbuf.h"

#define DSL_NODE_KINDS(X)                                                               \
    X(MODULE, "Module") X(FUNCTIONDEF, "FunctionDef") X(CLASSDEF, "ClassDef")            \
    X(ASSIGN, "Assign") X(AUGASSIGN, "AugAssign") X(ANNASSIGN, "AnnAssign")              \
    X(RETURN, "Return") X(FOR, "For") X(IF, "If") X(WHILE, "While") X(EXPR, "Expr")      \
    X(IMPORT, "Import") X(IMPORTFROM, "ImportFrom") X(PASS, "Pass") X(BREAK, "Break")    \
    X(CONTINUE, "Continue") X(GLOBAL, "Global") X(NONLOCAL, "Nonlocal")                 \
    X(DELETE, "Delete") X(ASSERT, "Assert") X(RAISE, "Raise") X(TRY, "Try")              \
    X(HANDLER, "ExceptHandler") X(WITH, "With") X(ASYNC, "Async")                        \
    X(NAME, "Name") X(CONSTANT, "Constant") X(ATTRIBUTE, "Attribute")                    \
    X(SUBSCRIPT, "Subscript") X(SLICE, "Slice") X(CALL, "Call") X(KEYWORD, "keyword")    \
    X(BINOP, "BinOp") X(UNARYOP, "UnaryOp") X(BOOLOP, "BoolOp") X(COMPARE, "Compare")    \
    X(IFEXP, "IfExp") X(TUPLE, "Tuple") X(LIST, "List") X(DICT, "Dict") X(SET, "Set")    \
    X(LAMBDA, "Lambda") X(LISTCOMP, "ListComp") X(GENEXP, "GeneratorExp")                \
    X(SETCOMP, "SetComp") X(DICTCOMP, "DictComp") X(COMPREHENSION, "comprehension")      \
    X(STARRED, "Starred") X(YIELD, "Yield") X(NAMEDEXPR, "NamedExpr") X(AWAIT, "Await")  \
    X(ARG, "arg") X(ALIAS, "alias")

typedef enum dsl_node_kind {
#define X(id, s) DSL_N_##id,
    DSL_NODE_KINDS(X)
#undef X
    DSL_N_COUNT
} dsl_node_kind;

/* Operators of BinOp, UnaryOp, AugAssign (the binary op), BoolOp, Compare. */
#define DSL_EXOPS(X)                                                                    \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//") X(MOD, "%")       \
    X(POW, "**") X(MATMUL, "@") X(LSHIFT, "<<") X(RSHIFT, ">>") X(BITOR, "|")           \
    X(BITXOR, "^") X(BITAND, "&") X(NEG, "-") X(POS, "+") X(INVERT, "~") X(NOT, "not")  \
    X(AND, "and") X(OR, "or") X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") \
    X(GE, ">=") X(IS, "is") X(ISNOT, "is not") X(IN, "in") X(NOTIN, "not in")

typedef enum dsl_exop {
    DSL_X_NONE = 0,
#define X(id, s) DSL_X_##id,
    DSL_EXOPS(X)
#undef X
} dsl_exop;

typedef enum dsl_const_kind {
    DSL_C_INT, DSL_C_FLOAT, DSL_C_IMAG, DSL_C_STR, DSL_C_BYTES, DSL_C_FSTRING,
    DSL_C_TRUE, DSL_C_FALSE, DSL_C_NONE, DSL_C_ELLIPSIS,
} dsl_const_kind;

/* How a node hangs below its parent, for AST paths. */
typedef enum dsl_role { DSL_ROLE_NONE, DSL_ROLE_ARG, DSL_ROLE_KWVALUE } dsl_role;

typedef struct dsl_node dsl_node;

typedef struct dsl_list {
    dsl_node **v;   /* arena-owned */
    int n, cap;
} dsl_list;

/* One struct for every kind; which fields a kind uses:
 *  Module: body.  FunctionDef: name, items=args (arg), items2=decorators, a=returns, body.
 *  ClassDef: name, items=bases, items2=decorators, body.  arg: name, a=default,
 *    b=annotation, op=0 | '*' | '**' | '/' (DSL_X_MUL, DSL_X_POW, DSL_X_DIV).
 *  Assign: items=targets, a=value.  AugAssign: a=target, b=value, op.
 *  AnnAssign: a=target, b=annotation, c=value.  Return: a.  Expr: a.
 *  For: a=target, b=iter, body, orelse.  If, While: a=test, body, orelse.
 *  Import: items=alias.  ImportFrom: name=module, items=alias.  alias: name, asname.
 *  Global, Nonlocal, Delete: items.  Assert: a, b.  Raise: a, b.
 *  Try: body, items=handlers, orelse, final.  ExceptHandler: a=type, name, body.
 *  With: items=context expressions, body.  Async: a=the statement.
 *  Name: name.  Constant: op=dsl_const_kind, ival, fval, sval/slen.
 *  Attribute: a=value, name=attr.  Subscript: a=value, b=index.  Slice: a, b, c.
 *  Call: a=func, items=args, items2=keywords.  keyword: name (NULL for **), a=value.
 *  BinOp: a, b, op.  UnaryOp: a, op.  BoolOp: op, items.  Compare: a, items, cmp_ops.
 *  IfExp: a=body, b=test, c=orelse.  Tuple, List, Set: items.  Dict: items=keys
 *  (NULL for **), items2=values.  Lambda: items=args, a=body.  ListComp, GeneratorExp,
 *  SetComp: a=elt, items=comprehension.  DictComp: a=key, b=value, items.
 *  comprehension: a=target, b=iter, items=ifs.  Starred, Await: a.
 *  Yield: a (op=1 for yield from).  NamedExpr: a=target, b=value. */
struct dsl_node {
    dsl_node_kind kind;
    int line, col, end_line, end_col;
    int op;
    int op_line, op_col;        /* the operator token, for BinOp/UnaryOp/AugAssign/Compare */
    const char *name, *asname;  /* arena-owned */
    dsl_node *a, *b, *c;
    dsl_list items, items2, body, orelse, final;
    int64_t ival;
    double fval;
    const char *sval;           /* arena-owned, slen bytes plus a NUL */
    size_t slen;
    dsl_exop *cmp_ops;          /* Compare: items.n operators */
    dsl_node *parent;           /* set by dsl_ast_link */
    dsl_role role;
    int role_index;             /* ARG: position among the call's arguments */
};

dsl_node *dsl_node_new(cv_arena *a, dsl_node_kind kind, int line, int col);
void dsl_list_push(cv_arena *a, dsl_list *l, dsl_node *n);
const char *dsl_node_kind_name(dsl_node_kind k);
const char *dsl_exop_text(dsl_exop op);
/* Copies the end position of `last` into n. */
void dsl_node_end_at(dsl_node *n, const dsl_node *last);

/* Calls visit on root and every node below it, parents before children,
 * children in dsl_ast_children's order, with their depth (root: 0).  Uses a
 * heap stack, so any depth works.  Returns 0, visit's first nonzero result
 * (the walk stops there), or -1 when memory runs out. */
int dsl_ast_walk(dsl_node *root, int (*visit)(dsl_node *n, int depth, void *ctx), void *ctx);
/* Sets parent, role and role_index on every node below root (iteratively).
 * 0, or -1 when memory runs out. */
int dsl_ast_link(dsl_node *root);
/* 1 and *at = the first node (preorder) deeper than limit below root, 0 if
 * none is, -1 when memory runs out.  Every recursive walk of a tree this
 * accepted is bounded by limit. */
int dsl_ast_too_deep(dsl_node *root, int limit, dsl_node **at);
/* The dotted text of a Name/Attribute chain ("cvl.conv2d"), or "" if the
 * expression is something else.  Always terminated. */
void dsl_dotted_name(const dsl_node *n, char *buf, size_t size);
/* The AST path of n: FunctionDef[lenet]>Assign>Call[cvl.conv2d]>arg[1]. */
void dsl_ast_path(const dsl_node *n, cv_sb *out);
/* A compact S-expression of the tree with positions, for tests and
 * `cuvil compile --emit ast`. */
void dsl_ast_dump(const dsl_node *n, cv_sb *out);

/* Calls fn on every direct child, in field order: a b c items items2 body orelse final. */
void dsl_ast_children(const dsl_node *n, void (*fn)(dsl_node *child, void *ctx), void *ctx);

#endif
