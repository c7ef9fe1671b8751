/* Eight processes hammering one cache directory (puts and gets of the same
 * and of different keys, with eviction running under them): no read may
 * ever return wrong bytes, and no entry may be found corrupt. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/support/cache_testlib.h"

enum { PROCS = 8, ITERS = 120, SHARED = 24 };

static size_t shared_size(int i)
{
    return 1000 + (size_t)i * 2700;
}

static void shared_blob(int i, unsigned char *buf)
{
    tcu_fill(buf, shared_size(i), 1000u + (unsigned)i);
}

static cv_cache_key shared_key(int i)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("stress");
    cv_cache_keyb_int(kb, "i", i);
    cv_cache_key k;
    cv_cache_keyb_finish(kb, &k, NULL);
    return k;
}

/* Returns the number of problems seen: wrong bytes, corrupt entries, errors. */
static int child(const char *dir, int id)
{
    cv_cache_options o = {.dir = dir, .ignore_env = true, .remote = "",
                          .max_size = 600 * 1024};
    cv_cache *c;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_cache_open(&o, &c, &d) != 0)
        return 1000;
    int bad = 0;
    unsigned seed = (unsigned)id * 7919u + 1;
    unsigned char *buf = malloc(shared_size(SHARED) + 65536);
    for (int it = 0; it < ITERS; it++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % SHARED), op = (int)((seed >> 20) % 5);
        void *got = NULL;
        size_t len = 0;
        cv_digest dg;
        if (op == 0) {
            shared_blob(i, buf);
            bad += cv_cache_put_blob(c, buf, shared_size(i), &dg, &d) != 0;
        } else if (op == 1) {
            shared_blob(i, buf);
            cv_cache_sha256(buf, shared_size(i), &dg);
            int rc = cv_cache_get_blob(c, &dg, &got, &len, NULL, &d);
            bad += rc < 0 || (rc == 1 && (len != shared_size(i) || memcmp(got, buf, len) != 0));
        } else if (op == 2) {
            size_t n = 20000 + (seed % 30000);
            tcu_fill(buf, n, seed);
            bad += cv_cache_put_blob(c, buf, n, &dg, &d) != 0;
        } else {
            cv_cache_key k = shared_key(i);
            char entry[64];
            int n = snprintf(entry, sizeof entry, "entry for key %d", i);
            if (op == 3) {
                bad += cv_cache_put_action(c, CV_CACHE_L2, &k, entry, (size_t)n, &d) != 0;
            } else {
                int rc = cv_cache_get_action(c, CV_CACHE_L2, &k, &got, &len, NULL, &d);
                bad += rc < 0 || (rc == 1 && (len != (size_t)n || memcmp(got, entry, len) != 0));
            }
            cv_cache_key_free(&k);
        }
        free(got);
    }
    bad += d.n; /* any warning (corrupt entry, index trouble) counts */
    if (d.n)
        cv_diag_print(&d, stderr, false);
    free(buf);
    cv_diag_free(&d);
    cv_cache_close(c);
    return bad;
}

static void test_eight_processes_one_dir(void **state)
{
    (void)state;
    char *root = cv_tmpdir_make("cache-stress");
    char *dir = cv_tmpdir_path(root, "cache");
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            int bad = child(dir, p);
            _exit(bad > 100 ? 100 : bad);
        }
    }
    int problems = 0;
    for (int p = 0; p < PROCS; p++) {
        int st;
        waitpid(pids[p], &st, 0);
        problems += WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
    }
    assert_int_equal(problems, 0);
    /* and what is left on disk is sound and matches the index */
    cv_cache_options o = {.dir = dir, .ignore_env = true, .remote = ""};
    cv_cache *c;
    assert_int_equal(cv_cache_open(&o, &c, NULL), 0);
    cv_cache_stats before;
    assert_int_equal(cv_cache_stats_get(c, &before, NULL), 0);
    cv_cache_verify_report r;
    assert_int_equal(cv_cache_verify(c, &r, NULL), 0);
    assert_int_equal(r.corrupt, 0);
    assert_true(r.checked > 0);
    cv_cache_stats st;
    assert_int_equal(cv_cache_stats_get(c, &st, NULL), 0);
    assert_true(st.blob_hits_local + st.hits_local[CV_CACHE_L2] > 0);
    assert_true(st.evictions > 0);
    assert_int_equal(st.corrupt, 0);
    assert_true(st.bytes_stored <= 600 * 1024 + 64 * 1024);
    cv_cache_close(c);
    free(dir);
    cv_tmpdir_remove(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eight_processes_one_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
