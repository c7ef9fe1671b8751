/* The SQLite queue opens files written before common/sqldb.c (their version
 * in a schema_version table) with every job, lease, result, dead letter,
 * counter and worker in place, records the version in PRAGMA user_version,
 * and refuses a file from a newer cuvil. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "tests/support/tmpdir.h"
#include "tests/support/sqlite_testlib.h"

#define T INT64_C(1700000000000)

/* The queue's schema as main wrote it before common/sqldb.c, its version
 * in a schema_version table (copied, not shared: the old format stays). */
static const char OLD_SCHEMA_V1[] =
    "CREATE TABLE jobs("
    "  id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  key TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('queued','leased','done','dead')),"
    "  attempt INTEGER NOT NULL,"
    "  msg BLOB NOT NULL,"
    "  enqueued_ms INTEGER NOT NULL,"
    "  available_ms INTEGER NOT NULL,"
    "  lease_gen INTEGER NOT NULL DEFAULT 0,"
    "  worker TEXT, leased_ms INTEGER, deadline_ms INTEGER, last_error TEXT);"
    "CREATE UNIQUE INDEX jobs_active_key ON jobs(key) WHERE state IN ('queued','leased');"
    "CREATE UNIQUE INDEX jobs_active_id ON jobs(job_id) WHERE state IN ('queued','leased');"
    "CREATE INDEX jobs_ready ON jobs(state, available_ms, id);"
    "CREATE INDEX jobs_deadline ON jobs(state, deadline_ms);"
    "CREATE TABLE results("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  job_row INTEGER NOT NULL, job_id TEXT NOT NULL, attempts INTEGER NOT NULL,"
    "  dead_letter INTEGER NOT NULL, msg BLOB NOT NULL, created_ms INTEGER NOT NULL);"
    "CREATE TABLE dead_letters("
    "  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, key TEXT NOT NULL,"
    "  attempts INTEGER NOT NULL, reason TEXT NOT NULL, msg BLOB NOT NULL,"
    "  created_ms INTEGER NOT NULL);"
    "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;";
static const char OLD_SCHEMA_V2[] =
    "CREATE TABLE workers(id TEXT PRIMARY KEY, job_id TEXT NOT NULL, started_ms INTEGER NOT NULL,"
    "  beat_ms INTEGER NOT NULL, jobs_done INTEGER NOT NULL) WITHOUT ROWID;";

typedef struct fx {
    char *dir, *path;
    char url[4200];
    int64_t now;
    cv_queue_opts opts;
    cv_diag d;
} fx;

static int64_t fake_now(void *ctx) { return *(const int64_t *)ctx; }

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("queue-migrate");
    f->path = cv_tmpdir_path(f->dir, "queue.db");
    snprintf(f->url, sizeof f->url, "sqlite:%s", f->path);
    f->now = T;
    f->opts = (cv_queue_opts){.now_ms = fake_now, .clock_ctx = &f->now};
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

static char *job_text(const char *id, char key, size_t *len)
{
    cv_job_msg m = {.job_id = (char *)id, .revision = "main@sha1:abc", .pipeline = "vision",
                    .model_path = "models/m.onnx", .target = "x86_64-avx2",
                    .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O2, .attempt = 1};
    memset(m.model_digest, 'e', CV_DIGEST_HEX);
    memset(m.l2_key, key, CV_DIGEST_HEX);
    char *out;
    assert_int_equal(cv_job_msg_encode(&m, &out, len, NULL), 0);
    return out;
}

static char *result_text(const char *job_id, size_t *len)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = (char *)job_id;
    r.status = CV_RESULT_OK;
    memset(r.artifact_manifest, 'a', CV_DIGEST_HEX);
    char *out;
    assert_int_equal(cv_result_msg_encode(&r, &out, len, NULL), 0);
    return out;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s", err);
}

/* Inserts a row whose last column is a message blob. */
static void raw_insert(sqlite3 *db, const char *sql, const char *msg, size_t len)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_bind_blob(st, 1, msg, (int)len, SQLITE_STATIC), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
}

/* An old-format file at `version` (1 or 2): job-1 queued, job-2 leased by
 * w-old, job-3 done with its result (seq 5) pending, one dead letter. */
static void write_old_file(fx *f, int version)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    raw_exec(db, "PRAGMA journal_mode=WAL;"
                 "CREATE TABLE schema_version(version INTEGER NOT NULL);");
    raw_exec(db, OLD_SCHEMA_V1);
    raw_exec(db, "INSERT INTO schema_version VALUES(1)");
    if (version == 2) {
        raw_exec(db, OLD_SCHEMA_V2);
        raw_exec(db, "INSERT INTO schema_version VALUES(2);"
                     "INSERT INTO workers VALUES('w-old','job-2',1699999990000,1699999999000,4);");
    }
    size_t len;
    char *m = job_text("job-1", '1', &len);
    raw_insert(db, "INSERT INTO jobs(id,job_id,key,state,attempt,enqueued_ms,available_ms,msg)"
                   " VALUES(1,'job-1','" "1111111111111111111111111111111111111111111111111111111111111111"
                   "','queued',1,1699999999900,1699999999900,?)", m, len);
    free(m);
    m = job_text("job-2", '2', &len);
    raw_insert(db, "INSERT INTO jobs(id,job_id,key,state,attempt,enqueued_ms,available_ms,lease_gen,"
                   "worker,leased_ms,deadline_ms,msg) VALUES(2,'job-2','k2','leased',1,"
                   "1699999999900,1699999999900,1,'w-old',1699999999950,1700000060000,?)", m, len);
    raw_insert(db, "INSERT INTO dead_letters(job_id,key,attempts,reason,created_ms,msg)"
                   " VALUES('job-0','k0',3,'too many',1699999999000,?)", m, len);
    free(m);
    raw_exec(db, "INSERT INTO jobs(id,job_id,key,state,attempt,enqueued_ms,available_ms,msg)"
                 " VALUES(3,'job-3','k3','done',1,1699999999000,1699999999000,x'00')");
    m = result_text("job-3", &len);
    raw_insert(db, "INSERT INTO results(seq,job_row,job_id,attempts,dead_letter,created_ms,msg)"
                   " VALUES(5,3,'job-3',1,0,1699999999500,?)", m, len);
    free(m);
    raw_exec(db, "INSERT INTO counters VALUES('enqueued',4),('completed',1),('retried',2);");
    sqlite3_close(db);
}

static void check_current(fx *f)
{
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), 2);
    assert_int_equal(sqlt_int(f->path, "SELECT COUNT(*) FROM sqlite_master"
                                      " WHERE name='schema_version'"), 0);
}

/* Every old row, read through the queue's own API; then the queue works on. */
static void check_old_rows(fx *f, cv_queue *q)
{
    cv_queue_stats s;
    assert_int_equal(cv_queue_stats_get(q, &s, &f->d), 0);
    assert_int_equal(s.queued, 1);
    assert_int_equal(s.leased, 1);
    assert_int_equal(s.results_pending, 1);
    assert_int_equal(s.dead_letters, 1);
    assert_int_equal(s.enqueued, 4);
    assert_int_equal(s.completed, 1);
    assert_int_equal(s.retried, 2);
    cv_queue_lease_info li[4];
    int n = 0;
    assert_int_equal(cv_queue_leases_list(q, li, 4, &n, &f->d), 1);
    assert_int_equal(n, 1);
    assert_string_equal(li[0].job_id, "job-2");
    assert_string_equal(li[0].worker_id, "w-old");
    cv_queue_result *r = NULL;
    assert_int_equal(cv_queue_poll_results(q, 0, 10, &r, &n, &f->d), 0);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].seq, 5);
    assert_string_equal(r[0].job_id, "job-3");
    size_t len;
    char *want = result_text("job-3", &len);
    assert_int_equal(r[0].msg_len, len);
    assert_memory_equal(r[0].msg, want, len);
    free(want);
    cv_queue_results_free(r, n);
    cv_lease l;
    assert_int_equal(cv_queue_lease(q, "w-new", 60, 0, &l, &f->d), 1);
    assert_string_equal(l.job.job_id, "job-1");
    char *res = result_text("job-1", &len);
    assert_int_equal(cv_queue_complete(q, &l, res, len, &f->d), 0);
    free(res);
    cv_queue_lease_free(&l);
    /* AUTOINCREMENT survived: the new result comes after seq 5 */
    assert_int_equal(cv_queue_poll_results(q, 5, 10, &r, &n, &f->d), 0);
    assert_int_equal(n, 1);
    assert_true(r[0].seq > 5);
    cv_queue_results_free(r, n);
}

static void test_old_file_at_version_2(void **state)
{
    fx *f = *state;
    write_old_file(f, 2);
    cv_queue *q;
    assert_int_equal(cv_queue_open(f->url, &f->opts, &q, &f->d), 0);
    check_current(f);
    check_old_rows(f, q);
    cv_queue_worker_info w[4];
    int n = 0;
    assert_int_equal(cv_queue_workers_list(q, w, 4, &n, &f->d), 1);
    assert_int_equal(n, 1);
    assert_string_equal(w[0].worker_id, "w-old");
    assert_int_equal(w[0].jobs_done, 4);
    cv_queue_close(q);
}

/* A version-1 file gets the workers table after adoption. */
static void test_old_file_at_version_1(void **state)
{
    fx *f = *state;
    write_old_file(f, 1);
    cv_queue *q;
    assert_int_equal(cv_queue_open(f->url, &f->opts, &q, &f->d), 0);
    check_current(f);
    check_old_rows(f, q);
    assert_int_equal(cv_queue_worker_beat(q, "w-new", NULL, true, &f->d), 0);
    cv_queue_worker_info w[4];
    int n = 0;
    assert_int_equal(cv_queue_workers_list(q, w, 4, &n, &f->d), 1);
    assert_int_equal(n, 1);
    cv_queue_close(q);
}

static void test_newer_file_refused(void **state)
{
    fx *f = *state;
    cv_queue *q;
    assert_int_equal(cv_queue_open(f->url, &f->opts, &q, &f->d), 0);
    cv_queue_close(q);
    sqlt_exec(f->path, "PRAGMA user_version = 3");
    assert_int_equal(cv_queue_open(f->url, &f->opts, &q, &f->d), -1);
    const cv_diag_entry *e = cv_diag_get(&f->d, f->d.n);
    assert_int_equal(e->code, 9006);
    assert_string_equal(e->span.file, f->path);
    assert_non_null(strstr(e->msg, f->path));
    assert_non_null(strstr(e->msg, "version 3, newer than this cuvil understands (2)"));
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_file_at_version_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_file_at_version_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_file_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
