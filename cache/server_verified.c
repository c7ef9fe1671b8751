/* Which raw entries the server has already verified.  Entries are written
 * once (temp file + rename) and never changed in place, so a file with the
 * same identity (device, inode, size, mtime, ctime) that passed its XXH3
 * check can be sent again straight from the page cache (sendfile) without
 * re-reading it.  A rewritten or replaced file has a new identity and is
 * checked again; a fixed-size table forgets old entries. */
#include "cache/server_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

enum { STRIPES = 64 };

typedef struct slot {
    uint64_t dev, ino, stored;
    int64_t mtime_ns, ctime_ns;
    cv_digest name;
    bool used;
} slot;

struct cv_srv_verified {
    slot *v;       /* owned */
    size_t n;      /* a power of two */
    pthread_mutex_t mu[STRIPES];
};

cv_srv_verified *cv_cache_srv_verified_new(size_t slots)
{
    cv_srv_verified *t = calloc(1, sizeof *t);
    size_t n = 1;
    while (n < slots)
        n <<= 1;
    if (!t || !(t->v = calloc(n, sizeof *t->v))) {
        free(t);
        return NULL;
    }
    t->n = n;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&t->mu[i], NULL);
    return t;
}

void cv_cache_srv_verified_free(cv_srv_verified *t)
{
    if (!t)
        return;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&t->mu[i]);
    free(t->v);
    free(t);
}

static slot key_of(const cv_cas_entry *e)
{
    return (slot){e->dev, e->ino, e->stored, e->mtime_ns, e->ctime_ns, e->name, true};
}

static size_t index_of(const cv_srv_verified *t, const slot *k)
{
    return (size_t)XXH3_64bits(k->name.b, sizeof k->name.b) & (t->n - 1);
}

bool cv_cache_srv_verified_has(cv_srv_verified *t, const cv_cas_entry *e)
{
    slot k = key_of(e);
    size_t i = index_of(t, &k);
    pthread_mutex_lock(&t->mu[i % STRIPES]);
    const slot *s = &t->v[i];
    bool hit = s->used && s->dev == k.dev && s->ino == k.ino && s->stored == k.stored &&
               s->mtime_ns == k.mtime_ns && s->ctime_ns == k.ctime_ns &&
               cv_cache_digest_eq(&s->name, &k.name);
    pthread_mutex_unlock(&t->mu[i % STRIPES]);
    return hit;
}

void cv_cache_srv_verified_add(cv_srv_verified *t, const cv_cas_entry *e)
{
    slot k = key_of(e);
    size_t i = index_of(t, &k);
    pthread_mutex_lock(&t->mu[i % STRIPES]);
    t->v[i] = k;
    pthread_mutex_unlock(&t->mu[i % STRIPES]);
}
