#include "controller/dbutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define BUSY_TIMEOUT_MS 5000

int cv_db_error(cv_db *db, int rc, const char *what, cv_diag *d)
{
    int prim = rc & 0xff;
    cv_diag_error(d, prim == SQLITE_BUSY || prim == SQLITE_LOCKED ? CV_E_BUILDDB_BUSY : CV_E_BUILDDB_STORAGE,
                  (cv_span){.file = db->path}, "build DB %s: %s", what,
                  db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
    return -1;
}

static int exec_sql(cv_db *db, const char *sql, cv_diag *d)
{
    int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : cv_db_error(db, rc, "statement", d);
}

static sqlite3_stmt *vquery(cv_db *db, cv_diag *d, const char *sql, const char *fmt, va_list ap)
{
    sqlite3_stmt *st = NULL;
    for (int i = 0; i < db->n_stmts && !st; i++)
        if (db->stmts[i].sql == sql)
            st = db->stmts[i].st;
    if (!st) {
        int rc = sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK || db->n_stmts == CV_DB_MAX_STMTS) {
            sqlite3_finalize(st);
            cv_db_error(db, rc == SQLITE_OK ? SQLITE_NOMEM : rc, "prepare", d);
            return NULL;
        }
        db->stmts[db->n_stmts].sql = sql;
        db->stmts[db->n_stmts++].st = st;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if ((int)strlen(fmt) != sqlite3_bind_parameter_count(st)) {
        cv_diag_error(d, CV_E_INTERNAL_ERROR, (cv_span){.file = db->path},
                      "build DB: %d values bound to a statement with %d parameters: %.60s",
                      (int)strlen(fmt), sqlite3_bind_parameter_count(st), sql);
        return NULL;
    }
    int rc = SQLITE_OK;
    for (int i = 1; rc == SQLITE_OK && fmt[i - 1]; i++) {
        if (fmt[i - 1] == 'i') {
            rc = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
        } else {
            const char *s = va_arg(ap, const char *);
            rc = s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
        }
    }
    if (rc != SQLITE_OK) {
        cv_db_error(db, rc, "bind", d);
        return NULL;
    }
    return st;
}

sqlite3_stmt *cv_db_query(cv_db *db, cv_diag *d, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = vquery(db, d, sql, fmt, ap);
    va_end(ap);
    return st;
}

int cv_db_step(cv_db *db, sqlite3_stmt *st, cv_diag *d)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : cv_db_error(db, rc, "step", d);
}

int cv_db_exec(cv_db *db, cv_diag *d, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = vquery(db, d, sql, fmt, ap);
    va_end(ap);
    if (!st)
        return -1;
    int rc = cv_db_step(db, st, d);
    sqlite3_reset(st);
    return rc < 0 ? -1 : sqlite3_changes(db->db);
}

int cv_db_int(cv_db *db, cv_diag *d, int64_t *out, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = vquery(db, d, sql, fmt, ap);
    va_end(ap);
    if (!st)
        return -1;
    int rc = cv_db_step(db, st, d);
    if (rc == 1)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc;
}

void cv_db_text(sqlite3_stmt *st, int col, char *buf, size_t cap)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    snprintf(buf, cap, "%s", s ? s : "");
}

int cv_db_tx_begin(cv_db *db, bool *owned, cv_diag *d)
{
    *owned = sqlite3_get_autocommit(db->db) != 0;
    return *owned ? exec_sql(db, "BEGIN IMMEDIATE", d) : 0;
}

int cv_db_tx_end(cv_db *db, bool owned, int rc, cv_diag *d)
{
    if (!owned)
        return rc < 0 ? -1 : rc;
    if (rc >= 0 && exec_sql(db, "COMMIT", d) == 0)
        return rc;
    sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

static int migrate(cv_db *db, const char *const *migrations, int n, cv_diag *d)
{
    bool owned;
    int64_t v = 0;
    if (cv_db_tx_begin(db, &owned, d))
        return -1;
    int rc = exec_sql(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", d);
    if (rc == 0 && cv_db_int(db, d, &v, "SELECT COALESCE(MAX(version),0) FROM schema_version",
                             "") < 0)
        rc = -1;
    if (rc == 0 && v > n) {
        cv_diag_error(d, CV_E_BUILDDB_SCHEMA, (cv_span){.file = db->path},
                      "build DB schema version %lld is newer than this cuvil understands (%d)",
                      (long long)v, n);
        rc = -1;
    }
    for (; rc == 0 && v < n; v++) {
        rc = exec_sql(db, migrations[v], d);
        if (rc == 0)
            rc = cv_db_exec(db, d, "INSERT INTO schema_version VALUES(?)", "i", v + 1) < 0 ? -1 : 0;
    }
    return cv_db_tx_end(db, owned, rc, d);
}

int cv_db_open(cv_db *db, const char *path, const char *const *migrations, int n, cv_diag *d)
{
    memset(db, 0, sizeof *db);
    db->path = strdup(path);
    int rc = db->path ? sqlite3_open_v2(path, &db->db,
                                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                            SQLITE_OPEN_NOMUTEX,
                                        NULL)
                      : SQLITE_NOMEM;
    if (rc != SQLITE_OK) {
        cv_diag_error(d, CV_E_BUILDDB_OPEN_FAILED, (cv_span){.file = path}, "cannot open the build DB: %s",
                      db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
        cv_db_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db->db, BUSY_TIMEOUT_MS);
    /* WAL: the dashboard and `cuvil status` read while the controller writes. */
    if (exec_sql(db, "PRAGMA journal_mode=WAL", d) || exec_sql(db, "PRAGMA synchronous=NORMAL", d) ||
        exec_sql(db, "PRAGMA foreign_keys=ON", d) || migrate(db, migrations, n, d)) {
        cv_db_close(db);
        return -1;
    }
    return 0;
}

void cv_db_close(cv_db *db)
{
    for (int i = 0; i < db->n_stmts; i++)
        sqlite3_finalize(db->stmts[i].st);
    sqlite3_close(db->db);
    free(db->path);
    memset(db, 0, sizeof *db);
}
