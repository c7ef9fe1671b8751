/* The build DB opens files written before common/sqldb.c (their version in a
 * schema_version table) without losing a row, brings them to the current
 * version in PRAGMA user_version, and refuses a file from a newer cuvil. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/sqlite_testlib.h"

#define T0 INT64_C(1700000000000)
#define REV1 "main@sha1:1111111111111111111111111111111111111111"
#define REV2 "main@sha1:2222222222222222222222222222222222222222"
#define KEY "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

/* The build DB's schema as main wrote it before common/sqldb.c, version in
 * a schema_version table: migrations 1-2, then 3 (copied, not shared, so the
 * test keeps the old format however the code changes). */
static const char OLD_SCHEMA_V1_V2[] =
    "CREATE TABLE revisions("
    "  id INTEGER PRIMARY KEY,"
    "  revision TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL CHECK (state IN ('planning','building','succeeded','failed')),"
    "  created_ms INTEGER NOT NULL, planned_ms INTEGER, finished_ms INTEGER);"
    "CREATE TABLE pipelines("
    "  id INTEGER PRIMARY KEY,"
    "  revision_id INTEGER NOT NULL REFERENCES revisions(id),"
    "  name TEXT NOT NULL, spec TEXT NOT NULL, UNIQUE(revision_id, name));"
    "CREATE TABLE results("
    "  id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"            /* the execution that produced it */
    "  status TEXT NOT NULL, attempts INTEGER NOT NULL, dead_letter INTEGER NOT NULL,"
    "  l1 TEXT NOT NULL, l2 TEXT NOT NULL, artifact_manifest TEXT,"
    "  queue_seq INTEGER, msg TEXT NOT NULL, recorded_ms INTEGER NOT NULL);"
    "CREATE TABLE jobs("
    "  id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL UNIQUE,"
    "  revision_id INTEGER NOT NULL REFERENCES revisions(id),"
    "  pipeline TEXT NOT NULL, model_path TEXT NOT NULL, model_digest TEXT NOT NULL,"
    "  target TEXT NOT NULL, precision TEXT NOT NULL, opt_level TEXT NOT NULL,"
    "  l2_key TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN"
    "    ('queued','hit','ok','failed','ice','timeout','oom','infra')),"
    "  runner TEXT NOT NULL,"            /* the execution this job waits on (maybe itself) */
    "  result_id INTEGER REFERENCES results(id),"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  queued_ms INTEGER NOT NULL, started_ms INTEGER, frontend_ms INTEGER,"
    "  passes_ms INTEGER, codegen_ms INTEGER, uploaded_ms INTEGER, finished_ms INTEGER);"
    "CREATE INDEX jobs_revision ON jobs(revision_id, state);"
    "CREATE INDEX jobs_waiting ON jobs(runner) WHERE state='queued';"
    "CREATE TABLE artifacts("
    "  job_row INTEGER PRIMARY KEY REFERENCES jobs(id),"
    "  revision_id INTEGER NOT NULL REFERENCES revisions(id),"
    "  model_path TEXT NOT NULL, target TEXT NOT NULL, precision TEXT NOT NULL,"
    "  pipeline TEXT NOT NULL, l2_key TEXT NOT NULL, manifest TEXT);"
    "CREATE INDEX artifacts_lookup ON artifacts(revision_id, model_path, target, precision);"
    "CREATE TABLE diagnostics("
    "  id INTEGER PRIMARY KEY,"
    "  revision_id INTEGER REFERENCES revisions(id),"
    "  result_id INTEGER REFERENCES results(id),"
    "  diag_id INTEGER NOT NULL, root_id INTEGER NOT NULL, code INTEGER NOT NULL,"
    "  severity TEXT NOT NULL, file TEXT, line INTEGER, col INTEGER, end_line INTEGER,"
    "  end_col INTEGER, path TEXT, message TEXT NOT NULL,"
    "  CHECK (revision_id IS NOT NULL OR result_id IS NOT NULL));"
    "CREATE INDEX diagnostics_result ON diagnostics(result_id);"
    "CREATE INDEX diagnostics_revision ON diagnostics(revision_id);"
    "CREATE TABLE blob_digests(blob_id TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE farm_status(key TEXT PRIMARY KEY, value TEXT NOT NULL,"
    "  updated_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE requests("
    "  id INTEGER PRIMARY KEY,"
    "  created_ms INTEGER NOT NULL, handled_ms INTEGER,"
    "  revision TEXT, error TEXT);"
    "CREATE INDEX requests_open ON requests(id) WHERE handled_ms IS NULL;";
static const char OLD_SCHEMA_V3[] =
    "CREATE TABLE failure_revisions("
    "  revision_id INTEGER PRIMARY KEY REFERENCES revisions(id),"
    "  classifier INTEGER NOT NULL, classified_ms INTEGER NOT NULL);"
    "CREATE TABLE failure_patterns("
    "  revision_id INTEGER NOT NULL REFERENCES failure_revisions(revision_id),"
    "  pattern TEXT NOT NULL, class TEXT NOT NULL, code INTEGER NOT NULL,"
    "  jobs INTEGER NOT NULL, PRIMARY KEY(revision_id, pattern)) WITHOUT ROWID;"
    "CREATE INDEX failure_patterns_first ON failure_patterns(pattern, revision_id);";

/* Rows in every table of the first two versions. */
static const char OLD_ROWS[] =
    "INSERT INTO revisions VALUES(1,'" REV1 "','succeeded',1700000000000,1700000000001,"
    "  1700000000002);"
    "INSERT INTO revisions VALUES(2,'" REV2 "','building',1700000000010,1700000000011,NULL);"
    "INSERT INTO pipelines VALUES(1,2,'vision','{}');"
    "INSERT INTO results VALUES(1,'j0','ok',1,0,'" KEY "','" KEY "',NULL,7,'',1700000000003);"
    "INSERT INTO jobs(id,job_id,revision_id,pipeline,model_path,model_digest,target,precision,"
    "  opt_level,l2_key,state,runner,result_id,attempts,queued_ms) VALUES"
    "  (1,'j0',1,'vision','m.onnx','d','x86_64-avx2','fp32','O2','" KEY "','ok','j0',1,1,"
    "   1700000000000),"
    "  (2,'j1',2,'vision','m.onnx','d','x86_64-avx2','fp32','O2','" KEY "','queued','j1',NULL,0,"
    "   1700000000010),"
    "  (3,'j2',2,'vision','n.onnx','d','x86_64-avx2','fp32','O2','" KEY "','hit','j2',NULL,0,"
    "   1700000000010);"
    "INSERT INTO artifacts VALUES(1,1,'m.onnx','x86_64-avx2','fp32','vision','" KEY "','{}');"
    "INSERT INTO diagnostics(revision_id,result_id,diag_id,root_id,code,severity,message)"
    "  VALUES(2,NULL,1,0,6001,'warning','old warning');"
    "INSERT INTO blob_digests VALUES('blob1','" KEY "');"
    "INSERT INTO farm_status VALUES('lastSucceededRevision','" REV1 "',1700000000002);"
    "INSERT INTO requests(id,created_ms) VALUES(1,1700000000020);";

typedef struct fx {
    char *dir, *path;
    cv_diag d;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("builddb-migrate");
    f->path = cv_tmpdir_path(f->dir, "build.db");
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

/* Writes an old-format file at `version` (2 or 3) with OLD_ROWS in it. */
static void write_old_file(const char *path, int version)
{
    sqlt_exec(path, "PRAGMA journal_mode=WAL;"
                   "CREATE TABLE schema_version(version INTEGER NOT NULL);");
    sqlt_exec(path, OLD_SCHEMA_V1_V2);
    sqlt_exec(path, "INSERT INTO schema_version VALUES(1),(2);");
    if (version == 3) {
        sqlt_exec(path, OLD_SCHEMA_V3);
        sqlt_exec(path, "INSERT INTO schema_version VALUES(3);"
                       "INSERT INTO failure_revisions VALUES(1,1,1700000000004);"
                       "INSERT INTO failure_patterns VALUES(1,'p','model',3101,2);");
    }
    sqlt_exec(path, OLD_ROWS);
}

/* Every old row is there, read through the build DB's own API. */
static void check_old_rows(fx *f, cv_builddb *db)
{
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(db, REV2, &s, &f->d), 1);
    assert_int_equal(s.id, 2);
    assert_int_equal(s.state, CV_REV_BUILDING);
    assert_int_equal(s.jobs, 2);
    assert_int_equal(s.pending, 1);
    assert_int_equal(s.hits, 1);
    assert_int_equal(cv_builddb_revision_summary(db, REV1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.ok, 1);
    cv_job_info j;
    assert_int_equal(cv_builddb_job_get(db, "j1", &j, &f->d), 1);
    assert_string_equal(j.state, "queued");
    char *v = NULL;
    assert_int_equal(cv_builddb_status_get(db, CV_STATUS_LAST_SUCCEEDED, &v, &f->d), 1);
    assert_string_equal(v, REV1);
    free(v);
    char sha[CV_DIGEST_HEX + 1];
    assert_int_equal(cv_builddb_blob_digest_get(db, "blob1", sha, &f->d), 1);
    assert_string_equal(sha, KEY);
    cv_build_request r;
    assert_int_equal(cv_builddb_request_next(db, &r, &f->d), 1);
    assert_int_equal(r.id, 1);
    static const struct { const char *sql; int64_t n; } counts[] = {
        {"SELECT COUNT(*) FROM revisions", 2}, {"SELECT COUNT(*) FROM pipelines", 1},
        {"SELECT COUNT(*) FROM results", 1},   {"SELECT COUNT(*) FROM jobs", 3},
        {"SELECT COUNT(*) FROM artifacts", 1}, {"SELECT COUNT(*) FROM diagnostics", 1},
        {"SELECT COUNT(*) FROM blob_digests", 1}, {"SELECT COUNT(*) FROM farm_status", 1},
        {"SELECT COUNT(*) FROM requests", 1},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        assert_int_equal(sqlt_int(f->path, counts[i].sql), counts[i].n);
}

static void check_current(fx *f)
{
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), cv_builddb_schema_version());
    assert_int_equal(sqlt_int(f->path, "SELECT COUNT(*) FROM sqlite_master"
                                      " WHERE name='schema_version'"), 0);
}

static void test_old_file_at_version_3(void **state)
{
    fx *f = *state;
    write_old_file(f->path, 3);
    cv_builddb *db;
    assert_int_equal(cv_builddb_open(f->path, &db, &f->d), 0);
    check_old_rows(f, db);
    check_current(f);
    assert_int_equal(sqlt_int(f->path, "SELECT jobs FROM failure_patterns WHERE pattern='p'"), 2);
    /* and it keeps working: the queued job finishes its revision */
    assert_int_equal(cv_builddb_revision_planned(db, 2, true, T0 + 30, &f->d), 0);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(db, REV2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    cv_builddb_close(db);
    /* a second open changes nothing */
    assert_int_equal(cv_builddb_open(f->path, &db, &f->d), 0);
    check_current(f);
    cv_builddb_close(db);
}

/* A file two versions old runs the missing migration after adoption. */
static void test_old_file_at_version_2(void **state)
{
    fx *f = *state;
    write_old_file(f->path, 2);
    cv_builddb *db;
    assert_int_equal(cv_builddb_open(f->path, &db, &f->d), 0);
    check_old_rows(f, db);
    check_current(f);
    assert_int_equal(sqlt_int(f->path, "SELECT COUNT(*) FROM failure_revisions"), 0);
    cv_builddb_close(db);
}

static void test_newer_file_refused(void **state)
{
    fx *f = *state;
    cv_builddb *db;
    assert_int_equal(cv_builddb_open(f->path, &db, &f->d), 0);
    cv_builddb_close(db);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", cv_builddb_schema_version() + 1);
    sqlt_exec(f->path, sql);
    assert_int_equal(cv_builddb_open(f->path, &db, &f->d), -1);
    const cv_diag_entry *e = cv_diag_get(&f->d, f->d.n);
    assert_int_equal(e->code, 9006);
    assert_string_equal(e->span.file, f->path);
    assert_non_null(strstr(e->msg, f->path));
    char want[64];
    snprintf(want, sizeof want, "version %d, newer than this cuvil understands (%d)",
             cv_builddb_schema_version() + 1, cv_builddb_schema_version());
    assert_non_null(strstr(e->msg, want));
    /* refused before anything is written */
    assert_int_equal(sqlt_int(f->path, "PRAGMA user_version"), cv_builddb_schema_version() + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_file_at_version_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_file_at_version_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_file_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
