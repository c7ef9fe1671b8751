/* Runs replayed as a CUDA graph.  A small model's run is tens of short
 * kernels whose launch calls (and the gaps between kernels on the GPU)
 * cost more than the kernels themselves; one cuGraphLaunch replays them
 * all.  A run's launches depend only on its device addresses (inputs,
 * outputs, the arena and staging buffer, the channels-last packed-input
 * buffers) and its symbol values, so that is the key a graph is kept under:
 *   - a run with a new key runs directly (growing every buffer it needs);
 *   - the next run with the same key is captured, instantiated, launched;
 *   - the runs after it launch that graph only.
 * (Each run picks the packed-input buffers in the same order, cuhost.c, so
 * the captured run needs no buffer the first one did not grow.)
 * Capture happens on the context's own stream in thread-local mode, so
 * work of other threads goes on undisturbed, and the graph is launched on
 * the run's stream (a graph belongs to no stream).  Anything unexpected
 * while capturing (a driver without graphs, a failed capture or
 * instantiation, a buffer regrown during the capture) runs the run directly
 * and turns graphs off for the context: never worse than without them.
 * CUVIL_CUDA_GRAPH=0 turns them off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/host/cuhost_internal.h"

void cvcu_graph_init(cvcu_ctx *ctx)
{
    const char *env = getenv("CUVIL_CUDA_GRAPH");
    ctx->graph.on = ctx->drv->GraphLaunch != NULL && !(env && strcmp(env, "0") == 0);
}

static void drop(cvcu_ctx *ctx)
{
    if (ctx->graph.exec)
        ctx->drv->GraphExecDestroy(ctx->graph.exec);
    ctx->graph.exec = NULL;
    ctx->graph.key_len = 0;
}

void cvcu_graph_free(cvcu_ctx *ctx)
{
    drop(ctx);
}

static uint64_t addr(const void *p) { return (uint64_t)(uintptr_t)p; }

/* The run's key in key[]; its length, or -1 when it does not fit (then the
 * run is not replayed). */
static int64_t make_key(const cvcu_ctx *ctx, void *const *din, void *const *dout,
                        const int64_t *syms, uint64_t *key)
{
    const cvcu_model *m = ctx->m;
    int64_t n = 0;
    if (m->n_inputs + m->n_outputs + m->n_syms + 1 + CVCU_PACKS > CVCU_GRAPH_KEY_MAX)
        return -1;
    for (int64_t i = 0; i < m->n_inputs; i++)
        key[n++] = addr(din[i]);
    for (int64_t i = 0; i < m->n_outputs; i++)
        key[n++] = addr(dout[i]);
    for (int64_t i = 0; i < m->n_syms; i++)
        key[n++] = (uint64_t)syms[i];
    key[n++] = ctx->buf;
    for (int i = 0; i < CVCU_PACKS; i++)
        key[n++] = ctx->pack[i].buf;
    return n;
}

static int same_key(const cvcu_ctx *ctx, const uint64_t *key, int64_t n)
{
    return n > 0 && n == ctx->graph.key_len &&
           memcmp(key, ctx->graph.key, (size_t)n * sizeof *key) == 0;
}

/* Whether the caller is capturing `stream` into a graph of its own: then
 * the launches go straight into it (a capture cannot nest). */
static int caller_capturing(const cvcu_ctx *ctx, CUstream stream)
{
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (stream == ctx->own_stream)
        return 0;
    /* A status we cannot read: launch directly, as into a capture. */
    return ctx->drv->StreamIsCapturing(stream, &status) != 0 ||
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Captures the run's launches on the context's own stream and
 * instantiates them into ctx->graph.exec; 0 when it is ready to launch.
 * Nothing runs on the device either way, and this thread's last error is
 * left as it was (a failed capture is not the run's failure: the direct run
 * that follows tells). */
static int capture(cvcu_ctx *ctx, void *const *din, void *const *dout, const int64_t *syms,
                   const uint64_t *key, int64_t n)
{
    const cvcu_driver *d = ctx->drv;
    CUstream s = ctx->own_stream;
    const char *msg;
    char saved[1024];
    int code = cvcu_last_error(&msg);
    snprintf(saved, sizeof saved, "%s", msg);
    if (d->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != 0)
        return -1;
    int rc = cvcu_exec_direct(ctx, din, dout, syms, s);
    CUgraph graph = NULL;
    CUresult r = d->StreamEndCapture(s, &graph);
    uint64_t after[CVCU_GRAPH_KEY_MAX];
    /* A buffer regrown while capturing leaves the graph on a freed one. */
    int moved = make_key(ctx, din, dout, syms, after) != n ||
                memcmp(after, key, (size_t)n * sizeof *key) != 0;
    if (rc == 0 && r == 0 && graph && !moved &&
        d->GraphInstantiateWithFlags(&ctx->graph.exec, graph, 0) != 0)
        ctx->graph.exec = NULL;
    if (graph)
        d->GraphDestroy(graph);
    cvcu_error_restore(code, saved);
    return ctx->graph.exec ? 0 : -1;
}

static int launch(cvcu_ctx *ctx, CUstream stream)
{
    const cvcu_driver *d = ctx->drv;
    CUresult r = d->GraphLaunch(ctx->graph.exec, stream);
    if (cvcu_check(d, r, "cuGraphLaunch")) {
        drop(ctx);
        return r == CU_ERROR_OUT_OF_MEMORY ? -2 : -3;
    }
    return 0;
}

int cvcu_exec(cvcu_ctx *ctx, void *const *din, void *const *dout, const int64_t *syms,
              CUstream stream)
{
    uint64_t key[CVCU_GRAPH_KEY_MAX];
    int64_t n = ctx->graph.on ? make_key(ctx, din, dout, syms, key) : -1;
    if (n < 0 || caller_capturing(ctx, stream))
        return cvcu_exec_direct(ctx, din, dout, syms, stream);
    if (same_key(ctx, key, n)) {
        if (ctx->graph.exec || capture(ctx, din, dout, syms, key, n) == 0)
            return launch(ctx, stream);
        ctx->graph.on = 0;
    }
    drop(ctx);
    int rc = cvcu_exec_direct(ctx, din, dout, syms, stream);
    /* Keyed after the run: it may have grown the pack buffer. */
    if (rc == 0 && ctx->graph.on)
        ctx->graph.key_len = make_key(ctx, din, dout, syms, ctx->graph.key);
    return rc;
}
