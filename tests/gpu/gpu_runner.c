/* Runs a GPU test bundle (tests/gpu/gpu_bundle.c) on a machine with an
 * NVIDIA GPU: for every case, the artifact's cv_<name>_run (host pointers)
 * and cv_<name>_run_stream (device pointers, from the driver API) against
 * the interpreter's outputs, then the median time of run.  Needs only libc
 * (it is built where cuvil is and copied with the bundle).
 *
 *   gpu_runner BUNDLE_DIR [--filter SUBSTR] [--iters N]
 *
 * The last line reads "N passed, M failed". */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_IO = 160, MAX_SYMS = 64, CASE_TIMEOUT_S = 240 };

typedef struct io {
    char file[64], dtype[8];
    size_t bytes;
    long long numel;
    double rtol, atol;
    void *data, *got;           /* malloc'd */
} io;

typedef struct tcase {
    char lib[256], name[200];
    int64_t syms[MAX_SYMS];
    int n_syms, n_in, n_out;
    io in[MAX_IO], out[MAX_IO];
} tcase;

typedef struct api {
    void *(*create)(int);
    int (*run)(void *, const void *const *, void *const *, const int64_t *);
    int (*run_stream)(void *, const void *const *, void *const *, const int64_t *, void *);
    void (*destroy)(void *);
    int (*last_error)(const char **);
} api;

/* The driver calls the run_stream check makes. */
typedef struct drv {
    int (*Init)(unsigned);
    int (*DeviceGet)(int *, int);
    int (*Retain)(void **, int);
    int (*Push)(void *);
    int (*Pop)(void **);
    int (*Alloc)(unsigned long long *, size_t);
    int (*Free)(unsigned long long);
    int (*HtoD)(unsigned long long, const void *, size_t);
    int (*DtoH)(void *, unsigned long long, size_t);
    int (*Sync)(void);
} drv;

static drv g_drv;
static int g_have_drv;

static void *load_file(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static size_t dtype_size(const char *dt)
{
    if (!strcmp(dt, "f64") || !strcmp(dt, "i64") || !strcmp(dt, "u64"))
        return 8;
    if (!strcmp(dt, "f32") || !strcmp(dt, "i32") || !strcmp(dt, "u32"))
        return 4;
    if (!strcmp(dt, "f16") || !strcmp(dt, "bf16") || !strcmp(dt, "i16") || !strcmp(dt, "u16"))
        return 2;
    return 1;
}

static double half_to_f64(uint16_t h)
{
    int e = h >> 10 & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h >> 15 ? -v : v;
}

static double elem(const io *o, const void *p, long long i)
{
    const char *dt = o->dtype;
    if (!strcmp(dt, "f32")) { float v; memcpy(&v, (const char *)p + 4 * i, 4); return v; }
    if (!strcmp(dt, "f64")) { double v; memcpy(&v, (const char *)p + 8 * i, 8); return v; }
    if (!strcmp(dt, "i64")) { int64_t v; memcpy(&v, (const char *)p + 8 * i, 8); return (double)v; }
    if (!strcmp(dt, "u64")) { uint64_t v; memcpy(&v, (const char *)p + 8 * i, 8); return (double)v; }
    if (!strcmp(dt, "i32")) { int32_t v; memcpy(&v, (const char *)p + 4 * i, 4); return v; }
    if (!strcmp(dt, "u32")) { uint32_t v; memcpy(&v, (const char *)p + 4 * i, 4); return v; }
    if (!strcmp(dt, "i16")) { int16_t v; memcpy(&v, (const char *)p + 2 * i, 2); return v; }
    if (!strcmp(dt, "u16")) { uint16_t v; memcpy(&v, (const char *)p + 2 * i, 2); return v; }
    if (!strcmp(dt, "i8")) return ((const int8_t *)p)[i];
    if (!strcmp(dt, "u8") || !strcmp(dt, "bool")) return ((const uint8_t *)p)[i];
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    if (!strcmp(dt, "f16"))
        return half_to_f64(h);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* 0 when got matches want; else describes the first mismatch. */
static int compare(const io *o, const void *got, char *why, size_t size)
{
    int is_float = o->dtype[0] == 'f' || o->dtype[0] == 'b';
    if (!strcmp(o->dtype, "bool"))
        is_float = 0;
    long long bad = 0;
    double worst = 0;
    for (long long i = 0; i < o->numel; i++) {
        double w = elem(o, o->data, i), g = elem(o, got, i);
        int ok = is_float ? (isnan(w) ? isnan(g) : (w == g || fabs(g - w) <= o->atol + o->rtol * fabs(w)))
                          : g == w;
        if (!ok && bad++ == 0)
            snprintf(why, size, "%s element %lld: got %.9g, want %.9g", o->file, i, g, w);
        if (fabs(g - w) > worst)
            worst = fabs(g - w);
    }
    if (bad) {
        size_t n = strlen(why);
        snprintf(why + n, size - n, " (%lld of %lld elements off; max abs error %.3g)", bad,
                 o->numel, worst);
    }
    return bad ? -1 : 0;
}

static int parse_case(const char *dir, tcase *c)
{
    char path[1100], line[512];
    snprintf(path, sizeof path, "%s/case.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(c, 0, sizeof *c);
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "lib ", 4)) {
            rc = sscanf(line, "lib %255s %199s", c->lib, c->name) == 2 ? 0 : -1;
        } else if (!strncmp(line, "syms ", 5)) {
            char *p = line + 5, *end;
            c->n_syms = (int)strtol(p, &end, 10);
            for (int i = 0; i < c->n_syms && i < MAX_SYMS; i++)
                c->syms[i] = strtoll(end, &end, 10);
        } else if (!strncmp(line, "in ", 3) && c->n_in < MAX_IO) {
            io *o = &c->in[c->n_in++];
            rc = sscanf(line, "in %zu %63s", &o->bytes, o->file) == 2 ? 0 : -1;
            size_t len = 0;
            o->data = rc == 0 ? load_file(dir, o->file, &len) : NULL;
            rc = o->data && len == o->bytes ? 0 : -1;
        } else if (!strncmp(line, "out ", 4) && c->n_out < MAX_IO) {
            io *o = &c->out[c->n_out++];
            rc = sscanf(line, "out %7s %lld %lf %lf %63s", o->dtype, &o->numel, &o->rtol, &o->atol,
                        o->file) == 5 ? 0 : -1;
            o->bytes = (size_t)o->numel * dtype_size(o->dtype);
            size_t len = 0;
            o->data = rc == 0 ? load_file(dir, o->file, &len) : NULL;
            o->got = calloc(1, o->bytes + 1);
            rc = o->data && o->got && len == o->bytes ? 0 : -1;
        }
    }
    fclose(f);
    return rc;
}

static void free_case(tcase *c)
{
    for (int i = 0; i < c->n_in; i++)
        free(c->in[i].data);
    for (int i = 0; i < c->n_out; i++) {
        free(c->out[i].data);
        free(c->out[i].got);
    }
}

static void load_driver(void)
{
    const char *path = getenv("CUVIL_CUDA_DRIVER");
    void *dl = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return;
    static const char *const names[] = {
        "cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxPushCurrent_v2",
        "cuCtxPopCurrent_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2",
        "cuMemcpyDtoH_v2", "cuCtxSynchronize",
    };
    void *fns[10];
    for (int i = 0; i < 10; i++)
        if (!(fns[i] = dlsym(dl, names[i])))
            return;
    memcpy(&g_drv, fns, sizeof fns);
    int dev;
    void *ctx;
    g_have_drv = g_drv.Init(0) == 0 && g_drv.DeviceGet(&dev, 0) == 0 && g_drv.Retain(&ctx, dev) == 0 &&
                 g_drv.Push(ctx) == 0;
}

static int check_outputs(const tcase *c, const char *how, char *why, size_t size)
{
    for (int i = 0; i < c->n_out; i++) {
        char w[400];
        if (compare(&c->out[i], c->out[i].got, w, sizeof w)) {
            snprintf(why, size, "%s: %s", how, w);
            return -1;
        }
    }
    return 0;
}

static double now_ms(void);
static double median_ms(double *t, int n);

/* The outputs in device memory dout, fetched and checked. */
static int fetch_check(const tcase *c, const unsigned long long *dout, const char *how, char *why,
                       size_t size)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < c->n_out; i++) {
        memset(c->out[i].got, 0, c->out[i].bytes);
        rc = g_drv.DtoH(c->out[i].got, dout[i], c->out[i].bytes);
    }
    return rc == 0 ? check_outputs(c, how, why, size) : rc;
}

/* run_stream on device copies of the inputs; then, when iters > 0, its
 * median time with the data on the device (run_stream, then
 * cuCtxSynchronize), as a framework on the GPU would be timed, and the
 * outputs checked again (those runs replay a CUDA graph). */
static int stream_check(const tcase *c, const api *a, void *ctx, int iters, double *ms,
                        char *why, size_t size)
{
    unsigned long long din[MAX_IO] = {0}, dout[MAX_IO] = {0};
    void *pin[MAX_IO], *pout[MAX_IO];
    int rc = 0;
    for (int i = 0; rc == 0 && i < c->n_in; i++)
        rc = g_drv.Alloc(&din[i], c->in[i].bytes + 1) || g_drv.HtoD(din[i], c->in[i].data, c->in[i].bytes);
    for (int i = 0; rc == 0 && i < c->n_out; i++)
        rc = g_drv.Alloc(&dout[i], c->out[i].bytes + 1);
    for (int i = 0; i < MAX_IO; i++) {
        pin[i] = (void *)(uintptr_t)din[i];
        pout[i] = (void *)(uintptr_t)dout[i];
    }
    if (rc == 0 && (rc = a->run_stream(ctx, (const void *const *)pin, pout, c->syms, NULL)) != 0)
        snprintf(why, size, "run_stream returned %d", rc);
    else if (rc == 0 && g_drv.Sync() != 0)
        rc = -1, snprintf(why, size, "cuCtxSynchronize after run_stream failed");
    if (rc == 0)
        rc = fetch_check(c, dout, "run_stream", why, size);
    if (rc && !why[0])
        snprintf(why, size, "run_stream: a driver call of the check failed");
    double t[256];
    int n = iters < 256 ? iters : 256;
    for (int i = 0; rc == 0 && i < n; i++) {
        double t0 = now_ms();
        rc = a->run_stream(ctx, (const void *const *)pin, pout, c->syms, NULL) || g_drv.Sync();
        t[i] = now_ms() - t0;
    }
    if (rc == 0 && n > 0) {
        *ms = median_ms(t, n);
        rc = fetch_check(c, dout, "run_stream (graph replays)", why, size);
    } else if (rc && !why[0]) {
        snprintf(why, size, "run_stream: a driver call of the check failed");
    }
    for (int i = 0; i < MAX_IO; i++) {
        if (din[i])
            g_drv.Free(din[i]);
        if (dout[i])
            g_drv.Free(dout[i]);
    }
    return rc;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], cmp_d);
    return t[n / 2];
}

static int run_case(const char *bundle, const char *tag, int iters, char *why, size_t size,
                    double *ms, double *ms_stream)
{
    char dir[1024], sym[300];
    snprintf(dir, sizeof dir, "%s/%s", bundle, tag);
    static tcase c;
    if (parse_case(dir, &c))
        return snprintf(why, size, "bad or missing case files (a torchvision batch-32 case "
                        "needs bench/gpu/torch_ref.py first)"), -1;
    char lib[1400];
    snprintf(lib, sizeof lib, "%s/%s", dir, c.lib);
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    api a = {0};
    int rc = -1;
    if (!dl) {
        snprintf(why, size, "dlopen: %s", dlerror());
        free_case(&c);
        return -1;
    }
    const char *verbs[] = {"create", "run", "run_stream", "destroy", "last_error"};
    void **slots[] = {(void **)&a.create, (void **)&a.run, (void **)&a.run_stream,
                      (void **)&a.destroy, (void **)&a.last_error};
    for (int i = 0; i < 5; i++) {
        snprintf(sym, sizeof sym, "cv_%s_%s", c.name, verbs[i]);
        *slots[i] = dlsym(dl, sym);
    }
    void *ctx = a.create && a.run && a.destroy && a.last_error ? a.create(1) : NULL;
    const void *ins[MAX_IO];
    void *outs[MAX_IO];
    for (int i = 0; i < c.n_in; i++)
        ins[i] = c.in[i].data;
    for (int i = 0; i < c.n_out; i++)
        outs[i] = c.out[i].got;
    if (!ctx) {
        const char *msg = "";
        int code = a.last_error ? a.last_error(&msg) : 0;
        snprintf(why, size, "create failed: CV%04d %s", code, msg);
    } else if ((rc = a.run(ctx, ins, outs, c.syms)) != 0) {
        const char *msg = "";
        int code = a.last_error(&msg);
        snprintf(why, size, "run returned %d: CV%04d %s", rc, code, msg);
    } else if ((rc = check_outputs(&c, "run", why, size)) == 0 && g_have_drv && a.run_stream) {
        rc = stream_check(&c, &a, ctx, iters, ms_stream, why, size);
    }
    if (rc == 0 && iters > 0) {
        double t[256];
        int n = iters < 256 ? iters : 256;
        a.run(ctx, ins, outs, c.syms);
        for (int i = 0; i < n; i++) {
            double t0 = now_ms();
            a.run(ctx, ins, outs, c.syms);
            t[i] = now_ms() - t0;
        }
        *ms = median_ms(t, n);
        rc = check_outputs(&c, "run (graph replays)", why, size);
    }
    if (ctx)
        a.destroy(ctx);
    dlclose(dl);
    free_case(&c);
    return rc;
}

/* One case with its result line; 0 when it passed. */
static int run_one(const char *bundle, const char *tag, int iters)
{
    char why[1024] = "";
    double ms = 0, ms_stream = 0, t0 = now_ms();
    int rc = run_case(bundle, tag, iters, why, sizeof why, &ms, &ms_stream);
    if (rc == 0 && g_have_drv)
        printf("PASS %-28s run %9.3f ms, on-device %9.3f ms (medians of %d)  [case %.0f ms]\n",
               tag, ms, ms_stream, iters, now_ms() - t0);
    else if (rc == 0)
        printf("PASS %-28s run %9.3f ms (median of %d)  [case %.0f ms]\n", tag, ms, iters,
               now_ms() - t0);
    else
        printf("FAIL %-28s %s\n", tag, why);
    fflush(stdout);
    return rc;
}

/* The child's work: cases from..n-1 in this process (one driver start for
 * many cases), each one's index and outcome written to fd once its line is
 * out.  It stops after a failure: a kernel that faults poisons the CUDA
 * context, so the next case starts in a fresh process. */
static void run_from(char **tags, int from, int n, const char *bundle, int iters, int fd)
{
    load_driver();
    for (int i = from; i < n; i++) {
        alarm(CASE_TIMEOUT_S);
        int out[2] = {i, run_one(bundle, tags[i], iters) != 0};
        if (write(fd, out, sizeof out) != (ssize_t)sizeof out || out[1])
            _exit(1);
    }
    _exit(0);
}

/* The case tags of cases.txt that contain filter (malloc'd). */
static char **read_tags(const char *bundle, const char *filter, int *n)
{
    char path[1024], tag[256];
    snprintf(path, sizeof path, "%s/cases.txt", bundle);
    FILE *list = fopen(path, "r");
    char **v = NULL;
    int cap = 0;
    *n = -1;
    if (!list)
        return NULL;
    *n = 0;
    while (fgets(tag, sizeof tag, list)) {
        tag[strcspn(tag, "\n")] = 0;
        if (!tag[0] || (filter && !strstr(tag, filter)))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = strdup(tag);
    }
    fclose(list);
    return v;
}

int main(int argc, char **argv)
{
    const char *bundle = NULL, *filter = NULL;
    int iters = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else
            bundle = argv[i];
    }
    if (!bundle) {
        fprintf(stderr, "usage: gpu_runner BUNDLE_DIR [--filter SUBSTR] [--iters N]\n");
        return 2;
    }
    int n;
    char **tags = read_tags(bundle, filter, &n);
    if (n < 0)
        return fprintf(stderr, "gpu_runner: no %s/cases.txt\n", bundle), 2;
    int passed = 0, failed = 0;
    /* Cases run in children (CUDA does not survive fork, so the driver is
     * started there only); a crash or a hang fails that case alone. */
    for (int next = 0; next < n;) {
        int fds[2];
        if (pipe(fds) < 0)
            return perror("gpu_runner: pipe"), 2;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            run_from(tags, next, n, bundle, iters, fds[1]);
        }
        close(fds[1]);
        int out[2];
        while (pid > 0 && read(fds[0], out, sizeof out) == (ssize_t)sizeof out) {
            out[1] ? failed++ : passed++;
            next = out[0] + 1;
        }
        close(fds[0]);
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || WIFSIGNALED(st) ||
            (WIFEXITED(st) && WEXITSTATUS(st) == 0 && next < n)) {
            if (pid > 0 && WIFSIGNALED(st))
                printf("FAIL %-28s killed by signal %d%s\n", tags[next], WTERMSIG(st),
                       WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
            else
                printf("FAIL %-28s the case process failed\n", tags[next]);
            failed++;
            next++;
        }
    }
    for (int i = 0; i < n; i++)
        free(tags[i]);
    free(tags);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
