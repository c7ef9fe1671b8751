/* The SQLite queue backend, on real database files in a temp dir.  Time is
 * an injected clock, so lease expiry needs no sleeping; concurrency is two
 * real processes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "tests/support/tmpdir.h"

#define T0 INT64_C(1700000000000)

typedef struct fx {
    char *dir;          /* owned */
    char url[4200];
    int64_t now;        /* the injected clock, ms */
    cv_queue_opts opts;
    cv_queue *q;        /* owned */
    cv_diag d;
} fx;

static int64_t fake_now(void *ctx) { return *(const int64_t *)ctx; }

static void reopen(fx *f)
{
    cv_queue_close(f->q);
    f->q = NULL;
    assert_int_equal(cv_queue_open(f->url, &f->opts, &f->q, &f->d), 0);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("queue");
    assert_non_null(f->dir);
    snprintf(f->url, sizeof f->url, "sqlite:%s/queue.db", f->dir);
    f->now = T0;
    f->opts.now_ms = fake_now;
    f->opts.clock_ctx = &f->now;
    cv_diag_init(&f->d);
    reopen(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_queue_close(f->q);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static int last_code(const cv_diag *d) { return d->n ? cv_diag_get(d, d->n)->code : 0; }

/* Job `i` with l2_key derived from `key` (so tests choose collisions). */
static char *job_text(int i, unsigned key, size_t *len)
{
    char id[32], l2[65];
    snprintf(id, sizeof id, "job-%d", i);
    snprintf(l2, sizeof l2, "%064x", key);
    cv_job_msg m = {.job_id = id, .revision = "main@sha1:abc", .pipeline = "vision",
                    .model_path = "models/m.onnx", .target = "x86_64-avx2",
                    .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O2, .attempt = 1};
    memset(m.model_digest, 'e', CV_DIGEST_HEX);
    memcpy(m.l2_key, l2, sizeof l2);
    char *out;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_job_msg_encode(&m, &out, len, &d), 0);
    cv_diag_free(&d);
    return out;
}

static void enqueue(fx *f, int i, unsigned key, cv_queue_enq *out)
{
    size_t len;
    char *msg = job_text(i, key, &len);
    assert_int_equal(cv_queue_enqueue(f->q, msg, len, out, &f->d), 0);
    free(msg);
}

static char *result_text(const char *job_id, cv_result_status st, size_t *len)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = (char *)job_id;
    r.status = st;
    if (st == CV_RESULT_OK)
        memset(r.artifact_manifest, 'a', CV_DIGEST_HEX);
    char *out;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_result_msg_encode(&r, &out, len, &d), 0);
    cv_diag_free(&d);
    return out;
}

static int complete(cv_queue *q, const cv_lease *l, cv_result_status st, cv_diag *d)
{
    size_t len;
    char *res = result_text(l->job.job_id, st, &len);
    int rc = cv_queue_complete(q, l, res, len, d);
    free(res);
    return rc;
}

static cv_queue_stats stats(fx *f)
{
    cv_queue_stats s;
    assert_int_equal(cv_queue_stats_get(f->q, &s, &f->d), 0);
    return s;
}

static int poll_all(fx *f, int64_t after, cv_queue_result **r)
{
    int n;
    assert_int_equal(cv_queue_poll_results(f->q, after, CV_QUEUE_POLL_MAX, r, &n, &f->d), 0);
    return n;
}

static void test_enqueue_lease_complete(void **state)
{
    fx *f = *state;
    cv_queue_enq e;
    enqueue(f, 1, 1, &e);
    assert_false(e.merged);
    assert_string_equal(e.job_id, "job-1");
    assert_int_equal(stats(f).queued, 1);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w1", 30, 0, &l, &f->d), 1);
    assert_string_equal(l.job.job_id, "job-1");
    assert_int_equal(l.attempt, 1);
    assert_int_equal(l.deadline_ms, T0 + 30000);
    assert_string_equal(l.worker_id, "w1");
    assert_non_null(strstr(l.msg, "\"attempt\":1"));
    cv_queue_stats s = stats(f);
    assert_int_equal(s.queued, 0);
    assert_int_equal(s.leased, 1);
    cv_lease none;
    assert_int_equal(cv_queue_lease(f->q, "w2", 30, 0, &none, &f->d), 0);
    /* A compile error in the model is a result: no retry follows. */
    assert_int_equal(complete(f->q, &l, CV_RESULT_FAILED, &f->d), 0);
    assert_int_equal(complete(f->q, &l, CV_RESULT_FAILED, &f->d), -1);   /* exactly once */
    assert_int_equal(last_code(&f->d), 9206);
    assert_int_equal(cv_queue_lease(f->q, "w2", 30, 0, &none, &f->d), 0);
    s = stats(f);
    assert_int_equal(s.leased + s.queued, 0);
    assert_int_equal(s.results_pending, 1);
    assert_int_equal(s.enqueued, 1);
    assert_int_equal(s.completed, 1);
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), 1);
    assert_string_equal(r[0].job_id, "job-1");
    assert_false(r[0].dead_letter);
    assert_int_equal(r[0].attempts, 1);
    cv_result_msg m;
    assert_int_equal(cv_result_msg_decode(r[0].msg, r[0].msg_len, NULL, &m, &f->d), 0);
    assert_int_equal(m.status, CV_RESULT_FAILED);
    cv_result_msg_free(&m);
    assert_int_equal(cv_queue_ack_results(f->q, r[0].seq, &f->d), 0);
    assert_int_equal(stats(f).results_pending, 0);
    cv_queue_results_free(r, 1);
    cv_queue_lease_free(&l);
}

static void test_dedupe_merge(void **state)
{
    fx *f = *state;
    cv_queue_enq e;
    enqueue(f, 1, 7, &e);
    enqueue(f, 2, 7, &e);   /* same l2_key, other pipeline's job */
    assert_true(e.merged);
    assert_string_equal(e.job_id, "job-1");
    enqueue(f, 3, 8, &e);
    assert_false(e.merged);
    cv_queue_stats s = stats(f);
    assert_int_equal(s.queued, 2);
    assert_int_equal(s.merged, 1);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_string_equal(l.job.job_id, "job-1");
    enqueue(f, 4, 7, &e);   /* still in flight while leased */
    assert_true(e.merged);
    assert_string_equal(e.job_id, "job-1");
    assert_int_equal(complete(f->q, &l, CV_RESULT_OK, &f->d), 0);
    enqueue(f, 5, 7, &e);   /* finished: a new request runs again */
    assert_false(e.merged);
    /* The same job id under another key is a planner bug, not a merge. */
    size_t len;
    char *msg = job_text(3, 9, &len);
    assert_int_equal(cv_queue_enqueue(f->q, msg, len, NULL, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9211);
    free(msg);
    assert_int_equal(cv_queue_enqueue(f->q, "{}", 2, NULL, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n - 1)->code / 10, 113);   /* invalid: never queued */
    assert_int_equal(stats(f).queued, 2);
    cv_queue_lease_free(&l);
}

static void test_lease_expiry_requeues(void **state)
{
    fx *f = *state;
    enqueue(f, 1, 1, NULL);
    cv_lease a, b;
    assert_int_equal(cv_queue_lease(f->q, "dead-worker", 1, 0, &a, &f->d), 1);
    f->now += 1000;   /* the deadline itself still belongs to the lease */
    assert_int_equal(cv_queue_lease(f->q, "w2", 1, 0, &b, &f->d), 0);
    f->now += 1;
    assert_int_equal(cv_queue_lease(f->q, "w2", 1, 0, &b, &f->d), 1);
    assert_string_equal(b.job.job_id, "job-1");
    assert_int_equal(b.attempt, 2);
    assert_int_equal(b.job.attempt, 2);
    assert_non_null(strstr(b.msg, "\"attempt\":2"));
    /* The stale holder can no longer touch the job. */
    assert_int_equal(cv_queue_heartbeat(f->q, &a, 5, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9206);
    assert_int_equal(complete(f->q, &a, CV_RESULT_OK, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9206);
    assert_int_equal(cv_queue_fail(f->q, &a, CV_QUEUE_FAIL_INFRA, "x", &f->d), -1);
    assert_int_equal(complete(f->q, &b, CV_RESULT_OK, &f->d), 0);
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), 1);
    assert_int_equal(r[0].attempts, 2);
    cv_queue_stats s = stats(f);
    assert_int_equal(s.expired, 1);
    assert_int_equal(s.retried, 1);
    cv_queue_results_free(r, 1);
    cv_queue_lease_free(&a);
    cv_queue_lease_free(&b);
}

static void test_heartbeat_keeps_lease(void **state)
{
    fx *f = *state;
    enqueue(f, 1, 1, NULL);
    cv_lease l, other;
    int n = -1;
    assert_int_equal(cv_queue_lease(f->q, "w1", 1, 0, &l, &f->d), 1);
    f->now += 800;
    assert_int_equal(cv_queue_heartbeat(f->q, &l, 1, &f->d), 0);
    assert_int_equal(l.deadline_ms, T0 + 1800);
    f->now += 800;
    assert_int_equal(cv_queue_lease(f->q, "w2", 1, 0, &other, &f->d), 0);
    assert_int_equal(cv_queue_sweep(f->q, &n, &f->d), 0);
    assert_int_equal(n, 0);
    assert_int_equal(stats(f).leased, 1);
    f->now += 201;
    assert_int_equal(cv_queue_sweep(f->q, &n, &f->d), 0);
    assert_int_equal(n, 1);
    assert_int_equal(stats(f).queued, 1);
    cv_queue_lease_free(&l);
}

/* Worker presence: first report, job start and end (jobs done counted),
 * most recent first, a clean stop removes only the worker's own record
 * and those past the forget horizon; bad ids are refused. */
static void test_worker_presence(void **state)
{
    fx *f = *state;
    cv_queue_worker_info w[4];
    int n = -1;
    assert_int_equal(cv_queue_worker_beat(f->q, "w-old", NULL, false, &f->d), 0);
    f->now += CV_QUEUE_WORKER_FORGET_MS - 1000;
    assert_int_equal(cv_queue_worker_beat(f->q, "w1", NULL, false, &f->d), 0);
    f->now += 500;
    assert_int_equal(cv_queue_worker_beat(f->q, "w2", "job-7", false, &f->d), 0);
    assert_int_equal(cv_queue_workers_list(f->q, w, 4, &n, &f->d), 1);
    assert_int_equal(n, 3);
    assert_string_equal(w[0].worker_id, "w2");
    assert_string_equal(w[0].job_id, "job-7");
    assert_string_equal(w[1].worker_id, "w1");
    assert_string_equal(w[1].job_id, "");
    assert_string_equal(w[2].worker_id, "w-old");

    f->now += 1000; /* w-old is now past the horizon: no longer listed */
    assert_int_equal(cv_queue_worker_beat(f->q, "w2", NULL, true, &f->d), 0);
    assert_int_equal(cv_queue_worker_beat(f->q, "w2", "job-8", false, &f->d), 0);
    assert_int_equal(cv_queue_workers_list(f->q, w, 4, &n, &f->d), 1);
    assert_int_equal(n, 2);
    assert_string_equal(w[0].worker_id, "w2");
    assert_string_equal(w[0].job_id, "job-8");
    assert_int_equal(w[0].jobs_done, 1);
    assert_int_equal(w[0].started_ms, T0 + CV_QUEUE_WORKER_FORGET_MS - 500);
    assert_int_equal(w[0].beat_ms, f->now);

    assert_int_equal(cv_queue_worker_leave(f->q, "w2", &f->d), 0);
    reopen(f); /* the records are in the database, not the handle */
    assert_int_equal(cv_queue_workers_list(f->q, w, 4, &n, &f->d), 1);
    assert_int_equal(n, 1);
    assert_string_equal(w[0].worker_id, "w1");
    assert_int_equal(cv_queue_worker_beat(f->q, "bad id", NULL, false, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9210);
    assert_int_equal(cv_queue_worker_beat(f->q, "w1", "", false, &f->d), -1);
}

static void on_alarm(int sig) { (void)sig; }

/* A caught signal ends a lease's wait for work at once: a worker told to
 * stop (SIGTERM) must not first sleep out its poll. */
static void test_signal_ends_wait(void **state)
{
    fx *f = *state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART, as the worker's handlers */
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    struct itimerval it = {.it_value = {0, 100000}};
    assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w1", 30, 8000, &l, &f->d), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited >= 0.09 && waited < 4.0); /* cut short, not the 8 s asked for */
    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
}

static void test_retry_and_release(void **state)
{
    fx *f = *state;
    f->opts.retry_backoff_ms = 1000;
    reopen(f);
    enqueue(f, 1, 1, NULL);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_int_equal(cv_queue_fail(f->q, &l, CV_QUEUE_FAIL_INFRA, "fetch failed", &f->d), 0);
    cv_queue_lease_free(&l);
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 0);   /* backing off */
    f->now += 1000;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_int_equal(l.attempt, 2);
    /* A graceful stop hands the job back without spending an attempt. */
    assert_int_equal(cv_queue_fail(f->q, &l, CV_QUEUE_FAIL_RELEASE, "SIGTERM", &f->d), 0);
    cv_queue_lease_free(&l);
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_int_equal(l.attempt, 2);
    assert_int_equal(stats(f).retried, 1);
    cv_queue_lease_free(&l);
}

static void expect_dead_letter(fx *f, int code, const char *reason, int attempts)
{
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), 1);
    assert_true(r[0].dead_letter);
    assert_int_equal(r[0].attempts, attempts);
    cv_result_msg m;
    assert_int_equal(cv_result_msg_decode(r[0].msg, r[0].msg_len, NULL, &m, &f->d), 0);
    assert_int_equal(m.status, CV_RESULT_INFRA);
    assert_int_equal(m.diags.n, 1);
    assert_int_equal(cv_diag_get(&m.diags, 1)->code, code);
    assert_non_null(strstr(cv_diag_get(&m.diags, 1)->msg, reason));
    cv_result_msg_free(&m);
    cv_queue_results_free(r, 1);
    cv_queue_stats s = stats(f);
    assert_int_equal(s.dead_letters, 1);
    assert_int_equal(s.queued + s.leased, 0);
}

static void test_dead_letter_after_three(void **state)
{
    fx *f = *state;
    enqueue(f, 1, 1, NULL);
    for (int i = 1; i <= 3; i++) {
        cv_lease l;
        char reason[64];
        snprintf(reason, sizeof reason, "cache unreachable (try %d)", i);
        assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
        assert_int_equal(l.attempt, i);
        assert_int_equal(cv_queue_fail(f->q, &l, CV_QUEUE_FAIL_INFRA, reason, &f->d), i == 3);
        cv_queue_lease_free(&l);
    }
    expect_dead_letter(f, 9208, "after 3 attempts: cache unreachable (try 3)", 3);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 0);
}

static void test_dead_letter_by_expiry(void **state)
{
    fx *f = *state;
    f->opts.max_attempts = 2;
    reopen(f);
    enqueue(f, 1, 1, NULL);
    cv_lease l;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cv_queue_lease(f->q, "vanishing", 1, 0, &l, &f->d), 1);
        cv_queue_lease_free(&l);
        f->now += 1001;
    }
    assert_int_equal(cv_queue_sweep(f->q, NULL, &f->d), 0);
    expect_dead_letter(f, 9208, "worker 'vanishing' stopped heartbeating", 2);
}

static void test_poison_message_skipped(void **state)
{
    fx *f = *state;
    char *path = cv_tmpdir_path(f->dir, "queue.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO jobs(job_id,key,state,attempt,msg,enqueued_ms,"
                                      "available_ms) VALUES('bad','k','queued',1,'not json',0,0)",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    free(path);
    enqueue(f, 1, 1, NULL);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_string_equal(l.job.job_id, "job-1");
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), 1);
    assert_string_equal(r[0].job_id, "bad");
    assert_true(r[0].dead_letter);
    assert_non_null(strstr(r[0].msg, "CV9212"));
    cv_queue_results_free(r, 1);
    cv_queue_lease_free(&l);
}

static void test_result_checks(void **state)
{
    fx *f = *state;
    enqueue(f, 1, 1, NULL);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    size_t len;
    char *other = result_text("job-2", CV_RESULT_OK, &len);
    assert_int_equal(cv_queue_complete(f->q, &l, other, len, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9207);
    assert_int_equal(cv_queue_complete(f->q, &l, "{\"job_id\":1}", 12, &f->d), -1);
    assert_int_equal(stats(f).leased, 1);   /* still ours to finish */
    assert_int_equal(complete(f->q, &l, CV_RESULT_TIMEOUT, &f->d), 0);
    free(other);
    cv_queue_lease_free(&l);
}

static void test_cursor_and_ack(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 5; i++) {
        cv_lease l;
        enqueue(f, i, (unsigned)i, NULL);
        assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
        assert_int_equal(complete(f->q, &l, CV_RESULT_OK, &f->d), 0);
        cv_queue_lease_free(&l);
    }
    cv_queue_result *r;
    int n;
    assert_int_equal(cv_queue_poll_results(f->q, 0, 2, &r, &n, &f->d), 0);
    assert_int_equal(n, 2);
    assert_true(r[0].seq < r[1].seq);
    int64_t cursor = r[1].seq;
    cv_queue_results_free(r, n);
    assert_int_equal(poll_all(f, cursor, &r), 3);
    assert_string_equal(r[0].job_id, "job-2");
    int64_t last = r[2].seq;
    cv_queue_results_free(r, 3);
    assert_int_equal(cv_queue_ack_results(f->q, cursor, &f->d), 0);
    assert_int_equal(stats(f).results_pending, 3);
    assert_int_equal(poll_all(f, 0, &r), 3);
    assert_true(r[0].seq > cursor);
    cv_queue_results_free(r, 3);
    assert_int_equal(cv_queue_ack_results(f->q, last, &f->d), 0);
    /* Sequence numbers are never reused, even once the table is empty. */
    reopen(f);
    cv_lease l;
    enqueue(f, 9, 9, NULL);
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 0, &l, &f->d), 1);
    assert_int_equal(complete(f->q, &l, CV_RESULT_OK, &f->d), 0);
    assert_int_equal(poll_all(f, last, &r), 1);
    assert_true(r[0].seq > last);
    cv_queue_results_free(r, 1);
    cv_queue_lease_free(&l);
}

static void expect_open_error(const char *url, const cv_queue_opts *o, int code)
{
    cv_queue *q = (cv_queue *)1;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_queue_open(url, o, &q, &d), -1);
    assert_null(q);
    assert_int_equal(last_code(&d), code);
    cv_diag_free(&d);
}

static void test_open_and_arguments(void **state)
{
    fx *f = *state;
    expect_open_error("queue.db", NULL, 9201);
    expect_open_error("ftp:x", NULL, 9201);
    expect_open_error("sqlite:", NULL, 9201);
    expect_open_error("kafka://?topic_prefix=cuvil", NULL, 9220);   /* no brokers */
    expect_open_error("sqlite:/nonexistent-dir-for-cuvil/q.db", NULL, 9202);
    cv_queue_opts bad = {.max_attempts = -1};
    expect_open_error(f->url, &bad, 9210);
    char url[4300];
    snprintf(url, sizeof url, "sqlite://%s/queue.db", f->dir);   /* sqlite:///abs form */
    cv_queue *q2;
    assert_int_equal(cv_queue_open(url, NULL, &q2, &f->d), 0);
    cv_queue_close(q2);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "two words", 30, 0, &l, &f->d), -1);
    assert_int_equal(last_code(&f->d), 9210);
    assert_int_equal(cv_queue_lease(f->q, "w", 0, 0, &l, &f->d), -1);
    cv_queue_result *r;
    int n;
    assert_int_equal(cv_queue_poll_results(f->q, 0, 0, &r, &n, &f->d), -1);
    /* A blocking lease on an empty queue waits, then reports nothing. */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(cv_queue_lease(f->q, "w", 30, 60, &l, &f->d), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 59);
    /* A newer schema than this build knows is refused, not migrated down. */
    cv_queue_close(f->q);
    f->q = NULL;
    char *path = cv_tmpdir_path(f->dir, "queue.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    free(path);
    expect_open_error(f->url, NULL, 9006);
}

/* ---- several processes */

/* Child: leases until the queue is empty, writing each job id to fd. */
static void drain_child(const char *url, int start_fd, int out_fd, const char *worker)
{
    char c;
    if (read(start_fd, &c, 1) < 0)   /* EOF: every child starts together */
        _exit(4);
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_open(url, NULL, &q, &d))
        _exit(2);
    for (;;) {
        cv_lease l;
        int rc = cv_queue_lease(q, worker, 60, 0, &l, &d);
        if (rc <= 0)
            _exit(rc == 0 ? 0 : 3);
        dprintf(out_fd, "%s\n", l.job.job_id);
        if (complete(q, &l, CV_RESULT_OK, &d))
            _exit(5);
        cv_queue_lease_free(&l);
    }
}

static void test_two_processes_lease_each_job_once(void **state)
{
    fx *f = *state;
    enum { JOBS = 200 };
    for (int i = 0; i < JOBS; i++)
        enqueue(f, i, (unsigned)i, NULL);
    cv_queue_close(f->q);   /* handles never cross fork() */
    f->q = NULL;
    int start[2];
    assert_int_equal(pipe(start), 0);
    pid_t pid[2];
    char *files[2];
    for (int k = 0; k < 2; k++) {
        char name[32], worker[32];
        snprintf(name, sizeof name, "leased-%d", k);
        snprintf(worker, sizeof worker, "worker-%d", k);
        files[k] = cv_tmpdir_path(f->dir, name);
        FILE *out = fopen(files[k], "w");
        assert_non_null(out);
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            close(start[1]);
            drain_child(f->url, start[0], fileno(out), worker);
        }
        fclose(out);
    }
    close(start[0]);
    close(start[1]);   /* go */
    int seen[JOBS] = {0}, per_child[2] = {0};
    for (int k = 0; k < 2; k++) {
        int st;
        assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        FILE *in = fopen(files[k], "r");
        int id;
        while (fscanf(in, "job-%d\n", &id) == 1) {
            assert_true(id >= 0 && id < JOBS);
            seen[id]++;
            per_child[k]++;
        }
        fclose(in);
        free(files[k]);
    }
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(seen[i], 1);
    print_message("  leases split %d/%d between the two processes\n", per_child[0], per_child[1]);
    reopen(f);
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), JOBS);
    cv_queue_results_free(r, JOBS);
    assert_int_equal(stats(f).completed, JOBS);
}

static void test_sigkilled_worker_job_rerun_once(void **state)
{
    fx *f = *state;
    enqueue(f, 1, 1, NULL);
    cv_queue_close(f->q);
    f->q = NULL;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cv_queue *q;
        cv_diag d;
        cv_diag_init(&d);
        cv_lease l;
        if (cv_queue_open(f->url, &f->opts, &q, &d) || cv_queue_lease(q, "doomed", 1, 0, &l, &d) != 1)
            _exit(2);
        if (write(ready[1], "L", 1) != 1)
            _exit(3);
        for (;;)
            pause();   /* "compiling" until killed */
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(kill(pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    close(ready[0]);
    close(ready[1]);
    reopen(f);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "survivor", 30, 0, &l, &f->d), 0);   /* not yet expired */
    assert_int_equal(stats(f).leased, 1);
    f->now += 1001;
    assert_int_equal(cv_queue_lease(f->q, "survivor", 30, 0, &l, &f->d), 1);
    assert_string_equal(l.job.job_id, "job-1");
    assert_int_equal(l.attempt, 2);
    assert_int_equal(complete(f->q, &l, CV_RESULT_OK, &f->d), 0);
    cv_queue_result *r;
    assert_int_equal(poll_all(f, 0, &r), 1);
    assert_string_equal(r[0].job_id, "job-1");
    assert_false(r[0].dead_letter);
    cv_queue_results_free(r, 1);
    cv_queue_stats s = stats(f);
    assert_int_equal(s.expired, 1);
    assert_int_equal(s.completed, 1);
    cv_queue_lease_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_enqueue_lease_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dedupe_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry_requeues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_keeps_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_presence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_ends_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_and_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_after_three, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_by_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poison_message_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_result_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cursor_and_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_and_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes_lease_each_job_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigkilled_worker_job_rerun_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
