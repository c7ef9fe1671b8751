/* The canonical CU-IR text printer.  Canonical means: one spelling per
 * module, so the text (without locations) can serve as a cache key, and
 * print(parse(text)) == text for any text this printer wrote.  Numbers are
 * spelled by cuir_text.c so that they read back to the same bits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/ir/cuir_text.h"
#include "compiler-core/ir/ir.h"

static void put_quoted(cv_sb *sb, const char *s)
{
    cv_sb_putc(sb, '"');
    cv_sb_put_escaped(sb, s, strlen(s));
    cv_sb_putc(sb, '"');
}

/* %name, @name, or the quoted form for names that need it. */
static void put_name(cv_sb *sb, char sigil, const char *name)
{
    cv_sb_putc(sb, sigil);
    if (!name)
        put_quoted(sb, "?");
    else if (cv_cuir_is_bare_name(name))
        cv_sb_puts(sb, name);
    else
        put_quoted(sb, name);
}

static void put_i64(cv_sb *sb, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    cv_sb_add(sb, buf, (size_t)n);
}

static void put_float(cv_sb *sb, cv_dtype t, double v)
{
    char buf[40];
    cv_cuir_format_float(t, v, buf, sizeof buf);
    cv_sb_puts(sb, buf);
}

/* "[N,3,(L + 1) floordiv 2]": a type's shape or a DIMS attribute. */
static void put_dims(cv_sb *sb, const cv_dim *dims, int n)
{
    cv_sb_putc(sb, '[');
    for (int i = 0; i < n; i++) {
        const cv_dim *d = &dims[i];
        if (i)
            cv_sb_putc(sb, ',');
        if (!d->sym)
            put_i64(sb, d->n);
        else if (cv_dim_is_expr(*d) || cv_cuir_is_ident(d->sym))
            cv_sb_puts(sb, d->sym);
        else
            put_quoted(sb, d->sym);
    }
    cv_sb_putc(sb, ']');
}

static void put_type(cv_sb *sb, const cv_type *t)
{
    cv_sb_puts(sb, cv_dtype_name(t->dtype));
    put_dims(sb, t->shape.d, t->shape.rank);
}

static void put_attr(cv_sb *sb, const cv_attr *a)
{
    cv_sb_puts(sb, a->name);
    cv_sb_putc(sb, '=');
    switch (a->kind) {
    case CV_ATTR_INT: put_i64(sb, a->i); break;
    case CV_ATTR_FLOAT: put_float(sb, CV_F64, a->f); break;
    case CV_ATTR_STRING: put_quoted(sb, a->s ? a->s : ""); break;
    case CV_ATTR_DTYPE: cv_sb_puts(sb, cv_dtype_name(a->dt)); break;
    case CV_ATTR_INTS:
    case CV_ATTR_FLOATS:
        cv_sb_putc(sb, '[');
        for (int i = 0; i < a->n; i++) {
            if (i)
                cv_sb_putc(sb, ',');
            if (a->kind == CV_ATTR_INTS)
                put_i64(sb, a->ints[i]);
            else
                put_float(sb, CV_F64, a->floats[i]);
        }
        cv_sb_putc(sb, ']');
        break;
    case CV_ATTR_DIMS: put_dims(sb, a->dims, a->n); break;
    default: cv_sb_puts(sb, "?"); break;
    }
}

static void put_dense(cv_sb *sb, const cv_param *p)
{
    cv_dtype dt = p->value->type.dtype;
    size_t size = cv_dtype_size(dt);
    size_t n = size ? p->nbytes / size : 0;
    cv_sb_puts(sb, "dense(");
    for (size_t i = 0; i < n; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        if (dt == CV_BOOL)
            cv_sb_puts(sb, ((const unsigned char *)p->data)[i] ? "true" : "false");
        else if (cv_dtype_is_int(dt))
            put_i64(sb, cv_dtype_load_i64(dt, p->data, (int64_t)i));
        else
            put_float(sb, dt, cv_dtype_load(dt, p->data, (int64_t)i));
    }
    cv_sb_putc(sb, ')');
}

static void put_param(cv_sb *sb, const cv_param *p, unsigned flags)
{
    cv_sb_puts(sb, "  param ");
    put_name(sb, '%', p->value->name);
    cv_sb_puts(sb, ": ");
    put_type(sb, &p->value->type);
    cv_sb_puts(sb, " = ");
    if ((flags & CV_PRINT_NO_WEIGHTS) && p->nbytes > CV_INLINE_CONST_MAX) {
        cv_sb_puts(sb, "weights(\"cuvil-weight\", \"\")\n");
        return;
    }
    if (p->kind == CV_PARAM_WEIGHTS) {
        cv_sb_puts(sb, "weights(");
        put_quoted(sb, p->file ? p->file : "");
        cv_sb_puts(sb, ", ");
        put_quoted(sb, p->key ? p->key : "");
        cv_sb_putc(sb, ')');
    } else {
        put_dense(sb, p);
    }
    cv_sb_putc(sb, '\n');
}

static void put_loc(cv_sb *sb, const cv_loc *l)
{
    put_quoted(sb, l->file ? l->file : "");
    if (l->line > 0 || l->col > 0)
        cv_sb_printf(sb, ":%d:%d", l->line, l->col);
}

static void put_locs(cv_sb *sb, const cv_op *op)
{
    if (!op->n_locs)
        return;
    cv_sb_puts(sb, "  loc(");
    if (op->n_locs > 1)
        cv_sb_puts(sb, "fused[");
    for (int i = 0; i < op->n_locs; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        put_loc(sb, &op->locs[i]);
    }
    cv_sb_puts(sb, op->n_locs > 1 ? "])" : ")");
}

static void put_values(cv_sb *sb, cv_value *const *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        put_name(sb, '%', v[i] ? v[i]->name : NULL);
    }
}

static void put_op(cv_sb *sb, const cv_op *op, unsigned flags)
{
    cv_sb_puts(sb, "  ");
    put_values(sb, op->results, op->n_results);
    cv_sb_puts(sb, " = ");
    cv_sb_puts(sb, op->name);
    cv_sb_putc(sb, '(');
    put_values(sb, op->operands, op->n_operands);
    cv_sb_putc(sb, ')');
    if (op->n_attrs) {
        cv_sb_puts(sb, " {");
        for (int i = 0; i < op->n_attrs; i++) {
            if (i)
                cv_sb_puts(sb, ", ");
            put_attr(sb, &op->attrs[i]);
        }
        cv_sb_putc(sb, '}');
    }
    cv_sb_puts(sb, " : ");
    for (int i = 0; i < op->n_results; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        put_type(sb, &op->results[i]->type);
    }
    if (!(flags & CV_PRINT_NO_LOC))
        put_locs(sb, op);
    cv_sb_putc(sb, '\n');
}

static void put_func(cv_sb *sb, const cv_func *f, unsigned flags)
{
    cv_sb_puts(sb, "model ");
    put_name(sb, '@', f->name);
    cv_sb_putc(sb, '(');
    for (int i = 0; i < f->n_inputs; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        put_name(sb, '%', f->inputs[i]->name);
        cv_sb_puts(sb, ": ");
        put_type(sb, &f->inputs[i]->type);
    }
    cv_sb_puts(sb, ") -> (");
    for (int i = 0; i < f->n_outputs; i++) {
        if (i)
            cv_sb_puts(sb, ", ");
        put_type(sb, &f->out_types[i]);
    }
    cv_sb_puts(sb, ") {\n");
    for (int i = 0; i < f->n_params; i++)
        put_param(sb, f->params[i], flags);
    for (int i = 0; i < f->n_ops; i++)
        put_op(sb, f->ops[i], flags);
    cv_sb_puts(sb, "  return");
    if (f->n_returns)
        cv_sb_putc(sb, ' ');
    put_values(sb, f->returns, f->n_returns);
    cv_sb_puts(sb, "\n}\n");
}

char *cv_module_print(const cv_module *m, unsigned flags)
{
    cv_sb sb = CV_SB_INIT;
    cv_sb_printf(&sb, "cuir %d\n", m->version);
    for (int i = 0; i < m->n_facts; i++) {   /* bound L 64 "why" */
        cv_sb_puts(&sb, "bound ");
        if (cv_cuir_is_ident(m->facts[i].sym))
            cv_sb_puts(&sb, m->facts[i].sym);
        else
            put_quoted(&sb, m->facts[i].sym);
        cv_sb_printf(&sb, " %lld ", (long long)m->facts[i].max);
        put_quoted(&sb, m->facts[i].why);
        cv_sb_putc(&sb, '\n');
    }
    for (int i = 0; i < m->n_funcs; i++) {
        if (i)
            cv_sb_putc(&sb, '\n');
        put_func(&sb, m->funcs[i], flags);
    }
    if (sb.oom) {
        cv_sb_free(&sb);
        return NULL;
    }
    return cv_sb_steal(&sb);
}
