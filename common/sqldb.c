/* The SQLite helper: statements, binds, steps and transactions (the schema
 * and opening are in sqldb_schema.c). */
#include "common/sqldb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/invariant.h"

int cv_sqldb_error(cv_sqldb *db, int rc, const char *what, cv_diag *d)
{
    int prim = rc & 0xff;
    int code = prim == SQLITE_BUSY || prim == SQLITE_LOCKED ? db->cfg.busy_code
                                                            : db->cfg.storage_code;
    if (d)
        cv_diag_error(d, code, (cv_span){.file = db->path}, "%s %s: %s", db->cfg.what, what,
                      db->db && (sqlite3_errcode(db->db) & 0xff) == prim ? sqlite3_errmsg(db->db)
                                                              : sqlite3_errstr(rc));
    return -1;
}

int cv_sqldb_script(cv_sqldb *db, const char *sql, cv_diag *d)
{
    int rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : cv_sqldb_error(db, rc, "statement", d);
}

/* The cached statement for sql: by address first (the callers' static
 * strings), then by text. */
static sqlite3_stmt *cached(cv_sqldb *db, const char *sql)
{
    for (int i = 0; i < db->n_stmts; i++)
        if (db->stmts[i].sql == sql)
            return db->stmts[i].st;
    for (int i = 0; i < db->n_stmts; i++)
        if (strcmp(db->stmts[i].sql, sql) == 0)
            return db->stmts[i].st;
    return NULL;
}

static sqlite3_stmt *prepare(cv_sqldb *db, const char *sql, cv_diag *d)
{
    sqlite3_stmt *st = cached(db, sql);
    if (st)
        return st;
    if (db->n_stmts == db->cap_stmts) {
        int cap = db->cap_stmts ? db->cap_stmts * 2 : 16;
        cv_sqldb_stmt *v = realloc(db->stmts, (size_t)cap * sizeof *v);
        if (!v) {
            cv_sqldb_error(db, SQLITE_NOMEM, "prepare", d);
            return NULL;
        }
        db->stmts = v;
        db->cap_stmts = cap;
    }
    int rc = sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        cv_sqldb_error(db, rc, "prepare", d);
        return NULL;
    }
    db->stmts[db->n_stmts++] = (cv_sqldb_stmt){.sql = sql, .st = st};
    return st;
}

static int bind_one(sqlite3_stmt *st, int i, char f, va_list *ap)
{
    switch (f) {
    case 'i':
        return sqlite3_bind_int64(st, i, va_arg(*ap, int64_t));
    case 'z': {
        int64_t v = va_arg(*ap, int64_t);
        return v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
    }
    case 'd':
        return sqlite3_bind_double(st, i, va_arg(*ap, double));
    case 't': {
        const char *s = va_arg(*ap, const char *);
        return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
    }
    case 'b': {
        const void *p = va_arg(*ap, const void *);
        size_t n = va_arg(*ap, size_t);
        return sqlite3_bind_blob64(st, i, p ? p : "", n, SQLITE_STATIC);
    }
    case 'n':
        return sqlite3_bind_null(st, i);
    default:
        return SQLITE_MISUSE;
    }
}

static sqlite3_stmt *vquery(cv_sqldb *db, cv_diag *d, const char *sql, const char *fmt,
                            va_list ap)
{
    sqlite3_stmt *st = prepare(db, sql, d);
    if (!st)
        return NULL;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    /* A caller's format that does not match its SQL is a bug, not input. */
    CV_ASSERT_RET(d, (int)strlen(fmt) == sqlite3_bind_parameter_count(st), NULL);
    va_list aq;
    va_copy(aq, ap);
    int rc = SQLITE_OK;
    for (int i = 1; rc == SQLITE_OK && fmt[i - 1]; i++)
        rc = bind_one(st, i, fmt[i - 1], &aq);
    va_end(aq);
    CV_ASSERT_RET(d, rc != SQLITE_MISUSE, NULL);
    if (rc != SQLITE_OK) {
        cv_sqldb_error(db, rc, "bind", d);
        return NULL;
    }
    return st;
}

sqlite3_stmt *cv_sqldb_query(cv_sqldb *db, cv_diag *d, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = vquery(db, d, sql, fmt, ap);
    va_end(ap);
    return st;
}

int cv_sqldb_step(cv_sqldb *db, sqlite3_stmt *st, cv_diag *d)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : cv_sqldb_error(db, rc, "step", d);
}

/* One statement bound from ap and stepped once: 1 with a row (its first
 * column in *out, when out), 0 done, -1 an error. */
static int step_once(cv_sqldb *db, cv_diag *d, int64_t *out, const char *sql, const char *fmt,
                     va_list ap)
{
    sqlite3_stmt *st = vquery(db, d, sql, fmt, ap);
    if (!st)
        return -1;
    int rc = cv_sqldb_step(db, st, d);
    if (rc == 1 && out)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc;
}

int cv_sqldb_exec(cv_sqldb *db, cv_diag *d, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = step_once(db, d, NULL, sql, fmt, ap);
    va_end(ap);
    return rc < 0 ? -1 : sqlite3_changes(db->db);
}

int cv_sqldb_int(cv_sqldb *db, cv_diag *d, int64_t *out, const char *sql, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = step_once(db, d, out, sql, fmt, ap);
    va_end(ap);
    return rc;
}

void cv_sqldb_text(sqlite3_stmt *st, int col, char *buf, size_t cap)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    snprintf(buf, cap, "%s", s ? s : "");
}

char *cv_sqldb_dup(sqlite3_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    if (n)
        memcpy(out, p, n);
    out[n] = 0;
    if (len)
        *len = n;
    return out;
}

int cv_sqldb_blob(sqlite3_stmt *st, int col, void *out, size_t n)
{
    const void *p = sqlite3_column_blob(st, col);
    if ((size_t)sqlite3_column_bytes(st, col) != n || (n && !p))
        return -1;
    memcpy(out, p, n);
    return 0;
}

int cv_sqldb_tx_begin(cv_sqldb *db, bool *owned, cv_diag *d)
{
    *owned = sqlite3_get_autocommit(db->db) != 0;
    return *owned ? cv_sqldb_script(db, "BEGIN IMMEDIATE", d) : 0;
}

int cv_sqldb_tx_end(cv_sqldb *db, bool owned, int rc, cv_diag *d)
{
    if (!owned)
        return rc < 0 ? -1 : rc;
    if (rc >= 0 && cv_sqldb_script(db, "COMMIT", d) == 0)
        return rc;
    cv_sqldb_rollback(db);
    return -1;
}

void cv_sqldb_rollback(cv_sqldb *db)
{
    if (!sqlite3_get_autocommit(db->db))
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
}
