/* The build DB: what the farm planned and what came of it, per revision.
 * SQLite in WAL mode, so `cuvil status` and the dashboard read while the
 * controller writes.  Schema changes are appended to `migrations`, never
 * edited: a database records its version (PRAGMA user_version) and is
 * brought forward on open (common/sqldb.h). */
#include "controller/builddb_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cv_sqldb_migration migrations[] = {
    /* 1: the first schema */
    {.sql =
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
    "  updated_ms INTEGER NOT NULL) WITHOUT ROWID;"},
    /* 2: build requests from `cuvil submit`, handled by the controller */
    {.sql =
    "CREATE TABLE requests("
    "  id INTEGER PRIMARY KEY,"
    "  created_ms INTEGER NOT NULL, handled_ms INTEGER,"
    "  revision TEXT, error TEXT);"
    "CREATE INDEX requests_open ON requests(id) WHERE handled_ms IS NULL;"},
    /* 3: the failure classifier's history: jobs broken per pattern of each
     * finished revision (controller/builddb_failures.c) */
    {.sql =
    "CREATE TABLE failure_revisions("
    "  revision_id INTEGER PRIMARY KEY REFERENCES revisions(id),"
    "  classifier INTEGER NOT NULL, classified_ms INTEGER NOT NULL);"
    "CREATE TABLE failure_patterns("
    "  revision_id INTEGER NOT NULL REFERENCES failure_revisions(revision_id),"
    "  pattern TEXT NOT NULL, class TEXT NOT NULL, code INTEGER NOT NULL,"
    "  jobs INTEGER NOT NULL, PRIMARY KEY(revision_id, pattern)) WITHOUT ROWID;"
    "CREATE INDEX failure_patterns_first ON failure_patterns(pattern, revision_id);"},
    /* 4: the dashboard's time saved finds the compile that produced a hit's
     * artifact by its L2 key */
    {.sql = "CREATE INDEX jobs_l2_key ON jobs(l2_key);"},
    /* 5: the commit's subject, author and time, and jobs by model path for
     * a model's history, for the dashboard */
    {.sql = "ALTER TABLE revisions ADD COLUMN subject TEXT;"
            "ALTER TABLE revisions ADD COLUMN author TEXT;"
            "ALTER TABLE revisions ADD COLUMN commit_ms INTEGER;"
            "CREATE INDEX jobs_model ON jobs(model_path, target);"},
    /* 6: why each compiled job missed the cache (the worker's cause word and
     * reason), for the dashboard's top misses over a window; jobs by the day
     * they finished, for its days chart */
    {.sql = "ALTER TABLE jobs ADD COLUMN miss TEXT;"
            "ALTER TABLE jobs ADD COLUMN miss_reason TEXT;"
            "CREATE INDEX jobs_missed ON jobs(finished_ms) WHERE miss IS NOT NULL;"
            "CREATE INDEX jobs_day ON jobs(COALESCE(finished_ms, queued_ms));"},
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

static const char *const rev_states[] = {"planning", "building", "succeeded", "failed"};

int cv_builddb_schema_version(void) { return SCHEMA_VERSION; }

const char *cv_rev_state_name(cv_rev_state s)
{
    return s >= 0 && s < CV_REV__COUNT ? rev_states[s] : "?";
}

int cv_builddb_open(const char *path, cv_builddb **out, cv_diag *d)
{
    *out = NULL;
    cv_builddb *db = calloc(1, sizeof *db);
    if (!db) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = path}, "out of memory");
        return -1;
    }
    /* WAL: the dashboard and `cuvil status` read while the controller writes. */
    static const cv_sqldb_config cfg = {
        .what = "build DB", .open_code = CV_E_BUILDDB_OPEN_FAILED,
        .storage_code = CV_E_BUILDDB_STORAGE, .busy_code = CV_E_BUILDDB_BUSY,
        .busy_timeout_ms = 5000, .foreign_keys = true,
        .migrations = migrations, .n_migrations = SCHEMA_VERSION,
    };
    if (cv_sqldb_open(&db->db, path, &cfg, d)) {
        free(db);
        return -1;
    }
    *out = db;
    return 0;
}

void cv_builddb_close(cv_builddb *db)
{
    if (!db)
        return;
    cv_sqldb_close(&db->db);
    free(db);
}

int cv_builddb_begin(cv_builddb *db, cv_diag *d)
{
    bool owned;
    return cv_sqldb_tx_begin(&db->db, &owned, d);
}

int cv_builddb_commit(cv_builddb *db, cv_diag *d) { return cv_sqldb_tx_end(&db->db, true, 0, d); }

void cv_builddb_rollback(cv_builddb *db) { cv_sqldb_rollback(&db->db); }

/* ---- farm status */

static const char SQL_STATUS_SET[] =
    "INSERT INTO farm_status(key,value,updated_ms) VALUES(?,?,?)"
    " ON CONFLICT(key) DO UPDATE SET value=excluded.value, updated_ms=excluded.updated_ms";
static const char SQL_STATUS_GET[] = "SELECT value FROM farm_status WHERE key=?";

int cv_builddb_status_set(cv_builddb *db, const char *key, const char *value, int64_t now_ms,
                          cv_diag *d)
{
    return cv_sqldb_exec(&db->db, d, SQL_STATUS_SET, "tti", key, value, now_ms) < 0 ? -1 : 0;
}

int cv_builddb_status_get(cv_builddb *db, const char *key, char **value, cv_diag *d)
{
    *value = NULL;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_STATUS_GET, "t", key);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc == 1) {
        *value = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_reset(st);
        if (!*value) {
            cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
            return -1;
        }
    }
    return rc;
}

int cv_builddb_source_status_put(cv_builddb *db, const cv_gitsource_status *st, int64_t now_ms,
                                 cv_diag *d)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:s, s:I, s:I, s:I}",
                          "revision", st->revision, "commit", st->commit,
                          "lastPollMs", (json_int_t)st->last_poll_ms,
                          "lastSuccessMs", (json_int_t)st->last_success_ms,
                          "lastChangeMs", (json_int_t)st->last_change_ms,
                          "failures", st->failures,
                          "nextAttemptMs", (json_int_t)st->next_attempt_ms,
                          "lastError", st->last_error,
                          "polls", (json_int_t)st->polls, "fetches", (json_int_t)st->fetches,
                          "errors", (json_int_t)st->errors);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text) {   /* last_error from libgit2 may not be UTF-8 */
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "cannot encode the source status");
        return -1;
    }
    int rc = cv_builddb_status_set(db, CV_STATUS_SOURCE, text, now_ms, d);
    free(text);
    return rc;
}

/* ---- revisions */

static const char SQL_REV_INSERT[] =
    "INSERT OR IGNORE INTO revisions(revision,state,created_ms) VALUES(?,'planning',?)";
static const char SQL_REV_ID[] = "SELECT id FROM revisions WHERE revision=?";
static const char SQL_REV_NAME[] = "SELECT revision FROM revisions WHERE id=?";
static const char SQL_REV_PENDING[] =
    "SELECT COUNT(*) FROM jobs WHERE revision_id=? AND state='queued'";
/* A revision fails on any job that is not ok or a hit, and on any error
 * about the revision itself (specs that did not load, unreadable models). */
static const char SQL_REV_BAD[] =
    "SELECT (SELECT COUNT(*) FROM jobs WHERE revision_id=?1 AND state NOT IN ('ok','hit'))"
    " + (SELECT COUNT(*) FROM diagnostics WHERE revision_id=?1 AND severity='error')";
static const char SQL_REV_FINISH[] =
    "UPDATE revisions SET state=?, finished_ms=?, planned_ms=COALESCE(planned_ms,?) WHERE id=?";
static const char SQL_REV_BUILDING[] =
    "UPDATE revisions SET state='building', planned_ms=? WHERE id=? AND state='planning'";
static const char SQL_REV_SUMMARY[] =
    "SELECT r.id, r.revision, r.state, r.created_ms, COALESCE(r.finished_ms,0),"
    " (SELECT COUNT(*) FROM jobs j WHERE j.revision_id=r.id),"
    " (SELECT COUNT(*) FROM jobs j WHERE j.revision_id=r.id AND j.state='hit'),"
    " (SELECT COUNT(*) FROM jobs j WHERE j.revision_id=r.id AND j.state='queued'),"
    " (SELECT COUNT(*) FROM jobs j WHERE j.revision_id=r.id AND j.state='ok')"
    " FROM revisions r WHERE (?1 IS NULL OR r.revision=?1) ORDER BY r.id DESC LIMIT 1";

int cv_builddb_revision_begin(cv_builddb *db, const char *revision, int64_t now_ms,
                              int64_t *rev_id, bool *created, cv_diag *d)
{
    bool owned;
    if (cv_sqldb_tx_begin(&db->db, &owned, d))
        return -1;
    int n = cv_sqldb_exec(&db->db, d, SQL_REV_INSERT, "ti", revision, now_ms);
    int rc = n < 0 ? -1 : 0;
    *created = n > 0;
    if (rc == 0 && cv_sqldb_int(&db->db, d, rev_id, SQL_REV_ID, "t", revision) != 1)
        rc = -1;
    if (rc == 0 && *created)
        rc = cv_builddb_status_set(db, CV_STATUS_LAST_ATTEMPTED, revision, now_ms, d);
    return cv_sqldb_tx_end(&db->db, owned, rc, d);
}

/* lastSucceededRevision only moves forward: a slow old revision that
 * finishes after a newer one does not take its place. */
static int advance_last_succeeded(cv_builddb *db, int64_t rev_id, int64_t now_ms, cv_diag *d)
{
    char *cur = NULL;
    int64_t cur_id = 0;
    int rc = cv_builddb_status_get(db, CV_STATUS_LAST_SUCCEEDED, &cur, d);
    if (rc == 1 && cv_sqldb_int(&db->db, d, &cur_id, SQL_REV_ID, "t", cur) < 0)
        rc = -1;
    free(cur);
    if (rc < 0 || cur_id > rev_id)
        return rc < 0 ? -1 : 0;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_REV_NAME, "i", rev_id);
    if (!st || cv_sqldb_step(&db->db, st, d) != 1)
        return -1;
    char name[CV_REVISION_MAX + 1];
    cv_sqldb_text(st, 0, name, sizeof name);
    sqlite3_reset(st);
    return cv_builddb_status_set(db, CV_STATUS_LAST_SUCCEEDED, name, now_ms, d);
}

int builddb_finish_if_done(cv_builddb *db, int64_t rev_id, bool force, int64_t now_ms,
                           cv_diag *d)
{
    int64_t pending = 0, bad = 0;
    if (cv_sqldb_int(&db->db, d, &pending, SQL_REV_PENDING, "i", rev_id) < 0 ||
        cv_sqldb_int(&db->db, d, &bad, SQL_REV_BAD, "i", rev_id) < 0)
        return -1;
    if (pending && !force)
        return 0;
    bool ok = !force && bad == 0;
    if (cv_sqldb_exec(&db->db, d, SQL_REV_FINISH, "tiii", ok ? "succeeded" : "failed", now_ms, now_ms,
                      rev_id) < 0)
        return -1;
    return ok ? advance_last_succeeded(db, rev_id, now_ms, d) : 0;
}

int cv_builddb_revision_planned(cv_builddb *db, int64_t rev_id, bool spec_errors, int64_t now_ms,
                                cv_diag *d)
{
    bool owned;
    if (cv_sqldb_tx_begin(&db->db, &owned, d))
        return -1;
    int rc = cv_sqldb_exec(&db->db, d, SQL_REV_BUILDING, "ii", now_ms, rev_id) < 0 ? -1 : 0;
    if (rc == 0)
        rc = builddb_finish_if_done(db, rev_id, spec_errors, now_ms, d);
    return cv_sqldb_tx_end(&db->db, owned, rc, d);
}

int cv_builddb_revision_summary(cv_builddb *db, const char *revision, cv_rev_summary *out,
                                cv_diag *d)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_REV_SUMMARY, "t", revision);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc != 1)
        return rc;
    out->id = sqlite3_column_int64(st, 0);
    cv_sqldb_text(st, 1, out->revision, sizeof out->revision);
    char state[16];
    cv_sqldb_text(st, 2, state, sizeof state);
    for (int i = 0; i < CV_REV__COUNT; i++)
        if (strcmp(state, rev_states[i]) == 0)
            out->state = (cv_rev_state)i;
    out->created_ms = sqlite3_column_int64(st, 3);
    out->finished_ms = sqlite3_column_int64(st, 4);
    out->jobs = sqlite3_column_int64(st, 5);
    out->hits = sqlite3_column_int64(st, 6);
    out->pending = sqlite3_column_int64(st, 7);
    out->ok = sqlite3_column_int64(st, 8);
    out->failed = out->jobs - out->hits - out->pending - out->ok;
    sqlite3_reset(st);
    return 1;
}

static const char SQL_REV_COMMIT[] =
    "UPDATE revisions SET subject=?, author=?, commit_ms=? WHERE id=?";

int cv_builddb_revision_commit(cv_builddb *db, int64_t rev_id, const cv_commit_info *c, cv_diag *d)
{
    return cv_sqldb_exec(&db->db, d, SQL_REV_COMMIT, "ttii", c->subject, c->author, c->time_ms,
                         rev_id) < 0 ? -1 : 0;
}

static const char SQL_PIPELINE_ADD[] =
    "INSERT OR REPLACE INTO pipelines(revision_id,name,spec) VALUES(?,?,?)";

int cv_builddb_pipeline_add(cv_builddb *db, int64_t rev_id, const char *name, const char *spec,
                            cv_diag *d)
{
    return cv_sqldb_exec(&db->db, d, SQL_PIPELINE_ADD, "itt", rev_id, name, spec) < 0 ? -1 : 0;
}

/* ---- diagnostics */

static const char SQL_DIAG_ADD[] =
    "INSERT INTO diagnostics(revision_id,result_id,diag_id,root_id,code,severity,file,line,col,"
    "end_line,end_col,path,message) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)";

int builddb_store_diags(cv_builddb *db, int64_t rev_id, int64_t result_id, const cv_diag *diags,
                        cv_diag *d)
{
    for (int i = 1; i <= diags->n; i++) {
        const cv_diag_entry *e = cv_diag_get(diags, i);
        /* z: 0 binds as NULL for the id that does not apply */
        if (cv_sqldb_exec(&db->db, d, SQL_DIAG_ADD, "zziiittiiiitt", rev_id, result_id,
                          (int64_t)e->id, (int64_t)e->root_id, (int64_t)e->code,
                          cv_severity_name(e->sev), e->span.file, (int64_t)e->span.line,
                          (int64_t)e->span.col, (int64_t)e->span.end_line,
                          (int64_t)e->span.end_col, e->path, e->msg) < 0)
            return -1;
    }
    return 0;
}

int cv_builddb_revision_diags(cv_builddb *db, int64_t rev_id, const cv_diag *diags, cv_diag *d)
{
    bool owned;
    if (cv_sqldb_tx_begin(&db->db, &owned, d))
        return -1;
    return cv_sqldb_tx_end(&db->db, owned, builddb_store_diags(db, rev_id, 0, diags, d), d);
}

/* ---- the blob memo */

static const char SQL_BLOB_GET[] = "SELECT sha256 FROM blob_digests WHERE blob_id=?";
static const char SQL_BLOB_PUT[] = "INSERT OR REPLACE INTO blob_digests(blob_id,sha256) VALUES(?,?)";

int cv_builddb_blob_digest_get(cv_builddb *db, const char *blob_id, char sha256[CV_DIGEST_HEX + 1],
                               cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_BLOB_GET, "t", blob_id);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc == 1) {
        cv_sqldb_text(st, 0, sha256, CV_DIGEST_HEX + 1);
        sqlite3_reset(st);
    }
    return rc;
}

int cv_builddb_blob_digest_put(cv_builddb *db, const char *blob_id, const char *sha256,
                               cv_diag *d)
{
    return cv_sqldb_exec(&db->db, d, SQL_BLOB_PUT, "tt", blob_id, sha256) < 0 ? -1 : 0;
}
