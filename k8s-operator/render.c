/* A CuvilBuildCluster's children, rendered from its effective spec (the
 * spec loader's defaults applied): the rendered config, the state volume,
 * the controller, the workers and the cache server, each with its
 * Service.  A child the spec does not want (the cache server when
 * cache.remote names one) is rendered as "must not exist". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/jsonutil.h"
#include "common/strbuf.h"
#include "k8s-operator/internal.h"

#define CONTROLLER_PORT 8081
#define CACHE_PORT 8080
#define STATE_DIR "/var/lib/cuvil/state"
#define CACHE_DIR "/var/cache/cuvil"
#define DEFAULT_STATE_SIZE ((uint64_t)10 << 30)
#define DEFAULT_CACHE_SIZE ((uint64_t)20 << 30)

/* Everything the children are built from. */
typedef struct plan {
    const cv_spec_cluster *cl;
    const k8s_owner *own;
    const cv_k8s_operator_opts *o;
    char image[1200];
    char queue[1200];
    char remote[1200];          /* what workers and the controller use; "" = none */
    char keys_secret[64];       /* the Secret with the action-cache key pair */
    bool cache_server;
    uint64_t cache_size;
} plan;

/* "60s", "10m", "1h", "1500ms": what the spec loader and the worker read. */
static void duration(int64_t ms, char out[32])
{
    if (ms % 3600000 == 0)
        snprintf(out, 32, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0)
        snprintf(out, 32, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0)
        snprintf(out, 32, "%llds", (long long)(ms / 1000));
    else
        snprintf(out, 32, "%lldms", (long long)ms);
}

static void name_of(char out[64], const k8s_owner *own, const char *suffix)
{
    snprintf(out, 64, "%s-%s", own->name, suffix);
}

static void plan_make(plan *p)
{
    const cv_spec_cluster *cl = p->cl;
    if (cl->image_registry)
        snprintf(p->image, sizeof p->image, "%s/cuvil:%s", cl->image_registry,
                 p->o->image_tag ? p->o->image_tag : "latest");
    else
        snprintf(p->image, sizeof p->image, "%s", p->o->image ? p->o->image : "cuvil:latest");
    cv_spec_cluster_queue_url(cl, p->queue, sizeof p->queue);
    if (!p->queue[0])   /* embedded: SQLite on the state volume, pods on one node */
        snprintf(p->queue, sizeof p->queue, "sqlite:%s/queue.db", STATE_DIR);
    p->cache_server = cl->cache.remote == NULL;
    if (p->cache_server)
        snprintf(p->remote, sizeof p->remote, "http://%s-cache.%s.svc:%d", p->own->name,
                 p->own->ns, CACHE_PORT);
    else
        snprintf(p->remote, sizeof p->remote, "%s", cl->cache.remote);
    if (cl->cache.read_only)
        snprintf(p->remote + strlen(p->remote), sizeof p->remote - strlen(p->remote),
                 "|read-only");
    p->cache_size = cl->cache.size ? cl->cache.size : DEFAULT_CACHE_SIZE;
    if (cl->cache.signing_key_secret)
        snprintf(p->keys_secret, sizeof p->keys_secret, "%s", cl->cache.signing_key_secret);
    else
        snprintf(p->keys_secret, sizeof p->keys_secret, "%.50s-ac-keys", p->own->name);
}

/* The action-cache keys (every pod that reads or writes the remote signs
 * and verifies) and, for the controller, the ceilings a repository's
 * cluster spec is checked against. */
static void add_keys(json_t *args)
{
    json_array_append_new(args, json_string("--signing-key"));
    json_array_append_new(args, json_string(K8S_KEYS_DIR "/signing.pem"));
    json_array_append_new(args, json_string("--verify-key"));
    json_array_append_new(args, json_string(K8S_KEYS_DIR "/verify.pem"));
}

/* ------------------------------------------------------------ the config */

/* What the operator made of the spec, for people (`kubectl get configmap
 * NAME-config -o yaml`); its hash is the cluster's lastAppliedRevision. */
static json_t *config_map(const plan *p, char revision[16])
{
    const cv_spec_cluster *cl = p->cl;
    char interval[32], timeout[32], size[32], mem[32] = "";
    duration(cl->source.interval_ms, interval);
    duration(cl->workers.job_timeout_ms, timeout);
    k8s_quantity(p->cache_size, size);
    if (cl->workers.memory_limit)
        k8s_quantity(cl->workers.memory_limit, mem);
    json_t *cfg = json_pack(
        "{s:{s:s, s:s, s:s}, s:{s:i, s:s, s:s, s:s}, s:s, s:{s:s, s:b, s:s, s:s}, s:s}", "source",
        "url", cl->source.url, "ref", cl->source.ref, "interval", interval, "workers",
        "replicas", cl->workers.replicas, "resourceProfile",
        cl->workers.resource_profile ? cl->workers.resource_profile : "standard", "jobTimeout",
        timeout, "memoryLimit", mem[0] ? mem : "none", "queue", p->queue, "cache", "remote",
        p->remote, "inCluster", p->cache_server, "size", size, "signingKeySecret",
        p->keys_secret, "image", p->image);
    char *canon = cfg ? cv_json_canonical(cfg) : NULL;
    char *yaml = cfg ? cv_k8s_yaml_emit(cfg, 100) : NULL;
    json_decref(cfg);
    if (!canon || !yaml) {
        free(canon);
        free(yaml);
        return NULL;
    }
    cv_digest dg;
    cv_cache_sha256(canon, strlen(canon), &dg);
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(&dg, hex);
    snprintf(revision, 16, "%.12s", hex);
    free(canon);
    char name[64];
    name_of(name, p->own, "config");
    json_t *cm = json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", k8s_metadata(p->own, name, "config"), "data",
                           "cluster.yaml", yaml);
    free(yaml);
    return cm;
}

/* ------------------------------------------------------------- volumes */

static json_t *claim(const plan *p, const char *suffix, bool shared, uint64_t bytes,
                     const char *storage_class)
{
    char name[64], size[32];
    name_of(name, p->own, suffix);
    k8s_quantity(bytes, size);
    json_t *pvc = json_pack("{s:s, s:s, s:o, s:{s:[s], s:{s:{s:s}}}}", "apiVersion", "v1",
                            "kind", "PersistentVolumeClaim", "metadata",
                            k8s_metadata(p->own, name, suffix), "spec", "accessModes",
                            shared ? "ReadWriteMany" : "ReadWriteOnce", "resources", "requests",
                            "storage", size);
    if (pvc && storage_class && *storage_class)
        json_object_set_new(json_object_get(pvc, "spec"), "storageClassName",
                            json_string(storage_class));
    return pvc;
}

/* ------------------------------------------------------------ services */

static json_t *service(const plan *p, const char *suffix, const char *component, int port)
{
    char name[64];
    name_of(name, p->own, suffix);
    json_t *spec = json_pack("{s:o}", "selector", k8s_selector(p->own, component));
    if (port)
        json_object_set_new(spec, "ports", json_pack("[{s:s, s:i, s:s, s:s}]", "name", "http",
                                                     "port", port, "targetPort", "http",
                                                     "protocol", "TCP"));
    else   /* headless: the workers' stable network identities */
        json_object_set_new(spec, "clusterIP", json_string("None"));
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Service", "metadata",
                     k8s_metadata(p->own, name, component), "spec", spec);
}

/* ------------------------------------------------------------ workloads */

/* A Deployment of one pod replaced, never doubled: the controller and the
 * cache server each own their volume. */
static json_t *single(const plan *p, const char *suffix, k8s_pod_args *a)
{
    char name[64];
    name_of(name, p->own, suffix);
    json_t *tpl = k8s_pod_template(a);
    return tpl ? json_pack("{s:s, s:s, s:o, s:{s:i, s:{s:s}, s:{s:o}, s:o}}", "apiVersion",
                           "apps/v1", "kind", "Deployment", "metadata",
                           k8s_metadata(p->own, name, a->component), "spec", "replicas", 1,
                           "strategy", "type", "Recreate", "selector", "matchLabels",
                           k8s_selector(p->own, a->component), "template", tpl)
               : NULL;
}

static json_t *controller(const plan *p, const char *state_claim)
{
    char interval[32], timeout[32];
    duration(p->cl->source.interval_ms, interval);
    duration(p->cl->workers.job_timeout_ms, timeout);
    json_t *args = json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]", "controller",
                             p->cl->source.url, "--ref", p->cl->source.ref, "--state", STATE_DIR,
                             "--queue", p->queue, "--cache", CACHE_DIR, "--interval", interval,
                             "--http", "0.0.0.0:8081", "--job-timeout", timeout);
    if (args && p->cl->workers.memory_limit) {
        char mem[32];
        snprintf(mem, sizeof mem, "%llu", (unsigned long long)p->cl->workers.memory_limit);
        json_array_append_new(args, json_string("--memory-limit"));
        json_array_append_new(args, json_string(mem));
    }
    if (args)
        add_keys(args);
    k8s_pod_args a = {
        .own = p->own, .component = "controller", .image = p->image, .args = args,
        .keys_secret = p->keys_secret,
        .env = json_pack("[{s:s, s:s}]", "name", "CUVIL_REMOTE_CACHE", "value", p->remote),
        .resources = json_pack("{s:{s:s, s:s}, s:{s:s}}", "requests", "cpu", "500m", "memory",
                               "512Mi", "limits", "memory", "2Gi"),
        .state_claim = state_claim, .port = CONTROLLER_PORT, .probe_path = "/metrics"};
    return single(p, "controller", &a);
}

static json_t *cache_server(const plan *p)
{
    char claim_name[64], max[32];
    name_of(claim_name, p->own, "cache");
    /* Room on the volume beside the LRU limit: the index and blobs being written. */
    snprintf(max, sizeof max, "%llu", (unsigned long long)(p->cache_size / 10 * 9));
    k8s_pod_args a = {
        .own = p->own, .component = "cache", .image = p->image,
        .args = json_pack("[s, s, s, s, s, s, s, s]", "cache", "serve", "--listen",
                          "0.0.0.0:8080", "--dir", CACHE_DIR, "--max-size", max),
        .resources = json_pack("{s:{s:s, s:s}, s:{s:s}}", "requests", "cpu", "500m", "memory",
                               "512Mi", "limits", "memory", "2Gi"),
        .cache_claim = claim_name, .port = CACHE_PORT, .probe_path = "/status"};
    return single(p, "cache", &a);
}

/* Embedded (SQLite) queue: the workers share the state volume's database
 * with the controller, which is only safe on one node's kernel. */
static json_t *same_node_as_controller(const plan *p)
{
    return json_pack("{s:{s:[{s:{s:o}, s:s}]}}", "podAffinity",
                     "requiredDuringSchedulingIgnoredDuringExecution", "labelSelector",
                     "matchLabels", k8s_selector(p->own, "controller"), "topologyKey",
                     "kubernetes.io/hostname");
}

static json_t *workers(const plan *p, const char *state_claim, json_t *resources)
{
    const cv_spec_cluster *cl = p->cl;
    char timeout[32], name[64];
    duration(cl->workers.job_timeout_ms, timeout);
    json_t *args = json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s]", "worker", "--queue",
                             p->queue, "--trees", STATE_DIR "/trees", "--cache", CACHE_DIR,
                             "--remote-cache", p->remote, "--timeout", timeout, "--id",
                             "$(POD_NAME)");
    if (args && cl->workers.memory_limit) {
        char mem[32];
        snprintf(mem, sizeof mem, "%llu", (unsigned long long)cl->workers.memory_limit);
        json_array_append_new(args, json_string("--memory-limit"));
        json_array_append_new(args, json_string(mem));
    }
    if (args)
        add_keys(args);
    bool kafka = cl->queue.kind == CV_SPEC_QUEUE_KAFKA;
    k8s_pod_args a = {
        .own = p->own, .component = "worker", .image = p->image, .args = args,
        .keys_secret = p->keys_secret,
        .env = json_pack("[{s:s, s:{s:{s:s}}}]", "name", "POD_NAME", "valueFrom", "fieldRef",
                         "fieldPath", "metadata.name"),
        .resources = resources, .state_claim = state_claim, .state_read_only = kafka,
        .affinity = kafka ? NULL : same_node_as_controller(p)};
    json_t *tpl = k8s_pod_template(&a);
    name_of(name, p->own, "workers");   /* the StatefulSet and its headless Service */
    return tpl ? json_pack("{s:s, s:s, s:o, s:{s:i, s:s, s:s, s:{s:o}, s:o}}", "apiVersion",
                           "apps/v1", "kind", "StatefulSet", "metadata",
                           k8s_metadata(p->own, name, "worker"), "spec", "replicas",
                           cl->workers.replicas, "serviceName", name, "podManagementPolicy",
                           "Parallel", "selector", "matchLabels", k8s_selector(p->own, "worker"),
                           "template", tpl)
               : NULL;
}

/* -------------------------------------------------------------- render */

static void add(k8s_children *c, const k8s_kind *kind, const k8s_owner *own, const char *suffix,
                json_t *desired, k8s_apply_mode mode)
{
    k8s_child *ch = &c->v[c->n++];
    ch->kind = kind;
    name_of(ch->name, own, suffix);
    ch->desired = desired;
    ch->mode = mode;
}

int k8s_render(const cv_spec_cluster *cl, const k8s_owner *own, const cv_k8s_operator_opts *o,
               k8s_children *out, cv_diag *d)
{
    *out = (k8s_children){.replicas = cl->workers.replicas};
    if (strlen(own->name) > K8S_NAME_MAX)
        return cv_diag_fail(d, CV_E_K8S_NAME_TOO_LONG, (cv_span){0},
                            "the cluster's name '%s' is longer than %d characters: its "
                            "children's names would pass Kubernetes' limits", own->name,
                            K8S_NAME_MAX);
    json_t *resources = NULL;
    if (k8s_profile_resources(cl->workers.resource_profile, cl->workers.memory_limit,
                              &resources) != 0) {
        cv_sb known = CV_SB_INIT;
        for (const char *const *n = k8s_profile_names(); *n; n++)
            cv_sb_printf(&known, "%s%s", known.len ? ", " : "", *n);
        cv_diag_error(d, CV_E_K8S_UNKNOWN_PROFILE, (cv_span){0},
                      "spec.workers.resourceProfile: no resource profile named '%s' (known: %s)",
                      cl->workers.resource_profile, cv_sb_str(&known));
        cv_sb_free(&known);
        return -1;
    }
    if (cl->cache.remote && !strstr(cl->cache.remote, "://"))
        return cv_diag_fail(d, CV_E_K8S_SPEC_INVALID, (cv_span){0},
                            "spec.cache.remote: '%s' is a name; the cluster object is the "
                            "operator's and names its remote cache by URL", cl->cache.remote);
    plan p = {.cl = cl, .own = own, .o = o};
    plan_make(&p);
    out->cache_server = p.cache_server;
    char state[64];
    name_of(state, own, "state");
    bool kafka = cl->queue.kind == CV_SPEC_QUEUE_KAFKA;
    add(out, &k8s_configmaps, own, "config", config_map(&p, out->revision), K8S_APPLY_PATCH);
    add(out, &k8s_pvcs, own, "state",
        claim(&p, "state", kafka, o->state_size ? o->state_size : DEFAULT_STATE_SIZE,
              o->state_storage_class), K8S_APPLY_GROW);
    add(out, &k8s_pvcs, own, "cache",
        p.cache_server ? claim(&p, "cache", false, p.cache_size, o->storage_class) : NULL,
        K8S_APPLY_GROW);
    add(out, &k8s_deployments, own, "cache", p.cache_server ? cache_server(&p) : NULL,
        K8S_APPLY_PATCH);
    add(out, &k8s_services, own, "cache",
        p.cache_server ? service(&p, "cache", "cache", CACHE_PORT) : NULL, K8S_APPLY_PATCH);
    add(out, &k8s_services, own, "controller",
        service(&p, "controller", "controller", CONTROLLER_PORT), K8S_APPLY_PATCH);
    add(out, &k8s_deployments, own, "controller", controller(&p, state), K8S_APPLY_PATCH);
    add(out, &k8s_services, own, "workers", service(&p, "workers", "worker", 0),
        K8S_APPLY_PATCH);
    add(out, &k8s_statefulsets, own, "workers", workers(&p, state, resources), K8S_APPLY_PATCH);
    /* Only the pruned children may be NULL; any other NULL ran out of memory. */
    for (int i = 0; i < out->n; i++) {
        bool optional = strcmp(out->v[i].name + strlen(own->name), "-cache") == 0;
        if (!out->v[i].desired && !(optional && !p.cache_server)) {
            k8s_children_free(out);
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory rendering '%s'",
                                own->name);
        }
    }
    return 0;
}

void k8s_children_free(k8s_children *c)
{
    for (int i = 0; i < c->n; i++)
        json_decref(c->v[i].desired);
    c->n = 0;
}
