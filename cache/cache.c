/* The cache as the compile path sees it: local store first, the remote
 * second (a remote hit is written back locally), every access counted in
 * the index (hits in batches: see pending.h).  A cache problem never
 * fails a build: look-ups degrade to misses with one warning. */
#include "cache/cache_impl.h"
#include "cache/cas_sync.h"
#include "cache/internal.h"
#include "common/units.h"

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const reason_names[CV_MISS_NREASONS] = {
    "none", "not_found", "evicted", "corrupt", "remote_error", "disabled",
};

const char *cv_cache_miss_reason_name(cv_cache_miss_reason r)
{
    return (unsigned)r < CV_MISS_NREASONS ? reason_names[r] : "unknown";
}

static const char *env(const cv_cache_options *o, const char *name)
{
    if (o->ignore_env)
        return NULL;
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool env_off(const char *v)
{
    return v && (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0 ||
                 strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0);
}

/* $CUVIL_CACHE_DIR, else ~/.cache/cuvil; malloc'd. */
static char *default_dir(const cv_cache_options *o)
{
    const char *v = o->dir ? o->dir : env(o, "CUVIL_CACHE_DIR");
    if (v)
        return strdup(v);
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/tmp";
    }
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/.cache/cuvil", home);
    return strdup(buf);
}

static int open_remote(cv_cache *c, const cv_cache_options *o, cv_diag *d)
{
    const char *url = o->remote ? o->remote : env(o, "CUVIL_REMOTE_CACHE");
    if (!url || !*url)
        return 0;
    cv_remote_options ro = {
        .url = url,
        .token = o->remote_token ? o->remote_token : env(o, "CUVIL_REMOTE_CACHE_TOKEN"),
        .read_only = o->remote_read_only,
        .timeout_ms = o->remote_timeout_ms,
        .connect_timeout_ms = o->remote_connect_timeout_ms,
        .retries = o->remote_retries,
        .sign_key = o->sign_key ? o->sign_key : env(o, "CUVIL_REMOTE_CACHE_SIGNING_KEY"),
        .verify_key = o->verify_key ? o->verify_key : env(o, "CUVIL_REMOTE_CACHE_VERIFY_KEY"),
    };
    return cv_cache_remote_open(&ro, &c->remote, d);
}

int cv_cache_open(const cv_cache_options *opt, cv_cache **out, cv_diag *d)
{
    static const cv_cache_options none = {0};
    const cv_cache_options *o = opt ? opt : &none;
    *out = NULL;
    cv_cache *c = calloc(1, sizeof *c);
    if (!c)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the cache");
    c->disabled = o->disabled || env_off(env(o, "CUVIL_CACHE"));
    c->racy_ns = (int64_t)(o->memo_racy_ms > 0 ? o->memo_racy_ms : 2000) * 1000000;
    c->max_size = o->max_size;
    const char *size = env(o, "CUVIL_CACHE_SIZE");
    cv_units_error ue;
    if (!c->max_size && size && cv_units_parse_size(size, &c->max_size, &ue) != 0) {
        char msg[320];
        cv_units_message(msg, sizeof msg, CV_UNITS_SIZE, "CUVIL_CACHE_SIZE", size, &ue);
        free(c);
        return cv_cache_err(d, CV_E_CACHE_BAD_SIZE, "%s", msg);
    }
    if (!c->max_size)
        c->max_size = (uint64_t)10 << 30;
    c->dir = default_dir(o);
    if (!c->dir) {
        free(c);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the cache");
    }
    if (!c->disabled) {
        int level = o->zstd_level < 0 ? 0 : o->zstd_level == 0 ? 1 : o->zstd_level;
        if (cv_cache_cas_open(c->dir, level, &c->cas, d) != 0 ||
            cv_cache_index_open(c->dir, &c->ix, d) != 0 || open_remote(c, o, d) != 0) {
            cv_cache_close(c);
            return -1;
        }
    }
    *out = c;
    return 0;
}

void cv_cache_close(cv_cache *c)
{
    if (!c)
        return;
    cv_cache_batch_end(c, NULL);
    cv_cache_flush(c, NULL);
    cv_pending_free(&c->pending);
    cv_cache_remote_close(c->remote);
    cv_cache_index_close(c->ix);
    cv_cache_cas_close(c->cas);
    free(c->dir);
    free(c);
}

int cv_cache_batch_begin(cv_cache *c, cv_diag *d)
{
    if (!cv_cache_enabled(c))
        return 0;
    if (c->batch)
        return 1;
    if (cv_cache_cas_defer_sync(c->cas, d) != 0)
        return -1;
    c->batch = true;
    return 0;
}

/* Ends the batch: its files synced now, or (paths set) named for the
 * caller to sync; then the index queue and the size limit. */
static int end_batch(cv_cache *c, char ***paths, int *n, cv_diag *d)
{
    if (!cv_cache_enabled(c) || !c->batch)
        return 0;
    c->batch = false;
    int rc = paths ? cv_cache_cas_detach(c->cas, paths, n, d) : cv_cache_cas_sync(c->cas, d);
    cv_cache_enforce_limit(c, d); /* writes the index queue first */
    return rc;
}

int cv_cache_batch_end(cv_cache *c, cv_diag *d)
{
    return end_batch(c, NULL, NULL, d);
}

int cv_cache_batch_end_unsynced(cv_cache *c, char ***paths, int *n, cv_diag *d)
{
    *paths = NULL;
    *n = 0;
    return end_batch(c, paths, n, d);
}

int cv_cache_sync_files(char *const *paths, int n, cv_diag *d)
{
    int err = cv_cache_syncq_paths(paths, n);
    return err ? cv_cache_err(d, cv_cache_write_errcode(err), "cannot sync %d cache files: %s",
                              n, strerror(err))
               : 0;
}

void cv_cache_paths_free(char **paths, int n)
{
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
}

bool cv_cache_enabled(const cv_cache *c)
{
    return c && !c->disabled;
}

const char *cv_cache_dir(const cv_cache *c)
{
    return c->dir;
}

/* ------------------------------------------------ one access = one txn */

void cv_cache_txn_count(cv_cache_txn *a, const char *name, int64_t delta)
{
    if (a->n_cnt < (int)(sizeof a->cnt / sizeof a->cnt[0]))
        a->cnt[a->n_cnt++] = (cv_index_count){name, delta};
}

void cv_cache_txn_event(cv_cache_txn *a, cv_index_op op, cv_cas_kind kind, const cv_digest *name,
                        uint64_t stored)
{
    if (a->n_ev < (int)(sizeof a->ev / sizeof a->ev[0]))
        a->ev[a->n_ev++] = (cv_index_event){
            .op = op, .kind = kind, .name = *name, .stored = stored, .at_us = cv_cache_now_us()};
}

/* Adds the remote client's new errors and timeouts to the access. */
static void count_remote(cv_cache *c, cv_cache_txn *a)
{
    if (!c->remote)
        return;
    cv_remote_stats s;
    cv_cache_remote_stats(c->remote, &s);
    cv_cache_txn_count(a, "remote.errors", (int64_t)(s.errors - c->remote_seen.errors));
    cv_cache_txn_count(a, "remote.timeouts", (int64_t)(s.timeouts - c->remote_seen.timeouts));
    c->remote_seen = s;
}

/* Index trouble is not worth failing a build over: it becomes a warning. */
void cv_cache_flush(cv_cache *c, cv_diag *d)
{
    if (!cv_cache_enabled(c) || cv_pending_empty(&c->pending))
        return;
    cv_diag scratch;
    cv_diag_init(&scratch);
    if (cv_pending_flush(&c->pending, c->ix, &scratch) != 0 && scratch.n)
        cv_cache_warn(d, CV_E_CACHE_INDEX_ERROR, "%s", scratch.v[0].msg);
    cv_diag_free(&scratch);
}

void cv_cache_txn_commit(cv_cache *c, cv_cache_txn *a, cv_diag *d)
{
    count_remote(c, a);
    if (a->n_ev == 0 && a->n_cnt == 0)
        return;
    if (cv_pending_add(&c->pending, a->ev, a->n_ev, a->cnt, a->n_cnt) == 0) {
        if (!c->batch && cv_pending_due(&c->pending))
            cv_cache_flush(c, d);
        return;
    }
    cv_diag scratch; /* out of memory queueing: written directly */
    cv_diag_init(&scratch);
    if (cv_cache_index_apply(c->ix, a->ev, a->n_ev, a->cnt, a->n_cnt, &scratch) != 0 &&
        scratch.n)
        cv_cache_warn(d, CV_E_CACHE_INDEX_ERROR, "%s", scratch.v[0].msg);
    cv_diag_free(&scratch);
}

/* A failing remote is reported once per process; its later failures are
 * only counted. */
static void remote_failed(cv_cache *c, cv_diag *scratch, cv_diag *d)
{
    if (!c->remote_warned && scratch->n) {
        const cv_diag_entry *e = &scratch->v[0];
        cv_cache_warn(d, e->code, "%s; continuing without the remote cache", e->msg);
        c->remote_warned = true;
    }
}

/* ------------------------------------------------------------- look-ups */

typedef struct lookup_ctx {
    cv_cas_kind kind;
    const cv_digest *name;
    cv_cache_lookup info;
    int64_t t0;
} lookup_ctx;

/* Turns the errors in scratch into warnings in d: a cache that cannot read
 * or write is a slower build, not a failed one. */
static void demote(cv_diag *scratch, cv_diag *d)
{
    for (int i = 0; i < scratch->n; i++)
        cv_cache_warn(d, scratch->v[i].code, "%s", scratch->v[i].msg);
    cv_diag_clear(scratch);
}

/* The local half: 1 hit, 0 miss (reason set). */
static int local_get(cv_cache *c, lookup_ctx *l, cv_cache_txn *a, void **data, size_t *len,
                     cv_diag *d)
{
    uint64_t stored = 0;
    cv_diag scratch;
    cv_diag_init(&scratch);
    int rc = cv_cache_cas_get(c->cas, l->kind, l->name, CV_CAS_VERIFY_FULL, CV_CACHE_MAX_ENTRY,
                              data, len, &stored, &scratch);
    demote(&scratch, d);
    cv_diag_free(&scratch);
    if (rc == CV_CAS_FOUND) {
        cv_cache_txn_event(a, CV_IDX_HIT, l->kind, l->name, stored);
        l->info.source = CV_CACHE_SRC_LOCAL;
        return 1;
    }
    l->info.reason = CV_MISS_NOT_FOUND;
    if (rc == CV_CAS_CORRUPT) {
        l->info.reason = CV_MISS_CORRUPT;
        cv_cache_txn_count(a, CV_CTR_CORRUPT, 1);
    }
    if (rc == CV_CAS_CORRUPT || rc == CV_CAS_MISSING)
        cv_cache_txn_event(a, CV_IDX_REMOVE, l->kind, l->name, 0); /* a stale row, if any */
    return 0;
}

/* The remote half, after a local miss; a hit is stored locally. */
static int remote_get(cv_cache *c, lookup_ctx *l, cv_cache_txn *a, void **data, size_t *len,
                      cv_diag *d)
{
    cv_diag scratch;
    cv_diag_init(&scratch);
    int rc = cv_cache_remote_get(c->remote, l->kind, l->name, data, len, &scratch);
    if (rc == CV_REMOTE_FOUND) {
        uint64_t stored = 0;
        if (cv_cache_cas_put(c->cas, l->kind, l->name, *data, *len, NULL, &stored, &scratch) == 0)
            cv_cache_txn_event(a, CV_IDX_PUT, l->kind, l->name, stored);
        l->info.source = CV_CACHE_SRC_REMOTE;
        l->info.reason = CV_MISS_NONE;
    } else if (rc < 0) {
        remote_failed(c, &scratch, d);
        if (l->info.reason == CV_MISS_NOT_FOUND)
            l->info.reason = CV_MISS_REMOTE_ERROR;
    }
    cv_diag_free(&scratch);
    return rc == CV_REMOTE_FOUND;
}

static void note_evicted(cv_cache *c, lookup_ctx *l, cv_cache_txn *a)
{
    bool evicted = false;
    if (l->info.reason == CV_MISS_NOT_FOUND &&
        cv_cache_index_was_evicted(c->ix, l->kind, l->name, &evicted, NULL) == 0 && evicted) {
        l->info.reason = CV_MISS_EVICTED;
        cv_cache_txn_count(a, CV_CTR_EVICTED_THEN_REQUESTED, 1);
    }
}

static const char *level_counter(cv_cache_level lv, cv_cache_source src)
{
    static const char *const names[CV_CACHE_NLEVELS][3] = {
        {"l1.miss", "l1.hit.local", "l1.hit.remote"},
        {"l2.miss", "l2.hit.local", "l2.hit.remote"},
        {"code.miss", "code.hit.local", "code.hit.remote"},
    };
    return names[lv][src];
}

static const char *blob_counter(cv_cache_source src)
{
    static const char *const names[3] = {"blob.miss", "blob.hit.local", "blob.hit.remote"};
    return names[src];
}

static const char *reason_counter(cv_cache_miss_reason r)
{
    static const char *const names[CV_MISS_NREASONS] = {
        "miss_reason.none", "miss_reason.not_found", "miss_reason.evicted",
        "miss_reason.corrupt", "miss_reason.remote_error", "miss_reason.disabled",
    };
    return names[r];
}

enum { LV_BLOB = -1, LV_AUX = -2 };

/* Both look-ups: local, then remote; counts the outcome.  lv: a level,
 * LV_BLOB, or LV_AUX (an auxiliary action entry: counted nowhere). */
static int lookup(cv_cache *c, int lv, lookup_ctx *l, void **data, size_t *len, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    cv_cache_txn a = {0};
    int rc = local_get(c, l, &a, data, len, d);
    if (rc == 0 && c->remote)
        rc = remote_get(c, l, &a, data, len, d);
    if (rc == 0)
        note_evicted(c, l, &a);
    int64_t us = cv_cache_mono_us() - l->t0;
    l->info.ms = (double)us / 1000.0;
    if (rc >= 0 && lv != LV_AUX) {
        cv_cache_source src = rc > 0 ? l->info.source : CV_CACHE_SRC_NONE;
        cv_cache_txn_count(&a, lv < 0 ? blob_counter(src)
                                      : level_counter((cv_cache_level)lv, src), 1);
        if (rc == 0 && lv >= 0)
            cv_cache_txn_count(&a, reason_counter(l->info.reason), 1);
        if (lv >= 0) {
            cv_cache_txn_count(&a, rc > 0 ? "time.hit_us" : "time.miss_us", us);
            cv_cache_txn_count(&a, rc > 0 ? "time.hit_n" : "time.miss_n", 1);
        }
    }
    cv_cache_txn_commit(c, &a, d);
    if (rc > 0 && l->info.source == CV_CACHE_SRC_REMOTE)
        cv_cache_enforce_limit(c, d); /* a remote hit has grown the store */
    return rc;
}

static int disabled_miss(cv_cache_lookup *info)
{
    if (info)
        *info = (cv_cache_lookup){.reason = CV_MISS_DISABLED};
    return 0;
}

int cv_cache_get_blob(cv_cache *c, const cv_digest *dg, void **data, size_t *len,
                      cv_cache_lookup *info, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    if (!cv_cache_enabled(c))
        return disabled_miss(info);
    lookup_ctx l = {.kind = CV_CAS_BLOB, .name = dg, .t0 = cv_cache_mono_us()};
    int rc = lookup(c, LV_BLOB, &l, data, len, d);
    if (info)
        *info = l.info;
    return rc;
}

int cv_cache_get_action(cv_cache *c, cv_cache_level lv, const cv_cache_key *key, void **entry,
                        size_t *len, cv_cache_lookup *info, cv_diag *d)
{
    *entry = NULL;
    *len = 0;
    if (!cv_cache_enabled(c) || (unsigned)lv >= CV_CACHE_NLEVELS)
        return disabled_miss(info);
    lookup_ctx l = {.kind = CV_CAS_AC, .name = &key->digest, .t0 = cv_cache_mono_us()};
    int rc = lookup(c, (int)lv, &l, entry, len, d);
    if (rc > 0 && l.info.source == CV_CACHE_SRC_REMOTE && key->manifest)
        cv_cache_index_manifest_put(c->ix, (int)lv, &key->digest, key->manifest, NULL);
    if (info)
        *info = l.info;
    return rc;
}

int cv_cache_get_aux(cv_cache *c, const cv_cache_key *key, void **entry, size_t *len,
                     cv_cache_lookup *info, cv_diag *d)
{
    *entry = NULL;
    *len = 0;
    if (!cv_cache_enabled(c))
        return disabled_miss(info);
    lookup_ctx l = {.kind = CV_CAS_AC, .name = &key->digest, .t0 = cv_cache_mono_us()};
    int rc = lookup(c, LV_AUX, &l, entry, len, d);
    if (info)
        *info = l.info;
    return rc;
}

int cv_cache_has_blob(cv_cache *c, const cv_digest *dg)
{
    return cv_cache_enabled(c) && cv_cache_cas_exists(c->cas, CV_CAS_BLOB, dg, NULL);
}

/* --------------------------------------------------------------- stores */

static void remote_put(cv_cache *c, cv_cas_kind kind, const cv_digest *name, const void *data,
                       size_t len, cv_cache_txn *a, cv_diag *d)
{
    if (!c->remote || cv_cache_remote_read_only(c->remote))
        return;
    cv_diag scratch;
    cv_diag_init(&scratch);
    if (cv_cache_remote_put(c->remote, kind, name, data, len, &scratch) == 0)
        cv_cache_txn_count(a, "remote.puts", 1);
    else
        remote_failed(c, &scratch, d);
    cv_diag_free(&scratch);
}

/* The file half of a store: names the bytes and writes them into the
 * store unless they are there already.  Touches no shared state but the
 * directory, so several run at once (cv_cache_put_blob_files). */
void cv_cache_store_persist(cv_cache *c, cv_cache_put *p)
{
    p->stored = 0;
    if (p->kind == CV_CAS_BLOB)
        cv_cache_sha256(p->data, p->len, &p->name);
    p->had = p->kind == CV_CAS_BLOB && cv_cache_cas_exists(c->cas, p->kind, &p->name, &p->stored);
    p->rc = p->had ? 0
                   : cv_cache_cas_put(c->cas, p->kind, &p->name, p->data, p->len, NULL,
                                      &p->stored, &p->diag);
}

/* The rest, one store at a time: warnings, index, remote. */
int cv_cache_store_record(cv_cache *c, cv_cache_put *p, cv_diag *d)
{
    demote(&p->diag, d);
    if (p->rc != 0)
        return -1;
    cv_cache_txn a = {0};
    cv_cache_txn_event(&a, CV_IDX_PUT, p->kind, &p->name, p->stored);
    cv_cache_txn_count(&a, p->kind == CV_CAS_BLOB ? "blob.puts" : "ac.puts", 1);
    if (!p->had)
        remote_put(c, p->kind, &p->name, p->data, p->len, &a, d);
    cv_cache_txn_commit(c, &a, d);
    return 0;
}

/* Stores locally (unless already there) and remotely; 0, or < 0 with a
 * warning when the local write failed (the build goes on uncached). */
static int store(cv_cache *c, cv_cas_kind kind, const cv_digest *name, const void *data,
                 size_t len, cv_digest *out_name, cv_diag *d)
{
    cv_cache_put p = {.kind = kind, .data = data, .len = len};
    if (name)
        p.name = *name;
    cv_diag_init(&p.diag);
    cv_cache_store_persist(c, &p);
    if (out_name)
        *out_name = p.name;
    int rc = cv_cache_store_record(c, &p, d);
    cv_diag_free(&p.diag);
    return rc == 0 ? cv_cache_enforce_limit(c, d) : -1;
}

int cv_cache_put_blob(cv_cache *c, const void *data, size_t len, cv_digest *out, cv_diag *d)
{
    if (!cv_cache_enabled(c)) {
        cv_cache_sha256(data, len, out);
        return 0;
    }
    return store(c, CV_CAS_BLOB, NULL, data, len, out, d);
}

int cv_cache_put_action(cv_cache *c, cv_cache_level lv, const cv_cache_key *key,
                        const void *entry, size_t len, cv_diag *d)
{
    if (!cv_cache_enabled(c))
        return 0;
    if (key->manifest)
        cv_cache_index_manifest_put(c->ix, (int)lv, &key->digest, key->manifest, NULL);
    return store(c, CV_CAS_AC, &key->digest, entry, len, NULL, d);
}

int cv_cache_put_aux(cv_cache *c, const cv_cache_key *key, const void *entry, size_t len,
                     cv_diag *d)
{
    return cv_cache_enabled(c) ? store(c, CV_CAS_AC, &key->digest, entry, len, NULL, d) : 0;
}

int cv_cache_closest_manifest(cv_cache *c, cv_cache_level lv, const char *manifest,
                              char **closest, cv_diag *d)
{
    *closest = NULL;
    if (!cv_cache_enabled(c))
        return 0;
    return cv_cache_index_manifest_closest(c->ix, (int)lv, manifest, closest, d);
}

void cv_cache_note_miss_time(cv_cache *c, cv_cache_level lv, double ms)
{
    (void)lv;
    if (!cv_cache_enabled(c) || !(ms > 0))
        return;
    cv_cache_txn a = {0};
    cv_cache_txn_count(&a, "time.miss_us", (int64_t)(ms * 1000.0));
    cv_cache_txn_commit(c, &a, NULL);
}
