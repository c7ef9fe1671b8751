/* The worker loop (worker/loop.c, sandbox.c, job.c) against a real SQLite
 * queue file, a real cache directory and real child processes: every
 * result status, a worker killed with SIGKILL mid-compile, and a graceful
 * stop on SIGTERM. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "queue/queue.h"
#include "worker/internal.h"
#include "tests/support/worker_testlib.h"
#include "tests/support/pyrun.h"

static char *g_dir;      /* scratch for everything */
static char *g_models;   /* the "checkout": g_dir/repo with models/ inside */
static int g_case;       /* numbering queues and caches */

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("worker-loop");
    if (!g_dir)
        return -1;
    g_models = cv_tmpdir_path(g_dir, "repo");
    mkdir(g_models, 0755);
    free(twu_model_dir(g_models, "models", "tiny.cvl.py", "1.0", NULL, 0.0f));
    const char *bad = "import cuvil as cvl\n\n@cvl.model(input_shapes=[(\"N\", 8)])\n"
                      "def bad(x):\n    return cvl.relu(x, y)\n";
    char *mdir = cv_tmpdir_path(g_models, "models");
    int rc = cv_tmpdir_write(mdir, "bad.cvl.py", bad, strlen(bad));
    free(mdir);
    return rc;
}

static int group_teardown(void **state)
{
    (void)state;
    free(g_models);
    cv_tmpdir_remove(g_dir);
    return 0;
}

/* One test's queue and cache. */
typedef struct fixture {
    char *queue_url, *cache_dir;
    cv_queue *q;
} fixture;

static void fixture_open(fixture *f)
{
    char name[64];
    snprintf(name, sizeof name, "q%d.db", ++g_case);
    char *qpath = cv_tmpdir_path(g_dir, name);
    f->queue_url = malloc(strlen(qpath) + 8);
    sprintf(f->queue_url, "sqlite:%s", qpath);
    free(qpath);
    snprintf(name, sizeof name, "cache%d", g_case);
    f->cache_dir = cv_tmpdir_path(g_dir, name);
    assert_int_equal(cv_queue_open(f->queue_url, NULL, &f->q, NULL), 0);
}

static void fixture_close(fixture *f)
{
    cv_queue_close(f->q);
    free(f->queue_url);
    free(f->cache_dir);
}

static void enqueue(fixture *f, const char *id, const char *model, const char *digest_of)
{
    char *path = cv_tmpdir_path(g_models, digest_of ? digest_of : model);
    cv_digest dg;
    assert_int_equal(cv_cache_hash_file(path, &dg, NULL, NULL, NULL), 0);
    free(path);
    cv_job_msg j = {.job_id = (char *)id, .revision = "main@sha1:0000", .pipeline = "p",
                    .model_path = (char *)model, .target = "x86_64",
                    .precision = CV_PRECISION_FP32, .opt_level = CV_OPT_O0, .attempt = 1};
    cv_cache_digest_hex(&dg, j.model_digest);
    cv_digest key;
    cv_cache_sha256(id, strlen(id), &key);
    cv_cache_digest_hex(&key, j.l2_key);
    char *msg;
    size_t len;
    assert_int_equal(cv_job_msg_encode(&j, &msg, &len, NULL), 0);
    assert_int_equal(cv_queue_enqueue(f->q, msg, len, NULL, NULL), 0);
    free(msg);
}

static cv_worker_opts worker_opts(const fixture *f)
{
    return (cv_worker_opts){.queue_url = f->queue_url, .cache_dir = f->cache_dir,
                            .remote_cache = "", .models_dir = g_models, .scratch_dir = g_dir,
                            .lease_s = 30, .poll_ms = 10, .job_timeout_ms = 60000,
                            .once = true, .allow_test_faults = true};
}

static void run_worker(const cv_worker_opts *o, cv_worker_stats *st)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_worker_run(o, st, &d);
    if (rc)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    assert_int_equal(rc, 0);
}

/* Every result in the queue, decoded. */
typedef struct results {
    cv_result_msg m[16];
    int attempts[16];
    int n;
} results;

static void poll_results(fixture *f, results *r)
{
    cv_queue_result *qr = NULL;
    int n = 0;
    assert_int_equal(cv_queue_poll_results(f->q, 0, 16, &qr, &n, NULL), 0);
    r->n = n;
    for (int i = 0; i < n; i++) {
        cv_result_msg_init(&r->m[i]);
        assert_int_equal(cv_result_msg_decode(qr[i].msg, qr[i].msg_len, "r", &r->m[i], NULL), 0);
        r->attempts[i] = qr[i].attempts;
    }
    cv_queue_results_free(qr, n);
}

static void results_free(results *r)
{
    for (int i = 0; i < r->n; i++)
        cv_result_msg_free(&r->m[i]);
}

static const cv_result_msg *find(const results *r, const char *id)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->m[i].job_id, id) == 0)
            return &r->m[i];
    fail_msg("no result for %s", id);
    return NULL;
}

static bool has_code(const cv_result_msg *m, int code)
{
    for (int i = 0; i < m->diags.n; i++)
        if (m->diags.v[i].code == code)
            return true;
    return false;
}

/* A job under one test fault; returns its single result. */
static void one_fault(const char *fault, cv_worker_opts *o, fixture *f, results *r)
{
    enqueue(f, fault, "models/tiny.cvl.py", NULL);
    setenv("CUVIL_TEST_FAULT", fault, 1);
    cv_worker_stats st;
    run_worker(o, &st);
    unsetenv("CUVIL_TEST_FAULT");
    assert_int_equal(st.jobs, 1);
    poll_results(f, r);
    assert_int_equal(r->n, 1);
    assert_string_equal(r->m[0].job_id, fault);
    assert_string_equal(r->m[0].artifact_manifest, "");
}

/* ------------------------------------------------------------------ tests */

/* The files a compile child stored unsynced are synced by the worker in
 * the background (a forked process, or with self_argv a fresh image of
 * the worker: `cuvil worker --sync-child LIST`); one that cannot be synced
 * fails the sync, so the job is not reported as done (the loop fails it as
 * infrastructure trouble). */
static void syncer_case(const char *name, char *const *self_argv)
{
    char *dir = cv_tmpdir_path(g_dir, name);
    assert_int_equal(mkdir(dir, 0755), 0);
    cv_wk_sync s;
    assert_int_equal(cv_wk_sync_start(&s, dir, self_argv), 0); /* no list: nothing to do */
    assert_int_equal(s.error[0], 0);
    char *a = cv_tmpdir_path(dir, "a"), *b = cv_tmpdir_path(dir, "b");
    assert_int_equal(cv_tmpdir_write(dir, "a", "aaa", 3), 0);
    assert_int_equal(cv_tmpdir_write(dir, "b", "bbb", 3), 0);
    char list[2 * 4096 + 32], moved[4200];
    snprintf(moved, sizeof moved, "%s.unsynced", dir);
    snprintf(list, sizeof list, "%s\n%s\n%s/gone\n", a, b, dir);
    assert_int_equal(cv_tmpdir_write(dir, CV_WK_UNSYNCED, list, strlen(list)), 0);
    assert_int_equal(cv_wk_sync_start(&s, dir, self_argv), 1);
    assert_int_equal(s.n, 3);
    assert_int_equal(access(moved, F_OK) == 0, self_argv != NULL);
    assert_int_equal(cv_wk_sync_finish(&s), 0); /* a file gone meanwhile needs nothing */
    assert_int_not_equal(access(moved, F_OK), 0);
    snprintf(list, sizeof list, "%s\n/proc/version\n", a); /* /proc refuses fsync */
    assert_int_equal(cv_tmpdir_write(dir, CV_WK_UNSYNCED, list, strlen(list)), 0);
    assert_int_equal(cv_wk_sync_start(&s, dir, self_argv), 1);
    assert_int_equal(cv_wk_sync_finish(&s), -1);
    assert_non_null(strstr(s.error, "sync"));
    free(a);
    free(b);
    free(dir);
}

static void test_syncer(void **state)
{
    (void)state;
    syncer_case("syncer", NULL);
    const char *bin = getenv("CUVIL_BIN");
    if (bin && *bin) {
        char *const self[] = {(char *)bin, "worker", NULL};
        syncer_case("syncer-exec", self);
    }
}

static void test_ok_and_failed(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    enqueue(&f, "good", "models/tiny.cvl.py", NULL);
    enqueue(&f, "bad", "models/bad.cvl.py", NULL);
    enqueue(&f, "again", "models/tiny.cvl.py", NULL);
    cv_worker_opts o = worker_opts(&f);
    cv_worker_stats st;
    run_worker(&o, &st);
    assert_int_equal(st.jobs, 3);
    assert_int_equal(st.by_status[CV_RESULT_OK], 2);
    assert_int_equal(st.by_status[CV_RESULT_FAILED], 1);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 3);
    const cv_result_msg *good = find(&r, "good"), *bad = find(&r, "bad"),
                        *again = find(&r, "again");
    assert_int_equal(good->status, CV_RESULT_OK);
    assert_int_equal(good->l1, CV_CACHE_MISS);
    assert_int_equal(good->l2, CV_CACHE_MISS);
    assert_int_equal(again->status, CV_RESULT_OK);
    assert_int_equal(again->l1, CV_CACHE_HIT);
    assert_int_equal(again->l2, CV_CACHE_HIT);
    assert_string_equal(good->artifact_manifest, again->artifact_manifest);
    /* why each miss missed, for the dashboard: nothing like it was stored */
    assert_string_equal(good->miss, "new");
    assert_non_null(good->miss_reason);
    assert_null(again->miss);
    assert_null(bad->miss);
    /* The artifact is in the cache, listed by its manifest. */
    cv_cache_options co = {.dir = f.cache_dir, .remote = "", .ignore_env = true};
    cv_cache *c;
    assert_int_equal(cv_cache_open(&co, &c, NULL), 0);
    cv_digest dg;
    void *list;
    size_t len;
    assert_int_equal(cv_cache_digest_parse(good->artifact_manifest, &dg), 0);
    assert_int_equal(cv_cache_get_blob(c, &dg, &list, &len, NULL, NULL), 1);
    assert_non_null(strstr(list, "tiny.o"));
    free(list);
    cv_cache_close(c);
    /* A model error is a result with the front end's diagnostics. */
    assert_int_equal(bad->status, CV_RESULT_FAILED);
    assert_true(bad->diags.n > 0);
    assert_true(bad->diags.v[0].code < 9000);
    assert_string_equal(bad->diags.v[0].span.file, "models/bad.cvl.py");
    results_free(&r);
    fixture_close(&f);
}

static void test_crash_is_ice(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cv_worker_opts o = worker_opts(&f);
    results r;
    one_fault("segv", &o, &f, &r);
    assert_int_equal(r.m[0].status, CV_RESULT_ICE);
    assert_true(has_code(&r.m[0], 9301));
    assert_non_null(strstr(r.m[0].diags.v[0].msg, "signal 11"));
    results_free(&r);
    fixture_close(&f);
}

static void test_timeout(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cv_worker_opts o = worker_opts(&f);
    o.job_timeout_ms = 400;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    results r;
    one_fault("hang", &o, &f, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(r.m[0].status, CV_RESULT_TIMEOUT);
    assert_true(has_code(&r.m[0], 9303));
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    results_free(&r);
    fixture_close(&f);
}

static void test_oom(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cv_worker_opts o = worker_opts(&f);
    o.memory_limit = (uint64_t)256 << 20;
    results r;
    one_fault("oom", &o, &f, &r);
    assert_int_equal(r.m[0].status, CV_RESULT_OOM);
    assert_true(has_code(&r.m[0], 9305) || has_code(&r.m[0], 9002));
    results_free(&r);
    fixture_close(&f);
}

/* Kills with SIGKILL each compile child the worker in this process
 * starts, `left` of them, as an operator's kill -9 would. */
typedef struct killer {
    pthread_t t;
    atomic_int left;
} killer;

static void *kill_children(void *arg)
{
    killer *k = arg;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    for (int i = 0; i < 3000 && atomic_load(&k->left) > 0; i++) {   /* 30 s */
        usleep(10000);
        FILE *f = fopen(path, "r");
        int pid = 0;
        if (f && fscanf(f, "%d", &pid) == 1 && pid > 0) {
            usleep(200000);             /* well into the compile */
            if (kill(pid, SIGKILL) == 0)
                atomic_fetch_sub(&k->left, 1);
            while (kill(pid, 0) == 0)   /* until the worker has reaped it */
                usleep(10000);
        }
        if (f)
            fclose(f);
    }
    return NULL;
}

/* A compile killed from outside (kill -9, no allocation failure, no
 * timeout) is the farm's trouble, not the model's: infra, retried. */
static void test_external_kill_is_infra(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    cv_worker_opts o = worker_opts(&f);
    o.memory_limit = (uint64_t)256 << 20;
    o.queue_opts.max_attempts = 2;
    enqueue(&f, "killed", "models/tiny.cvl.py", NULL);
    setenv("CUVIL_TEST_FAULT", "hang", 1);
    killer k = {.left = 2};
    assert_int_equal(pthread_create(&k.t, NULL, kill_children, &k), 0);
    cv_worker_stats st;
    run_worker(&o, &st);
    pthread_join(k.t, NULL);
    unsetenv("CUVIL_TEST_FAULT");
    assert_int_equal(atomic_load(&k.left), 0);
    assert_int_equal(st.jobs, 2);                       /* retried once */
    assert_int_equal(st.by_status[CV_RESULT_INFRA], 2);
    assert_int_equal(st.by_status[CV_RESULT_OOM], 0);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.m[0].status, CV_RESULT_INFRA);
    assert_non_null(strstr(r.m[0].diags.v[0].msg, "SIGKILL"));
    results_free(&r);
    fixture_close(&f);
}

/* Farm trouble is retried, then dead-lettered with the reason. */
static void test_infra(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    enqueue(&f, "missing", "models/nothing.cvl.py", "models/tiny.cvl.py");
    enqueue(&f, "changed", "models/bad.cvl.py", "models/tiny.cvl.py");
    cv_worker_opts o = worker_opts(&f);
    o.queue_opts.max_attempts = 2;
    cv_worker_stats st;
    run_worker(&o, &st);
    assert_int_equal(st.jobs, 4);
    assert_int_equal(st.by_status[CV_RESULT_INFRA], 4);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 2);
    const cv_result_msg *m = find(&r, "missing"), *c = find(&r, "changed");
    assert_int_equal(m->status, CV_RESULT_INFRA);
    assert_int_equal(c->status, CV_RESULT_INFRA);
    assert_non_null(strstr(m->diags.v[0].msg, "not found"));
    assert_non_null(strstr(c->diags.v[0].msg, "digest"));
    results_free(&r);
    fixture_close(&f);
}

/* ------------------------------------------- processes that die or stop */

static pid_t fork_worker(const cv_worker_opts *o, const char *fault)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (fault)
            setenv("CUVIL_TEST_FAULT", fault, 1);
        cv_worker_handle_signals();
        cv_worker_stats st;
        cv_diag d;
        cv_diag_init(&d);
        int rc = cv_worker_run(o, &st, &d);
        cv_diag_print(&d, stderr, false);
        _exit(rc == 0 ? 0 : 1);
    }
    return pid;
}

static void wait_leased(fixture *f)
{
    for (int i = 0; i < 1000; i++) {
        cv_queue_stats s;
        assert_int_equal(cv_queue_stats_get(f->q, &s, NULL), 0);
        if (s.leased > 0)
            return;
        usleep(10000);
    }
    fail_msg("no worker leased the job");
}

/* The one worker's presence record once it reports job_id (NULL: the
 * record is gone); fails after 10 s. */
static void wait_presence(fixture *f, const char *job_id)
{
    for (int i = 0; i < 1000; i++) {
        cv_queue_worker_info w[2];
        int n = 0;
        assert_int_equal(cv_queue_workers_list(f->q, w, 2, &n, NULL), 1);
        if (job_id ? n == 1 && strcmp(w[0].job_id, job_id) == 0 : n == 0)
            return;
        usleep(10000);
    }
    fail_msg("the worker's presence never showed job %s", job_id ? job_id : "(gone)");
}

static uint64_t action_entries(const char *dir)
{
    cv_cache_options co = {.dir = dir, .remote = "", .ignore_env = true};
    cv_cache *c;
    cv_cache_stats s;
    assert_int_equal(cv_cache_open(&co, &c, NULL), 0);
    assert_int_equal(cv_cache_stats_get(c, &s, NULL), 0);
    cv_cache_close(c);
    return s.ac_entries;
}

static void test_killed_worker(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    enqueue(&f, "job", "models/tiny.cvl.py", NULL);
    cv_worker_opts o = worker_opts(&f);
    o.lease_s = 1;
    o.once = false;
    pid_t a = fork_worker(&o, "hang");
    wait_leased(&f);
    usleep(300000);
    kill(a, SIGKILL);
    int status;
    assert_int_equal(waitpid(a, &status, 0), a);
    assert_true(WIFSIGNALED(status));
    /* A second worker gets the job once the lease expires. */
    o.once = true;
    o.poll_ms = 5000;
    o.max_jobs = 1;
    cv_worker_stats st;
    run_worker(&o, &st);
    assert_int_equal(st.jobs, 1);
    assert_int_equal(st.by_status[CV_RESULT_OK], 1);
    o.poll_ms = 10;
    o.max_jobs = 0;
    run_worker(&o, &st);         /* nothing left to run */
    assert_int_equal(st.jobs, 0);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.m[0].status, CV_RESULT_OK);
    assert_int_equal(r.attempts[0], 2);
    cv_queue_stats qs;
    assert_int_equal(cv_queue_stats_get(f.q, &qs, NULL), 0);
    assert_int_equal(qs.expired, 1);
    assert_int_equal(qs.completed, 1);
    /* One artifact: deps, L1, L2, code and code-of link entries, nothing
     * twice. */
    assert_int_equal(action_entries(f.cache_dir), 5);
    /* The killed worker's job directory was cleaned up by the next one. */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "cuvil-job-%ld-", (long)a);
    DIR *dir = opendir(g_dir);
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        assert_true(strncmp(e->d_name, prefix, strlen(prefix)) != 0);
    closedir(dir);
    results_free(&r);
    fixture_close(&f);
}

/* SIGTERM while a job runs: it may finish within the grace period, else
 * it is killed and handed back unchanged; the worker then exits. */
static void test_sigterm(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f);
    enqueue(&f, "first", "models/tiny.cvl.py", NULL);
    enqueue(&f, "second", "models/tiny.cvl.py", NULL);
    cv_worker_opts o = worker_opts(&f);
    o.once = false;
    o.grace_ms = 200;
    pid_t a = fork_worker(&o, "hang");
    wait_leased(&f);
    wait_presence(&f, "first");    /* busy, reporting its job */
    kill(a, SIGTERM);
    int status;
    assert_int_equal(waitpid(a, &status, 0), a);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    wait_presence(&f, NULL);       /* a clean stop removes the record */
    cv_queue_stats qs;
    assert_int_equal(cv_queue_stats_get(f.q, &qs, NULL), 0);
    assert_int_equal(qs.queued, 2);
    assert_int_equal(qs.leased, 0);
    /* A job that finishes within the grace period is completed. */
    o.grace_ms = 60000;
    pid_t b = fork_worker(&o, NULL);
    wait_leased(&f);
    kill(b, SIGTERM);
    assert_int_equal(waitpid(b, &status, 0), b);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.m[0].status, CV_RESULT_OK);
    assert_int_equal(cv_queue_stats_get(f.q, &qs, NULL), 0);
    assert_int_equal(qs.queued, 1);         /* the worker stopped after its job */
    results_free(&r);
    o.once = true;
    cv_worker_stats st;
    run_worker(&o, &st);
    assert_int_equal(st.jobs, 1);
    poll_results(&f, &r);
    assert_int_equal(r.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.m[i].status, CV_RESULT_OK);
        assert_int_equal(r.attempts[i], 1); /* the released lease did not count */
    }
    results_free(&r);
    fixture_close(&f);
}

/* `cuvil worker` itself, when make unit-test says where the binary is. */
static void test_cli(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin) {
        skip();
        return;
    }
    fixture f;
    fixture_open(&f);
    enqueue(&f, "cli", "models/tiny.cvl.py", NULL);
    const char *usage[] = {bin, "worker", "--once", NULL};
    assert_int_equal(cv_run_argv(usage, "/dev/null", NULL), 2);
    const char *argv[] = {bin, "worker", "--queue", f.queue_url, "--cache", f.cache_dir,
                          "--models", g_models, "--scratch", g_dir, "--once", "--poll-ms",
                          "10", "--timeout", "60s", "--memory-limit", "4Gi", NULL};
    assert_int_equal(cv_run_argv(argv, "/dev/null", NULL), 0);
    results r;
    poll_results(&f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.m[0].status, CV_RESULT_OK);
    results_free(&r);
    fixture_close(&f);
}

/* A program run in place of the body: its report pipe is fd
 * CV_WORKER_REPORT_FD, and it runs although another thread of this
 * process holds a lock for the whole time (a forked body that took the
 * lock would never return). */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holding, release_lock;

static void *hold_lock(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held_lock);
    atomic_store(&holding, 1);
    while (!atomic_load(&release_lock))
        usleep(1000);
    pthread_mutex_unlock(&held_lock);
    return NULL;
}

static void test_exec_child(void **state)
{
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_lock, NULL), 0);
    while (!atomic_load(&holding))
        usleep(1000);
    char *const argv[] = {"sh", "-c", "printf 'report %s' \"$0\" >&3; echo note >&2; exit 7",
                          "x", NULL};
    cv_sb_spec spec = {.timeout_ms = 30000, .exec_path = "/bin/sh", .exec_argv = argv};
    cv_sb_outcome so;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_wk_sandbox_run(&spec, &so, &d), 0);
    atomic_store(&release_lock, 1);
    pthread_join(t, NULL);
    assert_int_equal(so.end, CV_SB_EXITED);
    assert_int_equal(so.code, 7);
    assert_int_equal(so.report_len, strlen("report x"));
    assert_memory_equal(so.report, "report x", so.report_len);
    assert_non_null(strstr(so.err_tail, "note"));
    cv_wk_sandbox_outcome_free(&so);

    char *const missing[] = {"nothing", NULL};   /* cannot run: a plain failed child */
    spec.exec_path = "/nonexistent/program";
    spec.exec_argv = missing;
    assert_int_equal(cv_wk_sandbox_run(&spec, &so, &d), 0);
    assert_int_equal(so.code, 127);
    assert_non_null(strstr(so.err_tail, "cannot run /nonexistent/program"));
    cv_wk_sandbox_outcome_free(&so);
    cv_diag_free(&d);
}

/* The command-line worker runs each job in a fresh image of itself
 * (`--job-child`), which applies the memory limit to itself: a compile
 * that runs out of it is an OOM result, and a crash is an ICE. */
static void test_cli_job_child(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin) {
        skip();
        return;
    }
    static const struct { const char *fault; cv_result_status status; } cases[] = {
        {"oom", CV_RESULT_OOM}, {"segv", CV_RESULT_ICE}, {"none", CV_RESULT_OK}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        fixture_open(&f);
        enqueue(&f, cases[i].fault, "models/tiny.cvl.py", NULL);
        const char *argv[] = {bin, "worker", "--queue", f.queue_url, "--cache", f.cache_dir,
                              "--models", g_models, "--scratch", g_dir, "--once", "--poll-ms",
                              "10", "--timeout", "60s", "--memory-limit", "256Mi",
                              "--allow-test-faults", NULL};
        setenv("CUVIL_TEST_FAULT", cases[i].fault, 1);
        assert_int_equal(cv_run_argv(argv, "/dev/null", NULL), 0);
        unsetenv("CUVIL_TEST_FAULT");
        results r;
        poll_results(&f, &r);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.m[0].status, cases[i].status);
        results_free(&r);
        fixture_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syncer),
        cmocka_unit_test(test_ok_and_failed),
        cmocka_unit_test(test_crash_is_ice),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_external_kill_is_infra),
        cmocka_unit_test(test_infra),
        cmocka_unit_test(test_killed_worker),
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_exec_child),
        cmocka_unit_test(test_cli_job_child),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
