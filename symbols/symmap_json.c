/* The .cvsym file: a cv_symmap to JSON and back.  Read back, it is an
 * outside input (it may come from a remote cache): sizes are bounded and
 * every index is checked before use. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "symbols/symbols.h"

enum { MAX_ENTRIES = 1 << 20, MAX_LOCS = 4096, MAX_TEXT = 256 << 20 };

void cv_symmap_init(cv_symmap *m)
{
    memset(m, 0, sizeof *m);
    cv_arena_init(&m->arena);
}

void cv_symmap_free(cv_symmap *m)
{
    cv_arena_free(&m->arena);
    memset(m, 0, sizeof *m);
}

int cv_symmap_alloc(cv_symmap *m, int n_ops, int n_kernels, int n_tensors)
{
    m->ops = cv_arena_alloc_array(&m->arena, (size_t)n_ops + 1, sizeof *m->ops);
    m->kernels = cv_arena_alloc_array(&m->arena, (size_t)n_kernels + 1, sizeof *m->kernels);
    m->tensors = cv_arena_alloc_array(&m->arena, (size_t)n_tensors + 1, sizeof *m->tensors);
    if (!m->ops || !m->kernels || !m->tensors)
        return -1;
    memset(m->ops, 0, sizeof *m->ops * ((size_t)n_ops + 1));
    memset(m->kernels, 0, sizeof *m->kernels * ((size_t)n_kernels + 1));
    memset(m->tensors, 0, sizeof *m->tensors * ((size_t)n_tensors + 1));
    m->n_ops = n_ops;
    m->n_kernels = n_kernels;
    m->n_tensors = n_tensors;
    return 0;
}

const char *cv_symmap_str(cv_symmap *m, const char *s)
{
    return s ? cv_arena_strdup(&m->arena, s) : NULL;
}

/* ---- writing ------------------------------------------------------------- */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *op_json(const cv_sym_op *o)
{
    json_t *locs = json_array();
    for (int i = 0; i < o->n_locs; i++) {
        const cv_sym_loc *l = &o->locs[i];
        json_array_append_new(locs, l->line > 0
                                        ? json_pack("{s:s, s:i, s:i}", "file", l->file, "line",
                                                    l->line, "col", l->col)
                                        : json_pack("{s:s}", "node", l->file));
    }
    json_t *j = json_pack("{s:i, s:s, s:o, s:o, s:o}", "index", o->index, "op", o->op, "value",
                          str_or_null(o->value), "path", str_or_null(o->path), "locs", locs);
    if (o->listing_line > 0)
        json_object_set_new(j, "listing_line", json_integer(o->listing_line));
    return j;
}

static json_t *kernel_json(const cv_sym_kernel *k)
{
    json_t *ops = json_array();
    for (int i = 0; i < k->n_ops; i++)
        json_array_append_new(ops, json_integer(k->ops[i]));
    json_t *j = json_pack("{s:s, s:o, s:b}", "name", k->name, "ops", ops, "parallel", k->parallel);
    if (k->hi > k->lo)
        json_object_set_new(j, "code", json_pack("[I, I]", (json_int_t)k->lo, (json_int_t)k->hi));
    return j;
}

static json_t *tensor_json(const cv_sym_tensor *t)
{
    json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:I}", "value", t->value, "op", t->op,
                          "dtype", t->dtype, "shape", t->shape, "storage", t->storage,
                          "bytes", (json_int_t)t->bytes);
    if (t->offset >= 0)
        json_object_set_new(j, "offset", json_integer(t->offset));
    if (t->offset_expr)
        json_object_set_new(j, "offset_expr", json_string(t->offset_expr));
    return j;
}

char *cv_symmap_to_json(const cv_symmap *m)
{
    json_t *ops = json_array(), *kernels = json_array(), *tensors = json_array();
    for (int i = 0; i < m->n_ops; i++)
        json_array_append_new(ops, op_json(&m->ops[i]));
    for (int i = 0; i < m->n_kernels; i++)
        json_array_append_new(kernels, kernel_json(&m->kernels[i]));
    for (int i = 0; i < m->n_tensors; i++)
        json_array_append_new(tensors, tensor_json(&m->tensors[i]));
    json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o, s:b, s:o, s:o, s:o}", "format",
                          CV_SYMMAP_FORMAT, "model", m->model, "fingerprint",
                          str_or_null(m->fingerprint), "library", str_or_null(m->library),
                          "listing", str_or_null(m->listing), "locs", m->locs, "ops", ops,
                          "kernels", kernels, "tensors", tensors);
    char *s = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    return s;
}

/* ---- reading -------------------------------------------------------------- */

typedef struct reader {
    cv_symmap *m;
    const char *name;
    cv_diag *d;
    const char *bad;            /* the first problem found */
} reader;

static const char *get_str(reader *r, json_t *o, const char *key, bool optional)
{
    json_t *v = json_object_get(o, key);
    if ((!v || json_is_null(v)) && optional)
        return NULL;
    if (!json_is_string(v) || json_string_length(v) > 4096) {
        if (!r->bad)
            r->bad = key;
        return NULL;
    }
    return cv_symmap_str(r->m, json_string_value(v));
}

static int64_t get_int(reader *r, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t dflt)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return dflt;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        if (!r->bad)
            r->bad = key;
        return dflt;
    }
    return json_integer_value(v);
}

static void read_op(reader *r, json_t *j, cv_sym_op *o)
{
    o->index = (int)get_int(r, j, "index", 0, MAX_ENTRIES, 0);
    o->op = get_str(r, j, "op", false);
    o->value = get_str(r, j, "value", true);
    o->path = get_str(r, j, "path", true);
    o->listing_line = (int)get_int(r, j, "listing_line", 0, INT32_MAX, 0);
    json_t *locs = json_object_get(j, "locs");
    size_t n = json_array_size(locs);
    if (!json_is_array(locs) || n > MAX_LOCS) {
        r->bad = r->bad ? r->bad : "locs";
        return;
    }
    o->locs = cv_arena_alloc_array(&r->m->arena, n + 1, sizeof *o->locs);
    if (!o->locs)
        return;
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(locs, i);
        cv_sym_loc *x = &o->locs[o->n_locs++];
        bool node = json_object_get(l, "node") != NULL;
        x->file = get_str(r, l, node ? "node" : "file", false);
        x->line = node ? 0 : (int)get_int(r, l, "line", 1, INT32_MAX, 1);
        x->col = node ? 0 : (int)get_int(r, l, "col", 0, INT32_MAX, 0);
    }
}

static void read_kernel(reader *r, json_t *j, cv_sym_kernel *k)
{
    k->name = get_str(r, j, "name", false);
    k->parallel = json_is_true(json_object_get(j, "parallel"));
    json_t *ops = json_object_get(j, "ops"), *code = json_object_get(j, "code");
    size_t n = json_array_size(ops);
    if (!json_is_array(ops) || n > MAX_LOCS) {
        r->bad = r->bad ? r->bad : "ops";
        return;
    }
    k->ops = cv_arena_alloc_array(&r->m->arena, n + 1, sizeof *k->ops);
    for (size_t i = 0; k->ops && i < n; i++) {
        json_t *v = json_array_get(ops, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= r->m->n_ops) {
            r->bad = r->bad ? r->bad : "kernel ops";
            return;
        }
        k->ops[k->n_ops++] = (int)json_integer_value(v);
    }
    if (code) {
        json_t *lo = json_array_get(code, 0), *hi = json_array_get(code, 1);
        if (json_array_size(code) != 2 || !json_is_integer(lo) || !json_is_integer(hi) ||
            json_integer_value(lo) < 0 || json_integer_value(hi) < json_integer_value(lo)) {
            r->bad = r->bad ? r->bad : "code";
            return;
        }
        k->lo = (uint64_t)json_integer_value(lo);
        k->hi = (uint64_t)json_integer_value(hi);
    }
}

static void read_tensor(reader *r, json_t *j, cv_sym_tensor *t)
{
    t->value = get_str(r, j, "value", false);
    t->op = (int)get_int(r, j, "op", -1, r->m->n_ops - 1, -1);
    t->dtype = get_str(r, j, "dtype", false);
    t->shape = get_str(r, j, "shape", false);
    t->storage = get_str(r, j, "storage", false);
    t->offset = get_int(r, j, "offset", 0, INT64_MAX, -1);
    t->offset_expr = get_str(r, j, "offset_expr", true);
    t->bytes = get_int(r, j, "bytes", 0, INT64_MAX, 0);
}

static int read_map(reader *r, json_t *j)
{
    cv_symmap *m = r->m;
    json_t *ops = json_object_get(j, "ops"), *ks = json_object_get(j, "kernels");
    json_t *ts = json_object_get(j, "tensors");
    const char *fmt = json_string_value(json_object_get(j, "format"));
    if (!fmt || strcmp(fmt, CV_SYMMAP_FORMAT) != 0 || !json_is_array(ops) || !json_is_array(ks) ||
        !json_is_array(ts) || json_array_size(ops) > MAX_ENTRIES ||
        json_array_size(ks) > MAX_ENTRIES || json_array_size(ts) > MAX_ENTRIES) {
        r->bad = "format";
        return -1;
    }
    if (cv_symmap_alloc(m, (int)json_array_size(ops), (int)json_array_size(ks),
                        (int)json_array_size(ts)))
        return -1;
    m->model = get_str(r, j, "model", false);
    m->fingerprint = get_str(r, j, "fingerprint", true);
    m->library = get_str(r, j, "library", true);
    m->listing = get_str(r, j, "listing", true);
    m->locs = json_is_true(json_object_get(j, "locs"));
    for (int i = 0; i < m->n_ops && !r->bad; i++)
        read_op(r, json_array_get(ops, (size_t)i), &m->ops[i]);
    for (int i = 0; i < m->n_kernels && !r->bad; i++)
        read_kernel(r, json_array_get(ks, (size_t)i), &m->kernels[i]);
    for (int i = 0; i < m->n_tensors && !r->bad; i++)
        read_tensor(r, json_array_get(ts, (size_t)i), &m->tensors[i]);
    return r->bad ? -1 : 0;
}

int cv_symmap_parse(const char *text, size_t len, const char *name, cv_symmap *m, cv_diag *d)
{
    cv_symmap_init(m);
    json_t *j = NULL;
    if (cv_json_parse(text, len, name, &j, d))
        return -1;
    reader r = {.m = m, .name = name, .d = d};
    int rc = json_is_object(j) ? read_map(&r, j) : (r.bad = "top level", -1);
    json_decref(j);
    if (rc) {
        cv_diag_error(d, CV_E_SYMBOLS_BAD_MAP, (cv_span){.file = name}, "%s is not a Cuvil symbol map (bad %s)",
                      name, r.bad ? r.bad : "allocation");
        cv_symmap_free(m);
    }
    return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* <dir>/<name>.cvsym, the name from the artifact's manifest (malloc'd). */
static char *map_path(const char *dir, cv_diag *d)
{
    char *mpath = cv_fs_join(dir, "manifest.json"), *path = NULL;
    json_t *man = NULL;
    if (mpath && cv_json_read_file(mpath, 1 << 20, &man, d) == 0) {
        const char *name = json_string_value(json_object_get(man, "name"));
        char file[300];
        if (name && strlen(name) < 256 && !strchr(name, '/')) {
            snprintf(file, sizeof file, "%s.cvsym", name);
            path = cv_fs_join(dir, file);
        } else {
            cv_diag_error(d, CV_E_SYMBOLS_NO_MAP, (cv_span){.file = mpath}, "%s names no artifact", mpath);
        }
    }
    json_decref(man);
    free(mpath);
    return path;
}

int cv_symmap_load(const char *path, cv_symmap *m, cv_diag *d)
{
    cv_symmap_init(m);
    char *file = ends_with(path, ".cvsym") ? strdup(path) : map_path(path, d);
    char *text = NULL;
    size_t len = 0;
    if (!file)
        return -1;
    cv_diag quiet;              /* the read error is restated below */
    cv_diag_init(&quiet);
    int rc = cv_fs_read_file(file, MAX_TEXT, &text, &len, &quiet);
    cv_diag_free(&quiet);
    if (rc)
        cv_diag_error(d, CV_E_SYMBOLS_NO_MAP, (cv_span){.file = file}, "%s has no symbol map (%s); artifacts "
                      "made before symbol maps existed have none: compile again", path, file);
    else
        rc = cv_symmap_parse(text, len, file, m, d);
    free(text);
    free(file);
    return rc;
}
