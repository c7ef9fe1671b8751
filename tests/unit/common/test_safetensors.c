#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"
#include "common/safetensors_internal.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *tmp;   /* owned: the group's temp dir */

/* Writes safetensors files with struct + json only (the safetensors package
 * is not installed), then prints "name code" for every malformed file. */
static const char *const PY_WRITE =
    "import struct, json, sys, os\n"
    "d = sys.argv[1]\n"
    "def blob(h, data=b'', hlen=None):\n"
    "    return struct.pack('<Q', len(h) if hlen is None else hlen) + h + data\n"
    "def st(entries, data, meta=None, pad=0):\n"
    "    h = dict(entries)\n"
    "    if meta is not None: h['__metadata__'] = meta\n"
    "    return blob(json.dumps(h).encode() + b' ' * pad, data)\n"
    "def put(name, b):\n"
    "    with open(os.path.join(d, name), 'wb') as f: f.write(b)\n"
    "def ent(dt, shape, b, e): return {'dtype': dt, 'shape': shape, 'data_offsets': [b, e]}\n"
    "v = [i * 0.5 - 2 for i in range(6)]\n"
    "ints = list(range(-3, 3))\n"
    "parts = [('f32', 'F32', [2, 3], struct.pack('<6f', *v)),\n"
    "  ('f64', 'F64', [3, 2], struct.pack('<6d', *v)),\n"
    "  ('f16', 'F16', [6], struct.pack('<6e', *v)),\n"
    "  ('bf16', 'BF16', [2, 3], b''.join(struct.pack('<f', x)[2:] for x in v)),\n"
    "  ('i8', 'I8', [6], struct.pack('<6b', *ints)),\n"
    "  ('u8', 'U8', [6], bytes(range(6))),\n"
    "  ('i32', 'I32', [1, 6], struct.pack('<6i', *ints)),\n"
    "  ('i64', 'I64', [6, 1], struct.pack('<6q', *ints)),\n"
    "  ('bool', 'BOOL', [6], bytes([1, 0, 0, 1, 0, 0])),\n"
    "  ('scalar', 'F32', [], struct.pack('<f', 7.0)),\n"
    "  ('empty', 'F32', [0, 3], b'')]\n"
    "ents, data = [], b''\n"
    "for name, dt, shape, b in parts:\n"
    "    ents.append((name, ent(dt, shape, len(data), len(data) + len(b)))); data += b\n"
    "h = len(json.dumps(dict(ents)))\n"
    "put('ok_odd.st', st(ents, data, pad=(1 - h) % 8))\n"
    "put('ok_even.st', st(ents, data, meta={'format': 'pt'}, pad=(-h - len(', \"__metadata__\": {\"format\": \"pt\"}')) % 8))\n"
    "put('ok_overlap.st', st([('b', ent('I32', [1], 4, 8)), ('a', ent('I32', [2], 0, 8)),\n"
    "                         ('c', ent('I8', [4], 2, 6))], struct.pack('<2i', 5, 6) + b'\\0' * 4))\n"
    "g = ent('F32', [2], 0, 8); z = b'\\0' * 8\n"
    "def one(e): return st([('t', e)], z)\n"
    "bad = [('short', 1111, b'\\1\\2\\3'), ('hlen_beyond', 1111, blob(b'{}', hlen=1000)),\n"
    "  ('hlen_huge', 1111, blob(b'{}', z, hlen=1 << 40)), ('not_json', 1111, blob(b'{\"t\": ', z)),\n"
    "  ('not_object', 1111, blob(b'[1, 2]', z)), ('empty_header', 1111, blob(b'', z)),\n"
    "  ('dup_key', 1111, blob(('{\"t\": %s, \"t\": %s}' % (json.dumps(g), json.dumps(g))).encode(), z)),\n"
    "  ('entry_not_object', 1111, one(5)), ('dtype_not_string', 1111, one(dict(g, dtype=1))),\n"
    "  ('shape_negative', 1111, one(ent('F32', [-2], 0, 8))),\n"
    "  ('shape_float', 1111, one(ent('F32', [2.0], 0, 8))),\n"
    "  ('shape_missing', 1111, one({'dtype': 'F32', 'data_offsets': [0, 8]})),\n"
    "  ('rank9', 1111, one(ent('F32', [1] * 9, 0, 4))),\n"
    "  ('offsets_arity', 1111, one(dict(g, data_offsets=[0]))),\n"
    "  ('offsets_huge', 1111, one(ent('F32', [2], 0, 1 << 70))),\n"
    "  ('dtype_f8', 1112, one(ent('F8_E4M3', [8], 0, 8))), ('dtype_i16', 1112, one(ent('I16', [4], 0, 8))),\n"
    "  ('dtype_lower', 1112, one(ent('f32', [2], 0, 8))),\n"
    "  ('off_beyond', 1113, one(ent('F32', [2], 4, 12))), ('off_reversed', 1113, one(ent('F32', [2], 8, 0))),\n"
    "  ('off_negative', 1113, one(ent('F32', [2], -8, 0))), ('off_mismatch', 1113, one(ent('F32', [3], 0, 8))),\n"
    "  ('off_overflow', 1113, one(ent('F32', [1 << 62, 1 << 62], 0, 8)))]\n"
    "for name, code, b in bad:\n"
    "    put(name + '.st', b); print(name, code)\n";

static int first_code(const cv_diag *d) { return d->n > 0 ? d->v[0].code : 0; }

static int group_setup(void **state)
{
    tmp = cv_tmpdir_make("safetensors");
    if (!tmp)
        return -1;
    const char *args[] = {tmp, NULL};
    char *out = NULL;
    int rc = cv_pyrun(PY_WRITE, args, &out);
    *state = out;
    return rc == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    free(*state);
    return cv_tmpdir_remove(tmp);
}

static cv_safetensors *open_ok(const char *name)
{
    char *path = cv_tmpdir_path(tmp, name);
    cv_diag d;
    cv_diag_init(&d);
    cv_safetensors *st;
    int rc = cv_safetensors_open(path, &st, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_diag_free(&d);
    free(path);
    return st;
}

static double expect_val(cv_dtype dt, int64_t i)
{
    if (dt == CV_BOOL)
        return i % 3 == 0;
    if (cv_dtype_is_float(dt))
        return (double)i * 0.5 - 2;
    return dt == CV_U8 ? (double)i : (double)(i - 3);
}

static void check_all_dtypes(const cv_safetensors *st)
{
    static const struct { const char *name; cv_dtype dt; int rank; int64_t d0; } want[] = {
        {"bf16", CV_BF16, 2, 2}, {"bool", CV_BOOL, 1, 6}, {"f16", CV_F16, 1, 6},
        {"f32", CV_F32, 2, 2},   {"f64", CV_F64, 2, 3},   {"i32", CV_I32, 2, 1},
        {"i64", CV_I64, 2, 6},   {"i8", CV_I8, 1, 6},     {"u8", CV_U8, 1, 6},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const cv_st_tensor *t = cv_safetensors_find(st, want[k].name);
        assert_non_null(t);
        assert_string_equal(t->name, want[k].name);
        assert_int_equal(t->dtype, want[k].dt);
        assert_int_equal(t->rank, want[k].rank);
        assert_int_equal(t->dims[0], want[k].d0);
        assert_int_equal(t->nbytes, 6 * cv_dtype_size(t->dtype));
        assert_int_equal((uintptr_t)t->data % cv_dtype_size(t->dtype), 0);
        for (int64_t i = 0; i < 6; i++)
            assert_true(cv_dtype_load(t->dtype, t->data, i) == expect_val(t->dtype, i));
    }
    const cv_st_tensor *s = cv_safetensors_find(st, "scalar"), *e = cv_safetensors_find(st, "empty");
    assert_int_equal(s->rank, 0);
    assert_true(*(const float *)s->data == 7.0f);
    assert_int_equal(e->rank, 2);
    assert_int_equal(e->nbytes, 0);
    assert_null(cv_safetensors_find(st, "__metadata__"));
    assert_null(cv_safetensors_find(st, "missing"));
}

/* The 8-byte header length of a file in tmp. */
static uint64_t header_len(const char *name)
{
    char *path = cv_tmpdir_path(tmp, name);
    FILE *f = fopen(path, "rb");
    unsigned char b[8] = {0};
    assert_int_equal(fread(b, 1, 8, f), 8);
    fclose(f);
    free(path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | b[i];
    return n;
}

static void test_reads_python_files(void **state)
{
    assert_int_equal(header_len("ok_odd.st") % 2, 1);   /* every tensor misaligned in the file */
    assert_int_equal(header_len("ok_even.st") % 8, 0);
    static const char *const names[] = {"ok_odd.st", "ok_even.st"};
    for (int k = 0; k < 2; k++) {
        cv_safetensors *st = open_ok(names[k]);
        assert_int_equal(cv_safetensors_count(st), 11);
        for (int i = 1; i < 11; i++)   /* sorted by name */
            assert_true(strcmp(cv_safetensors_at(st, i - 1)->name, cv_safetensors_at(st, i)->name) < 0);
        assert_null(cv_safetensors_at(st, 11));
        check_all_dtypes(st);
        cv_safetensors_close(st);
    }
}

static void test_overlapping_unordered_offsets(void **state)
{
    cv_safetensors *st = open_ok("ok_overlap.st");
    assert_int_equal(cv_safetensors_count(st), 3);
    const cv_st_tensor *a = cv_safetensors_find(st, "a"), *b = cv_safetensors_find(st, "b");
    assert_int_equal(((const int32_t *)a->data)[0], 5);
    assert_int_equal(((const int32_t *)a->data)[1], 6);
    assert_int_equal(((const int32_t *)b->data)[0], 6);
    assert_int_equal(cv_safetensors_find(st, "c")->nbytes, 4);
    cv_safetensors_close(st);
}

static void test_every_error_code(void **state)
{
    char *list = *state;
    int seen[3] = {0}, cases = 0;
    for (char *save = NULL, *line = strtok_r(list, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char name[64], file[80];
        int code;
        assert_int_equal(sscanf(line, "%63s %d", name, &code), 2);
        snprintf(file, sizeof file, "%s.st", name);
        char *path = cv_tmpdir_path(tmp, file);
        cv_diag d;
        cv_diag_init(&d);
        cv_safetensors *st = (cv_safetensors *)1;
        print_message("case %s: want CV%d\n", name, code);
        assert_int_equal(cv_safetensors_open(path, &st, &d), -1);
        assert_null(st);
        assert_int_equal(first_code(&d), code);
        assert_string_equal(d.v[0].span.file, path);
        seen[code - 1111]++;
        cases++;
        cv_diag_free(&d);
        free(path);
    }
    assert_true(cases >= 20);
    assert_true(seen[0] && seen[1] && seen[2]);
}

static void test_missing_file(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_safetensors *st;
    assert_int_equal(cv_safetensors_open("/nonexistent/x.safetensors", &st, &d), -1);
    assert_int_equal(first_code(&d), 9004);
    assert_int_equal(cv_safetensors_open(tmp, &st, &d), -1);   /* a directory */
    cv_diag_free(&d);
}

/* Our writer's files, read back by us and checked by a struct+json reader. */
static void test_writer_round_trip(void **state)
{
    float f[6] = {1, 2, 3, 4, 5, 6};
    int64_t q[2] = {-1, 1LL << 40};
    uint16_t h[3] = {0x3c00, 0x4000, 0xc000};
    cv_st_tensor ts[] = {
        {"w.weight", CV_F32, 2, {2, 3}, f, sizeof f},
        {"idx", CV_I64, 1, {2}, q, sizeof q},
        {"half", CV_F16, 1, {3}, h, sizeof h},
        {"z", CV_U8, 1, {0}, NULL, 0},
    };
    char *path = cv_tmpdir_path(tmp, "ours.st");
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_safetensors_write(path, ts, 4, &d), 0);
    cv_safetensors *st = open_ok("ours.st");
    assert_int_equal(cv_safetensors_count(st), 4);
    const cv_st_tensor *w = cv_safetensors_find(st, "w.weight");
    assert_int_equal(w->dims[1], 3);
    assert_memory_equal(w->data, f, sizeof f);
    assert_memory_equal(cv_safetensors_find(st, "idx")->data, q, sizeof q);
    assert_memory_equal(cv_safetensors_find(st, "half")->data, h, sizeof h);
    cv_safetensors_close(st);
    const char *args[] = {path, NULL};
    char *out;
    assert_int_equal(cv_pyrun("import struct, json, sys\n"
                              "b = open(sys.argv[1], 'rb').read()\n"
                              "n, = struct.unpack('<Q', b[:8]); assert n % 8 == 0\n"
                              "raw = b[8:8 + n].decode(); h = json.loads(raw); data = b[8 + n:]\n"
                              "assert list(h) == sorted(h), list(h)\n"
                              "w = h['w.weight']; s, e = w['data_offsets']\n"
                              "assert w['dtype'] == 'F32' and w['shape'] == [2, 3]\n"
                              "assert struct.unpack('<6f', data[s:e]) == (1, 2, 3, 4, 5, 6)\n"
                              "s, e = h['idx']['data_offsets']\n"
                              "assert struct.unpack('<2q', data[s:e]) == (-1, 1 << 40)\n"
                              "s, e = h['half']['data_offsets']\n"
                              "assert struct.unpack('<3e', data[s:e]) == (1.0, 2.0, -2.0)\n"
                              "assert h['z']['data_offsets'][0] == h['z']['data_offsets'][1]\n"
                              "assert len(data) == 24 + 16 + 6\n"
                              "print('ok')\n", args, &out), 0);
    assert_string_equal(out, "ok\n");
    free(out);
    cv_diag_free(&d);
    free(path);
}

static void test_writer_errors(void **state)
{
    float f[2] = {0};
    cv_st_tensor dup[] = {{"a", CV_F32, 1, {2}, f, 8}, {"a", CV_F32, 1, {2}, f, 8}};
    cv_st_tensor meta[] = {{"__metadata__", CV_F32, 1, {2}, f, 8}};
    cv_st_tensor size[] = {{"a", CV_F32, 1, {3}, f, 8}};
    cv_st_tensor dt[] = {{"a", CV_DT_INVALID, 1, {2}, f, 8}};
    const struct { cv_st_tensor *t; int n, code; } cases[] = {
        {dup, 2, 1111}, {meta, 1, 1111}, {size, 1, 1113}, {dt, 1, 1112},
    };
    char *path = cv_tmpdir_path(tmp, "bad-out.st");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cv_diag d;
        cv_diag_init(&d);
        assert_int_equal(cv_safetensors_write(path, cases[k].t, cases[k].n, &d), -1);
        assert_int_equal(first_code(&d), cases[k].code);
        cv_diag_free(&d);
    }
    FILE *fp = fopen(path, "rb");
    assert_null(fp);   /* nothing written */
    free(path);
}

/* ---- the fast header scanner against the general JSON reader */

static cv_safetensors *empty_table(size_t hlen)
{
    cv_safetensors *st = calloc(1, sizeof *st);
    assert_non_null(st);
    st->names = malloc(hlen + 1);
    st->names_cap = hlen + 1;
    return st;
}

/* Reads header h over 64 data bytes with both readers: the scanner must take
 * it exactly when `fast`, and then read what jansson reads; the whole reader
 * must accept it exactly when `ok` (with jansson's first error code when not). */
static void check_header(const char *h, bool fast, bool ok, int code)
{
    size_t n = strlen(h);
    unsigned char data[64] = {0};
    cv_diag d;
    cv_diag_init(&d);
    cv_st_ctx quiet = {"h", data, sizeof data, NULL}, loud = quiet;
    loud.d = &d;
    cv_safetensors *a = empty_table(n), *b = empty_table(n);
    print_message("header %s\n", h);
    assert_int_equal(cv_st_scan(h, n, &quiet, a), fast ? 0 : 1);
    assert_int_equal(cv_st_read_json(&loud, h, n, b), ok ? 0 : -1);
    assert_int_equal(first_code(&d), ok ? 0 : code);
    if (fast) {
        assert_int_equal(a->n, b->n);
        for (int i = 0; i < a->n; i++) {
            assert_string_equal(a->t[i].name, b->t[i].name);
            assert_int_equal(a->t[i].dtype, b->t[i].dtype);
            assert_int_equal(a->t[i].rank, b->t[i].rank);
            assert_memory_equal(a->t[i].dims, b->t[i].dims, sizeof a->t[i].dims);
            assert_ptr_equal(a->t[i].data, b->t[i].data);
            assert_int_equal(a->t[i].nbytes, b->t[i].nbytes);
        }
    }
    cv_safetensors_close(a);
    cv_safetensors_close(b);
    cv_diag_free(&d);
}

/* One tensor "a" of dtype I8 (shape and offsets spelled as given), then `more`. */
#define ONE(shape, offs, more) \
    "{\"a\": {\"dtype\": \"I8\", \"shape\": [" shape "], \"data_offsets\": [" offs "]" more "}}"

static void test_fast_scanner_agrees(void **state)
{
    static const struct { const char *h; bool fast, ok; int code; } cases[] = {
        {"{}", true, true, 0},
        {"{\"b\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},\"a\":{\"dtype\":"
         "\"U8\",\"shape\":[],\"data_offsets\":[16,17]},\"__metadata__\":{\"format\":\"pt\"}}",
         true, true, 0},
        {"{ \"x\" : { \"shape\" : [ 3 ] , \"data_offsets\" : [ 4, 10 ], \"dtype\" : \"I16\" } }",
         false, false, 1112},
        {"\n{\"t\": {\"dtype\": \"BF16\", \"shape\": [0, 5], \"data_offsets\": [64, 64]}}\t\r\n ",
         true, true, 0},
        {"{\"__metadata__\": {}, \"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": "
         "[0, 8]}}", true, true, 0},
        {ONE("1", "0, 1", ""), true, true, 0},
        /* valid, but for the general reader: escapes, non-ASCII, other keys and values */
        {"{\"a\\u00e9\": {\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [0, 1]}}",
         false, true, 0},
        {"{\"\xc3\xa9\": {\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [0, 1]}}",
         false, true, 0},
        {ONE("1", "0, 1", ", \"x\": null"), false, true, 0},
        {"{\"__metadata__\": {\"n\": 1}}", false, true, 0},
        /* refused: the general reader says why */
        {ONE("01", "0, 1", ""), false, false, 1111},
        {ONE("1.0", "0, 1", ""), false, false, 1111},
        {ONE("-1", "0, 1", ""), false, false, 1111},
        {ONE("9223372036854775808", "0, 1", ""), false, false, 1111},
        {ONE("1", "0, 1", ", \"dtype\": \"I8\""), false, false, 1111},
        {"{\"a\": {\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [0, 1]}, \"a\": "
         "{\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", false, false, 1111},
        {"{\"__metadata__\": {\"k\": \"1\", \"k\": \"2\"}}", false, false, 1111},
        {"{\"__metadata__\": {}, \"__metadata__\": {}}", false, false, 1111},
        {"{\"a\": {\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [0, 1]},}",
         false, false, 1111},
        {ONE("1", "0, 1", "") " x", false, false, 1111},
        {ONE("1", "0", ""), false, false, 1111},
        {ONE("1,1,1,1,1,1,1,1,1", "0, 1", ""), false, false, 1111},
        {ONE("2", "0, 1", ""), false, false, 1113},
        {ONE("65", "0, 65", ""), false, false, 1113},
        {"{\"a\": {\"dtype\": \"I8\", \"shape\": [1]}}", false, false, 1111},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        check_header(cases[k].h, cases[k].fast, cases[k].ok, cases[k].code);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_python_files),
        cmocka_unit_test(test_overlapping_unordered_offsets),
        cmocka_unit_test(test_every_error_code),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_fast_scanner_agrees),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
