/* The operator's Kubernetes REST client against the fake API server of
 * tests/k8s/: kubeconfig with a token and inline CA, with a client
 * certificate from files, the in-cluster service account, the kubeconfigs
 * it refuses; watch streams (chunked events, bookmarks, stopping, 410 after
 * compaction) and the fake's API semantics the operator relies on (409 on
 * stale writes, the status subresource, merge-patch content types). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/support/k8s_testlib.h"

static char *g_dir;   /* certificates */

static int group_setup(void **state)
{
    g_dir = cv_tmpdir_make("k8s-client");
    char script[4096];
    snprintf(script, sizeof script, "%s/tests/k8s/make_certs.py", cv_tmpdir_src_root());
    const char *argv[] = {CV_PYTHON, script, g_dir, NULL};
    return g_dir && cv_run_argv(argv, NULL, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    cv_tmpdir_remove(g_dir);
    return 0;
}

static char *cert_path(const char *name) { return cv_tmpdir_path(g_dir, name); }

/* A TLS fake: server certificate, plus the given options. */
static void start_tls(kt_fake *f, const char *opt, const char *val)
{
    char *crt = cert_path("server.crt"), *key = cert_path("server.key");
    const char *extra[] = {"--tls-cert", crt, "--tls-key", key, opt, val, NULL};
    assert_int_equal(kt_fake_start(f, opt ? extra : (const char *[]){"--tls-cert", crt,
                                                                     "--tls-key", key, NULL},
                                   true),
                     0);
    free(crt);
    free(key);
}

static char *base64_file(const char *name)
{
    char *path = cert_path(name);
    size_t len = 0;
    char *data = cv_tmpdir_read_file(path, &len);
    free(path);
    assert_non_null(data);
    char *out = malloc(len * 4 / 3 + 8);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
    free(data);
    return out;
}

static char *write_kubeconfig(const char *name, const char *text)
{
    assert_int_equal(cv_tmpdir_write(g_dir, name, text, strlen(text)), 0);
    return cert_path(name);
}

/* GET the clusters of KT_NS with a client made from cfg: the status, or
 * -1 when the server was not reached (the diagnostic code in *code). */
static long list_with(const cv_k8s_config *cfg, int *code)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_k8s_client *cl = NULL;
    assert_int_equal(cv_k8s_client_open(cfg, &cl, &d), 0);
    json_t *out = NULL;
    long st = 0;
    int rc = cv_k8s_request(cl, "GET", KT_CLUSTERS, NULL, NULL, &st, &out, &d);
    *code = d.n ? d.v[0].code : 0;
    json_decref(out);
    cv_k8s_client_close(cl);
    cv_diag_free(&d);
    return rc ? -1 : st;
}

/* ---------------------------------------------------------------- config */

static void test_kubeconfig_token_and_inline_ca(void **state)
{
    kt_fake f;
    start_tls(&f, "--token", "s3cret");
    char *ca = base64_file("ca.crt"), text[8192];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
             "contexts:\n"
             "  - {name: test, context: {cluster: fake, user: robot, namespace: farm}}\n"
             "  - {name: other, context: {cluster: fake, user: nobody}}\n"
             "clusters:\n"
             "  - name: fake\n    cluster:\n      server: \"https://127.0.0.1:%d/\"\n"
             "      certificate-authority-data: %s\n"
             "users:\n  - {name: robot, user: {token: s3cret}}\n"
             "  - {name: nobody, user: {token: wrong}}\n",
             f.port, ca);
    char *path = write_kubeconfig("kubeconfig", text);
    cv_diag d;
    cv_diag_init(&d);
    cv_k8s_config cfg;
    assert_int_equal(cv_k8s_config_kubeconfig(path, NULL, &cfg, &d), 0);
    char want[64];
    snprintf(want, sizeof want, "https://127.0.0.1:%d", f.port);
    assert_string_equal(cfg.server, want);
    assert_string_equal(cfg.ns, "farm");
    assert_string_equal(cfg.token, "s3cret");
    int code = 0;
    assert_int_equal(list_with(&cfg, &code), 200);
    cv_k8s_config_free(&cfg);
    /* The other context's token is refused: 401, not a transport failure. */
    assert_int_equal(cv_k8s_config_kubeconfig(path, "other", &cfg, &d), 0);
    assert_int_equal(list_with(&cfg, &code), 401);
    cv_k8s_config_free(&cfg);
    /* Without the CA the server's certificate is not trusted. */
    assert_int_equal(cv_k8s_config_kubeconfig(path, NULL, &cfg, &d), 0);
    free(cfg.ca_pem);
    cfg.ca_pem = NULL;
    cfg.ca_len = 0;
    assert_int_equal(list_with(&cfg, &code), -1);
    assert_int_equal(code, 7003);
    cv_k8s_config_free(&cfg);
    cv_diag_free(&d);
    free(path);
    free(ca);
    kt_fake_stop(&f);
}

static void test_kubeconfig_client_certificate_files(void **state)
{
    char *ca = cert_path("ca.crt");
    kt_fake f;
    start_tls(&f, "--client-ca", ca);
    char text[4096];
    /* Relative paths are relative to the kubeconfig's directory. */
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
             "contexts: [{name: c, context: {cluster: k, user: u}},"
             " {name: anon, context: {cluster: k}}]\n"
             "clusters: [{name: k, cluster: {server: \"https://127.0.0.1:%d\","
             " certificate-authority: ca.crt}}]\n"
             "users: [{name: u, user: {client-certificate: client.crt,"
             " client-key: client.key}}]\n",
             f.port);
    char *path = write_kubeconfig("kubeconfig-cert", text);
    cv_diag d;
    cv_diag_init(&d);
    cv_k8s_config cfg;
    assert_int_equal(cv_k8s_config_kubeconfig(path, NULL, &cfg, &d), 0);
    assert_non_null(cfg.cert_pem);
    assert_non_null(cfg.key_pem);
    int code = 0;
    assert_int_equal(list_with(&cfg, &code), 200);
    cv_k8s_config_free(&cfg);
    /* No client certificate: the TLS handshake fails. */
    assert_int_equal(cv_k8s_config_kubeconfig(path, "anon", &cfg, &d), 0);
    assert_int_equal(list_with(&cfg, &code), -1);
    assert_int_equal(code, 7003);
    cv_k8s_config_free(&cfg);
    cv_diag_free(&d);
    free(path);
    free(ca);
    kt_fake_stop(&f);
}

static void test_in_cluster_service_account(void **state)
{
    kt_fake f;
    start_tls(&f, "--token", "pod-token");
    char *sa = cv_tmpdir_path(g_dir, "sa"), *ca = cert_path("ca.crt");
    assert_int_equal(mkdir(sa, 0700), 0);
    size_t len = 0;
    char *ca_text = cv_tmpdir_read_file(ca, &len);
    assert_int_equal(cv_tmpdir_write(sa, "ca.crt", ca_text, len), 0);
    assert_int_equal(cv_tmpdir_write(sa, "token", "pod-token\n", 10), 0);
    assert_int_equal(cv_tmpdir_write(sa, "namespace", "farm", 4), 0);
    cv_diag d;
    cv_diag_init(&d);
    cv_k8s_config cfg;
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(cv_k8s_config_in_cluster(sa, &cfg, &d), -1);
    assert_int_equal(d.v[0].code, 7001);
    char port[16];
    snprintf(port, sizeof port, "%d", f.port);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    assert_int_equal(cv_k8s_config_in_cluster(sa, &cfg, &d), 0);
    assert_string_equal(cfg.ns, "farm");
    assert_string_equal(cfg.token, "pod-token");
    assert_non_null(strstr(cfg.token_file, "/sa/token"));
    int code = 0;
    assert_int_equal(list_with(&cfg, &code), 200);
    cv_k8s_config_free(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    cv_diag_free(&d);
    free(ca_text);
    free(ca);
    free(sa);
    kt_fake_stop(&f);
}

static void expect_refused(const char *text, const char *needle)
{
    char *path = write_kubeconfig("kubeconfig-bad", text);
    cv_diag d;
    cv_diag_init(&d);
    cv_k8s_config cfg;
    assert_int_equal(cv_k8s_config_kubeconfig(path, NULL, &cfg, &d), -1);
    assert_int_equal(d.v[0].code, 7002);
    if (!strstr(d.v[0].msg, needle))
        fail_msg("'%s' does not say '%s'", d.v[0].msg, needle);
    cv_diag_free(&d);
    free(path);
}

static void test_kubeconfig_refusals(void **state)
{
    static const char head[] = "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                               "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                               "clusters: [{name: k, cluster: {server: \"https://h:1\"}}]\n";
    char text[1024];
    snprintf(text, sizeof text, "%susers: [{name: u, user: {exec: {command: aws}}}]\n", head);
    expect_refused(text, "exec plugin");
    snprintf(text, sizeof text, "%susers: [{name: u, user: {client-key-data: AAAA}}]\n", head);
    expect_refused(text, "certificate needs its key");
    snprintf(text, sizeof text, "%susers: [{name: u, user: {client-certificate-data: \"%%%%\"}}]\n",
             head);
    expect_refused(text, "not base64");
    snprintf(text, sizeof text, "%susers: []\n", head);
    expect_refused(text, "no user named 'u'");
    expect_refused("apiVersion: v1\nkind: Config\ncurrent-context: gone\n", "no context named");
}

/* ----------------------------------------------------------------- watch */

typedef struct seen {
    char types[8][16];
    int n;
    long code;                  /* of an ERROR event */
    bool stop_after_first;
} seen;

static bool collect(void *ctx, const char *type, json_t *obj)
{
    seen *s = ctx;
    if (s->n < 8)
        snprintf(s->types[s->n++], 16, "%s", type);
    if (strcmp(type, "ERROR") == 0)
        s->code = (long)json_integer_value(json_object_get(obj, "code"));
    return s->stop_after_first;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *rv_of(const json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

static seen watch_from(kt_fake *f, const char *rv, int timeout_s, int64_t wait_ms, bool stop1,
                       volatile int *stop, int *rc)
{
    char path[512];
    snprintf(path, sizeof path, KT_CLUSTERS "?watch=1&resourceVersion=%s&timeoutSeconds=%d"
             "&allowWatchBookmarks=true", rv, timeout_s);
    seen s = {.stop_after_first = stop1};
    long st = 0;
    cv_diag d;
    cv_diag_init(&d);
    *rc = cv_k8s_watch(f->cl, path, wait_ms, stop, collect, &s, &st, &d);
    cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    if (!stop)   /* a stop may come before the answer */
        assert_int_equal(st, 200);
    return s;
}

static void test_watch_streams_and_expiry(void **state)
{
    kt_fake f;
    assert_int_equal(kt_fake_start(&f, NULL, false), 0);
    long st = 0;
    json_t *a = kt_call(&f, "POST", KT_CLUSTERS, NULL, kt_cluster("a", "{\"x\": 1}"), &st);
    assert_int_equal(st, 201);
    json_t *b = kt_call(&f, "PATCH", KT_CLUSTERS "/a", KT_MERGE,
                        json_loads("{\"spec\": {\"x\": 2}}", 0, NULL), &st);
    assert_int_equal(st, 200);
    /* From a's version: its change, then the server's bookmark as it ends. */
    int rc = 0;
    seen s = watch_from(&f, rv_of(a), 1, 5000, false, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.types[0], "MODIFIED");
    assert_string_equal(s.types[1], "BOOKMARK");
    /* A handler that has what it wants ends the stream at once. */
    int64_t t0 = now_ms();
    s = watch_from(&f, "1", 30, 20000, true, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s.types[0], "ADDED");
    assert_true(now_ms() - t0 < 5000);
    /* So does a stop request, and the time limit. */
    volatile int stop = 1;
    t0 = now_ms();
    s = watch_from(&f, rv_of(b), 30, 20000, false, &stop, &rc);
    assert_int_equal(rc, 0);
    assert_true(now_ms() - t0 < 5000);
    s = watch_from(&f, rv_of(b), 30, 300, false, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(s.n, 0);
    /* After compaction a's version is gone: 410 Expired. */
    json_decref(kt_call(&f, "POST", "/fake/compact", NULL, NULL, NULL));
    s = watch_from(&f, rv_of(a), 5, 5000, false, NULL, &rc);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.types[0], "ERROR");
    assert_int_equal(s.code, 410);
    /* An answer other than 200 comes as an ERROR event with its Status. */
    json_decref(kt_call(&f, "POST", "/fake/fail", NULL,
                        json_pack("{s:s, s:s, s:i, s:i}", "method", "GET", "prefix",
                                  KT_CLUSTERS, "code", 403, "count", 1), NULL));
    seen e = {0};
    long status = 0;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_k8s_watch(f.cl, KT_CLUSTERS "?watch=1", 2000, NULL, collect, &e,
                                  &status, &d), 0);
    assert_int_equal(status, 403);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.types[0], "ERROR");
    assert_int_equal(e.code, 403);
    cv_diag_free(&d);
    json_decref(b);
    json_decref(a);
    kt_fake_stop(&f);
}

static void test_fake_api_semantics(void **state)
{
    kt_fake f;
    assert_int_equal(kt_fake_start(&f, NULL, false), 0);
    long st = 0;
    json_t *a = kt_call(&f, "POST", KT_CLUSTERS, NULL, kt_cluster("a", "{\"x\": 1}"), &st);
    assert_int_equal(st, 201);
    json_decref(kt_call(&f, "POST", KT_CLUSTERS, NULL, kt_cluster("a", "{}"), &st));
    assert_int_equal(st, 409);   /* AlreadyExists */
    /* Only merge patches. */
    json_decref(kt_call(&f, "PATCH", KT_CLUSTERS "/a", "application/strategic-merge-patch+json",
                        json_object(), &st));
    assert_int_equal(st, 415);
    /* A stale resourceVersion: 409. */
    json_decref(kt_call(&f, "PATCH", KT_CLUSTERS "/a", KT_MERGE,
                        json_pack("{s:{s:s}, s:{s:i}}", "metadata", "resourceVersion", "1",
                                  "spec", "x", 5), &st));
    assert_int_equal(st, 409);
    /* The object ignores status; /status ignores the rest. */
    json_t *b = kt_call(&f, "PATCH", KT_CLUSTERS "/a", KT_MERGE,
                        json_loads("{\"spec\": {\"x\": 3}, \"status\": {\"y\": 1}}", 0, NULL),
                        &st);
    assert_int_equal(st, 200);
    assert_null(json_object_get(b, "status"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "metadata"),
                                                        "generation")), 2);
    json_t *c = kt_call(&f, "PATCH", KT_CLUSTERS "/a/status", KT_MERGE,
                        json_loads("{\"spec\": {\"x\": 9}, \"status\": {\"y\": 1}}", 0, NULL),
                        &st);
    assert_int_equal(st, 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "spec"), "x")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "status"), "y")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "metadata"),
                                                        "generation")), 2);
    /* A patch that changes nothing keeps the resourceVersion. */
    json_t *d = kt_call(&f, "PATCH", KT_CLUSTERS "/a", KT_MERGE,
                        json_loads("{\"spec\": {\"x\": 3}}", 0, NULL), &st);
    assert_string_equal(rv_of(d), rv_of(c));
    json_decref(d);
    json_decref(c);
    json_decref(b);
    json_decref(a);
    kt_fake_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_token_and_inline_ca),
        cmocka_unit_test(test_kubeconfig_client_certificate_files),
        cmocka_unit_test(test_in_cluster_service_account),
        cmocka_unit_test(test_kubeconfig_refusals),
        cmocka_unit_test(test_watch_streams_and_expiry),
        cmocka_unit_test(test_fake_api_semantics),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
