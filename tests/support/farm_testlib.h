/* Test helper (header-only, for test_controller_farm.c and test_controller_farm_trust.c): the
 * CU-IR pipeline the farm tests build, the example models, and what the
 * build DB recorded for a model's artifact. */
#ifndef CV_TEST_FARM_TESTLIB_H
#define CV_TEST_FARM_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>

#include "controller/controller.h"
#include "tests/support/tmpdir.h"

static const char FARM_PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: cuir}\n"
    "spec:\n"
    "  models: [\"models/*.cuir\"]\n"
    "  targets: [x86_64-avx2]\n"
    "  precisions: [fp32]\n";

/* examples/cuir/<name>, malloc'd. */
static inline char *farm_example(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/cuir/%s", cv_tmpdir_src_root(), name);
    size_t len;
    char *text = cv_tmpdir_read_file(path, &len);
    assert_non_null(text);
    return text;
}

/* The manifest ("" for a hit at planning) and L2 key of a model's artifact
 * (x86_64-avx2, precision prec) in the revision of commit hex. */
static inline void farm_artifact_key(const char *state_dir, const char *hex, const char *model,
                                     const char *prec, char manifest[CV_DIGEST_HEX + 1],
                                     char l2[CV_DIGEST_HEX + 1])
{
    char *db_path = cv_tmpdir_path(state_dir, "build.db");
    char rev[CV_REVISION_MAX + 1];
    snprintf(rev, sizeof rev, "main@sha1:%s", hex);
    cv_builddb *db;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_builddb_open(db_path, &db, &d), 0);
    assert_int_equal(cv_builddb_artifact_find(db, rev, model, "x86_64-avx2", prec, l2, manifest,
                                              &d), 1);
    cv_builddb_close(db);
    cv_diag_free(&d);
    free(db_path);
}

#endif
