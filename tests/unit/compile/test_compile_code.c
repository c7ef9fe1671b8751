/* The code level of compile-with-cache (issue 29, "code and weights
 * apart"): real models, real caches, the real backend.
 *
 * A retrained model (same source, new weights) compiles with a code hit and
 * gives the artifact a cold compile gives, byte for byte; a weight change
 * that steers code generation (a scalar folded into code, two weights that
 * CSE merges only while they are equal) must miss, and then also gives the
 * cold compile's artifact.  int8: a recalibration that moves an activation
 * scale (an immediate in the code) misses; one that keeps the scales, and
 * a retrain under the same calibration, hit with the cold compile's bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>

#include "common/npy.h"
#include "tests/support/worker_testlib.h"
#include "compile/internal.h"

static char *g_dir;
static int g_n;         /* numbering output and cold-cache directories */
static const cv_quant_opts *g_quant;    /* set: build() compiles int8 with it */

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("compile-code");
    return g_dir ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cv_tmpdir_remove(g_dir);
    return 0;
}

static char *fresh(const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s%d", what, ++g_n);
    return cv_tmpdir_path(g_dir, name);
}

/* Compiles model with cache c (NULL: a fresh, empty one) into a fresh
 * directory, returned (malloc'd). */
static char *build(cv_cache *c, const char *model, unsigned emit, cv_build_result *r)
{
    cv_cache *own = NULL;
    if (!c) {
        char name[32];
        snprintf(name, sizeof name, "cold%d", ++g_n);
        c = own = twu_cache(g_dir, name);
        assert_non_null(c);
    }
    char *out = fresh("out");
    cv_build_opts o = {.model = model, .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O0,
                       .emit = emit, .out_dir = out};
    if (g_quant) {
        o.precision = CV_PRECISION_INT8;
        o.quant = *g_quant;
    }
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_build(c, &o, r, &d);
    if (rc != 0 || cv_diag_has_errors(&d))
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    assert_int_equal(rc, 0);
    char line[600];
    cv_build_cache_line(r, line, sizeof line);
    fprintf(stderr, "  %s\n", line);
    cv_cache_close(own);
    return out;
}

static bool hit(const cv_build_level *l)
{
    return l->outcome == CV_CACHE_HIT || l->outcome == CV_CACHE_REMOTE_HIT;
}

/* Directories a and b hold the same files with the same bytes; returns how
 * many.  Which files differ is printed first. */
static int assert_same_dir(const char *a, const char *b)
{
    DIR *dh = opendir(a);
    assert_non_null(dh);
    struct dirent *e;
    int n = 0, differ = 0;
    while ((e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *pa = cv_tmpdir_path(a, e->d_name), *pb = cv_tmpdir_path(b, e->d_name);
        size_t la = 0, lb = 0;
        char *x = cv_tmpdir_read_file(pa, &la), *y = cv_tmpdir_read_file(pb, &lb);
        if (!x || !y || la != lb || memcmp(x, y, la) != 0) {
            fprintf(stderr, "  %s differs between %s and %s\n", e->d_name, a, b);
            differ++;
        }
        free(x), free(y), free(pa), free(pb);
        n++;
    }
    closedir(dh);
    assert_int_equal(differ, 0);
    return n;
}

static bool has_file(const char *dir, const char *name)
{
    char *p = cv_tmpdir_path(dir, name);
    bool ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

/* The stored file list of r's artifact: the files holding the weights
 * image are parts around one image blob (weights_pack.c), shared by all. */
static void assert_weights_once(cv_cache *c, const cv_build_result *r, int want_files)
{
    cv_digest dg;
    void *list = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_digest_parse(r->artifact_manifest, &dg), 0);
    assert_int_equal(cv_cache_get_blob(c, &dg, &list, &len, NULL, NULL), 1);
    json_t *o = json_loadb(list, len, 0, NULL), *files = json_object_get(o, "files"), *e;
    const char *name, *image = NULL;
    int split = 0;
    json_object_foreach(files, name, e) {
        json_t *parts = json_object_get(e, "parts");
        if (!parts)
            continue;
        json_t *img = json_array_get(parts, 1);
        assert_int_equal(json_array_size(parts), 3);
        assert_int_equal(json_integer_value(json_object_get(img, "size")), r->info.weights_len);
        if (image)
            assert_string_equal(json_string_value(json_object_get(img, "blob")), image);
        image = json_string_value(json_object_get(img, "blob"));
        split++;
    }
    assert_int_equal(split, want_files);
    json_decref(o);
    free(list);
}

/* Cold compile, retrain (new weights, same source): l1 and l2 miss, the
 * code hits, and the artifact equals a cold compile of the retrained model. */
static void retrain(unsigned emit, const char *expect_file)
{
    char sub[32];
    snprintf(sub, sizeof sub, "retrain%d", ++g_n);
    char *mdir = twu_model_dir(g_dir, sub, "tiny.cvl.py", "1.0", NULL, 0.0f);
    char *model = cv_tmpdir_path(mdir, "tiny.cvl.py");
    cv_cache *c = twu_cache(mdir, "cache");
    assert_non_null(c);
    cv_build_result r;
    free(build(c, model, emit, &r));
    assert_true(r.compiled);
    assert_int_equal(r.code.outcome, CV_CACHE_MISS);
    assert_int_equal(r.info.llvm_modules, 1);
    assert_true(r.info.linked_so);
    assert_false(r.info.so_spliced);

    assert_int_equal(twu_write_weights(mdir, "tiny.safetensors", 0.5f), 0);
    char *warm = build(c, model, emit, &r);
    assert_false(hit(&r.l1));
    assert_false(hit(&r.l2));
    assert_true(r.compiled);
    assert_int_equal(r.code.outcome, CV_CACHE_HIT);
    /* The code key is known before LLVM (code_source.c): a hit builds no
     * LLVM module at all. */
    assert_int_equal(r.info.llvm_modules, 0);
    assert_true(has_file(warm, expect_file));
    /* No linker: the library is the code entry's template around the new
     * weights (so_splice.c), and below equals the linker's output. */
    assert_true(r.info.linked_so);
    assert_true(r.info.so_spliced);
    assert_weights_once(c, &r, emit ? 1 : 3);   /* .so; .a and _weights.o by default */

    char *cold = build(NULL, model, emit, &r);
    assert_int_equal(r.code.outcome, CV_CACHE_MISS);
    assert_true(assert_same_dir(cold, warm) >= 4);
    assert_same_dir(warm, cold);

    /* The same weights again: the artifact itself hits, its files made
     * from the parts the retrain stored. */
    char *again = build(c, model, emit, &r);
    assert_true(hit(&r.l2));
    assert_int_equal(r.code.outcome, CV_CACHE_NONE);
    assert_same_dir(again, cold);
    free(again);
    cv_cache_close(c);
    free(warm), free(cold), free(model), free(mdir);
}

static void test_retrain_native(void **state)
{
    (void)state;
    retrain(0, "tiny_weights.o");       /* so, a, obj, h: the weights object beside the code */
}

/* r's stored file list (parsed). */
static json_t *stored_list(cv_cache *c, const cv_build_result *r)
{
    cv_digest dg;
    void *list = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_digest_parse(r->artifact_manifest, &dg), 0);
    assert_int_equal(cv_cache_get_blob(c, &dg, &list, &len, NULL, NULL), 1);
    json_t *o = json_loadb(list, len, 0, NULL);
    free(list);
    assert_non_null(o);
    return o;
}

/* A file list whose parts do not make the file it names (here the other
 * weights' image under the retrain's library) is not written back: the
 * parts may come from a remote, so the whole is checked against the
 * file's SHA-256 (weights_pack.c). */
static void test_weights_parts_checked(void **state)
{
    (void)state;
    char *mdir = twu_model_dir(g_dir, "parts", "tiny.cvl.py", "1.0", NULL, 0.0f);
    char *model = cv_tmpdir_path(mdir, "tiny.cvl.py");
    cv_cache *c = twu_cache(mdir, "cache");
    cv_build_result r1, r2;
    free(build(c, model, 0, &r1));
    assert_int_equal(twu_write_weights(mdir, "tiny.safetensors", 0.25f), 0);
    free(build(c, model, 0, &r2));
    json_t *a = stored_list(c, &r1), *b = stored_list(c, &r2);
    json_t *img_a = json_array_get(json_object_get(json_object_get(json_object_get(a, "files"),
                                   "libtiny.so"), "parts"), 1);
    json_t *img_b = json_array_get(json_object_get(json_object_get(json_object_get(b, "files"),
                                   "libtiny.so"), "parts"), 1);
    assert_non_null(img_a);
    assert_non_null(img_b);
    assert_string_not_equal(json_string_value(json_object_get(img_a, "blob")),
                            json_string_value(json_object_get(img_b, "blob")));
    json_object_set(img_b, "blob", json_object_get(img_a, "blob"));
    char *text = json_dumps(b, JSON_COMPACT), name[128], why[256] = "";
    char *out = fresh("tampered");
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_compile_artifact_materialise(c, text, strlen(text), out, name, why,
                                                     sizeof why, &d), 0);
    assert_non_null(strstr(why, "libtiny.so"));
    assert_false(has_file(out, "libtiny.so"));
    /* The list as stored is written back whole. */
    free(text);
    json_decref(b);
    b = stored_list(c, &r2);
    text = json_dumps(b, JSON_COMPACT);
    assert_int_equal(cv_compile_artifact_materialise(c, text, strlen(text), out, name, why,
                                                     sizeof why, &d), 1);
    assert_true(has_file(out, "libtiny.so"));
    cv_diag_free(&d);
    free(text), free(out);
    json_decref(a), json_decref(b);
    cv_cache_close(c);
    free(model), free(mdir);
}

static void test_retrain_c99(void **state)
{
    (void)state;
    retrain(CV_EMIT_C | CV_EMIT_SO | CV_EMIT_H, "tiny_weights.c");
}

/* relu(x @ a.T + x @ b.T) * gain: CSE merges a and b while their bytes are
 * equal, and gain (one f32) is folded into the code. */
static const char STEER[] =
    "\"\"\"Weights whose values steer code generation.\"\"\"\n"
    "import cuvil as cvl\n\n\n"
    "@cvl.model(input_shapes=[(\"N\", 8)], weights=\"steer.safetensors\")\n"
    "def steer(x, p):\n"
    "    return cvl.relu(x @ p.a.T + x @ p.b.T) * p.gain\n";

static void write_steer(const char *dir, float base, float b_shift, float gain)
{
    float a[32], b[32];
    for (int i = 0; i < 32; i++) {
        a[i] = (float)i / 10.0f + base;
        b[i] = a[i] + b_shift;
    }
    cv_st_tensor t[3] = {
        {.name = "a", .dtype = CV_F32, .rank = 2, .dims = {4, 8}, .data = a, .nbytes = sizeof a},
        {.name = "b", .dtype = CV_F32, .rank = 2, .dims = {4, 8}, .data = b, .nbytes = sizeof b},
        {.name = "gain", .dtype = CV_F32, .rank = 1, .dims = {1}, .data = &gain,
         .nbytes = sizeof gain},
    };
    char *path = cv_tmpdir_path(dir, "steer.safetensors");
    assert_int_equal(cv_safetensors_write(path, t, 3, NULL), 0);
    free(path);
}

/* One step: new weights, then the code level's outcome must be `code`; a
 * hit must give the cold compile's artifact (a false hit would not). */
static void steer_step(cv_cache *c, const char *dir, const char *model, float base,
                       float b_shift, float gain, cv_cache_outcome code)
{
    write_steer(dir, base, b_shift, gain);
    cv_build_result r;
    char *warm = build(c, model, 0, &r), *cold = NULL;
    assert_true(r.compiled);
    assert_int_equal(r.code.outcome, code);
    if (code == CV_CACHE_HIT) {
        cold = build(NULL, model, 0, &r);
        assert_same_dir(cold, warm);
    }
    free(warm), free(cold);
}

static void test_steering_values_miss(void **state)
{
    (void)state;
    char *mdir = cv_tmpdir_path(g_dir, "steer");
    assert_int_equal(mkdir(mdir, 0755), 0);
    assert_int_equal(cv_tmpdir_write(mdir, "steer.cvl.py", STEER, strlen(STEER)), 0);
    char *model = cv_tmpdir_path(mdir, "steer.cvl.py");
    cv_cache *c = twu_cache(mdir, "cache");
    assert_non_null(c);
    steer_step(c, mdir, model, 0, 0.0f, 2.0f, CV_CACHE_MISS);  /* a == b: merged */
    steer_step(c, mdir, model, 0, 1.0f, 2.0f, CV_CACHE_MISS);  /* a != b: not merged */
    steer_step(c, mdir, model, 0, 2.0f, 2.0f, CV_CACHE_HIT);   /* still not: a retrain */
    steer_step(c, mdir, model, 0, 2.0f, 3.0f, CV_CACHE_MISS);  /* the folded scalar */
    steer_step(c, mdir, model, 5, 0.0f, 2.0f, CV_CACHE_HIT);   /* merged again: the first code */
    cv_cache_close(c);
    free(model), free(mdir);
}

/* The weights object links with the code on its own (the archive's index
 * names its symbol) and is a plain copy of the image: its size is the
 * image's plus a fixed amount of headers. */
static void test_weights_object(void **state)
{
    (void)state;
    char *mdir = twu_model_dir(g_dir, "wobj", "tiny.cvl.py", "1.0", NULL, 0.0f);
    char *model = cv_tmpdir_path(mdir, "tiny.cvl.py");
    cv_build_result r;
    char *out = build(NULL, model, 0, &r);
    char *wpath = cv_tmpdir_path(out, "tiny_weights.o"), *apath = cv_tmpdir_path(out, "libtiny.a");
    size_t wl = 0, al = 0;
    char *w = cv_tmpdir_read_file(wpath, &wl), *a = cv_tmpdir_read_file(apath, &al);
    assert_non_null(w);
    assert_non_null(a);
    assert_memory_equal(w, "\177ELF", 4);
    assert_true(wl >= 64 + 128 && wl < 64 + 128 + 1024);   /* fc.weight (128 B) + fc.bias */
    assert_non_null(memmem(a, al, "cv_tiny_weights", 15));
    assert_non_null(memmem(a, al, w, wl));
    free(w), free(a), free(wpath), free(apath), free(out), free(model), free(mdir);
}

/* explain: a retrain is "structure unchanged, weights changed (1 of 2
 * tensors)" (fc.weight changed, fc.bias did not), the code level is said
 * to hold its code before it compiles, and the stats count code hits apart. */
static void test_explain_retrain(void **state)
{
    (void)state;
    char *mdir = twu_model_dir(g_dir, "explain", "tiny.cvl.py", "1.0", NULL, 0.0f);
    char *model = cv_tmpdir_path(mdir, "tiny.cvl.py");
    cv_cache *c = twu_cache(mdir, "cache");
    assert_non_null(c);
    cv_build_result r;
    free(build(c, model, 0, &r));
    assert_int_equal(twu_write_weights(mdir, "tiny.safetensors", 0.5f), 0);

    cv_build_opts o = {.model = model, .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O0};
    cv_build_keys k;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_build_probe(c, &o, true, &k, &d), 0);
    assert_true(k.have_l2);
    assert_false(k.l2_hit);
    assert_int_equal(cv_build_code_stored(c, &k.l2, &d), 1);
    char *closest = NULL;
    cv_cache_diffs diffs = {0};
    assert_int_equal(cv_cache_closest_manifest(c, CV_CACHE_L2, k.l2.manifest, &closest, &d), 1);
    assert_int_equal(cv_cache_explain(closest, k.l2.manifest, &diffs, &d), 0);
    char why[160];
    assert_true(cv_build_explain_weights(&diffs, k.l2.manifest, why, sizeof why));
    assert_string_equal(why, "structure unchanged, weights changed (1 of 2 tensors)");
    cv_cache_diffs_free(&diffs);
    free(closest);
    cv_build_keys_free(&k);
    cv_diag_free(&d);

    cv_cache_stats before, after;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_stats_get(c, &before, &d), 0);
    char *out = fresh("out");
    o.out_dir = out;
    o.explain = true;
    assert_int_equal(cv_build(c, &o, &r, &d), 0);
    assert_int_equal(r.code.outcome, CV_CACHE_HIT);
    assert_non_null(strstr(r.l2.reason, "structure unchanged, weights changed (1 of 2 tensors)"));
    assert_string_equal(r.l2.cause, "weights");
    assert_int_equal(cv_cache_stats_get(c, &after, &d), 0);
    assert_int_equal(after.hits_local[CV_CACHE_CODE] - before.hits_local[CV_CACHE_CODE], 1);
    assert_int_equal(after.misses[CV_CACHE_CODE], before.misses[CV_CACHE_CODE]);
    assert_int_equal(after.misses[CV_CACHE_L2] - before.misses[CV_CACHE_L2], 1);
    cv_diag_free(&d);

    /* A changed structure (the scalar in the source) is not a retrain. */
    char *text = twu_model_text("2.0", NULL);
    assert_int_equal(cv_tmpdir_write(mdir, "tiny.cvl.py", text, strlen(text)), 0);
    cv_diag_init(&d);
    assert_int_equal(cv_build_probe(c, &o, true, &k, &d), 0);
    assert_int_equal(cv_build_code_stored(c, &k.l2, &d), 0);
    cv_build_keys_free(&k);
    cv_diag_free(&d);
    cv_cache_close(c);
    free(text), free(out), free(model), free(mdir);
}

/* int8: calibration gives the activations' scales, which the kernels take
 * as immediates (x_scale, y_scale: codegen_quant.c), and, with the weights,
 * the per-channel combined scales, which are weights (constants of the
 * weights image).  Eight calibration inputs x (1 x 8) spanning [-range,
 * range]; shift moves the values inside that span but not its ends. */
static void write_calib(const char *dir, float range, float shift)
{
    for (int f = 0; f < 8; f++) {
        float x[8];
        for (int i = 0; i < 8; i++)
            x[i] = range * (float)((i + f) % 8 - 4) / 4.0f + (i == 3 ? shift : 0.0f);
        x[0] = f % 2 ? range : -range;
        char name[32];
        snprintf(name, sizeof name, "cal%d.npy", f);
        char *path = cv_tmpdir_path(dir, name);
        cv_diag d;
        cv_diag_init(&d);
        assert_int_equal(cv_npy_write(path, CV_F32, 2, (const int64_t[]){1, 8}, x, &d), 0);
        cv_diag_free(&d);
        free(path);
    }
}

/* One int8 step: new calibration and weights; the code level's outcome,
 * and a hit gives the cold compile's artifact. */
static cv_cache_outcome int8_step(cv_cache *c, const char *dir, const char *model, float range,
                                  float shift, float seed)
{
    write_calib(dir, range, shift);
    assert_int_equal(twu_write_weights(dir, "tiny.safetensors", seed), 0);
    cv_build_result r;
    char *warm = build(c, model, 0, &r), *cold = NULL;
    assert_true(r.compiled);
    cv_cache_outcome code = r.code.outcome;
    if (code == CV_CACHE_HIT) {
        cold = build(NULL, model, 0, &r);
        assert_same_dir(cold, warm);
    }
    free(warm), free(cold);
    return code;
}

static void test_int8_calibration(void **state)
{
    (void)state;
    char *mdir = twu_model_dir(g_dir, "int8", "tiny.cvl.py", "1.0", NULL, 1.0f);
    char *model = cv_tmpdir_path(mdir, "tiny.cvl.py"), *glob = cv_tmpdir_path(mdir, "cal*.npy");
    cv_quant_opts q = {.precision = CV_PRECISION_INT8, .calibration = glob};
    g_quant = &q;
    cv_cache *c = twu_cache(mdir, "cache");
    assert_non_null(c);
    assert_int_equal(int8_step(c, mdir, model, 1.0f, 0.0f, 1.0f), CV_CACHE_MISS);
    /* The input's range tripled: x_scale, an immediate, changed. */
    assert_int_equal(int8_step(c, mdir, model, 3.0f, 0.0f, 1.0f), CV_CACHE_MISS);
    /* Other calibration values in the same range: the same scales. */
    assert_int_equal(int8_step(c, mdir, model, 3.0f, 0.5f, 1.0f), CV_CACHE_HIT);
    /* Retrains under that calibration: new weights, weight scales, combined
     * scales (all data), the same code, and the cold compile's bytes. */
    assert_int_equal(int8_step(c, mdir, model, 3.0f, 0.5f, 0.5f), CV_CACHE_HIT);
    assert_int_equal(int8_step(c, mdir, model, 3.0f, 0.5f, 2.0f), CV_CACHE_HIT);
    g_quant = NULL;
    cv_cache_close(c);
    free(glob), free(model), free(mdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_object),
        cmocka_unit_test(test_retrain_native),
        cmocka_unit_test(test_retrain_c99),
        cmocka_unit_test(test_weights_parts_checked),
        cmocka_unit_test(test_steering_values_miss),
        cmocka_unit_test(test_explain_retrain),
        cmocka_unit_test(test_int8_calibration),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
