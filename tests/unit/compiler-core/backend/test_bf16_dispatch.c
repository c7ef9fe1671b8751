/* The -p bf16 GEMM's run-time choice of path (cvrt_gemm_bf16.c), through
 * the runtime itself: tests/device/amx_gemm_check (built for the AVX-512
 * variant by tests/device/build.mk) runs each path this CPU grants on
 * ragged shapes against a double-precision reference.  Checked here: it
 * passes (every path within 1e-5 of the reference's largest magnitude),
 * AMX is never chosen nor granted on a CPU whose /proc/cpuinfo has no
 * amx_bf16, and vdpbf16ps is chosen where AVX512_BF16 is the best there is.
 * Skipped on a CPU without AVX-512 (the program is built for it). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/support/netbuild.h"

static void test_dispatch(void **state)
{
    (void)state;
    if (!cv_nb_cpu_has(" avx512f"))
        skip();
    const char *build = getenv("CUVIL_BUILD");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/tools/amx_gemm_check --quick --threads 2 2>&1",
             build ? build : "build");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[65536];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    printf("%s", out);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    assert_non_null(strstr(out, "\nok\n"));
    bool amx = cv_nb_cpu_has(" amx_bf16"), dot = cv_nb_cpu_has(" avx512_bf16");
    const char *want = amx ? "amx" : dot ? "dot" : "widen";
    char line[64];
    snprintf(line, sizeof line, "automatic path for K=768: %s\n", want);
    if (!strstr(out, line))
        fail_msg("expected '%s'", line);
    if (!amx) {
        assert_null(strstr(out, "auto amx"));
        int rows = 0;
        for (const char *s = out; (s = strstr(s, "\nM ")); s++, rows++) {
            const char *g = strstr(s, "amx: not granted"), *end = strchr(s + 1, '\n');
            assert_true(g && end && g < end);
        }
        assert_int_equal(rows, 5);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
