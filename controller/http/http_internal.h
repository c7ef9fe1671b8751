/* The farm's HTTP server, inside the controller component:
 *
 *   server.c     the daemon (libmicrohttpd, loaded by common/netlib.c), request
 *                bodies, tokens, routing
 *   respond.c    JSON answers and coded JSON errors
 *   http_db.c    the build DB queries only the server needs (per-revision
 *                cache outcomes, job timestamps, new results)
 *   sources.c    the queue and cache the figures come from, opened lazily
 *   api.c        /api/v1/...
 *   metrics.c    /metrics
 *   webhook.c    /hooks/github, /hooks/gitlab
 *   html.c, page_*.c  the dashboard
 *
 * One polling thread answers every request, so the handles below are used
 * by one request at a time; the mutex makes that explicit for the day a
 * thread pool is switched on. */
#ifndef CV_CONTROLLER_HTTP_INTERNAL_H
#define CV_CONTROLLER_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cache/cache.h"
#include "common/strbuf.h"
#include "controller/controller.h"
#include "controller/internal.h"

/* ---- counters (atomics: recorded without the lock) */

typedef enum { HTTP_AREA_PAGE, HTTP_AREA_API, HTTP_AREA_METRICS, HTTP_AREA_HOOK,
               HTTP_AREA_OTHER, HTTP_AREAS } http_area;
typedef enum { HOOK_GITHUB, HOOK_GITLAB, HOOK_HOSTS } http_hook_host;
typedef enum { HOOK_ACCEPTED, HOOK_IGNORED, HOOK_PING, HOOK_BAD_SIGNATURE, HOOK_BAD_PAYLOAD,
               HOOK_TOO_LARGE, HOOK_REFUSED, HOOK_FAILED, HOOK_REPLAYED,
               HOOK_OUTCOMES } http_hook_outcome;
enum { HTTP_STATUS_CLASSES = 5 };   /* 1xx..5xx */

typedef struct http_counters {
    atomic_uint_fast64_t requests[HTTP_AREAS][HTTP_STATUS_CLASSES];
    atomic_uint_fast64_t hooks[HOOK_HOSTS][HOOK_OUTCOMES];
    atomic_uint_fast64_t builds_requested;   /* POST /api/v1/revisions */
} http_counters;

const char *http_area_name(http_area a);
const char *http_hook_host_name(http_hook_host h);
const char *http_hook_outcome_name(http_hook_outcome o);

/* ---- the server */

typedef struct http_metrics_state http_metrics_state;   /* metrics.c */
struct MHD_Daemon;
struct MHD_Connection;
struct cv_tokens;

struct cv_http {
    char *state_dir, *db_path, *trees_dir, *ref;   /* owned */
    char *secret;                 /* owned, cleansed on stop; NULL = hooks refused */
    char *queue_url;              /* owned; NULL = the controller's, found later */
    char *cache_dir;              /* owned; NULL = the default */
    bool no_cache;
    cv_queue_clock_fn now_fn;
    void *clock_ctx;
    struct cv_tokens *tokens; /* owned; NULL = no authentication */
    struct MHD_Daemon *daemon;
    struct cv_netguard *guard;    /* owned: connection limits and deadlines */
    int port;
    http_counters counters;
    pthread_mutex_t mu;           /* guards everything below */
    cv_builddb *db;               /* owned: the server's own handle */
    cv_queue *q;                  /* owned; opened on first use */
    char queue_opened[512];       /* the URL q (or the attempt) was for; "" = none yet */
    cv_cache *cache;              /* owned; opened on first use */
    bool cache_tried;
    http_metrics_state *ms;       /* owned */
    /* Days before today do not change (a job counts on the day it finished,
     * and jobs finish now): the days chart reads the build DB from the first
     * day it has not kept.  days_kept[i] is day days_from + i. */
    struct http_day *days_kept;   /* owned; HTTP_DAYS_KEPT */
    int64_t days_from;
    int n_days_kept;
};
#define HTTP_DAYS_KEPT 400

int64_t http_now_ms(const cv_http *h);

/* One request as a handler sees it. */
typedef struct http_req {
    struct MHD_Connection *conn;
    const char *method;           /* GET (HEAD too), POST, ... */
    const char *path;             /* unescaped, without the query */
    const char *rest;             /* a prefix route: what follows the prefix */
    const char *body;             /* NUL-terminated; "" when none */
    size_t body_len;
    int64_t now_ms;
} http_req;

typedef struct http_resp {
    int status;                   /* 0 = not answered yet */
    const char *type;             /* static */
    cv_sb body;                   /* owned */
    bool html_auth;               /* a 401 asks a browser for Basic credentials */
    const char *allow;            /* static; a 405's Allow */
    bool close;                   /* answered before the body: close the connection */
} http_resp;

/* A query argument or request header; NULL when absent (server.c). */
const char *http_arg(const http_req *rq, const char *name);
const char *http_header(const http_req *rq, const char *name);

/* ---- answers (respond.c) */

/* Takes o (a reference is stolen). */
void http_json(http_resp *rs, int status, json_t *o);
/* {"error":{"code":"CV6134","name":"http-not-found","message":...}} */
void http_error(http_resp *rs, int status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The first error of d (or a generic CV6137), as http_error. */
void http_error_diag(http_resp *rs, int status, const cv_diag *d);
/* A "limit"/"offset" style argument: dflt when absent; -1 (and a 400 in
 * rs) when not an integer in [lo, hi]. */
int64_t http_int_arg(const http_req *rq, http_resp *rs, const char *name, int64_t dflt,
                     int64_t lo, int64_t hi);
/* Resolves ?revision= (dflt when absent) to a summary: 1, or 0 with a
 * 404/500 answered in rs.  "latest" with no revision yet is a 404 too. */
int http_revision(cv_http *h, const char *name, cv_rev_summary *out, http_resp *rs);

/* ---- figures from the queue and cache (sources.c); with h->mu held */

typedef struct http_queue_view {
    bool known;                   /* false: no queue and no build DB figures */
    bool from_builddb;            /* the queue could not be read: depths from the build DB */
    char url[512];
    cv_queue_stats st;
    bool leases_known;
    cv_queue_lease_info *leases;  /* owned */
    int n_leases;
    bool workers_known;           /* the queue keeps worker presence */
    cv_queue_worker_info *workers; /* owned; most recent report first */
    int n_workers;
} http_queue_view;

#define HTTP_LEASES_MAX 512
#define HTTP_WORKERS_MAX 512
/* A worker silent this long is shown as lost: idle ones report every 5 s,
 * busy ones at each lease heartbeat (a third of the lease, 30 s by default). */
#define HTTP_WORKER_LOST_MS 60000

typedef enum http_worker_state { HTTP_WORKER_IDLE, HTTP_WORKER_BUSY, HTTP_WORKER_LOST } http_worker_state;
http_worker_state http_worker_state_of(const cv_queue_worker_info *w, int64_t now_ms);
const char *http_worker_state_name(http_worker_state s);
void http_queue_view_get(cv_http *h, http_queue_view *v);
void http_queue_view_free(http_queue_view *v);
/* The cache's totals: 1, or 0 when there is no cache to read. */
int  http_cache_stats(cv_http *h, cv_cache_stats *st);
/* Whether the cache holds blob hex; -1 when unknown. */
int  http_cache_has(cv_http *h, const char *hex);

/* ---- build DB queries (http_db.c) */

typedef struct http_job {
    cv_job_row row;               /* with both cache outcomes and every timestamp */
} http_job;

/* The durations of a job's stages in ms (0 when not reached). */
typedef enum { HTTP_ST_QUEUE, HTTP_ST_FRONTEND, HTTP_ST_PASSES, HTTP_ST_CODEGEN,
               HTTP_ST_UPLOAD, HTTP_STAGES } http_stage;
const char *http_stage_name(http_stage s);
void http_job_stages(const int64_t ts[CV_JOB_TS__COUNT], int64_t out[HTTP_STAGES]);

/* Every job of a revision, sorted as cv_builddb_jobs_visit sorts them;
 * *out malloc'd (caller frees). */
int http_db_jobs(cv_builddb *db, int64_t rev_id, http_job **out, size_t *n, cv_diag *d);
/* Revisions newest first, a page of them, with the total count. */
int http_db_revisions(cv_builddb *db, int limit, int64_t offset, cv_rev_summary *out, int *n,
                      int64_t *total, cv_diag *d);

/* Cache outcomes of a revision's jobs: planner hits, and the workers'
 * L1/L2 outcomes indexed by cv_cache_outcome. */
typedef struct http_rev_cache {
    char revision[CV_REVISION_MAX + 1];
    cv_rev_state state;
    int64_t jobs, plan_hits, pending;
    int64_t failed;                     /* jobs whose result is not ok */
    int64_t spec_errors, spec_warnings; /* the revision's own diagnostics (its specs) */
    int64_t compile_ms;                 /* the compiles this revision ran, summed */
    /* Time saved by the cache: for each hit, how long the compile that stored
     * its artifact took (saved_hits: the hits whose compile the farm recorded). */
    int64_t saved_ms, saved_hits;
    char subject[CV_COMMIT_SUBJECT_MAX + 1], author[CV_COMMIT_AUTHOR_MAX + 1];  /* "" unknown */
    int64_t commit_ms;
    int64_t l1[CV_CACHE__COUNT], l2[CV_CACHE__COUNT];
} http_rev_cache;
/* The cache day by day (UTC days): jobs with an answer, those served from
 * the cache (planner or worker), the compile time spent and the time the
 * hits saved, each job counted on the day it finished. */
#define HTTP_DAY_MS INT64_C(86400000)
typedef struct http_day {
    int64_t day;                        /* days since the epoch */
    int64_t answered, hits, compile_ms, saved_ms;
} http_day;
/* The last `days` days up to now's, oldest first; days without jobs are zero.
 * Reads only the days from `from_day` on (those before are left as they
 * are in out); http_daily keeps finished days in h and reads the rest. */
int http_db_daily(cv_builddb *db, int64_t now_ms, int days, int64_t from_day, http_day *out,
                  cv_diag *d);
int http_daily(cv_http *h, int64_t now_ms, int days, http_day *out, cv_diag *d);
json_t *http_daily_json(const http_day *v, int n);

/* The newest max revisions, oldest first. */
int http_db_cache_history(cv_builddb *db, int max, http_rev_cache *out, int *n, cv_diag *d);
int http_db_rev_cache(cv_builddb *db, int64_t rev_id, http_rev_cache *out, cv_diag *d);
/* Jobs whose artifact came from the cache (planner or worker, local or remote). */
int64_t http_rev_cache_hits(const http_rev_cache *c);
/* The jobs with an answer at one level (a planner hit is an L2 hit in the
 * farm's own, local cache). */
int64_t http_rev_cache_asked(const http_rev_cache *c, bool l2);
/* L2 hits (planner + worker, local + remote) over the jobs with an answer;
 * a job that failed before its look-up counts as a miss, never as a hit. */
double http_rev_cache_l2_ratio(const http_rev_cache *c, double *local, double *remote);
double http_rev_cache_l1_ratio(const http_rev_cache *c, double *local, double *remote);

/* A revision's state as every page shows it (verdict.c): a badge class
 * (st-<cls>), a short label and a sentence. */
typedef struct http_verdict {
    const char *cls;
    const char *label;
    char detail[200];
} http_verdict;
void http_rev_verdict(const http_rev_cache *c, http_verdict *v);

/* One model's history (model_history.c). */
#define HTTP_MODEL_TARGETS_MAX 32
typedef struct http_model_build {
    char revision[CV_REVISION_MAX + 1];
    char subject[CV_COMMIT_SUBJECT_MAX + 1];
    char target[CV_MSG_TOKEN_MAX + 1], precision[8], state[16], l2[16];
    int64_t compile_ms;                 /* 0 unless this job compiled */
    char manifest[CV_DIGEST_HEX + 1];   /* the artifact's file list digest; "" */
    int64_t queued_ms;
    char miss[32], miss_reason[256];    /* why it missed the cache; "" when unknown */
} http_model_build;
typedef struct http_model_target {
    char target[CV_MSG_TOKEN_MAX + 1], last_state[16];
    int64_t builds, hits, failures, compiles, compile_ms;
} http_model_target;
typedef struct http_model_view {
    http_model_build *builds;           /* owned, newest first */
    int n;
    http_model_target targets[HTTP_MODEL_TARGETS_MAX];
    int n_targets;
} http_model_view;
/* The newest max jobs built from model (target NULL: every target). */
int  http_db_model_history(cv_builddb *db, const char *model, const char *target,
                           http_model_build *out, int max, int *n, cv_diag *d);
/* The same with a summary per target (target NULL: every target). */
int  http_model_history(cv_builddb *db, const char *model, const char *target,
                        http_model_view *out, cv_diag *d);
void http_model_view_free(http_model_view *v);
json_t *http_model_json(const char *model, const http_model_view *v);

/* One result recorded after after_id, with its execution's job. */
typedef struct http_result {
    int64_t id;
    char target[CV_MSG_TOKEN_MAX + 1];
    char status[16], l1[16], l2[16];
    int64_t ts[CV_JOB_TS__COUNT];
    char miss[32];          /* the worker's cause word on an L2 miss; "" */
    int64_t saved_ms;       /* on an L2 hit: what the compile that stored it took */
} http_result;
typedef void (*http_result_fn)(void *ctx, const http_result *r);
/* Visits up to max results with id > after_id in id order; *last is the
 * last id visited (unchanged when none). */
int http_db_results_since(cv_builddb *db, int64_t after_id, int max, http_result_fn fn, void *ctx,
                          int64_t *last, cv_diag *d);
/* Planner hits (jobs.state 'hit') in job rows after after_row, at most max:
 * adds their count and the compile time each saved; *last: the last row. */
int http_db_planner_hits_since(cv_builddb *db, int64_t after_row, int max, int64_t *hits,
                               int64_t *saved_ms, int64_t *last, cv_diag *d);
/* Jobs of a revision by target and state: fn per group. */
typedef void (*http_count_fn)(void *ctx, const char *target, const char *state, int64_t n);
int http_db_job_counts(cv_builddb *db, int64_t rev_id, http_count_fn fn, void *ctx, cv_diag *d);
/* Executions still queued (the build DB's view of the queue depth). */
int http_db_queued(cv_builddb *db, int64_t *n, cv_diag *d);
/* A revision's finish time (ms), 0 when unknown. */
int64_t http_db_finished_ms(cv_builddb *db, const char *revision, cv_diag *d);

/* Webhook deliveries accepted (replay protection): the table is created by
 * init; seen is 1 when key was remembered, 0 when not, -1 on error;
 * remember stores keys (NULL entries skipped) and forgets those older than
 * HTTP_HOOK_MEMORY_MS. */
#define HTTP_HOOK_MEMORY_MS (7LL * 24 * 3600 * 1000)
int http_db_hooks_init(cv_builddb *db, cv_diag *d);
int http_db_hook_seen(cv_builddb *db, const char *key, cv_diag *d);
int http_db_hook_remember(cv_builddb *db, const char *const *keys, int n, int64_t now_ms,
                          cv_diag *d);

/* The failure report of a revision (api_farm.c); free it with
 * cv_failure_report_free. */
int http_failures_classify(cv_http *h, const cv_rev_summary *s, cv_failure_report *r, cv_diag *d);

/* ---- handlers: fill rs; run with h->mu held */

typedef void (*http_handler)(cv_http *h, const http_req *rq, http_resp *rs);

void http_api_status(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_revisions(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_revision(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_build(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_request(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_jobs(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_failures(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_cache(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_workers(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_artifacts(cv_http *h, const http_req *rq, http_resp *rs);
void http_metrics(cv_http *h, const http_req *rq, http_resp *rs);
void http_hook_github(cv_http *h, const http_req *rq, http_resp *rs);
void http_hook_gitlab(cv_http *h, const http_req *rq, http_resp *rs);
void http_page_overview(cv_http *h, const http_req *rq, http_resp *rs);
void http_page_revision(cv_http *h, const http_req *rq, http_resp *rs);
void http_page_model(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_models(cv_http *h, const http_req *rq, http_resp *rs);
/* Top cache misses over a window (misses.c). */
void http_page_misses(cv_http *h, const http_req *rq, http_resp *rs);
void http_api_misses(cv_http *h, const http_req *rq, http_resp *rs);
void http_page_failures(cv_http *h, const http_req *rq, http_resp *rs);

/* Where a job's JSON and a queue view's JSON are shared by API handlers. */
json_t *http_job_json(cv_builddb *db, const http_job *j, bool diagnostics);
json_t *http_queue_json(const http_queue_view *v, int64_t now_ms);

/* Incremental per-stage histograms and result counts for /metrics. */
http_metrics_state *http_metrics_new(void);
void http_metrics_free(http_metrics_state *m);

#endif
