/* Opening a model natively for `cuvil run` and `cuvil bench`: an artifact
 * directory as it is, a model file compiled into a temporary directory. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fs.h"
#include "compiler-core/cuvil.h"

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void cv_cli_remove_tmpdir(char *dir)
{
    if (dir)
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static bool is_artifact_dir(const char *path)
{
    struct stat st;
    char *m = cv_fs_join(path, "manifest.json");
    bool yes = stat(path, &st) == 0 && S_ISDIR(st.st_mode) && m && access(m, R_OK) == 0;
    free(m);
    return yes;
}

char *cv_cli_make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/cuvil-run-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(path) ? strdup(path) : NULL;
}

int cv_cli_open_native(const char *model_or_dir, int threads, cv_native **out, char **tmpdir,
                       double *compile_ms, cv_diag *d)
{
    *tmpdir = NULL;
    *compile_ms = 0;
    if (is_artifact_dir(model_or_dir))
        return cv_native_open(model_or_dir, threads, out, d);
    size_t len = strlen(model_or_dir);
    if (len >= 13 && strcmp(model_or_dir + len - 13, "manifest.json") == 0)
        return cv_native_open_manifest(model_or_dir, threads, out, d);
    cv_module *m = cv_model_load(model_or_dir, 0, d);
    if (!m)
        return -1;
    char *dir = cv_cli_make_tmpdir();
    if (!dir) {
        cv_module_free(m);
        return cv_diag_fail(d, CV_E_IO_ERROR, (cv_span){0}, "cannot create a temporary directory: %s",
                            strerror(errno));
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Never cached: the symbol map may hold locations (cuvil run --trace). */
    cv_compile_opts o = {.target = "native", .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = dir,
                         .sym_locs = true, .test_faults = true};
    cv_compile_info info;
    int rc = cv_compile_native(m, &o, &info, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *compile_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    cv_module_free(m);
    if (rc == 0)
        rc = cv_native_open(dir, threads, out, d);
    if (rc)
        cv_cli_remove_tmpdir(dir);
    else
        *tmpdir = dir;
    return rc;
}
