/* The SQLite index of a cache directory (see index.h). */
#include "cache/index.h"
#include "cache/internal.h"
#include "cache/keys_internal.h"
#include "common/sqldb.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    BUSY_MS = 15000,
    EVICTED_KEEP = 100000,   /* evicted names remembered */
    WAL_PAGES = 64,          /* a closing connection empties a WAL this large */
    WAL_MAX_PAGES = 1000,    /* any commit checkpoints a WAL this large */
};

/* Version 1 (PRAGMA user_version, common/sqldb.h).  The table totals is
 * kept by triggers, so the store's size is one row read, not a scan. */
static const cv_sqldb_migration migrations[] = {
    {.sql =
    "CREATE TABLE IF NOT EXISTS blobs(kind INTEGER NOT NULL, name BLOB NOT NULL,"
    " size INTEGER NOT NULL, last_use INTEGER NOT NULL, hits INTEGER NOT NULL DEFAULT 0,"
    " created INTEGER NOT NULL, PRIMARY KEY(kind, name)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS blobs_lru ON blobs(last_use);"
    "CREATE TABLE IF NOT EXISTS totals(kind INTEGER PRIMARY KEY, bytes INTEGER NOT NULL,"
    " entries INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO totals VALUES(0, 0, 0), (1, 0, 0);"
    "CREATE TRIGGER IF NOT EXISTS blobs_ins AFTER INSERT ON blobs BEGIN"
    " UPDATE totals SET bytes = bytes + NEW.size, entries = entries + 1 WHERE kind = NEW.kind; END;"
    "CREATE TRIGGER IF NOT EXISTS blobs_del AFTER DELETE ON blobs BEGIN"
    " UPDATE totals SET bytes = bytes - OLD.size, entries = entries - 1 WHERE kind = OLD.kind; END;"
    "CREATE TRIGGER IF NOT EXISTS blobs_upd AFTER UPDATE OF size ON blobs BEGIN"
    " UPDATE totals SET bytes = bytes + NEW.size - OLD.size WHERE kind = NEW.kind; END;"
    "CREATE TABLE IF NOT EXISTS evicted(kind INTEGER NOT NULL, name BLOB NOT NULL,"
    " at INTEGER NOT NULL, PRIMARY KEY(kind, name)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS evicted_at ON evicted(at);"
    "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS memo(path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER,"
    " ctime_ns INTEGER, ino INTEGER, dev INTEGER, xxh3 INTEGER, sha256 BLOB,"
    " recorded_ns INTEGER) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS manifests(level INTEGER NOT NULL, key BLOB NOT NULL,"
    " manifest TEXT NOT NULL, created INTEGER NOT NULL, PRIMARY KEY(level, key)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS manifests_new ON manifests(level, created);"},
};

static const char SQL_PUT[] =
    "INSERT INTO blobs(kind, name, size, last_use, hits, created) VALUES(?1, ?2, ?3, ?4, 0, ?4)"
    " ON CONFLICT(kind, name) DO UPDATE SET size = excluded.size,"
    " last_use = max(last_use, excluded.last_use)";
static const char SQL_HIT[] =
    "INSERT INTO blobs(kind, name, size, last_use, hits, created) VALUES(?1, ?2, ?3, ?4, ?5, ?4)"
    " ON CONFLICT(kind, name) DO UPDATE SET hits = hits + excluded.hits,"
    " last_use = max(last_use, excluded.last_use)";
static const char SQL_DEL[] = "DELETE FROM blobs WHERE kind = ?1 AND name = ?2";
static const char SQL_ENSURE[] = "INSERT OR IGNORE INTO blobs(kind, name, size, last_use, hits,"
                                 " created) VALUES(?1, ?2, ?3, ?4, 0, ?4)";
static const char SQL_UNEVICT[] = "DELETE FROM evicted WHERE kind = ?1 AND name = ?2";
static const char SQL_COUNT[] = "INSERT INTO counters(name, value) VALUES(?1, ?2)"
                                " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value";
static const char SQL_WAS_EVICTED[] = "SELECT 1 FROM evicted WHERE kind = ?1 AND name = ?2";
static const char SQL_TOTALS[] = "SELECT kind, bytes, entries FROM totals";
static const char SQL_COUNTERS[] = "SELECT name, value FROM counters";
static const char SQL_LRU[] = "SELECT kind, name, size FROM blobs ORDER BY last_use LIMIT 64";
static const char SQL_EVICTED_ADD[] =
    "INSERT OR REPLACE INTO evicted(kind, name, at) VALUES(?1, ?2, ?3)";
static const char SQL_EVICTED_TRIM[] =
    "DELETE FROM evicted WHERE at < (SELECT at FROM evicted ORDER BY at DESC LIMIT 1 OFFSET ?1)";
static const char SQL_MANIFEST_DROP[] = "DELETE FROM manifests WHERE key = ?1";
static const char SQL_MEMO_GET[] = "SELECT size, mtime_ns, ctime_ns, ino, dev, xxh3, sha256,"
                                   " recorded_ns FROM memo WHERE path = ?1";
static const char SQL_MEMO_PUT[] =
    "INSERT OR REPLACE INTO memo VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
static const char SQL_MANIFEST_PUT[] =
    "INSERT OR REPLACE INTO manifests(level, key, manifest, created) VALUES(?1, ?2, ?3, ?4)";
static const char SQL_MANIFEST_SCAN[] = /* explain compares the newest */
    "SELECT manifest FROM manifests WHERE level = ?1 ORDER BY created DESC LIMIT 2000";
static const char SQL_ROWS[] = "SELECT kind, name, size FROM blobs";
static const char SQL_MEMO_DROP[] = "DELETE FROM memo WHERE path = ?1";

struct cv_index {
    cv_sqldb db;               /* owned */
    pthread_mutex_t mu;
    int wal_pages;             /* WAL size after this connection's last commit */
};

/* SQLite's own busy timeout sleeps up to 100 ms at a time, far longer than
 * a cache transaction holds the lock; with many processes sharing one
 * index that sleeping dominates.  This handler polls every 0.2-0.5 ms. */
static int on_busy(void *ctx, int n)
{
    (void)ctx;
    if ((int64_t)n * 350 > (int64_t)BUSY_MS * 1000)
        return 0;
    usleep(200 + (unsigned)(n * 37 % 300));
    return 1;
}

/* After each commit: remembers the WAL's size, and checkpoints (without
 * waiting for readers) when it grows large, as SQLite's own
 * auto-checkpoint would. */
static int on_wal(void *ctx, sqlite3 *db, const char *name, int pages)
{
    cv_index *ix = ctx;
    ix->wal_pages = pages;
    if (pages >= WAL_MAX_PAGES)
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

/* Opening and closing must cost a cache hit next to nothing.  An index
 * already set up is only read (its user_version), never written
 * (common/sqldb.h).  SQLite would checkpoint and delete the WAL whenever
 * its last connection closes (four fsyncs per `cuvil` process, counting the
 * WAL's re-creation); instead a connection leaves it, and one that finds it
 * past WAL_PAGES empties it on closing (cv_cache_index_close).  A small WAL
 * also keeps cheap what the next process reads to rebuild its WAL index. */
static void on_connect(sqlite3 *conn, void *ctx)
{
    sqlite3_db_config(conn, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    sqlite3_wal_hook(conn, on_wal, ctx);
}

int cv_cache_index_open(const char *dir, cv_index **out, cv_diag *d)
{
    *out = NULL;
    cv_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the cache index");
    pthread_mutex_init(&ix->mu, NULL);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/index.sqlite", dir);
    const cv_sqldb_config cfg = {
        .what = "cache index", .open_code = CV_E_CACHE_INDEX_ERROR,
        .storage_code = CV_E_CACHE_INDEX_ERROR, .busy_code = CV_E_CACHE_INDEX_ERROR,
        .busy_timeout_ms = BUSY_MS, .busy_handler = on_busy, .on_connect = on_connect,
        .ctx = ix, .serialized = true,
        .migrations = migrations, .n_migrations = (int)(sizeof migrations / sizeof migrations[0]),
    };
    if (cv_sqldb_open(&ix->db, path, &cfg, d) != 0) {
        pthread_mutex_destroy(&ix->mu);
        free(ix);
        return -1;
    }
    *out = ix;
    return 0;
}

void cv_cache_index_close(cv_index *ix)
{
    if (!ix)
        return;
    if (ix->wal_pages >= WAL_PAGES) {
        /* Readers in other processes: try again another time, not wait. */
        sqlite3_busy_handler(ix->db.db, NULL, NULL);
        sqlite3_wal_checkpoint_v2(ix->db.db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    }
    cv_sqldb_close(&ix->db);
    pthread_mutex_destroy(&ix->mu);
    free(ix);
}

#define NAME(n) (const void *)(n)->b, sizeof (n)->b   /* a digest bound as a blob */

static int apply_event(cv_index *ix, const cv_index_event *e, cv_diag *d)
{
    int64_t kind = e->kind, size = (int64_t)e->stored;
    int rc;
    switch (e->op) {
    case CV_IDX_PUT:
        rc = cv_sqldb_exec(&ix->db, d, SQL_PUT, "ibii", kind, NAME(&e->name), size, e->at_us);
        break;
    case CV_IDX_HIT:
        rc = cv_sqldb_exec(&ix->db, d, SQL_HIT, "ibiii", kind, NAME(&e->name), size, e->at_us,
                           (int64_t)(e->hits ? e->hits : 1));
        break;
    case CV_IDX_REMOVE:
        rc = cv_sqldb_exec(&ix->db, d, SQL_DEL, "ib", kind, NAME(&e->name));
        break;
    default:
        rc = cv_sqldb_exec(&ix->db, d, SQL_ENSURE, "ibii", kind, NAME(&e->name), size, e->at_us);
        break;
    }
    if (rc >= 0 && e->op == CV_IDX_PUT)
        rc = cv_sqldb_exec(&ix->db, d, SQL_UNEVICT, "ib", kind, NAME(&e->name));
    return rc < 0 ? -1 : 0;
}

static int apply_count(cv_index *ix, const cv_index_count *c, cv_diag *d)
{
    if (!c->delta)
        return 0;
    return cv_sqldb_exec(&ix->db, d, SQL_COUNT, "ti", c->name, c->delta) < 0 ? -1 : 0;
}

static int put_memo(cv_index *ix, const char *path, const cv_index_memo *m, cv_diag *d);

static int apply_locked(cv_index *ix, const cv_index_batch *b, cv_diag *d)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < b->n_ev; i++)
        rc = apply_event(ix, &b->ev[i], d);
    for (int i = 0; rc == 0 && i < b->n_cnt; i++)
        rc = apply_count(ix, &b->cnt[i], d);
    for (int i = 0; rc == 0 && i < b->n_memo; i++)
        rc = put_memo(ix, b->memo[i].path, &b->memo[i].m, d);
    return rc;
}

int cv_cache_index_apply_batch(cv_index *ix, const cv_index_batch *b, cv_diag *d)
{
    bool owned;
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_tx_begin(&ix->db, &owned, d);
    if (rc == 0)
        rc = cv_sqldb_tx_end(&ix->db, owned, apply_locked(ix, b, d), d);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_apply(cv_index *ix, const cv_index_event *ev, int n_ev,
                         const cv_index_count *cnt, int n_cnt, cv_diag *d)
{
    cv_index_batch b = {.ev = ev, .n_ev = n_ev, .cnt = cnt, .n_cnt = n_cnt};
    return cv_cache_index_apply_batch(ix, &b, d);
}

int cv_cache_index_was_evicted(cv_index *ix, cv_cas_kind kind, const cv_digest *name, bool *out,
                               cv_diag *d)
{
    int64_t one = 0;
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_int(&ix->db, d, &one, SQL_WAS_EVICTED, "ib", (int64_t)kind, NAME(name));
    pthread_mutex_unlock(&ix->mu);
    *out = rc == 1;
    return rc < 0 ? -1 : 0;
}

/* Reads the totals table (bytes and entries by kind). */
static int read_totals(cv_index *ix, uint64_t bytes[2], uint64_t entries[2], cv_diag *d)
{
    bytes[0] = bytes[1] = entries[0] = entries[1] = 0;
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_TOTALS, "");
    int rc = s ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&ix->db, s, d)) == 1) {
        int k = sqlite3_column_int(s, 0);
        if (k == 0 || k == 1) {
            bytes[k] = (uint64_t)sqlite3_column_int64(s, 1);
            entries[k] = (uint64_t)sqlite3_column_int64(s, 2);
        }
    }
    return rc;
}

int cv_cache_index_totals(cv_index *ix, uint64_t bytes[2], uint64_t entries[2], cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = read_totals(ix, bytes, entries, d);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_counters(cv_index *ix, void (*fn)(void *ctx, const char *name, int64_t v),
                            void *ctx, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_COUNTERS, "");
    int rc = s ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&ix->db, s, d)) == 1)
        fn(ctx, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int64(s, 1));
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_zero_counters(cv_index *ix, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_script(&ix->db, "DELETE FROM counters", d);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

typedef struct victim {
    cv_cas_kind kind;
    cv_digest name;
    uint64_t size;
} victim;

/* Up to 64 of the least recently used entries. */
static int oldest(cv_index *ix, victim *v, int *nv, cv_diag *d)
{
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_LRU, "");
    int rc = s ? 1 : -1;
    *nv = 0;
    while (rc == 1 && *nv < 64 && (rc = cv_sqldb_step(&ix->db, s, d)) == 1) {
        victim *x = &v[*nv];
        x->kind = sqlite3_column_int(s, 0) == 1 ? CV_CAS_AC : CV_CAS_BLOB;
        x->size = (uint64_t)sqlite3_column_int64(s, 2);
        if (cv_sqldb_blob(s, 1, x->name.b, sizeof x->name.b) == 0)
            ++*nv;
    }
    if (rc == 1)
        sqlite3_reset(s);
    return rc < 0 ? -1 : 0;
}

/* Removes one entry's file and rows, remembering it as evicted; a blob's
 * memo row (the stat data it was last verified with) goes with it, an
 * action entry's key manifest too. */
static int evict_one(cv_index *ix, cv_cas *cas, const victim *v, int64_t now, cv_diag *d)
{
    cv_cache_cas_remove(cas, v->kind, &v->name);
    cv_index_event del = {.op = CV_IDX_REMOVE, .kind = v->kind, .name = v->name};
    if (apply_event(ix, &del, d) != 0 ||
        cv_sqldb_exec(&ix->db, d, SQL_EVICTED_ADD, "ibi", (int64_t)v->kind, NAME(&v->name), now) < 0)
        return -1;
    if (v->kind == CV_CAS_AC)
        return cv_sqldb_exec(&ix->db, d, SQL_MANIFEST_DROP, "b", NAME(&v->name)) < 0 ? -1 : 0;
    char path[PATH_MAX];
    cv_cache_cas_path(cas, CV_CAS_BLOB, &v->name, path, sizeof path);
    return cv_sqldb_exec(&ix->db, d, SQL_MEMO_DROP, "t", path) < 0 ? -1 : 0;
}

/* One batch of the oldest entries: removes their files and rows.  1 when
 * nothing is left to evict. */
static int evict_batch(cv_index *ix, cv_cas *cas, uint64_t *total, uint64_t max_bytes,
                       uint64_t *n, uint64_t *freed, cv_diag *d)
{
    victim v[64];
    int nv;
    if (oldest(ix, v, &nv, d) != 0)
        return -1;
    if (nv == 0)
        return 1;
    int64_t now = cv_cache_now_us();
    for (int i = 0; i < nv && *total > max_bytes; i++) {
        if (evict_one(ix, cas, &v[i], now, d) != 0)
            return -1;
        *total = *total > v[i].size ? *total - v[i].size : 0;
        (*n)++;
        *freed += v[i].size;
    }
    return 0;
}

/* Inside the eviction's transaction. */
static int evict_locked(cv_index *ix, cv_cas *cas, uint64_t max_bytes, uint64_t *n,
                        uint64_t *freed, cv_diag *d)
{
    uint64_t bytes[2], entries[2];
    if (read_totals(ix, bytes, entries, d) < 0)   /* re-read under the write lock */
        return -1;
    uint64_t total = bytes[0] + bytes[1];
    int rc = 0;
    while (rc == 0 && total > max_bytes)
        rc = evict_batch(ix, cas, &total, max_bytes, n, freed, d);
    if (rc < 0 || !*n)
        return rc < 0 ? -1 : 0;
    cv_index_count c[2] = {{"evictions", (int64_t)*n}, {"evicted_bytes", (int64_t)*freed}};
    if (cv_sqldb_exec(&ix->db, d, SQL_EVICTED_TRIM, "i", (int64_t)EVICTED_KEEP) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (apply_count(ix, &c[i], d) != 0)
            return -1;
    return 0;
}

int cv_cache_index_evict(cv_index *ix, cv_cas *cas, uint64_t max_bytes, uint64_t *n_evicted,
                         uint64_t *bytes_freed, cv_diag *d)
{
    uint64_t n = 0, freed = 0;
    bool owned;
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_tx_begin(&ix->db, &owned, d);
    if (rc == 0)
        rc = cv_sqldb_tx_end(&ix->db, owned, evict_locked(ix, cas, max_bytes, &n, &freed, d), d);
    pthread_mutex_unlock(&ix->mu);
    if (rc != 0)
        n = freed = 0;
    if (n_evicted)
        *n_evicted = n;
    if (bytes_freed)
        *bytes_freed = freed;
    return rc;
}

int cv_cache_index_clear(cv_index *ix, cv_diag *d)
{
    bool owned;
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_tx_begin(&ix->db, &owned, d);
    if (rc == 0)
        rc = cv_sqldb_tx_end(&ix->db, owned,
                             cv_sqldb_script(&ix->db, "DELETE FROM blobs; DELETE FROM manifests;"
                                             " DELETE FROM evicted; DELETE FROM memo;", d), d);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_rows(cv_index *ix,
                        void (*fn)(void *ctx, cv_cas_kind kind, const cv_digest *name,
                                   uint64_t stored),
                        void *ctx, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_ROWS, "");
    int rc = s ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&ix->db, s, d)) == 1) {
        cv_digest name;
        if (cv_sqldb_blob(s, 1, name.b, sizeof name.b) == 0)
            fn(ctx, sqlite3_column_int(s, 0) == 1 ? CV_CAS_AC : CV_CAS_BLOB, &name,
               (uint64_t)sqlite3_column_int64(s, 2));
    }
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

/* ----------------------------------------------------------------- memo */

int cv_cache_index_memo_get(cv_index *ix, const char *path, cv_index_memo *m, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_MEMO_GET, "t", path);
    int rc = s ? cv_sqldb_step(&ix->db, s, d) : -1;
    if (rc == 1) {
        /* a row without a whole digest is no memo */
        rc = cv_sqldb_blob(s, 6, m->sha.b, sizeof m->sha.b) == 0;
        if (rc) {
            m->size = (uint64_t)sqlite3_column_int64(s, 0);
            m->mtime_ns = sqlite3_column_int64(s, 1);
            m->ctime_ns = sqlite3_column_int64(s, 2);
            m->ino = (uint64_t)sqlite3_column_int64(s, 3);
            m->dev = (uint64_t)sqlite3_column_int64(s, 4);
            m->xxh3 = (uint64_t)sqlite3_column_int64(s, 5);
            m->recorded_ns = sqlite3_column_int64(s, 7);
        }
        sqlite3_reset(s);
    }
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

static int put_memo(cv_index *ix, const char *path, const cv_index_memo *m, cv_diag *d)
{
    return cv_sqldb_exec(&ix->db, d, SQL_MEMO_PUT, "tiiiiiibi", path, (int64_t)m->size,
                         m->mtime_ns, m->ctime_ns, (int64_t)m->ino, (int64_t)m->dev,
                         (int64_t)m->xxh3, NAME(&m->sha), m->recorded_ns) < 0 ? -1 : 0;
}

int cv_cache_index_memo_put(cv_index *ix, const char *path, const cv_index_memo *m, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = put_memo(ix, path, m, d);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

/* ------------------------------------------------------------ manifests */

int cv_cache_index_manifest_put(cv_index *ix, int level, const cv_digest *key,
                                const char *manifest, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = cv_sqldb_exec(&ix->db, d, SQL_MANIFEST_PUT, "ibti", (int64_t)level, NAME(key),
                           manifest, cv_cache_now_us());
    pthread_mutex_unlock(&ix->mu);
    return rc < 0 ? -1 : 0;
}

/* Keeps in *out the stored manifest nearest to want.  An identical one is
 * the key itself (stored since the look-up, e.g. by the probe of `cuvil
 * cache explain`), not an explanation.  Newest first: ties keep the newer. */
static void consider(const cv_manifest *want, const char *text, int *best, char **out)
{
    cv_manifest m;
    if (!text || cv_cache_manifest_parse(text, &m, NULL) != 0)
        return;
    int dist = cv_cache_manifest_distance(want, &m);
    cv_cache_manifest_free(&m);
    char *copy = dist > 0 && dist < *best ? strdup(text) : NULL;
    if (!copy)
        return;
    free(*out);
    *out = copy;
    *best = dist;
}

int cv_cache_index_manifest_closest(cv_index *ix, int level, const char *manifest, char **out,
                                    cv_diag *d)
{
    *out = NULL;
    cv_manifest want;
    if (cv_cache_manifest_parse(manifest, &want, d) != 0)
        return -1;
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = cv_sqldb_query(&ix->db, d, SQL_MANIFEST_SCAN, "i", (int64_t)level);
    int best = INT_MAX, rc = s ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&ix->db, s, d)) == 1)
        consider(&want, (const char *)sqlite3_column_text(s, 0), &best, out);
    pthread_mutex_unlock(&ix->mu);
    cv_cache_manifest_free(&want);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return *out != NULL;
}
