/* `cuvil cache ...` driven through the sanitized binary ($CUVIL_BIN):
 * serve (with SIGTERM shutdown), stats --json, verify, evict, clear. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/remote.h"
#include "tests/support/cache_testlib.h"

static const char *bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b && access(b, X_OK) == 0 ? b : NULL;
}

/* Starts argv with stdout (and stderr when err_fd) piped; returns the pid. */
static pid_t spawn(char *const argv[], int *out_fd, int *err_fd)
{
    int po[2], pe[2];
    if (pipe(po) != 0 || pipe(pe) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    *out_fd = po[0];
    *err_fd = pe[0];
    return pid;
}

static char *read_all(int fd)
{
    size_t len = 0, cap = 4096;
    char *b = malloc(cap);
    ssize_t n;
    while ((n = read(fd, b + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2)
            b = realloc(b, cap *= 2);
    }
    b[len] = '\0';
    close(fd);
    return b;
}

static int run(char *const argv[], char **out)
{
    int o, e;
    pid_t pid = spawn(argv, &o, &e);
    char *text = read_all(o);
    free(read_all(e));
    int st;
    waitpid(pid, &st, 0);
    if (out)
        *out = text;
    else
        free(text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_serve_and_sigterm(void **state)
{
    (void)state;
    if (!bin())
        skip();
    char *dir = cv_tmpdir_make("cache-cli");
    char *store = cv_tmpdir_path(dir, "store");
    char *argv[] = {(char *)bin(), "cache", "serve", "--listen", "127.0.0.1:0", "--dir", store,
                    "--max-size", "10M", NULL};
    int o, e;
    pid_t pid = spawn(argv, &o, &e);
    /* "cuvil cache serve: listening on port N, ..." */
    char line[512] = {0};
    size_t n = 0;
    while (n < sizeof line - 1 && read(e, line + n, 1) == 1 && line[n] != '\n')
        n++;
    int port = 0;
    const char *p = strstr(line, "port ");
    if (p)
        port = atoi(p + 5);
    assert_true(port > 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    cv_remote_options ro = {.url = url};
    cv_remote *r;
    assert_int_equal(cv_cache_remote_open(&ro, &r, NULL), 0);
    cv_digest dg;
    cv_cache_sha256("served", 6, &dg);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, &dg, "served", 6, NULL), 0);
    void *got;
    size_t len;
    assert_int_equal(cv_cache_remote_get(r, CV_CAS_BLOB, &dg, &got, &len, NULL), CV_REMOTE_FOUND);
    free(got);
    cv_cache_remote_close(r);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    free(read_all(o));
    char *rest = read_all(e);
    assert_non_null(strstr(rest, "SIGTERM"));
    free(rest);

    /* the store it leaves is an ordinary cache directory, index included */
    char *stats_argv[] = {(char *)bin(), "cache", "stats", "--json", "--dir", store, NULL};
    char *out;
    assert_int_equal(run(stats_argv, &out), 0);
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "store"), "entries")), 1);
    json_decref(j);
    free(out);
    free(store);
    cv_tmpdir_remove(dir);
}

static void test_verify_evict_clear(void **state)
{
    (void)state;
    if (!bin())
        skip();
    char *dir = cv_tmpdir_make("cache-cli2");
    cv_cache_options co = {.dir = dir, .ignore_env = true, .remote = ""};
    cv_cache *c;
    assert_int_equal(cv_cache_open(&co, &c, NULL), 0);
    cv_digest a, b;
    char buf[3000];
    tcu_fill(buf, sizeof buf, 1);
    assert_int_equal(cv_cache_put_blob(c, buf, sizeof buf, &a, NULL), 0);
    tcu_fill(buf, sizeof buf, 2);
    assert_int_equal(cv_cache_put_blob(c, buf, sizeof buf, &b, NULL), 0);
    cv_cache_close(c);
    char hex[65], path[600];
    cv_cache_digest_hex(&a, hex);
    snprintf(path, sizeof path, "%s/cas/%.2s/%s", dir, hex, hex);
    FILE *fp = fopen(path, "r+b");
    fseek(fp, 100, SEEK_SET);
    fputc('#', fp);
    fclose(fp);
    char *verify[] = {(char *)bin(), "cache", "verify", "--dir", dir, NULL};
    char *out;
    assert_int_equal(run(verify, &out), 1); /* corrupt entries found (and dropped) */
    assert_non_null(strstr(out, "checked 2 entries"));
    assert_non_null(strstr(out, "1 corrupt"));
    free(out);
    assert_int_equal(run(verify, &out), 0);
    free(out);
    char *evict[] = {(char *)bin(), "cache", "evict", "--max-size", "0", "--dir", dir, NULL};
    assert_int_equal(run(evict, &out), 0);
    free(out);
    char *clear[] = {(char *)bin(), "cache", "clear", "--dir", dir, NULL};
    assert_int_equal(run(clear, &out), 0);
    free(out);
    char *bad[] = {(char *)bin(), "cache", "evict", "--max-size", "huge", NULL};
    assert_int_equal(run(bad, NULL), 2);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_and_sigterm),
        cmocka_unit_test(test_verify_evict_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
