/* Internal to the failure classifier: the state of one classification
 * (classify.c), which the report and the trends (classify_report.c) read.
 * Everything lives in the arena, except the example diagnostics. */
#ifndef CV_CONTROLLER_CLASSIFY_STATE_H
#define CV_CONTROLLER_CLASSIFY_STATE_H

#include "common/arena.h"
#include "controller/controller.h"

#define CV_CLS_BUCKETS 256

typedef struct cv_cls_job {
    const char *model, *target, *precision, *opt;
    int64_t result_id;
    int attempts;
    cv_fail_class cls;
    bool bad;               /* broken: filed under some pattern */
    bool good;              /* ok or a hit */
} cv_cls_job;

typedef struct cv_cls_root {
    const char *model, *file;
    int line, col;
    int64_t jobs;
    const char **configs;
    int n_configs, cap_configs;
    int last_job;           /* index + 1 of the last job counted */
    int ex_job;             /* the first job it broke */
    int64_t ex_result;      /* ... its result, and the diagnostic there (0: none) */
    int ex_entry;
} cv_cls_root;

typedef struct cv_cls_group {
    cv_failure_group pub;
    cv_cls_root *roots;
    int n_roots, cap_roots;
    const char **targets;
    int cap_targets;
    int last_job;
    struct cv_cls_group *hash_next;
} cv_cls_group;

typedef struct cv_cls {
    cv_builddb *db;         /* not owned */
    cv_diag *d;             /* not owned */
    cv_arena arena;
    cv_cls_job *jobs;
    int n_jobs, cap_jobs;
    cv_cls_group **groups;
    int n_groups, cap_groups;
    cv_cls_group *buckets[CV_CLS_BUCKETS];
    int64_t broken;
    int rc;
} cv_cls;

void cv_cls_init(cv_cls *s, cv_builddb *db, cv_diag *d);
void cv_cls_free(cv_cls *s);
/* Groups the broken jobs of the revision. */
int  cv_cls_run(cv_cls *s, int64_t rev_id);
/* Most jobs first. */
void cv_cls_rank(cv_cls *s);
/* Fills each group's public side (roots, models, targets, example). */
int  cv_cls_finish(cv_cls *s);
/* Arena vector growth: v with room for one more of n (cap updated). */
void *cv_cls_grow(cv_arena *a, void *v, int n, int *cap, size_t elem);

#endif
