/* The build DB: SQLite in WAL mode holding revisions, pipelines, jobs with
 * REAPI-style timestamps, results, artifacts, diagnostics, build requests
 * and the farm status (CV6070-CV6089).  Transactions are internal
 * (controller/builddb_internal.h). */
#ifndef CV_CONTROLLER_BUILDDB_H
#define CV_CONTROLLER_BUILDDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "controller/gitsource.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "spec/spec.h"

typedef struct cv_builddb cv_builddb;   /* opaque; one per process */

typedef enum {
    CV_REV_PLANNING, CV_REV_BUILDING, CV_REV_SUCCEEDED, CV_REV_FAILED, CV_REV__COUNT
} cv_rev_state;

/* Job timestamps, REAPI style (ms since the epoch; 0 = not reached):
 * queued, worker started, front end done, passes done, codegen done,
 * artifact uploaded, result recorded. */
typedef enum {
    CV_JOB_TS_QUEUED, CV_JOB_TS_STARTED, CV_JOB_TS_FRONTEND, CV_JOB_TS_PASSES,
    CV_JOB_TS_CODEGEN, CV_JOB_TS_UPLOADED, CV_JOB_TS_FINISHED, CV_JOB_TS__COUNT
} cv_job_ts;

typedef struct cv_rev_summary {
    int64_t id;
    char revision[CV_REVISION_MAX + 1];
    cv_rev_state state;
    int64_t created_ms, finished_ms;
    int64_t jobs, hits, pending, ok, failed;   /* failed: every non-ok result */
} cv_rev_summary;

typedef struct cv_job_info {
    char job_id[CV_MSG_ID_MAX + 1];
    char state[16];                   /* queued, hit, or a result status name */
    char runner[CV_MSG_ID_MAX + 1];   /* the queued job that runs for this one */
    char l2_key[CV_DIGEST_HEX + 1];
    int attempts;
    int64_t ts[CV_JOB_TS__COUNT];
} cv_job_info;

int  cv_builddb_open(const char *path, cv_builddb **out, cv_diag *d);
void cv_builddb_close(cv_builddb *db);
int  cv_builddb_schema_version(void);      /* what this build writes */

/* Records who made the revision's commit and why (subject, author, time). */
int  cv_builddb_revision_commit(cv_builddb *db, int64_t rev_id, const cv_commit_info *c, cv_diag *d);
/* Finds or creates the revision row; sets lastAttemptedRevision.
 * *created says whether it is new (then in state planning). */
int  cv_builddb_revision_begin(cv_builddb *db, const char *revision, int64_t now_ms,
                               int64_t *rev_id, bool *created, cv_diag *d);
/* planning -> building, or straight to succeeded/failed when no job is
 * pending (an all-hit revision) or spec_errors (nothing was planned).  A
 * revision with error diagnostics of its own (cv_builddb_revision_diags)
 * ends failed. */
int  cv_builddb_revision_planned(cv_builddb *db, int64_t rev_id, bool spec_errors, int64_t now_ms,
                                 cv_diag *d);
int  cv_builddb_revision_summary(cv_builddb *db, const char *revision, cv_rev_summary *out,
                                 cv_diag *d);   /* revision NULL = the newest; 1 found, 0 none */
int  cv_builddb_pipeline_add(cv_builddb *db, int64_t rev_id, const char *name, const char *spec,
                             cv_diag *d);
/* Diagnostics about the revision itself (spec errors, planner warnings). */
int  cv_builddb_revision_diags(cv_builddb *db, int64_t rev_id, const cv_diag *diags, cv_diag *d);

/* hit: recorded as finished now; otherwise queued, to be run as `runner`
 * (the job itself, or the in-flight job it was merged into). */
int  cv_builddb_job_add(cv_builddb *db, int64_t rev_id, const cv_job_msg *job, bool hit,
                        const char *runner, int64_t now_ms, cv_diag *d);
int  cv_builddb_job_get(cv_builddb *db, const char *job_id, cv_job_info *out, cv_diag *d);
/* Records one result from the queue's stream (see cv_queue_result) for the
 * job that ran and every job merged into it, with their timestamps, the
 * artifact and the diagnostics, then finishes revisions left with no
 * pending job (lastSucceededRevision moves forward only).  A result no job
 * waits on (unknown, or already recorded: delivery is at-least-once) is
 * ignored with a CV6074 warning. */
int  cv_builddb_record_result(cv_builddb *db, const cv_queue_result *r, int64_t now_ms,
                              cv_diag *d);
/* The artifact of a model in a revision: 1 found, 0 none.  manifest is ""
 * when only the L2 key is known (a cache hit). */
int  cv_builddb_artifact_find(cv_builddb *db, const char *revision, const char *model_path,
                              const char *target, const char *precision,
                              char l2_key[CV_DIGEST_HEX + 1], char manifest[CV_DIGEST_HEX + 1],
                              cv_diag *d);

const char *cv_rev_state_name(cv_rev_state s);   /* "planning", "building", ... */

/* ---- reading the history (`cuvil status`, `cuvil artifacts`) */

/* The revisions, newest first, skipping the newest `offset`: up to max
 * summaries into out; *n is set. */
int  cv_builddb_revisions_list(cv_builddb *db, int64_t offset, cv_rev_summary *out, int max,
                               int *n, cv_diag *d);
/* A revision named by the user: the full "ref@sha1:<commit>", a commit id
 * or a prefix of one (at least 4 hex digits), or "latest".  1 found (out
 * set), 0 none; an ambiguous prefix is CV6076. */
int  cv_builddb_revision_resolve(cv_builddb *db, const char *name, char out[CV_REVISION_MAX + 1],
                                 cv_diag *d);

typedef struct cv_job_row {
    char job_id[CV_MSG_ID_MAX + 1];
    char pipeline[CV_SPEC_NAME_MAX + 1];
    char model_path[CV_GIT_PATH_MAX + 1];
    char target[CV_MSG_TOKEN_MAX + 1];
    char precision[8], opt_level[8];
    char state[16];                   /* queued, hit, or a result status name */
    int64_t result_id;                /* 0 = none yet */
    int attempts;
    int64_t queued_ms, finished_ms;
    char l1[16], l2[16];              /* the worker's cache outcomes (miss, hit, ...); "" */
    int64_t ts[CV_JOB_TS__COUNT];     /* REAPI-style timestamps; 0 = not reached */
} cv_job_row;

/* Calls fn for each job of the revision, sorted by model, target and
 * precision; only_bad keeps the jobs that are neither ok nor hits nor
 * queued.  fn returns non-zero to stop. */
typedef int (*cv_job_row_fn)(void *ctx, const cv_job_row *row);
int  cv_builddb_jobs_visit(cv_builddb *db, int64_t rev_id, bool only_bad, cv_job_row_fn fn,
                           void *ctx, cv_diag *d);
/* The diagnostics stored with a result (result_id > 0) or with the
 * revision itself (rev_id > 0, result_id 0), appended to out with their
 * codes, spans, paths and root ids. */
int  cv_builddb_diags_load(cv_builddb *db, int64_t rev_id, int64_t result_id, cv_diag *out,
                           cv_diag *d);

/* ---- build requests (`cuvil submit`): written by any process, handled by
 * the controller, which polls the source at once and plans its head. */
typedef struct cv_build_request {
    int64_t id, created_ms, handled_ms;      /* handled_ms 0 = not yet */
    char revision[CV_REVISION_MAX + 1];      /* what it built; "" if it failed */
    char error[512];                         /* why it failed; "" */
} cv_build_request;

int  cv_builddb_request_add(cv_builddb *db, int64_t now_ms, int64_t *id, cv_diag *d);
/* The newest request not handled: 1 found, 0 none. */
int  cv_builddb_request_next(cv_builddb *db, cv_build_request *out, cv_diag *d);
/* Marks every open request up to id handled (one poll serves them all);
 * returns how many it marked, or -1. */
int  cv_builddb_request_done(cv_builddb *db, int64_t upto_id, const char *revision,
                             const char *error, int64_t now_ms, cv_diag *d);
int  cv_builddb_request_get(cv_builddb *db, int64_t id, cv_build_request *out, cv_diag *d);

/* Farm status values (lastAttemptedRevision, lastSucceededRevision, ...):
 * get returns 1 with *value malloc'd, 0 when unset. */
int  cv_builddb_status_set(cv_builddb *db, const char *key, const char *value, int64_t now_ms,
                           cv_diag *d);
int  cv_builddb_status_get(cv_builddb *db, const char *key, char **value, cv_diag *d);
#define CV_STATUS_LAST_ATTEMPTED "lastAttemptedRevision"
#define CV_STATUS_LAST_SUCCEEDED "lastSucceededRevision"
#define CV_STATUS_SOURCE "source"   /* the git source's status as a JSON object */

/* Stores the git source's status under CV_STATUS_SOURCE, so `cuvil status`
 * in another process shows fetch failures and the back-off:
 * {"revision","commit","lastPollMs","lastSuccessMs","lastChangeMs",
 *  "failures","nextAttemptMs","lastError","polls","fetches","errors"}. */
int  cv_builddb_source_status_put(cv_builddb *db, const cv_gitsource_status *st, int64_t now_ms,
                                  cv_diag *d);

/* The memo that lets the planner skip hashing unchanged files: git blob id
 * -> sha256 of the contents.  get: 1 found, 0 not. */
int  cv_builddb_blob_digest_get(cv_builddb *db, const char *blob_id,
                                char sha256[CV_DIGEST_HEX + 1], cv_diag *d);
int  cv_builddb_blob_digest_put(cv_builddb *db, const char *blob_id, const char *sha256,
                                cv_diag *d);

#endif
