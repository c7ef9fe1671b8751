/* `cuvil farm up --once` end to end through the sanitized binary
 * ($CUVIL_BIN): a git repository made by the test, two CU-IR models from
 * examples/cuir/, real worker processes, a real cache.  Three commits: the
 * first compiles both models, the second only edits a comment (the
 * canonical IR is unchanged, so every job hits), the third breaks a model's
 * declared shape (exit 1). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/npy.h"
#include "controller/controller.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/farm_testlib.h"
#include "tests/support/gitrepo_testlib.h"

/* text with the first occurrence of from replaced by to (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Runs `cuvil farm up`; the summary goes to *out. */
static int farm_up(const char *bin, const char *repo, const char *state, const char *err,
                   char **out)
{
    const char *argv[] = {bin, "farm", "up", repo, "--once", "--workers", "2", "--state", state,
                          NULL};
    return cv_run_argv(argv, err, out);
}

static void assert_line(const char *out, const char *line)
{
    if (!strstr(out, line))
        fail_msg("no line '%s' in:\n%s", line, out);
}

static void artifact(const char *state_dir, const char *hex, const char *model,
                     char manifest[CV_DIGEST_HEX + 1])
{
    char l2[CV_DIGEST_HEX + 1];
    farm_artifact_key(state_dir, hex, model, "fp32", manifest, l2);
}

/* `artifacts get` into a directory where an artifact of the same name was
 * made from another model (mlp's symbol map under residual's name) is
 * refused with CV5035 and leaves it alone; --force replaces it. */
static void check_name_taken(const char *bin, const char *state_dir, const char *rev,
                             const char *err)
{
    char *dir = cv_tmpdir_path(state_dir, "../art3");
    const char *mlp[] = {bin, "artifacts", "get", rev, "models/mlp.cuir", "x86_64-avx2",
                         "-o", dir, "--state", state_dir, NULL};
    assert_int_equal(cv_run_argv(mlp, err, NULL), 0);
    char *from = cv_tmpdir_path(dir, "mlp.cvsym"), *to = cv_tmpdir_path(dir, "residual.cvsym");
    assert_int_equal(rename(from, to), 0);
    size_t n0, n1;
    char *before = cv_tmpdir_read_file(to, &n0);
    const char *get[] = {bin, "artifacts", "get", rev, "models/residual.cuir", "x86_64-avx2",
                         "-o", dir, "--state", state_dir, NULL, NULL};
    assert_int_equal(cv_run_argv(get, err, NULL), 1);
    char *e = cv_tmpdir_read_file(err, &n1);
    assert_non_null(strstr(e, "CV5035"));
    free(e);
    char *kept = cv_tmpdir_read_file(to, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, kept, n0);
    free(kept);
    get[10] = "--force";
    assert_int_equal(cv_run_argv(get, err, NULL), 0);
    char *replaced = cv_tmpdir_read_file(to, &n1);
    assert_true(n0 != n1 || memcmp(before, replaced, n0) != 0);
    free(replaced);
    free(before);
    free(from);
    free(to);
    free(dir);
}

/* `cuvil status --json` of the failed head, and `cuvil artifacts get` of
 * the first revision's model by commit prefix (the same bytes as by the
 * full revision name). */
static void check_status_and_artifacts(const char *bin, const char *state_dir, const char *hex1,
                                       const char *err)
{
    const char *st_argv[] = {bin, "status", "--state", state_dir, "--json", NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(st_argv, err, &out), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *rev = json_object_get(j, "revision");
    assert_string_equal(json_string_value(json_object_get(rev, "state")), "failed");
    assert_int_equal(json_integer_value(json_object_get(rev, "failed")), 1);
    assert_non_null(strstr(json_string_value(json_object_get(j, "lastSucceededRevision")), "main@"));
    assert_false(json_is_true(json_object_get(json_object_get(j, "controller"), "alive")));
    json_t *jobs = json_object_get(rev, "jobsList");
    int failed_with_diags = 0;
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *job = json_array_get(jobs, i);
        if (strcmp(json_string_value(json_object_get(job, "state")), "failed") == 0 &&
            json_array_size(json_object_get(job, "diagnostics")) > 0)
            failed_with_diags++;
    }
    assert_int_equal(failed_with_diags, 1);
    json_decref(j);
    free(out);

    char prefix[8], full[CV_REVISION_MAX + 1];
    snprintf(prefix, sizeof prefix, "%.7s", hex1);
    snprintf(full, sizeof full, "main@sha1:%s", hex1);
    char *dirs[2] = {cv_tmpdir_path(state_dir, "../art1"), cv_tmpdir_path(state_dir, "../art2")};
    const char *names[2] = {prefix, full};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {bin, "artifacts", "get", names[i], "models/residual.cuir",
                              "x86_64-avx2", "-o", dirs[i], "--state", state_dir, NULL};
        assert_int_equal(cv_run_argv(argv, err, NULL), 0);
    }
    size_t l1, l2;
    char *p1 = cv_tmpdir_path(dirs[0], "manifest.json"), *p2 = cv_tmpdir_path(dirs[1], "manifest.json");
    char *a = cv_tmpdir_read_file(p1, &l1), *b = cv_tmpdir_read_file(p2, &l2);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(l1, l2);
    assert_memory_equal(a, b, l1);
    assert_non_null(strstr(a, "\"target\""));
    free(a);
    free(b);
    free(p1);
    free(p2);
    check_name_taken(bin, state_dir, prefix, err);
    /* unknown model: a coded error, exit 1 */
    const char *bad[] = {bin, "artifacts", "get", prefix, "models/nope.cuir", "x86_64-avx2",
                         "-o", dirs[0], "--state", state_dir, NULL};
    assert_int_equal(cv_run_argv(bad, err, NULL), 1);
    size_t elen;
    char *e = cv_tmpdir_read_file(err, &elen);
    assert_non_null(strstr(e, "CV6103"));
    free(e);
    free(dirs[0]);
    free(dirs[1]);
}

/* A test's scratch layout, with the cache pointed into it; NULL bin (the
 * test skips) without a sanitized cuvil. */
typedef struct farm_dirs {
    const char *bin;
    char *dir, *repo, *state, *cache, *err;     /* owned */
} farm_dirs;

static bool farm_dirs_make(farm_dirs *f, const char *name, const char *repo_name)
{
    memset(f, 0, sizeof *f);
    f->bin = getenv("CUVIL_BIN");
    if (!f->bin || !*f->bin || access(f->bin, X_OK) != 0)
        return false;
    f->dir = cv_tmpdir_make(name);
    f->repo = cv_tmpdir_path(f->dir, repo_name);
    f->state = cv_tmpdir_path(f->dir, "state");
    f->cache = cv_tmpdir_path(f->dir, "cache");
    f->err = cv_tmpdir_path(f->dir, "stderr.txt");
    setenv("CUVIL_CACHE_DIR", f->cache, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    return true;
}

static void farm_dirs_free(farm_dirs *f)
{
    free(f->err);
    free(f->cache);
    free(f->state);
    free(f->repo);
    cv_tmpdir_remove(f->dir);   /* frees dir */
}

/* `farm up` that must exit 0; on failure its output and stderr are shown. */
static char *farm_up_ok(const farm_dirs *f)
{
    char *out = NULL;
    int rc = farm_up(f->bin, f->repo, f->state, f->err, &out);
    if (rc != 0) {
        size_t len;
        char *e = cv_tmpdir_read_file(f->err, &len);
        fprintf(stderr, "%s%s", out ? out : "", e ? e : "");
        free(e);
    }
    assert_int_equal(rc, 0);
    return out;
}

static void test_three_commits(void **state)
{
    (void)state;
    farm_dirs f;
    if (!farm_dirs_make(&f, "farm", "models-repo")) {
        skip();
        return;
    }
    const char *bin = f.bin, *state_dir = f.state, *err = f.err, *repo_dir = f.repo;
    char *mlp = farm_example("mlp.cuir"), *residual = farm_example("residual.cuir");
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file first[] = {
        {"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
        {"models/mlp.cuir", mlp, 0},
        {"models/residual.cuir", residual, 0},
        {"README.md", "models\n", 0},
    };
    char hex[41];
    trepo_commit(repo, "two models", first, 4, hex);
    char *out = farm_up_ok(&f);
    assert_line(out, "jobs       2\n");
    assert_line(out, "compiled   2\n");
    assert_line(out, "failed     0\n");
    free(out);
    /* Each model got its own compile (different models are never merged). */
    char m1[CV_DIGEST_HEX + 1], m2[CV_DIGEST_HEX + 1];
    artifact(state_dir, hex, "models/mlp.cuir", m1);
    artifact(state_dir, hex, "models/residual.cuir", m2);
    assert_int_equal(strlen(m1), CV_DIGEST_HEX);
    assert_int_equal(strlen(m2), CV_DIGEST_HEX);
    assert_string_not_equal(m1, m2);

    /* A comment does not reach the canonical IR: an L2 hit in the worker. */
    char *mlp2 = replace(mlp, "# ", "# (edited) ");
    const trepo_file second[] = {{"models/mlp.cuir", mlp2, 0}};
    trepo_commit(repo, "comment only", second, 1, NULL);
    assert_int_equal(farm_up(bin, repo_dir, state_dir, err, &out), 0);
    assert_line(out, "cache hits 2 ");
    assert_line(out, "compiled   0\n");
    free(out);

    /* The declared result shape no longer matches the body. */
    char *mlp3 = replace(mlp2, "-> (f32[N,4])", "-> (f32[N,5])");
    const trepo_file third[] = {{"models/mlp.cuir", mlp3, 0}};
    trepo_commit(repo, "broken", third, 1, NULL);
    assert_int_equal(farm_up(bin, repo_dir, state_dir, err, &out), 1);
    assert_line(out, "failed     1\n");
    free(out);

    /* The summary names the failed job and its first error. */
    assert_int_equal(farm_up(bin, repo_dir, state_dir, err, &out), 1);
    assert_line(out, "failed jobs:\n  models/mlp.cuir  x86_64-avx2  fp32  failed\n");
    assert_line(out, "models/mlp.cuir:");
    free(out);
    check_status_and_artifacts(bin, state_dir, hex, err);

    free(mlp3);
    free(mlp2);
    free(mlp);
    free(residual);
    trepo_free(repo);
    farm_dirs_free(&f);
}

/* A Git LFS pointer committed in place of a model fails its job with
 * CV1020 (fetch the object), not a parse error; the farm goes on. */
static void test_lfs_pointer_job(void **state)
{
    (void)state;
    farm_dirs f;
    if (!farm_dirs_make(&f, "farm-lfs", "models-repo")) {
        skip();
        return;
    }
    git_repository *repo = trepo_init(f.repo);
    const trepo_file files[] = {
        {"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
        {"models/net.cuir", "version https://git-lfs.github.com/spec/v1\n"
                            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                            "size 12345\n", 0},
    };
    trepo_commit(repo, "a model kept in LFS", files, 2, NULL);
    char *out = NULL;
    assert_int_equal(farm_up(f.bin, f.repo, f.state, f.err, &out), 1);
    assert_line(out, "failed     1\n");
    assert_line(out, "CV1020");
    assert_line(out, "git lfs pull");
    free(out);
    trepo_free(repo);
    farm_dirs_free(&f);
}

/* A .npy of residual.cuir's input (f32[1,3,6,6]) with values from seed,
 * read back as bytes for a commit (*len set). */
static char *calibration_npy(const char *dir, int seed, size_t *len)
{
    float x[1 * 3 * 6 * 6];
    uint32_t s = 2654435761u * (uint32_t)(seed + 1);
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
    const int64_t dims[] = {1, 3, 6, 6};
    char name[32];
    snprintf(name, sizeof name, "cal%d.npy", seed);
    char *path = cv_tmpdir_path(dir, name);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_npy_write(path, CV_F32, 4, dims, x, &d), 0);
    char *bytes = cv_tmpdir_read_file(path, len);
    assert_non_null(bytes);
    cv_diag_free(&d);
    free(path);
    return bytes;
}

/* Stages a binary file (a .npy holds NULs) for the next trepo_commit. */
static void stage_binary(git_repository *r, const char *path, const char *data, size_t len)
{
    git_index *idx;
    trepo_check(git_repository_index(&idx, r), "index");
    git_index_entry e;
    memset(&e, 0, sizeof e);
    e.path = path;
    e.mode = GIT_FILEMODE_BLOB;
    trepo_check(git_index_add_from_buffer(idx, &e, data, len), "add");
    trepo_check(git_index_write(idx), "write index");
    git_index_free(idx);
}

/* int8 through the farm: the pipeline's calibration data travels in the
 * int8 job (not the fp32 one), the worker calibrates on the revision's own
 * files, and a change to them rebuilds the int8 artifact only. */
static void test_int8_calibration(void **state)
{
    (void)state;
    farm_dirs f;
    if (!farm_dirs_make(&f, "farm-int8", "repo")) {
        skip();
        return;
    }
    static const char pipeline[] =
        "apiVersion: cuvil.dev/v1\n"
        "kind: CuvilPipeline\n"
        "metadata: {name: q}\n"
        "spec:\n"
        "  models: [\"models/*.cuir\"]\n"
        "  targets: [x86_64-avx2]\n"
        "  precisions: [fp32, int8]\n"
        "  optLevel: O1\n"
        "  calibration: {data: \"calib/*.npy\", method: minmax}\n";
    char *residual = farm_example("residual.cuir");
    size_t n[4];
    char *cal[4];
    for (int i = 0; i < 4; i++)
        cal[i] = calibration_npy(f.dir, i, &n[i]);
    git_repository *repo = trepo_init(f.repo);
    const trepo_file first[] = {
        {"cuvil/pipelines.yaml", pipeline, 0},
        {"models/residual.cuir", residual, 0},
    };
    stage_binary(repo, "calib/a.npy", cal[0], n[0]);
    stage_binary(repo, "calib/b.npy", cal[1], n[1]);
    stage_binary(repo, "calib/c.npy", cal[2], n[2]);
    char hex[41];
    trepo_commit(repo, "int8 with calibration", first, 2, hex);
    char *out = farm_up_ok(&f);
    assert_line(out, "jobs       2\n");
    assert_line(out, "compiled   2\n");
    free(out);
    char fp32[CV_DIGEST_HEX + 1], int8[CV_DIGEST_HEX + 1], key[CV_DIGEST_HEX + 1];
    farm_artifact_key(f.state, hex, "models/residual.cuir", "fp32", fp32, key);
    farm_artifact_key(f.state, hex, "models/residual.cuir", "int8", int8, key);
    assert_int_equal(strlen(int8), CV_DIGEST_HEX);
    assert_string_not_equal(fp32, int8);

    /* New calibration data: the int8 artifact is rebuilt, fp32 is a hit. */
    stage_binary(repo, "calib/c.npy", cal[3], n[3]);
    char hex2[41];
    trepo_commit(repo, "recalibrate", NULL, 0, hex2);
    out = farm_up_ok(&f);
    assert_line(out, "compiled   1\n");
    free(out);
    char fp32b[CV_DIGEST_HEX + 1], int8b[CV_DIGEST_HEX + 1];
    farm_artifact_key(f.state, hex2, "models/residual.cuir", "fp32", fp32b, key);
    farm_artifact_key(f.state, hex2, "models/residual.cuir", "int8", int8b, key);
    assert_string_equal(fp32b, "");         /* a hit at planning: no new manifest */
    assert_int_equal(strlen(int8b), CV_DIGEST_HEX);
    assert_string_not_equal(int8, int8b);   /* recalibrated bytes */

    for (int i = 0; i < 4; i++)
        free(cal[i]);
    free(residual);
    trepo_free(repo);
    farm_dirs_free(&f);
}

/* fork + exec with stdout and stderr to files; returns the pid. */
static pid_t spawn(const char *const *argv, const char *out_path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(out_path, "w", stdout);
        (void)o;
        dup2(fileno(stdout), STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(100000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* A long-running farm follows the repository; `cuvil submit --wait` makes
 * it poll at once and waits for the build; SIGTERM stops it in order. */
static void test_long_running_farm_and_submit(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
        skip();
        return;
    }
    char *dir = cv_tmpdir_make("farm-run");
    char *repo_dir = cv_tmpdir_path(dir, "models-repo");
    char *state_dir = cv_tmpdir_path(dir, "state");
    char *cache_dir = cv_tmpdir_path(dir, "cache");
    char *farm_out = cv_tmpdir_path(dir, "farm.txt");
    char *err = cv_tmpdir_path(dir, "stderr.txt");
    setenv("CUVIL_CACHE_DIR", cache_dir, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    char *mlp = farm_example("mlp.cuir"), *residual = farm_example("residual.cuir");
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file first[] = {{"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
                                {"models/mlp.cuir", mlp, 0}};
    trepo_commit(repo, "one model", first, 2, NULL);

    const char *farm[] = {bin, "farm", "up", repo_dir, "--workers", "1", "--state", state_dir,
                          "--interval", "1h", "--http", "127.0.0.1:0", NULL};
    pid_t pid = spawn(farm, farm_out);
    /* the farm may not have created its state yet: submit until it has */
    const char *submit[] = {bin, "submit", "--wait", "--timeout", "120s", "--state", state_dir,
                            NULL};
    char *out = NULL;
    int rc = 1;
    for (int i = 0; i < 100 && rc != 0; i++) {
        free(out);
        out = NULL;
        rc = cv_run_argv(submit, err, &out);
        if (rc)
            usleep(100000);
    }
    assert_int_equal(rc, 0);
    assert_line(out, "jobs       1\n");
    free(out);

    const trepo_file second[] = {{"models/residual.cuir", residual, 0}};
    char hex2[41];
    trepo_commit(repo, "second model", second, 1, hex2);
    assert_int_equal(cv_run_argv(submit, err, &out), 0);
    assert_line(out, hex2);
    assert_line(out, "jobs       2\n");
    assert_line(out, "compiled   1\n");
    free(out);
    const char *status[] = {bin, "status", "--state", state_dir, NULL};
    assert_int_equal(cv_run_argv(status, err, &out), 0);
    assert_line(out, "controller  running");
    assert_line(out, "succeeded");
    free(out);

    /* the same through the farm's HTTP API: POST /api/v1/revisions, then
     * follow the request and the revision; JUnit and Markdown reports */
    size_t len;
    char *log = cv_tmpdir_read_file(farm_out, &len);
    assert_non_null(log);
    const char *at = strstr(log, "on http://127.0.0.1:");
    assert_non_null(at);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", atoi(at + strlen("on http://127.0.0.1:")));
    free(log);
    const trepo_file third[] = {{"models/mlp2.cuir", residual, 0}};
    char hex3[41];
    trepo_commit(repo, "a copy", third, 1, hex3);
    char *junit = cv_tmpdir_path(dir, "junit.xml");
    const char *remote[] = {bin, "submit", "--farm", url, "--wait", "--timeout", "120s",
                            "--markdown", "--junit", junit, NULL};
    assert_int_equal(cv_run_argv(remote, err, &out), 0);
    assert_line(out, "### Cuvil: `main@sha1:");
    assert_line(out, hex3);
    assert_line(out, "| 3 | ");   /* jobs */
    free(out);
    char *xml = cv_tmpdir_read_file(junit, &len);
    assert_non_null(xml);
    assert_line(xml, "<testsuites name=\"cuvil\" tests=\"3\" failures=\"0\"");
    assert_line(xml, "name=\"models/mlp2.cuir\"");
    free(xml);
    free(junit);
    /* a wrong farm URL: a transport error, exit 1 */
    const char *nowhere[] = {bin, "submit", "--farm", "http://127.0.0.1:9", "--wait", NULL};
    assert_int_equal(cv_run_argv(nowhere, err, NULL), 1);

    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid, 60), 0);
    assert_int_equal(cv_run_argv(status, err, &out), 0);
    assert_line(out, "controller  stopped");
    free(out);
    log = cv_tmpdir_read_file(farm_out, &len);
    assert_non_null(log);
    assert_line(log, "== built main@sha1:");
    assert_line(log, hex2);
    free(log);

    free(mlp);
    free(residual);
    trepo_free(repo);
    free(err);
    free(farm_out);
    free(cache_dir);
    free(state_dir);
    free(repo_dir);
    cv_tmpdir_remove(dir);
}

/* The pids of pid's children (none when it has ended), at most cap. */
static int children_of(pid_t pid, pid_t *out, int cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int n = 0, v;
    while (f && n < cap && fscanf(f, "%d", &v) == 1)
        out[n++] = v;
    if (f)
        fclose(f);
    return n;
}

/* A farm killed with SIGKILL (it cannot stop its workers itself) still
 * takes them with it: they stop within seconds, as on SIGTERM.  The test
 * is the workers' subreaper, so it sees them end and reaps them. */
static void test_killed_farm_stops_workers(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
        skip();
        return;
    }
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    char *dir = cv_tmpdir_make("farm-kill");
    char *repo_dir = cv_tmpdir_path(dir, "models-repo");
    char *state_dir = cv_tmpdir_path(dir, "state");
    char *cache_dir = cv_tmpdir_path(dir, "cache");
    char *farm_out = cv_tmpdir_path(dir, "farm.txt");
    setenv("CUVIL_CACHE_DIR", cache_dir, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    char *mlp = farm_example("mlp.cuir");
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file first[] = {{"cuvil/pipelines.yaml", FARM_PIPELINE, 0},
                                {"models/mlp.cuir", mlp, 0}};
    trepo_commit(repo, "one model", first, 2, NULL);
    const char *farm[] = {bin, "farm", "up", repo_dir, "--workers", "2", "--state", state_dir,
                          "--interval", "1h", NULL};
    pid_t pid = spawn(farm, farm_out), workers[8];
    int n = 0;
    for (int i = 0; i < 600 && n < 2; i++) {
        usleep(100000);
        n = children_of(pid, workers, 8);
    }
    assert_int_equal(n, 2);
    usleep(300000);                 /* past the workers' exec */
    kill(pid, SIGKILL);
    assert_int_equal(wait_exit(pid, 10), 128 + SIGKILL);
    int left = n;
    for (int i = 0; i < 100 && left > 0; i++) {   /* 10 s */
        for (int k = 0; k < n; k++)
            if (workers[k] > 0 && waitpid(workers[k], NULL, WNOHANG) == workers[k]) {
                workers[k] = 0;
                left--;
            }
        if (left)
            usleep(100000);
    }
    for (int k = 0; k < n; k++)     /* left running: the failure, then cleaned up */
        if (workers[k] > 0) {
            kill(workers[k], SIGKILL);
            waitpid(workers[k], NULL, 0);
        }
    assert_int_equal(left, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    free(mlp);
    trepo_free(repo);
    free(farm_out);
    free(cache_dir);
    free(state_dir);
    free(repo_dir);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_commits),
        cmocka_unit_test(test_lfs_pointer_job),
        cmocka_unit_test(test_int8_calibration),
        cmocka_unit_test(test_long_running_farm_and_submit),
        cmocka_unit_test(test_killed_farm_stops_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
