/* Checking an op against its schema and running its shape function. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

cv_span cv_op_span(const cv_op *op)
{
    if (op->span.line > 0)
        return op->span;
    cv_span s = {0};
    if (op->n_locs && op->locs[0].line > 0) {
        s.file = op->locs[0].file;
        s.line = op->locs[0].line;
        s.col = op->locs[0].col;
    } else if (op->func && op->func->module) {
        s.file = op->func->module->path;
    }
    return s;
}

/* Copies s to o, stopping at end (where the caller terminates). */
static char *path_put(char *o, char *end, const char *s)
{
    if (!s)
        s = "(null)";   /* as glibc's printf spells it */
    while (*s && o < end)
        *o++ = *s++;
    return o;
}

/* Every op's path is formatted during verification: no snprintf here, and
 * the same text (and truncation) as "@%s>%%%s=%s[%s]". */
void cv_op_path(const cv_op *op, char *buf, size_t size)
{
    if (!size)
        return;
    const char *res = op->n_results && op->results ? op->results[0]->name : "?";
    const char *node = (op->n_locs && op->locs[0].line == 0) ? op->locs[0].file : NULL;
    char *o = buf, *end = buf + size - 1;
    o = path_put(o, end, "@");
    o = path_put(o, end, op->func ? op->func->name : "?");
    o = path_put(o, end, ">%");
    o = path_put(o, end, res);
    o = path_put(o, end, "=");
    o = path_put(o, end, op->name);
    if (node) {
        o = path_put(o, end, "[");
        o = path_put(o, end, node);
        o = path_put(o, end, "]");
    }
    *o = 0;
}

static bool kind_accepts(cv_attr_kind want, cv_attr_kind got)
{
    if (want == got)
        return true;
    /* An integer literal is a fine float, and a one-element list a fine scalar. */
    return (want == CV_ATTR_FLOAT && got == CV_ATTR_INT) ||
           (want == CV_ATTR_FLOATS && got == CV_ATTR_INTS) ||
           (want == CV_ATTR_DIMS && got == CV_ATTR_INTS);
}

static int check_count(cv_diag *d, cv_span sp, const char *path, int code, const char *what,
                       const char *opname, int n, int lo, int hi)
{
    if (n >= lo && (hi < 0 || n <= hi))
        return 0;
    if (hi < 0)
        cv_diag_add(d, CV_SEV_ERROR, code, sp, path, "%s takes at least %d %s, got %d",
                    opname, lo, what, n);
    else if (lo == hi)
        cv_diag_add(d, CV_SEV_ERROR, code, sp, path, "%s takes %d %s, got %d", opname, lo, what, n);
    else
        cv_diag_add(d, CV_SEV_ERROR, code, sp, path, "%s takes %d to %d %s, got %d",
                    opname, lo, hi, what, n);
    return -1;
}

static int check_attrs(const cv_op *op, const char *path, cv_diag *d)
{
    const cv_op_def *def = op->def;
    int rc = 0;
    for (int i = 0; i < op->n_attrs; i++) {
        const cv_attr *a = &op->attrs[i];
        cv_span sp = a->span.line ? a->span : cv_op_span(op);
        const cv_attr_schema *s = cv_op_def_attr(def, a->name, NULL);
        if (!s) {
            cv_diag_add(d, CV_SEV_ERROR, CV_E_UNKNOWN_ATTRIBUTE, sp, path, "%s has no attribute '%s'",
                        op->name, a->name);
            rc = -1;
        } else if (!kind_accepts(s->kind, a->kind)) {
            cv_diag_add(d, CV_SEV_ERROR, CV_E_ATTRIBUTE_TYPE, sp, path, "attribute '%s' of %s must be %s, got %s",
                        a->name, op->name, cv_attr_kind_name(s->kind), cv_attr_kind_name(a->kind));
            rc = -1;
        }
    }
    for (int i = 0; def->attrs && def->attrs[i].name; i++)
        if (def->attrs[i].required && !cv_op_attr(op, def->attrs[i].name)) {
            cv_diag_add(d, CV_SEV_ERROR, CV_E_MISSING_ATTRIBUTE, cv_op_span(op), path,
                        "%s requires attribute '%s' (%s)", op->name, def->attrs[i].name,
                        cv_attr_kind_name(def->attrs[i].kind));
            rc = -1;
        }
    return rc;
}

int cv_op_check_schema(const cv_op *op, int n_results, const char *path, cv_diag *d)
{
    cv_span sp = cv_op_span(op);
    if (!op->def) {
        cv_diag_add(d, CV_SEV_ERROR, CV_E_UNKNOWN_OP, sp, path, "unknown op '%s'", op->name);
        return -1;
    }
    const cv_op_def *def = op->def;
    int rc = check_count(d, sp, path, CV_E_OPERAND_COUNT, "operands", op->name, op->n_operands,
                         def->min_operands, def->max_operands);
    rc |= check_count(d, sp, path, CV_E_RESULT_COUNT, "results", op->name, n_results,
                      def->min_results, def->max_results);
    for (int i = 0; i < op->n_operands; i++)
        if (!op->operands[i]) {
            cv_diag_add(d, CV_SEV_ERROR, CV_E_INTERNAL_ERROR, sp, path, "operand %d of %s is missing", i, op->name);
            rc = -1;
        }
    rc |= check_attrs(op, path, d);
    return rc ? -1 : 0;
}

int cv_infer_error(cv_infer_ctx *c, int code, const char *fmt, ...)
{
    char path[256];
    cv_op_path(c->op, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    int id = cv_diag_vadd(c->diag, CV_SEV_ERROR, code, cv_op_span(c->op), path, fmt, ap);
    va_end(ap);
    if (!c->first_diag)
        c->first_diag = id;
    return -1;
}

int cv_infer_op(const cv_op *op, const cv_type *in, cv_type *out, cv_module *m, cv_diag *d)
{
    return cv_infer_op_bound(op, in, out, m, NULL, NULL, d);
}

int cv_infer_op_bound(const cv_op *op, const cv_type *in, cv_type *out, cv_module *m,
                      cv_dim_lookup look, void *look_ctx, cv_diag *d)
{
    if (!op->def || !op->def->infer)
        return -1;
    cv_infer_ctx c = {
        .op = op, .in = in, .n_in = op->n_operands, .out = out, .n_out = op->n_results,
        .module = m, .diag = d, .look = look, .look_ctx = look_ctx,
    };
    int rc = op->def->infer(&c);
    if (rc == 0) {
        /* A shape function that forgot a result would poison later ops. */
        for (int i = 0; i < op->n_results; i++)
            if (!cv_type_known(&out[i]))
                return cv_infer_error(&c, CV_E_INTERNAL_ERROR, "shape function of %s left result %d unknown",
                                      op->name, i);
    }
    return rc;
}
