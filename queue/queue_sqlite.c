/* The embedded queue backend: one SQLite file in WAL mode shared by the
 * controller and the worker processes of one machine.
 *
 * Every state change runs in a BEGIN IMMEDIATE transaction, which takes
 * SQLite's single write lock up front: two processes can never lease the
 * same row, and a check-then-update (lease ownership, dedupe) cannot race.
 * A lease is identified by (row id, lease generation); the generation goes
 * up on every lease, so a worker whose lease expired and was handed on can
 * no longer heartbeat, complete or fail the job.
 *
 * synchronous=NORMAL: a power cut may lose the last transactions, which is
 * safe here because jobs are idempotent and the controller re-plans. */
#include "queue/queue.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sqldb.h"

typedef struct sq_queue {
    cv_queue base;          /* first: the front end sees a cv_queue */
    cv_sqldb db;            /* owned */
} sq_queue;

/* ---- schema: migrations[i] takes version i to i+1; append, never edit */

static const cv_sqldb_migration migrations[] = {
    {.sql =
    "CREATE TABLE jobs("
    "  id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  key TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('queued','leased','done','dead')),"
    "  attempt INTEGER NOT NULL,"
    "  msg BLOB NOT NULL,"
    "  enqueued_ms INTEGER NOT NULL,"
    "  available_ms INTEGER NOT NULL,"
    "  lease_gen INTEGER NOT NULL DEFAULT 0,"
    "  worker TEXT, leased_ms INTEGER, deadline_ms INTEGER, last_error TEXT);"
    "CREATE UNIQUE INDEX jobs_active_key ON jobs(key) WHERE state IN ('queued','leased');"
    "CREATE UNIQUE INDEX jobs_active_id ON jobs(job_id) WHERE state IN ('queued','leased');"
    "CREATE INDEX jobs_ready ON jobs(state, available_ms, id);"
    "CREATE INDEX jobs_deadline ON jobs(state, deadline_ms);"
    /* AUTOINCREMENT: a seq is never reused after an ack empties the table,
     * so the controller's cursor never skips a result. */
    "CREATE TABLE results("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  job_row INTEGER NOT NULL, job_id TEXT NOT NULL, attempts INTEGER NOT NULL,"
    "  dead_letter INTEGER NOT NULL, msg BLOB NOT NULL, created_ms INTEGER NOT NULL);"
    "CREATE TABLE dead_letters("
    "  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, key TEXT NOT NULL,"
    "  attempts INTEGER NOT NULL, reason TEXT NOT NULL, msg BLOB NOT NULL,"
    "  created_ms INTEGER NOT NULL);"
    "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"},
    {.sql =
    "CREATE TABLE workers(id TEXT PRIMARY KEY, job_id TEXT NOT NULL, started_ms INTEGER NOT NULL,"
    "  beat_ms INTEGER NOT NULL, jobs_done INTEGER NOT NULL) WITHOUT ROWID;"},
};

/* Statements are cached by common/sqldb (by the address of these arrays). */
static const char SQL_ACTIVE_BY_KEY[] =
    "SELECT job_id FROM jobs WHERE key=? AND state IN ('queued','leased') LIMIT 1";
static const char SQL_ACTIVE_BY_ID[] =
    "SELECT 1 FROM jobs WHERE job_id=? AND state IN ('queued','leased') LIMIT 1";
static const char SQL_INSERT_JOB[] =
    "INSERT INTO jobs(job_id,key,state,attempt,msg,enqueued_ms,available_ms)"
    " VALUES(?,?,'queued',?,?,?,?)";
static const char SQL_COUNT[] =
    "INSERT INTO counters(name,value) VALUES(?,1)"
    " ON CONFLICT(name) DO UPDATE SET value=value+1";
static const char SQL_ANY_WORK[] =
    "SELECT EXISTS(SELECT 1 FROM jobs WHERE state='queued' AND available_ms<=?1)"
    " OR EXISTS(SELECT 1 FROM jobs WHERE state='leased' AND deadline_ms<?1)";
static const char SQL_NEXT_EXPIRED[] =
    "SELECT id, worker FROM jobs WHERE state='leased' AND deadline_ms<? ORDER BY id LIMIT 1";
static const char SQL_NEXT_READY[] =
    "SELECT id, attempt, enqueued_ms, lease_gen, msg FROM jobs"
    " WHERE state='queued' AND available_ms<=? ORDER BY available_ms, id LIMIT 1";
static const char SQL_TAKE[] =
    "UPDATE jobs SET state='leased', worker=?, lease_gen=lease_gen+1, leased_ms=?,"
    " deadline_ms=? WHERE id=?";
static const char SQL_OWNS[] =
    "SELECT 1 FROM jobs WHERE id=? AND lease_gen=? AND state='leased'";
static const char SQL_EXTEND[] =
    "UPDATE jobs SET deadline_ms=? WHERE id=? AND lease_gen=? AND state='leased'";
static const char SQL_JOB_ATTEMPT[] = "SELECT job_id, attempt FROM jobs WHERE id=?";
static const char SQL_REQUEUE[] =
    "UPDATE jobs SET state='queued', attempt=attempt+?, worker=NULL, leased_ms=NULL,"
    " deadline_ms=NULL, available_ms=?, last_error=? WHERE id=?";
static const char SQL_BURY[] =
    "UPDATE jobs SET state='dead', worker=NULL, deadline_ms=NULL, last_error=? WHERE id=?";
static const char SQL_DEAD_LETTER[] =
    "INSERT INTO dead_letters(job_id,key,attempts,reason,msg,created_ms)"
    " SELECT job_id, key, attempt, ?, msg, ? FROM jobs WHERE id=?";
static const char SQL_DONE[] =
    "UPDATE jobs SET state='done', worker=NULL, deadline_ms=NULL WHERE id=?";
static const char SQL_ADD_RESULT[] =
    "INSERT INTO results(job_row,job_id,attempts,dead_letter,msg,created_ms)"
    " SELECT id, job_id, attempt, ?, ?, ? FROM jobs WHERE id=?";
static const char SQL_RESULTS[] =
    "SELECT seq, job_id, attempts, dead_letter, msg FROM results WHERE seq>? ORDER BY seq LIMIT ?";
static const char SQL_ACK_JOBS[] =
    "DELETE FROM jobs WHERE state IN ('done','dead')"
    " AND id IN (SELECT job_row FROM results WHERE seq<=?)";
static const char SQL_ACK_RESULTS[] = "DELETE FROM results WHERE seq<=?";
static const char SQL_DEPTH[] =
    "SELECT state, COUNT(*) FROM jobs WHERE state IN ('queued','leased') GROUP BY state";
static const char SQL_PENDING[] = "SELECT COUNT(*) FROM results";
static const char SQL_DEAD_COUNT[] = "SELECT COUNT(*) FROM dead_letters";
static const char SQL_COUNTERS[] = "SELECT name, value FROM counters";
static const char SQL_LEASES[] = "SELECT job_id, COALESCE(worker,''), attempt, leased_ms,"
    " deadline_ms FROM jobs WHERE state='leased' ORDER BY leased_ms, id LIMIT ?";

static const char SQL_WORKER_BEAT[] = "INSERT INTO workers(id, job_id, started_ms, beat_ms,"
    " jobs_done) VALUES(?1, ?2, ?3, ?3, ?4) ON CONFLICT(id) DO UPDATE SET job_id=?2,"
    " beat_ms=?3, jobs_done=jobs_done+?4";
/* A clean stop also forgets the records of workers long gone. */
static const char SQL_WORKER_LEAVE[] = "DELETE FROM workers WHERE id=?1 OR beat_ms < ?2";
static const char SQL_WORKERS[] = "SELECT id, job_id, started_ms, beat_ms, jobs_done FROM workers"
    " WHERE beat_ms >= ? ORDER BY beat_ms DESC, id LIMIT ?";

/* ---- statement helpers */

static sq_queue *sq(cv_queue *q) { return (sq_queue *)q; }

static int count(sq_queue *q, const char *name, cv_diag *d)
{
    return cv_sqldb_exec(&q->db, d, SQL_COUNT, "t", name) < 0 ? -1 : 0;
}

/* Every state change takes the write lock up front (see the top). */
static int tx_begin(sq_queue *q, cv_diag *d) { return cv_sqldb_script(&q->db, "BEGIN IMMEDIATE", d); }

/* Commits when rc >= 0 (and returns rc), else rolls back (and returns -1). */
static int tx_end(sq_queue *q, int rc, cv_diag *d) { return cv_sqldb_tx_end(&q->db, true, rc, d); }

/* ---- open */

static void sq_close(cv_queue *base)
{
    sq_queue *q = sq(base);
    cv_sqldb_close(&q->db);
    free(q);
}

static int sq_open(const char *target, const cv_queue_opts *opts, cv_queue **out, cv_diag *d)
{
    /* sqlite:PATH, or sqlite:///abs/path as URL-minded people write it. */
    const char *path = strncmp(target, "//", 2) == 0 ? target + 2 : target;
    if (!path[0]) {
        cv_diag_error(d, CV_E_QUEUE_BAD_URL, (cv_span){0}, "sqlite queue URL needs a path: sqlite:PATH");
        return -1;
    }
    sq_queue *q = calloc(1, sizeof *q);
    if (!q) {
        cv_diag_error(d, CV_E_QUEUE_OPEN_FAILED, (cv_span){0}, "out of memory opening the queue");
        return -1;
    }
    q->base.opts = *opts;
    const cv_sqldb_config cfg = {
        .what = "queue", .open_code = CV_E_QUEUE_OPEN_FAILED, .storage_code = CV_E_QUEUE_STORAGE,
        .busy_code = CV_E_QUEUE_BUSY, .busy_timeout_ms = opts->busy_timeout_ms,
        .migrations = migrations, .n_migrations = (int)(sizeof migrations / sizeof migrations[0]),
    };
    if (cv_sqldb_open(&q->db, path, &cfg, d)) {
        free(q);
        return -1;
    }
    *out = &q->base;
    return 0;
}

/* ---- state changes */

static int sq_enqueue(cv_queue *base, const cv_job_msg *job, const char *msg, size_t len,
                      cv_queue_enq *out, cv_diag *d)
{
    sq_queue *q = sq(base);
    int64_t now = cv_queue_now_ms(base);
    if (tx_begin(q, d))
        return -1;
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_ACTIVE_BY_KEY, "t", job->l2_key);
    int rc = st ? cv_sqldb_step(&q->db, st, d) : -1;
    if (rc == 1) {
        out->merged = true;
        cv_sqldb_text(st, 0, out->job_id, sizeof out->job_id);
        sqlite3_reset(st);
        return tx_end(q, count(q, "merged", d), d);
    }
    int64_t dup = 0;
    if (rc == 0)
        rc = cv_sqldb_int(&q->db, d, &dup, SQL_ACTIVE_BY_ID, "t", job->job_id);
    if (rc == 1) {
        cv_diag_error(d, CV_E_QUEUE_DUPLICATE_JOB, (cv_span){.file = q->db.path},
                      "job '%s' is already queued or leased with a different l2_key", job->job_id);
        rc = -1;
    }
    if (rc == 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_INSERT_JOB, "ttibii", job->job_id, job->l2_key,
                       (int64_t)job->attempt, (const void *)msg, len, now, now);
    if (rc >= 0)
        rc = count(q, "enqueued", d);
    snprintf(out->job_id, sizeof out->job_id, "%s", job->job_id);
    return tx_end(q, rc, d);
}

static int64_t backoff_ms(const cv_queue_opts *o, int attempt)
{
    int shift = attempt > 1 ? attempt - 1 : 0;
    int64_t v = o->retry_backoff_ms << (shift > 16 ? 16 : shift);
    return v > 86400000 ? 86400000 : v;
}

/* Inside a transaction: moves the job to dead, records the dead letter and
 * its result. */
static int bury(sq_queue *q, int64_t id, const char *job_id, int attempt, int code,
                const char *reason, int64_t now, cv_diag *d)
{
    char *res = NULL;
    size_t len = 0;
    if (cv_queue_dead_letter_result(job_id, attempt, code, reason, &res, &len)) {
        cv_diag_error(d, CV_E_QUEUE_STORAGE, (cv_span){0}, "cannot encode the dead letter of '%s'", job_id);
        return -1;
    }
    int rc = cv_sqldb_exec(&q->db, d, SQL_DEAD_LETTER, "tii", reason, now, id);
    if (rc >= 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_BURY, "ti", reason, id);
    if (rc >= 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_ADD_RESULT, "ibii", (int64_t)1, (const void *)res, len, now, id);
    free(res);
    return rc < 0 ? -1 : count(q, "dead", d);
}

/* Inside a transaction: the current execution of job row `id` failed.
 * Returns 0 when requeued with attempt+1, 1 when dead-lettered. */
static int retry_or_bury(sq_queue *q, int64_t id, cv_queue_fail_kind kind, const char *reason,
                         int64_t now, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_JOB_ATTEMPT, "i", id);
    int rc = st ? cv_sqldb_step(&q->db, st, d) : -1;
    if (rc <= 0)
        return rc == 0 ? cv_sqldb_error(&q->db, SQLITE_NOTFOUND, "job row vanished", d) : -1;
    char job_id[CV_MSG_ID_MAX + 1];
    cv_sqldb_text(st, 0, job_id, sizeof job_id);
    int attempt = sqlite3_column_int(st, 1);
    sqlite3_reset(st);
    if (kind == CV_QUEUE_FAIL_POISON || attempt >= q->base.opts.max_attempts) {
        int code = kind == CV_QUEUE_FAIL_POISON ? CV_E_QUEUE_POISON_MESSAGE : CV_E_QUEUE_DEAD_LETTER;
        return bury(q, id, job_id, attempt, code, reason, now, d) < 0 ? -1 : 1;
    }
    int64_t at = now + backoff_ms(&q->base.opts, attempt);
    rc = cv_sqldb_exec(&q->db, d, SQL_REQUEUE, "iiti", (int64_t)1, at, reason, id);
    return rc < 0 || count(q, "retried", d) < 0 ? -1 : 0;
}

/* Inside a transaction: hands every expired lease back (or buries it). */
static int sweep_expired(sq_queue *q, int64_t now, int *n, cv_diag *d)
{
    *n = 0;
    for (;;) {
        sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_NEXT_EXPIRED, "i", now);
        int rc = st ? cv_sqldb_step(&q->db, st, d) : -1;
        if (rc <= 0)
            return rc;
        int64_t id = sqlite3_column_int64(st, 0);
        char reason[CV_QUEUE_WORKER_MAX + 64];
        snprintf(reason, sizeof reason, "lease expired: worker '%s' stopped heartbeating",
                 sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "?");
        sqlite3_reset(st);
        if (retry_or_bury(q, id, CV_QUEUE_FAIL_INFRA, reason, now, d) < 0 ||
            count(q, "expired", d) < 0)
            return -1;
        ++*n;
    }
}

static int sq_sweep(cv_queue *base, int *n_expired, cv_diag *d)
{
    sq_queue *q = sq(base);
    if (tx_begin(q, d))
        return -1;
    return tx_end(q, sweep_expired(q, cv_queue_now_ms(base), n_expired, d), d);
}

static int take_next(sq_queue *q, const char *worker_id, int lease_seconds, int64_t now,
                     cv_lease *out, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_NEXT_READY, "i", now);
    int rc = st ? cv_sqldb_step(&q->db, st, d) : -1;
    if (rc <= 0)
        return rc;
    out->handle = sqlite3_column_int64(st, 0);
    out->attempt = sqlite3_column_int(st, 1);
    out->enqueued_ms = sqlite3_column_int64(st, 2);
    out->generation = sqlite3_column_int64(st, 3) + 1;
    out->msg = cv_sqldb_dup(st, 4, &out->msg_len);
    sqlite3_reset(st);
    if (!out->msg)
        return cv_sqldb_error(&q->db, SQLITE_NOMEM, "lease", d);
    out->leased_ms = now;
    out->deadline_ms = now + (int64_t)lease_seconds * 1000;
    rc = cv_sqldb_exec(&q->db, d, SQL_TAKE, "tiii", worker_id, now, out->deadline_ms, out->handle);
    return rc < 0 ? -1 : 1;
}

static int sq_lease(cv_queue *base, const char *worker_id, int lease_seconds,
                    cv_lease *out, cv_diag *d)
{
    sq_queue *q = sq(base);
    int64_t now = cv_queue_now_ms(base), any = 0;
    /* Idle workers poll: look without the write lock first. */
    if (cv_sqldb_int(&q->db, d, &any, SQL_ANY_WORK, "i", now) < 0)
        return -1;
    if (!any)
        return 0;
    int n;
    if (tx_begin(q, d))
        return -1;
    int rc = sweep_expired(q, now, &n, d);
    if (rc == 0)
        rc = take_next(q, worker_id, lease_seconds, now, out, d);
    rc = tx_end(q, rc, d);
    if (rc <= 0) {
        free(out->msg);
        out->msg = NULL;
    }
    return rc;
}

static int owns(sq_queue *q, const cv_lease *l, cv_diag *d)
{
    int64_t one = 0;
    int rc = cv_sqldb_int(&q->db, d, &one, SQL_OWNS, "ii", l->handle, l->generation);
    return rc < 0 ? -1 : rc == 0 ? cv_queue_lease_lost(l, d) : 0;
}

static int sq_heartbeat(cv_queue *base, cv_lease *l, int lease_seconds, cv_diag *d)
{
    sq_queue *q = sq(base);
    int64_t deadline = cv_queue_now_ms(base) + (int64_t)lease_seconds * 1000;
    int rc = cv_sqldb_exec(&q->db, d, SQL_EXTEND, "iii", deadline, l->handle, l->generation);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return cv_queue_lease_lost(l, d);
    l->deadline_ms = deadline;
    return 0;
}

static int sq_complete(cv_queue *base, const cv_lease *l, const char *result, size_t len,
                       cv_diag *d)
{
    sq_queue *q = sq(base);
    int64_t now = cv_queue_now_ms(base);
    if (tx_begin(q, d))
        return -1;
    int rc = owns(q, l, d);
    if (rc == 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_DONE, "i", l->handle);
    if (rc >= 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_ADD_RESULT, "ibii", (int64_t)0, (const void *)result, len, now,
                       l->handle);
    if (rc >= 0)
        rc = count(q, "completed", d);
    return tx_end(q, rc, d) < 0 ? -1 : 0;
}

static int sq_fail(cv_queue *base, const cv_lease *l, cv_queue_fail_kind kind,
                   const char *reason, cv_diag *d)
{
    sq_queue *q = sq(base);
    int64_t now = cv_queue_now_ms(base);
    if (tx_begin(q, d))
        return -1;
    int rc = owns(q, l, d);
    if (rc == 0 && kind == CV_QUEUE_FAIL_RELEASE)
        rc = cv_sqldb_exec(&q->db, d, SQL_REQUEUE, "iiti", (int64_t)0, now, reason, l->handle) < 0 ? -1 : 0;
    else if (rc == 0)
        rc = retry_or_bury(q, l->handle, kind, reason, now, d);
    return tx_end(q, rc, d);
}

/* ---- the result stream and counters */

static int sq_poll_results(cv_queue *base, int64_t after_seq, int max, cv_queue_result **out,
                           int *n, cv_diag *d)
{
    sq_queue *q = sq(base);
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_RESULTS, "ii", after_seq, (int64_t)max);
    if (!st)
        return -1;
    int cap = 0, rc;
    while ((rc = cv_sqldb_step(&q->db, st, d)) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            cv_queue_result *v = realloc(*out, (size_t)cap * sizeof *v);
            if (!v) {
                rc = cv_sqldb_error(&q->db, SQLITE_NOMEM, "poll results", d);
                break;
            }
            *out = v;
        }
        cv_queue_result *r = &(*out)[*n];
        memset(r, 0, sizeof *r);
        r->seq = sqlite3_column_int64(st, 0);
        cv_sqldb_text(st, 1, r->job_id, sizeof r->job_id);
        r->attempts = sqlite3_column_int(st, 2);
        r->dead_letter = sqlite3_column_int(st, 3) != 0;
        r->msg = cv_sqldb_dup(st, 4, &r->msg_len);
        if (!r->msg) {
            rc = cv_sqldb_error(&q->db, SQLITE_NOMEM, "poll results", d);
            break;
        }
        ++*n;
    }
    sqlite3_reset(st);
    if (rc < 0) {
        cv_queue_results_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

static int sq_ack_results(cv_queue *base, int64_t upto_seq, cv_diag *d)
{
    sq_queue *q = sq(base);
    if (tx_begin(q, d))
        return -1;
    int rc = cv_sqldb_exec(&q->db, d, SQL_ACK_JOBS, "i", upto_seq);
    if (rc >= 0)
        rc = cv_sqldb_exec(&q->db, d, SQL_ACK_RESULTS, "i", upto_seq);
    return tx_end(q, rc, d) < 0 ? -1 : 0;
}

static int read_counters(sq_queue *q, cv_queue_stats *out, cv_diag *d)
{
    static const struct { const char *name; size_t off; } map[] = {
        {"enqueued", offsetof(cv_queue_stats, enqueued)},
        {"merged", offsetof(cv_queue_stats, merged)},
        {"completed", offsetof(cv_queue_stats, completed)},
        {"retried", offsetof(cv_queue_stats, retried)},
        {"expired", offsetof(cv_queue_stats, expired)},
    };
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_COUNTERS, "");
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&q->db, st, d)) == 1) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strcmp(map[i].name, name) == 0)
                *(int64_t *)((char *)out + map[i].off) = sqlite3_column_int64(st, 1);
    }
    return rc;
}

static int sq_stats(cv_queue *base, cv_queue_stats *out, cv_diag *d)
{
    sq_queue *q = sq(base);
    /* One read transaction: the figures are a consistent snapshot. */
    if (cv_sqldb_script(&q->db, "BEGIN", d))
        return -1;
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_DEPTH, "");
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&q->db, st, d)) == 1) {
        const char *state = (const char *)sqlite3_column_text(st, 0);
        *(strcmp(state, "queued") == 0 ? &out->queued : &out->leased) = sqlite3_column_int64(st, 1);
    }
    if (rc == 0)
        rc = cv_sqldb_int(&q->db, d, &out->results_pending, SQL_PENDING, "") < 0 ? -1 : 0;
    if (rc == 0)
        rc = cv_sqldb_int(&q->db, d, &out->dead_letters, SQL_DEAD_COUNT, "") < 0 ? -1 : 0;
    if (rc == 0)
        rc = read_counters(q, out, d);
    if (cv_sqldb_script(&q->db, rc == 0 ? "COMMIT" : "ROLLBACK", d))
        rc = -1;
    return rc;
}

static int sq_leases(cv_queue *base, cv_queue_lease_info *out, int max, int *n, cv_diag *d)
{
    sq_queue *q = sq(base);
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_LEASES, "i", (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && *n < max && (rc = cv_sqldb_step(&q->db, st, d)) == 1) {
        cv_queue_lease_info *l = &out[(*n)++];
        cv_sqldb_text(st, 0, l->job_id, sizeof l->job_id);
        cv_sqldb_text(st, 1, l->worker_id, sizeof l->worker_id);
        l->attempt = sqlite3_column_int(st, 2);
        l->leased_ms = sqlite3_column_int64(st, 3);
        l->deadline_ms = sqlite3_column_int64(st, 4);
    }
    if (rc == 1)
        sqlite3_reset(st);
    return rc < 0 ? -1 : 0;
}

/* ---- worker presence: one autocommit statement each; listing ignores
 * records older than CV_QUEUE_WORKER_FORGET_MS */

static int sq_worker_beat(cv_queue *base, const char *worker_id, const char *job_id, bool done,
                          cv_diag *d)
{
    return cv_sqldb_exec(&sq(base)->db, d, SQL_WORKER_BEAT, "ttii", worker_id, job_id ? job_id : "",
                     cv_queue_now_ms(base), (int64_t)done) < 0 ? -1 : 0;
}

static int sq_worker_leave(cv_queue *base, const char *worker_id, cv_diag *d)
{
    return cv_sqldb_exec(&sq(base)->db, d, SQL_WORKER_LEAVE, "ti", worker_id,
                     cv_queue_now_ms(base) - CV_QUEUE_WORKER_FORGET_MS) < 0 ? -1 : 0;
}

static int sq_workers(cv_queue *base, cv_queue_worker_info *out, int max, int *n, cv_diag *d)
{
    sq_queue *q = sq(base);
    sqlite3_stmt *st = cv_sqldb_query(&q->db, d, SQL_WORKERS, "ii",
                             cv_queue_now_ms(base) - CV_QUEUE_WORKER_FORGET_MS, (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && *n < max && (rc = cv_sqldb_step(&q->db, st, d)) == 1) {
        cv_queue_worker_info *w = &out[(*n)++];
        cv_sqldb_text(st, 0, w->worker_id, sizeof w->worker_id);
        cv_sqldb_text(st, 1, w->job_id, sizeof w->job_id);
        w->started_ms = sqlite3_column_int64(st, 2);
        w->beat_ms = sqlite3_column_int64(st, 3);
        w->jobs_done = sqlite3_column_int64(st, 4);
    }
    if (rc == 1)
        sqlite3_reset(st);
    return rc < 0 ? -1 : 0;
}

const cv_queue_ops cv_queue_sqlite_ops = {
    .scheme = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .enqueue = sq_enqueue,
    .lease = sq_lease,
    .wait = NULL,
    .heartbeat = sq_heartbeat,
    .complete = sq_complete,
    .fail = sq_fail,
    .sweep = sq_sweep,
    .poll_results = sq_poll_results,
    .ack_results = sq_ack_results,
    .stats = sq_stats,
    .leases = sq_leases,
    .worker_beat = sq_worker_beat,
    .worker_leave = sq_worker_leave,
    .workers = sq_workers,
};
