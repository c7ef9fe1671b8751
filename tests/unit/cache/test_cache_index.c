/* index.sqlite: totals kept by triggers, LRU order, evicted names,
 * counters, the file-hash memo, key manifests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cache/index.h"
#include "tests/support/cache_testlib.h"

typedef struct fx {
    char *dir;
    cv_cas *cas;
    cv_index *ix;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("cache-index");
    if (cv_cache_cas_open(f->dir, 0, &f->cas, NULL) != 0 ||
        cv_cache_index_open(f->dir, &f->ix, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_cache_index_close(f->ix);
    cv_cache_cas_close(f->cas);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static cv_digest put(fx *f, char tag, int64_t at)
{
    char buf[100];
    memset(buf, tag, sizeof buf);
    cv_digest dg;
    uint64_t stored;
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, buf, sizeof buf, &dg, &stored,
                                      NULL), 0);
    cv_index_event e = {.op = CV_IDX_PUT, .kind = CV_CAS_BLOB, .name = dg, .stored = stored, .at_us = at};
    assert_int_equal(cv_cache_index_apply(f->ix, &e, 1, NULL, 0, NULL), 0);
    return dg;
}

static void test_totals_and_lru(void **state)
{
    fx *f = *state;
    cv_digest a = put(f, 'a', 100), b = put(f, 'b', 200), c = put(f, 'c', 300);
    uint64_t bytes[2], entries[2];
    assert_int_equal(cv_cache_index_totals(f->ix, bytes, entries, NULL), 0);
    assert_int_equal(bytes[0], 3 * 124);
    assert_int_equal(entries[0], 3);
    /* a re-put does not double count; a hit makes a the newest */
    put(f, 'a', 150);
    cv_index_event hit = {.op = CV_IDX_HIT, .kind = CV_CAS_BLOB, .name = a, .stored = 124, .at_us = 400};
    assert_int_equal(cv_cache_index_apply(f->ix, &hit, 1, NULL, 0, NULL), 0);
    assert_int_equal(cv_cache_index_totals(f->ix, bytes, entries, NULL), 0);
    assert_int_equal(bytes[0], 3 * 124);
    uint64_t n, freed;
    assert_int_equal(cv_cache_index_evict(f->ix, f->cas, 2 * 124, &n, &freed, NULL), 0);
    assert_int_equal(n, 1);
    assert_false(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &b, NULL));
    assert_true(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &a, NULL));
    assert_true(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &c, NULL));
    bool ev;
    assert_int_equal(cv_cache_index_was_evicted(f->ix, CV_CAS_BLOB, &b, &ev, NULL), 0);
    assert_true(ev);
    assert_int_equal(cv_cache_index_was_evicted(f->ix, CV_CAS_BLOB, &a, &ev, NULL), 0);
    assert_false(ev);
    assert_int_equal(cv_cache_index_evict(f->ix, f->cas, 124, &n, &freed, NULL), 0);
    assert_false(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &c, NULL)); /* c before a */
    assert_true(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &a, NULL));
    /* storing b again clears its evicted mark */
    put(f, 'b', 500);
    assert_int_equal(cv_cache_index_was_evicted(f->ix, CV_CAS_BLOB, &b, &ev, NULL), 0);
    assert_false(ev);
    assert_int_equal(cv_cache_index_clear(f->ix, NULL), 0);
    assert_int_equal(cv_cache_index_totals(f->ix, bytes, entries, NULL), 0);
    assert_int_equal(bytes[0] + entries[0], 0);
}

static void sum_counter(void *ctx, const char *name, int64_t v)
{
    if (strcmp(name, "x") == 0)
        *(int64_t *)ctx += v;
}

static void test_counters(void **state)
{
    fx *f = *state;
    cv_index_count c[2] = {{"x", 3}, {"y", 1}};
    assert_int_equal(cv_cache_index_apply(f->ix, NULL, 0, c, 2, NULL), 0);
    assert_int_equal(cv_cache_index_apply(f->ix, NULL, 0, c, 1, NULL), 0);
    int64_t x = 0;
    assert_int_equal(cv_cache_index_counters(f->ix, sum_counter, &x, NULL), 0);
    assert_int_equal(x, 6);
    assert_int_equal(cv_cache_index_zero_counters(f->ix, NULL), 0);
    x = 0;
    assert_int_equal(cv_cache_index_counters(f->ix, sum_counter, &x, NULL), 0);
    assert_int_equal(x, 0);
}

static void test_memo_and_manifests(void **state)
{
    fx *f = *state;
    cv_index_memo m = {.size = 10, .ino = 5, .dev = 7, .mtime_ns = 1, .ctime_ns = 2, .xxh3 = 99,
                       .recorded_ns = 3};
    cv_cache_sha256("m", 1, &m.sha);
    cv_index_memo got;
    assert_int_equal(cv_cache_index_memo_get(f->ix, "/abs/path", &got, NULL), 0);
    assert_int_equal(cv_cache_index_memo_put(f->ix, "/abs/path", &m, NULL), 0);
    assert_int_equal(cv_cache_index_memo_get(f->ix, "/abs/path", &got, NULL), 1);
    assert_memory_equal(&got, &m, sizeof m);

    cv_cache_keyb *kb = cv_cache_keyb_new("d");
    cv_cache_keyb_str(kb, "a", "1");
    cv_cache_keyb_str(kb, "b", "2");
    cv_cache_key k1, k2, want;
    assert_int_equal(cv_cache_keyb_finish(kb, &k1, NULL), 0);
    kb = cv_cache_keyb_new("d");
    cv_cache_keyb_str(kb, "a", "9");
    cv_cache_keyb_str(kb, "b", "9");
    assert_int_equal(cv_cache_keyb_finish(kb, &k2, NULL), 0);
    kb = cv_cache_keyb_new("d");
    cv_cache_keyb_str(kb, "a", "1");
    cv_cache_keyb_str(kb, "b", "3");
    assert_int_equal(cv_cache_keyb_finish(kb, &want, NULL), 0);
    assert_int_equal(cv_cache_index_manifest_put(f->ix, 1, &k1.digest, k1.manifest, NULL), 0);
    assert_int_equal(cv_cache_index_manifest_put(f->ix, 1, &k2.digest, k2.manifest, NULL), 0);
    char *closest = NULL;
    assert_int_equal(cv_cache_index_manifest_closest(f->ix, 1, want.manifest, &closest, NULL), 1);
    assert_string_equal(closest, k1.manifest); /* one field off, not two */
    free(closest);
    assert_int_equal(cv_cache_index_manifest_closest(f->ix, 0, want.manifest, &closest, NULL), 0);
    cv_cache_key_free(&k1);
    cv_cache_key_free(&k2);
    cv_cache_key_free(&want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_totals_and_lru, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_and_manifests, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
