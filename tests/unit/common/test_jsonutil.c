#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "tests/support/tmpdir.h"

static void test_parse_error_position(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    json_t *v = NULL;
    const char *text = "{\n  \"a\": 1,\n  \"b\": [1, 2,, 3]\n}\n";
    assert_int_equal(cv_json_parse(text, strlen(text), "x.json", &v, &d), -1);
    assert_null(v);
    assert_int_equal(d.v[0].code, 1141);
    assert_string_equal(d.v[0].span.file, "x.json");
    assert_int_equal(d.v[0].span.line, 3);
    assert_int_equal(d.v[0].span.col, 14);   /* the second comma */
    cv_diag_clear(&d);
    text = "{\"a\": 1, \"a\": 2}";
    assert_int_equal(cv_json_parse(text, strlen(text), "dup.json", &v, &d), -1);
    assert_int_equal(d.v[0].code, 1141);
    cv_diag_clear(&d);
    assert_int_equal(cv_json_parse("42", 2, "n.json", &v, &d), 0);
    assert_int_equal(json_integer_value(v), 42);
    json_decref(v);
    cv_diag_free(&d);
}

static void test_canonical_is_sorted_and_stable(void **state)
{
    json_t *a = json_pack("{s:i, s:{s:f, s:b}, s:[s, n]}", "z", 1, "m", "y", 0.1, "b", 1, "a", "s");
    json_t *b = json_pack("{s:[s, n], s:{s:b, s:f}, s:i}", "a", "s", "m", "b", 1, "y", 0.1, "z", 1);
    char *ca = cv_json_canonical(a), *cb = cv_json_canonical(b);
    assert_string_equal(ca, "{\"a\":[\"s\",null],\"m\":{\"b\":true,\"y\":0.10000000000000001},\"z\":1}");
    assert_string_equal(ca, cb);
    free(ca);
    free(cb);
    json_decref(a);
    json_decref(b);
}

static void test_write_then_read_file(void **state)
{
    char *dir = cv_tmpdir_make("json"), *path = cv_tmpdir_path(dir, "o.json");
    cv_diag d;
    cv_diag_init(&d);
    json_t *v = json_pack("{s:i, s:s}", "b", 2, "a", "x"), *back;
    assert_int_equal(cv_json_write_file(path, v, true, &d), 0);
    char *text;
    size_t len;
    assert_int_equal(cv_fs_read_file(path, 1000, &text, &len, &d), 0);
    assert_string_equal(text, "{\n  \"a\": \"x\",\n  \"b\": 2\n}\n");
    free(text);
    assert_int_equal(cv_json_read_file(path, 1000, &back, &d), 0);
    assert_true(json_equal(v, back));
    json_decref(back);
    assert_int_equal(cv_json_read_file(path, 4, &back, &d), -1);
    assert_int_equal(d.v[0].code, 1011);
    json_decref(v);
    cv_diag_free(&d);
    free(path);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_error_position),
        cmocka_unit_test(test_canonical_is_sorted_and_stable),
        cmocka_unit_test(test_write_then_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
