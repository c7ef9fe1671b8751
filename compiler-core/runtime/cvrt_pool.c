/* The thread pool and the arena.  Workers spin briefly on a generation
 * counter between jobs (kernels of one run follow each other within
 * microseconds) and then sleep on a condition variable, so an idle artifact
 * costs no CPU. */
#include "compiler-core/runtime/cvrt_internal.h"

enum { SPIN_ROUNDS = 20000 };

typedef struct cvrt_worker {
    cvrt_ctx *rt;
    int tid;
} cvrt_worker;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static void run_chunks(cvrt_ctx *rt, int tid)
{
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&rt->next, 1, memory_order_relaxed);
        if (c >= rt->nchunks)
            return;
        int64_t lo = c * rt->chunk;
        rt->task(rt->arg, lo, cvrt_min(rt->n, lo + rt->chunk), tid);
    }
}

/* Waits until gen moves past `seen`; returns the new generation. */
static unsigned wait_job(cvrt_ctx *rt, unsigned seen)
{
    for (int spins = 0;; spins++) {
        unsigned g = atomic_load_explicit(&rt->gen, memory_order_acquire);
        if (g != seen)
            return g;
        if (spins < SPIN_ROUNDS) {
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&rt->mu);
        rt->sleepers++;
        while (atomic_load_explicit(&rt->gen, memory_order_acquire) == seen)
            pthread_cond_wait(&rt->wake, &rt->mu);
        rt->sleepers--;
        pthread_mutex_unlock(&rt->mu);
        spins = 0;
    }
}

static void *worker_main(void *p)
{
    cvrt_worker *w = p;
    cvrt_ctx *rt = w->rt;
    unsigned seen = 0;
    for (;;) {
        seen = wait_job(rt, seen);
        if (atomic_load_explicit(&rt->stop, memory_order_acquire))
            return 0;
        run_chunks(rt, w->tid);
        atomic_fetch_sub_explicit(&rt->active, 1, memory_order_release);
    }
}

static void announce(cvrt_ctx *rt)
{
    atomic_fetch_add_explicit(&rt->gen, 1, memory_order_release);
    pthread_mutex_lock(&rt->mu);
    if (rt->sleepers)
        pthread_cond_broadcast(&rt->wake);
    pthread_mutex_unlock(&rt->mu);
}

void cvrt_parallel(cvrt_ctx *rt, int64_t n, int64_t chunk, cvrt_task_fn task, void *arg)
{
    if (n <= 0)
        return;
    if (chunk < 1)
        chunk = 1;
    if (rt->nthreads == 1 || n <= chunk) {
        task(arg, 0, n, 0);
        return;
    }
    rt->task = task;
    rt->arg = arg;
    rt->n = n;
    rt->chunk = chunk;
    rt->nchunks = cvrt_cdiv(n, chunk);
    atomic_store_explicit(&rt->next, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->active, rt->nthreads - 1, memory_order_relaxed);
    announce(rt);
    run_chunks(rt, 0);
    while (atomic_load_explicit(&rt->active, memory_order_acquire) > 0)
        cpu_relax();
}

typedef struct launch_arg {
    cvrt_ctx *rt;
    cvrt_kernel_fn fn;
    void *const *bufs;
    const int64_t *syms;
} launch_arg;

static void launch_task(void *p, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    launch_arg *a = p;
    a->fn(a->rt, a->bufs, a->syms, lo, hi);
}

void cvrt_launch(cvrt_ctx *rt, int64_t n, int64_t grain, cvrt_kernel_fn fn,
                 void *const *bufs, const int64_t *syms)
{
    if (n <= 0)
        return;
    if (rt->nthreads == 1 || n <= grain) {
        fn(rt, bufs, syms, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven items without much traffic. */
    int64_t chunk = cvrt_max(grain, cvrt_cdiv(n, 4 * (int64_t)rt->nthreads));
    launch_arg a = {rt, fn, bufs, syms};
    cvrt_parallel(rt, n, chunk, launch_task, &a);
}

int cvrt_threads(const cvrt_ctx *rt)
{
    return rt->nthreads;
}

char *cvrt_arena(cvrt_ctx *rt, int64_t bytes)
{
    static _Alignas(64) char empty[64];
    if (bytes <= 0)
        return rt->arena ? rt->arena : empty;
    if (bytes <= rt->arena_cap)
        return rt->arena;
    void *p = 0;
    if (posix_memalign(&p, 64, (size_t)bytes))
        return 0;
    free(rt->arena);
    rt->arena = p;
    rt->arena_cap = bytes;
    return rt->arena;
}

static void stop_workers(cvrt_ctx *rt, int started)
{
    atomic_store_explicit(&rt->stop, 1, memory_order_release);
    announce(rt);
    for (int i = 0; i < started; i++)
        pthread_join(rt->threads[i], 0);
}

static int start_workers(cvrt_ctx *rt)
{
    int n = rt->nthreads - 1;
    rt->threads = calloc((size_t)(n ? n : 1), sizeof *rt->threads);
    rt->workers = calloc((size_t)(n ? n : 1), sizeof *rt->workers);
    if (!rt->threads || !rt->workers)
        return -1;
    for (int i = 0; i < n; i++) {
        rt->workers[i] = (cvrt_worker){rt, i + 1};
        if (pthread_create(&rt->threads[i], 0, worker_main, &rt->workers[i])) {
            stop_workers(rt, i);
            return -1;
        }
    }
    return 0;
}

cvrt_ctx *cvrt_create(int threads)
{
    cvrt_ctx *rt = calloc(1, sizeof *rt);
    if (!rt)
        return 0;
    rt->nthreads = threads < 1 ? 1 : threads > CVRT_MAX_THREADS ? CVRT_MAX_THREADS : threads;
    pthread_mutex_init(&rt->mu, 0);
    pthread_cond_init(&rt->wake, 0);
    if (cvrt_gemm_init(rt) || start_workers(rt)) {
        cvrt_gemm_fini(rt);
        free(rt->threads);
        free(rt->workers);
        pthread_cond_destroy(&rt->wake);
        pthread_mutex_destroy(&rt->mu);
        free(rt);
        return 0;
    }
    return rt;
}

void cvrt_destroy(cvrt_ctx *rt)
{
    if (!rt)
        return;
    stop_workers(rt, rt->nthreads - 1);
    cvrt_gemm_fini(rt);
    free(rt->threads);
    free(rt->workers);
    free(rt->arena);
    pthread_cond_destroy(&rt->wake);
    pthread_mutex_destroy(&rt->mu);
    free(rt);
}
