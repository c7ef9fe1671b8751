/* Opening a database and bringing its schema to the current version (the
 * scheme is described in sqldb.h). */
#include "common/sqldb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int read_int(cv_sqldb *db, const char *sql, int64_t *out, cv_diag *d)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : cv_sqldb_error(db, rc, "reading the schema version", d);
}

int cv_sqldb_version(cv_sqldb *db, cv_diag *d)
{
    int64_t v = -1;
    return read_int(db, "PRAGMA user_version", &v, d) ? -1 : (int)v;
}

static int set_version(cv_sqldb *db, int64_t v, cv_diag *d)
{
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %lld", (long long)v);
    return cv_sqldb_script(db, sql, d);
}

/* Files written before user_version kept their version in a table; adopt
 * it (rows are untouched) and drop the table.  0 when there is none. */
static int adopt_legacy_version(cv_sqldb *db, int64_t *v, cv_diag *d)
{
    int64_t has = 0;
    if (read_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE type='table'"
                     " AND name='schema_version'", &has, d))
        return -1;
    if (!has)
        return 0;
    if (read_int(db, "SELECT COALESCE(MAX(version),0) FROM schema_version", v, d) ||
        cv_sqldb_script(db, "DROP TABLE schema_version", d))
        return -1;
    return set_version(db, *v, d);
}

static int too_new(cv_sqldb *db, int64_t v, cv_diag *d)
{
    if (d)
        cv_diag_error(d, CV_E_DB_SCHEMA_TOO_NEW, (cv_span){.file = db->path},
                      "%s %s has schema version %lld, newer than this cuvil understands (%d);"
                      " use a newer cuvil or another file",
                      db->cfg.what, db->path, (long long)v, db->cfg.n_migrations);
    return -1;
}

static int run_migration(cv_sqldb *db, const cv_sqldb_migration *m, cv_diag *d)
{
    return m->fn ? m->fn(db, d) : cv_sqldb_script(db, m->sql, d);
}

/* One migration per transaction; the version is read again under the write
 * lock, as another process may have migrated the file meanwhile.  Returns 1
 * while there is more to do, 0 when current, -1 on error. */
static int migrate_step(cv_sqldb *db, cv_diag *d)
{
    int64_t v = 0;
    if (cv_sqldb_script(db, "BEGIN IMMEDIATE", d))
        return -1;
    int rc = read_int(db, "PRAGMA user_version", &v, d);
    if (rc == 0 && v == 0)
        rc = adopt_legacy_version(db, &v, d);
    if (rc == 0 && v > db->cfg.n_migrations)
        rc = too_new(db, v, d);
    bool more = rc == 0 && v < db->cfg.n_migrations;
    if (more)
        rc = run_migration(db, &db->cfg.migrations[v], d);
    if (more && rc == 0)
        rc = set_version(db, v + 1, d);
    if (rc == 0 && cv_sqldb_script(db, "COMMIT", d) == 0)
        return more;
    cv_sqldb_rollback(db);
    return -1;
}

/* Switching to WAL needs a moment alone with the file; another process
 * opening it at the same time makes that busy, so retry within the
 * timeout. */
static int enable_wal(cv_sqldb *db, cv_diag *d)
{
    for (int waited = 0;; waited += 10) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        int wal = rc == SQLITE_ROW &&
                  sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        if (wal)
            return 0;
        if ((rc & 0xff) != SQLITE_BUSY || waited >= db->cfg.busy_timeout_ms)
            return cv_sqldb_error(db, rc == SQLITE_ROW ? SQLITE_CANTOPEN : rc, "enable WAL", d);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int set_up(cv_sqldb *db, cv_diag *d)
{
    sqlite3_extended_result_codes(db->db, 1);
    if (db->cfg.on_connect)
        db->cfg.on_connect(db->db, db->cfg.ctx);
    if (db->cfg.busy_handler)
        sqlite3_busy_handler(db->db, db->cfg.busy_handler, db->cfg.ctx);
    else
        sqlite3_busy_timeout(db->db, db->cfg.busy_timeout_ms);
    if (cv_sqldb_script(db, "PRAGMA synchronous=NORMAL", d) ||
        (db->cfg.foreign_keys && cv_sqldb_script(db, "PRAGMA foreign_keys=ON", d)))
        return -1;
    /* A current file is only read: WAL mode is kept in the file. */
    int v = cv_sqldb_version(db, d);
    if (v < 0)
        return -1;
    if (v == db->cfg.n_migrations)
        return 0;
    if (v > db->cfg.n_migrations)
        return too_new(db, v, d);
    if (enable_wal(db, d))
        return -1;
    int rc;
    while ((rc = migrate_step(db, d)) == 1)
        ;
    return rc;
}

int cv_sqldb_open(cv_sqldb *db, const char *path, const cv_sqldb_config *cfg, cv_diag *d)
{
    memset(db, 0, sizeof *db);
    db->cfg = *cfg;
    db->path = strdup(path);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                (cfg->serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX);
    int rc = db->path ? sqlite3_open_v2(path, &db->db, flags, NULL) : SQLITE_NOMEM;
    if (rc != SQLITE_OK) {
        if (d)
            cv_diag_error(d, cfg->open_code, (cv_span){.file = path}, "cannot open the %s: %s",
                          cfg->what, db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
        cv_sqldb_close(db);
        return -1;
    }
    if (set_up(db, d)) {
        cv_sqldb_close(db);
        return -1;
    }
    return 0;
}

void cv_sqldb_close(cv_sqldb *db)
{
    for (int i = 0; i < db->n_stmts; i++)
        sqlite3_finalize(db->stmts[i].st);
    free(db->stmts);
    sqlite3_close(db->db);
    free(db->path);
    memset(db, 0, sizeof *db);
}
