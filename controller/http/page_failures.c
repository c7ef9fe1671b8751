/* The failures page (/failures?revision=REV): a revision's broken jobs
 * grouped into patterns by issue 8's classifier, ranked by the jobs each
 * broke, each with its example (the source line and a caret), the models
 * and targets it hit, its roots and the command that reproduces it. */
#include "controller/http/html.h"

#include <stdlib.h>
#include <string.h>

#define TOP_MAX 50
#define LIST_MAX 12

static void strings(cv_sb *o, const char *label, const char *const *v, int n)
{
    cv_sb_printf(o, "<p><b>%s</b> (%d): ", label, n);
    for (int i = 0; i < n && i < LIST_MAX; i++) {
        cv_sb_puts(o, i ? ", <code>" : "<code>");
        html_esc(o, v[i]);
        cv_sb_puts(o, "</code>");
    }
    if (n > LIST_MAX)
        cv_sb_printf(o, " and %d more", n - LIST_MAX);
    cv_sb_puts(o, "</p>");
}

static void roots(cv_sb *o, const cv_failure_group *g)
{
    cv_sb_puts(o, "<table class=\"roots\"><tr><th>model</th><th>place</th><th>jobs</th>"
                  "<th>configurations</th></tr>");
    for (int i = 0; i < g->n_roots && i < LIST_MAX; i++) {
        const cv_failure_root *r = &g->roots[i];
        cv_sb_puts(o, "<tr><td>");
        html_esc(o, r->model);
        cv_sb_puts(o, "</td><td>");
        if (r->file) {
            html_esc(o, r->file);
            cv_sb_printf(o, ":%d:%d", r->line, r->col);
        }
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td>", (long long)r->jobs);
        for (int k = 0; k < r->n_configs && k < LIST_MAX; k++) {
            if (k)
                cv_sb_puts(o, ", ");
            html_esc(o, r->configs[k]);
        }
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

static void group(cv_sb *o, int rank, const cv_failure_group *g)
{
    const char *name, *summary;
    cv_failure_group_explain(g, &name, &summary);
    cv_sb_printf(o, "<section class=\"pattern\" id=\"p%d\"><h2>#%d <code>", rank, rank);
    html_esc(o, g->pattern);
    cv_sb_printf(o, "</code> — <span class=\"jobs\">%lld job%s</span>%s</h2><p>",
                 (long long)g->jobs, g->jobs == 1 ? "" : "s",
                 g->is_new ? " <span class=\"new\">new</span>" : "");
    if (g->code)
        cv_sb_printf(o, "<code>CV%04d</code> ", g->code);
    html_esc(o, name);
    cv_sb_puts(o, ": ");
    html_esc(o, summary);
    cv_sb_printf(o, " <span class=\"muted\">(class %s", cv_fail_class_name(g->cls));
    if (g->derived)
        cv_sb_printf(o, ", %lld follow-on errors folded in", (long long)g->derived);
    cv_sb_puts(o, "; first seen ");
    html_rev_link(o, g->first_seen);
    cv_sb_puts(o, ")</span></p>");
    strings(o, "Models", g->models, g->n_models);
    strings(o, "Targets", g->targets, g->n_targets);
    if (g->example) {
        cv_sb_puts(o, "<h3>Example: ");
        html_esc(o, g->ex_model);
        cv_sb_puts(o, " · ");
        html_esc(o, g->ex_target);
        cv_sb_puts(o, " · ");
        html_esc(o, g->ex_precision);
        cv_sb_puts(o, "</h3>");
        html_diags(o, g->example);
        char cmd[CV_GIT_PATH_MAX + 256];
        cv_failure_group_reproduce(g, cmd, sizeof cmd);
        cv_sb_puts(o, "<p>Reproduce: <code>");
        html_esc(o, cmd);
        cv_sb_puts(o, "</code></p>");
    }
    roots(o, g);
    cv_sb_puts(o, "</section>");
}

/* A form that picks another revision: works without JavaScript. */
static void picker(cv_sb *o, const char *revision)
{
    const char *at = strstr(revision, "@sha1:");
    cv_sb_puts(o, "<form method=\"get\" action=\"/failures\"><label>Revision "
                  "<input name=\"revision\" size=\"42\" value=\"");
    html_esc(o, at ? at + 6 : revision);
    cv_sb_puts(o, "\"></label> <button>Show</button></form>");
}

void http_page_failures(cv_http *h, const http_req *rq, http_resp *rs)
{
    const char *name = http_arg(rq, "revision");
    cv_rev_summary s;
    if (!http_revision(h, name && *name ? name : "latest", &s, rs)) {
        html_error_page(rs, rs->status, "No such revision",
                        "The build DB has no revision of that name yet.");
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_failure_report r;
    if (http_failures_classify(h, &s, &r, &d) != 0) {
        html_error_page(rs, 500, "The failures could not be classified", d.n ? d.v[0].msg : "");
        cv_diag_free(&d);
        return;
    }
    cv_failure_report_attach_sources(&r, h->trees_dir);
    http_rev_cache c;
    http_verdict v;
    if (http_db_rev_cache(h->db, s.id, &c, &d) != 0) {
        html_error_page(rs, 500, "The build DB could not be read", d.n ? d.v[0].msg : "");
        cv_failure_report_free(&r);
        cv_diag_free(&d);
        return;
    }
    http_rev_verdict(&c, &v);
    cv_sb *o = &rs->body;
    html_begin(o, "Failures", "/failures", 0);
    cv_sb_puts(o, "<h1>Failures of ");
    html_rev_link(o, r.revision);
    cv_sb_puts(o, " ");
    html_verdict(o, &v, NULL);
    cv_sb_puts(o, "</h1>");
    picker(o, r.revision);
    cv_sb_printf(o, "<p id=\"failures-summary\"><span id=\"broken\">%lld</span> of %lld jobs "
                    "broken, <span id=\"pattern-count\">%d</span> pattern%s",
                 (long long)r.broken, (long long)r.jobs, r.n_groups, r.n_groups == 1 ? "" : "s");
    if (r.revision_errors) {
        const char *at = strstr(r.revision, "@sha1:");
        cv_sb_printf(o, "; %lld errors in the revision's specs (see its <a href=\"/revisions/",
                     (long long)r.revision_errors);
        html_esc(o, at ? at + 6 : r.revision);
        cv_sb_puts(o, "#revision-diagnostics\">page</a>)");
    }
    cv_sb_puts(o, "</p>");
    if (!r.n_groups && r.revision_errors)
        cv_sb_puts(o, "<p id=\"no-failures\">No job failed; the revision's specs did (above), "
                      "so nothing was built from them.</p>");
    else if (!r.n_groups)
        cv_sb_puts(o, "<p id=\"no-failures\">Nothing failed in this revision.</p>");
    for (int i = 0; i < r.n_groups && i < TOP_MAX; i++)
        group(o, i + 1, &r.groups[i]);
    if (r.n_groups > TOP_MAX)
        cv_sb_printf(o, "<p>%d more patterns: see <code>/api/v1/failures?top=1000</code></p>",
                     r.n_groups - TOP_MAX);
    cv_failure_report_free(&r);
    cv_diag_free(&d);
    html_finish(rs, o, rq->now_ms);
}
