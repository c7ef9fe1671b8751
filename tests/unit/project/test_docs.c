/* What the README and docs promise a new user (issue 27): the quick tour
 * runs as written (tests/tour.sh), docs/ops.md is what `cuvil help ops`
 * makes from the op tables, the model-language examples validate and
 * compile where they stand, the C example of docs/artifact-c.md builds and
 * runs, and `make conformance` makes the models it needs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
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

static int runv(const char *const *argv, char **out)
{
    char *o = NULL;
    int rc = cv_run_argv(argv, errfile, &o);
    if (rc != 0) {
        size_t len;
        char *e = cv_tmpdir_read_file(errfile, &len);
        fprintf(stderr, "%s: exit %d\n%s\n%s\n", argv[0], rc, o ? o : "", e ? e : "");
        free(e);
    }
    if (out)
        *out = o;
    else
        free(o);
    return rc;
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("docs");
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

static void test_quick_tour_runs_as_written(void **state)
{
    (void)state;
    const char *argv[] = {"/bin/bash", "tests/tour.sh", NULL};
    char *out;
    assert_int_equal(runv(argv, &out), 0);
    assert_non_null(strstr(out, "tour: "));
    assert_non_null(strstr(out, "lines ran"));
    free(out);
}

static void test_ops_doc_is_generated(void **state)
{
    (void)state;
    const char *argv[] = {cuvil_bin(), "help", "ops", NULL};
    char *out;
    assert_int_equal(runv(argv, &out), 0);
    assert_non_null(strstr(out, "| Conv | "));
    assert_non_null(strstr(out, "| cvl.conv2d | "));
    assert_non_null(strstr(out, "`range`"));
    size_t len;
    char *doc = cv_tmpdir_read_file("docs/ops.md", &len);
    assert_non_null(doc);   /* make docs writes it */
    assert_string_equal(doc, out);  /* else: run `make docs` */
    free(doc);
    free(out);
}

static void test_examples_validate_and_compile_in_place(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob("examples/models/*.cvl.py", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 4);
    const char *argv[16] = {cuvil_bin(), "validate"};
    int n = 2;
    for (size_t i = 0; i < g.gl_pathc && n < 15; i++)
        argv[n++] = g.gl_pathv[i];
    argv[n] = NULL;
    assert_int_equal(runv(argv, NULL), 0);
    char *out = cv_tmpdir_path(tmp, "lenet");
    const char *cc[] = {cuvil_bin(), "compile", "examples/models/lenet.cvl.py", "-o", out, "-q",
                        NULL};
    assert_int_equal(runv(cc, NULL), 0);
    free(out);
    globfree(&g);
}

static void test_c_example_builds_and_runs(void **state)
{
    (void)state;
    char *out = cv_tmpdir_path(tmp, "mlp"), *exe = cv_tmpdir_path(tmp, "mlp_main");
    char *lib = cv_tmpdir_path(out, "libmlp.a");
    const char *comp[] = {cuvil_bin(), "compile", "examples/cuir/mlp.cuir", "-t", "native", "-o",
                          out, "-q", NULL};
    assert_int_equal(runv(comp, NULL), 0);
    const char *cc[] = {"/usr/bin/cc", "-std=c11", "-Wall", "-Werror", "-O2", "-I", out,
                        "examples/c/mlp_main.c", lib, "-lm", "-lpthread", "-o", exe, NULL};
    assert_int_equal(runv(cc, NULL), 0);
    const char *run[] = {exe, NULL};
    char *text;
    assert_int_equal(runv(run, &text), 0);
    assert_non_null(strstr(text, "row 2: "));
    /* a softmax row sums to 1 */
    double a, b, c, d;
    assert_int_equal(sscanf(strstr(text, "row 2: ") + 7, "%lf %lf %lf %lf", &a, &b, &c, &d), 4);
    assert_true(a + b + c + d > 0.999 && a + b + c + d < 1.001);
    free(text);
    free(lib);
    free(exe);
    free(out);
}

/* make -n: the conformance target's recipe makes the torchvision exports
 * its quant step reads, in a build directory that has none. */
static void test_conformance_makes_its_models(void **state)
{
    (void)state;
    char *build = cv_tmpdir_path(tmp, "fresh-build"), var[4200];
    snprintf(var, sizeof var, "BUILD=%s", build);
    const char *argv[] = {"/usr/bin/make", "-n", "--no-print-directory", "conformance", var, NULL};
    char *out;
    assert_int_equal(runv(argv, &out), 0);
    const char *exp = strstr(out, "export_torchvision.py");
    const char *quant = strstr(out, "quant_models.sh");
    assert_non_null(exp);
    assert_non_null(quant);
    assert_true(exp < quant);
    free(out);
    free(build);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_doc_is_generated),
        cmocka_unit_test(test_examples_validate_and_compile_in_place),
        cmocka_unit_test(test_c_example_builds_and_runs),
        cmocka_unit_test(test_conformance_makes_its_models),
        cmocka_unit_test(test_quick_tour_runs_as_written),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
