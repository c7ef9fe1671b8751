/* Diagnostics of the analysis: AST paths and spans from nodes, notes for
 * the helper calls an error was inlined through, one report per mistake,
 * "did you mean" suggestions, and the compile-time step budget. */
#include <stdarg.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/strutil.h"
#include "compiler-core/frontends/dsl/sema.h"

static uint64_t hash_str(const char *p)
{
    uint64_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* The first report at code/line/col: its entry, or NULL. */
static dsl_reported *find_reported(dsl_sema *s, int code, int line, int col)
{
    for (int i = 0; i < s->n_reported; i++)
        if (s->reported[i].code == code && s->reported[i].line == line && s->reported[i].col == col)
            return &s->reported[i];
    return NULL;
}

static void remember(dsl_sema *s, int code, int line, int col, int id, uint64_t h)
{
    if (s->n_reported == s->cap_reported) {
        int cap = s->cap_reported ? s->cap_reported * 2 : 32;
        dsl_reported *v = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *v);
        if (!v)
            return;
        if (s->n_reported)
            memcpy(v, s->reported, (size_t)s->n_reported * sizeof *v);
        s->reported = v;
        s->cap_reported = cap;
    }
    s->reported[s->n_reported++] = (dsl_reported){code, line, col, id, h};
}

static void note_inline_stack(dsl_sema *s, int id)
{
    for (int i = s->depth - 1; i >= 0; i--) {
        const dsl_node *call = s->stack[i].call;
        if (call == s->stack[i].fn)
            continue;  /* the model itself, not an inlined helper */
        cv_diag_note(s->d, id, "in helper '%s' inlined at %s:%d:%d", s->stack[i].fn->name,
                     s->file, call->line, call->col);
    }
}

int dsl_error(dsl_sema *s, int code, const dsl_node *at, const char *fmt, ...)
{
    cv_sb msg = CV_SB_INIT;   /* owned here */
    va_list ap;
    va_start(ap, fmt);
    cv_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    uint64_t h = hash_str(cv_sb_str(&msg));
    dsl_reported *prev = find_reported(s, code, at->line, at->col);
    if (prev && prev->msg_hash == h) {
        cv_sb_free(&msg);
        return prev->id;  /* the same mistake met again (a loop, a second call) */
    }
    cv_sb path = CV_SB_INIT;  /* owned here */
    dsl_ast_path(at, &path);
    cv_span sp = {s->file, at->line, at->col, at->end_line, at->end_col};
    int id = cv_diag_add(s->d, CV_SEV_ERROR, code, sp, cv_sb_str(&path), "%s", cv_sb_str(&msg));
    cv_sb_free(&path);
    cv_sb_free(&msg);
    if (!id)
        return prev ? prev->id : 0;
    note_inline_stack(s, id);
    if (prev)
        cv_diag_set_root(s->d, id, prev->id);
    else
        remember(s, code, at->line, at->col, id, h);
    return id;
}

void dsl_note(dsl_sema *s, int id, const char *fmt, ...)
{
    cv_sb msg = CV_SB_INIT;   /* owned here */
    va_list ap;
    va_start(ap, fmt);
    cv_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    cv_diag_note(s->d, id, "%s", cv_sb_str(&msg));
    cv_sb_free(&msg);
}

const char *dsl_suggest(const char *name, const char *const *cands, int n)
{
    int len = (int)strlen(name);
    int limit = len <= 3 ? 1 : len <= 8 ? 2 : 3;
    return n > 0 ? cv_closest_match(name, cands, (size_t)n, limit) : NULL;
}

bool dsl_step(dsl_sema *s, const dsl_node *at)
{
    if (++s->steps <= DSL_MAX_STEPS && s->n_ops <= DSL_MAX_OPS && s->nest <= DSL_MAX_NEST)
        return true;
    if (!s->budget_id) {
        s->budget_id = dsl_error(s, CV_E_DSL_TOO_LARGE, at, "the model does more than %d compile-time steps, builds "
                                 "more than %d ops or nests evaluations deeper than %d; it is too "
                                 "large to unroll", DSL_MAX_STEPS, DSL_MAX_OPS, DSL_MAX_NEST);
        if (!s->budget_id)
            s->budget_id = -1;
    }
    return false;
}
