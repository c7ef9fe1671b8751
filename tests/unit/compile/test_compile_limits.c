/* cuvil compile's limits on the cost of one compile (issue 25): a model with
 * more ops than --max-ops (default CV_MAX_COMPILE_OPS) is CV5012, and
 * --timeout stops a compile with CV5013 and exit status 1, not a signal.
 * Through the real binary. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp, *model;

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

/* cuvil compile MODEL --no-cache --emit c -o OUT, then up to two more
 * arguments; stderr in *err (caller frees). */
static int compile(char **err, const char *a1, const char *a2)
{
    char *out = cv_tmpdir_path(tmp, "out"), *errpath = cv_tmpdir_path(tmp, "stderr");
    const char *argv[] = {cuvil_bin(), "compile", model, "--no-cache", "--emit", "c", "-o", out,
                          a1, a2, NULL};
    int rc = cv_run_argv(argv, errpath, NULL);
    size_t len;
    *err = cv_tmpdir_read_file(errpath, &len);
    if (!*err)
        *err = strdup("");
    free(out);
    free(errpath);
    return rc;
}

static void test_max_ops(void **state)
{
    (void)state;
    char *err;
    int rc = compile(&err, "--max-ops", "100");
    if (rc != 1 || !strstr(err, "CV5012") || !strstr(err, "300 ops"))
        fail_msg("--max-ops 100 on 300 ops: exit %d\n%s", rc, err);
    free(err);
    rc = compile(&err, "--max-ops", "300");
    if (rc != 0)
        fail_msg("--max-ops 300 on 300 ops: exit %d\n%s", rc, err);
    free(err);
    assert_int_equal(compile(&err, "--max-ops", "0"), 2);
    free(err);
    assert_int_equal(compile(&err, "--max-ops", "12x"), 2);
    free(err);
}

static void test_timeout(void **state)
{
    (void)state;
    char *err;
    int rc = compile(&err, "--timeout", "1ms");
    if (rc != 1 || !strstr(err, "error[CV5013]"))
        fail_msg("--timeout 1ms: exit %d (want 1 and CV5013)\n%s", rc, err);
    free(err);
    rc = compile(&err, "--timeout", "10m");
    if (rc != 0)
        fail_msg("--timeout 10m: exit %d\n%s", rc, err);
    free(err);
    assert_int_equal(compile(&err, "--timeout", "soon"), 2);
    free(err);
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("limits");
    if (!tmp)
        return -1;
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "cuir 1\nmodel @chain(%x: f32[4]) -> (f32[4]) {\n");
    const char *prev = "%x";
    char name[16];
    for (int i = 0; i < 300; i++) {
        cv_sb_printf(&sb, "  %%%d = %s(%s%s) : f32[4]\n", i, i % 2 ? "add" : "relu", prev,
                     i % 2 ? ", %x" : "");
        snprintf(name, sizeof name, "%%%d", i);
        prev = name;
    }
    cv_sb_printf(&sb, "  return %s\n}\n", prev);
    model = cv_tmpdir_path(tmp, "chain.cuir");
    int rc = cv_tmpdir_write(tmp, "chain.cuir", sb.buf, sb.len);
    cv_sb_free(&sb);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    free(model);
    return cv_tmpdir_remove(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_ops),
        cmocka_unit_test(test_timeout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
