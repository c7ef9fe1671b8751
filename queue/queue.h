/* The job queue between the controller and the workers, independent of the
 * backend that carries it.  A queue is opened from a URL:
 *
 *   sqlite:PATH  (or sqlite:///abs/path)  embedded: one SQLite file shared by
 *                                         the processes of one machine
 *   kafka://B1:9092,B2:9092?topic_prefix=P   distributed: Kafka topics P.jobs,
 *                                         P.results, P.dlq (queue_kafka.c); any
 *                                         other KEY=VALUE is a librdkafka setting
 *
 * Life of a job: enqueue -> queued -> lease -> leased --complete--> done
 *                                                  \--fail(infra)/expiry--> queued (attempt+1)
 *                                                                           or dead (after max_attempts)
 * Every finished job (done or dead) yields exactly one entry in the result
 * stream, which the controller reads with poll_results and then acks.  A dead
 * letter appears there as a result with status "infra" and a CV9208/CV9212
 * diagnostic naming the reason, so the controller needs only one stream.
 *
 * Delivery is at-least-once: a worker that stops heartbeating loses its
 * lease and the job runs again elsewhere.  Jobs are idempotent (their output
 * is content-addressed), and only the current lease holder can complete, so
 * exactly one result is recorded per execution of a job.
 *
 * A compile error in the model is a *result* (complete with status
 * "failed"), never a fail(): fail() is for the farm's own trouble.
 *
 * Handles are not shared across fork(): each process opens its own.
 * Errors: CV9201-CV9212 (queue), CV9220-CV9230 (Kafka), CV1131-CV1139 (bad
 * messages). */
#ifndef CV_QUEUE_H
#define CV_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/jobmsg.h"

#define CV_QUEUE_WORKER_MAX 256          /* worker ids: visible ASCII */
#define CV_QUEUE_LEASE_MAX_S 86400
#define CV_QUEUE_WAIT_MAX_MS 3600000
#define CV_QUEUE_POLL_MAX 10000          /* results per poll */
#define CV_QUEUE_DEFAULT_ATTEMPTS 3

typedef struct cv_queue cv_queue;

/* Milliseconds since the epoch, comparable across the processes that share a
 * queue.  Tests inject one to expire leases without sleeping. */
typedef int64_t (*cv_queue_clock_fn)(void *ctx);

typedef struct cv_queue_opts {
    int max_attempts;          /* executions before a dead letter; 0 = 3 */
    int busy_timeout_ms;       /* how long to wait for a locked store; 0 = 5000 */
    int64_t retry_backoff_ms;  /* attempt n+1 waits backoff * 2^(n-1) ms; 0 = no wait */
    cv_queue_clock_fn now_ms;  /* NULL = CLOCK_REALTIME */
    void *clock_ctx;           /* not owned */
} cv_queue_opts;

typedef struct cv_queue_enq {
    bool merged;                        /* an identical job (same l2_key) was in flight */
    char job_id[CV_MSG_ID_MAX + 1];     /* the job that will run: this one, or the one merged into */
} cv_queue_enq;

typedef struct cv_lease {
    int64_t handle, generation;  /* backend-defined (SQLite: row id and lease number) */
    int attempt;                 /* 1-based */
    int64_t enqueued_ms, leased_ms, deadline_ms;
    char worker_id[CV_QUEUE_WORKER_MAX + 1];
    cv_job_msg job;              /* owned; job.attempt == attempt */
    char *msg;                   /* owned: the job encoded with that attempt */
    size_t msg_len;
} cv_lease;

typedef enum {
    CV_QUEUE_FAIL_INFRA,    /* farm trouble: retry with attempt+1, dead letter after max_attempts */
    CV_QUEUE_FAIL_RELEASE,  /* hand back unchanged (graceful stop); the attempt does not count */
    CV_QUEUE_FAIL_POISON,   /* the job can never run (undecodable): dead letter now */
} cv_queue_fail_kind;

typedef struct cv_queue_result {
    int64_t seq;                        /* the cursor: strictly increasing */
    char job_id[CV_MSG_ID_MAX + 1];
    int attempts;                       /* executions it took */
    bool dead_letter;
    char *msg;                          /* owned: a result message (jobmsg.h) */
    size_t msg_len;
} cv_queue_result;

typedef struct cv_queue_stats {
    int64_t queued, leased;    /* depth by state */
    int64_t results_pending;   /* finished, not yet acked by the controller */
    int64_t dead_letters;      /* every dead letter ever (kept for inspection) */
    /* Totals since the queue was created. */
    int64_t enqueued, merged, completed, retried, expired;
    /* Deliveries of a job or result seen a second time and dropped (Kafka:
     * at-least-once redelivery; counted by this handle only). */
    int64_t duplicates;
} cv_queue_stats;

int  cv_queue_open(const char *url, const cv_queue_opts *opts, cv_queue **out, cv_diag *d);
void cv_queue_close(cv_queue *q);

/* Validates the job message (cv_job_msg_decode) and queues it, keyed by its
 * l2_key; an identical key already queued or leased is merged (out->merged),
 * never run twice.  out may be NULL. */
int  cv_queue_enqueue(cv_queue *q, const void *msg, size_t len, cv_queue_enq *out, cv_diag *d);

/* Re-queues expired leases, then leases the oldest ready job for
 * lease_seconds.  Waits up to wait_ms for one to appear.  Returns 1 with
 * *out filled (release with cv_queue_lease_free), 0 when there was none
 * (also when a caught signal cut the wait short: the caller looks why). */
int  cv_queue_lease(cv_queue *q, const char *worker_id, int lease_seconds, int wait_ms,
                    cv_lease *out, cv_diag *d);
/* Extends the deadline to now + lease_seconds.  CV9206 if the lease is lost. */
int  cv_queue_heartbeat(cv_queue *q, cv_lease *l, int lease_seconds, cv_diag *d);
/* Records the result (validated; its job_id must be the lease's).  CV9206
 * if the lease was lost: then another execution owns the job. */
int  cv_queue_complete(cv_queue *q, const cv_lease *l, const void *result, size_t len,
                       cv_diag *d);
/* Returns 0 when the job went back to the queue, 1 when it was
 * dead-lettered.  reason (may be NULL) is cut to CV_MSG_STR_MAX bytes. */
int  cv_queue_fail(cv_queue *q, const cv_lease *l, cv_queue_fail_kind kind,
                   const char *reason, cv_diag *d);
void cv_queue_lease_free(cv_lease *l);

/* Re-queues (or dead-letters) expired leases now; *n_expired may be NULL. */
int  cv_queue_sweep(cv_queue *q, int *n_expired, cv_diag *d);

/* Results with seq > after_seq, oldest first, at most max (1..CV_QUEUE_POLL_MAX).
 * *out is a malloc'd array (free with cv_queue_results_free). */
int  cv_queue_poll_results(cv_queue *q, int64_t after_seq, int max, cv_queue_result **out,
                           int *n, cv_diag *d);
/* The controller has stored every result up to upto_seq: forget them. */
int  cv_queue_ack_results(cv_queue *q, int64_t upto_seq, cv_diag *d);
void cv_queue_results_free(cv_queue_result *r, int n);

int  cv_queue_stats_get(cv_queue *q, cv_queue_stats *out, cv_diag *d);

/* A job under lease: who holds it, since when, and until when (each
 * heartbeat of the holder pushes the deadline on). */
typedef struct cv_queue_lease_info {
    char job_id[CV_MSG_ID_MAX + 1];
    char worker_id[CV_QUEUE_WORKER_MAX + 1];
    int attempt;
    int64_t leased_ms, deadline_ms;
} cv_queue_lease_info;

/* The jobs leased now, oldest lease first: up to max into out, *n set.
 * Returns 1, or 0 when the backend cannot tell (Kafka: a partition's
 * assignment is not a job lease), -1 on error. */
int  cv_queue_leases_list(cv_queue *q, cv_queue_lease_info *out, int max, int *n, cv_diag *d);

/* Worker presence: a worker reports itself at start, at each job's start
 * and end, and every few seconds while idle, so that idle and vanished
 * workers can be told apart (a lease shows only a busy one). */
typedef struct cv_queue_worker_info {
    char worker_id[CV_QUEUE_WORKER_MAX + 1];
    char job_id[CV_MSG_ID_MAX + 1];   /* "" while idle */
    int64_t started_ms, beat_ms;      /* the worker's first and latest report */
    int64_t jobs_done;
} cv_queue_worker_info;

/* Records that worker_id is alive, running job_id (NULL: idle); done
 * counts a job it has just finished.  A no-op where the backend keeps no
 * presence (Kafka: the consumer group's own heartbeats stand for it). */
int  cv_queue_worker_beat(cv_queue *q, const char *worker_id, const char *job_id, bool done,
                          cv_diag *d);
/* A worker stopping cleanly removes its record. */
int  cv_queue_worker_leave(cv_queue *q, const char *worker_id, cv_diag *d);
/* Known workers, most recent report first: up to max into out, *n set.
 * Returns 1, 0 when the backend keeps no presence, -1 on error.  Records
 * older than CV_QUEUE_WORKER_FORGET_MS are not listed (a clean stop of any
 * worker deletes them). */
#define CV_QUEUE_WORKER_FORGET_MS (24LL * 3600 * 1000)
int  cv_queue_workers_list(cv_queue *q, cv_queue_worker_info *out, int max, int *n, cv_diag *d);

/* Appends a librdkafka setting given as KEY=VALUE (`--kafka-config`, e.g.
 * sasl.password=...) to a kafka:// URL, percent-encoding the value.  *out
 * is malloc'd.  CV9220 if url is not kafka:// or kv is not KEY=VALUE. */
int  cv_queue_kafka_config_add(const char *url, const char *kv, char **out, cv_diag *d);

/* ---- for backend implementers (queue_sqlite.c, queue_kafka.c) ----------
 * The front end (queue.c) checks arguments and messages, then calls these.
 * A backend's handle embeds struct cv_queue as its first member. */
typedef struct cv_queue_ops {
    const char *scheme;      /* the URL up to ':' */
    /* target: the URL after "scheme:"; opts has its defaults filled in. */
    int  (*open)(const char *target, const cv_queue_opts *opts, cv_queue **out, cv_diag *d);
    void (*close)(cv_queue *q);
    int  (*enqueue)(cv_queue *q, const cv_job_msg *job, const char *msg, size_t len,
                    cv_queue_enq *out, cv_diag *d);
    /* Never blocks.  Returns 1 with handle, generation, attempt, times and
     * msg (the bytes as enqueued, malloc'd) set; 0 when nothing is ready. */
    int  (*lease)(cv_queue *q, const char *worker_id, int lease_seconds, cv_lease *out,
                  cv_diag *d);
    /* Optional: blocks up to ms for work to appear; NULL = the front end sleeps. */
    void (*wait)(cv_queue *q, int ms);
    int  (*heartbeat)(cv_queue *q, cv_lease *l, int lease_seconds, cv_diag *d);
    int  (*complete)(cv_queue *q, const cv_lease *l, const char *result, size_t len,
                     cv_diag *d);
    int  (*fail)(cv_queue *q, const cv_lease *l, cv_queue_fail_kind kind,
                 const char *reason, cv_diag *d);
    int  (*sweep)(cv_queue *q, int *n_expired, cv_diag *d);
    int  (*poll_results)(cv_queue *q, int64_t after_seq, int max, cv_queue_result **out,
                         int *n, cv_diag *d);
    int  (*ack_results)(cv_queue *q, int64_t upto_seq, cv_diag *d);
    int  (*stats)(cv_queue *q, cv_queue_stats *out, cv_diag *d);
    /* Optional (NULL: cannot list): at most max into out, *n counted up. */
    int  (*leases)(cv_queue *q, cv_queue_lease_info *out, int max, int *n, cv_diag *d);
    /* Optional (all three or none): worker presence. */
    int  (*worker_beat)(cv_queue *q, const char *worker_id, const char *job_id, bool done,
                        cv_diag *d);
    int  (*worker_leave)(cv_queue *q, const char *worker_id, cv_diag *d);
    int  (*workers)(cv_queue *q, cv_queue_worker_info *out, int max, int *n, cv_diag *d);
} cv_queue_ops;

struct cv_queue {
    const cv_queue_ops *ops;
    cv_queue_opts opts;      /* defaults filled in */
};

extern const cv_queue_ops cv_queue_sqlite_ops;
extern const cv_queue_ops cv_queue_kafka_ops;

int64_t cv_queue_now_ms(const cv_queue *q);
/* The result message a dead letter leaves in the result stream: status
 * infra, one error diagnostic with `code` (9208 or 9212) and the reason. */
int cv_queue_dead_letter_result(const char *job_id, int attempts, int code, const char *reason,
                                char **msg, size_t *len);
/* Reports CV9206 for l (same words from every backend) and returns -1. */
int cv_queue_lease_lost(const cv_lease *l, cv_diag *d);

#endif
