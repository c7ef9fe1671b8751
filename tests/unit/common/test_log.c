#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* Runs before anything logs: the level is read from CUVIL_LOG once. */
static int group_setup(void **state)
{
    return setenv("CUVIL_LOG", "DeBuG", 1);
}

static void test_level_from_env_read_once(void **state)
{
    assert_int_equal(cv_log_level_get(), CV_LOG_DEBUG);
    setenv("CUVIL_LOG", "error", 1);
    assert_int_equal(cv_log_level_get(), CV_LOG_DEBUG);
    assert_true(cv_log_enabled(CV_LOG_DEBUG));
    assert_false(cv_log_enabled(CV_LOG_TRACE));
    assert_false(cv_log_enabled(CV_LOG_OFF));
}

static void test_parse_levels(void **state)
{
    static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(cv_log_level_parse(names[i]), i);
        assert_string_equal(cv_log_level_name((cv_log_level)i), names[i]);
    }
    assert_int_equal(cv_log_level_parse("WARNING"), CV_LOG_WARN);
    assert_int_equal(cv_log_level_parse("loud"), -1);
    assert_int_equal(cv_log_level_parse(""), -1);
}

/* Captures what one call to fn writes through the log fd. */
static char *capture(void (*fn)(void))
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    cv_log_set_fd(p[1]);
    fn();
    cv_log_set_fd(2);
    close(p[1]);
    char *buf = calloc(1, 8192);
    size_t n = 0;
    for (ssize_t r; (r = read(p[0], buf + n, 8191 - n)) > 0;)
        n += (size_t)r;
    close(p[0]);
    return buf;
}

static void log_some(void)
{
    cv_log_trace("hidden %d", 1);
    cv_log_debug("shown %d", 2);
    cv_log_error("bad %s", "thing");
}

static void log_long(void)
{
    char big[6000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    cv_log_warn("%s", big);
}

static void test_line_format(void **state)
{
    char *out = capture(log_some);
    regex_t re;
    assert_int_equal(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z debug tests\\[[0-9]+\\]: "
                             "shown 2\n[0-9T:.Z-]+ error tests\\[[0-9]+\\]: bad thing\n$",
                             REG_EXTENDED), 0);
    print_message("%s", out);
    assert_int_equal(regexec(&re, out, 0, NULL, 0), 0);
    regfree(&re);
    free(out);
    out = capture(log_long);   /* cut, still one line */
    size_t n = strlen(out);
    assert_true(n < 4096);
    assert_string_equal(out + n - 4, "...\n");
    assert_ptr_equal(strchr(out, '\n'), out + n - 1);
    free(out);
}

static void test_set_level_overrides(void **state)
{
    cv_log_level_set(CV_LOG_OFF);
    char *out = capture(log_some);
    assert_string_equal(out, "");
    free(out);
    cv_log_level_set(CV_LOG_TRACE);
    assert_true(cv_log_enabled(CV_LOG_TRACE));
    out = capture(log_some);
    assert_non_null(strstr(out, "hidden 1"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_from_env_read_once),
        cmocka_unit_test(test_parse_levels),
        cmocka_unit_test(test_line_format),
        cmocka_unit_test(test_set_level_overrides),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
