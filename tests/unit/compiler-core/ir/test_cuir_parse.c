/* The CU-IR text parser: the accept/reject corpus under tests/cuir, bad
 * input (NUL bytes, invalid UTF-8, truncation at every byte, 100 MB lines,
 * 10,000-deep nesting, overflowing dimensions), recovery after syntax
 * errors, spans, attribute kinds, forward references. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/lex.h"
#include "tests/support/cuirtest.h"

/* Parses text; returns the module (may be NULL) with diagnostics in *d. */
static cv_module *parse(const char *text, cv_diag *d)
{
    cv_diag_init(d);
    return cv_cuir_parse(text, strlen(text), "t.cuir", d);
}

/* Asserts that text fails to parse with exactly the listed errors. */
static void expect_errors(const char *text, size_t len, const cv_cuirtest_want *w, int n)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, len, "t.cuir", &d);
    assert_null(m);
    assert_true(cv_cuirtest_match("input", &d, w, n));
    cv_diag_free(&d);
}

#define EXPECT1(text, code_, line_, col_) \
    expect_errors(text, strlen(text), (cv_cuirtest_want[]){{code_, line_, col_}}, 1)

static const char *HEAD = "cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n";

/* HEAD + body + "  return %x\n}\n", malloc'd. */
static char *with_body(const char *body)
{
    size_t n = strlen(HEAD) + strlen(body) + 32;
    char *s = malloc(n);
    snprintf(s, n, "%s%s  return %%x\n}\n", HEAD, body);
    return s;
}

/* ---- corpus -------------------------------------------------------------- */

static void test_accept_corpus(void **state)
{
    (void)state;
    char **files;
    int n = cv_cuirtest_list("accept", &files);
    assert_true(n >= 5);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *text = cv_cuirtest_read(files[i], &len);
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = cv_cuirtest_load(text, len, files[i], 0, &d);
        if (!m || d.n_errors)
            cv_diag_print(&d, stderr, false);
        assert_non_null(m);
        assert_int_equal(d.n_errors, 0);
        cv_module_free(m);
        cv_diag_free(&d);
        free(text);
        free(files[i]);
    }
    free(files);
}

static void test_reject_corpus(void **state)
{
    (void)state;
    char **files;
    int n = cv_cuirtest_list("reject", &files), failures = 0;
    assert_true(n >= 20);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *text = cv_cuirtest_read(files[i], &len);
        cv_cuirtest_want w[32];
        bool strict;
        int nw = cv_cuirtest_expect(text, w, 32, &strict);
        if (nw <= 0) {
            fprintf(stderr, "%s: no '# expect:' line\n", files[i]);
            failures++;
        } else {
            cv_diag d;
            cv_diag_init(&d);
            cv_module *m = cv_cuirtest_load(text, len, files[i], strict ? CV_VERIFY_STRICT : 0, &d);
            failures += !cv_cuirtest_match(files[i], &d, w, nw);
            cv_module_free(m);
            cv_diag_free(&d);
        }
        free(text);
        free(files[i]);
    }
    free(files);
    assert_int_equal(failures, 0);
}

/* ---- bytes ---------------------------------------------------------------- */

static void test_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "cuir 1\nmodel @m() -> () {\n  ret\0urn\n}\n";
    expect_errors(text, sizeof text - 1, (cv_cuirtest_want[]){{1006, 3, 6}}, 1);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *bad[] = {
        "\xff", "\xc0\xaf" /* overlong */, "\xed\xa0\x80" /* surrogate */,
        "\xf4\x90\x80\x80" /* above U+10FFFF */, "\xe2\x82" /* cut short */, "\x80",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        int n = snprintf(text, sizeof text, "cuir 1\n# comment %s\nmodel @m() -> () {\n", bad[i]);
        expect_errors(text, (size_t)n, (cv_cuirtest_want[]){{1005, 2, 11}}, 1);
    }
    /* Valid multi-byte text in strings and comments is fine. */
    cv_diag d;
    cv_module *m = parse("cuir 1 # \xe2\x82\xac \xf0\x9f\x98\x80\nmodel @\"\xc3\xa9\"() -> () {\n"
                         "  return\n}\n", &d);
    assert_non_null(m);
    assert_string_equal(m->funcs[0]->name, "\xc3\xa9");
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_empty_and_header(void **state)
{
    (void)state;
    EXPECT1("", 1008, 1, 1);
    EXPECT1("# only a comment\n\n", 1008, 3, 1);
    EXPECT1("cuir", 1010, 1, 5);
    EXPECT1("cuir x\n", 1008, 1, 6);
    EXPECT1("cuir 1 2\n", 1002, 1, 8);
    EXPECT1("\xEF\xBB\xBF" "cuir 1\r\nmodel @m() -> () {\r\n  return\r\n}\r\n\r", 1001, 5, 1);
    cv_diag d;
    cv_module *m = parse("\xEF\xBB\xBF" "cuir 1\r\nmodel @m() -> () {\r\n  return\r\n}\r\n", &d);
    assert_non_null(m);  /* a byte-order mark and CRLF line ends are fine */
    cv_module_free(m);
    cv_diag_free(&d);
}

/* Every proper prefix of a valid module (past its header) is a truncated
 * file: at most two errors, one of them CV1010, never a crash. */
static void test_truncated_everywhere(void **state)
{
    (void)state;
    char **files;
    int nf = cv_cuirtest_list("accept", &files);
    assert_true(nf > 0);
    size_t len;
    char *text = cv_cuirtest_read(files[0], &len);  /* the first accept file */
    const char *body = strstr(text, "\nmodel ");
    assert_non_null(body);
    body += strlen("\nmodel ");  /* a cut inside the keyword is not CU-IR at all */
    size_t last = len;
    while (last > 0 && (text[last - 1] == '\n' || text[last - 1] == '}'))
        last--;  /* cutting only the closing brace or newline leaves a valid-but-open model */
    for (size_t cut = (size_t)(body - text); cut < last; cut++) {
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = cv_cuir_parse(text, cut, "t.cuir", &d);
        bool has_eof = false;
        for (int i = 0; i < d.n; i++)
            has_eof |= d.v[i].code == 1010;
        if (m || !has_eof || d.n_errors > 2) {
            fprintf(stderr, "cut at %zu: ...%.20s\n", cut, text + (cut > 20 ? cut - 20 : 0));
            cv_diag_print(&d, stderr, false);
        }
        assert_null(m);
        assert_true(has_eof);
        assert_true(d.n_errors <= 2);
        cv_diag_free(&d);
    }
    free(text);
    for (int i = 0; i < nf; i++)
        free(files[i]);
    free(files);
}

/* ---- huge and deep input -------------------------------------------------- */

enum { HUGE = 100 * 1024 * 1024 };

static char *huge_line(const char *before, char fill, size_t n, const char *after, size_t *len)
{
    size_t a = strlen(before), b = strlen(after);
    char *s = malloc(a + n + b + 1);
    memcpy(s, before, a);
    memset(s + a, fill, n);
    memcpy(s + a + n, after, b + 1);
    *len = a + n + b;
    return s;
}

static void test_huge_name(void **state)
{
    (void)state;
    size_t len;
    char *s = huge_line("cuir 1\nmodel @m(%", 'a', HUGE, ": f32[2]) -> () {\n  return\n}\n", &len);
    expect_errors(s, len, (cv_cuirtest_want[]){{1009, 2, 10}}, 1);
    free(s);
}

static void test_huge_comment_and_garbage(void **state)
{
    (void)state;
    size_t len;
    char *s = huge_line("cuir 1\n# ", 'x', HUGE, "\nmodel @m() -> () {\n  return\n}\n", &len);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(s, len, "t.cuir", &d);
    assert_non_null(m);
    cv_module_free(m);
    cv_diag_free(&d);
    free(s);
    /* After a syntax error the rest of a 100 MB line is skipped in one pass. */
    s = huge_line("cuir 1\nmodel @m() -> () {\n  %0 = relu(", ')', HUGE, "\n  return\n}\n", &len);
    expect_errors(s, len, (cv_cuirtest_want[]){{1002, 3, 14}}, 1);
    free(s);
}

static void test_huge_dense(void **state)
{
    (void)state;
    /* 100 MB of 19-digit integers in one dense(...) of 4,993,446 i64 values. */
    static const char item[] = "1234567890123456789, ";
    size_t il = sizeof item - 1, count = HUGE / il;
    char head[200];
    snprintf(head, sizeof head, "cuir 1\nmodel @m() -> (i64[%zu]) {\n  param %%c: i64[%zu] = dense(",
             count, count);
    static const char tail[] = "7)\n  return %c\n}\n";
    size_t hl = strlen(head);
    char *s = malloc(hl + count * il + sizeof tail);
    memcpy(s, head, hl);
    for (size_t i = 0; i < count - 1; i++)
        memcpy(s + hl + i * il, item, il);
    memcpy(s + hl + (count - 1) * il, tail, sizeof tail);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuirtest_load(s, strlen(s), "t.cuir", 0, &d);
    assert_non_null(m);
    assert_int_equal(d.n_errors, 0);
    const cv_param *p = m->funcs[0]->params[0];
    assert_int_equal(p->nbytes, count * 8);
    assert_int_equal(((const int64_t *)p->data)[count - 2], 1234567890123456789);
    assert_int_equal(((const int64_t *)p->data)[count - 1], 7);
    cv_module_free(m);
    cv_diag_free(&d);
    free(s);
}

static void deep(const char *before, char open, const char *after, int line, int col)
{
    size_t len;
    char *s = huge_line(before, open, 10000, after, &len);
    expect_errors(s, len, (cv_cuirtest_want[]){{1007, line, col}}, 1);
    free(s);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    /* The 65th open bracket of the line is reported. */
    deep("cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n  %0 = reshape(%x) {shape=", '[',
         "} : f32[2]\n  return %0\n}\n", 3, 90);
    deep("cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n  %0 = relu(", '(', "\n  return %x\n}\n", 3, 76);
    deep("cuir 1\nmodel @m", '(', "\n", 2, 73);
    deep("cuir 1\nmodel @m() -> () {\n  param %p: f32", '[', "\n  return\n}\n", 3, 80);
    deep("cuir 1\nmodel @m() -> () ", '{', "\n  return\n}\n", 2, 82);
    /* Brackets inside strings and comments do not count. */
    size_t len;
    char *s = huge_line("cuir 1\nmodel @m() -> () {\n  param %p: f32[] = weights(\"", '[', 10000,
                        "\", \"k\") # ((((\n  return\n}\n", &len);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(s, len, "t.cuir", &d);
    assert_non_null(m);
    cv_module_free(m);
    cv_diag_free(&d);
    free(s);
}

static void test_dimension_overflow(void **state)
{
    (void)state;
    char *s = with_body("  %0 = relu(%x) : f32[2,99999999999999999999]\n");
    EXPECT1(s, 3004, 3, 25);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[9223372036854775807]\n");
    cv_diag d;
    cv_module *m = parse(s, &d);  /* INT64_MAX fits: the verifier judges it */
    assert_non_null(m);
    assert_int_equal(m->funcs[0]->ops[0]->results[0]->type.shape.d[0].n, INT64_MAX);
    cv_module_free(m);
    cv_diag_free(&d);
    free(s);
    s = with_body("  %0 = relu(%x) {alpha=99999999999999999999} : f32[2]\n");
    EXPECT1(s, 1004, 3, 24);
    free(s);
    s = with_body("  %0 = relu(%x) {alpha=1e999} : f32[2]\n");
    EXPECT1(s, 1004, 3, 24);
    free(s);
}

/* ---- recovery -------------------------------------------------------------- */

static void test_recovery_reports_each_line(void **state)
{
    (void)state;
    char *s = with_body("  %0 = relu(%x) : f32[2] ]\n"
                        "  %1 = relu(%0) : f32(2)\n"
                        "  %2 = relu(%1) : f32[2]\n"
                        "  %3 = = relu(%2) : f32[2]\n");
    expect_errors(s, strlen(s),
                  (cv_cuirtest_want[]){{1002, 3, 26}, {1002, 4, 22}, {1002, 6, 8}}, 3);
    free(s);
}

static void test_error_cap(void **state)
{
    (void)state;
    size_t n = 200 * 16 + 128, len = 0;
    char *s = malloc(n);
    len += (size_t)snprintf(s, n, "cuir 1\nmodel @m() -> () {\n");
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(s + len, n - len, "  %%%d = ?\n", i);
    snprintf(s + len, n - len, "  return\n}\n");
    cv_diag d;
    cv_module *m = parse(s, &d);
    assert_null(m);
    assert_int_equal(d.n_errors, 50);
    assert_int_equal(d.v[d.n - 1].sev, CV_SEV_NOTE);
    cv_diag_free(&d);
    free(s);
}

/* ---- what the parser builds ------------------------------------------------ */

static void test_forward_and_undefined(void **state)
{
    (void)state;
    cv_diag d;
    cv_module *m = parse("cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n"
                         "  %a = add(%b, %nope) : f32[2]\n"
                         "  %b = relu(%x) : f32[2]\n"
                         "  return %a\n}\n", &d);
    assert_non_null(m);
    assert_int_equal(d.n, 0);  /* naming errors are the verifier's */
    cv_func *f = m->funcs[0];
    cv_op *a = f->ops[0], *b = f->ops[1];
    assert_ptr_equal(a->operands[0], b->results[0]);
    cv_value *u = a->operands[1];
    assert_string_equal(u->name, "nope");
    assert_int_equal(u->kind, CV_VAL_RESULT);
    assert_null(u->def);
    assert_int_equal(u->span.line, 3);
    assert_int_equal(u->span.col, 16);
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_declared_types_kept(void **state)
{
    (void)state;
    cv_diag d;
    cv_module *m = parse("cuir 1\nmodel @m(%x: f32[2]) -> (i8[7]) {\n"
                         "  %a = relu(%x) : i8[7]\n  return %a\n}\n", &d);
    assert_non_null(m);  /* no shape inference while parsing */
    cv_type want = {.dtype = CV_I8, .shape = {.rank = 1, .d = {{7, NULL}}}};
    assert_true(cv_type_equal(&m->funcs[0]->ops[0]->results[0]->type, &want));
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_spans(void **state)
{
    (void)state;
    cv_diag d;
    cv_module *m = parse("cuir 1\nmodel @m(%x: f32[N,4]) -> (f32[N,4]) {\n"
                         "  param %w: f32[4] = dense(1, 2, 3, 4)\n"
                         "  %y = leaky_relu(%x) {alpha=0.5} : f32[N,4]  loc(\"a.py\":1:2)\n"
                         "  return %y\n}\n", &d);
    assert_non_null(m);
    cv_func *f = m->funcs[0];
    cv_op *op = f->ops[0];
    assert_string_equal(op->span.file, "t.cuir");
    assert_int_equal(op->span.line, 4);
    assert_int_equal(op->span.col, 3);
    assert_int_equal(op->span.end_col, 45);  /* through the types, not the loc */
    assert_int_equal(op->results[0]->span.col, 3);
    assert_int_equal(op->results[0]->span.end_col, 5);
    assert_int_equal(op->attrs[0].span.col, 24);
    assert_int_equal(op->attrs[0].span.end_col, 33);
    assert_int_equal(f->inputs[0]->span.line, 2);
    assert_int_equal(f->inputs[0]->span.col, 10);
    assert_int_equal(f->params[0]->span.col, 3);
    assert_int_equal(f->params[0]->value->span.col, 9);
    assert_int_equal(f->span.line, 2);
    assert_int_equal(f->ret_span.line, 5);
    assert_int_equal(f->ret_span.end_col, 12);
    assert_int_equal(op->n_locs, 1);
    assert_string_equal(op->locs[0].file, "a.py");
    assert_int_equal(op->locs[0].col, 2);
    cv_module_free(m);
    cv_diag_free(&d);
}

static const cv_attr *attr_of(const cv_module *m, int op, const char *name)
{
    return cv_op_attr(m->funcs[0]->ops[op], name);
}

static void test_attribute_kinds(void **state)
{
    (void)state;
    cv_diag d;
    cv_module *m = parse("cuir 1\nmodel @m(%x: f32[1,1,4,4]) -> (f32[1,1,4,4]) {\n"
                         "  %0 = leaky_relu(%x) {alpha=1} : f32[1,1,4,4]\n"
                         "  %1 = resize(%0) {scales=[1, 1, 2, 2], mode=\"nearest\"} : f32[1,1,8,8]\n"
                         "  %2 = resize(%0) {scales=[], sizes=[]} : f32[1,1,4,4]\n"
                         "  %3 = cast(%0) {to=bf16} : bf16[1,1,4,4]\n"
                         "  %4 = transpose(%0) {perm=[0, 1, 3, 2.5], frob=7, fl=[1]} : f32[1,1,4,4]\n"
                         "  return %0\n}\n", &d);
    assert_non_null(m);
    const cv_attr *a = attr_of(m, 0, "alpha");
    assert_int_equal(a->kind, CV_ATTR_FLOAT);  /* an integer for a float attribute */
    assert_true(a->f == 1.0);
    a = attr_of(m, 1, "scales");
    assert_int_equal(a->kind, CV_ATTR_FLOATS);
    assert_int_equal(a->n, 4);
    assert_true(a->floats[3] == 2.0);
    assert_int_equal(attr_of(m, 1, "mode")->kind, CV_ATTR_STRING);
    assert_string_equal(attr_of(m, 1, "mode")->s, "nearest");
    assert_int_equal(attr_of(m, 2, "scales")->kind, CV_ATTR_FLOATS);  /* [] takes the schema's kind */
    assert_int_equal(attr_of(m, 2, "sizes")->kind, CV_ATTR_INTS);
    assert_int_equal(attr_of(m, 2, "sizes")->n, 0);
    assert_int_equal(attr_of(m, 3, "to")->kind, CV_ATTR_DTYPE);
    assert_int_equal(attr_of(m, 3, "to")->dt, CV_BF16);
    assert_int_equal(attr_of(m, 4, "perm")->kind, CV_ATTR_FLOATS);  /* the verifier objects */
    assert_int_equal(attr_of(m, 4, "frob")->kind, CV_ATTR_INT);
    assert_int_equal(attr_of(m, 4, "fl")->kind, CV_ATTR_INTS);       /* unknown: as written */
    /* Attributes are kept in schema order, unknown ones last. */
    assert_string_equal(m->funcs[0]->ops[1]->attrs[0].name, "mode");
    assert_string_equal(m->funcs[0]->ops[4]->attrs[0].name, "perm");
    cv_module_free(m);
    cv_diag_free(&d);
}

static void test_statement_errors(void **state)
{
    (void)state;
    char *s = with_body("  %0 = relu(%x) {alpha=1, alpha=2} : f32[2]\n");
    EXPECT1(s, 2002, 3, 27);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2]  loc(\"a\":-1:2)\n");
    EXPECT1(s, 1004, 3, 35);
    free(s);
    s = with_body("  param %p: f32[2] = zeros()\n");
    EXPECT1(s, 1002, 3, 22);
    free(s);
    s = with_body("  param %p: bool[2] = dense(true, 1)\n");
    EXPECT1(s, 1004, 3, 35);
    free(s);
    s = with_body("  param %p: i32[2] = dense(1, 2.0)\n");
    EXPECT1(s, 1004, 3, 31);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2]\r\n");
    cv_diag d;
    cv_module *m = parse(s, &d);
    assert_non_null(m);
    cv_module_free(m);
    cv_diag_free(&d);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2]\r  \n");
    EXPECT1(s, 1001, 3, 25);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2]  loc(\"caf\\xe9\")\n");
    EXPECT1(s, 1012, 3, 35);  /* escapes spell ASCII only: the text stays UTF-8 */
    free(s);
    s = with_body("  %0 = relu(%) : f32[2]\n");
    EXPECT1(s, 1001, 3, 13);
    free(s);
    s = with_body("  %\"\" = relu(%x) : f32[2]\n");
    EXPECT1(s, 1002, 3, 3);
    free(s);
}

/* ---- fast paths ------------------------------------------------------------ */

/* Numbers are converted without strtod where one IEEE operation is exact;
 * every spelling must still give strtod's double, bit for bit. */
static void test_numbers_read_as_strtod(void **state)
{
    (void)state;
    static const char *const fixed[] = {
        "0.0", "-0.0", "1.0009765625", "0.1", "0.3", "1e22", "1e23", "9007199254740993.0",
        "9007199254740992.0", "1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308",
        "123456789012345678901234567890.0", "0.000001", "1e-22", "1e-23", "3.14159265358979",
        "6.0", "-6.5e-3", "1E5", "1e+5", "00.5", "0.50000000000000000000001",
    };
    cv_arena a;
    cv_arena_init(&a);
    uint64_t r = 88172645463325252ull;
    for (int i = 0; i < 100000 + (int)(sizeof fixed / sizeof fixed[0]); i++) {
        char buf[64];
        if (i < (int)(sizeof fixed / sizeof fixed[0])) {
            snprintf(buf, sizeof buf, "%s", fixed[i]);
        } else {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            double v;
            uint64_t bits = r;
            memcpy(&v, &bits, sizeof v);
            if (i % 2)  /* short decimals, as writers print them */
                snprintf(buf, sizeof buf, "%.*g", (int)(r % 17) + 1,
                         (double)(r % 2000003) / 1024.0);
            else if (isfinite(v))
                snprintf(buf, sizeof buf, "%.*e", (int)(r % 18), v);
            else
                continue;
            if (!strpbrk(buf, ".e"))
                strcat(buf, ".0");
        }
        cv_lexer L;
        cv_token t;
        cv_lex_init(&L, buf, strlen(buf), &a);
        cv_lex_next(&L, &t);
        double want = strtod(buf, NULL);
        if (t.kind != TK_FLOAT || memcmp(&t.f, &want, sizeof want) != 0)
            fail_msg("%s: lexed %.17g, strtod %.17g", buf, t.f, want);
    }
    cv_arena_free(&a);
}

/* Types and locations written compactly (the fast path) and spread out with
 * blanks and comments (the token path) read the same. */
static void test_compact_and_spread_agree(void **state)
{
    (void)state;
    static const char *const compact =
        "cuir 1\nmodel @m(%x: f32[N,3,4]) -> (f32[N,3,4]) {\n"
        "  param %w: f32[1,3,1] = dense(1.0, 2.0, 3.0)\n"
        "  %a = mul(%x, %w) : f32[N,3,4]  loc(\"m.py\":12:9)\n"
        "  %b = relu(%a) : f32[N,3,4]  loc(\"\":0:0)\n"
        "  %c = reshape(%b) {shape=[-1,12]} : f32[N_.x,12]  loc(\"d/e f.py\":999999999:7)\n"
        "  %s = shape(%x) : i64[]\n"
        "  return %a\n}\n";
    static const char *const spread =
        "cuir 1\nmodel @m(%x: f32[ N , 3,4 ]) -> (f32[N,3 ,4]) {\n"
        "  param %w: f32[1, 3, 1] = dense(1.0, 2.0, 3.0)\n"
        "  %a = mul(%x, %w) : f32[N,3,4 ]  loc( \"m.py\" : 12 : 9 )\n"
        "  %b = relu(%a) : f32 [N,3,4]  loc(\"\":0 :0)\n"
        "  %c = reshape(%b) {shape=[-1,12]} : f32[\"N_.x\",12]  loc(\"d/e\\x20f.py\":999999999:7)\n"
        "  %s = shape(%x) : i64[ ]\n"
        "  return %a\n}\n";
    cv_diag d1, d2;
    cv_module *a = parse(compact, &d1), *b = parse(spread, &d2);
    assert_non_null(a);
    assert_non_null(b);
    char *pa = cv_module_print(a, 0), *pb = cv_module_print(b, 0);
    assert_string_equal(pa, pb);
    assert_int_equal(a->funcs[0]->ops[2]->results[0]->type.shape.d[0].sym,
                     cv_module_intern(a, "N_.x", 4));
    free(pa);
    free(pb);
    cv_module_free(a);
    cv_module_free(b);
    cv_diag_free(&d1);
    cv_diag_free(&d2);
    /* What the fast path leaves to the token path is still reported there. */
    char *s = with_body("  %0 = relu(%x) : f32[2,]\n");
    EXPECT1(s, 1002, 3, 25);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[1,1,1,1,1,1,1,1,1]\n");
    EXPECT1(s, 3020, 3, 39);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2]  loc(\"a\":1:99999999999)\n");
    EXPECT1(s, 1004, 3, 37);
    free(s);
    s = with_body("  %0 = relu(%x) : f32[2x]\n");
    EXPECT1(s, 1004, 3, 23);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_corpus),
        cmocka_unit_test(test_reject_corpus),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_empty_and_header),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_huge_name),
        cmocka_unit_test(test_huge_comment_and_garbage),
        cmocka_unit_test(test_huge_dense),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_dimension_overflow),
        cmocka_unit_test(test_recovery_reports_each_line),
        cmocka_unit_test(test_error_cap),
        cmocka_unit_test(test_forward_and_undefined),
        cmocka_unit_test(test_declared_types_kept),
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_attribute_kinds),
        cmocka_unit_test(test_statement_errors),
        cmocka_unit_test(test_numbers_read_as_strtod),
        cmocka_unit_test(test_compact_and_spread_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
