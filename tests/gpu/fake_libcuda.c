/* A stand-in for libcuda.so.1 for the unit tests of CUDA artifacts on
 * machines without a GPU (tests/unit/compiler-core/backend/test_cuda.c loads artifacts with
 * CUVIL_CUDA_DRIVER pointing here).  Device memory is host memory; kernels
 * do not run: a launch checks its function against the loaded PTX (the
 * .entry exists, the grid is sane) and every pointer parameter against the
 * live allocations, then logs one line ("launch NAME blocks=B threads=T
 * n=N bad=K") that cvfake_log returns.
 *
 * Stream capture and graphs as the driver has them: while a stream is
 * being captured its launches are recorded (parameter bytes copied, as the
 * driver does) instead of run; cuStreamSynchronize and cuMemAlloc during a
 * capture fail (900) and invalidate it (cuStreamEndCapture then fails with
 * 901); cuGraphLaunch logs "graph N launches" and then checks and logs
 * each recorded launch like a direct one (a replay reaching freed memory
 * shows bad=K).
 *
 * CVFAKE_MODE: "nodevice" (cuInit fails), "sm80" (compute capability 8.0),
 * "nograph" (stream capture and graph calls fail with 801, not supported),
 * "noinstantiate" (cuGraphInstantiateWithFlags fails with 801),
 * "badcapture" (a launch into a capture fails with 900 and invalidates it);
 * default: one sm_90 device with 132 multiprocessors. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { MAX_ALLOCS = 4096, MAX_PARAMS = 256 };

static struct { char *p; size_t n; } allocs[MAX_ALLOCS];
static char *ptx;               /* the loaded module's text */
static char log_buf[1 << 22];   /* the tests read it by offset: never cleared */
static size_t log_len;

typedef struct fake_fn {
    char name[128];
    int n;
    int size[MAX_PARAMS];       /* bytes of each parameter */
} fake_fn;

/* The exported driver API, prototypes for -Wmissing-prototypes. */
const char *cvfake_log(void);
int cvfake_live_graphs(void);
CUresult cuInit(unsigned flags);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(int *dev, int ord);
CUresult cuDeviceGetAttribute(int *v, int attr, int dev);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
CUresult cuDevicePrimaryCtxRelease_v2(int dev);
CUresult cuCtxPushCurrent_v2(void *ctx);
CUresult cuCtxPopCurrent_v2(void **ctx);
CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals);
CUresult cuModuleUnload(void *mod);
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream);
CUresult cuStreamCreate(void **s, unsigned flags);
CUresult cuStreamDestroy_v2(void *s);
CUresult cuStreamSynchronize(void *s);
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra);
CUresult cuGetErrorName(CUresult r, const char **name);
CUresult cuStreamBeginCapture_v2(void *stream, int mode);
CUresult cuStreamEndCapture(void *stream, void **graph);
CUresult cuStreamIsCapturing(void *stream, int *status);
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags);
CUresult cuGraphLaunch(void *exec, void *stream);
CUresult cuGraphExecDestroy(void *exec);
CUresult cuGraphDestroy(void *graph);

const char *cvfake_log(void)
{
    return log_buf;
}

/* The last launches' 8-byte parameters, for tests that follow a pointer
 * into (host-resident) device memory. */
enum { KEEP_LAUNCHES = 512, KEEP_PARAMS = 32 };
static struct { const void *fn; int n; uint64_t v[KEEP_PARAMS]; } launches[KEEP_LAUNCHES];
static int n_launches;

/* Parameter i (counting every parameter; i < 0 from the end, -1 the last)
 * of the nth newest launch (0: the latest) of kernel `name`; 0 when there is
 * none. */
uint64_t cvfake_param(const char *name, int nth, int i);

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
    va_end(ap);
    if (n > 0 && log_len + (size_t)n < sizeof log_buf)
        log_len += (size_t)n;
}

static const char *mode(void)
{
    const char *m = getenv("CVFAKE_MODE");
    return m ? m : "";
}

/* A recorded launch: its parameters' bytes, each in an 8-byte slot. */
typedef struct fake_launch {
    const fake_fn *fn;
    unsigned gx, bx;
    uint64_t v[MAX_PARAMS];
} fake_launch;

/* A captured graph, or an instantiated one (a copy: the driver lets the
 * graph be destroyed once instantiated). */
typedef struct fake_graph {
    int n, cap;
    fake_launch *v;     /* owned */
} fake_graph;

enum { CAPTURE_NONE, CAPTURE_ACTIVE, CAPTURE_INVALIDATED, MAX_STREAMS = 64 };

/* Streams (the NULL stream last): whether each is being captured. */
typedef struct fake_stream {
    bool used;
    int capture;
    fake_graph *g;      /* owned while capturing */
} fake_stream;

static fake_stream streams[MAX_STREAMS + 1], *const legacy = &streams[MAX_STREAMS];
static int live_graphs;

int cvfake_live_graphs(void)
{
    return live_graphs;
}

static fake_stream *stream_of(void *s)
{
    return s ? s : legacy;
}

static void graph_free(fake_graph *g)
{
    if (!g)
        return;
    free(g->v);
    free(g);
    live_graphs--;
}

static fake_graph *graph_new(void)
{
    fake_graph *g = calloc(1, sizeof *g);
    if (g)
        live_graphs++;
    return g;
}

static CUresult graph_add(fake_graph *g, const fake_launch *l)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        fake_launch *v = realloc(g->v, (size_t)cap * sizeof *v);
        if (!v)
            return 2;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = *l;
    return 0;
}

/* A call the driver refuses while this thread captures (synchronizing,
 * allocating): 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and every
 * capture is invalidated; 0 when nothing is being captured. */
static CUresult capture_unsupported(void)
{
    CUresult r = 0;
    for (int i = 0; i <= MAX_STREAMS; i++)
        if (streams[i].capture != CAPTURE_NONE) {
            streams[i].capture = CAPTURE_INVALIDATED;
            r = 900;
        }
    return r;
}

CUresult cuInit(unsigned flags) { (void)flags; return strcmp(mode(), "nodevice") ? 0 : 100; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *dev, int ord) { *dev = ord; return ord == 0 ? 0 : 101; }

CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
    (void)dev;
    bool sm80 = strcmp(mode(), "sm80") == 0;
    *v = attr == 75 ? (sm80 ? 8 : 9) : attr == 76 ? 0 : attr == 16 ? 132 : 0;
    return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = (void *)&allocs; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
CUresult cuCtxPushCurrent_v2(void *ctx) { (void)ctx; return 0; }
CUresult cuCtxPopCurrent_v2(void **ctx) { *ctx = NULL; return 0; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals)
{
    (void)n, (void)opts, (void)vals;
    if (!strstr(image, ".target sm_") || !strstr(image, ".entry"))
        return 218;     /* CUDA_ERROR_INVALID_PTX */
    free(ptx);
    ptx = strdup(image);
    *mod = ptx;
    logf_("module %zu bytes\n", strlen(ptx));
    return 0;
}

CUresult cuModuleUnload(void *mod) { (void)mod; return 0; }

/* ".entry NAME(\n\t.param .u64 NAME_param_0, ..." */
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
    char key[160];
    snprintf(key, sizeof key, ".entry %s(", name);
    const char *at = strstr((const char *)mod, key), *end = at ? strchr(at, ')') : NULL;
    if (!end)
        return 500;     /* CUDA_ERROR_NOT_FOUND */
    static fake_fn fns[256];
    static int n_fns;
    fake_fn *f = NULL;
    for (int i = 0; i < n_fns && !f; i++)
        if (strcmp(fns[i].name, name) == 0)
            f = &fns[i];
    if (!f && n_fns == 256)
        return 2;
    if (!f)
        f = &fns[n_fns++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    for (const char *p = at; (p = strstr(p, ".param ")) && p < end && f->n < MAX_PARAMS; p += 7)
        f->size[f->n++] = strncmp(p + 7, ".u64", 4) == 0 || strncmp(p + 7, ".b64", 4) == 0 ? 8 : 4;
    *fn = f;
    return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    if (capture_unsupported())
        return 900;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            allocs[i].p = calloc(1, n);
            allocs[i].n = n;
            *p = (CUdeviceptr)(uintptr_t)allocs[i].p;
            return allocs[i].p ? 0 : 2;
        }
    return 2;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p && (CUdeviceptr)(uintptr_t)allocs[i].p == p) {
            free(allocs[i].p);
            allocs[i].p = NULL;
            return 0;
        }
    return 1;
}

/* Whether [p, p+n) lies in one allocation. */
static bool valid(CUdeviceptr p, size_t n)
{
    for (int i = 0; i < MAX_ALLOCS; i++) {
        CUdeviceptr b = (CUdeviceptr)(uintptr_t)allocs[i].p;
        if (allocs[i].p && p >= b && p + n <= b + allocs[i].n)
            return true;
    }
    return false;
}

static CUresult copy(void *dst, const void *src, size_t n, CUdeviceptr dev)
{
    if (!valid(dev, n))
        return 1;   /* CUDA_ERROR_INVALID_VALUE */
    memcpy(dst, src, n);
    return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy((void *)(uintptr_t)dst, src, n, dst);
}

/* The runtime copies only outside captures; a copy into one would not
 * happen now, so it is refused. */
static CUresult copy_async(void *stream)
{
    fake_stream *s = stream_of(stream);
    if (s->capture == CAPTURE_NONE)
        return 0;
    s->capture = CAPTURE_INVALIDATED;
    return 900;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream)
{
    if (copy_async(stream))
        return 900;
    logf_("htod %zu\n", n);
    return copy((void *)(uintptr_t)dst, src, n, dst);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream)
{
    if (copy_async(stream))
        return 900;
    logf_("dtoh %zu\n", n);
    return copy(dst, (const void *)(uintptr_t)src, n, src);
}

CUresult cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (!streams[i].used) {
            streams[i].used = true;
            *s = &streams[i];
            return 0;
        }
    return 2;
}

CUresult cuStreamDestroy_v2(void *s)
{
    fake_stream *st = stream_of(s);
    if (st == legacy || !st->used)
        return 400;     /* CUDA_ERROR_INVALID_HANDLE */
    graph_free(st->g);
    *st = (fake_stream){0};
    return 0;
}

CUresult cuStreamSynchronize(void *s)
{
    (void)s;
    return capture_unsupported();
}

/* CVFAKE_TRACE: every parameter on stderr, pointers as allocation+offset. */
static void trace_params(const fake_fn *f, void **params)
{
    fprintf(stderr, "%s:", f->name);
    for (int i = 0; i < f->n; i++) {
        if (f->size[i] == 4) {
            float v;
            memcpy(&v, params[i], 4);
            fprintf(stderr, " %g", (double)v);
            continue;
        }
        uint64_t v;
        memcpy(&v, params[i], 8);
        int a = -1;
        for (int k = 0; k < MAX_ALLOCS && a < 0; k++) {
            CUdeviceptr b = (CUdeviceptr)(uintptr_t)allocs[k].p;
            if (allocs[k].p && v >= b && v < b + allocs[k].n)
                a = k;
        }
        if (a >= 0)
            fprintf(stderr, " A%d+%llu", a, (unsigned long long)(v - (uint64_t)(uintptr_t)allocs[a].p));
        else
            fprintf(stderr, " %lld", (long long)v);
    }
    fputc('\n', stderr);
}

/* Pointer parameters (8 bytes) must be 0 or inside an allocation; the
 * last parameter of a program kernel is its item count. */
static CUresult run_launch(const fake_fn *f, unsigned gx, unsigned bx, void **params)
{
    int bad = 0;
    int64_t last = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->size[i] != 8)
            continue;
        uint64_t v;
        memcpy(&v, params[i], 8);
        last = (int64_t)v;
        /* A 64-bit parameter is a pointer or an integer; integers are small. */
        if (v > (1ull << 32) && !valid(v, 1))
            bad++;
    }
    logf_("launch %s blocks=%u threads=%u n=%lld bad=%d\n", f->name, gx, bx, (long long)last, bad);
    if (getenv("CVFAKE_TRACE"))
        trace_params(f, params);
    int slot = n_launches++ % KEEP_LAUNCHES;
    launches[slot].fn = f;
    launches[slot].n = f->n < KEEP_PARAMS ? f->n : KEEP_PARAMS;
    for (int i = 0; i < launches[slot].n; i++) {
        launches[slot].v[i] = 0;
        memcpy(&launches[slot].v[i], params[i], (size_t)f->size[i]);
    }
    return bad ? 700 : 0;   /* CUDA_ERROR_ILLEGAL_ADDRESS */
}

/* Into the graph being captured: the parameters as they are now. */
static CUresult record_launch(fake_stream *s, const fake_fn *f, unsigned gx, unsigned bx,
                              void **params)
{
    if (s->capture == CAPTURE_INVALIDATED)
        return 901;     /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    if (strcmp(mode(), "badcapture") == 0) {
        s->capture = CAPTURE_INVALIDATED;
        return 900;
    }
    fake_launch l = {.fn = f, .gx = gx, .bx = bx};
    for (int i = 0; i < f->n; i++)
        memcpy(&l.v[i], params[i], (size_t)f->size[i]);
    return graph_add(s->g, &l);
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    (void)extra, (void)shared;
    const fake_fn *f = fn;
    if (gx == 0 || bx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
        return 1;
    fake_stream *s = stream_of(stream);
    if (s->capture != CAPTURE_NONE)
        return record_launch(s, f, gx, bx, params);
    return run_launch(f, gx, bx, params);
}

static bool no_graphs(void)
{
    return strcmp(mode(), "nograph") == 0;
}

CUresult cuStreamBeginCapture_v2(void *stream, int capture_mode)
{
    (void)capture_mode;
    fake_stream *s = stream_of(stream);
    if (no_graphs())
        return 801;     /* CUDA_ERROR_NOT_SUPPORTED */
    if (s == legacy)
        return 900;     /* the legacy stream cannot be captured */
    if (s->capture != CAPTURE_NONE)
        return 401;     /* CUDA_ERROR_ILLEGAL_STATE */
    if (!(s->g = graph_new()))
        return 2;
    s->capture = CAPTURE_ACTIVE;
    return 0;
}

CUresult cuStreamEndCapture(void *stream, void **graph)
{
    fake_stream *s = stream_of(stream);
    *graph = NULL;
    if (s->capture == CAPTURE_NONE)
        return 401;
    bool invalid = s->capture == CAPTURE_INVALIDATED;
    s->capture = CAPTURE_NONE;
    if (invalid)
        graph_free(s->g);
    else
        *graph = s->g;
    s->g = NULL;
    return invalid ? 901 : 0;
}

CUresult cuStreamIsCapturing(void *stream, int *status)
{
    *status = stream_of(stream)->capture;
    return 0;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags)
{
    (void)flags;
    const fake_graph *g = graph;
    if (no_graphs() || strcmp(mode(), "noinstantiate") == 0)
        return 801;
    fake_graph *e = g ? graph_new() : NULL;
    if (!e)
        return 1;
    for (int i = 0; i < g->n; i++)
        if (graph_add(e, &g->v[i])) {
            graph_free(e);
            return 2;
        }
    *exec = e;
    return 0;
}

/* Each recorded launch checked and logged as if launched now (launched
 * into a capture: recorded there, as the driver adds a child graph). */
CUresult cuGraphLaunch(void *exec, void *stream)
{
    const fake_graph *e = exec;
    fake_stream *s = stream_of(stream);
    if (no_graphs())
        return 801;
    if (!e)
        return 1;
    if (s->capture == CAPTURE_NONE)
        logf_("graph %d launches\n", e->n);
    CUresult first = 0;
    for (int i = 0; i < e->n; i++) {
        const fake_launch *l = &e->v[i];
        void *params[MAX_PARAMS];
        for (int k = 0; k < l->fn->n; k++)
            params[k] = (void *)&l->v[k];
        CUresult r = s->capture != CAPTURE_NONE ? record_launch(s, l->fn, l->gx, l->bx, params)
                                                : run_launch(l->fn, l->gx, l->bx, params);
        if (!first)
            first = r;
    }
    return first;
}

CUresult cuGraphExecDestroy(void *exec)
{
    graph_free(exec);
    return 0;
}

CUresult cuGraphDestroy(void *graph)
{
    graph_free(graph);
    return 0;
}

CUresult cuGetErrorName(CUresult r, const char **name)
{
    *name = r == 100 ? "CUDA_ERROR_NO_DEVICE" : r == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS"
                                                         : "CUDA_ERROR_FAKE";
    return 0;
}

uint64_t cvfake_param(const char *name, int nth, int i)
{
    int first = n_launches > KEEP_LAUNCHES ? n_launches - KEEP_LAUNCHES : 0;
    for (int k = n_launches - 1; k >= first; k--) {
        const fake_fn *f = launches[k % KEEP_LAUNCHES].fn;
        int n = launches[k % KEEP_LAUNCHES].n, at = i < 0 ? n + i : i;
        if (strcmp(f->name, name) == 0 && nth-- == 0)
            return at >= 0 && at < n ? launches[k % KEEP_LAUNCHES].v[at] : 0;
    }
    return 0;
}
