/* Top cache misses over a window (/misses?days=N, /api/v1/misses): which
 * causes and which models cost the farm the most compile time.  Each job
 * that compiled carries its worker's cause word and reason (compile's
 * cv_build_miss_cause, build DB migration 6); a job that waited on another
 * execution shares its miss but not its cost. */
#include "controller/builddb_internal.h"
#include "controller/http/html.h"

#include <stdlib.h>
#include <string.h>

#define DAYS_DEFAULT 7
#define DAYS_MAX 366
#define CAUSES_MAX 16
#define MODELS_MAX 20
#define DAY_MS INT64_C(86400000)

typedef struct miss_cause {
    char cause[32];
    int64_t misses, compile_ms;
} miss_cause;

typedef struct miss_model {
    char model[CV_MSG_STR_MAX + 1], target[CV_MSG_TOKEN_MAX + 1];
    char cause[32], reason[256];
    int64_t misses, compile_ms;
    int64_t newest_id;      /* its newest missed job's row: the reason shown */
} miss_model;

typedef struct misses_view {
    int days;
    int64_t since_ms, misses, compile_ms;
    miss_cause causes[CAUSES_MAX];
    int n_causes;
    miss_model *models; /* owned, MODELS_MAX */
    int n_models;
} misses_view;

/* The compile time a job spent: its own execution's, start to upload (to
 * the collected finish when it failed before uploading). */
#define SQL_COST                                                                      \
    "CASE WHEN j.runner = j.job_id AND j.started_ms IS NOT NULL"                      \
    " THEN MAX(COALESCE(j.uploaded_ms, j.finished_ms, j.started_ms) - j.started_ms, 0)" \
    " ELSE 0 END"
static const char SQL_CAUSES[] =
    "SELECT j.miss, COUNT(*), SUM(" SQL_COST ") FROM jobs j"
    " WHERE j.miss IS NOT NULL AND j.finished_ms >= ? GROUP BY j.miss"
    " ORDER BY 3 DESC, 2 DESC, 1";
/* One row per (model, target, cause) of the window, through the index of
 * missed jobs; the models are ranked in C (correlated subqueries per model
 * took 1.6 s with 100,000 jobs: bench/dashboard). */
static const char SQL_MODEL_CAUSES[] =
    "SELECT j.model_path, j.target, j.miss, COUNT(*), SUM(" SQL_COST "), MAX(j.id) FROM jobs j"
    " WHERE j.miss IS NOT NULL AND j.finished_ms >= ? GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";
static const char SQL_REASON[] = "SELECT COALESCE(miss_reason,'') FROM jobs WHERE id = ?";

static int read_causes(cv_builddb *db, misses_view *v, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_CAUSES, "i", v->since_ms);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        int64_t n = sqlite3_column_int64(st, 1), ms = sqlite3_column_int64(st, 2);
        v->misses += n;
        v->compile_ms += ms;
        if (v->n_causes == CAUSES_MAX)
            continue;   /* more words than the table shows: counted, not listed */
        miss_cause *c = &v->causes[v->n_causes++];
        cv_sqldb_text(st, 0, c->cause, sizeof c->cause);
        c->misses = n;
        c->compile_ms = ms;
    }
    return rc < 0 ? -1 : 0;
}

/* Ranks by compile time, then misses, then path and target (the order the
 * rows come in, so an equal one never displaces an earlier one). */
static bool costs_more(const miss_model *a, const miss_model *b)
{
    return a->compile_ms != b->compile_ms ? a->compile_ms > b->compile_ms : a->misses > b->misses;
}

/* Keeps the MODELS_MAX costliest groups in v->models, in rank order. */
static void rank_model(misses_view *v, const miss_model *m)
{
    int at = v->n_models;
    while (at > 0 && costs_more(m, &v->models[at - 1]))
        at--;
    if (at == MODELS_MAX)
        return;
    int n = v->n_models < MODELS_MAX ? v->n_models : MODELS_MAX - 1;
    memmove(&v->models[at + 1], &v->models[at], (size_t)(n - at) * sizeof *m);
    v->models[at] = *m;
    if (v->n_models < MODELS_MAX)
        v->n_models++;
}

static int read_reasons(cv_builddb *db, misses_view *v, cv_diag *d)
{
    for (int i = 0; i < v->n_models; i++) {
        sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_REASON, "i", v->models[i].newest_id);
        int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
        if (rc < 0)
            return -1;
        if (rc == 1) {
            cv_sqldb_text(st, 0, v->models[i].reason, sizeof v->models[i].reason);
            sqlite3_reset(st);
        }
    }
    return 0;
}

static int read_models(cv_builddb *db, misses_view *v, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_MODEL_CAUSES, "i", v->since_ms);
    miss_model cur = {0};
    int64_t cur_cause_n = 0;
    bool have = false;
    int rc = st ? 1 : -1;
    for (;;) {
        rc = rc == 1 ? cv_sqldb_step(&db->db, st, d) : rc;
        char model[sizeof cur.model] = "", target[sizeof cur.target] = "";
        if (rc == 1) {
            cv_sqldb_text(st, 0, model, sizeof model);
            cv_sqldb_text(st, 1, target, sizeof target);
        }
        if (have && (rc != 1 || strcmp(model, cur.model) != 0 || strcmp(target, cur.target) != 0)) {
            rank_model(v, &cur);
            have = false;
        }
        if (rc != 1)
            break;
        if (!have) {
            memset(&cur, 0, sizeof cur);
            snprintf(cur.model, sizeof cur.model, "%s", model);
            snprintf(cur.target, sizeof cur.target, "%s", target);
            cur_cause_n = 0;
            have = true;
        }
        int64_t n = sqlite3_column_int64(st, 3), id = sqlite3_column_int64(st, 5);
        cur.misses += n;
        cur.compile_ms += sqlite3_column_int64(st, 4);
        if (n > cur_cause_n) {      /* causes come in name order: the first of equals wins */
            cv_sqldb_text(st, 2, cur.cause, sizeof cur.cause);
            cur_cause_n = n;
        }
        if (id > cur.newest_id)
            cur.newest_id = id;
    }
    return rc < 0 ? -1 : read_reasons(db, v, d);
}

/* days=N: 1..DAYS_MAX whole days; absent: a week. */
static int window_days(const http_req *rq, int *days, cv_diag *d)
{
    const char *s = http_arg(rq, "days");
    *days = DAYS_DEFAULT;
    if (!s)
        return 0;
    char *end;
    long n = strtol(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || n < 1 || n > DAYS_MAX)
        return cv_diag_fail(d, CV_E_HTTP_BAD_REQUEST, (cv_span){0},
                            "days= takes a whole number of days from 1 to %d", DAYS_MAX);
    *days = (int)n;
    return 0;
}

static int misses_read(cv_builddb *db, const http_req *rq, misses_view *v, cv_diag *d)
{
    memset(v, 0, sizeof *v);
    if (window_days(rq, &v->days, d) != 0)
        return -2;
    v->since_ms = rq->now_ms - v->days * DAY_MS;
    v->models = calloc(MODELS_MAX, sizeof *v->models);
    if (!v->models)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return read_causes(db, v, d) != 0 || read_models(db, v, d) != 0 ? -1 : 0;
}

/* The cause words in a build engineer's words; an unknown word (a newer
 * worker's) shows as it is. */
static const char *cause_label(const char *cause)
{
    static const struct { const char *cause, *label; } labels[] = {
        {"weights", "weights changed (a retrain)"}, {"model", "model changed"},
        {"options", "build options changed"}, {"compiler", "compiler changed"},
        {"new", "first build"}, {"evicted", "evicted from the cache"},
        {"corrupt", "corrupt entry"}, {"remote_error", "remote cache failed"},
        {"disabled", "cache off"}, {"unexplained", "not explained"},
    };
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (strcmp(cause, labels[i].cause) == 0)
            return labels[i].label;
    return cause;
}

static double share(int64_t part, int64_t whole) { return whole ? (double)part / whole : 0.0; }

static json_t *misses_json(const misses_view *v)
{
    json_t *causes = json_array(), *models = json_array();
    for (int i = 0; i < v->n_causes; i++) {
        const miss_cause *c = &v->causes[i];
        json_array_append_new(causes, json_pack(
            "{s:s, s:s, s:I, s:I, s:f, s:f}", "cause", c->cause, "label", cause_label(c->cause),
            "misses", (json_int_t)c->misses, "compileMs", (json_int_t)c->compile_ms,
            "shareOfMisses", share(c->misses, v->misses), "shareOfCompileTime",
            share(c->compile_ms, v->compile_ms)));
    }
    for (int i = 0; i < v->n_models; i++) {
        const miss_model *m = &v->models[i];
        json_array_append_new(models, json_pack(
            "{s:s, s:s, s:I, s:I, s:s, s:s}", "model", m->model, "target", m->target, "misses",
            (json_int_t)m->misses, "compileMs", (json_int_t)m->compile_ms, "cause", m->cause,
            "reason", m->reason));
    }
    return json_pack("{s:i, s:I, s:I, s:I, s:o, s:o}", "days", v->days, "sinceMs",
                     (json_int_t)v->since_ms, "misses", (json_int_t)v->misses, "compileMs",
                     (json_int_t)v->compile_ms, "causes", causes, "models", models);
}

static void causes_table(cv_sb *o, const misses_view *v)
{
    cv_sb_puts(o, "<table id=\"miss-causes\"><tr><th>cause</th><th>misses</th><th>share</th>"
                  "<th>compile time</th><th>share</th></tr>");
    for (int i = 0; i < v->n_causes; i++) {
        const miss_cause *c = &v->causes[i];
        cv_sb_printf(o, "<tr class=\"cause\" data-cause=\"");
        html_esc(o, c->cause);
        cv_sb_puts(o, "\"><td>");
        html_esc(o, cause_label(c->cause));
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td class=\"n\">", (long long)c->misses);
        html_pct(o, share(c->misses, v->misses));
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_duration(o, c->compile_ms);
        cv_sb_puts(o, "</td><td class=\"n\">");
        html_pct(o, share(c->compile_ms, v->compile_ms));
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

static void models_table(cv_sb *o, const misses_view *v)
{
    cv_sb_printf(o, "<h2>Models that cost the most (at most %d)</h2><table id=\"miss-models\">"
                    "<tr><th>model</th><th>target</th><th>misses</th><th>compile time</th>"
                    "<th>mostly</th><th>last reason</th></tr>", MODELS_MAX);
    for (int i = 0; i < v->n_models; i++) {
        const miss_model *m = &v->models[i];
        cv_sb_puts(o, "<tr class=\"model\"><td><a href=\"/models?model=");
        html_url_encode(o, m->model);
        cv_sb_puts(o, "&amp;target=");
        html_url_encode(o, m->target);
        cv_sb_puts(o, "\">");
        html_esc(o, m->model);
        cv_sb_puts(o, "</a></td><td>");
        html_esc(o, m->target);
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td class=\"n\">", (long long)m->misses);
        html_duration(o, m->compile_ms);
        cv_sb_puts(o, "</td><td>");
        html_esc(o, cause_label(m->cause));
        cv_sb_puts(o, "</td><td class=\"muted\">");
        html_esc(o, m->reason);
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

void http_page_misses(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    misses_view v;
    int rc = misses_read(h->db, rq, &v, &d);
    if (rc != 0) {
        html_error_page(rs, rc == -2 ? 400 : 500, rc == -2 ? "Which window?"
                        : "The build DB could not be read", d.n ? d.v[0].msg : "");
    } else {
        cv_sb *o = &rs->body;
        html_begin(o, "Top misses", "/misses", 0);
        cv_sb_printf(o, "<h1>Top cache misses, last %d day%s</h1><p id=\"miss-summary\">",
                     v.days, v.days == 1 ? "" : "s");
        if (!v.misses) {
            cv_sb_puts(o, "No job missed the cache in this window.</p>");
        } else {
            cv_sb_printf(o, "%lld job%s missed the cache and compiled for ", (long long)v.misses,
                         v.misses == 1 ? "" : "s");
            html_duration(o, v.compile_ms);
            cv_sb_printf(o, "; most of it: %s.</p>", cause_label(v.causes[0].cause));
            causes_table(o, &v);
            models_table(o, &v);
        }
        html_finish(rs, o, rq->now_ms);
    }
    free(v.models);
    cv_diag_free(&d);
}

void http_api_misses(cv_http *h, const http_req *rq, http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    misses_view v;
    int rc = misses_read(h->db, rq, &v, &d);
    if (rc != 0)
        http_error_diag(rs, rc == -2 ? 400 : 500, &d);
    else
        http_json(rs, 200, misses_json(&v));
    free(v.models);
    cv_diag_free(&d);
}
