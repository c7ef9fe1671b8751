/* What the operator ships besides its code: the CRDs in schemas/crds/ are
 * exactly what `cuvil operator crds` makes of the JSON Schemas in schemas/ and
 * say what the schemas say; the YAML emitter writes what YAML 1.1 and 1.2
 * readers read back; the manifests pass yamllint and `kubectl apply
 * --dry-run=client` (against the fake API server, for discovery); the
 * sample cluster validates; the Dockerfile is multi-stage, non-root and
 * secret-free. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "common/jsonutil.h"
#include "common/yamldoc.h"
#include "controller/controller.h"
#include "tests/support/k8s_testlib.h"

static char *src_path(const char *rel)
{
    return cv_tmpdir_path(cv_tmpdir_src_root(), rel);
}

static const struct {
    const char *kind, *schema, *crd;
} crds[] = {
    {"CuvilBuildCluster", "schemas/cuvilbuildcluster.schema.json",
     "schemas/crds/cuvilbuildclusters.cuvil.dev.yaml"},
    {"CuvilPipeline", "schemas/cuvilpipeline.schema.json",
     "schemas/crds/cuvilpipelines.cuvil.dev.yaml"},
};

/* The member at a dotted path, or NULL. */
static json_t *at(const json_t *v, const char *dotted)
{
    char key[128];
    while (v && *dotted) {
        size_t n = strcspn(dotted, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, dotted);
        v = json_object_get(v, key);
        dotted += n + (dotted[n] == '.');
    }
    return (json_t *)v;
}

static json_t *load_yaml(const char *path)
{
    cv_yaml_doc *docs = NULL;
    int n = 0;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_yaml_load_file(path, &docs, &n, &d) != 0)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    assert_int_equal(n, 1);
    json_t *root = json_incref(docs[0].root);
    cv_yaml_free(docs, n);
    return root;
}

static json_t *load_json(const char *path)
{
    json_t *v = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_json_read_file(path, 1 << 20, &v, &d), 0);
    cv_diag_free(&d);
    return v;
}

/* ------------------------------------------------------------------ CRDs */

static void test_crds_are_generated_from_the_schemas(void **state)
{
    char *schemas = src_path("schemas");
    for (size_t i = 0; i < sizeof crds / sizeof crds[0]; i++) {
        char *yaml = NULL, name[128];
        cv_diag d;
        cv_diag_init(&d);
        assert_int_equal(cv_k8s_crd_render(schemas, crds[i].kind, &yaml, name, sizeof name, &d),
                         0);
        char *path = src_path(crds[i].crd);
        assert_non_null(strstr(path, name));
        size_t len = 0;
        char *committed = cv_tmpdir_read_file(path, &len);
        assert_non_null(committed);
        if (strcmp(committed, yaml) != 0)
            fail_msg("%s is stale: run `cuvil operator crds`", crds[i].crd);
        /* ... and reads back as the object the generator built. */
        char *sp = src_path(crds[i].schema);
        json_t *schema = load_json(sp), *built = NULL, *read = load_yaml(path);
        assert_int_equal(cv_k8s_crd_build(crds[i].kind, schema, &built, &d), 0);
        assert_true(json_equal(built, read));
        json_decref(built);
        json_decref(read);
        json_decref(schema);
        free(sp);
        free(committed);
        free(path);
        free(yaml);
        cv_diag_free(&d);
    }
    free(schemas);
}

/* Independently of the generator: every schema node has its CRD twin with
 * the same type, constraints, descriptions and members; only
 * additionalProperties:false is gone. */
static void same_node(const json_t *s, const json_t *c, const char *path)
{
    static const char *const same[] = {"type", "description", "enum", "pattern", "minimum",
                                       "maximum", "minLength", "maxLength", "minItems",
                                       "maxItems", "required", NULL};
    if (!c)
        fail_msg("%s: missing from the CRD", path);
    for (int i = 0; same[i]; i++) {
        const json_t *a = json_object_get(s, same[i]), *b = json_object_get(c, same[i]);
        if (!(a == b || (a && b && json_equal((json_t *)a, (json_t *)b))))
            fail_msg("%s: %s differs", path, same[i]);
    }
    const json_t *ap = json_object_get(s, "additionalProperties");
    if (json_is_false(ap))
        assert_null(json_object_get(c, "additionalProperties"));
    else if (ap)
        same_node(ap, json_object_get(c, "additionalProperties"), path);
    if (json_object_get(s, "items"))
        same_node(json_object_get(s, "items"), json_object_get(c, "items"), path);
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(s, "properties"), k, v) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%s", path, k);
        same_node(v, json_object_get(json_object_get(c, "properties"), k), sub);
    }
    assert_int_equal(json_object_size(json_object_get(s, "properties")),
                     json_object_size(json_object_get(c, "properties")));
}

static void test_crds_say_what_the_schemas_say(void **state)
{
    for (size_t i = 0; i < sizeof crds / sizeof crds[0]; i++) {
        char *sp = src_path(crds[i].schema), *cp = src_path(crds[i].crd);
        json_t *schema = load_json(sp), *crd = load_yaml(cp);
        json_t *ver = json_array_get(at(crd, "spec.versions"), 0);
        json_t *root = at(ver, "schema.openAPIV3Schema");
        same_node(at(schema, "properties.spec"), at(root, "properties.spec"),
                  "spec");
        same_node(at(schema, "properties.metadata.properties.name"),
                  at(root, "properties.metadata.properties.name"), "metadata.name");
        assert_non_null(at(ver, "subresources.status"));
        assert_non_null(at(root, "properties.status"));
        assert_true(json_array_size(at(ver, "additionalPrinterColumns")) >= 3);
        assert_string_equal(json_string_value(at(crd, "spec.names.kind")),
                            crds[i].kind);
        json_decref(crd);
        json_decref(schema);
        free(cp);
        free(sp);
    }
}

static void expect_not_structural(const char *schema_text, const char *needle)
{
    json_t *schema = json_loads(schema_text, 0, NULL), *crd = NULL;
    assert_non_null(schema);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_k8s_crd_build("CuvilPipeline", schema, &crd, &d), -1);
    assert_int_equal(d.v[0].code, 7020);
    if (!strstr(d.v[0].msg, needle))
        fail_msg("'%s' does not say '%s'", d.v[0].msg, needle);
    cv_diag_free(&d);
    json_decref(schema);
}

static void test_crd_refuses_non_structural_schemas(void **state)
{
    expect_not_structural("{\"properties\": {\"metadata\": {\"properties\": {\"name\": {\"type\":"
                          " \"string\"}}}, \"spec\": {\"type\": \"object\", \"properties\":"
                          " {\"a\": {\"anyOf\": [], \"type\": \"string\"}}}}}",
                          "anyOf");
    expect_not_structural("{\"properties\": {\"spec\": {\"type\": \"object\", \"properties\":"
                          " {\"a\": {\"description\": \"untyped\"}}}}}",
                          "spec.a");
}

/* ------------------------------------------------------------------ YAML */

static void test_yaml_emitter_round_trips(void **state)
{
    const char *text =
        "{\"plain\": \"x86_64\", \"bool_words\": [\"yes\", \"no\", \"on\", \"Off\", \"y\","
        " \"null\", \"true\"], \"numbers\": [\"1\", \"0x1f\", \"1e3\", \"1_000\", \"1:20\","
        " \".inf\", 3, -4, 2.5], \"indicators\": [\"\", \" lead\", \"trail \", \"a: b\","
        " \"#x\", \"- x\", \"*star\", \"&amp\", \"!tag\", \"%pct\", \"@at\", \"`tick\", \"'q'\","
        " \"\\\"dq\\\"\", \"{b}\", \"[s]\", \"a #b\", \"~\"], \"text\": \"line one\\nline two\\t"
        "tab \\\\ \\u00e9\", \"long\": \"Lorem ipsum dolor sit amet, consectetur adipiscing elit,"
        " sed do eiusmod tempor incididunt ut labore et dolore magna aliqua: ut enim ad minim"
        " veniam, quis nostrud exercitation ullamco laboris.\", \"empty\": {}, \"none\": [],"
        " \"nested\": [{\"a\": [1, {\"b\": null}]}, [\"x\", [\"y\"]]], \"key: odd\": true}";
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    char *yaml = cv_k8s_yaml_emit(v, 60);
    assert_non_null(yaml);
    for (const char *l = yaml; *l; l = strchr(l, '\n') + 1)   /* folded under the width */
        assert_true(strcspn(l, "\n") <= 60 || !strchr(l, ' '));
    cv_yaml_doc *docs = NULL;
    int n = 0;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_yaml_load(yaml, strlen(yaml), "emitted.yaml", &docs, &n, &d), 0);
    assert_true(json_equal(v, docs[0].root));
    cv_yaml_free(docs, n);
    cv_diag_free(&d);
    /* PyYAML reads YAML 1.1 (yes/no/on/off are booleans there). */
    if (cv_pyrun_has_module("yaml")) {
        char *out = NULL;
        const char *code = "import sys, json, yaml\n"
                           "print(json.dumps(yaml.safe_load(sys.stdin.read())))\n";
        assert_int_equal(cv_pyrun_io(code, NULL, yaml, strlen(yaml), &out, NULL), 0);
        json_t *back = json_loads(out, 0, NULL);
        assert_true(json_equal(v, back));
        json_decref(back);
        free(out);
    }
    free(yaml);
    json_decref(v);
}

/* ------------------------------------------------------------- manifests */

static void test_manifests_pass_yamllint(void **state)
{
    if (access("/usr/bin/yamllint", X_OK) != 0) {
        fprintf(stderr, "skipped: needs yamllint\n");
        skip();
    }
    char *cfg = src_path(".yamllint"), *deploy = src_path("k8s-operator/deploy"),
         *crd_dir = src_path("schemas/crds");
    const char *argv[] = {"/usr/bin/yamllint", "-s", "-c", cfg, "-f", "parsable", deploy,
                          crd_dir, NULL};
    char *out = NULL;
    int rc = cv_run_argv(argv, "/dev/null", &out);
    if (rc)
        fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    free(crd_dir);
    free(deploy);
    free(cfg);
}

static const char *find_kubectl(void)
{
    static const char *const places[] = {"/usr/bin/kubectl", "/usr/local/bin/kubectl", NULL};
    for (int i = 0; places[i]; i++)
        if (access(places[i], X_OK) == 0)
            return places[i];
    return NULL;
}

/* kubectl needs an API server for discovery even with --dry-run=client:
 * the fake serves it, and nothing is created. */
static void test_manifests_pass_kubectl_dry_run(void **state)
{
    const char *kubectl = find_kubectl();
    if (!kubectl) {
        fprintf(stderr, "skipped: no kubectl\n");
        skip();
    }
    kt_fake f;
    assert_int_equal(kt_fake_start(&f, NULL, false), 0);
    char *dir = cv_tmpdir_make("k8s-kubectl"), kc[512];
    snprintf(kc, sizeof kc,
             "apiVersion: v1\nkind: Config\ncurrent-context: f\n"
             "clusters: [{name: f, cluster: {server: \"%s\"}}]\n"
             "contexts: [{name: f, context: {cluster: f, user: u, namespace: default}}]\n"
             "users: [{name: u, user: {token: t}}]\n", f.url);
    assert_int_equal(cv_tmpdir_write(dir, "kubeconfig", kc, strlen(kc)), 0);
    char *kcp = cv_tmpdir_path(dir, "kubeconfig"), *crd_dir = src_path("schemas/crds"),
         *deploy = src_path("k8s-operator/deploy");
    char wide[4096], samples[4096];
    snprintf(wide, sizeof wide, "%s/cluster-wide", deploy);
    snprintf(samples, sizeof samples, "%s/samples", deploy);
    const char *argv[] = {kubectl, "--kubeconfig", kcp, "apply", "--dry-run=client",
                          "--validate=false", "-f", crd_dir, "-f", deploy, "-f", wide, "-f",
                          samples, NULL};
    char *out = NULL;
    int rc = cv_run_argv(argv, NULL, &out);
    if (rc)
        fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    int created = 0;
    for (const char *p = out; (p = strstr(p, "created (dry run)")); p++)
        created++;
    assert_int_equal(created, 10);
    assert_non_null(strstr(out, "cuvilbuildcluster.cuvil.dev/edge-models created"));
    assert_int_equal(kt_fake_stat(&f, "writes"), 0);
    free(out);
    free(deploy);
    free(crd_dir);
    free(kcp);
    cv_tmpdir_remove(dir);
    kt_fake_stop(&f);
}

static void test_sample_cluster_validates(void **state)
{
    char *path = src_path("k8s-operator/deploy/samples/cuvilbuildcluster.yaml");
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_spec_validate_file(path, &d);
    cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_diag_free(&d);
    free(path);
}

/* Multi-stage; the runtime stage from a slim base, non-root, with the
 * installed tree copied from the build stage and no -dev package but the
 * C library's (artifacts are linked at run time); no secret in an ARG or
 * ENV. */
static void test_dockerfile_shape(void **state)
{
    char *path = src_path("k8s-operator/Dockerfile");
    size_t len = 0;
    char *text = cv_tmpdir_read_file(path, &len);
    assert_non_null(text);
    int froms = 0;
    bool build_stage = false, user = false, copy = false, dev = false, secret = false;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "FROM ", 5) == 0) {
            froms++;
            build_stage = build_stage || strstr(line, " AS build") != NULL;
        } else if (froms == 2 && strncmp(line, "USER ", 5) == 0) {
            user = atoi(line + 5) >= 1000;
        } else if (froms == 2 && strncmp(line, "COPY --from=build ", 18) == 0) {
            copy = true;
        } else if (froms == 2 && line[0] != '#') {
            for (char *p = strstr(line, "-dev"); p; p = strstr(p + 1, "-dev"))
                dev = dev || p - line < 5 || strncmp(p - 5, "libc6-dev", 9) != 0;
        }
        if ((strncmp(line, "ARG ", 4) == 0 || strncmp(line, "ENV ", 4) == 0) &&
            (strstr(line, "TOKEN") || strstr(line, "PASSWORD") || strstr(line, "SECRET")))
            secret = true;
    }
    assert_int_equal(froms, 2);
    assert_true(build_stage);
    assert_true(user);
    assert_true(copy);
    assert_false(dev);
    assert_false(secret);
    free(text);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crds_are_generated_from_the_schemas),
        cmocka_unit_test(test_crds_say_what_the_schemas_say),
        cmocka_unit_test(test_crd_refuses_non_structural_schemas),
        cmocka_unit_test(test_yaml_emitter_round_trips),
        cmocka_unit_test(test_manifests_pass_yamllint),
        cmocka_unit_test(test_manifests_pass_kubectl_dry_run),
        cmocka_unit_test(test_sample_cluster_validates),
        cmocka_unit_test(test_dockerfile_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
