/* A thin layer over SQLite for the build DB: open with WAL and versioned
 * migrations, cached prepared statements bound by a format string, and
 * transactions that nest by ownership (only the outermost commits). */
#ifndef CV_CONTROLLER_DBUTIL_H
#define CV_CONTROLLER_DBUTIL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"

#define CV_DB_MAX_STMTS 96

typedef struct cv_db {
    sqlite3 *db;      /* owned */
    char *path;       /* owned */
    struct { const char *sql; sqlite3_stmt *st; } stmts[CV_DB_MAX_STMTS];   /* owned statements */
    int n_stmts;
} cv_db;

/* Opens (creating) path, switches to WAL, enables foreign keys and runs
 * migrations[version..n-1], each in the same transaction as its version
 * bump.  A newer schema than n is CV6071. */
int  cv_db_open(cv_db *db, const char *path, const char *const *migrations, int n, cv_diag *d);
void cv_db_close(cv_db *db);

/* Reports an SQLite error (CV6073 when busy, else CV6072); returns -1. */
int  cv_db_error(cv_db *db, int rc, const char *what, cv_diag *d);
/* Binds by format: i = int64_t, t = const char * (NULL binds NULL). */
sqlite3_stmt *cv_db_query(cv_db *db, cv_diag *d, const char *sql, const char *fmt, ...);
/* 1 = a row (reset the statement when done), 0 = done (reset), -1 = error. */
int  cv_db_step(cv_db *db, sqlite3_stmt *st, cv_diag *d);
/* Runs a statement for its effect: the number of changed rows, or -1. */
int  cv_db_exec(cv_db *db, cv_diag *d, const char *sql, const char *fmt, ...);
/* One-row query, column 0 as an integer: 1 = row, 0 = none, -1 = error. */
int  cv_db_int(cv_db *db, cv_diag *d, int64_t *out, const char *sql, const char *fmt, ...);
/* Copies column col of the current row into buf (always terminated). */
void cv_db_text(sqlite3_stmt *st, int col, char *buf, size_t cap);

/* Begins BEGIN IMMEDIATE unless a transaction is open: *owned says which.
 * end commits (rc >= 0) or rolls back, only when owned; returns rc or -1. */
int  cv_db_tx_begin(cv_db *db, bool *owned, cv_diag *d);
int  cv_db_tx_end(cv_db *db, bool owned, int rc, cv_diag *d);

#endif
