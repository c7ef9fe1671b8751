/* The planner's look-up: which jobs of a revision the cache already holds,
 * decided from the model files alone (no front end, no compile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "compile/internal.h"

/* A key for a job whose L2 key is unknown yet: identical jobs get the same
 * one, so the queue still merges them. */
static void stand_in(const cv_build_keys *k, const cv_job_msg *job, char out[CV_DIGEST_HEX + 1])
{
    /* The model digest too: a model seen for the first time has no L1 key
     * yet (all zeros), and two such models must not merge into one job. */
    char buf[2 * CV_DIGEST_HEX + CV_MSG_TOKEN_MAX + 64];
    char l1[CV_DIGEST_HEX + 1];
    cv_compile_hex(&k->l1.digest, l1);
    int n = snprintf(buf, sizeof buf, "cuvil-l2-pending%c%s%c%s%c%s%c%s%c%s", 0, l1, 0,
                     job->model_digest, 0, job->target, 0, cv_precision_name(job->precision), 0,
                     cv_opt_level_name(job->opt_level));
    cv_digest dg;
    cv_cache_sha256(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf, &dg);
    cv_compile_hex(&dg, out);
}

int cv_build_plan_lookup(void *ctx, const cv_job_msg *job, char l2_key[CV_DIGEST_HEX + 1],
                          bool *hit)
{
    const cv_build_lookup *w = ctx;
    *hit = false;
    char *model = NULL;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_fs_resolve_inside(w->models_dir ? w->models_dir : ".", job->model_path, &model,
                                  &d);
    cv_build_keys k = {0};
    cv_build_opts o = {.model = model, .target = job->target, .precision = job->precision,
                       .opt_level = job->opt_level};
    cv_build_job_quant(job, w->models_dir ? w->models_dir : ".", &o.quant);
    cv_digest dg;
    char hex[CV_DIGEST_HEX + 1] = "";
    if (rc == 0 && (rc = cv_cache_file_digest(w->cache, model, &dg, &d)) == 0)
        cv_compile_hex(&dg, hex);
    if (rc == 0 && strcmp(hex, job->model_digest) != 0)
        rc = -1;                /* the files are not the revision the job was planned on */
    if (rc == 0)
        rc = cv_build_probe(w->cache, &o, false, &k, &d);
    if (rc == 0 && k.have_l2) {
        cv_compile_hex(&k.l2.digest, l2_key);
        *hit = k.l2_hit;
    } else if (rc == 0) {
        stand_in(&k, job, l2_key);
    }
    cv_build_keys_free(&k);
    cv_diag_free(&d);
    free(model);
    return rc == 0 ? 0 : -1;
}

void cv_build_job_quant(const cv_job_msg *job, const char *root, cv_quant_opts *q)
{
    memset(q, 0, sizeof *q);
    if (!job->calibration)
        return;
    int method = job->calibration_method ? cv_calib_method_parse(job->calibration_method) : -1;
    q->calibration = job->calibration;
    q->calibration_root = root;
    q->method = method < 0 ? CV_CALIB_PERCENTILE : (cv_calib_method)method;
}
