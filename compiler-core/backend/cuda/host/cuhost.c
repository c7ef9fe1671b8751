/* The CUDA artifact's context: device, primary context, module, stream,
 * weights and the one device buffer (activation arena, then the staging
 * copies of inputs and outputs); runs and kernel launches.  Every API
 * function makes the device's primary context current for its duration
 * and restores the caller's. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/host/cuhost_internal.h"

enum { ALIGN = 256, THREADS = 256, MAX_PARAMS = 160 };

static int64_t align_up(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* The value of a class's monomial (or of an io dim product) under syms. */
static int64_t mono(const int64_t *s, int64_t degree, const int64_t *syms)
{
    int64_t v = 1;
    for (int64_t i = 0; i < degree; i++)
        v *= syms[s[i]];
    return v;
}

/* The symbols, then the derived dims (extended indices): every size and
 * every run below reads them from the array this returns. */
static const int64_t *extend(const cvcu_model *m, const int64_t *syms, int64_t *ext)
{
    if (!m->n_dsyms || !syms || !m->derive)
        return syms;
    memcpy(ext, syms, (size_t)m->n_syms * sizeof *ext);
    m->derive(ext);
    return ext;
}

static int64_t arena_bytes(const cvcu_model *m, const int64_t *syms)
{
    int64_t total = 0;
    const int64_t *c = m->classes;
    for (int64_t k = 0; k < m->n_classes; k++, c += 2 + c[1])
        total += c[0] * mono(c + 2, c[1], syms);
    return total;
}

int64_t cvcu_arena_bytes(const cvcu_model *m, const int64_t *syms)
{
    int64_t ext[CVCU_MAX_SYMS];
    return arena_bytes(m, extend(m, syms, ext));
}

/* Bytes of every input and output under syms. */
static void io_bytes(const cvcu_model *m, const int64_t *syms, int64_t *bytes)
{
    const int64_t *e = m->io;
    for (int64_t i = 0; i < m->n_inputs + m->n_outputs; i++, e += 2 + e[1]) {
        int64_t v = e[0];
        for (int64_t k = 0; k < e[1]; k++)
            v *= e[2 + k] >= 0 ? e[2 + k] : syms[-1 - e[2 + k]];
        bytes[i] = v;
    }
}

static int syms_ok(const cvcu_model *m, const int64_t *syms)
{
    for (int64_t i = 0; i < m->n_syms + m->n_dsyms; i++)
        if (syms[i] < 0)
            return 0;
    return 1;
}

/* Device buffer bytes for syms: the arena, then each input and output. */
static int64_t buffer_bytes(const cvcu_model *m, const int64_t *syms, int64_t *io_off)
{
    int64_t bytes[2 * CVCU_MAX_IO], at = align_up(arena_bytes(m, syms));
    io_bytes(m, syms, bytes);
    for (int64_t i = 0; i < m->n_inputs + m->n_outputs; i++) {
        if (io_off)
            io_off[i] = at;
        at += align_up(bytes[i]);
    }
    return at;
}

static int grow(cvcu_ctx *ctx, const int64_t *syms)
{
    const cvcu_driver *d = ctx->drv;
    if (ctx->m->n_syms && (!syms || !syms_ok(ctx->m, syms)))
        return -1;
    int64_t need = buffer_bytes(ctx->m, syms, NULL);
    if (need <= ctx->buf_cap)
        return 0;
    if (ctx->buf) {
        /* Work queued on another stream may still read the old buffer. */
        if (cvcu_check(d, d->StreamSynchronize(ctx->stream), "cuStreamSynchronize"))
            return -3;
        d->MemFree(ctx->buf);
        ctx->buf = 0;
        ctx->buf_cap = 0;
    }
    CUresult r = d->MemAlloc(&ctx->buf, (size_t)(need > 0 ? need : ALIGN));
    if (r != 0) {
        ctx->buf = 0;
        return cvcu_fail(CVCU_E_DEVICE_OOM, "cuMemAlloc of %lld bytes (arena and staging) "
                         "failed (CUresult %d)", (long long)need, r);
    }
    ctx->buf_cap = need;
    return 0;
}

static int enter(cvcu_ctx *ctx)
{
    return cvcu_check(ctx->drv, ctx->drv->CtxPushCurrent(ctx->cu), "cuCtxPushCurrent") ? -3 : 0;
}

static void leave(cvcu_ctx *ctx)
{
    CUcontext prev;
    ctx->drv->CtxPopCurrent(&prev);
}

void cvcu_destroy(cvcu_ctx *ctx)
{
    if (!ctx)
        return;
    const cvcu_driver *d = ctx->drv;
    if (ctx->cu && enter(ctx) == 0) {
        if (ctx->own_stream)
            d->StreamSynchronize(ctx->own_stream);
        cvcu_graph_free(ctx);
        if (ctx->buf)
            d->MemFree(ctx->buf);
        if (ctx->weights)
            d->MemFree(ctx->weights);
        for (int i = 0; i < CVCU_PACKS; i++)
            if (ctx->pack[i].buf)
                d->MemFree(ctx->pack[i].buf);
        if (ctx->own_stream)
            d->StreamDestroy(ctx->own_stream);
        if (ctx->mod)
            d->ModuleUnload(ctx->mod);
        leave(ctx);
    }
    if (ctx->cu)
        d->PrimaryCtxRelease(ctx->dev);
    free(ctx->kernels);
    free(ctx);
}

/* The device (CUVIL_CUDA_DEVICE, default 0), checked against the SM the
 * artifact was built for. */
static int pick_device(cvcu_ctx *ctx)
{
    const cvcu_driver *d = ctx->drv;
    const char *env = getenv("CUVIL_CUDA_DEVICE");
    int ord = env && *env ? atoi(env) : 0, count = 0, major = 0, minor = 0, sms = 0;
    if (cvcu_check(d, d->DeviceGetCount(&count), "cuDeviceGetCount"))
        return -1;
    if (ord < 0 || ord >= count)
        return cvcu_fail(CVCU_E_NO_DEVICE, "no CUDA device %d (the driver sees %d)", ord, count);
    if (cvcu_check(d, d->DeviceGet(&ctx->dev, ord), "cuDeviceGet") ||
        cvcu_check(d, d->DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, ctx->dev), "cuDeviceGetAttribute") ||
        cvcu_check(d, d->DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, ctx->dev), "cuDeviceGetAttribute") ||
        cvcu_check(d, d->DeviceGetAttribute(&sms, CU_ATTR_MULTIPROCESSOR_COUNT, ctx->dev), "cuDeviceGetAttribute"))
        return -1;
    if (major * 10 + minor < ctx->m->sm)
        return cvcu_fail(CVCU_E_OLD_DEVICE, "CUDA device %d has compute capability %d.%d; "
                         "%s was built for sm_%lld", ord, major, minor, ctx->m->name,
                         (long long)ctx->m->sm);
    ctx->max_blocks = (unsigned)(sms > 0 ? sms : 1) * 16;
    return 0;
}

static int load_module(cvcu_ctx *ctx)
{
    const cvcu_driver *d = ctx->drv;
    char log[4096] = "";
    int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    CUresult r = d->ModuleLoadDataEx(&ctx->mod, ctx->m->ptx, 2, opts, vals);
    if (r != 0) {
        ctx->mod = NULL;
        log[sizeof log - 1] = 0;
        return cvcu_fail(CVCU_E_DRIVER, "cuModuleLoadDataEx (JIT of %s's PTX for sm_%lld) "
                         "failed (CUresult %d): %s", ctx->m->name, (long long)ctx->m->sm, r, log);
    }
    ctx->kernels = calloc((size_t)ctx->m->n_kernels + 1, sizeof *ctx->kernels);
    if (!ctx->kernels)
        return cvcu_fail(CVCU_E_DRIVER, "out of host memory");
    for (int64_t i = 0; i < ctx->m->n_kernels; i++) {
        const char *name = ctx->m->kernel_names[i];
        if (name && cvcu_check(d, d->ModuleGetFunction(&ctx->kernels[i], ctx->mod, name), name))
            return -1;
    }
    return 0;
}

static int upload_weights(cvcu_ctx *ctx)
{
    const cvcu_driver *d = ctx->drv;
    if (ctx->m->weights_len <= 0)
        return 0;
    size_t n = (size_t)ctx->m->weights_len;
    CUresult r = d->MemAlloc(&ctx->weights, n);
    if (r != 0) {
        ctx->weights = 0;
        return cvcu_fail(CVCU_E_DEVICE_OOM, "cuMemAlloc of %zu bytes (weights) failed "
                         "(CUresult %d)", n, r);
    }
    return cvcu_check(d, d->MemcpyHtoD(ctx->weights, ctx->m->weights, n), "cuMemcpyHtoD (weights)");
}

cvcu_ctx *cvcu_create(const cvcu_model *m)
{
    const cvcu_driver *d = cvcu_driver_get();
    if (!d)
        return NULL;
    cvcu_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        cvcu_fail(CVCU_E_DRIVER, "out of host memory");
        return NULL;
    }
    ctx->m = m;
    ctx->drv = d;
    const char *naive = getenv("CUVIL_CUDA_NAIVE");
    ctx->naive = naive && *naive && *naive != '0';
    const char *tc = getenv("CUVIL_CUDA_TC");
    ctx->tc_passes = !tc || !*tc ? 3 : strcmp(tc, "tf32") == 0 ? 1 : strcmp(tc, "0") == 0 ? 0 : 3;
    const char *nhwc = getenv("CUVIL_CUDA_NHWC");
    ctx->nhwc = !nhwc || !*nhwc ? 1 : strcmp(nhwc, "0") == 0 ? 0 : strcmp(nhwc, "1") == 0 ? 2 : 1;
    cvcu_graph_init(ctx);
    if (pick_device(ctx) ||
        cvcu_check(d, d->PrimaryCtxRetain(&ctx->cu, ctx->dev), "cuDevicePrimaryCtxRetain")) {
        ctx->cu = NULL;
        cvcu_destroy(ctx);
        return NULL;
    }
    int rc = enter(ctx);
    if (rc == 0) {
        rc = load_module(ctx) || upload_weights(ctx) ||
             cvcu_check(d, d->StreamCreate(&ctx->own_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        ctx->stream = ctx->own_stream;
        /* Static shapes: every byte the runs need is allocated now. */
        if (rc == 0 && m->n_syms == 0)
            rc = grow(ctx, NULL);
        leave(ctx);
    }
    if (rc) {
        cvcu_destroy(ctx);
        return NULL;
    }
    return ctx;
}

int cvcu_reserve(cvcu_ctx *ctx, const int64_t *syms)
{
    int64_t ext[CVCU_MAX_SYMS];
    syms = extend(ctx->m, syms, ext);
    int rc = enter(ctx);
    if (rc == 0) {
        rc = grow(ctx, syms);
        leave(ctx);
    }
    return rc;
}

int cvcu_exec_direct(cvcu_ctx *ctx, void *const *din, void *const *dout, const int64_t *syms,
                     CUstream stream)
{
    const cvcu_model *m = ctx->m;
    int64_t base[64], mono_v[64];
    if (m->n_classes > 64)
        return cvcu_fail(CVCU_E_DRIVER, "%s: too many arena size classes", m->name);
    const int64_t *c = m->classes;
    int64_t at = 0;
    for (int64_t k = 0; k < m->n_classes; k++, c += 2 + c[1]) {
        mono_v[k] = mono(c + 2, c[1], syms);
        base[k] = at;
        at += c[0] * mono_v[k];
    }
    cvcu_frame fr = {din, dout, syms, (char *)(uintptr_t)ctx->buf,
                     (char *)(uintptr_t)ctx->weights, base, mono_v};
    ctx->err = 0;
    ctx->stream = stream;
    ctx->pending.n = 0;
    cvcu_pack_new_run(ctx);
    m->run_dev(ctx, &fr);
    cvcu_flush(ctx);
    ctx->stream = ctx->own_stream;
    return ctx->err == 0 ? 0 : ctx->err == CVCU_E_DEVICE_OOM ? -2 : -3;
}

int cvcu_run(cvcu_ctx *ctx, const void *const *inputs, void *const *outputs,
             const int64_t *syms)
{
    const cvcu_model *m = ctx->m;
    const cvcu_driver *d = ctx->drv;
    int64_t off[2 * CVCU_MAX_IO], bytes[2 * CVCU_MAX_IO], ext[CVCU_MAX_SYMS];
    void *dptr[2 * CVCU_MAX_IO];
    if (m->n_inputs + m->n_outputs > 2 * CVCU_MAX_IO)
        return cvcu_fail(CVCU_E_DRIVER, "%s: too many inputs and outputs", m->name);
    syms = extend(m, syms, ext);
    int rc = enter(ctx);
    if (rc)
        return rc;
    rc = grow(ctx, syms);
    if (rc == 0) {
        buffer_bytes(m, syms, off);
        io_bytes(m, syms, bytes);
        for (int64_t i = 0; i < m->n_inputs + m->n_outputs; i++)
            dptr[i] = (void *)(uintptr_t)(ctx->buf + (CUdeviceptr)off[i]);
        for (int64_t i = 0; rc == 0 && i < m->n_inputs; i++)
            if (bytes[i] > 0 && cvcu_check(d, d->MemcpyHtoDAsync(ctx->buf + (CUdeviceptr)off[i],
                                           inputs[i], (size_t)bytes[i], ctx->own_stream), "cuMemcpyHtoDAsync"))
                rc = -3;
    }
    if (rc == 0)
        rc = cvcu_exec(ctx, dptr, dptr + m->n_inputs, syms, ctx->own_stream);
    for (int64_t i = 0; rc == 0 && i < m->n_outputs; i++) {
        int64_t k = m->n_inputs + i;
        if (bytes[k] > 0 && cvcu_check(d, d->MemcpyDtoHAsync(outputs[i], ctx->buf + (CUdeviceptr)off[k],
                                       (size_t)bytes[k], ctx->own_stream), "cuMemcpyDtoHAsync"))
            rc = -3;
    }
    /* A kernel that faulted shows up here. */
    if (cvcu_check(d, d->StreamSynchronize(ctx->own_stream), "cuStreamSynchronize") && rc == 0)
        rc = -3;
    leave(ctx);
    return rc;
}

int cvcu_run_stream(cvcu_ctx *ctx, const void *const *inputs, void *const *outputs,
                    const int64_t *syms, void *stream)
{
    int64_t ext[CVCU_MAX_SYMS];
    syms = extend(ctx->m, syms, ext);
    int rc = enter(ctx);
    if (rc)
        return rc;
    rc = grow(ctx, syms);
    if (rc == 0)
        rc = cvcu_exec(ctx, (void *const *)inputs, outputs, syms,
                       stream ? (CUstream)stream : ctx->own_stream);
    leave(ctx);
    return rc;
}

/* Items [0, n) over blocks of THREADS (a grid-stride loop covers the rest). */
int cvcu_launch_fn(cvcu_ctx *ctx, CUfunction f, int64_t n, void **params, const char *what)
{
    if (ctx->err || n == 0)
        return ctx->err;
    if (!ctx->pack_keep)
        cvcu_pack_forget(ctx);
    int64_t blocks = n < 0 ? 1 : (n + THREADS - 1) / THREADS;
    if (blocks > ctx->max_blocks)
        blocks = ctx->max_blocks;
    const cvcu_driver *d = ctx->drv;
    CUresult r = d->LaunchKernel(f, (unsigned)blocks, 1, 1, n < 0 ? 1 : THREADS, 1, 1, 0,
                                 ctx->stream, params, NULL);
    if (cvcu_check(d, r, what))
        ctx->err = r == CU_ERROR_OUT_OF_MEMORY ? CVCU_E_DEVICE_OOM : CVCU_E_DRIVER;
    return ctx->err;
}

void cvcu_launch(cvcu_ctx *ctx, int64_t kernel, int64_t n, void *const *ptrs, int64_t n_ptrs,
                 const int64_t *syms)
{
    void *params[MAX_PARAMS];
    int64_t items = n < 0 ? 1 : n, np = 0;
    if (n_ptrs + ctx->m->n_syms + 1 > MAX_PARAMS) {
        ctx->err = CVCU_E_DRIVER;
        cvcu_fail(CVCU_E_DRIVER, "kernel %s: too many parameters", ctx->m->kernel_names[kernel]);
        return;
    }
    for (int64_t i = 0; i < n_ptrs; i++)
        params[np++] = (void *)&ptrs[i];
    for (int64_t i = 0; i < ctx->m->n_syms; i++)
        params[np++] = (void *)&syms[i];
    params[np++] = &items;
    cvcu_flush(ctx);
    cvcu_launch_fn(ctx, ctx->kernels[kernel], n, params, ctx->m->kernel_names[kernel]);
}
