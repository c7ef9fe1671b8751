/* cuvil cache explain MODEL [-t TARGET] [-O0..-O3] [-p PRECISION]
 * Computes the keys this compile would use and compares each level's key
 * manifest with the closest stored one, naming the fields that differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cli/cli.h"
#include "queue/jobmsg.h"
#include "compile/build.h"

/* A retrain: the code part and the weights part apart. */
static bool explain_retrain(cv_cache *c, const char *name, const cv_cache_key *key,
                            const cv_cache_diffs *diffs, cv_diag *d)
{
    char why[160];
    if (!cv_build_explain_weights(diffs, key->manifest, why, sizeof why))
        return false;
    printf("%s: miss; %s\n", name, why);
    const char *weights = strstr(why, "weights changed");
    if (cv_build_code_stored(c, key, d) == 1)
        printf("code: hit (structure unchanged), %s\n", weights ? weights : why);
    else
        printf("code: miss (the code of this structure is not stored), %s\n",
               weights ? weights : why);
    return true;
}

static void explain_level(cv_cache *c, cv_cache_level lv, const char *name,
                          const cv_cache_key *key, bool hit, cv_diag *d)
{
    if (hit) {
        printf("%s: hit\n", name);
        return;
    }
    char *closest = NULL;
    cv_cache_diffs diffs = {0};
    if (cv_cache_closest_manifest(c, lv, key->manifest, &closest, d) != 1) {  /* 1: found */
        printf("%s: miss (nothing comparable stored)\n", name);
    } else if (cv_cache_explain(closest, key->manifest, &diffs, d) == 0 && diffs.n == 0) {
        printf("%s: miss; the closest stored entry has the same key fields\n", name);
    } else if (lv == CV_CACHE_L2 && explain_retrain(c, name, key, &diffs, d)) {
        ;
    } else if (diffs.n > 0) {
        printf("%s: miss; the closest stored entry differs in %d field%s:\n", name, diffs.n,
               diffs.n == 1 ? "" : "s");
        for (int i = 0; i < diffs.n; i++)
            printf("  %s\n", diffs.v[i].text);
    }
    cv_cache_diffs_free(&diffs);
    free(closest);
}

int cv_cli_cache_explain(const char *model, const char *target, const char *precision,
                         int opt_level)
{
    cv_build_opts o = {.model = model, .target = target, .opt_level = (cv_opt_level)opt_level,
                       .precision = precision ? (cv_precision)cv_precision_parse(precision)
                                              : CV_PRECISION_FP32};
    cv_diag d;
    cv_diag_init(&d);
    cv_cache *c = NULL;
    cv_build_keys k = {0};
    int rc = CV_EXIT_INPUT;
    if (cv_cache_open(&(cv_cache_options){0}, &c, &d) == 0 &&
        cv_build_probe(c, &o, true, &k, &d) == 0) {
        explain_level(c, CV_CACHE_L1, "l1 (front end)", &k.l1, k.l1_hit, &d);
        if (k.have_l2)
            explain_level(c, CV_CACHE_L2, "l2 (artifact)", &k.l2, k.l2_hit, &d);
        rc = CV_EXIT_OK;
    }
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_build_keys_free(&k);
    cv_cache_close(c);
    cv_diag_free(&d);
    return rc;
}
