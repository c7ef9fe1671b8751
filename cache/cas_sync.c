/* The queue of files written in a batch and not yet synced (cas_sync.h). */
#include "cache/cas_sync.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

enum {
    QUEUE_MAX = 256,  /* open files a batch may hold before its writers sync themselves */
    SYNC_THREADS = 8, /* fsyncs in flight at once */
};

struct cv_cas_syncq {
    pthread_mutex_t mu;
    int fds[QUEUE_MAX];
    int n;
};

cv_cas_syncq *cv_cache_syncq_new(void)
{
    cv_cas_syncq *q = calloc(1, sizeof *q);
    if (q && pthread_mutex_init(&q->mu, NULL) != 0) {
        free(q);
        q = NULL;
    }
    return q;
}

int cv_cache_syncq_add(cv_cas_syncq *q, int fd)
{
    pthread_mutex_lock(&q->mu);
    int ok = q->n < QUEUE_MAX;
    if (ok)
        q->fds[q->n++] = fd;
    pthread_mutex_unlock(&q->mu);
    return ok ? 0 : -1;
}

/* One thread's share: every stride-th file from first. */
typedef struct sync_share {
    const int *fds;
    int n, first, stride;
    int err;
} sync_share;

static void *sync_files(void *arg)
{
    sync_share *s = arg;
    for (int i = s->first; i < s->n; i += s->stride)
        if (fsync(s->fds[i]) != 0 && !s->err)
            s->err = errno;
    return NULL;
}

int cv_cache_syncq_run(cv_cas_syncq *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->n;
    int fds[QUEUE_MAX];
    for (int i = 0; i < n; i++)
        fds[i] = q->fds[i];
    q->n = 0;
    pthread_mutex_unlock(&q->mu);
    int k = n < SYNC_THREADS ? n : SYNC_THREADS;
    sync_share share[SYNC_THREADS];
    pthread_t th[SYNC_THREADS];
    bool started[SYNC_THREADS] = {false};
    for (int j = 0; j < k; j++) {
        share[j] = (sync_share){.fds = fds, .n = n, .first = j, .stride = k};
        if (j > 0)
            started[j] = pthread_create(&th[j], NULL, sync_files, &share[j]) == 0;
    }
    if (k > 0)
        sync_files(&share[0]);
    int err = k > 0 ? share[0].err : 0;
    for (int j = 1; j < k; j++) {
        if (started[j])
            pthread_join(th[j], NULL);
        else
            sync_files(&share[j]);
        if (!err)
            err = share[j].err;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return err;
}

void cv_cache_syncq_free(cv_cas_syncq *q)
{
    if (!q)
        return;
    cv_cache_syncq_run(q);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
