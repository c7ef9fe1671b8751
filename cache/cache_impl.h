/* The cv_cache object, shared by cache.c (look-ups and stores) and
 * admin.c (stats, evict, clear, verify). */
#ifndef CV_CACHE_IMPL_H
#define CV_CACHE_IMPL_H

#include "cache/cache.h"
#include "cache/cas.h"
#include "cache/index.h"
#include "cache/remote.h"

struct cv_cache {
    bool disabled;
    char *dir;             /* owned */
    cv_cas *cas;           /* owned */
    cv_index *ix;          /* owned */
    cv_remote *remote;     /* owned; NULL when there is none */
    uint64_t max_size;
    int64_t racy_ns;
    bool remote_warned;    /* one warning per process for a failing remote */
    cv_remote_stats remote_seen; /* remote counters already written to the index */
};

/* Counter names in the index. */
#define CV_CTR_EVICTED_THEN_REQUESTED "evicted_then_requested"
#define CV_CTR_CORRUPT "corrupt"

/* Largest entry a look-up reads back. */
#define CV_CACHE_MAX_ENTRY ((size_t)8 << 30)

/* Evicts down to 90% of the limit when the store has grown past it. */
int cv_cache_enforce_limit(cv_cache *c, cv_diag *d);

#endif
