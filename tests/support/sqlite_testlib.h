/* Test helper: a second, plain SQLite connection to a database file, for
 * tests that write a file by hand (an old format, a version from the
 * future) or read it behind the code's back.  Header only: include it
 * after <cmocka.h>. */
#ifndef CV_TEST_SQLITE_TESTLIB_H
#define CV_TEST_SQLITE_TESTLIB_H

#include <sqlite3.h>

/* Runs sql (several statements allowed) on path; fails the test on error. */
static inline void sqlt_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

/* Column 0 of the first row of sql on path, as an integer. */
static inline int64_t sqlt_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
