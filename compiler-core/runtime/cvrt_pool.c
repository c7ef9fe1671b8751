/* The thread pool and the arena.  Workers spin briefly on a generation
 * counter between jobs (kernels of one run follow each other within
 * microseconds), yield the core a few hundred times, and then sleep on a
 * condition variable, so an idle artifact costs no CPU.  The caller waits
 * for the chunks, not for the workers: a worker that is not running
 * (asleep, or descheduled on a busy machine) when a job comes simply finds
 * every chunk claimed, so a job never waits for a thread that took no part
 * in it. */
#include "compiler-core/runtime/cvrt_internal.h"

enum { YIELD_SPINS = 4000, YIELDS = 400, MAX_CHUNKS = 0xffff };

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

/* Runs chunks of job `gen` until none is left (or a newer job replaced
 * it).  A successful claim proves the job is live (it cannot end before
 * the claimed chunk does), so its fields are read only after one. */
static void run_chunks(cvrt_ctx *rt, unsigned gen, int tid)
{
    for (;;) {
        uint64_t v = atomic_load_explicit(&rt->claim, memory_order_acquire);
        do {
            if ((unsigned)(v >> 32) != gen || (v & 0xffff) >= ((v >> 16) & 0xffff))
                return;
        } while (!atomic_compare_exchange_weak_explicit(&rt->claim, &v, v + 1,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire));
        int64_t lo = (int64_t)(v & 0xffff) * rt->chunk;
        rt->task(rt->arg, lo, cvrt_min(rt->n, lo + rt->chunk), tid);
        atomic_fetch_add_explicit(&rt->done, 1, memory_order_release);
    }
}

/* Waits until gen moves past `seen`; returns the new generation. */
static unsigned wait_job(cvrt_ctx *rt, unsigned seen)
{
    for (int spins = 0;; spins++) {
        unsigned g = atomic_load_explicit(&rt->gen, memory_order_acquire);
        if (g != seen)
            return g;
        if (spins < YIELD_SPINS) {
            cpu_relax();
            continue;
        }
        /* Then yield: on a busy machine the thread this one waits for may
         * be queued behind it on this core. */
        if (spins < YIELD_SPINS + YIELDS) {
            sched_yield();
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
    atomic_fetch_add_explicit(&rt->running, 1, memory_order_release);
    for (;;) {
        seen = wait_job(rt, seen);
        if (atomic_load_explicit(&rt->stop, memory_order_acquire))
            return 0;
        run_chunks(rt, seen, w->tid);
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
    chunk = cvrt_max(chunk, cvrt_cdiv(n, MAX_CHUNKS));
    rt->task = task;
    rt->arg = arg;
    rt->n = n;
    rt->chunk = chunk;
    rt->nchunks = cvrt_cdiv(n, chunk);
    unsigned gen = atomic_load_explicit(&rt->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&rt->done, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->claim, (uint64_t)gen << 32 | (uint64_t)rt->nchunks << 16,
                          memory_order_release);
    announce(rt);
    run_chunks(rt, gen, 0);
    /* A chunk still running after a long spin is usually on a worker that
     * another process's thread displaced: yielding lends it this core. */
    for (int spins = 0; atomic_load_explicit(&rt->done, memory_order_acquire) < rt->nchunks;
         spins++) {
        if (spins < YIELD_SPINS)
            cpu_relax();
        else
            sched_yield();
    }
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

void cvrt_set_weights(cvrt_ctx *rt, const void *w)
{
    rt->weights = w;
}

const char *cvrt_weights(const cvrt_ctx *rt)
{
    return rt->weights;
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
    /* Every worker is up before the first job: with jobs that need no
     * worker, one could otherwise be joined at destroy before it ever ran,
     * and in sanitized test processes LeakSanitizer's tracer then crashed
     * at exit. */
    while (atomic_load_explicit(&rt->running, memory_order_acquire) < rt->nthreads - 1)
        cpu_relax();
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
