/* Shapes and types: equality, element counts, formatting. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

bool cv_dim_equal(cv_dim a, cv_dim b)
{
    if (a.sym || b.sym)
        return a.sym && b.sym && a.n == b.n && strcmp(a.sym, b.sym) == 0;
    return a.n == b.n;
}

bool cv_shape_equal(const cv_shape *a, const cv_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!cv_dim_equal(a->d[i], b->d[i]))
            return false;
    return true;
}

bool cv_type_equal(const cv_type *a, const cv_type *b)
{
    return a->dtype == b->dtype && cv_shape_equal(&a->shape, &b->shape);
}

bool cv_type_known(const cv_type *t) { return t->dtype != CV_DT_INVALID; }

bool cv_shape_is_static(const cv_shape *s)
{
    for (int i = 0; i < s->rank; i++)
        if (s->d[i].sym)
            return false;
    return true;
}

bool cv_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int64_t cv_shape_numel(const cv_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i].sym || s->d[i].n < 0 || !cv_mul_i64(n, s->d[i].n, &n))
            return -1;
    }
    return n;
}

void cv_type_format(const cv_type *t, char *buf, size_t size)
{
    if (!size)
        return;
    size_t len = (size_t)snprintf(buf, size, "%s[", cv_dtype_name(t->dtype));
    for (int i = 0; i < t->shape.rank && len < size; i++) {
        const cv_dim *d = &t->shape.d[i];
        char one[160];
        cv_dim_format(*d, one, sizeof one);
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "", one);
    }
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

const char *cv_attr_kind_name(cv_attr_kind k)
{
    static const char *names[] = {"none", "int", "float", "string", "int list", "float list",
                                  "dtype", "dim list"};
    return (k >= CV_ATTR_NONE && k <= CV_ATTR_DIMS) ? names[k] : "?";
}
