/* Building a C99 artifact into a shared object with the system's C
 * compiler, strictly (-std=c99 -pedantic -Wall -Wextra -Werror), so that
 * the tests and the conformance runner load it like a native artifact. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "compiler-core/backend/artifact_internal.h"
#include "compiler-core/backend/c99/c99.h"

enum { MAX_FLAGS = 16 };

int cv_c99_build_shared(const char *cc, const char *dir, const char *name,
                        const char *const *flags, int n_flags, bool *missing, cv_diag *d)
{
    *missing = false;
    if (n_flags < 0 || n_flags > MAX_FLAGS)
        return cv_diag_fail(d, CV_E_C99_BUILD_FAILED, (cv_span){.file = dir}, "%d extra C compiler flags, at "
                            "most %d", n_flags, MAX_FLAGS);
    char file[300];
    snprintf(file, sizeof file, "lib%s.so", name);
    char *so = cv_fs_join(dir, file);
    snprintf(file, sizeof file, "%s.c", name);
    char *src = cv_fs_join(dir, file);
    snprintf(file, sizeof file, "%s_weights.c", name);
    char *weights = cv_fs_join(dir, file);
    char *argv[16 + MAX_FLAGS] = {(char *)cc, "-std=c99", "-pedantic", "-Wall", "-Wextra",
                                  "-Werror", "-O2", "-fPIC", "-shared", "-o", so, src, weights};
    int argc = 13;
    for (int i = 0; i < n_flags; i++)
        argv[argc++] = (char *)flags[i];
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    int rc = -1;
    char out[8192];
    if (!so || !src || !weights) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = dir}, "out of memory");
    } else if ((rc = cv_spawn_capture(argv, out, sizeof out)) == -ENOENT) {
        *missing = true;
    } else if (rc < 0) {
        cv_diag_error(d, CV_E_C99_BUILD_FAILED, (cv_span){.file = src}, "cannot start %s: %s", cc, strerror(-rc));
    } else if (rc > 0) {
        cv_diag_error(d, CV_E_C99_BUILD_FAILED, (cv_span){.file = src}, "%s rejected the generated C (exit %d): %s",
                      cc, rc, out);
    }
    free(so);
    free(src);
    free(weights);
    return rc == 0 ? 0 : -1;
}
