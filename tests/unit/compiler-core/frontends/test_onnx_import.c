/* ONNX front end: lowering, locations, initializers, symbolic dims, shape
 * folding, opset differences, declared types and the unsupported-op report.
 * Models are built in C with the generated protobuf code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/onnx_testlib.h"

/* Runs f on one f32 input of the given dims; returns output 0 (caller frees). */
static cv_tensor run1(const cv_module *m, int rank, const int64_t *dims, const float *x)
{
    cv_tensor in, out[4] = {0};
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, rank, dims), 0);
    memcpy(in.data, x, cv_tensor_nbytes(&in));
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_interp_run(m->funcs[0], &in, 1, out, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_diag_free(&d);
    cv_tensor_free(&in);
    for (int i = 1; i < m->funcs[0]->n_returns; i++)
        cv_tensor_free(&out[i]);
    return out[0];
}

static const cv_op *find_op(const cv_module *m, const char *name)
{
    const cv_func *f = m->funcs[0];
    for (int i = 0; i < f->n_ops; i++)
        if (strcmp(f->ops[i]->name, name) == 0)
            return f->ops[i];
    return NULL;
}

static void test_relu_add_with_locations(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[2] = {2, 3}, d1[1] = {3};
    float bias[3] = {10, 20, 30};
    tb_input(&b, "x", TB_FLOAT, 2, d2);
    tb_output(&b, "y", TB_FLOAT, 2, d2);
    tb_init_tensor(&b, "bias", TB_FLOAT, 1, d1, bias, true);
    tb_node(&b, "Relu", "relu_node", "x", "r");
    tb_node(&b, "Add", NULL, "r,bias", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    const cv_op *relu = find_op(m, "relu"), *add = find_op(m, "add");
    assert_non_null(relu);
    assert_non_null(add);
    assert_int_equal(relu->n_locs, 1);
    assert_string_equal(relu->locs[0].file, "relu_node");
    assert_int_equal(relu->locs[0].line, 0);
    assert_string_equal(add->locs[0].file, "op#1");
    float x[6] = {-1, 2, -3, 4, -5, 6};
    cv_tensor y = run1(m, 2, d2, x);
    const float want[6] = {10, 22, 30, 14, 20, 36};
    for (int i = 0; i < 6; i++)
        assert_true(((float *)y.data)[i] == want[i]);
    cv_tensor_free(&y);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* The same initializer as raw_data and as typed fields imports identically. */
static void test_raw_and_typed_initializers(void **state)
{
    (void)state;
    for (int raw = 0; raw < 2; raw++) {
        tb b;
        tb_init(&b, 13);
        int64_t d2[2] = {2, 2}, shape_dims[1] = {1}, shape[1] = {4};
        float w[4] = {1.5f, -2, 3.25f, 4};
        tb_input(&b, "x", TB_FLOAT, 2, d2);
        tb_output(&b, "y", TB_FLOAT, 1, shape);
        tb_init_tensor(&b, "w", TB_FLOAT, 2, d2, w, raw);
        tb_init_tensor(&b, "shape", TB_INT64, 1, shape_dims, shape, raw);
        tb_node(&b, "Mul", "mul", "x,w", "p");
        tb_node(&b, "Reshape", "flat", "p,shape", "y");
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = tb_load(&b, &d);
        assert_non_null(m);
        const float x[4] = {2, 2, 2, 2};
        cv_tensor y = run1(m, 2, d2, x);
        assert_int_equal(y.rank, 1);
        assert_int_equal(y.dims[0], 4);
        for (int i = 0; i < 4; i++)
            assert_true(((float *)y.data)[i] == 2 * w[i]);
        cv_tensor_free(&y);
        cv_module_free(m);
        cv_diag_free(&d);
        tb_free(&b);
    }
}

/* dim_param becomes a symbol; the model then runs for any batch. */
static void test_dim_param_is_symbolic(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t dn[2] = {TB_N, 3};
    tb_input(&b, "x", TB_FLOAT, 2, dn);
    tb_output(&b, "y", TB_FLOAT, 2, dn);
    tb_node(&b, "Sigmoid", "s", "x", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    const cv_value *in = m->funcs[0]->inputs[0];
    assert_non_null(in->type.shape.d[0].sym);
    assert_string_equal(in->type.shape.d[0].sym, "N");
    assert_null(in->type.shape.d[1].sym);
    for (int64_t n = 1; n <= 5; n += 4) {
        int64_t dims[2] = {n, 3};
        float x[15] = {0};
        cv_tensor y = run1(m, 2, dims, x);
        assert_int_equal(y.dims[0], n);
        assert_true(fabsf(((float *)y.data)[0] - 0.5f) < 1e-7f);
        cv_tensor_free(&y);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* x.view(x.size(0), -1) as PyTorch exports it: Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape folds into one reshape {shape=[0,-1]}. */
static void test_shape_arithmetic_folds(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t dx[3] = {TB_N, 3, 4}, dy[2] = {TB_N, 12}, one[1] = {1}, zero = 0, minus1 = -1;
    tb_input(&b, "x", TB_FLOAT, 3, dx);
    tb_output(&b, "y", TB_FLOAT, 2, dy);
    tb_init_tensor(&b, "idx0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "axes0", TB_INT64, 1, one, &zero, false);
    tb_init_tensor(&b, "rest", TB_INT64, 1, one, &minus1, true);
    tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "gather", "s,idx0", "n");
    tb_node(&b, "Unsqueeze", "unsq", "n,axes0", "n1");
    tb_node(&b, "Concat", "cat", "n1,rest", "target");
    Onnx__NodeProto *cat = b.g.node[3];
    tb_attr_i(&b, cat, "axis", 0);
    tb_node(&b, "Reshape", "view", "x,target", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    const cv_func *f = m->funcs[0];
    assert_int_equal(f->n_ops, 1);
    assert_string_equal(f->ops[0]->name, "reshape");
    int64_t shape[4];
    assert_int_equal(cv_op_ints(f->ops[0], "shape", shape, 4), 2);
    assert_int_equal(shape[0], 0);
    assert_int_equal(shape[1], -1);
    assert_string_equal(f->ops[0]->locs[0].file, "view");
    assert_string_equal(f->returns[0]->type.shape.d[0].sym, "N");
    assert_int_equal(f->returns[0]->type.shape.d[1].n, 12);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* Constant, ConstantOfShape, Range and Cast fold into one param. */
static void test_constant_ops_fold(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d4[1] = {4}, one[1] = {1}, four = 4, start = 0, delta = 1;
    tb_input(&b, "x", TB_FLOAT, 1, d4);
    tb_output(&b, "y", TB_FLOAT, 1, d4);
    tb_init_tensor(&b, "start", TB_INT64, 0, NULL, &start, true);
    tb_init_tensor(&b, "delta", TB_INT64, 0, NULL, &delta, true);
    Onnx__NodeProto *k = tb_node(&b, "Constant", "limit_const", "", "limit");
    Onnx__AttributeProto *a = tb_attr(&b, k, "value",
                                      ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tb_tensor(&b, "", TB_INT64, 0, NULL, &four, false);
    tb_init_tensor(&b, "shape1", TB_INT64, 1, one, &four, true);
    tb_node(&b, "ConstantOfShape", "ones", "shape1", "z");
    tb_node(&b, "Range", "range", "start,limit,delta", "r");
    Onnx__NodeProto *cast = tb_node(&b, "Cast", "cast", "r", "rf");
    tb_attr_i(&b, cast, "to", TB_FLOAT);
    tb_node(&b, "Add", "add1", "rf,z", "rz");
    tb_node(&b, "Add", "add2", "x,rz", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    assert_int_equal(m->funcs[0]->n_ops, 1);
    const float x[4] = {1, 1, 1, 1};
    cv_tensor y = run1(m, 1, d4, x);
    for (int i = 0; i < 4; i++)
        assert_true(((float *)y.data)[i] == 1.0f + (float)i);
    cv_tensor_free(&y);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* A large ConstantOfShape stays a CU-IR constant op instead of data. */
static void test_large_fill_is_an_op(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[2] = {300, 300}, one[1] = {2}, one_elem[1] = {1};
    float seven = 7;
    tb_input(&b, "x", TB_FLOAT, 2, d2);
    tb_output(&b, "y", TB_FLOAT, 2, d2);
    tb_init_tensor(&b, "shape", TB_INT64, 1, one, d2, true);
    Onnx__NodeProto *n = tb_node(&b, "ConstantOfShape", "fill", "shape", "f");
    Onnx__AttributeProto *a = tb_attr(&b, n, "value",
                                      ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tb_tensor(&b, "", TB_FLOAT, 1, one_elem, &seven, false);
    tb_node(&b, "Add", "add", "x,f", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    const cv_op *k = find_op(m, "constant");
    assert_non_null(k);
    assert_int_equal(m->funcs[0]->n_params, 0);
    const cv_attr *v = cv_op_attr(k, "value");
    assert_non_null(v);
    assert_int_equal(v->n, 1);
    assert_true(v->floats[0] == 7);
    float *x = calloc(90000, sizeof *x);
    cv_tensor y = run1(m, 2, d2, x);
    assert_true(((float *)y.data)[89999] == 7);
    cv_tensor_free(&y);
    free(x);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* Softmax before opset 13 normalises over the flattened trailing dims. */
static void test_softmax_opset_semantics(void **state)
{
    (void)state;
    int64_t dims[3] = {1, 2, 2};
    const float x[4] = {0, 1, 2, 3};
    double old[4], z = exp(0) + exp(1) + exp(2) + exp(3);
    for (int i = 0; i < 4; i++)
        old[i] = exp(i) / z;
    for (int opset = 11; opset <= 13; opset += 2) {
        tb b;
        tb_init(&b, opset);
        tb_input(&b, "x", TB_FLOAT, 3, dims);
        tb_output(&b, "y", TB_FLOAT, 3, dims);
        tb_attr_i(&b, tb_node(&b, "Softmax", "sm", "x", "y"), "axis", 1);
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = tb_load(&b, &d);
        assert_non_null(m);
        cv_tensor y = run1(m, 3, dims, x);
        const float *v = y.data;
        if (opset == 11) {
            for (int i = 0; i < 4; i++)
                assert_true(fabs(v[i] - old[i]) < 1e-6);
        } else {   /* axis 1 alone: pairs (x0, x2) and (x1, x3) */
            assert_true(fabs(v[0] + v[2] - 1) < 1e-6);
            assert_true(fabs(v[0] - 1 / (1 + exp(2))) < 1e-6);
        }
        cv_tensor_free(&y);
        cv_module_free(m);
        cv_diag_free(&d);
        tb_free(&b);
    }
}

/* Squeeze/Clip: attributes before opset 13/11, constant inputs after. */
static void test_attribute_vs_input_opsets(void **state)
{
    (void)state;
    int64_t dx[3] = {1, 4, 1}, dy[1] = {4}, one[1] = {2}, axes[2] = {0, 2};
    const float x[4] = {-5, 0.5f, 2, 9};
    const float want[4] = {0, 0.5f, 2, 3};
    float bounds[2] = {0, 3};
    for (int opset = 11; opset <= 13; opset += 2) {
        tb b;
        tb_init(&b, opset);
        tb_input(&b, "x", TB_FLOAT, 3, dx);
        tb_output(&b, "y", TB_FLOAT, 1, dy);
        if (opset < 13) {
            tb_attr_ints(&b, tb_node(&b, "Squeeze", "sq", "x", "s"), "axes", axes, 2);
        } else {
            tb_init_tensor(&b, "axes", TB_INT64, 1, one, axes, false);
            tb_node(&b, "Squeeze", "sq", "x,axes", "s");
        }
        tb_init_tensor(&b, "lo", TB_FLOAT, 0, NULL, &bounds[0], true);
        tb_init_tensor(&b, "hi", TB_FLOAT, 0, NULL, &bounds[1], false);
        tb_node(&b, "Clip", "clip", "s,lo,hi", "y");
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = tb_load(&b, &d);
        assert_non_null(m);
        cv_tensor y = run1(m, 3, dx, x);
        for (int i = 0; i < 4; i++)
            assert_true(((float *)y.data)[i] == want[i]);
        cv_tensor_free(&y);
        cv_module_free(m);
        cv_diag_free(&d);
        tb_free(&b);
    }
    /* Clip-6 takes min/max as attributes. */
    tb b;
    tb_init(&b, 6);
    tb_input(&b, "x", TB_FLOAT, 1, dy);
    tb_output(&b, "y", TB_FLOAT, 1, dy);
    Onnx__NodeProto *n = tb_node(&b, "Clip", "clip6", "x", "y");
    tb_attr_f(&b, n, "min", 0);
    tb_attr_f(&b, n, "max", 3);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    cv_tensor y = run1(m, 1, dy, x);
    for (int i = 0; i < 4; i++)
        assert_true(((float *)y.data)[i] == want[i]);
    cv_tensor_free(&y);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* Every unsupported node is listed in one CV4301 diagnostic. */
static void test_unsupported_ops_report_lists_all(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[1] = {2};
    tb_input(&b, "x", TB_FLOAT, 1, d2);
    tb_output(&b, "y", TB_FLOAT, 1, d2);
    tb_node(&b, "Unique", "first_bad", "x", "a");
    tb_node(&b, "Relu", "fine", "a", "r");
    tb_node(&b, "StringNormalizer", "second_bad", "r", "t");
    Onnx__NodeProto *n = tb_node(&b, "Relu", "custom", "t", "y");
    n->domain = tb_str(&b, "com.example");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_null(m);
    assert_int_equal(d.n_errors, 1);
    assert_true(tb_has_error(&d, 4301, "3 unsupported ONNX ops"));
    assert_true(tb_has_error(&d, 4301, "Unique (domain ai.onnx, opset 13) at node 'first_bad'"));
    assert_true(tb_has_error(&d, 4301, "at node 'second_bad'"));
    assert_true(tb_has_error(&d, 4301, "Relu (domain com.example, opset -1) at node 'custom'"));
    cv_diag_free(&d);
    tb_free(&b);
}

static void test_opset_out_of_range(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 19);
    int64_t d2[1] = {2};
    tb_input(&b, "x", TB_FLOAT, 1, d2);
    tb_output(&b, "y", TB_FLOAT, 1, d2);
    tb_node(&b, "Relu", "r", "x", "y");
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_int_equal(tb_first_error(&d), 4302);
    cv_diag_free(&d);
    tb_free(&b);
}

/* Declared output and value_info types are checked against inference. */
static void test_declared_types_checked(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        tb b;
        tb_init(&b, 13);
        int64_t d2[2] = {2, 3}, wrong[2] = {3, 2};
        tb_input(&b, "x", TB_FLOAT, 2, d2);
        tb_node(&b, "Relu", "r1", "x", "h");
        tb_node(&b, "Relu", "r2", "h", "y");
        if (which == 0) {
            tb_output(&b, "y", TB_INT64, 2, d2);
        } else {
            tb_output(&b, "y", TB_FLOAT, 2, d2);
            tb_push(&b, &b.g.value_info, &b.g.n_value_info, tb_vi(&b, "h", TB_FLOAT, 2, wrong));
        }
        cv_diag d;
        cv_diag_init(&d);
        assert_null(tb_load(&b, &d));
        assert_true(tb_has_error(&d, which == 0 ? 2306 : 3302, "'"));
        cv_diag_free(&d);
        tb_free(&b);
    }
}

/* Shape specialisation: a Reshape whose shape is a graph input. */
static int bind_shape(void *user, int index, const char *name, cv_tensor *t)
{
    int *calls = user;
    int64_t n = 1;
    (*calls)++;
    if (strcmp(name, "target") != 0 || cv_tensor_alloc(t, CV_I64, 1, &n) < 0)
        return -1;
    ((int64_t *)t->data)[0] = 6;
    return 0;
}

static void test_bind_shape_inputs(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[2] = {2, 3}, d1[1] = {1}, d6[1] = {6};
    tb_input(&b, "x", TB_FLOAT, 2, d2);
    tb_input(&b, "target", TB_INT64, 1, d1);
    tb_output(&b, "y", TB_FLOAT, 1, d6);
    tb_node(&b, "Reshape", "r", "x,target", "y");
    size_t len;
    uint8_t *buf = tb_pack(&b, &len);
    cv_diag d;
    cv_diag_init(&d);
    assert_null(cv_onnx_load_mem(buf, len, "t.onnx", &d));
    assert_true(tb_has_error(&d, 4305, "'target'"));
    cv_diag_clear(&d);
    int calls = 0;
    cv_onnx_options opts = {bind_shape, &calls, NULL};
    cv_module *m = cv_onnx_load_opts(buf, len, "t.onnx", &opts, &d);
    assert_non_null(m);
    assert_int_equal(calls, 1);
    assert_int_equal(m->funcs[0]->n_inputs, 1);
    assert_int_equal(m->funcs[0]->returns[0]->type.shape.d[0].n, 6);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* The imported CU-IR prints, parses back and prints the same text (what
 * `cuvil compile model.onnx --emit cuir` shows). */
static void test_print_parse_round_trip(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t dx[2] = {TB_N, 3}, d1[1] = {3};
    float bias[3] = {0.5f, -1, 3};
    tb_input(&b, "input.1", TB_FLOAT, 2, dx);
    tb_output(&b, "out/0", TB_FLOAT, 2, dx);
    tb_init_tensor(&b, "fc.bias", TB_FLOAT, 1, d1, bias, true);
    tb_node(&b, "Relu", "/layer1/Relu", "input.1", "r");
    tb_node(&b, "Add", "/layer1/Add", "r,fc.bias", "out/0");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    char *text = cv_module_print(m, 0);
    assert_non_null(strstr(text, "loc(\"/layer1/Relu\")"));
    cv_module *back = cv_cuir_parse(text, strlen(text), "roundtrip.cuir", &d);
    if (!back)
        cv_diag_print(&d, stderr, false);
    assert_non_null(back);
    assert_int_equal(cv_verify(back, 0, &d), 0);
    char *again = cv_module_print(back, 0);
    assert_string_equal(text, again);
    free(text);
    free(again);
    cv_module_free(back);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu_add_with_locations),
        cmocka_unit_test(test_raw_and_typed_initializers),
        cmocka_unit_test(test_dim_param_is_symbolic),
        cmocka_unit_test(test_shape_arithmetic_folds),
        cmocka_unit_test(test_constant_ops_fold),
        cmocka_unit_test(test_large_fill_is_an_op),
        cmocka_unit_test(test_softmax_opset_semantics),
        cmocka_unit_test(test_attribute_vs_input_opsets),
        cmocka_unit_test(test_unsupported_ops_report_lists_all),
        cmocka_unit_test(test_opset_out_of_range),
        cmocka_unit_test(test_declared_types_checked),
        cmocka_unit_test(test_bind_shape_inputs),
        cmocka_unit_test(test_print_parse_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
