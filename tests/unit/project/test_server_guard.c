/* Both HTTP servers (cache serve, the farm's) against hostile clients on
 * 127.0.0.1 (issue 25): a flood of idle sockets, a full unauthenticated
 * share, refused uploads that ask for 100 Continue, ambiguous framing, and
 * the warning for a server open beyond loopback without tokens.  Raw
 * sockets, so that the test sees exactly what the server sends. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/netguard.h"
#include "controller/controller.h"
#include "tests/support/tmpdir.h"

#define FLOOD 1100   /* over libmicrohttpd's default limit of 1,020 */

static const char TOKENS[] = "reader-token ro\nwriter-token rw\n";

/* ---------------------------------------------------------- raw client */

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void raw_send(int fd, const char *text, size_t n)
{
    while (n) {
        ssize_t k = send(fd, text, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        text += k;
        n -= (size_t)k;
    }
}

/* Reads an answer's head (up to the blank line, or what comes in wait_ms):
 * its status, 0 when none came (closed, or silent). */
static int raw_status(int fd, int wait_ms, char *head, size_t cap)
{
    size_t n = 0;
    head[0] = '\0';
    struct pollfd p = {fd, POLLIN, 0};
    while (n + 1 < cap && !strstr(head, "\r\n\r\n") && poll(&p, 1, wait_ms) > 0) {
        ssize_t k = recv(fd, head + n, cap - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
        head[n] = '\0';
    }
    int status = 0;
    return sscanf(head, "HTTP/1.%*d %d", &status) == 1 ? status : 0;
}

static int raw_request(int port, const char *text, char *head, size_t cap)
{
    int fd = raw_connect(port);
    if (fd < 0)
        return -1;
    raw_send(fd, text, strlen(text));
    int status = raw_status(fd, 5000, head, cap);
    close(fd);
    return status;
}

/* Whether the server closed fd (EOF or reset), waiting up to wait_ms. */
static bool closed_by_server(int fd, int wait_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0)
        return false;
    char c;
    ssize_t k = recv(fd, &c, 1, MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static int count_closed(const int *fds, int n)
{
    int closed = 0;
    for (int i = 0; i < n; i++)
        closed += fds[i] < 0 || closed_by_server(fds[i], 0);
    return closed;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Room for a flood's two ends (the server is in this process). */
static int flood_size(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t want = 4 * FLOOD;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    int room = (int)rl.rlim_cur / 2 - 64;
    return room < FLOOD ? room : FLOOD;
}

/* ------------------------------------------------------------- servers */

typedef struct fx {
    char *dir;
    cv_cache_server *cache;
    cv_http *http;
    int port;
    cv_diag d;
} fx;

static char *write_tokens(fx *f)
{
    cv_tmpdir_write(f->dir, "tokens", TOKENS, sizeof TOKENS - 1);
    return cv_tmpdir_path(f->dir, "tokens");
}

static int start_cache(fx *f, const char *listen, bool tokens, uint64_t max_request,
                       const cv_netguard_opts *limits)
{
    char *tok = tokens ? write_tokens(f) : NULL;
    char *store = cv_tmpdir_path(f->dir, "store");
    cv_cache_server_options o = {.listen = listen, .dir = store, .tokens_file = tok,
                                 .max_request = max_request, .threads = 2, .limits = limits};
    int rc = cv_cache_server_start(&o, &f->cache, &f->d);
    free(tok);
    free(store);
    if (rc == 0)
        f->port = cv_cache_server_port(f->cache);
    return rc;
}

static int start_http(fx *f, const char *listen, bool tokens, const cv_netguard_opts *limits)
{
    char *tok = tokens ? write_tokens(f) : NULL;
    char *state = cv_tmpdir_path(f->dir, "state");
    cv_http_opts o = {.listen = listen, .state_dir = state, .tokens_file = tok, .no_cache = true,
                      .limits = limits};
    int rc = cv_http_start(&o, &f->http, &f->d);
    free(tok);
    free(state);
    if (rc == 0)
        f->port = cv_http_port(f->http);
    return rc;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("srv-guard");
    cv_diag_init(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_cache_server_stop(f->cache, 0);
    cv_http_stop(f->http);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static bool has_code(const cv_diag *d, int code)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].code == code)
            return true;
    return false;
}

static const char ZERO_HEX[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* ---------------------------------------------------------------- flood */

/* FLOOD idle sockets from 127.0.0.1 without a token: a request with a token
 * is still answered, the oldest idle sockets are closed to make room (the
 * address may keep per_client), and the rest after the head timeout. */
static void flood(int port, const char *authed_request, int want_status, unsigned per_client)
{
    int n = flood_size();
    int *fds = calloc((size_t)n, sizeof *fds);
    int opened = 0;
    for (int i = 0; i < n; i++)
        opened += (fds[i] = raw_connect(port)) >= 0;
    assert_true(opened > n / 2);
    char head[4096];
    assert_int_equal(raw_request(port, authed_request, head, sizeof head), want_status);
    int64_t t0 = mono_ms();
    /* the address's idle sockets beyond per_client were closed as others came */
    while (count_closed(fds, n) < n - (int)per_client - 8 && mono_ms() - t0 < 2000)
        usleep(20000);
    assert_true(count_closed(fds, n) >= n - (int)per_client - 8);
    /* and the rest once their head timed out (1 s here) */
    while (count_closed(fds, n) < n && mono_ms() - t0 < 4000)
        usleep(50000);
    assert_int_equal(count_closed(fds, n), n);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

static const cv_netguard_opts FLOOD_LIMITS = {.max_conns = 300, .reserve = 30, .per_client = 50,
                                              .head_timeout_ms = 1000};

static void test_cache_flood(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "127.0.0.1:0", true, 0, &FLOOD_LIMITS), 0);
    char req[512];
    snprintf(req, sizeof req, "GET /cas/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             "Authorization: Bearer reader-token\r\n\r\n", ZERO_HEX);
    flood(f->port, req, 404, FLOOD_LIMITS.per_client);
}

static void test_farm_flood(void **state)
{
    fx *f = *state;
    assert_int_equal(start_http(f, "127.0.0.1:0", true, &FLOOD_LIMITS), 0);
    flood(f->port, "GET /api/v1/revisions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Authorization: Bearer reader-token\r\n\r\n", 200, FLOOD_LIMITS.per_client);
}

/* The unauthenticated share full of requests under way (bodies that do
 * not come, so nothing is idle to close): a request without a token is
 * answered 503, one with a token is served from the reserve. */
static void reserve(int port, const char *anon_busy, const char *anon, const char *authed,
                    int authed_status, int share)
{
    int fds[64];
    assert_true(share <= 64);
    for (int i = 0; i < share; i++) {
        fds[i] = raw_connect(port);
        assert_true(fds[i] >= 0);
        raw_send(fds[i], anon_busy, strlen(anon_busy));
    }
    usleep(300000);
    char head[4096];
    assert_int_equal(raw_request(port, anon, head, sizeof head), 503);
    assert_non_null(strstr(head, "Retry-After"));
    assert_int_equal(raw_request(port, authed, head, sizeof head), authed_status);
    for (int i = 0; i < share; i++)
        close(fds[i]);
    usleep(200000);
    assert_int_not_equal(raw_request(port, anon, head, sizeof head), 503);
}

static const cv_netguard_opts RESERVE_LIMITS = {.max_conns = 40, .reserve = 10,
                                                .per_client = 1000, .head_timeout_ms = 5000,
                                                .body_grace_ms = 60000};

static void test_cache_reserve(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "127.0.0.1:0", true, 0, &RESERVE_LIMITS), 0);
    char busy[512], anon[512], authed[512];
    snprintf(busy, sizeof busy, "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
             "\r\n", ZERO_HEX);
    snprintf(anon, sizeof anon, "GET /cas/%s HTTP/1.1\r\nHost: x\r\n\r\n", ZERO_HEX);
    snprintf(authed, sizeof authed, "GET /cas/%s HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer reader-token\r\n\r\n", ZERO_HEX);
    reserve(f->port, busy, anon, authed, 404, 30);
}

static void test_farm_reserve(void **state)
{
    fx *f = *state;
    assert_int_equal(start_http(f, "127.0.0.1:0", true, &RESERVE_LIMITS), 0);
    reserve(f->port, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
            "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader-token\r\n\r\n",
            200, 30);
}

/* A body that trickles is cut once its average rate falls below the floor. */
static void test_slow_body_cut(void **state)
{
    fx *f = *state;
    cv_netguard_opts slow = {.head_timeout_ms = 1000, .body_grace_ms = 500,
                             .body_min_rate = 1000};
    assert_int_equal(start_cache(f, "127.0.0.1:0", false, 0, &slow), 0);
    char put[512];
    snprintf(put, sizeof put, "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
             "\r\n", ZERO_HEX);
    int fd = raw_connect(f->port);
    raw_send(fd, put, strlen(put));
    int64_t t0 = mono_ms();
    bool cut = false;
    while (!cut && mono_ms() - t0 < 4000) {
        raw_send(fd, "x", 1);   /* 10 bytes a second */
        cut = closed_by_server(fd, 100);
    }
    close(fd);
    assert_true(cut);
    assert_true(mono_ms() - t0 >= 400);
}

/* ------------------------------------------------------- 100 Continue */

/* A refused upload that waits for 100 Continue gets its status instead,
 * and the connection is closed: no body is read. */
static void test_refused_before_continue(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "127.0.0.1:0", true, 1000, NULL), 0);
    struct {
        const char *auth, *length;
        int status;
    } cases[] = {
        {"", "2000000000", 401},
        {"Authorization: Bearer wrong\r\n", "100", 401},
        {"Authorization: Bearer reader-token\r\n", "100", 403},
        {"Authorization: Bearer writer-token\r\n", "2000000000", 413},
    };
    char req[512], head[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(req, sizeof req, "PUT /cas/%s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %s\r\n"
                 "Expect: 100-continue\r\n\r\n", ZERO_HEX, cases[i].auth, cases[i].length);
        int fd = raw_connect(f->port);
        raw_send(fd, req, strlen(req));
        int status = raw_status(fd, 5000, head, sizeof head);
        if (status != cases[i].status)
            fail_msg("case %zu: status %d, wanted %d: %s", i, status, cases[i].status, head);
        assert_true(closed_by_server(fd, 2000));
        close(fd);
    }
    /* an accepted upload still gets 100 Continue, then its answer */
    cv_digest dg;
    cv_cache_sha256("data", 4, &dg);
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(&dg, hex);
    snprintf(req, sizeof req, "PUT /cas/%s HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer writer-token\r\nContent-Length: 4\r\n"
             "Expect: 100-continue\r\n\r\n", hex);
    int fd = raw_connect(f->port);
    raw_send(fd, req, strlen(req));
    assert_int_equal(raw_status(fd, 5000, head, sizeof head), 100);
    raw_send(fd, "data", 4);
    assert_int_equal(raw_status(fd, 5000, head, sizeof head), 200);
    close(fd);
}

/* The farm: a build request without a token, waiting for 100 Continue. */
static void test_farm_refused_before_continue(void **state)
{
    fx *f = *state;
    assert_int_equal(start_http(f, "127.0.0.1:0", true, NULL), 0);
    const char *cases[] = {"", "Authorization: Bearer reader-token\r\n"};
    int want[] = {401, 403};
    char req[512], head[4096];
    for (int i = 0; i < 2; i++) {
        snprintf(req, sizeof req, "POST /api/v1/revisions HTTP/1.1\r\nHost: x\r\n%s"
                 "Content-Type: application/json\r\nContent-Length: 2\r\n"
                 "Expect: 100-continue\r\n\r\n", cases[i]);
        int fd = raw_connect(f->port);
        raw_send(fd, req, strlen(req));
        assert_int_equal(raw_status(fd, 5000, head, sizeof head), want[i]);
        assert_true(closed_by_server(fd, 2000));
        close(fd);
    }
}

/* Without Expect, a refused body declared over 8 MiB is not read: its
 * status comes at once and the connection is closed (was: up to 1.06 GiB
 * read, then cut without a status). */
static void test_refused_body_capped(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "127.0.0.1:0", true, 0, NULL), 0);
    char req[512], head[4096];
    snprintf(req, sizeof req, "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 500000000\r\n"
             "\r\n", ZERO_HEX);
    int fd = raw_connect(f->port);
    raw_send(fd, req, strlen(req));
    static char chunk[65536];
    size_t sent = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (sent < ((size_t)64 << 20) && poll(&p, 1, 0) == 0) {
        ssize_t k = send(fd, chunk, sizeof chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0)
            sent += (size_t)k;
        else if (errno == EAGAIN)
            poll(&p, 1, 10);
        else
            break;
    }
    assert_int_equal(raw_status(fd, 5000, head, sizeof head), 401);
    assert_true(sent < ((size_t)16 << 20));
    close(fd);
}

/* -------------------------------------------------------------- framing */

static const char *const AMBIGUOUS[] = {
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n0\r\n\r\n",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
    "\r\n3\r\nabc\r\n0\r\n\r\n",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n 5\r\n\r\nabcde",
    "GET /cas/%s HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
    "GET /cas/%s HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n",
    "GET /cas/%s HTTP/1.1\r\nHost: x\r\nX-A: a\x01z\r\n\r\n",
    "GET /cas/%s HTTP/1.1\r\nX-A: 1\r\n\r\n",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 3abc\r\n\r\nabc",
    "PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc",
};

static void ambiguous_refused(int port)
{
    char req[1024], head[4096];
    for (size_t i = 0; i < sizeof AMBIGUOUS / sizeof AMBIGUOUS[0]; i++) {
        snprintf(req, sizeof req, AMBIGUOUS[i], ZERO_HEX);
        int status = raw_request(port, req, head, sizeof head);
        if (status != 400)
            fail_msg("request %zu: status %d, wanted 400: %s", i, status, head);
    }
}

static void test_cache_framing(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "127.0.0.1:0", false, 0, NULL), 0);
    ambiguous_refused(f->port);
    /* plain framing still works: a length, and chunks */
    cv_digest dg;
    cv_cache_sha256("abc", 3, &dg);
    char hex[CV_CACHE_HEX_LEN + 1], req[512], head[4096];
    cv_cache_digest_hex(&dg, hex);
    snprintf(req, sizeof req, "PUT /cas/%s HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"
             "Content-Length: 3\r\n\r\nabc", hex);
    assert_int_equal(raw_request(f->port, req, head, sizeof head), 200);
    snprintf(req, sizeof req, "PUT /cas/%s HTTP/1.1\r\nHost: [::1]:80\r\n"
             "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", hex);
    assert_int_equal(raw_request(f->port, req, head, sizeof head), 200);
}

static void test_farm_framing(void **state)
{
    fx *f = *state;
    assert_int_equal(start_http(f, "127.0.0.1:0", false, NULL), 0);
    ambiguous_refused(f->port);
    char head[4096];
    assert_int_equal(raw_request(f->port, "POST /hooks/github HTTP/1.1\r\nHost: x\r\n"
                                 "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "2\r\n{}\r\n0\r\n\r\n", head, sizeof head), 400);
}

/* ------------------------------------------------- open listen warnings */

static void test_open_listen_warns(void **state)
{
    fx *f = *state;
    assert_int_equal(start_cache(f, "0.0.0.0:0", false, 0, NULL), 0);
    assert_true(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));
    cv_cache_server_stop(f->cache, 0);
    f->cache = NULL;
    cv_diag_clear(&f->d);
    assert_int_equal(start_cache(f, "0.0.0.0:0", true, 0, NULL), 0);
    assert_false(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));
    cv_cache_server_stop(f->cache, 0);
    f->cache = NULL;
    assert_int_equal(start_cache(f, "127.0.0.1:0", false, 0, NULL), 0);
    assert_false(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));

    assert_int_equal(start_http(f, "0.0.0.0:0", false, NULL), 0);
    assert_true(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));
    cv_http_stop(f->http);
    f->http = NULL;
    cv_diag_clear(&f->d);
    assert_int_equal(start_http(f, "0.0.0.0:0", true, NULL), 0);
    assert_false(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));
    cv_http_stop(f->http);
    f->http = NULL;
    assert_int_equal(start_http(f, "127.0.0.1:0", false, NULL), 0);
    assert_false(has_code(&f->d, CV_E_SERVER_OPEN_LISTEN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cache_flood, setup, teardown),
        cmocka_unit_test_setup_teardown(test_farm_flood, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_reserve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_farm_reserve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_body_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_before_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_farm_refused_before_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_body_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_farm_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_listen_warns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
