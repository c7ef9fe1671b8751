/* The planner: a revision's specs -> compile jobs; a look-up callback
 * decides cache hits, misses are queued, everything is recorded in the
 * build DB (CV6090-CV6099). */
#ifndef CV_CONTROLLER_PLANNER_H
#define CV_CONTROLLER_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "controller/builddb.h"
#include "controller/cluster_policy.h"
#include "controller/gitsource.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "spec/spec.h"

/* Computes the job's L2 key into l2_key (64 lowercase hex) and says
 * whether the cache already holds its artifact.  Returns 0, or -1 (then
 * the job is queued under the planner's own key, with a CV6095 warning). */
typedef int (*cv_planner_lookup_fn)(void *ctx, const cv_job_msg *job, char l2_key[65], bool *hit);

typedef struct cv_planner_opts {
    cv_builddb *db;                 /* not owned */
    cv_queue *queue;                /* not owned */
    cv_planner_lookup_fn lookup;    /* NULL: every job is a miss under the planner's key */
    void *lookup_ctx;
    int max_jobs;                   /* per revision; 0 = 100000 */
    size_t max_model_bytes;         /* 0 = CV_GIT_BLOB_MAX */
    cv_queue_clock_fn now_ms;       /* NULL = CLOCK_REALTIME */
    void *clock_ctx;
    /* The operator's policy the revision's cluster spec is checked against
     * (its refusals are stored with the revision); NULL = no check. */
    const cv_farm_policy *policy;
    /* Diagnostics about the revision found before planning (files left out
     * of its tree or of its copy on disk); stored with it, and an error
     * among them fails it.  May be NULL. */
    const cv_diag *tree_diags;
} cv_planner_opts;

typedef struct cv_plan_report {
    int64_t rev_id;
    bool already_planned;           /* the revision was planned before: nothing done */
    bool spec_errors;               /* the specs did not load: no job, revision failed */
    int pipelines, models;          /* models: distinct (pipeline, model) pairs */
    int jobs, hits, queued, merged; /* merged: queued jobs that joined one in flight */
    int hashed, memo_hits;          /* model digests computed vs taken from the memo */
} cv_plan_report;

/* Reads the specs of a tree (cuvil/ *.yaml, *.yml) into s and resolves it. */
int cv_planner_load_specs(const cv_gitsource_tree *tree, cv_spec_set *s, cv_diag *d);
/* Expands every pipeline of the tree's specs into jobs for `revision`,
 * records hits, enqueues misses and records everything in the build DB.
 * Spec errors are not a failure of this call: they are stored with the
 * revision (which is then failed) and reported in d and r->spec_errors. */
int cv_planner_plan(const cv_planner_opts *o, const cv_gitsource_tree *tree, const char *revision,
                    cv_plan_report *r, cv_diag *d);
/* Records a revision whose content could not be planned at all (its tree
 * is unreadable or over the limits): failed, with why (its errors carry
 * the code and the path).  A revision already recorded is left as it is
 * (r->already_planned). */
int cv_planner_fail(const cv_planner_opts *o, const char *revision, const cv_diag *why,
                    cv_plan_report *r, cv_diag *d);
/* Moves finished results from the queue into the build DB and acks them.
 * *n_results may be NULL. */
int cv_planner_collect(const cv_planner_opts *o, int *n_results, cv_diag *d);

#endif
