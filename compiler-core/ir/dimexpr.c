/* Symbolic dimension arithmetic.  A dimension that is not an integer is a
 * symbol (N) or an expression over symbols with + - * floordiv ceildiv mod
 * min max and integer constants.  Expressions are kept in one canonical
 * form, a sum of products with sorted terms and folded constants, whose text
 * is interned in the module: two dims are equal iff their texts are, so the
 * verifier proves shapes agree by comparing pointers' strings as before.
 *
 * Canonical form (docs/cuir.md "Symbolic dimensions"):
 *  - a polynomial: terms coef*f1*f2*... with factors (atoms) sorted by text,
 *    terms by degree (descending) then factor texts, the constant last;
 *  - atoms: a symbol, min(A, B) / max(A, B) with A, B sorted, and
 *    (P floordiv c) / (P mod c) with c >= 2 and every coefficient of P in
 *    [1, c) and its constant in [0, c) (the multiples of c are pulled out:
 *    (c*A + B) floordiv c = A + B floordiv c).  ceildiv(P, c) is
 *    floordiv(P + c - 1, c).
 * Every symbol stands for a dimension, so it is >= 0; then every floordiv
 * and mod atom is >= 0 too, which lets min/max of expressions that differ by
 * a provably signed amount fold (min(L + 1, L) = L). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/ir/cuir_text.h"
#include "compiler-core/ir/dimexpr_internal.h"
#include "compiler-core/ir/ir.h"

/* ---- polynomials ---------------------------------------------------------- */

typedef struct dx_term {
    int64_t coef;
    int nf;
    const char *f[DX_MAX_FACTORS];  /* atom texts, sorted; product-safe spelling */
} dx_term;

typedef struct dx_poly {
    int n;
    dx_term t[DX_MAX_TERMS];
} dx_poly;

typedef struct dx {
    cv_arena *a;            /* scratch: atom texts */
    bool bad;               /* overflow or too large */
    const char *why;
} dx;

static int fail(dx *x, const char *why)
{
    if (!x->bad)
        x->why = why;
    x->bad = true;
    return -1;
}

static int term_cmp(const dx_term *a, const dx_term *b)
{
    if (a->nf != b->nf)
        return a->nf > b->nf ? -1 : 1;
    for (int i = 0; i < a->nf; i++) {
        int c = strcmp(a->f[i], b->f[i]);
        if (c)
            return c;
    }
    return 0;
}

/* Adds coef*monomial(t) into p, keeping p sorted and free of zero terms. */
static void poly_add_term(dx *x, dx_poly *p, const dx_term *t)
{
    if (t->coef == 0)
        return;
    int i = 0;
    while (i < p->n && term_cmp(&p->t[i], t) < 0)
        i++;
    if (i < p->n && term_cmp(&p->t[i], t) == 0) {
        if (__builtin_add_overflow(p->t[i].coef, t->coef, &p->t[i].coef)) {
            fail(x, "a coefficient overflows");
            return;
        }
        if (p->t[i].coef == 0) {
            memmove(&p->t[i], &p->t[i + 1], sizeof *p->t * (size_t)(p->n - i - 1));
            p->n--;
        }
        return;
    }
    if (p->n == DX_MAX_TERMS) {
        fail(x, "too many terms");
        return;
    }
    memmove(&p->t[i + 1], &p->t[i], sizeof *p->t * (size_t)(p->n - i));
    p->t[i] = *t;
    p->n++;
}

static void poly_const(dx_poly *p, int64_t c)
{
    p->n = 0;
    if (c) {
        p->n = 1;
        p->t[0] = (dx_term){.coef = c};
    }
}

static void poly_atom(dx_poly *p, const char *atom)
{
    p->n = 1;
    p->t[0] = (dx_term){.coef = 1, .nf = 1, .f = {atom}};
}

static bool poly_is_const(const dx_poly *p, int64_t *c)
{
    if (p->n == 0) {
        *c = 0;
        return true;
    }
    if (p->n == 1 && p->t[0].nf == 0) {
        *c = p->t[0].coef;
        return true;
    }
    return false;
}

static int64_t poly_constant(const dx_poly *p)
{
    return p->n && p->t[p->n - 1].nf == 0 ? p->t[p->n - 1].coef : 0;
}

static void poly_add(dx *x, dx_poly *r, const dx_poly *a, const dx_poly *b, int64_t bsign)
{
    dx_poly s = *a;
    for (int i = 0; i < b->n; i++) {
        dx_term t = b->t[i];
        if (bsign < 0 && __builtin_mul_overflow(t.coef, -1, &t.coef)) {
            fail(x, "a coefficient overflows");
            return;
        }
        poly_add_term(x, &s, &t);
    }
    *r = s;
}

static int term_mul(dx *x, const dx_term *a, const dx_term *b, dx_term *r)
{
    if (a->nf + b->nf > DX_MAX_FACTORS)
        return fail(x, "too many factors");
    r->nf = 0;
    if (__builtin_mul_overflow(a->coef, b->coef, &r->coef))
        return fail(x, "a coefficient overflows");
    int i = 0, j = 0;
    while (i < a->nf || j < b->nf) {
        if (j == b->nf || (i < a->nf && strcmp(a->f[i], b->f[j]) <= 0))
            r->f[r->nf++] = a->f[i++];
        else
            r->f[r->nf++] = b->f[j++];
    }
    return 0;
}

static void poly_mul(dx *x, dx_poly *r, const dx_poly *a, const dx_poly *b)
{
    dx_poly s = {0};
    for (int i = 0; i < a->n && !x->bad; i++)
        for (int j = 0; j < b->n && !x->bad; j++) {
            dx_term t;
            if (term_mul(x, &a->t[i], &b->t[j], &t) == 0)
                poly_add_term(x, &s, &t);
        }
    *r = s;
}


/* ---- printing --------------------------------------------------------------- */

static bool atom_is_infix(const char *atom) { return atom[0] == '('; }

static void put_term(cv_sb *sb, const dx_term *t, bool first)
{
    int64_t c = t->coef;
    if (!first)
        cv_sb_puts(sb, c < 0 ? " - " : " + ");
    else if (c < 0)
        cv_sb_putc(sb, '-');
    uint64_t m = c < 0 ? 0 - (uint64_t)c : (uint64_t)c;
    if (t->nf == 0 || m != 1)
        cv_sb_printf(sb, "%llu%s", (unsigned long long)m, t->nf ? "*" : "");
    if (t->nf == 1 && m == 1 && atom_is_infix(t->f[0]) && !(first && c < 0)) {
        /* floordiv and mod bind tighter than + and -, not than unary - */
        cv_sb_add(sb, t->f[0] + 1, strlen(t->f[0]) - 2);
        return;
    }
    for (int i = 0; i < t->nf; i++) {
        if (i)
            cv_sb_putc(sb, '*');
        cv_sb_puts(sb, t->f[i]);
    }
}

/* The canonical text; a lone infix atom loses its outer parentheses. */
static void put_poly(cv_sb *sb, const dx_poly *p)
{
    if (p->n == 0)
        cv_sb_putc(sb, '0');
    for (int i = 0; i < p->n; i++)
        put_term(sb, &p->t[i], i == 0);
}

/* An operand of an infix atom or of min/max: bare when it is one factor. */
static void put_operand(cv_sb *sb, const dx_poly *p, bool paren)
{
    bool bare = !paren || (p->n == 1 && p->t[0].nf == 1 && p->t[0].coef == 1);
    if (p->n == 1 && p->t[0].nf == 1 && p->t[0].coef == 1) {
        cv_sb_puts(sb, p->t[0].f[0]);
        return;
    }
    if (!bare)
        cv_sb_putc(sb, '(');
    put_poly(sb, p);
    if (!bare)
        cv_sb_putc(sb, ')');
}

static const char *sb_atom(dx *x, cv_sb *sb)
{
    const char *s = NULL;
    if (sb->len > DX_MAX_TEXT)
        fail(x, "the expression is too long");
    else if (!(s = cv_arena_strndup(x->a, cv_sb_str(sb), sb->len)))
        fail(x, "out of memory");
    cv_sb_free(sb);
    return s;
}

static const char *symbol_atom(dx *x, const char *name, size_t n)
{
    cv_sb sb = {0};
    char *tmp = cv_arena_strndup(x->a, name, n);
    if (!tmp) {
        fail(x, "out of memory");
        return NULL;
    }
    if (cv_cuir_is_ident(tmp)) {
        cv_sb_puts(&sb, tmp);
    } else {
        cv_sb_putc(&sb, '"');
        cv_sb_put_escaped(&sb, name, n);
        cv_sb_putc(&sb, '"');
    }
    return sb_atom(x, &sb);
}

/* ---- division, modulo, min and max ----------------------------------------- */

static int64_t fdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Splits p = c*q + r with r's coefficients in [0, c) (c >= 2). */
static void poly_divmod_const(dx_poly *q, dx_poly *r, const dx_poly *p, int64_t c)
{
    q->n = r->n = 0;
    for (int i = 0; i < p->n; i++) {
        dx_term tq = p->t[i], tr = p->t[i];
        tq.coef = fdiv(p->t[i].coef, c);
        tr.coef = p->t[i].coef - tq.coef * c;
        if (tq.coef)
            q->t[q->n++] = tq;
        if (tr.coef)
            r->t[r->n++] = tr;
    }
}

static void make_infix_atom(dx *x, dx_poly *out, const dx_poly *p, const char *op, int64_t c)
{
    cv_sb sb = {0};
    cv_sb_putc(&sb, '(');
    put_operand(&sb, p, true);
    cv_sb_printf(&sb, " %s %lld)", op, (long long)c);
    const char *a = sb_atom(x, &sb);
    if (a)
        poly_atom(out, a);
}

static void floordiv_const(dx *x, dx_poly *out, const dx_poly *p, int64_t c)
{
    dx_poly pp = *p;
    if (c < 0) {
        dx_poly z = {0};
        poly_add(x, &pp, &z, p, -1);
        if (c == INT64_MIN) {
            fail(x, "a divisor overflows");
            return;
        }
        c = -c;
    }
    if (c == 1) {
        *out = pp;
        return;
    }
    dx_poly q, r, atom = {0};
    poly_divmod_const(&q, &r, &pp, c);
    int64_t k;
    if (!poly_is_const(&r, &k))
        make_infix_atom(x, &atom, &r, "floordiv", c);
    poly_add(x, out, &q, &atom, 1);
}

static void mod_const(dx *x, dx_poly *out, const dx_poly *p, int64_t c)
{
    if (c < 0) {
        /* Python-style: the result takes the divisor's sign.  p mod c =
         * p - c*floordiv(p, c). */
        dx_poly q, cq, cp;
        floordiv_const(x, &q, p, c);
        poly_const(&cp, c);
        poly_mul(x, &cq, &q, &cp);
        poly_add(x, out, p, &cq, -1);
        return;
    }
    dx_poly q, r;
    poly_divmod_const(&q, &r, p, c);
    int64_t k;
    if (c == 1 || poly_is_const(&r, &k))
        poly_const(out, c == 1 ? 0 : k);
    else
        make_infix_atom(x, out, &r, "mod", c);
}

/* a = q * d exactly, for a single-term d; false when it does not divide. */
static bool div_by_term(const dx_poly *a, const dx_term *d, dx_poly *q)
{
    q->n = 0;
    for (int i = 0; i < a->n; i++) {
        const dx_term *t = &a->t[i];
        if (d->coef == 0 || t->coef % d->coef)
            return false;
        dx_term r = {.coef = t->coef / d->coef};
        int j = 0;
        for (int k = 0; k < t->nf; k++) {
            if (j < d->nf && strcmp(t->f[k], d->f[j]) == 0)
                j++;
            else
                r.f[r.nf++] = t->f[k];
        }
        if (j != d->nf)
            return false;
        q->t[q->n++] = r;
    }
    return true;   /* stays sorted: dividing every term by one monomial keeps the order */
}

static int poly_sign(dx *x, const dx_poly *p);
static void canon(dx *x, const node *n, dx_poly *out);

/* Whether an atom is provably >= 0: symbols, floordiv and mod atoms always
 * are (see the top); min(A, B) when both are, max(A, B) when either is. */
static bool atom_nonneg(dx *x, const char *atom)
{
    bool is_min = !strncmp(atom, "min(", 4);
    if (!is_min && strncmp(atom, "max(", 4))
        return true;
    struct parser P;
    node *t = cv_dx_parse(&P, atom, strlen(atom), x->a);
    dx_poly *ab = malloc(2 * sizeof *ab);
    bool r = false;
    if (t && ab && t->a && t->b) {
        canon(x, t->a, &ab[0]);
        canon(x, t->b, &ab[1]);
        bool a = poly_sign(x, &ab[0]) > 0, b = poly_sign(x, &ab[1]) > 0;
        r = !x->bad && (is_min ? a && b : a || b);
    }
    free(ab);
    return r;
}

/* Sign of p, every atom being a symbol-like value >= 0 where provable:
 * 1 (>= 0), -1 (<= 0) or 0 (unknown). */
static int poly_sign(dx *x, const dx_poly *p)
{
    bool pos = true, neg = true;
    for (int i = 0; i < p->n; i++) {
        for (int k = 0; k < p->t[i].nf; k++)
            if (!atom_nonneg(x, p->t[i].f[k]))
                return 0;
        if (p->t[i].coef < 0)
            pos = false;
        else
            neg = false;
    }
    return pos ? 1 : neg ? -1 : 0;
}

static void minmax(dx *x, dx_poly *out, const dx_poly *a, const dx_poly *b, bool is_min)
{
    dx_poly d;
    poly_add(x, &d, a, b, -1);
    int s = poly_sign(x, &d);   /* a - b */
    if (s > 0 || (s == 0 && d.n == 0)) {
        *out = is_min ? *b : *a;
        return;
    }
    if (s < 0) {
        *out = is_min ? *a : *b;
        return;
    }
    cv_sb sa = {0}, sb2 = {0}, sb = {0};
    put_poly(&sa, a);
    put_poly(&sb2, b);
    bool swap = strcmp(cv_sb_str(&sa), cv_sb_str(&sb2)) > 0;
    cv_sb_printf(&sb, "%s(%s, %s)", is_min ? "min" : "max", cv_sb_str(swap ? &sb2 : &sa),
                 cv_sb_str(swap ? &sa : &sb2));
    cv_sb_free(&sa);
    cv_sb_free(&sb2);
    const char *t = sb_atom(x, &sb);
    if (t)
        poly_atom(out, t);
}

static void poly_binop(dx *x, cv_dim_op op, dx_poly *r, const dx_poly *a, const dx_poly *b)
{
    int64_t c;
    bool bc = poly_is_const(b, &c);
    switch (op) {
    case CV_DIM_ADD: poly_add(x, r, a, b, 1); return;
    case CV_DIM_SUB: poly_add(x, r, a, b, -1); return;
    case CV_DIM_MUL: poly_mul(x, r, a, b); return;
    case CV_DIM_MIN: minmax(x, r, a, b, true); return;
    case CV_DIM_MAX: minmax(x, r, a, b, false); return;
    case CV_DIM_FLOORDIV:
    case CV_DIM_CEILDIV:
    case CV_DIM_MOD:
        break;
    }
    if (bc && c == 0) {
        fail(x, "division by zero");
        return;
    }
    if (!bc) {
        /* A symbolic divisor only when it divides exactly (N*L floordiv L). */
        if (b->n != 1 || !div_by_term(a, &b->t[0], r)) {
            fail(x, "the divisor is symbolic and does not divide the dividend");
            return;
        }
        if (op == CV_DIM_MOD)
            r->n = 0;
        return;
    }
    if (op == CV_DIM_MOD) {
        mod_const(x, r, a, c);
        return;
    }
    dx_poly aa = *a;
    if (op == CV_DIM_CEILDIV) {
        dx_poly k;
        if (c < 0) {
            /* ceil(a / c) = -floor(a / -c) */
            dx_poly f, z = {0};
            floordiv_const(x, &f, a, -c);
            poly_add(x, r, &z, &f, -1);
            return;
        }
        /* ceil(a / c) = floor((a + c - 1) / c) */
        poly_const(&k, c - 1);
        poly_add(x, &aa, a, &k, 1);
    }
    floordiv_const(x, r, &aa, c);
}

/* ---- from text or dims to polynomials and back ------------------------------ */

static void canon(dx *x, const node *n, dx_poly *out)
{
    out->n = 0;
    if (x->bad)
        return;
    switch (n->kind) {
    case N_INT: poly_const(out, n->v); return;
    case N_SYM: {
        const char *a = symbol_atom(x, n->name, n->len);
        if (a)
            poly_atom(out, a);
        return;
    }
    case N_BIN: {
        dx_poly *ab = malloc(2 * sizeof *ab);
        if (!ab) {
            fail(x, "out of memory");
            return;
        }
        canon(x, n->a, &ab[0]);
        canon(x, n->b, &ab[1]);
        if (!x->bad)
            poly_binop(x, n->op, out, &ab[0], &ab[1]);
        free(ab);
        return;
    }
    }
}

static void dim_poly(dx *x, cv_dim d, dx_poly *out)
{
    if (!d.sym) {
        poly_const(out, d.n);
        return;
    }
    if (d.n != CV_DIM_EXPR) {
        const char *a = symbol_atom(x, d.sym, strlen(d.sym));
        if (a)
            poly_atom(out, a);
        return;
    }
    parser P;
    node *n = cv_dx_parse(&P, d.sym, strlen(d.sym), x->a);
    if (!n) {
        fail(x, "a malformed dimension expression");
        return;
    }
    canon(x, n, out);
}

/* Interns p as a dim: an integer, a bare symbol, or an expression. */
static int poly_dim(dx *x, cv_module *m, const dx_poly *p, cv_dim *out)
{
    int64_t c;
    if (x->bad)
        return -1;
    if (poly_is_const(p, &c)) {
        *out = (cv_dim){c, NULL};
        return 0;
    }
    if (!m)
        return fail(x, "no module to hold a symbolic result");
    if (p->n == 1 && p->t[0].coef == 1 && p->t[0].nf == 1) {
        const char *a = p->t[0].f[0];
        if (cv_cuir_is_ident(a)) {
            *out = (cv_dim){0, cv_module_intern(m, a, strlen(a))};
            return 0;
        }
        if (a[0] == '"') {
            parser P;
            node *n = cv_dx_parse(&P, a, strlen(a), x->a);
            if (n && n->kind == N_SYM) {
                *out = (cv_dim){0, cv_module_intern(m, n->name, n->len)};
                return 0;
            }
        }
    }
    cv_sb sb = {0};
    put_poly(&sb, p);
    if (sb.len > DX_MAX_TEXT) {
        cv_sb_free(&sb);
        return fail(x, "the expression is too long");
    }
    *out = (cv_dim){CV_DIM_EXPR, cv_module_intern(m, cv_sb_str(&sb), sb.len)};
    cv_sb_free(&sb);
    return out->sym ? 0 : fail(x, "out of memory");
}

/* ---- public API ------------------------------------------------------------- */

bool cv_dim_is_expr(cv_dim d) { return d.sym && d.n == CV_DIM_EXPR; }

bool cv_dim_is_symbol(cv_dim d) { return d.sym && d.n != CV_DIM_EXPR; }

int cv_dim_arith(cv_module *m, cv_dim_op op, cv_dim a, cv_dim b, cv_dim *out)
{
    if (!a.sym && !b.sym) {
        /* The common all-integer case, without the polynomial machinery. */
        int64_t r;
        bool ovf = false;
        switch (op) {
        case CV_DIM_ADD: ovf = __builtin_add_overflow(a.n, b.n, &r); break;
        case CV_DIM_SUB: ovf = __builtin_sub_overflow(a.n, b.n, &r); break;
        case CV_DIM_MUL: ovf = __builtin_mul_overflow(a.n, b.n, &r); break;
        case CV_DIM_MIN: r = a.n < b.n ? a.n : b.n; break;
        case CV_DIM_MAX: r = a.n > b.n ? a.n : b.n; break;
        default:
            if (b.n == 0 || (b.n == -1 && a.n == INT64_MIN))
                return -1;
            r = fdiv(a.n, b.n);
            if (op == CV_DIM_CEILDIV)
                r = -fdiv(-a.n, b.n);
            else if (op == CV_DIM_MOD)
                r = a.n - r * b.n;
        }
        if (ovf)
            return -1;
        *out = (cv_dim){r, NULL};
        return 0;
    }
    cv_arena ar;
    cv_arena_init(&ar);
    dx x = {.a = &ar};
    dx_poly *p = malloc(3 * sizeof *p);
    int rc = -1;
    if (p) {
        dim_poly(&x, a, &p[0]);
        dim_poly(&x, b, &p[1]);
        if (!x.bad)
            poly_binop(&x, op, &p[2], &p[0], &p[1]);
        rc = poly_dim(&x, m, &p[2], out);
    }
    free(p);
    cv_arena_free(&ar);
    return rc;
}

int cv_dim_add(cv_module *m, cv_dim a, cv_dim b, cv_dim *out)
{
    return cv_dim_arith(m, CV_DIM_ADD, a, b, out);
}

int cv_dim_sub(cv_module *m, cv_dim a, cv_dim b, cv_dim *out)
{
    return cv_dim_arith(m, CV_DIM_SUB, a, b, out);
}

int cv_dim_mul(cv_module *m, cv_dim a, cv_dim b, cv_dim *out)
{
    return cv_dim_arith(m, CV_DIM_MUL, a, b, out);
}

int cv_dim_parse(cv_module *m, const char *s, size_t n, cv_dim *out, const char **err,
                 size_t *err_at)
{
    cv_arena ar;
    cv_arena_init(&ar);
    parser P;
    dx x = {.a = &ar};
    dx_poly *p = malloc(sizeof *p);
    node *t = p ? cv_dx_parse(&P, s, n, &ar) : NULL;
    int rc = -1;
    if (t) {
        canon(&x, t, p);
        rc = poly_dim(&x, m, p, out);
        if (rc && err)
            *err = x.why ? x.why : "not expressible";
        if (rc && err_at)
            *err_at = 0;
    } else {
        if (err)
            *err = p ? P.err : "out of memory";
        if (err_at)
            *err_at = p ? P.err_at : 0;
    }
    free(p);
    cv_arena_free(&ar);
    return rc;
}

int cv_dim_compare(cv_dim a, cv_dim b)
{
    if (!a.sym && !b.sym)
        return a.n < b.n ? CV_DIM_LT : a.n > b.n ? CV_DIM_GT : CV_DIM_EQ;
    if (cv_dim_equal(a, b))
        return CV_DIM_EQ;
    cv_arena ar;
    cv_arena_init(&ar);
    dx x = {.a = &ar};
    dx_poly *p = malloc(3 * sizeof *p);
    int r = CV_DIM_UNKNOWN;
    if (p) {
        dim_poly(&x, a, &p[0]);
        dim_poly(&x, b, &p[1]);
        poly_add(&x, &p[2], &p[0], &p[1], -1);
        int64_t c = poly_constant(&p[2]);
        int s = poly_sign(&x, &p[2]);  /* a - b >= its constant when s > 0 */
        if (x.bad)
            r = CV_DIM_UNKNOWN;
        else if (p[2].n == 0)
            r = CV_DIM_EQ;
        else if (s > 0)
            r = c > 0 ? CV_DIM_GT : CV_DIM_GE;
        else if (s < 0)
            r = c < 0 ? CV_DIM_LT : CV_DIM_LE;
    }
    free(p);
    cv_arena_free(&ar);
    return r;
}
