#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/yamldoc.h"
#include "tests/support/tmpdir.h"

static const char SPEC[] =
    "apiVersion: cuvil.dev/v1\n"                     /* 1 */
    "kind: CuvilPipeline\n"                          /* 2 */
    "metadata: {name: vision}\n"                     /* 3 */
    "spec:\n"                                        /* 4 */
    "  models: [\"a.onnx\", 'b.cvl.py']\n"           /* 5 */
    "  targets:\n"                                   /* 6 */
    "    - x86_64-avx2\n"                            /* 7 */
    "    - cuda-sm90\n"                              /* 8 */
    "  optLevel: O2\n"                               /* 9 */
    "  replicas: 4\n"                                /* 10 */
    "  ratio: 0.5\n"                                 /* 11 */
    "  readOnly: false\n"                            /* 12 */
    "  nothing: ~\n"                                 /* 13 */
    "  quoted: \"123\"\n"                            /* 14 */
    "  block: |\n"                                   /* 15 */
    "    12\n";                                      /* 16 */

typedef struct loaded {
    cv_yaml_doc *docs;
    int n;
    cv_diag d;
} loaded;

static int load(loaded *l, const char *text)
{
    cv_diag_init(&l->d);
    return cv_yaml_load(text, strlen(text), "spec.yaml", &l->docs, &l->n, &l->d);
}

static void unload(loaded *l)
{
    cv_yaml_free(l->docs, l->n);
    cv_diag_free(&l->d);
}

static void assert_span(cv_span s, int line, int col)
{
    assert_string_equal(s.file, "spec.yaml");
    assert_int_equal(s.line, line);
    assert_int_equal(s.col, col);
}

static void test_member_and_item_positions(void **state)
{
    loaded l;
    assert_int_equal(load(&l, SPEC), 0);
    assert_int_equal(l.n, 1);
    const cv_yaml_doc *doc = &l.docs[0];
    json_t *root = doc->root, *spec = json_object_get(root, "spec");
    cv_span k, v;
    assert_int_equal(cv_yaml_member_span(doc, root, "kind", &k, &v), 0);
    assert_span(k, 2, 1);
    assert_span(v, 2, 7);
    assert_int_equal(v.end_line, 2);
    assert_int_equal(v.end_col, 20);
    json_t *meta = json_object_get(root, "metadata");
    assert_int_equal(cv_yaml_span(doc, meta, &v), 0);
    assert_span(v, 3, 11);
    assert_int_equal(v.end_col, 25);
    assert_int_equal(cv_yaml_member_span(doc, meta, "name", NULL, &v), 0);
    assert_span(v, 3, 18);
    json_t *targets = json_object_get(spec, "targets");
    assert_int_equal(cv_yaml_item_span(doc, targets, 1, &v), 0);
    assert_span(v, 8, 7);
    assert_int_equal(cv_yaml_item_span(doc, targets, 2, &v), -1);
    int line, col;
    assert_int_equal(cv_yaml_pos(doc, json_array_get(targets, 0), &line, &col), 0);
    assert_int_equal(line, 7);
    assert_int_equal(col, 7);
    assert_int_equal(cv_yaml_pos(doc, json_object_get(spec, "replicas"), &line, &col), 0);
    assert_int_equal(line, 10);
    assert_int_equal(col, 13);
    /* true/false/null are shared by jansson: found by their member only. */
    assert_int_equal(cv_yaml_pos(doc, json_object_get(spec, "readOnly"), &line, &col), -1);
    assert_int_equal(cv_yaml_member_span(doc, spec, "readOnly", &k, &v), 0);
    assert_span(k, 12, 3);
    assert_span(v, 12, 13);
    assert_int_equal(cv_yaml_member_span(doc, spec, "nothing", NULL, &v), 0);
    assert_span(v, 13, 12);
    assert_int_equal(cv_yaml_pos(doc, root, &line, &col), 0);
    assert_int_equal(line, 1);
    json_t *other = json_string("x");
    assert_int_equal(cv_yaml_pos(doc, other, &line, &col), -1);
    json_decref(other);
    unload(&l);
}

static void test_pointer_spans(void **state)
{
    loaded l;
    assert_int_equal(load(&l, SPEC), 0);
    const cv_yaml_doc *doc = &l.docs[0];
    cv_span s;
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/targets/1", false, &s), 0);
    assert_span(s, 8, 7);
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/optLevel", true, &s), 0);
    assert_span(s, 9, 3);
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/readOnly", false, &s), 0);
    assert_span(s, 12, 13);
    assert_int_equal(cv_yaml_pointer_span(doc, "", false, &s), 0);
    assert_span(s, 1, 1);
    /* Missing: the deepest existing ancestor (where a required key is missing). */
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/missing/x", false, &s), 1);
    assert_span(s, 5, 3);
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/targets/01", false, &s), 1);
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/targets/-", false, &s), 1);
    assert_int_equal(cv_yaml_pointer_span(doc, "spec", false, &s), -1);
    assert_int_equal(cv_yaml_pointer_span(doc, "/spec/bad~2", false, &s), 1);
    unload(&l);
}

static void test_json_pointer_escapes(void **state)
{
    loaded l;
    assert_int_equal(load(&l, "\"a/b\": {\"m~n\": [x, y]}\n"), 0);
    cv_span s;
    assert_int_equal(cv_yaml_pointer_span(&l.docs[0], "/a~1b/m~0n/1", false, &s), 0);
    assert_span(s, 1, 20);
    unload(&l);
}

static void test_core_schema_typing(void **state)
{
    loaded l;
    assert_int_equal(load(&l, "i: 42\nneg: -7\nplus: +12\nlead: 0755\noct: 0o17\nhex: 0x1F\n"
                              "big: 9223372036854775807\nf: 0.5\ne: 1e3\ndot: .5\ntrail: 1.\n"
                              "t: true\nT: True\nF: FALSE\nyes: yes\nn1: null\nn2: ~\nn3:\n"
                              "q1: \"123\"\nq2: 'true'\nblock: |\n  12\nus: 1_000\n"
                              "s1: !!str 123\nf1: !!float 1\nb1: !!bool true\nnul: !!null ''\n"
                              "ns: ! 12\n1: one\ntrue: key\nver: 1.2.3\n"), 0);
    json_t *r = l.docs[0].root;
    static const struct { const char *k; json_int_t v; } ints[] = {
        {"i", 42}, {"neg", -7}, {"plus", 12}, {"lead", 755}, {"oct", 15}, {"hex", 31},
        {"big", INT64_MAX},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        json_t *v = json_object_get(r, ints[i].k);
        assert_true(json_is_integer(v));
        assert_true(json_integer_value(v) == ints[i].v);
    }
    static const struct { const char *k; double v; } reals[] = {
        {"f", 0.5}, {"e", 1000}, {"dot", 0.5}, {"trail", 1}, {"f1", 1},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        json_t *v = json_object_get(r, reals[i].k);
        assert_true(json_is_real(v));
        assert_true(json_real_value(v) == reals[i].v);
    }
    assert_true(json_is_true(json_object_get(r, "t")));
    assert_true(json_is_true(json_object_get(r, "T")));
    assert_true(json_is_false(json_object_get(r, "F")));
    assert_true(json_is_true(json_object_get(r, "b1")));
    static const char *const nulls[] = {"n1", "n2", "n3", "nul"};
    for (size_t i = 0; i < 4; i++)
        assert_true(json_is_null(json_object_get(r, nulls[i])));
    static const char *const strs[][2] = {
        {"yes", "yes"}, {"q1", "123"}, {"q2", "true"}, {"block", "12\n"}, {"us", "1_000"},
        {"s1", "123"}, {"ns", "12"}, {"1", "one"}, {"true", "key"}, {"ver", "1.2.3"},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        assert_string_equal(json_string_value(json_object_get(r, strs[i][0])), strs[i][1]);
    unload(&l);
}

static void test_multi_document(void **state)
{
    loaded l;
    assert_int_equal(load(&l, "a: 1\n---\n# comment\nb: [2]\n---\n"), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(json_integer_value(json_object_get(l.docs[0].root, "a")), 1);
    assert_int_equal(l.docs[1].line, 2);
    assert_string_equal(l.docs[1].file, "spec.yaml");
    cv_span s;
    assert_int_equal(cv_yaml_pointer_span(&l.docs[1], "/b/0", false, &s), 0);
    assert_span(s, 4, 5);
    assert_true(json_is_null(l.docs[2].root));
    /* Anchors do not cross documents. */
    unload(&l);
    assert_int_equal(load(&l, "a: &x 1\n---\nb: *x\n"), -1);
    assert_int_equal(l.d.v[0].code, 1126);
    unload(&l);
    assert_int_equal(load(&l, ""), 0);
    assert_int_equal(l.n, 0);
    unload(&l);
    assert_int_equal(load(&l, "# only a comment\n"), 0);
    assert_int_equal(l.n, 0);
    unload(&l);
}

static void test_aliases_expand_with_positions(void **state)
{
    loaded l;
    assert_int_equal(load(&l, "base: &b {x: 1, y: [1, 2]}\nother: *b\ns: &s hi\nt: *s\n"), 0);
    json_t *r = l.docs[0].root, *base = json_object_get(r, "base"), *other = json_object_get(r, "other");
    assert_true(json_equal(base, other));
    assert_ptr_not_equal(base, other);   /* deep copies: editing one leaves the other */
    assert_string_equal(json_string_value(json_object_get(r, "t")), "hi");
    cv_span s;
    assert_int_equal(cv_yaml_pointer_span(&l.docs[0], "/other", false, &s), 0);
    assert_span(s, 2, 8);
    assert_int_equal(cv_yaml_pointer_span(&l.docs[0], "/other/y/1", false, &s), 0);
    assert_span(s, 1, 24);   /* inside an alias: where the anchored node says it */
    unload(&l);
}

/* Loads text that must fail; checks code, line and col of the first error. */
static void expect_error(const char *text, size_t len, int code, int line, int col)
{
    loaded l;
    cv_diag_init(&l.d);
    print_message("expect CV%d at %d:%d\n", code, line, col);
    assert_int_equal(cv_yaml_load(text, len, "spec.yaml", &l.docs, &l.n, &l.d), -1);
    assert_null(l.docs);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.d.v[0].code, code);
    if (line) {
        assert_span(l.d.v[0].span, line, col);
    }
    cv_diag_free(&l.d);
}

#define EXPECT(text, code, line, col) expect_error(text, strlen(text), code, line, col)

static void test_errors_with_positions(void **state)
{
    EXPECT("a: 1\nb: c: d\n", 1121, 2, 5);
    EXPECT("a: [1, 2\nb: 3\n", 1121, 2, 2);
    EXPECT("a: 1\nb: 2\na: 3\n", 1124, 3, 1);
    EXPECT("a: *x\n", 1126, 1, 4);
    EXPECT("a: &x [1, *x]\n", 1126, 1, 11);
    EXPECT("a: !foo bar\n", 1125, 1, 4);
    EXPECT("a: !!binary aGk=\n", 1125, 1, 4);
    EXPECT("a: !!set {x}\n", 1125, 1, 4);
    EXPECT("? [a, b]\n: 1\n", 1125, 1, 3);
    EXPECT("base: &b {x: 1}\nc:\n  <<: *b\n", 1125, 3, 3);
    EXPECT("a: !!int abc\n", 1127, 1, 4);
    EXPECT("a: !!int 1.5\n", 1127, 1, 4);
    EXPECT("a: !!bool yes\n", 1127, 1, 4);
    EXPECT("a: !!null 0\n", 1127, 1, 4);
    EXPECT("a:\n  b: 99999999999999999999\n", 1004, 2, 6);
    EXPECT("a: 0x8000000000000000\n", 1004, 1, 4);
    EXPECT("a: -.inf\n", 1004, 1, 4);
    EXPECT("a: .nan\n", 1004, 1, 4);
    EXPECT("a: 1e999\n", 1004, 1, 4);
    EXPECT("a: \"\\0\"\nb: 1\n\"k\\0\": 2\n", 1125, 3, 1);
}

static char *nested(int depth)
{
    cv_sb sb = CV_SB_INIT;
    for (int i = 0; i < depth; i++)
        cv_sb_putc(&sb, '[');
    for (int i = 0; i < depth; i++)
        cv_sb_putc(&sb, ']');
    cv_sb_putc(&sb, '\n');
    return cv_sb_steal(&sb);
}

static void test_limits(void **state)
{
    char *ok = nested(CV_YAML_MAX_DEPTH), *deep = nested(CV_YAML_MAX_DEPTH + 1);
    loaded l;
    assert_int_equal(load(&l, ok), 0);
    unload(&l);
    EXPECT(deep, 1122, 1, CV_YAML_MAX_DEPTH + 1);
    free(ok);
    free(deep);
    /* Billion laughs: nine levels of ten aliases each. */
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "a0: &a0 [lol]\n");
    for (int i = 1; i < 10; i++) {
        cv_sb_printf(&sb, "a%d: &a%d [", i, i);
        for (int k = 0; k < 10; k++)
            cv_sb_printf(&sb, "%s*a%d", k ? ", " : "", i - 1);
        cv_sb_puts(&sb, "]\n");
    }
    expect_error(sb.buf, sb.len, 1123, 0, 0);
    cv_sb_free(&sb);
    /* Aliases up to the limit are fine. */
    assert_int_equal(load(&l, "a: &a [1, 2, 3]\nb: [*a, *a, *a, *a]\n"), 0);
    assert_int_equal(json_array_size(json_object_get(l.docs[0].root, "b")), 4);
    unload(&l);
    size_t big = CV_YAML_MAX_BYTES + 1;
    char *text = malloc(big);
    memset(text, ' ', big);
    expect_error(text, big, 1011, 0, 0);
    free(text);
}

/* A flow sequence of n zeros: n + 1 nodes in 2n + 1 bytes. */
static void flow_seq(cv_sb *sb, size_t n)
{
    cv_sb_putc(sb, '[');
    for (size_t i = 0; i < n; i++)
        cv_sb_puts(sb, i ? ",0" : "0");
    cv_sb_puts(sb, "]\n");
}

/* Memory is bounded by nodes, whatever the bytes: a stream (all its
 * documents) holds at most CV_YAML_MAX_NODES, and a budget shared by
 * several streams is used up across them. */
static void test_node_limit(void **state)
{
    (void)state;
    cv_sb sb = CV_SB_INIT;
    flow_seq(&sb, CV_YAML_MAX_NODES - 1);
    loaded l;
    assert_int_equal(load(&l, sb.buf), 0);
    assert_int_equal(json_array_size(l.docs[0].root), CV_YAML_MAX_NODES - 1);
    unload(&l);
    cv_sb_reset(&sb);
    flow_seq(&sb, CV_YAML_MAX_NODES);
    expect_error(sb.buf, sb.len, 1128, 0, 0);
    /* two documents of 60% each */
    cv_sb_reset(&sb);
    flow_seq(&sb, CV_YAML_MAX_NODES * 6 / 10);
    cv_sb_puts(&sb, "---\n");
    flow_seq(&sb, CV_YAML_MAX_NODES * 6 / 10);
    expect_error(sb.buf, sb.len, 1128, 0, 0);
    /* a shared budget: the second stream gets what the first left */
    cv_sb_reset(&sb);
    flow_seq(&sb, 999);
    size_t left = 1500;
    cv_diag_init(&l.d);
    assert_int_equal(cv_yaml_load_budget(sb.buf, sb.len, "a.yaml", &left, &l.docs, &l.n, &l.d), 0);
    assert_int_equal(left, 500);
    cv_yaml_free(l.docs, l.n);
    assert_int_equal(cv_yaml_load_budget(sb.buf, sb.len, "b.yaml", &left, &l.docs, &l.n, &l.d),
                     -1);
    assert_int_equal(cv_diag_get(&l.d, 1)->code, 1128);
    assert_int_equal(left, 0);
    cv_diag_free(&l.d);
    cv_sb_free(&sb);
}

static void test_load_file_and_caret(void **state)
{
    char *dir = cv_tmpdir_make("yaml");
    const char *text = "kind: A\nspec:\n  x: 1\n  x: 2\n";
    cv_tmpdir_write(dir, "p.yaml", text, strlen(text));
    char *path = cv_tmpdir_path(dir, "p.yaml");
    cv_yaml_doc *docs;
    int n;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_yaml_load_file(path, &docs, &n, &d), -1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cv_diag_print(&d, f, false);
    fclose(f);
    char want[512];
    snprintf(want, sizeof want, "%s:4:3: error[CV1124]: duplicate key `x`\n    x: 2\n    ^\n"
             "  = note: first defined at line 3, column 3\n", path);
    assert_string_equal(buf, want);
    free(buf);
    cv_diag_clear(&d);
    cv_tmpdir_write(dir, "ok.yaml", "a: 1\n", 5);
    char *ok = cv_tmpdir_path(dir, "ok.yaml");
    assert_int_equal(cv_yaml_load_file(ok, &docs, &n, &d), 0);
    assert_int_equal(n, 1);
    assert_string_equal(docs[0].file, ok);
    cv_yaml_free(docs, n);
    cv_diag_free(&d);
    free(ok);
    free(path);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_and_item_positions),
        cmocka_unit_test(test_pointer_spans),
        cmocka_unit_test(test_json_pointer_escapes),
        cmocka_unit_test(test_core_schema_typing),
        cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_aliases_expand_with_positions),
        cmocka_unit_test(test_errors_with_positions),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_node_limit),
        cmocka_unit_test(test_load_file_and_caret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
