/* The controller: reads CuvilBuildCluster and CuvilPipeline specs from a
 * models repository in git, expands every pipeline into compile jobs
 * (model x target x precision x options), records cache hits at once,
 * queues the rest and keeps the history in the build DB.
 *
 *   specs      YAML documents under cuvil/ in the repository, loaded by
 *              spec/ (spec/spec.h)
 *   git source a bare mirror under the state directory, polled with a
 *              cheap ls-remote, fetched only when the ref moved
 *              (CV6050-CV6069); trees are read without a checkout
 *   build DB   SQLite in WAL mode: revisions, pipelines, jobs with
 *              REAPI-style timestamps, results, artifacts, diagnostics
 *              (CV6070-CV6089)
 *   planner    revision -> jobs; a look-up callback decides cache hits
 *              (CV6090-CV6099)
 *
 * The controller meets the workers only through the queue (queue/queue.h)
 * and the cache. */
#ifndef CV_CONTROLLER_H
#define CV_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One header per subsystem; this one includes them all and declares the
 * controller loop itself. */
#include "common/diag.h"
#include "controller/builddb.h"
#include "controller/cluster_policy.h"
#include "controller/failures.h"
#include "controller/farm.h"
#include "controller/gitsource.h"
#include "controller/http.h"
#include "controller/planner.h"
#include "controller/status.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "spec/spec.h"

/* =========================================================== controller */

/* The controller loop: polls the git source every interval (or at once on
 * a build request), plans each new head, writes its files under
 * state/trees/<commit>/ for the workers, moves results from the queue into
 * the build DB and keeps a heartbeat in the farm status.  Source failures
 * are not fatal: they back off and show in the status.  Codes CV6100-CV6103. */
typedef struct cv_controller cv_controller;   /* opaque */

typedef struct cv_controller_opts {
    const char *repo;           /* local path or URL of the models repository */
    const char *ref;            /* NULL = "main" */
    const char *state_dir;      /* git/, build.db, queue.db, trees/ */
    const char *queue_url;      /* NULL = sqlite:<state_dir>/queue.db */
    int64_t interval_ms;        /* poll interval; 0 = the cluster spec's, else 60 s */
    cv_planner_lookup_fn lookup;   /* NULL: every job is queued */
    void *lookup_ctx;
    /* Told where a revision's files were written, before the planner runs
     * (the look-up reads models from there); may be NULL. */
    void (*lookup_models_dir)(void *lookup_ctx, const char *models_dir);
    cv_queue_clock_fn now_ms;   /* NULL = CLOCK_REALTIME */
    void *clock_ctx;
    const cv_farm_policy *policy;   /* NULL = the defaults: no remote, 600 s, no memory limit */
    /* Limits on a revision's content (0 = CV_GIT_TREE_MAX_ENTRIES and
     * CV_GIT_BLOB_MAX); tests lower them. */
    size_t max_tree_entries, max_blob_bytes;
} cv_controller_opts;

typedef struct cv_step_report {
    bool polled;                /* the source was asked */
    bool source_failed;         /* ... and failed: why in source_error (also in the status) */
    char source_error[512];
    bool planned;               /* a revision new to the build DB was planned */
    char revision[CV_REVISION_MAX + 1];   /* the head after this step; "" before any */
    cv_plan_report plan;        /* valid when planned */
    int results;                /* results recorded */
    int requests;               /* build requests handled */
} cv_step_report;

/* The queue is o->queue_url, else the embedded one: never a spec's.
 * Opening polls the source once to read the head's cluster spec. */
int  cv_controller_open(const cv_controller_opts *o, cv_controller **out, cv_diag *d);
const cv_cluster_settings *cv_controller_cluster(const cv_controller *c);
void cv_controller_close(cv_controller *c);
/* One round: handles build requests, polls when due (force: now), plans a
 * new head, collects results.  -1 only on the farm's own trouble (build DB,
 * queue, the disk); spec errors, errors in the revision's content (its tree,
 * paths and file sizes: the revision fails with the code and the path) and
 * source failures are recorded, not returned. */
int  cv_controller_step(cv_controller *c, bool force_poll, cv_step_report *r, cv_diag *d);
/* How long until the next poll is due, in ms (0 = now). */
int64_t cv_controller_idle_ms(const cv_controller *c);
cv_builddb *cv_controller_db(cv_controller *c);
const char *cv_controller_queue_url(const cv_controller *c);
const char *cv_controller_trees_dir(const cv_controller *c);

#endif
