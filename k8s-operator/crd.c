/* The CustomResourceDefinitions in schemas/crds/, generated from the JSON
 * Schemas the spec loader is checked against, so that the API server, the
 * loader and editors agree.  The schemas are structural by design; what a
 * CRD cannot say is dropped (additionalProperties:false: Kubernetes prunes
 * unknown fields) and anything else that is not structural is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/strbuf.h"
#include "k8s-operator/internal.h"

#define YAML_WIDTH 100
#define SCHEMA_MAX ((size_t)1 << 20)

/* The keywords a structural schema node may carry, in the order the CRD
 * files list them. */
static const char *const keywords[] = {
    "type", "description", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems", "required", "properties", "additionalProperties", "items", NULL,
};

static const char cluster_status[] =
    "{\"type\": \"object\", \"description\": \"Written by the operator, through the status "
    "subresource only.\", \"properties\": {"
    "\"observedGeneration\": {\"type\": \"integer\", \"format\": \"int64\", \"description\": "
    "\"The metadata.generation the status describes.\"},"
    "\"replicas\": {\"type\": \"integer\", \"description\": \"Worker replicas asked for.\"},"
    "\"readyWorkers\": {\"type\": \"integer\", \"description\": \"Worker pods ready.\"},"
    "\"lastAppliedRevision\": {\"type\": \"string\", \"description\": \"Hash of the rendered "
    "config (ConfigMap <name>-config) the children were last brought to.\"},"
    "\"conditions\": {\"type\": \"array\", \"x-kubernetes-list-type\": \"map\", "
    "\"x-kubernetes-list-map-keys\": [\"type\"], \"description\": \"Ready, Reconciling and "
    "Stalled, with reasons.\", \"items\": {\"type\": \"object\", \"required\": [\"type\", "
    "\"status\"], \"properties\": {"
    "\"type\": {\"type\": \"string\"},"
    "\"status\": {\"type\": \"string\", \"enum\": [\"True\", \"False\", \"Unknown\"]},"
    "\"reason\": {\"type\": \"string\"},"
    "\"message\": {\"type\": \"string\"},"
    "\"lastTransitionTime\": {\"type\": \"string\", \"format\": \"date-time\"},"
    "\"observedGeneration\": {\"type\": \"integer\", \"format\": \"int64\"}}}}}}";

static const char pipeline_status[] =
    "{\"type\": \"object\", \"description\": \"Reserved: nothing writes it yet.\", "
    "\"x-kubernetes-preserve-unknown-fields\": true}";

typedef struct kind_info {
    const char *kind, *plural, *singular, *short_name, *schema_file;
    const char *description;    /* what `kubectl explain` shows for the kind */
    const char *columns;        /* additionalPrinterColumns as JSON */
    const char *status;         /* the status schema as JSON */
} kind_info;

static const kind_info kinds[] = {
    {"CuvilBuildCluster", "cuvilbuildclusters", "cuvilbuildcluster", "cbc",
     "cuvilbuildcluster.schema.json",
     "A Cuvil build farm: the operator (`cuvil operator`, docs/kubernetes.md) runs its "
     "controller, workers and cache server. The spec is the one docs/specs.md describes.",
     "[{\"name\": \"Replicas\", \"type\": \"integer\", \"jsonPath\": \".spec.workers.replicas\"},"
     "{\"name\": \"Ready\", \"type\": \"integer\", \"jsonPath\": \".status.readyWorkers\"},"
     "{\"name\": \"Revision\", \"type\": \"string\", "
     "\"jsonPath\": \".status.lastAppliedRevision\"},"
     "{\"name\": \"Age\", \"type\": \"date\", \"jsonPath\": \".metadata.creationTimestamp\"}]",
     cluster_status},
    {"CuvilPipeline", "cuvilpipelines", "cuvilpipeline", "cpl", "cuvilpipeline.schema.json",
     "What a Cuvil farm builds (docs/specs.md). The farm's controller reads pipelines from the "
     "models repository; this kind lets the same files be applied and checked by the API "
     "server. The operator does not act on it.",
     "[{\"name\": \"Extends\", \"type\": \"string\", \"jsonPath\": \".spec.extends\"},"
     "{\"name\": \"Opt\", \"type\": \"string\", \"jsonPath\": \".spec.optLevel\"},"
     "{\"name\": \"Age\", \"type\": \"date\", \"jsonPath\": \".metadata.creationTimestamp\"}]",
     pipeline_status},
};

static const kind_info *find_kind(const char *kind)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].kind, kind) == 0)
            return &kinds[i];
    return NULL;
}

static int not_structural(cv_diag *d, const char *path, const char *why)
{
    cv_diag_error(d, CV_E_CRD_NOT_STRUCTURAL, (cv_span){0}, "schema node '%s' cannot go into a CRD: %s",
                  *path ? path : "(root)", why);
    return -1;
}

static bool known_keyword(const char *k)
{
    for (int i = 0; keywords[i]; i++)
        if (strcmp(k, keywords[i]) == 0)
            return true;
    return false;
}

static json_t *structural(const json_t *node, const char *path, cv_diag *d);

/* properties: every member's schema; path grows by ".name". */
static json_t *properties(const json_t *props, const char *path, cv_diag *d)
{
    json_t *out = json_object();
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
        json_t *s = structural(v, sub, d);
        if (!s) {
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, k, s);
    }
    return out;
}

/* One node and everything below it, keywords in the fixed order. */
static json_t *structural(const json_t *node, const char *path, cv_diag *d)
{
    if (!json_is_object(node) || !json_is_string(json_object_get(node, "type")))
        return not_structural(d, path, "every node needs a type"), NULL;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)node, k, v)
        if (!known_keyword(k) && strcmp(k, "title") != 0)
            return not_structural(d, path, k), NULL;
    json_t *out = json_object();
    for (int i = 0; out && keywords[i]; i++) {
        const char *kw = keywords[i];
        const json_t *val = json_object_get(node, kw);
        json_t *copy = NULL;
        char sub[512];
        if (!val)
            continue;
        if (strcmp(kw, "properties") == 0) {
            copy = properties(val, path, d);
        } else if (strcmp(kw, "additionalProperties") == 0) {
            if (json_is_false(val))
                continue;   /* Kubernetes prunes unknown fields instead */
            snprintf(sub, sizeof sub, "%s{}", path);
            copy = json_is_object(val) ? structural(val, sub, d)
                                       : (not_structural(d, path, "additionalProperties: true"),
                                          NULL);
        } else if (strcmp(kw, "items") == 0) {
            snprintf(sub, sizeof sub, "%s[]", path);
            copy = structural(val, sub, d);
        } else {
            copy = json_deep_copy(val);
        }
        if (!copy) {
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, kw, copy);
    }
    return out;
}

/* The document root: apiVersion and kind as plain strings (the API server
 * checks them), metadata reduced to its name (a CRD may only restrict
 * metadata.name), spec as the schema says, status as the operator writes. */
static json_t *root_schema(const json_t *schema, const kind_info *ki, cv_diag *d)
{
    const json_t *props = json_object_get(schema, "properties");
    json_t *spec = structural(json_object_get(props, "spec"), "spec", d);
    json_t *name = spec ? structural(k8s_at(props, "metadata.properties.name"), "metadata.name",
                                     d)
                        : NULL;
    json_t *status = json_loads(ki->status, 0, NULL);
    if (!spec || !name || !status) {
        json_decref(spec);
        json_decref(name);
        json_decref(status);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:[s], s:{s:{s:s}, s:{s:s}, s:{s:s, s:{s:o}}, s:o, s:o}}",
                     "type", "object", "description", ki->description, "required",
                     "spec", "properties", "apiVersion", "type", "string", "kind", "type",
                     "string", "metadata", "type", "object", "properties", "name", name, "spec",
                     spec, "status", status);
}

int cv_k8s_crd_build(const char *kind, const json_t *schema, json_t **out, cv_diag *d)
{
    *out = NULL;
    const kind_info *ki = find_kind(kind);
    if (!ki)
        return not_structural(d, kind, "not a Cuvil kind");
    json_t *root = root_schema(schema, ki, d);
    json_t *cols = json_loads(ki->columns, 0, NULL);
    char name[128];
    snprintf(name, sizeof name, "%s.%s", ki->plural, K8S_GROUP);
    if (root && cols)
        *out = json_pack(
            "{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:{s:s, s:s, s:s, s:s, s:[s], s:[s]}, s:s, "
            "s:[{s:s, s:b, s:b, s:{s:{}}, s:o, s:{s:o}}]}}",
            "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
            "metadata", "name", name, "labels", "app.kubernetes.io/name", "cuvil", "spec",
            "group", K8S_GROUP, "names", "kind", ki->kind, "listKind", "", "plural",
            ki->plural, "singular", ki->singular, "shortNames", ki->short_name, "categories",
            "cuvil", "scope", "Namespaced", "versions", "name", "v1", "served", 1, "storage", 1,
            "subresources", "status", "additionalPrinterColumns", cols, "schema",
            "openAPIV3Schema", root);
    else {
        json_decref(root);
        json_decref(cols);
    }
    if (!*out)
        return -1;
    char list_kind[64];
    snprintf(list_kind, sizeof list_kind, "%sList", ki->kind);
    json_object_set_new(k8s_at(*out, "spec.names"), "listKind", json_string(list_kind));
    return 0;
}

char *cv_k8s_crd_yaml(const json_t *crd)
{
    char *body = cv_k8s_yaml_emit(crd, YAML_WIDTH);
    if (!body)
        return NULL;
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "# Generated by `cuvil operator crds` from schemas/*.schema.json; do not "
                    "edit.\n# tests/unit/k8s-operator/test_k8s_manifests.c fails when this file "
                    "and the schema drift apart.\n");
    cv_sb_puts(&sb, body);
    free(body);
    return sb.oom ? (cv_sb_free(&sb), NULL) : cv_sb_steal(&sb);
}

int cv_k8s_crd_render(const char *schemas_dir, const char *kind, char **yaml,
                      char *file_name, size_t name_size, cv_diag *d)
{
    *yaml = NULL;
    const kind_info *ki = find_kind(kind);
    if (!ki)
        return not_structural(d, kind, "not a Cuvil kind");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", schemas_dir, ki->schema_file);
    json_t *schema = NULL, *crd = NULL;
    if (cv_json_read_file(path, SCHEMA_MAX, &schema, d) != 0)
        return -1;
    int rc = cv_k8s_crd_build(kind, schema, &crd, d);
    json_decref(schema);
    if (rc == 0 && !(*yaml = cv_k8s_crd_yaml(crd))) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        rc = -1;
    }
    json_decref(crd);
    snprintf(file_name, name_size, "%s.%s.yaml", ki->plural, K8S_GROUP);
    return rc;
}
