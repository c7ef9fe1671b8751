/* The worker: compile-with-cache and the loop that runs farm jobs.
 *
 *  build      cv_build: one model -> one artifact directory through both
 *             cache levels (DESIGN.md "Cache keys").  `cuvil compile` and
 *             the worker loop both call it.
 *               deps   aux entry: (front end, options, source) -> the files
 *                      the model reads (weights, ONNX external data), so the
 *                      L1 key is known before any front end runs
 *               L1     (front end, options, source, those files) ->
 *                      canonical CU-IR text + symbol-table fingerprint
 *               L2     (IR digest, target, precision, opt level, debug,
 *                      emit set, compiler build id, LLVM) -> the artifact's
 *                      files by digest, materialised byte-identical
 *             Nothing path- or time-dependent enters a key.
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
#include "compiler-core/cuvil.h"

/* ============================================================ build */

typedef struct cv_build_opts {
    const char *model;          /* the model file (.cuir, .onnx, .cvl.py) */
    const char *target;         /* a -t name; NULL = "native" */
    cv_precision precision;     /* fp32, fp16, bf16, int8 */
    cv_quant_opts quant;        /* int8: calibration, method, --min-sqnr (its precision
                                   field is ignored: .precision decides) */
    cv_opt_level opt_level;     /* O0..O3; Os compiles as O2 (its key stays "Os") */
    bool debug;                 /* keep locations: the IR digest then covers them */
    bool strict;                /* strict verification (a front-end option) */
    bool no_blocked_layout;     /* convolutions stay in the plain layout (compile option) */
    unsigned emit;              /* CV_EMIT_* bits; 0 = CV_EMIT_DEFAULT */
    const char *out_dir;        /* created when missing */
    bool explain;               /* on a miss, name the key fields that differ from the
                                   closest stored entry (scans the stored manifests) */
    bool no_output_on_hit;      /* on an L2 hit only check that the artifact's blobs are
                                   stored (fetching them from the remote if need be);
                                   out_dir stays untouched (the worker: the artifact
                                   lives in the cache) */
    bool scratch_out;           /* out_dir is removed after the build (the worker's): the
                                   cache keeps no file-hash memo rows for its files */
    int max_ops;                /* more ops is CV5012; 0: CV_MAX_COMPILE_OPS */
    const char *name;           /* the artifact's C name (--name); NULL: the model's */
    /* Write over an artifact of the same name made from another model (a
     * different symbol-table fingerprint) in out_dir; without it that is
     * an error (CV5035) and nothing is written. */
    bool force;
} cv_build_opts;

typedef struct cv_build_level {
    cv_cache_outcome outcome;   /* NONE: not looked up (cache off, or L1 failed) */
    char reason[256];           /* on a miss or NONE: why, e.g. "weights changed" */
    char key[CV_DIGEST_HEX + 1];/* "" when not computed */
    double ms;                  /* the look-up */
} cv_build_level;

typedef struct cv_build_result {
    cv_build_level l1, l2;
    char artifact_manifest[CV_DIGEST_HEX + 1]; /* blob digest of the file list; "" = none */
    char ir_digest[CV_DIGEST_HEX + 1];
    char fingerprint[CV_DIGEST_HEX + 1];       /* symbol-table fingerprint */
    char name[128];             /* the artifact's C name */
    bool frontend_ran, compiled;
    cv_compile_info info;       /* valid when compiled */
    /* Milliseconds.  fetch: materialising an L2 hit. */
    double ms_keys, ms_frontend, ms_passes, ms_codegen, ms_upload, ms_fetch, ms_total;
} cv_build_result;

/* Compiles o->model into o->out_dir.  c may be NULL or disabled
 * (CUVIL_CACHE=off, --no-cache): then it is a plain compile.  Cache trouble
 * is a warning, never a failure.  Returns 0, or -1 with errors in d. */
int cv_build(cv_cache *c, const cv_build_opts *o, cv_build_result *r, cv_diag *d);

/* "cache: l1 hit, l2 miss (not found)" into buf. */
void cv_build_cache_line(const cv_build_result *r, char *buf, size_t size);

/* The compiler build id that enters L2 keys: the version and git commit;
 * for a build from a modified tree also the digest of the running binary
 * (a "+dirty" commit alone does not say which code it is). */
const char *cv_build_compiler_id(cv_cache *c);

/* Writes the artifact whose file list has digest manifest_hex (a result's
 * artifact_manifest) into out_dir, byte-identical.  Returns 1 done, 0 when
 * the list or one of its files is no longer stored, -1 on errors in d. */
int cv_build_materialise(cv_cache *c, const char *manifest_hex, const char *out_dir,
                         cv_diag *d);

/* The same for an artifact known by its L2 key; manifest_hex (may be NULL
 * or "") is used instead when known.  1 done, 0 not stored, -1 errors. */
int cv_build_fetch_artifact(cv_cache *c, const char *l2_hex, const char *manifest_hex,
                            const char *out_dir, cv_diag *d);

/* The keys a compile would use, without compiling: the L1 key manifest,
 * and the L2 one when the IR digest is known (an L1 hit, or when
 * run_frontend allows running the front end on an L1 miss).  For the
 * planner's look-up and `cuvil cache explain`.  *l2_hit says whether the
 * artifact is stored (counted as an L2 look-up). */
typedef struct cv_build_keys {
    cv_cache_key l1, l2;        /* owned; l2.manifest NULL when unknown */
    bool have_l2, l1_hit, l2_hit;
} cv_build_keys;
int  cv_build_probe(cv_cache *c, const cv_build_opts *o, bool run_frontend, cv_build_keys *k,
                    cv_diag *d);
void cv_build_keys_free(cv_build_keys *k);

/* The planner's cache look-up (controller.h cv_planner_lookup_fn) for a
 * farm whose models are files under models_dir: the job's L2 key from the
 * deps and L1 entries, without running a front end.  A model L1 does not
 * know yet gets a stand-in key (from its L1 key, target, precision and opt
 * level) under which identical jobs still merge, and *hit = false. */
typedef struct cv_worker_lookup {
    cv_cache *cache;            /* not owned */
    const char *models_dir;
} cv_worker_lookup;
int cv_worker_plan_lookup(void *ctx, const cv_job_msg *job, char l2_key[CV_DIGEST_HEX + 1],
                          bool *hit);

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
    const char *queue_url;      /* "sqlite:PATH" ... (common/queue.h) */
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
    bool explain;               /* explain cache misses (cv_build_opts.explain) */
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

/* Async-signal-safe: asks the running loop to finish or release its job
 * and return. */
void cv_worker_request_stop(void);
/* Installs SIGTERM and SIGINT handlers that call cv_worker_request_stop
 * (a second signal kills the running job at once). */
int cv_worker_handle_signals(void);

#endif
