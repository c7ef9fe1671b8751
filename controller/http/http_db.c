/* The build DB queries only the HTTP server needs: job rows with every
 * timestamp and both cache outcomes, a page of revisions, cache outcomes
 * per revision, and the results recorded since a point (for counters that
 * only grow).  They read the tables builddb*.c write. */
#include "controller/builddb_internal.h"
#include "controller/http/http_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const stage_names[HTTP_STAGES] = {"queue", "frontend", "passes", "codegen",
                                                     "upload"};

const char *http_stage_name(http_stage s)
{
    return s < HTTP_STAGES ? stage_names[s] : "?";
}

/* Stage i lasts from timestamp i to timestamp i+1 (queued, started,
 * front end done, passes done, codegen done, uploaded). */
void http_job_stages(const int64_t ts[CV_JOB_TS__COUNT], int64_t out[HTTP_STAGES])
{
    for (int s = 0; s < HTTP_STAGES; s++) {
        int64_t a = ts[s], b = ts[s + 1];
        out[s] = a > 0 && b >= a ? b - a : 0;
    }
}

static int oom(cv_diag *d)
{
    cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return -1;
}

/* ---- jobs */

typedef struct jobs_acc {
    http_job *v;   /* grown here, handed to the caller */
    size_t n, cap;
    bool oom;
} jobs_acc;

static int add_job(void *ctx, const cv_job_row *row)
{
    jobs_acc *a = ctx;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        http_job *grown = realloc(a->v, cap * sizeof *grown);
        if (!grown) {
            a->oom = true;
            return 1;
        }
        a->v = grown;
        a->cap = cap;
    }
    a->v[a->n++].row = *row;
    return 0;
}

int http_db_jobs(cv_builddb *db, int64_t rev_id, http_job **out, size_t *n, cv_diag *d)
{
    jobs_acc a = {0};
    int rc = cv_builddb_jobs_visit(db, rev_id, false, add_job, &a, d);
    if (rc == 0 && a.oom)
        rc = oom(d);
    if (rc != 0) {
        free(a.v);
        a = (jobs_acc){0};
    }
    *out = a.v;
    *n = a.n;
    return rc;
}

/* ---- revisions */

static const char SQL_REV_COUNT[] = "SELECT COUNT(*) FROM revisions";

int http_db_revisions(cv_builddb *db, int limit, int64_t offset, cv_rev_summary *out, int *n,
                      int64_t *total, cv_diag *d)
{
    *n = 0;
    if (cv_sqldb_int(&db->db, d, total, SQL_REV_COUNT, "") < 0)
        return -1;
    return cv_builddb_revisions_list(db, offset, out, limit, n, d);
}

/* ---- cache outcomes per revision */

/* How long the compile that stored a hit's artifact took: the first job
 * that compiled its L2 key (an entry made outside the farm has none), from
 * the worker's own stage durations (start to upload; the finish time is
 * when the controller collected the result). */
#define SQL_PRODUCER                                                                         \
    "SELECT p.uploaded_ms - p.started_ms FROM jobs p JOIN results pr ON pr.id = p.result_id"  \
    " WHERE p.l2_key = j.l2_key AND p.runner = p.job_id AND pr.l2 = 'miss'"                  \
    " AND pr.status = 'ok' AND p.started_ms IS NOT NULL AND p.uploaded_ms IS NOT NULL"       \
    " ORDER BY p.id LIMIT 1"

#define SQL_CACHE_COUNTS                                                                     \
    "SELECT v.revision, v.state, COUNT(j.id), COALESCE(SUM(j.state='hit'),0),"                 \
    " COALESCE(SUM(j.state='queued'),0),"                                                      \
    " COALESCE(SUM(r.l1='none'),0), COALESCE(SUM(r.l1='miss'),0), COALESCE(SUM(r.l1='hit'),0),"\
    " COALESCE(SUM(r.l1='remote-hit'),0),"                                                     \
    " COALESCE(SUM(r.l2='none'),0), COALESCE(SUM(r.l2='miss'),0), COALESCE(SUM(r.l2='hit'),0),"\
    " COALESCE(SUM(r.l2='remote-hit'),0),"                                                     \
    " COALESCE(SUM(j.state NOT IN ('queued','hit','ok')),0),"                                   \
    " (SELECT COUNT(*) FROM diagnostics g WHERE g.revision_id=v.id AND g.result_id IS NULL"     \
    "  AND g.severity='error'),"                                                               \
    " (SELECT COUNT(*) FROM diagnostics g WHERE g.revision_id=v.id AND g.result_id IS NULL"     \
    "  AND g.severity='warning'),"                                                             \
    " COALESCE(SUM(CASE WHEN j.runner = j.job_id AND r.l2 = 'miss' AND r.status = 'ok'"         \
    "  THEN j.uploaded_ms - j.started_ms END),0),"                                              \
    " COALESCE(SUM(CASE WHEN j.state = 'hit' OR r.l2 IN ('hit','remote-hit') THEN (" SQL_PRODUCER ") END),0)," \
    " COUNT(CASE WHEN j.state = 'hit' OR r.l2 IN ('hit','remote-hit') THEN (" SQL_PRODUCER ") END),"\
    " v.subject, v.author, v.commit_ms FROM "
#define SQL_CACHE_JOIN                                                                       \
    " v LEFT JOIN jobs j ON j.revision_id = v.id LEFT JOIN results r ON r.id = j.result_id"   \
    " GROUP BY v.id ORDER BY v.id"
static const char SQL_CACHE_HISTORY[] =
    SQL_CACHE_COUNTS "(SELECT id, revision, state, subject, author, commit_ms FROM revisions"
    " ORDER BY id DESC LIMIT ?)"
    SQL_CACHE_JOIN;
static const char SQL_CACHE_ONE[] =
    SQL_CACHE_COUNTS "(SELECT id, revision, state, subject, author, commit_ms FROM"
    " revisions WHERE id=?)" SQL_CACHE_JOIN;

/* ---- the cache day by day */

#define SQL_JOB_DAY "COALESCE(j.finished_ms, j.queued_ms)"
#define SQL_IS_HIT "(j.state = 'hit' OR r.l2 IN ('hit','remote-hit'))"
static const char SQL_DAILY[] =
    "SELECT " SQL_JOB_DAY " / 86400000, COUNT(*), COALESCE(SUM(" SQL_IS_HIT "),0),"
    " COALESCE(SUM(CASE WHEN j.runner = j.job_id AND r.l2 = 'miss' AND r.status = 'ok'"
    "  THEN j.uploaded_ms - j.started_ms END),0),"
    " COALESCE(SUM(CASE WHEN " SQL_IS_HIT " THEN (" SQL_PRODUCER ") END),0)"
    " FROM jobs j LEFT JOIN results r ON r.id = j.result_id"
    " WHERE " SQL_JOB_DAY " >= ? AND j.state <> 'queued' GROUP BY 1 ORDER BY 1";

int http_db_daily(cv_builddb *db, int64_t now_ms, int days, int64_t from_day, http_day *out,
                  cv_diag *d)
{
    int64_t today = now_ms / HTTP_DAY_MS, first = today - (days - 1);
    if (from_day < first)
        from_day = first;
    for (int64_t day = from_day; day <= today; day++)
        out[day - first] = (http_day){.day = day};
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_DAILY, "i", from_day * HTTP_DAY_MS);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        int64_t i = sqlite3_column_int64(st, 0) - first;
        if (i < 0 || i >= days)
            continue;   /* a clock that ran ahead: not drawn */
        out[i].answered = sqlite3_column_int64(st, 1);
        out[i].hits = sqlite3_column_int64(st, 2);
        out[i].compile_ms = sqlite3_column_int64(st, 3);
        out[i].saved_ms = sqlite3_column_int64(st, 4);
    }
    return rc < 0 ? -1 : 0;
}

/* Finished days from the memo (it restarts when the window moves past
 * it), the rest from the build DB; the finished ones are kept. */
int http_daily(cv_http *h, int64_t now_ms, int days, http_day *out, cv_diag *d)
{
    int64_t today = now_ms / HTTP_DAY_MS, first = today - (days - 1), from = first;
    if (!h->days_kept && !(h->days_kept = calloc(HTTP_DAYS_KEPT, sizeof *h->days_kept)))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (first < h->days_from || h->days_from + h->n_days_kept < first ||
        today - h->days_from >= HTTP_DAYS_KEPT) {
        h->days_from = first;
        h->n_days_kept = 0;
    }
    for (; from < today && from - h->days_from < h->n_days_kept; from++)
        out[from - first] = h->days_kept[from - h->days_from];
    if (http_db_daily(h->db, now_ms, days, from, out, d) != 0)
        return -1;
    for (int64_t day = h->days_from + h->n_days_kept; day < today; day++)
        h->days_kept[h->n_days_kept++] = out[day - first];
    return 0;
}

static cv_rev_state state_parse(const char *s)
{
    for (int i = 0; i < CV_REV__COUNT; i++)
        if (strcmp(cv_rev_state_name((cv_rev_state)i), s) == 0)
            return (cv_rev_state)i;
    return CV_REV_PLANNING;
}

static int cache_rows(cv_builddb *db, sqlite3_stmt *st, int max, http_rev_cache *out, int *n,
                      cv_diag *d)
{
    *n = 0;
    int rc = st ? 1 : -1;
    while (rc == 1 && *n < max && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        http_rev_cache *c = &out[(*n)++];
        memset(c, 0, sizeof *c);
        char state[16];
        cv_sqldb_text(st, 0, c->revision, sizeof c->revision);
        cv_sqldb_text(st, 1, state, sizeof state);
        c->state = state_parse(state);
        c->jobs = sqlite3_column_int64(st, 2);
        c->plan_hits = sqlite3_column_int64(st, 3);
        c->pending = sqlite3_column_int64(st, 4);
        for (int o = 0; o < CV_CACHE__COUNT; o++) {
            c->l1[o] = sqlite3_column_int64(st, 5 + o);
            c->l2[o] = sqlite3_column_int64(st, 5 + CV_CACHE__COUNT + o);
        }
        c->failed = sqlite3_column_int64(st, 5 + 2 * CV_CACHE__COUNT);
        c->spec_errors = sqlite3_column_int64(st, 6 + 2 * CV_CACHE__COUNT);
        c->spec_warnings = sqlite3_column_int64(st, 7 + 2 * CV_CACHE__COUNT);
        c->compile_ms = sqlite3_column_int64(st, 8 + 2 * CV_CACHE__COUNT);
        c->saved_ms = sqlite3_column_int64(st, 9 + 2 * CV_CACHE__COUNT);
        c->saved_hits = sqlite3_column_int64(st, 10 + 2 * CV_CACHE__COUNT);
        cv_sqldb_text(st, 11 + 2 * CV_CACHE__COUNT, c->subject, sizeof c->subject);
        cv_sqldb_text(st, 12 + 2 * CV_CACHE__COUNT, c->author, sizeof c->author);
        c->commit_ms = sqlite3_column_int64(st, 13 + 2 * CV_CACHE__COUNT);
    }
    if (st && rc == 1)
        sqlite3_reset(st);
    return rc < 0 ? -1 : 0;
}

int http_db_cache_history(cv_builddb *db, int max, http_rev_cache *out, int *n, cv_diag *d)
{
    return cache_rows(db, cv_sqldb_query(&db->db, d, SQL_CACHE_HISTORY, "i", (int64_t)max), max, out,
                      n, d);
}

int http_db_rev_cache(cv_builddb *db, int64_t rev_id, http_rev_cache *out, cv_diag *d)
{
    int n = 0;
    memset(out, 0, sizeof *out);
    return cache_rows(db, cv_sqldb_query(&db->db, d, SQL_CACHE_ONE, "i", rev_id), 1, out, &n, d);
}

static double ratio(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0.0;
}

int64_t http_rev_cache_hits(const http_rev_cache *c)
{
    return c->plan_hits + c->l2[CV_CACHE_HIT] + c->l2[CV_CACHE_REMOTE_HIT];
}

/* A result with no look-up ('none': the job failed before it, or ran with
 * the cache off) had an answer that was not a hit. */
int64_t http_rev_cache_asked(const http_rev_cache *c, bool l2)
{
    const int64_t *lv = l2 ? c->l2 : c->l1;
    return lv[CV_CACHE_HIT] + lv[CV_CACHE_REMOTE_HIT] + lv[CV_CACHE_MISS] + lv[CV_CACHE_NONE] +
           (l2 ? c->plan_hits : 0);
}

static double level_ratio(const http_rev_cache *c, bool l2, double *local, double *remote)
{
    const int64_t *lv = l2 ? c->l2 : c->l1;
    int64_t loc = lv[CV_CACHE_HIT] + (l2 ? c->plan_hits : 0), rem = lv[CV_CACHE_REMOTE_HIT];
    int64_t asked = http_rev_cache_asked(c, l2);
    *local = ratio(loc, asked);
    *remote = ratio(rem, asked);
    return ratio(loc + rem, asked);
}

double http_rev_cache_l2_ratio(const http_rev_cache *c, double *local, double *remote)
{
    return level_ratio(c, true, local, remote);
}

double http_rev_cache_l1_ratio(const http_rev_cache *c, double *local, double *remote)
{
    return level_ratio(c, false, local, remote);
}

/* ---- one model's jobs across revisions */

static const char SQL_MODEL_HISTORY[] =
    "SELECT v.revision, COALESCE(v.subject,''), j.target, j.precision, j.state,"
    " COALESCE(r.l2,''), CASE WHEN r.l2 = 'miss' AND r.status = 'ok' AND j.runner = j.job_id"
    "  THEN j.uploaded_ms - j.started_ms ELSE 0 END, COALESCE(r.artifact_manifest,''),"
    " j.queued_ms, COALESCE(j.miss,''), COALESCE(j.miss_reason,'')"
    " FROM jobs j JOIN revisions v ON v.id = j.revision_id"
    " LEFT JOIN results r ON r.id = j.result_id"
    " WHERE j.model_path = ? AND (? IS NULL OR j.target = ?) ORDER BY j.id DESC LIMIT ?";

int http_db_model_history(cv_builddb *db, const char *model, const char *target,
                          http_model_build *out, int max, int *n, cv_diag *d)
{
    *n = 0;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_MODEL_HISTORY, "ttti", model, target,
                                      target, (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && *n < max && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        http_model_build *b = &out[(*n)++];
        cv_sqldb_text(st, 0, b->revision, sizeof b->revision);
        cv_sqldb_text(st, 1, b->subject, sizeof b->subject);
        cv_sqldb_text(st, 2, b->target, sizeof b->target);
        cv_sqldb_text(st, 3, b->precision, sizeof b->precision);
        cv_sqldb_text(st, 4, b->state, sizeof b->state);
        cv_sqldb_text(st, 5, b->l2, sizeof b->l2);
        b->compile_ms = sqlite3_column_int64(st, 6);
        cv_sqldb_text(st, 7, b->manifest, sizeof b->manifest);
        b->queued_ms = sqlite3_column_int64(st, 8);
        cv_sqldb_text(st, 9, b->miss, sizeof b->miss);
        cv_sqldb_text(st, 10, b->miss_reason, sizeof b->miss_reason);
    }
    if (st && rc == 1)
        sqlite3_reset(st);
    return rc < 0 ? -1 : 0;
}

/* ---- results since a point */

/* The execution's own job row holds its timestamps (merged jobs copy
 * them); a result whose execution is not in the build DB is skipped. */
static const char SQL_RESULTS_SINCE[] =
    "SELECT r.id, j.target, r.status, r.l1, r.l2, j.queued_ms, COALESCE(j.started_ms,0),"
    " COALESCE(j.frontend_ms,0), COALESCE(j.passes_ms,0), COALESCE(j.codegen_ms,0),"
    " COALESCE(j.uploaded_ms,0), COALESCE(j.finished_ms,0), COALESCE(j.miss,''),"
    " CASE WHEN r.l2 IN ('hit','remote-hit') THEN COALESCE((" SQL_PRODUCER "),0) ELSE 0 END"
    " FROM results r JOIN jobs j ON j.job_id = r.job_id WHERE r.id > ? ORDER BY r.id LIMIT ?";
/* Jobs the planner found in the cache: written once, as 'hit', when their
 * revision is planned; what each saved, as the overview counts it. */
static const char SQL_PLANNER_HITS_SINCE[] =
    "SELECT j.id, COALESCE((" SQL_PRODUCER "),0) FROM jobs j WHERE j.id > ? AND j.state = 'hit'"
    " ORDER BY j.id LIMIT ?";

int http_db_results_since(cv_builddb *db, int64_t after_id, int max, http_result_fn fn, void *ctx,
                          int64_t *last, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_RESULTS_SINCE, "ii", after_id, (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        http_result r;
        r.id = sqlite3_column_int64(st, 0);
        cv_sqldb_text(st, 1, r.target, sizeof r.target);
        cv_sqldb_text(st, 2, r.status, sizeof r.status);
        cv_sqldb_text(st, 3, r.l1, sizeof r.l1);
        cv_sqldb_text(st, 4, r.l2, sizeof r.l2);
        for (int i = 0; i < CV_JOB_TS__COUNT; i++)
            r.ts[i] = sqlite3_column_int64(st, 5 + i);
        cv_sqldb_text(st, 5 + CV_JOB_TS__COUNT, r.miss, sizeof r.miss);
        r.saved_ms = sqlite3_column_int64(st, 6 + CV_JOB_TS__COUNT);
        fn(ctx, &r);
        *last = r.id;
    }
    return rc < 0 ? -1 : 0;
}

int http_db_planner_hits_since(cv_builddb *db, int64_t after_row, int max, int64_t *hits,
                               int64_t *saved_ms, int64_t *last, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_PLANNER_HITS_SINCE, "ii", after_row,
                                      (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        *last = sqlite3_column_int64(st, 0);
        *saved_ms += sqlite3_column_int64(st, 1);
        (*hits)++;
    }
    return rc < 0 ? -1 : 0;
}

/* ---- counts */

static const char SQL_JOB_COUNTS[] =
    "SELECT target, state, COUNT(*) FROM jobs WHERE revision_id=? GROUP BY target, state"
    " ORDER BY target, state";
static const char SQL_QUEUED[] = "SELECT COUNT(DISTINCT runner) FROM jobs WHERE state='queued'";
static const char SQL_FINISHED[] =
    "SELECT COALESCE(finished_ms,0) FROM revisions WHERE revision=?";

int http_db_job_counts(cv_builddb *db, int64_t rev_id, http_count_fn fn, void *ctx, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_JOB_COUNTS, "i", rev_id);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1)
        fn(ctx, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           sqlite3_column_int64(st, 2));
    return rc < 0 ? -1 : 0;
}

int http_db_queued(cv_builddb *db, int64_t *n, cv_diag *d)
{
    *n = 0;
    return cv_sqldb_int(&db->db, d, n, SQL_QUEUED, "") < 0 ? -1 : 0;
}

int64_t http_db_finished_ms(cv_builddb *db, const char *revision, cv_diag *d)
{
    int64_t ms = 0;
    if (cv_sqldb_int(&db->db, d, &ms, SQL_FINISHED, "t", revision) != 1)
        return 0;
    return ms;
}

/* ---- webhook deliveries already accepted (replay protection)
 *
 * A side table of the build DB that only this server uses, created on
 * start rather than by a migration: keys are "<host>:id:<delivery id>" and
 * "<host>:body:<sha256 of the payload>", kept HTTP_HOOK_MEMORY_MS. */

static const char SQL_HOOKS_TABLE[] =
    "CREATE TABLE IF NOT EXISTS http_hook_deliveries (key TEXT PRIMARY KEY, at_ms INTEGER NOT "
    "NULL)";
static const char SQL_HOOKS_INDEX[] =
    "CREATE INDEX IF NOT EXISTS http_hook_deliveries_at ON http_hook_deliveries (at_ms)";
static const char SQL_HOOK_SEEN[] = "SELECT COUNT(*) FROM http_hook_deliveries WHERE key = ?";
static const char SQL_HOOK_ADD[] =
    "INSERT OR REPLACE INTO http_hook_deliveries (key, at_ms) VALUES (?, ?)";
static const char SQL_HOOK_PRUNE[] = "DELETE FROM http_hook_deliveries WHERE at_ms < ?";

int http_db_hooks_init(cv_builddb *db, cv_diag *d)
{
    return cv_sqldb_exec(&db->db, d, SQL_HOOKS_TABLE, "") < 0 ||
                   cv_sqldb_exec(&db->db, d, SQL_HOOKS_INDEX, "") < 0
               ? -1
               : 0;
}

int http_db_hook_seen(cv_builddb *db, const char *key, cv_diag *d)
{
    int64_t n = 0;
    return cv_sqldb_int(&db->db, d, &n, SQL_HOOK_SEEN, "t", key) < 0 ? -1 : n > 0;
}

int http_db_hook_remember(cv_builddb *db, const char *const *keys, int n, int64_t now_ms,
                          cv_diag *d)
{
    bool owned = false;
    int rc = cv_sqldb_tx_begin(&db->db, &owned, d);
    if (rc == 0 && cv_sqldb_exec(&db->db, d, SQL_HOOK_PRUNE, "i", now_ms - HTTP_HOOK_MEMORY_MS) < 0)
        rc = -1;
    for (int i = 0; i < n && rc == 0; i++)
        if (keys[i] && cv_sqldb_exec(&db->db, d, SQL_HOOK_ADD, "ti", keys[i], now_ms) < 0)
            rc = -1;
    return cv_sqldb_tx_end(&db->db, owned, rc, d);
}
