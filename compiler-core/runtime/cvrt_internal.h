/* Internal to the runtime: the context layout and the task-level pool API
 * that the GEMM and convolution code share. */
#ifndef CVRT_INTERNAL_H
#define CVRT_INTERNAL_H

#include <stdatomic.h>

#include "compiler-core/runtime/cvrt.h"
#include "compiler-core/runtime/cvrt_sys.h"

#define CVRT_MAX_THREADS 256

/* A unit of parallel work: items [lo, hi) run on thread tid (0 = caller). */
typedef void (*cvrt_task_fn)(void *arg, int64_t lo, int64_t hi, int tid);

struct cvrt_ctx {
    int nthreads;
    cvrt_thread_t *threads;     /* owned: nthreads - 1 workers */
    struct cvrt_worker *workers;    /* owned: their start arguments */
    cvrt_mutex mu;
    cvrt_cond wake;
    int sleepers;               /* under mu */
    _Atomic int stop;           /* announced by bumping gen */
    /* The current job, written by the caller before gen is bumped. */
    cvrt_task_fn task;
    void *arg;
    int64_t n, chunk, nchunks;
    /* Chunks are claimed from one word: the job's generation (bits 32-63),
     * its chunk count (16-31) and the next unclaimed chunk (0-15); a thread
     * still holding an older generation can claim nothing. */
    _Atomic uint64_t claim;
    _Atomic int64_t done;       /* chunks of the current job finished */
    _Atomic int running;        /* workers that have started */
    _Atomic unsigned gen;
    /* Memory. */
    char *arena;                /* owned, 64-byte aligned */
    int64_t arena_cap;
    float **pack_a;             /* owned: one packed A block per thread */
    float **pack_b;             /* owned: one packed B block per thread */
    const void *weights;        /* the caller's: an artifact's weights file (--weights-file) */
    /* cuvil bench --profile: nanoseconds per kernel index, the caller's
     * (NULL: off, and a launch pays one load and branch). */
    uint64_t *prof;
    int64_t n_prof;
};

/* Runs task over [0, n) in chunks of `chunk` items on every thread. */
void cvrt_parallel(cvrt_ctx *rt, int64_t n, int64_t chunk, cvrt_task_fn task, void *arg);
/* Allocates the GEMM packing buffers (called by cvrt_create). */
int cvrt_gemm_init(cvrt_ctx *rt);
void cvrt_gemm_fini(cvrt_ctx *rt);

static inline int64_t cvrt_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cvrt_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t cvrt_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
