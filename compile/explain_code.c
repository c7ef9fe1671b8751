/* Explaining a retrain: an L2 miss whose key differs from the closest
 * stored one only in weight fields is "structure unchanged, weights
 * changed (n of m tensors)", and whether the code level holds the code of
 * that structure is told by a link the compile leaves behind:
 *
 *   aux("cuvil-code-of": the L2 key's fields but the IR digest and the
 *        weights) -> the code key the compile of that structure used
 *
 * The code level itself is keyed by the generated module (build.c), which
 * only a compile knows; the link lets `cuvil cache explain` answer without
 * compiling.  A weight that steers code generation changes the structure
 * field (canonical.c), so the link never names code the model cannot use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/internal.h"

static bool weight_field(const char *name)
{
    return name && strncmp(name, "weight:", 7) == 0;
}

/* The fields of a key manifest ({"fields": [{"name", "value"}...]}). */
static json_t *fields_of(const char *manifest)
{
    json_t *root = manifest ? json_loads(manifest, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *f = json_incref(json_object_get(root, "fields"));
    json_decref(root);
    if (!json_is_array(f)) {
        json_decref(f);
        return NULL;
    }
    return f;
}

bool cv_build_explain_weights(const cv_cache_diffs *diffs, const char *manifest, char *buf,
                              size_t size)
{
    int changed = 0, total = 0;
    for (int i = 0; i < diffs->n; i++) {
        if (strcmp(diffs->v[i].field, "structure") == 0)
            return false;
        changed += weight_field(diffs->v[i].field);
    }
    json_t *fields = fields_of(manifest), *f;
    size_t i;
    json_array_foreach(fields, i, f)
        total += weight_field(json_string_value(json_object_get(f, "name")));
    json_decref(fields);
    if (changed == 0)
        return false;
    snprintf(buf, size, "structure unchanged, weights changed (%d of %d tensors)", changed,
             total);
    return true;
}

int cv_compile_code_link_key(const char *l2_manifest, cv_cache_key *out, cv_diag *d)
{
    json_t *fields = fields_of(l2_manifest), *f;
    if (!fields)
        return cv_diag_fail(d, CV_E_CACHE_BAD_MANIFEST, (cv_span){0}, "not an L2 key manifest");
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-code-of");
    size_t i;
    json_array_foreach(kb ? fields : NULL, i, f) {
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!name || weight_field(name) || strcmp(name, "ir_digest") == 0)
            continue;
        char *value = json_dumps(json_object_get(f, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
        cv_cache_keyb_str(kb, name, value ? value : "");
        free(value);
    }
    json_decref(fields);
    return cv_cache_keyb_finish(kb, out, d);
}

int cv_build_code_stored(cv_cache *c, const cv_cache_key *l2, cv_diag *d)
{
    cv_cache_key link = {0};
    void *val = NULL;
    size_t len = 0;
    int rc = cv_compile_code_link_key(l2->manifest, &link, d);
    if (rc == 0)
        rc = cv_cache_get_aux(c, &link, &val, &len, NULL, d);
    cv_cache_key code = {0};
    char hex[CV_DIGEST_HEX + 1];
    if (rc == 1 && len == CV_DIGEST_HEX) {
        memcpy(hex, val, len);
        hex[len] = 0;
        rc = cv_cache_digest_parse(hex, &code.digest) == 0 ? 1 : 0;
    } else if (rc == 1) {
        rc = 0;
    }
    free(val);
    void *entry = NULL;
    if (rc == 1)
        rc = cv_cache_get_action(c, CV_CACHE_CODE, &code, &entry, &len, NULL, d) == 1 ? 1 : 0;
    free(entry);
    cv_cache_key_free(&link);
    return rc;
}
