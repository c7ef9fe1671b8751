/* The queue of files written in a batch and not yet synced (cas_sync.h). */
#include "cache/cas_sync.h"
#include "cache/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    QUEUE_MAX = 256,  /* open files a batch may hold before its writers sync themselves */
    SYNC_THREADS = 8, /* fsyncs in flight at once */
};

struct cv_cas_syncq {
    pthread_mutex_t mu;
    int fds[QUEUE_MAX];
    char *paths[QUEUE_MAX]; /* each owned */
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

int cv_cache_syncq_add(cv_cas_syncq *q, int fd, const char *path)
{
    char *copy = strdup(path);
    pthread_mutex_lock(&q->mu);
    int ok = copy && q->n < QUEUE_MAX;
    if (ok) {
        q->fds[q->n] = fd;
        q->paths[q->n++] = copy;
    }
    pthread_mutex_unlock(&q->mu);
    if (!ok)
        free(copy);
    return ok ? 0 : -1;
}

static int sync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;
    int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

/* The files to sync, by descriptor or (fds NULL) by path, and the errno
 * of a failure (0 while none failed). */
typedef struct sync_set {
    const int *fds;
    char *const *paths;
    atomic_int err;
} sync_set;

static void sync_one(void *ctx, int i)
{
    sync_set *s = ctx;
    int e = s->fds ? (fsync(s->fds[i]) == 0 ? 0 : errno) : sync_path(s->paths[i]);
    int none = 0;
    if (e)
        atomic_compare_exchange_strong(&s->err, &none, e);
}

static int sync_all(const int *fds, char *const *paths, int n)
{
    sync_set s = {.fds = fds, .paths = paths};
    atomic_init(&s.err, 0);
    cv_cache_parallel(n, SYNC_THREADS, sync_one, &s);
    return atomic_load(&s.err);
}

/* Empties the queue into the caller's arrays. */
static int take(cv_cas_syncq *q, int *fds, char **paths)
{
    pthread_mutex_lock(&q->mu);
    int n = q->n;
    memcpy(fds, q->fds, (size_t)n * sizeof *fds);
    memcpy(paths, q->paths, (size_t)n * sizeof *paths);
    q->n = 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int cv_cache_syncq_run(cv_cas_syncq *q)
{
    int fds[QUEUE_MAX];
    char *paths[QUEUE_MAX];
    int n = take(q, fds, paths);
    int err = sync_all(fds, NULL, n);
    for (int i = 0; i < n; i++) {
        close(fds[i]);
        free(paths[i]);
    }
    return err;
}

int cv_cache_syncq_detach(cv_cas_syncq *q, char ***out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    char **paths = malloc(QUEUE_MAX * sizeof *paths); /* handed to the caller */
    if (!paths) {
        cv_cache_syncq_run(q);
        return -1;
    }
    int fds[QUEUE_MAX];
    int n = take(q, fds, paths);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    *out = paths;
    *n_out = n;
    return 0;
}

int cv_cache_syncq_paths(char *const *paths, int n)
{
    return sync_all(NULL, paths, n);
}

void cv_cache_syncq_free(cv_cas_syncq *q)
{
    if (!q)
        return;
    cv_cache_syncq_run(q);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
