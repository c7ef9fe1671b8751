/* The worker: the loop that runs farm jobs.
 *
 *  compile    each job compiles through compile/build.h (cv_build).
 *  loop       cv_worker_run: lease a job, run it in a forked child with a
 *             wall-clock timeout and rlimits, heartbeat the lease, report
 *             the result (ok | failed | ice | timeout | oom | infra).
 *
 * Diagnostic codes: CV4401, CV9301-CV9319. */
#ifndef CV_WORKER_H
#define CV_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "compile/build.h"
#include "compiler-core/cuvil.h"

/* ============================================================ worker */

/* Test-only faults provoked in the compile child (CUVIL_TEST_FAULT, read
 * only when the worker allows test faults). */
typedef enum {
    CV_FAULT_NONE, CV_FAULT_SEGV, CV_FAULT_HANG, CV_FAULT_OOM, CV_FAULT_ABORT
} cv_test_fault;
/* "segv", "hang", "oom", "abort" -> fault; -1 when unknown. */
int cv_test_fault_parse(const char *s);

/* Where a job's model comes from.  Runs in the job's child.  Fills *path
 * (malloc'd) with a readable model file; the worker checks its digest
 * against the job's.  Returns 0, or -1 with a diagnostic (an infra error). */
typedef int (*cv_worker_fetch_fn)(void *ctx, const cv_job_msg *job, char **path, cv_diag *d);

typedef struct cv_worker_opts {
    const char *queue_url;      /* "sqlite:PATH" ... (queue/queue.h) */
    cv_queue_opts queue_opts;
    const char *cache_dir;      /* NULL: $CUVIL_CACHE_DIR or ~/.cache/cuvil */
    const char *remote_cache;   /* NULL: $CUVIL_REMOTE_CACHE; "" = none */
    /* Ed25519 PEM files: action entries PUT to the remote are signed, ones
     * read from it must carry a good signature (cv_cache_options);
     * NULL: $CUVIL_REMOTE_CACHE_SIGNING_KEY / _VERIFY_KEY. */
    const char *sign_key, *verify_key;
    const char *models_dir;     /* jobs' model_path are relative to it; NULL = "." */
    const char *trees_dir;      /* instead: relative to trees_dir/<commit of the revision> */
    cv_worker_fetch_fn fetch;   /* NULL: models_dir/model_path */
    void *fetch_ctx;
    const char *scratch_dir;    /* per-job output dirs; NULL = $TMPDIR or /tmp */
    const char *worker_id;      /* NULL: "<host>:<pid>" */
    int lease_s;                /* 0 = 30; heartbeats every third of it */
    int poll_ms;                /* how long one lease call waits; 0 = 1000 */
    int64_t job_timeout_ms;     /* wall clock per job; 0 = 600 s */
    uint64_t memory_limit;      /* address space a job may add (RLIMIT_AS); 0 = none */
    int cpu_limit_s;            /* RLIMIT_CPU per job; 0 = twice the timeout */
    int64_t grace_ms;           /* after a stop request, how long the running job may
                                   still take before it is killed and released; 0 = 30 s */
    int max_jobs;               /* stop after this many jobs; 0 = no limit */
    bool once;                  /* stop when no job is ready */
    bool allow_test_faults;     /* honour CUVIL_TEST_FAULT in the compile child */
    bool no_explain;            /* don't name each cache miss's cause (cv_build_opts.explain:
                                   a scan of the stored key manifests per miss) */
    /* The worker's own command line (NULL-terminated; [0] is the program
     * executed, `cuvil worker` gives /proc/self/exe).  When set, each job
     * runs in a fresh image of this program, `self_argv... --job-child
     * DIR`, which calls cv_worker_job_child: needed once the worker has
     * threads (the Kafka client's), which a bare fork would leave holding
     * locks in the child.  NULL: the forked child compiles directly. */
    char *const *self_argv;
} cv_worker_opts;

typedef struct cv_worker_stats {
    int jobs;                            /* leased and finished one way or another */
    int by_status[CV_RESULT__COUNT];     /* results completed, by status */
    int released, lost, errors;          /* handed back, lease lost, queue errors */
} cv_worker_stats;

/* Runs until stopped (cv_worker_request_stop), o->once finds the queue
 * empty, or o->max_jobs are done.  Returns 0, or -1 when the queue cannot
 * be used at all. */
int cv_worker_run(const cv_worker_opts *o, cv_worker_stats *st, cv_diag *d);

/* The job child of a worker given self_argv: runs the job that worker
 * left in dir with the options it was started with (o), writes the result
 * to CV_WORKER_REPORT_FD, and returns the exit status. */
int cv_worker_job_child(const cv_worker_opts *o, const char *dir);
#define CV_WORKER_REPORT_FD 3
/* The syncer of such a worker: fsyncs the cache files named in list (one
 * path a line); 0, or 1 when a sync failed (logged). */
int cv_worker_sync_child(const char *list);

/* Async-signal-safe: asks the running loop to finish or release its job
 * and return. */
void cv_worker_request_stop(void);
/* Installs SIGTERM and SIGINT handlers that call cv_worker_request_stop
 * (a second signal kills the running job at once). */
int cv_worker_handle_signals(void);

#endif
