/* The dashboard's overview (/): controller and source health, the current
 * and last good revisions, jobs by status, cache hit ratios over the last
 * 50 revisions, the top failure patterns, queue depth and the workers.
 * Figures the browser test checks carry ids. */
#include "controller/http/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY 50
#define RECENT 10
#define TOP_PATTERNS 5
#define REFRESH_S 15
#define DAYS 14

static void card_begin(cv_sb *o, const char *label)
{
    cv_sb_printf(o, "<div class=\"card\"><div class=\"k\">%s</div>", label);
}

static void controller_card(cv_http *h, cv_sb *o, int64_t now, cv_diag *d)
{
    json_t *ctl = cv_status_value_json(h->db, CV_STATUS_CONTROLLER, d);
    bool alive = cv_status_controller_alive(ctl, now);
    json_int_t stopped = json_integer_value(json_object_get(ctl, "stoppedMs"));
    card_begin(o, "Controller");
    const char *state = !ctl ? "never started" : alive ? "running" : stopped ? "stopped"
                                                                             : "not responding";
    cv_sb_printf(o, "<div class=\"v\" id=\"controller-state\">%s</div><div class=\"muted\">",
                 state);
    if (ctl) {
        html_esc(o, json_string_value(json_object_get(ctl, "repo")));
        cv_sb_puts(o, " ");
        html_esc(o, json_string_value(json_object_get(ctl, "ref")));
        cv_sb_puts(o, "<br>heartbeat ");
        html_ago(o, json_integer_value(json_object_get(ctl, stopped ? "stoppedMs" : "heartbeatMs")),
                 now);
    }
    cv_sb_puts(o, "</div></div>");
    json_decref(ctl);
    json_t *src = cv_status_value_json(h->db, CV_STATUS_SOURCE, d);
    card_begin(o, "Git source");
    json_int_t failures = json_integer_value(json_object_get(src, "failures"));
    cv_sb_printf(o, "<div class=\"v\" id=\"source-state\">%s</div><div class=\"muted\">",
                 !src ? "unknown" : failures ? "failing" : "ok");
    if (src) {
        cv_sb_puts(o, "polled ");
        html_ago(o, json_integer_value(json_object_get(src, "lastPollMs")), now);
        cv_sb_printf(o, ", %lld fetch errors", (long long)json_integer_value(
                                                   json_object_get(src, "errors")));
        if (failures) {
            cv_sb_puts(o, "<br>");
            html_esc(o, json_string_value(json_object_get(src, "lastError")));
        }
    }
    cv_sb_puts(o, "</div></div>");
    json_decref(src);
}

static void queue_card(cv_http *h, cv_sb *o, http_queue_view *v)
{
    card_begin(o, "Queue");
    cv_sb_printf(o, "<div class=\"v\"><span id=\"queue-queued\">%lld</span> queued</div>"
                    "<div class=\"muted\">",
                 (long long)v->st.queued);
    if (v->from_builddb)
        cv_sb_puts(o, "from the build DB (the queue is not readable here)");
    else
        cv_sb_printf(o, "<span id=\"queue-leased\">%lld</span> leased, %lld results pending, "
                        "%lld dead letters",
                     (long long)v->st.leased, (long long)v->st.results_pending,
                     (long long)v->st.dead_letters);
    cv_sb_puts(o, "</div></div>");
    (void)h;
}

static void cache_card(cv_http *h, cv_sb *o, const http_rev_cache *newest)
{
    card_begin(o, "L2 hit ratio (current)");
    double local = 0, remote = 0;
    double hit = newest ? http_rev_cache_l2_ratio(newest, &local, &remote) : 0;
    cv_sb_puts(o, "<div class=\"v\" id=\"l2-ratio\">");
    html_pct(o, hit);
    cv_sb_puts(o, "</div><div class=\"muted\">local ");
    html_pct(o, local);
    cv_sb_puts(o, ", remote ");
    html_pct(o, remote);
    cv_cache_stats st;
    if (http_cache_stats(h, &st)) {
        cv_sb_puts(o, "<br>cache holds ");
        html_bytes(o, st.bytes_stored);
        cv_sb_printf(o, ", %llu evictions", (unsigned long long)st.evictions);
    }
    cv_sb_puts(o, "</div></div>");
}

/* Time the cache saved over the revisions shown (each hit: the recorded
 * duration of the compile that stored its artifact) against the time spent
 * compiling in them. */
static void saved_card(cv_sb *o, const http_rev_cache *v, int n)
{
    int64_t saved = 0, spent = 0, hits = 0, known = 0;
    for (int i = 0; i < n; i++) {
        saved += v[i].saved_ms;
        spent += v[i].compile_ms;
        hits += http_rev_cache_hits(&v[i]);
        known += v[i].saved_hits;
    }
    card_begin(o, "Time saved by the cache");
    cv_sb_puts(o, "<div class=\"v\" id=\"time-saved\">");
    html_duration(o, saved);
    cv_sb_printf(o, "</div><div class=\"muted\">over the last %d revisions; compiling took "
                    "<span id=\"time-compiling\">", n);
    html_duration(o, spent);
    cv_sb_printf(o, "</span><br>%lld of %lld hits stored by a compile the farm timed</div></div>",
                 (long long)known, (long long)hits);
}

static void revision_line(cv_http *h, cv_sb *o, const char *label, const cv_rev_summary *s,
                          const char *id, int64_t now, cv_diag *d)
{
    http_rev_cache c;
    http_verdict v;
    if (http_db_rev_cache(h->db, s->id, &c, d) != 0)
        return;
    http_rev_verdict(&c, &v);
    cv_sb_printf(o, "<p id=\"%s\"><b>%s</b> ", id, label);
    html_rev_link(o, s->revision);
    cv_sb_puts(o, " ");
    html_verdict(o, &v, NULL);
    cv_sb_puts(o, " ");
    html_esc(o, v.detail);
    cv_sb_printf(o, " — %lld jobs: %lld hits, %lld ok, %lld failed, %lld pending<br>",
                 (long long)s->jobs, (long long)s->hits, (long long)s->ok, (long long)s->failed,
                 (long long)s->pending);
    html_commit(o, &c, now);
    cv_sb_puts(o, "</p>");
}

typedef struct state_counts {
    const char *states[8];
    int64_t n[8];
    int k;
} state_counts;

static void add_count(void *ctx, const char *target, const char *state, int64_t n)
{
    (void)target;
    state_counts *c = ctx;
    for (int i = 0; i < c->k; i++)
        if (strcmp(c->states[i], state) == 0) {
            c->n[i] += n;
            return;
        }
    static const char *const known[] = {"queued", "hit", "ok", "failed", "ice", "timeout", "oom",
                                        "infra"};
    for (int i = 0; i < 8 && c->k < 8; i++)
        if (strcmp(known[i], state) == 0) {
            c->states[c->k] = known[i];
            c->n[c->k++] = n;
        }
}

static void jobs_by_status(cv_http *h, cv_sb *o, const cv_rev_summary *s, cv_diag *d)
{
    state_counts c = {.k = 0};
    http_db_job_counts(h->db, s->id, add_count, &c, d);
    cv_sb_puts(o, "<h2>Jobs by status</h2><table id=\"jobs-by-status\"><tr><th>status</th>"
                  "<th>jobs</th></tr>");
    for (int i = 0; i < c.k; i++) {
        cv_sb_puts(o, "<tr><td>");
        html_state(o, c.states[i]);
        cv_sb_printf(o, "</td><td class=\"n\" id=\"count-%s\">%lld</td></tr>", c.states[i],
                     (long long)c.n[i]);
    }
    cv_sb_printf(o, "<tr><th>all</th><th class=\"n\" id=\"jobs-total\">%lld</th></tr></table>",
                 (long long)s->jobs);
}

static void cache_history(cv_sb *o, const http_rev_cache *v, int n)
{
    cv_sb_printf(o, "<h2>Cache hit ratio per revision (last %d)</h2>", n);
    svg_cache_legend(o);
    cv_sb_puts(o, "<h3>L2 (artifacts; planner hits count as local)</h3>");
    svg_cache_chart(o, "chart-l2", v, n, true);
    cv_sb_puts(o, "<h3>L1 (front end)</h3>");
    svg_cache_chart(o, "chart-l1", v, n, false);
}

/* The last DAYS days: what the cache saved each day, and over the last 7
 * the figure a build engineer is asked for ("how much did it save this
 * week"). */
static void daily(cv_http *h, cv_sb *o, int64_t now, cv_diag *d)
{
    http_day v[DAYS];
    if (http_daily(h, now, DAYS, v, d) != 0)
        return;
    int64_t saved = 0, compiled = 0, hits = 0, answered = 0;
    for (int i = DAYS - 7; i < DAYS; i++) {
        saved += v[i].saved_ms;
        compiled += v[i].compile_ms;
        hits += v[i].hits;
        answered += v[i].answered;
    }
    cv_sb_printf(o, "<h2>The cache day by day (last %d days, UTC)</h2><p id=\"week\">Last 7 "
                    "days: the cache saved <b id=\"week-saved\">", DAYS);
    html_duration(o, saved);
    cv_sb_puts(o, "</b> of compile time; the farm compiled for ");
    html_duration(o, compiled);
    cv_sb_printf(o, "; %lld of %lld jobs (", (long long)hits, (long long)answered);
    html_pct(o, answered ? (double)hits / answered : 0.0);
    cv_sb_puts(o, ") came from the cache. <a href=\"/misses\">What missed, and why</a></p>");
    svg_daily_chart(o, "chart-days", v, DAYS);
}

static void top_failures(cv_http *h, cv_sb *o, const cv_rev_summary *s)
{
    cv_sb_puts(o, "<h2>Top failure patterns</h2>");
    cv_diag d;
    cv_diag_init(&d);
    cv_failure_report r;
    if (http_failures_classify(h, s, &r, &d) != 0) {
        cv_sb_puts(o, "<p class=\"muted\">the failures could not be classified</p>");
        cv_diag_free(&d);
        return;
    }
    if (!r.n_groups)
        cv_sb_puts(o, "<p id=\"no-failures\">No failures in the current revision.</p>");
    else
        cv_sb_puts(o, "<table id=\"top-patterns\"><tr><th>#</th><th>pattern</th><th>class</th>"
                      "<th>jobs</th><th>models</th></tr>");
    for (int i = 0; i < r.n_groups && i < TOP_PATTERNS; i++) {
        const cv_failure_group *g = &r.groups[i];
        cv_sb_printf(o, "<tr><td>%d</td><td><a href=\"/failures#p%d\"><code>", i + 1, i + 1);
        html_esc(o, g->pattern);
        cv_sb_printf(o, "</code></a>%s</td><td>%s</td><td class=\"n\">%lld</td><td class=\"n\">"
                        "%d</td></tr>",
                     g->is_new ? " <span class=\"new\">new</span>" : "",
                     cv_fail_class_name(g->cls), (long long)g->jobs, g->n_models);
    }
    if (r.n_groups)
        cv_sb_printf(o, "</table><p><a href=\"/failures\">All %d patterns</a></p>", r.n_groups);
    cv_failure_report_free(&r);
    cv_diag_free(&d);
}

/* The jobs w holds leases on, comma-separated, with the earliest deadline. */
static void held_jobs(cv_sb *o, const http_queue_view *v, const char *worker, int64_t now)
{
    int64_t deadline = INT64_MAX;
    int n = 0;
    for (int i = 0; i < v->n_leases; i++) {
        const cv_queue_lease_info *l = &v->leases[i];
        if (strcmp(l->worker_id, worker) != 0)
            continue;
        cv_sb_puts(o, n++ ? ", <code>" : "<code>");
        html_esc(o, l->job_id);
        cv_sb_printf(o, "</code> (attempt %d)", l->attempt);
        if (l->deadline_ms < deadline)
            deadline = l->deadline_ms;
    }
    cv_sb_puts(o, "</td><td>");
    if (n && deadline >= now)
        html_duration(o, deadline - now);
    else if (n)
        cv_sb_puts(o, "<span class=\"new\">expired</span>");
}

static bool has_presence(const http_queue_view *v, const char *worker)
{
    for (int i = 0; i < v->n_workers; i++)
        if (strcmp(v->workers[i].worker_id, worker) == 0)
            return true;
    return false;
}

static void workers(cv_sb *o, const http_queue_view *v, int64_t now)
{
    cv_sb_puts(o, "<h2>Workers</h2>");
    if (!v->leases_known && !v->workers_known) {
        cv_sb_puts(o, "<p class=\"muted\">This queue does not list its workers.</p>");
        return;
    }
    if (!v->n_workers && !v->n_leases) {
        cv_sb_puts(o, "<p id=\"workers-none\">No worker has reported.</p>");
        return;
    }
    cv_sb_puts(o, "<table id=\"workers\"><tr><th>worker</th><th>state</th><th>last heartbeat"
                  "</th><th>jobs done</th><th>holds</th><th>lease ends in</th></tr>");
    for (int i = 0; i < v->n_workers; i++) {
        const cv_queue_worker_info *w = &v->workers[i];
        cv_sb_puts(o, "<tr><td>");
        html_esc(o, w->worker_id);
        cv_sb_printf(o, "</td><td class=\"state-%s\">%s</td><td>",
                     http_worker_state_name(http_worker_state_of(w, now)),
                     http_worker_state_name(http_worker_state_of(w, now)));
        html_ago(o, w->beat_ms, now);
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td>", (long long)w->jobs_done);
        held_jobs(o, v, w->worker_id, now);
        cv_sb_puts(o, "</td></tr>");
    }
    for (int i = 0; i < v->n_leases; i++) {
        const char *id = v->leases[i].worker_id;
        bool first = true;
        for (int k = 0; k < i && first; k++)
            first = strcmp(v->leases[k].worker_id, id) != 0;
        if (!first || has_presence(v, id))
            continue;
        cv_sb_puts(o, "<tr><td>");
        html_esc(o, id);
        cv_sb_puts(o, "</td><td>busy</td><td>?</td><td></td><td>");
        held_jobs(o, v, id, now);
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

/* The revision's own diagnostics (its specs), linked to where its page
 * lists them. */
static void spec_counts(cv_sb *o, const http_rev_cache *c)
{
    if (!c->spec_errors && !c->spec_warnings) {
        cv_sb_puts(o, "<span class=\"muted\">ok</span>");
        return;
    }
    const char *at = strstr(c->revision, "@sha1:");
    cv_sb_puts(o, "<a class=\"spec-diags\" href=\"/revisions/");
    html_esc(o, at ? at + 6 : c->revision);
    cv_sb_puts(o, "#revision-diagnostics\">");
    if (c->spec_errors)
        cv_sb_printf(o, "%lld error%s", (long long)c->spec_errors, c->spec_errors == 1 ? "" : "s");
    if (c->spec_warnings)
        cv_sb_printf(o, "%s%lld warning%s", c->spec_errors ? ", " : "", (long long)c->spec_warnings,
                     c->spec_warnings == 1 ? "" : "s");
    cv_sb_puts(o, "</a>");
}

static void recent(cv_sb *o, const http_rev_cache *v, int n, int64_t now)
{
    cv_sb_puts(o, "<h2>Recent revisions</h2><table id=\"recent\"><tr><th>revision</th>"
                  "<th>state</th><th>jobs</th><th>planner hits</th><th>failed</th><th>pending</th>"
                  "<th>specs</th><th>L2 hit</th><th>L1 hit</th><th>compiling</th><th>saved</th></tr>");
    for (int i = n - 1; i >= 0 && i >= n - RECENT; i--) {
        double a, b;
        http_verdict verdict;
        http_rev_verdict(&v[i], &verdict);
        cv_sb_puts(o, "<tr><td>");
        html_rev_link(o, v[i].revision);
        cv_sb_puts(o, "<br>");
        html_commit(o, &v[i], now);
        cv_sb_puts(o, "</td><td>");
        html_verdict(o, &verdict, NULL);
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td><td class=\"n\">"
                        "%lld</td><td class=\"n\">%lld</td><td>",
                     (long long)v[i].jobs, (long long)v[i].plan_hits, (long long)v[i].failed,
                     (long long)v[i].pending);
        spec_counts(o, &v[i]);
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_pct(o, http_rev_cache_l2_ratio(&v[i], &a, &b));
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_pct(o, http_rev_cache_l1_ratio(&v[i], &a, &b));
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_duration(o, v[i].compile_ms);
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_duration(o, v[i].saved_ms);
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

static void last_succeeded(cv_http *h, cv_sb *o, const cv_rev_summary *cur, int64_t now,
                           cv_diag *d)
{
    char *name = NULL;
    cv_rev_summary s;
    if (cv_builddb_status_get(h->db, CV_STATUS_LAST_SUCCEEDED, &name, d) == 1 &&
        cv_builddb_revision_summary(h->db, name, &s, d) == 1)
        revision_line(h, o, strcmp(s.revision, cur->revision) == 0 ? "Last succeeded (current)"
                                                                     : "Last succeeded",
                      &s, "last-succeeded", now, d);
    else
        cv_sb_puts(o, "<p id=\"last-succeeded\"><b>Last succeeded</b> none yet</p>");
    free(name);
}

void http_page_overview(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_sb *o = &rs->body;
    cv_diag d;
    cv_diag_init(&d);
    http_rev_cache *hist = calloc(HISTORY, sizeof *hist);
    int n = 0;
    if (!hist || http_db_cache_history(h->db, HISTORY, hist, &n, &d) != 0) {
        free(hist);
        html_error_page(rs, 500, "The build DB could not be read", d.n ? d.v[0].msg : "");
        cv_diag_free(&d);
        return;
    }
    cv_rev_summary cur;
    bool have = cv_builddb_revision_summary(h->db, NULL, &cur, &d) == 1;
    http_queue_view qv;
    http_queue_view_get(h, &qv);
    html_begin(o, "Overview", "/", REFRESH_S);
    cv_sb_puts(o, "<h1>Overview</h1><div class=\"cards\">");
    controller_card(h, o, rq->now_ms, &d);
    queue_card(h, o, &qv);
    cache_card(h, o, n ? &hist[n - 1] : NULL);
    saved_card(o, hist, n);
    cv_sb_puts(o, "</div>");
    if (have) {
        cv_sb_puts(o, "<h2>Revisions</h2>");
        revision_line(h, o, "Current", &cur, "current", rq->now_ms, &d);
        last_succeeded(h, o, &cur, rq->now_ms, &d);
        jobs_by_status(h, o, &cur, &d);
        daily(h, o, rq->now_ms, &d);
        cache_history(o, hist, n);
        top_failures(h, o, &cur);
    } else {
        cv_sb_puts(o, "<p id=\"current\">No revision planned yet.</p>");
    }
    workers(o, &qv, rq->now_ms);
    if (have)
        recent(o, hist, n, rq->now_ms);
    http_queue_view_free(&qv);
    free(hist);
    cv_diag_free(&d);
    html_finish(rs, o, rq->now_ms);
}
