#include "queue/jobmsg.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const job_keys[] = {"job_id", "revision", "pipeline", "model_path",
                                       "model_digest", "target", "precision", "opt_level",
                                       "l2_key", "attempt"};
/* Written only when set, so a job without them reads as it always did. */
static const char *const job_optional_keys[] = {"calibration"};
static const char *const calibration_keys[] = {"data", "method"};
static const char *const calibration_methods[] = {"minmax", "percentile", "entropy"};
static const char *const result_keys[] = {"job_id", "status", "artifact_manifest", "cache",
                                          "timings_ms", "diagnostics"};
static const char *const cache_keys[] = {"l1", "l2"};
static const char *const cache_optional_keys[] = {"miss", "miss_reason"};
static const char *const timing_keys[CV_TIMING__COUNT] = {"queued", "fetch", "frontend",
                                                          "passes", "codegen", "upload"};
static const char *const diag_keys[] = {"id", "code", "severity", "file", "line", "col",
                                        "end_line", "end_col", "path", "message", "notes",
                                        "root_id"};
static const char *const opt_levels[CV_OPT__COUNT] = {"O0", "O1", "O2", "O3", "Os"};
static const char *const statuses[CV_RESULT__COUNT] = {"ok", "failed", "ice",
                                                       "timeout", "oom", "infra"};
static const char *const outcomes[CV_CACHE__COUNT] = {"none", "miss", "hit", "remote-hit"};
/* Indexed by cv_severity, spelled as cv_severity_name spells them. */
static const char *const severities[] = {"note", "warning", "error"};

static const struct { const char *const *v; size_t n; } lists[CV_MSGLIST__COUNT] = {
    [CV_MSGLIST_JOB_KEYS] = {job_keys, COUNT(job_keys)},
    [CV_MSGLIST_RESULT_KEYS] = {result_keys, COUNT(result_keys)},
    [CV_MSGLIST_CACHE_KEYS] = {cache_keys, COUNT(cache_keys)},
    [CV_MSGLIST_TIMING_KEYS] = {timing_keys, COUNT(timing_keys)},
    [CV_MSGLIST_DIAG_KEYS] = {diag_keys, COUNT(diag_keys)},
    [CV_MSGLIST_PRECISIONS] = {cv_precision_names, CV_PRECISION__COUNT},
    [CV_MSGLIST_OPT_LEVELS] = {opt_levels, COUNT(opt_levels)},
    [CV_MSGLIST_STATUSES] = {statuses, COUNT(statuses)},
    [CV_MSGLIST_CACHE_OUTCOMES] = {outcomes, COUNT(outcomes)},
    [CV_MSGLIST_SEVERITIES] = {severities, COUNT(severities)},
    [CV_MSGLIST_JOB_OPTIONAL_KEYS] = {job_optional_keys, COUNT(job_optional_keys)},
    [CV_MSGLIST_CALIBRATION_KEYS] = {calibration_keys, COUNT(calibration_keys)},
    [CV_MSGLIST_CALIBRATION_METHODS] = {calibration_methods, COUNT(calibration_methods)},
    [CV_MSGLIST_CACHE_OPTIONAL_KEYS] = {cache_optional_keys, COUNT(cache_optional_keys)},
};

const char *const *cv_msg_list_get(cv_msg_list which, size_t *count)
{
    if ((unsigned)which >= CV_MSGLIST__COUNT) {
        *count = 0;
        return NULL;
    }
    *count = lists[which].n;
    return lists[which].v;
}

static const char *name_at(const char *const *v, size_t n, int i)
{
    return (i >= 0 && (size_t)i < n) ? v[i] : NULL;
}

static int index_of(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(v[i], s) == 0)
            return (int)i;
    return -1;
}

const char *cv_opt_level_name(cv_opt_level o) { return name_at(opt_levels, COUNT(opt_levels), (int)o); }
const char *cv_result_status_name(cv_result_status s) { return name_at(statuses, COUNT(statuses), (int)s); }
const char *cv_cache_outcome_name(cv_cache_outcome c) { return name_at(outcomes, COUNT(outcomes), (int)c); }
const char *cv_timing_name(cv_timing t) { return name_at(timing_keys, COUNT(timing_keys), (int)t); }
int cv_opt_level_parse(const char *s) { return index_of(opt_levels, COUNT(opt_levels), s); }
int cv_result_status_parse(const char *s) { return index_of(statuses, COUNT(statuses), s); }
int cv_cache_outcome_parse(const char *s) { return index_of(outcomes, COUNT(outcomes), s); }

/* ---- validation context: where in which message we are */

typedef struct vctx {
    cv_diag *d;
    const char *name;   /* message label for span.file; not owned */
    char prefix[64];    /* JSON path of the object being checked, "" at top */
} vctx;

static int verr(vctx *c, int code, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int verr(vctx *c, int code, const char *key, const char *fmt, ...)
{
    char path[128];
    snprintf(path, sizeof path, "%s%s%s", c->prefix, (c->prefix[0] && key) ? "." : "",
             key ? key : "");
    cv_span sp = {.file = c->name};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(c->d, CV_SEV_ERROR, code, sp, path[0] ? path : NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static vctx sub_ctx(const vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static vctx sub_ctx(const vctx *c, const char *fmt, ...)
{
    /* Messages nest one level (cache, timings_ms, diagnostics[i]), so the
     * prefix is just that object's name. */
    vctx s = *c;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s.prefix, sizeof s.prefix, fmt, ap);
    va_end(ap);
    return s;
}

/* Reports unknown keys and missing keys (of `keys`; `optional` ones may be
 * absent); the getters below then stay quiet about absent keys. */
static int check_keys_opt(vctx *c, json_t *o, const char *const *keys, size_t n,
                          const char *const *optional, size_t n_optional)
{
    int rc = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (index_of(keys, n, k) < 0 && index_of(optional, n_optional, k) < 0)
            rc = verr(c, CV_E_MESSAGE_UNKNOWN_FIELD, NULL, "unknown field '%.64s'", k);
    }
    for (size_t i = 0; i < n; i++)
        if (!json_object_get(o, keys[i]))
            rc = verr(c, CV_E_MESSAGE_MISSING_FIELD, keys[i], "missing field '%s'", keys[i]);
    return rc;
}

static int check_keys(vctx *c, json_t *o, const char *const *keys, size_t n)
{
    return check_keys_opt(c, o, keys, n, NULL, 0);
}

typedef enum { S_ID, S_TEXT, S_PATH, S_TOKEN, S_DIAG } str_kind;

static bool token_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("._+,=:-", ch) != NULL;
}

static bool path_escapes(const char *s)
{
    if (s[0] == '/')
        return true;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n + (p[n] == '/');
    }
    return false;
}

static int check_string(vctx *c, const char *key, const char *s, size_t len, str_kind kind)
{
    size_t max = kind == S_ID ? CV_MSG_ID_MAX : kind == S_TOKEN ? CV_MSG_TOKEN_MAX
               : kind == S_DIAG ? CV_MSG_DIAG_STR_MAX : CV_MSG_STR_MAX;
    if (len > max)
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "string of %zu bytes is longer than %zu", len, max);
    if (kind == S_DIAG)
        return 0;
    if (len == 0)
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "must not be empty");
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool ok = kind == S_ID ? (ch > 0x20 && ch < 0x7f)
                : kind == S_TOKEN ? token_char(ch) : (ch >= 0x20 && ch != 0x7f);
        if (!ok)
            return verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "byte 0x%02x at offset %zu is not allowed here", ch, i);
    }
    if (kind == S_PATH && path_escapes(s))
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "'%.200s' must be relative and stay inside the repository", s);
    return 0;
}

static int get_string(vctx *c, json_t *o, const char *key, str_kind kind, bool nullable,
                      char **out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return -1;
    if (nullable && json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, key, "expected a string%s", nullable ? " or null" : "");
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (check_string(c, key, s, len, kind))
        return -1;
    *out = strdup(s);
    return *out ? 0 : verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "out of memory");
}

static int get_digest(vctx *c, json_t *o, const char *key, bool nullable,
                      char out[CV_DIGEST_HEX + 1])
{
    json_t *v = json_object_get(o, key);
    out[0] = 0;
    if (!v)
        return -1;
    if (nullable && json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, key, "expected a hex digest string%s", nullable ? " or null" : "");
    const char *s = json_string_value(v);
    bool ok = json_string_length(v) == CV_DIGEST_HEX;
    for (size_t i = 0; ok && i < CV_DIGEST_HEX; i++)
        ok = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
    if (!ok)
        return verr(c, CV_E_MESSAGE_BAD_DIGEST, key, "expected %d lowercase hex digits", CV_DIGEST_HEX);
    memcpy(out, s, CV_DIGEST_HEX + 1);
    return 0;
}

static int get_enum(vctx *c, json_t *o, const char *key, const char *const *names, size_t n,
                    int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return -1;
    if (!json_is_string(v))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, key, "expected a string");
    int i = index_of(names, n, json_string_value(v));
    if (i < 0) {
        cv_sb allowed = CV_SB_INIT;
        for (size_t k = 0; k < n; k++)
            cv_sb_printf(&allowed, "%s%s", k ? ", " : "", names[k]);
        verr(c, CV_E_MESSAGE_BAD_ENUM, key, "'%.64s' is not one of: %s", json_string_value(v),
             cv_sb_str(&allowed));
        cv_sb_free(&allowed);
        return -1;
    }
    *out = i;
    return 0;
}

static int get_int(vctx *c, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return -1;
    if (!json_is_integer(v))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, key, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, key, "%lld is outside %lld..%lld", (long long)x, (long long)lo,
                    (long long)hi);
    *out = (int64_t)x;
    return 0;
}

static int get_object(vctx *c, json_t *o, const char *key, json_t **out)
{
    *out = json_object_get(o, key);
    if (!*out)
        return -1;
    return json_is_object(*out) ? 0 : verr(c, CV_E_MESSAGE_FIELD_TYPE, key, "expected an object");
}

/* ---- jobs */

void cv_job_msg_free(cv_job_msg *m)
{
    free(m->job_id);
    free(m->revision);
    free(m->pipeline);
    free(m->model_path);
    free(m->target);
    free(m->calibration);
    free(m->calibration_method);
    memset(m, 0, sizeof *m);
}

/* "calibration": absent or null = none, else {"data": GLOB, "method": M}. */
static int calibration_from_json(vctx *c, json_t *o, cv_job_msg *m)
{
    json_t *cal = json_object_get(o, "calibration");
    if (!cal || json_is_null(cal))
        return 0;
    if (!json_is_object(cal))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, "calibration", "expected an object or null");
    vctx s = sub_ctx(c, "calibration");
    int rc = check_keys(&s, cal, calibration_keys, COUNT(calibration_keys));
    rc |= get_string(&s, cal, "data", S_PATH, false, &m->calibration);
    int e = 0;
    rc |= get_enum(&s, cal, "method", calibration_methods, COUNT(calibration_methods), &e);
    if (rc == 0 && !(m->calibration_method = strdup(calibration_methods[e])))
        rc = verr(c, CV_E_MESSAGE_FIELD_RANGE, "calibration", "out of memory");
    return rc ? -1 : 0;
}

static int job_from_json(vctx *c, json_t *o, cv_job_msg *m)
{
    memset(m, 0, sizeof *m);
    if (!json_is_object(o))
        return verr(c, CV_E_MESSAGE_MALFORMED, NULL, "a job message must be a JSON object");
    int rc = check_keys_opt(c, o, job_keys, COUNT(job_keys), job_optional_keys,
                            COUNT(job_optional_keys));
    rc |= get_string(c, o, "job_id", S_ID, false, &m->job_id);
    rc |= get_string(c, o, "revision", S_TEXT, false, &m->revision);
    rc |= get_string(c, o, "pipeline", S_TEXT, false, &m->pipeline);
    rc |= get_string(c, o, "model_path", S_PATH, false, &m->model_path);
    rc |= get_digest(c, o, "model_digest", false, m->model_digest);
    rc |= get_string(c, o, "target", S_TOKEN, false, &m->target);
    int e = 0;
    rc |= get_enum(c, o, "precision", cv_precision_names, CV_PRECISION__COUNT, &e);
    m->precision = (cv_precision)e;
    rc |= get_enum(c, o, "opt_level", opt_levels, COUNT(opt_levels), &e);
    m->opt_level = (cv_opt_level)e;
    rc |= get_digest(c, o, "l2_key", false, m->l2_key);
    int64_t attempt = 0;
    rc |= get_int(c, o, "attempt", 1, CV_MSG_ATTEMPT_MAX, &attempt);
    m->attempt = (int)attempt;
    rc |= calibration_from_json(c, o, m);
    return rc ? -1 : 0;
}

/* NULL (or invalid UTF-8) becomes JSON null, which validation then names. */
static json_t *jstr(const char *s)
{
    json_t *v = s ? json_string(s) : NULL;
    return v ? v : json_null();
}

static json_t *jdigest(const char *hex) { return hex[0] ? jstr(hex) : json_null(); }

static json_t *job_to_json(const cv_job_msg *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "job_id", jstr(m->job_id));
    json_object_set_new(o, "revision", jstr(m->revision));
    json_object_set_new(o, "pipeline", jstr(m->pipeline));
    json_object_set_new(o, "model_path", jstr(m->model_path));
    json_object_set_new(o, "model_digest", jdigest(m->model_digest));
    json_object_set_new(o, "target", jstr(m->target));
    json_object_set_new(o, "precision", jstr(cv_precision_name(m->precision)));
    json_object_set_new(o, "opt_level", jstr(cv_opt_level_name(m->opt_level)));
    json_object_set_new(o, "l2_key", jdigest(m->l2_key));
    json_object_set_new(o, "attempt", json_integer(m->attempt));
    if (m->calibration || m->calibration_method) {
        json_t *cal = json_object();
        json_object_set_new(cal, "data", jstr(m->calibration));
        json_object_set_new(cal, "method", jstr(m->calibration_method));
        json_object_set_new(o, "calibration", cal);
    }
    return o;
}

static int parse_message(const void *buf, size_t len, vctx *c, json_t **out)
{
    *out = NULL;
    if (len > CV_MSG_MAX_BYTES)
        return verr(c, CV_E_MESSAGE_TOO_LARGE, NULL, "message of %zu bytes exceeds the %u-byte limit", len,
                    CV_MSG_MAX_BYTES);
    json_error_t err;
    *out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!*out) {
        cv_span sp = {.file = c->name, .line = err.line, .col = err.column};
        cv_diag_add(c->d, CV_SEV_ERROR, CV_E_MESSAGE_MALFORMED, sp, NULL, "malformed JSON: %s", err.text);
        return -1;
    }
    return 0;
}

static int dump_message(json_t *o, vctx *c, char **out, size_t *len)
{
    *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    if (!*out)
        return verr(c, CV_E_MESSAGE_MALFORMED, NULL, "the message could not be serialised");
    *len = strlen(*out);
    if (*len > CV_MSG_MAX_BYTES) {
        free(*out);
        *out = NULL;
        return verr(c, CV_E_MESSAGE_TOO_LARGE, NULL, "message of %zu bytes exceeds the %u-byte limit",
                    *len, CV_MSG_MAX_BYTES);
    }
    return 0;
}

int cv_job_msg_decode(const void *buf, size_t len, const char *name, cv_job_msg *m, cv_diag *d)
{
    vctx c = {.d = d, .name = name ? name : "job message"};
    json_t *o;
    memset(m, 0, sizeof *m);
    if (parse_message(buf, len, &c, &o))
        return -1;
    int rc = job_from_json(&c, o, m);
    json_decref(o);
    return rc;
}

int cv_job_msg_encode(const cv_job_msg *m, char **out, size_t *len, cv_diag *d)
{
    vctx c = {.d = d, .name = "job message"};
    *out = NULL;
    *len = 0;
    json_t *o = job_to_json(m);
    cv_job_msg check;
    int rc = job_from_json(&c, o, &check);
    cv_job_msg_free(&check);
    if (rc == 0)
        rc = dump_message(o, &c, out, len);
    json_decref(o);
    return rc;
}

static int dup_field(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return (src && !*dst) ? -1 : 0;
}

int cv_job_msg_copy(cv_job_msg *dst, const cv_job_msg *src)
{
    *dst = *src;
    int rc = dup_field(&dst->job_id, src->job_id) | dup_field(&dst->revision, src->revision) |
             dup_field(&dst->pipeline, src->pipeline) |
             dup_field(&dst->model_path, src->model_path) | dup_field(&dst->target, src->target) |
             dup_field(&dst->calibration, src->calibration) |
             dup_field(&dst->calibration_method, src->calibration_method);
    if (rc)
        cv_job_msg_free(dst);
    return rc ? -1 : 0;
}

/* ---- results */

void cv_result_msg_init(cv_result_msg *m)
{
    memset(m, 0, sizeof *m);
    cv_diag_init(&m->diags);
}

void cv_result_msg_free(cv_result_msg *m)
{
    free(m->job_id);
    free(m->miss);
    free(m->miss_reason);
    cv_diag_free(&m->diags);
    cv_result_msg_init(m);
}

static int diag_strings(vctx *c, json_t *e, char **file, char **path, char **msg)
{
    int rc = get_string(c, e, "file", S_DIAG, true, file);
    rc |= get_string(c, e, "path", S_DIAG, true, path);
    rc |= get_string(c, e, "message", S_DIAG, false, msg);
    return rc;
}

static int diag_notes(vctx *c, json_t *e, json_t **notes)
{
    *notes = json_object_get(e, "notes");
    if (!*notes)
        return -1;
    if (!json_is_array(*notes))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, "notes", "expected an array of strings");
    if (json_array_size(*notes) > CV_MSG_NOTES_MAX)
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, "notes", "more than %d notes", CV_MSG_NOTES_MAX);
    size_t i;
    json_t *n;
    json_array_foreach(*notes, i, n) {
        if (!json_is_string(n))
            return verr(c, CV_E_MESSAGE_FIELD_TYPE, "notes", "note %zu is not a string", i);
        if (check_string(c, "notes", json_string_value(n), json_string_length(n), S_DIAG))
            return -1;
    }
    return 0;
}

static int diag_code(vctx *c, json_t *e, int *code)
{
    json_t *v = json_object_get(e, "code");
    if (!v)
        return -1;
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (strncmp(s, "CV", 2) != 0 || (*code = cv_diag_parse_code(s)) < 0)
        return verr(c, CV_E_MESSAGE_BAD_DIAGNOSTIC, "code", "expected a code of the form CVnnnn");
    return 0;
}

/* One entry of "diagnostics", in the form cv_diag_to_json writes, added to
 * `out` so that ids and root ids survive the round trip. */
static int diag_from_json(vctx *parent, size_t idx, json_t *e, cv_diag *out)
{
    vctx c = sub_ctx(parent, "diagnostics[%zu]", idx);
    if (!json_is_object(e))
        return verr(&c, CV_E_MESSAGE_FIELD_TYPE, NULL, "expected an object");
    int rc = check_keys(&c, e, diag_keys, COUNT(diag_keys));
    int64_t id = 0, root = 0, pos[4] = {0};
    static const char *const pos_keys[4] = {"line", "col", "end_line", "end_col"};
    int code = 0, sev = 0;
    char *file = NULL, *path = NULL, *msg = NULL;
    json_t *notes = NULL, *rootv = json_object_get(e, "root_id");
    rc |= get_int(&c, e, "id", 1, CV_MSG_DIAG_MAX, &id);
    if (rc == 0 && id != (int64_t)idx + 1)
        rc = verr(&c, CV_E_MESSAGE_BAD_DIAGNOSTIC, "id", "ids must be 1..n in order (expected %zu)", idx + 1);
    rc |= diag_code(&c, e, &code);
    rc |= get_enum(&c, e, "severity", severities, COUNT(severities), &sev);
    for (int k = 0; k < 4; k++)
        rc |= get_int(&c, e, pos_keys[k], 0, INT_MAX, &pos[k]);
    rc |= diag_strings(&c, e, &file, &path, &msg);
    rc |= diag_notes(&c, e, &notes);
    if (rootv && !json_is_null(rootv)) {
        if (get_int(&c, e, "root_id", 1, CV_MSG_DIAG_MAX, &root))
            rc = -1;
        else if (root >= id)
            rc = verr(&c, CV_E_MESSAGE_BAD_DIAGNOSTIC, "root_id", "a root cause must be an earlier diagnostic");
    }
    if (rc == 0) {
        cv_span sp = {file, (int)pos[0], (int)pos[1], (int)pos[2], (int)pos[3]};
        int nid = cv_diag_add(out, (cv_severity)sev, code, sp, path, "%s", msg);
        for (size_t k = 0; nid && k < json_array_size(notes); k++)
            cv_diag_note(out, nid, "%s", json_string_value(json_array_get(notes, k)));
        cv_diag_set_root(out, nid, (int)root);
    }
    free(file);
    free(path);
    free(msg);
    return rc;
}

static int result_nested(vctx *c, json_t *o, cv_result_msg *m)
{
    json_t *cache = NULL, *t = NULL;
    int rc = 0;
    if (get_object(c, o, "cache", &cache) == 0) {
        vctx cc = sub_ctx(c, "cache");
        int l1 = 0, l2 = 0;
        rc |= check_keys_opt(&cc, cache, cache_keys, COUNT(cache_keys), cache_optional_keys,
                             COUNT(cache_optional_keys));
        rc |= get_enum(&cc, cache, "l1", outcomes, COUNT(outcomes), &l1);
        rc |= get_enum(&cc, cache, "l2", outcomes, COUNT(outcomes), &l2);
        if (json_object_get(cache, "miss"))
            rc |= get_string(&cc, cache, "miss", S_TOKEN, false, &m->miss);
        if (json_object_get(cache, "miss_reason"))
            rc |= get_string(&cc, cache, "miss_reason", S_TEXT, false, &m->miss_reason);
        m->l1 = (cv_cache_outcome)l1;
        m->l2 = (cv_cache_outcome)l2;
    } else {
        rc = -1;
    }
    if (get_object(c, o, "timings_ms", &t) == 0) {
        vctx tc = sub_ctx(c, "timings_ms");
        rc |= check_keys(&tc, t, timing_keys, COUNT(timing_keys));
        for (int i = 0; i < CV_TIMING__COUNT; i++)
            rc |= get_int(&tc, t, timing_keys[i], 0, CV_MSG_TIMING_MAX, &m->timings_ms[i]);
    } else {
        rc = -1;
    }
    return rc;
}

static int result_diags(vctx *c, json_t *o, cv_result_msg *m)
{
    json_t *arr = json_object_get(o, "diagnostics");
    if (!arr)
        return -1;
    if (!json_is_array(arr))
        return verr(c, CV_E_MESSAGE_FIELD_TYPE, "diagnostics", "expected an array");
    if (json_array_size(arr) > CV_MSG_DIAG_MAX)
        return verr(c, CV_E_MESSAGE_FIELD_RANGE, "diagnostics", "more than %d diagnostics", CV_MSG_DIAG_MAX);
    int rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
        rc |= diag_from_json(c, i, e, &m->diags);
    return rc;
}

static int result_from_json(vctx *c, json_t *o, cv_result_msg *m)
{
    cv_result_msg_init(m);
    if (!json_is_object(o))
        return verr(c, CV_E_MESSAGE_MALFORMED, NULL, "a result message must be a JSON object");
    int rc = check_keys(c, o, result_keys, COUNT(result_keys));
    rc |= get_string(c, o, "job_id", S_ID, false, &m->job_id);
    int st = 0;
    rc |= get_enum(c, o, "status", statuses, COUNT(statuses), &st);
    m->status = (cv_result_status)st;
    rc |= get_digest(c, o, "artifact_manifest", true, m->artifact_manifest);
    if (rc == 0 && m->status == CV_RESULT_OK && !m->artifact_manifest[0])
        rc = verr(c, CV_E_MESSAGE_MISSING_FIELD, "artifact_manifest", "status ok requires an artifact manifest");
    rc |= result_nested(c, o, m);
    rc |= result_diags(c, o, m);
    return rc ? -1 : 0;
}

/* Cuts s (in place) to at most max bytes without splitting a UTF-8 sequence. */
static void clamp_json_string(json_t *v, size_t max)
{
    if (!json_is_string(v) || json_string_length(v) <= max)
        return;
    const char *s = json_string_value(v);
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    json_string_setn(v, s, n);
}

/* Compiler diagnostics can quote huge inputs: rather than fail a result,
 * long strings and note lists are cut to the decoder's bounds. */
static void clamp_diag_json(json_t *arr)
{
    static const char *const keys[] = {"file", "path", "message"};
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        for (size_t k = 0; k < COUNT(keys); k++)
            clamp_json_string(json_object_get(e, keys[k]), CV_MSG_DIAG_STR_MAX);
        json_t *notes = json_object_get(e, "notes");
        while (json_array_size(notes) > CV_MSG_NOTES_MAX)
            json_array_remove(notes, json_array_size(notes) - 1);
        for (size_t k = 0; k < json_array_size(notes); k++)
            clamp_json_string(json_array_get(notes, k), CV_MSG_DIAG_STR_MAX);
    }
    while (json_array_size(arr) > CV_MSG_DIAG_MAX)
        json_array_remove(arr, json_array_size(arr) - 1);
}

static json_t *result_to_json(const cv_result_msg *m)
{
    json_t *o = json_object(), *cache = json_object(), *t = json_object();
    json_object_set_new(o, "job_id", jstr(m->job_id));
    json_object_set_new(o, "status", jstr(cv_result_status_name(m->status)));
    json_object_set_new(o, "artifact_manifest", jdigest(m->artifact_manifest));
    json_object_set_new(cache, "l1", jstr(cv_cache_outcome_name(m->l1)));
    json_object_set_new(cache, "l2", jstr(cv_cache_outcome_name(m->l2)));
    if (m->miss)
        json_object_set_new(cache, "miss", jstr(m->miss));
    if (m->miss_reason)
        json_object_set_new(cache, "miss_reason", jstr(m->miss_reason));
    json_object_set_new(o, "cache", cache);
    for (int i = 0; i < CV_TIMING__COUNT; i++)
        json_object_set_new(t, timing_keys[i], json_integer(m->timings_ms[i]));
    json_object_set_new(o, "timings_ms", t);
    json_t *diags = cv_diag_to_json(&m->diags);
    clamp_diag_json(diags);
    json_object_set_new(o, "diagnostics", diags);
    return o;
}

int cv_result_msg_decode(const void *buf, size_t len, const char *name, cv_result_msg *m,
                         cv_diag *d)
{
    vctx c = {.d = d, .name = name ? name : "result message"};
    json_t *o;
    cv_result_msg_init(m);
    if (parse_message(buf, len, &c, &o))
        return -1;
    int rc = result_from_json(&c, o, m);
    json_decref(o);
    return rc;
}

int cv_result_msg_encode(const cv_result_msg *m, char **out, size_t *len, cv_diag *d)
{
    vctx c = {.d = d, .name = "result message"};
    *out = NULL;
    *len = 0;
    json_t *o = result_to_json(m);
    cv_result_msg check;
    int rc = result_from_json(&c, o, &check);
    cv_result_msg_free(&check);
    json_t *diags = json_object_get(o, "diagnostics");
    while (rc == 0) {
        *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        if (!*out) {
            rc = verr(&c, CV_E_MESSAGE_MALFORMED, NULL, "the message could not be serialised");
            break;
        }
        *len = strlen(*out);
        size_t nd = json_array_size(diags);
        if (*len <= CV_MSG_MAX_BYTES || nd == 0)
            break;
        /* Too big: keep the first half of the diagnostics (roots come first). */
        free(*out);
        *out = NULL;
        while (json_array_size(diags) > nd / 2)
            json_array_remove(diags, json_array_size(diags) - 1);
    }
    if (rc == 0 && *len > CV_MSG_MAX_BYTES) {
        free(*out);
        *out = NULL;
        rc = verr(&c, CV_E_MESSAGE_TOO_LARGE, NULL, "message exceeds the %u-byte limit", CV_MSG_MAX_BYTES);
    }
    json_decref(o);
    return rc;
}
