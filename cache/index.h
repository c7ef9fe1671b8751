/* index.sqlite: what the store holds (size, last use, hits) for LRU
 * eviction, which entries were evicted (to count evicted-then-requested),
 * the statistics counters, the file-hash memo and the key manifests that
 * `cache explain` compares against.  WAL mode with a busy timeout: many
 * processes share one index.  Every call is serialised by a mutex. */
#ifndef CV_CACHE_INDEX_H
#define CV_CACHE_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cas.h"

typedef struct cv_index cv_index;

/* PUT: stored (size, last use); HIT: used; REMOVE: gone; ENSURE: add a row
 * only when there is none (verify re-indexing files). */
typedef enum cv_index_op { CV_IDX_PUT, CV_IDX_HIT, CV_IDX_REMOVE, CV_IDX_ENSURE } cv_index_op;

typedef struct cv_index_event {
    cv_index_op op;
    cv_cas_kind kind;
    cv_digest name;
    uint64_t stored;  /* PUT, HIT: bytes on disk */
    int64_t at_us;    /* wall clock */
    uint32_t hits;    /* HIT: how many (0 counts as 1) */
} cv_index_event;

typedef struct cv_index_count {
    const char *name;
    int64_t delta;
} cv_index_count;

int cv_cache_index_open(const char *dir, cv_index **out, cv_diag *d);
void cv_cache_index_close(cv_index *ix);

/* Applies the events and the counter deltas in one transaction. */
int cv_cache_index_apply(cv_index *ix, const cv_index_event *ev, int n_ev,
                         const cv_index_count *cnt, int n_cnt, cv_diag *d);
int cv_cache_index_was_evicted(cv_index *ix, cv_cas_kind kind, const cv_digest *name,
                               bool *out, cv_diag *d);
/* Indexed by cv_cas_kind. */
int cv_cache_index_totals(cv_index *ix, uint64_t bytes[2], uint64_t entries[2], cv_diag *d);
int cv_cache_index_counters(cv_index *ix, void (*fn)(void *ctx, const char *name, int64_t v),
                            void *ctx, cv_diag *d);
int cv_cache_index_zero_counters(cv_index *ix, cv_diag *d);

/* Removes least-recently-used entries (file and row) until the store holds
 * at most max_bytes; remembers what it evicted. */
int cv_cache_index_evict(cv_index *ix, cv_cas *cas, uint64_t max_bytes, uint64_t *n_evicted,
                         uint64_t *bytes_freed, cv_diag *d);
/* Forgets every entry and manifest (counters stay). */
int cv_cache_index_clear(cv_index *ix, cv_diag *d);
/* Calls fn for every indexed entry (fn must not call back into the index). */
int cv_cache_index_rows(cv_index *ix,
                        void (*fn)(void *ctx, cv_cas_kind kind, const cv_digest *name,
                                   uint64_t stored),
                        void *ctx, cv_diag *d);

/* The file-hash memo. */
typedef struct cv_index_memo {
    uint64_t size, ino, dev;
    int64_t mtime_ns, ctime_ns;
    uint64_t xxh3;
    cv_digest sha;
    int64_t recorded_ns; /* when the hashes were taken */
} cv_index_memo;

int cv_cache_index_memo_get(cv_index *ix, const char *path, cv_index_memo *out, cv_diag *d);
int cv_cache_index_memo_put(cv_index *ix, const char *path, const cv_index_memo *m, cv_diag *d);

typedef struct cv_index_memo_row {
    const char *path;
    cv_index_memo m;
} cv_index_memo_row;

/* Events, counter deltas and memo rows in one transaction (what a process
 * has gathered since its last write: see cache/pending.h). */
typedef struct cv_index_batch {
    const cv_index_event *ev;
    int n_ev;
    const cv_index_count *cnt;
    int n_cnt;
    const cv_index_memo_row *memo;
    int n_memo;
} cv_index_batch;

int cv_cache_index_apply_batch(cv_index *ix, const cv_index_batch *b, cv_diag *d);

/* Key manifests by level and key (dropped when their entry is evicted). */
int cv_cache_index_manifest_put(cv_index *ix, int level, const cv_digest *key,
                                const char *manifest, cv_diag *d);
/* 1 and *out (malloc'd) = the closest stored manifest, or 0 when none. */
int cv_cache_index_manifest_closest(cv_index *ix, int level, const char *manifest, char **out,
                                    cv_diag *d);

#endif
