/* Kernel IR statements to C99, and kernels to static functions
 *   static void kN(cvrt_ctx *rt, void *const *bufs, const int64_t *syms,
 *                  int64_t lo, int64_t hi)
 * whose body runs for every p in [lo, hi) (the LLVM backend's signature).
 * Only what a kernel uses is declared (gcc and clang -Wall reject unused
 * variables): a first pass finds the variables that are read, dropping the
 * assignments of the others until nothing changes, and the buffer slots,
 * symbols and runtime context the remaining statements touch. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/c99/c99_internal.h"

/* ---- what a kernel uses --------------------------------------------------------- */

typedef struct usage {
    cv_c99_fn *f;               /* its memo is the visited set */
    bool *read;                 /* by variable */
    bool slot[CV_K_MAX_SLOTS];
    bool syms, rt;
} usage;

static void use_expr(usage *u, const cv_kexpr *e)
{
    if (!e || !cv_c99_first_visit(u->f, e))
        return;
    switch ((cv_kexpr_kind)e->kind) {
    case CV_KE_VAR: u->read[e->id] = true; break;
    case CV_KE_SYM: u->syms = true; break;
    case CV_KE_LOAD:
    case CV_KE_ADDR: u->slot[e->id] = true; break;
    default: break;
    }
    use_expr(u, e->a);
    use_expr(u, e->b);
    use_expr(u, e->c);
}

static void use_stmts(usage *u, const cv_kstmt *s, const bool *live)
{
    for (; s; s = s->next) {
        if (s->kind == CV_KS_SET && !live[s->id])
            continue;
        if (s->kind == CV_KS_FOR)
            u->read[s->id] = true;
        if (s->kind == CV_KS_STORE)
            u->slot[s->id] = true;
        if (s->kind == CV_KS_CALL)
            u->rt = true;
        use_expr(u, s->a);
        use_expr(u, s->b);
        for (int i = 0; i < s->n_args; i++)
            use_expr(u, s->args[i]);
        use_stmts(u, s->body, live);
        use_stmts(u, s->orelse, live);
    }
}

/* live[v]: variable v is read by a statement that is kept. */
static void find_usage(cv_c99_fn *f, const cv_kernel *k, bool *live, usage *u)
{
    for (int v = 0; v < k->n_vars; v++)
        live[v] = true;
    for (bool changed = true; changed && !f->oom;) {
        cv_c99_begin_stmt(f, NULL, 0);
        memset(u->read, 0, sizeof *u->read * (size_t)k->n_vars);
        memset(u->slot, 0, sizeof u->slot);
        u->syms = u->rt = false;
        u->read[k->pvar] = true;
        use_stmts(u, k->body, live);
        changed = memcmp(live, u->read, sizeof *live * (size_t)k->n_vars) != 0;
        memcpy(live, u->read, sizeof *live * (size_t)k->n_vars);
    }
}

/* ---- statements ----------------------------------------------------------------- */

static void line_start(cv_c99_fn *f)
{
    cv_c99_indent(f);
}

static void emit_for(cv_c99_fn *f, const cv_kstmt *s)
{
    const cv_kexpr *roots[2] = {s->a, s->b};
    cv_c99_begin_stmt(f, roots, 2);
    cv_sb lo = CV_SB_INIT, hi = CV_SB_INIT;
    cv_c99_expr(f, s->a, &lo);
    cv_c99_expr(f, s->b, &hi);
    /* The bound is evaluated once, as in the LLVM backend: the body may
     * assign a variable it reads. */
    if (s->b->kind != CV_KE_CONST_I && s->b->kind != CV_KE_SYM) {
        line_start(f);
        cv_sb_printf(f->out, "const int64_t t%d = %s;\n", f->n_tmp, cv_sb_str(&hi));
        cv_sb_reset(&hi);
        cv_sb_printf(&hi, "t%d", f->n_tmp++);
    }
    line_start(f);
    cv_sb_printf(f->out, "for (v%d = %s; v%d < %s; v%d++) {\n", s->id, cv_sb_str(&lo), s->id,
                 cv_sb_str(&hi), s->id);
    f->oom |= lo.oom || hi.oom;
    cv_sb_free(&lo);
    cv_sb_free(&hi);
    f->indent++;
    cv_c99_stmts(f, s->body);
    f->indent--;
    line_start(f);
    cv_sb_puts(f->out, "}\n");
}

static void emit_if(cv_c99_fn *f, const cv_kstmt *s)
{
    cv_c99_begin_stmt(f, &s->a, 1);
    cv_sb cond = CV_SB_INIT;
    cv_c99_expr(f, s->a, &cond);
    line_start(f);
    cv_sb_printf(f->out, "if (%s) {\n", cv_sb_str(&cond));
    f->oom |= cond.oom != 0;
    cv_sb_free(&cond);
    f->indent++;
    cv_c99_stmts(f, s->body);
    f->indent--;
    if (s->orelse) {
        line_start(f);
        cv_sb_puts(f->out, "} else {\n");
        f->indent++;
        cv_c99_stmts(f, s->orelse);
        f->indent--;
    }
    line_start(f);
    cv_sb_puts(f->out, "}\n");
}

/* Statements of one line: `<prefix><text>;` after their temporaries. */
static void emit_line(cv_c99_fn *f, const char *prefix, const cv_sb *text)
{
    line_start(f);
    cv_sb_printf(f->out, "%s%s;\n", prefix, cv_sb_str(text));
    f->oom |= text->oom != 0;
}

static void emit_store(cv_c99_fn *f, const cv_kstmt *s)
{
    const cv_kexpr *roots[2] = {s->a, s->b};
    cv_c99_begin_stmt(f, roots, 2);
    cv_sb t = CV_SB_INIT;
    cv_sb_printf(&t, "b%d[", s->id);
    cv_c99_expr(f, s->a, &t);
    cv_sb_puts(&t, "] = ");
    cv_c99_to_storage(f, s->b, f->k->slot_dtype[s->id], &t);
    emit_line(f, "", &t);
    cv_sb_free(&t);
}

static void emit_set(cv_c99_fn *f, const cv_kstmt *s)
{
    if (f->var_live && !f->var_live[s->id])
        return;
    cv_c99_begin_stmt(f, &s->a, 1);
    cv_sb t = CV_SB_INIT;
    cv_sb_printf(&t, "v%d = ", s->id);
    cv_c99_expr(f, s->a, &t);
    emit_line(f, "", &t);
    cv_sb_free(&t);
}

/* name(first, args...) */
static void emit_call_args(cv_c99_fn *f, const char *name, const char *first, const cv_kstmt *s,
                           int from, cv_sb *t)
{
    cv_sb_printf(t, "%s(%s", name, first);
    for (int i = from; i < s->n_args; i++) {
        cv_sb_puts(t, ", ");
        cv_c99_expr(f, s->args[i], t);
    }
    cv_sb_putc(t, ')');
}

static void emit_call(cv_c99_fn *f, const cv_kstmt *s)
{
    const char *name = cv_c99_rt_name((cv_krt)s->id, f->need);
    if (!name) {
        f->bad_rt = s->id;
        return;
    }
    cv_c99_begin_stmt(f, s->args, s->n_args);
    cv_sb t = CV_SB_INIT;
    emit_call_args(f, name, "rt", s, 0, &t);
    emit_line(f, "", &t);
    cv_sb_free(&t);
}

/* In the run function: bind the kernel's slots, then run it over its extent. */
static void emit_launch(cv_c99_fn *f, const cv_kstmt *s)
{
    const cv_kernel *k = f->p->kernels[s->id];
    const cv_kexpr *roots[2] = {s->a, s->b};
    cv_c99_begin_stmt(f, roots, s->a ? 2 : 0);
    for (int i = 0; i < s->n_args; i++) {
        line_start(f);
        cv_sb_printf(f->out, "bufs[%d] = s%d;\n", i, s->args[i]->id);
    }
    cv_sb t = CV_SB_INIT;
    if (s->a) {
        f->need[CV_C99_H_LAUNCH] = true;
        cv_sb_puts(&t, "cvrt_launch(rt, ");
        cv_c99_expr(f, s->a, &t);
        cv_sb_puts(&t, ", ");
        cv_c99_expr(f, s->b, &t);
        cv_sb_printf(&t, ", %s, bufs, syms)", k->name);
    } else {
        cv_sb_printf(&t, "%s(rt, bufs, syms, 0, 1)", k->name);
    }
    emit_line(f, "", &t);
    cv_sb_free(&t);
}

void cv_c99_stmts(cv_c99_fn *f, const cv_kstmt *s)
{
    for (; s; s = s->next) {
        switch ((cv_kstmt_kind)s->kind) {
        case CV_KS_FOR: emit_for(f, s); break;
        case CV_KS_IF: emit_if(f, s); break;
        case CV_KS_STORE: emit_store(f, s); break;
        case CV_KS_SET: emit_set(f, s); break;
        case CV_KS_CALL: emit_call(f, s); break;
        case CV_KS_LAUNCH: emit_launch(f, s); break;
        }
    }
}

/* ---- kernels -------------------------------------------------------------------- */

static void declare(cv_c99_fn *f, const cv_kernel *k, const bool *live, const usage *u)
{
    cv_sb *o = f->out;
    for (int i = 0; i < k->n_slots; i++)
        if (u->slot[i])
            cv_sb_printf(o, "    %s *const b%d = (%s *)bufs[%d];\n", cv_c99_elem(k->slot_dtype[i]),
                         i, cv_c99_elem(k->slot_dtype[i]), i);
    for (int v = 0; v < k->n_vars; v++)
        if (live[v])
            cv_sb_printf(o, "    %s v%d = 0;\n", cv_c99_kty(k->var_ty[v]), v);
    if (!u->rt)
        cv_sb_puts(o, "    (void)rt;\n");
    if (!u->syms)
        cv_sb_puts(o, "    (void)syms;\n");
    bool any = false;
    for (int i = 0; i < k->n_slots; i++)
        any |= u->slot[i];
    if (!any)
        cv_sb_puts(o, "    (void)bufs;\n");
}

int cv_c99_kernel(const cv_kprog *p, const cv_kernel *k, bool *need, cv_sb *out, cv_diag *d)
{
    cv_c99_fn f = {.out = out, .p = p, .k = k, .indent = 1, .need = need, .bad_rt = -1};
    bool *live = calloc((size_t)k->n_vars + 1, sizeof *live);
    usage u = {.f = &f, .read = calloc((size_t)k->n_vars + 1, sizeof *u.read)};
    if (!live || !u.read) {
        free(live);
        free(u.read);
        return -1;
    }
    find_usage(&f, k, live, &u);
    f.var_live = live;
    cv_sb_printf(out, "static void %s(cvrt_ctx *rt, void *const *bufs, const int64_t *syms,\n"
                      "    int64_t lo, int64_t hi)\n{\n", k->name);
    declare(&f, k, live, &u);
    cv_sb_printf(out, "    for (v%d = lo; v%d < hi; v%d++) {\n", k->pvar, k->pvar, k->pvar);
    f.indent = 2;
    cv_c99_stmts(&f, k->body);
    cv_sb_puts(out, "    }\n}\n\n");
    cv_c99_memo_free(&f);
    free(live);
    free(u.read);
    if (f.bad_rt >= 0) {
        const cv_krt_info *info = cv_krt_get((cv_krt)f.bad_rt);
        return cv_diag_fail(d, CV_E_C99_NO_RUNTIME_ROUTINE, (cv_span){0}, "kernel %s calls the runtime routine %s, "
                            "which the C99 backend has no version of", k->name,
                            info ? info->name : "?");
    }
    if (f.malformed)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0}, "internal error: kernel %s holds an "
                            "operation the C99 backend does not know", k->name);
    if (f.oom)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory while writing C for %s",
                            k->name);
    return 0;
}
