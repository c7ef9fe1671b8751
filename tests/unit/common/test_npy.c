#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/npy.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp;   /* owned: the group's temp dir */

/* The same element values on both sides (all exact in f16). */
static const char *const PY_VALS =
    "import numpy as np, sys, os\n"
    "from numpy.lib import format as F\n"
    "def vals(dt, shape):\n"
    "    i = np.arange(int(np.prod(shape)))\n"
    "    if dt == 'b1': v = (i % 3 == 0)\n"
    "    elif dt[0] == 'f': v = (i * 0.5 - 2).astype(dt)\n"
    "    elif dt == 'u1': v = i.astype(dt)\n"
    "    else: v = (i - 3).astype(dt)\n"
    "    return v.reshape(shape)\n"
    "d = sys.argv[1]\n"
    "DTS = ['f4', 'f8', 'f2', 'i8', 'i4', 'i1', 'u1', 'b1']\n";

static const struct { const char *py; cv_dtype dt; } DTS[] = {
    {"f4", CV_F32}, {"f8", CV_F64}, {"f2", CV_F16}, {"i8", CV_I64},
    {"i4", CV_I32}, {"i1", CV_I8},  {"u1", CV_U8},  {"b1", CV_BOOL},
};
#define N_DTS (sizeof DTS / sizeof DTS[0])

static double expect_val(cv_dtype dt, int64_t i)
{
    if (dt == CV_BOOL)
        return i % 3 == 0;
    if (cv_dtype_is_float(dt))
        return (double)i * 0.5 - 2;
    return dt == CV_U8 ? (double)i : (double)(i - 3);
}

static void fill(cv_dtype dt, void *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cv_dtype_store(dt, buf, i, expect_val(dt, i));
}

static void check_vals(const cv_npy *a, cv_dtype dt)
{
    int64_t n = cv_npy_numel(a);
    for (int64_t i = 0; i < n; i++)
        assert_true(cv_dtype_load(dt, a->data, i) == expect_val(dt, i));
}

/* PY_VALS followed by body; malloc'd. */
static char *script(const char *body)
{
    size_t a = strlen(PY_VALS), b = strlen(body);
    char *s = malloc(a + b + 1);
    assert_non_null(s);
    memcpy(s, PY_VALS, a);
    memcpy(s + a, body, b + 1);
    return s;
}

static int first_code(const cv_diag *d) { return d->n > 0 ? d->v[0].code : 0; }

static int group_setup(void **state)
{
    tmp = cv_tmpdir_make("npy");
    return tmp ? 0 : -1;
}

static int group_teardown(void **state) { return cv_tmpdir_remove(tmp); }

static void test_round_trip_every_dtype(void **state)
{
    static const int64_t shapes[][3] = {{2, 3, 4}, {5, 0, 0}, {0, 3, 0}};
    static const int ranks[] = {3, 1, 2};
    for (size_t k = 0; k < N_DTS; k++) {
        for (size_t s = 0; s < 3; s++) {
            char *path = cv_tmpdir_path(tmp, "rt.npy");
            unsigned char buf[24 * 8];
            int64_t n = 1;
            for (int i = 0; i < ranks[s]; i++)
                n *= shapes[s][i];
            fill(DTS[k].dt, buf, n);
            cv_diag d;
            cv_diag_init(&d);
            assert_int_equal(cv_npy_write(path, DTS[k].dt, ranks[s], shapes[s], buf, &d), 0);
            cv_npy a;
            assert_int_equal(cv_npy_read(path, &a, &d), 0);
            assert_int_equal(a.dtype, DTS[k].dt);
            assert_int_equal(a.rank, ranks[s]);
            for (int i = 0; i < ranks[s]; i++)
                assert_int_equal(a.dims[i], shapes[s][i]);
            assert_int_equal(a.nbytes, (size_t)n * cv_dtype_size(DTS[k].dt));
            assert_memory_equal(a.data, buf, a.nbytes);
            cv_npy_free(&a);
            cv_diag_free(&d);
            free(path);
        }
    }
}

static void test_scalar_round_trip_and_alignment(void **state)
{
    char *path = cv_tmpdir_path(tmp, "scalar.npy");
    double v = 3.25;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_npy_write(path, CV_F64, 0, NULL, &v, &d), 0);
    FILE *f = fopen(path, "rb");
    unsigned char raw[256];
    size_t len = fread(raw, 1, sizeof raw, f);
    fclose(f);
    size_t hlen = raw[8] | raw[9] << 8;
    assert_int_equal((10 + hlen) % 64, 0);
    assert_int_equal(raw[10 + hlen - 1], '\n');
    assert_int_equal(len, 10 + hlen + 8);
    assert_non_null(strstr((const char *)raw + 10, "'shape': (), }"));
    cv_npy a;
    assert_int_equal(cv_npy_read(path, &a, &d), 0);
    assert_int_equal(a.rank, 0);
    assert_int_equal(cv_npy_numel(&a), 1);
    assert_true(*(double *)a.data == 3.25);
    cv_npy_free(&a);
    cv_diag_free(&d);
    free(path);
}

/* np.save files of every dtype, a 0-d f64, v2.0 and v3.0 headers. */
static void test_reads_numpy_files(void **state)
{
    char *code = script(
             "for dt in DTS: np.save(os.path.join(d, 'np_' + dt + '.npy'), vals(dt, (2, 3, 4)))\n"
             "np.save(os.path.join(d, 'np_0d.npy'), np.float64(-7.5))\n"
             "np.save(os.path.join(d, 'np_1d.npy'), vals('i8', (5,)))\n"
             "for v in (2, 3):\n"
             "    with open(os.path.join(d, 'np_v%d.npy' % v), 'wb') as f:\n"
             "        F.write_array(f, vals('f4', (3, 2)), version=(v, 0))\n");
    const char *args[] = {tmp, NULL};
    assert_int_equal(cv_pyrun(code, args, NULL), 0);
    free(code);
    cv_diag d;
    cv_diag_init(&d);
    for (size_t k = 0; k < N_DTS; k++) {
        char name[32];
        snprintf(name, sizeof name, "np_%s.npy", DTS[k].py);
        char *path = cv_tmpdir_path(tmp, name);
        cv_npy a;
        assert_int_equal(cv_npy_read(path, &a, &d), 0);
        assert_int_equal(a.dtype, DTS[k].dt);
        assert_int_equal(a.rank, 3);
        assert_int_equal(a.dims[0], 2);
        assert_int_equal(a.dims[2], 4);
        check_vals(&a, DTS[k].dt);
        cv_npy_free(&a);
        free(path);
    }
    static const struct { const char *name; cv_dtype dt; int rank; int64_t d0; } more[] = {
        {"np_0d.npy", CV_F64, 0, 0}, {"np_1d.npy", CV_I64, 1, 5},
        {"np_v2.npy", CV_F32, 2, 3}, {"np_v3.npy", CV_F32, 2, 3},
    };
    for (size_t k = 0; k < 4; k++) {
        char *path = cv_tmpdir_path(tmp, more[k].name);
        cv_npy a;
        assert_int_equal(cv_npy_read(path, &a, &d), 0);
        assert_int_equal(a.dtype, more[k].dt);
        assert_int_equal(a.rank, more[k].rank);
        if (a.rank)
            assert_int_equal(a.dims[0], more[k].d0);
        if (k == 0)
            assert_true(*(double *)a.data == -7.5);
        else
            check_vals(&a, a.dtype);
        cv_npy_free(&a);
        free(path);
    }
    assert_int_equal(d.n, 0);
    cv_diag_free(&d);
}

static void test_numpy_reads_our_files(void **state)
{
    static const int64_t shape[] = {2, 3, 4};
    cv_diag d;
    cv_diag_init(&d);
    for (size_t k = 0; k < N_DTS; k++) {
        unsigned char buf[24 * 8];
        fill(DTS[k].dt, buf, 24);
        char name[32];
        snprintf(name, sizeof name, "cv_%s.npy", DTS[k].py);
        char *path = cv_tmpdir_path(tmp, name);
        assert_int_equal(cv_npy_write(path, DTS[k].dt, 3, shape, buf, &d), 0);
        free(path);
    }
    int64_t one = 9;
    char *path = cv_tmpdir_path(tmp, "cv_0d.npy");
    assert_int_equal(cv_npy_write(path, CV_I64, 0, NULL, &one, &d), 0);
    free(path);
    char *out;
    char *code = script(
             "for dt in DTS:\n"
             "    a = np.load(os.path.join(d, 'cv_' + dt + '.npy'))\n"
             "    e = vals(dt, (2, 3, 4))\n"
             "    assert a.dtype == e.dtype and a.shape == e.shape, (dt, a.dtype, a.shape)\n"
             "    assert np.array_equal(a, e), (dt, a, e)\n"
             "z = np.load(os.path.join(d, 'cv_0d.npy'))\n"
             "assert z.shape == () and z.dtype == np.int64 and z == 9\n"
             "print('checked', len(DTS) + 1)\n");
    const char *args[] = {tmp, NULL};
    assert_int_equal(cv_pyrun(code, args, &out), 0);
    assert_string_equal(out, "checked 9\n");
    free(out);
    free(code);
    cv_diag_free(&d);
}

/* numpy-written files that must be refused. */
static void test_refuses_numpy_fortran_and_big_endian(void **state)
{
    char *code = script(
             "np.save(os.path.join(d, 'fortran.npy'), np.asfortranarray(vals('f4', (3, 2))))\n"
             "np.save(os.path.join(d, 'big.npy'), vals('f4', (3, 2)).astype('>f4'))\n"
             "np.save(os.path.join(d, 'i2.npy'), vals('i2', (3,)))\n"
             "np.save(os.path.join(d, 'rec.npy'), np.zeros(2, dtype=[('a', '<f4')]))\n");
    const char *args[] = {tmp, NULL};
    assert_int_equal(cv_pyrun(code, args, NULL), 0);
    free(code);
    static const char *const names[] = {"fortran.npy", "big.npy", "i2.npy", "rec.npy"};
    for (size_t k = 0; k < 4; k++) {
        char *path = cv_tmpdir_path(tmp, names[k]);
        cv_diag d;
        cv_diag_init(&d);
        cv_npy a;
        assert_int_equal(cv_npy_read(path, &a, &d), -1);
        assert_int_equal(first_code(&d), 1103);
        assert_null(a.data);
        cv_diag_free(&d);
        free(path);
    }
}

/* Builds a .npy image: magic, version, a header padded to 64, then data. */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *data,
                       size_t n)
{
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
    size_t padded = (pre + hl + 1 + 63) / 64 * 64 - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        out[8 + i] = (unsigned char)(padded >> (8 * i));
    memcpy(out + pre, dict, hl);
    memset(out + pre + hl, ' ', padded - hl - 1);
    out[pre + padded - 1] = '\n';
    memcpy(out + pre + padded, data, n);
    return pre + padded + n;
}

static int read_code(const unsigned char *buf, size_t len)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_npy a;
    int rc = cv_npy_read_mem(buf, len, "bad.npy", &a, &d);
    int code = rc == 0 ? 0 : first_code(&d);
    if (rc == 0)
        cv_npy_free(&a);
    else
        assert_non_null(d.v[0].span.file);
    cv_diag_free(&d);
    return code;
}

static int dict_code(const char *dict, size_t data_len)
{
    static unsigned char buf[1 << 12];
    static const unsigned char zeros[64];
    return read_code(buf, make_npy(buf, 1, dict, zeros, data_len));
}

#define DICT(descr, fortran, shape) \
    "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }"

static void test_malformed_headers(void **state)
{
    assert_int_equal(dict_code(DICT("<f4", "False", "(2, 3)"), 24), 0);
    assert_int_equal(dict_code("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}", 8), 0);
    assert_int_equal(dict_code(DICT("<f4", "False", "(2, 3,)"), 24), 0);
    static const char *const bad[] = {
        "{'descr': '<f4', 'shape': (2,), }",                                   /* missing key */
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }",
        DICT("<f4", "False", "(2)"),                                           /* an int, not a tuple */
        DICT("<f4", "false", "(2,)"),
        DICT("<f4", "False", "(-2,)"),
        DICT("<f4", "False", "(2,, 3)"),
        DICT("<f4", "False", "(99999999999999999999,)"),                       /* too many digits */
        DICT("<f4", "False", "(4294967296, 4294967296)"),                      /* product overflows */
        DICT("<f4", "False", "(2,)") " x",
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }",
        "{'descr': <f4, 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ",
        "",
        "[1, 2]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("case %zu: %s\n", i, bad[i]);
        assert_int_equal(dict_code(bad[i], 8), 1102);
    }
}

static void test_unsupported_dtypes_and_layouts(void **state)
{
    static const char *const bad[] = {
        DICT(">f4", "False", "(2,)"), DICT("<c8", "False", "(2,)"), DICT("<i2", "False", "(2,)"),
        DICT("<U3", "False", "(2,)"), DICT("<f4", "True", "(2, 2)"),
        DICT("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"),                  /* rank 9 */
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("case %zu: %s\n", i, bad[i]);
        assert_int_equal(dict_code(bad[i], 16), 1103);
    }
}

static void test_magic_version_and_sizes(void **state)
{
    unsigned char buf[512];
    size_t n = make_npy(buf, 1, DICT("<f4", "False", "(2,)"), "\0\0\0\0\0\0\0\0", 8);
    assert_int_equal(read_code(buf, n), 0);
    assert_int_equal(read_code(buf, n - 1), 1104);          /* data truncated */
    assert_int_equal(read_code(buf, 70), 1104);             /* header truncated */
    assert_int_equal(read_code(buf, 7), 1104);              /* preamble truncated */
    assert_int_equal(read_code(buf, 0), 1104);
    n = make_npy(buf, 1, DICT("<f4", "False", "(2,)"), "\0\0\0\0\0\0\0\0\0", 9);
    assert_int_equal(read_code(buf, n), 1105);              /* trailing byte */
    buf[6] = 4;
    assert_int_equal(read_code(buf, n), 1102);              /* version 4.0 */
    buf[6] = 1;
    buf[7] = 1;
    assert_int_equal(read_code(buf, n), 1102);              /* version 1.1 */
    assert_int_equal(read_code((const unsigned char *)"PK\3\4 not numpy", 15), 1101);
    assert_int_equal(read_code((const unsigned char *)"\x93NUMPx\1\0", 8), 1101);
    n = make_npy(buf, 2, DICT("<i8", "False", "(1,)"), "\1\0\0\0\0\0\0\0", 8);
    assert_int_equal(read_code(buf, n), 0);
    buf[10] = 0x20;                                         /* header length 2 MiB */
    assert_int_equal(read_code(buf, n), 1102);
}

static void test_bool_normalized(void **state)
{
    unsigned char buf[256];
    size_t n = make_npy(buf, 1, DICT("|b1", "False", "(3,)"), "\0\2\xff", 3);
    cv_diag d;
    cv_diag_init(&d);
    cv_npy a;
    assert_int_equal(cv_npy_read_mem(buf, n, "b.npy", &a, &d), 0);
    assert_memory_equal(a.data, "\0\1\1", 3);
    cv_npy_free(&a);
    cv_diag_free(&d);
}

static void test_io_and_writer_errors(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_npy a;
    char *path = cv_tmpdir_path(tmp, "missing.npy");
    assert_int_equal(cv_npy_read(path, &a, &d), -1);
    assert_int_equal(first_code(&d), 9004);
    assert_int_equal(cv_npy_read(tmp, &a, &d), -1);          /* a directory */
    cv_diag_clear(&d);
    int64_t dims[] = {2};
    uint16_t v[2] = {0};
    assert_int_equal(cv_npy_write(path, CV_BF16, 1, dims, v, &d), -1);
    assert_int_equal(first_code(&d), 1103);
    cv_diag_clear(&d);
    int64_t neg[] = {-1};
    assert_int_equal(cv_npy_write(path, CV_F32, 1, neg, v, &d), -1);
    assert_int_equal(first_code(&d), 3005);
    assert_int_equal(cv_npy_write("/nonexistent-dir/x.npy", CV_F32, 0, NULL, v, &d), -1);
    assert_int_equal(d.v[d.n - 1].code, 9004);
    cv_diag_free(&d);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_dtype),
        cmocka_unit_test(test_scalar_round_trip_and_alignment),
        cmocka_unit_test(test_reads_numpy_files),
        cmocka_unit_test(test_numpy_reads_our_files),
        cmocka_unit_test(test_refuses_numpy_fortran_and_big_endian),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_unsupported_dtypes_and_layouts),
        cmocka_unit_test(test_magic_version_and_sizes),
        cmocka_unit_test(test_bool_normalized),
        cmocka_unit_test(test_io_and_writer_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
