/* libFuzzer target: the job and result message decoders (the trust
 * boundary between the controller and the workers: anything may sit in a
 * queue), and the worker's cache values (L1 value, deps list), which may
 * come from a remote cache.  A message that decodes must encode, and its
 * encoding must decode to the same message; a failed decode must carry a
 * message code (CV1131-CV1139) or out-of-memory. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "queue/jobmsg.h"
#include "compile/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(const cv_diag *d)
{
    int code = d->n ? d->v[0].code : 0;
    if (!((code >= 1131 && code <= 1139) || code == 9002))
        abort();
}

static void same_string(const char *a, const char *b)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        abort();
}

/* An absolute path or one with a ".." component. */
static bool climbs(const char *s)
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

static void job_round_trip(const cv_job_msg *m)
{
    cv_diag d;
    cv_diag_init(&d);
    char *text = NULL;
    size_t len = 0;
    if (cv_job_msg_encode(m, &text, &len, &d) != 0)
        abort(); /* a decoded job always encodes */
    cv_job_msg again = {0};
    if (cv_job_msg_decode(text, len, "again", &again, &d) != 0)
        abort();
    same_string(m->job_id, again.job_id);
    same_string(m->revision, again.revision);
    same_string(m->pipeline, again.pipeline);
    same_string(m->model_path, again.model_path);
    same_string(m->model_digest, again.model_digest);
    same_string(m->target, again.target);
    same_string(m->l2_key, again.l2_key);
    if (m->precision != again.precision || m->opt_level != again.opt_level ||
        m->attempt != again.attempt)
        abort();
    if (climbs(m->model_path))
        abort(); /* model paths never leave the repository */
    cv_job_msg_free(&again);
    free(text);
    cv_diag_free(&d);
}

static void result_round_trip(const cv_result_msg *m)
{
    cv_diag d;
    cv_diag_init(&d);
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (cv_result_msg_encode(m, &t1, &n1, &d) != 0)
        abort();
    cv_result_msg again;
    cv_result_msg_init(&again);
    if (cv_result_msg_decode(t1, n1, "again", &again, &d) != 0)
        abort();
    if (cv_result_msg_encode(&again, &t2, &n2, &d) != 0 || n1 != n2 || memcmp(t1, t2, n1) != 0)
        abort(); /* encoding is a fixed point after one trip */
    if (again.status != m->status || strcmp(again.artifact_manifest, m->artifact_manifest) != 0)
        abort();
    cv_result_msg_free(&again);
    free(t1);
    free(t2);
    cv_diag_free(&d);
}

static void job(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_job_msg m = {0};
    if (cv_job_msg_decode(data, size, "fuzz job", &m, &d) == 0)
        job_round_trip(&m);
    else
        check_failure(&d);
    cv_job_msg_free(&m);
    cv_diag_free(&d);
}

static void result(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_result_msg m;
    cv_result_msg_init(&m);
    if (cv_result_msg_decode(data, size, "fuzz result", &m, &d) == 0)
        result_round_trip(&m);
    else
        check_failure(&d);
    cv_result_msg_free(&m);
    cv_diag_free(&d);
}

static void cache_values(const uint8_t *data, size_t size)
{
    cv_compile_l1_value v;
    memset(&v, 0, sizeof v);
    if (cv_compile_l1_decode(data, size, &v) == 0 && !memchr(v.name, 0, sizeof v.name))
        abort();
    cv_compile_deps x;
    if (cv_compile_deps_decode(data, size, &x) == 0) {
        size_t i;
        json_t *f;
        json_array_foreach(x.files, i, f)
            if (!json_is_string(f) || json_string_value(f)[0] == '/')
                abort();
        cv_compile_deps_free(&x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    job(data, size);
    result(data, size);
    cache_values(data, size);
    return 0;
}
