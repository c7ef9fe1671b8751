/* `cuvil artifacts get`: an artifact the farm built, written out of the
 * cache by its L2 key (a planner hit records only the key) or by its file
 * list's digest (a compiled job records that too). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "compile/internal.h"

enum { CVSYM_MAX = 64u << 20 };

/* The symbol-table fingerprint in a .cvsym document, or NULL. */
static const char *fingerprint_of(json_t *sym)
{
    return json_string_value(json_object_get(sym, "fingerprint"));
}

/* The fetched artifact's own symbol map, read from the cache (small). */
static json_t *incoming_symbols(cv_cache *c, json_t *files, const char *file, cv_diag *d)
{
    const char *hex = json_string_value(json_object_get(json_object_get(files, file), "sha256"));
    cv_digest dg;
    void *data = NULL;
    size_t len = 0;
    json_t *sym = NULL;
    if (hex && cv_cache_digest_parse(hex, &dg) == 0 &&
        cv_cache_get_blob(c, &dg, &data, &len, NULL, d) == 1 && len <= CVSYM_MAX)
        sym = json_loadb(data, len, 0, NULL);
    free(data);
    return sym;
}

/* As `cuvil compile` does (CV5035): an artifact of the same name made from
 * another model in out_dir is not overwritten, or a program linking it
 * would silently get the other model. */
static int check_name_free(cv_cache *c, const void *list, size_t len, const char *out_dir,
                           cv_diag *d)
{
    json_t *o = json_loadb(list, len, 0, NULL);
    const char *nm = json_string_value(json_object_get(o, "name"));
    char file[160];
    json_t *have = NULL, *want = NULL;
    int rc = 0;
    if (nm && strlen(nm) < 128) {
        snprintf(file, sizeof file, "%s.cvsym", nm);
        char *path = cv_fs_join(out_dir, file);
        cv_diag quiet;      /* no readable symbol map there: nothing is known to be lost */
        cv_diag_init(&quiet);
        if (path && access(path, F_OK) == 0)
            cv_json_read_file(path, CVSYM_MAX, &have, &quiet);
        cv_diag_free(&quiet);
        free(path);
    }
    if (fingerprint_of(have))
        want = incoming_symbols(c, json_object_get(o, "files"), file, d);
    if (fingerprint_of(have) && fingerprint_of(want) &&
        strcmp(fingerprint_of(have), fingerprint_of(want)) != 0) {
        cv_diag_error(d, CV_E_ARTIFACT_NAME_TAKEN, (cv_span){.file = out_dir},
                           "%s already holds an artifact named '%s' made from another model "
                           "(its %s differs): fetch into another -o, or give --force to "
                           "replace it", out_dir, nm, file);
        rc = -1;
    }
    json_decref(have);
    json_decref(want);
    json_decref(o);
    return rc;
}

static int materialise(cv_cache *c, const void *list, size_t len, const char *out_dir, bool force,
                       cv_diag *d)
{
    char name[128], why[256];
    if (!force && check_name_free(c, list, len, out_dir, d) != 0)
        return -2;
    return cv_compile_artifact_materialise(c, list, len, out_dir, name, why, sizeof why, d);
}

int cv_build_fetch_artifact(cv_cache *c, const char *l2_hex, const char *manifest_hex,
                            const char *out_dir, bool force, cv_diag *d)
{
    cv_cache_key key = {0};
    void *list = NULL;
    size_t len = 0;
    int rc;
    if (manifest_hex && *manifest_hex) {
        cv_digest dg;
        if (cv_cache_digest_parse(manifest_hex, &dg) != 0)
            return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0},
                                "'%.80s' is not an artifact manifest digest", manifest_hex);
        rc = cv_cache_get_blob(c, &dg, &list, &len, NULL, d);
    } else {
        if (cv_cache_digest_parse(l2_hex, &key.digest) != 0)
            return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0},
                                "'%.80s' is not an L2 key", l2_hex);
        rc = cv_cache_get_action(c, CV_CACHE_L2, &key, &list, &len, NULL, d);
    }
    if (rc == 1)
        rc = materialise(c, list, len, out_dir, force, d);
    free(list);
    return rc;
}
