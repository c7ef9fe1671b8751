/* Git webhooks replayed against a real server: GitHub and GitLab push
 * payloads as the hosts send them (tests/data/webhooks/), signed or not,
 * for the tracked ref or another, and over the size limit.  A good push
 * leaves a build request that the controller's next step turns into a
 * poll of the source (without waiting for the 1 h interval). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/hmac.h>
#include <time.h>

#include "tests/support/http_testlib.h"

#define SECRET "It's a Secret to Everybody"

static const trepo_file C1[] = {{"cuvil/vision.yaml", HT_PIPELINE, 0},
                                {"models/a.cuir", HT_MODEL_A, 0}};

static int setup(void **state)
{
    ht_farm *f = ht_farm_new("http-hook");
    ht_commit(f, 0, "one", C1, 2);
    ht_open_controller(f);
    assert_true(ht_step(f, true).planned);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    ht_farm_free(*state);
    return 0;
}

static const char *fmt_time(time_t t)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%010lld", (long long)t);
    return buf;
}

static char *payload(const char *name, const char *ref)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/webhooks/%s", cv_tmpdir_src_root(), name);
    size_t len;
    char *text = cv_tmpdir_read_file(path, &len);
    assert_non_null(text);
    const char *at = strstr(text, "refs/heads/main");
    assert_non_null(at);
    size_t n = len + strlen(ref) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, ref, at + strlen("refs/heads/main"));
    free(text);
    /* pushed now (a push older than an hour is refused as a replay) */
    char *pushed = strstr(out, "\"pushed_at\": ");
    if (pushed)
        memcpy(pushed + 13, fmt_time(time(NULL)), 10);
    return out;
}

static int deliveries;   /* each delivery gets its own id, as the hosts give */

/* POSTs a GitHub delivery signed with key (NULL: no signature header). */
static json_t *github(ht_farm *f, const char *event, const char *body, const char *key,
                      long want)
{
    char sig[128] = "X-Hub-Signature-256: sha256=";
    if (key) {
        unsigned char md[32];
        unsigned int n = 0;
        HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)body, strlen(body), md,
             &n);
        for (unsigned i = 0; i < n; i++)
            snprintf(sig + strlen(sig), 3, "%02x", md[i]);
    }
    char ev[64], id[80];
    snprintf(ev, sizeof ev, "X-GitHub-Event: %s", event);
    snprintf(id, sizeof id, "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-%012d", ++deliveries);
    const char *const headers[] = {"Content-Type: application/json",
                                   "User-Agent: GitHub-Hookshot/7a1f2c3", id,
                                   "X-GitHub-Hook-ID: 292430182", ev, key ? sig : NULL, NULL};
    return ht_json(f, "POST", "/hooks/github", headers, body, want);
}

static json_t *gitlab(ht_farm *f, const char *event, const char *body, const char *token,
                      long want)
{
    char ev[64], tok[128], id[80];
    snprintf(ev, sizeof ev, "X-Gitlab-Event: %s", event);
    snprintf(tok, sizeof tok, "X-Gitlab-Token: %s", token ? token : "");
    snprintf(id, sizeof id, "X-Gitlab-Event-UUID: 13792a34-cac6-4fda-95a8-%012d", ++deliveries);
    const char *const headers[] = {"Content-Type: application/json",
                                   "User-Agent: GitLab/17.5.1",
                                   "X-Gitlab-Instance: https://gitlab.example.com", id,
                                   ev, token ? tok : NULL, NULL};
    return ht_json(f, "POST", "/hooks/gitlab", headers, body, want);
}

static bool request_open(ht_farm *f)
{
    cv_build_request br;
    return cv_builddb_request_next(cv_controller_db(f->ctl), &br, &f->d) == 1;
}

/* A new commit, announced by the hook, is planned by the next step. */
static void assert_push_builds(ht_farm *f, json_t *answer, const char *hex)
{
    assert_string_equal(ht_str(answer, "status"), "queued");
    assert_true(ht_int(answer, "request") > 0);
    assert_true(request_open(f));
    cv_step_report r = ht_step(f, false);
    assert_int_equal(r.requests, 1);
    assert_true(r.polled);
    assert_true(r.planned);
    assert_non_null(strstr(r.revision, hex));
    assert_false(request_open(f));
}

static void test_github_push(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    const trepo_file c2[] = {{"models/b.cuir", HT_MODEL_B, 0}};
    ht_commit(f, 1, "two", c2, 1);
    char *body = payload("github_push.json", "refs/heads/main");
    json_t *j = github(f, "push", body, SECRET, 202);
    assert_push_builds(f, j, f->hex[1]);
    json_decref(j);

    j = github(f, "ping", "{\"zen\":\"Keep it logically awesome.\",\"hook_id\":1}", SECRET, 200);
    assert_string_equal(ht_str(j, "status"), "pong");
    json_decref(j);
    free(body);
}

/* Replays (issue 25): a signed push posted twice is built once; a changed
 * delivery id does not help (the payload is remembered too); a payload
 * pushed over an hour ago is refused; the same holds after a restart. */
static void test_replay_refused(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    const trepo_file c2[] = {{"models/b.cuir", HT_MODEL_B, 0}};
    ht_commit(f, 1, "two", c2, 1);
    char *body = payload("github_push.json", "refs/heads/main");
    char sig[128] = "X-Hub-Signature-256: sha256=";
    unsigned char md[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), (const unsigned char *)body, strlen(body), md,
         &n);
    for (unsigned i = 0; i < n; i++)
        snprintf(sig + strlen(sig), 3, "%02x", md[i]);
    const char *const captured[] = {"X-GitHub-Event: push", sig,
                                    "X-GitHub-Delivery: 0f1e2d3c-aaaa-bbbb-cccc-000000000001",
                                    NULL};
    json_t *j = ht_json(f, "POST", "/hooks/github", captured, body, 202);
    assert_push_builds(f, j, f->hex[1]);
    json_decref(j);
    /* the same delivery again */
    j = ht_json(f, "POST", "/hooks/github", captured, body, 409);
    ht_assert_error(j, "CV6145");
    json_decref(j);
    /* the same signed payload with a fresh id */
    j = github(f, "push", body, SECRET, 409);
    ht_assert_error(j, "CV6145");
    json_decref(j);
    /* and after a restart of the server */
    cv_http_stop(f->http);
    ht_start_http(f, NULL, SECRET);
    j = ht_json(f, "POST", "/hooks/github", captured, body, 409);
    json_decref(j);
    assert_false(request_open(f));

    /* a push of two hours ago, signed, never seen: stale */
    char *old = payload("github_push.json", "refs/heads/main");
    char *at = strstr(old, "\"pushed_at\": ");
    memcpy(at + 13, fmt_time(time(NULL) - 7200), 10);
    j = github(f, "push", old, SECRET, 409);
    ht_assert_error(j, "CV6146");
    json_decref(j);
    assert_false(request_open(f));
    /* GitLab: the same delivery id twice */
    char *gl = payload("gitlab_push.json", "refs/heads/main");
    const char *const gl_hook[] = {"X-Gitlab-Event: Push Hook", "X-Gitlab-Token: " SECRET,
                                   "X-Gitlab-Event-UUID: 5e1f0000-0000-4000-8000-000000000001",
                                   NULL};
    j = ht_json(f, "POST", "/hooks/gitlab", gl_hook, gl, 202);
    json_decref(j);
    assert_true(request_open(f));
    ht_step(f, false);
    j = ht_json(f, "POST", "/hooks/gitlab", gl_hook, "{\"ref\":\"refs/heads/main\",\"x\":1}",
                409);
    ht_assert_error(j, "CV6145");
    json_decref(j);
    assert_false(request_open(f));

    long status;
    char *m = ht_get(f, "/metrics", &status);
    assert_non_null(
        strstr(m, "cuvil_farm_webhooks_total{host=\"github\",outcome=\"replayed\"} 2\n"));
    free(m);
    free(gl);
    free(old);
    free(body);
}

static void test_github_bad_signature(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    char *body = payload("github_push.json", "refs/heads/main");
    json_t *j = github(f, "push", body, "not the secret", 401);
    ht_assert_error(j, "CV6138");
    json_decref(j);
    j = github(f, "push", body, NULL, 401);
    json_decref(j);
    /* a signature of other bytes */
    char *other = payload("github_push.json", "refs/heads/mainx");
    char sig[128] = "X-Hub-Signature-256: sha256=";
    unsigned char md[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), SECRET, (int)strlen(SECRET), (const unsigned char *)other,
         strlen(other), md, &n);
    for (unsigned i = 0; i < n; i++)
        snprintf(sig + strlen(sig), 3, "%02x", md[i]);
    const char *const headers[] = {"X-GitHub-Event: push", sig, NULL};
    j = ht_json(f, "POST", "/hooks/github", headers, body, 401);
    json_decref(j);
    assert_false(request_open(f));

    long status;
    char *m = ht_get(f, "/metrics", &status);
    assert_int_equal(status, 200);
    assert_non_null(
        strstr(m, "cuvil_farm_webhooks_total{host=\"github\",outcome=\"bad_signature\"} 3\n"));
    free(m);
    free(other);
    free(body);
}

static void test_github_ignored(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    char *body = payload("github_push.json", "refs/heads/feature/faster-conv");
    json_t *j = github(f, "push", body, SECRET, 202);
    assert_string_equal(ht_str(j, "status"), "ignored");
    assert_string_equal(ht_str(j, "code"), "CV6141");
    assert_non_null(strstr(ht_str(j, "reason"), "refs/heads/feature/faster-conv"));
    json_decref(j);
    free(body);
    j = github(f, "issues", "{\"action\":\"opened\"}", SECRET, 202);
    assert_string_equal(ht_str(j, "status"), "ignored");
    json_decref(j);
    /* the tracked branch deleted */
    j = github(f, "push", "{\"ref\":\"refs/heads/main\",\"deleted\":true,"
                          "\"after\":\"0000000000000000000000000000000000000000\"}",
               SECRET, 202);
    assert_string_equal(ht_str(j, "status"), "ignored");
    json_decref(j);
    j = github(f, "push", "{\"zen\":1}", SECRET, 400);
    ht_assert_error(j, "CV6140");
    json_decref(j);
    assert_false(request_open(f));
    assert_int_equal(ht_step(f, false).requests, 0);
}

static void test_oversized(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    size_t n = CV_HTTP_BODY_MAX + CV_HTTP_BODY_MAX / 2;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    memcpy(big, "{\"ref\":\"refs/heads/main\",\"pad\":\"", 32);
    big[n - 2] = '"';
    big[n - 1] = '}';
    big[n] = '\0';
    json_t *j = github(f, "push", big, SECRET, 413);
    ht_assert_error(j, "CV6136");
    json_decref(j);
    j = gitlab(f, "Push Hook", big, SECRET, 413);
    json_decref(j);
    free(big);
    assert_false(request_open(f));
    /* the server still answers afterwards */
    j = ht_json(f, NULL, "/api/v1/revisions", NULL, NULL, 200);
    json_decref(j);
}

static void test_gitlab(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, SECRET);
    char *body = payload("gitlab_push.json", "refs/heads/main");
    json_t *j = gitlab(f, "Push Hook", body, "wrong", 401);
    ht_assert_error(j, "CV6138");
    json_decref(j);
    j = gitlab(f, "Push Hook", body, NULL, 401);
    json_decref(j);
    assert_false(request_open(f));

    const trepo_file c2[] = {{"models/b.cuir", HT_MODEL_B, 0}};
    ht_commit(f, 1, "two", c2, 1);
    j = gitlab(f, "Push Hook", body, SECRET, 202);
    assert_push_builds(f, j, f->hex[1]);
    json_decref(j);
    free(body);

    body = payload("gitlab_push.json", "refs/tags/v1.2.0");
    j = gitlab(f, "Tag Push Hook", body, SECRET, 202);
    assert_string_equal(ht_str(j, "status"), "ignored");
    json_decref(j);
    j = gitlab(f, "Merge Request Hook", body, SECRET, 202);
    assert_string_equal(ht_str(j, "status"), "ignored");
    json_decref(j);
    free(body);
    assert_false(request_open(f));
}

static void test_hooks_off_without_secret(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    char *body = payload("github_push.json", "refs/heads/main");
    json_t *j = github(f, "push", body, SECRET, 403);
    ht_assert_error(j, "CV6139");
    json_decref(j);
    j = ht_json(f, NULL, "/hooks/github", NULL, NULL, 405);
    json_decref(j);
    free(body);
    assert_false(request_open(f));
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_github_push, setup, teardown),
        cmocka_unit_test_setup_teardown(test_github_bad_signature, setup, teardown),
        cmocka_unit_test_setup_teardown(test_github_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gitlab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hooks_off_without_secret, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
