/* Internal to worker/: the pieces of cv_build and of the worker loop. */
#ifndef CV_WORKER_INTERNAL_H
#define CV_WORKER_INTERNAL_H

#include <sys/types.h>

#include <jansson.h>
#include <sys/resource.h>

#include "common/strbuf.h"
#include "worker/worker.h"

/* ---- fingerprint.c */

/* sha256 over inputs, outputs, params (name, dtype, shape) and op
 * signatures (name, operand and result types) in order. */
void cv_wk_fingerprint(const cv_module *m, cv_digest *out);

/* ---- onnx_deps.c */

/* The external-data locations an ONNX model names (every TensorProto in
 * its graphs, subgraphs and functions), appended to files (strings,
 * deduplicated).  Returns 0, or -1 when the file is not protobuf. */
int cv_wk_onnx_external_files(const void *buf, size_t len, json_t *files);

/* ---- build_keys.c */

/* A model file's dependencies, with their digests. */
typedef struct cv_wk_deps {
    json_t *files;              /* array of relative names, sorted (owned) */
    cv_cache_named_digest *dg;  /* one per file (owned; names point into files) */
    int n;
} cv_wk_deps;

void cv_wk_deps_free(cv_wk_deps *x);
/* Digests every file of x->files inside model_dir.  1 ok, 0 when one is
 * missing (why in reason), -1 on out-of-memory. */
int cv_wk_deps_digest(cv_cache *c, const char *model_dir, cv_wk_deps *x, char *reason,
                      size_t rsize);

typedef struct cv_wk_source {
    const cv_frontend *fe;
    const char *name;           /* the model file's base name (in DSL locations) */
    char *dir;                  /* owned: the model's directory */
    char options[64];           /* canonical front-end options */
    cv_digest digest;
} cv_wk_source;

int  cv_wk_deps_key(const cv_wk_source *s, cv_cache_key *out, cv_diag *d);
int  cv_wk_l1_key(const cv_wk_source *s, const cv_wk_deps *x, cv_cache_key *out, cv_diag *d);

typedef struct cv_wk_target {
    char triple[64];
    char features[4096];        /* "cpu=<cpu>,<+feature,...>" */
} cv_wk_target;
int  cv_wk_target_describe(const char *name, cv_wk_target *t, cv_diag *d);
const char *cv_wk_llvm_version(void);

typedef struct cv_wk_l2_in {
    cv_digest ir;
    const char *target;
    const cv_wk_target *desc;
    const cv_build_opts *o;
    unsigned emit;
} cv_wk_l2_in;
int  cv_wk_l2_key(cv_cache *c, const cv_wk_l2_in *in, cv_cache_key *out, cv_diag *d);

/* sha256("cuvil-ir/1" || text || (dep name, dep digest)*): what the L2
 * key knows of the program, weights included. */
void cv_wk_ir_digest(const char *text, size_t len, const cv_wk_deps *x, cv_digest *out);

void cv_wk_hex(const cv_digest *dg, char out[CV_DIGEST_HEX + 1]);

/* ---- build_store.c */

/* What L1 stores for a program. */
typedef struct cv_wk_l1_value {
    cv_digest ir_blob;          /* canonical text without locations */
    cv_digest ir, ir_loc;       /* IR digests without / with locations */
    cv_digest fingerprint;
    char name[128];
} cv_wk_l1_value;

char *cv_wk_l1_encode(const cv_wk_l1_value *v);         /* malloc'd JSON */
int   cv_wk_l1_decode(const void *buf, size_t len, cv_wk_l1_value *v);
char *cv_wk_deps_encode(const cv_wk_deps *x);           /* malloc'd JSON */
int   cv_wk_deps_decode(const void *buf, size_t len, cv_wk_deps *x);

/* Stores every file the artifact in dir lists (its manifest.json too) as
 * blobs and returns the file list (canonical JSON, malloc'd) in *list;
 * remember: see cv_cache_put_blob_files. */
int  cv_wk_artifact_store(cv_cache *c, const char *dir, bool remember, char **list,
                          size_t *len, char name[128], cv_diag *d);
/* The file list of an artifact directory without storing anything. */
int  cv_wk_artifact_list(const char *dir, char **list, size_t *len, char name[128],
                         cv_diag *d);
/* Writes the files of a stored list into dir.  1 done, 0 when a blob is
 * missing (why in reason), -1 on a write error (in d). */
int  cv_wk_artifact_materialise(cv_cache *c, const void *list, size_t len, const char *dir,
                                char name[128], char *reason, size_t rsize, cv_diag *d);
/* Same, checking only that every blob is stored (dir NULL is allowed). */
int  cv_wk_artifact_check(cv_cache *c, const void *list, size_t len, char name[128],
                          char *reason, size_t rsize, cv_diag *d);

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
} cv_sb_spec;

int  cv_wk_sandbox_run(const cv_sb_spec *s, cv_sb_outcome *out, cv_diag *d);
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
/* The result message for an outcome: the child's own, or one made from how
 * it ended.  *infra is set when the job should be retried (queue fail). */
int  cv_wk_job_result(const cv_lease *l, const cv_sb_outcome *so, const cv_worker_opts *o,
                      cv_result_msg *res, bool *infra, cv_diag *d);
/* The job's int8 calibration as compile options: its glob relative to root
 * (the revision's files), which it may not leave.  q is zeroed when the job
 * has none; its strings point into job and root. */
void cv_wk_job_quant(const cv_job_msg *job, const char *root, cv_quant_opts *q);

/* ---- syncer.c */

/* The file a compile child leaves in its scratch directory: the paths of
 * the cache files it stored unsynced, one per line. */
#define CV_WK_UNSYNCED ".cuvil-unsynced"

typedef struct cv_wk_sync {
    pid_t pid;                  /* the syncing process */
    bool running;
    char **paths;               /* owned */
    int n;
    char error[256];            /* why the sync failed; empty when it did not */
} cv_wk_sync;

/* Child: ends c's batch without syncing and leaves the paths in dir (or
 * syncs them itself when it cannot).  0, or -1 when a sync failed. */
int  cv_wk_sync_hand_over(cv_cache *c, const char *dir);
/* Worker: syncs the files the child in dir left, in a process of its own:
 * 1 started, 0 nothing (left) to do (s->error says whether an immediate
 * sync failed).  Then _done polls and _finish joins (0, or -1: s->error). */
int  cv_wk_sync_start(cv_wk_sync *s, const char *dir);
bool cv_wk_sync_done(cv_wk_sync *s);
int  cv_wk_sync_finish(cv_wk_sync *s);

#endif
