/* Looking after a cache directory: statistics, eviction, clear, verify. */
#include "cache/cache_impl.h"
#include "cache/internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- stats */

typedef struct ctr_map {
    const char *name;
    size_t offset;
} ctr_map;

#define F(field) offsetof(cv_cache_stats, field)
static const ctr_map counters[] = {
    {"l1.hit.local", F(hits_local[0])}, {"l2.hit.local", F(hits_local[1])},
    {"l1.hit.remote", F(hits_remote[0])}, {"l2.hit.remote", F(hits_remote[1])},
    {"l1.miss", F(misses[0])}, {"l2.miss", F(misses[1])},
    {"code.hit.local", F(hits_local[2])}, {"code.hit.remote", F(hits_remote[2])},
    {"code.miss", F(misses[2])},
    {"miss_reason.not_found", F(miss_reasons[CV_MISS_NOT_FOUND])},
    {"miss_reason.evicted", F(miss_reasons[CV_MISS_EVICTED])},
    {"miss_reason.corrupt", F(miss_reasons[CV_MISS_CORRUPT])},
    {"miss_reason.remote_error", F(miss_reasons[CV_MISS_REMOTE_ERROR])},
    {"blob.hit.local", F(blob_hits_local)}, {"blob.hit.remote", F(blob_hits_remote)},
    {"blob.miss", F(blob_misses)},
    {"time.hit_us", F(hit_time_us)}, {"time.hit_n", F(hit_count)},
    {"time.miss_us", F(miss_time_us)}, {"time.miss_n", F(miss_count)},
    {"evictions", F(evictions)}, {"evicted_bytes", F(evicted_bytes)},
    {CV_CTR_EVICTED_THEN_REQUESTED, F(evicted_then_requested)},
    {CV_CTR_CORRUPT, F(corrupt)},
    {"remote.errors", F(remote_errors)}, {"remote.timeouts", F(remote_timeouts)},
    {"remote.puts", F(remote_puts)},
    {"memo.hits", F(memo_hits)}, {"memo.rechecks", F(memo_rechecks)},
    {"memo.full_hashes", F(full_hashes)},
};
#undef F

static void take_counter(void *ctx, const char *name, int64_t v)
{
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        if (strcmp(counters[i].name, name) == 0) {
            uint64_t *p = (uint64_t *)((char *)ctx + counters[i].offset);
            *p = v > 0 ? (uint64_t)v : 0;
            return;
        }
}

int cv_cache_stats_get(cv_cache *c, cv_cache_stats *st, cv_diag *d)
{
    memset(st, 0, sizeof *st);
    st->max_size = c->max_size;
    if (!cv_cache_enabled(c))
        return 0;
    cv_cache_flush(c, d);
    uint64_t bytes[2], entries[2];
    if (cv_cache_index_counters(c->ix, take_counter, st, d) != 0 ||
        cv_cache_index_totals(c->ix, bytes, entries, d) != 0)
        return -1;
    st->bytes_stored = bytes[0] + bytes[1];
    st->entries = entries[0];
    st->ac_entries = entries[1];
    return 0;
}

int cv_cache_stats_zero(cv_cache *c, cv_diag *d)
{
    cv_cache_flush(c, d);
    return cv_cache_enabled(c) ? cv_cache_index_zero_counters(c->ix, d) : 0;
}

static double avg_ms(uint64_t us, uint64_t n)
{
    return n ? (double)us / 1000.0 / (double)n : 0.0;
}

static json_t *level_json(const cv_cache_stats *st, int lv)
{
    return json_pack("{sI sI sI}", "hits_local", (json_int_t)st->hits_local[lv], "hits_remote",
                     (json_int_t)st->hits_remote[lv], "misses", (json_int_t)st->misses[lv]);
}

struct json_t *cv_cache_stats_json(const cv_cache_stats *st)
{
    json_t *reasons = json_object();
    for (int r = CV_MISS_NOT_FOUND; r < CV_MISS_NREASONS; r++)
        if (r != CV_MISS_DISABLED)
            json_object_set_new(reasons, cv_cache_miss_reason_name((cv_cache_miss_reason)r),
                                json_integer((json_int_t)st->miss_reasons[r]));
    return json_pack(
        "{so so so so s{sI sI sI} s{sI sI sI sI} s{sI sI sI} sI s{sI sI sI} s{sf sf sI sI}"
        " s{sI sI sI}}",
        "l1", level_json(st, 0), "l2", level_json(st, 1), "code", level_json(st, 2),
        "miss_reasons", reasons,
        "blobs", "hits_local", (json_int_t)st->blob_hits_local, "hits_remote",
        (json_int_t)st->blob_hits_remote, "misses", (json_int_t)st->blob_misses,
        "store", "bytes", (json_int_t)st->bytes_stored, "max_size", (json_int_t)st->max_size,
        "entries", (json_int_t)st->entries, "action_entries", (json_int_t)st->ac_entries,
        "eviction", "evictions", (json_int_t)st->evictions, "evicted_bytes",
        (json_int_t)st->evicted_bytes, "evicted_then_requested",
        (json_int_t)st->evicted_then_requested,
        "corrupt", (json_int_t)st->corrupt,
        "remote", "errors", (json_int_t)st->remote_errors, "timeouts",
        (json_int_t)st->remote_timeouts, "puts", (json_int_t)st->remote_puts,
        "lookup_time_ms", "avg_hit", avg_ms(st->hit_time_us, st->hit_count), "avg_miss",
        avg_ms(st->miss_time_us, st->miss_count), "hit_lookups", (json_int_t)st->hit_count,
        "miss_lookups", (json_int_t)st->miss_count,
        "file_memo", "hits", (json_int_t)st->memo_hits, "rechecks", (json_int_t)st->memo_rechecks,
        "full_hashes", (json_int_t)st->full_hashes);
}

/* ---------------------------------------------------------------- evict */

int cv_cache_evict(cv_cache *c, uint64_t max_bytes, uint64_t *n_evicted, uint64_t *bytes_freed,
                   cv_diag *d)
{
    if (n_evicted)
        *n_evicted = 0;
    if (bytes_freed)
        *bytes_freed = 0;
    if (!cv_cache_enabled(c))
        return 0;
    cv_cache_flush(c, d);
    return cv_cache_index_evict(c->ix, c->cas, max_bytes ? max_bytes : c->max_size, n_evicted,
                                bytes_freed, d);
}

int cv_cache_enforce_limit(cv_cache *c, cv_diag *d)
{
    if (c->batch)
        return 0; /* cv_cache_batch_end checks */
    cv_cache_flush(c, d);
    uint64_t bytes[2], entries[2];
    if (cv_cache_index_totals(c->ix, bytes, entries, NULL) != 0 ||
        bytes[0] + bytes[1] <= c->max_size)
        return 0;
    /* down to 90%, so that a full cache does not evict on every store */
    uint64_t target = c->max_size - c->max_size / 10;
    cv_diag scratch;
    cv_diag_init(&scratch);
    if (cv_cache_index_evict(c->ix, c->cas, target, NULL, NULL, &scratch) != 0 && scratch.n)
        cv_cache_warn(d, CV_E_CACHE_INDEX_ERROR, "%s", scratch.v[0].msg);
    cv_diag_free(&scratch);
    return 0;
}

/* ---------------------------------------------------------------- clear */

static int remove_entry(void *ctx, cv_cas_kind kind, const cv_digest *name, uint64_t stored,
                        int64_t mtime)
{
    (void)stored;
    (void)mtime;
    cv_cache_cas_remove(ctx, kind, name);
    return 0;
}

int cv_cache_clear(cv_cache *c, cv_diag *d)
{
    if (!cv_cache_enabled(c))
        return 0;
    cv_cache_flush(c, d);
    if (cv_cache_cas_walk(c->cas, remove_entry, c->cas, d) != 0)
        return -1;
    cv_cache_cas_clean_tmp(c->cas, 3600);
    return cv_cache_index_clear(c->ix, d);
}

/* --------------------------------------------------------------- verify */

typedef struct verify_ctx {
    cv_cache *c;
    cv_cache_verify_report *r;
    cv_diag *d;
    cv_index_event *ev; /* owned: re-index events for intact files */
    size_t n, cap;
    bool oom;
} verify_ctx;

static int verify_entry(void *ctx, cv_cas_kind kind, const cv_digest *name, uint64_t stored,
                        int64_t mtime_us)
{
    verify_ctx *v = ctx;
    void *data = NULL;
    size_t len = 0;
    int rc = cv_cache_cas_get(v->c->cas, kind, name, CV_CAS_VERIFY_FULL, CV_CACHE_MAX_ENTRY, &data,
                              &len, NULL, v->d);
    free(data);
    v->r->checked++;
    if (rc == CV_CAS_CORRUPT)
        v->r->corrupt++;
    if (rc != CV_CAS_FOUND)
        return 0;
    v->r->bytes += stored;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        cv_index_event *ev = realloc(v->ev, cap * sizeof *ev);
        if (!ev) {
            v->oom = true;
            return 1;
        }
        v->ev = ev;
        v->cap = cap;
    }
    /* A row the index lacked comes back with its file's mtime as last use;
     * an existing row keeps its own history. */
    v->ev[v->n++] = (cv_index_event){
        .op = CV_IDX_ENSURE, .kind = kind, .name = *name, .stored = stored, .at_us = mtime_us};
    return 0;
}

typedef struct row_ctx {
    cv_cache *c;
    cv_index_event *gone; /* owned */
    size_t n, cap;
    uint64_t rows;
} row_ctx;

static void check_row(void *ctx, cv_cas_kind kind, const cv_digest *name, uint64_t stored)
{
    (void)stored;
    row_ctx *rc = ctx;
    rc->rows++;
    if (cv_cache_cas_exists(rc->c->cas, kind, name, NULL))
        return;
    if (rc->n == rc->cap) {
        size_t cap = rc->cap ? rc->cap * 2 : 64;
        cv_index_event *g = realloc(rc->gone, cap * sizeof *g);
        if (!g)
            return;
        rc->gone = g;
        rc->cap = cap;
    }
    rc->gone[rc->n++] = (cv_index_event){.op = CV_IDX_REMOVE, .kind = kind, .name = *name};
}

int cv_cache_verify(cv_cache *c, cv_cache_verify_report *r, cv_diag *d)
{
    memset(r, 0, sizeof *r);
    if (!cv_cache_enabled(c))
        return 0;
    cv_cache_flush(c, d);
    uint64_t before[2], after[2], bytes[2];
    cv_cache_index_totals(c->ix, bytes, before, NULL);
    verify_ctx v = {.c = c, .r = r, .d = d};
    int rc = cv_cache_cas_walk(c->cas, verify_entry, &v, d);
    row_ctx rows = {.c = c};
    if (rc == 0 && !v.oom)
        rc = cv_cache_index_rows(c->ix, check_row, &rows, d);
    if (rc == 0 && !v.oom) {
        cv_index_count cnt = {CV_CTR_CORRUPT, (int64_t)r->corrupt};
        rc = cv_cache_index_apply(c->ix, rows.gone, (int)rows.n, NULL, 0, d);
        if (rc == 0)
            rc = cv_cache_index_apply(c->ix, v.ev, (int)v.n, &cnt, 1, d);
    }
    if (v.oom)
        rc = cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory verifying the cache");
    cv_cache_index_totals(c->ix, bytes, after, NULL);
    r->index_dropped = rows.n;
    uint64_t b = before[0] + before[1] - rows.n, a = after[0] + after[1];
    r->indexed_added = a > b ? a - b : 0;
    free(v.ev);
    free(rows.gone);
    cv_cache_cas_clean_tmp(c->cas, 3600);
    return rc;
}
