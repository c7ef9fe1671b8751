/* Helpers shared by the worker tests: a tiny model-language model with a
 * safetensors file, written at test time, and a cache in a temp dir. */
#ifndef CV_TEST_WORKER_UTIL_H
#define CV_TEST_WORKER_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/safetensors.h"
#include "tests/support/tmpdir.h"
#include "worker/worker.h"

/* relu(x @ W.T + b + BIAS): BIAS is a constant in the source, W and b are
 * weights. */
static inline char *twu_model_text(const char *bias, const char *comment)
{
    char *s = malloc(1024);
    if (!s)
        abort();
    snprintf(s, 1024,
             "\"\"\"A tiny model for the worker tests.\"\"\"\n"
             "import cuvil as cvl\n%s\n\n"
             "@cvl.model(input_shapes=[(\"N\", 8)], weights=\"tiny.safetensors\")\n"
             "def tiny(x, p):\n"
             "    return cvl.relu(x @ p.fc.weight.T + p.fc.bias + %s)\n",
             comment ? comment : "", bias);
    return s;
}

/* Writes dir/tiny.safetensors; seed changes the weight values. */
static inline int twu_write_weights(const char *dir, const char *name, float seed)
{
    float w[32], b[4];
    for (int i = 0; i < 32; i++)
        w[i] = (float)i / 10.0f + seed;
    for (int i = 0; i < 4; i++)
        b[i] = 1.0f;
    cv_st_tensor t[2] = {
        {.name = "fc.bias", .dtype = CV_F32, .rank = 1, .dims = {4}, .data = b, .nbytes = sizeof b},
        {.name = "fc.weight", .dtype = CV_F32, .rank = 2, .dims = {4, 8}, .data = w,
         .nbytes = sizeof w},
    };
    char *path = cv_tmpdir_path(dir, name);
    int rc = cv_safetensors_write(path, t, 2, NULL);
    free(path);
    return rc;
}

/* A model directory dir/sub with model `file` and its weights. */
static inline char *twu_model_dir(const char *dir, const char *sub, const char *file,
                                  const char *bias, const char *comment, float seed)
{
    char *mdir = cv_tmpdir_path(dir, sub);
    char *text = twu_model_text(bias, comment);
    if (mkdir(mdir, 0755) != 0 && errno != EEXIST)
        abort();
    if (cv_tmpdir_write(mdir, file, text, strlen(text)) != 0 ||
        twu_write_weights(mdir, "tiny.safetensors", seed) != 0)
        abort();
    free(text);
    return mdir;
}

static inline cv_cache *twu_cache(const char *dir, const char *sub)
{
    char *cdir = cv_tmpdir_path(dir, sub);
    cv_cache_options o = {.dir = cdir, .remote = "", .ignore_env = true};
    cv_cache *c = NULL;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_cache_open(&o, &c, &d) != 0)
        cv_diag_print(&d, stderr, false);
    cv_diag_free(&d);
    free(cdir);
    return c;
}

#endif
