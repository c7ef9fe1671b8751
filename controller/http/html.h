/* The dashboard's building blocks (html.c, svg.c): one page layout with
 * its stylesheet inline, escaping, and the small formats every page uses.
 * Pages need no JavaScript and load nothing from elsewhere. */
#ifndef CV_CONTROLLER_HTTP_HTML_H
#define CV_CONTROLLER_HTTP_HTML_H

#include "controller/http/http_internal.h"

/* refresh_s > 0: the page reloads itself (a meta refresh, no script). */
void html_begin(cv_sb *o, const char *title, const char *active, int refresh_s);
/* Closes the page and answers 200 with it. */
void html_finish(http_resp *rs, cv_sb *o, int64_t now_ms);
/* A page-level error, as HTML (the API answers JSON). */
void html_error_page(http_resp *rs, int status, const char *title, const char *message);

void html_esc(cv_sb *o, const char *s);
/* "main@1a2b3c4" for "main@sha1:1a2b3c4..." */
void html_short_rev(const char *revision, char *out, size_t size);
/* A link to the revision's page, by commit. */
void html_rev_link(cv_sb *o, const char *revision);
/* A query parameter's value, percent-encoded (safe in an href too). */
void html_url_encode(cv_sb *o, const char *value);
/* A link to a model's history page. */
void html_model_link(cv_sb *o, const char *model);
/* A state as a coloured badge (revision and job states alike). */
void html_state(cv_sb *o, const char *state);
/* A revision's verdict as a badge with its sentence on hover (id may be NULL). */
void html_verdict(cv_sb *o, const http_verdict *v, const char *id);
/* The commit's subject, author and age (nothing when unknown). */
void html_commit(cv_sb *o, const http_rev_cache *c, int64_t now_ms);
void html_duration(cv_sb *o, int64_t ms);
void html_ago(cv_sb *o, int64_t then_ms, int64_t now_ms);
void html_pct(cv_sb *o, double ratio);
void html_bytes(cv_sb *o, uint64_t n);
/* A diagnostic list as text (source lines and carets where registered). */
void html_diags(cv_sb *o, const cv_diag *d);

/* ---- charts (svg.c) */

/* Stacked bars, one per revision (oldest left): local hits, remote hits,
 * misses of one level, as fractions of the jobs with an answer (a job that
 * failed before its look-up is a miss). */
void svg_cache_chart(cv_sb *o, const char *id, const http_rev_cache *v, int n, bool l2);
/* One bar per day (oldest left): the share of answered jobs served from the
 * cache, with the time saved over each bar. */
void svg_daily_chart(cv_sb *o, const char *id, const http_day *v, int n);
/* A job's stages as one stacked bar, scaled so that max_ms fills it. */
void svg_stage_bar(cv_sb *o, const int64_t stages[HTTP_STAGES], int64_t max_ms);
/* The colour key of the stage bars and of the cache charts. */
void svg_stage_legend(cv_sb *o);
void svg_cache_legend(cv_sb *o);

#endif
