/* The short farm chaos test (issue 16; `make chaos` runs the long one): a
 * cold build of 2 models x 2 targets by a controller and two workers, a
 * worker killed with SIGKILL every ~1.5 s and replaced, then the controller
 * killed twice and restarted.  tests/chaos/farm_chaos.py checks every job
 * ok with exactly one result, artifacts identical to an undisturbed build
 * and both databases' integrity.  Needs $CUVIL_BIN (make unit-test). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static void test_kill_workers_and_controller(void **state)
{
    (void)state;
    const char *cuvil = getenv("CUVIL_BIN");
    if (!cuvil) {
        skip();
        return;
    }
    char *root = cv_tmpdir_make("chaos-farm");
    char script[4096];
    snprintf(script, sizeof script, "%s/tests/chaos/farm_chaos.py", cv_tmpdir_src_root());
    const char *argv[] = {CV_PYTHON, script, cuvil, root, "--models", "2", "--kill-every",
                          "1.5", "--lease", "1", "--seed", "16", "workers", "controller", NULL};
    char *out = NULL;
    int rc = cv_run_argv(argv, NULL, &out);
    fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "chaos workers (sqlite):"));
    assert_non_null(strstr(out, "chaos controller (sqlite):"));
    assert_null(strstr(out, "(sqlite): 0 kills"));   /* something was killed */
    free(out);
    cv_tmpdir_remove(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_workers_and_controller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
