/* The symbol-table fingerprint: what a program looks like from outside and
 * the shape of its computation, without attribute values, weights or
 * locations.  Two sources with the same fingerprint differ at most in
 * constants; a comment-only edit keeps it. */
#include "compile/internal.h"

static void put_type(cv_sb *sb, const cv_type *t)
{
    char buf[256];
    cv_type_format(t, buf, sizeof buf);
    cv_sb_puts(sb, buf);
}

static void put_func(cv_sb *sb, const cv_func *f)
{
    cv_sb_printf(sb, "func @%s\n", f->name);
    for (int i = 0; i < f->n_inputs; i++) {
        cv_sb_printf(sb, "in %%%s ", f->inputs[i]->name);
        put_type(sb, &f->inputs[i]->type);
        cv_sb_putc(sb, '\n');
    }
    for (int i = 0; i < f->n_returns; i++) {
        cv_sb_puts(sb, "out ");
        put_type(sb, &f->returns[i]->type);
        cv_sb_putc(sb, '\n');
    }
    for (int i = 0; i < f->n_params; i++) {
        cv_sb_printf(sb, "param %%%s ", f->params[i]->value->name);
        put_type(sb, &f->params[i]->value->type);
        cv_sb_putc(sb, '\n');
    }
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        cv_sb_printf(sb, "op %s(", op->name);
        for (int k = 0; k < op->n_operands; k++) {
            if (k)
                cv_sb_putc(sb, ',');
            put_type(sb, &op->operands[k]->type);
        }
        cv_sb_puts(sb, ") ->");
        for (int k = 0; k < op->n_results; k++) {
            cv_sb_putc(sb, ' ');
            put_type(sb, &op->results[k]->type);
        }
        cv_sb_putc(sb, '\n');
    }
}

void cv_compile_fingerprint(const cv_module *m, cv_digest *out)
{
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "cuvil-symtab/1\n");
    for (int i = 0; i < m->n_funcs; i++)
        put_func(&sb, m->funcs[i]);
    cv_cache_sha256(cv_sb_str(&sb), sb.len, out);
    cv_sb_free(&sb);
}
