/* Loading a compiled artifact into this process: its manifest describes the
 * signature (dtypes, dims, symbols), dlopen gives the API functions. */
#include <dlfcn.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "compiler-core/cuvil.h"

enum { MAX_IO = 64, MAX_SYMS = 64 };

typedef struct io_desc {
    char name[128];
    cv_dtype dtype;
    int rank;
    int64_t dims[CV_MAX_RANK];  /* >= 0, or -1 - symbol index */
} io_desc;

struct cv_native {
    void *dl;                   /* owned: dlclose */
    void *ctx;                  /* owned: destroy */
    int (*run)(void *, const void *const *, void *const *, const int64_t *);
    void (*destroy)(void *);
    void *weights;              /* owned: munmap (--weights-file artifacts) */
    size_t weights_len;
    int n_in, n_out, n_syms;
    io_desc in[MAX_IO], out[MAX_IO];
};

static int bad_manifest(cv_diag *d, const char *dir, const char *what)
{
    return cv_diag_error(d, 5030, (cv_span){.file = dir}, "%s/manifest.json: %s", dir, what), -1;
}

static int parse_io(json_t *arr, io_desc *io, int *n, json_t *syms)
{
    if (!json_is_array(arr) || json_array_size(arr) > MAX_IO)
        return -1;
    *n = (int)json_array_size(arr);
    for (int i = 0; i < *n; i++) {
        json_t *e = json_array_get(arr, (size_t)i), *shape = json_object_get(e, "shape");
        const char *dt = json_string_value(json_object_get(e, "dtype"));
        const char *name = json_string_value(json_object_get(e, "name"));
        snprintf(io[i].name, sizeof io[i].name, "%s", name ? name : "");
        io[i].dtype = dt ? cv_dtype_parse(dt, strlen(dt)) : CV_DT_INVALID;
        if (!io[i].dtype || !json_is_array(shape) || json_array_size(shape) > CV_MAX_RANK)
            return -1;
        io[i].rank = (int)json_array_size(shape);
        for (int k = 0; k < io[i].rank; k++) {
            json_t *dim = json_array_get(shape, (size_t)k);
            io[i].dims[k] = json_is_integer(dim) ? json_integer_value(dim) : -1;
            for (size_t s = 0; json_is_string(dim) && s < json_array_size(syms); s++)
                if (json_equal(dim, json_array_get(syms, s)))
                    io[i].dims[k] = -1 - (int64_t)s;
            if (json_is_integer(dim) && io[i].dims[k] < 0)
                return -1;
        }
    }
    return 0;
}

static int load_symbols(cv_native *n, const char *dir, const char *name, void *(**create)(int),
                        cv_diag *d)
{
    char file[300], fn[300];
    snprintf(file, sizeof file, "lib%s.so", name);
    char *path = cv_fs_join(dir, file);
    n->dl = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    free(path);
    if (!n->dl)
        return cv_diag_error(d, 5031, (cv_span){.file = dir}, "cannot load %s/%s: %s", dir,
                             file, dlerror()), -1;
    snprintf(fn, sizeof fn, "cv_%s_create", name);
    *(void **)create = dlsym(n->dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_run", name);
    *(void **)&n->run = dlsym(n->dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_destroy", name);
    *(void **)&n->destroy = dlsym(n->dl, fn);
    if (!*create || !n->run || !n->destroy)
        return cv_diag_error(d, 5031, (cv_span){.file = dir}, "%s/%s lacks the cv_%s_* API",
                             dir, file, name), -1;
    return 0;
}

/* Why create failed: artifacts that can say (CUDA: no driver, no device...)
 * export cv_<name>_last_error with a diagnostic code and a message. */
static int create_failed(cv_native *n, const char *dir, const char *name, int threads,
                         cv_diag *d)
{
    char fn[300];
    snprintf(fn, sizeof fn, "cv_%s_last_error", name);
    int (*last_error)(const char **) = NULL;
    *(void **)&last_error = dlsym(n->dl, fn);
    const char *msg = NULL;
    int code = last_error ? last_error(&msg) : 0;
    if (code > 0 && code < 10000 && msg)
        return cv_diag_error(d, code, (cv_span){.file = dir}, "cv_%s_create: %s", name, msg), -1;
    return cv_diag_error(d, 9002, (cv_span){.file = dir}, "cv_%s_create(%d) failed", name,
                         threads), -1;
}

/* An artifact built with --weights-file: maps <name>.weights.bin (the size
 * its manifest records) and creates the context on it. */
static void *create_with_weights(cv_native *n, const char *dir, const char *name, json_t *wj,
                                 int threads, cv_diag *d)
{
    const char *file = json_string_value(json_object_get(wj, "file"));
    json_int_t bytes = json_integer_value(json_object_get(wj, "bytes"));
    char fn[300];
    snprintf(fn, sizeof fn, "cv_%s_create_weights", name);
    void *(*create)(int, const void *, int64_t) = NULL;
    *(void **)&create = dlsym(n->dl, fn);
    if (!file || strchr(file, '/') || bytes < 0 || !create)
        return bad_manifest(d, dir, "a weights entry without its file, size or create_weights"),
               NULL;
    char *path = cv_fs_join(dir, file);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || st.st_size != (off_t)bytes) {
        cv_diag_error(d, 5044, (cv_span){.file = dir}, "%s/%s: %s", dir, file,
                      fd < 0 ? "cannot be opened" : "its size is not the one the manifest records");
        if (fd >= 0)
            close(fd);
        free(path);
        return NULL;
    }
    free(path);
    n->weights_len = (size_t)bytes;
    n->weights = bytes ? mmap(NULL, n->weights_len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (n->weights == MAP_FAILED) {
        n->weights = NULL;
        return cv_diag_error(d, 5044, (cv_span){.file = dir}, "%s/%s cannot be mapped", dir,
                             file), NULL;
    }
    void *ctx = create(threads, n->weights, (int64_t)bytes);
    if (!ctx)
        cv_diag_error(d, 9002, (cv_span){.file = dir}, "cv_%s_create_weights(%d) failed", name,
                      threads);
    return ctx;
}

int cv_native_open(const char *dir, int threads, cv_native **out, cv_diag *d)
{
    *out = NULL;
    json_t *m = NULL;
    char *mpath = cv_fs_join(dir, "manifest.json");
    int rc = mpath ? cv_json_read_file(mpath, 64u << 20, &m, d) : -1;
    free(mpath);
    if (rc)
        return -1;
    cv_native *n = calloc(1, sizeof *n);
    void *(*create)(int) = NULL;
    const char *name = json_string_value(json_object_get(m, "name"));
    json_t *syms = json_object_get(m, "symbols");
    rc = -1;
    if (!n)
        cv_diag_error(d, 9002, (cv_span){.file = dir}, "out of memory");
    else if (!name || strlen(name) > 200 || !json_is_array(syms) || json_array_size(syms) > MAX_SYMS ||
             parse_io(json_object_get(m, "inputs"), n->in, &n->n_in, syms) ||
             parse_io(json_object_get(m, "outputs"), n->out, &n->n_out, syms))
        bad_manifest(d, dir, "not a cuvil artifact manifest");
    else if (load_symbols(n, dir, name, &create, d) == 0) {
        n->n_syms = (int)json_array_size(syms);
        json_t *wj = json_object_get(m, "weights");
        n->ctx = wj ? create_with_weights(n, dir, name, wj, threads, d) : create(threads);
        /* create_with_weights has reported why; create says nothing. */
        rc = n->ctx ? 0 : wj ? -1 : create_failed(n, dir, name, threads, d);
    }
    json_decref(m);
    if (rc) {
        cv_native_close(n);
        return -1;
    }
    *out = n;
    return 0;
}

int cv_native_num_inputs(const cv_native *n)
{
    return n->n_in;
}

int cv_native_num_outputs(const cv_native *n)
{
    return n->n_out;
}

static cv_native_io io_of(const io_desc *d)
{
    return (cv_native_io){d->name, d->dtype, d->rank, d->dims};
}

cv_native_io cv_native_input(const cv_native *n, int i)
{
    return io_of(&n->in[i]);
}

cv_native_io cv_native_output(const cv_native *n, int i)
{
    return io_of(&n->out[i]);
}

void cv_native_close(cv_native *n)
{
    if (!n)
        return;
    if (n->ctx)
        n->destroy(n->ctx);
    if (n->weights)
        munmap(n->weights, n->weights_len);
    if (n->dl)
        dlclose(n->dl);
    free(n);
}

static int bind_inputs(const cv_native *n, const cv_tensor *in, int64_t *syms, cv_diag *d)
{
    bool bound[MAX_SYMS] = {false};
    for (int i = 0; i < n->n_in; i++) {
        const io_desc *io = &n->in[i];
        if (in[i].dtype != io->dtype || in[i].rank != io->rank)
            return cv_diag_error(d, 2024, (cv_span){0}, "input %d must be %s of rank %d", i,
                                 cv_dtype_name(io->dtype), io->rank), -1;
        for (int k = 0; k < io->rank; k++) {
            int64_t want = io->dims[k], got = in[i].dims[k];
            int s = (int)(-1 - want);
            if (want >= 0 && want != got)
                return cv_diag_error(d, 3010, (cv_span){0}, "input %d: dim %d must be %lld, got %lld",
                                     i, k, (long long)want, (long long)got), -1;
            if (want < 0 && bound[s] && syms[s] != got)
                return cv_diag_error(d, 3010, (cv_span){0}, "input %d binds a symbol to %lld, "
                                     "another input to %lld", i, (long long)got,
                                     (long long)syms[s]), -1;
            if (want < 0) {
                syms[s] = got;
                bound[s] = true;
            }
        }
    }
    return 0;
}

static int alloc_outputs(const cv_native *n, const int64_t *syms, cv_tensor *out, cv_diag *d)
{
    for (int i = 0; i < n->n_out; i++) {
        const io_desc *io = &n->out[i];
        int64_t dims[CV_MAX_RANK];
        bool same = out[i].data && out[i].dtype == io->dtype && out[i].rank == io->rank;
        for (int k = 0; k < io->rank; k++) {
            dims[k] = io->dims[k] >= 0 ? io->dims[k] : syms[-1 - io->dims[k]];
            same = same && out[i].dims[k] == dims[k];
        }
        if (same)
            continue;
        if (out[i].data)
            cv_tensor_free(&out[i]);
        if (cv_tensor_alloc(&out[i], io->dtype, io->rank, dims))
            return cv_diag_error(d, 9002, (cv_span){0}, "cannot allocate output %d", i), -1;
    }
    return 0;
}

int cv_native_run(cv_native *n, const cv_tensor *inputs, int n_inputs, cv_tensor *outputs,
                  cv_diag *d)
{
    int64_t syms[MAX_SYMS] = {0};
    const void *ins[MAX_IO];
    void *outs[MAX_IO];
    if (n_inputs != n->n_in)
        return cv_diag_error(d, 2024, (cv_span){0}, "the model takes %d inputs, got %d",
                             n->n_in, n_inputs), -1;
    if (bind_inputs(n, inputs, syms, d) || alloc_outputs(n, syms, outputs, d))
        return -1;
    for (int i = 0; i < n->n_in; i++)
        ins[i] = inputs[i].data;
    for (int i = 0; i < n->n_out; i++)
        outs[i] = outputs[i].data;
    int rc = n->run(n->ctx, ins, outs, syms);
    if (rc)
        return cv_diag_error(d, rc == -2 ? 9002 : 3010, (cv_span){0},
                             "the compiled model's run returned %d", rc), -1;
    return 0;
}
