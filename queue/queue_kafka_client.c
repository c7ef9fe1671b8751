/* Kafka clients for the queue backend: the idempotent producer, topic
 * checks, produce-and-wait-for-the-delivery-report, message headers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_kafka_internal.h"

/* One produced message's fate, filled in by its delivery report. */
typedef struct kq_dr {
    int done;
    rd_kafka_resp_err_t err;
} kq_dr;

/* Runs on the thread that calls cv_rdkafka()->poll(), i.e. inside
 * cv_kq_produce_wait: no locking needed. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    kq_dr *dr = m->_private;
    if (dr) {
        dr->err = m->err;
        dr->done = 1;
    }
}

rd_kafka_t *cv_kq_producer_new(const kq_url *u, cv_diag *d)
{
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", u->timeout_ms);
    /* linger.ms=0: every enqueue waits for its own delivery report, so
     * batching delay would only add latency. */
    const char *const defaults[] = {"linger.ms", "0", "allow.auto.create.topics", "false", NULL};
    const char *const fixed[] = {"enable.idempotence", "true", "message.timeout.ms", timeout,
                                 NULL};
    rd_kafka_conf_t *c = cv_kq_conf_new(u, defaults, fixed, d);
    if (!c)
        return NULL;
    cv_rdkafka()->conf_set_dr_msg_cb(c, on_delivery);
    char err[512];
    rd_kafka_t *rk = cv_rdkafka()->new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    if (!rk) {
        cv_rdkafka()->conf_destroy(c);
        cv_diag_error(d, CV_E_KAFKA_CLIENT, (cv_span){0}, "cannot create a Kafka producer: %s", err);
    }
    return rk;
}

int cv_kq_error(cv_diag *d, int code, const char *what, rd_kafka_resp_err_t err)
{
    cv_diag_error(d, code, (cv_span){0}, "%s: %s (%s)", what, cv_rdkafka()->err2str(err),
                  cv_rdkafka()->err2name(err));
    return -1;
}

int cv_kq_topic_check(rd_kafka_t *rk, const char *topic, int timeout_ms, int *partitions,
                      cv_diag *d)
{
    rd_kafka_topic_t *t = cv_rdkafka()->topic_new(rk, topic, NULL);
    if (!t)
        return cv_kq_error(d, CV_E_KAFKA_CLIENT, "Kafka topic handle", cv_rdkafka()->last_error());
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = cv_rdkafka()->metadata(rk, 0, t, &md, timeout_ms);
    cv_rdkafka()->topic_destroy(t);
    if (err) {
        cv_diag_error(d, CV_E_KAFKA_UNREACHABLE, (cv_span){0},
                      "no Kafka broker answered within %d ms: %s", timeout_ms,
                      cv_rdkafka()->err2str(err));
        return -1;
    }
    int rc = 0;
    if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt < 1) {
        cv_diag_error(d, CV_E_KAFKA_TOPIC, (cv_span){0},
                      "Kafka topic '%s' is not available (%s); create it before starting cuvil "
                      "(see docs/scaling.md)",
                      topic, md->topic_cnt == 1 ? cv_rdkafka()->err2str(md->topics[0].err) : "no answer");
        rc = -1;
    } else {
        *partitions = md->topics[0].partition_cnt;
    }
    cv_rdkafka()->metadata_destroy(md);
    return rc;
}

int cv_kq_produce_wait(rd_kafka_t *producer, kq_msg_out *msgs, int n, cv_diag *d)
{
    kq_dr dr[KQ_BATCH_MAX] = {{0}};
    for (int i = 0; i < n && i < KQ_BATCH_MAX; i++) {
        rd_kafka_resp_err_t err = cv_rdkafka()->producev(
            producer, RD_KAFKA_V_TOPIC(msgs[i].topic),
            RD_KAFKA_V_KEY(msgs[i].key, msgs[i].key_len),
            RD_KAFKA_V_VALUE((void *)msgs[i].value, msgs[i].value_len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(msgs[i].headers),
            RD_KAFKA_V_OPAQUE(&dr[i]), RD_KAFKA_V_END);
        if (err) {   /* not queued: the headers are still ours */
            cv_rdkafka()->headers_destroy(msgs[i].headers);
            dr[i] = (kq_dr){.done = 1, .err = err};
        }
        msgs[i].headers = NULL;
    }
    /* Every queued message gets exactly one report, at the latest after
     * message.timeout.ms, so this loop ends. */
    for (int i = 0; i < n && i < KQ_BATCH_MAX; i++)
        while (!dr[i].done)
            cv_rdkafka()->poll(producer, 10);
    for (int i = 0; i < n && i < KQ_BATCH_MAX; i++) {
        if (!dr[i].err)
            continue;
        char fatal[256];
        if (cv_rdkafka()->fatal_error(producer, fatal, sizeof fatal))
            cv_diag_error(d, CV_E_KAFKA_FATAL, (cv_span){0},
                          "the Kafka producer failed for good: %s; restart the process", fatal);
        else
            cv_diag_error(d, CV_E_KAFKA_DELIVERY_FAILED, (cv_span){0}, "Kafka did not accept a message for "
                          "'%s': %s", msgs[i].topic, cv_rdkafka()->err2str(dr[i].err));
        return -1;
    }
    return 0;
}

void cv_kq_header_set_int(rd_kafka_headers_t *h, const char *name, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    cv_rdkafka()->header_remove(h, name);
    cv_rdkafka()->header_add(h, name, -1, buf, n);
}

rd_kafka_headers_t *cv_kq_headers(const char *job_id, int attempt, int64_t enqueued_ms)
{
    rd_kafka_headers_t *h = cv_rdkafka()->headers_new(6);
    cv_rdkafka()->header_add(h, KQ_H_JOB_ID, -1, job_id, -1);
    cv_kq_header_set_int(h, KQ_H_ATTEMPT, attempt);
    if (enqueued_ms > 0)
        cv_kq_header_set_int(h, KQ_H_ENQUEUED, enqueued_ms);
    return h;
}

static int header(const rd_kafka_message_t *m, const char *name, const char **val, size_t *len)
{
    rd_kafka_headers_t *h;
    const void *v;
    if (cv_rdkafka()->message_headers(m, &h) || cv_rdkafka()->header_get_last(h, name, &v, len))
        return 0;
    *val = v;
    return 1;
}

int cv_kq_header_int(const rd_kafka_message_t *m, const char *name, int64_t min, int64_t max,
                     int64_t *v)
{
    const char *s;
    size_t len;
    if (!header(m, name, &s, &len))
        return 0;
    if (!s || len == 0 || len > 19)
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    if (x < min || x > max)
        return -1;
    *v = x;
    return 1;
}

int cv_kq_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t cap)
{
    const char *s;
    size_t len;
    if (!header(m, name, &s, &len))
        return 0;
    if (!s || len == 0 || len >= cap)
        return -1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return -1;
    memcpy(out, s, len);
    out[len] = 0;
    return 1;
}
