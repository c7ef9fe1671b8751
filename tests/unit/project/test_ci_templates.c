/* The CI templates (ci-templates/, .pre-commit-hooks.yaml): yamllint with
 * the repository's settings, then tests/tools/check_ci_templates.py, which
 * checks the GitHub and GitLab structure, that every cuvil command the
 * templates run exists and documents its flags, and runs those commands
 * (validate, farm up --once, status --junit --markdown, artifacts list) in a
 * models repository made here; the JUnit XML is parsed and matched against
 * the farm's jobs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: ci}\n"
    "spec:\n  models: [\"models/*.cuir\"]\n  targets: [x86_64]\n  precisions: [fp32]\n"
    "  optLevel: O0\n";
static const char MODEL[] =
    "cuir 1\nmodel @m(%x: f32[N,4]) -> (f32[N,4]) {\n  %0 = relu(%x) : f32[N,4]\n"
    "  return %0\n}\n";
static const char BROKEN[] =
    "cuir 1\nmodel @b(%x: f32[N,4]) -> (f32[N,4]) {\n  %0 = relu(%x) : f32[N,5]\n"
    "  return %0\n}\n";

static void test_templates_lint_and_run(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || access(bin, X_OK) != 0 || access("/usr/bin/yamllint", X_OK) != 0) {
        fprintf(stderr, "skipped: needs $CUVIL_BIN and yamllint\n");
        skip();
        return;
    }
    char *src = realpath(cv_tmpdir_src_root(), NULL);
    assert_non_null(src);
    char cfg[4096], templates[4096], hooks[4096], checker[4096];
    snprintf(cfg, sizeof cfg, "%s/.yamllint", src);
    snprintf(templates, sizeof templates, "%s/ci-templates", src);
    snprintf(hooks, sizeof hooks, "%s/.pre-commit-hooks.yaml", src);
    snprintf(checker, sizeof checker, "%s/tests/tools/check_ci_templates.py", src);
    char *out = NULL;
    const char *lint[] = {"/usr/bin/yamllint", "-c", cfg, "-f", "parsable", templates, hooks,
                          NULL};
    int rc = cv_run_argv(lint, "/dev/null", &out);
    if (rc != 0)
        fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);

    char *dir = cv_tmpdir_make("ci");
    char *repo_dir = cv_tmpdir_path(dir, "models");
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file files[] = {{"cuvil/ci.yaml", PIPELINE, 0}, {"models/m.cuir", MODEL, 0},
                                {"models/b.cuir", BROKEN, 0}};
    trepo_commit(repo, "models", files, 3, NULL);
    trepo_write_worktree(repo_dir, files, 3);
    char *cache = cv_tmpdir_path(dir, "cache");
    setenv("CUVIL_CACHE_DIR", cache, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    const char *check[] = {"/usr/bin/python3", checker, src, bin, repo_dir, dir, NULL};
    char *err = cv_tmpdir_path(dir, "stderr.txt");
    rc = cv_run_argv(check, err, &out);
    if (rc != 0) {
        size_t len;
        char *e = cv_tmpdir_read_file(err, &len);
        fprintf(stderr, "%s%s", out ? out : "", e ? e : "");
        free(e);
    }
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, " 0 problems"));
    free(out);
    /* the GitHub step summary the templates append to */
    char *summary = cv_tmpdir_path(dir, "summary.md");
    size_t len;
    char *md = cv_tmpdir_read_file(summary, &len);
    assert_non_null(md);
    assert_non_null(strstr(md, "### Cuvil: `HEAD@sha1:"));
    assert_non_null(strstr(md, " failed"));
    assert_non_null(strstr(md, "| `models/b.cuir` | x86_64 | fp32 | failed | `CV3003`"));
    free(md);
    free(summary);
    free(err);
    free(cache);
    trepo_free(repo);
    free(repo_dir);
    cv_tmpdir_remove(dir);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_templates_lint_and_run)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
