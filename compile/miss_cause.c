/* Why a cache entry was not found: the key fields that differ from the
 * closest stored entry in words (--explain, the worker's results), and as
 * one word a dashboard can count: the farm records it with every job that
 * compiled (the dashboard's top misses).
 * The words are part of the result message and the build DB's schema
 * (docs/formats.md): add, never rename. */
#include "compile/build.h"
#include "compile/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Key fields by what changing them means; the first class with a changed
 * field wins, in this order: a new compiler rebuilds everything whatever
 * else changed too, new options rebuild this model's artifacts, a new
 * model rebuilds its code, new weights only its weights image. */
static const struct {
    const char *cause;
    const char *fields; /* space-separated names; "weight:" prefixes one */
} classes[] = {
    {"compiler", "compiler_build_id llvm_version frontend frontend_version "},
    {"options", "target target_triple target_features precision calibration opt_level debug "
                "no_blocked_layout artifact_name emit options "},
    {"model", "structure source source_name module "},
    {"weights", "weight: "},
};
/* Not in the list: ir_digest, which covers the weights too, so it changes
 * with a retrain; when it is all that changed, the model did. */

static bool field_in(const char *field, const char *list)
{
    size_t n = strlen(field);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = (size_t)(end - p);
        if (len == n && memcmp(p, field, n) == 0)
            return true;
        if (p[len - 1] == ':' && strncmp(field, p, len) == 0)
            return true;
        p = end + 1;
    }
    return false;
}

const char *cv_build_miss_cause(const cv_cache_diffs *diffs)
{
    if (diffs->n == 0)
        return "evicted";   /* the closest entry has the same key: it was removed */
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++)
        for (int i = 0; i < diffs->n; i++)
            if (diffs->v[i].field && field_in(diffs->v[i].field, classes[c].fields))
                return classes[c].cause;
    return "model";         /* a field this list does not know: treat as a new model */
}

const char *cv_build_miss_cause_of(cv_cache_miss_reason r)
{
    switch (r) {
    case CV_MISS_EVICTED: return "evicted";
    case CV_MISS_CORRUPT: return "corrupt";
    case CV_MISS_REMOTE_ERROR: return "remote_error";
    case CV_MISS_DISABLED: return "disabled";
    default: return "unexplained";
    }
}

void cv_compile_explain_miss(cv_cache *c, cv_cache_level lv, const cv_cache_key *key,
                             cv_build_level *out)
{
    char *closest = NULL;
    cv_cache_diffs diffs = {0};
    int found = cv_cache_closest_manifest(c, lv, key->manifest, &closest, NULL);
    if (found == 0 && strcmp(out->cause, "unexplained") == 0)
        out->cause = "new";
    if (found != 1 || cv_cache_explain(closest, key->manifest, &diffs, NULL) != 0) {
        free(closest);
        return;
    }
    if (strcmp(out->cause, "unexplained") == 0)
        out->cause = cv_build_miss_cause(&diffs);
    size_t at = strlen(out->reason);
    char why[160] = "";
    if (lv == CV_CACHE_L2 && cv_build_explain_weights(&diffs, key->manifest, why, sizeof why))
        snprintf(out->reason + at, sizeof out->reason - at, ": %s", why);
    for (int i = 0; i < diffs.n && at + 8 < sizeof out->reason && !why[0]; i++)
        at += (size_t)snprintf(out->reason + at, sizeof out->reason - at, "%s%s",
                               i ? "; " : ": ", diffs.v[i].text);
    cv_cache_diffs_free(&diffs);
    free(closest);
}
