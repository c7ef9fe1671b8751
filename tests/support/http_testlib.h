/* Test helper (header-only, for test_http_*.c): a farm made by the test and
 * the HTTP server over it.
 *
 * The farm is the real controller on a git repository made by the test,
 * with a real SQLite queue and build DB; a stand-in worker leases each job
 * and completes it with a result a real worker would send (timings, cache
 * outcomes, diagnostics for the broken model).  A planner look-up that
 * remembers what the stand-in built gives later revisions planner hits.
 * Requests go through libcurl; answers are parsed with jansson. */
#ifndef CV_TEST_HTTP_TESTLIB_H
#define CV_TEST_HTTP_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "common/clock.h"
#include "queue/queue.h"
#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

#define HT_KEYS_MAX 256

static const char HT_PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: vision}\n"
    "spec:\n"
    "  models: [\"models/*.cuir\"]\n"
    "  targets: [x86_64-avx2, aarch64-linux-gnu]\n"
    "  precisions: [fp32, int8]\n";
static const char HT_MODEL_A[] = "cuir 1\nmodel @a(%x: f32[N,4]) -> (f32[N,4]) {\n"
                                 "  %0 = relu(%x) : f32[N,4]\n  return %0\n}\n";
static const char HT_MODEL_A2[] = "cuir 1\nmodel @a(%x: f32[N,4]) -> (f32[N,4]) {\n"
                                  "  %0 = sigmoid(%x) : f32[N,4]\n  return %0\n}\n";
static const char HT_MODEL_B[] = "cuir 1\nmodel @b(%x: f32[N,8]) -> (f32[N,8]) {\n"
                                 "  %0 = tanh(%x) : f32[N,8]\n  return %0\n}\n";
static const char HT_BROKEN[] = "cuir 1\nmodel @broken(%x: f32[N,4]) -> (f32[N,5]) {\n"
                                "  %0 = relu(%x) : f32[N,5]\n  return %0\n}\n";

typedef struct ht_lookup {
    char keys[HT_KEYS_MAX][65];   /* L2 keys of the artifacts "built" so far */
    int n;
} ht_lookup;

typedef struct ht_farm {
    char *dir, *repo_dir, *state_dir, *cache_dir;
    git_repository *repo;
    cv_controller *ctl;
    cv_queue *q;            /* the stand-in worker's handle */
    cv_http *http;
    int port;
    ht_lookup lk;
    cv_diag d;
    char hex[4][41];        /* the commits made by ht_build_history */
} ht_farm;

static inline void ht_sha256(const char *text, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static inline void ht_key(const cv_job_msg *job, char out[65])
{
    char text[512];
    snprintf(text, sizeof text, "%s|%s|%s", job->model_digest, job->target,
             cv_precision_name(job->precision));
    ht_sha256(text, out);
}

static int ht_plan_lookup(void *ctx, const cv_job_msg *job, char l2_key[65], bool *hit)
{
    ht_lookup *lk = ctx;
    ht_key(job, l2_key);
    *hit = false;
    for (int i = 0; i < lk->n && !*hit; i++)
        *hit = strcmp(lk->keys[i], l2_key) == 0;
    return 0;
}

static inline ht_farm *ht_farm_new(const char *tag)
{
    ht_farm *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make(tag);
    f->repo_dir = cv_tmpdir_path(f->dir, "repo");
    f->state_dir = cv_tmpdir_path(f->dir, "state");
    f->cache_dir = cv_tmpdir_path(f->dir, "cache");
    f->repo = trepo_init(f->repo_dir);
    cv_diag_init(&f->d);
    return f;
}

static inline void ht_farm_free(ht_farm *f)
{
    cv_http_stop(f->http);
    cv_queue_close(f->q);
    cv_controller_close(f->ctl);
    trepo_free(f->repo);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->repo_dir);
    free(f->state_dir);
    free(f->cache_dir);
    free(f);
}

static inline void ht_open_controller(ht_farm *f)
{
    cv_controller_opts o = {.repo = f->repo_dir, .state_dir = f->state_dir,
                            .interval_ms = 3600 * 1000, .lookup = ht_plan_lookup,
                            .lookup_ctx = &f->lk};
    assert_int_equal(cv_controller_open(&o, &f->ctl, &f->d), 0);
    assert_int_equal(cv_queue_open(cv_controller_queue_url(f->ctl), NULL, &f->q, &f->d), 0);
}

static inline cv_step_report ht_step(ht_farm *f, bool force)
{
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, force, &r, &f->d), 0);
    return r;
}

/* The stand-in worker: completes up to max leased jobs (max < 0: all).
 * remote: L2 outcomes of the aarch64 jobs are remote hits. */
static inline int ht_work(ht_farm *f, int max, bool remote)
{
    int n = 0;
    cv_lease l;
    while ((max < 0 || n < max) && cv_queue_lease(f->q, "worker-1", 60, 0, &l, &f->d) == 1) {
        const cv_job_msg *j = &l.job;
        cv_result_msg r;
        cv_result_msg_init(&r);
        r.job_id = strdup(j->job_id);
        bool broken = strstr(j->model_path, "broken") != NULL;
        bool arm = strstr(j->target, "aarch64") != NULL;
        r.status = broken ? CV_RESULT_FAILED : CV_RESULT_OK;
        r.l1 = CV_CACHE_MISS;
        r.l2 = broken ? CV_CACHE_NONE : remote && arm ? CV_CACHE_REMOTE_HIT : CV_CACHE_MISS;
        int64_t t[CV_TIMING__COUNT] = {40 + 10 * n, 5, 120, 45, arm ? 600 : 300, 25};
        if (broken)
            t[CV_TIMING_PASSES] = t[CV_TIMING_CODEGEN] = t[CV_TIMING_UPLOAD] = 0;
        memcpy(r.timings_ms, t, sizeof t);
        if (broken) {
            int root = cv_diag_add(&r.diags, CV_SEV_ERROR, 3003,
                                   (cv_span){.file = j->model_path, .line = 3, .col = 8,
                                             .end_line = 3, .end_col = 13},
                                   "@broken>%0", "relu gives f32[N,4], declared f32[N,5]");
            int derived = cv_diag_error(&r.diags, 3101, (cv_span){.file = j->model_path},
                                        "the output uses a bad value");
            cv_diag_set_root(&r.diags, derived, root);
        } else {
            if (r.l2 == CV_CACHE_MISS) {   /* as the real worker explains its misses */
                bool first = strstr(j->revision, f->hex[0]) != NULL;
                r.miss = strdup(first ? "new" : "weights");
                r.miss_reason = strdup(first ? "not found"
                                             : "not found: structure unchanged, weights changed");
            }
            ht_sha256(j->l2_key, r.artifact_manifest);
            if (f->lk.n < HT_KEYS_MAX)
                snprintf(f->lk.keys[f->lk.n++], 65, "%s", j->l2_key);
        }
        char *msg;
        size_t len;
        assert_int_equal(cv_result_msg_encode(&r, &msg, &len, &f->d), 0);
        assert_int_equal(cv_queue_complete(f->q, &l, msg, len, &f->d), 0);
        free(msg);
        cv_result_msg_free(&r);
        cv_queue_lease_free(&l);
        n++;
    }
    return n;
}

static inline void ht_commit(ht_farm *f, int i, const char *msg, const trepo_file *files, int n)
{
    trepo_commit(f->repo, msg, files, n, f->hex[i]);
}

/* Three revisions: 1 builds everything (12 jobs, the broken model's 4
 * fail), 2 changes model a (b hits in the planner, aarch64 artifacts come
 * from the remote), 3 is being built: one job leased by worker-busy, the
 * rest queued.  Presence: worker-busy on that job, worker-idle idle after
 * one job, worker-gone silent for ten minutes. */
static inline int64_t ht_fixed_clock(void *ctx) { return *(const int64_t *)ctx; }

/* The first commit (a, b and the broken model), planned: 12 jobs queued. */
static inline void ht_plan_first(ht_farm *f)
{
    const trepo_file c1[] = {{"cuvil/vision.yaml", HT_PIPELINE, 0},
                             {"models/a.cuir", HT_MODEL_A, 0},
                             {"models/b.cuir", HT_MODEL_B, 0},
                             {"models/broken.cuir", HT_BROKEN, 0}};
    ht_commit(f, 0, "three models", c1, 4);
    ht_open_controller(f);
    assert_true(ht_step(f, true).planned);
}

static inline void ht_build_history(ht_farm *f)
{
    ht_plan_first(f);
    assert_int_equal(ht_work(f, -1, false), 12);
    assert_int_equal(ht_step(f, false).results, 12);

    const trepo_file c2[] = {{"models/a.cuir", HT_MODEL_A2, 0}};
    ht_commit(f, 1, "a: sigmoid", c2, 1);
    cv_step_report r = ht_step(f, true);
    assert_true(r.planned);
    assert_int_equal(r.plan.hits, 4);
    assert_int_equal(ht_work(f, -1, true), 8);
    assert_int_equal(ht_step(f, false).results, 8);

    const trepo_file c3[] = {{"models/b.cuir", HT_MODEL_A, 0}};
    ht_commit(f, 2, "b: relu", c3, 1);
    assert_true(ht_step(f, true).planned);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "worker-busy", 600, 0, &l, &f->d), 1);
    assert_int_equal(cv_queue_worker_beat(f->q, "worker-busy", l.job.job_id, false, &f->d), 0);
    cv_queue_lease_free(&l);
    assert_int_equal(cv_queue_worker_beat(f->q, "worker-idle", NULL, true, &f->d), 0);
    int64_t ten_minutes_ago = cv_clock_wall_ms() - 600000;
    cv_queue_opts past = {.now_ms = ht_fixed_clock, .clock_ctx = &ten_minutes_ago};
    cv_queue *gone = NULL;
    assert_int_equal(cv_queue_open(cv_controller_queue_url(f->ctl), &past, &gone, &f->d), 0);
    assert_int_equal(cv_queue_worker_beat(gone, "worker-gone", NULL, false, &f->d), 0);
    cv_queue_close(gone);
    assert_false(cv_diag_has_errors(&f->d));
}

static inline void ht_start_http(ht_farm *f, const char *tokens_file, const char *secret)
{
    cv_http_opts o = {.listen = "127.0.0.1:0", .state_dir = f->state_dir,
                      .cache_dir = f->cache_dir, .tokens_file = tokens_file,
                      .webhook_secret = secret};
    assert_int_equal(cv_http_start(&o, &f->http, &f->d), 0);
    f->port = cv_http_port(f->http);
    assert_true(f->port > 0);
}

/* ---- the client */

typedef struct ht_buf {
    char *p;
    size_t n;
} ht_buf;

static size_t ht_write(char *data, size_t size, size_t nmemb, void *ctx)
{
    ht_buf *b = ctx;
    size_t n = size * nmemb;
    char *grown = realloc(b->p, b->n + n + 1);
    assert_non_null(grown);
    b->p = grown;
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
    return n;
}

/* method NULL = GET; headers NULL-terminated (may be NULL); the answer's
 * body is malloc'd (never NULL). */
static inline char *ht_request(int port, const char *method, const char *path,
                               const char *const *headers, const void *body, size_t len,
                               long *status, char *content_type, size_t ct_size)
{
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char url[4096];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    ht_buf b = {calloc(1, 1), 0};
    struct curl_slist *hl = NULL;
    for (int i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ht_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        fail_msg("%s %s: %s", method ? method : "GET", path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (content_type) {
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
        snprintf(content_type, ct_size, "%s", ct ? ct : "");
    }
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return b.p;
}

static inline char *ht_get(ht_farm *f, const char *path, long *status)
{
    return ht_request(f->port, NULL, path, NULL, NULL, 0, status, NULL, 0);
}

/* GET path, expecting want_status and a JSON body (returned, owned). */
static inline json_t *ht_json(ht_farm *f, const char *method, const char *path,
                              const char *const *headers, const char *body, long want_status)
{
    long status = 0;
    char ct[128];
    char *text = ht_request(f->port, method, path, headers, body, body ? strlen(body) : 0,
                            &status, ct, sizeof ct);
    if (status != want_status)
        fail_msg("%s %s: status %ld, wanted %ld: %s", method ? method : "GET", path, status,
                 want_status, text);
    assert_non_null(strstr(ct, "application/json"));
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("%s: not JSON (%s): %s", path, je.text, text);
    free(text);
    return j;
}

static inline const char *ht_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s)
        fail_msg("no string '%s'", key);
    return s;
}

static inline json_int_t ht_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("no integer '%s'", key);
    return json_integer_value(v);
}

/* The code of a JSON error answer. */
static inline void ht_assert_error(json_t *j, const char *code)
{
    json_t *e = json_object_get(j, "error");
    assert_non_null(e);
    assert_string_equal(ht_str(e, "code"), code);
    assert_true(strlen(ht_str(e, "message")) > 0);
}

#endif
