/* cv_fs_glob: a pattern from a repository (int8 calibration data of a farm
 * job) stays inside its directory: absolute patterns and `..` are refused
 * (CV9313), a match that a symbolic link takes outside is refused (CV2016),
 * through cv_calib_digest as the farm's key builder calls it.  Without a
 * root (the command line) a pattern is taken as given. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/cuvil.h"
#include "tests/support/tmpdir.h"

typedef struct fx {
    char *tmp;      /* owned: removed at teardown */
    char *repo;     /* tmp/repo: calib/a.npy, calib/b.npy */
    char *outside;  /* tmp/outside: secret.npy */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->tmp = cv_tmpdir_make("fsglob");
    f->repo = cv_tmpdir_path(f->tmp, "repo");
    f->outside = cv_tmpdir_path(f->tmp, "outside");
    char *calib = cv_tmpdir_path(f->repo, "calib");
    if (cv_fs_mkdirs(calib, 0755) || cv_fs_mkdirs(f->outside, 0755) ||
        cv_tmpdir_write(calib, "a.npy", "A", 1) || cv_tmpdir_write(calib, "b.npy", "B", 1) ||
        cv_tmpdir_write(f->outside, "secret.npy", "S", 1))
        return -1;
    free(calib);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    free(f->repo);
    free(f->outside);
    cv_tmpdir_remove(f->tmp);
    free(f);
    return 0;
}

/* cv_fs_glob(root, pattern): -1 and the code, or the number of matches. */
static int glob_code(const char *root, const char *pattern, int *code)
{
    glob_t g;
    cv_diag d;
    cv_diag_init(&d);
    int n = cv_fs_glob(root, pattern, &g, &d);
    *code = n < 0 && d.n ? d.v[0].code : 0;
    if (n > 0) {
        for (size_t i = 0; root && i < g.gl_pathc; i++)   /* every match is under root */
            assert_memory_equal(g.gl_pathv[i], root, strlen(root));
        globfree(&g);
    }
    cv_diag_free(&d);
    return n;
}

static void test_inside_matches(void **state)
{
    fx *f = *state;
    int code;
    assert_int_equal(glob_code(f->repo, "calib/*.npy", &code), 2);
    assert_int_equal(glob_code(f->repo, "calib/none-*.npy", &code), 0);
    assert_int_equal(code, 0);
}

static void test_absolute_and_dotdot_refused(void **state)
{
    fx *f = *state;
    char abs[600];
    snprintf(abs, sizeof abs, "%s/*.npy", f->outside);
    int code;
    assert_int_equal(glob_code(f->repo, abs, &code), -1);
    assert_int_equal(code, 9313);
    assert_int_equal(glob_code(f->repo, "../outside/*.npy", &code), -1);
    assert_int_equal(code, 9313);
    assert_int_equal(glob_code(f->repo, "calib/../../outside/*.npy", &code), -1);
    assert_int_equal(code, 9313);
    /* `.*` matches `..`: caught when the match is resolved */
    int n = glob_code(f->repo, ".*/outside/*.npy", &code);
    assert_true(n == 0 || (n == -1 && code == 2016));
    /* the command line: taken as given */
    assert_int_equal(glob_code(NULL, abs, &code), 1);
}

static void test_symlink_out_refused(void **state)
{
    fx *f = *state;
    char *secret = cv_tmpdir_path(f->outside, "secret.npy");
    char *calib = cv_tmpdir_path(f->repo, "calib");
    char *link = cv_tmpdir_path(calib, "c.npy");
    char *dirlink = cv_tmpdir_path(f->repo, "more");
    assert_int_equal(symlink(secret, link), 0);
    int code;
    assert_int_equal(glob_code(f->repo, "calib/*.npy", &code), -1);
    assert_int_equal(code, 2016);
    unlink(link);
    assert_int_equal(symlink(f->outside, dirlink), 0);   /* a directory link */
    assert_int_equal(glob_code(f->repo, "more/*.npy", &code), -1);
    assert_int_equal(code, 2016);
    assert_int_equal(glob_code(f->repo, "calib/*.npy", &code), 2);
    unlink(dirlink);
    free(secret);
    free(calib);
    free(link);
    free(dirlink);
}

/* The key builder and the quantizer take the root from cv_quant_opts. */
static void test_calibration_digest_confined(void **state)
{
    fx *f = *state;
    char hex[65];
    cv_diag d;
    cv_diag_init(&d);
    cv_quant_opts q = {.precision = CV_PRECISION_INT8, .calibration = "../outside/*.npy",
                       .calibration_root = f->repo};
    assert_int_equal(cv_calib_digest(&q, hex, &d), -1);
    assert_int_equal(d.v[0].code, 9313);
    cv_diag_free(&d);
    cv_diag_init(&d);
    q.calibration = "calib/*.npy";
    assert_int_equal(cv_calib_digest(&q, hex, &d), 0);
    assert_int_equal(strlen(hex), 64);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inside_matches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absolute_and_dotdot_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_out_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calibration_digest_confined, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
