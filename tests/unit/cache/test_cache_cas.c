/* The local CAS: layout, round trips, corruption, atomic writes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cas.h"
#include "tests/support/cache_testlib.h"

typedef struct fx {
    char *dir;
    cv_cas *cas;
} fx;

static int setup_level(void **state, int level)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("cache-cas");
    if (!f->dir || cv_cache_cas_open(f->dir, level, &f->cas, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}
static int setup_zstd(void **state) { return setup_level(state, 1); }
static int setup_raw(void **state) { return setup_level(state, 0); }

static int teardown(void **state)
{
    fx *f = *state;
    cv_cache_cas_close(f->cas);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static int count_files(const char *dir)
{
    DIR *dh = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (dh && (e = readdir(dh)))
        n += e->d_name[0] != '.';
    if (dh)
        closedir(dh);
    return n;
}

static void test_roundtrip_and_layout(void **state)
{
    fx *f = *state;
    size_t n = 300000;
    unsigned char *buf = malloc(n);
    tcu_fill(buf, n / 2, 1);
    memset(buf + n / 2, 'z', n - n / 2); /* half compressible */
    cv_digest name, want;
    uint64_t stored = 0;
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, buf, n, &name, &stored, NULL), 0);
    cv_cache_sha256(buf, n, &want);
    assert_true(cv_cache_digest_eq(&name, &want));
    char hex[65], path[4200], expect[4200];
    cv_cache_digest_hex(&name, hex);
    snprintf(expect, sizeof expect, "%s/cas/%.2s/%s", f->dir, hex, hex);
    cv_cache_cas_path(f->cas, CV_CAS_BLOB, &name, path, sizeof path);
    assert_string_equal(path, expect);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((uint64_t)st.st_size == stored);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 1 << 30,
                                      &got, &len, NULL, NULL), CV_CAS_FOUND);
    assert_int_equal(len, n);
    assert_memory_equal(got, buf, n);
    free(got);
    /* nothing left behind in tmp/ */
    snprintf(path, sizeof path, "%s/tmp", f->dir);
    assert_int_equal(count_files(path), 0);
    /* an unknown name is a miss */
    cv_digest other;
    cv_cache_sha256("nope", 4, &other);
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &other, CV_CAS_VERIFY_FULL, 1 << 30,
                                      &got, &len, NULL, NULL), CV_CAS_MISSING);
    /* the size limit of a read */
    cv_diag d;
    cv_diag_init(&d);
    assert_true(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 1000, &got, &len,
                                 NULL, &d) < 0);
    assert_int_equal(d.v[0].code, 9114);
    cv_diag_free(&d);
    /* empty blob */
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, "", 0, &name, NULL, NULL), 0);
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 10, &got,
                                      &len, NULL, NULL), CV_CAS_FOUND);
    assert_int_equal(len, 0);
    free(got);
    free(buf);
}

/* Flips one byte at `off` (from the end when negative) of the stored file. */
static void flip(const char *path, long off)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, off, off < 0 ? SEEK_END : SEEK_SET);
    long at = ftell(fp);
    int c = fgetc(fp);
    fseek(fp, at, SEEK_SET);
    fputc(c ^ 0x40, fp);
    fclose(fp);
}

static void test_corruption_detected_removed_miss(void **state)
{
    fx *f = *state;
    const long offsets[] = {0, 4, 8, 16, 30, -1, -5};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        unsigned char buf[5000];
        tcu_fill(buf, sizeof buf, (unsigned)i + 10);
        cv_digest name;
        assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, buf, sizeof buf, &name, NULL,
                                          NULL), 0);
        char path[4200];
        cv_cache_cas_path(f->cas, CV_CAS_BLOB, &name, path, sizeof path);
        flip(path, offsets[i]);
        cv_diag d;
        cv_diag_init(&d);
        void *got = NULL;
        size_t len = 0;
        int rc = cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 1 << 20, &got,
                                  &len, NULL, &d);
        assert_int_equal(rc, CV_CAS_CORRUPT);
        assert_null(got);
        assert_int_equal(d.n, 1);
        assert_int_equal(d.v[0].code, 9101);
        assert_int_equal(d.v[0].sev, CV_SEV_WARNING);
        assert_int_equal(access(path, F_OK), -1); /* removed */
        assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 1 << 20,
                                          &got, &len, NULL, NULL), CV_CAS_MISSING);
        cv_diag_free(&d);
    }
    /* truncation */
    cv_digest name;
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, "0123456789", 10, &name, NULL,
                                      NULL), 0);
    char path[4200];
    cv_cache_cas_path(f->cas, CV_CAS_BLOB, &name, path, sizeof path);
    assert_int_equal(truncate(path, 20), 0);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &name, CV_CAS_VERIFY_FULL, 100, &got,
                                      &len, NULL, NULL), CV_CAS_CORRUPT);
}

/* A file swapped for another valid blob under the wrong name: only the
 * SHA-256 check can tell. */
static void test_wrong_content_under_name(void **state)
{
    fx *f = *state;
    cv_digest a, b;
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, "aaaa", 4, &a, NULL, NULL), 0);
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, "bbbb", 4, &b, NULL, NULL), 0);
    char pa[4200], pb[4200];
    cv_cache_cas_path(f->cas, CV_CAS_BLOB, &a, pa, sizeof pa);
    cv_cache_cas_path(f->cas, CV_CAS_BLOB, &b, pb, sizeof pb);
    assert_int_equal(rename(pb, pa), 0);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &a, CV_CAS_VERIFY_FAST, 100, &got, &len,
                                      NULL, NULL), CV_CAS_FOUND); /* fast check: intact file */
    free(got);
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_BLOB, &a, CV_CAS_VERIFY_FULL, 100, &got, &len,
                                      NULL, NULL), CV_CAS_CORRUPT);
}

static void test_action_entries(void **state)
{
    fx *f = *state;
    cv_digest key;
    cv_cache_sha256("key", 3, &key);
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_AC, &key, "first", 5, NULL, NULL, NULL), 0);
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_AC, &key, "second!", 7, NULL, NULL, NULL), 0);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_AC, &key, CV_CAS_VERIFY_FULL, 100, &got, &len,
                                      NULL, NULL), CV_CAS_FOUND);
    assert_int_equal(len, 7);
    assert_memory_equal(got, "second!", 7);
    free(got);
    char path[4200];
    cv_cache_cas_path(f->cas, CV_CAS_AC, &key, path, sizeof path);
    assert_non_null(strstr(path, "/ac/"));
    flip(path, -2);
    assert_int_equal(cv_cache_cas_get(f->cas, CV_CAS_AC, &key, CV_CAS_VERIFY_FULL, 100, &got, &len,
                                      NULL, NULL), CV_CAS_CORRUPT);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_AC, NULL, "x", 1, NULL, NULL, &d), -1);
    cv_diag_free(&d);
}

static void test_writer_bad_digest_leaves_nothing(void **state)
{
    fx *f = *state;
    cv_cas_writer *w;
    assert_int_equal(cv_cache_cas_writer_open(f->cas, CV_CAS_BLOB, &w, NULL), 0);
    assert_int_equal(cv_cache_cas_writer_write(w, "hello ", 6, NULL), 0);
    assert_int_equal(cv_cache_cas_writer_write(w, "world", 5, NULL), 0);
    assert_int_equal(cv_cache_cas_writer_size(w), 11);
    cv_digest wrong;
    cv_cache_sha256("hello", 5, &wrong);
    assert_int_equal(cv_cache_cas_writer_commit(w, &wrong, NULL, NULL, NULL), CV_CAS_BAD_DIGEST);
    assert_int_equal(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &wrong, NULL), 0);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", f->dir);
    assert_int_equal(count_files(tmp), 0);
    /* the right digest is accepted */
    cv_digest right, out;
    cv_cache_sha256("hello world", 11, &right);
    assert_int_equal(cv_cache_cas_writer_open(f->cas, CV_CAS_BLOB, &w, NULL), 0);
    assert_int_equal(cv_cache_cas_writer_write(w, "hello world", 11, NULL), 0);
    assert_int_equal(cv_cache_cas_writer_commit(w, &right, &out, NULL, NULL), 0);
    assert_true(cv_cache_digest_eq(&right, &out));
    assert_int_equal(cv_cache_cas_exists(f->cas, CV_CAS_BLOB, &right, NULL), 1);
}

/* A write that hits the file-size limit (as a full disk would) fails with
 * the disk-full code and leaves neither a blob nor a temp file. */
static void test_disk_full(void **state)
{
    fx *f = *state;
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        size_t n = 1 << 20;
        unsigned char *buf = malloc(n);
        tcu_fill(buf, n, 99);
        cv_diag d;
        cv_diag_init(&d);
        cv_digest name;
        int rc = cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, buf, n, &name, NULL, &d);
        int ok = rc == -1 && d.n == 1 && d.v[0].code == 9105;
        _exit(ok ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", f->dir);
    assert_int_equal(count_files(tmp), 0);
}

static int walk_count(void *ctx, cv_cas_kind kind, const cv_digest *name, uint64_t stored,
                      int64_t mtime)
{
    (void)name; (void)stored; (void)mtime;
    ((int *)ctx)[kind]++;
    return 0;
}

static void test_walk(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 5; i++) {
        char b[16];
        snprintf(b, sizeof b, "b%d", i);
        assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_BLOB, NULL, b, strlen(b), NULL, NULL, NULL), 0);
    }
    cv_digest key;
    cv_cache_sha256("k", 1, &key);
    assert_int_equal(cv_cache_cas_put(f->cas, CV_CAS_AC, &key, "e", 1, NULL, NULL, NULL), 0);
    int counts[2] = {0, 0};
    assert_int_equal(cv_cache_cas_walk(f->cas, walk_count, counts, NULL), 0);
    assert_int_equal(counts[0], 5);
    assert_int_equal(counts[1], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_and_layout, setup_zstd, teardown),
        {"test_roundtrip_and_layout_raw", test_roundtrip_and_layout, setup_raw, teardown, NULL},
        cmocka_unit_test_setup_teardown(test_corruption_detected_removed_miss, setup_zstd, teardown),
        {"test_corruption_detected_removed_miss_raw", test_corruption_detected_removed_miss, setup_raw, teardown, NULL},
        cmocka_unit_test_setup_teardown(test_wrong_content_under_name, setup_zstd, teardown),
        cmocka_unit_test_setup_teardown(test_action_entries, setup_zstd, teardown),
        {"test_action_entries_raw", test_action_entries, setup_raw, teardown, NULL},
        cmocka_unit_test_setup_teardown(test_writer_bad_digest_leaves_nothing, setup_zstd, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup_raw, teardown),
        cmocka_unit_test_setup_teardown(test_walk, setup_zstd, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
