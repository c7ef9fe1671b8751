/* A stand-in for libcuda.so.1 for the unit tests of CUDA artifacts on
 * machines without a GPU (tests/unit/test_cuda.c loads artifacts with
 * CUVIL_CUDA_DRIVER pointing here).  Device memory is host memory; kernels
 * do not run: a launch checks its function against the loaded PTX (the
 * .entry exists, the grid is sane) and every pointer parameter against the
 * live allocations, then logs one line ("launch NAME blocks=B threads=T
 * n=N bad=K") that cvfake_log returns.
 *
 * CVFAKE_MODE: "nodevice" (cuInit fails), "sm80" (compute capability 8.0);
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
static char log_buf[1 << 16];
static size_t log_len;

typedef struct fake_fn {
    char name[128];
    int n;
    int size[MAX_PARAMS];       /* bytes of each parameter */
} fake_fn;

/* The exported driver API, prototypes for -Wmissing-prototypes. */
const char *cvfake_log(void);
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

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream)
{
    (void)stream;
    logf_("htod %zu\n", n);
    return copy((void *)(uintptr_t)dst, src, n, dst);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream)
{
    (void)stream;
    logf_("dtoh %zu\n", n);
    return copy(dst, (const void *)(uintptr_t)src, n, src);
}

CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = (void *)&log_len; return 0; }
CUresult cuStreamDestroy_v2(void *s) { (void)s; return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }

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
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    (void)stream, (void)extra, (void)shared;
    const fake_fn *f = fn;
    if (gx == 0 || bx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
        return 1;
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
