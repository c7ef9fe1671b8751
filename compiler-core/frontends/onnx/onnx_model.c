/* Entry points of the ONNX front end: read and check the ModelProto
 * envelope (size, wire format, IR version, opsets), then import its graph
 * into a fresh CU-IR module. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { ONNX_MIN_OPSET = 7, ONNX_MAX_OPSET = 18 };

static int check_envelope(onnx_ctx *c, const Onnx__ModelProto *mp)
{
    if (!mp->graph)
        return onnx_err(c, CV_E_ONNX_BAD_MODEL, "the model has no graph");
    if (mp->has_ir_version && mp->ir_version < 3)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_OPSET, "IR version %" PRId64 " predates opset imports "
                        "(need >= 3)",
                        mp->ir_version);
    if (mp->n_opset_import == 0)
        return onnx_err(c, CV_E_ONNX_BAD_MODEL, "the model has no opset_import");
    /* Without the default domain every node is in another domain, and the
     * unsupported-op report says so. */
    c->opset = onnx_domain_opset(c, "");
    if (c->opset < 0)
        return 0;
    /* Ops whose semantics have not changed since opsets 1-6 are accepted
     * there (each registry entry records its earliest version). */
    if (c->opset < 1 || c->opset > ONNX_MAX_OPSET)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_OPSET, "opset %" PRId64 " is not supported (%d to %d)", c->opset,
                        ONNX_MIN_OPSET, ONNX_MAX_OPSET);
    return 0;
}

/* protobuf-c leaves absent strings NULL; the importer reads them as "".
 * The replacements are malloc'd, so free_unpacked releases them too. */
static int fill(char **s)
{
    if (!*s && !(*s = strdup("")))
        return -1;
    return 0;
}

static int fill_strings(Onnx__ModelProto *mp)
{
    Onnx__GraphProto *g = mp->graph;
    int rc = 0;
    for (size_t i = 0; i < mp->n_opset_import; i++)
        rc |= fill(&mp->opset_import[i]->domain);
    for (size_t i = 0; g && i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        rc |= fill(&n->name) | fill(&n->op_type) | fill(&n->domain);
        for (size_t k = 0; k < n->n_attribute; k++)
            rc |= fill(&n->attribute[k]->name);
    }
    Onnx__ValueInfoProto **lists[3] = {g ? g->input : NULL, g ? g->output : NULL,
                                       g ? g->value_info : NULL};
    size_t counts[3] = {g ? g->n_input : 0, g ? g->n_output : 0, g ? g->n_value_info : 0};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            rc |= fill(&lists[l][i]->name);
    for (size_t i = 0; g && i < g->n_initializer; i++)
        rc |= fill(&g->initializer[i]->name);
    return rc;
}

/* Graph names exporters write whatever the model is: every PyTorch export
 * is "torch_jit", so they cannot name an artifact (two would collide). */
static const char *const placeholder_names[] = {
    "torch_jit", "torch-jit-export", "main_graph", "tf2onnx", "graph", "Graph", "model",
    "onnx_graph", "sklearn", "ONNX(LinearRegression)",
};

static bool is_placeholder(const char *name)
{
    for (size_t i = 0; i < sizeof placeholder_names / sizeof placeholder_names[0]; i++)
        if (strcmp(name, placeholder_names[i]) == 0)
            return true;
    return false;
}

/* The file's name without its directory and its last extension. */
static const char *path_stem(const char *path, size_t *len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    *len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    return base;
}

/* The function name (the artifact's C name): the graph's name unless it
 * is an exporter's placeholder, else the model file's stem, else "model";
 * as an identifier (anything but [A-Za-z0-9_] becomes '_'). */
static const char *func_name(onnx_ctx *c, const Onnx__GraphProto *g)
{
    const char *s = "model";
    size_t n = 5;
    if (g->name && g->name[0] && !is_placeholder(g->name)) {
        s = g->name;
        n = strlen(s);
    } else if (c->path && strcmp(c->path, "<memory>") != 0) {
        size_t len;
        const char *stem = path_stem(c->path, &len);
        if (len) {
            s = stem;
            n = len;
        }
    }
    n = n < 64 ? n : 64;
    char *id = cv_arena_strndup(c->a, s, n);
    for (size_t i = 0; id && i < n; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
              (id[i] >= '0' && id[i] <= '9') || id[i] == '_'))
            id[i] = '_';
    return id;
}

static int import_model(onnx_ctx *c, const Onnx__ModelProto *mp)
{
    if (check_envelope(c, mp) < 0)
        return -1;
    const Onnx__GraphProto *g = mp->graph;
    c->f = cv_func_new(c->m, func_name(c, g));
    int *order = calloc(g->n_node + 1, sizeof *order);   /* owned */
    if (!c->f || !order) {
        free(order);
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    }
    int rc = onnx_check_graph(c, g, order);
    if (rc == 0)
        rc = onnx_lower_graph(c, g, order);
    /* L <= 64 from a 64-row positional table indexed by range(L): checked
     * before each run instead of reading past the table. */
    if (rc == 0 && cv_func_derive_facts(c->f) < 0)
        rc = onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    free(order);
    return rc;
}

cv_module *cv_onnx_load_mem(const void *buf, size_t len, const char *path, cv_diag *d)
{
    return cv_onnx_load_opts(buf, len, path, NULL, d);
}

/* A mapped model file whose tensors the params of a check-only import
 * borrow; the module releases it. */
typedef struct onnx_file_map {
    void *p;
    size_t len;
} onnx_file_map;

static void unmap_file(void *p)
{
    onnx_file_map *fm = p;
    if (fm->len)
        munmap(fm->p, fm->len);
    free(fm);
}

/* Imports an unpacked model (mp stays the caller's).  fm, when given, is
 * handed to the module (or released on failure). */
static cv_module *import_unpacked(Onnx__ModelProto *mp, const char *path,
                                  const cv_onnx_options *opts, onnx_file_map *fm, cv_diag *d)
{
    const char *file = path ? path : "<memory>";
    int errors_before = d->n_errors;
    if (fill_strings(mp) < 0) {
        if (fm)
            unmap_file(fm);
        onnx_err_at(d, file, "ModelProto", CV_E_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    char *base_dir = path ? cv_fs_dirname(path) : NULL;   /* owned */
    onnx_ctx c = {.d = d, .path = file, .base_dir = base_dir, .model = mp, .opts = opts};
    c.m = cv_module_new(path);
    int rc = c.m ? 0 : onnx_err(&c, CV_E_OUT_OF_MEMORY, "out of memory");
    if (fm && rc == 0 && cv_module_own(c.m, unmap_file, fm) < 0)
        rc = onnx_err(&c, CV_E_OUT_OF_MEMORY, "out of memory");
    else if (fm && rc == 0) {
        c.map = fm->p;
        c.map_len = fm->len;
    } else if (fm) {
        unmap_file(fm);
    }
    if (rc == 0) {
        c.a = &c.m->arena;
        rc = import_model(&c, mp);
    }
    onnx_map_free(&c.vals);
    onnx_map_free(&c.syms);
    onnx_map_free(&c.sym_values);
    onnx_map_free(&c.scalars);
    free(base_dir);
    if (rc < 0 || d->n_errors > errors_before) {
        cv_module_free(c.m);
        return NULL;
    }
    return c.m;
}

static bool size_ok(size_t len, const char *file, cv_diag *d)
{
    if (len <= CV_ONNX_MAX_FILE)
        return true;
    onnx_err_at(d, file, "ModelProto", CV_E_ONNX_TOO_LARGE, "the model is %zu bytes; protobuf "
                "holds at most 2 GB: store the weights as external data", len);
    return false;
}

cv_module *cv_onnx_load_opts(const void *buf, size_t len, const char *path,
                             const cv_onnx_options *opts, cv_diag *d)
{
    const char *file = path ? path : "<memory>";
    if (!size_ok(len, file, d) ||
        onnx_wire_check(buf, len, &onnx__model_proto__descriptor, file, d) < 0)
        return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);  /* owned */
    if (!mp) {
        onnx_err_at(d, file, "ModelProto", CV_E_ONNX_BAD_PROTOBUF, "not a valid ONNX ModelProto");
        return NULL;
    }
    cv_module *m = import_unpacked(mp, path, opts, NULL, d);
    onnx__model_proto__free_unpacked(mp, NULL);
    return m;
}

/* Maps a regular file of at most CV_ONNX_MAX_FILE bytes; NULL otherwise
 * (the caller then reads it the ordinary way, which reports why). */
static onnx_file_map *map_file(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    onnx_file_map *fm = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= CV_ONNX_MAX_FILE && (fm = malloc(sizeof *fm))) {
        fm->len = (size_t)st.st_size;
        fm->p = mmap(NULL, fm->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (fm->p == MAP_FAILED) {
            free(fm);
            fm = NULL;
        }
    }
    close(fd);
    return fm;
}

cv_module *cv_onnx_load_check(const char *path, cv_diag *d)
{
    onnx_file_map *fm = map_file(path);   /* owned until import_unpacked takes it */
    if (!fm)
        return cv_onnx_load(path, d);
    const uint8_t *base = fm->p;
    if (onnx_wire_check(base, fm->len, &onnx__model_proto__descriptor, path, d) < 0) {
        unmap_file(fm);
        return NULL;
    }
    onnx_stripped s;   /* owned */
    Onnx__ModelProto *mp = NULL;   /* owned */
    if (onnx_strip_model(base, fm->len, ONNX_STRIP_MIN_BYTES, &s) == 0) {
        mp = onnx__model_proto__unpack(NULL, s.len, s.buf);
        if (mp && onnx_strip_attach(mp, &s, base) < 0) {
            onnx__model_proto__free_unpacked(mp, NULL);
            mp = NULL;
        }
    }
    if (!mp) {
        /* Not expected after the wire check: the ordinary path decides. */
        onnx_strip_free(&s);
        unmap_file(fm);
        return cv_onnx_load(path, d);
    }
    cv_module *m = import_unpacked(mp, path, NULL, fm, d);
    onnx_strip_detach(mp, &s, base);
    onnx__model_proto__free_unpacked(mp, NULL);
    onnx_strip_free(&s);
    return m;
}

cv_module *cv_onnx_load(const char *path, cv_diag *d)
{
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size > CV_ONNX_MAX_FILE) {
        onnx_err_at(d, path, "ModelProto", CV_E_ONNX_TOO_LARGE, "the model file is %lld bytes; "
                    "protobuf holds at most 2 GB: store the weights as external data",
                    (long long)st.st_size);
        return NULL;
    }
    /* Mapped where it can be: the unpacking copies every tensor anyway, and
     * a read would be one more pass over (and page faults for) the weights. */
    onnx_file_map *fm = map_file(path);   /* owned */
    if (fm) {
        cv_module *m = cv_onnx_load_mem(fm->p, fm->len, path, d);
        unmap_file(fm);
        return m;
    }
    char *buf = NULL;   /* owned */
    size_t len = 0;
    if (cv_fs_read_file(path, CV_ONNX_MAX_FILE, &buf, &len, d) < 0)
        return NULL;
    cv_module *m = cv_onnx_load_mem(buf, len, path, d);
    free(buf);
    return m;
}

bool cv_onnx_matches(const char *path, const char *head, size_t head_len)
{
    (void)head;
    (void)head_len;
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".onnx") == 0;
}
