/* The file-hash memo: a file's stat data (size, inode, device, mtime,
 * ctime) stand for its bytes while they are unchanged, so an unchanged big
 * file (a 47 MB model, a cached artifact, an output already in place) is
 * not read again.  ctime cannot be set back by a user: any write, chmod or
 * rename of the inode moves it. */
#include "cache/cache_impl.h"
#include "cache/internal.h"

#include <limits.h>
#include <stdlib.h>

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static bool same_stat(const cv_index_memo *m, const struct stat *st)
{
    return m->size == (uint64_t)st->st_size && m->ino == (uint64_t)st->st_ino &&
           m->dev == (uint64_t)st->st_dev && m->mtime_ns == ts_ns(st->st_mtim) &&
           m->ctime_ns == ts_ns(st->st_ctim);
}

/* Unchanged stat data prove nothing when the file was changed within a
 * timestamp tick of being hashed: a second write in that tick leaves them
 * as they were (git's "racily clean" problem). */
cv_memo_state cv_cache_memo_lookup(cv_cache *c, const char *path, const struct stat *st,
                                   cv_index_memo *m)
{
    const cv_index_memo *q = cv_pending_memo(&c->pending, path);
    if (q)
        *m = *q;
    else if (cv_cache_index_memo_get(c->ix, path, m, NULL) != 1)
        return CV_MEMO_STALE;
    if (!same_stat(m, st))
        return CV_MEMO_STALE;
    int64_t mt = ts_ns(st->st_mtim), ct = ts_ns(st->st_ctim);
    int64_t changed = mt > ct ? mt : ct;
    return changed + c->racy_ns < m->recorded_ns ? CV_MEMO_FRESH : CV_MEMO_RACY;
}

void cv_cache_memo_record(cv_cache *c, const char *path, const struct stat *st, uint64_t xxh3,
                          const cv_digest *sha, int64_t seen_ns)
{
    cv_index_memo m = {.size = (uint64_t)st->st_size, .ino = (uint64_t)st->st_ino,
                       .dev = (uint64_t)st->st_dev, .mtime_ns = ts_ns(st->st_mtim),
                       .ctime_ns = ts_ns(st->st_ctim), .xxh3 = xxh3, .sha = *sha,
                       .recorded_ns = seen_ns};
    if (cv_pending_add_memo(&c->pending, path, &m) != 0)
        cv_cache_index_memo_put(c->ix, path, &m, NULL);
    if (cv_pending_due(&c->pending))
        cv_cache_flush(c, NULL);
}

/* A racy file is re-checked with XXH3, much cheaper than SHA-256. */
int cv_cache_file_digest(cv_cache *c, const char *path, cv_digest *out, cv_diag *d)
{
    char abs[PATH_MAX];
    struct stat st;
    int64_t seen = cv_cache_now_us() * 1000; /* before the stat: see memo_lookup */
    if (!realpath(path, abs) || stat(abs, &st) != 0)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot read %s", path);
    if (!cv_cache_enabled(c))
        return cv_cache_hash_file(abs, out, NULL, NULL, d);
    cv_index_memo m = {0};
    cv_cache_txn a = {0};
    cv_memo_state ms = cv_cache_memo_lookup(c, abs, &st, &m);
    uint64_t x = 0;
    if (ms == CV_MEMO_RACY && cv_cache_xxh3_file(abs, &x, NULL) == 0 && x == m.xxh3) {
        cv_cache_txn_count(&a, "memo.rechecks", 1);
        cv_cache_memo_record(c, abs, &st, m.xxh3, &m.sha, seen);
        ms = CV_MEMO_FRESH;
    } else if (ms == CV_MEMO_FRESH) {
        cv_cache_txn_count(&a, "memo.hits", 1);
    } else {
        uint64_t size = 0;
        if (cv_cache_hash_file(abs, &m.sha, &m.xxh3, &size, d) != 0)
            return -1;
        if (size == (uint64_t)st.st_size) /* changed while read: do not memoise */
            cv_cache_memo_record(c, abs, &st, m.xxh3, &m.sha, seen);
        cv_cache_txn_count(&a, "memo.full_hashes", 1);
    }
    *out = m.sha;
    cv_cache_txn_commit(c, &a, d);
    return 0;
}
