/* The farm's JSON API (/api/v1) on a real server on 127.0.0.1, over a
 * build DB made by the controller on a git repository made by the test
 * (tests/support/http_testlib.h): revisions with paging, one revision with its
 * jobs, jobs filtered by status, model and target, failures, cache
 * figures, workers from the queue's leases, artifacts, build requests with
 * read-only and read-write tokens, and coded JSON errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/yamldoc.h"
#include "tests/support/http_testlib.h"

static int setup(void **state)
{
    ht_farm *f = ht_farm_new("http-api");
    ht_build_history(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    ht_farm_free(*state);
    return 0;
}

static void test_revisions_paged(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    json_t *j = ht_json(f, NULL, "/api/v1/revisions", NULL, NULL, 200);
    json_t *revs = json_object_get(j, "revisions");
    assert_int_equal(json_array_size(revs), 3);
    assert_int_equal(ht_int(j, "total"), 3);
    assert_non_null(strstr(ht_str(json_array_get(revs, 0), "revision"), f->hex[2]));
    assert_string_equal(ht_str(json_array_get(revs, 0), "state"), "building");
    assert_string_equal(ht_str(json_array_get(revs, 2), "state"), "failed");
    assert_int_equal(ht_int(json_array_get(revs, 1), "hits"), 4);
    assert_true(json_is_null(json_object_get(j, "next")));
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/revisions?limit=2", NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(j, "revisions")), 2);
    assert_string_equal(ht_str(j, "next"), "/api/v1/revisions?limit=2&offset=2");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/revisions?limit=2&offset=2", NULL, NULL, 200);
    revs = json_object_get(j, "revisions");
    assert_int_equal(json_array_size(revs), 1);
    assert_non_null(strstr(ht_str(json_array_get(revs, 0), "revision"), f->hex[0]));
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/revisions?limit=0", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/revisions?offset=x", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
}

static void test_one_revision_with_jobs(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/revisions/%.8s", f->hex[0]);
    json_t *j = ht_json(f, NULL, path, NULL, NULL, 200);
    assert_string_equal(ht_str(j, "state"), "failed");
    assert_int_equal(ht_int(j, "jobs"), 12);
    assert_int_equal(ht_int(j, "failed"), 4);
    json_t *jobs = json_object_get(j, "jobsList");
    assert_int_equal(json_array_size(jobs), 12);
    int with_diags = 0;
    for (size_t i = 0; i < json_array_size(jobs); i++)
        with_diags += json_array_size(json_object_get(json_array_get(jobs, i), "diagnostics")) == 2;
    assert_int_equal(with_diags, 4);
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/revisions/latest", NULL, NULL, 200);
    assert_non_null(strstr(ht_str(j, "revision"), f->hex[2]));
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/revisions/deadbeef", NULL, NULL, 404);
    ht_assert_error(j, "CV6075");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/status", NULL, NULL, 200);
    assert_true(json_is_true(json_object_get(json_object_get(j, "controller"), "alive")));
    /* the broken model failed both finished revisions */
    assert_true(json_is_null(json_object_get(j, "lastSucceededRevision")));
    json_decref(j);
}

static void test_jobs_filtered(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/jobs?revision=%s&status=failed", f->hex[1]);
    json_t *j = ht_json(f, NULL, path, NULL, NULL, 200);
    json_t *jobs = json_object_get(j, "jobs");
    assert_int_equal(ht_int(j, "total"), 4);
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *job = json_array_get(jobs, i);
        assert_string_equal(ht_str(job, "model"), "models/broken.cuir");
        assert_int_equal(json_array_size(json_object_get(job, "diagnostics")), 2);
        assert_int_equal(ht_int(json_object_get(job, "stagesMs"), "frontend"), 125);
    }
    json_decref(j);

    /* the second revision: b hit in the planner, a was compiled; aarch64
     * artifacts came from the remote cache */
    snprintf(path, sizeof path,
             "/api/v1/jobs?revision=%s&model=models/%%5Bab%%5D.cuir&target=aarch64-linux-gnu",
             f->hex[1]);
    j = ht_json(f, NULL, path, NULL, NULL, 200);
    jobs = json_object_get(j, "jobs");
    assert_int_equal(json_array_size(jobs), 4);
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *job = json_array_get(jobs, i);
        bool a = strcmp(ht_str(job, "model"), "models/a.cuir") == 0;
        assert_string_equal(ht_str(job, "state"), a ? "ok" : "hit");
        assert_string_equal(ht_str(job, "l2"), a ? "remote-hit" : "hit");
        if (a) {
            json_t *st = json_object_get(job, "stagesMs");
            assert_int_equal(ht_int(st, "codegen"), 600);
            assert_int_equal(ht_int(st, "upload"), 25);
            assert_int_equal(ht_int(job, "uploadedMs") - ht_int(job, "startedMs"),
                             5 + 120 + 45 + 600 + 25);
        }
    }
    json_decref(j);

    /* paging keeps the filter in the next link */
    j = ht_json(f, NULL, "/api/v1/jobs?status=hit,queued&limit=5", NULL, NULL, 200);
    assert_int_equal(ht_int(j, "total"), 12);
    assert_int_equal(json_array_size(json_object_get(j, "jobs")), 5);
    const char *next = ht_str(j, "next");
    assert_non_null(strstr(next, "status=hit,queued"));
    assert_non_null(strstr(next, "offset=5"));
    json_t *j2 = ht_json(f, NULL, next, NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(j2, "jobs")), 5);
    assert_int_equal(ht_int(j2, "offset"), 5);
    json_decref(j2);
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/jobs?status=exploded", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
}

static void test_failures_cache_workers_artifacts(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/failures?revision=%s", f->hex[1]);
    json_t *j = ht_json(f, NULL, path, NULL, NULL, 200);
    assert_int_equal(ht_int(j, "broken"), 4);
    json_t *p = json_array_get(json_object_get(j, "patterns"), 0);
    assert_non_null(p);
    assert_string_equal(ht_str(p, "code"), "CV3003");
    assert_int_equal(ht_int(p, "jobs"), 4);
    assert_false(json_is_true(json_object_get(p, "new")));   /* first seen at revision 1 */
    assert_non_null(strstr(ht_str(p, "firstSeen"), f->hex[0]));
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/cache", NULL, NULL, 200);
    json_t *revs = json_object_get(j, "revisions");
    assert_int_equal(json_array_size(revs), 3);
    json_t *r2 = json_array_get(revs, 1);   /* oldest first */
    assert_int_equal(ht_int(r2, "planHits"), 4);
    assert_int_equal(ht_int(json_object_get(r2, "l2"), "remoteHit"), 2);
    /* L2: 4 planner hits + 2 remote hits of the 12 answered (the 4 broken
     * ones failed before their look-up: misses, not left out) */
    double hit = json_real_value(json_object_get(json_object_get(r2, "l2Ratio"), "hit"));
    assert_true(hit > 0.49 && hit < 0.51);
    /* Time saved: revision 2's four planner hits (model b) were stored by
     * revision 1's compiles and save their durations (the stand-in worker's
     * stages: 5+120+45+300+25 ms on x86, 600 for codegen on aarch64); its
     * two remote hits were stored outside the farm (no recorded time). */
    json_t *r1 = json_array_get(revs, 0);
    /* who made each commit and why, from the git source */
    assert_string_equal(ht_str(r1, "subject"), "three models");
    assert_string_equal(ht_str(r2, "subject"), "a: sigmoid");
    assert_string_equal(ht_str(r2, "author"), "Test");
    assert_true(ht_int(r2, "commitMs") > ht_int(r1, "commitMs"));
    assert_int_equal(ht_int(r1, "savedHits"), 0);
    assert_int_equal(ht_int(r1, "savedMs"), 0);
    assert_int_equal(ht_int(r1, "compileMs"), 4 * 495 + 4 * 795);   /* a and b */
    assert_int_equal(ht_int(r2, "savedHits"), 4);
    assert_int_equal(ht_int(r2, "savedMs"), 2 * 495 + 2 * 795);     /* b */
    assert_int_equal(ht_int(r2, "compileMs"), 2 * 495);             /* a on x86 */
    assert_true(json_is_object(json_object_get(j, "cache")));
    /* day by day (everything ran today, but a test may straddle midnight):
     * the same compile and saved time as the revisions, 32 jobs answered
     * (revision 3's broken jobs wait), 14 from the cache */
    json_t *days = json_object_get(j, "days");
    assert_int_equal(json_array_size(days), 14);
    json_int_t answered = 0, hits = 0, compiled = 0, saved = 0, rev_saved = 0;
    for (size_t i = 0; i < 14; i++) {
        json_t *day = json_array_get(days, i);
        answered += ht_int(day, "answered");
        hits += ht_int(day, "hits");
        compiled += ht_int(day, "compileMs");
        saved += ht_int(day, "savedMs");
        if (i)
            assert_int_equal(ht_int(day, "dayMs") - ht_int(json_array_get(days, i - 1), "dayMs"),
                             86400000);
    }
    for (size_t i = 0; i < 3; i++)
        rev_saved += ht_int(json_array_get(revs, i), "savedMs");
    assert_int_equal(answered, 32);
    assert_int_equal(hits, 14);
    assert_int_equal(compiled, 4 * 495 + 4 * 795 + 2 * 495);
    assert_int_equal(saved, rev_saved);
    /* finished days are kept by the server: a second read (and a longer
     * window, which starts the memo again) agrees */
    json_t *again = ht_json(f, NULL, "/api/v1/cache", NULL, NULL, 200);
    assert_true(json_equal(json_object_get(again, "days"), days));
    json_decref(again);
    again = ht_json(f, NULL, "/api/v1/cache?days=30", NULL, NULL, 200);
    json_t *last14 = json_array();
    for (size_t i = 16; i < 30; i++)
        json_array_append(last14, json_array_get(json_object_get(again, "days"), i));
    assert_true(json_equal(last14, days));
    json_decref(last14);
    json_decref(again);
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/cache?days=0", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);

    j = ht_json(f, NULL, "/api/v1/workers", NULL, NULL, 200);
    assert_true(json_is_true(json_object_get(j, "leasesKnown")));
    json_t *q = json_object_get(j, "queue");
    assert_string_equal(ht_str(q, "source"), "queue");
    assert_int_equal(ht_int(q, "leased"), 1);
    assert_int_equal(ht_int(q, "queued"), 3);
    assert_true(json_is_true(json_object_get(j, "presenceKnown")));
    json_t *ws = json_object_get(j, "workers");
    assert_int_equal(json_array_size(ws), 3);
    json_t *busy = NULL, *idle = NULL, *gone = json_array_get(ws, 2); /* least recent last */
    for (int i = 0; i < 2; i++) {
        json_t *w = json_array_get(ws, (size_t)i);
        if (strcmp(ht_str(w, "id"), "worker-busy") == 0)
            busy = w;
        else if (strcmp(ht_str(w, "id"), "worker-idle") == 0)
            idle = w;
    }
    assert_non_null(busy);
    assert_non_null(idle);
    assert_string_equal(ht_str(busy, "state"), "busy");
    assert_string_equal(ht_str(busy, "currentJob"),
                        ht_str(json_array_get(json_object_get(busy, "jobs"), 0), "job"));
    assert_int_equal(json_array_size(json_object_get(busy, "jobs")), 1);
    assert_true(ht_int(busy, "heartbeatAgeMs") < 60000);
    assert_string_equal(ht_str(idle, "state"), "idle");
    assert_true(json_is_null(json_object_get(idle, "currentJob")));
    assert_int_equal(ht_int(idle, "jobsDone"), 1);
    assert_string_equal(ht_str(gone, "id"), "worker-gone");
    assert_string_equal(ht_str(gone, "state"), "lost");
    assert_true(ht_int(gone, "heartbeatAgeMs") >= 600000);
    json_decref(j);

    snprintf(path, sizeof path,
             "/api/v1/artifacts?revision=%s&model=models/a.cuir&target=x86_64-avx2", f->hex[0]);
    j = ht_json(f, NULL, path, NULL, NULL, 200);
    assert_int_equal(strlen(ht_str(j, "manifest")), 64);
    assert_int_equal(strlen(ht_str(j, "l2Key")), 64);
    assert_string_equal(ht_str(j, "precision"), "fp32");
    assert_true(json_is_false(json_object_get(j, "manifestInCache")));
    json_decref(j);
    snprintf(path, sizeof path,
             "/api/v1/artifacts?revision=%s&model=models/broken.cuir&target=x86_64-avx2",
             f->hex[0]);
    j = ht_json(f, NULL, path, NULL, NULL, 404);
    ht_assert_error(j, "CV6103");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/artifacts?model=models/a.cuir", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
}

static void test_build_requests_and_tokens(void **state)
{
    ht_farm *f = *state;
    char *tokens = cv_tmpdir_path(f->dir, "tokens");
    const char text[] = "# dashboard and CI\nreader-token ro\nwriter-token rw\n";
    assert_int_equal(cv_tmpdir_write(f->dir, "tokens", text, sizeof text - 1), 0);
    ht_start_http(f, tokens, NULL);
    free(tokens);
    const char *const ro[] = {"Authorization: Bearer reader-token", NULL};
    const char *const rw[] = {"Authorization: Bearer writer-token", NULL};
    const char *const bad[] = {"Authorization: Bearer nope", NULL};

    json_t *j = ht_json(f, NULL, "/api/v1/revisions", NULL, NULL, 401);
    ht_assert_error(j, "CV6132");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/revisions", bad, NULL, 401);
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/revisions", ro, NULL, 200);
    json_decref(j);
    j = ht_json(f, "POST", "/api/v1/revisions", ro, "{}", 403);
    ht_assert_error(j, "CV6133");
    json_decref(j);
    j = ht_json(f, "POST", "/api/v1/revisions", rw, "{\"ref\": \"dev\"}", 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
    j = ht_json(f, "POST", "/api/v1/revisions", rw, "[1", 400);
    json_decref(j);

    /* a request for the tracked ref: the controller's next step polls */
    const trepo_file more[] = {{"models/c.cuir", HT_MODEL_B, 0}};
    char hex[41];
    trepo_commit(f->repo, "c", more, 1, hex);
    j = ht_json(f, "POST", "/api/v1/revisions", rw, "{\"ref\": \"main\"}", 202);
    assert_string_equal(ht_str(j, "status"), "queued");
    char href[128];
    snprintf(href, sizeof href, "%s", ht_str(j, "href"));
    json_decref(j);
    j = ht_json(f, NULL, href, ro, NULL, 200);
    assert_false(json_is_true(json_object_get(j, "handled")));
    json_decref(j);
    cv_step_report r = ht_step(f, false);
    assert_int_equal(r.requests, 1);
    assert_true(r.planned);
    j = ht_json(f, NULL, href, ro, NULL, 200);
    assert_true(json_is_true(json_object_get(j, "handled")));
    assert_non_null(strstr(ht_str(j, "revision"), hex));
    json_decref(j);

    /* a browser is asked for Basic credentials on a page */
    long status = 0;
    char *page = ht_get(f, "/", &status);
    assert_int_equal(status, 401);
    free(page);
    const char *const basic[] = {"Authorization: Basic dXNlcjpyZWFkZXItdG9rZW4=", NULL};
    page = ht_request(f->port, NULL, "/", basic, NULL, 0, &status, NULL, 0);
    assert_int_equal(status, 200);
    free(page);
}

/* Cross-site requests (issue 25): a browser form on another site can POST
 * only simple content types, and resends cached Basic credentials; a build
 * request needs a JSON body type or a Bearer token, which forms cannot send. */
static void test_build_request_not_cross_site(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    const char *const form[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    const char *const plain[] = {"Content-Type: text/plain", NULL};
    const char *const multi[] = {"Content-Type: multipart/form-data; boundary=x", NULL};
    const char *const look_alike[] = {"Content-Type: application/jsonp", NULL};
    const char *const *refused[] = {form, plain, multi, look_alike};
    for (int i = 0; i < 4; i++) {
        json_t *j = ht_json(f, "POST", "/api/v1/revisions", refused[i], "{}", 415);
        ht_assert_error(j, "CV6144");
        json_decref(j);
    }
    const char *const json[] = {"Content-Type: application/json; charset=utf-8", NULL};
    json_t *j = ht_json(f, "POST", "/api/v1/revisions", json, "{}", 202);
    json_decref(j);
    cv_http_stop(f->http);

    /* with tokens: Basic credentials (what a browser caches and resends) and a
     * form type are refused; a Bearer token needs no JSON type */
    char *tokens = cv_tmpdir_path(f->dir, "tokens");
    static const char text[] = "writer-token rw\n";
    assert_int_equal(cv_tmpdir_write(f->dir, "tokens", text, sizeof text - 1), 0);
    ht_start_http(f, tokens, NULL);
    free(tokens);
    const char *const basic[] = {"Authorization: Basic dTp3cml0ZXItdG9rZW4=", /* u:writer-token */
                                 "Content-Type: application/x-www-form-urlencoded", NULL};
    j = ht_json(f, "POST", "/api/v1/revisions", basic, "{}", 415);
    ht_assert_error(j, "CV6144");
    json_decref(j);
    const char *const bearer[] = {"Authorization: Bearer writer-token",
                                  "Content-Type: application/x-www-form-urlencoded", NULL};
    j = ht_json(f, "POST", "/api/v1/revisions", bearer, "{}", 202);
    json_decref(j);
}

static void test_errors_are_coded(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    json_t *j = ht_json(f, NULL, "/api/v1/nothing", NULL, NULL, 404);
    ht_assert_error(j, "CV6134");
    json_decref(j);
    j = ht_json(f, "DELETE", "/api/v1/jobs", NULL, NULL, 405);
    ht_assert_error(j, "CV6135");
    json_decref(j);
    j = ht_json(f, "POST", "/api/v1/requests/1", NULL, "{}", 405);
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/requests/x", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/requests/999", NULL, NULL, 404);
    json_decref(j);

    /* the server stops while the controller goes on */
    cv_http_stop(f->http);
    f->http = NULL;
    ht_step(f, false);
    assert_false(cv_diag_has_errors(&f->d));
}

/* ---- schemas/api.yaml: every documented operation answers with a
 * documented status, and a JSON answer has the schema's required keys */

static json_t *resolve(json_t *api, json_t *node)
{
    const char *ref = json_string_value(json_object_get(node, "$ref"));
    if (!ref)
        return node;
    assert_int_equal(strncmp(ref, "#/", 2), 0);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ref + 2);
    json_t *at = api;
    char *save = NULL;
    for (char *k = strtok_r(buf, "/", &save); k; k = strtok_r(NULL, "/", &save))
        at = json_object_get(at, k);
    if (!at)
        fail_msg("dangling $ref %s", ref);
    return resolve(api, at);
}

/* The schema's required keys (through $ref and allOf) are in o. */
static void check_required(json_t *api, json_t *schema, json_t *o, const char *where)
{
    schema = resolve(api, schema);
    json_t *all = json_object_get(schema, "allOf");
    for (size_t i = 0; i < json_array_size(all); i++)
        check_required(api, json_array_get(all, i), o, where);
    json_t *req = json_object_get(schema, "required");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (!json_object_get(o, json_string_value(json_array_get(req, i))))
            fail_msg("%s: no '%s' in the answer", where, json_string_value(json_array_get(req, i)));
}

/* The path with its parameters filled in. */
static void fill_path(ht_farm *f, const char *tmpl, json_t *params, char *out, size_t size)
{
    char *p = out;
    for (const char *t = tmpl; *t && (size_t)(p - out) < size - 64;) {
        if (strncmp(t, "{revision}", 10) == 0)
            p += sprintf(p, "%.12s", f->hex[0]), t += 10;
        else if (strncmp(t, "{id}", 4) == 0)
            p += sprintf(p, "1"), t += 4;
        else
            *p++ = *t++;
    }
    *p = '\0';
    char sep = '?';
    for (size_t i = 0; i < json_array_size(params); i++) {
        json_t *prm = json_array_get(params, i);
        if (!json_is_true(json_object_get(prm, "required")) ||
            strcmp(json_string_value(json_object_get(prm, "in")), "query") != 0)
            continue;
        const char *name = json_string_value(json_object_get(prm, "name"));
        p += sprintf(p, "%c%s=%s", sep, name,
                     strcmp(name, "model") == 0 ? "models/a.cuir" : "x86_64-avx2");
        sep = '&';
    }
}

static void check_operation(ht_farm *f, json_t *api, const char *path, const char *method,
                            json_t *op)
{
    char url[1024];
    fill_path(f, path, json_object_get(op, "parameters"), url, sizeof url);
    bool post = strcmp(method, "post") == 0;
    long status = 0;
    char ct[128];
    const char *const json[] = {"Content-Type: application/json", NULL};
    char *body = ht_request(f->port, post ? "POST" : NULL, url, post ? json : NULL,
                            post ? "{}" : NULL,
                            post ? 2 : 0, &status, ct, sizeof ct);
    char code[8], where[1100];
    snprintf(code, sizeof code, "%ld", status);
    snprintf(where, sizeof where, "%s %s -> %ld", method, url, status);
    json_t *resp = json_object_get(json_object_get(op, "responses"), code);
    if (!resp)
        fail_msg("%s: status not documented: %s", where, body);
    json_t *content = json_object_get(resolve(api, resp), "content");
    json_t *media = json_object_get(content, "application/json");
    if (media) {
        assert_non_null(strstr(ct, "application/json"));
        json_t *o = json_loads(body, 0, NULL);
        assert_non_null(o);
        check_required(api, json_object_get(media, "schema"), o, where);
        json_decref(o);
    } else {
        assert_non_null(json_object_get(content, strncmp(ct, "text/html", 9) == 0 ? "text/html"
                                                                                  : "text/plain"));
    }
    free(body);
}

static void test_documented_routes(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/schemas/api.yaml", cv_tmpdir_src_root());
    cv_yaml_doc *docs = NULL;
    int n = 0;
    assert_int_equal(cv_yaml_load_file(path, &docs, &n, &f->d), 0);
    assert_int_equal(n, 1);
    json_t *api = docs[0].root;
    assert_int_equal(strncmp(ht_str(api, "openapi"), "3.", 2), 0);
    const char *p;
    json_t *item;
    int ops = 0;
    /* the build request first: GET /api/v1/requests/1 then finds it */
    check_operation(f, api, "/api/v1/revisions", "post",
                    json_object_get(json_object_get(json_object_get(api, "paths"),
                                                    "/api/v1/revisions"), "post"));
    json_object_foreach(json_object_get(api, "paths"), p, item) {
        const char *m;
        json_t *op;
        json_object_foreach(item, m, op) {
            check_operation(f, api, p, m, op);
            ops++;
        }
    }
    assert_true(ops >= 16);
    cv_yaml_free(docs, n);
}

/* A model's history across the three revisions: b compiled in the first
 * (x86 495 ms, aarch64 795 ms a job), then served from the cache twice (the
 * third revision gave b a's old text, stored by the first). */
static int count_substr(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static void test_model_history(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    json_t *j = ht_json(f, NULL, "/api/v1/models?model=models/b.cuir", NULL, NULL, 200);
    assert_string_equal(ht_str(j, "model"), "models/b.cuir");
    json_t *builds = json_object_get(j, "builds"), *targets = json_object_get(j, "targets");
    assert_int_equal(json_array_size(builds), 12);
    assert_int_equal(json_array_size(targets), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *t = json_array_get(targets, i);
        bool arm = strstr(ht_str(t, "target"), "aarch64") != NULL;
        assert_int_equal(ht_int(t, "builds"), 6);
        assert_int_equal(ht_int(t, "hits"), 4);
        assert_int_equal(ht_int(t, "failures"), 0);
        assert_int_equal(ht_int(t, "meanCompileMs"), arm ? 795 : 495);
    }
    /* newest first: the third revision's planner hits */
    assert_string_equal(ht_str(json_array_get(builds, 0), "l2"), "planner-hit");
    assert_string_equal(ht_str(json_array_get(builds, 0), "subject"), "b: relu");
    assert_int_equal(ht_int(json_array_get(builds, 11), "compileMs") > 0, 1);
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/models?model=models/b.cuir&target=x86_64-avx2", NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(j, "builds")), 6);
    json_decref(j);
    j = ht_json(f, NULL, "/api/v1/models", NULL, NULL, 400);
    ht_assert_error(j, "CV6131");
    json_decref(j);
    long status = 0;
    char *page = ht_get(f, "/models?model=models%2Fb.cuir", &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(page, "id=\"model-targets\""));
    assert_int_equal(count_substr(page, "<tr class=\"build\">"), 12);
    free(page);
    /* the revision page links each job's model to its history */
    char path[128];
    snprintf(path, sizeof path, "/revisions/%s", f->hex[0]);
    page = ht_get(f, path, &status);
    assert_non_null(strstr(page, "href=\"/models?model=models/b.cuir\""));
    free(page);
}

/* Top misses over a window: revision 1 compiled a and b for the first time
 * (4 x86 jobs of 495 ms, 4 aarch64 of 795), revision 2 compiled a's x86
 * jobs again after a retrain (the stand-in worker's causes: "new", then
 * "weights"); the page and the API agree with those sums. */
static void test_top_misses(void **state)
{
    ht_farm *f = *state;
    ht_start_http(f, NULL, NULL);
    json_t *j = ht_json(f, NULL, "/api/v1/misses", NULL, NULL, 200);
    assert_int_equal(ht_int(j, "days"), 7);
    assert_int_equal(ht_int(j, "misses"), 10);
    assert_int_equal(ht_int(j, "compileMs"), 4 * 495 + 4 * 795 + 2 * 495);
    json_t *causes = json_object_get(j, "causes"), *models = json_object_get(j, "models");
    assert_int_equal(json_array_size(causes), 2);
    json_t *c0 = json_array_get(causes, 0), *c1 = json_array_get(causes, 1);
    assert_string_equal(ht_str(c0, "cause"), "new");       /* the most compile time first */
    assert_int_equal(ht_int(c0, "misses"), 8);
    assert_int_equal(ht_int(c0, "compileMs"), 4 * 495 + 4 * 795);
    assert_string_equal(ht_str(c1, "cause"), "weights");
    assert_int_equal(ht_int(c1, "compileMs"), 2 * 495);
    double share = json_real_value(json_object_get(c1, "shareOfMisses"));
    assert_true(share > 0.199 && share < 0.201);
    /* a on x86 cost the most: two first builds and two retrains */
    assert_int_equal(json_array_size(models), 4);
    json_t *m0 = json_array_get(models, 0);
    assert_string_equal(ht_str(m0, "model"), "models/a.cuir");
    assert_string_equal(ht_str(m0, "target"), "x86_64-avx2");
    assert_int_equal(ht_int(m0, "misses"), 4);
    assert_int_equal(ht_int(m0, "compileMs"), 4 * 495);
    assert_non_null(strstr(ht_str(m0, "reason"), "weights changed"));
    json_decref(j);
    /* each job's cause in the model's history */
    j = ht_json(f, NULL, "/api/v1/models?model=models/a.cuir&target=x86_64-avx2", NULL, NULL, 200);
    json_t *newest = json_array_get(json_object_get(j, "builds"), 0);
    assert_string_equal(ht_str(newest, "l2"), "planner-hit");
    assert_true(json_is_null(json_object_get(newest, "miss")));
    assert_string_equal(ht_str(json_array_get(json_object_get(j, "builds"), 2), "miss"), "weights");
    json_decref(j);
    /* a window is whole days, 1 to 366 */
    const char *bad[] = {"/api/v1/misses?days=0", "/api/v1/misses?days=x",
                         "/api/v1/misses?days=367", "/api/v1/misses?days=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = ht_json(f, NULL, bad[i], NULL, NULL, 400);
        ht_assert_error(j, "CV6131");
        json_decref(j);
    }
    long status = 0;
    char *page = ht_get(f, "/misses?days=1", &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(page, "id=\"miss-causes\""));
    assert_int_equal(count_substr(page, "<tr class=\"cause\""), 2);
    assert_int_equal(count_substr(page, "<tr class=\"model\">"), 4);
    assert_non_null(strstr(page, "weights changed (a retrain)"));
    assert_non_null(strstr(page, "href=\"/models?model=models/a.cuir&amp;target=x86_64-avx2\""));
    free(page);
}

/* A revision whose spec does not load has its own verdict everywhere: the
 * API says so, the failures page does not say "Nothing failed" under a
 * failed badge, the overview counts the spec's errors; no chart calls it a
 * hit. */
static void test_spec_error_verdict(void **state)
{
    (void)state;
    ht_farm *f = ht_farm_new("http-spec-error");
    const trepo_file c1[] = {{"cuvil/vision.yaml", "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\n"
                                                   "metadata: {name: vision}\nspec: {models: [", 0},
                             {"models/a.cuir", HT_MODEL_A, 0}};
    /* a subject a repository may hold: malformed UTF-8, control bytes, 6 KB */
    char msg[6200];
    int at = snprintf(msg, sizeof msg, "a spec \xff\x01" "cut\tshort \xc3\xa9");
    memset(msg + at, 'x', 6000);
    msg[at + 6000] = 0;
    ht_commit(f, 0, msg, c1, 2);
    ht_open_controller(f);
    ht_step(f, true);
    ht_start_http(f, NULL, NULL);
    json_t *j = ht_json(f, NULL, "/api/v1/cache", NULL, NULL, 200);
    json_t *r = json_array_get(json_object_get(j, "revisions"), 0);
    assert_non_null(r);
    assert_string_equal(ht_str(r, "state"), "failed");
    json_t *v = json_object_get(r, "verdict");
    assert_string_equal(ht_str(v, "class"), "spec");
    assert_string_equal(ht_str(v, "label"), "spec error");
    assert_true(ht_int(r, "specErrors") >= 1);
    assert_int_equal(ht_int(r, "failed"), 0);
    assert_int_equal(ht_int(r, "jobs"), 0);
    assert_true(json_real_value(json_object_get(json_object_get(r, "l2Ratio"), "hit")) == 0.0);
    const char *subject = ht_str(r, "subject");
    const char *want = "a spec ??cut?short \xc3\xa9xxx";
    assert_int_equal(strncmp(subject, want, strlen(want)), 0);
    assert_true(strlen(subject) <= CV_COMMIT_SUBJECT_MAX && strlen(subject) > 150);
    json_decref(j);
    long status = 0;
    char *page = ht_get(f, "/failures", &status);
    assert_int_equal(status, 200);
    assert_null(strstr(page, "Nothing failed"));
    assert_non_null(strstr(page, "No job failed; the revision's specs did"));
    assert_non_null(strstr(page, "class=\"st st-spec\""));
    free(page);
    page = ht_get(f, "/", &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(page, "class=\"spec-diags\""));
    assert_non_null(strstr(page, "no job ran: the specs did not load"));
    free(page);
    ht_farm_free(f);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_revisions_paged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_revision_with_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_filtered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_cache_workers_artifacts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_requests_and_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_build_request_not_cross_site, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_are_coded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_documented_routes, setup, teardown),
        cmocka_unit_test(test_spec_error_verdict),
        cmocka_unit_test_setup_teardown(test_model_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top_misses, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
