/* CV_ASSERT (common/invariant.h): in the sanitizer build every test runs,
 * a broken invariant aborts with its place; in a release build it records
 * an internal error (CV9001) and returns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/invariant.h"

static int checked_abort(int x)
{
    CV_ASSERT(NULL, x > 0);
    return x;
}

static void test_aborts_in_the_test_build(void **state)
{
    /* make test builds with the sanitizers: invariants abort there */
    assert_int_equal(CV_ASSERT_ABORTS, 1);
    assert_int_equal(checked_abort(3), 3);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 2);   /* the report is expected */
        checked_abort(0);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
}

/* The rest of this file is compiled as a release build would be. */
#undef CV_ASSERT_ABORTS
#define CV_ASSERT_ABORTS 0

static int checked(cv_diag *d, int x)
{
    CV_ASSERT(d, x > 0);
    return x;
}

static const char *checked_ptr(cv_diag *d, const char *s)
{
    CV_ASSERT_RET(d, s && *s, "fallback");
    return s;
}

static void test_release_reports_and_returns(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(checked(&d, 2), 2);
    assert_int_equal(d.n, 0);
    assert_int_equal(checked(&d, 0), -1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].code, 9001);
    assert_int_equal(d.v[0].sev, CV_SEV_ERROR);
    assert_non_null(strstr(d.v[0].msg, "x > 0"));
    assert_non_null(strstr(d.v[0].span.file, "test_invariant.c"));
    assert_true(d.v[0].span.line > 0);
    assert_string_equal(checked_ptr(&d, ""), "fallback");
    assert_int_equal(d.n, 2);
    /* without a cv_diag it still returns */
    assert_int_equal(checked(NULL, -5), -1);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aborts_in_the_test_build),
        cmocka_unit_test(test_release_reports_and_returns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
