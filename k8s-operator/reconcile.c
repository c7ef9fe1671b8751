/* Reconciling one CuvilBuildCluster: its spec validated by the same loader
 * as the repository's specs (spec/spec*.c), its children rendered and
 * applied, what they report summed up in the status.  A spec the loader
 * refuses, an unknown resource profile or a child's name taken by someone
 * else makes the cluster Stalled with the message: the operator waits for
 * the next change of the object instead of failing again and again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "k8s-operator/internal.h"

#define MESSAGE_ERRORS 3

/* "CV6023 at spec.workers.replicas: ...; CV6001 ..." from d's errors. */
static void errors_text(const cv_diag *d, char *out, size_t size)
{
    cv_sb sb = CV_SB_INIT;
    int shown = 0;
    for (int i = 0; i < d->n && shown < MESSAGE_ERRORS; i++) {
        const cv_diag_entry *e = &d->v[i];
        if (e->sev != CV_SEV_ERROR)
            continue;
        cv_sb_printf(&sb, "%sCV%04d%s%s: %s", shown ? "; " : "", e->code,
                     e->path ? " at " : "", e->path ? e->path : "", e->msg);
        shown++;
    }
    if (d->n_errors > shown)
        cv_sb_printf(&sb, " (and %d more)", d->n_errors - shown);
    snprintf(out, size, "%s", shown ? cv_sb_str(&sb) : "the spec does not load");
    cv_sb_free(&sb);
}

/* The object as the spec loader reads a repository's file: apiVersion,
 * kind, metadata.name and .namespace, spec (the API server's own metadata
 * is not the loader's business). */
static cv_spec_set *load_spec(const json_t *obj, cv_diag *d)
{
    json_t *doc = json_object(), *meta = json_object();
    static const char *const top[] = {"apiVersion", "kind", "spec", NULL};
    for (int i = 0; top[i]; i++)
        if (json_object_get(obj, top[i]))
            json_object_set(doc, top[i], json_object_get(obj, top[i]));
    json_object_set(meta, "name", k8s_at(obj, "metadata.name"));
    if (k8s_at(obj, "metadata.namespace"))
        json_object_set(meta, "namespace", k8s_at(obj, "metadata.namespace"));
    json_object_set_new(doc, "metadata", meta);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    char file[160];
    snprintf(file, sizeof file, "%s/%s", k8s_str(obj, "metadata.namespace"),
             k8s_str(obj, "metadata.name"));
    cv_spec_set *s = cv_spec_set_new();
    if (!text || !s) {
        free(text);
        cv_spec_set_free(s);
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return NULL;
    }
    int rc = cv_spec_set_add(s, text, strlen(text), file, false, d);
    if (cv_spec_set_resolve(s, d) != 0 || rc != 0 || !cv_spec_set_cluster(s)) {
        if (!cv_diag_has_errors(d))
            cv_diag_error(d, CV_E_K8S_SPEC_INVALID, (cv_span){0}, "not a CuvilBuildCluster");
        cv_spec_set_free(s);
        s = NULL;
    }
    free(text);
    return s;
}

static int64_t int_at(const json_t *obj, const char *dotted)
{
    return json_integer_value(k8s_at(obj, dotted));
}

/* Whether a workload's controller has seen its latest spec. */
static bool observed(const json_t *w)
{
    return int_at(w, "status.observedGeneration") >= int_at(w, "metadata.generation");
}

/* Ready: the workers' StatefulSet has every replica ready at its latest
 * spec, the controller (and cache server) is available. */
static void observe(const k8s_children *ch, json_t *const *cur, k8s_observed *ob)
{
    const json_t *workers = NULL, *controller = NULL, *cache = NULL;
    for (int i = 0; i < ch->n; i++) {
        const char *suffix = strrchr(ch->v[i].name, '-');
        if (ch->v[i].kind == &k8s_statefulsets)
            workers = cur[i];
        else if (ch->v[i].kind == &k8s_deployments && strcmp(suffix, "-controller") == 0)
            controller = cur[i];
        else if (ch->v[i].kind == &k8s_deployments)
            cache = cur[i];
    }
    ob->replicas = ch->replicas;
    ob->ready_workers = (int)int_at(workers, "status.readyReplicas");
    bool workers_ok = workers && observed(workers) && ob->ready_workers == ch->replicas &&
                      int_at(workers, "status.updatedReplicas") >= ch->replicas;
    bool controller_ok = controller && observed(controller) &&
                         int_at(controller, "status.availableReplicas") >= 1;
    bool cache_ok = !ch->cache_server ||
                    (cache && observed(cache) && int_at(cache, "status.availableReplicas") >= 1);
    ob->ready = workers_ok && controller_ok && cache_ok;
    ob->reason = ob->ready ? "Ready" : !controller_ok ? "ControllerNotReady"
                                     : !cache_ok      ? "CacheNotReady"
                                                      : "WorkersNotReady";
    snprintf(ob->message, sizeof ob->message, "%d/%d workers ready; controller %s; cache %s",
             ob->ready_workers, ch->replicas, controller_ok ? "available" : "not available",
             !ch->cache_server ? "external" : cache_ok ? "available" : "not available");
}

/* Applies every child; 0, or the first failure (1: a name not ours). */
static int apply_all(cv_k8s_client *cl, const k8s_owner *own, const k8s_children *ch,
                     cv_k8s_operator_stats *st, json_t **cur, cv_diag *d)
{
    k8s_apply_ctx x = {.cl = cl, .ns = own->ns, .owner_uid = own->uid, .stats = st};
    int first = 0;
    for (int i = 0; i < ch->n; i++) {
        int rc = k8s_apply(&x, &ch->v[i], &cur[i], d);
        if (rc && !first)
            first = rc;
        if (rc < 0)
            break;   /* the API is failing: the next round retries */
    }
    return first;
}

/* Writes the status through /status when it differs.  *updated: the
 * object after the write. */
static int write_status(cv_k8s_client *cl, const json_t *obj, json_t *status,
                        cv_k8s_operator_stats *st, json_t **updated, cv_diag *d)
{
    if (json_equal(status, json_object_get(obj, "status")))
        return 0;
    char path[512];
    k8s_path(path, sizeof path, &k8s_clusters, k8s_str(obj, "metadata.namespace"),
             k8s_str(obj, "metadata.name"), true);
    json_t *body = json_pack("{s:{s:O}, s:O}", "metadata", "resourceVersion",
                             k8s_at(obj, "metadata.resourceVersion"), "status", status),
           *resp = NULL;
    long code = 0;
    int rc = cv_k8s_request(cl, "PATCH", path, K8S_MERGE_PATCH, body, &code, &resp, d);
    json_decref(body);
    if (rc)
        return -1;
    st->status_writes++;
    if (code == 200) {
        *updated = resp;
        return 0;
    }
    if (code == 409 || code == 404) {   /* changed or deleted meanwhile: its event follows */
        st->conflicts += code == 409;
        json_decref(resp);
        return 0;
    }
    rc = k8s_api_error(d, code, resp, "PATCH", path);
    json_decref(resp);
    return rc;
}

int k8s_reconcile(cv_k8s_client *cl, const cv_k8s_operator_opts *o, const json_t *obj,
                  cv_k8s_operator_stats *st, bool *settled, json_t **updated, cv_diag *d)
{
    *settled = false;
    *updated = NULL;
    if (k8s_at(obj, "metadata.deletionTimestamp"))
        return 0;   /* being deleted: the garbage collector takes the children */
    st->reconciles++;
    k8s_owner own = {k8s_str(obj, "metadata.name"), k8s_str(obj, "metadata.namespace"),
                     k8s_str(obj, "metadata.uid")};
    k8s_observed ob = {.generation = int_at(obj, "metadata.generation")};
    k8s_children ch = {0};
    json_t *cur[K8S_CHILDREN_MAX] = {0};
    cv_diag spec_d;
    cv_diag_init(&spec_d);
    int failed = 0;
    cv_spec_set *set = load_spec(obj, &spec_d);
    if (!set) {
        ob.stalled = true;
        ob.reason = "SpecInvalid";
    } else if (k8s_render(cv_spec_set_cluster(set), &own, o, &ch, &spec_d) != 0) {
        ob.stalled = true;
        ob.reason = cv_diag_get(&spec_d, 1) && cv_diag_get(&spec_d, 1)->code == CV_E_K8S_UNKNOWN_PROFILE
                        ? "UnknownResourceProfile"
                        : "NameTooLong";
    } else if ((failed = apply_all(cl, &own, &ch, st, cur, &spec_d)) == 1) {
        ob.stalled = true;
        ob.reason = "ChildNotOwned";
    } else if (failed < 0) {
        ob.reason = "ApplyFailed";
    } else {
        observe(&ch, cur, &ob);
        ob.revision = ch.revision;
    }
    if (ob.stalled || failed)
        errors_text(&spec_d, ob.message, sizeof ob.message);
    if (ob.stalled)
        cv_log_warn("cluster %s/%s is stalled (%s): %s", own.ns, own.name, ob.reason,
                    ob.message);
    char now[32];
    k8s_now_rfc3339(now);
    json_t *status = k8s_status_build(json_object_get(obj, "status"), &ob, now);
    int rc = status ? write_status(cl, obj, status, st, updated, d) : -1;
    json_decref(status);
    if (!ob.stalled)   /* API failures, warnings; a stalled cluster's errors are its status */
        cv_diag_merge(d, &spec_d);
    cv_diag_free(&spec_d);
    for (int i = 0; i < K8S_CHILDREN_MAX; i++)
        json_decref(cur[i]);
    k8s_children_free(&ch);
    cv_spec_set_free(set);
    *settled = ob.ready || ob.stalled;
    return failed < 0 ? -1 : rc;
}
