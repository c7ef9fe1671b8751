/* Job and result message codecs: round trips, one test per error code, and
 * the JSON Schemas in schemas/ checked against the codec's own lists and
 * used to validate encoded samples (so schema and codec cannot drift). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "queue/jobmsg.h"
#include "queue/queue.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void sample_job(cv_job_msg *m)
{
    memset(m, 0, sizeof *m);
    m->job_id = strdup("vision/lenet@x86_64-avx2/fp32");
    m->revision = strdup("main@sha1:0123456789abcdef0123456789abcdef01234567");
    m->pipeline = strdup("vision");
    m->model_path = strdup("models/vision/lenet.cvl.py");
    memcpy(m->model_digest, HEX_A, 65);
    m->target = strdup("x86_64-avx2");
    m->precision = CV_PRECISION_INT8;
    m->opt_level = CV_OPT_O2;
    memcpy(m->l2_key, HEX_B, 65);
    m->attempt = 1;
}

static void sample_result(cv_result_msg *r)
{
    cv_result_msg_init(r);
    r->job_id = strdup("job-1");
    r->status = CV_RESULT_FAILED;
    r->l1 = CV_CACHE_MISS;
    r->l2 = CV_CACHE_REMOTE_HIT;
    for (int i = 0; i < CV_TIMING__COUNT; i++)
        r->timings_ms[i] = 10 * (i + 1);
    cv_span sp = {"lenet.cvl.py", 5, 9, 5, 20};
    int root = cv_diag_add(&r->diags, CV_SEV_ERROR, 3101, sp, "FunctionDef>Assign>Call[cvl.conv2d]",
                           "channels differ: %d vs %d", 3, 1);
    cv_diag_note(&r->diags, root, "weight expects %d", 1);
    int child = cv_diag_error(&r->diags, 3011, (cv_span){0}, "shape unknown (caused by an earlier error)");
    cv_diag_set_root(&r->diags, child, root);
    cv_diag_add(&r->diags, CV_SEV_WARNING, 2020, (cv_span){"x.cuir", 1, 1, 0, 0}, NULL, "unused \"v\"\n");
}

static void test_job_round_trip(void **state)
{
    (void)state;
    cv_job_msg m, back;
    cv_diag d;
    cv_diag_init(&d);
    sample_job(&m);
    char *buf;
    size_t len;
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), 0);
    assert_int_equal(len, strlen(buf));
    assert_non_null(strstr(buf, "\"precision\":\"int8\""));
    assert_int_equal(cv_job_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_string_equal(back.job_id, m.job_id);
    assert_string_equal(back.revision, m.revision);
    assert_string_equal(back.pipeline, m.pipeline);
    assert_string_equal(back.model_path, m.model_path);
    assert_string_equal(back.model_digest, m.model_digest);
    assert_string_equal(back.target, m.target);
    assert_string_equal(back.l2_key, m.l2_key);
    assert_int_equal(back.precision, CV_PRECISION_INT8);
    assert_int_equal(back.opt_level, CV_OPT_O2);
    assert_int_equal(back.attempt, 1);
    cv_job_msg copy;
    assert_int_equal(cv_job_msg_copy(&copy, &back), 0);
    assert_string_equal(copy.model_path, m.model_path);
    assert_ptr_not_equal(copy.model_path, back.model_path);
    assert_int_equal(d.n, 0);
    free(buf);
    cv_job_msg_free(&copy);
    cv_job_msg_free(&back);
    cv_job_msg_free(&m);
    cv_diag_free(&d);
}

/* The optional calibration travels only when set: a job without it encodes
 * exactly as before, so older messages and seeds still decode. */
static void test_job_calibration(void **state)
{
    (void)state;
    cv_job_msg m, back;
    cv_diag d;
    cv_diag_init(&d);
    sample_job(&m);
    char *buf;
    size_t len;
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), 0);
    assert_null(strstr(buf, "calibration"));
    assert_int_equal(cv_job_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_null(back.calibration);
    assert_null(back.calibration_method);
    cv_job_msg_free(&back);
    free(buf);
    m.calibration = strdup("calib/*.npy");
    m.calibration_method = strdup("entropy");
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), 0);
    assert_non_null(strstr(buf, "\"calibration\":{\"data\":\"calib/*.npy\",\"method\":\"entropy\"}"));
    assert_int_equal(cv_job_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_string_equal(back.calibration, "calib/*.npy");
    assert_string_equal(back.calibration_method, "entropy");
    cv_job_msg copy;
    assert_int_equal(cv_job_msg_copy(&copy, &back), 0);
    assert_string_equal(copy.calibration, "calib/*.npy");
    assert_ptr_not_equal(copy.calibration, back.calibration);
    assert_int_equal(d.n, 0);
    free(buf);
    /* An encoder never writes what the decoder refuses: data without method. */
    free(m.calibration_method);
    m.calibration_method = NULL;
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), -1);
    assert_int_equal(cv_diag_get(&d, 1)->code, 1135);
    cv_job_msg_free(&copy);
    cv_job_msg_free(&back);
    cv_job_msg_free(&m);
    cv_diag_free(&d);
}

static json_t *calibration_json(const char *data, const char *method)
{
    json_t *c = json_object();
    json_object_set_new(c, "data", json_string(data));
    json_object_set_new(c, "method", json_string(method));
    return c;
}

static void test_result_round_trip(void **state)
{
    (void)state;
    cv_result_msg r, back;
    cv_diag d;
    cv_diag_init(&d);
    sample_result(&r);
    char *buf;
    size_t len;
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    assert_int_equal(cv_result_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_int_equal(d.n, 0);
    assert_string_equal(back.job_id, "job-1");
    assert_int_equal(back.status, CV_RESULT_FAILED);
    assert_string_equal(back.artifact_manifest, "");
    assert_int_equal(back.l1, CV_CACHE_MISS);
    assert_int_equal(back.l2, CV_CACHE_REMOTE_HIT);
    for (int i = 0; i < CV_TIMING__COUNT; i++)
        assert_int_equal(back.timings_ms[i], 10 * (i + 1));
    assert_int_equal(back.diags.n, 3);
    for (int i = 1; i <= 3; i++) {
        const cv_diag_entry *a = cv_diag_get(&r.diags, i), *b = cv_diag_get(&back.diags, i);
        assert_int_equal(a->code, b->code);
        assert_int_equal(a->sev, b->sev);
        assert_int_equal(a->root_id, b->root_id);
        assert_int_equal(a->span.line, b->span.line);
        assert_int_equal(a->span.end_col, b->span.end_col);
        assert_string_equal(a->msg, b->msg);
        assert_true((a->path == NULL) == (b->path == NULL));
        assert_true((a->span.file == NULL) == (b->span.file == NULL));
        assert_int_equal(a->n_notes, b->n_notes);
    }
    assert_int_equal(cv_diag_get(&back.diags, 2)->root_id, 1);
    assert_string_equal(cv_diag_get(&back.diags, 1)->notes[0], "weight expects 1");
    assert_null(back.miss);         /* optional: absent stays absent */
    assert_null(back.miss_reason);
    free(buf);
    cv_result_msg_free(&back);
    /* an L2 miss's cause and reason travel when set */
    r.miss = strdup("weights");
    r.miss_reason = strdup("not found: structure unchanged, weights changed (3 of 62 tensors)");
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    assert_int_equal(cv_result_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_string_equal(back.miss, "weights");
    assert_string_equal(back.miss_reason, r.miss_reason);
    free(buf);
    cv_result_msg_free(&back);
    cv_result_msg_free(&r);
    cv_diag_free(&d);
}

/* ---- every error code, with the JSON path it names */

static json_t *job_json(void)
{
    cv_job_msg m;
    sample_job(&m);
    char *buf;
    size_t len;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), 0);
    json_t *o = json_loads(buf, 0, NULL);
    free(buf);
    cv_job_msg_free(&m);
    cv_diag_free(&d);
    return o;
}

static json_t *result_json(void)
{
    cv_result_msg r;
    sample_result(&r);
    char *buf;
    size_t len;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    json_t *o = json_loads(buf, 0, NULL);
    free(buf);
    cv_result_msg_free(&r);
    cv_diag_free(&d);
    return o;
}

/* Decodes o (consumed) as a job or result; expects failure with `code` at `path`. */
static void expect_error(json_t *o, bool result, int code, const char *path)
{
    char *buf = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    cv_diag d;
    cv_diag_init(&d);
    int rc;
    if (result) {
        cv_result_msg r;
        rc = cv_result_msg_decode(buf, strlen(buf), "t", &r, &d);
        cv_result_msg_free(&r);
    } else {
        cv_job_msg m;
        rc = cv_job_msg_decode(buf, strlen(buf), "t", &m, &d);
        cv_job_msg_free(&m);
    }
    assert_int_equal(rc, -1);
    bool found = false;
    for (int i = 1; i <= d.n && !found; i++) {
        const cv_diag_entry *e = cv_diag_get(&d, i);
        found = e->code == code && (!path || (e->path && strcmp(e->path, path) == 0));
    }
    if (!found)
        cv_diag_print(&d, stderr, false);
    assert_true(found);
    assert_non_null(cv_diag_code_lookup(code));
    free(buf);
    cv_diag_free(&d);
}

static void set(json_t *o, const char *key, json_t *v) { json_object_set_new(o, key, v); }

static void test_job_errors(void **state)
{
    (void)state;
    json_t *o;
    o = job_json(); json_object_del(o, "target"); expect_error(o, false, 1133, "target");
    o = job_json(); set(o, "extra", json_true()); expect_error(o, false, 1134, NULL);
    o = job_json(); set(o, "attempt", json_string("1")); expect_error(o, false, 1135, "attempt");
    o = job_json(); set(o, "attempt", json_real(1.0)); expect_error(o, false, 1135, "attempt");
    o = job_json(); set(o, "attempt", json_integer(0)); expect_error(o, false, 1136, "attempt");
    o = job_json(); set(o, "attempt", json_integer(101)); expect_error(o, false, 1136, "attempt");
    o = job_json(); set(o, "job_id", json_string("a b")); expect_error(o, false, 1136, "job_id");
    o = job_json(); set(o, "job_id", json_string("")); expect_error(o, false, 1136, "job_id");
    o = job_json(); set(o, "model_path", json_string("../etc/passwd")); expect_error(o, false, 1136, "model_path");
    o = job_json(); set(o, "model_path", json_string("a/../../b")); expect_error(o, false, 1136, "model_path");
    o = job_json(); set(o, "model_path", json_string("/abs")); expect_error(o, false, 1136, "model_path");
    o = job_json(); set(o, "pipeline", json_string("a\nb")); expect_error(o, false, 1136, "pipeline");
    o = job_json(); set(o, "target", json_string("x86 64")); expect_error(o, false, 1136, "target");
    char *big = malloc(CV_MSG_STR_MAX + 2);
    memset(big, 'r', CV_MSG_STR_MAX + 1);
    big[CV_MSG_STR_MAX + 1] = 0;
    o = job_json(); set(o, "revision", json_string(big)); expect_error(o, false, 1136, "revision");
    big[CV_MSG_STR_MAX] = 0;   /* exactly the limit is fine */
    o = job_json(); set(o, "revision", json_string(big));
    char *ok = json_dumps(o, 0);
    cv_job_msg m;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_job_msg_decode(ok, strlen(ok), NULL, &m, &d), 0);
    cv_job_msg_free(&m);
    free(ok);
    json_decref(o);
    free(big);
    o = job_json(); set(o, "l2_key", json_string(HEX_A "0")); expect_error(o, false, 1137, "l2_key");
    o = job_json(); set(o, "model_digest", json_string("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    expect_error(o, false, 1137, "model_digest");
    o = job_json(); set(o, "precision", json_string("fp8")); expect_error(o, false, 1138, "precision");
    o = job_json(); set(o, "opt_level", json_integer(2)); expect_error(o, false, 1135, "opt_level");
    o = job_json(); set(o, "calibration", json_integer(3)); expect_error(o, false, 1135, "calibration");
    o = job_json(); set(o, "calibration", calibration_json("../c/*.npy", "minmax"));
    expect_error(o, false, 1136, "calibration.data");
    o = job_json(); set(o, "calibration", calibration_json("/c/*.npy", "minmax"));
    expect_error(o, false, 1136, "calibration.data");
    o = job_json(); set(o, "calibration", calibration_json("c/*.npy", "kl"));
    expect_error(o, false, 1138, "calibration.method");
    o = job_json(); set(o, "calibration", json_object()); expect_error(o, false, 1133, "calibration.data");
    o = job_json(); set(o, "calibration", calibration_json("c/*.npy", "minmax"));
    set(json_object_get(o, "calibration"), "extra", json_true());
    expect_error(o, false, 1134, "calibration");
    expect_error(json_array(), false, 1132, NULL);
    /* Malformed and oversized input never reaches the field checks. */
    assert_int_equal(cv_job_msg_decode("{\"job_id\":", 10, NULL, &m, &d), -1);
    assert_int_equal(cv_diag_get(&d, 1)->code, 1132);
    assert_int_equal(cv_diag_get(&d, 1)->span.line, 1);
    size_t n = CV_MSG_MAX_BYTES + 1;
    char *huge = calloc(1, n);
    memset(huge, ' ', n);
    assert_int_equal(cv_job_msg_decode(huge, n, NULL, &m, &d), -1);
    assert_int_equal(cv_diag_get(&d, 2)->code, 1131);
    const char *dup = "{\"job_id\":\"a\",\"job_id\":\"b\"}";
    assert_int_equal(cv_job_msg_decode(dup, strlen(dup), NULL, &m, &d), -1);
    assert_int_equal(cv_diag_get(&d, 3)->code, 1132);
    free(huge);
    cv_diag_free(&d);
}

static void test_result_errors(void **state)
{
    (void)state;
    json_t *o, *e;
    o = result_json(); set(o, "status", json_string("ok")); expect_error(o, true, 1133, "artifact_manifest");
    o = result_json(); set(o, "status", json_string("crashed")); expect_error(o, true, 1138, "status");
    o = result_json(); set(json_object_get(o, "cache"), "l1", json_string("warm"));
    expect_error(o, true, 1138, "cache.l1");
    o = result_json(); set(json_object_get(o, "timings_ms"), "fetch", json_integer(-1));
    expect_error(o, true, 1136, "timings_ms.fetch");
    o = result_json(); json_object_del(json_object_get(o, "timings_ms"), "upload");
    expect_error(o, true, 1133, "timings_ms.upload");
    o = result_json(); set(o, "artifact_manifest", json_string("xyz")); expect_error(o, true, 1137, "artifact_manifest");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 1);
    set(e, "code", json_string("E3011")); expect_error(o, true, 1139, "diagnostics[1].code");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 1);
    set(e, "id", json_integer(7)); expect_error(o, true, 1139, "diagnostics[1].id");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 1);
    set(e, "root_id", json_integer(2)); expect_error(o, true, 1139, "diagnostics[1].root_id");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 0);
    set(e, "severity", json_string("fatal")); expect_error(o, true, 1138, "diagnostics[0].severity");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 0);
    set(e, "notes", json_pack("[i]", 1)); expect_error(o, true, 1135, "diagnostics[0].notes");
    o = result_json(); e = json_array_get(json_object_get(o, "diagnostics"), 0);
    set(e, "line", json_integer(-3)); expect_error(o, true, 1136, "diagnostics[0].line");
    o = result_json(); set(o, "diagnostics", json_object()); expect_error(o, true, 1135, "diagnostics");
    /* a miss's cause is a token and its reason one line of text */
    o = result_json(); set(json_object_get(o, "cache"), "miss", json_string("weights changed"));
    expect_error(o, true, 1136, "cache.miss");
    o = result_json(); set(json_object_get(o, "cache"), "miss", json_integer(3));
    expect_error(o, true, 1135, "cache.miss");
    o = result_json(); set(json_object_get(o, "cache"), "miss_reason", json_string("a\nb"));
    expect_error(o, true, 1136, "cache.miss_reason");
    o = result_json(); set(json_object_get(o, "cache"), "why", json_string("x"));
    expect_error(o, true, 1134, "cache");
}

static void test_encode_validates(void **state)
{
    (void)state;
    cv_job_msg m;
    cv_diag d;
    cv_diag_init(&d);
    sample_job(&m);
    m.attempt = 0;
    char *buf = (char *)1;
    size_t len;
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), -1);
    assert_null(buf);
    assert_int_equal(cv_diag_get(&d, 1)->code, 1136);
    m.attempt = 1;
    m.precision = (cv_precision)42;
    assert_int_equal(cv_job_msg_encode(&m, &buf, &len, &d), -1);
    cv_job_msg_free(&m);
    cv_result_msg r;
    sample_result(&r);
    r.status = CV_RESULT_OK;   /* ok without a manifest */
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), -1);
    memcpy(r.artifact_manifest, HEX_B, 65);
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    free(buf);
    cv_result_msg_free(&r);
    cv_diag_free(&d);
}

/* Huge diagnostics are cut, never a reason to lose a result. */
static void test_result_bounded(void **state)
{
    (void)state;
    cv_result_msg r, back;
    cv_diag d;
    cv_diag_init(&d);
    cv_result_msg_init(&r);
    r.job_id = strdup("big");
    r.status = CV_RESULT_FAILED;
    size_t n = 70000;
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n; i += 2)
        memcpy(text + i, "\xc3\xa9", 2);   /* 'é': a cut must not split it */
    text[n] = 0;
    cv_diag_error(&r.diags, 1001, (cv_span){0}, "%s", text);
    for (int i = 0; i < 99; i++)
        cv_diag_error(&r.diags, 1002, (cv_span){0}, "%.20000s", text);
    char *buf;
    size_t len;
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    assert_true(len <= CV_MSG_MAX_BYTES);
    assert_int_equal(cv_result_msg_decode(buf, len, NULL, &back, &d), 0);
    assert_true(back.diags.n > 10 && back.diags.n < 100);
    assert_true(strlen(cv_diag_get(&back.diags, 1)->msg) <= CV_MSG_DIAG_STR_MAX);
    assert_int_equal(cv_diag_get(&back.diags, 1)->code, 1001);
    free(buf);
    free(text);
    cv_result_msg_free(&back);
    cv_result_msg_free(&r);
    cv_diag_free(&d);
}

/* ---- the schemas */

static json_t *load_schema(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "schemas/%s", name);
    json_t *s = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    const char *build = getenv("CUVIL_BUILD");
    if (!s && build) {   /* run from elsewhere: the sources sit above the build dir */
        snprintf(path, sizeof path, "%s/../schemas/%s", build, name);
        s = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    }
    assert_non_null(s);
    return s;
}

/* The JSON array `arr` and the codec list hold the same strings. */
static void same_set(json_t *arr, cv_msg_list which)
{
    size_t n;
    const char *const *v = cv_msg_list_get(which, &n);
    assert_non_null(arr);
    assert_int_equal(json_array_size(arr), n);
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < n && !found; k++)
            found = strcmp(json_string_value(json_array_get(arr, k)), v[i]) == 0;
        if (!found)
            fprintf(stderr, "schema lacks '%s' (list %d)\n", v[i], (int)which);
        assert_true(found);
    }
}

static void same_keys(json_t *obj_schema, cv_msg_list which)
{
    same_set(json_object_get(obj_schema, "required"), which);
    json_t *props = json_object_get(obj_schema, "properties");
    size_t n;
    cv_msg_list_get(which, &n);
    assert_int_equal(json_object_size(props), n);
    assert_true(json_is_false(json_object_get(obj_schema, "additionalProperties")));
}

static json_t *path_get(json_t *o, const char *a, const char *b, const char *c)
{
    o = json_object_get(o, a);
    o = b ? json_object_get(o, b) : o;
    return c ? json_object_get(o, c) : o;
}

static void test_schema_matches_codec(void **state)
{
    (void)state;
    json_t *job = load_schema("job.schema.json"), *res = load_schema("result.schema.json");
    assert_string_equal(json_string_value(json_object_get(job, "$schema")),
                        "https://json-schema.org/draft/2020-12/schema");
    same_set(json_object_get(job, "required"), CV_MSGLIST_JOB_KEYS);
    size_t n_req, n_opt;
    cv_msg_list_get(CV_MSGLIST_JOB_KEYS, &n_req);
    const char *const *opt = cv_msg_list_get(CV_MSGLIST_JOB_OPTIONAL_KEYS, &n_opt);
    assert_int_equal(json_object_size(json_object_get(job, "properties")), n_req + n_opt);
    for (size_t i = 0; i < n_opt; i++)
        assert_non_null(path_get(job, "properties", opt[i], NULL));
    json_t *cal = json_array_get(path_get(job, "properties", "calibration", "anyOf"), 1);
    same_keys(cal, CV_MSGLIST_CALIBRATION_KEYS);
    same_set(path_get(cal, "properties", "method", "enum"), CV_MSGLIST_CALIBRATION_METHODS);
    same_set(path_get(job, "properties", "precision", "enum"), CV_MSGLIST_PRECISIONS);
    same_set(path_get(job, "properties", "opt_level", "enum"), CV_MSGLIST_OPT_LEVELS);
    same_keys(res, CV_MSGLIST_RESULT_KEYS);
    same_set(path_get(res, "properties", "status", "enum"), CV_MSGLIST_STATUSES);
    json_t *cache = path_get(res, "properties", "cache", NULL);
    same_set(json_object_get(cache, "required"), CV_MSGLIST_CACHE_KEYS);
    cv_msg_list_get(CV_MSGLIST_CACHE_KEYS, &n_req);
    opt = cv_msg_list_get(CV_MSGLIST_CACHE_OPTIONAL_KEYS, &n_opt);
    assert_int_equal(json_object_size(json_object_get(cache, "properties")), n_req + n_opt);
    for (size_t i = 0; i < n_opt; i++)
        assert_non_null(path_get(cache, "properties", opt[i], NULL));
    assert_true(json_is_false(json_object_get(cache, "additionalProperties")));
    same_keys(path_get(res, "properties", "timings_ms", NULL), CV_MSGLIST_TIMING_KEYS);
    same_set(path_get(res, "$defs", "cache_outcome", "enum"), CV_MSGLIST_CACHE_OUTCOMES);
    json_t *diag = path_get(res, "$defs", "diagnostic", NULL);
    same_keys(diag, CV_MSGLIST_DIAG_KEYS);
    same_set(path_get(diag, "properties", "severity", "enum"), CV_MSGLIST_SEVERITIES);
    for (int s = CV_SEV_NOTE; s <= CV_SEV_ERROR; s++) {
        size_t n;
        assert_string_equal(cv_msg_list_get(CV_MSGLIST_SEVERITIES, &n)[s],
                            cv_severity_name((cv_severity)s));
    }
    json_decref(job);
    json_decref(res);
}

/* A small JSON Schema checker: the keywords these two schemas use ($ref to
 * $defs, type, enum, const, anyOf, if/then, required, properties,
 * additionalProperties, items, maxItems, min/maxLength, minimum/maximum and
 * patterns that POSIX ERE can express). */
typedef struct sv {
    json_t *root;
    char err[256];
} sv;

static bool sv_check(sv *v, json_t *s, json_t *i, const char *where);

static bool sv_fail(sv *v, const char *where, const char *what)
{
    snprintf(v->err, sizeof v->err, "%s: %s", where, what);
    return false;
}

static bool sv_type(json_t *t, json_t *i)
{
    if (json_is_array(t)) {
        for (size_t k = 0; k < json_array_size(t); k++)
            if (sv_type(json_array_get(t, k), i))
                return true;
        return false;
    }
    const char *n = json_string_value(t);
    return (!strcmp(n, "object") && json_is_object(i)) || (!strcmp(n, "array") && json_is_array(i)) ||
           (!strcmp(n, "string") && json_is_string(i)) || (!strcmp(n, "integer") && json_is_integer(i)) ||
           (!strcmp(n, "number") && json_is_number(i)) || (!strcmp(n, "null") && json_is_null(i)) ||
           (!strcmp(n, "boolean") && json_is_boolean(i));
}

static bool sv_string(sv *v, json_t *s, json_t *i, const char *where)
{
    const char *str = json_string_value(i);
    size_t chars = 0;
    for (const char *p = str; *p; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    json_t *k;
    if ((k = json_object_get(s, "minLength")) && chars < (size_t)json_integer_value(k))
        return sv_fail(v, where, "too short");
    if ((k = json_object_get(s, "maxLength")) && chars > (size_t)json_integer_value(k))
        return sv_fail(v, where, "too long");
    k = json_object_get(s, "pattern");
    if (!k || strstr(json_string_value(k), "(?") || strstr(json_string_value(k), "\\u"))
        return true;   /* lookaheads and unicode escapes are ECMA-only, beyond POSIX ERE */
    regex_t re;
    assert_int_equal(regcomp(&re, json_string_value(k), REG_EXTENDED | REG_NOSUB), 0);
    bool ok = regexec(&re, str, 0, NULL, 0) == 0;
    regfree(&re);
    return ok ? true : sv_fail(v, where, "pattern mismatch");
}

static bool sv_object(sv *v, json_t *s, json_t *i, const char *where)
{
    json_t *req = json_object_get(s, "required"), *props = json_object_get(s, "properties");
    for (size_t k = 0; k < json_array_size(req); k++)
        if (!json_object_get(i, json_string_value(json_array_get(req, k))))
            return sv_fail(v, json_string_value(json_array_get(req, k)), "required");
    const char *key;
    json_t *val;
    json_object_foreach(i, key, val) {
        json_t *ps = json_object_get(props, key);
        if (!ps && json_is_false(json_object_get(s, "additionalProperties")))
            return sv_fail(v, key, "not allowed");
        if (ps && !sv_check(v, ps, val, key))
            return false;
    }
    (void)where;
    return true;
}

static bool sv_check(sv *v, json_t *s, json_t *i, const char *where)
{
    assert_non_null(s);
    json_t *k;
    if ((k = json_object_get(s, "$ref"))) {
        const char *ref = json_string_value(k);
        assert_int_equal(strncmp(ref, "#/$defs/", 8), 0);
        if (!sv_check(v, json_object_get(json_object_get(v->root, "$defs"), ref + 8), i, where))
            return false;
    }
    if ((k = json_object_get(s, "type")) && !sv_type(k, i))
        return sv_fail(v, where, "wrong type");
    if ((k = json_object_get(s, "const")) && !json_equal(k, i))
        return sv_fail(v, where, "not the constant");
    if ((k = json_object_get(s, "enum"))) {
        bool any = false;
        for (size_t n = 0; n < json_array_size(k) && !any; n++)
            any = json_equal(json_array_get(k, n), i);
        if (!any)
            return sv_fail(v, where, "not in enum");
    }
    if ((k = json_object_get(s, "anyOf"))) {
        bool any = false;
        for (size_t n = 0; n < json_array_size(k) && !any; n++) {
            sv scratch = {v->root, ""};
            any = sv_check(&scratch, json_array_get(k, n), i, where);
        }
        if (!any)
            return sv_fail(v, where, "no anyOf branch");
    }
    if ((k = json_object_get(s, "if"))) {
        sv scratch = {v->root, ""};
        if (sv_check(&scratch, k, i, where) && !sv_check(v, json_object_get(s, "then"), i, where))
            return false;
    }
    if (json_is_string(i) && !sv_string(v, s, i, where))
        return false;
    if (json_is_integer(i)) {
        json_int_t x = json_integer_value(i);
        if (((k = json_object_get(s, "minimum")) && x < json_integer_value(k)) ||
            ((k = json_object_get(s, "maximum")) && x > json_integer_value(k)))
            return sv_fail(v, where, "out of range");
    }
    if (json_is_array(i)) {
        if ((k = json_object_get(s, "maxItems")) && json_array_size(i) > (size_t)json_integer_value(k))
            return sv_fail(v, where, "too many items");
        for (size_t n = 0; (k = json_object_get(s, "items")) && n < json_array_size(i); n++)
            if (!sv_check(v, k, json_array_get(i, n), where))
                return false;
    }
    return json_is_object(i) ? sv_object(v, s, i, where) : true;
}

/* Validates the text against the schema file and expects `accept`. */
static void schema_expect(const char *schema_name, const char *text, bool accept)
{
    json_t *schema = load_schema(schema_name), *inst = json_loads(text, 0, NULL);
    assert_non_null(inst);
    sv v = {schema, ""};
    bool ok = sv_check(&v, schema, inst, "$");
    if (ok != accept)
        fprintf(stderr, "  %s %s: %s (%s)\n", schema_name, ok ? "accepts" : "rejects", text, v.err);
    json_decref(inst);
    json_decref(schema);
    assert_true(ok == accept);
}

static void schema_expect_json(const char *schema_name, json_t *o, bool accept)
{
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    schema_expect(schema_name, text, accept);
    free(text);
}

static void test_samples_valid_under_schema(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    char *buf;
    size_t len;
    json_t *o = job_json();
    schema_expect_json("job.schema.json", o, true);
    o = result_json();
    schema_expect_json("result.schema.json", o, true);
    cv_result_msg r;
    sample_result(&r);
    r.status = CV_RESULT_OK;
    memcpy(r.artifact_manifest, HEX_A, 65);
    assert_int_equal(cv_result_msg_encode(&r, &buf, &len, &d), 0);
    schema_expect("result.schema.json", buf, true);
    free(buf);
    cv_result_msg_free(&r);
    assert_int_equal(cv_queue_dead_letter_result("job-9", 3, 9208, "cache down", &buf, &len), 0);
    schema_expect("result.schema.json", buf, true);
    assert_non_null(strstr(buf, "CV9208"));
    free(buf);
    /* The checker is not vacuous: what the codec rejects, the schema rejects. */
    o = job_json(); set(o, "extra", json_true());
    schema_expect_json("job.schema.json", o, false);
    o = job_json(); set(o, "precision", json_string("fp8"));
    schema_expect_json("job.schema.json", o, false);
    o = job_json(); set(o, "attempt", json_integer(0));
    schema_expect_json("job.schema.json", o, false);
    o = job_json(); set(o, "l2_key", json_string("ABC"));
    schema_expect_json("job.schema.json", o, false);
    o = job_json(); set(o, "calibration", calibration_json("calib/*.npy", "percentile"));
    schema_expect_json("job.schema.json", o, true);
    o = job_json(); set(o, "calibration", json_null());
    schema_expect_json("job.schema.json", o, true);
    o = job_json(); set(o, "calibration", calibration_json("calib/*.npy", "kl"));
    schema_expect_json("job.schema.json", o, false);
    o = result_json(); set(o, "status", json_string("ok"));
    schema_expect_json("result.schema.json", o, false);
    o = result_json(); set(json_array_get(json_object_get(o, "diagnostics"), 0), "code", json_string("X1"));
    schema_expect_json("result.schema.json", o, false);
    o = result_json(); json_object_del(json_object_get(o, "cache"), "l2");
    schema_expect_json("result.schema.json", o, false);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_round_trip),
        cmocka_unit_test(test_job_calibration),
        cmocka_unit_test(test_result_round_trip),
        cmocka_unit_test(test_job_errors),
        cmocka_unit_test(test_result_errors),
        cmocka_unit_test(test_encode_validates),
        cmocka_unit_test(test_result_bounded),
        cmocka_unit_test(test_schema_matches_codec),
        cmocka_unit_test(test_samples_valid_under_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
