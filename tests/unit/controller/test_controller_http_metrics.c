/* /metrics in Prometheus text format over a farm with history
 * (tests/support/http_testlib.h): results by target and status, stage
 * duration histograms, the newest revision's jobs, queue depth and leases,
 * the git source, the last successful revision, and counters that keep
 * growing between scrapes.  Debian's `promtool check metrics` (package
 * prometheus) lints the output when it is installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strbuf.h"
#include "tests/support/pyrun.h"
#include "tests/support/http_testlib.h"

static int setup(void **state)
{
    ht_farm *f = ht_farm_new("http-metrics");
    ht_build_history(f);
    ht_start_http(f, NULL, "hook-secret");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    ht_farm_free(*state);
    return 0;
}

static char *scrape(ht_farm *f)
{
    long status = 0;
    char ct[128];
    char *m = ht_request(f->port, NULL, "/metrics", NULL, NULL, 0, &status, ct, sizeof ct);
    assert_int_equal(status, 200);
    assert_non_null(strstr(ct, "text/plain; version=0.0.4"));
    return m;
}

static void assert_sample(const char *m, const char *line)
{
    char want[512];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(m, want))
        fail_msg("no sample '%s' in:\n%s", line, m);
}

static long value(const char *m, const char *series)
{
    char want[512];
    snprintf(want, sizeof want, "\n%s ", series);
    const char *at = strstr(m, want);
    if (!at)
        fail_msg("no series '%s'", series);
    return strtol(at + strlen(want), NULL, 10);
}

static void test_figures(void **state)
{
    ht_farm *f = *state;
    char *m = scrape(f);
    /* 20 results: revision 1 ran 12 jobs, revision 2 ran 8 */
    assert_sample(m, "cuvil_farm_job_results_total{target=\"x86_64-avx2\",status=\"ok\"} 6");
    assert_sample(m, "cuvil_farm_job_results_total{target=\"x86_64-avx2\",status=\"failed\"} 4");
    assert_sample(m, "cuvil_farm_job_results_total{target=\"aarch64-linux-gnu\",status=\"ok\"} 6");
    assert_sample(m, "cuvil_farm_job_stage_duration_seconds_count{stage=\"codegen\"} 20");
    /* codegen: 300 ms on x86, 600 ms on aarch64 (broken: 0) */
#define CODEGEN "cuvil_farm_job_stage_duration_seconds_bucket{stage=\"codegen\","
    assert_sample(m, CODEGEN "le=\"0.5\"} 14");
    assert_sample(m, CODEGEN "le=\"1\"} 20");
    assert_sample(m, CODEGEN "le=\"+Inf\"} 20");
    assert_sample(m, "cuvil_farm_job_cache_lookups_total{level=\"l2\",outcome=\"remote-hit\"} 2");
    /* revision 3: a and b hit in the planner, broken queued (one leased) */
    assert_sample(m, "cuvil_farm_revision_jobs{target=\"x86_64-avx2\",state=\"hit\"} 4");
    assert_sample(m, "cuvil_farm_revision_jobs{target=\"x86_64-avx2\",state=\"queued\"} 2");
    assert_sample(m, "cuvil_farm_queue_jobs{state=\"queued\"} 3");
    assert_sample(m, "cuvil_farm_queue_jobs{state=\"leased\"} 1");
    assert_sample(m, "cuvil_farm_workers_busy 1");
    assert_sample(m, "cuvil_farm_workers{state=\"idle\"} 1");
    assert_sample(m, "cuvil_farm_workers{state=\"busy\"} 1");
    assert_sample(m, "cuvil_farm_workers{state=\"lost\"} 1");
    assert_true(value(m, "cuvil_farm_worker_heartbeat_age_seconds{worker=\"worker-gone\"}") >= 600);
    assert_non_null(
        strstr(m, "\ncuvil_farm_worker_lease_remaining_seconds{worker=\"worker-busy\"} 5"));
    assert_sample(m, "cuvil_farm_controller_up 1");
    assert_sample(m, "cuvil_farm_git_fetch_errors_total 0");
    assert_sample(m, "cuvil_farm_git_fetches_total 3");
    assert_sample(m, "cuvil_farm_cache_stored_bytes 0");
    assert_sample(m, "cuvil_farm_webhooks_total{host=\"github\",outcome=\"bad_signature\"} 0");
    /* misses by the worker's cause; the time the cache saved as the overview
     * counts it (revision 2's planner hits on b, revision 3's on a and b) */
    assert_sample(m, "cuvil_farm_job_cache_misses_total{cause=\"new\"} 8");
    assert_sample(m, "cuvil_farm_job_cache_misses_total{cause=\"weights\"} 2");
    assert_sample(m, "cuvil_farm_cache_hit_jobs_total{by=\"planner\"} 12");
    assert_sample(m, "cuvil_farm_cache_hit_jobs_total{by=\"worker\"} 2");
    json_t *cache = ht_json(f, NULL, "/api/v1/cache", NULL, NULL, 200);
    long saved = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(cache, "revisions")); i++)
        saved += ht_int(json_array_get(json_object_get(cache, "revisions"), i), "savedMs");
    json_decref(cache);
    char line[128];
    snprintf(line, sizeof line, "cuvil_farm_cache_saved_seconds_total %.3f", saved / 1000.0);
    assert_true(saved > 2 * 495 + 2 * 795);
    assert_sample(m, line);
    /* nothing succeeded yet */
    assert_null(strstr(m, "\ncuvil_farm_last_successful_revision_timestamp_seconds "));
    free(m);
}

static void test_counters_grow(void **state)
{
    ht_farm *f = *state;
    char *m = scrape(f);
    free(m);
    /* a bad signature, the three queued broken jobs, then a revision
     * without the broken model: every job hits, so it succeeds at once */
    json_t *j = ht_json(f, "POST", "/hooks/github",
                        (const char *const[]){"X-GitHub-Event: push",
                                              "X-Hub-Signature-256: sha256=00", NULL},
                        "{}", 401);
    json_decref(j);
    assert_int_equal(ht_work(f, -1, false), 3);
    assert_int_equal(ht_step(f, false).results, 3);
    const trepo_file c4[] = {{"models/broken.cuir", NULL, 0}};
    ht_commit(f, 3, "drop broken", c4, 1);
    cv_step_report r = ht_step(f, true);
    assert_true(r.planned);
    assert_int_equal(r.plan.queued, 0);

    m = scrape(f);
#define FAILED(target) "cuvil_farm_job_results_total{target=\"" target "\",status=\"failed\"}"
    assert_int_equal(value(m, FAILED("x86_64-avx2")) + value(m, FAILED("aarch64-linux-gnu")),
                     4 + 4 + 3);
    assert_sample(m, "cuvil_farm_job_stage_duration_seconds_count{stage=\"codegen\"} 23");
    assert_sample(m, "cuvil_farm_webhooks_total{host=\"github\",outcome=\"bad_signature\"} 1");
    assert_sample(m, "cuvil_farm_revision_jobs{target=\"aarch64-linux-gnu\",state=\"hit\"} 4");
    assert_non_null(strstr(m, "\ncuvil_farm_last_successful_revision_timestamp_seconds 1"));
    assert_sample(m, "cuvil_farm_http_requests_total{area=\"hook\",code=\"4xx\"} 1");
    free(m);
}

static void test_promtool(void **state)
{
    ht_farm *f = *state;
    const char *promtool = access("/usr/bin/promtool", X_OK) == 0 ? "/usr/bin/promtool" : NULL;
    if (!promtool) {
        print_message("promtool not installed (Debian package prometheus): lint skipped\n");
        skip();
        return;
    }
    char *m = scrape(f);
    assert_int_equal(cv_tmpdir_write(f->dir, "metrics.txt", m, strlen(m)), 0);
    free(m);
    char *path = cv_tmpdir_path(f->dir, "metrics.txt");
    char *err = cv_tmpdir_path(f->dir, "promtool.err");
    const char *argv[] = {"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", promtool, path,
                          NULL};
    char *out = NULL;
    int rc = cv_run_argv(argv, err, &out);
    size_t n;
    char *e = cv_tmpdir_read_file(err, &n);
    if (rc != 0 || (out && *out) || (e && *e))
        fail_msg("promtool check metrics: exit %d\n%s%s", rc, out ? out : "", e ? e : "");
    free(e);
    free(out);
    free(err);
    free(path);
}

/* The metric names one PromQL expression reads (histograms by family). */
static void check_expr_names(const char *expr, const char *scrape, int *names)
{
    for (const char *p = expr; (p = strstr(p, "cuvil_")) != NULL;) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
        char name[128], want[160];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        size_t len = strlen(name);
        if (len > 7 && strcmp(name + len - 7, "_bucket") == 0)
            name[len - 7] = 0;
        snprintf(want, sizeof want, "\n# TYPE %s ", name);
        if (!strstr(scrape, want))
            fail_msg("deploy/grafana/cuvil-farm.json reads %s, which /metrics does not have", name);
        (*names)++;
        p += n;
    }
}

/* The Grafana dashboard in deploy/ reads only metrics the farm exports,
 * and its queries parse (promtool, as recording rules). */
static void test_grafana_dashboard(void **state)
{
    ht_farm *f = *state;
    json_error_t je;
    json_t *dash = json_load_file("deploy/grafana/cuvil-farm.json", 0, &je);
    if (!dash)
        fail_msg("deploy/grafana/cuvil-farm.json: %s (line %d)", je.text, je.line);
    char *m = scrape(f);
    cv_sb rules = CV_SB_INIT;
    cv_sb_puts(&rules, "groups:\n- name: cuvil-dashboard\n  rules:\n");
    int names = 0, exprs = 0;
    size_t i, k;
    json_t *panel, *target;
    json_array_foreach(json_object_get(dash, "panels"), i, panel)
        json_array_foreach(json_object_get(panel, "targets"), k, target) {
            const char *expr = json_string_value(json_object_get(target, "expr"));
            assert_non_null(expr);
            check_expr_names(expr, m, &names);
            json_t *quoted = json_string(expr);
            char *q = json_dumps(quoted, JSON_ENCODE_ANY);
            cv_sb_printf(&rules, "  - record: cuvil:dashboard_%d\n    expr: %s\n", exprs++, q);
            free(q);
            json_decref(quoted);
        }
    assert_true(exprs >= 10);
    assert_true(names >= exprs);
    free(m);
    json_decref(dash);
    if (access("/usr/bin/promtool", X_OK) == 0) {
        assert_int_equal(cv_tmpdir_write(f->dir, "rules.yaml", rules.buf, rules.len), 0);
        char *path = cv_tmpdir_path(f->dir, "rules.yaml");
        char *err = cv_tmpdir_path(f->dir, "rules.err");
        const char *argv[] = {"/usr/bin/promtool", "check", "rules", path, NULL};
        char *out = NULL;
        int rc = cv_run_argv(argv, err, &out);
        size_t n;
        char *e = cv_tmpdir_read_file(err, &n);
        if (rc != 0)
            fail_msg("promtool check rules: exit %d\n%s%s", rc, out ? out : "", e ? e : "");
        free(e), free(out), free(err), free(path);
    }
    cv_sb_free(&rules);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grafana_dashboard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_promtool, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
