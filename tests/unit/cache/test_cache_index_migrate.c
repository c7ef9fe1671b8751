/* The cache index opens an index.sqlite written by main before
 * common/sqldb.c (version 1 in PRAGMA user_version, schema by hand) with
 * every row in place, and refuses one from a newer cuvil instead of
 * stamping it back to version 1. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/index.h"
#include "tests/support/tmpdir.h"
#include "tests/support/sqlite_testlib.h"

/* The schema as main wrote it (copied, not shared: the old format stays). */
static const char OLD_SCHEMA[] =
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


/* Digests a (blob, 100 bytes), b (action entry, 50 bytes), e (evicted). */
static const char OLD_ROWS[] =
    "INSERT INTO blobs VALUES(0, zeroblob(32), 100, 10, 3, 5);"
    "INSERT INTO blobs VALUES(1, x'" "0101010101010101010101010101010101010101010101010101010101010101"
    "', 50, 20, 0, 20);"
    "INSERT INTO evicted VALUES(0, x'" "0202020202020202020202020202020202020202020202020202020202020202"
    "', 7);"
    "INSERT INTO counters VALUES('hits', 9), ('misses', 4);"
    "INSERT INTO memo VALUES('/m/file', 11, 12, 13, 14, 15, 16, zeroblob(32), 17);"
    "INSERT INTO manifests VALUES(2, x'0101', 'k=v', 30);";

typedef struct fx {
    char *dir, *path;
    cv_diag d;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("index-migrate");
    f->path = cv_tmpdir_path(f->dir, "index.sqlite");
    cv_diag_init(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static void sum_counter(void *ctx, const char *name, int64_t v)
{
    (void)name;
    *(int64_t *)ctx += v;
}

static void count_row(void *ctx, cv_cas_kind kind, const cv_digest *name, uint64_t stored)
{
    (void)name;
    *(uint64_t *)ctx += stored + (kind == CV_CAS_AC ? 1000 : 0);
}

static void test_old_index_rows_kept(void **state)
{
    fx *f = *state;
    sqlt_exec(f->path, "PRAGMA journal_mode=WAL;");
    sqlt_exec(f->path, OLD_SCHEMA);
    sqlt_exec(f->path, OLD_ROWS);
    cv_index *ix;
    assert_int_equal(cv_cache_index_open(f->dir, &ix, &f->d), 0);
    uint64_t bytes[2], entries[2];
    assert_int_equal(cv_cache_index_totals(ix, bytes, entries, &f->d), 0);
    assert_int_equal(bytes[CV_CAS_BLOB], 100);
    assert_int_equal(bytes[CV_CAS_AC], 50);
    assert_int_equal(entries[CV_CAS_BLOB], 1);
    assert_int_equal(entries[CV_CAS_AC], 1);
    int64_t sum = 0;
    assert_int_equal(cv_cache_index_counters(ix, sum_counter, &sum, &f->d), 0);
    assert_int_equal(sum, 13);
    cv_digest ev;
    memset(ev.b, 2, sizeof ev.b);
    bool was = false;
    assert_int_equal(cv_cache_index_was_evicted(ix, CV_CAS_BLOB, &ev, &was, &f->d), 0);
    assert_true(was);
    cv_index_memo m;
    assert_int_equal(cv_cache_index_memo_get(ix, "/m/file", &m, &f->d), 1);
    assert_int_equal(m.size, 11);
    assert_int_equal(m.xxh3, 16);
    assert_int_equal(m.recorded_ns, 17);
    uint64_t rows = 0;
    assert_int_equal(cv_cache_index_rows(ix, count_row, &rows, &f->d), 0);
    assert_int_equal(rows, 100 + 50 + 1000);
    /* it works on: the triggers still keep the totals */
    cv_index_event put = {.op = CV_IDX_PUT, .kind = CV_CAS_BLOB, .stored = 7, .at_us = 40};
    memset(put.name.b, 3, sizeof put.name.b);
    assert_int_equal(cv_cache_index_apply(ix, &put, 1, NULL, 0, &f->d), 0);
    assert_int_equal(cv_cache_index_totals(ix, bytes, entries, &f->d), 0);
    assert_int_equal(bytes[CV_CAS_BLOB], 107);
    cv_cache_index_close(ix);
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), 1);
    assert_int_equal(sqlt_int(f->path, "SELECT COUNT(*) FROM manifests"), 1);
    assert_int_equal(f->d.n, 0);
}

static void test_newer_index_refused(void **state)
{
    fx *f = *state;
    cv_index *ix;
    assert_int_equal(cv_cache_index_open(f->dir, &ix, &f->d), 0);
    cv_cache_index_close(ix);
    sqlt_exec(f->path, "PRAGMA user_version = 2");
    assert_int_equal(cv_cache_index_open(f->dir, &ix, &f->d), -1);
    const cv_diag_entry *e = cv_diag_get(&f->d, f->d.n);
    assert_int_equal(e->code, 9006);
    assert_string_equal(e->span.file, f->path);
    assert_non_null(strstr(e->msg, f->path));
    assert_non_null(strstr(e->msg, "version 2, newer than this cuvil understands (1)"));
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), 2);   /* not stamped back */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_index_rows_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_index_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
