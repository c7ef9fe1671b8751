/* Operator internals shared by the files of k8s-operator/. */
#ifndef CV_K8S_INTERNAL_H
#define CV_K8S_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"
#include "k8s-operator/operator.h"
#include "spec/spec.h"

#define K8S_GROUP "cuvil.dev"
#define K8S_API_VERSION "cuvil.dev/v1"
#define K8S_KIND_CLUSTER "CuvilBuildCluster"
#define K8S_NAME_MAX 40             /* a cluster's name: "<name>-controller-<hash>-<id>" fits */
#define K8S_FIELD_MANAGER "cuvil-operator"
#define K8S_MERGE_PATCH "application/merge-patch+json"
#define K8S_TOKEN_MAX ((size_t)64 << 10)

/* ---------------------------------------------------------- objects.c */

typedef struct k8s_kind {
    const char *api;            /* "/api/v1", "/apis/apps/v1" */
    const char *api_version;    /* "v1", "apps/v1" */
    const char *kind, *plural;
} k8s_kind;

extern const k8s_kind k8s_configmaps, k8s_services, k8s_pvcs, k8s_deployments,
    k8s_statefulsets, k8s_clusters;

/* API path of a collection (name NULL) or object, with "/status" when
 * status; ns NULL or "" = all namespaces.  -1 when it does not fit. */
int k8s_path(char *out, size_t size, const k8s_kind *k, const char *ns, const char *name,
             bool status);
/* The member at a dotted path ("metadata.name"), or NULL. */
json_t *k8s_at(const json_t *obj, const char *dotted);
/* Its string value, or "" when absent or not a string. */
const char *k8s_str(const json_t *obj, const char *dotted);
/* Whether have holds everything want says: objects member by member (a
 * JSON null in want: the member must be absent), arrays item by item with
 * equal lengths, scalars equal. */
bool k8s_subset(const json_t *want, const json_t *have);
/* Whether an owner reference of obj names uid. */
bool k8s_owned_by(const json_t *obj, const char *uid);
/* An error for an API answer other than success: the code from the status
 * (CV7005 for 401/403, CV7006 for 409, else CV7004) and the server's
 * message; returns -1. */
int k8s_api_error(cv_diag *d, long status, const json_t *body, const char *method,
                  const char *path);
/* An object with the same content minus metadata.resourceVersion,
 * metadata.managedFields and status: what a reconcile depends on. */
bool k8s_same_intent(const json_t *a, const json_t *b);
/* A small file with trailing white space dropped (tokens, PEM, a
 * namespace); malloc'd, or NULL with d set. */
char *k8s_read_trimmed(const char *path, size_t max, size_t *len, cv_diag *d);
/* Now as RFC 3339 in UTC ("2026-11-29T12:34:56Z"). */
void k8s_now_rfc3339(char out[32]);
int64_t k8s_mono_ms(void);

/* ----------------------------------------------------------- render.c */

/* What the children are made from. */
typedef struct k8s_owner {
    const char *name, *ns, *uid;
} k8s_owner;

typedef enum {
    K8S_APPLY_PATCH,            /* create, else merge-patch where it differs */
    K8S_APPLY_GROW,             /* a volume: create, else only a larger storage request */
} k8s_apply_mode;

#define K8S_CHILDREN_MAX 10

typedef struct k8s_child {
    const k8s_kind *kind;
    char name[64];
    json_t *desired;            /* owned; NULL = must not exist (pruned if ours) */
    k8s_apply_mode mode;
} k8s_child;

typedef struct k8s_children {
    k8s_child v[K8S_CHILDREN_MAX];
    int n;
    char revision[16];          /* hash of the rendered config */
    int replicas;
    bool cache_server;          /* an in-cluster cache server is part of it */
} k8s_children;

/* Renders every child.  0, or -1 with CV7011 (unknown resourceProfile) or
 * CV7013 (name too long) in d: the cluster is Stalled. */
int k8s_render(const cv_spec_cluster *cl, const k8s_owner *own, const cv_k8s_operator_opts *o,
               k8s_children *out, cv_diag *d);
void k8s_children_free(k8s_children *c);

/* ------------------------------------------------------ render_pods.c */

/* The pod-level pieces render.c assembles; every result is a new object. */
/* Where the action-cache key pair (cache.signingKeySecret) is mounted. */
#define K8S_KEYS_DIR "/etc/cuvil/ac-keys"

typedef struct k8s_pod_args {
    const k8s_owner *own;
    const char *component;      /* "controller", "worker", "cache" */
    const char *image;
    json_t *args;               /* stolen */
    json_t *env;                /* stolen; may be NULL */
    json_t *resources;          /* stolen */
    const char *state_claim;    /* the PVC mounted at /var/lib/cuvil; may be NULL */
    bool state_read_only;
    const char *cache_claim;    /* the PVC mounted at /var/cache/cuvil; NULL = emptyDir */
    const char *keys_secret;    /* the Secret mounted read-only at K8S_KEYS_DIR; NULL = none */
    int port;                   /* a named "http" port with a probe on probe_path; 0 = none */
    const char *probe_path;
    json_t *affinity;           /* stolen; NULL = none (deleted from existing children) */
} k8s_pod_args;

json_t *k8s_labels(const k8s_owner *own, const char *component);
json_t *k8s_selector(const k8s_owner *own, const char *component);
json_t *k8s_metadata(const k8s_owner *own, const char *name, const char *component);
json_t *k8s_pod_template(const k8s_pod_args *a);
/* The named resource profiles: 0 with requests/limits, -1 when unknown. */
int k8s_profile_resources(const char *profile, uint64_t job_memory, json_t **out);
const char *const *k8s_profile_names(void);
/* A byte count as a canonical Kubernetes quantity ("8Gi", "1536Mi"). */
void k8s_quantity(uint64_t bytes, char out[32]);

/* ------------------------------------------------------------ apply.c */

typedef struct k8s_apply_ctx {
    cv_k8s_client *cl;
    const char *ns, *owner_uid;
    cv_k8s_operator_stats *stats;
} k8s_apply_ctx;

/* Brings one child to its desired state.  0 with the child as it is now in
 * *current (a new reference; NULL when absent), 1 when the name is taken
 * by an object this cluster does not own (CV7012 in d), -1 on API
 * failure. */
int k8s_apply(const k8s_apply_ctx *x, const k8s_child *ch, json_t **current, cv_diag *d);

/* ----------------------------------------------------------- status.c */

typedef struct k8s_observed {
    int64_t generation;
    bool stalled;               /* the spec (or a child's name) stops the reconcile */
    const char *reason;         /* the Stalled or not-Ready reason */
    char message[1024];
    int replicas, ready_workers;
    bool ready;                 /* every child exists and is ready */
    const char *revision;       /* lastAppliedRevision; NULL: not observed, the old
                                   revision and counts stay */
} k8s_observed;

/* The status for what was observed; conditions keep their
 * lastTransitionTime while their status stays the same.  A new object. */
json_t *k8s_status_build(const json_t *old_status, const k8s_observed *ob, const char *now);

/* -------------------------------------------------------- reconcile.c */

/* Reconciles one cluster object (as the informer holds it).  0 done (the
 * status says how it went), -1 on API failure.  *settled tells whether it
 * is Ready or Stalled (else it is looked at again sooner); *updated gets
 * the object after a status write (a new reference) or NULL. */
int k8s_reconcile(cv_k8s_client *cl, const cv_k8s_operator_opts *o, const json_t *obj,
                  cv_k8s_operator_stats *st, bool *settled, json_t **updated, cv_diag *d);

#endif
