/* The operator's reconcile loop against the fake API server of tests/k8s/
 * (resourceVersions, chunked watch streams, 410 after compaction, 409 on
 * stale writes, the status subresource, merge patches, owner-reference
 * garbage collection): create -> children; scale -> one reconcile patches
 * the StatefulSet; a bad spec -> Stalled, not a crash loop; watch expiry ->
 * relist without missing a change; delete -> children go with the owner;
 * nothing changed -> no write at all; and the deploy/ Role allows every
 * request the operator made. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/yamldoc.h"
#include "tests/support/k8s_testlib.h"

#define APPS "/apis/apps/v1"
#define CORE "/api/v1"

static const char KAFKA_SPEC[] =
    "{\"source\": {\"url\": \"https://git.example.com/ml/models.git\", \"ref\": \"main\"},"
    " \"workers\": {\"replicas\": 3, \"resourceProfile\": \"high-cpu\", \"memoryLimit\": \"12Gi\"},"
    " \"queue\": {\"kind\": \"kafka\", \"brokers\": \"k1:9092,k2:9092\"},"
    " \"cache\": {\"size\": \"5Gi\"}, \"imageRegistry\": \"registry.example.com/cuvil\"}";

typedef struct fx {
    kt_fake fake;
    cv_k8s_operator *op;
    volatile int stop;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || kt_fake_start(&f->fake, NULL, false) != 0)
        return -1;
    cv_k8s_operator_opts o = {.ns = KT_NS, .image = "cuvil:test", .image_tag = "9.9.9",
                              .resync_ms = 3600000, .requeue_ms = 3600000, .backoff_ms = 50,
                              .stop = &f->stop};
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_k8s_operator_open(f->fake.cl, &o, &f->op, &d);
    cv_diag_free(&d);
    *state = f;
    return rc;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_k8s_operator_close(f->op);
    kt_fake_stop(&f->fake);
    free(f);
    return 0;
}

static const cv_k8s_operator_stats *stats(fx *f) { return cv_k8s_operator_get_stats(f->op); }

static int64_t writes(fx *f)
{
    const cv_k8s_operator_stats *s = stats(f);
    return s->creates + s->patches + s->deletes + s->status_writes;
}

static int step(fx *f, int64_t wait_ms)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_k8s_operator_step(f->op, wait_ms, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    return rc;
}

/* Steps until the operator reconciled `target` times in all (10 s at most). */
static void reconcile_until(fx *f, int64_t target)
{
    for (int i = 0; i < 20 && stats(f)->reconciles < target; i++)
        assert_int_equal(step(f, 500), 0);
    assert_true(stats(f)->reconciles >= target);
}

static void create_cluster(fx *f, const char *name, const char *spec)
{
    long st = 0;
    json_decref(kt_call(&f->fake, "POST", KT_CLUSTERS, NULL, kt_cluster(name, spec), &st));
    assert_int_equal(st, 201);
}

static json_t *cluster(fx *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, KT_CLUSTERS "/%s", name);
    return kt_get(&f->fake, path);
}

static void patch_cluster(fx *f, const char *name, const char *patch)
{
    char path[256];
    snprintf(path, sizeof path, KT_CLUSTERS "/%s", name);
    long st = 0;
    json_decref(kt_call(&f->fake, "PATCH", path, KT_MERGE, json_loads(patch, 0, NULL), &st));
    assert_int_equal(st, 200);
}

static const json_t *pod_container(const json_t *workload)
{
    return json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(
        workload, "spec"), "template"), "spec"), "containers"), 0);
}

/* Whether the pod's args hold a followed by b (b NULL: a alone). */
static bool args_have(const json_t *workload, const char *a, const char *b)
{
    const json_t *args = json_object_get(pod_container(workload), "args");
    for (size_t i = 0; i < json_array_size(args); i++)
        if (strcmp(json_string_value(json_array_get(args, i)), a) == 0 &&
            (!b || (i + 1 < json_array_size(args) &&
                    strcmp(json_string_value(json_array_get(args, i + 1)), b) == 0)))
            return true;
    return false;
}

/* ---------------------------------------------------------------- tests */

static void test_create_makes_children(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_non_null(sts);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"),
                                                        "replicas")), 3);
    const json_t *c = pod_container(sts);
    assert_string_equal(json_string_value(json_object_get(c, "image")),
                        "registry.example.com/cuvil/cuvil:9.9.9");
    /* high-cpu: 8 CPUs, 8Gi, raised to the job's 12Gi + 1Gi. */
    json_t *res = json_object_get(c, "resources");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"),
                                                          "cpu")), "8");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "limits"),
                                                          "memory")), "13Gi");
    assert_true(args_have(sts, "--queue", "kafka://k1:9092,k2:9092?topic_prefix=cuvil"));
    assert_true(args_have(sts, "--memory-limit", "12884901888"));
    assert_true(args_have(sts, "--remote-cache", "http://edge-cache.farm.svc:8080"));
    assert_true(args_have(sts, "--trees", "/var/lib/cuvil/state/trees"));
    /* signed action entries: the key pair from the Secret <name>-ac-keys */
    assert_true(args_have(sts, "--signing-key", "/etc/cuvil/ac-keys/signing.pem"));
    assert_true(args_have(sts, "--verify-key", "/etc/cuvil/ac-keys/verify.pem"));
    char *vols = json_dumps(json_object_get(json_object_get(json_object_get(
                                json_object_get(sts, "spec"), "template"), "spec"), "volumes"),
                            JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(vols, "\"secretName\":\"edge-ac-keys\""));
    free(vols);
    json_t *ctl = kt_get_child(&f->fake, APPS, "deployments", "edge-controller");
    assert_non_null(ctl);
    assert_true(args_have(ctl, "controller", "https://git.example.com/ml/models.git"));
    assert_true(args_have(ctl, "--interval", "1m"));
    /* the object's limits are the ceilings the repository's spec is held to */
    assert_true(args_have(ctl, "--memory-limit", "12884901888"));
    assert_true(args_have(ctl, "--job-timeout", NULL));
    assert_true(args_have(ctl, "--signing-key", "/etc/cuvil/ac-keys/signing.pem"));
    json_t *cache = kt_get_child(&f->fake, APPS, "deployments", "edge-cache");
    assert_true(args_have(cache, "--max-size", "4831838208"));   /* 90% of 5Gi */
    json_t *pvc = kt_get_child(&f->fake, CORE, "persistentvolumeclaims", "edge-state");
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(
                            pvc, "spec"), "accessModes"), 0)), "ReadWriteMany");
    json_t *cpvc = kt_get_child(&f->fake, CORE, "persistentvolumeclaims", "edge-cache");
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
                            json_object_get(cpvc, "spec"), "resources"), "requests"),
                            "storage")), "5Gi");
    json_t *cm = kt_get_child(&f->fake, CORE, "configmaps", "edge-config");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(cm, "data"),
                                                             "cluster.yaml")),
                           "replicas: 3"));
    for (const char *const *s = (const char *const[]){"edge-controller", "edge-workers",
                                                      "edge-cache", NULL}; *s; s++) {
        json_t *svc = kt_get_child(&f->fake, CORE, "services", *s);
        assert_non_null(svc);
        json_decref(svc);
    }
    /* Status: not Ready (the fake runs no pods), nothing stalled. */
    json_t *cl = cluster(f, "edge");
    json_t *st = json_object_get(cl, "status");
    assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "readyWorkers")), 0);
    assert_int_equal(strlen(json_string_value(json_object_get(st, "lastAppliedRevision"))), 12);
    assert_string_equal(kt_condition(cl, "Ready", "status"), "False");
    assert_string_equal(kt_condition(cl, "Reconciling", "status"), "True");
    assert_string_equal(kt_condition(cl, "Stalled", "status"), "False");
    assert_int_equal(stats(f)->creates, 9);
    json_decref(cl);
    json_decref(cm);
    json_decref(cpvc);
    json_decref(pvc);
    json_decref(cache);
    json_decref(ctl);
    json_decref(sts);
}

static void test_scale_patches_statefulset_in_one_reconcile(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    json_t *ctl = kt_get_child(&f->fake, APPS, "deployments", "edge-controller");
    patch_cluster(f, "edge", "{\"spec\": {\"workers\": {\"replicas\": 7}}}");
    int64_t before = stats(f)->reconciles;
    assert_int_equal(step(f, 5000), 0);
    assert_int_equal(stats(f)->reconciles, before + 1);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"),
                                                        "replicas")), 7);
    /* Scaling rolls nothing else: the controller's Deployment is untouched. */
    json_t *ctl2 = kt_get_child(&f->fake, APPS, "deployments", "edge-controller");
    assert_string_equal(json_string_value(json_object_get(json_object_get(ctl, "metadata"),
                                                          "resourceVersion")),
                        json_string_value(json_object_get(json_object_get(ctl2, "metadata"),
                                                          "resourceVersion")));
    json_t *cl = cluster(f, "edge");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cl, "status"),
                                                        "observedGeneration")), 2);
    json_decref(cl);
    json_decref(ctl2);
    json_decref(sts);
    json_decref(ctl);
}

static void test_spec_error_stalls(void **state)
{
    fx *f = *state;
    /* kafka without brokers: CV6003 from the spec loader. */
    create_cluster(f, "bad", "{\"source\": {\"url\": \"https://git.example.com/m.git\"},"
                             " \"queue\": {\"kind\": \"kafka\"}}");
    reconcile_until(f, 1);
    json_t *cl = cluster(f, "bad");
    assert_string_equal(kt_condition(cl, "Stalled", "status"), "True");
    assert_string_equal(kt_condition(cl, "Stalled", "reason"), "SpecInvalid");
    assert_non_null(strstr(kt_condition(cl, "Stalled", "message"), "CV6003"));
    assert_string_equal(kt_condition(cl, "Ready", "status"), "False");
    assert_null(kt_get_child(&f->fake, APPS, "statefulsets", "bad-workers"));
    assert_int_equal(stats(f)->creates, 0);
    json_decref(cl);
    /* No crash loop: the stalled cluster waits for a change. */
    int64_t n = stats(f)->reconciles, w = writes(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(step(f, 200), 0);
    assert_int_equal(stats(f)->reconciles, n);
    assert_int_equal(writes(f), w);
    /* An unknown resource profile stalls too, with its own reason. */
    patch_cluster(f, "bad", "{\"spec\": {\"queue\": {\"brokers\": \"k1:9092\"},"
                            " \"workers\": {\"resourceProfile\": \"hgh-cpu\"}}}");
    reconcile_until(f, n + 1);
    cl = cluster(f, "bad");
    assert_string_equal(kt_condition(cl, "Stalled", "reason"), "UnknownResourceProfile");
    assert_non_null(strstr(kt_condition(cl, "Stalled", "message"), "CV7011"));
    json_decref(cl);
    /* Fixed: the children come. */
    patch_cluster(f, "bad", "{\"spec\": {\"workers\": {\"resourceProfile\": \"high-cpu\"}}}");
    reconcile_until(f, n + 2);
    cl = cluster(f, "bad");
    assert_string_equal(kt_condition(cl, "Stalled", "status"), "False");
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "bad-workers");
    assert_non_null(sts);
    json_decref(sts);
    json_decref(cl);
}

static void test_watch_expiry_relists_without_missing_a_change(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    assert_int_equal(step(f, 200), 0);   /* the watch is at the latest version */
    /* A change while the operator is not watching, then the history goes. */
    patch_cluster(f, "edge", "{\"spec\": {\"workers\": {\"replicas\": 4}}}");
    json_decref(kt_call(&f->fake, "POST", "/fake/compact", NULL, NULL, NULL));
    int64_t relists = stats(f)->relists;
    for (int i = 0; i < 10 && stats(f)->relists == relists; i++)
        assert_int_equal(step(f, 500), 0);
    assert_int_equal(stats(f)->relists, relists + 1);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"),
                                                        "replicas")), 4);
    json_decref(sts);
    /* And the watch goes on from the list's version. */
    patch_cluster(f, "edge", "{\"spec\": {\"workers\": {\"replicas\": 2}}}");
    int64_t n = stats(f)->reconciles;
    reconcile_until(f, n + 1);
    sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"),
                                                        "replicas")), 2);
    json_decref(sts);
}

static void test_delete_cascades_through_owner_references(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    json_t *cl = cluster(f, "edge");
    const char *uid = json_string_value(json_object_get(json_object_get(cl, "metadata"), "uid"));
    static const char *const kinds[][3] = {
        {APPS, "statefulsets", "edge-workers"},   {APPS, "deployments", "edge-controller"},
        {APPS, "deployments", "edge-cache"},      {CORE, "services", "edge-workers"},
        {CORE, "services", "edge-controller"},    {CORE, "services", "edge-cache"},
        {CORE, "configmaps", "edge-config"},      {CORE, "persistentvolumeclaims", "edge-state"},
        {CORE, "persistentvolumeclaims", "edge-cache"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        json_t *o = kt_get_child(&f->fake, kinds[i][0], kinds[i][1], kinds[i][2]);
        assert_non_null(o);
        json_t *refs = json_object_get(json_object_get(o, "metadata"), "ownerReferences");
        assert_int_equal(json_array_size(refs), 1);
        json_t *r = json_array_get(refs, 0);
        assert_string_equal(json_string_value(json_object_get(r, "uid")), uid);
        assert_string_equal(json_string_value(json_object_get(r, "kind")), "CuvilBuildCluster");
        assert_true(json_is_true(json_object_get(r, "controller")));
        assert_true(json_is_true(json_object_get(r, "blockOwnerDeletion")));
        json_decref(o);
    }
    json_decref(cl);
    long st = 0;
    json_decref(kt_call(&f->fake, "DELETE", KT_CLUSTERS "/edge", NULL, NULL, &st));
    assert_int_equal(st, 200);
    int64_t w = writes(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(step(f, 200), 0);
    assert_int_equal(writes(f), w);   /* nothing recreated */
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        assert_null(kt_get_child(&f->fake, kinds[i][0], kinds[i][1], kinds[i][2]));
}

/* What the StatefulSet and Deployment controllers would report. */
static void set_workload_status(fx *f, const char *plural, const char *name, const char *status)
{
    char path[256];
    snprintf(path, sizeof path, APPS "/namespaces/" KT_NS "/%s/%s/status", plural, name);
    long st = 0;
    json_decref(kt_call(&f->fake, "PATCH", path, KT_MERGE, json_loads(status, 0, NULL), &st));
    assert_int_equal(st, 200);
}

static void test_unchanged_reconcile_writes_nothing(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    assert_int_equal(step(f, 300), 0);   /* our own status write comes back as an event */
    long fake_writes = kt_fake_stat(&f->fake, "writes");
    int64_t w = writes(f), n = stats(f)->reconciles;
    cv_k8s_operator_resync(f->op);
    assert_int_equal(step(f, 300), 0);
    assert_int_equal(stats(f)->reconciles, n + 1);
    assert_int_equal(writes(f), w);
    assert_int_equal(kt_fake_stat(&f->fake, "writes"), fake_writes);
    /* The pods come up: Ready, once, then quiet again. */
    set_workload_status(f, "statefulsets", "edge-workers",
                        "{\"status\": {\"observedGeneration\": 1, \"replicas\": 3,"
                        " \"readyReplicas\": 3, \"updatedReplicas\": 3}}");
    set_workload_status(f, "deployments", "edge-controller",
                        "{\"status\": {\"observedGeneration\": 1, \"availableReplicas\": 1}}");
    set_workload_status(f, "deployments", "edge-cache",
                        "{\"status\": {\"observedGeneration\": 1, \"availableReplicas\": 1}}");
    cv_k8s_operator_resync(f->op);
    assert_int_equal(step(f, 300), 0);
    json_t *cl = cluster(f, "edge");
    assert_string_equal(kt_condition(cl, "Ready", "status"), "True");
    assert_string_equal(kt_condition(cl, "Reconciling", "status"), "False");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cl, "status"),
                                                        "readyWorkers")), 3);
    json_decref(cl);
    assert_int_equal(step(f, 300), 0);
    fake_writes = kt_fake_stat(&f->fake, "writes");
    w = writes(f);
    cv_k8s_operator_resync(f->op);
    assert_int_equal(step(f, 300), 0);
    assert_int_equal(writes(f), w);
    assert_int_equal(kt_fake_stat(&f->fake, "writes"), fake_writes);
}

static void test_conflict_is_retried(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    /* The next write to the StatefulSet meets a concurrent change. */
    json_decref(kt_call(&f->fake, "POST", "/fake/fail", NULL,
                        json_pack("{s:s, s:s, s:i, s:i}", "method", "PATCH", "prefix",
                                  APPS "/namespaces/" KT_NS "/statefulsets/", "code", 409,
                                  "count", 1), NULL));
    patch_cluster(f, "edge", "{\"spec\": {\"workers\": {\"replicas\": 5}}}");
    int64_t conflicts = stats(f)->conflicts, n = stats(f)->reconciles;
    reconcile_until(f, n + 1);
    assert_int_equal(stats(f)->conflicts, conflicts + 1);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"),
                                                        "replicas")), 5);
    json_decref(sts);
}

static void test_api_failures_back_off(void **state)
{
    fx *f = *state;
    json_decref(kt_call(&f->fake, "POST", "/fake/fail", NULL,
                        json_pack("{s:s, s:s, s:i, s:i}", "method", "GET", "prefix",
                                  KT_CLUSTERS, "code", 500, "count", 2), NULL));
    create_cluster(f, "edge", KAFKA_SPEC);
    assert_int_equal(step(f, 100), -1);
    assert_int_equal(stats(f)->backoff_ms, 50);
    assert_int_equal(step(f, 1000), -1);   /* waits 50 ms, fails again */
    assert_int_equal(stats(f)->backoff_ms, 100);
    reconcile_until(f, 1);
    assert_int_equal(stats(f)->backoff_ms, 0);
    assert_int_equal(stats(f)->failures, 2);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "edge-workers");
    assert_non_null(sts);
    json_decref(sts);
}

static void test_embedded_queue_and_external_cache(void **state)
{
    fx *f = *state;
    create_cluster(f, "solo", "{\"source\": {\"url\": \"https://git.example.com/m.git\"},"
                              " \"cache\": {\"remote\": \"https://cache.example.com\","
                              " \"readOnly\": true}}");
    reconcile_until(f, 1);
    json_t *sts = kt_get_child(&f->fake, APPS, "statefulsets", "solo-workers");
    assert_true(args_have(sts, "--queue", "sqlite:/var/lib/cuvil/state/queue.db"));
    assert_true(args_have(sts, "--remote-cache", "https://cache.example.com|read-only"));
    json_t *aff = json_object_get(json_object_get(json_object_get(json_object_get(sts, "spec"),
                                                                  "template"), "spec"),
                                  "affinity");
    assert_non_null(json_object_get(aff, "podAffinity"));   /* on the controller's node */
    json_t *pvc = kt_get_child(&f->fake, CORE, "persistentvolumeclaims", "solo-state");
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(
                            pvc, "spec"), "accessModes"), 0)), "ReadWriteOnce");
    assert_null(kt_get_child(&f->fake, APPS, "deployments", "solo-cache"));
    assert_null(kt_get_child(&f->fake, CORE, "services", "solo-cache"));
    json_decref(pvc);
    json_decref(sts);
    /* No remote: the in-cluster cache server appears; back: it is pruned. */
    patch_cluster(f, "solo", "{\"spec\": {\"cache\": null}}");
    reconcile_until(f, 2);
    json_t *cache = kt_get_child(&f->fake, APPS, "deployments", "solo-cache");
    assert_non_null(cache);
    json_decref(cache);
    patch_cluster(f, "solo", "{\"spec\": {\"cache\": {\"remote\": \"http://c:8080\"}}}");
    reconcile_until(f, 3);
    assert_null(kt_get_child(&f->fake, APPS, "deployments", "solo-cache"));
    assert_null(kt_get_child(&f->fake, CORE, "persistentvolumeclaims", "solo-cache"));
    assert_int_equal(stats(f)->deletes, 3);
}

static void test_foreign_object_is_left_alone(void **state)
{
    fx *f = *state;
    long st = 0;
    json_decref(kt_call(&f->fake, "POST", CORE "/namespaces/" KT_NS "/configmaps", NULL,
                        json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
                                  "ConfigMap", "metadata", "name", "edge-config", "data", "mine",
                                  "yes"), &st));
    assert_int_equal(st, 201);
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    json_t *cl = cluster(f, "edge");
    assert_string_equal(kt_condition(cl, "Stalled", "reason"), "ChildNotOwned");
    assert_non_null(strstr(kt_condition(cl, "Stalled", "message"), "CV7012"));
    json_t *cm = kt_get_child(&f->fake, CORE, "configmaps", "edge-config");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cm, "data"), "mine")),
                        "yes");
    json_decref(cm);
    json_decref(cl);
}

/* ------------------------------------------------------ the Role suffices */

static bool rule_allows(const json_t *rules, const char *group, const char *resource,
                        const char *verb)
{
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        bool g = false, res = false, v = false;
        size_t j;
        json_t *x;
        json_array_foreach(json_object_get(r, "apiGroups"), j, x)
            g = g || strcmp(json_string_value(x), group) == 0;
        json_array_foreach(json_object_get(r, "resources"), j, x)
            res = res || strcmp(json_string_value(x), resource) == 0;
        json_array_foreach(json_object_get(r, "verbs"), j, x)
            v = v || strcmp(json_string_value(x), verb) == 0;
        if (g && res && v)
            return true;
    }
    return false;
}

/* Every request the operator made in a full run maps to a verb on a
 * resource that k8s-operator/deploy/20-role.yaml grants. */
static void test_role_allows_every_request(void **state)
{
    fx *f = *state;
    create_cluster(f, "edge", KAFKA_SPEC);
    reconcile_until(f, 1);
    patch_cluster(f, "edge", "{\"spec\": {\"cache\": {\"remote\": \"http://c:8080\"}}}");
    reconcile_until(f, 2);   /* prunes: delete */
    char path[4096];
    snprintf(path, sizeof path, "%s/k8s-operator/deploy/20-role.yaml", cv_tmpdir_src_root());
    cv_yaml_doc *docs = NULL;
    int n = 0;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_yaml_load_file(path, &docs, &n, &d), 0);
    const json_t *rules = json_object_get(docs[0].root, "rules");
    json_t *st = kt_get(&f->fake, "/fake/stats");
    size_t i;
    json_t *req;
    int checked = 0;
    json_array_foreach(json_object_get(st, "requests"), i, req) {
        const char *method = json_string_value(json_array_get(req, 0));
        char p[1024];
        snprintf(p, sizeof p, "%s", json_string_value(json_array_get(req, 1)));
        if (strcmp(method, "POST") == 0 && strstr(p, "cuvilbuildclusters"))
            continue;   /* the test's own */
        if (strcmp(method, "PATCH") == 0 && strstr(p, "cuvilbuildclusters/edge") &&
            !strstr(p, "/status"))
            continue;
        bool watch = strstr(p, "watch=1") != NULL;
        *strchrnul(p, '?') = '\0';
        /* /api/v1/namespaces/NS/R[/NAME[/status]] or /apis/G/V/namespaces/NS/R[...] */
        char *ns = strstr(p, "/namespaces/");
        assert_non_null(ns);
        char group[64] = "";
        if (strncmp(p, "/apis/", 6) == 0)
            snprintf(group, sizeof group, "%.*s", (int)strcspn(p + 6, "/"), p + 6);
        char *res = strchr(ns + 12, '/') + 1, resource[128];
        char *name = strchr(res, '/');
        char *sub = name ? strchr(name + 1, '/') : NULL;
        snprintf(resource, sizeof resource, "%.*s%s%s", (int)strcspn(res, "/"), res,
                 sub ? "/" : "", sub ? sub + 1 : "");
        const char *verb = strcmp(method, "GET") == 0 ? (watch ? "watch" : name ? "get" : "list")
                           : strcmp(method, "POST") == 0  ? "create"
                           : strcmp(method, "PATCH") == 0 ? "patch"
                           : strcmp(method, "DELETE") == 0 ? "delete"
                                                            : "update";
        if (!rule_allows(rules, group, resource, verb))
            fail_msg("20-role.yaml does not allow %s on %s/%s", verb, group, resource);
        checked++;
    }
    assert_true(checked > 20);
    json_decref(st);
    cv_yaml_free(docs, n);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_makes_children, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scale_patches_statefulset_in_one_reconcile, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spec_error_stalls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_expiry_relists_without_missing_a_change,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_cascades_through_owner_references, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_reconcile_writes_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_conflict_is_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_failures_back_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_embedded_queue_and_external_cache, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_foreign_object_is_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_role_allows_every_request, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
