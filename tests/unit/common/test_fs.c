#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "tests/support/tmpdir.h"

static char *tmp;    /* owned: the group's temp dir (resolved) */
static char *base;   /* owned: tmp/base */

static char *P(const char *rel) { return cv_tmpdir_path(tmp, rel); }

static void mk_link(const char *target, const char *rel)
{
    char *p = P(rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

static void mk_dir(const char *rel)
{
    char *p = P(rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

/* tmp/base: a.txt sub/b.txt link_in->sub/b.txt abs_in->/abs/a.txt link_out->../outside.txt
 * link_dir_out->../outdir dangling->nowhere; tmp: outside.txt outdir/c.txt base2/x
 * baselink->base */
static int group_setup(void **state)
{
    tmp = cv_tmpdir_make("fs");
    base = cv_tmpdir_path(tmp, "base");
    mk_dir("base");
    mk_dir("base/sub");
    mk_dir("outdir");
    mk_dir("base2");
    cv_tmpdir_write(tmp, "base/a.txt", "a", 1);
    cv_tmpdir_write(tmp, "base/sub/b.txt", "b", 1);
    cv_tmpdir_write(tmp, "outside.txt", "o", 1);
    cv_tmpdir_write(tmp, "outdir/c.txt", "c", 1);
    cv_tmpdir_write(tmp, "base2/x", "x", 1);
    char *abs_a = P("base/a.txt");
    mk_link(abs_a, "base/abs_in");
    free(abs_a);
    mk_link("sub/b.txt", "base/link_in");
    mk_link("../outside.txt", "base/link_out");
    mk_link("../outdir", "base/link_dir_out");
    mk_link("nowhere", "base/dangling");
    mk_link("base", "baselink");
    return 0;
}

static int group_teardown(void **state)
{
    free(base);
    return cv_tmpdir_remove(tmp);
}

static int first_code(const cv_diag *d) { return d->n > 0 ? d->v[0].code : 0; }

/* Resolves rel in base; returns the diag code (0 on success) and checks
 * the result against want (relative to tmp) when given. */
static int resolve(const char *dir, const char *rel, const char *want)
{
    cv_diag d;
    cv_diag_init(&d);
    char *out = (char *)"unset";
    int rc = cv_fs_resolve_inside(dir, rel, &out, &d);
    int code = rc == 0 ? 0 : first_code(&d);
    print_message("%s -> rc %d code %d %s\n", rel, rc, code, rc == 0 ? out : d.v[0].msg);
    if (rc == 0 && want) {
        char *w = P(want);
        assert_string_equal(out, w);
        free(w);
    }
    if (rc)
        assert_null(out);
    free(rc ? NULL : out);
    cv_diag_free(&d);
    return code;
}

static void test_resolve_inside_ok(void **state)
{
    assert_int_equal(resolve(base, "a.txt", "base/a.txt"), 0);
    assert_int_equal(resolve(base, "sub/../a.txt", "base/a.txt"), 0);
    assert_int_equal(resolve(base, "./sub//b.txt", "base/sub/b.txt"), 0);
    assert_int_equal(resolve(base, "link_in", "base/sub/b.txt"), 0);
    assert_int_equal(resolve(base, "abs_in", "base/a.txt"), 0);
    assert_int_equal(resolve(base, "sub", "base/sub"), 0);
    assert_int_equal(resolve(base, ".", "base"), 0);
    assert_int_equal(resolve(base, "new.txt", "base/new.txt"), 0);           /* an output */
    assert_int_equal(resolve(base, "newdir/x/y.txt", "base/newdir/x/y.txt"), 0);
    assert_int_equal(resolve(base, "sub/./new/", "base/sub/new"), 0);
    char *via = P("baselink");
    assert_int_equal(resolve(via, "a.txt", "base/a.txt"), 0);                 /* base via a symlink */
    free(via);
}

static void test_resolve_escapes(void **state)
{
    static const char *const bad[] = {
        "../outside.txt", "sub/../../outside.txt", "link_out", "link_dir_out/c.txt",
        "link_dir_out/new.txt", "link_dir_out", "/etc/passwd", "", "dangling", "dangling/x",
        "../base2/x", "..", "sub/../..",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(resolve(base, bad[i], NULL), 2016);
}

static void test_resolve_io_errors(void **state)
{
    assert_int_equal(resolve(base, "missing/../a.txt", NULL), 9004);
    assert_int_equal(resolve(base, "a.txt/x", NULL), 9004);
    char *nodir = P("no-such-dir");
    assert_int_equal(resolve(nodir, "a.txt", NULL), 9004);
    free(nodir);
}

static void test_read_file(void **state)
{
    cv_diag d;
    cv_diag_init(&d);
    char *path = P("base/a.txt"), *buf;
    size_t len = 99;
    assert_int_equal(cv_fs_read_file(path, 1, &buf, &len, &d), 0);
    assert_int_equal(len, 1);
    assert_string_equal(buf, "a");
    free(buf);
    assert_int_equal(cv_fs_read_file(path, 0, &buf, &len, &d), -1);
    assert_int_equal(first_code(&d), 1011);
    assert_null(buf);
    cv_diag_clear(&d);
    assert_int_equal(cv_fs_read_file(tmp, 100, &buf, &len, &d), -1);   /* a directory */
    assert_int_equal(first_code(&d), 9004);
    cv_diag_clear(&d);
    free(path);
    path = P("missing");
    assert_int_equal(cv_fs_read_file(path, 100, &buf, &len, &d), -1);
    assert_int_equal(first_code(&d), 9004);
    assert_string_equal(d.v[0].span.file, path);
    cv_diag_clear(&d);
    /* /proc files report size 0: the buffer must grow as it reads. */
    assert_int_equal(cv_fs_read_file("/proc/self/maps", 1 << 24, &buf, &len, &d), 0);
    assert_true(len > 256 && strlen(buf) == len);
    free(buf);
    assert_int_equal(cv_fs_read_file("/proc/self/maps", 100, &buf, &len, &d), -1);
    assert_int_equal(first_code(&d), 1011);
    cv_diag_free(&d);
    free(path);
}

static int count_entries(const char *dir)
{
    DIR *dp = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += e->d_name[0] != '.';
    closedir(dp);
    return n;
}

static void test_write_atomic(void **state)
{
    mk_dir("w");
    char *dir = P("w"), *path = P("w/out.bin"), *buf;
    size_t len;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_fs_write_atomic(path, "first", 5, &d), 0);
    assert_int_equal(cv_fs_write_atomic(path, "second!", 7, &d), 0);
    cv_fs_part parts[] = {{"ab", 2}, {NULL, 0}, {"cd", 2}};
    char *path2 = P("w/parts.bin");
    assert_int_equal(cv_fs_write_atomic_parts(path2, parts, 3, &d), 0);
    assert_int_equal(cv_fs_read_file(path, 100, &buf, &len, &d), 0);
    assert_string_equal(buf, "second!");
    free(buf);
    assert_int_equal(cv_fs_read_file(path2, 100, &buf, &len, &d), 0);
    assert_string_equal(buf, "abcd");
    free(buf);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(count_entries(dir), 2);   /* no temp files left behind */
    assert_int_equal(cv_fs_write_atomic("/nonexistent-dir/f", "x", 1, &d), -1);
    assert_int_equal(first_code(&d), 9004);
    cv_diag_free(&d);
    free(dir);
    free(path);
    free(path2);
}

static void test_mkdirs(void **state)
{
    char *p = P("m/a/b/c"), *f = P("base/a.txt/x");
    assert_int_equal(cv_fs_mkdirs(p, 0755), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(cv_fs_mkdirs(p, 0755), 0);          /* exists: fine */
    char *trail = P("m/t/");
    assert_int_equal(cv_fs_mkdirs(trail, 0755), 0);
    assert_int_equal(cv_fs_mkdirs(f, 0755), -ENOTDIR);
    free(p);
    free(f);
    free(trail);
}

static void test_dirname_and_join(void **state)
{
    static const char *const cases[][2] = {
        {"a/b", "a"}, {"a", "."}, {"/a", "/"}, {"/", "/"}, {"a/b/", "a"}, {"", "."}, {"a//b", "a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = cv_fs_dirname(cases[i][0]);
        assert_string_equal(s, cases[i][1]);
        free(s);
    }
    char *j = cv_fs_join("a", "b"), *k = cv_fs_join("a/", "b"), *l = cv_fs_join("", "b");
    assert_string_equal(j, "a/b");
    assert_string_equal(k, "a/b");
    assert_string_equal(l, "b");
    free(j);
    free(k);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_inside_ok),
        cmocka_unit_test(test_resolve_escapes),
        cmocka_unit_test(test_resolve_io_errors),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_mkdirs),
        cmocka_unit_test(test_dirname_and_join),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
