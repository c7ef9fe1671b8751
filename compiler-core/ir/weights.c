/* Binding weights(...) params to tensors in safetensors files.  Files are
 * found relative to the model's directory and may not leave it; each file is
 * mapped once and stays mapped for the module's lifetime (no copy). */
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/safetensors.h"
#include "compiler-core/ir/ir.h"

static void release_st(void *p) { cv_safetensors_close(p); }

typedef struct open_file {
    const char *name;
    cv_safetensors *st;     /* owned by the module once opened */
} open_file;

static cv_safetensors *open_once(cv_module *m, open_file *files, int *n, const char *base,
                                 const cv_param *p, cv_diag *d)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(files[i].name, p->file) == 0)
            return files[i].st;
    char *path = NULL;
    cv_safetensors *st = NULL;
    cv_span sp = p->span.line ? p->span : (cv_span){.file = m->path};
    int before = d->n_errors;
    if (cv_fs_resolve_inside(base, p->file, &path, d) == 0 &&
        cv_safetensors_open(path, &st, d) == 0 && cv_module_own(m, release_st, st) == 0) {
        files[*n].name = p->file;
        files[(*n)++].st = st;
    } else {
        /* Remember the failure: later params of the same file stay silent. */
        st = NULL;
        files[*n].name = p->file;
        files[(*n)++].st = NULL;
        int id = cv_diag_error(d, CV_E_WEIGHTS_MISSING, sp, "cannot read weights file \"%s\" of param %%%s",
                               p->file, p->value->name);
        for (int i = before; i < d->n && id; i++)
            if (d->v[i].id != id)
                cv_diag_set_root(d, id, d->v[i].id);  /* the file error is the root */
    }
    free(path);
    return st;
}

static int bind(cv_param *p, const cv_safetensors *st, cv_module *m, cv_diag *d)
{
    cv_span sp = p->span.line ? p->span : (cv_span){.file = m->path};
    const cv_st_tensor *t = cv_safetensors_find(st, p->key);
    if (!t)
        return cv_diag_fail(d, CV_E_WEIGHTS_MISSING, sp, "weights file \"%s\" has no tensor \"%s\" (param %%%s)",
                            p->file, p->key, p->value->name);
    const cv_type *ty = &p->value->type;
    bool same = t->dtype == ty->dtype && t->rank == ty->shape.rank;
    for (int i = 0; same && i < t->rank; i++)
        same = !ty->shape.d[i].sym && ty->shape.d[i].n == t->dims[i];
    if (!same) {
        cv_type got = {.dtype = t->dtype, .shape.rank = t->rank};
        for (int i = 0; i < t->rank && i < CV_MAX_RANK; i++)
            got.shape.d[i].n = t->dims[i];
        char want_s[160], got_s[160];
        cv_type_format(ty, want_s, sizeof want_s);
        cv_type_format(&got, got_s, sizeof got_s);
        return cv_diag_fail(d, CV_E_WEIGHTS_MISMATCH, sp, "tensor \"%s\" in \"%s\" is %s but param %%%s is %s",
                            p->key, p->file, got_s, p->value->name, want_s);
    }
    p->data = (void *)t->data;  /* read-only mapping: never written through */
    p->nbytes = t->nbytes;
    return 0;
}

int cv_module_load_weights(cv_module *m, const char *base_dir, cv_diag *d)
{
    int rc = 0;
    for (int fi = 0; fi < m->n_funcs; fi++) {
        cv_func *f = m->funcs[fi];
        open_file *files = calloc((size_t)f->n_params + 1, sizeof *files);
        int n_files = 0;
        if (!files)
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = m->path}, "out of memory");
        for (int i = 0; i < f->n_params; i++) {
            cv_param *p = f->params[i];
            if (p->kind != CV_PARAM_WEIGHTS || p->data)
                continue;
            cv_safetensors *st = open_once(m, files, &n_files, base_dir, p, d);
            if (!st || bind(p, st, m, d))
                rc = -1;
        }
        free(files);
    }
    return rc;
}
