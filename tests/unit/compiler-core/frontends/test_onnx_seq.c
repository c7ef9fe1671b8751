/* ONNX sequences and optionals, resolved at import time: sequence inputs
 * bound to constants, sequence ops rearranging the element list, sequence
 * outputs flattened into the function's results, and the refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"
#include "tests/support/onnx_testlib.h"

/* A graph input or output of sequence (opt: optional) type of f32[2]. */
static Onnx__ValueInfoProto *seq_vi(tb *b, const char *name, bool opt)
{
    int64_t d2[1] = {2};
    Onnx__ValueInfoProto *vi = tb_vi(b, name, TB_FLOAT, 1, d2);
    Onnx__TypeProto *tp = tb_alloc(b, sizeof *tp);
    Onnx__TypeProto__Sequence *st = tb_alloc(b, sizeof *st);
    onnx__type_proto__init(tp);
    onnx__type_proto__sequence__init(st);
    st->elem_type = vi->type;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = st;
    if (opt) {
        Onnx__TypeProto *ot = tb_alloc(b, sizeof *ot);
        Onnx__TypeProto__Optional *o = tb_alloc(b, sizeof *o);
        onnx__type_proto__init(ot);
        onnx__type_proto__optional__init(o);
        o->elem_type = tp;
        ot->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        ot->optional_type = o;
        tp = ot;
    }
    vi->type = tp;
    return vi;
}

/* Binds every list input to {0,1}, {2,3}, {4,5} (absent when user says). */
static int bind_three(void *user, int index, const char *name, cv_tensor *elems, int max,
                      bool *absent)
{
    (void)index;
    (void)name;
    *absent = user != NULL;
    int64_t d2 = 2;
    for (int i = 0; i < 3 && i < max && !*absent; i++) {
        if (cv_tensor_alloc(&elems[i], CV_F32, 1, &d2) < 0)
            return -1;
        ((float *)elems[i].data)[0] = (float)(2 * i);
        ((float *)elems[i].data)[1] = (float)(2 * i + 1);
    }
    return *absent ? 0 : 3;
}

static cv_module *load_with(tb *b, void *user, cv_diag *d)
{
    size_t len;
    uint8_t *buf = tb_pack(b, &len);
    cv_onnx_options opts = {NULL, user, bind_three};
    return cv_onnx_load_opts(buf, len, "seq.onnx", &opts, d);
}

static void test_sequence_ops(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 17);
    int64_t d2[1] = {2}, d6[1] = {6}, d0[1] = {0}, minus1 = -1;
    tb_push(&b, &b.g.input, &b.g.n_input, seq_vi(&b, "s", false));
    tb_input(&b, "t", TB_FLOAT, 1, d2);
    tb_init_tensor(&b, "pos", TB_INT64, 0, d0, &minus1, false);
    tb_node(&b, "SequenceInsert", "ins", "s,t,pos", "s2");   /* before the last */
    tb_node(&b, "SequenceAt", "at", "s2,pos", "last");
    tb_node(&b, "SequenceErase", "er", "s2", "s3");          /* drops the last */
    tb_node(&b, "ConcatFromSequence", "cat", "s3", "all");
    tb_node(&b, "SequenceLength", "len", "s2", "n");
    tb_node(&b, "Identity", "id", "s3", "s4");
    tb_output(&b, "last", TB_FLOAT, 1, d2);
    tb_output(&b, "all", TB_FLOAT, 1, d6);
    tb_output(&b, "n", TB_INT64, 0, d0);
    tb_push(&b, &b.g.output, &b.g.n_output, seq_vi(&b, "s4", false));
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_with(&b, NULL, &d);
    assert_non_null(m);
    const cv_func *f = m->funcs[0];
    assert_int_equal(f->n_inputs, 1);           /* the sequence became constants */
    assert_int_equal(f->n_returns, 3 + 3);      /* s4 flattened: three tensors */
    cv_tensor in, out[6];
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, 1, d2), 0);
    ((float *)in.data)[0] = 7;
    ((float *)in.data)[1] = 8;
    assert_int_equal(cv_interp_run(f, &in, 1, out, &d), 0);
    const float *last = out[0].data, *all = out[1].data;
    assert_true(last[0] == 4 && last[1] == 5);  /* {0,1} {2,3} {7,8} {4,5} */
    static const float want[6] = {0, 1, 2, 3, 7, 8};
    for (int i = 0; i < 6; i++)
        assert_true(all[i] == want[i]);
    assert_int_equal(((int64_t *)out[2].data)[0], 4);
    assert_true(((float *)out[5].data)[0] == 7);
    for (int i = 0; i < 6; i++)
        cv_tensor_free(&out[i]);
    cv_tensor_free(&in);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* SplitToSequence (scalar split: chunks, the last shorter) and back with
 * ConcatFromSequence along a new axis after splitting keepdims=0. */
static void test_split_and_concat(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 13);
    int64_t d23[2] = {2, 3}, d0[1] = {0}, d32[2] = {3, 2}, d2[1] = {2}, two = 2;
    tb_input(&b, "x", TB_FLOAT, 2, d23);
    tb_init_tensor(&b, "chunk", TB_INT64, 0, d0, &two, false);
    Onnx__NodeProto *n = tb_node(&b, "SplitToSequence", "sp", "x,chunk", "parts");
    tb_attr_i(&b, n, "axis", 1);
    tb_node(&b, "SequenceAt", "at", "parts,chunk", "bad");   /* position 2 of 2: refused */
    tb_output(&b, "bad", TB_FLOAT, 1, d2);
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_true(tb_has_error(&d, 2309, "position 2"));
    cv_diag_clear(&d);
    b.g.n_node = 1;
    b.g.n_output = 0;
    n = tb_node(&b, "SplitToSequence", "cols", "x", "cols");
    tb_attr_i(&b, n, "axis", 1);
    tb_attr_i(&b, n, "keepdims", 0);
    n = tb_node(&b, "ConcatFromSequence", "stack", "cols", "xt");
    tb_attr_i(&b, n, "axis", 0);
    tb_attr_i(&b, n, "new_axis", 1);
    tb_node(&b, "SequenceLength", "len", "parts", "n");
    tb_output(&b, "xt", TB_FLOAT, 2, d32);
    tb_output(&b, "n", TB_INT64, 0, d0);
    cv_module *m = tb_load(&b, &d);
    assert_non_null(m);
    cv_tensor in, out[2];
    assert_int_equal(cv_tensor_alloc(&in, CV_F32, 2, d23), 0);
    for (int i = 0; i < 6; i++)
        ((float *)in.data)[i] = (float)i;
    assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, out, &d), 0);
    static const float want[6] = {0, 3, 1, 4, 2, 5};   /* the transpose */
    for (int i = 0; i < 6; i++)
        assert_true(((float *)out[0].data)[i] == want[i]);
    assert_int_equal(((int64_t *)out[1].data)[0], 2);   /* chunks of 2 and 1 */
    cv_tensor_free(&out[0]);
    cv_tensor_free(&out[1]);
    cv_tensor_free(&in);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* OptionalHasElement is known at import time; an unbound sequence input
 * is refused with CV4307. */
static void test_optionals(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 18);
    int64_t d0[1] = {0};
    tb_push(&b, &b.g.input, &b.g.n_input, seq_vi(&b, "o", true));
    tb_node(&b, "OptionalHasElement", "has", "o", "h");
    tb_output(&b, "h", TB_BOOL, 0, d0);
    cv_diag d;
    cv_diag_init(&d);
    for (int absent = 0; absent < 2; absent++) {
        cv_module *m = load_with(&b, absent ? &b : NULL, &d);
        assert_non_null(m);
        cv_tensor out;
        assert_int_equal(cv_interp_run(m->funcs[0], NULL, 0, &out, &d), 0);
        assert_int_equal(((uint8_t *)out.data)[0], !absent);
        cv_tensor_free(&out);
        cv_module_free(m);
    }
    assert_null(tb_load(&b, &d));
    assert_true(tb_has_error(&d, 4307, "'o'"));
    cv_diag_free(&d);
    tb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence_ops),
        cmocka_unit_test(test_optionals),
        cmocka_unit_test(test_split_and_concat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
