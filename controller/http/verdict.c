/* What a revision's state is, said once: every page (overview, revision,
 * failures) and the API ask http_rev_verdict, so a badge never disagrees
 * with the text beside it.  A spec that failed to load, failed jobs, a
 * build in progress, an all-cached build and a partly cached one each get
 * their own class and words.  Beside it, who made the commit and why
 * (html_commit). */
#include "controller/http/html.h"

#include <stdio.h>

static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

static int spec_note(char *buf, size_t size, const http_rev_cache *c)
{
    if (!c->spec_errors && !c->spec_warnings)
        return 0;
    if (!c->spec_errors)
        return snprintf(buf, size, "; %lld spec warning%s", (long long)c->spec_warnings,
                        plural(c->spec_warnings));
    return snprintf(buf, size, "; %lld spec error%s%s", (long long)c->spec_errors,
                    plural(c->spec_errors), c->spec_warnings ? " and warnings" : "");
}

void http_rev_verdict(const http_rev_cache *c, http_verdict *v)
{
    int64_t done = c->jobs - c->pending, hits = http_rev_cache_hits(c);
    char *at = v->detail;
    size_t left = sizeof v->detail;
    int n = 0;
    if (c->state == CV_REV_PLANNING) {
        *v = (http_verdict){.cls = "planning", .label = "planning"};
        n = snprintf(at, left, "the specs are being read and the jobs planned");
    } else if (c->state == CV_REV_BUILDING) {
        *v = (http_verdict){.cls = "building", .label = "building"};
        n = snprintf(at, left, "%lld of %lld jobs done, %lld failed so far", (long long)done,
                     (long long)c->jobs, (long long)c->failed);
    } else if (c->failed) {
        *v = (http_verdict){.cls = "failed", .label = "failed"};
        n = snprintf(at, left, "%lld of %lld job%s failed", (long long)c->failed,
                     (long long)c->jobs, plural(c->jobs));
    } else if (c->spec_errors || c->state == CV_REV_FAILED) {
        *v = (http_verdict){.cls = "spec", .label = c->spec_errors ? "spec error" : "failed"};
        n = c->jobs ? snprintf(at, left, "no job failed, but the revision did not load whole: "
                               "%lld job%s built from what did", (long long)c->jobs,
                               plural(c->jobs))
                    : snprintf(at, left, "no job ran: the specs did not load");
    } else if (c->jobs && hits == c->jobs) {
        *v = (http_verdict){.cls = "hit", .label = "all cached"};
        n = snprintf(at, left, "all %lld job%s from the cache", (long long)c->jobs,
                     plural(c->jobs));
    } else if (hits) {
        *v = (http_verdict){.cls = "partial", .label = "succeeded"};
        n = snprintf(at, left, "%lld of %lld jobs from the cache, %lld compiled", (long long)hits,
                     (long long)c->jobs, (long long)(c->jobs - hits));
    } else {
        *v = (http_verdict){.cls = "succeeded", .label = "succeeded"};
        n = snprintf(at, left, "%lld job%s compiled", (long long)c->jobs, plural(c->jobs));
    }
    if (n > 0 && (size_t)n < left)
        spec_note(at + n, left - (size_t)n, c);
}

void html_verdict(cv_sb *o, const http_verdict *v, const char *id)
{
    cv_sb_puts(o, "<span class=\"st st-");
    html_esc(o, v->cls);
    cv_sb_puts(o, "\"");
    if (id)
        cv_sb_printf(o, " id=\"%s\"", id);
    cv_sb_puts(o, " title=\"");
    html_esc(o, v->detail);
    cv_sb_puts(o, "\">");
    html_esc(o, v->label);
    cv_sb_puts(o, "</span>");
}

void html_commit(cv_sb *o, const http_rev_cache *c, int64_t now_ms)
{
    if (!c->subject[0] && !c->author[0])
        return;
    cv_sb_puts(o, "<span class=\"commit\">");
    html_esc(o, c->subject);
    if (c->author[0]) {
        cv_sb_puts(o, " <span class=\"muted\">by ");
        html_esc(o, c->author);
        if (c->commit_ms) {
            cv_sb_puts(o, ", ");
            html_ago(o, c->commit_ms, now_ms);
        }
        cv_sb_puts(o, "</span>");
    }
    cv_sb_puts(o, "</span>");
}
