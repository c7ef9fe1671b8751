/* /metrics: the farm in Prometheus text format (version 0.0.4).
 *
 * Counters that only grow (results by status and target, per-stage
 * duration histograms, the workers' cache outcomes) are accumulated from
 * the results recorded since the last scrape, so a scrape reads only what
 * is new; the first reads the whole history, a bounded batch at a time.
 * Gauges (the newest revision's jobs, queue depth, leases, controller and
 * source health) and the cache's own totals are read fresh each time. */
#include "controller/http/http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BUCKETS = 13, BATCH = 5000, SCRAPE_MAX = 200000 };
/* Upper bounds in seconds; the last bucket is +Inf. */
static const double bounds[BUCKETS - 1] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,  2.5,
                                           5,    10,   30,  60,   300};

static const char *const area_names[HTTP_AREAS] = {"page", "api", "metrics", "hook", "other"};
static const char *const host_names[HOOK_HOSTS] = {"github", "gitlab"};
static const char *const outcome_names[HOOK_OUTCOMES] = {
    "accepted", "ignored",  "ping",    "bad_signature",
    "bad_payload", "too_large", "refused", "failed", "replayed"};

const char *http_area_name(http_area a) { return area_names[a]; }
const char *http_hook_host_name(http_hook_host h) { return host_names[h]; }
const char *http_hook_outcome_name(http_hook_outcome o) { return outcome_names[o]; }

typedef struct result_count {
    char target[CV_MSG_TOKEN_MAX + 1];
    char status[16];
    uint64_t n;
} result_count;

enum { MISS_CAUSES = 16 };
typedef struct cause_count {
    char cause[32];         /* "other" once MISS_CAUSES words are taken */
    uint64_t n;
} cause_count;

struct http_metrics_state {
    int64_t last_result, last_planner_row;
    cause_count miss[MISS_CAUSES];
    int64_t saved_ms, worker_hits, planner_hits;
    uint64_t hist[HTTP_STAGES][BUCKETS];   /* non-cumulative */
    double sum[HTTP_STAGES];
    uint64_t count[HTTP_STAGES];
    uint64_t l1[CV_CACHE__COUNT], l2[CV_CACHE__COUNT];
    result_count *rc;                      /* owned */
    size_t n_rc, cap_rc;
};

http_metrics_state *http_metrics_new(void)
{
    return calloc(1, sizeof(http_metrics_state));
}

void http_metrics_free(http_metrics_state *m)
{
    if (m)
        free(m->rc);
    free(m);
}

/* ------------------------------------------------------- accumulating */

static void count_result(http_metrics_state *m, const char *target, const char *status)
{
    for (size_t i = 0; i < m->n_rc; i++)
        if (strcmp(m->rc[i].target, target) == 0 && strcmp(m->rc[i].status, status) == 0) {
            m->rc[i].n++;
            return;
        }
    if (m->n_rc == m->cap_rc) {
        size_t cap = m->cap_rc ? m->cap_rc * 2 : 16;
        result_count *v = realloc(m->rc, cap * sizeof *v);
        if (!v)
            return;   /* this label set goes uncounted rather than failing the scrape */
        m->rc = v;
        m->cap_rc = cap;
    }
    result_count *r = &m->rc[m->n_rc++];
    snprintf(r->target, sizeof r->target, "%s", target);
    snprintf(r->status, sizeof r->status, "%s", status);
    r->n = 1;
}

static void count_miss(http_metrics_state *m, const char *cause)
{
    int i = 0;
    while (i < MISS_CAUSES - 1 && m->miss[i].cause[0] && strcmp(m->miss[i].cause, cause) != 0)
        i++;
    if (!m->miss[i].cause[0])
        snprintf(m->miss[i].cause, sizeof m->miss[i].cause, "%s",
                 i == MISS_CAUSES - 1 ? "other" : cause);
    m->miss[i].n++;
}

static void on_result(void *ctx, const http_result *r)
{
    http_metrics_state *m = ctx;
    count_result(m, r->target, r->status);
    if (r->miss[0])
        count_miss(m, r->miss);
    if (strcmp(r->l2, "hit") == 0 || strcmp(r->l2, "remote-hit") == 0) {
        m->saved_ms += r->saved_ms;
        m->worker_hits++;
    }
    int64_t st[HTTP_STAGES];
    http_job_stages(r->ts, st);
    for (int s = 0; s < HTTP_STAGES; s++) {
        if (r->ts[s] <= 0)
            continue;   /* never reached */
        double sec = (double)st[s] / 1000.0;
        int b = 0;
        while (b < BUCKETS - 1 && sec > bounds[b])
            b++;
        m->hist[s][b]++;
        m->sum[s] += sec;
        m->count[s]++;
    }
    int l1 = cv_cache_outcome_parse(r->l1), l2 = cv_cache_outcome_parse(r->l2);
    if (l1 >= 0)
        m->l1[l1]++;
    if (l2 >= 0)
        m->l2[l2]++;
}

static int catch_up(cv_http *h, cv_diag *d)
{
    http_metrics_state *m = h->ms;
    for (int read = 0; read < SCRAPE_MAX; read += BATCH) {
        int64_t before = m->last_result;
        if (http_db_results_since(h->db, m->last_result, BATCH, on_result, m, &m->last_result,
                                  d) != 0)
            return -1;
        if (m->last_result == before)
            break;
    }
    for (int read = 0; read < SCRAPE_MAX; read += BATCH) {
        int64_t before = m->last_planner_row;
        if (http_db_planner_hits_since(h->db, m->last_planner_row, BATCH, &m->planner_hits,
                                       &m->saved_ms, &m->last_planner_row, d) != 0)
            return -1;
        if (m->last_planner_row == before)
            break;
    }
    return 0;
}

/* ------------------------------------------------------------ writing */

static void help(cv_sb *o, const char *name, const char *type, const char *text)
{
    cv_sb_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A label value with \, " and newlines escaped. */
static void label(cv_sb *o, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            cv_sb_putc(o, '\\');
        if (*v == '\n')
            cv_sb_puts(o, "\\n");
        else
            cv_sb_putc(o, *v);
    }
}

static void histograms(const http_metrics_state *m, cv_sb *o)
{
    const char *name = "cuvil_farm_job_stage_duration_seconds";
    help(o, name, "histogram",
         "Time jobs spent in each stage (queue, frontend, passes, codegen, upload), per result.");
    for (int s = 0; s < HTTP_STAGES; s++) {
        const char *stage = http_stage_name((http_stage)s);
        uint64_t cum = 0;
        for (int b = 0; b < BUCKETS; b++) {
            cum += m->hist[s][b];
            if (b < BUCKETS - 1)
                cv_sb_printf(o, "%s_bucket{stage=\"%s\",le=\"%g\"} %llu\n", name, stage,
                             bounds[b], (unsigned long long)cum);
            else
                cv_sb_printf(o, "%s_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n", name, stage,
                             (unsigned long long)cum);
        }
        cv_sb_printf(o, "%s_sum{stage=\"%s\"} %.3f\n%s_count{stage=\"%s\"} %llu\n", name, stage,
                     m->sum[s], name, stage, (unsigned long long)m->count[s]);
    }
}

static void results(const http_metrics_state *m, cv_sb *o)
{
    help(o, "cuvil_farm_job_results_total", "counter",
         "Job results recorded, by target and status.");
    for (size_t i = 0; i < m->n_rc; i++) {
        cv_sb_puts(o, "cuvil_farm_job_results_total{target=\"");
        label(o, m->rc[i].target);
        cv_sb_printf(o, "\",status=\"%s\"} %llu\n", m->rc[i].status,
                     (unsigned long long)m->rc[i].n);
    }
    help(o, "cuvil_farm_job_cache_lookups_total", "counter",
         "The workers' cache look-ups for the jobs they ran, by level and outcome.");
    for (int lv = 0; lv < 2; lv++)
        for (int c = 0; c < CV_CACHE__COUNT; c++)
            cv_sb_printf(o,
                         "cuvil_farm_job_cache_lookups_total{level=\"l%d\",outcome=\"%s\"} %llu\n",
                         lv + 1, cv_cache_outcome_name((cv_cache_outcome)c),
                         (unsigned long long)(lv ? m->l2[c] : m->l1[c]));
}

static void misses_and_savings(const http_metrics_state *m, cv_sb *o)
{
    help(o, "cuvil_farm_job_cache_misses_total", "counter",
         "Jobs that missed the cache and compiled, by the worker's cause (weights, model, "
         "options, compiler, new, evicted, ...).");
    for (int i = 0; i < MISS_CAUSES && m->miss[i].cause[0]; i++) {
        cv_sb_puts(o, "cuvil_farm_job_cache_misses_total{cause=\"");
        label(o, m->miss[i].cause);
        cv_sb_printf(o, "\"} %llu\n", (unsigned long long)m->miss[i].n);
    }
    help(o, "cuvil_farm_cache_saved_seconds_total", "counter",
         "Compile time the cache saved: for each hit, what the compile that stored it took.");
    cv_sb_printf(o, "cuvil_farm_cache_saved_seconds_total %.3f\n", (double)m->saved_ms / 1000.0);
    help(o, "cuvil_farm_cache_hit_jobs_total", "counter",
         "Jobs served from the cache, by who found the entry (the planner before queueing, or "
         "a worker).");
    cv_sb_printf(o, "cuvil_farm_cache_hit_jobs_total{by=\"planner\"} %lld\n"
                    "cuvil_farm_cache_hit_jobs_total{by=\"worker\"} %lld\n",
                 (long long)m->planner_hits, (long long)m->worker_hits);
}

static void on_count(void *ctx, const char *target, const char *state, int64_t n)
{
    cv_sb *o = ctx;
    cv_sb_puts(o, "cuvil_farm_revision_jobs{target=\"");
    label(o, target ? target : "");
    cv_sb_printf(o, "\",state=\"%s\"} %lld\n", state ? state : "", (long long)n);
}

static int revision(cv_http *h, cv_sb *o, cv_diag *d)
{
    cv_rev_summary s;
    int found = cv_builddb_revision_summary(h->db, NULL, &s, d);
    help(o, "cuvil_farm_revision_jobs", "gauge",
         "Jobs of the newest revision, by target and state.");
    if (found == 1 && http_db_job_counts(h->db, s.id, on_count, o, d) != 0)
        return -1;
    help(o, "cuvil_farm_revision_created_timestamp_seconds", "gauge",
         "When the newest revision was planned.");
    if (found == 1)
        cv_sb_printf(o, "cuvil_farm_revision_created_timestamp_seconds %.3f\n",
                     (double)s.created_ms / 1000.0);
    char *last = NULL;
    int64_t ok_ms = 0;
    if (cv_builddb_status_get(h->db, CV_STATUS_LAST_SUCCEEDED, &last, d) == 1)
        ok_ms = http_db_finished_ms(h->db, last, d);
    free(last);
    help(o, "cuvil_farm_last_successful_revision_timestamp_seconds", "gauge",
         "When the newest revision whose every job succeeded or hit finished.");
    if (ok_ms)
        cv_sb_printf(o, "cuvil_farm_last_successful_revision_timestamp_seconds %.3f\n",
                     (double)ok_ms / 1000.0);
    return found < 0 ? -1 : 0;
}

/* A metric with one sample and no labels. */
static void single(cv_sb *o, const char *name, const char *type, const char *text, long long v)
{
    help(o, name, type, text);
    cv_sb_printf(o, "%s %lld\n", name, v);
}

static void leases(const http_queue_view *v, cv_sb *o, int64_t now_ms)
{
    int workers = 0;
    help(o, "cuvil_farm_worker_lease_remaining_seconds", "gauge",
         "Per busy worker, time until its earliest lease runs out; each heartbeat extends it.");
    for (int i = 0; i < v->n_leases; i++) {
        bool first = true;
        for (int k = 0; k < i && first; k++)
            first = strcmp(v->leases[k].worker_id, v->leases[i].worker_id) != 0;
        if (!first)
            continue;
        workers++;
        cv_sb_puts(o, "cuvil_farm_worker_lease_remaining_seconds{worker=\"");
        label(o, v->leases[i].worker_id);
        cv_sb_printf(o, "\"} %.3f\n", (double)(v->leases[i].deadline_ms - now_ms) / 1000.0);
    }
    single(o, "cuvil_farm_workers_busy", "gauge", "Workers holding a job lease.", workers);
}

static void presence(const http_queue_view *v, cv_sb *o, int64_t now_ms)
{
    int by_state[3] = {0};
    help(o, "cuvil_farm_worker_heartbeat_age_seconds", "gauge",
         "Per worker, time since it last reported (idle ones every 5 s, busy ones at each lease "
         "heartbeat).");
    for (int i = 0; i < v->n_workers; i++) {
        by_state[http_worker_state_of(&v->workers[i], now_ms)]++;
        cv_sb_puts(o, "cuvil_farm_worker_heartbeat_age_seconds{worker=\"");
        label(o, v->workers[i].worker_id);
        cv_sb_printf(o, "\"} %.3f\n", (double)(now_ms - v->workers[i].beat_ms) / 1000.0);
    }
    help(o, "cuvil_farm_workers", "gauge", "Workers by state (lost: silent for 60 s).");
    for (int s = 0; s < 3; s++)
        cv_sb_printf(o, "cuvil_farm_workers{state=\"%s\"} %d\n",
                     http_worker_state_name((http_worker_state)s), by_state[s]);
}

static void queue(cv_http *h, cv_sb *o, int64_t now_ms)
{
    http_queue_view v;
    http_queue_view_get(h, &v);
    const cv_queue_stats *st = &v.st;
    help(o, "cuvil_farm_queue_jobs", "gauge", "Jobs in the queue, by state.");
    if (v.known)
        cv_sb_printf(o, "cuvil_farm_queue_jobs{state=\"queued\"} %lld\n", (long long)st->queued);
    if (v.known && !v.from_builddb) {
        cv_sb_printf(o, "cuvil_farm_queue_jobs{state=\"leased\"} %lld\n", (long long)st->leased);
        single(o, "cuvil_farm_queue_results_pending", "gauge",
               "Results not yet taken by the controller.", st->results_pending);
        single(o, "cuvil_farm_queue_dead_letters_total", "counter", "Jobs given up on.",
               st->dead_letters);
        single(o, "cuvil_farm_queue_retries_total", "counter",
               "Jobs queued again after a failure.", st->retried);
        single(o, "cuvil_farm_queue_expired_leases_total", "counter",
               "Leases that ran out (a worker stopped heartbeating).", st->expired);
    }
    if (v.leases_known)
        leases(&v, o, now_ms);
    if (v.workers_known)
        presence(&v, o, now_ms);
    http_queue_view_free(&v);
}

typedef struct field {
    const char *key, *name, *type, *help;
} field;

static const field source_fields[] = {
    {"polls", "cuvil_farm_git_polls_total", "counter",
     "Polls of the git source (since the controller started)."},
    {"fetches", "cuvil_farm_git_fetches_total", "counter",
     "Fetches of the git source (since the controller started)."},
    {"errors", "cuvil_farm_git_fetch_errors_total", "counter",
     "Failed polls and fetches (since the controller started)."},
    {"failures", "cuvil_farm_git_consecutive_failures", "gauge",
     "Failures in a row; 0 after a success."},
};

static void controller_and_source(cv_http *h, cv_sb *o, int64_t now_ms, cv_diag *d)
{
    json_t *ctl = cv_status_value_json(h->db, CV_STATUS_CONTROLLER, d);
    single(o, "cuvil_farm_controller_up", "gauge", "1 while the controller heartbeats.",
           cv_status_controller_alive(ctl, now_ms));
    json_int_t hb = json_integer_value(json_object_get(ctl, "heartbeatMs"));
    help(o, "cuvil_farm_controller_heartbeat_age_seconds", "gauge",
         "Time since the controller's last heartbeat.");
    if (hb)
        cv_sb_printf(o, "cuvil_farm_controller_heartbeat_age_seconds %.3f\n",
                     (double)(now_ms - hb) / 1000.0);
    json_decref(ctl);
    json_t *src = cv_status_value_json(h->db, CV_STATUS_SOURCE, d);
    for (size_t i = 0; i < sizeof source_fields / sizeof source_fields[0]; i++) {
        const field *f = &source_fields[i];
        help(o, f->name, f->type, f->help);
        if (src)
            cv_sb_printf(o, "%s %lld\n", f->name,
                         (long long)json_integer_value(json_object_get(src, f->key)));
    }
    json_decref(src);
}

static void cache_levels(const cv_cache_stats *st, cv_sb *o)
{
    static const char *const level[CV_CACHE_NLEVELS] = {"l1", "l2", "code"};
    help(o, "cuvil_farm_cache_hits_total", "counter",
         "Hits in the farm's cache, by level and location.");
    for (int lv = 0; lv < CV_CACHE_NLEVELS; lv++)
        for (int remote = 0; remote < 2; remote++)
            cv_sb_printf(o, "cuvil_farm_cache_hits_total{level=\"%s\",location=\"%s\"} %llu\n",
                         level[lv], remote ? "remote" : "local",
                         (unsigned long long)(remote ? st->hits_remote[lv] : st->hits_local[lv]));
    help(o, "cuvil_farm_cache_misses_total", "counter", "Misses in the farm's cache, by level.");
    for (int lv = 0; lv < CV_CACHE_NLEVELS; lv++)
        cv_sb_printf(o, "cuvil_farm_cache_misses_total{level=\"%s\"} %llu\n", level[lv],
                     (unsigned long long)st->misses[lv]);
}

static void cache_totals(cv_http *h, cv_sb *o)
{
    cv_cache_stats st;
    if (!http_cache_stats(h, &st))
        return;
    cache_levels(&st, o);
    const struct {
        const char *name, *type, *help;
        uint64_t v;
    } totals[] = {
        {"cuvil_farm_cache_stored_bytes", "gauge", "Bytes the cache holds.", st.bytes_stored},
        {"cuvil_farm_cache_max_bytes", "gauge", "The cache's size limit.", st.max_size},
        {"cuvil_farm_cache_entries", "gauge", "Entries in the cache.", st.entries},
        {"cuvil_farm_cache_evictions_total", "counter", "Entries evicted for space.",
         st.evictions},
        {"cuvil_farm_cache_evicted_bytes_total", "counter", "Bytes evicted for space.",
         st.evicted_bytes},
        {"cuvil_farm_cache_corrupt_total", "counter", "Entries that failed verification.",
         st.corrupt},
        {"cuvil_farm_cache_remote_errors_total", "counter", "Failed requests to the remote cache.",
         st.remote_errors},
    };
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
        single(o, totals[i].name, totals[i].type, totals[i].help, (long long)totals[i].v);
}

static void http_counters_text(const cv_http *h, cv_sb *o)
{
    help(o, "cuvil_farm_http_requests_total", "counter",
         "Requests to the farm's HTTP server, by area and status class.");
    for (int a = 0; a < HTTP_AREAS; a++)
        for (int c = 0; c < HTTP_STATUS_CLASSES; c++) {
            uint64_t v = atomic_load(&h->counters.requests[a][c]);
            if (v)
                cv_sb_printf(o, "cuvil_farm_http_requests_total{area=\"%s\",code=\"%dxx\"} %llu\n",
                             http_area_name((http_area)a), c + 1, (unsigned long long)v);
        }
    help(o, "cuvil_farm_webhooks_total", "counter",
         "Webhook deliveries, by host and outcome (bad_signature: rejected with 401).");
    for (int host = 0; host < HOOK_HOSTS; host++)
        for (int k = 0; k < HOOK_OUTCOMES; k++)
            cv_sb_printf(o, "cuvil_farm_webhooks_total{host=\"%s\",outcome=\"%s\"} %llu\n",
                         http_hook_host_name((http_hook_host)host),
                         http_hook_outcome_name((http_hook_outcome)k),
                         (unsigned long long)atomic_load(&h->counters.hooks[host][k]));
    single(o, "cuvil_farm_build_requests_total", "counter",
           "Builds requested with POST /api/v1/revisions.",
           (long long)atomic_load(&h->counters.builds_requested));
}

void http_metrics(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_sb *o = &rs->body;
    int rc = catch_up(h, &d);
    if (rc == 0) {
        results(h->ms, o);
        misses_and_savings(h->ms, o);
        histograms(h->ms, o);
        rc = revision(h, o, &d);
    }
    if (rc == 0) {
        queue(h, o, rq->now_ms);
        controller_and_source(h, o, rq->now_ms, &d);
        cache_totals(h, o);
        http_counters_text(h, o);
    }
    if (rc != 0 || o->oom) {
        http_error_diag(rs, 500, &d);
    } else {
        rs->status = 200;
        rs->type = "text/plain; version=0.0.4; charset=utf-8";
    }
    cv_diag_free(&d);
}
