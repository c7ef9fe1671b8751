/* The model language's compile-time semantics: helpers inlined with
 * keyword and default arguments, unrolled loops, constant ifs, tuple
 * returns, shapes, indexing and slicing, operators on tensors and numbers,
 * and how errors propagate (one mistake, one root cause).  Numeric results
 * are checked with the reference interpreter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/dsl.h"

static cv_module *compile(const char *src, cv_diag *d)
{
    cv_diag_init(d);
    return cv_dsl_parse_text(src, strlen(src), "t.cvl.py", d);
}

static cv_module *compile_ok(const char *src)
{
    cv_diag d;
    cv_module *m = compile(src, &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    cv_diag_free(&d);
    return m;
}

static int count_ops(const cv_func *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += strcmp(f->ops[i]->name, name) == 0;
    return n;
}

static void assert_out_type(const cv_func *f, int i, const char *want)
{
    char buf[128];
    cv_type_format(&f->out_types[i], buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* Runs f on one input of `dims` filled with 0, 1, 2, ...; checks output
 * `o` against want[]. */
static void assert_run(const cv_func *f, int rank, const int64_t *dims, int o, const double *want,
                       int64_t n_want)
{
    cv_tensor in, out[4];
    assert_int_equal(cv_tensor_alloc(&in, f->inputs[0]->type.dtype, rank, dims), 0);
    for (int64_t k = 0; k < in.numel; k++)
        cv_tensor_set(&in, k, (double)k);
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_interp_run(f, &in, 1, out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    assert_int_equal(out[o].numel, n_want);
    for (int64_t k = 0; k < n_want; k++)
        if (fabs(cv_tensor_get(&out[o], k) - want[k]) > 1e-6) {
            fprintf(stderr, "output %d[%lld] = %g, want %g\n", o, (long long)k, cv_tensor_get(&out[o], k),
                    want[k]);
            fail();
        }
    for (int i = 0; i < f->n_outputs; i++)
        cv_tensor_free(&out[i]);
    cv_tensor_free(&in);
    cv_diag_free(&d);
}

static void test_helpers_and_defaults(void **state)
{
    (void)state;
    cv_module *m = compile_ok(
        "import cuvil as cvl\n"
        "SCALE = 2\n"
        "def affine(x, scale=SCALE, shift=0.0):\n"
        "    return x * scale + shift\n"
        "def act(x, kind='relu'):\n"
        "    if kind == 'relu':\n"
        "        return cvl.relu(x)\n"
        "    elif kind == 'neg':\n"
        "        return -x\n"
        "    return x\n"
        "@cvl.model(input_shapes=[(2, 3)])\n"
        "def m(x):\n"
        "    a = affine(x)\n"                       /* 2x */
        "    b = affine(x, shift=1.0, scale=3)\n"   /* 3x + 1 */
        "    return act(a - b, kind='neg'), act(b)\n");
    const cv_func *f = m->funcs[0];
    assert_int_equal(count_ops(f, "relu"), 1);
    assert_int_equal(count_ops(f, "neg"), 1);
    int64_t dims[] = {2, 3};
    double want0[6], want1[6];
    for (int k = 0; k < 6; k++) {
        want0[k] = -(2.0 * k - (3.0 * k + 1));
        want1[k] = 3.0 * k + 1;
    }
    assert_run(f, 2, dims, 0, want0, 6);
    assert_run(f, 2, dims, 1, want1, 6);
    cv_module_free(m);
}

static void test_loops_and_constants(void **state)
{
    (void)state;
    cv_module *m = compile_ok(
        "from cuvil import relu, model\n"
        "import cuvil\n"
        "WIDTHS = [w * 2 for w in range(1, 4) if w != 2]\n"   /* [2, 6] */
        "assert WIDTHS == [2, 6] and -7 // 2 == -4 and -7 % 2 == 1 and 2 ** 10 == 1024\n"
        "assert (1 < 2 < 3) and not (3 < 2) and 'ab' + 'c' == 'abc' and (1, 2) + (3,) == (1, 2, 3)\n"
        "assert len(WIDTHS) == 2 and max(3, 9, 4) == 9 and sum(WIDTHS) == 8 and abs(-3) == 3\n"
        "assert [i for i, _ in enumerate('xy')] == [0, 1] and list(zip((1, 2), 'ab'))[1] == (2, 'b')\n"
        "if __name__ == '__main__':\n"
        "    print('not a model run')\n"
        "@model(input_shapes=[('N', 4)])\n"
        "def m(x):\n"
        "    total = 0\n"
        "    for i in range(10):\n"
        "        if i % 2:\n"
        "            continue\n"
        "        if i > 6:\n"
        "            break\n"
        "        total += i\n"                         /* 0+2+4+6 = 12 */
        "        x = relu(x)\n"
        "    else:\n"
        "        x = -x\n"                            /* skipped: the loop broke */
        "    assert total == 12\n"
        "    n = x.shape[1] + x.ndim\n"               /* 6 */
        "    return x * n\n");
    const cv_func *f = m->funcs[0];
    assert_int_equal(count_ops(f, "relu"), 4);
    assert_int_equal(count_ops(f, "neg"), 0);
    int64_t dims[] = {1, 4};
    double want[] = {0, 6, 12, 18};
    assert_run(f, 2, dims, 0, want, 4);
    cv_module_free(m);
}

static void test_indexing(void **state)
{
    (void)state;
    cv_module *m = compile_ok(
        "import cuvil as cvl\n"
        "@cvl.model(input_shapes=[(2, 3, 4)])\n"
        "def m(x):\n"
        "    a = x[1]\n"                 /* [3,4] */
        "    b = x[:, -1, ::2]\n"        /* [2,2] */
        "    c = x[..., 1:3]\n"          /* [2,3,2] */
        "    d = x[0].T\n"               /* [4,3] */
        "    return a, b, c, d\n");
    const cv_func *f = m->funcs[0];
    assert_out_type(f, 0, "f32[3,4]");
    assert_out_type(f, 1, "f32[2,2]");
    assert_out_type(f, 2, "f32[2,3,2]");
    assert_out_type(f, 3, "f32[4,3]");
    int64_t dims[] = {2, 3, 4};
    double a[12], b[] = {8, 10, 20, 22}, c[12], d[12];
    for (int k = 0; k < 12; k++)
        a[k] = 12 + k;
    for (int i = 0, k = 0; i < 6; i++)
        for (int j = 1; j < 3; j++)
            c[k++] = i * 4 + j;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            d[i * 3 + j] = j * 4 + i;
    assert_run(f, 3, dims, 0, a, 12);
    assert_run(f, 3, dims, 1, b, 4);
    assert_run(f, 3, dims, 2, c, 12);
    assert_run(f, 3, dims, 3, d, 12);
    cv_module_free(m);
}

static void test_ops_and_attributes(void **state)
{
    (void)state;
    cv_module *m = compile_ok(
        "import cuvil as cvl\n"
        "@cvl.model(input_shapes=[(2, 4)])\n"
        "def m(x):\n"
        "    a, b = cvl.split(x, axis=1, sizes=[1, 3])\n"
        "    y = cvl.concat([b, a], axis=1)\n"
        "    z = cvl.reduce_sum(y, axes=1, keepdims=False)\n"
        "    w = cvl.cast(y ** 2, to=cvl.int32)\n"
        "    return z, cvl.cast(w, to='float32') / 2, cvl.clip(x, min=1, max=2.5)\n");
    const cv_func *f = m->funcs[0];
    assert_out_type(f, 0, "f32[2]");
    int64_t dims[] = {2, 4};
    double z[] = {6, 22}, w[] = {0.5, 2, 4.5, 0, 12.5, 18, 24.5, 8}, c[] = {1, 1, 2, 2.5, 2.5, 2.5, 2.5, 2.5};
    assert_run(f, 2, dims, 0, z, 2);
    assert_run(f, 2, dims, 1, w, 8);
    assert_run(f, 2, dims, 2, c, 8);
    cv_module_free(m);
}

static void test_weightless_model_with_closure(void **state)
{
    (void)state;
    cv_module *m = compile_ok(
        "import cuvil as cvl\n"
        "def make(k):\n"
        "    def scale(x):\n"
        "        return x * k\n"
        "    return scale\n"
        "triple = make(3)\n"
        "@cvl.model(input_shapes=[('N', 2)], dtype='int64')\n"
        "def m(x):\n"
        "    return triple(x) - 1\n");
    const cv_func *f = m->funcs[0];
    assert_out_type(f, 0, "i64[N,2]");
    int64_t dims[] = {1, 2};
    double want[] = {-1, 2};
    assert_run(f, 2, dims, 0, want, 2);
    cv_module_free(m);
}

/* ---- error propagation ---------------------------------------------------- */

static int roots(const cv_diag *d)
{
    int n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->v[i].root_id == 0;
    return n;
}

static void assert_errors(const char *src, int n_diags, int n_roots, int first_code)
{
    cv_diag d;
    cv_module *m = compile(src, &d);
    if (d.n != n_diags || roots(&d) != n_roots)
        cv_diag_print(&d, stderr, false);
    assert_null(m);
    assert_int_equal(d.n, n_diags);
    assert_int_equal(roots(&d), n_roots);
    assert_int_equal(d.v[0].code, first_code);
    cv_diag_free(&d);
}

static void test_cascades(void **state)
{
    (void)state;
    /* An undefined name used again, and values computed from it: one error. */
    assert_errors("import cuvil as cvl\n"
                  "@cvl.model(input_shapes=[('N', 4)])\n"
                  "def m(x):\n"
                  "    y = cvl.relu(wrong)\n"
                  "    z = cvl.sigmoid(wrong) + y\n"
                  "    return z @ y.T, y.shape[0]\n", 1, 1, 2101);
    /* A helper with a mistake called in a loop and twice more: one error. */
    assert_errors("import cuvil as cvl\n"
                  "def f(x):\n"
                  "    return cvl.relu(x, alpah=1)\n"
                  "@cvl.model(input_shapes=[('N', 4)])\n"
                  "def m(x):\n"
                  "    for i in range(3):\n"
                  "        x = f(x)\n"
                  "    return f(f(x))\n", 1, 1, 2104);
    /* A data-dependent if: names it assigns are poisoned, not undefined. */
    assert_errors("import cuvil as cvl\n"
                  "@cvl.model(input_shapes=[('N', 4)])\n"
                  "def m(x):\n"
                  "    if x:\n"
                  "        y = x\n"
                  "    else:\n"
                  "        y = -x\n"
                  "    return y\n", 1, 1, 4102);
    /* A missing weights file: every use of p is a consequence. */
    assert_errors("import cuvil as cvl\n"
                  "@cvl.model(input_shapes=[('N', 4)], weights='none.safetensors')\n"
                  "def m(x, p):\n"
                  "    x = x @ p.a.weight.T + p.a.bias\n"
                  "    return x @ p.b.weight.T\n", 1, 1, 3202);
    /* A shape error: later ops on the result stay silent. */
    assert_errors("import cuvil as cvl\n"
                  "@cvl.model(input_shapes=[('N', 4), ('N', 3)])\n"
                  "def m(x, y):\n"
                  "    z = x + y\n"
                  "    return cvl.relu(z) @ z.T\n", 1, 1, 3002);
    /* Syntax errors stop before analysis (no cascade of undefined names). */
    assert_errors("import cuvil as cvl\n"
                  "@cvl.model(input_shapes=[('N', 4)])\n"
                  "def m(x):\n"
                  "    y = = x\n"
                  "    return y\n", 1, 1, 1002);
}

static void test_independent_errors(void **state)
{
    (void)state;
    /* Three unrelated mistakes in one model: three roots. */
    assert_errors("import cuvil as cvl\n"
                  "import numpy\n"
                  "@cvl.model(input_shapes=[('N', 4)])\n"
                  "def m(x):\n"
                  "    a = cvl.relu(x, 3)\n"
                  "    b = x[0, 1, 2]\n"
                  "    return a + b\n", 3, 3, 4109);
}

static void test_ast_text(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    const char *src = "x = 1\n";
    char *t = cv_dsl_ast_text(src, strlen(src), "a.cvl.py", &d);
    assert_non_null(t);
    assert_string_equal(t, "(Module @1:1-2:1 body:[(Assign @1:1-1:6 a:(Constant @1:5-1:6 1) "
                           "items:[(Name[x] @1:1-1:2)])])");
    free(t);
    cv_diag_free(&d);
}

static void test_entry_points(void **state)
{
    (void)state;
    assert_true(cv_dsl_matches("models/kws.cvl.py", "", 0));
    assert_false(cv_dsl_matches("model.py", "", 0));
    assert_false(cv_dsl_matches("model.onnx", "", 0));
    cv_diag d;
    cv_diag_init(&d);
    assert_null(cv_dsl_load("/nonexistent-dir/none.cvl.py", &d));
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].code, 9004);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers_and_defaults),
        cmocka_unit_test(test_loops_and_constants),
        cmocka_unit_test(test_indexing),
        cmocka_unit_test(test_ops_and_attributes),
        cmocka_unit_test(test_weightless_model_with_closure),
        cmocka_unit_test(test_cascades),
        cmocka_unit_test(test_independent_errors),
        cmocka_unit_test(test_ast_text),
        cmocka_unit_test(test_entry_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
