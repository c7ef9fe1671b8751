/* The model language tokenizer: line structure, literals, positions and
 * coded errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/lexer.h"

typedef struct lexed {
    cv_arena arena;
    cv_diag diag;
    dsl_tokens toks;
    int rc;
} lexed;

static lexed *lex(const char *src, size_t len)
{
    lexed *l = calloc(1, sizeof *l);
    cv_arena_init(&l->arena);
    cv_diag_init(&l->diag);
    l->rc = dsl_lex(src, len, "t.cvl.py", &l->arena, &l->diag, &l->toks);
    return l;
}

static lexed *lexs(const char *src) { return lex(src, strlen(src)); }

static void done(lexed *l)
{
    cv_diag_free(&l->diag);
    cv_arena_free(&l->arena);
    free(l);
}

/* One letter per token: N name, K keyword, I int, F float, J imag, S string,
 * O operator, L newline, > indent, < dedent, $ end. */
static void kinds(const lexed *l, char *buf, size_t size)
{
    static const char letter[] = {'$', 'L', '>', '<', 'N', 'K', 'I', 'F', 'J', 'S', 'O'};
    size_t k = 0;
    for (int i = 0; i < l->toks.n && k + 1 < size; i++)
        buf[k++] = letter[l->toks.v[i].kind];
    buf[k] = 0;
}

static void assert_kinds(const char *src, const char *want)
{
    lexed *l = lexs(src);
    char got[256];
    kinds(l, got, sizeof got);
    assert_string_equal(got, want);
    assert_int_equal(l->rc, 0);
    done(l);
}

/* The first diagnostic has this code at line:col. */
static void assert_error(const char *src, size_t len, int code, int line, int col)
{
    lexed *l = lex(src, len);
    assert_int_equal(l->rc, -1);
    assert_true(l->diag.n >= 1);
    assert_int_equal(l->diag.v[0].code, code);
    assert_int_equal(l->diag.v[0].span.line, line);
    assert_int_equal(l->diag.v[0].span.col, col);
    assert_non_null(l->diag.v[0].path);
    assert_true(strncmp(l->diag.v[0].path, "Module>", 7) == 0);
    assert_int_equal(l->toks.v[l->toks.n - 1].kind, DSL_T_EOF);
    done(l);
}

static void test_indentation(void **state)
{
    (void)state;
    assert_kinds("def f(x):\n    return x\n", "KNONOOL>KNL<$");
    assert_kinds("if a:\n    if b:\n        c\n    d\ne\n", "KNOL>KNOL>NL<NL<NL$");
    /* Blank lines and comment-only lines make no tokens, whatever their indent. */
    assert_kinds("a\n\n      # note\n   \nb  # tail\n", "NLNL$");
    /* A missing final newline still ends the line and closes every block. */
    assert_kinds("if a:\n  b", "KNOL>NL<$");
    assert_kinds("a\r\nb\r\n", "NLNL$");
}

static void test_brackets_and_continuations(void **state)
{
    (void)state;
    /* No NEWLINE or INDENT inside brackets. */
    assert_kinds("x = (1,\n        2)\ny\n", "NOOIOIOLNL$");
    assert_kinds("x = [\n]\n", "NOOOL$");
    assert_kinds("x = 1 + \\\n    2\n", "NOIOIL$");
}

static void test_ints(void **state)
{
    (void)state;
    lexed *l = lexs("0 7 0x_FF 0o17 0b1010 1_000 00 9223372036854775807\n");
    int64_t want[] = {0, 7, 255, 15, 10, 1000, 0, INT64_MAX};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(l->toks.v[i].kind, DSL_T_INT);
        assert_true(l->toks.v[i].ival == want[i]);
    }
    assert_int_equal(l->rc, 0);
    done(l);
}

static void test_floats(void **state)
{
    (void)state;
    lexed *l = lexs("1.5e-3 .5 1. 1e5 1_0.2_5 2j 1.5E+2\n");
    double want[] = {1.5e-3, 0.5, 1.0, 1e5, 10.25, 2.0, 150.0};
    dsl_tok_kind wk[] = {DSL_T_FLOAT, DSL_T_FLOAT, DSL_T_FLOAT, DSL_T_FLOAT, DSL_T_FLOAT,
                         DSL_T_IMAG, DSL_T_FLOAT};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(l->toks.v[i].kind, wk[i]);
        assert_true(fabs(l->toks.v[i].fval - want[i]) < 1e-12);
    }
    assert_int_equal(l->rc, 0);
    done(l);
}

static void assert_string_token(const char *src, const char *want, size_t want_len, unsigned flags)
{
    lexed *l = lexs(src);
    assert_int_equal(l->rc, 0);
    assert_int_equal(l->toks.v[0].kind, DSL_T_STRING);
    assert_int_equal(l->toks.v[0].slen, want_len);
    assert_memory_equal(l->toks.v[0].sval, want, want_len);
    assert_int_equal(l->toks.v[0].sflags, flags);
    done(l);
}

static void test_strings(void **state)
{
    (void)state;
    assert_string_token("'a\\n\\t\\\\'", "a\n\t\\", 4, 0);
    assert_string_token("\"it's\"", "it's", 4, 0);
    assert_string_token("r'\\n\\''", "\\n\\'", 4, DSL_STR_RAW);
    assert_string_token("'''tri\nple'''", "tri\nple", 7, 0);
    assert_string_token("\"\"\"a \" b\"\"\"", "a \" b", 5, 0);
    assert_string_token("'\\x41\\u00e9\\101\\U0001F600'", "A\xc3\xa9" "A\xf0\x9f\x98\x80", 8, 0);
    assert_string_token("b'\\x00\\xff'", "\0\xff", 2, DSL_STR_BYTES);
    assert_string_token("'a\\\nb'", "ab", 2, 0);
    assert_string_token("f'x'", "x", 1, DSL_STR_FORMAT);
    assert_string_token("'h\xc3\xa9'", "h\xc3\xa9", 3, 0);
}

static void test_positions(void **state)
{
    (void)state;
    /* Columns count code points: the é is one column. */
    lexed *l = lexs("s = 'é'  ; xy\n    \n  \"\"\"a\nbc\"\"\"\n");
    /* s = 'é' ; xy NEWLINE ... */
    const dsl_tok *s = &l->toks.v[2], *xy = &l->toks.v[4];
    assert_int_equal(s->line, 1);
    assert_int_equal(s->col, 5);
    assert_int_equal(s->end_col, 8);
    assert_int_equal(xy->col, 12);
    assert_int_equal(xy->end_col, 14);
    /* The triple-quoted string spans two lines (it is indented: INDENT first). */
    const dsl_tok *tq = &l->toks.v[7];
    assert_int_equal(tq->kind, DSL_T_STRING);
    assert_int_equal(tq->line, 3);
    assert_int_equal(tq->col, 3);
    assert_int_equal(tq->end_line, 4);
    assert_int_equal(tq->end_col, 6);
    done(l);
}

static void test_operators_and_keywords(void **state)
{
    (void)state;
    lexed *l = lexs("a **= b // c -> d := e ... f != g @ h\n");
    int want[] = {DSL_OP_POWEQ, DSL_OP_FLOORDIV, DSL_OP_ARROW, DSL_OP_WALRUS, DSL_OP_ELLIPSIS,
                  DSL_OP_NE, DSL_OP_AT};
    for (int i = 0; i < 7; i++)
        assert_int_equal(l->toks.v[1 + 2 * i].sub, want[i]);
    done(l);
    l = lexs("not None is lambda\n");
    assert_int_equal(l->toks.v[0].sub, DSL_KW_NOT);
    assert_int_equal(l->toks.v[1].sub, DSL_KW_NONE);
    assert_int_equal(l->toks.v[2].sub, DSL_KW_IS);
    assert_int_equal(l->toks.v[3].sub, DSL_KW_LAMBDA);
    done(l);
}

static void test_errors(void **state)
{
    (void)state;
    assert_error("if a:\n        b\n\tc\n", 19, 1201, 3, 1);
    assert_error("if a:\n    b\n  c\n", 16, 1202, 3, 3);
    assert_error("a = 1\nb = 'x\0'\n", 14, 1006, 2, 7);
    assert_error("a = 1\nb = '\xff'\n", 13, 1005, 2, 6);
    assert_error("x = 'abc\n", 9, 1003, 1, 5);
    assert_error("x = '''abc\n\n", 12, 1003, 1, 5);
    assert_error("x = '\\q'\n", 9, 1012, 1, 6);
    assert_error("x = '\\x4'\n", 10, 1012, 1, 6);
    assert_error("x = 012\n", 8, 1004, 1, 5);
    assert_error("x = 1__0\n", 9, 1004, 1, 5);
    assert_error("x = 0x\n", 7, 1004, 1, 5);
    assert_error("x = 12abc\n", 10, 1004, 1, 5);
    assert_error("x = 99999999999999999999\n", 25, 1004, 1, 5);
    assert_error("x = a $ b\n", 10, 1001, 1, 7);
    assert_error("x = \xc3\xa9\n", 7, 1001, 1, 5);
    assert_error("x = a)\n", 7, 1206, 1, 6);
    assert_error("x = (a]\n", 8, 1206, 1, 7);
    assert_error("x = (a\ny = 2\n", 13, 1206, 1, 5);
    assert_error("x = a \\ b\n", 10, 1207, 1, 7);
    assert_error("x = a\\", 6, 1207, 1, 6);
}

static void test_limits(void **state)
{
    (void)state;
    size_t n = DSL_MAX_FILE_BYTES + 1;
    char *big = malloc(n);
    memset(big, ' ', n);
    assert_error(big, n, 1011, 1, 1);
    free(big);

    char nest[DSL_MAX_BRACKETS + 8];
    memset(nest, '(', sizeof nest);
    assert_error(nest, sizeof nest, 1007, 1, DSL_MAX_BRACKETS + 1);

    size_t ln = DSL_MAX_TOKEN_BYTES + 16;
    char *name = malloc(ln);
    memset(name, 'a', ln);
    assert_error(name, ln, 1009, 1, 1);
    free(name);

    /* Indentation deeper than CPython's 100 levels. */
    char *deep = malloc(200 * 110);
    size_t k = 0;
    for (int i = 0; i < 105; i++) {
        for (int j = 0; j < i; j++)
            deep[k++] = ' ';
        memcpy(deep + k, "if a:\n", 6);
        k += 6;
    }
    assert_error(deep, k, 1007, 101, 101);
    free(deep);
}

static void test_error_budget(void **state)
{
    (void)state;
    /* A file of garbage stops after DSL_MAX_LEX_ERRORS errors. */
    char junk[400];
    memset(junk, '$', sizeof junk);
    lexed *l = lex(junk, sizeof junk);
    assert_int_equal(l->diag.n, DSL_MAX_LEX_ERRORS);
    assert_int_equal(l->toks.v[l->toks.n - 1].kind, DSL_T_EOF);
    done(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_indentation),
        cmocka_unit_test(test_brackets_and_continuations),
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_operators_and_keywords),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
