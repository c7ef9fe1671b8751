/* The pieces of the children's pods: labels and metadata with the owner
 * reference, the hardened pod template, the named resource profiles. */
#include <stdio.h>
#include <string.h>

#include "k8s-operator/internal.h"

#define RUN_AS 10001                     /* the image's non-root user */
#define STATE_MOUNT "/var/lib/cuvil"
#define CACHE_MOUNT "/var/cache/cuvil"

json_t *k8s_selector(const k8s_owner *own, const char *component)
{
    return json_pack("{s:s, s:s, s:s}", "app.kubernetes.io/name", "cuvil",
                     "app.kubernetes.io/instance", own->name, "app.kubernetes.io/component",
                     component);
}

json_t *k8s_labels(const k8s_owner *own, const char *component)
{
    json_t *l = k8s_selector(own, component);
    json_object_set_new(l, "app.kubernetes.io/managed-by", json_string(K8S_FIELD_MANAGER));
    return l;
}

/* The owner reference that makes deleting the cluster delete the child. */
static json_t *owner_refs(const k8s_owner *own)
{
    return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", K8S_API_VERSION, "kind",
                     K8S_KIND_CLUSTER, "name", own->name, "uid", own->uid, "controller", 1,
                     "blockOwnerDeletion", 1);
}

json_t *k8s_metadata(const k8s_owner *own, const char *name, const char *component)
{
    return json_pack("{s:s, s:s, s:o, s:o}", "name", name, "namespace", own->ns, "labels",
                     k8s_labels(own, component), "ownerReferences", owner_refs(own));
}

/* ------------------------------------------------------------- profiles */

/* Worker pods by resourceProfile: CPU requested (no CPU limit: a compile
 * may burst), memory requested and limited alike. */
typedef struct profile {
    const char *name, *cpu;
    uint64_t memory_mi;
} profile;

static const profile profiles[] = {
    {"small", "1", 2048},      {"standard", "2", 4096},     {"high-cpu", "8", 8192},
    {"high-memory", "4", 32768}, {"xlarge", "16", 32768},
};
static const char *const profile_names[] = {"small", "standard", "high-cpu", "high-memory",
                                            "xlarge", NULL};
#define DEFAULT_PROFILE 1                /* standard */
#define JOB_OVERHEAD_MI 1024             /* the worker beside its job's memory */

const char *const *k8s_profile_names(void) { return profile_names; }

void k8s_quantity(uint64_t bytes, char out[32])
{
    static const char *const units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int u = 0;
    while (u < 6 && bytes && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, 32, "%llu%s", (unsigned long long)bytes, units[u]);
}

int k8s_profile_resources(const char *name, uint64_t job_memory, json_t **out)
{
    const profile *p = NULL;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (name ? strcmp(name, profiles[i].name) == 0 : i == DEFAULT_PROFILE)
            p = &profiles[i];
    if (!p)
        return -1;
    uint64_t mem = p->memory_mi << 20;
    uint64_t job = job_memory ? job_memory + ((uint64_t)JOB_OVERHEAD_MI << 20) : 0;
    if (job > mem)   /* room for the job's own limit, rounded up to whole Mi */
        mem = (job + (1u << 20) - 1) & ~(((uint64_t)1 << 20) - 1);
    char q[32];
    k8s_quantity(mem, q);
    *out = json_pack("{s:{s:s, s:s}, s:{s:s}}", "requests", "cpu", p->cpu, "memory", q,
                     "limits", "memory", q);
    return *out ? 0 : -1;
}

/* ---------------------------------------------------------- pod template */

static json_t *volume(const char *name, const char *claim)
{
    return claim ? json_pack("{s:s, s:{s:s}}", "name", name, "persistentVolumeClaim",
                             "claimName", claim)
                 : json_pack("{s:s, s:{}}", "name", name, "emptyDir");
}

static json_t *volumes(const k8s_pod_args *a, json_t **mounts)
{
    json_t *v = json_array(), *m = json_array();
    if (a->state_claim) {
        json_array_append_new(v, volume("state", a->state_claim));
        /* readOnly only when true: the API server drops a false one. */
        json_t *mount = json_pack("{s:s, s:s}", "name", "state", "mountPath", STATE_MOUNT);
        if (a->state_read_only)
            json_object_set_new(mount, "readOnly", json_true());
        json_array_append_new(m, mount);
    }
    json_array_append_new(v, volume("cache", a->cache_claim));
    json_array_append_new(m, json_pack("{s:s, s:s}", "name", "cache", "mountPath", CACHE_MOUNT));
    json_array_append_new(v, volume("tmp", NULL));
    json_array_append_new(m, json_pack("{s:s, s:s}", "name", "tmp", "mountPath", "/tmp"));
    if (a->keys_secret) {   /* required: a farm without its keys must not start */
        json_array_append_new(v, json_pack("{s:s, s:{s:s, s:i}}", "name", "ac-keys", "secret",
                                           "secretName", a->keys_secret, "defaultMode", 0440));
        json_array_append_new(m, json_pack("{s:s, s:s, s:b}", "name", "ac-keys", "mountPath",
                                           K8S_KEYS_DIR, "readOnly", 1));
    }
    *mounts = m;
    return v;
}

/* Only what a build needs: no privileges, a read-only root file system
 * (writes go to the mounted volumes), no service account token.  Optional
 * credentials (a git token, the remote cache's token) come from the Secret
 * <cluster>-credentials as environment variables. */
static json_t *container(const k8s_pod_args *a, json_t *mounts)
{
    json_t *env = a->env ? a->env : json_array();
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "TMPDIR", "value", "/tmp"));
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "HOME", "value", "/tmp"));
    char secret[96];
    snprintf(secret, sizeof secret, "%s-credentials", a->own->name);
    json_t *c = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:[{s:{s:s, s:b}}], s:o, s:o, s:{s:b, s:b, s:b, s:{s:[s]}}}",
        "name", a->component, "image", a->image, "imagePullPolicy", "IfNotPresent", "args",
        a->args, "env", env, "envFrom", "secretRef", "name", secret, "optional", 1, "resources",
        a->resources, "volumeMounts", mounts, "securityContext", "allowPrivilegeEscalation", 0,
        "readOnlyRootFilesystem", 1, "runAsNonRoot", 1, "capabilities", "drop", "ALL");
    if (!c)
        return NULL;
    if (a->port) {
        json_object_set_new(c, "ports", json_pack("[{s:s, s:i, s:s}]", "name", "http",
                                                  "containerPort", a->port, "protocol", "TCP"));
        json_object_set_new(c, "readinessProbe",
                            json_pack("{s:{s:s, s:s}, s:i, s:i}", "httpGet", "path",
                                      a->probe_path, "port", "http", "periodSeconds", 10,
                                      "timeoutSeconds", 5));
    }
    return c;
}

json_t *k8s_pod_template(const k8s_pod_args *a)
{
    json_t *mounts = NULL;
    json_t *vols = volumes(a, &mounts);
    json_t *c = container(a, mounts);
    if (!c) {
        json_decref(vols);
        json_decref(a->affinity);
        return NULL;
    }
    json_t *spec = json_pack(
        "{s:b, s:{s:b, s:i, s:i, s:i, s:{s:s}}, s:[o], s:o, s:i, s:o}",
        "automountServiceAccountToken", 0, "securityContext", "runAsNonRoot", 1, "runAsUser",
        RUN_AS, "runAsGroup", RUN_AS, "fsGroup", RUN_AS, "seccompProfile", "type",
        "RuntimeDefault", "containers", c, "volumes", vols, "terminationGracePeriodSeconds", 60,
        "affinity", a->affinity ? a->affinity : json_null());
    return json_pack("{s:{s:o}, s:o}", "metadata", "labels", k8s_labels(a->own, a->component),
                     "spec", spec);
}
