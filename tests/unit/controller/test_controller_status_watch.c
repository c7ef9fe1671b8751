/* cuvil status --watch against a farm building (tests/support/http_testlib.h:
 * the real controller and build DB, the stand-in worker): the real cuvil
 * program follows the revision, prints a line when its counts change, then
 * the failures, and exits 1 because the broken model failed; an unknown
 * revision is a coded error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/http_testlib.h"

extern char **environ;

static pid_t watch(ht_farm *f, const char *out, const char *revision)
{
    const char *bin = getenv("CUVIL_BIN");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, out, O_WRONLY | O_APPEND, 0644);
    const char *argv[] = {bin, "status", "--watch", "--state", f->state_dir, "--interval", "50ms",
                          revision, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

static char *wait_for(const char *path, const char *what)
{
    for (int i = 0; i < 400; i++) {
        size_t n;
        char *text = cv_tmpdir_read_file(path, &n);
        if (text && strstr(text, what))
            return text;
        free(text);
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("no '%s' in %s", what, path);
    return NULL;
}

static int exit_status(pid_t pid)
{
    int st = 0;
    for (int i = 0; i < 400; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fail_msg("cuvil status --watch did not end");
    return -1;
}

static void test_watch_follows_a_build(void **state)
{
    (void)state;
    if (!getenv("CUVIL_BIN")) {
        skip();
        return;
    }
    ht_farm *f = ht_farm_new("status-watch");
    ht_plan_first(f);
    char *out = cv_tmpdir_path(f->dir, "watch.out");
    pid_t pid = watch(f, out, NULL);
    free(wait_for(out, "building: 0 of 12 jobs done"));
    assert_int_equal(ht_work(f, 5, false), 5);
    assert_int_equal(ht_step(f, false).results, 5);
    free(wait_for(out, ": 5 of 12 jobs done"));
    assert_int_equal(ht_work(f, -1, false), 7);
    assert_int_equal(ht_step(f, false).results, 7);
    assert_int_equal(exit_status(pid), 1);     /* the broken model failed */
    char *text = wait_for(out, "failed: 12 of 12 jobs done (0 from the cache, 8 compiled, 4 failed)");
    assert_non_null(strstr(text, "failed jobs:"));
    assert_non_null(strstr(text, "models/broken.cuir"));
    free(text);

    pid = watch(f, out, "deadbeef");       /* no such revision */
    assert_int_equal(exit_status(pid), 1);
    text = wait_for(out, "CV6");
    free(text);
    free(out);
    ht_farm_free(f);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_follows_a_build),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
