/* The cuvil binary end to end: exit codes, diagnostics with locations,
 * --json output parsed back, and interpreter runs through `cuvil run`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp;
static char *errfile;

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

/* Runs cuvil with up to 12 arguments; stdout in *out, stderr in *err. */
static int cuvil(char **out, char **err, ...)
{
    const char *argv[16] = {cuvil_bin()};
    va_list ap;
    va_start(ap, err);
    int n = 1;
    for (const char *a; n < 15 && (a = va_arg(ap, const char *));)
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
        cv_diag d;
        cv_diag_init(&d);
        if (cv_fs_read_file(errfile, 1 << 24, err, &len, &d))
            *err = strdup("");
        cv_diag_free(&d);
    }
    return rc;
}

static bool matches(const char *text, const char *pattern)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0);
    bool m = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

static char *broken_copy(const char *from, const char *find, const char *repl)
{
    char *text;
    size_t len;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_fs_read_file(from, 1 << 20, &text, &len, &d), 0);
    char *at = strstr(text, find);
    assert_non_null(at);
    char *path = cv_tmpdir_path(tmp, "broken.cuir");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(text, 1, (size_t)(at - text), f);
    fputs(repl, f);
    fputs(at + strlen(find), f);
    fclose(f);
    free(text);
    cv_diag_free(&d);
    return path;
}

static void test_version(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cuvil(&out, NULL, "--version", NULL), 0);
    assert_true(matches(out, "^cuvil [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [0-9a-f]+|unknown"));
    assert_non_null(strstr(out, "LLVM"));
    free(out);
}

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    assert_int_equal(cuvil(NULL, NULL, "no-such-command", NULL), 2);
    assert_int_equal(cuvil(NULL, NULL, "validate", NULL), 2);
    assert_int_equal(cuvil(NULL, NULL, "validate", "--bogus", "x.cuir", NULL), 2);
    assert_int_equal(cuvil(NULL, NULL, "run", "examples/cuir/mlp.cuir", "--input", "noequals", NULL), 2);
    assert_int_equal(cuvil(NULL, NULL, "help", "CV0000", NULL), 2);
}

static void test_help(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cuvil(&out, NULL, "help", NULL), 0);
    assert_non_null(strstr(out, "validate"));
    free(out);
    assert_int_equal(cuvil(&out, NULL, "validate", "--help", NULL), 0);
    assert_non_null(strstr(out, "--strict"));
    free(out);
    assert_int_equal(cuvil(&out, NULL, "help", "CV3101", NULL), 0);
    assert_non_null(strstr(out, "CV3101 channel-mismatch"));
    free(out);
}

static void test_validate_examples_ok(void **state)
{
    (void)state;
    assert_int_equal(cuvil(NULL, NULL, "validate", "examples/cuir/mlp.cuir",
                           "examples/cuir/tinycnn.cuir", "examples/cuir/residual.cuir", NULL), 0);
}

static void test_validate_broken_located(void **state)
{
    (void)state;
    char *path = broken_copy("examples/cuir/tinycnn.cuir", "f32[N,4,4,4]", "f32[N,4,5,4]");
    char *err;
    assert_int_equal(cuvil(NULL, &err, "validate", path, NULL), 1);
    /* file:line:col: error[CVnnnn]: ... then the source line and a caret */
    assert_true(matches(err, "broken\\.cuir:[0-9]+:[0-9]+: error\\[CV3003\\]: "));
    assert_true(matches(err, "^ +\\^"));
    assert_null(strstr(err, "\033["));  /* stderr is not a TTY: no colour */
    free(err);
    free(path);
}

static void test_validate_json(void **state)
{
    (void)state;
    char *path = broken_copy("examples/cuir/tinycnn.cuir", "max_pool2d(%1)", "max_pool3d(%1)");
    char *out;
    assert_int_equal(cuvil(&out, NULL, "validate", "--json", path, NULL), 1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    assert_false(json_is_true(json_object_get(j, "ok")));
    json_t *diags = json_object_get(json_array_get(json_object_get(j, "files"), 0), "diagnostics");
    assert_true(json_array_size(diags) >= 1);
    json_t *d0 = json_array_get(diags, 0);
    assert_string_equal(json_string_value(json_object_get(d0, "code")), "CV4001");
    assert_int_equal(json_integer_value(json_object_get(d0, "line")), 10);
    assert_true(json_integer_value(json_object_get(d0, "col")) > 0);
    json_decref(j);
    free(out);
    free(path);
}

static void test_run_interp_softmax_rows(void **state)
{
    (void)state;
    char *x = cv_tmpdir_path(tmp, "x.npy"), *outdir = cv_tmpdir_path(tmp, "out");
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.random.default_rng(1).normal(size=(5, 8)))\n",
                              args, NULL), 0);  /* float64: rounded to the f32 input */
    char in[512], *out;
    snprintf(in, sizeof in, "x=%s", x);
    assert_int_equal(cuvil(&out, NULL, "run", "examples/cuir/mlp.cuir", "--interp", "--input", in,
                           "--output", outdir, "--json", NULL), 0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    json_t *o0 = json_array_get(json_object_get(j, "outputs"), 0);
    assert_string_equal(json_string_value(json_object_get(o0, "dtype")), "f32");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(o0, "shape"), 0)), 5);
    /* The model ends in softmax: each row of the output is a distribution. */
    const char *check[] = {json_string_value(json_object_get(o0, "path")), NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "y = np.load(sys.argv[1])\n"
                              "assert y.shape == (5, 4) and y.dtype == np.float32, y.shape\n"
                              "assert np.allclose(y.sum(axis=1), 1, atol=1e-6)\n"
                              "assert (y > 0).all()\n", check, NULL), 0);
    json_decref(j);
    free(out);
    free(x);
    free(outdir);
}

static void test_run_input_errors_exit_1(void **state)
{
    (void)state;
    char *x = cv_tmpdir_path(tmp, "bad.npy");
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.zeros((5, 7), np.float32))\n", args, NULL), 0);
    char in[512], *err;
    snprintf(in, sizeof in, "x=%s", x);
    assert_int_equal(cuvil(NULL, &err, "run", "examples/cuir/mlp.cuir", "--interp", "--input", in, NULL), 1);
    assert_non_null(strstr(err, "error[CV3010]"));
    free(err);
    assert_int_equal(cuvil(NULL, &err, "run", "examples/cuir/mlp.cuir", "--interp", NULL), 1);
    assert_non_null(strstr(err, "error[CV2024]"));
    free(err);
    free(x);
}

static void test_unwritable_output_is_internal_error(void **state)
{
    (void)state;
    char *x = cv_tmpdir_path(tmp, "ok.npy");
    const char *args[] = {x, NULL};
    assert_int_equal(cv_pyrun("import numpy as np, sys\n"
                              "np.save(sys.argv[1], np.zeros((1, 8), np.float32))\n", args, NULL), 0);
    char in[512];
    snprintf(in, sizeof in, "x=%s", x);
    /* The model is fine; failing to write the result is our problem: exit 3. */
    assert_int_equal(cuvil(NULL, NULL, "run", "examples/cuir/mlp.cuir", "--interp", "--input", in,
                           "--output", "/proc/cuvil-cannot-write-here", NULL), 3);
    free(x);
}

static void test_validate_specs(void **state)
{
    (void)state;
    const char *good =
        "apiVersion: cuvil.dev/v1\n"
        "kind: CuvilPipeline\n"
        "metadata: {name: vision}\n"
        "spec:\n"
        "  models: [\"models/*.onnx\"]\n"
        "  targets: [x86_64-avx2, aarch64-linux-gnu]\n"
        "  precisions: [fp32]\n";
    char *dir = cv_tmpdir_path(tmp, "specs");
    assert_int_equal(cv_fs_mkdirs(dir, 0755), 0);
    assert_int_equal(cv_tmpdir_write(dir, "pipeline.yaml", good, strlen(good)), 0);
    char *path = cv_tmpdir_path(dir, "pipeline.yaml");
    assert_int_equal(cuvil(NULL, NULL, "validate", path, NULL), 0);
    char *bad = strdup(good), *at = strstr(bad, "aarch64-linux-gnu");
    memcpy(at, "arm64-linux-gnu!!", 17);
    assert_int_equal(cv_tmpdir_write(dir, "pipeline.yaml", bad, strlen(bad)), 0);
    char *err;
    assert_int_equal(cuvil(NULL, &err, "validate", path, NULL), 1);
    assert_true(matches(err, "pipeline\\.yaml:6:[0-9]+: error\\[CV6[0-9]{3}\\]"));
    free(err);
    free(bad);
    free(path);
    free(dir);
}

static char *slurp(const char *path, size_t *len)
{
    char *text;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_fs_read_file(path, 1 << 26, &text, len, &d), 0);
    cv_diag_free(&d);
    return text;
}

static void test_compile_cached(void **state)
{
    (void)state;
    char *cache = cv_tmpdir_path(tmp, "cache"), *a1 = cv_tmpdir_path(tmp, "art1");
    char *a2 = cv_tmpdir_path(tmp, "art2");
    setenv("CUVIL_CACHE_DIR", cache, 1);
    char *err;
    assert_int_equal(cuvil(NULL, &err, "compile", "examples/cuir/mlp.cuir", "-t", "x86_64-avx2",
                           "-o", a1, "-v", NULL), 0);
    assert_non_null(strstr(err, "l2 miss"));
    free(err);
    assert_int_equal(cuvil(NULL, &err, "compile", "examples/cuir/mlp.cuir", "-t", "x86_64-avx2",
                           "-o", a2, "-v", NULL), 0);
    assert_non_null(strstr(err, "l1 hit, l2 hit"));
    free(err);
    /* The hit materialises the very same library. */
    char *p1 = cv_tmpdir_path(a1, "libmlp.so"), *p2 = cv_tmpdir_path(a2, "libmlp.so");
    size_t n1, n2;
    char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
    assert_true(n1 > 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* Another target is an L2 miss that names the field. */
    assert_int_equal(cuvil(NULL, &err, "compile", "examples/cuir/mlp.cuir", "-t", "x86_64-avx512",
                           "-o", a2, "--explain", NULL), 0);
    assert_non_null(strstr(err, "x86_64-avx2 -> x86_64-avx512"));
    free(err);
    char *out;
    assert_int_equal(cuvil(&out, NULL, "cache", "explain", "examples/cuir/mlp.cuir", "-t",
                           "x86_64-avx512", "-O1", NULL), 0);
    assert_non_null(strstr(out, "l1 (front end): hit"));
    assert_non_null(strstr(out, "opt level: O2 -> O1"));
    free(out);
    unsetenv("CUVIL_CACHE_DIR");
    free(b1), free(b2), free(p1), free(p2), free(a1), free(a2), free(cache);
}

static void test_missing_file_is_input_error(void **state)
{
    (void)state;
    char *err;
    assert_int_equal(cuvil(NULL, &err, "validate", "does/not/exist.cuir", NULL), 1);
    assert_non_null(strstr(err, "does/not/exist.cuir"));
    assert_non_null(strstr(err, "error[CV"));
    free(err);
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("cli");
    errfile = cv_tmpdir_path(tmp, "stderr.txt");
    setenv("NO_COLOR", "1", 1);
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(errfile);
    return cv_tmpdir_remove(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_validate_examples_ok),
        cmocka_unit_test(test_validate_broken_located),
        cmocka_unit_test(test_validate_json),
        cmocka_unit_test(test_run_interp_softmax_rows),
        cmocka_unit_test(test_run_input_errors_exit_1),
        cmocka_unit_test(test_unwritable_output_is_internal_error),
        cmocka_unit_test(test_validate_specs),
        cmocka_unit_test(test_compile_cached),
        cmocka_unit_test(test_missing_file_is_input_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
