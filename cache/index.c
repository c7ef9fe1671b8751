/* The SQLite index of a cache directory (see index.h). */
#include "cache/index.h"
#include "cache/internal.h"
#include "cache/keys_internal.h"

#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    BUSY_MS = 15000,
    EVICTED_KEEP = 100000,   /* evicted names remembered */
    SCHEMA_VERSION = 1,      /* PRAGMA user_version at the end of SCHEMA */
    WAL_PAGES = 64,          /* a closing connection empties a WAL this large */
    WAL_MAX_PAGES = 1000,    /* any commit checkpoints a WAL this large */
};

/* The table totals is kept by triggers, so the store's size is one row
 * read, not a scan. */
static const char SCHEMA[] =
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
    "CREATE INDEX IF NOT EXISTS manifests_new ON manifests(level, created);"
    "PRAGMA user_version = 1;";

typedef enum {
    S_PUT, S_HIT, S_DEL, S_ENSURE, S_UNEVICT, S_COUNT, S_WAS_EVICTED, S_TOTALS, S_COUNTERS, S_LRU,
    S_EVICTED_ADD, S_MANIFEST_DROP, S_MEMO_GET, S_MEMO_PUT, S_MANIFEST_PUT, S_MANIFEST_SCAN,
    S_ROWS, S_MEMO_DROP, S_N
} stmt_id;

static const char *const SQL[S_N] = {
    [S_PUT] = "INSERT INTO blobs(kind, name, size, last_use, hits, created) VALUES(?1, ?2, ?3, ?4, 0, ?4)"
              " ON CONFLICT(kind, name) DO UPDATE SET size = excluded.size,"
              " last_use = max(last_use, excluded.last_use)",
    [S_HIT] = "INSERT INTO blobs(kind, name, size, last_use, hits, created) VALUES(?1, ?2, ?3, ?4, ?5, ?4)"
              " ON CONFLICT(kind, name) DO UPDATE SET hits = hits + excluded.hits,"
              " last_use = max(last_use, excluded.last_use)",
    [S_DEL] = "DELETE FROM blobs WHERE kind = ?1 AND name = ?2",
    [S_ENSURE] = "INSERT OR IGNORE INTO blobs(kind, name, size, last_use, hits, created)"
                 " VALUES(?1, ?2, ?3, ?4, 0, ?4)",
    [S_UNEVICT] = "DELETE FROM evicted WHERE kind = ?1 AND name = ?2",
    [S_COUNT] = "INSERT INTO counters(name, value) VALUES(?1, ?2)"
                " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    [S_WAS_EVICTED] = "SELECT 1 FROM evicted WHERE kind = ?1 AND name = ?2",
    [S_TOTALS] = "SELECT kind, bytes, entries FROM totals",
    [S_COUNTERS] = "SELECT name, value FROM counters",
    [S_LRU] = "SELECT kind, name, size FROM blobs ORDER BY last_use LIMIT 64",
    [S_EVICTED_ADD] = "INSERT OR REPLACE INTO evicted(kind, name, at) VALUES(?1, ?2, ?3)",
    [S_MANIFEST_DROP] = "DELETE FROM manifests WHERE key = ?1",
    [S_MEMO_GET] = "SELECT size, mtime_ns, ctime_ns, ino, dev, xxh3, sha256, recorded_ns"
                   " FROM memo WHERE path = ?1",
    [S_MEMO_PUT] = "INSERT OR REPLACE INTO memo VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_MANIFEST_PUT] = "INSERT OR REPLACE INTO manifests(level, key, manifest, created)"
                       " VALUES(?1, ?2, ?3, ?4)",
    [S_MANIFEST_SCAN] = "SELECT manifest FROM manifests WHERE level = ?1"
                        " ORDER BY created DESC LIMIT 2000", /* explain compares the newest */
    [S_ROWS] = "SELECT kind, name, size FROM blobs",
    [S_MEMO_DROP] = "DELETE FROM memo WHERE path = ?1",
};

struct cv_index {
    sqlite3 *db;               /* owned */
    sqlite3_stmt *st[S_N];     /* owned, prepared on first use */
    pthread_mutex_t mu;
    int wal_pages;             /* WAL size after this connection's last commit */
};

static int db_err(cv_index *ix, cv_diag *d, const char *what)
{
    return cv_cache_err(d, CV_E_CACHE_INDEX_ERROR, "cache index: %s: %s", what, sqlite3_errmsg(ix->db));
}

/* The statement, reset and with bindings cleared; NULL on error. */
static sqlite3_stmt *stmt(cv_index *ix, stmt_id id)
{
    if (!ix->st[id] &&
        sqlite3_prepare_v3(ix->db, SQL[id], -1, SQLITE_PREPARE_PERSISTENT, &ix->st[id], NULL) !=
            SQLITE_OK)
        return NULL;
    sqlite3_reset(ix->st[id]);
    sqlite3_clear_bindings(ix->st[id]);
    return ix->st[id];
}

static int exec(cv_index *ix, const char *sql)
{
    return sqlite3_exec(ix->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

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

static int user_version(cv_index *ix)
{
    sqlite3_stmt *s = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(ix->db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
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
 * already set up is only read (its user_version), never written.  SQLite
 * would checkpoint and delete the WAL whenever its last connection closes
 * (four fsyncs per `cuvil` process, counting the WAL's re-creation);
 * instead a connection leaves it, and one that finds it past WAL_PAGES
 * empties it on closing (cv_cache_index_close).  A small WAL also keeps
 * cheap what the next process reads to rebuild its WAL index.  Switching
 * to WAL needs a moment alone with the file; with several processes
 * creating the index at once it may report busy, so it is retried. */
static int setup(cv_index *ix, cv_diag *d)
{
    sqlite3_busy_handler(ix->db, on_busy, NULL);
    sqlite3_db_config(ix->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    sqlite3_wal_hook(ix->db, on_wal, ix);
    if (exec(ix, "PRAGMA synchronous=NORMAL") != 0)
        return db_err(ix, d, "setting synchronous mode");
    if (user_version(ix) == SCHEMA_VERSION)
        return 0;
    for (int i = 0; i < 200; i++) {
        if (exec(ix, "PRAGMA journal_mode=WAL") == 0)
            break;
        usleep(20000);
    }
    if (exec(ix, "BEGIN IMMEDIATE") != 0)
        return db_err(ix, d, "locking for schema set-up");
    if (exec(ix, SCHEMA) != 0) {
        int rc = db_err(ix, d, "creating the schema");
        exec(ix, "ROLLBACK");
        return rc;
    }
    if (exec(ix, "COMMIT") != 0)
        return db_err(ix, d, "committing the schema");
    return 0;
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
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    int rc = sqlite3_open_v2(path, &ix->db, flags, NULL);
    if (rc != SQLITE_OK) {
        if (ix->db)
            db_err(ix, d, path);
        else
            cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening %s", path);
    }
    if (rc != SQLITE_OK || setup(ix, d) != 0) {
        cv_cache_index_close(ix);
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
        sqlite3_busy_handler(ix->db, NULL, NULL);
        sqlite3_wal_checkpoint_v2(ix->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    }
    for (int i = 0; i < S_N; i++)
        sqlite3_finalize(ix->st[i]);
    sqlite3_close(ix->db);
    pthread_mutex_destroy(&ix->mu);
    free(ix);
}

static void bind_name(sqlite3_stmt *s, int col, const cv_digest *name)
{
    sqlite3_bind_blob(s, col, name->b, sizeof name->b, SQLITE_TRANSIENT);
}

/* Runs a statement that returns no rows. */
static int step_done(sqlite3_stmt *s)
{
    return (s && sqlite3_step(s) == SQLITE_DONE) ? 0 : -1;
}

static int apply_event(cv_index *ix, const cv_index_event *e)
{
    static const stmt_id ids[] = {[CV_IDX_PUT] = S_PUT, [CV_IDX_HIT] = S_HIT,
                                  [CV_IDX_REMOVE] = S_DEL, [CV_IDX_ENSURE] = S_ENSURE};
    stmt_id id = ids[e->op];
    sqlite3_stmt *s = stmt(ix, id);
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, (int)e->kind);
    bind_name(s, 2, &e->name);
    if (e->op != CV_IDX_REMOVE) {
        sqlite3_bind_int64(s, 3, (sqlite3_int64)e->stored);
        sqlite3_bind_int64(s, 4, e->at_us);
    }
    if (e->op == CV_IDX_HIT)
        sqlite3_bind_int64(s, 5, e->hits ? e->hits : 1);
    if (step_done(s) != 0)
        return -1;
    if (e->op != CV_IDX_PUT)
        return 0;
    s = stmt(ix, S_UNEVICT);
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, (int)e->kind);
    bind_name(s, 2, &e->name);
    return step_done(s);
}

static int apply_count(cv_index *ix, const cv_index_count *c)
{
    if (!c->delta)
        return 0;
    sqlite3_stmt *s = stmt(ix, S_COUNT);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, c->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->delta);
    return step_done(s);
}

static int put_memo(cv_index *ix, const char *path, const cv_index_memo *m);

int cv_cache_index_apply_batch(cv_index *ix, const cv_index_batch *b, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = exec(ix, "BEGIN IMMEDIATE");
    for (int i = 0; rc == 0 && i < b->n_ev; i++)
        rc = apply_event(ix, &b->ev[i]);
    for (int i = 0; rc == 0 && i < b->n_cnt; i++)
        rc = apply_count(ix, &b->cnt[i]);
    for (int i = 0; rc == 0 && i < b->n_memo; i++)
        rc = put_memo(ix, b->memo[i].path, &b->memo[i].m);
    if (rc == 0)
        rc = exec(ix, "COMMIT");
    if (rc != 0) {
        db_err(ix, d, "recording a cache access");
        exec(ix, "ROLLBACK");
    }
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
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_WAS_EVICTED);
    int rc = -1;
    if (s) {
        sqlite3_bind_int(s, 1, (int)kind);
        bind_name(s, 2, name);
        int r = sqlite3_step(s);
        *out = r == SQLITE_ROW;
        rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? 0 : -1;
        sqlite3_reset(s);
    }
    if (rc != 0)
        db_err(ix, d, "looking up evicted entries");
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_totals(cv_index *ix, uint64_t bytes[2], uint64_t entries[2], cv_diag *d)
{
    bytes[0] = bytes[1] = entries[0] = entries[1] = 0;
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_TOTALS);
    int r = s ? SQLITE_ROW : SQLITE_ERROR;
    while (s && (r = sqlite3_step(s)) == SQLITE_ROW) {
        int k = sqlite3_column_int(s, 0);
        if (k == 0 || k == 1) {
            bytes[k] = (uint64_t)sqlite3_column_int64(s, 1);
            entries[k] = (uint64_t)sqlite3_column_int64(s, 2);
        }
    }
    int rc = r == SQLITE_DONE ? 0 : db_err(ix, d, "reading totals");
    if (s)
        sqlite3_reset(s);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_counters(cv_index *ix, void (*fn)(void *ctx, const char *name, int64_t v),
                            void *ctx, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_COUNTERS);
    int r = s ? SQLITE_ROW : SQLITE_ERROR;
    while (s && (r = sqlite3_step(s)) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int64(s, 1));
    int rc = r == SQLITE_DONE ? 0 : db_err(ix, d, "reading counters");
    if (s)
        sqlite3_reset(s);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_zero_counters(cv_index *ix, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = exec(ix, "DELETE FROM counters") == 0 ? 0 : db_err(ix, d, "zeroing counters");
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

/* A blob's memo row (the stat data it was last verified with) goes with it. */
static int drop_memo(cv_index *ix, cv_cas *cas, const cv_digest *name)
{
    char path[PATH_MAX];
    cv_cache_cas_path(cas, CV_CAS_BLOB, name, path, sizeof path);
    sqlite3_stmt *s = stmt(ix, S_MEMO_DROP);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, path, -1, SQLITE_TRANSIENT);
    return step_done(s);
}

/* One batch of the oldest entries: removes their files and rows. */
static int evict_batch(cv_index *ix, cv_cas *cas, uint64_t *total, uint64_t max_bytes,
                       uint64_t *n, uint64_t *freed)
{
    typedef struct { int kind; cv_digest name; uint64_t size; } victim;
    victim v[64];
    int nv = 0;
    sqlite3_stmt *s = stmt(ix, S_LRU);
    if (!s)
        return -1;
    int r;
    while (nv < 64 && (r = sqlite3_step(s)) == SQLITE_ROW) {
        v[nv].kind = sqlite3_column_int(s, 0);
        if (sqlite3_column_bytes(s, 1) != (int)sizeof v[nv].name.b)
            continue;
        memcpy(v[nv].name.b, sqlite3_column_blob(s, 1), sizeof v[nv].name.b);
        v[nv].size = (uint64_t)sqlite3_column_int64(s, 2);
        nv++;
    }
    sqlite3_reset(s);
    if (nv == 0)
        return 1; /* nothing left to evict */
    int64_t now = cv_cache_now_us();
    for (int i = 0; i < nv && *total > max_bytes; i++) {
        cv_cas_kind kind = v[i].kind == 1 ? CV_CAS_AC : CV_CAS_BLOB;
        cv_cache_cas_remove(cas, kind, &v[i].name);
        cv_index_event del = {.op = CV_IDX_REMOVE, .kind = kind, .name = v[i].name};
        if (apply_event(ix, &del) != 0 || !(s = stmt(ix, S_EVICTED_ADD)))
            return -1;
        sqlite3_bind_int(s, 1, (int)kind);
        bind_name(s, 2, &v[i].name);
        sqlite3_bind_int64(s, 3, now);
        if (step_done(s) != 0 || !(s = stmt(ix, S_MANIFEST_DROP)))
            return -1;
        bind_name(s, 1, &v[i].name);
        if (kind == CV_CAS_AC && step_done(s) != 0)
            return -1;
        if (kind == CV_CAS_BLOB && drop_memo(ix, cas, &v[i].name) != 0)
            return -1;
        *total = *total > v[i].size ? *total - v[i].size : 0;
        (*n)++;
        *freed += v[i].size;
    }
    return 0;
}

static uint64_t total_bytes(cv_index *ix)
{
    uint64_t t = 0;
    sqlite3_stmt *s = stmt(ix, S_TOTALS);
    while (s && sqlite3_step(s) == SQLITE_ROW)
        t += (uint64_t)sqlite3_column_int64(s, 1);
    if (s)
        sqlite3_reset(s);
    return t;
}

int cv_cache_index_evict(cv_index *ix, cv_cas *cas, uint64_t max_bytes, uint64_t *n_evicted,
                         uint64_t *bytes_freed, cv_diag *d)
{
    uint64_t n = 0, freed = 0;
    pthread_mutex_lock(&ix->mu);
    int rc = exec(ix, "BEGIN IMMEDIATE");
    if (rc == 0) {
        uint64_t total = total_bytes(ix); /* re-read under the write lock */
        while (rc == 0 && total > max_bytes)
            rc = evict_batch(ix, cas, &total, max_bytes, &n, &freed);
        if (rc == 1)
            rc = 0;
    }
    if (rc == 0 && n) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "DELETE FROM evicted WHERE at < (SELECT at FROM evicted ORDER BY at DESC"
                 " LIMIT 1 OFFSET %d)",
                 EVICTED_KEEP);
        cv_index_count c[2] = {{"evictions", (int64_t)n}, {"evicted_bytes", (int64_t)freed}};
        rc = exec(ix, sql);
        for (int i = 0; rc == 0 && i < 2; i++)
            rc = apply_count(ix, &c[i]);
    }
    if (rc == 0)
        rc = exec(ix, "COMMIT");
    if (rc != 0) {
        db_err(ix, d, "evicting");
        exec(ix, "ROLLBACK");
        n = freed = 0;
    }
    pthread_mutex_unlock(&ix->mu);
    if (n_evicted)
        *n_evicted = n;
    if (bytes_freed)
        *bytes_freed = freed;
    return rc;
}

int cv_cache_index_clear(cv_index *ix, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = exec(ix, "BEGIN IMMEDIATE; DELETE FROM blobs; DELETE FROM manifests;"
                      " DELETE FROM evicted; DELETE FROM memo; COMMIT");
    if (rc != 0) {
        db_err(ix, d, "clearing");
        exec(ix, "ROLLBACK");
    }
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_rows(cv_index *ix,
                        void (*fn)(void *ctx, cv_cas_kind kind, const cv_digest *name,
                                   uint64_t stored),
                        void *ctx, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_ROWS);
    int r = s ? SQLITE_ROW : SQLITE_ERROR;
    while (s && (r = sqlite3_step(s)) == SQLITE_ROW) {
        cv_digest name;
        if (sqlite3_column_bytes(s, 1) != (int)sizeof name.b)
            continue;
        memcpy(name.b, sqlite3_column_blob(s, 1), sizeof name.b);
        fn(ctx, sqlite3_column_int(s, 0) == 1 ? CV_CAS_AC : CV_CAS_BLOB, &name,
           (uint64_t)sqlite3_column_int64(s, 2));
    }
    int rc = r == SQLITE_DONE ? 0 : db_err(ix, d, "listing entries");
    if (s)
        sqlite3_reset(s);
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

/* ----------------------------------------------------------------- memo */

int cv_cache_index_memo_get(cv_index *ix, const char *path, cv_index_memo *m, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_MEMO_GET);
    int rc = -1;
    if (s) {
        sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
        int r = sqlite3_step(s);
        rc = r == SQLITE_DONE ? 0 : -1;
        if (r == SQLITE_ROW && sqlite3_column_bytes(s, 6) == (int)sizeof m->sha.b) {
            m->size = (uint64_t)sqlite3_column_int64(s, 0);
            m->mtime_ns = sqlite3_column_int64(s, 1);
            m->ctime_ns = sqlite3_column_int64(s, 2);
            m->ino = (uint64_t)sqlite3_column_int64(s, 3);
            m->dev = (uint64_t)sqlite3_column_int64(s, 4);
            m->xxh3 = (uint64_t)sqlite3_column_int64(s, 5);
            memcpy(m->sha.b, sqlite3_column_blob(s, 6), sizeof m->sha.b);
            m->recorded_ns = sqlite3_column_int64(s, 7);
            rc = 1;
        } else if (r == SQLITE_ROW) {
            rc = 0;
        }
        sqlite3_reset(s);
    }
    if (rc < 0)
        db_err(ix, d, "reading the file-hash memo");
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

static int put_memo(cv_index *ix, const char *path, const cv_index_memo *m)
{
    sqlite3_stmt *s = stmt(ix, S_MEMO_PUT);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)m->size);
    sqlite3_bind_int64(s, 3, m->mtime_ns);
    sqlite3_bind_int64(s, 4, m->ctime_ns);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)m->ino);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)m->dev);
    sqlite3_bind_int64(s, 7, (sqlite3_int64)m->xxh3);
    sqlite3_bind_blob(s, 8, m->sha.b, sizeof m->sha.b, SQLITE_STATIC);
    sqlite3_bind_int64(s, 9, m->recorded_ns);
    return step_done(s);
}

int cv_cache_index_memo_put(cv_index *ix, const char *path, const cv_index_memo *m, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    int rc = put_memo(ix, path, m);
    if (rc != 0)
        db_err(ix, d, "writing the file-hash memo");
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

/* ------------------------------------------------------------ manifests */

int cv_cache_index_manifest_put(cv_index *ix, int level, const cv_digest *key,
                                const char *manifest, cv_diag *d)
{
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_MANIFEST_PUT);
    int rc = -1;
    if (s) {
        sqlite3_bind_int(s, 1, level);
        bind_name(s, 2, key);
        sqlite3_bind_text(s, 3, manifest, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, cv_cache_now_us());
        rc = step_done(s);
    }
    if (rc != 0)
        db_err(ix, d, "recording a key manifest");
    pthread_mutex_unlock(&ix->mu);
    return rc;
}

int cv_cache_index_manifest_closest(cv_index *ix, int level, const char *manifest, char **out,
                                    cv_diag *d)
{
    *out = NULL;
    cv_manifest want;
    if (cv_cache_manifest_parse(manifest, &want, d) != 0)
        return -1;
    pthread_mutex_lock(&ix->mu);
    sqlite3_stmt *s = stmt(ix, S_MANIFEST_SCAN);
    int best = INT_MAX, r = SQLITE_ERROR;
    if (s) {
        sqlite3_bind_int(s, 1, level);
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *text = (const char *)sqlite3_column_text(s, 0);
            cv_manifest m;
            if (!text || cv_cache_manifest_parse(text, &m, NULL) != 0)
                continue;
            int dist = cv_cache_manifest_distance(&want, &m);
            cv_cache_manifest_free(&m);
            /* An identical manifest is the key itself (stored since the
             * look-up, e.g. by the probe of `cuvil cache explain`), not an
             * explanation.  Newest first: ties keep the newer. */
            if (dist > 0 && dist < best) {
                char *copy = strdup(text);
                if (!copy)
                    continue;
                free(*out);
                *out = copy;
                best = dist;
            }
        }
        sqlite3_reset(s);
    }
    int rc = r == SQLITE_DONE ? (*out != NULL) : db_err(ix, d, "scanning key manifests");
    pthread_mutex_unlock(&ix->mu);
    cv_cache_manifest_free(&want);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}
