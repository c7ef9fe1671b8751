/* The wider dtype set (f64, i16, u16, u32, u64): element loads and stores,
 * names, the interpreter's results on a few exact cases, and native code
 * compared with the interpreter for the ops ONNX models use them with. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/backend_testlib.h"

static void test_names_and_sizes(void **state)
{
    static const struct { const char *name; cv_dtype dt; size_t size; } all[] = {
        {"f64", CV_F64, 8}, {"i16", CV_I16, 2}, {"u16", CV_U16, 2}, {"u32", CV_U32, 4},
        {"u64", CV_U64, 8},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_int_equal(cv_dtype_parse(all[i].name, strlen(all[i].name)), all[i].dt);
        assert_string_equal(cv_dtype_name(all[i].dt), all[i].name);
        assert_int_equal(cv_dtype_size(all[i].dt), all[i].size);
        assert_true(cv_dtype_is_int(all[i].dt) == (all[i].dt != CV_F64));
    }
    assert_true(cv_dtype_is_unsigned(CV_U32));
    assert_false(cv_dtype_is_unsigned(CV_I16));
    int64_t lo, hi;
    assert_true(cv_dtype_int_range(CV_U16, &lo, &hi));
    assert_true(lo == 0 && hi == 65535);
    assert_true(cv_dtype_int_range(CV_I16, &lo, &hi));
    assert_true(lo == -32768 && hi == 32767);
    assert_false(cv_dtype_int_range(CV_F64, &lo, &hi));
}

/* Float stores saturate (NaN -> 0); integer stores wrap, like the other ints. */
static void test_load_store(void **state)
{
    int16_t i16[3];
    cv_dtype_store(CV_I16, i16, 0, 40000.0);
    cv_dtype_store(CV_I16, i16, 1, -40000.0);
    cv_dtype_store_i64(CV_I16, i16, 2, 40000);
    assert_int_equal(i16[0], 32767);
    assert_int_equal(i16[1], -32768);
    assert_int_equal(i16[2], 40000 - 65536);
    uint32_t u32[2];
    cv_dtype_store(CV_U32, u32, 0, -5.0);
    cv_dtype_store_i64(CV_U32, u32, 1, -1);
    assert_int_equal(u32[0], 0);
    assert_true(u32[1] == UINT32_MAX);
    assert_true(cv_dtype_load_i64(CV_U32, u32, 1) == UINT32_MAX);   /* zero-extended */
    uint64_t u64[3];
    cv_dtype_store(CV_U64, u64, 0, 1e30);
    cv_dtype_store(CV_U64, u64, 1, NAN);
    cv_dtype_store(CV_U64, u64, 2, 12345678901234.0);
    assert_true(u64[0] == UINT64_MAX);
    assert_true(u64[1] == 0);
    assert_true(cv_dtype_load_i64(CV_U64, u64, 2) == 12345678901234);
    assert_true(cv_dtype_load(CV_U64, u64, 0) == 18446744073709551615.0);
    double f64[1];
    cv_dtype_store(CV_F64, f64, 0, 0.1);
    assert_true(cv_dtype_load(CV_F64, f64, 0) == 0.1);   /* no rounding through f32 */
}

/* op(a[, b]) on 1-D tensors of dt, run by the interpreter, against want. */
static void interp_one(const char *op, const char *attrs, cv_dtype dt, const double *a,
                       const double *b, int n, const double *want)
{
    cv_module *m = cv_module_new("dtypes.cuir");
    cv_func *f = cv_func_new(m, "main");
    cv_type t = {.dtype = dt, .shape = {.rank = 1, .d = {{n, NULL}}}};
    int n_in = b ? 2 : 1;
    cv_value *x[2] = {cv_func_add_input(f, "a", &t), NULL};
    if (b)
        x[1] = cv_func_add_input(f, "b", &t);
    cv_op *o = cv_op_new(f, op, x, n_in);
    assert_int_equal(bk_set_attrs(o, attrs), 0);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_op_finish(o, 1, &d), 0);
    cv_func_add_output_type(f, &o->results[0]->type);
    cv_func_set_returns(f, &o->results[0], 1);
    assert_int_equal(cv_verify(m, CV_VERIFY_STRICT, &d), 0);
    cv_tensor in[2], out;
    int64_t dims[1] = {n};
    for (int k = 0; k < n_in; k++) {
        assert_int_equal(cv_tensor_alloc(&in[k], dt, 1, dims), 0);
        for (int i = 0; i < n; i++)
            cv_tensor_set(&in[k], i, k ? b[i] : a[i]);
    }
    assert_int_equal(cv_interp_run(f, in, n_in, &out, &d), 0);
    for (int i = 0; i < n; i++)
        assert_true(cv_tensor_get(&out, i) == want[i]);
    for (int k = 0; k < n_in; k++)
        cv_tensor_free(&in[k]);
    cv_tensor_free(&out);
    cv_diag_free(&d);
    cv_module_free(m);
}

static void test_interp_exact(void **state)
{
    /* u16 max, u32 division, i16 wrap-around, f64 beyond f32 precision. */
    interp_one("max", NULL, CV_U16, (double[]){1, 65535, 300}, (double[]){2, 7, 299}, 3,
               (double[]){2, 65535, 300});
    interp_one("div", NULL, CV_U32, (double[]){4000000000.0, 7, 9}, (double[]){3, 2, 0}, 3,
               (double[]){1333333333, 3, 0});
    interp_one("add", NULL, CV_I16, (double[]){32767, -5}, (double[]){1, 3}, 2,
               (double[]){-32768, -2});
    interp_one("add", NULL, CV_F64, (double[]){1, 0.1}, (double[]){1e-12, 0.2}, 2,
               (double[]){1 + 1e-12, 0.1 + 0.2});
    interp_one("cast", "to=i16", CV_F64, (double[]){1e6, -2.5, NAN}, NULL, 3,
               (double[]){32767, -2, 0});
}

/* Params of every new dtype print and parse back bit for bit. */
static void test_text_round_trip(void **state)
{
    cv_module *m = cv_module_new("dtypes.cuir");
    cv_func *f = cv_func_new(m, "main");
    cv_type t = {.dtype = CV_F64, .shape = {.rank = 1, .d = {{2, NULL}}}};
    double f64[2] = {0.1, -1e300};
    cv_func_add_dense(f, "a", &t, f64, sizeof f64);
    t.dtype = CV_U64;
    uint64_t u64[2] = {UINT64_MAX, 7};
    cv_value *b = cv_func_add_dense(f, "b", &t, u64, sizeof u64)->value;
    t.dtype = CV_I16;
    int16_t i16[2] = {-32768, 32767};
    cv_func_add_dense(f, "c", &t, i16, sizeof i16);
    t.dtype = CV_U32;
    uint32_t u32[2] = {UINT32_MAX, 0};
    cv_func_add_dense(f, "d", &t, u32, sizeof u32);
    cv_func_add_output_type(f, &b->type);
    cv_func_set_returns(f, &b, 1);
    cv_diag d;
    cv_diag_init(&d);
    char *text = cv_module_print(m, 0);
    cv_module *back = cv_cuir_parse(text, strlen(text), "dtypes.cuir", &d);
    if (!back)
        cv_diag_print(&d, stderr, false);
    assert_non_null(back);
    assert_int_equal(cv_verify(back, 0, &d), 0);
    char *again = cv_module_print(back, 0);
    assert_string_equal(text, again);
    const cv_param *p = back->funcs[0]->params[1];
    assert_memory_equal(p->data, u64, sizeof u64);
    assert_memory_equal(back->funcs[0]->params[0]->data, f64, sizeof f64);
    free(text);
    free(again);
    cv_module_free(back);
    cv_module_free(m);
    cv_diag_free(&d);
}

static const bk_case cases[] = {
    BK("add", NULL, "f64[3,4]", "f64[4]"),
    BK("exp", NULL, "f64[7]"),
    BK("log", NULL, "f64[5] @0.1:9"),
    BK("sin", NULL, "f64[4]"),
    BK("reduce_sum", "axes=[1] keepdims=0", "f64[3,5]"),
    BK("reduce_max", "axes=[0] keepdims=1", "f64[4,3]"),
    BK("max", NULL, "u16[6] @0:65535", "u16[6] @0:65535"),
    BK("min", NULL, "u32[5] @0:4000000000", "u32[5] @0:4000000000"),
    BK("max", NULL, "u64[4] @0:1e15", "u64[4] @0:1e15"),
    BK("min", NULL, "i16[6] @-30000:30000", "i16[6] @-30000:30000"),
    BK("mul", NULL, "u16[4] =300,2,65535,0", "u16[4] =300,3,2,9"),
    BK("div", NULL, "u32[3] =4000000000,7,9", "u32[3] =3,2,0"),
    BK("sub", NULL, "i16[3] =-32768,5,0", "i16[3] =1,-3,0"),
    BK("pow", NULL, "f32[4] @0.5:2", "u32[4] =0,1,2,3"),
    BK("cast", "to=f64", "f32[4] =0.1,-2,nan,inf"),
    BK("cast", "to=f16", "f64[3] =0.1,65504,1e6"),
    BK("cast", "to=i16", "f64[4] =1e6,-1e6,-2.5,nan"),
    BK("cast", "to=u16", "i64[4] =-1,65536,65535,7"),
    BK("cast", "to=u32", "f32[4] =-3,5e9,7.9,nan"),
    BK("cast", "to=u64", "i32[3] =5,0,2147483647"),
    BK("cast", "to=f64", "u64[3] =0,7,1000000"),
    BK("where", NULL, "bool[4]", "u16[4] @0:9", "u16[1] =7"),
};

static void test_native_matches_interp(void **state)
{
    char msg[2048] = "";
    if (bk_check("dtypes", cases, (int)(sizeof cases / sizeof cases[0]), 1, msg, sizeof msg))
        fail_msg("%s", msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_sizes),
        cmocka_unit_test(test_load_store),
        cmocka_unit_test(test_interp_exact),
        cmocka_unit_test(test_text_round_trip),
        cmocka_unit_test(test_native_matches_interp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
