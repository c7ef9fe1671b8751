/* The farm's status as JSON: `cuvil status --json` and the HTTP API
 * (/api/v1/status, /api/v1/revisions/REV) print the same objects. */
#include "controller/controller.h"
#include "controller/internal.h"

#include <jansson.h>
#include <stdlib.h>

#define CONTROLLER_STALE_MS 15000
#define RECENT_REVISIONS 10

json_t *cv_status_value_json(cv_builddb *db, const char *key, cv_diag *d)
{
    char *text = NULL;
    if (cv_builddb_status_get(db, key, &text, d) != 1)
        return NULL;
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    return j;
}

bool cv_status_controller_alive(const json_t *ctl, int64_t now_ms)
{
    json_int_t hb = json_integer_value(json_object_get(ctl, "heartbeatMs"));
    return ctl && !json_integer_value(json_object_get(ctl, "stoppedMs")) &&
           now_ms - hb < CONTROLLER_STALE_MS;
}

static json_t *status_string(cv_builddb *db, const char *key, cv_diag *d)
{
    char *text = NULL;
    json_t *j = cv_builddb_status_get(db, key, &text, d) == 1 ? json_string(text) : json_null();
    free(text);
    return j;
}

json_t *cv_status_summary_json(const cv_rev_summary *s)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "revision", s->revision,
                     "state", cv_rev_state_name(s->state), "createdMs", (json_int_t)s->created_ms,
                     "finishedMs", (json_int_t)s->finished_ms, "jobs", (json_int_t)s->jobs,
                     "hits", (json_int_t)s->hits, "ok", (json_int_t)s->ok, "failed",
                     (json_int_t)s->failed, "pending", (json_int_t)s->pending);
}

typedef struct jobs_ctx {
    cv_builddb *db;
    json_t *arr;
    int rc;
} jobs_ctx;

static int job_to_json(void *ctx, const cv_job_row *row)
{
    jobs_ctx *j = ctx;
    cv_diag dg, tmp;
    cv_diag_init(&dg);
    cv_diag_init(&tmp);
    if (row->result_id && cv_builddb_diags_load(j->db, 0, row->result_id, &dg, &tmp) != 0)
        j->rc = -1;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:o}",
                          "l2", row->l2[0] ? row->l2 : row->state, "job",
                          row->job_id, "pipeline", row->pipeline, "model", row->model_path,
                          "target", row->target, "precision", row->precision, "opt",
                          row->opt_level, "state", row->state, "attempts", row->attempts,
                          "queuedMs", (json_int_t)row->queued_ms, "finishedMs",
                          (json_int_t)row->finished_ms, "diagnostics", cv_diag_to_json(&dg));
    json_array_append_new(j->arr, o);
    cv_diag_free(&dg);
    cv_diag_free(&tmp);
    return 0;
}

json_t *cv_status_revision_json(cv_builddb *db, const cv_rev_summary *s, cv_diag *d)
{
    json_t *o = cv_status_summary_json(s);
    jobs_ctx j = {.db = db, .arr = json_array()};
    if (cv_builddb_jobs_visit(db, s->id, false, job_to_json, &j, d) != 0 || j.rc)
        cv_diag_error(d, CV_E_BUILDDB_STORAGE, (cv_span){0}, "cannot read the jobs of %s",
                      s->revision);
    json_object_set_new(o, "jobsList", j.arr);
    cv_diag rd;
    cv_diag_init(&rd);
    cv_builddb_diags_load(db, s->id, 0, &rd, d);
    json_object_set_new(o, "diagnostics", cv_diag_to_json(&rd));
    cv_diag_free(&rd);
    return o;
}

json_t *cv_status_json(cv_builddb *db, const cv_rev_summary *rev, int64_t now_ms, cv_diag *d)
{
    json_t *ctl = cv_status_value_json(db, CV_STATUS_CONTROLLER, d);
    if (ctl)
        json_object_set_new(ctl, "alive", json_boolean(cv_status_controller_alive(ctl, now_ms)));
    json_t *src = cv_status_value_json(db, CV_STATUS_SOURCE, d);
    json_t *recent = json_array();
    cv_rev_summary list[RECENT_REVISIONS];
    int n = 0;
    cv_builddb_revisions_list(db, 0, list, RECENT_REVISIONS, &n, d);
    for (int i = 0; i < n; i++)
        json_array_append_new(recent, cv_status_summary_json(&list[i]));
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "controller", ctl ? ctl : json_null(),
                     "source", src ? src : json_null(), "lastAttemptedRevision",
                     status_string(db, CV_STATUS_LAST_ATTEMPTED, d), "lastSucceededRevision",
                     status_string(db, CV_STATUS_LAST_SUCCEEDED, d), "revision",
                     rev ? cv_status_revision_json(db, rev, d) : json_null(), "revisions",
                     recent);
}
