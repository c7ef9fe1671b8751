/* The dashboard's layout, stylesheet and formats. */
#include "controller/http/html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char STYLE[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1f24;"
    "background:#f6f7f9}"
    "header{background:#1f2937;color:#fff;padding:10px 24px;display:flex;gap:24px;"
    "align-items:center}"
    "header b{font-size:17px}header a{color:#cbd5e1;text-decoration:none}"
    "header a.on{color:#fff;border-bottom:2px solid #60a5fa}"
    "main{padding:16px 24px;max-width:1200px}"
    "h1{font-size:20px;margin:8px 0 12px}h2{font-size:16px;margin:22px 0 8px}"
    "h3{font-size:14px;margin:14px 0 6px}"
    ".cards{display:flex;flex-wrap:wrap;gap:12px}"
    ".card{background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:10px 14px;"
    "min-width:200px}"
    ".card .k{color:#6b7280;font-size:12px;text-transform:uppercase}"
    ".card .v{font-size:22px;font-weight:600}"
    "table{border-collapse:collapse;background:#fff;border:1px solid #e5e7eb}"
    "th,td{padding:4px 10px;border-bottom:1px solid #eef0f3;text-align:left;"
    "vertical-align:top}"
    "th{background:#f3f4f6;font-weight:600}td.n{text-align:right;white-space:nowrap;"
    "font-variant-numeric:tabular-nums}"
    ".st{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;color:#fff;"
    "background:#6b7280}"
    ".st-ok,.st-succeeded{background:#2e7d32}.st-hit{background:#00796b}"
    ".st-partial{background:#388e3c}.st-spec{background:#6a1b9a}"
    ".st-failed,.st-ice,.st-timeout,.st-oom,.st-infra{background:#c62828}"
    ".st-queued,.st-building,.st-planning{background:#b26a00}"
    "pre{background:#fff;border:1px solid #e5e7eb;padding:8px;overflow:auto;font-size:12px}"
    "code{font-size:12px}.muted{color:#6b7280}.new{color:#c62828;font-weight:600}.state-lost{color:#c62828;font-weight:600}.state-busy{color:#1565c0}"
    ".legend span{display:inline-block;margin-right:14px}"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
    "footer{color:#6b7280;font-size:12px;padding:12px 24px}";

static const struct { const char *href, *label; } nav[] = {
    {"/", "Overview"}, {"/failures", "Failures"}, {"/misses", "Misses"}, {"/metrics", "Metrics"},
    {"/api/v1/status", "API"},
};

void html_esc(cv_sb *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': cv_sb_puts(o, "&amp;"); break;
        case '<': cv_sb_puts(o, "&lt;"); break;
        case '>': cv_sb_puts(o, "&gt;"); break;
        case '"': cv_sb_puts(o, "&quot;"); break;
        case '\'': cv_sb_puts(o, "&#39;"); break;
        default: cv_sb_putc(o, *s);
        }
    }
}

void html_begin(cv_sb *o, const char *title, const char *active, int refresh_s)
{
    cv_sb_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width\">");
    if (refresh_s > 0)
        cv_sb_printf(o, "<meta http-equiv=\"refresh\" content=\"%d\">", refresh_s);
    cv_sb_puts(o, "<title>");
    html_esc(o, title);
    cv_sb_printf(o, " · Cuvil</title><style>%s</style></head><body><header><b>Cuvil farm</b>",
                 STYLE);
    for (size_t i = 0; i < sizeof nav / sizeof nav[0]; i++)
        cv_sb_printf(o, "<a href=\"%s\"%s>%s</a>", nav[i].href,
                     strcmp(nav[i].href, active) == 0 ? " class=\"on\"" : "", nav[i].label);
    cv_sb_puts(o, "</header><main>\n");
}

void html_finish(http_resp *rs, cv_sb *o, int64_t now_ms)
{
    time_t t = (time_t)(now_ms / 1000);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    cv_sb_printf(o, "</main><footer>rendered %s</footer></body></html>\n", when);
    if (o->oom) {
        http_error(rs, 500, CV_E_HTTP_INTERNAL, "out of memory rendering the page");
        return;
    }
    rs->status = 200;
    rs->type = "text/html; charset=utf-8";
}

void html_error_page(http_resp *rs, int status, const char *title, const char *message)
{
    cv_sb_reset(&rs->body);
    html_begin(&rs->body, title, "", 0);
    cv_sb_puts(&rs->body, "<h1>");
    html_esc(&rs->body, title);
    cv_sb_puts(&rs->body, "</h1><p>");
    html_esc(&rs->body, message);
    cv_sb_puts(&rs->body, "</p><p><a href=\"/\">Back to the overview</a></p>");
    html_finish(rs, &rs->body, 0);
    rs->status = status;
}

void html_short_rev(const char *revision, char *out, size_t size)
{
    const char *at = strstr(revision, "@sha1:");
    if (!at)
        snprintf(out, size, "%s", revision);
    else
        snprintf(out, size, "%.*s@%.7s", (int)(at - revision), revision, at + 6);
}

void html_rev_link(cv_sb *o, const char *revision)
{
    const char *at = strstr(revision, "@sha1:");
    char shown[CV_REVISION_MAX + 1];
    html_short_rev(revision, shown, sizeof shown);
    cv_sb_puts(o, "<a href=\"/revisions/");
    html_esc(o, at ? at + 6 : revision);
    cv_sb_puts(o, "\" title=\"");
    html_esc(o, revision);
    cv_sb_puts(o, "\">");
    html_esc(o, shown);
    cv_sb_puts(o, "</a>");
}

void html_url_encode(cv_sb *o, const char *value)
{
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/:@,*", *p))
            cv_sb_putc(o, (char)*p);
        else
            cv_sb_printf(o, "%%%02X", *p);
    }
}

void html_model_link(cv_sb *o, const char *model)
{
    cv_sb_puts(o, "<a class=\"model\" href=\"/models?model=");
    html_url_encode(o, model);
    cv_sb_puts(o, "\">");
    html_esc(o, model);
    cv_sb_puts(o, "</a>");
}

void html_state(cv_sb *o, const char *state)
{
    cv_sb_puts(o, "<span class=\"st st-");
    html_esc(o, state);
    cv_sb_puts(o, "\">");
    html_esc(o, state);
    cv_sb_puts(o, "</span>");
}

void html_duration(cv_sb *o, int64_t ms)
{
    if (ms < 1000)
        cv_sb_printf(o, "%lld ms", (long long)ms);
    else if (ms < 120000)
        cv_sb_printf(o, "%.1f s", (double)ms / 1000.0);
    else if (ms < 2 * 3600000LL)
        cv_sb_printf(o, "%.1f min", (double)ms / 60000.0);
    else if (ms < 2 * 86400000LL)
        cv_sb_printf(o, "%.1f h", (double)ms / 3600000.0);
    else
        cv_sb_printf(o, "%.1f days", (double)ms / 86400000.0);
}

void html_ago(cv_sb *o, int64_t then_ms, int64_t now_ms)
{
    if (then_ms <= 0) {
        cv_sb_puts(o, "never");
        return;
    }
    html_duration(o, now_ms > then_ms ? now_ms - then_ms : 0);
    cv_sb_puts(o, " ago");
}

void html_pct(cv_sb *o, double ratio)
{
    cv_sb_printf(o, "%.1f%%", ratio * 100.0);
}

void html_bytes(cv_sb *o, uint64_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    cv_sb_printf(o, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void html_diags(cv_sb *o, const cv_diag *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    cv_diag_print(d, f, false);
    fclose(f);
    cv_sb_puts(o, "<pre class=\"diag\">");
    html_esc(o, text);
    cv_sb_puts(o, "</pre>");
    free(text);
}
