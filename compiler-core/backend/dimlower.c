/* Dimension expressions in the native backends.  A dim (an integer, a
 * symbol or an expression over symbols, ir/dimexpr.c) becomes:
 *  - a kernel expression evaluated at run time (cv_kp_dim), with the floor
 *    semantics of dimexpr.c for floordiv, ceildiv and mod;
 *  - C text over the symbol array (cv_kp_dim_c: the header's arena macro,
 *    the C99 backend);
 *  - for memory planning, a derived symbol: every expression dim of a
 *    storage is one value the run function computes once from the symbols
 *    (extended index n_syms + j), so that arena size classes stay monomials
 *    of symbols and derived dims (cv_kclass). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/backend/kernel_internal.h"

int cv_kp_sym_index(const cv_kprog *p, const char *name, size_t n)
{
    for (int i = 0; i < p->n_syms; i++)
        if (strlen(p->sym_names[i]) == n && memcmp(p->sym_names[i], name, n) == 0)
            return i;
    return -1;
}

int cv_kp_sym_bounds(const cv_kprog *p, int *sym, int64_t *max, const char **why, int cap)
{
    const cv_sym_fact *facts;
    int n = 0, nf = cv_module_facts(p->f->module, &facts);
    for (int i = 0; i < nf && n < cap; i++) {
        int k = cv_kp_sym_index(p, facts[i].sym, strlen(facts[i].sym));
        if (k < 0)
            continue;   /* a symbol no input binds: nothing to check */
        sym[n] = k;
        max[n] = facts[i].max;
        if (why)
            why[n] = facts[i].why;
        n++;
    }
    return n;
}

/* ---- to kernel expressions ------------------------------------------------------ */

static void *k_num(void *ctx, int64_t v)
{
    return (void *)cv_k_i64(ctx, v);
}

static void *k_sym(void *ctx, const char *name, size_t n)
{
    cv_codegen_ctx *c = ctx;
    int s = cv_kp_sym_index(c->prog, name, n);
    cv_kexpr *e = s < 0 ? NULL : cv_kp_alloc(c->prog, sizeof *e);
    if (e)
        *e = (cv_kexpr){.kind = CV_KE_SYM, .ty = CV_KTY_I64, .id = s};
    return e;
}

/* floor(x / d) for a constant d > 0: truncation rounds negative x up. */
static const cv_kexpr *k_floordiv(cv_codegen_ctx *c, const cv_kexpr *x, int64_t d)
{
    const cv_kexpr *dk = cv_k_i64(c, d);
    const cv_kexpr *neg = cv_k_sub(c, cv_k_i64(c, 0),
                                   cv_k_div(c, cv_k_sub(c, cv_k_i64(c, d - 1), x), dk));
    return cv_k_select(c, cv_k_cmp(c, CV_KOP_GE, x, cv_k_i64(c, 0)), cv_k_div(c, x, dk), neg);
}

static void *k_bin(void *ctx, cv_dim_op op, void *pa, void *pb)
{
    cv_codegen_ctx *c = ctx;
    const cv_kexpr *a = pa, *b = pb;
    int64_t d;
    switch (op) {
    case CV_DIM_ADD: return (void *)cv_k_add(c, a, b);
    case CV_DIM_SUB: return (void *)cv_k_sub(c, a, b);
    case CV_DIM_MUL: return (void *)cv_k_mul(c, a, b);
    case CV_DIM_MIN: return (void *)cv_k_min(c, a, b);
    case CV_DIM_MAX: return (void *)cv_k_max(c, a, b);
    default: break;
    }
    /* Canonical dims divide by integer constants only (dimexpr.c). */
    if (!cv_k_is_const(b, &d) || d <= 0)
        return NULL;
    if (op == CV_DIM_CEILDIV)
        return (void *)k_floordiv(c, cv_k_add(c, a, cv_k_i64(c, d - 1)), d);
    const cv_kexpr *q = k_floordiv(c, a, d);
    return (void *)(op == CV_DIM_FLOORDIV ? q : cv_k_sub(c, a, cv_k_mul(c, q, cv_k_i64(c, d))));
}

const cv_kexpr *cv_kp_dim(cv_codegen_ctx *c, cv_dim d)
{
    cv_dim_folder f = {c, k_num, k_sym, k_bin};
    return cv_dim_fold(d, &f);
}

/* ---- to C text -------------------------------------------------------------------- */

typedef struct ctext {
    const cv_kprog *p;
    const char *arr;
    cv_arena *a;
} ctext;

static void *c_fmt(ctext *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *c_fmt(ctext *t, const char *fmt, ...)
{
    cv_sb sb = CV_SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    cv_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    /* Each floordiv repeats its operand: refuse texts that explode. */
    char *s = sb.len < 65536 ? cv_arena_strndup(t->a, cv_sb_str(&sb), sb.len) : NULL;
    cv_sb_free(&sb);
    return s;
}

static void *c_num(void *ctx, int64_t v)
{
    return c_fmt(ctx, "(int64_t)%lld", (long long)v);
}

static void *c_sym(void *ctx, const char *name, size_t n)
{
    ctext *t = ctx;
    int s = cv_kp_sym_index(t->p, name, n);
    return s < 0 ? NULL : c_fmt(t, "(%s)[%d]", t->arr, s);
}

static void *c_bin(void *ctx, cv_dim_op op, void *pa, void *pb)
{
    ctext *t = ctx;
    const char *a = pa, *b = pb;
    long long d;
    switch (op) {
    case CV_DIM_ADD: return c_fmt(t, "(%s + %s)", a, b);
    case CV_DIM_SUB: return c_fmt(t, "(%s - %s)", a, b);
    case CV_DIM_MUL: return c_fmt(t, "(%s * %s)", a, b);
    case CV_DIM_MIN: return c_fmt(t, "(%s < %s ? %s : %s)", a, b, a, b);
    case CV_DIM_MAX: return c_fmt(t, "(%s > %s ? %s : %s)", a, b, a, b);
    default: break;
    }
    if (sscanf(b, "(int64_t)%lld", &d) != 1 || d <= 0)
        return NULL;
    if (op == CV_DIM_CEILDIV)
        a = c_fmt(t, "(%s + %lld)", a, d - 1);
    if (!a)
        return NULL;
    const char *q = c_fmt(t, "(%s >= 0 ? %s / %lld : -((%lld - %s) / %lld))", a, a, d, d - 1, a, d);
    if (!q || op != CV_DIM_MOD)
        return (void *)q;
    return c_fmt(t, "(%s - %s * %lld)", a, q, d);
}

int cv_kp_dim_c(const cv_kprog *p, cv_dim d, const char *arr, cv_sb *out)
{
    cv_arena a;
    cv_arena_init(&a);
    ctext t = {p, arr, &a};
    cv_dim_folder f = {&t, c_num, c_sym, c_bin};
    const char *s = cv_dim_fold(d, &f);
    if (s)
        cv_sb_puts(out, s);
    cv_arena_free(&a);
    return s ? 0 : -1;
}

void cv_kp_sym_c(const cv_kprog *p, int k, const char *arr, cv_sb *out)
{
    if (k < p->n_syms)
        cv_sb_printf(out, "(%s)[%d]", arr, k);
    else if (cv_kp_dim_c(p, p->dsyms[k - p->n_syms], arr, out))
        cv_sb_puts(out, "(int64_t)-1");     /* cannot happen: cv_kp_dsym lowered it */
}

/* ---- derived symbols ------------------------------------------------------------------ */

int cv_kp_dsym_find(const cv_kprog *p, cv_dim d)
{
    for (int j = 0; j < p->n_dsyms; j++)
        if (strcmp(p->dsyms[j].sym, d.sym) == 0)
            return p->n_syms + j;
    return -1;
}

int cv_kp_dsym(cv_kprog *p, cv_dim d)
{
    int k = cv_kp_dsym_find(p, d);
    if (k >= 0)
        return k;
    if (p->n_dsyms == p->cap_dsyms) {
        int cap = p->cap_dsyms ? p->cap_dsyms * 2 : 16;
        cv_dim *nd = cv_kp_alloc(p, sizeof *nd * (size_t)cap);
        const cv_kexpr **ne = cv_kp_alloc(p, sizeof *ne * (size_t)cap);
        if (!nd || !ne)
            return -1;
        if (p->n_dsyms) {
            memcpy(nd, p->dsyms, sizeof *nd * (size_t)p->n_dsyms);
            memcpy(ne, p->dsym_expr, sizeof *ne * (size_t)p->n_dsyms);
        }
        p->dsyms = nd;
        p->dsym_expr = ne;
        p->cap_dsyms = cap;
    }
    cv_codegen_ctx c = {.prog = p};
    cv_sb probe = CV_SB_INIT;
    const cv_kexpr *e = cv_kp_dim(&c, d);
    int rc = cv_kp_dim_c(p, d, "d", &probe);
    cv_sb_free(&probe);
    if (!e || rc)
        return -1;
    p->dsyms[p->n_dsyms] = d;
    p->dsym_expr[p->n_dsyms] = e;
    return p->n_syms + p->n_dsyms++;
}

typedef struct lookup_ctx {
    const cv_kprog *p;
    const int64_t *syms;
} lookup_ctx;

static bool look_sym(void *ctx, const char *sym, int64_t *v)
{
    lookup_ctx *l = ctx;
    int s = cv_kp_sym_index(l->p, sym, strlen(sym));
    if (s < 0)
        return false;
    *v = l->syms ? l->syms[s] : 1;
    return true;
}

int cv_kp_sym_values(const cv_kprog *p, const int64_t *syms, int64_t *ext)
{
    for (int i = 0; i < p->n_syms; i++)
        ext[i] = syms ? syms[i] : 1;
    lookup_ctx l = {p, syms};
    for (int j = 0; j < p->n_dsyms; j++)
        if (cv_dim_eval(p->dsyms[j], look_sym, &l, &ext[p->n_syms + j]))
            return -1;
    return 0;
}

/* ---- monomial dims ----------------------------------------------------------------------- */

/* A dim that is c * S1 * S2 ... (flattening [N, L, 32] gives 32*L*N) joins
 * the symbols' own size class instead of making a derived symbol. */
typedef struct mono_ctx {
    const cv_kprog *p;
    cv_arena *a;
} mono_ctx;

typedef struct mono_val {
    int64_t coef;
    int n;
    int syms[CV_MAX_RANK * 2];
} mono_val;

static void *m_new(mono_ctx *m, int64_t coef)
{
    mono_val *v = cv_arena_alloc(m->a, sizeof *v);
    if (v)
        *v = (mono_val){.coef = coef};
    return v;
}

static void *m_num(void *ctx, int64_t v)
{
    return v > 0 ? m_new(ctx, v) : NULL;
}

static void *m_sym(void *ctx, const char *name, size_t n)
{
    mono_ctx *m = ctx;
    int s = cv_kp_sym_index(m->p, name, n);
    mono_val *v = s < 0 ? NULL : m_new(m, 1);
    if (v)
        v->syms[v->n++] = s;
    return v;
}

static void *m_bin(void *ctx, cv_dim_op op, void *pa, void *pb)
{
    const mono_val *a = pa, *b = pb;
    int64_t coef;
    if (op != CV_DIM_MUL || a->n + b->n > CV_MAX_RANK * 2 ||
        __builtin_mul_overflow(a->coef, b->coef, &coef))
        return NULL;
    mono_val *v = m_new(ctx, coef);
    if (v) {
        memcpy(v->syms, a->syms, sizeof *a->syms * (size_t)a->n);
        memcpy(v->syms + a->n, b->syms, sizeof *b->syms * (size_t)b->n);
        v->n = a->n + b->n;
    }
    return v;
}

int cv_kp_dim_monomial(const cv_kprog *p, cv_dim d, int64_t *coef, int *syms)
{
    cv_arena a;
    cv_arena_init(&a);
    mono_ctx m = {p, &a};
    cv_dim_folder f = {&m, m_num, m_sym, m_bin};
    const mono_val *v = cv_dim_fold(d, &f);
    int n = v ? v->n : -1;
    if (v) {
        *coef = v->coef;
        memcpy(syms, v->syms, sizeof *syms * (size_t)v->n);
    }
    cv_arena_free(&a);
    return n;
}
