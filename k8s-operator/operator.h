/* The Kubernetes operator (`cuvil operator`): keeps a cluster matching its
 * CuvilBuildCluster objects.
 *
 *   client     a Kubernetes REST client on libcurl (loaded lazily through
 *              common/netlib.h): in-cluster service-account config or a
 *              kubeconfig (token or client certificate), JSON requests and
 *              watch streams (CV7001-CV7009)
 *   informer   list, then watch from the list's resourceVersion; on 410 Gone
 *              list again; reconnect with backoff; periodic resync
 *   reconcile  a cluster -> ConfigMap, controller Deployment + Service,
 *              workers StatefulSet + headless Service, cache Deployment +
 *              Service + PVC, state PVC; every child owned by the cluster;
 *              merge patches only where a child differs; status only
 *              through /status (CV7010-CV7019)
 *   crds       schemas/crds/ generated from the JSON Schemas in schemas/
 *              (CV7020-CV7029)
 * See docs/kubernetes.md. */
#ifndef CV_K8S_OPERATOR_H
#define CV_K8S_OPERATOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

/* ================================================================ client */

#define CV_K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Where the API server is and how to authenticate.  Every pointer is owned
 * (malloc'd) and released by cv_k8s_config_free. */
typedef struct cv_k8s_config {
    char *server;               /* https://host:port, no trailing '/' */
    char *ns;                   /* the context's or service account's; may be NULL */
    char *token;                /* bearer token; may be NULL */
    char *token_file;           /* re-read every minute (projected service-account
                                   tokens rotate); may be NULL */
    char *ca_pem;               /* CA bundle (PEM text); NULL = the system's */
    size_t ca_len;
    char *cert_pem, *key_pem;   /* client certificate and key (PEM); may be NULL */
    size_t cert_len, key_len;
    bool insecure;              /* insecure-skip-tls-verify */
} cv_k8s_config;

/* In-cluster: $KUBERNETES_SERVICE_HOST/PORT and sa_dir's token, ca.crt and
 * namespace (sa_dir NULL = CV_K8S_SA_DIR).  CV7001 outside a cluster. */
int cv_k8s_config_in_cluster(const char *sa_dir, cv_k8s_config *out, cv_diag *d);
/* A kubeconfig file: its current context (context NULL) or the named one;
 * tokens, token files, client certificates and CA files or inline data.
 * exec and auth-provider plugins are refused (CV7002). */
int cv_k8s_config_kubeconfig(const char *path, const char *context, cv_k8s_config *out,
                             cv_diag *d);
/* --kubeconfig FILE when given, else in-cluster when running in a pod (and
 * no context is asked for), else the first file of $KUBECONFIG or
 * ~/.kube/config; context NULL = the kubeconfig's current one. */
int cv_k8s_config_load(const char *kubeconfig, const char *context, cv_k8s_config *out,
                       cv_diag *d);
void cv_k8s_config_free(cv_k8s_config *c);

typedef struct cv_k8s_client cv_k8s_client;   /* opaque; one thread at a time */

/* Copies what it needs from c. */
int cv_k8s_client_open(const cv_k8s_config *c, cv_k8s_client **out, cv_diag *d);
void cv_k8s_client_close(cv_k8s_client *c);

/* One request.  path starts with '/' (query included); body may be NULL;
 * content_type NULL = application/json.  Returns 0 when the server
 * answered (any status: *status), with its JSON body in *out (a new
 * reference, NULL when the body is empty or not JSON), or -1 when it could
 * not be reached (CV7003) or answered more than 32 MiB (CV7008). */
int cv_k8s_request(cv_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const json_t *body, long *status, json_t **out,
                   cv_diag *d);

/* A watch stream: fn gets each event (type "ADDED", "MODIFIED", "DELETED",
 * "BOOKMARK" or "ERROR" and its object, borrowed) and returns true to stop
 * the stream.  An answer other than 200 comes as one ERROR event with its
 * Status (code: the HTTP status), as errors within a stream do.  The stream
 * also ends after timeout_ms, when the server ends it, or when *stop
 * becomes non-zero (stop may be NULL).  Returns 0 with the HTTP status in
 * *status (0 when none came in time), -1 on transport failure (CV7003) or
 * a malformed event (CV7008). */
typedef bool (*cv_k8s_event_fn)(void *ctx, const char *type, json_t *object);
int cv_k8s_watch(cv_k8s_client *c, const char *path, int64_t timeout_ms,
                 volatile int *stop, cv_k8s_event_fn fn, void *ctx, long *status, cv_diag *d);

/* Requests made (for tests and logs). */
int64_t cv_k8s_client_requests(const cv_k8s_client *c);

/* ============================================================== operator */

typedef struct cv_k8s_operator cv_k8s_operator;   /* opaque */

typedef struct cv_k8s_operator_opts {
    const char *ns;             /* watch this namespace; NULL or "" = all namespaces */
    const char *image;          /* the cuvil image when a cluster names no imageRegistry */
    const char *image_tag;      /* the tag of <imageRegistry>/cuvil:<tag> */
    const char *storage_class;  /* the cache volume's class; NULL = the default class */
    const char *state_storage_class;  /* the state volume's (ReadWriteMany for kafka) */
    uint64_t state_size;        /* the state volume; 0 = 10Gi */
    int64_t resync_ms;          /* every cluster is reconciled this often; 0 = 5 min */
    int64_t requeue_ms;         /* again after this while not Ready; 0 = 15 s */
    int64_t backoff_ms;         /* first retry after an API failure; 0 = 500 ms (max 60 s) */
    int64_t watch_timeout_ms;   /* longest watch request; 0 = 5 min */
    volatile int *stop;         /* set (from a signal handler) to stop; not owned */
} cv_k8s_operator_opts;

typedef struct cv_k8s_operator_stats {
    int64_t lists, relists;     /* relists: after 410 Gone */
    int64_t watches, events;
    int64_t reconciles;
    int64_t creates, patches, deletes, status_writes;   /* writes, by verb */
    int64_t conflicts;          /* 409s retried */
    int64_t failures;           /* steps that failed (the API, not the specs) */
    int64_t backoff_ms;         /* the current wait before the next try; 0 = none */
} cv_k8s_operator_stats;

/* The client stays the caller's (it must outlive the operator). */
int cv_k8s_operator_open(cv_k8s_client *cl, const cv_k8s_operator_opts *o,
                         cv_k8s_operator **out, cv_diag *d);
void cv_k8s_operator_close(cv_k8s_operator *op);
/* One round: lists when it has no resourceVersion, reconciles every cluster
 * due (changed, requeued or resync), else watches for up to wait_ms (less
 * when a reconcile falls due) and reconciles what changed.  After an API
 * failure it waits out its backoff first.  -1 when the API failed (the
 * next step retries); spec errors are the clusters' status, not failures. */
int cv_k8s_operator_step(cv_k8s_operator *op, int64_t wait_ms, cv_diag *d);
/* Steps until *o->stop; API failures are logged and retried with backoff. */
int cv_k8s_operator_run(cv_k8s_operator *op, cv_diag *d);
/* Makes every known cluster due now (as a resync does). */
void cv_k8s_operator_resync(cv_k8s_operator *op);
const cv_k8s_operator_stats *cv_k8s_operator_get_stats(const cv_k8s_operator *op);

/* ================================================================== crds */

/* The CustomResourceDefinition for a kind ("CuvilBuildCluster" or
 * "CuvilPipeline") from its JSON Schema (schemas/<kind>.schema.json,
 * parsed): the structural schema with additionalProperties:false dropped,
 * metadata reduced to name, plus the status subresource and printer
 * columns.  *out is a new reference.  CV7020 when the schema is not
 * structural. */
int cv_k8s_crd_build(const char *kind, const json_t *schema, json_t **out, cv_diag *d);
/* The CRD file as committed in schemas/crds/ (YAML, keys in a fixed
 * order); malloc'd. */
char *cv_k8s_crd_yaml(const json_t *crd);
/* schemas/crds/<plural>.cuvil.dev.yaml for the kind, from schemas_dir's
 * JSON Schema: *yaml malloc'd.  file_name gets "<plural>.cuvil.dev.yaml". */
int cv_k8s_crd_render(const char *schemas_dir, const char *kind, char **yaml,
                      char *file_name, size_t name_size, cv_diag *d);

/* Block YAML for a JSON value (mappings in insertion order, strings quoted
 * wherever YAML 1.1 or 1.2 could read them as something else, long text
 * folded under width columns); malloc'd.  Used for the CRDs and the
 * rendered config. */
char *cv_k8s_yaml_emit(const json_t *v, int width);

#endif
