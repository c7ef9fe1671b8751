/* cuvil diff --against onnxruntime: ONNX Runtime as the reference, through
 * its C library (libonnxruntime.so.1 from the npm package onnxruntime-node,
 * or $CUVIL_ONNXRUNTIME), loaded with dlopen: nothing is linked against it.
 *
 * ONNX Runtime returns graph outputs only, so the model is rewritten first:
 * every node's first output becomes a graph output (no type given: ONNX
 * Runtime infers it), and graph optimisations are off so that each one is
 * the value of its own node.  Tensors are named by node label (the node's
 * name, else "op#<index>", as the ONNX front end labels its ops' locs).
 *
 * The C API is a table of function pointers (OrtApi) whose first entries
 * are frozen since version 1 ("DO NOT MODIFY ABOVE" in onnxruntime_c_api.h);
 * only those are used, by index, so no ONNX Runtime header is needed. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler-core/diff/diff.h"
#include "common/fs.h"
#include "onnx/onnx.pb-c.h"

typedef struct OrtStatus OrtStatus;
typedef void *ort_obj;

/* Indices in OrtApi (version 1 block). */
enum {
    ORT_GET_ERROR_MESSAGE = 2, ORT_CREATE_ENV = 3, ORT_CREATE_SESSION_FROM_ARRAY = 8, ORT_RUN = 9,
    ORT_CREATE_SESSION_OPTIONS = 10, ORT_SET_GRAPH_OPT_LEVEL = 23, ORT_SET_INTRA_THREADS = 24,
    ORT_SESSION_INPUT_COUNT = 30, ORT_SESSION_OUTPUT_COUNT = 31, ORT_SESSION_INPUT_NAME = 36,
    ORT_SESSION_OUTPUT_NAME = 37, ORT_CREATE_TENSOR_WITH_DATA = 49, ORT_TENSOR_DATA = 51,
    ORT_ELEMENT_TYPE = 60, ORT_DIMS_COUNT = 61, ORT_DIMS = 62, ORT_TYPE_AND_SHAPE = 65,
    ORT_CREATE_CPU_MEMORY_INFO = 69, ORT_ALLOCATOR_FREE = 76, ORT_DEFAULT_ALLOCATOR = 78,
    ORT_RELEASE_ENV = 92, ORT_RELEASE_STATUS = 93, ORT_RELEASE_MEMORY_INFO = 94,
    ORT_RELEASE_SESSION = 95, ORT_RELEASE_VALUE = 96, ORT_RELEASE_SHAPE_INFO = 99,
    ORT_RELEASE_SESSION_OPTIONS = 100,
    ORT_API_VERSION = 20,           /* 1.20 */
};

typedef struct ort {
    void *lib;
    void *const *api;
    ort_obj env, opts, session, meminfo, alloc;
    char err[512];
} ort;

typedef struct ort_base {
    const void *(*get_api)(uint32_t version);
    const char *(*version)(void);
} ort_base;

#define ORT_FN(o, idx, type) ((type)(o)->api[idx])

/* 0, or -1 with the status's message in o->err (the status released). */
static int check(ort *o, OrtStatus *st, const char *what)
{
    if (!st)
        return 0;
    const char *msg = ORT_FN(o, ORT_GET_ERROR_MESSAGE, const char *(*)(const OrtStatus *))(st);
    snprintf(o->err, sizeof o->err, "%s: %s", what, msg ? msg : "?");
    ORT_FN(o, ORT_RELEASE_STATUS, void (*)(OrtStatus *))(st);
    return -1;
}

static void *open_library(char *err, size_t size)
{
    static const char rel[] = "node_modules/onnxruntime-node/bin/napi-v3/linux/x64/libonnxruntime.so.1";
    const char *env = getenv("CUVIL_ONNXRUNTIME");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    /* The working directory, then the checkout a build directory sits in. */
    char exe[PATH_MAX], path[PATH_MAX + 128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    const char *const tries[] = {".", "..", "../..", "../../.."};
    void *h = dlopen(rel, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !h && n > 0 && i < sizeof tries / sizeof tries[0]; i++) {
        snprintf(path, sizeof path, "%s/%s/%s", exe, tries[i], rel);
        if (access(path, R_OK) == 0)
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
        snprintf(err, size, "libonnxruntime.so.1 not found (npm install --ignore-scripts "
                 "onnxruntime-node@1.20.1, or set CUVIL_ONNXRUNTIME)");
    return h;
}

static int ort_open(ort *o)
{
    if (!(o->lib = open_library(o->err, sizeof o->err)))
        return -1;
    const ort_base *(*get_base)(void) = (const ort_base *(*)(void))dlsym(o->lib, "OrtGetApiBase");
    const ort_base *base = get_base ? get_base() : NULL;
    o->api = base ? base->get_api(ORT_API_VERSION) : NULL;
    if (!o->api) {
        snprintf(o->err, sizeof o->err, "this ONNX Runtime (%s) has no C API version %d",
                 base ? base->version() : "?", ORT_API_VERSION);
        return -1;
    }
    return check(o, ORT_FN(o, ORT_CREATE_ENV, OrtStatus *(*)(int, const char *, ort_obj *))(
                        3 /* errors only */, "cuvil-diff", &o->env), "CreateEnv") ||
           check(o, ORT_FN(o, ORT_CREATE_SESSION_OPTIONS, OrtStatus *(*)(ort_obj *))(&o->opts),
                 "CreateSessionOptions") ||
           check(o, ORT_FN(o, ORT_SET_INTRA_THREADS, OrtStatus *(*)(ort_obj, int))(o->opts, 1),
                 "SetIntraOpNumThreads") ||
           check(o, ORT_FN(o, ORT_SET_GRAPH_OPT_LEVEL, OrtStatus *(*)(ort_obj, int))(o->opts, 0),
                 "SetSessionGraphOptimizationLevel") ||
           check(o, ORT_FN(o, ORT_CREATE_CPU_MEMORY_INFO, OrtStatus *(*)(int, int, ort_obj *))(
                        0 /* device allocator */, 0 /* default memory */, &o->meminfo),
                 "CreateCpuMemoryInfo") ||
           check(o, ORT_FN(o, ORT_DEFAULT_ALLOCATOR, OrtStatus *(*)(ort_obj *))(&o->alloc),
                 "GetAllocatorWithDefaultOptions")
               ? -1 : 0;
}

static void ort_close(ort *o)
{
    if (o->api) {
        if (o->session)
            ORT_FN(o, ORT_RELEASE_SESSION, void (*)(ort_obj))(o->session);
        if (o->meminfo)
            ORT_FN(o, ORT_RELEASE_MEMORY_INFO, void (*)(ort_obj))(o->meminfo);
        if (o->opts)
            ORT_FN(o, ORT_RELEASE_SESSION_OPTIONS, void (*)(ort_obj))(o->opts);
        if (o->env)
            ORT_FN(o, ORT_RELEASE_ENV, void (*)(ort_obj))(o->env);
    }
    /* The library stays loaded: its threads may outlive the release calls. */
}

/* ---- the model with every node output a graph output ------------------------ */

static void node_label(const Onnx__NodeProto *n, size_t i, char *buf, size_t size)
{
    if (n->name && n->name[0])
        snprintf(buf, size, "%s", n->name);
    else
        snprintf(buf, size, "op#%zu", i);
}

static bool is_output(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strcmp(g->output[i]->name, name) == 0)
            return true;
    return false;
}

/* The rewritten model (malloc'd) in *bytes. */
static int expose_outputs(const char *path, void **bytes, size_t *len, char *err, size_t esize)
{
    char *text = NULL;
    size_t n = 0;
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_fs_read_file(path, (size_t)2 << 30, &text, &n, &quiet);
    cv_diag_free(&quiet);
    Onnx__ModelProto *mp = rc ? NULL : onnx__model_proto__unpack(NULL, n, (const uint8_t *)text);
    free(text);
    Onnx__GraphProto *g = mp ? mp->graph : NULL;
    if (!g) {
        snprintf(err, esize, "%s is not an ONNX model", path);
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return -1;
    }
    size_t old_n = g->n_output, k = old_n;
    Onnx__ValueInfoProto **old = g->output;
    Onnx__ValueInfoProto **outs = calloc(old_n + g->n_node + 1, sizeof *outs);    /* owned */
    Onnx__ValueInfoProto *extra = calloc(g->n_node + 1, sizeof *extra);         /* owned */
    if (outs && extra) {
        memcpy(outs, old, sizeof *outs * old_n);
        for (size_t i = 0; i < g->n_node; i++) {
            const Onnx__NodeProto *nd = g->node[i];
            if (nd->n_output < 1 || !nd->output[0][0] || is_output(g, nd->output[0]))
                continue;
            onnx__value_info_proto__init(&extra[i]);
            extra[i].name = nd->output[0];
            outs[k++] = &extra[i];
        }
        g->output = outs;
        g->n_output = k;
        *len = onnx__model_proto__get_packed_size(mp);
        *bytes = malloc(*len ? *len : 1);
        if (*bytes)
            onnx__model_proto__pack(mp, *bytes);
        g->output = old;        /* what free_unpacked knows */
        g->n_output = old_n;
    }
    free(outs);
    free(extra);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (!outs || !extra || !*bytes) {
        snprintf(err, esize, "out of memory");
        return -1;
    }
    return 0;
}

/* Node label of each tensor name that is some node's first output. */
static const char *label_of(const Onnx__GraphProto *g, const char *tensor, char *buf, size_t size)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i]->n_output >= 1 && strcmp(g->node[i]->output[0], tensor) == 0) {
            node_label(g->node[i], i, buf, size);
            return buf;
        }
    return NULL;
}

/* ---- running it ------------------------------------------------------------------ */

static int elem_type(cv_dtype dt)
{
    switch (dt) {
    case CV_F32: return 1;
    case CV_U8: return 2;
    case CV_I8: return 3;
    case CV_I32: return 6;
    case CV_I64: return 7;
    case CV_BOOL: return 9;
    case CV_F16: return 10;
    case CV_BF16: return 16;
    case CV_U16: return 4;
    case CV_I16: return 5;
    case CV_F64: return 11;
    case CV_U32: return 12;
    case CV_U64: return 13;
    default: return -1;
    }
}

static int cv_type_of(int et)
{
    static const cv_dtype all[] = {CV_F32, CV_U8, CV_I8, CV_I32, CV_I64, CV_BOOL, CV_F16, CV_BF16,
                                   CV_U16, CV_I16, CV_F64, CV_U32, CV_U64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (elem_type(all[i]) == et)
            return (int)all[i];
    return -1;
}

static char *name_at(ort *o, size_t i, bool input)
{
    char *name = NULL;
    OrtStatus *st = ORT_FN(o, input ? ORT_SESSION_INPUT_NAME : ORT_SESSION_OUTPUT_NAME,
                           OrtStatus *(*)(ort_obj, size_t, ort_obj, char **))(o->session, i,
                                                                              o->alloc, &name);
    if (check(o, st, "SessionGetName"))
        return NULL;
    char *copy = strdup(name);
    ORT_FN(o, ORT_ALLOCATOR_FREE, OrtStatus *(*)(ort_obj, void *))(o->alloc, name);
    return copy;
}

/* Copies an ONNX Runtime tensor into t (allocated); -1 for types cuvil lacks. */
static int take_tensor(ort *o, ort_obj v, cv_tensor *t)
{
    ort_obj info = NULL;
    int et = 0;
    size_t rank = 0;
    int64_t dims[CV_MAX_RANK];
    void *data = NULL;
    if (check(o, ORT_FN(o, ORT_TYPE_AND_SHAPE, OrtStatus *(*)(ort_obj, ort_obj *))(v, &info),
              "GetTensorTypeAndShape"))
        return -1;
    int rc = check(o, ORT_FN(o, ORT_ELEMENT_TYPE, OrtStatus *(*)(ort_obj, int *))(info, &et), "type") ||
             check(o, ORT_FN(o, ORT_DIMS_COUNT, OrtStatus *(*)(ort_obj, size_t *))(info, &rank), "rank")
                 ? -1 : 0;
    if (rc == 0 && (rank > CV_MAX_RANK || cv_type_of(et) < 0))
        rc = -1;
    if (rc == 0)
        rc = check(o, ORT_FN(o, ORT_DIMS, OrtStatus *(*)(ort_obj, int64_t *, size_t))(info, dims, rank),
                   "GetDimensions");
    ORT_FN(o, ORT_RELEASE_SHAPE_INFO, void (*)(ort_obj))(info);
    if (rc == 0)
        rc = check(o, ORT_FN(o, ORT_TENSOR_DATA, OrtStatus *(*)(ort_obj, void **))(v, &data),
                   "GetTensorMutableData");
    if (rc == 0 && cv_tensor_alloc(t, (cv_dtype)cv_type_of(et), (int)rank, dims) == 0) {
        memcpy(t->data, data, cv_tensor_nbytes(t));
        return 0;
    }
    return -1;
}

static int run_session(ort *o, const Onnx__GraphProto *g, const cv_tensor *ins, int n_in,
                       cv_diff_side *s, cv_diag *d)
{
    s->by_node = s->owns_names = true;
    size_t ni = 0, no = 0;
    if (check(o, ORT_FN(o, ORT_SESSION_INPUT_COUNT, OrtStatus *(*)(ort_obj, size_t *))(o->session, &ni),
              "SessionGetInputCount") ||
        check(o, ORT_FN(o, ORT_SESSION_OUTPUT_COUNT, OrtStatus *(*)(ort_obj, size_t *))(o->session, &no),
              "SessionGetOutputCount"))
        return -1;
    if ((int)ni != n_in || no > INT_MAX / 2) {
        snprintf(o->err, sizeof o->err, "ONNX Runtime sees %zu inputs and %zu outputs", ni, no);
        return -1;
    }
    if (cv_diff_side_reserve(s, (int)no, d))
        return -1;
    char **in_names = calloc(ni + 1, sizeof *in_names), **out_names = calloc(no + 1, sizeof *out_names);
    ort_obj *in_vals = calloc(ni + 1, sizeof *in_vals), *out_vals = calloc(no + 1, sizeof *out_vals);
    int rc = in_names && in_vals && out_names && out_vals ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < ni; i++) {
        int et = elem_type(ins[i].dtype);
        rc = (in_names[i] = name_at(o, i, true)) && et > 0 ? 0 : -1;
        if (rc == 0)
            rc = check(o, ORT_FN(o, ORT_CREATE_TENSOR_WITH_DATA,
                                 OrtStatus *(*)(ort_obj, void *, size_t, const int64_t *, size_t,
                                                int, ort_obj *))(
                              o->meminfo, ins[i].data, cv_tensor_nbytes(&ins[i]), ins[i].dims,
                              (size_t)ins[i].rank, et, &in_vals[i]),
                       "CreateTensorWithDataAsOrtValue");
    }
    for (size_t i = 0; rc == 0 && i < no; i++)
        rc = (out_names[i] = name_at(o, i, false)) ? 0 : -1;
    if (rc == 0)
        rc = check(o, ORT_FN(o, ORT_RUN,
                             OrtStatus *(*)(ort_obj, const void *, const char *const *,
                                            const ort_obj *, size_t, const char *const *, size_t,
                                            ort_obj *))(
                          o->session, NULL, (const char *const *)in_names, in_vals, ni,
                          (const char *const *)out_names, no, out_vals),
                   "Run");
    for (size_t i = 0; rc == 0 && i < no; i++) {
        char label[256];
        const char *l = label_of(g, out_names[i], label, sizeof label);
        if (l && take_tensor(o, out_vals[i], &s->t[s->n]) == 0 && (s->name[s->n] = strdup(l)))
            s->n++;
    }
    for (size_t i = 0; i < no && out_vals; i++)
        if (out_vals[i])
            ORT_FN(o, ORT_RELEASE_VALUE, void (*)(ort_obj))(out_vals[i]);
    for (size_t i = 0; i < ni && in_vals && in_names; i++) {
        if (in_vals[i])
            ORT_FN(o, ORT_RELEASE_VALUE, void (*)(ort_obj))(in_vals[i]);
        free(in_names[i]);
    }
    free(in_names);
    free(in_vals);
    for (size_t i = 0; i < no && out_names; i++)
        free(out_names[i]);
    free(out_names);
    free(out_vals);
    return rc;
}

int cv_diff_onnxruntime(const char *model, const cv_tensor *ins, int n_in, cv_diff_side *s,
                        cv_diag *d)
{
    ort o = {0};
    void *bytes = NULL;
    size_t len = 0;
    Onnx__ModelProto *mp = NULL;
    int rc = expose_outputs(model, &bytes, &len, o.err, sizeof o.err);
    if (rc == 0)
        mp = onnx__model_proto__unpack(NULL, len, bytes);
    if (rc == 0 && (!mp || !mp->graph))
        rc = -1;
    if (rc == 0)
        rc = ort_open(&o);
    if (rc == 0)
        rc = check(&o, ORT_FN(&o, ORT_CREATE_SESSION_FROM_ARRAY,
                              OrtStatus *(*)(ort_obj, const void *, size_t, ort_obj, ort_obj *))(
                           o.env, bytes, len, o.opts, &o.session),
                   "CreateSessionFromArray");
    if (rc == 0)
        rc = run_session(&o, mp->graph, ins, n_in, s, d);
    if (rc)
        cv_diag_error(d, CV_E_DIFF_NO_REFERENCE, (cv_span){.file = model}, "ONNX Runtime: %s",
                      o.err[0] ? o.err : "cannot run the model");
    ort_close(&o);
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    free(bytes);
    return rc;
}
