/* The distributed queue backend: jobs, results and dead letters on Kafka.
 *
 * Topics (created beforehand; see docs/scaling.md): <prefix>.jobs (N
 * partitions: N bounds the number of busy workers), <prefix>.results (one
 * partition: its offsets are the controller's cursor), <prefix>.dlq.  Jobs
 * are keyed by l2_key, so identical jobs land on one partition, where the
 * second one finds the first one's artifact in the cache; the producing
 * handle also merges identical jobs that are still in flight.  The attempt
 * count travels in a header; bodies are the jobmsg JSON as enqueued.
 *
 * How the lease interface maps onto a consumer group (the workers'):
 * - lease: a message taken from the stream pauses its partition, so the
 *   consumer keeps polling (heartbeat, wait) without receiving more of that
 *   partition and without exceeding max.poll.interval.ms, however long the
 *   compile runs.  A lease is (serial, offset) within this handle.
 * - complete: the result is produced and its delivery report awaited; only
 *   then is the job's offset stored (enable.auto.offset.store=false) and
 *   committed, and the partition resumed.  A crash before that makes the
 *   group hand the partition, from the committed offset, to another worker:
 *   at-least-once, and the result reader keeps one result per job.
 * - heartbeat: polls the consumer; the lease is lost (CV9206) only when the
 *   group took the partition away (session timeout, rebalance).
 * - fail: infra -> the job is re-produced with attempt+1 (end of its
 *   partition, so nothing waits behind it), then its offset is stored;
 *   after max_attempts, or for a poison message, the job goes to .dlq with
 *   the reason and a dead-letter result goes to .results.  release -> the
 *   message is kept unleased here (partition still paused) and is handed
 *   out again; closing the handle without finishing it hands it to the
 *   partition's next owner.
 * - Every wait for the cluster is bounded by the URL's timeout_ms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "queue/queue_kafka_internal.h"

static kq_queue *kq(cv_queue *q) { return (kq_queue *)q; }

/* ---- partitions and slots */

static void pause_resume(rd_kafka_t *rk, const char *topic, int32_t partition, bool pause)
{
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, topic, partition);
    rd_kafka_resp_err_t err = pause ? cv_rdkafka()->pause_partitions(rk, l)
                                    : cv_rdkafka()->resume_partitions(rk, l);
    if (err || l->elems[0].err)
        cv_log_warn("kafka: cannot %s %s[%d]: %s", pause ? "pause" : "resume", topic, partition,
                    cv_rdkafka()->err2str(err ? err : l->elems[0].err));
    cv_rdkafka()->topic_partition_list_destroy(l);
}

static bool first_of_partition(const kq_queue *q, int i)
{
    for (int j = 0; j < i; j++)
        if (q->slots[j].m->partition == q->slots[i].m->partition)
            return false;
    return true;
}

static void done_key(const rd_kafka_message_t *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d/%lld", (int)m->partition, (long long)m->offset);
}

/* Slot i's job is finished: its offset is stored and committed, the slot
 * removed, and the partition resumed once it has no slot left. */
static void finish_slot(kq_queue *q, int i)
{
    rd_kafka_message_t *m = q->slots[i].m;
    int32_t partition = m->partition;
    int64_t next = m->offset + 1;
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, q->topic_jobs, partition)->offset = next;
    rd_kafka_resp_err_t err = cv_rdkafka()->offsets_store(q->workers, l);
    if (err || l->elems[0].err)   /* revoked meanwhile: the next owner runs it again */
        cv_log_info("kafka: offset of %s[%d]@%lld not stored: %s", q->topic_jobs, (int)partition,
                    (long long)m->offset, cv_rdkafka()->err2str(err ? err : l->elems[0].err));
    else
        cv_rdkafka()->commit(q->workers, NULL, 1);
    cv_rdkafka()->topic_partition_list_destroy(l);
    char key[48];
    done_key(m, key, sizeof key);
    cv_kq_seen_add(&q->done, key);
    cv_rdkafka()->message_destroy(m);
    memmove(&q->slots[i], &q->slots[i + 1], (size_t)(q->n_slots - i - 1) * sizeof q->slots[0]);
    q->n_slots--;
    for (int j = 0; j < q->n_slots; j++)
        if (q->slots[j].m->partition == partition)
            return;
    pause_resume(q->workers, q->topic_jobs, partition, false);
    /* librdkafka 2.0 does not wake a broker thread that went idle when its
     * partitions were paused, so a resumed partition could wait up to a
     * second for its next fetch; a seek to the same position fetches now. */
    l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, q->topic_jobs, partition)->offset = next;
    rd_kafka_error_t *e = cv_rdkafka()->seek_partitions(q->workers, l, 0);
    if (e)
        cv_rdkafka()->error_destroy(e);
    cv_rdkafka()->topic_partition_list_destroy(l);
}

/* The group took these partitions away: whatever we hold of them is
 * someone else's now. */
static void drop_slots(kq_queue *q, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = q->n_slots - 1; i >= 0; i--) {
        for (int k = 0; k < parts->cnt; k++) {
            if (parts->elems[k].partition != q->slots[i].m->partition ||
                strcmp(parts->elems[k].topic, q->topic_jobs) != 0)
                continue;
            if (q->slots[i].serial)
                q->totals.expired++;
            cv_rdkafka()->message_destroy(q->slots[i].m);
            memmove(&q->slots[i], &q->slots[i + 1],
                    (size_t)(q->n_slots - i - 1) * sizeof q->slots[0]);
            q->n_slots--;
            break;
        }
    }
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    kq_queue *q = opaque;
    bool coop = strcmp(cv_rdkafka()->rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t *e = NULL;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        cv_log_info("kafka: %d partition(s) of %s assigned", parts->cnt, q->topic_jobs);
        if (coop)
            e = cv_rdkafka()->incremental_assign(rk, parts);
        else
            cv_rdkafka()->assign(rk, parts);
        /* Pauses are ours; a partition assigned afresh carries none. */
        cv_rdkafka()->resume_partitions(rk, parts);
    } else {
        if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
            cv_log_warn("kafka: rebalance error: %s", cv_rdkafka()->err2str(err));
        cv_log_info("kafka: %d partition(s) of %s revoked", parts->cnt, q->topic_jobs);
        drop_slots(q, parts);
        if (coop)
            e = cv_rdkafka()->incremental_unassign(rk, parts);
        else
            cv_rdkafka()->assign(rk, NULL);
    }
    if (e) {
        cv_log_warn("kafka: rebalance: %s", cv_rdkafka()->error_string(e));
        cv_rdkafka()->error_destroy(e);
    }
}

static int make_consumer(kq_queue *q, cv_diag *d)
{
    if (q->workers)
        return 0;
    /* librdkafka keeps one fetch in flight per broker: a partition resumed
     * after a job waits for the long poll of that broker's idle partitions,
     * so keep the poll short (librdkafka's default is 500 ms). */
    const char *const defaults[] = {"auto.offset.reset", "earliest",
                                    "partition.assignment.strategy", "cooperative-sticky",
                                    "fetch.wait.max.ms", "100", "allow.auto.create.topics",
                                    "false", NULL};
    /* Static membership: a member that dies keeps its partitions until
     * session.timeout.ms; the same worker id joining again takes them back
     * at once instead of costing the group two rebalances (the newcomer's
     * join, then the dead member's expiry).  The instance id is the last
     * pair, so it is left out when the membership is dynamic. */
    const char *const fixed[] = {"group.id", q->url.group, "enable.auto.offset.store", "false",
                                 "enable.auto.commit", "true", "enable.partition.eof", "false",
                                 q->instance[0] ? "group.instance.id" : NULL, q->instance, NULL};
    rd_kafka_conf_t *c = cv_kq_conf_new(&q->url, defaults, fixed, d);
    if (!c)
        return -1;
    cv_rdkafka()->conf_set_rebalance_cb(c, on_rebalance);
    cv_rdkafka()->conf_set_opaque(c, q);
    char err[512];
    q->workers = cv_rdkafka()->new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (!q->workers) {
        cv_rdkafka()->conf_destroy(c);
        cv_diag_error(d, CV_E_KAFKA_CLIENT, (cv_span){0}, "cannot create a Kafka consumer: %s", err);
        return -1;
    }
    cv_rdkafka()->poll_set_consumer(q->workers);
    rd_kafka_topic_partition_list_t *l = cv_rdkafka()->topic_partition_list_new(1);
    cv_rdkafka()->topic_partition_list_add(l, q->topic_jobs, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = cv_rdkafka()->subscribe(q->workers, l);
    cv_rdkafka()->topic_partition_list_destroy(l);
    if (!e)
        return 0;
    cv_rdkafka()->destroy(q->workers);   /* the next lease tries again */
    q->workers = NULL;
    return cv_kq_error(d, CV_E_KAFKA_CONSUME, "cannot join the Kafka worker group", e);
}

/* Takes the message into a slot and pauses its partition. */
static int add_slot(kq_queue *q, rd_kafka_message_t *m)
{
    if (q->n_slots == q->cap_slots) {
        int cap = q->cap_slots ? q->cap_slots * 2 : 16;
        kq_slot *v = realloc(q->slots, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        q->slots = v;
        q->cap_slots = cap;
    }
    kq_slot *s = &q->slots[q->n_slots++];
    memset(s, 0, sizeof *s);
    s->m = m;
    int64_t v = 1;
    s->attempt = cv_kq_header_int(m, KQ_H_ATTEMPT, 1, CV_MSG_ATTEMPT_MAX, &v) < 0 ? -1 : (int)v;
    if (cv_kq_header_int(m, KQ_H_ENQUEUED, 0, INT64_MAX, &s->enqueued_ms) != 1) {
        int64_t ts = cv_rdkafka()->message_timestamp(m, NULL);
        s->enqueued_ms = ts > 0 ? ts : 0;
    }
    if (cv_kq_header_int(m, KQ_H_NOT_BEFORE, 0, INT64_MAX, &s->not_before_ms) != 1)
        s->not_before_ms = 0;
    pause_resume(q->workers, q->topic_jobs, m->partition, true);
    return 0;
}

/* Serves the consumer (rebalances, group liveness) and moves what it
 * delivers into slots.  Waits up to wait_ms for the first event. */
static int pump(kq_queue *q, int wait_ms, cv_diag *d)
{
    for (int i = 0; i < 1000; i++, wait_ms = 0) {
        rd_kafka_message_t *m = cv_rdkafka()->consumer_poll(q->workers, wait_ms);
        if (!m)
            return 0;
        if (!m->err) {
            if (add_slot(q, m) == 0)
                continue;
            cv_rdkafka()->message_destroy(m);
            cv_diag_error(d, CV_E_KAFKA_CONSUME, (cv_span){0}, "out of memory holding a job");
            return -1;
        }
        char fatal[256];
        if (cv_rdkafka()->fatal_error(q->workers, fatal, sizeof fatal)) {
            cv_rdkafka()->message_destroy(m);
            cv_diag_error(d, CV_E_KAFKA_FATAL, (cv_span){0}, "the Kafka consumer failed for good: %s",
                          fatal);
            return -1;
        }
        /* Transient (broker down, max.poll.interval exceeded): librdkafka
         * recovers by itself; say so and go on. */
        cv_log_warn("kafka: consumer: %s", cv_rdkafka_message_errstr(m));
        cv_rdkafka()->message_destroy(m);
    }
    return 0;
}

static int find_lease(const kq_queue *q, const cv_lease *l)
{
    for (int i = 0; i < q->n_slots; i++)
        if (q->slots[i].serial && q->slots[i].serial == l->handle &&
            q->slots[i].m->offset == l->generation)
            return i;
    return -1;
}

/* ---- open, close */

static void kq_close(cv_queue *base)
{
    kq_queue *q = kq(base);
    for (int i = 0; i < q->n_slots; i++)   /* unfinished: the partition's next owner runs them */
        cv_rdkafka()->message_destroy(q->slots[i].m);
    q->n_slots = 0;   /* closing revokes: the rebalance callback must find nothing */
    if (q->workers) {
        cv_rdkafka()->consumer_close(q->workers);   /* commits stored offsets, leaves the group */
        cv_rdkafka()->destroy(q->workers);
    }
    cv_kq_results_close(q);
    if (q->producer) {
        cv_rdkafka()->flush(q->producer, q->url.timeout_ms);
        cv_rdkafka()->destroy(q->producer);
    }
    free(q->slots);
    cv_kq_seen_free(&q->done);
    cv_kq_map_free(&q->inflight_key);
    cv_kq_map_free(&q->inflight_id);
    cv_kq_seen_free(&q->seen);
    cv_kq_url_free(&q->url);
    free(q);
}

static int kq_open(const char *target, const cv_queue_opts *opts, cv_queue **out, cv_diag *d)
{
    kq_queue *q = calloc(1, sizeof *q);
    if (!q) {
        cv_diag_error(d, CV_E_KAFKA_CLIENT, (cv_span){0}, "out of memory opening the queue");
        return -1;
    }
    q->base.opts = *opts;
    if (cv_kq_url_parse(target, &q->url, d)) {
        free(q);
        return -1;
    }
    snprintf(q->topic_jobs, sizeof q->topic_jobs, "%s.jobs", q->url.prefix);
    snprintf(q->topic_results, sizeof q->topic_results, "%s.results", q->url.prefix);
    snprintf(q->topic_dlq, sizeof q->topic_dlq, "%s.dlq", q->url.prefix);
    int n_results = 0, n_dlq = 0;
    q->producer = cv_kq_producer_new(&q->url, d);
    int rc = q->producer ? 0 : -1;
    if (rc == 0)
        rc = cv_kq_topic_check(q->producer, q->topic_jobs, q->url.timeout_ms,
                               &q->jobs_partitions, d);
    if (rc == 0)
        rc = cv_kq_topic_check(q->producer, q->topic_results, q->url.timeout_ms, &n_results, d);
    if (rc == 0)
        rc = cv_kq_topic_check(q->producer, q->topic_dlq, q->url.timeout_ms, &n_dlq, d);
    if (rc == 0 && n_results != 1) {
        cv_diag_error(d, CV_E_KAFKA_TOPIC, (cv_span){0},
                      "Kafka topic '%s' has %d partitions; it needs exactly one (its offsets "
                      "are the controller's cursor)", q->topic_results, n_results);
        rc = -1;
    }
    if (rc) {
        kq_close(&q->base);
        return -1;
    }
    q->dlq_partitions = n_dlq;
    *out = &q->base;
    return 0;
}

/* ---- the controller's side: enqueue */

static int kq_enqueue(cv_queue *base, const cv_job_msg *job, const char *msg, size_t len,
                      cv_queue_enq *out, cv_diag *d)
{
    kq_queue *q = kq(base);
    const char *running = cv_kq_map_get(&q->inflight_key, job->l2_key);
    if (running) {
        out->merged = true;
        snprintf(out->job_id, sizeof out->job_id, "%s", running);
        q->totals.merged++;
        return 0;
    }
    if (cv_kq_map_get(&q->inflight_id, job->job_id)) {
        cv_diag_error(d, CV_E_QUEUE_DUPLICATE_JOB, (cv_span){0},
                      "job '%s' is already queued or leased with a different l2_key", job->job_id);
        return -1;
    }
    kq_msg_out m = {.topic = q->topic_jobs, .key = job->l2_key, .key_len = strlen(job->l2_key),
                    .value = msg, .value_len = len,
                    .headers = cv_kq_headers(job->job_id, job->attempt, cv_queue_now_ms(base))};
    if (cv_kq_produce_wait(q->producer, &m, 1, d))
        return -1;
    if (cv_kq_map_put(&q->inflight_key, job->l2_key, job->job_id) ||
        cv_kq_map_put(&q->inflight_id, job->job_id, job->l2_key))
        cv_log_warn("kafka: out of memory: job '%s' will not be merged", job->job_id);
    cv_kq_seen_forget(&q->seen, job->job_id);   /* a new run: its result is news */
    q->totals.enqueued++;
    snprintf(out->job_id, sizeof out->job_id, "%s", job->job_id);
    return 0;
}

/* ---- the workers' side */

/* The job id a dead letter is filed under: the header, else a name for
 * the message's place in the log (a foreign or damaged message). */
static void slot_job_id(const kq_queue *q, const kq_slot *s, char *out, size_t cap)
{
    if (cv_kq_header_str(s->m, KQ_H_JOB_ID, out, cap) != 1)
        snprintf(out, cap, "unknown@%s/%d/%lld", q->topic_jobs, (int)s->m->partition,
                 (long long)s->m->offset);
}

/* Sends slot i's job to the dead-letter topic and its dead-letter result
 * to the results topic, then finishes the slot. */
static int bury(kq_queue *q, int i, int code, const char *reason, cv_diag *d)
{
    kq_slot *s = &q->slots[i];
    char job_id[CV_MSG_ID_MAX + 1];
    slot_job_id(q, s, job_id, sizeof job_id);
    int attempts = s->attempt > 0 ? s->attempt : 1;
    char *res = NULL;
    size_t res_len = 0;
    if (cv_queue_dead_letter_result(job_id, attempts, code, reason, &res, &res_len)) {
        cv_diag_error(d, CV_E_KAFKA_DELIVERY_FAILED, (cv_span){0}, "cannot encode the dead letter of '%s'",
                      job_id);
        return -1;
    }
    rd_kafka_headers_t *dh = cv_kq_headers(job_id, attempts, s->enqueued_ms);
    cv_rdkafka()->header_add(dh, KQ_H_REASON, -1, reason, -1);
    rd_kafka_headers_t *rh = cv_kq_headers(job_id, attempts, 0);
    cv_rdkafka()->header_add(rh, KQ_H_DEAD, -1, "1", 1);
    kq_msg_out m[2] = {
        {.topic = q->topic_dlq, .key = s->m->key, .key_len = s->m->key_len,
         .value = s->m->payload, .value_len = s->m->len, .headers = dh},
        {.topic = q->topic_results, .key = job_id, .key_len = strlen(job_id), .value = res,
         .value_len = res_len, .headers = rh},
    };
    int rc = cv_kq_produce_wait(q->producer, m, 2, d);
    free(res);
    if (rc)
        return -1;
    cv_log_info("kafka: job '%s' dead-lettered after %d attempt(s): %s", job_id, attempts, reason);
    finish_slot(q, i);
    return 1;
}

/* Hands out the first ready slot; 0 when none is ready. */
static int take_slot(kq_queue *q, int lease_seconds, cv_lease *out, cv_diag *d)
{
    int64_t now = cv_queue_now_ms(&q->base);
    for (int i = 0; i < q->n_slots; i++) {
        kq_slot *s = &q->slots[i];
        if (s->serial || !first_of_partition(q, i) || s->not_before_ms > now)
            continue;
        char key[48];
        done_key(s->m, key, sizeof key);
        if (cv_kq_seen_has(&q->done, key)) {   /* redelivered after a rebalance */
            q->totals.duplicates++;
            finish_slot(q, i);
            return take_slot(q, lease_seconds, out, d);
        }
        if (s->attempt < 0) {
            if (bury(q, i, CV_E_QUEUE_POISON_MESSAGE, "malformed " KQ_H_ATTEMPT " header", d) < 0)
                return -1;
            return take_slot(q, lease_seconds, out, d);
        }
        out->msg = malloc(s->m->len + 1);
        if (!out->msg) {
            cv_diag_error(d, CV_E_KAFKA_CONSUME, (cv_span){0}, "out of memory leasing a job");
            return -1;
        }
        if (s->m->len)
            memcpy(out->msg, s->m->payload, s->m->len);
        out->msg[s->m->len] = 0;
        out->msg_len = s->m->len;
        s->serial = ++q->next_serial;
        out->handle = s->serial;
        out->generation = s->m->offset;
        out->attempt = s->attempt;
        out->enqueued_ms = s->enqueued_ms;
        out->leased_ms = now;
        out->deadline_ms = now + (int64_t)lease_seconds * 1000;
        return 1;
    }
    return 0;
}

static int kq_lease(cv_queue *base, const char *worker_id, int lease_seconds, cv_lease *out,
                    cv_diag *d)
{
    kq_queue *q = kq(base);
    if (q->url.static_membership && !q->instance[0])
        cv_kq_instance_id(worker_id, q->instance);
    if (make_consumer(q, d) || pump(q, 0, d))
        return -1;
    return take_slot(q, lease_seconds, out, d);
}

static void kq_wait(cv_queue *base, int ms)
{
    kq_queue *q = kq(base);
    cv_diag scratch;
    cv_diag_init(&scratch);
    if (make_consumer(q, &scratch) == 0)
        pump(q, ms, &scratch);
    else
        cv_log_warn("kafka: %s", scratch.n ? cv_diag_get(&scratch, 1)->msg : "consumer failed");
    cv_diag_free(&scratch);
}

static int held(kq_queue *q, cv_lease *l, cv_diag *d)
{
    if (!q->workers || pump(q, 0, d))
        return q->workers ? -1 : cv_queue_lease_lost(l, d);
    int i = find_lease(q, l);
    return i >= 0 ? i : cv_queue_lease_lost(l, d);
}

static int kq_heartbeat(cv_queue *base, cv_lease *l, int lease_seconds, cv_diag *d)
{
    kq_queue *q = kq(base);
    if (held(q, l, d) < 0)
        return -1;
    l->deadline_ms = cv_queue_now_ms(base) + (int64_t)lease_seconds * 1000;
    return 0;
}

static int kq_complete(cv_queue *base, const cv_lease *l, const char *result, size_t len,
                       cv_diag *d)
{
    kq_queue *q = kq(base);
    int i = held(q, (cv_lease *)l, d);
    if (i < 0)
        return -1;
    kq_msg_out m = {.topic = q->topic_results, .key = l->job.job_id,
                    .key_len = strlen(l->job.job_id), .value = result, .value_len = len,
                    .headers = cv_kq_headers(l->job.job_id, l->attempt, 0)};
    if (cv_kq_produce_wait(q->producer, &m, 1, d))
        return -1;   /* still leased: the caller may retry or fail */
    finish_slot(q, i);
    q->totals.completed++;
    return 0;
}

static int64_t backoff_ms(const cv_queue_opts *o, int attempt)
{
    int shift = attempt > 1 ? attempt - 1 : 0;
    int64_t v = o->retry_backoff_ms << (shift > 16 ? 16 : shift);
    return v > 86400000 ? 86400000 : v;
}

static int retry(kq_queue *q, int i, const char *reason, cv_diag *d)
{
    kq_slot *s = &q->slots[i];
    char job_id[CV_MSG_ID_MAX + 1];
    slot_job_id(q, s, job_id, sizeof job_id);
    rd_kafka_headers_t *h = cv_kq_headers(job_id, s->attempt + 1, s->enqueued_ms);
    int64_t wait = backoff_ms(&q->base.opts, s->attempt);
    if (wait)
        cv_kq_header_set_int(h, KQ_H_NOT_BEFORE, cv_queue_now_ms(&q->base) + wait);
    cv_rdkafka()->header_add(h, KQ_H_REASON, -1, reason, -1);
    kq_msg_out m = {.topic = q->topic_jobs, .key = s->m->key, .key_len = s->m->key_len,
                    .value = s->m->payload, .value_len = s->m->len, .headers = h};
    if (cv_kq_produce_wait(q->producer, &m, 1, d))
        return -1;
    finish_slot(q, i);
    q->totals.retried++;
    return 0;
}

static int kq_fail(cv_queue *base, const cv_lease *l, cv_queue_fail_kind kind,
                   const char *reason, cv_diag *d)
{
    kq_queue *q = kq(base);
    int i = held(q, (cv_lease *)l, d);
    if (i < 0)
        return -1;
    if (kind == CV_QUEUE_FAIL_RELEASE) {
        q->slots[i].serial = 0;   /* handed out again; the partition stays paused */
        return 0;
    }
    if (kind == CV_QUEUE_FAIL_INFRA && q->slots[i].attempt < q->base.opts.max_attempts)
        return retry(q, i, reason, d);
    return bury(q, i, kind == CV_QUEUE_FAIL_POISON ? CV_E_QUEUE_POISON_MESSAGE : CV_E_QUEUE_DEAD_LETTER, reason, d) < 0 ? -1 : 1;
}

/* The group's coordinator notices dead workers and moves their partitions;
 * there is nothing to expire here beyond serving the consumer. */
static int kq_sweep(cv_queue *base, int *n_expired, cv_diag *d)
{
    kq_queue *q = kq(base);
    *n_expired = 0;
    return q->workers ? pump(q, 0, d) : 0;
}

const cv_queue_ops cv_queue_kafka_ops = {
    .scheme = "kafka",
    .open = kq_open,
    .close = kq_close,
    .enqueue = kq_enqueue,
    .lease = kq_lease,
    .wait = kq_wait,
    .heartbeat = kq_heartbeat,
    .complete = kq_complete,
    .fail = kq_fail,
    .sweep = kq_sweep,
    .poll_results = cv_kq_poll_results,
    .ack_results = cv_kq_ack_results,
    .stats = cv_kq_stats,
};
