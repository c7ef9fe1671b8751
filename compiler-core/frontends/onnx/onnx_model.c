/* Entry points of the ONNX front end: read and check the ModelProto
 * envelope (size, wire format, IR version, opsets), then import its graph
 * into a fresh CU-IR module. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { ONNX_MIN_OPSET = 7, ONNX_MAX_OPSET = 18 };

static int check_envelope(onnx_ctx *c, const Onnx__ModelProto *mp)
{
    if (!mp->graph)
        return onnx_err(c, ONNX_E_BAD_MODEL, "the model has no graph");
    if (mp->has_ir_version && mp->ir_version < 3)
        return onnx_err(c, ONNX_E_OPSET, "IR version %" PRId64 " predates opset imports "
                        "(need >= 3)",
                        mp->ir_version);
    if (mp->n_opset_import == 0)
        return onnx_err(c, ONNX_E_BAD_MODEL, "the model has no opset_import");
    /* Without the default domain every node is in another domain, and the
     * unsupported-op report says so. */
    c->opset = onnx_domain_opset(c, "");
    if (c->opset < 0)
        return 0;
    /* Ops whose semantics have not changed since opsets 1-6 are accepted
     * there (each registry entry records its earliest version). */
    if (c->opset < 1 || c->opset > ONNX_MAX_OPSET)
        return onnx_err(c, ONNX_E_OPSET, "opset %" PRId64 " is not supported (%d to %d)", c->opset,
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

/* The function name: the graph's name as an identifier, or "model". */
static const char *func_name(onnx_ctx *c, const Onnx__GraphProto *g)
{
    const char *s = g->name && g->name[0] ? g->name : "model";
    size_t n = strlen(s) < 64 ? strlen(s) : 64;
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
        return onnx_err(c, 9002, "out of memory");
    }
    int rc = onnx_check_graph(c, g, order);
    if (rc == 0)
        rc = onnx_lower_graph(c, g, order);
    free(order);
    return rc;
}

cv_module *cv_onnx_load_mem(const void *buf, size_t len, const char *path, cv_diag *d)
{
    return cv_onnx_load_opts(buf, len, path, NULL, d);
}

cv_module *cv_onnx_load_opts(const void *buf, size_t len, const char *path,
                             const cv_onnx_options *opts, cv_diag *d)
{
    const char *file = path ? path : "<memory>";
    int errors_before = d->n_errors;
    if (len > CV_ONNX_MAX_FILE) {
        onnx_err_at(d, file, "ModelProto", ONNX_E_TOO_LARGE, "the model is %zu bytes; protobuf "
                    "holds at most 2 GB: store the weights as external data", len);
        return NULL;
    }
    if (onnx_wire_check(buf, len, &onnx__model_proto__descriptor, file, d) < 0)
        return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);  /* owned */
    if (!mp) {
        onnx_err_at(d, file, "ModelProto", ONNX_E_BAD_PROTOBUF, "not a valid ONNX ModelProto");
        return NULL;
    }
    if (fill_strings(mp) < 0) {
        onnx__model_proto__free_unpacked(mp, NULL);
        onnx_err_at(d, file, "ModelProto", 9002, "out of memory");
        return NULL;
    }
    char *base_dir = path ? cv_fs_dirname(path) : NULL;   /* owned */
    onnx_ctx c = {.d = d, .path = file, .base_dir = base_dir, .model = mp, .opts = opts};
    c.m = cv_module_new(path);
    int rc = c.m ? 0 : onnx_err(&c, 9002, "out of memory");
    if (rc == 0) {
        c.a = &c.m->arena;
        rc = import_model(&c, mp);
    }
    onnx_map_free(&c.vals);
    onnx_map_free(&c.syms);
    onnx_map_free(&c.scalars);
    free(base_dir);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (rc < 0 || d->n_errors > errors_before) {
        cv_module_free(c.m);
        return NULL;
    }
    return c.m;
}

cv_module *cv_onnx_load(const char *path, cv_diag *d)
{
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size > CV_ONNX_MAX_FILE) {
        onnx_err_at(d, path, "ModelProto", ONNX_E_TOO_LARGE, "the model file is %lld bytes; "
                    "protobuf holds at most 2 GB: store the weights as external data",
                    (long long)st.st_size);
        return NULL;
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
