/* One SQLite helper for the build DB, the SQLite queue and the cache index.
 *
 * Opening sets each database's pragmas (synchronous=NORMAL, WAL, a busy
 * timeout or handler, foreign keys where asked) and brings its schema to the
 * current version.  The schema is an ordered array of migrations: entry i
 * takes a file from version i to i+1, in one BEGIN IMMEDIATE transaction
 * together with `PRAGMA user_version = i+1`.  Append, never edit.  A file
 * already current is only read (its user_version), never written, so opening
 * costs next to nothing; a file from a newer cuvil is refused (CV9006).
 * Files written before this scheme kept their version in a table
 * `schema_version(version)`: it is adopted into user_version and dropped,
 * rows untouched.
 *
 * Statements are prepared once per connection and cached by their SQL text
 * (pass the same static string and the look-up is a pointer compare).  The
 * binder takes a format, one letter a parameter:
 *   i  int64_t                 z  int64_t, 0 binds NULL
 *   d  double                  t  const char *, NULL binds NULL (copied)
 *   b  const void *, size_t    a blob, read in place: it must live until the
 *                              statement is stepped
 *   n  NULL (takes no argument)
 * A format whose length differs from the statement's parameter count is a
 * bug in the caller: CV_ASSERT (common/invariant.h), never a silent bind.
 *
 * Errors are diagnostics located at the database's path, with the codes its
 * config names (busy vs other storage errors).  One connection is used by
 * one thread at a time (the cache index adds its own mutex). */
#ifndef CV_COMMON_SQLDB_H
#define CV_COMMON_SQLDB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

typedef struct cv_sqldb cv_sqldb;

/* One schema step: SQL run as a script, or a function run inside the
 * migration's transaction (set one of the two). */
typedef struct cv_sqldb_migration {
    const char *sql;
    int (*fn)(cv_sqldb *db, cv_diag *d);
} cv_sqldb_migration;

typedef struct cv_sqldb_config {
    const char *what;          /* "build DB", "queue", "cache index": starts messages */
    int open_code;             /* the file cannot be opened */
    int storage_code;          /* any other SQLite error */
    int busy_code;             /* SQLITE_BUSY / SQLITE_LOCKED past the timeout */
    int busy_timeout_ms;       /* SQLite's busy timeout, and the WAL switch's retry limit */
    int (*busy_handler)(void *ctx, int n);   /* instead of SQLite's timeout, when set */
    /* Called on the new connection before anything else (hooks, db_config). */
    void (*on_connect)(sqlite3 *conn, void *ctx);
    void *ctx;                 /* for busy_handler and on_connect */
    bool foreign_keys;         /* PRAGMA foreign_keys=ON */
    bool serialized;           /* SQLITE_OPEN_FULLMUTEX (else NOMUTEX) */
    const cv_sqldb_migration *migrations;
    int n_migrations;          /* the current version */
} cv_sqldb_config;

typedef struct cv_sqldb_stmt {
    const char *sql;           /* the caller's text (not owned) */
    sqlite3_stmt *st;          /* owned */
} cv_sqldb_stmt;

struct cv_sqldb {
    sqlite3 *db;               /* owned */
    char *path;                /* owned */
    cv_sqldb_config cfg;
    cv_sqldb_stmt *stmts;      /* owned */
    int n_stmts, cap_stmts;
};

/* Opens (creating) path and migrates it (see above). */
int  cv_sqldb_open(cv_sqldb *db, const char *path, const cv_sqldb_config *cfg, cv_diag *d);
void cv_sqldb_close(cv_sqldb *db);
/* The file's PRAGMA user_version, or -1 (and a diagnostic). */
int  cv_sqldb_version(cv_sqldb *db, cv_diag *d);

/* Reports an SQLite error from `what` (busy_code when busy or locked, else
 * storage_code); returns -1.  d may be NULL. */
int  cv_sqldb_error(cv_sqldb *db, int rc, const char *what, cv_diag *d);
/* Runs SQL without parameters (several statements allowed): 0 or -1. */
int  cv_sqldb_script(cv_sqldb *db, const char *sql, cv_diag *d);

/* The cached statement for sql, reset and bound by fmt; NULL on error. */
sqlite3_stmt *cv_sqldb_query(cv_sqldb *db, cv_diag *d, const char *sql, const char *fmt, ...);
/* 1 = a row (reset the statement when done), 0 = done (reset), -1 = error. */
int  cv_sqldb_step(cv_sqldb *db, sqlite3_stmt *st, cv_diag *d);
/* Runs a statement for its effect: the number of changed rows, or -1. */
int  cv_sqldb_exec(cv_sqldb *db, cv_diag *d, const char *sql, const char *fmt, ...);
/* One-row query, column 0 as an integer: 1 = row, 0 = none, -1 = error. */
int  cv_sqldb_int(cv_sqldb *db, cv_diag *d, int64_t *out, const char *sql, const char *fmt, ...);

/* Copies text column col of the current row into buf (always terminated). */
void cv_sqldb_text(sqlite3_stmt *st, int col, char *buf, size_t cap);
/* A malloc'd copy of column col's bytes with a NUL after them (*len without
 * it, when len is not NULL); NULL when out of memory. */
char *cv_sqldb_dup(sqlite3_stmt *st, int col, size_t *len);
/* Copies a blob column of exactly n bytes into out: 0, or -1 (other size). */
int  cv_sqldb_blob(sqlite3_stmt *st, int col, void *out, size_t n);

/* BEGIN IMMEDIATE unless a transaction is open: *owned says which.  end
 * commits (rc >= 0) or rolls back, only when owned; returns rc or -1. */
int  cv_sqldb_tx_begin(cv_sqldb *db, bool *owned, cv_diag *d);
int  cv_sqldb_tx_end(cv_sqldb *db, bool owned, int rc, cv_diag *d);
/* Rolls back the open transaction, if any. */
void cv_sqldb_rollback(cv_sqldb *db);

#endif
