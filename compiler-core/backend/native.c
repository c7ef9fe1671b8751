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

/* Bounds on what a manifest may ask this process to allocate, far above
 * any model (a -g build of a large network has some thousands of outputs). */
enum { MAX_IO = 1 << 20, MAX_SYMS = 1 << 16 };

typedef struct io_desc {
    char *name;                 /* owned */
    cv_dtype dtype;
    int rank;
    int64_t dims[CV_MAX_RANK];  /* >= 0, or -1 - symbol index */
    char *expr[CV_MAX_RANK];    /* owned: a dim computed from the symbols (dims[k]
                                   is then -1 - n_syms), else NULL */
} io_desc;

struct cv_native {
    void *dl;                   /* owned: dlclose */
    void *ctx;                  /* owned: destroy */
    int (*run)(void *, const void *const *, void *const *, const int64_t *);
    void (*destroy)(void *);
    void (*profile)(void *, uint64_t *, int64_t);   /* NULL: none exported */
    void *weights;              /* owned: munmap (--weights-file artifacts) */
    size_t weights_len;
    int n_in, n_out, n_syms;
    io_desc *in, *out;          /* owned: n_in, n_out entries */
    int64_t *syms;              /* owned: n_syms entries, bound by a run */
    char **sym_names;           /* owned: n_syms entries */
    int64_t *sym_max;           /* owned: n_syms entries, the model's bound or -1 */
    char **sym_why;             /* owned: n_syms entries, what implies it (or NULL) */
    bool *bound;
    const void **ins;           /* owned: the run's pointers */
    void **outs;
};

static int bad_manifest(cv_diag *d, const char *dir, const char *what)
{
    return cv_diag_fail(d, CV_E_BAD_ARTIFACT_MANIFEST, (cv_span){.file = dir}, "%s/manifest.json: %s", dir, what);
}

static int parse_io(json_t *arr, io_desc **iop, int *n, json_t *syms)
{
    if (!json_is_array(arr) || json_array_size(arr) > MAX_IO)
        return -1;
    *n = (int)json_array_size(arr);
    io_desc *io = *iop = calloc((size_t)*n + 1, sizeof *io);
    if (!io)
        return -1;
    for (int i = 0; i < *n; i++) {
        json_t *e = json_array_get(arr, (size_t)i), *shape = json_object_get(e, "shape");
        const char *dt = json_string_value(json_object_get(e, "dtype"));
        const char *name = json_string_value(json_object_get(e, "name"));
        io[i].name = strdup(name ? name : "");
        if (!io[i].name)
            return -1;
        io[i].dtype = dt ? cv_dtype_parse(dt, strlen(dt)) : CV_DT_INVALID;
        if (!io[i].dtype || !json_is_array(shape) || json_array_size(shape) > CV_MAX_RANK)
            return -1;
        io[i].rank = (int)json_array_size(shape);
        for (int k = 0; k < io[i].rank; k++) {
            json_t *dim = json_array_get(shape, (size_t)k);
            io[i].dims[k] = json_is_integer(dim) ? json_integer_value(dim) : -1;
            bool sym = false;
            for (size_t s = 0; json_is_string(dim) && s < json_array_size(syms) && !sym; s++)
                if ((sym = json_equal(dim, json_array_get(syms, s))))
                    io[i].dims[k] = -1 - (int64_t)s;
            if (json_is_integer(dim) && io[i].dims[k] < 0)
                return -1;
            /* An expression over the symbols (P + 1, 2*N + 1). */
            if (json_is_string(dim) && !sym) {
                if (!(io[i].expr[k] = strdup(json_string_value(dim))))
                    return -1;
                io[i].dims[k] = -1 - (int64_t)json_array_size(syms);
            }
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
        return cv_diag_fail(d, CV_E_ARTIFACT_LOAD_FAILED, (cv_span){.file = dir}, "cannot load %s/%s: %s", dir,
                            file, dlerror());
    snprintf(fn, sizeof fn, "cv_%s_create", name);
    *(void **)create = dlsym(n->dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_run", name);
    *(void **)&n->run = dlsym(n->dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_destroy", name);
    *(void **)&n->destroy = dlsym(n->dl, fn);
    snprintf(fn, sizeof fn, "cv_%s_profile", name);
    *(void **)&n->profile = dlsym(n->dl, fn);
    if (!*create || !n->run || !n->destroy)
        return cv_diag_fail(d, CV_E_ARTIFACT_LOAD_FAILED, (cv_span){.file = dir}, "%s/%s lacks the cv_%s_* API",
                            dir, file, name);
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
        return cv_diag_fail(d, code, (cv_span){.file = dir}, "cv_%s_create: %s", name, msg);
    return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = dir}, "cv_%s_create(%d) failed", name,
                        threads);
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
        cv_diag_error(d, CV_E_WEIGHTS_FILE_BAD, (cv_span){.file = dir}, "%s/%s: %s", dir, file,
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
        return cv_diag_error(d, CV_E_WEIGHTS_FILE_BAD, (cv_span){.file = dir}, "%s/%s cannot be mapped", dir,
                             file), NULL;
    }
    void *ctx = create(threads, n->weights, (int64_t)bytes);
    if (!ctx)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = dir}, "cv_%s_create_weights(%d) failed", name,
                      threads);
    return ctx;
}

/* target.requires against this CPU (cpu_check.c), before any of the
 * library's code runs. */
static int check_cpu(json_t *target, const char *dir, cv_diag *d)
{
    json_t *req = json_object_get(target, "requires");
    const char *names[64];
    int k = 0;
    for (size_t i = 0; i < json_array_size(req) && k < 64; i++)
        if (json_is_string(json_array_get(req, i)))
            names[k++] = json_string_value(json_array_get(req, i));
    return cv_cpu_check(json_string_value(json_object_get(target, "name")), names, k, dir, d);
}

static int open_manifest(const char *dir, const char *mpath, int threads, cv_native **out,
                         cv_diag *d);

/* The manifest's "symbol_bounds" ({"L": {"max": 64, "why": "..."}}): the
 * facts the run itself checks (-4); read here to name them (CV3013). */
static void read_bounds(cv_native *n, json_t *bounds)
{
    for (int i = 0; i < n->n_syms; i++) {
        json_t *b = json_object_get(bounds, n->sym_names[i]);
        json_t *max = json_object_get(b, "max");
        const char *why = json_string_value(json_object_get(b, "why"));
        n->sym_max[i] = json_is_integer(max) && json_integer_value(max) >= 0
                            ? (int64_t)json_integer_value(max) : -1;
        n->sym_why[i] = why && n->sym_max[i] >= 0 ? strndup(why, 1024) : NULL;
    }
}

static int run_buffers(cv_native *n, json_t *syms, json_t *bounds)
{
    int n_syms = (int)json_array_size(syms);
    n->n_syms = n_syms;
    n->sym_names = calloc((size_t)n_syms + 1, sizeof *n->sym_names);
    for (int i = 0; n->sym_names && i < n_syms; i++) {
        const char *s = json_string_value(json_array_get(syms, (size_t)i));
        if (!(n->sym_names[i] = strdup(s ? s : "?")))
            return -1;
    }
    n->syms = calloc((size_t)n_syms + 1, sizeof *n->syms);
    n->sym_max = calloc((size_t)n_syms + 1, sizeof *n->sym_max);
    n->sym_why = calloc((size_t)n_syms + 1, sizeof *n->sym_why);
    n->bound = calloc((size_t)n_syms + 1, sizeof *n->bound);
    n->ins = calloc((size_t)n->n_in + 1, sizeof *n->ins);
    n->outs = calloc((size_t)n->n_out + 1, sizeof *n->outs);
    if (!n->sym_names || !n->syms || !n->sym_max || !n->sym_why || !n->bound || !n->ins || !n->outs)
        return -1;
    read_bounds(n, bounds);
    return 0;
}

static void free_io(io_desc *io, int n)
{
    for (int i = 0; io && i < n; i++) {
        free(io[i].name);
        for (int k = 0; k < CV_MAX_RANK; k++)
            free(io[i].expr[k]);
    }
    free(io);
}

int cv_native_open(const char *dir, int threads, cv_native **out, cv_diag *d)
{
    char *mpath = cv_fs_join(dir, "manifest.json");
    int rc = mpath ? open_manifest(dir, mpath, threads, out, d) : -1;
    free(mpath);
    return rc;
}

int cv_native_open_manifest(const char *path, int threads, cv_native **out, cv_diag *d)
{
    char *dir = cv_fs_dirname(path);
    int rc = dir ? open_manifest(dir, path, threads, out, d) : -1;
    free(dir);
    return rc;
}

static int open_manifest(const char *dir, const char *mpath, int threads, cv_native **out,
                         cv_diag *d)
{
    *out = NULL;
    json_t *m = NULL;
    if (cv_json_read_file(mpath, 64u << 20, &m, d))
        return -1;
    int rc;
    cv_native *n = calloc(1, sizeof *n);
    void *(*create)(int) = NULL;
    const char *name = json_string_value(json_object_get(m, "name"));
    json_t *syms = json_object_get(m, "symbols");
    rc = -1;
    if (!n)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = dir}, "out of memory");
    else if (!name || strlen(name) > 200 || !json_is_array(syms) || json_array_size(syms) > MAX_SYMS ||
             parse_io(json_object_get(m, "inputs"), &n->in, &n->n_in, syms) ||
             parse_io(json_object_get(m, "outputs"), &n->out, &n->n_out, syms))
        bad_manifest(d, dir, "not a cuvil artifact manifest");
    else if (run_buffers(n, syms, json_object_get(m, "symbol_bounds")))
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = dir}, "out of memory");
    else if (check_cpu(json_object_get(m, "target"), dir, d) == 0 &&
             load_symbols(n, dir, name, &create, d) == 0) {
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

int cv_native_num_symbols(const cv_native *n)
{
    return n->n_syms;
}

const char *cv_native_symbol_name(const cv_native *n, int k)
{
    return k >= 0 && k < n->n_syms ? n->sym_names[k] : NULL;
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

/* The expression text of io's dim k, or NULL (io comes from in[] or out[]). */
static const char *expr_of(const cv_native *n, cv_native_io io, int k)
{
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i].dims == io.dims)
            return n->out[i].expr[k];
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i].dims == io.dims)
            return n->in[i].expr[k];
    return NULL;
}

void cv_native_io_format(const cv_native *n, cv_native_io io, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s[", cv_dtype_name(io.dtype));
    for (int k = 0; k < io.rank && at < size; k++) {
        int64_t v = io.dims[k];
        const char *expr = expr_of(n, io, k);
        if (expr)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", k ? "," : "", expr);
        else if (v >= 0)
            at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? "," : "", (long long)v);
        else
            at += (size_t)snprintf(buf + at, size - at, "%s%s", k ? "," : "",
                                   -1 - v < n->n_syms ? n->sym_names[-1 - v] : "?");
    }
    if (at < size)
        snprintf(buf + at, size - at, "]");
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
    free_io(n->in, n->n_in);
    free_io(n->out, n->n_out);
    for (int i = 0; n->sym_names && i < n->n_syms; i++)
        free(n->sym_names[i]);
    free(n->sym_names);
    for (int i = 0; n->sym_why && i < n->n_syms; i++)
        free(n->sym_why[i]);
    free(n->sym_why);
    free(n->sym_max);
    free(n->syms);
    free(n->bound);
    free(n->ins);
    free(n->outs);
    free(n);
}

/* "f32[2,5]": what a run was given, for errors. */
static void tensor_format(const cv_tensor *t, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s[", cv_dtype_name(t->dtype));
    for (int k = 0; k < t->rank && at < size; k++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? "," : "",
                               (long long)t->dims[k]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

static int input_error(const cv_native *n, int i, const cv_tensor *got, const char *why,
                       cv_diag *d)
{
    char want[512], have[512];
    cv_native_io_format(n, cv_native_input(n, i), want, sizeof want);
    tensor_format(got, have, sizeof have);
    return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){0}, "input %%%s must be %s, got %s%s",
                        n->in[i].name, want, have, why);
}

typedef struct sym_env {
    const cv_native *n;
    const int64_t *syms;
} sym_env;

static bool look_sym(void *ctx, const char *sym, int64_t *v)
{
    const sym_env *e = ctx;
    for (int i = 0; i < e->n->n_syms; i++)
        if (strcmp(e->n->sym_names[i], sym) == 0) {
            *v = e->syms[i];
            return true;
        }
    return false;
}

/* An input dim that is an expression of the symbols must equal its value
 * once every bare symbol is bound. */
static int check_input_exprs(const cv_native *n, const cv_tensor *in, const int64_t *syms,
                             cv_diag *d)
{
    sym_env env = {n, syms};
    char why[300];
    for (int i = 0; i < n->n_in; i++)
        for (int k = 0; k < n->in[i].rank; k++) {
            const char *e = n->in[i].expr[k];
            int64_t want;
            if (!e)
                continue;
            if (cv_dim_eval((cv_dim){CV_DIM_EXPR, e}, look_sym, &env, &want))
                want = -1;
            if (want != in[i].dims[k]) {
                snprintf(why, sizeof why, " (%s is %lld here)", e, (long long)want);
                return input_error(n, i, &in[i], why, d);
            }
        }
    return 0;
}

static int bind_inputs(const cv_native *n, const cv_tensor *in, int64_t *syms, cv_diag *d)
{
    bool *bound = n->bound;
    memset(bound, 0, (size_t)n->n_syms * sizeof *bound);
    char why[300];
    for (int i = 0; i < n->n_in; i++) {
        const io_desc *io = &n->in[i];
        if (in[i].dtype != io->dtype || in[i].rank != io->rank)
            return input_error(n, i, &in[i], "", d);
        for (int k = 0; k < io->rank; k++) {
            int64_t want = io->dims[k], got = in[i].dims[k];
            int s = (int)(-1 - want);
            if (io->expr[k])
                continue;   /* checked once every symbol is bound */
            if (want >= 0 && want != got)
                return input_error(n, i, &in[i], "", d);
            if (want < 0 && bound[s] && syms[s] != got) {
                snprintf(why, sizeof why, " (%s is %lld in an earlier input)", n->sym_names[s],
                         (long long)syms[s]);
                return input_error(n, i, &in[i], why, d);
            }
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
    sym_env env = {n, syms};
    for (int i = 0; i < n->n_out; i++) {
        const io_desc *io = &n->out[i];
        int64_t dims[CV_MAX_RANK];
        bool same = out[i].data && out[i].dtype == io->dtype && out[i].rank == io->rank;
        for (int k = 0; k < io->rank; k++) {
            dims[k] = io->dims[k] >= 0 ? io->dims[k] : io->expr[k] ? -1 : syms[-1 - io->dims[k]];
            if (io->expr[k] && (cv_dim_eval((cv_dim){CV_DIM_EXPR, io->expr[k]}, look_sym, &env,
                                            &dims[k]) || dims[k] < 0))
                return cv_diag_fail(d, CV_E_RUNTIME_SHAPE, (cv_span){0}, "output %s: dimension %s is %lld "
                                    "at these inputs' dims", io->name, io->expr[k],
                                    (long long)dims[k]);
            same = same && out[i].dims[k] == dims[k];
        }
        if (same)
            continue;
        if (out[i].data)
            cv_tensor_free(&out[i]);
        if (cv_tensor_alloc(&out[i], io->dtype, io->rank, dims))
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "cannot allocate output %d", i);
    }
    return 0;
}

/* The bounds the model implies (a positional table of 64 rows indexed by
 * arange(L): L <= 64), as the interpreter checks them (CV3013). */
static int check_bounds(const cv_native *n, const int64_t *syms, cv_diag *d)
{
    for (int s = 0; s < n->n_syms; s++) {
        if (n->sym_max[s] < 0 || syms[s] <= n->sym_max[s])
            continue;
        const char *input = "?";
        for (int i = 0; i < n->n_in && input[0] == '?'; i++)
            for (int k = 0; k < n->in[i].rank; k++)
                if (n->in[i].dims[k] == -1 - s)
                    input = n->in[i].name;
        return cv_diag_fail(d, CV_E_SYMBOL_BOUND, (cv_span){0},
                            "input %%%s binds %s = %lld, but the model holds only for %s <= %lld%s%s%s",
                            input, n->sym_names[s], (long long)syms[s], n->sym_names[s],
                            (long long)n->sym_max[s], n->sym_why[s] ? " (" : "",
                            n->sym_why[s] ? n->sym_why[s] : "", n->sym_why[s] ? ")" : "");
    }
    return 0;
}

int cv_native_run(cv_native *n, const cv_tensor *inputs, int n_inputs, cv_tensor *outputs,
                  cv_diag *d)
{
    int64_t *syms = n->syms;
    const void **ins = n->ins;
    void **outs = n->outs;
    memset(syms, 0, (size_t)n->n_syms * sizeof *syms);
    if (n_inputs != n->n_in)
        return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){0}, "the model takes %d inputs, got %d",
                            n->n_in, n_inputs);
    if (bind_inputs(n, inputs, syms, d) || check_input_exprs(n, inputs, syms, d) ||
        check_bounds(n, syms, d) || alloc_outputs(n, syms, outputs, d))
        return -1;
    for (int i = 0; i < n->n_in; i++)
        ins[i] = inputs[i].data;
    for (int i = 0; i < n->n_out; i++)
        outs[i] = outputs[i].data;
    int rc = n->run(n->ctx, ins, outs, syms);
    if (rc)
        return cv_diag_fail(d, rc == -2   ? CV_E_OUT_OF_MEMORY
                               : rc == -4 ? CV_E_SYMBOL_BOUND
                                          : CV_E_RUNTIME_SHAPE,
                            (cv_span){0}, "the compiled model's run returned %d", rc);
    return 0;
}

int cv_native_profile(cv_native *n, uint64_t *ns, int64_t n_kernels)
{
    if (!n->profile)
        return -1;
    n->profile(n->ctx, ns, ns ? n_kernels : 0);
    return 0;
}
