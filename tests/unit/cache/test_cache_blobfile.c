/* Blobs as files (cache/blobfile.c) and what makes a hit cheap: outputs
 * left in place while the memo vouches for them, large blobs stored raw at
 * a page offset and copied out in the kernel, corruption still caught, the
 * index written once per process (cache/pending.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/fs.h"
#include "tests/support/cache_testlib.h"

enum { RACY_MS = 30, BIG = 3 << 20 };

static char *g_dir;

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("cache-blobfile");
    return g_dir ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cv_tmpdir_remove(g_dir);
    return 0;
}

static cv_cache *open_cache(const char *sub)
{
    char *dir = cv_tmpdir_path(g_dir, sub);
    cv_cache_options o = {.dir = dir, .remote = "", .ignore_env = true,
                          .memo_racy_ms = RACY_MS};
    cv_cache *c = NULL;
    assert_int_equal(cv_cache_open(&o, &c, NULL), 0);
    free(dir);
    return c;
}

/* Past the memo's racy window for everything written so far. */
static void settle(void)
{
    struct timespec ts = {0, (RACY_MS * 3 + 20) * 1000000L};
    nanosleep(&ts, NULL);
}

static unsigned char *random_bytes(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    tcu_fill(b, n, seed);
    return b;
}

static void assert_file_holds(const char *path, const void *data, size_t len)
{
    char *got = NULL;
    size_t n = 0;
    assert_int_equal(cv_fs_read_file(path, (size_t)1 << 30, &got, &n, NULL), 0);
    assert_int_equal(n, len);
    assert_memory_equal(got, data, len);
    free(got);
}

static cv_cache_stats stats(cv_cache *c)
{
    cv_cache_stats st;
    assert_int_equal(cv_cache_stats_get(c, &st, NULL), 0);
    return st;
}

static int64_t ctime_ns(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

static void test_written_then_left_in_place(void **state)
{
    (void)state;
    cv_cache *c = open_cache("inplace");
    unsigned char *data = random_bytes(5000, 1);
    cv_digest dg;
    assert_int_equal(cv_cache_put_blob(c, data, 5000, &dg, NULL), 0);
    char *out = cv_tmpdir_path(g_dir, "inplace-lib.so");
    uint64_t size = 0;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_blob_file(c, &dg, out, 0755, &size, &info, NULL), 1);
    assert_int_equal(size, 5000);
    assert_int_equal(info.source, CV_CACHE_SRC_LOCAL);
    assert_file_holds(out, data, 5000);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);

    settle();
    int64_t before = ctime_ns(out);
    assert_int_equal(cv_cache_get_blob_file(c, &dg, out, 0755, &size, NULL, NULL), 1);
    assert_true(ctime_ns(out) == before); /* not rewritten: same inode, same times */

    /* Another mode is another file: rewritten. */
    assert_int_equal(cv_cache_get_blob_file(c, &dg, out, 0644, &size, NULL, NULL), 1);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);

    /* A user's edit (same size) is noticed and undone; the cache keeps its bytes. */
    settle();
    data[100] ^= 0xff;
    tcu_write(out, data, 5000);
    data[100] ^= 0xff;
    assert_int_equal(chmod(out, 0644), 0);
    assert_int_equal(cv_cache_get_blob_file(c, &dg, out, 0644, &size, NULL, NULL), 1);
    assert_file_holds(out, data, 5000);
    cv_cache_stats st2 = stats(c);
    assert_int_equal(st2.blob_hits_local, 4);
    assert_int_equal(st2.corrupt, 0);

    /* A blob never stored: a miss, and nothing written. */
    cv_digest none;
    cv_cache_sha256("none", 4, &none);
    char *other = cv_tmpdir_path(g_dir, "inplace-none");
    assert_int_equal(cv_cache_get_blob_file(c, &none, other, 0644, &size, &info, NULL), 0);
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(stats(c).blob_misses, 1);
    cv_cache_close(c);
    free(other);
    free(out);
    free(data);
}

static void test_put_file_then_get_writes_nothing(void **state)
{
    (void)state;
    cv_cache *c = open_cache("putfile");
    unsigned char *data = random_bytes(70000, 2);
    char *file = cv_tmpdir_path(g_dir, "putfile-out.o");
    tcu_write(file, data, 70000);
    assert_int_equal(chmod(file, 0644), 0);
    cv_digest dg, want;
    uint64_t size = 0;
    assert_int_equal(cv_cache_put_blob_file(c, file, 1 << 20, &dg, &size, NULL), 0);
    cv_cache_sha256(data, 70000, &want);
    assert_true(cv_cache_digest_eq(&dg, &want));
    assert_int_equal(size, 70000);
    assert_true(cv_cache_has_blob(c, &dg));
    settle();
    int64_t before = ctime_ns(file);
    assert_int_equal(cv_cache_get_blob_file(c, &dg, file, 0644, &size, NULL, NULL), 1);
    assert_true(ctime_ns(file) == before);
    /* Too large for max_bytes: an error, nothing stored. */
    cv_diag d;
    cv_diag_init(&d);
    assert_true(cv_cache_put_blob_file(c, file, 100, &dg, &size, &d) < 0);
    assert_true(d.n > 0);
    cv_diag_free(&d);
    cv_cache_close(c);
    free(file);
    free(data);
}

/* Nine files stored at once (more than one round of threads, one of them
 * large enough to be compressed in chunks, two with the same bytes): each
 * digest is its file's, each blob is served, a file is remembered (a get
 * into it writes nothing); a missing file fails the put. */
static void test_put_files_at_once(void **state)
{
    (void)state;
    cv_cache *c = open_cache("putfiles");
    enum { N = 9 };
    size_t sizes[N] = {1, 4096, 70000, BIG, 12, 300000, 5000, 5000, 0};
    unsigned char *data[N];
    char *files[N];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "putfiles-%d", i);
        data[i] = random_bytes(sizes[i] ? sizes[i] : 1, i == 7 ? 106 : 100 + (unsigned)i);
        files[i] = cv_tmpdir_path(g_dir, name);
        tcu_write(files[i], data[i], sizes[i]);
        assert_int_equal(chmod(files[i], 0644), 0);
    }
    cv_digest dg[N];
    uint64_t got[N];
    assert_int_equal(
        cv_cache_put_blob_files(c, (const char *const *)files, N, BIG, true, dg, got, NULL), 0);
    for (int i = 0; i < N; i++) {
        cv_digest want;
        cv_cache_sha256(data[i], sizes[i], &want);
        assert_true(cv_cache_digest_eq(&dg[i], &want));
        assert_int_equal(got[i], sizes[i]);
        void *back = NULL;
        size_t len = 0;
        assert_int_equal(cv_cache_get_blob(c, &dg[i], &back, &len, NULL, NULL), 1);
        assert_int_equal(len, sizes[i]);
        assert_memory_equal(back, data[i], sizes[i]);
        free(back);
    }
    assert_true(cv_cache_digest_eq(&dg[6], &dg[7]));
    settle();
    int64_t before = ctime_ns(files[3]);
    uint64_t size = 0;
    assert_int_equal(cv_cache_get_blob_file(c, &dg[3], files[3], 0644, &size, NULL, NULL), 1);
    assert_true(ctime_ns(files[3]) == before); /* remembered: left alone */

    char *missing = cv_tmpdir_path(g_dir, "putfiles-missing");
    const char *two[2] = {files[0], missing};
    cv_diag d;
    cv_diag_init(&d);
    assert_true(cv_cache_put_blob_files(c, two, 2, BIG, true, dg, got, &d) < 0);
    assert_true(cv_diag_has_errors(&d));
    cv_diag_free(&d);
    free(missing);
    for (int i = 0; i < N; i++) {
        free(files[i]);
        free(data[i]);
    }
    cv_cache_close(c);
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static char *blob_path(cv_cache *c, const cv_digest *dg)
{
    char hex[CV_CACHE_HEX_LEN + 1], *p = NULL;
    cv_cache_digest_hex(dg, hex);
    assert_true(asprintf(&p, "%s/cas/%.2s/%s", cv_cache_dir(c), hex, hex) > 0);
    return p;
}

static void test_large_blobs_paged_and_copied(void **state)
{
    (void)state;
    cv_cache *c = open_cache("paged");
    unsigned char *noise = random_bytes(BIG, 3);
    unsigned char *text = malloc(BIG);
    assert_non_null(text);
    for (size_t i = 0; i < BIG; i++)
        text[i] = "cuvil compiles models "[i % 22];
    cv_digest dn, dt;
    assert_int_equal(cv_cache_put_blob(c, noise, BIG, &dn, NULL), 0);
    assert_int_equal(cv_cache_put_blob(c, text, BIG, &dt, NULL), 0);
    char *pn = blob_path(c, &dn), *pt = blob_path(c, &dt);
    assert_int_equal(file_size(pn), 4096 + BIG); /* raw, payload on its own page */
    assert_true(file_size(pt) < BIG / 10);       /* compressible: still zstd */

    void *got = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_get_blob(c, &dn, &got, &len, NULL, NULL), 1);
    assert_int_equal(len, BIG);
    assert_memory_equal(got, noise, BIG);
    free(got);

    /* First copy-out verifies in full; after it the store file is trusted
     * and copied by the kernel.  Both give the same bytes. */
    char *o1 = cv_tmpdir_path(g_dir, "paged-1"), *o2 = cv_tmpdir_path(g_dir, "paged-2");
    uint64_t size = 0;
    assert_int_equal(cv_cache_get_blob_file(c, &dn, o1, 0644, &size, NULL, NULL), 1);
    assert_int_equal(size, BIG);
    settle();
    assert_int_equal(cv_cache_get_blob_file(c, &dn, o2, 0644, &size, NULL, NULL), 1);
    assert_file_holds(o1, noise, BIG);
    assert_file_holds(o2, noise, BIG);
    assert_int_equal(cv_cache_get_blob_file(c, &dt, o2, 0644, &size, NULL, NULL), 1);
    assert_file_holds(o2, text, BIG);

    /* A flipped byte in the stored payload (size unchanged): the store
     * file's ctime moved, so it is verified again, found corrupt, removed,
     * and the get is a miss. */
    int fd = open(pn, O_WRONLY);
    assert_true(fd >= 0);
    unsigned char b = noise[BIG / 2] ^ 1;
    assert_int_equal(pwrite(fd, &b, 1, 4096 + BIG / 2), 1);
    close(fd);
    char *o3 = cv_tmpdir_path(g_dir, "paged-3");
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_get_blob_file(c, &dn, o3, 0644, &size, NULL, &d), 0);
    assert_true(d.n > 0 && d.v[0].code == 9101);
    cv_diag_free(&d);
    assert_false(cv_cache_has_blob(c, &dn));
    assert_int_equal(access(o3, F_OK), -1);
    assert_int_equal(stats(c).corrupt, 1);
    cv_cache_close(c);
    free(o1);
    free(o2);
    free(o3);
    free(pn);
    free(pt);
    free(noise);
    free(text);
}

/* Hits are queued and written once: visible to this process's statistics
 * at once, to another process's after close. */
static void test_hits_written_in_one_batch(void **state)
{
    (void)state;
    cv_cache *c = open_cache("batch");
    cv_digest dg;
    assert_int_equal(cv_cache_put_blob(c, "abc", 3, &dg, NULL), 0);
    for (int i = 0; i < 20; i++) {
        void *got = NULL;
        size_t len = 0;
        assert_int_equal(cv_cache_get_blob(c, &dg, &got, &len, NULL, NULL), 1);
        free(got);
    }
    assert_int_equal(stats(c).blob_hits_local, 20);
    void *got = NULL;
    size_t len = 0;
    assert_int_equal(cv_cache_get_blob(c, &dg, &got, &len, NULL, NULL), 1);
    free(got);
    cv_cache_close(c);
    c = open_cache("batch");
    assert_int_equal(stats(c).blob_hits_local, 21);
    cv_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_then_left_in_place),
        cmocka_unit_test(test_put_file_then_get_writes_nothing),
        cmocka_unit_test(test_large_blobs_paged_and_copied),
        cmocka_unit_test(test_hits_written_in_one_batch),
        cmocka_unit_test(test_put_files_at_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
