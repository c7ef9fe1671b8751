/* Spec loading: the error corpus in tests/specs (each file names its
 * expected code and line:col in its first line), every CV60xx spec code
 * covered, `extends` merging, defaults, globs, validating
 * one file with its directory as context, and the JSON Schemas in schemas/
 * checked against the loader's own field tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/fs.h"
#include "common/strbuf.h"
#include "common/targets.h"
#include "common/yamldoc.h"
#include "controller/controller.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

#define CORPUS "tests/specs"

/* Loads one text as a whole spec set (add + resolve). */
static cv_spec_set *load_text(const char *text, const char *name, cv_diag *d)
{
    cv_spec_set *s = cv_spec_set_new();
    assert_non_null(s);
    cv_spec_set_add(s, text, strlen(text), name, false, d);
    cv_spec_set_resolve(s, d);
    return s;
}

static bool has_error(const cv_diag *d, int code, int line, int col)
{
    for (int i = 1; i <= d->n; i++) {
        const cv_diag_entry *e = cv_diag_get(d, i);
        if (e->code == code && e->span.line == line && e->span.col == col)
            return true;
    }
    return false;
}

/* ---- the corpus */

typedef struct expect {
    bool ok;
    int code, line, col;
} expect;

static int parse_expect(const char *text, expect *x)
{
    memset(x, 0, sizeof *x);
    if (strncmp(text, "# expect: ok\n", 13) == 0) {
        x->ok = true;
        return 0;
    }
    char code[16];
    if (sscanf(text, "# expect: %15s %d:%d", code, &x->line, &x->col) != 3)
        return -1;
    x->code = cv_diag_parse_code(code);
    return x->code > 0 ? 0 : -1;
}

static void check_corpus_file(const char *path, bool covered[100])
{
    char *text;
    size_t len;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_fs_read_file(path, 1 << 20, &text, &len, &d), 0);
    expect x;
    if (parse_expect(text, &x)) {
        fprintf(stderr, "%s: first line must be '# expect: ok' or '# expect: CVnnnn L:C'\n", path);
        fail();
    }
    cv_spec_set *s = load_text(text, path, &d);
    bool good = x.ok ? d.n_errors == 0 : has_error(&d, x.code, x.line, x.col);
    for (int i = 1; good && !x.ok && i <= d.n; i++)   /* the root cause only, no cascade */
        good = cv_diag_get(&d, i)->code == x.code;
    if (!good) {
        fprintf(stderr, "%s: expected %s CV%04d at %d:%d, got:\n", path, x.ok ? "no error" : "",
                x.code, x.line, x.col);
        cv_diag_print(&d, stderr, false);
        fail();
    }
    if (!x.ok && x.code >= 6000 && x.code < 6100)
        covered[x.code - 6000] = true;
    cv_spec_set_free(s);
    free(text);
    cv_diag_free(&d);
}

static void test_corpus(void **state)
{
    DIR *dh = opendir(CORPUS);
    assert_non_null(dh);
    bool covered[100] = {0};
    int n = 0;
    for (struct dirent *de; (de = readdir(dh));) {
        size_t k = strlen(de->d_name);
        if (k < 6 || strcmp(de->d_name + k - 5, ".yaml") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", CORPUS, de->d_name);
        check_corpus_file(path, covered);
        n++;
    }
    closedir(dh);
    assert_true(n >= 30);
    /* Every spec code in the registry is exercised by some corpus file. */
    size_t nc;
    const cv_diag_code_info *codes = cv_diag_codes(&nc);
    for (size_t i = 0; i < nc; i++) {
        if (codes[i].code > 6000 && codes[i].code < 6050 && !covered[codes[i].code - 6000]) {
            fprintf(stderr, "no corpus file expects CV%04d (%s)\n", codes[i].code, codes[i].name);
            fail();
        }
    }
}

/* ---- messages: suggestions and notes */

static const char *first_msg(const cv_diag *d) { return d->n ? cv_diag_get(d, 1)->msg : ""; }

static void test_suggestions(void **state)
{
    static const char *const cases[][2] = {
        {"  optlevel: O2\n", "did you mean 'optLevel'?"},
        {"  modles: [a.onnx]\n", "did you mean 'models'?"},
        {"  targets: [x86_64-avx5120]\n", "did you mean 'x86_64-avx512'?"},
        {"  precisions: [in8]\n", "did you mean 'int8'?"},
        {"  optLevel: o2\n", "unknown value 'o2'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\nspec:\n%s",
                 cases[i][0]);
        cv_diag d;
        cv_diag_init(&d);
        cv_spec_set *s = cv_spec_set_new();
        assert_int_equal(cv_spec_set_add(s, text, strlen(text), "p.yaml", false, &d), -1);
        if (!strstr(first_msg(&d), cases[i][1])) {
            fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, first_msg(&d), cases[i][1]);
            fail();
        }
        assert_non_null(cv_diag_get(&d, 1)->path);
        cv_spec_set_free(s);
        cv_diag_free(&d);
    }
}

/* ---- extends and defaults */

static void test_extends_merge(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_spec_set *s = cv_spec_set_new();
    const char *base =
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: base}\n"
        "spec:\n  models: [\"models/**/*.onnx\", \"extra/*.cuir\"]\n  targets: [x86_64, aarch64-linux-gnu]\n"
        "  precisions: [fp32]\n  optLevel: O3\n"
        "  calibration: {data: \"calib/*.npy\", method: minmax}\n";
    const char *mid =
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: mid}\n"
        "spec:\n  extends: base\n  targets: [cuda-sm90]\n"
        "  calibration: {data: \"calib/mid/*.npy\"}\n";
    const char *leaf =
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: leaf}\n"
        "spec:\n  extends: mid\n  precisions: [fp16, int8]\n";
    /* leaf comes first: resolution must not depend on file order */
    assert_int_equal(cv_spec_set_add(s, leaf, strlen(leaf), "cuvil/leaf.yaml", false, &d), 0);
    assert_int_equal(cv_spec_set_add(s, mid, strlen(mid), "cuvil/mid.yaml", false, &d), 0);
    assert_int_equal(cv_spec_set_add(s, base, strlen(base), "cuvil/base.yaml", false, &d), 0);
    assert_int_equal(cv_spec_set_resolve(s, &d), 0);
    assert_int_equal(cv_spec_set_pipeline_count(s), 3);
    assert_string_equal(cv_spec_set_pipeline(s, 0)->name, "base");   /* sorted by name */
    const cv_spec_pipeline *p = cv_spec_set_find(s, "leaf");
    assert_non_null(p);
    assert_string_equal(p->extends, "mid");
    assert_string_equal(p->origin.file, "cuvil/leaf.yaml");
    assert_int_equal(p->origin.line, 1);
    /* lists replace: targets from mid (not appended to base's) */
    assert_int_equal(p->n_targets, 1);
    assert_string_equal(p->targets[0], "cuda-sm90");
    assert_int_equal(p->n_models, 2);
    assert_string_equal(p->models[1], "extra/*.cuir");
    assert_int_equal(p->n_precisions, 2);
    assert_int_equal(p->precisions[0], CV_PRECISION_FP16);
    assert_int_equal(p->precisions[1], CV_PRECISION_INT8);
    assert_int_equal(p->opt_level, CV_OPT_O3);
    /* maps merge: data from mid, method from base */
    assert_string_equal(p->calibration_data, "calib/mid/*.npy");
    assert_string_equal(p->calibration_method, "minmax");
    assert_null(strstr(p->canonical, "extends"));
    assert_non_null(strstr(p->canonical, "\"optLevel\":\"O3\""));
    assert_null(cv_spec_set_cluster(s));
    assert_null(cv_spec_set_find(s, "nope"));
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_extends_needs_fields(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    const char *text =
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: base}\n"
        "spec:\n  models: [\"*.onnx\"]\n---\n"
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: leaf}\n"
        "spec:\n  extends: base\n  targets: [x86_64]\n";
    cv_spec_set *s = load_text(text, "p.yaml", &d);
    /* base lacks targets and precisions; leaf lacks precisions even merged */
    assert_int_equal(d.n_errors, 3);
    assert_true(has_error(&d, 6003, 4, 1));
    assert_true(has_error(&d, 6003, 10, 1));
    assert_non_null(strstr(cv_diag_get(&d, 3)->msg, "nor do its bases"));
    assert_int_equal(cv_spec_set_pipeline_count(s), 0);
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_extends_broken_base_no_cascade(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    const char *text =
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: base}\n"
        "spec:\n  models: [\"*.onnx\"]\n  targets: [x86_65]\n  precisions: [fp32]\n---\n"
        "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: leaf}\n"
        "spec:\n  extends: base\n";
    cv_spec_set *s = load_text(text, "p.yaml", &d);
    assert_int_equal(d.n_errors, 1);   /* the bad target; leaf is not blamed */
    assert_int_equal(cv_diag_get(&d, 1)->code, 6009);
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_cluster_defaults(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_spec_set *s = load_text("apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\n"
                               "metadata: {name: farm}\nspec:\n  source: {url: /srv/models}\n",
                               "c.yaml", &d);
    const cv_spec_cluster *c = cv_spec_set_cluster(s);
    assert_non_null(c);
    assert_string_equal(c->source.ref, "main");
    assert_int_equal(c->source.interval_ms, 60000);
    assert_int_equal(c->workers.replicas, 1);
    assert_int_equal(c->workers.job_timeout_ms, 600000);
    assert_int_equal(c->queue.kind, CV_SPEC_QUEUE_EMBEDDED);
    assert_null(c->cache.remote);
    cv_spec_set_free(s);

    char *text;
    size_t len;
    assert_int_equal(cv_fs_read_file(CORPUS "/good-cluster.yaml", 1 << 16, &text, &len, &d), 0);
    s = load_text(text, "good-cluster.yaml", &d);
    c = cv_spec_set_cluster(s);
    assert_non_null(c);
    assert_string_equal(c->name, "edge-models");
    assert_string_equal(c->source.url, "https://git.example.com/ml/models.git");
    assert_int_equal(c->workers.replicas, 4);
    assert_string_equal(c->workers.resource_profile, "high-cpu");
    assert_int_equal(c->workers.memory_limit, UINT64_C(8) << 30);
    assert_int_equal(c->cache.size, UINT64_C(20) << 30);
    assert_string_equal(c->cache.remote, "http://cache.build:8080");
    assert_false(c->cache.read_only);
    assert_string_equal(c->image_registry, "registry.example.com/cuvil");
    free(text);
    cv_spec_set_free(s);

    assert_int_equal(cv_fs_read_file(CORPUS "/good-kafka.yaml", 1 << 16, &text, &len, &d), 0);
    s = load_text(text, "good-kafka.yaml", &d);
    c = cv_spec_set_cluster(s);
    assert_int_equal(c->queue.kind, CV_SPEC_QUEUE_KAFKA);
    assert_string_equal(c->queue.brokers, "k1:9092,k2:9092");
    assert_string_equal(c->queue.topic_prefix, "cuvil.prod");
    assert_int_equal(c->source.interval_ms, 90 * 60000);
    assert_int_equal(d.n, 0);
    free(text);
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_empty_and_context(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_spec_set *s = cv_spec_set_new();
    assert_int_equal(cv_spec_set_add(s, "", 0, "empty.yaml", false, &d), 0);
    assert_int_equal(cv_spec_set_add(s, "---\n---\n", 8, "seps.yaml", false, &d), 0);
    /* a broken context file reports nothing, and its pipelines are not results */
    const char *ctx = "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: other}\n"
                      "spec: {models: [a.onnx], targets: [x86_64], precisions: [fp32]}\n---\n"
                      "kind: Nonsense\n";
    assert_int_equal(cv_spec_set_add(s, ctx, strlen(ctx), "ctx.yaml", true, &d), 0);
    const char *mine = "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: mine}\n"
                       "spec: {extends: other}\n";
    assert_int_equal(cv_spec_set_add(s, mine, strlen(mine), "mine.yaml", false, &d), 0);
    assert_int_equal(cv_spec_set_resolve(s, &d), 0);
    assert_int_equal(d.n, 0);
    assert_int_equal(cv_spec_set_pipeline_count(s), 1);
    assert_string_equal(cv_spec_set_pipeline(s, 0)->targets[0], "x86_64");
    cv_spec_set_free(s);
    cv_diag_free(&d);
}

static void test_validate_file_uses_directory(void **state)
{
    char *dir = cv_tmpdir_make("spec");
    assert_non_null(dir);
    const char *base = "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: base}\n"
                       "spec: {models: [a.onnx], targets: [x86_64], precisions: [fp32]}\n";
    const char *leaf = "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: leaf}\n"
                       "spec: {extends: base}\n";
    const char *broken = "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: x}\n"
                         "spec: {models: [/abs]}\n";
    assert_int_equal(cv_tmpdir_write(dir, "base.yaml", base, strlen(base)), 0);
    assert_int_equal(cv_tmpdir_write(dir, "leaf.yml", leaf, strlen(leaf)), 0);
    assert_int_equal(cv_tmpdir_write(dir, "broken.yaml", broken, strlen(broken)), 0);
    assert_int_equal(cv_tmpdir_write(dir, "notes.txt", "x", 1), 0);
    cv_diag d;
    cv_diag_init(&d);
    char *leaf_path = cv_tmpdir_path(dir, "leaf.yml");
    assert_int_equal(cv_spec_validate_file(leaf_path, &d), 0);
    assert_int_equal(d.n, 0);
    char *broken_path = cv_tmpdir_path(dir, "broken.yaml");
    assert_int_equal(cv_spec_validate_file(broken_path, &d), -1);
    assert_int_equal(d.n_errors, 1);
    assert_int_equal(cv_diag_get(&d, 1)->code, 6008);
    assert_string_equal(cv_diag_get(&d, 1)->span.file, broken_path);
    cv_diag_clear(&d);
    /* alone, the leaf's base is missing */
    char *alone = cv_tmpdir_make("spec1");
    assert_int_equal(cv_tmpdir_write(alone, "leaf.yaml", leaf, strlen(leaf)), 0);
    char *alone_path = cv_tmpdir_path(alone, "leaf.yaml");
    assert_int_equal(cv_spec_validate_file(alone_path, &d), -1);
    assert_true(has_error(&d, 6014, 4, 17));
    /* the printed form has the caret line */
    char *buf = NULL;
    size_t blen = 0;
    FILE *mem = open_memstream(&buf, &blen);
    cv_diag_print(&d, mem, false);
    fclose(mem);
    assert_non_null(strstr(buf, "error[CV6014]"));
    assert_non_null(strstr(buf, "spec: {extends: base}"));
    free(buf);
    cv_diag_clear(&d);
    char *missing = cv_tmpdir_path(alone, "missing.yaml");
    assert_int_equal(cv_spec_validate_file(missing, &d), -1);
    assert_int_equal(cv_diag_get(&d, 1)->code, 9004);
    free(missing);
    free(alone_path);
    free(leaf_path);
    free(broken_path);
    cv_tmpdir_remove(alone);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
}

/* ---- values and globs */

/* Sizes and durations: tests/unit/common/test_units.c. */
static void test_targets(void **state)
{
    /* The loader reads the one target list: each name is accepted and
     * compile -t knows it. */
    size_t n = 0;
    for (; cv_target_name_list[n]; n++)
        assert_true(cv_target_known(cv_target_name_list[n]));
    assert_int_equal(n, 9);
    /* and `cuvil compile --help` prints it */
    const char *bin = getenv("CUVIL_BIN") ? getenv("CUVIL_BIN") : "build/asan/cuvil";
    const char *argv[] = {bin, "compile", "--help", NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(argv, NULL, &out), 0);
    for (size_t i = 0; i < n; i++)
        if (!strstr(out, cv_target_name_list[i]))
            fail_msg("cuvil compile --help does not name %s:\n%s", cv_target_name_list[i], out);
    free(out);
}

static void test_globs(void **state)
{
    static const struct { const char *pat, *path; bool match; } cases[] = {
        {"models/*.onnx", "models/a.onnx", true},
        {"models/*.onnx", "models/sub/a.onnx", false},
        {"models/**/*.onnx", "models/a.onnx", true},
        {"models/**/*.onnx", "models/x/y/a.onnx", true},
        {"models/**", "models/x/y/a.onnx", true},
        {"models/**", "models", false},
        {"**/*.cvl.py", "kws/tiny.cvl.py", true},
        {"**/*.cvl.py", "tiny.cvl.py", true},
        {"m?dels/[a-c]*.onnx", "models/b1.onnx", true},
        {"m?dels/[a-c]*.onnx", "models/d1.onnx", false},
        {"models/[!a]*.onnx", "models/a1.onnx", false},
        {"models/[!a]*.onnx", "models/b1.onnx", true},
        {"models/[]x]", "models/]", true},
        {"models/\\*.onnx", "models/*.onnx", true},
        {"models/\\*.onnx", "models/a.onnx", false},
        {"*a*b*c", "xxaxxbxxc", true},
        {"*a*b*c", "xxaxxbxxcx", false},
        {"a/*/c", "a/b/c", true},
        {"a/*/c", "a/c", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(cv_glob_check(cases[i].pat, NULL), 0);
        if (cv_glob_match(cases[i].pat, cases[i].path) != cases[i].match) {
            fprintf(stderr, "glob '%s' vs '%s': expected %d\n", cases[i].pat, cases[i].path,
                    cases[i].match);
            fail();
        }
    }
    static const char *const bad[] = {"", "/abs/*.onnx", "a//b", "a/", "./a", "a/../b", "a**",
                                      "a/[bc", "a\\", "**/**/**/**/**/x", "a\tb"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        assert_int_equal(cv_glob_check(bad[i], &why), -1);
        assert_non_null(why);
    }
    assert_true(cv_spec_is_spec_path("cuvil/farm.yaml"));
    assert_true(cv_spec_is_spec_path("cuvil/p.yml"));
    assert_false(cv_spec_is_spec_path("cuvil/sub/p.yaml"));
    assert_false(cv_spec_is_spec_path("other/p.yaml"));
    assert_false(cv_spec_is_spec_path("cuvil/.yaml"));
    assert_false(cv_spec_is_spec_path("cuvil/readme.md"));
}

/* ---- the schemas agree with the loader */

typedef struct field_row {
    char path[128], type[16];
    bool required;
    json_t *values;   /* owned: array of strings, or NULL */
} field_row;

typedef struct field_set {
    field_row v[128];
    int n;
} field_set;

static void add_row(field_set *fs, const char *path, const char *type, bool required,
                    json_t *values)
{
    assert_true(fs->n < 128);
    field_row *r = &fs->v[fs->n++];
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->type, sizeof r->type, "%s", type);
    r->required = required;
    r->values = values;
}

static void loader_row(void *ctx, const char *path, const char *type, bool required,
                       const char *const *values)
{
    json_t *arr = NULL;
    if (values) {
        arr = json_array();
        for (; *values; values++)
            json_array_append_new(arr, json_string(*values));
    }
    add_row(ctx, path, type, required, arr);
}

static bool in_required(const json_t *schema, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(schema, "required"), i, v)
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    return false;
}

static void schema_rows(field_set *fs, const json_t *node, char *path, size_t len, bool required)
{
    const char *type = json_string_value(json_object_get(node, "type"));
    assert_non_null(type);   /* structural: every node is typed */
    assert_null(json_object_get(node, "$ref"));
    json_t *en = json_object_get(node, "enum");
    add_row(fs, path, type, required, en ? json_incref(en) : NULL);
    const char *key;
    json_t *child;
    json_object_foreach(json_object_get(node, "properties"), key, child) {
        int n = snprintf(path + len, 128 - len, "%s%s", len ? "." : "", key);
        schema_rows(fs, child, path, len + (size_t)n, in_required(node, key));
        path[len] = 0;
    }
    json_t *ap = json_object_get(node, "additionalProperties");
    if (json_is_object(ap)) {
        snprintf(path + len, 128 - len, "{}");
        schema_rows(fs, ap, path, len + 2, false);
        path[len] = 0;
    } else if (json_is_string(json_object_get(node, "type")) && strcmp(type, "object") == 0) {
        assert_true(json_is_false(ap));   /* objects list their fields exactly */
    }
    json_t *items = json_object_get(node, "items");
    if (items) {
        snprintf(path + len, 128 - len, "[]");
        schema_rows(fs, items, path, len + 2, false);
        path[len] = 0;
    }
}

static const field_row *find_row(const field_set *fs, const char *path)
{
    for (int i = 0; i < fs->n; i++)
        if (strcmp(fs->v[i].path, path) == 0)
            return &fs->v[i];
    return NULL;
}

static void compare_kind(cv_spec_kind k, const char *file, const char *kind_name)
{
    json_error_t err;
    json_t *schema = json_load_file(file, 0, &err);
    if (!schema) {
        fprintf(stderr, "%s:%d: %s\n", file, err.line, err.text);
        fail();
    }
    assert_string_equal(json_string_value(json_object_get(schema, "$schema")),
                        "https://json-schema.org/draft/2020-12/schema");
    static field_set loader, sch;
    memset(&loader, 0, sizeof loader);
    memset(&sch, 0, sizeof sch);
    cv_spec_fields_visit(k, loader_row, &loader);
    char path[128] = "";
    schema_rows(&sch, schema, path, 0, true);
    assert_int_equal(loader.n, sch.n);
    for (int i = 0; i < loader.n; i++) {
        const field_row *a = &loader.v[i], *b = find_row(&sch, a->path);
        if (!b) {
            fprintf(stderr, "%s lacks field '%s'\n", file, a->path);
            fail();
        }
        if (strcmp(a->type, b->type) || a->required != b->required) {
            fprintf(stderr, "%s: '%s' is %s%s there, %s%s in the loader\n", file, a->path,
                    b->type, b->required ? " required" : "", a->type,
                    a->required ? " required" : "");
            fail();
        }
        if (strcmp(a->path, "kind") == 0) {   /* each schema admits its own kind only */
            assert_int_equal(json_array_size(b->values), 1);
            assert_string_equal(json_string_value(json_array_get(b->values, 0)), kind_name);
        } else if (!json_equal(a->values, b->values) && (a->values || b->values)) {
            fprintf(stderr, "%s: '%s' allows different values than the loader\n", file, a->path);
            fail();
        }
    }
    for (int i = 0; i < loader.n; i++) {
        json_decref(loader.v[i].values);
        json_decref(sch.v[i].values);
    }
    json_decref(schema);
}

static void test_schemas_match_loader(void **state)
{
    compare_kind(CV_SPEC_CLUSTER, "schemas/cuvilbuildcluster.schema.json", "CuvilBuildCluster");
    compare_kind(CV_SPEC_PIPELINE, "schemas/cuvilpipeline.schema.json", "CuvilPipeline");
}

/* A real JSON Schema validator (python3-jsonschema) agrees on the corpus:
 * good files pass; files with a per-document structural error fail. */
static void test_schemas_validate_corpus(void **state)
{
    if (!cv_pyrun_has_module("jsonschema") || !cv_pyrun_has_module("yaml")) {
        skip();
        return;
    }
    static const char code[] =
        "import glob, json, sys, yaml, jsonschema\n"
        "S = {k: json.load(open('schemas/%s.schema.json' % k.lower()))\n"
        "     for k in ('CuvilBuildCluster', 'CuvilPipeline')}\n"
        "for s in S.values(): jsonschema.Draft202012Validator.check_schema(s)\n"
        "structural = {'CV6001','CV6002','CV6003','CV6004','CV6006','CV6009','CV6010','CV6011',\n"
        "              'CV6012','CV6013','CV6019','CV6022'}\n"
        "# rules between fields, and fields required only after merging bases\n"
        "semantic = {'kafka-no-brokers.yaml', 'kafka-only-field.yaml', 'missing-field.yaml'}\n"
        "bad = 0\n"
        "for f in sorted(glob.glob('tests/specs/*.yaml')):\n"
        "    text = open(f).read()\n"
        "    exp = text.split('\\n', 1)[0].split()[2]\n"
        "    try: docs = [d for d in yaml.safe_load_all(text) if d is not None]\n"
        "    except yaml.YAMLError: continue\n"
        "    ok = True\n"
        "    for d in docs:\n"
        "        s = S.get(d.get('kind')) if isinstance(d, dict) else None\n"
        "        if s is None: ok = False; continue\n"
        "        if list(jsonschema.Draft202012Validator(s).iter_errors(d)): ok = False\n"
        "    if f.split('/')[-1] in semantic: exp = 'semantic'\n"
        "    if exp == 'ok' and not ok or exp in structural and ok:\n"
        "        print('disagree:', f, exp, ok); bad += 1\n"
        "sys.exit(1 if bad else 0)\n";
    char *out = NULL;
    int rc = cv_pyrun(code, NULL, &out);
    if (rc != 0)
        fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
}

static bool has_code(const cv_diag *d, int code, const char *file)
{
    for (int i = 1; i <= d->n; i++) {
        const cv_diag_entry *e = cv_diag_get(d, i);
        if (e->code == code && (!file || (e->span.file && strcmp(e->span.file, file) == 0)))
            return true;
    }
    return false;
}

/* One spec set (one revision's specs) is bounded in YAML nodes and in
 * bytes, however the files share them. */
static void test_set_limits(void **state)
{
    (void)state;
    cv_sb seq = CV_SB_INIT;   /* 3/8 of the set's nodes: the third file is over */
    cv_sb_putc(&seq, '[');
    for (size_t i = 0; i < CV_SPEC_NODES_MAX * 3 / 8; i++)
        cv_sb_puts(&seq, i ? ",0" : "0");
    cv_sb_puts(&seq, "]\n");
    cv_spec_set *s = cv_spec_set_new();
    cv_diag d;
    cv_diag_init(&d);
    const char *names[] = {"cuvil/a.yaml", "cuvil/b.yaml", "cuvil/c.yaml"};
    for (int i = 0; i < 3; i++)
        cv_spec_set_add(s, seq.buf, seq.len, names[i], false, &d);
    assert_false(has_code(&d, 1128, names[0]));
    assert_false(has_code(&d, 1128, names[1]));
    assert_true(has_code(&d, 1128, names[2]));
    cv_spec_set_free(s);
    cv_diag_free(&d);
    cv_sb_free(&seq);
    /* bytes: files that fail at their first byte still count */
    size_t big = CV_YAML_MAX_BYTES;
    char *text = malloc(big);
    memset(text, ' ', big);
    text[0] = ']';
    s = cv_spec_set_new();
    cv_diag_init(&d);
    int files = (int)(CV_SPEC_BYTES_MAX / big);
    for (int i = 0; i < files; i++)
        cv_spec_set_add(s, text, big, "cuvil/big.yaml", false, &d);
    assert_false(has_code(&d, 6062, NULL));
    assert_int_equal(cv_spec_set_add(s, "kind: x\n", 8, "cuvil/last.yaml", false, &d), -1);
    assert_true(has_code(&d, 6062, "cuvil/last.yaml"));
    cv_spec_set_free(s);
    cv_diag_free(&d);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_set_limits),
        cmocka_unit_test(test_suggestions),
        cmocka_unit_test(test_extends_merge),
        cmocka_unit_test(test_extends_needs_fields),
        cmocka_unit_test(test_extends_broken_base_no_cascade),
        cmocka_unit_test(test_cluster_defaults),
        cmocka_unit_test(test_empty_and_context),
        cmocka_unit_test(test_validate_file_uses_directory),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_globs),
        cmocka_unit_test(test_schemas_match_loader),
        cmocka_unit_test(test_schemas_validate_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
