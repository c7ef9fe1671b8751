/* Failures that are not the model's, classified by `cuvil failures`: a
 * git repository with five healthy CU-IR models, `cuvil controller --once`
 * planning them, and `cuvil worker` processes started here one after the
 * other, each under a test fault (CUVIL_TEST_FAULT with
 * --allow-test-faults), so that each job meets its own trouble:
 *   a_crash   the compiler dies of SIGSEGV             -> ice
 *   b_hang    it hangs past a 1 s --timeout            -> timeout
 *   c_oom     it allocates past a 256 MiB limit        -> oom
 *   d_flaky   its first worker is killed mid-compile; the lease expires and
 *             the second attempt succeeds              -> flaky
 *   e_infra   its file is gone from the revision's tree: every attempt is
 *             an infrastructure failure, then a dead letter -> infra
 * Jobs are leased oldest first, so the order of the workers decides which
 * job meets which fault. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "queue/queue.h"
#include "tests/support/childproc.h"
#include "tests/support/failures_testlib.h"

#define MODELS 5
#define WAIT_MS 60000

static const char *const NAMES[MODELS] = {"a_crash", "b_hang", "c_oom", "d_flaky", "e_infra"};

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: faults}\n"
    "spec: {models: [\"models/*.cuir\"], targets: [x86_64-avx2], precisions: [fp32]}\n";

typedef struct fx {
    const char *bin;
    char *dir, *repo, *state, *cache, *scratch, *err, *queue_url, *trees;
    char hex[41];
} fx;

static void make_repo(fx *f)
{
    git_repository *r = trepo_init(f->repo);
    char path[2048], text[512];
    for (int i = 0; i < MODELS; i++) {
        /* a comment of its own: identical models would merge into one job */
        int n = snprintf(text, sizeof text,
                         "# %s\ncuir 1\nmodel @m(%%x: f32[N,4]) -> (f32[N,4]) {\n"
                         "  %%0 = relu(%%x) : f32[N,4]\n  return %%0\n}\n", NAMES[i]);
        snprintf(path, sizeof path, "%s/models/%s.cuir", f->repo, NAMES[i]);
        write_file(path, text, (size_t)n);
    }
    snprintf(path, sizeof path, "%s/cuvil/pipelines.yaml", f->repo);
    write_file(path, PIPELINE, strlen(PIPELINE));
    commit_all(r, "five healthy models", f->hex);
    trepo_free(r);
}

static cv_queue_stats queue_stats(fx *f)
{
    cv_queue_stats s = {0};
    char *db = cv_tmpdir_path(f->state, "queue.db");
    bool exists = access(db, F_OK) == 0;
    free(db);
    cv_queue *q = NULL;
    cv_diag d;
    cv_diag_init(&d);
    if (exists && cv_queue_open(f->queue_url, NULL, &q, &d) == 0)
        cv_queue_stats_get(q, &s, &d);
    cv_queue_close(q);
    cv_diag_free(&d);
    return s;
}

/* Waits until the queue holds n jobs in the state that field counts. */
static void wait_for(fx *f, size_t field, int64_t n)
{
    for (int ms = 0; ms < WAIT_MS; ms += 50) {
        cv_queue_stats s = queue_stats(f);
        if (*(int64_t *)((char *)&s + field) == n)
            return;
        usleep(50000);
    }
    fail_msg("the queue never held %lld such jobs", (long long)n);
}

/* argv for `cuvil worker` with extra flags (NULL-terminated, at most 6). */
static void worker_argv(fx *f, char **argv, const char *const *extra)
{
    const char *base[] = {f->bin, "worker", "--queue", f->queue_url, "--trees", f->trees,
                          "--scratch", f->scratch, "--cache", f->cache, "--remote-cache", "",
                          "--poll-ms", "100", "--allow-test-faults"};
    int n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        argv[n++] = (char *)base[i];
    for (int i = 0; extra[i]; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
}

static void run_worker(fx *f, const char *fault, const char *const *extra)
{
    char *argv[32];
    worker_argv(f, argv, extra);
    if (fault)
        setenv("CUVIL_TEST_FAULT", fault, 1);
    int rc = cv_run_argv((const char *const *)argv, f->err, NULL);
    unsetenv("CUVIL_TEST_FAULT");
    assert_int_equal(rc, 0);
}

/* A worker that leases d_flaky, hangs in it and is killed: its lease
 * expires and the job runs again. */
static void lose_a_worker(fx *f)
{
    char *argv[32];
    const char *extra[] = {"--max-jobs", "1", "--lease", "1", NULL};
    worker_argv(f, argv, extra);
    setenv("CUVIL_TEST_FAULT", "hang", 1);
    cv_child w;
    assert_int_equal(cv_child_spawn(&w, argv), 0);
    unsetenv("CUVIL_TEST_FAULT");
    wait_for(f, offsetof(cv_queue_stats, leased), 1);
    usleep(300000);
    int status;
    assert_int_equal(cv_child_stop_all(&w, 1, SIGKILL, &status), 0);
    usleep(1500000);   /* past the 1 s lease */
}

static json_t *group_of(json_t *report, const char *cls, const char *model)
{
    json_t *pats = json_object_get(report, "patterns");
    for (size_t i = 0; i < json_array_size(pats); i++) {
        json_t *g = json_array_get(pats, i), *models = json_object_get(g, "models");
        if (strcmp(json_string_value(json_object_get(g, "class")), cls) == 0 &&
            json_array_size(models) == 1 &&
            strstr(json_string_value(json_array_get(models, 0)), model))
            return g;
    }
    char *text = json_dumps(report, JSON_INDENT(1));
    fail_msg("no %s group for %s in\n%s", cls, model, text);
    free(text);
    return NULL;
}

static void check_report(fx *f)
{
    const char *argv[] = {f->bin, "failures", "--state", f->state, "--json", NULL};
    json_t *r = run_json(argv, f->err, 0);
    assert_int_equal(json_integer_value(json_object_get(r, "patternCount")), MODELS);
    assert_int_equal(json_integer_value(json_object_get(r, "broken")), MODELS);
    assert_string_equal(json_string_value(json_object_get(group_of(r, "ice", "a_crash"),
                                                          "pattern")), "ice CV9301");
    assert_string_equal(json_string_value(json_object_get(group_of(r, "timeout", "b_hang"),
                                                          "pattern")), "timeout CV9303");
    const char *oom = json_string_value(json_object_get(group_of(r, "oom", "c_oom"), "pattern"));
    assert_true(strcmp(oom, "oom CV9002") == 0 || strcmp(oom, "oom CV9305") == 0);
    assert_string_equal(json_string_value(json_object_get(group_of(r, "flaky", "d_flaky"),
                                                          "pattern")), "flaky");
    assert_string_equal(json_string_value(json_object_get(group_of(r, "infra", "e_infra"),
                                                          "pattern")), "infra CV9208");
    json_decref(r);
    /* the trend over this one revision, in text */
    const char *trend[] = {f->bin, "failures", "--state", f->state, "--since", f->hex, NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(trend, f->err, &out), 0);
    assert_non_null(strstr(out, "ice CV9301"));
    assert_non_null(strstr(out, "(jobs broken)"));
    free(out);
}

static void test_faults(void **state)
{
    (void)state;
    fx f = {.bin = cuvil_bin()};
    if (!f.bin) {
        skip();
        return;
    }
    f.dir = cv_tmpdir_make("failures-faults");
    f.repo = cv_tmpdir_path(f.dir, "repo");
    f.state = cv_tmpdir_path(f.dir, "state");
    f.cache = cv_tmpdir_path(f.dir, "cache");
    f.scratch = cv_tmpdir_path(f.dir, "scratch");
    f.err = cv_tmpdir_path(f.dir, "stderr.txt");
    f.trees = cv_tmpdir_path(f.state, "trees");
    char *qdb = cv_tmpdir_path(f.state, "queue.db");
    f.queue_url = malloc(strlen(qdb) + 8);
    sprintf(f.queue_url, "sqlite:%s", qdb);
    free(qdb);
    assert_int_equal(mkdir(f.scratch, 0755), 0);
    make_repo(&f);

    char *ctl_argv[] = {(char *)f.bin, "controller", f.repo, "--once", "--state", f.state,
                        "--cache", f.cache, NULL};
    cv_child ctl;
    assert_int_equal(cv_child_spawn(&ctl, ctl_argv), 0);
    wait_for(&f, offsetof(cv_queue_stats, queued), MODELS);
    char gone[2048];
    snprintf(gone, sizeof gone, "%s/%s/models/e_infra.cuir", f.trees, f.hex);
    assert_int_equal(unlink(gone), 0);

    const char *one[] = {"--max-jobs", "1", NULL};
    const char *hang[] = {"--max-jobs", "1", "--timeout", "1s", NULL};
    const char *oom[] = {"--max-jobs", "1", "--memory-limit", "256Mi", NULL};
    const char *rest[] = {"--once", NULL};
    run_worker(&f, "segv", one);
    run_worker(&f, "hang", hang);
    run_worker(&f, "oom", oom);
    lose_a_worker(&f);
    run_worker(&f, NULL, rest);

    /* the controller records the five results and leaves (exit 1: failures) */
    const char *line;
    bool summary = false;
    while (!summary && (line = cv_child_line(&ctl, WAIT_MS)))
        summary = strncmp(line, "failed ", 7) == 0;
    assert_true(summary);
    int status;
    cv_child_stop_all(&ctl, 1, 0, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    check_report(&f);

    free(f.queue_url);
    free(f.repo);
    free(f.state);
    free(f.cache);
    free(f.scratch);
    free(f.err);
    free(f.trees);
    cv_tmpdir_remove(f.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
