/* The build DB on real SQLite files: schema versions, revisions and their
 * states, jobs merged into one execution, results with REAPI-style
 * timestamps, artifacts, diagnostics, lastAttempted vs lastSucceeded, and
 * the blob memo. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "controller/builddb_internal.h"
#include "controller/controller.h"
#include "tests/support/tmpdir.h"

#define T0 INT64_C(1700000000000)
#define REV1 "main@sha1:1111111111111111111111111111111111111111"
#define REV2 "main@sha1:2222222222222222222222222222222222222222"
#define REV3 "main@sha1:3333333333333333333333333333333333333333"
#define MANIFEST "abababababababababababababababababababababababababababababababab"

typedef struct fx {
    char *dir, *path;   /* owned */
    cv_builddb *db;     /* owned */
    cv_diag d;
    int64_t seq;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("builddb");
    f->path = cv_tmpdir_path(f->dir, "build.db");
    cv_diag_init(&f->d);
    assert_int_equal(cv_builddb_open(f->path, &f->db, &f->d), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_builddb_close(f->db);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static void make_job(cv_job_msg *m, const char *id, const char *model, char key)
{
    memset(m, 0, sizeof *m);
    m->job_id = (char *)id;
    m->revision = REV1;
    m->pipeline = "vision";
    m->model_path = (char *)model;
    memset(m->model_digest, 'e', CV_DIGEST_HEX);
    m->target = "x86_64-avx2";
    m->precision = CV_PRECISION_FP32;
    m->opt_level = CV_OPT_O2;
    memset(m->l2_key, key, CV_DIGEST_HEX);
    m->attempt = 1;
}

static int64_t rev(fx *f, const char *name, int64_t now, bool want_created)
{
    int64_t id;
    bool created;
    assert_int_equal(cv_builddb_revision_begin(f->db, name, now, &id, &created, &f->d), 0);
    assert_int_equal(created, want_created);
    return id;
}

static void add_job(fx *f, int64_t rev_id, const char *id, const char *model, char key, bool hit,
                    const char *runner, int64_t now)
{
    cv_job_msg m;
    make_job(&m, id, model, key);
    int rc = cv_builddb_job_add(f->db, rev_id, &m, hit, runner, now, &f->d);
    if (rc)
        cv_diag_print(&f->d, stderr, false);
    assert_int_equal(rc, 0);
}

/* A result message for job_id, as a worker would complete it. */
static void result(fx *f, const char *job_id, cv_result_status status, int attempts,
                   int64_t now, int want_rc)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = strdup(job_id);
    r.status = status;
    r.l1 = CV_CACHE_MISS;
    r.l2 = CV_CACHE_MISS;
    if (status == CV_RESULT_OK)
        memcpy(r.artifact_manifest, MANIFEST, sizeof r.artifact_manifest);
    for (int i = 0; i < CV_TIMING__COUNT; i++)
        r.timings_ms[i] = 100 * (i + 1);   /* queued 100, fetch 200, frontend 300, ... */
    if (status == CV_RESULT_FAILED) {
        int root = cv_diag_add(&r.diags, CV_SEV_ERROR, 3101, (cv_span){"m.cvl.py", 5, 9, 5, 20},
                               "FunctionDef>Assign>Call[cvl.conv2d]", "channels differ");
        int child = cv_diag_error(&r.diags, 3011, (cv_span){0}, "shape unknown");
        cv_diag_set_root(&r.diags, child, root);
    }
    cv_queue_result q = {.seq = ++f->seq, .attempts = attempts};
    snprintf(q.job_id, sizeof q.job_id, "%s", job_id);
    assert_int_equal(cv_result_msg_encode(&r, &q.msg, &q.msg_len, &f->d), 0);
    assert_int_equal(cv_builddb_record_result(f->db, &q, now, &f->d), want_rc);
    free(q.msg);
    cv_result_msg_free(&r);
}

static int64_t count(fx *f, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static char *status(fx *f, const char *key)
{
    char *v = NULL;
    cv_builddb_status_get(f->db, key, &v, &f->d);
    return v;
}

static void assert_status(fx *f, const char *key, const char *want)
{
    char *v = status(f, key);
    if (want)
        assert_string_equal(v, want);
    else
        assert_null(v);
    free(v);
}

static void test_schema_versions(void **state)
{
    fx *f = *state;
    assert_true(cv_builddb_schema_version() >= 1);
    /* reopening runs no migration twice */
    cv_builddb_close(f->db);
    assert_int_equal(cv_builddb_open(f->path, &f->db, &f->d), 0);
    assert_int_equal(count(f, "PRAGMA user_version"), cv_builddb_schema_version());
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA journal_mode");
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    /* a newer cuvil wrote this file: refuse rather than guess */
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", cv_builddb_schema_version() + 1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    cv_builddb *other;
    assert_int_equal(cv_builddb_open(f->path, &other, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 9006);
    char *bad = cv_tmpdir_path(f->dir, "no/such/dir/x.db");
    assert_int_equal(cv_builddb_open(bad, &other, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6070);
    free(bad);
}

static void test_merged_jobs_share_a_result(void **state)
{
    fx *f = *state;
    int64_t r1 = rev(f, REV1, T0, true);
    assert_int_equal(rev(f, REV1, T0 + 5, false), r1);
    assert_status(f, CV_STATUS_LAST_ATTEMPTED, REV1);
    assert_status(f, CV_STATUS_LAST_SUCCEEDED, NULL);
    assert_int_equal(cv_builddb_pipeline_add(f->db, r1, "vision", "{\"targets\":[]}", &f->d), 0);
    add_job(f, r1, "j-hit", "models/a.onnx", 'a', true, NULL, T0 + 10);
    add_job(f, r1, "j-run", "models/b.onnx", 'b', false, NULL, T0 + 20);
    add_job(f, r1, "j-merged", "models/b2.onnx", 'b', false, "j-run", T0 + 30);
    assert_int_equal(cv_builddb_revision_planned(f->db, r1, false, T0 + 40, &f->d), 0);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, NULL, &s, &f->d), 1);
    assert_string_equal(s.revision, REV1);
    assert_int_equal(s.state, CV_REV_BUILDING);
    assert_int_equal(s.jobs, 3);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.pending, 2);

    result(f, "j-run", CV_RESULT_OK, 2, T0 + 5000, 0);
    cv_job_info ji;
    assert_int_equal(cv_builddb_job_get(f->db, "j-run", &ji, &f->d), 1);
    assert_string_equal(ji.state, "ok");
    assert_int_equal(ji.attempts, 2);
    /* queued 20, +100 wait, +200 fetch +300 frontend, +400 passes, +500 codegen, +600 upload */
    int64_t want[CV_JOB_TS__COUNT] = {T0 + 20, T0 + 120, T0 + 620, T0 + 1020, T0 + 1520,
                                      T0 + 2120, T0 + 5000};
    for (int i = 0; i < CV_JOB_TS__COUNT; i++)
        assert_int_equal(ji.ts[i], want[i]);
    assert_int_equal(cv_builddb_job_get(f->db, "j-merged", &ji, &f->d), 1);
    assert_string_equal(ji.state, "ok");
    assert_string_equal(ji.runner, "j-run");
    assert_int_equal(ji.ts[CV_JOB_TS_QUEUED], T0 + 30);        /* its own */
    assert_int_equal(ji.ts[CV_JOB_TS_CODEGEN], T0 + 1520);     /* the shared execution's */
    assert_int_equal(cv_builddb_job_get(f->db, "j-hit", &ji, &f->d), 1);
    assert_string_equal(ji.state, "hit");
    assert_int_equal(ji.ts[CV_JOB_TS_FINISHED], T0 + 10);
    assert_int_equal(cv_builddb_job_get(f->db, "nope", &ji, &f->d), 0);

    assert_int_equal(cv_builddb_revision_summary(f->db, REV1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.ok, 2);
    assert_int_equal(s.failed, 0);
    assert_int_equal(s.finished_ms, T0 + 5000);
    assert_status(f, CV_STATUS_LAST_SUCCEEDED, REV1);
    assert_int_equal(count(f, "SELECT COUNT(*) FROM results"), 1);

    char l2[65], man[65];
    assert_int_equal(cv_builddb_artifact_find(f->db, REV1, "models/b2.onnx", "x86_64-avx2", NULL,
                                              l2, man, &f->d), 1);
    assert_string_equal(man, MANIFEST);
    assert_int_equal(l2[0], 'b');
    assert_int_equal(cv_builddb_artifact_find(f->db, REV1, "models/a.onnx", "x86_64-avx2",
                                              "fp32", l2, man, &f->d), 1);
    assert_string_equal(man, "");   /* a hit: known by its L2 key only */
    assert_int_equal(l2[0], 'a');
    assert_int_equal(cv_builddb_artifact_find(f->db, REV1, "models/a.onnx", "x86_64-avx2",
                                              "int8", l2, man, &f->d), 0);

    /* the same result again (redelivered before the ack), or for a stranger */
    result(f, "j-run", CV_RESULT_OK, 2, T0 + 6000, 0);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6074);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->sev, CV_SEV_WARNING);
    result(f, "stranger", CV_RESULT_OK, 1, T0 + 6000, 0);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6074);
    assert_int_equal(count(f, "SELECT COUNT(*) FROM results"), 1);

    /* merged into an execution the build DB never recorded (its plan did
     * not commit): the result still reaches the job waiting on it */
    int64_t r2 = rev(f, REV2, T0 + 7000, true);
    add_job(f, r2, "j-waits", "models/c.onnx", 'c', false, "ghost", T0 + 7000);
    assert_int_equal(cv_builddb_revision_planned(f->db, r2, false, T0 + 7000, &f->d), 0);
    result(f, "ghost", CV_RESULT_OK, 1, T0 + 9000, 0);
    assert_int_equal(cv_builddb_job_get(f->db, "j-waits", &ji, &f->d), 1);
    assert_string_equal(ji.state, "ok");
    assert_int_equal(ji.ts[CV_JOB_TS_STARTED], T0 + 7100);
    assert_int_equal(cv_builddb_revision_summary(f->db, REV2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(f->d.n_errors, 0);
}

static void test_failures_and_revision_order(void **state)
{
    fx *f = *state;
    int64_t r1 = rev(f, REV1, T0, true);
    add_job(f, r1, "r1-a", "models/a.onnx", 'a', false, NULL, T0);
    assert_int_equal(cv_builddb_revision_planned(f->db, r1, false, T0, &f->d), 0);
    /* rev 2 merges into rev 1's job, and runs one of its own */
    int64_t r2 = rev(f, REV2, T0 + 100, true);
    add_job(f, r2, "r2-a", "models/a.onnx", 'a', false, "r1-a", T0 + 100);
    add_job(f, r2, "r2-b", "models/b.onnx", 'b', false, NULL, T0 + 100);
    assert_int_equal(cv_builddb_revision_planned(f->db, r2, false, T0 + 100, &f->d), 0);
    /* rev 3 is all hits: succeeded at once */
    int64_t r3 = rev(f, REV3, T0 + 200, true);
    add_job(f, r3, "r3-a", "models/a.onnx", 'c', true, NULL, T0 + 200);
    assert_int_equal(cv_builddb_revision_planned(f->db, r3, false, T0 + 200, &f->d), 0);
    assert_status(f, CV_STATUS_LAST_ATTEMPTED, REV3);
    assert_status(f, CV_STATUS_LAST_SUCCEEDED, REV3);

    result(f, "r1-a", CV_RESULT_FAILED, 1, T0 + 1000, 0);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, REV1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    assert_int_equal(s.failed, 1);
    assert_int_equal(cv_builddb_revision_summary(f->db, REV2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_BUILDING);   /* r2-b still pending */
    assert_int_equal(s.failed, 1);                /* r2-a got r1-a's failure */
    assert_int_equal(count(f, "SELECT COUNT(*) FROM diagnostics WHERE result_id IS NOT NULL"), 2);
    assert_int_equal(count(f, "SELECT root_id FROM diagnostics WHERE code=3011"), 1);
    result(f, "r2-b", CV_RESULT_OK, 1, T0 + 2000, 0);
    assert_int_equal(cv_builddb_revision_summary(f->db, REV2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    /* older revisions never take lastSucceeded back */
    assert_status(f, CV_STATUS_LAST_SUCCEEDED, REV3);
    assert_int_equal(cv_builddb_revision_summary(f->db, NULL, &s, &f->d), 1);
    assert_string_equal(s.revision, REV3);
    assert_int_equal(cv_builddb_revision_summary(f->db, "main@sha1:none", &s, &f->d), 0);
}

static void test_spec_errors_and_memo(void **state)
{
    fx *f = *state;
    int64_t r1 = rev(f, REV1, T0, true);
    cv_diag spec;
    cv_diag_init(&spec);
    cv_diag_error(&spec, 6009, (cv_span){"cuvil/p.yaml", 7, 26, 7, 38}, "unknown target");
    assert_int_equal(cv_builddb_revision_diags(f->db, r1, &spec, &f->d), 0);
    cv_diag_free(&spec);
    assert_int_equal(cv_builddb_revision_planned(f->db, r1, true, T0 + 1, &f->d), 0);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, REV1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    assert_status(f, CV_STATUS_LAST_ATTEMPTED, REV1);
    assert_status(f, CV_STATUS_LAST_SUCCEEDED, NULL);
    assert_int_equal(count(f, "SELECT line*100+col FROM diagnostics WHERE code=6009"), 726);

    char sha[65];
    const char *blob = "0123456789abcdef0123456789abcdef01234567";
    assert_int_equal(cv_builddb_blob_digest_get(f->db, blob, sha, &f->d), 0);
    assert_int_equal(cv_builddb_blob_digest_put(f->db, blob, MANIFEST, &f->d), 0);
    assert_int_equal(cv_builddb_blob_digest_get(f->db, blob, sha, &f->d), 1);
    assert_string_equal(sha, MANIFEST);

    /* a result that does not decode is skipped with a warning, not an error */
    cv_queue_result q = {.seq = 1, .attempts = 1, .msg = "{\"job_id\":1}", .msg_len = 12};
    snprintf(q.job_id, sizeof q.job_id, "x");
    assert_int_equal(cv_builddb_record_result(f->db, &q, T0, &f->d), 0);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6074);
    /* explicit transactions nest the inner calls */
    assert_int_equal(cv_builddb_begin(f->db, &f->d), 0);
    assert_int_equal(cv_builddb_status_set(f->db, "k", "v", T0, &f->d), 0);
    cv_builddb_rollback(f->db);
    assert_status(f, "k", NULL);
    assert_int_equal(cv_builddb_begin(f->db, &f->d), 0);
    int64_t id;
    bool created;
    assert_int_equal(cv_builddb_revision_begin(f->db, REV2, T0, &id, &created, &f->d), 0);
    assert_int_equal(cv_builddb_commit(f->db, &f->d), 0);
    assert_status(f, CV_STATUS_LAST_ATTEMPTED, REV2);

    /* the git source's status, for `cuvil status` in another process */
    cv_gitsource_status gs = {.failures = 3, .next_attempt_ms = T0 + 8000, .polls = 7};
    snprintf(gs.last_error, sizeof gs.last_error, "cannot list /srv/models: not found");
    assert_int_equal(cv_builddb_source_status_put(f->db, &gs, T0, &f->d), 0);
    char *v = status(f, CV_STATUS_SOURCE);
    assert_non_null(strstr(v, "\"failures\":3"));
    assert_non_null(strstr(v, "\"lastError\":\"cannot list /srv/models: not found\""));
    assert_non_null(strstr(v, "\"nextAttemptMs\":1700000008000"));
    free(v);
    assert_int_equal(f->d.n_errors, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_schema_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merged_jobs_share_a_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_and_revision_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec_errors_and_memo, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
