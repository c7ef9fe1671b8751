/* Internal to worker/: the pieces of the worker loop. */
#ifndef CV_WORKER_INTERNAL_H
#define CV_WORKER_INTERNAL_H

#include <sys/types.h>

#include <jansson.h>
#include <sys/resource.h>

#include "common/strbuf.h"
#include "worker/worker.h"

/* ---- sandbox.c */

typedef enum {
    CV_SB_EXITED,               /* exit status in code */
    CV_SB_SIGNALED,             /* died of signal code on its own */
    CV_SB_TIMEOUT,              /* killed at the wall-clock limit */
    CV_SB_CPU,                  /* killed by RLIMIT_CPU */
    CV_SB_STOPPED,              /* killed because the tick asked for it */
} cv_sb_end;

typedef struct cv_sb_outcome {
    cv_sb_end end;
    int code;                   /* exit status or signal number */
    char *report;               /* owned: what the child wrote to its report pipe */
    size_t report_len;
    char err_tail[2048];        /* the end of its stderr */
    long maxrss_kb;
    bool cgroup_oom;            /* the worker's cgroup counted an OOM kill meanwhile */
    double wall_ms;
    int stop_reason;            /* the tick's non-zero return that stopped it */
} cv_sb_outcome;

typedef struct cv_sb_spec {
    int64_t timeout_ms;         /* wall clock; 0 = none */
    int cpu_limit_s;            /* 0 = none */
    uint64_t memory_limit;      /* added address space; 0 = none */
    int tick_ms;                /* how often tick runs; 0 = never */
    /* Called in the parent every tick_ms (and when a signal interrupts the
     * wait); a non-zero return kills the child (stop_reason). */
    int (*tick)(void *ctx);
    void *tick_ctx;
    /* Runs in the child; writes its report to report_fd.  Its return is the
     * child's exit status. */
    int (*body)(void *ctx, int report_fd);
    void *body_ctx;
    /* Instead of body: the child executes this program, its report pipe
     * on fd CV_WORKER_REPORT_FD.  A parent with threads must use this: a fork
     * copies only the calling thread, and a lock another thread held at
     * that moment (the allocator's, a logger's) stays locked for good in
     * the child.  The program sets its own address-space limit
     * (cv_wk_limit_address_space): it is counted from the new image. */
    const char *exec_path;
    char *const *exec_argv;
} cv_sb_spec;

int  cv_wk_sandbox_run(const cv_sb_spec *s, cv_sb_outcome *out, cv_diag *d);
/* RLIMIT_AS for the calling process: what it uses now plus added. */
void cv_wk_limit_address_space(uint64_t added);
void cv_wk_sandbox_outcome_free(cv_sb_outcome *o);
/* Removes a directory tree without following symlinks. */
int  cv_wk_remove_tree(const char *dir);

/* ---- job.c */

typedef struct cv_wk_job_ctx {
    const cv_worker_opts *o;
    const cv_lease *lease;
    const char *out_dir;        /* the job's scratch directory */
} cv_wk_job_ctx;

/* The child's body: fetch, check, build, write a result message. */
int  cv_wk_job_body(void *ctx, int report_fd);
/* For a worker that runs each job in a fresh image (o->self_argv): writes
 * the job into dir and sets *argv (malloc'd, strings borrowed) to
 * o->self_argv followed by "--job-child" dir. */
int  cv_wk_job_exec_argv(const cv_worker_opts *o, const cv_lease *l, const char *dir,
                         char ***argv, cv_diag *d);
/* self_argv followed by flag and value (malloc'd array, strings borrowed);
 * NULL when out of memory. */
char **cv_wk_self_argv(char *const *self_argv, const char *flag, const char *value);
/* The result message for an outcome: the child's own, or one made from how
 * it ended.  *infra is set when the job should be retried (queue fail). */
int  cv_wk_job_result(const cv_lease *l, const cv_sb_outcome *so, const cv_worker_opts *o,
                      cv_result_msg *res, bool *infra, cv_diag *d);

/* ---- syncer.c */

/* The file a compile child leaves in its scratch directory: the paths of
 * the cache files it stored unsynced, one per line. */
#define CV_WK_UNSYNCED ".cuvil-unsynced"

typedef struct cv_wk_sync {
    pid_t pid;                  /* the syncing process */
    bool running;
    char **paths;               /* owned */
    int n;
    char *list;                 /* owned: the list handed to a --sync-child, or NULL */
    char error[256];            /* why the sync failed; empty when it did not */
} cv_wk_sync;

/* Child: ends c's batch without syncing and leaves the paths in dir (or
 * syncs them itself when it cannot).  0, or -1 when a sync failed. */
int  cv_wk_sync_hand_over(cv_cache *c, const char *dir);
/* Worker: syncs the files the child in dir left, in a process of its own
 * (with self_argv: a fresh image, `--sync-child LIST`, the list moved
 * beside dir, which the worker removes meanwhile): 1 started, 0 nothing (left) to do (s->error says whether an immediate
 * sync failed).  Then _done polls and _finish joins (0, or -1: s->error). */
int  cv_wk_sync_start(cv_wk_sync *s, const char *dir, char *const *self_argv);
bool cv_wk_sync_done(cv_wk_sync *s);
int  cv_wk_sync_finish(cv_wk_sync *s);

#endif
