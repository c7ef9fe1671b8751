/* Validated spec documents into the public structs, with defaults filled
 * in.  The walker has checked every value, so parsing here cannot fail. */
#include "spec/spec_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/invariant.h"
#include "common/jsonutil.h"

typedef struct conv {
    cv_arena *a;
    bool oom;
} conv;

static const char *str(conv *c, const json_t *obj, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v)
        return dflt;
    char *copy = cv_arena_strdup(c->a, v);
    c->oom |= copy == NULL;
    return copy;
}

static int64_t duration(const json_t *obj, const char *key, int64_t dflt)
{
    int64_t ms = dflt;
    const char *v = json_string_value(json_object_get(obj, key));
    if (v) {
        int rc = cv_units_parse_duration(v, &ms, NULL);
        CV_ASSERT_RET(NULL, rc == 0, dflt); /* the walker checked it */
    }
    return ms;
}

static uint64_t size(const json_t *obj, const char *key)
{
    uint64_t b = 0;
    const char *v = json_string_value(json_object_get(obj, key));
    if (v) {
        int rc = cv_units_parse_size(v, &b, NULL);
        CV_ASSERT_RET(NULL, rc == 0, 0); /* the walker checked it */
    }
    return b;
}

static int index_of(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

static void origin(conv *c, const cv_yaml_doc *doc, cv_spec_origin *o)
{
    o->file = doc->file;   /* lives as long as the set's documents */
    o->line = doc->line;
    o->col = doc->col;
}

int spec_convert_cluster(cv_arena *a, const cv_yaml_doc *doc, cv_spec_cluster *out)
{
    conv c = {.a = a};
    const json_t *root = doc->root, *spec = json_object_get(root, "spec");
    const json_t *src = json_object_get(spec, "source"), *w = json_object_get(spec, "workers");
    const json_t *q = json_object_get(spec, "queue"), *ca = json_object_get(spec, "cache");
    memset(out, 0, sizeof *out);
    out->name = str(&c, json_object_get(root, "metadata"), "name", NULL);
    origin(&c, doc, &out->origin);
    out->source.url = str(&c, src, "url", NULL);
    out->source.ref = str(&c, src, "ref", "main");
    out->source.interval_ms = duration(src, "interval", 60000);
    const json_t *replicas = json_object_get(w, "replicas");
    out->workers.replicas = replicas ? (int)json_integer_value(replicas) : 1;
    out->workers.resource_profile = str(&c, w, "resourceProfile", NULL);
    out->workers.job_timeout_ms = duration(w, "jobTimeout", 600000);
    out->workers.job_timeout_set = json_object_get(w, "jobTimeout") != NULL;
    out->workers.memory_limit = size(w, "memoryLimit");
    const char *kind = json_string_value(json_object_get(q, "kind"));
    out->queue.kind = kind && strcmp(kind, "kafka") == 0 ? CV_SPEC_QUEUE_KAFKA
                                                         : CV_SPEC_QUEUE_EMBEDDED;
    if (out->queue.kind == CV_SPEC_QUEUE_KAFKA) {
        out->queue.brokers = str(&c, q, "brokers", NULL);
        out->queue.topic_prefix = str(&c, q, "topicPrefix", "cuvil");
    }
    out->cache.size = size(ca, "size");
    out->cache.remote = str(&c, ca, "remote", NULL);
    out->cache.read_only = json_is_true(json_object_get(ca, "readOnly"));
    out->cache.signing_key_secret = str(&c, ca, "signingKeySecret", NULL);
    out->image_registry = str(&c, spec, "imageRegistry", NULL);
    return c.oom ? -1 : 0;
}

static const char *const *str_list(conv *c, const json_t *arr, int *n)
{
    *n = (int)json_array_size(arr);
    const char **v = cv_arena_alloc_array(c->a, (size_t)*n + 1, sizeof *v);
    if (!v) {
        c->oom = true;
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++) {
        v[i] = cv_arena_strdup(c->a, json_string_value(json_array_get(arr, (size_t)i)));
        c->oom |= v[i] == NULL;
    }
    return v;
}

int spec_convert_pipeline(cv_arena *a, const cv_yaml_doc *doc, const json_t *eff,
                          cv_spec_pipeline *out)
{
    conv c = {.a = a};
    const json_t *root = doc->root;
    memset(out, 0, sizeof *out);
    out->name = str(&c, json_object_get(root, "metadata"), "name", NULL);
    origin(&c, doc, &out->origin);
    out->extends = str(&c, json_object_get(root, "spec"), "extends", NULL);
    out->models = str_list(&c, json_object_get(eff, "models"), &out->n_models);
    out->targets = str_list(&c, json_object_get(eff, "targets"), &out->n_targets);
    const json_t *precs = json_object_get(eff, "precisions");
    for (size_t i = 0; i < json_array_size(precs) && out->n_precisions < CV_PRECISION__COUNT; i++)
        out->precisions[out->n_precisions++] =
            (cv_precision)cv_precision_parse(json_string_value(json_array_get(precs, i)));
    const char *opt = json_string_value(json_object_get(eff, "optLevel"));
    out->opt_level = opt ? (cv_opt_level)index_of(spec_opt_level_names, opt) : CV_OPT_O2;
    const json_t *cal = json_object_get(eff, "calibration");
    if (cal) {
        out->calibration_data = str(&c, cal, "data", NULL);
        out->calibration_method = str(&c, cal, "method", "percentile");
    }
    char *canon = cv_json_canonical(eff);
    out->canonical = canon ? cv_arena_strdup(a, canon) : NULL;
    c.oom |= out->canonical == NULL;
    free(canon);
    return c.oom ? -1 : 0;
}
