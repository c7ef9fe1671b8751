/* The CU-IR verifier: one test per diagnostic code it reports, each
 * asserting the code and file:line:col; every independent error in one run;
 * errors derived from an earlier one linked to it (or silent); strict mode;
 * modules made with the builder API. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cuirtest.h"

typedef struct vcase {
    const char *name;
    unsigned flags;
    const char *text;
    cv_cuirtest_want want[6];
    int n_want;
    const char *note;   /* text one note of the first error must contain */
} vcase;

#define M1(sig, out, body) "cuir 1\nmodel @m(" sig ") -> (" out ") {\n" body "}\n"
#define W(...) .want = {__VA_ARGS__}, .n_want = sizeof((cv_cuirtest_want[]){__VA_ARGS__}) / sizeof(cv_cuirtest_want)

static const vcase cases[] = {
    {"CV2001 undefined name", 0,
     M1("%input: f32[2]", "f32[2]", "  %0 = relu(%inptu) : f32[2]\n  return %0\n"),
     W({2001, 3, 13}), "did you mean %input"},
    {"CV2001 undefined return value", 0,
     M1("%x: f32[2]", "f32[2]", "  return %y\n"), W({2001, 3, 10}), "did you mean %x"},
    {"CV2002 defined twice", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = relu(%x) : f32[2]\n  %0 = neg(%x) : f32[2]\n  return %0\n"),
     W({2002, 4, 3}), "first defined at line 3, column 3"},
    {"CV2002 input and param share a name", 0,
     M1("%x: f32[2]", "f32[2]", "  param %x: f32[2] = dense(1.0, 2.0)\n  return %x\n"),
     W({2002, 3, 9}), NULL},
    {"CV2003 use before definition", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = add(%x, %1) : f32[2]\n  %1 = relu(%x) : f32[2]\n  return %0\n"),
     W({2003, 3, 3}), "defined at line 4"},
    {"CV2004 unknown attribute", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = relu(%x) {inplace=1} : f32[2]\n  return %0\n"),
     W({2004, 3, 18}), NULL},
    {"CV2005 attribute kind", 0,
     M1("%x: f32[2,3]", "f32[2,3]", "  %0 = softmax(%x) {axis=1.5} : f32[2,3]\n  return %0\n"),
     W({2005, 3, 21}), NULL},
    {"CV2006 missing attribute", 0,
     M1("%x: f32[2]", "i32[2]", "  %0 = cast(%x) : i32[2]\n  return %0\n"), W({2006, 3, 3}), NULL},
    {"CV2007 operand count", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = relu(%x, %x) : f32[2]\n  return %0\n"), W({2007, 3, 3}), NULL},
    {"CV2008 result count", 0,
     M1("%x: f32[2]", "f32[2]", "  %0, %1 = relu(%x) : f32[2], f32[2]\n  return %0\n"),
     W({2008, 3, 3}), NULL},
    {"CV2009 operand dtypes differ", 0,
     M1("%x: f32[2], %i: i32[2]", "f32[2]", "  %0 = add(%x, %i) : f32[2]\n  return %0\n"),
     W({2009, 3, 3}), NULL},
    {"CV2011 declared dtype", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = relu(%x) : i32[2]\n  %1 = neg(%x) : f32[2]\n  return %1\n"),
     W({2011, 3, 3}), NULL},
    {"CV2012 return count", 0,
     M1("%x: f32[2]", "f32[2], f32[2]", "  return %x\n"), W({2012, 3, 3}), NULL},
    {"CV2012 return type", 0,
     M1("%x: f32[2]", "f32[3]", "  %0 = relu(%x) : f32[2]\n  return %0\n"), W({2012, 4, 3}), NULL},
    {"CV2013 cycle", 0,
     M1("%x: f32[2]", "f32[2]",
        "  %a = add(%x, %b) : f32[2]\n  %b = relu(%a) : f32[2]\n  return %b\n"),
     W({2013, 3, 3}), "defined at line 4"},
    {"CV2013 self loop", 0,
     M1("%x: f32[2]", "f32[2]", "  %a = add(%x, %a) : f32[2]\n  return %a\n"), W({2013, 3, 3}), NULL},
    {"CV2014 empty weights name", 0,
     M1("%x: f32[2]", "f32[2]",
        "  param %w: f32[2] = weights(\"w.safetensors\", \"\")\n  %0 = add(%x, %w) : f32[2]\n  return %0\n"),
     W({2014, 3, 3}), NULL},
    {"CV2015 dense count", 0,
     M1("%x: f32[3]", "f32[3]",
        "  param %c: f32[3] = dense(1.0, 2.0)\n  %0 = add(%x, %c) : f32[3]\n  return %0\n"),
     W({2015, 3, 3}), NULL},
    {"CV2015 dense needs a static shape", 0,
     M1("%x: f32[N]", "f32[N]",
        "  param %c: f32[N] = dense(1.0)\n  %0 = add(%x, %c) : f32[N]\n  return %0\n"),
     W({2015, 3, 3}), NULL},
    {"CV2016 weights path escapes", 0,
     M1("%x: f32[2]", "f32[2]",
        "  param %w: f32[2] = weights(\"../other/w.safetensors\", \"w\")\n"
        "  param %v: f32[2] = weights(\"/etc/w.safetensors\", \"v\")\n"
        "  %0 = add(%x, %w) : f32[2]\n  %1 = add(%0, %v) : f32[2]\n  return %1\n"),
     W({2016, 3, 3}, {2016, 4, 3}), NULL},
    {"CV2017 attribute value", 0,
     M1("%x: f32[2,3]", "f32[2,3]", "  %0 = gelu(%x) {approximate=\"fast\"} : f32[2,3]\n  return %0\n"),
     W({2017, 3, 3}), NULL},
    {"CV2020 unused value (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[2]", "f32[2]", "  %0 = relu(%x) : f32[2]\n  %1 = neg(%x) : f32[2]\n  return %1\n"),
     W({2020, 3, 3}), NULL},
    {"CV2020 unused input (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[2], %unused: f32[2]", "f32[2]", "  %0 = relu(%x) : f32[2]\n  return %0\n"),
     W({2020, 2, 22}), NULL},
    {"CV2020 split partly used is fine (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[4]", "f32[2]",
        "  %a, %b = split(%x) {axis=0, sizes=[2,2]} : f32[2], f32[2]\n  return %b\n"),
     .n_want = 0, NULL},
    {"CV2021 dead param (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[2]", "f32[2]",
        "  param %p: f32[2] = dense(1.0, 2.0)\n  %0 = relu(%x) : f32[2]\n  return %0\n"),
     W({2021, 3, 3}), NULL},
    {"CV2022 shared weights (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[2]", "f32[2]",
        "  param %a: f32[2] = weights(\"w.safetensors\", \"k\")\n"
        "  param %b: f32[2] = weights(\"w.safetensors\", \"k\")\n"
        "  %0 = add(%x, %a) : f32[2]\n  %1 = add(%0, %b) : f32[2]\n  return %1\n"),
     W({2022, 4, 3}), NULL},
    {"CV2022 duplicate model (strict)", CV_VERIFY_STRICT,
     "cuir 1\nmodel @m() -> () {\n  return\n}\n\nmodel @m() -> () {\n  return\n}\n",
     W({2022, 6, 1}), "first defined at line 2"},
    {"CV2023 constant output (strict)", CV_VERIFY_STRICT,
     M1("%x: f32[2]", "f32[2], f32[2]",
        "  param %c: f32[2] = dense(1.0, 2.0)\n  %0 = neg(%c) : f32[2]\n  %1 = relu(%x) : f32[2]\n"
        "  return %1, %0\n"),
     W({2023, 6, 3}), NULL},
    {"CV3001 rank", 0,
     M1("%x: f32[2,3]", "f32[2,3]", "  %0 = conv2d(%x, %x) : f32[2,3]\n  return %0\n"),
     W({3001, 3, 3}), NULL},
    {"CV3002 broadcast", 0,
     M1("%x: f32[2,3], %y: f32[4]", "f32[2,3]", "  %0 = add(%x, %y) : f32[2,3]\n  return %0\n"),
     W({3002, 3, 3}), NULL},
    {"CV3003 declared shape", 0,
     M1("%x: f32[N,3]", "f32[N,3]", "  %0 = relu(%x) : f32[N,4]\n  return %x\n"), W({3003, 3, 3}), NULL},
    {"CV3004 element count overflow", 0,
     M1("%x: f32[2]", "f32[2]",
        "  param %p: f32[4294967296,4294967297] = weights(\"w.safetensors\", \"p\")\n  return %x\n"),
     W({3004, 3, 9}), NULL},
    {"CV3005 negative dimension", 0,
     M1("%x: f32[-1,3]", "f32[2]", "  %0 = relu(%x) : f32[2]\n  return %0\n"), W({3005, 2, 10}), NULL},
    {"CV3006 axis", 0,
     M1("%x: f32[2,3]", "f32[2,3]", "  %0 = softmax(%x) {axis=5} : f32[2,3]\n  return %0\n"),
     W({3006, 3, 3}), NULL},
    {"CV3007 shape attribute", 0,
     M1("%x: f32[1,1,4,4], %w: f32[1,1,3,3]", "f32[1,1,2,2]",
        "  %0 = conv2d(%x, %w) {stride=[0,1]} : f32[1,1,2,2]\n  return %0\n"),
     W({3007, 3, 3}), NULL},
    {"CV3008 reshape element count", 0,
     M1("%x: f32[2,3]", "f32[5]", "  %0 = reshape(%x) {shape=[5]} : f32[5]\n  return %0\n"),
     W({3008, 3, 3}), NULL},
    {"CV3101 channels", 0,
     M1("%x: f32[1,3,4,4], %w: f32[2,4,3,3]", "f32[1,2,2,2]",
        "  %0 = conv2d(%x, %w) : f32[1,2,2,2]\n  return %0\n"),
     W({3101, 3, 3}), NULL},
    {"CV3102 inner dimensions", 0,
     M1("%x: f32[2,3], %w: f32[4,5]", "f32[2,5]", "  %0 = matmul(%x, %w) : f32[2,5]\n  return %0\n"),
     W({3102, 3, 3}), NULL},
    {"CV4001 unknown op", 0,
     M1("%x: f32[2]", "f32[2]", "  %0 = swish(%x) : f32[2]\n  return %0\n"), W({4001, 3, 3}), NULL},
    {"CV4002 unsupported dtype", 0,
     M1("%x: bool[2]", "bool[2]", "  %0 = sqrt(%x) : bool[2]\n  return %0\n"), W({4002, 3, 3}), NULL},
    /* Several independent errors, one run; what follows from an error is silent. */
    {"independent errors all reported", 0,
     M1("%x: f32[N,3,8,8], %y: f32[N,4]", "f32[N,4], f32[N,3,8,8]",
        "  param %w: f32[2,4,3,3] = weights(\"w.safetensors\", \"w\")\n"
        "  %0 = conv2d(%x, %w) : f32[N,2,6,6]\n"      /* CV3101 */
        "  %1 = relu(%0) : f32[N,2,6,6]\n"            /* silent: %0 unknown */
        "  %2 = swish(%y) : f32[N,4]\n"               /* CV4001 */
        "  %3 = neg(%2) : f32[N,4]\n"                 /* silent */
        "  %4 = sigmoid(%x) : f32[N,3,8,9]\n"         /* CV3003 */
        "  %5 = add(%1, %nope) : f32[N,2,6,6]\n"      /* CV2001, nothing else */
        "  return %3, %4\n"),
     W({3101, 4, 3}, {4001, 6, 3}, {3003, 8, 3}, {2001, 9, 16}), NULL},
};

static void run_case(void **state)
{
    const vcase *c = *state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(c->text, strlen(c->text), "v.cuir", &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    int rc = cv_verify(m, c->flags, &d);
    assert_int_equal(rc, c->n_want ? -1 : 0);
    assert_true(cv_cuirtest_match(c->name, &d, c->want, c->n_want));
    for (int i = 0; i < d.n; i++)
        assert_string_equal(d.v[i].span.file, "v.cuir");
    if (c->note) {
        bool found = false;
        for (int i = 0; i < d.v[0].n_notes; i++)
            found |= strstr(d.v[0].notes[i], c->note) != NULL;
        if (!found)
            cv_diag_print(&d, stderr, false);
        assert_true(found);
    }
    cv_module_free(m);
    cv_diag_free(&d);
}

/* ---- roots ------------------------------------------------------------- */

static cv_diag verify_text(const char *text, unsigned flags)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), "v.cuir", &d);
    assert_non_null(m);
    cv_verify(m, flags, &d);
    cv_module_free(m);
    return d;
}

static void test_derived_errors_link_to_root(void **state)
{
    (void)state;
    cv_diag d = verify_text(M1("%x: f32[N,3]", "f32[N,4]",
                               "  %0 = relu(%x) : f32[N,4]\n"     /* declared wrong: the root */
                               "  %1 = neg(%0) : f32[N,4]\n"      /* follows %0's declaration */
                               "  %2 = add(%1, %x) : f32[N,3]\n"  /* fine against the truth */
                               "  return %1\n"), 0);
    static const cv_cuirtest_want want[] = {{3003, 3, 3}, {3003, 4, 3}, {2012, 6, 3}};
    assert_true(cv_cuirtest_match("roots", &d, want, 3));
    assert_int_equal(d.v[0].root_id, 0);
    assert_int_equal(d.v[1].root_id, d.v[0].id);
    assert_int_equal(d.v[2].root_id, d.v[0].id);
    cv_diag_free(&d);
}

static void test_undefined_reported_once(void **state)
{
    (void)state;
    cv_diag d = verify_text(M1("%x: f32[2]", "f32[2]",
                               "  %0 = add(%x, %w) : f32[2]\n  %1 = mul(%0, %w) : f32[2]\n"
                               "  return %w\n"), 0);
    static const cv_cuirtest_want want[] = {{2001, 3, 16}};
    assert_true(cv_cuirtest_match("once", &d, want, 1));
    cv_diag_free(&d);
}

/* ---- modules from the builder -------------------------------------------- */

static void test_builder_modules(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_module_new("api.cuir");
    cv_func *f = cv_func_new(m, "api");
    cv_type t = {.dtype = CV_F32, .shape = {.rank = 1, .d = {{4, NULL}}}};
    cv_value *x = cv_func_add_input(f, "x", &t);
    cv_op *r = cv_op_new(f, "relu", &x, 1);
    assert_int_equal(cv_op_finish(r, 1, &d), 0);
    cv_func_add_output_type(f, &t);
    cv_func_set_returns(f, &r->results[0], 1);
    assert_int_equal(cv_verify(m, CV_VERIFY_STRICT, &d), 0);
    assert_int_equal(d.n, 0);

    /* A missing operand and a type outside CU-IR. */
    cv_value *none = NULL;
    cv_op *bad = cv_op_new(f, "neg", &none, 1);
    cv_op_finish_declared(bad, 1, NULL, &t);
    cv_type t64 = t;
    t64.dtype = CV_DT_COUNT;
    cv_func_add_input(f, "y", &t64);
    assert_int_equal(cv_verify(m, 0, &d), -1);
    if (d.n_errors != 2)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 2);
    assert_int_equal(d.v[0].code, 2010);
    assert_int_equal(d.v[1].code, 2001);
    assert_string_equal(d.v[1].span.file, "api.cuir");
    cv_module_free(m);
    cv_diag_free(&d);
}

int main(void)
{
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N + 3];
    for (int i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){.name = cases[i].name, .test_func = run_case,
                                       .initial_state = (void *)&cases[i]};
    tests[N] = (struct CMUnitTest)cmocka_unit_test(test_derived_errors_link_to_root);
    tests[N + 1] = (struct CMUnitTest)cmocka_unit_test(test_undefined_reported_once);
    tests[N + 2] = (struct CMUnitTest)cmocka_unit_test(test_builder_modules);
    return _cmocka_run_group_tests("test_verify", tests, N + 3, NULL, NULL);
}
