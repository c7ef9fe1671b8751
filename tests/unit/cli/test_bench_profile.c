/* cuvil bench --profile (issue 30) on a real model, a small CNN exported
 * from PyTorch by the test and compiled with -g (locations in the symbol
 * map): every kernel of the artifact's symbol map is listed once, slowest
 * first, with its ops and ONNX node names; the times are positive, the
 * shares sum to 1, and the kernels' time is most of the run's wall time, at
 * 1 and 2 threads.  Without --profile no profile is printed. */
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

static char *tmp, *onnx, *art;

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

static const char *const EXPORT =
    "import sys, torch\n"
    "torch.manual_seed(0)\n"
    "m = torch.nn.Sequential(\n"
    "    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),\n"
    "    torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),\n"
    "    torch.nn.MaxPool2d(2), torch.nn.Conv2d(64, 64, 1), torch.nn.Sigmoid(),\n"
    "    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).eval()\n"
    "torch.onnx.export(m, torch.randn(1, 3, 64, 64), sys.argv[1], opset_version=13)\n";

static int setup(void **state)
{
    (void)state;
    setenv("LSAN_OPTIONS", "use_tls=0", 0);     /* as in test_artifact_names.c */
    tmp = cv_tmpdir_make("benchprof");
    if (!tmp || !cv_pyrun_has_module("torch"))
        return tmp ? 0 : -1;
    onnx = cv_tmpdir_path(tmp, "cnn.onnx");
    art = cv_tmpdir_path(tmp, "cnn");
    const char *args[] = {onnx, NULL};
    const char *cc[] = {cuvil_bin(), "compile", onnx, "-g", "-o", art, "-q", "--no-cache", NULL};
    if (cv_pyrun(EXPORT, args, NULL) || cv_run_argv(cc, NULL, NULL)) {
        free(onnx);
        onnx = NULL;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(onnx);
    free(art);
    cv_tmpdir_remove(tmp);
    return 0;
}

/* The artifact's kernel names, from cuvil symbols --json. */
static json_t *artifact_kernels(void)
{
    const char *argv[] = {cuvil_bin(), "symbols", art, "--json", NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(argv, NULL, &out), 0);
    json_t *j = json_loads(out, 0, NULL), *names = json_array();
    free(out);
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(j, "kernels"), i, k)
        json_array_append(names, json_object_get(k, "name"));
    json_decref(j);
    return names;
}

static bool listed(const json_t *kernels, const char *name)
{
    size_t i;
    json_t *k;
    json_array_foreach(kernels, i, k)
        if (strcmp(json_string_value(json_object_get(k, "kernel")), name) == 0)
            return true;
    return false;
}

/* Every kernel once, positive times slowest first, shares summing to 1,
 * kernel time close to the run's; *nodes: every kernel names ONNX nodes. */
static void check_profile(const json_t *p, const json_t *names, bool *nodes)
{
    json_t *ks = json_object_get(p, "kernels");
    assert_int_equal(json_array_size(ks), json_array_size(names));
    size_t i;
    json_t *k;
    json_array_foreach(names, i, k)
        assert_true(listed(ks, json_string_value(k)));
    double sum = 0, share = 0, prev = 1e30;
    *nodes = true;
    json_array_foreach(ks, i, k) {
        double ms = json_real_value(json_object_get(k, "ms"));
        assert_true(ms > 0 && ms <= prev);
        prev = ms;
        sum += ms;
        share += json_real_value(json_object_get(k, "share"));
        assert_true(strlen(json_string_value(json_object_get(k, "ops"))) > 0);
        json_t *at = json_object_get(k, "at");
        assert_true(json_array_size(at) > 0);
        *nodes = *nodes && strncmp(json_string_value(json_array_get(at, 0)), "node ", 5) == 0;
    }
    double kernel_ms = json_real_value(json_object_get(p, "kernel_ms"));
    double run_ms = json_real_value(json_object_get(p, "run_ms"));
    assert_true(share > 0.999 && share < 1.001);
    assert_true(sum > 0.999 * kernel_ms && sum < 1.001 * kernel_ms);
    /* The kernels are nearly all of a run; the rest is the call and the
     * input and output handling around them. */
    assert_true(kernel_ms <= run_ms * 1.001);
    assert_true(kernel_ms >= run_ms * 0.5);
}

static void test_profile_of_model_and_artifact(void **state)
{
    (void)state;
    if (!onnx) {
        fprintf(stderr, "skipped: no PyTorch to export the model\n");
        return;
    }
    json_t *names = artifact_kernels();
    assert_true(json_array_size(names) >= 4);
    bool nodes;
    json_t *j;
    const char *argv[] = {cuvil_bin(), "bench", art, "--profile", "--iters", "20", "--json", NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(argv, NULL, &out), 0);
    j = json_loads(out, 0, NULL);
    free(out);
    check_profile(json_object_get(j, "profile"), names, &nodes);
    assert_true(nodes);                             /* -g: ONNX node names */
    json_decref(j);

    const char *argv2[] = {cuvil_bin(), "bench", art, "--profile", "--iters", "20", "--threads",
                           "2", "--json", NULL};
    assert_int_equal(cv_run_argv(argv2, NULL, &out), 0);
    j = json_loads(out, 0, NULL);
    free(out);
    check_profile(json_object_get(j, "profile"), names, &nodes);
    json_decref(j);

    const char *argv3[] = {cuvil_bin(), "bench", art, "--iters", "3", "--json", NULL};
    assert_int_equal(cv_run_argv(argv3, NULL, &out), 0);
    j = json_loads(out, 0, NULL);
    free(out);
    assert_null(json_object_get(j, "profile"));
    json_decref(j);
    json_decref(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_of_model_and_artifact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
