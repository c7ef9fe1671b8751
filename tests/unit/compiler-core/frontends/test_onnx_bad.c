/* ONNX front end on bad input: every malformed model gets a coded
 * diagnostic naming the node or value, never a crash. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"
#include "tests/support/onnx_testlib.h"

/* A small valid model: y = Relu(x) + w, with an initializer. */
static void small_model(tb *b)
{
    int64_t d2[2] = {2, 3};
    float w[6] = {1, 2, 3, 4, 5, 6};
    tb_init(b, 13);
    tb_input(b, "x", TB_FLOAT, 2, d2);
    tb_output(b, "y", TB_FLOAT, 2, d2);
    tb_init_tensor(b, "w", TB_FLOAT, 2, d2, w, true);
    tb_node(b, "Relu", "relu", "x", "r");
    tb_node(b, "Add", "add", "r,w", "y");
}

/* Loads buf and expects failure with every error code registered. */
static void expect_refused(const void *buf, size_t len)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load_mem(buf, len, "bad.onnx", &d);
    assert_null(m);
    assert_true(d.n_errors >= 1);
    for (int i = 0; i < d.n; i++)
        assert_non_null(cv_diag_code_lookup(d.v[i].code));
    cv_diag_free(&d);
}

static void test_every_truncation_is_refused(void **state)
{
    (void)state;
    tb b;
    small_model(&b);
    size_t len;
    uint8_t *buf = tb_pack(&b, &len);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load_mem(buf, len, "ok.onnx", &d);
    assert_non_null(m);
    cv_module_free(m);
    cv_diag_free(&d);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut + 1);   /* exact size, so ASan sees overreads */
        memcpy(copy, buf, cut);
        expect_refused(copy, cut);
        free(copy);
    }
    /* A cut inside the graph is reported as a truncation. */
    cv_diag_init(&d);
    assert_null(cv_onnx_load_mem(buf, len / 2, "cut.onnx", &d));
    assert_int_equal(tb_first_error(&d), 1301);
    cv_diag_free(&d);
    tb_free(&b);
}

static void test_wrong_wire_type(void **state)
{
    (void)state;
    /* ModelProto field 7 (graph, a message) sent as a varint. */
    const uint8_t bad[] = {0x08, 0x08, 0x38, 0x01};
    cv_diag d;
    cv_diag_init(&d);
    assert_null(cv_onnx_load_mem(bad, sizeof bad, "wire.onnx", &d));
    assert_true(tb_has_error(&d, 1302, "ModelProto>graph"));
    cv_diag_free(&d);
    /* An invalid wire type (7) and field number 0. */
    const uint8_t bad2[] = {0x0f}, bad3[] = {0x00, 0x01};
    expect_refused(bad2, sizeof bad2);
    expect_refused(bad3, sizeof bad3);
}

static void test_random_bytes_never_crash(void **state)
{
    (void)state;
    tb b;
    small_model(&b);
    size_t len;
    uint8_t *buf = tb_pack(&b, &len);
    uint8_t *copy = malloc(len);
    srand(12345);
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(copy, buf, len);
        for (int k = 0; k < 1 + iter % 4; k++)
            copy[(size_t)rand() % len] = (uint8_t)rand();
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = cv_onnx_load_mem(copy, len, "flip.onnx", &d);
        if (!m)
            assert_true(d.n_errors >= 1);
        cv_module_free(m);
        cv_diag_free(&d);
    }
    free(copy);
    tb_free(&b);
}

static void test_negative_and_overflowing_dims(void **state)
{
    (void)state;
    const int64_t cases[3][2] = {{-3, 2}, {INT64_C(1) << 62, INT64_C(1) << 62}, {2, 3}};
    for (int i = 0; i < 3; i++) {
        tb b;
        tb_init(&b, 13);
        int64_t d2[2] = {2, 3};
        tb_input(&b, "x", TB_FLOAT, 2, i < 2 ? cases[i] : d2);
        tb_output(&b, "y", TB_FLOAT, 2, d2);
        if (i == 2) {   /* an initializer with a negative dim */
            int64_t bad[1] = {-1};
            tb_init_tensor(&b, "w", TB_FLOAT, 1, bad, NULL, true);
            tb_node(&b, "Add", "add", "x,w", "y");
        } else {
            tb_node(&b, "Relu", "relu", "x", "y");
        }
        cv_diag d;
        cv_diag_init(&d);
        assert_null(tb_load(&b, &d));
        assert_true(tb_has_error(&d, 3301, i == 2 ? "'w'" : "'x'"));
        cv_diag_free(&d);
        tb_free(&b);
    }
}

static void test_cycle_names_nodes(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[1] = {2};
    tb_input(&b, "x", TB_FLOAT, 1, d2);
    tb_output(&b, "y", TB_FLOAT, 1, d2);
    tb_node(&b, "Add", "loop_a", "x,b", "a");
    tb_node(&b, "Relu", "loop_b", "a", "b");
    tb_node(&b, "Relu", "out", "b", "y");
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_true(tb_has_error(&d, 2303, "'loop_a'"));
    assert_true(tb_has_error(&d, 2303, "'loop_b'"));
    cv_diag_free(&d);
    tb_free(&b);
}

static void test_missing_values(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d2[1] = {2};
    tb_input(&b, "x", TB_FLOAT, 1, d2);
    tb_output(&b, "y", TB_FLOAT, 1, d2);
    tb_output(&b, "ghost", TB_FLOAT, 1, d2);
    tb_node(&b, "Add", "needs_w", "x,w", "y");
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    /* The missing initializer names its node. */
    assert_true(tb_has_error(&d, 2301, "node 'needs_w' (Add): input 'w'"));
    cv_diag_free(&d);
    tb_free(&b);

    tb_init(&b, 13);
    tb_input(&b, "x", TB_FLOAT, 1, d2);
    tb_output(&b, "y", TB_FLOAT, 1, d2);
    tb_output(&b, "ghost", TB_FLOAT, 1, d2);
    tb_node(&b, "Relu", "r", "x", "y");
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_true(tb_has_error(&d, 2304, "'ghost'"));
    cv_diag_free(&d);
    tb_free(&b);
}

static void test_duplicate_names(void **state)
{
    (void)state;
    int64_t d2[1] = {2};
    float w[2] = {1, 2};
    for (int which = 0; which < 3; which++) {
        tb b;
        tb_init(&b, 13);
        tb_input(&b, "x", TB_FLOAT, 1, d2);
        tb_output(&b, "y", TB_FLOAT, 1, d2);
        tb_init_tensor(&b, "w", TB_FLOAT, 1, d2, w, true);
        if (which == 0)
            tb_init_tensor(&b, "w", TB_FLOAT, 1, d2, w, false);
        if (which == 1)
            tb_input(&b, "x", TB_FLOAT, 1, d2);
        tb_node(&b, "Add", "first", "x,w", "y");
        if (which == 2)
            tb_node(&b, "Relu", "second", "x", "y");
        cv_diag d;
        cv_diag_init(&d);
        assert_null(tb_load(&b, &d));
        assert_true(tb_has_error(&d, 2302, which == 2 ? "node 'second'" : "already defined"));
        cv_diag_free(&d);
        tb_free(&b);
    }
}

/* Zero-size tensors and dims promising more data than the file holds. */
static void test_zero_size_and_missing_data(void **state)
{
    (void)state;
    int64_t d2[1] = {2}, zero[1] = {0}, huge[2] = {INT64_C(1) << 30, INT64_C(1) << 20};
    for (int which = 0; which < 3; which++) {
        tb b;
        tb_init(&b, 13);
        tb_input(&b, "x", TB_FLOAT, 1, which == 0 ? zero : d2);
        tb_output(&b, "y", TB_FLOAT, 1, d2);
        if (which == 1)
            tb_init_tensor(&b, "w", TB_FLOAT, 1, zero, NULL, true);
        if (which == 2) {
            float one = 1;
            int64_t d1[1] = {1};
            Onnx__TensorProto *t = tb_init_tensor(&b, "w", TB_FLOAT, 1, d1, &one, true);
            t->n_dims = 2;
            t->dims = huge;
        }
        tb_node(&b, "Add", "add", which == 0 ? "x,x" : "x,w", "y");
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = tb_load(&b, &d);
        assert_null(m);   /* declared [2] but computes [0] / broadcast error / no data */
        assert_true(d.n_errors >= 1);
        if (which == 2)
            assert_true(tb_has_error(&d, 1307, "'w'"));
        cv_diag_free(&d);
        tb_free(&b);
    }
}

/* Attribute subgraphs nested past the limit are refused before unpacking. */
static void test_nesting_limit(void **state)
{
    (void)state;
    tb b;
    small_model(&b);
    Onnx__GraphProto *outer = &b.g;
    for (int level = 0; level < 40; level++) {
        Onnx__NodeProto *n = tb_node(&b, "If", "if", "", "");
        Onnx__AttributeProto *a = tb_attr(&b, n, "then_branch",
                                          ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        Onnx__GraphProto *g = tb_alloc(&b, sizeof *g);
        onnx__graph_proto__init(g);
        a->g = g;
        /* move the node from the top graph into the previous level */
        b.g.n_node--;
        if (outer != &b.g)
            tb_push(&b, &outer->node, &outer->n_node, n);
        else
            tb_push(&b, &b.g.node, &b.g.n_node, n);
        outer = g;
    }
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_int_equal(tb_first_error(&d), 1304);
    cv_diag_free(&d);
    tb_free(&b);
}

/* External data: read from inside the model's directory only. */
static void test_external_data_confined(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("onnx-ext");
    assert_non_null(dir);
    char *sub = cv_tmpdir_path(dir, "model");
    assert_int_equal(mkdir(sub, 0755), 0);
    const float w[2] = {10, 20};
    assert_int_equal(cv_tmpdir_write(sub, "w.bin", w, sizeof w), 0);
    assert_int_equal(cv_tmpdir_write(dir, "outside.bin", w, sizeof w), 0);
    char *outside = cv_tmpdir_path(dir, "outside.bin"), *link = cv_tmpdir_path(sub, "link.bin");
    assert_int_equal(symlink(outside, link), 0);
    const char *locations[] = {"w.bin", "../outside.bin", "link.bin", NULL};
    locations[3] = outside;
    for (int i = 0; i < 4; i++) {
        tb b;
        tb_init(&b, 13);
        int64_t d2[1] = {2};
        tb_input(&b, "x", TB_FLOAT, 1, d2);
        tb_output(&b, "y", TB_FLOAT, 1, d2);
        Onnx__TensorProto *t = tb_init_tensor(&b, "w", TB_FLOAT, 1, d2, NULL, false);
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        Onnx__StringStringEntryProto *e = tb_alloc(&b, sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = tb_str(&b, "location");
        e->value = tb_str(&b, locations[i]);
        tb_push(&b, &t->external_data, &t->n_external_data, e);
        tb_node(&b, "Add", "add", "x,w", "y");
        size_t len;
        uint8_t *buf = tb_pack(&b, &len);
        assert_int_equal(cv_tmpdir_write(sub, "m.onnx", buf, len), 0);
        char *path = cv_tmpdir_path(sub, "m.onnx");
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = cv_onnx_load(path, &d);
        if (i == 0) {
            assert_non_null(m);
            assert_int_equal(m->funcs[0]->n_params, 1);
            assert_true(((float *)m->funcs[0]->params[0]->data)[1] == 20);
        } else {
            assert_null(m);
            assert_true(tb_has_error(&d, 1308, "'w'"));
        }
        cv_module_free(m);
        cv_diag_free(&d);
        free(path);
        tb_free(&b);
    }
    free(outside);
    free(link);
    free(sub);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_truncation_is_refused),
        cmocka_unit_test(test_wrong_wire_type),
        cmocka_unit_test(test_random_bytes_never_crash),
        cmocka_unit_test(test_negative_and_overflowing_dims),
        cmocka_unit_test(test_cycle_names_nodes),
        cmocka_unit_test(test_missing_values),
        cmocka_unit_test(test_duplicate_names),
        cmocka_unit_test(test_zero_size_and_missing_data),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_external_data_confined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
