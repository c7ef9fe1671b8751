/* common/sqldb.c on real SQLite files: the statement cache, the binder's
 * parameter-count check, typed binds and blobs, transactions that roll back
 * on error, busy errors, and the migration scheme (user_version, adopting a
 * legacy schema_version table, refusing a newer file). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sqldb.h"
#include "tests/support/tmpdir.h"

enum { OPEN = 9701, STORAGE = 9702, BUSY = 9703 };   /* this test's own codes */

static int fn_runs;

static int add_note_column(cv_sqldb *db, cv_diag *d)
{
    fn_runs++;
    return cv_sqldb_script(db, "ALTER TABLE t ADD COLUMN note TEXT", d);
}

static const cv_sqldb_migration migrations[] = {
    {.sql = "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE, data BLOB, x REAL);"},
    {.fn = add_note_column},
};

static cv_sqldb_config config(int n)
{
    return (cv_sqldb_config){.what = "test DB", .open_code = OPEN, .storage_code = STORAGE,
                             .busy_code = BUSY, .busy_timeout_ms = 200,
                             .migrations = migrations, .n_migrations = n};
}

typedef struct fx {
    char *dir, *path;
    cv_sqldb db;
    cv_diag d;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("sqldb");
    f->path = cv_tmpdir_path(f->dir, "t.db");
    cv_diag_init(&f->d);
    cv_sqldb_config c = config(2);
    fn_runs = 0;
    assert_int_equal(cv_sqldb_open(&f->db, f->path, &c, &f->d), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_sqldb_close(&f->db);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static int last_code(const cv_diag *d) { return d->n ? cv_diag_get(d, d->n)->code : 0; }

static int64_t count_rows(fx *f)
{
    int64_t n = -1;
    assert_int_equal(cv_sqldb_int(&f->db, &f->d, &n, "SELECT COUNT(*) FROM t", ""), 1);
    return n;
}

/* Runs sql on a second, plain connection to the file. */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

static void test_statement_cache(void **state)
{
    fx *f = *state;
    static const char SQL[] = "SELECT COUNT(*) FROM t WHERE id > ?";
    sqlite3_stmt *a = cv_sqldb_query(&f->db, &f->d, SQL, "i", (int64_t)0);
    int n = f->db.n_stmts;
    sqlite3_stmt *b = cv_sqldb_query(&f->db, &f->d, SQL, "i", (int64_t)1);
    char copy[sizeof SQL];   /* the same text at another address */
    memcpy(copy, SQL, sizeof SQL);
    sqlite3_stmt *c = cv_sqldb_query(&f->db, &f->d, copy, "i", (int64_t)2);
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_ptr_equal(a, c);
    assert_int_equal(f->db.n_stmts, n);
    /* the binds are fresh each time */
    assert_int_equal(sqlite3_bind_parameter_count(c), 1);
    sqlite3_stmt *e = cv_sqldb_query(&f->db, &f->d, "SELECT 1", "");
    assert_ptr_not_equal(e, a);
    assert_int_equal(f->db.n_stmts, n + 1);
    /* more statements than any fixed table held before */
    static char texts[120][24];   /* static: the cache keeps the caller's text */
    for (int i = 0; i < 120; i++) {
        snprintf(texts[i], sizeof texts[i], "SELECT %d", i);
        int64_t v = -1;
        assert_int_equal(cv_sqldb_int(&f->db, &f->d, &v, texts[i], ""), 1);
        assert_int_equal(v, i);
    }
    assert_int_equal(f->db.n_stmts, n + 120);   /* "SELECT 1" was cached already */
}

/* A format that does not match the statement is the caller's bug: the
 * sanitizer build aborts (CV_ASSERT) instead of binding silently. */
static void test_parameter_count_mismatch_aborts(void **state)
{
    fx *f = *state;
    static const char *const fmts[] = {"i", "iii", "ix"};
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stderr))
                _exit(3);
            cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name) VALUES(?,?)", fmts[k],
                          (int64_t)1, "x", (int64_t)3);
            _exit(0);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
    }
    assert_int_equal(count_rows(f), 0);
}

static void test_typed_binds_and_blobs(void **state)
{
    fx *f = *state;
    const unsigned char blob[] = {0, 1, 2, 0, 255, 0};
    assert_int_equal(cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name,data,x,note) VALUES(?,?,?,?,?)",
                                   "itbdn", (int64_t)7, "seven", (const void *)blob, sizeof blob,
                                   2.5),
                     1);
    assert_int_equal(cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name,data,x) VALUES(?,?,?,?)",
                                   "itbz", (int64_t)8, (const char *)NULL, (const void *)"", (size_t)0,
                                   (int64_t)0),
                     1);
    sqlite3_stmt *st = cv_sqldb_query(&f->db, &f->d,
                                      "SELECT data, name, x, note IS NULL FROM t WHERE id=?", "i",
                                      (int64_t)7);
    assert_int_equal(cv_sqldb_step(&f->db, st, &f->d), 1);
    size_t len = 0;
    char *copy = cv_sqldb_dup(st, 0, &len);
    assert_int_equal(len, sizeof blob);
    assert_memory_equal(copy, blob, sizeof blob);
    free(copy);
    unsigned char exact[sizeof blob], wrong[4];
    assert_int_equal(cv_sqldb_blob(st, 0, exact, sizeof exact), 0);
    assert_memory_equal(exact, blob, sizeof blob);
    assert_int_equal(cv_sqldb_blob(st, 0, wrong, sizeof wrong), -1);
    char name[4];
    cv_sqldb_text(st, 1, name, sizeof name);
    assert_string_equal(name, "sev");   /* truncated, terminated */
    assert_true(sqlite3_column_double(st, 2) == 2.5);
    assert_int_equal(sqlite3_column_int(st, 3), 1);
    assert_int_equal(cv_sqldb_step(&f->db, st, &f->d), 0);
    /* NULL text, an empty blob and a zero 'z' */
    int64_t v = -1;
    assert_int_equal(cv_sqldb_int(&f->db, &f->d, &v,
                                  "SELECT (name IS NULL) + 2*(typeof(data)='blob')"
                                  " + 4*(length(data)=0) + 8*(x IS NULL) FROM t WHERE id=?",
                                  "i", (int64_t)8),
                     1);
    assert_int_equal(v, 15);
    assert_int_equal(f->d.n, 0);
}

static void test_rollback_on_error(void **state)
{
    fx *f = *state;
    bool owned = false;
    assert_int_equal(cv_sqldb_tx_begin(&f->db, &owned, &f->d), 0);
    assert_true(owned);
    bool inner = true;   /* nested: the outer transaction owns the commit */
    assert_int_equal(cv_sqldb_tx_begin(&f->db, &inner, &f->d), 0);
    assert_false(inner);
    int rc = cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name) VALUES(?,?)", "it", (int64_t)1, "a");
    assert_int_equal(cv_sqldb_tx_end(&f->db, inner, rc, &f->d), 1);
    rc = cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name) VALUES(?,?)", "it", (int64_t)2, "a");
    assert_int_equal(rc, -1);   /* UNIQUE(name) */
    assert_int_equal(last_code(&f->d), STORAGE);
    assert_string_equal(cv_diag_get(&f->d, f->d.n)->span.file, f->path);
    assert_int_equal(cv_sqldb_tx_end(&f->db, owned, rc, &f->d), -1);
    assert_int_equal(count_rows(f), 0);   /* the first insert went too */
    assert_int_not_equal(sqlite3_get_autocommit(f->db.db), 0);
    /* and a good transaction commits */
    assert_int_equal(cv_sqldb_tx_begin(&f->db, &owned, &f->d), 0);
    rc = cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,name) VALUES(?,?)", "it", (int64_t)3, "c");
    assert_int_equal(cv_sqldb_tx_end(&f->db, owned, rc, &f->d), 1);
    assert_int_equal(count_rows(f), 1);
}

static void test_busy_is_its_own_code(void **state)
{
    fx *f = *state;
    sqlite3 *other;
    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    bool owned;
    assert_int_equal(cv_sqldb_tx_begin(&f->db, &owned, &f->d), -1);
    assert_int_equal(last_code(&f->d), BUSY);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
}

static void test_migrations_run_once_in_user_version(void **state)
{
    fx *f = *state;
    assert_int_equal(cv_sqldb_version(&f->db, &f->d), 2);
    assert_int_equal(fn_runs, 1);
    assert_int_equal(cv_sqldb_exec(&f->db, &f->d, "INSERT INTO t(id,note) VALUES(?,?)", "it",
                                   (int64_t)1, "kept"), 1);
    cv_sqldb_close(&f->db);
    cv_sqldb_config c = config(2);
    assert_int_equal(cv_sqldb_open(&f->db, f->path, &c, &f->d), 0);
    assert_int_equal(fn_runs, 1);
    assert_int_equal(count_rows(f), 1);
    int64_t tables = -1;
    assert_int_equal(cv_sqldb_int(&f->db, &f->d, &tables,
                                  "SELECT COUNT(*) FROM sqlite_master WHERE name='schema_version'",
                                  ""), 1);
    assert_int_equal(tables, 0);
}

/* A file from before user_version: its version in schema_version rows. */
static void test_legacy_schema_version_adopted(void **state)
{
    fx *f = *state;
    char *old = cv_tmpdir_path(f->dir, "old.db");
    raw_exec(old, "PRAGMA journal_mode=WAL;"
                  "CREATE TABLE schema_version(version INTEGER NOT NULL);"
                  "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE, data BLOB, x REAL);"
                  "INSERT INTO schema_version VALUES(1);"
                  "INSERT INTO t(id,name) VALUES(1,'a'),(2,'b'),(3,'c');");
    cv_sqldb db;
    cv_sqldb_config c = config(2);
    fn_runs = 0;
    assert_int_equal(cv_sqldb_open(&db, old, &c, &f->d), 0);
    assert_int_equal(fn_runs, 1);   /* only migration 2 ran */
    assert_int_equal(cv_sqldb_version(&db, &f->d), 2);
    int64_t n = 0;
    assert_int_equal(cv_sqldb_int(&db, &f->d, &n, "SELECT COUNT(*) FROM t WHERE note IS NULL", ""), 1);
    assert_int_equal(n, 3);
    assert_int_equal(cv_sqldb_int(&db, &f->d, &n,
                                  "SELECT COUNT(*) FROM sqlite_master WHERE name='schema_version'",
                                  ""), 1);
    assert_int_equal(n, 0);
    cv_sqldb_close(&db);
    free(old);
}

static void test_newer_file_refused(void **state)
{
    fx *f = *state;
    cv_sqldb_close(&f->db);
    raw_exec(f->path, "PRAGMA user_version = 5");
    cv_sqldb_config c = config(2);
    assert_int_equal(cv_sqldb_open(&f->db, f->path, &c, &f->d), -1);
    const cv_diag_entry *e = cv_diag_get(&f->d, f->d.n);
    assert_int_equal(e->code, 9006);
    assert_string_equal(e->span.file, f->path);
    assert_non_null(strstr(e->msg, f->path));
    assert_non_null(strstr(e->msg, "version 5"));
    assert_non_null(strstr(e->msg, "(2)"));
    /* a legacy table that says newer is refused too, and left as it was */
    char *old = cv_tmpdir_path(f->dir, "old.db");
    raw_exec(old, "CREATE TABLE schema_version(version INTEGER NOT NULL);"
                  "INSERT INTO schema_version VALUES(1),(2),(3);");
    cv_sqldb db;
    assert_int_equal(cv_sqldb_open(&db, old, &c, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9006);
    assert_int_equal(cv_sqldb_open(&db, old, &c, &f->d), -1);   /* still there to refuse */
    assert_int_equal(last_code(&f->d), 9006);
    free(old);
    /* an unopenable path has the open code */
    char *bad = cv_tmpdir_path(f->dir, "no/such/dir/x.db");
    assert_int_equal(cv_sqldb_open(&db, bad, &c, &f->d), -1);
    assert_int_equal(last_code(&f->d), OPEN);
    free(bad);
    raw_exec(f->path, "PRAGMA user_version = 2");
    assert_int_equal(cv_sqldb_open(&f->db, f->path, &c, &f->d), 0);
}

/* A migration that fails leaves the file at the version before it. */
static void test_failed_migration_rolls_back(void **state)
{
    fx *f = *state;
    static const cv_sqldb_migration bad[] = {
        {.sql = "CREATE TABLE u(a);"},
        {.sql = "CREATE TABLE v(a); INSERT INTO nowhere VALUES(1);"},
    };
    char *p = cv_tmpdir_path(f->dir, "bad.db");
    cv_sqldb db;
    cv_sqldb_config c = config(2);
    c.migrations = bad;
    assert_int_equal(cv_sqldb_open(&db, p, &c, &f->d), -1);
    assert_int_equal(last_code(&f->d), STORAGE);
    c.n_migrations = 1;
    assert_int_equal(cv_sqldb_open(&db, p, &c, &f->d), 0);
    assert_int_equal(cv_sqldb_version(&db, &f->d), 1);
    int64_t n = -1;
    assert_int_equal(cv_sqldb_int(&db, &f->d, &n,
                                  "SELECT COUNT(*) FROM sqlite_master WHERE name='v'", ""), 1);
    assert_int_equal(n, 0);
    cv_sqldb_close(&db);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_statement_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parameter_count_mismatch_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_typed_binds_and_blobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_on_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_is_its_own_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrations_run_once_in_user_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_schema_version_adopted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_migration_rolls_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
