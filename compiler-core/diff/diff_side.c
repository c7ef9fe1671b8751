/* One side of a diff: named tensors sized from the model. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/diff/diff.h"

int cv_diff_side_reserve(cv_diff_side *s, int n, cv_diag *d)
{
    if (n <= s->cap)
        return 0;
    const char **names = realloc(s->name, sizeof *names * (size_t)n);
    if (names)
        s->name = names;
    cv_tensor *t = names ? realloc(s->t, sizeof *t * (size_t)n) : NULL;
    if (!t)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory (%d tensors)", n);
    s->t = t;
    memset(s->t + s->cap, 0, sizeof *t * (size_t)(n - s->cap));
    memset(s->name + s->cap, 0, sizeof *names * (size_t)(n - s->cap));
    s->cap = n;
    return 0;
}

void cv_diff_side_free(cv_diff_side *s)
{
    for (int i = 0; i < s->n; i++) {
        cv_tensor_free(&s->t[i]);
        if (s->owns_names)
            free((char *)s->name[i]);
    }
    free(s->t);
    free(s->name);
    *s = (cv_diff_side){0};
}
