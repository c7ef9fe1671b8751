/* Syntax tree helpers: construction, parent links, AST paths, dumps. */
#include "compiler-core/frontends/dsl/ast.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
#define X(id, s) s,
    DSL_NODE_KINDS(X)
#undef X
};

static const char *const exop_names[] = {
    "",
#define X(id, s) s,
    DSL_EXOPS(X)
#undef X
};

const char *dsl_node_kind_name(dsl_node_kind k)
{
    return (k >= 0 && k < DSL_N_COUNT) ? kind_names[k] : "?";
}

const char *dsl_exop_text(dsl_exop op)
{
    return (op >= 0 && op < (int)(sizeof exop_names / sizeof exop_names[0])) ? exop_names[op] : "?";
}

dsl_node *dsl_node_new(cv_arena *a, dsl_node_kind kind, int line, int col)
{
    dsl_node *n = cv_arena_alloc(a, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = n->end_line = line;
    n->col = n->end_col = col;
    return n;
}

void dsl_list_push(cv_arena *a, dsl_list *l, dsl_node *n)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        dsl_node **v = cv_arena_alloc_array(a, (size_t)cap, sizeof *v);
        if (!v)
            return;
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = n;
}

void dsl_node_end_at(dsl_node *n, const dsl_node *last)
{
    if (n && last) {
        n->end_line = last->end_line;
        n->end_col = last->end_col;
    }
}

/* ---- traversal ------------------------------------------------------------ */

static void each_in(const dsl_list *l, void (*fn)(dsl_node *, void *), void *ctx)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i])
            fn(l->v[i], ctx);
}

void dsl_ast_children(const dsl_node *n, void (*fn)(dsl_node *child, void *ctx), void *ctx)
{
    if (n->a) fn(n->a, ctx);
    if (n->b) fn(n->b, ctx);
    if (n->c) fn(n->c, ctx);
    each_in(&n->items, fn, ctx);
    each_in(&n->items2, fn, ctx);
    each_in(&n->body, fn, ctx);
    each_in(&n->orelse, fn, ctx);
    each_in(&n->final, fn, ctx);
}

/* An explicit stack, not recursion: a chain such as a+a+...+a or x.T.T...
 * makes a tree as deep as the chain is long, deeper than any C stack. */
typedef struct walk_item {
    dsl_node *n;
    int depth;
} walk_item;

typedef struct walk_stack {
    walk_item *v;   /* owned */
    size_t n, cap;
} walk_stack;

static bool walk_push(walk_stack *st, dsl_node *n, int depth)
{
    if (!n)
        return true;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 256;
        walk_item *v = realloc(st->v, cap * sizeof *v);
        if (!v)
            return false;
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = (walk_item){n, depth};
    return true;
}

static bool push_list(walk_stack *st, const dsl_list *l, int depth)
{
    for (int i = l->n - 1; i >= 0; i--)
        if (!walk_push(st, l->v[i], depth))
            return false;
    return true;
}

/* Pushes n's children so that they pop in dsl_ast_children's order. */
static bool push_children(walk_stack *st, const dsl_node *n, int depth)
{
    return push_list(st, &n->final, depth) && push_list(st, &n->orelse, depth) &&
           push_list(st, &n->body, depth) && push_list(st, &n->items2, depth) &&
           push_list(st, &n->items, depth) && walk_push(st, n->c, depth) &&
           walk_push(st, n->b, depth) && walk_push(st, n->a, depth);
}

int dsl_ast_walk(dsl_node *root, int (*visit)(dsl_node *n, int depth, void *ctx), void *ctx)
{
    walk_stack st = {0};
    int rc = walk_push(&st, root, 0) ? 0 : -1;
    while (rc == 0 && st.n) {
        walk_item it = st.v[--st.n];
        rc = visit(it.n, it.depth, ctx);
        if (rc == 0 && !push_children(&st, it.n, it.depth + 1))
            rc = -1;
    }
    free(st.v);
    return rc;
}

static void adopt(dsl_node *parent, dsl_node *child, dsl_role role, int index)
{
    if (!child)
        return;
    child->parent = parent;
    child->role = role;
    child->role_index = index;
}

static void adopt_list(dsl_node *parent, const dsl_list *l, dsl_role role)
{
    for (int i = 0; i < l->n; i++)
        adopt(parent, l->v[i], role, role == DSL_ROLE_ARG ? i : 0);
}

static int link_node(dsl_node *n, int depth, void *ctx)
{
    (void)depth;
    (void)ctx;
    dsl_role role = n->kind == DSL_N_KEYWORD ? DSL_ROLE_KWVALUE : DSL_ROLE_NONE;
    adopt(n, n->a, role, 0);
    adopt(n, n->b, role, 0);
    adopt(n, n->c, role, 0);
    adopt_list(n, &n->items, n->kind == DSL_N_CALL ? DSL_ROLE_ARG : role);
    adopt_list(n, &n->items2, role);
    adopt_list(n, &n->body, role);
    adopt_list(n, &n->orelse, role);
    adopt_list(n, &n->final, role);
    return 0;
}

int dsl_ast_link(dsl_node *root)
{
    return dsl_ast_walk(root, link_node, NULL);
}

typedef struct depth_probe {
    int limit;
    dsl_node *at;
} depth_probe;

static int probe_depth(dsl_node *n, int depth, void *ctx)
{
    depth_probe *pr = ctx;
    if (depth <= pr->limit)
        return 0;
    pr->at = n;
    return 1;
}

int dsl_ast_too_deep(dsl_node *root, int limit, dsl_node **at)
{
    depth_probe pr = {limit, NULL};
    int rc = dsl_ast_walk(root, probe_depth, &pr);
    *at = pr.at;
    return rc < 0 ? -1 : pr.at != NULL;
}

/* ---- names and paths ------------------------------------------------------ */

void dsl_dotted_name(const dsl_node *n, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = 0;
    if (!n)
        return;
    if (n->kind == DSL_N_NAME) {
        snprintf(buf, size, "%s", n->name);
    } else if (n->kind == DSL_N_ATTRIBUTE && n->a) {
        dsl_dotted_name(n->a, buf, size);
        size_t len = strlen(buf);
        if (len == 0)
            return;
        snprintf(buf + len, size - len, ".%s", n->name);
    }
}

static void label(const dsl_node *n, cv_sb *sb)
{
    char buf[128];
    const char *k = dsl_node_kind_name(n->kind);
    switch (n->kind) {
    case DSL_N_FUNCTIONDEF: case DSL_N_CLASSDEF: case DSL_N_NAME: case DSL_N_ATTRIBUTE:
    case DSL_N_ALIAS:
        cv_sb_printf(sb, "%s[%s]", k, n->name ? n->name : "");
        break;
    case DSL_N_ARG:
        cv_sb_printf(sb, "param[%s]", n->name ? n->name : "");
        break;
    case DSL_N_CALL:
        dsl_dotted_name(n->a, buf, sizeof buf);
        cv_sb_printf(sb, buf[0] ? "%s[%s]" : "%s", k, buf);
        break;
    case DSL_N_BINOP: case DSL_N_UNARYOP: case DSL_N_BOOLOP:
        cv_sb_printf(sb, "%s[%s]", k, dsl_exop_text(n->op));
        break;
    case DSL_N_AUGASSIGN:
        cv_sb_printf(sb, "%s[%s=]", k, dsl_exop_text(n->op));
        break;
    case DSL_N_COMPARE:
        cv_sb_printf(sb, "%s[%s]", k, n->cmp_ops && n->items.n ? dsl_exop_text(n->cmp_ops[0]) : "");
        break;
    case DSL_N_KEYWORD:
        cv_sb_printf(sb, "kw[%s]", n->name ? n->name : "**");
        break;
    default:
        cv_sb_puts(sb, k);
    }
}

/* Nodes that compute a value: the failure classifier needs to know which
 * operation failed, not only which argument it is of an enclosing call. */
static bool computes(const dsl_node *n)
{
    switch (n->kind) {
    case DSL_N_CALL: case DSL_N_BINOP: case DSL_N_UNARYOP: case DSL_N_BOOLOP:
    case DSL_N_COMPARE: case DSL_N_IFEXP:
        return true;
    default:
        return false;
    }
}

void dsl_ast_path(const dsl_node *n, cv_sb *out)
{
    const dsl_node *chain[512];
    int len = 0;
    for (const dsl_node *p = n; p && p->kind != DSL_N_MODULE && len < 512; p = p->parent)
        chain[len++] = p;
    bool sep = false;
    for (int i = len - 1; i >= 0; i--) {
        const dsl_node *e = chain[i];
        bool last = i == 0;
        if (e->role == DSL_ROLE_ARG) {
            cv_sb_printf(out, "%sarg[%d]", sep ? ">" : "", e->role_index);
            sep = true;
            if (last && !computes(e))
                break;   /* the argument itself; an operation there is named too */
        } else if (e->role == DSL_ROLE_KWVALUE && last) {
            break;  /* the kw[name] element already names this node */
        }
        if (sep)
            cv_sb_putc(out, '>');
        label(e, out);
        sep = true;
    }
    if (!sep)
        cv_sb_puts(out, "Module");
}

/* ---- dumps ---------------------------------------------------------------- */

static void dump_list(const char *tag, const dsl_list *l, cv_sb *out)
{
    if (!l->n)
        return;
    cv_sb_printf(out, " %s:[", tag);
    for (int i = 0; i < l->n; i++) {
        if (i)
            cv_sb_putc(out, ' ');
        if (l->v[i])
            dsl_ast_dump(l->v[i], out);
        else
            cv_sb_puts(out, "_");
    }
    cv_sb_putc(out, ']');
}

static void dump_const(const dsl_node *n, cv_sb *out)
{
    switch ((dsl_const_kind)n->op) {
    case DSL_C_INT: cv_sb_printf(out, " %" PRId64, n->ival); break;
    case DSL_C_FLOAT: cv_sb_printf(out, " %.17g", n->fval); break;
    case DSL_C_IMAG: cv_sb_printf(out, " %.17gj", n->fval); break;
    case DSL_C_STR: case DSL_C_BYTES: case DSL_C_FSTRING:
        cv_sb_puts(out, n->op == DSL_C_BYTES ? " b\"" : n->op == DSL_C_FSTRING ? " f\"" : " \"");
        cv_sb_put_escaped(out, n->sval ? n->sval : "", n->slen);
        cv_sb_putc(out, '"');
        break;
    case DSL_C_TRUE: cv_sb_puts(out, " True"); break;
    case DSL_C_FALSE: cv_sb_puts(out, " False"); break;
    case DSL_C_NONE: cv_sb_puts(out, " None"); break;
    case DSL_C_ELLIPSIS: cv_sb_puts(out, " ..."); break;
    }
}

void dsl_ast_dump(const dsl_node *n, cv_sb *out)
{
    cv_sb_putc(out, '(');
    label(n, out);
    cv_sb_printf(out, " @%d:%d-%d:%d", n->line, n->col, n->end_line, n->end_col);
    if (n->kind == DSL_N_CONSTANT)
        dump_const(n, out);
    if (n->kind == DSL_N_ALIAS && n->asname)
        cv_sb_printf(out, " as %s", n->asname);
    if (n->kind == DSL_N_COMPARE)
        for (int i = 0; i < n->items.n; i++)
            cv_sb_printf(out, " '%s'", dsl_exop_text(n->cmp_ops[i]));
    const dsl_node *abc[3] = {n->a, n->b, n->c};
    int used = 3;
    while (used > 0 && !abc[used - 1])
        used--;  /* trailing empty slots carry no information */
    for (int i = 0; i < used; i++) {
        cv_sb_printf(out, " %c:", 'a' + i);
        if (abc[i])
            dsl_ast_dump(abc[i], out);
        else
            cv_sb_putc(out, '_');
    }
    dump_list("items", &n->items, out);
    dump_list("items2", &n->items2, out);
    dump_list("body", &n->body, out);
    dump_list("orelse", &n->orelse, out);
    dump_list("final", &n->final, out);
    cv_sb_putc(out, ')');
}
