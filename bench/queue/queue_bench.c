/* bench/queue: N jobs through one queue URL.  The controller handle
 * enqueues them all, WORKERS worker processes lease and complete them, the
 * controller reads and acks every result.  Built and run by run.sh.
 *
 *   queue_bench URL N WORKERS  ->  "ENQUEUE_MS TOTAL_MS BYTES_PER_JOB RESULT_BYTES"
 *
 * TOTAL_MS runs from the first enqueue to the last result read.  A warm-up
 * round (20 jobs through the whole path) comes first, so that a Kafka
 * consumer group's join is not timed.  Workers are forked before any
 * handle exists (handles never cross fork()).  WORKERS = 0 only enqueues
 * (ENQUEUE_MS without workers competing for the CPU). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int die(cv_diag *d, const char *what)
{
    fprintf(stderr, "queue_bench: %s\n", what);
    cv_diag_print(d, stderr, false);
    return -1;
}

/* A job as the planner makes them: realistic ids, paths and digests. */
static char *job(int i, size_t *len, cv_diag *d)
{
    char id[128], path[64];
    snprintf(path, sizeof path, "models/vision/m%05d.onnx", i);
    snprintf(id, sizeof id, "main@sha1:0123456789ab/vision/%s/x86_64-avx2/fp32", path);
    cv_job_msg m = {.job_id = id, .revision = "main@sha1:0123456789abcdef0123456789abcdef01234567",
                    .pipeline = "vision", .model_path = path, .target = "x86_64-avx2",
                    .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O2, .attempt = 1};
    snprintf(m.model_digest, sizeof m.model_digest, "%064x", i * 7 + 1);
    snprintf(m.l2_key, sizeof m.l2_key, "%064x", i + 1);
    char *out = NULL;
    return cv_job_msg_encode(&m, &out, len, d) ? NULL : out;
}

static size_t result_bytes;

/* Leases and completes jobs until stop_fd reports EOF. */
static int worker(const char *url, int stop_fd, int k)
{
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_open(url, NULL, &q, &d))
        return die(&d, "worker open") ? 1 : 1;
    char name[32];
    snprintf(name, sizeof name, "bench-%d", k);
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.status = CV_RESULT_OK;
    memset(r.artifact_manifest, 'a', CV_DIGEST_HEX);
    char c;
    while (read(stop_fd, &c, 1) != 0) {
        cv_lease l;
        int rc = cv_queue_lease(q, name, 60, 50, &l, &d);
        if (rc < 0)
            return die(&d, "lease") ? 1 : 1;
        if (rc == 0)
            continue;
        r.job_id = l.job.job_id;
        char *res;
        size_t len;
        if (cv_result_msg_encode(&r, &res, &len, &d) || cv_queue_complete(q, &l, res, len, &d))
            return die(&d, "complete") ? 1 : 1;
        free(res);
        cv_queue_lease_free(&l);
    }
    r.job_id = NULL;
    cv_result_msg_free(&r);
    cv_queue_close(q);
    cv_diag_free(&d);
    return 0;
}

/* Enqueues jobs first..first+n-1, then (if wait) reads results until n
 * arrived; returns the time the enqueueing ended (ms), or -1. */
static double run(cv_queue *q, int first, int n, bool wait, int64_t *cursor, size_t *bytes,
                  cv_diag *d)
{
    for (int i = first; i < first + n; i++) {
        size_t len;
        char *msg = job(i, &len, d);
        if (!msg || cv_queue_enqueue(q, msg, len, NULL, d))
            return die(d, "enqueue");
        *bytes += len;
        free(msg);
    }
    double t = now_ms();
    for (int got = 0; wait && got < n;) {
        cv_queue_result *r;
        int k;
        if (cv_queue_poll_results(q, *cursor, CV_QUEUE_POLL_MAX, &r, &k, d))
            return die(d, "poll");
        for (int i = 0; i < k; i++)
            result_bytes = r[i].msg_len;
        if (k) {
            *cursor = r[k - 1].seq;
            got += k;
            if (cv_queue_ack_results(q, *cursor, d))
                return die(d, "ack");
        } else {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        cv_queue_results_free(r, k);
        if (now_ms() - t > 300000) {
            fprintf(stderr, "queue_bench: timed out with %d/%d results\n", got, n);
            return -1;
        }
    }
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: queue_bench URL N WORKERS\n");
        return 2;
    }
    const char *url = argv[1];
    int n = atoi(argv[2]), workers = atoi(argv[3]), stop[2];
    if (n < 1 || n > 1000000 || workers < 0 || workers > 64 || pipe(stop))
        return 2;
    pid_t pids[64];
    for (int k = 0; k < workers; k++)
        if ((pids[k] = fork()) == 0) {
            close(stop[1]);
            fcntl(stop[0], F_SETFL, O_NONBLOCK);   /* read: -1 while running, 0 = stop */
            _exit(worker(url, stop[0], k));
        }
    close(stop[0]);
    cv_queue *q;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_open(url, NULL, &q, &d))
        return die(&d, "open") ? 1 : 1;
    int64_t cursor = 0;
    size_t bytes = 0;
    if (workers && run(q, 1000000, 20, true, &cursor, &bytes, &d) < 0)
        return 1;
    double t0 = now_ms();
    bytes = 0;
    double t1 = run(q, 0, n, workers > 0, &cursor, &bytes, &d);
    if (t1 < 0)
        return 1;
    double t2 = now_ms();
    close(stop[1]);
    int failed = 0;
    for (int k = 0; k < workers; k++) {
        int st;
        waitpid(pids[k], &st, 0);
        failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    printf("%.1f %.1f %zu %zu\n", t1 - t0, t2 - t0, bytes / (size_t)n, result_bytes);
    cv_queue_close(q);
    cv_diag_free(&d);
    return failed;
}
