/* Jobs, results and artifacts in the build DB.
 *
 * Each planned job is a row.  A job merged into an identical one in flight
 * (same L2 key) records that execution as its `runner`; when the runner's
 * result arrives, every job waiting on it gets the status, the shared
 * execution timestamps and the artifact, and each keeps its own queued
 * time.  Timestamps follow REAPI's ExecutedActionMetadata: the worker
 * reports durations, which become points in time from the queued time. */
#include "controller/builddb_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL_JOB_ADD[] =
    "INSERT INTO jobs(job_id,revision_id,pipeline,model_path,model_digest,target,precision,"
    "opt_level,l2_key,state,runner,queued_ms,finished_ms) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)";
static const char SQL_ARTIFACT_HIT[] =
    "INSERT OR REPLACE INTO artifacts(job_row,revision_id,model_path,target,precision,pipeline,"
    "l2_key,manifest) VALUES(last_insert_rowid(),?,?,?,?,?,?,NULL)";

int cv_builddb_job_add(cv_builddb *db, int64_t rev_id, const cv_job_msg *job, bool hit,
                       const char *runner, int64_t now_ms, cv_diag *d)
{
    const char *prec = cv_precision_name(job->precision);
    /* finished_ms is NULL until a queued job finishes */
    if (cv_sqldb_exec(&db->db, d, SQL_JOB_ADD, hit ? "titttttttttii" : "titttttttttin",
                      job->job_id, rev_id, job->pipeline, job->model_path, job->model_digest,
                      job->target, prec, cv_opt_level_name(job->opt_level), job->l2_key,
                      hit ? "hit" : "queued", runner ? runner : job->job_id, now_ms, now_ms) < 0)
        return -1;
    if (!hit)
        return 0;
    return cv_sqldb_exec(&db->db, d, SQL_ARTIFACT_HIT, "ittttt", rev_id, job->model_path,
                         job->target, prec, job->pipeline, job->l2_key) < 0 ? -1 : 0;
}

static const char SQL_JOB_GET[] =
    "SELECT job_id, state, runner, l2_key, attempts, queued_ms, started_ms, frontend_ms,"
    " passes_ms, codegen_ms, uploaded_ms, finished_ms FROM jobs WHERE job_id=?";

int cv_builddb_job_get(cv_builddb *db, const char *job_id, cv_job_info *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_JOB_GET, "t", job_id);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc != 1)
        return rc;
    cv_sqldb_text(st, 0, out->job_id, sizeof out->job_id);
    cv_sqldb_text(st, 1, out->state, sizeof out->state);
    cv_sqldb_text(st, 2, out->runner, sizeof out->runner);
    cv_sqldb_text(st, 3, out->l2_key, sizeof out->l2_key);
    out->attempts = sqlite3_column_int(st, 4);
    for (int i = 0; i < CV_JOB_TS__COUNT; i++)
        out->ts[i] = sqlite3_column_int64(st, 5 + i);
    sqlite3_reset(st);
    return 1;
}

/* ---- results */

/* The jobs waiting on an execution, and when it was queued: its own row's
 * time, or the earliest waiter's when the execution itself is not in the
 * build DB (queued by a plan whose transaction did not commit). */
static const char SQL_WAITING[] =
    "SELECT COUNT(*), COALESCE((SELECT queued_ms FROM jobs WHERE job_id=?1), MIN(queued_ms))"
    " FROM jobs WHERE runner=?1 AND state='queued'";
static const char SQL_RESULT_ADD[] =
    "INSERT INTO results(job_id,status,attempts,dead_letter,l1,l2,artifact_manifest,queue_seq,"
    "msg,recorded_ms) VALUES(?,?,?,?,?,?,?,?,?,?)";
static const char SQL_JOBS_DONE[] =
    "UPDATE jobs SET state=?, result_id=?, attempts=?, started_ms=?, frontend_ms=?, passes_ms=?,"
    " codegen_ms=?, uploaded_ms=?, finished_ms=?, miss=?, miss_reason=?"
    " WHERE runner=? AND state='queued'";
static const char SQL_ARTIFACTS_DONE[] =
    "INSERT OR REPLACE INTO artifacts(job_row,revision_id,model_path,target,precision,pipeline,"
    "l2_key,manifest) SELECT id, revision_id, model_path, target, precision, pipeline, l2_key, ?"
    " FROM jobs WHERE result_id=?";
static const char SQL_RESULT_REVS[] = "SELECT DISTINCT revision_id FROM jobs WHERE result_id=?";

static int warn_ignored(const cv_queue_result *r, cv_diag *d, const char *why)
{
    cv_diag_add(d, CV_SEV_WARNING, CV_E_BUILDDB_UNKNOWN_JOB, (cv_span){0}, NULL,
                "result #%lld for job '%s' ignored: %s", (long long)r->seq, r->job_id, why);
    return 0;
}

/* Points in time from the worker's durations: started = queued + wait,
 * then each stage ends where the previous one did plus its duration. */
static void result_times(const cv_result_msg *m, int64_t queued_ms, int64_t now_ms,
                         int64_t ts[CV_JOB_TS__COUNT])
{
    const int64_t *t = m->timings_ms;
    ts[CV_JOB_TS_QUEUED] = queued_ms;
    ts[CV_JOB_TS_STARTED] = queued_ms + t[CV_TIMING_QUEUED];
    ts[CV_JOB_TS_FRONTEND] = ts[CV_JOB_TS_STARTED] + t[CV_TIMING_FETCH] + t[CV_TIMING_FRONTEND];
    ts[CV_JOB_TS_PASSES] = ts[CV_JOB_TS_FRONTEND] + t[CV_TIMING_PASSES];
    ts[CV_JOB_TS_CODEGEN] = ts[CV_JOB_TS_PASSES] + t[CV_TIMING_CODEGEN];
    ts[CV_JOB_TS_UPLOADED] = ts[CV_JOB_TS_CODEGEN] + t[CV_TIMING_UPLOAD];
    ts[CV_JOB_TS_FINISHED] = now_ms;
}

static int store_result(cv_builddb *db, const cv_queue_result *r, const cv_result_msg *m,
                        int64_t queued_ms, int64_t now_ms, cv_diag *d)
{
    int64_t ts[CV_JOB_TS__COUNT], result_id;
    result_times(m, queued_ms, now_ms, ts);
    const char *status = cv_result_status_name(m->status);
    const char *manifest = m->artifact_manifest[0] ? m->artifact_manifest : NULL;
    if (cv_sqldb_exec(&db->db, d, SQL_RESULT_ADD, "ttiitttiti", r->job_id, status,
                      (int64_t)r->attempts, (int64_t)r->dead_letter, cv_cache_outcome_name(m->l1),
                      cv_cache_outcome_name(m->l2), manifest, r->seq, r->msg, now_ms) < 0)
        return -1;
    result_id = sqlite3_last_insert_rowid(db->db.db);
    if (builddb_store_diags(db, 0, result_id, &m->diags, d) ||
        cv_sqldb_exec(&db->db, d, SQL_JOBS_DONE, "tiiiiiiiittt", status, result_id,
                      (int64_t)r->attempts, ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], m->miss,
                      m->miss_reason, r->job_id) < 0)
        return -1;
    if (m->status == CV_RESULT_OK && manifest &&
        cv_sqldb_exec(&db->db, d, SQL_ARTIFACTS_DONE, "ti", manifest, result_id) < 0)
        return -1;
    /* finish the revisions this result completes (a merged job may belong
     * to a later revision than the one that queued the execution) */
    int64_t revs[64];
    int n = 0, rc = 0;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_RESULT_REVS, "i", result_id);
    while (st && (rc = cv_sqldb_step(&db->db, st, d)) == 1)
        if (n < 64)
            revs[n++] = sqlite3_column_int64(st, 0);
    if (!st || rc < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (builddb_finish_if_done(db, revs[i], false, now_ms, d))
            return -1;
    return 0;
}

int cv_builddb_record_result(cv_builddb *db, const cv_queue_result *r, int64_t now_ms,
                             cv_diag *d)
{
    cv_result_msg m;
    cv_diag bad;
    cv_diag_init(&bad);
    int rc = cv_result_msg_decode(r->msg, r->msg_len, "result", &m, &bad);
    cv_diag_free(&bad);
    if (rc) {
        cv_result_msg_free(&m);
        return warn_ignored(r, d, "the message does not decode");
    }
    bool owned;
    int64_t queued_ms = 0, waiting = 0;
    if (cv_sqldb_tx_begin(&db->db, &owned, d)) {
        cv_result_msg_free(&m);
        return -1;
    }
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_WAITING, "t", r->job_id);
    rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc == 1) {
        waiting = sqlite3_column_int64(st, 0);
        queued_ms = sqlite3_column_int64(st, 1);
        sqlite3_reset(st);
        rc = waiting ? store_result(db, r, &m, queued_ms, now_ms, d)
                     : warn_ignored(r, d, "no job waits on it (unknown, or already recorded)");
    }
    cv_result_msg_free(&m);
    return cv_sqldb_tx_end(&db->db, owned, rc, d);
}

/* ---- artifacts */

static const char SQL_ARTIFACT_FIND[] =
    "SELECT a.l2_key, COALESCE(a.manifest,'') FROM artifacts a JOIN revisions r"
    " ON r.id=a.revision_id WHERE r.revision=? AND a.model_path=? AND a.target=?"
    " AND (?4 IS NULL OR a.precision=?4) ORDER BY a.manifest IS NULL, a.job_row LIMIT 1";

int cv_builddb_artifact_find(cv_builddb *db, const char *revision, const char *model_path,
                             const char *target, const char *precision,
                             char l2_key[CV_DIGEST_HEX + 1], char manifest[CV_DIGEST_HEX + 1],
                             cv_diag *d)
{
    l2_key[0] = manifest[0] = 0;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_ARTIFACT_FIND, "tttt", revision, model_path,
                                      target, precision);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc == 1) {
        cv_sqldb_text(st, 0, l2_key, CV_DIGEST_HEX + 1);
        cv_sqldb_text(st, 1, manifest, CV_DIGEST_HEX + 1);
        sqlite3_reset(st);
    }
    return rc;
}
