#include "tests/support/cuirtest.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/tmpdir.h"

char *cv_cuirtest_read(const char *path, size_t *len)
{
    char *buf = cv_tmpdir_read_file(path, len);
    if (!buf) {
        fprintf(stderr, "cannot read %s\n", path);
        abort();
    }
    return buf;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cv_cuirtest_list(const char *sub, char ***paths)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/cuir/%s", cv_tmpdir_src_root(), sub);
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "cannot open corpus %s\n", dir);
        *paths = NULL;
        return 0;
    }
    int n = 0, cap = 16;
    char **v = malloc((size_t)cap * sizeof *v);
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".cuir") != 0)
            continue;
        if (n == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n] = malloc(strlen(dir) + l + 2);
        sprintf(v[n++], "%s/%s", dir, e->d_name);
    }
    closedir(dp);
    qsort(v, (size_t)n, sizeof *v, by_name);
    *paths = v;
    return n;
}

int cv_cuirtest_expect(const char *text, cv_cuirtest_want *w, int max, bool *strict)
{
    *strict = strncmp(text, "# expect-strict:", 16) == 0;
    const char *p = text + (*strict ? 16 : 9);
    if (!*strict && strncmp(text, "# expect:", 9) != 0)
        return -1;
    int n = 0;
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '\n' || !*p)
            break;
        int used = 0;
        if (n == max || sscanf(p, "CV%d %d:%d%n", &w[n].code, &w[n].line, &w[n].col, &used) != 3)
            return -1;
        p += used;
        n++;
    }
    return n;
}

bool cv_cuirtest_match(const char *name, const cv_diag *d, const cv_cuirtest_want *w, int n)
{
    int k = 0;
    bool ok = true;
    for (int i = 0; i < d->n; i++) {
        const cv_diag_entry *e = &d->v[i];
        if (e->sev != CV_SEV_ERROR)
            continue;
        if (k >= n || e->code != w[k].code || e->span.line != w[k].line || e->span.col != w[k].col)
            ok = false;
        k++;
    }
    if (ok && k == n)
        return true;
    fprintf(stderr, "%s: diagnostics differ from the expectation\n  expected:", name);
    for (int i = 0; i < n; i++)
        fprintf(stderr, " CV%04d %d:%d", w[i].code, w[i].line, w[i].col);
    fprintf(stderr, "\n  got:\n");
    cv_diag_print(d, stderr, false);
    return false;
}

cv_module *cv_cuirtest_load(const char *text, size_t len, const char *name, unsigned vflags,
                            cv_diag *d)
{
    cv_module *m = cv_cuir_parse(text, len, name, d);
    if (m)
        cv_verify(m, vflags, d);
    return m;
}

/* ---- structural equality ------------------------------------------------- */

#define DIFF(...) (fprintf(stderr, "modules differ: " __VA_ARGS__), fputc('\n', stderr), false)

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool dbl_eq(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static bool bytes_eq(cv_dtype t, const void *a, const void *b, size_t nbytes)
{
    size_t size = cv_dtype_size(t);
    for (size_t i = 0; size && i < nbytes / size; i++) {
        if (cv_dtype_is_float(t)) {
            if (!dbl_eq(cv_dtype_load(t, a, (int64_t)i), cv_dtype_load(t, b, (int64_t)i)))
                return false;
        } else if (memcmp((const char *)a + i * size, (const char *)b + i * size, size) != 0) {
            return false;
        }
    }
    return true;
}

static bool attr_eq(const cv_attr *a, const cv_attr *b)
{
    if (!str_eq(a->name, b->name) || a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case CV_ATTR_INT: return a->i == b->i;
    case CV_ATTR_FLOAT: return dbl_eq(a->f, b->f);
    case CV_ATTR_STRING: return str_eq(a->s, b->s);
    case CV_ATTR_DTYPE: return a->dt == b->dt;
    case CV_ATTR_INTS: return a->n == 0 || memcmp(a->ints, b->ints, (size_t)a->n * 8) == 0;
    case CV_ATTR_DIMS:
        for (int i = 0; i < a->n; i++)
            if (!cv_dim_equal(a->dims[i], b->dims[i]))
                return false;
        return true;
    case CV_ATTR_FLOATS:
        for (int i = 0; i < a->n; i++)
            if (!dbl_eq(a->floats[i], b->floats[i]))
                return false;
        return true;
    default: return true;
    }
}

static bool vals_eq(cv_value *const *a, cv_value *const *b, int n)
{
    for (int i = 0; i < n; i++)
        if (!a[i] || !b[i] || !str_eq(a[i]->name, b[i]->name))
            return false;
    return true;
}

static bool op_eq(const cv_op *a, const cv_op *b)
{
    if (strcmp(a->name, b->name) != 0 || a->n_operands != b->n_operands ||
        a->n_results != b->n_results || a->n_attrs != b->n_attrs || a->n_locs != b->n_locs)
        return DIFF("op %d: %s vs %s (or counts)", a->id, a->name, b->name);
    if (!vals_eq(a->operands, b->operands, a->n_operands) ||
        !vals_eq(a->results, b->results, a->n_results))
        return DIFF("op %d (%s): operand or result names", a->id, a->name);
    for (int i = 0; i < a->n_results; i++)
        if (!cv_type_equal(&a->results[i]->type, &b->results[i]->type))
            return DIFF("op %d (%s): result %d type", a->id, a->name, i);
    for (int i = 0; i < a->n_attrs; i++)
        if (!attr_eq(&a->attrs[i], &b->attrs[i]))
            return DIFF("op %d (%s): attribute %s", a->id, a->name, a->attrs[i].name);
    for (int i = 0; i < a->n_locs; i++)
        if (!str_eq(a->locs[i].file, b->locs[i].file) || a->locs[i].line != b->locs[i].line ||
            a->locs[i].col != b->locs[i].col)
            return DIFF("op %d (%s): loc %d", a->id, a->name, i);
    return true;
}

static bool param_eq(const cv_param *a, const cv_param *b)
{
    const cv_value *va = a->value, *vb = b->value;
    if (!str_eq(va->name, vb->name) || !cv_type_equal(&va->type, &vb->type) || a->kind != b->kind)
        return DIFF("param %s", va->name);
    if (a->kind == CV_PARAM_WEIGHTS)
        return (str_eq(a->file, b->file) && str_eq(a->key, b->key)) || DIFF("param %s binding", va->name);
    if (a->nbytes != b->nbytes || !bytes_eq(va->type.dtype, a->data, b->data, a->nbytes))
        return DIFF("param %s data", va->name);
    return true;
}

static bool func_eq(const cv_func *a, const cv_func *b)
{
    if (!str_eq(a->name, b->name) || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_params != b->n_params || a->n_ops != b->n_ops || a->n_returns != b->n_returns)
        return DIFF("model @%s vs @%s: counts", a->name, b->name);
    for (int i = 0; i < a->n_inputs; i++)
        if (!str_eq(a->inputs[i]->name, b->inputs[i]->name) ||
            !cv_type_equal(&a->inputs[i]->type, &b->inputs[i]->type))
            return DIFF("@%s input %d", a->name, i);
    for (int i = 0; i < a->n_outputs; i++)
        if (!cv_type_equal(&a->out_types[i], &b->out_types[i]))
            return DIFF("@%s output type %d", a->name, i);
    for (int i = 0; i < a->n_params; i++)
        if (!param_eq(a->params[i], b->params[i]))
            return false;
    for (int i = 0; i < a->n_ops; i++)
        if (!op_eq(a->ops[i], b->ops[i]))
            return false;
    return vals_eq(a->returns, b->returns, a->n_returns) || DIFF("@%s returns", a->name);
}

bool cv_cuirtest_equal(const cv_module *a, const cv_module *b)
{
    if (a->version != b->version || a->n_funcs != b->n_funcs)
        return DIFF("version or model count");
    for (int i = 0; i < a->n_funcs; i++)
        if (!func_eq(a->funcs[i], b->funcs[i]))
            return false;
    return true;
}
