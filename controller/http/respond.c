/* JSON answers, coded JSON errors and the arguments every handler reads. */
#include "controller/http/http_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void http_json(http_resp *rs, int status, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    cv_sb_reset(&rs->body);
    if (!text) {
        rs->status = 500;
        rs->type = "application/json";
        cv_sb_puts(&rs->body, "{\"error\":{\"code\":\"CV6137\",\"name\":\"http-internal\","
                              "\"message\":\"out of memory\"}}\n");
        return;
    }
    cv_sb_puts(&rs->body, text);
    cv_sb_putc(&rs->body, '\n');
    free(text);
    rs->status = status;
    rs->type = "application/json";
}

static void error_json(http_resp *rs, int status, int code, const char *message)
{
    const cv_diag_code_info *info = cv_diag_code_lookup(code);
    char id[16];
    snprintf(id, sizeof id, "CV%04d", code);
    http_json(rs, status, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", id, "name",
                                    info ? info->name : "error", "message", message));
}

void http_error(http_resp *rs, int status, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    error_json(rs, status, code, msg);
}

void http_error_diag(http_resp *rs, int status, const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR) {
            error_json(rs, status, d->v[i].code, d->v[i].msg ? d->v[i].msg : "");
            return;
        }
    error_json(rs, status, CV_E_HTTP_INTERNAL, "the farm could not answer");
}

int64_t http_int_arg(const http_req *rq, http_resp *rs, const char *name, int64_t dflt,
                     int64_t lo, int64_t hi)
{
    const char *v = http_arg(rq, name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || errno || n < lo || n > hi) {
        http_error(rs, 400, CV_E_HTTP_BAD_REQUEST, "%s takes a number from %lld to %lld", name,
                   (long long)lo, (long long)hi);
        return -1;
    }
    return n;
}

int http_revision(cv_http *h, const char *name, cv_rev_summary *out, http_resp *rs)
{
    cv_diag d;
    cv_diag_init(&d);
    char full[CV_REVISION_MAX + 1];
    int found =
        strlen(name) > CV_REVISION_MAX ? 0 : cv_builddb_revision_resolve(h->db, name, full, &d);
    if (found == 1 && cv_builddb_revision_summary(h->db, full, out, &d) != 1)
        found = -1;
    if (found == 0)
        http_error(rs, 404, CV_E_BUILDDB_UNKNOWN_REVISION, "no revision '%.200s' in the build DB", name);
    else if (found < 0)
        http_error_diag(rs, d.n && d.v[0].code == CV_E_BUILDDB_AMBIGUOUS_REVISION ? 400 : 500, &d);
    cv_diag_free(&d);
    return found == 1;
}
