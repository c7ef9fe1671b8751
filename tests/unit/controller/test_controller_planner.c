/* The planner end to end, on real things: a git repository made by the
 * test (several commits), the git source's mirror, the build DB and the
 * SQLite queue.  The cache look-up is a small in-memory key set that a
 * simulated worker fills as it completes jobs, so the second commit shows
 * which jobs hit and which are rebuilt. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"
#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

#define T0 INT64_C(1700000000000)
#define MANIFEST "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"

/* A stand-in cache: the L2 key is sha256(model digest, target, precision,
 * opt level), and a key is present once a job with it completed ok. */
typedef struct fake_cache {
    char keys[256][65];
    int n;
    int lookups;
    bool fail;
} fake_cache;

static void fake_key(const cv_job_msg *j, char out[65])
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "l2|%s|%s|%s|%s", j->model_digest, j->target,
                     cv_precision_name(j->precision), cv_opt_level_name(j->opt_level));
    cv_digest dg;
    cv_cache_sha256(buf, (size_t)n, &dg);
    cv_cache_digest_hex(&dg, out);
}

static int fake_lookup(void *ctx, const cv_job_msg *job, char l2_key[65], bool *hit)
{
    fake_cache *c = ctx;
    c->lookups++;
    if (c->fail)
        return -1;
    fake_key(job, l2_key);
    *hit = false;
    for (int i = 0; i < c->n; i++)
        *hit |= strcmp(c->keys[i], l2_key) == 0;
    return 0;
}

typedef struct fx {
    char *dir, *upstream;    /* owned */
    git_repository *repo;    /* owned */
    cv_gitsource *src;       /* owned */
    cv_builddb *db;          /* owned */
    cv_queue *q;             /* owned */
    fake_cache cache;
    int64_t now;
    cv_planner_opts po;
    cv_diag d;
} fx;

static int64_t fake_now(void *ctx) { return *(const int64_t *)ctx; }

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("planner");
    f->upstream = cv_tmpdir_path(f->dir, "models-repo");
    f->repo = trepo_init(f->upstream);
    f->now = T0;
    cv_diag_init(&f->d);
    char *state_dir = cv_tmpdir_path(f->dir, "state");
    cv_gitsource_opts go = {.url = f->upstream, .state_dir = state_dir, .now_ms = fake_now,
                            .clock_ctx = &f->now};
    assert_int_equal(cv_gitsource_open(&go, &f->src, &f->d), 0);
    free(state_dir);
    char *dbp = cv_tmpdir_path(f->dir, "build.db");
    assert_int_equal(cv_builddb_open(dbp, &f->db, &f->d), 0);
    free(dbp);
    char url[4200];
    snprintf(url, sizeof url, "sqlite:%s/queue.db", f->dir);
    cv_queue_opts qo = {.now_ms = fake_now, .clock_ctx = &f->now};
    assert_int_equal(cv_queue_open(url, &qo, &f->q, &f->d), 0);
    f->po = (cv_planner_opts){.db = f->db, .queue = f->q, .lookup = fake_lookup,
                              .lookup_ctx = &f->cache, .now_ms = fake_now, .clock_ctx = &f->now};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_queue_close(f->q);
    cv_builddb_close(f->db);
    cv_gitsource_close(f->src);
    trepo_free(f->repo);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->upstream);
    free(f);
    return 0;
}

static const char PIPELINES[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: base}\n"
    "spec:\n"
    "  models: [\"models/**/*.onnx\"]\n"
    "  targets: [x86_64, x86_64-avx2]\n"
    "  precisions: [fp32]\n"
    "---\n"
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: vision}\n"
    "spec:\n"
    "  extends: base\n"
    "  models: [\"models/vision/*.onnx\", \"models/kws/*.cvl.py\"]\n"
    "  precisions: [fp32, int8]\n";

static const trepo_file FILES[] = {
    {"cuvil/pipelines.yaml", PIPELINES, 0},
    {"models/vision/lenet.onnx", "lenet v1", 0},
    {"models/vision/lenet.safetensors", "weights", 0},
    {"models/vision/resnet.onnx", "resnet v1", 0},
    {"models/kws/tiny.cvl.py", "# tiny kws\nimport cuvil as cvl\n", 0},
    {"models/other/x.onnx", "x v1", 0},
    {"docs/readme.md", "# models\n", 0},
};

/* Commits, polls and plans; returns the revision's report. */
static cv_plan_report commit_and_plan(fx *f, const trepo_file *files, int n, char rev[513])
{
    trepo_commit(f->repo, "change", files, n, NULL);
    f->now += 1000;
    assert_int_equal(cv_gitsource_poll(f->src, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status st;
    cv_gitsource_status_get(f->src, &st);
    snprintf(rev, 513, "%s", st.revision);
    cv_gitsource_tree *t;
    assert_int_equal(cv_gitsource_tree_open(f->src, NULL, &t, &f->d), 0);
    cv_plan_report r;
    int rc = cv_planner_plan(&f->po, t, rev, &r, &f->d);
    if (rc)
        cv_diag_print(&f->d, stderr, false);
    assert_int_equal(rc, 0);
    cv_gitsource_tree_free(t);
    return r;
}

/* A worker: leases everything and completes it ok; the fake cache learns
 * the keys.  Returns the number of jobs run. */
static int run_worker(fx *f, cv_lease *first)
{
    int n = 0;
    cv_lease l;
    while (cv_queue_lease(f->q, "w1", 60, 0, &l, &f->d) == 1) {
        f->now += 10;
        cv_result_msg r;
        cv_result_msg_init(&r);
        r.job_id = strdup(l.job.job_id);
        r.status = CV_RESULT_OK;
        r.l1 = r.l2 = CV_CACHE_MISS;
        memcpy(r.artifact_manifest, MANIFEST, 65);
        char *msg;
        size_t len;
        assert_int_equal(cv_result_msg_encode(&r, &msg, &len, &f->d), 0);
        assert_int_equal(cv_queue_complete(f->q, &l, msg, len, &f->d), 0);
        assert_true(f->cache.n < 256);
        memcpy(f->cache.keys[f->cache.n++], l.job.l2_key, 65);
        free(msg);
        cv_result_msg_free(&r);
        if (first && n == 0)
            *first = l;
        else
            cv_queue_lease_free(&l);
        n++;
    }
    int collected = 0;
    assert_int_equal(cv_planner_collect(&f->po, &collected, &f->d), 0);
    assert_int_equal(collected, n);
    return n;
}

static bool has_code(const cv_diag *d, int code)
{
    for (int i = 1; i <= d->n; i++)
        if (cv_diag_get(d, i)->code == code)
            return true;
    return false;
}

static void test_expand_run_and_rebuild_changed_only(void **state)
{
    fx *f = *state;
    char rev1[513], rev2[513];
    cv_plan_report r = commit_and_plan(f, FILES, 7, rev1);
    /* base: 3 onnx x 2 targets x fp32 = 6; vision: 3 models x 2 x 2 = 12 */
    assert_false(r.already_planned);
    assert_false(r.spec_errors);
    assert_int_equal(r.pipelines, 2);
    assert_int_equal(r.models, 6);
    assert_int_equal(r.jobs, 18);
    assert_int_equal(r.hits, 0);
    assert_int_equal(r.queued, 18);
    /* vision's lenet and resnet at fp32 are the same work as base's */
    assert_int_equal(r.merged, 4);
    assert_int_equal(r.hashed, 4);
    assert_int_equal(r.memo_hits, 2);   /* vision reuses what base hashed */
    assert_int_equal(f->d.n_errors, 0);
    cv_queue_stats qs;
    assert_int_equal(cv_queue_stats_get(f->q, &qs, &f->d), 0);
    assert_int_equal(qs.queued, 14);
    assert_int_equal(qs.merged, 4);

    cv_lease l;
    assert_int_equal(run_worker(f, &l), 14);
    /* the job message carries everything a worker needs */
    assert_string_equal(l.job.revision, rev1);
    assert_non_null(strstr(l.job.job_id, "/base/models/other/x.onnx@x86_64/fp32"));
    assert_string_equal(l.job.model_path, "models/other/x.onnx");
    char want[65];
    cv_digest dg;
    cv_cache_sha256("x v1", 4, &dg);
    cv_cache_digest_hex(&dg, want);
    assert_string_equal(l.job.model_digest, want);
    assert_int_equal(l.job.opt_level, CV_OPT_O2);
    fake_key(&l.job, want);
    assert_string_equal(l.job.l2_key, want);
    cv_queue_lease_free(&l);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, rev1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.ok, 18);
    char *last = NULL;
    assert_int_equal(cv_builddb_status_get(f->db, CV_STATUS_LAST_SUCCEEDED, &last, &f->d), 1);
    assert_string_equal(last, rev1);
    free(last);

    /* second commit: one model changes, a comment in the spec changes */
    static const char SPEC2[] = "# build everything\n";
    char spec2[sizeof PIPELINES + sizeof SPEC2];
    snprintf(spec2, sizeof spec2, "%s%s", SPEC2, PIPELINES);
    const trepo_file change[] = {{"models/vision/lenet.onnx", "lenet v2", 0},
                                 {"cuvil/pipelines.yaml", spec2, 0}};
    r = commit_and_plan(f, change, 2, rev2);
    assert_int_equal(r.jobs, 18);
    /* lenet: base 2 targets + vision 2 targets x 2 precisions = 6 misses, 2 of them merged */
    assert_int_equal(r.queued, 6);
    assert_int_equal(r.merged, 2);
    assert_int_equal(r.hits, 12);
    assert_int_equal(r.hashed, 1);      /* only the changed file was read */
    assert_int_equal(r.memo_hits, 5);
    assert_int_equal(run_worker(f, NULL), 4);
    assert_int_equal(cv_builddb_revision_summary(f->db, rev2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.hits, 12);
    assert_int_equal(s.ok, 6);
    char l2[65], man[65];
    assert_int_equal(cv_builddb_artifact_find(f->db, rev2, "models/vision/lenet.onnx", "x86_64",
                                              "int8", l2, man, &f->d), 1);
    assert_string_equal(man, MANIFEST);
    assert_int_equal(cv_builddb_artifact_find(f->db, rev2, "models/vision/resnet.onnx", "x86_64",
                                              "int8", l2, man, &f->d), 1);
    assert_string_equal(man, "");   /* a hit */

    /* planning the same revision again does nothing */
    cv_gitsource_tree *t;
    assert_int_equal(cv_gitsource_tree_open(f->src, NULL, &t, &f->d), 0);
    int lookups = f->cache.lookups;
    assert_int_equal(cv_planner_plan(&f->po, t, rev2, &r, &f->d), 0);
    assert_true(r.already_planned);
    assert_int_equal(r.jobs, 0);
    assert_int_equal(f->cache.lookups, lookups);
    cv_gitsource_tree_free(t);
    assert_int_equal(f->d.n_errors, 0);
}

static void test_in_flight_jobs_merge_across_revisions(void **state)
{
    fx *f = *state;
    char rev1[513], rev2[513];
    cv_plan_report r = commit_and_plan(f, FILES, 7, rev1);
    assert_int_equal(r.queued, 18);
    /* before any worker ran: a commit that only touches the docs */
    const trepo_file docs[] = {{"docs/readme.md", "# models, v2\n", 0}};
    r = commit_and_plan(f, docs, 1, rev2);
    assert_int_equal(r.jobs, 18);
    assert_int_equal(r.queued, 18);
    assert_int_equal(r.merged, 18);     /* every job joins rev 1's execution */
    assert_int_equal(r.hashed, 0);
    cv_queue_stats qs;
    assert_int_equal(cv_queue_stats_get(f->q, &qs, &f->d), 0);
    assert_int_equal(qs.queued, 14);
    assert_int_equal(run_worker(f, NULL), 14);   /* one execution per distinct job */
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, rev1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(cv_builddb_revision_summary(f->db, rev2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.ok, 18);
    char *last = NULL;
    assert_int_equal(cv_builddb_status_get(f->db, CV_STATUS_LAST_SUCCEEDED, &last, &f->d), 1);
    assert_string_equal(last, rev2);
    free(last);
}

static void test_spec_errors_fail_the_revision(void **state)
{
    fx *f = *state;
    char rev1[513], rev2[513];
    const trepo_file bad[] = {
        {"cuvil/p.yaml",
         "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\n"
         "spec:\n  models: [\"models/*.onnx\"]\n  targets: [x86_64-avx3]\n  precisions: [fp32]\n",
         0},
        {"models/a.onnx", "a", 0},
    };
    cv_plan_report r = commit_and_plan(f, bad, 2, rev1);
    assert_true(r.spec_errors);
    assert_int_equal(r.jobs, 0);
    assert_true(has_code(&f->d, 6009));
    const cv_diag_entry *e = cv_diag_get(&f->d, 1);
    assert_string_equal(e->span.file, "cuvil/p.yaml");
    assert_int_equal(e->span.line, 6);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, rev1, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    char *v = NULL;
    assert_int_equal(cv_builddb_status_get(f->db, CV_STATUS_LAST_ATTEMPTED, &v, &f->d), 1);
    assert_string_equal(v, rev1);
    free(v);
    assert_int_equal(cv_builddb_status_get(f->db, CV_STATUS_LAST_SUCCEEDED, &v, &f->d), 0);
    cv_diag_clear(&f->d);
    /* fixed, plus a glob that matches nothing and one that matches no model */
    const trepo_file fixed[] = {
        {"cuvil/p.yaml",
         "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\n"
         "spec:\n  models: [\"models/*.onnx\", \"nothing/*.onnx\", \"docs/*\"]\n"
         "  targets: [x86_64-avx2]\n  precisions: [fp32]\n",
         0},
        {"docs/a.md", "doc", 0},
    };
    r = commit_and_plan(f, fixed, 2, rev2);
    assert_false(r.spec_errors);
    assert_int_equal(r.jobs, 1);
    assert_int_equal(f->d.n_errors, 0);
    assert_true(has_code(&f->d, 6091));
    assert_true(has_code(&f->d, 6092));
    run_worker(f, NULL);
    assert_int_equal(cv_builddb_revision_summary(f->db, rev2, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);   /* warnings do not fail it */
}

static void test_limits_lookup_failure_and_no_pipelines(void **state)
{
    fx *f = *state;
    char rev[513];
    f->po.max_jobs = 10;
    cv_plan_report r = commit_and_plan(f, FILES, 7, rev);
    assert_int_equal(r.jobs, 10);
    assert_true(has_code(&f->d, 6093));
    run_worker(f, NULL);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(f->db, rev, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);   /* the plan was cut short */
    cv_diag_clear(&f->d);

    f->po.max_jobs = 0;
    f->cache.fail = true;
    const trepo_file change[] = {{"models/other/x.onnx", "x v2", 0}};
    r = commit_and_plan(f, change, 1, rev);
    assert_int_equal(r.hits, 0);
    assert_int_equal(r.jobs, 18);
    assert_true(has_code(&f->d, 6095));
    assert_int_equal(f->d.n_errors, 0);
    cv_diag_clear(&f->d);

    /* without a look-up, identical work still merges under the planner's key */
    f->po.lookup = NULL;
    /* a commit that deletes every spec is a spec error, not a success */
    const trepo_file nospec[] = {{"cuvil/pipelines.yaml", NULL, 0}};
    r = commit_and_plan(f, nospec, 1, rev);
    assert_int_equal(r.pipelines, 0);
    assert_int_equal(r.jobs, 0);
    assert_true(r.spec_errors);
    assert_true(has_code(&f->d, 6099));
    assert_int_equal(cv_builddb_revision_summary(f->db, rev, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
}

static void test_planner_key_merges_without_lookup(void **state)
{
    fx *f = *state;
    char rev[513];
    f->po.lookup = NULL;
    cv_plan_report r = commit_and_plan(f, FILES, 7, rev);
    assert_int_equal(r.jobs, 18);
    assert_int_equal(r.merged, 4);
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 60, 0, &l, &f->d), 1);
    assert_int_equal(strlen(l.job.l2_key), 64);
    cv_queue_lease_free(&l);
}

/* The int8 jobs carry the pipeline's calibration, the fp32 ones do not;
 * without a look-up the stand-in keys of two calibrations differ. */
static void test_calibration_travels_with_int8_jobs(void **state)
{
    fx *f = *state;
    char rev[513];
    f->po.lookup = NULL;
    static const char spec[] =
        "apiVersion: cuvil.dev/v1\n"
        "kind: CuvilPipeline\n"
        "metadata: {name: q}\n"
        "spec:\n"
        "  models: [\"models/*.onnx\"]\n"
        "  targets: [x86_64]\n"
        "  precisions: [fp32, int8]\n"
        "  calibration: {data: \"calib/*.npy\", method: entropy}\n"
        "---\n"
        "apiVersion: cuvil.dev/v1\n"
        "kind: CuvilPipeline\n"
        "metadata: {name: q2}\n"
        "spec:\n"
        "  extends: q\n"
        "  calibration: {data: \"calib2/*.npy\"}\n";
    const trepo_file files[] = {{"cuvil/p.yaml", spec, 0}, {"models/a.onnx", "a", 0}};
    cv_plan_report r = commit_and_plan(f, files, 2, rev);
    assert_int_equal(r.jobs, 4);
    assert_int_equal(r.merged, 1);      /* fp32 is the same work in both pipelines */
    int int8 = 0;
    char keys[2][65] = {"", ""};
    cv_lease l;
    while (cv_queue_lease(f->q, "w", 60, 0, &l, &f->d) == 1) {
        if (l.job.precision == CV_PRECISION_INT8) {
            assert_true(int8 < 2);
            assert_non_null(l.job.calibration);
            assert_string_equal(l.job.calibration_method, "entropy");   /* from the base */
            bool second = strcmp(l.job.pipeline, "q2") == 0;
            assert_string_equal(l.job.calibration, second ? "calib2/*.npy" : "calib/*.npy");
            memcpy(keys[int8++], l.job.l2_key, 65);
        } else {
            assert_null(l.job.calibration);
            assert_null(l.job.calibration_method);
        }
        cv_queue_lease_free(&l);
    }
    assert_int_equal(int8, 2);
    assert_string_not_equal(keys[0], keys[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_expand_run_and_rebuild_changed_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_flight_jobs_merge_across_revisions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_spec_errors_fail_the_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_lookup_failure_and_no_pipelines, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_planner_key_merges_without_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calibration_travels_with_int8_jobs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
