/* Running one function over many items from a few threads (internal.h). */
#include "cache/internal.h"

#include <pthread.h>
#include <stdbool.h>

enum { MAX_THREADS = 16 };

typedef struct share {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n, first, stride;
} share;

static void *run_share(void *arg)
{
    const share *s = arg;
    for (int i = s->first; i < s->n; i += s->stride)
        s->fn(s->ctx, i);
    return NULL;
}

void cv_cache_parallel(int n, int max_threads, void (*fn)(void *ctx, int i), void *ctx)
{
    int k = max_threads < MAX_THREADS ? max_threads : MAX_THREADS;
    k = n < k ? n : k;
    share sh[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (int j = 0; j < k; j++) {
        sh[j] = (share){.fn = fn, .ctx = ctx, .n = n, .first = j, .stride = k};
        if (j > 0)
            started[j] = pthread_create(&th[j], NULL, run_share, &sh[j]) == 0;
    }
    if (k > 0)
        run_share(&sh[0]);
    for (int j = 1; j < k; j++) {
        if (started[j])
            pthread_join(th[j], NULL);
        else
            run_share(&sh[j]);
    }
}
