/* Symbolic dimension expressions (ir/dimexpr.c): one canonical form (equal
 * expressions are equal texts), arithmetic, parsing, evaluation against
 * brute force at many symbol values, and the CU-IR text round trip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/dsl.h"
#include "compiler-core/ir/ir.h"

static cv_module *M;

static int setup(void **state)
{
    (void)state;
    M = cv_module_new("dimexpr");
    return M ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cv_module_free(M);
    return 0;
}

static cv_dim P(const char *s)
{
    cv_dim d = {0};
    const char *err = NULL;
    size_t at = 0;
    if (cv_dim_parse(M, s, strlen(s), &d, &err, &at))
        fail_msg("parse %s: %s at %zu", s, err, at);
    return d;
}

static const char *text(cv_dim d)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    cv_dim_format(d, b, 256);
    return b;
}

static void test_canonical_equal_forms(void **state)
{
    (void)state;
    const char *same[][2] = {
        {"N + L", "L + N"},
        {"2*N + 3 - N", "N + 3"},
        {"(N + 1)*(N - 1)", "N*N - 1"},
        {"N*L*2", "2*L*N"},
        {"(L + 1) floordiv 2", "(1 + L) floordiv 2"},
        {"L ceildiv 2", "(L + 1) floordiv 2"},
        {"(4*L + 6) floordiv 2", "2*L + 3"},
        {"(3*L + 1) floordiv 2", "L + (L + 1) floordiv 2"},
        {"(2*N + L) mod 2", "L mod 2"},
        {"min(L, N)", "min(N, L)"},
        {"max(L + 1, L)", "L + 1"},
        {"min(L + N, L)", "L"},
        {"N*L floordiv L", "N"},
        {"(N*L + 4*L) floordiv L", "N + 4"},
        {"L - L", "0"},
        {"-(N - 3) + N", "3"},
        {"(((L - 1) floordiv 2) + 1)", "(L + 1) floordiv 2"},
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        cv_dim a = P(same[i][0]), b = P(same[i][1]);
        if (!cv_dim_equal(a, b))
            fail_msg("%s -> %s but %s -> %s", same[i][0], text(a), same[i][1], text(b));
    }
    /* Different expressions stay different, and bare symbols stay symbols. */
    assert_false(cv_dim_equal(P("L floordiv 2"), P("(L + 1) floordiv 2")));
    assert_false(cv_dim_equal(P("N + 1"), P("N")));
    cv_dim n = P("N");
    assert_true(cv_dim_is_symbol(n));
    assert_string_equal(n.sym, "N");
    cv_dim q = P("\"batch size\"");
    assert_true(cv_dim_is_symbol(q));
    assert_string_equal(q.sym, "batch size");
    cv_dim e = P("\"batch size\" + 1");
    assert_true(cv_dim_is_expr(e));
    assert_string_equal(e.sym, "\"batch size\" + 1");
    assert_true(P("7 floordiv 2").sym == NULL && P("7 floordiv 2").n == 3);
    assert_string_equal(text(P("(L+1) floordiv 2")), "(L + 1) floordiv 2");
    assert_string_equal(text(P("N*((L+1) floordiv 2)")), "((L + 1) floordiv 2)*N");
}

static void test_arith_api(void **state)
{
    (void)state;
    cv_dim n = P("N"), l = P("L"), r;
    assert_int_equal(cv_dim_mul(M, n, l, &r), 0);
    assert_int_equal(cv_dim_arith(M, CV_DIM_FLOORDIV, r, l, &r), 0);
    assert_true(cv_dim_equal(r, n));
    assert_int_equal(cv_dim_add(M, l, (cv_dim){-1, NULL}, &r), 0);
    assert_int_equal(cv_dim_arith(M, CV_DIM_FLOORDIV, r, (cv_dim){2, NULL}, &r), 0);
    assert_int_equal(cv_dim_add(M, r, (cv_dim){1, NULL}, &r), 0);
    assert_true(cv_dim_equal(r, P("(L + 1) floordiv 2")));
    /* Not expressible: zero or non-dividing symbolic divisors, overflow. */
    assert_int_equal(cv_dim_arith(M, CV_DIM_FLOORDIV, l, (cv_dim){0, NULL}, &r), -1);
    assert_int_equal(cv_dim_arith(M, CV_DIM_FLOORDIV, n, l, &r), -1);
    assert_int_equal(cv_dim_mul(M, P("9000000000000000000*N"), (cv_dim){4, NULL}, &r), -1);
    /* Integers need no module. */
    assert_int_equal(cv_dim_arith(NULL, CV_DIM_MOD, (cv_dim){-7, NULL}, (cv_dim){3, NULL}, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(cv_dim_arith(NULL, CV_DIM_CEILDIV, (cv_dim){7, NULL}, (cv_dim){2, NULL}, &r),
                     0);
    assert_int_equal(r.n, 4);
    assert_int_equal(cv_dim_compare(P("L + 1"), l), CV_DIM_GT);
    assert_int_equal(cv_dim_compare(l, P("L + N")), CV_DIM_LE);
    assert_int_equal(cv_dim_compare(l, n), CV_DIM_UNKNOWN);
}

typedef struct binding {
    int64_t n, l;
} binding;

static bool look(void *ctx, const char *sym, int64_t *v)
{
    const binding *b = ctx;
    if (!strcmp(sym, "N"))
        *v = b->n;
    else if (!strcmp(sym, "L"))
        *v = b->l;
    else
        return false;
    return true;
}

static int64_t fdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Canonicalisation keeps values: the canonical dim evaluates like the
 * formula written out in C, at many points. */
static void test_eval_matches_brute_force(void **state)
{
    (void)state;
    cv_dim e1 = P("(3*L + N + 5) floordiv 4 - N mod 3");
    cv_dim e2 = P("min(2*L, N + 7) * ((L - 1) ceildiv 3) + max(N, L)");
    cv_dim e3 = P("(5*N*L - 2*L + 9) mod 6 + (L + 2) floordiv -3");
    for (int64_t n = 0; n < 12; n++)
        for (int64_t l = 0; l < 40; l++) {
            binding b = {n, l};
            int64_t v1, v2, v3;
            assert_int_equal(cv_dim_eval(e1, look, &b, &v1), 0);
            assert_int_equal(cv_dim_eval(e2, look, &b, &v2), 0);
            assert_int_equal(cv_dim_eval(e3, look, &b, &v3), 0);
            int64_t m3 = n % 3;
            assert_int_equal(v1, fdiv(3 * l + n + 5, 4) - m3);
            int64_t mn = 2 * l < n + 7 ? 2 * l : n + 7, mx = n > l ? n : l;
            assert_int_equal(v2, mn * -fdiv(-(l - 1), 3) + mx);
            int64_t r = (5 * n * l - 2 * l + 9) % 6;
            assert_int_equal(v3, (r < 0 ? r + 6 : r) + fdiv(l + 2, -3));
        }
    binding b = {1, 1};
    int64_t v;
    assert_int_equal(cv_dim_eval(P("N + K"), look, &b, &v), -1);
}

static void test_parse_errors(void **state)
{
    (void)state;
    const char *bad[] = {"", "N +", "(N", "N)", "min(N)", "N floordiv", "2N", "\"\"",
                         "99999999999999999999", "N ** 2", "L floordiv 0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cv_dim d;
        const char *err = NULL;
        size_t at;
        assert_int_equal(cv_dim_parse(M, bad[i], strlen(bad[i]), &d, &err, &at), -1);
        assert_non_null(err);
    }
    /* Deep nesting and huge sums are refused, not a stack overflow. */
    char deep[4096];
    size_t k = 0;
    for (int i = 0; i < 1000; i++)
        deep[k++] = '(';
    deep[k++] = 'N';
    for (int i = 0; i < 1000; i++)
        deep[k++] = ')';
    cv_dim d;
    const char *err;
    size_t at;
    assert_int_equal(cv_dim_parse(M, deep, k, &d, &err, &at), -1);
    char wide[4096];
    k = 0;
    for (int i = 0; i < 100; i++)
        k += (size_t)snprintf(wide + k, sizeof wide - k, "%sS%d", i ? "+" : "", i);
    assert_int_equal(cv_dim_parse(M, wide, k, &d, &err, &at), -1);
}

static void test_cuir_text_round_trip(void **state)
{
    (void)state;
    const char *src =
        "cuir 1\n"
        "model @m(%x: f32[N, (L + 1) floordiv 2, 2*L*N + 1, \"b c\" + 1]) -> "
        "(f32[N,(L + 1) floordiv 2,2*L*N + 1,\"b c\" + 1]) {\n"
        "  %y = relu(%x) : f32[N, (1 + L) floordiv 2, 1 + 2*N*L, \"b c\" + 1]\n"
        "  return %y\n"
        "}\n";
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(src, strlen(src), "t.cuir", &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    char *p1 = cv_module_print(m, CV_PRINT_NO_LOC);
    assert_non_null(strstr(p1, "f32[N,(L + 1) floordiv 2,2*L*N + 1,\"b c\" + 1]"));
    cv_module *m2 = cv_cuir_parse(p1, strlen(p1), "p.cuir", &d);
    assert_non_null(m2);
    char *p2 = cv_module_print(m2, CV_PRINT_NO_LOC);
    assert_string_equal(p1, p2);
    free(p1);
    free(p2);
    cv_module_free(m);
    cv_module_free(m2);
    cv_diag_free(&d);
}


/* ---- the interpreter over symbolic shapes --------------------------------- */

/* x: f32[N,3,H,8], y: f32[N,3,2,8] -> concat on H, max pool 3x3/2 in ceil
 * mode, pad, a strided conv, reshape to [-1, 5], slice [1:-1].  Built with
 * symbols (dims NULL) or with the integers n, h, so the symbolic model can
 * be run against the static one at each size. */
static cv_module *pool_model(const int64_t *nh, cv_diag *d)
{
    cv_module *m = cv_module_new("pool");
    cv_func *f = cv_func_new(m, "m");
    cv_dim n = nh ? (cv_dim){nh[0], NULL} : (cv_dim){0, cv_module_intern(m, "N", 1)};
    cv_dim h = nh ? (cv_dim){nh[1], NULL} : (cv_dim){0, cv_module_intern(m, "H", 1)};
    cv_type tx = {CV_F32, {4, {n, {3, NULL}, h, {8, NULL}}}};
    cv_type ty = {CV_F32, {4, {n, {3, NULL}, {2, NULL}, {8, NULL}}}};
    cv_type tw = {CV_F32, {4, {{2, NULL}, {3, NULL}, {3, NULL}, {3, NULL}}}};
    cv_value *x = cv_func_add_input(f, "x", &tx), *y = cv_func_add_input(f, "y", &ty);
    float w[54];
    for (int i = 0; i < 54; i++)
        w[i] = (float)((i * 7) % 11 - 5) / 8.0f;
    cv_value *wv = cv_func_add_dense(f, "w", &tw, w, sizeof w)->value;
    cv_value *xy[2] = {x, y};
    cv_op *o = cv_op_new(f, "concat", xy, 2);
    cv_op_set_int(o, "axis", 2);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    o = cv_op_new(f, "max_pool2d", o->results, 1);
    cv_op_set_ints(o, "kernel", (int64_t[]){3, 3}, 2);
    cv_op_set_ints(o, "stride", (int64_t[]){2, 2}, 2);
    cv_op_set_int(o, "ceil_mode", 1);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    o = cv_op_new(f, "pad", o->results, 1);
    cv_op_set_ints(o, "pads", (int64_t[]){0, 0, 1, 0, 0, 0, 2, 1}, 8);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    cv_value *cw[2] = {o->results[0], wv};
    o = cv_op_new(f, "conv2d", cw, 2);
    cv_op_set_ints(o, "stride", (int64_t[]){2, 1}, 2);
    cv_op_set_ints(o, "pad", (int64_t[]){1, 1}, 2);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    o = cv_op_new(f, "reshape", o->results, 1);
    cv_op_set_ints(o, "shape", (int64_t[]){-1, 5}, 2);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    o = cv_op_new(f, "slice", o->results, 1);
    cv_op_set_ints(o, "starts", (int64_t[]){1}, 1);
    cv_op_set_ints(o, "ends", (int64_t[]){-1}, 1);
    cv_op_set_ints(o, "axes", (int64_t[]){0}, 1);
    assert_int_equal(cv_op_finish(o, 1, d), 0);
    cv_func_set_returns(f, o->results, 1);
    cv_func_add_output_type(f, &o->results[0]->type);
    return m;
}

static bool look_nh(void *ctx, const char *sym, int64_t *v)
{
    const int64_t *nh = ctx;
    if (strcmp(sym, "N") && strcmp(sym, "H"))
        return false;
    *v = nh[strcmp(sym, "N") ? 1 : 0];
    return true;
}

static void fill(cv_tensor *t, int64_t seed)
{
    for (int64_t i = 0; i < t->numel; i++)
        ((float *)t->data)[i] = (float)((i * 13 + seed * 5) % 17) - 8.0f;
}

static void test_interp_at_several_sizes(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *sm = pool_model(NULL, &d);
    if (cv_verify(sm, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    const cv_func *sf = sm->funcs[0];
    /* The result's type is an expression of N and H. */
    assert_true(cv_dim_is_expr(sf->returns[0]->type.shape.d[0]));
    const int64_t sizes[][2] = {{1, 5}, {2, 6}, {1, 9}, {3, 16}, {2, 31}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        cv_module *cm = pool_model(sizes[k], &d);
        cv_tensor in[2], out_s, out_c;
        int64_t dx[4] = {sizes[k][0], 3, sizes[k][1], 8}, dy[4] = {sizes[k][0], 3, 2, 8};
        assert_int_equal(cv_tensor_alloc(&in[0], CV_F32, 4, dx), 0);
        assert_int_equal(cv_tensor_alloc(&in[1], CV_F32, 4, dy), 0);
        fill(&in[0], 1);
        fill(&in[1], 2);
        if (cv_interp_run(sf, in, 2, &out_s, &d))
            cv_diag_print(&d, stderr, false);
        assert_int_equal(d.n_errors, 0);
        assert_int_equal(cv_interp_run(cm->funcs[0], in, 2, &out_c, &d), 0);
        /* Same data as the static model, and the shape its type says. */
        assert_int_equal(out_s.rank, out_c.rank);
        assert_memory_equal(out_s.dims, out_c.dims, sizeof out_s.dims[0] * (size_t)out_s.rank);
        assert_memory_equal(out_s.data, out_c.data, cv_tensor_nbytes(&out_c));
        binding b = {sizes[k][0], 0};
        int64_t want;
        assert_int_equal(cv_dim_eval(sf->returns[0]->type.shape.d[0], look_nh, (void *)sizes[k], &want), 0);
        assert_int_equal(want, out_c.dims[0]);
        (void)b;
        for (int i = 0; i < 2; i++)
            cv_tensor_free(&in[i]);
        cv_tensor_free(&out_s);
        cv_tensor_free(&out_c);
        cv_module_free(cm);
    }
    cv_module_free(sm);
    cv_diag_free(&d);
}

static void test_interp_expr_input(void **state)
{
    (void)state;
    const char *src =
        "cuir 1\n"
        "model @m(%x: f32[N, 4], %y: f32[2*N + 1, 4]) -> (f32[3*N + 1, 4]) {\n"
        "  %z = concat(%x, %y) {axis=0} : f32[3*N + 1, 4]\n"
        "  return %z\n"
        "}\n";
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(src, strlen(src), "e.cuir", &d);
    assert_non_null(m);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    cv_tensor in[2], out;
    int64_t dx[2] = {3, 4}, dy[2] = {7, 4};
    assert_int_equal(cv_tensor_alloc(&in[0], CV_F32, 2, dx), 0);
    assert_int_equal(cv_tensor_alloc(&in[1], CV_F32, 2, dy), 0);
    assert_int_equal(cv_interp_run(m->funcs[0], in, 2, &out, &d), 0);
    assert_int_equal(out.dims[0], 10);
    cv_tensor_free(&out);
    cv_tensor_free(&in[1]);
    dy[0] = 6;
    assert_int_equal(cv_tensor_alloc(&in[1], CV_F32, 2, dy), 0);
    assert_int_equal(cv_interp_run(m->funcs[0], in, 2, &out, &d), -1);
    assert_int_equal(d.v[d.n - 1].code, 3010);
    cv_tensor_free(&in[0]);
    cv_tensor_free(&in[1]);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* The model language takes expressions in input_shapes. */
static void test_dsl_input_shapes(void **state)
{
    (void)state;
    const char *src =
        "import cuvil as cvl\n"
        "@cvl.model(input_shapes=[(\"N\", 4), (\"2*N + 1\", 4)], dtype=\"float32\")\n"
        "def m(x, y):\n"
        "    return cvl.concat([x, y], axis=0)\n";
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_dsl_parse_text(src, strlen(src), "m.cvl.py", &d);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    const cv_func *f = m->funcs[0];
    assert_true(cv_dim_is_expr(f->inputs[1]->type.shape.d[0]));
    assert_string_equal(f->returns[0]->type.shape.d[0].sym, "3*N + 1");
    cv_module_free(m);
    const char *bad = "import cuvil as cvl\n"
                      "@cvl.model(input_shapes=[(\"N +\", 4)], dtype=\"float32\")\n"
                      "def m(x):\n"
                      "    return x\n";
    assert_null(cv_dsl_parse_text(bad, strlen(bad), "b.cvl.py", &d));
    assert_int_equal(d.v[0].code, 2111);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_equal_forms),
        cmocka_unit_test(test_arith_api),
        cmocka_unit_test(test_eval_matches_brute_force),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_cuir_text_round_trip),
        cmocka_unit_test(test_interp_at_several_sizes),
        cmocka_unit_test(test_interp_expr_input),
        cmocka_unit_test(test_dsl_input_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
