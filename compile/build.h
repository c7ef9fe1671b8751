/* Compile-with-cache: one model -> one artifact directory through both
 * cache levels (DESIGN.md "Cache keys"), the one place that defines what
 * the L1 and L2 keys contain.  `cuvil compile`, the planner's look-up and
 * the worker all call it.
 *
 *   deps   aux entry: (front end, options, source) -> the files the model
 *          reads (weights, ONNX external data), so the L1 key is known
 *          before any front end runs
 *   L1     (front end, options, source, those files) -> canonical CU-IR
 *          text + symbol-table fingerprint
 *   L2     (IR digest, target, precision, opt level, debug, emit set,
 *          compiler build id, LLVM) -> the artifact's files by digest,
 *          materialised byte-identical
 *
 * Nothing path- or time-dependent enters a key.  The cache (cache/) stores
 * bytes under these keys and knows nothing of models.
 *
 * Diagnostic codes: CV4401, CV9310-CV9312. */
#ifndef CV_COMPILE_BUILD_H
#define CV_COMPILE_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "common/diag.h"
#include "compiler-core/cuvil.h"
#include "queue/jobmsg.h"

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
    const char *cause;          /* on a miss: one word (cv_build_miss_cause); else NULL */
    char key[CV_DIGEST_HEX + 1];/* "" when not computed */
    double ms;                  /* the look-up */
} cv_build_level;

typedef struct cv_build_result {
    cv_build_level l1, l2;
    cv_build_level code;        /* generated code apart from weights: looked up only when
                                   the artifact is compiled (an L2 miss); a hit skips LLVM */
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
 * or "") is used instead when known.  An artifact of the same name made
 * from another model in out_dir is refused (CV5035) unless force.
 * 1 done, 0 not stored, -2 refused, -1 other errors. */
int cv_build_fetch_artifact(cv_cache *c, const char *l2_hex, const char *manifest_hex,
                            const char *out_dir, bool force, cv_diag *d);

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

/* Of the differences between the L2 key manifest `manifest` and the closest
 * stored one: when only weight fields (and the IR digest) differ, "structure
 * unchanged, weights changed (n of m tensors)" into buf, and true. */
bool cv_build_explain_weights(const cv_cache_diffs *diffs, const char *manifest, char *buf,
                              size_t size);
/* A miss's cause as one stable word for counting (compile/miss_cause.c):
 * from the key fields that differ from the closest stored entry
 * ("compiler", "options", "model", "weights"; "evicted" when none differs),
 * or from the cache's own reason ("evicted", "corrupt", "remote_error",
 * "disabled", else "unexplained").  "new": nothing like it was stored. */
const char *cv_build_miss_cause(const cv_cache_diffs *diffs);
const char *cv_build_miss_cause_of(cv_cache_miss_reason r);

/* Whether the code level holds the code the last compile of l2's structure
 * used (the L2 key without its weights): 1 yes, 0 no, -1 error.  For
 * `cuvil cache explain`, which does not compile. */
int cv_build_code_stored(cv_cache *c, const cv_cache_key *l2, cv_diag *d);

/* The planner's cache look-up (controller/planner.h cv_planner_lookup_fn) for a
 * farm whose models are files under models_dir: the job's L2 key from the
 * deps and L1 entries, without running a front end.  A model L1 does not
 * know yet gets a stand-in key (from its L1 key, target, precision and opt
 * level) under which identical jobs still merge, and *hit = false. */
typedef struct cv_build_lookup {
    cv_cache *cache;            /* not owned */
    const char *models_dir;
} cv_build_lookup;
int cv_build_plan_lookup(void *ctx, const cv_job_msg *job, char l2_key[CV_DIGEST_HEX + 1],
                          bool *hit);

/* A farm job's int8 calibration as compile options: its glob relative to
 * root (the revision's files), which it may not leave.  q is zeroed when
 * the job has none; its strings point into job and root. */
void cv_build_job_quant(const cv_job_msg *job, const char *root, cv_quant_opts *q);

#endif
