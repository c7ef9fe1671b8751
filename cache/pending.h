/* What a cache hit owes the index (last use and hit count of the entries
 * it read, statistics counters, file-hash memo rows), gathered in memory
 * and written in one transaction when the cache is closed, when an index
 * reader needs it, when it grows large or old, or together with the next
 * put or removal (those are written at once).  A hit then costs the
 * index no write of its own: one `cuvil compile` used to commit a
 * transaction for each of its ten or so look-ups.  Losing the queue (a
 * crash) loses statistics and LRU freshness only, never cached data.
 * Not thread-safe (nor is cv_cache). */
#ifndef CV_CACHE_PENDING_H
#define CV_CACHE_PENDING_H

#include <stdbool.h>

#include "cache/index.h"

typedef struct cv_pending {
    cv_index_event *ev;      /* owned; HIT events, one per entry */
    int n_ev, cap_ev;
    cv_index_count *cnt;     /* owned, and each name owned */
    int n_cnt, cap_cnt;
    cv_index_memo_row *memo; /* owned, and each path owned; one per path */
    int n_memo, cap_memo;
    int64_t since_us;        /* monotonic time of the oldest item; 0 = empty */
    bool urgent;             /* holds a put or a removal: to be written now */
} cv_pending;

/* Queues one access (hits on an entry merge into one row); a put or a
 * removal makes the queue due at once.  0, or -1 on OOM (nothing was
 * added: the caller writes it directly). */
int cv_pending_add(cv_pending *p, const cv_index_event *ev, int n_ev, const cv_index_count *cnt,
                   int n_cnt);
int cv_pending_add_memo(cv_pending *p, const char *path, const cv_index_memo *m);
/* The queued memo row for path, or NULL. */
const cv_index_memo *cv_pending_memo(const cv_pending *p, const char *path);
/* To be written now: urgent, large or old. */
bool cv_pending_due(const cv_pending *p);
bool cv_pending_empty(const cv_pending *p);
/* Writes everything in one transaction and empties the queue (also when
 * the write failed: these are statistics, not worth growing without
 * bound for). */
int cv_pending_flush(cv_pending *p, cv_index *ix, cv_diag *d);
void cv_pending_free(cv_pending *p);

#endif
