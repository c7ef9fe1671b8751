/* The canonical CU-IR printer: print(parse(text)) == text for canonical
 * text, parse(print(m)) equals m, and printing is a fixed point, on the
 * corpus, on modules built with the builder API, on random modules; every
 * f16 and bf16 value and a sample of f32 values read back bit for bit;
 * floats are spelled shortest-first; CV_PRINT_NO_LOC leaves locations out. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/cuir_text.h"
#include "tests/support/cuirtest.h"

/* Parses text that must be valid syntax (verification not required). */
static cv_module *must_parse(const char *text, const char *name)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), name, &d);
    if (!m) {
        cv_diag_print(&d, stderr, false);
        fprintf(stderr, "--- text:\n%s\n", text);
    }
    assert_non_null(m);
    cv_diag_free(&d);
    return m;
}

/* print(m) -> parse -> equal to m, and printing again gives the same text.
 * Returns the first print (malloc'd). */
static char *round_trip(const cv_module *m, unsigned flags)
{
    char *p1 = cv_module_print(m, flags);
    assert_non_null(p1);
    cv_module *m2 = must_parse(p1, "printed.cuir");
    if (!(flags & CV_PRINT_NO_LOC))
        assert_true(cv_cuirtest_equal(m, m2));
    char *p2 = cv_module_print(m2, flags);
    if (strcmp(p1, p2) != 0)
        fprintf(stderr, "--- first print:\n%s--- second print:\n%s", p1, p2);
    assert_string_equal(p1, p2);
    free(p2);
    cv_module_free(m2);
    return p1;
}

static void test_corpus_round_trip(void **state)
{
    (void)state;
    const char *dirs[] = {"accept", "reject"};
    int canonical = 0;
    for (int k = 0; k < 2; k++) {
        char **files;
        int n = cv_cuirtest_list(dirs[k], &files);
        for (int i = 0; i < n; i++) {
            size_t len;
            char *text = cv_cuirtest_read(files[i], &len);
            cv_diag d;
            cv_diag_init(&d);
            cv_module *m = cv_cuir_parse(text, len, files[i], &d);
            if (m) {  /* rejected files that parse fail only verification */
                free(round_trip(m, 0));
                free(round_trip(m, CV_PRINT_NO_LOC));
                /* A file that starts with the header is canonical text. */
                if (strncmp(text, "cuir 1\n", 7) == 0) {
                    char *p = cv_module_print(m, 0);
                    if (strcmp(p, text) != 0)
                        fprintf(stderr, "%s is not canonical; printed:\n%s", files[i], p);
                    assert_string_equal(p, text);
                    free(p);
                    canonical++;
                }
            }
            cv_module_free(m);
            cv_diag_free(&d);
            free(text);
            free(files[i]);
        }
        free(files);
    }
    assert_true(canonical >= 5);
}

static void test_no_loc(void **state)
{
    (void)state;
    cv_module *m = must_parse("cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n"
                              "  %0 = relu(%x) : f32[2]  loc(fused[\"a.py\":1:2, \"Relu_0\"])\n"
                              "  return %0\n}\n", "t.cuir");
    char *with = cv_module_print(m, 0), *without = cv_module_print(m, CV_PRINT_NO_LOC);
    assert_non_null(strstr(with, "  loc(fused[\"a.py\":1:2, \"Relu_0\"])\n"));
    assert_null(strstr(without, "loc("));
    assert_string_equal(without, "cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n"
                                 "  %0 = relu(%x) : f32[2]\n  return %0\n}\n");
    free(with);
    free(without);
    cv_module_free(m);
}

/* ---- modules made with the builder ------------------------------------- */

static cv_type ty(cv_dtype dt, int rank, const int64_t *dims, const char *const *syms)
{
    cv_type t = {.dtype = dt, .shape = {.rank = rank}};
    for (int i = 0; i < rank; i++) {
        t.shape.d[i].n = dims[i];
        t.shape.d[i].sym = syms ? syms[i] : NULL;
    }
    return t;
}

static void test_builder_module(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_module_new("built.cuir");
    cv_func *f = cv_func_new(m, "built model");
    const char *batch = cv_module_intern(m, "batch size", 10);
    cv_type tx = ty(CV_F32, 2, (int64_t[]){0, 4}, (const char *[]){batch, NULL});
    cv_value *x = cv_func_add_input(f, "x:0", &tx);
    cv_type tw = ty(CV_F32, 1, (int64_t[]){4}, NULL);
    float w[4] = {0.5f, -1.25f, 3.0f, 1e-3f};
    cv_value *pw = cv_func_add_dense(f, "w", &tw, w, sizeof w)->value;
    cv_func_add_weights(f, "unused", &tw, "dir/w.safetensors", "layer \"1\"");
    cv_op *add = cv_op_new(f, "add", (cv_value *[]){x, pw}, 2);
    cv_op_add_loc(add, "model.cvl.py", 3, 7);
    assert_int_equal(cv_op_finish(add, 1, &d), 0);
    cv_op *clip = cv_op_new(f, "clip", (cv_value *[]){cv_op_result(add)}, 1);
    cv_op_set_float(clip, "max", 6.0);
    cv_op_set_float(clip, "min", -0.0);
    cv_op_add_loc(clip, "Clip_7", 0, 0);
    cv_op_add_loc(clip, "model.cvl.py", 4, 1);
    assert_int_equal(cv_op_finish(clip, 1, &d), 0);
    cv_op *sp = cv_op_new(f, "split", (cv_value *[]){cv_op_result(clip)}, 1);
    cv_op_set_int(sp, "axis", 1);
    cv_op_set_ints(sp, "sizes", (int64_t[]){1, 3}, 2);
    assert_int_equal(cv_op_finish(sp, 2, &d), 0);
    cv_func_add_output_type(f, &sp->results[1]->type);
    cv_func_set_returns(f, &sp->results[1], 1);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    char *p = round_trip(m, 0);
    assert_string_equal(p,
        "cuir 1\n"
        "model @\"built model\"(%\"x:0\": f32[\"batch size\",4]) -> (f32[\"batch size\",3]) {\n"
        "  param %w: f32[4] = dense(0.5, -1.25, 3.0, 0.001)\n"
        "  param %unused: f32[4] = weights(\"dir/w.safetensors\", \"layer \\\"1\\\"\")\n"
        "  %0 = add(%\"x:0\", %w) : f32[\"batch size\",4]  loc(\"model.cvl.py\":3:7)\n"
        "  %1 = clip(%0) {min=-0.0, max=6.0} : f32[\"batch size\",4]  "
        "loc(fused[\"Clip_7\", \"model.cvl.py\":4:1])\n"
        "  %2, %3 = split(%1) {axis=1, sizes=[1,3]} : f32[\"batch size\",1], f32[\"batch size\",3]\n"
        "  return %3\n"
        "}\n");
    free(p);
    cv_module_free(m);
    cv_diag_free(&d);
}

/* ---- random modules ------------------------------------------------------ */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double rnd_double(uint64_t *s)
{
    switch (rnd(s) % 6) {
    case 0: {
        uint64_t bits = rnd(s);
        double v;
        memcpy(&v, &bits, sizeof v);
        return v;  /* anything: NaN, inf, subnormal */
    }
    case 1: return (double)(int64_t)(rnd(s) % 2001) - 1000;
    case 2: return (double)(int64_t)(rnd(s) % 2001) / 100.0;
    case 3: return (rnd(s) & 1) ? -0.0 : 0.0;
    case 4: return ldexp((double)(rnd(s) % 1000), (int)(rnd(s) % 2100) - 1100);
    default: return 1.0 / (double)(rnd(s) % 97 + 1);
    }
}

/* A valid UTF-8 name, sometimes needing quotes. */
static void rnd_name(uint64_t *s, char *buf, int tag)
{
    static const char *parts[] = {"a", "Z", "0", "_", ".", " ", "\"", "\\", "\t", "\xc3\xa9",
                                  "%", "@", "#", "\x01", "\xe6\x97\xa5", "x", "conv", ":"};
    int n = (int)(rnd(s) % 5) + 1, len = sprintf(buf, "%d", tag);
    for (int i = 0; i < n; i++)
        len += sprintf(buf + len, "%s", parts[rnd(s) % (sizeof parts / sizeof parts[0])]);
}

static cv_module *random_module(uint64_t *s, cv_diag *d)
{
    char name[64];
    cv_module *m = cv_module_new("random.cuir");
    rnd_name(s, name, 0);
    cv_func *f = cv_func_new(m, name);
    const char *sym = (rnd(s) & 1) ? cv_module_intern(m, "N", 1) : cv_module_intern(m, "n 1", 3);
    int64_t k = (int64_t)(rnd(s) % 4) + 1;
    cv_type t = ty(CV_F32, 2, (int64_t[]){0, k}, (const char *[]){sym, NULL});
    rnd_name(s, name, 1);
    cv_value *cur = cv_func_add_input(f, name, &t), *x = cur;
    static const cv_dtype dts[] = {CV_F32, CV_F16, CV_BF16, CV_I8, CV_U8, CV_I32, CV_I64, CV_BOOL};
    for (int i = 0; i < 3; i++) {
        cv_dtype dt = dts[rnd(s) % 8];
        int64_t n = (int64_t)(rnd(s) % 6);
        cv_type pt = ty(dt, 1, &n, NULL);
        unsigned char data[6 * 8];
        for (size_t b = 0; b < sizeof data; b++)
            data[b] = (unsigned char)rnd(s);
        for (int64_t e = 0; dt == CV_BOOL && e < n; e++)
            data[e] &= 1;
        rnd_name(s, name, 10 + i);
        cv_func_add_dense(f, name, &pt, data, (size_t)n * cv_dtype_size(dt));
    }
    rnd_name(s, name, 20);
    cv_type wt = ty(CV_F32, 2, (int64_t[]){3, k}, NULL);
    cv_func_add_weights(f, name, &wt, "w.safetensors", name);
    int n_ops = (int)(rnd(s) % 12) + 1;
    for (int i = 0; i < n_ops; i++) {
        static const char *ops[] = {"relu", "neg", "leaky_relu", "clip", "add", "mul", "hard_sigmoid"};
        const char *opn = ops[rnd(s) % 7];
        bool binary = !strcmp(opn, "add") || !strcmp(opn, "mul");
        cv_op *op = cv_op_new(f, opn, (cv_value *[]){cur, x}, binary ? 2 : 1);
        if (!strcmp(opn, "leaky_relu") || !strcmp(opn, "hard_sigmoid"))
            cv_op_set_float(op, "alpha", rnd_double(s));
        if (!strcmp(opn, "clip") || !strcmp(opn, "hard_sigmoid"))
            cv_op_set_float(op, !strcmp(opn, "clip") ? "max" : "beta", rnd_double(s));
        for (int l = (int)(rnd(s) % 3); l > 0; l--) {
            rnd_name(s, name, 30 + l);
            cv_op_add_loc(op, name, (int)(rnd(s) % 3), (int)(rnd(s) % 3));
        }
        assert_int_equal(cv_op_finish(op, 1, d), 0);
        cur = cv_op_result(op);
    }
    cv_func_add_output_type(f, &cur->type);
    cv_func_set_returns(f, &cur, 1);
    return m;
}

static void test_random_modules(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 300; i++) {
        cv_diag d;
        cv_diag_init(&d);
        cv_module *m = random_module(&seed, &d);
        assert_int_equal(cv_verify(m, 0, &d), 0);
        free(round_trip(m, 0));
        free(round_trip(m, CV_PRINT_NO_LOC));
        cv_module_free(m);
        cv_diag_free(&d);
    }
}

/* ---- numbers ------------------------------------------------------------- */

/* A dense param of n elements of dt from raw bytes, printed and read back. */
static void dense_round_trip(cv_dtype dt, const void *data, int64_t n)
{
    cv_module *m = cv_module_new("dense.cuir");
    cv_func *f = cv_func_new(m, "d");
    cv_type t = ty(dt, 1, &n, NULL);
    cv_value *v = cv_func_add_dense(f, "c", &t, data, (size_t)n * cv_dtype_size(dt))->value;
    cv_func_add_output_type(f, &t);
    cv_func_set_returns(f, &v, 1);
    char *p = cv_module_print(m, 0);
    cv_module *m2 = must_parse(p, "dense.cuir");
    const cv_param *q = m2->funcs[0]->params[0];
    assert_int_equal(q->nbytes, (size_t)n * cv_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
        double a = cv_dtype_load(dt, data, i), b = cv_dtype_load(dt, q->data, i);
        if (isnan(a)) {
            assert_true(isnan(b));
        } else if (memcmp((const char *)data + i * (int64_t)cv_dtype_size(dt),
                          (const char *)q->data + i * (int64_t)cv_dtype_size(dt),
                          cv_dtype_size(dt)) != 0) {
            fprintf(stderr, "%s element %lld: %.17g came back as %.17g\n", cv_dtype_name(dt),
                    (long long)i, a, b);
            fail();
        }
    }
    free(p);
    cv_module_free(m2);
    cv_module_free(m);
}

static void test_every_half(void **state)
{
    (void)state;
    uint16_t *h = malloc(65536 * sizeof *h);
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    dense_round_trip(CV_F16, h, 65536);
    dense_round_trip(CV_BF16, h, 65536);
    free(h);
}

static void test_f32_sample(void **state)
{
    (void)state;
    enum { N = 200000 };
    uint32_t *v = malloc(N * sizeof *v);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)rnd(&s);
    v[0] = 0x00000001;  /* smallest subnormal */
    v[1] = 0x7f7fffff;  /* largest finite */
    v[2] = 0x80000000;  /* -0 */
    dense_round_trip(CV_F32, v, N);
    free(v);
}

static void spelled(double v, const char *want)
{
    char buf[48];
    cv_cuir_format_float(CV_F64, v, buf, sizeof buf);
    assert_string_equal(buf, want);
}

static void test_float_spelling(void **state)
{
    (void)state;
    spelled(1.0, "1.0");
    spelled(0.1, "0.1");
    spelled(0.1 + 0.2, "0.30000000000000004");
    spelled(-0.0, "-0.0");
    spelled(1e300, "1e+300");
    spelled(5e-324, "5e-324");
    spelled(123456789.0, "123456789.0");
    spelled(1e17, "1e+17");
    spelled(__builtin_inf(), "inf");
    spelled(-__builtin_inf(), "-inf");
    spelled(__builtin_nan(""), "nan");
    char buf[48];
    cv_cuir_format_float(CV_F32, (double)0.1f, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    cv_cuir_format_float(CV_F16, 65504.0, buf, sizeof buf);
    assert_string_equal(buf, "6.55e+04");
    cv_cuir_format_float(CV_BF16, 3.140625, buf, sizeof buf);
    assert_string_equal(buf, "3.14");
    /* An int written for a float attribute prints as a float. */
    cv_module *m = must_parse("cuir 1\nmodel @m(%x: f32[2]) -> (f32[2]) {\n"
                              "  %0 = clip(%x) {min=0, max=6} : f32[2]\n  return %0\n}\n", "t.cuir");
    char *p = cv_module_print(m, 0);
    assert_non_null(strstr(p, "{min=0.0, max=6.0}"));
    free(p);
    cv_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_round_trip),
        cmocka_unit_test(test_no_loc),
        cmocka_unit_test(test_builder_module),
        cmocka_unit_test(test_random_modules),
        cmocka_unit_test(test_every_half),
        cmocka_unit_test(test_f32_sample),
        cmocka_unit_test(test_float_spelling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
