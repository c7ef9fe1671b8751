/* The text form of dimension expressions: the parser (hostile text is
 * refused past the DX_MAX_* limits) and the walks over a parsed expression
 * that need no canonical form: evaluation at given symbol values, the
 * symbols it names, and folding into a caller's representation (the
 * backends' run-time expressions).  The arithmetic is in dimexpr.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/ir/dimexpr_internal.h"

/* ---- parsing -------------------------------------------------------------- */


static node *perr(parser *P, const char *msg)
{
    if (!P->err) {
        P->err = msg;
        P->err_at = (size_t)(P->p - P->start);
    }
    return NULL;
}

static void skip_ws(parser *P)
{
    while (P->p < P->end && (*P->p == ' ' || *P->p == '\t'))
        P->p++;
}

static bool name_char(char c, bool first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '.'));
}

/* The word at P->p (not consumed), or length 0. */
static size_t peek_word(parser *P)
{
    skip_ws(P);
    size_t n = 0;
    while (P->p + n < P->end && name_char(P->p[n], n == 0))
        n++;
    return n;
}

static bool peek_is(parser *P, const char *w)
{
    size_t n = peek_word(P);
    return n == strlen(w) && memcmp(P->p, w, n) == 0;
}

static node *new_node(parser *P, node_kind k)
{
    if (++P->nodes > DX_MAX_NODES)
        return perr(P, "the expression is too large");
    node *n = cv_arena_alloc(P->a, sizeof *n);
    if (!n)
        return perr(P, "out of memory");
    n->kind = k;
    return n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A quoted symbol with the escapes cv_sb_put_escaped writes. */
static node *parse_string(parser *P)
{
    cv_sb sb = {0};
    P->p++;
    while (P->p < P->end && *P->p != '"') {
        char c = *P->p++;
        if (c == '\\' && P->p < P->end) {
            char e = *P->p++;
            if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else if (e == 'r')
                c = '\r';
            else if (e == 'x' && P->end - P->p >= 2 && hexval(P->p[0]) >= 0 &&
                     hexval(P->p[1]) >= 0) {
                c = (char)(hexval(P->p[0]) * 16 + hexval(P->p[1]));
                P->p += 2;
            } else
                c = e;
        }
        cv_sb_putc(&sb, c);
    }
    if (P->p >= P->end || sb.len == 0 || memchr(cv_sb_str(&sb), 0, sb.len)) {
        cv_sb_free(&sb);
        return perr(P, "an unterminated or empty quoted symbol");
    }
    P->p++;
    node *n = new_node(P, N_SYM);
    if (n) {
        n->name = cv_arena_strndup(P->a, cv_sb_str(&sb), sb.len);
        n->len = sb.len;
    }
    cv_sb_free(&sb);
    return n;
}

static node *parse_sum(parser *P);

static node *binary(parser *P, cv_dim_op op, node *a, node *b)
{
    if (!a || !b)
        return NULL;
    node *n = new_node(P, N_BIN);
    if (n) {
        n->op = op;
        n->a = a;
        n->b = b;
    }
    return n;
}

static bool expect(parser *P, char c)
{
    skip_ws(P);
    if (P->p < P->end && *P->p == c) {
        P->p++;
        return true;
    }
    perr(P, c == ')' ? "expected ')'" : c == '(' ? "expected '('" : "expected ','");
    return false;
}

static node *parse_factor(parser *P)
{
    skip_ws(P);
    if (P->p >= P->end)
        return perr(P, "expected a dimension");
    if (++P->depth > DX_MAX_DEPTH)
        return perr(P, "the expression nests too deeply");
    node *r = NULL;
    char c = *P->p;
    if (c == '-') {
        P->p++;
        node *z = new_node(P, N_INT);
        r = binary(P, CV_DIM_SUB, z, parse_factor(P));
    } else if (c == '(') {
        P->p++;
        r = parse_sum(P);
        if (r && !expect(P, ')'))
            r = NULL;
    } else if (c >= '0' && c <= '9') {
        int64_t v = 0;
        while (P->p < P->end && *P->p >= '0' && *P->p <= '9') {
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *P->p - '0', &v))
                return perr(P, "an integer does not fit in 64 bits");
            P->p++;
        }
        if (P->p < P->end && name_char(*P->p, false))
            return perr(P, "a malformed integer");
        if ((r = new_node(P, N_INT)))
            r->v = v;
    } else if (c == '"') {
        r = parse_string(P);
    } else if (name_char(c, true)) {
        size_t n = peek_word(P);
        bool fn = (n == 3 && (!memcmp(P->p, "min", 3) || !memcmp(P->p, "max", 3)));
        const char *w = P->p;
        P->p += n;
        skip_ws(P);
        if (fn && P->p < P->end && *P->p == '(') {
            P->p++;
            node *a = parse_sum(P);
            node *b = a && expect(P, ',') ? parse_sum(P) : NULL;
            if (b && expect(P, ')'))
                r = binary(P, w[1] == 'i' ? CV_DIM_MIN : CV_DIM_MAX, a, b);
        } else if ((r = new_node(P, N_SYM))) {
            r->name = w;
            r->len = n;
        }
    } else {
        r = perr(P, "expected a dimension (an integer, a symbol or '(')");
    }
    P->depth--;
    return r;
}

static node *parse_product(parser *P)
{
    node *a = parse_factor(P);
    for (;;) {
        skip_ws(P);
        cv_dim_op op;
        if (!a || P->p >= P->end)
            return a;
        if (*P->p == '*') {
            P->p++;
            op = CV_DIM_MUL;
        } else if (peek_is(P, "floordiv")) {
            P->p += 8;
            op = CV_DIM_FLOORDIV;
        } else if (peek_is(P, "ceildiv")) {
            P->p += 7;
            op = CV_DIM_CEILDIV;
        } else if (peek_is(P, "mod")) {
            P->p += 3;
            op = CV_DIM_MOD;
        } else {
            return a;
        }
        a = binary(P, op, a, parse_factor(P));
    }
}

static node *parse_sum(parser *P)
{
    node *a = parse_product(P);
    for (;;) {
        skip_ws(P);
        if (!a || P->p >= P->end || (*P->p != '+' && *P->p != '-'))
            return a;
        cv_dim_op op = *P->p++ == '+' ? CV_DIM_ADD : CV_DIM_SUB;
        a = binary(P, op, a, parse_product(P));
    }
}

node *cv_dx_parse(parser *P, const char *s, size_t n, cv_arena *a)
{
    *P = (parser){.p = s, .end = s + n, .a = a, .start = s};
    if (n > DX_MAX_TEXT)
        return perr(P, "the expression is too long");
    node *r = parse_sum(P);
    skip_ws(P);
    if (r && P->p != P->end)
        r = perr(P, "unexpected text after the dimension");
    return r;
}


/* ---- evaluation --------------------------------------------------------------- */

typedef struct evalctx {
    cv_dim_lookup look;
    void *ctx;
    const char *missing;
    size_t missing_len;
} evalctx;

static int eval_node(evalctx *e, const node *n, int64_t *v)
{
    int64_t a, b;
    switch (n->kind) {
    case N_INT: *v = n->v; return 0;
    case N_SYM: {
        char name[256];
        size_t k = n->len < sizeof name - 1 ? n->len : sizeof name - 1;
        memcpy(name, n->name, k);
        name[k] = 0;
        if (n->len >= sizeof name || !e->look(e->ctx, name, v)) {
            e->missing = n->name;
            e->missing_len = n->len;
            return -1;
        }
        return 0;
    }
    case N_BIN:
        if (eval_node(e, n->a, &a) || eval_node(e, n->b, &b))
            return -1;
        cv_dim r;
        if (cv_dim_arith(NULL, n->op, (cv_dim){a, NULL}, (cv_dim){b, NULL}, &r))
            return -1;
        *v = r.n;
        return 0;
    }
    return -1;
}

int cv_dim_eval(cv_dim d, cv_dim_lookup look, void *ctx, int64_t *out)
{
    if (!d.sym) {
        *out = d.n;
        return 0;
    }
    if (!cv_dim_is_expr(d))
        return look(ctx, d.sym, out) ? 0 : -1;
    cv_arena ar;
    cv_arena_init(&ar);
    parser P;
    node *t = cv_dx_parse(&P, d.sym, strlen(d.sym), &ar);
    evalctx e = {look, ctx, NULL, 0};
    int rc = t ? eval_node(&e, t, out) : -1;
    cv_arena_free(&ar);
    return rc;
}

static bool collect_sym(const node *n, void (*fn)(void *, const char *, size_t), void *ctx)
{
    if (!n)
        return false;
    if (n->kind == N_SYM)
        fn(ctx, n->name, n->len);
    if (n->a)
        collect_sym(n->a, fn, ctx);
    if (n->b)
        collect_sym(n->b, fn, ctx);
    return true;
}

int cv_dim_symbols(cv_dim d, void (*fn)(void *ctx, const char *name, size_t n), void *ctx)
{
    if (!d.sym)
        return 0;
    if (!cv_dim_is_expr(d)) {
        fn(ctx, d.sym, strlen(d.sym));
        return 0;
    }
    cv_arena ar;
    cv_arena_init(&ar);
    parser P;
    node *t = cv_dx_parse(&P, d.sym, strlen(d.sym), &ar);
    int rc = collect_sym(t, fn, ctx) ? 0 : -1;
    cv_arena_free(&ar);
    return rc;
}

static void *fold_node(const node *n, const cv_dim_folder *f)
{
    switch (n->kind) {
    case N_INT: return f->num(f->ctx, n->v);
    case N_SYM: return f->sym(f->ctx, n->name, n->len);
    case N_BIN: {
        void *a = fold_node(n->a, f), *b = a ? fold_node(n->b, f) : NULL;
        return b ? f->bin(f->ctx, n->op, a, b) : NULL;
    }
    }
    return NULL;
}

void *cv_dim_fold(cv_dim d, const cv_dim_folder *f)
{
    if (!d.sym)
        return f->num(f->ctx, d.n);
    if (!cv_dim_is_expr(d))
        return f->sym(f->ctx, d.sym, strlen(d.sym));
    cv_arena ar;
    cv_arena_init(&ar);
    parser P;
    node *t = cv_dx_parse(&P, d.sym, strlen(d.sym), &ar);
    void *r = t ? fold_node(t, f) : NULL;
    cv_arena_free(&ar);
    return r;
}

void cv_dim_format(cv_dim d, char *buf, size_t size)
{
    if (!size)
        return;
    if (!d.sym)
        snprintf(buf, size, "%lld", (long long)d.n);
    else
        snprintf(buf, size, "%s", d.sym);
}
