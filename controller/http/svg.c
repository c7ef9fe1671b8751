/* Inline SVG charts: cache hit ratios per revision and job stage bars.
 * Every bar carries a <title>, which browsers show on hover and screen
 * readers read; the pages print the key figures as text as well. */
#include "controller/http/html.h"

#include <stdio.h>
#include <time.h>

enum { CHART_W = 760, CHART_H = 170, LEFT = 44, TOP = 8, BOTTOM = 22, BAR_MAX = 36 };
enum { STAGE_W = 220, STAGE_H = 12 };

static const char *const stage_colors[HTTP_STAGES] = {"#9ca3af", "#60a5fa", "#a78bfa",
                                                      "#f59e0b", "#34d399"};
static const char LOCAL_COLOR[] = "#2e7d32", REMOTE_COLOR[] = "#1565c0", MISS_COLOR[] = "#d1d5db";

static void axes(cv_sb *o, int plot_h)
{
    for (int p = 0; p <= 100; p += 50) {
        double y = TOP + plot_h * (1.0 - p / 100.0);
        cv_sb_printf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>"
                        "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" "
                        "fill=\"#6b7280\">%d%%</text>",
                     LEFT, y, CHART_W - 4, y, LEFT - 6, y + 4, p);
    }
}

static void rect(cv_sb *o, double x, double y, double w, double h, const char *fill)
{
    if (h > 0.0 && w > 0.0)
        cv_sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>",
                     x, y, w, h, fill);
}

static void bar_title(cv_sb *o, const http_rev_cache *c, bool l2, double hit, double local,
                      double remote, int64_t asked)
{
    char rev[CV_REVISION_MAX + 1];
    html_short_rev(c->revision, rev, sizeof rev);
    cv_sb_puts(o, "<title>");
    html_esc(o, rev);
    cv_sb_printf(o, ": %s hit ", l2 ? "L2" : "L1");
    html_pct(o, hit);
    cv_sb_puts(o, " (local ");
    html_pct(o, local);
    cv_sb_puts(o, ", remote ");
    html_pct(o, remote);
    cv_sb_printf(o, ") of %lld answered jobs</title>", (long long)asked);
}

void svg_daily_chart(cv_sb *o, const char *id, const http_day *v, int n)
{
    int plot_h = CHART_H - TOP - BOTTOM - 14, plot_w = CHART_W - LEFT - 8;
    double slot = n > 0 ? (double)plot_w / n : plot_w, w = slot * 0.8;
    if (w > BAR_MAX)
        w = BAR_MAX;
    cv_sb_printf(o, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                    "height=\"%d\" role=\"img\" aria-label=\"cache hits and time saved per "
                    "day\">", id, CHART_W, CHART_H);
    cv_sb_printf(o, "<g transform=\"translate(0,14)\">");
    axes(o, plot_h);
    for (int i = 0; i < n; i++) {
        const http_day *c = &v[i];
        double x = LEFT + slot * i + (slot - w) / 2, base = TOP + plot_h;
        double hit = c->answered ? (double)c->hits / c->answered : 0.0;
        char date[16];
        time_t t = (time_t)(c->day * 86400);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(date, sizeof date, "%m-%d", &tm);
        cv_sb_printf(o, "<g class=\"day\"><title>%s: %lld of %lld jobs from the cache (", date,
                     (long long)c->hits, (long long)c->answered);
        html_pct(o, hit);
        cv_sb_puts(o, "), saved ");
        html_duration(o, c->saved_ms);
        cv_sb_puts(o, ", compiled ");
        html_duration(o, c->compile_ms);
        cv_sb_puts(o, "</title>");
        if (c->answered == 0) {
            cv_sb_printf(o, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                            "fill=\"none\" stroke=\"#d1d5db\" stroke-dasharray=\"2\"/>",
                         x, TOP, w, plot_h);
        } else {
            rect(o, x, base - plot_h * hit, w, plot_h * hit, LOCAL_COLOR);
            rect(o, x, TOP, w, plot_h * (1.0 - hit), MISS_COLOR);
        }
        if (c->saved_ms > 0) {
            cv_sb_printf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
                            "fill=\"#374151\">", x + w / 2, TOP - 4);
            html_duration(o, c->saved_ms);
            cv_sb_puts(o, "</text>");
        }
        if (n <= 16 || i % 2 == (n - 1) % 2)    /* the newest day always labelled */
            cv_sb_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
                            "fill=\"#6b7280\">%s</text>", x + w / 2, base + 14, date);
        cv_sb_puts(o, "</g>");
    }
    cv_sb_puts(o, "</g></svg>");
}

void svg_cache_chart(cv_sb *o, const char *id, const http_rev_cache *v, int n, bool l2)
{
    int plot_h = CHART_H - TOP - BOTTOM, plot_w = CHART_W - LEFT - 8;
    double slot = n > 0 ? (double)plot_w / n : plot_w, w = slot * 0.8;
    if (w > BAR_MAX)
        w = BAR_MAX;
    cv_sb_printf(o, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                    "height=\"%d\" role=\"img\" aria-label=\"%s cache hit ratio per revision\">",
                 id, CHART_W, CHART_H, l2 ? "L2" : "L1");
    axes(o, plot_h);
    for (int i = 0; i < n; i++) {
        const http_rev_cache *c = &v[i];
        double local, remote;
        double hit = l2 ? http_rev_cache_l2_ratio(c, &local, &remote)
                        : http_rev_cache_l1_ratio(c, &local, &remote);
        int64_t asked = http_rev_cache_asked(c, l2);
        double x = LEFT + slot * i + (slot - w) / 2, base = TOP + plot_h;
        cv_sb_puts(o, "<g class=\"bar\">");
        bar_title(o, c, l2, hit, local, remote, asked);
        if (asked == 0) {
            cv_sb_printf(o, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
                            "stroke=\"#d1d5db\" stroke-dasharray=\"2\"/>",
                         x, TOP, w, plot_h);
        } else {
            double hl = plot_h * local, hr = plot_h * remote, hm = plot_h - hl - hr;
            rect(o, x, base - hl, w, hl, LOCAL_COLOR);
            rect(o, x, base - hl - hr, w, hr, REMOTE_COLOR);
            rect(o, x, TOP, w, hm, MISS_COLOR);
        }
        cv_sb_puts(o, "</g>");
    }
    if (n > 0) {
        char first[CV_REVISION_MAX + 1], last[CV_REVISION_MAX + 1];
        html_short_rev(v[0].revision, first, sizeof first);
        html_short_rev(v[n - 1].revision, last, sizeof last);
        cv_sb_printf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#6b7280\">", LEFT,
                     CHART_H - 6);
        html_esc(o, first);
        cv_sb_printf(o, "</text><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#6b7280\" "
                        "text-anchor=\"end\">", CHART_W - 8, CHART_H - 6);
        html_esc(o, last);
        cv_sb_puts(o, "</text>");
    }
    cv_sb_puts(o, "</svg>");
}

void svg_stage_bar(cv_sb *o, const int64_t stages[HTTP_STAGES], int64_t max_ms)
{
    cv_sb_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">",
                 STAGE_W, STAGE_H);
    double x = 0;
    for (int s = 0; s < HTTP_STAGES && max_ms > 0; s++) {
        double w = (double)STAGE_W * (double)stages[s] / (double)max_ms;
        if (stages[s] <= 0)
            continue;
        if (w < 1.0)
            w = 1.0;   /* a stage that ran stays visible */
        cv_sb_printf(o, "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                        "<title>%s ",
                     x, w, STAGE_H, stage_colors[s], http_stage_name((http_stage)s));
        html_duration(o, stages[s]);
        cv_sb_puts(o, "</title></rect>");
        x += w;
    }
    cv_sb_puts(o, "</svg>");
}

static void key(cv_sb *o, const char *color, const char *label)
{
    cv_sb_printf(o, "<span><i style=\"background:%s\"></i>%s</span>", color, label);
}

void svg_stage_legend(cv_sb *o)
{
    cv_sb_puts(o, "<p class=\"legend\">");
    for (int s = 0; s < HTTP_STAGES; s++)
        key(o, stage_colors[s], http_stage_name((http_stage)s));
    cv_sb_puts(o, "</p>");
}

void svg_cache_legend(cv_sb *o)
{
    cv_sb_puts(o, "<p class=\"legend\">");
    key(o, LOCAL_COLOR, "local hit");
    key(o, REMOTE_COLOR, "remote hit");
    key(o, MISS_COLOR, "miss");
    cv_sb_puts(o, "</p>");
}
