/* The controller: reads CuvilBuildCluster and CuvilPipeline specs from a
 * models repository in git, expands every pipeline into compile jobs
 * (model x target x precision x options), records cache hits at once,
 * queues the rest and keeps the history in the build DB.
 *
 *   specs      YAML documents under cuvil/ in the repository, validated
 *              field by field (CV6001-CV6039), `extends` resolved
 *   git source a bare mirror under the state directory, polled with a
 *              cheap ls-remote, fetched only when the ref moved
 *              (CV6050-CV6069); trees are read without a checkout
 *   build DB   SQLite in WAL mode: revisions, pipelines, jobs with
 *              REAPI-style timestamps, results, artifacts, diagnostics
 *              (CV6070-CV6089)
 *   planner    revision -> jobs; a look-up callback decides cache hits
 *              (CV6090-CV6099)
 *
 * The controller meets the workers only through the queue (common/queue.h)
 * and the cache. */
#ifndef CV_CONTROLLER_H
#define CV_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"

/* ================================================================ specs */

#define CV_SPEC_API_VERSION "cuvil.dev/v1"
#define CV_SPEC_DIR "cuvil"          /* specs live in cuvil/ *.yaml and *.yml */
#define CV_SPEC_NAME_MAX 63          /* metadata.name: a DNS-1123 label */
#define CV_SPEC_STR_MAX 1024         /* any string value, in bytes */
#define CV_SPEC_LIST_MAX 256         /* items in any list */
#define CV_SPEC_FILES_MAX 256        /* spec files read from one revision */
/* What one spec set (one revision's specs) may hold, whatever the files:
 * their total bytes (CV6062) and YAML nodes (CV1128; one file may use at
 * most CV_YAML_MAX_NODES of them).  About 250 bytes a node: ~100 MB. */
#define CV_SPEC_BYTES_MAX ((size_t)16 << 20)
#define CV_SPEC_NODES_MAX 400000

typedef enum { CV_SPEC_CLUSTER, CV_SPEC_PIPELINE, CV_SPEC__KINDS } cv_spec_kind;
typedef enum { CV_SPEC_QUEUE_EMBEDDED, CV_SPEC_QUEUE_KAFKA } cv_spec_queue_kind;

typedef struct cv_spec_origin {
    const char *file;   /* owned by the spec set */
    int line, col;      /* where the document starts */
} cv_spec_origin;

/* Effective values: every optional field holds its default. */
typedef struct cv_spec_cluster {
    const char *name;
    cv_spec_origin origin;
    struct {
        const char *url, *ref;          /* ref default "main" */
        int64_t interval_ms;            /* default 60 s */
    } source;
    struct {
        int replicas;                   /* default 1 */
        const char *resource_profile;   /* NULL = none */
        int64_t job_timeout_ms;         /* default 600 s */
        bool job_timeout_set;           /* written in the spec (not the default) */
        uint64_t memory_limit;          /* bytes; 0 = no limit */
    } workers;
    struct {
        cv_spec_queue_kind kind;
        const char *brokers, *topic_prefix;  /* kafka only; prefix default "cuvil" */
    } queue;
    struct {
        uint64_t size;                  /* bytes; 0 = the cache's default */
        const char *remote;             /* NULL = none; a URL, or (in a repository's
                                           spec) the name of a remote the operator
                                           allows: cv_cluster_apply */
        bool read_only;
        const char *signing_key_secret; /* Kubernetes only: the Secret with the
                                           action-cache key pair; NULL = none */
    } cache;
    const char *image_registry;         /* NULL = none */
} cv_spec_cluster;

typedef struct cv_spec_pipeline {
    const char *name;
    cv_spec_origin origin;
    const char *extends;                /* NULL = none; the fields below include the bases' */
    const char *const *models;          /* globs */
    int n_models;
    const char *const *targets;
    int n_targets;
    cv_precision precisions[CV_PRECISION__COUNT];
    int n_precisions;
    cv_opt_level opt_level;             /* default O2 */
    const char *calibration_data;       /* glob; NULL = none */
    const char *calibration_method;     /* default "percentile" when data is set */
    const char *canonical;              /* the effective spec as canonical JSON */
} cv_spec_pipeline;

typedef struct cv_spec_set cv_spec_set;   /* opaque; owns everything it hands out */

cv_spec_set *cv_spec_set_new(void);       /* NULL on out-of-memory */
void cv_spec_set_free(cv_spec_set *s);

/* Parses the YAML documents of one file (empty documents are skipped) and
 * validates each on its own.  A context file only helps resolve `extends`
 * (for validating one file of a directory): its errors are not reported and
 * its documents are not part of the result.  Returns -1 when this (non-
 * context) file has errors; its valid documents are kept either way.  A
 * set holds at most CV_SPEC_BYTES_MAX bytes of files (CV6062) and
 * CV_SPEC_NODES_MAX YAML nodes (CV1128), context files included. */
int cv_spec_set_add(cv_spec_set *s, const char *text, size_t len, const char *file, bool context,
                    cv_diag *d);
/* The CV6062 error for spec files of total bytes over CV_SPEC_BYTES_MAX
 * (with file, which may be NULL). */
void cv_spec_too_large(cv_diag *d, const char *file, size_t total);
/* Cross-document checks: unique names, at most one cluster, `extends`
 * (missing bases, cycles) and the merge (lists replace, maps merge), then
 * the fields a pipeline needs after merging.  Call once, after every add. */
int cv_spec_set_resolve(cv_spec_set *s, cv_diag *d);

/* After resolve: the valid, non-context specs.  Pipelines sorted by name. */
const cv_spec_cluster *cv_spec_set_cluster(const cv_spec_set *s);   /* NULL if none */
int cv_spec_set_pipeline_count(const cv_spec_set *s);
const cv_spec_pipeline *cv_spec_set_pipeline(const cv_spec_set *s, int i);
const cv_spec_pipeline *cv_spec_set_find(const cv_spec_set *s, const char *name);

/* `cuvil validate FILE.yaml`: the file's documents, with the other spec
 * files of its directory as context for `extends`.  0, or -1 with errors. */
int cv_spec_validate_file(const char *path, cv_diag *d);
/* Whether a repository path is a spec file (cuvil/NAME.yaml or .yml). */
bool cv_spec_is_spec_path(const char *path);

/* Values as specs write them.  Durations: one or more <digits><unit>
 * (ms s m h), "90s", "1h30m".  Sizes: <digits>[.<digits>][unit] with k M G
 * T P (powers of 1000) or Ki Mi Gi Ti Pi (powers of 1024).  0, or -1. */
int cv_spec_parse_duration(const char *s, int64_t *ms);
int cv_spec_parse_size(const char *s, uint64_t *bytes);
/* The fixed list of target names; NULL-terminated too. */
const char *const *cv_spec_targets(size_t *n);

/* Every field the loader accepts, for checking the JSON Schemas in
 * schemas/ against the loader (tests/unit/test_spec.c).  path: "spec.targets",
 * "spec.targets[]" (list items), "metadata.labels{}" (map values); type:
 * "object" "array" "string" "integer" "boolean"; values: the allowed values
 * of an enumerated string (NULL-terminated) or NULL. */
typedef void (*cv_spec_field_fn)(void *ctx, const char *path, const char *type, bool required,
                                 const char *const *values);
void cv_spec_fields_visit(cv_spec_kind k, cv_spec_field_fn fn, void *ctx);

/* ================================================================ globs */

/* Repository globs: '/'-separated relative paths; `*` and `?` match within
 * one component, `[a-z]`/`[!a-z]` a character class, `\x` a literal x, and
 * a whole component `**` any number of directories.  cv_glob_check returns
 * 0, or -1 with *why (a static string) saying what is wrong. */
int cv_glob_check(const char *pattern, const char **why);
bool cv_glob_match(const char *pattern, const char *path);

/* =========================================================== git source */

#define CV_GIT_HEX 40
#define CV_REVISION_MAX 512          /* "ref@sha1:<40 hex>" */
/* Limits on what a revision's tree may hold (docs/security.md).  Beyond
 * the entry count or the total bytes of its paths, the whole tree is
 * refused (CV6056: the revision fails); a file whose path is unusable is
 * left out of the tree and listed with cv_tree_skipped. */
#define CV_GIT_TREE_MAX_ENTRIES 1000000           /* files and directories */
#define CV_GIT_TREE_MAX_PATH_BYTES ((size_t)256 << 20)
#define CV_GIT_PATH_MAX 4096                      /* buffers that hold a path */
#define CV_GIT_FILE_PATH_MAX 1024                 /* a usable path (CV6060) */
#define CV_GIT_NAME_MAX 255                       /* one path component (CV6060) */
#define CV_GIT_BLOB_MAX ((size_t)2 << 30)         /* one file (CV6055) */

typedef struct cv_gitsource cv_gitsource;   /* opaque */

typedef struct cv_gitsource_opts {
    const char *url;            /* https://, ssh://, git://, file:// URL, scp-like or local path */
    const char *ref;            /* branch, tag or full ref name; NULL = "main" */
    const char *state_dir;      /* the mirror lives in state_dir/git/ */
    int64_t backoff_base_ms;    /* delay after the first failure; 0 = 5000 */
    int64_t backoff_max_ms;     /* 0 = 300000 */
    cv_queue_clock_fn now_ms;   /* NULL = CLOCK_REALTIME */
    void *clock_ctx;            /* not owned */
    size_t max_tree_entries;    /* 0 = CV_GIT_TREE_MAX_ENTRIES (tests lower it) */
} cv_gitsource_opts;

typedef enum {
    CV_GIT_POLL_UNCHANGED = 0,  /* the ref did not move (nothing fetched) */
    CV_GIT_POLL_CHANGED = 1,    /* a new head (fetched, or first seen after opening) */
    CV_GIT_POLL_BACKOFF = 2,    /* skipped: waiting after a failure */
} cv_gitsource_poll_result;

typedef struct cv_gitsource_status {
    char revision[CV_REVISION_MAX + 1];   /* current head; "" before the first success */
    char commit[CV_GIT_HEX + 1];          /* "" likewise */
    int64_t last_poll_ms, last_success_ms, last_change_ms;
    int failures;                         /* consecutive; 0 after a success */
    int64_t next_attempt_ms;              /* 0 when not backing off */
    char last_error[512];                 /* the latest failure (ASCII); kept after recovery */
    uint64_t polls, fetches, errors;      /* totals since open */
} cv_gitsource_status;

/* Opens the mirror of url (making an empty bare repository the first time;
 * the first poll fills it).  Nothing is fetched here. */
int  cv_gitsource_open(const cv_gitsource_opts *o, cv_gitsource **out, cv_diag *d);
void cv_gitsource_close(cv_gitsource *g);
/* Lists the remote's refs; fetches only when the ref moved.  Returns a
 * cv_gitsource_poll_result, or -1 on failure (CV6051/CV6052 in d and in
 * the status; the next attempt waits base * 2^(failures-1), capped).
 * force ignores the back-off (a webhook said the ref moved). */
int  cv_gitsource_poll(cv_gitsource *g, bool force, cv_diag *d);
void cv_gitsource_status_get(const cv_gitsource *g, cv_gitsource_status *out);
const char *cv_gitsource_mirror(const cv_gitsource *g);   /* the bare repository's path */

/* "ref@sha1:<commit>".  format returns -1 if it would not fit. */
int cv_revision_format(const char *ref, const char *commit_hex, char out[CV_REVISION_MAX + 1]);
/* Splits a revision; CV6058 when malformed. */
int cv_revision_parse(const char *rev, char ref[CV_REVISION_MAX + 1], char commit[CV_GIT_HEX + 1],
                      cv_diag *d);

/* A commit's tree, read from the mirror without a checkout: every regular
 * file (symlinks and submodules are left out), sorted by path.  Files whose
 * path cannot be used are left out too and listed as skipped: a path that
 * is not UTF-8 (CV6059), too long (CV6060: a component over
 * CV_GIT_NAME_MAX bytes or a path over CV_GIT_FILE_PATH_MAX), or unsafe
 * (CV6061: an empty, "." or ".." component, a '/' in a name, the same path
 * twice, or a file that is also a directory).  A tree over
 * CV_GIT_TREE_MAX_ENTRIES entries or CV_GIT_TREE_MAX_PATH_BYTES of paths
 * is CV6056; an unreadable tree CV6054. */
typedef struct cv_tree cv_tree;   /* opaque; must not outlive its git source */

typedef struct cv_tree_entry {
    const char *path;                 /* owned by the tree */
    char blob_id[CV_GIT_HEX + 1];     /* git's id of the contents */
} cv_tree_entry;

/* commit: 40 hex digits, or NULL for the current head. */
int  cv_gitsource_tree(cv_gitsource *g, const char *commit, cv_tree **out, cv_diag *d);
void cv_tree_free(cv_tree *t);
const char *cv_tree_commit(const cv_tree *t);
size_t cv_tree_count(const cv_tree *t);
const cv_tree_entry *cv_tree_at(const cv_tree *t, size_t i);
const cv_tree_entry *cv_tree_find(const cv_tree *t, const char *path);
/* The files left out, in walk order: the first CV_TREE_SKIPPED_KEPT of
 * them (paths as git has them: any bytes, maybe truncated to
 * CV_GIT_PATH_MAX), with the reason's code; total counts them all. */
#define CV_TREE_SKIPPED_KEPT 1000
size_t cv_tree_skipped_count(const cv_tree *t, size_t *total);
const cv_tree_entry *cv_tree_skipped_at(const cv_tree *t, size_t i, int *code);
/* The blob's size from its object header, without inflating it. */
int  cv_tree_size(const cv_tree *t, const cv_tree_entry *e, size_t *size, cv_diag *d);
/* The blob's bytes, malloc'd and NUL-terminated (caller frees); CV6055 if
 * larger than max_bytes, known from the object header before anything is
 * inflated. */
int  cv_tree_read(const cv_tree *t, const cv_tree_entry *e, size_t max_bytes, char **data,
                  size_t *len, cv_diag *d);

/* ============================================================= build DB */

typedef struct cv_builddb cv_builddb;   /* opaque; one per process */

typedef enum {
    CV_REV_PLANNING, CV_REV_BUILDING, CV_REV_SUCCEEDED, CV_REV_FAILED, CV_REV__COUNT
} cv_rev_state;

/* Job timestamps, REAPI style (ms since the epoch; 0 = not reached):
 * queued, worker started, front end done, passes done, codegen done,
 * artifact uploaded, result recorded. */
typedef enum {
    CV_JOB_TS_QUEUED, CV_JOB_TS_STARTED, CV_JOB_TS_FRONTEND, CV_JOB_TS_PASSES,
    CV_JOB_TS_CODEGEN, CV_JOB_TS_UPLOADED, CV_JOB_TS_FINISHED, CV_JOB_TS__COUNT
} cv_job_ts;

typedef struct cv_rev_summary {
    int64_t id;
    char revision[CV_REVISION_MAX + 1];
    cv_rev_state state;
    int64_t created_ms, finished_ms;
    int64_t jobs, hits, pending, ok, failed;   /* failed: every non-ok result */
} cv_rev_summary;

typedef struct cv_job_info {
    char job_id[CV_MSG_ID_MAX + 1];
    char state[16];                   /* queued, hit, or a result status name */
    char runner[CV_MSG_ID_MAX + 1];   /* the queued job that runs for this one */
    char l2_key[CV_DIGEST_HEX + 1];
    int attempts;
    int64_t ts[CV_JOB_TS__COUNT];
} cv_job_info;

int  cv_builddb_open(const char *path, cv_builddb **out, cv_diag *d);
void cv_builddb_close(cv_builddb *db);
int  cv_builddb_schema_version(void);      /* what this build writes */
int  cv_builddb_begin(cv_builddb *db, cv_diag *d);     /* BEGIN IMMEDIATE */
int  cv_builddb_commit(cv_builddb *db, cv_diag *d);
void cv_builddb_rollback(cv_builddb *db);

/* Finds or creates the revision row; sets lastAttemptedRevision.
 * *created says whether it is new (then in state planning). */
int  cv_builddb_revision_begin(cv_builddb *db, const char *revision, int64_t now_ms,
                               int64_t *rev_id, bool *created, cv_diag *d);
/* planning -> building, or straight to succeeded/failed when no job is
 * pending (an all-hit revision) or spec_errors (nothing was planned).  A
 * revision with error diagnostics of its own (cv_builddb_revision_diags)
 * ends failed. */
int  cv_builddb_revision_planned(cv_builddb *db, int64_t rev_id, bool spec_errors, int64_t now_ms,
                                 cv_diag *d);
int  cv_builddb_revision_summary(cv_builddb *db, const char *revision, cv_rev_summary *out,
                                 cv_diag *d);   /* revision NULL = the newest; 1 found, 0 none */
int  cv_builddb_pipeline_add(cv_builddb *db, int64_t rev_id, const char *name, const char *spec,
                             cv_diag *d);
/* Diagnostics about the revision itself (spec errors, planner warnings). */
int  cv_builddb_revision_diags(cv_builddb *db, int64_t rev_id, const cv_diag *diags, cv_diag *d);

/* hit: recorded as finished now; otherwise queued, to be run as `runner`
 * (the job itself, or the in-flight job it was merged into). */
int  cv_builddb_job_add(cv_builddb *db, int64_t rev_id, const cv_job_msg *job, bool hit,
                        const char *runner, int64_t now_ms, cv_diag *d);
int  cv_builddb_job_get(cv_builddb *db, const char *job_id, cv_job_info *out, cv_diag *d);
/* Records one result from the queue's stream (see cv_queue_result) for the
 * job that ran and every job merged into it, with their timestamps, the
 * artifact and the diagnostics, then finishes revisions left with no
 * pending job (lastSucceededRevision moves forward only).  A result no job
 * waits on (unknown, or already recorded: delivery is at-least-once) is
 * ignored with a CV6074 warning. */
int  cv_builddb_record_result(cv_builddb *db, const cv_queue_result *r, int64_t now_ms,
                              cv_diag *d);
/* The artifact of a model in a revision: 1 found, 0 none.  manifest is ""
 * when only the L2 key is known (a cache hit). */
int  cv_builddb_artifact_find(cv_builddb *db, const char *revision, const char *model_path,
                              const char *target, const char *precision,
                              char l2_key[CV_DIGEST_HEX + 1], char manifest[CV_DIGEST_HEX + 1],
                              cv_diag *d);

const char *cv_rev_state_name(cv_rev_state s);   /* "planning", "building", ... */

/* ---- reading the history (`cuvil status`, `cuvil artifacts`) */

/* The revisions, newest first, skipping the newest `offset`: up to max
 * summaries into out; *n is set. */
int  cv_builddb_revisions_list(cv_builddb *db, int64_t offset, cv_rev_summary *out, int max,
                               int *n, cv_diag *d);
/* A revision named by the user: the full "ref@sha1:<commit>", a commit id
 * or a prefix of one (at least 4 hex digits), or "latest".  1 found (out
 * set), 0 none; an ambiguous prefix is CV6076. */
int  cv_builddb_revision_resolve(cv_builddb *db, const char *name, char out[CV_REVISION_MAX + 1],
                                 cv_diag *d);

typedef struct cv_job_row {
    char job_id[CV_MSG_ID_MAX + 1];
    char pipeline[CV_SPEC_NAME_MAX + 1];
    char model_path[CV_GIT_PATH_MAX + 1];
    char target[CV_MSG_TOKEN_MAX + 1];
    char precision[8], opt_level[8];
    char state[16];                   /* queued, hit, or a result status name */
    int64_t result_id;                /* 0 = none yet */
    int attempts;
    int64_t queued_ms, finished_ms;
    char l1[16], l2[16];              /* the worker's cache outcomes (miss, hit, ...); "" */
    int64_t ts[CV_JOB_TS__COUNT];     /* REAPI-style timestamps; 0 = not reached */
} cv_job_row;

/* Calls fn for each job of the revision, sorted by model, target and
 * precision; only_bad keeps the jobs that are neither ok nor hits nor
 * queued.  fn returns non-zero to stop. */
typedef int (*cv_job_row_fn)(void *ctx, const cv_job_row *row);
int  cv_builddb_jobs_visit(cv_builddb *db, int64_t rev_id, bool only_bad, cv_job_row_fn fn,
                           void *ctx, cv_diag *d);
/* The diagnostics stored with a result (result_id > 0) or with the
 * revision itself (rev_id > 0, result_id 0), appended to out with their
 * codes, spans, paths and root ids. */
int  cv_builddb_diags_load(cv_builddb *db, int64_t rev_id, int64_t result_id, cv_diag *out,
                           cv_diag *d);

/* ---- build requests (`cuvil submit`): written by any process, handled by
 * the controller, which polls the source at once and plans its head. */
typedef struct cv_build_request {
    int64_t id, created_ms, handled_ms;      /* handled_ms 0 = not yet */
    char revision[CV_REVISION_MAX + 1];      /* what it built; "" if it failed */
    char error[512];                         /* why it failed; "" */
} cv_build_request;

int  cv_builddb_request_add(cv_builddb *db, int64_t now_ms, int64_t *id, cv_diag *d);
/* The newest request not handled: 1 found, 0 none. */
int  cv_builddb_request_next(cv_builddb *db, cv_build_request *out, cv_diag *d);
/* Marks every open request up to id handled (one poll serves them all);
 * returns how many it marked, or -1. */
int  cv_builddb_request_done(cv_builddb *db, int64_t upto_id, const char *revision,
                             const char *error, int64_t now_ms, cv_diag *d);
int  cv_builddb_request_get(cv_builddb *db, int64_t id, cv_build_request *out, cv_diag *d);

/* Farm status values (lastAttemptedRevision, lastSucceededRevision, ...):
 * get returns 1 with *value malloc'd, 0 when unset. */
int  cv_builddb_status_set(cv_builddb *db, const char *key, const char *value, int64_t now_ms,
                           cv_diag *d);
int  cv_builddb_status_get(cv_builddb *db, const char *key, char **value, cv_diag *d);
#define CV_STATUS_LAST_ATTEMPTED "lastAttemptedRevision"
#define CV_STATUS_LAST_SUCCEEDED "lastSucceededRevision"
#define CV_STATUS_SOURCE "source"   /* the git source's status as a JSON object */

/* Stores the git source's status under CV_STATUS_SOURCE, so `cuvil status`
 * in another process shows fetch failures and the back-off:
 * {"revision","commit","lastPollMs","lastSuccessMs","lastChangeMs",
 *  "failures","nextAttemptMs","lastError","polls","fetches","errors"}. */
int  cv_builddb_source_status_put(cv_builddb *db, const cv_gitsource_status *st, int64_t now_ms,
                                  cv_diag *d);

/* The memo that lets the planner skip hashing unchanged files: git blob id
 * -> sha256 of the contents.  get: 1 found, 0 not. */
int  cv_builddb_blob_digest_get(cv_builddb *db, const char *blob_id,
                                char sha256[CV_DIGEST_HEX + 1], cv_diag *d);
int  cv_builddb_blob_digest_put(cv_builddb *db, const char *blob_id, const char *sha256,
                                cv_diag *d);

/* ============================================================== planner */

/* Computes the job's L2 key into l2_key (64 lowercase hex) and says
 * whether the cache already holds its artifact.  Returns 0, or -1 (then
 * the job is queued under the planner's own key, with a CV6095 warning). */
typedef int (*cv_planner_lookup_fn)(void *ctx, const cv_job_msg *job, char l2_key[65], bool *hit);

/* ---- what the operator decides, and what a repository may choose
 *
 * Infrastructure comes from the operator (flags, environment, the
 * Kubernetes object), never from repository content: a repository's
 * CuvilBuildCluster may pick one of the remotes the operator named, lower
 * the job timeout and memory limit, and set its poll interval; anything
 * else it asks for (a URL, a queue, a higher limit) is ignored with a
 * warning stored with the revision (CV6160-CV6162). */
#define CV_FARM_REMOTES_MAX 16
#define CV_FARM_JOB_TIMEOUT_MS 600000   /* the default ceiling: 10 minutes */

typedef struct cv_farm_remote {
    char name[64];              /* a DNS-1123 label */
    const char *url;            /* http(s)://host:port[/instance][|read-only]; not owned */
} cv_farm_remote;

typedef struct cv_farm_policy {
    const char *remote;         /* the farm's remote cache; NULL or "" = none */
    cv_farm_remote remotes[CV_FARM_REMOTES_MAX];   /* the others a spec may name */
    int n_remotes;
    int64_t job_timeout_ms;     /* ceiling and default; 0 = CV_FARM_JOB_TIMEOUT_MS */
    uint64_t memory_limit;      /* ceiling and default, bytes; 0 = none */
} cv_farm_policy;

/* Parses a --remote-cache value: "NAME=URL" adds to the allow-list, a bare
 * URL is the farm's remote.  CV6163 when malformed or too many. */
int cv_farm_policy_add_remote(cv_farm_policy *p, const char *arg, cv_diag *d);

/* What the farm uses for a revision: the operator's values, lowered or
 * chosen among by the head's CuvilBuildCluster (NULL: none). */
typedef struct cv_cluster_settings {
    bool found;                 /* the head has a valid cluster spec */
    int64_t interval_ms, job_timeout_ms;
    uint64_t memory_limit;      /* 0 = none */
    char remote[1024];          /* the remote cache; "" = none */
    char remote_name[64];       /* the allow-list name the spec chose; "" = the farm's */
    bool remote_read_only;
} cv_cluster_settings;

/* Applies cl (may be NULL) to the policy p (NULL = the defaults): every
 * request the policy refuses is a warning in warn (may be NULL) located at
 * the spec document. */
void cv_cluster_apply(const cv_spec_cluster *cl, const cv_farm_policy *p,
                      cv_cluster_settings *out, cv_diag *warn);

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
int cv_planner_load_specs(const cv_tree *tree, cv_spec_set *s, cv_diag *d);
/* Expands every pipeline of the tree's specs into jobs for `revision`,
 * records hits, enqueues misses and records everything in the build DB.
 * Spec errors are not a failure of this call: they are stored with the
 * revision (which is then failed) and reported in d and r->spec_errors. */
int cv_planner_plan(const cv_planner_opts *o, const cv_tree *tree, const char *revision,
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
/* The queue URL a cluster spec names; "" for the embedded queue.  Only for
 * an operator's spec (the Kubernetes object), never a repository's. */
void cv_spec_cluster_queue_url(const cv_spec_cluster *cl, char *out, size_t size);
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

/* The controller's heartbeat in the farm status (key "controller"):
 * {"pid","host","repo","ref","queue","startedMs","heartbeatMs","stoppedMs"};
 * stoppedMs is 0 while it runs and the time it closed after. */
#define CV_STATUS_CONTROLLER "controller"

/* ================================================================= farm */

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

/* ============================================================= failures */

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

/* ======================================================== JSON views */

/* The JSON that `cuvil status --json`, `cuvil failures --json` and the
 * HTTP API share (controller/status_json.c, controller/failures_json.c).
 * Each returns a new jansson json_t the caller owns. */
struct json_t;
/* A farm status value holding JSON (controller heartbeat, source); NULL
 * when unset or unreadable. */
struct json_t *cv_status_value_json(cv_builddb *db, const char *key, cv_diag *d);
/* Whether a controller heartbeat object is fresh and not stopped. */
bool cv_status_controller_alive(const struct json_t *ctl, int64_t now_ms);
/* {"revision","state","createdMs","finishedMs","jobs","hits","ok","failed","pending"} */
struct json_t *cv_status_summary_json(const cv_rev_summary *s);
/* The summary with "jobsList" (every job with its diagnostics) and the
 * revision's own "diagnostics". */
struct json_t *cv_status_revision_json(cv_builddb *db, const cv_rev_summary *s, cv_diag *d);
/* `cuvil status --json`: controller, source, last attempted and succeeded
 * revisions, rev (may be NULL) in full and the recent revisions. */
struct json_t *cv_status_json(cv_builddb *db, const cv_rev_summary *rev, int64_t now_ms,
                              cv_diag *d);

/* A failure group's diagnostic name and one-line summary (its code's, or
 * its class's when no diagnostic was reported); static strings. */
void cv_failure_group_explain(const cv_failure_group *g, const char **name, const char **summary);
/* The `cuvil compile` line that reproduces a group's example. */
void cv_failure_group_reproduce(const cv_failure_group *g, char *buf, size_t size);
struct json_t *cv_failure_report_json(const cv_failure_report *r, int top);
struct json_t *cv_failure_trend_json(const cv_failure_trend *t);

/* ================================================================ HTTP */

/* The farm's HTTP face (controller/http/): a JSON API under /api/v1/
 * (schemas/api.yaml), a server-rendered dashboard (/, /revisions/REV,
 * /failures), Prometheus metrics (/metrics) and git webhooks
 * (/hooks/github, /hooks/gitlab).  It runs on libmicrohttpd's own thread
 * and reads the build DB through its own handle (WAL: the controller
 * writes meanwhile).  A webhook push for the tracked ref and
 * POST /api/v1/revisions leave a build request, which the controller's
 * next step handles (it polls the source at once).  Codes CV6130-CV6149. */
#define CV_HTTP_DEFAULT_LISTEN "127.0.0.1:8081"
#define CV_HTTP_BODY_MAX (1 << 20)   /* request bodies (webhook payloads) */

typedef struct cv_http cv_http;   /* opaque */

typedef struct cv_http_opts {
    const char *listen;          /* "host:port", "[v6]:port"; NULL = CV_HTTP_DEFAULT_LISTEN;
                                    port 0 = any free port (cv_http_port) */
    const char *state_dir;       /* the farm's: build.db, trees/ */
    const char *queue_url;       /* NULL = the controller's (from its heartbeat), else
                                    sqlite:STATE/queue.db; only sqlite: queues are read,
                                    other depths come from the build DB */
    const char *cache_dir;       /* NULL = the default cache ($CUVIL_CACHE_DIR or
                                    ~/.cache/cuvil) */
    bool no_cache;               /* report no cache figures */
    const char *ref;             /* the tracked ref, for webhooks; NULL = "main" */
    const char *tokens_file;     /* "TOKEN ro|rw" per line ('#' comments); ro reads, rw also
                                    builds; NULL = no authentication */
    const char *webhook_secret;  /* GitHub's HMAC key and GitLab's token; NULL = hooks 403 */
    cv_queue_clock_fn now_ms;    /* NULL = CLOCK_REALTIME */
    void *clock_ctx;             /* not owned */
    const struct cv_netguard_opts *limits;   /* connections and deadlines
                                                (common/netguard.h); NULL = its defaults */
} cv_http_opts;

int  cv_http_start(const cv_http_opts *o, cv_http **out, cv_diag *d);
int  cv_http_port(const cv_http *h);
/* Stops accepting, waits for requests under way and frees h (NULL: no-op). */
void cv_http_stop(cv_http *h);

#endif
