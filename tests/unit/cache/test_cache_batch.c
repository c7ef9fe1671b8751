/* A batch of stores (cv_cache_batch_begin/_end, cache/cas_sync.c): entries
 * visible at once to other readers, synced and indexed together at the end,
 * the size limit enforced at the end, a batch left open ended by close, a
 * failed sync reported; and artifact files put without memo rows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/cas_sync.h"
#include "tests/support/cache_testlib.h"

enum { RACY_MS = 30, BLOB = 32 << 10 };

static char *g_dir;

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("cache-batch");
    return g_dir ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cv_tmpdir_remove(g_dir);
    return 0;
}

static cv_cache *open_cache(const char *sub, uint64_t max_size)
{
    char *dir = cv_tmpdir_path(g_dir, sub);
    cv_cache_options o = {.dir = dir, .remote = "", .ignore_env = true, .zstd_level = -1,
                          .max_size = max_size, .memo_racy_ms = RACY_MS};
    cv_cache *c = NULL;
    assert_int_equal(cv_cache_open(&o, &c, NULL), 0);
    free(dir);
    return c;
}

static cv_cache_stats stats(cv_cache *c)
{
    cv_cache_stats st;
    assert_int_equal(cv_cache_stats_get(c, &st, NULL), 0);
    return st;
}

static void put_random(cv_cache *c, unsigned seed, size_t n, cv_digest *dg)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    tcu_fill(b, n, seed);
    assert_int_equal(cv_cache_put_blob(c, b, n, dg, NULL), 0);
    free(b);
}

static void test_batch_visible_then_indexed(void **state)
{
    (void)state;
    cv_cache *c = open_cache("visible", 0);
    cv_cache *other = open_cache("visible", 0); /* another process's view */
    assert_int_equal(cv_cache_batch_begin(c, NULL), 0);
    cv_digest dg[3];
    for (unsigned i = 0; i < 3; i++)
        put_random(c, 10 + i, 1000 + i, &dg[i]);
    cv_cache_key key = {0};
    cv_cache_sha256("key", 3, &key.digest);
    assert_int_equal(cv_cache_put_action(c, CV_CACHE_L2, &key, "value", 5, NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cv_cache_has_blob(other, &dg[i]), 1);
    void *entry = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_get_action(other, CV_CACHE_L2, &key, &entry, &len, NULL, NULL), 1);
    assert_int_equal(len, 5);
    assert_memory_equal(entry, "value", 5);
    free(entry);

    assert_int_equal(cv_cache_batch_end(c, NULL), 0);
    assert_int_equal(cv_cache_batch_end(c, NULL), 0); /* no batch open: nothing to do */
    cv_cache_stats st = stats(other);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.ac_entries, 1);
    cv_cache_close(other);
    cv_cache_close(c);
}

/* Eviction waits for the batch's end: a compile's own entries are never
 * evicted while it still stores the rest of them. */
static void test_limit_enforced_at_end(void **state)
{
    (void)state;
    cv_cache *c = open_cache("limit", 3 * BLOB);
    assert_int_equal(cv_cache_batch_begin(c, NULL), 0);
    cv_digest dg[6];
    for (unsigned i = 0; i < 6; i++)
        put_random(c, 20 + i, BLOB, &dg[i]);
    for (int i = 0; i < 6; i++)
        assert_int_equal(cv_cache_has_blob(c, &dg[i]), 1);
    assert_int_equal(cv_cache_batch_end(c, NULL), 0);
    cv_cache_stats st = stats(c);
    assert_true(st.bytes_stored <= 3 * BLOB);
    assert_true(st.evictions >= 3);
    int left = 0;
    for (int i = 0; i < 6; i++)
        left += cv_cache_has_blob(c, &dg[i]);
    assert_true(left > 0 && left <= 3);
    cv_cache_close(c);
}

static void test_close_ends_open_batch(void **state)
{
    (void)state;
    cv_cache *c = open_cache("close", 0);
    assert_int_equal(cv_cache_batch_begin(c, NULL), 0);
    cv_digest dg;
    put_random(c, 30, 4000, &dg);
    cv_cache_close(c);
    c = open_cache("close", 0);
    assert_int_equal(cv_cache_has_blob(c, &dg), 1);
    assert_int_equal(stats(c).entries, 1);
    cv_cache_close(c);
}

static void test_disabled_cache(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_path(g_dir, "off");
    cv_cache_options o = {.dir = dir, .disabled = true, .ignore_env = true};
    cv_cache *c = NULL;
    assert_int_equal(cv_cache_open(&o, &c, NULL), 0);
    assert_int_equal(cv_cache_batch_begin(c, NULL), 0);
    assert_int_equal(cv_cache_batch_end(c, NULL), 0);
    cv_cache_close(c);
    free(dir);
}

static int64_t ctime_ns(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/* A batch ended unsynced names exactly the files it stored, for another
 * process to sync (a farm worker, while its next job compiles). */
static void test_end_unsynced_names_files(void **state)
{
    (void)state;
    cv_cache *c = open_cache("unsynced", 0);
    cv_digest old;
    put_random(c, 50, 2000, &old); /* before the batch: synced at once */
    assert_int_equal(cv_cache_batch_begin(c, NULL), 0);
    assert_int_equal(cv_cache_batch_begin(c, NULL), 1); /* already open: not the caller's */
    cv_digest dg[2];
    put_random(c, 51, 2000, &dg[0]);
    put_random(c, 52, 2000, &dg[1]);
    put_random(c, 50, 2000, &old); /* already stored: nothing written */
    char **paths = NULL;
    int n = 0;
    assert_int_equal(cv_cache_batch_end_unsynced(c, &paths, &n, NULL), 0);
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; i++) {
        char hex[CV_CACHE_HEX_LEN + 1];
        cv_cache_digest_hex(&dg[i], hex);
        int found = 0;
        for (int k = 0; k < n; k++)
            found += strstr(paths[k], hex) != NULL && access(paths[k], R_OK) == 0;
        assert_int_equal(found, 1);
    }
    assert_int_equal(cv_cache_sync_files(paths, n, NULL), 0);
    assert_int_equal(unlink(paths[0]), 0); /* evicted meanwhile: nothing to sync */
    assert_int_equal(cv_cache_sync_files(paths, n, NULL), 0);
    cv_cache_paths_free(paths, n);
    assert_int_equal(cv_cache_batch_end_unsynced(c, &paths, &n, NULL), 0); /* none open */
    assert_int_equal(n, 0);
    cv_cache_close(c);
}

static bool fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* Every queued file is synced and closed; the first failure is returned
 * (a pipe cannot be fsynced: EINVAL). */
static void test_syncq_reports_failure(void **state)
{
    (void)state;
    cv_cas_syncq *q = cv_cache_syncq_new();
    assert_non_null(q);
    int fds[5];
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "syncq-%d", i);
        char *path = cv_tmpdir_path(g_dir, name);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fds[i] >= 0);
        assert_int_equal(write(fds[i], "abc", 3), 3);
        assert_int_equal(cv_cache_syncq_add(q, fds[i], path), 0);
        free(path);
    }
    assert_int_equal(cv_cache_syncq_run(q), 0);
    for (int i = 0; i < 4; i++)
        assert_false(fd_open(fds[i]));

    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(cv_cache_syncq_add(q, p[0], "pipe"), 0);
    assert_int_equal(cv_cache_syncq_run(q), EINVAL);
    assert_false(fd_open(p[0]));
    close(p[1]);
    assert_int_equal(cv_cache_syncq_run(q), 0); /* emptied by the failed run */
    cv_cache_syncq_free(q);
}

/* A farm worker's artifact files are about to be removed: stored without a
 * memo row, so a later get into the same path cannot be vouched for by it. */
static void test_files_without_memo(void **state)
{
    (void)state;
    cv_cache *c = open_cache("memo", 0);
    const char *names[2] = {"memo-kept", "memo-scratch"};
    char *paths[2];
    cv_digest dg[2];
    uint64_t size[2];
    for (int i = 0; i < 2; i++) {
        unsigned char b[3000];
        tcu_fill(b, sizeof b, 40 + (unsigned)i);
        paths[i] = cv_tmpdir_path(g_dir, names[i]);
        tcu_write(paths[i], b, sizeof b);
        assert_int_equal(cv_cache_put_blob_files(c, (const char *const *)&paths[i], 1, 1 << 20,
                                                 i == 0, &dg[i], &size[i], NULL),
                         0);
    }
    struct timespec ts = {0, (RACY_MS * 3 + 20) * 1000000L};
    nanosleep(&ts, NULL);
    int64_t before[2] = {ctime_ns(paths[0]), ctime_ns(paths[1])};
    uint64_t got = 0;
    for (int i = 0; i < 2; i++)
        assert_int_equal(cv_cache_get_blob_file(c, &dg[i], paths[i], 0644, &got, NULL, NULL), 1);
    assert_true(ctime_ns(paths[0]) == before[0]); /* vouched for by its memo row: left alone */
    assert_true(ctime_ns(paths[1]) != before[1]); /* no row: written again */
    for (int i = 0; i < 2; i++)
        free(paths[i]);
    cv_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_visible_then_indexed),
        cmocka_unit_test(test_limit_enforced_at_end),
        cmocka_unit_test(test_close_ends_open_batch),
        cmocka_unit_test(test_disabled_cache),
        cmocka_unit_test(test_syncq_reports_failure),
        cmocka_unit_test(test_end_unsynced_names_files),
        cmocka_unit_test(test_files_without_memo),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
