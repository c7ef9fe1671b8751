/* The Python package (python/): runs its unittest suite (python/tests)
 * with Debian's python3 against the extension `make python` built into
 * $CUVIL_BUILD/python.  Skipped when python3, numpy or the extension is
 * missing; torch-only checks skip themselves inside the suite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char *python(void)
{
    const char *p = getenv("PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

static void test_python_package(void **state)
{
    (void)state;
    const char *b = getenv("CUVIL_BUILD");
    char build[4096], ext[4200], cmd[16384];
    if (!realpath(b ? b : "build", build))
        skip();
    snprintf(ext, sizeof ext, "%s/python/cuvil/_cuvil.abi3.so", build);
    snprintf(cmd, sizeof cmd, "%s -c 'import numpy' 2>/dev/null", python());
    if (access(ext, R_OK) != 0 || access(python(), X_OK) != 0 || system(cmd) != 0) {
        fprintf(stderr, "skipped: %s, %s or its numpy missing (make python)\n", ext, python());
        skip();
    }
    /* The package runs native code that is not sanitized: keep ASan's
     * runtime (preloaded by nothing here) out of the child. */
    snprintf(cmd, sizeof cmd,
             "env -u LD_PRELOAD PYTHONPATH='%s/python' CUVIL_BUILD='%s' %s -B -m unittest "
             "discover -s python/tests -t python/tests 2>&1",
             build, build, python());
    int rc = system(cmd);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_package),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
