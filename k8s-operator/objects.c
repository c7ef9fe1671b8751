/* Kubernetes objects as jansson trees: kinds and paths, field access, the
 * "already as wanted" comparison, owner references, API errors. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "k8s-operator/internal.h"

const k8s_kind k8s_configmaps = {"/api/v1", "v1", "ConfigMap", "configmaps"};
const k8s_kind k8s_services = {"/api/v1", "v1", "Service", "services"};
const k8s_kind k8s_pvcs = {"/api/v1", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"};
const k8s_kind k8s_deployments = {"/apis/apps/v1", "apps/v1", "Deployment", "deployments"};
const k8s_kind k8s_statefulsets = {"/apis/apps/v1", "apps/v1", "StatefulSet", "statefulsets"};
const k8s_kind k8s_clusters = {"/apis/" K8S_API_VERSION, K8S_API_VERSION, K8S_KIND_CLUSTER,
                               "cuvilbuildclusters"};

int k8s_path(char *out, size_t size, const k8s_kind *k, const char *ns, const char *name,
             bool status)
{
    int n = snprintf(out, size, "%s%s%s/%s%s%s%s", k->api, ns && *ns ? "/namespaces/" : "",
                     ns && *ns ? ns : "", k->plural, name ? "/" : "", name ? name : "",
                     status ? "/status" : "");
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

json_t *k8s_at(const json_t *obj, const char *dotted)
{
    char key[128];
    const json_t *v = obj;
    while (v && *dotted) {
        size_t n = strcspn(dotted, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, dotted, n);
        key[n] = '\0';
        v = json_is_object(v) ? json_object_get(v, key) : NULL;
        dotted += n + (dotted[n] == '.');
    }
    return (json_t *)v;
}

const char *k8s_str(const json_t *obj, const char *dotted)
{
    const char *s = json_string_value(k8s_at(obj, dotted));
    return s ? s : "";
}

bool k8s_subset(const json_t *want, const json_t *have)
{
    if (json_is_object(want)) {
        if (!json_is_object(have))
            return false;
        const char *k;
        const json_t *w;
        json_object_foreach((json_t *)want, k, w) {
            const json_t *h = json_object_get(have, k);
            if (json_is_null(w) ? h != NULL : !h || !k8s_subset(w, h))
                return false;
        }
        return true;
    }
    if (json_is_array(want)) {
        if (!json_is_array(have) || json_array_size(want) != json_array_size(have))
            return false;
        for (size_t i = 0; i < json_array_size(want); i++)
            if (!k8s_subset(json_array_get(want, i), json_array_get(have, i)))
                return false;
        return true;
    }
    return json_equal((json_t *)want, (json_t *)have);
}

bool k8s_owned_by(const json_t *obj, const char *uid)
{
    size_t i;
    const json_t *ref;
    json_array_foreach(k8s_at(obj, "metadata.ownerReferences"), i, ref)
        if (strcmp(k8s_str(ref, "uid"), uid) == 0)
            return true;
    return false;
}

int k8s_api_error(cv_diag *d, long status, const json_t *body, const char *method,
                  const char *path)
{
    int code = status == 401 || status == 403 ? CV_E_K8S_UNAUTHORIZED
               : status == 409               ? CV_E_K8S_CONFLICT
                                             : CV_E_K8S_API_ERROR;
    const char *msg = k8s_str(body, "message");
    cv_diag_error(d, code, (cv_span){0}, "%s %s: the API server answered %ld%s%.400s", method,
                  path, status, *msg ? ": " : "", msg);
    return -1;
}

/* A shallow copy of obj without status and with metadata minus the fields
 * every write changes. */
static json_t *intent(const json_t *obj)
{
    json_t *c = json_copy((json_t *)obj);
    json_t *meta = json_deep_copy(json_object_get(obj, "metadata"));
    if (!c)
        return NULL;
    json_object_del(c, "status");
    if (meta) {
        json_object_del(meta, "resourceVersion");
        json_object_del(meta, "managedFields");
        json_object_set_new(c, "metadata", meta);
    }
    return c;
}

bool k8s_same_intent(const json_t *a, const json_t *b)
{
    json_t *x = intent(a), *y = intent(b);
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

void k8s_now_rfc3339(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t k8s_mono_ms(void)
{
    return cv_clock_mono_ms();
}
