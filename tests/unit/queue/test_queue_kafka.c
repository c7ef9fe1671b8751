/* The Kafka queue backend against the real Kafka protocol: a librdkafka
 * mock cluster with 3 brokers ($(BUILD)/tools/kafka-mock) runs as a child
 * process; workers are further child processes (this binary, re-executed
 * with --worker) in one consumer group.  Session timeouts are lowered
 * through the URL's librdkafka passthrough so the group notices a killed
 * worker within seconds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "common/log.h"
#include "queue/queue.h"
#include "tests/support/childproc.h"

/* The mock's first group join waits 3 s for more members, so sessions must
 * outlast that; max.poll.interval.ms may not be below the session timeout.
 * The mock answers a fetch that found no data only after fetch.wait.max.ms,
 * even when data arrives meanwhile (a real broker answers at once), so the
 * wait is short here. */
#define GROUP_CONF "&session.timeout.ms=4000&heartbeat.interval.ms=300" \
                   "&max.poll.interval.ms=4000&fetch.wait.max.ms=10"
#define MAX_POLL_MS 4000
#define JOIN_WAIT_MS 15000
#define BACKOFF_MS 200   /* the shared worker handle's retry backoff */

static cv_child mock;
static char bootstrap[1024];
static char self_exe[PATH_MAX];

/* Shared by the single-process tests: one consumer group join (3 s on the
 * mock) instead of one per test. */
static cv_queue *ctl, *wrk;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void url_for(char *out, size_t cap, const char *prefix, const char *extra)
{
    snprintf(out, cap, "kafka://%s?topic_prefix=%s&timeout_ms=10000" GROUP_CONF "%s", bootstrap,
             prefix, extra ? extra : "");
}

static int last_code(const cv_diag *d) { return d->n ? cv_diag_get(d, d->n)->code : 0; }

/* ---- messages */

static char *job_text(const char *id, unsigned key, size_t *len)
{
    char l2[65];
    snprintf(l2, sizeof l2, "%064x", key);
    cv_job_msg m = {.job_id = (char *)id, .revision = "main@sha1:abc", .pipeline = "vision",
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

static void enqueue(cv_queue *q, const char *id, unsigned key, cv_queue_enq *out)
{
    size_t len;
    char *msg = job_text(id, key, &len);
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_queue_enqueue(q, msg, len, out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_diag_free(&d);
    free(msg);
}

static char *result_text(const char *job_id, size_t *len)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = (char *)job_id;
    r.status = CV_RESULT_OK;
    memset(r.artifact_manifest, 'a', CV_DIGEST_HEX);
    char *out;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_result_msg_encode(&r, &out, len, &d))
        out = NULL;
    cv_diag_free(&d);
    r.job_id = NULL;
    cv_result_msg_free(&r);
    return out;
}

static int complete_ok(cv_queue *q, const cv_lease *l, cv_diag *d)
{
    size_t len;
    char *res = result_text(l->job.job_id, &len);
    int rc = res ? cv_queue_complete(q, l, res, len, d) : -1;
    free(res);
    return rc;
}

/* Reads results until `want` arrived or timeout_ms passed, acking them;
 * returns how many.  The first `cap` are moved into keep[] (free_kept). */
static int collect(cv_queue *q, int want, int timeout_ms, cv_queue_result *keep, int cap)
{
    int got = 0;
    int64_t cursor = 0, end = mono_ms() + timeout_ms;
    cv_diag d;
    cv_diag_init(&d);
    while (got < want && mono_ms() < end) {
        cv_queue_result *r;
        int n;
        assert_int_equal(cv_queue_poll_results(q, cursor, CV_QUEUE_POLL_MAX, &r, &n, &d), 0);
        for (int i = 0; i < n; i++, got++) {
            cursor = r[i].seq;
            if (got < cap) {
                keep[got] = r[i];
                r[i].msg = NULL;
            }
        }
        cv_queue_results_free(r, n);
        if (n)
            assert_int_equal(cv_queue_ack_results(q, cursor, &d), 0);
        else
            sleep_ms(20);
    }
    cv_diag_free(&d);
    return got;
}

static void free_kept(cv_queue_result *keep, int n)
{
    for (int i = 0; i < n; i++)
        free(keep[i].msg);
}

static cv_queue_stats stats(cv_queue *q)
{
    cv_queue_stats s;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_queue_stats_get(q, &s, &d), 0);
    cv_diag_free(&d);
    return s;
}

/* Produces a raw message to a topic, as a foreign or damaged producer would. */
static void produce_raw(const char *topic, const char *key, const char *value,
                        const char *attempt_header)
{
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err), 0);
    rd_kafka_conf_set(c, "log_level", "3", err, sizeof err);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    assert_non_null(p);
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    if (attempt_header)
        rd_kafka_header_add(h, "cuvil-attempt", -1, attempt_header, -1);
    assert_int_equal(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                                       RD_KAFKA_V_KEY(key, strlen(key)),
                                       RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                       RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
                     0);
    assert_int_equal(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
}

/* ---- child processes */

static void spawn_worker(cv_child *c, const char *url, const char *mode, const char *name)
{
    char *const argv[] = {self_exe, "--worker", (char *)url, (char *)mode, (char *)name, NULL};
    assert_int_equal(cv_child_spawn(c, argv), 0);
}

static void wait_ready(cv_child *c)
{
    const char *line = cv_child_line(c, 10000);
    assert_non_null(line);
    assert_string_equal(line, "ready");
}

static bool stdin_closed(void)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    char c;
    return poll(&p, 1, 0) > 0 && read(0, &c, 1) <= 0;
}

/* The worker process: leases jobs and completes them, printing
 * "leased ID" and "done ID"; in mode "hold" it keeps its first lease
 * forever (heartbeating), like a compile that never ends. */
static int worker_main(const char *url, const char *mode, const char *name)
{
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_open(url, NULL, &q, &d)) {
        cv_diag_print(&d, stderr, false);
        return 2;
    }
    /* The first lease subscribes: say so, so that the parent can start
     * every worker before the group's first election. */
    for (bool first = true; !stdin_closed(); first = false) {
        cv_lease l;
        int rc = cv_queue_lease(q, name, 60, first ? 0 : 100, &l, &d);
        if (first) {
            printf("ready\n");
            fflush(stdout);
        }
        if (rc < 0) {
            cv_diag_print(&d, stderr, false);
            return 3;
        }
        if (rc == 0)
            continue;
        printf("leased %s\n", l.job.job_id);
        fflush(stdout);
        while (strcmp(mode, "hold") == 0) {
            sleep_ms(100);
            if (cv_queue_heartbeat(q, &l, 60, &d))
                return 4;
        }
        sleep_ms(20);   /* "compiling" */
        if (complete_ok(q, &l, &d)) {
            cv_diag_print(&d, stderr, false);
            return 5;
        }
        printf("done %s\n", l.job.job_id);
        fflush(stdout);
        cv_queue_lease_free(&l);
    }
    cv_queue_close(q);
    cv_diag_free(&d);
    return 0;
}

/* ---- the cluster */

static int start_cluster(void **state)
{
    (void)state;
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0)
        return -1;
    self_exe[n] = 0;
    char tool[PATH_MAX + 64];
    const char *build = getenv("CUVIL_BUILD");
    if (build) {
        snprintf(tool, sizeof tool, "%s/tools/kafka-mock", build);
    } else {   /* BUILD/asan/tests/test_queue_kafka -> BUILD/tools/kafka-mock */
        char copy[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", self_exe);
        snprintf(tool, sizeof tool, "%s/../../tools/kafka-mock", dirname(copy));
    }
    if (access(tool, X_OK) != 0) {
        fprintf(stderr, "kafka-mock not found at %s (make $(BUILD)/tools/kafka-mock)\n", tool);
        return -1;
    }
    char *const argv[] = {tool, "--exit-on-stdin-eof", "--brokers", "3", "--partitions", "6",
                          "solo", "split", "kill", NULL};
    if (cv_child_spawn(&mock, argv))
        return -1;
    const char *line = cv_child_line(&mock, 10000);
    if (!line || !strchr(line, ':'))
        return -1;
    snprintf(bootstrap, sizeof bootstrap, "%s", line);
    char url[2048];
    url_for(url, sizeof url, "solo", NULL);
    cv_diag d;
    cv_diag_init(&d);
    cv_queue_opts wopts = {.retry_backoff_ms = BACKOFF_MS};
    int rc = cv_queue_open(url, NULL, &ctl, &d) || cv_queue_open(url, &wopts, &wrk, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return rc ? -1 : 0;
}

static int stop_cluster(void **state)
{
    (void)state;
    cv_queue_close(wrk);
    cv_queue_close(ctl);
    if (mock.pid > 0)
        cv_child_stop_all(&mock, 1, SIGTERM, NULL);
    return 0;
}

/* Leases on the shared worker handle, allowing for the first group join. */
static int lease(cv_lease *l, int wait_ms)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_queue_lease(wrk, "solo-worker", 60, wait_ms, l, &d);
    if (rc < 0)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return rc;
}

/* ---- tests */

static void expect_open_error(const char *url, int code)
{
    cv_queue *q = (cv_queue *)1;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_queue_open(url, NULL, &q, &d), -1);
    assert_null(q);
    if (last_code(&d) != code)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(last_code(&d), code);
    cv_diag_free(&d);
}

static void test_open_errors(void **state)
{
    (void)state;
    expect_open_error("kafka://", 9220);
    expect_open_error("kafka:broker:9092", 9220);
    expect_open_error("kafka://b:1,,c:2", 9220);
    expect_open_error("kafka://b:1?topic_prefix=a/b", 9220);
    expect_open_error("kafka://b:1?topic_prefix=a&topic_prefix=b", 9220);
    expect_open_error("kafka://b:1?timeout_ms=5", 9220);
    expect_open_error("kafka://b:1?sasl.password=%zz", 9220);
    expect_open_error("kafka://b:1?sasl.password", 9220);
    expect_open_error("kafka://b:1?Bad-Key=1", 9220);
    /* The at-least-once design rests on these: never passed through. */
    expect_open_error("kafka://b:1?enable.idempotence=false", 9221);
    expect_open_error("kafka://b:1?enable.auto.offset.store=true", 9221);
    expect_open_error("kafka://b:1?group.id=x", 9221);
    expect_open_error("kafka://b:1?message.timeout.ms=0", 9221);   /* use timeout_ms */
    expect_open_error("kafka://b:1?no.such.setting=1", 9221);
    expect_open_error("kafka://127.0.0.1:1?timeout_ms=300", 9223);
    char url[2048];
    snprintf(url, sizeof url, "kafka://%s?topic_prefix=absent&timeout_ms=2000", bootstrap);
    expect_open_error(url, 9224);
    /* Passed-through settings (percent-decoded) reach librdkafka. */
    snprintf(url, sizeof url, "kafka://%s?topic_prefix=solo&client.rack=rack%%2C1", bootstrap);
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    char *more, *most;
    assert_int_equal(cv_queue_kafka_config_add(url, "socket.keepalive.enable=true", &more, &d), 0);
    assert_int_equal(cv_queue_kafka_config_add(more, "client.id=a b&c=d", &most, &d), 0);
    assert_non_null(strstr(most, "&socket.keepalive.enable=true&client.id=a%20b%26c%3Dd"));
    assert_int_equal(cv_queue_open(most, NULL, &q, &d), 0);
    cv_queue_close(q);
    free(more);
    free(most);
    assert_int_equal(cv_queue_kafka_config_add("sqlite:q.db", "a=b", &more, &d), -1);
    assert_int_equal(cv_queue_kafka_config_add(url, "no-equals", &more, &d), -1);
    assert_int_equal(last_code(&d), 9220);
    cv_diag_free(&d);
}

static void test_round_trip_and_merge(void **state)
{
    (void)state;
    cv_queue_enq e;
    enqueue(ctl, "rt-1", 101, &e);
    assert_false(e.merged);
    assert_string_equal(e.job_id, "rt-1");
    enqueue(ctl, "rt-2", 101, &e);   /* identical work in flight: merged */
    assert_true(e.merged);
    assert_string_equal(e.job_id, "rt-1");
    cv_diag d;
    cv_diag_init(&d);
    size_t len;
    char *other = job_text("rt-1", 102, &len);   /* same id, other key: a planner bug */
    assert_int_equal(cv_queue_enqueue(ctl, other, len, NULL, &d), -1);
    assert_int_equal(last_code(&d), 9211);
    free(other);

    cv_lease l;
    assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
    assert_string_equal(l.job.job_id, "rt-1");
    assert_int_equal(l.attempt, 1);
    assert_non_null(strstr(l.msg, "\"attempt\":1"));
    assert_true(l.deadline_ms - l.leased_ms == 60000);
    assert_true(l.enqueued_ms > 0 && l.enqueued_ms <= l.leased_ms);
    cv_lease none;
    assert_int_equal(lease(&none, 300), 0);   /* the merged twin was never produced */
    assert_int_equal(cv_queue_heartbeat(wrk, &l, 30, &d), 0);
    assert_int_equal(complete_ok(wrk, &l, &d), 0);
    assert_int_equal(complete_ok(wrk, &l, &d), -1);   /* exactly once */
    assert_int_equal(last_code(&d), 9206);

    cv_queue_result r[4];
    assert_int_equal(collect(ctl, 1, 10000, r, 4), 1);
    assert_string_equal(r[0].job_id, "rt-1");
    assert_false(r[0].dead_letter);
    assert_int_equal(r[0].attempts, 1);
    cv_result_msg m;
    assert_int_equal(cv_result_msg_decode(r[0].msg, r[0].msg_len, NULL, &m, &d), 0);
    assert_int_equal(m.status, CV_RESULT_OK);
    cv_result_msg_free(&m);
    free_kept(r, 1);
    /* Finished: the same work asked for again runs again. */
    enqueue(ctl, "rt-3", 101, &e);
    assert_false(e.merged);
    assert_int_equal(lease(&none, 5000), 1);
    assert_string_equal(none.job.job_id, "rt-3");
    assert_int_equal(complete_ok(wrk, &none, &d), 0);
    assert_int_equal(collect(ctl, 1, 10000, r, 4), 1);
    free_kept(r, 1);
    cv_queue_stats s = stats(ctl);
    assert_int_equal(s.enqueued, 2);
    assert_int_equal(s.merged, 1);
    assert_int_equal(s.results_pending, 0);
    assert_int_equal(stats(wrk).completed, 2);
    cv_queue_lease_free(&l);
    cv_queue_lease_free(&none);
    cv_diag_free(&d);
}

static void test_release_keeps_attempt(void **state)
{
    (void)state;
    enqueue(ctl, "rel-1", 201, NULL);
    cv_lease l;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
    assert_int_equal(cv_queue_fail(wrk, &l, CV_QUEUE_FAIL_RELEASE, "SIGTERM", &d), 0);
    cv_queue_lease_free(&l);
    assert_int_equal(lease(&l, 5000), 1);
    assert_string_equal(l.job.job_id, "rel-1");
    assert_int_equal(l.attempt, 1);
    assert_int_equal(complete_ok(wrk, &l, &d), 0);
    cv_queue_result r[2];
    assert_int_equal(collect(ctl, 1, 10000, r, 2), 1);
    free_kept(r, 1);
    cv_queue_lease_free(&l);
    cv_diag_free(&d);
}

static void test_retry_then_dead_letter(void **state)
{
    (void)state;
    cv_queue_stats before = stats(ctl), wbefore = stats(wrk);
    enqueue(ctl, "dlq-1", 301, NULL);
    cv_diag d;
    cv_diag_init(&d);
    int64_t failed_at = 0;
    for (int i = 1; i <= 3; i++) {
        cv_lease l;
        char reason[64];
        snprintf(reason, sizeof reason, "cache unreachable (try %d)", i);
        assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
        /* Attempt n+1 waits backoff * 2^(n-1) in its partition. */
        if (i > 1)
            assert_true(mono_ms() - failed_at >= (BACKOFF_MS << (i - 2)) - 5);
        assert_string_equal(l.job.job_id, "dlq-1");
        assert_int_equal(l.attempt, i);   /* re-produced with attempt+1 */
        assert_int_equal(l.job.attempt, i);
        failed_at = mono_ms();
        assert_int_equal(cv_queue_fail(wrk, &l, CV_QUEUE_FAIL_INFRA, reason, &d), i == 3);
        cv_queue_lease_free(&l);
    }
    cv_queue_result r[2];
    assert_int_equal(collect(ctl, 1, 10000, r, 2), 1);
    assert_string_equal(r[0].job_id, "dlq-1");
    assert_true(r[0].dead_letter);
    assert_int_equal(r[0].attempts, 3);
    cv_result_msg m;
    assert_int_equal(cv_result_msg_decode(r[0].msg, r[0].msg_len, NULL, &m, &d), 0);
    assert_int_equal(m.status, CV_RESULT_INFRA);
    assert_int_equal(cv_diag_get(&m.diags, 1)->code, 9208);
    assert_non_null(strstr(cv_diag_get(&m.diags, 1)->msg, "after 3 attempts: cache unreachable (try 3)"));
    cv_result_msg_free(&m);
    free_kept(r, 1);
    assert_int_equal(stats(ctl).dead_letters, before.dead_letters + 1);
    assert_int_equal(stats(wrk).retried, wbefore.retried + 2);
    cv_lease none;
    assert_int_equal(lease(&none, 300), 0);
    cv_diag_free(&d);
}

static void test_poison_never_blocks(void **state)
{
    (void)state;
    cv_queue_stats before = stats(ctl);
    char key[65];
    snprintf(key, sizeof key, "%064x", 401u);
    /* Damaged messages ahead of a good job on the same partition (same key). */
    produce_raw("solo.jobs", key, "not json", NULL);
    produce_raw("solo.jobs", key, "{}", "many");
    enqueue(ctl, "after-poison", 401, NULL);
    cv_lease l;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
    assert_string_equal(l.job.job_id, "after-poison");
    assert_int_equal(complete_ok(wrk, &l, &d), 0);
    cv_queue_result r[4];
    assert_int_equal(collect(ctl, 3, 10000, r, 4), 3);
    int dead = 0;
    for (int i = 0; i < 3; i++)
        if (r[i].dead_letter) {
            dead++;
            assert_non_null(strstr(r[i].msg, "CV9212"));
            assert_non_null(strstr(r[i].job_id, "unknown@solo.jobs/"));
        } else {
            assert_string_equal(r[i].job_id, "after-poison");
        }
    assert_int_equal(dead, 2);
    free_kept(r, 3);
    assert_int_equal(stats(ctl).dead_letters, before.dead_letters + 2);
    cv_queue_lease_free(&l);
    cv_diag_free(&d);
}

static void test_duplicate_result_dropped(void **state)
{
    (void)state;
    enqueue(ctl, "dup-1", 501, NULL);
    cv_lease l;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
    assert_int_equal(complete_ok(wrk, &l, &d), 0);
    /* A second execution's result, as when a worker dies between producing
     * its result and committing the job's offset. */
    size_t len;
    char *again = result_text("dup-1", &len);
    produce_raw("solo.results", "dup-1", again, "2");
    free(again);
    produce_raw("solo.results", "x", "{\"job_id\":", NULL);   /* damaged: skipped */
    int64_t dups = stats(ctl).duplicates;
    cv_queue_result r[4];
    assert_int_equal(collect(ctl, 2, 800, r, 4), 1);
    assert_string_equal(r[0].job_id, "dup-1");
    free_kept(r, 1);
    assert_int_equal(stats(ctl).duplicates, dups + 1);
    cv_queue_lease_free(&l);
    cv_diag_free(&d);
}

/* A compile longer than max.poll.interval.ms: heartbeats keep polling, the
 * partition stays paused, the group never rebalances, nothing runs twice. */
static void test_long_lease_no_duplicate(void **state)
{
    (void)state;
    enqueue(ctl, "long-1", 601, NULL);
    cv_lease l, none;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(lease(&l, JOIN_WAIT_MS), 1);
    int64_t end = mono_ms() + MAX_POLL_MS + 1000;
    while (mono_ms() < end) {
        sleep_ms(250);
        assert_int_equal(cv_queue_heartbeat(wrk, &l, 60, &d), 0);
    }
    assert_int_equal(lease(&none, 200), 0);
    assert_int_equal(complete_ok(wrk, &l, &d), 0);
    assert_int_equal(lease(&none, 500), 0);
    cv_queue_result r[2];
    assert_int_equal(collect(ctl, 2, 500, r, 2), 1);
    free_kept(r, 1);
    cv_queue_stats s = stats(wrk);
    assert_int_equal(s.expired, 0);
    assert_int_equal(s.duplicates, 0);
    cv_queue_lease_free(&l);
    cv_diag_free(&d);
}

/* Reads "done ID" lines of a worker into counts; returns lines read. */
static int drain_lines(cv_child *c, int *done_by, int n_jobs, const char *prefix, int ms)
{
    int n = 0;
    const char *line;
    size_t plen = strlen(prefix);
    while ((line = cv_child_line(c, ms))) {
        ms = 0;
        int id;
        if (strncmp(line, "done ", 5) == 0 && strncmp(line + 5, prefix, plen) == 0 &&
            sscanf(line + 5 + plen, "%d", &id) == 1 && id >= 0 && id < n_jobs)
            done_by[id]++;
        n++;
    }
    return n;
}

static void test_two_workers_split(void **state)
{
    (void)state;
    enum { JOBS = 40 };
    char url[2048];
    url_for(url, sizeof url, "split", NULL);
    cv_child w[2];
    spawn_worker(&w[0], url, "drain", "split-a");
    spawn_worker(&w[1], url, "drain", "split-b");
    wait_ready(&w[0]);
    wait_ready(&w[1]);
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_queue_open(url, NULL, &q, &d), 0);
    for (int i = 0; i < JOBS; i++) {
        char id[32];
        snprintf(id, sizeof id, "s-%d", i);
        enqueue(q, id, 1000u + (unsigned)i, NULL);
    }
    cv_queue_result r[JOBS + 8];
    int got = collect(q, JOBS, 30000, r, JOBS + 8);
    assert_int_equal(got, JOBS);
    int seen[JOBS] = {0};
    for (int i = 0; i < got; i++) {
        int id = -1;
        assert_int_equal(sscanf(r[i].job_id, "s-%d", &id), 1);
        assert_true(id >= 0 && id < JOBS);
        seen[id]++;
    }
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(seen[i], 1);
    free_kept(r, got);
    int by[2][JOBS] = {{0}}, total[2] = {0};
    for (int k = 0; k < 2; k++) {
        drain_lines(&w[k], by[k], JOBS, "s-", 200);
        for (int i = 0; i < JOBS; i++)
            total[k] += by[k][i];
    }
    assert_int_equal(cv_child_stop_all(w, 2, 0, NULL), 0);
    print_message("  40 jobs split %d/%d between the two worker processes\n", total[0], total[1]);
    assert_true(total[0] > 0 && total[1] > 0);
    assert_int_equal(total[0] + total[1], JOBS);
    assert_int_equal(stats(q).duplicates, 0);
    cv_queue_close(q);
    cv_diag_free(&d);
}

static void test_sigkill_moves_partition(void **state)
{
    (void)state;
    enum { JOBS = 12 };
    char url[2048];
    url_for(url, sizeof url, "kill", NULL);
    cv_child holder, survivor;
    spawn_worker(&holder, url, "hold", "kill-holder");
    spawn_worker(&survivor, url, "drain", "kill-survivor");
    wait_ready(&holder);
    wait_ready(&survivor);
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_queue_open(url, NULL, &q, &d), 0);
    for (int i = 0; i < JOBS; i++) {
        char id[32];
        snprintf(id, sizeof id, "k-%d", i);
        enqueue(q, id, 2000u + (unsigned)i, NULL);
    }
    const char *line = cv_child_line(&holder, JOIN_WAIT_MS);
    assert_non_null(line);
    int held = -1;
    assert_int_equal(sscanf(line, "leased k-%d", &held), 1);
    int64_t t0 = mono_ms();
    int st;
    assert_int_equal(cv_child_stop_all(&holder, 1, SIGKILL, &st), 0);   /* mid-compile */
    assert_true(WIFSIGNALED(st));
    cv_queue_result r[JOBS + 8];
    int got = collect(q, JOBS, 30000, r, JOBS + 8);
    print_message("  all %d results %lld ms after the kill\n", got, (long long)(mono_ms() - t0));
    assert_int_equal(got, JOBS);
    int seen[JOBS] = {0};
    for (int i = 0; i < got; i++) {
        int id = -1;
        assert_int_equal(sscanf(r[i].job_id, "k-%d", &id), 1);
        seen[id]++;
    }
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(seen[i], 1);
    free_kept(r, got);
    int by[JOBS] = {0};
    drain_lines(&survivor, by, JOBS, "k-", 200);
    assert_int_equal(by[held], 1);   /* the killed worker's job was redone */
    assert_int_equal(cv_child_stop_all(&survivor, 1, 0, NULL), 0);
    cv_queue_close(q);
    cv_diag_free(&d);
}

int main(int argc, char **argv)
{
    if (!getenv("CUVIL_LOG"))   /* refused connections etc. are the point of some tests */
        cv_log_level_set(CV_LOG_ERROR);
    if (argc == 5 && strcmp(argv[1], "--worker") == 0)
        return worker_main(argv[2], argv[3], argv[4]);
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_round_trip_and_merge),
        cmocka_unit_test(test_release_keeps_attempt),
        cmocka_unit_test(test_retry_then_dead_letter),
        cmocka_unit_test(test_poison_never_blocks),
        cmocka_unit_test(test_duplicate_result_dropped),
        cmocka_unit_test(test_long_lease_no_duplicate),
        cmocka_unit_test(test_two_workers_split),
        cmocka_unit_test(test_sigkill_moves_partition),
    };
    return cmocka_run_group_tests(tests, start_cluster, stop_cluster);
}
