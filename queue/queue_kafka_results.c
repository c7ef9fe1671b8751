/* The controller's side of the Kafka queue: reading the results topic and
 * the queue's figures.
 *
 * The results topic has one partition, read by manual assignment (no group
 * rebalances, no join delay) from the results group's committed offset; a
 * result's seq is its offset + 1, so the cursor survives restarts.  Acks
 * commit that offset.  Duplicates (a job run twice because a worker died
 * after producing its result but before committing the job's offset) are
 * dropped here by job id and counted: the controller sees one result per
 * job.  Results that do not decode are skipped with a warning, so a damaged
 * message cannot stall the stream. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "queue/queue_kafka_internal.h"

#define BUFFERED_MAX (2 * CV_QUEUE_POLL_MAX)   /* results read ahead of the acks */

static kq_queue *kq(cv_queue *q) { return (kq_queue *)q; }

static int make_reader(kq_queue *q, cv_diag *d)
{
    if (q->reader)
        return 0;
    /* A short fetch wait: results are what the controller waits for. */
    const char *const defaults[] = {"auto.offset.reset", "earliest", "fetch.wait.max.ms", "100",
                                    "allow.auto.create.topics", "false", NULL};
    const char *const fixed[] = {"group.id", q->url.results_group, "enable.auto.commit", "false",
                                 "enable.auto.offset.store", "false", "enable.partition.eof",
                                 "false", NULL};
    rd_kafka_conf_t *c = cv_kq_conf_new(&q->url, defaults, fixed, d);
    if (!c)
        return -1;
    char err[512];
    q->reader = cv_rdkafka()->new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (!q->reader) {
        cv_rdkafka()->conf_destroy(c);
        cv_diag_error(d, CV_E_KAFKA_CLIENT, (cv_span){0}, "cannot create a Kafka consumer: %s", err);
        return -1;
    }
    cv_rdkafka()->poll_set_consumer(q->reader);
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, q->topic_results, 0)->offset = RD_KAFKA_OFFSET_STORED;
    rd_kafka_resp_err_t e = cv_rdkafka()->assign(q->reader, l);
    cv_rdkafka()->topic_partition_list_destroy(l);
    return e ? cv_kq_error(d, CV_E_KAFKA_CONSUME, "cannot read the results topic", e) : 0;
}

/* Forgets the in-flight entry of a job whose result arrived, so that the
 * next identical job runs again. */
static void settle(kq_queue *q, const char *job_id)
{
    const char *key = cv_kq_map_get(&q->inflight_id, job_id);
    if (!key)
        return;
    const char *holder = cv_kq_map_get(&q->inflight_key, key);
    if (holder && strcmp(holder, job_id) == 0)
        cv_kq_map_del(&q->inflight_key, key);
    cv_kq_map_del(&q->inflight_id, job_id);
}

/* Takes one result message: 1 kept, 0 skipped, -1 out of memory. */
static int take(kq_queue *q, const rd_kafka_message_t *m)
{
    q->read_seq = m->offset + 1;
    cv_result_msg r;
    cv_diag why;
    cv_diag_init(&why);
    int rc = cv_result_msg_decode(m->payload, m->len, "result message", &r, &why);
    if (rc) {
        const cv_diag_entry *e = cv_diag_get(&why, 1);
        cv_log_warn("kafka: CV%d: skipped a malformed result at %s@%lld: CV%04d %s",
                    CV_E_KAFKA_BAD_MESSAGE, q->topic_results, (long long)m->offset, e ? e->code : 0,
                    e ? e->msg : "");
    }
    cv_diag_free(&why);
    if (rc) {
        cv_result_msg_free(&r);
        return 0;
    }
    char job_id[CV_MSG_ID_MAX + 1];
    snprintf(job_id, sizeof job_id, "%s", r.job_id);
    cv_result_msg_free(&r);
    if (cv_kq_seen_has(&q->seen, job_id)) {
        q->totals.duplicates++;
        cv_log_info("kafka: dropped a second result for job '%s'", job_id);
        return 0;
    }
    if (q->n_results == q->cap_results) {
        int cap = q->cap_results ? q->cap_results * 2 : 64;
        kq_result *v = realloc(q->results, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        q->results = v;
        q->cap_results = cap;
    }
    kq_result *out = &q->results[q->n_results];
    out->msg = malloc(m->len + 1);
    if (!out->msg || cv_kq_seen_add(&q->seen, job_id)) {
        free(out->msg);
        return -1;
    }
    memcpy(out->msg, m->payload, m->len);
    out->msg[m->len] = 0;
    out->len = m->len;
    out->seq = m->offset + 1;
    snprintf(out->job_id, sizeof out->job_id, "%s", job_id);
    int64_t v = 1;
    out->attempts = cv_kq_header_int(m, KQ_H_ATTEMPT, 1, CV_MSG_ATTEMPT_MAX, &v) == 1 ? (int)v : 1;
    char dead[4];
    out->dead_letter = cv_kq_header_str(m, KQ_H_DEAD, dead, sizeof dead) == 1;
    q->n_results++;
    settle(q, job_id);
    return 1;
}

static int fill(kq_queue *q, cv_diag *d)
{
    while (q->n_results < BUFFERED_MAX) {
        rd_kafka_message_t *m = cv_rdkafka()->consumer_poll(q->reader, 0);
        if (!m)
            return 0;
        int rc = 0;
        if (m->err)
            cv_log_warn("kafka: results reader: %s", cv_rdkafka_message_errstr(m));
        else
            rc = take(q, m);
        cv_rdkafka()->message_destroy(m);
        if (rc < 0) {
            cv_diag_error(d, CV_E_KAFKA_CONSUME, (cv_span){0}, "out of memory reading results");
            return -1;
        }
    }
    return 0;
}

int cv_kq_poll_results(cv_queue *base, int64_t after_seq, int max, cv_queue_result **out,
                       int *n, cv_diag *d)
{
    kq_queue *q = kq(base);
    if (make_reader(q, d) || fill(q, d))
        return -1;
    int first = 0, k = 0;
    while (first < q->n_results && q->results[first].seq <= after_seq)
        first++;
    int count = q->n_results - first < max ? q->n_results - first : max;
    if (count <= 0)
        return 0;
    *out = calloc((size_t)count, sizeof **out);
    for (; *out && k < count; k++) {
        const kq_result *r = &q->results[first + k];
        cv_queue_result *o = &(*out)[k];
        o->msg = malloc(r->len + 1);
        if (!o->msg)
            break;
        memcpy(o->msg, r->msg, r->len + 1);
        o->msg_len = r->len;
        o->seq = r->seq;
        o->attempts = r->attempts;
        o->dead_letter = r->dead_letter;
        snprintf(o->job_id, sizeof o->job_id, "%s", r->job_id);
    }
    if (k < count) {
        cv_queue_results_free(*out, k);
        *out = NULL;
        cv_diag_error(d, CV_E_KAFKA_CONSUME, (cv_span){0}, "out of memory handing out results");
        return -1;
    }
    *n = count;
    return 0;
}

int cv_kq_ack_results(cv_queue *base, int64_t upto_seq, cv_diag *d)
{
    kq_queue *q = kq(base);
    if (upto_seq > q->read_seq)   /* never past what was read */
        upto_seq = q->read_seq;
    int k = 0;
    while (k < q->n_results && q->results[k].seq <= upto_seq)
        free(q->results[k++].msg);
    memmove(q->results, q->results + k, (size_t)(q->n_results - k) * sizeof *q->results);
    q->n_results -= k;
    if (!q->reader || upto_seq <= 0)
        return 0;
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, q->topic_results, 0)->offset = upto_seq;
    rd_kafka_resp_err_t err = cv_rdkafka()->commit(q->reader, l, 0);
    if (!err)
        err = l->elems[0].err;
    cv_rdkafka()->topic_partition_list_destroy(l);
    return err ? cv_kq_error(d, CV_E_KAFKA_OFFSET, "cannot commit the results cursor", err) : 0;
}

/* ---- figures */

/* A consumer in `group` that never subscribes or assigns: it only reads
 * the group's committed offsets and the topics' watermarks. */
static int make_probe(kq_queue *q, rd_kafka_t **probe, const char *group, cv_diag *d)
{
    if (*probe)
        return 0;
    const char *const fixed[] = {"group.id", group, "enable.auto.commit", "false", NULL};
    rd_kafka_conf_t *c = cv_kq_conf_new(&q->url, NULL, fixed, d);
    if (!c)
        return -1;
    char err[512];
    *probe = cv_rdkafka()->new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (!*probe) {
        cv_rdkafka()->conf_destroy(c);
        cv_diag_error(d, CV_E_KAFKA_CLIENT, (cv_span){0}, "cannot create a Kafka consumer: %s", err);
        return -1;
    }
    return 0;
}

/* Messages in partitions [0, n) of topic not yet consumed by rk's group
 * (all of them when `committed` is false). */
static int backlog(kq_queue *q, rd_kafka_t *rk, const char *topic, int n, bool committed,
                   int64_t *out, cv_diag *d)
{
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        cv_rdkafka()->topic_partition_list_add(l, topic, p);
    rd_kafka_resp_err_t err =
        committed ? cv_rdkafka()->committed(rk, l, q->url.timeout_ms) : RD_KAFKA_RESP_ERR_NO_ERROR;
    *out = 0;
    for (int p = 0; !err && p < n; p++) {
        int64_t lo, hi;
        err = cv_rdkafka()->query_watermark_offsets(rk, topic, p, &lo, &hi, q->url.timeout_ms);
        int64_t from = committed && l->elems[p].offset > lo ? l->elems[p].offset : lo;
        if (!err && hi > from)
            *out += hi - from;
    }
    cv_rdkafka()->topic_partition_list_destroy(l);
    return err ? cv_kq_error(d, CV_E_KAFKA_QUERY, "cannot read Kafka offsets for the queue figures", err)
               : 0;
}

int cv_kq_stats(cv_queue *base, cv_queue_stats *out, cv_diag *d)
{
    kq_queue *q = kq(base);
    cv_queue_stats t = q->totals;
    for (int i = 0; i < q->n_slots; i++)
        t.leased += q->slots[i].serial != 0;
    int64_t unfinished = 0;
    if (make_probe(q, &q->probe, q->url.group, d) ||
        make_probe(q, &q->probe_results, q->url.results_group, d) ||
        backlog(q, q->probe, q->topic_jobs, q->jobs_partitions, true, &unfinished, d) ||
        backlog(q, q->probe_results, q->topic_results, 1, true, &t.results_pending, d) ||
        backlog(q, q->probe, q->topic_dlq, q->dlq_partitions, false, &t.dead_letters, d))
        return -1;
    /* Leases are known only to the handle that holds them. */
    t.queued = unfinished > t.leased ? unfinished - t.leased : 0;
    *out = t;
    return 0;
}

void cv_kq_results_close(kq_queue *q)
{
    for (int i = 0; i < q->n_results; i++)
        free(q->results[i].msg);
    free(q->results);
    q->results = NULL;
    q->n_results = 0;
    if (q->reader) {
        cv_rdkafka()->consumer_close(q->reader);
        cv_rdkafka()->destroy(q->reader);
        q->reader = NULL;
    }
    rd_kafka_t **probes[] = {&q->probe, &q->probe_results};
    for (int i = 0; i < 2; i++)
        if (*probes[i]) {
            cv_rdkafka()->destroy(*probes[i]);
            *probes[i] = NULL;
        }
}
