/* cuvil serve's model repository while it serves (issue 32): a model
 * folder added later is served after a rescan (POST /v2/repository/index),
 * a load of its name, or the --poll-interval thread; a removed folder's
 * model is unloaded; POST .../unload lets the request in flight finish and
 * then answers 404; strings that are no model name (.., /, non-UTF-8,
 * huge) are refused with CV9419 while the server keeps serving. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/serve_testlib.h"

static const char RELU_REQ[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
                               "\"shape\":[1,4],\"data\":[1,-1,2,-2]}]}";
static const char TWO_REQ[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,3],"
                              "\"data\":[1,2,3]},{\"name\":\"y\",\"datatype\":\"FP32\","
                              "\"shape\":[1,3],\"data\":[2,2,2]}]}";

static cv_serve *start(const char *repo, int64_t poll_ms)
{
    cv_serve_opts o = {.model_repository = repo, .listen = "127.0.0.1:0", .poll_ms = poll_ms};
    return st_start(&o);
}

static int infer_status(int port, const char *model, const char *req)
{
    char path[128];
    snprintf(path, sizeof path, "/v2/models/%s/infer", model);
    st_resp r = st_post(port, path, req);
    int st = r.status;
    if (st == 404)
        assert_int_equal(st_error_code(&r), 9412);
    st_resp_free(&r);
    return st;
}

static void post_expect(int port, const char *path, int status, int code)
{
    st_resp r = st_http(port, "POST", path, NULL, "", 0);
    if (r.status != status || (code && st_error_code(&r) != code))
        fail_msg("POST %s: %d %s, wanted %d CV%04d", path, r.status, r.body ? r.body : "", status,
                 code);
    st_resp_free(&r);
}

static void test_models_added_and_removed(void **state)
{
    char *dir = cv_tmpdir_make("serve-repo-add");
    st_add_model(dir, "relu4", "1", ST_RELU, NULL);
    cv_serve *s = start(dir, 0);
    int port = cv_serve_port(s);
    /* Added while serving: not served until a rescan. */
    st_add_model(dir, "two", "1", ST_TWO, NULL);
    assert_int_equal(infer_status(port, "two", TWO_REQ), 404);
    st_resp r = st_http(port, "POST", "/v2/repository/index", NULL, "", 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "{\"name\":\"two\",\"version\":\"1\",\"state\":\"READY\"}"));
    st_resp_free(&r);
    assert_int_equal(infer_status(port, "two", TWO_REQ), 200);
    /* Added, then loaded by name. */
    st_add_model(dir, "third", "1", ST_RELU, NULL);
    post_expect(port, "/v2/repository/models/third/load", 200, 0);
    assert_int_equal(infer_status(port, "third", RELU_REQ), 200);
    post_expect(port, "/v2/repository/models/fourth/load", 404, 9412);
    /* Its folder removed: unloaded by the next rescan, the rest stays. */
    char *third = cv_tmpdir_path(dir, "third");
    assert_int_equal(cv_tmpdir_remove(third), 0);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_serve_rescan(s, &d), 0);
    cv_diag_free(&d);
    assert_int_equal(infer_status(port, "third", RELU_REQ), 404);
    assert_int_equal(infer_status(port, "two", TWO_REQ), 200);
    assert_int_equal(infer_status(port, "relu4", RELU_REQ), 200);
    /* The metrics list what is served now. */
    assert_true(st_metric(port, "cuvil_model_loaded_versions{model=\"two\"}") == 1);
    assert_true(st_metric(port, "cuvil_model_loaded_versions{model=\"third\"}") == -1);
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ unload */

typedef struct slow_client {
    pthread_t t;
    int port, status, runs;
} slow_client;

static void *post_slow(void *arg)
{
    slow_client *c = arg;
    const char *h = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,256,256],"
                    "\"parameters\":{\"binary_data_size\":524288}}],"
                    "\"parameters\":{\"binary_data_output\":true}}";
    size_t hl = strlen(h), len = hl + 524288;
    char *b = calloc(1, len), extra[96];
    memcpy(b, h, hl);
    snprintf(extra, sizeof extra, "Inference-Header-Content-Length: %zu\r\n", hl);
    st_resp r = st_http(c->port, "POST", "/v2/models/slow/infer", extra, b, len);
    c->status = r.status;
    st_resp_free(&r);
    free(b);
    return NULL;
}

static void test_unload_finishes_requests_in_flight(void **state)
{
    char *dir = cv_tmpdir_make("serve-repo-unload");
    char *slow = st_slow_model();
    st_add_model(dir, "slow", "1", slow, NULL);
    st_add_model(dir, "relu4", "1", ST_RELU, NULL);
    free(slow);
    cv_serve *s = start(dir, 0);
    int port = cv_serve_port(s);
    slow_client c = {.port = port};
    assert_int_equal(pthread_create(&c.t, NULL, post_slow, &c), 0);
    /* Unloaded once the request is queued or running. */
    const char *taken = "cuvil_model_requests_total{model=\"slow\",version=\"1\"}";
    for (int i = 0; i < 10000 && st_metric(port, taken) < 1; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    post_expect(port, "/v2/repository/models/slow/unload", 200, 0);
    pthread_join(c.t, NULL);
    assert_int_equal(c.status, 200);
    assert_int_equal(infer_status(port, "slow", "{}"), 404);
    /* A rescan leaves it out; the index says so; a load brings it back. */
    st_resp r = st_http(port, "POST", "/v2/repository/index", NULL, "", 0);
    assert_non_null(strstr(r.body, "{\"name\":\"slow\",\"state\":\"UNAVAILABLE\"}"));
    st_resp_free(&r);
    assert_int_equal(infer_status(port, "slow", "{}"), 404);
    post_expect(port, "/v2/repository/models/slow/unload", 404, 9412);
    post_expect(port, "/v2/repository/models/slow/load", 200, 0);
    c.status = 0;
    assert_int_equal(pthread_create(&c.t, NULL, post_slow, &c), 0);
    pthread_join(c.t, NULL);
    assert_int_equal(c.status, 200);
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ hostile names */

static void test_hostile_names_refused(void **state)
{
    char *dir = cv_tmpdir_make("serve-repo-names");
    st_add_model(dir, "relu4", "1", ST_RELU, NULL);
    cv_serve *s = start(dir, 0);
    int port = cv_serve_port(s);
    char huge[1200] = "/v2/repository/models/";   /* st_http's head holds 2 KiB */
    memset(huge + strlen(huge), 'a', 1000);
    strcat(huge, "/load");
    const char *paths[] = {
        "/v2/repository/models/../load",   "/v2/repository/models/%2e%2e/load",
        "/v2/repository/models/a%2Fb/load", "/v2/repository/models/a/b/load",
        "/v2/repository/models/%ff%fe/load", "/v2/repository/models/.hidden/unload",
        "/v2/repository/models/x%01y/load", "/v2/repository/models//load",
        huge,
    };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        st_resp r = st_http(port, "POST", paths[i], NULL, "", 0);
        if (r.status != 400 || st_error_code(&r) != 9419)
            fail_msg("%.60s: %d %s", paths[i], r.status, r.body ? r.body : "");
        st_resp_free(&r);
        int st = infer_status(port, "relu4", RELU_REQ);
        if (st != 200)
            fail_msg("after %.60s: relu4 answers %d", paths[i], st);
    }
    /* A folder whose name is none: left out of a rescan with CV9419. */
    char *odd = cv_tmpdir_path(dir, "bad name");
    mkdir(odd, 0755);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_serve_rescan(s, &d), -1);
    assert_true(d.n >= 1 && d.v[0].code == 9419);
    cv_diag_free(&d);
    assert_int_equal(infer_status(port, "relu4", RELU_REQ), 200);
    free(odd);
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

/* ------------------------------------------------------------ polling */

static void test_poll_interval_picks_up_new_models(void **state)
{
    char *dir = cv_tmpdir_make("serve-repo-poll");
    st_add_model(dir, "relu4", "1", ST_RELU, NULL);
    cv_serve *s = start(dir, 50);
    int port = cv_serve_port(s);
    st_add_model(dir, "two", "1", ST_TWO, NULL);
    int st = 0;
    for (int i = 0; i < 400 && (st = infer_status(port, "two", TWO_REQ)) != 200; i++)
        nanosleep(&(struct timespec){0, 25000000}, NULL);
    assert_int_equal(st, 200);
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_added_and_removed),
        cmocka_unit_test(test_unload_finishes_requests_in_flight),
        cmocka_unit_test(test_hostile_names_refused),
        cmocka_unit_test(test_poll_interval_picks_up_new_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
