/* The spec loader: CuvilBuildCluster and CuvilPipeline documents (YAML
 * under cuvil/ in a models repository, or a Kubernetes object), validated
 * field by field (CV6001-CV6039) with `extends` resolved, and the
 * repository globs their model lists use.  Used by the controller, the
 * operator, `cuvil validate` and the pre-commit hook. */
#ifndef CV_SPEC_H
#define CV_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/jobmsg.h"

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
/* Whether `cuvil validate` reads a file as specs (.yaml, .yml) rather than
 * as a model. */
bool cv_spec_is_yaml_file(const char *path);


/* Every field the loader accepts, for checking the JSON Schemas in
 * schemas/ against the loader (tests/unit/spec/test_spec.c).  path: "spec.targets",
 * "spec.targets[]" (list items), "metadata.labels{}" (map values); type:
 * "object" "array" "string" "integer" "boolean"; values: the allowed values
 * of an enumerated string (NULL-terminated) or NULL. */
typedef void (*cv_spec_field_fn)(void *ctx, const char *path, const char *type, bool required,
                                 const char *const *values);
void cv_spec_fields_visit(cv_spec_kind k, cv_spec_field_fn fn, void *ctx);

/* The queue URL a cluster spec names; "" for the embedded queue.  Only for
 * an operator's spec (the Kubernetes object), never a repository's. */
void cv_spec_cluster_queue_url(const cv_spec_cluster *cl, char *out, size_t size);

/* ---- globs */

/* Repository globs: '/'-separated relative paths; `*` and `?` match within
 * one component, `[a-z]`/`[!a-z]` a character class, `\x` a literal x, and
 * a whole component `**` any number of directories.  cv_glob_check returns
 * 0, or -1 with *why (a static string) saying what is wrong. */
int cv_glob_check(const char *pattern, const char **why);
bool cv_glob_match(const char *pattern, const char *path);

#endif
