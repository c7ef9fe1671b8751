/* Glob expansion confined to a directory: a pattern that comes from a
 * repository (int8 calibration data named by a spec and compiled by a farm
 * job) must not read files outside that repository.  A pattern cannot be
 * checked by its text alone (`.*` matches `..`, a directory inside may be a
 * symbolic link to one outside), so every match is resolved and checked;
 * the text checks only refuse the obvious cases early, with a clear
 * message, before anything outside is even listed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"


static bool has_dotdot(const char *pattern)
{
    for (const char *p = pattern; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n + (p[n] == '/');
    }
    return false;
}

/* root with glob's special characters escaped, then '/', then pattern;
 * malloc'd. */
static char *rooted(const char *root, const char *pattern)
{
    size_t n = strlen(root), m = strlen(pattern);
    char *s = malloc(2 * n + m + 2), *o = s;
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strchr("*?[]\\", root[i]))
            *o++ = '\\';
        *o++ = root[i];
    }
    *o++ = '/';
    memcpy(o, pattern, m + 1);
    return s;
}

/* Every match, resolved with symbolic links followed, lies inside root. */
static int matches_inside(const char *root, size_t prefix, const glob_t *g, cv_diag *d)
{
    for (size_t i = 0; i < g->gl_pathc; i++) {
        char *real = NULL;   /* owned here */
        int rc = cv_fs_resolve_inside(root, g->gl_pathv[i] + prefix, &real, d);
        free(real);
        if (rc)
            return -1;
    }
    return 0;
}

/* glob(3); the match count, or 0 with *g empty. */
static int expand(const char *pattern, glob_t *g)
{
    if (glob(pattern, 0, NULL, g) == 0 && g->gl_pathc)
        return g->gl_pathc < (size_t)INT32_MAX ? (int)g->gl_pathc : INT32_MAX;
    globfree(g);
    memset(g, 0, sizeof *g);
    return 0;
}

int cv_fs_glob(const char *root, const char *pattern, glob_t *g, cv_diag *d)
{
    memset(g, 0, sizeof *g);
    if (!root)
        return expand(pattern, g);
    if (pattern[0] == '/' || has_dotdot(pattern)) {
        cv_diag_error(d, CV_E_GLOB_ESCAPES, (cv_span){0},
                      "the pattern `%s` %s; name files relative to `%s`, inside it", pattern,
                      pattern[0] == '/' ? "is absolute" : "climbs with `..`", root);
        return -1;
    }
    char *full = rooted(root, pattern);   /* owned here */
    if (!full) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    int n = expand(full, g);
    free(full);
    if (n > 0 && matches_inside(root, strlen(root) + 1, g, d)) {
        globfree(g);
        memset(g, 0, sizeof *g);
        return -1;
    }
    return n;
}
