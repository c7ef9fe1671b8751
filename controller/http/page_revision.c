/* A revision's page (/revisions/REV): every job with its target,
 * precision, status, cache outcome and stage durations as a stacked bar,
 * and the diagnostics of the jobs that have any, with their source lines
 * when the revision's files are still under trees/. */
#include "controller/http/html.h"

#include "common/fs.h"

#include <stdlib.h>
#include <string.h>

#define REFRESH_S 10
#define SOURCES_MAX 64              /* files attached per page */
#define SOURCE_BYTES (1 << 20)

static void summary(cv_sb *o, const cv_rev_summary *s, const http_rev_cache *c, int64_t now)
{
    char shown[CV_REVISION_MAX + 1];
    html_short_rev(s->revision, shown, sizeof shown);
    http_verdict v;
    http_rev_verdict(c, &v);
    cv_sb_puts(o, "<h1>Revision ");
    html_esc(o, shown);
    cv_sb_puts(o, " ");
    html_verdict(o, &v, "rev-verdict");
    cv_sb_puts(o, "</h1><p id=\"rev-commit\">");
    html_commit(o, c, now);
    cv_sb_puts(o, "</p><p id=\"rev-verdict-detail\">");
    html_esc(o, v.detail);
    cv_sb_puts(o, "</p><p class=\"muted\"><code>");
    html_esc(o, s->revision);
    cv_sb_puts(o, "</code> — planned ");
    html_ago(o, s->created_ms, now);
    if (s->finished_ms) {
        cv_sb_puts(o, ", built in ");
        html_duration(o, s->finished_ms - s->created_ms);
    }
    cv_sb_printf(o, "</p><div class=\"cards\"><div class=\"card\"><div class=\"k\">jobs</div>"
                    "<div class=\"v\" id=\"rev-jobs\">%lld</div><div class=\"muted\">"
                    "<span id=\"rev-hits\">%lld</span> hits, <span id=\"rev-ok\">%lld</span> ok, "
                    "<span id=\"rev-failed\">%lld</span> failed, %lld pending</div></div>",
                 (long long)s->jobs, (long long)s->hits, (long long)s->ok, (long long)s->failed,
                 (long long)s->pending);
    double local, remote;
    cv_sb_puts(o, "<div class=\"card\"><div class=\"k\">L2 hit ratio</div>"
                  "<div class=\"v\" id=\"rev-l2-ratio\">");
    html_pct(o, http_rev_cache_l2_ratio(c, &local, &remote));
    cv_sb_puts(o, "</div><div class=\"muted\">L1 ");
    html_pct(o, http_rev_cache_l1_ratio(c, &local, &remote));
    cv_sb_puts(o, "</div></div></div>");
}

/* "planner hit", or the worker's "L1 x / L2 y". */
static void cache_cell(cv_sb *o, const http_job *j)
{
    if (strcmp(j->row.state, "hit") == 0)
        cv_sb_puts(o, "L2 hit (planner)");
    else if (!j->row.l2[0])
        cv_sb_puts(o, "<span class=\"muted\">—</span>");
    else {
        cv_sb_puts(o, "L1 ");
        html_esc(o, j->row.l1);
        cv_sb_puts(o, " / L2 ");
        html_esc(o, j->row.l2);
    }
}

static int64_t total_ms(const http_job *j)
{
    int64_t st[HTTP_STAGES], t = 0;
    http_job_stages(j->row.ts, st);
    for (int s = 0; s < HTTP_STAGES; s++)
        t += st[s];
    return t;
}

static void job_row(cv_sb *o, const http_job *j, size_t index, int64_t max_ms, int n_diags)
{
    const cv_job_row *r = &j->row;
    cv_sb_printf(o, "<tr class=\"job\" id=\"row-%zu\"><td>", index);
    html_model_link(o, r->model_path);
    cv_sb_puts(o, "</td><td>");
    html_esc(o, r->target);
    cv_sb_puts(o, "</td><td>");
    html_esc(o, r->precision);
    cv_sb_puts(o, "</td><td>");
    html_esc(o, r->opt_level);
    cv_sb_puts(o, "</td><td>");
    html_esc(o, r->pipeline);
    cv_sb_puts(o, "</td><td>");
    html_state(o, r->state);
    cv_sb_puts(o, "</td><td>");
    cache_cell(o, j);
    cv_sb_puts(o, "</td><td>");
    int64_t st[HTTP_STAGES];
    http_job_stages(j->row.ts, st);
    svg_stage_bar(o, st, max_ms);
    cv_sb_puts(o, "</td><td class=\"n\">");
    if (j->row.ts[CV_JOB_TS_STARTED])
        html_duration(o, total_ms(j));
    cv_sb_puts(o, "</td><td>");
    if (n_diags)
        cv_sb_printf(o, "<a href=\"#job-%zu\">%d diagnostic%s</a>", index, n_diags,
                     n_diags == 1 ? "" : "s");
    cv_sb_puts(o, "</td></tr>");
}

/* Registers the revision's copy of each file the diagnostics name, so that
 * they print with the source line and a caret. */
static void attach_sources(cv_diag *dg, const char *trees_dir, const char *commit, int *budget)
{
    for (int i = 0; i < dg->n && *budget > 0; i++) {
        const char *file = dg->v[i].span.file;
        if (!file || !*file || file[0] == '/' || strstr(file, "..") || dg->v[i].span.line <= 0)
            continue;
        char rel[CV_GIT_PATH_MAX + CV_GIT_HEX + 2];
        snprintf(rel, sizeof rel, "%s/%s", commit, file);
        char *path = cv_fs_join(trees_dir, rel);
        char *text = NULL;
        size_t len = 0;
        cv_diag quiet;
        cv_diag_init(&quiet);
        if (path && cv_fs_read_file(path, SOURCE_BYTES, &text, &len, &quiet) == 0)
            cv_diag_add_source(dg, file, text, len);
        (*budget)--;
        cv_diag_free(&quiet);
        free(text);
        free(path);
    }
}

static void diagnostics(cv_http *h, cv_sb *o, const cv_rev_summary *s, const http_job *jobs,
                        size_t n, cv_diag *const *dgs)
{
    char ref[CV_REVISION_MAX + 1], commit[CV_GIT_HEX + 1];
    cv_diag quiet;
    cv_diag_init(&quiet);
    bool have_commit = cv_revision_parse(s->revision, ref, commit, &quiet) == 0;
    cv_diag_free(&quiet);
    int budget = SOURCES_MAX;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!dgs[i] || !dgs[i]->n)
            continue;
        if (!any)
            cv_sb_puts(o, "<h2>Diagnostics</h2>");
        any = true;
        if (have_commit)
            attach_sources(dgs[i], h->trees_dir, commit, &budget);
        cv_sb_printf(o, "<h3 id=\"job-%zu\">", i);
        html_esc(o, jobs[i].row.model_path);
        cv_sb_puts(o, " · ");
        html_esc(o, jobs[i].row.target);
        cv_sb_puts(o, " · ");
        html_esc(o, jobs[i].row.precision);
        cv_sb_puts(o, " ");
        html_state(o, jobs[i].row.state);
        cv_sb_puts(o, "</h3>");
        html_diags(o, dgs[i]);
    }
}

static void revision_diags(cv_http *h, cv_sb *o, const cv_rev_summary *s)
{
    cv_diag rd, tmp;
    cv_diag_init(&rd);
    cv_diag_init(&tmp);
    cv_builddb_diags_load(h->db, s->id, 0, &rd, &tmp);
    if (rd.n) {
        cv_sb_puts(o, "<h2 id=\"revision-diagnostics\">Revision diagnostics</h2>");
        html_diags(o, &rd);
    }
    cv_diag_free(&rd);
    cv_diag_free(&tmp);
}

static void jobs_table(cv_http *h, cv_sb *o, const cv_rev_summary *s, const http_job *jobs,
                       size_t n)
{
    cv_diag **dgs = calloc(n ? n : 1, sizeof *dgs);
    int64_t max_ms = 1;
    for (size_t i = 0; i < n; i++)
        if (total_ms(&jobs[i]) > max_ms)
            max_ms = total_ms(&jobs[i]);
    cv_sb_printf(o, "<h2>Jobs</h2>");
    svg_stage_legend(o);
    cv_sb_puts(o, "<table id=\"jobs\"><tr><th>model</th><th>target</th><th>precision</th>"
                  "<th>opt</th><th>pipeline</th><th>status</th><th>cache</th>"
                  "<th>stages</th><th>time</th><th>diagnostics</th></tr>");
    for (size_t i = 0; i < n; i++) {
        if (dgs && jobs[i].row.result_id && (dgs[i] = calloc(1, sizeof **dgs))) {
            cv_diag tmp;
            cv_diag_init(&tmp);
            cv_diag_init(dgs[i]);
            cv_builddb_diags_load(h->db, 0, jobs[i].row.result_id, dgs[i], &tmp);
            cv_diag_free(&tmp);
        }
        job_row(o, &jobs[i], i, max_ms, dgs && dgs[i] ? dgs[i]->n : 0);
    }
    cv_sb_puts(o, "</table>");
    if (dgs)
        diagnostics(h, o, s, jobs, n, dgs);
    for (size_t i = 0; dgs && i < n; i++)
        if (dgs[i]) {
            cv_diag_free(dgs[i]);
            free(dgs[i]);
        }
    free(dgs);
}

void http_page_revision(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_rev_summary s;
    if (!http_revision(h, rq->rest, &s, rs)) {
        html_error_page(rs, rs->status, "No such revision",
                        "The build DB has no revision of that name (a commit id, a prefix of "
                        "one, or latest).");
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    http_job *jobs = NULL;
    size_t n = 0;
    if (http_db_jobs(h->db, s.id, &jobs, &n, &d) != 0) {
        html_error_page(rs, 500, "The build DB could not be read", d.n ? d.v[0].msg : "");
        cv_diag_free(&d);
        return;
    }
    http_rev_cache c;
    if (http_db_rev_cache(h->db, s.id, &c, &d) != 0) {
        free(jobs);
        html_error_page(rs, 500, "The build DB could not be read", d.n ? d.v[0].msg : "");
        cv_diag_free(&d);
        return;
    }
    cv_sb *o = &rs->body;
    char title[CV_REVISION_MAX + 16];
    html_short_rev(s.revision, title, sizeof title);
    bool running = s.state == CV_REV_PLANNING || s.state == CV_REV_BUILDING;
    html_begin(o, title, "", running ? REFRESH_S : 0);
    summary(o, &s, &c, rq->now_ms);
    if (s.failed) {
        const char *at = strstr(s.revision, "@sha1:");
        cv_sb_puts(o, "<p><a href=\"/failures?revision=");
        html_esc(o, at ? at + 6 : s.revision);
        cv_sb_puts(o, "\">Failure patterns of this revision</a></p>");
    }
    revision_diags(h, o, &s);
    jobs_table(h, o, &s, jobs, n);
    free(jobs);
    cv_diag_free(&d);
    html_finish(rs, o, rq->now_ms);
}
