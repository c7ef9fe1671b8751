/* Distributed mode end to end: librdkafka's mock cluster (3 brokers, the
 * real Kafka protocol, $CUVIL_BUILD/tools/kafka-mock), `cuvil controller`
 * and two `cuvil worker` processes meeting through it, and `cuvil cache
 * serve` as the shared remote cache; every process is the sanitized binary
 * ($CUVIL_BIN).
 *
 * Commit 1: both workers take part, every job gets exactly one result, the
 * artifacts are fetchable from the remote cache alone.  Commit 2: worker A
 * is restarted with a compile that hangs and is killed with SIGKILL mid-job;
 * its partitions move to worker B, which redoes the job: nothing is lost and
 * still exactly one result per job. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/fs.h"
#include "controller/controller.h"
#include "tests/support/childproc.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

/* Short group timeouts: the mock's first join waits 3 s for members. */
#define KAFKA_CONF "&session.timeout.ms=4000&heartbeat.interval.ms=300" \
                   "&max.poll.interval.ms=4000&fetch.wait.max.ms=10"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: cuir}\n"
    "spec:\n"
    "  models: [\"models/*.cuir\"]\n"
    "  targets: [x86_64, x86_64-avx2]\n"
    "  precisions: [fp32]\n"
    "  optLevel: O0\n";

typedef struct fx {
    const char *bin;
    char *dir, *repo_dir, *state, *trees, *url, *remote;
    cv_child mock, server;
    pid_t controller, worker_a, worker_b;
    git_repository *repo;
} fx;

/* fork + exec with stdout and stderr appended to log; env "K=V" or NULL. */
static pid_t spawn(const char *const *argv, const char *log, const char *env)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (env)
            putenv((char *)env);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

static pid_t start_worker(fx *f, const char *id, const char *env)
{
    char name[64];
    snprintf(name, sizeof name, "cache-%s", id);
    char *cache = cv_tmpdir_path(f->dir, name);
    snprintf(name, sizeof name, "worker-%s.log", id);
    char *log = cv_tmpdir_path(f->dir, name);
    char *scratch = cv_tmpdir_path(f->dir, "scratch");
    /* the farm's action-cache key pair (made by the test: see keys_made) */
    char *sign = cv_tmpdir_path(f->state, "keys/ac-signing.pem");
    char *verify = cv_tmpdir_path(f->state, "keys/ac-verify.pem");
    const char *argv[] = {f->bin, "worker", "--queue", f->url, "--trees", f->trees,
                          "--cache", cache, "--remote-cache", f->remote, "--scratch", scratch,
                          "--id", id, "--poll-ms", "200", "--lease", "6",
                          "--signing-key", sign, "--verify-key", verify,
                          "--allow-test-faults", "-v", NULL};
    pid_t pid = spawn(argv, log, env);
    free(sign);
    free(verify);
    free(cache);
    free(log);
    free(scratch);
    return pid;
}

/* The revision of commit hex, once every job has a result; fails after
 * timeout_s. */
static void wait_built(fx *f, const char *hex, int timeout_s, cv_rev_summary *out)
{
    char *db_path = cv_tmpdir_path(f->state, "build.db");
    char rev[CV_REVISION_MAX + 1];
    snprintf(rev, sizeof rev, "main@sha1:%s", hex);
    for (int i = 0; i < timeout_s * 5; i++) {
        cv_builddb *db;
        cv_diag d;
        cv_diag_init(&d);
        int found = 0;
        if (access(db_path, F_OK) == 0 && cv_builddb_open(db_path, &db, &d) == 0) {
            found = cv_builddb_revision_summary(db, rev, out, &d);
            cv_builddb_close(db);
        }
        cv_diag_free(&d);
        if (found == 1 && out->jobs && out->pending == 0 &&
            (out->state == CV_REV_SUCCEEDED || out->state == CV_REV_FAILED)) {
            free(db_path);
            return;
        }
        usleep(200000);
    }
    free(db_path);
    /* What each process was doing, for the report. */
    const char *logs[] = {"controller.log", "worker-a.log", "worker-a2.log", "worker-b.log"};
    for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
        char *path = cv_tmpdir_path(f->dir, logs[i]);
        size_t len;
        char *text = cv_tmpdir_read_file(path, &len);
        if (text)
            fprintf(stderr, "--- the end of %s:\n%s\n", logs[i], len > 2000 ? text + len - 2000 : text);
        free(text);
        free(path);
    }
    fail_msg("revision %s was not built in %d s", rev, timeout_s);
}

/* Results recorded per job of the revision: each exactly one execution's. */
static void assert_one_result_per_job(fx *f, const cv_rev_summary *s)
{
    char *db_path = cv_tmpdir_path(f->state, "build.db");
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM results WHERE job_id IN (SELECT job_id FROM jobs WHERE "
             "revision_id=%lld) GROUP BY job_id HAVING COUNT(*) > 1", (long long)s->id);
    const char *code =
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1])\n"
        "print(len(db.execute(sys.argv[2]).fetchall()))\n";
    const char *args[] = {db_path, sql, NULL};
    char *out = NULL;
    assert_int_equal(cv_pyrun(code, args, &out), 0);
    assert_string_equal(out, "0\n");
    free(out);
    free(db_path);
}

/* A small CU-IR model; variant changes its constants (and so its IR). */
static char *tiny_model(int i, char variant)
{
    char *text = malloc(512);
    snprintf(text, 512,
             "cuir 1\n"
             "model @m%d(%%x: f32[N,8]) -> (f32[N,8]) {\n"
             "  param %%b: f32[8] = dense(%d, 1, 2, 3, 4, 5, 6, %d)\n"
             "  %%0 = add(%%x, %%b) : f32[N,8]\n"
             "  %%1 = relu(%%0) : f32[N,8]\n"
             "  return %%1\n"
             "}\n", i, i, variant);
    return text;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->bin = getenv("CUVIL_BIN");
    const char *build = getenv("CUVIL_BUILD");
    char tool[4096];
    snprintf(tool, sizeof tool, "%s/tools/kafka-mock", build ? build : "build");
    if (!f->bin || access(f->bin, X_OK) != 0 || access(tool, X_OK) != 0) {
        *state = f;
        return 0;   /* the test skips */
    }
    f->dir = cv_tmpdir_make("farm-kafka");
    f->repo_dir = cv_tmpdir_path(f->dir, "repo");
    f->state = cv_tmpdir_path(f->dir, "state");
    f->trees = cv_tmpdir_path(f->state, "trees");
    char *const margv[] = {tool, "--exit-on-stdin-eof", "--brokers", "3", "--partitions", "6",
                           "farm", NULL};
    assert_int_equal(cv_child_spawn(&f->mock, margv), 0);
    const char *line = cv_child_line(&f->mock, 10000);
    assert_non_null(line);
    size_t n = strlen(line) + 256;
    f->url = malloc(n);
    snprintf(f->url, n, "kafka://%s?topic_prefix=farm%s", line, KAFKA_CONF);

    int port = free_port();
    char listen[64], *store = cv_tmpdir_path(f->dir, "server");
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    char *const sargv[] = {(char *)f->bin, "cache", "serve", "--listen", listen, "--dir", store,
                           NULL};
    assert_int_equal(cv_child_spawn(&f->server, sargv), 0);
    free(store);
    f->remote = malloc(64);
    snprintf(f->remote, 64, "http://127.0.0.1:%d", port);
    f->repo = trepo_init(f->repo_dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pid_t pids[] = {f->worker_a, f->worker_b, f->controller};
    for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    if (f->server.pid > 0)
        cv_child_stop_all(&f->server, 1, SIGTERM, NULL);
    if (f->mock.pid > 0)
        cv_child_stop_all(&f->mock, 1, SIGTERM, NULL);
    if (f->repo)
        trepo_free(f->repo);
    if (f->dir)
        cv_tmpdir_remove(f->dir);
    free(f->repo_dir);
    free(f->state);
    free(f->trees);
    free(f->url);
    free(f->remote);
    free(f);
    return 0;
}

static int worker_jobs(fx *f, const char *id)
{
    char name[64];
    snprintf(name, sizeof name, "worker-%s.log", id);
    char *log = cv_tmpdir_path(f->dir, name);
    size_t len;
    char *text = cv_tmpdir_read_file(log, &len);
    free(log);
    const char *at = text ? strstr(text, "cuvil worker: ") : NULL;
    int jobs = at ? atoi(at + strlen("cuvil worker: ")) : -1;
    free(text);
    return jobs;
}

static void test_controller_two_workers_and_a_kill(void **state)
{
    fx *f = *state;
    if (!f->dir) {
        skip();
        return;
    }
    /* six small models x two targets at -O0: cheap compiles, twelve jobs
     * spread over six partitions */
    char *models[6];
    trepo_file first[7] = {{"cuvil/p.yaml", PIPELINE, 0}};
    char paths[6][32];
    for (int i = 0; i < 6; i++) {
        models[i] = tiny_model(i, 'a');
        snprintf(paths[i], sizeof paths[i], "models/m%d.cuir", i);
        first[i + 1] = (trepo_file){paths[i], models[i], 0};
    }
    char hex1[41];
    trepo_commit(f->repo, "six models", first, 7, hex1);

    char *ctl_cache = cv_tmpdir_path(f->dir, "cache-controller");
    char *ctl_log = cv_tmpdir_path(f->dir, "controller.log");
    /* Signed action entries: the pair is made before anyone starts, in
     * the state directory where the controller (and `artifacts get`) find
     * it; the workers are given it. */
    char *keys = cv_tmpdir_path(f->state, "keys");
    char *sign = cv_tmpdir_path(keys, "ac-signing.pem"), *verify = cv_tmpdir_path(keys, "ac-verify.pem");
    cv_diag kd;
    cv_diag_init(&kd);
    assert_int_equal(cv_fs_mkdirs(keys, 0700), 0);
    assert_int_equal(cv_cache_ac_keygen(sign, verify, &kd), 0);
    cv_diag_free(&kd);
    free(keys);
    free(sign);
    free(verify);
    const char *cargv[] = {f->bin, "controller", f->repo_dir, "--state", f->state, "--queue",
                           f->url, "--cache", ctl_cache, "--interval", "1s", "--remote-cache",
                           f->remote, NULL};
    f->controller = spawn(cargv, ctl_log, NULL);
    f->worker_a = start_worker(f, "a", NULL);
    f->worker_b = start_worker(f, "b", NULL);

    cv_rev_summary s;
    wait_built(f, hex1, 120, &s);
    if (s.ok != 12) {   /* say why before failing */
        const char *st[] = {f->bin, "status", "--state", f->state, NULL};
        char *text = NULL;
        cv_run_argv(st, "/dev/null", &text);
        fprintf(stderr, "%s", text ? text : "");
        free(text);
    }
    assert_int_equal(s.jobs, 12);
    assert_int_equal(s.ok, 12);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_one_result_per_job(f, &s);
    kill(f->worker_a, SIGTERM);
    assert_int_equal(waitpid(f->worker_a, NULL, 0), f->worker_a);
    f->worker_a = 0;
    int a_jobs = worker_jobs(f, "a");
    assert_true(a_jobs > 0);   /* both took part (B is still running) */

    /* fetchable from the shared cache alone (an empty local cache) */
    char *empty = cv_tmpdir_path(f->dir, "cache-empty"), *out = cv_tmpdir_path(f->dir, "art");
    const char *get[] = {f->bin, "artifacts", "get", hex1, "models/m5.cuir", "x86_64",
                         "-o", out, "--state", f->state, "--cache", empty, "--remote-cache",
                         f->remote, NULL};
    char *err = cv_tmpdir_path(f->dir, "stderr.txt");
    assert_int_equal(cv_run_argv(get, err, NULL), 0);
    char *manifest = cv_tmpdir_path(out, "manifest.json");
    assert_int_equal(access(manifest, F_OK), 0);

    /* Commit 2: A comes back with compiles that hang and joins the group
     * first; the new jobs split between A and B; A is killed mid-job and
     * B redoes its work once A's partitions move to it. */
    f->worker_a = start_worker(f, "a2", "CUVIL_TEST_FAULT=hang");
    sleep(5);
    trepo_file second[3];
    for (int i = 0; i < 3; i++) {
        free(models[i]);
        models[i] = tiny_model(i, 'b');   /* new IR: real compiles */
        second[i] = (trepo_file){paths[i], models[i], 0};
    }
    char hex2[41];
    trepo_commit(f->repo, "three models changed", second, 3, hex2);
    /* the controller polls every second; A takes a job and hangs */
    char *a2_log = cv_tmpdir_path(f->dir, "worker-a2.log");
    bool a_compiling = false;
    for (int i = 0; i < 100 && !a_compiling; i++) {
        size_t len;
        char *text = cv_tmpdir_read_file(a2_log, &len);
        a_compiling = text && strstr(text, ": compiling ");
        free(text);
        if (!a_compiling)
            usleep(200000);
    }
    free(a2_log);
    assert_true(a_compiling);
    kill(f->worker_a, SIGKILL);
    waitpid(f->worker_a, NULL, 0);
    f->worker_a = 0;
    wait_built(f, hex2, 120, &s);
    assert_int_equal(s.state, CV_REV_SUCCEEDED);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.failed, 0);
    assert_one_result_per_job(f, &s);

    kill(f->worker_b, SIGTERM);
    kill(f->controller, SIGTERM);
    int st;
    assert_int_equal(waitpid(f->controller, &st, 0), f->controller);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        size_t len;
        char *text = cv_tmpdir_read_file(ctl_log, &len);
        fail_msg("the controller ended with status %#x after SIGTERM; its log ends:\n%s", st,
                 text ? (len > 1500 ? text + len - 1500 : text) : "(no log)");
    }
    f->controller = 0;
    waitpid(f->worker_b, NULL, 0);
    f->worker_b = 0;
    assert_true(worker_jobs(f, "b") > 0);

    for (int i = 0; i < 6; i++)
        free(models[i]);
    free(ctl_cache);
    free(ctl_log);
    free(empty);
    free(out);
    free(err);
    free(manifest);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_controller_two_workers_and_a_kill, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
