/* The one list of diagnostic codes (common/diag_codes.h): every row has a
 * unique number and slug, its name is CV_E_ and the slug in capitals, the
 * registry and the enum agree; and the tree passes names, never bare numbers
 * (scripts/check-diag-codes.sh passes here and fails on a planted number). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

typedef struct row {
    const char *name;
    int num;
    const char *slug;
} row;

#define ROW(name, num, slug, summary) {#name, num, slug},
static const row rows[] = {CV_DIAG_CODES(ROW)};
#undef ROW

static void test_numbers_and_slugs_are_unique(void **state)
{
    size_t n;
    const cv_diag_code_info *codes = cv_diag_codes(&n);
    assert_int_equal(n, sizeof rows / sizeof rows[0]);
    assert_true(n > 300);
    for (size_t i = 0; i < n; i++) {
        /* sorted (the look-up is a binary search), so each number once */
        if (i > 0 && codes[i].code <= codes[i - 1].code)
            fail_msg("CV%04d follows CV%04d: the list is not in number order, or repeats one",
                     codes[i].code, codes[i - 1].code);
        assert_true(codes[i].code >= 1000 && codes[i].code <= 9999);
        assert_non_null(codes[i].summary);
        assert_true(codes[i].summary[0] != '\0');
        for (size_t j = 0; j < i; j++)
            if (strcmp(codes[i].name, codes[j].name) == 0)
                fail_msg("slug %s is both CV%04d and CV%04d", codes[i].name, codes[j].code,
                         codes[i].code);
        /* the name is the slug: CV_E_ and the slug in capitals */
        char want[128];
        int len = snprintf(want, sizeof want, "CV_E_%s", codes[i].name);
        assert_true(len > 5 && len < (int)sizeof want);
        for (char *p = want + 5; *p; p++) {
            assert_true(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-');
            *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        }
        assert_string_equal(rows[i].name, want);
        assert_int_equal(rows[i].num, codes[i].code);
        assert_ptr_equal(cv_diag_code_lookup(codes[i].code), &codes[i]);
    }
    /* the enum is the list's numbers */
    assert_int_equal(CV_E_INTERNAL_ERROR, 9001);
    assert_int_equal(CV_E_SPEC_OUT_OF_RANGE, 6023);
    assert_null(cv_diag_code_lookup(1000));
}

/* Runs the check on root: its exit status, its report in *out. */
static int check(const char *root, char **out)
{
    char *script = cv_tmpdir_path(cv_tmpdir_src_root(), "scripts/check-diag-codes.sh");
    const char *argv[] = {script, root, NULL};
    int rc = cv_run_argv(argv, NULL, out);
    assert_non_null(*out);
    free(script);
    return rc;
}

static void test_tree_passes_names(void **state)
{
    char *out;
    if (check(cv_tmpdir_src_root(), &out) != 0)
        fail_msg("check-diag-codes.sh failed on the tree:\n%s", out);
    free(out);
}

/* A tree with the real list: bare numbers at code arguments (a multi-line
 * call, a static helper, a ternary, a comparison) and the
 * `return cv_diag_error(...), -1;` idiom are named with their line; names,
 * numbers in messages and other arguments, and tests are not. */
static void test_planted_number_fails(void **state)
{
    char *root = cv_tmpdir_make("diagcodes");
    assert_non_null(root);
    char *common = cv_tmpdir_path(root, "common"), *cache = cv_tmpdir_path(root, "cache"),
         *tests = cv_tmpdir_path(root, "tests");
    assert_int_equal(mkdir(common, 0755) | mkdir(cache, 0755) | mkdir(tests, 0755), 0);
    char *list_src = cv_tmpdir_path(cv_tmpdir_src_root(), "common/diag_codes.h");
    size_t len;
    char *list = cv_tmpdir_read_file(list_src, &len);
    assert_non_null(list);
    assert_int_equal(cv_tmpdir_write(common, "diag_codes.h", list, len), 0);
    const char diag_h[] = "int cv_diag_error(cv_diag *d, int code, cv_span span, const char *fmt, ...);\n";
    const char bad_c[] =
        "static int fail_at(int line, int code, const char *what);\n"
        "int f(cv_diag *d, int x)\n"
        "{\n"
        "    cv_diag_error(d, CV_E_IO_ERROR, (cv_span){0}, \"%d\", 3008);\n"
        "    cv_diag_error(d,\n"
        "                  3008, (cv_span){0}, \"no\");\n"
        "    fail_at(2016, x ? 2001 : CV_E_IO_ERROR, \"x\");\n"
        "    if (d->v[0].code == 9206)\n"
        "        return 1;\n"
        "    return cv_diag_error(d, f(d, 1234), (cv_span){0}, \"/* 4005 */\");\n"
        "}\n"
        "int g(cv_diag *d)\n"
        "{\n"
        "    if (d)\n"
        "        return cv_diag_error(d, CV_E_IO_ERROR, (cv_span){0}, \"x\"), -1;\n"
        "    return cv_diag_fail(d, CV_E_IO_ERROR, (cv_span){0}, \"x\");\n"
        "}\n";
    const char test_c[] = "void t(cv_diag *d) { cv_diag_error(d, 3008, (cv_span){0}, \"x\"); }\n";
    assert_int_equal(cv_tmpdir_write(common, "diag.h", diag_h, sizeof diag_h - 1), 0);
    assert_int_equal(cv_tmpdir_write(cache, "bad.c", bad_c, sizeof bad_c - 1), 0);
    assert_int_equal(cv_tmpdir_write(tests, "t.c", test_c, sizeof test_c - 1), 0);

    char *out;
    assert_int_equal(check(root, &out), 1);
    assert_non_null(strstr(out, "cache/bad.c:6: diagnostic code 3008"));
    assert_non_null(strstr(out, "cache/bad.c:7: diagnostic code 2001"));
    assert_non_null(strstr(out, "cache/bad.c:8: diagnostic code 9206"));
    assert_null(strstr(out, "cache/bad.c:4:"));   /* a format argument */
    assert_null(strstr(out, "2016"));             /* not the code argument */
    assert_null(strstr(out, "cache/bad.c:10:"));  /* not a code; inside a string */
    assert_null(strstr(out, "tests/"));
    assert_non_null(strstr(out, "cache/bad.c:15: return cv_diag_error(...), -1"));
    assert_null(strstr(out, "cache/bad.c:16:"));
    free(out);

    /* without the list it is an error of its own, not a pass */
    char *list_dst = cv_tmpdir_path(common, "diag_codes.h");
    assert_int_equal(unlink(list_dst), 0);
    assert_int_equal(check(root, &out), 2);
    free(out);
    free(list_dst);
    free(list);
    free(list_src);
    free(common), free(cache), free(tests);
    cv_tmpdir_remove(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_and_slugs_are_unique),
        cmocka_unit_test(test_tree_passes_names),
        cmocka_unit_test(test_planted_number_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
