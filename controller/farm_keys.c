/* The farm's action-cache key pair.  A farm that shares a remote cache
 * signs every action entry its workers PUT there and refuses, on every
 * read, entries that are unsigned or signed by another key: whoever else
 * can write to the remote (or serve it) can then no longer point a farm's
 * L2 key at an artifact of their choosing.  Without keys from the operator
 * the farm makes a pair in its state directory on first use and keeps it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "common/fs.h"
#include "controller/controller.h"
#include "controller/internal.h"

#define KEYS_DIR "keys"
#define SIGN_FILE "ac-signing.pem"
#define VERIFY_FILE "ac-verify.pem"

static int oom(cv_diag *d)
{
    return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
}

int cv_farm_signing_keys(const char *state_dir, const char *sign, const char *verify,
                         char **sign_out, char **verify_out, cv_diag *d)
{
    *sign_out = *verify_out = NULL;
    if (sign && *sign) {
        *sign_out = strdup(sign);
        *verify_out = strdup(verify && *verify ? verify : sign);
        return *sign_out && *verify_out ? 0 : oom(d);
    }
    if (verify && *verify)
        return cv_diag_fail(d, CV_E_FARM_SIGNING_KEYS, (cv_span){0},
                            "a verify key without a signing key: the farm's workers could "
                            "not sign what they store in the remote cache (--signing-key)");
    char *dir = cv_fs_join(state_dir, KEYS_DIR);
    if (!dir)
        return oom(d);
    *sign_out = cv_fs_join(dir, SIGN_FILE);
    *verify_out = cv_fs_join(dir, VERIFY_FILE);
    int rc = *sign_out && *verify_out ? 0 : oom(d);
    if (rc == 0 && cv_fs_mkdirs(dir, 0700) != 0) {
        cv_diag_error(d, CV_E_FARM_SIGNING_KEYS, (cv_span){.file = dir},
                      "cannot create %s for the farm's action-cache keys", dir);
        rc = -1;
    }
    if (rc == 0 && (access(*sign_out, R_OK) != 0 || access(*verify_out, R_OK) != 0) &&
        cv_cache_ac_keygen(*sign_out, *verify_out, d) != 0)
        rc = -1;
    free(dir);
    if (rc) {
        free(*sign_out);
        free(*verify_out);
        *sign_out = *verify_out = NULL;
    }
    return rc;
}
