/* `cuvil artifacts get`: an artifact the farm built, written out of the
 * cache by its L2 key (a planner hit records only the key) or by its file
 * list's digest (a compiled job records that too). */
#include <stdlib.h>
#include <string.h>

#include "worker/internal.h"

int cv_build_fetch_artifact(cv_cache *c, const char *l2_hex, const char *manifest_hex,
                            const char *out_dir, cv_diag *d)
{
    if (manifest_hex && *manifest_hex)
        return cv_build_materialise(c, manifest_hex, out_dir, d);
    cv_cache_key key = {0};
    if (cv_cache_digest_parse(l2_hex, &key.digest) != 0)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0},
                            "'%.80s' is not an L2 key", l2_hex);
    void *list = NULL;
    size_t len = 0;
    int rc = cv_cache_get_action(c, CV_CACHE_L2, &key, &list, &len, NULL, d);
    if (rc == 1) {
        char name[128], why[256];
        rc = cv_wk_artifact_materialise(c, list, len, out_dir, name, why, sizeof why, d);
    }
    free(list);
    return rc;
}
