/* Buffers for requests' tensors, kept after use: a request at a shape
 * already seen takes a block another request gave back instead of asking
 * malloc, so the steady state allocates nothing per request (issue 32).
 * Blocks are 64-byte aligned (the runtime's vector loads); each carries
 * its capacity in a header just before it.  Misses are counted for
 * /metrics (cuvil_model_buffer_allocations_total). */
#include "serve/serve_internal.h"

#include <stdlib.h>
#include <string.h>

enum { HDR = 64 };

void sv_pool_init(sv_pool *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

void sv_pool_destroy(sv_pool *p)
{
    for (int i = 0; i < p->n; i++)
        free((char *)p->free[i] - HDR);
    pthread_mutex_destroy(&p->mu);
}

static size_t cap_of(const void *b)
{
    size_t c;
    memcpy(&c, (const char *)b - HDR, sizeof c);
    return c;
}

/* The smallest free block of at least n bytes, and at most 4n so that a
 * tiny request does not take a large block; else a new one. */
void *sv_pool_get(sv_pool *p, size_t n)
{
    n = n ? n : 1;
    pthread_mutex_lock(&p->mu);
    int best = -1;
    for (int i = 0; i < p->n; i++) {
        size_t c = cap_of(p->free[i]);
        if (c >= n && c / 4 <= n && (best < 0 || c < cap_of(p->free[best])))
            best = i;
    }
    void *b = NULL;
    if (best >= 0) {
        b = p->free[best];
        p->free[best] = p->free[--p->n];
    } else {
        p->allocs++;
    }
    pthread_mutex_unlock(&p->mu);
    if (b)
        return b;
    size_t cap = (n + HDR - 1) / HDR * HDR;
    if (cap < n || cap > SIZE_MAX - HDR)
        return NULL;
    char *raw = aligned_alloc(HDR, cap + HDR);
    if (!raw)
        return NULL;
    memcpy(raw, &cap, sizeof cap);
    return raw + HDR;
}

/* Back to the pool; past SV_POOL_MAX kept blocks, the smallest goes. */
void sv_pool_put(sv_pool *p, void *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->n == SV_POOL_MAX) {
        int small = 0;
        for (int i = 1; i < p->n; i++)
            if (cap_of(p->free[i]) < cap_of(p->free[small]))
                small = i;
        if (cap_of(p->free[small]) < cap_of(b)) {
            void *gone = p->free[small];
            p->free[small] = b;
            b = gone;
        }
    } else {
        p->free[p->n++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (b)
        free((char *)b - HDR);
}

void sv_pool_count(sv_pool *p, uint64_t k)
{
    pthread_mutex_lock(&p->mu);
    p->allocs += k;
    pthread_mutex_unlock(&p->mu);
}

uint64_t sv_pool_allocs(sv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t n = p->allocs;
    pthread_mutex_unlock(&p->mu);
    return n;
}
