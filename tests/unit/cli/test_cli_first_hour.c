/* The commands as a new user meets them (issue 27): input errors that name
 * the input and its type, compile saying what it wrote, run printing its
 * outputs, the target list, cache explain and stats, Git LFS pointers,
 * `farm up` outside a git repository, and counts in the singular. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp, *errfile;

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

/* Runs cuvil; stdout in *out, stderr in *err (either may be NULL). */
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

static char *npy(const char *name, const char *shape, const char *dtype)
{
    char *path = cv_tmpdir_path(tmp, name), code[300];
    snprintf(code, sizeof code, "import numpy as np, sys\n"
                                "np.save(sys.argv[1], np.ones(%s, np.%s))\n", shape, dtype);
    const char *args[] = {path, NULL};
    assert_int_equal(cv_pyrun(code, args, NULL), 0);
    return path;
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("firsthour");
    errfile = cv_tmpdir_path(tmp, "stderr.txt");
    char *cache = cv_tmpdir_path(tmp, "cache");
    setenv("CUVIL_CACHE_DIR", cache, 1);
    free(cache);
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(errfile);
    cv_tmpdir_remove(tmp);
    return 0;
}

static void test_compile_says_what_it_wrote(void **state)
{
    (void)state;
    char *out = cv_tmpdir_path(tmp, "mlp"), *text, *err;
    assert_int_equal(cuvil(&text, &err, "compile", "examples/cuir/mlp.cuir", "-o", out, NULL), 0);
    char want[4200];
    snprintf(want, sizeof want, "cuvil compile: wrote mlp for native to %s/ (libmlp.a, libmlp.so, "
                                "mlp.h, manifest.json)", out);
    assert_non_null(strstr(text, want));
    free(text);
    free(err);
    assert_int_equal(cuvil(&text, &err, "compile", "examples/cuir/mlp.cuir", "-o", out, "-q", NULL), 0);
    assert_string_equal(text, "");
    free(text);
    free(err);
    free(out);
}

/* Each input error names the input, its declared type with the symbol,
 * and what was given. */
static void test_input_errors_name_the_input(void **state)
{
    (void)state;
    char *out = cv_tmpdir_path(tmp, "mlp-in"), *err, in[4200];
    assert_int_equal(cuvil(NULL, NULL, "compile", "examples/cuir/mlp.cuir", "-o", out, "-q", NULL), 0);
    char *bad = npy("bad.npy", "(5, 7)", "float32"), *ints = npy("ints.npy", "(2, 8)", "int64");
    snprintf(in, sizeof in, "x=%s", bad);
    assert_int_equal(cuvil(NULL, &err, "run", out, "--input", in, NULL), 1);
    assert_non_null(strstr(err, "error[CV2024]: input %x must be f32[N,8], got f32[5,7]"));
    free(err);
    snprintf(in, sizeof in, "x=%s", ints);
    assert_int_equal(cuvil(NULL, &err, "run", out, "--input", in, NULL), 1);
    assert_non_null(strstr(err, "input %x must be f32[N,8], but"));
    assert_non_null(strstr(err, "holds i64[2,8]"));
    free(err);
    snprintf(in, sizeof in, "y=%s", bad);
    assert_int_equal(cuvil(NULL, &err, "run", out, "--input", in, NULL), 1);
    assert_non_null(strstr(err, "the model has no input %y; its inputs are %x (f32[N,8])"));
    free(err);
    assert_int_equal(cuvil(NULL, &err, "run", out, NULL), 1);
    assert_non_null(strstr(err, "no --input given for %x (f32[N,8])"));
    free(err);
    /* The same through the interpreter (the model file itself). */
    snprintf(in, sizeof in, "y=%s", bad);
    assert_int_equal(cuvil(NULL, &err, "run", "examples/cuir/mlp.cuir", "--interp", "--input", in,
                           NULL), 1);
    assert_non_null(strstr(err, "its inputs are %x (f32[N,8])"));
    free(err);
    free(bad);
    free(ints);
    free(out);
}

static void test_run_prints_outputs(void **state)
{
    (void)state;
    char *x = npy("x2.npy", "(2, 8)", "float32"), in[4200], *text;
    snprintf(in, sizeof in, "x=%s", x);
    assert_int_equal(cuvil(&text, NULL, "run", "examples/cuir/mlp.cuir", "--input", in, NULL), 0);
    /* softmax of 4 classes for 2 rows: "%3 f32[2,4] = [0.1, ...]" */
    assert_non_null(strstr(text, " f32[2,4] = ["));
    assert_non_null(strstr(text, ", ...]"));
    free(text);
    free(x);
}

static void test_targets_listed(void **state)
{
    (void)state;
    char *err, *help;
    assert_int_equal(cuvil(NULL, &err, "compile", "examples/cuir/mlp.cuir", "-t", "avx512", NULL), 2);
    assert_non_null(strstr(err, "unknown target 'avx512'; the targets are x86_64, x86_64-avx2, "
                                "x86_64-avx512, aarch64-linux-gnu, riscv64-linux-gnu, cuda-sm80, "
                                "cuda-sm89, cuda-sm90, native"));
    free(err);
    assert_int_equal(cuvil(&help, NULL, "compile", "--help", NULL), 0);
    const char *want[] = {"cuda-sm80", "cuda-sm89", "cuda-sm90", "native", "--name", "--force",
                          "-q", "--stats", "--emit", "--weights-file", "--calibration-method",
                          "--min-sqnr", "--no-blocked-layout", "--remote-cache", "--explain",
                          "--no-cache", "-p, --precision PRECISION", "-o, --output DIR", "-g"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_non_null(strstr(help, want[i]));
    free(help);
}

static void write_file(const char *name, const char *text)
{
    assert_int_equal(cv_tmpdir_write(tmp, name, text, strlen(text)), 0);
}

static const char model_v1[] = "cuir 1\nmodel @tiny(%x: f32[N,4]) -> (f32[N,4]) {\n"
                               "  %y = relu(%x) : f32[N,4]\n  return %y\n}\n";
static const char model_v2[] = "cuir 1\nmodel @tiny(%x: f32[N,4]) -> (f32[N,4]) {\n"
                               "  %y = sigmoid(%x) : f32[N,4]\n  return %y\n}\n";

static void test_cache_explain_names_the_change(void **state)
{
    (void)state;
    char *m = cv_tmpdir_path(tmp, "tiny.cuir"), *m2 = cv_tmpdir_path(tmp, "tiny2.cuir");
    char *out = cv_tmpdir_path(tmp, "tiny-out"), *text;
    write_file("tiny.cuir", model_v1);
    assert_int_equal(cuvil(NULL, NULL, "compile", m, "-o", out, "-q", NULL), 0);
    write_file("tiny.cuir", model_v2);         /* the file's bytes change */
    assert_int_equal(cuvil(&text, NULL, "cache", "explain", m, NULL), 0);
    assert_null(strstr(text, "differs in 0 fields"));
    assert_non_null(strstr(text, "source digest (the model file's bytes) changed"));
    free(text);
    write_file("tiny2.cuir", model_v1);        /* the first model under another name */
    assert_int_equal(cuvil(&text, NULL, "cache", "explain", m2, NULL), 0);
    assert_null(strstr(text, "differs in 0 fields"));
    assert_non_null(strstr(text, "file name (renamed): tiny.cuir -> tiny2.cuir"));
    free(text);
    free(m);
    free(m2);
    free(out);
}

/* The text form uses the JSON form's field names; --zero resets. */
static void test_cache_stats_names_and_zero(void **state)
{
    (void)state;
    char *out = cv_tmpdir_path(tmp, "stats-out"), *text, *js;
    assert_int_equal(cuvil(NULL, NULL, "compile", "examples/cuir/residual.cuir", "-o", out, "-q",
                           NULL), 0);
    assert_int_equal(cuvil(&js, NULL, "cache", "stats", "--json", NULL), 0);
    assert_int_equal(cuvil(&text, NULL, "cache", "stats", NULL), 0);
    json_t *j = json_loads(js, 0, NULL);
    assert_non_null(j);
    assert_true(json_integer_value(json_object_get(json_object_get(j, "l2"), "misses")) > 0);
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (strcmp(key, "enabled") == 0)
            continue;
        char line[80];
        snprintf(line, sizeof line, "\n%s ", key);
        assert_true(strncmp(text, key, strlen(key)) == 0 || strstr(text, line));
        const char *sub;
        json_t *w;
        json_object_foreach(v, sub, w) {
            snprintf(line, sizeof line, " %s ", sub);
            assert_non_null(strstr(text, line));
        }
    }
    assert_non_null(strstr(text, "not the compile time they saved"));
    json_decref(j);
    free(js);
    free(text);
    assert_int_equal(cuvil(&text, NULL, "cache", "stats", "--zero", NULL), 0);
    assert_non_null(strstr(text, "statistics zeroed"));
    free(text);
    assert_int_equal(cuvil(&js, NULL, "cache", "stats", "--json", NULL), 0);
    j = json_loads(js, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "l2"), "misses")), 0);
    assert_true(json_integer_value(json_object_get(json_object_get(j, "store"), "entries")) > 0);
    json_decref(j);
    free(js);
    free(out);
}

static const char lfs_pointer[] =
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 46827520\n";

static void test_lfs_pointer_recognised(void **state)
{
    (void)state;
    write_file("resnet.onnx", lfs_pointer);
    write_file("net.cvl.py", lfs_pointer);
    char *onnx = cv_tmpdir_path(tmp, "resnet.onnx"), *dsl = cv_tmpdir_path(tmp, "net.cvl.py");
    char *out = cv_tmpdir_path(tmp, "lfs-out"), *err;
    assert_int_equal(cuvil(NULL, &err, "compile", onnx, "-o", out, NULL), 1);
    assert_non_null(strstr(err, "error[CV1020]"));
    assert_non_null(strstr(err, "git lfs pull"));
    assert_null(strstr(err, "CV1302"));         /* not a protobuf wire-type error */
    free(err);
    /* the pre-commit hook's command */
    assert_int_equal(cuvil(NULL, &err, "validate", "--strict", "-q", onnx, dsl, NULL), 1);
    assert_non_null(strstr(err, "resnet.onnx:1:1: error[CV1020]"));
    assert_non_null(strstr(err, "net.cvl.py:1:1: error[CV1020]"));
    free(err);
    assert_int_equal(cuvil(NULL, &err, "run", onnx, "--interp", NULL), 1);
    assert_non_null(strstr(err, "error[CV1020]"));
    free(err);
    free(onnx);
    free(dsl);
    free(out);
}

static void test_farm_up_outside_git_is_usage(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_path(tmp, "lfs-out"), *state_dir = cv_tmpdir_path(tmp, "farm-state");
    char *err;
    write_file("plain.txt", "not a repository\n");
    assert_int_equal(cuvil(NULL, &err, "farm", "up", tmp, "--once", "--state", state_dir, NULL), 2);
    assert_non_null(strstr(err, "is not a git repository"));
    free(err);
    free(dir);
    free(state_dir);
}

/* One kernel: "in 1 tensor", not "in 1 tensors". */
static void test_counts_in_the_singular(void **state)
{
    (void)state;
    write_file("one.cuir", model_v1);
    char *m = cv_tmpdir_path(tmp, "one.cuir"), *x = npy("x4.npy", "(2, 4)", "float32");
    char in[4200], *text;
    snprintf(in, sizeof in, "x=%s", x);
    assert_int_equal(cuvil(&text, NULL, "diff", m, "--input", in, NULL), 0);
    assert_non_null(strstr(text, "in 1 tensor\n"));
    free(text);
    free(m);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_says_what_it_wrote),
        cmocka_unit_test(test_input_errors_name_the_input),
        cmocka_unit_test(test_run_prints_outputs),
        cmocka_unit_test(test_targets_listed),
        cmocka_unit_test(test_cache_explain_names_the_change),
        cmocka_unit_test(test_cache_stats_names_and_zero),
        cmocka_unit_test(test_lfs_pointer_recognised),
        cmocka_unit_test(test_farm_up_outside_git_is_usage),
        cmocka_unit_test(test_counts_in_the_singular),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
