/* Bringing one child to its desired state with as few writes as possible:
 * read it; create it when absent; leave it alone when it already holds
 * everything desired (what the API server or others added is not ours to
 * undo); else one JSON merge patch carrying the resourceVersion read, so a
 * concurrent change gets 409 and the read is redone.  A child whose name
 * is taken by an object this cluster does not own is never touched. */
#include <stdio.h>
#include <string.h>

#include "common/units.h"
#include "k8s-operator/internal.h"

#define ATTEMPTS 3

/* A copy without the JSON nulls that mean "absent" (a create sends none). */
static json_t *without_nulls(const json_t *v)
{
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        const json_t *m;
        json_object_foreach((json_t *)v, k, m)
            if (!json_is_null(m))
                json_object_set_new(o, k, without_nulls(m));
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        const json_t *m;
        json_array_foreach(v, i, m)
            json_array_append_new(a, without_nulls(m));
        return a;
    }
    return json_deep_copy(v);
}

static uint64_t storage_bytes(const json_t *pvc)
{
    uint64_t b = 0;
    const char *q = k8s_str(pvc, "spec.resources.requests.storage");
    return q && cv_units_parse_size(q, &b, NULL) == 0 ? b : 0;
}

/* What to send for a volume: its metadata, and the storage request only
 * when it grows (the rest of a claim's spec is immutable; a claim cannot
 * shrink, so a smaller request is a warning and left as it is). */
static json_t *volume_patch(const k8s_child *ch, const json_t *cur, cv_diag *d)
{
    json_t *p = json_pack("{s:O}", "metadata", json_object_get(ch->desired, "metadata"));
    uint64_t want = storage_bytes(ch->desired), have = storage_bytes(cur);
    if (p && want > have)
        json_object_set_new(p, "spec", json_pack("{s:O}", "resources",
                                                 k8s_at(ch->desired, "spec.resources")));
    else if (want < have)
        cv_diag_add(d, CV_SEV_WARNING, CV_E_K8S_VOLUME_SHRINK, (cv_span){0}, NULL,
                    "volume %s asks for %s but has %s: a claim cannot shrink; kept as it is",
                    ch->name, k8s_str(ch->desired, "spec.resources.requests.storage"),
                    k8s_str(cur, "spec.resources.requests.storage"));
    return p;
}

static int create(const k8s_apply_ctx *x, const k8s_child *ch, json_t **current, cv_diag *d)
{
    char path[512];
    k8s_path(path, sizeof path, ch->kind, x->ns, NULL, false);
    json_t *body = without_nulls(ch->desired), *resp = NULL;
    long status = 0;
    int rc = cv_k8s_request(x->cl, "POST", path, NULL, body, &status, &resp, d);
    json_decref(body);
    if (rc)
        return -1;
    x->stats->creates++;
    if (status == 201 || status == 200) {
        *current = resp;
        return 0;
    }
    if (status == 409) {   /* made meanwhile: read it again */
        json_decref(resp);
        x->stats->conflicts++;
        return 2;
    }
    k8s_api_error(d, status, resp, "POST", path);
    json_decref(resp);
    return -1;
}

static int patch(const k8s_apply_ctx *x, const k8s_child *ch, const char *path, json_t *body,
                 json_t **current, cv_diag *d)
{
    json_t *resp = NULL;
    long status = 0;
    if (cv_k8s_request(x->cl, "PATCH", path, K8S_MERGE_PATCH, body, &status, &resp, d) != 0)
        return -1;
    x->stats->patches++;
    if (status == 200) {
        *current = resp;
        return 0;
    }
    if (status == 409) {
        json_decref(resp);
        x->stats->conflicts++;
        return 2;
    }
    k8s_api_error(d, status, resp, "PATCH", path);
    json_decref(resp);
    return -1;
}

static int delete_child(const k8s_apply_ctx *x, const char *path, cv_diag *d)
{
    json_t *body = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background"), *resp = NULL;
    long status = 0;
    int rc = cv_k8s_request(x->cl, "DELETE", path, NULL, body, &status, &resp, d);
    json_decref(body);
    if (rc == 0)
        x->stats->deletes++;
    if (rc == 0 && status != 200 && status != 202 && status != 404)
        rc = k8s_api_error(d, status, resp, "DELETE", path);
    json_decref(resp);
    return rc;
}

/* One attempt: 0 done, 1 not ours, 2 conflict (try again), -1 failure. */
static int attempt(const k8s_apply_ctx *x, const k8s_child *ch, json_t **current, cv_diag *d)
{
    char path[512];
    if (k8s_path(path, sizeof path, ch->kind, x->ns, ch->name, false) != 0)
        return cv_diag_fail(d, CV_E_K8S_NAME_TOO_LONG, (cv_span){0}, "path too long for %s", ch->name);
    json_t *cur = NULL;
    long status = 0;
    if (cv_k8s_request(x->cl, "GET", path, NULL, NULL, &status, &cur, d) != 0)
        return -1;
    if (status == 404) {
        json_decref(cur);
        return ch->desired ? create(x, ch, current, d) : 0;
    }
    if (status != 200) {
        k8s_api_error(d, status, cur, "GET", path);
        json_decref(cur);
        return -1;
    }
    if (!k8s_owned_by(cur, x->owner_uid)) {
        if (ch->desired)
            cv_diag_error(d, CV_E_K8S_CHILD_NOT_OWNED, (cv_span){0},
                          "%s %s exists and is not owned by this cluster; delete or rename it",
                          ch->kind->kind, ch->name);
        json_decref(cur);
        return ch->desired ? 1 : 0;
    }
    if (!ch->desired) {
        json_decref(cur);
        return delete_child(x, path, d);
    }
    json_t *want = ch->mode == K8S_APPLY_GROW ? volume_patch(ch, cur, d)
                                              : json_incref(ch->desired);
    if (!want || k8s_subset(want, cur)) {
        json_decref(want);
        *current = cur;
        return 0;
    }
    json_t *body = json_deep_copy(want);
    json_decref(want);
    json_object_set(json_object_get(body, "metadata"), "resourceVersion",
                    k8s_at(cur, "metadata.resourceVersion"));
    json_decref(cur);
    int rc = patch(x, ch, path, body, current, d);
    json_decref(body);
    return rc;
}

int k8s_apply(const k8s_apply_ctx *x, const k8s_child *ch, json_t **current, cv_diag *d)
{
    *current = NULL;
    for (int i = 0; i < ATTEMPTS; i++) {
        int rc = attempt(x, ch, current, d);
        if (rc != 2)
            return rc;
    }
    return cv_diag_fail(d, CV_E_K8S_CONFLICT, (cv_span){0},
                        "%s %s kept changing under the operator (409 %d times); retried later",
                        ch->kind->kind, ch->name, ATTEMPTS);
}
