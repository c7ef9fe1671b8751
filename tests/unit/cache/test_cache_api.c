/* The cache API the compile path uses: local store, remote fallback and
 * write-back, statistics, eviction, corruption, verify, the file memo. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/support/cache_testlib.h"
#include "tests/support/keyshape_testlib.h"

static char *g_dir;

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("cache-api");
    return g_dir ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    cv_tmpdir_remove(g_dir);
    return 0;
}

static cv_cache *open_cache(const char *sub, const char *remote, uint64_t max, int level)
{
    char *dir = cv_tmpdir_path(g_dir, sub);
    cv_cache_options o = {.dir = dir, .remote = remote ? remote : "", .max_size = max,
                          .zstd_level = level, .ignore_env = true, .remote_timeout_ms = 2000};
    cv_cache *c = NULL;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_cache_open(&o, &c, &d) != 0)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    free(dir);
    assert_non_null(c);
    return c;
}

static cv_cache_key make_key(const char *features)
{
    tks_l2_fields f = {.target_triple = "x86_64-linux-gnu", .cpu_features = features,
                            .precision = "fp32", .opt_level = "O2", .compiler_build_id = "t",
                            .llvm_version = "19"};
    cv_cache_sha256("ir", 2, &f.ir);
    cv_cache_key k;
    assert_int_equal(tks_key_l2(&f, &k, NULL), 0);
    return k;
}

static cv_cache_stats stats(cv_cache *c)
{
    cv_cache_stats st;
    assert_int_equal(cv_cache_stats_get(c, &st, NULL), 0);
    return st;
}

static void test_local_hits_and_misses(void **state)
{
    (void)state;
    cv_cache *c = open_cache("local", NULL, 0, 0);
    cv_cache_key k = make_key("+avx2");
    void *e;
    size_t len;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_action(c, CV_CACHE_L2, &k, &e, &len, &info, NULL), 0);
    assert_int_equal(info.reason, CV_MISS_NOT_FOUND);
    assert_int_equal(cv_cache_put_action(c, CV_CACHE_L2, &k, "manifest-1", 10, NULL), 0);
    assert_int_equal(cv_cache_get_action(c, CV_CACHE_L2, &k, &e, &len, &info, NULL), 1);
    assert_int_equal(info.source, CV_CACHE_SRC_LOCAL);
    assert_int_equal(len, 10);
    assert_memory_equal(e, "manifest-1", 10);
    free(e);
    cv_digest dg;
    assert_int_equal(cv_cache_put_blob(c, "artifact", 8, &dg, NULL), 0);
    assert_true(cv_cache_has_blob(c, &dg));
    assert_int_equal(cv_cache_get_blob(c, &dg, &e, &len, NULL, NULL), 1);
    free(e);
    cv_cache_stats st = stats(c);
    assert_int_equal(st.hits_local[CV_CACHE_L2], 1);
    assert_int_equal(st.misses[CV_CACHE_L2], 1);
    assert_int_equal(st.miss_reasons[CV_MISS_NOT_FOUND], 1);
    assert_int_equal(st.blob_hits_local, 1);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.ac_entries, 1);
    assert_int_equal(st.hit_count, 1);
    assert_int_equal(st.miss_count, 1);
    assert_true(st.bytes_stored > 0);
    json_t *j = cv_cache_stats_json(&st);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "l2"), "hits_local")), 1);
    json_decref(j);
    /* auxiliary entries are stored and found but counted in no level */
    cv_cache_key aux = make_key("+aux");
    assert_int_equal(cv_cache_get_aux(c, &aux, &e, &len, &info, NULL), 0);
    assert_int_equal(cv_cache_put_aux(c, &aux, "deps", 4, NULL), 0);
    assert_int_equal(cv_cache_get_aux(c, &aux, &e, &len, &info, NULL), 1);
    assert_memory_equal(e, "deps", 4);
    free(e);
    st = stats(c);
    assert_int_equal(st.hits_local[CV_CACHE_L2] + st.misses[CV_CACHE_L2], 2);
    assert_int_equal(st.ac_entries, 2);
    cv_cache_key_free(&aux);
    cv_cache_key_free(&k);
    cv_cache_close(c);
}

static void test_env_and_disabled(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_path(g_dir, "envdir");
    setenv("CUVIL_CACHE_DIR", dir, 1);
    setenv("CUVIL_CACHE_SIZE", "500M", 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    cv_cache *c = NULL;
    assert_int_equal(cv_cache_open(NULL, &c, NULL), 0);
    assert_string_equal(cv_cache_dir(c), dir);
    assert_true(cv_cache_enabled(c));
    cv_cache_stats st = stats(c);
    assert_true(st.max_size == 500000000ull);
    cv_cache_close(c);
    setenv("CUVIL_CACHE_SIZE", "lots", 1);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_open(NULL, &c, &d), -1);
    assert_int_equal(d.v[0].code, 9110);
    cv_diag_free(&d);
    unsetenv("CUVIL_CACHE_SIZE");
    setenv("CUVIL_CACHE", "off", 1);
    assert_int_equal(cv_cache_open(NULL, &c, NULL), 0);
    assert_false(cv_cache_enabled(c));
    cv_digest dg, want;
    assert_int_equal(cv_cache_put_blob(c, "x", 1, &dg, NULL), 0);
    cv_cache_sha256("x", 1, &want);
    assert_true(cv_cache_digest_eq(&dg, &want));
    void *e;
    size_t len;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_blob(c, &dg, &e, &len, &info, NULL), 0);
    assert_int_equal(info.reason, CV_MISS_DISABLED);
    cv_cache_close(c);
    unsetenv("CUVIL_CACHE");
    unsetenv("CUVIL_CACHE_DIR");
    unsetenv("CUVIL_REMOTE_CACHE");
    free(dir);
}

static void test_corrupt_is_a_miss(void **state)
{
    (void)state;
    cv_cache *c = open_cache("corrupt", NULL, 0, 1);
    unsigned char buf[4096];
    tcu_fill(buf, sizeof buf, 4);
    cv_digest dg;
    assert_int_equal(cv_cache_put_blob(c, buf, sizeof buf, &dg, NULL), 0);
    char hex[65], path[600];
    cv_cache_digest_hex(&dg, hex);
    snprintf(path, sizeof path, "%s/cas/%.2s/%s", cv_cache_dir(c), hex, hex);
    FILE *fp = fopen(path, "r+b");
    fseek(fp, 40, SEEK_SET);
    fputc(0x55, fp);
    fclose(fp);
    cv_diag d;
    cv_diag_init(&d);
    void *e = NULL;
    size_t len;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_blob(c, &dg, &e, &len, &info, &d), 0);
    assert_null(e);
    assert_int_equal(info.reason, CV_MISS_CORRUPT);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].code, 9101);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(cv_cache_get_blob(c, &dg, &e, &len, &info, NULL), 0);
    assert_int_equal(info.reason, CV_MISS_NOT_FOUND);
    cv_cache_stats st = stats(c);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.entries, 0); /* the index forgot it */
    cv_diag_free(&d);
    cv_cache_close(c);
}

static void put_n(cv_cache *c, char tag, cv_digest *dg)
{
    char buf[1000];
    memset(buf, tag, sizeof buf);
    assert_int_equal(cv_cache_put_blob(c, buf, sizeof buf, dg, NULL), 0);
}

/* Raw storage: every blob is 1000 + 24 header bytes on disk. */
static void test_lru_eviction_order(void **state)
{
    (void)state;
    cv_cache *c = open_cache("lru", NULL, 3500, -1);
    cv_digest a, b, cc, dd;
    put_n(c, 'a', &a);
    put_n(c, 'b', &b);
    put_n(c, 'c', &cc);
    void *e;
    size_t len;
    assert_int_equal(cv_cache_get_blob(c, &a, &e, &len, NULL, NULL), 1); /* a is now newer */
    free(e);
    put_n(c, 'd', &dd); /* 4096 > 3500: evict the oldest down to 3150 */
    assert_false(cv_cache_has_blob(c, &b));
    assert_true(cv_cache_has_blob(c, &a) && cv_cache_has_blob(c, &cc) && cv_cache_has_blob(c, &dd));
    cv_cache_stats st = stats(c);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(st.bytes_stored, 3072);
    /* asking for the evicted one: a miss that says why */
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_blob(c, &b, &e, &len, &info, NULL), 0);
    assert_int_equal(info.reason, CV_MISS_EVICTED);
    /* explicit eviction takes c next (then a, then d) */
    uint64_t n = 0, freed = 0;
    assert_int_equal(cv_cache_evict(c, 2100, &n, &freed, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(freed, 1024);
    assert_false(cv_cache_has_blob(c, &cc));
    assert_true(cv_cache_has_blob(c, &a) && cv_cache_has_blob(c, &dd));
    st = stats(c);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(st.evicted_then_requested, 1);
    assert_int_equal(st.entries, 2);
    cv_cache_close(c);
}

static void test_remote_fallback_and_writeback(void **state)
{
    (void)state;
    char *sdir = cv_tmpdir_path(g_dir, "server");
    cv_cache_server_options so = {.listen = "127.0.0.1:0", .dir = sdir, .threads = 2};
    cv_cache_server *srv;
    assert_int_equal(cv_cache_server_start(&so, &srv, NULL), 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/team", cv_cache_server_port(srv));
    cv_cache *a = open_cache("machine-a", url, 0, 1), *b = open_cache("machine-b", url, 0, 1);
    cv_cache_key k = make_key("+avx2,+fma");
    cv_digest blob;
    assert_int_equal(cv_cache_put_blob(a, "artifact bytes", 14, &blob, NULL), 0);
    assert_int_equal(cv_cache_put_action(a, CV_CACHE_L2, &k, "entry", 5, NULL), 0);
    void *e;
    size_t len;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_action(b, CV_CACHE_L2, &k, &e, &len, &info, NULL), 1);
    assert_int_equal(info.source, CV_CACHE_SRC_REMOTE);
    free(e);
    assert_int_equal(cv_cache_get_blob(b, &blob, &e, &len, &info, NULL), 1);
    assert_int_equal(info.source, CV_CACHE_SRC_REMOTE);
    assert_memory_equal(e, "artifact bytes", 14);
    free(e);
    /* written back: now local */
    assert_int_equal(cv_cache_get_action(b, CV_CACHE_L2, &k, &e, &len, &info, NULL), 1);
    assert_int_equal(info.source, CV_CACHE_SRC_LOCAL);
    free(e);
    assert_true(cv_cache_has_blob(b, &blob));
    cv_cache_stats st = stats(b);
    assert_int_equal(st.hits_remote[CV_CACHE_L2], 1);
    assert_int_equal(st.hits_local[CV_CACHE_L2], 1);
    assert_int_equal(st.blob_hits_remote, 1);
    /* the remote copy of the manifest reached b's index too: it is the
     * closest to a key that differs in one field (an identical manifest is
     * never its own explanation) */
    char *closest = NULL;
    cv_cache_key probe = make_key("+avx2");
    assert_int_equal(cv_cache_closest_manifest(b, CV_CACHE_L2, probe.manifest, &closest, NULL), 1);
    assert_string_equal(closest, k.manifest);
    free(closest);
    cv_cache_key_free(&probe);
    st = stats(a);
    assert_int_equal(st.remote_puts, 2);
    cv_cache_close(a);
    cv_cache_close(b);
    /* read-only: nothing goes up */
    char ro[160];
    snprintf(ro, sizeof ro, "%s|read-only", url);
    cv_cache *r = open_cache("machine-ro", ro, 0, 1);
    cv_digest other;
    assert_int_equal(cv_cache_put_blob(r, "only local", 10, &other, NULL), 0);
    cv_cache *c = open_cache("machine-c", url, 0, 1);
    assert_int_equal(cv_cache_get_blob(c, &other, &e, &len, &info, NULL), 0);
    cv_cache_close(r);
    cv_cache_close(c);
    cv_cache_key_free(&k);
    cv_cache_server_stop(srv, 1000);
    free(sdir);
}

static void test_remote_down_one_warning(void **state)
{
    (void)state;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(s, (struct sockaddr *)&sa, sizeof sa);
    socklen_t sl = sizeof sa;
    getsockname(s, (struct sockaddr *)&sa, &sl);
    close(s);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(sa.sin_port));
    cv_cache *c = open_cache("down", url, 0, 1);
    cv_diag d;
    cv_diag_init(&d);
    cv_cache_key k = make_key("+sse2");
    void *e;
    size_t len;
    cv_cache_lookup info;
    assert_int_equal(cv_cache_get_action(c, CV_CACHE_L2, &k, &e, &len, &info, &d), 0);
    assert_int_equal(info.reason, CV_MISS_REMOTE_ERROR);
    assert_true(info.ms < 1000);
    /* the build goes on: stores work locally */
    assert_int_equal(cv_cache_put_action(c, CV_CACHE_L2, &k, "x", 1, &d), 0);
    assert_int_equal(cv_cache_get_action(c, CV_CACHE_L2, &k, &e, &len, &info, &d), 1);
    free(e);
    cv_digest dg;
    assert_int_equal(cv_cache_get_blob(c, &dg, &e, &len, &info, &d), 0);
    assert_int_equal(d.n, 1); /* one warning for the whole run */
    assert_int_equal(d.v[0].sev, CV_SEV_WARNING);
    assert_int_equal(d.v[0].code, 9102);
    assert_int_equal(d.n_errors, 0);
    cv_cache_stats st = stats(c);
    assert_int_equal(st.remote_errors, 1);
    assert_int_equal(st.miss_reasons[CV_MISS_REMOTE_ERROR], 1);
    cv_diag_free(&d);
    cv_cache_key_free(&k);
    cv_cache_close(c);
}

static void test_closest_manifest_explains(void **state)
{
    (void)state;
    cv_cache *c = open_cache("explain", NULL, 0, 1);
    const char *features[] = {"+sse2", "+avx2,+fma", "+avx2"};
    for (int i = 0; i < 3; i++) {
        cv_cache_key k = make_key(features[i]);
        assert_int_equal(cv_cache_put_action(c, CV_CACHE_L2, &k, "e", 1, NULL), 0);
        cv_cache_key_free(&k);
    }
    cv_cache_key want = make_key("+avx2,+fma,+avx512f");
    char *closest = NULL;
    assert_int_equal(cv_cache_closest_manifest(c, CV_CACHE_L2, want.manifest, &closest, NULL), 1);
    cv_cache_diffs ds;
    assert_int_equal(cv_cache_explain(closest, want.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 1);
    assert_string_equal(ds.v[0].text, "target features: +avx512f");
    cv_cache_diffs_free(&ds);
    free(closest);
    assert_int_equal(cv_cache_closest_manifest(c, CV_CACHE_L1, want.manifest, &closest, NULL), 0);
    cv_cache_key_free(&want);
    cv_cache_close(c);
}

static void test_verify_and_clear(void **state)
{
    (void)state;
    cv_cache *c = open_cache("verify", NULL, 0, 1);
    cv_digest d1, d2, d3;
    put_n(c, '1', &d1);
    put_n(c, '2', &d2);
    put_n(c, '3', &d3);
    char hex[65], path[600];
    cv_cache_digest_hex(&d2, hex);
    snprintf(path, sizeof path, "%s/cas/%.2s/%s", cv_cache_dir(c), hex, hex);
    FILE *fp = fopen(path, "r+b");
    fseek(fp, -1, SEEK_END);
    fputc(0, fp);
    fclose(fp);
    /* a file the index does not know (e.g. copied in by hand) */
    char *other = cv_tmpdir_path(g_dir, "verify-other");
    cv_cache_options o = {.dir = other, .ignore_env = true, .remote = ""};
    cv_cache *c2;
    assert_int_equal(cv_cache_open(&o, &c2, NULL), 0);
    cv_digest d4;
    put_n(c2, '4', &d4);
    cv_cache_close(c2);
    cv_cache_digest_hex(&d4, hex);
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/cas/%.2s/%s", other, hex, hex);
    snprintf(to, sizeof to, "%s/cas/%.2s", cv_cache_dir(c), hex);
    mkdir(to, 0755);
    snprintf(to, sizeof to, "%s/cas/%.2s/%s", cv_cache_dir(c), hex, hex);
    assert_int_equal(rename(from, to), 0);
    free(other);

    cv_diag d;
    cv_diag_init(&d);
    cv_cache_verify_report r;
    assert_int_equal(cv_cache_verify(c, &r, &d), 0);
    assert_int_equal(r.checked, 4);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.index_dropped, 1);
    assert_int_equal(r.indexed_added, 1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].code, 9101);
    cv_diag_free(&d);
    cv_cache_stats st = stats(c);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.corrupt, 1);
    assert_true(cv_cache_has_blob(c, &d4));

    assert_int_equal(cv_cache_clear(c, NULL), 0);
    assert_false(cv_cache_has_blob(c, &d1));
    assert_false(cv_cache_has_blob(c, &d4));
    st = stats(c);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes_stored, 0);
    assert_int_equal(st.corrupt, 1); /* statistics survive a clear */
    put_n(c, '5', &d1);              /* and the store still works */
    assert_true(cv_cache_has_blob(c, &d1));
    cv_cache_close(c);
}

static void test_file_digest_memo(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_path(g_dir, "memo");
    cv_cache_options o = {.dir = dir, .ignore_env = true, .remote = "", .memo_racy_ms = 50};
    cv_cache *c;
    assert_int_equal(cv_cache_open(&o, &c, NULL), 0);
    size_t n = 1 << 20;
    unsigned char *buf = malloc(n);
    tcu_fill(buf, n, 8);
    char *file = cv_tmpdir_path(g_dir, "weights.bin");
    tcu_write(file, buf, n);
    cv_digest want, got;
    cv_cache_sha256(buf, n, &want);
    assert_int_equal(cv_cache_file_digest(c, file, &got, NULL), 0);
    assert_true(cv_cache_digest_eq(&got, &want));
    assert_int_equal(cv_cache_file_digest(c, file, &got, NULL), 0); /* racy: XXH3 re-check */
    assert_true(cv_cache_digest_eq(&got, &want));
    struct timespec ts = {0, 120 * 1000000L};
    nanosleep(&ts, NULL);
    assert_int_equal(cv_cache_file_digest(c, file, &got, NULL), 0); /* first re-check was racy too */
    nanosleep(&ts, NULL);
    assert_int_equal(cv_cache_file_digest(c, file, &got, NULL), 0); /* trusted */
    assert_true(cv_cache_digest_eq(&got, &want));
    cv_cache_stats st = stats(c);
    assert_int_equal(st.full_hashes, 1);
    assert_true(st.memo_rechecks >= 1);
    assert_int_equal(st.memo_hits, 1);
    /* same size, new content: the stat differs (ctime), so it is re-hashed */
    buf[12345] ^= 1;
    tcu_write(file, buf, n);
    cv_cache_sha256(buf, n, &want);
    assert_int_equal(cv_cache_file_digest(c, file, &got, NULL), 0);
    assert_true(cv_cache_digest_eq(&got, &want));
    st = stats(c);
    assert_int_equal(st.full_hashes, 2);
    cv_cache_close(c);
    free(buf);
    free(file);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_hits_and_misses),
        cmocka_unit_test(test_env_and_disabled),
        cmocka_unit_test(test_corrupt_is_a_miss),
        cmocka_unit_test(test_lru_eviction_order),
        cmocka_unit_test(test_remote_fallback_and_writeback),
        cmocka_unit_test(test_remote_down_one_warning),
        cmocka_unit_test(test_closest_manifest_explains),
        cmocka_unit_test(test_verify_and_clear),
        cmocka_unit_test(test_file_digest_memo),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
