/* The operator's policy (remote caches, job limits) and what a
 * repository's CuvilBuildCluster may choose within it (CV6160-CV6164). */
#ifndef CV_CONTROLLER_CLUSTER_POLICY_H
#define CV_CONTROLLER_CLUSTER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "spec/spec.h"

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

#endif
