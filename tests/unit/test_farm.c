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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/unit/test_gitrepo.h"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: cuir}\n"
    "spec:\n"
    "  models: [\"models/*.cuir\"]\n"
    "  targets: [x86_64-avx2]\n"
    "  precisions: [fp32]\n";

static char *example(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/cuir/%s", cv_tmpdir_src_root(), name);
    size_t len;
    char *text = cv_tmpdir_read_file(path, &len);
    assert_non_null(text);
    return text;
}

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

/* The manifest of a model's artifact in the revision of commit hex. */
static void artifact(const char *state_dir, const char *hex, const char *model,
                     char manifest[CV_DIGEST_HEX + 1])
{
    char *db_path = cv_tmpdir_path(state_dir, "build.db");
    char rev[CV_REVISION_MAX + 1], l2[CV_DIGEST_HEX + 1];
    snprintf(rev, sizeof rev, "main@sha1:%s", hex);
    cv_builddb *db;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_builddb_open(db_path, &db, &d), 0);
    assert_int_equal(cv_builddb_artifact_find(db, rev, model, "x86_64-avx2", "fp32", l2, manifest,
                                              &d), 1);
    cv_builddb_close(db);
    cv_diag_free(&d);
    free(db_path);
}

static void test_three_commits(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
        skip();
        return;
    }
    char *dir = cv_tmpdir_make("farm");
    char *repo_dir = cv_tmpdir_path(dir, "models-repo");
    char *state_dir = cv_tmpdir_path(dir, "state");
    char *cache_dir = cv_tmpdir_path(dir, "cache");
    char *err = cv_tmpdir_path(dir, "stderr.txt");
    setenv("CUVIL_CACHE_DIR", cache_dir, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    char *mlp = example("mlp.cuir"), *residual = example("residual.cuir");
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file first[] = {
        {"cuvil/pipelines.yaml", PIPELINE, 0},
        {"models/mlp.cuir", mlp, 0},
        {"models/residual.cuir", residual, 0},
        {"README.md", "models\n", 0},
    };
    char hex[41];
    trepo_commit(repo, "two models", first, 4, hex);
    char *out = NULL;
    int rc = farm_up(bin, repo_dir, state_dir, err, &out);
    if (rc != 0) {
        size_t len;
        char *e = cv_tmpdir_read_file(err, &len);
        fprintf(stderr, "%s%s", out ? out : "", e ? e : "");
        free(e);
    }
    assert_int_equal(rc, 0);
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

    /* Only --once exists so far. */
    const char *argv[] = {bin, "farm", "up", repo_dir, "--state", state_dir, NULL};
    assert_int_equal(cv_run_argv(argv, "/dev/null", NULL), 2);

    free(mlp3);
    free(mlp2);
    free(mlp);
    free(residual);
    trepo_free(repo);
    free(err);
    free(cache_dir);
    free(state_dir);
    free(repo_dir);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_commits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
