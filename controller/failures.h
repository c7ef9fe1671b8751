/* The failure classifier behind `cuvil failures` and its JSON. */
#ifndef CV_CONTROLLER_FAILURES_H
#define CV_CONTROLLER_FAILURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "controller/builddb.h"

/* The failure classifier (`cuvil failures`): the broken jobs of a revision
 * grouped by pattern, ranked by the number of jobs each pattern broke.
 *   pattern  the root diagnostic's code and its AST path (DSL) or IR/op
 *            path (CU-IR, ONNX) with names, numbers and positions taken
 *            out: "CV3203 FunctionDef>Assign>Call[cvl.conv2d]".  Failures
 *            that are not the model's fault are named by class and code:
 *            "ice CV9301", "timeout CV9303", "oom CV9305", "infra CV9208",
 *            "flaky ..." (the same job also succeeded at the revision)
 *   roots    errors caused by another (root ids) are folded under it; one
 *            root (model, place) failing for several targets and
 *            precisions is one entry with a count
 *   history  the patterns of each finished revision are stored in the
 *            build DB when it (or a later revision) is first classified,
 *            so that a pattern knows the revision it was first seen at
 * Computed on request from the stored results.  Codes CV6110-CV6129. */
#define CV_PATTERN_MAX 480

typedef enum {
    CV_FAIL_MODEL,      /* errors in the model (result status failed) */
    CV_FAIL_ICE,        /* the compiler crashed or reported an internal error */
    CV_FAIL_TIMEOUT,
    CV_FAIL_OOM,
    CV_FAIL_INFRA,      /* cache, queue, model fetch, disk */
    CV_FAIL_FLAKY,      /* the same job failed and succeeded at one revision */
    CV_FAIL__COUNT
} cv_fail_class;

const char *cv_fail_class_name(cv_fail_class c);   /* "model", "ice", ... */
/* The pattern of a root diagnostic (code 0: none was reported). */
void cv_failure_pattern(cv_fail_class cls, int code, const char *path,
                        char out[CV_PATTERN_MAX + 1]);

/* One root cause: a model and a place in it, and the jobs it broke. */
typedef struct cv_failure_root {
    const char *model;
    const char *file;                /* NULL when the diagnostic has no span */
    int line, col;
    int64_t jobs;
    const char *const *configs;      /* "TARGET PRECISION OPT" of each job, distinct */
    int n_configs;
} cv_failure_root;

typedef struct cv_failure_group {
    const char *pattern;
    cv_fail_class cls;
    int code;                        /* the roots' code; 0 when none was reported */
    int64_t jobs;                    /* jobs broken */
    int64_t derived;                 /* errors folded under its roots */
    const char *first_seen;          /* a revision; this one when new */
    bool is_new;
    const cv_failure_root *roots;    /* by model and place */
    int n_roots;
    const char *const *models, *const *targets;   /* sorted, distinct */
    int n_models, n_targets;
    /* An example: the first root's diagnostic (one entry, with its notes)
     * and one job it broke. */
    const cv_diag *example;
    const char *ex_model, *ex_target, *ex_precision, *ex_opt;
    const char *ex_line;             /* its source line; NULL until sources are attached */
} cv_failure_group;

typedef struct cv_failure_report {
    char revision[CV_REVISION_MAX + 1];
    cv_rev_state state;
    int64_t jobs;                    /* all jobs of the revision */
    int64_t broken;                  /* jobs in at least one group */
    int64_t revision_errors;         /* errors about the revision itself (specs) */
    int n_groups;
    cv_failure_group *groups;        /* most jobs first */
    void *impl;                      /* owned: the memory behind all of the above */
} cv_failure_report;

/* revision: any name cv_builddb_revision_resolve takes (CV6075 if none). */
int  cv_failures_classify(cv_builddb *db, const char *revision, cv_failure_report *out,
                          cv_diag *d);
void cv_failure_report_free(cv_failure_report *r);
/* Registers each example's model source with its diagnostic (so that it
 * prints with the source line and a caret) and sets ex_line, reading the
 * files the controller wrote under trees_dir/<commit>/.  Those go once
 * the revision is old: then the examples stay without. */
void cv_failure_report_attach_sources(cv_failure_report *r, const char *trees_dir);

/* Patterns over a range of revisions, oldest first: jobs broken by each
 * pattern at each revision.  At most CV_TREND_REVISIONS_MAX revisions, the
 * newest (CV6112 warns when older ones are left out). */
#define CV_TREND_REVISIONS_MAX 100

typedef struct cv_failure_trend {
    int n_revisions;
    const char *const *revisions;
    const int64_t *broken;           /* per revision */
    int n_patterns;
    const char *const *patterns;     /* most jobs over the range first */
    const char *const *first_seen;
    const int64_t *jobs;             /* [pattern * n_revisions + revision] */
    void *impl;                      /* owned */
} cv_failure_trend;

int  cv_failures_trend(cv_builddb *db, const char *since, const char *until,
                       cv_failure_trend *out, cv_diag *d);
void cv_failure_trend_free(cv_failure_trend *t);

/* ---- JSON (controller/failures_json.c), shared by `cuvil failures --json`
 * and the HTTP API; each returns a new json_t the caller owns. */
struct json_t;

/* A failure group's diagnostic name and one-line summary (its code's, or
 * its class's when no diagnostic was reported); static strings. */
void cv_failure_group_explain(const cv_failure_group *g, const char **name, const char **summary);
/* The `cuvil compile` line that reproduces a group's example. */
void cv_failure_group_reproduce(const cv_failure_group *g, char *buf, size_t size);
struct json_t *cv_failure_report_json(const cv_failure_report *r, int top);
struct json_t *cv_failure_trend_json(const cv_failure_trend *t);

#endif
