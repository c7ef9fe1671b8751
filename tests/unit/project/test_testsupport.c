/* The test helpers themselves: python runner and temp dirs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static void test_pyrun_status_args_stdout(void **state)
{
    const char *args[] = {"a b", "$(echo no shell)", NULL};
    char *out;
    assert_int_equal(cv_pyrun("import sys; print(sys.argv[1:]); sys.exit(3)", args, &out), 3);
    assert_string_equal(out, "['a b', '$(echo no shell)']\n");
    free(out);
    assert_int_equal(cv_pyrun("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", NULL, NULL),
                     128 + 15);
    assert_int_equal(cv_pyrun("pass", NULL, &out), 0);
    assert_string_equal(out, "");
    free(out);
}

/* More than a pipe buffer each way: needs the poll loop, not sequential I/O. */
static void test_pyrun_stdin_round_trip(void **state)
{
    size_t n = 1 << 20;
    char *in = malloc(n), *out;
    for (size_t i = 0; i < n; i++)
        in[i] = (char)('a' + i % 26);
    size_t len;
    assert_int_equal(cv_pyrun_io("import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())",
                                 NULL, in, n, &out, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(in, out, n);
    free(out);
    /* Python exiting without reading its stdin must not kill or hang us. */
    assert_int_equal(cv_pyrun_io("print('early')", NULL, in, n, &out, &len), 0);
    assert_string_equal(out, "early\n");
    free(out);
    free(in);
}

static void test_has_module(void **state)
{
    assert_true(cv_pyrun_has_module("json"));
    assert_false(cv_pyrun_has_module("no_such_module_cuvil"));
}

static void test_tmpdir_removes_links_not_targets(void **state)
{
    char *keep = cv_tmpdir_make("keep"), *dir = cv_tmpdir_make("rm");
    assert_non_null(keep);
    assert_int_equal(dir[0], '/');
    assert_int_equal(cv_tmpdir_write(keep, "precious", "p", 1), 0);
    char *target = cv_tmpdir_path(keep, "precious"), *sub = cv_tmpdir_path(dir, "sub");
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(cv_tmpdir_write(sub, "f", "x", 1), 0);
    char *l1 = cv_tmpdir_path(sub, "to_file"), *l2 = cv_tmpdir_path(dir, "to_dir");
    assert_int_equal(symlink(target, l1), 0);
    assert_int_equal(symlink(keep, l2), 0);
    char *copy = strdup(dir);
    assert_int_equal(cv_tmpdir_remove(dir), 0);
    assert_int_equal(access(copy, F_OK), -1);
    assert_int_equal(access(target, F_OK), 0);
    free(copy);
    free(l1);
    free(l2);
    free(sub);
    free(target);
    assert_int_equal(cv_tmpdir_remove(keep), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyrun_status_args_stdout),
        cmocka_unit_test(test_pyrun_stdin_round_trip),
        cmocka_unit_test(test_has_module),
        cmocka_unit_test(test_tmpdir_removes_links_not_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
