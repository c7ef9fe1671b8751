/* A real ccache 4.7 (Debian's) against `cuvil cache serve` (in-process):
 * compile, wipe ccache's local directory, compile again: the second compile
 * must be a remote hit with the same object file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/support/cache_testlib.h"

static const char *find_ccache(void)
{
    static const char *paths[] = {"/usr/bin/ccache", "/usr/local/bin/ccache"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

/* Runs argv in dir with ccache's variables set; stdout goes to out_file
 * when given.  Returns the exit status. */
static int run(const char *dir, char *const argv[], const char *ccache_dir, const char *remote,
               const char *out_file)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(127);
        char *conf = cv_tmpdir_path(dir, "ccache.conf");
        setenv("CCACHE_CONFIGPATH", conf, 1);
        setenv("CCACHE_DIR", ccache_dir, 1);
        setenv("CCACHE_REMOTE_STORAGE", remote, 1);
        unsetenv("CCACHE_DISABLE");
        unsetenv("CCACHE_REMOTE_ONLY");
        if (out_file && !freopen(out_file, "w", stdout))
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long stat_value(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == '\t')
            v = strtol(line + kl + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static void test_ccache_remote_hit(void **state)
{
    (void)state;
    const char *ccache = find_ccache();
    if (!ccache)
        skip(); /* apt-get install ccache (scripts/packages.txt lists it) */
    char *dir = cv_tmpdir_make("cache-ccache");
    char *store = cv_tmpdir_path(dir, "store");
    cv_cache_server_options o = {.listen = "127.0.0.1:0", .dir = store, .threads = 2};
    cv_cache_server *srv;
    assert_int_equal(cv_cache_server_start(&o, &srv, NULL), 0);
    char remote[128];
    snprintf(remote, sizeof remote, "http://127.0.0.1:%d|layout=bazel", cv_cache_server_port(srv));
    const char *src = "int cuvil_answer(int x) { return x * 42 + 1; }\n";
    cv_tmpdir_write(dir, "hello.c", src, strlen(src));
    cv_tmpdir_write(dir, "ccache.conf", "", 0);
    char *local1 = cv_tmpdir_path(dir, "ccache-1"), *local2 = cv_tmpdir_path(dir, "ccache-2");
    char *obj = cv_tmpdir_path(dir, "hello.o"), *stats = cv_tmpdir_path(dir, "stats.txt");
    char *compile[] = {(char *)ccache, "cc", "-O2", "-c", "hello.c", "-o", "hello.o", NULL};
    char *print[] = {(char *)ccache, "--print-stats", NULL};

    assert_int_equal(run(dir, compile, local1, remote, NULL), 0);
    size_t n1 = 0, n2 = 0;
    char *first = slurp(obj, &n1);
    assert_non_null(first);
    assert_int_equal(run(dir, print, local1, remote, stats), 0);
    assert_int_equal(stat_value(stats, "cache_miss"), 1);
    assert_true(stat_value(stats, "remote_storage_write") >= 1);
    assert_int_equal(stat_value(stats, "remote_storage_error"), 0);

    unlink(obj);
    cv_tmpdir_remove(local1); /* the local cache is gone: only the remote can help */
    local1 = NULL;
    assert_int_equal(run(dir, compile, local2, remote, NULL), 0);
    assert_int_equal(run(dir, print, local2, remote, stats), 0);
    assert_int_equal(stat_value(stats, "remote_storage_hit"), 1);
    assert_int_equal(stat_value(stats, "cache_miss"), 0);
    assert_int_equal(stat_value(stats, "direct_cache_hit"), 1);
    char *second = slurp(obj, &n2);
    assert_non_null(second);
    assert_int_equal(n1, n2);
    assert_memory_equal(first, second, n1);

    free(first);
    free(second);
    free(obj);
    free(stats);
    free(local2);
    free(store);
    cv_cache_server_stop(srv, 1000);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ccache_remote_hit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
