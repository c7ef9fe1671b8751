#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/opstest.h"

/* One suite per test binary: cmocka's group setup has no other way to hand
 * it to the tests. */
static cv_npref_suite *suite;   /* owned; freed by cv_opstest_teardown */

int cv_opstest_setup(const cv_npref_opcase *cases, int n, const char *prelude)
{
    char msg[1024];
    suite = cv_npref_suite_run(cases, n, prelude, msg, sizeof msg);
    if (!suite)
        fprintf(stderr, "numpy reference run failed: %s\n", msg);
    return suite ? 0 : -1;
}

void cv_opstest_teardown(void)
{
    cv_npref_suite_free(suite);
    suite = NULL;
}

void cv_opstest_check(const char *tag, int at_least)
{
    char msg[4096];
    int n = cv_npref_suite_check(suite, tag, msg, sizeof msg);
    if (n < 0)
        fail_msg("%s", msg);
    if (n == 0 && at_least > 0)
        fail_msg("no numpy case is tagged %s", tag);
    assert_true(n >= at_least);
}

void cv_opstest_expect_infer(size_t i, const char *op, const char *attrs,
                             const char *const *in, int max_in, int n_results,
                             const char *want)
{
    int n = 0;
    while (n < max_in && in[n])
        n++;
    cv_module *m = cv_module_new("test");
    cv_diag d;
    cv_diag_init(&d);
    int rc = -1;
    cv_op *o = cv_npref_build_op(m, op, attrs, in, n, n_results, &d, &rc);
    assert_non_null(o);
    char got[160] = "";
    int code = rc ? cv_npref_first_code(&d) : 0;
    if (rc && !code)
        code = -1;   /* failed without an error: a bug worth failing on */
    if (!rc)
        cv_type_format(&o->results[0]->type, got, sizeof got);
    int want_code = strncmp(want, "CV", 2) == 0 ? atoi(want + 2) : 0;
    if (code != want_code || (!want_code && strcmp(got, want) != 0))
        fail_msg("infer case %zu (%s %s): got %s (code %d), want %s", i, op, attrs ? attrs : "",
                 got, code, want);
    cv_module_free(m);
    cv_diag_free(&d);
}
