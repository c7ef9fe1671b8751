/* Checks a YAML document against a field table: unknown fields (with a
 * suggestion), types, required fields, list bounds, duplicates, string
 * hygiene, enumerations and each field's own value check.  Every error
 * points at the key or value it is about. */
#include "spec/spec_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int spec_error(spec_walk *w, int code, cv_span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(w->d, CV_SEV_ERROR, code, sp, w->path[0] ? w->path : NULL, fmt, ap);
    va_end(ap);
    w->errors++;
    return -1;
}

size_t spec_path_push(spec_walk *w, const char *fmt, ...)
{
    size_t mark = w->path_len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->path + mark, sizeof w->path - mark, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof w->path - mark)
        w->path[mark] = 0;   /* too deep to name: keep the parent's path */
    else
        w->path_len += (size_t)n;
    return mark;
}

void spec_path_pop(spec_walk *w, size_t mark)
{
    w->path_len = mark;
    w->path[mark] = 0;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "a mapping";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static const char *field_kind(const spec_field *f)
{
    switch (f->type) {
    case SK_STRING: return "a string";
    case SK_INT: return "an integer";
    case SK_BOOL: return "true or false";
    case SK_LIST: return f->item->type == SK_STRING ? "a list of strings" : "a list";
    default: return "a mapping";
    }
}

static bool type_ok(const spec_field *f, const json_t *v)
{
    switch (f->type) {
    case SK_STRING: return json_is_string(v);
    case SK_INT: return json_is_integer(v);
    case SK_BOOL: return json_is_boolean(v);
    case SK_LIST: return json_is_array(v);
    default: return json_is_object(v);
    }
}

static int type_error(spec_walk *w, const spec_field *f, const json_t *v, cv_span sp)
{
    const char *hint = "";
    if (f->type == SK_LIST && json_is_string(v))
        hint = " (write a one-item list as [item])";
    else if (f->type == SK_STRING && f->check && (json_is_integer(v) || json_is_real(v)))
        hint = " (quote it, or add its unit: \"60s\", \"20Gi\")";
    else if (f->type == SK_STRING && json_is_boolean(v))
        hint = " (quote it: YAML reads yes/no/true/false as booleans)";
    return spec_error(w, CV_E_SPEC_FIELD_TYPE, sp, "%s must be %s, not %s%s",
                      w->path[0] ? w->path : "the document", field_kind(f), json_kind(v), hint);
}

static int walk_value(spec_walk *w, const spec_field *f, const json_t *v, cv_span sp);

static int walk_string(spec_walk *w, const spec_field *f, const char *s, cv_span sp)
{
    size_t n = strlen(s);
    if (n == 0)
        return spec_error(w, CV_E_SPEC_BAD_STRING, sp, "%s must not be empty", w->path);
    if (n > CV_SPEC_STR_MAX)
        return spec_error(w, CV_E_SPEC_BAD_STRING, sp, "%s is %zu bytes long; the limit is %d",
                          w->path, n, CV_SPEC_STR_MAX);
    if (!cv_str_is_clean_text(s))
        return spec_error(w, CV_E_SPEC_BAD_STRING, sp, "%s holds a control character", w->path);
    if (f->values) {
        for (const char *const *v = f->values; *v; v++)
            if (strcmp(*v, s) == 0)
                return 0;
        const char *hint = cv_str_suggest(s, f->values);
        int rc = spec_error(w, f->code, sp, "%s: unknown value '%s'%s%s%s", w->path, s,
                            hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
        char all[512] = "";
        for (const char *const *v = f->values; *v; v++)
            snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", v == f->values ? "" : " ",
                     *v);
        cv_diag_note(w->d, w->d->n, "allowed: %s", all);
        return rc;
    }
    return f->check ? f->check(w, f, s, sp) : 0;
}

static int walk_list(spec_walk *w, const spec_field *f, const json_t *arr, cv_span sp)
{
    size_t n = json_array_size(arr);
    if (n == 0 && f->nonempty)
        return spec_error(w, CV_E_SPEC_EMPTY_LIST, sp, "%s needs at least one item", w->path);
    if (n > CV_SPEC_LIST_MAX)
        return spec_error(w, CV_E_SPEC_BAD_STRING, sp, "%s has %zu items; the limit is %d", w->path, n,
                          CV_SPEC_LIST_MAX);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(arr, i);
        cv_span isp = sp;
        cv_yaml_item_span(w->doc, arr, i, &isp);
        size_t mark = spec_path_push(w, "[%zu]", i);
        int irc = walk_value(w, f->item, item, isp);
        for (size_t j = 0; irc == 0 && json_is_string(item) && j < i; j++) {
            if (json_equal(json_array_get(arr, j), item)) {
                cv_span first = sp;
                cv_yaml_item_span(w->doc, arr, j, &first);
                irc = spec_error(w, CV_E_SPEC_DUPLICATE_ITEM, isp, "%s: '%s' is listed twice",
                                 w->path, json_string_value(item));
                cv_diag_note(w->d, w->d->n, "first listed at %d:%d", first.line, first.col);
            }
        }
        spec_path_pop(w, mark);
        rc |= irc;
    }
    return rc;
}

static int walk_map(spec_walk *w, const spec_field *f, const json_t *obj)
{
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach((json_t *)obj, key, v) {
        cv_span vsp = {0};
        cv_yaml_member_span(w->doc, obj, key, NULL, &vsp);
        size_t mark = spec_path_push(w, ".%s", key);
        rc |= walk_value(w, f->item, v, vsp);
        spec_path_pop(w, mark);
    }
    return rc;
}

static int walk_value(spec_walk *w, const spec_field *f, const json_t *v, cv_span sp)
{
    if (!type_ok(f, v))
        return type_error(w, f, v, sp);
    switch (f->type) {
    case SK_STRING:
        return walk_string(w, f, json_string_value(v), sp);
    case SK_INT: {
        json_int_t i = json_integer_value(v);
        if (i < f->min || i > f->max)
            return spec_error(w, CV_E_SPEC_OUT_OF_RANGE, sp, "%s is %lld; allowed: %lld to %lld", w->path,
                              (long long)i, (long long)f->min, (long long)f->max);
        return 0;
    }
    case SK_BOOL:
        return 0;
    case SK_LIST:
        return walk_list(w, f, v, sp);
    case SK_MAP:
        return walk_map(w, f, v);
    default:
        return spec_walk_object(w, f->members, v, sp);
    }
}

static const spec_field *find_member(const spec_field *members, const char *name)
{
    for (const spec_field *m = members; m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

static int unknown_field(spec_walk *w, const spec_field *members, const char *key, cv_span ksp)
{
    const char *names[64];
    size_t n = 0;
    for (const spec_field *m = members; m->name && n + 1 < sizeof names / sizeof names[0]; m++)
        names[n++] = m->name;
    names[n] = NULL;
    const char *hint = cv_str_suggest(key, names);
    if (!hint) {   /* a case slip such as "optlevel" is a plausible typo at any length */
        for (size_t i = 0; i < n && !hint; i++)
            if (strcasecmp(names[i], key) == 0)
                hint = names[i];
    }
    int rc = spec_error(w, CV_E_SPEC_UNKNOWN_FIELD, ksp, "unknown field '%s'%s%s%s%s%s", key,
                        w->path[0] ? " in " : "", w->path, hint ? "; did you mean '" : "",
                        hint ? hint : "", hint ? "'?" : "");
    char all[512] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? " " : "", names[i]);
    cv_diag_note(w->d, w->d->n, "fields here: %s", all);
    return rc;
}

int spec_walk_object(spec_walk *w, const spec_field *members, const json_t *obj, cv_span sp)
{
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach((json_t *)obj, key, v) {
        cv_span ksp = sp, vsp = sp;
        cv_yaml_member_span(w->doc, obj, key, &ksp, &vsp);
        const spec_field *m = find_member(members, key);
        if (!m) {
            rc |= unknown_field(w, members, key, ksp);
            continue;
        }
        size_t mark = spec_path_push(w, w->path_len ? ".%s" : "%s", key);
        rc |= walk_value(w, m, v, vsp);
        spec_path_pop(w, mark);
    }
    for (const spec_field *m = members; m->name; m++) {
        if (m->required && !json_object_get(obj, m->name))
            rc |= spec_error(w, CV_E_SPEC_MISSING_FIELD, sp, "%s%slacks the required field '%s'",
                             w->path, w->path[0] ? " " : "the document ", m->name);
    }
    return rc ? -1 : 0;
}
