/* Test helper (header-only, for test_controller_failures.c and
 * test_controller_failures_faults.c): repositories written to disk and committed as
 * they are (binary files too), and `cuvil failures --json` read back. */
#ifndef CV_TEST_FAILURES_TESTLIB_H
#define CV_TEST_FAILURES_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

/* The sanitized binary under test ($CUVIL_BIN), or NULL: then skip. */
static inline const char *cuvil_bin(void)
{
    const char *bin = getenv("CUVIL_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0)
        return NULL;
    return bin;
}

static inline void write_file(const char *path, const char *text, size_t len)
{
    char *dir = strdup(path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
    free(dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* Commits every file of the working tree (binary ones too). */
static inline void commit_all(git_repository *r, const char *msg, char hex[41])
{
    git_index *idx;
    trepo_check(git_repository_index(&idx, r), "index");
    char *all[] = {"*"};
    git_strarray spec = {all, 1};
    trepo_check(git_index_add_all(idx, &spec, GIT_INDEX_ADD_DEFAULT, NULL, NULL), "add all");
    trepo_check(git_index_write(idx), "write index");
    git_index_free(idx);
    trepo_commit(r, msg, NULL, 0, hex);
}

static inline json_t *run_json(const char *const *argv, const char *err, int want_rc)
{
    char *out = NULL;
    int rc = cv_run_argv(argv, err, &out);
    if (rc != want_rc) {
        size_t n;
        char *e = cv_tmpdir_read_file(err, &n);
        fail_msg("%s %s: exit %d\n%s%s", argv[0], argv[1], rc, out ? out : "", e ? e : "");
    }
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    free(out);
    assert_non_null(j);
    return j;
}

static inline json_t *find_group(json_t *report, const char *pattern)
{
    json_t *pats = json_object_get(report, "patterns");
    for (size_t i = 0; i < json_array_size(pats); i++) {
        json_t *g = json_array_get(pats, i);
        if (strcmp(json_string_value(json_object_get(g, "pattern")), pattern) == 0)
            return g;
    }
    return NULL;
}

#endif
