/* The backend-neutral front of the job queue: URL dispatch, argument and
 * message validation, the lease wait loop, poison-message handling.  The
 * backends behind it trust what they get from here. */
#include "queue/queue.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

static const cv_queue_ops *const backends[] = {&cv_queue_sqlite_ops, &cv_queue_kafka_ops};
/* Schemes that name a planned backend not built into this binary (none at
 * present: every backend is built). */
static const char *const planned[] = {NULL};

static int arg_error(cv_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int arg_error(cv_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, CV_E_QUEUE_INVALID_ARGUMENT, (cv_span){0}, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int64_t realtime_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cv_queue_now_ms(const cv_queue *q) { return q->opts.now_ms(q->opts.clock_ctx); }

static bool visible_ascii(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= 0x20 || (unsigned char)s[n] >= 0x7f || n >= max)
            return false;
    return n > 0;
}

static int check_worker_id(const char *worker_id, cv_diag *d)
{
    if (!worker_id || !visible_ascii(worker_id, CV_QUEUE_WORKER_MAX))
        return arg_error(d, "a worker id is 1..%d visible ASCII characters", CV_QUEUE_WORKER_MAX);
    return 0;
}

static int split_url(const char *url, char *scheme, size_t cap, const char **rest, cv_diag *d)
{
    size_t n = strspn(url, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
    bool ok = n > 0 && n < cap && url[n] == ':' && strlen(url) <= CV_MSG_STR_MAX;
    for (const char *p = url; ok && *p; p++)
        ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
    if (!ok) {
        cv_diag_error(d, CV_E_QUEUE_BAD_URL, (cv_span){0},
                      "queue URL '%.200s' is not of the form sqlite:PATH or kafka://BROKERS", url);
        return -1;
    }
    memcpy(scheme, url, n);
    scheme[n] = 0;
    *rest = url + n + 1;
    return 0;
}

int cv_queue_open(const char *url, const cv_queue_opts *opts, cv_queue **out, cv_diag *d)
{
    *out = NULL;
    char scheme[32];
    const char *rest;
    if (!url || split_url(url, scheme, sizeof scheme, &rest, d))
        return url ? -1 : arg_error(d, "no queue URL given");
    cv_queue_opts o = opts ? *opts : (cv_queue_opts){0};
    if (o.max_attempts < 0 || o.max_attempts > CV_MSG_ATTEMPT_MAX || o.busy_timeout_ms < 0 ||
        o.retry_backoff_ms < 0 || o.retry_backoff_ms > 3600000)
        return arg_error(d, "queue options out of range (max_attempts 0..%d, backoff 0..3600000 ms)",
                         CV_MSG_ATTEMPT_MAX);
    o.max_attempts = o.max_attempts ? o.max_attempts : CV_QUEUE_DEFAULT_ATTEMPTS;
    o.busy_timeout_ms = o.busy_timeout_ms ? o.busy_timeout_ms : 5000;
    o.now_ms = o.now_ms ? o.now_ms : realtime_ms;
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        if (strcmp(backends[i]->scheme, scheme) != 0)
            continue;
        if (backends[i]->open(rest, &o, out, d))
            return -1;
        (*out)->ops = backends[i];
        (*out)->opts = o;
        return 0;
    }
    for (size_t i = 0; i < sizeof planned / sizeof planned[0]; i++)
        if (planned[i] && strcmp(planned[i], scheme) == 0) {
            cv_diag_error(d, CV_E_QUEUE_BACKEND_UNAVAILABLE, (cv_span){0},
                          "the %s queue backend is not built into this cuvil", scheme);
            return -1;
        }
    cv_diag_error(d, CV_E_QUEUE_BAD_URL, (cv_span){0}, "unknown queue backend '%s' (expected sqlite or kafka)",
                  scheme);
    return -1;
}

void cv_queue_close(cv_queue *q)
{
    if (q)
        q->ops->close(q);
}

int cv_queue_enqueue(cv_queue *q, const void *msg, size_t len, cv_queue_enq *out, cv_diag *d)
{
    cv_queue_enq scratch;
    cv_job_msg job;
    if (!out)
        out = &scratch;
    memset(out, 0, sizeof *out);
    if (cv_job_msg_decode(msg, len, "job message", &job, d)) {
        cv_job_msg_free(&job);
        return -1;
    }
    int rc = q->ops->enqueue(q, &job, msg, len, out, d);
    cv_job_msg_free(&job);
    return rc;
}

void cv_queue_lease_free(cv_lease *l)
{
    cv_job_msg_free(&l->job);
    free(l->msg);
    memset(l, 0, sizeof *l);
}

/* Turns the stored bytes into the job with the queue's attempt count.  A
 * message that no longer decodes (or re-encodes) is dead-lettered so that it
 * cannot block the queue; returns 1 in that case. */
static int finish_lease(cv_queue *q, cv_lease *l, cv_diag *d)
{
    cv_diag why;
    cv_diag_init(&why);
    char *stored = l->msg;   /* owned until replaced */
    int rc = cv_job_msg_decode(stored, l->msg_len, "stored job", &l->job, &why);
    if (rc == 0) {
        l->job.attempt = l->attempt;
        rc = cv_job_msg_encode(&l->job, &l->msg, &l->msg_len, &why);
    }
    if (rc == 0) {
        free(stored);
        cv_diag_free(&why);
        return 0;
    }
    l->msg = stored;
    const cv_diag_entry *e = cv_diag_get(&why, 1);
    char reason[512];
    snprintf(reason, sizeof reason, "undecodable job message: CV%04d %s", e ? e->code : 0,
             e ? e->msg : "");
    cv_diag_free(&why);
    rc = q->ops->fail(q, l, CV_QUEUE_FAIL_POISON, reason, d);
    cv_queue_lease_free(l);
    return rc < 0 ? -1 : 1;
}

/* false when a signal cut the nap short: the caller's wait ends there, so
 * that a worker told to stop (SIGTERM) does not first sleep out its poll. */
static bool sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    return nanosleep(&ts, NULL) == 0;
}

int cv_queue_lease(cv_queue *q, const char *worker_id, int lease_seconds, int wait_ms,
                   cv_lease *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    if (check_worker_id(worker_id, d))
        return -1;
    if (lease_seconds < 1 || lease_seconds > CV_QUEUE_LEASE_MAX_S || wait_ms < 0 ||
        wait_ms > CV_QUEUE_WAIT_MAX_MS)
        return arg_error(d, "lease seconds must be 1..%d and wait 0..%d ms", CV_QUEUE_LEASE_MAX_S,
                         CV_QUEUE_WAIT_MAX_MS);
    int64_t start = cv_clock_mono_ms();
    int nap = 2;
    for (;;) {
        int rc = q->ops->lease(q, worker_id, lease_seconds, out, d);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            snprintf(out->worker_id, sizeof out->worker_id, "%s", worker_id);
            rc = finish_lease(q, out, d);
            if (rc == 0)
                return 1;
            if (rc < 0) {
                cv_queue_lease_free(out);
                return -1;
            }
            continue;   /* poison dead-lettered: try the next job */
        }
        int64_t left = wait_ms - (cv_clock_mono_ms() - start);
        if (left <= 0)
            return 0;
        /* Short naps first so a burst of work is picked up quickly. */
        int ms = left < nap ? (int)left : nap;
        if (q->ops->wait)
            q->ops->wait(q, ms);
        else if (!sleep_ms(ms))
            return 0;
        nap = nap < 50 ? nap * 2 : 50;
    }
}

static int check_lease(const cv_lease *l, cv_diag *d)
{
    if (!l || !l->job.job_id)
        return arg_error(d, "not a lease returned by cv_queue_lease");
    return 0;
}

int cv_queue_heartbeat(cv_queue *q, cv_lease *l, int lease_seconds, cv_diag *d)
{
    if (check_lease(l, d))
        return -1;
    if (lease_seconds < 1 || lease_seconds > CV_QUEUE_LEASE_MAX_S)
        return arg_error(d, "lease seconds must be 1..%d", CV_QUEUE_LEASE_MAX_S);
    return q->ops->heartbeat(q, l, lease_seconds, d);
}

int cv_queue_complete(cv_queue *q, const cv_lease *l, const void *result, size_t len,
                      cv_diag *d)
{
    if (check_lease(l, d))
        return -1;
    cv_result_msg r;
    int rc = cv_result_msg_decode(result, len, "result message", &r, d);
    if (rc == 0 && strcmp(r.job_id, l->job.job_id) != 0) {
        cv_diag_error(d, CV_E_QUEUE_RESULT_MISMATCH, (cv_span){0}, "result for job '%s' completes the lease of '%s'",
                      r.job_id, l->job.job_id);
        rc = -1;
    }
    cv_result_msg_free(&r);
    return rc ? -1 : q->ops->complete(q, l, result, len, d);
}

/* Copies reason into buf, cut to a UTF-8 boundary. */
static const char *bounded_reason(const char *reason, char *buf, size_t cap)
{
    if (!reason || !reason[0])
        return "unspecified";
    size_t n = strlen(reason);
    if (n < cap)
        return reason;
    n = cap - 1;
    while (n > 0 && ((unsigned char)reason[n] & 0xC0) == 0x80)
        n--;
    memcpy(buf, reason, n);
    buf[n] = 0;
    return buf;
}

int cv_queue_fail(cv_queue *q, const cv_lease *l, cv_queue_fail_kind kind,
                  const char *reason, cv_diag *d)
{
    char buf[CV_MSG_STR_MAX + 1];   /* only used for over-long reasons */
    if (check_lease(l, d))
        return -1;
    if (kind != CV_QUEUE_FAIL_INFRA && kind != CV_QUEUE_FAIL_RELEASE &&
        kind != CV_QUEUE_FAIL_POISON)
        return arg_error(d, "unknown failure kind %d", (int)kind);
    return q->ops->fail(q, l, kind, bounded_reason(reason, buf, sizeof buf), d);
}

int cv_queue_sweep(cv_queue *q, int *n_expired, cv_diag *d)
{
    int scratch;
    return q->ops->sweep(q, n_expired ? n_expired : &scratch, d);
}

int cv_queue_poll_results(cv_queue *q, int64_t after_seq, int max, cv_queue_result **out,
                          int *n, cv_diag *d)
{
    *out = NULL;
    *n = 0;
    if (max < 1 || max > CV_QUEUE_POLL_MAX || after_seq < 0)
        return arg_error(d, "poll: max must be 1..%d and the cursor >= 0", CV_QUEUE_POLL_MAX);
    return q->ops->poll_results(q, after_seq, max, out, n, d);
}

int cv_queue_ack_results(cv_queue *q, int64_t upto_seq, cv_diag *d)
{
    if (upto_seq < 0)
        return arg_error(d, "ack: the cursor must be >= 0");
    return q->ops->ack_results(q, upto_seq, d);
}

void cv_queue_results_free(cv_queue_result *r, int n)
{
    for (int i = 0; r && i < n; i++)
        free(r[i].msg);
    free(r);
}

int cv_queue_stats_get(cv_queue *q, cv_queue_stats *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    return q->ops->stats(q, out, d);
}

int cv_queue_leases_list(cv_queue *q, cv_queue_lease_info *out, int max, int *n, cv_diag *d)
{
    *n = 0;
    if (!q->ops->leases)
        return 0;
    return q->ops->leases(q, out, max > 0 ? max : 0, n, d) < 0 ? -1 : 1;
}

int cv_queue_worker_beat(cv_queue *q, const char *worker_id, const char *job_id, bool done,
                         cv_diag *d)
{
    if (!q->ops->worker_beat)
        return 0;
    if (check_worker_id(worker_id, d))
        return -1;
    if (job_id && !visible_ascii(job_id, CV_MSG_ID_MAX))
        return arg_error(d, "a job id is 1..%d visible ASCII characters", CV_MSG_ID_MAX);
    return q->ops->worker_beat(q, worker_id, job_id, done, d);
}

int cv_queue_worker_leave(cv_queue *q, const char *worker_id, cv_diag *d)
{
    if (!q->ops->worker_leave)
        return 0;
    return check_worker_id(worker_id, d) ? -1 : q->ops->worker_leave(q, worker_id, d);
}

int cv_queue_workers_list(cv_queue *q, cv_queue_worker_info *out, int max, int *n, cv_diag *d)
{
    *n = 0;
    if (!q->ops->workers)
        return 0;
    return q->ops->workers(q, out, max > 0 ? max : 0, n, d) < 0 ? -1 : 1;
}

int cv_queue_dead_letter_result(const char *job_id, int attempts, int code, const char *reason,
                                char **msg, size_t *len)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = (char *)job_id;   /* borrowed; cleared before the free below */
    r.status = CV_RESULT_INFRA;
    cv_diag_error(&r.diags, code == CV_E_QUEUE_POISON_MESSAGE ? CV_E_QUEUE_POISON_MESSAGE : CV_E_QUEUE_DEAD_LETTER, (cv_span){0},
                  "dead-lettered after %d attempt%s: %s", attempts, attempts == 1 ? "" : "s",
                  reason);
    cv_diag scratch;
    cv_diag_init(&scratch);
    int rc = cv_result_msg_encode(&r, msg, len, &scratch);
    if (rc) {
        /* Only a damaged store holds an invalid job id; the dead letter must
         * still leave, or the job would block the queue. */
        r.job_id = (char *)"invalid-job-id";
        rc = cv_result_msg_encode(&r, msg, len, &scratch);
    }
    cv_diag_free(&scratch);
    r.job_id = NULL;
    cv_result_msg_free(&r);
    return rc;
}

int cv_queue_lease_lost(const cv_lease *l, cv_diag *d)
{
    cv_diag_error(d, CV_E_QUEUE_LEASE_LOST, (cv_span){0},
                  "lease on job '%s' (attempt %d) is lost: it expired and went to another "
                  "worker, or the job is finished",
                  l->job.job_id ? l->job.job_id : "?", l->attempt);
    return -1;
}
