/* The cv_cache object, shared by cache.c (look-ups and stores) and
 * admin.c (stats, evict, clear, verify). */
#ifndef CV_CACHE_IMPL_H
#define CV_CACHE_IMPL_H

#include <sys/stat.h>

#include "cache/cache.h"
#include "cache/cas.h"
#include "cache/index.h"
#include "cache/pending.h"
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
    cv_pending pending;    /* owned: index writes hits owe, written in batches */
    bool batch;            /* inside cv_cache_batch_begin/_end */
};

/* One access's index writes: events and counter deltas. */
typedef struct cv_cache_txn {
    cv_index_event ev[2];
    int n_ev;
    cv_index_count cnt[12];
    int n_cnt;
} cv_cache_txn;

void cv_cache_txn_count(cv_cache_txn *a, const char *name, int64_t delta);
void cv_cache_txn_event(cv_cache_txn *a, cv_index_op op, cv_cas_kind kind, const cv_digest *name,
                        uint64_t stored);
/* Records the access: an access that only read (hits, counters) joins the
 * pending queue; one that stored or removed is written at once, together
 * with the queue.  Index trouble becomes a warning in d. */
void cv_cache_txn_commit(cv_cache *c, cv_cache_txn *a, cv_diag *d);
/* Writes the pending queue (before reading the index). */
void cv_cache_flush(cv_cache *c, cv_diag *d);

/* The file-hash memo (memo.c).  FRESH: the row describes the file as it is
 * now and was recorded well after the file last changed; RACY: the stat
 * data match but the file changed too close to the recording for them to
 * prove anything (the caller re-checks the bytes); STALE: no row, or the
 * file changed. */
typedef enum cv_memo_state { CV_MEMO_STALE = 0, CV_MEMO_FRESH, CV_MEMO_RACY } cv_memo_state;

cv_memo_state cv_cache_memo_lookup(cv_cache *c, const char *path, const struct stat *st,
                                   cv_index_memo *m);
/* Queues a row: path, as `st` shows it, holds bytes with these hashes.
 * seen_ns: wall-clock time when that was known, taken before the stat
 * (what makes a later change in the same timestamp tick show as racy). */
void cv_cache_memo_record(cv_cache *c, const char *path, const struct stat *st, uint64_t xxh3,
                          const cv_digest *sha, int64_t seen_ns);

/* Counter names in the index. */
#define CV_CTR_EVICTED_THEN_REQUESTED "evicted_then_requested"
#define CV_CTR_CORRUPT "corrupt"

/* Largest entry a look-up reads back. */
#define CV_CACHE_MAX_ENTRY ((size_t)8 << 30)

/* One store split in two (cache.c): persist names the bytes (SHA-256 of a
 * blob; an action entry's name is given) and writes them into the local
 * store unless present; it is safe to run from several threads at once.
 * record then reports, indexes and uploads, one put at a time. */
typedef struct cv_cache_put {
    cv_cas_kind kind;
    const void *data;   /* not owned */
    size_t len;
    cv_digest name;     /* in for an action entry, out for a blob */
    bool had;           /* the store held it already */
    uint64_t stored;    /* bytes on disk */
    int rc;             /* the local write's outcome */
    cv_diag diag;       /* the local write's trouble (owned; record demotes it) */
} cv_cache_put;
void cv_cache_store_persist(cv_cache *c, cv_cache_put *p);
int cv_cache_store_record(cv_cache *c, cv_cache_put *p, cv_diag *d);

/* Evicts down to 90% of the limit when the store has grown past it. */
int cv_cache_enforce_limit(cv_cache *c, cv_diag *d);

#endif
