/* The pre-commit hooks (.pre-commit-hooks.yaml) with the real pre-commit
 * framework (Debian's pre-commit): `pre-commit try-repo <this checkout>` in
 * a models repository made by the test, with the sanitized cuvil first on
 * PATH.  Good models and specs pass; a broken model and a broken spec fail
 * with the compiler-style diagnostic in the output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\n"
    "spec: {models: [\"models/*.cuir\"], targets: [x86_64], precisions: [fp32]}\n";
static const char BAD_PIPELINE[] =
    "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\n"
    "spec: {models: [\"models/*.cuir\"], targets: [x86_64], precison: [fp32]}\n";
static const char DSL_BAD[] =
    "import cuvil as cvl\n\n"
    "@cvl.model(input_shapes=[(\"N\", 4)])\n"
    "def f(x):\n"
    "    return cvl.relux(x)\n";

/* Runs argv in dir with PATH prefixed by bin_dir; output to *out. */
static int run_in(const char *dir, const char *bin_dir, const char *home, const char *const *argv,
                  char **out)
{
    char *log = cv_tmpdir_path(home, "out.txt");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (chdir(dir) != 0)
            _exit(126);
        char path[8192];
        snprintf(path, sizeof path, "%s:%s", bin_dir, getenv("PATH") ? getenv("PATH") : "");
        setenv("PATH", path, 1);
        setenv("PRE_COMMIT_HOME", home, 1);
        setenv("NO_COLOR", "1", 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    size_t len;
    *out = cv_tmpdir_read_file(log, &len);
    free(log);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_try_repo(void **state)
{
    (void)state;
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || access(bin, X_OK) != 0 || access("/usr/bin/pre-commit", X_OK) != 0) {
        fprintf(stderr, "skipped: needs $CUVIL_BIN and pre-commit (apt-get install pre-commit)\n");
        skip();
        return;
    }
    char *bin_copy = strdup(bin);
    const char *bin_dir = dirname(bin_copy);
    char *dir = cv_tmpdir_make("precommit");
    char *repo_dir = cv_tmpdir_path(dir, "models");
    char *home = cv_tmpdir_path(dir, "home");
    assert_int_equal(mkdir(home, 0755), 0);
    char src[4096];
    snprintf(src, sizeof src, "%s/examples/cuir/mlp.cuir", cv_tmpdir_src_root());
    size_t len;
    char *good = cv_tmpdir_read_file(src, &len);
    assert_non_null(good);
    char *bad = strdup(good);
    char *at = strstr(bad, "-> (f32[N,4])");
    assert_non_null(at);
    at[10] = '5';   /* the declared output shape no longer matches */
    git_repository *repo = trepo_init(repo_dir);
    const trepo_file files[] = {
        {"models/good.cuir", good, 0},     {"models/bad.cuir", bad, 0},
        {"models/bad.cvl.py", DSL_BAD, 0}, {"cuvil/good.yaml", PIPELINE, 0},
        {"cuvil/bad.yaml", BAD_PIPELINE, 0},
    };
    trepo_commit(repo, "models", files, 5, NULL);
    trepo_write_worktree(repo_dir, files, 5);   /* the hooks read the working tree */
    /* try-repo runs in the models repository: the checkout by absolute path */
    char *root = realpath(cv_tmpdir_src_root(), NULL);
    assert_non_null(root);
    char *out = NULL;

    const char *pass[] = {"pre-commit", "try-repo", root, "cuvil-validate", "--files",
                          "models/good.cuir", NULL};
    int rc = run_in(repo_dir, bin_dir, home, pass, &out);
    if (rc != 0 || !strstr(out, "Passed"))
        fprintf(stderr, "%s", out ? out : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "cuvil validate (models)"));
    assert_non_null(strstr(out, "Passed"));
    free(out);

    const char *fail[] = {"pre-commit", "try-repo", root, "cuvil-validate", "--files",
                          "models/good.cuir", "models/bad.cuir", "models/bad.cvl.py", NULL};
    assert_int_equal(run_in(repo_dir, bin_dir, home, fail, &out), 1);
    assert_non_null(strstr(out, "Failed"));
    assert_non_null(strstr(out, "models/bad.cuir:"));
    assert_non_null(strstr(out, "error[CV2012]"));
    assert_non_null(strstr(out, "models/bad.cvl.py:5:12: error[CV2102]"));
    assert_null(strstr(out, "models/good.cuir:"));   /* -q: nothing for good files */
    free(out);

    /* the spec hook picks spec files only, and fails on the unknown field */
    const char *specs[] = {"pre-commit", "try-repo", root, "cuvil-validate-specs", "--files",
                           "cuvil/good.yaml", "cuvil/bad.yaml", "models/bad.cuir", NULL};
    assert_int_equal(run_in(repo_dir, bin_dir, home, specs, &out), 1);
    assert_non_null(strstr(out, "cuvil/bad.yaml:"));
    assert_non_null(strstr(out, "CV6001"));
    assert_null(strstr(out, "models/bad.cuir:"));
    free(out);

    trepo_free(repo);
    free(root);
    free(good);
    free(bad);
    free(bin_copy);
    free(repo_dir);
    free(home);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_try_repo)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
