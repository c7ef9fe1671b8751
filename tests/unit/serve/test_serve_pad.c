/* cuvil serve's padding of symbolic axes (issue 32): requests of different
 * sequence lengths for a model with pad_dynamic_axes run in one batch at
 * the longest length and each answer is cut back to its own length; with
 * the setting off (the default) they run apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_internal.h"
#include "tests/support/serve_testlib.h"

/* Position-wise along L: relu(x) * 2 on f32[N,L,2]. */
static const char SEQ[] = "cuir 1\nmodel @seq(%x: f32[N,L,2]) -> (f32[N,L,2]) {\n"
                          "  %0 = relu(%x) : f32[N,L,2]\n  %1 = add(%0, %0) : f32[N,L,2]\n"
                          "  return %1\n}\n";

typedef struct client {
    pthread_t t;
    int port, len, rows, status;
    char *body;
} client;

/* Element j of row r of a client with length len: distinct per client. */
static int value(int len, int r, int j)
{
    return (j % 2 ? -1 : 1) * (len * 100 + r * 10 + j);
}

static void *post(void *arg)
{
    client *c = arg;
    char req[4096];
    int n = snprintf(req, sizeof req, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
                     "\"shape\":[%d,%d,2],\"data\":[", c->rows, c->len);
    for (int r = 0; r < c->rows; r++)
        for (int j = 0; j < 2 * c->len; j++)
            n += snprintf(req + n, sizeof req - (size_t)n, "%s%d", r || j ? "," : "",
                          value(c->len, r, j));
    snprintf(req + n, sizeof req - (size_t)n, "]}]}");
    st_resp r = st_post(c->port, "/v2/models/seq/infer", req);
    c->status = r.status;
    c->body = r.body;
    r.body = NULL;
    st_resp_free(&r);
    return NULL;
}

static void expect_own(const client *c)
{
    char want[4096];
    int n = snprintf(want, sizeof want, "\"shape\":[%d,%d,2],\"data\":[", c->rows, c->len);
    for (int r = 0; r < c->rows; r++)
        for (int j = 0; j < 2 * c->len; j++) {
            int v = value(c->len, r, j);
            n += snprintf(want + n, sizeof want - (size_t)n, "%s%d.0", r || j ? "," : "",
                          v > 0 ? 2 * v : 0);
        }
    snprintf(want + n, sizeof want - (size_t)n, "]");
    if (c->status != 200 || !c->body || !strstr(c->body, want))
        fail_msg("length %d: %d %s, wanted %s", c->len, c->status, c->body, want);
}

static double runs_for(const char *config, double *rows)
{
    char *dir = cv_tmpdir_make("serve-pad");
    st_add_model(dir, "seq", "1", SEQ, config);
    cv_serve_opts o = {.model_repository = dir, .listen = "127.0.0.1:0"};
    cv_serve *s;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_serve_start(&o, &s, &d), 0);
    cv_diag_free(&d);
    int port = cv_serve_port(s);
    enum { N = 4 };
    static const int lens[N] = {2, 5, 3, 1}, nrows[N] = {1, 2, 1, 1};
    client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){.port = port, .len = lens[i], .rows = nrows[i]};
        assert_int_equal(pthread_create(&c[i].t, NULL, post, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].t, NULL);
        expect_own(&c[i]);
        free(c[i].body);
    }
    *rows = st_metric(port, "cuvil_model_batch_size_sum{model=\"seq\",version=\"1\"}");
    double runs = st_metric(port, "cuvil_model_runs_total{model=\"seq\",version=\"1\"}");
    cv_serve_stop(s, 1000);
    cv_tmpdir_remove(dir);
    return runs;
}

static void test_different_lengths_batched_with_padding(void **state)
{
    double rows = 0;
    /* Padding that leaked into an answer would show as 11.0 (relu(5.5) * 2)
     * and a longer shape: every answer is checked whole. */
    double runs = runs_for("max_batch_size: 8\nmax_queue_delay_us: 400000\n"
                           "pad_dynamic_axes: true\npad_value: 5.5\n", &rows);
    assert_true(rows == 5);
    assert_true(runs >= 1 && runs < 4);
    /* Off by default: four lengths, four runs. */
    runs = runs_for("max_batch_size: 8\nmax_queue_delay_us: 400000\n", &rows);
    assert_true(rows == 5);
    assert_true(runs == 4);
}

static void test_pad_config_values(void **state)
{
    char *dir = cv_tmpdir_make("serve-pad-config");
    const char *bad[] = {"pad_dynamic_axes: 1\n", "pad_dynamic_axes: \"yes\"\n",
                         "pad_value: [1]\n", "pad_value: 1e300\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(cv_tmpdir_write(dir, "config.yaml", bad[i], strlen(bad[i])), 0);
        sv_config c;
        cv_diag d;
        cv_diag_init(&d);
        assert_int_equal(sv_config_load(dir, &c, &d), -1);
        assert_int_equal(d.v[0].code, CV_E_SERVE_BAD_CONFIG);
        assert_int_equal(d.v[0].span.line, 1);
        cv_diag_free(&d);
    }
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_different_lengths_batched_with_padding),
        cmocka_unit_test(test_pad_config_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
