/* The architecture's rules, checked on the real tree: the one-way
 * dependency table (scripts/check-layers.sh, which reads it from
 * docs/architecture.md) passes here and fails on a planted bad include; and
 * every installed public header (scripts/public-headers.txt) compiles on
 * its own with -Wall -Wextra -Werror -pedantic, as C17 and as C11; and
 * every file docs/architecture.md names (`dir/file.c`, `dir/file.c:function`)
 * is in the repository, with that function in it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/tmpdir.h"

/* Runs argv, its stdout and stderr into *out (malloc'd); returns the exit
 * status, or -1 when it did not exit normally. */
static int run(char *const argv[], char **out)
{
    char *dir = cv_tmpdir_make("layers-run");
    assert_non_null(dir);
    char *log = cv_tmpdir_path(dir, "out.txt");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    size_t len;
    *out = cv_tmpdir_read_file(log, &len);
    assert_non_null(*out);
    free(log);
    cv_tmpdir_remove(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *src_path(const char *rel)
{
    return cv_tmpdir_path(cv_tmpdir_src_root(), rel);
}

static void test_tree_follows_the_table(void **state)
{
    char *script = src_path("scripts/check-layers.sh"), *out;
    char *argv[] = {script, (char *)cv_tmpdir_src_root(), NULL};
    int rc = run(argv, &out);
    if (rc != 0)
        fail_msg("check-layers.sh failed on the tree:\n%s", out);
    free(out);
    free(script);
}

/* A copy of the table with three components: two bad includes are named
 * with their file and line, an allowed one and a generated header are not. */
static void test_planted_include_fails(void **state)
{
    char *root = cv_tmpdir_make("layers");
    assert_non_null(root);
    size_t len;
    char *doc_src = src_path("docs/architecture.md");
    char *doc = cv_tmpdir_read_file(doc_src, &len);
    assert_non_null(doc);
    char *docs = cv_tmpdir_path(root, "docs"), *cache = cv_tmpdir_path(root, "cache"),
         *common = cv_tmpdir_path(root, "common"), *cli = cv_tmpdir_path(root, "cli");
    assert_int_equal(mkdir(docs, 0755) | mkdir(cache, 0755) | mkdir(common, 0755) |
                         mkdir(cli, 0755), 0);
    assert_int_equal(cv_tmpdir_write(docs, "architecture.md", doc, len), 0);
    const char bad_c[] = "#include <stdio.h>\n#include \"common/fs.h\"\n"
                         "#include \"controller/controller.h\"\n";
    const char bad_h[] = "/* a header */\n  #  include \"cache/cache.h\"\n";
    const char ok_c[] = "#include \"worker/worker.h\"\n#include \"onnx/onnx.pb-c.h\"\n";
    assert_int_equal(cv_tmpdir_write(cache, "bad.c", bad_c, sizeof bad_c - 1), 0);
    assert_int_equal(cv_tmpdir_write(common, "bad.h", bad_h, sizeof bad_h - 1), 0);
    assert_int_equal(cv_tmpdir_write(cli, "ok.c", ok_c, sizeof ok_c - 1), 0);

    char *script = src_path("scripts/check-layers.sh"), *out;
    char *argv[] = {script, root, NULL};
    assert_int_equal(run(argv, &out), 1);
    assert_non_null(strstr(out, "cache/bad.c:3: cache may not include controller"));
    assert_non_null(strstr(out, "common/bad.h:2: common may not include cache"));
    assert_null(strstr(out, "cli/"));
    assert_null(strstr(out, "common/fs.h"));
    free(out);

    /* The same tree without the table is an error of its own, not a pass. */
    assert_int_equal(cv_tmpdir_write(docs, "architecture.md", "# no table\n", 11), 0);
    assert_int_equal(run(argv, &out), 2);
    free(out);
    free(script);
    free(doc);
    free(doc_src);
    free(docs), free(cache), free(common), free(cli);
    cv_tmpdir_remove(root);
}

static void test_public_headers_compile_alone(void **state)
{
    char *list_path = src_path("scripts/public-headers.txt");
    size_t len;
    char *list = cv_tmpdir_read_file(list_path, &len);
    assert_non_null(list);
    char *dir = cv_tmpdir_make("headers");
    assert_non_null(dir);
    char inc[4096];
    snprintf(inc, sizeof inc, "-I%s", cv_tmpdir_src_root());
    int headers = 0;
    for (char *save = NULL, *line = strtok_r(list, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#' || !line[0])
            continue;
        char src[512];
        int n = snprintf(src, sizeof src, "#include \"%s\"\nint cv_header_test;\n", line);
        assert_int_equal(cv_tmpdir_write(dir, "h.c", src, (size_t)n), 0);
        char *c = cv_tmpdir_path(dir, "h.c");
        for (int std = 0; std < 2; std++) {
            char *argv[] = {"cc", std ? "-std=c11" : "-std=c17", "-Wall", "-Wextra", "-Werror",
                            "-pedantic", inc, "-fsyntax-only", c, NULL};
            char *out;
            if (run(argv, &out) != 0)
                fail_msg("%s does not compile on its own (%s):\n%s", line, argv[1], out);
            free(out);
        }
        free(c);
        headers++;
    }
    assert_true(headers >= 5);
    free(list);
    free(list_path);
    cv_tmpdir_remove(dir);
}

/* Whether the text of a file defines or declares name: "name(" after a
 * character that cannot be part of an identifier. */
static int file_has_function(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
        if (p > text && (p[-1] == ' ' || p[-1] == '*' || p[-1] == '\n') && p[n] == '(')
            return 1;
    return 0;
}

/* Every `path/name.ext` or `path/name.ext:function` in backquotes in doc
 * that is not under root (or whose function is not in it) is appended to
 * bad; returns how many, and the number of references checked in *checked. */
static int check_doc_refs(const char *root, const char *doc, char *bad, size_t bad_size,
                          int *checked)
{
    int missing = 0;
    *checked = 0;
    for (const char *p = strchr(doc, '`'); p; p = strchr(p, '`')) {
        const char *end = strchr(p + 1, '`');
        if (!end)
            break;
        char ref[512];
        size_t len = (size_t)(end - p - 1);
        p = end + 1;
        if (len == 0 || len >= sizeof ref)
            continue;
        memcpy(ref, end - len, len);
        ref[len] = '\0';
        /* only plain paths: a slash, a dot extension, no spaces, globs or placeholders */
        if (!strchr(ref, '/') || strpbrk(ref, " *<>{}$"))
            continue;
        char *fn = strchr(ref, ':');
        if (fn)
            *fn++ = '\0';
        const char *dot = strrchr(ref, '.');
        if (!dot || strchr(dot, '/') || !isalpha((unsigned char)dot[1]))
            continue;
        (*checked)++;
        char *path = cv_tmpdir_path(root, ref);
        size_t flen;
        char *text = cv_tmpdir_read_file(path, &flen);
        if (!text || (fn && !file_has_function(text, fn))) {
            size_t used = strlen(bad);
            snprintf(bad + used, bad_size - used, "  %s%s%s\n", ref, fn ? ":" : "",
                     fn ? fn : "");
            missing++;
        }
        free(text);
        free(path);
    }
    return missing;
}

static void test_architecture_names_real_files(void **state)
{
    char *doc_path = src_path("docs/architecture.md");
    size_t len;
    char *doc = cv_tmpdir_read_file(doc_path, &len);
    assert_non_null(doc);
    char bad[8192] = "";
    int checked;
    if (check_doc_refs(cv_tmpdir_src_root(), doc, bad, sizeof bad, &checked) != 0)
        fail_msg("docs/architecture.md names what the repository does not have:\n%s", bad);
    assert_true(checked >= 30);   /* the map, the life of a job */

    /* A planted missing file and a planted missing function are found. */
    const char planted[] = "see `controller/no_such_file.c` and "
                           "`compile/build.c:cv_no_such_function`, not `cli/cmd_<name>.c`\n";
    bad[0] = '\0';
    assert_int_equal(check_doc_refs(cv_tmpdir_src_root(), planted, bad, sizeof bad, &checked), 2);
    assert_int_equal(checked, 2);
    assert_non_null(strstr(bad, "controller/no_such_file.c"));
    assert_non_null(strstr(bad, "compile/build.c:cv_no_such_function"));
    free(doc);
    free(doc_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_follows_the_table),
        cmocka_unit_test(test_planted_include_fails),
        cmocka_unit_test(test_public_headers_compile_alone),
        cmocka_unit_test(test_architecture_names_real_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
