/* ONNX import of shape computations with symbols and of constant subgraphs
 * (issue 26): the generic interpreter fold, symbolic shape arithmetic,
 * Cast keeping symbols, ConstantOfShape over a symbolic shape, a Range
 * over a symbol, Tile by a symbolic count, Slice to a symbolic end, and the
 * coded refusal of a Range
 * over tensor data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ir.h"
#include "tests/support/onnx_testlib.h"

static cv_module *load_ok(tb *b, cv_diag *d)
{
    cv_module *m = tb_load(b, d);
    if (!m)
        cv_diag_print(d, stderr, false);
    assert_non_null(m);
    return m;
}

/* Expand's shape is Where(Equal(...), ...) over constants: no rule folds
 * Where, the interpreter evaluates it (ViT's class-token expand). */
static void test_constant_subgraph_evaluated(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {2, 3}, d3[1] = {3}, dy[3] = {4, 2, 3};
    int64_t c1[3] = {-1, 2, 3}, c2[3] = {-1, 0, 0}, x3[3] = {4, 1, 1}, y3[3] = {9, 2, 3};
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_FLOAT, 3, dy);
    tb_init_tensor(&b, "c1", TB_INT64, 1, d3, c1, true);
    tb_init_tensor(&b, "c2", TB_INT64, 1, d3, c2, true);
    tb_init_tensor(&b, "a", TB_INT64, 1, d3, x3, true);
    tb_init_tensor(&b, "bb", TB_INT64, 1, d3, y3, true);
    tb_node(&b, "Equal", "eq", "c1,c2", "cond");
    tb_node(&b, "Where", "where", "cond,a,bb", "shape");
    tb_node(&b, "Expand", "expand", "x,shape", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    const cv_type *t = &m->funcs[0]->returns[0]->type;
    assert_int_equal(t->shape.rank, 3);
    assert_int_equal(t->shape.d[0].n, 4);
    assert_int_equal(t->shape.d[1].n, 2);
    assert_int_equal(t->shape.d[2].n, 3);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* x.reshape(2 * x.shape[0], -1 + ...) : Mul over the symbolic N folds into
 * the expression 2*N, and reshape's -1 solves it. */
static void test_symbolic_arithmetic_folds(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, 4}, one[1] = {1}, zero = 0, two = 2;
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "two", TB_INT64, 0, NULL, &two, true);
    tb_init_tensor(&b, "ax", TB_INT64, 1, one, &zero, true);
    tb_init_tensor(&b, "two1", TB_INT64, 1, one, &two, true);
    tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "g", "s,i0", "n");
    tb_node(&b, "Mul", "mul", "n,two", "n2");
    tb_node(&b, "Unsqueeze", "u", "n2,ax", "n2v");
    Onnx__NodeProto *cat = tb_node(&b, "Concat", "cat", "n2v,two1", "target");
    tb_attr_i(&b, cat, "axis", 0);
    tb_node(&b, "Reshape", "r", "x,target", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    const cv_type *t = &m->funcs[0]->returns[0]->type;
    assert_true(cv_dim_is_expr(t->shape.d[0]));
    assert_string_equal(t->shape.d[0].sym, "2*N");
    assert_int_equal(t->shape.d[1].n, 2);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* torch.arange(x.shape[0]) exports Shape -> Gather -> Cast -> Range: a
 * CU-IR range of length N, which the interpreter fills at several N. */
static void test_range_over_symbol(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, 4}, zero = 0, one = 1, three = 3;
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_INT64, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "three", TB_INT64, 0, NULL, &three, true);
    tb_init_tensor(&b, "one", TB_INT64, 0, NULL, &one, true);
    tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "g", "s,i0", "n");
    Onnx__NodeProto *cast = tb_node(&b, "Cast", "cast", "n", "nc");
    tb_attr_i(&b, cast, "to", TB_INT64);
    tb_node(&b, "Range", "positions", "three,nc,one", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    const cv_type *t = &m->funcs[0]->returns[0]->type;
    assert_true(cv_dim_is_expr(t->shape.d[0]));   /* max(N - 3, 0) */
    for (int64_t n = 1; n <= 7; n += 3) {
        cv_tensor in, out;
        int64_t dims[2] = {n, 4};
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, 2, dims), 0);
        assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &out, &d), 0);
        assert_int_equal(out.numel, n > 3 ? n - 3 : 0);
        for (int64_t i = 0; i < out.numel; i++)
            assert_int_equal(cv_tensor_get_i64(&out, i), 3 + i);
        cv_tensor_free(&in);
        cv_tensor_free(&out);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* A range up to a value read from a tensor's data stays refused, naming
 * the node. */
static void test_range_over_data_refused(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t zero = 0, one = 1;
    tb_input(&b, "n", TB_INT64, 0, NULL);
    tb_output(&b, "y", TB_INT64, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "one", TB_INT64, 0, NULL, &one, true);
    tb_node(&b, "Range", "positions", "i0,n,one", "y");
    cv_diag d;
    cv_diag_init(&d);
    assert_null(tb_load(&b, &d));
    assert_true(tb_has_error(&d, 4305, "positions"));
    cv_diag_free(&d);
    tb_free(&b);
}

/* x[N, L, 8].reshape(L, N, 2, 4): two symbolic entries, which the 0/-1
 * form cannot say, stay a DIMS attribute; it prints and parses back, and
 * the parsed module runs at several (N, L). */
static void test_reshape_symbolic_round_trip(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[3] = {TB_N, TB_L, 8}, zero = 0, one = 1, one1[1] = {1}, tail[2] = {2, 4};
    int64_t d2[1] = {2};
    tb_input(&b, "x", TB_FLOAT, 3, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 1, one1, &zero, true);
    tb_init_tensor(&b, "i1", TB_INT64, 1, one1, &one, true);
    tb_init_tensor(&b, "tail", TB_INT64, 1, d2, tail, true);
    tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "gn", "s,i0", "n");
    tb_node(&b, "Gather", "gl", "s,i1", "l");
    Onnx__NodeProto *cat = tb_node(&b, "Concat", "cat", "l,n,tail", "target");
    tb_attr_i(&b, cat, "axis", 0);
    tb_node(&b, "Reshape", "r", "x,target", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    char *text = cv_module_print(m, CV_PRINT_NO_LOC);
    assert_non_null(strstr(text, "shape=[L,N,2,4]"));
    cv_module *p = cv_cuir_parse(text, strlen(text), "rt.cuir", &d);
    assert_non_null(p);
    assert_int_equal(cv_verify(p, 0, &d), 0);
    char *again = cv_module_print(p, CV_PRINT_NO_LOC);
    assert_string_equal(text, again);
    for (int64_t n = 1; n <= 3; n += 2) {
        int64_t l = n + 4, dims[3] = {n, l, 8};
        cv_tensor in, out;
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, 3, dims), 0);
        for (int64_t i = 0; i < in.numel; i++)
            ((float *)in.data)[i] = (float)i;
        assert_int_equal(cv_interp_run(p->funcs[0], &in, 1, &out, &d), 0);
        assert_int_equal(out.rank, 4);
        assert_int_equal(out.dims[0], l);
        assert_int_equal(out.dims[1], n);
        assert_int_equal(memcmp(in.data, out.data, cv_tensor_nbytes(&in)), 0);
        cv_tensor_free(&in);
        cv_tensor_free(&out);
    }
    free(text);
    free(again);
    cv_module_free(p);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* table[arange(L)] with a 4-row table implies L <= 4: the fact is
 * recorded at import, survives the text round trip, and a run with L = 5
 * is CV3013 naming the input, the symbol and the bound (not CV3012 from
 * inside the gather). */
static void test_positional_bound(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, TB_L}, zero = 0, one = 1, one1[1] = {1}, dt[2] = {4, 2};
    float table[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    tb_input(&b, "ids", TB_INT64, 2, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "one", TB_INT64, 0, NULL, &one, true);
    tb_init_tensor(&b, "ax0", TB_INT64, 1, one1, &zero, true);
    tb_init_tensor(&b, "table", TB_FLOAT, 2, dt, table, false);
    tb_node(&b, "Shape", "shape", "ids", "s");
    tb_node(&b, "Gather", "g", "s,one", "l");
    tb_node(&b, "Range", "positions", "i0,l,one", "pos");
    tb_node(&b, "Unsqueeze", "u", "pos,ax0", "pos2");
    tb_node(&b, "Gather", "lookup", "table,pos2", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    const cv_sym_fact *facts;
    assert_int_equal(cv_module_facts(m, &facts), 1);
    assert_string_equal(facts[0].sym, "L");
    assert_int_equal(facts[0].max, 4);
    assert_non_null(strstr(facts[0].why, "lookup"));
    char *text = cv_module_print(m, CV_PRINT_NO_LOC);
    assert_non_null(strstr(text, "\nbound L 4 \""));
    cv_module *p = cv_cuir_parse(text, strlen(text), "rt.cuir", &d);
    assert_non_null(p);
    assert_int_equal(cv_verify(p, 0, &d), 0);
    assert_int_equal(cv_module_facts(p, &facts), 1);
    assert_int_equal(facts[0].max, 4);
    for (int64_t l = 3; l <= 5; l++) {
        int64_t dims[2] = {2, l};
        cv_tensor in, out;
        assert_int_equal(cv_tensor_alloc(&in, CV_I64, 2, dims), 0);
        cv_diag run;
        cv_diag_init(&run);
        int rc = cv_interp_run(p->funcs[0], &in, 1, &out, &run);
        if (l <= 4) {
            assert_int_equal(rc, 0);
            assert_int_equal(out.numel, l * 2);
            for (int64_t i = 0; i < out.numel; i++)
                assert_true(((float *)out.data)[i] == (float)i);
            cv_tensor_free(&out);
        } else {
            assert_int_not_equal(rc, 0);
            assert_true(tb_has_error(&run, 3013, "%ids binds L = 5"));
            assert_true(tb_has_error(&run, 3013, "L <= 4"));
        }
        cv_diag_free(&run);
        cv_tensor_free(&in);
    }
    free(text);
    cv_module_free(p);
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* An LSTM or GRU over x[T, 2, 3], T the symbol L or a static length, with
 * the same pseudo-random weights and initial state. */
static void build_rnn(tb *b, const char *op, int64_t t, const char *dir, int lbr)
{
    enum { B = 2, I = 3, H = 4 };
    int g = !strcmp(op, "LSTM") ? 4 : 3, dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    int64_t dx[3] = {t, B, I}, dw[3] = {dirs, g * H, I}, dr[3] = {dirs, g * H, H};
    int64_t db[2] = {dirs, 2 * g * H}, dh[3] = {dirs, B, H};
    static float w[2 * 4 * 4 * 4 * 2];
    uint32_t seed = 12345;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        seed = seed * 1103515245u + 12345u;
        w[i] = (float)((seed >> 8) % 2001) / 2000.0f - 0.5f;
    }
    tb_init(b, 14);
    tb_input(b, "x", TB_FLOAT, 3, dx);
    tb_output(b, "y", TB_FLOAT, -1, NULL);
    tb_output(b, "yh", TB_FLOAT, -1, NULL);
    if (g == 4)
        tb_output(b, "yc", TB_FLOAT, -1, NULL);
    tb_init_tensor(b, "W", TB_FLOAT, 3, dw, w, false);
    tb_init_tensor(b, "R", TB_FLOAT, 3, dr, w + 7, false);
    tb_init_tensor(b, "Bias", TB_FLOAT, 2, db, w + 11, false);
    tb_init_tensor(b, "h0", TB_FLOAT, 3, dh, w + 13, false);
    tb_init_tensor(b, "c0", TB_FLOAT, 3, dh, w + 17, false);
    Onnx__NodeProto *n = tb_node(b, op, "rnn", g == 4 ? "x,W,R,Bias,,h0,c0" : "x,W,R,Bias,,h0",
                                 g == 4 ? "y,yh,yc" : "y,yh");
    tb_attr_i(b, n, "hidden_size", H);
    if (lbr)
        tb_attr_i(b, n, "linear_before_reset", 1);
    Onnx__AttributeProto *a = tb_attr(b, n, "direction",
                                      ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)tb_str(b, dir);
    a->s.len = strlen(dir);
}

/* The rnn op over a symbolic length (ops_rnn.c) against the importer's
 * unrolling at static lengths 1, 3 and 6: two implementations of the ONNX
 * formulas that must agree, for LSTM and GRU in each direction. */
static void test_rnn_symbolic_matches_unrolled(void **state)
{
    (void)state;
    static const struct { const char *op, *dir; int lbr; } cases[] = {
        {"LSTM", "forward", 0}, {"LSTM", "bidirectional", 0}, {"GRU", "forward", 0},
        {"GRU", "reverse", 1}, {"GRU", "bidirectional", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tb b;
        cv_diag d;
        cv_diag_init(&d);
        build_rnn(&b, cases[k].op, TB_L, cases[k].dir, cases[k].lbr);
        cv_module *m = load_ok(&b, &d);
        tb_free(&b);
        bool has_rnn = false;
        for (int i = 0; i < m->funcs[0]->n_ops; i++)
            has_rnn |= !strcmp(m->funcs[0]->ops[i]->name, "rnn");
        assert_true(has_rnn);
        for (int64_t t = 1; t <= 6; t += t == 1 ? 2 : 3) {
            build_rnn(&b, cases[k].op, t, cases[k].dir, cases[k].lbr);
            cv_module *u = load_ok(&b, &d);
            tb_free(&b);
            int64_t dims[3] = {t, 2, 3};
            cv_tensor in, got[3], want[3];
            assert_int_equal(cv_tensor_alloc(&in, CV_F32, 3, dims), 0);
            for (int64_t i = 0; i < in.numel; i++)
                ((float *)in.data)[i] = (float)((i * 37) % 11) / 5.0f - 1.0f;
            assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, got, &d), 0);
            assert_int_equal(cv_interp_run(u->funcs[0], &in, 1, want, &d), 0);
            for (int r = 0; r < m->funcs[0]->n_returns; r++) {
                assert_int_equal(got[r].numel, want[r].numel);
                for (int64_t i = 0; i < got[r].numel; i++)
                    if (fabs(cv_tensor_get(&got[r], i) - cv_tensor_get(&want[r], i)) > 1e-5)
                        fail_msg("%s %s T=%lld output %d [%lld]: %g, unrolled %g", cases[k].op,
                                 cases[k].dir, (long long)t, r, (long long)i,
                                 cv_tensor_get(&got[r], i), cv_tensor_get(&want[r], i));
                cv_tensor_free(&got[r]);
                cv_tensor_free(&want[r]);
            }
            cv_tensor_free(&in);
            cv_module_free(u);
        }
        cv_module_free(m);
        cv_diag_free(&d);
    }
}

/* table[arange(L, L + 2)] (a decode step's positions past a cache of L):
 * a range from a symbolic start, and the fact L <= 2 for a 4-row table. */
static void test_range_from_symbol(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, TB_L}, one = 1, two = 2, dt[2] = {4, 2};
    float table[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    tb_input(&b, "past", TB_INT64, 2, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "one", TB_INT64, 0, NULL, &one, true);
    tb_init_tensor(&b, "two", TB_INT64, 0, NULL, &two, true);
    tb_init_tensor(&b, "table", TB_FLOAT, 2, dt, table, false);
    tb_node(&b, "Shape", "shape", "past", "s");
    tb_node(&b, "Gather", "g", "s,one", "l");
    tb_node(&b, "Add", "end", "l,two", "l2");
    tb_node(&b, "Range", "positions", "l,l2,one", "pos");
    tb_node(&b, "Gather", "lookup", "table,pos", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    const cv_sym_fact *facts;
    assert_int_equal(cv_module_facts(m, &facts), 1);
    assert_string_equal(facts[0].sym, "L");
    assert_int_equal(facts[0].max, 2);
    for (int64_t l = 0; l <= 3; l++) {
        int64_t dims[2] = {1, l};
        cv_tensor in, out;
        assert_int_equal(cv_tensor_alloc(&in, CV_I64, 2, dims), 0);
        cv_diag run;
        cv_diag_init(&run);
        int rc = cv_interp_run(m->funcs[0], &in, 1, &out, &run);
        assert_int_equal(rc != 0, l > 2);
        if (rc)
            assert_true(tb_has_error(&run, 3013, "%past binds L = 3"));
        for (int64_t i = 0; !rc && i < out.numel; i++)
            assert_true(((float *)out.data)[i] == (float)(2 * l + i));
        if (!rc)
            cv_tensor_free(&out);
        cv_diag_free(&run);
        cv_tensor_free(&in);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* ConstantOfShape(Shape(x)) with a symbolic N becomes ops over x's extent;
 * the interpreter fills it at several N. */
static void test_constant_of_symbolic_shape(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, 4};
    float fill = 1.5f;
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_FLOAT, 2, dx);
    tb_node(&b, "Shape", "shape", "x", "s");
    Onnx__NodeProto *k = tb_node(&b, "ConstantOfShape", "fill", "s", "z");
    Onnx__AttributeProto *a = tb_attr(&b, k, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    int64_t d1[1] = {1};
    a->t = tb_tensor(&b, "", TB_FLOAT, 1, d1, &fill, false);
    tb_node(&b, "Add", "add", "x,z", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    for (int64_t n = 1; n <= 5; n += 2) {
        cv_tensor in, out;
        int64_t dims[2] = {n, 4};
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, 2, dims), 0);
        for (int64_t i = 0; i < in.numel; i++)
            ((float *)in.data)[i] = (float)i;
        assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &out, &d), 0);
        assert_int_equal(out.dims[0], n);
        for (int64_t i = 0; i < out.numel; i++)
            assert_true(((float *)out.data)[i] == (float)i + 1.5f);
        cv_tensor_free(&in);
        cv_tensor_free(&out);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* torch's t.repeat(x.shape[0], 2) exports Tile with repeats
 * Concat(Unsqueeze(Gather(Shape(x))), [2]): the symbolic count folds into
 * an expand over N (a [2,3] table becomes [2*N, 6]; a [1,3] row, repeated
 * N times, [N, 3]), which the interpreter fills at several N. */
static void test_tile_symbolic_repeats(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, 4}, zero = 0, one1[1] = {1}, two = 2, one = 1;
    int64_t dt[2] = {2, 3}, dr[2] = {1, 3};
    float tv[6] = {1, 2, 3, 4, 5, 6}, rv[3] = {7, 8, 9};
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_output(&b, "z", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "ax", TB_INT64, 1, one1, &zero, true);
    tb_init_tensor(&b, "two1", TB_INT64, 1, one1, &two, true);
    tb_init_tensor(&b, "one1", TB_INT64, 1, one1, &one, true);
    tb_init_tensor(&b, "t", TB_FLOAT, 2, dt, tv, true);
    tb_init_tensor(&b, "row", TB_FLOAT, 2, dr, rv, true);
        tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "g", "s,i0", "n");
    tb_node(&b, "Unsqueeze", "u", "n,ax", "nv");
    Onnx__NodeProto *cat = tb_node(&b, "Concat", "cat", "nv,two1", "reps");
    tb_attr_i(&b, cat, "axis", 0);
    Onnx__NodeProto *cat1 = tb_node(&b, "Concat", "cat1", "nv,one1", "reps1");
    tb_attr_i(&b, cat1, "axis", 0);
    tb_node(&b, "Tile", "tile", "t,reps", "y");
    tb_node(&b, "Tile", "tile_row", "row,reps1", "z");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    const cv_type *t = &m->funcs[0]->returns[0]->type;
    assert_string_equal(t->shape.d[0].sym, "2*N");
    assert_int_equal(t->shape.d[1].n, 6);
    assert_string_equal(m->funcs[0]->returns[1]->type.shape.d[0].sym, "N");
    for (int64_t n = 1; n <= 5; n += 2) {
        cv_tensor in, out[2];
        int64_t dims[2] = {n, 4};
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, 2, dims), 0);
        assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, out, &d), 0);
        assert_int_equal(out[0].dims[0], 2 * n);
        assert_int_equal(out[0].dims[1], 6);
        for (int64_t i = 0; i < out[0].numel; i++)
            assert_true(((float *)out[0].data)[i] == tv[(i / 6 % 2) * 3 + i % 3]);
        assert_int_equal(out[1].dims[0], n);
        for (int64_t i = 0; i < out[1].numel; i++)
            assert_true(((float *)out[1].data)[i] == rv[i % 3]);
        cv_tensor_free(&in);
        cv_tensor_free(&out[0]);
        cv_tensor_free(&out[1]);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

/* table[:x.shape[0]] (nanoGPT's bias[:, :, :T, :T]): a Slice whose end
 * is a symbol becomes a gather by arange(N), so N <= 6 is a fact, and the
 * interpreter reads the first N rows. */
static void test_slice_symbolic_end(void **state)
{
    (void)state;
    tb b;
    tb_init(&b, 14);
    int64_t dx[2] = {TB_N, 4}, zero = 0, one1[1] = {1}, dt[2] = {6, 3};
    float table[18];
    for (int i = 0; i < 18; i++)
        table[i] = (float)i;
    tb_input(&b, "x", TB_FLOAT, 2, dx);
    tb_output(&b, "y", TB_FLOAT, -1, NULL);
    tb_init_tensor(&b, "i0", TB_INT64, 0, NULL, &zero, true);
    tb_init_tensor(&b, "ax", TB_INT64, 1, one1, &zero, true);
    tb_init_tensor(&b, "table", TB_FLOAT, 2, dt, table, true);
    tb_node(&b, "Shape", "shape", "x", "s");
    tb_node(&b, "Gather", "g", "s,i0", "n");
    tb_node(&b, "Unsqueeze", "u", "n,ax", "end");
    tb_node(&b, "Slice", "rows", "table,ax,end,ax", "y");
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = load_ok(&b, &d);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    assert_string_equal(m->funcs[0]->returns[0]->type.shape.d[0].sym, "N");
    const cv_sym_fact *facts;
    assert_int_equal(cv_module_facts(m, &facts), 1);
    assert_string_equal(facts[0].sym, "N");
    assert_int_equal(facts[0].max, 6);
    for (int64_t n = 1; n <= 6; n += 5) {
        cv_tensor in, out;
        int64_t dims[2] = {n, 4};
        assert_int_equal(cv_tensor_alloc(&in, CV_F32, 2, dims), 0);
        assert_int_equal(cv_interp_run(m->funcs[0], &in, 1, &out, &d), 0);
        assert_int_equal(out.dims[0], n);
        for (int64_t i = 0; i < out.numel; i++)
            assert_true(((float *)out.data)[i] == (float)i);
        cv_tensor_free(&in);
        cv_tensor_free(&out);
    }
    cv_module_free(m);
    cv_diag_free(&d);
    tb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_subgraph_evaluated),
        cmocka_unit_test(test_symbolic_arithmetic_folds),
        cmocka_unit_test(test_range_over_symbol),
        cmocka_unit_test(test_range_over_data_refused),
        cmocka_unit_test(test_reshape_symbolic_round_trip),
        cmocka_unit_test(test_positional_bound),
        cmocka_unit_test(test_range_from_symbol),
        cmocka_unit_test(test_rnn_symbolic_matches_unrolled),
        cmocka_unit_test(test_constant_of_symbolic_shape),
        cmocka_unit_test(test_tile_symbolic_repeats),
        cmocka_unit_test(test_slice_symbolic_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
