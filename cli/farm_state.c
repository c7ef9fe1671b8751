/* Helpers for the commands that meet a farm through its state directory
 * and its queue: farm, controller, worker, submit, status, artifacts. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/diag.h"
#include "common/fs.h"
#include "queue/queue.h"
#include "controller/builddb.h"

int cv_cli_queue_url(const char *url, const char *const *kv, int n, char **out, cv_diag *d)
{
    char *cur = url ? strdup(url) : NULL;
    if (url && !cur) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char *next = NULL;
        if (cv_queue_kafka_config_add(cur, kv[i], &next, d) != 0) {
            free(cur);
            return -1;
        }
        free(cur);
        cur = next;
    }
    *out = cur;
    return 0;
}

const char *cv_cli_default_state(void)
{
    const char *s = getenv("CUVIL_FARM_STATE");
    return s && *s ? s : ".cuvil-farm";
}

int cv_cli_open_builddb(const char *state_dir, cv_builddb **out, cv_diag *d)
{
    *out = NULL;
    char *path = cv_fs_join(state_dir, "build.db");
    if (!path) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    int rc = 0;
    /* opening would create an empty DB: say instead that no farm is there */
    if (access(path, F_OK) != 0) {
        cv_diag_error(d, CV_E_BUILDDB_OPEN_FAILED, (cv_span){.file = path},
                      "no farm state in %s (start one with `cuvil farm up` or `cuvil "
                      "controller`, or pass --state DIR)", state_dir);
        rc = -1;
    }
    if (rc == 0)
        rc = cv_builddb_open(path, out, d);
    free(path);
    return rc;
}
