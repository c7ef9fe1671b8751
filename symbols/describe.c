/* Questions about a symbol map: which kernel holds an address, which
 * kernel runs an op, and how to say where a kernel came from. */
#include <inttypes.h>
#include <string.h>

#include "symbols/symbols.h"

int cv_symmap_find_addr(const cv_symmap *m, uint64_t addr)
{
    for (int k = 0; k < m->n_kernels; k++)
        if (m->kernels[k].hi > m->kernels[k].lo && addr >= m->kernels[k].lo &&
            addr < m->kernels[k].hi)
            return k;
    return -1;
}

int cv_symmap_kernel_of_op(const cv_symmap *m, int op)
{
    for (int k = 0; k < m->n_kernels; k++)
        for (int i = 0; i < m->kernels[k].n_ops; i++)
            if (m->kernels[k].ops[i] == op)
                return k;
    return -1;
}

/* Appends to buf at *at, never past size. */
static void put(char *buf, size_t size, size_t *at, const char *fmt, const char *s, int a, int b)
{
    if (*at >= size)
        return;
    int n = snprintf(buf + *at, size - *at, fmt, s, a, b);
    if (n > 0)
        *at += (size_t)n;
}

void cv_symmap_describe_op(const cv_symmap *m, int op, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    if (op < 0 || op >= m->n_ops)
        return;
    const cv_sym_op *o = &m->ops[op];
    if (o->n_locs == 0) {
        put(buf, size, &at, "%%%s", o->value ? o->value : "?", 0, 0);
        return;
    }
    const cv_sym_loc *l = &o->locs[0];
    if (l->line > 0)
        put(buf, size, &at, "%s:%d:%d", l->file, l->line, l->col);
    else
        put(buf, size, &at, "node %s", l->file, 0, 0);
    if (l->line == 0 && m->listing && o->listing_line > 0)
        put(buf, size, &at, " (%s:%d)", m->listing, o->listing_line, 0);
}

void cv_symmap_describe_kernel(const cv_symmap *m, int k, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    if (k < 0 || k >= m->n_kernels)
        return;
    const cv_sym_kernel *kn = &m->kernels[k];
    put(buf, size, &at, "%s:", kn->name, 0, 0);
    for (int i = 0; i < kn->n_ops; i++)
        put(buf, size, &at, i ? " + %s" : " %s", m->ops[kn->ops[i]].op, 0, 0);
    if (kn->n_ops == 0)
        put(buf, size, &at, " %s", "(output copy)", 0, 0);
    if (kn->n_ops > 0) {
        char where[512];
        cv_symmap_describe_op(m, kn->ops[0], where, sizeof where);
        if (m->ops[kn->ops[0]].n_locs)
            put(buf, size, &at, " at %s", where, 0, 0);
    }
    for (int i = 0; i < kn->n_ops; i++) {
        const char *v = m->ops[kn->ops[i]].value;
        put(buf, size, &at, i ? ", %%%s" : " (%%%s", v ? v : "?", 0, 0);
    }
    if (kn->n_ops)
        put(buf, size, &at, "%s", ")", 0, 0);
}

void cv_symmap_print(const cv_symmap *m, FILE *out)
{
    fprintf(out, "model        %s\n", m->model ? m->model : "?");
    fprintf(out, "fingerprint  %s\n", m->fingerprint ? m->fingerprint : "(unknown)");
    fprintf(out, "library      %s\n", m->library ? m->library : "(none linked)");
    if (m->listing)
        fprintf(out, "listing      %s\n", m->listing);
    if (!m->locs)
        fprintf(out, "locations    not recorded (compile with -g for source lines)\n");
    fprintf(out, "\nkernels (%d)\n", m->n_kernels);
    for (int k = 0; k < m->n_kernels; k++) {
        char line[1024];
        cv_symmap_describe_kernel(m, k, line, sizeof line);
        const cv_sym_kernel *kn = &m->kernels[k];
        if (kn->hi > kn->lo)
            fprintf(out, "  0x%06" PRIx64 "-0x%06" PRIx64 "  %s%s\n", kn->lo, kn->hi, line,
                    kn->parallel ? "  [parallel]" : "");
        else
            fprintf(out, "  %-17s  %s%s\n", "(no code range)", line,
                    kn->parallel ? "  [parallel]" : "");
    }
    fprintf(out, "\ntensors (%d)\n", m->n_tensors);
    for (int i = 0; i < m->n_tensors; i++) {
        const cv_sym_tensor *t = &m->tensors[i];
        char off[64] = "";
        if (t->offset >= 0)
            snprintf(off, sizeof off, "@%" PRId64, t->offset);
        fprintf(out, "  %%%-10s %s%-20s %-6s %-8s bytes %" PRId64 "\n", t->value, t->dtype,
                t->shape, t->storage, off, t->bytes);
    }
}
