/* The controller loop over a real git repository made by the test and a
 * real SQLite queue: planning a new head once, build requests forcing a
 * poll, results collected into the build DB, the revision trees written and
 * removed, a source that disappears (recorded, retried, never fatal), and
 * the build DB's read side (revision names, failed jobs, stored
 * diagnostics). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: p}\n"
    "spec: {models: [\"models/*.cuir\"], targets: [x86_64], precisions: [fp32]}\n";
static const char MODEL_A[] = "# a\n";
static const char MODEL_B[] = "# b\n";
static const char MANIFEST[] =
    "1111111111111111111111111111111111111111111111111111111111111111";

typedef struct fx {
    char *dir, *repo_dir, *state_dir;
    git_repository *repo;
    cv_controller *ctl;
    cv_queue *q;          /* the workers' handle on the controller's queue */
    cv_diag d;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("controller");
    f->repo_dir = cv_tmpdir_path(f->dir, "repo");
    f->state_dir = cv_tmpdir_path(f->dir, "state");
    f->repo = trepo_init(f->repo_dir);
    cv_diag_init(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_queue_close(f->q);
    cv_controller_close(f->ctl);
    trepo_free(f->repo);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->repo_dir);
    free(f->state_dir);
    free(f);
    return 0;
}

static void open_controller(fx *f)
{
    cv_controller_opts o = {.repo = f->repo_dir, .state_dir = f->state_dir,
                            .interval_ms = 3600 * 1000};
    assert_int_equal(cv_controller_open(&o, &f->ctl, &f->d), 0);
    assert_int_equal(cv_queue_open(cv_controller_queue_url(f->ctl), NULL, &f->q, &f->d), 0);
}

/* A worker: completes every queued job with status (diagnostics for a
 * failure: a root error and one derived from it). */
static int run_jobs(fx *f, cv_result_status status)
{
    int n = 0;
    cv_lease l;
    while (cv_queue_lease(f->q, "w", 60, 0, &l, &f->d) == 1) {
        cv_result_msg r;
        cv_result_msg_init(&r);
        r.job_id = strdup(l.job.job_id);
        r.status = status;
        r.l1 = r.l2 = CV_CACHE_MISS;
        if (status == CV_RESULT_OK) {
            memcpy(r.artifact_manifest, MANIFEST, sizeof MANIFEST);
        } else {
            int root = cv_diag_add(&r.diags, CV_SEV_ERROR, 3003,
                                   (cv_span){.file = l.job.model_path, .line = 3, .col = 5},
                                   "@f>%2", "declared f32[N,5]");
            int derived = cv_diag_error(&r.diags, 3101, (cv_span){.file = l.job.model_path},
                                        "use of a bad value");
            cv_diag_set_root(&r.diags, derived, root);
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

static bool tree_exists(fx *f, const char *hex, const char *file)
{
    char rel[256];
    snprintf(rel, sizeof rel, "trees/%s/%s", hex, file);
    char *p = cv_tmpdir_path(f->state_dir, rel);
    bool ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

static void test_plans_each_head_once_and_collects(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL_A, 0}};
    char hex1[41];
    trepo_commit(f->repo, "one", files, 2, hex1);
    open_controller(f);

    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.polled);
    assert_true(r.planned);
    assert_int_equal(r.plan.queued, 1);
    assert_non_null(strstr(r.revision, hex1));
    assert_true(tree_exists(f, hex1, "models/a.cuir"));
    /* not due: no poll, nothing planned twice */
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);
    assert_false(r.polled);
    assert_false(r.planned);
    assert_true(cv_controller_idle_ms(f->ctl) > 3000 * 1000);
    /* a forced poll of an unchanged head plans nothing either */
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.polled);
    assert_false(r.planned);

    assert_int_equal(run_jobs(f, CV_RESULT_OK), 1);
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);
    assert_int_equal(r.results, 1);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(cv_controller_db(f->ctl), NULL, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_true(tree_exists(f, hex1, "models/a.cuir"));   /* the head's tree stays */

    /* A build request makes the next step poll although it is not due. */
    const trepo_file more[] = {{"models/b.cuir", MODEL_B, 0}};
    char hex2[41];
    trepo_commit(f->repo, "two", more, 1, hex2);
    cv_builddb *db = cv_controller_db(f->ctl);
    int64_t req;
    assert_int_equal(cv_builddb_request_add(db, 1, &req, &f->d), 0);
    cv_build_request br;
    assert_int_equal(cv_builddb_request_get(db, req, &br, &f->d), 1);
    assert_int_equal(br.handled_ms, 0);
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);
    assert_true(r.planned);
    assert_int_equal(r.requests, 1);
    assert_int_equal(r.plan.jobs, 2);
    assert_int_equal(r.plan.queued, 2);
    assert_int_equal(cv_builddb_request_get(db, req, &br, &f->d), 1);
    assert_true(br.handled_ms > 0);
    assert_non_null(strstr(br.revision, hex2));
    assert_string_equal(br.error, "");
    assert_int_equal(cv_builddb_request_next(db, &br, &f->d), 0);

    /* The second revision fails; once it has no pending job, the first
     * revision's tree goes and the head's stays. */
    assert_int_equal(run_jobs(f, CV_RESULT_FAILED), 2);
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);
    assert_int_equal(r.results, 2);
    assert_false(tree_exists(f, hex1, "models/a.cuir"));
    assert_true(tree_exists(f, hex2, "models/b.cuir"));
    assert_int_equal(cv_builddb_revision_summary(db, NULL, &s, &f->d), 1);
    assert_int_equal(s.state, CV_REV_FAILED);
    assert_int_equal(s.failed, 2);
    char *v = NULL;
    assert_int_equal(cv_builddb_status_get(db, CV_STATUS_LAST_SUCCEEDED, &v, &f->d), 1);
    assert_non_null(strstr(v, hex1));
    free(v);
    assert_int_equal(cv_builddb_status_get(db, CV_STATUS_CONTROLLER, &v, &f->d), 1);
    assert_non_null(strstr(v, "\"heartbeatMs\""));
    free(v);
    assert_false(cv_diag_has_errors(&f->d));
}

typedef struct rows {
    cv_job_row v[8];
    int n;
} rows;

static int collect_row(void *ctx, const cv_job_row *row)
{
    rows *r = ctx;
    if (r->n < 8)
        r->v[r->n++] = *row;
    return 0;
}

static void test_history_queries(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL_A, 0},
                                {"models/b.cuir", MODEL_B, 0}};
    char hex[41];
    trepo_commit(f->repo, "two models", files, 3, hex);
    open_controller(f);
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    cv_builddb *db = cv_controller_db(f->ctl);
    /* one job ok, the other failed with a root error and a derived one */
    cv_lease l;
    assert_int_equal(cv_queue_lease(f->q, "w", 60, 0, &l, &f->d), 1);
    cv_result_msg ok;
    cv_result_msg_init(&ok);
    ok.job_id = strdup(l.job.job_id);
    ok.status = CV_RESULT_OK;
    ok.l1 = ok.l2 = CV_CACHE_HIT;
    memcpy(ok.artifact_manifest, MANIFEST, sizeof MANIFEST);
    char *msg;
    size_t len;
    assert_int_equal(cv_result_msg_encode(&ok, &msg, &len, &f->d), 0);
    assert_int_equal(cv_queue_complete(f->q, &l, msg, len, &f->d), 0);
    free(msg);
    cv_result_msg_free(&ok);
    cv_queue_lease_free(&l);
    assert_int_equal(run_jobs(f, CV_RESULT_FAILED), 1);
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);

    rows all = {0}, bad = {0};
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(db, NULL, &s, &f->d), 1);
    assert_int_equal(cv_builddb_jobs_visit(db, s.id, false, collect_row, &all, &f->d), 0);
    assert_int_equal(cv_builddb_jobs_visit(db, s.id, true, collect_row, &bad, &f->d), 0);
    assert_int_equal(all.n, 2);
    assert_string_equal(all.v[0].model_path, "models/a.cuir");   /* sorted by model */
    assert_string_equal(all.v[1].model_path, "models/b.cuir");
    assert_int_equal(bad.n, 1);
    assert_string_equal(bad.v[0].state, "failed");
    assert_string_equal(bad.v[0].target, "x86_64");
    assert_true(bad.v[0].result_id > 0);
    const cv_job_row *good = strcmp(all.v[0].state, "ok") == 0 ? &all.v[0] : &all.v[1];
    assert_string_equal(good->l2, "hit");

    cv_diag dg;
    cv_diag_init(&dg);
    assert_int_equal(cv_builddb_diags_load(db, 0, bad.v[0].result_id, &dg, &f->d), 0);
    assert_int_equal(dg.n, 2);
    const cv_diag_entry *root = cv_diag_get(&dg, 1), *derived = cv_diag_get(&dg, 2);
    assert_int_equal(root->code, 3003);
    assert_int_equal(root->span.line, 3);
    assert_int_equal(root->span.col, 5);
    assert_string_equal(root->span.file, bad.v[0].model_path);
    assert_string_equal(root->path, "@f>%2");
    assert_int_equal(root->root_id, 0);
    assert_int_equal(derived->code, 3101);
    assert_int_equal(derived->root_id, root->id);
    cv_diag_free(&dg);

    /* revision names: full, commit, prefix, latest, unknown, ambiguous */
    char name[CV_REVISION_MAX + 1];
    assert_int_equal(cv_builddb_revision_resolve(db, s.revision, name, &f->d), 1);
    assert_string_equal(name, s.revision);
    assert_int_equal(cv_builddb_revision_resolve(db, hex, name, &f->d), 1);
    assert_string_equal(name, s.revision);
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%.6s", hex);
    assert_int_equal(cv_builddb_revision_resolve(db, prefix, name, &f->d), 1);
    assert_string_equal(name, s.revision);
    assert_int_equal(cv_builddb_revision_resolve(db, "latest", name, &f->d), 1);
    assert_string_equal(name, s.revision);
    assert_int_equal(cv_builddb_revision_resolve(db, "main@sha1:0000", name, &f->d), 0);
    int64_t id;
    bool created;
    assert_int_equal(cv_builddb_revision_begin(
                         db, "main@sha1:abcd111111111111111111111111111111111111", 1, &id,
                         &created, &f->d), 0);
    assert_int_equal(cv_builddb_revision_begin(
                         db, "dev@sha1:abcd222222222222222222222222222222222222", 2, &id,
                         &created, &f->d), 0);
    cv_diag amb;
    cv_diag_init(&amb);
    assert_int_equal(cv_builddb_revision_resolve(db, "abcd", name, &amb), -1);
    assert_int_equal(cv_diag_get(&amb, 1)->code, 6076);
    cv_diag_free(&amb);
    assert_int_equal(cv_builddb_revision_resolve(db, "abcd2", name, &f->d), 1);
    assert_string_equal(name, "dev@sha1:abcd222222222222222222222222222222222222");

    cv_rev_summary list[8];
    int n;
    assert_int_equal(cv_builddb_revisions_list(db, 0, list, 8, &n, &f->d), 0);
    assert_int_equal(n, 3);
    assert_string_equal(list[0].revision, "dev@sha1:abcd222222222222222222222222222222222222");
    assert_string_equal(list[2].revision, s.revision);
    assert_int_equal(list[2].jobs, 2);
    assert_false(cv_diag_has_errors(&f->d));
}

static void test_source_failure_is_recorded_not_fatal(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL_A, 0}};
    trepo_commit(f->repo, "one", files, 2, NULL);
    open_controller(f);
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);

    char *moved = cv_tmpdir_path(f->dir, "repo-gone");
    assert_int_equal(rename(f->repo_dir, moved), 0);
    cv_builddb *db = cv_controller_db(f->ctl);
    int64_t req;
    assert_int_equal(cv_builddb_request_add(db, 1, &req, &f->d), 0);
    assert_int_equal(cv_controller_step(f->ctl, false, &r, &f->d), 0);
    assert_true(r.source_failed);
    assert_true(strlen(r.source_error) > 0);
    cv_build_request br;
    assert_int_equal(cv_builddb_request_get(db, req, &br, &f->d), 1);
    assert_true(br.handled_ms > 0);
    assert_string_equal(br.revision, "");
    assert_true(strlen(br.error) > 0);
    char *src = NULL;
    assert_int_equal(cv_builddb_status_get(db, CV_STATUS_SOURCE, &src, &f->d), 1);
    assert_non_null(strstr(src, "\"failures\":1"));
    free(src);

    /* back: the next forced poll succeeds and the failures are reset */
    assert_int_equal(rename(moved, f->repo_dir), 0);
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_false(r.source_failed);
    assert_int_equal(cv_builddb_status_get(db, CV_STATUS_SOURCE, &src, &f->d), 1);
    assert_non_null(strstr(src, "\"failures\":0"));
    free(src);
    free(moved);
    assert_false(cv_diag_has_errors(&f->d));
}

/* The codes of the diagnostics stored with the revision of r. */
static bool revision_has(fx *f, const cv_step_report *r, int code, const char *text)
{
    cv_diag got;
    cv_diag_init(&got);
    assert_int_equal(cv_builddb_diags_load(cv_controller_db(f->ctl), r->plan.rev_id, 0, &got,
                                           &f->d), 0);
    bool found = false;
    for (int i = 0; i < got.n; i++)
        found |= got.v[i].code == code && (!text || strstr(got.v[i].msg, text));
    cv_diag_free(&got);
    return found;
}

/* The operator's policy: two remotes a spec may name, a 10-minute job
 * ceiling, a 4 GiB memory ceiling. */
static cv_farm_policy operator_policy(void)
{
    cv_farm_policy p = {.remote = "http://127.0.0.1:8/farm", .job_timeout_ms = 600000,
                        .memory_limit = 4ull << 30};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_farm_policy_add_remote(&p, "fast=http://127.0.0.1:9/x", &d), 0);
    assert_int_equal(cv_farm_policy_add_remote(&p, "eu=https://cache.example:443", &d), 0);
    /* malformed: a bad name, no scheme, a duplicate name */
    assert_int_equal(cv_farm_policy_add_remote(&p, "Bad_Name=http://x:1", &d), -1);
    assert_int_equal(cv_farm_policy_add_remote(&p, "n=ftp://x:1", &d), -1);
    assert_int_equal(cv_farm_policy_add_remote(&p, "fast=http://x:1", &d), -1);
    assert_int_equal(d.n_errors, 3);
    assert_int_equal(d.v[0].code, 6163);
    cv_diag_free(&d);
    assert_int_equal(p.n_remotes, 2);
    return p;
}

/* What a spec may choose: a remote the operator named (by its name), lower
 * limits, read-only, its poll interval. */
static void test_cluster_spec_settings(void **state)
{
    fx *f = *state;
    static const char CLUSTER[] =
        "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: c}\n"
        "spec:\n  source: {url: /srv/models.git, interval: 45s}\n"
        "  workers: {jobTimeout: 90s, memoryLimit: 2Gi}\n"
        "  cache: {remote: fast, readOnly: true}\n";
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"cuvil/c.yaml", CLUSTER, 0},
                                {"models/a.cuir", MODEL_A, 0}};
    trepo_commit(f->repo, "one", files, 3, NULL);
    cv_farm_policy p = operator_policy();
    cv_controller_opts o = {.repo = f->repo_dir, .state_dir = f->state_dir, .policy = &p};
    assert_int_equal(cv_controller_open(&o, &f->ctl, &f->d), 0);
    const cv_cluster_settings *cs = cv_controller_cluster(f->ctl);
    /* before a head is read: the operator's values */
    assert_false(cs->found);
    assert_int_equal(cs->job_timeout_ms, 600000);
    assert_int_equal(cs->memory_limit, 4ull << 30);
    assert_string_equal(cs->remote, "http://127.0.0.1:8/farm");
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(cs->found);
    assert_int_equal(cs->interval_ms, 45000);
    assert_int_equal(cs->job_timeout_ms, 90000);
    assert_int_equal(cs->memory_limit, 2ull << 30);
    assert_string_equal(cs->remote, "http://127.0.0.1:9/x");
    assert_string_equal(cs->remote_name, "fast");
    assert_true(cs->remote_read_only);
    assert_non_null(strstr(cv_controller_queue_url(f->ctl), "sqlite:"));
    /* the interval comes from the spec when the caller gives none */
    assert_true(cv_controller_idle_ms(f->ctl) > 40000);
    assert_true(cv_controller_idle_ms(f->ctl) <= 45000);
    assert_false(revision_has(f, &r, 6160, NULL) || revision_has(f, &r, 6161, NULL) ||
                 revision_has(f, &r, 6162, NULL));

    /* a kafka queue in an operator's spec (the Kubernetes object) becomes
     * its queue URL */
    cv_spec_set *s = cv_spec_set_new();
    static const char KAFKA[] =
        "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: k}\n"
        "spec:\n  source: {url: /srv/models.git}\n"
        "  queue: {kind: kafka, brokers: \"k1:9092,k2:9092\", topicPrefix: farm1}\n";
    assert_int_equal(cv_spec_set_add(s, KAFKA, strlen(KAFKA), "k.yaml", false, &f->d), 0);
    assert_int_equal(cv_spec_set_resolve(s, &f->d), 0);
    char url[256];
    cv_spec_cluster_queue_url(cv_spec_set_cluster(s), url, sizeof url);
    assert_string_equal(url, "kafka://k1:9092,k2:9092?topic_prefix=farm1");
    cv_spec_set_free(s);
    assert_false(cv_diag_has_errors(&f->d));
}

/* A commit that asks for infrastructure of its own: a remote URL (an
 * attacker's server), a Kafka broker list, limits above the operator's.
 * The revision loads, with one coded warning per request, and the
 * operator's values apply: the queue stays the operator's. */
static void test_cluster_spec_cannot_choose_infrastructure(void **state)
{
    fx *f = *state;
    static const char CLUSTER[] =
        "apiVersion: cuvil.dev/v1\nkind: CuvilBuildCluster\nmetadata: {name: c}\n"
        "spec:\n  source: {url: /srv/models.git}\n"
        "  workers: {jobTimeout: 48h, memoryLimit: 1Ti}\n"
        "  queue: {kind: kafka, brokers: \"evil.example:9092\"}\n"
        "  cache: {remote: \"http://127.0.0.1:7/attacker\", signingKeySecret: mine}\n";
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"cuvil/c.yaml", CLUSTER, 0},
                                {"models/a.cuir", MODEL_A, 0}};
    trepo_commit(f->repo, "take over", files, 3, NULL);
    cv_farm_policy p = operator_policy();
    cv_controller_opts o = {.repo = f->repo_dir, .state_dir = f->state_dir, .policy = &p,
                            .interval_ms = 3600 * 1000};
    assert_int_equal(cv_controller_open(&o, &f->ctl, &f->d), 0);
    assert_int_equal(cv_queue_open(cv_controller_queue_url(f->ctl), NULL, &f->q, &f->d), 0);
    char want_queue[4096];
    snprintf(want_queue, sizeof want_queue, "sqlite:%s/queue.db", f->state_dir);
    assert_string_equal(cv_controller_queue_url(f->ctl), want_queue);
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);
    if (r.plan.spec_errors)
        cv_diag_print(&f->d, stderr, false);
    assert_false(r.plan.spec_errors);
    const cv_cluster_settings *cs = cv_controller_cluster(f->ctl);
    assert_true(cs->found);
    assert_string_equal(cs->remote, "http://127.0.0.1:8/farm");
    assert_int_equal(cs->job_timeout_ms, 600000);
    assert_int_equal(cs->memory_limit, 4ull << 30);
    assert_string_equal(cv_controller_queue_url(f->ctl), want_queue);
    /* the job went to the operator's queue, not the spec's brokers */
    assert_int_equal(run_jobs(f, CV_RESULT_OK), 1);
    /* each refusal is stored with the revision, coded and located */
    assert_true(revision_has(f, &r, 6160, "http://127.0.0.1:7/attacker"));
    assert_true(revision_has(f, &r, 6161, "evil.example:9092"));
    assert_true(revision_has(f, &r, 6161, "signingKeySecret"));
    assert_true(revision_has(f, &r, 6162, "jobTimeout"));
    assert_true(revision_has(f, &r, 6162, "memoryLimit"));
    assert_false(cv_diag_has_errors(&f->d));

    /* without a policy (defaults): no remote at all, 600 s, no memory limit */
    cv_cluster_settings def;
    cv_cluster_apply(NULL, NULL, &def, NULL);
    assert_string_equal(def.remote, "");
    assert_int_equal(def.job_timeout_ms, 600000);
    assert_int_equal(def.memory_limit, 0);
}

/* A commit that deletes every spec fails its revision with a coded error;
 * the controller goes on and builds the next commit. */
static void test_specless_commit_fails(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL_A, 0}};
    trepo_commit(f->repo, "one", files, 2, NULL);
    open_controller(f);
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);
    assert_int_equal(run_jobs(f, CV_RESULT_OK), 1);
    const trepo_file gone[] = {{"cuvil/p.yaml", NULL, 0}};
    char hex[41];
    trepo_commit(f->repo, "delete every spec", gone, 1, hex);
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);
    assert_true(r.plan.spec_errors);
    assert_true(revision_has(f, &r, 6099, "no spec file"));
    cv_rev_summary sum;
    assert_int_equal(cv_builddb_revision_summary(cv_controller_db(f->ctl), r.revision, &sum,
                                                 &f->d), 1);
    assert_string_equal(cv_rev_state_name(sum.state), "failed");
    assert_non_null(strstr(r.revision, hex));
    /* the next commit with a spec builds again */
    trepo_commit(f->repo, "back", files, 2, NULL);
    cv_diag_clear(&f->d);
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);
    assert_false(r.plan.spec_errors);
}

/* --ref HEAD: what the source has checked out (a CI runner's checkout). */
static void test_ref_head(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL_A, 0}};
    char hex[41];
    trepo_commit(f->repo, "one", files, 2, hex);
    cv_controller_opts o = {.repo = f->repo_dir, .ref = "HEAD", .state_dir = f->state_dir,
                            .interval_ms = 3600 * 1000};
    assert_int_equal(cv_controller_open(&o, &f->ctl, &f->d), 0);
    cv_step_report r;
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_false(r.source_failed);
    assert_true(r.planned);
    char want[CV_REVISION_MAX + 1];
    snprintf(want, sizeof want, "HEAD@sha1:%s", hex);
    assert_string_equal(r.revision, want);
    const trepo_file more[] = {{"models/b.cuir", MODEL_B, 0}};
    trepo_commit(f->repo, "two", more, 1, hex);
    assert_int_equal(cv_controller_step(f->ctl, true, &r, &f->d), 0);
    assert_true(r.planned);
    snprintf(want, sizeof want, "HEAD@sha1:%s", hex);
    assert_string_equal(r.revision, want);
    assert_false(cv_diag_has_errors(&f->d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plans_each_head_once_and_collects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_queries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_failure_is_recorded_not_fatal, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cluster_spec_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_spec_cannot_choose_infrastructure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_specless_commit_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ref_head, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
