/* /api/v1: failures (issue 8's classifier), cache figures, workers and
 * artifacts. */
#include "controller/http/http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_DEFAULT 20
#define CACHE_REVISIONS 50
#define CACHE_REVISIONS_MAX 500
#define CACHE_DAYS 14
#define CACHE_DAYS_MAX 366

/* A revision without failed jobs needs no classifier run (which also
 * stores its history): its report is empty but for the revision's own
 * errors. */
int http_failures_classify(cv_http *h, const cv_rev_summary *s, cv_failure_report *r, cv_diag *d)
{
    if (s->failed > 0)
        return cv_failures_classify(h->db, s->revision, r, d);
    memset(r, 0, sizeof *r);
    snprintf(r->revision, sizeof r->revision, "%s", s->revision);
    r->state = s->state;
    r->jobs = s->jobs;
    cv_diag rd;
    cv_diag_init(&rd);
    int rc = cv_builddb_diags_load(h->db, s->id, 0, &rd, d);
    r->revision_errors = rd.n_errors;
    cv_diag_free(&rd);
    return rc;
}

void http_api_failures(cv_http *h, const http_req *rq, http_resp *rs)
{
    int64_t top = http_int_arg(rq, rs, "top", TOP_DEFAULT, 1, 1000);
    const char *rev = http_arg(rq, "revision");
    cv_rev_summary s;
    if (top < 0 || !http_revision(h, rev ? rev : "latest", &s, rs))
        return;
    cv_diag d;
    cv_diag_init(&d);
    cv_failure_report r;
    if (http_failures_classify(h, &s, &r, &d) != 0) {
        http_error_diag(rs, 500, &d);
    } else {
        cv_failure_report_attach_sources(&r, h->trees_dir);
        http_json(rs, 200, cv_failure_report_json(&r, (int)top));
        cv_failure_report_free(&r);
    }
    cv_diag_free(&d);
}

/* ---- cache */

static json_t *outcomes_json(const int64_t v[CV_CACHE__COUNT])
{
    return json_pack("{s:I, s:I, s:I, s:I}", "none", (json_int_t)v[CV_CACHE_NONE], "miss",
                     (json_int_t)v[CV_CACHE_MISS], "hit", (json_int_t)v[CV_CACHE_HIT],
                     "remoteHit", (json_int_t)v[CV_CACHE_REMOTE_HIT]);
}

static json_t *rev_cache_json(const http_rev_cache *c)
{
    double l2_local, l2_remote, l1_local, l1_remote;
    double l2 = http_rev_cache_l2_ratio(c, &l2_local, &l2_remote);
    double l1 = http_rev_cache_l1_ratio(c, &l1_local, &l1_remote);
    http_verdict v;
    http_rev_verdict(c, &v);
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o,"
                     " s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}}",
                     "revision", c->revision, "state", cv_rev_state_name(c->state), "verdict",
                     "class", v.cls, "label", v.label, "detail", v.detail, "jobs",
                     (json_int_t)c->jobs, "pending", (json_int_t)c->pending, "planHits",
                     (json_int_t)c->plan_hits, "failed", (json_int_t)c->failed, "specErrors",
                     (json_int_t)c->spec_errors, "specWarnings", (json_int_t)c->spec_warnings,
                     "l1", outcomes_json(c->l1), "l2", outcomes_json(c->l2), "l1Ratio", "hit", l1,
                     "local", l1_local, "remote", l1_remote, "l2Ratio", "hit", l2, "local",
                     l2_local, "remote", l2_remote);
    if (o)
        json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:o, s:o, s:o}", "compileMs",
                                            (json_int_t)c->compile_ms, "savedMs",
                                            (json_int_t)c->saved_ms, "savedHits",
                                            (json_int_t)c->saved_hits, "subject",
                                            c->subject[0] ? json_string(c->subject) : json_null(),
                                            "author",
                                            c->author[0] ? json_string(c->author) : json_null(),
                                            "commitMs", c->commit_ms ? json_integer(c->commit_ms)
                                                                    : json_null()));
    return o;
}

json_t *http_daily_json(const http_day *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I, s:I}", "dayMs",
                                           (json_int_t)(v[i].day * HTTP_DAY_MS), "answered",
                                           (json_int_t)v[i].answered, "hits",
                                           (json_int_t)v[i].hits, "compileMs",
                                           (json_int_t)v[i].compile_ms, "savedMs",
                                           (json_int_t)v[i].saved_ms));
    return a;
}

void http_api_cache(cv_http *h, const http_req *rq, http_resp *rs)
{
    int64_t max = http_int_arg(rq, rs, "revisions", CACHE_REVISIONS, 1, CACHE_REVISIONS_MAX);
    int64_t days = max < 0 ? -1 : http_int_arg(rq, rs, "days", CACHE_DAYS, 1, CACHE_DAYS_MAX);
    if (max < 0 || days < 0)
        return;
    http_rev_cache *v = calloc((size_t)max, sizeof *v);
    http_day *dv = calloc((size_t)days, sizeof *dv);
    cv_diag d;
    cv_diag_init(&d);
    int n = 0;
    if (!v || !dv || http_db_cache_history(h->db, (int)max, v, &n, &d) != 0 ||
        http_daily(h, rq->now_ms, (int)days, dv, &d) != 0) {
        http_error_diag(rs, 500, &d);
    } else {
        cv_cache_stats st;
        json_t *revs = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(revs, rev_cache_json(&v[i]));
        http_json(rs, 200,
                  json_pack("{s:o, s:o, s:o}", "cache",
                            http_cache_stats(h, &st) ? cv_cache_stats_json(&st) : json_null(),
                            "revisions", revs, "days", http_daily_json(dv, (int)days)));
    }
    free(v);
    free(dv);
    cv_diag_free(&d);
}

/* ---- workers */

json_t *http_queue_json(const http_queue_view *v, int64_t now_ms)
{
    (void)now_ms;
    if (!v->known)
        return json_null();
    const cv_queue_stats *s = &v->st;
    if (v->from_builddb)
        return json_pack("{s:s, s:s, s:I, s:n}", "source", "builddb", "url", v->url, "queued",
                         (json_int_t)s->queued, "leased");
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "source", "queue",
                     "url", v->url, "queued", (json_int_t)s->queued, "leased",
                     (json_int_t)s->leased, "resultsPending", (json_int_t)s->results_pending,
                     "deadLetters", (json_int_t)s->dead_letters, "enqueued",
                     (json_int_t)s->enqueued, "merged", (json_int_t)s->merged, "completed",
                     (json_int_t)s->completed, "retried", (json_int_t)s->retried, "expired",
                     (json_int_t)s->expired);
}

static json_t *find_worker(json_t *workers, const char *id)
{
    for (size_t k = 0; k < json_array_size(workers); k++) {
        json_t *w = json_array_get(workers, k);
        if (strcmp(json_string_value(json_object_get(w, "id")), id) == 0)
            return w;
    }
    return NULL;
}

/* Workers that report their presence, most recent first, then any lease
 * holder that does not (its state read from the lease alone); each with
 * the jobs it holds leases on. */
static json_t *workers_json(const http_queue_view *v, int64_t now_ms)
{
    json_t *workers = json_array();
    for (int i = 0; i < v->n_workers; i++) {
        const cv_queue_worker_info *p = &v->workers[i];
        json_array_append_new(
            workers,
            json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:I, s:o}", "id", p->worker_id, "state",
                      http_worker_state_name(http_worker_state_of(p, now_ms)), "heartbeatAgeMs",
                      (json_int_t)(now_ms - p->beat_ms), "lastHeartbeatMs",
                      (json_int_t)p->beat_ms, "startedMs", (json_int_t)p->started_ms,
                      "currentJob", p->job_id[0] ? json_string(p->job_id) : json_null(),
                      "jobsDone", (json_int_t)p->jobs_done, "jobs", json_array()));
    }
    for (int i = 0; i < v->n_leases; i++) {
        const cv_queue_lease_info *l = &v->leases[i];
        json_t *w = find_worker(workers, l->worker_id);
        if (!w) {
            w = json_pack("{s:s, s:s, s:n, s:o}", "id", l->worker_id, "state",
                          l->deadline_ms < now_ms ? "lease-expired" : "busy", "heartbeatAgeMs",
                          "jobs", json_array());
            json_array_append_new(workers, w);
        }
        json_array_append_new(json_object_get(w, "jobs"),
                              json_pack("{s:s, s:i, s:I, s:I}", "job", l->job_id, "attempt",
                                        l->attempt, "leasedMs", (json_int_t)l->leased_ms,
                                        "leaseDeadlineMs", (json_int_t)l->deadline_ms));
    }
    return workers;
}

void http_api_workers(cv_http *h, const http_req *rq, http_resp *rs)
{
    http_queue_view v;
    http_queue_view_get(h, &v);
    bool known = v.leases_known || v.workers_known;
    http_json(rs, 200,
              json_pack("{s:o, s:b, s:b, s:o, s:i}", "queue", http_queue_json(&v, rq->now_ms),
                        "leasesKnown", v.leases_known, "presenceKnown", v.workers_known,
                        "workers", known ? workers_json(&v, rq->now_ms) : json_null(),
                        "lostAfterMs", HTTP_WORKER_LOST_MS));
    http_queue_view_free(&v);
}

/* ---- artifacts */

void http_api_artifacts(cv_http *h, const http_req *rq, http_resp *rs)
{
    const char *rev = http_arg(rq, "revision"), *model = http_arg(rq, "model");
    const char *target = http_arg(rq, "target"), *precision = http_arg(rq, "precision");
    if (!model || !target) {
        http_error(rs, 400, CV_E_HTTP_BAD_REQUEST,
                   "artifacts takes model, target and optionally revision and precision");
        return;
    }
    precision = precision ? precision : "fp32";
    cv_rev_summary s;
    if (!http_revision(h, rev ? rev : "latest", &s, rs))
        return;
    char l2[CV_DIGEST_HEX + 1], manifest[CV_DIGEST_HEX + 1];
    cv_diag d;
    cv_diag_init(&d);
    int found = cv_builddb_artifact_find(h->db, s.revision, model, target, precision, l2,
                                         manifest, &d);
    if (found < 0) {
        http_error_diag(rs, 500, &d);
    } else if (found == 0) {
        http_error(rs, 404, CV_E_ARTIFACT_NOT_FOUND, "no artifact of %.300s for %.64s %.16s in %s",
                   model, target, precision, s.revision);
    } else {
        int cached = manifest[0] ? http_cache_has(h, manifest) : -1;
        http_json(rs, 200,
                  json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "revision", s.revision,
                            "model", model, "target", target, "precision", precision, "l2Key",
                            l2, "manifest", manifest[0] ? json_string(manifest) : json_null(),
                            "manifestInCache", cached < 0 ? json_null() : json_boolean(cached)));
    }
    cv_diag_free(&d);
}
