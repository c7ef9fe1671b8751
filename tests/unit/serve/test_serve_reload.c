/* cuvil serve's hot reload (issue 32): a new version loaded next to the old
 * one and swapped in while clients keep sending, with not one failed
 * request; a version that cannot load is refused and the old one stays. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/serve_testlib.h"

/* Version 2 answers sigmoid, version 1 relu: the answer tells which ran. */
static const char ST_SIGMOID[] = "cuir 1\nmodel @relu4(%x: f32[N,4]) -> (f32[N,4]) {\n"
                                 "  %0 = sigmoid(%x) : f32[N,4]\n  return %0\n}\n";
static const char REQ[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                          "\"data\":[0,-2,3,-4]}]}";

typedef struct client {
    pthread_t t;
    int port;
    atomic_bool *stop;
    int ok, failed, v1, v2, last;   /* last: the version of the last answer */
} client;

static void *send_loop(void *arg)
{
    client *c = arg;
    while (!atomic_load(c->stop)) {
        st_resp r = st_post(c->port, "/v2/models/relu4/infer", REQ);
        bool v1 = r.body && strstr(r.body, "\"model_version\":\"1\"") &&
                  strstr(r.body, "\"data\":[0.0,0.0,3.0,0.0]");
        bool v2 = r.body && strstr(r.body, "\"model_version\":\"2\"") &&
                  strstr(r.body, "\"data\":[0.5,");
        if (r.status == 200 && (v1 || v2)) {
            c->ok++;
            c->v1 += v1;
            c->v2 += v2;
            c->last = v1 ? 1 : 2;
        } else {
            c->failed++;
            fprintf(stderr, "failed: %d %s\n", r.status, r.body ? r.body : "(no answer)");
        }
        st_resp_free(&r);
    }
    return NULL;
}

static double served(int port)
{
    double a = st_metric(port, "cuvil_model_success_total{model=\"relu4\",version=\"1\"}");
    double b = st_metric(port, "cuvil_model_success_total{model=\"relu4\",version=\"2\"}");
    return (a > 0 ? a : 0) + (b > 0 ? b : 0);
}

static void wait_served(int port, double n)
{
    for (int i = 0; i < 20000 && served(port) < n; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void test_reload_under_load_fails_no_request(void **state)
{
    char *dir = cv_tmpdir_make("serve-reload");
    st_add_model(dir, "relu4", "1", ST_RELU, "max_batch_size: 8\nmax_queue_delay_us: 1000\n"
                 "instances: 2\n");
    cv_serve_opts o = {.model_repository = dir, .listen = "127.0.0.1:0"};
    cv_serve *s;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_serve_start(&o, &s, &d), 0);
    int port = cv_serve_port(s);
    atomic_bool stop = false;
    enum { N = 4 };
    client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){.port = port, .stop = &stop};
        assert_int_equal(pthread_create(&c[i].t, NULL, send_loop, &c[i]), 0);
    }
    wait_served(port, 20);
    /* Version 2 appears and is loaded while the clients go on. */
    st_add_model(dir, "relu4", "2", ST_SIGMOID, NULL);
    st_resp r = st_http(port, "POST", "/v2/repository/models/relu4/load", NULL, "", 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"version\":\"2\""));
    st_resp_free(&r);
    double at_swap = served(port);
    wait_served(port, at_swap + 20);
    /* Version 3 is no artifact: refused, version 2 stays. */
    char *v3 = cv_tmpdir_path(dir, "relu4/3");
    mkdir(v3, 0755);
    assert_int_equal(cv_tmpdir_write(v3, "manifest.json", "{", 1), 0);
    r = st_http(port, "POST", "/v2/repository/models/relu4/load", NULL, "", 0);
    assert_int_equal(r.status, 400);
    assert_int_equal(st_error_code(&r), 9403);
    st_resp_free(&r);
    wait_served(port, served(port) + 10);
    atomic_store(&stop, true);
    int ok = 0, v1 = 0, v2 = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].t, NULL);
        assert_int_equal(c[i].failed, 0);
        assert_int_equal(c[i].last, 2);
        ok += c[i].ok, v1 += c[i].v1, v2 += c[i].v2;
    }
    assert_true(v1 >= 20 && v2 >= 20 && ok == v1 + v2);
    r = st_http(port, "GET", "/v2/models/relu4", NULL, NULL, 0);
    assert_non_null(strstr(r.body, "\"versions\":[\"2\"]"));
    st_resp_free(&r);
    r = st_http(port, "POST", "/v2/repository/models/nope/load", NULL, "", 0);
    assert_int_equal(r.status, 404);
    st_resp_free(&r);
    cv_serve_stop(s, 1000);
    cv_diag_free(&d);
    free(v3);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reload_under_load_fails_no_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
