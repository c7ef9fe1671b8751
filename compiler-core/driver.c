/* The pipeline's front door: pick a front end, load, verify. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/cuvil.h"
#include "compiler-core/frontends/dsl/dsl.h"
#include "compiler-core/frontends/onnx/onnx_import.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool cuir_matches(const char *path, const char *head, size_t len)
{
    return ends_with(path, ".cuir") || (len >= 5 && memcmp(head, "cuir ", 5) == 0);
}

static cv_module *cuir_load(const char *path, cv_diag *d)
{
    char *text;
    size_t len;
    if (cv_fs_read_file(path, CV_MAX_MODEL_TEXT, &text, &len, d))
        return NULL;
    cv_diag_add_source(d, path, text, len);
    cv_module *m = cv_cuir_parse(text, len, path, d);
    free(text);
    return m;
}

static const cv_frontend frontends[] = {
    {"cuir", "1", cuir_matches, cuir_load, NULL},
    {"onnx", "1", cv_onnx_matches, cv_onnx_load, cv_onnx_load_check},
    {"dsl", CV_DSL_VERSION, cv_dsl_matches, cv_dsl_load, NULL},
};

const cv_frontend *cv_frontend_at(int i)
{
    return (i >= 0 && (size_t)i < sizeof frontends / sizeof frontends[0]) ? &frontends[i] : NULL;
}

const cv_frontend *cv_frontend_for(const char *path, cv_diag *d)
{
    char head[64] = {0};
    ssize_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cv_diag_error(d, CV_E_IO_ERROR, (cv_span){.file = path}, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    n = read(fd, head, sizeof head);
    close(fd);
    /* git-lfs's pointer text, committed where the model should be. */
    static const char lfs[] = "version https://git-lfs.github.com/spec/";
    if (n >= (ssize_t)sizeof lfs - 1 && memcmp(head, lfs, sizeof lfs - 1) == 0) {
        cv_diag_error(d, CV_E_GIT_LFS_POINTER, (cv_span){.file = path, .line = 1, .col = 1},
                      "%s is a Git LFS pointer, not the model itself: fetch the object with "
                      "`git lfs pull` (or `git lfs fetch && git lfs checkout`)", path);
        return NULL;
    }
    for (size_t i = 0; i < sizeof frontends / sizeof frontends[0]; i++)
        if (frontends[i].matches(path, head, n > 0 ? (size_t)n : 0))
            return &frontends[i];
    cv_diag_error(d, CV_E_UNKNOWN_MODEL_FORMAT, (cv_span){.file = path},
                  "%s is not a model Cuvil reads (expected .cuir, .onnx or .cvl.py)", path);
    return NULL;
}

cv_module *cv_model_load(const char *path, unsigned flags, cv_diag *d)
{
    const cv_frontend *fe = cv_frontend_for(path, d);
    if (!fe)
        return NULL;
    bool check = (flags & CV_LOAD_CHECK_ONLY) && fe->load_check;
    cv_module *m = check ? fe->load_check(path, d) : fe->load(path, d);
    if (!m)
        return NULL;
    int rc = cv_verify(m, (flags & CV_LOAD_STRICT) ? CV_VERIFY_STRICT : 0, d);
    if (rc == 0 && !(flags & CV_LOAD_NO_WEIGHTS)) {
        char *dir = cv_fs_dirname(path);
        rc = dir ? cv_module_load_weights(m, dir, d) : -1;
        free(dir);
    }
    if (rc) {
        cv_module_free(m);
        return NULL;
    }
    return m;
}
