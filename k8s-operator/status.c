/* A cluster's status: observedGeneration, the Ready, Reconciling and
 * Stalled conditions (kstatus conventions: Reconciling while the children
 * converge, Stalled when only a change of the spec can help), the worker
 * counts and the revision of the rendered config.  A condition keeps its
 * lastTransitionTime while its status stays, so an unchanged cluster gets
 * an identical status and no write. */
#include <string.h>

#include "k8s-operator/internal.h"

static const json_t *old_condition(const json_t *old_status, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(old_status, "conditions"), i, c)
        if (strcmp(k8s_str(c, "type"), type) == 0)
            return c;
    return NULL;
}

static json_t *condition(const json_t *old_status, const char *type, bool on, const char *reason,
                         const char *message, int64_t generation, const char *now)
{
    const char *status = on ? "True" : "False";
    const json_t *old = old_condition(old_status, type);
    const char *since = old && strcmp(k8s_str(old, "status"), status) == 0 &&
                                *k8s_str(old, "lastTransitionTime")
                            ? k8s_str(old, "lastTransitionTime")
                            : now;
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", status, "reason",
                     reason, "message", message, "lastTransitionTime", since,
                     "observedGeneration", (json_int_t)generation);
}

json_t *k8s_status_build(const json_t *old_status, const k8s_observed *ob, const char *now)
{
    const char *reason = ob->reason ? ob->reason : "Ready";
    json_t *conds = json_array();
    int64_t g = ob->generation;
    if (ob->stalled) {
        json_array_append_new(conds, condition(old_status, "Ready", false, reason, ob->message,
                                               g, now));
        json_array_append_new(conds, condition(old_status, "Reconciling", false, "Stalled",
                                               "", g, now));
        json_array_append_new(conds, condition(old_status, "Stalled", true, reason,
                                               ob->message, g, now));
    } else {
        json_array_append_new(conds, condition(old_status, "Ready", ob->ready,
                                               ob->ready ? "Ready" : reason, ob->message, g,
                                               now));
        json_array_append_new(conds, condition(old_status, "Reconciling", !ob->ready,
                                               ob->ready ? "Ready" : reason,
                                               ob->ready ? "" : ob->message, g, now));
        json_array_append_new(conds, condition(old_status, "Stalled", false, "SpecValid", "",
                                               g, now));
    }
    const char *rev = ob->revision ? ob->revision
                                   : k8s_str(old_status, "lastAppliedRevision");
    /* Not observed this time (stalled, or the API failed): the last counts. */
    json_int_t replicas = ob->revision ? ob->replicas
                                       : json_integer_value(json_object_get(old_status,
                                                                            "replicas"));
    json_int_t ready = ob->revision ? ob->ready_workers
                                    : json_integer_value(json_object_get(old_status,
                                                                         "readyWorkers"));
    json_t *st = json_pack("{s:I, s:I, s:I, s:o}", "observedGeneration", (json_int_t)g,
                           "replicas", replicas, "readyWorkers", ready, "conditions", conds);
    if (st && *rev)
        json_object_set_new(st, "lastAppliedRevision", json_string(rev));
    return st;
}
