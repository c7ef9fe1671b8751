/* The loader's schema: one field table per document kind, with the value
 * checks each field needs.  schemas/cuvilbuildcluster.schema.json and
 * schemas/cuvilpipeline.schema.json describe the same fields for other
 * tools; tests/unit/spec/test_spec.c checks that the two agree. */
#include "spec/spec_internal.h"

#include <stdio.h>
#include <string.h>

#define SECOND INT64_C(1000)
#define DAY (86400 * SECOND)

const char *const spec_kind_names[] = {"CuvilBuildCluster", "CuvilPipeline", NULL};
const char *const spec_opt_level_names[] = {"O0", "O1", "O2", "O3", NULL};
static const char *const api_versions[] = {CV_SPEC_API_VERSION, NULL};
static const char *const queue_kinds[] = {"embedded", "kafka", NULL};
static const char *const calibration_methods[] = {"minmax", "percentile", "entropy", NULL};

/* ---- value checks */

static int check_name(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    if (cv_str_is_dns_label(s))
        return 0;
    return spec_error(w, CV_E_SPEC_BAD_NAME, sp,
                      "%s '%s' is not a valid name: use lowercase letters, digits and '-' "
                      "(at most %d, starting and ending with a letter or digit)",
                      w->path, s, CV_SPEC_NAME_MAX);
}

static int check_glob(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    const char *why;
    if (cv_glob_check(s, &why) == 0)
        return 0;
    return spec_error(w, CV_E_SPEC_BAD_GLOB, sp, "%s: bad glob '%s': %s", w->path, s, why);
}

static int check_duration(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    int64_t ms;
    cv_units_error e;
    char msg[320];
    if (cv_units_parse_duration(s, &ms, &e)) {
        cv_units_message(msg, sizeof msg, CV_UNITS_DURATION, w->path, s, &e);
        return spec_error(w, CV_E_SPEC_BAD_DURATION, sp, "%s", msg);
    }
    if (ms < f->min || ms > f->max)
        return spec_error(w, CV_E_SPEC_OUT_OF_RANGE, sp, "%s: %s is outside %llds to %lldh", w->path, s,
                          (long long)(f->min / SECOND), (long long)(f->max / 3600000));
    return 0;
}

static int check_size(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    uint64_t b;
    cv_units_error e;
    char msg[320];
    if (cv_units_parse_size(s, &b, &e) == 0)
        return 0;
    cv_units_message(msg, sizeof msg, CV_UNITS_SIZE, w->path, s, &e);
    return spec_error(w, CV_E_SPEC_BAD_SIZE, sp, "%s", msg);
}

static int url_error(spec_walk *w, const char *s, const char *why, cv_span sp)
{
    return why ? spec_error(w, CV_E_SPEC_BAD_URL, sp, "%s: '%s': %s", w->path, s, why) : 0;
}

static int check_git_url(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    return url_error(w, s, spec_check_url(s, false), sp);
}

/* cache.remote: a URL (the operator's Kubernetes object) or the name of a
 * remote the operator allows (a repository's spec: cv_cluster_apply). */
static int check_remote(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    if (!strstr(s, "://") && cv_str_is_dns_label(s))
        return 0;
    return url_error(w, s, spec_check_url(s, true), sp);
}

static int check_ref(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    if (cv_str_is_ref_name(s))
        return 0;
    return spec_error(w, CV_E_SPEC_BAD_REF, sp, "%s: '%s' is not a valid git ref name", w->path, s);
}

static int address_error(spec_walk *w, const char *s, const char *why, cv_span sp)
{
    return why ? spec_error(w, CV_E_SPEC_BAD_ADDRESS, sp, "%s: '%s': %s", w->path, s, why) : 0;
}

static int check_brokers(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    return address_error(w, s, spec_check_brokers(s), sp);
}

static int check_registry(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    return address_error(w, s, spec_check_registry(s), sp);
}

static int check_topic(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    size_t n = strlen(s);
    bool ok = n <= 200;
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
             (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-';
    if (ok)
        return 0;
    return spec_error(w, CV_E_SPEC_BAD_STRING, sp,
                      "%s: Kafka topic names use letters, digits, '.', '_' and '-' (at most 200)",
                      w->path);
}

/* ---- tables */

#define STR(n, ...) {.name = n, .type = SK_STRING, __VA_ARGS__}
#define END {.name = NULL}

static const spec_field any_string = {.type = SK_STRING};

static const spec_field metadata[] = {
    STR("name", .required = true, .check = check_name),
    STR("namespace", .check = check_name),
    {.name = "labels", .type = SK_MAP, .item = &any_string},
    {.name = "annotations", .type = SK_MAP, .item = &any_string},
    END,
};

static const spec_field source[] = {
    STR("url", .required = true, .check = check_git_url),
    STR("ref", .check = check_ref),
    STR("interval", .check = check_duration, .min = SECOND, .max = DAY),
    END,
};
static const spec_field workers[] = {
    {.name = "replicas", .type = SK_INT, .min = 0, .max = 1000},
    STR("resourceProfile", .check = check_name),
    STR("jobTimeout", .check = check_duration, .min = SECOND, .max = 7 * DAY),
    STR("memoryLimit", .check = check_size),
    END,
};
static const spec_field queue[] = {
    STR("kind", .required = true, .values = queue_kinds, .code = CV_E_SPEC_BAD_ENUM),
    STR("brokers", .check = check_brokers),
    STR("topicPrefix", .check = check_topic),
    END,
};
static const spec_field cache[] = {
    STR("size", .check = check_size),
    STR("remote", .check = check_remote),
    {.name = "readOnly", .type = SK_BOOL},
    STR("signingKeySecret", .check = check_name),
    END,
};
static const spec_field cluster_spec[] = {
    {.name = "source", .type = SK_OBJECT, .required = true, .members = source},
    {.name = "workers", .type = SK_OBJECT, .members = workers},
    {.name = "queue", .type = SK_OBJECT, .members = queue},
    {.name = "cache", .type = SK_OBJECT, .members = cache},
    STR("imageRegistry", .check = check_registry),
    END,
};

static const spec_field glob_item = {.type = SK_STRING, .check = check_glob};
static const spec_field target_item = {.type = SK_STRING, .values = cv_target_name_list,
                                       .code = CV_E_SPEC_UNKNOWN_TARGET};
static const spec_field precision_item = {.type = SK_STRING, .values = cv_precision_names,
                                          .code = CV_E_SPEC_UNKNOWN_PRECISION};
static const spec_field calibration[] = {
    STR("data", .required = true, .check = check_glob),
    STR("method", .values = calibration_methods, .code = CV_E_SPEC_BAD_ENUM),
    END,
};
/* models, targets and precisions are required after merging the bases
 * (spec.c), so a pipeline that extends another may leave them out. */
static const spec_field pipeline_spec[] = {
    {.name = "extends", .type = SK_STRING, .check = check_name},
    {.name = "models", .type = SK_LIST, .nonempty = true, .item = &glob_item},
    {.name = "targets", .type = SK_LIST, .nonempty = true, .item = &target_item},
    {.name = "precisions", .type = SK_LIST, .nonempty = true, .item = &precision_item},
    STR("optLevel", .values = spec_opt_level_names, .code = CV_E_SPEC_BAD_OPT_LEVEL),
    {.name = "calibration", .type = SK_OBJECT, .members = calibration},
    END,
};

#define ROOT(spec_table)                                                                      \
    {                                                                                         \
        STR("apiVersion", .required = true, .values = api_versions,                          \
            .code = CV_E_SPEC_API_VERSION),                                                   \
        STR("kind", .required = true, .values = spec_kind_names, .code = CV_E_SPEC_UNKNOWN_KIND),     \
        {.name = "metadata", .type = SK_OBJECT, .required = true, .members = metadata},       \
        {.name = "spec", .type = SK_OBJECT, .required = true, .members = spec_table}, END,    \
    }
static const spec_field cluster_root[] = ROOT(cluster_spec);
static const spec_field pipeline_root[] = ROOT(pipeline_spec);

const spec_field *spec_root_fields(cv_spec_kind k)
{
    return k == CV_SPEC_CLUSTER ? cluster_root : pipeline_root;
}

/* ---- the field list for schema checks */

static const char *type_name(spec_type t)
{
    static const char *const names[] = {"string", "integer", "boolean", "object", "array",
                                        "object"};
    return names[t];
}

static void visit(const spec_field *f, char *path, size_t len, size_t cap, bool required,
                  cv_spec_field_fn fn, void *ctx)
{
    fn(ctx, path, type_name(f->type), required, f->values);
    if (f->type == SK_LIST || f->type == SK_MAP) {
        snprintf(path + len, cap - len, "%s", f->type == SK_LIST ? "[]" : "{}");
        visit(f->item, path, len + 2, cap, false, fn, ctx);
    }
    for (const spec_field *m = f->type == SK_OBJECT ? f->members : NULL; m && m->name; m++) {
        int n = snprintf(path + len, cap - len, "%s%s", len ? "." : "", m->name);
        visit(m, path, len + (size_t)n, cap, m->required, fn, ctx);
    }
    path[len] = 0;
}

void cv_spec_fields_visit(cv_spec_kind k, cv_spec_field_fn fn, void *ctx)
{
    char path[256] = "";
    spec_field root = {.type = SK_OBJECT, .members = spec_root_fields(k)};
    visit(&root, path, 0, sizeof path, true, fn, ctx);
}
