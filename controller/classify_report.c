/* What `cuvil failures` asks for: one revision's ranked patterns with their
 * first-seen revisions, and the patterns of a range of revisions.
 *
 * Both first make sure every finished revision up to the one asked about
 * has its patterns stored (each is classified once, the first time a
 * query reaches it), so a pattern's first-seen revision does not depend
 * on which revisions were ever looked at. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/fs.h"
#include "controller/classify_internal.h"
#include "controller/classify_state.h"

#define HISTORY_BATCH 64

static int store_counts(cv_builddb *db, int64_t rev_id, const cv_cls *s, cv_diag *d)
{
    cv_fh_count *c = calloc((size_t)s->n_groups + 1, sizeof *c);
    if (!c) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    for (int i = 0; i < s->n_groups; i++) {
        const cv_failure_group *g = &s->groups[i]->pub;
        c[i] = (cv_fh_count){.pattern = g->pattern, .cls = g->cls, .code = g->code,
                             .jobs = g->jobs};
    }
    int rc = cv_fh_store(db, rev_id, c, s->n_groups, cv_clock_wall_ms(), d);
    free(c);
    return rc;
}

/* Classifies and stores one revision; 0, or -1 with errors in d. */
static int store_revision(cv_builddb *db, int64_t rev_id, cv_diag *d)
{
    cv_cls s;
    cv_cls_init(&s, db, d);
    int rc = cv_cls_run(&s, rev_id);
    if (rc == 0)
        rc = store_counts(db, rev_id, &s, d);
    cv_cls_free(&s);
    return rc;
}

/* The farm goes on without a history: a store that fails (a read-only or
 * busy build DB) is a warning, and the first-seen revisions come out late. */
static void warn_store(cv_diag *d, cv_diag *why)
{
    const cv_diag_entry *e = why->n ? cv_diag_get(why, 1) : NULL;
    cv_diag_add(d, CV_SEV_WARNING, CV_E_FAILURES_HISTORY_NOT_STORED, (cv_span){0}, NULL,
                "the failure history was not stored: %s", e ? e->msg : "unknown error");
}

/* Every finished revision up to upto_id gets its patterns stored. */
static void ensure_history(cv_builddb *db, int64_t upto_id, cv_diag *d)
{
    int64_t ids[HISTORY_BATCH];
    int n = HISTORY_BATCH;
    cv_diag why;
    cv_diag_init(&why);
    while (n == HISTORY_BATCH) {
        if (cv_fh_unstored(db, upto_id, ids, HISTORY_BATCH, &n, &why) != 0)
            break;
        for (int i = 0; i < n; i++)
            if (store_revision(db, ids[i], &why) != 0) {
                n = 0;
                break;
            }
    }
    if (why.n_errors)
        warn_store(d, &why);
    cv_diag_free(&why);
}

static int resolve(cv_builddb *db, const char *name, cv_rev_summary *sum, cv_diag *d)
{
    char full[CV_REVISION_MAX + 1];
    int found = cv_builddb_revision_resolve(db, name ? name : "latest", full, d);
    if (found == 1)
        found = cv_builddb_revision_summary(db, full, sum, d);
    if (found == 0 && name)
        cv_diag_error(d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "no revision '%s' in the build DB",
                      name);
    else if (found == 0)
        cv_diag_error(d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "the build DB holds no revision yet");
    return found == 1 ? 0 : -1;
}

static int64_t revision_errors(cv_builddb *db, int64_t rev_id, cv_diag *d)
{
    cv_diag rd;
    cv_diag_init(&rd);
    cv_builddb_diags_load(db, rev_id, 0, &rd, d);
    int64_t n = rd.n_errors;
    cv_diag_free(&rd);
    return n;
}

/* ---- one revision */

static int first_seen(cv_cls *s, const cv_rev_summary *sum, cv_diag *d)
{
    for (int i = 0; i < s->n_groups; i++) {
        cv_failure_group *g = &s->groups[i]->pub;
        char name[CV_REVISION_MAX + 1];
        int64_t id = 0;
        int rc = cv_fh_first_seen(s->db, g->pattern, &id, name, d);
        if (rc < 0)
            return -1;
        g->is_new = rc == 0 || id >= sum->id;
        g->first_seen = cv_arena_strdup(&s->arena, g->is_new ? sum->revision : name);
        if (!g->first_seen) {
            cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
            return -1;
        }
    }
    return 0;
}

int cv_failures_classify(cv_builddb *db, const char *revision, cv_failure_report *out,
                         cv_diag *d)
{
    memset(out, 0, sizeof *out);
    cv_rev_summary sum;
    if (resolve(db, revision, &sum, d) != 0)
        return -1;
    ensure_history(db, sum.id, d);
    cv_cls *s = malloc(sizeof *s);
    if (!s) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    cv_cls_init(s, db, d);
    out->impl = s;
    int rc = cv_cls_run(s, sum.id);
    if (rc == 0) {
        cv_cls_rank(s);
        rc = cv_cls_finish(s);
    }
    if (rc == 0)
        rc = first_seen(s, &sum, d);
    if (rc != 0) {
        cv_failure_report_free(out);
        return -1;
    }
    snprintf(out->revision, sizeof out->revision, "%s", sum.revision);
    out->state = sum.state;
    out->jobs = sum.jobs;
    out->broken = s->broken;
    out->revision_errors = revision_errors(db, sum.id, d);
    out->n_groups = s->n_groups;
    out->groups = cv_arena_alloc_array(&s->arena, (size_t)s->n_groups + 1, sizeof *out->groups);
    if (!out->groups) {
        cv_failure_report_free(out);
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    for (int i = 0; i < s->n_groups; i++)
        out->groups[i] = s->groups[i]->pub;
    return 0;
}

void cv_failure_report_free(cv_failure_report *r)
{
    if (r->impl) {
        cv_cls_free(r->impl);
        free(r->impl);
    }
    memset(r, 0, sizeof *r);
}

#define SOURCE_MAX_BYTES ((size_t)4 << 20)

/* Line `line` (1-based) of text, copied into the arena; NULL if none. */
static const char *line_of(cv_arena *a, const char *text, size_t len, int line)
{
    const char *p = text, *end = text + len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (line <= 0 || p >= end)
        return NULL;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    if (n && p[n - 1] == '\r')
        n--;
    return cv_arena_strndup(a, p, n);
}

static void attach_one(cv_cls *s, cv_failure_group *g, const char *base)
{
    const cv_diag_entry *e = g->example ? cv_diag_get(g->example, 1) : NULL;
    if (!e || !e->span.file || e->span.line <= 0)
        return;
    cv_diag quiet;
    cv_diag_init(&quiet);
    char *path = NULL, *text = NULL;
    size_t len = 0;
    if (cv_fs_resolve_inside(base, e->span.file, &path, &quiet) == 0 &&
        cv_fs_read_file(path, SOURCE_MAX_BYTES, &text, &len, &quiet) == 0) {
        cv_diag_add_source((cv_diag *)g->example, e->span.file, text, len);
        g->ex_line = line_of(&s->arena, text, len, e->span.line);
    }
    free(text);
    free(path);
    cv_diag_free(&quiet);
}

void cv_failure_report_attach_sources(cv_failure_report *r, const char *trees_dir)
{
    char ref[CV_REVISION_MAX + 1], commit[CV_GIT_HEX + 1];
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = r->impl ? cv_revision_parse(r->revision, ref, commit, &quiet) : -1;
    cv_diag_free(&quiet);
    char *base = rc == 0 ? cv_fs_join(trees_dir, commit) : NULL;
    for (int i = 0; base && i < r->n_groups; i++)
        attach_one(r->impl, &r->groups[i], base);
    free(base);
}

/* ---- a range of revisions */

typedef struct trend_state {
    cv_arena arena;
    const char **patterns;
    const char **first;
    int64_t *first_id;
    int n_patterns, cap_patterns;
    int64_t *cells;          /* [pattern][revision], grown with the patterns */
    int n_revs;
    int cur;                 /* the revision being added */
    int64_t cur_id;
    cv_builddb *db;
    cv_diag *d;
} trend_state;

static int trend_oom(trend_state *t)
{
    cv_diag_error(t->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return -1;
}

static int trend_pattern(trend_state *t, const char *pattern)
{
    for (int i = 0; i < t->n_patterns; i++)
        if (strcmp(t->patterns[i], pattern) == 0)
            return i;
    int old = t->cap_patterns, cap = old;
    const char **p = cv_cls_grow(&t->arena, t->patterns, t->n_patterns, &cap, sizeof *p);
    cap = old;
    const char **f = cv_cls_grow(&t->arena, t->first, t->n_patterns, &cap, sizeof *f);
    cap = old;
    int64_t *fi = cv_cls_grow(&t->arena, t->first_id, t->n_patterns, &cap, sizeof *fi);
    int64_t *cells = cap == old ? t->cells
                                : cv_arena_alloc_array(&t->arena, (size_t)cap * (size_t)t->n_revs,
                                                       sizeof *cells);
    const char *copy = cv_arena_strdup(&t->arena, pattern);
    if (!p || !f || !fi || !cells || !copy)
        return trend_oom(t);
    if (cells != t->cells && t->cells)
        memcpy(cells, t->cells, (size_t)t->n_patterns * (size_t)t->n_revs * sizeof *cells);
    t->patterns = p;
    t->first = f;
    t->first_id = fi;
    t->cells = cells;
    t->cap_patterns = cap;
    p[t->n_patterns] = copy;
    f[t->n_patterns] = NULL;
    fi[t->n_patterns] = 0;
    return t->n_patterns++;
}

static int trend_add(void *ctx, const cv_fh_count *c)
{
    trend_state *t = ctx;
    int k = trend_pattern(t, c->pattern);
    if (k < 0)
        return -1;
    t->cells[(size_t)k * (size_t)t->n_revs + (size_t)t->cur] += c->jobs;
    return 0;
}

/* The counts of one revision: stored, or classified now (a revision still
 * building). */
static int trend_revision(trend_state *t, int64_t rev_id)
{
    bool stored = false;
    if (cv_fh_is_stored(t->db, rev_id, &stored, t->d) != 0)
        return -1;
    if (stored)
        return cv_fh_counts(t->db, rev_id, trend_add, t, t->d);
    cv_cls s;
    cv_cls_init(&s, t->db, t->d);
    int rc = cv_cls_run(&s, rev_id);
    for (int i = 0; rc == 0 && i < s.n_groups; i++) {
        const cv_failure_group *g = &s.groups[i]->pub;
        cv_fh_count c = {.pattern = g->pattern, .cls = g->cls, .code = g->code, .jobs = g->jobs};
        rc = trend_add(t, &c);
    }
    cv_cls_free(&s);
    return rc;
}

static int64_t pattern_total(const trend_state *t, int k)
{
    int64_t sum = 0;
    for (int r = 0; r < t->n_revs; r++)
        sum += t->cells[(size_t)k * (size_t)t->n_revs + (size_t)r];
    return sum;
}

typedef struct trend_impl {
    trend_state t;
    int64_t *broken;
    char (*names)[CV_REVISION_MAX + 1];   /* malloc'd */
    const char **rev_names;
} trend_impl;

/* Sorts patterns by their total, most first (a selection sort over an
 * index: a range holds few patterns). */
static int trend_order(trend_impl *ti, cv_failure_trend *out)
{
    trend_state *t = &ti->t;
    int n = t->n_patterns, R = t->n_revs;
    int *idx = cv_arena_alloc_array(&t->arena, (size_t)n + 1, sizeof *idx);
    const char **pat = cv_arena_alloc_array(&t->arena, (size_t)n + 1, sizeof *pat);
    const char **first = cv_arena_alloc_array(&t->arena, (size_t)n + 1, sizeof *first);
    int64_t *jobs = cv_arena_alloc_array(&t->arena, (size_t)n * (size_t)R + 1, sizeof *jobs);
    if (!idx || !pat || !first || !jobs)
        return trend_oom(t);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    for (int i = 0; i < n; i++) {
        int best = i;
        for (int k = i + 1; k < n; k++) {
            int64_t a = pattern_total(t, idx[k]), b = pattern_total(t, idx[best]);
            if (a > b || (a == b && strcmp(t->patterns[idx[k]], t->patterns[idx[best]]) < 0))
                best = k;
        }
        int tmp = idx[i];
        idx[i] = idx[best];
        idx[best] = tmp;
        pat[i] = t->patterns[idx[i]];
        first[i] = t->first[idx[i]];
        memcpy(jobs + (size_t)i * (size_t)R, t->cells + (size_t)idx[i] * (size_t)R,
               (size_t)R * sizeof *jobs);
    }
    out->n_patterns = n;
    out->patterns = pat;
    out->first_seen = first;
    out->jobs = jobs;
    return 0;
}

/* Each pattern's first-seen revision: stored, else its first in the range. */
static int trend_first_seen(trend_impl *ti)
{
    trend_state *t = &ti->t;
    for (int k = 0; k < t->n_patterns; k++) {
        char name[CV_REVISION_MAX + 1];
        int64_t id;
        int rc = cv_fh_first_seen(t->db, t->patterns[k], &id, name, t->d);
        if (rc < 0)
            return -1;
        for (int r = 0; rc == 0 && r < t->n_revs; r++)
            if (t->cells[(size_t)k * (size_t)t->n_revs + (size_t)r]) {
                snprintf(name, sizeof name, "%s", ti->names[r]);
                rc = 1;
            }
        if (!(t->first[k] = cv_arena_strdup(&t->arena, rc == 1 ? name : "")))
            return trend_oom(t);
    }
    return 0;
}

static int trend_build(trend_impl *ti, const cv_rev_summary *since, const cv_rev_summary *until,
                       cv_failure_trend *out)
{
    trend_state *t = &ti->t;
    int64_t ids[CV_TREND_REVISIONS_MAX];
    int total = 0;
    if (cv_fh_range(t->db, since->id, until->id, ids, ti->names, CV_TREND_REVISIONS_MAX,
                    &t->n_revs, &total, t->d) != 0)
        return -1;
    if (total > t->n_revs)
        cv_diag_add(t->d, CV_SEV_WARNING, CV_E_FAILURES_RANGE_CUT, (cv_span){0}, NULL,
                    "the range holds %d revisions; the newest %d are shown", total, t->n_revs);
    for (t->cur = 0; t->cur < t->n_revs; t->cur++) {
        cv_rev_summary sum;
        if (trend_revision(t, ids[t->cur]) != 0 ||
            cv_builddb_revision_summary(t->db, ti->names[t->cur], &sum, t->d) != 1)
            return -1;
        ti->broken[t->cur] = sum.failed;
        ti->rev_names[t->cur] = ti->names[t->cur];
    }
    if (trend_first_seen(ti) != 0 || trend_order(ti, out) != 0)
        return -1;
    out->n_revisions = t->n_revs;
    out->revisions = ti->rev_names;
    out->broken = ti->broken;
    return 0;
}

int cv_failures_trend(cv_builddb *db, const char *since, const char *until,
                      cv_failure_trend *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    cv_rev_summary a, b;
    if (resolve(db, since, &a, d) != 0 || resolve(db, until, &b, d) != 0)
        return -1;
    if (a.id > b.id) {
        cv_diag_error(d, CV_E_FAILURES_BAD_RANGE, (cv_span){0}, "--since %s is newer than %s", a.revision,
                      b.revision);
        return -1;
    }
    ensure_history(db, b.id, d);
    trend_impl *ti = calloc(1, sizeof *ti);
    if (ti)
        ti->names = calloc(CV_TREND_REVISIONS_MAX, sizeof *ti->names);
    if (!ti || !ti->names) {
        free(ti);
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    out->impl = ti;
    ti->t.db = db;
    ti->t.d = d;
    cv_arena_init(&ti->t.arena);
    ti->broken = cv_arena_alloc_array(&ti->t.arena, CV_TREND_REVISIONS_MAX, sizeof *ti->broken);
    ti->rev_names = cv_arena_alloc_array(&ti->t.arena, CV_TREND_REVISIONS_MAX,
                                         sizeof *ti->rev_names);
    int rc = ti->broken && ti->rev_names ? trend_build(ti, &a, &b, out) : trend_oom(&ti->t);
    if (rc != 0)
        cv_failure_trend_free(out);
    return rc;
}

void cv_failure_trend_free(cv_failure_trend *t)
{
    trend_impl *ti = t->impl;
    if (ti) {
        cv_arena_free(&ti->t.arena);
        free(ti->names);
        free(ti);
    }
    memset(t, 0, sizeof *t);
}
