/* /api/v1: the farm status, revisions, jobs and build requests
 * (schemas/api.yaml).  Lists are paged with limit and offset; every answer
 * of a list says its total and the next page's path. */
#include "controller/http/html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REVISIONS_PAGE 50
#define JOBS_PAGE 100
#define PAGE_MAX 1000
#define OFFSET_MAX ((int64_t)1 << 40)

void http_api_status(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    json_t *o = cv_status_json(h->db, NULL, rq->now_ms, &d);
    if (cv_diag_has_errors(&d)) {
        json_decref(o);
        http_error_diag(rs, 500, &d);
    } else {
        http_json(rs, 200, o);
    }
    cv_diag_free(&d);
}

/* The next page's path, or null at the end. */
static json_t *next_page(const char *base, const char *query, int64_t limit, int64_t offset,
                         int64_t total)
{
    if (offset + limit >= total)
        return json_null();
    cv_sb sb = CV_SB_INIT;
    cv_sb_printf(&sb, "%s?%s%slimit=%lld&offset=%lld", base, query, *query ? "&" : "",
                 (long long)limit, (long long)(offset + limit));
    json_t *j = sb.oom ? json_null() : json_string(cv_sb_str(&sb));
    cv_sb_free(&sb);
    return j;
}

void http_api_revisions(cv_http *h, const http_req *rq, http_resp *rs)
{
    int64_t limit = http_int_arg(rq, rs, "limit", REVISIONS_PAGE, 1, PAGE_MAX);
    int64_t offset = limit < 0 ? -1 : http_int_arg(rq, rs, "offset", 0, 0, OFFSET_MAX);
    if (limit < 0 || offset < 0)
        return;
    cv_rev_summary *v = calloc((size_t)limit, sizeof *v);
    cv_diag d;
    cv_diag_init(&d);
    int n = 0;
    int64_t total = 0;
    if (!v || http_db_revisions(h->db, (int)limit, offset, v, &n, &total, &d) != 0) {
        http_error_diag(rs, 500, &d);
    } else {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, cv_status_summary_json(&v[i]));
        http_json(rs, 200,
                  json_pack("{s:o, s:I, s:I, s:I, s:o}", "revisions", arr, "total",
                            (json_int_t)total, "limit", (json_int_t)limit, "offset",
                            (json_int_t)offset, "next",
                            next_page("/api/v1/revisions", "", limit, offset, total)));
    }
    free(v);
    cv_diag_free(&d);
}

void http_api_revision(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_rev_summary s;
    if (!http_revision(h, rq->rest, &s, rs))
        return;
    cv_diag d;
    cv_diag_init(&d);
    json_t *o = cv_status_revision_json(h->db, &s, &d);
    if (cv_diag_has_errors(&d)) {
        json_decref(o);
        http_error_diag(rs, 500, &d);
    } else {
        http_json(rs, 200, o);
    }
    cv_diag_free(&d);
}

/* ---- build requests */

void http_api_build(cv_http *h, const http_req *rq, http_resp *rs)
{
    if (rq->body_len) {
        json_error_t je;
        json_t *b = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &je);
        const char *ref = json_string_value(json_object_get(b, "ref"));
        bool ok = json_is_object(b) && (!json_object_get(b, "ref") || ref);
        bool other = ref && strcmp(ref, h->ref) != 0;
        json_decref(b);
        if (!ok) {
            http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "the body is not {\"ref\": \"%s\"}", h->ref);
            return;
        }
        if (other) {
            http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "this farm builds only the ref '%s'", h->ref);
            return;
        }
    }
    cv_diag d;
    cv_diag_init(&d);
    int64_t id = 0;
    if (cv_builddb_request_add(h->db, rq->now_ms, &id, &d) != 0) {
        http_error_diag(rs, 500, &d);
    } else {
        atomic_fetch_add(&h->counters.builds_requested, 1);
        char href[64];
        snprintf(href, sizeof href, "/api/v1/requests/%lld", (long long)id);
        http_json(rs, 202, json_pack("{s:I, s:s, s:s, s:s}", "request", (json_int_t)id, "ref",
                                     h->ref, "status", "queued", "href", href));
    }
    cv_diag_free(&d);
}

static json_t *text_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

void http_api_request(cv_http *h, const http_req *rq, http_resp *rs)
{
    char *end;
    long long id = strtoll(rq->rest, &end, 10);
    if (end == rq->rest || *end || id <= 0) {
        http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "a request id is a positive number");
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_build_request br;
    int found = cv_builddb_request_get(h->db, id, &br, &d);
    if (found < 0)
        http_error_diag(rs, 500, &d);
    else if (found == 0)
        http_error(rs, 404, CV_E_HTTP_NOT_FOUND, "no build request %lld", id);
    else
        http_json(rs, 200,
                  json_pack("{s:I, s:I, s:I, s:b, s:o, s:o}", "request", (json_int_t)br.id,
                            "createdMs", (json_int_t)br.created_ms, "handledMs",
                            (json_int_t)br.handled_ms, "handled", br.handled_ms > 0, "revision",
                            text_or_null(br.revision), "error", text_or_null(br.error)));
    cv_diag_free(&d);
}

/* ---- jobs */

json_t *http_job_json(cv_builddb *db, const http_job *j, bool diagnostics)
{
    const cv_job_row *r = &j->row;
    int64_t st[HTTP_STAGES];
    http_job_stages(j->row.ts, st);
    json_t *stages = json_object();
    for (int s = 0; s < HTTP_STAGES; s++)
        json_object_set_new(stages, http_stage_name((http_stage)s), json_integer(st[s]));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:o}",
        "job", r->job_id, "pipeline", r->pipeline, "model", r->model_path, "target", r->target,
        "precision", r->precision, "opt", r->opt_level, "state", r->state, "l1",
        text_or_null(j->row.l1), "l2", r->l2[0] ? r->l2 : r->state, "attempts", r->attempts,
        "queuedMs", (json_int_t)j->row.ts[CV_JOB_TS_QUEUED], "startedMs",
        (json_int_t)j->row.ts[CV_JOB_TS_STARTED], "frontendMs", (json_int_t)j->row.ts[CV_JOB_TS_FRONTEND],
        "passesMs", (json_int_t)j->row.ts[CV_JOB_TS_PASSES], "codegenMs",
        (json_int_t)j->row.ts[CV_JOB_TS_CODEGEN], "uploadedMs", (json_int_t)j->row.ts[CV_JOB_TS_UPLOADED],
        "finishedMs", (json_int_t)j->row.ts[CV_JOB_TS_FINISHED], "stagesMs", stages);
    if (diagnostics && o) {
        cv_diag dg, tmp;
        cv_diag_init(&dg);
        cv_diag_init(&tmp);
        if (r->result_id)
            cv_builddb_diags_load(db, 0, r->result_id, &dg, &tmp);
        json_object_set_new(o, "diagnostics", cv_diag_to_json(&dg));
        cv_diag_free(&dg);
        cv_diag_free(&tmp);
    }
    return o;
}

static const char *const job_states[] = {"queued", "hit", "ok", "failed", "ice",
                                         "timeout", "oom", "infra", NULL};

/* "failed" or "failed,ice": every name must be a job state. */
static bool states_valid(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    int n = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++) {
        bool known = false;
        for (int i = 0; job_states[i]; i++)
            known = known || strcmp(t, job_states[i]) == 0;
        if (!known)
            return false;
    }
    return n > 0 && strlen(list) < sizeof buf;
}

static bool state_in(const char *state, const char *list)
{
    size_t n = strlen(state);
    for (const char *p = list; (p = strstr(p, state)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
            return true;
    return false;
}

typedef struct job_filter {
    const char *states, *model, *target, *precision;
} job_filter;

static bool job_matches(const http_job *j, const job_filter *f)
{
    const cv_job_row *r = &j->row;
    return (!f->states || state_in(r->state, f->states)) &&
           (!f->model || cv_glob_match(f->model, r->model_path)) &&
           (!f->target || strcmp(f->target, r->target) == 0) &&
           (!f->precision || strcmp(f->precision, r->precision) == 0);
}

static bool filter_read(const http_req *rq, http_resp *rs, job_filter *f)
{
    *f = (job_filter){http_arg(rq, "status"), http_arg(rq, "model"), http_arg(rq, "target"),
                      http_arg(rq, "precision")};
    const char *why;
    if (f->states && !states_valid(f->states)) {
        http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "status takes job states separated by commas "
                   "(queued, hit, ok, failed, ice, timeout, oom, infra)");
        return false;
    }
    if (f->model && cv_glob_check(f->model, &why) != 0) {
        http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "model is not a path or glob: %s", why);
        return false;
    }
    return true;
}

/* Appends &name=value, value percent-encoded. */
static void query_add(cv_sb *q, const char *name, const char *value)
{
    if (!value)
        return;
    cv_sb_printf(q, "%s%s=", q->len ? "&" : "", name);
    html_url_encode(q, value);
}

void http_api_jobs(cv_http *h, const http_req *rq, http_resp *rs)
{
    int64_t limit = http_int_arg(rq, rs, "limit", JOBS_PAGE, 1, PAGE_MAX);
    int64_t offset = limit < 0 ? -1 : http_int_arg(rq, rs, "offset", 0, 0, OFFSET_MAX);
    job_filter f;
    cv_rev_summary s;
    const char *rev = http_arg(rq, "revision");
    if (limit < 0 || offset < 0 || !filter_read(rq, rs, &f) ||
        !http_revision(h, rev ? rev : "latest", &s, rs))
        return;
    cv_diag d;
    cv_diag_init(&d);
    http_job *jobs = NULL;
    size_t n = 0;
    if (http_db_jobs(h->db, s.id, &jobs, &n, &d) != 0) {
        http_error_diag(rs, 500, &d);
        cv_diag_free(&d);
        return;
    }
    json_t *arr = json_array();
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!job_matches(&jobs[i], &f))
            continue;
        if (total >= offset && total < offset + limit)
            json_array_append_new(arr, http_job_json(h->db, &jobs[i], true));
        total++;
    }
    cv_sb q = CV_SB_INIT;
    query_add(&q, "revision", s.revision);
    query_add(&q, "status", f.states);
    query_add(&q, "model", f.model);
    query_add(&q, "target", f.target);
    query_add(&q, "precision", f.precision);
    http_json(rs, 200,
              json_pack("{s:s, s:o, s:I, s:I, s:I, s:o}", "revision", s.revision, "jobs", arr,
                        "total", (json_int_t)total, "limit", (json_int_t)limit, "offset",
                        (json_int_t)offset, "next",
                        next_page("/api/v1/jobs", cv_sb_str(&q), limit, offset, total)));
    cv_sb_free(&q);
    free(jobs);
    cv_diag_free(&d);
}
