/* `cuvil farm`: the controller and its workers on one machine. */
#ifndef CV_CONTROLLER_FARM_H
#define CV_CONTROLLER_FARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "controller/builddb.h"
#include "controller/cluster_policy.h"
#include "controller/planner.h"

/* `cuvil farm up`: the controller and N worker processes on one machine,
 * meeting through the queue (SQLite in the state directory by default).
 * The worker component stays out of controller/: the CLI hands in the
 * planner's look-up and the binary that runs `worker`. */
#define CV_FARM_WORKERS_MAX 64

typedef struct cv_farm_progress {
    const char *revision;
    int64_t jobs, done, hits, failed, pending;
    double elapsed_s;           /* since the revision was planned */
} cv_farm_progress;

typedef struct cv_farm_opts {
    const char *repo;           /* local path or URL of the models repository */
    const char *ref;            /* NULL = "main" */
    const char *state_dir;      /* git/, build.db, queue.db, trees/, scratch/, worker logs */
    const char *queue_url;      /* NULL = sqlite:<state_dir>/queue.db */
    int workers;                /* 0..CV_FARM_WORKERS_MAX (0: workers run elsewhere) */
    const char *worker_exe;     /* the cuvil binary: each worker runs `EXE worker ...` */
    const char *cache_dir;      /* passed to the workers as --cache; NULL = their default */
    cv_farm_policy policy;      /* remotes and limits: the workers' --remote-cache,
                                   --timeout and --memory-limit (cv_cluster_apply) */
    /* Action-cache keys (Ed25519 PEM) the workers sign and verify remote
     * entries with: required when the policy names any remote (see
     * cv_farm_signing_keys); NULL = none. */
    const char *signing_key, *verify_key;
    int64_t interval_ms;        /* long-running: poll interval (0 = spec or 60 s) */
    cv_planner_lookup_fn lookup;   /* NULL: every job is queued */
    void *lookup_ctx;
    void (*lookup_models_dir)(void *lookup_ctx, const char *models_dir);
    /* Called when the counts of the revision being built change, and about
     * once a second; may be NULL. */
    void (*progress)(void *ctx, const cv_farm_progress *p);
    void *progress_ctx;
    /* Long-running: set (from a signal handler) to stop; not owned. */
    volatile int *stop;
} cv_farm_opts;

typedef struct cv_farm_summary {
    char revision[CV_REVISION_MAX + 1];
    bool spec_errors;
    int64_t jobs;
    int64_t plan_hits;          /* found in the cache by the planner: never queued */
    int64_t worker_hits;        /* queued, then an L2 hit in the worker (no codegen) */
    int64_t compiled;           /* ok results the worker had to compile */
    int64_t failed;             /* every result other than ok */
    int64_t pending;            /* left without a result (0 unless farm trouble) */
    double seconds;
} cv_farm_summary;

/* Fetches the head of o->ref, plans it, runs o->workers workers until every
 * job of the revision has a result, records them in the build DB and stops
 * the workers.  Returns 0 when the revision was built (s says whether every
 * job succeeded or hit), -1 on farm trouble (errors in d). */
int cv_farm_once(const cv_farm_opts *o, cv_farm_summary *s, cv_diag *d);
/* Runs the controller and keeps o->workers long-running workers alive
 * (restarting any that exit) until *o->stop; each built revision is
 * reported through on_built (may be NULL).  Source failures are logged and
 * retried.  Returns 0 after a stop, -1 on farm trouble. */
int cv_farm_run(const cv_farm_opts *o,
                void (*on_built)(void *ctx, const cv_farm_summary *s), void *ctx, cv_diag *d);
/* The action-cache key pair of a farm that uses a remote cache: the given
 * PEM files (verify may be NULL: the signing key's public half is used),
 * else STATE/keys/ac-signing.pem and ac-verify.pem, made on first use
 * (0600/0644).  *sign_out and *verify_out are malloc'd.  CV6164 when the
 * keys cannot be made. */
int cv_farm_signing_keys(const char *state_dir, const char *sign, const char *verify,
                         char **sign_out, char **verify_out, cv_diag *d);
/* The counts of a finished or running revision, as cv_farm_once reports
 * them. */
int cv_farm_summarise(cv_builddb *db, const char *revision, cv_farm_summary *s, cv_diag *d);

#endif
