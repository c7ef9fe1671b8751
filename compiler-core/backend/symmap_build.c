/* The artifact's symbol map (<name>.cvsym, symbols/symbols.h) from its
 * kernel program: kernels and the ops each implements, the storage of every
 * op result, and the kernels' code ranges in the linked library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/backend/debug_internal.h"
#include "compiler-core/backend/kernel_internal.h"
#include "symbols/symbols.h"

static const cv_loc *first_loc(const cv_op *op)
{
    return op->n_locs > 0 ? &op->locs[0] : NULL;
}

bool cv_debug_needs_listing(const cv_kprog *p)
{
    for (int i = 0; i < p->f->n_ops; i++) {
        const cv_loc *l = first_loc(p->f->ops[i]);
        if (!l || l->line <= 0 || !l->file)
            return true;
    }
    return false;
}

void cv_debug_op_line(const cv_kprog *p, int op, const char *listing, const char **file,
                      int *line, int *col)
{
    const cv_func *f = p->f;
    const cv_loc *l = op >= 0 && op < f->n_ops ? first_loc(f->ops[op]) : NULL;
    if (l && l->line > 0 && l->file) {
        *file = l->file;
        *line = l->line;
        *col = l->col;
        return;
    }
    /* "cuir 1", the model line, one line per param, then the ops. */
    *file = listing;
    *line = op >= 0 ? 3 + f->n_params + op : 2;
    *col = 0;
}

static void fill_ops(cv_symmap *m, const cv_kprog *p, bool locs, const char *listing)
{
    const cv_func *f = p->f;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        cv_sym_op *o = &m->ops[i];
        o->index = i;
        o->op = cv_symmap_str(m, op->name);
        o->value = op->n_results ? cv_symmap_str(m, op->results[0]->name) : NULL;
        char path[256];
        cv_op_path(op, path, sizeof path);
        o->path = cv_symmap_str(m, path);
        if (listing)
            o->listing_line = 3 + f->n_params + i;
        if (!locs || op->n_locs == 0)
            continue;
        o->locs = cv_arena_alloc_array(&m->arena, (size_t)op->n_locs, sizeof *o->locs);
        for (int k = 0; o->locs && k < op->n_locs; k++) {
            const cv_loc *l = &op->locs[k];
            o->locs[o->n_locs++] = (cv_sym_loc){cv_symmap_str(m, l->file ? l->file : ""),
                                                 l->line, l->col};
        }
    }
}

static void fill_kernels(cv_symmap *m, const cv_kprog *p)
{
    for (int i = 0; i < p->n_kernels; i++) {
        const cv_kernel *k = p->kernels[i];
        cv_sym_kernel *s = &m->kernels[i];
        s->name = cv_symmap_str(m, k->name);
        s->parallel = k->extent != NULL;
        if (k->op < 0)
            continue;
        s->ops = cv_arena_alloc_array(&m->arena, (size_t)k->n_fused + 1, sizeof *s->ops);
        if (!s->ops)
            continue;
        s->ops[s->n_ops++] = k->op;
        for (int j = 0; j < k->n_fused; j++)
            s->ops[s->n_ops++] = k->fused[j];
    }
}

static int64_t bytes_at_ones(const cv_type *t)
{
    int64_t n = (int64_t)cv_dtype_size(t->dtype);
    for (int i = 0; i < t->shape.rank; i++)
        if (!t->shape.d[i].sym && !cv_mul_i64(n, t->shape.d[i].n, &n))
            return -1;
    return n;
}

static void put_mono(const cv_kprog *p, cv_sb *sb, const cv_kclass *c, int64_t units)
{
    cv_sb_printf(sb, "%lld", (long long)units);
    for (int i = 0; i < c->degree; i++) {
        if (c->syms[i] < p->n_syms) {
            cv_sb_printf(sb, "*d[%d]", c->syms[i]);
            continue;
        }
        cv_sb_putc(sb, '*');
        cv_kp_sym_c(p, c->syms[i], "d", sb);
    }
}

static int64_t mono_at_ones(const cv_kprog *p, const cv_kclass *c, const int64_t *ext)
{
    int64_t v = 1;
    for (int i = 0; ext && i < c->degree; i++)
        v *= ext[c->syms[i]];
    return v;
}

/* An arena storage's byte offset: at every symbolic dim = 1, and as an
 * expression over the symbolic dims d[] (the classes are laid end to end). */
static void arena_offset(cv_symmap *m, const cv_kprog *p, const cv_kstore *s, cv_sym_tensor *t)
{
    cv_sb sb = CV_SB_INIT;
    int64_t at_ones = 0;
    int64_t *ext = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *ext);
    if (ext && cv_kp_sym_values(p, NULL, ext)) {
        free(ext);
        ext = NULL;
    }
    for (int c = 0; c < s->cls && c < p->n_classes; c++) {
        at_ones += p->classes[c].units * mono_at_ones(p, &p->classes[c], ext);
        put_mono(p, &sb, &p->classes[c], p->classes[c].units);
        cv_sb_puts(&sb, " + ");
    }
    if (s->cls >= 0 && s->cls < p->n_classes) {
        put_mono(p, &sb, &p->classes[s->cls], s->offset);
        at_ones += s->offset * mono_at_ones(p, &p->classes[s->cls], ext);
    }
    t->offset = at_ones;
    t->offset_expr = cv_symmap_str(m, cv_sb_str(&sb));
    cv_sb_free(&sb);
    free(ext);
}

static const char *storage_name(cv_kstore_kind k)
{
    switch (k) {
    case CV_KST_INPUT: return "input";
    case CV_KST_OUTPUT: return "output";
    case CV_KST_CONST: return "const";
    case CV_KST_ARENA: return "arena";
    case CV_KST_VIEW: return "view";
    }
    return "?";
}

static int count_results(const cv_func *f)
{
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += f->ops[i]->n_results;
    return n;
}

/* Per op, whether its result runs on inside its kernel (a fusion chain's
 * producer or middle) and so never reaches memory: the first kernel naming
 * the op decides.  One pass over the kernels (asking each op in turn
 * scanned them all: 100,000 ops took 5 s here).  NULL when memory runs out. */
static signed char *ops_running_on(const cv_kprog *p)
{
    signed char *on = malloc((size_t)p->f->n_ops + 1);   /* -1 unknown, 0, 1 */
    if (!on)
        return NULL;
    memset(on, -1, (size_t)p->f->n_ops + 1);
    for (int i = 0; i < p->n_kernels; i++) {
        const cv_kernel *k = p->kernels[i];
        if (k->op >= 0 && k->op < p->f->n_ops && on[k->op] < 0)
            on[k->op] = k->n_fused > 0;
        for (int j = 0; j + 1 < k->n_fused; j++)
            if (k->fused[j] >= 0 && k->fused[j] < p->f->n_ops && on[k->fused[j]] < 0)
                on[k->fused[j]] = 1;
    }
    return on;
}

static int fill_tensors(cv_symmap *m, const cv_kprog *p)
{
    const cv_func *f = p->f;
    signed char *on = ops_running_on(p);   /* owned */
    if (!on)
        return -1;
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        for (int r = 0; r < f->ops[i]->n_results; r++) {
            const cv_value *v = f->ops[i]->results[r];
            cv_sym_tensor *t = &m->tensors[n++];
            char shape[256];
            cv_type_format(&v->type, shape, sizeof shape);
            const char *br = strchr(shape, '[');
            t->value = cv_symmap_str(m, v->name);
            t->op = i;
            t->dtype = cv_symmap_str(m, cv_dtype_name(v->type.dtype));
            t->shape = cv_symmap_str(m, br ? br : "[]");
            t->bytes = bytes_at_ones(&v->type);
            t->offset = -1;
            int s = on[i] > 0 ? -1 : p->value_store[v->id];
            t->storage = s < 0 ? "fused" : storage_name(p->stores[s].kind);
            if (s >= 0 && p->stores[s].kind == CV_KST_ARENA)
                arena_offset(m, p, &p->stores[s], t);
        }
    free(on);
    return 0;
}

char *cv_debug_symmap_json(const cv_kprog *p, bool locs, const char *fingerprint,
                           const char *library, const void *so, size_t so_len,
                           const char *listing)
{
    cv_symmap m;
    cv_symmap_init(&m);
    char *json = NULL;
    if (cv_symmap_alloc(&m, p->f->n_ops, p->n_kernels, count_results(p->f)) == 0) {
        m.model = cv_symmap_str(&m, p->name);
        m.fingerprint = cv_symmap_str(&m, fingerprint);
        m.library = cv_symmap_str(&m, library);
        m.listing = cv_symmap_str(&m, listing);
        m.locs = locs;
        fill_ops(&m, p, locs, listing);
        fill_kernels(&m, p);
        if (fill_tensors(&m, p) == 0) {
            if (so)
                cv_symmap_elf_ranges(&m, so, so_len);
            json = cv_symmap_to_json(&m);
        }
    }
    cv_symmap_free(&m);
    return json;
}
