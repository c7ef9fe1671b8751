/* Compile-with-cache (compile/build.c): real models, a real cache
 * directory, the real backend.
 *
 * The flip test: for every field that enters a key, change only that field
 * and the compile must miss at the level the field belongs to; change only
 * something that is not a key (the model's directory, its mtime, a comment)
 * and the compile must hit where it should. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/worker_testlib.h"
#include "tests/support/pyrun.h"
#include "compile/internal.h"

static char *g_dir;     /* everything the tests write */
static char *g_base;    /* the base model's directory */
static cv_cache *g_cache;
static int g_out;       /* numbering output directories */

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("worker-build");
    if (!g_dir)
        return -1;
    g_base = twu_model_dir(g_dir, "base", "tiny.cvl.py", "1.0", NULL, 0.0f);
    g_cache = twu_cache(g_dir, "cache");
    return g_cache ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cv_cache_close(g_cache);
    free(g_base);
    cv_tmpdir_remove(g_dir);
    return 0;
}

/* The base configuration every flip starts from: fast to compile. */
static cv_build_opts base_opts(const char *model_dir, const char *file)
{
    static char model[4096];
    snprintf(model, sizeof model, "%s/%s", model_dir, file ? file : "tiny.cvl.py");
    return (cv_build_opts){.model = model, .target = "x86_64", .precision = CV_PRECISION_FP32,
                           .opt_level = CV_OPT_O0, .emit = CV_EMIT_OBJ | CV_EMIT_H};
}

static char *new_out(void)
{
    char name[32];
    snprintf(name, sizeof name, "out%d", ++g_out);
    return cv_tmpdir_path(g_dir, name);
}

/* Builds into a fresh directory; returns it (malloc'd). */
static char *build(cv_build_opts o, cv_build_result *r)
{
    char *out = new_out();
    o.out_dir = out;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_build(g_cache, &o, r, &d);
    if (rc != 0 || cv_diag_has_errors(&d))
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    assert_int_equal(rc, 0);
    char line[600];
    cv_build_cache_line(r, line, sizeof line);
    fprintf(stderr, "  %s (%.1f ms)\n", line, r->ms_total);
    return out;
}

static bool hit(const cv_build_level *l)
{
    return l->outcome == CV_CACHE_HIT || l->outcome == CV_CACHE_REMOTE_HIT;
}

#define EXPECT(r, l1hit, l2hit)                                                              \
    do {                                                                                    \
        assert_int_equal(hit(&(r).l1), (l1hit));                                            \
        assert_int_equal(hit(&(r).l2), (l2hit));                                            \
        assert_int_equal((r).compiled, !(l2hit));                                           \
        if ((l1hit) && (l2hit))                                                             \
            assert_false((r).frontend_ran);                                                 \
    } while (0)

/* Every file of artifact a is in b with the same bytes. */
static void assert_same_artifact(const char *a, const char *b)
{
    char *ma = cv_tmpdir_path(a, "manifest.json");
    json_t *m = json_load_file(ma, 0, NULL);
    assert_non_null(m);
    json_t *files = json_object_get(m, "files");
    assert_true(json_object_size(files) >= 2);
    const char *name;
    json_t *v;
    int n = 0;
    json_object_foreach(files, name, v) {
        char *pa = cv_tmpdir_path(a, name), *pb = cv_tmpdir_path(b, name);
        size_t la = 0, lb = 0;
        char *x = cv_tmpdir_read_file(pa, &la), *y = cv_tmpdir_read_file(pb, &lb);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(la, lb);
        assert_memory_equal(x, y, la);
        free(x), free(y), free(pa), free(pb);
        n++;
    }
    size_t la = 0, lb = 0;
    char *mb = cv_tmpdir_path(b, "manifest.json");
    char *x = cv_tmpdir_read_file(ma, &la), *y = cv_tmpdir_read_file(mb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(x, y, la);
    free(x), free(y), free(ma), free(mb);
    json_decref(m);
    assert_true(n >= 2);
}

static void test_cold_then_warm(void **state)
{
    (void)state;
    cv_build_opts o = base_opts(g_base, NULL);
    o.emit = CV_EMIT_DEFAULT;  /* .o .a .so .h: the full artifact once */
    cv_build_result r1, r2;
    char *out1 = build(o, &r1);
    EXPECT(r1, false, false);
    assert_true(r1.frontend_ran);
    assert_string_equal(r1.l1.reason, "new source");
    assert_string_equal(r1.name, "tiny");
    assert_int_equal(strlen(r1.artifact_manifest), 64);
    assert_int_equal(strlen(r1.fingerprint), 64);
    char *out2 = build(o, &r2);
    EXPECT(r2, true, true);
    assert_string_equal(r1.artifact_manifest, r2.artifact_manifest);
    assert_string_equal(r1.l2.key, r2.l2.key);
    assert_same_artifact(out1, out2);
    char *so = cv_tmpdir_path(out2, "libtiny.so");
    struct stat st;
    assert_int_equal(stat(so, &st), 0);
    assert_true(st.st_mode & 0100);   /* the shared object stays executable */
    /* The native artifact made from the cache runs. */
    cv_native *n = NULL;
    assert_int_equal(cv_native_open(out2, 1, &n, NULL), 0);
    cv_native_close(n);
    fprintf(stderr, "  cold %.1f ms, warm %.1f ms (%.0fx)\n", r1.ms_total, r2.ms_total,
            r1.ms_total / r2.ms_total);
    /* A hit into the directory the cold compile wrote leaves its files
     * alone (same inode and times: nothing for `make` to redo). */
    char *so1 = cv_tmpdir_path(out1, "libtiny.so");
    struct stat before, after;
    assert_int_equal(stat(so1, &before), 0);
    o.out_dir = out1;
    assert_int_equal(cv_build(g_cache, &o, &r2, NULL), 0);
    EXPECT(r2, true, true);
    assert_int_equal(stat(so1, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_ctim.tv_nsec, after.st_ctim.tv_nsec);
    assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
    o.out_dir = NULL;
    free(so1);
    /* From the manifest digest alone (`cuvil artifacts get`). */
    char *out4 = new_out();
    assert_int_equal(cv_build_materialise(g_cache, r1.artifact_manifest, out4, NULL), 1);
    assert_same_artifact(out1, out4);
    free(out4);
    /* The worker's way: a hit checks the blobs and writes nothing. */
    o.no_output_on_hit = true;
    char *out3 = build(o, &r2);
    EXPECT(r2, true, true);
    assert_string_equal(r1.artifact_manifest, r2.artifact_manifest);
    assert_int_equal(access(out3, F_OK), -1);
    free(so), free(out1), free(out2), free(out3);
}

/* One L1 look-up and one L2 look-up per compile in the statistics: the
 * deps entry is not counted. */
static void test_stats_count_once(void **state)
{
    (void)state;
    cv_build_opts o = base_opts(g_base, NULL);
    cv_build_result r;
    free(build(o, &r));            /* make sure it is stored */
    cv_cache_stats a, b;
    assert_int_equal(cv_cache_stats_get(g_cache, &a, NULL), 0);
    free(build(o, &r));
    EXPECT(r, true, true);
    assert_int_equal(cv_cache_stats_get(g_cache, &b, NULL), 0);
    assert_int_equal(b.hits_local[CV_CACHE_L1] - a.hits_local[CV_CACHE_L1], 1);
    assert_int_equal(b.hits_local[CV_CACHE_L2] - a.hits_local[CV_CACHE_L2], 1);
    assert_int_equal(b.misses[CV_CACHE_L1] - a.misses[CV_CACHE_L1], 0);
}

/* ---------------------------------------------------------------- flips */

static void flip_not_keys(void)
{
    cv_build_opts o = base_opts(g_base, NULL);
    cv_build_result r;
    free(build(o, &r));
    /* Another checkout: the same files at another path. */
    char *other = twu_model_dir(g_dir, "checkout2", "tiny.cvl.py", "1.0", NULL, 0.0f);
    free(build(base_opts(other, NULL), &r));
    EXPECT(r, true, true);
    /* A new mtime (and ctime) on the model and its weights. */
    char *model = cv_tmpdir_path(other, "tiny.cvl.py");
    struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    assert_int_equal(utimensat(AT_FDCWD, model, ts, 0), 0);
    free(build(base_opts(other, NULL), &r));
    EXPECT(r, true, true);
    free(model);
    free(other);
    /* A comment: a new source for L1, the same program for L2. */
    char *comm = twu_model_dir(g_dir, "comment", "tiny.cvl.py", "1.0", "# a comment", 0.0f);
    free(build(base_opts(comm, NULL), &r));
    EXPECT(r, false, true);
    assert_true(r.frontend_ran);
    free(comm);
}

/* Fields of L1 that leave the program as it was: L1 misses, L2 hits. */
static void flip_l1_only(void)
{
    cv_build_result r;
    char *renamed = twu_model_dir(g_dir, "renamed", "small.cvl.py", "1.0", NULL, 0.0f);
    free(build(base_opts(renamed, "small.cvl.py"), &r));      /* source_name */
    EXPECT(r, false, true);
    free(renamed);
    cv_build_opts o = base_opts(g_base, NULL);
    o.strict = true;                                            /* options */
    free(build(o, &r));
    EXPECT(r, false, true);
}

static void flip_program(void)
{
    cv_build_result r, w;
    char *wdir = twu_model_dir(g_dir, "weights", "tiny.cvl.py", "1.0", NULL, 0.5f);
    free(build(base_opts(wdir, NULL), &r));                     /* weights */
    EXPECT(r, false, false);
    assert_string_equal(r.l1.reason, "weights changed");
    free(build(base_opts(wdir, NULL), &w));
    EXPECT(w, true, true);
    /* The same source with the base weights back: both levels hit again. */
    assert_int_equal(twu_write_weights(wdir, "tiny.safetensors", 0.0f), 0);
    free(build(base_opts(wdir, NULL), &r));
    EXPECT(r, true, true);
    free(wdir);
    char *cdir = twu_model_dir(g_dir, "const", "tiny.cvl.py", "2.0", NULL, 0.0f);
    free(build(base_opts(cdir, NULL), &r));                     /* source -> IR digest */
    EXPECT(r, false, false);
    cv_build_result b;
    free(build(base_opts(g_base, NULL), &b));
    assert_string_equal(r.fingerprint, b.fingerprint);          /* only a constant changed */
    assert_string_not_equal(r.ir_digest, b.ir_digest);
    free(cdir);
}

static void flip_l2(void)
{
    cv_build_result r;
    cv_build_opts o = base_opts(g_base, NULL);
    o.target = "x86_64-avx2";                                   /* target, features */
    free(build(o, &r));
    EXPECT(r, true, false);
    o = base_opts(g_base, NULL);
    o.target = "aarch64-linux-gnu";                             /* triple */
    free(build(o, &r));
    EXPECT(r, true, false);
    o = base_opts(g_base, NULL);
    o.opt_level = CV_OPT_O1;                                    /* opt level */
    free(build(o, &r));
    EXPECT(r, true, false);
    o = base_opts(g_base, NULL);
    o.debug = true;                                             /* debug */
    free(build(o, &r));
    EXPECT(r, true, false);
    o = base_opts(g_base, NULL);
    o.emit |= CV_EMIT_CUIR;                                     /* emit set */
    char *out = build(o, &r);
    EXPECT(r, true, false);
    char *cuir = cv_tmpdir_path(out, "tiny.cuir");
    assert_int_equal(access(cuir, R_OK), 0);
    free(cuir), free(out);
}

static json_t *field(json_t *manifest, const char *name)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(manifest, "fields"), i, f)
        if (strcmp(json_string_value(json_object_get(f, "name")), name) == 0)
            return f;
    return NULL;
}

/* Changing the field's value in the manifest changes the key. */
static void assert_field_keys(const cv_cache_key *k, const char *name, const char *expect)
{
    json_t *m = json_loads(k->manifest, 0, NULL);
    json_t *f = field(m, name);
    assert_non_null(f);
    if (expect)
        assert_string_equal(json_string_value(json_object_get(f, "value")), expect);
    json_t *v = json_object_get(f, "value");
    const char *kind = json_string_value(json_object_get(f, "kind"));
    if (strcmp(kind, "bool") == 0) {
        json_object_set_new(f, "value", json_boolean(!json_is_true(v)));
    } else if (strcmp(kind, "digest") == 0) {
        char hex[65];
        snprintf(hex, sizeof hex, "%s", json_string_value(v));
        hex[0] = hex[0] == '0' ? '1' : '0';
        json_object_set_new(f, "value", json_string(hex));
    } else {
        json_object_set_new(f, "value", json_string("something else"));
    }
    json_object_del(m, "key");
    char *text = json_dumps(m, JSON_COMPACT);
    cv_cache_key other;
    assert_int_equal(cv_cache_key_from_manifest(text, &other, NULL), 0);
    assert_false(cv_cache_digest_eq(&other.digest, &k->digest));
    cv_cache_key_free(&other);
    free(text);
    json_decref(m);
}

/* Fields that cannot change inside one test binary (the front end's and
 * the compiler's versions) and precision (int8 needs calibration data):
 * the key level, through cv_build_probe. */
static void flip_by_probe(void)
{
    cv_build_opts o = base_opts(g_base, NULL);
    cv_build_keys k, k8;
    assert_int_equal(cv_build_probe(g_cache, &o, false, &k, NULL), 0);
    assert_true(k.have_l2 && k.l1_hit && k.l2_hit);
    o.precision = CV_PRECISION_INT8;
    assert_int_equal(cv_build_probe(g_cache, &o, false, &k8, NULL), 0);
    assert_false(k8.l2_hit);
    assert_false(cv_cache_digest_eq(&k.l2.digest, &k8.l2.digest));
    static const char *const l1[] = {"frontend", "frontend_version", "options", "source",
                                     "source_name", "weights:tiny.safetensors"};
    static const char *const l2[] = {"ir_digest", "target", "target_triple", "target_features",
                                     "precision", "opt_level", "debug", "emit",
                                     "compiler_build_id", "llvm_version"};
    for (size_t i = 0; i < sizeof l1 / sizeof l1[0]; i++)
        assert_field_keys(&k.l1, l1[i], NULL);
    for (size_t i = 0; i < sizeof l2 / sizeof l2[0]; i++)
        assert_field_keys(&k.l2, l2[i], NULL);
    assert_field_keys(&k.l1, "frontend", "dsl");
    assert_field_keys(&k.l2, "compiler_build_id", cv_build_compiler_id(g_cache));
    assert_field_keys(&k.l2, "precision", "fp32");
    /* Nothing about where the model lives. */
    assert_null(strstr(k.l1.manifest, g_dir));
    assert_null(strstr(k.l2.manifest, g_dir));
    cv_build_keys_free(&k);
    cv_build_keys_free(&k8);
    cv_build_result r;
    cv_diag d;
    cv_diag_init(&d);
    o.out_dir = g_dir;
    assert_int_equal(cv_build(g_cache, &o, &r, &d), -1);
    assert_int_equal(d.v[0].code, 5105);   /* -p int8 without --calibration */
    cv_diag_free(&d);
}

static void test_flip(void **state)
{
    (void)state;
    flip_not_keys();
    flip_l1_only();
    flip_program();
    flip_l2();
    flip_by_probe();
}

/* ------------------------------------------------------------- the rest */

static void test_no_cache(void **state)
{
    (void)state;
    cv_build_opts o = base_opts(g_base, NULL);
    cv_build_result r;
    cv_diag d;
    cv_diag_init(&d);
    char *out = new_out();
    o.out_dir = out;
    assert_int_equal(cv_build(NULL, &o, &r, &d), 0);
    assert_int_equal(r.l1.outcome, CV_CACHE_NONE);
    assert_int_equal(r.l2.outcome, CV_CACHE_NONE);
    assert_true(r.compiled);
    setenv("CUVIL_CACHE", "off", 1);
    char *cdir = cv_tmpdir_path(g_dir, "cache");
    cv_cache_options co = {.dir = cdir, .remote = ""};
    cv_cache *off = NULL;
    assert_int_equal(cv_cache_open(&co, &off, &d), 0);
    unsetenv("CUVIL_CACHE");
    assert_int_equal(cv_build(off, &o, &r, &d), 0);
    assert_true(r.compiled);
    char line[600];
    cv_build_cache_line(&r, line, sizeof line);
    assert_string_equal(line, "cache: l1 not used (cache off), l2 not used (cache off)");
    cv_cache_close(off);
    cv_diag_free(&d);
    free(cdir), free(out);
}

/* A stored artifact whose blob went missing is compiled again, not served
 * half. */
static void test_missing_blob(void **state)
{
    (void)state;
    char *mdir = twu_model_dir(g_dir, "blob", "tiny.cvl.py", "3.0", NULL, 0.0f);
    cv_build_result r;
    char *out = build(base_opts(mdir, NULL), &r);
    char *h = cv_tmpdir_path(out, "tiny.h");
    size_t len;
    char *data = cv_tmpdir_read_file(h, &len);
    cv_digest dg;
    char hex[65], rel[80];
    cv_cache_sha256(data, len, &dg);
    cv_cache_digest_hex(&dg, hex);
    snprintf(rel, sizeof rel, "cache/cas/%.2s/%s", hex, hex);
    char *blob = cv_tmpdir_path(g_dir, rel);
    assert_int_equal(unlink(blob), 0);
    char *out2 = build(base_opts(mdir, NULL), &r);
    EXPECT(r, true, false);
    assert_non_null(strstr(r.l2.reason, "no longer stored"));
    assert_same_artifact(out, out2);
    free(blob), free(data), free(h), free(out), free(out2), free(mdir);
}

static void test_explain(void **state)
{
    (void)state;
    cv_build_opts o = base_opts(g_base, NULL);
    cv_build_result r;
    free(build(o, &r));
    o.opt_level = CV_OPT_O3;
    o.explain = true;
    free(build(o, &r));
    assert_non_null(strstr(r.l2.reason, "opt"));
    /* the farm counts misses by this word (controller/http/misses.c) */
    assert_string_equal(r.l2.cause, "options");
    o.no_blocked_layout = true;     /* a key no other test builds */
    o.explain = false;
    free(build(o, &r));
    assert_int_equal(r.l2.outcome, CV_CACHE_MISS);
    assert_string_equal(r.l2.cause, "unexplained");
}

static void test_front_end_error(void **state)
{
    (void)state;
    char *mdir = cv_tmpdir_path(g_dir, "bad");
    mkdir(mdir, 0755);
    const char *text = "import cuvil as cvl\n\n@cvl.model(input_shapes=[(\"N\", 8)])\n"
                       "def bad(x):\n    return cvl.nosuchop(x)\n";
    assert_int_equal(cv_tmpdir_write(mdir, "bad.cvl.py", text, strlen(text)), 0);
    cv_build_opts o = base_opts(mdir, "bad.cvl.py");
    char *out = new_out();
    o.out_dir = out;
    cv_build_result r;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_build(g_cache, &o, &r, &d), -1);
    assert_true(cv_diag_has_errors(&d));
    assert_false(hit(&r.l1));
    cv_diag_free(&d);
    free(out), free(mdir);
}

/* The planner's look-up: the real L2 key of a known model, a stand-in key
 * (stable, so identical jobs merge) for a new one. */
static void test_plan_lookup(void **state)
{
    (void)state;
    cv_build_opts o = base_opts(g_base, NULL);
    o.emit = 0;
    cv_build_result r;
    free(build(o, &r));
    cv_build_lookup w = {.cache = g_cache, .models_dir = g_dir};
    cv_job_msg j = {.job_id = "j", .model_path = "base/tiny.cvl.py", .target = "x86_64",
                    .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O0};
    char *model = cv_tmpdir_path(g_base, "tiny.cvl.py");
    cv_digest dg;
    assert_int_equal(cv_cache_hash_file(model, &dg, NULL, NULL, NULL), 0);
    cv_cache_digest_hex(&dg, j.model_digest);
    char key[65], key2[65];
    bool hit = false;
    assert_int_equal(cv_build_plan_lookup(&w, &j, key, &hit), 0);
    assert_true(hit);
    assert_string_equal(key, r.l2.key);
    j.opt_level = CV_OPT_O2;
    assert_int_equal(cv_build_plan_lookup(&w, &j, key, &hit), 0);
    assert_false(hit);
    char *fresh = twu_model_dir(g_dir, "fresh", "tiny.cvl.py", "7.0", NULL, 0.0f);
    free(model);
    model = cv_tmpdir_path(fresh, "tiny.cvl.py");
    assert_int_equal(cv_cache_hash_file(model, &dg, NULL, NULL, NULL), 0);
    cv_cache_digest_hex(&dg, j.model_digest);
    j.model_path = "fresh/tiny.cvl.py";
    assert_int_equal(cv_build_plan_lookup(&w, &j, key, &hit), 0);
    assert_false(hit);
    assert_int_equal(cv_build_plan_lookup(&w, &j, key2, &hit), 0);
    assert_string_equal(key, key2);
    j.model_digest[0] = j.model_digest[0] == '0' ? '1' : '0';   /* another revision's file */
    assert_int_equal(cv_build_plan_lookup(&w, &j, key, &hit), -1);
    free(model), free(fresh);
}

/* Target descriptions come without loading LLVM: the backend's table for
 * named targets, the kernel's view of the CPU for native. */
static void test_targets(void **state)
{
    (void)state;
    cv_compile_target t;
    assert_int_equal(cv_compile_target_describe("x86_64-avx2", &t, NULL), 0);
    assert_string_equal(t.triple, "x86_64-unknown-linux-gnu");
    assert_string_equal(t.features, "cpu=x86-64-v3");
    assert_int_equal(cv_compile_target_describe("native", &t, NULL), 0);
    assert_non_null(strstr(t.triple, "-unknown-linux-gnu"));
    assert_int_equal(strncmp(t.features, "cpu=host:", 9), 0);
    assert_non_null(strstr(t.features, ",+"));
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_compile_target_describe("cuda-sm0", &t, &d), -1);
    assert_int_equal(d.v[0].code, 5010);
    cv_diag_free(&d);
}

/* ------------------------------------------------------------------ ONNX */

/* A hand-encoded ModelProto: graph { initializer { external_data {
 * key: "location" value: "w.bin" } } }, plus a node attribute tensor. */
static void test_onnx_scan(void **state)
{
    (void)state;
    static const uint8_t entry[] = {0x0a, 8, 'l', 'o', 'c', 'a', 't', 'i', 'o', 'n',
                                    0x12, 5, 'w', '.', 'b', 'i', 'n'};
    uint8_t tensor[64], graph[128], model[160], attr[80], node[96];
    size_t t = 0, g = 0, m = 0, a = 0, n = 0;
    tensor[t++] = 0x6a;                     /* field 13, length-delimited */
    tensor[t++] = sizeof entry;
    memcpy(tensor + t, entry, sizeof entry);
    t += sizeof entry;
    graph[g++] = 0x2a;                      /* initializer = 5 */
    graph[g++] = (uint8_t)t;
    memcpy(graph + g, tensor, t);
    g += t;
    attr[a++] = 0x2a;                       /* AttributeProto.t = 5 */
    attr[a++] = (uint8_t)t;
    memcpy(attr + a, tensor, t);
    a += t;
    attr[a - 1] = 'x';                      /* a second location: "w.bix" */
    node[n++] = 0x2a;                       /* NodeProto.attribute = 5 */
    node[n++] = (uint8_t)a;
    memcpy(node + n, attr, a);
    n += a;
    graph[g++] = 0x0a;                      /* node = 1 */
    graph[g++] = (uint8_t)n;
    memcpy(graph + g, node, n);
    g += n;
    model[m++] = 0x08;                      /* ir_version = 8 */
    model[m++] = 8;
    model[m++] = 0x3a;                      /* graph = 7 */
    model[m++] = (uint8_t)g;
    memcpy(model + m, graph, g);
    m += g;
    json_t *files = json_array();
    assert_int_equal(cv_compile_onnx_external_files(model, m, files), 0);
    assert_int_equal(json_array_size(files), 2);
    assert_string_equal(json_string_value(json_array_get(files, 0)), "w.bin");
    json_decref(files);
    files = json_array();
    assert_int_equal(cv_compile_onnx_external_files(model, m - 3, files), -1);  /* truncated */
    json_decref(files);
}

/* A real ONNX model whose weights are external data: the data file enters
 * the L1 key (found by the wire scan), so changing it misses both levels. */
static void test_onnx_external_data(void **state)
{
    (void)state;
    if (!cv_pyrun_has_module("onnx")) {
        skip();
        return;
    }
    char *mdir = cv_tmpdir_path(g_dir, "onnx");
    mkdir(mdir, 0755);
    static const char *const py =
        "import sys, numpy as np\n"
        "from onnx import helper, TensorProto, numpy_helper, save_model\n"
        "w = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(1, 8), name='W')\n"
        "x = helper.make_tensor_value_info('X', TensorProto.FLOAT, [2, 8])\n"
        "y = helper.make_tensor_value_info('Y', TensorProto.FLOAT, [2, 8])\n"
        "g = helper.make_graph([helper.make_node('Add', ['X', 'W'], ['Y'], name='add0')],\n"
        "                      'addw', [x], [y], [w])\n"
        "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])\n"
        "save_model(m, sys.argv[1] + '/addw.onnx', save_as_external_data=True,\n"
        "           all_tensors_to_one_file=True, location='w.bin', size_threshold=0)\n";
    const char *args[] = {mdir, NULL};
    assert_int_equal(cv_pyrun(py, args, NULL), 0);
    cv_build_result r;
    free(build(base_opts(mdir, "addw.onnx"), &r));
    EXPECT(r, false, false);
    free(build(base_opts(mdir, "addw.onnx"), &r));
    EXPECT(r, true, true);
    char *bin = cv_tmpdir_path(mdir, "w.bin");
    size_t len;
    char *data = cv_tmpdir_read_file(bin, &len);
    assert_int_equal(len, 32);
    data[0] ^= 1;
    assert_int_equal(cv_tmpdir_write(mdir, "w.bin", data, len), 0);
    free(build(base_opts(mdir, "addw.onnx"), &r));
    EXPECT(r, false, false);
    assert_string_equal(r.l1.reason, "weights changed");
    free(data), free(bin), free(mdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_scan),
        cmocka_unit_test(test_cold_then_warm),
        cmocka_unit_test(test_stats_count_once),
        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_no_cache),
        cmocka_unit_test(test_missing_blob),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_front_end_error),
        cmocka_unit_test(test_onnx_external_data),
        cmocka_unit_test(test_plan_lookup),
        cmocka_unit_test(test_targets),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
