/* SHA-256, XXH3 and size strings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "tests/support/cache_testlib.h"

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    cv_digest dg;
    cv_cache_sha256("abc", 3, &dg);
    cv_cache_digest_hex(&dg, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cv_cache_sha256("", 0, &dg);
    cv_cache_digest_hex(&dg, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_sha256_streaming_matches_oneshot(void **state)
{
    (void)state;
    size_t n = 3 * 1000 * 1000 + 17;
    unsigned char *buf = malloc(n);
    tcu_fill(buf, n, 7);
    cv_digest one, many;
    cv_cache_sha256(buf, n, &one);
    cv_cache_hasher *h = cv_cache_hasher_new();
    assert_non_null(h);
    for (size_t off = 0; off < n; off += 65521)
        cv_cache_hasher_update(h, buf + off, off + 65521 < n ? 65521 : n - off);
    cv_cache_hasher_final(h, &many);
    assert_true(cv_cache_digest_eq(&one, &many));
    /* the hasher is reusable after final */
    cv_cache_hasher_update(h, "abc", 3);
    cv_cache_hasher_final(h, &many);
    cv_cache_sha256("abc", 3, &one);
    assert_true(cv_cache_digest_eq(&one, &many));
    cv_cache_hasher_free(h);
    free(buf);
}

static void test_hex_roundtrip_and_rejects(void **state)
{
    (void)state;
    cv_digest a, b;
    cv_cache_sha256("x", 1, &a);
    char hex[65];
    cv_cache_digest_hex(&a, hex);
    assert_int_equal(cv_cache_digest_parse(hex, &b), 0);
    assert_true(cv_cache_digest_eq(&a, &b));
    for (int i = 0; hex[i]; i++)
        if (hex[i] >= 'a')
            hex[i] = (char)(hex[i] - 32);
    assert_int_equal(cv_cache_digest_parse(hex, &b), 0); /* upper case accepted */
    assert_true(cv_cache_digest_eq(&a, &b));
    assert_int_equal(cv_cache_digest_parse("abc", &b), -1);
    assert_int_equal(cv_cache_digest_parse(NULL, &b), -1);
    char longer[70];
    snprintf(longer, sizeof longer, "%s0", hex);
    assert_int_equal(cv_cache_digest_parse(longer, &b), -1);
    hex[10] = 'g';
    assert_int_equal(cv_cache_digest_parse(hex, &b), -1);
}

static void test_xxh3(void **state)
{
    (void)state;
    assert_true(cv_cache_xxh3_64("", 0) == 0x2D06800538D394C2ull);
    assert_true(cv_cache_xxh3_64("a", 1) != cv_cache_xxh3_64("b", 1));
    cv_xxh128 h = cv_cache_xxh3_128("abc", 3), h2 = cv_cache_xxh3_128("abc", 3);
    assert_true(h.lo == h2.lo && h.hi == h2.hi);
    char hex[33];
    cv_cache_xxh128_hex(h, hex);
    assert_int_equal(strlen(hex), 32);
}

static void test_hash_file_matches_memory(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("cache-digest");
    char path[600];
    snprintf(path, sizeof path, "%s/f.bin", dir);
    size_t n = 2500000;
    unsigned char *buf = malloc(n);
    tcu_fill(buf, n, 3);
    tcu_write(path, buf, n);
    cv_digest mem, file;
    uint64_t x = 0, x2 = 0, size = 0;
    cv_cache_sha256(buf, n, &mem);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_hash_file(path, &file, &x, &size, &d), 0);
    assert_true(cv_cache_digest_eq(&mem, &file));
    assert_true(x == cv_cache_xxh3_64(buf, n));
    assert_true(size == n);
    assert_int_equal(cv_cache_xxh3_file(path, &x2, &d), 0);
    assert_true(x == x2);
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(cv_cache_hash_file(path, &file, NULL, NULL, &d), -1);
    assert_int_equal(d.v[0].code, 9107);
    cv_diag_free(&d);
    free(buf);
    cv_tmpdir_remove(dir);
}

/* Parsing sizes: tests/unit/common/test_units.c. */
static void test_format_size(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(cv_cache_format_size(10ull << 30, buf), "10.0 GiB");
    assert_string_equal(cv_cache_format_size(512, buf), "512 B");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_streaming_matches_oneshot),
        cmocka_unit_test(test_hex_roundtrip_and_rejects),
        cmocka_unit_test(test_xxh3),
        cmocka_unit_test(test_hash_file_matches_memory),
        cmocka_unit_test(test_format_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
