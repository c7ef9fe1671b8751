/* The cache server and the remote client, talking over 127.0.0.1. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/remote.h"
#include "tests/support/cache_testlib.h"

typedef struct fx {
    char *dir;
    cv_cache_server *srv;
    char base[128];
} fx;

static int start(void **state, uint64_t max_request, const char *tokens, int zstd)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("cache-srv");
    char *tok = NULL;
    if (tokens) {
        cv_tmpdir_write(f->dir, "tokens", tokens, strlen(tokens));
        tok = cv_tmpdir_path(f->dir, "tokens");
    }
    char *store = cv_tmpdir_path(f->dir, "store");
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = store, .tokens_file = tok,
                                 .max_request = max_request, .threads = 2, .zstd_level = zstd};
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_server_start(&o, &f->srv, &d);
    if (rc != 0)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    free(tok);
    free(store);
    if (rc != 0)
        return -1;
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", cv_cache_server_port(f->srv));
    *state = f;
    return 0;
}

static int setup_plain(void **state) { return start(state, 0, NULL, 0); }
static int setup_zstd(void **state) { return start(state, 0, NULL, 3); }
static int setup_small(void **state) { return start(state, 1000, NULL, 0); }
static int setup_tokens(void **state)
{
    return start(state, 0, "# tokens\nreader-token ro\nwriter-token rw  # comment\n", 0);
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_cache_server_stop(f->srv, 1000);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static cv_remote *client(const fx *f, const char *suffix, const char *token)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", f->base, suffix ? suffix : "");
    cv_remote_options o = {.url = url, .token = token, .timeout_ms = 5000};
    cv_remote *r = NULL;
    assert_int_equal(cv_cache_remote_open(&o, &r, NULL), 0);
    return r;
}

/* ---- raw HTTP for status checks */

typedef struct resp {
    long status;
    char *body;
    size_t len;
} resp;

static size_t collect(char *p, size_t sz, size_t n, void *ctx)
{
    resp *r = ctx;
    r->body = realloc(r->body, r->len + sz * n + 1);
    memcpy(r->body + r->len, p, sz * n);
    r->len += sz * n;
    r->body[r->len] = '\0';
    return sz * n;
}

typedef struct upload {
    const char *p;
    size_t n, pos;
} upload;

static size_t feed(char *p, size_t sz, size_t n, void *ctx)
{
    upload *u = ctx;
    size_t give = sz * n < u->n - u->pos ? sz * n : u->n - u->pos;
    memcpy(p, u->p + u->pos, give);
    u->pos += give;
    return give;
}

static resp http(const char *method, const char *url, const void *body, size_t len,
                 const char *header, bool chunked)
{
    resp r = {0};
    CURL *h = curl_easy_init();
    struct curl_slist *hs = curl_slist_append(NULL, "Expect:");
    if (header)
        hs = curl_slist_append(hs, header);
    if (chunked)
        hs = curl_slist_append(hs, "Transfer-Encoding: chunked");
    upload u = {body, len, 0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, feed);
        curl_easy_setopt(h, CURLOPT_READDATA, &u);
        if (!chunked)
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode c = curl_easy_perform(h);
    if (c == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(hs);
    curl_easy_cleanup(h);
    return r;
}

static void entry_url(const fx *f, const char *kind, const cv_digest *dg, char *out, size_t cap)
{
    char hex[65];
    cv_cache_digest_hex(dg, hex);
    snprintf(out, cap, "%s/%s/%s", f->base, kind, hex);
}

/* ---- tests */

static void test_client_roundtrip(void **state)
{
    fx *f = *state;
    cv_remote *r = client(f, NULL, NULL);
    size_t n = 200000;
    unsigned char *buf = malloc(n);
    tcu_fill(buf, n, 5);
    cv_digest dg;
    cv_cache_sha256(buf, n, &dg);
    assert_int_equal(cv_cache_remote_head(r, CV_CAS_BLOB, &dg, NULL), CV_REMOTE_MISSING);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_MISSING);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, buf, n, NULL), 0);
    assert_int_equal(cv_cache_remote_head(r, CV_CAS_BLOB, &dg, NULL), CV_REMOTE_FOUND);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    assert_int_equal(len, n);
    assert_memory_equal(got, buf, n);
    free(got);
    /* HEAD carries the real length */
    char url[256];
    entry_url(f, "cas", &dg, url, sizeof url);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    curl_off_t cl = 0;
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    assert_int_equal((long)cl, (long)n);
    curl_easy_cleanup(h);
    /* opaque action entries */
    cv_digest key;
    cv_cache_sha256("action", 6, &key);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_AC, &key, "not a protobuf", 14, NULL), 0);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_AC, &key, &got, &len, NULL), CV_REMOTE_FOUND);
    assert_int_equal(len, 14);
    assert_memory_equal(got, "not a protobuf", 14);
    free(got);
    /* an empty blob */
    cv_cache_sha256("", 0, &dg);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, "", 0, NULL), 0);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    assert_int_equal(len, 0);
    free(got);
    cv_remote_stats st;
    cv_cache_remote_stats(r, &st);
    assert_true(st.errors == 0 && st.timeouts == 0);
    assert_true(st.bytes_out >= n && st.bytes_in >= n);
    cv_cache_remote_close(r);
    free(buf);
}

static void test_instance_prefix_and_bad_requests(void **state)
{
    fx *f = *state;
    cv_remote *r = client(f, "/some/instance/", NULL);
    cv_digest dg;
    cv_cache_sha256("x", 1, &dg);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, "x", 1, NULL), 0);
    cv_cache_remote_close(r);
    r = client(f, NULL, NULL); /* same store without the prefix */
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    free(got);
    cv_cache_remote_close(r);

    char url[256];
    cv_digest wrong;
    cv_cache_sha256("y", 1, &wrong);
    entry_url(f, "cas", &wrong, url, sizeof url);
    resp p = http("PUT", url, "x", 1, NULL, false);
    assert_int_equal(p.status, 400); /* body does not hash to the name */
    free(p.body);
    p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 404);
    free(p.body);
    p = http("DELETE", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 405);
    free(p.body);
    snprintf(url, sizeof url, "%s/cas/1234", f->base);
    p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 404);
    free(p.body);
    snprintf(url, sizeof url, "%s/../../etc/passwd", f->base);
    p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 404);
    free(p.body);
}

static void test_tokens(void **state)
{
    fx *f = *state;
    cv_digest dg;
    cv_cache_sha256("data", 4, &dg);
    char url[256];
    entry_url(f, "cas", &dg, url, sizeof url);
    resp p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 401);
    free(p.body);
    p = http("GET", url, NULL, 0, "Authorization: Bearer wrong", false);
    assert_int_equal(p.status, 401);
    free(p.body);
    p = http("PUT", url, "data", 4, "Authorization: Bearer reader-token", false);
    assert_int_equal(p.status, 403);
    free(p.body);
    p = http("PUT", url, "data", 4, "Authorization: Bearer writer-token", false);
    assert_int_equal(p.status, 200);
    free(p.body);
    p = http("GET", url, NULL, 0, "Authorization: Bearer reader-token", false);
    assert_int_equal(p.status, 200);
    assert_int_equal(p.len, 4);
    free(p.body);
    /* Basic auth with the token as password (ccache 4.7, Bazel URL userinfo) */
    p = http("GET", url, NULL, 0, "Authorization: Basic dXNlcjpyZWFkZXItdG9rZW4=", false);
    assert_int_equal(p.status, 200); /* user:reader-token */
    free(p.body);
    /* the client with a token */
    cv_remote *r = client(f, NULL, "writer-token");
    cv_digest d2;
    cv_cache_sha256("more", 4, &d2);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &d2, "more", 4, NULL), 0);
    cv_cache_remote_close(r);
    r = client(f, NULL, NULL);
    cv_diag d;
    cv_diag_init(&d);
    void *got;
    size_t len;
    assert_true(cv_cache_remote_get(r, CV_CAS_BLOB, &d2, &got, &len, &d) < 0);
    assert_int_equal(d.v[0].code, 9104);
    cv_diag_free(&d);
    cv_cache_remote_close(r);
    /* with tokens, /metrics and /status need one too (issue 25) */
    const char *admin[] = {"metrics", "status"};
    for (int i = 0; i < 2; i++) {
        snprintf(url, sizeof url, "%s/%s", f->base, admin[i]);
        p = http("GET", url, NULL, 0, NULL, false);
        assert_int_equal(p.status, 401);
        free(p.body);
        p = http("GET", url, NULL, 0, "Authorization: Bearer reader-token", false);
        assert_int_equal(p.status, 200);
        free(p.body);
    }
}

static void test_request_limit(void **state)
{
    fx *f = *state;
    char big[2000];
    tcu_fill(big, sizeof big, 1);
    cv_digest dg;
    cv_cache_sha256(big, sizeof big, &dg);
    char url[256];
    entry_url(f, "cas", &dg, url, sizeof url);
    resp p = http("PUT", url, big, sizeof big, NULL, false);
    assert_int_equal(p.status, 413);
    free(p.body);
    p = http("PUT", url, big, sizeof big, NULL, true); /* no Content-Length */
    assert_int_equal(p.status, 413);
    free(p.body);
    p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 404);
    free(p.body);
    cv_cache_sha256(big, 500, &dg);
    entry_url(f, "cas", &dg, url, sizeof url);
    p = http("PUT", url, big, 500, NULL, true);
    assert_int_equal(p.status, 200);
    free(p.body);
}

static void test_exact_bytes_from_zstd_store(void **state)
{
    fx *f = *state;
    cv_remote *r = client(f, NULL, NULL);
    size_t n = 1 << 20;
    char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = "compressible text "[i % 18];
    cv_digest dg;
    cv_cache_sha256(buf, n, &dg);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, buf, n, NULL), 0);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    assert_int_equal(len, n);
    assert_memory_equal(got, buf, n);
    free(got);
    /* stored compressed on disk */
    char hex[65], path[512];
    cv_cache_digest_hex(&dg, hex);
    snprintf(path, sizeof path, "%s/store/cas/%.2s/%s", f->dir, hex, hex);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((size_t)st.st_size < n / 10);
    /* corrupt on the server's disk: never served */
    FILE *fp = fopen(path, "r+b");
    fseek(fp, -3, SEEK_END);
    fputc('!', fp);
    fclose(fp);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_MISSING);
    cv_cache_remote_close(r);
    free(buf);
}

/* Keep-alive: a second request reuses the connection; an entry modified
 * in place after it was served is checked again, and not served. */
static void test_keepalive_and_reverify(void **state)
{
    fx *f = *state;
    cv_remote *r = client(f, NULL, NULL);
    char buf[50000];
    tcu_fill(buf, sizeof buf, 77);
    cv_digest dg;
    cv_cache_sha256(buf, sizeof buf, &dg);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, buf, sizeof buf, NULL), 0);
    cv_cache_remote_close(r);
    char url[256];
    entry_url(f, "cas", &dg, url, sizeof url);
    resp p = {0};
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &p);
    for (int i = 0; i < 3; i++) { /* read, then twice from the verified file */
        p.len = 0;
        assert_int_equal(curl_easy_perform(h), CURLE_OK);
        long connects = -1, status = 0;
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        assert_int_equal(status, 200);
        assert_int_equal(connects, i == 0 ? 1 : 0);
        assert_int_equal(p.len, sizeof buf);
        assert_memory_equal(p.body, buf, sizeof buf);
    }
    struct timespec ts = {0, 30 * 1000000L}; /* past the file-time granularity */
    nanosleep(&ts, NULL);
    char hex[65], path[512];
    cv_cache_digest_hex(&dg, hex);
    snprintf(path, sizeof path, "%s/store/cas/%.2s/%s", f->dir, hex, hex);
    FILE *fp = fopen(path, "r+b");
    fseek(fp, 1000, SEEK_SET);
    fputc(buf[976] ^ 1, fp);
    fclose(fp);
    p.len = 0;
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 404);
    curl_easy_cleanup(h);
    free(p.body);
}

typedef struct slow_put {
    char url[256];
    char body[20000];
    long status;
} slow_put;

static size_t slow_feed(char *p, size_t sz, size_t n, void *ctx)
{
    upload *u = ctx;
    if (u->pos >= u->n)
        return 0;
    if (u->pos == u->n / 2) { /* half way: pause while the server is told to stop */
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
    }
    size_t give = u->n / 2 - (u->pos % (u->n / 2));
    give = give < sz * n ? give : sz * n;
    memcpy(p, u->p + u->pos, give);
    u->pos += give;
    return give;
}

static void *slow_put_main(void *arg)
{
    slow_put *sp = arg;
    upload u = {sp->body, sizeof sp->body, 0};
    CURL *h = curl_easy_init();
    struct curl_slist *hs = curl_slist_append(NULL, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, sp->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, slow_feed);
    curl_easy_setopt(h, CURLOPT_READDATA, &u);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)sizeof sp->body);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &sp->status);
    curl_slist_free_all(hs);
    curl_easy_cleanup(h);
    return NULL;
}

/* Stopping lets a request under way finish, and does not wait for idle
 * keep-alive connections. */
static void test_graceful_stop(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("cache-srv-stop");
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = dir, .threads = 2};
    cv_cache_server *srv;
    assert_int_equal(cv_cache_server_start(&o, &srv, NULL), 0);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", cv_cache_server_port(srv));
    /* an idle keep-alive connection */
    CURL *idle = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "%s/status", base);
    curl_easy_setopt(idle, CURLOPT_URL, url);
    curl_easy_setopt(idle, CURLOPT_WRITEFUNCTION, collect);
    resp ignored = {0};
    curl_easy_setopt(idle, CURLOPT_WRITEDATA, &ignored);
    assert_int_equal(curl_easy_perform(idle), CURLE_OK);
    /* an upload under way */
    slow_put *sp = calloc(1, sizeof *sp);
    tcu_fill(sp->body, sizeof sp->body, 3);
    cv_digest dg;
    cv_cache_sha256(sp->body, sizeof sp->body, &dg);
    char hex[65];
    cv_cache_digest_hex(&dg, hex);
    snprintf(sp->url, sizeof sp->url, "%s/cas/%s", base, hex);
    pthread_t th;
    pthread_create(&th, NULL, slow_put_main, sp);
    struct timespec ts = {0, 100 * 1000000L}, t0, t1;
    nanosleep(&ts, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cv_cache_server_stop(srv, 5000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_int_equal(sp->status, 200);
    assert_true(secs < 2.0);
    char path[600];
    snprintf(path, sizeof path, "%s/cas/%.2s/%s", dir, hex, hex);
    assert_int_equal(access(path, F_OK), 0);
    curl_easy_cleanup(idle);
    free(ignored.body);
    free(sp);
    cv_tmpdir_remove(dir);
}

static void test_metrics_and_status(void **state)
{
    fx *f = *state;
    cv_remote *r = client(f, NULL, NULL);
    cv_digest dg;
    cv_cache_sha256("m", 1, &dg);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_MISSING);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, "m", 1, NULL), 0);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    free(got);
    cv_cache_remote_close(r);
    struct timespec ts = {0, 500 * 1000000L}; /* let the index writer catch up */
    nanosleep(&ts, NULL);
    char url[256];
    snprintf(url, sizeof url, "%s/metrics", f->base);
    resp p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 200);
    assert_non_null(strstr(p.body, "cuvil_cache_requests_total{kind=\"cas\",method=\"GET\",status=\"404\"} 1\n"));
    assert_non_null(strstr(p.body, "cuvil_cache_requests_total{kind=\"cas\",method=\"GET\",status=\"200\"} 1\n"));
    assert_non_null(strstr(p.body, "cuvil_cache_requests_total{kind=\"cas\",method=\"PUT\",status=\"200\"} 1\n"));
    assert_non_null(strstr(p.body, "cuvil_cache_hits_total{kind=\"cas\"} 1\n"));
    assert_non_null(strstr(p.body, "cuvil_cache_misses_total{kind=\"cas\"} 1\n"));
    assert_non_null(strstr(p.body, "cuvil_cache_request_duration_seconds_bucket{method=\"GET\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(p.body, "# TYPE cuvil_cache_disk_bytes gauge\ncuvil_cache_disk_bytes 25\n"));
    free(p.body);
    snprintf(url, sizeof url, "%s/status", f->base);
    p = http("GET", url, NULL, 0, NULL, false);
    assert_int_equal(p.status, 200);
    json_t *j = json_loads(p.body, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "entries")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "hits")), 1);
    json_decref(j);
    free(p.body);
}

/* ---- a remote that is down or slow: the client gives up fast, counts it */

static void test_remote_down(void **state)
{
    (void)state;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s); /* a port nobody listens on */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    cv_remote_options o = {.url = url, .timeout_ms = 2000};
    cv_remote *r;
    assert_int_equal(cv_cache_remote_open(&o, &r, NULL), 0);
    cv_digest dg;
    cv_cache_sha256("z", 1, &dg);
    cv_diag d;
    cv_diag_init(&d);
    void *got;
    size_t len;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, &d), CV_REMOTE_ERROR);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s1 = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s1 < 1.0); /* refused at once; two retries with backoff */
    assert_int_equal(d.v[0].code, 9102);
    /* the next call does not even try */
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, &d), CV_REMOTE_DOWN);
    cv_remote_stats st;
    cv_cache_remote_stats(r, &st);
    assert_int_equal(st.errors, 1);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.skipped, 1);
    cv_diag_free(&d);
    cv_cache_remote_close(r);
}

static void test_remote_slow(void **state)
{
    (void)state;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(s, (struct sockaddr *)&a, sizeof a);
    listen(s, 4); /* accepts connections (kernel backlog) but never answers */
    socklen_t al = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &al);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    cv_remote_options o = {.url = url, .timeout_ms = 300};
    cv_remote *r;
    assert_int_equal(cv_cache_remote_open(&o, &r, NULL), 0);
    cv_digest dg;
    cv_cache_sha256("z", 1, &dg);
    cv_diag d;
    cv_diag_init(&d);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, &d), CV_REMOTE_TIMEOUT);
    assert_int_equal(d.v[0].code, 9103);
    cv_remote_stats st;
    cv_cache_remote_stats(r, &st);
    assert_int_equal(st.timeouts, 1);
    cv_diag_free(&d);
    cv_cache_remote_close(r);
    close(s);
}

static void test_url_parsing(void **state)
{
    (void)state;
    const char *bad[] = {"ftp://x", "http://", "http://a b", "http://h:1|frobnicate", "nothing"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cv_remote_options o = {.url = bad[i]};
        cv_remote *r = NULL;
        cv_diag d;
        cv_diag_init(&d);
        assert_int_equal(cv_cache_remote_open(&o, &r, &d), -1);
        assert_int_equal(d.v[0].code, 9111);
        cv_diag_free(&d);
    }
    cv_remote_options o = {.url = "http://127.0.0.1:9/inst/|read-only"};
    cv_remote *r = NULL;
    assert_int_equal(cv_cache_remote_open(&o, &r, NULL), 0);
    assert_string_equal(cv_cache_remote_base(r), "http://127.0.0.1:9/inst");
    assert_true(cv_cache_remote_read_only(r));
    cv_digest dg = {{0}};
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, "", 0, NULL), 0); /* skipped */
    cv_cache_remote_close(r);
}

static void test_server_rejects_bad_setup(void **state)
{
    (void)state;
    char *dir = cv_tmpdir_make("cache-srv-bad");
    cv_tmpdir_write(dir, "tokens", "lonely-token\n", 13);
    char *tok = cv_tmpdir_path(dir, "tokens");
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = dir, .tokens_file = tok};
    cv_cache_server *s = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_cache_server_start(&o, &s, &d), -1);
    assert_int_equal(d.v[0].code, 9113);
    o.tokens_file = NULL;
    o.listen = "no-port";
    assert_int_equal(cv_cache_server_start(&o, &s, &d), -1);
    assert_int_equal(d.v[1].code, 9111);
    cv_diag_free(&d);
    free(tok);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client_roundtrip, setup_plain, teardown),
        cmocka_unit_test_setup_teardown(test_instance_prefix_and_bad_requests, setup_plain, teardown),
        cmocka_unit_test_setup_teardown(test_tokens, setup_tokens, teardown),
        cmocka_unit_test_setup_teardown(test_request_limit, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_exact_bytes_from_zstd_store, setup_zstd, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_and_reverify, setup_plain, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_and_status, setup_plain, teardown),
        cmocka_unit_test(test_graceful_stop),
        cmocka_unit_test(test_remote_down),
        cmocka_unit_test(test_remote_slow),
        cmocka_unit_test(test_url_parsing),
        cmocka_unit_test(test_server_rejects_bad_setup),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
