/* Internals of the Kafka queue backend (queue_kafka*.c); not for use
 * elsewhere.  See queue_kafka.c for how the queue interface maps onto
 * Kafka topics, consumer groups and offsets. */
#ifndef CV_QUEUE_KAFKA_INTERNAL_H
#define CV_QUEUE_KAFKA_INTERNAL_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/kafkalib.h"
#include "queue/queue.h"

#define KQ_PREFIX_MAX 200          /* topic names stay under Kafka's 249 */
#define KQ_PROPS_MAX 64            /* passed-through librdkafka settings */
#define KQ_SEEN_MAX 65536          /* ids remembered per dedupe generation */

/* Message headers. */
#define KQ_H_ATTEMPT "cuvil-attempt"       /* decimal, 1..CV_MSG_ATTEMPT_MAX */
#define KQ_H_JOB_ID "cuvil-job-id"
#define KQ_H_ENQUEUED "cuvil-enqueued-ms"  /* first enqueue, kept across retries */
#define KQ_H_NOT_BEFORE "cuvil-not-before-ms"   /* retry backoff */
#define KQ_H_REASON "cuvil-reason"         /* dead letters: why */
#define KQ_H_DEAD "cuvil-dead-letter"      /* results: "1" for a dead letter */

/* ---- queue_kafka_map.c: string -> string hash map (open addressing) */
typedef struct kq_map {
    struct kq_entry *v;    /* owned, with every key and value */
    size_t cap, used, live;  /* used counts tombstones too */
} kq_map;
/* Copies key and val; replaces an existing value.  -1 on out-of-memory. */
int cv_kq_map_put(kq_map *m, const char *key, const char *val);
const char *cv_kq_map_get(const kq_map *m, const char *key);
bool cv_kq_map_del(kq_map *m, const char *key);
void cv_kq_map_free(kq_map *m);

/* A bounded set: remembers at least the last KQ_SEEN_MAX keys added. */
typedef struct kq_seen { kq_map cur, old; } kq_seen;
int cv_kq_seen_add(kq_seen *s, const char *key);
bool cv_kq_seen_has(const kq_seen *s, const char *key);
void cv_kq_seen_forget(kq_seen *s, const char *key);
void cv_kq_seen_free(kq_seen *s);

/* ---- queue_kafka_url.c: kafka://BROKERS?topic_prefix=P&KEY=VALUE... */
typedef struct kq_url {
    char *brokers;                    /* owned */
    char prefix[KQ_PREFIX_MAX + 1];
    char *group, *results_group;      /* owned */
    int timeout_ms;                   /* bound on every wait for the cluster */
    bool static_membership;           /* group.instance.id from the worker id */
    char *keys[KQ_PROPS_MAX], *vals[KQ_PROPS_MAX];  /* owned: librdkafka passthrough */
    int n_props;
} kq_url;

int  cv_kq_url_parse(const char *target, kq_url *u, cv_diag *d);
/* The group.instance.id of the worker `worker_id` (static membership): the
 * id itself when it is 1..KQ_INSTANCE_MAX of [A-Za-z0-9._-] (Kafka's rule),
 * else its legal characters, '_' for the others, and a hash of the whole id
 * (so that two ids never share one instance). */
#define KQ_INSTANCE_MAX 200
void cv_kq_instance_id(const char *worker_id, char out[KQ_INSTANCE_MAX + 1]);
void cv_kq_url_free(kq_url *u);
/* A client configuration: the URL's brokers, the log route, `defaults`,
 * the URL's passthrough settings, then `fixed` (each a NULL-terminated list
 * of key, value pairs; may be NULL).  NULL and a CV9221 diagnostic on a
 * rejected setting. */
rd_kafka_conf_t *cv_kq_conf_new(const kq_url *u, const char *const *defaults,
                                const char *const *fixed, cv_diag *d);

/* ---- queue_kafka_client.c: clients, delivery, headers */
#define KQ_BATCH_MAX 4   /* messages produced together by one call */

typedef struct kq_msg_out {
    const char *topic;
    const void *key, *value;
    size_t key_len, value_len;
    rd_kafka_headers_t *headers;   /* ownership passes to the call */
} kq_msg_out;

rd_kafka_t *cv_kq_producer_new(const kq_url *u, cv_diag *d);
/* Checks that `topic` exists; *partitions gets its partition count. */
int  cv_kq_topic_check(rd_kafka_t *rk, const char *topic, int timeout_ms, int *partitions,
                       cv_diag *d);
/* Produces every message, then waits for all their delivery reports: 0 only
 * when each was acknowledged by the cluster. */
int  cv_kq_produce_wait(rd_kafka_t *producer, kq_msg_out *msgs, int n, cv_diag *d);
/* Reports a consumer-side librdkafka error with the given code; returns -1. */
int  cv_kq_error(cv_diag *d, int code, const char *what, rd_kafka_resp_err_t err);

rd_kafka_headers_t *cv_kq_headers(const char *job_id, int attempt, int64_t enqueued_ms);
void cv_kq_header_set_int(rd_kafka_headers_t *h, const char *name, int64_t v);
/* Reads a decimal header into *v: 1 found and valid, 0 absent, -1 malformed. */
int  cv_kq_header_int(const rd_kafka_message_t *m, const char *name, int64_t min, int64_t max,
                      int64_t *v);
/* Copies a visible-ASCII header of at most cap-1 bytes: 1, 0 absent, -1 bad. */
int  cv_kq_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t cap);

/* ---- the handle (queue_kafka.c), shared with queue_kafka_results.c */

/* A message taken from the jobs stream: its partition is paused until it
 * is finished, so each partition has at most one slot. */
typedef struct kq_slot {
    rd_kafka_message_t *m;    /* owned */
    int attempt;
    int64_t serial;           /* 0 = waiting to be leased, else the lease's serial */
    int64_t not_before_ms, enqueued_ms;
} kq_slot;

typedef struct kq_result {
    int64_t seq;
    char job_id[CV_MSG_ID_MAX + 1];
    int attempts;
    bool dead_letter;
    char *msg;      /* owned */
    size_t len;
} kq_result;

typedef struct kq_queue {
    cv_queue base;              /* first: the front end sees a cv_queue */
    kq_url url;                 /* owned */
    char topic_jobs[KQ_PREFIX_MAX + 16], topic_results[KQ_PREFIX_MAX + 16],
        topic_dlq[KQ_PREFIX_MAX + 16];
    int jobs_partitions, dlq_partitions;
    rd_kafka_t *producer;       /* owned */
    rd_kafka_t *workers;        /* owned, made on the first lease: member of the worker group */
    rd_kafka_t *reader;         /* owned, made on the first poll: the results partition */
    rd_kafka_t *probe;          /* owned, made for stats: reads the worker group's offsets */
    rd_kafka_t *probe_results;  /* owned, made for stats: reads the results group's offsets */
    /* Worker side. */
    kq_slot *slots;             /* owned */
    int n_slots, cap_slots;
    int64_t next_serial;
    kq_seen done;               /* "job_id@partition/offset" this handle finished */
    char instance[KQ_INSTANCE_MAX + 1];  /* group.instance.id when static, from the 1st lease */
    /* Controller side. */
    kq_map inflight_key;        /* l2_key -> job_id, until its result is read */
    kq_map inflight_id;         /* job_id -> l2_key */
    kq_seen seen;               /* job ids whose result was handed out */
    kq_result *results;         /* owned: read, not yet acked */
    int n_results, cap_results;
    int64_t read_seq;           /* highest seq read from the results partition */
    cv_queue_stats totals;      /* this handle's counters */
} kq_queue;

/* queue_kafka_results.c */
int  cv_kq_poll_results(cv_queue *q, int64_t after_seq, int max, cv_queue_result **out, int *n,
                        cv_diag *d);
int  cv_kq_ack_results(cv_queue *q, int64_t upto_seq, cv_diag *d);
int  cv_kq_stats(cv_queue *q, cv_queue_stats *out, cv_diag *d);
void cv_kq_results_close(kq_queue *q);

#endif
