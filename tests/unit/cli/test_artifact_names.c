/* Artifacts from a new user's point of view (issue 27): two PyTorch exports
 * (both graphs "torch_jit") compiled into one directory get their files'
 * names and link into one C program; --name is checked; an artifact of
 * another model is not overwritten without --force; the model's output
 * names reach the manifest, the header and `cuvil run`; an AVX-512 artifact
 * on a CPU without AVX-512 (qemu -cpu Haswell) is refused with CV5036
 * instead of dying of SIGILL; a model with more than 64 outputs runs.
 * The exports come from tests/tools/export_tiny_torch.py (make test). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler-core/cuvil.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp, *errfile;
static char models[4096];

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

static const char *build_dir(void)
{
    const char *b = getenv("CUVIL_BUILD");
    return b ? b : "build";
}

/* Runs argv (NULL-terminated); stdout in *out, stderr in *err (either may
 * be NULL). */
static int runv(const char *const *argv, char **out, char **err)
{
    char *o = NULL;
    int rc = cv_run_argv(argv, errfile, &o);
    if (out)
        *out = o;
    else
        free(o);
    if (err) {
        size_t len;
        *err = cv_tmpdir_read_file(errfile, &len);
        if (!*err)
            *err = strdup("");
    }
    return rc;
}

static int cuvil(char **out, char **err, ...)
{
    const char *argv[24] = {cuvil_bin()};
    va_list ap;
    va_start(ap, err);
    int n = 1;
    for (const char *a; n < 23 && (a = va_arg(ap, const char *));)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return runv(argv, out, err);
}

static char *model(const char *name)
{
    return cv_tmpdir_path(models, name);
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("artnames");
    errfile = cv_tmpdir_path(tmp, "stderr.txt");
    snprintf(models, sizeof models, "%s/models/tiny", build_dir());
    setenv("CUVIL_CACHE_DIR", tmp, 1);      /* a private cache: hits and misses both seen */
    /* The sanitized cuvil children dlopen the LLVM plugin; LeakSanitizer's
     * tracer crashed at their exit scanning its dynamic TLS (as in
     * test_backend_layout.c).  Leaks are still checked, TLS not scanned. */
    setenv("LSAN_OPTIONS", "use_tls=0", 0);
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(errfile);
    cv_tmpdir_remove(tmp);
    return 0;
}

static bool have_exports(void)
{
    char *p = model("tiny.stamp");
    bool ok = access(p, R_OK) == 0;
    free(p);
    if (!ok)
        fprintf(stderr, "skipped: no tiny PyTorch exports under %s (python3-torch?)\n", models);
    return ok;
}

static bool exists(const char *dir, const char *name)
{
    char *p = cv_tmpdir_path(dir, name);
    bool ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

static json_t *load_json(const char *dir, const char *name)
{
    char *p = cv_tmpdir_path(dir, name);
    json_t *j = json_load_file(p, 0, NULL);
    free(p);
    assert_non_null(j);
    return j;
}

/* Both exports into one directory: files and symbols named after the
 * files' stems, each with its own manifest beside the shared one. */
static char *compile_both(const char *tag)
{
    char *out = cv_tmpdir_path(tmp, tag);
    char *a = model("classifier.onnx"), *b = model("encoder.onnx"), *o1, *err;
    assert_int_equal(cuvil(&o1, &err, "compile", a, "-t", "native", "-o", out, NULL), 0);
    assert_non_null(strstr(o1, "wrote classifier for native to"));
    assert_non_null(strstr(o1, "libclassifier.so"));
    free(o1);
    free(err);
    assert_int_equal(cuvil(NULL, NULL, "compile", b, "-t", "native", "-o", out, "-q", NULL), 0);
    free(a);
    free(b);
    return out;
}

static void test_torch_exports_named_after_their_files(void **state)
{
    (void)state;
    if (!have_exports())
        return;
    char *out = compile_both("both");
    const char *want[] = {"libclassifier.so", "libclassifier.a", "classifier.h",
                          "libencoder.so", "libencoder.a", "encoder.h",
                          "classifier.manifest.json", "encoder.manifest.json"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_true(exists(out, want[i]));
    assert_false(exists(out, "libtorch_jit.so"));
    json_t *m = load_json(out, "classifier.manifest.json");
    assert_string_equal(json_string_value(json_object_get(m, "name")), "classifier");
    json_decref(m);
    free(out);
}

static void test_output_names_kept(void **state)
{
    (void)state;
    if (!have_exports())
        return;
    char *out = compile_both("names");
    json_t *m = load_json(out, "classifier.manifest.json");
    json_t *o0 = json_array_get(json_object_get(m, "outputs"), 0);
    json_t *i0 = json_array_get(json_object_get(m, "inputs"), 0);
    assert_string_equal(json_string_value(json_object_get(o0, "name")), "logits");
    assert_string_equal(json_string_value(json_object_get(i0, "name")), "features");
    json_decref(m);
    char *hp = cv_tmpdir_path(out, "classifier.h");
    size_t len;
    char *h = cv_tmpdir_read_file(hp, &len);
    assert_non_null(strstr(h, "#define CV_CLASSIFIER_OUTPUT_LOGITS 0"));
    assert_non_null(strstr(h, "#define CV_CLASSIFIER_INPUT_FEATURES 0"));
    free(h);
    free(hp);
    /* run: the output file and the JSON report use the name. */
    char *x = cv_tmpdir_path(tmp, "x.npy"), *res = cv_tmpdir_path(tmp, "res");
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.ones((3, 4), np.float32))\n", args, NULL), 0);
    char in[4200], *mf = cv_tmpdir_path(out, "classifier.manifest.json"), *js;
    snprintf(in, sizeof in, "features=%s", x);
    assert_int_equal(cuvil(&js, NULL, "run", mf, "--input", in, "--output", res, "--json", NULL), 0);
    json_t *j = json_loads(js, 0, NULL);
    json_t *r0 = json_array_get(json_object_get(j, "outputs"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "name")), "logits");
    assert_true(exists(res, "logits.npy"));
    json_decref(j);
    free(js);
    /* Without --output: name, type, shape and the first values. */
    char *text;
    assert_int_equal(cuvil(&text, NULL, "run", mf, "--input", in, NULL), 0);
    assert_non_null(strstr(text, "%logits f32[3,3] = ["));
    free(text);
    free(mf);
    free(res);
    free(x);
    free(out);
}

static void test_name_option(void **state)
{
    (void)state;
    if (!have_exports())
        return;
    char *out = cv_tmpdir_path(tmp, "named"), *a = model("classifier.onnx"), *err;
    assert_int_equal(cuvil(NULL, &err, "compile", a, "-o", out, "--name", "9lives", NULL), 1);
    assert_non_null(strstr(err, "error[CV5037]"));
    free(err);
    assert_int_equal(cuvil(NULL, &err, "compile", a, "-o", out, "--name", "my-model", NULL), 1);
    assert_non_null(strstr(err, "error[CV5037]"));
    free(err);
    assert_int_equal(cuvil(NULL, NULL, "compile", a, "-o", out, "--name", "sentiment", "-q", NULL), 0);
    assert_true(exists(out, "libsentiment.so"));
    assert_true(exists(out, "sentiment.h"));
    free(a);
    free(out);
}

/* Another model whose file has the same stem: refused, then forced. */
static void test_refuses_to_overwrite_another_model(void **state)
{
    (void)state;
    if (!have_exports())
        return;
    char *out = compile_both("clash"), *sub = cv_tmpdir_path(tmp, "other"), *err;
    char *from = model("encoder.onnx"), *to = cv_tmpdir_path(sub, "classifier.onnx");
    const char *cp[] = {"/bin/sh", "-c", "mkdir -p \"$0\" && cp \"$1\" \"$2\"", sub, from, to, NULL};
    assert_int_equal(runv(cp, NULL, NULL), 0);
    assert_int_equal(cuvil(NULL, &err, "compile", to, "-o", out, NULL), 1);
    assert_non_null(strstr(err, "error[CV5035]"));
    free(err);
    json_t *m = load_json(out, "classifier.manifest.json");     /* untouched */
    assert_string_equal(json_string_value(json_object_get(
        json_array_get(json_object_get(m, "outputs"), 0), "name")), "logits");
    json_decref(m);
    /* The same model again is no clash (a recompile, -O3 here). */
    char *a = model("classifier.onnx");
    if (cuvil(NULL, &err, "compile", a, "-o", out, "-O3", "-q", NULL) != 0)
        fail_msg("recompiling the same model was refused:\n%s", err);
    free(err);
    if (cuvil(NULL, &err, "compile", to, "-o", out, "--force", "-q", NULL) != 0)
        fail_msg("--force was refused:\n%s", err);
    free(err);
    m = load_json(out, "classifier.manifest.json");
    assert_int_equal(json_array_size(json_object_get(m, "outputs")), 2);
    json_decref(m);
    free(a);
    free(from);
    free(to);
    free(sub);
    free(out);
}

static const char c_program[] =
    "#include <math.h>\n#include <stdio.h>\n"
    "#include \"classifier.h\"\n#include \"encoder.h\"\n"
    "int main(void)\n{\n"
    "    cv_classifier_ctx *a = cv_classifier_create(1);\n"
    "    cv_encoder_ctx *b = cv_encoder_create(2);\n"
    "    if (!a || !b)\n        return 2;\n"
    "    float x[3 * 4], y[3 * 3], img[64], mean[2], max[2];\n"
    "    for (int i = 0; i < 12; i++)\n        x[i] = 1.0f;\n"
    "    for (int i = 0; i < 64; i++)\n        img[i] = (float)i / 64;\n"
    "    const void *ia[CV_CLASSIFIER_NUM_INPUTS] = {x}, *ib[CV_ENCODER_NUM_INPUTS] = {img};\n"
    "    void *oa[CV_CLASSIFIER_NUM_OUTPUTS], *ob[CV_ENCODER_NUM_OUTPUTS] = {mean, max};\n"
    "    oa[CV_CLASSIFIER_OUTPUT_LOGITS] = y;\n"
    "    int64_t batch[CV_CLASSIFIER_NUM_SYMBOLS] = {3};\n"
    "    if (cv_classifier_run(a, ia, oa, batch) || cv_encoder_run(b, ib, ob, NULL))\n"
    "        return 3;\n"
    "    for (int r = 0; r < 3; r++)\n"
    "        if (fabsf(y[3 * r] + y[3 * r + 1] + y[3 * r + 2] - 1) > 1e-5f)\n            return 4;\n"
    "    printf(\"%s %.5f %.5f\\n\", CV_CLASSIFIER_OUTPUT_0_NAME, y[0], mean[0]);\n"
    "    cv_classifier_destroy(a);\n    cv_encoder_destroy(b);\n    return 0;\n}\n";

/* The done-when of issue 27: both archives (and then both shared
 * libraries) in one C program, their results those of `cuvil run`. */
static void test_two_models_link_into_one_program(void **state)
{
    (void)state;
    if (!have_exports())
        return;
    char *out = compile_both("link");
    assert_int_equal(cv_tmpdir_write(out, "main.c", c_program, strlen(c_program)), 0);
    char *src = cv_tmpdir_path(out, "main.c"), *exe = cv_tmpdir_path(out, "main");
    char *la = cv_tmpdir_path(out, "libclassifier.a"), *lb = cv_tmpdir_path(out, "libencoder.a");
    const char *cc[] = {"/usr/bin/cc", "-O1", "-I", out, src, la, lb, "-o", exe, "-lm", "-lpthread", NULL};
    char *err;
    assert_int_equal(runv(cc, NULL, &err), 0);
    free(err);
    const char *run[] = {exe, NULL};
    char *o_static;
    assert_int_equal(runv(run, &o_static, NULL), 0);
    assert_non_null(strstr(o_static, "logits "));
    const char *ccso[] = {"/usr/bin/cc", "-O1", "-I", out, src, "-L", out, "-lclassifier", "-lencoder",
                          "-Wl,-rpath", out, "-o", exe, "-lm", NULL};
    assert_int_equal(runv(ccso, NULL, NULL), 0);
    char *o_shared;
    assert_int_equal(runv(run, &o_shared, NULL), 0);
    assert_string_equal(o_static, o_shared);
    /* The classifier's first value as `cuvil run` computes it. */
    char *x = cv_tmpdir_path(tmp, "ones.npy"), in[4200], *text;
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.ones((3, 4), np.float32))\n", args, NULL), 0);
    snprintf(in, sizeof in, "features=%s", x);
    char *mf = cv_tmpdir_path(out, "classifier.manifest.json");
    assert_int_equal(cuvil(&text, NULL, "run", mf, "--input", in, NULL), 0);
    double first = 0, c_first = 0;
    assert_non_null(strstr(text, "= ["));
    assert_int_equal(sscanf(strstr(text, "= [") + 3, "%lf", &first), 1);
    assert_int_equal(sscanf(o_static + strlen("logits "), "%lf", &c_first), 1);
    assert_true(first - c_first < 1e-4 && c_first - first < 1e-4);
    free(text);
    free(mf);
    free(x);
    free(o_static);
    free(o_shared);
    free(la);
    free(lb);
    free(src);
    free(exe);
    free(out);
}

/* An x86_64-avx512 artifact on a Haswell (qemu-user): CV5036 naming the
 * missing features and the target to use, exit 1, not SIGILL (132). */
static void test_cpu_features_checked(void **state)
{
    (void)state;
    if (!have_exports() || access("/usr/bin/qemu-x86_64", X_OK) != 0) {
        fprintf(stderr, "skipped: qemu-x86_64 (qemu-user) is not installed\n");
        return;
    }
    char *out = cv_tmpdir_path(tmp, "avx512"), *a = model("classifier.onnx");
    assert_int_equal(cuvil(NULL, NULL, "compile", a, "-t", "x86_64-avx512", "-o", out, "-q", NULL), 0);
    json_t *m = load_json(out, "manifest.json");
    json_t *req = json_object_get(json_object_get(m, "target"), "requires");
    bool has = false;
    for (size_t i = 0; i < json_array_size(req); i++)
        has = has || strcmp(json_string_value(json_array_get(req, i)), "avx512f") == 0;
    assert_true(has);
    json_decref(m);
    char *x = cv_tmpdir_path(tmp, "x1.npy"), in[4200], *err, bin[4200];
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.ones((1, 4), np.float32))\n", args, NULL), 0);
    snprintf(in, sizeof in, "features=%s", x);
    snprintf(bin, sizeof bin, "%s/cuvil", build_dir());     /* ASan does not run under qemu-user */
    const char *run[] = {"/usr/bin/qemu-x86_64", "-cpu", "Haswell", bin, "run", out, "--input", in, NULL};
    assert_int_equal(runv(run, NULL, &err), 1);
    assert_non_null(strstr(err, "error[CV5036]"));
    assert_non_null(strstr(err, "avx512f"));
    assert_non_null(strstr(err, "-t x86_64-avx2"));
    free(err);
    const char *bench[] = {"/usr/bin/qemu-x86_64", "-cpu", "Haswell", bin, "bench", out, "--iters", "1", NULL};
    assert_int_equal(runv(bench, NULL, &err), 1);
    assert_non_null(strstr(err, "error[CV5036]"));
    free(err);
    /* The artifact itself: create refuses, last_error says why. */
    static const char prog[] =
        "#include <stdio.h>\n#include \"classifier.h\"\n"
        "int main(void)\n{\n    cv_classifier_ctx *c = cv_classifier_create(1);\n"
        "    const char *m = NULL;\n    int code = cv_classifier_last_error(&m);\n"
        "    if (c) {\n        cv_classifier_destroy(c);\n        printf(\"created %d\\n\", code);\n"
        "        return 0;\n    }\n    printf(\"%d %s\\n\", code, m ? m : \"\");\n    return 1;\n}\n";
    assert_int_equal(cv_tmpdir_write(out, "main.c", prog, strlen(prog)), 0);
    char *src = cv_tmpdir_path(out, "main.c"), *exe = cv_tmpdir_path(out, "main");
    char *lib = cv_tmpdir_path(out, "libclassifier.a"), *text;
    const char *cc[] = {"/usr/bin/cc", "-I", out, src, lib, "-o", exe, "-lm", "-lpthread", NULL};
    assert_int_equal(runv(cc, NULL, NULL), 0);
    const char *haswell[] = {"/usr/bin/qemu-x86_64", "-cpu", "Haswell", exe, NULL};
    assert_int_equal(runv(haswell, &text, NULL), 1);
    assert_non_null(strstr(text, "5036 this CPU lacks avx512f"));
    assert_non_null(strstr(text, "built for x86_64-avx512"));
    free(text);
    if (strcmp(cv_cpu_host_target(), "x86_64-avx512") == 0) {     /* this host runs it */
        const char *here[] = {exe, NULL};
        assert_int_equal(runv(here, &text, NULL), 0);
        assert_non_null(strstr(text, "created 0"));
        free(text);
        assert_int_equal(cuvil(NULL, NULL, "run", out, "--input", in, NULL), 0);
    }
    free(src);
    free(exe);
    free(lib);
    free(x);
    free(a);
    free(out);
}

/* 70 outputs: more than the old fixed 64 of run, bench and the loader. */
static void test_many_outputs(void **state)
{
    (void)state;
    char text[16384];
    size_t at = (size_t)snprintf(text, sizeof text, "cuir 1\nmodel @wide(%%x: f32[N,4]) -> (");
    for (int i = 0; i < 70; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%sf32[N,4]", i ? ", " : "");
    at += (size_t)snprintf(text + at, sizeof text - at, ") {\n");
    for (int i = 0; i < 70; i++)
        at += (size_t)snprintf(text + at, sizeof text - at,
                               "  %%y%d = add(%%x, %%x) : f32[N,4]\n", i);
    at += (size_t)snprintf(text + at, sizeof text - at, "  return ");
    for (int i = 0; i < 70; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%s%%y%d", i ? ", " : "", i);
    snprintf(text + at, sizeof text - at, "\n}\n");
    assert_int_equal(cv_tmpdir_write(tmp, "wide.cuir", text, strlen(text)), 0);
    char *path = cv_tmpdir_path(tmp, "wide.cuir"), *out = cv_tmpdir_path(tmp, "wide");
    char *x = cv_tmpdir_path(tmp, "w.npy"), in[4200], *js;
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.ones((2, 4), np.float32))\n", args, NULL), 0);
    assert_int_equal(cuvil(NULL, NULL, "compile", path, "-o", out, "-q", NULL), 0);
    snprintf(in, sizeof in, "x=%s", x);
    assert_int_equal(cuvil(&js, NULL, "run", out, "--input", in, "--json", NULL), 0);
    json_t *j = json_loads(js, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "outputs")), 70);
    json_decref(j);
    free(js);
    assert_int_equal(cuvil(NULL, NULL, "bench", out, "--iters", "2", "--warmup", "0", NULL), 0);
    free(x);
    free(out);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_exports_named_after_their_files),
        cmocka_unit_test(test_output_names_kept),
        cmocka_unit_test(test_name_option),
        cmocka_unit_test(test_refuses_to_overwrite_another_model),
        cmocka_unit_test(test_two_models_link_into_one_program),
        cmocka_unit_test(test_cpu_features_checked),
        cmocka_unit_test(test_many_outputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
