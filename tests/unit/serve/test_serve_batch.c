/* cuvil serve's scheduling and life (issue 32): dynamic batching seen
 * through the batch-size metric (and its absence with --no-batching), a
 * full queue answered 429 with Retry-After, requests in flight finishing
 * across a stop, SIGTERM to the `cuvil serve` program, and hostile
 * config.yaml values refused with a code at file:line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "serve/serve_internal.h"
#include "tests/support/childproc.h"
#include "tests/support/serve_testlib.h"

static cv_serve *start(const char *repo, bool no_batching)
{
    cv_serve_opts o = {.model_repository = repo, .listen = "127.0.0.1:0",
                       .no_batching = no_batching};
    return st_start(&o);
}

/* ------------------------------------------------------------ batching */

typedef struct client {
    pthread_t t;
    int port, rows, seed, status;
    const char *path;
    char *body;
    bool retry_after;
} client;

static void *post_rows(void *arg)
{
    client *c = arg;
    char req[1024];
    int n = snprintf(req, sizeof req, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
                     "\"shape\":[%d,4],\"data\":[", c->rows);
    for (int i = 0; i < 4 * c->rows; i++)
        n += snprintf(req + n, sizeof req - (size_t)n, "%s%d", i ? "," : "",
                      (i % 2 ? -1 : 1) * (c->seed * 10 + i));
    snprintf(req + n, sizeof req - (size_t)n, "]}]}");
    st_resp r = st_post(c->port, c->path, req);
    c->status = r.status;
    c->retry_after = st_header(&r, "Retry-After") != NULL;
    c->body = r.body;
    r.body = NULL;
    st_resp_free(&r);
    return NULL;
}

/* Each answer holds relu of its own request's rows, whatever batch it ran in. */
static void expect_own_rows(const client *c)
{
    assert_int_equal(c->status, 200);
    char want[1024];
    int n = snprintf(want, sizeof want, "\"shape\":[%d,4],\"data\":[", c->rows);
    for (int i = 0; i < 4 * c->rows; i++)
        n += snprintf(want + n, sizeof want - (size_t)n, "%s%d.0", i ? "," : "",
                      i % 2 ? 0 : c->seed * 10 + i);
    if (!strstr(c->body, want))
        fail_msg("client %d: %s, wanted %s", c->seed, c->body, want);
}

static double batches_after_clients(const char *repo, bool no_batching, double *rows)
{
    cv_serve *s = start(repo, no_batching);
    int port = cv_serve_port(s);
    enum { N = 6 };
    client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){.port = port, .rows = 1 + i % 2, .seed = i + 1,
                        .path = "/v2/models/relu4/infer"};
        assert_int_equal(pthread_create(&c[i].t, NULL, post_rows, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].t, NULL);
        expect_own_rows(&c[i]);
        free(c[i].body);
    }
    const char *L = "{model=\"relu4\",version=\"1\"}";
    char name[128];
    snprintf(name, sizeof name, "cuvil_model_batch_size_sum%s", L);
    *rows = st_metric(port, name);
    snprintf(name, sizeof name, "cuvil_model_batch_size_count%s", L);
    double runs = st_metric(port, name);
    snprintf(name, sizeof name, "cuvil_model_runs_total%s", L);
    assert_true(st_metric(port, name) == runs);
    cv_serve_stop(s, 1000);
    return runs;
}

/* Six clients (9 rows) within the 300 ms window of a model that merges up
 * to 8 rows: fewer runs than requests, every row accounted for. */
static void test_requests_are_batched(void **state)
{
    char *dir = cv_tmpdir_make("serve-batch");
    st_add_model(dir, "relu4", "1", ST_RELU,
                 "max_batch_size: 8\nmax_queue_delay_us: 300000\ninstances: 1\n");
    double rows = 0;
    double runs = batches_after_clients(dir, false, &rows);
    assert_true(rows == 9);
    assert_true(runs >= 2 && runs < 6);
    /* The same requests with batching off: one run each. */
    runs = batches_after_clients(dir, true, &rows);
    assert_true(rows == 9);
    assert_true(runs == 6);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ steady state */

static double model_metric(int port, const char *family, const char *model, const char *more)
{
    char name[256];
    snprintf(name, sizeof name, "%s{model=\"%s\",version=\"1\"%s}", family, model, more);
    return st_metric(port, name);
}

/* Requests at shapes already seen take every buffer from the pools: the
 * allocation counter stays flat while 60 more requests are answered. */
static void test_steady_state_allocates_no_buffer(void **state)
{
    char *dir = cv_tmpdir_make("serve-pool");
    st_add_model(dir, "relu4", "1", ST_RELU, "max_batch_size: 8\n");
    st_add_model(dir, "two", "1", ST_TWO, NULL);
    cv_serve *s = start(dir, false);
    int port = cv_serve_port(s);
    const char *A = "cuvil_model_buffer_allocations_total";
    for (int round = 0; round < 2; round++) {
        double before = model_metric(port, A, "relu4", "");
        for (int i = 0; i < 15 + 25 * round; i++) {
            client c = {.port = port, .rows = 1 + i % 3, .seed = i % 5 + 1,
                        .path = "/v2/models/relu4/infer"};
            post_rows(&c);
            expect_own_rows(&c);
            free(c.body);
            st_resp r = st_post(port, "/v2/models/two/infer",
                                "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":"
                                "[2,3],\"data\":[1,2,3,4,5,6]},{\"name\":\"y\",\"datatype\":"
                                "\"FP32\",\"shape\":[2,3],\"data\":[1,1,1,1,1,1]}]}");
            assert_int_equal(r.status, 200);
            assert_non_null(strstr(r.body, "[1.0,2.0,3.0,4.0,5.0,6.0]"));
            st_resp_free(&r);
        }
        double after = model_metric(port, A, "relu4", "");
        double two = model_metric(port, A, "two", "");
        if (round == 0) {
            /* the first requests filled the pools */
            assert_true(after > 0 && two > 0);
        } else if (after != before) {
            fail_msg("relu4: %g buffers allocated by 40 requests at shapes seen", after - before);
        }
        if (round == 1)
            assert_true(two == model_metric(port, A, "two", ""));
    }
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ queue, drain */

static char *slow_request(size_t *len, char *extra, size_t extra_size)
{
    const char *h = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,256,256],"
                    "\"parameters\":{\"binary_data_size\":262144}}],"
                    "\"parameters\":{\"binary_data_output\":true}}";
    size_t hl = strlen(h);
    char *b = calloc(1, hl + 262144);
    memcpy(b, h, hl);
    for (int i = 0; i < 65536; i++) {
        float v = (i % 7) * 1e-3f;
        memcpy(b + hl + 4 * (size_t)i, &v, 4);
    }
    snprintf(extra, extra_size, "Inference-Header-Content-Length: %zu\r\n", hl);
    *len = hl + 262144;
    return b;
}

typedef struct slow_client {
    pthread_t t;
    int port, status;
    bool retry_after;
} slow_client;

static void *post_slow(void *arg)
{
    slow_client *c = arg;
    char extra[96];
    size_t len;
    char *b = slow_request(&len, extra, sizeof extra);
    st_resp r = st_http(c->port, "POST", "/v2/models/slow/infer", extra, b, len);
    c->status = r.status;
    c->retry_after = r.status == 429 && st_header(&r, "Retry-After") &&
                     st_error_code(&r) == 9415;
    st_resp_free(&r);
    free(b);
    return NULL;
}

static void test_full_queue_is_429_and_drain_finishes_requests(void **state)
{
    char *dir = cv_tmpdir_make("serve-queue");
    char *slow = st_slow_model();
    st_add_model(dir, "slow", "1", slow, "max_queue_size: 1\ninstances: 1\n");
    free(slow);
    cv_serve *s = start(dir, false);
    int port = cv_serve_port(s);
    enum { N = 8 };
    slow_client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (slow_client){.port = port};
        assert_int_equal(pthread_create(&c[i].t, NULL, post_slow, &c[i]), 0);
    }
    int ok = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].t, NULL);
        ok += c[i].status == 200;
        busy += c[i].retry_after;
    }
    assert_true(ok >= 2);          /* the one running and the one queued */
    assert_true(busy >= 1);
    assert_int_equal(ok + busy, N);
    assert_true(st_metric(port, "cuvil_model_failures_total{model=\"slow\",version=\"1\","
                                "code=\"CV9415\"}") == busy);
    /* A request taken before the stop is answered; then nothing listens. */
    slow_client late = {.port = port};
    assert_int_equal(pthread_create(&late.t, NULL, post_slow, &late), 0);
    while (st_metric(port, "cuvil_model_requests_total{model=\"slow\",version=\"1\"}") < N + 1)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cv_serve_stop(s, 10000);
    pthread_join(late.t, NULL);
    assert_int_equal(late.status, 200);
    assert_int_equal(st_connect(port), -1);
    cv_tmpdir_remove(dir);
}

/* Two instances, four slow requests at once: both instances are
 * reported, their busy seconds add up to at least the compute time measured per
 * run, and utilisation is busy over wall, between 0 and 1. */
static void test_instance_utilisation(void **state)
{
    char *dir = cv_tmpdir_make("serve-util");
    char *slow = st_slow_model();
    st_add_model(dir, "slow", "1", slow, "instances: 2\n");
    free(slow);
    cv_serve *s = start(dir, false);
    int port = cv_serve_port(s);
    assert_true(model_metric(port, "cuvil_model_instance_busy_seconds_total", "slow",
                             ",instance=\"0\"") == 0);
    enum { N = 4 };
    slow_client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (slow_client){.port = port};
        assert_int_equal(pthread_create(&c[i].t, NULL, post_slow, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].t, NULL);
        assert_int_equal(c[i].status, 200);
    }
    double busy = 0;
    for (int k = 0; k < 2; k++) {
        char inst[32];
        snprintf(inst, sizeof inst, ",instance=\"%d\"", k);
        double b = model_metric(port, "cuvil_model_instance_busy_seconds_total", "slow", inst);
        double u = model_metric(port, "cuvil_model_instance_utilization", "slow", inst);
        /* Under load one instance may have taken all four: each only >= 0. */
        if (!(b >= 0 && u >= 0 && u <= 1))
            fail_msg("instance %d: busy %g s, utilisation %g", k, b, u);
        busy += b;
    }
    assert_true(busy > 0);
    assert_true(model_metric(port, "cuvil_model_instance_utilization", "slow",
                             ",instance=\"2\"") == -1);
    double compute = model_metric(port, "cuvil_model_compute_seconds_sum", "slow", "");
    if (!(busy >= compute * 0.999 && busy <= compute * 1.5 + 0.01))
        fail_msg("busy %g s for %g s of compute", busy, compute);
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ SIGTERM */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_sigterm_stops_cuvil_serve(void **state)
{
    const char *bin = getenv("CUVIL_BIN");
    if (!bin) {
        fprintf(stderr, "CUVIL_BIN not set: skipped\n");
        return;
    }
    char *dir = cv_tmpdir_make("serve-term");
    st_add_model(dir, "relu4", "1", ST_RELU, NULL);
    int port = free_port();
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    char *argv[] = {(char *)bin, "serve", "--model-repository", dir, "--listen", listen, NULL};
    cv_child c;
    assert_int_equal(cv_child_spawn(&c, argv), 0);
    int fd = -1;
    for (int i = 0; i < 600 && fd < 0; i++) {   /* up to 30 s under ASan */
        fd = st_connect(port);
        if (fd < 0)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    assert_true(fd >= 0);
    close(fd);
    st_resp r = st_post(port, "/v2/models/relu4/infer", "{\"inputs\":[{\"name\":\"x\","
                        "\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,-1,2,-2]}]}");
    assert_int_equal(r.status, 200);
    st_resp_free(&r);
    int status = 0;
    cv_child_stop_all(&c, 1, SIGTERM, &status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ config.yaml */

static void expect_config_error(const char *text, int line)
{
    char *dir = cv_tmpdir_make("serve-config");
    assert_int_equal(cv_tmpdir_write(dir, "config.yaml", text, strlen(text)), 0);
    sv_config c;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(sv_config_load(dir, &c, &d), -1);
    assert_true(d.n >= 1);
    if (d.v[0].code != CV_E_SERVE_BAD_CONFIG || d.v[0].span.line != line ||
        !strstr(d.v[0].span.file ? d.v[0].span.file : "", "config.yaml"))
        fail_msg("%s: CV%04d at %s:%d: %s", text, d.v[0].code, d.v[0].span.file,
                 d.v[0].span.line, d.v[0].msg);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
}

static void test_hostile_config_values(void **state)
{
    expect_config_error("instances: 1\nmax_batch_size: -1\n", 2);
    expect_config_error("instances: 1\nmax_batch_size: 100000\n", 2);
    expect_config_error("instances: 1\nmax_batch_size: \"8\"\n", 2);
    expect_config_error("max_batch_size: 4\ninstances: 0\n", 2);
    expect_config_error("max_batch_size: 4\ninstances: 100000000000\n", 2);
    expect_config_error("max_batch_size: 4\nmax_queue_delay_us: 1.5\n", 2);
    expect_config_error("max_batch_size: 4\nmax_queue_size: 0\n", 2);
    expect_config_error("max_batch_size: 4\nmax_batch_sise: 8\n", 2);
    expect_config_error("max_batch_size: 4\npreferred_batch_sizes: 3\n", 2);
    expect_config_error("max_batch_size: 4\npreferred_batch_sizes:\n  - 2\n  - 8\n", 4);
    expect_config_error("preferred_batch_sizes: [2]\nmax_batch_size: 1\n", 1);
    expect_config_error("- max_batch_size\n", 1);
    /* A good one, keys in any order. */
    char *dir = cv_tmpdir_make("serve-config");
    const char *good = "preferred_batch_sizes: [4, 8]\nmax_batch_size: 8\ninstances: 2\n"
                       "max_queue_delay_us: 500\nmax_queue_size: 7\n";
    assert_int_equal(cv_tmpdir_write(dir, "config.yaml", good, strlen(good)), 0);
    sv_config c;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(sv_config_load(dir, &c, &d), 0);
    assert_int_equal(c.max_batch_size, 8);
    assert_int_equal(c.instances, 2);
    assert_int_equal(c.max_queue_delay_us, 500);
    assert_int_equal(c.max_queue_size, 7);
    assert_int_equal(c.n_preferred, 2);
    assert_int_equal(c.preferred[1], 8);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
}

/* Batching asked of a model without a symbolic batch dimension, and a
 * model folder without a version: the server does not start. */
static void expect_start_error(const char *repo, int code)
{
    cv_serve_opts o = {.model_repository = repo, .listen = "127.0.0.1:0"};
    cv_serve *s = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_serve_start(&o, &s, &d), -1);
    assert_null(s);
    bool found = false;
    for (int i = 0; i < d.n; i++)
        found = found || d.v[i].code == code;
    assert_true(found);
    cv_diag_free(&d);
}

static void test_repository_errors(void **state)
{
    char *dir = cv_tmpdir_make("serve-repo");
    st_add_model(dir, "fixed", "1", "cuir 1\nmodel @fixed(%x: f32[2,4]) -> (f32[2,4]) {\n"
                 "  %0 = relu(%x) : f32[2,4]\n  return %0\n}\n", "max_batch_size: 4\n");
    expect_start_error(dir, CV_E_SERVE_BAD_CONFIG);
    char *cfg = cv_tmpdir_path(dir, "fixed/config.yaml");
    remove(cfg);
    free(cfg);
    char *empty = cv_tmpdir_path(dir, "empty");
    mkdir(empty, 0755);
    free(empty);
    expect_start_error(dir, CV_E_SERVE_MODEL_LOAD);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_config_values),
        cmocka_unit_test(test_repository_errors),
        cmocka_unit_test(test_requests_are_batched),
        cmocka_unit_test(test_steady_state_allocates_no_buffer),
        cmocka_unit_test(test_instance_utilisation),
        cmocka_unit_test(test_full_queue_is_429_and_drain_finishes_requests),
        cmocka_unit_test(test_sigterm_stops_cuvil_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
